/* authz: the decision — actions and their permissions, ownership, every
 * canned ACL on buckets and objects against the owner, another account and an
 * anonymous caller, grant semantics, the token ceiling, the public access
 * block, visibility, the ACL model and its serialization, blob namespaces. */
#include "cn_test.h"
#include "cairn/authz.h"

#define B "b"

static cn_authz_req_t mkreq(const char *principal, cn_authz_action_t act, const char *key)
{
    cn_authz_req_t r;
    memset(&r, 0, sizeof r);
    r.principal = principal;
    r.perms = CN_PERM_DEFAULT;
    r.action = act;
    r.key = key;
    return r;
}

static cn_authz_acl_t canned(const char *name, const char *owner, const char *bucket_owner,
                             bool for_bucket)
{
    cn_authz_acl_t a;
    cn_err_t rc = cn_authz_acl_canned(&a, name, strlen(name), owner, bucket_owner, for_bucket);
    CN_CHECK_EQ(rc, 0);
    return a;
}

static bool decide(const cn_authz_req_t *r, const cn_authz_bucket_t *b, const cn_authz_object_t *o)
{
    cn_authz_decision_t d;
    memset(&d, 0xAA, sizeof d);
    cn_err_t rc = cn_authz_decide(r, b, o, &d);
    CN_CHECK(rc == CN_OK || rc == CN_E_DENIED);
    CN_CHECK_EQ(d.allow, rc == CN_OK);
    CN_CHECK(memchr(d.reason, 0, sizeof d.reason) != NULL && d.reason[0]);
    return rc == CN_OK;
}

static bool can(const char *principal, cn_authz_action_t act, const char *key,
                const cn_authz_bucket_t *b, const cn_authz_object_t *o)
{
    cn_authz_req_t r = mkreq(principal, act, key);
    return decide(&r, b, o);
}

static bool acl_equal(const cn_authz_acl_t *x, const cn_authz_acl_t *y)
{
    if (strcmp(x->owner, y->owner) != 0 || x->ngrants != y->ngrants)
        return false;
    for (uint32_t i = 0; i < x->ngrants; i++)
        if (x->grants[i].type != y->grants[i].type || x->grants[i].perm != y->grants[i].perm ||
            strcmp(x->grants[i].id, y->grants[i].id) != 0)
            return false;
    return true;
}

/* ---- actions -------------------------------------------------------------------- */
static void test_action_table(void)
{
    for (int a = CN_ACT_INVALID + 1; a < CN_ACT_END; a++) {
        const char *n = cn_authz_action_name((cn_authz_action_t)a);
        CN_CHECK(n != NULL && strncmp(n, "s3:", 3) == 0);
        CN_CHECK_EQ(cn_authz_action_parse(n, strlen(n)), a);
        cn_perms_t p = cn_authz_action_perm((cn_authz_action_t)a);
        CN_CHECK(p && !(p & (p - 1)) &&
                 !(p & (CN_PERM_ADMIN | CN_PERM_BLOBS_READ | CN_PERM_BLOBS_WRITE)));
    }
    CN_CHECK(cn_authz_action_name(CN_ACT_INVALID) == NULL);
    CN_CHECK(cn_authz_action_name(CN_ACT_END) == NULL);
    CN_CHECK_EQ(cn_authz_action_parse("S3:GETOBJECT", 12), CN_ACT_GET_OBJECT);
    CN_CHECK_EQ(cn_authz_action_parse("s3:GetObjec", 11), CN_ACT_INVALID);
    CN_CHECK_EQ(cn_authz_action_parse(NULL, 0), CN_ACT_INVALID);
    CN_CHECK_EQ(cn_authz_action_perm(CN_ACT_INVALID), 0);

    static const struct {
        cn_authz_action_t a;
        cn_perms_t p;
        bool obj;
    } t[] = {
        { CN_ACT_LIST_ALL_MY_BUCKETS, CN_PERM_BUCKET_LIST, false },
        { CN_ACT_CREATE_BUCKET, CN_PERM_BUCKET_CREATE, false },
        { CN_ACT_DELETE_BUCKET, CN_PERM_BUCKET_DELETE, false },
        { CN_ACT_LIST_BUCKET, CN_PERM_OBJECT_LIST, false },
        { CN_ACT_GET_BUCKET_ACL, CN_PERM_BUCKET_LIST, false },
        { CN_ACT_PUT_BUCKET_ACL, CN_PERM_BUCKET_CREATE, false },
        { CN_ACT_PUT_BUCKET_POLICY, CN_PERM_BUCKET_CREATE, false },
        { CN_ACT_GET_OBJECT, CN_PERM_OBJECT_GET, true },
        { CN_ACT_PUT_OBJECT, CN_PERM_OBJECT_PUT, true },
        { CN_ACT_DELETE_OBJECT, CN_PERM_OBJECT_DELETE, true },
        { CN_ACT_GET_OBJECT_ACL, CN_PERM_OBJECT_GET, true },
        { CN_ACT_PUT_OBJECT_ACL, CN_PERM_OBJECT_PUT, true },
        { CN_ACT_ABORT_MULTIPART_UPLOAD, CN_PERM_OBJECT_PUT, true },
        { CN_ACT_LIST_MULTIPART_UPLOAD_PARTS, CN_PERM_OBJECT_PUT, true },
        /* issue 25's bucket settings: read with bucket:list, changed with bucket:configure */
        { CN_ACT_GET_BUCKET_VERSIONING, CN_PERM_BUCKET_LIST, false },
        { CN_ACT_PUT_BUCKET_VERSIONING, CN_PERM_BUCKET_CONFIGURE, false },
        { CN_ACT_GET_BUCKET_TAGGING, CN_PERM_BUCKET_LIST, false },
        { CN_ACT_PUT_BUCKET_TAGGING, CN_PERM_BUCKET_CONFIGURE, false },
        { CN_ACT_GET_LIFECYCLE_CONFIGURATION, CN_PERM_BUCKET_LIST, false },
        { CN_ACT_PUT_LIFECYCLE_CONFIGURATION, CN_PERM_BUCKET_CONFIGURE, false },
        { CN_ACT_GET_BUCKET_OBJECT_LOCK_CONFIGURATION, CN_PERM_BUCKET_LIST, false },
        { CN_ACT_PUT_BUCKET_OBJECT_LOCK_CONFIGURATION, CN_PERM_BUCKET_CONFIGURE, false },
        { CN_ACT_PUT_OBJECT_RETENTION, CN_PERM_OBJECT_LOCK, true },
        { CN_ACT_PUT_OBJECT_LEGAL_HOLD, CN_PERM_OBJECT_LOCK, true },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        CN_CHECK_EQ(cn_authz_action_perm(t[i].a), t[i].p);
        CN_CHECK_EQ(cn_authz_action_is_object(t[i].a), t[i].obj);
    }
}

