"""Faults through the S3, blob-ops and Scribe faces: failing writes and
fsyncs (the LD_PRELOAD shim tests/proof/faultshim.so, EIO and ENOSPC), a
full disk (a size-limited tmpfs, when this process may mount one), and a
metadata database held locked by another process.

In each case a write through every face fails with a clear error and that
face's documented code, reads keep working, nothing acknowledged is lost,
nothing of the failed write becomes visible, the server stays up, and it
serves writes again once the fault clears, without a restart:

  fault            S3 (docs/s3.md)     blobs (protocol/blobs.md)   Scribe (scribe.md 13.2)
  I/O error        500 InternalError   500 handler_error/internal  storage_failure (10)
  disk full        500 InternalError   507 handler_error/no_space  storage_failure (10)
  locked meta.db   503 ServiceUnavailable  503 unavailable/busy    busy (6)

(docs/s3.md keeps 503 SlowDown for rate limiting; a locked database is 503
ServiceUnavailable, retryable, as blobs and Scribe answer busy.)

A Scribe submit that failed under the fault has no recorded outcome
(operation_outcome answers unknown) and is accepted when sent again.
"""
import base64
import concurrent.futures
import hashlib
import json
import os
import subprocess
import time

import pytest
import requests
from botocore.exceptions import ClientError

from conftest import ADMIN_TOKEN
from proofutil import (FACES, FACES_ARGS, FaultShim, meta_db_locked, mount_tmpfs,  # noqa: F401
                       node_factory, s3_client, scribe, wait_staging_empty)
import scribe_wire as sw

BUCKET = "faultfaces"
NS = "faults/ns"
AUTH = {"Authorization": "Bearer " + ADMIN_TOKEN}


def sha(data):
    return hashlib.sha256(data).hexdigest()


def b3(data):
    return sw.chunk_id(data).hex()


