"""S3 Object Lock through the real server (issue 25): CreateBucket with
object lock enabled, Put/GetObjectLockConfiguration and their errors,
Put/GetObjectRetention and Put/GetObjectLegalHold (current version and
?versionId) with the extend / shorten / bypass / COMPLIANCE rules, the
x-amz-object-lock-* headers of a write and their echo on GET/HEAD, the
permissions (bucket:configure, object:lock, object:bypass-governance), and
the removal rule: a locked version is never removed for good.

The codes are the ones ceph/s3-tests' object-lock tests expect.  Tests that
need the versioning work's calls (PutBucketVersioning, version ids on PUT,
DELETE ?versionId, the write path honouring the lock headers) skip with that
reason while the running server does not answer them yet."""
import datetime

import pytest
from botocore.exceptions import ClientError

from s3fixtures import s3, s3srv, unique  # noqa: F401

UTC = datetime.timezone.utc


def err(exc):
    r = exc.value.response
    return r["ResponseMetadata"]["HTTPStatusCode"], r["Error"]["Code"]


def future(**kw):
    """A retain-until date in the future, whole seconds (S3 answers ms)."""
    d = datetime.datetime.now(UTC) + datetime.timedelta(**kw)
    return d.replace(microsecond=0)


def lock_bucket(s3, prefix="lock"):
    b = unique(prefix)
    s3.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
    return b


def plain_bucket(s3, prefix="plain"):
    b = unique(prefix)
    s3.create_bucket(Bucket=b)
    return b


GOV_1D = {"ObjectLockEnabled": "Enabled",
          "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}}}
COMP_1Y = {"ObjectLockEnabled": "Enabled",
           "Rule": {"DefaultRetention": {"Mode": "COMPLIANCE", "Years": 1}}}


# ---- what the versioning work provides (skip until the server has it) --------------------

def _answers(call):
    try:
        call()
    except ClientError as e:
        if e.response["Error"]["Code"] == "NotImplemented":
            return False
        raise
    return True


@pytest.fixture(scope="module")
def has_versioning(s3srv):
    s3 = s3srv.client()
    b = plain_bucket(s3, "probe")
    return _answers(lambda: s3.put_bucket_versioning(
        Bucket=b, VersioningConfiguration={"Status": "Enabled"}))


@pytest.fixture(scope="module")
def has_version_ids(s3srv):
    """PUT into a lock bucket answers a version id and DELETE ?versionId works."""
    s3 = s3srv.client()
    b = lock_bucket(s3, "probe")
    vid = s3.put_object(Bucket=b, Key="k", Body=b"x").get("VersionId")
    if not vid or vid == "null":
        return False
    return _answers(lambda: s3.delete_object(Bucket=b, Key="k", VersionId=vid))


@pytest.fixture(scope="module")
def has_lock_headers(s3srv):
    """PutObject takes the x-amz-object-lock-* headers (the write path calls
    cn__s3_lock_hdrs) instead of refusing them as unsupported."""
    s3 = s3srv.client()
    b = lock_bucket(s3, "probe")
    return _answers(lambda: s3.put_object(Bucket=b, Key="k", Body=b"x",
                                          ObjectLockLegalHoldStatus="OFF"))


def need(flag, what):
    if not flag:
        pytest.skip("needs the versioning work's %s in the server (not answered yet)" % what)


# ---- CreateBucket and the bucket configuration -------------------------------------------

def test_create_bucket_with_lock(s3srv, s3):
    b = lock_bucket(s3)
    assert s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"] == {
        "ObjectLockEnabled": "Enabled"}
    # Without the header: no configuration at all.
    p = plain_bucket(s3)
    with pytest.raises(ClientError) as e:
        s3.get_object_lock_configuration(Bucket=p)
    assert err(e) == (404, "ObjectLockConfigurationNotFoundError")


def test_create_bucket_with_lock_versioning_enabled(s3srv, s3, has_versioning):
    need(has_versioning, "GetBucketVersioning")
    b = lock_bucket(s3)
    assert s3.get_bucket_versioning(Bucket=b)["Status"] == "Enabled"
    # Object lock keeps versioning on: suspending it is refused.
    with pytest.raises(ClientError) as e:
        s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Suspended"})
    assert err(e) == (409, "InvalidBucketState")


def test_lock_config_roundtrip(s3srv, s3):
    b = lock_bucket(s3)
    assert s3.put_object_lock_configuration(
        Bucket=b, ObjectLockConfiguration=GOV_1D)["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"] == GOV_1D
    s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=COMP_1Y)
    assert s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"] == COMP_1Y
    # A configuration without a rule drops the default retention, never the lock.
    s3.put_object_lock_configuration(Bucket=b,
                                     ObjectLockConfiguration={"ObjectLockEnabled": "Enabled"})
    assert s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"] == {
        "ObjectLockEnabled": "Enabled"}


