"""Delegated callers on Scribe protocol 4 (issues 21 and 23, docs/protocol/
scribe.md 15.6, docs/protocol/scribe-gateway.md "Delegated callers"): storage
accepts a hello with caller 2 from a gateway — a TLS client presenting the
gateway's own access certificate (a service-writer or service-reader
credential of a service user holding a delegate grant for the namespace) and
forwarding its user's access certificate in the hello.  Through one real
cairnd serving --auth and --scribe-tls on one data directory, with raw frames
through the pq-only relay (tests/scribe/scribe_tls_proxy) presenting the
gateway's certificate.

What each test proves: the user's role is enforced by storage for a delegated
session (a reader cannot upload, a writer can; a read-only gateway caps the
role at Reader; a service-writer gateway relays a namespace administrator's
create); a gateway without a delegate grant, one whose grant was
revoked, a person's certificate posing as a gateway, and a delegated hello
without the gateway's own certificate are refused; a user certificate of
another trust domain (another auth) is refused as "invalid delegated access
certificate", and so is a gateway certificate of another trust domain;
instance_status (26) answers direct callers only; a data connection bound to
a delegated session must name the same user through the same gateway."""
import os
import secrets
import struct
import sys
import time

import pytest

from scribe_wire import ERR, hello_payload
from test_scribe_v4 import hello_reply, raw_conn
from test_scribe_v4_auth import NS, World, code, put_admission, world  # noqa: F401

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "sau2"))
from test_sau2_listener import call, code_of, device_key, init_auth, rows_of  # noqa: E402

ERR_NAME = {v: k for k, v in ERR.items()}


def hello_delegated(user_pem, bind=0, binding=bytes(32)):
    """A protocol-4 hello with caller 2 carrying user_pem (bytes16)."""
    return (hello_payload(4, 1, 0, bind, "gateway-test") + bytes([2]) +
            struct.pack("<H", len(user_pem)) + user_pem + binding)


def service(world, name, kind="service-writer", delegate=True):
    """A service user `name` with one `kind` credential (and, when asked, a
    delegate grant for NS): its access certificate (cert path, key path) and
    credential id."""
    world.admin_call("users-add", name, "id-" + name, "0", "service")
    if delegate:
        world.admin_call("delegates-set", name, NS)
    key, spki = device_key(world.tmp, name + "-" + secrets.token_hex(4))
    cred = secrets.token_hex(16)
    expires = str(int(time.time() * 1000) + 86400000)
    rows = world.admin_call("credentials-add", kind, name, cred, spki, expires, "gateway " + name)
    path = key + ".cred.pem"
    open(path, "w").write(rows[0][0])
    return world.access((path, key, cred)), cred


def pem(acc):
    return open(acc[0], "rb").read()


class Gate:
    """Sessions of a gateway (its access certificate in TLS) for users."""

    def __init__(self, world, acc):
        self.world, self.acc = world, acc

    def hello(self, user_acc, **kw):
        c = raw_conn(self.world.proxy(self.acc).addr)
        kind, body = hello_reply(c, hello_delegated(pem(user_acc), **kw))
        return c, kind, body

    def session(self, user_acc):
        c, kind, body = self.hello(user_acc)
        assert kind == "ok", ERR_NAME.get(body, body)
        c.hello_ok = dict(session=struct.unpack("<HBQIB", body[:16])[2])
        c.binding = body[16:]
        return c

    def refused(self, user_acc):
        c, kind, body = self.hello(user_acc)
        assert kind == "error", "the delegated hello was accepted"
        assert c.closed_by_peer()
        return ERR_NAME.get(body, body)


@pytest.fixture
def users(world):
    """boss (namespace administrator), rita (reader), wes (writer); the
    gateways gate (service-writer, delegate grant), rgate (service-reader,
    delegate grant) and nogate (service-writer, no grant); a private
    repository priv."""
    for name in ("boss", "rita", "wes"):
        world.user(name)
    world.admin_call("namespace-admins-set", "boss", NS)
    world.admin_call("grants-set", "rita", NS, "reader")
    world.admin_call("grants-set", "wes", NS, "writer")
    acc = {n: world.access(world.credential(n)) for n in ("boss", "rita", "wes")}
    gates = {"gate": service(world, "gate"),
             "rgate": service(world, "rgate", kind="service-reader"),
             "nogate": service(world, "nogate", delegate=False)}
    priv = world.session(acc["boss"]).repo_create("priv")["id"]
    return acc, gates, priv


def test_user_role_enforced_through_a_delegate(world, users):
    acc, gates, priv = users
    gate = Gate(world, gates["gate"][0])
    rita = gate.session(acc["rita"])
    assert rita.repo_info(priv)["name"] == "priv"
    assert [r["name"] for r in rita.repo_list()[0]] == ["priv"]
    assert put_admission(rita, priv) == "forbidden"
    wes = gate.session(acc["wes"])
    assert put_admission(wes, priv) is None
    # a read-only gateway passes no more than Reader, whoever its user is
    rgate = Gate(world, gates["rgate"][0])
    wes_r = rgate.session(acc["wes"])
    assert wes_r.repo_info(priv)["name"] == "priv"
    assert put_admission(wes_r, priv) == "forbidden"
    # the user (boss) is the principal: a service-writer gateway relays a
    # namespace administrator's create; a read-only one does not
    made = gate.session(acc["boss"]).repo_create("via-gate")
    assert world.session(acc["boss"]).repo_info(made["id"])["name"] == "via-gate"
    assert code(rgate.session(acc["boss"]).repo_create, "via-rgate") == "forbidden"
    assert code(gate.session(acc["wes"]).repo_create, "via-gate-wes") == "forbidden"


