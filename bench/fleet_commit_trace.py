#!/usr/bin/python3
"""bench/fleet_commit_trace: where the PostgreSQL object commit's time goes,
the two figures of docs/fleet.md and docs/performance.md (Stop 31) that
bench/fleet.py --part commit does not print itself.

  --conflicts  runs the commit row (16 clients) with PostgreSQL logging every
               error, and counts the serialization failures by the statement
               they failed on (and their reason codes);
  --syscalls   runs the commit row (1 client) with `strace -c -f` on cairnd,
               and prints its system calls per PUT (sendto: requests to
               PostgreSQL).
  --submit-syscalls  the same for the Scribe rows (1 client): per 100-path
               submit, and per whole listing of a 10,000-path tree.
  --statements runs the commit row (1 client) with PostgreSQL logging every
               statement, and prints the statements per PUT by their text
               (the first 110 characters), most frequent first.

usage: bench/fleet_commit_trace.py BUILD --conflicts|--syscalls|--submit-syscalls|--statements
It reuses bench/fleet.py's commit part, its PostgreSQL cluster and nodes."""
import collections
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
MODE = sys.argv[2] if len(sys.argv) > 2 else "--conflicts"
sys.argv = ["fleet.py", BUILD]
sys.path.insert(0, HERE)
import fleet  # noqa: E402

NODES = []
_init = fleet.Node.__init__


def _node_init(self, *a, **k):
    _init(self, *a, **k)
    NODES.append(self)


def _count_conflicts(lines):
    c = collections.Counter()
    for i, line in enumerate(lines):
        if "could not serialize" in line or "deadlock" in line:
            stmt = next((x.split("STATEMENT:")[1].strip()[:150] for x in lines[i + 1:i + 5]
                         if "STATEMENT:" in x), "(no statement)")
            c[stmt] += 1
        if "DETAIL" in line and "Reason code" in line:
            c["DETAIL " + line.split("DETAIL:")[1].strip()[:120]] += 1
    return c


def conflicts():
    stop = fleet.pgharness.PgCluster.stop

    def report_then_stop(self):
        lines = open(os.path.join(self.dir, "log"), errors="replace").read().splitlines()
        for k, v in _count_conflicts(lines).most_common(20):
            print(v, k)
        stop(self)
    fleet.pgharness.PgCluster.stop = report_then_stop
    fleet.CLIENTS = (16,)


def statements():
    init, stop = fleet.pgharness.PgCluster.__init__, fleet.pgharness.PgCluster.stop
    wrk = fleet.wrk_run
    puts = []

    def logging_init(self, settings=None, primary=None):
        init(self, dict(settings or {}, log_statement="all"), primary)

    def counted(url, lua, c, secs=None, args=()):
        r = wrk(url, lua, c, secs, args)
        if "/commit/" in open(lua).read():
            puts.append(r["n"])
        return r

    def report_then_stop(self):
        text = open(os.path.join(self.dir, "log"), errors="replace").read()
        # The sqlite node's PUTs come first and log nothing here.
        n = max(puts[-1] if puts else 1, 1)
        c = collections.Counter(re.sub(r"\s+", " ", m)[:110] for m in re.findall(
            r"LOG:  (?:execute [^:]*|statement): (.*)", text))
        for k, v in c.most_common(20):
            if v >= n // 10:
                print("%.2f per PUT  %s" % (v / n, k))
        stop(self)
    fleet.pgharness.PgCluster.__init__ = logging_init
    fleet.pgharness.PgCluster.stop = report_then_stop
    fleet.wrk_run = counted
    fleet.CLIENTS = (1,)


def strace_start():
    """strace -c -f attached to the newest node: (process, its output file)."""
    pid = NODES[-1].proc.pid
    out = os.path.join(fleet.tempfile.gettempdir(), "strace-%d.txt" % pid)
    st = subprocess.Popen(["strace", "-c", "-f", "-p", str(pid), "-o", out])
    time.sleep(1)
    return st, out


def strace_report(st, out, what, n):
    """Stops st and prints its system calls per operation (n operations)."""
    st.terminate()
    st.wait()
    calls = {}
    for line in open(out):
        p = line.split()
        if len(p) >= 5 and re.match(r"^[a-z_0-9]+$", p[-1]) and p[3].isdigit():
            calls[p[-1]] = int(p[3])
    os.unlink(out)
    n = max(n, 1)
    print("%s n=%d %s" % (what, n, " ".join(
        "%s=%.1f" % (k, v / n) for k, v in sorted(calls.items()) if v >= n // 10)), flush=True)


def syscalls():
    wrk = fleet.wrk_run

    def traced(url, lua, c, secs=None, args=()):
        st, out = strace_start()
        r = wrk(url, lua, c, secs, args)
        strace_report(st, out, url, r["n"])
        return r
    fleet.wrk_run = traced
    fleet.CLIENTS = (1,)


def submit_syscalls():
    run = fleet.scribe_run

    def traced(node, eng, clients, kind=fleet.Submitter, probe=lambda: (0, 0)):
        tr = []

        def start_stop():
            if tr:
                tr.append(None)
            else:
                tr.extend(strace_start())
            return probe()
        r = run(node, eng, clients, kind, start_stop)
        strace_report(tr[0], tr[1], "%s %s" % (kind.__name__, eng), r[1])
        return r
    fleet.scribe_run = traced
    fleet.CLIENTS = (1,)


fleet.Node.__init__ = _node_init
fleet.PART = "scribe" if MODE == "--submit-syscalls" else "commit"
{"--conflicts": conflicts, "--syscalls": syscalls, "--submit-syscalls": submit_syscalls,
 "--statements": statements}[MODE]()
sys.exit(fleet.main())
