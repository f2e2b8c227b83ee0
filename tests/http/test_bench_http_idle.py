"""bench/http_idle.py runs and reports what issue 16's idle keep-alive row
needs: N connections held, the server RSS per connection within 16 KiB, the
next connection refused with 503 before it sends anything, a held one still
served.  A small N here (the bench sets the connection limit to N); the
4,096-connection figure is the bench's own run (docs/performance.md)."""
import os
import subprocess
import sys

from conftest import BUILD

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def test_bench_http_idle_reports_the_row():
    env = dict(os.environ)
    asan = env.get("ASAN_OPTIONS", "")
    # ASan's quarantine keeps freed request buffers: no memory held for the
    # connections, so keep it small, as test_http_load.py does.
    env["ASAN_OPTIONS"] = (asan + ":" if asan else "") + \
        "quarantine_size_mb=1:thread_local_quarantine_size_kb=64"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "http_idle.py"), BUILD,
                        "--conns", "512"], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    rows = {}
    for line in r.stdout.splitlines():
        name, value, unit = line.split(" ", 2)
        rows[name] = (value, unit)
    if "skip_http_idle" in rows:
        raise AssertionError("the bench skipped: %s" % rows["skip_http_idle"][1])
    assert rows["http_idle_conns"] == ("512", "conns"), rows
    assert rows["http_idle_next_refused"] == ("503", "status"), rows
    assert rows["http_idle_held_served"] == ("200", "status"), rows
    per_conn = float(rows["http_idle_per_conn"][0])
    assert rows["http_idle_per_conn"][1] == "bytes"
    assert per_conn <= 16 * 1024, rows
    assert int(rows["http_idle_rss_base"][0]) > 0, rows