@pytest.mark.parametrize("conf,code", [
    ({"Mode": "GOVERNANCE", "Days": 1, "Years": 1}, "MalformedXML"),
    ({"Mode": "GOVERNANCE"}, "MalformedXML"),
    ({"Mode": "GOVERNANCE", "Days": 0}, "InvalidRetentionPeriod"),
    ({"Mode": "GOVERNANCE", "Days": -3}, "InvalidRetentionPeriod"),
    ({"Mode": "GOVERNANCE", "Years": -1}, "InvalidRetentionPeriod"),
    ({"Mode": "COMPLIANCE", "Years": 101}, "InvalidRetentionPeriod"),
    ({"Mode": "abc", "Years": 1}, "MalformedXML"),
    ({"Mode": "governance", "Years": 1}, "MalformedXML"),
])
def test_lock_config_errors(s3srv, s3, conf, code):
    b = lock_bucket(s3)
    with pytest.raises(ClientError) as e:
        s3.put_object_lock_configuration(
            Bucket=b, ObjectLockConfiguration={"ObjectLockEnabled": "Enabled",
                                               "Rule": {"DefaultRetention": conf}})
    assert err(e) == (400, code)
    # Nothing changed.
    assert s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"] == {
        "ObjectLockEnabled": "Enabled"}


def test_lock_config_status_must_be_enabled(s3srv, s3):
    b = lock_bucket(s3)
    with pytest.raises(ClientError) as e:
        s3.put_object_lock_configuration(
            Bucket=b, ObjectLockConfiguration={"ObjectLockEnabled": "Disabled",
                                               "Rule": GOV_1D["Rule"]})
    assert err(e) == (400, "MalformedXML")
    r = s3srv.signed("PUT", "/%s?object-lock" % b, body=b"<ObjectLockConfiguration/>")
    assert r.status_code == 400 and b"MalformedXML" in r.content
    r = s3srv.signed("PUT", "/%s?object-lock" % b, body=b"not xml")
    assert r.status_code == 400 and b"MalformedXML" in r.content


def test_lock_config_needs_versioning_enabled(s3srv, s3, has_versioning):
    b = plain_bucket(s3)
    with pytest.raises(ClientError) as e:
        s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=GOV_1D)
    assert err(e) == (409, "InvalidBucketState")
    need(has_versioning, "PutBucketVersioning")
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Suspended"})
    with pytest.raises(ClientError) as e:
        s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=GOV_1D)
    assert err(e) == (409, "InvalidBucketState")
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=GOV_1D)
    assert s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"] == GOV_1D


def test_lock_config_missing_bucket(s3srv, s3):
    with pytest.raises(ClientError) as e:
        s3.get_object_lock_configuration(Bucket=unique("nobkt"))
    assert err(e) == (404, "NoSuchBucket")
    with pytest.raises(ClientError) as e:
        s3.put_object_lock_configuration(Bucket=unique("nobkt"), ObjectLockConfiguration=GOV_1D)
    assert err(e) == (404, "NoSuchBucket")


# ---- retention ------------------------------------------------------------------------------

def test_retention_roundtrip_and_extend(s3srv, s3):
    b = lock_bucket(s3)
    s3.put_object(Bucket=b, Key="k", Body=b"abc")
    with pytest.raises(ClientError) as e:
        s3.get_object_retention(Bucket=b, Key="k")
    assert err(e) == (404, "NoSuchObjectLockConfiguration")
    r1 = {"Mode": "GOVERNANCE", "RetainUntilDate": future(days=2)}
    assert s3.put_object_retention(Bucket=b, Key="k", Retention=r1)[
        "ResponseMetadata"]["HTTPStatusCode"] == 200
    assert s3.get_object_retention(Bucket=b, Key="k")["Retention"] == r1
    r2 = {"Mode": "GOVERNANCE", "RetainUntilDate": future(days=3)}
    s3.put_object_retention(Bucket=b, Key="k", Retention=r2)
    assert s3.get_object_retention(Bucket=b, Key="k")["Retention"] == r2
    # Extending into COMPLIANCE is a change of mode: it needs the bypass.
    with pytest.raises(ClientError) as e:
        s3.put_object_retention(Bucket=b, Key="k",
                                Retention={"Mode": "COMPLIANCE",
                                           "RetainUntilDate": future(days=4)})
    assert err(e) == (403, "AccessDenied")


def test_retention_shorten_needs_bypass(s3srv, s3):
    b = lock_bucket(s3)
    s3.put_object(Bucket=b, Key="k", Body=b"abc")
    long_ = {"Mode": "GOVERNANCE", "RetainUntilDate": future(days=3)}
    short = {"Mode": "GOVERNANCE", "RetainUntilDate": future(days=1)}
    s3.put_object_retention(Bucket=b, Key="k", Retention=long_)
    with pytest.raises(ClientError) as e:
        s3.put_object_retention(Bucket=b, Key="k", Retention=short)
    assert err(e) == (403, "AccessDenied")
    assert s3.get_object_retention(Bucket=b, Key="k")["Retention"] == long_
    s3.put_object_retention(Bucket=b, Key="k", Retention=short, BypassGovernanceRetention=True)
    assert s3.get_object_retention(Bucket=b, Key="k")["Retention"] == short
    # GOVERNANCE to COMPLIANCE with the bypass; then COMPLIANCE holds.
    comp = {"Mode": "COMPLIANCE", "RetainUntilDate": short["RetainUntilDate"]}
    s3.put_object_retention(Bucket=b, Key="k", Retention=comp, BypassGovernanceRetention=True)
    assert s3.get_object_retention(Bucket=b, Key="k")["Retention"] == comp


