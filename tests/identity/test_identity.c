/* identity: permissions, bootstrap, authentication (every rejection),
 * secret lookup, revocation and disable (also from a second handle, as
 * cairn admin would), the rate limiter and namespace grants.  On PostgreSQL
 * too when CAIRN_TEST_META names a server (identity_pg, tests/fleet/pg.sh). */
#include "cn_test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cairn/crypto.h"
#include "cairn/identity.h"
#include "cairn/meta.h"
#include "cairn/util.h"
#include "meta/test_target.h"

typedef struct {
    char *dir;
    cn_meta_t *meta;
    cn_identity_t *id;
} fx_t;

static void fx_open(fx_t *f, const char *dir)
{
    cn_meta_opts_t o = { .no_sync = true };
    f->dir = dir ? strdup(dir) : cn_test_tmpdir("test-identity");
    CN_CHECK_EQ(cn_meta_open(cn_test_meta_for(f->dir), &o, &f->meta), 0);
    CN_CHECK_EQ(cn_identity_open(f->meta, f->dir, &f->id), 0);
}

static void fx_close(fx_t *f, bool remove)
{
    cn_identity_close(f->id);
    cn_meta_close(f->meta);
    if (remove)
        cn_test_rmtree(f->dir);
    free(f->dir);
}

static cn_err_t auth(cn_identity_t *id, const char *cred, cn_principal_t *p)
{
    return cn_identity_authenticate(id, cred, strlen(cred), p);
}

static void test_perms(void)
{
    cn_perms_t p = 0;
    CN_CHECK_EQ(cn_perm_parse("object:get", 10, &p), 0);
    CN_CHECK_EQ(p, CN_PERM_OBJECT_GET);
    CN_CHECK_EQ(cn_perm_parse("admin", 5, &p), 0);
    CN_CHECK_EQ(p, CN_PERM_ADMIN);
    CN_CHECK_EQ(cn_perm_parse("all", 3, &p), 0);
    CN_CHECK_EQ(p, CN_PERM_ALL);
    CN_CHECK_EQ(cn_perm_parse("object:gets", 11, &p), CN_E_INVALID);
    CN_CHECK_EQ(cn_perm_parse("object:getX", 10, &p), 0); /* length-bounded */
    CN_CHECK_EQ(cn_perm_parse("", 0, &p), CN_E_INVALID);
    const char *names[] = { "bucket:create", "bucket:delete", "bucket:list", "object:get",
                            "object:put",    "object:delete", "object:list", "blobs:read",
                            "blobs:write",   "admin" };
    for (unsigned i = 0; i < 10; i++) {
        CN_CHECK_STR(cn_perm_name(1u << i), names[i]);
        CN_CHECK_EQ(cn_perm_parse(names[i], strlen(names[i]), &p), 0);
        CN_CHECK_EQ(p, 1u << i);
    }
    CN_CHECK(cn_perm_name(3) == NULL);
    CN_CHECK(cn_perm_name(1u << 10) == NULL);
    char buf[CN_PERMS_STR_MAX];
    CN_CHECK_EQ(cn_perms_format(CN_PERM_OBJECT_GET | CN_PERM_ADMIN, buf, sizeof buf), 0);
    CN_CHECK_STR(buf, "object:get admin");
    CN_CHECK_EQ(cn_perms_format(CN_PERM_ALL, buf, sizeof buf), 0);
    CN_CHECK_EQ(cn_perms_format(CN_PERM_ALL, buf, 10), CN_E_TOO_LARGE);
    CN_CHECK(!(CN_PERM_DEFAULT & CN_PERM_ADMIN));
    uint32_t act;
    CN_CHECK_EQ(cn_ns_action_parse("read", &act), 0);
    CN_CHECK_EQ(act, CN_NS_READ);
    CN_CHECK_EQ(cn_ns_action_parse("delete", &act), CN_E_INVALID);
}

static void test_bootstrap_file(void)
{
    unsetenv("CAIRN_ADMIN_TOKEN");
    fx_t f;
    fx_open(&f, NULL);
    char path[512];
    snprintf(path, sizeof path, "%s/identity.key", f.dir);
    struct stat st;
    CN_CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
    CN_CHECK_EQ(cn_identity_bootstrap(f.id, f.dir), 0);
    snprintf(path, sizeof path, "%s/admin.token", f.dir);
    CN_CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
    char cred[CN_CREDENTIAL_MAX] = { 0 };
    FILE *fp = fopen(path, "r");
    CN_CHECK(fp && fgets(cred, sizeof cred, fp));
    if (fp)
        fclose(fp);
    size_t n = strlen(cred);
    CN_CHECK(n > 2 && cred[n - 1] == '\n');
    cred[--n] = '\0';
    cn_principal_t p;
    CN_CHECK_EQ(auth(f.id, cred, &p), 0);
    CN_CHECK_STR(p.account, "admin");
    CN_CHECK_EQ(p.perms, CN_PERM_ALL);
    CN_CHECK(p.flags & CN_PRINCIPAL_ADMIN);

    /* Idempotent: a restart neither rewrites the file nor adds a token. */
    char before[CN_CREDENTIAL_MAX];
    snprintf(before, sizeof before, "%s", cred);
    fx_close(&f, false);
    char *dir = strdup(path);
    *strrchr(dir, '/') = '\0';
    fx_open(&f, dir);
    free(dir);
    CN_CHECK_EQ(cn_identity_bootstrap(f.id, f.dir), 0);
    fp = fopen(path, "r");
    CN_CHECK(fp && fgets(cred, sizeof cred, fp));
    if (fp)
        fclose(fp);
    cred[strcspn(cred, "\n")] = '\0';
    CN_CHECK_STR(cred, before);
    CN_CHECK_EQ(auth(f.id, cred, &p), 0);
    fx_close(&f, true);
}

