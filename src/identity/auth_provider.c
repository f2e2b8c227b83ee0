/* The Scribe protocol-4 listener's view of the auth service
 * (cairn/scribe_auth.h): resolve an access certificate to a principal,
 * authorize it on repositories.  The in-process provider calls
 * cn_sau2_handle directly, as the local storage server "cairnd-local" with a
 * server credential of its own, and reads the answer through the same
 * encoded reply the listener would send, so the remote provider only swaps
 * the transport.  Every answer passes the rollback check before it is used.
 *
 * Never: trust a certificate that does not chain to the access CA; reuse an
 * identity confirmation past its lease or the configured cache time. */
#include "auth_int.h"

#include "cairn/scribe_auth.h"
#include "cairn/util.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOCAL_SERVER "cairnd-local"
#define LOCAL_CRED_LIFE_MS (365LL * 86400000LL)
#define LOCAL_CRED_RENEW_MS 86400000LL /* renewed within a day of its expiry */
#define CACHE_SLOTS 64
#define CACHE_MS_MAX 30000
#define DELEGATE_REFUSAL "delegate may not act for users in this namespace" /* sau2.md 5.2 */

typedef struct idc {
    char credential[CN_SAU2_CRED_HEX + 1], key_id[CN_SAU2_KEY_HEX + 1];
    /* a delegated confirmation is another entry than the direct one */
    char dcredential[CN_SAU2_CRED_HEX + 1], dkey_id[CN_SAU2_KEY_HEX + 1];
    char account[65], daccount[65];
    int64_t until_ms; /* wall ms; 0 = empty */
} idc_t;

struct cn_scribe_auth {
    cn_meta_t *meta;
    /* The transport: the in-process service (auth, as self), or a remote
     * one (call on ctx, freed by ctx_free). */
    cn_auth_t *auth;
    cn_sau2_caller_t self; /* this server's credential (in process) */
    cn_scribe_auth_call_fn remote;
    void *ctx;
    void (*ctx_free)(void *);
    char ns[65];
    char *access_ca; /* PEM */
    size_t access_ca_len;
    int64_t cache_ms;
    pthread_mutex_t mu; /* guards cache and the last mark below */
    idc_t cache[CACHE_SLOTS];
    uint8_t seen_inc[CN_SAU2_ID_LEN]; /* the last (incarnation, revision) made durable */
    uint64_t seen_rev;
};

/* The rollback check, skipped when this exact mark was already made durable
 * (its write transaction would change nothing). */
static cn_err_t rollback(cn_scribe_auth_t *a, const cn_sau2_reply_view_t *v)
{
    pthread_mutex_lock(&a->mu);
    bool same = a->seen_rev == v->revision && !memcmp(a->seen_inc, v->incarnation, CN_SAU2_ID_LEN);
    pthread_mutex_unlock(&a->mu);
    if (same)
        return 0;
    CN_TRY(cn_auth_rollback_check(a->meta, v->incarnation, v->revision));
    pthread_mutex_lock(&a->mu);
    memcpy(a->seen_inc, v->incarnation, CN_SAU2_ID_LEN);
    a->seen_rev = v->revision;
    pthread_mutex_unlock(&a->mu);
    return 0;
}

/* ---- the transport: one request, its decoded reply ----------------------------------- */
/* Sends argv (argc strings, NUL-terminated) and decodes the answer into *v,
 * borrowing *payload (the caller frees it).  A success reply has passed
 * the rollback check.  CN_E_CONFLICT: a lower revision. */
