"""The integration suite on the fleet engines (issue 24, `make test-fleet`).

When CAIRN_TEST_META holds a PostgreSQL URI (tests/fleet/pg.sh sets it to a
throwaway cluster's), every cairnd a test starts through conftest's Server
runs with `--meta` on a database of its own on that server, named after its
data dir (so a restart on the same dir finds its rows again), and with one
identity key file shared by the whole run.  When CAIRN_TEST_BLOBS is `s3`
as well, its blobs go to the S3 tier: one backend cairnd on its embedded
engine, started at the first use and stopped when the run ends, with a key
prefix per data dir.  A test that gives `--meta` or `--blob-store` itself
keeps its own choice; the backend is the only server left embedded.

With CAIRN_TEST_CEPH_ENDPOINT and CAIRN_TEST_CEPH_CREDS set (tests/fleet/
ceph.sh: a throwaway single-node Ceph cluster), the S3 tier is that RGW
instead, in a bucket of the run's own.

`cairn admin --data DIR` reads its metadata from CAIRN_META when set, so
commands the tests run against a server's data dir are given the same
database through the environment (conftest.run).

Tests that cannot hold on the fleet engines are skipped by SKIPS, each with
its reason (issue 24: "a skip on one needs a written reason")."""
import atexit
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.parse

META = os.environ.get("CAIRN_TEST_META", "")
BLOBS = os.environ.get("CAIRN_TEST_BLOBS", "")
BUCKET = "tier"