static void test_bootstrap_env(void)
{
    setenv("CAIRN_ADMIN_TOKEN", "envadmin:s3cr:et:with:colons", 1);
    fx_t f;
    fx_open(&f, NULL);
    CN_CHECK_EQ(cn_identity_bootstrap(f.id, f.dir), 0);
    CN_CHECK_EQ(cn_identity_bootstrap(f.id, f.dir), 0); /* idempotent */
    char path[512];
    snprintf(path, sizeof path, "%s/admin.token", f.dir);
    CN_CHECK(access(path, F_OK) != 0); /* no file written */
    cn_principal_t p;
    CN_CHECK_EQ(auth(f.id, "envadmin:s3cr:et:with:colons", &p), 0);
    CN_CHECK_STR(p.token_id, "envadmin");
    CN_CHECK_STR(p.account, "admin");
    CN_CHECK_EQ(p.perms, CN_PERM_ALL);
    CN_CHECK_EQ(auth(f.id, "envadmin:s3cr", &p), CN_E_AUTH);
    /* The secret's tag: the same on every lookup of the same secret. */
    uint8_t sec[CN_SECRET_MAX], tag[CN_IDENTITY_TAG_LEN], tag2[CN_IDENTITY_TAG_LEN];
    uint8_t zero[CN_IDENTITY_TAG_LEN] = { 0 };
    size_t slen = 0;
    cn_identity_set_cache_ttl(f.id, 60000);
    CN_CHECK_EQ(
        cn_identity_lookup_tagged(f.id, "envadmin", false, sec, sizeof sec, &slen, tag, NULL), 0);
    CN_CHECK(memcmp(tag, zero, sizeof tag) != 0);
    CN_CHECK_EQ(
        cn_identity_lookup_tagged(f.id, "envadmin", true, sec, sizeof sec, &slen, tag2, NULL), 0);
    CN_CHECK_MEM(tag2, tag, sizeof tag);
    /* A changed variable takes over on the next start. */
    setenv("CAIRN_ADMIN_TOKEN", "envadmin:other", 1);
    CN_CHECK_EQ(cn_identity_bootstrap(f.id, f.dir), 0);
    CN_CHECK_EQ(auth(f.id, "envadmin:other", &p), 0);
    CN_CHECK_EQ(auth(f.id, "envadmin:s3cr:et:with:colons", &p), CN_E_AUTH);
    /* A changed secret under the same token id has another tag, so nothing
     * keyed by (token id, tag) from the old secret is found for the new. */
    CN_CHECK_EQ(
        cn_identity_lookup_tagged(f.id, "envadmin", false, sec, sizeof sec, &slen, tag2, NULL), 0);
    CN_CHECK_EQ(slen, strlen("other"));
    CN_CHECK(memcmp(tag2, tag, sizeof tag) != 0);
    /* Revoked: no secret and no tag handed out, cached or not. */
    CN_CHECK_EQ(cn_identity_token_revoke(f.id, "envadmin"), 0);
    CN_CHECK_EQ(
        cn_identity_lookup_tagged(f.id, "envadmin", false, sec, sizeof sec, &slen, tag2, NULL),
        CN_E_AUTH);
    CN_CHECK(cn_identity_lookup_tagged(f.id, "envadmin", true, sec, sizeof sec, &slen, tag2, NULL) <
             0);
    setenv("CAIRN_ADMIN_TOKEN", "envadmin:other", 1);
    CN_CHECK_EQ(cn_identity_bootstrap(f.id, f.dir), 0); /* made to hold again */
    setenv("CAIRN_ADMIN_TOKEN", "no-colon", 1);
    CN_CHECK_EQ(cn_identity_bootstrap(f.id, f.dir), CN_E_INVALID);
    setenv("CAIRN_ADMIN_TOKEN", "bad id:x", 1);
    CN_CHECK_EQ(cn_identity_bootstrap(f.id, f.dir), CN_E_INVALID);
    unsetenv("CAIRN_ADMIN_TOKEN");
    fx_close(&f, true);
}

