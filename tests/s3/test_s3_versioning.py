"""S3 versioning through the real server (boto3): Get/PutBucketVersioning,
versioned writes and deletes, delete markers, reads and copies of a named
version, null versions across enable/suspend, and DeleteBucket while
versions remain.  Listings are in test_s3_versioning_list.py."""
import pytest
from botocore.exceptions import ClientError

from s3fixtures import bucket, s3, s3srv, unique  # noqa: F401


def code(exc):
    return exc.value.response["Error"]["Code"]


def status(exc):
    return exc.value.response["ResponseMetadata"]["HTTPStatusCode"]


def headers(exc):
    return exc.value.response["ResponseMetadata"]["HTTPHeaders"]


@pytest.fixture
def vbucket(s3):
    b = unique("ver")
    s3.create_bucket(Bucket=b)
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    return b


def versions_of(s3, b, key=None):
    r = s3.list_object_versions(Bucket=b, **({"Prefix": key} if key else {}))
    vs = [("v", v["Key"], v["VersionId"], v["IsLatest"]) for v in r.get("Versions", [])]
    ms = [("m", m["Key"], m["VersionId"], m["IsLatest"]) for m in r.get("DeleteMarkers", [])]
    return vs, ms


# ---- the setting ------------------------------------------------------------------

def test_versioning_status_roundtrip(s3, bucket):
    r = s3.get_bucket_versioning(Bucket=bucket)
    assert "Status" not in r
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    assert s3.get_bucket_versioning(Bucket=bucket)["Status"] == "Enabled"
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Suspended"})
    assert s3.get_bucket_versioning(Bucket=bucket)["Status"] == "Suspended"


def test_versioning_errors(s3srv, s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={
            "Status": "Enabled", "MFADelete": "Enabled"}, MFA="123456 654321")
    assert code(e) == "NotImplemented"
    # No way back to unversioned: a status other than the two is malformed.
    body = (b'<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
            b"<Status>Disabled</Status></VersioningConfiguration>")
    import base64
    import hashlib
    md5 = base64.b64encode(hashlib.md5(body).digest()).decode()
    r = s3srv.signed("PUT", "/%s?versioning" % bucket, body, {"Content-MD5": md5})
    assert r.status_code == 400 and b"MalformedXML" in r.content
    assert "Status" not in s3.get_bucket_versioning(Bucket=bucket)
    with pytest.raises(ClientError) as e:
        s3.get_bucket_versioning(Bucket=unique("missing"))
    assert code(e) == "NoSuchBucket"


# ---- writes and reads -----------------------------------------------------------------

def test_each_put_is_a_version(s3, vbucket):
    ids = [s3.put_object(Bucket=vbucket, Key="k", Body=b"v%d" % i)["VersionId"] for i in range(3)]
    assert len(set(ids)) == 3 and "null" not in ids
    assert ids == sorted(ids)  # string order is sequence order
    assert s3.get_object(Bucket=vbucket, Key="k")["Body"].read() == b"v2"
    for i, v in enumerate(ids):
        r = s3.get_object(Bucket=vbucket, Key="k", VersionId=v)
        assert r["Body"].read() == b"v%d" % i and r["VersionId"] == v
        assert s3.head_object(Bucket=vbucket, Key="k", VersionId=v)["ContentLength"] == 2
    assert s3.head_object(Bucket=vbucket, Key="k")["VersionId"] == ids[2]
    vs, ms = versions_of(s3, vbucket)
    assert [v[2] for v in vs] == ids[::-1] and [v[3] for v in vs] == [True, False, False]
    assert ms == []


def test_unversioned_bucket_names_no_version(s3, bucket):
    r = s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    assert "VersionId" not in r
    assert "VersionId" not in s3.get_object(Bucket=bucket, Key="k")
    # The one version an unversioned key has is "null".
    assert s3.get_object(Bucket=bucket, Key="k", VersionId="null")["Body"].read() == b"x"


def test_version_read_errors(s3, vbucket):
    s3.put_object(Bucket=vbucket, Key="k", Body=b"x")
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=vbucket, Key="k", VersionId="not-a-version")
    assert code(e) == "InvalidArgument" and status(e) == 400
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=vbucket, Key="k", VersionId="0000000000zzz"[:10] + "001")
    assert code(e) == "NoSuchVersion" and status(e) == 404
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=vbucket, Key="k", VersionId="null")
    assert code(e) == "NoSuchVersion"


