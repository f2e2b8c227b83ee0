"""Conformance-style checks of issue 25 beyond the per-operation tests, with
the codes ceph/s3-tests expects (s3tests_boto3/functional/test_s3.py, read
as the reference, not copied): version listing across many keys and
versions with every page size and both markers, null versions across
enable / suspend / enable, delete-marker edge cases, retention and
legal-hold errors, and tag limits at their edges."""
import datetime
import xml.etree.ElementTree as ET
from urllib.parse import quote, unquote

import pytest
from botocore.exceptions import ClientError

from s3fixtures import bucket, s3, s3srv, unique  # noqa: F401

UTC = datetime.timezone.utc


def err(exc):
    r = exc.value.response
    return r["ResponseMetadata"]["HTTPStatusCode"], r["Error"]["Code"]


def fails(call, status, code):
    with pytest.raises(ClientError) as e:
        call()
    assert err(e) == (status, code)
    return e.value.response


@pytest.fixture
def vbucket(s3):
    b = unique("vconf")
    s3.create_bucket(Bucket=b)
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    return b


NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"


def raw_client(srv):
    """A boto3 client that keeps each answer's raw body (boto3 splits
    versions from markers; the tests check the server's own order)."""
    c = srv.client()
    c._raw = []
    c.meta.events.register("after-call.s3.ListObjectVersions",
                           lambda http_response, **kw: c._raw.append(http_response.content))
    return c


def page(srv, b, **args):
    """One ListObjectVersions page, in the server's order: a dict of
    entries [(key, id, kind, latest)], prefixes, truncated, next key /
    version-id markers, max-keys."""
    c = srv._raw_client if hasattr(srv, "_raw_client") else None
    if c is None:
        c = srv._raw_client = raw_client(srv)
    c.list_object_versions(Bucket=b, **args)
    root = ET.fromstring(c._raw.pop())
    # boto3 asks for encoding-type=url (and decodes); so do we here.
    url = root.findtext(NS + "EncodingType") == "url"

    def dec(v):
        return unquote(v) if url and v is not None else v
    out = {"entries": [], "prefixes": [], "truncated": root.findtext(NS + "IsTruncated") == "true",
           "key": dec(root.findtext(NS + "NextKeyMarker")),
           "vid": root.findtext(NS + "NextVersionIdMarker"), "max": root.findtext(NS + "MaxKeys")}
    for el in root:
        tag = el.tag[len(NS):]
        if tag in ("Version", "DeleteMarker"):
            out["entries"].append((dec(el.findtext(NS + "Key")), el.findtext(NS + "VersionId"),
                                   "v" if tag == "Version" else "m",
                                   el.findtext(NS + "IsLatest") == "true"))
        elif tag == "CommonPrefixes":
            out["prefixes"].append(dec(el.findtext(NS + "Prefix")))
    return out


def walk(srv, b, **args):
    """Every page of ListObjectVersions: (entries, prefixes, pages)."""
    got, prefixes, pages = [], [], 0
    while True:
        r = page(srv, b, **args)
        pages += 1
        got += r["entries"]
        prefixes += r["prefixes"]
        if not r["truncated"]:
            return got, prefixes, pages
        assert pages < 10000
        args["KeyMarker"] = r["key"]
        if r["vid"]:
            args["VersionIdMarker"] = r["vid"]
        else:
            args.pop("VersionIdMarker", None)


# ---- listing: markers and pagination across many keys and versions --------------------------

def build(s3, b):
    """Keys in several directories with 1..4 versions, a marker on some,
    two markers on one; returns what a full listing must answer."""
    want = []
    keys = ["a/%02d" % i for i in range(12)] + ["b/x/%d" % i for i in range(5)] + \
        ["c%d" % i for i in range(6)] + ["é", "z z"]
    for n, k in enumerate(keys):
        vs = [s3.put_object(Bucket=b, Key=k, Body=b"%d" % i)["VersionId"]
              for i in range(1 + n % 4)]
        mk = []
        if n % 3 == 0:
            mk.append(s3.delete_object(Bucket=b, Key=k)["VersionId"])
        if n % 9 == 0:
            mk.append(s3.delete_object(Bucket=b, Key=k)["VersionId"])
        chain = [(k, m, "m") for m in reversed(mk)] + [(k, v, "v") for v in reversed(vs)]
        want += [(key, vid, kind, i == 0) for i, (key, vid, kind) in enumerate(chain)]
    return sorted(want, key=lambda e: e[0].encode()), keys