class Faces:
    """Writes and reads through S3, blob ops and Scribe on one node, and
    remembers every acknowledged write."""

    def __init__(self, node):
        self.node = node
        self.s3 = s3_client(node)
        self.http = requests.Session()
        self.s3_acked = {}        # key -> bytes
        self.blob_acked = {}      # digest -> bytes
        self.files = {}           # path -> bytes (the repository's head tree)
        self.objects = set()      # (kind, id) acknowledged by put_objects
        self.s3.create_bucket(Bucket=BUCKET)
        with scribe(node) as c:
            info = c.repo_create("faults")
        self.repo, self.main, self.inc = info["id"], info["main"], info["incarnation"]
        self.ws = os.urandom(16)
        self.head = 0

    def reconnect(self, node):
        self.node = node
        self.s3 = s3_client(node)

    # ---- S3 ----
    def s3_put(self, key, data):
        out = self.s3.put_object(Bucket=BUCKET, Key=key, Body=data, ChecksumAlgorithm="SHA256")
        assert base64.b64decode(out["ChecksumSHA256"]).hex() == sha(data)
        self.s3_acked[key] = data

    def s3_multipart_start(self, key):
        return self.s3.create_multipart_upload(Bucket=BUCKET, Key=key)["UploadId"]

    def s3_part(self, key, uid, n, data):
        return self.s3.upload_part(Bucket=BUCKET, Key=key, UploadId=uid, PartNumber=n,
                                   Body=data)["ETag"]

    def s3_complete(self, key, uid, parts):
        self.s3.complete_multipart_upload(
            Bucket=BUCKET, Key=key, UploadId=uid,
            MultipartUpload={"Parts": [{"PartNumber": i + 1, "ETag": e}
                                       for i, (e, _) in enumerate(parts)]})
        self.s3_acked[key] = b"".join(d for _, d in parts)

    def s3_absent(self, key):
        with pytest.raises(ClientError) as ei:
            self.s3.head_object(Bucket=BUCKET, Key=key)
        assert ei.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404

    # ---- blobs ----
    def blob_put_raw(self, data):
        offer = {"namespace": NS, "digest": b3(data), "len": len(data)}
        return self.http.post(self.node.http_url + "/_cairn/ops/blobs/put", data=data,
                              headers=dict(AUTH, **{"Cairn-Offer": json.dumps(offer)}),
                              timeout=60)

    def blob_put(self, data):
        r = self.blob_put_raw(data)
        assert r.status_code == 200, r.text
        assert r.json()["digest"] == b3(data)
        self.blob_acked[b3(data)] = data

    def blob_stat(self, d):
        return self.http.post(self.node.http_url + "/_cairn/ops/blobs/stat", headers=AUTH,
                              data=json.dumps({"namespace": NS, "digest": d}), timeout=60)

    # ---- Scribe ----
    def scribe_objects(self, path, data):
        chunks, enc, mid = sw.file_objects(data)
        objs = [(sw.CHUNK, sw.chunk_id(ch), ch) for ch in chunks] + [(sw.MANIFEST, mid, enc)]
        kind = sw.MODIFY if path in self.files else sw.ADD
        cs = sw.changeset_encode([(kind, path, mid, 0, None)])
        return objs + [(sw.CHANGESET, sw.changeset_id(cs), cs)]

    def scribe_put(self, c, objs):
        c.put_objects(self.repo, objs)
        self.objects.update((k, i) for k, i, _ in objs)

    def scribe_submit(self, c, cid, op=None):
        return c.submit(self.repo, self.inc, op or os.urandom(16), self.main, self.ws, self.head,
                        cid, "faults", "under faults")

    def scribe_file(self, path, data):
        objs = self.scribe_objects(path, data)
        with scribe(self.node) as c:
            self.scribe_put(c, objs)
            o = self.scribe_submit(c, objs[-1][1])
        self.accepted(o, path, data)

    def accepted(self, o, path, data):
        assert o["outcome"] == 1 and o["change"] == self.head + 1, o
        self.head = o["change"]
        self.files[path] = data

    # ---- every face ----
    def write_all(self, tag, size):
        self.s3_put("%s/put" % tag, os.urandom(size))
        uid = self.s3_multipart_start("%s/mp" % tag)
        parts = []
        for n in (1, 2):
            d = os.urandom(size)
            parts.append((self.s3_part("%s/mp" % tag, uid, n, d), d))
        self.s3_complete("%s/mp" % tag, uid, parts)
        self.blob_put(os.urandom(size))
        self.scribe_file("%s/file" % tag, os.urandom(size))

    def check_all(self):
        for key, data in self.s3_acked.items():
            g = self.s3.get_object(Bucket=BUCKET, Key=key, ChecksumMode="ENABLED")
            assert g["Body"].read() == data, key
            assert base64.b64decode(g["ChecksumSHA256"]).hex() == sha(data), key
        for d, data in self.blob_acked.items():
            r = self.http.post(self.node.http_url + "/_cairn/ops/channels/blobs/sub",
                               headers=AUTH, data=json.dumps({"namespace": NS, "digest": d}),
                               timeout=60)
            assert r.status_code == 200 and r.content == data, (d, r.status_code)
        with scribe(self.node) as c:
            assert c.repo_info(rid=self.repo)["head"] == self.head
            rows, more, _, _ = c.tree_page(self.repo, self.main, self.head, limit=4096)
            assert not more
            assert {r["path"]: r["size"] for r in rows} == {
                p: len(d) for p, d in self.files.items()}
            for r in rows:
                [(_, _, enc)] = c.get_objects(self.repo, [(sw.MANIFEST, r["manifest"])])
                chunks, want_enc, mid = sw.file_objects(self.files[r["path"]])
                assert enc == want_enc and mid == r["manifest"], r["path"]
                got = c.get_objects(self.repo, [(sw.CHUNK, sw.chunk_id(ch)) for ch in chunks])
                assert [g[2] for g in got] == chunks, r["path"]
            objs = sorted(self.objects)
            assert all(c.presence(self.repo, objs)), "an acknowledged Scribe object is gone"


def s3_error(fn):
    with pytest.raises(ClientError) as ei:
        fn()
    e = ei.value.response
    return e["ResponseMetadata"]["HTTPStatusCode"], e["Error"]["Code"]


def scribe_error(fn):
    with pytest.raises(sw.ScribeError) as ei:
        fn()
    assert ei.value.message, "an error without a message"
    return ei.value.code


def blob_error(r):
    e = r.json()["error"]
    assert e["message"], r.text
    return r.status_code, e["code"], e["reason"]


