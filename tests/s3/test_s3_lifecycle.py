"""The lifecycle worker and x-amz-expiration through the real server (issue
25), on cairnd --lifecycle-day-seconds 2 (a day is 2 s, unrounded; the worker
wakes every second): Expiration by Days on an unversioned bucket (gone) and on
a versioned one (a delete marker), filters by prefix, tag, sizes and And, a
rule lengthened before expiry keeping its object, ExpiredObjectDeleteMarker,
NoncurrentVersionExpiration with NewerNoncurrentVersions, locked versions
surviving, AbortIncompleteMultipartUpload, the x-amz-expiration header on
PUT / GET / HEAD following a changed rule, and kill -9 mid-pass resuming
from the persisted cursor at the --lifecycle-max-ops rate.

Each test has its own bucket; the slow ones are independent, so
`pytest -n auto` (python3-pytest-xdist) runs them side by side."""
import email.utils
import os
import sqlite3
import sys
import time

import pytest
import requests
from botocore.exceptions import ClientError

from conftest import Server, assert_no_sanitizer, binary, run
from s3fixtures import S3Server, s3_args, unique

DAY = 2  # seconds: --lifecycle-day-seconds


def start(tmp_path_factory, extra=()):
    d = tmp_path_factory.mktemp("lc")
    srv = Server(d / "data", args=s3_args(["--lifecycle-day-seconds", str(DAY)] + list(extra)))
    srv.start(wait_for=("jay", "http"))
    return srv


def clean(srv):
    srv.stop()
    out = srv.output()
    assert_no_sanitizer(out)


@pytest.fixture(scope="module")
def lcsrv(tmp_path_factory):
    srv = start(tmp_path_factory)
    yield S3Server(srv)
    clean(srv)


@pytest.fixture
def s3(lcsrv):
    return lcsrv.client()


def new_bucket(s3, **kw):
    name = unique("lc")
    s3.create_bucket(Bucket=name, **kw)
    return name


def rules(s3, b, *rs):
    s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": list(rs)})


def exists(s3, b, k):
    try:
        s3.head_object(Bucket=b, Key=k)
        return True
    except ClientError as e:
        assert e.response["Error"]["Code"] in ("404", "NoSuchKey")
        return False


def wait_for(pred, timeout=12.0):
    """Polls pred until true (returns True) or timeout (returns False)."""
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(0.25)
    return pred()


def versions(s3, b, key):
    r = s3.list_object_versions(Bucket=b, Prefix=key)
    out = [(v["VersionId"], False, v["IsLatest"]) for v in r.get("Versions", []) if v["Key"] == key]
    out += [(m["VersionId"], True, m["IsLatest"]) for m in r.get("DeleteMarkers", [])
            if m["Key"] == key]
    return out


def test_startup_warns_about_test_days(lcsrv):
    assert "--lifecycle-day-seconds 2" in lcsrv.server.output()


@pytest.mark.parametrize("flags,config,says", [
    (["--lifecycle-max-ops", "0"], None, "--lifecycle-max-ops wants an integer from 1"),
    (["--lifecycle-interval", "2x"], None, "--lifecycle-interval wants seconds"),
    (["--lifecycle-day-seconds", "-1"], None, "--lifecycle-day-seconds wants"),
    ([], 'lifecycle_max_ops = "many"', "--lifecycle-max-ops wants an integer"),
    ([], "lifecycle_bogus = 1", "unknown key 'lifecycle_bogus' in [objects]"),
])
def test_bad_lifecycle_settings_stop_cairnd(tmp_path, flags, config, says):
    if config:
        (tmp_path / "c.toml").write_text("[objects]\n%s\n" % config)
        flags = flags + ["--config", str(tmp_path / "c.toml")]
    r = run([binary("cairnd"), "--data", str(tmp_path / "d")] + s3_args(flags), timeout=60)
    # a usage error (status 2), found before anything opens
    assert r.returncode == 2 and says in r.stdout + r.stderr, r.stdout + r.stderr
    assert not (tmp_path / "d").exists()


