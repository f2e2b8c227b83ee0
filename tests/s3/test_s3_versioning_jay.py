"""The native Jay face on a versioned bucket (nothing changes on its wire):
reads, copies and listings see the current version; a delete marker makes
the key NoSuchKey; a native put is a new version; a native delete writes a
marker; DeleteBucket is refused while versions remain.  The Jay golden
fixtures are checked byte for byte by tests/jay (test_jay_golden)."""
import pytest
from botocore.exceptions import ClientError

from s3fixtures import s3, s3srv, unique  # noqa: F401

import jayclient


@pytest.fixture
def vbucket(s3):
    b = unique("verj")
    s3.create_bucket(Bucket=b)
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    return b


def versions(s3, b):
    r = s3.list_object_versions(Bucket=b)
    return ([(v["Key"], v["IsLatest"]) for v in r.get("Versions", [])],
            [(m["Key"], m["IsLatest"]) for m in r.get("DeleteMarkers", [])])


def test_native_put_is_a_new_version(s3srv, s3, vbucket):
    v1 = s3.put_object(Bucket=vbucket, Key="k", Body=b"from s3")["VersionId"]
    with s3srv.jay() as j:
        j.put_object(vbucket, "k", b"from jay")
    vs, _ = versions(s3, vbucket)
    assert vs == [("k", True), ("k", False)]
    assert s3.get_object(Bucket=vbucket, Key="k", VersionId=v1)["Body"].read() == b"from s3"
    assert s3.get_object(Bucket=vbucket, Key="k")["Body"].read() == b"from jay"


def test_native_reads_copies_lists_see_current(s3srv, s3, vbucket):
    s3.put_object(Bucket=vbucket, Key="k", Body=b"old")
    s3.put_object(Bucket=vbucket, Key="k", Body=b"new!")
    with s3srv.jay() as j:
        info, data = j.get_object(vbucket, "k")
        assert data == b"new!" and info["size"] == 4
        assert j.head_object(vbucket, "k")["size"] == 4
        listed = j.list_objects(vbucket)["contents"]
        assert [(e["key"], e["size"]) for e in listed] == [("k", 4)]
        j.copy_object(vbucket, "k", vbucket, "copy")
        assert j.get_object(vbucket, "copy")[1] == b"new!"


def test_native_delete_writes_a_marker(s3srv, s3, vbucket):
    s3.put_object(Bucket=vbucket, Key="k", Body=b"x")
    with s3srv.jay() as j:
        j.delete_object(vbucket, "k")
        # The marker makes the key NoSuchKey to every native call.
        for call in (lambda: j.get_object(vbucket, "k"), lambda: j.head_object(vbucket, "k"),
                     lambda: j.copy_object(vbucket, "k", vbucket, "c"),
                     lambda: j.delete_object(vbucket, "k")):
            with pytest.raises(jayclient.JayError) as e:
                call()
            assert e.value.status == jayclient.ST_NOT_FOUND
        assert j.list_objects(vbucket)["contents"] == []
    vs, ms = versions(s3, vbucket)
    assert vs == [("k", False)] and ms == [("k", True)]
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=vbucket, Key="k")
    assert e.value.response["ResponseMetadata"]["HTTPHeaders"]["x-amz-delete-marker"] == "true"


def test_native_delete_bucket_while_versions_remain(s3srv, s3, vbucket):
    s3.put_object(Bucket=vbucket, Key="k", Body=b"x")
    with s3srv.jay() as j:
        j.delete_object(vbucket, "k")
        with pytest.raises(jayclient.JayError) as e:
            j.delete_bucket(vbucket)
        assert e.value.status == jayclient.ST_CONFLICT
    for v in s3.list_object_versions(Bucket=vbucket).get("Versions", []):
        s3.delete_object(Bucket=vbucket, Key=v["Key"], VersionId=v["VersionId"])
    for m in s3.list_object_versions(Bucket=vbucket).get("DeleteMarkers", []):
        s3.delete_object(Bucket=vbucket, Key=m["Key"], VersionId=m["VersionId"])
    with s3srv.jay() as j:
        j.delete_bucket(vbucket)


# ---- object lock on the native face (issue 25: nothing native bypasses a lock) ----------

GOV_1D = {"ObjectLockEnabled": "Enabled",
          "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}}}


@pytest.fixture
def lbucket(s3):
    b = unique("lockj")
    s3.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
    s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=GOV_1D)
    return b


def test_native_put_in_lock_bucket_gets_default_retention(s3srv, s3, lbucket):
    import datetime
    before = datetime.datetime.now(datetime.timezone.utc)
    with s3srv.jay() as j:
        j.put_object(lbucket, "k", b"native")
    (v,) = s3.list_object_versions(Bucket=lbucket)["Versions"]
    r = s3.get_object_retention(Bucket=lbucket, Key="k", VersionId=v["VersionId"])["Retention"]
    assert r["Mode"] == "GOVERNANCE"
    left = r["RetainUntilDate"] - before
    assert datetime.timedelta(hours=23) < left <= datetime.timedelta(days=1, minutes=5)
    # The same default an S3 write gets, and no legal hold.
    h = s3.head_object(Bucket=lbucket, Key="k")
    assert h["ObjectLockMode"] == "GOVERNANCE"
    assert h.get("ObjectLockLegalHoldStatus", "OFF") == "OFF"


