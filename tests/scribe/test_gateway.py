"""The gateway role of cairnd (docs/protocol/scribe-gateway.md, "Gateway role")
through real processes: a `cairnd --gateway FILE --scribe ADDR` in front of two
or three real storage servers on loopback (ephemeral ports), driven by the
tests' wire client (scribe_wire.py) and by the `cairn` command.  Configuration
refusals, discover from configuration, names, placement and its reconciliation
after a kill, forwarding with streamed bodies, repo_list's merge, repo_usage,
data connections and upstream replacement."""
import os
import signal
import time

import pytest

from conftest import Server, assert_no_sanitizer, binary, run
from scribe_wire import (CHANGESET, CHUNK, ERR, FLAG_STREAM, MANIFEST, OP, ADD, Conn,
                         ScribeError, changeset_encode, changeset_id, chunk_id, file_objects,
                         header)

STORAGE = ["--jay", "off", "--http", "off", "--scribe", "127.0.0.1:0"]


def ep(s):
    host, port = s.addrs["scribe"]
    return "%s:%d" % (host, port)


def write_config(path, addrs, extra=""):
    with open(path, "w") as f:
        f.write(extra)
        for a in addrs:
            f.write('[[storage]]\naddress = "%s"\nnamespace = ""\n' % a)
    return str(path)


class Fleet:
    """n storage servers and a gateway over them, stopped by the fixture."""

    def __init__(self, tmp_path, n=2, storage_args=(), gw_env=None):
        self.tmp = tmp_path
        self.servers = []
        for i in range(n):
            s = Server(tmp_path / ("storage%d" % i), args=STORAGE + list(storage_args))
            self.servers.append(s.start(wait_for=("scribe",)))
        self.addrs = [ep(s) for s in self.servers]
        self.config = write_config(tmp_path / "gateway.toml", self.addrs)
        self.gw = None
        self.gw_data = tmp_path / "gw"
        self.start_gateway(gw_env)

    def start_gateway(self, env=None):
        self.gw = Server(self.gw_data, args=["--scribe", "127.0.0.1:0", "--gateway",
                                             self.config], env=env)
        self.gw.start(wait_for=("scribe",))
        return self.gw

    def debug_gateway(self):
        """Restarts the gateway logging at debug level."""
        self.gw.stop()
        self.gw.args += ["--log-level", "debug"]
        return self.gw.start(wait_for=("scribe",))

    def conn(self, **kw):
        return Conn(self.gw.addrs["scribe"], **kw)

    def direct(self, i, **kw):
        return Conn(self.servers[i].addrs["scribe"], **kw)

    def where(self, name):
        """Indexes of the storage servers that hold name (asked directly)."""
        out = []
        for i, s in enumerate(self.servers):
            if s.proc.poll() is not None:
                continue
            with Conn(s.addrs["scribe"]) as c:
                try:
                    c.repo_info(name=name)
                    out.append(i)
                except ScribeError as e:
                    assert e.code == ERR["repository_not_found"], e
        return out

    def stop(self):
        for s in [self.gw] + self.servers:
            if s and s.proc and s.proc.poll() is None:
                s.stop()
        for s in [self.gw] + self.servers:
            out = s.output() if s else ""
            assert_no_sanitizer(out)


@pytest.fixture
def fleet(tmp_path):
    f = Fleet(tmp_path)
    yield f
    f.stop()


def raises(code, fn, *a, **kw):
    with pytest.raises(ScribeError) as ei:
        fn(*a, **kw)
    assert ei.value.code == ERR[code], ei.value
    return ei.value


# ---- configuration -------------------------------------------------------------------------
BAD_CONFIGS = [
    ("", "1 to 64 [[storage]] servers, not 0"),
    ('default_namespace = "x"\n[[storage]]\naddress = "127.0.0.1:7447"\n',
     "default_namespace 'x' is not the namespace"),
    ("".join('[[storage]]\naddress = "127.0.0.1:%d"\n' % (10000 + i) for i in range(65)),
     "not 65"),
    ('[[storage]]\naddress = "127.0.0.1:7447"\nnamespace = "studio"\n', "label must be"),
    ('[[storage]]\naddress = "127.0.0.1:7447"\n[[storage]]\naddress = "scribes://127.0.0.1:7448"\n'
     'namespace = "studio"\n', "mix plaintext"),
    ('[[storage]]\naddress = "nowhere"\n', "not host:port"),
    ('[[storage]]\naddress = "127.0.0.1:7447"\nport = 1\n', "unknown key 'port'"),
    ('[[storage]]\naddress = "127.0.0.1:7447"\n[[storage]]\naddress = "127.0.0.1:7447"\n',
     "configured twice"),
    ('storage = 3\n', "array of tables"),
    ('[[storage]\n', "line 1"),
]


