"""The S3 error table (issue 14): for every operation docs/s3.md lists as
supported, the error conditions the AWS S3 API Reference documents, each with
the code and HTTP status AWS answers, checked against a real cairnd.

One parametrized test; each row is (operation, condition, expected code,
expected status, request function). A request function gets a Ctx (a fresh
bucket holding one object, clients for the administrator, a second account
and anonymous callers) and either makes a boto3 call (a ClientError gives
code and status) or returns a raw requests.Response (code from the XML body).
HEAD answers and 304s carry no body: only their status is compared.

Sources (AWS S3 API Reference, https://docs.aws.amazon.com/AmazonS3/latest/API/):
  ErrorResponses.html#ErrorCodeList   every code with its HTTP status (the base of every row)
  API_GetObject.html                  NoSuchKey, InvalidObjectState; conditional headers 304/412;
                                      Range 416; partNumber; response-* need a signed request
  API_HeadObject.html                 404/412/304/403 without a body
  API_CopyObject.html                 x-amz-copy-source-if-* (412), copy-to-itself InvalidRequest
  API_CreateBucket.html               BucketAlreadyExists, BucketAlreadyOwnedByYou
  API_DeleteBucket.html / API_HeadBucket.html / API_ListObjects(V2).html   NoSuchBucket
  API_CompleteMultipartUpload.html    special errors EntityTooSmall, InvalidPart,
                                      InvalidPartOrder, NoSuchUpload
  API_UploadPart.html / API_UploadPartCopy.html / API_AbortMultipartUpload.html /
  API_ListParts.html                  NoSuchUpload (404)
  API_GetObjectAttributes.html / API_GetObjectAcl.html / API_PutObjectAcl.html   NoSuchKey
  API_DeleteObjects.html              Content-MD5 required, at most 1000 keys
  API_GetBucketPolicy.html, API_GetBucketPolicyStatus.html   NoSuchBucketPolicy
  API_GetBucketCors.html              NoSuchCORSConfiguration
  API_GetPublicAccessBlock.html       NoSuchPublicAccessBlockConfiguration
  RESTObjectPOST.html                 POST form errors
  RESTOPTIONSobject.html              preflight 403 AccessForbidden / 400 BadRequest
  sigv4-query-string-auth.html / RESTAuthentication    SignatureDoesNotMatch,
                                      InvalidAccessKeyId, RequestTimeTooSkewed, expiry

Rows where cairn answers otherwise are either strict xfails (a cairn bug:
the xfail turns into a failure once fixed) or, for a deliberate deviation,
assert cairn's documented answer (docs/s3.md, "Deviations from S3").
"""
import base64
import datetime
import hashlib
import json
import re
import socket
import time
import types
import urllib.parse
import zlib

import botocore.auth
import pytest
import requests
from botocore.exceptions import ClientError

from conftest import ADMIN_TOKEN, binary, run
from s3fixtures import ADMIN_KEY, ADMIN_SECRET, s3srv, unique  # noqa: F401

DATA = b"hello world"        # the object every row's bucket holds, 11 bytes
MIB = 1024 * 1024
POLICY_XMLNS = "http://s3.amazonaws.com/doc/2006-03-01/"


# ---- the context each row runs in ---------------------------------------------------

class Ctx:
    def __init__(self, srv, other, monkeypatch):
        self.srv = srv
        self.s3 = srv.client()
        self.other = other            # {"name", "client", "key", "secret"}
        self.mp = monkeypatch
        self.b = unique("et")
        self.s3.create_bucket(Bucket=self.b)
        self.etag = self.s3.put_object(Bucket=self.b, Key="obj", Body=DATA)["ETag"]
        self.missing = unique("nobkt")

    def anon(self):
        return self.srv.anon()

    def upload(self, key="mpu"):
        return self.s3.create_multipart_upload(Bucket=self.b, Key=key)["UploadId"]

    def part(self, uid, n, body, key="mpu"):
        return self.s3.upload_part(Bucket=self.b, Key=key, UploadId=uid, PartNumber=n,
                                   Body=body)["ETag"]

    def raw(self, method, path, body=b"", headers=None, **kw):
        """A SigV4-signed request by the administrator; path may carry a query."""
        return self.srv.signed(method, path, body=body, headers=headers, **kw)


@pytest.fixture(scope="module")
def other(s3srv):
    name = unique("eve")
    r = run([binary("cairn"), "admin", "--data", s3srv.data_dir, "account", "create", name],
            env={"CAIRN_ADMIN_TOKEN": ADMIN_TOKEN})
    assert r.returncode == 0, r.stderr
    cred = s3srv.admin("token", "create", "--account", name).splitlines()[-1].strip()
    key, secret = cred.split(":", 1)
    return {"name": name, "key": key, "secret": secret, "client": s3srv.client(key, secret)}


def md5_b64(data):
    return base64.b64encode(hashlib.md5(data).digest()).decode()


def policy_for(bucket, principal="*", action="s3:GetObject"):
    return json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": principal, "Action": action,
        "Resource": "arn:aws:s3:::%s/*" % bucket}]})


CORS = {"CORSRules": [{"AllowedOrigins": ["https://app.example"], "AllowedMethods": ["GET"]}]}


def complete_xml(parts):
    return ("<CompleteMultipartUpload>%s</CompleteMultipartUpload>" % "".join(
        "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part>" % (n, e)
        for n, e in parts)).encode()


def raw_socket(srv, head, body=b"", timeout=15):
    """Sends head (request line + headers, no blank line) and body over a plain
    socket; returns (status, text) of what came back."""
    host, port = srv.server.addrs["http"]
    s = socket.create_connection((host, port), timeout=timeout)
    try:
        s.sendall(head.encode() + b"\r\n\r\n" + body)
        data = b""
        while True:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            data += chunk
            if b"\r\n\r\n" in data:
                hdr, _, rest = data.partition(b"\r\n\r\n")
                m = re.search(rb"(?i)content-length:\s*(\d+)", hdr)
                if m and len(rest) >= int(m.group(1)):
                    break
    finally:
        s.close()
    status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else 0
    return status, data.decode("latin-1")


