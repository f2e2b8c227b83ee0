"""A small Jay native protocol v1 client, written from the spec
(shared/spec/jay-native-v1.txt), for the integration tests.

It is deliberately independent of the C codec: the tests check the server
against this second reading of the contract.  All integers big-endian.
"""
import hashlib
import socket
import struct

MAGIC = b"JAY\x00"
VERSION = 1

HS_OK, HS_AUTH_FAILED, HS_VERSION_MISMATCH, HS_SERVER_BUSY, HS_MALFORMED = range(5)

OP = {
    "CreateBucket": 0x01, "DeleteBucket": 0x02, "HeadBucket": 0x03, "ListBuckets": 0x04,
    "PutObject": 0x10, "GetObject": 0x11, "HeadObject": 0x12, "DeleteObject": 0x13,
    "ListObjects": 0x14, "GetObjectRange": 0x15, "CopyObject": 0x16,
    "CreateMultipartUpload": 0x20, "UploadPart": 0x21, "CompleteMultipartUpload": 0x22,
    "AbortMultipartUpload": 0x23, "ListParts": 0x24, "Ping": 0xFF,
}

ST_OK, ST_NOT_FOUND, ST_CONFLICT, ST_BAD_REQUEST, ST_FORBIDDEN, ST_INTERNAL = range(6)


class JayError(Exception):
    def __init__(self, status, code, message):
        super().__init__(f"{status}/{code}: {message}")
        self.status, self.code, self.message = status, code, message


# ---- encoding -------------------------------------------------------------
def s(v):
    if isinstance(v, str):
        v = v.encode()
    return struct.pack(">H", len(v)) + v


def i32(v):
    return struct.pack(">i", v)


def i64(v):
    return struct.pack(">q", v)


def boolean(v):
    return b"\x01" if v else b"\x00"


def slist(items):
    return struct.pack(">H", len(items)) + b"".join(s(x) for x in items)


def ilist(items):
    return struct.pack(">H", len(items)) + b"".join(i32(x) for x in items)


def smap(d):
    return struct.pack(">H", len(d)) + b"".join(s(k) + s(v) for k, v in d.items())


class Reader:
    def __init__(self, b):
        self.b, self.o = b, 0

    def take(self, n):
        if self.o + n > len(self.b):
            raise ValueError("truncated metadata")
        v = self.b[self.o:self.o + n]
        self.o += n
        return v

    def u16(self):
        return struct.unpack(">H", self.take(2))[0]

    def i32(self):
        return struct.unpack(">i", self.take(4))[0]

    def i64(self):
        return struct.unpack(">q", self.take(8))[0]

    def bool(self):
        return self.take(1) != b"\x00"

    def str(self):
        return self.take(self.u16()).decode()

    def slist(self):
        return [self.str() for _ in range(self.u16())]

    def smap(self):
        return {self.str(): self.str() for _ in range(self.u16())}

    def done(self):
        return self.o == len(self.b)


def header(op, meta_len, data_len, stream_id=0):
    return struct.pack(">BIIq", op, stream_id, meta_len, data_len)


def handshake_bytes(cred, version=VERSION, flags=0, magic=MAGIC):
    if isinstance(cred, str):
        cred = cred.encode()
    return magic + bytes([version, flags]) + struct.pack(">H", len(cred)) + cred


def recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise ConnectionError(f"EOF after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def read_handshake_reply(sock):
    r = recv_exact(sock, 8)
    assert r[:4] == MAGIC, r
    assert r[4] == VERSION, r
    return r[5], r[6:8]


class Response:
    def __init__(self, status, stream_id, meta, data_len):
        self.status, self.stream_id, self.meta, self.data_len = status, stream_id, meta, data_len
        self.body = None


class Conn:
    """One authenticated connection: one request at a time."""

    def __init__(self, addr, cred, timeout=60):
        self.sock = socket.create_connection(addr, timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.sendall(handshake_bytes(cred))
        status, _ = read_handshake_reply(self.sock)
        if status != HS_OK:
            self.sock.close()
            raise JayError(status, "Handshake", f"handshake status {status}")

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    # -- raw frames --
    def send_frame(self, op, meta=b"", body=b"", data_len=None, stream_id=0):
        dl = len(body) if data_len is None else data_len
        self.sock.sendall(header(op, len(meta), dl, stream_id) + meta)
        if body:
            self.sock.sendall(body)

    def read_response(self, read_body=True):
        h = recv_exact(self.sock, 17)
        status, sid, meta_len, data_len = struct.unpack(">BIIq", h)
        meta = recv_exact(self.sock, meta_len) if meta_len else b""
        r = Response(status, sid, meta, data_len)
        if read_body and data_len:
            r.body = recv_exact(self.sock, data_len)
        return r

    def call(self, op, meta=b"", body=b"", read_body=True):
        self.send_frame(OP[op] if isinstance(op, str) else op, meta, body)
        r = self.read_response(read_body)
        if r.status != ST_OK:
            rd = Reader(r.meta)
            msg, code = rd.str(), rd.str()
            assert rd.done(), "error metadata has trailing bytes"
            assert r.data_len == 0
            raise JayError(r.status, code, msg)
        return r

    # -- operations --
    def ping(self):
        r = self.call("Ping")
        assert r.meta == b"" and r.data_len == 0
        return True

    def create_bucket(self, b):
        self.call("CreateBucket", s(b))

    def delete_bucket(self, b):
        self.call("DeleteBucket", s(b))

    def head_bucket(self, b):
        rd = Reader(self.call("HeadBucket", s(b)).meta)
        out = dict(bucket_id=rd.str(), name=rd.str(), created_at=rd.str(), visibility=rd.str())
        assert rd.done()
        return out

    def list_buckets(self):
        rd = Reader(self.call("ListBuckets").meta)
        out = [(rd.str(), rd.str()) for _ in range(rd.u16())]
        assert rd.done()
        return out

    def put_object(self, b, k, data, content_type="application/octet-stream", metadata=None,
                   skip_etag=None):
        meta = s(b) + s(k) + s(content_type) + smap(metadata or {})
        if skip_etag is not None:
            meta += boolean(skip_etag)
        rd = Reader(self.call("PutObject", meta, data).meta)
        out = dict(etag=rd.str(), checksum=rd.str())
        assert rd.done()
        return out

    def put_object_stream(self, b, k, size, chunks, content_type="application/octet-stream",
                          skip_etag=None):
        """Sends size bytes produced by the iterable chunks without holding them."""
        meta = s(b) + s(k) + s(content_type) + smap({})
        if skip_etag is not None:
            meta += boolean(skip_etag)
        self.sock.sendall(header(OP["PutObject"], len(meta), size) + meta)
        for c in chunks:
            self.sock.sendall(c)
        r = self.read_response()
        if r.status != ST_OK:
            rd = Reader(r.meta)
            msg = rd.str()
            raise JayError(r.status, rd.str(), msg)
        rd = Reader(r.meta)
        return dict(etag=rd.str(), checksum=rd.str())

    @staticmethod
    def _object_info(rd):
        out = dict(content_type=rd.str(), size=rd.i64(), etag=rd.str(), checksum=rd.str(),
                   last_modified=rd.str(), metadata=rd.smap())
        assert rd.done()
        return out

    def get_object(self, b, k):
        r = self.call("GetObject", s(b) + s(k))
        info = self._object_info(Reader(r.meta))
        assert r.data_len == info["size"]
        return info, r.body or b""

    def get_object_stream(self, b, k, sink, chunk=1 << 20):
        """Streams the body into sink(bytes); returns the info."""
        r = self.call("GetObject", s(b) + s(k), read_body=False)
        info = self._object_info(Reader(r.meta))
        left = r.data_len
        while left:
            c = self.sock.recv(min(chunk, left))
            if not c:
                raise ConnectionError("EOF in body")
            sink(c)
            left -= len(c)
        return info, r.data_len

    def head_object(self, b, k):
        r = self.call("HeadObject", s(b) + s(k))
        assert r.data_len == 0
        return self._object_info(Reader(r.meta))

    def get_range(self, b, k, offset, length):
        r = self.call("GetObjectRange", s(b) + s(k) + i64(offset) + i64(length))
        return self._object_info(Reader(r.meta)), r.body or b""

    def delete_object(self, b, k):
        self.call("DeleteObject", s(b) + s(k))

    def list_objects(self, b, prefix="", delimiter="", start_after="", max_keys=1000):
        r = self.call("ListObjects", s(b) + s(prefix) + s(delimiter) + s(start_after) + i32(max_keys))
        rd = Reader(r.meta)
        items = [dict(key=rd.str(), size=rd.i64(), etag=rd.str(), checksum=rd.str(),
                      last_modified=rd.str(), content_type=rd.str()) for _ in range(rd.u16())]
        out = dict(contents=items, common_prefixes=rd.slist(), is_truncated=rd.bool(),
                   next_start_after=rd.str())
        assert rd.done()
        return out

    def copy_object(self, sb, sk, db, dk):
        rd = Reader(self.call("CopyObject", s(sb) + s(sk) + s(db) + s(dk)).meta)
        out = dict(etag=rd.str(), checksum=rd.str(), size=rd.i64(), last_modified=rd.str())
        assert rd.done()
        return out

    def create_multipart(self, b, k, content_type="application/octet-stream"):
        rd = Reader(self.call("CreateMultipartUpload", s(b) + s(k) + s(content_type)).meta)
        uid = rd.str()
        assert rd.done()
        return uid

    def upload_part(self, b, k, uid, n, data):
        rd = Reader(self.call("UploadPart", s(b) + s(k) + s(uid) + i32(n), data).meta)
        out = dict(etag=rd.str(), checksum=rd.str())
        assert rd.done()
        return out

    def complete_multipart(self, b, k, uid, parts):
        rd = Reader(self.call("CompleteMultipartUpload", s(b) + s(k) + s(uid) + ilist(parts)).meta)
        out = dict(etag=rd.str(), checksum=rd.str(), size=rd.i64())
        assert rd.done()
        return out

    def abort_multipart(self, b, k, uid):
        self.call("AbortMultipartUpload", s(b) + s(k) + s(uid))

    def list_parts(self, b, k, uid):
        rd = Reader(self.call("ListParts", s(b) + s(k) + s(uid)).meta)
        out = [dict(part_number=rd.i32(), size=rd.i64(), etag=rd.str(), checksum=rd.str())
               for _ in range(rd.u16())]
        assert rd.done()
        return out


def md5_hex(b):
    return hashlib.md5(b).hexdigest()


def sha256_hex(b):
    return hashlib.sha256(b).hexdigest()
