"""Job leases (issue 24, docs/fleet.md "Job leases"): on PostgreSQL the
single-runner jobs (the blob sweep with its pin reaper, and the upload
expiry) run on one node of the fleet at a time, each under a session
advisory lock held by the node's watcher connection.  The holder logs "job
NAME: runs on this node".  Killed with SIGKILL, its session ends, and the
other node takes the lease within 10 s and does the job: an unfinished
multipart upload that expired after the kill is aborted there.  On SQLite
the one process runs the jobs as before (no lease)."""
import os
import re
import sys
import time

import pytest
from botocore.exceptions import ClientError

from conftest import Server

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fleetutil import key_file, needs_pg, pg  # noqa: E402,F401
from s3fixtures import S3Server, s3_args  # noqa: E402

TAKEOVER = 10.0  # seconds: the bound
EXPIRY = 6  # seconds an unfinished upload lives
JOBS = ("blob-sweep", "upload-expiry", "usage-fold")
# Advisory locks held per fleet: JOBS' and the lifecycle worker's (its own
# thread asks for it; test_fleet_status.py follows that one).
LEASES = len(JOBS) + 1
ENV = {"CAIRN_UPLOAD_SWEEP_SECONDS": "1", "CAIRN_UPLOAD_EXPIRY_SECONDS": str(EXPIRY),
       "CAIRN_SWEEP_INTERVAL_SECONDS": "1"}


def runs(srv, job):
    """True when srv's log (this run) says it last took job's lease."""
    said = re.findall(r"job %s: (runs on|no longer runs on) this node" % job,
                      srv.output(srv.log_offset))
    return bool(said) and said[-1] == "runs on"


def holders(nodes, job):
    return [n for n in nodes if runs(n.server, job)]


def wait_for(pred, timeout):
    t0 = time.monotonic()
    while not pred():
        if time.monotonic() - t0 > timeout:
            return None
        time.sleep(0.1)
    return time.monotonic() - t0


def upload_gone(node, bucket, key, upload_id):
    try:
        node.client().list_parts(Bucket=bucket, Key=key, UploadId=upload_id)
        return False
    except ClientError as e:
        assert e.response["Error"]["Code"] == "NoSuchUpload", e.response
        return True


@needs_pg
def test_jobs_move_when_their_node_dies(pg, tmp_path):
    key = key_file(tmp_path / "fleet.key")
    uri = pg.create_db("leases")
    nodes = []
    try:
        for name in ("a", "b"):
            args = s3_args(["--meta", uri, "--identity-key", key, "--node-id", name])
            nodes.append(S3Server(Server(tmp_path / name, args=args, env=ENV)
                                  .start(wait_for=("http", "jay"))))
        # Each job has exactly one runner, and keeps it.
        for job in JOBS:
            assert wait_for(lambda: len(holders(nodes, job)) == 1, TAKEOVER) is not None, job
        time.sleep(3)
        owner = {job: holders(nodes, job) for job in JOBS}
        assert all(len(h) == 1 for h in owner.values()), owner
        # The leases are the watcher sessions' advisory locks.
        locks = pg.psql("SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a"
                        " ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted"
                        " AND a.application_name LIKE 'cairn-watch/%'", db="leases")
        assert int(locks.strip()) == LEASES

        victim = owner["upload-expiry"][0]
        other = [n for n in nodes if n is not victim][0]
        survivor_offset = len(other.server.output(other.server.log_offset))
        c = other.client()
        c.create_bucket(Bucket="mpu")
        up = c.create_multipart_upload(Bucket="mpu", Key="big")["UploadId"]
        c.upload_part(Bucket="mpu", Key="big", UploadId=up, PartNumber=1, Body=b"x" * 1024)
        assert not upload_gone(other, "mpu", "big", up)  # not yet expired at the kill
        victim.server.kill9()
        nodes.remove(victim)
        t_kill = time.monotonic()

        took = wait_for(lambda: all(runs(other.server, j) for j in JOBS), TAKEOVER + 5)
        assert took is not None and took < TAKEOVER, took
        # The job done there: the upload expired (EXPIRY s after it began)
        # and its row was deleted by the survivor's sweep, no later than 10 s
        # after the kill or a sweep period (and some slack) after its expiry.
        # (An expired upload already answers NoSuchUpload before any sweep.)
        left = max(TAKEOVER, EXPIRY + 1 + 2) - (time.monotonic() - t_kill)

        def swept():
            rows = pg.psql("SELECT count(*) FROM obj_upload WHERE upload_id = '%s'" % up,
                           db="leases")
            return int(rows.strip()) == 0
        assert wait_for(swept, max(left, 0.5)) is not None
        assert upload_gone(other, "mpu", "big", up)
        log = other.server.output(other.server.log_offset)[survivor_offset:]
        assert re.search(r"expired 1 unfinished multipart upload", log), log[-2000:]
        # One runner per job among the nodes left (just one here), and no
        # lease held by the dead node's session.
        locks = pg.psql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
                        " AND granted", db="leases")
        assert int(locks.strip()) == LEASES
    finally:
        for n in nodes:
            n.server.stop()


def test_sqlite_runs_its_jobs_without_a_lease(tmp_path):
    """One process on SQLite: no lease lines, and the upload expiry runs on
    the objects service's own thread at CAIRN_UPLOAD_SWEEP_SECONDS."""
    srv = S3Server(Server(tmp_path / "solo", args=s3_args(), env=ENV)
                   .start(wait_for=("http", "jay")))
    try:
        c = srv.client()
        c.create_bucket(Bucket="mpu")
        up = c.create_multipart_upload(Bucket="mpu", Key="k")["UploadId"]
        assert not upload_gone(srv, "mpu", "k", up)
        # Swept (logged), not only expired (NoSuchUpload comes at expiry).
        assert wait_for(lambda: "expired 1 unfinished multipart upload" in
                        srv.server.output(srv.server.log_offset), EXPIRY + 1 + 5) is not None
        assert upload_gone(srv, "mpu", "k", up)
        assert "job " not in srv.server.output(srv.server.log_offset)
    finally:
        srv.server.stop()