def signed_head(c, method, path, extra_headers, drop=()):
    """A request head signed by botocore for a raw socket (no body hash)."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    host, port = c.srv.server.addrs["http"]
    req = AWSRequest(method=method, url=c.srv.endpoint + path, headers=dict(extra_headers))
    req.headers["x-amz-content-sha256"] = "UNSIGNED-PAYLOAD"
    S3SigV4Auth(Credentials(ADMIN_KEY, ADMIN_SECRET), "s3", "us-east-1").add_auth(req)
    lines = ["%s %s HTTP/1.1" % (method, path), "Host: %s:%d" % (host, port)]
    for k, v in req.headers.items():
        if k.lower() not in drop and k.lower() != "host":
            lines.append("%s: %s" % (k, v))
    return "\r\n".join(lines)


class RawResult:
    def __init__(self, status, text):
        self.status_code, self.text, self.headers = status, text, {}


def skew_clock(c, hours):
    """botocore signs with datetime.utcnow(); move its clock."""
    real = datetime.datetime

    class Skewed(real):
        @classmethod
        def utcnow(cls):
            return real.utcnow() + datetime.timedelta(hours=hours)

    fake = types.SimpleNamespace(datetime=Skewed, timedelta=datetime.timedelta,
                                 timezone=datetime.timezone)
    c.mp.setattr(botocore.auth, "datetime", fake)
    try:    # with awscrt installed the client signs with botocore.crt.auth
        import botocore.crt.auth as crt_auth
    except ImportError:
        return
    c.mp.setattr(crt_auth, "datetime", fake)


def form_post(c, bucket, fields, file=True, content_type=None, raw_body=None):
    if raw_body is not None:
        return requests.post("%s/%s" % (c.srv.endpoint, bucket), data=raw_body,
                             headers={"Content-Type": content_type})
    files = [(k, (None, v)) for k, v in fields.items()]
    if file:
        files.append(("file", ("f.txt", b"form-bytes", "text/plain")))
    return requests.post("%s/%s" % (c.srv.endpoint, bucket), files=files,
                         allow_redirects=False)


def v4_policy_fields(bucket, key, ak=ADMIN_KEY, secret=ADMIN_SECRET, expires_in=300,
                     tamper=False):
    import hmac
    now = datetime.datetime.utcnow()
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    cred = "%s/%s/us-east-1/s3/aws4_request" % (ak, amz_date[:8])
    exp = (now + datetime.timedelta(seconds=expires_in)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    pol = {"expiration": exp, "conditions": [
        {"bucket": bucket}, {"key": key}, {"x-amz-algorithm": "AWS4-HMAC-SHA256"},
        {"x-amz-credential": cred}, {"x-amz-date": amz_date}]}
    b64 = base64.b64encode(json.dumps(pol).encode()).decode()
    k = ("AWS4" + secret).encode()
    for part in (amz_date[:8], "us-east-1", "s3", "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    sig = hmac.new(k, b64.encode(), hashlib.sha256).hexdigest()
    if tamper:
        sig = ("0" if sig[0] != "0" else "1") + sig[1:]
    return {"key": key, "policy": b64, "x-amz-algorithm": "AWS4-HMAC-SHA256",
            "x-amz-credential": cred, "x-amz-date": amz_date, "x-amz-signature": sig}


# ---- the rows -----------------------------------------------------------------------

ROWS = []


def row(op, cond, code, status, fn, bug=None):
    marks = [pytest.mark.xfail(strict=True, reason="cairn bug: " + bug)] if bug else []
    ROWS.append(pytest.param(op, cond, code, status, fn, marks=marks,
                             id="%s-%s" % (op, cond.replace(" ", "_"))))


# NoSuchBucket (404) on every bucket-scoped operation (ErrorCodeList: NoSuchBucket 404).
def _nsb(op, fn):
    row(op, "missing bucket", "NoSuchBucket", 404, fn)


_nsb("ListObjects", lambda c: c.s3.list_objects(Bucket=c.missing))
_nsb("ListObjectsV2", lambda c: c.s3.list_objects_v2(Bucket=c.missing))
_nsb("HeadBucket", lambda c: c.s3.head_bucket(Bucket=c.missing))
_nsb("DeleteBucket", lambda c: c.s3.delete_bucket(Bucket=c.missing))
_nsb("GetBucketLocation", lambda c: c.s3.get_bucket_location(Bucket=c.missing))
_nsb("GetBucketVersioning", lambda c: c.s3.get_bucket_versioning(Bucket=c.missing))
_nsb("PutObject", lambda c: c.s3.put_object(Bucket=c.missing, Key="k", Body=b"x"))
_nsb("GetObject", lambda c: c.s3.get_object(Bucket=c.missing, Key="k"))
_nsb("HeadObject", lambda c: c.s3.head_object(Bucket=c.missing, Key="k"))
_nsb("DeleteObject", lambda c: c.s3.delete_object(Bucket=c.missing, Key="k"))
_nsb("DeleteObjects", lambda c: c.s3.delete_objects(
    Bucket=c.missing, Delete={"Objects": [{"Key": "k"}]}))
_nsb("CopyObject", lambda c: c.s3.copy_object(
    Bucket=c.missing, Key="k", CopySource={"Bucket": c.b, "Key": "obj"}))
row("CopyObject", "missing source bucket", "NoSuchBucket", 404, lambda c: c.s3.copy_object(
    Bucket=c.b, Key="k", CopySource={"Bucket": c.missing, "Key": "obj"}))
_nsb("CreateMultipartUpload", lambda c: c.s3.create_multipart_upload(Bucket=c.missing, Key="k"))
_nsb("UploadPart", lambda c: c.s3.upload_part(
    Bucket=c.missing, Key="k", UploadId="u", PartNumber=1, Body=b"x"))
_nsb("UploadPartCopy", lambda c: c.s3.upload_part_copy(
    Bucket=c.missing, Key="k", UploadId="u", PartNumber=1,
    CopySource={"Bucket": c.b, "Key": "obj"}))
_nsb("CompleteMultipartUpload", lambda c: c.s3.complete_multipart_upload(
    Bucket=c.missing, Key="k", UploadId="u",
    MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": '"%s"' % ("0" * 32)}]}))
_nsb("AbortMultipartUpload", lambda c: c.s3.abort_multipart_upload(
    Bucket=c.missing, Key="k", UploadId="u"))
_nsb("ListParts", lambda c: c.s3.list_parts(Bucket=c.missing, Key="k", UploadId="u"))
_nsb("ListMultipartUploads", lambda c: c.s3.list_multipart_uploads(Bucket=c.missing))
_nsb("GetObjectAttributes", lambda c: c.s3.get_object_attributes(
    Bucket=c.missing, Key="k", ObjectAttributes=["ETag"]))
_nsb("GetBucketPolicy", lambda c: c.s3.get_bucket_policy(Bucket=c.missing))
_nsb("PutBucketPolicy", lambda c: c.s3.put_bucket_policy(
    Bucket=c.missing, Policy=policy_for(c.missing)))
_nsb("DeleteBucketPolicy", lambda c: c.s3.delete_bucket_policy(Bucket=c.missing))
_nsb("GetBucketPolicyStatus", lambda c: c.s3.get_bucket_policy_status(Bucket=c.missing))
_nsb("GetBucketAcl", lambda c: c.s3.get_bucket_acl(Bucket=c.missing))
_nsb("PutBucketAcl", lambda c: c.s3.put_bucket_acl(Bucket=c.missing, ACL="private"))
_nsb("GetObjectAcl", lambda c: c.s3.get_object_acl(Bucket=c.missing, Key="k"))
_nsb("PutObjectAcl", lambda c: c.s3.put_object_acl(Bucket=c.missing, Key="k", ACL="private"))
_nsb("GetPublicAccessBlock", lambda c: c.s3.get_public_access_block(Bucket=c.missing))
_nsb("PutPublicAccessBlock", lambda c: c.s3.put_public_access_block(
    Bucket=c.missing, PublicAccessBlockConfiguration={"BlockPublicAcls": True}))
_nsb("DeletePublicAccessBlock", lambda c: c.s3.delete_public_access_block(Bucket=c.missing))
_nsb("GetBucketCors", lambda c: c.s3.get_bucket_cors(Bucket=c.missing))
_nsb("PutBucketCors", lambda c: c.s3.put_bucket_cors(Bucket=c.missing, CORSConfiguration=CORS))
_nsb("DeleteBucketCors", lambda c: c.s3.delete_bucket_cors(Bucket=c.missing))
_nsb("PostObject", lambda c: form_post(c, c.missing, {"key": "k"}))

# NoSuchKey (404).
row("GetObject", "missing key", "NoSuchKey", 404,
    lambda c: c.s3.get_object(Bucket=c.b, Key="nokey"))
row("HeadObject", "missing key", "NoSuchKey", 404,
    lambda c: c.s3.head_object(Bucket=c.b, Key="nokey"))
row("CopyObject", "missing source key", "NoSuchKey", 404, lambda c: c.s3.copy_object(
    Bucket=c.b, Key="dst", CopySource={"Bucket": c.b, "Key": "nokey"}))
row("UploadPartCopy", "missing source key", "NoSuchKey", 404, lambda c: c.s3.upload_part_copy(
    Bucket=c.b, Key="mpu", UploadId=c.upload(), PartNumber=1,
    CopySource={"Bucket": c.b, "Key": "nokey"}))
row("GetObjectAcl", "missing key", "NoSuchKey", 404,
    lambda c: c.s3.get_object_acl(Bucket=c.b, Key="nokey"))
row("PutObjectAcl", "missing key", "NoSuchKey", 404,
    lambda c: c.s3.put_object_acl(Bucket=c.b, Key="nokey", ACL="private"))
row("GetObjectAttributes", "missing key", "NoSuchKey", 404, lambda c: c.s3.get_object_attributes(
    Bucket=c.b, Key="nokey", ObjectAttributes=["ETag"]))

# NoSuchUpload (404).
row("UploadPart", "unknown upload id", "NoSuchUpload", 404, lambda c: c.s3.upload_part(
    Bucket=c.b, Key="mpu", UploadId="nosuchupload", PartNumber=1, Body=b"x"))
row("UploadPartCopy", "unknown upload id", "NoSuchUpload", 404, lambda c: c.s3.upload_part_copy(
    Bucket=c.b, Key="mpu", UploadId="nosuchupload", PartNumber=1,
    CopySource={"Bucket": c.b, "Key": "obj"}))
row("CompleteMultipartUpload", "unknown upload id", "NoSuchUpload", 404,
    lambda c: c.s3.complete_multipart_upload(
        Bucket=c.b, Key="mpu", UploadId="nosuchupload",
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": c.etag}]}))
row("AbortMultipartUpload", "unknown upload id", "NoSuchUpload", 404,
    lambda c: c.s3.abort_multipart_upload(Bucket=c.b, Key="mpu", UploadId="nosuchupload"))
row("ListParts", "unknown upload id", "NoSuchUpload", 404,
    lambda c: c.s3.list_parts(Bucket=c.b, Key="mpu", UploadId="nosuchupload"))
row("ListParts", "upload id of another key", "NoSuchUpload", 404,
    lambda c: c.s3.list_parts(Bucket=c.b, Key="other-key", UploadId=c.upload("mpu")))


def _aborted(c):
    uid = c.upload()
    c.s3.abort_multipart_upload(Bucket=c.b, Key="mpu", UploadId=uid)
    return c.s3.upload_part(Bucket=c.b, Key="mpu", UploadId=uid, PartNumber=1, Body=b"x")


row("UploadPart", "aborted upload", "NoSuchUpload", 404, _aborted)


# CompleteMultipartUpload's special errors (API_CompleteMultipartUpload.html).
def _complete_wrong_etag(c):
    uid = c.upload()
    c.part(uid, 1, b"a")
    return c.s3.complete_multipart_upload(Bucket=c.b, Key="mpu", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": '"%s"' % ("0" * 32)}]})


def _complete_missing_part(c):
    uid = c.upload()
    e1 = c.part(uid, 1, b"a" * (5 * MIB))
    return c.s3.complete_multipart_upload(Bucket=c.b, Key="mpu", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e1}]})


def _complete_order(c):
    uid = c.upload()
    e1 = c.part(uid, 1, b"a" * (5 * MIB))
    e2 = c.part(uid, 2, b"b")
    return c.s3.complete_multipart_upload(Bucket=c.b, Key="mpu", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 2, "ETag": e2}, {"PartNumber": 1, "ETag": e1}]})


def _complete_small(c):
    uid = c.upload()
    e1 = c.part(uid, 1, b"a")
    e2 = c.part(uid, 2, b"b")
    return c.s3.complete_multipart_upload(Bucket=c.b, Key="mpu", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})


def _complete_garbage(c):
    uid = c.upload()
    return c.raw("POST", "/%s/mpu?uploadId=%s" % (c.b, urllib.parse.quote(uid)),
                 body=b"<CompleteMultipartUpload><Part>")


def _complete_empty(c):
    uid = c.upload()
    c.part(uid, 1, b"a")
    return c.raw("POST", "/%s/mpu?uploadId=%s" % (c.b, urllib.parse.quote(uid)),
                 body=b"<CompleteMultipartUpload></CompleteMultipartUpload>")


def _complete_if_none_match(c):
    uid = c.upload("obj")
    e1 = c.part(uid, 1, b"a", key="obj")
    return c.raw("POST", "/%s/obj?uploadId=%s" % (c.b, urllib.parse.quote(uid)),
                 body=complete_xml([(1, e1)]), headers={"If-None-Match": "*"})


row("CompleteMultipartUpload", "etag does not match", "InvalidPart", 400, _complete_wrong_etag)
row("CompleteMultipartUpload", "part not uploaded", "InvalidPart", 400, _complete_missing_part)
row("CompleteMultipartUpload", "parts not ascending", "InvalidPartOrder", 400, _complete_order)
row("CompleteMultipartUpload", "non-last part under 5 MiB", "EntityTooSmall", 400,
    _complete_small)
row("CompleteMultipartUpload", "malformed body", "MalformedXML", 400, _complete_garbage)
row("CompleteMultipartUpload", "no parts", "MalformedXML", 400, _complete_empty)
row("CompleteMultipartUpload", "If-None-Match * on existing key", "PreconditionFailed", 412,
    _complete_if_none_match)

# GetObject / HeadObject: ranges, conditions, part numbers.
PAST = datetime.datetime(2001, 1, 1, tzinfo=datetime.timezone.utc)
FUTURE = datetime.datetime(2100, 1, 1, tzinfo=datetime.timezone.utc)

row("GetObject", "range beyond the object", "InvalidRange", 416,
    lambda c: c.s3.get_object(Bucket=c.b, Key="obj", Range="bytes=100-200"))
row("HeadObject", "range beyond the object", "InvalidRange", 416,
    lambda c: c.s3.head_object(Bucket=c.b, Key="obj", Range="bytes=100-200"))
row("GetObject", "If-Match other etag", "PreconditionFailed", 412,
    lambda c: c.s3.get_object(Bucket=c.b, Key="obj", IfMatch='"%s"' % ("0" * 32)))
row("GetObject", "If-Unmodified-Since in the past", "PreconditionFailed", 412,
    lambda c: c.s3.get_object(Bucket=c.b, Key="obj", IfUnmodifiedSince=PAST))
row("HeadObject", "If-Match other etag", "PreconditionFailed", 412,
    lambda c: c.s3.head_object(Bucket=c.b, Key="obj", IfMatch='"%s"' % ("0" * 32)))
row("GetObject", "If-None-Match same etag", "NotModified", 304,
    lambda c: c.s3.get_object(Bucket=c.b, Key="obj", IfNoneMatch=c.etag))
row("GetObject", "If-Modified-Since in the future", "NotModified", 304,
    lambda c: c.s3.get_object(Bucket=c.b, Key="obj", IfModifiedSince=FUTURE))
row("HeadObject", "If-None-Match same etag", "NotModified", 304,
    lambda c: c.s3.head_object(Bucket=c.b, Key="obj", IfNoneMatch=c.etag))
row("GetObject", "partNumber 0", "InvalidArgument", 400,
    lambda c: c.raw("GET", "/%s/obj?partNumber=0" % c.b))
row("GetObject", "Range and partNumber together", "InvalidRequest", 400,
    lambda c: c.raw("GET", "/%s/obj?partNumber=1" % c.b, headers={"Range": "bytes=0-1"}))


def _anon_response_override(c):
    c.s3.put_object(Bucket=c.b, Key="pub", Body=DATA, ACL="public-read")
    return requests.get("%s/%s/pub?response-content-type=text/x-y" % (c.srv.endpoint, c.b))


row("GetObject", "response-* override anonymously", "InvalidRequest", 400,
    _anon_response_override)
row("GetObject", "other account, private object", "AccessDenied", 403,
    lambda c: c.other["client"].get_object(Bucket=c.b, Key="obj"))
row("GetObject", "anonymous, private object", "AccessDenied", 403,
    lambda c: c.anon().get_object(Bucket=c.b, Key="obj"))
row("HeadObject", "other account, private object", "AccessDenied", 403,
    lambda c: c.other["client"].head_object(Bucket=c.b, Key="obj"))

# PutObject.
row("PutObject", "key over 1024 bytes", "KeyTooLongError", 400,
    lambda c: c.s3.put_object(Bucket=c.b, Key="k" * 1025, Body=b"x"))
row("PutObject", "metadata over 2 KiB", "MetadataTooLarge", 400,
    lambda c: c.s3.put_object(Bucket=c.b, Key="k", Body=b"x", Metadata={"big": "v" * 2100}))
# An empty metadata name is an invalid argument, not MetadataTooLarge (issue 15).
row("PutObject", "empty metadata name", "InvalidArgument", 400,
    lambda c: c.raw("PUT", "/%s/k" % c.b, body=b"x", headers={"x-amz-meta-": "v"}))
row("PutObject", "Content-MD5 of other bytes", "BadDigest", 400,
    lambda c: c.s3.put_object(Bucket=c.b, Key="k", Body=b"x", ContentMD5=md5_b64(b"y")))
row("PutObject", "Content-MD5 not an MD5", "InvalidDigest", 400,
    lambda c: c.raw("PUT", "/%s/k" % c.b, body=b"x", headers={"Content-MD5": "bm90LW1kNQ=="}))
row("PutObject", "x-amz-checksum-crc32 of other bytes", "BadDigest", 400,
    lambda c: c.raw("PUT", "/%s/k" % c.b, body=b"x", headers={
        "x-amz-checksum-crc32": base64.b64encode(zlib.crc32(b"y").to_bytes(4, "big")).decode()}))
def _payload_hash_mismatch(c):
    """Signed over the SHA-256 of b"y" (botocore always hashes the body it is
    given), then sent with b"x": same length, other bytes."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    req = AWSRequest(method="PUT", url="%s/%s/k" % (c.srv.endpoint, c.b), data=b"y")
    S3SigV4Auth(Credentials(ADMIN_KEY, ADMIN_SECRET), "s3", "us-east-1").add_auth(req)
    p = req.prepare()
    return requests.put(p.url, data=b"x", headers=dict(p.headers))