static void test_authenticate(void)
{
    unsetenv("CAIRN_ADMIN_TOKEN");
    fx_t f;
    fx_open(&f, NULL);
    CN_CHECK_EQ(cn_identity_bootstrap(f.id, f.dir), 0);
    cn_account_t a;
    CN_CHECK_EQ(cn_identity_account_create(f.id, "alice", "Alice@Example.COM", &a), 0);
    CN_CHECK_STR(a.email, "alice@example.com");
    CN_CHECK(a.id > 0 && !a.disabled && a.created_at > 0);
    CN_CHECK_EQ(cn_identity_account_create(f.id, "alice", NULL, NULL), CN_E_EXISTS);
    CN_CHECK_EQ(cn_identity_account_create(f.id, "alice2", "alice@example.com", NULL), CN_E_EXISTS);
    CN_CHECK_EQ(cn_identity_account_create(f.id, "bob", NULL, NULL), 0);
    CN_CHECK_EQ(cn_identity_account_create(f.id, "-bad", NULL, NULL), CN_E_INVALID);
    CN_CHECK_EQ(cn_identity_account_create(f.id, "has:colon", NULL, NULL), CN_E_INVALID);
    CN_CHECK_EQ(cn_identity_account_create(f.id, "carol", "not-an-email", NULL), CN_E_INVALID);
    cn_account_t b;
    CN_CHECK_EQ(cn_identity_account_by_email(f.id, "ALICE@example.com", &b), 0);
    CN_CHECK_EQ(b.id, a.id);
    CN_CHECK_EQ(cn_identity_account_by_id(f.id, a.id, &b), 0);
    CN_CHECK_STR(b.name, "alice");
    CN_CHECK_EQ(cn_identity_account_get(f.id, "nobody", &b), CN_E_NOT_FOUND);
    CN_CHECK_EQ(cn_identity_account_by_email(f.id, "x@y.z", &b), CN_E_NOT_FOUND);

    char cred[CN_CREDENTIAL_MAX];
    CN_CHECK_EQ(
        cn_identity_token_create(f.id, "alice", CN_PERM_OBJECT_GET | CN_PERM_BLOBS_READ, 0, cred),
        0);
    CN_CHECK_EQ(cn_identity_token_create(f.id, "nobody", CN_PERM_OBJECT_GET, 0, cred),
                CN_E_NOT_FOUND);
    char tmp[CN_CREDENTIAL_MAX];
    CN_CHECK_EQ(cn_identity_token_create(f.id, "alice", 0, 0, tmp), CN_E_INVALID);
    char *colon = strchr(cred, ':');
    CN_CHECK(colon != NULL);
    char tid[CN_TOKEN_ID_MAX + 1];
    snprintf(tid, sizeof tid, "%.*s", (int)(colon - cred), cred);

    cn_principal_t p;
    memset(&p, 0, sizeof p);
    CN_CHECK_EQ(auth(f.id, cred, &p), 0);
    CN_CHECK_STR(p.account, "alice");
    CN_CHECK_EQ(p.account_id, a.id);
    CN_CHECK_STR(p.token_id, tid);
    CN_CHECK_EQ(p.perms, CN_PERM_OBJECT_GET | CN_PERM_BLOBS_READ);
    CN_CHECK(!(p.flags & CN_PRINCIPAL_ADMIN));
    /* Not NUL-terminated: only len bytes count. */
    char padded[CN_CREDENTIAL_MAX + 8];
    snprintf(padded, sizeof padded, "%sXYZ", cred);
    CN_CHECK_EQ(cn_identity_authenticate(f.id, padded, strlen(cred), &p), 0);
    CN_CHECK_EQ(cn_identity_authenticate(f.id, padded, strlen(padded), &p), CN_E_AUTH);

    /* Wrong secret, shape errors, unknown id. */
    snprintf(tmp, sizeof tmp, "%s:wrong", tid);
    CN_CHECK_EQ(auth(f.id, tmp, &p), CN_E_AUTH);
    snprintf(tmp, sizeof tmp, "%s:", tid);
    CN_CHECK_EQ(auth(f.id, tmp, &p), CN_E_AUTH);
    CN_CHECK_EQ(auth(f.id, tid, &p), CN_E_AUTH); /* no colon */
    CN_CHECK_EQ(auth(f.id, "", &p), CN_E_AUTH);
    CN_CHECK_EQ(auth(f.id, ":secret", &p), CN_E_AUTH);
    CN_CHECK_EQ(auth(f.id, "UNKNOWNID:secret", &p), CN_E_AUTH);
    CN_CHECK_EQ(cn_identity_authenticate(f.id, NULL, 0, &p), CN_E_AUTH);
    snprintf(tmp, sizeof tmp, "%s%s", tid, colon + 1); /* id and secret, no colon */
    CN_CHECK_EQ(auth(f.id, tmp, &p), CN_E_AUTH);
    /* Secret lookup (SigV4). */
    uint8_t sec[CN_SECRET_MAX];
    size_t slen = 0;
    memset(&p, 0, sizeof p);
    CN_CHECK_EQ(cn_identity_lookup_secret(f.id, tid, sec, sizeof sec, &slen, &p), 0);
    CN_CHECK_EQ(slen, strlen(colon + 1));
    CN_CHECK(memcmp(sec, colon + 1, slen) == 0);
    CN_CHECK_STR(p.account, "alice");
    CN_CHECK_EQ(cn_identity_lookup_secret(f.id, tid, sec, 4, &slen, NULL), CN_E_TOO_LARGE);
    CN_CHECK_EQ(cn_identity_lookup_secret(f.id, "UNKNOWN", sec, sizeof sec, &slen, NULL),
                CN_E_AUTH);
    CN_CHECK_EQ(cn_identity_lookup_secret(f.id, "bad:id", sec, sizeof sec, &slen, NULL), CN_E_AUTH);

    /* A second handle on the same data dir, as `cairn admin` would be. */
    cn_meta_t *m2;
    cn_identity_t *id2;
    CN_CHECK_EQ(cn_meta_open(cn_test_meta_for(f.dir), NULL, &m2), 0);
    CN_CHECK_EQ(cn_identity_open(m2, f.dir, &id2), 0);
    CN_CHECK_EQ(auth(id2, cred, &p), 0); /* same key file */

    /* Changes from the other handle are seen here by the very next lookup,
     * though the cached state is far younger than its age bound: the data
     * dir's identity write-generation moved (src/identity/gen.c). */
    cn_identity_set_cache_ttl(f.id, 60000);
    cn_meta_topic_sync(f.meta, 5000);     /* PostgreSQL: our own notices are in */
    CN_CHECK_EQ(auth(f.id, cred, &p), 0); /* cached */
    CN_CHECK_EQ(cn_identity_lookup_secret_cached(f.id, tid, sec, sizeof sec, &slen, NULL), 0);
    CN_CHECK_EQ(cn_identity_account_set_disabled(id2, "alice", true), 0);
    CN_CHECK_EQ(auth(id2, cred, &p), CN_E_AUTH); /* at once there */
    /* The cached state is no longer served, not even to a cache-only lookup. */
    CN_CHECK_EQ(cn_identity_lookup_secret_cached(f.id, tid, sec, sizeof sec, &slen, NULL),
                CN_E_AGAIN);
    CN_CHECK_EQ(auth(f.id, cred, &p), CN_E_AUTH);
    CN_CHECK_EQ(cn_identity_lookup_secret(f.id, tid, sec, sizeof sec, &slen, NULL), CN_E_AUTH);
    CN_CHECK_EQ(cn_identity_account_set_disabled(id2, "alice", false), 0);
    CN_CHECK_EQ(cn_identity_account_set_disabled(id2, "nobody", true), CN_E_NOT_FOUND);
    /* PostgreSQL: the fleet topic moved with id2's writes; once this node's
     * watcher has read it, nothing moves it again (src/meta/watch.c, W2). */
    cn_meta_topic_sync(f.meta, 5000);
    CN_CHECK_EQ(auth(f.id, cred, &p), 0);
    /* No write since: the state just read is served from the cache. */
    CN_CHECK_EQ(cn_identity_lookup_secret_cached(f.id, tid, sec, sizeof sec, &slen, NULL), 0);

    /* Revoke from the other handle: refused here at once. */
    CN_CHECK_EQ(cn_identity_token_revoke(id2, tid), 0);
    CN_CHECK_EQ(auth(f.id, cred, &p), CN_E_AUTH);
    CN_CHECK_EQ(cn_identity_token_revoke(f.id, tid), 0); /* again: fine */
    CN_CHECK_EQ(cn_identity_token_revoke(f.id, "UNKNOWN"), CN_E_NOT_FOUND);

    /* The age bound still holds on its own: a 1 ms TTL lets nothing be
     * served from the cache a few ms later. */
    cn_identity_set_cache_ttl(f.id, 1);
    CN_CHECK_EQ(cn_identity_token_create(f.id, "bob", CN_PERM_DEFAULT, 0, cred), 0);
    snprintf(tid, sizeof tid, "%.*s", (int)(strchr(cred, ':') - cred), cred);
    CN_CHECK_EQ(auth(f.id, cred, &p), 0);
    usleep(5000);
    CN_CHECK_EQ(cn_identity_lookup_secret_cached(f.id, tid, sec, sizeof sec, &slen, NULL),
                CN_E_AGAIN);

    /* Revoke through the same handle applies at once despite the cache. */
    cn_identity_set_cache_ttl(f.id, 60000);
    CN_CHECK_EQ(cn_identity_token_create(f.id, "bob", CN_PERM_DEFAULT, 0, cred), 0);
    CN_CHECK_EQ(auth(f.id, cred, &p), 0);
    snprintf(tid, sizeof tid, "%.*s", (int)(strchr(cred, ':') - cred), cred);
    CN_CHECK_EQ(cn_identity_token_revoke(f.id, tid), 0);
    CN_CHECK_EQ(auth(f.id, cred, &p), CN_E_AUTH);

    /* Expired token. */
    CN_CHECK_EQ(cn_identity_token_create(f.id, "bob", CN_PERM_DEFAULT, time(NULL) - 1, cred), 0);
    CN_CHECK_EQ(auth(f.id, cred, &p), CN_E_AUTH);
    CN_CHECK_EQ(cn_identity_token_create(f.id, "bob", CN_PERM_DEFAULT, time(NULL) + 3600, cred), 0);
    CN_CHECK_EQ(auth(f.id, cred, &p), 0);

    cn_identity_close(id2);
    cn_meta_close(m2);
    fx_close(&f, true);
}

