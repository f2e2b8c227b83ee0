"""Multipart uploads through the real cairnd: 3+ parts including
UploadPartCopy with a range, the md5-N etag, ListParts / ListMultipartUploads
pagination, Complete's validation (InvalidPart, InvalidPartOrder, etags),
Abort, conditional completes, partNumber reads, GetObjectAttributes parts."""
import hashlib

import pytest
from botocore.exceptions import ClientError

from s3fixtures import bucket, s3, s3srv, unique  # noqa: F401

MiB = 1 << 20


def code(exc):
    return exc.value.response["Error"]["Code"]


def mpu_etag(parts):
    return '"%s-%d"' % (hashlib.md5(b"".join(hashlib.md5(p).digest() for p in parts)).hexdigest(),
                        len(parts))


def test_multipart_with_part_copy(s3, bucket):
    src = bytes(range(256)) * (24 * 1024)          # 6 MiB
    s3.put_object(Bucket=bucket, Key="src", Body=src)
    p1 = b"A" * (5 * MiB)
    p3 = b"C" * 1234
    up = s3.create_multipart_upload(Bucket=bucket, Key="mp", ContentType="video/x-test",
                                    Metadata={"kind": "mp"})
    uid = up["UploadId"]
    assert up["Bucket"] == bucket and up["Key"] == "mp"
    e1 = s3.upload_part(Bucket=bucket, Key="mp", UploadId=uid, PartNumber=1, Body=p1)["ETag"]
    assert e1 == '"%s"' % hashlib.md5(p1).hexdigest()
    rng = (1000, 1000 + 5 * MiB - 1)
    c2 = s3.upload_part_copy(Bucket=bucket, Key="mp", UploadId=uid, PartNumber=2,
                             CopySource={"Bucket": bucket, "Key": "src"},
                             CopySourceRange="bytes=%d-%d" % rng)
    p2 = src[rng[0]:rng[1] + 1]
    assert c2["CopyPartResult"]["ETag"] == '"%s"' % hashlib.md5(p2).hexdigest()
    e3 = s3.upload_part(Bucket=bucket, Key="mp", UploadId=uid, PartNumber=3, Body=p3)["ETag"]
    parts = s3.list_parts(Bucket=bucket, Key="mp", UploadId=uid)["Parts"]
    assert [(p["PartNumber"], p["Size"]) for p in parts] == [(1, len(p1)), (2, len(p2)), (3, len(p3))]
    ups = s3.list_multipart_uploads(Bucket=bucket)["Uploads"]
    assert any(u["UploadId"] == uid and u["Key"] == "mp" for u in ups)
    r = s3.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": c2["CopyPartResult"]["ETag"]},
                  {"PartNumber": 3, "ETag": e3}]})
    assert r["ETag"] == mpu_etag([p1, p2, p3])
    assert r["Location"].endswith("/%s/mp" % bucket)
    g = s3.get_object(Bucket=bucket, Key="mp")
    body = g["Body"].read()
    assert body == p1 + p2 + p3 and g["ETag"] == r["ETag"]
    assert g["ContentType"] == "video/x-test" and g["Metadata"] == {"kind": "mp"}
    # Reads by part number and by a range spanning parts.
    g2 = s3.get_object(Bucket=bucket, Key="mp", PartNumber=2)
    assert g2["Body"].read() == p2 and g2["PartsCount"] == 3
    assert g2["ResponseMetadata"]["HTTPStatusCode"] == 206
    h3 = s3.head_object(Bucket=bucket, Key="mp", PartNumber=3)
    assert h3["ContentLength"] == len(p3)
    lo = len(p1) - 10
    g = s3.get_object(Bucket=bucket, Key="mp", Range="bytes=%d-%d" % (lo, lo + 19))
    assert g["Body"].read() == (p1 + p2)[lo:lo + 20]
    a = s3.get_object_attributes(Bucket=bucket, Key="mp", ObjectAttributes=["ObjectParts", "ETag",
                                                                            "ObjectSize"])
    assert a["ObjectParts"]["TotalPartsCount"] == 3
    assert [p["Size"] for p in a["ObjectParts"]["Parts"]] == [len(p1), len(p2), len(p3)]
    assert a["ETag"] == r["ETag"].strip('"') and a["ObjectSize"] == len(body)
    with pytest.raises(ClientError) as e:
        s3.list_parts(Bucket=bucket, Key="mp", UploadId=uid)
    assert code(e) == "NoSuchUpload"


