/* The SAU2 verbs a credential uses for itself (docs/protocol/sau2.md section
 * 5.2): access-certificate (the access CA's one-hour certificate for the
 * caller's registered key), automation-create and automation-derive (new
 * credentials under the caller's account, replayed by operation id like the
 * sign-ins), and the verification of a certificate the service did not just
 * issue: signature against the right CA, issuer, validity, revocation.  It
 * must never issue for a key other than the one the state registered, nor
 * to a server credential, nor let a derived credential derive, nor accept
 * a certificate whose key is not the one its extension names. */
#include "auth_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/pem.h>

#include "cairn/crypto.h"
#include "cairn/util.h"

#define ACCESS_MS (3600LL * 1000)
#define AUTOMATION_MAX_MS (365LL * 24 * 3600 * 1000)

/* automation-create's roles and the kinds they make (section 7). */
static const char *const auto_roles[] = { "reader", "writer", "maintainer", "namespace-admin" };
static const char *const auto_kinds[] = { "automation", "automation-write", "automation-maintain",
                                          "automation-admin" };

static bool is_automation(const char *kind)
{
    for (size_t i = 0; i < 4; i++)
        if (!strcmp(kind, auto_kinds[i]))
            return true;
    return false;
}

/* ---- verifying a certificate --------------------------------------------------------- */

/* Whether the certificate's own public key is the key its cairn extension
 * names (key_id: BLAKE3 of the SubjectPublicKeyInfo DER, as registered):
 * the key the TLS handshake proved must be the one auth checks. */
static bool key_is_named(X509 *x, const char *key_id)
{
    uint8_t *der = NULL;
    int n = i2d_PUBKEY(X509_get0_pubkey(x), &der);
    char hex[CN_SAU2_KEY_HEX + 1] = "";
    if (n > 0) {
        cn_digest_t d;
        cn_blake3(der, (size_t)n, &d);
        cn_digest_hex(&d, hex);
    }
    OPENSSL_free(der);
    return n > 0 && !strcmp(hex, key_id);
}

cn_err_t cn__au_cert_check(X509 *ca, const char *pem, size_t len, int64_t now_ms,
                           cn_sau2_caller_t *out, const char **why)
{
    memset(out, 0, sizeof *out);
    *why = "not a PEM certificate";
    BIO *bio = len <= INT32_MAX ? BIO_new_mem_buf(pem, (int)len) : NULL;
    X509 *x = bio ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;
    BIO_free(bio);
    EVP_PKEY *cakey = x ? X509_get0_pubkey(ca) : NULL;
    time_t now = (time_t)(now_ms / 1000);
    cn_err_t e = CN_E_AUTH;
    if (!x || !cakey)
        goto out;
    *why = "the certificate is not signed by the expected CA";
    if (X509_NAME_cmp(X509_get_issuer_name(x), X509_get_subject_name(ca)) != 0 ||
        X509_verify(x, cakey) != 1)
        goto out;
    *why = "the certificate is expired or not yet valid";
    if (X509_cmp_time(X509_get0_notBefore(x), &now) > 0 ||
        X509_cmp_time(X509_get0_notAfter(x), &now) < 0)
        goto out;
    *why = "the certificate has no cairn credential extension";
    if (cn_auth_cert_caller(pem, len, out) != 0)
        goto out;
    *why = "the certificate's key is not the key it names";
    if (!key_is_named(x, out->key_id))
        goto out;
    *why = NULL;
    e = 0;
out:
    ERR_clear_error();
    X509_free(x);
    if (e < 0)
        memset(out, 0, sizeof *out);
    return e;
}

cn_err_t cn_auth_cert_check(const char *ca_pem, size_t ca_len, const char *pem, size_t len,
                            int64_t now_ms, cn_sau2_caller_t *out)
{
    const char *why;
    BIO *bio = ca_len <= INT32_MAX ? BIO_new_mem_buf(ca_pem, (int)ca_len) : NULL;
    X509 *ca = bio ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;
    BIO_free(bio);
    cn_err_t e = ca ? cn__au_cert_check(ca, pem, len, now_ms, out, &why) : CN_E_INVALID;
    X509_free(ca);
    ERR_clear_error();
    return e;
}

typedef struct live {
    const cn_sau2_caller_t *caller;
    cn_sau2_reply_t reply;
} live_t;

static cn_err_t live_body(cn_meta_txn_t *t, void *arg)
{
    live_t *l = arg;
    cn__au_cred_t cred;
    cn__au_reply_restart(&l->reply);
    CN_TRY(cn__au_caller_check(t, l->caller, &cred, &l->reply));
    if (l->reply.code)
        return 0;
    cn__au_account_t acct;
    CN_TRY(cn__au_account_get(t, cred.account, &acct));
    if (!acct.found || acct.disabled)
        cn_sau2_reply_error(&l->reply, CN__AU_UNAUTHENTICATED, "account disabled");
    return 0;
}