# Test files (or node-id prefixes) that do not run on the fleet engines, and why.
SKIPS = {
    "tests/fleet/": "starts its own PostgreSQL cluster and blob tier; make test runs it",
    "tests/cmd/test_admin_cli.py::test_first_run_creates_private_files":
        "checks the files an embedded first start makes in DIR (identity.key, meta.db); a fleet "
        "node is given its key and keeps its metadata in PostgreSQL",
    "tests/cmd/test_admin_repo_cli.py::test_backup_restore_new_incarnation":
        "checks that cairn admin repo backup refuses while cairnd holds DIR's store; with the "
        "blob tier it opens the fleet's database and tier instead, which nodes share while "
        "they run (tests/fleet/test_fleet_repo_backup.py tests that)",
    "tests/cmd/test_repo_verified_sync.py::test_rollback_refused_until_anchor_reset":
        "rolls the whole data directory back by copying DIR; on the fleet engines a server's "
        "rows live in PostgreSQL and its blobs in the tier, which a copy of DIR does not hold",
    "tests/scribe/test_scribe_gw_wire.py::test_instance_status_reports_available_bytes":
        "checks available_bytes against DIR's statvfs; a tiered store has no local space to "
        "report and sends none, by decision (test_instance_status_tiered_store_reports_no_"
        "available_bytes)",
    "tests/scribe/test_scribe_gw_wire.py::test_v4_instance_status_available":
        "expects available_bytes, which a tiered store does not send (as above)",
    "tests/scribe/test_repo_public_clone.py::test_a_chunk_the_repository_lacks_names_the_file":
        "removes a chunk's row from DIR/meta.db with sqlite3",
    "tests/scribe/test_scribe_v4_auth.py::test_auth_rolled_back_to_an_older_revision_is_auth_"
    "unavailable":
        "rolls the auth service back by copying DIR; on the fleet engines its state is in "
        "PostgreSQL (a rollback there is a database restore)",
    "tests/store/test_packs_faces.py":
        "pack files are a layout of the local store; the S3 tier keeps one object per blob",
    "tests/store/test_upgrade_release.py":
        "opens a data directory an earlier embedded release wrote (its meta.db and blob files); "
        "an embedded deployment moves to the fleet engines by `cairn admin fleet import`, "
        "tested in tests/fleet/test_fleet_import.py",
    "tests/store/test_packs_batch.py":
        "pack rows of the local store's pack files (as above; both engines' rows are "
        "tests/meta's meta_batch and meta_batch_pg)",
    "tests/console/test_console_store_totals.py":
        "reads the store's usage rows from DIR/meta.db with sqlite3 and counts DIR/blobs; on the "
        "fleet engines the rows are in PostgreSQL and the bytes in the tier "
        "(tests/fleet/test_fleet_store_totals.py checks the totals there)",
    "tests/console/test_console_store_totals_crash.py":
        "reads DIR/meta.db with sqlite3 and crashes a local store's pack writer (as above)",
    "tests/console/test_console_store_recount.py":
        "corrupts the totals in DIR/meta.db with sqlite3 (as above)",
    "tests/http/test_http_fast.py":
        "the loop answers a GET from the object-head cache's word file (gen.c's file mode, "
        "SQLite); on PostgreSQL the loop declines and a worker answers every GET (docs/fleet.md, "
        "'The object-head cache on PostgreSQL')",
    "tests/jay/test_jay_loop.py::test_a_loop_per_cpu_answers_a_burst_of_small_gets_itself":
        "the loop answers a Jay GET from the object-head cache's word file, as an S3 GET "
        "(above); on PostgreSQL a worker answers every GET (it passed here until 2026-12-07 "
        "only because Jay's loop read PostgreSQL itself, stalling its other connections)",
    "tests/net/test_loop_rearm.py::test_pipelined_and_handed_back_connections_are_served"
    "[loop_per_cpu]":
        "counts the Jay GETs the loop answers after a write (as above: on PostgreSQL a worker "
        "answers them)",
    "tests/http/test_http_syscalls.py::test_a_small_body_goes_with_its_head_in_one_write[loop-]":
        "counts the GETs the loop answers (as test_http_fast.py above: on PostgreSQL a worker "
        "answers them); the worker case runs",
    "tests/proof/test_faults.py::test_injected_fault[write-enospc-packs]":
        "injects ENOSPC into a pack append; with the blob tier each blob is its own backend "
        "object, no pack is written (docs/fleet.md), so the fault never fires",
    "tests/proof/test_faults_faces.py::test_injected_fault_every_face[write-enospc-packs]":
        "as tests/proof/test_faults.py's write-enospc-packs case: no pack on the blob tier",
    "tests/http/test_http_lz4_get.py":
        "checks the LZ4 envelope file under DIR/blobs; on the S3 tier a blob is a backend object "
        "(its form in its metadata)",
    "tests/s3/test_s3_large_put.py::test_multipart_complete_by_reference":
        "counts the parts' blob files under DIR/blobs; on the S3 tier they are backend objects "
        "(multipart through the tier: tests/fleet/test_fleet_ceph.py, test_fleet_three.py)",
    "tests/s3/test_s3_large_put.py::test_abort_frees_part_blobs":
        "counts blob files under DIR/blobs (as above)",
    "tests/s3/test_s3_read_cache.py::test_two_thousand_keys_each_served_its_own_bytes":
        "watches the server's descriptors of files under DIR/blobs; on the S3 tier a node reads "
        "blobs from its cache directory (tests/fleet/test_blob_tier.py)",
    "tests/s3/test_s3_read_cache.py::test_deleted_and_swept_blob_is_not_served_nor_held":
        "watches descriptors of files under DIR/blobs (as above)",
    "tests/proof/test_pack_compact.py":
        "pack files are a layout of the local store; the S3 tier keeps one object per blob",
    "tests/proof/test_crash.py::test_crash_cycles":
        "each cycle sweeps DIR's own metadata and store with tests/proof/proof_sweep; kill -9 "
        "under writers on the fleet engines is tests/fleet/test_fleet_faults.py",
    "tests/proof/test_crash_faces.py::test_crash_cycles_every_face":
        "sweeps DIR's own metadata and store between kills (as above)",
    "tests/proof/test_faults.py::test_injected_fault[rename-eio-blob]":
        "fails the rename that publishes a local blob file; the S3 tier publishes by upload",
    "tests/proof/test_faults.py::test_injected_fault[write-eio-meta]":
        "fails writes to DIR/meta.db; the metadata is in PostgreSQL (its faults: "
        "tests/fleet/test_fleet_faults.py, test_fleet_promote.py)",
    "tests/proof/test_faults.py::test_metadata_db_locked":
        "locks DIR/meta.db (SQLite's file lock); PostgreSQL's row locks are tested in "
        "tests/meta (meta_run_pg) and tests/fleet",
    "tests/proof/test_faults_faces.py::test_injected_fault_every_face[write-eio-packs]":
        "fails writes to DIR/packs; the S3 tier has no pack files",
    "tests/proof/test_faults_faces.py::test_injected_fault_every_face[rename-eio-all]":
        "fails the renames that publish local blob files (as above)",
    "tests/proof/test_faults_faces.py::test_injected_fault_every_face[write-eio-meta]":
        "fails writes to DIR/meta.db (as above)",
    "tests/proof/test_faults_faces.py::test_metadata_db_locked_every_face":
        "locks DIR/meta.db (as above)",
    "tests/s3/test_s3_lifecycle.py::test_kill9_mid_pass_resumes_at_rate":
        "reads the lifecycle worker's saved pass and cursor from DIR/meta.db with sqlite3; a "
        "fleet node keeps them in PostgreSQL (the resumed pass itself is what the other "
        "lifecycle tests run there)",
    "tests/s3/test_s3_lifecycle.py::test_bucket_delete_drops_worker_state":
        "reads the lifecycle worker's rows from DIR/meta.db with sqlite3 (as above)",
    "tests/store/test_free_space.py":
        "the free-space reserve and the spacer guard the local store's data file system; a "
        "node on the S3 tier keeps no blob on its disk, and its cache makes room for itself "
        "(tests/fleet/test_blob_tier.py::test_cache_on_a_small_file_system)",
    "tests/proof/test_security.py::test_modes_of_data_dir_and_credentials":
        "checks the modes of DIR/identity.key and DIR/meta.db; a fleet node is given its key "
        "(--identity-key) and keeps its metadata in PostgreSQL",
}

_dbs = {}         # realpath of a data dir -> its database URI
_state = {}       # "dir", "key", "creds", "backend"


