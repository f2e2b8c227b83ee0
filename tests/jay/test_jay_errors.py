"""Every error code of the v1 table that a client can reach, with its status:
AccessDenied, BucketAlreadyExists, BucketNotEmpty, EntityTooLarge,
InvalidArgument, InvalidBucketName, InvalidRange, NoSuchBucket, NoSuchKey,
NoSuchUpload, RateLimitExceeded, UnknownOp.  (InternalError needs a broken
server.)  Also permissions and a bucket policy that denies by source IP."""
import time

import pytest

import jayclient as j
from jayfixtures import conn, jay_args, new_token, objects_admin, restart

STATUS = {
    "AccessDenied": j.ST_FORBIDDEN, "BucketAlreadyExists": j.ST_CONFLICT,
    "BucketNotEmpty": j.ST_CONFLICT, "EntityTooLarge": j.ST_BAD_REQUEST,
    "InvalidArgument": j.ST_BAD_REQUEST, "InvalidBucketName": j.ST_BAD_REQUEST,
    "InvalidRange": j.ST_BAD_REQUEST, "NoSuchBucket": j.ST_NOT_FOUND,
    "NoSuchKey": j.ST_NOT_FOUND, "NoSuchUpload": j.ST_NOT_FOUND,
    "RateLimitExceeded": j.ST_BAD_REQUEST, "UnknownOp": j.ST_BAD_REQUEST,
}


def expect(code, fn, *args):
    with pytest.raises(j.JayError) as e:
        fn(*args)
    assert e.value.code == code, e.value
    assert e.value.status == STATUS[code], e.value
    return e.value


def test_error_codes(server_factory):
    srv = server_factory(args=jay_args(), env={"JAY_MAX_OBJECT_SIZE": "1048576"})
    with conn(srv) as c:
        c.create_bucket("errs")
        expect("BucketAlreadyExists", c.create_bucket, "errs")
        for bad in ("ab", "UPPER", "a_b", "-lead", "192.168.0.1", "x" * 64):
            expect("InvalidBucketName", c.create_bucket, bad)
        expect("NoSuchBucket", c.head_bucket, "nothere")
        expect("NoSuchBucket", c.delete_bucket, "nothere")
        expect("NoSuchBucket", c.put_object, "nothere", "k", b"x")
        expect("NoSuchBucket", c.list_objects, "nothere")
        expect("NoSuchKey", c.get_object, "errs", "nokey")
        expect("NoSuchKey", c.delete_object, "errs", "nokey")
        c.put_object("errs", "k", b"0123456789")
        expect("BucketNotEmpty", c.delete_bucket, "errs")
        expect("InvalidRange", c.get_range, "errs", "k", 10, 1)
        expect("NoSuchUpload", c.upload_part, "errs", "k", "0" * 32, 1, b"x")
        expect("InvalidArgument", c.list_objects, "errs", "", "", "", -1)
        expect("InvalidArgument", c.put_object, "errs", "", b"x")            # empty key
        expect("InvalidArgument", c.put_object, "errs", "k" * 1025, b"x")    # key too long
        # EntityTooLarge is decided from data_len before a byte is stored,
        # and the body is drained: the connection stays in sync.
        e = expect("EntityTooLarge", c.put_object, "errs", "big", b"x" * (1048576 + 1))
        assert "limit" in e.message
        uid = c.create_multipart("errs", "mp")
        expect("EntityTooLarge", c.upload_part, "errs", "mp", uid, 1, b"x" * (1048576 + 1))
        assert c.put_object("errs", "fits", b"x" * 1048576)["etag"]
        expect("NoSuchKey", c.head_object, "errs", "big")
        c.send_frame(0x42)
        r = c.read_response()
        rd = j.Reader(r.meta)
        rd.str()
        assert rd.str() == "UnknownOp" and r.status == j.ST_BAD_REQUEST
        assert c.ping()


def test_entity_too_large_past_drain_limit_closes_after_answering(server_factory):
    srv = server_factory(args=jay_args(), env={"JAY_MAX_OBJECT_SIZE": "1024"})
    with conn(srv) as c:
        c.create_bucket("huge")
        # Declares 1 TiB, sends none of it: answered at once, then closed
        # (draining a terabyte is not an option).
        meta = j.s("huge") + j.s("k") + j.s("") + j.smap({}) + j.boolean(False)
        c.sock.sendall(j.header(j.OP["PutObject"], len(meta), 1 << 40) + meta)
        r = c.read_response()
        rd = j.Reader(r.meta)
        rd.str()
        assert r.status == j.ST_BAD_REQUEST and rd.str() == "EntityTooLarge"
        c.sock.settimeout(10)
        assert c.sock.recv(1) == b""