def start(node_factory, env=None, data=None):
    return node_factory(args=FACES_ARGS, env=env, data=data, wait_for=FACES)


class OneOf(frozenset):
    """An expected answer where the documents allow more than one."""

    def __eq__(self, other):
        return other in self

    __hash__ = frozenset.__hash__


# S3 answers a locked database 503 ServiceUnavailable (docs/s3.md).
LOCKED_S3 = OneOf({(503, "ServiceUnavailable")})


class Expect:
    IO = dict(s3=(500, "InternalError"), blob=(500, "handler_error", "internal"),
              scribe=sw.ERR["storage_failure"])
    FULL = dict(s3=(500, "InternalError"), blob=(507, "handler_error", "no_space"),
                scribe=sw.ERR["storage_failure"])
    LOCKED = dict(s3=LOCKED_S3, blob=(503, "unavailable", "busy"),
                  scribe=sw.ERR["busy"])


def writes_fail(w, expect, size, tag="during"):
    """One write through every face under the fault: each fails with its
    face's code.  Returns what the caller checks once the fault clears."""
    objs = w.scribe_objects(tag + "/file", os.urandom(size))
    op = os.urandom(16)
    s3 = s3_client(w.node)

    def scribe_put():
        with scribe(w.node) as c:
            return scribe_error(lambda: c.put_objects(w.repo, objs))

    def scribe_submit():
        # Its change set was uploaded before the fault.
        with scribe(w.node) as c:
            return scribe_error(lambda: w.scribe_submit(c, w.pending_cs[0], op))

    calls = {
        "s3 put": lambda: s3_error(lambda: s3.put_object(Bucket=BUCKET, Key=tag + "/put",
                                                         Body=os.urandom(size))),
        "s3 part": lambda: s3_error(lambda: w.s3_part(tag + "/mp", w.pending_uid, 1,
                                                      os.urandom(size))),
        "blob put": lambda: blob_error(w.blob_put_raw(os.urandom(size))),
        "scribe put": scribe_put,
        "scribe submit": scribe_submit,
    }
    # At once: a locked database holds each request for its busy timeout.
    with concurrent.futures.ThreadPoolExecutor(len(calls)) as pool:
        futures = {name: pool.submit(fn) for name, fn in calls.items()}
        got = {name: f.result() for name, f in futures.items()}
    want = {"s3 put": expect["s3"], "s3 part": expect["s3"], "blob put": expect["blob"],
            "scribe put": expect["scribe"], "scribe submit": expect["scribe"]}
    return got, want, objs, op


def prepare_pending(w, tag="during"):
    """What writes_fail needs made before the fault: a multipart upload and
    an uploaded change set (with its file) waiting for a submit."""
    w.pending_uid = w.s3_multipart_start(tag + "/mp")
    data = os.urandom(5000)
    objs = w.scribe_objects(tag + "/submitted", data)
    with scribe(w.node) as c:
        w.scribe_put(c, objs)
    w.pending_cs = (objs[-1][1], tag + "/submitted", data)


def after_fault(w, objs, op, size, tag="during"):
    """The fault has cleared: nothing of the failed writes is visible, the
    failed submit is unknown and accepted when sent again, and every face
    takes writes again."""
    w.s3_absent(tag + "/put")
    with scribe(w.node) as c:
        assert not any(c.presence(w.repo, [(k, i) for k, i, _ in objs])), \
            "a failed put_objects left members"
        kind, _ = c.operation_outcome(w.repo, op)
        assert kind == 0, "a failed submit has a recorded outcome"
        cid, path, data = w.pending_cs
        w.accepted(w.scribe_submit(c, cid, op), path, data)
    # The multipart upload that met the fault still completes.
    part = os.urandom(size)
    w.s3_complete(tag + "/mp", w.pending_uid, [(w.s3_part(tag + "/mp", w.pending_uid, 1, part),
                                                part)])
    w.write_all("after", size)
    w.check_all()


FILES = {"CAIRN_TEST_PACK_MAX": "0"}  # small blobs as files: every write is staged

