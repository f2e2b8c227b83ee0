"""Lifecycle configuration through the real server (issue 25): Put / Get /
DeleteBucketLifecycleConfiguration, Get answering byte for byte the document
boto3 sent (rule order, IDs, rule-level Prefix and every Filter form), a
generated ID for a rule sent without one, 1,000 rules and no more, and S3's
answers to every invalid value (ceph/s3-tests' codes: InvalidArgument for a
long or repeated ID and for non-positive days, MalformedXML for a bad Status),
NotImplemented for a valid transition, NoSuchLifecycleConfiguration, and
AccessDenied for a stranger."""
import re

import pytest
from botocore.exceptions import ClientError

from s3fixtures import bucket, s3, s3srv, unique  # noqa: F401


def code(exc):
    return exc.value.response["Error"]["Code"]


RULES = [
    {"ID": "logs", "Filter": {"Prefix": "logs/"}, "Status": "Enabled",
     "Expiration": {"Days": 30}},
    {"ID": "tagged", "Filter": {"Tag": {"Key": "tmp", "Value": "yes"}}, "Status": "Enabled",
     "Expiration": {"Days": 1}, "NoncurrentVersionExpiration": {"NoncurrentDays": 2,
                                                                "NewerNoncurrentVersions": 3}},
    {"ID": "and", "Filter": {"And": {"Prefix": "a/", "Tags": [{"Key": "k1", "Value": "v1"},
                                                             {"Key": "k2", "Value": ""}],
                                     "ObjectSizeGreaterThan": 10,
                                     "ObjectSizeLessThan": 1000}},
     "Status": "Disabled", "Expiration": {"Days": 7}},
    {"ID": "sizes", "Filter": {"ObjectSizeGreaterThan": 1048576}, "Status": "Enabled",
     "Expiration": {"Date": "2031-01-01T00:00:00Z"}},
    {"ID": "markers", "Filter": {}, "Status": "Enabled",
     "Expiration": {"ExpiredObjectDeleteMarker": True},
     "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 3}},
    {"ID": "legacy", "Prefix": "old/", "Status": "Enabled", "Expiration": {"Days": 365}},
]


def capture_body(client):
    """The bodies of the PutBucketLifecycleConfiguration requests client sends."""
    sent = []

    def hook(request, **kw):
        body = request.body
        if hasattr(body, "read"):
            pos = body.tell()
            data = body.read()
            body.seek(pos)
            body = data
        sent.append(bytes(body or b""))
    client.meta.events.register("before-send.s3.PutBucketLifecycleConfiguration", hook)
    return sent


def raw_get(s3srv, b):
    r = s3srv.signed("GET", "/%s" % b, params={"lifecycle": ""})
    return r


def put_raw(s3srv, b, body):
    return s3srv.signed("PUT", "/%s" % b, params={"lifecycle": ""}, body=body)


def test_roundtrip_byte_identical(s3srv, bucket):
    s3 = s3srv.client()
    sent = capture_body(s3)
    s3.put_bucket_lifecycle_configuration(Bucket=bucket,
                                          LifecycleConfiguration={"Rules": RULES})
    assert len(sent) == 1 and sent[0].startswith(b"<")
    r = raw_get(s3srv, bucket)
    assert r.status_code == 200 and r.headers["Content-Type"] == "application/xml"
    assert r.content == sent[0]
    got = s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]
    assert [g["ID"] for g in got] == [x["ID"] for x in RULES]
    assert got[0]["Filter"] == {"Prefix": "logs/"} and got[5]["Prefix"] == "old/"
    assert got[2]["Filter"]["And"]["Tags"][1] == {"Key": "k2", "Value": ""}
    assert got[3]["Expiration"]["Date"].year == 2031
    # A second put replaces the first; Terraform's wait for equality sees it.
    s3.put_bucket_lifecycle_configuration(Bucket=bucket,
                                          LifecycleConfiguration={"Rules": RULES[:1]})
    assert raw_get(s3srv, bucket).content == sent[1]


def test_raw_document_kept_as_sent(s3srv, bucket):
    body = (b'<?xml version="1.0" encoding="UTF-8"?>\n'
            b'<LifecycleConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">\n'
            b'  <Rule>\n    <ID>b</ID><Prefix></Prefix><Status>Enabled</Status>\n'
            b'    <Expiration><Days>1</Days></Expiration></Rule>\n'
            b'  <Rule><Status>Enabled</Status><ID>a</ID><Filter><Prefix>x/</Prefix></Filter>'
            b'<NoncurrentVersionExpiration><NoncurrentDays>4</NoncurrentDays>'
            b'</NoncurrentVersionExpiration></Rule>\n</LifecycleConfiguration>')
    r = put_raw(s3srv, bucket, body)
    assert r.status_code == 200, r.text
    assert raw_get(s3srv, bucket).content == body


