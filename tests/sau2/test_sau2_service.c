/* The auth service's verbs through cn_sau2_handle, with every request and
 * reply also passed through the codec (as the listener will): trust-bundle,
 * the sign-ins and their replays, intent mismatch, login vs admin-login ids,
 * a key registered twice, certificate-less callers, the users, servers,
 * credentials and audit verbs, revision steps, and no password in the audit
 * table, the database files or the log. */
#include "cairn/meta.h"
#include "cairn/sau2.h"
#include "cn_test.h"
#include "sau2_harness.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#define BOB_PW "bobs new password 1"

static cn_sau2_caller_t admin;

static void test_trust_bundle(void)
{
    CN_CHECK_EQ(call(NULL, 0, NULL, "trust-bundle", NULL), 0);
    CN_CHECK_EQ(ans.nrows, 3);
    CN_CHECK_STR(ans.rows[0][0], "access-ca");
    CN_CHECK_STR(ans.rows[1][0], "credential-ca");
    CN_CHECK_STR(ans.rows[2][0], "server-ca");
    CN_CHECK(strncmp(ans.rows[0][1], "-----BEGIN CERTIFICATE-----", 27) == 0);
    CN_CHECK_EQ(ans.revision, 1);
    CN_CHECK_EQ(call(NULL, 0, NULL, "trust-bundle", "x", NULL), 1);
    /* The keys at rest: 0600 files in a 0700 directory. */
    static const char *const keys[] = { "credential-ca", "access-ca", "server-ca", "server-tls" };
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/auth", dir);
    CN_CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0700);
    for (size_t i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/auth/%s.key", dir, keys[i]);
        CN_CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
    }
}

static void test_certificate_less(void)
{
    static const char *const verbs[] = { "users-list", "audit-list", "whoami", "logout" };
    for (size_t i = 0; i < 4; i++)
        CN_CHECK_EQ(call(NULL, 0, NULL, verbs[i], "", NULL), 3);
    cn_sau2_caller_t none = { 0 };
    CN_CHECK_EQ(call(&none, 0, NULL, "users-list", "", NULL), 3);
}

static void test_admin_login(void)
{
    CN_CHECK_EQ(sign_in(true, "admin", "wrong password", 1, NULL), 3);
    CN_CHECK_EQ(sign_in(true, "nobody", ADMIN_PW, 1, NULL), 3);
    CN_CHECK_EQ(sign_in(true, "admin", ADMIN_PW, 2, &admin), 0);
    CN_CHECK(admin.present);
    CN_CHECK_EQ(call(&admin, 0, NULL, "users-list", "", NULL), 0);
    CN_CHECK_EQ(ans.nrows, 1);
    CN_CHECK_STR(ans.rows[0][0], "admin");
    CN_CHECK_STR(ans.rows[0][3], "1");
    /* A caller whose key is not the registered one. */
    cn_sau2_caller_t forged = admin;
    forged.key_id[0] = forged.key_id[0] == '0' ? '1' : '0';
    CN_CHECK_EQ(call(&forged, 0, NULL, "users-list", "", NULL), 3);
    CN_CHECK_EQ(call(&admin, 0, NULL, "no-such-verb", NULL), 9);
}