def test_config_section_sets_the_worker(tmp_path):
    (tmp_path / "c.toml").write_text('[objects]\nlifecycle_interval = "90m"\n'
                                     "lifecycle_max_ops = 5\nlifecycle_day_seconds = 2\n")
    srv = Server(tmp_path / "d", args=s3_args(["--config", str(tmp_path / "c.toml")]))
    srv.start(wait_for=("jay", "http"))
    try:
        assert "a lifecycle day is 2 s" in srv.output()
        s3 = S3Server(srv).client()
        b = new_bucket(s3)
        s3.put_object(Bucket=b, Key="a", Body=b"x")
        rules(s3, b, {"ID": "all", "Filter": {}, "Status": "Enabled", "Expiration": {"Days": 1}})
        assert wait_for(lambda: not exists(s3, b, "a"))
    finally:
        clean(srv)


def test_expiration_days_removes_matching_objects(s3):
    b = new_bucket(s3)
    s3.put_object(Bucket=b, Key="tmp/a", Body=b"x")
    s3.put_object(Bucket=b, Key="keep/b", Body=b"y")
    rules(s3, b, {"ID": "tmp", "Filter": {"Prefix": "tmp/"}, "Status": "Enabled",
                  "Expiration": {"Days": 1}})
    assert wait_for(lambda: not exists(s3, b, "tmp/a"))
    assert exists(s3, b, "keep/b")
    # Unversioned: removed for good, no marker left behind.
    assert versions(s3, b, "tmp/a") == []


def test_disabled_rule_and_filters(s3):
    b = new_bucket(s3)
    s3.put_object(Bucket=b, Key="f/match", Body=b"0123456789", Tagging="k=v")
    s3.put_object(Bucket=b, Key="f/notag", Body=b"0123456789")
    s3.put_object(Bucket=b, Key="f/small", Body=b"01", Tagging="k=v")
    s3.put_object(Bucket=b, Key="f/wrongval", Body=b"0123456789", Tagging="k=w")
    s3.put_object(Bucket=b, Key="g/match", Body=b"0123456789", Tagging="k=v")
    s3.put_object(Bucket=b, Key="s/small", Body=b"01")
    s3.put_object(Bucket=b, Key="s/big", Body=b"0123456789")
    s3.put_object(Bucket=b, Key="t/tagged", Body=b"x", Tagging="tmp=yes")
    s3.put_object(Bucket=b, Key="d/off", Body=b"x")
    rules(s3, b,
          {"ID": "and", "Status": "Enabled", "Expiration": {"Days": 1},
           "Filter": {"And": {"Prefix": "f/", "Tags": [{"Key": "k", "Value": "v"}],
                              "ObjectSizeGreaterThan": 3}}},
          {"ID": "g-other", "Status": "Enabled", "Expiration": {"Days": 1},
           "Filter": {"Prefix": "g/other"}},
          {"ID": "small", "Status": "Enabled", "Expiration": {"Days": 1},
           "Filter": {"And": {"Prefix": "s/", "ObjectSizeLessThan": 5}}},
          {"ID": "tag", "Status": "Enabled", "Expiration": {"Days": 1},
           "Filter": {"Tag": {"Key": "tmp", "Value": "yes"}}},
          {"ID": "off", "Status": "Disabled", "Expiration": {"Days": 1},
           "Filter": {"Prefix": "d/"}})
    gone = ["f/match", "s/small", "t/tagged"]
    kept = ["f/notag", "f/small", "f/wrongval", "g/match", "s/big", "d/off"]
    assert wait_for(lambda: not any(exists(s3, b, k) for k in gone))
    time.sleep(DAY)  # another pass or two: the others stay
    assert [k for k in kept if not exists(s3, b, k)] == []


