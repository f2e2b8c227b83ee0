"""A small Scribe protocol-2 client for the integration tests, written from
docs/protocol/scribe.md only: SCR1 frames, the hello, both metadata codecs,
the core request and response layouts, the object model encodings and ids,
and LZ4 transfer blocks (a pure-Python block decoder, raw blocks to send).

BLAKE3 comes from the b3sum command (Debian's b3sum package), since the
interpreter has no blake3 module."""
import socket
import struct
import subprocess

MAGIC = b"SCR1"
FLAG_STREAM, FLAG_ERROR = 1, 2

OP = dict(hello=1, discover=2, repo_create=3, repo_info=4, repo_list=5, put_objects=6,
          get_objects=7, presence=8, submit=9, operation_outcome=10, tree_page=11,
          changed_paths=13, log=15, branch_list=20, branch_mutate=21, branch_info=22,
          branch_outcome=23, merge_submit=24, merge_read=25, instance_status=26,
          authorize_upload=27, authorize_repo_create=28,
          cherry_pick_info=32, cherry_pick_submit=33, repo_usage=38, describe_change=39,
          change_notes=40, change_note_history=41, pin_objects=42, tree_proof=43,
          lock_acquire=14, lock_release=16, lock_list=17)

ERR = dict(malformed=1, unsupported_version=2, unauthenticated=3, forbidden=4, internal=5,
           busy=6, auth_unavailable=7, limit_exceeded=8, unsupported_operation=9,
           storage_failure=10, corrupt=11, shutting_down=12, repository_not_found=100,
           branch_not_found=101, change_not_found=102, repository_exists=103,
           object_missing=104, object_invalid=105, workspace_mismatch=106,
           intent_finalized=107, path_conflict=108, workspace_retired=109, branch_exists=110,
           name_mismatch=111, change_not_pickable=112, schema_outdated=113,
           operation_intent_mismatch=200, incarnation_mismatch=201, base_conflict=202,
           base_mismatch=203, merge_incomplete=204, lock_required=205, lock_held=206,
           invalid_repository_config=207, already_applied=208, note_revision_stale=212)

BRANCH_CREATE, BRANCH_RENAME = 1, 2

CHUNK, MANIFEST, CHANGESET, COMMIT = 1, 2, 3, 4
ADD, MODIFY, DELETE, MOVE, KEEP = 1, 2, 3, 4, 5


def b3(data):
    out = subprocess.run(["b3sum", "--no-names", "--raw"], input=data, capture_output=True,
                         check=True).stdout
    return out[:32]


# ---- object model (section 9) ------------------------------------------------------
def chunk_id(data):
    return b3(data)


def manifest_encode(chunks):
    """chunks: list of bytes; returns the canonical manifest encoding."""
    out = struct.pack("<BQI", 1, sum(len(c) for c in chunks), len(chunks))
    for c in chunks:
        out += chunk_id(c) + struct.pack("<I", len(c))
    return out


def manifest_id(enc):
    return b3(b"cairn:manifest:v1\0" + enc)


def changeset_encode(entries):
    """entries: (kind, path, manifest_id or None, mode, from_path or None), any order."""
    entries = sorted(entries, key=lambda e: e[1].encode())
    out = struct.pack("<BI", 1, len(entries))
    for kind, path, mid, mode, src in entries:
        p = path.encode()
        out += struct.pack("<BH", kind, len(p)) + p
        if kind == MOVE:
            s = src.encode()
            out += struct.pack("<H", len(s)) + s
        if kind in (ADD, MODIFY, MOVE):
            out += mid + bytes([mode])
    return out


def changeset_id(enc):
    return b3(b"cairn:changeset:v1\0" + enc)


def commit_id(enc):
    return b3(b"cairn:commit:v1\0" + enc)


def commit_decode(b):
    d = Dec(b, False)
    c = {"version": d.u8(), "repo": d.raw(16), "branch": d.raw(16), "change": d.u64()}
    c["parents"] = [d.raw(32) for _ in range(d.u8())]
    c["changeset"] = d.raw(32)
    c["author"] = d.raw(d.u16()).decode()
    c["message"] = d.raw(d.u32()).decode()
    c["time_ms"] = d.u64()
    c["content_root"] = d.raw(32)
    c["revision_root"] = d.raw(32)
    if d.u8():
        c["pick"] = (d.raw(16), d.u64())
    d.end()
    return c


