/* identity: the schema, the handle, the token-state cache, authentication
 * and secret lookup.
 *
 * Cache: token states are cached (the secret opened once per fill), so a credential
 * check costs no database read in the common case.  A state is served only
 * while the data dir's identity write-generation (gen.c) holds the word it
 * was read under, which every change of a token, key, account or grant, in
 * any process on the data dir, moves before it is acknowledged: a revocation
 * is honoured by the next lookup.  ttl_ms bounds a state's age on top of
 * that (for writes made behind the service's back, such as by hand in the
 * database).  "No such token" is cached as well, so unknown ids cannot
 * hammer the database.
 *
 * On PostgreSQL, a state is also filed under the "identity" topic's
 * generation (cn_meta_topic_gen), which every node's identity writes bump
 * in their own transactions: another node's revocation, disabled account
 * or deleted token is honoured within CN_META_TOPIC_FRESH_MS (1.5 s), and
 * nothing is cached while this node's watcher cannot read the topics.
 *
 * This file must never serve a state filed under another word or topic
 * value, nor file one read under a word with a writer in flight, nor cache
 * while the topic's value is not usable.
 */
#include "identity_int.h"
#include "meta/sql/console.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "cairn/crypto.h"
#include "cairn/util.h"

/* The age bound only: changes made through the service are seen at once. */
#define DEFAULT_TTL_MS 60000

cn_err_t cn_identity_open(cn_meta_t *meta, const char *data_dir, cn_identity_t **out)
{
    if (!data_dir || !*data_dir)
        return CN_E_INVALID;
    const cn_identity_opts_t opts = { .data_dir = data_dir };
    return cn_identity_open_opts(meta, &opts, out);
}

/* The key: the named file, else DATA/identity.key (created when missing). */
static cn_err_t key_load(const cn_identity_opts_t *opts, uint8_t key[CN__ID_KEY_LEN])
{
    if (!opts->key_file)
        return cn__id_key_load(opts->data_dir, key);
    cn_err_t e = cn__id_key_load_file(opts->key_file, key);
    if (e == -ENOENT)
        cn_error("identity", "identity key %s: no such file", opts->key_file);
    else if (e < 0)
        cn_error("identity", "identity key %s: %s", opts->key_file, cn_strerror(e));
    return e;
}

cn_err_t cn_identity_open_opts(cn_meta_t *meta, const cn_identity_opts_t *opts, cn_identity_t **out)
{
    bool has_dir = opts && opts->data_dir && *opts->data_dir;
    if (!meta || !opts || (!has_dir && (!opts->key_file || !*opts->key_file)))
        return CN_E_INVALID;
    CN_TRY(cn__sql_migrate(meta, &cn__sql_id_set));
    /* disable and revoke delete console sessions (accounts.c): the table
     * exists wherever identity does, the console on or off */
    CN_TRY(cn__sql_migrate(meta, &cn__sql_console_set));
    CN_TRY(cn_meta_notify_init(meta));
    /* A handle with a data dir caches token states: on PostgreSQL it needs
     * the watcher (cn_meta_topic_gen), started here once per meta. */
    if (has_dir)
        CN_TRY(cn_meta_watch_start(meta));
    cn_identity_t *id = calloc(1, sizeof *id);
    if (!id)
        return -ENOMEM;
    id->meta = meta;
    id->gen_fd = -1;
    /* A process that could not bump the word would leave others' caches
     * stale: without it, identity does not open (unless it has no data dir
     * and so caches nothing). */
    cn_err_t e = key_load(opts, id->key);
    if (e >= 0)
        e = cn_random_bytes(id->tag_key, sizeof id->tag_key);
    if (e >= 0)
        e = cn__id_ring_load(id, opts);
    if (e >= 0 && has_dir)
        e = cn__id_gen_open(id, opts->data_dir);
    char name[4096];
    snprintf(name, sizeof name, "%s%s", opts->key_file ? opts->key_file : opts->data_dir,
             opts->key_file ? "" : "/identity.key");
    if (e >= 0)
        e = cn__id_key_check(id, name);
    if (e < 0) {
        cn__id_gen_close(id);
        OPENSSL_cleanse(id, sizeof *id);
        free(id);
        return e;
    }
    atomic_init(&id->ttl_ms, has_dir ? DEFAULT_TTL_MS : 0);
    pthread_rwlock_init(&id->cache_mu, NULL);
    cn__id_rate_init(id);
    *out = id;
    return 0;
}

void cn_identity_close(cn_identity_t *id)
{
    if (!id)
        return;
    cn__id_rate_destroy(id);
    cn__id_gen_close(id);
    pthread_rwlock_destroy(&id->cache_mu);
    OPENSSL_cleanse(id, sizeof *id);
    free(id);
}

void cn_identity_set_cache_ttl(cn_identity_t *id, unsigned ttl_ms)
{
    atomic_store(&id->ttl_ms, ttl_ms);
    cn__id_cache_clear(id);
}

