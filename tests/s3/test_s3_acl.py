"""Bucket and object ACLs through S3 with two accounts and anonymous callers:
every canned ACL on buckets and objects checked by what the other account and
an anonymous caller can and cannot do, grants by id / email / group (headers
and AccessControlPolicy XML), the errors S3 gives, accounts as principals
(owners in ListBuckets, ACLs, fetch-owner), the token ceiling, and the native
visibility seen by a Jay client."""
import hashlib
import itertools

import pytest
import requests
from botocore.exceptions import ClientError

from conftest import ADMIN_TOKEN, binary, run
from s3fixtures import bucket, jayclient, s3, s3srv, unique  # noqa: F401

ALL_USERS = "http://acs.amazonaws.com/groups/global/AllUsers"
AUTH_USERS = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"


def code(exc):
    return exc.value.response["Error"]["Code"]


@pytest.fixture(scope="module")
def other(s3srv):
    """A second account with an email address, and its boto3 client."""
    name = unique("bob")
    r = run([binary("cairn"), "admin", "--data", s3srv.data_dir, "account", "create", name,
             "--email", "%s@example.test" % name], env={"CAIRN_ADMIN_TOKEN": ADMIN_TOKEN})
    assert r.returncode == 0, r.stderr
    cred = s3srv.admin("token", "create", "--account", name).splitlines()[-1].strip()
    key, secret = cred.split(":", 1)
    return {"name": name, "email": "%s@example.test" % name, "key": key, "secret": secret,
            "client": s3srv.client(key, secret), "cred": cred}


def grants(acl):
    """{(grantee, permission)} with grantee the ID or the group URI."""
    out = set()
    for g in acl["Grants"]:
        ge = g["Grantee"]
        out.add((ge.get("ID") or ge.get("URI"), g["Permission"]))
    return out


def allowed(fn):
    try:
        fn()
        return True
    except ClientError as e:
        assert e.response["Error"]["Code"] in ("AccessDenied", "403"), e.response
        return False


# ---- accounts as principals ----------------------------------------------------------

def test_owner_is_account_name_everywhere(s3srv, s3, other, bucket):
    lb = s3.list_buckets()
    assert lb["Owner"] == {"ID": "admin", "DisplayName": "admin"}
    assert other["client"].list_buckets()["Owner"]["ID"] == other["name"]
    acl = s3.get_bucket_acl(Bucket=bucket)
    assert acl["Owner"] == {"ID": "admin", "DisplayName": "admin"}
    assert grants(acl) == {("admin", "FULL_CONTROL")}
    s3.put_object(Bucket=bucket, Key="o", Body=b"o")
    oacl = s3.get_object_acl(Bucket=bucket, Key="o")
    assert oacl["Owner"]["ID"] == "admin" and grants(oacl) == {("admin", "FULL_CONTROL")}
    lo = s3.list_objects_v2(Bucket=bucket, FetchOwner=True)
    assert lo["Contents"][0]["Owner"] == {"ID": "admin", "DisplayName": "admin"}


def test_acl_xml_document_shape(s3srv, bucket, s3):
    s3.put_bucket_acl(Bucket=bucket, ACL="public-read")
    r = s3srv.signed("GET", "/%s" % bucket, params={"acl": ""})
    assert r.status_code == 200
    assert r.text.count("<Grant>") == 2
    assert 'xsi:type="CanonicalUser"' in r.text and 'xsi:type="Group"' in r.text
    assert "<URI>%s</URI>" % ALL_USERS in r.text
    assert "<Permission>READ</Permission>" in r.text


# ---- canned ACLs: the full matrix ------------------------------------------------------

BUCKET_CANNED = ["private", "public-read", "public-read-write", "authenticated-read"]
OBJECT_CANNED = ["private", "public-read", "public-read-write", "authenticated-read",
                 "bucket-owner-read", "bucket-owner-full-control"]


def bucket_reads(canned):
    return {"other": canned in ("public-read", "public-read-write", "authenticated-read"),
            "anon": canned in ("public-read", "public-read-write")}