def test_retention_compliance_never_weakened(s3srv, s3):
    b = lock_bucket(s3)
    s3.put_object(Bucket=b, Key="k", Body=b"abc")
    comp = {"Mode": "COMPLIANCE", "RetainUntilDate": future(days=2)}
    s3.put_object_retention(Bucket=b, Key="k", Retention=comp)
    # The administrator's token (admin) with the bypass still cannot shorten,
    # switch to GOVERNANCE or remove it.
    for r in ({"Mode": "COMPLIANCE", "RetainUntilDate": future(days=1)},
              {"Mode": "GOVERNANCE", "RetainUntilDate": future(days=5)}):
        for bypass in (False, True):
            with pytest.raises(ClientError) as e:
                s3.put_object_retention(Bucket=b, Key="k", Retention=r,
                                        BypassGovernanceRetention=bypass)
            assert err(e) == (403, "AccessDenied")
    r = s3srv.signed("PUT", "/%s/k?retention" % b, body=b"<Retention/>",
                     headers={"x-amz-bypass-governance-retention": "true"})
    assert r.status_code == 403 and b"AccessDenied" in r.content
    assert s3.get_object_retention(Bucket=b, Key="k")["Retention"] == comp
    longer = {"Mode": "COMPLIANCE", "RetainUntilDate": future(days=9)}
    s3.put_object_retention(Bucket=b, Key="k", Retention=longer)
    assert s3.get_object_retention(Bucket=b, Key="k")["Retention"] == longer


def test_retention_remove_governance(s3srv, s3):
    b = lock_bucket(s3)
    s3.put_object(Bucket=b, Key="k", Body=b"abc")
    s3.put_object_retention(Bucket=b, Key="k",
                            Retention={"Mode": "GOVERNANCE", "RetainUntilDate": future(days=1)})
    r = s3srv.signed("PUT", "/%s/k?retention" % b, body=b"<Retention/>")
    assert r.status_code == 403 and b"AccessDenied" in r.content
    r = s3srv.signed("PUT", "/%s/k?retention" % b, body=b"<Retention/>",
                     headers={"x-amz-bypass-governance-retention": "true"})
    assert r.status_code == 200, r.content
    with pytest.raises(ClientError) as e:
        s3.get_object_retention(Bucket=b, Key="k")
    assert err(e) == (404, "NoSuchObjectLockConfiguration")


def test_retention_errors(s3srv, s3):
    b = lock_bucket(s3)
    s3.put_object(Bucket=b, Key="k", Body=b"abc")
    for mode in ("governance", "abc"):
        with pytest.raises(ClientError) as e:
            s3.put_object_retention(Bucket=b, Key="k",
                                    Retention={"Mode": mode, "RetainUntilDate": future(days=1)})
        assert err(e) == (400, "MalformedXML")
    past = datetime.datetime(2001, 1, 1, tzinfo=UTC)
    with pytest.raises(ClientError) as e:
        s3.put_object_retention(Bucket=b, Key="k",
                                Retention={"Mode": "GOVERNANCE", "RetainUntilDate": past})
    assert err(e) == (400, "InvalidArgument")
    for body in (b"<Retention><Mode>GOVERNANCE</Mode></Retention>",
                 b"<Retention><Mode>GOVERNANCE</Mode><RetainUntilDate>soon</RetainUntilDate>"
                 b"</Retention>",
                 b"<LegalHold><Status>ON</Status></LegalHold>"):
        r = s3srv.signed("PUT", "/%s/k?retention" % b, body=body)
        assert r.status_code == 400 and b"MalformedXML" in r.content, body
    with pytest.raises(ClientError) as e:
        s3.put_object_retention(Bucket=b, Key="nokey",
                                Retention={"Mode": "GOVERNANCE", "RetainUntilDate": future(days=1)})
    assert err(e) == (404, "NoSuchKey")
    with pytest.raises(ClientError) as e:
        s3.get_object_retention(Bucket=b, Key="nokey")
    assert err(e) == (404, "NoSuchKey")


def test_retention_date_forms(s3srv, s3):
    """RetainUntilDate in the ISO 8601 forms clients send: Z, fractions, offsets."""
    b = lock_bucket(s3)
    s3.put_object(Bucket=b, Key="k", Body=b"abc")
    y = datetime.datetime.now(UTC).year + 2
    for text, want in (("%d-03-04T05:06:07Z" % y, (y, 3, 4, 5, 6, 7)),
                       ("%d-03-05T05:06:07.250000Z" % y, (y, 3, 5, 5, 6, 7)),
                       ("%d-03-06T07:06:07+02:00" % y, (y, 3, 6, 5, 6, 7))):
        body = ("<Retention><Mode>GOVERNANCE</Mode><RetainUntilDate>%s</RetainUntilDate>"
                "</Retention>" % text).encode()
        r = s3srv.signed("PUT", "/%s/k?retention" % b, body=body)
        assert r.status_code == 200, r.content
        got = s3.get_object_retention(Bucket=b, Key="k")["Retention"]["RetainUntilDate"]
        assert got.timetuple()[:6] == want, text


