"""Security checks of the S3, blob-ops and Scribe faces, against the real
server:

  * secrets never reach the logs (at debug level), the answers, or any file
    of the data dir but admin.token: not the administrator secret, not a
    token made later, not a wrong secret tried through SigV4 (header and
    presigned) or a Bearer header, and not a valid presigned URL's signature
    (a live presigned URL is a credential);
  * no path traversal through S3 keys, Scribe repository names and tree
    paths, or blob namespaces and digests: "..", NUL, overlong UTF-8,
    absolute paths, backslashes.  Whatever a name is, it is refused with the
    face's documented code or kept as an opaque name that reads back exactly
    — never a file outside the data dir, never a path inside it (blob files
    are named by their digest only), never another bucket's or
    repository's entry — and every S3 error document stays well-formed XML.
"""
import http.client
import json
import os
import re
import struct
import xml.dom.minidom

import pytest
import requests
from botocore.exceptions import ClientError

from conftest import binary, run
from proofutil import (FACES, FACES_ARGS, all_files, no_secret_in_files, node_factory,  # noqa: F401
                       s3_client, scribe, tag_stays_inside)
import scribe_wire as sw


def start(node_factory, cred=None, debug=False):
    env = {"CAIRN_ADMIN_TOKEN": cred} if cred else None
    args = FACES_ARGS + (["--log-level", "debug"] if debug else [])
    return node_factory(args=args, env=env, wait_for=FACES)


def raw_http(node, method, path, cred, body=None, headers=None):
    """One request with the path exactly as given (no client-side
    normalisation of dot segments or escapes)."""
    h = http.client.HTTPConnection(*node.addr("http"), timeout=30)
    try:
        hdrs = {"Authorization": "Bearer " + cred} if cred else {}
        hdrs.update(headers or {})
        h.putrequest(method, path, skip_accept_encoding=True)
        for k, v in hdrs.items():
            h.putheader(k, v)
        h.putheader("Content-Length", str(len(body or b"")))
        h.endheaders(body or b"")
        r = h.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        h.close()


def assert_xml(body, what):
    if body:
        try:
            xml.dom.minidom.parseString(body)
        except Exception as e:       # expat's errors have no common base
            raise AssertionError("%s: not well-formed XML (%s): %r" % (what, e, body[:300]))


def s3_code(body):
    m = re.search(rb"<Code>([^<]*)</Code>", body)
    return m.group(1).decode() if m else None


def no_escape(tmp_path, node, tag, before):
    """Nothing with the tag outside the data dir or in any path inside it,
    and the blob files are named by their digest alone."""
    after = all_files(str(tmp_path)) - all_files(node.data_dir)
    new = {p for p in after - before if not p.endswith(".log")}
    assert new == set(), new
    tag_stays_inside(node, tag, "name")