def active():
    return bool(META)


def skip_reason(nodeid):
    for prefix, why in SKIPS.items():
        if nodeid.startswith(prefix):
            return "fleet engines: " + why
    return None


def _uri_for(db):
    """META with its database replaced by db (postgresql://[HOST]/DB[?QUERY])."""
    base, sep, query = META.partition("?")
    scheme, _, rest = base.partition("://")
    host = rest.split("/", 1)[0]
    return "%s://%s/%s%s%s" % (scheme, host, urllib.parse.quote(db), sep, query)


def _workdir():
    if "dir" not in _state:
        _state["dir"] = tempfile.mkdtemp(prefix="cn-fleetmode-")
        atexit.register(_cleanup)
    return _state["dir"]


def _cleanup():
    backend = _state.pop("backend", None)
    if backend is not None:
        backend.stop()
    shutil.rmtree(_state.pop("dir", ""), ignore_errors=True)


def meta_uri(data_dir):
    """The database of the server on data_dir, created at its first use."""
    real = os.path.realpath(str(data_dir))
    if real not in _dbs:
        db = "t_" + hashlib.sha1(real.encode()).hexdigest()[:24]
        subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", _uri_for("postgres"),
                        "-c", 'CREATE DATABASE "%s" STRATEGY = FILE_COPY' % db],
                       check=True, capture_output=True, text=True)
        _dbs[real] = _uri_for(db)
    return _dbs[real]


def identity_key():
    if "key" not in _state:
        path = os.path.join(_workdir(), "fleet.key")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, (os.urandom(32).hex() + "\n").encode())
        os.close(fd)
        _state["key"] = path
    return _state["key"]


def _rgw():
    """The S3 tier on the Ceph RGW of tests/fleet/ceph.sh (cephharness.py):
    its endpoint and credentials file, with the run's bucket made there."""
    if "endpoint" not in _state:
        import boto3
        from botocore.config import Config
        creds = os.environ["CAIRN_TEST_CEPH_CREDS"]
        with open(creds) as f:
            key, secret = f.read().strip().split(":", 1)
        endpoint = os.environ["CAIRN_TEST_CEPH_ENDPOINT"]
        bucket = "%s-%s" % (BUCKET, os.urandom(4).hex())
        boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key,
                     aws_secret_access_key=secret, region_name="us-east-1",
                     config=Config(s3={"addressing_style": "path"})).create_bucket(Bucket=bucket)
        _state.update(endpoint=endpoint, creds=creds, bucket=bucket)
    return _state["endpoint"], _state["creds"]


def _backend():
    """The S3 tier's backend cairnd (embedded; tests/fleet/blobtier.py, as
    the C unit tests' pg.sh --blob-tier has), started once per run; the RGW
    instead when CAIRN_TEST_CEPH_ENDPOINT names one."""
    if os.environ.get("CAIRN_TEST_CEPH_ENDPOINT"):
        return _rgw()
    if "backend" not in _state:
        from conftest import ADMIN_TOKEN, binary
        sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fleet"))
        from blobtier import TierBackend
        backend = TierBackend(binary("cairnd"), _workdir(), ADMIN_TOKEN, bucket=BUCKET)
        _state["backend"] = backend
        backend.start()
        _state.update(endpoint=backend.endpoint, creds=backend.creds)
    return _state["endpoint"], _state["creds"]


def server_args(data_dir, args):
    """The flags a server on data_dir with args gets in fleet mode (none
    when the test chose its engines itself)."""
    extra = []
    if "--meta" not in args:
        extra += ["--meta", meta_uri(data_dir)]
        if "--identity-key" not in args:
            extra += ["--identity-key", identity_key()]
    if BLOBS == "s3" and "--blob-store" not in args:
        endpoint, creds = _backend()
        prefix = urllib.parse.urlsplit(meta_uri(data_dir)).path.lstrip("/")
        bucket = _state.get("bucket", BUCKET)
        extra += ["--blob-store", "s3://%s/%s" % (bucket, prefix), "--blob-endpoint", endpoint,
                  "--blob-credentials", creds]
    return extra


def command_env(args):
    """The environment a command gets in fleet mode: `cairn admin --data DIR`
    (and the tests' objects_admin DIR) reads the database of the server on
    DIR (CAIRN_META; made now if that
    server has not started yet, so the server finds what the command wrote)
    and the run's key."""
    args = [str(a) for a in args]
    if active() and len(args) > 1 and os.path.basename(args[0]) == "objects_admin":
        # tests/objects/objects_admin DATA ...: the service over DIR's metadata
        return {"CAIRN_META": meta_uri(args[1])}
    if not active() or len(args) < 2 or os.path.basename(args[0]) != "cairn" \
            or args[1] != "admin" or "--data" not in args or "--meta" in args:
        return {}
    i = args.index("--data")
    if i + 1 >= len(args):
        return {}
    return {"CAIRN_META": meta_uri(args[i + 1]), "CAIRN_IDENTITY_KEY": identity_key()}
