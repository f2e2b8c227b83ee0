"""libcairn's workspace verbs (tests/client/workspace_live.c) against the
real cairnd's Scribe listener: clone, status, submit, a second clone, sync,
log, describe, conflicts, an empty repository and a sparse clone."""
import os
import subprocess

from clitools import no_sanitizer_report
from conftest import BUILD

ARGS = ["--jay", "off", "--http", "off", "--scribe", "127.0.0.1:0"]


def test_workspace_api(server_factory, tmp_path):
    srv = server_factory(args=ARGS, wait_for=("scribe",))
    host, port = srv.addrs["scribe"]
    program = os.path.join(BUILD, "tests", "client", "workspace_live")
    assert os.path.exists(program), f"{program} is not built; run make"
    root = tmp_path / "ws"
    root.mkdir()
    env = dict(os.environ, CAIRN_SCRIBE_ENDPOINT=f"{host}:{port}", CAIRN_TEST_DIR=str(root))
    r = subprocess.run([program], capture_output=True, text=True, env=env, timeout=300)
    text = r.stdout + r.stderr
    assert r.returncode == 0, text
    no_sanitizer_report(text)
    assert "not ok" not in text, text
    assert text.count("\nok ") + text.startswith("ok ") == 4, text