row("PutObject", "signed payload hash of other bytes", "XAmzContentSHA256Mismatch", 400,
    _payload_hash_mismatch)
row("PutObject", "If-None-Match * on existing key", "PreconditionFailed", 412,
    lambda c: c.raw("PUT", "/%s/obj" % c.b, body=b"x", headers={"If-None-Match": "*"}))
row("PutObject", "If-Match other etag", "PreconditionFailed", 412,
    lambda c: c.raw("PUT", "/%s/obj" % c.b, body=b"x",
                    headers={"If-Match": '"%s"' % ("0" * 32)}))
row("PutObject", "unknown canned ACL", "InvalidArgument", 400,
    lambda c: c.s3.put_object(Bucket=c.b, Key="k", Body=b"x", ACL="no-such-acl"))
row("PutObject", "canned ACL and grant headers", "InvalidRequest", 400,
    lambda c: c.s3.put_object(Bucket=c.b, Key="k", Body=b"x", ACL="private",
                              GrantRead='id="admin"'))
row("PutObject", "grant to unknown email", "UnresolvableGrantByEmailAddress", 400,
    lambda c: c.s3.put_object(Bucket=c.b, Key="k", Body=b"x",
                              GrantRead='emailAddress="nobody@example.invalid"'))
row("PutObject", "grant to unknown id", "InvalidArgument", 400,
    lambda c: c.s3.put_object(Bucket=c.b, Key="k", Body=b"x", GrantRead='id="no-such-account"'))