static cn_err_t call(cn_scribe_auth_t *a, bool as_server, const char *const *argv, uint16_t argc,
                     cn_buf_t *payload, cn_sau2_reply_view_t *v)
{
    cn_sau2_req_t req;
    memset(&req, 0, sizeof req);
    if (argc == 0 || argc > CN_SAU2_MAX_STRINGS)
        return CN_E_INVALID;
    req.argc = argc;
    for (uint16_t i = 0; i < argc; i++) {
        size_t n = strlen(argv[i]);
        if (n > CN_SAU2_MAX_STRING)
            return CN_E_INVALID;
        req.argv[i] = (cn_sau2_str_t){ (const uint8_t *)argv[i], (uint16_t)n };
    }
    cn_err_t e;
    if (a->remote) {
        e = a->remote(a->ctx, &req, payload, v);
    } else {
        cn_sau2_caller_t none = { 0 };
        cn_sau2_reply_t r = { 0 };
        e = cn_sau2_handle(a->auth, as_server ? &a->self : &none, &req, &r);
        cn_buf_reset(payload);
        if (e == 0)
            e = cn_sau2_enc_reply(payload, &r);
        cn_sau2_reply_free(&r);
        if (e == 0)
            e = cn_sau2_dec_reply(payload->data + CN_SAU2_HDR_LEN, payload->len - CN_SAU2_HDR_LEN,
                                  v);
    }
    if (e == 0 && v->code == 0)
        e = rollback(a, v);
    return e;
}

/* Whether auth still answers this server: public-policy needs nothing but a
 * live server credential of an enabled server in the namespace. */
static bool server_standing(cn_scribe_auth_t *a)
{
    const char *argv[] = { "public-policy", a->ns, "namespace.probe" };
    cn_buf_t payload = { 0 };
    cn_sau2_reply_view_t v;
    cn_err_t e = call(a, true, argv, 3, &payload, &v);
    bool ok = e == 0 && v.code == 0;
    if (e == 0 && v.code)
        cn_warn("auth", "auth refuses this storage server (code %u): %.*s", v.code,
                (int)v.message.len, (const char *)v.message.p);
    cn_buf_free(&payload);
    return ok;
}

/* A service refusal as an error: unauthenticated -> CN_E_AUTH (why) when it
 * is the subject's (the server itself still stands), a delegate refusal ->
 * CN_E_DENIED, anything else -> CN_E_UNSUPPORTED (auth_unavailable: the
 * service cannot answer this server: its credential revoked, the server
 * disabled, the namespace not its own). */
static cn_err_t refusal(cn_scribe_auth_t *a, const cn_sau2_reply_view_t *v, char *why, size_t cap)
{
    if (why && cap)
        snprintf(why, cap, "%.*s", (int)v->message.len, (const char *)v->message.p);
    if (v->code == CN__AU_UNAUTHENTICATED && server_standing(a))
        return CN_E_AUTH;
    if (v->code == CN__AU_FORBIDDEN && v->message.len == strlen(DELEGATE_REFUSAL) &&
        !memcmp(v->message.p, DELEGATE_REFUSAL, v->message.len))
        return CN_E_DENIED;
    if (v->code != CN__AU_UNAUTHENTICATED)
        cn_warn("auth", "auth refused this storage server (code %u): %.*s", v->code,
                (int)v->message.len, (const char *)v->message.p);
    return CN_E_UNSUPPORTED;
}

static int role_parse(const cn_sau2_str_t *s)
{
    static const char *const names[] = { "", "reader", "writer", "maintainer", "namespace-admin" };
    for (int i = CN_SCRIBE_ROLE_READER; i <= CN_SCRIBE_ROLE_ADMIN; i++)
        if (s->len == strlen(names[i]) && !memcmp(s->p, names[i], s->len))
            return i;
    return CN_SCRIBE_ROLE_NONE;
}

/* A decimal ms string; -1 when it is not one. */
static int64_t ms_parse(const cn_sau2_str_t *s)
{
    int64_t v = 0;
    if (s->len == 0 || s->len > 18)
        return -1;
    for (size_t i = 0; i < s->len; i++) {
        if (s->p[i] < '0' || s->p[i] > '9')
            return -1;
        v = v * 10 + (s->p[i] - '0');
    }
    return v;
}

/* ---- the local server identity --------------------------------------------------------- */
typedef struct boot {
    cn_scribe_auth_t *a;
    cn_err_t why; /* CN_E_INVALID: another namespace */
    char server_id[CN__AU_NAME_MAX + 1];
} boot_t;

