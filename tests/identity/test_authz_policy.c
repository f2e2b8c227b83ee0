/* authz policy: parsing (every malformed shape with its own message),
 * principals, wildcards in Action/Resource, conditions, source-IP ranges
 * (v4 and v6), the AWS "is public" rule. */
#include "cn_test.h"
#include "cairn/authz.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>

#define B "b"

static cn_authz_policy_t *pol_for(const char *bucket, const char *json)
{
    cn_authz_policy_t *p = NULL;
    char err[CN_AUTHZ_ERR_MAX];
    cn_err_t rc = cn_authz_policy_parse(json, strlen(json), bucket, &p, err);
    if (rc) {
        fprintf(stderr, "# policy rejected: %s\n#   %s\n", err, json);
        CN_CHECK_EQ(rc, 0);
    }
    return p;
}

static cn_authz_policy_t *pol(const char *json)
{
    return pol_for(B, json);
}

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

/* Decide as `principal` on bucket B owned by "alice" under policy p. */
static bool allow_r(const cn_authz_policy_t *p, const cn_authz_req_t *r)
{
    cn_authz_bucket_t b = { B, "alice", NULL, p, { false, false, false, false } };
    cn_authz_decision_t d;
    cn_err_t rc = cn_authz_decide(r, &b, NULL, &d);
    CN_CHECK(rc == CN_OK || rc == CN_E_DENIED);
    CN_CHECK_EQ(d.allow, rc == CN_OK);
    return rc == CN_OK;
}

static bool allow(const cn_authz_policy_t *p, const char *principal, cn_authz_action_t act,
                  const char *key)
{
    cn_authz_req_t r = mkreq(principal, act, key);
    return allow_r(p, &r);
}

static void set_ip(cn_authz_req_t *r, const char *ip)
{
    CN_CHECK_EQ(cn_authz_ip_parse(ip, &r->source_ip), 0);
}

/* ---- malformed ---------------------------------------------------------------- */
static void test_malformed_each_has_its_message(void)
{
    static const struct {
        const char *json;
        const char *msg;
    } bad[] = {
        { "", "policy is empty" },
        { "{", "not valid JSON" },
        { "[1]", "must be a JSON object" },
        { "{\"Statement\":[],\"Foo\":1}", "unknown top-level field \"Foo\"" },
        { "{\"Version\":\"2020-01-01\",\"Statement\":{}}", "Version must be" },
        { "{\"Id\":5,\"Statement\":{}}", "Id must be a string" },
        { "{\"Version\":\"2012-10-17\"}", "missing Statement" },
        { "{\"Statement\":[]}", "Statement must be an object or a non-empty list" },
        { "{\"Statement\":[5]}", "statement 1: a statement must be an object" },
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\","
          "\"Resource\":\"arn:aws:s3:::b\",\"Bogus\":1}}",
          "statement 1: unknown field \"Bogus\"" },
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:Bogus\","
          "\"Resource\":\"arn:aws:s3:::b\"}}",
          "invalid action \"s3:Bogus\": Amazon S3 defines" },
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:Nope*\","
          "\"Resource\":\"arn:aws:s3:::b\"}}",
          "invalid action \"s3:Nope*\": Amazon S3 defines" },
        { "{\"Statement\":{\"Sid\":7}}", "Sid must be a string" },
        { "{\"Statement\":{\"Sid\":\"a/b\"}}", "Sid may hold only" },
        { "{\"Statement\":{\"Principal\":\"*\"}}", "missing Effect" },
        { "{\"Statement\":{\"Effect\":\"allow\"}}", "Effect must be \"Allow\" or \"Deny\"" },
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"s3:*\"}}", "missing Principal" },
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"NotPrincipal\":\"*\"}}",
          "Principal and NotPrincipal are exclusive" },
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"bob\"}}",
          "invalid Principal \"bob\"" },
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":{}}}",
          "Principal must be \"*\" or a non-empty object" },
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":{\"Federated\":\"x\"}}}",
          "unsupported Principal type \"Federated\"" },
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"arn:aws:iam::bob:user/"
          "x\"}}}",
          "an account ARN is arn:aws:iam::NAME:root" },
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"b o b\"}}}",
          "invalid principal \"b o b\"" },
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":[]}}}",
          "Principal must not be an empty list" },
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":[3]}}}",
          "Principal must be a string or a list of strings" },
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\"}}", "missing Action" },
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"*\","
          "\"NotAction\":\"*\"}}",
          "Action and NotAction are exclusive" },
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"ec2:Run\"}}",
          "invalid action \"ec2:Run\"" },
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\"}}",
          "missing Resource" },
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\","
          "\"Resource\":\"*\",\"NotResource\":\"*\"}}",
          "Resource and NotResource are exclusive" },
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\","
          "\"Resource\":\"*\"}}",
          "invalid resource \"*\"" },
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\","
          "\"Resource\":\"arn:aws:s3:::other/*\"}}",
          "is outside bucket b" },
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\","
          "\"Resource\":\"arn:aws:s3:::b\",\"Condition\":[]}}",
          "Condition must be an object" },
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\","
          "\"Resource\":\"arn:aws:s3:::b\",\"Condition\":{\"StringEquals\":5}}}",
          "condition StringEquals must be a non-empty object of keys" },
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\","
          "\"Resource\":\"arn:aws:s3:::b\",\"Condition\":{\"StringSorta\":{\"s3:prefix\":\"a\"}}}}",
          "unsupported condition operator \"StringSorta\"" },
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\","
          "\"Resource\":\"arn:aws:s3:::b\",\"Condition\":{\"StringEquals\":{\"s3:nope\":\"a\"}}}}",
          "unsupported condition key \"s3:nope\"" },
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\","
          "\"Resource\":\"arn:aws:s3:::b\",\"Condition\":{\"IpAddress\":{\"s3:prefix\":\"a\"}}}}",
          "IpAddress works only on aws:SourceIp" },
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\","
          "\"Resource\":\"arn:aws:s3:::b\",\"Condition\":{\"StringEquals\":{\"aws:SourceIp\":\"a\"}"
          "}}}",
          "aws:SourceIp needs IpAddress or NotIpAddress" },
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\","
          "\"Resource\":\"arn:aws:s3:::b\",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":\"10.0.0."
          "0/33\"}}}}",
          "\"10.0.0.0/33\" is not an IP address or CIDR range" },
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\","
          "\"Resource\":\"arn:aws:s3:::b\",\"Condition\":{\"NumericLessThan\":{\"s3:max-keys\":"
          "\"ten\"}}}}",
          "\"ten\" is not a number" },
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\","
          "\"Resource\":\"arn:aws:s3:::b\",\"Condition\":{\"Bool\":{\"aws:SecureTransport\":"
          "\"yes\"}}}}",
          "\"yes\" is not true or false" },
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\","
          "\"Resource\":\"arn:aws:s3:::b\",\"Condition\":{\"StringEquals\":{\"s3:prefix\":[]}}}}",
          "has no values" },
        { "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\","
          "\"Resource\":\"arn:aws:s3:::b\",\"Condition\":{\"StringEquals\":{\"s3:prefix\":{}}}}}",
          "values must be strings, numbers or booleans" },
        { "{\"Statement\":[{\"Sid\":\"x\",\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:"
          "*\","
          "\"Resource\":\"arn:aws:s3:::b\"},{\"Sid\":\"x\",\"Effect\":\"Deny\",\"Principal\":\"*\","
          "\"Action\":\"s3:*\",\"Resource\":\"arn:aws:s3:::b\"}]}",
          "statement 2: duplicate Sid \"x\"" },
        { "{\"Statement\":{},\"Statement\":{}}", "not valid JSON" },
    };
    size_t n = sizeof bad / sizeof bad[0];
    char msgs[sizeof bad / sizeof bad[0]][CN_AUTHZ_ERR_MAX];
    for (size_t i = 0; i < n; i++) {
        cn_authz_policy_t *p = (cn_authz_policy_t *)1;
        char *err = msgs[i];
        cn_err_t rc = cn_authz_policy_parse(bad[i].json, strlen(bad[i].json), B, &p, err);
        CN_CHECK_EQ(rc, CN_E_INVALID);
        CN_CHECK(p == NULL);
        if (!strstr(err, bad[i].msg))
            fprintf(stderr, "# case %zu: got \"%s\", want \"%s\"\n", i, err, bad[i].msg);
        CN_CHECK(strstr(err, bad[i].msg) != NULL);
    }
    /* Distinct shapes give distinct messages (the two JSON syntax cases aside). */
    for (size_t i = 0; i + 1 < n; i++)
        for (size_t j = i + 1; j + 1 < n; j++)
            CN_CHECK(strcmp(msgs[i], msgs[j]) != 0);

    /* The size limit, and a NULL err is allowed. */
    char *big = malloc(CN_AUTHZ_POLICY_MAX + 2);
    memset(big, ' ', CN_AUTHZ_POLICY_MAX + 1);
    big[CN_AUTHZ_POLICY_MAX + 1] = 0;
    char err[CN_AUTHZ_ERR_MAX];
    cn_authz_policy_t *p = NULL;
    CN_CHECK_EQ(cn_authz_policy_parse(big, CN_AUTHZ_POLICY_MAX + 1, B, &p, err), CN_E_INVALID);
    CN_CHECK(strstr(err, "the limit is 20480") != NULL);
    CN_CHECK_EQ(cn_authz_policy_parse(big, CN_AUTHZ_POLICY_MAX + 1, B, &p, NULL), CN_E_INVALID);
    free(big);
    CN_CHECK_EQ(cn_authz_policy_parse("{}", 2, NULL, &p, err), CN_E_INVALID);
    cn_authz_policy_free(NULL);
}

