#!/bin/sh
# Installs the Debian 12 packages cairn needs, only those missing, then the one
# source package Debian 12 lacks: PQClean's ML-KEM-768 (FIPS 203), taken from the
# npm registry's `pqclean` package at a pinned version and integrity hash, and
# unpacked where meson.build finds it (src/crypto/meson.build compiles it).
# usage: scripts/deps.sh build|test|bench
set -eu
pqclean_version=0.8.1
pqclean_integrity=sha512-+5FtknAJdiNtVBiyLiKW3OnanhcqSWy44KCaZz1tELhalp5HfuIcxNsX9uS0t7ne2tEWc7NBd4GpiQBTGTIJBA==
build="meson ninja-build pkg-config gcc clang libssl-dev libsqlite3-dev liblz4-dev
       node-llhttp libjansson-dev libexpat1-dev libcurl4-openssl-dev libargon2-dev
       librust-blake3-dev libclang-rt-14-dev"
test="$build clang-format b3sum python3-pytest python3-boto3 python3-requests python3-botocore sqlite3 openssl awscli s3cmd rclone chromium
      golang-github-burntsushi-toml-dev python3-tomli"
bench="$test iperf3 nginx wrk gnuplot-nox git git-lfs curl valgrind"
case "${1:-build}" in
  build) want=$build ;;
  test) want=$test ;;
  bench) want=$bench ;;
  *) echo "usage: $0 build|test|bench" >&2; exit 2 ;;
esac
missing=""
for p in $want; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done

# The pinned pqclean package, unpacked into DIR/pqclean-VERSION (as root under
# /usr/local/share/cairn, else under the user's cache); meson.build looks in both.
fetch_pqclean() {
  if [ "$(id -u)" = 0 ]; then root=/usr/local/share/cairn; else root="${XDG_CACHE_HOME:-$HOME/.cache}/cairn"; fi
  dest="$root/pqclean-$pqclean_version"
  [ -f "$dest/deps/PQClean/crypto_kem/ml-kem-768/clean/kem.c" ] && return 0
  if ! command -v npm >/dev/null 2>&1; then
    # Node.js images ship npm with node; Debian's npm package conflicts with them.
    [ "$(id -u)" = 0 ] || { echo "cairn: npm is missing: run 'make' as root, or apt-get install npm" >&2; exit 1; }
    apt-get install -y --no-install-recommends npm >/dev/null 2>&1 || {
      apt-get update >/dev/null && apt-get install -y --no-install-recommends npm; }
  fi
  echo "cairn: fetching pqclean $pqclean_version from the npm registry" >&2
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "pqclean@$pqclean_version" >/dev/null)
  tgz="$tmp/pqclean-$pqclean_version.tgz"
  got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
  if [ "$got" != "$pqclean_integrity" ]; then
    echo "cairn: pqclean-$pqclean_version.tgz has integrity $got, expected $pqclean_integrity" >&2
    exit 1
  fi
  mkdir -p "$tmp/x" "$root"
  tar -xzf "$tgz" -C "$tmp/x"
  rm -rf "$dest.new" && mv "$tmp/x/package" "$dest.new" && mv "$dest.new" "$dest"
}

if [ -z "$missing" ]; then fetch_pqclean; exit 0; fi
if [ "$(id -u)" != 0 ]; then
  echo "cairn: these Debian packages are missing:$missing" >&2
  echo "cairn: run 'make' as root, or install them with: sudo apt-get install$missing" >&2
  exit 1
fi
echo "cairn: installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends $missing >/dev/null 2>&1 || {
  apt-get update >/dev/null && apt-get install -y --no-install-recommends $missing; }
fetch_pqclean