static void test_invalid_arguments(void)
{
    cn_authz_bucket_t b = { B, "alice", NULL, NULL, { false, false, false, false } };
    cn_authz_req_t r = mkreq("alice", CN_ACT_GET_OBJECT, NULL);
    cn_authz_decision_t d;
    CN_CHECK_EQ(cn_authz_decide(&r, &b, NULL, &d), CN_E_INVALID); /* no key */
    r.key = "k";
    CN_CHECK_EQ(cn_authz_decide(&r, NULL, NULL, &d), CN_E_INVALID); /* no bucket */
    cn_authz_bucket_t nob = { B, NULL, NULL, NULL, { false, false, false, false } };
    CN_CHECK_EQ(cn_authz_decide(&r, &nob, NULL, &d), CN_E_INVALID); /* no owner */
    r.action = CN_ACT_INVALID;
    CN_CHECK_EQ(cn_authz_decide(&r, &b, NULL, &d), CN_E_INVALID);
    r.action = (cn_authz_action_t)999;
    CN_CHECK_EQ(cn_authz_decide(&r, &b, NULL, &d), CN_E_INVALID);
    CN_CHECK_EQ(cn_authz_decide(NULL, &b, NULL, &d), CN_E_INVALID);
    /* A key with control characters leaves the reason one printable line. */
    r = mkreq("bob", CN_ACT_GET_OBJECT, "evil\nkey\r\x1b[0m");
    CN_CHECK_EQ(cn_authz_decide(&r, &b, NULL, &d), CN_E_DENIED);
    CN_CHECK(strchr(d.reason, '\n') == NULL && strchr(d.reason, '\r') == NULL &&
             strchr(d.reason, 0x1b) == NULL);
    CN_CHECK(strstr(d.reason, "evil?key") != NULL);
    /* out may be NULL. */
    r = mkreq("alice", CN_ACT_LIST_BUCKET, NULL);
    CN_CHECK_EQ(cn_authz_decide(&r, &b, NULL, NULL), CN_OK);
}

/* ---- owner and account-level actions -------------------------------------------------- */
static void test_owner_and_account_actions(void)
{
    cn_authz_bucket_t b = { B, "alice", NULL, NULL, { false, false, false, false } };
    for (int a = CN_ACT_DELETE_BUCKET; a < CN_ACT_END; a++) {
        const char *key = cn_authz_action_is_object((cn_authz_action_t)a) ? "k" : NULL;
        cn_authz_req_t r = mkreq("alice", (cn_authz_action_t)a, key);
        cn_authz_decision_t d;
        CN_CHECK_EQ(cn_authz_decide(&r, &b, NULL, &d), CN_OK);
        CN_CHECK_EQ(d.why, CN_WHY_OWNER);
        r.principal = "bob";
        CN_CHECK_EQ(cn_authz_decide(&r, &b, NULL, &d), CN_E_DENIED);
        CN_CHECK_EQ(d.why, CN_WHY_NO_GRANT);
        r.principal = NULL;
        CN_CHECK_EQ(cn_authz_decide(&r, &b, NULL, &d), CN_E_DENIED);
    }
    /* Account-level actions need an account and the permission, no bucket. */
    cn_authz_decision_t d;
    cn_authz_req_t r = mkreq("bob", CN_ACT_CREATE_BUCKET, NULL);
    CN_CHECK_EQ(cn_authz_decide(&r, NULL, NULL, &d), CN_OK);
    CN_CHECK_EQ(d.why, CN_WHY_ACCOUNT);
    r.action = CN_ACT_LIST_ALL_MY_BUCKETS;
    CN_CHECK_EQ(cn_authz_decide(&r, NULL, NULL, &d), CN_OK);
    r.principal = NULL;
    CN_CHECK_EQ(cn_authz_decide(&r, NULL, NULL, &d), CN_E_DENIED);
    CN_CHECK_EQ(d.why, CN_WHY_ANONYMOUS);
    r = mkreq("bob", CN_ACT_CREATE_BUCKET, NULL);
    r.perms = CN_PERM_OBJECT_GET;
    CN_CHECK_EQ(cn_authz_decide(&r, NULL, NULL, &d), CN_E_DENIED);
    CN_CHECK_EQ(d.why, CN_WHY_TOKEN);
    CN_CHECK(strstr(d.reason, "bucket:create") != NULL);
}

/* ---- canned ACLs on buckets --------------------------------------------------------------- */
static void test_canned_bucket_matrix(void)
{
    /* Per canned ACL: what another account and an anonymous caller may do. */
    static const struct {
        const char *acl;
        bool other_list, other_put, other_get_acl, other_put_acl;
        bool anon_list, anon_put;
    } t[] = {
        { "private", false, false, false, false, false, false },
        { "public-read", true, false, false, false, true, false },
        { "public-read-write", true, true, false, false, true, true },
        { "authenticated-read", true, false, false, false, false, false },
        { "bucket-owner-read", false, false, false, false, false, false },
        { "bucket-owner-full-control", false, false, false, false, false, false },
        { "log-delivery-write", false, false, false, false, false, false },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        cn_authz_acl_t acl = canned(t[i].acl, "alice", NULL, true);
        cn_authz_bucket_t b = { B, "alice", &acl, NULL, { false, false, false, false } };
        /* The owner may do everything whatever the ACL. */
        CN_CHECK(can("alice", CN_ACT_LIST_BUCKET, NULL, &b, NULL));
        CN_CHECK(can("alice", CN_ACT_PUT_OBJECT, "k", &b, NULL));
        CN_CHECK(can("alice", CN_ACT_PUT_BUCKET_ACL, NULL, &b, NULL));
        CN_CHECK(can("alice", CN_ACT_DELETE_BUCKET, NULL, &b, NULL));
        bool ok = true;
        ok &= can("bob", CN_ACT_LIST_BUCKET, NULL, &b, NULL) == t[i].other_list;
        ok &= can("bob", CN_ACT_PUT_OBJECT, "k", &b, NULL) == t[i].other_put;
        ok &= can("bob", CN_ACT_DELETE_OBJECT, "k", &b, NULL) == t[i].other_put;
        ok &= can("bob", CN_ACT_GET_BUCKET_ACL, NULL, &b, NULL) == t[i].other_get_acl;
        ok &= can("bob", CN_ACT_PUT_BUCKET_ACL, NULL, &b, NULL) == t[i].other_put_acl;
        ok &= can(NULL, CN_ACT_LIST_BUCKET, NULL, &b, NULL) == t[i].anon_list;
        ok &= can(NULL, CN_ACT_PUT_OBJECT, "k", &b, NULL) == t[i].anon_put;
        /* Bucket ACLs never reach objects: nobody else reads an object by them. */
        ok &= !can("bob", CN_ACT_GET_OBJECT, "k", &b, NULL);
        ok &= !can(NULL, CN_ACT_GET_OBJECT, "k", &b, NULL);
        /* Only the owner deletes the bucket. */
        ok &= !can("bob", CN_ACT_DELETE_BUCKET, NULL, &b, NULL);
        if (!ok)
            fprintf(stderr, "# bucket canned ACL %s\n", t[i].acl);
        CN_CHECK(ok);
    }
}

