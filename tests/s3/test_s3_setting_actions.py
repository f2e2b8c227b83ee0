"""The bucket settings of issue 25 each under their own S3 action, and the
token permissions behind them (docs/authz.md): versioning, bucket tagging,
lifecycle and object lock configuration are read with bucket:list and changed
with bucket:configure (which bucket:create implies).  A bucket policy names
each action by itself: a Deny of one refuses that operation and nothing else
(GetBucketVersioning is no longer ListBucket, nor PutBucketVersioning
PutBucketObjectLockConfiguration)."""
import json

import pytest
from botocore.exceptions import ClientError

from s3fixtures import s3, s3srv, unique  # noqa: F401

LC = {"Rules": [{"ID": "r1", "Status": "Enabled", "Filter": {"Prefix": "logs/"},
                 "Expiration": {"Days": 3}}]}
LOCK = {"ObjectLockEnabled": "Enabled",
        "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}}}
TAGS = {"TagSet": [{"Key": "team", "Value": "a"}]}


def code(exc):
    r = exc.value.response
    return r["ResponseMetadata"]["HTTPStatusCode"], r["Error"]["Code"]


def denied(call):
    with pytest.raises(ClientError) as e:
        call()
    assert code(e) == (403, "AccessDenied")


def get_ok(call):
    """A read that passes authorization: it answers, or says the setting is
    not there (never AccessDenied)."""
    try:
        call()
    except ClientError as e:
        assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 404, e.response
        assert e.response["Error"]["Code"].startswith(("NoSuch", "ObjectLockConfiguration"))


# Each operation of issue 25's bucket settings: (action, is_write, call(c, b)).
OPS = [
    ("s3:GetBucketVersioning", False, lambda c, b: c.get_bucket_versioning(Bucket=b)),
    ("s3:PutBucketVersioning", True, lambda c, b: c.put_bucket_versioning(
        Bucket=b, VersioningConfiguration={"Status": "Enabled"})),
    ("s3:GetBucketTagging", False, lambda c, b: c.get_bucket_tagging(Bucket=b)),
    ("s3:PutBucketTagging", True, lambda c, b: c.put_bucket_tagging(Bucket=b, Tagging=TAGS)),
    ("s3:PutBucketTagging", True, lambda c, b: c.delete_bucket_tagging(Bucket=b)),
    ("s3:GetLifecycleConfiguration", False,
     lambda c, b: c.get_bucket_lifecycle_configuration(Bucket=b)),
    ("s3:PutLifecycleConfiguration", True,
     lambda c, b: c.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration=LC)),
    ("s3:PutLifecycleConfiguration", True, lambda c, b: c.delete_bucket_lifecycle(Bucket=b)),
    ("s3:GetBucketObjectLockConfiguration", False,
     lambda c, b: c.get_object_lock_configuration(Bucket=b)),
    ("s3:PutBucketObjectLockConfiguration", True,
     lambda c, b: c.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=LOCK)),
]
IDS = ["%s-%d" % (a.split(":")[1], i) for i, (a, _, _) in enumerate(OPS)]


def lock_bucket(c, prefix="sact"):
    b = unique(prefix)
    c.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
    return b


def token(s3srv, account, *perms):
    args = ["token", "create", "--account", account]
    for p in perms:
        args += ["--perm", p]
    k, s = s3srv.admin(*args).splitlines()[-1].strip().split(":", 1)
    return s3srv.client(key=k, secret=s)


@pytest.fixture(scope="module")
def owner(s3srv):
    """An account owning a lock bucket, with one token per permission set."""
    key, secret = s3srv.new_account("sactown", perms=["bucket:create", "bucket:list"])
    c = s3srv.client(key=key, secret=secret)
    return {"create": c,
            "list": token(s3srv, "sactown", "bucket:list"),
            "configure": token(s3srv, "sactown", "bucket:configure"),
            "objlist": token(s3srv, "sactown", "object:list")}


@pytest.mark.parametrize("op", OPS, ids=IDS)
def test_token_permissions(s3srv, owner, op):
    """Reads need bucket:list, changes bucket:configure; bucket:create still
    configures (tokens made before bucket:configure); object:list alone reads
    no setting (GetBucketVersioning used to be ListBucket)."""
    _, write, call = op
    b = lock_bucket(owner["create"])
    if write:
        denied(lambda: call(owner["list"], b))
        denied(lambda: call(owner["objlist"], b))
        call(owner["configure"], b)
        call(owner["create"], b)
    else:
        denied(lambda: call(owner["configure"], b))
        denied(lambda: call(owner["objlist"], b))
        get_ok(lambda: call(owner["list"], b))


def set_policy(s3, b, effect, principal, actions):
    s3.put_bucket_policy(Bucket=b, Policy=json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": effect, "Principal": principal, "Action": actions,
        "Resource": ["arn:aws:s3:::%s" % b]}]}))


@pytest.mark.parametrize("op", OPS, ids=IDS)
def test_policy_deny_names_one_action(s3, op):
    """A Deny of one action refuses its operation to the owner, and no other
    operation of the table."""
    action, _, call = op
    b = lock_bucket(s3)
    set_policy(s3, b, "Deny", "*", [action])
    try:
        denied(lambda: call(s3, b))
        for other, write, ocall in OPS:
            if other == action:
                continue
            if write:
                ocall(s3, b)
            else:
                get_ok(lambda: ocall(s3, b))
    finally:
        s3.delete_bucket_policy(Bucket=b)
    # Without the policy the operation passes again.
    get_ok(lambda: call(s3, b))


def test_deny_list_bucket_leaves_versioning_readable(s3):
    b = lock_bucket(s3)
    set_policy(s3, b, "Deny", "*", ["s3:ListBucket", "s3:PutBucketObjectLockConfiguration"])
    try:
        denied(lambda: s3.list_objects_v2(Bucket=b))
        denied(lambda: s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=LOCK))
        assert s3.get_bucket_versioning(Bucket=b)["Status"] == "Enabled"
        s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    finally:
        s3.delete_bucket_policy(Bucket=b)


@pytest.mark.parametrize("op", OPS, ids=IDS)
def test_policy_allow_grants_one_action(s3srv, s3, op):
    """Another account whose token holds the permissions gets an operation
    only once the owner's policy allows its action."""
    action, write, call = op
    name = "sactoth%d" % OPS.index(op)
    key, secret = s3srv.new_account(name, perms=["bucket:list", "bucket:configure"])
    other = s3srv.client(key=key, secret=secret)
    b = lock_bucket(s3)
    denied(lambda: call(other, b))
    set_policy(s3, b, "Allow", {"AWS": ["arn:aws:iam::%s:root" % name]}, [action])
    if write:
        call(other, b)
    else:
        get_ok(lambda: call(other, b))
    # The policy allows that action only.
    siblings = [(a, c) for a, _, c in OPS if a != action]
    for _, ocall in siblings[:2]:
        denied(lambda: ocall(other, b))
