"""ListObjectVersions through the real server (boto3): byte order of keys,
newest first within a key, IsLatest, delete markers, prefix / delimiter /
CommonPrefixes, key and version-id markers across pages (markers count
against max-keys), encoding-type=url, and ListObjectsV2 beside delete
markers (only live keys, in one page)."""
import xml.etree.ElementTree as ET
from urllib.parse import unquote_plus

import pytest
from botocore.exceptions import ClientError

from s3fixtures import s3, s3srv, unique  # noqa: F401


def keep_xml_order(http_response, parsed, context, **_):
    """Keeps a ListObjectVersions page's Version and DeleteMarker entries in
    the XML's own order (boto3 parses them into two lists), as
    parsed["XmlOrder"]; keys decoded as boto3 decodes them."""
    root = ET.fromstring(http_response.content)
    ns = root.tag[:root.tag.index("}") + 1] if root.tag.startswith("{") else ""
    decode = (root.findtext(ns + "EncodingType") == "url"
              and context.get("encoding_type_auto_set"))
    kinds = {ns + "Version": "v", ns + "DeleteMarker": "m"}
    order = []
    for e in root:
        if e.tag in kinds:
            key = e.findtext(ns + "Key")
            order.append((unquote_plus(key) if decode else key, e.findtext(ns + "VersionId"),
                          kinds[e.tag], e.findtext(ns + "IsLatest") == "true"))
    parsed["XmlOrder"] = order


@pytest.fixture(autouse=True)
def xml_order(request):
    if "s3" in request.fixturenames:
        request.getfixturevalue("s3").meta.events.register(
            "after-call.s3.ListObjectVersions", keep_xml_order, unique_id="xml-order")


@pytest.fixture
def vbucket(s3):
    b = unique("verl")
    s3.create_bucket(Bucket=b)
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    return b


def entries(r):
    """Version and marker entries of a page in the service's order: the
    XML's (boto3 splits them; an order rebuilt from the ids would misplace
    a "null" version)."""
    out = r["XmlOrder"]
    # The same entries boto3 parsed, none lost or added.
    assert sorted(out) == sorted(
        [(v["Key"], v["VersionId"], "v", v["IsLatest"]) for v in r.get("Versions", [])]
        + [(m["Key"], m["VersionId"], "m", m["IsLatest"]) for m in r.get("DeleteMarkers", [])])
    return out


def all_pages(s3, b, **kw):
    got, pages, args = [], 0, dict(kw)
    while True:
        r = s3.list_object_versions(Bucket=b, **args)
        pages += 1
        got += entries(r)
        got += [("prefix", p["Prefix"]) for p in r.get("CommonPrefixes", [])]
        if not r["IsTruncated"]:
            return got, pages
        args["KeyMarker"] = r["NextKeyMarker"]
        if "NextVersionIdMarker" in r:
            args["VersionIdMarker"] = r["NextVersionIdMarker"]
        else:
            args.pop("VersionIdMarker", None)


def test_order_latest_and_markers(s3, vbucket):
    ids = {}
    for k in ["b", "a", "c"]:
        ids[k] = [s3.put_object(Bucket=vbucket, Key=k, Body=k.encode() * i)["VersionId"]
                  for i in range(1, 3)]
    m = s3.delete_object(Bucket=vbucket, Key="c")["VersionId"]
    r = s3.list_object_versions(Bucket=vbucket)
    assert not r["IsTruncated"]
    assert entries(r) == [
        ("a", ids["a"][1], "v", True), ("a", ids["a"][0], "v", False),
        ("b", ids["b"][1], "v", True), ("b", ids["b"][0], "v", False),
        ("c", m, "m", True), ("c", ids["c"][1], "v", False), ("c", ids["c"][0], "v", False)]
    sizes = {(v["Key"], v["VersionId"]): v["Size"] for v in r["Versions"]}
    assert sizes[("a", ids["a"][0])] == 1 and sizes[("a", ids["a"][1])] == 2
    # ListObjects sees the live keys only.
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=vbucket)["Contents"]] == ["a", "b"]
    assert [o["Key"] for o in s3.list_objects(Bucket=vbucket)["Contents"]] == ["a", "b"]


def test_null_version_keeps_its_place(s3):
    # Written before versioning was enabled: "null", older than what follows.
    b = unique("verl")
    s3.create_bucket(Bucket=b)
    s3.put_object(Bucket=b, Key="k", Body=b"old")
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    v = s3.put_object(Bucket=b, Key="k", Body=b"new")["VersionId"]
    r = s3.list_object_versions(Bucket=b)
    assert entries(r) == [("k", v, "v", True), ("k", "null", "v", False)]


