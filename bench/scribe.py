#!/usr/bin/python3
"""bench/scribe: cairn's repositories (Scribe protocol 2, `cairn` workspaces)
side by side with git in the same run.

  (a) many files: submit, fresh clone, and a no-op sync, against git add +
      commit + push to a local bare repository and git clone (file://);
  (b) one large file: submit and fresh clone, against git-lfs (push to and
      clone from a local bare repository over the file protocol);
  (c) a 1 MiB edit inside (b): bytes the re-submit moves, against the bytes
      git-lfs pushes for the same edit;
  (d) `cairn status` on 100,000 unchanged small files (no git peer).
  (e) `cairn repo merge` of a branch that changed 1,000 and then 10,000 of
      100,000 small files (time, the client's bytes, and the server's
      requests by opcode and bytes from /_cairn/metrics), beside `git merge`
      of the same tree shape; run alone with --merge [FILES].
  (f) the follow-merges log of a file with 1,000 revisions on two branches
      merged every 50 (one request, and `cairn repo log --follow-merges`);
      run alone with --log [REVISIONS].
  (g) locks: `cairn repo lock` of 10,000 paths at once (one lock_acquire)
      and their `unlock` (one lock_release), and a 10,000-file submit under
      a 50-rule lock policy (every path matched against 49 rules that miss
      and one that requires its lock, held) against the same submit with no
      policy (the ratio); run alone with --locks [FILES].
  (h) a 1 GiB get (fresh clone of one file) over Scribe protocol 4 (TLS 1.3,
      X25519MLKEM768, bounded TLS writes) against protocol 2 on plaintext
      (sendfile) from the same cairnd in the same run: CPU seconds of the
      server and of the client per clone, and their TLS/plaintext ratios;
      run alone with --tls [MIB].
  (i) verified against plain sync of a 100,000-file tree (one file changed
      since the workspace's change): bench_scribe_verified times the sync
      through libcairn both ways, tree_page listing (plain, the client's
      reader from before syncs were verified) against tree_proof pages
      proved against the authenticated head commit (verified), and reports
      the bytes on the wire and the proof bytes per 4,096-entry page; then
      `cairn repo sync` of the same change (verified, the real command);
      then that sync listed as key ranges (the default) against unsplit
      (CAIRN_PROOF_SPLIT=1), interleaved: wall time and cairnd CPU;
      run alone with --verified [FILES].  Target: verified <= 1.2x plain.

usage: bench/scribe.py BUILD [--quick] [--merge [FILES] | --log [REVISIONS] | --locks [FILES]
                              | --tls [MIB] | --verified [FILES]]
Prints one "name value unit" line per figure (scripts/bench.sh collects
them); a part that cannot run prints "skip_<part> 0 - <reason>".  Binds
127.0.0.1 only; everything lives in a scratch directory removed at the end.
Targets: clone of (a) >= 3x faster than git; (c) moves >= 20x fewer bytes
than git-lfs; no-op sync of (a) < 100 ms; status in (d) < 1 s.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

BUILD = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "build"
QUICK = "--quick" in sys.argv[2:] or os.environ.get("BENCH_QUICK") == "1"
if QUICK:
    A_FILES, A_BYTES, B_BYTES, STATUS_FILES = 1000, 64 << 20, 128 << 20, 10000
else:
    A_FILES, A_BYTES, B_BYTES, STATUS_FILES = 10000, 1 << 30, 2 << 30, 100000
EDIT = 1 << 20
E_FILES = 10000 if QUICK else 100000  # (e): a tenth of them changed on the branch


def say(name, value, unit):
    print("%s %s %s" % (name, value, unit), flush=True)


def skip(part, why):
    print("skip_%s 0 - %s" % (part, why), flush=True)


def sh(args, cwd=None, env=None, check=True):
    r = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError("%s: %s %s" % (" ".join(args), r.stdout, r.stderr))
    return r


def timed(fn):
    t = time.time()
    out = fn()
    return time.time() - t, out


def durable():
    subprocess.run(["sync"], check=True)


def random_block(n):
    return os.urandom(n)


def make_many(d, files, total):
    """`files` files of random bytes, total bytes, 100 per directory."""
    per = total // files
    block = random_block(64 << 20)
    at = 0
    for i in range(files):
        sub = os.path.join(d, "d%03d" % (i // 100))
        os.makedirs(sub, exist_ok=True)
        # distinct content per file: a slice of the block plus the index
        off = (i * 7919 * 4096) % (len(block) - per)
        with open(os.path.join(sub, "f%05d.bin" % i), "wb") as f:
            f.write(b"%08d" % i + block[off:off + per - 8])
        at += per


def make_small(d, files, tail):
    """`files` tiny files, 1,000 per directory: d000/f0000 holds "0/0" + tail."""
    for k in range(files // 1000):
        sub = os.path.join(d, "d%03d" % k)
        os.makedirs(sub)
        for i in range(1000):
            with open(os.path.join(sub, "f%04d" % i), "wb") as f:
                f.write(b"%d/%d" % (k, i) + tail)


def make_big(path, size):
    """One file of distinct random content (64 MiB random blocks, each
    made distinct by its offset)."""
    block = random_block(64 << 20)
    with open(path, "wb") as f:
        for off in range(0, size, len(block)):
            n = min(len(block), size - off)
            f.write(b"%016d" % off + block[16:n])


def edit(path, size):
    with open(path, "r+b") as f:
        f.seek(size // 2 + 4321)
        f.write(os.urandom(EDIT))


class Cairnd:
    """cairnd on loopback: Scribe always, HTTP (for /_cairn/metrics) when asked."""

    def __init__(self, work, http=False, tls=None):
        self.data = os.path.join(work, "cairn-data")
        more = ["--scribe-tls", "127.0.0.1:0", "--scribe-tls-cert", tls[0],
                "--scribe-tls-key", tls[1]] if tls else []
        self.log = os.path.join(work, "cairnd.log")
        with open(self.log, "wb") as lf:
            self.proc = subprocess.Popen(
                [os.path.join(BUILD, "cairnd"), "--data", self.data, "--jay", "off", "--http",
                 "127.0.0.1:0" if http else "off", "--scribe", "127.0.0.1:0"] + more,
                stdout=lf, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        self.ep = self.http = None
        while time.time() < deadline and not (self.ep and (self.http or not http)):
            with open(self.log, "rb") as f:
                text = f.read()
            m = re.search(rb"listening scribe on (\S+)", text)
            t = re.search(rb"listening scribes on (\S+)", text)
            self.tls_ep = "scribes://" + t.group(1).decode() if t else None
            if tls and not t:
                m = None
            h = re.search(rb"listening http on (\S+)", text)
            self.http = h.group(1).decode() if h else None
            if m:
                self.ep = m.group(1).decode()
            elif self.proc.poll() is not None:
                raise RuntimeError("cairnd exited")
            else:
                time.sleep(0.05)
        if not self.ep or (http and not self.http):
            raise RuntimeError("cairnd did not listen")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)


def cairn(ep, *args):
    return sh([os.path.join(BUILD, "cairn")] + list(args) + ["--endpoint", ep])


def sent_of(out):
    m = re.search(r"(\d+) bytes sent", out)
    return int(m.group(1)) if m else 0


GIT_ENV = None


def git_env(home):
    """A git environment of its own: fixed identity, scratch HOME, no system config."""
    return {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost",
            "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@localhost",
            "HOME": home, "PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1"}


def git(*args, cwd=None):
    return sh(["git"] + list(args), cwd=cwd, env=GIT_ENV)


def dir_bytes(d):
    n = 0
    for root, _, files in os.walk(d):
        for f in files:
            n += os.path.getsize(os.path.join(root, f))
    return n


def scribe_many_submit(ep, work):
    ws = os.path.join(work, "s-a")
    cairn(ep, "repo", "create", "many")
    cairn(ep, "clone", "many", ws)
    make_many(ws, A_FILES, A_BYTES)
    durable()
    t_submit, _ = timed(lambda: cairn(ep, "submit", ws, "-m", "many", "--quiet"))
    shutil.rmtree(ws)
    return t_submit


def scribe_many_clone(ep, work, keep):
    """One fresh clone of (a); with keep, also the best of five no-op syncs
    and a status of the clone."""
    clone = os.path.join(work, "s-a-clone")
    t_clone, _ = timed(lambda: cairn(ep, "clone", "many", clone, "--quiet"))
    best = t_status = None
    if keep:
        for _ in range(5):
            t, _ = timed(lambda: cairn(ep, "sync", clone, "--quiet"))
            best = t if best is None else min(best, t)
        t_status, _ = timed(lambda: cairn(ep, "status", clone, "--quiet"))
    shutil.rmtree(clone)
    return t_clone, best, t_status


def git_many_submit(work):
    src = os.path.join(work, "g-a")
    bare = os.path.join(work, "g-a.git")
    os.makedirs(src)
    make_many(src, A_FILES, A_BYTES)
    git("init", "-q", "--bare", bare)
    git("init", "-q", src)
    durable()
    t0 = time.time()
    git("add", "-A", cwd=src)
    git("commit", "-q", "-m", "many", cwd=src)
    git("push", "-q", "file://" + bare, "HEAD:refs/heads/main", cwd=src)
    durable()
    t_submit = time.time() - t0
    shutil.rmtree(src)
    return t_submit, bare


def git_many_clone(work, bare):
    clone = os.path.join(work, "g-a-clone")
    t_clone, _ = timed(lambda: git("clone", "-q", "-b", "main", "file://" + bare, clone))
    shutil.rmtree(clone)
    return t_clone


def scribe_status_many(ep, work):
    """`cairn status` on STATUS_FILES unchanged small files: best of three."""
    ws = os.path.join(work, "s-d")
    cairn(ep, "repo", "create", "status")
    cairn(ep, "clone", "status", ws)
    make_small(ws, STATUS_FILES, b"")
    cairn(ep, "submit", ws, "-m", "many small", "--quiet")
    best = None
    for _ in range(3):
        t, _ = timed(lambda: cairn(ep, "status", ws, "--quiet"))
        best = t if best is None else min(best, t)
    shutil.rmtree(ws)
    return best


def scribe_big(ep, work):
    ws = os.path.join(work, "s-b")
    cairn(ep, "repo", "create", "big")
    cairn(ep, "clone", "big", ws)
    path = os.path.join(ws, "big.bin")
    make_big(path, B_BYTES)
    durable()
    t_submit, _ = timed(lambda: cairn(ep, "submit", ws, "-m", "big"))
    clone = os.path.join(work, "s-b-clone")
    t_clone, _ = timed(lambda: cairn(ep, "clone", "big", clone, "--quiet"))
    shutil.rmtree(clone)
    edit(path, B_BYTES)
    t_edit, out = timed(lambda: cairn(ep, "submit", ws, "-m", "edit"))
    moved = sent_of(out.stdout)
    shutil.rmtree(ws)
    return t_submit, t_clone, t_edit, moved


def lfs_big(work):
    src = os.path.join(work, "l-b")
    bare = os.path.join(work, "l-b.git")
    git("init", "-q", "--bare", bare)
    git("init", "-q", src)
    git("lfs", "install", "--local", cwd=src)
    git("lfs", "track", "*.bin", cwd=src)
    path = os.path.join(src, "big.bin")
    make_big(path, B_BYTES)
    durable()
    url = "file://" + bare
    t0 = time.time()
    git("add", "-A", cwd=src)
    git("commit", "-q", "-m", "big", cwd=src)
    git("push", "-q", url, "HEAD:refs/heads/main", cwd=src)
    durable()
    t_submit = time.time() - t0
    clone = os.path.join(work, "l-b-clone")
    t_clone, _ = timed(lambda: git("clone", "-q", "-b", "main", url, clone))
    shutil.rmtree(clone)
    before = dir_bytes(bare)
    edit(path, B_BYTES)
    t0 = time.time()
    git("add", "-A", cwd=src)
    git("commit", "-q", "-m", "edit", cwd=src)
    git("push", "-q", url, "HEAD:refs/heads/main", cwd=src)
    t_edit = time.time() - t0
    moved = dir_bytes(bare) - before
    shutil.rmtree(src)
    shutil.rmtree(bare)
    return t_submit, t_clone, t_edit, moved


def metrics(http):
    """The server's /_cairn/metrics as {series: value} for the figures (e)
    reads: Scribe requests by opcode (the request-duration histogram's
    count), submits by outcome, and the Scribe listener's bytes."""
    with urllib.request.urlopen("http://%s/_cairn/metrics" % http, timeout=30) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        m = re.match(r'cairn_request_duration_seconds_count\{face="scribe",op="(\w+)"\} (\d+)',
                     line)
        if m:
            out["requests_" + m.group(1)] = int(m.group(2))
        m = re.match(r'cairn_scribe_submits_total\{op="(\w+)",outcome="(\w+)"\} (\d+)', line)
        if m:
            out["%s_%s" % (m.group(1), m.group(2))] = int(m.group(3))
        m = re.match(r'cairn_(received|sent)_bytes_total\{listener="scribe"\} (\d+)', line)
        if m:
            out["server_" + m.group(1)] = int(m.group(2))
    return out


