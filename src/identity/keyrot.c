/* Rotating the identity key: the key ring a handle opens secrets with (the
 * current key, then the previous ones named by --identity-key-previous) and
 * the rotation that re-seals every token secret under a new key.
 *
 * Which key sealed a box is found by trying: the box format (version 1) is
 * kept, so every release can still open every box, and the AES-GCM tag
 * makes a wrong key's open fail with certainty, not with a wrong secret.
 *
 * Invariants of the rotation:
 *   1. A batch is read, re-sealed and written in one write transaction: a
 *      row is rewritten only with a box that opens, under the new key, to
 *      the secret it held when read in that transaction.
 *   2. The secret never changes, so no cached token state (which holds the
 *      opened secret) becomes wrong, and the write generation need not move.
 *   3. The new key's check value is recorded only after a full pass, and a
 *      pass skips rows the new key already opens: a killed run leaves every
 *      row under one of the two keys, and a re-run finishes the work.
 *   4. A run refuses, before writing, a database whose recorded check value
 *      is neither key's.
 *
 * This file must never log a key or a secret, and never write a box it did
 * not seal with the new key. */
#include "identity_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "cairn/crypto.h"
#include "cairn/util.h"

cn_err_t cn__id_ring_load(cn_identity_t *id, const cn_identity_opts_t *opts)
{
    for (size_t i = 0; opts->prev_files && opts->prev_files[i]; i++) {
        const char *f = opts->prev_files[i];
        if (i == CN__ID_PREV_MAX) {
            cn_error("identity", "at most %d previous identity keys", CN__ID_PREV_MAX);
            return CN_E_INVALID;
        }
        cn_err_t e = cn__id_key_load_file(f, id->prev[i]);
        if (e < 0) {
            cn_error("identity", "previous identity key %s: %s", f,
                     e == -ENOENT ? "no such file" : cn_strerror(e));
            return e;
        }
        id->n_prev = i + 1;
    }
    return 0;
}

cn_err_t cn__id_open_ring(const cn_identity_t *id, const char *token_id, const uint8_t *box,
                          size_t box_len, uint8_t *secret, size_t *len)
{
    cn_err_t e = cn__id_open(id->key, token_id, box, box_len, secret, len);
    for (size_t i = 0; e < 0 && i < id->n_prev; i++)
        e = cn__id_open(id->prev[i], token_id, box, box_len, secret, len);
    return e;
}

/* A row of a batch to write: its id and its box sealed with the new key. */
typedef struct resealed {
    char token_id[CN_TOKEN_ID_MAX + 1];
    char hex[2 * CN__ID_BOX_MAX + 1];
} resealed_t;

/* One rotation: the keys, where the pass is, and the run's counts. */
typedef struct rotation {
    cn_meta_t *meta;
    uint8_t new_key[CN__ID_KEY_LEN], old_key[CN__ID_KEY_LEN];
    char after[CN_TOKEN_ID_MAX + 1]; /* the last id of the last committed batch */
    size_t batch;
    cn_identity_rotation_t total;
    /* this batch's, kept apart because a retried transaction runs again */
    cn_identity_rotation_t got;
    char last[CN_TOKEN_ID_MAX + 1];
    resealed_t *out; /* batch entries: this batch's rows to write */
} rotation_t;

/* One row: skipped when the new key opens it, re-sealed (written into
 * hex) when the old one does, else counted unreadable.  *reseal says
 * whether hex holds a box to write. */
static cn_err_t row_reseal(rotation_t *r, const char *token_id, const char *text, size_t tl,
                           char *hex, bool *reseal)
{
    uint8_t box[CN__ID_BOX_MAX], secret[CN_SECRET_MAX];
    size_t bl = 0, sl = 0;
    cn_err_t e = 0;
    *reseal = false;
    if (!text || cn__id_box_decode(text, tl, box, &bl) < 0) {
        r->got.unreadable++;
    } else if (cn__id_open(r->new_key, token_id, box, bl, secret, &sl) >= 0) {
        r->got.current++;
    } else if (cn__id_open(r->old_key, token_id, box, bl, secret, &sl) >= 0) {
        e = cn__id_seal(r->new_key, token_id, secret, sl, hex);
        *reseal = e >= 0;
        r->got.resealed += *reseal;
    } else {
        r->got.unreadable++;
        cn_warn("identity", "token %s: its secret opens with neither key; left as it is", token_id);
    }
    OPENSSL_cleanse(secret, sizeof secret);
    return e;
}

/* Reads the batch after r->after, re-sealing into r->out what the old key
 * opens; the statement is finished before anything is written (a
 * PostgreSQL connection runs one statement at a time). */
static cn_err_t batch_read(cn_meta_txn_t *t, rotation_t *r)
{
    cn_meta_stmt_t *st = NULL;
    cn_err_t e = cn_meta_queryf(t, &st, cn__sql_id[CN_SQL_ID_TOKEN_BOX_AFTER], "si", r->after,
                                (int64_t)r->batch);
    while (e >= 0 && (e = cn_meta_step(st)) == CN_META_ROW) {
        size_t il = 0, tl = 0;
        const char *tid = cn_meta_column_text(st, 0, &il);
        const char *text = cn_meta_column_text(st, 1, &tl);
        if (!tid || !il || il > CN_TOKEN_ID_MAX || r->got.scanned >= r->batch) {
            e = CN_E_CORRUPT; /* no id to go on from */
            break;
        }
        resealed_t *o = &r->out[r->got.resealed];
        memset(o->token_id, 0, sizeof o->token_id);
        memcpy(o->token_id, tid, il);
        memcpy(r->last, o->token_id, sizeof r->last);
        r->got.scanned++;
        bool reseal = false;
        e = row_reseal(r, o->token_id, text, tl, o->hex, &reseal);
    }
    cn_meta_finish(st);
    return e == CN_META_DONE ? 0 : e < 0 ? e : 0;
}

