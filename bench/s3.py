#!/usr/bin/python3
"""bench/s3: cairn's S3 face side by side with nginx, in the same run.

  4 KiB objects, 1 / 16 / 64 connections, wrk for both servers:
    GET  cairn (anonymous, public-read bucket + objects) vs nginx (sendfile)
    GET  cairn with presigned SigV4 URLs (the signature check's cost)
    PUT  cairn (anonymous, public-read-write bucket) vs nginx (WebDAV PUT);
         every PUT has a new key and distinct random content (no CAS hits)
  1 GiB object, curl:
    GET to /dev/null, cairn vs nginx (best of 3 each, interleaved); then,
    when the bench may drop the page cache (root), a cold GET beside the
    machine's sequential read of a cold file of the same size (best of 2)
    PUT from a page-cached file, cairn vs nginx (best of 2); nginx's time
    is also given with an fsync of the stored file, since cairn answers a
    PUT only once the object is durable and nginx never syncs.  cairn also
    takes it as one multipart upload in 64 MiB parts (4 at a time, signed
    parts, bench/s3_large.py's client), and both cairn PUTs print cairnd's CPU per GiB (_cpu).
  Every 4 KiB row also prints the server's CPU per request (NAME_cpu, us/op)
  and its threads' context switches per request (NAME_csw), from /proc
  before and after the wrk run (nginx: master and workers).

usage: bench/s3.py BUILD [--quick] [--get-only | --put-only | --large-only] [--keys N]
--get-only runs only the 4 KiB GET rows (cairn anonymous and presigned, and
nginx), for profiling the read path; --put-only only the 4 KiB PUT rows (no
preload), for the write path; --large-only only the 1 GiB rows; the figures
they print are measured as in a full run.
--keys N spreads the 4 KiB GETs over N objects and files (default 1,000), to
measure a working set larger than the servers' caches of open files.
Prints one "name value unit" line per figure (scripts/bench.sh collects
them); a part that cannot run prints "skip_<part> 0 - <reason>".  Both
servers bind 127.0.0.1 on ephemeral ports and live in a scratch directory
(under $TMPDIR) removed at the end.  Targets: cairn ahead of nginx on 4 KiB
GET requests/s; 1 GiB GET within 10 % of nginx.
"""
import concurrent.futures
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

BUILD = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "build"
QUICK = "--quick" in sys.argv[2:] or os.environ.get("BENCH_QUICK") == "1"
if QUICK:
    BIG, SECS = 64 << 20, 3
else:
    BIG, SECS = 1 << 30, 10
GET_ONLY = "--get-only" in sys.argv[2:]
PUT_ONLY = "--put-only" in sys.argv[2:] and not GET_ONLY
LARGE_ONLY = "--large-only" in sys.argv[2:] and not (GET_ONLY or PUT_ONLY)
if GET_ONLY or PUT_ONLY:
    BIG = 1 << 20   # the large phase does not run
SMALL, NSMALL = 4096, 1000
if "--keys" in sys.argv[2:]:
    NSMALL = int(sys.argv[sys.argv.index("--keys") + 1])
CONNS = (1, 16, 64)
BUCKET = "bench"
REGION = "us-east-1"


def say(name, value, unit):
    print("%s %s %s" % (name, value, unit), flush=True)


def skip(part, why):
    print("skip_%s 0 - %s" % (part, why.replace(" ", "_")), flush=True)


T0 = time.time()


def note(msg):
    sys.stderr.write("bench/s3: [%5.1f s] %s\n" % (time.time() - T0, msg))
    sys.stderr.flush()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_port(port, secs):
    deadline = time.time() + secs
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


# ---- the servers -----------------------------------------------------------------------

