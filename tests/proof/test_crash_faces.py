"""Crash durability through every face at once: Jay, S3 (boto3 PutObject and
multipart uploads), blob ops (blobs/put with a Cairn-Offer, operator
deletes) and Scribe protocol 2 (put_objects + submit), concurrently, with the
server killed by SIGKILL at a random point, restarted, and checked.

After every kill:
  * a store sweep with zero grace and every liveness source (objects, blobs,
    repos: tests/proof/proof_sweep) runs over the stopped data dir; then
  * staging is empty once the server is back;
  * every acknowledged write reads back through its own face with the right
    checksum — S3: x-amz-checksum-sha256 and the bytes' SHA-256; blobs: the
    BLAKE3 digest; Scribe: every chunk and manifest id recomputed from the
    bytes and each file's SHA-256 — and every acknowledged delete is absent;
  * a write whose reply was lost is wholly there or not at all;
  * a torn upload (an S3 PUT, a blob put or a Scribe put_objects whose body
    stopped half-way) is not visible;
  * S3 and blob listings agree with what reads see; a Scribe repository's
    head and tree are exactly the model's, and every object a put_objects
    acknowledged is still present (the sweep did not take it);
  * a Scribe submit whose reply was lost is resolved through
    operation_outcome: recorded (then the tree shows it) or unknown (then the
    tree does not, and re-sending the same operation id is accepted); either
    way a replay of the operation answers the recorded outcome.

Some payloads are shared by every face (the store keeps one copy), and the
blob writers delete them from their namespaces: the zero-grace sweep must
still keep what S3, Jay and Scribe reference.

CAIRN_CRASH_CYCLES sets the number of kills (default 3 here; `make
test-crash` runs 20), CAIRN_CRASH_SEED fixes the random choices.
"""
import base64
import hashlib
import json
import os
import random
import socket
import struct
import threading
import time

import requests
from botocore.exceptions import BotoCoreError, ClientError

from conftest import ADMIN_TOKEN
from proofutil import (FACES, FACES_ARGS, jay, jayclient, node_factory,  # noqa: F401
                       kill_sweep_restart, s3_client, scribe)
import scribe_wire as sw
from blobsclient import b3

CYCLES = int(os.environ.get("CAIRN_CRASH_CYCLES", "3"))
BUCKET = "crashfaces"
ABSENT, PRESENT = None, "present"
S3_WRITERS, BLOB_WRITERS, SCRIBE_WRITERS = 2, 2, 2
KEYS = 12
SIZES = [0, 1, 100, 4096, 65536 + 7, 300_000, 1 << 20, (1 << 20) + 5]
PART_SIZES = [1, 4096, 100_000, 600_000]
SCRIBE_SIZES = [0, 1, 5000, 200_000, (1 << 20) + 17]
_common_rng = random.Random(20261202)
COMMON = [_common_rng.randbytes(n) for n in (1, 4096, 65536 + 3)]
LOST = (OSError, EOFError, ValueError, AssertionError, struct.error)
# BLAKE3 id -> SHA-256 of the bytes, recorded where the writer computed the
# id with b3sum: a read is checked by an in-process SHA-256 against it (equal
# SHA-256, equal bytes, so the id holds) rather than one b3sum run per blob.
B3_SHA = {}


_B3_OF_SHA = {}


def b3_of(data):
    digest = sha(data)
    d = _B3_OF_SHA.get(digest)
    if d is None:
        d = _B3_OF_SHA[digest] = b3(data)
        B3_SHA[d] = digest
    return d


def chunk_id(data):
    cid = sw.chunk_id(data)
    B3_SHA[cid] = sha(data)
    return cid


def b3_matches(data, digest):
    want = B3_SHA.get(digest)
    if want is None:
        return (b3(data) if isinstance(digest, str) else sw.chunk_id(data)) == digest
    return sha(data) == want


