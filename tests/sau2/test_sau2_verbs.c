/* The SAU2 verbs of issue 20's second half through cn_sau2_handle and the
 * codec: access certificates and certificate verification (signature, CA,
 * expiry, revocation), automation-create and -derive (kinds, expiry, replay,
 * derived-from-derived, parent revocation), authorize, authorize-batch and
 * public-policy (the min(ceiling, grants) matrix, delegates, leases,
 * anonymous callers, namespaces), the storage side's rollback check, and
 * backup / restore / migrate (a new incarnation, then accepted by the
 * rollback check). */
#include "cairn/meta.h"
#include "cairn/sau2.h"
#include "cn_test.h"
#include "sau2_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CAROL_PW "carols password 12"
#define TEAM "team"

static cn_sau2_caller_t admin, server, carol;
static char access_ca[4200], cred_ca[4200];
static uint8_t op_next = 1;

/* A fresh operation id byte for each mutation. */
static uint8_t op(void)
{
    return op_next++;
}

static void exp_in(char out[32], int64_t ms)
{
    snprintf(out, 32, "%lld", (long long)(cn_wall_ms() + ms));
}

/* Caller fields from the certificate in row r, column c of the last answer. */
static cn_sau2_caller_t caller_of(int r, int c)
{
    cn_sau2_caller_t x;
    CN_CHECK_EQ(cn_auth_cert_caller(ans.rows[r][c], strlen(ans.rows[r][c]), &x), 0);
    return x;
}

static void test_setup(void)
{
    CN_CHECK_EQ(call(NULL, 0, NULL, "trust-bundle", NULL), 0);
    snprintf(access_ca, sizeof access_ca, "%s", ans.rows[0][1]);
    snprintf(cred_ca, sizeof cred_ca, "%s", ans.rows[1][1]);
    CN_CHECK_EQ(sign_in(true, "admin", ADMIN_PW, op(), &admin), 0);
    CN_CHECK_EQ(call(&admin, op(), NULL, "users-add", "carol", "u-carol", "0", "person", NULL), 0);
    CN_CHECK_EQ(call(&admin, op(), CAROL_PW, "users-password", "carol", "1", NULL), 0);
    CN_CHECK_EQ(call(&admin, op(), NULL, "users-add", "gw", "u-gw", "0", "service", NULL), 0);
    CN_CHECK_EQ(call(&admin, op(), NULL, "servers-add", "store1", TEAM, "s-1", NULL), 0);
    CN_CHECK_EQ(call(&admin, op(), NULL, "servers-add", "store2", "other", "s-2", NULL), 0);
    char exp[32];
    exp_in(exp, 86400000);
    CN_CHECK_EQ(call(&admin, op(), NULL, "credentials-add", "server", "store1", new_cred(),
                     new_key(), exp, "store one", NULL),
                0);
    server = caller_of(0, 0);
    CN_CHECK_EQ(sign_in(false, "carol", CAROL_PW, op(), &carol), 0);
}

/* ---- access certificates and verification ---------------------------------------------- */

