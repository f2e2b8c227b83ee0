"""A data directory written by an earlier release, opened by this one (issue
17, "Upgrade"): tests/store/fixtures/pre-pack-f7c3280 is the directory the
last commit before pack files (f7c3280) wrote through S3, blob operations
and Scribe (scripts/upgrade_fixture.py made it; its .json lists every byte's
SHA-256).  Today's cairnd migrates it at start, serves every old object,
blob and file, keeps the old ACLs, grants and history, and puts new small
blobs into packs while the old ones stay files; all of it again after the
old small files were moved into packs offline (`cairn admin store pack`)
and the server restarted."""
import hashlib
import json
import os
import sys
import tarfile

import pytest
import requests

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "blobops"))

from conftest import Server, binary, run  # noqa: E402
from blobsclient import Ops  # noqa: E402
from cairnutil import repo, scribe_ep, tree, write  # noqa: E402
from test_packs_faces import files_under  # noqa: E402
from cairnutil import s3_client as s3_of  # noqa: E402

FIXTURE = os.path.join(HERE, "fixtures", "pre-pack-f7c3280")
ALL_FACES = ["--jay", "127.0.0.1:0", "--scribe", "127.0.0.1:0", "--http", "127.0.0.1:0"]


def sha(data):
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def old_dir(tmp_path):
    with tarfile.open(FIXTURE + ".tar.gz") as t:
        members = t.getmembers()
        # Our own fixture, checked anyway: regular files and directories under data/.
        assert all((m.isfile() or m.isdir()) and m.name.split("/")[0] == "data"
                   and ".." not in m.name.split("/") for m in members)
        t.extractall(tmp_path, members)
    with open(FIXTURE + ".json") as f:
        return str(tmp_path / "data"), json.load(f)


def check_objects(srv, manifest):
    s3 = s3_of(srv)
    assert {"photos", "pub"} <= {b["Name"] for b in s3.list_buckets()["Buckets"]}
    for bucket, objects in manifest["s3"].items():
        listed = s3.list_objects_v2(Bucket=bucket).get("Contents", [])
        assert {o["Key"]: o["Size"] for o in listed} == \
            {k: o["size"] for k, o in objects.items()}, bucket
        for key, want in objects.items():
            got = s3.get_object(Bucket=bucket, Key=key)
            assert sha(got["Body"].read()) == want["sha256"], (bucket, key)
            assert got["ContentType"] == want["content_type"], (bucket, key)
            assert got["Metadata"] == want["meta"], (bucket, key)
    # The old ACLs hold: the public bucket lists and its public object reads
    # anonymously; the private bucket and its objects do not.
    host, port = srv.addrs["http"]
    base = "http://%s:%d" % (host, port)
    r = requests.get(base + "/pub/index.html", timeout=10)
    assert r.status_code == 200 and sha(r.content) == manifest["s3"]["pub"]["index.html"]["sha256"]
    r = requests.get(base + "/pub?list-type=2", timeout=10)
    assert r.status_code == 200 and b"<Key>index.html</Key>" in r.content
    assert requests.get(base + "/photos/small/000.bin", timeout=10).status_code == 403
    assert requests.get(base + "/photos?list-type=2", timeout=10).status_code == 403


def check_blobs(srv, manifest):
    ops = Ops(srv)  # the admin's grants on team/assets came with the directory
    for ns, blobs in manifest["blobs"].items():
        for digest, want in blobs.items():
            r = ops.fetch(ns, digest)
            assert r.status_code == 200, (digest, r.text)
            assert sha(r.content) == want, digest


def check_repository(srv, manifest, ws):
    ep = scribe_ep(srv)
    want = manifest["repos"]["art"]
    repo(ep, "clone", "art", ws)
    assert {p: sha(d) for p, d in tree(ws).items()} == want["files"]
    log = repo(ep, "log", ws).stdout
    assert log.index("change 2") < log.index("change 1") and "first import" in log


def test_old_directory_opens_serves_and_packs(old_dir, tmp_path, servers):
    data, manifest = old_dir
    old_files = len(files_under(os.path.join(data, "blobs")))
    assert not os.path.exists(os.path.join(data, "packs"))  # as that release left it
    srv = Server(data, ALL_FACES)
    servers.append(srv)
    srv.start(wait_for=("jay", "scribe", "http"))
    check_objects(srv, manifest)
    check_blobs(srv, manifest)
    check_repository(srv, manifest, str(tmp_path / "ws"))

    # New small objects go into a pack; the old blobs stay where they were.
    s3 = s3_of(srv)
    fresh = {"new/%02d" % i: os.urandom(1000 + 37 * i) for i in range(20)}
    for key, body in fresh.items():
        s3.put_object(Bucket="photos", Key=key, Body=body)
    assert len(files_under(os.path.join(data, "blobs"))) == old_files
    assert len(files_under(os.path.join(data, "packs"))) >= 1
    # The old repository takes a new change.
    ws = str(tmp_path / "ws")
    write(os.path.join(ws, "README"), b"third\n")
    assert "change 3" in repo(scribe_ep(srv), "submit", ws, "-m", "third").stdout

    # Everything again after a restart, once the old small files have been
    # moved into packs with the server stopped (docs/store.md, "Upgrade").
    srv.stop()
    r = run([binary("cairn"), "admin", "--data", data, "store", "pack"])
    assert r.returncode == 0 and "packed" in r.stdout, r.stdout + r.stderr
    assert len(files_under(os.path.join(data, "blobs"))) < old_files
    srv.start(wait_for=("jay", "scribe", "http"))
    for key, body in fresh.items():
        manifest["s3"]["photos"][key] = {"sha256": sha(body), "size": len(body), "meta": {},
                                         "content_type": "application/octet-stream"}
    check_objects(srv, manifest)
    check_blobs(srv, manifest)
    manifest["repos"]["art"]["files"]["README"] = sha(b"third\n")
    check_repository(srv, manifest, str(tmp_path / "ws2"))