def test_lock_ops_on_bucket_without_lock(s3srv, s3):
    b = plain_bucket(s3)
    s3.put_object(Bucket=b, Key="k", Body=b"abc")
    r = {"Mode": "GOVERNANCE", "RetainUntilDate": future(days=1)}
    for call in (lambda: s3.put_object_retention(Bucket=b, Key="k", Retention=r),
                 lambda: s3.get_object_retention(Bucket=b, Key="k"),
                 lambda: s3.put_object_legal_hold(Bucket=b, Key="k", LegalHold={"Status": "ON"}),
                 lambda: s3.get_object_legal_hold(Bucket=b, Key="k")):
        with pytest.raises(ClientError) as e:
            call()
        assert err(e) == (400, "InvalidRequest")


# ---- legal hold -----------------------------------------------------------------------------

def test_legal_hold_roundtrip(s3srv, s3):
    b = lock_bucket(s3)
    s3.put_object(Bucket=b, Key="k", Body=b"abc")
    with pytest.raises(ClientError) as e:
        s3.get_object_legal_hold(Bucket=b, Key="k")
    assert err(e) == (404, "NoSuchObjectLockConfiguration")
    assert s3.put_object_legal_hold(Bucket=b, Key="k", LegalHold={"Status": "ON"})[
        "ResponseMetadata"]["HTTPStatusCode"] == 200
    assert s3.get_object_legal_hold(Bucket=b, Key="k")["LegalHold"] == {"Status": "ON"}
    s3.put_object_legal_hold(Bucket=b, Key="k", LegalHold={"Status": "OFF"})
    # OFF with nothing else left: the version has no lock at all again.
    with pytest.raises(ClientError) as e:
        s3.get_object_legal_hold(Bucket=b, Key="k")
    assert err(e) == (404, "NoSuchObjectLockConfiguration")
    # A hold beside a retention reads OFF once lifted.
    s3.put_object_retention(Bucket=b, Key="k",
                            Retention={"Mode": "GOVERNANCE", "RetainUntilDate": future(days=1)})
    s3.put_object_legal_hold(Bucket=b, Key="k", LegalHold={"Status": "ON"})
    s3.put_object_legal_hold(Bucket=b, Key="k", LegalHold={"Status": "OFF"})
    assert s3.get_object_legal_hold(Bucket=b, Key="k")["LegalHold"] == {"Status": "OFF"}
    assert s3.get_object_retention(Bucket=b, Key="k")["Retention"]["Mode"] == "GOVERNANCE"


def test_legal_hold_errors(s3srv, s3):
    b = lock_bucket(s3)
    s3.put_object(Bucket=b, Key="k", Body=b"abc")
    with pytest.raises(ClientError) as e:
        s3.put_object_legal_hold(Bucket=b, Key="k", LegalHold={"Status": "abc"})
    assert err(e) == (400, "MalformedXML")
    for body in (b"<LegalHold/>", b"<LegalHold><Status>on</Status></LegalHold>", b"<x>"):
        r = s3srv.signed("PUT", "/%s/k?legal-hold" % b, body=body)
        assert r.status_code == 400 and b"MalformedXML" in r.content, body


# ---- permissions ------------------------------------------------------------------------------

def test_permissions(s3srv, s3):
    """object:lock sets retention and holds; bucket:create (tokens made before
    bucket:configure existed) still configures its buckets; reading needs
    object:get."""
    key, secret = s3srv.new_account("lockown", perms=[
        "bucket:create", "bucket:list", "object:get", "object:put", "object:list"])
    c = s3srv.client(key=key, secret=secret)
    b = unique("lperm")
    c.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
    c.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=GOV_1D)
    c.put_object(Bucket=b, Key="k", Body=b"abc")
    r = {"Mode": "GOVERNANCE", "RetainUntilDate": future(days=1)}
    with pytest.raises(ClientError) as e:
        c.put_object_retention(Bucket=b, Key="k", Retention=r)
    assert err(e) == (403, "AccessDenied")
    with pytest.raises(ClientError) as e:
        c.put_object_legal_hold(Bucket=b, Key="k", LegalHold={"Status": "ON"})
    assert err(e) == (403, "AccessDenied")
    # Neither bucket:create nor bucket:configure: no configuring, no locked bucket.
    key2, secret2 = s3srv.new_account("lockro", perms=["bucket:list", "object:get"])
    c2 = s3srv.client(key=key2, secret=secret2)
    with pytest.raises(ClientError) as e:
        c2.create_bucket(Bucket=unique("lro"), ObjectLockEnabledForBucket=True)
    assert err(e)[0] == 403
    # Another account is not the owner: no grant gives it lock operations.
    with pytest.raises(ClientError) as e:
        c2.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=GOV_1D)
    assert err(e) == (403, "AccessDenied")
    with pytest.raises(ClientError) as e:
        c2.get_object_retention(Bucket=b, Key="k")
    assert err(e) == (403, "AccessDenied")