typedef struct {
    int n;
    int revoked;
} count_t;
static cn_err_t count_tok(void *arg, const cn_token_info_t *t)
{
    count_t *c = arg;
    c->n++;
    c->revoked += t->revoked_at != 0;
    return 0;
}
static cn_err_t count_acc(void *arg, const cn_account_t *a)
{
    (void)a;
    ((count_t *)arg)->n++;
    return 0;
}
static cn_err_t count_grant(void *arg, const cn_ns_grant_t *g)
{
    count_t *c = arg;
    c->n++;
    c->revoked += (int)g->actions;
    return 0;
}

static void test_lists_and_grants(void)
{
    unsetenv("CAIRN_ADMIN_TOKEN");
    fx_t f;
    fx_open(&f, NULL);
    CN_CHECK_EQ(cn_identity_bootstrap(f.id, f.dir), 0);
    cn_account_t a;
    CN_CHECK_EQ(cn_identity_account_create(f.id, "alice", NULL, &a), 0);
    char cred[CN_CREDENTIAL_MAX];
    CN_CHECK_EQ(cn_identity_token_create(f.id, "alice", CN_PERM_BLOBS_READ, 0, cred), 0);
    CN_CHECK_EQ(cn_identity_token_create(f.id, "alice", CN_PERM_BLOBS_READ, 0, cred), 0);
    *strchr(cred, ':') = '\0';
    CN_CHECK_EQ(cn_identity_token_revoke(f.id, cred), 0);
    count_t c = { 0, 0 };
    CN_CHECK_EQ(cn_identity_account_list(f.id, count_acc, &c), 0);
    CN_CHECK_EQ(c.n, 2);
    c = (count_t){ 0, 0 };
    CN_CHECK_EQ(cn_identity_token_list(f.id, NULL, count_tok, &c), 0);
    CN_CHECK_EQ(c.n, 3);
    CN_CHECK_EQ(c.revoked, 1);
    c = (count_t){ 0, 0 };
    CN_CHECK_EQ(cn_identity_token_list(f.id, "alice", count_tok, &c), 0);
    CN_CHECK_EQ(c.n, 2);

    uint32_t act = 99;
    CN_CHECK_EQ(cn_identity_ns_actions(f.id, "ns1", a.id, &act), 0);
    CN_CHECK_EQ(act, 0); /* closed by default */
    CN_CHECK_EQ(cn_identity_grant(f.id, "ns1", "alice", CN_NS_READ), 0);
    CN_CHECK_EQ(cn_identity_grant(f.id, "ns1", "alice", CN_NS_WRITE), 0);
    CN_CHECK_EQ(cn_identity_ns_actions(f.id, "ns1", a.id, &act), 0);
    CN_CHECK_EQ(act, CN_NS_ALL);
    CN_CHECK_EQ(cn_identity_ns_actions(f.id, "ns2", a.id, &act), 0);
    CN_CHECK_EQ(act, 0);
    CN_CHECK_EQ(cn_identity_grant(f.id, "ns2", "alice", CN_NS_READ), 0);
    CN_CHECK_EQ(cn_identity_grant(f.id, "ns2", "nobody", CN_NS_READ), CN_E_NOT_FOUND);
    CN_CHECK_EQ(cn_identity_grant(f.id, "bad ns", "alice", CN_NS_READ), CN_E_INVALID);
    CN_CHECK_EQ(cn_identity_grant(f.id, "ns2", "alice", 0), CN_E_INVALID);
    c = (count_t){ 0, 0 };
    CN_CHECK_EQ(cn_identity_grant_list(f.id, NULL, count_grant, &c), 0);
    CN_CHECK_EQ(c.n, 2);
    c = (count_t){ 0, 0 };
    CN_CHECK_EQ(cn_identity_grant_list(f.id, "ns1", count_grant, &c), 0);
    CN_CHECK_EQ(c.n, 1);
    CN_CHECK_EQ(c.revoked, CN_NS_ALL);
    CN_CHECK_EQ(cn_identity_revoke(f.id, "ns1", "alice", CN_NS_WRITE), 0);
    CN_CHECK_EQ(cn_identity_ns_actions(f.id, "ns1", a.id, &act), 0);
    CN_CHECK_EQ(act, CN_NS_READ);
    CN_CHECK_EQ(cn_identity_revoke(f.id, "ns1", "alice", CN_NS_WRITE), CN_E_NOT_FOUND);
    CN_CHECK_EQ(cn_identity_revoke(f.id, "ns1", "alice", CN_NS_ALL), 0);
    CN_CHECK_EQ(cn_identity_ns_actions(f.id, "ns1", a.id, &act), 0);
    CN_CHECK_EQ(act, 0);
    c = (count_t){ 0, 0 };
    CN_CHECK_EQ(cn_identity_grant_list(f.id, "ns1", count_grant, &c), 0);
    CN_CHECK_EQ(c.n, 0);
    /* A disabled account holds no namespace action. */
    CN_CHECK_EQ(cn_identity_account_set_disabled(f.id, "alice", true), 0);
    CN_CHECK_EQ(cn_identity_ns_actions(f.id, "ns2", a.id, &act), 0);
    CN_CHECK_EQ(act, 0);
    fx_close(&f, true);
}

