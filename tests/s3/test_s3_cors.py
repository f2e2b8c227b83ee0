"""CORS through the real server: the configuration round trip and its errors,
preflight OPTIONS matches and misses (origins exact / '*' / one wildcard,
methods, requested headers), and the CORS headers on actual responses,
presigned GET and PUT and errors included."""
import pytest
import requests
from botocore.exceptions import ClientError

from s3fixtures import bucket, s3, s3srv, unique  # noqa: F401


def code(exc):
    return exc.value.response["Error"]["Code"]


RULES = [
    {"ID": "app", "AllowedOrigins": ["http://app.example.test"],
     "AllowedMethods": ["GET", "PUT", "POST"], "AllowedHeaders": ["x-amz-*", "Content-Type"],
     "ExposeHeaders": ["ETag", "x-amz-request-id"], "MaxAgeSeconds": 600},
    {"AllowedOrigins": ["https://*.partner.test"], "AllowedMethods": ["GET", "HEAD"]},
    {"AllowedOrigins": ["*"], "AllowedMethods": ["GET"]},
]


def preflight(srv, path, origin, method, headers=None):
    h = {"Origin": origin, "Access-Control-Request-Method": method}
    if headers:
        h["Access-Control-Request-Headers"] = headers
    return requests.options(srv.endpoint + path, headers=h)


@pytest.fixture
def cbucket(s3srv, s3):
    b = unique("cors")
    s3.create_bucket(Bucket=b)
    s3.put_bucket_cors(Bucket=b, CORSConfiguration={"CORSRules": RULES})
    s3.put_object(Bucket=b, Key="obj", Body=b"cors body")
    return b


