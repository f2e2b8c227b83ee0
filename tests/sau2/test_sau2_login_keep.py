"""`cairn repo login` that fails leaves the session in force (docs/protocol/
sau2.md section 12, "a failed sign-in changes nothing"), as a failed `p4 login`
leaves the earlier ticket: through a real cairnd (`--auth`) and the real
`cairn` command.  A refused sign-in (wrong password, unknown user) and a lost
one (the server cannot be reached) keep auth.key, auth.cert and auth.session
byte for byte, and the session still answers whoami; the lost one is finished
by the next login with the same ids; a successful one replaces the session."""
import os
import re

from conftest import free_port
from test_sau2_listener import PASSWORD, auth_server, call, cli, code_of  # noqa: F401

FILES = ("auth.key", "auth.cert", "auth.session")


def state(cfg):
    return {n: (cfg / n).read_bytes() for n in FILES}


def credential_of(who):
    assert who.returncode == 0, who.stderr
    m = re.search(r"credential ([0-9a-f]{32})", who.stdout)
    assert m, who.stdout
    return m.group(1)


def signed_in(srv, tmp_path):
    """Signs admin in: the configuration directory, its three files, the
    credential."""
    assert cli(tmp_path, "login", srv.addr, password=PASSWORD).returncode == 0
    cfg = tmp_path / "cfg" / "cairn"
    return cfg, state(cfg), credential_of(cli(tmp_path, "whoami"))


def dead_address():
    """A loopback port nobody listens on."""
    return "127.0.0.1:%d" % free_port()


def test_a_failed_login_keeps_the_session_in_force(auth_server, tmp_path):
    srv = auth_server()
    cfg, before, cred = signed_in(srv, tmp_path)

    # Refused by the server: a wrong password, an unknown user.
    r = cli(tmp_path, "login", srv.addr, password="not the password 41ab")
    assert r.returncode == 4 and "unauthenticated" in r.stderr, r.stderr
    r = cli(tmp_path, "login", srv.addr, "--user", "nobody", password=PASSWORD)
    assert r.returncode == 4, r.stderr
    assert state(cfg) == before
    assert not (cfg / "auth.pending").exists() and not (cfg / "auth.pending.key").exists()
    assert credential_of(cli(tmp_path, "whoami")) == cred

    # The session's own certificate and key still sign in raw requests.
    rc, out = call(srv, "whoami", cert=str(cfg / "auth.cert"), key=str(cfg / "auth.key"))
    assert rc == 0 and code_of(out) == 0, out


def test_a_lost_login_keeps_the_session_and_is_finished_later(auth_server, tmp_path):
    srv = auth_server()
    cfg, before, cred = signed_in(srv, tmp_path)
    trust = [n for n in os.listdir(cfg) if n.startswith("auth-trust-")]
    assert len(trust) == 1, os.listdir(cfg)

    # The server cannot be reached: the sign-in is left pending, apart.
    dead = dead_address()
    r = cli(tmp_path, "login", dead, "--ca", str(cfg / trust[0]), password=PASSWORD)
    assert r.returncode == 5, r.stderr
    assert state(cfg) == before
    assert credential_of(cli(tmp_path, "whoami")) == cred
    pending = (cfg / "auth.pending").read_text()
    assert "state pending" in pending and (cfg / "auth.pending.key").exists()
    assert os.stat(cfg / "auth.pending").st_mode & 0o777 == 0o600
    new_cred = re.search(r"^credential (\S+)$", pending, re.M).group(1)
    assert new_cred != cred

    # The same sign-in finished against the real server (as if the dead
    # address had come back there): the pending ids are used, and only then
    # is the session replaced.
    (cfg / "auth.pending").write_text(pending.replace(dead, srv.addr))
    r = cli(tmp_path, "login", srv.addr, password=PASSWORD)
    assert r.returncode == 0, r.stderr
    assert credential_of(cli(tmp_path, "whoami")) == new_cred
    after = state(cfg)
    assert after["auth.key"] != before["auth.key"] and after["auth.cert"] != before["auth.cert"]
    assert not (cfg / "auth.pending").exists() and not (cfg / "auth.pending.key").exists()
    for n in FILES:
        assert os.stat(cfg / n).st_mode & 0o777 == 0o600, n
