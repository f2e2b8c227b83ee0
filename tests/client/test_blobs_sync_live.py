"""cn_blobc_sync (tests/client/blobs_sync_live.c) between two real cairnd blob
servers: named digests, the whole namespace, idempotence, a refused have."""
import os
import subprocess

from clitools import no_sanitizer_report
from conftest import ADMIN_TOKEN, BUILD

HTTP_ONLY = ["--jay", "off", "--scribe", "off", "--http", "127.0.0.1:0"]


def url(srv):
    host, port = srv.addrs["http"]
    return f"http://{host}:{port}"


def test_sync_between_two_servers(server_factory):
    path = os.path.join(BUILD, "tests", "client", "blobs_sync_live")
    assert os.path.exists(path), f"{path} is not built; run make"
    a = server_factory(args=HTTP_ONLY, wait_for=("http",))
    b = server_factory(args=HTTP_ONLY, wait_for=("http",))
    env = dict(os.environ, CAIRN_SRC_URL=url(a), CAIRN_DST_URL=url(b), CAIRN_TOKEN=ADMIN_TOKEN)
    r = subprocess.run([path], capture_output=True, text=True, env=env, timeout=180)
    text = r.stdout + r.stderr
    assert r.returncode == 0, text
    no_sanitizer_report(text)
    assert "not ok" not in text and "ok 1 - test_sync" in text, text