# ---- secrets ---------------------------------------------------------------------------
def test_secrets_never_reach_logs_answers_or_data(node_factory):
    admin_secret = "S3cr3t-admin-" + os.urandom(12).hex()
    wrong = "Wr0ng-guess-" + os.urandom(12).hex()
    cred = "cnadmin:" + admin_secret
    node = start(node_factory, cred=cred, debug=True)
    url = node.http_url
    answers = []

    def keep(r):
        answers.append(r.content if hasattr(r, "content") else r)
        return r

    s3 = s3_client(node, "cnadmin", admin_secret)
    s3.create_bucket(Bucket="sec")
    s3.put_object(Bucket="sec", Key="k", Body=b"hello")
    assert s3.get_object(Bucket="sec", Key="k")["Body"].read() == b"hello"
    good_presigned = s3.generate_presigned_url("get_object", Params={"Bucket": "sec", "Key": "k"})
    assert keep(requests.get(good_presigned, timeout=30)).status_code == 200
    live_signature = re.search(r"X-Amz-Signature=([0-9a-f]+)", good_presigned).group(1)

    # SigV4 with a wrong secret (header and presigned), with an unknown key.
    for fn, code in [
            (lambda: s3_client(node, "cnadmin", wrong).get_object(Bucket="sec", Key="k"),
             "SignatureDoesNotMatch"),
            (lambda: s3_client(node, "cnadmin", wrong).put_object(Bucket="sec", Key="w",
                                                                  Body=b"x"),
             "SignatureDoesNotMatch"),
            (lambda: s3_client(node, "nosuchkey", wrong).list_buckets(), "InvalidAccessKeyId")]:
        with pytest.raises(ClientError) as ei:
            fn()
        assert ei.value.response["Error"]["Code"] == code
    bad_presigned = s3_client(node, "cnadmin", wrong).generate_presigned_url(
        "get_object", Params={"Bucket": "sec", "Key": "k"})
    assert keep(requests.get(bad_presigned, timeout=30)).status_code == 403
    # Bearer on S3 and on the blob ops: right, wrong, unknown id, malformed.
    blob_stat = url + "/_cairn/ops/blobs/stat"
    stat_body = json.dumps({"namespace": "sec/ns", "digest": "0" * 64})
    for bearer, ok in [(cred, True), ("cnadmin:" + wrong, False), ("nosuch:" + wrong, False),
                       (wrong, False), (cred[:-1], False)]:
        h = {"Authorization": "Bearer " + bearer}
        r = keep(requests.get(url + "/sec/k", headers=h, timeout=30))
        assert (r.status_code == 200) == ok, (bearer, r.status_code)
        r = keep(requests.post(blob_stat, headers=h, data=stat_body, timeout=30))
        assert r.status_code == (404 if ok else 401), (bearer, r.status_code, r.text)
    # SigV4 on the blob ops with a wrong secret.
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    req = AWSRequest(method="POST", url=blob_stat, data=stat_body)
    SigV4Auth(Credentials("cnadmin", wrong), "s3", "us-east-1").add_auth(req)
    p = req.prepare()
    r = keep(requests.post(p.url, headers=dict(p.headers), data=stat_body, timeout=30))
    assert r.status_code == 401, r.text
    # A token made later, used through S3 and the blob ops, then mistyped.
    out = run([binary("cairn"), "admin", "--data", node.data_dir, "token", "create",
               "--account", "admin"], timeout=60)
    assert out.returncode == 0, out.stderr
    new_cred = out.stdout.strip().splitlines()[-1]
    new_id, new_secret = new_cred.split(":", 1)
    assert new_secret not in out.stderr
    s3_client(node, new_id, new_secret).list_buckets()
    r = keep(requests.post(blob_stat, headers={"Authorization": "Bearer " + new_cred},
                           data=stat_body, timeout=30))
    assert r.status_code in (403, 404), r.text       # authenticated; blob perms are not default
    with pytest.raises(ClientError):
        s3_client(node, new_id, new_secret + "x").list_buckets()
    r = keep(requests.post(blob_stat, headers={"Authorization": "Bearer " + new_cred + "x"},
                           data=stat_body, timeout=30))
    assert r.status_code == 401
    # Denied requests log their reason: make one (a token without put).
    out = run([binary("cairn"), "admin", "--data", node.data_dir, "token", "create",
               "--account", "admin", "--perm", "object:get"], timeout=60)
    assert out.returncode == 0, out.stderr
    ro_id, ro_secret = out.stdout.strip().splitlines()[-1].split(":", 1)
    with pytest.raises(ClientError) as ei:
        s3_client(node, ro_id, ro_secret).put_object(Bucket="sec", Key="denied", Body=b"x")
    assert ei.value.response["Error"]["Code"] == "AccessDenied"
    node.stop()

    secrets = [admin_secret, wrong, new_secret, ro_secret, live_signature]
    logs = "".join(p.output() for p in node.procs)
    assert "denied" in logs, "an access denial left no trace in the log"
    for sec in secrets:
        assert sec not in logs, "a secret is in the server log: %s" % sec[:8]
    for body in answers:
        for sec in secrets[:4]:
            assert sec.encode() not in body, "a secret is in an answer"
    no_secret_in_files(node.data_dir, secrets)


