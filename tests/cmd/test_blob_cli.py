"""`cairn blob ...` against the real cairnd: stat, have, put, get (verified,
whole and ranged, to a file and to stdout), rm, ls, and `cairn blob sync`
between two servers — have/need diffing, interrupted and resumed, idempotent."""
import os
import re
import signal
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "blobops"))
from blobsclient import Ops, b3, make_token
from conftest import ADMIN_TOKEN, binary, run

HTTP_ONLY = ["--jay", "off", "--scribe", "off", "--http", "127.0.0.1:0"]
NS = "sync/ns"


def url(srv):
    host, port = srv.addrs["http"]
    return f"http://{host}:{port}"


def blob(srv, *args, token=ADMIN_TOKEN, input=None, timeout=60):
    env = {"CAIRN_BLOBS_URL": url(srv), "CAIRN_TOKEN": token}
    r = subprocess.run([binary("cairn"), "blob"] + list(args), capture_output=True,
                       env={**os.environ, **env}, timeout=timeout, input=input)
    return r.returncode, r.stdout.decode("latin-1"), r.stderr.decode()


@pytest.fixture
def srv(server_factory):
    return server_factory(args=HTTP_ONLY, wait_for=("http",))


def test_blob_commands(srv, tmp_path):
    f = tmp_path / "in.bin"
    data = os.urandom(2_500_000)
    f.write_bytes(data)
    d = b3(data)
    rc, out, err = blob(srv, "put", NS, str(f))
    assert rc == 0, err
    got_d, token = out.split()
    assert got_d == d and token.startswith("pt_")
    assert blob(srv, "stat", NS, d)[:2] == (0, f"{d} {len(data)}\n")
    rc, out, _ = blob(srv, "have", NS, d, "0" * 64)
    assert rc == 3 and out == f"{d} present\n{'0' * 64} absent\n"
    assert blob(srv, "have", NS, d, "--pin", token)[0] == 0
    o = tmp_path / "out.bin"
    rc, _, err = blob(srv, "get", NS, d, "-o", str(o))
    assert rc == 0, err
    assert o.read_bytes() == data
    rc, out, _ = blob(srv, "get", NS, d, "--range", "1000:20")
    assert rc == 0 and out.encode("latin-1") == data[1000:1020]
    rc, part, _ = (lambda r: (r.returncode, r.stdout, r.stderr))(subprocess.run(
        [binary("cairn"), "blob", "get", NS, d, "--range", "2499990:100"], capture_output=True,
        env={**os.environ, "CAIRN_BLOBS_URL": url(srv), "CAIRN_TOKEN": ADMIN_TOKEN}))
    assert rc == 0 and part == data[2499990:]
    rc, out, _ = blob(srv, "put", NS, "-", input=b"from stdin")
    assert rc == 0 and out.split()[0] == b3(b"from stdin")
    rc, out, _ = blob(srv, "ls", NS)
    assert rc == 0 and sorted(out.split()) == sorted([d, b3(b"from stdin")])
    # not found, no output file left behind
    miss = tmp_path / "miss.bin"
    rc, _, err = blob(srv, "get", NS, b3(b"nope"), "-o", str(miss))
    assert rc == 3 and "unknown_resource" in err
    assert not miss.exists() and not any(p.name.startswith("miss.bin.") for p in tmp_path.iterdir())
    # rm is operator-only
    alice = make_token(srv, "alice", grants=[(NS, "read"), (NS, "write")])
    rc, _, err = blob(srv, "rm", NS, d, token=alice)
    assert rc == 4 and "operator_only" in err
    assert blob(srv, "rm", NS, d)[:2] == (0, "removed 1 of 1\n")
    assert blob(srv, "have", NS, d)[0] == 3
    assert blob(srv, "stat", NS, "XYZ")[0] == 2
    assert blob(srv, "get", NS, d, token="bad:cred")[0] == 4


def test_sync_between_two_servers_interrupted_and_resumed(server_factory):
    a = server_factory(args=HTTP_ONLY, wait_for=("http",))
    b = server_factory(args=HTTP_ONLY, wait_for=("http",))
    src, dst = Ops(a), Ops(b)
    blobs = [os.urandom(600_000 + i) for i in range(40)]
    digests = [b3(x) for x in blobs]
    for x in blobs:
        assert src.put(NS, x)[0] == 200
    # the target already holds a few (and one in another namespace, which must not count)
    for x in blobs[:3]:
        assert dst.put(NS, x)[0] == 200
    assert dst.put("other", blobs[3])[0] == 200
    cmd = [binary("cairn"), "blob", "sync", "--from", url(a), "--to", url(b), "--namespace", NS,
           "--all", "--progress"]
    env = {**os.environ, "CAIRN_TOKEN": ADMIN_TOKEN}
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # interrupt it once it has copied a few
    deadline = time.time() + 30
    while time.time() < deadline and p.poll() is None:
        if sum(dst.have(NS, digests)) >= 8:
            break
        time.sleep(0.01)
    interrupted = p.poll() is None
    if interrupted:
        p.send_signal(signal.SIGKILL)
    p.wait()
    p.stdout.close()
    p.stderr.close()
    time.sleep(0.5)                 # puts the killed client had in flight settle
    partial = sum(dst.have(NS, digests))
    assert partial >= 3
    if interrupted:
        assert partial < len(blobs)
    # resumed: only what the target lacks is copied
    r = run(cmd, env={"CAIRN_TOKEN": ADMIN_TOKEN}, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    m = re.search(r"(\d+) digests, (\d+) already present, (\d+) copied, 0 missing, 0 failed",
                  r.stdout)
    assert m, r.stdout
    total, present, copied = map(int, m.groups())
    assert total == len(blobs) and present == partial and copied == len(blobs) - partial
    assert dst.have(NS, digests) == [True] * len(blobs)
    for i in (0, 10, 39):
        assert dst.fetch(NS, digests[i]).content == blobs[i]
    # idempotent: a third run copies nothing
    r = run(cmd, env={"CAIRN_TOKEN": ADMIN_TOKEN}, timeout=120)
    assert r.returncode == 0
    assert f"{len(blobs)} already present, 0 copied" in r.stdout


def test_sync_of_named_digests_with_separate_credentials(server_factory):
    a = server_factory(args=HTTP_ONLY, wait_for=("http",))
    b = server_factory(args=HTTP_ONLY, wait_for=("http",))
    reader = make_token(a, "reader", perms="blobs:read", grants=[(NS, "read")])
    writer = make_token(b, "writer", grants=[(NS, "read"), (NS, "write")])
    one, two = b"first blob", b"second blob"
    assert Ops(a).put(NS, one)[0] == 200
    assert Ops(a).put(NS, two)[0] == 200
    absent = b3(b"not on the source")
    r = run([binary("cairn"), "blob", "sync", "--from", url(a), "--to", url(b), "--namespace", NS,
             "--from-token", reader, "--to-token", writer, b3(one), absent], timeout=60)
    assert r.returncode == 3, r.stdout + r.stderr          # one digest is missing on the source
    assert "2 digests, 0 already present, 1 copied, 1 missing" in r.stdout
    assert Ops(b, writer).have(NS, [b3(one), b3(two)]) == [True, False]
    # a writer without a grant on the target is refused
    r = run([binary("cairn"), "blob", "sync", "--from", url(a), "--to", url(b), "--namespace",
             "elsewhere", "--from-token", reader, "--to-token", writer, "--all"], timeout=60)
    assert r.returncode == 4