static void test_rate_limit(void)
{
    fx_t f;
    fx_open(&f, NULL);
    /* Off by default. */
    for (int i = 0; i < 1000; i++)
        CN_CHECK_EQ(cn_identity_rate_take(f.id, "tokA"), 0);
    cn_identity_set_rate(f.id, 10, 5);
    int ok = 0;
    for (int i = 0; i < 20; i++)
        ok += cn_identity_rate_take(f.id, "tokA") == 0;
    CN_CHECK_EQ(ok, 5); /* the burst */
    int64_t emptied = cn_mono_ms();
    CN_CHECK_EQ(cn_identity_rate_take(f.id, "tokA"), CN_E_RATE_LIMITED);
    CN_CHECK_EQ(cn_identity_rate_take(f.id, "tokB"), 0); /* per token */
    usleep(250000);                                      /* ~2.5 refilled */
    ok = 0;
    for (int i = 0; i < 10; i++)
        ok += cn_identity_rate_take(f.id, "tokA") == 0;
    /* 10 a second for at least the 250 ms slept and at most the time since
     * the bucket emptied (a loaded machine oversleeps), never past the burst. */
    int64_t most = (cn_mono_ms() - emptied) / 100 + 1;
    CN_CHECK(ok >= 2 && ok <= (most < 5 ? most : 5));
    /* Many tokens: shards recycle idle buckets without failing. */
    for (int i = 0; i < 40000; i++) {
        char t[32];
        snprintf(t, sizeof t, "t%d", i);
        CN_CHECK_EQ(cn_identity_rate_take(f.id, t), 0);
    }
    cn_identity_set_rate(f.id, 0, 0);
    CN_CHECK_EQ(cn_identity_rate_take(f.id, "tokA"), 0);
    fx_close(&f, true);
}