row("PutObject", "other account, private bucket", "AccessDenied", 403,
    lambda c: c.other["client"].put_object(Bucket=c.b, Key="k", Body=b"x"))


def _put_no_length(c):
    head = signed_head(c, "PUT", "/%s/nolen" % c.b, {})
    st, text = raw_socket(c.srv, head)
    return RawResult(st, text)


def _put_too_large(c):
    head = signed_head(c, "PUT", "/%s/huge" % c.b, {"Content-Length": str(5 * 1024 ** 3 + 1)})
    st, text = raw_socket(c.srv, head)
    return RawResult(st, text)


row("PutObject", "no Content-Length", "MissingContentLength", 411, _put_no_length)
row("PutObject", "Content-Length over 5 GiB", "EntityTooLarge", 400, _put_too_large)

# CopyObject.
row("CopyObject", "x-amz-copy-source-if-match other etag", "PreconditionFailed", 412,
    lambda c: c.s3.copy_object(Bucket=c.b, Key="dst", CopySource={"Bucket": c.b, "Key": "obj"},
                               CopySourceIfMatch='"%s"' % ("0" * 32)))
row("CopyObject", "x-amz-copy-source-if-none-match same etag", "PreconditionFailed", 412,
    lambda c: c.s3.copy_object(Bucket=c.b, Key="dst", CopySource={"Bucket": c.b, "Key": "obj"},
                               CopySourceIfNoneMatch=c.etag))