def test_generated_id(s3srv, s3, bucket):
    s3.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": [
        {"Filter": {"Prefix": "p/"}, "Status": "Enabled", "Expiration": {"Days": 2}},
        {"ID": "named", "Filter": {"Prefix": "q/"}, "Status": "Enabled",
         "Expiration": {"Days": 3}}]})
    got = s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]
    assert re.fullmatch(r"[0-9a-f]{32}", got[0]["ID"]), got[0]
    assert got[0]["Filter"] == {"Prefix": "p/"} and got[0]["Expiration"] == {"Days": 2}
    assert got[1]["ID"] == "named" and got[1]["Expiration"] == {"Days": 3}
    # The generated ID stays what it was: Get is stable.
    assert s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"][0]["ID"] == got[0]["ID"]


def test_rule_counts(s3srv, s3, bucket):
    rules = [{"ID": "r%04d" % i, "Filter": {"Prefix": "p%d/" % i}, "Status": "Enabled",
              "Expiration": {"Days": 1 + i}} for i in range(1000)]
    s3.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": rules})
    got = s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]
    assert len(got) == 1000 and got[999]["ID"] == "r0999"
    rules.append({"ID": "one-too-many", "Filter": {}, "Status": "Enabled",
                  "Expiration": {"Days": 1}})
    with pytest.raises(ClientError) as e:
        s3.put_bucket_lifecycle_configuration(Bucket=bucket,
                                              LifecycleConfiguration={"Rules": rules})
    assert code(e) == "MalformedXML"
    assert len(s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]) == 1000


def rule(**kw):
    r = {"ID": "r", "Filter": {"Prefix": ""}, "Status": "Enabled", "Expiration": {"Days": 1}}
    r.update(kw)
    return {k: v for k, v in r.items() if v is not None}


BAD = [
    ("id too long", [rule(ID="x" * 256)], "InvalidArgument"),
    ("same id", [rule(), rule(Filter={"Prefix": "b/"})], "InvalidArgument"),
    ("expiration days 0", [rule(Expiration={"Days": 0})], "InvalidArgument"),
    ("date not midnight", [rule(Expiration={"Date": "2031-01-01T10:00:00Z"})],
     "InvalidArgument"),
    ("noncurrent days 0", [rule(Expiration=None,
                                NoncurrentVersionExpiration={"NoncurrentDays": 0})],
     "InvalidArgument"),
    ("newer noncurrent 101", [rule(NoncurrentVersionExpiration={"NoncurrentDays": 1,
                                                                "NewerNoncurrentVersions": 101})],
     "InvalidArgument"),
    ("abort days 0", [rule(AbortIncompleteMultipartUpload={"DaysAfterInitiation": 0})],
     "InvalidArgument"),
    ("abort with tags", [rule(Filter={"Tag": {"Key": "a", "Value": "b"}},
                              AbortIncompleteMultipartUpload={"DaysAfterInitiation": 1})],
     "InvalidRequest"),
    ("no action", [rule(Expiration=None)], "InvalidRequest"),
    ("sizes crossed", [rule(Filter={"And": {"ObjectSizeGreaterThan": 10,
                                            "ObjectSizeLessThan": 10}})], "InvalidArgument"),
    ("duplicate tag keys", [rule(Filter={"And": {"Tags": [{"Key": "a", "Value": "1"},
                                                          {"Key": "a", "Value": "2"}]}})],
     "InvalidArgument"),
    ("transition", [rule(Transitions=[{"Days": 30, "StorageClass": "GLACIER"}])],
     "NotImplemented"),
    ("noncurrent transition", [rule(NoncurrentVersionTransitions=[
        {"NoncurrentDays": 30, "StorageClass": "STANDARD_IA"}])], "NotImplemented"),
]


@pytest.mark.parametrize("what,rules,want", BAD, ids=[b[0] for b in BAD])
def test_invalid_rules(s3srv, s3, bucket, what, rules, want):
    with pytest.raises(ClientError) as e:
        s3.put_bucket_lifecycle_configuration(Bucket=bucket,
                                              LifecycleConfiguration={"Rules": rules})
    assert code(e) == want, what
    with pytest.raises(ClientError) as e:
        s3.get_bucket_lifecycle_configuration(Bucket=bucket)
    assert code(e) == "NoSuchLifecycleConfiguration"


def doc(rule_xml):
    return (b"<LifecycleConfiguration><Rule>" + rule_xml + b"</Rule></LifecycleConfiguration>")