static void test_access_certificate(void)
{
    int64_t before = cn_wall_ms();
    CN_CHECK_EQ(call(&carol, 0, NULL, "access-certificate", NULL), 0);
    CN_CHECK_EQ(ans.n[0], 2);
    int64_t exp = atoll(ans.rows[0][1]);
    CN_CHECK(exp >= before + 3600000 - 2000 && exp <= cn_wall_ms() + 3600000);
    char pem[1200];
    snprintf(pem, sizeof pem, "%s", ans.rows[0][0]);
    cn_sau2_caller_t x;
    /* Signed by the access CA, for carol's credential and key. */
    CN_CHECK_EQ(
        cn_auth_cert_check(access_ca, strlen(access_ca), pem, strlen(pem), cn_wall_ms(), &x), 0);
    CN_CHECK_STR(x.credential, carol.credential);
    CN_CHECK_STR(x.key_id, carol.key_id);
    CN_CHECK_EQ(cn_auth_cert_verify(auth, true, pem, strlen(pem), &x, NULL, 0), 0);
    /* The wrong CA, expiry, a foreign CA. */
    CN_CHECK_EQ(cn_auth_cert_check(cred_ca, strlen(cred_ca), pem, strlen(pem), cn_wall_ms(), &x),
                CN_E_AUTH);
    CN_CHECK_EQ(cn_auth_cert_verify(auth, false, pem, strlen(pem), &x, NULL, 0), CN_E_AUTH);
    CN_CHECK_EQ(
        cn_auth_cert_check(access_ca, strlen(access_ca), pem, strlen(pem), exp + 120000, &x),
        CN_E_AUTH);
    CN_CHECK(!x.present);
    /* A credential that ends in 10 minutes: its access certificate too. */
    char short_exp[32];
    exp_in(short_exp, 600000);
    const char *ucred = new_cred();
    CN_CHECK_EQ(call(&admin, op(), NULL, "credentials-add", "user", "carol", ucred, new_key(),
                     short_exp, "short", NULL),
                0);
    char upem[1200];
    snprintf(upem, sizeof upem, "%s", ans.rows[0][0]);
    cn_sau2_caller_t shortc = caller_of(0, 0);
    CN_CHECK_EQ(cn_auth_cert_verify(auth, false, upem, strlen(upem), &x, NULL, 0), 0);
    CN_CHECK_EQ(call(&shortc, 0, NULL, "access-certificate", NULL), 0);
    CN_CHECK_STR(ans.rows[0][1], short_exp);
    /* Revoked: both certificates refused by the service's verification. */
    CN_CHECK_EQ(call(&admin, op(), NULL, "credentials-revoke", ucred, NULL), 0);
    char why[256];
    CN_CHECK_EQ(cn_auth_cert_verify(auth, false, upem, strlen(upem), &x, why, sizeof why),
                CN_E_DENIED);
    CN_CHECK(strstr(why, "revoked") != NULL);
    CN_CHECK_EQ(call(&shortc, 0, NULL, "access-certificate", NULL), 3);
    CN_CHECK_EQ(call(&carol, 0, NULL, "access-certificate", "x", NULL), 1);
    CN_CHECK_EQ(call(NULL, 0, NULL, "access-certificate", NULL), 3);
    /* A server credential gets none: a storage server never calls storage. */
    CN_CHECK_EQ(call(&server, 0, NULL, "access-certificate", NULL), 4);
    CN_CHECK(strstr(ans.message, "server credential") != NULL);
    /* A disabled account gets none. */
    CN_CHECK_EQ(call(&admin, op(), NULL, "users-disable", "carol", NULL), 0);
    CN_CHECK_EQ(call(&carol, 0, NULL, "access-certificate", NULL), 3);
    CN_CHECK_EQ(call(&admin, op(), NULL, "users-enable", "carol", NULL), 0);
}

/* ---- automation --------------------------------------------------------------------------- */

static cn_sau2_caller_t automation(const char *role, cn_sau2_caller_t *from, uint16_t want)
{
    char exp[32];
    exp_in(exp, 30LL * 86400000);
    cn_sau2_caller_t x = { 0 };
    CN_CHECK_EQ(
        call(from, op(), NULL, "automation-create", role, exp, new_cred(), new_key(), "ci", NULL),
        want);
    if (want == 0)
        x = caller_of(0, 0);
    return x;
}