@pytest.mark.parametrize("text,why", BAD_CONFIGS)
def test_configuration_refused(tmp_path, text, why):
    path = tmp_path / "gw.toml"
    path.write_text(text)
    r = run([binary("cairnd"), "--data", str(tmp_path / "d"), "--scribe", "127.0.0.1:0",
             "--gateway", str(path)], timeout=30)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "--gateway" in r.stderr and why in r.stderr, r.stderr


def test_tls_storage_needs_the_gateway_credential(tmp_path):
    # scribes:// storage is the protocol-4 gateway (tests/scribe/test_gateway_tls.py):
    # without its own credential it does not start
    path = tmp_path / "gw.toml"
    path.write_text('[[storage]]\naddress = "scribes://127.0.0.1:7448"\nnamespace = "studio"\n')
    r = run([binary("cairnd"), "--data", str(tmp_path / "d"), "--scribe", "127.0.0.1:0",
             "--gateway", str(path)], timeout=30)
    assert r.returncode == 2 and "--auth-credential" in r.stderr, r.stderr


# ---- discover and names ------------------------------------------------------------------------
def test_discover_from_configuration_with_a_server_stopped(tmp_path):
    f = Fleet(tmp_path, n=3)
    try:
        out = f.gw.output()
        assert "listening jay" not in out and "listening http" not in out, out
        f.servers[1].stop()
        with f.conn() as c:
            body = c.discover()
        # role 2, authentication false, three servers, three empty labels
        assert body == bytes.fromhex("02 00 03000000 0000 0000 0000"), body.hex()
        # and as `cairn repo discover` prints it (docs/cli.md)
        r = run([binary("cairn"), "repo", "discover", "scribe://%s:%d" % f.gw.addrs["scribe"]],
                timeout=60)
        assert r.returncode == 0, r.stderr
        assert r.stdout == ("role gateway\nauthentication no\nservers 3\n"
                            "namespace -\tservers 3\n"), r.stdout
        with f.conn() as c:  # over discover's exact bound (0): closed unread
            c.send_frame(OP["discover"], b"\x00")
            assert c.closed_by_peer()
    finally:
        f.stop()


def test_names_bare_prefixed_and_malformed(fleet):
    with fleet.conn() as c:
        info = c.repo_create("art")
        assert info["name"] == "art"
        assert c.repo_info(name="art")["id"] == info["id"]
        assert c.repo_info(rid=info["id"])["name"] == "art"
        e = raises("malformed", c.repo_create, "studio/art")
        assert "<namespace>/<name>" in e.message and "studio" in e.message, e.message
        raises("malformed", c.repo_info, name="/art")
        raises("malformed", c.repo_create, "a" * 129)
        raises("repository_exists", c.repo_create, "art")
        raises("repository_not_found", c.repo_info, name="nothing")
        raises("repository_not_found", c.repo_info, rid=os.urandom(16))


# ---- placement --------------------------------------------------------------------------------
def test_placement_spreads_over_the_pool(fleet):
    names = ["p%d" % i for i in range(6)]
    with fleet.conn() as c:
        for n in names:
            c.repo_create(n)
    where = {n: fleet.where(n) for n in names}
    assert all(len(w) == 1 for w in where.values()), where
    counts = [sum(1 for w in where.values() if w[0] == i) for i in range(2)]
    # fewest repositories first: the two servers take turns
    assert counts == [3, 3], where


def test_repository_created_on_storage_is_adopted(fleet):
    with fleet.direct(1) as d:
        info = d.repo_create("direct")
    with fleet.conn() as c:
        assert c.repo_info(rid=info["id"])["name"] == "direct"
        assert c.repo_info(name="direct")["id"] == info["id"]
        raises("repository_exists", c.repo_create, "direct")
    assert fleet.where("direct") == [1]