static void test_well_formed_shapes(void)
{
    static const char *const good[] = {
        /* single statement object, no Version */
        "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
        "\"Resource\":\"arn:aws:s3:::b/*\"}}",
        /* lists everywhere, 2008 version, Id, NotPrincipal, service principals */
        "{\"Version\":\"2008-10-17\",\"Id\":\"p1\",\"Statement\":[{\"Sid\":\"A b-c_d.e\","
        "\"Effect\":\"Deny\",\"NotPrincipal\":{\"AWS\":[\"arn:aws:iam::alice:root\",\"bob\"],"
        "\"Service\":\"logging.s3.amazonaws.com\"},\"NotAction\":[\"s3:Get*\",\"s3:List*\"],"
        "\"NotResource\":[\"arn:aws:s3:::b\",\"arn:aws:s3:::b/*\"]}]}",
        /* bucket wildcards that still name this bucket */
        "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":{\"CanonicalUser\":\"bob\"},"
        "\"Action\":\"*\",\"Resource\":[\"arn:aws:s3:::*\",\"arn:aws:s3:::?/x\"]}}",
        /* every operator family, IfExists, ForAnyValue / ForAllValues, numbers and bools */
        "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:ListBucket\","
        "\"Resource\":\"arn:aws:s3:::b\",\"Condition\":{"
        "\"StringEqualsIgnoreCase\":{\"s3:delimiter\":\"/\"},"
        "\"StringNotLikeIfExists\":{\"s3:prefix\":\"secret/*\"},"
        "\"NumericLessThanEquals\":{\"s3:max-keys\":100},"
        "\"NumericGreaterThan\":{\"s3:max-keys\":\"0.5\"},"
        "\"Bool\":{\"aws:SecureTransport\":true},"
        "\"Null\":{\"s3:x-amz-acl\":\"true\"},"
        "\"ForAnyValue:StringLike\":{\"aws:Referer\":[\"http://a/*\",\"http://b/*\"]},"
        "\"ForAllValues:StringEquals\":{\"aws:UserAgent\":\"x\"},"
        "\"ArnLike\":{\"aws:SourceArn\":\"arn:aws:s3:::*\"},"
        "\"NotIpAddress\":{\"aws:SourceIp\":[\"10.0.0.0/8\",\"2001:db8::/32\",\"192.0.2.1\"]},"
        "\"StringEquals\":{\"s3:ExistingObjectTag/team\":\"red\"}}}}",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        cn_authz_policy_t *p = pol(good[i]);
        CN_CHECK(p != NULL);
        cn_authz_policy_free(p);
    }
}

/* ---- principals --------------------------------------------------------------- */
static void test_principals(void)
{
    static const struct {
        const char *principal;
        bool bob, carol, anon;
    } t[] = {
        { "\"*\"", true, true, true },
        { "{\"AWS\":\"*\"}", true, true, true },
        { "{\"AWS\":\"arn:aws:iam::bob:root\"}", true, false, false },
        { "{\"AWS\":\"bob\"}", true, false, false },
        { "{\"AWS\":[\"bob\",\"carol\"]}", true, true, false },
        { "{\"CanonicalUser\":\"carol\"}", false, true, false },
        { "{\"Service\":\"s3.amazonaws.com\"}", false, false, false },
        { "{\"AWS\":\"bo\"}", false, false, false },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char json[512];
        snprintf(json, sizeof json,
                 "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":%s,"
                 "\"Action\":\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::b/*\"}}",
                 t[i].principal);
        cn_authz_policy_t *p = pol(json);
        CN_CHECK_EQ(allow(p, "bob", CN_ACT_GET_OBJECT, "k"), t[i].bob);
        CN_CHECK_EQ(allow(p, "carol", CN_ACT_GET_OBJECT, "k"), t[i].carol);
        CN_CHECK_EQ(allow(p, NULL, CN_ACT_GET_OBJECT, "k"), t[i].anon);
        cn_authz_policy_free(p);
    }
    /* NotPrincipal: a Deny for everyone but bob. */
    cn_authz_policy_t *p =
        pol("{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
            "\"Resource\":\"arn:aws:s3:::b/"
            "*\"},{\"Effect\":\"Deny\",\"NotPrincipal\":{\"AWS\":\"bob\"},"
            "\"Action\":\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::b/*\"}]}");
    CN_CHECK(allow(p, "bob", CN_ACT_GET_OBJECT, "k"));
    CN_CHECK(!allow(p, "carol", CN_ACT_GET_OBJECT, "k"));
    CN_CHECK(!allow(p, NULL, CN_ACT_GET_OBJECT, "k"));
    CN_CHECK(!allow(p, "alice", CN_ACT_GET_OBJECT, "k")); /* the owner too */
    cn_authz_policy_free(p);
}

/* ---- wildcards ------------------------------------------------------------------ */
static void test_action_wildcards(void)
{
    static const struct {
        const char *action;
        bool get, put, list, get_acl;
    } t[] = {
        { "\"*\"", true, true, true, true },
        { "\"s3:*\"", true, true, true, true },
        { "\"s3:Get*\"", true, false, false, true },
        { "\"s3:*Object\"", true, true, false, false },
        { "\"s3:?etObject\"", true, false, false, false },
        { "\"S3:getobject\"", true, false, false, false }, /* actions ignore case */
        { "[\"s3:PutObject\",\"s3:ListBucket\"]", false, true, true, false },
        { "\"s3:GetObjectVersio?\"", false, false, false, false },
        { "\"s3:PutObjectTagging\"", false, false, false, false }, /* defined, not used here */
        { "\"s3:*Acl\"", false, false, false, true },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char json[512];
        snprintf(json, sizeof json,
                 "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\","
                 "\"Action\":%s,\"Resource\":[\"arn:aws:s3:::b\",\"arn:aws:s3:::b/*\"]}}",
                 t[i].action);
        cn_authz_policy_t *p = pol(json);
        CN_CHECK_EQ(allow(p, "bob", CN_ACT_GET_OBJECT, "k"), t[i].get);
        CN_CHECK_EQ(allow(p, "bob", CN_ACT_PUT_OBJECT, "k"), t[i].put);
        CN_CHECK_EQ(allow(p, "bob", CN_ACT_LIST_BUCKET, NULL), t[i].list);
        CN_CHECK_EQ(allow(p, "bob", CN_ACT_GET_OBJECT_ACL, "k"), t[i].get_acl);
        cn_authz_policy_free(p);
    }
    /* NotAction: everything but deletes. */
    cn_authz_policy_t *p = pol("{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\","
                               "\"NotAction\":\"s3:Delete*\",\"Resource\":\"arn:aws:s3:::b/*\"}}");
    CN_CHECK(allow(p, "bob", CN_ACT_PUT_OBJECT, "k"));
    CN_CHECK(!allow(p, "bob", CN_ACT_DELETE_OBJECT, "k"));
    cn_authz_policy_free(p);
}

static void test_resource_wildcards(void)
{
    static const struct {
        const char *res;
        const char *key;
        bool ok;
    } t[] = {
        { "arn:aws:s3:::b/*", "anything/at/all", true },
        { "arn:aws:s3:::b/*", "", true },
        { "arn:aws:s3:::b/public/*", "public/x.txt", true },
        { "arn:aws:s3:::b/public/*", "public", false },
        { "arn:aws:s3:::b/public/*", "private/x", false },
        { "arn:aws:s3:::b/*.jpg", "a/b/c.jpg", true },
        { "arn:aws:s3:::b/*.jpg", "a.jpeg", false },
        { "arn:aws:s3:::b/????.txt", "abcd.txt", true },
        { "arn:aws:s3:::b/????.txt", "abc.txt", false },
        { "arn:aws:s3:::b/a*b*c", "aXXbYYc", true },
        { "arn:aws:s3:::b/a*b*c", "aXXbYY", false },
        { "arn:aws:s3:::b/exact", "exact", true },
        { "arn:aws:s3:::b/exact", "Exact", false }, /* keys are case-sensitive */
        { "arn:aws:s3:::b", "k", false },           /* the bucket is not its objects */
        { "arn:aws:s3:::*", "k", true },
        { "arn:aws:s3:::b*", "k", true }, /* '*' crosses '/' */
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char json[512];
        snprintf(json, sizeof json,
                 "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\","
                 "\"Action\":\"s3:GetObject\",\"Resource\":\"%s\"}}",
                 t[i].res);
        cn_authz_policy_t *p = pol(json);
        if (allow(p, "bob", CN_ACT_GET_OBJECT, t[i].key) != t[i].ok)
            fprintf(stderr, "# case %zu: %s vs %s\n", i, t[i].res, t[i].key);
        CN_CHECK_EQ(allow(p, "bob", CN_ACT_GET_OBJECT, t[i].key), t[i].ok);
        cn_authz_policy_free(p);
    }
    /* A bucket-level action matches the bucket ARN, not the object ARNs. */
    cn_authz_policy_t *p = pol("{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\","
                               "\"Action\":\"s3:ListBucket\",\"Resource\":\"arn:aws:s3:::b/*\"}}");
    CN_CHECK(!allow(p, "bob", CN_ACT_LIST_BUCKET, NULL));
    cn_authz_policy_free(p);
    p = pol("{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\","
            "\"Action\":\"s3:ListBucket\",\"Resource\":\"arn:aws:s3:::b\"}}");
    CN_CHECK(allow(p, "bob", CN_ACT_LIST_BUCKET, NULL));
    cn_authz_policy_free(p);
    /* NotResource. */
    p = pol("{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
            "\"NotResource\":\"arn:aws:s3:::b/secret/*\"}}");
    CN_CHECK(allow(p, "bob", CN_ACT_GET_OBJECT, "open/x"));
    CN_CHECK(!allow(p, "bob", CN_ACT_GET_OBJECT, "secret/x"));
    cn_authz_policy_free(p);
    /* A long key and a pathological pattern still finish. */
    p = pol("{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
            "\"Resource\":\"arn:aws:s3:::b/*a*a*a*a*a*a*a*a*b\"}}");
    char key[2049];
    memset(key, 'a', sizeof key - 1);
    key[sizeof key - 1] = 0;
    CN_CHECK(!allow(p, "bob", CN_ACT_GET_OBJECT, key));
    key[sizeof key - 2] = 'b';
    CN_CHECK(allow(p, "bob", CN_ACT_GET_OBJECT, key));
    cn_authz_policy_free(p);
}

/* ---- precedence ------------------------------------------------------------------ */
static void test_allow_deny_precedence(void)
{
    cn_authz_policy_t *p = pol(
        "{\"Version\":\"2012-10-17\",\"Statement\":["
        "{\"Sid\":\"ReadAll\",\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
        "\"Resource\":\"arn:aws:s3:::b/*\"},"
        "{\"Sid\":\"NoSecrets\",\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:*\","
        "\"Resource\":\"arn:aws:s3:::b/secret/*\"},"
        "{\"Sid\":\"BobWrites\",\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"bob\"},"
        "\"Action\":[\"s3:PutObject\",\"s3:DeleteObject\"],\"Resource\":\"arn:aws:s3:::b/*\"},"
        "{\"Sid\":\"NoCarol\",\"Effect\":\"Deny\",\"Principal\":{\"AWS\":\"arn:aws:iam::carol:"
        "root\"},"
        "\"Action\":\"s3:*\",\"Resource\":[\"arn:aws:s3:::b\",\"arn:aws:s3:::b/*\"]}]}");
    CN_CHECK(allow(p, "bob", CN_ACT_GET_OBJECT, "pub/x"));
    CN_CHECK(allow(p, NULL, CN_ACT_GET_OBJECT, "pub/x"));
    CN_CHECK(!allow(p, "bob", CN_ACT_GET_OBJECT, "secret/x"));
    CN_CHECK(!allow(p, "alice", CN_ACT_GET_OBJECT, "secret/x")); /* Deny binds the owner */
    CN_CHECK(allow(p, "alice", CN_ACT_GET_OBJECT, "pub/x"));
    CN_CHECK(allow(p, "bob", CN_ACT_PUT_OBJECT, "pub/x"));
    CN_CHECK(!allow(p, "bob", CN_ACT_PUT_OBJECT, "secret/x"));
    CN_CHECK(!allow(p, NULL, CN_ACT_PUT_OBJECT, "pub/x"));
    CN_CHECK(!allow(p, "carol", CN_ACT_GET_OBJECT, "pub/x"));
    CN_CHECK(!allow(p, "carol", CN_ACT_LIST_BUCKET, NULL));

    /* The reason names the statement. */
    cn_authz_req_t r = mkreq("carol", CN_ACT_GET_OBJECT, "pub/x");
    cn_authz_bucket_t b = { B, "alice", NULL, p, { false, false, false, false } };
    cn_authz_decision_t d;
    CN_CHECK_EQ(cn_authz_decide(&r, &b, NULL, &d), CN_E_DENIED);
    CN_CHECK_EQ(d.why, CN_WHY_POLICY_DENY);
    CN_CHECK(strstr(d.reason, "statement 4 (NoCarol)") != NULL);
    r = mkreq("bob", CN_ACT_PUT_OBJECT, "x");
    CN_CHECK_EQ(cn_authz_decide(&r, &b, NULL, &d), CN_OK);
    CN_CHECK_EQ(d.why, CN_WHY_POLICY_ALLOW);
    CN_CHECK(strstr(d.reason, "statement 3 (BobWrites)") != NULL);
    /* The server's own worker acting for the owner (lifecycle) is not bound
     * by a Deny; acting for anyone else, it is. */
    r = mkreq("alice", CN_ACT_GET_OBJECT, "secret/x");
    CN_CHECK_EQ(cn_authz_decide(&r, &b, NULL, &d), CN_E_DENIED);
    r.service = true;
    CN_CHECK_EQ(cn_authz_decide(&r, &b, NULL, &d), CN_OK);
    r = mkreq("carol", CN_ACT_GET_OBJECT, "pub/x");
    r.service = true;
    CN_CHECK_EQ(cn_authz_decide(&r, &b, NULL, &d), CN_E_DENIED);
    cn_authz_policy_free(p);

    /* A Deny on everything cannot lock the owner out of its policy. */
    p = pol("{\"Statement\":{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"*\","
            "\"Resource\":[\"arn:aws:s3:::b\",\"arn:aws:s3:::b/*\"]}}");
    CN_CHECK(!allow(p, "alice", CN_ACT_GET_OBJECT, "k"));
    CN_CHECK(!allow(p, "alice", CN_ACT_LIST_BUCKET, NULL));
    CN_CHECK(!allow(p, "alice", CN_ACT_PUT_BUCKET_ACL, NULL));
    CN_CHECK(allow(p, "alice", CN_ACT_GET_BUCKET_POLICY, NULL));
    CN_CHECK(allow(p, "alice", CN_ACT_PUT_BUCKET_POLICY, NULL));
    CN_CHECK(allow(p, "alice", CN_ACT_DELETE_BUCKET_POLICY, NULL));
    CN_CHECK(!allow(p, "bob", CN_ACT_DELETE_BUCKET_POLICY, NULL));
    cn_authz_policy_free(p);

    /* Policy management stays with the owner even when a policy allows it to all. */
    p = pol("{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\","
            "\"Resource\":\"arn:aws:s3:::b\"}}");
    CN_CHECK(!allow(p, "bob", CN_ACT_PUT_BUCKET_POLICY, NULL));
    CN_CHECK(!allow(p, "bob", CN_ACT_GET_BUCKET_POLICY, NULL));
    CN_CHECK(!allow(p, "bob", CN_ACT_PUT_BUCKET_PUBLIC_ACCESS_BLOCK, NULL));
    CN_CHECK(!allow(p, "bob", CN_ACT_GET_BUCKET_POLICY_STATUS, NULL));
    CN_CHECK(allow(p, "bob", CN_ACT_PUT_BUCKET_ACL, NULL));
    CN_CHECK(allow(p, "bob", CN_ACT_DELETE_BUCKET, NULL));
    cn_authz_policy_free(p);
}

/* ---- source IP ----------------------------------------------------------------------- */
static void test_source_ip(void)
{
    /* Deny everything outside 10.0.0.0/8 and 2001:db8::/32; allow reads to all. */
    cn_authz_policy_t *p = pol(
        "{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
        "\"Resource\":\"arn:aws:s3:::b/*\"},{\"Sid\":\"OnlyInside\",\"Effect\":\"Deny\","
        "\"Principal\":\"*\",\"Action\":\"s3:*\",\"Resource\":\"arn:aws:s3:::b/*\",\"Condition\":"
        "{\"NotIpAddress\":{\"aws:SourceIp\":[\"10.0.0.0/8\",\"2001:db8::/32\"]}}}]}");
    static const struct {
        const char *ip;
        bool ok;
    } t[] = {
        { "10.1.2.3", true },
        { "10.255.255.255", true },
        { "11.0.0.0", false },
        { "9.255.255.255", false },
        { "192.168.1.1", false },
        { "::ffff:10.9.9.9", true },
        { "::ffff:192.168.0.1", false },
        { "2001:db8::1", true },
        { "2001:db8:ffff:ffff::1", true },
        { "2001:db9::1", false },
        { "::1", false },
        { "fe80::1", false },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        cn_authz_req_t r = mkreq("bob", CN_ACT_GET_OBJECT, "k");
        set_ip(&r, t[i].ip);
        if (allow_r(p, &r) != t[i].ok)
            fprintf(stderr, "# case %s\n", t[i].ip);
        CN_CHECK_EQ(allow_r(p, &r), t[i].ok);
        r.principal = "alice"; /* the owner is bound by the Deny too */
        CN_CHECK_EQ(allow_r(p, &r), t[i].ok);
    }
    /* An unknown source address is outside every range: NotIpAddress holds. */
    cn_authz_req_t r = mkreq("bob", CN_ACT_GET_OBJECT, "k");
    CN_CHECK(!allow_r(p, &r));
    cn_authz_policy_free(p);

    /* IpAddress allow with odd prefixes, a single host, a v4-mapped range. */
    p = pol("{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
            "\"Resource\":\"arn:aws:s3:::b/*\",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":"
            "[\"192.0.2.128/25\",\"198.51.100.7\",\"::ffff:203.0.113.0/120\",\"2001:db8:abcd::/"
            "49\"]}}}}");
    static const struct {
        const char *ip;
        bool ok;
    } u[] = {
        { "192.0.2.128", true },
        { "192.0.2.255", true },
        { "192.0.2.127", false },
        { "198.51.100.7", true },
        { "198.51.100.8", false },
        { "203.0.113.9", true },
        { "203.0.114.1", false },
        { "2001:db8:abcd:7fff::1", true },
        { "2001:db8:abcd:8000::1", false },
    };
    for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) {
        r = mkreq(NULL, CN_ACT_GET_OBJECT, "k");
        set_ip(&r, u[i].ip);
        if (allow_r(p, &r) != u[i].ok)
            fprintf(stderr, "# case %s\n", u[i].ip);
        CN_CHECK_EQ(allow_r(p, &r), u[i].ok);
    }
    r = mkreq(NULL, CN_ACT_GET_OBJECT, "k");
    CN_CHECK(!allow_r(p, &r)); /* unknown address: IpAddress does not hold */
    cn_authz_policy_free(p);
}

