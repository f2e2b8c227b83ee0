"""A throwaway PostgreSQL 15 cluster for tests (issue 24).

Starts PostgreSQL with initdb/pg_ctl from `pg_config --bindir` (or
/usr/lib/postgresql/15/bin) in a fresh temp dir, stops and removes it after.
PostgreSQL refuses to run as root, so under root the server runs as `nobody`
(runuser) with the temp dir chowned to it; clients of any OS user connect as
the role `cairn` over the unix socket (pg_hba is `trust`, local only).

Settings, and why:
  listen_addresses=''      unix socket only, in the temp dir: no port to collide
  --locale-provider=icu --icu-locale=en-US
                           the database default collation is a linguistic one,
                           so any ordered TEXT column missing COLLATE "C" sorts
                           wrongly and the byte-order tests fail
  fsync=off, synchronous_commit=off, full_page_writes=off
                           tests only: a crash of the test cluster loses nothing
                           that matters

As a library: `with PgCluster() as pg: pg.uri` (or pg.create_db(name)).
A streaming standby of a running cluster: `PgCluster(primary=pg).start()`
(pg_basebackup -R over the primary's socket; promote() makes it a primary).
`PgCluster(port=P)` listens on 127.0.0.1:P as well (test_fleet_partition.py,
whose nodes reach it over TCP in a network namespace of their own; its
socket and psql use P too); tcp_uri_for(db) is its TCP URI.
As a command: `pgharness.py [--blob-tier CAIRND] [--print] -- CMD ARGS...`
runs CMD with CAIRN_TEST_META set to the cluster's URI and exits with CMD's
status (a TAP skip when the server binaries are missing).  With --blob-tier
the blobs go to the S3 tier too: a backend CAIRND (blobtier.py: embedded
engine, 127.0.0.1, an ephemeral port) with a bucket, handed over in
CAIRN_TEST_BLOBS=s3, CAIRN_TEST_BLOB_ENDPOINT, CAIRN_TEST_BLOB_BUCKET,
CAIRN_TEST_BLOB_CREDENTIALS and CAIRN_TEST_BLOB_TOOL (blobtier.py, which
lists and empties a prefix: the C tests' tests/store/test_blob_target.h);
CMD passes only if it put at least one object there (a test whose store
quietly stayed local proves nothing about the tier) and the backend's log
holds no sanitizer report.  The backend and the cluster are stopped however
CMD ends, a SIGTERM to the harness included (passed on to CMD first).
"""
import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROLE = "cairn"
DB = "cairn"


def bindir():
    try:
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, check=True)
        d = out.stdout.strip()
        if os.path.exists(os.path.join(d, "initdb")):
            return d
    except (OSError, subprocess.CalledProcessError):
        pass
    d = "/usr/lib/postgresql/15/bin"
    if os.path.exists(os.path.join(d, "initdb")):
        return d
    return None


def available():
    return bindir() is not None