def test_lengthened_rule_keeps_object(s3):
    b = new_bucket(s3)
    s3.put_object(Bucket=b, Key="obj", Body=b"x")
    rules(s3, b, {"ID": "short", "Filter": {}, "Status": "Enabled", "Expiration": {"Days": 2}})
    time.sleep(1)
    rules(s3, b, {"ID": "long", "Filter": {}, "Status": "Enabled", "Expiration": {"Days": 30}})
    time.sleep(2 * DAY + 2)  # past the first rule's expiry, and a pass or more
    assert exists(s3, b, "obj")
    # Deleting the configuration keeps it too; nothing was stamped at PUT.
    s3.delete_bucket_lifecycle(Bucket=b)
    assert exists(s3, b, "obj")


def expiration(resp):
    return resp["ResponseMetadata"]["HTTPHeaders"].get("x-amz-expiration")


def test_expiration_header_follows_rule(s3):
    b = new_bucket(s3)
    s3.put_object(Bucket=b, Key="plain", Body=b"x")
    rules(s3, b, {"ID": "r-one", "Filter": {"Prefix": "e/"}, "Status": "Enabled",
                  "Expiration": {"Days": 100}})
    put = s3.put_object(Bucket=b, Key="e/a", Body=b"hello")
    assert 'rule-id="r-one"' in (expiration(put) or "")
    head = s3.head_object(Bucket=b, Key="e/a")
    h = expiration(head)
    assert h and h.startswith('expiry-date="') and h.endswith('rule-id="r-one"')
    date = h.split('"')[1]
    exp = email.utils.parsedate_to_datetime(date).timestamp()
    lm = head["LastModified"].timestamp()
    assert abs(exp - (lm + 100 * DAY)) <= 1.5, (date, head["LastModified"])
    # GET answers it too, also when the second one is served from the caches.
    for _ in range(2):
        g = s3.get_object(Bucket=b, Key="e/a")
        g["Body"].read()
        assert expiration(g) == h
    assert expiration(s3.head_object(Bucket=b, Key="plain")) is None
    # A changed rule governs the stored object at once.
    rules(s3, b, {"ID": "r-two", "Filter": {"Prefix": "e/"}, "Status": "Enabled",
                  "Expiration": {"Date": "2031-01-01T00:00:00Z"}})
    for _ in range(2):
        g = s3.get_object(Bucket=b, Key="e/a")
        g["Body"].read()
        assert expiration(g) == 'expiry-date="Wed, 01 Jan 2031 00:00:00 GMT", rule-id="r-two"'
    s3.delete_bucket_lifecycle(Bucket=b)
    assert expiration(s3.head_object(Bucket=b, Key="e/a")) is None


def test_versioned_bucket_expiration_marker_noncurrent(s3):
    b = new_bucket(s3)
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    e1 = s3.put_object(Bucket=b, Key="e/x", Body=b"1")["VersionId"]
    n = [s3.put_object(Bucket=b, Key="n/y", Body=b"%d" % i)["VersionId"] for i in range(3)]
    m = s3.put_object(Bucket=b, Key="m/z", Body=b"z")["VersionId"]
    s3.delete_object(Bucket=b, Key="m/z", VersionId=m)
    s3.delete_object(Bucket=b, Key="m/z")  # a marker, the key's only version
    s3.put_object(Bucket=b, Key="m/keep", Body=b"k")
    s3.delete_object(Bucket=b, Key="m/keep")  # a marker over a version: stays
    rules(s3, b,
          {"ID": "exp", "Filter": {"Prefix": "e/"}, "Status": "Enabled",
           "Expiration": {"Days": 1}},
          {"ID": "nc", "Filter": {"Prefix": "n/"}, "Status": "Enabled",
           "NoncurrentVersionExpiration": {"NoncurrentDays": 1, "NewerNoncurrentVersions": 1}},
          {"ID": "mk", "Filter": {"Prefix": "m/"}, "Status": "Enabled",
           "Expiration": {"ExpiredObjectDeleteMarker": True}})

    def expired():
        v = versions(s3, b, "e/x")
        return any(mk and latest for _, mk, latest in v)
    assert wait_for(expired)
    v = versions(s3, b, "e/x")
    # The version stays, noncurrent, under the marker (no noncurrent rule on e/).
    assert (e1, False, False) in v and len(v) == 2
    # n/y: the newest noncurrent version is kept, the older one removed.
    assert wait_for(lambda: sorted(x[0] for x in versions(s3, b, "n/y")) == sorted(n[1:]))
    assert wait_for(lambda: versions(s3, b, "m/z") == [])
    assert len(versions(s3, b, "m/keep")) == 2