static void test_ip_helpers(void)
{
    cn_authz_ip_t ip;
    CN_CHECK_EQ(cn_authz_ip_parse("1.2.3.4", &ip), 0);
    CN_CHECK_EQ(ip.family, 4);
    CN_CHECK(ip.addr[0] == 1 && ip.addr[3] == 4);
    CN_CHECK_EQ(cn_authz_ip_parse("::ffff:1.2.3.4", &ip), 0);
    CN_CHECK_EQ(ip.family, 4);
    CN_CHECK(ip.addr[0] == 1 && ip.addr[3] == 4);
    CN_CHECK_EQ(cn_authz_ip_parse("2001:db8::1", &ip), 0);
    CN_CHECK_EQ(ip.family, 6);
    CN_CHECK_EQ(cn_authz_ip_parse("1.2.3", &ip), CN_E_INVALID);
    CN_CHECK_EQ(cn_authz_ip_parse("", &ip), CN_E_INVALID);
    CN_CHECK_EQ(cn_authz_ip_parse(NULL, &ip), CN_E_INVALID);
    CN_CHECK_EQ(ip.family, 0);

    struct sockaddr_in in4;
    memset(&in4, 0, sizeof in4);
    in4.sin_family = AF_INET;
    inet_pton(AF_INET, "127.0.0.1", &in4.sin_addr);
    cn_authz_ip_from_sockaddr((const struct sockaddr *)&in4, &ip);
    CN_CHECK_EQ(ip.family, 4);
    CN_CHECK_EQ(ip.addr[0], 127);
    struct sockaddr_in6 in6;
    memset(&in6, 0, sizeof in6);
    in6.sin6_family = AF_INET6;
    inet_pton(AF_INET6, "::ffff:127.0.0.2", &in6.sin6_addr);
    cn_authz_ip_from_sockaddr((const struct sockaddr *)&in6, &ip);
    CN_CHECK_EQ(ip.family, 4);
    CN_CHECK_EQ(ip.addr[3], 2);
    inet_pton(AF_INET6, "::1", &in6.sin6_addr);
    cn_authz_ip_from_sockaddr((const struct sockaddr *)&in6, &ip);
    CN_CHECK_EQ(ip.family, 6);
    CN_CHECK_EQ(ip.addr[15], 1);
    struct sockaddr_un un;
    memset(&un, 0, sizeof un);
    un.sun_family = AF_UNIX;
    cn_authz_ip_from_sockaddr((const struct sockaddr *)&un, &ip);
    CN_CHECK_EQ(ip.family, 0);
    cn_authz_ip_from_sockaddr(NULL, &ip);
    CN_CHECK_EQ(ip.family, 0);
}

