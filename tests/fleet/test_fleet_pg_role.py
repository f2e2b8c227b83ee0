"""A fleet whose PostgreSQL role is no superuser (issue 24: "the role needs
no superuser rights, only ownership of its database").  The harness's own
role `cairn` is the cluster's superuser, so every other fleet test would
pass on a cairnd that needed those rights; here two nodes run as a role
made with NOSUPERUSER NOCREATEDB NOCREATEROLE that owns only its database,
and every piece that could want more is used through them: the schema
steps of every component (migrated under the advisory lock), the job
leases (advisory locks) and their listing (pg_locks, pg_stat_activity),
LISTEN/NOTIFY (a revoked token refused by the other node), sequences, the
S3, blob and Scribe faces, and `cairn admin --meta`."""
import os
import sys
import time

from botocore.exceptions import ClientError

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "blobops"))
from fleetutil import Fleet, accepted, needs_pg, pg  # noqa: E402,F401
from blobsclient import Ops, b3  # noqa: E402
from cairnutil import repo, scribe_ep  # noqa: E402
from conftest import binary, run  # noqa: E402
import pgharness  # noqa: E402

pytestmark = needs_pg

ROLE = "plainrole"
DB = "plaindb"


def test_a_role_without_superuser_rights(pg, tmp_path):
    pg.psql("CREATE ROLE %s LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE" % ROLE)
    pg.psql('CREATE DATABASE "%s" OWNER %s STRATEGY = FILE_COPY' % (DB, ROLE))
    assert pg.psql("SELECT rolsuper, rolcreatedb, rolcreaterole FROM pg_roles"
                   " WHERE rolname = '%s'" % ROLE).split() == ["f|f|f"]
    uri = pg.uri_for(DB).replace("user=%s" % pgharness.ROLE, "user=%s" % ROLE)
    assert "user=%s" % ROLE in uri
    f = Fleet(pg, tmp_path, None, count=2, uri=uri)
    try:
        admin = [binary("cairn"), "admin", "--meta", uri, "--identity-key", str(f.key)]
        r = run(admin + ["account", "create", "rita"])
        assert r.returncode == 0, r.stderr
        r = run(admin + ["token", "create", "--account", "rita", "--perm", "all"])
        assert r.returncode == 0, r.stderr
        cred = r.stdout.strip().splitlines()[-1].split(":")
        # S3 through one node, read through the other
        a, b = (n.client(*cred) for n in f.nodes)
        a.create_bucket(Bucket="plain")
        body = os.urandom(70000)
        a.put_object(Bucket="plain", Key="k", Body=body)
        assert b.get_object(Bucket="plain", Key="k")["Body"].read() == body
        # blob operations
        ops = [Ops(n.server) for n in f.nodes]
        data = os.urandom(5000)
        st, _ = ops[0].put("plain/ns", data)
        assert st == 200
        assert ops[1].have("plain/ns", [b3(data)]) == [True]
        # Scribe: a repository made through one node, cloned through the other
        repo(scribe_ep(f.nodes[0].server), "create", "plainrepo")
        ws = str(tmp_path / "ws")
        repo(scribe_ep(f.nodes[1].server), "clone", "plainrepo", ws)
        with open(os.path.join(ws, "a.txt"), "wb") as fh:
            fh.write(b"no superuser\n")
        repo(scribe_ep(f.nodes[1].server), "submit", ws, "-m", "first")
        # the job leases are held, and listed, as this role
        deadline = time.monotonic() + 15
        while True:
            r = run(admin + ["fleet", "status"])
            assert r.returncode == 0, r.stderr
            held = [ln.split("\t")[1] for ln in r.stdout.splitlines()
                    if ln.startswith("lease:blob-sweep")]
            if held and held[0] in ("n0", "n1"):
                break
            assert time.monotonic() < deadline, r.stdout
            time.sleep(0.2)
        # LISTEN/NOTIFY: a token revoked through the admin tool is refused
        # by both nodes within the fleet's bound
        assert accepted(f.nodes[1], cred)
        r = run(admin + ["token", "revoke", cred[0]])
        assert r.returncode == 0, r.stderr
        deadline = time.monotonic() + 2.5
        while any(accepted(n, cred) for n in f.nodes):
            assert time.monotonic() < deadline, "revocation not seen as a plain role"
            time.sleep(0.1)
        try:
            b.list_buckets()
            raise AssertionError("a revoked token still served")
        except ClientError as e:
            assert e.response["Error"]["Code"] in ("InvalidAccessKeyId", "AccessDenied")
        # every component migrated, as this role
        owners = pg.psql("SELECT DISTINCT tableowner FROM pg_tables WHERE schemaname = 'public'",
                         db=DB).split()
        assert owners == [ROLE], owners
    finally:
        bad = f.stop()
        assert not bad, bad[0][-4000:]