class Model:
    """What each (face, key) may hold: a set of possible values (a digest,
    PRESENT, or ABSENT) that collapses on every acknowledgement and widens
    with every request whose outcome is unknown."""

    def __init__(self):
        self.lock = threading.Lock()
        self.possible = {}
        self.acked = {}
        self.unknown = 0
        self.errors = []

    def ack(self, key, value):
        with self.lock:
            self.possible[key] = {value}
            self.acked[key[0]] = self.acked.get(key[0], 0) + 1

    def lost(self, key, value):
        with self.lock:
            self.possible.setdefault(key, {ABSENT}).add(value)
            self.unknown += 1

    def error(self, what):
        with self.lock:
            self.errors.append(what)

    def observe(self, key, value):
        allowed = self.possible.get(key, {ABSENT})
        assert value in allowed, "%s holds %s, expected one of %s" % (
            key, value, sorted(map(str, allowed)))
        self.possible[key] = {value}

    def present(self, face, sub=None):
        return {k[-1] for k, v in self.possible.items()
                if k[0] == face and (sub is None or k[1] == sub) and v != {ABSENT}}


def payload(rng, sizes):
    if rng.random() < 0.15:
        return rng.choice(COMMON)
    return rng.randbytes(rng.choice(sizes))


def sha(data):
    return hashlib.sha256(data).hexdigest()


# ---- writers: each owns its keys, one request at a time ----------------------------------
def jay_writer(node, wid, model, rng, stop):
    try:
        conn = jay(node, timeout=30)
    except (OSError, jayclient.JayError):
        return
    with conn:
        while not stop.is_set():
            key = ("jay", "j%d/k%02d" % (wid, rng.randrange(KEYS)))
            data = payload(rng, SIZES)
            try:
                out = conn.put_object(BUCKET, key[1], data)
            except jayclient.JayError as e:
                model.error("jay put %s: %s" % (key, e))
                return
            except LOST:
                model.lost(key, sha(data))
                return
            if out["checksum"] != sha(data):
                model.error("jay %s: acknowledged checksum %s" % (key, out["checksum"]))
            model.ack(key, sha(data))


def s3_writer(url, wid, model, rng, stop):
    s3 = s3_client(url)
    while not stop.is_set():
        key = ("s3", "s%d/k%02d" % (wid, rng.randrange(KEYS)))
        r = rng.random()
        try:
            if r < 0.12:
                value = ABSENT
                s3.delete_object(Bucket=BUCKET, Key=key[1])
            elif r < 0.35:
                parts = [payload(rng, PART_SIZES) for _ in range(rng.randint(1, 3))]
                value = sha(b"".join(parts))
                uid = s3.create_multipart_upload(Bucket=BUCKET, Key=key[1])["UploadId"]
                done = []
                for i, p in enumerate(parts):
                    up = s3.upload_part(Bucket=BUCKET, Key=key[1], UploadId=uid, PartNumber=i + 1,
                                        Body=p)
                    if up["ETag"] != '"%s"' % hashlib.md5(p).hexdigest():
                        model.error("s3 part etag %s of %s" % (up["ETag"], key))
                    done.append({"PartNumber": i + 1, "ETag": up["ETag"]})
                # Only the completion can make the object visible: a crash
                # before it leaves the key as it was.
                try:
                    s3.complete_multipart_upload(Bucket=BUCKET, Key=key[1], UploadId=uid,
                                                 MultipartUpload={"Parts": done})
                except BotoCoreError:
                    model.lost(key, value)
                    return
            else:
                data = payload(rng, SIZES)
                value = sha(data)
                try:
                    out = s3.put_object(Bucket=BUCKET, Key=key[1], Body=data,
                                        ChecksumAlgorithm="SHA256")
                except BotoCoreError:
                    model.lost(key, value)
                    return
                if out["ETag"] != '"%s"' % hashlib.md5(data).hexdigest():
                    model.error("s3 etag %s of %s" % (out["ETag"], key))
                if base64.b64decode(out["ChecksumSHA256"]).hex() != value:
                    model.error("s3 checksum %s of %s" % (out["ChecksumSHA256"], key))
        except ClientError as e:
            model.error("s3 %s: %s" % (key, e))
            return
        except BotoCoreError:
            if value is ABSENT:
                model.lost(key, ABSENT)
            return       # a multipart step before completion: nothing changed
        model.ack(key, value)