# ---- LZ4 block format (decoder) --------------------------------------------------------
def lz4_block_decode(src, size):
    out = bytearray()
    i = 0
    while i < len(src):
        token = src[i]
        i += 1
        lit = token >> 4
        if lit == 15:
            while True:
                b = src[i]
                i += 1
                lit += b
                if b != 255:
                    break
        out += src[i:i + lit]
        i += lit
        if i >= len(src):
            break
        off = src[i] | src[i + 1] << 8
        i += 2
        ml = token & 15
        if ml == 15:
            while True:
                b = src[i]
                i += 1
                ml += b
                if b != 255:
                    break
        ml += 4
        start = len(out) - off
        if off == 0 or start < 0:
            raise ValueError("bad lz4 offset")
        for k in range(ml):
            out.append(out[start + k])
    if len(out) != size:
        raise ValueError("lz4 block decodes to %d, not %d" % (len(out), size))
    return bytes(out)


# ---- codecs ----------------------------------------------------------------------------
class Enc:
    def __init__(self, be=False):
        self.e = ">" if be else "<"
        self.b = bytearray()

    def u8(self, v): self.b += struct.pack("B", v); return self
    def u16(self, v): self.b += struct.pack(self.e + "H", v); return self
    def u32(self, v): self.b += struct.pack(self.e + "I", v); return self
    def u64(self, v): self.b += struct.pack(self.e + "Q", v); return self
    def bool(self, v): return self.u8(1 if v else 0)
    def raw(self, v): self.b += v; return self

    def str16(self, s):
        s = s.encode() if isinstance(s, str) else s
        return self.u16(len(s)).raw(s)

    def str32(self, s):
        s = s.encode() if isinstance(s, str) else s
        return self.u32(len(s)).raw(s)

    bytes16 = str16

    def bytes(self):
        return bytes(self.b)


class Dec:
    def __init__(self, b, be=False):
        self.e = ">" if be else "<"
        self.b = b
        self.o = 0

    def take(self, n):
        if self.o + n > len(self.b):
            raise ValueError("truncated")
        v = self.b[self.o:self.o + n]
        self.o += n
        return v

    def u8(self): return self.take(1)[0]
    def u16(self): return struct.unpack(self.e + "H", self.take(2))[0]
    def u32(self): return struct.unpack(self.e + "I", self.take(4))[0]
    def u64(self): return struct.unpack(self.e + "Q", self.take(8))[0]

    def bool(self):
        v = self.u8()
        if v > 1:
            raise ValueError("bad bool")
        return v == 1

    def raw(self, n): return self.take(n)
    def str16(self): return self.take(self.u16())
    def str32(self): return self.take(self.u32())

    def end(self):
        if self.o != len(self.b):
            raise ValueError("%d trailing bytes" % (len(self.b) - self.o))


class ScribeError(Exception):
    def __init__(self, code, message):
        super().__init__("%s (%d): %s" % (
            {v: k for k, v in ERR.items()}.get(code, "?"), code, message))
        self.code = code
        self.message = message


def header(op, flags, rid, length, reserved=0, magic=MAGIC):
    return magic + struct.pack("<HHQII", op, flags, rid, length, reserved)


def hello_payload(version=2, codec=1, caps=0, bind=0, client="pytest/1"):
    c = client.encode()
    return struct.pack("<HBIQH", version, codec, caps, bind, len(c)) + c


