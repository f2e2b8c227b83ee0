#!/usr/bin/python3
"""bench/s3_versions: a current-version GET among 10,000 versions of one key
beside a GET of a key with one version (S3 versioning, issue 25).

  One versioned bucket (public-read objects): key "many" written N times
  (default 10,000; every write a new version), key "one" written once; then
  wrk GETs each for SECS at 1 and 16 connections.  The two rates should be
  the same: a current version is one indexed lookup however many noncurrent
  versions its key has (tests/objects/test_versions.c checks the plans).

usage: bench/s3_versions.py BUILD [--quick] [--versions N]
Prints one "name value unit" line per figure, as bench/s3.py does; a part
that cannot run prints "skip_<part> 0 - <reason>".  cairnd binds 127.0.0.1
on an ephemeral port in a scratch directory (under $TMPDIR) removed at the
end.
"""
import concurrent.futures
import os
import shutil
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import s3 as base  # noqa: E402  (Cairnd, wrk, say, skip, note)

NVERS = 10000
if "--versions" in sys.argv[2:]:
    NVERS = int(sys.argv[sys.argv.index("--versions") + 1])
SECS = 3 if base.QUICK else 10
BUCKET = "vbench"

GET_ONE_LUA = """request = function()
  return wrk.format("GET", %s)
end
"""


def preload(cairn):
    s3 = cairn.client()
    s3.create_bucket(Bucket=BUCKET, ACL="public-read")
    s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    local = threading.local()

    def put(i):
        if not hasattr(local, "c"):
            local.c = cairn.client()
        local.c.put_object(Bucket=BUCKET, Key="many", Body=b"%08d" % i, ACL="public-read")

    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        list(ex.map(put, range(NVERS)))
    s3.put_object(Bucket=BUCKET, Key="one", Body=b"x" * 8, ACL="public-read")
    n = 0
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=BUCKET, Prefix="many"):
        n += len(page.get("Versions", []))
    if n != NVERS:
        raise RuntimeError("expected %d versions, listed %d" % (NVERS, n))


def main():
    if not shutil.which("wrk"):
        base.skip("s3_versions", "wrk not installed")
        return 0
    if not os.access(os.path.join(base.BUILD, "cairnd"), os.X_OK):
        base.skip("s3_versions", "cairnd not built")
        return 0
    work = tempfile.mkdtemp(prefix="cairn-bench-s3v.")
    cairn = None
    try:
        cairn = base.Cairnd(work)
        base.note("preload: %d versions of one key" % NVERS)
        preload(cairn)
        base.SECS = SECS
        for key in ("one", "many"):
            script = os.path.join(work, "get_%s.lua" % key)
            with open(script, "w") as f:
                f.write(GET_ONE_LUA % ('"/%s/%s"' % (BUCKET, key)))
            for c in (1, 16):
                base.wrk("s3_versions_get_%s_c%d" % (key, c), cairn.url, script, c)
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        base.skip("s3_versions", "failed: %s" % str(e).splitlines()[0][:80])
        return 1
    finally:
        if cairn:
            cairn.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