static void test_login_replay(void)
{
    const char *cred = new_cred(), *key = new_key();
    CN_CHECK_EQ(call(NULL, 10, ADMIN_PW, "login", "admin", cred, key, NULL), 0);
    char pem[4200], exp[4200];
    snprintf(pem, sizeof pem, "%s", ans.rows[0][0]);
    snprintf(exp, sizeof exp, "%s", ans.rows[0][2]);
    CN_CHECK_STR(ans.rows[0][1], cred);
    /* Replays answer the same certificate with the same expiry. */
    CN_CHECK_EQ(call(NULL, 10, ADMIN_PW, "login-outcome", "admin", cred, key, NULL), 0);
    CN_CHECK_STR(ans.rows[0][0], pem);
    CN_CHECK_STR(ans.rows[0][2], exp);
    CN_CHECK_EQ(call(NULL, 10, ADMIN_PW, "login", "admin", cred, key, NULL), 0);
    CN_CHECK_STR(ans.rows[0][0], pem);
    /* The replay needs the password too. */
    CN_CHECK_EQ(call(NULL, 10, "not it", "login-outcome", "admin", cred, key, NULL), 3);
    /* The same id with another intent, or for admin-login. */
    CN_CHECK_EQ(call(NULL, 10, ADMIN_PW, "login", "admin", new_cred(), key, NULL), 200);
    CN_CHECK_EQ(call(NULL, 10, ADMIN_PW, "admin-login", "admin", cred, key, NULL), 200);
    CN_CHECK_EQ(call(NULL, 11, ADMIN_PW, "login-outcome", "admin", cred, key, NULL), 4);
    /* No operation id. */
    CN_CHECK_EQ(call(NULL, 0, ADMIN_PW, "login", "admin", new_cred(), new_key(), NULL), 1);
    /* A session credential may not administer. */
    cn_sau2_caller_t session;
    CN_CHECK_EQ(cn_auth_cert_caller(pem, strlen(pem), &session), 0);
    CN_CHECK_EQ(call(&session, 0, NULL, "users-list", "", NULL), 4);
}

static void test_whoami_logout(void)
{
    cn_sau2_caller_t me;
    CN_CHECK_EQ(sign_in(false, "admin", ADMIN_PW, 60, &me), 0);
    CN_CHECK_EQ(call(&me, 0, NULL, "whoami", NULL), 0);
    CN_CHECK_EQ(ans.n[0], 6);
    CN_CHECK_STR(ans.rows[0][0], "admin");
    CN_CHECK_STR(ans.rows[0][1], "session");
    CN_CHECK_STR(ans.rows[0][2], me.credential);
    CN_CHECK_STR(ans.rows[0][3], me.key_id);
    CN_CHECK_STR(ans.rows[0][5], "1");
    uint64_t rev = ans.revision;
    CN_CHECK_EQ(call(&me, 0, NULL, "whoami", "x", NULL), 1);
    CN_CHECK_EQ(call(&me, 0, NULL, "logout", NULL), 0);
    CN_CHECK_EQ(ans.revision, rev + 1);
    CN_CHECK_EQ(call(&me, 0, NULL, "whoami", NULL), 3);
    CN_CHECK_EQ(call(&me, 0, NULL, "logout", NULL), 3);
}

static void test_key_twice(void)
{
    const char *key = new_key();
    CN_CHECK_EQ(call(NULL, 20, ADMIN_PW, "login", "admin", new_cred(), key, NULL), 0);
    CN_CHECK_EQ(call(NULL, 21, ADMIN_PW, "login", "admin", new_cred(), key, NULL), 4);
    /* Not an Ed25519 key; a bad credential id. */
    CN_CHECK_EQ(call(NULL, 22, ADMIN_PW, "login", "admin", new_cred(), "00ff", NULL), 1);
    CN_CHECK_EQ(call(NULL, 23, ADMIN_PW, "login", "admin", "xyz", new_key(), NULL), 1);
}

