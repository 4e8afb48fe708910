#!/usr/bin/env bash
# Make sure Debian's Chromium is installed for the browser tests (Playwright drives
# /usr/bin/chromium; it never downloads a browser of its own). Installs the chromium package
# when it is missing and we may (root with apt-get). Never fails the build: without a browser
# the browser tests skip and say why.
set -u
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian's chromium package for the browser tests..."
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null 2>&1 || true
  apt-get install -y -qq chromium >/dev/null 2>&1 || echo "warning: could not install chromium; the browser tests will skip"
else
  echo "note: no /usr/bin/chromium and no root apt-get; the browser tests will skip"
fi
exit 0
