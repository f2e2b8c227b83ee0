"""The same objects through both faces: written over S3 and read over Jay
native v1, and the reverse, with the same etag, checksum (hex SHA-256 on Jay,
base64 in x-amz-checksum-sha256 on S3), content type and metadata."""
import base64
import hashlib
import os

from s3fixtures import bucket, s3, s3srv  # noqa: F401


def b64_to_hex(v):
    return base64.b64decode(v).hex()


def test_s3_put_jay_get(s3srv, s3, bucket):
    body = os.urandom(50_000)
    r = s3.put_object(Bucket=bucket, Key="from-s3", Body=body, ContentType="text/x-s3",
                      Metadata={"origin": "s3", "n": "7"}, ChecksumAlgorithm="SHA256")
    with s3srv.jay() as j:
        info, data = j.get_object(bucket, "from-s3")
        assert data == body
        assert '"%s"' % info["etag"] == r["ETag"]
        assert info["checksum"] == hashlib.sha256(body).hexdigest() == b64_to_hex(r["ChecksumSHA256"])
        assert info["content_type"] == "text/x-s3"
        assert info["metadata"] == {"origin": "s3", "n": "7"}
        listed = j.list_objects(bucket, prefix="from-s3")["contents"][0]
        assert listed["etag"] == info["etag"] and listed["size"] == len(body)


def test_jay_put_s3_get(s3srv, s3, bucket):
    body = os.urandom(70_000)
    with s3srv.jay() as j:
        put = j.put_object(bucket, "from-jay", body, content_type="application/x-jay",
                           metadata={"origin": "jay"})
    g = s3.get_object(Bucket=bucket, Key="from-jay", ChecksumMode="ENABLED")
    assert g["Body"].read() == body
    assert g["ETag"] == '"%s"' % put["etag"]
    assert b64_to_hex(g["ChecksumSHA256"]) == put["checksum"] == hashlib.sha256(body).hexdigest()
    assert g["ContentType"] == "application/x-jay"
    assert g["Metadata"] == {"origin": "jay"}
    a = s3.get_object_attributes(Bucket=bucket, Key="from-jay", ObjectAttributes=["ETag", "Checksum"])
    assert a["ETag"] == put["etag"]


def test_s3_multipart_jay_get_and_stat(s3srv, s3, bucket):
    parts = [os.urandom(5 << 20), os.urandom(5 << 20), os.urandom(12345)]
    uid = s3.create_multipart_upload(Bucket=bucket, Key="mp-cross", ContentType="video/mp4",
                                     Metadata={"m": "1"})["UploadId"]
    etags = [s3.upload_part(Bucket=bucket, Key="mp-cross", UploadId=uid, PartNumber=i + 1,
                            Body=p)["ETag"] for i, p in enumerate(parts)]
    done = s3.complete_multipart_upload(Bucket=bucket, Key="mp-cross", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": i + 1, "ETag": e} for i, e in enumerate(etags)]})
    whole = b"".join(parts)
    with s3srv.jay() as j:
        info = j.head_object(bucket, "mp-cross")
        assert '"%s"' % info["etag"] == done["ETag"] and info["etag"].endswith("-3")
        assert info["size"] == len(whole) and info["checksum"] == hashlib.sha256(whole).hexdigest()
        assert info["content_type"] == "video/mp4" and info["metadata"] == {"m": "1"}
        got = bytearray()
        j.get_object_stream(bucket, "mp-cross", got.extend)
        assert bytes(got) == whole
        _, rng = j.get_range(bucket, "mp-cross", (5 << 20) - 3, 6)
        assert rng == whole[(5 << 20) - 3:(5 << 20) + 3]


def test_jay_multipart_s3_get(s3srv, s3, bucket):
    parts = [b"a" * (5 << 20), b"tail"]
    with s3srv.jay() as j:
        uid = j.create_multipart(bucket, "jay-mp", content_type="text/plain")
        for i, p in enumerate(parts):
            j.upload_part(bucket, "jay-mp", uid, i + 1, p)
        done = j.complete_multipart(bucket, "jay-mp", uid, [1, 2])
    g = s3.get_object(Bucket=bucket, Key="jay-mp")
    assert g["Body"].read() == b"".join(parts)
    assert g["ETag"] == '"%s"' % done["etag"]
    assert s3.get_object(Bucket=bucket, Key="jay-mp", PartNumber=2)["Body"].read() == b"tail"


def test_copy_and_delete_across_faces(s3srv, s3, bucket):
    with s3srv.jay() as j:
        j.put_object(bucket, "jay-src", b"copy across", metadata={"k": "v"})
    s3.copy_object(Bucket=bucket, Key="s3-dst", CopySource={"Bucket": bucket, "Key": "jay-src"})
    with s3srv.jay() as j:
        info, data = j.get_object(bucket, "s3-dst")
        assert data == b"copy across" and info["metadata"] == {"k": "v"}
        j.delete_object(bucket, "s3-dst")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    assert "s3-dst" not in keys and "jay-src" in keys


def test_bucket_made_on_one_face_seen_on_other(s3srv, s3):
    from s3fixtures import unique
    name = unique("xf")
    with s3srv.jay() as j:
        j.create_bucket(name)
    s3.head_bucket(Bucket=name)
    s3.delete_bucket(Bucket=name)
    with s3srv.jay() as j:
        assert name not in [b[0] for b in j.list_buckets()]