def bucket_writes(canned):
    return {"other": canned == "public-read-write", "anon": canned == "public-read-write"}


def object_reads(canned):
    return {"other": canned in ("public-read", "public-read-write", "authenticated-read"),
            "anon": canned in ("public-read", "public-read-write")}


@pytest.mark.parametrize("bcanned,ocanned", list(itertools.product(BUCKET_CANNED, OBJECT_CANNED)))
def test_canned_acl_matrix(s3srv, s3, other, bcanned, ocanned):
    b = unique("mx")
    s3.create_bucket(Bucket=b, ACL=bcanned)
    s3.put_object(Bucket=b, Key="obj", Body=b"data", ACL=ocanned)
    callers = {"other": other["client"], "anon": s3srv.anon()}
    for who, c in callers.items():
        assert allowed(lambda: c.list_objects_v2(Bucket=b)) == bucket_reads(bcanned)[who], who
        assert allowed(lambda: c.get_object(Bucket=b, Key="obj")) == \
            object_reads(ocanned)[who], who
        assert allowed(lambda: c.head_object(Bucket=b, Key="obj")) == \
            object_reads(ocanned)[who], who
        assert allowed(lambda: c.put_object(Bucket=b, Key="new-" + who, Body=b"w")) == \
            bucket_writes(bcanned)[who], who
        # No canned ACL hands out READ_ACP / WRITE_ACP to anyone but the owner.
        assert not allowed(lambda: c.get_object_acl(Bucket=b, Key="obj")), who
        assert not allowed(lambda: c.get_bucket_acl(Bucket=b)), who
        assert not allowed(lambda: c.put_bucket_acl(Bucket=b, ACL="private")), who
        assert not allowed(lambda: c.delete_bucket(Bucket=b)), who
    # The stored ACLs read back as the canned grant sets.
    bg = grants(s3.get_bucket_acl(Bucket=b))
    assert ("admin", "FULL_CONTROL") in bg
    assert (ALL_USERS, "READ") in bg if bcanned in ("public-read", "public-read-write") else True
    assert ((ALL_USERS, "WRITE") in bg) == (bcanned == "public-read-write")
    assert ((AUTH_USERS, "READ") in bg) == (bcanned == "authenticated-read")
    og = grants(s3.get_object_acl(Bucket=b, Key="obj"))
    # bucket-owner-* add nothing when the bucket owner owns the object.
    assert og == {("admin", "FULL_CONTROL")} | (
        {(ALL_USERS, "READ")} if ocanned in ("public-read", "public-read-write") else set()) | (
        {(ALL_USERS, "WRITE")} if ocanned == "public-read-write" else set()) | (
        {(AUTH_USERS, "READ")} if ocanned == "authenticated-read" else set())
    # Jay's visibility is the same state: public when anonymous callers may read.
    with s3srv.jay() as j:
        assert j.head_bucket(b)["visibility"] == \
            ("public" if bucket_reads(bcanned)["anon"] else "private")


@pytest.mark.parametrize("ocanned,owner_reads", [
    ("private", False), ("bucket-owner-read", True), ("bucket-owner-full-control", True),
    ("public-read", True)])
def test_object_written_by_other_account(s3srv, s3, other, ocanned, owner_reads):
    b = unique("xw")
    s3.create_bucket(Bucket=b, ACL="public-read-write")
    bob = other["client"]
    bob.put_object(Bucket=b, Key="bobs", Body=b"bob", ACL=ocanned)
    acl = bob.get_object_acl(Bucket=b, Key="bobs")
    assert acl["Owner"]["ID"] == other["name"]
    # The bucket owner reads another account's object only when granted.
    assert allowed(lambda: s3.get_object(Bucket=b, Key="bobs")) == owner_reads
    assert allowed(lambda: s3.get_object_acl(Bucket=b, Key="bobs")) == \
        (ocanned == "bucket-owner-full-control")
    if ocanned == "bucket-owner-full-control":
        assert ("admin", "FULL_CONTROL") in grants(s3.get_object_acl(Bucket=b, Key="bobs"))
    # ... but may always delete it (the bucket governs deletes).
    s3.delete_object(Bucket=b, Key="bobs")