def test_cors_roundtrip(s3srv, s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.get_bucket_cors(Bucket=bucket)
    assert code(e) == "NoSuchCORSConfiguration"
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": RULES})
    got = s3.get_bucket_cors(Bucket=bucket)["CORSRules"]
    assert got[0] == RULES[0]
    assert got[1] == RULES[1] and got[2] == RULES[2]
    s3.delete_bucket_cors(Bucket=bucket)
    with pytest.raises(ClientError) as e:
        s3.get_bucket_cors(Bucket=bucket)
    assert code(e) == "NoSuchCORSConfiguration"
    s3.delete_bucket_cors(Bucket=bucket)


def test_cors_config_errors(s3srv, s3, bucket):
    bad = [({"CORSRules": [{"AllowedOrigins": ["*"], "AllowedMethods": ["PATCH"]}]},
            "InvalidRequest"),
           ({"CORSRules": [{"AllowedOrigins": ["http://*.*.test"], "AllowedMethods": ["GET"]}]},
            "InvalidRequest"),
           ({"CORSRules": [{"AllowedOrigins": ["*"], "AllowedMethods": ["GET"],
                            "AllowedHeaders": ["a*b*"]}]}, "InvalidRequest"),
           ({"CORSRules": []}, "MalformedXML")]
    for cfg, want in bad:
        with pytest.raises(ClientError) as e:
            s3.put_bucket_cors(Bucket=bucket, CORSConfiguration=cfg)
        assert code(e) == want, cfg
    for body in (b"<CORSConfiguration><CORSRule><AllowedMethod>GET</AllowedMethod></CORSRule>"
                 b"</CORSConfiguration>",
                 b"<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin>"
                 b"<AllowedMethod>GET</AllowedMethod><Bogus/></CORSRule></CORSConfiguration>",
                 b"<CORSConfiguration><CORSRule>"):
        r = s3srv.signed("PUT", "/%s" % bucket, params={"cors": ""}, body=body)
        assert r.status_code == 400 and "MalformedXML" in r.text, body
    key, secret = s3srv.new_account(unique("nocors"))
    with pytest.raises(ClientError) as e:
        s3srv.client(key, secret).put_bucket_cors(Bucket=bucket,
                                                  CORSConfiguration={"CORSRules": RULES})
    assert code(e) == "AccessDenied"


def test_preflight_matches(s3srv, cbucket):
    r = preflight(s3srv, "/%s/obj" % cbucket, "http://app.example.test", "PUT",
                  "Content-Type, x-amz-meta-color")
    assert r.status_code == 200, r.text
    assert r.headers["Access-Control-Allow-Origin"] == "http://app.example.test"
    assert r.headers["Access-Control-Allow-Methods"] == "GET, PUT, POST"
    assert r.headers["Access-Control-Allow-Headers"] == "Content-Type, x-amz-meta-color"
    assert r.headers["Access-Control-Max-Age"] == "600"
    assert r.headers["Access-Control-Expose-Headers"] == "ETag, x-amz-request-id"
    assert r.headers["Access-Control-Allow-Credentials"] == "true"
    assert "Origin" in r.headers["Vary"]
    # On the bucket too (POST uploads preflight there).
    r = preflight(s3srv, "/%s" % cbucket, "http://app.example.test", "POST")
    assert r.status_code == 200
    # Wildcard origins.
    r = preflight(s3srv, "/%s/obj" % cbucket, "https://eu.partner.test", "HEAD")
    assert r.status_code == 200
    assert r.headers["Access-Control-Allow-Origin"] == "https://eu.partner.test"
    r = preflight(s3srv, "/%s/obj" % cbucket, "http://anyone.test", "GET")
    assert r.status_code == 200 and r.headers["Access-Control-Allow-Origin"] == "*"
    assert "Access-Control-Allow-Credentials" not in r.headers


def test_preflight_misses(s3srv, s3, cbucket, bucket):
    misses = [("http://app.example.test", "DELETE", None),          # method
              ("http://app.example.test", "PUT", "Authorization"),   # header not allowed
              ("http://partner.test", "HEAD", None),                 # wildcard needs a dot part
              ("https://eu.partner.test", "PUT", None),
              ("http://APP.example.test", "PUT", None)]              # origins are case-sensitive
    for origin, method, hdrs in misses:
        r = preflight(s3srv, "/%s/obj" % cbucket, origin, method, hdrs)
        assert r.status_code == 403, (origin, method, hdrs)
        assert "<Code>AccessForbidden</Code>" in r.text
        assert "Access-Control-Allow-Origin" not in r.headers
    r = preflight(s3srv, "/%s/obj" % bucket, "http://app.example.test", "GET")
    assert r.status_code == 403 and "not enabled" in r.text
    r = preflight(s3srv, "/no-such-bucket-cors/obj", "http://app.example.test", "GET")
    assert r.status_code == 403
    r = requests.options(s3srv.endpoint + "/%s/obj" % cbucket,
                         headers={"Access-Control-Request-Method": "GET"})
    assert r.status_code == 400
    r = requests.options(s3srv.endpoint + "/%s/obj" % cbucket,
                         headers={"Origin": "http://app.example.test"})
    assert r.status_code == 400


def test_actual_request_headers(s3srv, s3, cbucket):
    s3.put_object_acl(Bucket=cbucket, Key="obj", ACL="public-read")
    url = s3srv.endpoint + "/%s/obj" % cbucket
    r = requests.get(url, headers={"Origin": "http://app.example.test"})
    assert r.status_code == 200 and r.content == b"cors body"
    assert r.headers["Access-Control-Allow-Origin"] == "http://app.example.test"
    assert r.headers["Access-Control-Expose-Headers"] == "ETag, x-amz-request-id"
    assert "Origin" in r.headers["Vary"]
    r = requests.head(url, headers={"Origin": "https://x.partner.test"})
    assert r.headers["Access-Control-Allow-Origin"] == "https://x.partner.test"
    r = requests.delete(url, headers={"Origin": "http://app.example.test"})
    assert r.status_code == 403                   # anonymous delete is still refused ...
    assert "Access-Control-Allow-Origin" not in r.headers   # ... and DELETE is not allowed
    r = requests.get(url)
    assert "Access-Control-Allow-Origin" not in r.headers
    # An error answer to an allowed origin carries the headers too.
    r = requests.get(s3srv.endpoint + "/%s/missing" % cbucket,
                     headers={"Origin": "http://app.example.test"})
    assert r.status_code == 403
    assert r.headers["Access-Control-Allow-Origin"] == "http://app.example.test"


def test_presigned_get_and_put_carry_cors(s3srv, s3, cbucket):
    url = s3.generate_presigned_url("get_object", Params={"Bucket": cbucket, "Key": "obj"})
    r = requests.get(url, headers={"Origin": "http://app.example.test"})
    assert r.status_code == 200 and r.content == b"cors body"
    assert r.headers["Access-Control-Allow-Origin"] == "http://app.example.test"
    url = s3.generate_presigned_url("put_object", Params={"Bucket": cbucket, "Key": "up"})
    r = requests.put(url, data=b"from the browser", headers={"Origin": "http://app.example.test"})
    assert r.status_code == 200, r.text
    assert r.headers["Access-Control-Allow-Origin"] == "http://app.example.test"
    assert r.headers["Access-Control-Expose-Headers"] == "ETag, x-amz-request-id"
    assert s3.get_object(Bucket=cbucket, Key="up")["Body"].read() == b"from the browser"


def test_preflight_of_presigned_url_needs_no_credential(s3srv, s3, cbucket):
    # A browser preflights the presigned URL itself: the query's signature is
    # for the PUT that follows, so the OPTIONS must not be judged by it.
    url = s3.generate_presigned_url("put_object", Params={"Bucket": cbucket, "Key": "pp"})
    r = requests.options(url, headers={"Origin": "http://app.example.test",
                                       "Access-Control-Request-Method": "PUT",
                                       "Access-Control-Request-Headers": "content-type"})
    assert r.status_code == 200, r.text
    assert r.headers["Access-Control-Allow-Origin"] == "http://app.example.test"
    # A Bearer header on a preflight is ignored the same way.
    r = requests.options(s3srv.endpoint + "/%s/obj" % cbucket,
                         headers={"Origin": "http://anyone.test",
                                  "Access-Control-Request-Method": "GET",
                                  "Authorization": "Bearer nobody:nothing"})
    assert r.status_code == 200 and r.headers["Access-Control-Allow-Origin"] == "*"
