#!/bin/sh
# Checks (default) or applies (--fix) the committed .clang-format to every C
# file git tracks or would track, except the embedded BLAKE3 sources.
# usage: scripts/format.sh [--fix]
set -eu
cd "$(dirname "$0")/.."
files=$(git ls-files --cached --others --exclude-standard '*.c' '*.h' | grep -v '^third_party_blake3/')
if [ "${1:-}" = "--fix" ]; then
  echo "$files" | xargs clang-format -i
else
  echo "$files" | xargs clang-format --dry-run -Werror
fi