def test_delete_writes_marker(s3, vbucket):
    v1 = s3.put_object(Bucket=vbucket, Key="k", Body=b"one")["VersionId"]
    d = s3.delete_object(Bucket=vbucket, Key="k")
    assert d["DeleteMarker"] is True and d["VersionId"] not in ("null", v1)
    marker = d["VersionId"]
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=vbucket, Key="k")
    assert code(e) == "NoSuchKey"
    assert headers(e).get("x-amz-delete-marker") == "true"
    assert headers(e).get("x-amz-version-id") == marker
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=vbucket, Key="k")
    assert status(e) == 404 and headers(e).get("x-amz-delete-marker") == "true"
    # A marker's own id: 405 MethodNotAllowed.
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=vbucket, Key="k", VersionId=marker)
    assert status(e) == 405 and code(e) == "MethodNotAllowed"
    assert headers(e).get("x-amz-delete-marker") == "true"
    # The old version is still readable by id; the key is not listed.
    assert s3.get_object(Bucket=vbucket, Key="k", VersionId=v1)["Body"].read() == b"one"
    assert s3.list_objects_v2(Bucket=vbucket).get("KeyCount") == 0
    vs, ms = versions_of(s3, vbucket)
    assert vs == [("v", "k", v1, False)] and ms == [("m", "k", marker, True)]


def test_delete_marker_removal_undeletes(s3, vbucket):
    v1 = s3.put_object(Bucket=vbucket, Key="k", Body=b"one")["VersionId"]
    marker = s3.delete_object(Bucket=vbucket, Key="k")["VersionId"]
    d = s3.delete_object(Bucket=vbucket, Key="k", VersionId=marker)
    assert d["VersionId"] == marker and d.get("DeleteMarker") is True
    r = s3.get_object(Bucket=vbucket, Key="k")
    assert r["Body"].read() == b"one" and r["VersionId"] == v1
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=vbucket)["Contents"]] == ["k"]


def test_delete_version_for_good(s3, vbucket):
    v1 = s3.put_object(Bucket=vbucket, Key="k", Body=b"one")["VersionId"]
    v2 = s3.put_object(Bucket=vbucket, Key="k", Body=b"two")["VersionId"]
    # Removing the current version makes the previous one current again.
    d = s3.delete_object(Bucket=vbucket, Key="k", VersionId=v2)
    assert d["VersionId"] == v2 and "DeleteMarker" not in d
    assert s3.get_object(Bucket=vbucket, Key="k")["Body"].read() == b"one"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=vbucket, Key="k", VersionId=v2)
    assert code(e) == "NoSuchVersion"
    # A version that is not there: success, as S3.
    s3.delete_object(Bucket=vbucket, Key="k", VersionId=v2)
    s3.delete_object(Bucket=vbucket, Key="k", VersionId=v1)
    assert versions_of(s3, vbucket) == ([], [])
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket=vbucket, Key="k", VersionId="bad id")
    assert code(e) == "InvalidArgument"


def test_delete_objects_with_versions(s3, vbucket):
    v1 = s3.put_object(Bucket=vbucket, Key="a", Body=b"a")["VersionId"]
    s3.put_object(Bucket=vbucket, Key="b", Body=b"b")
    r = s3.delete_objects(Bucket=vbucket, Delete={"Objects": [
        {"Key": "a", "VersionId": v1}, {"Key": "b"}]})
    got = {d["Key"]: d for d in r["Deleted"]}
    assert got["a"]["VersionId"] == v1 and "DeleteMarker" not in got["a"]
    assert got["b"]["DeleteMarker"] is True and got["b"]["DeleteMarkerVersionId"]
    marker = got["b"]["DeleteMarkerVersionId"]
    # Removing the marker by id reports it as a marker.
    r = s3.delete_objects(Bucket=vbucket, Delete={"Objects": [{"Key": "b", "VersionId": marker}]})
    assert r["Deleted"][0]["DeleteMarker"] is True
    assert r["Deleted"][0]["DeleteMarkerVersionId"] == marker
    assert s3.get_object(Bucket=vbucket, Key="b")["Body"].read() == b"b"
    r = s3.delete_objects(Bucket=vbucket, Delete={"Objects": [{"Key": "b", "VersionId": "bad"}]})
    assert r["Errors"][0]["Code"] == "NoSuchVersion"


