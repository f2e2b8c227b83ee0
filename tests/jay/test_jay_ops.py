"""Every Jay opcode through the real cairnd, with the response layouts and
semantics of shared/spec/jay-native-v1.txt."""
import hashlib
import re
import struct

import pytest

import jayclient as j
from jayfixtures import conn, jay_args

RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


@pytest.fixture
def srv(server_factory):
    return server_factory(args=jay_args())


def test_ping_and_stream_id_echo(srv):
    with conn(srv) as c:
        assert c.ping()
        c.send_frame(j.OP["Ping"], stream_id=0xDEADBEEF)
        r = c.read_response()
        assert r.status == 0 and r.stream_id == 0xDEADBEEF and r.meta == b"" and r.data_len == 0


def test_buckets(srv):
    with conn(srv) as c:
        c.create_bucket("alpha")
        c.create_bucket("beta")
        hb = c.head_bucket("alpha")
        assert hb["name"] == "alpha" and hb["visibility"] == "private"
        assert hb["bucket_id"].isdigit() and RFC3339.match(hb["created_at"])
        names = [n for n, _ in c.list_buckets()]
        assert names == ["alpha", "beta"]
        assert all(RFC3339.match(t) for _, t in c.list_buckets())
        c.delete_bucket("beta")
        assert [n for n, _ in c.list_buckets()] == ["alpha"]


def test_put_get_head_delete(srv):
    body = b"The quick brown fox" * 1000
    with conn(srv) as c:
        c.create_bucket("objs")
        r = c.put_object("objs", "dir/fox.txt", body, content_type="text/plain",
                         metadata={"color": "red", "empty": ""})
        assert r["etag"] == hashlib.md5(body).hexdigest()
        assert r["checksum"] == hashlib.sha256(body).hexdigest()
        info, got = c.get_object("objs", "dir/fox.txt")
        assert got == body
        assert info["size"] == len(body) and info["content_type"] == "text/plain"
        assert info["metadata"] == {"color": "red", "empty": ""}
        assert info["etag"] == r["etag"] and info["checksum"] == r["checksum"]
        assert RFC3339.match(info["last_modified"])
        assert c.head_object("objs", "dir/fox.txt") == info
        c.delete_object("objs", "dir/fox.txt")
        with pytest.raises(j.JayError) as e:
            c.head_object("objs", "dir/fox.txt")
        assert e.value.code == "NoSuchKey" and e.value.status == j.ST_NOT_FOUND


def test_skip_etag_and_absent_trailing_field(srv):
    with conn(srv) as c:
        c.create_bucket("etags")
        assert c.put_object("etags", "a", b"x", skip_etag=True)["etag"] == ""
        assert c.put_object("etags", "b", b"x", skip_etag=False)["etag"] == hashlib.md5(b"x").hexdigest()
        # No trailing byte at all: decodes as false.
        assert c.put_object("etags", "c", b"x", skip_etag=None)["etag"] == hashlib.md5(b"x").hexdigest()


def test_empty_object(srv):
    with conn(srv) as c:
        c.create_bucket("empty")
        r = c.put_object("empty", "zero", b"")
        assert r["etag"] == hashlib.md5(b"").hexdigest()
        info, got = c.get_object("empty", "zero")
        assert got == b"" and info["size"] == 0
        with pytest.raises(j.JayError) as e:
            c.get_range("empty", "zero", 0, 0)
        assert e.value.code == "InvalidRange"
        assert c.ping()


def test_get_object_range(srv):
    body = bytes(range(256)) * 4
    with conn(srv) as c:
        c.create_bucket("ranges")
        c.put_object("ranges", "k", body)
        info, got = c.get_range("ranges", "k", 10, 20)
        assert got == body[10:30] and info["size"] == len(body)     # whole-object metadata
        assert c.get_range("ranges", "k", 1000, 0)[1] == body[1000:]   # 0: to the end
        assert c.get_range("ranges", "k", 1000, -5)[1] == body[1000:]  # negative: to the end
        assert c.get_range("ranges", "k", 1020, 999)[1] == body[1020:]  # clamped
        assert c.get_range("ranges", "k", 1023, 1)[1] == body[1023:]
        for off in (1024, 5000):
            with pytest.raises(j.JayError) as e:
                c.get_range("ranges", "k", off, 1)
            assert e.value.code == "InvalidRange" and e.value.status == j.ST_BAD_REQUEST
        with pytest.raises(j.JayError) as e:
            c.get_range("ranges", "k", -1, 1)
        assert e.value.code == "InvalidArgument"
        assert c.ping()