def test_locked_versions_survive(s3):
    b = new_bucket(s3, ObjectLockEnabledForBucket=True)
    until = time.time() + 3600
    import datetime
    locked = s3.put_object(Bucket=b, Key="lk", Body=b"L", ObjectLockMode="GOVERNANCE",
                           ObjectLockRetainUntilDate=datetime.datetime.fromtimestamp(
                               until, datetime.timezone.utc))["VersionId"]
    held = s3.put_object(Bucket=b, Key="hold", Body=b"H", ObjectLockLegalHoldStatus="ON")
    free = s3.put_object(Bucket=b, Key="free", Body=b"F")["VersionId"]
    rules(s3, b, {"ID": "all", "Filter": {}, "Status": "Enabled", "Expiration": {"Days": 1},
                  "NoncurrentVersionExpiration": {"NoncurrentDays": 1}})
    # free: marked, then its noncurrent version removed for good.
    assert wait_for(lambda: free not in [x[0] for x in versions(s3, b, "free")], 15)
    # The locked ones were marked too (a plain delete is allowed under a
    # lock), but their versions stay through later passes.
    time.sleep(DAY)
    assert locked in [x[0] for x in versions(s3, b, "lk")]
    assert held["VersionId"] in [x[0] for x in versions(s3, b, "hold")]
    assert any(mk and latest for _, mk, latest in versions(s3, b, "lk"))


def test_abort_incomplete_uploads(s3):
    b = new_bucket(s3)
    ua = s3.create_multipart_upload(Bucket=b, Key="u/a")["UploadId"]
    s3.upload_part(Bucket=b, Key="u/a", UploadId=ua, PartNumber=1, Body=b"p")
    ub = s3.create_multipart_upload(Bucket=b, Key="v/b")["UploadId"]
    rules(s3, b, {"ID": "ab", "Filter": {"Prefix": "u/"}, "Status": "Enabled",
                  "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}})

    def ids():
        return [u["UploadId"] for u in s3.list_multipart_uploads(Bucket=b).get("Uploads", [])]
    assert wait_for(lambda: ua not in ids())
    assert ub in ids()
    with pytest.raises(ClientError) as e:
        s3.list_parts(Bucket=b, Key="u/a", UploadId=ua)
    assert e.value.response["Error"]["Code"] == "NoSuchUpload"


def count(s3, b):
    return s3.list_objects_v2(Bucket=b, MaxKeys=1000).get("KeyCount", 0)


def db_rows(data_dir, sql, *args):
    """Rows of the server's SQLite metadata (read only: the server is down)."""
    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(data_dir, "meta.db"), uri=True)
    try:
        return db.execute(sql, args).fetchall()
    finally:
        db.close()


def lc_state(data_dir, bucket):
    return db_rows(data_dir, "SELECT l.pass_ms, l.cursor FROM obj_lifecycle l JOIN obj_bucket b "
                   "ON b.bucket_id = l.bucket_id WHERE b.name = ?", bucket)[0]


def test_kill9_mid_pass_resumes_at_rate(tmp_path_factory):
    ops = 20
    srv = start(tmp_path_factory, ["--lifecycle-max-ops", str(ops)])
    try:
        s3 = S3Server(srv).client()
        b = new_bucket(s3)
        # Enough keys that the capped pass outlasts the checks below on a
        # loaded machine (400 at 20 a second: 20 s), so the kill lands mid-pass.
        keys = ["k%04d" % i for i in range(400)]
        for k in keys:
            s3.put_object(Bucket=b, Key=k, Body=b"x")
        rules(s3, b, {"ID": "all", "Filter": {}, "Status": "Enabled", "Expiration": {"Days": 1}})
        # The pass starts within a day and a tick; then count the rate.
        assert wait_for(lambda: count(s3, b) < len(keys), 3 * DAY + 2)
        # The window spans both listings: the rate is never overstated.
        # A window of at least 3 s, longer (to 15 s) until progress shows, so a
        # stalled moment of a loaded machine is not taken for no progress.
        t0 = time.time()
        c0 = count(s3, b)
        time.sleep(3)
        c1 = count(s3, b)
        while c1 == c0 and time.time() - t0 < 15:
            time.sleep(0.5)
            c1 = count(s3, b)
        rate = (c0 - c1) / (time.time() - t0)
        assert 0 < rate <= ops * 1.5, rate  # loosely: the cap, and progress
        srv.kill9()
        left = count_keys_in_db(srv.data_dir, b)
        assert 0 < left < len(keys)
        pass_ms, cursor = lc_state(srv.data_dir, b)
        assert cursor is not None and cursor != b""  # mid-pass, persisted
        cur = text(cursor)
        # Everything up to the cursor is gone; at most a batch beyond it too.
        remaining = remaining_keys_in_db(srv.data_dir, b)
        assert all(k > cur for k in remaining)
        assert len([k for k in keys if k > cur]) - len(remaining) <= ops
        srv.start(wait_for=("jay", "http"))
        s3 = S3Server(srv).client()
        assert wait_for(lambda: count(s3, b) == 0, 60)  # ≤ 400 keys at 20 a second
        assert "resuming the pass after key %s" % cur in srv.output(srv.log_offset)
    finally:
        clean(srv)


def remaining_keys_in_db(data_dir, bucket):
    rows = db_rows(data_dir, "SELECT v.okey FROM obj_version v JOIN obj_bucket b "
                   "ON b.bucket_id = v.bucket_id WHERE b.name = ?", bucket)
    return sorted(text(r[0]) for r in rows)


def text(v):
    return v if isinstance(v, str) else bytes(v).decode()


def count_keys_in_db(data_dir, bucket):
    return len(remaining_keys_in_db(data_dir, bucket))


# ---- one runner per fleet (PostgreSQL) ----------------------------------------------------
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "fleet"))
import pgharness  # noqa: E402