class PgCluster:
    """One PostgreSQL cluster in a temp dir; start() then stop()."""

    def __init__(self, settings=None, primary=None, port=None, listen=("127.0.0.1",),
                 stream_tcp=False):
        """settings: more -c NAME=VALUE for the server (e.g. the fault tests'
        synchronous_commit=on, so a crash of the server loses no commit it
        acknowledged).  primary: a started PgCluster this one is a streaming
        standby of (its data from pg_basebackup -R, so it follows the
        primary over its unix socket as the role cairn; hot_standby is on
        by default, so it answers reads).  port: a TCP port the server
        listens on too, on each address of listen (None: the unix socket
        only).  stream_tcp: a standby streams from its primary's TCP port
        (127.0.0.1) rather than its socket."""
        self.bin = bindir()
        if self.bin is None:
            raise RuntimeError("PostgreSQL server binaries not found (apt-get install postgresql-15)")
        self.dir = None
        self.as_user = None
        self.settings = dict(settings or {})
        self.primary = primary
        self.port = port
        self.listen = listen
        self.stream_tcp = stream_tcp

    def _port_args(self):
        return ["-p", str(self.port)] if self.port else []
    def _run(self, argv, **kw):
        if self.as_user:
            argv = ["runuser", "-u", self.as_user, "--"] + argv
        return subprocess.run(argv, check=True, capture_output=True, text=True, **kw)

    @property
    def sockdir(self):
        return self.dir

    def uri_for(self, db):
        port = "&port=%d" % self.port if self.port else ""
        return "postgresql:///%s?host=%s&user=%s%s" % (db, self.dir, ROLE, port)

    def tcp_uri_for(self, db, host="127.0.0.1"):
        """db over TCP to host:port (a cluster made with a port)."""
        assert self.port, "a cluster without a TCP port"
        return "postgresql://%s@%s:%d/%s" % (ROLE, host, self.port, db)

    @property
    def uri(self):
        return self.uri_for(DB)

    def start(self):
        self.dir = tempfile.mkdtemp(prefix="cn-pg-")
        os.chmod(self.dir, 0o755)
        if os.geteuid() == 0:
            self.as_user = "nobody"
            pw = pwd.getpwnam(self.as_user)
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        data = os.path.join(self.dir, "data")
        t0 = time.monotonic()
        try:
            if self.primary:
                # -R: standby.signal and primary_conninfo (the primary's socket
                # dir and role); -X stream: the WAL of the copy comes along.
                host = "127.0.0.1" if self.stream_tcp else self.primary.dir
                self._run([os.path.join(self.bin, "pg_basebackup"), "-D", data, "-R",
                           "-X", "stream", "-c", "fast", "--no-sync", "-h", host,
                           "-U", ROLE] + self.primary._port_args())
                self.start_server()
            else:
                self._run([os.path.join(self.bin, "initdb"), "-D", data, "-U", ROLE,
                           "--auth=trust", "--encoding=UTF8", "--locale=C.UTF-8",
                           "--locale-provider=icu", "--icu-locale=en-US", "--no-sync",
                           "--no-instructions"])
                self.start_server()
                self.create_db(DB)
        except subprocess.CalledProcessError as e:
            log = ""
            try:
                with open(os.path.join(self.dir, "log")) as f:
                    log = f.read()[-2000:]
            except OSError:
                pass
            self.stop()
            raise RuntimeError("postgres failed to start: %s %s %s" % (e.stdout, e.stderr, log))
        self.started_in = time.monotonic() - t0
        return self

    @property
    def data(self):
        return os.path.join(self.dir, "data")

    def start_server(self):
        """Starts the server on the cluster's data and socket (again, after
        stop_server or kill9_server: crash recovery runs if it was killed)."""
        settings = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off",
                    "max_connections": "200"}
        settings.update(self.settings)
        listen = "'%s' -c port=%d" % (",".join(self.listen), self.port) if self.port else "''"
        opts = "-c listen_addresses=%s -c unix_socket_directories='%s'" % (listen, self.dir)
        opts += "".join(" -c %s=%s" % kv for kv in sorted(settings.items()))
        self._run([os.path.join(self.bin, "pg_ctl"), "-D", self.data, "-o", opts, "-w",
                   "-t", "60", "-l", os.path.join(self.dir, "log"), "start"])

    def stop_server(self, mode="fast"):
        """pg_ctl stop -m mode (fast: every session terminated, a checkpoint,
        then down; immediate: down at once, recovery at the next start)."""
        self._run([os.path.join(self.bin, "pg_ctl"), "-D", self.data, "-m", mode, "-w",
                   "-t", "60", "stop"])

    def promote(self):
        """pg_ctl promote: a standby ends recovery and becomes a primary on a
        new timeline (waits until it accepts writes)."""
        self._run([os.path.join(self.bin, "pg_ctl"), "-D", self.data, "-w", "-t", "60",
                   "promote"])

    def server_pids(self):
        """The postmaster's pid and those of its children (the backends and
        the auxiliary processes)."""
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            post = int(f.readline())
        pids = [post]
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    with open("/proc/%s/stat" % d) as f:
                        st = f.read()
                except OSError:
                    continue
                if int(st[st.rindex(")") + 2:].split()[1]) == post:
                    pids.append(int(d))
        return pids

    def kill9_server(self):
        """SIGKILL to the postmaster and every child at once, as a crash of
        the machine's PostgreSQL would leave it (postmaster.pid stays)."""
        import signal
        pids = self.server_pids()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(os.path.exists("/proc/%d" % p) for p in pids):
            time.sleep(0.02)

    def psql(self, sql, db="postgres"):
        argv = [os.path.join(self.bin, "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1",
                "-h", self.dir, "-U", ROLE, "-d", db, "-At", "-c", sql] + self._port_args()
        return subprocess.run(argv, check=True, capture_output=True, text=True).stdout

    def create_db(self, name):
        """A fresh database owned by the test role; returns its URI."""
        self.psql('CREATE DATABASE "%s" STRATEGY = FILE_COPY' % name)
        return self.uri_for(name)

    def make_synchronous(self):
        """This primary waits for its standby at every COMMIT from now on:
        synchronous_standby_names by ALTER SYSTEM and a reload, after the
        standby's base backup (set at the start, the primary's own setup
        would wait for a standby not made yet; set in the backup, the
        standby once promoted would wait for one of its own).  Returns once
        the standby reports sync."""
        self.psql("ALTER SYSTEM SET synchronous_standby_names = '*'")
        self.psql("SELECT pg_reload_conf()")
        deadline = time.monotonic() + 30
        while self.psql("SELECT string_agg(sync_state, ',') FROM pg_stat_replication")\
                .strip() != "sync":
            assert time.monotonic() < deadline, "the standby did not become synchronous"
            time.sleep(0.05)

    def stop(self):
        if not self.dir:
            return
        data = self.data
        if os.path.exists(os.path.join(data, "postmaster.pid")):
            try:
                self._run([os.path.join(self.bin, "pg_ctl"), "-D", data, "-m", "immediate",
                           "-w", "stop"])
            except subprocess.CalledProcessError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


@contextlib.contextmanager
def synchronous_pair():
    """(primary, standby): a primary and its streaming standby, the primary
    waiting for it at every COMMIT (so a COMMIT it acknowledged is on the
    standby when it is promoted); both stopped at the end."""
    with PgCluster(settings={"synchronous_commit": "on"}) as primary:
        with PgCluster(settings={"synchronous_commit": "on"}, primary=primary) as standby:
            primary.make_synchronous()
            yield primary, standby


def command_line(argv, prog):
    """A harness's `[--print] -- CMD ARGS...`: (show, CMD ARGS) or None after
    printing the usage (the harnesses' exit status is then 2)."""
    show = False
    if argv and argv[0] == "--print":
        show = True
        argv = argv[1:]
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        print("usage: %s [--print] -- CMD ARGS..." % prog, file=sys.stderr)
        return None
    return show, argv


def run_forwarding_sigterm(argv, env):
    """CMD's exit status; a SIGTERM to this process is passed on to CMD,
    which is given 30 s to finish (its own cleanup) before the harness's
    servers go."""
    proc = subprocess.Popen(argv, env=env)
    signal.signal(signal.SIGTERM, lambda *_: proc.send_signal(signal.SIGTERM))
    try:
        return proc.wait()
    except BaseException:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise


def run_on_blob_tier(cairnd, argv, env, show):
    """CMD with its blobs on the S3 tier of a backend cairnd made for it
    (module docstring); its status, or 1 when it left the tier empty or the
    backend reported a sanitizer error."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from blobtier import TierBackend
    cairnd = os.path.abspath(cairnd)
    work = tempfile.mkdtemp(prefix="cn-tier-")
    backend = TierBackend(cairnd, work, "cntier:" + os.urandom(16).hex())
    try:
        backend.start()
        if show:
            print("CAIRN_TEST_BLOB_ENDPOINT=%s" % backend.endpoint, file=sys.stderr)
        env = dict(env, CAIRN_TEST_BLOBS="s3", CAIRN_TEST_BLOB_ENDPOINT=backend.endpoint,
                   CAIRN_TEST_BLOB_BUCKET=backend.bucket,
                   CAIRN_TEST_BLOB_CREDENTIALS=backend.creds,
                   CAIRN_TEST_BLOB_TOOL=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                     "blobtier.py"))
        status = run_forwarding_sigterm(argv, env)
        keys = backend.keys()
        prefixes = {k.rpartition("/")[0] for k in keys}
        # A TAP comment after CMD's own output: what the tier was given.
        print("# blob tier: %d object(s) under %d key prefix(es) of s3://%s/ on %s"
              % (len(keys), len(prefixes), backend.bucket, backend.endpoint), flush=True)
        if status == 0 and not keys:
            print("pgharness: %s passed without putting one blob in the tier: does its store "
                  "open through tests/store/test_blob_target.h?" % argv[0], file=sys.stderr)
            status = 1
    finally:
        backend.stop()
        report = backend.sanitizer_report()
        shutil.rmtree(work, ignore_errors=True)
    if report:
        print("pgharness: the blob tier's backend reported:\n" + report, file=sys.stderr)
        return 1
    return status


def main(argv):
    cairnd = None
    if argv[:1] == ["--blob-tier"] and len(argv) > 1:
        cairnd, argv = argv[1], argv[2:]
    parsed = command_line(argv, "pgharness.py [--blob-tier CAIRND]")
    if parsed is None:
        return 2
    show, argv = parsed
    if not available():
        # A TAP skip with its reason (the meson tests are TAP): the server
        # comes with `scripts/deps.sh test`.
        print("1..0 # SKIP PostgreSQL 15 server binaries not installed (scripts/deps.sh test)")
        return 0
    # SIGTERM (a meson timeout) while the servers start takes the same way
    # out as CMD's end: both stopped, their dirs removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with PgCluster() as pg:
        if show:
            print("CAIRN_TEST_META=%s (up in %.2f s)" % (pg.uri, pg.started_in), file=sys.stderr)
        env = dict(os.environ, CAIRN_TEST_META=pg.uri)
        if cairnd:
            return run_on_blob_tier(cairnd, argv, env, show)
        return run_forwarding_sigterm(argv, env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