# ---- S3 keys ---------------------------------------------------------------------------
HOSTILE_KEYS = [
    "..", ".", "../escape-{tag}", "../../escape-{tag}", "a/../../../escape-{tag}",
    "../other-{tag}/k", "/tmp/escape-{tag}", "//escape-{tag}", "blobs/../../escape-{tag}",
    "..\\..\\escape-{tag}", "%2e%2e%2fescape-{tag}", "staging/../escape-{tag}", "./././x",
    "a" * 1024, "deep/" * 100 + "x", "\u202eevil-{tag}", "emoji-\U0001F600-{tag}",
]
# Paths sent as they are: escapes decoded by the server, dot segments left
# to it, bytes that are not UTF-8 (overlong '.', '/', a lone surrogate, 0xFF).
RAW_PATHS = [
    "/trav/../other-{tag}/raw", "/trav/%2e%2e/other-{tag}/raw2", "/trav/%2E%2E%2Frawescape-{tag}",
    "/trav/a%2f..%2f..%2frawescape-{tag}", "/trav/%00", "/trav/nul%00-{tag}",
    "/trav/%c0%ae%c0%ae/rawescape-{tag}", "/trav/%c0%afrawescape-{tag}", "/trav/%e0%80%ae-{tag}",
    "/trav/%ed%a0%80", "/trav/%ff%fe", "/trav/..%c0%af..%c0%afrawescape-{tag}",
    "/trav/%5c..%5crawescape-{tag}", "/../trav/rawescape-{tag}", "/trav%c0%ae/x", "/%2e%2e/x",
    "/trav/" + "k" * 1100,
]


def test_s3_keys_cannot_traverse(node_factory, tmp_path):
    tag = os.urandom(6).hex()
    node = start(node_factory)
    cred = "cnadmin:test-admin-secret-0123456789"
    before = all_files(str(tmp_path)) - all_files(node.data_dir)
    s3 = s3_client(node)
    s3.create_bucket(Bucket="trav")
    s3.create_bucket(Bucket="other-" + tag)
    accepted, rejected = {}, []
    for i, k in enumerate(HOSTILE_KEYS):
        key = k.format(tag=tag)
        data = ("body %d %s" % (i, tag)).encode()
        try:
            s3.put_object(Bucket="trav", Key=key, Body=data)
            accepted[key.encode()] = data
        except ClientError as e:
            assert e.response["Error"]["Code"] in ("InvalidArgument", "KeyTooLongError"), (key, e)
            rejected.append(key)
    raw_accepted = {}
    for i, p in enumerate(RAW_PATHS):
        path = p.format(tag=tag)
        data = ("raw %d %s" % (i, tag)).encode()
        status, _, body = raw_http(node, "PUT", path, cred, data)
        assert_xml(body, "PUT " + path)
        if status == 200:
            raw_accepted[path] = data
        else:
            assert status == 400 and s3_code(body) in (
                "InvalidArgument", "InvalidURI", "KeyTooLongError", "InvalidBucketName"), (
                path, status, body)
            rejected.append(path)
        # The same path read back: the body written, or the same refusal.
        status2, _, body2 = raw_http(node, "GET", path, cred)
        if status == 200:
            assert (status2, body2) == (200, data), path
        else:
            assert_xml(body2, "GET " + path)
            assert status2 in (400, 404), (path, status2)
    # A key that names another bucket never lands in it.
    other = s3.list_objects_v2(Bucket="other-" + tag)
    assert other.get("KeyCount", 0) == 0, other.get("Contents")
    # Every key accepted through boto3 reads back exactly and lists as itself
    # (url encoding-type, so control and odd characters survive the XML).
    for key, data in accepted.items():
        assert s3.get_object(Bucket="trav", Key=key.decode())["Body"].read() == data, key
    listed = set()
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket="trav"):
        listed.update(o["Key"].encode() for o in page.get("Contents", []))
    assert {k for k in accepted} <= listed
    assert len(listed) == len(accepted) + len(raw_accepted), sorted(listed)
    # A listing of every key through the raw path is well-formed XML too.
    status, _, body = raw_http(node, "GET", "/trav?list-type=2&encoding-type=url", cred)
    assert status == 200
    assert_xml(body, "ListObjectsV2")
    node.stop()
    no_escape(tmp_path, node, tag, before)
    print("s3 keys: %d accepted as opaque names, %d refused"
          % (len(accepted) + len(raw_accepted), len(rejected)))


