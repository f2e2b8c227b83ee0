"""Writes with an operation key whose COMMIT is lost in a promotion (issue 24;
docs/fleet.md "A connection is lost in COMMIT", cn_meta_run_keyed).  The
fleet's database is a primary and its synchronous standby; `cairn admin
--meta` (both hosts, read-write wanted) creates a token, or a node creates a
Scribe repository, and the commit fault hook holds the process at its COMMIT: just before it ("stop"), or
just after sending it with the answer dropped ("after-stop", once the
standby shows the row).  The primary is stopped and the standby promoted,
then the command goes on.  The promoted server cannot answer for the lost
transaction's id (another incarnation), so the write looks for its key, the
token's or the repository's random id: not there, it runs again; there, it
is done.  Either way the command prints one working credential and the
account has exactly one new token, or `cairn repo create` succeeds and the
repository exists once.  Before, both failed ("backend unavailable",
"storage_failure"), and running them again made a second token, or met
"a repository named ... exists"."""
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cairnutil import repo, scribe_ep  # noqa: E402
from conftest import binary, run  # noqa: E402
import pgharness  # noqa: E402
from fleetutil import accepted, needs_pg, proc_stopped  # noqa: E402
from fleetutil import end_held, promote_and_resume, promoted_pair_fleet  # noqa: E402

pytestmark = needs_pg


def tokens_of(cluster, db, account):
    out = cluster.psql("SELECT t.id FROM cn_tokens t JOIN cn_accounts a ON a.id = t.account_id"
                       " WHERE a.name = '%s' ORDER BY t.id" % account, db=db)
    return out.split()


def held_admin(pair, f, trigger, fault, argv, landed):
    """Runs `cairn admin --meta` argv held at its COMMIT by the fault word
    fault, then promotes the standby (promote_and_resume); returns its
    stdout."""
    env = dict(os.environ, CAIRN_TEST_PG_COMMIT_FAULT=str(trigger))
    trigger.write_text(fault)
    proc = subprocess.Popen(admin(f) + argv, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not proc_stopped(proc.pid):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.005)
        assert not trigger.exists()  # taken by the command's COMMIT
        out, _ = promote_and_resume(pair, proc, fault, landed)
        return out
    finally:
        end_held(proc, None)


def admin(f):
    return [binary("cairn"), "admin", "--meta", f.uri, "--identity-key", str(f.key)]


def admin_ok(f, *argv):
    r = run(admin(f) + list(argv))
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.parametrize("fault", ["stop", "after-stop"])
def test_token_create_commit_lost_in_a_promotion(tmp_path, fault):
    db = "tok" + fault.replace("-", "")
    with pgharness.synchronous_pair() as pair:
        f = promoted_pair_fleet(pair, tmp_path, db)
        try:
            admin_ok(f, "account", "create", "dora")
            out = held_admin(pair, f, tmp_path / "commit-fault", fault,
                             ["token", "create", "--account", "dora"],
                             lambda: tokens_of(pair[1], db, "dora"))
            cred = out.strip()
            assert tokens_of(pair[1], db, "dora") == [cred.split(":")[0]]
            # the credential works through the node, now on the promoted server
            s3 = f.nodes[0].client(*cred.split(":"))
            s3.create_bucket(Bucket="dora-bucket")
            assert [b["Name"] for b in s3.list_buckets()["Buckets"]] == ["dora-bucket"]
        finally:
            end_held(None, f)


@pytest.mark.parametrize("fault", ["stop", "after-stop"])
def test_account_create_commit_lost_in_a_promotion(tmp_path, fault):
    """The create's key (cn_accounts.create_key) tells its row from one
    another create wrote: the account exists once, and a token made for it
    then works."""
    db = "acc" + fault.replace("-", "")
    rows = "SELECT name, email FROM cn_accounts WHERE name = 'erin'"
    with pgharness.synchronous_pair() as pair:
        f = promoted_pair_fleet(pair, tmp_path, db)
        try:
            held_admin(pair, f, tmp_path / "commit-fault", fault,
                       ["account", "create", "erin", "--email", "erin@example.com"],
                       lambda: pair[1].psql(rows, db=db).split())
            assert pair[1].psql(rows, db=db).split() == ["erin|erin@example.com"]
            cred = admin_ok(f, "token", "create", "--account", "erin").strip()
            assert accepted(f.nodes[0], cred.split(":"))
            # a second create of the name is refused as before
            r = run(admin(f) + ["account", "create", "erin"])
            assert r.returncode != 0 and "exists" in r.stderr, r.stderr
        finally:
            end_held(None, f)


@pytest.mark.parametrize("write", ["grant", "token-revoke"])
@pytest.mark.parametrize("fault", ["stop", "after-stop"])
def test_state_writes_commit_lost_in_a_promotion(tmp_path, fault, write):
    """A grant and a token revocation set a state, which is their key: found
    after the promotion, the command is done ("after-stop"); not found, it
    runs again ("stop").  Before, both failed "backend unavailable" (and a
    revocation so answered might have landed)."""
    db = write.replace("-", "") + fault.replace("-", "")
    grants = "SELECT actions FROM cn_ns_grants WHERE namespace = 'media'"
    revoked = "SELECT id FROM cn_tokens WHERE revoked_at IS NOT NULL"
    with pgharness.synchronous_pair() as pair:
        f = promoted_pair_fleet(pair, tmp_path, db)
        try:
            admin_ok(f, "account", "create", "fern")
            cred = admin_ok(f, "token", "create", "--account", "fern").strip().split(":")
            assert accepted(f.nodes[0], cred)
            if write == "grant":
                argv = ["grant", "--namespace", "media", "--account", "fern", "--action", "read"]
                sql = grants
            else:
                argv = ["token", "revoke", cred[0]]
                sql = revoked
            held_admin(pair, f, tmp_path / "commit-fault", fault, argv,
                       lambda: pair[1].psql(sql, db=db).split())
            if write == "grant":
                assert pair[1].psql(grants, db=db).split() == ["1"]
                listed = admin_ok(f, "grants", "--namespace", "media")
                assert "fern" in listed and "read" in listed, listed
            else:
                assert pair[1].psql(revoked, db=db).split() == [cred[0]]
                # the node had the token cached: the identity topic's poll
                # on the promoted server tells it (docs/fleet.md, "Topics")
                t0 = time.monotonic()
                while accepted(f.nodes[0], cred):
                    assert time.monotonic() - t0 < 30, "revoked token still served"
                    time.sleep(0.2)
                print("revocation seen by the node after %.1f s" % (time.monotonic() - t0))
        finally:
            end_held(None, f)


