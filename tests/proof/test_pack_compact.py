"""Pack files through the real cairnd (docs/store.md, "Pack files"): with the
default settings small S3 objects land in packs, not files; after deletes and
a sweep, `cairn admin --data D store compact` rewrites the sparse packs,
prints what it reclaimed and frees their files; the restarted server serves
every surviving object and none of the deleted ones.  The test hook
CAIRN_TEST_PACK_FILE_MAX makes packs small so that there are several."""
import os
import subprocess
import time

from conftest import BUILD, ephemeral_args
from proofutil import node_factory, s3_client  # noqa: F401  (node_factory is a fixture)

ENV = {"CAIRN_TEST_PACK_FILE_MAX": "32768", "CAIRN_SWEEP_INTERVAL_SECONDS": "1",
       "CAIRN_SWEEP_GRACE_SECONDS": "1"}


def packs(data):
    d = os.path.join(data, "packs")
    return sorted(f for f in os.listdir(d) if f.endswith(".pack"))


def body(i):
    return (b"%06d" % i) * 700  # 4,200 bytes, each its own blob


def test_compact_after_deletes(node_factory, tmp_path):  # noqa: F811
    cfg = tmp_path / "cairnd.toml"
    # Automatic compaction after each sweep only below 1 % live: this test
    # leaves 10 %, so the admin command is what reclaims.
    cfg.write_text("[store]\npack_max_bytes = 65_536\npack_compact_live_percent = 1\n")
    args = ephemeral_args(http="127.0.0.1:0") + ["--config", str(cfg)]
    node = node_factory(args=args, env=ENV, wait_for=("jay", "http"))
    s3 = s3_client(node)
    s3.create_bucket(Bucket="packs")
    for i in range(120):
        s3.put_object(Bucket="packs", Key="k%d" % i, Body=body(i))
    data = node.data_dir
    before = packs(data)
    assert len(before) > 5, before
    blob_files = sum(len(f) for _, _, f in os.walk(os.path.join(data, "blobs")))
    assert blob_files < 10, blob_files  # small objects are packed, not files
    for i in range(120):
        if i % 10:
            s3.delete_object(Bucket="packs", Key="k%d" % i)
    time.sleep(4)  # the sweeper (every second, 1 s grace) drops the index rows
    node.stop()
    out = subprocess.run([os.path.join(BUILD, "cairn"), "admin", "--data", data, "store",
                          "compact", "--live", "50"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.startswith("compacted "), out.stdout
    retired = int(out.stdout.split()[1])
    assert retired > 0, out.stdout
    after = packs(data)
    assert len(after) <= len(before) - retired + 1, (before, after, out.stdout)
    node.start()
    s3 = s3_client(node)
    for i in range(120):
        if i % 10 == 0:
            got = s3.get_object(Bucket="packs", Key="k%d" % i)["Body"].read()
            assert got == body(i), i
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket="packs").get("Contents", [])]
    assert sorted(keys) == sorted("k%d" % i for i in range(0, 120, 10))
    node.check_sanitizers()
