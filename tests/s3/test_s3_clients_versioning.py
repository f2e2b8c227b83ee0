"""Versioning, tagging, object lock and lifecycle configuration (issue 25)
driven by real outside clients against the running cairnd: aws-cli's
`s3api` (Debian's awscli) and `rclone --s3-versions`.  What a client wrote
is read back through the same client, and the configurations come back
identical to what was put (Terraform and backup tools wait for equality)."""
import json
import os
import re
import shutil
import subprocess

import pytest

from conftest import run
from s3fixtures import ADMIN_KEY, ADMIN_SECRET, s3, s3srv, unique  # noqa: F401


def aws_binary():
    # Debian's awscli (scripts/deps.sh test) before whatever else is on PATH.
    return "/usr/bin/aws" if os.access("/usr/bin/aws", os.X_OK) else shutil.which("aws")


def need(path, tool):
    if not path:
        pytest.fail("%s is not installed (scripts/deps.sh test installs it)" % tool)


def api(srv, tmp_path, *args, check=True):
    """aws s3api ARGS with JSON output; the parsed answer (None when empty)."""
    exe = aws_binary()
    need(exe, "aws-cli")
    env = {"AWS_ACCESS_KEY_ID": ADMIN_KEY, "AWS_SECRET_ACCESS_KEY": ADMIN_SECRET,
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_CONFIG_FILE": str(tmp_path / "aws-config"),
           "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "aws-creds"),
           "AWS_EC2_METADATA_DISABLED": "true", "AWS_PAGER": "", "HOME": str(tmp_path)}
    r = run([exe, "--endpoint-url", srv.endpoint, "--output", "json", "s3api"] + list(args),
            env=env, timeout=120)
    if not check:
        return r
    assert r.returncode == 0, (args, r.stdout, r.stderr)
    return json.loads(r.stdout) if r.stdout.strip() else None


def test_awscli_versioning(s3srv, tmp_path):
    b = unique("awsver")
    api(s3srv, tmp_path, "create-bucket", "--bucket", b)
    assert api(s3srv, tmp_path, "get-bucket-versioning", "--bucket", b) in (None, {})
    api(s3srv, tmp_path, "put-bucket-versioning", "--bucket", b,
        "--versioning-configuration", "Status=Enabled")
    assert api(s3srv, tmp_path, "get-bucket-versioning", "--bucket", b)["Status"] == "Enabled"
    bodies = {}
    for n in range(3):
        p = tmp_path / ("v%d" % n)
        p.write_bytes(b"version %d" % n)
        vid = api(s3srv, tmp_path, "put-object", "--bucket", b, "--key", "k", "--body",
                  str(p))["VersionId"]
        bodies[vid] = p.read_bytes()
    listed = api(s3srv, tmp_path, "list-object-versions", "--bucket", b)
    vids = [v["VersionId"] for v in listed["Versions"]]
    assert sorted(vids) == sorted(bodies) and len(set(vids)) == 3
    assert [v["IsLatest"] for v in listed["Versions"]] == [True, False, False]
    oldest = vids[-1]
    out = tmp_path / "got"
    got = api(s3srv, tmp_path, "get-object", "--bucket", b, "--key", "k", "--version-id", oldest,
              str(out))
    assert got["VersionId"] == oldest and out.read_bytes() == b"version 0"
    # A plain delete writes a marker; deleting the marker's id undeletes.
    d = api(s3srv, tmp_path, "delete-object", "--bucket", b, "--key", "k")
    assert d["DeleteMarker"] is True
    marker = d["VersionId"]
    listed = api(s3srv, tmp_path, "list-object-versions", "--bucket", b)
    assert [m["VersionId"] for m in listed["DeleteMarkers"]] == [marker]
    r = api(s3srv, tmp_path, "head-object", "--bucket", b, "--key", "k", check=False)
    assert r.returncode != 0 and "404" in r.stderr
    api(s3srv, tmp_path, "delete-object", "--bucket", b, "--key", "k", "--version-id", marker)
    api(s3srv, tmp_path, "get-object", "--bucket", b, "--key", "k", str(out))
    assert out.read_bytes() == b"version 2"
    # delete-object --version-id removes that version for good.
    d = api(s3srv, tmp_path, "delete-object", "--bucket", b, "--key", "k", "--version-id", oldest)
    assert d["VersionId"] == oldest
    listed = api(s3srv, tmp_path, "list-object-versions", "--bucket", b)
    assert oldest not in [v["VersionId"] for v in listed["Versions"]]
    assert len(listed["Versions"]) == 2
    r = api(s3srv, tmp_path, "get-object", "--bucket", b, "--key", "k", "--version-id", oldest,
            str(out), check=False)
    assert r.returncode != 0 and "NoSuchVersion" in r.stderr