def ops_url(node_url, op):
    return node_url + "/_cairn/ops/" + op


def blob_writer(url, wid, model, rng, stop, pool):
    """Puts into its own namespace, and sometimes deletes (as the operator),
    blobs drawn from its pool (a fixed set of payloads, so its key space
    stays bounded and a delete is often followed by a re-put) and the
    payloads every face shares."""
    ns = "crash/ns%d" % wid
    auth = {"Authorization": "Bearer " + ADMIN_TOKEN}
    http = requests.Session()
    while not stop.is_set():
        data = rng.choice(COMMON) if rng.random() < 0.15 else rng.choice(pool)
        d = b3_of(data)
        if rng.random() < 0.2:
            key = ("blob", ns, d)
            try:
                r = http.post(ops_url(url, "blobs/delete"), headers=auth, timeout=30,
                              data=json.dumps({"namespace": ns, "digests": [d]}))
            except requests.RequestException:
                model.lost(key, ABSENT)
                return
            if r.status_code != 200:
                model.error("blob delete %s: %d %s" % (key, r.status_code, r.text))
                return
            model.ack(key, ABSENT)
            continue
        key = ("blob", ns, d)
        offer = {"namespace": ns, "digest": d, "len": len(data)}
        try:
            r = http.post(ops_url(url, "blobs/put"), data=data, timeout=30,
                          headers=dict(auth, **{"Cairn-Offer": json.dumps(offer)}))
        except requests.RequestException:
            model.lost(key, PRESENT)
            return
        if r.status_code != 200 or r.json().get("digest") != d:
            model.error("blob put %s: %d %s" % (key, r.status_code, r.text))
            return
        model.ack(key, PRESENT)


class Repo:
    """A Scribe repository written by one writer only, so its change numbers
    are the writer's submits."""

    def __init__(self, info):
        self.id, self.main, self.inc = info["id"], info["main"], info["incarnation"]
        self.ws = os.urandom(16)
        self.head = 0
        self.tree = {}          # path -> (manifest id, size, sha256 of the file)
        self.acked = set()      # (kind, id) of every object a put_objects acknowledged
        self.pending = None     # (operation, base, change set id, tree if accepted)
        self.resolved = {"recorded": 0, "resent": 0}


