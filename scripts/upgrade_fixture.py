#!/usr/bin/python3
"""Writes the data directory of an earlier cairn release as a test fixture
(tests/store/fixtures/, read by tests/store/test_upgrade_release.py).

usage: scripts/upgrade_fixture.py OLD_BUILD NAME

OLD_BUILD is the build directory of an earlier commit (its cairnd and cairn),
e.g. a worktree of f7c3280, the last commit before pack files:

    git worktree add /tmp/rel f7c3280
    (cd /tmp/rel && meson setup build -Dbuildtype=debugoptimized && ninja -C build)
    scripts/upgrade_fixture.py /tmp/rel/build pre-pack-f7c3280

It starts that cairnd on a new directory, writes through every face that
keeps data (S3 objects of each layout, a public bucket, blobs in a
namespace, a Scribe repository with two changes), stops it cleanly and
packs the directory as NAME.tar.gz beside NAME.json, which lists what was
written and its SHA-256 so that the test can check every byte.  The
content comes from a fixed seed, but a new run's files differ (identity
keys, ids, times): regenerate only to add an older release."""
import hashlib
import json
import os
import random
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "store", "fixtures")


def sha(data):
    return hashlib.sha256(data).hexdigest()


def pattern(rng, n):
    """n bytes that compress well: a random 4 KiB block repeated."""
    block = rng.randbytes(4096)
    return (block * (n // 4096 + 1))[:n]


def s3_objects(srv, rng):
    import boto3
    import requests
    from botocore.config import Config
    from conftest import ADMIN_TOKEN
    key, secret = ADMIN_TOKEN.split(":", 1)
    host, port = srv.addrs["http"]
    s3 = boto3.client("s3", endpoint_url="http://%s:%d" % (host, port), region_name="us-east-1",
                      aws_access_key_id=key, aws_secret_access_key=secret,
                      config=Config(s3={"addressing_style": "path"}, signature_version="s3v4"))
    out = {"photos": {}, "pub": {}}
    s3.create_bucket(Bucket="photos")
    s3.create_bucket(Bucket="pub", ACL="public-read")

    def put(bucket, k, body, ctype="application/octet-stream", meta=None, acl="private"):
        s3.put_object(Bucket=bucket, Key=k, Body=body, ContentType=ctype, Metadata=meta or {},
                      ACL=acl)
        out[bucket][k] = {"sha256": sha(body), "size": len(body), "content_type": ctype,
                          "meta": meta or {}}

    for i in range(24):
        put("photos", "small/%03d.bin" % i, rng.randbytes(rng.randrange(100, 4000)))
    put("photos", "unicode/é 😀.txt", "déjà vu\n".encode(), "text/plain; charset=utf-8",
        {"owner": "studio"})
    put("photos", "empty", b"")
    put("photos", "large/random.bin", rng.randbytes(100 * 1024))
    put("photos", "large/pattern.bin", pattern(rng, 3 << 20))
    put("pub", "index.html", b"<p>public</p>\n", "text/html", acl="public-read")
    parts = [pattern(rng, 5 << 20), rng.randbytes(10 * 1024)]
    up = s3.create_multipart_upload(Bucket="photos", Key="mp/object.bin")["UploadId"]
    done = []
    for n, body in enumerate(parts, 1):
        e = s3.upload_part(Bucket="photos", Key="mp/object.bin", UploadId=up, PartNumber=n,
                           Body=body)["ETag"]
        done.append({"PartNumber": n, "ETag": e})
    s3.complete_multipart_upload(Bucket="photos", Key="mp/object.bin", UploadId=up,
                                 MultipartUpload={"Parts": done})
    whole = b"".join(parts)
    out["photos"]["mp/object.bin"] = {"sha256": sha(whole), "size": len(whole), "meta": {}}
    # What this release serves is what the next must serve: the content type
    # as it answers it (its default where none was given), the bytes checked.
    for bucket, objects in out.items():
        for k, o in objects.items():
            got = s3.get_object(Bucket=bucket, Key=k)
            assert sha(got["Body"].read()) == o["sha256"], (bucket, k)
            assert got["Metadata"] == o["meta"], (bucket, k)
            o["content_type"] = got["ContentType"]
    # The public object reads anonymously (the test checks the ACLs held).
    r = requests.get("http://%s:%d/pub/index.html" % (host, port), timeout=10)
    assert r.status_code == 200 and sha(r.content) == out["pub"]["index.html"]["sha256"]
    return out


def blobs(srv, rng):
    sys.path.insert(0, os.path.join(HERE, "..", "tests", "blobops"))
    from blobsclient import Ops, admin
    for action in ("read", "write"):
        admin(srv.data_dir, "grant", "--namespace", "team/assets", "--account", "admin",
              "--action", action)
    ops, out = Ops(srv), {}
    for _ in range(6):
        data = rng.randbytes(rng.randrange(1000, 20000))
        status, body = ops.put("team/assets", data)
        assert status == 200, body
        out[body["digest"]] = sha(data)
    return {"team/assets": out}


def repository(srv, rng, work):
    from cairnutil import repo, scribe_ep, write
    ep = scribe_ep(srv)
    ws = os.path.join(work, "ws")
    repo(ep, "create", "art")
    repo(ep, "clone", "art", ws)
    files = {"README": b"art assets\n", "tex/a.bin": rng.randbytes(96 * 1024),
             "tex/b.bin": pattern(rng, 2 << 20)}
    for p, data in files.items():
        write(os.path.join(ws, p), data)
    repo(ep, "submit", ws, "-m", "first import")
    files["README"] = b"art assets, second change\n"
    write(os.path.join(ws, "README"), files["README"])
    repo(ep, "submit", ws, "-m", "second")
    return {"art": {"head": 2, "files": {p: sha(d) for p, d in files.items()}}}


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    old, name = os.path.abspath(sys.argv[1]), sys.argv[2]
    os.environ["CAIRN_BUILD"] = old
    sys.path.insert(0, os.path.join(HERE, "..", "tests"))
    from conftest import Server
    rng = random.Random(20261207)
    with tempfile.TemporaryDirectory() as work:
        data = os.path.join(work, "data")
        srv = Server(data, ["--jay", "127.0.0.1:0", "--scribe", "127.0.0.1:0",
                            "--http", "127.0.0.1:0"]).start(wait_for=("jay", "scribe", "http"))
        try:
            manifest = {"s3": s3_objects(srv, rng), "blobs": blobs(srv, rng),
                        "repos": repository(srv, rng, work)}
        finally:
            srv.stop()
        rev = subprocess.run(["git", "-C", old, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip()
        manifest["written_by"] = rev or "unknown"
        os.makedirs(OUT, exist_ok=True)
        with tarfile.open(os.path.join(OUT, name + ".tar.gz"), "w:gz") as t:
            t.add(data, arcname="data", filter=lambda i: None if i.name.endswith(".log") else i)
        with open(os.path.join(OUT, name + ".json"), "w") as f:
            json.dump(manifest, f, indent=1, sort_keys=True, ensure_ascii=False)
            f.write("\n")


if __name__ == "__main__":
    main()