def test_bucket_configure_alone(s3srv, s3):
    """A token with bucket:configure but not bucket:create configures the
    buckets its account owns."""
    key, secret = s3srv.new_account("lockcfg", perms=["bucket:create", "bucket:list"])
    owner = s3srv.client(key=key, secret=secret)
    b = unique("lcfg")
    owner.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
    cred = s3srv.admin("token", "create", "--account", "lockcfg", "--perm", "bucket:configure",
                       "--perm", "bucket:list").splitlines()[-1].strip()
    k2, s2 = cred.split(":", 1)
    cfg = s3srv.client(key=k2, secret=s2)
    cfg.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=COMP_1Y)
    assert cfg.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"] == COMP_1Y


def test_bypass_needs_permission(s3srv, s3):
    """Shortening GOVERNANCE with the bypass header needs object:bypass-governance."""
    key, secret = s3srv.new_account("lockbyp", perms=[
        "bucket:create", "bucket:list", "object:get", "object:put", "object:list",
        "object:delete", "object:lock"])
    c = s3srv.client(key=key, secret=secret)
    b = unique("lbyp")
    c.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
    c.put_object(Bucket=b, Key="k", Body=b"abc")
    c.put_object_retention(Bucket=b, Key="k",
                           Retention={"Mode": "GOVERNANCE", "RetainUntilDate": future(days=3)})
    short = {"Mode": "GOVERNANCE", "RetainUntilDate": future(days=1)}
    with pytest.raises(ClientError) as e:
        c.put_object_retention(Bucket=b, Key="k", Retention=short, BypassGovernanceRetention=True)
    assert err(e) == (403, "AccessDenied")
    cred = s3srv.admin("token", "create", "--account", "lockbyp", "--perm", "object:lock",
                       "--perm", "object:bypass-governance").splitlines()[-1].strip()
    k2, s2 = cred.split(":", 1)
    s3srv.client(key=k2, secret=s2).put_object_retention(
        Bucket=b, Key="k", Retention=short, BypassGovernanceRetention=True)
    assert c.get_object_retention(Bucket=b, Key="k")["Retention"] == short


# ---- headers of a write ---------------------------------------------------------------------

def test_write_headers_errors(s3srv, s3, has_lock_headers):
    need(has_lock_headers, "PutObject calling the lock header parser")
    b = lock_bucket(s3)
    date = future(days=1)
    cases = [
        ({"ObjectLockMode": "GOVERNANCE"}, "InvalidArgument"),
        ({"ObjectLockRetainUntilDate": date}, "InvalidArgument"),
        ({"ObjectLockMode": "governance", "ObjectLockRetainUntilDate": date}, "InvalidArgument"),
        ({"ObjectLockMode": "GOVERNANCE",
          "ObjectLockRetainUntilDate": datetime.datetime(2001, 1, 1, tzinfo=UTC)},
         "InvalidArgument"),
        ({"ObjectLockLegalHoldStatus": "MAYBE"}, "InvalidArgument"),
    ]
    for kw, code in cases:
        with pytest.raises(ClientError) as e:
            s3.put_object(Bucket=b, Key="k", Body=b"abc", **kw)
        assert err(e) == (400, code), kw
    p = plain_bucket(s3)
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=p, Key="k", Body=b"abc", ObjectLockMode="GOVERNANCE",
                      ObjectLockRetainUntilDate=date)
    assert err(e) == (400, "InvalidRequest")
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=p, Key="k", Body=b"abc", ObjectLockLegalHoldStatus="ON")
    assert err(e) == (400, "InvalidRequest")


@pytest.fixture(scope="module")
def has_lock_echo(s3srv):
    """HEAD answers x-amz-object-lock-* (object.c calls cn__s3_lock_echo_version)."""
    s3 = s3srv.client()
    b = lock_bucket(s3, "probe")
    s3.put_object(Bucket=b, Key="k", Body=b"x")
    s3.put_object_legal_hold(Bucket=b, Key="k", LegalHold={"Status": "ON"})
    on = "ObjectLockLegalHoldStatus" in s3.head_object(Bucket=b, Key="k")
    s3.put_object_legal_hold(Bucket=b, Key="k", LegalHold={"Status": "OFF"})
    return on