static void test_automation(void)
{
    static const char *const kinds[][2] = { { "reader", "automation" },
                                            { "writer", "automation-write" },
                                            { "maintainer", "automation-maintain" },
                                            { "namespace-admin", "automation-admin" } };
    char exp[32], over[32];
    exp_in(exp, 30LL * 86400000);
    exp_in(over, 367LL * 86400000);
    const char *cred = new_cred(), *key = new_key();
    CN_CHECK_EQ(call(&carol, 0, NULL, "whoami", NULL), 0);
    uint64_t rev = ans.revision;
    CN_CHECK_EQ(call(&carol, 200, NULL, "automation-create", "writer", exp, cred, key, "ci", NULL),
                0);
    CN_CHECK_EQ(ans.n[0], 4);
    CN_CHECK_STR(ans.rows[0][1], cred);
    CN_CHECK_STR(ans.rows[0][2], "automation-write");
    CN_CHECK_STR(ans.rows[0][3], exp);
    CN_CHECK_EQ(ans.revision, rev); /* not an administrative change */
    char pem[1200];
    snprintf(pem, sizeof pem, "%s", ans.rows[0][0]);
    cn_sau2_caller_t parent = caller_of(0, 0);
    /* Replay: the same certificate; another intent: mismatch. */
    CN_CHECK_EQ(call(&carol, 200, NULL, "automation-create", "writer", exp, cred, key, "ci", NULL),
                0);
    CN_CHECK_STR(ans.rows[0][0], pem);
    CN_CHECK_EQ(call(&carol, 200, NULL, "automation-create", "reader", exp, cred, key, "ci", NULL),
                200);
    /* Another account's id answers as a mismatch, never its certificate. */
    CN_CHECK_EQ(call(&admin, 200, NULL, "automation-create", "writer", exp, cred, key, "ci", NULL),
                200);
    for (size_t i = 0; i < 4; i++) {
        CN_CHECK_EQ(call(&carol, op(), NULL, "automation-create", kinds[i][0], exp, new_cred(),
                         new_key(), "k", NULL),
                    0);
        CN_CHECK_STR(ans.rows[0][2], kinds[i][1]);
    }
    /* Refusals: over a year, a bad role, no operation id, not a session. */
    CN_CHECK_EQ(call(&carol, op(), NULL, "automation-create", "writer", over, new_cred(), new_key(),
                     "ci", NULL),
                1);
    CN_CHECK_EQ(call(&carol, op(), NULL, "automation-create", "owner", exp, new_cred(), new_key(),
                     "ci", NULL),
                1);
    CN_CHECK_EQ(call(&carol, 0, NULL, "automation-create", "reader", exp, new_cred(), new_key(),
                     "ci", NULL),
                1);
    automation("reader", &admin, 4);  /* a user credential, not a password session */
    automation("reader", &parent, 4); /* an automation credential */
    /* derive: the parent's kind and expiry, for another key. */
    const char *ccred = new_cred();
    CN_CHECK_EQ(call(&parent, op(), NULL, "automation-derive", ccred, new_key(), "runner", NULL),
                0);
    CN_CHECK_STR(ans.rows[0][1], ccred);
    CN_CHECK_STR(ans.rows[0][2], "automation-write");
    CN_CHECK_STR(ans.rows[0][3], exp);
    cn_sau2_caller_t child = caller_of(0, 0);
    CN_CHECK_EQ(call(&child, 0, NULL, "whoami", NULL), 0);
    CN_CHECK_STR(ans.rows[0][1], "automation-write");
    /* A derived credential cannot derive; a session cannot derive. */
    CN_CHECK_EQ(call(&child, op(), NULL, "automation-derive", new_cred(), new_key(), "x", NULL), 4);
    CN_CHECK_EQ(call(&carol, op(), NULL, "automation-derive", new_cred(), new_key(), "x", NULL), 4);
    CN_CHECK_EQ(call(&parent, 0, NULL, "automation-derive", new_cred(), new_key(), "x", NULL), 1);
    /* Revoking the parent revokes the child. */
    CN_CHECK_EQ(call(&admin, op(), NULL, "credentials-revoke", parent.credential, NULL), 0);
    CN_CHECK_EQ(call(&child, 0, NULL, "whoami", NULL), 3);
    CN_CHECK_EQ(call(&parent, 0, NULL, "whoami", NULL), 3);
}

/* ---- authorize ---------------------------------------------------------------------------- */

/* authorize for subject (and delegate, may be NULL) on repository repo. */
static uint16_t authorize(const cn_sau2_caller_t *subj, const cn_sau2_caller_t *del, const char *ns,
                          const char *repo)
{
    return call(&server, 0, NULL, "authorize", ns, repo, subj->credential, subj->key_id,
                del ? del->credential : "", del ? del->key_id : "", NULL);
}

