/* The identity key's check value: how a node learns, before it serves
 * anything, that its identity key is the one that sealed the token secrets
 * of its metadata database.
 *
 * The check value is HMAC-SHA256(key, KCV_LABEL) in hex, one row of
 * cn_identity_key.  It reveals nothing of the key (a MAC of a public label
 * under it) and is the same for every node holding the same key.
 *
 * Invariants:
 *   1. The value is recorded only in a write transaction that found none,
 *      and re-read in that same transaction: two nodes starting together on
 *      an empty database with different keys record one value, and the
 *      other is refused (on PostgreSQL the loser's insert fails to serialize
 *      and is run again; on SQLite the writers take turns).
 *   2. Before a value is recorded (a database made before this check), the
 *      key must open one of the first 64 stored token secrets, if any can be
 *      read: a wrong key is never recorded as the right one.
 *   3. A refusal logs which key was refused and why, and changes nothing.
 *   4. A recorded value that is a previous key's (--identity-key-previous)
 *      is accepted, so nodes restarted with a new current key keep starting
 *      until the rotation records the new value (keyrot.c); only the
 *      rotation ever replaces a recorded value.
 *
 * This file must never log the key or a secret, and never record a value
 * it did not compute from the key in hand. */
#include "identity_int.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "cairn/crypto.h"
#include "cairn/util.h"

#define KCV_LABEL "cairn identity key check v1"
#define KCV_HEX (2 * CN_DIGEST_LEN)
_Static_assert(KCV_HEX == CN__ID_KCV_HEX, "the key check value's length");

typedef enum {
    KC_SAME,
    KC_PREV, /* a previous key's: a rotation in progress */
    KC_OTHER,
    KC_TOKENS,
    KC_NONE /* none recorded (seen by a read) */
} kc_verdict_t;

typedef struct key_check {
    const cn_identity_t *id;
    bool record; /* a write transaction: record the value when none is */
    char kcv[KCV_HEX + 1];
    char prev[CN__ID_PREV_MAX][KCV_HEX + 1]; /* the previous keys' */
    kc_verdict_t verdict;
} key_check_t;

/* The recorded value: 1 and copied into out, 0 when none, or an error. */
static cn_err_t kcv_get(cn_meta_txn_t *t, char out[KCV_HEX + 1])
{
    cn_meta_stmt_t *st = NULL;
    cn_err_t e = cn_meta_queryf(t, &st, cn__sql_id[CN_SQL_ID_KEYCHECK_GET], "");
    if (e == 0)
        e = cn_meta_step(st);
    if (e == CN_META_ROW) {
        size_t n = 0;
        const char *v = cn_meta_column_text(st, 0, &n);
        memset(out, 0, KCV_HEX + 1);
        if (v && n == KCV_HEX)
            memcpy(out, v, n);
        e = 1;
    } else if (e == CN_META_DONE) {
        e = 0;
    }
    cn_meta_finish(st);
    return e;
}

/* Whether the key ring opens one token secret sealed under it (one is enough:
 * tokens sealed under an older key may be stored beside them; the first 64
 * by id are tried).  *opens: true also when no secret could be read at all,
 * which is not the key's fault. */
static cn_err_t a_token_opens(cn_meta_txn_t *t, const cn_identity_t *id, bool *opens)
{
    *opens = true;
    bool tried = false;
    cn_meta_stmt_t *st = NULL;
    cn_err_t e = cn_meta_queryf(t, &st, cn__sql_id[CN_SQL_ID_TOKEN_FIRST_BOX], "");
    while (e >= 0 && (e = cn_meta_step(st)) == CN_META_ROW) {
        size_t il = 0, hl = 0, bl = 0, sl = 0;
        const char *tid = cn_meta_column_text(st, 0, &il);
        const char *hex = cn_meta_column_text(st, 1, &hl);
        char token_id[CN_TOKEN_ID_MAX + 1] = { 0 };
        uint8_t box[CN__ID_BOX_MAX], secret[CN_SECRET_MAX];
        if (!tid || il > CN_TOKEN_ID_MAX || !hex || cn__id_box_decode(hex, hl, box, &bl) < 0)
            continue;
        memcpy(token_id, tid, il);
        tried = true;
        bool ok = cn__id_open_ring(id, token_id, box, bl, secret, &sl) >= 0;
        OPENSSL_cleanse(secret, sizeof secret);
        if (ok)
            break;
    }
    if (e == CN_META_ROW) /* stopped at one that opens */
        e = 0;
    else
        *opens = !tried;
    cn_meta_finish(st);
    return e < 0 ? e : 0;
}