class Cairnd:
    def __init__(self, work):
        self.dir = os.path.join(work, "cairn")
        os.makedirs(self.dir)
        self.key = "bench"
        self.secret = os.urandom(16).hex()
        env = dict(os.environ, CAIRN_ADMIN_TOKEN="%s:%s" % (self.key, self.secret))
        self.log = os.path.join(self.dir, "cairnd.log")
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [os.path.join(BUILD, "cairnd"), "--data", os.path.join(self.dir, "data"),
                 "--jay", "off", "--scribe", "off", "--http", "127.0.0.1:0"],
                stdout=log, stderr=subprocess.STDOUT, env=env)
        self.port = None
        deadline = time.time() + 30
        while time.time() < deadline and self.proc.poll() is None:
            m = re.search(r"listening http on 127\.0\.0\.1:(\d+)", open(self.log).read())
            if m:
                self.port = int(m.group(1))
                break
            time.sleep(0.05)
        if not self.port:
            self.stop()
            raise RuntimeError("cairnd did not start: " + open(self.log).read()[-500:])
        self.url = "http://127.0.0.1:%d" % self.port

    def client(self):
        import boto3
        from botocore.config import Config
        return boto3.client("s3", endpoint_url=self.url, aws_access_key_id=self.key,
                            aws_secret_access_key=self.secret, region_name=REGION,
                            config=Config(s3={"addressing_style": "path"},
                                          signature_version="s3v4",
                                          retries={"max_attempts": 0}))

    def cpu_secs(self):
        """cairnd's user + system CPU so far, in seconds."""
        f = open("/proc/%d/stat" % self.proc.pid).read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

    def rss_mib(self):
        try:
            for line in open("/proc/%d/status" % self.proc.pid):
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            pass
        return 0.0

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


NGINX_CONF = """user root;
worker_processes auto;
daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  sendfile on;
  tcp_nopush on;
  tcp_nodelay on;
  keepalive_requests 100000000;
  keepalive_timeout 120s;
  default_type application/octet-stream;
  client_max_body_size 0;
  client_body_buffer_size 16k;
  client_body_temp_path {d}/tmp/body;
  proxy_temp_path {d}/tmp/proxy;
  fastcgi_temp_path {d}/tmp/fastcgi;
  uwsgi_temp_path {d}/tmp/uwsgi;
  scgi_temp_path {d}/tmp/scgi;
  server {{
    listen 127.0.0.1:{port};
    root {d}/www;
    location /put/ {{
      dav_methods PUT;
      create_full_put_path on;
      dav_access user:rw group:r all:r;
    }}
  }}
}}
"""