static void grant(const char *user, int role)
{
    static const char *const names[] = { "", "reader", "writer", "maintainer", "namespace-admin" };
    call(&admin, op(), NULL, "grants-revoke", user, TEAM, NULL); /* may be nothing to revoke */
    if (role)
        CN_CHECK_EQ(call(&admin, op(), NULL, "grants-set", user, TEAM, names[role], NULL), 0);
}

static void test_authorize_matrix(void)
{
    static const char *const names[] = { "", "reader", "writer", "maintainer", "namespace-admin" };
    /* The kinds carol holds and their ceilings (docs/protocol/sau2.md section 7). */
    static const struct {
        const char *role; /* automation-create's role; NULL: the session */
        int ceiling;
    } kinds[] = {
        { NULL, 4 }, { "reader", 1 }, { "writer", 2 }, { "maintainer", 3 }, { "namespace-admin", 4 }
    };
    cn_sau2_caller_t who[5];
    for (size_t k = 0; k < 5; k++)
        who[k] = kinds[k].role ? automation(kinds[k].role, &carol, 0) : carol;
    for (int g = 0; g <= 4; g++) {
        grant("carol", g);
        for (size_t k = 0; k < 5; k++) {
            int want = g < kinds[k].ceiling ? g : kinds[k].ceiling;
            CN_CHECK_EQ(authorize(&who[k], NULL, TEAM, "art"), 0);
            if (strcmp(ans.rows[0][0], names[want]) != 0)
                fprintf(stderr, "# grant %d kind %zu: %s, want %s\n", g, k, ans.rows[0][0],
                        names[want]);
            CN_CHECK_STR(ans.rows[0][0], names[want]);
            CN_CHECK_STR(ans.rows[0][2], "carol");
            CN_CHECK_STR(ans.rows[0][3], "");
        }
    }
    /* A namespace administrator: namespace-admin only where the kind keeps it. */
    grant("carol", 1);
    CN_CHECK_EQ(call(&admin, op(), NULL, "namespace-admins-set", "carol", TEAM, NULL), 0);
    for (size_t k = 0; k < 5; k++) {
        CN_CHECK_EQ(authorize(&who[k], NULL, TEAM, "art"), 0);
        CN_CHECK_STR(ans.rows[0][0], names[kinds[k].ceiling]);
    }
    CN_CHECK_EQ(call(&admin, op(), NULL, "namespace-admins-revoke", "carol", TEAM, NULL), 0);
    grant("carol", 0);
}

