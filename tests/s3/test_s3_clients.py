"""Real S3 command-line clients against the running cairnd: aws-cli (s3 and
s3api), s3cmd and rclone doing ls / cp / sync / rm round trips, a multipart
upload of a 200 MiB file, and a check of what they wrote through boto3."""
import hashlib
import os
import shutil
import subprocess

import pytest

from conftest import run
from s3fixtures import ADMIN_KEY, ADMIN_SECRET, s3, s3srv, unique  # noqa: F401

MiB = 1 << 20


def need(tool):
    if not shutil.which(tool):
        pytest.fail("%s is not installed (scripts/deps.sh test installs it)" % tool)


def make_tree(root):
    files = {"a.txt": b"alpha\n", "dir/b.bin": os.urandom(300_000), "dir/sub/c d.txt": b"spaced",
             "unicodé.txt": "ü".encode(), "big.bin": os.urandom(9 * MiB)}
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return files


def tree(root):
    out = {}
    for dp, _, fns in os.walk(root):
        for fn in fns:
            p = os.path.join(dp, fn)
            out[os.path.relpath(p, root)] = open(p, "rb").read()
    return out


# ---- aws-cli ---------------------------------------------------------------------------

def aws(srv, tmp_path, *args, check=True):
    env = {"AWS_ACCESS_KEY_ID": ADMIN_KEY, "AWS_SECRET_ACCESS_KEY": ADMIN_SECRET,
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_CONFIG_FILE": str(tmp_path / "aws-config"),
           "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "aws-creds"),
           "AWS_EC2_METADATA_DISABLED": "true", "AWS_PAGER": ""}
    r = run(["aws", "--endpoint-url", srv.endpoint] + list(args), env=env, timeout=300)
    if check:
        assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r


def test_awscli_roundtrip(s3srv, s3, tmp_path):
    need("aws")
    b = unique("awscli")
    src, dst = tmp_path / "src", tmp_path / "dst"
    files = make_tree(src)
    aws(s3srv, tmp_path, "s3", "mb", "s3://%s" % b)
    assert b in aws(s3srv, tmp_path, "s3", "ls").stdout
    aws(s3srv, tmp_path, "s3", "cp", str(src / "a.txt"), "s3://%s/single/a.txt" % b)
    aws(s3srv, tmp_path, "s3", "sync", str(src), "s3://%s/tree" % b)
    ls = aws(s3srv, tmp_path, "s3", "ls", "--recursive", "s3://%s/tree/" % b).stdout
    for rel in files:
        assert "tree/" + rel in ls
    # The 9 MiB file went up in parts (aws-cli's threshold is 8 MiB).
    h = s3.head_object(Bucket=b, Key="tree/big.bin")
    assert h["ETag"].endswith('-2"')
    # A second sync has nothing to do.
    again = aws(s3srv, tmp_path, "s3", "sync", str(src), "s3://%s/tree" % b).stdout
    assert "upload:" not in again
    aws(s3srv, tmp_path, "s3", "sync", "s3://%s/tree" % b, str(dst))
    assert tree(dst) == files
    aws(s3srv, tmp_path, "s3", "cp", "s3://%s/single/a.txt" % b, str(tmp_path / "a-copy.txt"))
    assert (tmp_path / "a-copy.txt").read_bytes() == files["a.txt"]
    out = aws(s3srv, tmp_path, "s3api", "head-object", "--bucket", b, "--key", "tree/a.txt").stdout
    assert hashlib.md5(files["a.txt"]).hexdigest() in out
    aws(s3srv, tmp_path, "s3api", "put-object", "--bucket", b, "--key", "api.txt", "--body",
        str(src / "a.txt"), "--content-type", "text/plain", "--metadata", "k=v")
    out = aws(s3srv, tmp_path, "s3api", "get-object", "--bucket", b, "--key", "api.txt",
              str(tmp_path / "api.out")).stdout
    assert '"k": "v"' in out and (tmp_path / "api.out").read_bytes() == files["a.txt"]
    aws(s3srv, tmp_path, "s3api", "list-objects-v2", "--bucket", b, "--max-items", "2")
    aws(s3srv, tmp_path, "s3", "rm", "--recursive", "s3://%s/" % b)
    aws(s3srv, tmp_path, "s3", "rb", "s3://%s" % b)
    assert b not in aws(s3srv, tmp_path, "s3", "ls").stdout


# ---- s3cmd -------------------------------------------------------------------------------

def s3cmd(srv, tmp_path, *args):
    host = srv.endpoint[len("http://"):]
    cfg = tmp_path / "s3cfg"
    cfg.write_text("[default]\naccess_key = %s\nsecret_key = %s\nhost_base = %s\nhost_bucket = %s\n"
                   "use_https = False\nsignature_v2 = False\nbucket_location = us-east-1\n"
                   "check_ssl_certificate = False\nmultipart_chunk_size_mb = 5\n"
                   % (ADMIN_KEY, ADMIN_SECRET, host, host))
    r = run(["s3cmd", "-c", str(cfg), "--no-progress"] + list(args), timeout=300)
    assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r.stdout


