#!/usr/bin/python3
"""A throwaway single-node Ceph cluster with an RGW for tests (issue 24).

Bootstrapped by hand from Debian 12's Ceph 16.2 packages (ceph-mon,
ceph-mgr, ceph-osd, radosgw, ceph-common): no cephadm, no containers, no
systemd.  Everything lives in a fresh temp dir, every daemon runs in the
foreground (-f) as a child of this process, and stop() kills them all and
removes the dir.

The steps: ceph.conf; monmaptool --create, ceph-mon --mkfs, ceph-mon; ceph-mgr;
`ceph osd new UUID`, ceph-osd --mkfs --osd-uuid UUID on a BlueStore *file*
(DIR/osd/ceph-0.block, sparse, created by ceph-osd itself and linked from
the OSD's dir as `block`), ceph-osd; radosgw with the beast frontend on a
free loopback port; `radosgw-admin user create` with a generated key pair.
Up in 15-23 s on a loaded 2-core machine; about 170 MiB RSS for the four
daemons at start (mon 36, mgr 33, OSD 53, RGW 45), some 260 MiB after
100 MiB of tests.

Settings, and why:
  mon host [v2:127.0.0.1:PORT] on a free port, msgr v2 only (every client
                           here speaks it), ms_bind_ipv4 only
  auth ... = none          no keyrings to make or hand around: the cluster
                           is on loopback in a temp dir and lives for one
                           run; RGW's S3 authentication (SigV4 with the
                           user's keys) is its own and stays on
  ms mon client mode = crc secure  (RGW only)
                           radosgw asks for `secure` alone by default,
                           which auth none cannot give: it would retry its
                           monitor connection forever (EACCES)
  osd pool default size = 1, min size = 1, mon allow pool size one,
  osd crush chooseleaf type = 0
                           one OSD: one replica, placed on the OSD itself
                           (not on distinct hosts)
  osd pool default pg num = 8, pg autoscale off
                           RGW makes 6 pools; few PGs peer fast and stay
                           under mon_max_pg_per_osd
  paxos propose interval = 0.05
                           every pool RGW creates is an osdmap epoch; at
                           the default 1 s each, RGW's start took 10 s more
  bluestore block size = 24 GiB (sparse), no fsck at mkfs, small caches
                           the OSD takes what it is allowed; the whole
                           tree's objects are never deleted, and at 4 GiB
                           the OSD ran out of room at 95 % of a
                           `make test-fleet` (2026-12-07: BlueFS could not
                           allocate, the OSD aborted, every later test
                           failed); the file holds only what is written
  mgr module path = DIR/mgr-modules holding the framework only (no module)
                           the mgr (PG stats, `ceph -s`, `ceph df`) without
                           its Python modules: 33 MiB RSS instead of 280,
                           and no CPU spent importing them while the OSD
                           starts; the monitor's MGR_MODULE_ERROR for the
                           missing always-on modules is muted (sticky), so
                           the cluster reports HEALTH_OK
  mon data avail warn/crit = 2/1 %
                           a busy test disk must not stop the monitor

As a library: `with CephCluster() as ceph:` then ceph.endpoint
("http://127.0.0.1:PORT"), ceph.access_key, ceph.secret_key,
ceph.create_bucket(name), ceph.started_in (seconds), ceph.rss() (KiB per
daemon).  As a command: `cephharness.py [--print] -- CMD ARGS...` runs CMD
with CAIRN_TEST_CEPH_ENDPOINT (the RGW's URL) and CAIRN_TEST_CEPH_CREDS (a
file holding ACCESS:SECRET and a newline, what cairnd's --blob-credentials
reads) and exits with CMD's status (a TAP skip when the packages are
missing: scripts/deps.sh fleet)."""
import ctypes
import http.client
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from ports import free_port  # noqa: E402

BINARIES = ("monmaptool", "ceph-mon", "ceph-mgr", "ceph-osd", "radosgw", "radosgw-admin", "ceph")
REGION = "us-east-1"
MGR_MODULES = ()  # the mgr's Python modules to load: none (see "mgr module path")


