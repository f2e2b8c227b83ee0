"""Admission by identity on the gateway's protocol-4 listener (issues 21/23;
docs/protocol/scribe.md 15.6, "Admission"): the gateway of
test_gateway_tls.py (a real auth and storage cairnd, a second storage
server and a gateway cairnd with a --scribe-tls listener), clients speaking
raw protocol-4 frames through the pq-only relay with their access
certificates.

What it proves: one user holds at most max_connections_per_principal (64 by
default, as on storage) connections to the gateway — the 65th hello is
answered busy "too many concurrent connections for this identity" and
closed — while another user is still admitted; a certificate forged to name
the capped user (a self-signed one with the user's CN and another key) does
not take the user's places, and its hello is refused with storage's verdict
(the gateway judges no certificate itself, but asks storage during the
handshake: docs/protocol/scribe-gateway.md, "Users confirmed at the hello");
a closed connection gives its place back."""
import subprocess
import time

from test_gateway_tls import gw  # noqa: F401
from test_scribe_v4_admission import BUSY_WHY, assert_busy_then_closed, fill, hello
from test_scribe_v4_auth import world  # noqa: F401


def forged(tmp_path, user):
    """A self-signed certificate naming user, with a key of its own."""
    c, k = str(tmp_path / ("forged-%s.pem" % user)), str(tmp_path / ("forged-%s.key" % user))
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj", "/CN=" + user,
                    "-keyout", k, "-out", c], check=True, capture_output=True)
    return c, k


def test_gateway_caps_connections_per_principal(gw, tmp_path):  # noqa: F811
    wes = gw.world.proxy(gw.acc["wes"], gw.gw)
    rita = gw.world.proxy(gw.acc["rita"], gw.gw)
    held = fill(wes, 64)
    assert_busy_then_closed(wes)                 # the 65th of one user
    other = fill(rita, 2)                        # another user is admitted
    fake, refused = hello(gw.world.proxy(forged(tmp_path, "wes"), gw.gw))
    assert refused and refused[0] == "unauthenticated", refused  # storage's verdict, at the hello
    assert "storage server 1 of 2 refused the session" in refused[1], refused
    assert fake.closed_by_peer(), "a refused hello is followed by the close"
    assert_busy_then_closed(wes)                 # the forged one took no place of wes's
    held.pop(0).close()
    c = None
    for _ in range(50):  # the server sees the close on its next read
        c, refused = hello(wes)
        if refused is None:
            break
        assert refused == ("busy", BUSY_WHY)
        time.sleep(0.1)
    assert refused is None, "a closed connection gives its place back"
    assert_busy_then_closed(wes)
    for x in held + other + [fake, c]:
        x.close()
