"""`cairn admin --data DIR auth init` through the real command: the auth
state, its keys at rest (0600 in a 0700 directory), the first administrator's
password printed once or taken from CAIRN_AUTH_ADMIN_PASSWORD (and then never
printed), and a second init refused without touching the keys."""
import os
import re
import stat

from conftest import binary, run

KEYS = ("credential-ca", "access-ca", "server-ca", "server-tls")


def key_bytes(data):
    return {k: open(os.path.join(data, "auth", k + ".key"), "rb").read() for k in KEYS}


def test_init_prints_a_random_password_once(tmp_path):
    data = str(tmp_path / "data")
    r = run([binary("cairn"), "admin", "--data", data, "auth", "init"],
            env={"CAIRN_AUTH_ADMIN_PASSWORD": ""})
    assert r.returncode == 0, r.stderr
    m = re.search(r"^password: ([0-9a-f]{32})$", r.stdout, re.M)
    assert m, r.stdout
    assert stat.S_IMODE(os.stat(os.path.join(data, "auth")).st_mode) == 0o700
    for k in KEYS:
        path = os.path.join(data, "auth", k + ".key")
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert open(path).read().startswith("-----BEGIN PRIVATE KEY-----")
    before = key_bytes(data)
    again = run([binary("cairn"), "admin", "--data", data, "auth", "init"])
    assert again.returncode == 1
    assert "already exists" in again.stderr
    assert m.group(1) not in again.stdout + again.stderr
    assert key_bytes(data) == before


def test_init_takes_the_password_from_the_environment(tmp_path):
    data = str(tmp_path / "data")
    pw = "an administrator password"
    r = run([binary("cairn"), "admin", "--data", data, "auth", "init"],
            env={"CAIRN_AUTH_ADMIN_PASSWORD": pw})
    assert r.returncode == 0, r.stderr
    assert pw not in r.stdout + r.stderr
    assert "password:" not in r.stdout
    for name in os.listdir(data):
        path = os.path.join(data, name)
        if os.path.isfile(path):
            assert pw.encode() not in open(path, "rb").read(), name


def test_init_refuses_a_short_password_and_usage(tmp_path):
    data = str(tmp_path / "data")
    r = run([binary("cairn"), "admin", "--data", data, "auth", "init"],
            env={"CAIRN_AUTH_ADMIN_PASSWORD": "short"})
    assert r.returncode == 1
    assert "12..1024" in r.stderr
    assert not os.path.exists(os.path.join(data, "auth"))
    assert run([binary("cairn"), "admin", "--data", data, "auth", "nope"]).returncode == 2