def test_kill_between_placement_and_create(tmp_path):
    f = Fleet(tmp_path, gw_env={"CAIRN_TEST_KILL_AFTER_GW_PLACEMENT": "1"})
    try:
        with f.conn() as c:
            with pytest.raises((EOFError, ConnectionResetError)):
                c.repo_create("crashy")
        f.gw.proc.wait(10)
        assert f.gw.proc.returncode == -signal.SIGKILL
        assert f.where("crashy") == []
        # the servers tied, so the placement named server 0 (configuration
        # order); now server 0 holds a repository and server 1 none, so the
        # pick rule (fewest repositories) would choose server 1: the create
        # lands on server 0 only when the durable pending placement decides
        with f.direct(0) as d:
            d.repo_create("ballast")
        f.gw.stop()
        f.start_gateway()
        with f.conn() as c:
            # pending: nothing was created, the placement reserves the name
            raises("repository_not_found", c.repo_info, name="crashy")
            info = c.repo_create("crashy")
            assert c.repo_info(name="crashy")["id"] == info["id"]
            # a name never placed goes where the rule says, so the rule
            # did prefer server 1
            c.repo_create("fresh")
        assert f.where("crashy") == [0]
        assert f.where("fresh") == [1]
    finally:
        f.stop()


# ---- forwarding ---------------------------------------------------------------------------------
def objects_of(data):
    chunks, enc, mid = file_objects(data)
    return [(CHUNK, chunk_id(ch), ch) for ch in chunks] + [(MANIFEST, mid, enc)], mid


@pytest.mark.parametrize("caps", [0, 1])
def test_put_get_submit_through_the_gateway(fleet, caps):
    with fleet.conn(caps=caps) as c:
        info = c.repo_create("objs%d" % caps)
        data = os.urandom(300000) + b"z" * 200000
        objs, mid = objects_of(data)
        assert c.put_objects(info["id"], objs) == [1] * len(objs)
        assert c.put_objects(info["id"], objs) == [0] * len(objs)
        got = c.get_objects(info["id"], [(k, i) for k, i, _ in objs] + [(CHUNK, b"\x01" * 32)])
        assert [g[2] for g in got[:-1]] == [o[2] for o in objs] and got[-1][2] is None
        cs = changeset_encode([(ADD, "a.bin", mid, 0, None)])
        cid = changeset_id(cs)
        c.put_objects(info["id"], [(CHANGESET, cid, cs)])
        op = os.urandom(16)
        o = c.submit(info["id"], info["incarnation"], op, info["main"], os.urandom(16), 0, cid,
                     "ann", "first")
        assert o["outcome"] == 1 and o["change"] == 1, o
        assert c.repo_info(rid=info["id"])["head"] == 1
        # operation_outcome follows its repository to the owning server
        kind, rec = c.operation_outcome(info["id"], op)
        assert kind == 1 and rec["change"] == 1 and rec["commit"] == o["commit"]
        assert c.operation_outcome(info["id"], os.urandom(16))[0] == 0
    # the objects are on the owning server only
    assert len(fleet.where("objs%d" % caps)) == 1


def test_repo_usage_reflects_a_write_at_once(fleet):
    with fleet.conn() as c:
        info = c.repo_create("usage")
        before = c.repo_usage(info["id"])
        objs, _ = objects_of(os.urandom(1 << 20))
        c.put_objects(info["id"], objs)
        after = c.repo_usage(info["id"])
        assert after >= before + (1 << 20), (before, after)
        raises("repository_not_found", c.repo_usage, os.urandom(16))


def test_repo_list_merges_servers_behind_a_connection_cursor(fleet):
    names = ["m%02d" % i for i in range(7)]
    with fleet.conn() as c:
        for n in names[:6]:
            c.repo_create(n)
    with fleet.direct(0) as d:
        d.repo_create(names[6])  # created on storage: listed all the same
    with fleet.conn() as c:
        seen, tok = [], None
        while True:
            rows, tok = c.repo_list(limit=2, token=tok)
            assert len(rows) <= 2
            seen += [r["name"] for r in rows]
            if tok is None:
                break
            assert len(tok) == 8
        assert seen == sorted(names), seen
        _, tok = c.repo_list(limit=1)
    with fleet.conn() as other:  # a cursor means nothing on another connection
        raises("malformed", other.repo_list, 1, tok)


