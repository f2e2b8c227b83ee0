#!/usr/bin/python3
"""Rebuilds the seed corpus fuzz/corpus/s3_forms/ for fuzz_s3_forms.c: form
bodies as browsers and SDKs send them (boto3-style presigned POST fields, a
file with delimiter look-alikes, a truncated body), POST policy documents
with their fields, AccessControlPolicy and CORSConfiguration documents, and
x-amz-grant-* values.  Run from anywhere; commit the result.

  mode byte (0 form, 1 policy, 2 ACL/CORS XML, 3 grant header) + split byte
  + payload (layouts at the top of fuzz_s3_forms.c)
"""
import json
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "s3_forms")


def form(boundary, fields, file_data=b"hello", close=True):
    b = boundary.encode()
    out = b""
    for k, v in fields:
        out += b"--" + b + b"\r\nContent-Disposition: form-data; name=\"" + k.encode() + \
               b"\"\r\n\r\n" + v.encode() + b"\r\n"
    out += b"--" + b + b"\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"" \
           b"\r\nContent-Type: text/plain\r\n\r\n" + file_data
    if close:
        out += b"\r\n--" + b + b"--\r\n"
    return b + b"\n" + out


FIELDS = [("key", "uploads/${filename}"), ("x-amz-algorithm", "AWS4-HMAC-SHA256"),
          ("x-amz-credential", "AKID/20260101/us-east-1/s3/aws4_request"),
          ("x-amz-date", "20260101T000000Z"), ("policy", "eyJ9"), ("x-amz-signature", "0" * 64)]

seeds = {
    "form_sdk": (0, 128, form("----WebKitFormBoundary7MA4YWxkTrZu0gW", FIELDS)),
    "form_lookalike": (0, 77, form("b0undary", [("key", "k")],
                                   b"\r\n--b0undar\r\n-\r\n--b0undarX\r\r\n" * 4)),
    "form_truncated": (0, 200, form("xYz", [("key", "k")], close=False)),
    "form_preamble": (0, 10, b"zz\npreamble\r\n--zz\r\nContent-Disposition: form-data; "
                             b"name=\"a\"\r\n\r\n1\r\n--zz--\r\nepilogue"),
    "policy_ok": (1, 0, json.dumps({"expiration": "2030-01-01T00:00:00.000Z", "conditions": [
        {"bucket": "bucket"}, ["starts-with", "$key", "up/"], {"acl": "public-read"},
        ["content-length-range", 1, 1048576], ["eq", "$Content-Type", "text/plain"]]}).encode()
        + b"\0key=up/x\nacl=public-read\nContent-Type=text/plain\npolicy=x\nx-ignore-a=1"),
    "policy_expired": (1, 0, json.dumps({"expiration": "2001-01-01T00:00:00Z",
                                         "conditions": []}).encode() + b"\0key=k"),
    "policy_extra": (1, 0, json.dumps({"expiration": "2030-01-01T00:00:00Z", "conditions": [
        {"key": "k"}]}).encode() + b"\0key=k\nx-amz-meta-a=b"),
    "acl_xml": (2, 0, b'<AccessControlPolicy xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
                      b'<Owner><ID>owner</ID><DisplayName>owner</DisplayName></Owner>'
                      b'<AccessControlList><Grant><Grantee xmlns:xsi="http://www.w3.org/2001/'
                      b'XMLSchema-instance" xsi:type="CanonicalUser"><ID>owner</ID></Grantee>'
                      b'<Permission>FULL_CONTROL</Permission></Grant><Grant><Grantee><URI>'
                      b'http://acs.amazonaws.com/groups/global/AllUsers</URI></Grantee>'
                      b'<Permission>READ</Permission></Grant><Grant><Grantee><EmailAddress>'
                      b'bob@x.test</EmailAddress></Grantee><Permission>WRITE_ACP</Permission>'
                      b'</Grant></AccessControlList></AccessControlPolicy>'),
    "cors_xml": (2, 0, b"<CORSConfiguration><CORSRule><ID>a</ID><AllowedHeader>x-amz-*"
                       b"</AllowedHeader><AllowedMethod>GET</AllowedMethod><AllowedMethod>PUT"
                       b"</AllowedMethod><AllowedOrigin>https://*.a.test</AllowedOrigin>"
                       b"<ExposeHeader>ETag</ExposeHeader><MaxAgeSeconds>600</MaxAgeSeconds>"
                       b"</CORSRule><CORSRule><AllowedMethod>HEAD</AllowedMethod><AllowedOrigin>*"
                       b"</AllowedOrigin></CORSRule></CORSConfiguration>"),
    "grant_mixed": (3, 0, b'id="alice", emailAddress="bob@x.test", '
                          b'uri="http://acs.amazonaws.com/groups/global/AuthenticatedUsers"'),
    "grant_bare": (3, 0, b"uri=http://acs.amazonaws.com/groups/global/AllUsers,id=carol"),
}

shutil.rmtree(OUT, ignore_errors=True)
os.makedirs(OUT)
for name, (mode, split, payload) in seeds.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(bytes([mode, split]) + payload)
print("%d seeds in %s" % (len(seeds), OUT))
