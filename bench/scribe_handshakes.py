#!/usr/bin/python3
"""bench/scribe_handshakes: Scribe protocol-4 handshakes per second with the
authorization lease cached and cold (issue 21's benchmark).

Each handshake is what a `cairn repo` command costs the server before its
first request: a fresh TCP connection, a full TLS 1.3 handshake with
X25519MLKEM768 (no session resumption), a protocol-4 control hello and its
hello-ok, then the close (bench_scribe_handshake, 4 client threads).  cairnd
serves --auth and --scribe-tls from one data directory (the one-machine
deployment: the in-process auth provider) and the caller is signed in
(`cairn repo login`, caller 1 with its access certificate), so the server
resolves the principal on every handshake:

  cached  [scribe-tls] auth_cache_ms = 30000: the confirmation is reused
          (one authorize per identity per 30 s);
  cold    auth_cache_ms = 1: every handshake asks auth (authorize with an
          empty repository, the rollback check);
  anonymous  caller 0 without a certificate, the floor (no principal).

The same two leases again on a storage cairnd apart from its auth (the remote
provider: `--auth-server` over SAU2/TLS with its own `server` credential,
libcairn's pool of 4), where a cold handshake pays a network round trip:
remote_cached and remote_cold, with the auth process's CPU per handshake
beside the storage server's.

Prints "name value unit" lines (scripts/bench.sh collects them): the rate of
each, cairnd's CPU per handshake, the cached/cold ratio and the load average
at the start and the end (the rates are only comparable within one run).

usage: bench/scribe_handshakes.py BUILD [--quick] [SECONDS]   (per mode; 10, 3 with --quick)
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scribe import BUILD, QUICK, cpu_of, say, sh, skip  # noqa: E402

ADMIN_PASSWORD = "bench admin password 7c1e"
THREADS = 4


def self_signed(work):
    """A P-256 certificate for 127.0.0.1 and its key: (cert, key)."""
    cert, key = os.path.join(work, "cert.pem"), os.path.join(work, "key.pem")
    sh(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
        "-nodes", "-days", "1", "-subj", "/CN=localhost", "-addext",
        "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert])
    return cert, key


def auth_cairnd(work, data, tls, cache_ms, remote=None):
    """cairnd serving --scribe-tls over data, confirmations kept
    auth_cache_ms; with --auth over the data's auth state, or with remote =
    (auth addr, trust file, credential file) as a storage server apart from
    its auth: (process, auth addr or None, scribes addr)."""
    name = "%s-%d" % ("remote" if remote else "local", cache_ms)
    conf = os.path.join(work, "cairnd-%s.toml" % name)
    with open(conf, "w") as f:
        f.write("[scribe-tls]\nauth_cache_ms = %d\n" % cache_ms)
        if remote:
            f.write('auth_server = "%s"\nauth_trust = "%s"\nauth_credential = "%s"\n' % remote)
    log = os.path.join(work, "cairnd-%s.log" % name)
    with open(log, "wb") as lf:
        proc = subprocess.Popen(
            [os.path.join(BUILD, "cairnd"), "--data", data, "--jay", "off", "--http", "off",
             "--scribe", "off", "--auth", "off" if remote else "127.0.0.1:0", "--scribe-tls",
             "127.0.0.1:0", "--scribe-tls-cert", tls[0], "--scribe-tls-key", tls[1], "--config",
             conf], stdout=lf, stderr=subprocess.STDOUT)
    deadline, text = time.time() + 30, b""
    while time.time() < deadline and proc.poll() is None:
        with open(log, "rb") as f:
            text = f.read()
        a = re.search(rb"listening auth on (\S+)", text)
        t = re.search(rb"listening scribes on (\S+)", text)
        if t and (a or remote):
            return proc, a.group(1).decode() if a else None, t.group(1).decode()
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    raise RuntimeError("cairnd did not listen: " + text.decode(errors="replace"))


def storage_credential(work, auth, env):
    """A `server` credential for a storage server apart from auth (servers-add,
    credentials-add server, as the signed-in administrator): (trust file,
    credential file holding the certificate and its key)."""
    cairn = os.path.join(BUILD, "cairn")
    key = os.path.join(work, "storage.key")
    sh(["openssl", "genpkey", "-algorithm", "ed25519", "-out", key])
    sh([cairn, "repo", "auth", "servers", "add", "storage", "default", "id-storage"], env=env)
    out = sh([cairn, "repo", "auth", "credentials", "add", "server", "storage", "--public-key", key,
              "--expires", "1d", "--label", "bench"], env=env).stdout
    pem = re.search(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----\n?", out, re.S)
    cred = os.path.join(work, "storage-credential.pem")
    with open(cred, "w") as f, open(key) as k:
        f.write(pem.group(0).rstrip("\n") + "\n" + k.read())
    host, port = auth.rsplit(":", 1)
    trust = os.path.join(env["XDG_CONFIG_HOME"], "cairn", "auth-trust-%s-%s.pem" % (host, port))
    return trust, cred


def measure(tool, proc, scribes, ca, secs, cert, auth_proc=None):
    """(handshakes/s, cairnd CPU µs per handshake, the auth process's CPU µs
    per handshake when it is another process) of one run."""
    host, port = scribes.rsplit(":", 1)
    c0, a0 = cpu_of(proc.pid), cpu_of(auth_proc.pid) if auth_proc else 0
    out = sh([tool, host, port, ca, str(secs), str(THREADS)] + cert).stdout
    c1, a1 = cpu_of(proc.pid), cpu_of(auth_proc.pid) if auth_proc else 0
    got = dict(line.split() for line in out.splitlines())
    n, took = int(got["handshakes"]), float(got["seconds"])
    if int(got["refused"]) or int(got["failed"]):
        raise RuntimeError("handshakes refused or failed: " + out)
    return n / took, (c1 - c0) / n * 1e6, (a1 - a0) / n * 1e6


def signed_in(work, name, tls, cache_ms):
    """A data directory with its own auth (auth init), cairnd serving --auth
    and --scribe-tls over it, and the administrator signed in from a config
    directory of its own, holding an access certificate: (process, auth
    addr, scribes addr, environment, [access certificate, key])."""
    data, cfg = os.path.join(work, name), os.path.join(work, name + "-cfg")
    sh([os.path.join(BUILD, "cairn"), "admin", "--data", data, "auth", "init"],
       env=dict(os.environ, CAIRN_AUTH_ADMIN_PASSWORD=ADMIN_PASSWORD))
    proc, auth, scribes = auth_cairnd(work, data, tls, cache_ms)
    env = dict(os.environ, XDG_CONFIG_HOME=cfg, CAIRN_PASSWORD=ADMIN_PASSWORD,
               CAIRN_AUTH_CA="", CAIRN_SCRIBE_CA=tls[0])
    # --admin: the same sign-in also adds the storage server of the remote modes
    sh([os.path.join(BUILD, "cairn"), "repo", "login", auth, "--user", "admin", "--admin"],
       env=env)
    # the first protocol-4 contact fetches the access certificate
    sh([os.path.join(BUILD, "cairn"), "repo", "discover", "scribes://" + scribes], env=env)
    who = [os.path.join(cfg, "cairn", "auth.access"), os.path.join(cfg, "cairn", "auth.key")]
    return proc, auth, scribes, env, who


def run_modes(tool, proc, scribes, ca, secs, runs, rates, auth_proc=None):
    for name, cert in runs:
        rates[name], cpu, acpu = measure(tool, proc, scribes, ca, secs, cert, auth_proc)
        say("scribe_hs_%s_rate" % name, "%.0f" % rates[name], "handshakes/s")
        say("scribe_hs_%s_server_cpu" % name, "%.0f" % cpu, "us/handshake")
        if auth_proc:
            say("scribe_hs_%s_auth_cpu" % name, "%.0f" % acpu, "us/handshake")


def stop(proc):
    proc.terminate()
    proc.wait(30)


def main():
    secs = next((int(a) for a in sys.argv[2:] if a.isdigit()), 3 if QUICK else 10)
    tool = os.path.join(BUILD, "bench", "bench_scribe_handshake")
    if not os.path.exists(tool) or not os.path.exists(os.path.join(BUILD, "cairnd")):
        skip("scribe_hs", "bench_scribe_handshake_not_built")
        return 0
    work = tempfile.mkdtemp(prefix="cairn-bench-hs.", dir=os.environ.get("TMPDIR", "/var/tmp"))
    procs = []
    try:
        tls = self_signed(work)
        say("scribe_hs_seconds", secs, "s")
        say("scribe_hs_threads", THREADS, "threads")
        say("scribe_hs_load", "%.2f" % os.getloadavg()[0], "load1")
        rates = {}
        proc, _, scribes, _, who = signed_in(work, "cached", tls, 30000)
        procs.append(proc)
        run_modes(tool, proc, scribes, tls[0], secs, [("cached", who), ("anonymous", [])], rates)
        stop(proc)
        # the cold one stays up: it is the auth of the remote modes
        auth_proc, auth, scribes, env, who = signed_in(work, "cold", tls, 1)
        procs.append(auth_proc)
        run_modes(tool, auth_proc, scribes, tls[0], secs, [("cold", who)], rates)
        remote = (auth,) + storage_credential(work, auth, env)
        for mode, cache_ms in (("remote_cached", 30000), ("remote_cold", 1)):
            proc, _, scribes = auth_cairnd(work, os.path.join(work, mode), tls, cache_ms, remote)
            procs.append(proc)
            run_modes(tool, proc, scribes, tls[0], secs, [(mode, who)], rates, auth_proc)
            stop(proc)
        say("scribe_hs_cached_over_cold", "%.2f" % (rates["cached"] / rates["cold"]), "x")
        say("scribe_hs_remote_cached_over_cold",
            "%.2f" % (rates["remote_cached"] / rates["remote_cold"]), "x")
        say("scribe_hs_load_end", "%.2f" % os.getloadavg()[0], "load1")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