def test_anonymous_write_is_owned_by_bucket_owner(s3srv, s3):
    b = unique("anonw")
    s3.create_bucket(Bucket=b, ACL="public-read-write")
    r = requests.put(s3srv.endpoint + "/%s/anon-obj" % b, data=b"from nobody")
    assert r.status_code == 200, r.text
    assert s3.get_object_acl(Bucket=b, Key="anon-obj")["Owner"]["ID"] == "admin"
    assert s3.get_object(Bucket=b, Key="anon-obj")["Body"].read() == b"from nobody"


def test_unknown_canned_acl(s3, bucket):
    for call in (lambda: s3.create_bucket(Bucket=unique(), ACL="world"),
                 lambda: s3.put_object(Bucket=bucket, Key="x", Body=b"x", ACL="world"),
                 lambda: s3.put_bucket_acl(Bucket=bucket, ACL="world"),
                 lambda: s3.create_multipart_upload(Bucket=bucket, Key="m", ACL="world")):
        with pytest.raises(ClientError) as e:
            call()
        assert code(e) == "InvalidArgument"


# ---- canned ACL on every write path -----------------------------------------------------

def test_canned_acl_on_copy_multipart_and_presigned(s3srv, s3, bucket):
    anon = s3srv.anon()
    s3.put_object(Bucket=bucket, Key="src", Body=b"source")
    s3.copy_object(Bucket=bucket, Key="copied", CopySource={"Bucket": bucket, "Key": "src"},
                   ACL="public-read")
    assert anon.get_object(Bucket=bucket, Key="copied")["Body"].read() == b"source"
    up = s3.create_multipart_upload(Bucket=bucket, Key="mpu", ACL="public-read")
    part = s3.upload_part(Bucket=bucket, Key="mpu", UploadId=up["UploadId"], PartNumber=1,
                          Body=b"p" * 100)
    s3.complete_multipart_upload(Bucket=bucket, Key="mpu", UploadId=up["UploadId"],
                                 MultipartUpload={"Parts": [{"PartNumber": 1,
                                                             "ETag": part["ETag"]}]})
    assert anon.get_object(Bucket=bucket, Key="mpu")["Body"].read() == b"p" * 100
    url = s3.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "pre",
                                                          "ACL": "public-read"})
    r = requests.put(url, data=b"presigned", headers={"x-amz-acl": "public-read"})
    assert r.status_code == 200, r.text
    assert requests.get(s3srv.endpoint + "/%s/pre" % bucket).content == b"presigned"
    # The query form: x-amz-acl signed into the URL itself.
    from botocore.auth import S3SigV4QueryAuth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    from s3fixtures import ADMIN_KEY, ADMIN_SECRET, REGION
    req = AWSRequest(method="PUT", url=s3srv.endpoint + "/%s/preq?x-amz-acl=public-read" % bucket)
    S3SigV4QueryAuth(Credentials(ADMIN_KEY, ADMIN_SECRET), "s3", REGION, expires=300).add_auth(req)
    r = requests.put(req.url, data=b"query acl")
    assert r.status_code == 200, r.text
    assert requests.get(s3srv.endpoint + "/%s/preq" % bucket).content == b"query acl"


# ---- grants --------------------------------------------------------------------------