def lc_actions(srv):
    """The node's lifecycle actions (every kind), from its metrics."""
    text = requests.get(srv.endpoint + "/_cairn/metrics", timeout=30).text
    return sum(float(line.split()[-1]) for line in text.splitlines()
               if line.startswith("cairn_objects_lifecycle_actions_total{"))


@pytest.mark.skipif(not pgharness.available(), reason="PostgreSQL 15 server binaries not installed")
def test_one_runner_per_fleet_on_postgres(tmp_path):
    from conftest import ADMIN_TOKEN
    with pgharness.PgCluster() as pg:
        uri = pg.create_db("lc_" + "".join(c for c in tmp_path.name if c.isalnum()))
        key = tmp_path / "fleet.key"
        key.write_text(os.urandom(32).hex() + "\n")
        key.chmod(0o600)
        nodes = []
        try:
            for name in ("a", "b"):
                args = s3_args(["--meta", uri, "--identity-key", str(key),
                                "--lifecycle-day-seconds", str(DAY)])
                srv = Server(tmp_path / name, args=args, env={"CAIRN_ADMIN_TOKEN": ADMIN_TOKEN})
                nodes.append(S3Server(srv.start(wait_for=("http", "jay"))))
            s3 = nodes[0].client()
            b = new_bucket(s3)
            keys = ["k%02d" % i for i in range(30)]
            for k in keys:
                s3.put_object(Bucket=b, Key=k, Body=b"x")
            s3.put_object(Bucket=b, Key="keep/x", Body=b"x")
            other = nodes[1].client()  # blobs are each node's own: b writes rules only

            def put_rules(long_id):
                rules(other, b, {"ID": "all", "Filter": {"Prefix": "k0"}, "Status": "Enabled",
                              "Expiration": {"Days": 1}},
                      {"ID": "r1", "Filter": {"Prefix": "k1"}, "Status": "Enabled",
                       "Expiration": {"Days": 1}},
                      {"ID": "r2", "Filter": {"Prefix": "k2"}, "Status": "Enabled",
                       "Expiration": {"Days": 1}},
                      {"ID": long_id, "Filter": {"Prefix": "keep/"}, "Status": "Enabled",
                       "Expiration": {"Days": 100}})
            # x-amz-expiration here follows a rule the other node changed.
            for long_id in ("long", "long2"):
                put_rules(long_id)
                h = s3.head_object(Bucket=b, Key="keep/x")
                assert 'rule-id="%s"' % long_id in expiration(h)
            assert wait_for(lambda: count(s3, b) == 1, 20)
            acts = [lc_actions(n) for n in nodes]
            # Exactly one node acted (the lease holder), once per key.
            assert sorted(acts) == [0, len(keys)], acts
        finally:
            for n in nodes:
                clean(n.server)