def test_s3cmd_roundtrip(s3srv, s3, tmp_path):
    need("s3cmd")
    b = unique("s3cmd")
    src, dst = tmp_path / "src", tmp_path / "dst"
    files = make_tree(src)
    s3cmd(s3srv, tmp_path, "mb", "s3://%s" % b)
    assert "s3://%s" % b in s3cmd(s3srv, tmp_path, "ls")
    s3cmd(s3srv, tmp_path, "put", str(src / "a.txt"), "s3://%s/a.txt" % b)
    s3cmd(s3srv, tmp_path, "sync", str(src) + "/", "s3://%s/tree/" % b)
    listing = s3cmd(s3srv, tmp_path, "ls", "--recursive", "s3://%s/tree/" % b)
    for rel in files:
        assert "tree/" + rel in listing
    assert s3.head_object(Bucket=b, Key="tree/big.bin")["ETag"].endswith('-2"')
    s3cmd(s3srv, tmp_path, "sync", "s3://%s/tree/" % b, str(dst) + "/")
    assert tree(dst) == files
    s3cmd(s3srv, tmp_path, "get", "s3://%s/a.txt" % b, str(tmp_path / "got.txt"))
    assert (tmp_path / "got.txt").read_bytes() == files["a.txt"]
    s3cmd(s3srv, tmp_path, "info", "s3://%s/a.txt" % b)
    s3cmd(s3srv, tmp_path, "cp", "s3://%s/a.txt" % b, "s3://%s/a2.txt" % b)
    s3cmd(s3srv, tmp_path, "del", "s3://%s/a.txt" % b)
    s3cmd(s3srv, tmp_path, "del", "--recursive", "--force", "s3://%s/" % b)
    s3cmd(s3srv, tmp_path, "rb", "s3://%s" % b)


# ---- rclone --------------------------------------------------------------------------------

def rclone(srv, tmp_path, *args):
    cfg = tmp_path / "rclone.conf"
    cfg.write_text("[cairn]\ntype = s3\nprovider = Other\naccess_key_id = %s\n"
                   "secret_access_key = %s\nendpoint = %s\nforce_path_style = true\n"
                   "region = us-east-1\n" % (ADMIN_KEY, ADMIN_SECRET, srv.endpoint))
    # rclone's AWS SDK refuses a plain-HTTP endpoint when a CA bundle is
    # named in the environment; this endpoint needs none.
    env = {k: v for k, v in os.environ.items() if k != "AWS_CA_BUNDLE"}
    r = subprocess.run(["rclone", "--config", str(cfg), "--retries", "1", "--low-level-retries",
                        "1"] + list(args), capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r.stdout


def test_rclone_copy_sync_check(s3srv, s3, tmp_path):
    need("rclone")
    b = unique("rclone")
    src, dst = tmp_path / "src", tmp_path / "dst"
    files = make_tree(src)
    rclone(s3srv, tmp_path, "mkdir", "cairn:%s" % b)
    rclone(s3srv, tmp_path, "copy", str(src), "cairn:%s/tree" % b)
    rclone(s3srv, tmp_path, "check", str(src), "cairn:%s/tree" % b)
    (src / "a.txt").write_bytes(b"changed\n")
    (src / "dir" / "b.bin").unlink()
    files["a.txt"] = b"changed\n"
    del files["dir/b.bin"]
    rclone(s3srv, tmp_path, "sync", str(src), "cairn:%s/tree" % b)
    rclone(s3srv, tmp_path, "check", str(src), "cairn:%s/tree" % b)
    listed = rclone(s3srv, tmp_path, "lsf", "-R", "cairn:%s/tree" % b)
    assert "dir/b.bin" not in listed and "a.txt" in listed
    rclone(s3srv, tmp_path, "copy", "cairn:%s/tree" % b, str(dst))
    assert tree(dst) == files
    rclone(s3srv, tmp_path, "purge", "cairn:%s" % b)


def test_rclone_multipart_200mib(s3srv, s3, tmp_path):
    need("rclone")
    b = unique("rcbig")
    big = tmp_path / "big"
    big.mkdir()
    h = hashlib.md5()
    with open(big / "200m.bin", "wb") as f:
        block = os.urandom(MiB)
        for i in range(200):
            chunk = block[i:] + block[:i]
            h.update(chunk)
            f.write(chunk)
    rclone(s3srv, tmp_path, "mkdir", "cairn:%s" % b)
    rclone(s3srv, tmp_path, "copy", "--s3-upload-cutoff", "16M", "--s3-chunk-size", "16M",
           "--s3-upload-concurrency", "4", str(big), "cairn:%s" % b)
    head = s3.head_object(Bucket=b, Key="200m.bin")
    assert head["ContentLength"] == 200 * MiB and head["ETag"].endswith('-13"')
    rclone(s3srv, tmp_path, "check", "--download", str(big), "cairn:%s" % b)
    rclone(s3srv, tmp_path, "purge", "cairn:%s" % b)
