"""Helpers shared by the proof suite (crash, faults, load, security): servers
that restart on one data dir, /proc readings, the fault shim.

Everything here drives the real cairnd over loopback sockets."""
import contextlib
import os
import re
import resource
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
for _face in ("jay", "scribe", "blobops"):
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), _face))

from conftest import ADMIN_TOKEN, BUILD, Server, binary, ephemeral_args  # noqa: E402
import jayclient  # noqa: E402,F401  (re-exported for the tests)

SANITIZER_MARKS = ("ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer")


class Node:
    """One data dir served by a succession of cairnd processes (restarts after
    a kill).  Each process logs to its own file, so a restart never reads the
    previous process's "listening" line."""

    def __init__(self, data_dir, args=None, env=None, wait_for=("jay",)):
        self.data_dir = str(data_dir)
        self.args = ephemeral_args() if args is None else list(args)
        # The proofs cut S3 multipart uploads of small parts to keep each
        # crash cycle short; S3's 5 MiB minimum is tested in tests/s3.
        self.env = {"CAIRN_S3_MIN_PART_SIZE": "1"}
        self.env.update(env or {})
        self.wait_for = wait_for
        self.procs = []
        self.server = None

    def start(self, extra_env=None):
        env = dict(self.env)
        env.update(extra_env or {})
        s = Server(self.data_dir, args=self.args, env=env)
        s.log_path = "%s.%d.log" % (self.data_dir, len(self.procs))
        self.procs.append(s)
        self.server = s.start(wait_for=self.wait_for)
        return s

    @property
    def jay(self):
        return self.server.addrs["jay"]

    def addr(self, proto):
        """(host, port) of a listener of the running process: jay, http, scribe."""
        return self.server.addrs[proto]

    @property
    def http_url(self):
        return "http://%s:%d" % self.server.addrs["http"]

    @property
    def pid(self):
        return self.server.proc.pid

    def kill9(self):
        self.server.kill9()

    def stop(self):
        if self.server:
            self.server.stop()

    def check_sanitizers(self):
        for s in self.procs:
            out = s.output()
            for m in SANITIZER_MARKS:
                assert m not in out, out


@pytest.fixture
def node_factory(tmp_path):
    nodes = []

    def make(args=None, env=None, data=None, wait_for=("jay",), start=True):
        n = Node(data or (tmp_path / ("node%d" % len(nodes))), args=args, env=env,
                 wait_for=wait_for)
        nodes.append(n)
        if start:
            n.start()
        return n

    yield make
    for n in nodes:
        n.stop()
    for n in nodes:
        n.check_sanitizers()


def jay(node_or_addr, cred=ADMIN_TOKEN, timeout=60):
    addr = node_or_addr.jay if isinstance(node_or_addr, Node) else node_or_addr
    return jayclient.Conn(addr, cred, timeout=timeout)