def metrics_delta(before, after):
    return {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}


def bump(d, numbers, tag):
    """Appends tag to the files d/dKKK/fIIII named by numbers (make_small's)."""
    for n in numbers:
        with open(os.path.join(d, "d%03d" % (n // 1000), "f%04d" % (n % 1000)), "ab") as f:
            f.write(tag)


class MergeSetup:
    """(e)'s repository, built once: FILES small files in one workspace
    submitted in one change (change 1 of main).  Each round then forks two
    branches from main@1 — the merge target and the feature — in the same
    workspace (`cairn repo switch` rewrites only the files that differ), so
    no round pays for another base submit or a clone of FILES files.  The
    setup's cost was measured first (2026-12-04, release build, 100,000
    files): writing the files 7.5 s, the base submit 33.5 s, a clone of the
    feature branch 22.9 s, the feature's 10,000 edits submitted 4.7 s; the
    clone is gone, the base submit is paid once for every round."""

    def __init__(self, ep, work, files):
        self.ep, self.files = ep, files
        self.ws = os.path.join(work, "s-e")
        cairn(ep, "repo", "create", "merge")
        cairn(ep, "repo", "clone", "merge", self.ws)
        self.setup = {}
        self.setup["write"], _ = timed(lambda: make_small(self.ws, files, b" base\n"))
        self.setup["submit"], _ = timed(
            lambda: cairn(ep, "repo", "submit", self.ws, "-m", "base", "--quiet"))

    def round(self, changed, http):
        """Feature edits `changed` files, the target 100 others; returns the
        seconds of `cairn repo merge`, its own byte report (sent, received)
        and the server's metrics across it."""
        ep, ws, step = self.ep, self.ws, max(self.files // changed, 1)
        feat, target = "feature%d" % changed, "target%d" % changed
        for b in (feat, target):
            cairn(ep, "repo", "branch", "create", b, "--from", "main@1", "-C", ws)
        cairn(ep, "repo", "switch", feat, "-C", ws)
        bump(ws, (k * step for k in range(changed)), b"feature\n")
        cairn(ep, "repo", "submit", ws, "-m", "feature", "--quiet")
        cairn(ep, "repo", "switch", target, "-C", ws)
        bump(ws, ((k * step + 1) % self.files for k in range(100)), b"main\n")
        cairn(ep, "repo", "submit", ws, "-m", "main", "--quiet")
        before = metrics(http)
        t, out = timed(lambda: cairn(ep, "repo", "merge", feat, "-C", ws))
        delta = metrics_delta(before, metrics(http))
        m = re.search(r"(\d+) bytes sent, (\d+) bytes received", out.stdout)
        return t, (int(m.group(1)), int(m.group(2))) if m else (0, 0), delta


def git_merge_rounds(work, files, rounds):
    """git's peer of (e), same tree shape and edits, in a local repository
    under work: one commit of FILES files, then per round a feature and a
    target branch from it and one timed `git merge` (no network: git has no
    server here)."""
    d = os.path.join(work, "g-e")
    os.makedirs(d)
    git("init", "-q", "-b", "main", d)
    # no background gc: it would race the timed merges and the removal
    git("config", "gc.auto", "0", cwd=d)
    git("config", "maintenance.auto", "false", cwd=d)
    make_small(d, files, b" base\n")
    git("add", "-A", cwd=d)
    git("commit", "-q", "-m", "base", cwd=d)
    out = {}
    for changed in rounds:
        step = max(files // changed, 1)
        feat, target = "feature%d" % changed, "target%d" % changed
        git("checkout", "-q", "-b", feat, "main", cwd=d)
        bump(d, (k * step for k in range(changed)), b"feature\n")
        git("commit", "-q", "-a", "-m", "feature", cwd=d)
        git("checkout", "-q", "-b", target, "main", cwd=d)
        bump(d, ((k * step + 1) % files for k in range(100)), b"main\n")
        git("commit", "-q", "-a", "-m", "main", cwd=d)
        out[changed], _ = timed(lambda: git("merge", "-q", "--no-edit", feat, cwd=d))
    return out  # d goes with the scratch directory, after the figures are out


def merge_only():
    """`bench/scribe.py BUILD --merge [FILES]`: part (e) alone, rounds of a
    hundredth and a tenth of FILES changed on the branch, git beside it."""
    global GIT_ENV
    files = next((int(a) for a in sys.argv[2:] if a.isdigit()), E_FILES)
    work = tempfile.mkdtemp(prefix="cairn-bench-merge.", dir=os.environ.get("TMPDIR", "/var/tmp"))
    GIT_ENV = git_env(work)
    srv = None
    try:
        srv = Cairnd(work, http=True)
        say("scribe_e_files", files, "files")
        say("scribe_e_load", "%.2f" % os.getloadavg()[0], "load1")
        setup = MergeSetup(srv.ep, work, files)
        say("scribe_e_setup_write", "%.2f" % setup.setup["write"], "s")
        say("scribe_e_setup_submit", "%.2f" % setup.setup["submit"], "s")
        rounds = [max(files // 100, 1), max(files // 10, 1)]
        for changed in rounds:
            t, (sent, recv), delta = setup.round(changed, srv.http)
            say("scribe_e%d_merge" % changed, "%.2f" % t, "s")
            say("scribe_e%d_client_sent" % changed, sent, "bytes")
            say("scribe_e%d_client_received" % changed, recv, "bytes")
            for k in sorted(delta):
                say("scribe_e%d_%s" % (changed, k), delta[k], "bytes" if "server_" in k else "n")
            say("scribe_e%d_load" % changed, "%.2f" % os.getloadavg()[0], "load1")
        if shutil.which("git"):
            for changed, t in git_merge_rounds(work, files, rounds).items():
                say("git_e%d_merge" % changed, "%.2f" % t, "s")
        else:
            skip("git_e", "git_not_installed")
        say("scribe_e_load_end", "%.2f" % os.getloadavg()[0], "load1")
    finally:
        if srv:
            srv.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


def scribe_follow_log(ep, work, revs):
    """(f) The follow-merges log of one file with `revs` revisions: half of
    them on main, half on branch feature, merged into main every 50 feature
    revisions (made over the wire with tests/scribe/scribe_wire.py).  Returns
    the best of five one-page log requests over one connection (s), the
    rows, and the best of three `cairn repo log PATH --follow-merges` (s)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                    "tests", "scribe"))
    from scribe_wire import (ADD, CHANGESET, CHUNK, MANIFEST, MODIFY, OP, Conn, chunk_id,
                             changeset_encode, changeset_id, manifest_encode, manifest_id)
    host, port = ep.rsplit(":", 1)
    with Conn((host, int(port))) as c:
        info = c.repo_create("follow")
        rid, main, inc, ws = info["id"], info["main"], info["incarnation"], os.urandom(16)

        def put(kind, path, n):
            data = b"revision %d\n" % n
            enc = manifest_encode([data])
            mid = manifest_id(enc)
            cs = changeset_encode([(kind, path, mid, 0, None)])
            cid = changeset_id(cs)
            c.put_objects(rid, [(CHUNK, chunk_id(data), data), (MANIFEST, mid, enc),
                                (CHANGESET, cid, cs)])
            return cid

        def submit(branch, base, cid):
            o = c.submit(rid, inc, os.urandom(16), branch, ws, base, cid, "bench", "edit")
            assert o["outcome"] == 1, o
            return o["change"]

        head = submit(main, 0, put(ADD, "f.txt", 0))
        feat = os.urandom(16)
        assert c.branch_create(rid, inc, os.urandom(16), feat, "feature", main,
                               head)["outcome"] == 1
        fhead, n = head, 1
        while n < revs:
            for _ in range(50):
                if n >= revs:
                    break
                if n % 2:
                    fhead = submit(feat, fhead, put(MODIFY, "f.txt", n))
                else:
                    head = submit(main, head, put(MODIFY, "f.txt", n))
                n += 1
            if n < revs:
                base_branch, base = c.merge_base(rid, main, head, feat, fhead)
                sub = c.submit_payload(rid, inc, os.urandom(16), main, ws, head,
                                       put(MODIFY, "f.txt", n), "bench", "merge")
                o = c.merge_submit(sub, head, feat, fhead, base_branch, base)
                assert o["outcome"] == 1, o
                head, n = o["change"], n + 1
        req = (c.enc().raw(rid).raw(main).bool(True).str16("f.txt").bool(True).bool(False)
               .bool(False).bool(False).bool(False).u32(4096).bytes())
        best = None
        for _ in range(5):
            t, out = timed(lambda: c.call(OP["log"], req))
            best = t if best is None else min(best, t)
        rows = c.dec(out).u32()
    ws_dir = os.path.join(work, "s-f")
    cairn(ep, "repo", "clone", "follow", ws_dir, "--quiet")
    cli = min(timed(lambda: cairn(ep, "repo", "log", ws_dir, "f.txt", "--follow-merges"))[0]
              for _ in range(3))
    shutil.rmtree(ws_dir)
    return best, rows, cli


def follow_only():
    """`bench/scribe.py BUILD --log [REVISIONS]`: part (f) alone."""
    revs = next((int(a) for a in sys.argv[2:] if a.isdigit()), 1000)
    work = tempfile.mkdtemp(prefix="cairn-bench-log.", dir=os.environ.get("TMPDIR", "/var/tmp"))
    srv = None
    try:
        srv = Cairnd(work)
        t, rows, cli = scribe_follow_log(srv.ep, work, revs)
        say("scribe_f_revisions", revs, "revisions")
        say("scribe_f_rows", rows, "rows")
        say("scribe_f_log", "%.1f" % (t * 1000), "ms")
        say("scribe_f_cli", "%.1f" % (cli * 1000), "ms")
    finally:
        if srv:
            srv.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


def lock_policy_text(rules):
    """`rules` rules: rules - 1 `**` globs no path of make_small matches,
    then one that requires a lock on every one of its files."""
    lines = ['  { pattern = "**/*.x%02d", mode = "none" },' % i for i in range(rules - 1)]
    lines.append('  { pattern = "d*/**", mode = "required" },')
    return ("version = 1\n[locks]\nrules = [\n%s\n]\n" % "\n".join(lines)).encode()


def scribe_locks(ep, work, files, rules=50):
    """(g) A workspace of `files` small files (make_small's).  Returns the
    seconds of: a submit rewriting every file with no lock policy; `cairn
    repo lock` of every path at once and its `unlock` (the policy in force:
    both re-mark the files' modes too); the same submit under `rules` rules
    with every lock held (the server matches each path and releases each
    lock in the acceptance transaction)."""
    ws = os.path.join(work, "s-g")
    cairn(ep, "repo", "create", "locks")
    cairn(ep, "repo", "clone", "locks", ws)
    make_small(ws, files, b" base\n")
    cairn(ep, "repo", "submit", ws, "-m", "base", "--quiet")
    paths = ["d%03d/f%04d" % (n // 1000, n % 1000) for n in range(files)]
    out = {}
    bump(ws, range(files), b"none\n")
    out["submit_none"], _ = timed(lambda: cairn(ep, "repo", "submit", ws, "-m", "no rules",
                                                "--quiet"))
    os.makedirs(os.path.join(ws, ".scribe"))
    with open(os.path.join(ws, ".scribe", "config.toml"), "wb") as f:
        f.write(lock_policy_text(rules))
    cairn(ep, "repo", "submit", ws, "-m", "policy", "--quiet")
    out["lock"], _ = timed(lambda: cairn(ep, "repo", "lock", *paths, "-C", ws, "--quiet"))
    out["unlock"], _ = timed(lambda: cairn(ep, "repo", "unlock", *paths, "-C", ws, "--quiet"))
    cairn(ep, "repo", "lock", *paths, "-C", ws, "--quiet")
    bump(ws, range(files), b"rules\n")
    out["submit_rules"], _ = timed(lambda: cairn(ep, "repo", "submit", ws, "-m", "rules",
                                                 "--quiet"))
    if cairn(ep, "repo", "locks", "--mine", "-C", ws).stdout:
        raise RuntimeError("the submit left locks held")
    return out


def say_locks(ep, work, files):
    say("scribe_g_files", files, "files")
    say("scribe_g_load", "%.2f" % os.getloadavg()[0], "load1")
    g = scribe_locks(ep, work, files)
    say("scribe_g_lock", "%.2f" % g["lock"], "s")
    say("scribe_g_unlock", "%.2f" % g["unlock"], "s")
    say("scribe_g_submit_none", "%.2f" % g["submit_none"], "s")
    say("scribe_g_submit_rules50", "%.2f" % g["submit_rules"], "s")
    say("scribe_g_submit_ratio", "%.2f" % (g["submit_rules"] / g["submit_none"]), "x")
    say("scribe_g_load_end", "%.2f" % os.getloadavg()[0], "load1")


def locks_only():
    """`bench/scribe.py BUILD --locks [FILES]`: part (g) alone (FILES a
    multiple of 1,000, at most 10,000: one lock request's bound)."""
    files = next((int(a) for a in sys.argv[2:] if a.isdigit()), 10000)
    work = tempfile.mkdtemp(prefix="cairn-bench-locks.", dir=os.environ.get("TMPDIR", "/var/tmp"))
    srv = None
    try:
        srv = Cairnd(work)
        say_locks(srv.ep, work, files)
    finally:
        if srv:
            srv.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


def cpu_of(pid):
    """CPU seconds (user + system) process pid has used so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu():
    import resource
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def tls_only():
    """`bench/scribe.py BUILD --tls [MIB]`: part (h) alone (MIB default 1024).
    CPU, not wall time, and TLS over plaintext ratios from the same run: the
    machine may be loaded."""
    mib = next((int(a) for a in sys.argv[2:] if a.isdigit()), 64 if QUICK else 1024)
    work = tempfile.mkdtemp(prefix="cairn-bench-tls.", dir=os.environ.get("TMPDIR", "/var/tmp"))
    srv = None
    try:
        cert, key = os.path.join(work, "cert.pem"), os.path.join(work, "key.pem")
        sh(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
            "-nodes", "-days", "1", "-subj", "/CN=localhost", "-addext",
            "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert])
        os.environ["CAIRN_SCRIBE_CA"] = cert
        srv = Cairnd(work, tls=(cert, key))
        ws = os.path.join(work, "h")
        cairn(srv.ep, "repo", "create", "tlsbig")
        cairn(srv.ep, "clone", "tlsbig", ws)
        make_big(os.path.join(ws, "big.bin"), mib << 20)
        cairn(srv.ep, "submit", ws, "-m", "big")
        shutil.rmtree(ws)
        say("scribe_h_mib", mib, "MiB")
        best = {}
        for _ in range(2):  # alternating, best of two each
            for name, ep in (("plain", srv.ep), ("tls", srv.tls_ep)):
                clone = os.path.join(work, "h-" + name)
                s0, c0 = cpu_of(srv.proc.pid), children_cpu()
                cairn(ep, "clone", "tlsbig", clone, "--quiet")
                s1, c1 = cpu_of(srv.proc.pid), children_cpu()
                shutil.rmtree(clone)
                old = best.get(name, (1e9, 1e9))
                best[name] = (min(old[0], s1 - s0), min(old[1], c1 - c0))
        for name in ("plain", "tls"):
            say("scribe_h_%s_server_cpu" % name, "%.2f" % best[name][0], "s")
            say("scribe_h_%s_client_cpu" % name, "%.2f" % best[name][1], "s")
        say("scribe_h_tls_server_cpu_ratio",
            "%.2f" % (best["tls"][0] / max(best["plain"][0], 0.01)), "x")
        say("scribe_h_tls_client_cpu_ratio",
            "%.2f" % (best["tls"][1] / max(best["plain"][1], 0.01)), "x")
    finally:
        if srv:
            srv.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


def split_rounds(srv, ws, base, rounds=5):
    """`cairn repo sync` (the real command, 4 data connections) listed as
    key ranges (the default) and unsplit (CAIRN_PROOF_SPLIT=1), interleaved
    (the order alternates each round): median and best wall time and median
    cairnd CPU (user + system from /proc) per sync, each from the base
    change."""
    got = {"split": ([], []), "unsplit": ([], [])}
    for r in range(rounds):
        order = ("split", "unsplit") if r % 2 == 0 else ("unsplit", "split")
        for mode in order:
            cairn(srv.ep, "repo", "sync", ws, "--change", str(base), "--quiet")
            env = dict(os.environ)
            if mode == "unsplit":
                env["CAIRN_PROOF_SPLIT"] = "1"
            args = [os.path.join(BUILD, "cairn"), "repo", "sync", ws, "--quiet",
                    "--endpoint", srv.ep]
            c0 = cpu_of(srv.proc.pid)
            t, _ = timed(lambda: sh(args, env=env))
            got[mode][0].append(t)
            got[mode][1].append(cpu_of(srv.proc.pid) - c0)
    for mode, (ts, cs) in got.items():
        say("scribe_v_%s_sync" % mode, "%.3f" % sorted(ts)[len(ts) // 2], "s")
        say("scribe_v_%s_server_cpu" % mode, "%.3f" % sorted(cs)[len(cs) // 2], "s")
        say("scribe_v_%s_sync_best" % mode, "%.3f" % min(ts), "s")


def verified_only():
    """`bench/scribe.py BUILD --verified [FILES]`: part (i) alone (FILES
    default 100,000; 10,000 with --quick).  The repository: FILES small files
    in one change, then one of them edited in a second; both syncs go from
    the first change to the second, best of three rounds each."""
    files = next((int(a) for a in sys.argv[2:] if a.isdigit()), 10000 if QUICK else 100000)
    tool = os.path.join(BUILD, "bench", "bench_scribe_verified")
    if not os.path.exists(tool):
        skip("scribe_v", "bench_scribe_verified_not_built")
        return 0
    work = tempfile.mkdtemp(prefix="cairn-bench-verified.",
                            dir=os.environ.get("TMPDIR", "/var/tmp"))
    srv = None
    try:
        srv = Cairnd(work)
        ws = os.path.join(work, "s-i")
        cairn(srv.ep, "repo", "create", "verified")
        cairn(srv.ep, "repo", "clone", "verified", ws)
        make_small(ws, files, b" base\n")
        cairn(srv.ep, "repo", "submit", ws, "-m", "base", "--quiet")
        base = int(re.search(r"change (\d+)", cairn(srv.ep, "repo", "log", ws, "-n", "1")
                             .stdout).group(1))
        bump(ws, [files // 2], b"edited\n")
        cairn(srv.ep, "repo", "submit", ws, "-m", "one edit", "--quiet")
        say("scribe_v_files", files, "files")
        say("scribe_v_load", "%.2f" % os.getloadavg()[0], "load1")
        out = sh([tool, srv.ep, "verified", "3"]).stdout
        sys.stdout.write(out)
        sys.stdout.flush()
        # the real command: back to the base change (untimed), then the sync
        best = None
        for _ in range(3):
            cairn(srv.ep, "repo", "sync", ws, "--change", str(base), "--quiet")
            t, _ = timed(lambda: cairn(srv.ep, "repo", "sync", ws, "--quiet"))
            best = t if best is None else min(best, t)
        say("scribe_v_cli_sync", "%.3f" % best, "s")
        split_rounds(srv, ws, base)
        say("scribe_v_load_end", "%.2f" % os.getloadavg()[0], "load1")
    finally:
        if srv:
            srv.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


def main():
    global GIT_ENV
    if not os.path.exists(os.path.join(BUILD, "cairnd")):
        skip("scribe", "cairnd_not_built")
        return 0
    work = tempfile.mkdtemp(prefix="cairn-bench-scribe.", dir=os.environ.get("TMPDIR", "/var/tmp"))
    GIT_ENV = git_env(work)
    srv = None
    try:
        srv = Cairnd(work)
        mib_a = A_BYTES / (1 << 20)
        mib_b = B_BYTES / (1 << 20)
        say("scribe_a_files", A_FILES, "files")
        say("scribe_a_mib", "%.0f" % mib_a, "MiB")
        s_sub = scribe_many_submit(srv.ep, work)
        say("scribe_a_submit", "%.2f" % s_sub, "s")
        have_git = shutil.which("git") is not None
        bare = None
        if have_git:
            g_sub, bare = git_many_submit(work)
            say("git_a_submit", "%.2f" % g_sub, "s")
        else:
            skip("git", "git_not_installed")
        # clones alternate, best of two each, so that neither side alone
        # pays for the other's deleted files or a cold cache
        s_clone = g_clone = None
        for rnd in range(2):
            t, noop, status = scribe_many_clone(srv.ep, work, keep=rnd == 1)
            s_clone = t if s_clone is None else min(s_clone, t)
            if bare:
                t = git_many_clone(work, bare)
                g_clone = t if g_clone is None else min(g_clone, t)
        say("scribe_a_clone", "%.2f" % s_clone, "s")
        say("scribe_a_noop_sync", "%.1f" % (noop * 1000), "ms")
        say("scribe_a_status", "%.1f" % (status * 1000), "ms")
        if bare:
            say("git_a_clone", "%.2f" % g_clone, "s")
            say("scribe_a_clone_speedup", "%.2f" % (g_clone / s_clone), "x")
            shutil.rmtree(bare)
        say("scribe_d_files", STATUS_FILES, "files")
        say("scribe_d_status", "%.1f" % (scribe_status_many(srv.ep, work) * 1000), "ms")
        say("scribe_b_mib", "%.0f" % mib_b, "MiB")
        b_sub, b_clone, c_edit, c_moved = scribe_big(srv.ep, work)
        say("scribe_b_submit", "%.2f" % b_sub, "s")
        say("scribe_b_clone", "%.2f" % b_clone, "s")
        say("scribe_c_submit", "%.2f" % c_edit, "s")
        say("scribe_c_bytes", c_moved, "bytes")
        lfs = have_git and sh(["git", "lfs", "version"], check=False).returncode == 0
        if lfs:
            git("lfs", "install")       # in the scratch HOME: clones fetch the LFS content
            l_sub, l_clone, l_edit, l_moved = lfs_big(work)
            say("lfs_b_submit", "%.2f" % l_sub, "s")
            say("lfs_b_clone", "%.2f" % l_clone, "s")
            say("lfs_c_submit", "%.2f" % l_edit, "s")
            say("lfs_c_bytes", l_moved, "bytes")
            say("scribe_c_bytes_ratio", "%.1f" % (l_moved / max(c_moved, 1)), "x")
        else:
            skip("lfs", "git_lfs_not_installed")
        say_locks(srv.ep, work, 10000)
    finally:
        if srv:
            srv.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(merge_only() if "--merge" in sys.argv[2:]
             else follow_only() if "--log" in sys.argv[2:]
             else locks_only() if "--locks" in sys.argv[2:]
             else tls_only() if "--tls" in sys.argv[2:]
             else verified_only() if "--verified" in sys.argv[2:] else main())
