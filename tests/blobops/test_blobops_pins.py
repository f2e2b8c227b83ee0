"""Pin tokens through the real cairnd: the renewal form of blobs/have with a
short TTL (CAIRN_BLOB_PIN_TTL_MS), expiry → present: false → re-put; foreign
tokens answer false, never an error; tokens are valid only on the node that
minted them; process-lifetime tokens on the embedded default; and the
sweeper reclaiming a deleted blob, with delete-then-re-put recovering."""
import os
import time

import pytest

from blobsclient import Ops, b3, make_token
from conftest import assert_no_sanitizer

HTTP_ONLY = ["--jay", "off", "--scribe", "off", "--http", "127.0.0.1:0"]
NS = "pins"
TTL_MS = 1500


def alice(srv):
    return Ops(srv, make_token(srv, "alice", grants=[(NS, "read"), (NS, "write")]))


def test_renewal_with_short_ttl_then_expiry_then_reput(server_factory):
    srv = server_factory(args=HTTP_ONLY, wait_for=("http",),
                         env={"CAIRN_BLOB_PIN_TTL_MS": str(TTL_MS)})
    ops = alice(srv)
    data = os.urandom(10000)
    d = b3(data)
    status, put = ops.put(NS, data, digest=d)
    assert status == 200
    token = put["token"]
    # renewing every TTL/3 keeps the pin well past its first expiry
    t0 = time.time()
    while time.time() - t0 < 2.5 * TTL_MS / 1000:
        assert ops.have(NS, [d], token=token) == [True]
        time.sleep(TTL_MS / 3000)
    # foreign tokens, or the token with another digest or namespace: false, no error
    assert ops.have(NS, [d], token="pt_" + "0" * 32) == [False]
    assert ops.have(NS, [d], token="minted-by-another-node") == [False]
    assert ops.have(NS, [b3(b"other")], token=token) == [False]
    admin = Ops(srv)
    assert admin.have("elsewhere", [d], token=token) == [False]
    # a putter pausing past the TTL lets the row expire
    time.sleep(TTL_MS / 1000 + 0.5)
    assert ops.have(NS, [d], token=token) == [False]
    assert ops.have(NS, [d], token=token) == [False]
    assert ops.have(NS, [d]) == [True]          # still the namespace's member
    # the backstop: re-put (CAS makes it idempotent), a fresh token
    status, again = ops.put(NS, data, digest=d)
    assert status == 200 and again["digest"] == d and again["token"] != token
    assert ops.have(NS, [d], token=again["token"]) == [True]


def test_tokens_are_valid_only_on_the_minting_node(server_factory):
    a = server_factory(args=HTTP_ONLY, wait_for=("http",))
    b = server_factory(args=HTTP_ONLY, wait_for=("http",))
    ops_a, ops_b = Ops(a), Ops(b)
    data = b"minted on a"
    d = b3(data)
    status, put = ops_a.put(NS, data)
    assert status == 200
    assert ops_b.put(NS, data)[0] == 200
    assert ops_a.have(NS, [d], token=put["token"]) == [True]
    assert ops_b.have(NS, [d], token=put["token"]) == [False]


def test_process_lifetime_tokens_and_restart(server_factory, tmp_path):
    data_dir = tmp_path / "node"
    srv = server_factory(args=HTTP_ONLY, wait_for=("http",), data=data_dir)
    ops = Ops(srv)
    data = os.urandom(2000)
    d = b3(data)
    status, put = ops.put(NS, data)
    assert status == 200
    time.sleep(0.3)
    assert ops.have(NS, [d], token=put["token"]) == [True]     # nothing expires
    srv.stop()
    assert_no_sanitizer(srv.output())
    os.remove(srv.log_path)        # the restarted server's listening line must be its own
    srv2 = server_factory(args=HTTP_ONLY, wait_for=("http",), data=data_dir)
    ops2 = Ops(srv2)
    assert ops2.have(NS, [d]) == [True]                         # membership is durable
    assert ops2.have(NS, [d], token=put["token"]) == [False]    # the token was this process's
    assert ops2.fetch(NS, d).content == data


def test_sweeper_reclaims_a_deleted_blob_and_reput_recovers(server_factory):
    srv = server_factory(args=HTTP_ONLY, wait_for=("http",),
                         env={"CAIRN_SWEEP_INTERVAL_SECONDS": "1",
                              "CAIRN_SWEEP_GRACE_SECONDS": "1"})
    ops = Ops(srv)
    kept, gone = os.urandom(3000), os.urandom(3000)
    dk, dg = b3(kept), b3(gone)
    assert ops.put(NS, kept)[0] == 200
    assert ops.put(NS, gone)[0] == 200
    status, body = ops.call("blobs/delete", {"namespace": NS, "digests": [dg]})
    assert (status, body) == (200, {"removed": 1})
    path = os.path.join(srv.data_dir, "blobs", dg[0:2], dg[2:4], dg)
    deadline = time.time() + 15
    while os.path.exists(path) and time.time() < deadline:
        time.sleep(0.2)
    assert not os.path.exists(path), "the sweeper kept a blob nothing holds"
    assert ops.fetch(NS, dk).content == kept                    # members are kept
    assert ops.fetch(NS, dg).status_code == 404
    assert ops.put(NS, gone)[0] == 200                          # delete-then-recover
    assert ops.fetch(NS, dg).content == gone