/* The server row "cairnd-local": made for ns when absent. */
static cn_err_t boot_server(cn_meta_txn_t *t, boot_t *b, bool *changed)
{
    cn_meta_stmt_t *st = NULL;
    cn_err_t e = cn_meta_queryf(t, &st, cn__sql_au[CN_SQL_AU_SERVER_BY_NAME], "s", LOCAL_SERVER);
    if (e == 0)
        e = cn_meta_step(st);
    bool found = e == CN_META_ROW;
    if (found) {
        snprintf(b->server_id, sizeof b->server_id, "%s", cn_meta_column_text(st, 0, NULL));
        if (strcmp(cn_meta_column_text(st, 1, NULL), b->a->ns) != 0)
            b->why = CN_E_INVALID;
    }
    cn_meta_finish(st);
    if (e < 0 || found)
        return e < 0 ? e : 0;
    snprintf(b->server_id, sizeof b->server_id, "%s", LOCAL_SERVER);
    *changed = true;
    return cn_meta_execf(t, cn__sql_au[CN_SQL_AU_SERVER_INSERT], "sss", LOCAL_SERVER, LOCAL_SERVER,
                         b->a->ns);
}

/* A live server credential of the local server, renewed well before its
 * expiry: the first one listed that is neither revoked nor close to it. */
static cn_err_t boot_find(cn_meta_txn_t *t, boot_t *b, bool *found)
{
    cn_meta_stmt_t *st = NULL;
    int64_t now = cn_wall_ms();
    *found = false;
    cn_err_t e =
        cn_meta_queryf(t, &st, cn__sql_au[CN_SQL_AU_CRED_LIST_USER], "ss", "", b->server_id);
    while (e == 0 && (e = cn_meta_step(st)) == CN_META_ROW) {
        if (strcmp(cn_meta_column_text(st, 1, NULL), "server") != 0 ||
            cn_meta_column_int64(st, 9) != 0 ||
            cn_meta_column_int64(st, 7) < now + LOCAL_CRED_RENEW_MS)
            continue;
        snprintf(b->a->self.credential, sizeof b->a->self.credential, "%s",
                 cn_meta_column_text(st, 0, NULL));
        snprintf(b->a->self.key_id, sizeof b->a->self.key_id, "%s",
                 cn_meta_column_text(st, 3, NULL));
        *found = true;
        break;
    }
    cn_meta_finish(st);
    return e < 0 ? e : 0;
}

/* Issues a new server credential for a fresh key.  The private key is not
 * kept: in-process calls name the credential, they never present it. */
static cn_err_t boot_issue(cn_meta_txn_t *t, boot_t *b)
{
    EVP_PKEY *k = NULL;
    EVP_PKEY *pub = NULL;
    uint8_t *der = NULL, id[16];
    char cred[CN_SAU2_CRED_HEX + 1];
    cn_sau2_reply_t r = { 0 };
    CN_TRY(cn__au_keygen(false, &k));
    int n = i2d_PUBKEY(k, &der);
    char *hex = n > 0 ? malloc((size_t)n * 2 + 1) : NULL;
    cn_err_t e = hex ? cn_random_bytes(id, sizeof id) : -ENOMEM;
    if (e == 0) {
        cn_hex_encode(der, (size_t)n, hex);
        cn_hex_encode(id, sizeof id, cred);
        e = cn__au_pubkey_parse((const uint8_t *)hex, (size_t)n * 2, &pub, b->a->self.key_id);
    }
    cn__au_issue_t in = { .kind = "server",
                          .account_name = LOCAL_SERVER,
                          .account_id = b->server_id,
                          .credential = cred,
                          .label = "cairnd --scribe-tls (in-process)",
                          .parent = NULL,
                          .public_key = { (const uint8_t *)hex, (uint16_t)(n * 2) },
                          .expires_ms = cn_wall_ms() + LOCAL_CRED_LIFE_MS };
    if (e == 0)
        e = cn__au_issue(b->a->auth, t, &in, &r);
    if (e == 0 && r.code)
        e = CN_E_CONFLICT;
    if (e == 0)
        memcpy(b->a->self.credential, cred, sizeof cred);
    cn_sau2_reply_free(&r);
    OPENSSL_free(der);
    free(hex);
    EVP_PKEY_free(pub);
    EVP_PKEY_free(k);
    return e;
}