def test_awscli_object_tagging(s3srv, tmp_path):
    b = unique("awstag")
    api(s3srv, tmp_path, "create-bucket", "--bucket", b)
    api(s3srv, tmp_path, "put-bucket-versioning", "--bucket", b,
        "--versioning-configuration", "Status=Enabled")
    (tmp_path / "f").write_bytes(b"x")
    v1 = api(s3srv, tmp_path, "put-object", "--bucket", b, "--key", "k", "--body",
             str(tmp_path / "f"), "--tagging", "a=1&b=two")["VersionId"]
    api(s3srv, tmp_path, "put-object", "--bucket", b, "--key", "k", "--body", str(tmp_path / "f"))
    tagset = {"TagSet": [{"Key": "env", "Value": "prod"}, {"Key": "team", "Value": "storage"}]}
    api(s3srv, tmp_path, "put-object-tagging", "--bucket", b, "--key", "k", "--tagging",
        json.dumps(tagset))
    assert api(s3srv, tmp_path, "get-object-tagging", "--bucket", b, "--key",
               "k")["TagSet"] == tagset["TagSet"]
    old = api(s3srv, tmp_path, "get-object-tagging", "--bucket", b, "--key", "k", "--version-id",
              v1)
    assert old["VersionId"] == v1
    assert old["TagSet"] == [{"Key": "a", "Value": "1"}, {"Key": "b", "Value": "two"}]
    api(s3srv, tmp_path, "delete-object-tagging", "--bucket", b, "--key", "k")
    assert api(s3srv, tmp_path, "get-object-tagging", "--bucket", b, "--key",
               "k")["TagSet"] == []


