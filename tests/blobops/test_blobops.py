"""The blob call ops through the real cairnd over HTTP: discovery, stat, have,
delete, params validation, closed-by-default denial, operator-only delete,
cross-namespace isolation, and both credential forms (Bearer and SigV4)."""
import json
import os

import pytest
import requests

from blobsclient import Ops, b3, error_of, make_token

HTTP_ONLY = ["--jay", "off", "--scribe", "off", "--http", "127.0.0.1:0"]


@pytest.fixture
def srv(server_factory):
    return server_factory(args=HTTP_ONLY, wait_for=("http",))


@pytest.fixture
def alice(srv):
    cred = make_token(srv, "alice", grants=[("team/a", "read"), ("team/a", "write")])
    return Ops(srv, cred)


def test_discovery_lists_internal_ops_only_to_the_operator(srv, alice):
    ext = alice.discovery()
    ids = {op["id"]: op for op in ext["ops"]}
    assert set(ids) == {"blobs/stat", "blobs/have", "channels/blobs/sub", "blobs/put",
                        "blobs/list"}
    assert all(op["visibility"] == "External" for op in ext["ops"])
    anon = Ops(srv, cred=None).discovery()
    assert {op["id"] for op in anon["ops"]} == set(ids)
    full = {op["id"]: op for op in Ops(srv).discovery()["ops"]}
    assert full["blobs/delete"]["visibility"] == "Internal"
    # every op carries JSON Schemas of its params and result and its declared errors
    for op in full.values():
        assert op["params"]["type"] == "object"
        assert op["params"]["additionalProperties"] is False
        assert "namespace" in op["params"]["required"]
        assert op["result"]["type"] == "object"
        names = {e["name"] for e in op["errors"]}
        assert {"INVALID_PARAMS", "UNAUTHENTICATED", "ACCESS_DENIED"} <= names
        for e in op["errors"]:
            assert e["schema"]["properties"]["error"]["required"] == ["code", "reason", "message"]
    sub = full["channels/blobs/sub"]
    miss = [e for e in sub["errors"] if e["name"] == "BLOB_MISSING"][0]
    props = miss["schema"]["properties"]["error"]["properties"]
    assert miss["status"] == 404
    assert props["code"] == {"const": "channel:open_failed"}
    assert props["reason"] == {"const": "unknown_resource"}
    assert set(sub["result"]["properties"]) == {"source", "len", "slice_digests"}
    assert set(full["blobs/put"]["result"]["required"]) == {"token", "digest"}
    assert full["blobs/put"]["carriage"]["params"] == "header Cairn-Offer"
    assert sub["carriage"]["result"] == "header Cairn-Open"


def test_stat_have_after_put(alice):
    data = os.urandom(70000)
    d = b3(data)
    status, body = alice.put("team/a", data)
    assert status == 200, body
    assert body["digest"] == d and body["token"].startswith("pt_")
    assert alice.call("blobs/stat", {"namespace": "team/a", "digest": d}) == (200, {"len": 70000})
    absent = b3(b"absent")
    assert alice.have("team/a", [d, absent, d]) == [True, False, True]
    assert alice.have("team/a", []) == []
    status, body = alice.call("blobs/stat", {"namespace": "team/a", "digest": absent})
    assert status == 404
    assert error_of(body) == ("blob_missing", "unknown_resource")
    assert body["error"]["message"] == absent


@pytest.mark.parametrize("params,reason", [
    ({"namespace": "team/a", "digest": "ab" * 32, "extra": 1}, "unknown_field"),
    ({"digest": "ab" * 32}, "missing_field"),
    ({"namespace": 7, "digest": "ab" * 32}, "wrong_type"),
    ({"namespace": "team/a", "digest": ["ab" * 32]}, "wrong_type"),
    ({"namespace": "team/a", "digest": "AB" * 32}, "malformed_digest"),
    ({"namespace": "team/a", "digest": "ab" * 31}, "malformed_digest"),
    ({"namespace": "team/a", "digest": "zz" * 32}, "malformed_digest"),
    ({"namespace": "/root", "digest": "ab" * 32}, "invalid_namespace"),
    ({"namespace": "", "digest": "ab" * 32}, "invalid_namespace"),
    ([1, 2], "not_an_object"),
])
def test_stat_params_are_validated(alice, params, reason):
    status, body = alice.call("blobs/stat", params)
    assert status == 400, body
    assert error_of(body) == ("invalid_params", reason)


