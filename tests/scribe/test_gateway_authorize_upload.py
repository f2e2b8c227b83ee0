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
asks again), and the bytes read back.  The same counts show repo_create's
preflight, authorize_repo_create (28): one 28 before each create storage
receives, and a create storage refuses at 28 never reaches repo_create nor
leaves a placement in the gateway's map."""
import os
import re
import sqlite3
import secrets
import time
import urllib.request

import pytest

from scribe_wire import CHUNK, ERR, ScribeError, b3
from test_gateway_pool import pooled  # noqa: F401 - the fixture
from test_gateway_tls import ERR_NAME, NS2, gw, via  # noqa: F401 - the fixture
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


def placements(s, name):
    """Rows of the gateway's placement map for `name` in "publishing" (None
    when the map is not a SQLite file here: the fleet runs)."""
    path = os.path.join(s.gw.data_dir, "meta.db")
    if not os.path.exists(path):
        return None
    db = sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=30)
    try:
        return db.execute("SELECT server, repo_id FROM gw_placement WHERE ns = ? AND name = ?",
                          (NS2, name)).fetchall()
    finally:
        db.close()


def test_repo_create_asks_28_before_the_create(pooled):  # noqa: F811
    boss = via(pooled, "boss")  # administers "publishing"
    asked, made = op_count(pooled, "authorize_repo_create"), op_count(pooled, "repo_create")
    for i in range(2):
        info = boss.repo_create("%s/preflighted-%d" % (NS2, i))
        assert info["name"] == "%s/preflighted-%d" % (NS2, i), info
        # one 28 per create, answered before storage saw the create
        wait_count(pooled, "repo_create", made + i + 1)
        assert op_count(pooled, "authorize_repo_create") == asked + i + 1
        rows = placements(pooled, "preflighted-%d" % i)
        assert rows is None or (len(rows) == 1 and rows[0][1] == info["id"]), rows


def test_a_create_refused_at_28_leaves_nothing_placed(pooled):  # noqa: F811
    wes = via(pooled, "wes")  # only reads "publishing"
    asked, made = op_count(pooled, "authorize_repo_create"), op_count(pooled, "repo_create")
    with pytest.raises(ScribeError) as e:
        wes.repo_create("%s/refused" % NS2)
    assert ERR_NAME[e.value.code] == "forbidden", e.value
    wait_count(pooled, "authorize_repo_create", asked + 1)
    # nothing after the refusal: the create never went upstream, no placement
    infos = op_count(pooled, "repo_info")
    with pytest.raises(ScribeError) as e:
        wes.repo_info(None, "%s/refused" % NS2)
    assert e.value.code == ERR["repository_not_found"], e.value
    wait_count(pooled, "repo_info", infos + 1)
    assert op_count(pooled, "repo_create") == made
    assert op_count(pooled, "authorize_repo_create") == asked + 1
    assert placements(pooled, "refused") in (None, [])
