#!/bin/sh
# Runs CMD ARGS... against a throwaway PostgreSQL 15 cluster (pgharness.py):
# CAIRN_TEST_META holds its postgres:// URI; the cluster is removed after.
# usage: tests/fleet/pg.sh CMD ARGS...
here=$(dirname "$0")
exec /usr/bin/python3 "$here/pgharness.py" -- "$@"