def test_write_headers_applied(s3srv, s3, has_lock_headers):
    need(has_lock_headers, "PutObject calling the lock header parser")
    b = lock_bucket(s3)
    date = future(days=2)
    s3.put_object(Bucket=b, Key="k", Body=b"abc", ObjectLockMode="GOVERNANCE",
                  ObjectLockRetainUntilDate=date, ObjectLockLegalHoldStatus="ON")
    assert s3.get_object_retention(Bucket=b, Key="k")["Retention"] == {
        "Mode": "GOVERNANCE", "RetainUntilDate": date}
    assert s3.get_object_legal_hold(Bucket=b, Key="k")["LegalHold"] == {"Status": "ON"}
    s3.put_object_legal_hold(Bucket=b, Key="k", LegalHold={"Status": "OFF"})
    # CopyObject takes the headers for its new version.
    s3.copy_object(Bucket=b, Key="c", CopySource={"Bucket": b, "Key": "k"},
                   ObjectLockMode="COMPLIANCE", ObjectLockRetainUntilDate=date)
    assert s3.get_object_retention(Bucket=b, Key="c")["Retention"] == {
        "Mode": "COMPLIANCE", "RetainUntilDate": date}
    # The bucket's default applies to a write without headers.
    s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=GOV_1D)
    before = datetime.datetime.now(UTC)
    s3.put_object(Bucket=b, Key="d", Body=b"abc")
    got = s3.get_object_retention(Bucket=b, Key="d")["Retention"]
    assert got["Mode"] == "GOVERNANCE"
    delta = got["RetainUntilDate"] - before
    assert datetime.timedelta(hours=23) < delta < datetime.timedelta(hours=25)


def test_write_headers_echoed(s3srv, s3, has_lock_echo):
    need(has_lock_echo, "GET/HEAD echo of x-amz-object-lock-*")
    b = lock_bucket(s3)
    date = future(days=2)
    s3.put_object(Bucket=b, Key="k", Body=b"abc", ObjectLockMode="GOVERNANCE",
                  ObjectLockRetainUntilDate=date, ObjectLockLegalHoldStatus="ON")
    for h in (s3.head_object(Bucket=b, Key="k"), s3.get_object(Bucket=b, Key="k")):
        assert h["ObjectLockMode"] == "GOVERNANCE"
        assert h["ObjectLockRetainUntilDate"] == date
        assert h["ObjectLockLegalHoldStatus"] == "ON"
    s3.put_object_legal_hold(Bucket=b, Key="k", LegalHold={"Status": "OFF"})
    assert s3.head_object(Bucket=b, Key="k")["ObjectLockLegalHoldStatus"] == "OFF"
    s3.put_object(Bucket=b, Key="plain", Body=b"abc")
    assert "ObjectLockMode" not in s3.head_object(Bucket=b, Key="plain")


# ---- the removal rule -----------------------------------------------------------------------

def test_delete_version_locked(s3srv, s3, has_version_ids):
    need(has_version_ids, "DELETE ?versionId")
    b = lock_bucket(s3)
    v = s3.put_object(Bucket=b, Key="k", Body=b"abc")["VersionId"]
    s3.put_object_retention(Bucket=b, Key="k", VersionId=v,
                            Retention={"Mode": "GOVERNANCE", "RetainUntilDate": future(days=1)})
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket=b, Key="k", VersionId=v)
    assert err(e) == (403, "AccessDenied")
    # A plain DELETE still writes a marker; the locked version stays.
    d = s3.delete_object(Bucket=b, Key="k")
    assert d["DeleteMarker"] is True
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket=b, Key="k", VersionId=v)
    assert err(e) == (403, "AccessDenied")
    s3.delete_object(Bucket=b, Key="k", VersionId=d["VersionId"])  # the marker goes
    assert s3.get_object(Bucket=b, Key="k")["Body"].read() == b"abc"
    r = s3.delete_object(Bucket=b, Key="k", VersionId=v, BypassGovernanceRetention=True)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204


def test_delete_version_bypass_without_permission(s3srv, s3, has_version_ids):
    need(has_version_ids, "DELETE ?versionId")
    key, secret = s3srv.new_account("lockdel", perms=[
        "bucket:create", "bucket:list", "object:get", "object:put", "object:list",
        "object:delete", "object:lock"])
    c = s3srv.client(key=key, secret=secret)
    b = unique("ldel")
    c.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
    v = c.put_object(Bucket=b, Key="k", Body=b"abc")["VersionId"]
    c.put_object_retention(Bucket=b, Key="k", VersionId=v,
                           Retention={"Mode": "GOVERNANCE", "RetainUntilDate": future(days=1)})
    with pytest.raises(ClientError) as e:
        c.delete_object(Bucket=b, Key="k", VersionId=v, BypassGovernanceRetention=True)
    assert err(e) == (403, "AccessDenied")
    assert c.get_object(Bucket=b, Key="k", VersionId=v)["Body"].read() == b"abc"


def test_delete_version_compliance_never(s3srv, s3, has_version_ids):
    need(has_version_ids, "DELETE ?versionId")
    b = lock_bucket(s3)
    v = s3.put_object(Bucket=b, Key="k", Body=b"abc")["VersionId"]
    s3.put_object_retention(Bucket=b, Key="k", VersionId=v,
                            Retention={"Mode": "COMPLIANCE", "RetainUntilDate": future(days=1)})
    for bypass in (False, True):
        with pytest.raises(ClientError) as e:
            s3.delete_object(Bucket=b, Key="k", VersionId=v, BypassGovernanceRetention=bypass)
        assert err(e) == (403, "AccessDenied")
    res = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "k", "VersionId": v}]},
                            BypassGovernanceRetention=True)
    assert [(x["Key"], x["Code"]) for x in res.get("Errors", [])] == [("k", "AccessDenied")]