/* ---- canned ACLs on objects ------------------------------------------------------------------ */
static void test_canned_object_matrix(void)
{
    /* bob's object in alice's bucket (bucket ACL private).  Who may GetObject? */
    static const struct {
        const char *acl;
        bool alice_get, carol_get, anon_get, alice_get_acl, alice_put_acl;
    } t[] = {
        { "private", false, false, false, false, false },
        { "public-read", true, true, true, false, false },
        { "public-read-write", true, true, true, false, false },
        { "authenticated-read", true, true, false, false, false },
        { "bucket-owner-read", true, false, false, false, false },
        { "bucket-owner-full-control", true, false, false, true, true },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        cn_authz_acl_t oacl = canned(t[i].acl, "bob", "alice", false);
        cn_authz_bucket_t b = { B, "alice", NULL, NULL, { false, false, false, false } };
        cn_authz_object_t o = { "bob", &oacl, NULL, 0 };
        bool ok = true;
        /* The object owner always reads it and its ACL. */
        ok &= can("bob", CN_ACT_GET_OBJECT, "k", &b, &o);
        ok &= can("bob", CN_ACT_GET_OBJECT_ACL, "k", &b, &o);
        ok &= can("bob", CN_ACT_PUT_OBJECT_ACL, "k", &b, &o);
        ok &= can("alice", CN_ACT_GET_OBJECT, "k", &b, &o) == t[i].alice_get;
        ok &= can("alice", CN_ACT_GET_OBJECT_ACL, "k", &b, &o) == t[i].alice_get_acl;
        ok &= can("alice", CN_ACT_PUT_OBJECT_ACL, "k", &b, &o) == t[i].alice_put_acl;
        ok &= can("carol", CN_ACT_GET_OBJECT, "k", &b, &o) == t[i].carol_get;
        ok &= can(NULL, CN_ACT_GET_OBJECT, "k", &b, &o) == t[i].anon_get;
        ok &= !can("carol", CN_ACT_GET_OBJECT_ACL, "k", &b, &o);
        ok &= !can(NULL, CN_ACT_PUT_OBJECT_ACL, "k", &b, &o);
        /* Deleting and overwriting are the bucket's business: its owner may,
         * the object's owner may not (the bucket ACL is private). */
        ok &= can("alice", CN_ACT_DELETE_OBJECT, "k", &b, &o);
        ok &= !can("bob", CN_ACT_DELETE_OBJECT, "k", &b, &o);
        ok &= !can("bob", CN_ACT_PUT_OBJECT, "k", &b, &o);
        if (!ok)
            fprintf(stderr, "# object canned ACL %s\n", t[i].acl);
        CN_CHECK(ok);
    }

    /* The full bucket × object matrix for alice's own object, seen by bob and anonymous. */
    static const char *const bucket_acls[] = { "private", "public-read", "public-read-write",
                                               "authenticated-read" };
    static const char *const object_acls[] = { "private",           "public-read",
                                               "public-read-write", "authenticated-read",
                                               "bucket-owner-read", "bucket-owner-full-control" };
    for (size_t i = 0; i < 4; i++) {
        for (size_t j = 0; j < 6; j++) {
            cn_authz_acl_t bacl = canned(bucket_acls[i], "alice", NULL, true);
            cn_authz_acl_t oacl = canned(object_acls[j], "alice", "alice", false);
            cn_authz_bucket_t b = { B, "alice", &bacl, NULL, { false, false, false, false } };
            cn_authz_object_t o = { "alice", &oacl, NULL, 0 };
            bool bpub = i == 1 || i == 2, bauth = bpub || i == 3, bwrite = i == 2;
            bool opub = j == 1 || j == 2, oauth = opub || j == 3;
            bool ok = true;
            ok &= can("bob", CN_ACT_LIST_BUCKET, NULL, &b, NULL) == bauth;
            ok &= can(NULL, CN_ACT_LIST_BUCKET, NULL, &b, NULL) == bpub;
            ok &= can("bob", CN_ACT_GET_OBJECT, "k", &b, &o) == oauth;
            ok &= can(NULL, CN_ACT_GET_OBJECT, "k", &b, &o) == opub;
            ok &= can("bob", CN_ACT_PUT_OBJECT, "k", &b, &o) == bwrite;
            ok &= can(NULL, CN_ACT_DELETE_OBJECT, "k", &b, &o) == bwrite;
            ok &= can("alice", CN_ACT_GET_OBJECT, "k", &b, &o);
            if (!ok)
                fprintf(stderr, "# bucket %s x object %s\n", bucket_acls[i], object_acls[j]);
            CN_CHECK(ok);
        }
    }

    /* A missing object is judged as a private object of the bucket owner. */
    cn_authz_bucket_t b = { B, "alice", NULL, NULL, { false, false, false, false } };
    CN_CHECK(can("alice", CN_ACT_GET_OBJECT, "nope", &b, NULL));
    CN_CHECK(!can("bob", CN_ACT_GET_OBJECT, "nope", &b, NULL));
    /* An object without a stored ACL is private to its owner. */
    cn_authz_object_t o = { "bob", NULL, NULL, 0 };
    CN_CHECK(can("bob", CN_ACT_GET_OBJECT, "k", &b, &o));
    CN_CHECK(!can("alice", CN_ACT_GET_OBJECT, "k", &b, &o));
}

