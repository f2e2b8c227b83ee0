"""Crash durability: concurrent writers through every face the build serves,
the server killed with SIGKILL at a random point, restarted, and checked.

After every kill:
  * staging is empty once the server is back (uploads in progress are gone);
  * a store sweep (tests/proof/proof_sweep, grace 0, every liveness source)
    runs over the stopped data dir, and afterwards ...
  * every acknowledged write is readable with the right bytes and the right
    checksum (SHA-256 hex, as Jay reports it), every acknowledged delete is
    absent, and a write whose reply was lost is either wholly there or not at
    all — never a prefix or a mix;
  * a torn upload (a PutObject whose body stopped half-way) is not visible;
  * the listing agrees with what GET sees.

CAIRN_CRASH_CYCLES (default 5) sets the number of kills; `make test-crash`
runs 20.  Faces: Jay native v1 today; the S3 face joins when --http serves it
(see docs/performance.md, "Crash durability").
"""
import hashlib
import os
import random
import socket
import threading
import time

from proofutil import jay, jayclient, kill_sweep_restart, node_factory  # noqa: F401

CYCLES = int(os.environ.get("CAIRN_CRASH_CYCLES", "5"))
WRITERS = 4
KEYS_PER_WRITER = 24
BUCKET = "crash"
SIZES = [0, 1, 100, 4096, 65536 + 7, 300_000, 1 << 20, 3 * (1 << 20) + 5]
ABSENT = None


class Model:
    """What each key may hold.  A key's set of possible contents (digests, or
    ABSENT) collapses to one value on every acknowledgement and widens with
    every request whose outcome is unknown."""

    def __init__(self):
        self.lock = threading.Lock()
        self.possible = {}
        self.acked = 0
        self.unknown = 0
        self.errors = []      # what writer threads saw that must fail the test

    def known(self, key):
        with self.lock:
            return self.possible.get(key, {ABSENT})

    def ack(self, key, value):
        with self.lock:
            self.possible[key] = {value}
            self.acked += 1

    def lost(self, key, value):
        with self.lock:
            self.possible.setdefault(key, {ABSENT}).add(value)
            self.unknown += 1

    def observe(self, key, value):
        with self.lock:
            allowed = self.possible.get(key, {ABSENT})
            assert value in allowed, "key %s holds %s, expected one of %s" % (
                key, value, sorted(map(str, allowed)))
            self.possible[key] = {value}


def payload(rng, size):
    return rng.randbytes(size)


def jay_writer(addr, wid, model, rng, stop):
    """One connection, one request at a time, over its own keys (so the
    order of acknowledgements is the order of commits for each key)."""
    try:
        conn = jay(addr, timeout=30)
    except (OSError, jayclient.JayError):
        return
    with conn:
        while not stop.is_set():
            key = "w%d/k%02d" % (wid, rng.randrange(KEYS_PER_WRITER))
            if rng.random() < 0.15:
                value, call = ABSENT, lambda: conn.delete_object(BUCKET, key)
            else:
                data = payload(rng, rng.choice(SIZES))
                value = hashlib.sha256(data).hexdigest()
                call = (lambda d=data: conn.put_object(BUCKET, key, d))
            try:
                out = call()
            except jayclient.JayError as e:
                if value is ABSENT and e.code == "NoSuchKey":
                    model.ack(key, ABSENT)
                    continue
                model.lost(key, value)
                return
            except (OSError, ConnectionError, ValueError):
                model.lost(key, value)
                return
            if value is not ABSENT and out["checksum"] != value:
                model.errors.append("%s: acknowledged checksum %s, sent %s"
                                    % (key, out["checksum"], value))
            model.ack(key, value)


def torn_upload(addr, key, declared, sent):
    """Sends a PutObject that declares `declared` bytes and stops after
    `sent`; returns the socket, held open until the server dies."""
    c = jay(addr)
    meta = (jayclient.s(BUCKET) + jayclient.s(key) + jayclient.s("application/octet-stream")
            + jayclient.smap({}))
    c.sock.sendall(jayclient.header(jayclient.OP["PutObject"], len(meta), declared) + meta)
    c.sock.sendall(os.urandom(sent))
    return c


def verify(node, model, torn_keys):
    """Reads every key the model knows, checks it, collapses the model."""
    with jay(node) as c:
        for key in sorted(model.possible):
            try:
                info, body = c.get_object(BUCKET, key)
            except jayclient.JayError as e:
                assert e.code == "NoSuchKey", e
                model.observe(key, ABSENT)
                continue
            digest = hashlib.sha256(body).hexdigest()
            assert info["checksum"] == digest, (key, info)
            assert info["size"] == len(body)
            model.observe(key, digest)
        for key in torn_keys:
            try:
                c.head_object(BUCKET, key)
                raise AssertionError("torn upload %s is visible" % key)
            except jayclient.JayError as e:
                assert e.code == "NoSuchKey", e
        listed, after = set(), ""
        while True:
            page = c.list_objects(BUCKET, start_after=after, max_keys=1000)
            listed.update(o["key"] for o in page["contents"])
            if not page["is_truncated"]:
                break
            after = page["next_start_after"]
        present = {k for k, v in model.possible.items() if v != {ABSENT}}
        assert listed == present, (sorted(listed ^ present))


def test_crash_cycles(node_factory):
    rng = random.Random(int(os.environ.get("CAIRN_CRASH_SEED", "0")) or None)
    node = node_factory()
    with jay(node) as c:
        c.create_bucket(BUCKET)
    model = Model()
    torn_keys = []
    swept = {"scanned": 0, "deleted": 0, "live": 0}
    t_start = time.time()
    for cycle in range(CYCLES):
        stop = threading.Event()
        threads = [threading.Thread(target=jay_writer,
                                    args=(node.jay, w, model, random.Random(rng.random()), stop),
                                    daemon=True)
                   for w in range(WRITERS)]
        for t in threads:
            t.start()
        key = "torn/%d" % cycle
        torn_keys.append(key)
        torn = torn_upload(node.jay, key, 4 << 20, rng.randrange(1, 2 << 20))
        time.sleep(rng.uniform(0.2, 1.5))
        kill_sweep_restart(node, stop, threads, [torn], model.errors, swept)
        verify(node, model, torn_keys)

    assert model.acked > 0, "no write was acknowledged: the writers never ran"
    assert swept["scanned"] > 0
    print("crash: %d cycles in %.1fs, %d acknowledged, %d unknown outcomes, swept %s"
          % (CYCLES, time.time() - t_start, model.acked, model.unknown, swept))


def test_torn_handshake_and_header_leave_nothing(node_factory):
    """A connection cut inside the handshake or inside a frame header is not
    a write: the server keeps serving and nothing appears."""
    node = node_factory()
    with jay(node) as c:
        c.create_bucket(BUCKET)
    for cut in (3, 8, 10):
        s = socket.create_connection(node.jay)
        s.sendall(jayclient.handshake_bytes("cnadmin:whatever")[:cut])
        s.close()
    c = jay(node)
    meta = jayclient.s(BUCKET) + jayclient.s("half") + jayclient.s("") + jayclient.smap({})
    c.sock.sendall(jayclient.header(jayclient.OP["PutObject"], len(meta), 10)[:9])
    c.close()
    with jay(node) as c:
        assert c.ping()
        assert c.list_objects(BUCKET)["contents"] == []
