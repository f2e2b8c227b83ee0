"""`cairn`'s documented exit codes (docs/cli.md) and its progress bar, through
the real cairnd: 1 server refusal, 2 usage, 3 not found, 4 access denied,
5 network, 6 conflict, 7 local error (file, memory), 8 checksum mismatch."""
import os
import pty
import select
import subprocess
import sys
import time

from conftest import ADMIN_TOKEN, binary, ephemeral_args, free_port
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "client"))
from clitools import cairn, endpoint, no_sanitizer_report, ok, token_with  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "jay"))
import jayclient  # noqa: E402


def fails(r, code, *needles):
    err = r.stderr.decode()
    assert r.returncode == code, (r.returncode, r.stdout, err)
    for n in needles:
        assert n in err, err
    return err


def test_not_found_denied_conflict_server(server_factory, tmp_path):
    srv = server_factory(env={"JAY_MAX_OBJECT_SIZE": "65536"})
    ok(cairn(srv, "mb", "codes"))
    f = tmp_path / "f"
    f.write_bytes(b"x" * 1000)
    ok(cairn(srv, "put", str(f), "codes/k"))

    # 3: not found, for every verb that names something.
    for args in (("stat", "codes/nope"), ("get", "codes/nope", str(tmp_path / "o")),
                 ("cat", "codes/nope"), ("rm", "codes/nope")):
        fails(cairn(srv, *args), 3, f"cairn: {args[0]}: NoSuchKey: ")
    assert not (tmp_path / "o").exists()
    for args in (("ls", "nobucket"), ("rb", "nobucket"), ("stat", "nobucket/k"),
                 ("put", str(f), "nobucket/k"), ("cp", "codes/k", "nobucket/k")):
        fails(cairn(srv, *args), 3, "NoSuchBucket")
    fails(cairn(srv, "cp", "codes/nope", "codes/k2"), 3, "NoSuchKey", "source:")

    # 4: a token holding object:get only, and a rejected handshake.
    ro = token_with(srv, "object:get")
    assert cairn(srv, "cat", "codes/k", token=ro).stdout == b"x" * 1000
    fails(cairn(srv, "put", str(f), "codes/k2", token=ro), 4, "cairn: put: AccessDenied: ")
    fails(cairn(srv, "rm", "codes/k", token=ro), 4, "AccessDenied")
    fails(cairn(srv, "ls", "codes", token=ro), 4, "AccessDenied")
    fails(cairn(srv, "mb", "newbucket", token=ro), 4, "AccessDenied")
    fails(cairn(srv, "cp", "codes/k", "codes/k3", token=ro), 4, "AccessDenied", "destination:")
    tid = ADMIN_TOKEN.split(":")[0]
    err = fails(cairn(srv, "ls", token=tid + ":wrong-secret"), 4, "authentication failed")
    assert "wrong-secret" not in err
    fails(cairn(srv, "ls", token="no-colon-at-all"), 4)

    # 6: conflicts.
    fails(cairn(srv, "mb", "codes"), 6, "BucketAlreadyExists")
    fails(cairn(srv, "rb", "codes"), 6, "BucketNotEmpty")

    # 1: any other refusal.
    fails(cairn(srv, "mb", "Not_Valid"), 1, "InvalidBucketName")
    big = tmp_path / "big"
    big.write_bytes(b"y" * 65537)
    fails(cairn(srv, "put", str(big), "codes/big"), 1, "EntityTooLarge")
    fails(cairn(srv, "put", "-", "codes/big", input=b"y" * 65537), 1, "EntityTooLarge")
    fails(cairn(srv, "stat", "codes/big"), 3)