/* ---- explicit grants ------------------------------------------------------------------------ */
static void test_grant_semantics(void)
{
    static const struct {
        uint32_t perm;
        bool list, put, get_acl, put_acl; /* on a bucket */
        bool oget, oget_acl, oput_acl;    /* on an object */
    } t[] = {
        { CN_ACL_READ, true, false, false, false, true, false, false },
        { CN_ACL_WRITE, false, true, false, false, false, false, false },
        { CN_ACL_READ_ACP, false, false, true, false, false, true, false },
        { CN_ACL_WRITE_ACP, false, false, false, true, false, false, true },
        { CN_ACL_FULL_CONTROL, true, true, true, true, true, true, true },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        cn_authz_acl_t bacl, oacl;
        CN_CHECK_EQ(cn_authz_acl_init(&bacl, "alice"), 0);
        CN_CHECK_EQ(cn_authz_acl_add(&bacl, CN_GRANTEE_USER, "alice", CN_ACL_FULL_CONTROL), 0);
        CN_CHECK_EQ(cn_authz_acl_add(&bacl, CN_GRANTEE_USER, "bob", t[i].perm), 0);
        CN_CHECK_EQ(cn_authz_acl_init(&oacl, "alice"), 0);
        CN_CHECK_EQ(cn_authz_acl_add(&oacl, CN_GRANTEE_USER, "bob", t[i].perm), 0);
        cn_authz_bucket_t b = { B, "alice", &bacl, NULL, { false, false, false, false } };
        cn_authz_object_t o = { "alice", &oacl, NULL, 0 };
        bool ok = true;
        ok &= can("bob", CN_ACT_LIST_BUCKET, NULL, &b, NULL) == t[i].list;
        ok &= can("bob", CN_ACT_LIST_BUCKET_MULTIPART_UPLOADS, NULL, &b, NULL) == t[i].list;
        ok &= can("bob", CN_ACT_PUT_OBJECT, "k", &b, NULL) == t[i].put;
        ok &= can("bob", CN_ACT_DELETE_OBJECT, "k", &b, NULL) == t[i].put;
        ok &= can("bob", CN_ACT_ABORT_MULTIPART_UPLOAD, "k", &b, NULL) == t[i].put;
        ok &= can("bob", CN_ACT_GET_BUCKET_ACL, NULL, &b, NULL) == t[i].get_acl;
        ok &= can("bob", CN_ACT_PUT_BUCKET_ACL, NULL, &b, NULL) == t[i].put_acl;
        ok &= can("bob", CN_ACT_GET_OBJECT, "k", &b, &o) == t[i].oget;
        ok &= can("bob", CN_ACT_GET_OBJECT_ACL, "k", &b, &o) == t[i].oget_acl;
        ok &= can("bob", CN_ACT_PUT_OBJECT_ACL, "k", &b, &o) == t[i].oput_acl;
        /* No ACL grant reaches owner-only or ACL-less actions. */
        ok &= !can("bob", CN_ACT_DELETE_BUCKET, NULL, &b, NULL);
        ok &= !can("bob", CN_ACT_PUT_BUCKET_POLICY, NULL, &b, NULL);
        ok &= !can("bob", CN_ACT_GET_BUCKET_CORS, NULL, &b, NULL);
        /* Someone else gets nothing from bob's grant. */
        ok &= !can("carol", CN_ACT_LIST_BUCKET, NULL, &b, NULL);
        ok &= !can("carol", CN_ACT_GET_OBJECT, "k", &b, &o);
        if (!ok)
            fprintf(stderr, "# grant %s\n", cn_authz_acl_perm_name(t[i].perm));
        CN_CHECK(ok);
    }
    /* The reason names the grant. */
    cn_authz_acl_t acl;
    cn_authz_acl_init(&acl, "alice");
    cn_authz_acl_add(&acl, CN_GRANTEE_AUTH_USERS, NULL, CN_ACL_READ);
    cn_authz_bucket_t b = { B, "alice", &acl, NULL, { false, false, false, false } };
    cn_authz_req_t r = mkreq("bob", CN_ACT_LIST_BUCKET, NULL);
    cn_authz_decision_t d;
    CN_CHECK_EQ(cn_authz_decide(&r, &b, NULL, &d), CN_OK);
    CN_CHECK_EQ(d.why, CN_WHY_ACL);
    CN_CHECK(strstr(d.reason, "READ to AuthenticatedUsers by the bucket ACL") != NULL);
    r.principal = NULL;
    CN_CHECK_EQ(cn_authz_decide(&r, &b, NULL, &d),
                CN_E_DENIED); /* anonymous is not authenticated */
    /* LogDelivery grants never match a caller. */
    cn_authz_acl_t ld = canned("log-delivery-write", "alice", NULL, true);
    b.acl = &ld;
    CN_CHECK(!can("bob", CN_ACT_PUT_OBJECT, "k", &b, NULL));
    CN_CHECK(!can(NULL, CN_ACT_PUT_OBJECT, "k", &b, NULL));
}

/* ---- the token ceiling ------------------------------------------------------------------------- */
static void test_token_ceiling(void)
{
    cn_authz_acl_t acl = canned("public-read-write", "alice", NULL, true);
    cn_authz_policy_t *p = NULL;
    const char *pj = "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\","
                     "\"Resource\":[\"arn:aws:s3:::b\",\"arn:aws:s3:::b/*\"]}}";
    CN_CHECK_EQ(cn_authz_policy_parse(pj, strlen(pj), B, &p, NULL), 0);
    cn_authz_bucket_t b = { B, "alice", &acl, p, { false, false, false, false } };

    static const struct {
        cn_authz_action_t a;
        const char *key;
        cn_perms_t perm;
    } t[] = {
        { CN_ACT_LIST_BUCKET, NULL, CN_PERM_OBJECT_LIST },
        { CN_ACT_GET_OBJECT, "k", CN_PERM_OBJECT_GET },
        { CN_ACT_PUT_OBJECT, "k", CN_PERM_OBJECT_PUT },
        { CN_ACT_DELETE_OBJECT, "k", CN_PERM_OBJECT_DELETE },
        { CN_ACT_DELETE_BUCKET, NULL, CN_PERM_BUCKET_DELETE },
        { CN_ACT_GET_BUCKET_ACL, NULL, CN_PERM_BUCKET_LIST },
        { CN_ACT_PUT_BUCKET_ACL, NULL, CN_PERM_BUCKET_CREATE },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        for (int who = 0; who < 2; who++) { /* owner and another account alike */
            cn_authz_req_t r = mkreq(who ? "bob" : "alice", t[i].a, t[i].key);
            cn_authz_decision_t d;
            r.perms = CN_PERM_ALL & ~CN_PERM_ADMIN & ~t[i].perm;
            CN_CHECK_EQ(cn_authz_decide(&r, &b, NULL, &d), CN_E_DENIED);
            CN_CHECK_EQ(d.why, CN_WHY_TOKEN);
            CN_CHECK(strstr(d.reason, cn_perm_name(t[i].perm)) != NULL);
            r.perms = t[i].perm;
            CN_CHECK_EQ(cn_authz_decide(&r, &b, NULL, &d), CN_OK);
            r.perms = CN_PERM_ADMIN; /* admin satisfies every permission */
            CN_CHECK_EQ(cn_authz_decide(&r, &b, NULL, &d), CN_OK);
            r.perms = 0;
            CN_CHECK_EQ(cn_authz_decide(&r, &b, NULL, &d), CN_E_DENIED);
        }
    }
    /* admin is a ceiling, not a master key: another account's private bucket stays shut. */
    cn_authz_bucket_t priv = { B, "alice", NULL, NULL, { false, false, false, false } };
    cn_authz_req_t r = mkreq("admin", CN_ACT_GET_OBJECT, "k");
    r.perms = CN_PERM_ALL;
    CN_CHECK(!decide(&r, &priv, NULL));
    /* An anonymous caller has no token: only grants and the policy count. */
    r = mkreq(NULL, CN_ACT_PUT_OBJECT, "k");
    r.perms = 0;
    CN_CHECK(decide(&r, &b, NULL));
    cn_authz_policy_free(p);
}

