/* The auth service's state: `auth init` (incarnation, CAs, the listener's
 * certificate, the first administrator), opening the service, and the
 * password hash (argon2id).  Durability: the private keys are published
 * (fsynced, renamed) before the transaction that records their
 * certificates commits, so a committed state always has its keys.  It must
 * never log or store a password, only its argon2id hash. */
#include "auth_int.h"

#include <argon2.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/pem.h>

#include "cairn/crypto.h"
#include "cairn/util.h"

#define CA_LIFETIME_MS (10LL * 366 * 24 * 3600 * 1000)
#define TLS_LIFETIME_MS (366LL * 24 * 3600 * 1000)
#define SALT_LEN 16
#define TAG_LEN 32

static void opts_apply(const cn_auth_opts_t *o, uint32_t *t, uint32_t *m)
{
    *t = o && o->argon2_t ? o->argon2_t : 3;
    *m = o && o->argon2_m_kib ? o->argon2_m_kib : 65536;
}

static cn_err_t hash_with(uint32_t t, uint32_t m, const uint8_t *pw, size_t len, char *out,
                          size_t cap)
{
    uint8_t salt[SALT_LEN];
    CN_TRY(cn_random_bytes(salt, sizeof salt));
    if (argon2_encodedlen(t, m, 1, SALT_LEN, TAG_LEN, Argon2_id) > cap)
        return CN_E_INVALID;
    int r = argon2id_hash_encoded(t, m, 1, pw, len, salt, SALT_LEN, TAG_LEN, out, cap);
    return r == ARGON2_OK ? 0 : r == ARGON2_MEMORY_ALLOCATION_ERROR ? -ENOMEM : CN_E_INVALID;
}

cn_err_t cn__au_hash_password(const cn_auth_t *a, const uint8_t *pw, size_t len, char *out,
                              size_t cap)
{
    return hash_with(a->argon2_t, a->argon2_m_kib, pw, len, out, cap);
}

cn_err_t cn__au_state_read(cn_meta_txn_t *t, cn_sau2_reply_t *reply)
{
    cn_meta_stmt_t *st = NULL;
    cn_err_t e = cn_meta_queryf(t, &st, cn__sql_au[CN_SQL_AU_STATE_GET], "");
    if (e == 0)
        e = cn_meta_step(st);
    if (e == CN_META_ROW) {
        size_t n = 0;
        const void *inc = cn_meta_column_blob(st, 0, &n);
        if (n == CN_SAU2_ID_LEN) {
            memcpy(reply->incarnation, inc, n);
            reply->revision = (uint64_t)cn_meta_column_int64(st, 1);
            e = 0;
        } else {
            e = CN_E_CORRUPT;
        }
    } else if (e == CN_META_DONE) {
        e = CN_E_NOT_FOUND;
    }
    cn_meta_finish(st);
    return e;
}

/* ---- init ---------------------------------------------------------------------- */

/* CN_E_EXISTS when the state row exists (checked before any key is written,
 * so a second init never replaces the keys of a live state). */
static cn_err_t absent_body(cn_meta_txn_t *t, void *arg)
{
    (void)arg;
    cn_sau2_reply_t probe;
    cn_err_t e = cn__au_state_read(t, &probe);
    return e == CN_E_NOT_FOUND ? 0 : e == 0 ? CN_E_EXISTS : e;
}

typedef struct init_ctx {
    const uint8_t *incarnation;
    const char *domain;
    cn_buf_t pem[CN__AU_NKEYS];
    const char *admin_hash;
    const char *admin_id;
} init_ctx_t;

static cn_err_t init_body(cn_meta_txn_t *t, void *arg)
{
    init_ctx_t *c = arg;
    CN_TRY(absent_body(t, NULL));
    int64_t now = cn_wall_ms();
    CN_TRY(cn_meta_execf(t, cn__sql_au[CN_SQL_AU_STATE_PUT], "biis", c->incarnation,
                         (size_t)CN_SAU2_ID_LEN, (int64_t)1, now, c->domain));
    for (int i = 0; i < CN__AU_NKEYS; i++)
        CN_TRY(cn_meta_execf(t, cn__sql_au[CN_SQL_AU_CA_PUT], "ss", cn__au_key_names[i],
                             (const char *)c->pem[i].data));
    CN_TRY(cn_meta_execf(t, cn__sql_au[CN_SQL_AU_USER_INSERT], "sssisi", c->admin_id, "admin",
                         "person", (int64_t)1, c->admin_hash, (int64_t)1));
    return cn_meta_execf(t, cn__sql_au[CN_SQL_AU_AUDIT_ADD], "isssii", now, "", "init", "admin",
                         (int64_t)0, (int64_t)1);
}

/* Makes the four keys and certificates (CAs self-signed, the listener's
 * signed by the server CA) and publishes the keys under data_dir/auth. */
static cn_err_t make_keys(const char *data_dir, const char *domain, EVP_PKEY *key[], X509 *cert[])
{
    int64_t now = cn_wall_ms();
    for (int i = 0; i < CN__AU_NKEYS; i++) {
        uint8_t serial[16];
        CN_TRY(cn_random_bytes(serial, sizeof serial));
        serial[0] &= 0x7f; /* a positive INTEGER */
        bool ec = i == CN__AU_SERVER_CA || i == CN__AU_SERVER_TLS;
        CN_TRY(cn__au_keygen(ec, &key[i]));
        bool tls = i == CN__AU_SERVER_TLS;
        char cn[96];
        snprintf(cn, sizeof cn, "cairn %s %.8s", cn__au_key_names[i], domain);
        CN_TRY(cn__au_cert_make(key[i], tls ? "localhost" : cn, tls ? cert[CN__AU_SERVER_CA] : NULL,
                                tls ? key[CN__AU_SERVER_CA] : key[i], serial,
                                now + (tls ? TLS_LIFETIME_MS : CA_LIFETIME_MS), !tls, NULL,
                                &cert[i]));
        CN_TRY(cn__au_key_save(data_dir, cn__au_key_names[i], key[i]));
    }
    return 0;
}