def test_list_objects(srv):
    keys = ["a/1", "a/2", "a/b/3", "b/1", "c", "d", "e/x/y", "f"]
    with conn(srv) as c:
        c.create_bucket("listing")
        for k in keys:
            c.put_object("listing", k, k.encode(), content_type="text/x-" + k[0])
        out = c.list_objects("listing")
        assert [e["key"] for e in out["contents"]] == keys
        assert out["common_prefixes"] == [] and not out["is_truncated"]
        e0 = out["contents"][0]
        assert e0["size"] == 3 and e0["etag"] == hashlib.md5(b"a/1").hexdigest()
        assert e0["checksum"] == hashlib.sha256(b"a/1").hexdigest()
        assert e0["content_type"] == "text/x-a" and RFC3339.match(e0["last_modified"])

        out = c.list_objects("listing", delimiter="/")
        assert [e["key"] for e in out["contents"]] == ["c", "d", "f"]
        assert out["common_prefixes"] == ["a/", "b/", "e/"]

        out = c.list_objects("listing", prefix="a/", delimiter="/")
        assert [e["key"] for e in out["contents"]] == ["a/1", "a/2"]
        assert out["common_prefixes"] == ["a/b/"]

        out = c.list_objects("listing", start_after="c")
        assert [e["key"] for e in out["contents"]] == ["d", "e/x/y", "f"]

        # Pages of two, keys and prefixes together, following next_start_after.
        seen, marker = [], ""
        for _ in range(10):
            out = c.list_objects("listing", delimiter="/", start_after=marker, max_keys=2)
            page = sorted([e["key"] for e in out["contents"]] + out["common_prefixes"])
            assert len(page) <= 2
            seen += page
            if not out["is_truncated"]:
                assert out["next_start_after"] == ""
                break
            marker = out["next_start_after"]
            assert marker == page[-1]
        assert seen == ["a/", "b/", "c", "d", "e/", "f"]


def test_list_objects_caps_at_1000(srv):
    with conn(srv) as c:
        c.create_bucket("many")
        for i in range(1005):
            c.put_object("many", "k%05d" % i, b"")
        out = c.list_objects("many", max_keys=5000)
        assert len(out["contents"]) == 1000 and out["is_truncated"]
        assert out["next_start_after"] == "k00999"
        out = c.list_objects("many", max_keys=0)
        assert len(out["contents"]) == 1000
        out = c.list_objects("many", start_after="k00999")
        assert len(out["contents"]) == 5 and not out["is_truncated"]


def test_copy_object(srv):
    with conn(srv) as c:
        c.create_bucket("src")
        c.create_bucket("dst")
        p = c.put_object("src", "one", b"copy me", content_type="image/png", metadata={"k": "v"})
        before = blob_count(srv)
        r = c.copy_object("src", "one", "dst", "two")
        assert blob_count(srv) == before      # no bytes copied on disk
        assert r["etag"] == p["etag"] and r["checksum"] == p["checksum"] and r["size"] == 7
        assert RFC3339.match(r["last_modified"])
        info, got = c.get_object("dst", "two")
        assert got == b"copy me" and info["content_type"] == "image/png"
        assert info["metadata"] == {"k": "v"}
        with pytest.raises(j.JayError) as e:
            c.copy_object("src", "missing", "dst", "x")
        assert e.value.code == "NoSuchKey" and e.value.message.startswith("source:")
        with pytest.raises(j.JayError) as e:
            c.copy_object("nosrc", "one", "dst", "x")
        assert e.value.code == "NoSuchBucket" and e.value.message.startswith("source:")
        with pytest.raises(j.JayError) as e:
            c.copy_object("src", "one", "nodst", "x")
        assert e.value.code == "NoSuchBucket" and e.value.message.startswith("destination:")


def blob_count(srv):
    import os
    n = 0
    for _, _, files in os.walk(os.path.join(srv.data_dir, "blobs")):
        n += len(files)
    return n


