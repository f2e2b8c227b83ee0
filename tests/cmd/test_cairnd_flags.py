"""cairnd's command line is a stable interface: usage errors exit 2."""
from conftest import binary, run


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