def test_delete_version_legal_hold(s3srv, s3, has_version_ids):
    need(has_version_ids, "DELETE ?versionId")
    b = lock_bucket(s3)
    v = s3.put_object(Bucket=b, Key="k", Body=b"abc")["VersionId"]
    s3.put_object_legal_hold(Bucket=b, Key="k", VersionId=v, LegalHold={"Status": "ON"})
    for bypass in (False, True):
        with pytest.raises(ClientError) as e:
            s3.delete_object(Bucket=b, Key="k", VersionId=v, BypassGovernanceRetention=bypass)
        assert err(e) == (403, "AccessDenied")
    s3.put_object_legal_hold(Bucket=b, Key="k", VersionId=v, LegalHold={"Status": "OFF"})
    r = s3.delete_object(Bucket=b, Key="k", VersionId=v)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204


def test_delete_objects_per_key(s3srv, s3, has_version_ids):
    need(has_version_ids, "DeleteObjects with VersionId")
    b = lock_bucket(s3)
    v1 = s3.put_object(Bucket=b, Key="k1", Body=b"abc")["VersionId"]
    v2 = s3.put_object(Bucket=b, Key="k2", Body=b"abc")["VersionId"]
    s3.put_object_retention(Bucket=b, Key="k1",
                            Retention={"Mode": "GOVERNANCE", "RetainUntilDate": future(days=1)})
    res = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "k1", "VersionId": v1},
                                                          {"Key": "k2", "VersionId": v2}]})
    assert [(x["Key"], x["VersionId"]) for x in res["Deleted"]] == [("k2", v2)]
    assert [(x["Key"], x["VersionId"], x["Code"]) for x in res["Errors"]] == [
        ("k1", v1, "AccessDenied")]
    res = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "k1", "VersionId": v1}]},
                            BypassGovernanceRetention=True)
    assert not res.get("Errors")
    assert [(x["Key"], x["VersionId"]) for x in res["Deleted"]] == [("k1", v1)]


def test_retention_by_version_id(s3srv, s3, has_version_ids):
    need(has_version_ids, "version ids")
    b = lock_bucket(s3)
    v1 = s3.put_object(Bucket=b, Key="k", Body=b"one")["VersionId"]
    v2 = s3.put_object(Bucket=b, Key="k", Body=b"two")["VersionId"]
    r = {"Mode": "GOVERNANCE", "RetainUntilDate": future(days=1)}
    s3.put_object_retention(Bucket=b, Key="k", VersionId=v1, Retention=r)
    assert s3.get_object_retention(Bucket=b, Key="k", VersionId=v1)["Retention"] == r
    with pytest.raises(ClientError) as e:
        s3.get_object_retention(Bucket=b, Key="k", VersionId=v2)
    assert err(e) == (404, "NoSuchObjectLockConfiguration")
    with pytest.raises(ClientError) as e:
        s3.get_object_retention(Bucket=b, Key="k")  # the current one is v2
    assert err(e) == (404, "NoSuchObjectLockConfiguration")
    s3.put_object_legal_hold(Bucket=b, Key="k", VersionId=v2, LegalHold={"Status": "ON"})
    assert s3.get_object_legal_hold(Bucket=b, Key="k")["LegalHold"] == {"Status": "ON"}
    s3.put_object_legal_hold(Bucket=b, Key="k", VersionId=v2, LegalHold={"Status": "OFF"})


def test_lock_ops_on_delete_marker(s3srv, s3, has_version_ids):
    need(has_version_ids, "delete markers")
    b = lock_bucket(s3)
    s3.put_object(Bucket=b, Key="k", Body=b"abc")
    m = s3.delete_object(Bucket=b, Key="k")["VersionId"]
    r = {"Mode": "GOVERNANCE", "RetainUntilDate": future(days=1)}
    # The key's latest version is a marker: the key is deleted.
    with pytest.raises(ClientError) as e:
        s3.put_object_retention(Bucket=b, Key="k", Retention=r)
    assert err(e) == (404, "NoSuchKey")
    with pytest.raises(ClientError) as e:
        s3.get_object_legal_hold(Bucket=b, Key="k")
    assert err(e) == (404, "NoSuchKey")
    # A marker named by its id has no lock to read or set.
    with pytest.raises(ClientError) as e:
        s3.put_object_retention(Bucket=b, Key="k", VersionId=m, Retention=r)
    assert err(e)[0] == 405
    with pytest.raises(ClientError) as e:
        s3.put_object_legal_hold(Bucket=b, Key="k", VersionId=m, LegalHold={"Status": "ON"})
    assert err(e)[0] == 405