/* ---- conditions ------------------------------------------------------------------------- */
static cn_authz_policy_t *list_cond(const char *cond)
{
    char json[1024];
    snprintf(json, sizeof json,
             "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\","
             "\"Action\":\"s3:ListBucket\",\"Resource\":\"arn:aws:s3:::b\",\"Condition\":%s}}",
             cond);
    return pol(json);
}

typedef struct {
    const char *prefix, *delimiter, *max_keys;
    bool ok;
} list_case_t;

static void run_list_cases(const char *cond, const list_case_t *c, size_t n)
{
    cn_authz_policy_t *p = list_cond(cond);
    for (size_t i = 0; i < n; i++) {
        cn_authz_req_t r = mkreq("bob", CN_ACT_LIST_BUCKET, NULL);
        r.prefix = c[i].prefix;
        r.delimiter = c[i].delimiter;
        r.max_keys = c[i].max_keys;
        if (allow_r(p, &r) != c[i].ok)
            fprintf(stderr, "# %s: case %zu\n", cond, i);
        CN_CHECK_EQ(allow_r(p, &r), c[i].ok);
    }
    cn_authz_policy_free(p);
}

static void test_conditions_strings(void)
{
    static const list_case_t eq[] = {
        { "home/", NULL, NULL, true },  { "home", NULL, NULL, false },
        { "HOME/", NULL, NULL, false }, { "docs/", NULL, NULL, true },
        { NULL, NULL, NULL, false },    { "", NULL, NULL, false },
    };
    run_list_cases("{\"StringEquals\":{\"s3:prefix\":[\"home/\",\"docs/\"]}}", eq, 6);

    static const list_case_t ic[] = { { "HOME/", NULL, NULL, true },
                                      { "home", NULL, NULL, false } };
    run_list_cases("{\"StringEqualsIgnoreCase\":{\"s3:prefix\":\"home/\"}}", ic, 2);

    static const list_case_t like[] = {
        { "home/bob/", NULL, NULL, true },
        { "home/", NULL, NULL, true },
        { "hom", NULL, NULL, false },
        { NULL, NULL, NULL, false },
    };
    run_list_cases("{\"StringLike\":{\"s3:prefix\":\"home/*\"}}", like, 4);

    /* Negated operators hold when the key is absent (AWS semantics). */
    static const list_case_t ne[] = {
        { "secret/", NULL, NULL, false },
        { "x", NULL, NULL, true },
        { NULL, NULL, NULL, true },
    };
    run_list_cases("{\"StringNotEquals\":{\"s3:prefix\":\"secret/\"}}", ne, 3);
    static const list_case_t nl[] = {
        { "secret/a", NULL, NULL, false },
        { "open/", NULL, NULL, true },
        { NULL, NULL, NULL, true },
    };
    run_list_cases("{\"StringNotLike\":{\"s3:prefix\":[\"secret/*\",\"private*\"]}}", nl, 3);

    /* IfExists: an absent key passes. */
    static const list_case_t ie[] = {
        { "home/", NULL, NULL, true },
        { "x", NULL, NULL, false },
        { NULL, NULL, NULL, true },
    };
    run_list_cases("{\"StringLikeIfExists\":{\"s3:prefix\":\"home/*\"}}", ie, 3);

    /* Two keys in a block AND; two blocks AND. */
    static const list_case_t both[] = {
        { "home/", "/", NULL, true },
        { "home/", NULL, NULL, false },
        { "home/", "|", NULL, false },
        { "x/", "/", NULL, false },
    };
    run_list_cases("{\"StringEquals\":{\"s3:prefix\":\"home/\",\"s3:delimiter\":\"/\"}}", both, 4);
    run_list_cases(
        "{\"StringEquals\":{\"s3:prefix\":\"home/\"},\"StringLike\":{\"s3:delimiter\":\"/\"}}",
        both, 4);

    /* ForAnyValue on an absent key fails, ForAllValues on one holds. */
    static const list_case_t any[] = { { "a", NULL, NULL, true }, { NULL, NULL, NULL, false } };
    run_list_cases("{\"ForAnyValue:StringEquals\":{\"s3:prefix\":[\"a\",\"b\"]}}", any, 2);
    static const list_case_t all[] = { { "a", NULL, NULL, true },
                                       { "c", NULL, NULL, false },
                                       { NULL, NULL, NULL, true } };
    run_list_cases("{\"ForAllValues:StringEquals\":{\"s3:prefix\":[\"a\",\"b\"]}}", all, 3);

    /* Null. */
    static const list_case_t nul[] = { { NULL, NULL, NULL, true }, { "a", NULL, NULL, false } };
    run_list_cases("{\"Null\":{\"s3:prefix\":\"true\"}}", nul, 2);
    static const list_case_t notnul[] = { { NULL, NULL, NULL, false }, { "a", NULL, NULL, true } };
    run_list_cases("{\"Null\":{\"s3:prefix\":false}}", notnul, 2);

    /* Keys ignore case. */
    static const list_case_t kc[] = { { "a", NULL, NULL, true }, { "b", NULL, NULL, false } };
    run_list_cases("{\"StringEquals\":{\"S3:Prefix\":\"a\"}}", kc, 2);
}