def test_usage_errors(server_factory):
    srv = server_factory()
    for args in ((), ("frobnicate",), ("ls", "--bogus"), ("put",), ("put", "onlyfile"),
                 ("get", "b/k"), ("cat",), ("cat", "bucketonly"), ("rm", "b/"),
                 ("cp", "a/b"), ("mb", "a/b"), ("stat", "a", "b"),
                 ("put", "f", "b/k", "--part-size", "1M"), ("put", "f", "b/k", "--jobs", "0"),
                 ("put", "f", "b/k", "--meta", "novalue"), ("ls", "--endpoint")):
        r = cairn(srv, *args)
        assert r.returncode == 2, (args, r.stderr)
        assert b"usage" in r.stderr or b"cairn:" in r.stderr
    # No credential at all.
    fails(cairn(srv, "ls", token=None), 2, "no credential")
    fails(cairn(srv, "ls", env={"CAIRN_ENDPOINT": "not:an:endpoint"}), 2, "bad endpoint")
    ok(cairn(srv, "ls", "--help"))


def closed_port():
    return free_port()


def test_network_errors(server_factory, tmp_path):
    env = {"CAIRN_ENDPOINT": "127.0.0.1:%d" % closed_port()}
    for args in (("ls",), ("mb", "abc"), ("cat", "abc/k")):
        fails(cairn(None, *args, env=env), 5, "Connection refused")
    # ServerBusy: the listener's one connection is taken.
    cfg = tmp_path / "busy.toml"
    cfg.write_text("[jay]\nmax_connections = 1\n")
    srv = server_factory(args=ephemeral_args() + ["--config", str(cfg)])
    hold = jayclient.Conn(srv.addrs["jay"], ADMIN_TOKEN)
    try:
        assert hold.ping()   # settled: no longer a pending (evictable) connection
        fails(cairn(srv, "ls"), 5, "busy")
    finally:
        hold.close()
    time.sleep(0.3)
    ok(cairn(srv, "ls"))