def test_awscli_object_lock(s3srv, tmp_path):
    b = unique("awslock")
    api(s3srv, tmp_path, "create-bucket", "--bucket", b, "--object-lock-enabled-for-bucket")
    cfg = {"ObjectLockEnabled": "Enabled",
           "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 2}}}
    api(s3srv, tmp_path, "put-object-lock-configuration", "--bucket", b,
        "--object-lock-configuration", json.dumps(cfg))
    got = api(s3srv, tmp_path, "get-object-lock-configuration", "--bucket", b)
    assert got["ObjectLockConfiguration"] == cfg
    (tmp_path / "f").write_bytes(b"locked")
    vid = api(s3srv, tmp_path, "put-object", "--bucket", b, "--key", "k", "--body",
              str(tmp_path / "f"))["VersionId"]
    ret = api(s3srv, tmp_path, "get-object-retention", "--bucket", b, "--key", "k",
              "--version-id", vid)["Retention"]
    assert ret["Mode"] == "GOVERNANCE"
    api(s3srv, tmp_path, "put-object-legal-hold", "--bucket", b, "--key", "k", "--version-id",
        vid, "--legal-hold", "Status=ON")
    assert api(s3srv, tmp_path, "get-object-legal-hold", "--bucket", b, "--key", "k",
               "--version-id", vid)["LegalHold"] == {"Status": "ON"}
    r = api(s3srv, tmp_path, "delete-object", "--bucket", b, "--key", "k", "--version-id", vid,
            "--bypass-governance-retention", check=False)
    assert r.returncode != 0 and "AccessDenied" in r.stderr
    api(s3srv, tmp_path, "put-object-legal-hold", "--bucket", b, "--key", "k", "--version-id",
        vid, "--legal-hold", "Status=OFF")
    api(s3srv, tmp_path, "delete-object", "--bucket", b, "--key", "k", "--version-id", vid,
        "--bypass-governance-retention")
    left = api(s3srv, tmp_path, "list-object-versions", "--bucket", b) or {}
    assert not left.get("Versions")


def test_awscli_lifecycle_reads_back_identical(s3srv, tmp_path):
    b = unique("awslc")
    api(s3srv, tmp_path, "create-bucket", "--bucket", b)
    cfg = {"Rules": [
        {"ID": "logs", "Filter": {"Prefix": "logs/"}, "Status": "Enabled",
         "Expiration": {"Days": 30}},
        {"ID": "tmp", "Filter": {"And": {"Prefix": "tmp/", "Tags": [
            {"Key": "kind", "Value": "scratch"}]}}, "Status": "Disabled",
         "NoncurrentVersionExpiration": {"NoncurrentDays": 7, "NewerNoncurrentVersions": 2}},
        {"ID": "mpu", "Filter": {}, "Status": "Enabled",
         "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}},
    ]}
    api(s3srv, tmp_path, "put-bucket-lifecycle-configuration", "--bucket", b,
        "--lifecycle-configuration", json.dumps(cfg))
    got = api(s3srv, tmp_path, "get-bucket-lifecycle-configuration", "--bucket", b)
    assert got["Rules"] == cfg["Rules"]
    api(s3srv, tmp_path, "delete-bucket-lifecycle", "--bucket", b)
    r = api(s3srv, tmp_path, "get-bucket-lifecycle-configuration", "--bucket", b, check=False)
    assert r.returncode != 0 and "NoSuchLifecycleConfiguration" in r.stderr


# ---- rclone ----------------------------------------------------------------------------------

def rclone(srv, tmp_path, *args):
    exe = shutil.which("rclone")
    need(exe, "rclone")
    cfg = tmp_path / "rclone.conf"
    cfg.write_text("[cairn]\ntype = s3\nprovider = Other\naccess_key_id = %s\n"
                   "secret_access_key = %s\nendpoint = %s\nforce_path_style = true\n"
                   "region = us-east-1\n" % (ADMIN_KEY, ADMIN_SECRET, srv.endpoint))
    # rclone's AWS SDK refuses a plain-HTTP endpoint when a CA bundle is named.
    env = {k: v for k, v in os.environ.items() if k != "AWS_CA_BUNDLE"}
    r = subprocess.run([exe, "--config", str(cfg), "--retries", "1", "--low-level-retries", "1"]
                       + list(args), capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r.stdout


def test_rclone_lists_versions(s3srv, s3, tmp_path):
    """rclone --s3-versions shows each noncurrent version as name-vTIMESTAMP.ext
    beside the current one, and reads an old version's bytes by that name."""
    b = unique("rclver")
    s3.create_bucket(Bucket=b)
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    for body in (b"first", b"second!", b"third!!!"):
        s3.put_object(Bucket=b, Key="dir/file.txt", Body=body)
    s3.put_object(Bucket=b, Key="other.txt", Body=b"o")
    plain = rclone(s3srv, tmp_path, "lsf", "-R", "--files-only", "cairn:%s" % b).split()
    assert sorted(plain) == ["dir/file.txt", "other.txt"]
    listed = rclone(s3srv, tmp_path, "lsf", "-R", "--files-only", "--format", "ps",
                    "--s3-versions", "cairn:%s" % b).splitlines()
    rows = dict(line.rsplit(";", 1) for line in listed)
    old = sorted(p for p in rows if re.fullmatch(r"dir/file-v\d{4}-\d\d-\d\d-\d{6}-\d{3}\.txt", p))
    assert len(old) == 2, listed
    assert rows["dir/file.txt"] == "8" and rows["other.txt"] == "1"
    assert sorted(rows[p] for p in old) == ["5", "7"]
    assert len(rows) == 4
    # The old versions' bytes, fetched by rclone under the names it gave them.
    rclone(s3srv, tmp_path, "copy", "--s3-versions", "cairn:%s/dir" % b, str(tmp_path / "got"))
    got = {p.name: p.read_bytes() for p in (tmp_path / "got").iterdir()}
    assert got.pop("file.txt") == b"third!!!"
    assert sorted(got.values()) == [b"first", b"second!"]
    assert sorted(got) == sorted(os.path.basename(p) for p in old)
    # A deleted key disappears from the plain listing; its versions stay listed.
    s3.delete_object(Bucket=b, Key="other.txt")
    plain = rclone(s3srv, tmp_path, "lsf", "-R", "--files-only", "cairn:%s" % b).split()
    assert plain == ["dir/file.txt"]
    listed = rclone(s3srv, tmp_path, "lsf", "-R", "--files-only", "--s3-versions",
                    "cairn:%s" % b).split()
    assert any(p.startswith("other-v") for p in listed), listed