def test_complete_validation(s3srv, s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="v")["UploadId"]
    e1 = s3.upload_part(Bucket=bucket, Key="v", UploadId=uid, PartNumber=1, Body=b"1" * 5 * MiB)["ETag"]
    e2 = s3.upload_part(Bucket=bucket, Key="v", UploadId=uid, PartNumber=2, Body=b"2")["ETag"]

    def complete(parts):
        return s3.complete_multipart_upload(Bucket=bucket, Key="v", UploadId=uid,
                                            MultipartUpload={"Parts": parts})
    with pytest.raises(ClientError) as e:
        complete([{"PartNumber": 2, "ETag": e2}, {"PartNumber": 1, "ETag": e1}])
    assert code(e) == "InvalidPartOrder"
    with pytest.raises(ClientError) as e:
        complete([{"PartNumber": 1, "ETag": e1}, {"PartNumber": 5, "ETag": e2}])
    assert code(e) == "InvalidPart"
    with pytest.raises(ClientError) as e:
        complete([{"PartNumber": 1, "ETag": '"00000000000000000000000000000000"'}])
    assert code(e) == "InvalidPart"
    r = s3srv.signed("POST", "/%s/v" % bucket, params={"uploadId": uid}, body=b"<Complete")
    assert r.status_code == 400 and "MalformedXML" in r.text
    # Accepted without xmlns and with unquoted etags, too.
    body = ("<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>%s</ETag></Part>"
            "<Part><PartNumber>2</PartNumber><ETag>%s</ETag></Part></CompleteMultipartUpload>"
            % (e1.strip('"'), e2.strip('"'))).encode()
    r = s3srv.signed("POST", "/%s/v" % bucket, params={"uploadId": uid}, body=body)
    assert r.status_code == 200, r.text
    assert 'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"' in r.text


def test_part_number_bounds_and_unknown_upload(s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="b")["UploadId"]
    for n in (0, 10001):
        with pytest.raises(ClientError) as e:
            s3.upload_part(Bucket=bucket, Key="b", UploadId=uid, PartNumber=n, Body=b"x")
        assert code(e) == "InvalidArgument"
    with pytest.raises(ClientError) as e:
        s3.upload_part(Bucket=bucket, Key="b", UploadId="nosuchupload", PartNumber=1, Body=b"x")
    assert code(e) == "NoSuchUpload"
    with pytest.raises(ClientError) as e:
        s3.upload_part(Bucket=bucket, Key="other-key", UploadId=uid, PartNumber=1, Body=b"x")
    assert code(e) == "NoSuchUpload"
    s3.abort_multipart_upload(Bucket=bucket, Key="b", UploadId=uid)
    with pytest.raises(ClientError) as e:
        s3.abort_multipart_upload(Bucket=bucket, Key="b", UploadId=uid)
    assert code(e) == "NoSuchUpload"