# ---- Scribe repository names and tree paths -------------------------------------------
def changeset_raw(entries):
    """A change set whose paths are raw bytes (add entries), sorted."""
    entries = sorted(entries)
    out = struct.pack("<BI", 1, len(entries))
    for path, mid in entries:
        out += struct.pack("<BH", sw.ADD, len(path)) + path + mid + b"\0"
    return out


BAD_REPO_NAMES = [b"..", b".", b"../escape-{tag}", b"a/b", b"/abs-{tag}", b"a\0b-{tag}",
                  b"\xc0\xae\xc0\xae", b"\xc0\xafescape-{tag}", b"\xff-{tag}", b"\xed\xa0\x80",
                  b"", b"n" * 129, b"tab\tname-{tag}", b"\\..\\escape-{tag}/x"]
BAD_PATHS = [b"..", b".", b"../escape-{tag}", b"a/../../escape-{tag}", b"/abs-{tag}",
             b"a//b-{tag}", b"a/-{tag}/", b"a/./b-{tag}", b"nul\0-{tag}", b"\xc0\xae\xc0\xae/x",
             b"\xc0\xafescape-{tag}", b"\xe0\x80\xae-{tag}", b"\xed\xa0\x80", b"\xff",
             b"ctl\x01-{tag}", b"del\x7f-{tag}", b"p" * 8193]
ODD_BUT_CANONICAL = [b"...", b"..a-{tag}", b".hidden-{tag}", b"a\\..\\b-{tag}",
                     b"emoji-\xf0\x9f\x98\x80-{tag}", b"%2e%2e-{tag}"]


def test_scribe_names_and_paths_cannot_traverse(node_factory, tmp_path):
    tag = os.urandom(6).hex()
    node = start(node_factory)
    before = all_files(str(tmp_path)) - all_files(node.data_dir)
    data = b"scribe " + tag.encode()
    chunks, enc, mid = sw.file_objects(data)
    objs = [(sw.CHUNK, sw.chunk_id(chunks[0]), chunks[0]), (sw.MANIFEST, mid, enc)]
    with scribe(node) as c:
        for name in BAD_REPO_NAMES:
            name = name.replace(b"{tag}", tag.encode())
            with pytest.raises(sw.ScribeError) as ei:
                c.repo_create(name)
            assert ei.value.code == sw.ERR["malformed"], (name, ei.value)
            # Looking one up by that name finds nothing, or is malformed.
            with pytest.raises(sw.ScribeError) as ei:
                c.repo_info(name=name)
            assert ei.value.code in (sw.ERR["malformed"], sw.ERR["repository_not_found"]), name
        rows, _ = c.repo_list()
        assert rows == [], rows
        repo = c.repo_create("safe-" + tag)
        other = c.repo_create("other-" + tag)
        c.put_objects(repo["id"], objs)
        for path in BAD_PATHS:
            path = path.replace(b"{tag}", tag.encode())
            cs = changeset_raw([(path, mid)])
            with pytest.raises(sw.ScribeError) as ei:
                c.put_objects(repo["id"], [(sw.CHANGESET, sw.changeset_id(cs), cs)])
            assert ei.value.code in (sw.ERR["object_invalid"], sw.ERR["malformed"]), (path,
                                                                                     ei.value)
            if len(path) <= 8192:
                # Nor is such a path a prefix a read accepts.
                with pytest.raises(sw.ScribeError) as ei:
                    c.tree_page(repo["id"], repo["main"], 0, prefix=path)
                assert ei.value.code == sw.ERR["malformed"], (path, ei.value)
        # Odd but canonical paths are opaque names, exactly as sent.
        odd = [p.replace(b"{tag}", tag.encode()) for p in ODD_BUT_CANONICAL]
        cs = changeset_raw([(p, mid) for p in odd])
        cid = sw.changeset_id(cs)
        c.put_objects(repo["id"], [(sw.CHANGESET, cid, cs)])
        o = c.submit(repo["id"], repo["incarnation"], os.urandom(16), repo["main"],
                     os.urandom(16), 0, cid, "sec", "odd names")
        assert o["outcome"] == 1, o
        c.sock.settimeout(30)
        page = c.call(sw.OP["tree_page"], c.enc().raw(repo["id"]).raw(repo["main"]).u64(1)
                      .str16(b"").u32(4096).bool(False).bytes())
        d = c.dec(page)
        got = []
        for _ in range(d.u32()):
            got.append(d.str16())
            d.raw(32), d.u64(), d.u8(), d.u64()
        assert sorted(got) == sorted(odd)
        assert c.tree_page(other["id"], other["main"], 0)[0] == []
        assert c.repo_info(rid=other["id"])["head"] == 0
    node.stop()
    no_escape(tmp_path, node, tag, before)