RAW_BAD = [
    (b"<ID>r</ID><Prefix/><Status>enabled</Status><Expiration><Days>1</Days></Expiration>",
     "MalformedXML"),
    (b"<ID>r</ID><Prefix/><Status>Invalid</Status><Expiration><Days>1</Days></Expiration>",
     "MalformedXML"),
    (b"<ID>r</ID><Prefix/><Expiration><Days>1</Days></Expiration>", "MalformedXML"),
    (b"<ID>r</ID><Prefix/><Filter/><Status>Enabled</Status>"
     b"<Expiration><Days>1</Days></Expiration>", "MalformedXML"),
    (b"<ID>r</ID><Status>Enabled</Status><Expiration><Days>1</Days></Expiration>",
     "MalformedXML"),
    (b"<ID>r</ID><Filter><Prefix>a</Prefix><Tag><Key>k</Key><Value>v</Value></Tag></Filter>"
     b"<Status>Enabled</Status><Expiration><Days>1</Days></Expiration>", "MalformedXML"),
    (b"<ID>r</ID><Prefix/><Status>Enabled</Status><Expiration><Days>x</Days></Expiration>",
     "MalformedXML"),
    (b"<ID>r</ID><Prefix/><Status>Enabled</Status><Expiration><Days>-1</Days></Expiration>",
     "InvalidArgument"),
    (b"<ID>r</ID><Prefix/><Status>Enabled</Status>"
     b"<Expiration><Days>1</Days><Date>2031-01-01T00:00:00Z</Date></Expiration>",
     "MalformedXML"),
    (b"<ID>r</ID><Prefix/><Status>Enabled</Status>"
     b"<Expiration><Date>20310101</Date></Expiration>", "InvalidArgument"),
    (b"<ID>r</ID><Prefix/><Status>Enabled</Status>"
     b"<Expiration><ExpiredObjectDeleteMarker>yes</ExpiredObjectDeleteMarker></Expiration>",
     "MalformedXML"),
    (b"<ID>r</ID><Prefix/><Status>Enabled</Status><Bogus/>"
     b"<Expiration><Days>1</Days></Expiration>", "MalformedXML"),
    (b"<ID>r</ID><Prefix/><Status>Enabled</Status>"
     b"<Transition><Days>1</Days><StorageClass>NOPE</StorageClass></Transition>",
     "MalformedXML"),
]


def test_invalid_raw(s3srv, bucket):
    for body, want in RAW_BAD:
        r = put_raw(s3srv, bucket, doc(body))
        assert r.status_code in (400, 501) and "<Code>%s</Code>" % want in r.text, (body, r.text)
    for body in (b"<LifecycleConfiguration/>", b"<Other><Rule/></Other>",
                 b"<LifecycleConfiguration><Rule>"):
        r = put_raw(s3srv, bucket, body)
        assert r.status_code == 400 and "MalformedXML" in r.text, (body, r.text)
    r = put_raw(s3srv, bucket, b"")
    assert r.status_code == 400 and "MissingRequestBodyError" in r.text
    # Accepted edge values: a midnight Date with milliseconds, an empty Prefix, the ID limit.
    ok = doc(b"<ID>" + b"i" * 255 + b"</ID><Filter><Prefix></Prefix></Filter>"
             b"<Status>Disabled</Status>"
             b"<Expiration><Date>2031-01-01T00:00:00.000Z</Date></Expiration>")
    r = put_raw(s3srv, bucket, ok)
    assert r.status_code == 200, r.text
    assert raw_get(s3srv, bucket).content == ok


def test_get_delete_and_access(s3srv, s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.get_bucket_lifecycle_configuration(Bucket=bucket)
    assert code(e) == "NoSuchLifecycleConfiguration"
    s3.delete_bucket_lifecycle(Bucket=bucket)  # none set: still a success
    s3.put_bucket_lifecycle_configuration(Bucket=bucket,
                                          LifecycleConfiguration={"Rules": RULES[:2]})
    key, secret = s3srv.new_account(unique("lc"))
    other = s3srv.client(key, secret)
    for call in (lambda: other.get_bucket_lifecycle_configuration(Bucket=bucket),
                 lambda: other.put_bucket_lifecycle_configuration(
                     Bucket=bucket, LifecycleConfiguration={"Rules": RULES[:1]}),
                 lambda: other.delete_bucket_lifecycle(Bucket=bucket)):
        with pytest.raises(ClientError) as e:
            call()
        assert code(e) == "AccessDenied"
    assert len(s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]) == 2
    r = s3srv.signed("DELETE", "/%s" % bucket, params={"lifecycle": ""})
    assert r.status_code == 204
    with pytest.raises(ClientError) as e:
        s3.get_bucket_lifecycle_configuration(Bucket=bucket)
    assert code(e) == "NoSuchLifecycleConfiguration"
    with pytest.raises(ClientError) as e:
        s3.get_bucket_lifecycle_configuration(Bucket=unique("nobkt"))
    assert code(e) == "NoSuchBucket"