class Conn:
    """One Scribe connection.  call() sends a request and returns its reply
    payload, raising ScribeError for an error frame."""

    def __init__(self, addr, codec=1, caps=0, bind=0, timeout=20, hello=True):
        self.sock = socket.create_connection(addr, timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.codec = codec
        self.be = codec == 2
        self.rid = 0
        self.bytes_sent = self.bytes_received = 0
        if hello:
            self.hello_ok = self.hello(codec=codec, caps=caps, bind=bind)

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    def send(self, data):
        self.sock.sendall(data)
        self.bytes_sent += len(data)

    def recv_exact(self, n):
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise EOFError("connection closed after %d of %d bytes" % (len(buf), n))
            buf += chunk
        self.bytes_received += n
        return bytes(buf)

    def closed_by_peer(self, timeout=5):
        """True when the server closed the connection (EOF or reset)."""
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False

    def send_frame(self, op, payload=b"", flags=0, stream=b""):
        self.rid += 1
        self.send(header(op, flags, self.rid, len(payload)) + payload + stream)
        return self.rid

    def recv_frame(self):
        h = self.recv_exact(24)
        assert h[:4] == MAGIC, h
        op, flags, rid, length, reserved = struct.unpack("<HHQII", h[4:])
        assert reserved == 0
        payload = self.recv_exact(length)
        return op, flags, rid, payload

    def error_of(self, payload, be=None):
        d = Dec(payload, self.be if be is None else be)
        code = d.u16()
        msg = d.str16().decode()
        d.end()
        return ScribeError(code, msg)

    def call(self, op, payload=b"", flags=0, stream=b""):
        rid = self.send_frame(op, payload, flags, stream)
        rop, rflags, rrid, body = self.recv_frame()
        assert rrid == rid and rop == op, (rop, rrid, op, rid)
        if rflags & FLAG_ERROR:
            raise self.error_of(body)
        self.last_flags = rflags
        return body

    def hello(self, version=2, codec=1, caps=0, bind=0):
        self.send_frame(OP["hello"], hello_payload(version, codec, caps, bind))
        op, flags, rid, body = self.recv_frame()
        assert op == 1
        if flags & FLAG_ERROR:
            raise self.error_of(body, be=False)
        ver, codec_b, session, timeout, comp = struct.unpack("<HBQIB", body)
        return dict(version=ver, codec=codec_b, session=session, timeout=timeout,
                    compression=comp)

    def enc(self):
        return Enc(self.be)

    def dec(self, b):
        return Dec(b, self.be)

    # ---- repositories ----
    def repo_info_dec(self, d):
        return dict(id=d.raw(16), name=d.str16().decode(), main=d.raw(16), head=d.u64(),
                    incarnation=d.raw(16), created_ms=d.u64(), compression=d.u8())

    def repo_create(self, name, compression=0):
        d = self.dec(self.call(OP["repo_create"], self.enc().str16(name).u8(compression).bytes()))
        info = self.repo_info_dec(d)
        d.end()
        return info

    def repo_info(self, rid=None, name=None):
        e = self.enc()
        e = e.u8(1).raw(rid) if rid is not None else e.u8(2).str16(name)
        d = self.dec(self.call(OP["repo_info"], e.bytes()))
        info = self.repo_info_dec(d)
        d.end()
        return info

    def repo_list(self, limit=100, token=None):
        e = self.enc().u32(limit).bool(token is not None)
        if token is not None:
            e.bytes16(token)
        d = self.dec(self.call(OP["repo_list"], e.bytes()))
        rows = [self.repo_info_dec(d) for _ in range(d.u32())]
        tok = d.str16() if d.bool() else None
        d.end()
        return rows, tok

    def repo_usage(self, rid):
        d = self.dec(self.call(OP["repo_usage"], rid))
        v = d.u64()
        d.end()
        return v

    def instance_status(self, after=None):
        e = self.enc().bool(after is not None)
        if after is not None:
            e.raw(after)
        d = self.dec(self.call(OP["instance_status"], e.bytes()))
        h = dict(incarnation=d.raw(16), total=d.u64(), used=d.u64())
        h["available"] = d.u64() if d.bool() else None
        h["rows"] = [(self.repo_info_dec(d), d.u64()) for _ in range(d.u32())]
        h["next"] = d.raw(16) if d.bool() else None
        d.end()
        return h

    def discover(self):
        return self.call(OP["discover"])

    # ---- objects ----
    def put_objects(self, repo, objs, raw_blocks=False):
        """objs: list of (kind, id, bytes).  With LZ4 transfers the bytes go
        as raw blocks (bit 31 of the stored word)."""
        e = self.enc().raw(repo).u32(len(objs))
        stream = bytearray()
        for kind, oid, data in objs:
            e.u8(kind).raw(oid).u64(len(data))
            if self.hello_ok["compression"] == 1 or raw_blocks:
                for i in range(0, len(data), 262144):
                    blk = data[i:i + 262144]
                    stream += struct.pack("<II", len(blk), len(blk) | 0x80000000) + blk
            else:
                stream += data
        d = self.dec(self.call(OP["put_objects"], e.bytes(), FLAG_STREAM, bytes(stream)))
        stored = [d.u8() for _ in range(d.u32())]
        d.end()
        return stored

    def refs_payload(self, repo, refs, pre=b""):
        e = self.enc().raw(repo).raw(pre).u32(len(refs))
        for kind, oid in refs:
            e.u8(kind).raw(oid)
        return e.bytes()

    def get_objects(self, repo, refs):
        d = self.dec(self.call(OP["get_objects"], self.refs_payload(repo, refs)))
        count = d.u32()
        d.end()
        assert self.last_flags & FLAG_STREAM
        return self.stream_items(count)

    def stream_items(self, count):
        """The items of a get_objects-shaped stream (get_objects, get_chunks):
        (kind, id, bytes or None when absent) each."""
        out = []
        for _ in range(count):
            h = self.dec(self.recv_exact(34))
            kind, oid, present = h.u8(), h.raw(32), h.u8()
            data = None
            if present:
                n = self.dec(self.recv_exact(8)).u64()
                if self.hello_ok["compression"] == 1:
                    data = b""
                    while len(data) < n:
                        orig, stored = struct.unpack("<II", self.recv_exact(8))
                        if stored & 0x80000000:
                            assert stored & 0x7fffffff == orig
                            data += self.recv_exact(orig)
                        else:
                            data += lz4_block_decode(self.recv_exact(stored), orig)
                else:
                    data = self.recv_exact(n)
            out.append((kind, oid, data))
        return out

    def bits(self, body, n):
        d = self.dec(body)
        assert d.u32() == n
        raw = d.raw((n + 7) // 8)
        d.end()
        return [bool(raw[i // 8] >> (i % 8) & 1) for i in range(n)]

    def presence(self, repo, refs):
        return self.bits(self.call(OP["presence"], self.refs_payload(repo, refs)), len(refs))

    def pin(self, repo, workspace, intent, refs):
        return self.bits(self.call(OP["pin_objects"],
                                   self.refs_payload(repo, refs, workspace + intent)), len(refs))

    # ---- submit ----
    def submit_payload(self, repo, incarnation, op, branch, workspace, base, cs, author,
                       message, keep_locks=False):
        return (self.enc().raw(repo).raw(incarnation).raw(op).raw(branch).raw(workspace)
                .u64(base).raw(cs).bool(keep_locks).str16(author).str32(message).bytes())

    def outcome_dec(self, d):
        o = dict(operation=d.raw(16), outcome=d.u8())
        if o["outcome"] == 1:
            o.update(change=d.u64(), commit=d.raw(32))
        else:
            o.update(code=d.u16(), head=d.u64(), detail=d.str16().decode())
            o["paths"] = [d.str16().decode() for _ in range(d.u32())]
        return o

    def submit(self, *args, **kw):
        d = self.dec(self.call(OP["submit"], self.submit_payload(*args, **kw)))
        o = self.outcome_dec(d)
        d.end()
        return o

    def operation_outcome(self, repo, op):
        """(kind, outcome): kind 1 a Submit outcome, 2 a Branch outcome, 0 None."""
        d = self.dec(self.call(OP["operation_outcome"], repo + op))
        kind = d.u8()
        o = self.outcome_dec(d) if kind == 1 else self.branch_outcome_dec(d) if kind == 2 else None
        d.end()
        return kind, o

    # ---- branches (section 7.8) ----
    def branch_info_dec(self, d):
        b = dict(id=d.raw(16), name=d.str16().decode(), head=d.u64())
        b["origin"] = (d.raw(16), d.u64()) if d.bool() else None
        b["created_ms"] = d.u64()
        return b

    def branch_outcome_dec(self, d):
        o = dict(operation=d.raw(16), outcome=d.u8())
        if o["outcome"] == 1:
            o["branch"] = self.branch_info_dec(d)
        else:
            o.update(code=d.u16(), detail=d.str16().decode())
        return o

    def branch_list(self, repo, limit=100, after=None):
        e = self.enc().raw(repo).u32(limit).bool(after is not None)
        if after is not None:
            e.str16(after)
        d = self.dec(self.call(OP["branch_list"], e.bytes()))
        rows = [self.branch_info_dec(d) for _ in range(d.u32())]
        more = d.bool()
        d.end()
        return rows, more

    def branch_create_payload(self, repo, incarnation, op, branch, name, source, change):
        return (self.enc().raw(repo).raw(incarnation).raw(op).raw(branch).str16(name)
                .u8(BRANCH_CREATE).raw(source).u64(change).bytes())

    def branch_rename_payload(self, repo, incarnation, op, branch, name, expected):
        return (self.enc().raw(repo).raw(incarnation).raw(op).raw(branch).str16(name)
                .u8(BRANCH_RENAME).str16(expected).bytes())

    def branch_mutate(self, payload):
        """Sends a branch_mutate payload; returns (Branch outcome, its raw bytes)."""
        body = self.call(OP["branch_mutate"], payload)
        d = self.dec(body)
        o = self.branch_outcome_dec(d)
        d.end()
        return o, body

    def branch_create(self, *args):
        return self.branch_mutate(self.branch_create_payload(*args))[0]

    def branch_rename(self, *args):
        return self.branch_mutate(self.branch_rename_payload(*args))[0]

    def branch_info(self, repo, bid=None, name=None):
        e = self.enc().raw(repo)
        e = e.u8(1).raw(bid) if bid is not None else e.u8(2).str16(name)
        d = self.dec(self.call(OP["branch_info"], e.bytes()))
        b = self.branch_info_dec(d)
        d.end()
        return b

    def branch_outcome(self, repo, op):
        """(kind, Branch outcome or None, raw reply)."""
        body = self.call(OP["branch_outcome"], repo + op)
        d = self.dec(body)
        kind = d.u8()
        o = self.branch_outcome_dec(d) if kind == 2 else None
        d.end()
        return kind, o, body

    # ---- merges (section 7.9) ----
    def merge_submit(self, submit_payload, target_head, source, source_head, base_branch, base):
        e = self.enc().u32(len(submit_payload)).raw(submit_payload).u64(target_head).raw(source)
        e.u64(source_head).raw(base_branch).u64(base)
        d = self.dec(self.call(OP["merge_submit"], e.bytes()))
        o = self.outcome_dec(d)
        d.end()
        return o

    def merge_read(self, payload):
        d = self.dec(self.call(OP["merge_read"], payload))
        return d

    def merge_base(self, repo, target, trev, source, srev):
        d = self.merge_read(self.enc().raw(repo).u8(6).raw(target).u64(trev).raw(source)
                            .u64(srev).bytes())
        assert d.u8() == 6
        out = (d.raw(16), d.u64())
        d.end()
        return out

    def merge_chains(self, repo, left, right, cursor=None):
        e = self.enc().raw(repo).u8(1).u64(left).u64(right).bool(cursor is not None)
        if cursor is not None:
            e.str16(cursor)
        d = self.merge_read(e.bytes())
        assert d.u8() == 1
        left, right = d.u64(), d.u64()
        cur = d.str16().decode() if d.bool() else None
        paths = [d.str16().decode() for _ in range(d.u32())]
        d.end()
        return left, right, cur, paths

    def paths_payload(self, repo, tag, branch, a, b, paths):
        e = self.enc().raw(repo).u8(tag).raw(branch).u64(a)
        if b is not None:
            e.u64(b)
        e.u32(len(paths))
        for p in paths:
            e.str16(p)
        return e.bytes()

    def file_state_dec(self, d):
        st = dict(kind=d.u8(), change=d.u64())
        if st["kind"] == 1:
            st.update(manifest=d.raw(32), size=d.u64(), mode=d.u8())
        return st

    def merge_states(self, repo, branch, revision, paths):
        d = self.merge_read(self.paths_payload(repo, 2, branch, revision, None, paths))
        assert d.u8() == 2
        out = [self.file_state_dec(d) if d.bool() else None for _ in range(d.u32())]
        d.end()
        return out

    def merge_origins(self, repo, branch, revision, base_branch, base_revision, paths):
        """Per path: None (no recorded base file), a base path (unique), or "*" (several)."""
        e = self.enc().raw(repo).u8(4).raw(branch).u64(revision).raw(base_branch)
        e.u64(base_revision).u32(len(paths))
        for p in paths:
            e.str16(p)
        d = self.merge_read(e.bytes())
        assert d.u8() == 4
        out = []
        for _ in range(d.u32()):
            kind = d.u8()
            out.append(d.str16().decode() if kind == 1 else "*" if kind == 2 else None)
            assert kind in (0, 1, 2)
        d.end()
        return out

    def merge_unchanged(self, repo, branch, frm, to, paths):
        d = self.merge_read(self.paths_payload(repo, 5, branch, frm, to, paths))
        assert d.u8() == 5
        v = d.bool()
        d.end()
        return v

    # ---- history ----
    def lock_paths(self, e, paths):
        e.u32(len(paths))
        for p in paths:
            e.str16(p)
        return e.bytes()

    def lock_acquire(self, repo, ws, branch, paths):
        """The number of paths the request newly locked."""
        e = self.enc().raw(repo).raw(ws).raw(branch)
        d = self.dec(self.call(OP["lock_acquire"], self.lock_paths(e, paths)))
        n = d.u32()
        d.end()
        return n

    def lock_release(self, repo, ws, paths, force=False):
        """The number of locks the request released."""
        e = self.enc().raw(repo).raw(ws).bool(force)
        d = self.dec(self.call(OP["lock_release"], self.lock_paths(e, paths)))
        n = d.u32()
        d.end()
        return n

    def tree_page(self, repo, branch, change, prefix="", limit=100, after=None):
        e = self.enc().raw(repo).raw(branch).u64(change).str16(prefix).u32(limit)
        e.bool(after is not None)
        if after is not None:
            e.str16(after)
        d = self.dec(self.call(OP["tree_page"], e.bytes()))
        rows = []
        for _ in range(d.u32()):
            rows.append(dict(path=d.str16().decode(), manifest=d.raw(32), size=d.u64(),
                             mode=d.u8(), last_change=d.u64()))
        more = d.bool()
        content, revision = d.raw(32), d.raw(32)
        d.end()
        return rows, more, content, revision

    def log(self, repo, branch, path=None, before=None, after_path=None, limit=100,
            follow=False, all_branches=False, ceiling=None):
        """Rows as dicts; all_branches rows also carry ceiling and member."""
        e = self.enc().raw(repo).raw(branch).bool(path is not None)
        if path is not None:
            e.str16(path)
        e.bool(follow).bool(all_branches).bool(ceiling is not None)
        if ceiling is not None:
            e.u64(ceiling)
        e.bool(before is not None)
        if before is not None:
            e.u64(before)
        e.bool(after_path is not None)
        if after_path is not None:
            e.str16(after_path)
        e.u32(limit)
        d = self.dec(self.call(OP["log"], e.bytes()))
        rows = []
        for _ in range(d.u32()):
            r = dict(change=d.u64(), commit=d.raw(32), branch=d.raw(16),
                     branch_name=d.str16().decode(), parent=d.u64(), path=d.str16().decode(),
                     event=d.u8())
            if r["event"] == MOVE:
                r["from"] = d.str16().decode()
            r.update(author=d.str16().decode(), message=d.str32().decode(), time_ms=d.u64())
            r["merge"] = (d.raw(16), d.u64()) if d.bool() else None
            r["pick"] = (d.raw(16), d.u64()) if d.bool() else None
            if all_branches:
                r.update(ceiling=d.u64(), member=d.bool())
            rows.append(r)
        d.end()
        return rows

    def changed_paths(self, repo, branch, frm, to, prefix="", limit=100, token=None):
        e = self.enc().raw(repo).raw(branch).u64(frm).u64(to).str16(prefix).u32(limit)
        e.bool(token is not None)
        if token is not None:
            e.bytes16(token)
        d = self.dec(self.call(OP["changed_paths"], e.bytes()))
        rows = []
        for _ in range(d.u32()):
            r = dict(path=d.str16().decode(), change=d.u64(), present=d.bool())
            if r["present"]:
                r.update(manifest=d.raw(32), size=d.u64(), mode=d.u8())
            rows.append(r)
        tok = d.str16() if d.bool() else None
        d.end()
        return rows, tok

    def note_dec(self, d):
        return dict(change=d.u64(), revision=d.u32(), author=d.str16().decode(),
                    edited_ms=d.u64(), text=d.str32().decode())

    def describe(self, repo, change, expected, author, text):
        e = self.enc().raw(repo).u64(change).u32(expected).str16(author).str32(text)
        d = self.dec(self.call(OP["describe_change"], e.bytes()))
        n = self.note_dec(d)
        d.end()
        return n

    def notes(self, repo, changes):
        e = self.enc().raw(repo).u32(len(changes))
        for c in changes:
            e.u64(c)
        d = self.dec(self.call(OP["change_notes"], e.bytes()))
        out = [self.note_dec(d) if d.bool() else None for _ in range(d.u32())]
        d.end()
        return out

    def note_history(self, repo, change, after=0, limit=100):
        e = self.enc().raw(repo).u64(change).u32(after).u32(limit)
        d = self.dec(self.call(OP["change_note_history"], e.bytes()))
        out = [self.note_dec(d) for _ in range(d.u32())]
        more = d.bool()
        d.end()
        return out, more


def file_objects(data):
    """A file as (chunks, manifest encoding, manifest id), chunks of 1 MiB."""
    chunks = [data[i:i + (1 << 20)] for i in range(0, len(data), 1 << 20)]
    enc = manifest_encode(chunks)
    return chunks, enc, manifest_id(enc)