void cn__id_col_copy(cn_meta_stmt_t *st, int col, char *out, size_t max)
{
    size_t n = 0;
    const char *s = cn_meta_column_text(st, col, &n);
    if (s && n <= max)
        memcpy(out, s, n);
}

void cn__id_cache_clear(cn_identity_t *id)
{
    pthread_rwlock_wrlock(&id->cache_mu);
    for (size_t i = 0; i < CN__ID_CACHE_SLOTS; i++)
        if (id->cache[i].used)
            OPENSSL_cleanse(&id->cache[i], sizeof id->cache[i]);
    pthread_rwlock_unlock(&id->cache_mu);
}

/* A token asked for, and its state as read: its sealed secret in box
 * (box_len 0 when none or unreadable: its stored text could not be
 * decoded). */
typedef struct token_read {
    const char *token_id;
    cn__tok_entry_t *e;
    bool unreadable;
    uint8_t box[CN__ID_BOX_MAX];
    size_t box_len;
} token_read_t;

static cn_err_t token_fetch_body(cn_meta_txn_t *t, void *ctx)
{
    token_read_t *tr = ctx;
    cn__tok_entry_t *e = tr->e;
    cn_meta_stmt_t *st = NULL;
    cn_err_t rc = cn_meta_queryf(t, &st, cn__sql_id[CN_SQL_ID_TOKEN_STATE], "s", tr->token_id);
    if (rc == 0)
        rc = cn_meta_step(st);
    memset(e, 0, sizeof *e);
    e->used = true;
    e->fetched_ms = cn_mono_ms();
    snprintf(e->p.token_id, sizeof e->p.token_id, "%s", tr->token_id);
    tr->unreadable = false;
    if (rc == CN_META_ROW) {
        size_t nlen = 0, hlen = 0;
        const char *name = cn_meta_column_text(st, 1, &nlen);
        const char *hex = cn_meta_column_text(st, 6, &hlen);
        e->found = true;
        e->p.account_id = cn_meta_column_int64(st, 0);
        if (name && nlen <= CN_ACCOUNT_NAME_MAX)
            memcpy(e->p.account, name, nlen);
        e->p.perms = (cn_perms_t)cn_meta_column_int64(st, 2) & CN_PERM_ALL;
        if (e->p.perms & CN_PERM_ADMIN)
            e->p.flags |= CN_PRINCIPAL_ADMIN;
        e->active = cn_meta_column_is_null(st, 3) && cn_meta_column_int64(st, 5) == 0;
        e->expires_at = cn_meta_column_int64(st, 4);
        /* Unusable, never an open door: box_len 0 rejects every secret. */
        tr->unreadable = !hex || cn__id_box_decode(hex, hlen, tr->box, &tr->box_len) < 0;
        if (tr->unreadable)
            tr->box_len = 0;
        rc = 0;
    }
    cn_meta_finish(st);
    return rc;
}

/* Reads token_id's state from the database into *e, its secret opened. */
static cn_err_t token_fetch(cn_identity_t *id, const char *token_id, cn__tok_entry_t *e)
{
    token_read_t tr = { .token_id = token_id, .e = e };
    cn_err_t rc = cn_meta_run(id->meta, CN_META_RUN_READ | CN_META_RETRY, token_fetch_body, &tr);
    if (rc >= 0 && tr.unreadable)
        cn_warn("identity", "token %s: stored secret is unreadable", token_id);
    if (rc >= 0 && tr.box_len &&
        cn__id_open_ring(id, token_id, tr.box, tr.box_len, e->secret, &e->secret_len) < 0) {
        cn_warn("identity", "token %s: stored secret does not decrypt with the identity key%s",
                token_id, id->n_prev ? " nor a previous one" : "");
        e->secret_len = 0;
    }
    /* Only a fetch that ran fills *e: a failed one (the database down) left
     * the caller's memory as it was. */
    if (rc >= 0 && e->secret_len && e->secret_len <= sizeof e->secret) {
        cn_digest_t d;
        cn_blake3_keyed(id->tag_key, e->secret, e->secret_len, &d);
        memcpy(e->tag, d.b, sizeof e->tag);
        OPENSSL_cleanse(&d, sizeof d);
    }
    OPENSSL_cleanse(&tr, sizeof tr);
    return rc;
}

/* Fills *e with token_id's current state: from the cache when it was filed
 * under the generation word that holds now (and is younger than the TTL);
 * when it was not and cached_only, CN_E_AGAIN without reading the database. */