row("CopyObject", "x-amz-copy-source-if-unmodified-since past", "PreconditionFailed", 412,
    lambda c: c.s3.copy_object(Bucket=c.b, Key="dst", CopySource={"Bucket": c.b, "Key": "obj"},
                               CopySourceIfUnmodifiedSince=PAST))
row("CopyObject", "x-amz-copy-source-if-modified-since future", "PreconditionFailed", 412,
    lambda c: c.s3.copy_object(Bucket=c.b, Key="dst", CopySource={"Bucket": c.b, "Key": "obj"},
                               CopySourceIfModifiedSince=FUTURE))
row("CopyObject", "onto itself unchanged", "InvalidRequest", 400,
    lambda c: c.s3.copy_object(Bucket=c.b, Key="obj", CopySource={"Bucket": c.b, "Key": "obj"}))
row("CopyObject", "unknown metadata directive", "InvalidArgument", 400,
    lambda c: c.raw("PUT", "/%s/dst" % c.b, headers={
        "x-amz-copy-source": "/%s/obj" % c.b, "x-amz-metadata-directive": "BOGUS"}))
row("CopyObject", "copy source without a key", "InvalidArgument", 400,
    lambda c: c.raw("PUT", "/%s/dst" % c.b, headers={"x-amz-copy-source": c.b}))
row("CopyObject", "REPLACE metadata over 2 KiB", "MetadataTooLarge", 400,
    lambda c: c.s3.copy_object(Bucket=c.b, Key="dst", CopySource={"Bucket": c.b, "Key": "obj"},
                               MetadataDirective="REPLACE", Metadata={"big": "v" * 2100}))
row("CopyObject", "destination key over 1024 bytes", "KeyTooLongError", 400,
    lambda c: c.s3.copy_object(Bucket=c.b, Key="k" * 1025,
                               CopySource={"Bucket": c.b, "Key": "obj"}))


def _copy_other_account(c):
    mine = unique("eveb")
    c.other["client"].create_bucket(Bucket=mine)
    return c.other["client"].copy_object(Bucket=mine, Key="stolen",
                                         CopySource={"Bucket": c.b, "Key": "obj"})


row("CopyObject", "other account, private source", "AccessDenied", 403, _copy_other_account)

# Multipart: create, parts, listing.
row("CreateMultipartUpload", "key over 1024 bytes", "KeyTooLongError", 400,
    lambda c: c.s3.create_multipart_upload(Bucket=c.b, Key="k" * 1025))
row("CreateMultipartUpload", "metadata over 2 KiB", "MetadataTooLarge", 400,
    lambda c: c.s3.create_multipart_upload(Bucket=c.b, Key="k", Metadata={"big": "v" * 2100}))
row("CreateMultipartUpload", "empty metadata name", "InvalidArgument", 400,
    lambda c: c.raw("POST", "/%s/k?uploads" % c.b, headers={"x-amz-meta-": "v"}))
row("CreateMultipartUpload", "unknown canned ACL", "InvalidArgument", 400,
    lambda c: c.s3.create_multipart_upload(Bucket=c.b, Key="k", ACL="no-such-acl"))
row("UploadPart", "partNumber 0", "InvalidArgument", 400,
    lambda c: c.raw("PUT", "/%s/mpu?partNumber=0&uploadId=%s"
                    % (c.b, urllib.parse.quote(c.upload())), body=b"x"))
row("UploadPart", "partNumber 10001", "InvalidArgument", 400,
    lambda c: c.raw("PUT", "/%s/mpu?partNumber=10001&uploadId=%s"
                    % (c.b, urllib.parse.quote(c.upload())), body=b"x"))
row("UploadPart", "Content-MD5 of other bytes", "BadDigest", 400,
    lambda c: c.s3.upload_part(Bucket=c.b, Key="mpu", UploadId=c.upload(), PartNumber=1,
                               Body=b"x", ContentMD5=md5_b64(b"y")))
row("UploadPart", "Content-MD5 not an MD5", "InvalidDigest", 400,
    lambda c: c.raw("PUT", "/%s/mpu?partNumber=1&uploadId=%s"
                    % (c.b, urllib.parse.quote(c.upload())), body=b"x",
                    headers={"Content-MD5": "bm90LW1kNQ=="}))
row("UploadPartCopy", "x-amz-copy-source-if-match other etag", "PreconditionFailed", 412,
    lambda c: c.s3.upload_part_copy(Bucket=c.b, Key="mpu", UploadId=c.upload(), PartNumber=1,
                                    CopySource={"Bucket": c.b, "Key": "obj"},
                                    CopySourceIfMatch='"%s"' % ("0" * 32)))
row("ListParts", "max-parts not an integer", "InvalidArgument", 400,
    lambda c: c.raw("GET", "/%s/mpu?uploadId=%s&max-parts=abc"
                    % (c.b, urllib.parse.quote(c.upload()))))
row("ListMultipartUploads", "max-uploads not an integer", "InvalidArgument", 400,
    lambda c: c.raw("GET", "/%s?uploads&max-uploads=abc" % c.b))

# Listing.
row("ListObjects", "max-keys not an integer", "InvalidArgument", 400,
    lambda c: c.raw("GET", "/%s?max-keys=abc" % c.b))