/* ---- public access block ------------------------------------------------------------------------ */
static void test_public_access_block(void)
{
    cn_authz_acl_t pub = canned("public-read-write", "alice", NULL, true);
    cn_authz_acl_add(&pub, CN_GRANTEE_USER, "carol", CN_ACL_READ);
    cn_authz_acl_t auth = canned("authenticated-read", "alice", NULL, true);
    cn_authz_acl_t opub = canned("public-read", "alice", "alice", false);
    cn_authz_bucket_t b = { B, "alice", &pub, NULL, { false, false, false, false } };
    cn_authz_object_t o = { "alice", &opub, NULL, 0 };
    CN_CHECK(can(NULL, CN_ACT_LIST_BUCKET, NULL, &b, NULL));
    CN_CHECK(can(NULL, CN_ACT_GET_OBJECT, "k", &b, &o));
    b.pab.ignore_public_acls = true;
    CN_CHECK(!can(NULL, CN_ACT_LIST_BUCKET, NULL, &b, NULL));
    CN_CHECK(!can("bob", CN_ACT_LIST_BUCKET, NULL, &b, NULL));
    CN_CHECK(!can(NULL, CN_ACT_PUT_OBJECT, "k", &b, NULL));
    CN_CHECK(!can(NULL, CN_ACT_GET_OBJECT, "k", &b, &o));
    CN_CHECK(!can("bob", CN_ACT_GET_OBJECT, "k", &b, &o));
    CN_CHECK(can("carol", CN_ACT_LIST_BUCKET, NULL, &b, NULL)); /* a user grant still counts */
    CN_CHECK(can("alice", CN_ACT_LIST_BUCKET, NULL, &b, NULL));
    b.acl = &auth;
    CN_CHECK(!can("bob", CN_ACT_LIST_BUCKET, NULL, &b, NULL));

    /* BlockPublicAcls / BlockPublicPolicy refuse to store public ones. */
    cn_authz_pab_t pab = { true, false, false, false };
    cn_authz_acl_t priv = canned("private", "alice", NULL, true);
    cn_authz_acl_t bor = canned("bucket-owner-read", "bob", "alice", false);
    CN_CHECK_EQ(cn_authz_pab_check_acl(&pab, &pub), CN_E_DENIED);
    CN_CHECK_EQ(cn_authz_pab_check_acl(&pab, &auth), CN_E_DENIED);
    CN_CHECK_EQ(cn_authz_pab_check_acl(&pab, &priv), 0);
    CN_CHECK_EQ(cn_authz_pab_check_acl(&pab, &bor), 0);
    CN_CHECK_EQ(cn_authz_pab_check_acl(NULL, &pub), 0);
    pab.block_public_acls = false;
    CN_CHECK_EQ(cn_authz_pab_check_acl(&pab, &pub), 0);

    const char *pubj =
        "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\","
        "\"Resource\":[\"arn:aws:s3:::b\",\"arn:aws:s3:::b/*\"]}}";
    const char *ipj =
        "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\","
        "\"Resource\":[\"arn:aws:s3:::b\",\"arn:aws:s3:::b/*\"],\"Condition\":"
        "{\"IpAddress\":{\"aws:SourceIp\":\"10.0.0.0/8\"}}}}";
    const char *bobj =
        "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"bob\"},"
        "\"Action\":\"s3:*\",\"Resource\":[\"arn:aws:s3:::b\",\"arn:aws:s3:::b/*\"]}}";
    cn_authz_policy_t *pp = NULL, *ip = NULL, *bp = NULL;
    CN_CHECK_EQ(cn_authz_policy_parse(pubj, strlen(pubj), B, &pp, NULL), 0);
    CN_CHECK_EQ(cn_authz_policy_parse(ipj, strlen(ipj), B, &ip, NULL), 0);
    CN_CHECK_EQ(cn_authz_policy_parse(bobj, strlen(bobj), B, &bp, NULL), 0);
    pab.block_public_policy = true;
    CN_CHECK_EQ(cn_authz_pab_check_policy(&pab, pp), CN_E_DENIED);
    CN_CHECK_EQ(cn_authz_pab_check_policy(&pab, ip), 0);
    CN_CHECK_EQ(cn_authz_pab_check_policy(&pab, bp), 0);
    CN_CHECK_EQ(cn_authz_pab_check_policy(NULL, pp), 0);

    /* RestrictPublicBuckets: a public policy grants only the owner's account. */
    cn_authz_bucket_t pb = { B, "alice", NULL, pp, { false, false, false, false } };
    CN_CHECK(can(NULL, CN_ACT_GET_OBJECT, "k", &pb, NULL));
    CN_CHECK(can("bob", CN_ACT_PUT_OBJECT, "k", &pb, NULL));
    pb.pab.restrict_public_buckets = true;
    CN_CHECK(!can(NULL, CN_ACT_GET_OBJECT, "k", &pb, NULL));
    cn_authz_req_t r = mkreq("bob", CN_ACT_PUT_OBJECT, "k");
    cn_authz_decision_t d;
    CN_CHECK_EQ(cn_authz_decide(&r, &pb, NULL, &d), CN_E_DENIED);
    CN_CHECK(strstr(d.reason, "RestrictPublicBuckets") != NULL);
    CN_CHECK(can("alice", CN_ACT_PUT_OBJECT, "k", &pb, NULL));
    /* ... while a non-public policy keeps granting. */
    pb.policy = bp;
    CN_CHECK(can("bob", CN_ACT_PUT_OBJECT, "k", &pb, NULL));
    pb.policy = ip;
    r = mkreq("bob", CN_ACT_GET_OBJECT, "k");
    cn_authz_ip_parse("10.0.0.1", &r.source_ip);
    CN_CHECK(decide(&r, &pb, NULL));
    /* RestrictPublicBuckets leaves ACLs alone. */
    cn_authz_acl_t pr = canned("public-read", "alice", NULL, true);
    pb.policy = pp;
    pb.acl = &pr;
    CN_CHECK(can(NULL, CN_ACT_LIST_BUCKET, NULL, &pb, NULL));
    cn_authz_policy_free(pp);
    cn_authz_policy_free(ip);
    cn_authz_policy_free(bp);
}