static cn_err_t boot_body(cn_meta_txn_t *t, void *arg)
{
    boot_t *b = arg;
    bool changed = false, found = false;
    b->why = 0; /* a repeated attempt decides afresh */
    b->server_id[0] = '\0';
    CN_TRY(boot_server(t, b, &changed));
    if (b->why)
        return 0;
    CN_TRY(boot_find(t, b, &found));
    if (!found) {
        CN_TRY(boot_issue(t, b));
        changed = true;
    }
    /* Administrative changes: the revision advances, as for servers-add
     * and credentials-add. */
    return changed ? cn_meta_execf(t, cn__sql_au[CN_SQL_AU_REVISION_BUMP], "") : 0;
}

/* The access CA, from trust-bundle: the certificates presented must chain
 * to it alone. */
static cn_err_t load_access_ca(cn_scribe_auth_t *a)
{
    const char *argv[] = { "trust-bundle" };
    cn_buf_t payload = { 0 };
    cn_sau2_reply_view_t v;
    cn_err_t e = call(a, false, argv, 1, &payload, &v);
    size_t off = 0;
    cn_sau2_row_t row;
    while (e == 0 && v.code == 0 && cn_sau2_row_next(&v, &off, &row)) {
        if (row.n != 2 || row.s[0].len != 9 || memcmp(row.s[0].p, "access-ca", 9) != 0)
            continue;
        a->access_ca = malloc(row.s[1].len + 1u);
        if (!a->access_ca) {
            e = -ENOMEM;
            break;
        }
        memcpy(a->access_ca, row.s[1].p, row.s[1].len);
        a->access_ca[row.s[1].len] = '\0';
        a->access_ca_len = row.s[1].len;
    }
    if (e == 0 && !a->access_ca)
        e = CN_E_NOT_FOUND;
    cn_buf_free(&payload);
    return e;
}

static bool ns_ok(const char *ns)
{
    size_t n = strlen(ns);
    if (n == 0 || n > 64)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((ns[i] >= 'a' && ns[i] <= 'z') || (ns[i] >= '0' && ns[i] <= '9') ||
              strchr("._-", ns[i])))
            return false;
    return true;
}

/* The namespace must be the calling server's (and the server live):
 * checked once at start rather than answered as every caller's refusal
 * later. */
static cn_err_t ns_check(cn_scribe_auth_t *a)
{
    if (server_standing(a))
        return 0;
    cn_error("auth",
             "auth does not answer this server for namespace %s (unreachable, or "
             "refusing its credential or that namespace)",
             a->ns);
    return CN_E_INVALID;
}

/* The common part of both providers; *out freed by cn_scribe_auth_free. */
static cn_err_t provider_new(cn_meta_t *meta, const char *ns, int64_t cache_ms,
                             cn_scribe_auth_t **out)
{
    *out = NULL;
    if (!ns || !ns_ok(ns) || cache_ms < 0)
        return CN_E_INVALID;
    cn_scribe_auth_t *a = calloc(1, sizeof *a);
    if (!a)
        return -ENOMEM;
    a->meta = meta;
    snprintf(a->ns, sizeof a->ns, "%s", ns);
    a->cache_ms = cache_ms == 0 || cache_ms > CACHE_MS_MAX ? CACHE_MS_MAX : cache_ms;
    a->self.present = true;
    pthread_mutex_init(&a->mu, NULL);
    *out = a;
    return cn_auth_rollback_prepare(meta);
}

/* Trust and namespace, then the provider is the caller's. */
static cn_err_t provider_ready(cn_scribe_auth_t *a, cn_err_t e, cn_scribe_auth_t **out)
{
    if (e == 0)
        e = load_access_ca(a);
    if (e == 0)
        e = ns_check(a);
    if (e < 0) {
        cn_scribe_auth_free(a);
        *out = NULL;
        return e;
    }
    *out = a;
    return CN_OK;
}