static cn_err_t key_check_body(cn_meta_txn_t *t, void *ctx)
{
    key_check_t *kc = ctx;
    char have[KCV_HEX + 1];
    cn_err_t e = kcv_get(t, have);
    if (e == 0 && !kc->record) { /* a read: the write that records comes next */
        kc->verdict = KC_NONE;
        return 0;
    }
    if (e == 0) { /* none recorded: invariant 2, then record ours */
        bool opens = true;
        e = a_token_opens(t, kc->id, &opens);
        if (e < 0)
            return e;
        if (!opens) {
            kc->verdict = KC_TOKENS;
            return 0;
        }
        e = cn_meta_execf(t, cn__sql_id[CN_SQL_ID_KEYCHECK_PUT], "si", kc->kcv,
                          (int64_t)time(NULL));
        if (e >= 0)
            e = kcv_get(t, have); /* invariant 1: whoever recorded first */
        if (e == 0)
            e = CN_E_CORRUPT; /* inserted, yet not there */
    }
    if (e < 0)
        return e;
    kc->verdict = cn_ct_equal(have, kc->kcv, KCV_HEX) ? KC_SAME : KC_OTHER;
    for (size_t i = 0; kc->verdict == KC_OTHER && i < kc->id->n_prev; i++)
        if (cn_ct_equal(have, kc->prev[i], KCV_HEX))
            kc->verdict = KC_PREV;
    return 0;
}

void cn__id_kcv(const uint8_t key[CN__ID_KEY_LEN], char out[KCV_HEX + 1])
{
    uint8_t mac[CN_DIGEST_LEN];
    cn_hmac_sha256(key, CN__ID_KEY_LEN, KCV_LABEL, strlen(KCV_LABEL), mac);
    cn_hex_encode(mac, sizeof mac, out);
    out[KCV_HEX] = '\0';
}

/* Logs why the check refused (or, for a rotation in progress, warns). */
static void key_check_say(kc_verdict_t v, const char *name, size_t n_prev)
{
    if (v == KC_PREV)
        cn_warn("identity",
                "identity key rotation in progress: this metadata's key check value is a"
                " previous key's (--identity-key-previous); finish it with `cairn admin"
                " identity rotate-key`");
    else if (v == KC_OTHER)
        cn_error("identity",
                 "identity key %s is not the key this metadata database was first used with"
                 " or rotated to (its key check value differs%s): every node of a fleet needs"
                 " the same key (--identity-key FILE: after a rotation, the new one; during"
                 " one, the new one with --identity-key-previous OLD)",
                 name, n_prev ? ", and no --identity-key-previous key's matches either" : "");
    else if (v == KC_TOKENS)
        cn_error("identity",
                 "identity key %s does not open the token secrets stored in this metadata"
                 " database: start with the key that sealed them (--identity-key FILE)",
                 name);
}

cn_err_t cn__id_key_check(cn_identity_t *id, const char *name)
{
    key_check_t kc = { .id = id, .verdict = KC_OTHER };
    cn__id_kcv(id->key, kc.kcv);
    for (size_t i = 0; i < id->n_prev; i++)
        cn__id_kcv(id->prev[i], kc.prev[i]);
    /* A read first: once the value is recorded, a start (or a `cairn admin`
     * run) never waits for the writer.  The write, when none is recorded, is
     * not through cn__id_write_run: the row is no token's state, so no cached
     * state depends on it and the generation need not move. */
    cn_err_t e = cn_meta_run(id->meta, CN_META_RUN_READ | CN_META_RETRY, key_check_body, &kc);
    if (e >= 0 && kc.verdict == KC_NONE) {
        kc.record = true;
        e = cn_meta_run(id->meta, CN_META_RUN_WRITE | CN_META_RETRY, key_check_body, &kc);
    }
    if (e < 0)
        return e;
    key_check_say(kc.verdict, name, id->n_prev);
    return kc.verdict == KC_SAME || kc.verdict == KC_PREV ? 0 : CN_E_AUTH;
}