def test_have_and_delete_params_are_validated(alice):
    cases = [
        ("blobs/have", {"namespace": "team/a", "digests": "ab" * 32}, "wrong_type"),
        ("blobs/have", {"namespace": "team/a", "digests": ["ab" * 32, 5]}, "wrong_type"),
        ("blobs/have", {"namespace": "team/a", "digests": ["ab" * 32, "x"]}, "malformed_digest"),
        ("blobs/have", {"namespace": "team/a", "digests": ["ab" * 32] * 2, "token": "pt_x"},
         "token_needs_one_digest"),
        ("blobs/have", {"namespace": "team/a", "digests": ["ab" * 32], "token": 3}, "wrong_type"),
        ("blobs/have", {"namespace": "team/a", "digests": ["ab" * 32] * 16385}, "too_many"),
        ("blobs/delete", {"namespace": "team/a"}, "missing_field"),
        ("channels/blobs/sub", {"namespace": "team/a", "digest": "ab" * 32, "ranges": [[1]]},
         "wrong_type"),
        ("channels/blobs/sub", {"namespace": "team/a", "digest": "ab" * 32, "ranges": [[-1, 2]]},
         "wrong_type"),
        ("channels/blobs/sub", {"namespace": "team/a", "digest": "ab" * 32,
                                "ranges": [[0, 1]] * 65}, "too_many"),
    ]
    for op, params, reason in cases:
        status, body = alice.call(op, params)
        assert status == 400, (op, params, body)
        assert error_of(body) == ("invalid_params", reason), (op, params)
    for raw in ["{", "", "{\"namespace\":\"a\",\"namespace\":\"b\",\"digests\":[]}", "nul\x00"]:
        status, body = alice.call("blobs/have", None, raw=raw)
        assert status == 400 and error_of(body) == ("invalid_params", "malformed_json"), raw


def test_unknown_op_and_wrong_method(srv, alice):
    r = requests.post(alice.base + "/_cairn/ops/blobs/nope", data="{}", headers=alice.headers())
    assert r.status_code == 404 and error_of(r.json())[0] == "unknown_op"
    r = requests.get(alice.base + "/_cairn/ops/blobs/stat", headers=alice.headers())
    assert r.status_code == 405 and r.headers["Allow"] == "POST"


def test_closed_by_default(srv, alice):
    data = b"closed by default"
    assert alice.put("team/a", data)[0] == 200
    d = b3(data)
    # a token with blobs permissions but no grant on the namespace
    mallory = Ops(srv, make_token(srv, "mallory"))
    for op, params in [("blobs/stat", {"namespace": "team/a", "digest": d}),
                       ("blobs/have", {"namespace": "team/a", "digests": [d]}),
                       ("blobs/stat", {"namespace": "never-granted", "digest": d})]:
        status, body = mallory.call(op, params)
        assert status == 403, body
        assert error_of(body) == ("access_denied", "closed_namespace")
    r = mallory.fetch("team/a", d)
    assert r.status_code == 403 and error_of(r.json()) == ("access_denied", "closed_namespace")
    status, body = mallory.put("team/a", b"x")
    assert status == 403 and error_of(body) == ("access_denied", "closed_namespace")
    # a read grant is no write grant
    reader = Ops(srv, make_token(srv, "reader", grants=[("team/a", "read")]))
    assert reader.have("team/a", [d]) == [True]
    status, body = reader.put("team/a", b"x")
    assert status == 403 and error_of(body)[0] == "access_denied"
    # a grant is capped by the token's permissions
    capped = Ops(srv, make_token(srv, "reader", perms="object:get"))
    status, body = capped.call("blobs/have", {"namespace": "team/a", "digests": [d]})
    assert status == 403 and error_of(body) == ("access_denied", "token_permission")
    # anonymous and bad credentials
    status, body = Ops(srv, cred=None).call("blobs/have", {"namespace": "team/a", "digests": [d]})
    assert status == 401 and error_of(body) == ("unauthenticated", "credentials_required")
    bad = Ops(srv, cred=alice.cred.split(":")[0] + ":wrong-secret")
    status, body = bad.call("blobs/have", {"namespace": "team/a", "digests": [d]})
    assert status == 401 and error_of(body)[0] == "unauthenticated"