row("ListObjectsV2", "max-keys not an integer", "InvalidArgument", 400,
    lambda c: c.raw("GET", "/%s?list-type=2&max-keys=abc" % c.b))
row("ListObjectsV2", "max-keys negative", "InvalidArgument", 400,
    lambda c: c.raw("GET", "/%s?list-type=2&max-keys=-1" % c.b))
row("ListObjectsV2", "undecodable continuation-token", "InvalidArgument", 400,
    lambda c: c.raw("GET", "/%s?list-type=2&continuation-token=%%21%%21%%21" % c.b))
row("ListObjectsV2", "unknown encoding-type", "InvalidArgument", 400,
    lambda c: c.raw("GET", "/%s?list-type=2&encoding-type=bogus" % c.b))
row("ListObjectsV2", "other account, private bucket", "AccessDenied", 403,
    lambda c: c.other["client"].list_objects_v2(Bucket=c.b))
row("ListObjects", "other account, private bucket", "AccessDenied", 403,
    lambda c: c.other["client"].list_objects(Bucket=c.b))
row("ListObjectsV2", "x-amz-expected-bucket-owner mismatch", "AccessDenied", 403,
    lambda c: c.s3.list_objects_v2(Bucket=c.b, ExpectedBucketOwner="someone-else"))
row("ListBuckets", "max-buckets not an integer", "InvalidArgument", 400,
    lambda c: c.raw("GET", "/?max-buckets=abc"))

# Buckets.
row("CreateBucket", "name too short", "InvalidBucketName", 400,
    lambda c: c.s3.create_bucket(Bucket="ab"))
row("CreateBucket", "upper-case name", "InvalidBucketName", 400,
    lambda c: c.s3.create_bucket(Bucket="Upper-Case-" + c.missing))
row("CreateBucket", "underscore in name", "InvalidBucketName", 400,
    lambda c: c.s3.create_bucket(Bucket="bad_name-" + c.missing))
row("CreateBucket", "IP-address name", "InvalidBucketName", 400,
    lambda c: c.s3.create_bucket(Bucket="192.168.5.4"))
row("CreateBucket", "caller already owns it", "BucketAlreadyOwnedByYou", 409,
    lambda c: c.s3.create_bucket(Bucket=c.b))
row("CreateBucket", "another account owns it", "BucketAlreadyExists", 409,
    lambda c: c.other["client"].create_bucket(Bucket=c.b))
row("CreateBucket", "malformed configuration", "MalformedXML", 400,
    lambda c: c.raw("PUT", "/" + c.missing, body=b"<CreateBucketConfiguration><Loc"))
row("CreateBucket", "unknown canned ACL", "InvalidArgument", 400,
    lambda c: c.s3.create_bucket(Bucket=c.missing, ACL="no-such-acl"))
row("DeleteBucket", "bucket holds an object", "BucketNotEmpty", 409,
    lambda c: c.s3.delete_bucket(Bucket=c.b))
row("DeleteBucket", "other account", "AccessDenied", 403,
    lambda c: c.other["client"].delete_bucket(Bucket=c.b))
row("HeadBucket", "other account", "AccessDenied", 403,
    lambda c: c.other["client"].head_bucket(Bucket=c.b))
row("DeleteObject", "other account, private bucket", "AccessDenied", 403,
    lambda c: c.other["client"].delete_object(Bucket=c.b, Key="obj"))

# DeleteObjects (API_DeleteObjects.html: Content-MD5 or a checksum required, <= 1000 keys).
row("DeleteObjects", "malformed body", "MalformedXML", 400,
    lambda c: c.raw("POST", "/%s?delete" % c.b, body=b"<Delete><Object>",
                    headers={"Content-MD5": md5_b64(b"<Delete><Object>")}))
row("DeleteObjects", "1001 keys", "MalformedXML", 400,
    lambda c: c.s3.delete_objects(Bucket=c.b, Delete={
        "Objects": [{"Key": "k%d" % i} for i in range(1001)]}))
row("DeleteObjects", "empty body", "MissingRequestBodyError", 400,
    lambda c: c.raw("POST", "/%s?delete" % c.b, body=b"",
                    headers={"Content-MD5": md5_b64(b"")}))
row("DeleteObjects", "no Content-MD5 or checksum", "InvalidRequest", 400,
    lambda c: c.raw("POST", "/%s?delete" % c.b,
                    body=b"<Delete><Object><Key>obj</Key></Object></Delete>"))

# GetObjectAttributes.
row("GetObjectAttributes", "unknown attribute", "InvalidArgument", 400,
    lambda c: c.s3.get_object_attributes(Bucket=c.b, Key="obj", ObjectAttributes=["Bogus"]))

# Policies.
row("GetBucketPolicy", "no policy", "NoSuchBucketPolicy", 404,
    lambda c: c.s3.get_bucket_policy(Bucket=c.b))
row("GetBucketPolicyStatus", "no policy", "NoSuchBucketPolicy", 404,
    lambda c: c.s3.get_bucket_policy_status(Bucket=c.b))
row("PutBucketPolicy", "not JSON", "MalformedPolicy", 400,
    lambda c: c.s3.put_bucket_policy(Bucket=c.b, Policy="this is not json"))
row("PutBucketPolicy", "no Statement", "MalformedPolicy", 400,
    lambda c: c.s3.put_bucket_policy(Bucket=c.b, Policy='{"Version": "2012-10-17"}'))
row("PutBucketPolicy", "unknown action", "MalformedPolicy", 400,
    lambda c: c.s3.put_bucket_policy(Bucket=c.b, Policy=policy_for(c.b, action="s3:Bogus")))
row("PutBucketPolicy", "resource outside the bucket", "MalformedPolicy", 400,
    lambda c: c.s3.put_bucket_policy(Bucket=c.b, Policy=policy_for(c.missing)))
row("GetBucketPolicy", "other account", "AccessDenied", 403,
    lambda c: c.other["client"].get_bucket_policy(Bucket=c.b))


def _public_policy_blocked(c):
    c.s3.put_public_access_block(Bucket=c.b, PublicAccessBlockConfiguration={
        "BlockPublicPolicy": True})
    return c.s3.put_bucket_policy(Bucket=c.b, Policy=policy_for(c.b))


row("PutBucketPolicy", "public policy under BlockPublicPolicy", "AccessDenied", 403,
    _public_policy_blocked)

# ACLs.
BAD_PERM_ACL = {"Owner": {"ID": "admin"}, "Grants": [
    {"Grantee": {"Type": "CanonicalUser", "ID": "admin"}, "Permission": "BOGUS"}]}