def test_pagination_many_keys_and_versions(s3srv, s3, vbucket):
    want, keys = build(s3, vbucket)
    assert len(want) > 60
    for size in (1, 2, 7, 13, 1000):
        got, prefixes, pages = walk(s3srv, vbucket, MaxKeys=size)
        assert got == want, size
        assert prefixes == [] and pages == -(-len(want) // size)
    # Resuming at every entry's markers gives exactly the rest.
    for i in range(0, len(want) - 1, 5):
        k, vid = want[i][0], want[i][1]
        got, _, _ = walk(s3srv, vbucket, KeyMarker=k, VersionIdMarker=vid, MaxKeys=9)
        assert got == want[i + 1:], (k, vid)
    # A key marker alone resumes after every version of that key.
    got, _, _ = walk(s3srv, vbucket, KeyMarker="a/05")
    assert got == [e for e in want if e[0].encode() > b"a/05"]
    # A key marker that is no key resumes at the next key.
    got, _, _ = walk(s3srv, vbucket, KeyMarker="b", MaxKeys=4)
    assert got == [e for e in want if e[0].encode() > b"b"]
    # Markers past the end: an empty, untruncated page.
    r = page(s3srv, vbucket, KeyMarker="\U0010ffff")
    assert r["entries"] == [] and not r["truncated"]


def test_pagination_with_prefix_and_delimiter(s3srv, s3, vbucket):
    want, keys = build(s3, vbucket)
    # Prefix: the same entries the full listing has under it, on every page size.
    for size in (1, 3, 1000):
        got, prefixes, _ = walk(s3srv, vbucket, Prefix="a/", MaxKeys=size)
        assert got == [e for e in want if e[0].startswith("a/")] and prefixes == []
    # Delimiter: each common prefix once, whatever the page size, counted in max-keys.
    roots = [e for e in want if "/" not in e[0]]
    for size in (1, 2, 5, 1000):
        got, prefixes, pages = walk(s3srv, vbucket, Delimiter="/", MaxKeys=size)
        assert prefixes == ["a/", "b/"] and got == roots, size
        assert pages == -(-(len(roots) + 2) // size)
    got, prefixes, _ = walk(s3srv, vbucket, Prefix="b/", Delimiter="/", MaxKeys=1)
    assert prefixes == ["b/x/"] and got == []
    # encoding-type=url encodes keys and the next key marker alike.
    r = s3.list_object_versions(Bucket=vbucket, Prefix="z", MaxKeys=1, EncodingType="url")
    assert r["Versions" if "Versions" in r else "DeleteMarkers"][0]["Key"] in (
        "z z", quote("z z"), "z+z")


def test_max_keys_is_capped_at_1000(s3srv, s3, vbucket):
    """max-keys above 1,000 answers 1,000 entries (markers count) and a
    next marker; the rest comes on the next page."""
    n = 0
    for i in range(350):
        k = "k%04d" % i
        for _ in range(2):
            s3.put_object(Bucket=vbucket, Key=k, Body=b"")
        s3.delete_object(Bucket=vbucket, Key=k)
        n += 3
    r = page(s3srv, vbucket, MaxKeys=5000)
    assert len(r["entries"]) == 1000 and r["truncated"]
    assert r["max"] in ("1000", "5000") and r["key"] == r["entries"][-1][0]
    got, _, pages = walk(s3srv, vbucket, MaxKeys=5000)
    assert len(got) == n == 1050 and pages == 2
    assert len({(e[0], e[1]) for e in got}) == n


# ---- null versions across enable / suspend / enable --------------------------------------------

def ids(srv, b, key="k"):
    return [(e[1], e[2], e[3]) for e in walk(srv, b)[0] if e[0] == key]


def test_null_version_across_enable_suspend_enable(s3srv, s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"plain")
    # Unversioned: no version named on the wire; the listing says null.
    assert ids(s3srv, bucket) == [("null", "v", True)]
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    v1 = s3.put_object(Bucket=bucket, Key="k", Body=b"v1")["VersionId"]
    v2 = s3.put_object(Bucket=bucket, Key="k", Body=b"v2")["VersionId"]
    assert ids(s3srv, bucket) == [(v2, "v", True), (v1, "v", False), ("null", "v", False)]
    r = s3.get_object(Bucket=bucket, Key="k", VersionId="null")
    assert r["Body"].read() == b"plain" and r["VersionId"] == "null"
    # Suspended: a write replaces the null version (noncurrent here) and is current.
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Suspended"})
    assert s3.put_object(Bucket=bucket, Key="k", Body=b"s1")["VersionId"] == "null"
    assert ids(s3srv, bucket) == [("null", "v", True), (v2, "v", False), (v1, "v", False)]
    assert s3.get_object(Bucket=bucket, Key="k", VersionId="null")["Body"].read() == b"s1"
    # Enabled again: new versions stack over the null one, which stays readable.
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    v3 = s3.put_object(Bucket=bucket, Key="k", Body=b"v3")["VersionId"]
    assert v3 not in ("null", v1, v2)
    assert ids(s3srv, bucket) == [(v3, "v", True), ("null", "v", False), (v2, "v", False),
                               (v1, "v", False)]
    assert s3.get_object(Bucket=bucket, Key="k", VersionId="null")["Body"].read() == b"s1"
    # Removing the null version by name leaves the others, the current one current.
    d = s3.delete_object(Bucket=bucket, Key="k", VersionId="null")
    assert d["VersionId"] == "null"
    assert ids(s3srv, bucket) == [(v3, "v", True), (v2, "v", False), (v1, "v", False)]
    fails(lambda: s3.get_object(Bucket=bucket, Key="k", VersionId="null"), 404, "NoSuchVersion")
    # Suspended again: the first write is null, the versioned ones stay.
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Suspended"})
    s3.put_object(Bucket=bucket, Key="k", Body=b"s2")
    assert ids(s3srv, bucket) == [("null", "v", True), (v3, "v", False), (v2, "v", False),
                               (v1, "v", False)]


def test_suspended_delete_over_a_versioned_current(s3srv, s3, vbucket):
    """Suspended, a delete of a key whose current version has an id writes a
    null marker and keeps that version; a second delete replaces the null
    marker instead of stacking another."""
    v1 = s3.put_object(Bucket=vbucket, Key="k", Body=b"v1")["VersionId"]
    s3.put_bucket_versioning(Bucket=vbucket, VersioningConfiguration={"Status": "Suspended"})
    d = s3.delete_object(Bucket=vbucket, Key="k")
    assert d["DeleteMarker"] is True and d["VersionId"] == "null"
    assert ids(s3srv, vbucket) == [("null", "m", True), (v1, "v", False)]
    s3.delete_object(Bucket=vbucket, Key="k")
    assert ids(s3srv, vbucket) == [("null", "m", True), (v1, "v", False)]
    # The null marker removed by name: v1 is current again.
    s3.delete_object(Bucket=vbucket, Key="k", VersionId="null")
    assert s3.get_object(Bucket=vbucket, Key="k")["VersionId"] == v1


# ---- delete markers at the edges ---------------------------------------------------------------

def test_repeated_deletes_stack_markers(s3srv, s3, vbucket):
    v = s3.put_object(Bucket=vbucket, Key="k", Body=b"x")["VersionId"]
    m1 = s3.delete_object(Bucket=vbucket, Key="k")["VersionId"]
    m2 = s3.delete_object(Bucket=vbucket, Key="k")["VersionId"]
    assert m1 != m2
    assert ids(s3srv, vbucket) == [(m2, "m", True), (m1, "m", False), (v, "v", False)]
    # Removing the newest marker leaves the older one latest: still deleted.
    s3.delete_object(Bucket=vbucket, Key="k", VersionId=m2)
    r = fails(lambda: s3.get_object(Bucket=vbucket, Key="k"), 404, "NoSuchKey")
    assert r["ResponseMetadata"]["HTTPHeaders"]["x-amz-delete-marker"] == "true"
    assert r["ResponseMetadata"]["HTTPHeaders"]["x-amz-version-id"] == m1
    s3.delete_object(Bucket=vbucket, Key="k", VersionId=m1)
    assert s3.get_object(Bucket=vbucket, Key="k")["VersionId"] == v


def test_marker_as_the_only_version(s3srv, s3, vbucket):
    v = s3.put_object(Bucket=vbucket, Key="k", Body=b"x")["VersionId"]
    m = s3.delete_object(Bucket=vbucket, Key="k")["VersionId"]
    s3.delete_object(Bucket=vbucket, Key="k", VersionId=v)
    assert ids(s3srv, vbucket) == [(m, "m", True)]
    r = s3.list_object_versions(Bucket=vbucket)
    assert "Versions" not in r and r["DeleteMarkers"][0]["IsLatest"] is True
    assert s3.list_objects_v2(Bucket=vbucket)["KeyCount"] == 0
    fails(lambda: s3.get_object(Bucket=vbucket, Key="k"), 404, "NoSuchKey")
    fails(lambda: s3.get_object(Bucket=vbucket, Key="k", VersionId=v), 404, "NoSuchVersion")
    r = fails(lambda: s3.get_object(Bucket=vbucket, Key="k", VersionId=m), 405,
              "MethodNotAllowed")
    assert r["ResponseMetadata"]["HTTPHeaders"]["x-amz-delete-marker"] == "true"
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=vbucket, Key="k", VersionId=m)
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 405
    # The bucket is not empty while the marker remains.
    fails(lambda: s3.delete_bucket(Bucket=vbucket), 409, "BucketNotEmpty")
    d = s3.delete_object(Bucket=vbucket, Key="k", VersionId=m)
    assert d["DeleteMarker"] is True and d["VersionId"] == m
    assert ids(s3srv, vbucket) == []
    s3.delete_bucket(Bucket=vbucket)


def test_delete_objects_of_markers(s3, vbucket):
    keys = ["a", "b", "c"]
    vs = {k: s3.put_object(Bucket=vbucket, Key=k, Body=k.encode())["VersionId"] for k in keys}
    r = s3.delete_objects(Bucket=vbucket, Delete={"Objects": [{"Key": k} for k in keys]})
    markers = {d["Key"]: d["DeleteMarkerVersionId"] for d in r["Deleted"]}
    assert all(d["DeleteMarker"] for d in r["Deleted"]) and len(markers) == 3
    # A second batch on deleted keys stacks one more marker each.
    r = s3.delete_objects(Bucket=vbucket, Delete={"Objects": [{"Key": "a"}]})
    m2 = r["Deleted"][0]["DeleteMarkerVersionId"]
    assert m2 != markers["a"]
    # Markers and versions removed by id in one batch, quiet: no Deleted list.
    objs = [{"Key": k, "VersionId": markers[k]} for k in keys] + \
        [{"Key": "a", "VersionId": m2}, {"Key": "c", "VersionId": vs["c"]}]
    r = s3.delete_objects(Bucket=vbucket, Delete={"Objects": objs, "Quiet": True})
    assert not r.get("Deleted") and not r.get("Errors")
    assert s3.get_object(Bucket=vbucket, Key="a")["VersionId"] == vs["a"]
    assert s3.get_object(Bucket=vbucket, Key="b")["VersionId"] == vs["b"]
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=vbucket)["Contents"]] == ["a", "b"]
    # Naming a marker id that is already gone is a success, as for any version.
    r = s3.delete_objects(Bucket=vbucket, Delete={"Objects": [
        {"Key": "a", "VersionId": markers["a"]}]})
    assert r["Deleted"][0]["VersionId"] == markers["a"] and not r.get("Errors")


