"""Framing: UnknownOp keeps the connection, protocol errors close it,
undecodable metadata is InvalidArgument, limits and collection caps."""
import socket
import struct

import pytest

import jayclient as j
from jayfixtures import conn, jay_args


@pytest.fixture
def srv(server_factory):
    return server_factory(args=jay_args())


def error_of(r):
    rd = j.Reader(r.meta)
    return rd.str(), rd.str()


def assert_closed(c):
    c.sock.settimeout(10)
    try:
        while True:
            if c.sock.recv(65536) == b"":
                return
    except (ConnectionResetError, BrokenPipeError):
        return


def test_unknown_op_keeps_connection(srv):
    with conn(srv) as c:
        for op in (0x00, 0x05, 0x17, 0x30, 0x7F, 0xFE):
            c.send_frame(op, b"some-meta", b"and a body", stream_id=op)
            r = c.read_response()
            assert r.status == j.ST_BAD_REQUEST and r.stream_id == op
            assert error_of(r)[1] == "UnknownOp"
            assert c.ping()


def test_undecodable_metadata_is_invalid_argument(srv):
    with conn(srv) as c:
        cases = [
            (j.OP["CreateBucket"], b""),                          # truncated
            (j.OP["CreateBucket"], b"\x00\x05ab"),                # string past the end
            (j.OP["CreateBucket"], j.s("bucket") + b"X"),          # trailing bytes
            (j.OP["PutObject"], j.s("b") + j.s("k") + j.s("") + b"\xff\xff"),  # map count > bytes
            (j.OP["CompleteMultipartUpload"], j.s("b") + j.s("k") + j.s("u") + b"\x00\x10\x00"),
            (j.OP["ListObjects"], j.s("b") + j.s("") + j.s("") + j.s("")),  # missing i32
            (j.OP["Ping"], b"\x00"),
        ]
        for op, meta in cases:
            c.send_frame(op, meta)
            r = c.read_response()
            assert r.status == j.ST_BAD_REQUEST, (op, meta)
            assert error_of(r)[1] == "InvalidArgument", (op, meta)
        assert c.ping()


def test_meta_len_over_1mib_closes(srv):
    with conn(srv) as c:
        c.sock.sendall(j.header(j.OP["Ping"], (1 << 20) + 1, 0))
        assert_closed(c)


def test_meta_len_exactly_1mib_is_read(srv):
    with conn(srv) as c:
        meta = b"\x00" * (1 << 20)
        c.send_frame(j.OP["CreateBucket"], meta)
        r = c.read_response()
        assert r.status == j.ST_BAD_REQUEST and error_of(r)[1] == "InvalidArgument"
        assert c.ping()


def test_negative_data_len_closes(srv):
    with conn(srv) as c:
        c.sock.sendall(j.header(j.OP["Ping"], 0, -1))
        assert_closed(c)


def test_body_on_bodiless_op_is_drained(srv):
    with conn(srv) as c:
        c.send_frame(j.OP["Ping"], b"", b"x" * 100000)
        r = c.read_response()
        assert r.status == j.ST_BAD_REQUEST and error_of(r)[1] == "InvalidArgument"
        assert c.ping()


def test_collection_caps(srv):
    with conn(srv) as c:
        c.create_bucket("caps")
        # A map of 65535 entries (the format's hard cap) is accepted as a format.
        big = {("k%05d" % i): "" for i in range(65535)}
        r = c.put_object("caps", "many-meta", b"x", metadata=big)
        assert r["etag"]
        info = c.head_object("caps", "many-meta")
        assert len(info["metadata"]) == 65535
        # More parts than S3 allows: InvalidArgument, not a crash.
        uid = c.create_multipart("caps", "p")
        with pytest.raises(j.JayError) as e:
            c.complete_multipart("caps", "p", uid, list(range(1, 10002)))
        assert e.value.code == "InvalidArgument"
        assert c.ping()


def test_strings_with_nul_are_refused(srv):
    with conn(srv) as c:
        c.create_bucket("nul")
        with pytest.raises(j.JayError) as e:
            c.put_object("nul", "a\x00b", b"x")
        assert e.value.code == "InvalidArgument"
        with pytest.raises(j.JayError) as e:
            c.create_bucket("a\x00bc")
        assert e.value.code == "InvalidBucketName"
        assert c.ping()
