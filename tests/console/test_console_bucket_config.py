"""A bucket's configurations through the web console's API against a real
cairnd (docs/console.md, "Bucket configuration"): visibility, lifecycle, CORS
and object lock round-trip as JSON in the AWS SDK shape, are the documents S3
reads back (and S3's are read back here), refuse bad input with the S3 face's
codes and reasons, and refuse another account with AccessDenied."""
import pytest
from botocore.exceptions import ClientError

from test_console_api import Api, fetch, new_token, s3_client


@pytest.fixture
def node(server_factory):
    return server_factory(args=["--jay", "off", "--scribe", "off", "--http", "127.0.0.1:0"],
                          wait_for=("http",))


def refused(api, method, path, doc, status, code):
    st, _, err = api.call(method, path, doc)
    assert (st, err["error"]) == (status, code), (method, path, doc, st, err)
    assert err["message"]
    return err["message"]


def s3_code(fn, **kw):
    with pytest.raises(ClientError) as e:
        fn(**kw)
    return e.value.response["Error"]["Code"]


def test_visibility_set_lets_anyone_list_the_bucket(node):
    """Public is the native visibility: the bucket ACL public-read, so an
    anonymous caller may list the keys (objects keep their own ACLs)."""
    api = Api(node.addrs["http"])
    api.ok("POST", "buckets", {"name": "pics"}, 201)
    s3_client(node.addrs["http"]).put_object(Bucket="pics", Key="cat.jpg", Body=b"meow")
    url = "http://%s:%d/pics" % node.addrs["http"]
    assert fetch(url)[0] == 403
    assert api.raw("PUT", "buckets/pics/visibility", {"public": True})[0] == 204
    assert api.ok("GET", "buckets/pics")["public"] is True
    st, _, body = fetch(url)
    assert st == 200 and b"<Key>cat.jpg</Key>" in body
    acl = s3_client(node.addrs["http"]).get_bucket_acl(Bucket="pics")["Grants"]
    assert any(g["Grantee"].get("URI", "").endswith("/AllUsers") and g["Permission"] == "READ"
               for g in acl)
    assert api.raw("PUT", "buckets/pics/visibility", {"public": False})[0] == 204
    assert api.ok("GET", "buckets/pics")["public"] is False
    assert fetch(url)[0] == 403
    refused(api, "PUT", "buckets/pics/visibility", {"public": "yes"}, 400, "InvalidArgument")
    refused(api, "PUT", "buckets/nope/visibility", {"public": True}, 404, "NoSuchBucket")