# ---- retention and legal hold: the errors -----------------------------------------------------

def future(**kw):
    return (datetime.datetime.now(UTC) + datetime.timedelta(**kw)).replace(microsecond=0)


@pytest.fixture
def lbucket(s3):
    b = unique("lconf")
    s3.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
    return b


def test_retention_mode_changes(s3, lbucket):
    v = s3.put_object(Bucket=lbucket, Key="k", Body=b"x")["VersionId"]
    until = future(days=2)
    s3.put_object_retention(Bucket=lbucket, Key="k", VersionId=v,
                            Retention={"Mode": "GOVERNANCE", "RetainUntilDate": until})
    comp = {"Mode": "COMPLIANCE", "RetainUntilDate": until}
    # GOVERNANCE to COMPLIANCE needs the bypass (s3-tests:
    # changing_mode_from_governance_without_bypass / _with_bypass).
    fails(lambda: s3.put_object_retention(Bucket=lbucket, Key="k", VersionId=v, Retention=comp),
          403, "AccessDenied")
    s3.put_object_retention(Bucket=lbucket, Key="k", VersionId=v, Retention=comp,
                            BypassGovernanceRetention=True)
    assert s3.get_object_retention(Bucket=lbucket, Key="k", VersionId=v)["Retention"] == comp
    # COMPLIANCE is never weakened, with or without the bypass.
    gov = {"Mode": "GOVERNANCE", "RetainUntilDate": until}
    for bypass in (False, True):
        fails(lambda: s3.put_object_retention(Bucket=lbucket, Key="k", VersionId=v,
                                              Retention=gov, BypassGovernanceRetention=bypass),
              403, "AccessDenied")
    # Extending COMPLIANCE is allowed.
    later = {"Mode": "COMPLIANCE", "RetainUntilDate": future(days=3)}
    s3.put_object_retention(Bucket=lbucket, Key="k", VersionId=v, Retention=later)
    assert s3.get_object_retention(Bucket=lbucket, Key="k", VersionId=v)["Retention"] == later