def test_policy_grants_lock_actions(s3srv, s3):
    """A bucket policy gives another account the lock actions; the bypass is
    its own action: without s3:BypassGovernanceRetention in the policy the
    bypass header does not shorten, even with the token permission."""
    import json
    b = lock_bucket(s3)
    s3.put_object(Bucket=b, Key="k", Body=b"abc")
    key, secret = s3srv.new_account("lockpol", perms=["object:get", "object:lock",
                                                      "object:bypass-governance"])
    c = s3srv.client(key=key, secret=secret)
    r = {"Mode": "GOVERNANCE", "RetainUntilDate": future(days=3)}
    with pytest.raises(ClientError) as e:
        c.put_object_retention(Bucket=b, Key="k", Retention=r)
    assert err(e) == (403, "AccessDenied")

    def policy(actions):
        s3.put_bucket_policy(Bucket=b, Policy=json.dumps({"Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Principal": {"AWS": ["arn:aws:iam::lockpol:root"]},
            "Action": actions, "Resource": ["arn:aws:s3:::%s/*" % b]}]}))

    policy(["s3:PutObjectRetention", "s3:GetObjectRetention"])
    c.put_object_retention(Bucket=b, Key="k", Retention=r)
    assert c.get_object_retention(Bucket=b, Key="k")["Retention"] == r
    short = {"Mode": "GOVERNANCE", "RetainUntilDate": future(days=1)}
    with pytest.raises(ClientError) as e:
        c.put_object_retention(Bucket=b, Key="k", Retention=short, BypassGovernanceRetention=True)
    assert err(e) == (403, "AccessDenied")
    policy(["s3:PutObjectRetention", "s3:GetObjectRetention", "s3:BypassGovernanceRetention"])
    c.put_object_retention(Bucket=b, Key="k", Retention=short, BypassGovernanceRetention=True)
    assert c.get_object_retention(Bucket=b, Key="k")["Retention"] == short


def test_multipart_carries_lock(s3srv, s3, has_lock_headers, has_version_ids):
    need(has_lock_headers and has_version_ids, "lock headers and version ids")
    b = lock_bucket(s3)
    date = future(days=1)
    up = s3.create_multipart_upload(Bucket=b, Key="m", ObjectLockMode="GOVERNANCE",
                                    ObjectLockRetainUntilDate=date,
                                    ObjectLockLegalHoldStatus="ON")["UploadId"]
    et = s3.upload_part(Bucket=b, Key="m", UploadId=up, PartNumber=1, Body=b"abc")["ETag"]
    v = s3.complete_multipart_upload(Bucket=b, Key="m", UploadId=up, MultipartUpload={
        "Parts": [{"ETag": et, "PartNumber": 1}]})["VersionId"]
    assert s3.get_object_retention(Bucket=b, Key="m", VersionId=v)["Retention"] == {
        "Mode": "GOVERNANCE", "RetainUntilDate": date}
    assert s3.get_object_legal_hold(Bucket=b, Key="m", VersionId=v)["LegalHold"] == {
        "Status": "ON"}
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket=b, Key="m", VersionId=v, BypassGovernanceRetention=True)
    assert err(e) == (403, "AccessDenied")
    s3.put_object_legal_hold(Bucket=b, Key="m", VersionId=v, LegalHold={"Status": "OFF"})
    s3.delete_object(Bucket=b, Key="m", VersionId=v, BypassGovernanceRetention=True)


def test_delete_bypass_is_a_policy_action(s3srv, s3, has_version_ids):
    """Another account allowed to delete versions by the bucket policy, with
    object:bypass-governance on its token, still needs the policy to allow
    s3:BypassGovernanceRetention before its bypass removes a GOVERNANCE
    version (as PutObjectRetention's bypass does)."""
    need(has_version_ids, "DELETE ?versionId")
    import json
    b = lock_bucket(s3)
    v = s3.put_object(Bucket=b, Key="k", Body=b"abc")["VersionId"]
    s3.put_object_retention(Bucket=b, Key="k", VersionId=v,
                            Retention={"Mode": "GOVERNANCE", "RetainUntilDate": future(days=1)})
    key, secret = s3srv.new_account("lockdp", perms=["object:get", "object:delete",
                                                     "object:bypass-governance"])
    c = s3srv.client(key=key, secret=secret)

    def policy(actions):
        s3.put_bucket_policy(Bucket=b, Policy=json.dumps({"Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Principal": {"AWS": ["arn:aws:iam::lockdp:root"]},
            "Action": actions, "Resource": ["arn:aws:s3:::%s/*" % b]}]}))

    policy(["s3:DeleteObject", "s3:DeleteObjectVersion"])
    with pytest.raises(ClientError) as e:
        c.delete_object(Bucket=b, Key="k", VersionId=v, BypassGovernanceRetention=True)
    assert err(e) == (403, "AccessDenied")
    policy(["s3:DeleteObject", "s3:DeleteObjectVersion", "s3:BypassGovernanceRetention"])
    c.delete_object(Bucket=b, Key="k", VersionId=v, BypassGovernanceRetention=True)
