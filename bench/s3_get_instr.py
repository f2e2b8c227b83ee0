#!/usr/bin/python3
"""bench/s3_get_instr: instructions per 4 KiB S3 GET, counted by callgrind.

Wall-clock throughput on a shared, loaded machine is noise; an instruction
count is not.  This starts cairnd (BUILD/cairnd; a debugoptimized build, so
the names are there) under `valgrind --tool=callgrind`, makes a bucket of
public-read 4 KiB objects and a boto3-presigned GET URL for each, warms up,
zeroes callgrind's counters (`callgrind_control -z`), runs N GETs spread over
keep-alive connections from http.client, dumps (`callgrind_control -d`) and
prints the whole process's instructions (Ir) per request and the functions
that spent most of them (self cost, or inclusive with --inclusive).

usage: bench/s3_get_instr.py BUILD [--mode presigned|public|both] [--n 2000]
         [--warm 200] [--objects 100] [--conns 4] [--top 25] [--inclusive]
         [--fn NAME,NAME...] [--keep DIR] [--annotate FILE N]

Every response is checked (status 200, the object's bytes): a run that
counted refusals would measure the wrong path.  Prints one
"s3_<mode>_get_4k_ir N Ir/op" line per mode, then the table.  --keep DIR
leaves the callgrind output files there (for callgrind_annotate or
kcachegrind), and `--annotate FILE N` prints a kept file's table again (N:
the requests it counted); otherwise everything lives in a scratch directory under
$TMPDIR removed at the end.  Needs valgrind and boto3 (Debian's python).
"""
import argparse
import http.client
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

BUCKET = "instr"
REGION = "us-east-1"
SIZE = 4096


def note(msg):
    sys.stderr.write("bench/s3_get_instr: %s\n" % msg)
    sys.stderr.flush()