cn_err_t cn_auth_init(cn_meta_t *meta, const char *data_dir, const cn_auth_opts_t *opts,
                      const char *admin_password, char *pw_out, size_t cap)
{
    uint8_t inc[CN_SAU2_ID_LEN], uid[16];
    char domain[CN_SAU2_CRED_HEX + 1], admin_id[33], random_pw[33];
    char hash[256];
    uint32_t tc, mc;
    EVP_PKEY *key[CN__AU_NKEYS] = { 0 };
    X509 *cert[CN__AU_NKEYS] = { 0 };
    init_ctx_t c = {
        .incarnation = inc, .domain = domain, .admin_hash = hash, .admin_id = admin_id
    };
    opts_apply(opts, &tc, &mc);
    cn_err_t e = cn__sql_migrate(meta, &cn__sql_au_set);
    if (e == 0)
        e = cn_meta_run(meta, CN_META_RUN_READ | CN_META_RETRY, absent_body, NULL);
    if (e == 0 && !admin_password && (!pw_out || cap < sizeof random_pw))
        e = CN_E_INVALID;
    if (e == 0)
        e = cn_random_bytes(inc, sizeof inc);
    if (e == 0)
        e = cn_random_bytes(uid, sizeof uid);
    if (e == 0 && !admin_password) {
        uint8_t raw[16];
        e = cn_random_bytes(raw, sizeof raw);
        cn_hex_encode(raw, sizeof raw, random_pw);
        admin_password = random_pw;
    }
    if (e == 0) {
        cn_hex_encode(inc, sizeof inc, domain);
        cn_hex_encode(uid, sizeof uid, admin_id);
    }
    size_t pwlen = e == 0 ? strlen(admin_password) : 0;
    if (e == 0 && (pwlen < CN_SAU2_NEW_PASSWORD_MIN || pwlen > CN_SAU2_PASSWORD_MAX))
        e = CN_E_INVALID;
    if (e == 0)
        e = hash_with(tc, mc, (const uint8_t *)admin_password, pwlen, hash, sizeof hash);
    if (e == 0)
        e = make_keys(data_dir, domain, key, cert);
    for (int i = 0; i < CN__AU_NKEYS && e == 0; i++)
        e = cn__au_cert_pem(cert[i], &c.pem[i]);
    if (e == 0)
        e = cn_meta_run(meta, CN_META_RUN_WRITE | CN_META_RETRY, init_body, &c);
    if (e == 0 && admin_password == random_pw)
        memcpy(pw_out, random_pw, sizeof random_pw);
    OPENSSL_cleanse(random_pw, sizeof random_pw);
    for (int i = 0; i < CN__AU_NKEYS; i++) {
        cn_buf_free(&c.pem[i]);
        X509_free(cert[i]);
        EVP_PKEY_free(key[i]);
    }
    return e;
}

/* ---- open ---------------------------------------------------------------------- */

/* Reads the domain and the CA certificates into a; a repeated attempt
 * frees the certificates an earlier one read. */
static cn_err_t open_body(cn_meta_txn_t *t, void *arg)
{
    cn_auth_t *a = arg;
    cn_sau2_reply_t r;
    CN_TRY(cn__au_state_read(t, &r));
    cn_hex_encode(r.incarnation, CN_SAU2_ID_LEN, a->domain);
    for (int i = 0; i < CN__AU_NKEYS; i++) {
        cn_meta_stmt_t *st = NULL;
        cn_err_t e = cn_meta_queryf(t, &st, cn__sql_au[CN_SQL_AU_CA_GET], "s", cn__au_key_names[i]);
        if (e == 0)
            e = cn_meta_step(st);
        if (e == CN_META_ROW) {
            size_t n = 0;
            const char *pem = cn_meta_column_text(st, 0, &n);
            BIO *bio = BIO_new_mem_buf(pem, (int)n);
            X509_free(a->cert[i]);
            a->cert[i] = bio ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;
            BIO_free(bio);
            e = a->cert[i] ? 0 : CN_E_CORRUPT;
        } else if (e == CN_META_DONE) {
            e = CN_E_CORRUPT;
        }
        cn_meta_finish(st);
        CN_TRY(e);
    }
    return 0;
}

cn_err_t cn_auth_open(cn_meta_t *meta, const char *data_dir, const cn_auth_opts_t *opts,
                      cn_auth_t **out)
{
    cn_auth_t *a = calloc(1, sizeof *a);
    if (!a)
        return -ENOMEM;
    a->meta = meta;
    opts_apply(opts, &a->argon2_t, &a->argon2_m_kib);
    cn_err_t e = cn__sql_migrate(meta, &cn__sql_au_set);
    if (e == 0)
        e = cn_meta_run(meta, CN_META_RUN_READ | CN_META_RETRY, open_body, a);
    for (int i = 0; i < CN__AU_NKEYS && e == 0; i++)
        e = cn__au_key_load(data_dir, cn__au_key_names[i], &a->key[i]);
    if (e < 0) {
        cn_auth_close(a);
        return e;
    }
    *out = a;
    return 0;
}

void cn_auth_close(cn_auth_t *a)
{
    if (!a)
        return;
    for (int i = 0; i < CN__AU_NKEYS; i++) {
        X509_free(a->cert[i]);
        EVP_PKEY_free(a->key[i]);
    }
    free(a);
}