FAULTS = [
    # (id, shim settings relative to the data dir, expected codes, payload size[, env])
    ("write-eio-staging", dict(ops="write", errno="EIO", pattern="{data}/staging/*"),
     Expect.IO, 300_000, FILES),
    # packs on (the default): 4 KiB writes of every face append to a pack
    ("write-eio-packs", dict(ops="write", errno="EIO", pattern="{data}/packs/*"),
     Expect.IO, 4096),
    ("write-enospc-all", dict(ops="write", errno="ENOSPC", pattern="{data}/*"),
     Expect.FULL, 300_000),
    # 4 KiB: under the pack threshold, so the full disk is met by the pack
    # append (300 KB writes above are staged files and never reach a pack)
    ("write-enospc-packs", dict(ops="write", errno="ENOSPC", pattern="{data}/packs/*"),
     Expect.FULL, 4096),
    ("fsync-eio-all", dict(ops="fsync,fdatasync", errno="EIO", pattern="{data}/*"),
     Expect.IO, 4096),
    # renames publish staged files; packed blobs are never renamed
    ("rename-eio-all", dict(ops="rename", errno="EIO", pattern="{data}/*"), Expect.IO, 300_000,
     FILES),
    ("write-eio-meta", dict(ops="write", errno="EIO", pattern="{data}/meta.db*"),
     Expect.IO, 4096),
]


@pytest.mark.parametrize("fault", FAULTS, ids=[f[0] for f in FAULTS])
def test_injected_fault_every_face(node_factory, tmp_path, fault):
    _, settings, expect, size = fault[:4]
    extra = fault[4] if len(fault) > 4 else {}
    shim = FaultShim(tmp_path)
    node = start(node_factory, env=dict(shim.env, **extra))
    data_dir = os.path.abspath(node.data_dir)
    w = Faces(node)
    w.write_all("before", size)
    prepare_pending(w)

    hits = shim.hits()
    shim.set(**{k: v.format(data=data_dir) for k, v in settings.items()})
    got, want, objs, op = writes_fail(w, expect, size)
    assert shim.hits() > hits, "the fault was never met"
    # Reads keep working while the fault holds.
    w.check_all()
    shim.off()
    assert node.server.proc.poll() is None, "the server died"
    assert got == want

    after_fault(w, objs, op, size)
    assert node.server.proc.poll() is None, "the server died"
    assert wait_staging_empty(data_dir) == []
    # And all of it survives a restart, without the shim.
    node.stop()
    node.env = dict(extra)
    node.start()
    w.reconnect(node)
    w.check_all()


def test_metadata_db_locked_every_face(node_factory):
    node = start(node_factory)
    w = Faces(node)
    w.write_all("before", 4096)
    prepare_pending(w)
    with meta_db_locked(node.data_dir):
        t0 = time.time()
        got, want, objs, op = writes_fail(w, Expect.LOCKED, 4096)
        waited = time.time() - t0
        assert waited < 60, "a locked database held five requests for %.1fs" % waited
    assert node.server.proc.poll() is None, "the server died"
    assert got == want
    after_fault(w, objs, op, 4096)
    assert wait_staging_empty(node.data_dir) == []


def test_full_disk_every_face(node_factory, tmp_path):
    disk = str(tmp_path / "disk")
    if os.geteuid() != 0 or not mount_tmpfs(disk, 32 << 20):
        pytest.skip("cannot mount a size-limited tmpfs here; the shim's ENOSPC case covers it")
    try:
        node = start(node_factory, data=os.path.join(disk, "data"))
        w = Faces(node)
        w.write_all("before", 50_000)
        prepare_pending(w)
        # Fill the disk to the last byte, then write through each face.
        ballast = os.path.join(disk, "ballast")
        with open(ballast, "wb", buffering=0) as f:
            try:
                while True:
                    f.write(b"\0" * (64 << 10))
            except OSError:
                pass
            try:
                while True:
                    f.write(b"\0")
            except OSError:
                pass
        got, want, objs, op = writes_fail(w, Expect.FULL, 1 << 20)
        assert node.server.proc.poll() is None, "the server died"
        w.check_all()
        os.unlink(ballast)
        assert got == want
        after_fault(w, objs, op, 1 << 20)
        assert wait_staging_empty(node.data_dir) == []
        node.stop()
        node.start()
        w.reconnect(node)
        w.check_all()
        node.stop()
    finally:
        subprocess.run(["umount", "-l", disk], capture_output=True)