class Nginx:
    def __init__(self, work):
        self.dir = os.path.join(work, "nginx")
        for sub in ("www/small", "www/put", "tmp"):
            os.makedirs(os.path.join(self.dir, sub), exist_ok=True)
        self.port = free_port()
        conf = os.path.join(self.dir, "nginx.conf")
        with open(conf, "w") as f:
            f.write(NGINX_CONF.format(d=self.dir, port=self.port))
        self.proc = subprocess.Popen(["nginx", "-p", self.dir, "-c", conf, "-e",
                                      os.path.join(self.dir, "error.log")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not wait_port(self.port, 10):
            self.stop()
            raise RuntimeError("nginx did not start")
        self.url = "http://127.0.0.1:%d" % self.port

    @property
    def www(self):
        return os.path.join(self.dir, "www")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)   # graceful: workers finish, master exits
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def nginx_has_dav():
    r = subprocess.run(["nginx", "-V"], capture_output=True, text=True)
    return "http_dav_module" in (r.stdout + r.stderr)


# ---- data --------------------------------------------------------------------------------

def make_files(nginx, big_path):
    rnd = random.Random(4096)
    small = []
    for i in range(NSMALL):
        data = rnd.randbytes(SMALL)
        small.append(data)
        with open(os.path.join(nginx.www, "small", "%05d" % i), "wb") as f:
            f.write(data)
    with open(big_path, "wb") as f:
        left = BIG
        while left:
            n = min(left, 64 << 20)
            f.write(os.urandom(n))
            left -= n
    os.link(big_path, os.path.join(nginx.www, "big.bin"))
    return small


def preload(cairn, small):
    """The same 1,000 small objects in cairn, each public-read."""
    s3 = cairn.client()
    s3.create_bucket(Bucket=BUCKET, ACL="public-read-write")
    local = threading.local()

    def put(i):
        if not hasattr(local, "c"):
            local.c = cairn.client()   # boto3 clients are not shared between threads
        local.c.put_object(Bucket=BUCKET, Key="small/%05d" % i, Body=small[i], ACL="public-read")

    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        list(ex.map(put, range(NSMALL)))
    # presigned GETs for every small object, valid for longer than the run
    return s3, [s3.generate_presigned_url("get_object", ExpiresIn=3600,
                                          Params={"Bucket": BUCKET, "Key": "small/%05d" % i})
                for i in range(NSMALL)]


def check(cairn, nginx, small, presigned):
    """The URLs wrk will hit answer the same bytes on both servers, and a
    request without a credential or a signature is not refused."""
    import urllib.request
    for i in (0, NSMALL - 1):
        for url in (nginx.url + "/small/%05d" % i, cairn.url + "/%s/small/%05d" % (BUCKET, i),
                    presigned[i]):
            with urllib.request.urlopen(url, timeout=10) as r:
                if r.read() != small[i]:
                    raise RuntimeError("wrong body from " + url)


# ---- wrk -----------------------------------------------------------------------------------

def lua_str(b):
    return '"' + "".join("\\%d" % c for c in b) + '"'


GET_LUA = """local prefix = %s
local i = 0
request = function()
  i = (i + 1) %% %d
  return wrk.format("GET", prefix .. string.format("%%05d", i))
end
"""

URLS_LUA = """local paths = {
%s
}
local i = 0
request = function()
  i = i %% #paths + 1
  return wrk.format("GET", paths[i])
end
"""

# Each request: a new key and a 4 KiB body of random bytes whose first 32
# bytes are unique (run, thread, counter), so that no two bodies are equal.
PUT_LUA = """local prefix, run = %s, %s
local filler = %s
local nthreads = 0
function setup(thread)
  thread:set("tid", nthreads)
  nthreads = nthreads + 1
end
local n = 0
request = function()
  n = n + 1
  local head = string.format("%%-10s%%06d%%015d\\n", run, tid, n)
  return wrk.format("PUT", string.format("%%s%%s-%%d-%%d", prefix, run, tid, n), nil, head .. filler)
end
"""


def parse_wrk(text):
    def us(v, unit):
        return float(v) * {"us": 1, "ms": 1e3, "s": 1e6}[unit]
    out = {}
    m = re.search(r"Requests/sec:\s+([\d.]+)", text)
    out["rps"] = float(m.group(1)) if m else 0.0
    for q in ("50", "99"):
        m = re.search(r"^\s+%s(?:\.0+)?%%\s+([\d.]+)(us|ms|s)\b" % q, text, re.M)
        if m:
            out["p" + q] = us(m.group(1), m.group(2))
    bad = 0
    m = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", text)
    if m:
        bad += int(m.group(1))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    if m:
        bad += sum(int(x) for x in m.groups())
    out["bad"] = bad
    m = re.search(r"(\d+) requests in", text)
    out["n"] = int(m.group(1)) if m else 0
    return out


# ---- the server's CPU and context switches per request ------------------------------------
# Each wrk run is bracketed by two samples of the server: user + system time
# (/proc/PID/stat fields 14 and 15, in clock ticks, every thread) and the
# voluntary + involuntary context switches of its threads (the sum over
# /proc/PID/task/TID/status), for the process and its children (nginx's
# workers).  Their differences over the requests wrk completed are printed as
# NAME_cpu (us/op) and NAME_csw (switches/op): figures that hold on a loaded
# machine where the rates do not.  A tick is 1/CLK_TCK s (10 ms).

def stat_ticks(text):
    """utime + stime of a /proc/PID/stat line (fields after the command's
    closing parenthesis: state is field 3, utime 14, stime 15)."""
    f = text.rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])