def test_permission_denials(server_factory):
    srv = server_factory(args=jay_args())
    with conn(srv) as admin:
        admin.create_bucket("shared")
        admin.put_object("shared", "doc", b"secret")
    # alice: a token that may read but not write
    ro = new_token(srv, "alice", ["object:get", "object:list", "bucket:list"])
    with j.Conn(srv.addrs["jay"], ro) as c:
        expect("AccessDenied", c.create_bucket, "alices")
        # the admin's bucket is private to the admin account
        expect("AccessDenied", c.get_object, "shared", "doc")
        expect("AccessDenied", c.list_objects, "shared")
    rw = new_token(srv, "alice", ["bucket:create", "object:get", "object:list"],
                   create_account=False)
    with j.Conn(srv.addrs["jay"], rw) as c:
        c.create_bucket("alices")
        expect("AccessDenied", c.put_object, "alices", "k", b"x" * 5000)   # no object:put
        assert c.ping()                        # the refused body was drained
        assert c.list_objects("alices")["contents"] == []
    full = new_token(srv, "alice", create_account=False)
    with j.Conn(srv.addrs["jay"], full) as c:
        c.put_object("alices", "mine", b"m")
        # copy needs get on the source: denied, and said so
        e = expect("AccessDenied", c.copy_object, "shared", "doc", "alices", "stolen")
        assert e.message.startswith("source:")
    with conn(srv) as admin:
        e = expect("AccessDenied", admin.copy_object, "shared", "doc", "alices", "pushed")
        assert e.message.startswith("destination:")
        # the owner account itself is not limited by bob's buckets
        assert admin.get_object("shared", "doc")[1] == b"secret"


def test_rate_limit_shared_across_connections(server_factory):
    srv = server_factory(args=jay_args(), env={"CAIRN_RATE_LIMIT": "1,3"})
    a = conn(srv)
    b = conn(srv)
    try:
        codes = []
        for c in (a, b, a, b, a, b):
            try:
                c.ping()
                codes.append("ok")
            except j.JayError as e:
                assert e.status == j.ST_BAD_REQUEST
                codes.append(e.code)
        assert codes.count("ok") <= 4 and "RateLimitExceeded" in codes
        time.sleep(2.2)
        assert a.ping()             # refilled; and the connection stayed usable
    finally:
        a.close()
        b.close()


def test_bucket_policy_denies_by_source_ip(server_factory, tmp_path):
    srv = server_factory(args=jay_args())
    with conn(srv) as c:
        c.create_bucket("guarded")
        c.put_object("guarded", "k", b"v")
        assert c.get_object("guarded", "k")[1] == b"v"
    data = srv.data_dir
    srv.stop()        # the store is one process's at a time
    pol = tmp_path / "deny-loopback.json"
    pol.write_text('{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":"*",'
                   '"Action":["s3:GetObject","s3:PutObject"],"Resource":"arn:aws:s3:::guarded/*",'
                   '"Condition":{"IpAddress":{"aws:SourceIp":"127.0.0.0/8"}}}]}')
    objects_admin(data, "admin", "policy", "guarded", str(pol))
    srv2 = restart(server_factory, srv)
    with conn(srv2) as c:
        expect("AccessDenied", c.get_object, "guarded", "k")
        expect("AccessDenied", c.put_object, "guarded", "k2", b"x")
        assert c.list_objects("guarded")["contents"][0]["key"] == "k"   # not denied
    srv2.stop()
    # The same policy for another range lets loopback through.
    pol.write_text(pol.read_text().replace("127.0.0.0/8", "10.0.0.0/8"))
    objects_admin(data, "admin", "policy", "guarded", str(pol))
    srv3 = restart(server_factory, srv2)
    with conn(srv3) as c:
        assert c.get_object("guarded", "k")[1] == b"v"


def test_public_visibility(server_factory):
    srv = server_factory(args=jay_args())
    with conn(srv) as c:
        c.create_bucket("pub")
        c.put_object("pub", "k", b"v")
    data = srv.data_dir
    srv.stop()
    objects_admin(data, "admin", "visibility", "pub", "public")
    srv2 = restart(server_factory, srv)
    with conn(srv2) as c:
        assert c.head_bucket("pub")["visibility"] == "public"
    other = new_token(srv2, "carol", ["object:get", "object:list"])
    with j.Conn(srv2.addrs["jay"], other) as c:
        assert [e["key"] for e in c.list_objects("pub")["contents"]] == ["k"]