/* ---- visibility --------------------------------------------------------------------------------- */
static void test_visibility(void)
{
    cn_authz_bucket_t b = { B, "alice", NULL, NULL, { false, false, false, false } };
    CN_CHECK_EQ(cn_authz_visibility(&b), CN_VIS_PRIVATE);
    cn_authz_acl_t acl;
    CN_CHECK_EQ(cn_authz_visibility_acl(CN_VIS_PUBLIC, "alice", &acl), 0);
    b.acl = &acl;
    CN_CHECK_EQ(cn_authz_visibility(&b), CN_VIS_PUBLIC);
    b.pab.ignore_public_acls = true;
    CN_CHECK_EQ(cn_authz_visibility(&b), CN_VIS_PRIVATE);
    b.pab.ignore_public_acls = false;
    CN_CHECK_EQ(cn_authz_visibility_acl(CN_VIS_PRIVATE, "alice", &acl), 0);
    CN_CHECK_EQ(cn_authz_visibility(&b), CN_VIS_PRIVATE);
    CN_CHECK_EQ(acl.ngrants, 1);
    cn_authz_acl_t auth = canned("authenticated-read", "alice", NULL, true);
    b.acl = &auth;
    CN_CHECK_EQ(cn_authz_visibility(&b), CN_VIS_PRIVATE);
    b.acl = NULL;

    /* By policy: every object readable → public; one prefix, or one address range → private. */
    static const struct {
        const char *json;
        cn_authz_visibility_t v;
    } t[] = {
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
          "\"Resource\":\"arn:aws:s3:::b/*\"}}",
          CN_VIS_PUBLIC },
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:ListBucket\","
          "\"Resource\":\"arn:aws:s3:::b\"}}",
          CN_VIS_PUBLIC },
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
          "\"Resource\":\"arn:aws:s3:::b/public/*\"}}",
          CN_VIS_PRIVATE },
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
          "\"Resource\":\"arn:aws:s3:::b/"
          "*\",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":\"10.0.0.0/8\"}}}}",
          CN_VIS_PRIVATE },
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"bob\"},\"Action\":\"s3:"
          "GetObject\","
          "\"Resource\":\"arn:aws:s3:::b/*\"}}",
          CN_VIS_PRIVATE },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        cn_authz_policy_t *p = NULL;
        CN_CHECK_EQ(cn_authz_policy_parse(t[i].json, strlen(t[i].json), B, &p, NULL), 0);
        b.policy = p;
        CN_CHECK_EQ(cn_authz_visibility(&b), t[i].v);
        b.pab.restrict_public_buckets = true;
        CN_CHECK_EQ(cn_authz_visibility(&b), CN_VIS_PRIVATE);
        b.pab.restrict_public_buckets = false;
        cn_authz_policy_free(p);
    }
    b.policy = NULL;
    CN_CHECK_EQ(cn_authz_visibility(NULL), CN_VIS_PRIVATE);

    CN_CHECK_STR(cn_authz_visibility_name(CN_VIS_PUBLIC), "public");
    CN_CHECK_STR(cn_authz_visibility_name(CN_VIS_PRIVATE), "private");
    cn_authz_visibility_t v;
    CN_CHECK_EQ(cn_authz_visibility_parse("public", &v), 0);
    CN_CHECK_EQ(v, CN_VIS_PUBLIC);
    CN_CHECK_EQ(cn_authz_visibility_parse("private", &v), 0);
    CN_CHECK_EQ(v, CN_VIS_PRIVATE);
    CN_CHECK_EQ(cn_authz_visibility_parse("Public", &v), CN_E_INVALID);
    CN_CHECK_EQ(cn_authz_visibility_parse(NULL, &v), CN_E_INVALID);
    CN_CHECK_EQ(cn_authz_visibility_acl((cn_authz_visibility_t)7, "alice", &acl), CN_E_INVALID);
}

/* ---- the ACL model ---------------------------------------------------------------------------- */
static void test_acl_model(void)
{
    cn_authz_acl_t a;
    static const char *const bad[] = { "", "Private", "public", "aws-exec-read", "private " };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CN_CHECK_EQ(cn_authz_acl_canned(&a, bad[i], strlen(bad[i]), "alice", "alice", false),
                    CN_E_INVALID);
    CN_CHECK_EQ(cn_authz_acl_canned(&a, "log-delivery-write", 18, "alice", "alice", false),
                CN_E_INVALID);
    CN_CHECK_EQ(cn_authz_acl_canned(&a, "private", 7, "", NULL, true), CN_E_INVALID);
    CN_CHECK_EQ(cn_authz_acl_canned(&a, "bucket-owner-read", 17, "bob", NULL, false), CN_E_INVALID);

    /* Grants of each canned ACL. */
    a = canned("public-read-write", "alice", NULL, true);
    CN_CHECK_EQ(a.ngrants, 3);
    CN_CHECK_STR(a.owner, "alice");
    CN_CHECK(a.grants[0].type == CN_GRANTEE_USER && a.grants[0].perm == CN_ACL_FULL_CONTROL);
    CN_CHECK(a.grants[1].type == CN_GRANTEE_ALL_USERS && a.grants[1].perm == CN_ACL_READ);
    CN_CHECK(a.grants[2].type == CN_GRANTEE_ALL_USERS && a.grants[2].perm == CN_ACL_WRITE);
    a = canned("bucket-owner-full-control", "bob", "alice", false);
    CN_CHECK_EQ(a.ngrants, 2);
    CN_CHECK_STR(a.grants[1].id, "alice");
    a = canned("bucket-owner-full-control", "alice", "alice", false);
    CN_CHECK_EQ(a.ngrants, 1);
    a = canned("bucket-owner-read", "alice", NULL, true); /* on a bucket: private */
    CN_CHECK_EQ(a.ngrants, 1);
    a = canned("log-delivery-write", "alice", NULL, true);
    CN_CHECK_EQ(a.ngrants, 3);
    CN_CHECK(!cn_authz_acl_is_public(&a));

    static const struct {
        const char *name;
        bool pub;
    } pubs[] = {
        { "private", false },           { "public-read", true },
        { "public-read-write", true },  { "authenticated-read", true },
        { "bucket-owner-read", false }, { "bucket-owner-full-control", false },
    };
    for (size_t i = 0; i < sizeof pubs / sizeof pubs[0]; i++) {
        a = canned(pubs[i].name, "bob", "alice", false);
        CN_CHECK_EQ(cn_authz_acl_is_public(&a), pubs[i].pub);
    }
    CN_CHECK(!cn_authz_acl_is_public(NULL));

    /* add: validation, de-duplication, the limit. */
    CN_CHECK_EQ(cn_authz_acl_init(&a, "alice"), 0);
    CN_CHECK_EQ(cn_authz_acl_init(&a, "bad name"), CN_E_INVALID);
    CN_CHECK_EQ(cn_authz_acl_init(&a, NULL), CN_E_INVALID);
    CN_CHECK_EQ(cn_authz_acl_init(&a, "alice"), 0);
    CN_CHECK_EQ(cn_authz_acl_add(&a, CN_GRANTEE_USER, "bob", CN_ACL_READ | CN_ACL_WRITE),
                CN_E_INVALID);
    CN_CHECK_EQ(cn_authz_acl_add(&a, CN_GRANTEE_USER, "bob", 0), CN_E_INVALID);
    CN_CHECK_EQ(cn_authz_acl_add(&a, CN_GRANTEE_USER, "bob", 1u << 5), CN_E_INVALID);
    CN_CHECK_EQ(cn_authz_acl_add(&a, CN_GRANTEE_USER, NULL, CN_ACL_READ), CN_E_INVALID);
    CN_CHECK_EQ(cn_authz_acl_add(&a, CN_GRANTEE_USER, "", CN_ACL_READ), CN_E_INVALID);
    CN_CHECK_EQ(cn_authz_acl_add(&a, (cn_grantee_type_t)9, NULL, CN_ACL_READ), CN_E_INVALID);
    CN_CHECK_EQ(cn_authz_acl_add(&a, CN_GRANTEE_USER, "bob", CN_ACL_READ), 0);
    CN_CHECK_EQ(cn_authz_acl_add(&a, CN_GRANTEE_USER, "bob", CN_ACL_READ), 0);
    CN_CHECK_EQ(cn_authz_acl_add(&a, CN_GRANTEE_ALL_USERS, "ignored", CN_ACL_READ), 0);
    CN_CHECK_EQ(a.ngrants, 2);
    CN_CHECK_STR(a.grants[1].id, "");
    CN_CHECK_EQ(cn_authz_acl_init(&a, "alice"), 0);
    for (int i = 0; i < CN_ACL_MAX_GRANTS; i++) {
        char id[16];
        snprintf(id, sizeof id, "u%d", i);
        CN_CHECK_EQ(cn_authz_acl_add(&a, CN_GRANTEE_USER, id, CN_ACL_READ), 0);
    }
    CN_CHECK_EQ(cn_authz_acl_add(&a, CN_GRANTEE_USER, "one-more", CN_ACL_READ), CN_E_LIMIT);
    CN_CHECK_EQ(cn_authz_acl_add(&a, CN_GRANTEE_USER, "u7", CN_ACL_READ), 0); /* duplicate: fine */

    /* Names. */
    static const char *const pn[] = { "READ", "WRITE", "READ_ACP", "WRITE_ACP", "FULL_CONTROL" };
    for (unsigned i = 0; i < 5; i++) {
        uint32_t p;
        CN_CHECK_STR(cn_authz_acl_perm_name(1u << i), pn[i]);
        CN_CHECK_EQ(cn_authz_acl_perm_parse(pn[i], strlen(pn[i]), &p), 0);
        CN_CHECK_EQ(p, 1u << i);
    }
    uint32_t p;
    CN_CHECK_EQ(cn_authz_acl_perm_parse("read", 4, &p), CN_E_INVALID);
    CN_CHECK(cn_authz_acl_perm_name(3) == NULL);
    cn_grantee_type_t gt;
    const char *all = "http://acs.amazonaws.com/groups/global/AllUsers";
    const char *au = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers";
    const char *ldu = "http://acs.amazonaws.com/groups/s3/LogDelivery";
    CN_CHECK_EQ(cn_authz_group_parse(all, strlen(all), &gt), 0);
    CN_CHECK_EQ(gt, CN_GRANTEE_ALL_USERS);
    CN_CHECK_EQ(cn_authz_group_parse(au, strlen(au), &gt), 0);
    CN_CHECK_EQ(gt, CN_GRANTEE_AUTH_USERS);
    CN_CHECK_EQ(cn_authz_group_parse(ldu, strlen(ldu), &gt), 0);
    CN_CHECK_EQ(gt, CN_GRANTEE_LOG_DELIVERY);
    CN_CHECK_EQ(cn_authz_group_parse(all, strlen(all) - 1, &gt), CN_E_INVALID);
    CN_CHECK_STR(cn_authz_group_uri(CN_GRANTEE_AUTH_USERS), au);
    CN_CHECK(cn_authz_group_uri(CN_GRANTEE_USER) == NULL);
}

