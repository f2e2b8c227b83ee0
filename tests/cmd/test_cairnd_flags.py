"""cairnd's command line is a stable interface: usage errors exit 2."""
import os
import signal
import stat
import subprocess
import sys
import time
import urllib.request

from conftest import ADMIN_TOKEN, assert_no_sanitizer, binary, run

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "jay"))
import jayclient  # noqa: E402


def test_help_and_version():
    r = run([binary("cairnd"), "--help"])
    assert r.returncode == 0
    assert "--data DIR" in r.stdout and "--jay ADDR|off" in r.stdout
    r = run([binary("cairnd"), "--version"])
    assert r.returncode == 0 and r.stdout.startswith("cairnd ")


def test_unknown_flag_exits_2():
    r = run([binary("cairnd"), "--no-such-flag"])
    assert r.returncode == 2
    assert "usage:" in r.stderr


def test_bad_log_level_exits_2():
    r = run([binary("cairnd"), "--log-level", "loud"])
    assert r.returncode == 2
    assert "log-level" in r.stderr


def test_stray_argument_exits_2():
    r = run([binary("cairnd"), "extra"])
    assert r.returncode == 2


OFF = ["--jay", "off", "--scribe", "off", "--http", "off"]


def test_default_listeners_all_serve(server_factory):
    # Every default protocol is built into this cairnd: with all three
    # listeners enabled it starts (rather than refusing a protocol that is
    # not built, exit 1) and each listener answers its own protocol.
    srv = server_factory(args=["--jay", "127.0.0.1:0", "--scribe", "127.0.0.1:0",
                               "--http", "127.0.0.1:0"], wait_for=("jay", "scribe", "http"))
    assert "is not built in this version" not in srv.output()
    with jayclient.Conn(srv.addrs["jay"], ADMIN_TOKEN, timeout=30) as c:
        assert c.ping()
    host, port = srv.addrs["scribe"]
    r = run([binary("cairn"), "repo", "list", "--endpoint", f"{host}:{port}"],
            env={"CAIRN_TOKEN": ADMIN_TOKEN})
    assert r.returncode == 0, r.stderr
    host, port = srv.addrs["http"]
    with urllib.request.urlopen(f"http://{host}:{port}/_cairn/health", timeout=30) as resp:
        assert resp.status == 200


def test_bad_address_exits_2(tmp_path):
    for bad in ("bad:addr:x", "127.0.0.1", "127.0.0.1:70000", "example.com:1", "[::1]"):
        r = run([binary("cairnd"), "--data", str(tmp_path / "d"), "--jay", bad,
                 "--scribe", "off", "--http", "off"])
        assert r.returncode == 2, bad
        assert "--jay: bad address" in r.stderr
    assert not (tmp_path / "d").exists()


def test_missing_value_and_half_tls_exit_2(tmp_path):
    r = run([binary("cairnd"), "--jay"])
    assert r.returncode == 2 and "needs a value" in r.stderr
    r = run([binary("cairnd"), "--data", str(tmp_path / "d"), "--jay-tls-cert", "c.pem"] + OFF[2:])
    assert r.returncode == 2 and "needs both" in r.stderr
    r = run([binary("cairnd"), "--log-format", "xml"])
    assert r.returncode == 2 and "log-format" in r.stderr


def test_config_errors_exit_2(tmp_path):
    cases = {
        "dup.toml": ("[limits]\nmax_connections = 5\nmax_connections = 6\n", "defined twice"),
        "unknown.toml": ("[limits]\nmax_conections = 5\n", "unknown key 'max_conections'"),
        "section.toml": ("[nope]\nx = 1\n", "unknown section"),
        "type.toml": ("[jay]\nmax_connections = \"many\"\n", "must be an integer"),
        "syntax.toml": ("[server\n", "line 1"),
    }
    for name, (text, want) in cases.items():
        p = tmp_path / name
        p.write_text(text)
        r = run([binary("cairnd"), "--data", str(tmp_path / "d"), "--config", str(p)] + OFF)
        assert r.returncode == 2, (name, r.stderr)
        assert want in r.stderr, (name, r.stderr)
    r = run([binary("cairnd"), "--config", str(tmp_path / "absent.toml")] + OFF)
    assert r.returncode == 2 and "absent.toml" in r.stderr


def test_store_section_errors_exit_2(tmp_path):
    # the services' sections ([store], [objects], [meta]) are checked with the rest of
    # the file before anything opens: a usage error, status 2, as
    # tests/s3/test_s3_lifecycle.py's bad lifecycle settings (until stop 34
    # they stopped cairnd with 1, "cannot start", once the services opened);
    # nothing is created in the data directory
    for text, want in (("[store]\ndirect_io = 1\n", "direct_io must be true or false"),
                       ("[store]\ndirect_i0 = true\n", "unknown key 'direct_i0' in [store]"),
                       ("[store]\npack_zero_ahead = -1\n",
                        "pack_zero_ahead must be an integer from 0 to 1073741824"),
                       ("[store]\nmin_free_bytes = -1\n", "min_free_bytes must be an integer from 0"),
                       ("[meta]\nround_trip_timeout = 0\n", "round_trip_timeout wants seconds"),
                       ("[meta]\nround_trip_timeout = \"2d\"\n", "not '2d'"),
                       ("[meta]\nround_trip_timeout = 3601\n", "at most 3600 s, not 3601"),
                       ("[meta]\nidle_write_timeout = -1\n", "idle_write_timeout wants seconds"),
                       ("[meta]\nidle_write_timeout = 86401\n", "at most 86400 s, not 86401"),
                       ("[meta]\nidle_connection_timeout = \"1d\"\n", "not '1d'"),
                       ("[meta]\nbusy = 5\n", "unknown key 'busy' in [meta]")):
        p = tmp_path / "store.toml"
        p.write_text(text)
        r = run([binary("cairnd"), "--data", str(tmp_path / "d"), "--config", str(p)] + OFF)
        assert r.returncode == 2 and want in r.stderr, r.stderr
        assert not (tmp_path / "d").exists()


def start_off(data, extra=()):
    p = subprocess.Popen([binary("cairnd"), "--data", str(data)] + OFF + list(extra),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 20
    while time.time() < deadline and not os.path.isdir(data):
        time.sleep(0.02)
    time.sleep(0.2)
    return p


def test_no_listeners_starts_and_sigterm_exits_0(tmp_path):
    data = tmp_path / "fresh" / "data"
    p = start_off(data)
    try:
        assert p.poll() is None, p.stdout.read()
        assert stat.S_IMODE(os.stat(data).st_mode) == 0o700
        p.send_signal(signal.SIGTERM)
        assert p.wait(15) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    out = p.stdout.read()
    assert "stopped" in out
    assert_no_sanitizer(out)


def test_sigint_and_valid_config(tmp_path):
    cfg = tmp_path / "cairnd.toml"
    cfg.write_text("# limits for every listener\n[server]\nshutdown_grace_ms = 1000\n"
                   "handshake_workers = 2\n[limits]\nmax_connections = 10\n"
                   "[jay]\nidle_timeout_ms = 30_000\n")
    p = start_off(tmp_path / "d", ["--config", str(cfg), "--log-format", "json"])
    try:
        assert p.poll() is None
        p.send_signal(signal.SIGINT)
        assert p.wait(15) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    out = p.stdout.read()
    assert '"msg":"stopped"' in out