def scribe_writer(addr, repo, model, rng, stop):
    try:
        c = scribe(addr, timeout=30)
    except (LOST, sw.ScribeError):
        return
    with c:
        while not stop.is_set():
            path = "d%d/f%02d" % (rng.randrange(3), rng.randrange(KEYS // 3))
            live = path in repo.tree
            tree = dict(repo.tree)
            objs = []
            if live and rng.random() < 0.2:
                entries = [(sw.DELETE, path, None, 0, None)]
                del tree[path]
            else:
                data = payload(rng, SCRIBE_SIZES)
                chunks, enc, mid = sw.file_objects(data)
                objs = [(sw.CHUNK, chunk_id(ch), ch) for ch in chunks]
                objs.append((sw.MANIFEST, mid, enc))
                entries = [(sw.MODIFY if live else sw.ADD, path, mid, 0, None)]
                tree[path] = (mid, len(data), sha(data))
            cs = sw.changeset_encode(entries)
            cid = sw.changeset_id(cs)
            objs.append((sw.CHANGESET, cid, cs))
            try:
                c.put_objects(repo.id, objs)
            except sw.ScribeError as e:
                model.error("scribe put_objects: %s" % e)
                return
            except LOST:
                return
            repo.acked.update((k, i) for k, i, _ in objs)
            op = os.urandom(16)
            repo.pending = (op, repo.head, cid, tree)
            try:
                o = c.submit(repo.id, repo.inc, op, repo.main, repo.ws, repo.head, cid, "crash",
                             "crash cycle")
            except sw.ScribeError as e:
                model.error("scribe submit: %s" % e)
                return
            except LOST:
                model.lost(("scribe", repo.id, op), "submit")
                return
            repo.pending = None
            if o["outcome"] != 1 or o["change"] != repo.head + 1:
                model.error("scribe submit outcome %s at head %d" % (o, repo.head))
                return
            repo.head, repo.tree = o["change"], tree
            model.ack(("scribe", repo.id, "head"), repo.head)


def guarded(fn, model, *args):
    """A writer thread: whatever escapes it fails the test, not just the thread."""
    try:
        fn(*args)
    except Exception as e:      # noqa: BLE001 (reported, then the test fails)
        model.error("%s died: %r" % (fn.__name__, e))


# ---- torn uploads: the body stops half-way, the socket stays open until the kill ---------
def torn_http(node, request_line, headers, declared, sent):
    s = socket.create_connection(node.addr("http"), timeout=10)
    head = [request_line, "Host: %s:%d" % node.addr("http"),
            "Authorization: Bearer " + ADMIN_TOKEN, "Content-Length: %d" % declared]
    head += ["%s: %s" % kv for kv in headers.items()]
    s.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
    s.sendall(os.urandom(sent))
    return s


def torn_s3(node, key, rng):
    return torn_http(node, "PUT /%s/%s HTTP/1.1" % (BUCKET, key),
                     {"x-amz-content-sha256": "UNSIGNED-PAYLOAD"}, 4 << 20,
                     rng.randrange(1, 2 << 20))


def torn_scribe(node, repo, rng):
    """A put_objects whose object stream stops half-way; returns the
    connection and the objects it announced."""
    data = rng.randbytes(3 << 20)
    chunks, enc, mid = sw.file_objects(data)
    objs = [(sw.CHUNK, sw.chunk_id(ch), ch) for ch in chunks] + [(sw.MANIFEST, mid, enc)]
    c = scribe(node)
    e = c.enc().raw(repo.id).u32(len(objs))
    stream = b""
    for kind, oid, body in objs:
        e.u8(kind).raw(oid).u64(len(body))
        stream += body
    c.send_frame(sw.OP["put_objects"], e.bytes(), sw.FLAG_STREAM,
                 stream[:rng.randrange(1, len(stream) - 1)])
    return c, [(k, i) for k, i, _ in objs]


def torn_blob(node, ns, rng):
    declared = 3 << 20
    data = rng.randbytes(declared)
    d = b3(data)
    offer = json.dumps({"namespace": ns, "digest": d, "len": declared})
    s = socket.create_connection(node.addr("http"), timeout=10)
    s.sendall(("POST /_cairn/ops/blobs/put HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
               "Cairn-Offer: %s\r\nContent-Length: %d\r\n\r\n"
               % (ADMIN_TOKEN, offer, declared)).encode())
    s.sendall(data[:rng.randrange(1, declared - 1)])
    return s, d


def open_upload(node, key, rng):
    s3 = s3_client(node)
    uid = s3.create_multipart_upload(Bucket=BUCKET, Key=key)["UploadId"]
    parts = []
    for n in (1, 2):
        data = rng.randbytes(rng.choice(PART_SIZES))
        etag = s3.upload_part(Bucket=BUCKET, Key=key, UploadId=uid, PartNumber=n,
                              Body=data)["ETag"]
        parts.append((etag, data))
    return key, uid, parts


def finish_upload(node, model, open_mp):
    key, uid, parts = open_mp
    s3 = s3_client(node)
    listed = s3.list_parts(Bucket=BUCKET, Key=key, UploadId=uid)["Parts"]
    assert [(p["PartNumber"], p["ETag"], p["Size"]) for p in listed] == [
        (i + 1, e, len(d)) for i, (e, d) in enumerate(parts)]
    s3.complete_multipart_upload(Bucket=BUCKET, Key=key, UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": i + 1, "ETag": e} for i, (e, _) in enumerate(parts)]})
    whole = b"".join(d for _, d in parts)
    g = s3.get_object(Bucket=BUCKET, Key=key, ChecksumMode="ENABLED")
    assert g["Body"].read() == whole, key
    assert base64.b64decode(g["ChecksumSHA256"]).hex() == sha(whole)
    model.ack(("s3", key), sha(whole))


# ---- checks after the restart --------------------------------------------------------------
def verify_jay(node, model):
    with jay(node) as c:
        for key in sorted(k for k in model.possible if k[0] == "jay"):
            try:
                info, body = c.get_object(BUCKET, key[1])
            except jayclient.JayError as e:
                assert e.code == "NoSuchKey", e
                model.observe(key, ABSENT)
                continue
            assert info["checksum"] == sha(body) and info["size"] == len(body), key
            model.observe(key, sha(body))


def verify_s3(node, model, torn_keys):
    s3 = s3_client(node)
    for key in sorted(k for k in model.possible if k[0] == "s3"):
        try:
            g = s3.get_object(Bucket=BUCKET, Key=key[1], ChecksumMode="ENABLED")
        except ClientError as e:
            assert e.response["Error"]["Code"] == "NoSuchKey", e
            model.observe(key, ABSENT)
            continue
        body = g["Body"].read()
        assert g["ContentLength"] == len(body), key
        assert base64.b64decode(g["ChecksumSHA256"]).hex() == sha(body), key
        model.observe(key, sha(body))
    for key in torn_keys:
        try:
            s3.head_object(Bucket=BUCKET, Key=key)
            raise AssertionError("torn S3 upload %s is visible" % key)
        except ClientError as e:
            assert e.response["Error"]["Code"] in ("404", "NoSuchKey"), e
    listed = set()
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET):
        listed.update(o["Key"] for o in page.get("Contents", []))
    # The bucket is shared with the Jay writer.
    present = model.present("s3") | model.present("jay")
    assert listed == present, sorted(listed ^ present)


def verify_blobs(node, model, torn):
    auth = {"Authorization": "Bearer " + ADMIN_TOKEN}
    http = requests.Session()
    for key in sorted(k for k in model.possible if k[0] == "blob"):
        _, ns, d = key
        r = http.post(ops_url(node.http_url, "blobs/stat"), headers=auth, timeout=30,
                      data=json.dumps({"namespace": ns, "digest": d}))
        if r.status_code == 404:
            assert r.json()["error"]["code"] == "blob_missing", r.text
            model.observe(key, ABSENT)
            continue
        assert r.status_code == 200, r.text
        f = http.post(ops_url(node.http_url, "channels/blobs/sub"), headers=auth, timeout=30,
                      data=json.dumps({"namespace": ns, "digest": d}))
        assert f.status_code == 200, (key, f.status_code, f.text[:200])
        assert json.loads(f.headers["Cairn-Open"])["source"] == "store"
        assert len(f.content) == r.json()["len"] and b3_matches(f.content, d), key
        model.observe(key, PRESENT)
    for ns, d in torn:
        r = http.post(ops_url(node.http_url, "blobs/stat"), headers=auth, timeout=30,
                      data=json.dumps({"namespace": ns, "digest": d}))
        assert r.status_code == 404, "torn blob put %s is visible: %s" % (d, r.text)
    for ns in {k[1] for k in model.possible if k[0] == "blob"}:
        listed, after = set(), None
        while True:
            params = {"namespace": ns, "limit": 1000}
            if after:
                params["after"] = after
            r = http.post(ops_url(node.http_url, "blobs/list"), headers=auth, timeout=30,
                          data=json.dumps(params))
            assert r.status_code == 200, r.text
            listed.update(r.json()["digests"])
            after = r.json().get("next")
            if not after:
                break
        assert listed == model.present("blob", ns), sorted(listed ^ model.present("blob", ns))


MANIFEST_SHA = {}


def manifest_matches(enc, mid):
    if mid not in MANIFEST_SHA and sw.manifest_id(enc) == mid:
        MANIFEST_SHA[mid] = sha(enc)       # verified once by its id, then by SHA-256
    return MANIFEST_SHA.get(mid) == sha(enc)


def manifest_chunks(enc):
    _ver, size, n = struct.unpack_from("<BQI", enc)
    out = [struct.unpack_from("<32sI", enc, 13 + 36 * i) for i in range(n)]
    assert sum(ln for _, ln in out) == size
    return out


def verify_repo(c, repo):
    """The repository is exactly the model: head, tree, file bytes, and every
    acknowledged object still present."""
    assert c.repo_info(rid=repo.id)["head"] == repo.head
    rows, after = {}, None
    while True:
        page, more, _, _ = c.tree_page(repo.id, repo.main, repo.head, limit=4096, after=after)
        rows.update({r["path"]: (r["manifest"], r["size"]) for r in page})
        if not more:
            break
        after = page[-1]["path"]
    assert rows == {p: v[:2] for p, v in repo.tree.items()}, sorted(set(rows) ^ set(repo.tree))
    for path, (mid, size, digest) in sorted(repo.tree.items()):
        [(_, _, enc)] = c.get_objects(repo.id, [(sw.MANIFEST, mid)])
        assert enc is not None and manifest_matches(enc, mid), path
        refs = manifest_chunks(enc)
        got = c.get_objects(repo.id, [(sw.CHUNK, cid) for cid, _ in refs]) if refs else []
        body = b""
        for (cid, ln), (_, _, data) in zip(refs, got):
            assert data is not None and len(data) == ln and b3_matches(data, cid), path
            body += data
        assert len(body) == size and sha(body) == digest, path
    acked = sorted(repo.acked)
    for i in range(0, len(acked), 8192):
        present = c.presence(repo.id, acked[i:i + 8192])
        assert all(present), [acked[i + j] for j, p in enumerate(present) if not p]


def resolve_submit(c, repo):
    """A submit whose reply was lost: operation_outcome says whether it was
    recorded; unknown means it was not applied and may be sent again."""
    op, base, cid, tree = repo.pending
    kind, o = c.operation_outcome(repo.id, op)
    head = c.repo_info(rid=repo.id)["head"]
    if kind == 0:
        assert head == base, "an unrecorded submit moved the head %d -> %d" % (base, head)
        o = c.submit(repo.id, repo.inc, op, repo.main, repo.ws, base, cid, "crash", "crash cycle")
        repo.resolved["resent"] += 1
    else:
        assert kind == 1 and head == base + 1, (kind, head, base)
        repo.resolved["recorded"] += 1
    assert o["outcome"] == 1 and o["change"] == base + 1 and o["operation"] == op, o
    # Replays answer the recorded outcome, without a second change.
    assert c.operation_outcome(repo.id, op) == (1, o)
    assert c.submit(repo.id, repo.inc, op, repo.main, repo.ws, base, cid, "crash",
                    "crash cycle") == o
    repo.head, repo.tree, repo.pending = base + 1, tree, None


def start_faces(node_factory):
    return node_factory(args=FACES_ARGS, wait_for=FACES)


def test_crash_cycles_every_face(node_factory):
    rng = random.Random(int(os.environ.get("CAIRN_CRASH_SEED", "0")) or None)
    node = start_faces(node_factory)
    with jay(node) as c:
        c.create_bucket(BUCKET)
    with scribe(node) as c:
        repos = [Repo(c.repo_create("crash-%d" % i)) for i in range(SCRIBE_WRITERS)]
    model = Model()
    pools = [[rng.randbytes(rng.choice(SIZES)) for _ in range(2 * KEYS)]
             for _ in range(BLOB_WRITERS)]
    torn_s3_keys, torn_blobs, torn_objects = [], [], []
    swept = {"scanned": 0, "deleted": 0, "live": 0}
    t_start = time.time()
    for cycle in range(CYCLES):
        stop = threading.Event()
        jobs = [(jay_writer, (node, 0))]
        jobs += [(s3_writer, (node.http_url, w)) for w in range(S3_WRITERS)]
        jobs += [(blob_writer, (node.http_url, w)) for w in range(BLOB_WRITERS)]
        jobs += [(scribe_writer, (node.addr("scribe"), r)) for r in repos]
        threads = []
        for fn, args in jobs:
            args += (model, random.Random(rng.random()), stop)
            if fn is blob_writer:
                args += (pools[args[1]],)
            threads.append(threading.Thread(target=guarded, args=(fn, model) + args,
                                            daemon=True))
        for t in threads:
            t.start()
        # An upload with acknowledged parts, left unfinished across the kill
        # (and the zero-grace sweep): it completes after the restart.
        open_mp = open_upload(node, "open/%d" % cycle, rng)
        key = "torn/%d" % cycle
        torn_s3_keys.append(key)
        held = [torn_s3(node, key, rng)]
        s, d = torn_blob(node, "crash/torn", rng)
        held.append(s)
        torn_blobs.append(("crash/torn", d))
        c, refs = torn_scribe(node, repos[0], rng)
        held.append(c.sock)
        torn_objects.extend(refs)
        time.sleep(rng.uniform(0.5, 2.0))
        kill_sweep_restart(node, stop, threads, held, model.errors, swept)
        verify_jay(node, model)     # before verify_s3, which lists both faces' keys
        verify_s3(node, model, torn_s3_keys)
        verify_blobs(node, model, torn_blobs)
        finish_upload(node, model, open_mp)
        with scribe(node) as c:
            for r in repos:
                if r.pending:
                    resolve_submit(c, r)
                verify_repo(c, r)
            present = c.presence(repos[0].id, torn_objects)
            assert not any(present), "a torn put_objects left members"

    for face in ("jay", "s3", "blob", "scribe"):
        assert model.acked.get(face, 0) > 0, "no %s write was acknowledged" % face
    assert swept["scanned"] > 0
    resolved = {k: sum(r.resolved[k] for r in repos) for k in ("recorded", "resent")}
    print("crash faces: %d cycles in %.1fs, acknowledged %s, %d unknown outcomes, "
          "lost submits %s, swept %s" % (CYCLES, time.time() - t_start, model.acked,
                                         model.unknown, resolved, swept))


def test_scribe_submit_reply_lost(node_factory):
    """The submit is sent and the server killed at once (or a few ms later),
    before its reply can be read.  After the restart operation_outcome
    decides: recorded — the tree shows the change and a replay answers it;
    unknown — the tree does not, and sending the same operation again is
    accepted exactly once."""
    node = start_faces(node_factory)
    with scribe(node) as c:
        repo = Repo(c.repo_create("lost-reply"))
    seen = []
    for i, delay in enumerate([0, 0, 0.001, 0.003, 0.01, 0.05]):
        data = os.urandom(3000 + i)
        chunks, enc, mid = sw.file_objects(data)
        path = "f%d" % i
        cs = sw.changeset_encode([(sw.ADD, path, mid, 0, None)])
        cid = sw.changeset_id(cs)
        with scribe(node) as c:
            c.put_objects(repo.id, [(sw.CHUNK, sw.chunk_id(ch), ch) for ch in chunks]
                          + [(sw.MANIFEST, mid, enc), (sw.CHANGESET, cid, cs)])
            repo.acked.update({(sw.CHUNK, sw.chunk_id(chunks[0])), (sw.MANIFEST, mid),
                               (sw.CHANGESET, cid)})
            op = os.urandom(16)
            tree = dict(repo.tree)
            tree[path] = (mid, len(data), sha(data))
            repo.pending = (op, repo.head, cid, tree)
            c.send_frame(sw.OP["submit"], c.submit_payload(
                repo.id, repo.inc, op, repo.main, repo.ws, repo.head, cid, "crash",
                "crash cycle"))
            if delay:
                time.sleep(delay)
            node.kill9()
        node.start()
        before = dict(repo.resolved)
        with scribe(node) as c:
            resolve_submit(c, repo)
            verify_repo(c, repo)
        seen.append("recorded" if repo.resolved["recorded"] > before["recorded"] else "resent")
    print("lost submit replies resolved as: %s" % seen)
