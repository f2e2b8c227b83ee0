"""ListObjects v1 and ListObjectsV2 through the real cairnd: pagination over
2,500 keys with and without delimiters, continuation tokens, start-after,
encoding-type=url, fetch-owner, max-keys edge cases, and the body shapes."""
import concurrent.futures
import re
import urllib.parse

import pytest
from botocore.exceptions import ClientError

from s3fixtures import s3, s3srv, unique  # noqa: F401

XMLNS = 'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"'


@pytest.fixture(scope="module")
def many(s3srv):
    """A bucket of 2,500 keys: 25 "dirs" of 90 keys, plus 250 top-level keys."""
    c = s3srv.client(max_pool_connections=16)
    name = unique("many")
    c.create_bucket(Bucket=name)
    keys = ["d%02d/k%03d" % (d, i) for d in range(25) for i in range(90)]
    keys += ["top%03d" % i for i in range(250)]
    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        list(ex.map(lambda k: c.put_object(Bucket=name, Key=k, Body=k.encode()), keys))
    return name, sorted(keys)


def test_v2_paginates_every_key(s3, many):
    name, keys = many
    got, pages = [], 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=name,
                                                              PaginationConfig={"PageSize": 1000}):
        pages += 1
        got += [o["Key"] for o in page.get("Contents", [])]
        if page["IsTruncated"]:
            assert page["NextContinuationToken"]
        assert page["KeyCount"] == len(page.get("Contents", []))
    assert got == keys and pages == 3


def test_v1_paginates_every_key(s3, many):
    name, keys = many
    got = []
    for page in s3.get_paginator("list_objects").paginate(Bucket=name,
                                                           PaginationConfig={"PageSize": 700}):
        got += [o["Key"] for o in page.get("Contents", [])]
        assert "Owner" in page["Contents"][0]
    assert got == keys


def test_v2_delimiter_pages(s3, many):
    name, keys = many
    prefixes, top = [], []
    for page in s3.get_paginator("list_objects_v2").paginate(
            Bucket=name, Delimiter="/", PaginationConfig={"PageSize": 10}):
        prefixes += [p["Prefix"] for p in page.get("CommonPrefixes", [])]
        top += [o["Key"] for o in page.get("Contents", [])]
        assert page["KeyCount"] <= 10
    assert prefixes == ["d%02d/" % d for d in range(25)]
    assert top == ["top%03d" % i for i in range(250)]


def test_v1_delimiter_and_prefix(s3, many):
    name, _ = many
    r = s3.list_objects(Bucket=name, Prefix="d03/", Delimiter="/", MaxKeys=50)
    assert r["IsTruncated"] and len(r["Contents"]) == 50
    assert r["NextMarker"] == "d03/k049"
    r2 = s3.list_objects(Bucket=name, Prefix="d03/", Delimiter="/", Marker=r["NextMarker"])
    assert [o["Key"] for o in r2["Contents"]][0] == "d03/k050" and not r2["IsTruncated"]
    r = s3.list_objects(Bucket=name, Delimiter="k", Prefix="d04/")
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["d04/k"]


def test_start_after_and_max_keys(s3srv, s3, many):
    name, keys = many
    r = s3.list_objects_v2(Bucket=name, StartAfter="d24/k088")
    assert [o["Key"] for o in r["Contents"]][:2] == ["d24/k089", "top000"]
    assert r["StartAfter"] == "d24/k088"
    r = s3.list_objects_v2(Bucket=name, MaxKeys=0)
    assert r["KeyCount"] == 0 and "Contents" not in r
    r = s3.list_objects_v2(Bucket=name, MaxKeys=5000)
    assert len(r["Contents"]) == 1000 and r["IsTruncated"]
    resp = s3srv.signed("GET", "/%s" % name, params={"list-type": "2", "max-keys": "-1"})
    assert resp.status_code == 400 and "InvalidArgument" in resp.text
    resp = s3srv.signed("GET", "/%s" % name, params={"list-type": "2",
                                                     "continuation-token": "!!garbage!!"})
    assert resp.status_code == 400 and "InvalidArgument" in resp.text


def test_fetch_owner(s3, many):
    name, _ = many
    r = s3.list_objects_v2(Bucket=name, MaxKeys=2)
    assert "Owner" not in r["Contents"][0]
    r = s3.list_objects_v2(Bucket=name, MaxKeys=2, FetchOwner=True)
    assert r["Contents"][0]["Owner"]["ID"] == "admin"


def test_body_shapes(s3srv, many):
    name, _ = many
    v2 = s3srv.signed("GET", "/%s" % name, params={"list-type": "2", "max-keys": "3"}).text
    assert XMLNS in v2 and "<NextContinuationToken>" in v2 and "<KeyCount>3</KeyCount>" in v2
    assert "<Marker>" not in v2 and "<NextMarker>" not in v2
    assert "<EncodingType>" not in v2
    assert re.search(r'<ETag>&quot;[0-9a-f]{32}&quot;</ETag>|<ETag>"[0-9a-f]{32}"</ETag>', v2)
    v1 = s3srv.signed("GET", "/%s" % name, params={"max-keys": "3"}).text
    assert XMLNS in v1 and "<Marker></Marker>" in v1 and "<IsTruncated>true</IsTruncated>" in v1
    assert "ContinuationToken" not in v1 and "<KeyCount>" not in v1


def test_encoding_type_url(s3srv, s3):
    name = unique("enc")
    s3.create_bucket(Bucket=name)
    weird = ["a b/c+d", "ü/ß", "x%y", "ctl\x01char"]
    for k in weird:
        s3.put_object(Bucket=name, Key=k, Body=b"1")
    r = s3srv.signed("GET", "/%s" % name, params={"list-type": "2", "encoding-type": "url"})
    assert "<EncodingType>url</EncodingType>" in r.text
    listed = [urllib.parse.unquote(k) for k in re.findall(r"<Key>([^<]*)</Key>", r.text)]
    assert sorted(listed) == sorted(weird)
    assert "<Key>a%20b/c%2Bd</Key>" in r.text
    # boto3 asks for encoding-type=url by default and decodes it.
    got = [o["Key"] for o in s3.list_objects_v2(Bucket=name)["Contents"]]
    assert sorted(got) == sorted(weird)
    got = [o["Key"] for o in s3.list_objects(Bucket=name)["Contents"]]
    assert sorted(got) == sorted(weird)
    r = s3srv.signed("GET", "/%s" % name, params={"encoding-type": "base64"})
    assert r.status_code == 400


def test_list_missing_bucket(s3):
    with pytest.raises(ClientError) as e:
        s3.list_objects_v2(Bucket="no-such-bucket-z")
    assert e.value.response["Error"]["Code"] == "NoSuchBucket"