cn_err_t cn_scribe_auth_local(cn_meta_t *meta, const char *data_dir, const char *ns,
                              int64_t cache_ms, cn_scribe_auth_t **out)
{
    cn_scribe_auth_t *a = NULL;
    cn_err_t e = provider_new(meta, ns, cache_ms, &a);
    if (!a)
        return e;
    boot_t b = { .a = a };
    if (e == 0)
        e = cn_auth_open(meta, data_dir, NULL, &a->auth);
    if (e == 0)
        e = cn_meta_run(meta, CN_META_RUN_WRITE | CN_META_RETRY, boot_body, &b);
    if (e == 0 && b.why) {
        cn_error("auth", "the auth server %s already serves another namespace than %s",
                 LOCAL_SERVER, ns);
        e = b.why;
    }
    return provider_ready(a, e, out);
}

cn_err_t cn_scribe_auth_remote(cn_meta_t *meta, const char *ns, int64_t cache_ms,
                               cn_scribe_auth_call_fn fn, void *ctx, void (*ctx_free)(void *),
                               cn_scribe_auth_t **out)
{
    cn_scribe_auth_t *a = NULL;
    cn_err_t e = provider_new(meta, ns, cache_ms, &a);
    if (!a) {
        if (ctx_free)
            ctx_free(ctx);
        return e;
    }
    a->remote = fn;
    a->ctx = ctx;
    a->ctx_free = ctx_free;
    return provider_ready(a, e, out);
}

void cn_scribe_auth_free(cn_scribe_auth_t *a)
{
    if (!a)
        return;
    cn_auth_close(a->auth);
    if (a->ctx_free)
        a->ctx_free(a->ctx);
    free(a->access_ca);
    pthread_mutex_destroy(&a->mu);
    free(a);
}

const char *cn_scribe_auth_namespace(const cn_scribe_auth_t *a)
{
    return a->ns;
}

/* ---- resolve ---------------------------------------------------------------------------- */
static bool same_subject(const idc_t *c, const cn_scribe_principal_t *p)
{
    return !strcmp(c->credential, p->credential) && !strcmp(c->key_id, p->key_id) &&
           !strcmp(c->dcredential, p->delegate_credential) &&
           !strcmp(c->dkey_id, p->delegate_key_id);
}

static bool cache_get(cn_scribe_auth_t *a, cn_scribe_principal_t *p)
{
    int64_t now = cn_wall_ms();
    bool hit = false;
    pthread_mutex_lock(&a->mu);
    for (int i = 0; i < CACHE_SLOTS && !hit; i++) {
        idc_t *c = &a->cache[i];
        if (c->until_ms > now && same_subject(c, p)) {
            snprintf(p->account, sizeof p->account, "%s", c->account);
            snprintf(p->delegate_account, sizeof p->delegate_account, "%s", c->daccount);
            hit = true;
        }
    }
    pthread_mutex_unlock(&a->mu);
    return hit;
}

/* Keeps a confirmation until min(lease, now + cache_ms), in the slot of the
 * same subject, else an expired one, else the one that ends first. */
static void cache_put(cn_scribe_auth_t *a, const cn_scribe_principal_t *p, int64_t lease)
{
    int64_t now = cn_wall_ms(), until = now + a->cache_ms;
    if (lease < until)
        until = lease;
    pthread_mutex_lock(&a->mu);
    idc_t *slot = &a->cache[0];
    for (int i = 0; i < CACHE_SLOTS; i++) {
        idc_t *c = &a->cache[i];
        if (same_subject(c, p)) {
            slot = c;
            break;
        }
        if (c->until_ms < slot->until_ms)
            slot = c;
    }
    snprintf(slot->credential, sizeof slot->credential, "%s", p->credential);
    snprintf(slot->key_id, sizeof slot->key_id, "%s", p->key_id);
    snprintf(slot->dcredential, sizeof slot->dcredential, "%s", p->delegate_credential);
    snprintf(slot->dkey_id, sizeof slot->dkey_id, "%s", p->delegate_key_id);
    snprintf(slot->account, sizeof slot->account, "%s", p->account);
    snprintf(slot->daccount, sizeof slot->daccount, "%s", p->delegate_account);
    slot->until_ms = until;
    pthread_mutex_unlock(&a->mu);
}

