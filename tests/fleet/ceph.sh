#!/bin/sh
# Runs CMD ARGS... against a throwaway single-node Ceph cluster with an RGW
# (cephharness.py): CAIRN_TEST_CEPH_ENDPOINT holds the RGW's URL and
# CAIRN_TEST_CEPH_CREDS a file with its ACCESS:SECRET; the cluster is removed
# after.  usage: tests/fleet/ceph.sh CMD ARGS...
here=$(dirname "$0")
exec /usr/bin/python3 "$here/cephharness.py" -- "$@"