class Cairnd:
    """cairnd under callgrind, counting from the start (the warm-up is
    zeroed away before the measured run)."""

    def __init__(self, build, work):
        self.dir = os.path.join(work, "cairn")
        os.makedirs(self.dir)
        self.key, self.secret = "instr", os.urandom(16).hex()
        env = dict(os.environ, CAIRN_ADMIN_TOKEN="%s:%s" % (self.key, self.secret))
        self.out = os.path.join(work, "callgrind.out")
        self.log = os.path.join(self.dir, "cairnd.log")
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + self.out,
                 os.path.join(build, "cairnd"), "--data", os.path.join(self.dir, "data"),
                 "--jay", "off", "--scribe", "off", "--http", "127.0.0.1:0"],
                stdout=log, stderr=subprocess.STDOUT, env=env)
        self.port = None
        deadline = time.time() + 300  # valgrind starts slowly on a loaded machine
        while time.time() < deadline and self.proc.poll() is None:
            m = re.search(r"listening http on 127\.0\.0\.1:(\d+)", open(self.log).read())
            if m:
                self.port = int(m.group(1))
                break
            time.sleep(0.2)
        if not self.port:
            self.stop()
            raise RuntimeError("cairnd did not start: " + open(self.log).read()[-800:])
        self.url = "http://127.0.0.1:%d" % self.port

    def client(self):
        import boto3
        from botocore.config import Config
        return boto3.client("s3", endpoint_url=self.url, aws_access_key_id=self.key,
                            aws_secret_access_key=self.secret, region_name=REGION,
                            config=Config(s3={"addressing_style": "path"},
                                          signature_version="s3v4",
                                          retries={"max_attempts": 0},
                                          connect_timeout=120, read_timeout=120))

    def control(self, flag):
        """callgrind_control on this process; returns once it answered."""
        subprocess.run(["callgrind_control", flag, str(self.proc.pid)], check=True,
                       stdout=subprocess.DEVNULL, timeout=300)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def run_gets(port, targets, bodies, n, conns):
    """n GETs of targets (round robin) over conns keep-alive connections;
    raises on a status other than 200 or a wrong body."""
    errors = []

    def worker(w):
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
            for i in range(w, n, conns):
                t = i % len(targets)
                c.request("GET", targets[t])
                r = c.getresponse()
                body = r.read()
                if r.status != 200 or body != bodies[t]:
                    raise RuntimeError("GET %s: %d %r" % (targets[t], r.status, body[:200]))
            c.close()
        except Exception as e:  # reported by the caller
            errors.append(e)

    th = [threading.Thread(target=worker, args=(w,)) for w in range(conns)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    if errors:
        raise errors[0]


def dumped(out, before):
    """The dump file callgrind_control -d wrote (the newest new one)."""
    d = os.path.dirname(out)
    new = [os.path.join(d, f) for f in os.listdir(d)
           if f.startswith(os.path.basename(out)) and os.path.join(d, f) not in before]
    if not new:
        raise RuntimeError("callgrind wrote no dump")
    return max(new, key=os.path.getmtime)


# The stages of a GET whose inclusive cost is printed unless --fn says otherwise.
FNS = ["req_new", "req_end", "cn__head_feed", "cn__req_parse_target", "cn_sigv4_verify",
       "query_get", "cn_sigv4_signing_key_cached", "cn_sigv4_signing_key_tagged",
       "secret_fingerprint", "canonical_request",
       "cn_sigv4_sign", "on_request", "cn__resp_send", "malloc", "calloc", "free"]


# Frames that were on the stack when the counters were zeroed or dumped:
# callgrind_annotate lists them with the whole run's cost even as "self".
STACK_FRAMES = {"clone", "start_thread", "loop_thread", "main", "(below main)", "cn_server_run",
                "__libc_start_main@@GLIBC_2.34", "__libc_start_main"}
# libcrypto is stripped: its SHA-256 block function shows as an address.
LIBCRYPTO = "libcrypto"


def annotate(path, inclusive):
    """[(Ir, function, object)] from callgrind_annotate, and the total."""
    r = subprocess.run(["callgrind_annotate", "--inclusive=" + ("yes" if inclusive else "no"),
                        "--auto=no", "--threshold=100", path],
                       capture_output=True, text=True, check=True)
    total, rows = None, []
    for line in r.stdout.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(\S.*)$", line)
        if not m:
            continue
        ir, rest = int(m.group(1).replace(",", "")), m.group(2)
        if rest.startswith("PROGRAM TOTALS"):
            total = ir
            continue
        obj = re.search(r"\[([^\]]*)\]\s*$", rest)
        fn = re.sub(r"\s*\[[^\]]*\]\s*$", "", rest)
        fn = fn.rsplit(":", 1)[-1]
        rows.append((ir, fn, os.path.basename(obj.group(1)) if obj else ""))
    if total is None:
        raise RuntimeError("no totals in callgrind_annotate's output")
    return total, rows


# Threads woken by the clock, not by requests (the metrics sampler, once a
# second): their share of a run grows with its wall time, which on a loaded
# machine is noise, so it is printed apart and left out of Ir per request.
PERIODIC = ["sampler"]


def table(path, n, top, inclusive, pick):
    """Ir per request (less PERIODIC's), the top functions, those named in
    pick, and PERIODIC's Ir per request."""
    total, rows = annotate(path, inclusive)
    _, inc = annotate(path, True)
    periodic = sum({fn: ir for ir, fn, _ in reversed(inc) if fn in PERIODIC}.values())
    out = []
    for ir, fn, obj in rows:
        if fn in STACK_FRAMES or obj.startswith("ld-linux") or len(out) >= top:
            continue
        if fn.startswith("0x") and obj.startswith(LIBCRYPTO):
            fn = "%s (%s, unnamed: SHA-256's block function)" % (fn, obj)
        out.append((ir / n, 100.0 * ir / total, fn))
    picked = []
    if pick:
        for name in pick:
            # one row per name (inclusive lists some twice); clones summed
            seen = {}
            for i, fn, _ in inc:
                if fn == name or fn.startswith(name + "."):
                    seen.setdefault(fn, i)
            ir = sum(seen.values())
            picked.append((ir / n, 100.0 * ir / total, name))
    return (total - periodic) / n, out, picked, periodic / n


def measure(cairn, mode, targets, bodies, args):
    run_gets(cairn.port, targets, bodies, args.warm, args.conns)
    cairn.control("-z")
    note("%s: %d GETs on %d connections" % (mode, args.n, args.conns))
    run_gets(cairn.port, targets, bodies, args.n, args.conns)
    d = os.path.dirname(cairn.out)
    before = {os.path.join(d, f) for f in os.listdir(d)}
    cairn.control("-d")
    path = dumped(cairn.out, before)
    per, rows, picked, bg = table(path, args.n, args.top, args.inclusive, args.fn)
    if args.keep:
        shutil.copy(path, os.path.join(args.keep, "callgrind.%s.out" % mode))
    print("s3_%s_get_4k_ir %.0f Ir/op" % (mode, per), flush=True)
    print("  (not counted: %.0f Ir/op of clock-driven threads: %s)" % (bg, ", ".join(PERIODIC)))
    print("  %10s %6s  %s" % ("Ir/op", "%", "inclusive" if args.inclusive else "self"))
    for ir, pct, fn in rows:
        print("  %10.0f %5.1f%%  %s" % (ir, pct, fn))
    if picked:
        print("  %10s %6s  %s" % ("Ir/op", "%", "inclusive, as asked (--fn)"))
        for ir, pct, fn in picked:
            print("  %10.0f %5.1f%%  %s" % (ir, pct, fn))
    sys.stdout.flush()


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--annotate":  # a kept dump, again
        per, rows, picked, bg = table(sys.argv[2], int(sys.argv[3]), 40, False, FNS)
        print("%.0f Ir/op (and %.0f Ir/op of periodic threads)" % (per, bg))
        for ir, pct, fn in rows + picked:
            print("  %10.0f %5.1f%%  %s" % (ir, pct, fn))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("--mode", choices=("presigned", "public", "both"), default="presigned")
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--warm", type=int, default=200)
    ap.add_argument("--objects", type=int, default=100)
    ap.add_argument("--conns", type=int, default=4)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--inclusive", action="store_true")
    ap.add_argument("--fn", type=lambda v: [f for f in v.split(",") if f], default=FNS,
                    help="comma-separated functions whose inclusive Ir/op to print")
    ap.add_argument("--keep")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    if not os.access(os.path.join(build, "cairnd"), os.X_OK):
        sys.exit("bench/s3_get_instr: %s/cairnd is not built" % build)
    if not shutil.which("valgrind") or not shutil.which("callgrind_control"):
        sys.exit("bench/s3_get_instr: needs valgrind (callgrind_control)")
    work = tempfile.mkdtemp(prefix="cairn-instr-")
    cairn = None
    try:
        cairn = Cairnd(build, work)
        note("cairnd under callgrind on port %d; loading %d objects" % (cairn.port, args.objects))
        s3 = cairn.client()
        s3.create_bucket(Bucket=BUCKET, ACL="public-read")
        rnd = random.Random(SIZE)
        bodies, public, presigned = [], [], []
        for i in range(args.objects):
            key = "small/%05d" % i
            bodies.append(rnd.randbytes(SIZE))
            s3.put_object(Bucket=BUCKET, Key=key, Body=bodies[-1], ACL="public-read")
            public.append("/%s/%s" % (BUCKET, key))
            u = urllib.parse.urlsplit(s3.generate_presigned_url(
                "get_object", ExpiresIn=3600, Params={"Bucket": BUCKET, "Key": key}))
            presigned.append(u.path + "?" + u.query)
        modes = ("public", "presigned") if args.mode == "both" else (args.mode,)
        for mode in modes:
            measure(cairn, mode, presigned if mode == "presigned" else public, bodies, args)
    finally:
        if cairn:
            cairn.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