static void test_users(void)
{
    CN_CHECK_EQ(call(&admin, 0, NULL, "users-list", "", NULL), 0);
    uint64_t rev = ans.revision;
    CN_CHECK_EQ(call(&admin, 30, NULL, "users-add", "bob", "u-bob", "0", "person", NULL), 0);
    CN_CHECK_EQ(ans.revision, rev + 1);
    CN_CHECK_STR(ans.rows[0][0], "bob");
    /* Replay: the same answer, no new revision; another intent: mismatch. */
    CN_CHECK_EQ(call(&admin, 30, NULL, "users-add", "bob", "u-bob", "0", "person", NULL), 0);
    CN_CHECK_EQ(ans.revision, rev + 1);
    CN_CHECK_EQ(call(&admin, 30, NULL, "users-add", "carol", "u-carol", "0", "person", NULL), 200);
    CN_CHECK_EQ(call(&admin, 0, NULL, "users-add", "carol", "u-carol", "0", "person", NULL), 1);
    CN_CHECK_EQ(call(&admin, 31, NULL, "users-add", "bob", "u-bob2", "0", "person", NULL), 4);
    CN_CHECK_EQ(call(&admin, 32, NULL, "users-add", "Bad Name", "x", "0", "person", NULL), 1);
    CN_CHECK_EQ(call(&admin, 33, NULL, "users-add", "svc", "u-svc", "0", "robot", NULL), 1);
    CN_CHECK_EQ(call(&admin, 34, NULL, "users-add", "svc", "u-svc", "0", "service", NULL), 0);
    CN_CHECK_EQ(ans.revision, rev + 2);
    /* No password yet: bob cannot sign in. */
    CN_CHECK_EQ(sign_in(false, "bob", BOB_PW, 35, NULL), 3);
    CN_CHECK_EQ(call(&admin, 36, BOB_PW, "users-password", "bob", "2", NULL), 4);
    CN_CHECK_EQ(call(&admin, 37, BOB_PW, "users-password", "bob", "1", NULL), 0);
    CN_CHECK_EQ(call(&admin, 38, BOB_PW, "users-password", "svc", "1", NULL), 4);
    CN_CHECK_EQ(sign_in(false, "bob", BOB_PW, 39, NULL), 0);
    /* bob is no administrator. */
    CN_CHECK_EQ(sign_in(true, "bob", BOB_PW, 40, NULL), 4);
    CN_CHECK_EQ(call(&admin, 41, NULL, "users-disable", "bob", NULL), 0);
    CN_CHECK_STR(ans.rows[0][1], "1");
    CN_CHECK_EQ(sign_in(false, "bob", BOB_PW, 42, NULL), 3);
    CN_CHECK_EQ(call(&admin, 43, NULL, "users-enable", "bob", NULL), 0);
    CN_CHECK_EQ(sign_in(false, "bob", BOB_PW, 44, NULL), 0);
    CN_CHECK_EQ(call(&admin, 45, NULL, "users-disable", "nobody", NULL), 4);
    CN_CHECK_EQ(call(&admin, 0, NULL, "users-list", "", NULL), 0);
    CN_CHECK_EQ(ans.nrows, 3);
    CN_CHECK_STR(ans.rows[1][0], "bob");
    CN_CHECK_STR(ans.rows[1][5], "1"); /* password generation */
    CN_CHECK_EQ(call(&admin, 0, NULL, "users-list", "bob", NULL), 0);
    CN_CHECK_EQ(ans.nrows, 1);
}

