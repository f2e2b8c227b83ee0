"""Helpers for the `cairn` object-command tests: run the command against a
running cairnd, with the endpoint and credential from flags or environment."""
import hashlib
import os
import subprocess

from cairnutil import no_sanitizer_report  # noqa: F401 (re-exported for the tests)
from conftest import ADMIN_TOKEN, binary, run


def endpoint(srv):
    host, port = srv.addrs["jay"]
    return f"{host}:{port}"


def cairn(srv, *args, token=ADMIN_TOKEN, input=None, env=None, flags=False, timeout=120):
    """Runs `cairn ARGS`; bytes in, bytes out.  flags=True passes --endpoint and
    --token instead of CAIRN_ENDPOINT / CAIRN_TOKEN."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    cmd = [binary("cairn")] + list(args)
    if flags:
        if srv is not None:
            cmd += ["--endpoint", endpoint(srv)]
        if token is not None:
            cmd += ["--token", token]
    else:
        if srv is not None:
            full["CAIRN_ENDPOINT"] = endpoint(srv)
        if token is not None:
            full["CAIRN_TOKEN"] = token
    full.update(env or {})
    r = subprocess.run(cmd, capture_output=True, env=full, timeout=timeout, input=input,
                       stdin=None if input is not None else subprocess.DEVNULL)
    no_sanitizer_report(r.stderr)
    return r


def ok(r):
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    return r.stdout.decode()


def token_with(srv, *perms):
    """A token of the admin account holding only perms, made while cairnd runs."""
    args = [binary("cairn"), "admin", "--data", srv.data_dir, "token", "create",
            "--account", "admin"]
    for p in perms:
        args += ["--perm", p]
    r = run(args, env={"CAIRN_ADMIN_TOKEN": ADMIN_TOKEN})
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def stat_fields(text):
    """Parses `cairn stat` output into a dict (meta lines into a list)."""
    out = {"meta": []}
    for line in text.splitlines():
        k, _, v = line.partition(":")
        v = v.strip()
        if k == "meta":
            out["meta"].append(v)
        else:
            out[k] = v
    return out


def sha256(b):
    return hashlib.sha256(b).hexdigest()


def md5(b):
    return hashlib.md5(b).hexdigest()


def multipart_etag(data, part_size):
    digests = b"".join(hashlib.md5(data[i:i + part_size]).digest()
                       for i in range(0, len(data), part_size))
    return "%s-%d" % (hashlib.md5(digests).hexdigest(), (len(data) + part_size - 1) // part_size)