def test_copy_of_a_version(s3, vbucket, bucket):
    v1 = s3.put_object(Bucket=vbucket, Key="src", Body=b"first")["VersionId"]
    s3.put_object(Bucket=vbucket, Key="src", Body=b"second")
    r = s3.copy_object(Bucket=vbucket, Key="dst", CopySource={
        "Bucket": vbucket, "Key": "src", "VersionId": v1})
    assert r["CopySourceVersionId"] == v1 and r["VersionId"] not in ("null", v1)
    assert s3.get_object(Bucket=vbucket, Key="dst")["Body"].read() == b"first"
    # Into an unversioned bucket: no version named for the destination.
    r = s3.copy_object(Bucket=bucket, Key="dst", CopySource={
        "Bucket": vbucket, "Key": "src", "VersionId": v1})
    assert "VersionId" not in r
    assert s3.get_object(Bucket=bucket, Key="dst")["Body"].read() == b"first"
    marker = s3.delete_object(Bucket=vbucket, Key="src")["VersionId"]
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=vbucket, Key="x", CopySource={"Bucket": vbucket, "Key": "src"})
    assert code(e) == "NoSuchKey"
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=vbucket, Key="x", CopySource={
            "Bucket": vbucket, "Key": "src", "VersionId": marker})
    assert status(e) == 405
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=vbucket, Key="x", CopySource={
            "Bucket": vbucket, "Key": "src", "VersionId": "zz"})
    assert code(e) == "InvalidArgument"