static void test_conditions_numbers(void)
{
    static const list_case_t le[] = {
        { NULL, NULL, "100", true },  { NULL, NULL, "99", true }, { NULL, NULL, "101", false },
        { NULL, NULL, "ten", false }, { NULL, NULL, "", false },  { NULL, NULL, NULL, false },
        { NULL, NULL, "1e2", true },
    };
    run_list_cases("{\"NumericLessThanEquals\":{\"s3:max-keys\":\"100\"}}", le, 7);
    static const list_case_t lt[] = { { NULL, NULL, "100", false }, { NULL, NULL, "5", true } };
    run_list_cases("{\"NumericLessThan\":{\"s3:max-keys\":100}}", lt, 2);
    static const list_case_t gt[] = { { NULL, NULL, "10", true }, { NULL, NULL, "5", false } };
    run_list_cases("{\"NumericGreaterThan\":{\"s3:max-keys\":5}}", gt, 2);
    static const list_case_t ge[] = { { NULL, NULL, "5", true }, { NULL, NULL, "4", false } };
    run_list_cases("{\"NumericGreaterThanEquals\":{\"s3:max-keys\":5}}", ge, 2);
    static const list_case_t eq[] = { { NULL, NULL, "5", true },
                                      { NULL, NULL, "5.0", true },
                                      { NULL, NULL, "6", false } };
    run_list_cases("{\"NumericEquals\":{\"s3:max-keys\":5}}", eq, 3);
    static const list_case_t ne[] = { { NULL, NULL, "5", false },
                                      { NULL, NULL, "6", true },
                                      { NULL, NULL, NULL, true } };
    run_list_cases("{\"NumericNotEquals\":{\"s3:max-keys\":5}}", ne, 3);
    /* String operators on max-keys compare the text. */
    static const list_case_t se[] = { { NULL, NULL, "1000", true },
                                      { NULL, NULL, "01000", false } };
    run_list_cases("{\"StringEquals\":{\"s3:max-keys\":1000}}", se, 2);
}

