#!/bin/sh
# Installs the Debian 12 packages cairn needs, only those missing.
# usage: scripts/deps.sh build|test|bench
set -eu
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
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "cairn: these Debian packages are missing:$missing" >&2
  echo "cairn: run 'make' as root, or install them with: sudo apt-get install$missing" >&2
  exit 1
fi
echo "cairn: installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends $missing >/dev/null 2>&1 || {
  apt-get update >/dev/null && apt-get install -y --no-install-recommends $missing; }