static void test_servers_credentials(void)
{
    CN_CHECK_EQ(call(&admin, 50, NULL, "servers-add", "store1", "team", "s-1", NULL), 0);
    CN_CHECK_EQ(call(&admin, 0, NULL, "servers-list", "", NULL), 0);
    CN_CHECK_EQ(ans.nrows, 1);
    CN_CHECK_STR(ans.rows[0][1], "team");
    const char *cred = new_cred();
    char exp[32], pem[4200];
    snprintf(exp, sizeof exp, "%lld", (long long)(cn_wall_ms() + 86400000));
    CN_CHECK_EQ(call(&admin, 51, NULL, "credentials-add", "server", "store1", cred, new_key(), exp,
                     "store one", NULL),
                0);
    snprintf(pem, sizeof pem, "%s", ans.rows[0][0]);
    CN_CHECK_EQ(call(&admin, 0, NULL, "credentials-certificate", cred, NULL), 0);
    CN_CHECK_STR(ans.rows[0][0], pem);
    CN_CHECK_EQ(call(&admin, 52, NULL, "credentials-add", "service-reader", "bob", new_cred(),
                     new_key(), exp, "x", NULL),
                4); /* bob is a person */
    CN_CHECK_EQ(call(&admin, 53, NULL, "credentials-add", "service-reader", "svc", new_cred(),
                     new_key(), "1", "x", NULL),
                1); /* expired */
    /* A second user credential for admin, revoked, then refused. */
    const char *ucred = new_cred();
    CN_CHECK_EQ(call(&admin, 54, NULL, "credentials-add", "user", "admin", ucred, new_key(), exp,
                     "laptop", NULL),
                0);
    cn_sau2_caller_t second;
    CN_CHECK_EQ(cn_auth_cert_caller(ans.rows[0][0], strlen(ans.rows[0][0]), &second), 0);
    CN_CHECK_EQ(call(&second, 0, NULL, "users-list", "", NULL), 0);
    CN_CHECK_EQ(call(&admin, 55, NULL, "credentials-revoke", ucred, NULL), 0);
    CN_CHECK_EQ(call(&second, 0, NULL, "users-list", "", NULL), 3);
    CN_CHECK_EQ(call(&admin, 0, NULL, "credentials-list", "", "admin", NULL), 0);
    CN_CHECK(ans.nrows >= 2);
    CN_CHECK_EQ(
        call(&admin, 0, NULL, "operation-outcome", "25252525252525252525252525252525", NULL),
        0); /* users-password bob 1 (op 37 = 0x25): admin's own */
    CN_CHECK_STR(ans.rows[0][0], "bob");
}

static void test_grants_and_friends(void)
{
    CN_CHECK_EQ(call(&admin, 0, NULL, "users-list", "", NULL), 0);
    uint64_t rev = ans.revision;
    CN_CHECK_EQ(call(&admin, 80, NULL, "grants-set", "bob", "team", "writer", NULL), 0);
    CN_CHECK_EQ(ans.revision, rev + 1);
    CN_CHECK_EQ(call(&admin, 81, NULL, "grants-set", "bob", "team", "owner", NULL), 1);
    CN_CHECK_EQ(call(&admin, 82, NULL, "grants-set", "bob", "art", "reader", NULL), 0);
    CN_CHECK_EQ(call(&admin, 0, NULL, "grants-list", "", NULL), 0);
    CN_CHECK_EQ(ans.nrows, 2);
    CN_CHECK_STR(ans.rows[0][0], "art");
    CN_CHECK_STR(ans.rows[1][2], "writer");
    CN_CHECK_EQ(call(&admin, 0, NULL, "grants-list", "art/bob", NULL), 0);
    CN_CHECK_EQ(ans.nrows, 1);
    CN_CHECK_EQ(call(&admin, 0, NULL, "grants-list", "", "team", NULL), 0);
    CN_CHECK_EQ(ans.nrows, 1);
    CN_CHECK_EQ(call(&admin, 83, NULL, "grants-revoke", "bob", "art", NULL), 0);
    CN_CHECK_EQ(call(&admin, 84, NULL, "grants-revoke", "bob", "art", NULL), 4);
    CN_CHECK_EQ(call(&admin, 85, NULL, "namespace-admins-set", "bob", "team", NULL), 0);
    CN_CHECK_EQ(call(&admin, 86, NULL, "namespace-readers-set", "bob", "team", NULL), 0);
    CN_CHECK_EQ(call(&admin, 0, NULL, "namespace-admins-list", "", NULL), 0);
    CN_CHECK(ans.nrows == 1 && !strcmp(ans.rows[0][1], "bob"));
    CN_CHECK_EQ(call(&admin, 87, NULL, "delegates-set", "bob", "team", NULL), 4); /* a person */
    CN_CHECK_EQ(call(&admin, 88, NULL, "delegates-set", "svc", "team", NULL), 0);
    CN_CHECK_EQ(call(&admin, 0, NULL, "delegates-list", "", "team", NULL), 0);
    CN_CHECK(ans.nrows == 1 && !strcmp(ans.rows[0][1], "svc"));
    CN_CHECK_EQ(call(&admin, 89, NULL, "delegates-revoke", "svc", "team", NULL), 0);
    CN_CHECK_EQ(call(&admin, 0, NULL, "visibility-get", "team", "art", NULL), 0);
    CN_CHECK_STR(ans.rows[0][2], "private");
    CN_CHECK_EQ(call(&admin, 90, NULL, "visibility-set", "team", "art", "public-read", NULL), 0);
    CN_CHECK_EQ(call(&admin, 0, NULL, "visibility-get", "team", "art", NULL), 0);
    CN_CHECK_STR(ans.rows[0][2], "public-read");
    CN_CHECK_EQ(call(&admin, 91, NULL, "visibility-set", "team", "art", "open", NULL), 1);
    CN_CHECK_EQ(call(&admin, 92, NULL, "grants-set", "bob", "Team!", "reader", NULL), 1);
}