def test_grant_headers_by_id_email_and_group(s3srv, s3, other, bucket):
    bob = other["client"]
    s3.put_object(Bucket=bucket, Key="g-id", Body=b"1", GrantRead='id="%s"' % other["name"])
    assert bob.get_object(Bucket=bucket, Key="g-id")["Body"].read() == b"1"
    assert requests.get(s3srv.endpoint + "/%s/g-id" % bucket).status_code == 403
    s3.put_object(Bucket=bucket, Key="g-mail", Body=b"2",
                  GrantRead='emailAddress="%s"' % other["email"].upper(),
                  GrantReadACP='id="%s"' % other["name"])
    # An email grantee is stored as its account.
    acl = bob.get_object_acl(Bucket=bucket, Key="g-mail")
    assert grants(acl) == {(other["name"], "READ"), (other["name"], "READ_ACP")}
    s3.put_object(Bucket=bucket, Key="g-grp", Body=b"3",
                  GrantRead='uri="%s", id="%s"' % (AUTH_USERS, other["name"]))
    assert bob.get_object(Bucket=bucket, Key="g-grp")["Body"].read() == b"3"
    assert requests.get(s3srv.endpoint + "/%s/g-grp" % bucket).status_code == 403
    s3.put_object(Bucket=bucket, Key="g-all", Body=b"4", GrantRead="uri=%s" % ALL_USERS)
    assert requests.get(s3srv.endpoint + "/%s/g-all" % bucket).content == b"4"
    # Grant headers leave out the owner's own grant (exactly the grants given).
    assert grants(s3.get_object_acl(Bucket=bucket, Key="g-all")) == {(ALL_USERS, "READ")}
    # The owner still reads and rewrites its own object's ACL.
    s3.put_object_acl(Bucket=bucket, Key="g-all", ACL="private")
    assert requests.get(s3srv.endpoint + "/%s/g-all" % bucket).status_code == 403


def test_grant_header_errors(s3srv, s3, bucket):
    cases = [({"GrantRead": 'id="no-such-account-zz"'}, "InvalidArgument"),
             ({"GrantRead": 'emailAddress="nobody@nowhere.test"'},
              "UnresolvableGrantByEmailAddress"),
             ({"GrantRead": 'uri="http://acs.amazonaws.com/groups/global/Nobody"'},
              "InvalidArgument"),
             ({"GrantRead": 'nonsense'}, "InvalidArgument"),
             ({"GrantRead": 'id="admin"', "ACL": "public-read"}, "InvalidRequest")]
    for kw, want in cases:
        with pytest.raises(ClientError) as e:
            s3.put_object(Bucket=bucket, Key="ge", Body=b"x", **kw)
        assert code(e) == want, kw
        with pytest.raises(ClientError) as e:
            s3.put_bucket_acl(Bucket=bucket, **kw)
        assert code(e) == want, kw
    with pytest.raises(ClientError) as e:
        s3.create_bucket(Bucket=unique(), GrantRead='emailAddress="nobody@nowhere.test"')
    assert code(e) == "UnresolvableGrantByEmailAddress"


def test_bucket_grants_write_and_acp(s3srv, s3, other):
    bob = other["client"]
    b = unique("bg")
    s3.create_bucket(Bucket=b, GrantWrite='id="%s"' % other["name"],
                     GrantReadACP='id="%s"' % other["name"],
                     GrantFullControl='id="admin"')
    assert grants(bob.get_bucket_acl(Bucket=b)) == {
        (other["name"], "WRITE"), (other["name"], "READ_ACP"), ("admin", "FULL_CONTROL")}
    bob.put_object(Bucket=b, Key="w", Body=b"w")          # WRITE on the bucket
    assert not allowed(lambda: bob.list_objects_v2(Bucket=b))   # but not READ
    assert not allowed(lambda: bob.put_bucket_acl(Bucket=b, ACL="public-read"))
    s3.put_bucket_acl(Bucket=b, GrantWriteACP='id="%s"' % other["name"])
    bob.put_bucket_acl(Bucket=b, ACL="public-read")       # WRITE_ACP
    assert s3srv.anon().list_objects_v2(Bucket=b)["KeyCount"] == 1