# ---- blob namespaces and digests -------------------------------------------------------
BAD_NAMESPACES = ["/abs-{tag}", "a\u0000b-{tag}", "", "n" * 129, "sp ace-{tag}",
                  "\\..\\escape-{tag}", "%2e%2e-{tag}", "\u00e9-{tag}", "a\nb-{tag}"]
MAYBE_NAMESPACES = ["..", ".", "../escape-{tag}", "a/../../escape-{tag}", "./x-{tag}",
                    "a//b-{tag}"]
BAD_DIGESTS = ["../../etc/passwd", "/" + "0" * 63, "A" * 64, "0" * 63, "0" * 65,
               "..%2f" + "0" * 59, "0" * 62 + "\u0000a"]


def test_blob_namespaces_and_digests_cannot_traverse(node_factory, tmp_path):
    tag = os.urandom(6).hex()
    node = start(node_factory)
    before = all_files(str(tmp_path)) - all_files(node.data_dir)
    ops = node.http_url + "/_cairn/ops/"
    auth = {"Authorization": "Bearer cnadmin:test-admin-secret-0123456789"}
    data = ("blob " + tag).encode()
    digest = sw.chunk_id(data).hex()

    def put(ns, body=data, d=digest):
        offer = json.dumps({"namespace": ns, "digest": d, "len": len(body)})
        return requests.post(ops + "blobs/put", data=body, timeout=30,
                             headers=dict(auth, **{"Cairn-Offer": offer}))

    def stat(ns, d=digest):
        return requests.post(ops + "blobs/stat", headers=auth, timeout=30,
                             data=json.dumps({"namespace": ns, "digest": d}))

    for ns in BAD_NAMESPACES:
        ns = ns.format(tag=tag)
        for r in (put(ns), stat(ns)):
            assert r.status_code == 400, (ns, r.status_code, r.text)
            assert r.json()["error"]["code"] == "invalid_params", r.text
    # Bytes that are not UTF-8 in the JSON itself.
    for raw in (b'{"namespace":"\xc0\xae\xc0\xae","digest":"' + digest.encode() + b'"}',
                b'{"namespace":"a\xffb","digest":"' + digest.encode() + b'"}'):
        r = requests.post(ops + "blobs/stat", headers=auth, data=raw, timeout=30)
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_params", r.text
    for d in BAD_DIGESTS:
        for r in (put("sec/ns", d=d), stat("sec/ns", d=d)):
            assert r.status_code == 400, (d, r.status_code, r.text)
            assert r.json()["error"]["reason"] in ("malformed_digest", "malformed_json"), r.text
    # Names that the namespace rule allows are opaque: a put into one is
    # seen there and nowhere else.
    held = []
    for ns in MAYBE_NAMESPACES:
        ns = ns.format(tag=tag)
        r = put(ns)
        if r.status_code == 200:
            held.append(ns)
        else:
            assert r.status_code == 400 and r.json()["error"]["reason"] == "invalid_namespace", \
                (ns, r.text)
    for ns in held:
        assert stat(ns).status_code == 200, ns
    for ns in ("escape-" + tag, "x-" + tag, "b-" + tag, "sec/ns"):
        assert stat(ns).status_code == 404, ns
    node.stop()
    no_escape(tmp_path, node, tag, before)
    print("blob namespaces: %s accepted as opaque names" % held)
