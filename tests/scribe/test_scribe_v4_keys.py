"""Certificates auth did not issue, and the namespace inventory, on the Scribe
protocol-4 listener (issue 21; docs/protocol/scribe.md 15.6): one real
cairnd serving --auth and --scribe-tls on one auth-initialised data
directory, raw frames through the pq-only relay.

Hand-made certificates (this file's harness, from the test's own copy of the
access CA's key under DATA/auth — no production path mints them): an access
certificate for a key other than the credential's registered one, signed by
the real access CA, is refused unauthenticated, whether its extension names
the new key (auth: not the registered key) or still the registered one (the
local check: the certificate's key is not the key it names); the same
harness re-signing the genuine certificate is admitted, so the refusals are
the keys'. A certificate from a foreign CA naming a user's account never
takes one of that user's connection slots: the cap is claimed only after the
certificate is verified against the access CA. instance_status (26) answers
a namespace reader (namespace-readers-set) and the namespace administrator;
a user with only a repository grant is forbidden, an anonymous caller
unauthenticated, and the grant gives nothing on repositories."""
import os
import secrets
import struct
import time

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from scribe_wire import b3
from test_scribe_v4_admission import BUSY_WHY, fill, hello, start
from test_scribe_v4_auth import NS, code

CAIRN_EXT = x509.ObjectIdentifier("1.3.6.1.4.1.59999.20.1")
UNAUTH = "unauthenticated"


@pytest.fixture
def world_factory(server_factory, cert, tmp_path):
    made = []

    def make(extra=""):
        w = start(server_factory, cert, tmp_path, extra)
        w.data = tmp_path / "data"
        made.append(w)
        return w
    yield make
    for w in made:
        w.stop()


# ---- the harness: certificates made here --------------------------------------------
def load_cert(path):
    return x509.load_pem_x509_certificate(open(path, "rb").read())


def new_key(tmp, name):
    """A fresh Ed25519 device key: (key object, PEM path)."""
    k = ed25519.Ed25519PrivateKey.generate()
    path = str(tmp / (name + "-" + secrets.token_hex(4) + ".key"))
    open(path, "wb").write(k.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return k, path


def key_id(pub):
    """auth's key id: BLAKE3 of the SubjectPublicKeyInfo DER, lowercase hex."""
    der = pub.public_bytes(serialization.Encoding.DER,
                           serialization.PublicFormat.SubjectPublicKeyInfo)
    return b3(der).hex()


def der_len(n):
    return bytes([n]) if n < 0x80 else b"\x82" + struct.pack(">H", n)


def ext_with_key_id(value, kid):
    """The cairn extension (a SEQUENCE of five UTF8Strings: credential, kind,
    key id, account, domain) with its key id replaced."""
    assert value[0] == 0x30
    at = 2 if value[1] < 0x80 else 4
    fields = []
    while at < len(value):
        assert value[at] == 0x0C and value[at + 1] < 0x80
        n = value[at + 1]
        fields.append(value[at + 2:at + 2 + n])
        at += 2 + n
    assert len(fields) == 5, fields
    fields[2] = kid.encode()
    body = b"".join(b"\x0c" + der_len(len(f)) + f for f in fields)
    return b"\x30" + der_len(len(body)) + body


def forge(src, pub, signer, tmp, name, kid=None):
    """src's subject, issuer, validity and extensions over public key pub,
    signed by signer (the cairn extension's key id replaced by kid when
    given); the certificate's PEM path."""
    b = (x509.CertificateBuilder().subject_name(src.subject).issuer_name(src.issuer)
         .public_key(pub).serial_number(x509.random_serial_number())
         .not_valid_before(src.not_valid_before).not_valid_after(src.not_valid_after))
    for e in src.extensions:
        if e.oid == CAIRN_EXT and kid is not None:
            value = ext_with_key_id(e.value.value, kid)
            b = b.add_extension(x509.UnrecognizedExtension(CAIRN_EXT, value), e.critical)
        else:
            b = b.add_extension(e.value, e.critical)
    algo = hashes.SHA256() if isinstance(signer, ec.EllipticCurvePrivateKey) else None
    path = str(tmp / (name + "-" + secrets.token_hex(4) + ".pem"))
    open(path, "wb").write(b.sign(signer, algo).public_bytes(serialization.Encoding.PEM))
    return path


def access_ca_key(world):
    pem = open(os.path.join(str(world.data), "auth", "access-ca.key"), "rb").read()
    return serialization.load_pem_private_key(pem, None)


def refused(proxy):
    """A caller-1 hello's refusal (code name, message), None when admitted."""
    c, r = hello(proxy)
    if r is not None:
        assert c.closed_by_peer(), "a refused hello is followed by the close"
    else:
        c.close()
    return r


# ---- key mismatch ---------------------------------------------------------------------
def test_access_certificate_for_another_key_refused(world_factory):
    w = world_factory()
    w.user("wes")
    w.admin_call("grants-set", "wes", NS, "writer")
    real_cert, real_key = w.access(w.credential("wes"))
    src = load_cert(real_cert)
    ca = access_ca_key(w)
    # The harness itself: the genuine key re-signed by the access CA is admitted.
    k1 = serialization.load_pem_private_key(open(real_key, "rb").read(), None)
    same = forge(src, k1.public_key(), ca, w.tmp, "same")
    assert refused(w.proxy((same, real_key))) is None
    # Another key, its own id in the extension: auth finds it is not the
    # credential's registered key.
    k2, k2_path = new_key(w.tmp, "other")
    other = forge(src, k2.public_key(), ca, w.tmp, "other", kid=key_id(k2.public_key()))
    r = refused(w.proxy((other, k2_path)))
    assert r is not None and r[0] == UNAUTH, r
    assert "key" in r[1], r
    # Another key under the registered key's id: the certificate's key is
    # not the one it names, refused before any round trip.
    named = forge(src, k2.public_key(), ca, w.tmp, "named")
    r = refused(w.proxy((named, k2_path)))
    assert r == (UNAUTH, "an access certificate is required"), r
    # The genuine certificate still works.
    assert refused(w.proxy((real_cert, real_key))) is None


# ---- a foreign CA and the connection cap ------------------------------------------------
def test_foreign_certificate_takes_no_slot(world_factory):
    w = world_factory("max_connections_per_principal = 3\n")
    w.user("ann")
    real_cert, real_key = w.access(w.credential("ann"))
    src = load_cert(real_cert)
    assert src.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)[0].value == "ann"
    # A foreign CA under the access CA's very name, the same subject and
    # extension: only the signature tells it apart.
    foreign = ed25519.Ed25519PrivateKey.generate()
    k, k_path = new_key(w.tmp, "mallory")
    forged = forge(src, k.public_key(), foreign, w.tmp, "forged", kid=key_id(k.public_key()))
    ann, mallory = w.proxy((real_cert, real_key)), w.proxy((forged, k_path))
    held = fill(ann, 2)  # cap - 1
    assert refused(mallory) == (UNAUTH, "an access certificate is required")
    held += fill(ann, 1)  # ann's last slot still admits
    # At the cap a forged certificate naming ann is still unauthenticated,
    # never busy: it is not counted as ann.
    assert refused(mallory) == (UNAUTH, "an access certificate is required")
    assert refused(ann) == ("busy", BUSY_WHY)
    for c in held:
        c.close()