def test_object_acl_grants_acp(s3srv, s3, other, bucket):
    bob = other["client"]
    s3.put_object(Bucket=bucket, Key="acp", Body=b"acp")
    assert not allowed(lambda: bob.get_object_acl(Bucket=bucket, Key="acp"))
    s3.put_object_acl(Bucket=bucket, Key="acp", GrantWriteACP='id="%s"' % other["name"])
    # WRITE_ACP without READ_ACP: may set the ACL, not read it, nor the object.
    assert not allowed(lambda: bob.get_object_acl(Bucket=bucket, Key="acp"))
    bob.put_object_acl(Bucket=bucket, Key="acp", ACL="public-read")
    assert requests.get(s3srv.endpoint + "/%s/acp" % bucket).content == b"acp"
    # The owner stays the owner, with its FULL_CONTROL grant.
    acl = s3.get_object_acl(Bucket=bucket, Key="acp")
    assert acl["Owner"]["ID"] == "admin"
    assert grants(acl) == {("admin", "FULL_CONTROL"), (ALL_USERS, "READ")}
    with pytest.raises(ClientError) as e:
        s3.get_object_acl(Bucket=bucket, Key="no-such-key")
    assert code(e) == "NoSuchKey"
    with pytest.raises(ClientError) as e:
        bob.put_object_acl(Bucket=bucket, Key="no-such-key", ACL="private")
    assert code(e) == "AccessDenied"


# ---- AccessControlPolicy XML -------------------------------------------------------------

def test_acl_xml_roundtrip(s3srv, s3, other, bucket):
    policy = {"Owner": {"ID": "admin"}, "Grants": [
        {"Grantee": {"Type": "CanonicalUser", "ID": "admin"}, "Permission": "FULL_CONTROL"},
        {"Grantee": {"Type": "AmazonCustomerByEmail", "EmailAddress": other["email"]},
         "Permission": "READ"},
        {"Grantee": {"Type": "Group", "URI": AUTH_USERS}, "Permission": "READ_ACP"},
        {"Grantee": {"Type": "Group", "URI": ALL_USERS}, "Permission": "WRITE"}]}
    s3.put_bucket_acl(Bucket=bucket, AccessControlPolicy=policy)
    got = s3.get_bucket_acl(Bucket=bucket)
    assert grants(got) == {("admin", "FULL_CONTROL"), (other["name"], "READ"),
                           (AUTH_USERS, "READ_ACP"), (ALL_USERS, "WRITE")}
    # What GetBucketAcl returns can be put back as is.
    s3.put_bucket_acl(Bucket=bucket, AccessControlPolicy={"Owner": got["Owner"],
                                                          "Grants": got["Grants"]})
    assert grants(s3.get_bucket_acl(Bucket=bucket)) == grants(got)
    assert other["client"].list_objects_v2(Bucket=bucket)["KeyCount"] == 0
    s3.put_object(Bucket=bucket, Key="x", Body=b"x")
    s3.put_object_acl(Bucket=bucket, Key="x", AccessControlPolicy={
        "Owner": {"ID": "admin"}, "Grants": [
            {"Grantee": {"Type": "CanonicalUser", "ID": other["name"]}, "Permission": "READ"}]})
    assert other["client"].get_object(Bucket=bucket, Key="x")["Body"].read() == b"x"


def test_acl_xml_errors(s3srv, s3, other, bucket):
    def put(body, path="/%s" % bucket):
        return s3srv.signed("PUT", path, params={"acl": ""}, body=body.encode())
    ok_head = '<AccessControlPolicy><Owner><ID>admin</ID></Owner><AccessControlList>'
    tail = '</AccessControlList></AccessControlPolicy>'
    grant = '<Grant><Grantee><ID>%s</ID></Grantee><Permission>%s</Permission></Grant>'
    r = put("<AccessControlPolicy><Owner>")
    assert r.status_code == 400 and "MalformedACLError" in r.text
    r = put(ok_head + grant % ("admin", "EVERYTHING") + tail)
    assert r.status_code == 400 and "MalformedACLError" in r.text
    r = put(ok_head + grant % ("no-such-account-zz", "READ") + tail)
    assert r.status_code == 400 and "InvalidArgument" in r.text
    r = put(ok_head + '<Grant><Grantee><EmailAddress>no@where.test</EmailAddress></Grantee>'
            '<Permission>READ</Permission></Grant>' + tail)
    assert r.status_code == 400 and "UnresolvableGrantByEmailAddress" in r.text
    r = put('<Other/>')
    assert r.status_code == 400 and "MalformedACLError" in r.text
    # An ACL cannot give the bucket to someone else.
    r = put('<AccessControlPolicy><Owner><ID>%s</ID></Owner><AccessControlList>' % other["name"] +
            grant % (other["name"], "FULL_CONTROL") + tail)
    assert r.status_code == 403 and "AccessDenied" in r.text
    # Body and headers together, and neither.
    r = s3srv.signed("PUT", "/%s" % bucket, params={"acl": ""},
                     body=(ok_head + grant % ("admin", "READ") + tail).encode(),
                     headers={"x-amz-acl": "private"})
    assert r.status_code == 400 and "UnexpectedContent" in r.text
    r = s3srv.signed("PUT", "/%s" % bucket, params={"acl": ""})
    assert r.status_code == 400 and "MissingSecurityHeader" in r.text
    assert grants(s3.get_bucket_acl(Bucket=bucket)) == {("admin", "FULL_CONTROL")}
    r = s3srv.signed("PUT", "/no-such-bucket-acl", params={"acl": ""},
                     headers={"x-amz-acl": "private"})
    assert r.status_code == 404 and "NoSuchBucket" in r.text