def test_multipart(srv):
    parts = [b"A" * 100000, b"B" * 100000, b"C" * 1234]
    with conn(srv) as c:
        c.create_bucket("mpu")
        uid = c.create_multipart("mpu", "big", content_type="application/x-big")
        assert uid
        etags = []
        for i, p in enumerate(parts, 1):
            r = c.upload_part("mpu", "big", uid, i, p)
            assert r["etag"] == hashlib.md5(p).hexdigest()
            assert r["checksum"] == hashlib.sha256(p).hexdigest()
            etags.append(r["etag"])
        # Replacing a part number keeps only the last upload.
        c.upload_part("mpu", "big", uid, 2, b"x")
        c.upload_part("mpu", "big", uid, 2, parts[1])
        lp = c.list_parts("mpu", "big", uid)
        assert [(p["part_number"], p["size"]) for p in lp] == [(1, 100000), (2, 100000), (3, 1234)]
        assert [p["etag"] for p in lp] == etags
        done = c.complete_multipart("mpu", "big", uid, [1, 2, 3])
        want = hashlib.md5(b"".join(bytes.fromhex(e) for e in etags)).hexdigest() + "-3"
        assert done["etag"] == want
        whole = b"".join(parts)
        assert done["checksum"] == hashlib.sha256(whole).hexdigest()
        assert done["size"] == len(whole)
        info, got = c.get_object("mpu", "big")
        assert got == whole and info["etag"] == want and info["content_type"] == "application/x-big"
        assert c.get_range("mpu", "big", 99990, 20)[1] == whole[99990:100010]
        # Completed, aborted or unknown: NoSuchUpload.
        for call in (lambda: c.complete_multipart("mpu", "big", uid, [1]),
                     lambda: c.upload_part("mpu", "big", uid, 4, b"x"),
                     lambda: c.list_parts("mpu", "big", uid),
                     lambda: c.abort_multipart("mpu", "big", uid),
                     lambda: c.abort_multipart("mpu", "big", "no-such-upload")):
            with pytest.raises(j.JayError) as e:
                call()
            assert e.value.code == "NoSuchUpload" and e.value.status == j.ST_NOT_FOUND
        uid2 = c.create_multipart("mpu", "gone")
        c.upload_part("mpu", "gone", uid2, 1, b"data")
        c.abort_multipart("mpu", "gone", uid2)
        with pytest.raises(j.JayError) as e:
            c.upload_part("mpu", "gone", uid2, 2, b"x")
        assert e.value.code == "NoSuchUpload"
        with pytest.raises(j.JayError) as e:
            c.head_object("mpu", "gone")
        assert e.value.code == "NoSuchKey"
        # Part numbers must ascend and exist.
        uid3 = c.create_multipart("mpu", "order")
        c.upload_part("mpu", "order", uid3, 1, b"1")
        c.upload_part("mpu", "order", uid3, 2, b"2")
        for bad in ([2, 1], [1, 3], [], [1, 1]):
            with pytest.raises(j.JayError) as e:
                c.complete_multipart("mpu", "order", uid3, bad)
            assert e.value.code == "InvalidArgument"
        with pytest.raises(j.JayError) as e:
            c.upload_part("mpu", "order", uid3, 0, b"x")
        assert e.value.code == "InvalidArgument"
        assert c.complete_multipart("mpu", "order", uid3, [2])["size"] == 1


def test_one_request_at_a_time_many_connections(srv):
    conns = [conn(srv) for _ in range(8)]
    try:
        conns[0].create_bucket("shared")
        for i, c in enumerate(conns):
            c.put_object("shared", "k%d" % i, b"v%d" % i)
        for i, c in enumerate(conns):
            assert c.get_object("shared", "k%d" % i)[1] == b"v%d" % i
    finally:
        for c in conns:
            c.close()


def test_unfinished_upload_expires(server_factory):
    import time
    srv = server_factory(args=jay_args(), env={"CAIRN_UPLOAD_EXPIRY_SECONDS": "1"})
    with conn(srv) as c:
        c.create_bucket("expiry")
        uid = c.create_multipart("expiry", "k")
        c.upload_part("expiry", "k", uid, 1, b"part")
        time.sleep(1.3)
        with pytest.raises(j.JayError) as e:
            c.upload_part("expiry", "k", uid, 2, b"x")
        assert e.value.code == "NoSuchUpload"
        with pytest.raises(j.JayError) as e:
            c.complete_multipart("expiry", "k", uid, [1])
        assert e.value.code == "NoSuchUpload"