def proc_status(pid, field):
    """A /proc/PID/status field in KiB (VmRSS, VmHWM) or as a count (Threads)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def thread_count(pid):
    return len(os.listdir("/proc/%d/task" % pid))


def raise_nofile(want):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        new = min(want, hard) if hard != resource.RLIM_INFINITY else want
        resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def files_under(path):
    out = []
    for root, _dirs, files in os.walk(path):
        out.extend(os.path.join(root, f) for f in files)
    return out


def all_files(root):
    """Every file and directory under root (root itself left out), as paths."""
    out = set()
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            out.add(os.path.join(d, n))
    return out


def tag_stays_inside(node, tag, what):
    """No name holding tag where a "../" or absolute `what` (key, name)
    would land if it were ever used as a path, none inside the data dir
    either, and the blob files named by their digest alone."""
    for d in ("/", "/tmp", os.getcwd(), os.path.dirname(node.data_dir),
              os.path.dirname(os.path.dirname(node.data_dir))):
        hits = [n for n in os.listdir(d) if tag in n]
        assert hits == [], "a %s escaped into %s: %s" % (what, d, hits)
    for p in all_files(node.data_dir):
        assert tag not in p, "a %s became a path: %s" % (what, p)
    for p in files_under(os.path.join(node.data_dir, "blobs")):
        assert re.fullmatch(r"[0-9a-f]{64}(\.[a-z0-9]+)?", os.path.basename(p)), p


def no_secret_in_files(data_dir, secrets):
    """No secret in plain text in any file of the data dir but admin.token
    (which holds the admin credential by design)."""
    for path in files_under(data_dir):
        if os.path.basename(path) == "admin.token":
            continue
        with open(path, "rb") as f:
            blob = f.read()
        for sec in secrets:
            assert sec.encode() not in blob, "a secret is in plain text in %s" % path


def wait_staging_empty(data_dir, timeout=10):
    """The files left in the data dir's staging/ once it empties or timeout
    seconds pass ([] when it emptied)."""
    deadline = time.time() + timeout
    left = files_under(os.path.join(data_dir, "staging"))
    while left and time.time() < deadline:
        time.sleep(0.1)
        left = files_under(os.path.join(data_dir, "staging"))
    return left


def mount_tmpfs(path, size):
    """Mounts a tmpfs of size bytes at path; False where this machine does
    not allow it (the caller skips)."""
    os.makedirs(path, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%d,mode=0755" % size, "tmpfs", path],
                       capture_output=True, text=True)
    return r.returncode == 0


def sweep(data_dir):
    """tests/proof/proof_sweep over a stopped server's data dir: its counts
    by name (scanned, deleted, live, ...)."""
    r = subprocess.run([binary("tests/proof/proof_sweep"), data_dir], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    f = r.stdout.split()
    return {f[i]: int(f[i + 1]) for i in range(0, len(f), 2)}


def kill_sweep_restart(node, stop, threads, held, errors, swept):
    """The end of one crash cycle: SIGKILL the server mid-write, stop the
    writer threads (none may hang on the dead server) and close the held
    sockets; no writer saw what must fail the test (errors); the sweep run
    over the dead server's data dir adds its counts to swept; the server
    restarts with nothing left in staging."""
    node.kill9()
    stop.set()
    for t in threads:
        t.join(60)
        assert not t.is_alive(), "a writer hung after the server died"
    for s in held:
        s.close()
    assert errors == [], errors

    st = sweep(node.data_dir)
    for k in swept:
        swept[k] += st[k]
    node.start()
    leftovers = files_under(os.path.join(node.data_dir, "staging"))
    assert leftovers == [], leftovers


@contextlib.contextmanager
def meta_db_locked(data_dir):
    """For the block: the data dir's meta.db held under an exclusive lock by
    a sqlite3 process (taken before the block starts, released after)."""
    db = os.path.join(data_dir, "meta.db")
    holder = subprocess.Popen(["sqlite3", db], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        holder.stdin.write(".timeout 0\nBEGIN EXCLUSIVE;\nSELECT 'locked';\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "locked"
        yield
    finally:
        holder.stdin.write("COMMIT;\n.quit\n")
        holder.stdin.flush()
        holder.wait(10)


def faultshim_path():
    p = os.path.join(BUILD, "tests", "proof", "faultshim.so")
    if not os.path.exists(p):
        pytest.fail(p + " is not built; run make")
    return p


# ---- every face at once (test_*_faces.py) ---------------------------------------------
# Jay, S3 + blob ops (one HTTP listener) and Scribe protocol 2, on ephemeral ports.
FACES_ARGS = ["--jay", "127.0.0.1:0", "--http", "127.0.0.1:0", "--scribe", "127.0.0.1:0"]
FACES = ("jay", "http", "scribe")
ADMIN_KEY, ADMIN_SECRET = ADMIN_TOKEN.split(":", 1)
REGION = "us-east-1"


def s3_client(node_or_url, key=ADMIN_KEY, secret=ADMIN_SECRET, timeout=30):
    """A boto3 S3 client (path style, SigV4, no retries: a failure is seen,
    never hidden by a retry).  Each has its own session, so threads may make
    clients at once (boto3's default session is not thread-safe)."""
    import boto3
    from botocore.config import Config
    url = node_or_url.http_url if isinstance(node_or_url, Node) else node_or_url
    return boto3.session.Session().client("s3", endpoint_url=url, aws_access_key_id=key,
                        aws_secret_access_key=secret, region_name=REGION,
                        config=Config(s3={"addressing_style": "path"}, signature_version="s3v4",
                                      retries={"max_attempts": 0, "mode": "standard"},
                                      connect_timeout=5, read_timeout=timeout,
                                      tcp_keepalive=True))


def scribe(node_or_addr, timeout=30, caps=0):
    """A Scribe protocol-2 connection (tests/scribe/scribe_wire.py)."""
    import scribe_wire
    addr = node_or_addr.addr("scribe") if isinstance(node_or_addr, Node) else node_or_addr
    return scribe_wire.Conn(addr, caps=caps, timeout=timeout)


class FaultShim:
    """The fault shim's control file (tests/proof/faultshim.c): env() goes to
    the server, set()/off() switch a fault while it runs, hits() counts the
    failures it injected since the last switch."""

    def __init__(self, tmp_path):
        self.ctl = str(tmp_path / "fault.ctl")
        self.env = {"LD_PRELOAD": faultshim_path(), "CN_FAULT_CTL": self.ctl}
        self.off()

    def _write(self, text):
        # A new inode each time: the shim notices the change on its next call.
        tmp = self.ctl + ".new"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, self.ctl)

    def set(self, **kv):
        self._write("".join("%s=%s\n" % item for item in kv.items()))

    def off(self):
        self._write("off\n")

    def hits(self):
        try:
            with open(self.ctl + ".hits") as f:
                return int(f.read() or 0)
        except (FileNotFoundError, ValueError):
            return 0
