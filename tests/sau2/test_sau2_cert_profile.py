"""The certificate profile of docs/protocol/sau2.md section 6 (issue 20,
"Certificate profile"), read from what a real listener hands out:
- the trust bundle: credential and access CAs Ed25519, the server CA ECDSA
  P-256, each self-signed for ten years;
- the listener's own TLS certificate: an ECDSA P-256 key, chained to the
  server CA (cairn's client verifies against it, and refuses the handshake
  against the credential CA);
- a credential certificate from login: the device's own Ed25519 key, signed
  by the credential CA, subject CN=account, O=cairn, OU=trust domain, serial
  = the credential id with its top bit cleared, and the non-critical
  extension 1.3.6.1.4.1.59999.20.1 carrying credential, kind, key id
  (BLAKE3 of the SPKI DER), account and trust domain;
- an access certificate: the same key, signed by the access CA, for one
  hour at most.
The unit tests check these through cairn's own verifier; this one reads them
with an independent X.509 parser (python3-cryptography)."""
import datetime
import os
import secrets
import sys

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.x509.oid import NameOID

from test_sau2_listener import (PASSWORD, auth_server, call, code_of,  # noqa: F401
                                device_key, rows_of)

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "scribe"))
from scribe_wire import b3  # noqa: E402

OID = x509.ObjectIdentifier("1.3.6.1.4.1.59999.20.1")
YEAR = datetime.timedelta(days=365)


def der_strings(der):
    """SEQUENCE { UTF8String ... } -> the strings (short and long lengths)."""
    def length(b, i):
        n = b[i]
        if n < 0x80:
            return n, i + 1
        k = n & 0x7F
        return int.from_bytes(b[i + 1:i + 1 + k], "big"), i + 1 + k

    assert der[0] == 0x30, der[:4]
    total, i = length(der, 1)
    assert i + total == len(der), "trailing bytes in the extension"
    out = []
    while i < len(der):
        assert der[i] == 0x0C, "not a UTF8String: %#x" % der[i]
        n, i = length(der, i + 1)
        out.append(der[i:i + n].decode())
        i += n
    return out


def signed_by(cert, issuer):
    issuer.public_key().verify(cert.signature, cert.tbs_certificate_bytes)  # Ed25519 issuers
    assert cert.issuer == issuer.subject


def test_certificates_follow_the_profile(auth_server, tmp_path):
    srv = auth_server()
    rc, out = call(srv, "trust-bundle")
    assert rc == 0 and code_of(out) == 0, out
    bundle = {r[0]: r[1] for r in rows_of(out)}
    assert sorted(bundle) == ["access-ca", "credential-ca", "server-ca"]
    ca = {k: x509.load_pem_x509_certificate(v.encode()) for k, v in bundle.items()}
    for name, c in ca.items():
        assert c.issuer == c.subject, name  # self-signed
        life = c.not_valid_after - c.not_valid_before
        assert 9.9 * 365 <= life.days <= 10.1 * 365, (name, life)
        assert c.extensions.get_extension_for_class(x509.BasicConstraints).value.ca, name
    assert isinstance(ca["credential-ca"].public_key(), ed25519.Ed25519PublicKey)
    assert isinstance(ca["access-ca"].public_key(), ed25519.Ed25519PublicKey)
    server_key = ca["server-ca"].public_key()
    assert isinstance(server_key, ec.EllipticCurvePublicKey)
    assert server_key.curve.name == "secp256r1"

    # The listener's own key is P-256, and its certificate chains to the server CA.
    with open(os.path.join(str(tmp_path / "data"), "auth", "server-tls.key"), "rb") as f:
        tls_key = serialization.load_pem_private_key(f.read(), None)
    assert isinstance(tls_key, ec.EllipticCurvePrivateKey) and tls_key.curve.name == "secp256r1"
    for name in ("server-ca", "credential-ca"):
        (tmp_path / (name + ".pem")).write_text(bundle[name])
    rc, out = call(srv, "trust-bundle", ca=str(tmp_path / "server-ca.pem"))
    assert rc == 0 and code_of(out) == 0, out
    rc, out = call(srv, "trust-bundle", ca=str(tmp_path / "credential-ca.pem"))
    assert rc == 4, out  # "handshake failed": not the listener's issuer

    # A credential certificate from login.
    key, spki = device_key(tmp_path, "profile")
    cred = secrets.token_hex(16)
    rc, out = call(srv, "login", "admin", cred, spki, op=secrets.token_hex(16), secret=PASSWORD)
    assert rc == 0 and code_of(out) == 0, out
    pem = rows_of(out)[0][0]
    cc = x509.load_pem_x509_certificate(pem.encode())
    with open(key, "rb") as f:
        device = serialization.load_pem_private_key(f.read(), None)
    raw = serialization.Encoding.Raw, serialization.PublicFormat.Raw
    assert isinstance(cc.public_key(), ed25519.Ed25519PublicKey)
    assert cc.public_key().public_bytes(*raw) == device.public_key().public_bytes(*raw)
    signed_by(cc, ca["credential-ca"])
    subj = cc.subject
    assert subj.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "admin"
    assert subj.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == "cairn"
    domain = subj.get_attributes_for_oid(NameOID.ORGANIZATIONAL_UNIT_NAME)[0].value
    assert len(domain) == 32 and int(domain, 16) >= 0 and domain == domain.lower()
    want_serial = int.from_bytes(bytes.fromhex(cred), "big") & ~(1 << 127)
    assert cc.serial_number == want_serial
    ext = cc.extensions.get_extension_for_oid(OID)
    assert not ext.critical
    fields = der_strings(ext.value.value)
    assert fields[0] == cred and fields[2] == b3(bytes.fromhex(spki)).hex(), fields
    assert fields[3] == "admin" and fields[4] == domain, fields
    assert fields[1], fields  # the kind (a password session's)
    assert cc.not_valid_after > datetime.datetime.utcnow()

    # Its access certificate: same key, the access CA, one hour at most.
    cpath = str(tmp_path / "profile.pem")
    open(cpath, "w").write(pem)
    rc, out = call(srv, "access-certificate", cert=cpath, key=key)
    assert rc == 0 and code_of(out) == 0, out
    ac = x509.load_pem_x509_certificate(rows_of(out)[0][0].encode())
    signed_by(ac, ca["access-ca"])
    assert ac.public_key().public_bytes(*raw) == device.public_key().public_bytes(*raw)
    assert ac.not_valid_after - ac.not_valid_before <= datetime.timedelta(hours=1, minutes=5)
    assert ac.not_valid_after <= cc.not_valid_after
    assert der_strings(ac.extensions.get_extension_for_oid(OID).value.value)[0] == cred
    assert ac.not_valid_after - datetime.datetime.utcnow() < YEAR