def test_native_delete_in_lock_bucket_writes_a_marker(s3srv, s3, lbucket):
    v = s3.put_object(Bucket=lbucket, Key="k", Body=b"kept")["VersionId"]
    s3.put_object_legal_hold(Bucket=lbucket, Key="k", VersionId=v, LegalHold={"Status": "ON"})
    with s3srv.jay() as j:
        j.delete_object(lbucket, "k")
        with pytest.raises(jayclient.JayError) as e:
            j.get_object(lbucket, "k")
        assert e.value.status == jayclient.ST_NOT_FOUND
    r = s3.list_object_versions(Bucket=lbucket)
    assert [(x["VersionId"], x["IsLatest"]) for x in r["Versions"]] == [(v, False)]
    assert [m["IsLatest"] for m in r["DeleteMarkers"]] == [True]
    assert s3.get_object(Bucket=lbucket, Key="k", VersionId=v)["Body"].read() == b"kept"


def test_nothing_native_removes_a_locked_version(s3srv, s3, lbucket):
    """Every native call that could drop data leaves a locked version: deletes
    only stack markers, a put only adds a version, DeleteBucket is refused."""
    v = s3.put_object(Bucket=lbucket, Key="k", Body=b"locked")["VersionId"]
    with s3srv.jay() as j:
        j.delete_object(lbucket, "k")
        with pytest.raises(jayclient.JayError):
            j.delete_object(lbucket, "k")  # the key is NoSuchKey now: nothing more to remove
        j.put_object(lbucket, "k", b"again")
        j.delete_object(lbucket, "k")
        with pytest.raises(jayclient.JayError) as e:
            j.delete_bucket(lbucket)
        assert e.value.status == jayclient.ST_CONFLICT
    vs = s3.list_object_versions(Bucket=lbucket)["Versions"]
    assert v in [x["VersionId"] for x in vs] and len(vs) == 2
    assert s3.get_object(Bucket=lbucket, Key="k", VersionId=v)["Body"].read() == b"locked"
    # S3 cannot remove it for good either (GOVERNANCE default, no bypass).
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket=lbucket, Key="k", VersionId=v)
    assert e.value.response["Error"]["Code"] == "AccessDenied"


# ---- the write's lock check is the service's, after authorization -------------------------

def test_lock_headers_checked_after_authorization(s3srv, s3):
    """A caller without s3:PutObject learns nothing of the bucket's settings
    (AccessDenied, not InvalidRequest); one with s3:PutObject but without
    object:lock is refused; a bucket without object lock answers
    InvalidRequest to PutObject, CopyObject and CreateMultipartUpload alike."""
    import datetime
    until = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)
    lock = {"ObjectLockMode": "GOVERNANCE", "ObjectLockRetainUntilDate": until}
    plain = unique("plainj")
    s3.create_bucket(Bucket=plain)
    s3.put_object(Bucket=plain, Key="src", Body=b"s")
    for call in (lambda: s3.put_object(Bucket=plain, Key="k", Body=b"x", **lock),
                 lambda: s3.put_object(Bucket=plain, Key="k", Body=b"x",
                                       ObjectLockLegalHoldStatus="ON"),
                 lambda: s3.copy_object(Bucket=plain, Key="c", CopySource={
                     "Bucket": plain, "Key": "src"}, **lock),
                 lambda: s3.create_multipart_upload(Bucket=plain, Key="m", **lock)):
        with pytest.raises(ClientError) as e:
            call()
        assert e.value.response["Error"]["Code"] == "InvalidRequest"
    # Even with object:lock on its token, a stranger to the bucket is refused
    # the write before anything of the bucket's settings is looked at.
    key, secret = s3srv.new_account("lockhdr", perms=["object:get", "object:put", "object:lock"])
    stranger = s3srv.client(key=key, secret=secret)
    with pytest.raises(ClientError) as e:
        stranger.put_object(Bucket=plain, Key="k", Body=b"x", **lock)
    assert e.value.response["Error"]["Code"] == "AccessDenied"
    # The bucket's owner writes, but through a token without object:lock.
    lb = unique("lockhdr")
    s3.create_bucket(Bucket=lb, ObjectLockEnabledForBucket=True)
    cred = s3srv.admin("token", "create", "--account", "admin", "--perm", "object:put",
                       "--perm", "object:get").splitlines()[-1].strip()
    k2, s2 = cred.split(":", 1)
    writer = s3srv.client(key=k2, secret=s2)
    writer.put_object(Bucket=lb, Key="k", Body=b"plain write")
    for kw in (lock, {"ObjectLockLegalHoldStatus": "ON"}):
        with pytest.raises(ClientError) as e:
            writer.put_object(Bucket=lb, Key="k", Body=b"x", **kw)
        assert e.value.response["Error"]["Code"] == "AccessDenied"
        with pytest.raises(ClientError) as e:
            writer.create_multipart_upload(Bucket=lb, Key="m", **kw)
        assert e.value.response["Error"]["Code"] == "AccessDenied"