static void test_conditions_acl_tags_transport(void)
{
    /* The usual "uploads must hand the bucket owner full control" Deny. */
    cn_authz_policy_t *p =
        pol("{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"bob\"},"
            "\"Action\":\"s3:PutObject\",\"Resource\":\"arn:aws:s3:::b/*\"},"
            "{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:PutObject\","
            "\"Resource\":\"arn:aws:s3:::b/*\",\"Condition\":{\"StringNotEquals\":"
            "{\"s3:x-amz-acl\":\"bucket-owner-full-control\"}}}]}");
    cn_authz_req_t r = mkreq("bob", CN_ACT_PUT_OBJECT, "k");
    CN_CHECK(!allow_r(p, &r));
    r.x_amz_acl = "public-read";
    CN_CHECK(!allow_r(p, &r));
    r.x_amz_acl = "bucket-owner-full-control";
    CN_CHECK(allow_r(p, &r));
    cn_authz_policy_free(p);

    /* Existing object tags. */
    p = pol("{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
            "\"Resource\":\"arn:aws:s3:::b/*\",\"Condition\":{\"StringEquals\":"
            "{\"s3:ExistingObjectTag/visibility\":\"public\"}}}}");
    cn_authz_bucket_t b = { B, "alice", NULL, p, { false, false, false, false } };
    cn_authz_tag_t pub[] = { { "team", "red" }, { "visibility", "public" } };
    cn_authz_tag_t priv[] = { { "visibility", "private" } };
    cn_authz_tag_t wrongcase[] = { { "Visibility", "public" } };
    cn_authz_object_t o1 = { "alice", NULL, pub, 2 }, o2 = { "alice", NULL, priv, 1 };
    cn_authz_object_t o3 = { "alice", NULL, NULL, 0 }, o4 = { "alice", NULL, wrongcase, 1 };
    r = mkreq(NULL, CN_ACT_GET_OBJECT, "k");
    CN_CHECK_EQ(cn_authz_decide(&r, &b, &o1, NULL), CN_OK);
    CN_CHECK_EQ(cn_authz_decide(&r, &b, &o2, NULL), CN_E_DENIED);
    CN_CHECK_EQ(cn_authz_decide(&r, &b, &o3, NULL), CN_E_DENIED);
    CN_CHECK_EQ(cn_authz_decide(&r, &b, &o4, NULL), CN_E_DENIED); /* tag keys keep case */
    CN_CHECK_EQ(cn_authz_decide(&r, &b, NULL, NULL), CN_E_DENIED);
    cn_authz_policy_free(p);

    /* Deny plain HTTP. */
    p = pol("{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
            "\"Resource\":\"arn:aws:s3:::b/*\"},{\"Effect\":\"Deny\",\"Principal\":\"*\","
            "\"Action\":\"s3:*\",\"Resource\":\"arn:aws:s3:::b/*\",\"Condition\":{\"Bool\":"
            "{\"aws:SecureTransport\":\"false\"}}}]}");
    r = mkreq("bob", CN_ACT_GET_OBJECT, "k");
    CN_CHECK(!allow_r(p, &r));
    r.secure_transport = true;
    CN_CHECK(allow_r(p, &r));
    cn_authz_policy_free(p);

    /* Referer and principal-account keys. */
    p = pol("{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
            "\"Resource\":\"arn:aws:s3:::b/*\",\"Condition\":{\"StringLike\":"
            "{\"aws:Referer\":\"https://example.com/*\"}}}}");
    r = mkreq(NULL, CN_ACT_GET_OBJECT, "k");
    CN_CHECK(!allow_r(p, &r));
    r.referer = "https://example.com/page";
    CN_CHECK(allow_r(p, &r));
    r.referer = "https://evil.example/";
    CN_CHECK(!allow_r(p, &r));
    cn_authz_policy_free(p);
    p = pol("{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
            "\"Resource\":\"arn:aws:s3:::b/*\",\"Condition\":{\"StringEquals\":"
            "{\"aws:PrincipalAccount\":\"bob\"}}}}");
    CN_CHECK(allow(p, "bob", CN_ACT_GET_OBJECT, "k"));
    CN_CHECK(!allow(p, "carol", CN_ACT_GET_OBJECT, "k"));
    CN_CHECK(!allow(p, NULL, CN_ACT_GET_OBJECT, "k"));
    CN_CHECK(!cn_authz_policy_is_public(p));
    cn_authz_policy_free(p);
    /* Keys cairn never supplies are recognised and never present. */
    p = pol("{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
            "\"Resource\":\"arn:aws:s3:::b/*\",\"Condition\":{\"StringEquals\":"
            "{\"aws:SourceVpce\":\"vpce-1\"}}}}");
    CN_CHECK(!allow(p, "bob", CN_ACT_GET_OBJECT, "k"));
    cn_authz_policy_free(p);
}