def test_delete_is_operator_only_and_recovers_by_reput(srv, alice):
    data = os.urandom(5000)
    d = b3(data)
    status, put = alice.put("team/a", data)
    assert status == 200
    status, body = alice.call("blobs/delete", {"namespace": "team/a", "digests": [d]})
    assert status == 403 and error_of(body) == ("access_denied", "operator_only")
    assert alice.have("team/a", [d]) == [True]
    op = Ops(srv)
    status, body = op.call("blobs/delete", {"namespace": "team/a", "digests": [d, b3(b"no")]})
    assert (status, body) == (200, {"removed": 1})
    assert alice.have("team/a", [d]) == [False]
    assert alice.have("team/a", [d], token=put["token"]) == [False]   # its pin ended too
    assert alice.fetch("team/a", d).status_code == 404
    status, again = alice.put("team/a", data)
    assert status == 200 and again["digest"] == d
    assert alice.have("team/a", [d], token=again["token"]) == [True]
    assert alice.fetch("team/a", d).content == data


def test_presence_is_per_namespace(srv, alice):
    bob = Ops(srv, make_token(srv, "bob", grants=[("team/b", "read"), ("team/b", "write")]))
    data = os.urandom(4096)
    d = b3(data)
    assert alice.put("team/a", data)[0] == 200
    assert bob.have("team/b", [d]) == [False]
    status, body = bob.call("blobs/stat", {"namespace": "team/b", "digest": d})
    assert status == 404 and error_of(body) == ("blob_missing", "unknown_resource")
    r = bob.fetch("team/b", d)
    assert r.status_code == 404
    assert r.json() == {"error": {"code": "channel:open_failed", "reason": "unknown_resource",
                                  "message": d}}
    # bob's own put of the same bytes: one copy in the store, two members
    status, body = bob.put("team/b", data)
    assert status == 200 and body["digest"] == d
    assert bob.have("team/b", [d]) == [True]
    op = Ops(srv)
    assert op.call("blobs/delete", {"namespace": "team/b", "digests": [d]})[1] == {"removed": 1}
    assert bob.have("team/b", [d]) == [False]
    assert alice.have("team/a", [d]) == [True]
    assert alice.fetch("team/a", d).content == data


def test_sigv4_credentials(srv, alice):
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    data = b"signed request"
    assert alice.put("team/a", data)[0] == 200
    key, secret = alice.cred.split(":", 1)
    body = json.dumps({"namespace": "team/a", "digests": [b3(data)]})
    url = alice.base + "/_cairn/ops/blobs/have"

    def send(secret_used):
        req = AWSRequest(method="POST", url=url, data=body,
                         headers={"Content-Type": "application/json"})
        SigV4Auth(Credentials(key, secret_used), "s3", "us-east-1").add_auth(req)
        return requests.post(url, data=body, headers=dict(req.headers))

    r = send(secret)
    assert r.status_code == 200, r.text
    assert r.json() == {"present": [True]}
    r = send(secret + "x")
    assert r.status_code == 401 and error_of(r.json()) == ("unauthenticated", "bad_signature")


def test_have_of_10000_digests(alice):
    digests = [b3(str(i).encode()) for i in range(5)] + ["%064x" % i for i in range(9995)]
    assert alice.put("team/a", b"3")[0] == 200
    present = alice.have("team/a", digests)
    assert len(present) == 10000
    assert present.count(True) == 1 and present[3]


def test_list_pages_through_a_namespace(srv, alice):
    blobs = [os.urandom(100) for _ in range(25)]
    for b in blobs:
        assert alice.put("team/a", b)[0] == 200
    want = sorted(b3(b) for b in blobs)
    got, after = [], None
    while True:
        params = {"namespace": "team/a", "limit": 10}
        if after:
            params["after"] = after
        status, body = alice.call("blobs/list", params)
        assert status == 200, body
        got += body["digests"]
        after = body.get("next")
        if not after:
            break
    assert got == want
    status, body = alice.call("blobs/list", {"namespace": "team/a", "limit": 0})
    assert status == 400 and error_of(body) == ("invalid_params", "invalid_value")
    mallory = Ops(srv, make_token(srv, "mallory"))
    status, body = mallory.call("blobs/list", {"namespace": "team/a"})
    assert status == 403