/* The account an access certificate's subject CN names (auth's access CA
 * writes it from the account: auth_ca.c), into out (cap bytes); "" when
 * there is none.  Read from a certificate already verified. */
static void cert_account(const char *pem, size_t len, char *out, size_t cap)
{
    BIO *b = len <= INT32_MAX ? BIO_new_mem_buf(pem, (int)len) : NULL;
    X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
    int n =
        x ? X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, out, (int)cap) : -1;
    if (n <= 0 || (size_t)n >= cap)
        out[0] = '\0';
    X509_free(x);
    BIO_free(b);
    ERR_clear_error();
}

cn_err_t cn_scribe_auth_check(cn_scribe_auth_t *a, const char *peer, size_t peer_len,
                              const char *cert, size_t cert_len, cn_scribe_principal_t *out,
                              char *why, size_t cap)
{
    memset(out, 0, sizeof *out);
    cn_sau2_caller_t g, u;
    int64_t now = cn_wall_ms();
    if (cn_auth_cert_check(a->access_ca, a->access_ca_len, peer, peer_len, now, &g) < 0) {
        snprintf(why, cap, "an access certificate is required");
        return CN_E_AUTH;
    }
    /* The access CA is this auth's own: a certificate of another trust
     * domain (another auth incarnation) never verifies against it. */
    if (cert && cn_auth_cert_check(a->access_ca, a->access_ca_len, cert, cert_len, now, &u) < 0) {
        snprintf(why, cap, "invalid delegated access certificate");
        return CN_E_AUTH;
    }
    const cn_sau2_caller_t *subject = cert ? &u : &g;
    out->present = true;
    memcpy(out->credential, subject->credential, sizeof out->credential);
    memcpy(out->key_id, subject->key_id, sizeof out->key_id);
    if (cert) {
        memcpy(out->delegate_credential, g.credential, sizeof out->delegate_credential);
        memcpy(out->delegate_key_id, g.key_id, sizeof out->delegate_key_id);
    }
    cert_account(cert ? cert : peer, cert ? cert_len : peer_len, out->account, sizeof out->account);
    return CN_OK;
}

/* authorize with an empty repository: the subject (and its delegate) live,
 * registered keys, accounts enabled, the delegate grant; reused from the
 * cache until min(lease, cache_ms). */
cn_err_t cn_scribe_auth_confirm(cn_scribe_auth_t *a, cn_scribe_principal_t *out, char *why,
                                size_t cap)
{
    if (cache_get(a, out))
        return CN_OK;
    const char *argv[] = { "authorize",         a->ns,       "",
                           out->credential,     out->key_id, out->delegate_credential,
                           out->delegate_key_id };
    cn_buf_t payload = { 0 };
    cn_sau2_reply_view_t v;
    cn_sau2_row_t row;
    size_t off = 0;
    cn_err_t e = call(a, true, argv, 7, &payload, &v);
    if (e == 0 && v.code)
        e = refusal(a, &v, why, cap);
    if (e == 0 && (!cn_sau2_row_next(&v, &off, &row) || row.n < 4 || ms_parse(&row.s[1]) < 0 ||
                   row.s[2].len == 0 || row.s[2].len >= sizeof out->account))
        e = CN_E_PROTOCOL;
    if (e == 0 && row.s[3].len >= sizeof out->delegate_account)
        e = CN_E_PROTOCOL;
    if (e == 0) {
        memcpy(out->account, row.s[2].p, row.s[2].len);
        out->account[row.s[2].len] = '\0';
        memcpy(out->delegate_account, row.s[3].p, row.s[3].len);
        out->delegate_account[row.s[3].len] = '\0';
        cache_put(a, out, ms_parse(&row.s[1]));
    }
    cn_buf_free(&payload);
    return e;
}