# ---- instance_status for namespace readers -----------------------------------------------
def test_instance_status_for_namespace_readers(world_factory):
    w = world_factory()
    for name in ("boss", "nora", "rita"):
        w.user(name)
    w.admin_call("namespace-admins-set", "boss", NS)
    w.admin_call("namespace-readers-set", "nora", NS)
    w.admin_call("grants-set", "rita", NS, "reader")  # a repository grant only
    acc = {n: w.access(w.credential(n)) for n in ("boss", "nora", "rita")}
    boss = w.session(acc["boss"])
    priv = boss.repo_create("priv")["id"]
    assert boss.instance_status()["total"] == 1
    nora = w.session(acc["nora"])
    assert nora.instance_status()["total"] == 1
    # the grant is for the inventory, not a repository role
    assert code(nora.repo_info, priv) == "repository_not_found"
    assert code(nora.repo_create, "x") == "forbidden"
    rita = w.session(acc["rita"])
    assert code(rita.instance_status) == "forbidden"
    assert rita.repo_info(priv)["name"] == "priv"
    assert code(w.session().instance_status) == UNAUTH
    # revoked: the next request is forbidden (the inventory is asked each time)
    w.admin_call("namespace-readers-revoke", "nora", NS)
    assert code(nora.instance_status) == "forbidden"



def test_gateway_service_account_polls_inventory(world_factory):
    """The specification's use: a gateway's service-reader credential, as a
    direct caller, reads the inventory once its account holds a
    namespace-readers grant (its reader ceiling allows it: read-only)."""
    w = world_factory()
    w.user("boss")
    w.admin_call("namespace-admins-set", "boss", NS)
    w.session(w.access(w.credential("boss"))).repo_create("inv")
    w.admin_call("users-add", "gw", "id-gw", "0", "service")
    k, k_path = new_key(w.tmp, "gw")
    spki = k.public_key().public_bytes(serialization.Encoding.DER,
                                       serialization.PublicFormat.SubjectPublicKeyInfo).hex()
    cred = secrets.token_hex(16)
    expires = str(int((time.time() + 86400) * 1000))
    pem = w.admin_call("credentials-add", "service-reader", "gw", cred, spki, expires, "gw")[0][0]
    path = k_path + ".cred.pem"
    open(path, "w").write(pem)
    gw = w.access((path, k_path, cred))
    assert code(w.session(gw).instance_status) == "forbidden"
    w.admin_call("namespace-readers-set", "gw", NS)
    assert w.session(gw).instance_status()["total"] == 1