static void test_authorize_rules(void)
{
    grant("carol", 2);
    int64_t before = cn_wall_ms();
    CN_CHECK_EQ(authorize(&carol, NULL, TEAM, "art"), 0);
    CN_CHECK_EQ(ans.n[0], 5);
    CN_CHECK_STR(ans.rows[0][0], "writer");
    CN_CHECK_STR(ans.rows[0][4], "0"); /* no namespace-readers grant */
    int64_t lease = atoll(ans.rows[0][1]);
    CN_CHECK(lease >= before && lease <= cn_wall_ms() + 30000);
    uint64_t rev = ans.revision;
    /* Identity only; another namespace; a caller that is not a server. */
    CN_CHECK_EQ(authorize(&carol, NULL, TEAM, ""), 0);
    CN_CHECK_STR(ans.rows[0][0], "");
    CN_CHECK_STR(ans.rows[0][2], "carol");
    CN_CHECK_EQ(ans.revision, rev);
    CN_CHECK_EQ(authorize(&carol, NULL, "other", "art"), 4);
    CN_CHECK_EQ(call(&carol, 0, NULL, "authorize", TEAM, "art", carol.credential, carol.key_id, "",
                     "", NULL),
                4);
    CN_CHECK_EQ(authorize(&carol, NULL, "Team!", "art"), 1);
    CN_CHECK_EQ(call(&server, 0, NULL, "authorize", TEAM, "art", "", "", "", "", NULL), 1);
    /* The subject: wrong key, unknown, disabled. */
    cn_sau2_caller_t bad = carol;
    bad.key_id[0] = bad.key_id[0] == '0' ? '1' : '0';
    CN_CHECK_EQ(authorize(&bad, NULL, TEAM, "art"), 3);
    memcpy(bad.credential, new_cred(), CN_SAU2_CRED_HEX);
    CN_CHECK_EQ(authorize(&bad, NULL, TEAM, "art"), 3);
    CN_CHECK_EQ(call(&admin, op(), NULL, "users-disable", "carol", NULL), 0);
    CN_CHECK_EQ(authorize(&carol, NULL, TEAM, "art"), 3);
    CN_CHECK_EQ(call(&admin, op(), NULL, "users-enable", "carol", NULL), 0);
    /* A server credential that ends in 10 s bounds the lease. */
    char soon[32];
    exp_in(soon, 10000);
    CN_CHECK_EQ(call(&admin, op(), NULL, "credentials-add", "server", "store1", new_cred(),
                     new_key(), soon, "brief", NULL),
                0);
    cn_sau2_caller_t brief = caller_of(0, 0);
    CN_CHECK_EQ(call(&brief, 0, NULL, "authorize", TEAM, "art", carol.credential, carol.key_id, "",
                     "", NULL),
                0);
    CN_CHECK(atoll(ans.rows[0][1]) <= atoll(soon));
    /* A disabled server is refused. */
    CN_CHECK_EQ(call(&admin, op(), NULL, "servers-disable", "store1", NULL), 0);
    CN_CHECK_EQ(authorize(&carol, NULL, TEAM, "art"), 3);
    CN_CHECK_EQ(call(&admin, op(), NULL, "servers-enable", "store1", NULL), 0);
}

/* A new credential of the given kind for the service user gw, as a caller. */
static cn_sau2_caller_t gateway_credential(const char *kind)
{
    char exp[32];
    exp_in(exp, 86400000);
    CN_CHECK_EQ(call(&admin, op(), NULL, "credentials-add", kind, "gw", new_cred(), new_key(), exp,
                     kind, NULL),
                0);
    return caller_of(0, 0);
}

static void test_delegates(void)
{
    cn_sau2_caller_t gw = gateway_credential("service-reader");
    grant("carol", 2);
    CN_CHECK_EQ(authorize(&carol, &gw, TEAM, "art"), 4);
    CN_CHECK_STR(ans.message, "delegate may not act for users in this namespace");
    CN_CHECK_EQ(call(&admin, op(), NULL, "delegates-set", "gw", TEAM, NULL), 0);
    CN_CHECK_EQ(authorize(&carol, &gw, TEAM, "art"), 0);
    CN_CHECK_STR(ans.rows[0][0], "reader"); /* a service-reader passes reads only */
    CN_CHECK_STR(ans.rows[0][2], "carol");
    CN_CHECK_STR(ans.rows[0][3], "gw");
    /* A service-writer relays its user's own role, administration included. */
    cn_sau2_caller_t gww = gateway_credential("service-writer");
    grant("carol", 3);
    CN_CHECK_EQ(authorize(&carol, &gww, TEAM, "art"), 0);
    CN_CHECK_STR(ans.rows[0][0], "maintainer");
    CN_CHECK_EQ(authorize(&carol, &gw, TEAM, "art"), 0);
    CN_CHECK_STR(ans.rows[0][0], "reader");
    CN_CHECK_EQ(call(&admin, op(), NULL, "namespace-admins-set", "carol", TEAM, NULL), 0);
    CN_CHECK_EQ(authorize(&carol, &gww, TEAM, "art"), 0);
    CN_CHECK_STR(ans.rows[0][0], "namespace-admin");
    CN_CHECK_EQ(call(&admin, op(), NULL, "namespace-admins-revoke", "carol", TEAM, NULL), 0);
    grant("carol", 2);
    /* The inventory is never reported through a delegate. */
    CN_CHECK_EQ(call(&admin, op(), NULL, "namespace-readers-set", "carol", TEAM, NULL), 0);
    CN_CHECK_EQ(authorize(&carol, &gw, TEAM, "art"), 0);
    CN_CHECK_STR(ans.rows[0][4], "0");
    CN_CHECK_EQ(authorize(&carol, NULL, TEAM, "art"), 0);
    CN_CHECK_STR(ans.rows[0][4], "1");
    CN_CHECK_EQ(call(&admin, op(), NULL, "namespace-readers-revoke", "carol", TEAM, NULL), 0);
    /* A session is no delegate, whatever its grants. */
    CN_CHECK_EQ(authorize(&carol, &carol, TEAM, "art"), 4);
    CN_CHECK_STR(ans.message, "delegate may not act for users in this namespace");
    /* A delegate grant for another namespace does not count. */
    CN_CHECK_EQ(call(&admin, op(), NULL, "delegates-revoke", "gw", TEAM, NULL), 0);
    CN_CHECK_EQ(call(&admin, op(), NULL, "delegates-set", "gw", "other", NULL), 0);
    CN_CHECK_EQ(authorize(&carol, &gw, TEAM, "art"), 4);
    CN_CHECK_EQ(call(&admin, op(), NULL, "delegates-set", "gw", TEAM, NULL), 0);
    /* A revoked delegate. */
    CN_CHECK_EQ(call(&admin, op(), NULL, "credentials-revoke", gw.credential, NULL), 0);
    CN_CHECK_EQ(authorize(&carol, &gw, TEAM, "art"), 4);
    CN_CHECK_STR(ans.message, "delegate may not act for users in this namespace");
}

