"""authorize_upload (27) as its own step on a protocol-4 gateway (issue 23,
docs/protocol/scribe-gateway.md "Upload admission"): before the gateway
grants a client's upload admission it asks the owning storage server 27 as
the user, and passes a refusal on without sending the put_objects upstream.
The setup is test_gateway_pool.py's (storage 2 serving /_cairn/metrics), so
storage's per-operation request counts show what reached it.

What each test proves: a reader's upload through the gateway is refused at
admission with storage's own answer, storage counted one authorize_upload
and no put_objects (nothing of the upload reached it), and the client's
connection stays usable; a writer's upload is preceded by one 27 and then
admitted again by storage on the real put_objects (no lease: each upload
asks again), and the bytes read back."""
import re
import secrets
import time
import urllib.request

from scribe_wire import CHUNK, b3
from test_gateway_pool import pooled  # noqa: F401 - the fixture
from test_gateway_tls import NS2, gw, via  # noqa: F401 - the fixture
from test_scribe_v4_auth import put_admission, world  # noqa: F401 - the fixture


def op_count(s, op):
    """Requests storage 2 has answered for `op` (its duration histogram's
    count; 0 before the first)."""
    host, port = s.store2.addrs["http"]
    with urllib.request.urlopen("http://%s:%d/_cairn/metrics" % (host, port), timeout=30) as r:
        text = r.read().decode()
    m = re.search(r'cairn_request_duration_seconds_count\{face="scribe",op="%s"\} (\d+)' % op,
                  text)
    return int(m.group(1)) if m else 0


def wait_count(s, op, n, timeout=60):
    """Polls storage 2's metrics until `op` was answered n times (the count
    is taken just after the answer is written)."""
    deadline = time.time() + timeout
    while op_count(s, op) < n:
        assert time.time() < deadline, "storage never counted %s %d times" % (op, n)
        time.sleep(0.05)


def test_a_reader_is_refused_at_admission_before_any_put_reaches_storage(pooled):  # noqa: F811
    wes = via(pooled, "wes")  # a reader of "publishing" (storage 2)
    asked, puts = op_count(pooled, "authorize_upload"), op_count(pooled, "put_objects")
    assert wes.repo_info(pooled.news)["name"] == "%s/news" % NS2
    assert put_admission(wes, pooled.news) == "forbidden"  # storage's answer, passed on
    wait_count(pooled, "authorize_upload", asked + 1)
    # the connection stays usable, and what it asks next is counted after
    # the refused upload would have been: the put never went upstream
    infos = op_count(pooled, "repo_info")
    assert wes.repo_info(pooled.news)["name"] == "%s/news" % NS2
    wait_count(pooled, "repo_info", infos + 1)
    assert op_count(pooled, "put_objects") == puts
    assert op_count(pooled, "authorize_upload") == asked + 1


def test_a_writer_is_asked_each_time_and_storage_admits_the_upload(pooled):  # noqa: F811
    pooled.world.admin_call("grants-set", "olga", NS2, "writer")
    olga = via(pooled, "olga")
    asked, puts = op_count(pooled, "authorize_upload"), op_count(pooled, "put_objects")
    sent = []
    for i in range(2):
        data = b"through 27 then put_objects %d " % i + secrets.token_bytes(64)
        assert put_admission(olga, pooled.news, data) is None
        sent.append(data)
        # 27 again for each upload (no lease), then the real upload
        wait_count(pooled, "put_objects", puts + i + 1)
        assert op_count(pooled, "authorize_upload") == asked + i + 1
    got = olga.get_objects(pooled.news, [(CHUNK, b3(d)) for d in sent])
    assert got == [(CHUNK, b3(d), d) for d in sent]
