#!/usr/bin/python3
"""Rebuilds the seed corpora fuzz/corpus/http_*/ for the HTTP face's parsers
from AWS's published examples (the SigV4 test suite, the S3 header-form,
presigned and aws-chunked examples, the S3 API request bodies) and the cases
of tests/http/.  Signed aws-chunked bodies that are not AWS's own are signed
here, chained from the documented seed signatures, with the documented key.
Run from anywhere; commit the result.

  http_sigv4     flags byte + "METHOD PATH[?QUERY]\\n" + "Name: value\\n" lines
  http_awschunk  flags byte + slice byte + raw aws-chunked body
  http_xml       limits byte + split byte + XML document
  http_request   slice byte + a stream of pipelined HTTP/1.1 requests
(the byte layouts are described at the top of each fuzz_http_*.c)
"""
import hashlib
import hmac
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")

EMPTY_SHA = hashlib.sha256(b"").hexdigest()
S3_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
S3_DATE = "20130524T000000Z"
S3_SCOPE = "20130524/us-east-1/s3/aws4_request"
SEED_STREAMING = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
SEED_TRAILER = "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e"

# sigv4 flags (fuzz_http_sigv4.c)
BODY, REGION, SUITE_SERVICE, SUITE_CLOCK, ANY_SKEW, LATER = 1, 2, 4, 8, 16, 32


