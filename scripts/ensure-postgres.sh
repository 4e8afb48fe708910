#!/usr/bin/env bash
# Make sure a PostgreSQL server binary (initdb, pg_ctl) is installed for the tests.
# Installs Debian's postgresql package when it is missing and we may (root with apt-get).
# Never fails the build: without a server the PostgreSQL tests skip and say why.
set -u
if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian's postgresql package for the PostgreSQL tests..."
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null 2>&1 || true
  apt-get install -y -qq postgresql >/dev/null 2>&1 || echo "warning: could not install postgresql; its tests will skip"
else
  echo "note: no PostgreSQL server binary and no root apt-get; the PostgreSQL tests will skip"
fi
exit 0
