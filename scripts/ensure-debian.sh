#!/usr/bin/env bash
# Make sure a Debian package the tests use is installed: the PostgreSQL server (initdb, pg_ctl)
# for the PostgreSQL tests, Chromium for the browser tests (Playwright drives /usr/bin/chromium
# and never downloads a browser of its own).
# Usage: ensure-debian.sh PACKAGE "WHAT IT IS FOR" 'SHELL TEST THAT SUCCEEDS WHEN PRESENT'
# Installs PACKAGE when the test fails and we may (root with apt-get). Never fails the build:
# without the package, the tests that need it skip and say why.
set -u
package=$1 purpose=$2 present=$3
if bash -c "$present" >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian's $package package for $purpose..."
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null 2>&1 || true
  apt-get install -y -qq "$package" >/dev/null 2>&1 \
    || echo "warning: could not install $package; $purpose will skip"
else
  echo "note: no $package and no root apt-get; $purpose will skip"
fi
exit 0