static cn_err_t batch_body(cn_meta_txn_t *t, void *ctx)
{
    rotation_t *r = ctx;
    memset(&r->got, 0, sizeof r->got);
    memcpy(r->last, r->after, sizeof r->last);
    cn_err_t e = batch_read(t, r);
    for (uint64_t i = 0; e >= 0 && i < r->got.resealed; i++)
        e = cn_meta_execf(t, cn__sql_id[CN_SQL_ID_TOKEN_SET_BOX], "ss", r->out[i].hex,
                          r->out[i].token_id);
    return e < 0 ? e : 0;
}

/* The recorded check value: refused (invariant 4) unless it is one of the
 * two keys'; recorded as the new key's when record. */
static cn_err_t kcv_body(cn_meta_txn_t *t, void *ctx)
{
    rotation_t *r = ctx;
    char want[CN__ID_KCV_HEX + 1], old[CN__ID_KCV_HEX + 1];
    cn__id_kcv(r->new_key, want);
    cn__id_kcv(r->old_key, old);
    cn_meta_stmt_t *st = NULL;
    cn_err_t e = cn_meta_queryf(t, &st, cn__sql_id[CN_SQL_ID_KEYCHECK_GET], "");
    if (e == 0)
        e = cn_meta_step(st);
    bool ours = e == CN_META_DONE; /* none recorded: the pass decides */
    if (e == CN_META_ROW) {
        size_t n = 0;
        const char *v = cn_meta_column_text(st, 0, &n);
        ours = v && n == CN__ID_KCV_HEX && (cn_ct_equal(v, want, n) || cn_ct_equal(v, old, n));
    }
    cn_meta_finish(st);
    if (e < 0)
        return e;
    if (!ours)
        return CN_E_AUTH;
    if (!r->total.recorded)
        return 0;
    return cn_meta_execf(t, cn__sql_id[CN_SQL_ID_KEYCHECK_SET], "si", want, (int64_t)time(NULL));
}

static cn_err_t rotate_load(rotation_t *r, const char *new_file, const char *old_file)
{
    cn_err_t e = cn__id_key_load_file(new_file, r->new_key);
    const char *bad = new_file;
    if (e >= 0) {
        bad = old_file;
        e = cn__id_key_load_file(old_file, r->old_key);
    }
    if (e < 0) {
        cn_error("identity", "identity key %s: %s", bad,
                 e == -ENOENT ? "no such file" : cn_strerror(e));
        return e;
    }
    if (cn_ct_equal(r->new_key, r->old_key, CN__ID_KEY_LEN)) {
        cn_error("identity", "the new identity key is the old one");
        return CN_E_INVALID;
    }
    e = cn_meta_run(r->meta, CN_META_RUN_READ | CN_META_RETRY, kcv_body, r);
    if (e == CN_E_AUTH)
        cn_error("identity",
                 "this metadata's key check value is neither %s's nor %s's: "
                 "the old key must be the one the fleet runs with",
                 new_file, old_file);
    return e;
}

/* Runs the pass, batch by batch, from the first token id. */
static cn_err_t rotate_pass(rotation_t *r, cn_identity_rotate_fn fn, void *arg)
{
    for (;;) {
        cn_err_t e = cn_meta_run(r->meta, CN_META_RUN_WRITE | CN_META_RETRY, batch_body, r);
        if (e < 0)
            return e;
        r->total.scanned += r->got.scanned;
        r->total.resealed += r->got.resealed;
        r->total.current += r->got.current;
        r->total.unreadable += r->got.unreadable;
        memcpy(r->after, r->last, sizeof r->after);
        if (r->got.scanned < r->batch)
            return 0;
        if (fn && (e = fn(arg, &r->total)) != 0)
            return e;
    }
}

cn_err_t cn_identity_rotate_key(cn_meta_t *meta, const char *new_file, const char *old_file,
                                size_t batch, cn_identity_rotate_fn fn, void *arg,
                                cn_identity_rotation_t *out)
{
    if (!meta || !new_file || !old_file || !batch || batch > 100000)
        return CN_E_INVALID;
    CN_TRY(cn__sql_migrate(meta, &cn__sql_id_set));
    rotation_t *r = calloc(1, sizeof *r);
    if (!r)
        return -ENOMEM;
    r->meta = meta;
    r->batch = batch;
    r->out = calloc(batch, sizeof *r->out);
    cn_err_t e = r->out ? rotate_load(r, new_file, old_file) : -ENOMEM;
    if (e >= 0)
        e = rotate_pass(r, fn, arg);
    if (e >= 0) { /* invariant 3: after the whole pass */
        r->total.recorded = true;
        e = cn_meta_run(meta, CN_META_RUN_WRITE | CN_META_RETRY, kcv_body, r);
        r->total.recorded = e >= 0;
    }
    if (out)
        *out = r->total;
    if (r->out)
        OPENSSL_cleanse(r->out, batch * sizeof *r->out);
    free(r->out);
    OPENSSL_cleanse(r, sizeof *r);
    free(r);
    return e;
}