/* authorize's fifth column: the namespace inventory (instance_status) for
 * a direct caller holding a namespace-readers grant or the namespace
 * administrator role, whatever the repository asked; never through a
 * delegate; gone with the grant. */
static void test_inventory(void)
{
    grant("carol", 1);
    CN_CHECK_EQ(authorize(&carol, NULL, TEAM, ""), 0);
    CN_CHECK_STR(ans.rows[0][4], "0"); /* a repository grant is not the inventory */
    CN_CHECK_EQ(call(&admin, op(), NULL, "namespace-readers-set", "carol", TEAM, NULL), 0);
    CN_CHECK_EQ(authorize(&carol, NULL, TEAM, ""), 0);
    CN_CHECK_STR(ans.rows[0][4], "1");
    CN_CHECK_EQ(authorize(&carol, NULL, TEAM, "art"), 0);
    CN_CHECK_STR(ans.rows[0][0], "reader"); /* the repository role is the grant's */
    CN_CHECK_STR(ans.rows[0][4], "1");
    /* A reader-ceiling automation credential keeps it: it is read-only. */
    cn_sau2_caller_t ro = automation("reader", &carol, 0);
    CN_CHECK_EQ(authorize(&ro, NULL, TEAM, ""), 0);
    CN_CHECK_STR(ans.rows[0][4], "1");
    CN_CHECK_EQ(call(&admin, op(), NULL, "namespace-readers-revoke", "carol", TEAM, NULL), 0);
    CN_CHECK_EQ(authorize(&carol, NULL, TEAM, ""), 0);
    CN_CHECK_STR(ans.rows[0][4], "0");
    /* Another namespace's grant does not count; the administrator has it. */
    CN_CHECK_EQ(call(&admin, op(), NULL, "namespace-readers-set", "carol", "other", NULL), 0);
    CN_CHECK_EQ(authorize(&carol, NULL, TEAM, ""), 0);
    CN_CHECK_STR(ans.rows[0][4], "0");
    CN_CHECK_EQ(call(&admin, op(), NULL, "namespace-admins-set", "carol", TEAM, NULL), 0);
    CN_CHECK_EQ(authorize(&carol, NULL, TEAM, ""), 0);
    CN_CHECK_STR(ans.rows[0][4], "1");
    CN_CHECK_EQ(authorize(&ro, NULL, TEAM, ""), 0); /* capped at reader: no administrator */
    CN_CHECK_STR(ans.rows[0][4], "0");
    CN_CHECK_EQ(call(&admin, op(), NULL, "namespace-admins-revoke", "carol", TEAM, NULL), 0);
    grant("carol", 0);
}