cn_err_t cn_auth_cert_verify(cn_auth_t *a, bool access, const char *pem, size_t len,
                             cn_sau2_caller_t *out, char *why, size_t cap)
{
    const char *w = NULL;
    X509 *ca = a->cert[access ? CN__AU_ACCESS_CA : CN__AU_CRED_CA];
    cn_err_t e = cn__au_cert_check(ca, pem, len, cn_wall_ms(), out, &w);
    live_t l = { .caller = out };
    if (e == 0)
        e = cn_meta_run(a->meta, CN_META_RUN_READ | CN_META_RETRY, live_body, &l);
    if (e == 0 && l.reply.code) {
        w = l.reply.message;
        e = CN_E_DENIED;
    }
    if (why)
        snprintf(why, cap, "%s", e == 0 ? "" : w ? w : cn_strerror(e));
    cn_sau2_reply_free(&l.reply);
    if (e < 0)
        memset(out, 0, sizeof *out);
    return e;
}

/* ---- the caller, live ------------------------------------------------------------------- */

typedef struct self_ctx {
    cn_auth_t *a;
    const cn_sau2_caller_t *caller;
    const cn_sau2_req_t *req;
    cn_sau2_reply_t *reply;
    cn__au_cred_t cred;
    cn__au_account_t acct;
    cn_digest_t intent;
} self_ctx_t;

/* A fresh reply (the body may run again), state, then the caller's
 * credential and its account (enabled). */
static cn_err_t self_live(self_ctx_t *c, cn_meta_txn_t *t)
{
    cn__au_reply_restart(c->reply);
    CN_TRY(cn__au_state_read(t, c->reply));
    CN_TRY(cn__au_caller_check(t, c->caller, &c->cred, c->reply));
    if (c->reply->code)
        return 0;
    CN_TRY(cn__au_account_get(t, c->cred.account, &c->acct));
    if (!c->acct.found || c->acct.disabled)
        return cn_sau2_reply_error(c->reply, CN__AU_UNAUTHENTICATED, "account disabled");
    return 0;
}

/* ---- access-certificate ------------------------------------------------------------------ */

static cn_err_t access_body(cn_meta_txn_t *t, void *arg)
{
    self_ctx_t *c = arg;
    CN_TRY(self_live(c, t));
    if (c->reply->code)
        return 0;
    /* A storage server's identity never calls storage (issue 21), so its
     * credential gets no access certificate to try. */
    if (!strcmp(c->cred.kind, "server"))
        return cn_sau2_reply_error(c->reply, CN__AU_FORBIDDEN,
                                   "a server credential gets no access certificate");
    cn_meta_stmt_t *st = NULL;
    EVP_PKEY *pub = NULL;
    X509 *x = NULL;
    cn_buf_t pem = { 0 };
    uint8_t serial[16] = { 0 };
    char exp[24];
    int64_t until = cn_wall_ms() + ACCESS_MS;
    if (until > c->cred.expires_ms)
        until = c->cred.expires_ms;
    cn_err_t e = cn_meta_queryf(t, &st, cn__sql_au[CN_SQL_AU_CRED_GET], "s", c->caller->credential);
    if (e == 0)
        e = cn_meta_step(st) == CN_META_ROW ? 0 : CN_E_CORRUPT;
    if (e == 0) {
        size_t n = 0;
        const unsigned char *der = cn_meta_column_blob(st, 4, &n);
        pub = der ? d2i_PUBKEY(NULL, &der, (long)n) : NULL;
        e = pub ? cn_random_bytes(serial, sizeof serial) : CN_E_CORRUPT;
    }
    serial[0] &= 0x7f; /* a positive INTEGER */
    cn__au_subject_t sub = { c->caller->credential, c->cred.kind, c->caller->key_id, c->acct.name,
                             c->a->domain };
    if (e == 0)
        e = cn__au_cert_make(pub, c->acct.name, c->a->cert[CN__AU_ACCESS_CA],
                             c->a->key[CN__AU_ACCESS_CA], serial, until, false, &sub, &x);
    if (e == 0)
        e = cn__au_cert_pem(x, &pem);
    snprintf(exp, sizeof exp, "%lld", (long long)until);
    const char *row[] = { (const char *)pem.data, exp };
    if (e == 0)
        e = cn_sau2_reply_row(c->reply, 2, row);
    cn_meta_finish(st);
    cn_buf_free(&pem);
    X509_free(x);
    EVP_PKEY_free(pub);
    return e;
}