def test_retention_and_hold_version_errors(s3srv, s3, lbucket):
    s3.put_object(Bucket=lbucket, Key="k", Body=b"x")
    r = {"Mode": "GOVERNANCE", "RetainUntilDate": future(days=1)}
    gone = "0000000000zzz"[:-3] + "777"
    calls = [
        lambda vid: s3.put_object_retention(Bucket=lbucket, Key="k", VersionId=vid, Retention=r),
        lambda vid: s3.get_object_retention(Bucket=lbucket, Key="k", VersionId=vid),
        lambda vid: s3.put_object_legal_hold(Bucket=lbucket, Key="k", VersionId=vid,
                                             LegalHold={"Status": "ON"}),
        lambda vid: s3.get_object_legal_hold(Bucket=lbucket, Key="k", VersionId=vid),
    ]
    for call in calls:
        fails(lambda: call(gone), 404, "NoSuchVersion")
        fails(lambda: call("not-a-version"), 400, "InvalidArgument")
    # No key at all: NoSuchKey for the hold too.
    fails(lambda: s3.put_object_legal_hold(Bucket=lbucket, Key="none",
                                           LegalHold={"Status": "ON"}), 404, "NoSuchKey")
    fails(lambda: s3.get_object_legal_hold(Bucket=lbucket, Key="none"), 404, "NoSuchKey")
    # A retention on a write names a date in the future (s3-tests:
    # put_obj_retention with a past date → InvalidArgument).
    fails(lambda: s3.put_object(Bucket=lbucket, Key="k", Body=b"x", ObjectLockMode="GOVERNANCE",
                                ObjectLockRetainUntilDate=datetime.datetime(2000, 1, 1,
                                                                            tzinfo=UTC)),
          400, "InvalidArgument")
    # A retention body without a date, and one with an unknown element.
    for body in (b"<Retention><RetainUntilDate>2999-01-01T00:00:00Z</RetainUntilDate>"
                 b"</Retention>",):
        resp = s3srv.signed("PUT", "/%s/k?retention" % lbucket, body=body)
        assert resp.status_code == 400 and b"MalformedXML" in resp.content, resp.content


