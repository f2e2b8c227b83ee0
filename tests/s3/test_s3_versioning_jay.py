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