# ---- the token ceiling and anonymous callers ------------------------------------------

def test_token_ceiling_caps_acl_grants(s3srv, s3):
    name = unique("ro")
    key, secret = s3srv.new_account(name, perms=["object:get", "object:list", "bucket:list"])
    ro = s3srv.client(key, secret)
    b = unique("ceil")
    s3.create_bucket(Bucket=b, ACL="public-read-write")
    s3.put_object(Bucket=b, Key="k", Body=b"k", GrantFullControl='id="%s"' % name)
    assert ro.get_object(Bucket=b, Key="k")["Body"].read() == b"k"
    # The bucket grants WRITE to everyone, the object FULL_CONTROL: the token caps both.
    assert not allowed(lambda: ro.put_object(Bucket=b, Key="n", Body=b"n"))
    assert not allowed(lambda: ro.put_object_acl(Bucket=b, Key="k", ACL="private"))
    assert not allowed(lambda: ro.delete_object(Bucket=b, Key="k"))
    # Anonymous callers are judged as AllUsers only, never AuthenticatedUsers.
    s3.put_object(Bucket=b, Key="auth", Body=b"a", ACL="authenticated-read")
    assert requests.get(s3srv.endpoint + "/%s/auth" % b).status_code == 403
    assert ro.get_object(Bucket=b, Key="auth")["Body"].read() == b"a"


def test_native_visibility_follows_acl(s3srv, s3, bucket):
    with s3srv.jay() as j:
        assert j.head_bucket(bucket)["visibility"] == "private"
        s3.put_bucket_acl(Bucket=bucket, ACL="public-read")
        assert j.head_bucket(bucket)["visibility"] == "public"
        s3.put_bucket_acl(Bucket=bucket, ACL="authenticated-read")
        assert j.head_bucket(bucket)["visibility"] == "private"
        s3.put_bucket_acl(Bucket=bucket, GrantRead="uri=%s" % ALL_USERS)
        assert j.head_bucket(bucket)["visibility"] == "public"
        s3.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration={
            "IgnorePublicAcls": True})
        assert j.head_bucket(bucket)["visibility"] == "private"
        s3.delete_public_access_block(Bucket=bucket)
        assert j.head_bucket(bucket)["visibility"] == "public"


def test_native_client_sees_object_acl(s3srv, s3, other, bucket):
    s3.put_object(Bucket=bucket, Key="n", Body=b"native")
    with s3srv.jay(other["cred"]) as j:
        with pytest.raises(jayclient.JayError) as je:
            j.get_object(bucket, "n")
        assert je.value.status == jayclient.ST_FORBIDDEN
    s3.put_object_acl(Bucket=bucket, Key="n", GrantRead='id="%s"' % other["name"])
    with s3srv.jay(other["cred"]) as j:
        info, data = j.get_object(bucket, "n")
        assert data == b"native"
    assert hashlib.md5(data).hexdigest()