def test_lock_config_period_errors(s3srv, s3, lbucket):
    """The default retention's period (s3-tests: put_obj_lock_invalid_days /
    _invalid_years / _with_days_and_years)."""
    def conf(rule):
        return {"ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": rule}}
    for rule in ({"Mode": "GOVERNANCE", "Days": 0}, {"Mode": "GOVERNANCE", "Days": -1},
                 {"Mode": "COMPLIANCE", "Years": 0}, {"Mode": "COMPLIANCE", "Years": -1}):
        fails(lambda: s3.put_object_lock_configuration(Bucket=lbucket,
                                                       ObjectLockConfiguration=conf(rule)),
              400, "InvalidRetentionPeriod")
    fails(lambda: s3.put_object_lock_configuration(
        Bucket=lbucket, ObjectLockConfiguration=conf({"Mode": "GOVERNANCE", "Days": 1,
                                                      "Years": 1})), 400, "MalformedXML")
    fails(lambda: s3.put_object_lock_configuration(
        Bucket=lbucket, ObjectLockConfiguration=conf({"Mode": "abc", "Days": 1})),
        400, "MalformedXML")


# ---- tag limits at the edges ------------------------------------------------------------------

def test_tag_limits_at_the_edges_on_writes(s3, bucket):
    """x-amz-tagging on PutObject and CreateMultipartUpload: 10 tags, a
    128-character key and a 256-character value pass; one more of any fails
    InvalidTag and writes nothing."""
    edge = "&".join(["k%d=v" % i for i in range(8)] + ["K" * 128 + "=", "v=" + "x" * 256])
    s3.put_object(Bucket=bucket, Key="edge", Body=b"x", Tagging=edge)
    got = {t["Key"]: t["Value"] for t in s3.get_object_tagging(Bucket=bucket,
                                                               Key="edge")["TagSet"]}
    assert len(got) == 10 and got["K" * 128] == "" and got["v"] == "x" * 256
    assert s3.head_object(Bucket=bucket, Key="edge")["ResponseMetadata"]["HTTPHeaders"][
        "x-amz-tagging-count"] == "10"
    up = s3.create_multipart_upload(Bucket=bucket, Key="mp", Tagging=edge)["UploadId"]
    s3.abort_multipart_upload(Bucket=bucket, Key="mp", UploadId=up)
    over = ["&".join("k%d=v" % i for i in range(11)), "K" * 129 + "=v", "k=" + "x" * 257,
            "aws:x=1", "=v"]
    for bad in over:
        fails(lambda: s3.put_object(Bucket=bucket, Key="over", Body=b"x", Tagging=bad),
              400, "InvalidTag")
        fails(lambda: s3.create_multipart_upload(Bucket=bucket, Key="over", Tagging=bad),
              400, "InvalidTag")
    fails(lambda: s3.head_object(Bucket=bucket, Key="over"), 404, "404")
    # Characters, not bytes: 128 two-byte characters are a valid key.
    s3.put_object_tagging(Bucket=bucket, Key="edge",
                          Tagging={"TagSet": [{"Key": "é" * 128, "Value": "ü" * 256}]})
    fails(lambda: s3.put_object_tagging(Bucket=bucket, Key="edge", Tagging={
        "TagSet": [{"Key": "é" * 129, "Value": ""}]}), 400, "InvalidTag")


def test_tag_limits_on_a_version(s3, vbucket):
    """The limits hold per version: a version keeps its own set, and an
    11th tag on an old version is refused without touching it."""
    v1 = s3.put_object(Bucket=vbucket, Key="k", Body=b"1", Tagging="a=1")["VersionId"]
    s3.put_object(Bucket=vbucket, Key="k", Body=b"2")
    ten = {"TagSet": [{"Key": "t%d" % i, "Value": ""} for i in range(10)]}
    s3.put_object_tagging(Bucket=vbucket, Key="k", VersionId=v1, Tagging=ten)
    eleven = {"TagSet": ten["TagSet"] + [{"Key": "t10", "Value": ""}]}
    fails(lambda: s3.put_object_tagging(Bucket=vbucket, Key="k", VersionId=v1, Tagging=eleven),
          400, "InvalidTag")
    assert len(s3.get_object_tagging(Bucket=vbucket, Key="k", VersionId=v1)["TagSet"]) == 10
    assert s3.get_object_tagging(Bucket=vbucket, Key="k")["TagSet"] == []
