#!/bin/sh
# Runs CMD ARGS... against a throwaway PostgreSQL 15 cluster (pgharness.py):
# CAIRN_TEST_META holds its postgres:// URI; the cluster is removed after.
# With --blob-tier CAIRND, the blobs go to the S3 tier as well: a backend
# CAIRND on loopback for the run (CAIRN_TEST_BLOBS=s3 and its companions;
# pgharness.py says which).
# usage: tests/fleet/pg.sh [--blob-tier CAIRND] CMD ARGS...
here=$(dirname "$0")
if [ "$1" = --blob-tier ]; then
    cairnd=$2
    shift 2
    exec /usr/bin/python3 "$here/pgharness.py" --blob-tier "$cairnd" -- "$@"
fi
exec /usr/bin/python3 "$here/pgharness.py" -- "$@"