def proc_tree(pid):
    pids = [pid]
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
                pids += [int(c) for c in f.read().split()]
    except OSError:
        pass
    return pids


def srv_sample(pid):
    """(ticks, switches) of pid and its children now; None without pid."""
    if not pid:
        return None
    ticks = csw = 0
    for p in proc_tree(pid):
        try:
            with open("/proc/%d/stat" % p) as f:
                ticks += stat_ticks(f.read())
            for tid in os.listdir("/proc/%d/task" % p):
                with open("/proc/%d/task/%s/status" % (p, tid)) as f:
                    csw += sum(int(line.split()[1]) for line in f if "ctxt_switches:" in line)
        except OSError:
            pass   # a thread or worker ended meanwhile
    return ticks, csw


def per_request(a, b, n):
    """(us of CPU, context switches) per request between samples a and b."""
    if not a or not b or n <= 0:
        return None
    return ((b[0] - a[0]) * 1e6 / os.sysconf("SC_CLK_TCK") / n, (b[1] - a[1]) / n)


def wrk(name, url, script, conns, pid=None):
    threads = 1 if conns == 1 else 2
    s0 = srv_sample(pid)
    r = subprocess.run(["wrk", "-t%d" % threads, "-c%d" % conns, "-d%ds" % SECS, "--latency",
                        "-s", script, url + "/"], capture_output=True, text=True)
    s1 = srv_sample(pid)
    w = parse_wrk(r.stdout + r.stderr)
    say(name, "%.1f" % w["rps"], "ops/s")
    for q in ("p50", "p99"):
        if q in w:
            say("%s_%s" % (name, q), "%.1f" % w[q], "us")
    pr = per_request(s0, s1, w["n"])
    if pr:
        say(name + "_cpu", "%.1f" % pr[0], "us/op")
        say(name + "_csw", "%.2f" % pr[1], "switches/op")
    say(name + "_bad", w["bad"], "responses")
    if w["bad"]:
        note("%s: %d of %d responses were errors" % (name, w["bad"], w["n"]))
        # Which kind (a status, or wrk's socket errors and timeouts), to chase it.
        for line in (r.stdout + r.stderr).splitlines():
            if "Non-2xx" in line or "Socket errors" in line:
                note("%s: wrk: %s" % (name, line.strip()))
    return w


def small_phase(work, cairn, nginx, presigned):
    get_c = os.path.join(work, "get_cairn.lua")
    get_n = os.path.join(work, "get_nginx.lua")
    get_p = os.path.join(work, "get_presigned.lua")
    with open(get_c, "w") as f:
        f.write(GET_LUA % ('"/%s/small/"' % BUCKET, NSMALL))
    with open(get_n, "w") as f:
        f.write(GET_LUA % ('"/small/"', NSMALL))
    with open(get_p, "w") as f:
        f.write(URLS_LUA % ",\n".join('"%s"' % u[u.index("/", 8):] for u in presigned))
    for c in CONNS:
        wrk("s3_nginx_get_4k_c%d" % c, nginx.url, get_n, c, nginx.proc.pid)
        wrk("s3_get_4k_c%d" % c, cairn.url, get_c, c, cairn.proc.pid)
        wrk("s3_presigned_get_4k_c%d" % c, cairn.url, get_p, c, cairn.proc.pid)
    if not GET_ONLY:
        put_phase(work, cairn, nginx)


def put_phase(work, cairn, nginx):
    filler = os.urandom(SMALL - 32)
    for c in CONNS:
        run = "c%d" % c
        for who, srv, prefix in (("s3_nginx", nginx, "/put/"), ("s3", cairn, "/%s/put/" % BUCKET)):
            script = os.path.join(work, "put_%s_%s.lua" % (who, run))
            with open(script, "w") as f:
                f.write(PUT_LUA % ('"%s"' % prefix, '"%s"' % run, lua_str(filler)))
            os.sync()   # the previous phase's writeback is not this one's cost
            wrk("%s_put_4k_c%d" % (who, c), srv.url, script, c, srv.proc.pid)