def test_bucket_policy_deny_does_not_stop_lifecycle(s3):
    """A policy denying everyone s3:DeleteObject binds clients, not the
    server's own lifecycle worker (as with S3)."""
    import json
    b = new_bucket(s3)
    s3.put_object(Bucket=b, Key="tmp/a", Body=b"x")
    s3.put_bucket_policy(Bucket=b, Policy=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Deny", "Principal": "*", "Action": "s3:DeleteObject",
                       "Resource": "arn:aws:s3:::%s/*" % b}]}))
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket=b, Key="tmp/a")
    assert e.value.response["Error"]["Code"] == "AccessDenied"
    rules(s3, b, {"ID": "tmp", "Filter": {"Prefix": "tmp/"}, "Status": "Enabled",
                  "Expiration": {"Days": 1}})
    assert wait_for(lambda: not exists(s3, b, "tmp/a"))


def test_expiration_header_on_copy_and_complete(s3):
    b = new_bucket(s3)
    rules(s3, b, {"ID": "r-c", "Filter": {"Prefix": "e/"}, "Status": "Enabled",
                  "Expiration": {"Date": "2031-01-01T00:00:00Z"}})
    want = 'expiry-date="Wed, 01 Jan 2031 00:00:00 GMT", rule-id="r-c"'
    s3.put_object(Bucket=b, Key="src", Body=b"x")
    assert expiration(s3.copy_object(Bucket=b, Key="e/c", CopySource={"Bucket": b,
                                                                      "Key": "src"})) == want
    assert expiration(s3.copy_object(Bucket=b, Key="other", CopySource={"Bucket": b,
                                                                        "Key": "src"})) is None
    up = s3.create_multipart_upload(Bucket=b, Key="e/m")["UploadId"]
    etag = s3.upload_part(Bucket=b, Key="e/m", UploadId=up, PartNumber=1, Body=b"p")["ETag"]
    done = s3.complete_multipart_upload(Bucket=b, Key="e/m", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": etag}]})
    assert expiration(done) == want


def test_bucket_delete_drops_worker_state(lcsrv, s3):
    b = new_bucket(s3)
    s3.put_object(Bucket=b, Key="t/a", Body=b"x")
    rules(s3, b, {"ID": "t", "Filter": {"Prefix": "t/"}, "Status": "Enabled",
                  "Expiration": {"Days": 1}})
    assert wait_for(lambda: not exists(s3, b, "t/a"))
    bid = db_rows(lcsrv.data_dir, "SELECT bucket_id FROM obj_bucket WHERE name = ?", b)[0][0]
    state = "SELECT 1 FROM obj_lifecycle WHERE bucket_id = ?"
    assert wait_for(lambda: db_rows(lcsrv.data_dir, state, bid) != [])
    # No rule left, so no pass starts on it; one running ends within a tick.
    s3.delete_bucket_lifecycle(Bucket=b)
    time.sleep(1.0)
    s3.delete_bucket(Bucket=b)
    assert db_rows(lcsrv.data_dir, state, bid) == []