def test_large_put_and_get_are_streamed(fleet):
    """64 MiB in 4 MiB chunks, one put_objects and one get_objects: the
    gateway's peak memory stays far below the body."""
    def hwm():
        with open("/proc/%d/status" % fleet.gw.proc.pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    with fleet.conn() as c:
        info = c.repo_create("big")
        base = hwm()
        block = os.urandom(4 << 20)
        chunks = [bytes([i]) + block[1:] for i in range(16)]
        assert all(len(ch) == 4 << 20 for ch in chunks)
        objs = [(CHUNK, chunk_id(ch), ch) for ch in chunks]
        assert c.put_objects(info["id"], objs) == [1] * 16
        got = c.get_objects(info["id"], [(CHUNK, chunk_id(ch)) for ch in chunks])
        assert [g[2] for g in got] == chunks
        grew = hwm() - base
    assert grew < 24 << 20, grew


def test_backend_killed_mid_upload_closes_the_client(fleet):
    with fleet.conn() as c:
        info = c.repo_create("victim")
    owner = fleet.where("victim")[0]
    with fleet.conn() as c:
        chunk = os.urandom(4 << 20)
        payload = c.enc().raw(info["id"]).u32(1).u8(CHUNK).raw(chunk_id(chunk)) \
            .u64(len(chunk)).bytes()
        c.send(header(OP["put_objects"], FLAG_STREAM, 1, len(payload)) + payload)
        c.send(chunk[:1 << 20])
        time.sleep(0.3)
        fleet.servers[owner].kill9()
        try:
            c.send(chunk[1 << 20:])
        except (BrokenPipeError, ConnectionResetError):
            pass
        assert c.closed_by_peer(timeout=20)
    # the other server and the gateway are unharmed; the lost one is an error
    with fleet.conn() as c:
        assert c.discover()[0] == 2
        e = raises("storage_failure", c.repo_info, rid=info["id"])
        assert "does not answer" in e.message
    # restored on its address, it answers again through the same gateway (the
    # dead pooled connections are replaced), and the outcome resolves: the
    # interrupted upload published nothing, and a retry stores the chunk
    dead = fleet.servers[owner]
    port = dead.addrs["scribe"][1]
    back = Server(dead.data_dir, args=["--jay", "off", "--http", "off",
                                       "--scribe", "127.0.0.1:%d" % port])
    fleet.servers[owner] = back.start(wait_for=("scribe",))
    with fleet.conn() as c:
        assert c.presence(info["id"], [(CHUNK, chunk_id(chunk))]) == [False]
        assert c.put_objects(info["id"], [(CHUNK, chunk_id(chunk), chunk)]) == [1]
        assert c.presence(info["id"], [(CHUNK, chunk_id(chunk))]) == [True]


def test_data_connections_bind_to_the_gateway_session(fleet):
    fleet.debug_gateway()
    with fleet.conn() as c:
        info = c.repo_create("lanes")
        sid = c.hello_ok["session"]
        data = [fleet.conn(bind=sid) for _ in range(4)]
        try:
            for d in data:
                assert d.hello_ok["session"] == sid
                assert d.repo_info(rid=info["id"])["name"] == "lanes"
                assert d.repo_usage(info["id"]) >= 0  # forwarded
            with pytest.raises(ScribeError) as ei:
                fleet.conn(bind=sid)
            assert ei.value.code == ERR["busy"]
        finally:
            for d in data:
                d.close()
        with pytest.raises(ScribeError) as ei:
            fleet.conn(bind=sid ^ 1)
        assert ei.value.code == ERR["malformed"]
    # upstream, the data connections' requests went on data connections bound
    # to the gateway's own session with the owning server
    out = fleet.gw.output(fleet.gw.log_offset)
    assert "upstream data connection bound to its session" in out, out


def test_a_stalled_server_delays_no_other_servers_data_connections(fleet):
    """A data connection's request to a storage server that accepts and never
    answers waits for that server's anchor session; one to another server,
    needing its own first anchor, is answered at once meanwhile."""
    on = {}
    with fleet.conn() as c:
        for i in range(16):
            info = c.repo_create("lane%d" % i)
            on.setdefault(fleet.where("lane%d" % i)[0], info)
            if len(on) == 2:
                break
        assert len(on) == 2, "placement used one server only"
        sid = c.hello_ok["session"]
        stalled = fleet.servers[1].proc.pid
        os.kill(stalled, signal.SIGSTOP)  # its kernel still accepts connections
        stuck = fleet.conn(bind=sid, timeout=120)
        try:
            stuck.send_frame(OP["repo_usage"], on[1]["id"])  # forwarded to server 1
            time.sleep(1)  # the gateway waits for server 1's hello answer
            with fleet.conn(bind=sid, timeout=20) as d:
                t = time.monotonic()
                assert d.repo_usage(on[0]["id"]) >= 0  # forwarded to server 0
                took = time.monotonic() - t
            assert took < 5, "waited %.1f s behind a stalled server's anchor" % took
        finally:
            os.kill(stalled, signal.SIGCONT)
        op, flags, _, body = stuck.recv_frame()  # answered once server 1 runs again
        assert op == OP["repo_usage"] and not flags & 2, stuck.error_of(body)
        stuck.close()


def test_upstream_replaced_after_half_the_announced_timeout(tmp_path):
    cfg = tmp_path / "storage.toml"
    cfg.write_text("[scribe]\nidle_timeout_ms = 2000\n")
    f = Fleet(tmp_path, n=1, storage_args=["--config", str(cfg)])
    try:
        f.debug_gateway()
        with f.conn() as c:
            info = c.repo_create("idle")
            for _ in range(3):
                # storage closes an upstream connection silent for 2 s; the
                # gateway must not send on one silent for 1 s or more
                time.sleep(1.2)
                assert c.repo_info(rid=info["id"])["name"] == "idle"
            time.sleep(2.5)
            assert c.repo_usage(info["id"]) >= 0
        out = f.gw.output(f.gw.log_offset)
        # replaced for its silence (at 1.2 s, before storage closed it)
        assert "upstream connection silent for half its server's timeout" in out, out
    finally:
        f.stop()


def test_end_to_end_with_the_cairn_client(fleet, tmp_path):
    fleet.debug_gateway()
    gw = ep(fleet.gw)

    def cairn(*args):
        r = run([binary("cairn")] + list(args) + ["--endpoint", gw], timeout=120)
        assert r.returncode == 0, (args, r.stdout, r.stderr)
        return r.stdout

    cairn("repo", "create", "game")
    ws = str(tmp_path / "ws")
    cairn("clone", "game", ws)
    os.makedirs(os.path.join(ws, "art"))
    with open(os.path.join(ws, "art", "hero.bin"), "wb") as fh:
        fh.write(os.urandom(24 << 20))  # large enough for the client's data connections
    cairn("submit", ws, "-m", "hero")
    assert "game" in cairn("repo", "list")
    other = str(tmp_path / "other")
    cairn("clone", "game", other)
    with open(os.path.join(ws, "art", "hero.bin"), "rb") as a, \
            open(os.path.join(other, "art", "hero.bin"), "rb") as b:
        assert a.read() == b.read()
    assert len(fleet.where("game")) == 1
    # the client's parallel transfers ran on its data connections, and the
    # gateway relayed them on upstream data connections bound to its session
    out = fleet.gw.output(fleet.gw.log_offset)
    assert "upstream data connection bound to its session" in out, out


def test_concurrent_clients_share_the_pool(fleet):
    """Eight clients at once, each with its own repository: creates, puts,
    gets and usage interleave on the pooled upstream connections."""
    import threading
    errors = []

    def client(i):
        try:
            with fleet.conn(caps=i % 2) as c:
                info = c.repo_create("conc%d" % i)
                for round_ in range(5):
                    objs, _ = objects_of(os.urandom(200000 + i * 1000 + round_))
                    c.put_objects(info["id"], objs)
                    got = c.get_objects(info["id"], [(k, oid) for k, oid, _ in objs])
                    assert [g[2] for g in got] == [o[2] for o in objs]
                    assert c.repo_usage(info["id"]) > 0
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append((i, repr(e)))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    with fleet.conn() as c:
        rows, tok = c.repo_list(limit=100)
        assert tok is None and sorted(r["name"] for r in rows) == sorted("conc%d" % i
                                                                         for i in range(8))