/* NotPrincipal in its usual use: a Deny for every principal but the listed
 * ones (account names, account ARNs, canonical users), on bucket and object
 * actions alike; the anonymous caller is never among the listed. */
static void test_not_principal_deny(void)
{
    cn_authz_policy_t *p =
        pol("{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\","
            "\"Action\":[\"s3:ListBucket\",\"s3:GetObject\"],"
            "\"Resource\":[\"arn:aws:s3:::b\",\"arn:aws:s3:::b/*\"]},"
            "{\"Effect\":\"Deny\",\"NotPrincipal\":{\"AWS\":[\"arn:aws:iam::bob:root\",\"alice\"],"
            "\"CanonicalUser\":\"carol\"},\"Action\":\"s3:*\","
            "\"Resource\":[\"arn:aws:s3:::b\",\"arn:aws:s3:::b/*\"]}]}");
    static const char *const listed[] = { "alice", "bob", "carol" };
    for (size_t i = 0; i < 3; i++) {
        CN_CHECK(allow(p, listed[i], CN_ACT_LIST_BUCKET, NULL));
        CN_CHECK(allow(p, listed[i], CN_ACT_GET_OBJECT, "k"));
    }
    CN_CHECK(!allow(p, "dave", CN_ACT_LIST_BUCKET, NULL));
    CN_CHECK(!allow(p, "dave", CN_ACT_GET_OBJECT, "k"));
    CN_CHECK(!allow(p, NULL, CN_ACT_GET_OBJECT, "k"));
    /* Being listed grants nothing by itself: bob has no write, the owner has. */
    CN_CHECK(!allow(p, "bob", CN_ACT_PUT_OBJECT, "k"));
    CN_CHECK(allow(p, "alice", CN_ACT_PUT_OBJECT, "k"));
    CN_CHECK(cn_authz_policy_is_public(p)); /* the Allow for "*" */
    cn_authz_policy_free(p);

    /* NotPrincipal "*" excludes everyone: the Deny never applies. */
    p = pol("{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"bob\"},"
            "\"Action\":\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::b/*\"},"
            "{\"Effect\":\"Deny\",\"NotPrincipal\":\"*\",\"Action\":\"s3:GetObject\","
            "\"Resource\":\"arn:aws:s3:::b/*\"}]}");
    CN_CHECK(allow(p, "bob", CN_ACT_GET_OBJECT, "k"));
    CN_CHECK(allow(p, "alice", CN_ACT_GET_OBJECT, "k"));
    cn_authz_policy_free(p);
}

/* s3:x-amz-grant-*: accepted in any case, each read from its own header, and
 * present only on the writes that may carry an ACL (PutObject, PutObjectAcl,
 * PutBucketAcl, CreateBucket). */
static void test_conditions_grant_headers(void)
{
    /* The S3 user guide's example: bob may upload only when the request grants
     * the bucket owner full control. */
    cn_authz_policy_t *p =
        pol("{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"bob\"},"
            "\"Action\":\"s3:PutObject\",\"Resource\":\"arn:aws:s3:::b/*\",\"Condition\":"
            "{\"StringEquals\":{\"S3:X-Amz-Grant-Full-Control\":\"id=alice\"}}}}");
    cn_authz_req_t r = mkreq("bob", CN_ACT_PUT_OBJECT, "k");
    CN_CHECK(!allow_r(p, &r));
    r.grants.full_control = "id=bob";
    CN_CHECK(!allow_r(p, &r));
    r.grants.read = "id=alice"; /* another header does not count */
    CN_CHECK(!allow_r(p, &r));
    r.grants.full_control = "id=alice";
    CN_CHECK(allow_r(p, &r));
    CN_CHECK(!cn_authz_policy_is_public(p));
    cn_authz_policy_free(p);

    static const char *const keys[] = {
        "s3:x-amz-grant-read",      "s3:x-amz-grant-write",        "s3:x-amz-grant-read-acp",
        "s3:x-amz-grant-write-acp", "s3:x-amz-grant-full-control",
    };
    for (size_t i = 0; i < 5; i++) {
        char json[512];
        snprintf(json, sizeof json,
                 "{\"Statement\":{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:*\","
                 "\"Resource\":[\"arn:aws:s3:::b\",\"arn:aws:s3:::b/*\"],"
                 "\"Condition\":{\"Null\":{\"%s\":\"false\"}}}}",
                 keys[i]);
        p = pol(json);
        for (size_t j = 0; j < 5; j++) {
            /* Only header j sent, by the owner: denied exactly when it is key i's. */
            cn_authz_req_t w = mkreq("alice", CN_ACT_PUT_OBJECT, "k");
            const char **h[] = { &w.grants.read, &w.grants.write, &w.grants.read_acp,
                                 &w.grants.write_acp, &w.grants.full_control };
            *h[j] = "id=alice";
            CN_CHECK_EQ(allow_r(p, &w), i != j);
            w.action = CN_ACT_PUT_OBJECT_ACL;
            CN_CHECK_EQ(allow_r(p, &w), i != j);
            w.action = CN_ACT_PUT_BUCKET_ACL;
            w.key = NULL;
            CN_CHECK_EQ(allow_r(p, &w), i != j);
            /* Other actions never see the keys, whatever was sent. */
            w.action = CN_ACT_LIST_BUCKET;
            CN_CHECK(allow_r(p, &w));
            w.action = CN_ACT_GET_OBJECT;
            w.key = "k";
            CN_CHECK(allow_r(p, &w));
            w.action = CN_ACT_DELETE_OBJECT;
            CN_CHECK(allow_r(p, &w));
        }
        cn_authz_req_t none = mkreq("alice", CN_ACT_PUT_OBJECT, "k");
        CN_CHECK(allow_r(p, &none));
        cn_authz_policy_free(p);
    }

    /* String operators compare the header as sent; Like patterns too. */
    p = pol("{\"Statement\":{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:PutObject\","
            "\"Resource\":\"arn:aws:s3:::b/*\",\"Condition\":{\"StringLike\":"
            "{\"s3:x-amz-grant-read\":\"*AllUsers*\"}}}}");
    cn_authz_req_t w = mkreq("alice", CN_ACT_PUT_OBJECT, "k");
    w.grants.read = "uri=\"http://acs.amazonaws.com/groups/global/AllUsers\"";
    CN_CHECK(!allow_r(p, &w));
    w.grants.read = "id=\"bob\"";
    CN_CHECK(allow_r(p, &w));
    cn_authz_policy_free(p);
}