static cn_err_t token_state(cn_identity_t *id, const char *token_id, cn__tok_entry_t *e,
                            bool cached_only)
{
    size_t slot = cn__id_hash(token_id) % CN__ID_CACHE_SLOTS;
    unsigned ttl = atomic_load(&id->ttl_ms);
    /* Both read before the read transaction below begins (gen.c, invariant
     * 2); the fleet's topic turns the cache off while its watcher is behind. */
    uint64_t fleet = 0;
    if (!cn_meta_topic_gen(id->meta, CN__ID_TOPIC, &fleet))
        ttl = 0;
    uint64_t stamp = cn__id_gen_load(id);
    int64_t now = cn_mono_ms();
    pthread_rwlock_rdlock(&id->cache_mu);
    const cn__tok_entry_t *c = &id->cache[slot];
    if (ttl && c->used && c->stamp == stamp && c->fleet == fleet &&
        now - c->fetched_ms < (int64_t)ttl && strcmp(c->p.token_id, token_id) == 0) {
        *e = *c;
        pthread_rwlock_unlock(&id->cache_mu);
        return 0;
    }
    pthread_rwlock_unlock(&id->cache_mu);
    if (cached_only)
        return CN_E_AGAIN;

    CN_TRY(token_fetch(id, token_id, e));
    e->stamp = stamp;
    e->fleet = fleet;
    if (ttl && cn__id_gen_quiet(stamp)) {
        pthread_rwlock_wrlock(&id->cache_mu);
        id->cache[slot] = *e;
        pthread_rwlock_unlock(&id->cache_mu);
    }
    return 0;
}

static bool usable(const cn__tok_entry_t *e)
{
    if (!e->found || !e->active || e->secret_len == 0)
        return false;
    return e->expires_at == 0 || e->expires_at > (int64_t)time(NULL);
}

cn_err_t cn_identity_authenticate(cn_identity_t *id, const char *cred, size_t len,
                                  cn_principal_t *out)
{
    if (!cred || len > CN_CREDENTIAL_MAX)
        return CN_E_AUTH;
    const char *colon = memchr(cred, ':', len);
    if (!colon)
        return CN_E_AUTH;
    size_t idlen = (size_t)(colon - cred);
    const char *secret = colon + 1;
    size_t slen = len - idlen - 1;
    if (!cn__id_valid_token_id(cred, idlen) || slen == 0 || slen > CN_SECRET_MAX)
        return CN_E_AUTH;
    char token_id[CN_TOKEN_ID_MAX + 1];
    memcpy(token_id, cred, idlen);
    token_id[idlen] = '\0';

    cn__tok_entry_t *e = malloc(sizeof *e);
    if (!e)
        return -ENOMEM;
    cn_err_t rc = token_state(id, token_id, e, false);
    if (rc < 0)
        goto out;
    rc = CN_E_AUTH;
    if (!usable(e))
        goto out;
    /* Compare digests so neither the content nor the length of the stored
     * secret shows in the timing. */
    uint8_t a[CN_DIGEST_LEN], b[CN_DIGEST_LEN];
    cn_sha256(e->secret, e->secret_len, a);
    cn_sha256(secret, slen, b);
    if (cn_ct_equal(a, b, sizeof a)) {
        *out = e->p;
        rc = 0;
    }
out:
    OPENSSL_cleanse(e, sizeof *e);
    free(e);
    return rc;
}

static cn_err_t lookup_secret(cn_identity_t *id, const char *token_id, uint8_t *secret, size_t cap,
                              size_t *len, uint8_t *tag, cn_principal_t *out, bool cached_only)
{
    if (!token_id || !cn__id_valid_token_id(token_id, strlen(token_id)))
        return CN_E_AUTH;
    cn__tok_entry_t *e = malloc(sizeof *e);
    if (!e)
        return -ENOMEM;
    cn_err_t rc = token_state(id, token_id, e, cached_only);
    if (rc < 0)
        goto out;
    rc = CN_E_AUTH;
    if (!usable(e))
        goto out;
    rc = CN_E_TOO_LARGE;
    if (e->secret_len > cap)
        goto out;
    memcpy(secret, e->secret, e->secret_len);
    *len = e->secret_len;
    if (tag)
        memcpy(tag, e->tag, CN_IDENTITY_TAG_LEN);
    if (out)
        *out = e->p;
    rc = 0;
out:
    OPENSSL_cleanse(e, sizeof *e);
    free(e);
    return rc;
}

cn_err_t cn_identity_lookup_secret(cn_identity_t *id, const char *token_id, uint8_t *secret,
                                   size_t cap, size_t *len, cn_principal_t *out)
{
    return lookup_secret(id, token_id, secret, cap, len, NULL, out, false);
}

cn_err_t cn_identity_lookup_secret_cached(cn_identity_t *id, const char *token_id, uint8_t *secret,
                                          size_t cap, size_t *len, cn_principal_t *out)
{
    return lookup_secret(id, token_id, secret, cap, len, NULL, out, true);
}

cn_err_t cn_identity_lookup_tagged(cn_identity_t *id, const char *token_id, bool cached_only,
                                   uint8_t *secret, size_t cap, size_t *len,
                                   uint8_t tag[CN_IDENTITY_TAG_LEN], cn_principal_t *out)
{
    return lookup_secret(id, token_id, secret, cap, len, tag, out, cached_only);
}