def missing():
    """The Ceph programs this harness needs that are not on PATH."""
    return [b for b in BINARIES if shutil.which(b) is None]


def available():
    return not missing()


def _die_with_parent():
    """For a daemon's child, between fork and exec: SIGKILL when this
    process dies, so a harness killed without its cleanup leaves no daemon
    behind (the temp dir stays; it is only disk).  libc is loaded before
    the fork: nothing is imported in the child."""
    _PRCTL(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


_PRCTL = ctypes.CDLL(None, use_errno=True).prctl


CONF = """\
[global]
fsid = {fsid}
mon host = [v2:127.0.0.1:{mon_port}]
mon initial members = a
public addr = 127.0.0.1
ms bind ipv4 = true
ms bind ipv6 = false
auth cluster required = none
auth service required = none
auth client required = none
mon warn on insecure global id reclaim allowed = false
mon data avail warn = 2
mon data avail crit = 1
run dir = {dir}/run
admin socket = {dir}/run/$name.asok
pid file = {dir}/run/$name.pid
log file = {dir}/log/$name.log
crash dir = {dir}/crash
log to stderr = false
err to stderr = true
osd pool default size = 1
osd pool default min size = 1
mon allow pool size one = true
mon allow pool delete = true
osd crush chooseleaf type = 0
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon warn on pool no redundancy = false
mon max pg per osd = 500
mgr initial modules =

[mon]
mon data = {dir}/mon/ceph-$id
paxos propose interval = 0.05

[mgr]
mgr data = {dir}/mgr/ceph-$id
mgr module path = {dir}/mgr-modules

[osd]
osd data = {dir}/osd/ceph-$id
osd objectstore = bluestore
bluestore block path = {dir}/osd/ceph-$id.block
bluestore block create = true
bluestore block size = 25769803776
bluestore block db create = false
bluestore block wal create = false
bluestore fsck on mkfs = false
bluestore fsck on mount = false
bluestore cache autotune = false
bluestore cache size = 67108864
osd memory target = 939524096
osd memory cache min = 67108864
osd op num shards = 1
osd op num threads per shard = 2
osd crush update on start = true

[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:{rgw_port}
ms mon client mode = crc secure
rgw thread pool size = 32
rgw enable usage log = false
rgw data = {dir}/rgw
"""


class CephCluster:
    """One Ceph cluster (mon, mgr, one OSD, RGW) in a temp dir; start() then stop()."""

    def __init__(self):
        gone = missing()
        if gone:
            raise RuntimeError("Ceph programs not installed: %s (scripts/deps.sh fleet)"
                               % " ".join(gone))
        self.dir = None
        self.procs = {}  # daemon name -> Popen
        self.endpoint = None
        self.access_key = None
        self.secret_key = None
        self.started_in = None
        self.phases = {}  # step -> seconds since start() when it was done

    @property
    def conf(self):
        return os.path.join(self.dir, "ceph.conf")

    def _cmd(self, argv, timeout=60):
        """Runs a Ceph tool on this cluster's conf; its stdout, or a
        RuntimeError with what it said."""
        argv = [argv[0], "-c", self.conf] + list(argv[1:])
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError("%s: exit %d\n%s%s" % (" ".join(argv), r.returncode, r.stdout,
                                                       r.stderr))
        return r.stdout

    def ceph(self, *args, timeout=60):
        """The `ceph` CLI (JSON out) on this cluster."""
        out = self._cmd(["ceph", "--connect-timeout", "30", "--format", "json"] + list(args),
                        timeout=timeout)
        return json.loads(out) if out.strip() else None

    def _spawn(self, name, argv):
        """A daemon in the foreground, its stdout/stderr to DIR/log/NAME.out."""
        out = open(os.path.join(self.dir, "log", name + ".out"), "ab")
        self.procs[name] = subprocess.Popen([argv[0], "-f", "-c", self.conf] + list(argv[1:]),
                                            stdout=out, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        out.close()

    def _wait(self, what, check, timeout):
        """Polls check() until truthy; a daemon that exited meanwhile, or
        the timeout, is a RuntimeError naming what was awaited."""
        deadline = time.monotonic() + timeout
        delay = 0.05
        while True:
            for name, p in self.procs.items():
                if p.poll() is not None:
                    raise RuntimeError("%s exited %d while waiting for %s" % (name, p.returncode,
                                                                              what))
            try:
                v = check()
                if v:
                    return v
            except (RuntimeError, subprocess.TimeoutExpired, ValueError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("timed out waiting for %s" % what)
            time.sleep(delay)
            delay = min(delay * 2, 0.5)

    def start(self):
        self.dir = tempfile.mkdtemp(prefix="cn-ceph-")
        t0 = self._t0 = time.monotonic()
        try:
            self._bootstrap()
        except BaseException as e:
            tail = self.logs()
            self.stop()
            if isinstance(e, RuntimeError):
                raise RuntimeError("ceph failed to start: %s\n%s" % (e, tail)) from None
            raise
        self.started_in = time.monotonic() - t0
        return self

    def _bootstrap(self):
        for d in ("run", "log", "crash", "mon", "mgr/ceph-x", "osd/ceph-0", "rgw"):
            os.makedirs(os.path.join(self.dir, d))
        fsid = str(uuid.uuid4())
        mon_port, rgw_port = free_port(), free_port()
        with open(self.conf, "w") as f:
            f.write(CONF.format(fsid=fsid, mon_port=mon_port, rgw_port=rgw_port, dir=self.dir))
        self._mgr_modules()
        self._start_mon(fsid, mon_port)
        self._phase("mon")
        self._spawn("mgr.x", ["ceph-mgr", "-i", "x"])
        self._start_osd()
        self._phase("osd")
        self._spawn("client.rgw", ["radosgw", "-n", "client.rgw"])
        self.endpoint = "http://127.0.0.1:%d" % rgw_port
        self._wait("radosgw on port %d" % rgw_port, lambda: self._answers(rgw_port), 90)
        self._phase("rgw")
        self._make_user()
        self._phase("user")

    def _mgr_modules(self):
        """DIR/mgr-modules: the mgr's Python framework with MGR_MODULES only."""
        src = "/usr/share/ceph/mgr"
        dst = os.path.join(self.dir, "mgr-modules")
        os.makedirs(dst)
        for name in ("mgr_module.py", "mgr_util.py") + MGR_MODULES:
            os.symlink(os.path.join(src, name), os.path.join(dst, name))

    def _phase(self, name):
        """Records the seconds since start() at the end of a step."""
        self.phases[name] = round(time.monotonic() - self._t0, 2)

    def _start_mon(self, fsid, port):
        monmap = os.path.join(self.dir, "monmap")
        subprocess.run(["monmaptool", "--create", "--fsid", fsid, "--addv", "a",
                        "[v2:127.0.0.1:%d]" % port, monmap],
                       check=True, capture_output=True, text=True)
        self._cmd(["ceph-mon", "--mkfs", "-i", "a", "--monmap", monmap])
        self._spawn("mon.a", ["ceph-mon", "-i", "a"])
        self._wait("the monitor's quorum", lambda: self.ceph("quorum_status", timeout=10), 30)
        # The mgr runs without its always-on Python modules (MGR_MODULES):
        # the monitor would call the cluster HEALTH_ERR for it.
        self.ceph("health", "mute", "MGR_MODULE_ERROR", "--sticky")

    def _start_osd(self):
        """One OSD: its id from `ceph osd new`, a BlueStore on a sparse file
        (bluestore block path; ceph-osd --mkfs creates it), then the daemon,
        awaited until the monitor has it up."""
        osd_uuid = str(uuid.uuid4())
        osd_id = self._cmd(["ceph", "osd", "new", osd_uuid]).strip()
        assert osd_id == "0", osd_id
        self._cmd(["ceph-osd", "-i", osd_id, "--mkfs", "--osd-uuid", osd_uuid], timeout=90)
        self._spawn("osd.0", ["ceph-osd", "-i", osd_id])
        self._wait("osd.0 up", lambda: self.ceph("osd", "stat", timeout=10)["num_up_osds"] == 1,
                   60)

    def _answers(self, port):
        """Whether something answers HTTP on 127.0.0.1:port."""
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        try:
            c.request("GET", "/")
            return c.getresponse().status > 0
        except OSError:
            return False
        finally:
            c.close()

    def _make_user(self):
        self.access_key = "CN" + secrets.token_hex(9).upper()
        self.secret_key = secrets.token_urlsafe(30)
        self._cmd(["radosgw-admin", "-n", "client.rgw", "user", "create", "--uid", "cairn",
                   "--display-name", "cairn tests", "--access-key", self.access_key,
                   "--secret", self.secret_key])

    def client(self):
        """A boto3 S3 client on the RGW (path style, SigV4, no retries)."""
        import boto3
        from botocore.config import Config
        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=self.access_key,
                            aws_secret_access_key=self.secret_key, region_name=REGION,
                            config=Config(s3={"addressing_style": "path"},
                                          signature_version="s3v4",
                                          retries={"max_attempts": 0}))

    def create_bucket(self, name):
        self.client().create_bucket(Bucket=name)
        return name

    def creds_file(self, path=None):
        """ACCESS:SECRET and a newline in path (default DIR/rgw.creds), 0600."""
        path = path or os.path.join(self.dir, "rgw.creds")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, ("%s:%s\n" % (self.access_key, self.secret_key)).encode())
        os.close(fd)
        return path

    def rss(self):
        """Resident set size of each daemon, in KiB (VmRSS)."""
        out = {}
        for name, p in self.procs.items():
            try:
                with open("/proc/%d/status" % p.pid) as f:
                    for line in f:
                        if line.startswith("VmRSS:"):
                            out[name] = int(line.split()[1])
            except OSError:
                pass
        return out

    def logs(self, tail=1500):
        """The last bytes of each daemon's log and output, for failures."""
        parts = []
        d = os.path.join(self.dir or "", "log")
        for fn in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            try:
                with open(os.path.join(d, fn), errors="replace") as f:
                    text = f.read()[-tail:]
            except OSError:
                continue
            if text.strip():
                parts.append("--- %s\n%s" % (fn, text))
        return "\n".join(parts)

    def stop(self):
        """Kills every daemon (SIGKILL: nothing of the cluster outlives the
        run, so no clean shutdown is owed) and removes the dir (kept, with
        its logs, when CAIRN_CEPH_KEEP is set: for debugging the harness)."""
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
        for p in self.procs.values():
            p.wait()
        self.procs = {}
        if self.dir and os.environ.get("CAIRN_CEPH_KEEP"):
            print("cephharness: kept %s" % self.dir, file=sys.stderr)
        elif self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
        self.dir = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def main(argv):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from pgharness import command_line, run_forwarding_sigterm
    parsed = command_line(argv, "cephharness.py")
    if parsed is None:
        return 2
    show, argv = parsed
    if not available():
        # A TAP skip with its reason, as pgharness does.
        print("1..0 # SKIP Ceph not installed (%s missing; scripts/deps.sh fleet)"
              % " ".join(missing()))
        return 0
    # SIGTERM (a timeout, a kill) during the start takes the same way out
    # as CMD's end: the daemons are killed and the dir removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with CephCluster() as ceph:
        creds = ceph.creds_file()
        if show:
            rss = ceph.rss()
            print("CAIRN_TEST_CEPH_ENDPOINT=%s CAIRN_TEST_CEPH_CREDS=%s (up in %.1f s: %s; RSS %s)"
                  % (ceph.endpoint, creds, ceph.started_in,
                     ", ".join("%s %.1f" % kv for kv in ceph.phases.items()),
                     ", ".join("%s %d MiB" % (n, k >> 10) for n, k in sorted(rss.items()))),
                  file=sys.stderr)
        env = dict(os.environ, CAIRN_TEST_CEPH_ENDPOINT=ceph.endpoint,
                   CAIRN_TEST_CEPH_CREDS=creds)
        return run_forwarding_sigterm(argv, env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