/* ---- is public ------------------------------------------------------------------------------ */
static void test_policy_is_public(void)
{
    static const struct {
        const char *stmt;
        bool pub;
    } t[] = {
        { "\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
          "\"Resource\":\"arn:aws:s3:::b/*\"",
          true },
        { "\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"*\"},\"Action\":\"s3:GetObject\","
          "\"Resource\":\"arn:aws:s3:::b/*\"",
          true },
        { "\"Effect\":\"Allow\",\"Principal\":{\"AWS\":[\"bob\",\"*\"]},\"Action\":\"s3:"
          "GetObject\","
          "\"Resource\":\"arn:aws:s3:::b/*\"",
          true },
        { "\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"bob\"},\"Action\":\"s3:*\","
          "\"Resource\":\"arn:aws:s3:::b/*\"",
          false },
        { "\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:*\",\"Resource\":\"arn:aws:s3:::"
          "b/*\"",
          false },
        { "\"Effect\":\"Allow\",\"NotPrincipal\":{\"AWS\":\"bob\"},\"Action\":\"s3:GetObject\","
          "\"Resource\":\"arn:aws:s3:::b/*\"",
          true },
        { "\"Effect\":\"Allow\",\"NotPrincipal\":\"*\",\"Action\":\"s3:GetObject\","
          "\"Resource\":\"arn:aws:s3:::b/*\"",
          false },
        { "\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":"
          "\"arn:aws:s3:::b/*\",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":\"10.0.0.0/8\"}}",
          false },
        { "\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":"
          "\"arn:aws:s3:::b/*\",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":\"0.0.0.0/0\"}}",
          true },
        { "\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":"
          "\"arn:aws:s3:::b/*\",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":[\"10.0.0.0/"
          "8\",\"0.0.0.0/7\"]}}",
          true },
        { "\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":"
          "\"arn:aws:s3:::b/*\",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":\"2001:db8::/32\"}}",
          false },
        { "\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":"
          "\"arn:aws:s3:::b/*\",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":\"2001::/16\"}}",
          true },
        { "\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":"
          "\"arn:aws:s3:::b/*\",\"Condition\":{\"IpAddressIfExists\":{\"aws:SourceIp\":\"10.0.0.0/"
          "8\"}}",
          true },
        { "\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":"
          "\"arn:aws:s3:::b/*\",\"Condition\":{\"NotIpAddress\":{\"aws:SourceIp\":\"10.0.0.0/8\"}}",
          true },
        { "\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":"
          "\"arn:aws:s3:::b/*\",\"Condition\":{\"StringLike\":{\"s3:prefix\":\"x*\"}}",
          true },
        { "\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":"
          "\"arn:aws:s3:::b/*\",\"Condition\":{\"StringEquals\":{\"aws:SourceAccount\":\"bob\"}}",
          false },
        { "\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":"
          "\"arn:aws:s3:::b/*\",\"Condition\":{\"StringLike\":{\"aws:SourceArn\":\"arn:*\"}}",
          true },
        { "\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":"
          "\"arn:aws:s3:::b/"
          "*\",\"Condition\":{\"ArnEquals\":{\"aws:SourceArn\":\"arn:aws:s3:::x\"}}",
          false },
        { "\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":"
          "\"arn:aws:s3:::b/*\",\"Condition\":{\"Bool\":{\"aws:SecureTransport\":\"true\"}}",
          true },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char json[1024];
        snprintf(json, sizeof json, "{\"Statement\":[{%s}]}", t[i].stmt);
        cn_authz_policy_t *p = pol(json);
        if (cn_authz_policy_is_public(p) != t[i].pub)
            fprintf(stderr, "# case %zu: %s\n", i, t[i].stmt);
        CN_CHECK_EQ(cn_authz_policy_is_public(p), t[i].pub);
        cn_authz_policy_free(p);
    }
    CN_CHECK(!cn_authz_policy_is_public(NULL));
    /* One public statement among private ones makes the policy public. */
    cn_authz_policy_t *p = pol(
        "{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"bob\"},\"Action\":\"s3:*\","
        "\"Resource\":\"arn:aws:s3:::b\"},{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":"
        "\"s3:ListBucket\",\"Resource\":\"arn:aws:s3:::b\"}]}");
    CN_CHECK(cn_authz_policy_is_public(p));
    cn_authz_policy_free(p);
}

static void test_public_read_policy_helper(void)
{
    cn_buf_t b = { 0 };
    CN_CHECK_EQ(cn_authz_policy_public_read("photos", &b), 0);
    cn_authz_policy_t *p = NULL;
    char err[CN_AUTHZ_ERR_MAX];
    CN_CHECK_EQ(cn_authz_policy_parse((const char *)b.data, b.len, "photos", &p, err), 0);
    CN_CHECK(cn_authz_policy_is_public(p));
    cn_authz_bucket_t bk = { "photos", "alice", NULL, p, { false, false, false, false } };
    cn_authz_req_t r = mkreq(NULL, CN_ACT_GET_OBJECT, "a/b.jpg");
    CN_CHECK_EQ(cn_authz_decide(&r, &bk, NULL, NULL), CN_OK);
    r.action = CN_ACT_PUT_OBJECT;
    CN_CHECK_EQ(cn_authz_decide(&r, &bk, NULL, NULL), CN_E_DENIED);
    cn_authz_policy_free(p);
    /* It is for that bucket only. */
    CN_CHECK_EQ(cn_authz_policy_parse((const char *)b.data, b.len, "other", &p, err), CN_E_INVALID);
    cn_buf_free(&b);
    CN_CHECK_EQ(cn_authz_policy_public_read("bad\"name", &b), CN_E_INVALID);
    CN_CHECK_EQ(cn_authz_policy_public_read("", &b), CN_E_INVALID);
    cn_buf_free(&b);
}

CN_TEST_MAIN(CN_TEST(test_malformed_each_has_its_message), CN_TEST(test_well_formed_shapes),
             CN_TEST(test_principals), CN_TEST(test_action_wildcards),
             CN_TEST(test_resource_wildcards), CN_TEST(test_allow_deny_precedence),
             CN_TEST(test_source_ip), CN_TEST(test_ip_helpers), CN_TEST(test_conditions_strings),
             CN_TEST(test_conditions_numbers), CN_TEST(test_conditions_acl_tags_transport),
             CN_TEST(test_not_principal_deny), CN_TEST(test_conditions_grant_headers),
             CN_TEST(test_policy_is_public), CN_TEST(test_public_read_policy_helper))
