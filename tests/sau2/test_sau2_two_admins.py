"""Operation ids belong to the administrator who used them (issue 20,
"Administrative verbs"): through the real listener, with two auth
administrators signed in over their own credential certificates,
- the same operation id sent by the other administrator is refused with
  operation_intent_mismatch (200), whether its intent is the same or not, and
  applies nothing;
- operation-outcome of another administrator's id answers exactly as an
  unknown id does (same code, same message), while its owner reads it back;
- both rejections are audited with the actor who sent them.
The service-level unit test (test_sau2_service.c) has one administrator only.

"Every administrative request, applied or rejected, is audited": once,
a reuse refused with operation_intent_mismatch included (it was audited
twice: by admin_body, whose operation was found, and again by the refusal
path)."""
import secrets

import pytest

from test_sau2_listener import (PASSWORD, auth_server, call, code_of,  # noqa: F401
                                device_key, rows_of)

ALICE_PW = "alice's admin password 5e1d"


def credential(srv, tmp_path, name, password, verb="admin-login"):
    key, spki = device_key(tmp_path, name + "-" + secrets.token_hex(3))
    rc, out = call(srv, verb, name, secrets.token_hex(16), spki, op=secrets.token_hex(16),
                   secret=password)
    assert rc == 0 and code_of(out) == 0, out
    cert = key + ".pem"
    open(cert, "w").write(rows_of(out)[0][0])
    return cert, key


def as_(srv, who, *argv, op=None, secret=None):
    rc, out = call(srv, *argv, cert=who[0], key=who[1], op=op, secret=secret)
    assert rc == 0, out
    return code_of(out), out


def message_of(lines):
    return [l for l in lines if not l.startswith(("code ", "revision ", "incarnation "))]


@pytest.fixture
def two_admins(auth_server, tmp_path):
    """(server, admin, alice): alice is an auth administrator too."""
    srv = auth_server()
    admin = credential(srv, tmp_path, "admin", PASSWORD)
    assert as_(srv, admin, "users-add", "alice", "id-alice", "1", "person",
               op=secrets.token_hex(16))[0] == 0
    assert as_(srv, admin, "users-password", "alice", "1", op=secrets.token_hex(16),
               secret=ALICE_PW)[0] == 0
    alice = credential(srv, tmp_path, "alice", ALICE_PW)
    return srv, admin, alice


def test_operation_ids_belong_to_their_administrator(two_admins):
    srv, admin, alice = two_admins
    op = secrets.token_hex(16)
    code, out = as_(srv, alice, "users-add", "bob", "id-bob", "0", "person", op=op)
    assert code == 0, out
    # alice's own replay: the recorded answer
    assert as_(srv, alice, "users-add", "bob", "id-bob", "0", "person", op=op)[0] == 0

    # admin reusing alice's id: refused, with the same intent or another one
    assert as_(srv, admin, "users-add", "bob", "id-bob", "0", "person", op=op)[0] == 200
    assert as_(srv, admin, "users-add", "carol", "id-carol", "0", "person", op=op)[0] == 200
    code, out = as_(srv, admin, "users-list", "")
    assert code == 0 and "carol" not in [r[0] for r in rows_of(out)], out

    # operation-outcome: alice reads her own; for admin it is as if unknown
    code, out = as_(srv, alice, "operation-outcome", op)
    assert code == 0 and rows_of(out)[0][0] == "bob", out
    other_code, other = as_(srv, admin, "operation-outcome", op)
    unknown_code, unknown = as_(srv, admin, "operation-outcome", secrets.token_hex(16))
    assert other_code != 0 and other_code == unknown_code, (other, unknown)
    assert message_of(other) == message_of(unknown), (other, unknown)

    # both refused reuses are in the audit, with admin as the actor
    code, out = as_(srv, admin, "audit-list", "")
    assert code == 0, out
    rows = rows_of(out)
    refused = [r for r in rows if "users-add" in r and "admin" in r
               and any("carol" in f for f in r)]
    assert refused, rows


def audited(srv, who, verb, args):
    code, out = as_(srv, who, "audit-list", "")
    assert code == 0, out
    return [r for r in rows_of(out) if r[3] == verb and r[4] == args]


def test_a_refused_request_is_audited_once(two_admins):
    srv, admin, alice = two_admins
    assert as_(srv, admin, "users-add", "dave", "id-dave", "0", "person",
               op=secrets.token_hex(16))[0] == 0  # applied: one row
    assert len(audited(srv, admin, "users-add", "dave id-dave 0 person")) == 1
    assert as_(srv, admin, "users-add", "Bad Name", "x", "0", "person",
               op=secrets.token_hex(16))[0] == 1  # malformed: one row
    assert len(audited(srv, admin, "users-add", "Bad Name x 0 person")) == 1


def test_an_intent_mismatch_is_audited_once(two_admins):
    srv, admin, alice = two_admins
    op = secrets.token_hex(16)
    assert as_(srv, alice, "users-add", "erin", "id-erin", "0", "person", op=op)[0] == 0
    assert as_(srv, admin, "users-add", "frank", "id-frank", "0", "person", op=op)[0] == 200
    rows = audited(srv, admin, "users-add", "frank id-frank 0 person")
    assert [r[2] for r in rows] == ["admin"], rows