def write(harness, name, data):
    d = os.path.join(CORPUS, harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def request(flags, line, headers):
    text = line + "\n" + "".join("%s: %s\n" % h for h in headers)
    return bytes([flags]) + text.encode()


def suite_auth(signed, sig):
    return ("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
            "SignedHeaders=%s, Signature=%s" % (signed, sig))


def s3_auth(signed, sig):
    return ("AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
            "SignedHeaders=%s,Signature=%s" % (signed, sig))


def sigv4():
    host = ("Host", "example.amazonaws.com")
    date = ("X-Amz-Date", "20150830T123600Z")
    f = SUITE_SERVICE | SUITE_CLOCK
    vectors = {
        "get_vanilla": ("GET /", [host, date, ("Authorization", suite_auth(
            "host;x-amz-date", "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"))]),
        "get_vanilla_query_order_key_case": ("GET /?Param2=value2&Param1=value1", [host, date, (
            "Authorization", suite_auth("host;x-amz-date",
                                        "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"))]),
        "get_vanilla_query_order_key": ("GET /?Param1=value2&Param1=Value1", [host, date, (
            "Authorization", suite_auth("host;x-amz-date",
                                        "eedbc4e291e521cf13422ffca22be7d2eb8146eecf653089df300a15b2382bd1"))]),
        "get_vanilla_empty_query_key": ("GET /?Param1=value1", [host, date, (
            "Authorization", suite_auth("host;x-amz-date",
                                        "a67d582fa61cc504c4bae71f336f98b97f1ea3c7a6bfe1b6e45aec72011b9aeb"))]),
        "get_header_key_duplicate": ("GET /", [host, ("My-Header1", "value2"), ("My-Header1", "value2"),
                                               ("My-Header1", "value1"), date, ("Authorization", suite_auth(
            "host;my-header1;x-amz-date", "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea"))]),
        "get_header_value_order": ("GET /", [host, ("My-Header1", "value4"), ("My-Header1", "value1"),
                                             ("My-Header1", "value3"), ("My-Header1", "value2"), date,
                                             ("Authorization", suite_auth(
            "host;my-header1;x-amz-date", "08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01"))]),
        "post_vanilla": ("POST /", [host, date, ("Authorization", suite_auth(
            "host;x-amz-date", "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"))]),
    }
    for name, (line, hdrs) in vectors.items():
        write("http_sigv4", name, request(f, line, hdrs))

    bucket = ("Host", "examplebucket.s3.amazonaws.com")
    s3date = ("x-amz-date", S3_DATE)
    write("http_sigv4", "s3_get_object", request(REGION, "GET /test.txt", [
        bucket, ("Range", "bytes=0-9"), ("x-amz-content-sha256", EMPTY_SHA), s3date,
        ("Authorization", s3_auth("host;range;x-amz-content-sha256;x-amz-date",
                                  "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"))]))
    write("http_sigv4", "s3_put_object", request(BODY, "PUT /test%24file.text", [
        bucket, ("Date", "Fri, 24 May 2013 00:00:00 GMT"), s3date,
        ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
        ("x-amz-content-sha256", "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"),
        ("Authorization", s3_auth("date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class",
                                  "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"))]))
    write("http_sigv4", "s3_get_lifecycle", request(0, "GET /?lifecycle", [
        bucket, s3date, ("x-amz-content-sha256", EMPTY_SHA),
        ("Authorization", s3_auth("host;x-amz-content-sha256;x-amz-date",
                                  "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"))]))
    write("http_sigv4", "s3_list_objects", request(0, "GET /?max-keys=2&prefix=J", [
        bucket, s3date, ("x-amz-content-sha256", EMPTY_SHA),
        ("Authorization", s3_auth("host;x-amz-content-sha256;x-amz-date",
                                  "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"))]))
    presign = ("X-Amz-Algorithm=AWS4-HMAC-SHA256"
               "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
               "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
               "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404")
    write("http_sigv4", "s3_presigned", request(LATER, "GET /test.txt?" + presign, [bucket]))
    write("http_sigv4", "s3_presigned_too_long", request(
        0, "GET /test.txt?" + presign.replace("Expires=86400", "Expires=604801"), [bucket]))
    write("http_sigv4", "s3_streaming", request(BODY, "PUT /examplebucket/chunkObject.txt", [
        ("Host", "s3.amazonaws.com"), s3date, ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
        ("x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"),
        ("Content-Encoding", "aws-chunked"), ("x-amz-decoded-content-length", "66560"),
        ("Content-Length", "66824"),
        ("Authorization", s3_auth("content-encoding;content-length;host;x-amz-content-sha256;"
                                  "x-amz-date;x-amz-decoded-content-length;x-amz-storage-class",
                                  "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"))]))
    write("http_sigv4", "s3_streaming_trailer", request(BODY, "PUT /examplebucket/chunkObject.txt", [
        ("Host", "s3.amazonaws.com"), s3date, ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
        ("x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"),
        ("Content-Encoding", "aws-chunked"), ("x-amz-decoded-content-length", "66560"),
        ("x-amz-trailer", "x-amz-checksum-crc32c"),
        ("Authorization", s3_auth("content-encoding;host;x-amz-content-sha256;x-amz-date;"
                                  "x-amz-decoded-content-length;x-amz-storage-class;x-amz-trailer",
                                  "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e"))]))
    # A body without x-amz-content-sha256: the signature waits for the body hash.
    write("http_sigv4", "deferred_body", request(BODY | ANY_SKEW, "PUT /b/k", [
        bucket, s3date, ("Authorization", s3_auth("host;x-amz-date", "0" * 64))]))
    write("http_sigv4", "unsigned_trailer", request(BODY | ANY_SKEW, "PUT /b/k%2Fa+b", [
        bucket, s3date, ("x-amz-content-sha256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER"),
        ("Authorization", s3_auth("host;x-amz-content-sha256;x-amz-date", "a" * 64))]))
    write("http_sigv4", "http_date_only", request(ANY_SKEW, "GET /", [
        bucket, ("Date", "Fri, 24 May 2013 00:00:00 GMT"),
        ("Authorization", s3_auth("date;host", "b" * 64))]))
    write("http_sigv4", "broken_lookup", request(ANY_SKEW, "GET /", [
        bucket, s3date, ("Authorization", s3_auth("host", "c" * 64).replace(
            "AKIAIOSFODNN7EXAMPLE", "BROKEN"))]))
    write("http_sigv4", "sigv4a", request(0, "GET /", [
        bucket, s3date, ("Authorization", "AWS4-ECDSA-P256-SHA256 Credential=x/20130524/us-east-1/s3/"
                         "aws4_request,SignedHeaders=host,Signature=" + "d" * 64)]))
    write("http_sigv4", "both_forms", request(0, "GET /?X-Amz-Algorithm=AWS4-HMAC-SHA256", [
        bucket, ("Authorization", s3_auth("host", "e" * 64))]))
    write("http_sigv4", "no_credential", request(0, "GET /?a=b", [("Host", "x")]))
    write("http_sigv4", "malformed", request(0, "GET /", [
        ("Host", "x"), ("Authorization", "AWS4-HMAC-SHA256 Credential=x")]))
    write("http_sigv4", "encoded_path", request(0, "GET /a%20b/c%2Bd+e/%E2%82%AC~?x=%2F&y", [
        ("Host", "  example.com "), ("X-A", "a   b \t c"), s3date]))
    write("http_sigv4", "bad_dates", request(0, "GET /", [
        ("X-Amz-Date", "20130231T000000Z"), ("X-Date", "20131301T000000Z"),
        ("Y-Date", "20130524T236060Z")]))


def signing_key(secret, date8, region, service):
    k = hmac.new(("AWS4" + secret).encode(), date8.encode(), hashlib.sha256).digest()
    for part in (region, service, "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    return k


KEY = signing_key(S3_SECRET, S3_DATE[:8], "us-east-1", "s3")


def hmac_hex(sts):
    return hmac.new(KEY, sts.encode(), hashlib.sha256).hexdigest()


def signed_body(seed, chunks, trailers=None, ext=""):
    """aws-chunked body with chained chunk signatures (and a trailer signature)."""
    out, prev = b"", seed
    for data in list(chunks) + [b""]:
        sig = hmac_hex("AWS4-HMAC-SHA256-PAYLOAD\n%s\n%s\n%s\n%s\n%s" % (
            S3_DATE, S3_SCOPE, prev, EMPTY_SHA, hashlib.sha256(data).hexdigest()))
        out += b"%x%s;chunk-signature=%s\r\n" % (len(data), ext.encode(), sig.encode())
        if data:
            out += data + b"\r\n"
        prev = sig
    if trailers is not None:
        canon = "".join("%s:%s\n" % t for t in trailers)
        tsig = hmac_hex("AWS4-HMAC-SHA256-TRAILER\n%s\n%s\n%s\n%s" % (
            S3_DATE, S3_SCOPE, prev, hashlib.sha256(canon.encode()).hexdigest()))
        out += "".join("%s:%s\r\n" % t for t in trailers).encode()
        out += b"x-amz-trailer-signature:" + tsig.encode() + b"\r\n"
    return out + b"\r\n"


def awschunk():
    SIGNED, TRAILER, CAP, TRAILER_SEED = 1, 2, 4, 8
    aws = (b"10000;chunk-signature=ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648\r\n"
           + b"a" * 65536 +
           b"\r\n400;chunk-signature=0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497\r\n"
           + b"a" * 1024 +
           b"\r\n0;chunk-signature=b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9\r\n")
    assert signed_body(SEED_STREAMING, [b"a" * 65536, b"a" * 1024]) == aws + b"\r\n"
    write("http_awschunk", "aws_streaming", bytes([SIGNED, 100]) + aws + b"\r\n")
    aws_tr = aws.replace(b"ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
                         b"b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2") \
        .replace(b"0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
                 b"1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7") \
        .replace(b"b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
                 b"2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992")
    aws_tr += (b"x-amz-checksum-crc32c:sOO8/Q==\r\n"
               b"x-amz-trailer-signature:d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435\r\n"
               b"\r\n")
    assert signed_body(SEED_TRAILER, [b"a" * 65536, b"a" * 1024],
                       [("x-amz-checksum-crc32c", "sOO8/Q==")]) == aws_tr
    write("http_awschunk", "aws_streaming_trailer", bytes([SIGNED | TRAILER | TRAILER_SEED, 200]) + aws_tr)
    # Small signed bodies, so mutations stay cheap.
    write("http_awschunk", "signed_small", bytes([SIGNED, 7]) +
          signed_body(SEED_STREAMING, [b"hello", b" world"]))
    write("http_awschunk", "signed_one_byte_slices", bytes([SIGNED, 1]) +
          signed_body(SEED_STREAMING, [b"x" * 40]))
    write("http_awschunk", "signed_ext", bytes([SIGNED, 13]) +
          signed_body(SEED_STREAMING, [b"abc"], ext=";x=y"))
    write("http_awschunk", "signed_empty", bytes([SIGNED, 3]) + signed_body(SEED_STREAMING, []))
    write("http_awschunk", "signed_trailers", bytes([SIGNED | TRAILER | TRAILER_SEED, 5]) +
          signed_body(SEED_TRAILER, [b"hello world"],
                      [("x-amz-checksum-crc32", "DUoRhQ=="), ("x-amz-meta-a", "b")]))
    write("http_awschunk", "signed_cap", bytes([SIGNED | CAP, 1]) +
          signed_body(SEED_STREAMING, [b"z" * 100]))
    write("http_awschunk", "unsigned_trailer", bytes([TRAILER, 6]) +
          b"5\r\nhello\r\n6\r\n world\r\n0\r\nx-amz-checksum-crc32:DUoRhQ==\r\n\r\n")
    write("http_awschunk", "unsigned_plain", bytes([0, 2]) + b"5\r\nhello\r\nA\r\n0123456789\r\n0\r\n\r\n")
    write("http_awschunk", "unsigned_upper_hex", bytes([0, 4]) + b"1F\r\n" + b"q" * 31 + b"\r\n0\n\n")
    write("http_awschunk", "unsigned_cap", bytes([CAP, 1]) + b"41\r\n" + b"r" * 65 + b"\r\n0\r\n\r\n")
    write("http_awschunk", "bad_hex", bytes([TRAILER, 1]) + b"zz\r\n")
    write("http_awschunk", "bad_data_end", bytes([TRAILER, 3]) + b"5\r\nhelloXX")
    write("http_awschunk", "bad_extra", bytes([TRAILER, 9]) + b"5;x\r\nhello\r\n0\r\n\r\nextra")
    write("http_awschunk", "trailer_unsigned_sig", bytes([TRAILER, 50]) +
          b"0\r\nx-amz-trailer-signature:" + b"0" * 64 + b"\r\n\r\n")
    write("http_awschunk", "huge_size", bytes([0, 8]) + b"ffffffffffffffff\r\nabc")


def xml():
    NS = 'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"'
    docs = {
        "complete_multipart": (100, '<?xml version="1.0"?>\n<CompleteMultipartUpload %s>'
                               '  <Part><PartNumber>1</PartNumber><ETag>"a&amp;b"</ETag></Part>\n'
                               '  <Part><PartNumber>2</PartNumber><ETag>&quot;cd&quot;</ETag></Part>'
                               '</CompleteMultipartUpload>' % NS),
        "complete_multipart_checksums": (
            0x80, '<CompleteMultipartUpload %s><Part><ChecksumCRC32>DUoRhQ==</ChecksumCRC32>'
            '<ETag>"e1"</ETag><PartNumber>1</PartNumber></Part></CompleteMultipartUpload>' % NS),
        "delete_quiet": (10, "<Delete><Quiet>true</Quiet><Object><Key>a b</Key></Object></Delete>"),
        "delete_versions": (0x80, '<?xml version="1.0" encoding="UTF-8"?><Delete %s><Object>'
                            '<Key>sample1.txt</Key></Object><Object><Key>sample2.txt</Key>'
                            '<VersionId>OYcLXagmS.WaD..oyH4KRguB95_YhLs7</VersionId></Object>'
                            '</Delete>' % NS),
        "tagging": (0x80, '<Tagging %s><TagSet><Tag><Key>Project</Key><Value>Project One</Value>'
                    '</Tag><Tag><Key>User</Key><Value>jsmith</Value></Tag></TagSet></Tagging>' % NS),
        "create_bucket": (4, '<CreateBucketConfiguration %s><LocationConstraint>eu-west-1'
                          '</LocationConstraint></CreateBucketConfiguration>' % NS),
        "acl": (0x80, '<AccessControlPolicy xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">'
                '<Owner><ID>alice</ID><DisplayName>alice</DisplayName></Owner><AccessControlList>'
                '<Grant><Grantee xsi:type="Group"><URI>http://acs.amazonaws.com/groups/global/AllUsers'
                '</URI></Grantee><Permission>READ</Permission></Grant></AccessControlList>'
                '</AccessControlPolicy>'),
        "cors": (0x80, '<CORSConfiguration><CORSRule><AllowedOrigin>http://www.example.com'
                 '</AllowedOrigin><AllowedMethod>PUT</AllowedMethod><AllowedHeader>*</AllowedHeader>'
                 '<MaxAgeSeconds>3000</MaxAgeSeconds><ExposeHeader>x-amz-server-side-encryption'
                 '</ExposeHeader></CORSRule></CORSConfiguration>'),
        "versioning": (3, '<VersioningConfiguration %s><Status>Enabled</Status>'
                       '</VersioningConfiguration>' % NS),
        "prefixed_ns": (8, '<s3:Delete xmlns:s3="http://s3.amazonaws.com/doc/2006-03-01/">'
                        '<s3:Object><s3:Key>k</s3:Key></s3:Object></s3:Delete>'),
        "comment_cdata_pi": (8, '<?xml version="1.0"?><!-- c --><a><?pi x?><b><![CDATA[<x>&]]></b>'
                             '<c>&#x20AC;&#65;&lt;</c></a><!-- end -->'),
        "mixed_content": (8, "<a>text<b>x</b>more</a>"),
        "utf16_decl": (8, '<?xml version="1.0" encoding="UTF-16"?><a/>'),
        "deep": (0x80, "<a>" * 70 + "</a>" * 70),
        "too_many": (2, "<Delete><Quiet>true</Quiet><Object><Key>a b</Key></Object></Delete>"),
        "bad_nesting": (100, "<a><b></a>"),
        "empty": (100, ""),
        "two_roots": (100, "<a/><b/>"),
        "doctype_entity": (100, '<!DOCTYPE a [<!ENTITY x "xxxxxxxx">]><a>&x;</a>'),
        "billion_laughs": (100, '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
                           '<!ENTITY lol2 "&lol;&lol;&lol;&lol;">]><lolz>&lol2;</lolz>'),
        "external_entity": (100, '<!DOCTYPE a [<!ENTITY x SYSTEM "file:///etc/passwd">]><a>&x;</a>'),
        "undefined_prefix": (100, "<x:a/>"),
        "nul_ref": (100, "<a>&#0;</a>"),
    }
    for name, (limits, doc) in docs.items():
        write("http_xml", name, bytes([limits, 128]) + doc.encode())


def wire():
    """http_request: the cases of tests/http/test_http_conformance.py and the
    framing an S3 client sends, whole streams of pipelined requests."""
    get = b"GET /bucket/key?list-type=2&prefix=a%20b HTTP/1.1\r\nHost: x\r\n\r\n"
    put = (b"PUT /bucket/k HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
           b"x-amz-content-sha256: UNSIGNED-PAYLOAD\r\nExpect: 100-continue\r\n\r\nhello")
    chunked = (b"PUT /echo/c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"5;name=value\r\nhello\r\n6;a;b=\"q\"\r\n world\r\n0\r\nX-Check: 1\r\n\r\n")
    aws = (b"PUT /b/k HTTP/1.1\r\nHost: x\r\nContent-Encoding: aws-chunked\r\n"
           b"x-amz-decoded-content-length: 3\r\nContent-Length: 8\r\n\r\n3\r\nabc\r\n")
    streams = {
        "pipelined": (7, get + put + get.replace(b"GET", b"HEAD")),
        "chunked_ext_trailer": (3, chunked + get),
        "aws_chunked": (0, aws + get),
        "http10": (1, b"GET / HTTP/1.0\r\n\r\nGET /x HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"),
        "two_lengths": (5, b"PUT / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd"),
        "negative_length": (2, b"PUT / HTTP/1.1\r\nContent-Length: -3\r\n\r\nabc"),
        "overflow_length": (9, b"PUT / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n"),
        "smuggle": (4, b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n"
                       b"0\r\n\r\nGET /admin HTTP/1.1\r\n\r\n"),
        "no_version": (6, b"GET /whoami\r\nHost: x\r\n\r\n"),
        "gzip_coding": (11, b"PUT / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\nabc"),
        "folded_and_spaces": (13, b"GET / HTTP/1.1\r\nA:   x y  \r\nEmpty:\r\nB:\t v\r\n\r\n"),
        "many_fields": (200, b"GET / HTTP/1.1\r\n" +
                        b"".join(b"X-F%d: v\r\n" % i for i in range(300)) + b"\r\n"),
        "connect": (8, b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com\r\n\r\n"),
        "upgrade": (8, b"GET / HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
                       b"after"),
        "absolute_target": (16, b"GET http://host/b/k?x=1 HTTP/1.1\r\n\r\n"),
    }
    for name, (slice_byte, stream) in streams.items():
        write("http_request", name, bytes([slice_byte]) + stream)


def main():
    for h in ("http_sigv4", "http_awschunk", "http_xml", "http_request"):
        shutil.rmtree(os.path.join(CORPUS, h), ignore_errors=True)
    sigv4()
    awschunk()
    xml()
    wire()


if __name__ == "__main__":
    main()