def test_pagination_with_markers(s3, vbucket):
    want = []
    for k in ["k1", "k2", "k3"]:
        vs = [s3.put_object(Bucket=vbucket, Key=k, Body=b"x")["VersionId"] for _ in range(3)]
        mk = s3.delete_object(Bucket=vbucket, Key=k)["VersionId"]
        want += [(k, mk, "m", True)] + [(k, v, "v", False) for v in reversed(vs)]
    for page in (1, 2, 3, 5, 1000):
        got, pages = all_pages(s3, vbucket, MaxKeys=page)
        assert got == want, page
        assert pages == -(-len(want) // page)  # a full last page is not "truncated"
    # One page of two: the markers say where it ended, inside a key.
    r = s3.list_object_versions(Bucket=vbucket, MaxKeys=2)
    assert r["IsTruncated"] and r["NextKeyMarker"] == "k1"
    assert r["NextVersionIdMarker"] == want[1][1]
    r = s3.list_object_versions(Bucket=vbucket, MaxKeys=3, KeyMarker="k1",
                                VersionIdMarker=want[1][1])
    assert entries(r) == want[2:5]
    # A key marker alone resumes after all of that key's versions.
    r = s3.list_object_versions(Bucket=vbucket, KeyMarker="k2")
    assert {e[0] for e in entries(r)} == {"k3"}


def test_version_id_marker_needs_key_marker(s3, vbucket):
    with pytest.raises(ClientError) as e:
        s3.list_object_versions(Bucket=vbucket, VersionIdMarker="null")
    assert e.value.response["Error"]["Code"] == "InvalidArgument"
    with pytest.raises(ClientError) as e:
        s3.list_object_versions(Bucket=vbucket, KeyMarker="a", VersionIdMarker="bogus")
    assert e.value.response["Error"]["Code"] == "InvalidArgument"


def test_prefix_delimiter_and_common_prefixes(s3, vbucket):
    for k in ["dir/a", "dir/b", "dir/sub/c", "top", "zz/x"]:
        s3.put_object(Bucket=vbucket, Key=k, Body=b"1")
        s3.put_object(Bucket=vbucket, Key=k, Body=b"2")
    s3.delete_object(Bucket=vbucket, Key="zz/x")
    r = s3.list_object_versions(Bucket=vbucket, Delimiter="/")
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["dir/", "zz/"]
    assert {e[0] for e in entries(r)} == {"top"} and len(entries(r)) == 2
    r = s3.list_object_versions(Bucket=vbucket, Prefix="dir/", Delimiter="/")
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["dir/sub/"]
    assert [e[0] for e in entries(r)] == ["dir/a", "dir/a", "dir/b", "dir/b"]
    # Prefixes count against max-keys and end a page without a version marker.
    r = s3.list_object_versions(Bucket=vbucket, Delimiter="/", MaxKeys=1)
    assert r["IsTruncated"] and r["NextKeyMarker"] == "dir/"
    assert "NextVersionIdMarker" not in r
    got, _ = all_pages(s3, vbucket, Delimiter="/", MaxKeys=1)
    assert [g for g in got if g[0] == "prefix"] == [("prefix", "dir/"), ("prefix", "zz/")]
    assert len(got) == 4


def test_encoding_type_url(s3srv, s3, vbucket):
    s3.put_object(Bucket=vbucket, Key="a b+c", Body=b"1")
    r = s3srv.signed("GET", "/%s?versions&encoding-type=url" % vbucket)
    assert r.status_code == 200
    assert b"<Key>a%20b%2Bc</Key>" in r.content
    assert b"<EncodingType>url</EncodingType>" in r.content


def test_list_v2_skips_delete_marked_keys_in_one_page(s3, vbucket):
    """Most keys delete-marked: ListObjectsV2 still gives every live key in
    one page (deleted keys are not scanned: they are not in the table of
    current versions)."""
    n, live = 300, set()
    for i in range(n):
        k = "k%04d" % i
        s3.put_object(Bucket=vbucket, Key=k, Body=b"x")
        if i % 10:
            s3.delete_object(Bucket=vbucket, Key=k)
        else:
            live.add(k)
    r = s3.list_objects_v2(Bucket=vbucket, MaxKeys=len(live))
    assert {o["Key"] for o in r["Contents"]} == live and not r["IsTruncated"]
    versions, _ = all_pages(s3, vbucket, MaxKeys=1000)
    assert len(versions) == n + (n - len(live))