/* Walks the whole audit by its cursor (a page is at most ANS_ROWS rows):
 * whether a refused and an applied users-add row exist, whether any row holds
 * a password, and the last row into last[]. */
static void audit_walk(bool *refused, bool *applied, bool *secret, char last[8][1200])
{
    char cursor[1200] = "";
    *refused = *applied = *secret = false;
    /* Each audit-list is audited too: a page that is not full is the end. */
    bool more = true;
    while (more && call(&admin, 0, NULL, "audit-list", cursor, NULL) == 0 && ans.nrows > 0) {
        more = ans.nrows == ANS_ROWS;
        for (int i = 0; i < ans.nrows; i++) {
            *refused |= strcmp(ans.rows[i][5], "0") != 0;
            *applied |= !strcmp(ans.rows[i][3], "users-add") && !strcmp(ans.rows[i][5], "0");
            *secret |= strstr(ans.rows[i][4], BOB_PW) || strstr(ans.rows[i][4], ADMIN_PW);
        }
        memcpy(last, ans.rows[ans.nrows - 1], sizeof ans.rows[0]);
        memcpy(cursor, last[0], sizeof cursor);
    }
}

static void test_audit_no_secret(void)
{
    static char last[8][1200];
    bool refused, applied, secret;
    audit_walk(&refused, &applied, &secret, last);
    CN_CHECK(refused && applied && !secret);
    /* bob (no administrator) asking is audited under his name. */
    cn_sau2_caller_t bob;
    CN_CHECK_EQ(sign_in(false, "bob", BOB_PW, 70, &bob), 0);
    CN_CHECK_EQ(call(&bob, 71, NULL, "users-disable", "admin", NULL), 4);
    audit_walk(&refused, &applied, &secret, last);
    CN_CHECK_STR(last[2], "bob");
    CN_CHECK_STR(last[3], "users-disable");
    CN_CHECK_STR(last[4], "admin");
    CN_CHECK_STR(last[5], "4");
    CN_CHECK_EQ(call(&admin, 0, NULL, "audit-list", "x", NULL), 1);
    /* No password in the database, its WAL or the log. */
    const char *files[] = { "meta.db", "meta.db-wal", NULL };
    char path[512];
    for (int i = 0; files[i]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        CN_CHECK(!file_has(path, ADMIN_PW) && !file_has(path, BOB_PW));
    }
    fflush(stderr);
    CN_CHECK(!file_has(log_path, ADMIN_PW) && !file_has(log_path, BOB_PW));
    CN_CHECK(file_has(log_path, "sign-in")); /* the log was captured */
}

int main(void)
{
    static const cn_test_case_t cases[] = {
        { "trust_bundle", test_trust_bundle },
        { "certificate_less", test_certificate_less },
        { "admin_login", test_admin_login },
        { "login_replay", test_login_replay },
        { "whoami_logout", test_whoami_logout },
        { "key_twice", test_key_twice },
        { "users", test_users },
        { "servers_credentials", test_servers_credentials },
        { "grants_and_friends", test_grants_and_friends },
        { "audit_no_secret", test_audit_no_secret },
    };
    return harness_run(cases, sizeof cases / sizeof cases[0]);
}