ACL_XML = ('<AccessControlPolicy xmlns="%s"><Owner><ID>admin</ID></Owner><AccessControlList>'
           '</AccessControlList></AccessControlPolicy>' % POLICY_XMLNS).encode()

row("PutBucketAcl", "malformed document", "MalformedACLError", 400,
    lambda c: c.raw("PUT", "/%s?acl" % c.b, body=b"<AccessControlPolicy><Own"))
row("PutBucketAcl", "unknown permission", "MalformedACLError", 400,
    lambda c: c.s3.put_bucket_acl(Bucket=c.b, AccessControlPolicy=BAD_PERM_ACL))
row("PutBucketAcl", "document and x-amz-acl", "UnexpectedContent", 400,
    lambda c: c.raw("PUT", "/%s?acl" % c.b, body=ACL_XML, headers={"x-amz-acl": "private"}))
row("PutBucketAcl", "neither document nor headers", "MissingSecurityHeader", 400,
    lambda c: c.raw("PUT", "/%s?acl" % c.b))
row("PutBucketAcl", "unknown canned ACL", "InvalidArgument", 400,
    lambda c: c.s3.put_bucket_acl(Bucket=c.b, ACL="no-such-acl"))
row("PutObjectAcl", "unknown permission", "MalformedACLError", 400,
    lambda c: c.s3.put_object_acl(Bucket=c.b, Key="obj", AccessControlPolicy=BAD_PERM_ACL))
row("PutObjectAcl", "owner is not the object's", "AccessDenied", 403,
    lambda c: c.s3.put_object_acl(Bucket=c.b, Key="obj", AccessControlPolicy={
        "Owner": {"ID": c.other["name"]}, "Grants": []}))
row("GetObjectAcl", "other account", "AccessDenied", 403,
    lambda c: c.other["client"].get_object_acl(Bucket=c.b, Key="obj"))
row("GetBucketAcl", "other account", "AccessDenied", 403,
    lambda c: c.other["client"].get_bucket_acl(Bucket=c.b))

# Public access block.
row("GetPublicAccessBlock", "none set", "NoSuchPublicAccessBlockConfiguration", 404,
    lambda c: c.s3.get_public_access_block(Bucket=c.b))
row("PutPublicAccessBlock", "malformed document", "MalformedXML", 400,
    lambda c: c.raw("PUT", "/%s?publicAccessBlock" % c.b, body=b"<PublicAccessBlockConfig",
                    headers={"Content-MD5": md5_b64(b"<PublicAccessBlockConfig")}))

# CORS (API_GetBucketCors.html, RESTOPTIONSobject.html).
row("GetBucketCors", "none set", "NoSuchCORSConfiguration", 404,
    lambda c: c.s3.get_bucket_cors(Bucket=c.b))
row("PutBucketCors", "malformed document", "MalformedXML", 400,
    lambda c: c.raw("PUT", "/%s?cors" % c.b, body=b"<CORSConfiguration><CORSRu",
                    headers={"Content-MD5": md5_b64(b"<CORSConfiguration><CORSRu")}))
row("PutBucketCors", "unsupported method", "InvalidRequest", 400,
    lambda c: c.s3.put_bucket_cors(Bucket=c.b, CORSConfiguration={"CORSRules": [
        {"AllowedOrigins": ["*"], "AllowedMethods": ["PATCH"]}]}))
row("OPTIONS", "preflight, no CORS configuration", "AccessForbidden", 403,
    lambda c: requests.options("%s/%s/obj" % (c.srv.endpoint, c.b), headers={
        "Origin": "https://app.example", "Access-Control-Request-Method": "GET"}))
row("OPTIONS", "preflight without Origin", "BadRequest", 400,
    lambda c: requests.options("%s/%s/obj" % (c.srv.endpoint, c.b),
                               headers={"Access-Control-Request-Method": "GET"}))

# POST object (RESTObjectPOST.html).
row("PostObject", "not multipart/form-data", "PreconditionFailed", 412,
    lambda c: form_post(c, c.b, {}, raw_body=b"key=k", content_type="text/plain"))
row("PostObject", "no key field", "InvalidArgument", 400,
    lambda c: form_post(c, c.b, {"acl": "private"}))
row("PostObject", "no file part", "IncorrectNumberOfFilesInPostRequest", 400,
    lambda c: form_post(c, c.b, {"key": "k"}, file=False))
row("PostObject", "malformed multipart body", "MalformedPOSTRequest", 400,
    lambda c: form_post(c, c.b, {}, raw_body=b"--xx\r\nContent-Disposition: form-da",
                        content_type="multipart/form-data; boundary=xx"))
row("PostObject", "expired policy", "AccessDenied", 403,
    lambda c: form_post(c, c.b, v4_policy_fields(c.b, "k", expires_in=-60)))
row("PostObject", "wrong signature", "SignatureDoesNotMatch", 403,
    lambda c: form_post(c, c.b, v4_policy_fields(c.b, "k", tamper=True)))
row("PostObject", "unknown access key", "InvalidAccessKeyId", 403,
    lambda c: form_post(c, c.b, v4_policy_fields(c.b, "k", ak="NOSUCHKEY")))

# Authentication (any operation; ErrorCodeList and the SigV4 pages).
row("GetObject", "wrong secret", "SignatureDoesNotMatch", 403,
    lambda c: c.srv.client(ADMIN_KEY, "wrong-secret").get_object(Bucket=c.b, Key="obj"))
row("ListBuckets", "unknown access key", "InvalidAccessKeyId", 403,
    lambda c: c.srv.client("NOSUCHKEY", "x").list_buckets())


def _skewed(c):
    skew_clock(c, -1)
    return c.raw("GET", "/%s?list-type=2" % c.b)


def _presigned_expired(c):
    url = c.s3.generate_presigned_url("get_object", Params={"Bucket": c.b, "Key": "obj"},
                                      ExpiresIn=1)
    time.sleep(2.2)
    return requests.get(url)


def _presigned_too_long(c):
    url = c.s3.generate_presigned_url("get_object", Params={"Bucket": c.b, "Key": "obj"},
                                      ExpiresIn=604801)
    return requests.get(url)


row("ListObjectsV2", "clock skewed by an hour", "RequestTimeTooSkewed", 403, _skewed)
row("GetObject", "presigned URL dated an hour ahead", "AccessDenied", 403,
    lambda c: (skew_clock(c, 1), requests.get(c.s3.generate_presigned_url(
        "get_object", Params={"Bucket": c.b, "Key": "obj"}, ExpiresIn=60)))[1])
row("GetObject", "presigned URL expired", "AccessDenied", 403, _presigned_expired)
row("GetObject", "presigned X-Amz-Expires over 7 days", "AuthorizationQueryParametersError", 400,
    _presigned_too_long)