static void test_bad_key_file(void)
{
    char *dir = cn_test_tmpdir("test-identity");
    char path[512];
    snprintf(path, sizeof path, "%s/identity.key", dir);
    FILE *fp = fopen(path, "w");
    CN_CHECK(fp != NULL);
    if (fp) {
        fputs("not a key\n", fp);
        fclose(fp);
    }
    cn_meta_t *m;
    cn_identity_t *id = NULL;
    CN_CHECK_EQ(cn_meta_open(cn_test_meta_for(dir), NULL, &m), 0);
    CN_CHECK_EQ(cn_identity_open(m, dir, &id), CN_E_CORRUPT);
    cn_meta_close(m);
    cn_test_rmtree(dir);
    free(dir);
}

/* Writes a fresh key (64 hex digits) to dir/name; returns its path. */
static char *key_file_new(const char *dir, const char *name)
{
    char *path = malloc(512);
    snprintf(path, 512, "%s/%s", dir, name);
    uint8_t k[32];
    char hex[65];
    CN_CHECK_EQ(cn_random_bytes(k, sizeof k), 0);
    cn_hex_encode(k, sizeof k, hex);
    hex[64] = '\n';
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CN_CHECK(fd >= 0 && write(fd, hex, 65) == 65);
    close(fd);
    return path;
}

/* The key check value (docs/fleet.md, "One identity key"): the first open
 * records it; the same key opens (from another data dir, or with none: a
 * tool on a fleet's database); another key is refused, also one a database
 * without a recorded value would have taken if its tokens had not said no;
 * a named key file is never created. */