# ---- 1 GiB by curl -------------------------------------------------------------------------

def curl(args):
    r = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code} %{time_total}"] + args,
                       capture_output=True, text=True)
    parts = r.stdout.split()
    if r.returncode != 0 or len(parts) != 2 or not parts[0].startswith("2"):
        raise RuntimeError("curl %s: %s %s" % (" ".join(args), r.stdout, r.stderr))
    return float(parts[1])


def stamp(path, tag):
    """Makes the big file's content unique for this PUT (its first bytes), so
    that no PUT stores bytes the server already has."""
    with open(path, "r+b") as f:
        f.write(("%-32s" % tag).encode())


def multipart_put(cairn, path, key):
    """One multipart upload of the file in 64 MiB parts, 4 at a time, each
    signed with its payload hash, by bench/s3_large.py's client (boto3 was
    the bottleneck); seconds from create to complete.  Parts of BIG/16 in
    order through boto3 when BIG is under 256 MiB (--quick)."""
    if BIG >= 256 << 20:
        import s3_large
        with open(path, "rb") as f:
            body = f.read()
        return s3_large.multipart(cairn, body, key, 4, bucket=BUCKET)[0]
    c = cairn.client()
    part = max(5 << 20, BIG // 16)
    t = time.time()
    uid = c.create_multipart_upload(Bucket=BUCKET, Key=key)["UploadId"]
    done = []
    with open(path, "rb") as f:
        for n in range(1, (BIG + part - 1) // part + 1):
            body = f.read(part)
            e = c.upload_part(Bucket=BUCKET, Key=key, UploadId=uid, PartNumber=n, Body=body)
            done.append({"PartNumber": n, "ETag": e["ETag"]})
    c.complete_multipart_upload(Bucket=BUCKET, Key=key, UploadId=uid,
                                MultipartUpload={"Parts": done})
    return time.time() - t


def drop_caches():
    """Empties the page cache (after a sync); False without the right to."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3")
        return True
    except OSError:
        return False


def read_file(path):
    with open(path, "rb", buffering=0) as f:
        while f.read(1 << 20):
            pass


def large_phase(cairn, nginx, big_path):
    mib = BIG / 1048576
    say("s3_large_bytes", BIG, "B")
    best, cpu = {}, {}

    def keep(name, secs):
        best[name] = min(best.get(name, secs), secs)

    for attempt in (1, 2):
        stamp(big_path, "nginx-%d" % attempt)
        os.sync()
        t = time.time()
        curl(["-T", big_path, nginx.url + "/put/big-%d.bin" % attempt])
        t_put = time.time() - t
        fd = os.open(os.path.join(nginx.www, "put", "big-%d.bin" % attempt), os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
        keep("s3_nginx_put_large", t_put)
        keep("s3_nginx_put_large_fsync", time.time() - t)
        stamp(big_path, "cairn-%d" % attempt)
        os.sync()
        c0, t = cairn.cpu_secs(), time.time()
        curl(["-T", big_path, "-H", "x-amz-acl: public-read",
              cairn.url + "/%s/big-%d" % (BUCKET, attempt)])
        keep("s3_put_large", time.time() - t)
        cpu["s3_put_large"] = min(cpu.get("s3_put_large", 1e9), cairn.cpu_secs() - c0)
        stamp(big_path, "cairn-mp-%d" % attempt)
        os.sync()
        c0, secs = cairn.cpu_secs(), multipart_put(cairn, big_path, "big-mp-%d" % attempt)
        keep("s3_put_large_multipart", secs)
        cpu["s3_put_large_multipart"] = min(cpu.get("s3_put_large_multipart", 1e9),
                                            cairn.cpu_secs() - c0)
    # The multipart objects' GET: a producer's body in parts (docs/architecture.md
    # "A reply in parts"), beside the single-PUT object's sendfile and nginx.
    c = cairn.client()
    mp = [c.generate_presigned_url("get_object", Params={"Bucket": BUCKET, "Key": "big-mp-%d" % a})
          for a in (1, 2)]
    for attempt in (1, 2, 3):
        keep("s3_nginx_get_large", curl([nginx.url + "/big.bin"]))
        keep("s3_get_large", curl([cairn.url + "/%s/big-%d" % (BUCKET, 1 + attempt % 2)]))
        keep("s3_get_large_multipart", curl([mp[attempt % 2]]))
    names = ["s3_nginx_put_large", "s3_nginx_put_large_fsync", "s3_put_large",
             "s3_put_large_multipart", "s3_nginx_get_large", "s3_get_large",
             "s3_get_large_multipart"]
    # A cold GET: the page cache dropped before each, beside the machine's own
    # sequential read of a cold file of the same size (root only).
    for attempt in (1, 2):
        if not drop_caches():
            break
        t = time.time()
        read_file(big_path)
        keep("disk_read_cold", time.time() - t)
        drop_caches()
        keep("s3_get_large_cold", curl([cairn.url + "/%s/big-%d" % (BUCKET, attempt)]))
    if "s3_get_large_cold" in best:
        names += ["disk_read_cold", "s3_get_large_cold"]
    for name in names:
        say(name, "%.1f" % (mib / best[name]), "MiB/s")
        say(name + "_secs", "%.3f" % best[name], "s")
    for name in sorted(cpu):   # cairnd's user+system CPU per GiB stored (the best of 2)
        say(name + "_cpu", "%.2f" % (cpu[name] * (1 << 30) / BIG), "s/GiB")


def main():
    for tool in ("nginx", "wrk", "curl"):
        if not shutil.which(tool):
            skip("s3", tool + " not installed")
            return 0
    if not os.access(os.path.join(BUILD, "cairnd"), os.X_OK):
        skip("s3", "cairnd not built")
        return 0
    if not nginx_has_dav():
        skip("s3", "nginx without http_dav_module")
        return 0
    work = tempfile.mkdtemp(prefix="cairn-bench-s3.")
    cairn = nginx = None
    try:
        nginx = Nginx(work)
        cairn = Cairnd(work)
        if PUT_ONLY:
            cairn.client().create_bucket(Bucket=BUCKET, ACL="public-read-write")
            say("s3_secs_per_wrk_run", SECS, "s")
            note("4 KiB PUT only, %d s per run" % SECS)
            put_phase(work, cairn, nginx)
            return 0
        note("data: %d x 4 KiB, %d MiB (cairn %s, nginx %s)" % (NSMALL, BIG >> 20, cairn.url, nginx.url))
        big_path = os.path.join(work, "big.bin")
        small = make_files(nginx, big_path)
        if LARGE_ONLY:
            cairn.client().create_bucket(Bucket=BUCKET, ACL="public-read-write")
        else:
            note("preload")
            _, presigned = preload(cairn, small)
            check(cairn, nginx, small, presigned)
            say("s3_secs_per_wrk_run", SECS, "s")
            note("4 KiB GET and PUT, %d s per run" % SECS)
            small_phase(work, cairn, nginx, presigned)
        if GET_ONLY:
            return 0
        note("%d MiB PUT and GET" % (BIG >> 20))
        large_phase(cairn, nginx, big_path)
        say("s3_cairnd_rss_end", "%.1f" % cairn.rss_mib(), "MiB")
    except Exception as e:   # the whole run goes on without this part
        note("failed: %s" % e)
        skip("s3", "failed: %s" % str(e).splitlines()[0][:80] if str(e) else "failed")
        return 1
    finally:
        for s in (cairn, nginx):
            if s:
                s.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