def test_gateway_without_delegate_grant_refused(world, users):
    acc, gates, _ = users
    # rita's direct confirmation (cached) does not stand for a delegated one
    world.session(acc["rita"]).repo_list()
    assert Gate(world, gates["nogate"][0]).refused(acc["rita"]) == "unauthenticated"
    # the grant revoked: refused once the confirmation's cache (500 ms) ends
    gate = Gate(world, gates["gate"][0])
    gate.session(acc["wes"])
    world.admin_call("delegates-revoke", "gate", NS)
    time.sleep(0.7)
    assert gate.refused(acc["wes"]) == "unauthenticated"


def test_not_a_gateway_refused(world, users):
    acc, _, _ = users
    # a person's access certificate is no delegate
    assert Gate(world, acc["boss"]).refused(acc["rita"]) == "unauthenticated"
    # a delegated hello without the gateway's own certificate
    c = raw_conn(world.proxy().addr)
    assert hello_reply(c, hello_delegated(pem(acc["rita"]))) == ("error", ERR["unauthenticated"])
    assert c.closed_by_peer()
    # garbage, and an empty delegated certificate (malformed by the codec)
    gate = Gate(world, acc["wes"])
    c = raw_conn(world.proxy(gate.acc).addr)
    assert hello_reply(c, hello_delegated(b"crt")) == ("error", ERR["unauthenticated"])
    c = raw_conn(world.proxy(gate.acc).addr)
    assert hello_reply(c, hello_delegated(b"")) == ("error", ERR["malformed"])


def foreign(server_factory, tmp_path, cert):
    """Another auth (another trust domain): a World over a fresh auth init."""
    data = tmp_path / "other-auth"
    init_auth(data)
    srv = server_factory(args=["--jay", "off", "--http", "off", "--scribe", "off",
                               "--auth", "127.0.0.1:0"], data=data, wait_for=("auth",))
    srv.addr = "%s:%d" % srv.addrs["auth"]
    other = tmp_path / "other"
    other.mkdir()
    return World(srv, other, cert)


def test_foreign_trust_domain_refused(world, users, server_factory, tmp_path, cert):
    acc, gates, _ = users
    other = foreign(server_factory, tmp_path, cert)
    other.user("rita")
    other.admin_call("grants-set", "rita", NS, "writer")
    alien_rita = other.access(other.credential("rita"))
    gate = Gate(world, gates["gate"][0])
    c, kind, body = gate.hello(alien_rita)
    assert (kind, body) == ("error", ERR["unauthenticated"])
    # the gateway's own certificate of another trust domain
    alien_gate, _ = service(other, "gate")
    assert Gate(world, alien_gate).refused(acc["rita"]) == "unauthenticated"
    other.stop()


def test_foreign_user_refusal_names_the_certificate(world, users, server_factory, tmp_path,
                                                    cert):
    acc, gates, _ = users
    other = foreign(server_factory, tmp_path, cert)
    other.user("eve")
    eve = other.access(other.credential("eve"))
    c = raw_conn(world.proxy(gates["gate"][0]).addr)
    c.send_frame(1, hello_delegated(pem(eve)))
    op, flags, rid, body = c.recv_frame()
    err = c.error_of(body, be=False)
    assert err.code == ERR["unauthenticated"]
    assert "invalid delegated access certificate" in err.message, err.message
    other.stop()


def test_instance_status_is_for_direct_callers(world, users):
    acc, gates, _ = users
    boss_direct = world.session(acc["boss"])
    assert boss_direct.instance_status()["total"] == 1
    rgate = Gate(world, gates["rgate"][0])
    assert code(rgate.session(acc["rita"]).instance_status) == "forbidden"


def test_data_connection_of_a_delegated_session(world, users):
    acc, gates, priv = users
    gate = Gate(world, gates["gate"][0])
    rita = gate.session(acc["rita"])
    sid, binding = rita.hello_ok["session"], rita.binding
    # the same user through the same gateway: bound, the same session id
    c, kind, body = gate.hello(acc["rita"], bind=sid, binding=binding)
    assert kind == "ok" and struct.unpack("<HBQIB", body)[2] == sid
    # another user through the same gateway
    c, kind, body = gate.hello(acc["wes"], bind=sid, binding=binding)
    assert (kind, body) == ("error", ERR["unauthenticated"])
    # the same user through another gateway
    c, kind, body = Gate(world, gates["rgate"][0]).hello(acc["rita"], bind=sid,
                                                         binding=binding)
    assert (kind, body) == ("error", ERR["unauthenticated"])
    # the user directly (caller 1): another caller mode
    d = raw_conn(world.proxy(acc["rita"]).addr)
    from test_scribe_v4 import hello4
    assert hello_reply(d, hello4(caller=1, bind=sid, binding=binding)) == \
        ("error", ERR["unauthenticated"])