def test_local_errors(server_factory, tmp_path):
    srv = server_factory()
    ok(cairn(srv, "mb", "local"))
    fails(cairn(srv, "put", str(tmp_path / "missing"), "local/k"), 7, "No such file")
    fails(cairn(srv, "put", str(tmp_path), "local/k"), 7, "is a directory")
    # A file that holds fewer bytes than its size claims (sysfs says 4096).
    sysfs = "/sys/kernel/mm/transparent_hugepage/enabled"
    if os.path.exists(sysfs) and os.path.getsize(sysfs) > len(open(sysfs, "rb").read()):
        fails(cairn(srv, "put", sysfs, "local/sys"), 7, "ended before")
        fails(cairn(srv, "stat", "local/sys"), 3)
    f = tmp_path / "f"
    f.write_bytes(b"z" * 10)
    ok(cairn(srv, "put", str(f), "local/k"))
    fails(cairn(srv, "get", "local/k", str(tmp_path / "no" / "dir" / "x")), 7)
    # A closed stdout ends with an error status, not a signal.
    big = tmp_path / "big"
    big.write_bytes(os.urandom(4 << 20))
    ok(cairn(srv, "put", str(big), "local/big"))
    p = subprocess.Popen([binary("cairn"), "cat", "local/big"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE,
                         env=dict(os.environ, CAIRN_ENDPOINT=endpoint(srv),
                                  CAIRN_TOKEN=ADMIN_TOKEN))
    p.stdout.read(10)
    p.stdout.close()
    p.wait(60)
    err = p.stderr.read()
    assert p.returncode == 7, err
    no_sanitizer_report(err)


def test_out_of_memory_is_a_local_error(server_factory):
    # From a pipe, put holds one part in memory: a part larger than the
    # address space cannot be allocated.  That is this machine's failure,
    # exit 7, never 1 (the server refused).
    # Under ASan the allocator is told to return NULL as malloc does; it
    # then warns that it did, the one sanitizer line this test expects.
    srv = server_factory()
    ok(cairn(srv, "mb", "oom"))
    asan = os.environ.get("ASAN_OPTIONS", "")
    env = dict(os.environ, CAIRN_ENDPOINT=endpoint(srv), CAIRN_TOKEN=ADMIN_TOKEN,
               ASAN_OPTIONS=(asan + ":" if asan else "") + "allocator_may_return_null=1")
    r = subprocess.run([binary("cairn"), "put", "-", "oom/k", "--part-size", "4000000G"],
                       input=b"abc", capture_output=True, env=env, timeout=120)
    err = r.stderr.decode()
    no_sanitizer_report("\n".join(line for line in err.splitlines()
                                  if "AddressSanitizer failed to allocate" not in line))
    assert r.returncode == 7, (r.returncode, err)
    assert "cairn: put: Cannot allocate memory" in err, err
    fails(cairn(srv, "stat", "oom/k"), 3)


def test_checksum_mismatch(server_factory, tmp_path):
    """The stored bytes are damaged on disk behind the server's back (it
    serves them as they are); cairn's own SHA-256 check catches it."""
    srv = server_factory()
    ok(cairn(srv, "mb", "rot"))
    data = os.urandom(1 << 20)
    f = tmp_path / "f"
    f.write_bytes(data)
    ok(cairn(srv, "put", str(f), "rot/k"))
    blobs = [os.path.join(d, n) for d, _, ns in os.walk(srv.data_dir) for n in ns
             if os.path.getsize(os.path.join(d, n)) == len(data)]
    assert len(blobs) == 1, blobs
    os.chmod(blobs[0], 0o600)
    with open(blobs[0], "r+b") as b:
        b.seek(12345)
        c = b.read(1)
        b.seek(12345)
        b.write(bytes([c[0] ^ 0xFF]))
    out = tmp_path / "out"
    fails(cairn(srv, "get", "rot/k", str(out)), 8, "checksum mismatch")
    assert not out.exists() and not [p for p in os.listdir(tmp_path) if ".cairn-" in p]
    fails(cairn(srv, "cat", "rot/k"), 8, "checksum mismatch")


def on_tty(srv, *args):
    """Runs cairn with stderr on a pseudo-terminal; returns (status, what the
    terminal showed)."""
    master, slave = pty.openpty()
    env = dict(os.environ, CAIRN_ENDPOINT=endpoint(srv), CAIRN_TOKEN=ADMIN_TOKEN)
    p = subprocess.Popen([binary("cairn")] + list(args), stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=slave, env=env)
    os.close(slave)
    seen = b""
    while True:
        r, _, _ = select.select([master], [], [], 60)
        if not r:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    shown = seen.decode("utf-8", "replace")
    no_sanitizer_report(shown)
    return p.wait(60), shown


def test_progress_bar_only_on_a_terminal(server_factory, tmp_path):
    srv = server_factory()
    ok(cairn(srv, "mb", "prog"))
    f = tmp_path / "f.bin"
    f.write_bytes(os.urandom(12 << 20))
    out = tmp_path / "out"
    # Not a terminal: nothing but the result line on stdout, nothing on stderr.
    for args in (("put", str(f), "prog/a"), ("put", str(f), "prog/mp", "--part-size", "5M"),
                 ("get", "prog/a", str(out)), ("get", "prog/mp", "-"), ("cat", "prog/a")):
        r = cairn(srv, *args)
        assert r.returncode == 0 and r.stderr == b"", (args, r.stderr)
    # A terminal: the bar is drawn and reaches 100 %.
    for args in (("put", str(f), "prog/b"), ("put", str(f), "prog/mp2", "--part-size", "5M")):
        rc, shown = on_tty(srv, *args)
        assert rc == 0 and "MiB/s" in shown and "100%" in shown, shown
    rc, shown = on_tty(srv, "get", "prog/b", str(out))
    assert rc == 0 and "MiB/s" in shown and "100%" in shown, shown
    # Never for --quiet, nor for cat (its bytes own the terminal).
    for args in (("put", str(f), "prog/c", "--quiet"), ("get", "prog/b", str(out), "-q"),
                 ("cat", "prog/b")):
        rc, shown = on_tty(srv, *args)
        assert rc == 0 and "MiB/s" not in shown, (args, shown)