static void test_batch_and_policy(void)
{
    grant("carol", 0);
    CN_CHECK_EQ(call(&admin, op(), NULL, "visibility-set", TEAM, "pub", "public-read", NULL), 0);
    /* Anonymous: all four columns empty. */
    CN_CHECK_EQ(call(&server, 0, NULL, "authorize-batch", TEAM, "", "", "", "", "pub", "art", NULL),
                0);
    CN_CHECK_EQ(ans.nrows, 3);
    CN_CHECK_STR(ans.rows[0][0], "pub");
    CN_CHECK_STR(ans.rows[0][1], "reader");
    CN_CHECK_STR(ans.rows[1][1], "");
    CN_CHECK_EQ(ans.n[2], 1);
    CN_CHECK(atoll(ans.rows[2][0]) <= cn_wall_ms() + 30000);
    /* 124 repositories fill a request; 125 do not fit. */
    static cn_sau2_req_t q;
    cn_sau2_reply_t r = { 0 };
    static char names[125][16];
    memset(&q, 0, sizeof q);
    const char *head[] = { "authorize-batch", TEAM, carol.credential, carol.key_id, "", "" };
    for (int i = 0; i < 6; i++)
        q.argv[q.argc++] = (cn_sau2_str_t){ (const uint8_t *)head[i], (uint16_t)strlen(head[i]) };
    for (int i = 0; i < 124; i++) {
        snprintf(names[i], sizeof names[i], "r%03d", i);
        q.argv[q.argc++] = (cn_sau2_str_t){ (const uint8_t *)names[i], 4 };
    }
    grant("carol", 3);
    CN_CHECK_EQ(cn_sau2_handle(auth, &server, &q, &r), 0);
    CN_CHECK_EQ(r.code, 0);
    CN_CHECK_EQ(r.nrows, 125);
    cn_sau2_reply_free(&r);
    CN_CHECK_EQ(call(&server, 0, NULL, "authorize-batch", TEAM, carol.credential, carol.key_id, "",
                     "", "art", NULL),
                0);
    CN_CHECK_STR(ans.rows[0][1], "maintainer");
    CN_CHECK_EQ(call(&server, 0, NULL, "authorize-batch", "other", "", "", "", "", "art", NULL), 4);
    /* public-policy. */
    CN_CHECK_EQ(call(&server, 0, NULL, "public-policy", TEAM, "pub", "art", NULL), 0);
    CN_CHECK_EQ(ans.nrows, 2);
    CN_CHECK_STR(ans.rows[0][1], "public-read");
    CN_CHECK_STR(ans.rows[1][1], "private");
    CN_CHECK_EQ(call(&server, 0, NULL, "public-policy", "other", "pub", NULL), 4);
    CN_CHECK_EQ(call(&carol, 0, NULL, "public-policy", TEAM, "pub", NULL), 4);
    CN_CHECK_EQ(call(&server, 0, NULL, "public-policy", TEAM, "Bad!", NULL), 1);
}

/* ---- rollback, backup, restore, migrate ---------------------------------------------------- */

static void test_rollback(void)
{
    uint8_t a[CN_SAU2_ID_LEN], b[CN_SAU2_ID_LEN];
    memset(a, 0xa1, sizeof a);
    memset(b, 0xb2, sizeof b);
    CN_CHECK_EQ(cn_auth_rollback_prepare(meta), 0);
    CN_CHECK_EQ(cn_auth_rollback_check(meta, a, 5), 0);
    CN_CHECK_EQ(cn_auth_rollback_check(meta, a, 5), 0);
    CN_CHECK_EQ(cn_auth_rollback_check(meta, a, 4), CN_E_CONFLICT);
    CN_CHECK_EQ(cn_auth_rollback_check(meta, a, 9), 0);
    CN_CHECK_EQ(cn_auth_rollback_check(meta, a, 5), CN_E_CONFLICT);
    CN_CHECK_EQ(cn_auth_rollback_check(meta, b, 1), 0); /* a new incarnation */
    CN_CHECK_EQ(cn_auth_rollback_check(meta, a, 8), CN_E_CONFLICT);
}