static void test_acl_serialization(void)
{
    cn_authz_acl_t a = canned("public-read", "alice", NULL, true);
    CN_CHECK_EQ(cn_authz_acl_add(&a, CN_GRANTEE_USER, "bob", CN_ACL_WRITE_ACP), 0);
    CN_CHECK_EQ(cn_authz_acl_add(&a, CN_GRANTEE_AUTH_USERS, NULL, CN_ACL_READ_ACP), 0);
    CN_CHECK_EQ(cn_authz_acl_add(&a, CN_GRANTEE_LOG_DELIVERY, NULL, CN_ACL_WRITE), 0);
    cn_buf_t buf = { 0 };
    CN_CHECK_EQ(cn_authz_acl_serialize(&a, &buf), 0);
    const char *want =
        "{\"grants\":[{\"id\":\"alice\",\"perm\":\"FULL_CONTROL\"},{\"group\":\"AllUsers\","
        "\"perm\":\"READ\"},{\"id\":\"bob\",\"perm\":\"WRITE_ACP\"},{\"group\":"
        "\"AuthenticatedUsers\",\"perm\":\"READ_ACP\"},{\"group\":\"LogDelivery\",\"perm\":"
        "\"WRITE\"}],\"owner\":\"alice\"}";
    CN_CHECK_EQ(buf.len, strlen(want));
    CN_CHECK(buf.len == strlen(want) && memcmp(buf.data, want, buf.len) == 0);

    cn_authz_acl_t back;
    CN_CHECK_EQ(cn_authz_acl_parse((const char *)buf.data, buf.len, &back), 0);
    CN_CHECK(acl_equal(&a, &back));
    cn_buf_t again = { 0 };
    CN_CHECK_EQ(cn_authz_acl_serialize(&back, &again), 0);
    CN_CHECK(again.len == buf.len && memcmp(again.data, buf.data, buf.len) == 0);
    cn_buf_free(&buf);
    cn_buf_free(&again);

    /* An empty ACL. */
    CN_CHECK_EQ(cn_authz_acl_init(&a, "bob"), 0);
    CN_CHECK_EQ(cn_authz_acl_serialize(&a, &buf), 0);
    CN_CHECK_EQ(cn_authz_acl_parse((const char *)buf.data, buf.len, &back), 0);
    CN_CHECK_EQ(back.ngrants, 0);
    CN_CHECK_STR(back.owner, "bob");
    cn_buf_free(&buf);

    static const char *const bad[] = {
        "",
        "{",
        "[]",
        "{\"owner\":\"a\"}",
        "{\"grants\":[]}",
        "{\"grants\":[],\"owner\":\"a\",\"x\":1}",
        "{\"grants\":[],\"owner\":\"bad name\"}",
        "{\"grants\":[],\"owner\":5}",
        "{\"grants\":{},\"owner\":\"a\"}",
        "{\"grants\":[{\"id\":\"b\"}],\"owner\":\"a\"}",
        "{\"grants\":[{\"id\":\"b\",\"perm\":\"read\"}],\"owner\":\"a\"}",
        "{\"grants\":[{\"id\":\"b c\",\"perm\":\"READ\"}],\"owner\":\"a\"}",
        "{\"grants\":[{\"group\":\"Everyone\",\"perm\":\"READ\"}],\"owner\":\"a\"}",
        "{\"grants\":[{\"id\":\"b\",\"perm\":\"READ\",\"x\":1}],\"owner\":\"a\"}",
        "{\"grants\":[{\"id\":\"b\",\"group\":\"AllUsers\"}],\"owner\":\"a\"}",
        "{\"grants\":[5],\"owner\":\"a\"}",
        "{\"grants\":[],\"owner\":\"a\",\"owner\":\"b\"}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&back, 0x5A, sizeof back);
        if (cn_authz_acl_parse(bad[i], strlen(bad[i]), &back) != CN_E_INVALID)
            fprintf(stderr, "# accepted: %s\n", bad[i]);
        CN_CHECK_EQ(cn_authz_acl_parse(bad[i], strlen(bad[i]), &back), CN_E_INVALID);
        CN_CHECK_EQ(back.ngrants, 0);
    }
    CN_CHECK_EQ(cn_authz_acl_parse(NULL, 0, &back), CN_E_INVALID);
    /* More than CN_ACL_MAX_GRANTS grants. */
    cn_buf_t big = { 0 };
    cn_buf_append_str(&big, "{\"grants\":[");
    for (int i = 0; i <= CN_ACL_MAX_GRANTS; i++)
        cn_buf_printf(&big, "%s{\"id\":\"u%d\",\"perm\":\"READ\"}", i ? "," : "", i);
    cn_buf_append_str(&big, "],\"owner\":\"a\"}");
    CN_CHECK_EQ(cn_authz_acl_parse((const char *)big.data, big.len, &back), CN_E_INVALID);
    cn_buf_free(&big);
}

