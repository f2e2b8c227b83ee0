"""S3 versioning at the scale issue 25 names, through the real server
(boto3): ListObjectsV2 of 10,000 keys of which 9,000 are delete-marked gives
the 1,000 live keys in one page, and ListObjectVersions still reaches every
version and marker.  Markers are written with DeleteObjects (1,000 keys per
request) and the keys by 16 writers, so the file stays within seconds."""
import concurrent.futures

from s3fixtures import s3, s3srv, unique  # noqa: F401

N = 10000


def test_list_v2_among_9000_delete_marked_keys(s3srv):
    s3 = s3srv.client(max_pool_connections=16)
    b = unique("vscale")
    s3.create_bucket(Bucket=b)
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    keys = ["k%05d" % i for i in range(N)]
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda k: s3.put_object(Bucket=b, Key=k, Body=k.encode()), keys))
    live = keys[::10]
    dead = [k for i, k in enumerate(keys) if i % 10]
    markers = {}
    for i in range(0, len(dead), 1000):
        r = s3.delete_objects(Bucket=b, Delete={
            "Objects": [{"Key": k} for k in dead[i:i + 1000]], "Quiet": False})
        assert not r.get("Errors")
        for d in r["Deleted"]:
            assert d["DeleteMarker"] is True
            markers[d["Key"]] = d["DeleteMarkerVersionId"]
    assert len(markers) == len(dead)

    r = s3.list_objects_v2(Bucket=b)
    assert [o["Key"] for o in r["Contents"]] == live
    assert r["KeyCount"] == len(live) and not r["IsTruncated"]

    # A deleted key answers NoSuchKey with the marker's id; a live one its bytes.
    h = s3srv.client().head_object
    assert h(Bucket=b, Key=live[7])["ContentLength"] == len(live[7])
    try:
        h(Bucket=b, Key=dead[7])
        raise AssertionError("a delete-marked key was found")
    except s3.exceptions.ClientError as e:
        assert e.response["Error"]["Code"] == "404"
        hdrs = e.response["ResponseMetadata"]["HTTPHeaders"]
        assert hdrs.get("x-amz-delete-marker") == "true"

    # Every version and marker is still listed, across pages of 1,000.
    seen_v = seen_m = pages = 0
    args = {"Bucket": b, "MaxKeys": 1000}
    while True:
        r = s3.list_object_versions(**args)
        pages += 1
        seen_v += len(r.get("Versions", []))
        for m in r.get("DeleteMarkers", []):
            assert markers[m["Key"]] == m["VersionId"] and m["IsLatest"]
            seen_m += 1
        if not r["IsTruncated"]:
            break
        args["KeyMarker"] = r["NextKeyMarker"]
        args["VersionIdMarker"] = r["NextVersionIdMarker"]
    assert (seen_v, seen_m) == (N, len(dead))
    assert pages == (N + len(dead) + 999) // 1000