static void test_key_check(void)
{
    char *dir = cn_test_tmpdir("test-identity"), *other = cn_test_tmpdir("test-identity");
    char *fleet = key_file_new(dir, "fleet.key"), *wrong = key_file_new(dir, "wrong.key");
    cn_meta_t *m = NULL;
    cn_identity_t *id = NULL, *id2 = NULL;
    CN_CHECK_EQ(cn_meta_open(cn_test_meta_for(dir), NULL, &m), 0);
    cn_identity_opts_t io = { .data_dir = dir, .key_file = fleet };
    CN_CHECK_EQ(cn_identity_open_opts(m, &io, &id), 0);
    char cred[CN_CREDENTIAL_MAX];
    cn_principal_t p;
    CN_CHECK_EQ(cn_identity_account_create(id, "kc", NULL, NULL), 0);
    CN_CHECK_EQ(cn_identity_token_create(id, "kc", CN_PERM_OBJECT_GET, 0, cred), 0);
    struct stat st;
    char path[600];
    snprintf(path, sizeof path, "%s/identity.key", dir);
    CN_CHECK(stat(path, &st) != 0); /* the named key, not DATA's */

    /* The same key, from another data dir and from none: opens, and reads
     * the token made through the first handle. */
    cn_identity_opts_t same = { .data_dir = other, .key_file = fleet };
    CN_CHECK_EQ(cn_identity_open_opts(m, &same, &id2), 0);
    CN_CHECK_EQ(auth(id2, cred, &p), 0);
    cn_identity_close(id2);
    id2 = NULL;
    cn_identity_opts_t nodir = { .key_file = fleet };
    CN_CHECK_EQ(cn_identity_open_opts(m, &nodir, &id2), 0);
    CN_CHECK_EQ(auth(id2, cred, &p), 0);
    cn_identity_close(id2);
    id2 = NULL;

    /* Another key: refused, whether named or DATA's own. */
    cn_identity_opts_t bad = { .data_dir = other, .key_file = wrong };
    CN_CHECK_EQ(cn_identity_open_opts(m, &bad, &id2), CN_E_AUTH);
    CN_CHECK(id2 == NULL);
    CN_CHECK_EQ(cn_identity_open(m, other, &id2), CN_E_AUTH);

    /* A named file that is not there is not created. */
    snprintf(path, sizeof path, "%s/absent.key", dir);
    cn_identity_opts_t absent = { .data_dir = other, .key_file = path };
    CN_CHECK_EQ(cn_identity_open_opts(m, &absent, &id2), -ENOENT);
    CN_CHECK(stat(path, &st) != 0);
    cn_identity_opts_t none = { 0 };
    CN_CHECK_EQ(cn_identity_open_opts(m, &none, &id2), CN_E_INVALID);

    /* A database from before the check (no value recorded) holding tokens,
     * the first of them sealed under some older key: a key that opens none
     * of them is refused and not recorded; the right one (it opens a later
     * token) is, and the wrong one stays refused. */
    cn_meta_txn_t *t = NULL;
    char box[2 * 45 + 1];
    memset(box, '0', sizeof box - 1);
    box[1] = '1'; /* version 1, zero nonce, ciphertext and tag: opens under no key */
    box[sizeof box - 1] = '\0';
    CN_CHECK_EQ(cn_meta_begin(m, CN_META_WRITE, &t), 0);
    CN_CHECK(cn_meta_execf(t, "DELETE FROM cn_identity_key", "") >= 0);
    CN_CHECK(cn_meta_execf(t,
                           "INSERT INTO cn_tokens (id, account_id, secret_box, perms, created_at)"
                           " SELECT '0000', id, ?, 0, 0 FROM cn_accounts WHERE name = 'kc'",
                           "s", box) >= 0);
    CN_CHECK_EQ(cn_meta_commit(t), 0);
    CN_CHECK_EQ(cn_identity_open_opts(m, &bad, &id2), CN_E_AUTH);
    CN_CHECK_EQ(cn_identity_open_opts(m, &same, &id2), 0);
    cn_identity_close(id2);
    id2 = NULL;
    CN_CHECK_EQ(cn_identity_open_opts(m, &bad, &id2), CN_E_AUTH);

    cn_identity_close(id);
    cn_meta_close(m);
    cn_test_rmtree(dir);
    cn_test_rmtree(other);
    free(dir);
    free(other);
    free(fleet);
    free(wrong);
}

/* Rotating the key (docs/identity.md, "Rotating the identity key"): a
 * handle with the new key and the old one as previous opens tokens sealed
 * under either and is accepted while the old value is recorded; the
 * rotation re-seals (counting a row neither key opens, left as it is),
 * records the new value, and runs again with nothing to do; then the new key
 * alone reads every token and the old one alone is refused.  A rotation
 * whose old key is not the recorded one's is refused. */
static void test_key_rotation(void)
{
    char *dir = cn_test_tmpdir("test-identity");
    char *oldk = key_file_new(dir, "old.key"), *newk = key_file_new(dir, "new.key");
    char *other = key_file_new(dir, "other.key");
    cn_meta_t *m = NULL;
    cn_identity_t *id = NULL;
    char c1[CN_CREDENTIAL_MAX], c2[CN_CREDENTIAL_MAX];
    cn_principal_t p;
    CN_CHECK_EQ(cn_meta_open(cn_test_meta_for(dir), NULL, &m), 0);
    cn_identity_opts_t o_old = { .key_file = oldk };
    CN_CHECK_EQ(cn_identity_open_opts(m, &o_old, &id), 0);
    CN_CHECK_EQ(cn_identity_account_create(id, "rot", NULL, NULL), 0);
    CN_CHECK_EQ(cn_identity_token_create(id, "rot", CN_PERM_OBJECT_GET, 0, c1), 0);
    cn_identity_close(id);
    id = NULL;

    const char *const prev[] = { oldk, NULL };
    cn_identity_opts_t o_ring = { .key_file = newk, .prev_files = prev };
    cn_identity_opts_t o_new = { .key_file = newk };
    CN_CHECK_EQ(cn_identity_open_opts(m, &o_new, &id), CN_E_AUTH); /* old recorded */
    CN_CHECK_EQ(cn_identity_open_opts(m, &o_ring, &id), 0);
    CN_CHECK_EQ(auth(id, c1, &p), 0);
    CN_CHECK_EQ(cn_identity_token_create(id, "rot", CN_PERM_OBJECT_GET, 0, c2), 0);
    cn_identity_close(id);
    id = NULL;

    cn_meta_txn_t *t = NULL;
    char box[2 * 45 + 1];
    memset(box, '0', sizeof box - 1);
    box[1] = '1'; /* version 1, all zero: opens under no key */
    box[sizeof box - 1] = '\0';
    CN_CHECK_EQ(cn_meta_begin(m, CN_META_WRITE, &t), 0);
    CN_CHECK(cn_meta_execf(t,
                           "INSERT INTO cn_tokens (id, account_id, secret_box, perms, created_at)"
                           " SELECT '0000', id, ?, 0, 0 FROM cn_accounts WHERE name = 'rot'",
                           "s", box) >= 0);
    CN_CHECK_EQ(cn_meta_commit(t), 0);

    cn_identity_rotation_t r;
    CN_CHECK_EQ(cn_identity_rotate_key(m, newk, newk, 2, NULL, NULL, &r), CN_E_INVALID);
    CN_CHECK_EQ(cn_identity_rotate_key(m, newk, other, 2, NULL, NULL, &r), CN_E_AUTH);
    CN_CHECK_EQ(cn_identity_rotate_key(m, newk, oldk, 2, NULL, NULL, &r), 0);
    CN_CHECK(r.scanned == 3 && r.resealed == 1 && r.current == 1 && r.unreadable == 1);
    CN_CHECK(r.recorded);
    CN_CHECK_EQ(cn_identity_rotate_key(m, newk, oldk, 1, NULL, NULL, &r), 0);
    CN_CHECK(r.scanned == 3 && r.resealed == 0 && r.current == 2);

    CN_CHECK_EQ(cn_identity_open_opts(m, &o_old, &id), CN_E_AUTH);
    CN_CHECK_EQ(cn_identity_open_opts(m, &o_new, &id), 0);
    CN_CHECK_EQ(auth(id, c1, &p), 0);
    CN_CHECK_EQ(auth(id, c2, &p), 0);
    cn_identity_close(id);
    cn_meta_close(m);
    cn_test_rmtree(dir);
    free(dir);
    free(oldk);
    free(newk);
    free(other);
}