/* ---- authorize -------------------------------------------------------------------------- */
cn_err_t cn_scribe_auth_authorize_batch(cn_scribe_auth_t *a, const cn_scribe_principal_t *p,
                                        const char *const *repos, size_t n, int *roles,
                                        int64_t *lease_ms)
{
    if (n == 0 || n > CN_SCRIBE_AUTH_BATCH_MAX)
        return CN_E_INVALID;
    bool anon = !p || !p->present;
    const char *argv[CN_SAU2_MAX_STRINGS] = { "authorize-batch",
                                              a->ns,
                                              anon ? "" : p->credential,
                                              anon ? "" : p->key_id,
                                              anon ? "" : p->delegate_credential,
                                              anon ? "" : p->delegate_key_id };
    for (size_t i = 0; i < n; i++)
        argv[6 + i] = repos[i];
    cn_buf_t payload = { 0 };
    cn_sau2_reply_view_t v;
    cn_sau2_row_t row;
    size_t off = 0, i = 0;
    char why[256];
    cn_err_t e = call(a, true, argv, (uint16_t)(6 + n), &payload, &v);
    if (e == 0 && v.code)
        e = refusal(a, &v, why, sizeof why);
    while (e == 0 && i < n && cn_sau2_row_next(&v, &off, &row)) {
        if (row.n != 2 || row.s[0].len != strlen(repos[i]) ||
            memcmp(row.s[0].p, repos[i], row.s[0].len) != 0)
            e = CN_E_PROTOCOL;
        else
            roles[i++] = role_parse(&row.s[1]);
    }
    if (e == 0 && (i != n || !cn_sau2_row_next(&v, &off, &row) || row.n != 1 ||
                   (*lease_ms = ms_parse(&row.s[0])) < 0))
        e = CN_E_PROTOCOL;
    cn_buf_free(&payload);
    return e;
}

/* authorize for a subject: the role on repo ("" = identity only, role
 * none) and the inventory column (docs/protocol/sau2.md 5.2: the fifth; an
 * auth without it reports no namespace-readers grant). */
static cn_err_t authorize_one(cn_scribe_auth_t *a, const cn_scribe_principal_t *p, const char *repo,
                              int *role, bool *inventory, int64_t *lease_ms)
{
    const char *argv[] = { "authorize",       a->ns,     repo,
                           p->credential,     p->key_id, p->delegate_credential,
                           p->delegate_key_id };
    cn_buf_t payload = { 0 };
    cn_sau2_reply_view_t v;
    cn_sau2_row_t row;
    size_t off = 0;
    char why[256];
    cn_err_t e = call(a, true, argv, 7, &payload, &v);
    if (e == 0 && v.code)
        e = refusal(a, &v, why, sizeof why);
    if (e == 0 &&
        (!cn_sau2_row_next(&v, &off, &row) || row.n < 4 || (*lease_ms = ms_parse(&row.s[1])) < 0))
        e = CN_E_PROTOCOL;
    if (e == 0) {
        *role = role_parse(&row.s[0]);
        *inventory = row.n >= 5 && row.s[4].len == 1 && row.s[4].p[0] == '1';
    }
    cn_buf_free(&payload);
    return e;
}

cn_err_t cn_scribe_auth_authorize(cn_scribe_auth_t *a, const cn_scribe_principal_t *p,
                                  const char *repo, int *role, int64_t *lease_ms)
{
    /* authorize needs a subject; an anonymous caller asks through the batch. */
    if (!p || !p->present)
        return cn_scribe_auth_authorize_batch(a, p, &repo, 1, role, lease_ms);
    bool inventory;
    return authorize_one(a, p, repo, role, &inventory, lease_ms);
}

cn_err_t cn_scribe_auth_inventory(cn_scribe_auth_t *a, const cn_scribe_principal_t *p,
                                  bool *allowed, int64_t *lease_ms)
{
    *allowed = false;
    if (!p || !p->present)
        return 0; /* an anonymous caller reads no inventory */
    int role;
    return authorize_one(a, p, "", &role, allowed, lease_ms);
}