/* ---- blob namespaces --------------------------------------------------------------------- */
static void test_namespace(void)
{
    const cn_perms_t user = CN_PERM_BLOBS_READ | CN_PERM_BLOBS_WRITE;
    cn_authz_decision_t d;
    /* Closed by default: no grants, nobody but the operator. */
    CN_CHECK_EQ(cn_authz_namespace_decide(NULL, 0, "ns", "bob", user, CN_NS_READ, &d), CN_E_DENIED);
    CN_CHECK_EQ(d.why, CN_WHY_NS_CLOSED);
    CN_CHECK_EQ(cn_authz_namespace_decide(NULL, 0, "ns", "bob", user, CN_NS_WRITE, &d),
                CN_E_DENIED);
    CN_CHECK_EQ(cn_authz_namespace_decide(NULL, 0, "ns", "admin", CN_PERM_ADMIN, CN_NS_READ, &d),
                0);
    CN_CHECK_EQ(d.why, CN_WHY_NS_OPERATOR);
    CN_CHECK_EQ(cn_authz_namespace_decide(NULL, 0, "ns", "admin", CN_PERM_ADMIN, CN_NS_WRITE, &d),
                0);
    CN_CHECK_EQ(
        cn_authz_namespace_decide(NULL, 0, "ns", "admin", CN_PERM_ADMIN, CN_AUTHZ_NS_DELETE, &d),
        0);

    cn_ns_grant_t g[3];
    memset(g, 0, sizeof g);
    snprintf(g[0].ns, sizeof g[0].ns, "ns");
    snprintf(g[0].account, sizeof g[0].account, "bob");
    g[0].actions = CN_NS_READ;
    snprintf(g[1].ns, sizeof g[1].ns, "other");
    snprintf(g[1].account, sizeof g[1].account, "bob");
    g[1].actions = CN_NS_ALL;
    snprintf(g[2].ns, sizeof g[2].ns, "ns");
    snprintf(g[2].account, sizeof g[2].account, "carol");
    g[2].actions = CN_NS_ALL;

    static const struct {
        const char *who;
        cn_perms_t perms;
        uint32_t act;
        cn_err_t rc;
        cn_authz_why_t why;
    } t[] = {
        { "bob", user, CN_NS_READ, 0, CN_WHY_NS_GRANT },
        { "bob", user, CN_NS_WRITE, CN_E_DENIED, CN_WHY_NS_CLOSED }, /* write is on "other" only */
        { "bob", CN_PERM_BLOBS_WRITE, CN_NS_READ, CN_E_DENIED, CN_WHY_TOKEN },
        { "bob", user, CN_AUTHZ_NS_DELETE, CN_E_DENIED, CN_WHY_NS_OPERATOR_ONLY },
        { "carol", user, CN_NS_WRITE, 0, CN_WHY_NS_GRANT },
        { "carol", CN_PERM_BLOBS_READ, CN_NS_WRITE, CN_E_DENIED, CN_WHY_TOKEN },
        { "carol", CN_PERM_DEFAULT, CN_AUTHZ_NS_DELETE, CN_E_DENIED, CN_WHY_NS_OPERATOR_ONLY },
        { "dave", user, CN_NS_READ, CN_E_DENIED, CN_WHY_NS_CLOSED },
        { NULL, CN_PERM_ALL, CN_NS_READ, CN_E_DENIED, CN_WHY_ANONYMOUS },
        { "dave", CN_PERM_ADMIN, CN_AUTHZ_NS_DELETE, 0, CN_WHY_NS_OPERATOR },
        { "dave", CN_PERM_ADMIN, CN_NS_WRITE, 0, CN_WHY_NS_OPERATOR },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        cn_err_t rc = cn_authz_namespace_decide(g, 3, "ns", t[i].who, t[i].perms, t[i].act, &d);
        if (rc != t[i].rc || d.why != t[i].why)
            fprintf(stderr, "# ns case %zu: %s\n", i, d.reason);
        CN_CHECK_EQ(rc, t[i].rc);
        CN_CHECK_EQ(d.why, t[i].why);
        CN_CHECK_EQ(d.allow, rc == 0);
    }
    CN_CHECK_EQ(cn_authz_namespace_decide(g, 3, "other", "bob", user, CN_NS_WRITE, &d), 0);
    CN_CHECK_EQ(cn_authz_namespace_decide(g, 3, "ns", "bob", user, 0, &d), CN_E_INVALID);
    CN_CHECK_EQ(cn_authz_namespace_decide(g, 3, "ns", "bob", user, CN_NS_ALL, &d), CN_E_INVALID);
    CN_CHECK_EQ(cn_authz_namespace_decide(g, 3, NULL, "bob", user, CN_NS_READ, &d), CN_E_INVALID);
    /* The held form. */
    CN_CHECK_EQ(cn_authz_namespace_decide_held(CN_NS_READ, "bob", user, CN_NS_READ, NULL), 0);
    CN_CHECK_EQ(cn_authz_namespace_decide_held(0, "bob", user, CN_NS_READ, NULL), CN_E_DENIED);
    CN_CHECK_EQ(cn_authz_namespace_decide_held(CN_NS_ALL, "bob", user, CN_AUTHZ_NS_DELETE, NULL),
                CN_E_DENIED);
}

CN_TEST_MAIN(CN_TEST(test_action_table), CN_TEST(test_invalid_arguments),
             CN_TEST(test_owner_and_account_actions), CN_TEST(test_canned_bucket_matrix),
             CN_TEST(test_canned_object_matrix), CN_TEST(test_grant_semantics),
             CN_TEST(test_token_ceiling), CN_TEST(test_public_access_block),
             CN_TEST(test_visibility), CN_TEST(test_acl_model), CN_TEST(test_acl_serialization),
             CN_TEST(test_namespace))
