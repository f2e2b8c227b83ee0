"""A small client for cairn's blob operation family over HTTP
(docs/protocol/blobs.md), for the integration tests."""
import json
import subprocess

import requests

from conftest import ADMIN_TOKEN, binary, run

OPS = "/_cairn/ops"


def b3(data):
    """BLAKE3-256 hex of data, by Debian's b3sum."""
    out = subprocess.run(["b3sum", "--no-names"], input=data, capture_output=True, check=True)
    return out.stdout.decode().strip()


def admin(data_dir, *args):
    r = run([binary("cairn"), "admin", "--data", str(data_dir)] + list(args))
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def make_token(server, account, perms="blobs:read blobs:write", grants=()):
    """Creates account (if needed) and a token; grants is [(ns, "read"|"write"), ...].
    Returns the credential "id:secret"."""
    r = run([binary("cairn"), "admin", "--data", server.data_dir, "account", "create", account])
    assert r.returncode == 0 or "exists" in (r.stdout + r.stderr).lower(), r.stdout + r.stderr
    args = ["token", "create", "--account", account]
    for p in perms.split():
        args += ["--perm", p]
    out = admin(server.data_dir, *args)
    cred = None
    for word in out.split():
        if ":" in word and not word.endswith(":"):
            cred = word.strip()
    assert cred, out
    for ns, action in grants:
        admin(server.data_dir, "grant", "--namespace", ns, "--account", account,
              "--action", action)
    return cred


class Ops:
    def __init__(self, server, cred=ADMIN_TOKEN, timeout=30):
        host, port = server.addrs["http"]
        self.base = f"http://{host}:{port}"
        self.cred = cred
        self.timeout = timeout
        self.session = requests.Session()

    def headers(self, extra=None):
        h = {}
        if self.cred:
            h["Authorization"] = "Bearer " + self.cred
        h.update(extra or {})
        return h

    def call(self, op, params, raw=None):
        """POSTs a call op; returns (status, decoded JSON)."""
        body = raw if raw is not None else json.dumps(params)
        r = self.session.post(self.base + OPS + "/" + op, data=body, headers=self.headers(),
                              timeout=self.timeout)
        return r.status_code, r.json()

    def discovery(self):
        r = self.session.get(self.base + OPS, headers=self.headers(), timeout=self.timeout)
        assert r.status_code == 200, r.text
        return r.json()

    def put(self, ns, data, digest=None, length=None, offer=None):
        """blobs/put; data is bytes (Content-Length) or an iterator (chunked).
        Returns (status, JSON)."""
        if offer is None:
            offer = {"namespace": ns}
            if digest is not None:
                offer["digest"] = digest
            if length is not None:
                offer["len"] = length
        r = requests.post(self.base + OPS + "/blobs/put", data=data, timeout=self.timeout,
                          headers=self.headers({"Cairn-Offer": json.dumps(offer)}))
        return r.status_code, r.json()

    def fetch(self, ns, digest, ranges=None, stream=False):
        """channels/blobs/sub; returns the requests.Response (ack in r.ack)."""
        params = {"namespace": ns, "digest": digest}
        if ranges is not None:
            params["ranges"] = ranges
        r = requests.post(self.base + OPS + "/channels/blobs/sub", data=json.dumps(params),
                          headers=self.headers(), timeout=self.timeout, stream=stream)
        r.ack = json.loads(r.headers["Cairn-Open"]) if "Cairn-Open" in r.headers else None
        return r

    def have(self, ns, digests, token=None):
        params = {"namespace": ns, "digests": list(digests)}
        if token is not None:
            params["token"] = token
        status, body = self.call("blobs/have", params)
        assert status == 200, body
        return body["present"]


def error_of(body):
    e = body["error"]
    assert set(e) == {"code", "reason", "message"}, body
    return e["code"], e["reason"]