def held_node(pair, node, trigger, fault, request, landed):
    """Runs request() on a thread while node is held at its COMMIT by the
    fault word fault, promotes the standby (once landed() holds there for
    "after-stop") and continues node; returns (request's result or the
    exception it raised, node's log since).  The log must show the outcome
    lost, and the write run again exactly after "stop"."""
    primary, standby = pair
    mark = len(node.output())
    out = {}

    def call():
        try:
            out["r"] = request()
        except Exception as e:  # noqa: BLE001 -- handed to the caller
            out["r"] = e
    trigger.write_text(fault)
    t = threading.Thread(target=call)
    t.start()
    deadline = time.monotonic() + 60
    while not proc_stopped(node.proc.pid):
        assert t.is_alive() and time.monotonic() < deadline
        time.sleep(0.005)
    while fault == "after-stop" and not landed():
        assert time.monotonic() < deadline, "the COMMIT never reached the standby"
        time.sleep(0.01)
    primary.stop()
    standby.promote()
    os.kill(node.proc.pid, signal.SIGCONT)
    t.join(120)
    log = node.output()[mark:]
    assert "outcome unknown" in log, log[-3000:]
    assert ("running it again" in log) == (fault == "stop"), log[-3000:]
    return out["r"], log


@pytest.mark.parametrize("fault", ["stop", "after-stop"])
def test_repo_create_commit_lost_in_a_promotion(tmp_path, fault):
    db = "rep" + fault.replace("-", "")
    trigger = tmp_path / "commit-fault"
    # no heartbeat write to take the fault meant for the create
    env = {"CAIRN_TEST_PG_COMMIT_FAULT": str(trigger), "CAIRN_NODE_HEARTBEAT_MS": "3600000"}
    with pgharness.synchronous_pair() as (primary, standby):
        f = promoted_pair_fleet((primary, standby), tmp_path, db, env=env)
        node = f.nodes[0].server
        try:
            ep = scribe_ep(node)
            repos = "SELECT convert_from(name, 'UTF8') FROM repos_repo"
            r, log = held_node((primary, standby), node, trigger, fault,
                               lambda: repo(ep, "create", "assets", check=False, timeout=120),
                               lambda: standby.psql(repos, db=db).split())
            assert r.returncode == 0, (r.stdout, r.stderr, log[-3000:])
            assert standby.psql(repos, db=db).split() == ["assets"]
            ws = str(tmp_path / "ws")
            repo(ep, "clone", "assets", ws)
            with open(os.path.join(ws, "a.txt"), "wb") as fh:
                fh.write(b"after the promotion\n")
            repo(ep, "submit", ws, "-m", "first")
        finally:
            if node.proc.poll() is None:
                os.kill(node.proc.pid, signal.SIGCONT)
            end_held(None, f)


@pytest.mark.parametrize("fault", ["stop", "after-stop"])
def test_multipart_create_commit_lost_in_a_promotion(tmp_path, fault):
    """CreateMultipartUpload draws its upload id before its first run and
    looks for it after the promotion: one upload, whose id (the answer's)
    takes a part and completes.  Before, the create answered 503 and a
    client's retry left the first upload behind (after-stop: two uploads)."""
    db = "mpu" + fault.replace("-", "")
    trigger = tmp_path / "commit-fault"
    env = {"CAIRN_TEST_PG_COMMIT_FAULT": str(trigger), "CAIRN_NODE_HEARTBEAT_MS": "3600000"}
    uploads = "SELECT upload_id FROM obj_upload"
    with pgharness.synchronous_pair() as (primary, standby):
        f = promoted_pair_fleet((primary, standby), tmp_path, db, env=env)
        node = f.nodes[0].server
        try:
            s3 = f.nodes[0].client()
            s3.create_bucket(Bucket="mpu")
            r, log = held_node((primary, standby), node, trigger, fault,
                               lambda: s3.create_multipart_upload(Bucket="mpu", Key="big"),
                               lambda: standby.psql(uploads, db=db).split())
            assert isinstance(r, dict), (r, log[-3000:])
            uid = r["UploadId"]
            assert standby.psql(uploads, db=db).split() == [uid]
            part = s3.upload_part(Bucket="mpu", Key="big", UploadId=uid, PartNumber=1,
                                  Body=b"after the promotion")
            s3.complete_multipart_upload(
                Bucket="mpu", Key="big", UploadId=uid,
                MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]})
            got = s3.get_object(Bucket="mpu", Key="big")["Body"].read()
            assert got == b"after the promotion"
        finally:
            if node.proc.poll() is None:
                os.kill(node.proc.pid, signal.SIGCONT)
            end_held(None, f)