row("GetObject", "malformed Authorization header", "AuthorizationHeaderMalformed", 400,
    lambda c: requests.get("%s/%s/obj" % (c.srv.endpoint, c.b), headers={
        "Authorization": "AWS4-HMAC-SHA256 Credential=garbage",
        "x-amz-date": time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()),
        "x-amz-content-sha256": "UNSIGNED-PAYLOAD"}))
row("GetObject", "Signature Version 2 header", "InvalidRequest", 400,
    lambda c: requests.get("%s/%s/obj" % (c.srv.endpoint, c.b), headers={
        "Authorization": "AWS %s:c2lnbmF0dXJl" % ADMIN_KEY,
        "Date": time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime())}))

# MethodNotAllowed (405): a method the resource does not take.
row("PostObject", "POST on an object without a subresource", "MethodNotAllowed", 405,
    lambda c: c.raw("POST", "/%s/obj" % c.b, body=b"x"))

# Deleting an absent configuration is not an error on S3 (204, no body).
row("DeleteBucketCors", "none set: no error", None, 204,
    lambda c: c.s3.delete_bucket_cors(Bucket=c.b))
row("DeleteBucketPolicy", "none set: no error", None, 204,
    lambda c: c.s3.delete_bucket_policy(Bucket=c.b))
row("DeletePublicAccessBlock", "none set: no error", None, 204,
    lambda c: c.s3.delete_public_access_block(Bucket=c.b))
row("DeleteObject", "missing key: no error", None, 204,
    lambda c: c.s3.delete_object(Bucket=c.b, Key="nokey"))

# Versioning (API_GetObject.html, API_DeleteObject.html; cairn's version ids
# are 13 characters of base32, docs/s3.md).
row("GetObject", "malformed versionId", "InvalidArgument", 400,
    lambda c: c.s3.get_object(Bucket=c.b, Key="obj", VersionId="3HL4kqtJlcpXroDTDmJ"))
row("GetObject", "unknown versionId", "NoSuchVersion", 404,
    lambda c: c.s3.get_object(Bucket=c.b, Key="obj", VersionId="0000000000001"))
row("DeleteObject", "unknown versionId: no error", None, 204,
    lambda c: c.s3.delete_object(Bucket=c.b, Key="obj", VersionId="0000000000001"))

# Tagging and lifecycle configuration (API_GetBucketTagging.html,
# API_GetBucketLifecycleConfiguration.html, API_PutObjectTagging.html).
row("GetBucketTagging", "none set", "NoSuchTagSet", 404,
    lambda c: c.s3.get_bucket_tagging(Bucket=c.b))
row("GetBucketLifecycleConfiguration", "none set", "NoSuchLifecycleConfiguration", 404,
    lambda c: c.s3.get_bucket_lifecycle_configuration(Bucket=c.b))
row("GetObjectTagging", "missing key", "NoSuchKey", 404,
    lambda c: c.s3.get_object_tagging(Bucket=c.b, Key="nokey"))
row("PutObjectTagging", "aws: prefix", "InvalidTag", 400,
    lambda c: c.s3.put_object_tagging(Bucket=c.b, Key="obj", Tagging={
        "TagSet": [{"Key": "aws:x", "Value": "1"}]}))

# Documented deviations (docs/s3.md, "Deviations from S3"): cairn's own answer.
row("PutBucketVersioning", "deviation: MFA delete", "NotImplemented", 501,
    lambda c: c.s3.put_bucket_versioning(Bucket=c.b, MFA="123456 654321",
                                         VersioningConfiguration={"Status": "Enabled",
                                                                  "MFADelete": "Enabled"}))
row("PutObject", "x-amz-tagging with an aws: key", "InvalidTag", 400,
    lambda c: c.s3.put_object(Bucket=c.b, Key="k", Body=b"x", Tagging="aws:a=b"))
row("PutObject", "deviation: SSE header", "NotImplemented", 501,
    lambda c: c.s3.put_object(Bucket=c.b, Key="k", Body=b"x", ServerSideEncryption="AES256"))
row("PutObject", "deviation: non-STANDARD storage class", "NotImplemented", 501,
    lambda c: c.s3.put_object(Bucket=c.b, Key="k", Body=b"x", StorageClass="STANDARD_IA"))
row("PutObject", "If-None-Match with an ETag", "NotImplemented", 501,
    lambda c: c.raw("PUT", "/%s/obj" % c.b, body=b"x", headers={"If-None-Match": c.etag}))


# ---- the test -----------------------------------------------------------------------

def outcome(result):
    """(code, status) of what a row's request function produced."""
    if isinstance(result, (requests.Response, RawResult)):
        m = re.search(r"<Code>([^<]*)</Code>", result.text or "")
        code = m.group(1) if m else result.headers.get("x-amz-error-code")
        return code, result.status_code
    meta = result.get("ResponseMetadata", {}) if isinstance(result, dict) else {}
    return None, meta.get("HTTPStatusCode")


@pytest.mark.parametrize("operation,condition,expected_code,expected_status,fn", ROWS)
def test_error_table(s3srv, other, monkeypatch, operation, condition, expected_code,
                     expected_status, fn):
    c = Ctx(s3srv, other, monkeypatch)
    try:
        code, status = outcome(fn(c))
    except ClientError as e:
        code = e.response.get("Error", {}).get("Code")
        status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    bodyless = operation in ("HeadObject", "HeadBucket") or expected_status == 304
    got = (status,) if bodyless else (code, status)
    want = (expected_status,) if bodyless else (expected_code, expected_status)
    assert got == want, "%s / %s: cairn answered %s %s" % (operation, condition, status, code)


def test_table_covers_every_supported_operation():
    """Every operation docs/s3.md marks supported has at least one row."""
    ops = {p.values[0] for p in ROWS}
    supported = {"ListBuckets", "CreateBucket", "DeleteBucket", "HeadBucket", "GetBucketLocation",
                 "GetBucketVersioning", "ListObjects", "ListObjectsV2", "PutObject", "GetObject",
                 "HeadObject", "DeleteObject", "DeleteObjects", "CopyObject",
                 "CreateMultipartUpload", "UploadPart", "UploadPartCopy",
                 "CompleteMultipartUpload", "AbortMultipartUpload", "ListParts",
                 "ListMultipartUploads", "GetObjectAttributes", "GetBucketPolicy",
                 "PutBucketPolicy", "DeleteBucketPolicy", "GetBucketPolicyStatus", "GetBucketAcl",
                 "PutBucketAcl", "GetObjectAcl", "PutObjectAcl", "GetPublicAccessBlock",
                 "PutPublicAccessBlock", "DeletePublicAccessBlock", "PostObject", "GetBucketCors",
                 "PutBucketCors", "DeleteBucketCors", "OPTIONS"}
    assert supported <= ops, supported - ops