def test_list_parts_and_uploads_pagination(s3, bucket):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="lp")["UploadId"]
    for n in range(1, 8):
        s3.upload_part(Bucket=bucket, Key="lp", UploadId=uid, PartNumber=n, Body=b"p%d" % n)
    got, marker = [], 0
    while True:
        r = s3.list_parts(Bucket=bucket, Key="lp", UploadId=uid, MaxParts=3, PartNumberMarker=marker)
        got += [p["PartNumber"] for p in r["Parts"]]
        if not r["IsTruncated"]:
            break
        marker = r["NextPartNumberMarker"]
    assert got == list(range(1, 8))
    ids = {}
    for k in ["u/a", "u/b", "u/c", "w/d"]:
        ids[k] = s3.create_multipart_upload(Bucket=bucket, Key=k)["UploadId"]
    seen, km, um = [], None, None
    while True:
        kw = dict(Bucket=bucket, Prefix="u/", MaxUploads=2)
        if km:
            kw.update(KeyMarker=km, UploadIdMarker=um)
        r = s3.list_multipart_uploads(**kw)
        seen += [u["Key"] for u in r.get("Uploads", [])]
        if not r["IsTruncated"]:
            break
        km, um = r["NextKeyMarker"], r["NextUploadIdMarker"]
    assert seen == ["u/a", "u/b", "u/c"]
    r = s3.list_multipart_uploads(Bucket=bucket, Delimiter="/")
    assert sorted(p["Prefix"] for p in r["CommonPrefixes"]) == ["u/", "w/"]


def test_conditional_complete(s3srv, s3, bucket):
    s3.put_object(Bucket=bucket, Key="cc", Body=b"exists")
    uid = s3.create_multipart_upload(Bucket=bucket, Key="cc")["UploadId"]
    e1 = s3.upload_part(Bucket=bucket, Key="cc", UploadId=uid, PartNumber=1, Body=b"x")["ETag"]
    body = ("<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>%s</ETag></Part>"
            "</CompleteMultipartUpload>" % e1).encode()
    r = s3srv.signed("POST", "/%s/cc" % bucket, params={"uploadId": uid}, body=body,
                     headers={"If-None-Match": "*"})
    assert r.status_code == 412 and "PreconditionFailed" in r.text
    assert s3.get_object(Bucket=bucket, Key="cc")["Body"].read() == b"exists"
    etag = s3.head_object(Bucket=bucket, Key="cc")["ETag"]
    r = s3srv.signed("POST", "/%s/cc" % bucket, params={"uploadId": uid}, body=body,
                     headers={"If-Match": etag})
    assert r.status_code == 200, r.text
    assert s3.get_object(Bucket=bucket, Key="cc")["Body"].read() == b"x"


def test_upload_part_copy_conditions_and_bad_range(s3, bucket):
    s3.put_object(Bucket=bucket, Key="s", Body=b"0123456789")
    uid = s3.create_multipart_upload(Bucket=bucket, Key="t")["UploadId"]
    with pytest.raises(ClientError) as e:
        s3.upload_part_copy(Bucket=bucket, Key="t", UploadId=uid, PartNumber=1,
                            CopySource={"Bucket": bucket, "Key": "s"}, CopySourceRange="bytes=5-50")
    assert code(e) == "InvalidArgument"
    with pytest.raises(ClientError) as e:
        s3.upload_part_copy(Bucket=bucket, Key="t", UploadId=uid, PartNumber=1,
                            CopySource={"Bucket": bucket, "Key": "s"}, CopySourceIfMatch='"nope"')
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    r = s3.upload_part_copy(Bucket=bucket, Key="t", UploadId=uid, PartNumber=1,
                            CopySource={"Bucket": bucket, "Key": "s"}, CopySourceRange="bytes=2-4")
    assert r["CopyPartResult"]["ETag"] == '"%s"' % hashlib.md5(b"234").hexdigest()
    s3.abort_multipart_upload(Bucket=bucket, Key="t", UploadId=uid)


def test_managed_transfer(s3, bucket, tmp_path):
    """boto3's own multipart machinery (upload_file / download_file)."""
    from boto3.s3.transfer import TransferConfig
    import os
    data = os.urandom(21 * MiB + 17)
    f = tmp_path / "in.bin"
    f.write_bytes(data)
    cfg = TransferConfig(multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB, max_concurrency=4)
    s3.upload_file(str(f), bucket, "managed", Config=cfg)
    h = s3.head_object(Bucket=bucket, Key="managed")
    assert h["ContentLength"] == len(data) and h["ETag"].endswith('-5"')
    out = tmp_path / "out.bin"
    s3.download_file(bucket, "managed", str(out), Config=cfg)
    assert out.read_bytes() == data