/* ---- automation-create, automation-derive --------------------------------------------------- */

static cn_err_t automation_body(cn_meta_txn_t *t, void *arg)
{
    self_ctx_t *c = arg;
    bool derive = cn__au_verb_is(c->req, "automation-derive"), found, mismatch;
    CN_TRY(self_live(c, t));
    if (c->reply->code)
        return 0;
    /* Keyed by the caller's account, so another account's id never replays. */
    CN_TRY(cn__au_op_find(t, c->req->op, c->cred.account, &c->intent, c->reply, &found, &mismatch));
    if (mismatch)
        return cn_sau2_reply_error(c->reply, CN__AU_INTENT_MISMATCH,
                                   "operation id already used for another request");
    if (found)
        return 0;
    char role[24], exp[24], cred[CN_SAU2_CRED_HEX + 1], label[257];
    cn__au_issue_t in = { .account_name = c->acct.name,
                          .account_id = c->cred.account,
                          .credential = cred,
                          .label = label,
                          .with_kind = true };
    uint16_t k = derive ? 1 : 3; /* the credential argument */
    if (!cn__au_arg(c->req, k, cred, sizeof cred) ||
        !cn__au_arg(c->req, k + 2, label, sizeof label))
        return cn_sau2_reply_error(c->reply, CN__AU_MALFORMED, "credential or label malformed");
    in.public_key = c->req->argv[k + 1];
    if (derive) {
        if (!is_automation(c->cred.kind) || c->cred.derived)
            return cn_sau2_reply_error(c->reply, CN__AU_FORBIDDEN,
                                       "only an automation credential that is not derived may "
                                       "derive");
        in.kind = c->cred.kind;
        in.expires_ms = c->cred.expires_ms; /* the parent's: it never outlives it */
        in.parent = c->caller->credential;
    } else {
        if (strcmp(c->cred.kind, "session") != 0)
            return cn_sau2_reply_error(c->reply, CN__AU_FORBIDDEN,
                                       "automation-create needs a password session");
        int64_t now = cn_wall_ms();
        char *end = NULL;
        bool ok = cn__au_arg(c->req, 1, role, sizeof role) &&
                  cn__au_arg(c->req, 2, exp, sizeof exp) && exp[0] >= '0' && exp[0] <= '9';
        long long v = ok ? strtoll(exp, &end, 10) : 0;
        for (size_t i = 0; ok && i < 4 && !in.kind; i++)
            in.kind = strcmp(role, auto_roles[i]) ? NULL : auto_kinds[i];
        if (!ok || *end || !in.kind || v <= now || v > now + AUTOMATION_MAX_MS)
            return cn_sau2_reply_error(c->reply, CN__AU_MALFORMED,
                                       "role is reader, writer, maintainer or namespace-admin; "
                                       "expiry in the future, within one year");
        in.expires_ms = v;
    }
    CN_TRY(cn__au_issue(c->a, t, &in, c->reply));
    if (c->reply->code)
        return 0;
    return cn__au_op_record(t, c->req->op, c->cred.account, &c->intent, c->reply);
}

bool cn__au_access(cn_auth_t *a, const cn_sau2_caller_t *caller, const cn_sau2_req_t *req,
                   cn_sau2_reply_t *reply)
{
    static const uint8_t zero[CN_SAU2_ID_LEN];
    bool access = cn__au_verb_is(req, "access-certificate");
    bool create = cn__au_verb_is(req, "automation-create");
    bool derive = cn__au_verb_is(req, "automation-derive");
    if (!access && !create && !derive)
        return false;
    self_ctx_t c = { .a = a, .caller = caller, .req = req, .reply = reply };
    cn_err_t e = 0;
    if (access) {
        if (req->argc != 1)
            cn_sau2_reply_error(reply, CN__AU_MALFORMED, "takes no argument");
        else
            e = cn_meta_run(a->meta, CN_META_RUN_READ | CN_META_RETRY, access_body, &c);
    } else if (req->argc != (create ? 6 : 4) || !memcmp(req->op, zero, sizeof zero)) {
        cn_sau2_reply_error(reply, CN__AU_MALFORMED,
                            create ? "expected role expires-ms credential public-key label and "
                                     "an operation id"
                                   : "expected credential public-key label and an operation id");
    } else {
        e = cn_sau2_intent(req, 1, &c.intent);
        if (e == 0)
            e = cn_meta_run(a->meta, CN_META_RUN_WRITE | CN_META_RETRY, automation_body, &c);
        if (e == 0 && reply->code == 0)
            cn_info("auth", "%s by credential %s",
                    create ? "automation-create" : "automation-derive", caller->credential);
    }
    if (e < 0)
        cn__au_fail(reply, e);
    return true;
}