RULE = {"ID": "old-logs", "Status": "Enabled", "Filter": {"Prefix": "logs/"},
        "Expiration": {"Days": 30}, "NoncurrentVersionExpiration": {"NoncurrentDays": 7},
        "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 2}}


def test_lifecycle_round_trips_and_is_what_s3_reads(node):
    api = Api(node.addrs["http"])
    s3 = s3_client(node.addrs["http"])
    api.ok("POST", "buckets", {"name": "logs"}, 201)
    assert api.ok("GET", "buckets/logs/lifecycle") == {"configuration": None}
    assert api.raw("PUT", "buckets/logs/lifecycle", {"configuration": {"Rules": [RULE]}})[0] == 204
    assert api.ok("GET", "buckets/logs/lifecycle")["configuration"] == {"Rules": [RULE]}
    assert s3.get_bucket_lifecycle_configuration(Bucket="logs")["Rules"] == [RULE]
    # A configuration S3 wrote reads back in the same shape boto3 gives it.
    tagged = {"ID": "tmp", "Status": "Disabled",
              "Filter": {"And": {"Prefix": "tmp/", "Tags": [{"Key": "k", "Value": "v"}],
                                 "ObjectSizeGreaterThan": 10}},
              "Expiration": {"Days": 1}}
    s3.put_bucket_lifecycle_configuration(Bucket="logs",
                                          LifecycleConfiguration={"Rules": [RULE, tagged]})
    assert api.ok("GET", "buckets/logs/lifecycle")["configuration"] == {"Rules": [RULE, tagged]}
    # A rule without an ID is given one, as on S3.
    anon = {"Status": "Enabled", "Prefix": "", "Expiration": {"ExpiredObjectDeleteMarker": True}}
    assert api.raw("PUT", "buckets/logs/lifecycle", {"configuration": {"Rules": [anon]}})[0] == 204
    got = api.ok("GET", "buckets/logs/lifecycle")["configuration"]["Rules"][0]
    assert len(got.pop("ID")) == 32 and got == anon
    assert api.raw("DELETE", "buckets/logs/lifecycle")[0] == 204
    assert api.ok("GET", "buckets/logs/lifecycle") == {"configuration": None}
    assert s3_code(s3.get_bucket_lifecycle_configuration,
                   Bucket="logs") == "NoSuchLifecycleConfiguration"
    assert api.raw("DELETE", "buckets/logs/lifecycle")[0] == 204


@pytest.mark.parametrize("rule,status,code,why", [
    (dict(RULE, Expiration={"Days": 0}), 400, "InvalidArgument", "positive"),
    ({"ID": "x", "Filter": {"Prefix": ""}, "Expiration": {"Days": 1}}, 400, "InvalidArgument",
     "Status"),
    ({"ID": "x", "Status": "Enabled", "Filter": {"Prefix": ""}}, 400, "InvalidRequest", "action"),
    (dict(RULE, Transitions=[{"Days": 1, "StorageClass": "GLACIER"}]), 400, "InvalidArgument",
     "Transitions"),
    (dict(RULE, Transition={"Days": 1, "StorageClass": "GLACIER"}), 501, "NotImplemented",
     "storage class"),
    (dict(RULE, Bogus=1), 400, "InvalidArgument", "Bogus"),
    (dict(RULE, Expiration={"Days": 1.5}), 400, "InvalidArgument", "Days"),
    (dict(RULE, ID="a" * 256), 400, "InvalidArgument", "255"),
])
def test_lifecycle_bad_rules_get_the_s3_faces_answer(node, rule, status, code, why):
    api = Api(node.addrs["http"])
    api.ok("POST", "buckets", {"name": "logs"}, 201)
    msg = refused(api, "PUT", "buckets/logs/lifecycle", {"configuration": {"Rules": [rule]}},
                  status, code)
    assert why in msg, msg
    assert api.ok("GET", "buckets/logs/lifecycle") == {"configuration": None}


def test_lifecycle_malformed_bodies(node):
    api = Api(node.addrs["http"])
    api.ok("POST", "buckets", {"name": "logs"}, 201)
    for doc in ({}, {"configuration": []}, {"configuration": {"Rules": []}},
                {"configuration": {"Rules": [[RULE]]}}, {"configuration": {"<x>": 1}}):
        refused(api, "PUT", "buckets/logs/lifecycle", doc, 400, "InvalidArgument")
    refused(api, "GET", "buckets/nope/lifecycle", None, 404, "NoSuchBucket")


CORS = {"AllowedHeaders": ["*"], "AllowedMethods": ["GET", "PUT"],
        "AllowedOrigins": ["https://app.example"], "ExposeHeaders": ["ETag"],
        "MaxAgeSeconds": 600}


def test_cors_round_trips_and_answers_preflights(node):
    api = Api(node.addrs["http"])
    s3 = s3_client(node.addrs["http"])
    api.ok("POST", "buckets", {"name": "web"}, 201)
    assert api.ok("GET", "buckets/web/cors") == {"configuration": None}
    assert api.raw("PUT", "buckets/web/cors", {"configuration": {"CORSRules": [CORS]}})[0] == 204
    assert api.ok("GET", "buckets/web/cors")["configuration"] == {"CORSRules": [CORS]}
    assert s3.get_bucket_cors(Bucket="web")["CORSRules"] == [CORS]
    import urllib.request
    req = urllib.request.Request("http://%s:%d/web/x" % node.addrs["http"], method="OPTIONS",
                                 headers={"Origin": "https://app.example",
                                          "Access-Control-Request-Method": "PUT"})
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.headers["Access-Control-Allow-Origin"] == "https://app.example"
    msg = refused(api, "PUT", "buckets/web/cors",
                  {"configuration": {"CORSRules": [dict(CORS, AllowedMethods=["PATCH"])]}},
                  400, "InvalidRequest")
    assert "PATCH" in msg
    refused(api, "PUT", "buckets/web/cors",
            {"configuration": {"CORSRules": [{"AllowedOrigins": ["*"]}]}}, 400, "InvalidArgument")
    refused(api, "PUT", "buckets/web/cors",
            {"configuration": {"CORSRules": [dict(CORS, AllowedOrigins=["*.*.x"])]}},
            400, "InvalidRequest")
    assert api.ok("GET", "buckets/web/cors")["configuration"] == {"CORSRules": [CORS]}
    assert api.raw("DELETE", "buckets/web/cors")[0] == 204
    assert api.ok("GET", "buckets/web/cors") == {"configuration": None}
    assert s3_code(s3.get_bucket_cors, Bucket="web") == "NoSuchCORSConfiguration"


def test_object_lock_create_and_default_retention(node):
    api = Api(node.addrs["http"])
    s3 = s3_client(node.addrs["http"])
    api.ok("POST", "buckets", {"name": "plain"}, 201)
    assert api.ok("GET", "buckets/plain/object-lock") == {"configuration": None}
    refused(api, "PUT", "buckets/plain/object-lock",
            {"configuration": {"ObjectLockEnabled": "Enabled"}}, 409, "InvalidBucketState")
    assert api.ok("POST", "buckets", {"name": "vault", "object_lock": True}, 201) == {
        "name": "vault"}
    assert api.ok("GET", "buckets/vault")["versioning"] == "Enabled"
    assert api.ok("GET", "buckets/vault/object-lock") == {
        "configuration": {"ObjectLockEnabled": "Enabled"}}
    conf = {"ObjectLockEnabled": "Enabled",
            "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 5}}}
    assert api.raw("PUT", "buckets/vault/object-lock", {"configuration": conf})[0] == 204
    assert api.ok("GET", "buckets/vault/object-lock") == {"configuration": conf}
    assert s3.get_object_lock_configuration(Bucket="vault")["ObjectLockConfiguration"] == conf
    s3.put_object(Bucket="vault", Key="k", Body=b"kept")
    assert s3.head_object(Bucket="vault", Key="k")["ObjectLockMode"] == "GOVERNANCE"
    bad = {"ObjectLockEnabled": "Enabled",
           "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 0}}}
    refused(api, "PUT", "buckets/vault/object-lock", {"configuration": bad}, 400,
            "InvalidRetentionPeriod")
    bad["Rule"]["DefaultRetention"] = {"Mode": "FOREVER", "Days": 1}
    refused(api, "PUT", "buckets/vault/object-lock", {"configuration": bad}, 400,
            "InvalidArgument")
    assert api.ok("GET", "buckets/vault/object-lock") == {"configuration": conf}


def test_another_account_is_denied_every_configuration(node):
    admin = Api(node.addrs["http"])
    admin.ok("POST", "buckets", {"name": "mine"}, 201)
    admin.raw("PUT", "buckets/mine/cors", {"configuration": {"CORSRules": [CORS]}})
    tok = new_token(admin, "mallory", ["bucket:create", "bucket:list", "bucket:configure",
                                       "object:get", "object:put", "object:list"])
    other = Api(node.addrs["http"], tok)
    for method, path, doc in (
            ("PUT", "buckets/mine/visibility", {"public": True}),
            ("GET", "buckets/mine/lifecycle", None),
            ("PUT", "buckets/mine/lifecycle", {"configuration": {"Rules": [RULE]}}),
            ("DELETE", "buckets/mine/lifecycle", None),
            ("GET", "buckets/mine/cors", None),
            ("PUT", "buckets/mine/cors", {"configuration": {"CORSRules": [CORS]}}),
            ("DELETE", "buckets/mine/cors", None),
            ("GET", "buckets/mine/object-lock", None),
            ("PUT", "buckets/mine/object-lock",
             {"configuration": {"ObjectLockEnabled": "Enabled"}})):
        refused(other, method, path, doc, 403, "AccessDenied")
    assert admin.ok("GET", "buckets/mine")["public"] is False
    assert admin.ok("GET", "buckets/mine/cors")["configuration"] == {"CORSRules": [CORS]}
    assert admin.ok("GET", "buckets/mine/lifecycle") == {"configuration": None}