def test_upload_part_copy_of_a_version(s3, vbucket):
    v1 = s3.put_object(Bucket=vbucket, Key="src", Body=b"A" * 100)["VersionId"]
    s3.put_object(Bucket=vbucket, Key="src", Body=b"B" * 100)
    up = s3.create_multipart_upload(Bucket=vbucket, Key="mp")["UploadId"]
    r = s3.upload_part_copy(Bucket=vbucket, Key="mp", UploadId=up, PartNumber=1, CopySource={
        "Bucket": vbucket, "Key": "src", "VersionId": v1})
    assert r["CopySourceVersionId"] == v1
    c = s3.complete_multipart_upload(Bucket=vbucket, Key="mp", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": r["CopyPartResult"]["ETag"]}]})
    assert c["VersionId"] not in (None, "null")
    assert s3.get_object(Bucket=vbucket, Key="mp")["Body"].read() == b"A" * 100
    # A second completion of another upload makes another version.
    up = s3.create_multipart_upload(Bucket=vbucket, Key="mp")["UploadId"]
    p = s3.upload_part(Bucket=vbucket, Key="mp", UploadId=up, PartNumber=1, Body=b"C")
    c2 = s3.complete_multipart_upload(Bucket=vbucket, Key="mp", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": p["ETag"]}]})
    assert c2["VersionId"] > c["VersionId"]
    assert s3.get_object(Bucket=vbucket, Key="mp", VersionId=c["VersionId"])["Body"].read() \
        == b"A" * 100


# ---- null versions -----------------------------------------------------------------

def test_written_before_versioning_deleted_after(s3, bucket):
    """The SeaweedFS case: an object from before versioning, deleted after,
    is unlisted and 404, and ListObjectVersions shows its null version and
    the marker."""
    s3.put_object(Bucket=bucket, Key="old", Body=b"before")
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    d = s3.delete_object(Bucket=bucket, Key="old")
    assert d["DeleteMarker"] is True and d["VersionId"] != "null"
    assert s3.list_objects_v2(Bucket=bucket).get("KeyCount") == 0
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="old")
    assert status(e) == 404
    vs, ms = versions_of(s3, bucket)
    assert vs == [("v", "old", "null", False)]
    assert ms == [("m", "old", d["VersionId"], True)]
    assert s3.get_object(Bucket=bucket, Key="old", VersionId="null")["Body"].read() == b"before"


def test_suspended_writes_replace_the_null_version(s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"n0")  # null, unversioned
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    v1 = s3.put_object(Bucket=bucket, Key="k", Body=b"v1")["VersionId"]
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Suspended"})
    r = s3.put_object(Bucket=bucket, Key="k", Body=b"n1")
    assert r["VersionId"] == "null"
    # n0 (the old null version) is gone for good; v1 stays, noncurrent.
    vs, _ = versions_of(s3, bucket)
    assert vs == [("v", "k", "null", True), ("v", "k", v1, False)]
    assert s3.get_object(Bucket=bucket, Key="k", VersionId="null")["Body"].read() == b"n1"
    r = s3.put_object(Bucket=bucket, Key="k", Body=b"n2")
    assert r["VersionId"] == "null"
    vs, _ = versions_of(s3, bucket)
    assert vs == [("v", "k", "null", True), ("v", "k", v1, False)]
    # A suspended delete leaves one null marker in place of the null version.
    d = s3.delete_object(Bucket=bucket, Key="k")
    assert d["DeleteMarker"] is True and d["VersionId"] == "null"
    vs, ms = versions_of(s3, bucket)
    assert vs == [("v", "k", v1, False)] and ms == [("m", "k", "null", True)]
    # Enabled again: a new version on top; the null marker stays, noncurrent.
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    v3 = s3.put_object(Bucket=bucket, Key="k", Body=b"v3")["VersionId"]
    vs, ms = versions_of(s3, bucket)
    assert vs == [("v", "k", v3, True), ("v", "k", v1, False)]
    assert ms == [("m", "k", "null", False)]


def test_suspended_put_moves_a_versioned_current_to_history(s3, vbucket):
    v1 = s3.put_object(Bucket=vbucket, Key="k", Body=b"v1")["VersionId"]
    s3.put_bucket_versioning(Bucket=vbucket, VersioningConfiguration={"Status": "Suspended"})
    assert s3.put_object(Bucket=vbucket, Key="k", Body=b"n")["VersionId"] == "null"
    vs, _ = versions_of(s3, vbucket)
    assert vs == [("v", "k", "null", True), ("v", "k", v1, False)]


def test_delete_bucket_while_versions_remain(s3, vbucket):
    v1 = s3.put_object(Bucket=vbucket, Key="k", Body=b"x")["VersionId"]
    marker = s3.delete_object(Bucket=vbucket, Key="k")["VersionId"]
    with pytest.raises(ClientError) as e:
        s3.delete_bucket(Bucket=vbucket)
    assert code(e) == "BucketNotEmpty"
    s3.delete_object(Bucket=vbucket, Key="k", VersionId=v1)
    with pytest.raises(ClientError) as e:
        s3.delete_bucket(Bucket=vbucket)
    assert code(e) == "BucketNotEmpty"  # the marker alone keeps it
    s3.delete_object(Bucket=vbucket, Key="k", VersionId=marker)
    s3.delete_bucket(Bucket=vbucket)


# ---- what a version carries: tags from x-amz-tagging, per version --------------------

def test_tags_are_per_version_and_copied(s3, vbucket):
    v1 = s3.put_object(Bucket=vbucket, Key="k", Body=b"1", Tagging="a=1&b=2")["VersionId"]
    v2 = s3.put_object(Bucket=vbucket, Key="k", Body=b"2")["VersionId"]
    tags = lambda **kw: sorted((t["Key"], t["Value"]) for t in  # noqa: E731
                               s3.get_object_tagging(Bucket=vbucket, **kw)["TagSet"])
    assert tags(Key="k", VersionId=v1) == [("a", "1"), ("b", "2")]
    assert tags(Key="k", VersionId=v2) == []
    # Copy, directive COPY (the default): the source version's tags.
    s3.copy_object(Bucket=vbucket, Key="c", CopySource={
        "Bucket": vbucket, "Key": "k", "VersionId": v1})
    assert tags(Key="c") == [("a", "1"), ("b", "2")]
    # GET / HEAD count them (x-amz-tagging-count), of a named version too.
    assert s3.get_object(Bucket=vbucket, Key="c")["TagCount"] == 2
    assert s3.head_object(Bucket=vbucket, Key="k", VersionId=v1)["ResponseMetadata"][
        "HTTPHeaders"]["x-amz-tagging-count"] == "2"
    assert "TagCount" not in s3.get_object(Bucket=vbucket, Key="k")
    s3.copy_object(Bucket=vbucket, Key="d", CopySource={"Bucket": vbucket, "Key": "k",
                                                       "VersionId": v1},
                   TaggingDirective="REPLACE", Tagging="z=9")
    assert tags(Key="d") == [("z", "9")]
    # CreateMultipartUpload keeps them for the completion.
    up = s3.create_multipart_upload(Bucket=vbucket, Key="mp", Tagging="m=1")["UploadId"]
    p = s3.upload_part(Bucket=vbucket, Key="mp", UploadId=up, PartNumber=1, Body=b"x")
    s3.complete_multipart_upload(Bucket=vbucket, Key="mp", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": p["ETag"]}]})
    assert tags(Key="mp") == [("m", "1")]
    # Removing a version for good takes its tags with it.
    s3.delete_object(Bucket=vbucket, Key="k", VersionId=v1)
    with pytest.raises(ClientError) as e:
        s3.get_object_tagging(Bucket=vbucket, Key="k", VersionId=v1)
    assert code(e) == "NoSuchVersion"


def test_get_object_attributes_of_a_version(s3, vbucket):
    v1 = s3.put_object(Bucket=vbucket, Key="k", Body=b"12345")["VersionId"]
    s3.put_object(Bucket=vbucket, Key="k", Body=b"123")
    r = s3.get_object_attributes(Bucket=vbucket, Key="k", VersionId=v1,
                                 ObjectAttributes=["ObjectSize", "ETag"])
    assert r["ObjectSize"] == 5 and r["VersionId"] == v1
    r = s3.get_object_attributes(Bucket=vbucket, Key="k", ObjectAttributes=["ObjectSize"])
    assert r["ObjectSize"] == 3
    marker = s3.delete_object(Bucket=vbucket, Key="k")["VersionId"]
    with pytest.raises(ClientError) as e:
        s3.get_object_attributes(Bucket=vbucket, Key="k", ObjectAttributes=["ObjectSize"])
    assert status(e) == 404 and headers(e).get("x-amz-delete-marker") == "true"
    with pytest.raises(ClientError) as e:
        s3.get_object_attributes(Bucket=vbucket, Key="k", VersionId=marker,
                                 ObjectAttributes=["ObjectSize"])
    assert status(e) == 405
    # A multipart version's parts.
    up = s3.create_multipart_upload(Bucket=vbucket, Key="mp")["UploadId"]
    p1 = s3.upload_part(Bucket=vbucket, Key="mp", UploadId=up, PartNumber=1,
                        Body=b"a" * (5 << 20))
    p2 = s3.upload_part(Bucket=vbucket, Key="mp", UploadId=up, PartNumber=2, Body=b"b")
    v = s3.complete_multipart_upload(Bucket=vbucket, Key="mp", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": p1["ETag"]},
                  {"PartNumber": 2, "ETag": p2["ETag"]}]})["VersionId"]
    s3.put_object(Bucket=vbucket, Key="mp", Body=b"plain")
    r = s3.get_object_attributes(Bucket=vbucket, Key="mp", VersionId=v,
                                 ObjectAttributes=["ObjectParts"])
    assert r["ObjectParts"]["TotalPartsCount"] == 2
    assert [p["Size"] for p in r["ObjectParts"]["Parts"]] == [5 << 20, 1]


def test_cached_heads_follow_tag_changes(s3, bucket):
    """GET / HEAD answer the tag count from the version read (a cached head
    included): a tagging change moves the bucket's write generation."""
    s3.put_object(Bucket=bucket, Key="k", Body=b"x", Tagging="a=1")
    for _ in range(3):  # the second read on may come from the head cache
        assert s3.get_object(Bucket=bucket, Key="k")["TagCount"] == 1
    s3.put_object_tagging(Bucket=bucket, Key="k", Tagging={"TagSet": [
        {"Key": "a", "Value": "1"}, {"Key": "b", "Value": "2"}]})
    assert s3.get_object(Bucket=bucket, Key="k")["TagCount"] == 2
    s3.delete_object_tagging(Bucket=bucket, Key="k")
    assert "TagCount" not in s3.get_object(Bucket=bucket, Key="k")