static void test_backup_restore(void)
{
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/auth-backup.bin", dir);
    CN_CHECK_EQ(call(NULL, 0, NULL, "trust-bundle", NULL), 0);
    uint8_t inc[CN_SAU2_ID_LEN];
    memcpy(inc, ans.incarnation, sizeof inc);
    uint64_t rev = ans.revision;
    CN_CHECK_EQ(cn_auth_rollback_check(meta, inc, rev), 0);
    CN_CHECK_EQ(cn_auth_backup(meta, dir, path), 0);
    CN_CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
    CN_CHECK(!file_has(path, ADMIN_PW) && !file_has(path, CAROL_PW));
    /* A change after the backup, then the restore. */
    CN_CHECK_EQ(call(&admin, op(), NULL, "users-add", "dave", "u-dave", "0", "person", NULL), 0);
    CN_CHECK_EQ(cn_auth_rollback_check(meta, inc, ans.revision), 0);
    cn_auth_close(auth);
    auth = NULL;
    CN_CHECK_EQ(cn_auth_restore(meta, dir, path), 0);
    CN_CHECK_EQ(cn_auth_open(meta, dir, &opts, &auth), 0);
    CN_CHECK_EQ(call(NULL, 0, NULL, "trust-bundle", NULL), 0);
    CN_CHECK(memcmp(ans.incarnation, inc, sizeof inc) != 0);
    CN_CHECK_EQ(ans.revision, rev);
    /* The same incarnation would be a rollback; the new one is accepted. */
    CN_CHECK_EQ(cn_auth_rollback_check(meta, inc, ans.revision), CN_E_CONFLICT);
    CN_CHECK_EQ(cn_auth_rollback_check(meta, ans.incarnation, ans.revision), 0);
    /* The restored state: dave is gone, the old credentials still work. */
    CN_CHECK_EQ(call(&admin, 0, NULL, "users-list", "", NULL), 0);
    bool dave = false;
    for (int i = 0; i < ans.nrows; i++)
        dave |= !strcmp(ans.rows[i][0], "dave");
    CN_CHECK(!dave);
    CN_CHECK_EQ(sign_in(false, "carol", CAROL_PW, op(), NULL), 0);
    /* migrate: another incarnation, the same revision. */
    memcpy(inc, ans.incarnation, sizeof inc);
    CN_CHECK_EQ(cn_auth_migrate(meta), 0);
    CN_CHECK_EQ(call(NULL, 0, NULL, "trust-bundle", NULL), 0);
    CN_CHECK(memcmp(ans.incarnation, inc, sizeof inc) != 0);
    /* A damaged backup is refused whole. */
    FILE *f = fopen(path, "r+b");
    CN_CHECK(f != NULL);
    if (f) {
        fseek(f, 40, SEEK_SET);
        int ch = fgetc(f);
        fseek(f, 40, SEEK_SET);
        fputc(ch ^ 1, f);
        fclose(f);
    }
    CN_CHECK_EQ(cn_auth_restore(meta, dir, path), CN_E_CORRUPT);
    CN_CHECK_EQ(call(NULL, 0, NULL, "trust-bundle", NULL), 0);
}

int main(void)
{
    static const cn_test_case_t cases[] = {
        { "setup", test_setup },
        { "access_certificate", test_access_certificate },
        { "automation", test_automation },
        { "authorize_matrix", test_authorize_matrix },
        { "authorize_rules", test_authorize_rules },
        { "delegates", test_delegates },
        { "inventory", test_inventory },
        { "batch_and_policy", test_batch_and_policy },
        { "rollback", test_rollback },
        { "backup_restore", test_backup_restore },
    };
    return harness_run(cases, sizeof cases / sizeof cases[0]);
}