/* DATA/identity.gen's word, mapped as every process on the data dir maps it. */
static _Atomic uint64_t *gen_map(const char *dir, int *fd)
{
    char path[512];
    snprintf(path, sizeof path, "%s/identity.gen", dir);
    *fd = open(path, O_RDWR);
    CN_CHECK(*fd >= 0);
    void *m = *fd >= 0 ? mmap(NULL, 8, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0) : MAP_FAILED;
    CN_CHECK(m != MAP_FAILED);
    return m == MAP_FAILED ? NULL : m;
}

/* The write-generation's rules (src/identity/gen.c): a write moves the word;
 * nothing is cached while a writer is in flight (one that died, here); the
 * next process alone with the file zeroes it. */
static void test_generation(void)
{
    unsetenv("CAIRN_ADMIN_TOKEN");
    fx_t f;
    fx_open(&f, NULL);
    int fd;
    _Atomic uint64_t *w = gen_map(f.dir, &fd);
    if (!w)
        return;
    CN_CHECK_EQ(atomic_load(w), 0);
    CN_CHECK_EQ(cn_identity_account_create(f.id, "alice", NULL, NULL), 0);
    CN_CHECK_EQ(atomic_load(w), UINT64_C(1) << 32); /* one write, none in flight */
    char cred[CN_CREDENTIAL_MAX], tid[CN_TOKEN_ID_MAX + 1];
    CN_CHECK_EQ(cn_identity_token_create(f.id, "alice", CN_PERM_OBJECT_GET, 0, cred), 0);
    snprintf(tid, sizeof tid, "%.*s", (int)(strchr(cred, ':') - cred), cred);
    CN_CHECK_EQ(atomic_load(w), UINT64_C(2) << 32);
    cn_identity_set_cache_ttl(f.id, 60000);
    uint8_t sec[CN_SECRET_MAX];
    size_t slen = 0;
    CN_CHECK_EQ(cn_identity_lookup_secret(f.id, tid, sec, sizeof sec, &slen, NULL), 0);
    CN_CHECK_EQ(cn_identity_lookup_secret_cached(f.id, tid, sec, sizeof sec, &slen, NULL), 0);

    /* A writer that entered and died: lookups read the database, and what
     * they read is never filed. */
    atomic_fetch_add(w, 1);
    CN_CHECK_EQ(cn_identity_lookup_secret_cached(f.id, tid, sec, sizeof sec, &slen, NULL),
                CN_E_AGAIN);
    cn_principal_t p;
    CN_CHECK_EQ(auth(f.id, cred, &p), 0);
    CN_CHECK_EQ(cn_identity_lookup_secret_cached(f.id, tid, sec, sizeof sec, &slen, NULL),
                CN_E_AGAIN);
    munmap((void *)w, 8);
    close(fd);

    /* Alone with the file again, the next opener starts from zero. */
    char *dir = strdup(f.dir);
    fx_close(&f, false);
    fx_open(&f, dir);
    free(dir);
    w = gen_map(f.dir, &fd);
    if (w) {
        CN_CHECK_EQ(atomic_load(w), 0);
        CN_CHECK_EQ(auth(f.id, cred, &p), 0);
        CN_CHECK_EQ(cn_identity_lookup_secret_cached(f.id, tid, sec, sizeof sec, &slen, NULL), 0);
        munmap((void *)w, 8);
        close(fd);
    }
    fx_close(&f, true);
}

CN_TEST_MAIN(CN_TEST(test_perms), CN_TEST(test_bootstrap_file), CN_TEST(test_bootstrap_env),
             CN_TEST(test_authenticate), CN_TEST(test_lists_and_grants), CN_TEST(test_rate_limit),
             CN_TEST(test_bad_key_file), CN_TEST(test_generation), CN_TEST(test_key_check),
             CN_TEST(test_key_rotation), )
