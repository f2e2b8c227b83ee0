/* Object versions (S3 versioning, issue 25): the wire form of a version id,
 * the resolver every versioned operation goes through, the one path that
 * makes a new current version, the permanent removal of a version and its
 * lock check, and the bucket's versioning setting.
 *
 * Tables (src/meta/sql/objects.c, step v4): obj_version holds each key's
 * current version, so a current read stays one indexed lookup; obj_history
 * holds noncurrent versions and delete markers.  A version keeps its
 * version_id (and its obj_segment rows) when it moves between them.
 *
 * Must never: remove a version for good without cn__obj_version_removable
 * having passed (the callers that do: a write replacing a null version, a
 * delete, DELETE ?versionId); leave two rows of one key in obj_version; put
 * a marker in obj_version. */
#include "objects_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the wire form -------------------------------------------------------------
 * 13 base32 digits, most significant first, from an alphabet in ASCII order:
 * fixed width makes string order the sequence's order. */
#define VID_DIGITS 13
static const char vid_alphabet[] = "0123456789abcdefghijklmnopqrstuv";

void cn_objects_version_str(int64_t version_id, bool vnull, char out[CN_OBJECTS_VERSION_ID_MAX])
{
    if (vnull) {
        memcpy(out, "null", 5);
        return;
    }
    uint64_t v = (uint64_t)version_id;
    for (int i = VID_DIGITS - 1; i >= 0; i--) {
        out[i] = vid_alphabet[v & 31];
        v >>= 5;
    }
    out[VID_DIGITS] = 0;
}

cn_err_t cn_objects_version_parse(const char *s, int64_t *version_id, bool *is_null)
{
    *version_id = 0;
    *is_null = false;
    if (!s)
        return CN_E_INVALID;
    if (!strcmp(s, "null")) {
        *is_null = true;
        return 0;
    }
    if (strlen(s) != VID_DIGITS)
        return CN_E_INVALID;
    uint64_t v = 0;
    for (int i = 0; i < VID_DIGITS; i++) {
        char c = s[i];
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'v')
            d = (unsigned)(c - 'a' + 10);
        else
            return CN_E_INVALID;
        /* The first digit carries the top 4 bits only. */
        if (i == 0 && d > 15)
            return CN_E_INVALID;
        v = (v << 5) | d;
    }
    /* Ids are positive: 0 and the sign bit are never written. */
    if (v == 0 || v > (uint64_t)INT64_MAX)
        return CN_E_INVALID;
    *version_id = (int64_t)v;
    return 0;
}

/* ---- the resolver -------------------------------------------------------------- */

/* One row of a single-row query into *found (false on none). */
static cn_err_t one_row(cn_meta_stmt_t *st, bool *found)
{
    cn_err_t err = cn_meta_step(st);
    *found = err == CN_META_ROW;
    return err < 0 ? err : 0;
}

/* The key's latest: its current row, else its newest history row.
 * no_current: txn already found no current row (only history is read). */
static cn_err_t resolve_latest(cn_meta_txn_t *txn, cn_objects_req_t *rq, int64_t bucket_id,
                               const char *key, bool no_current, cn__vref_t *out)
{
    size_t kl = strlen(key);
    cn_meta_stmt_t *st = NULL;
    bool found = false;
    cn_err_t err = no_current ? 0
                              : cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_V_CUR_OF_KEY], "ib",
                                               bucket_id, (const void *)key, kl);
    if (err >= 0 && st)
        err = one_row(st, &found);
    if (err >= 0 && found) {
        out->version_id = cn_meta_column_int64(st, 0);
        out->vnull = cn_meta_column_int64(st, 1) != 0;
        out->table = CN__VT_CURRENT;
    }
    cn_meta_finish(st);
    if (err < 0 || found)
        return err;
    err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_V_HIST_NEWEST], "ib", bucket_id,
                         (const void *)key, kl);
    if (err >= 0)
        err = one_row(st, &found);
    if (err >= 0 && found) {
        out->version_id = cn_meta_column_int64(st, 0);
        out->marker = cn_meta_column_int64(st, 1) != 0;
        out->vnull = cn_meta_column_int64(st, 2) != 0;
        out->table = CN__VT_HISTORY;
    }
    cn_meta_finish(st);
    if (err >= 0 && !found)
        err = cn__fail(rq, CN_E_NOT_FOUND, CN_OBJ_WHAT_KEY, "key does not exist");
    return err;
}

/* The key's null version, current first. */
static cn_err_t resolve_null(cn_meta_txn_t *txn, int64_t bucket_id, const char *key,
                             cn__vref_t *out, bool *found)
{
    size_t kl = strlen(key);
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_V_CUR_OF_KEY], "ib", bucket_id,
                                  (const void *)key, kl);
    if (err >= 0)
        err = one_row(st, found);
    if (err >= 0 && *found) {
        out->version_id = cn_meta_column_int64(st, 0);
        out->table = CN__VT_CURRENT;
        *found = cn_meta_column_int64(st, 1) != 0;
    }
    cn_meta_finish(st);
    if (err < 0 || *found)
        return err;
    err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_V_HIST_NULL], "ib", bucket_id,
                         (const void *)key, kl);
    if (err >= 0)
        err = one_row(st, found);
    if (err >= 0 && *found) {
        out->version_id = cn_meta_column_int64(st, 0);
        out->marker = cn_meta_column_int64(st, 1) != 0;
        out->table = CN__VT_HISTORY;
    }
    cn_meta_finish(st);
    return err;
}

/* Version id of key, in either table. */
static cn_err_t resolve_id(cn_meta_txn_t *txn, int64_t bucket_id, const char *key, int64_t id,
                           cn__vref_t *out, bool *found)
{
    size_t kl = strlen(key);
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_V_CUR_BY_ID], "iib", id,
                                  bucket_id, (const void *)key, kl);
    if (err >= 0)
        err = one_row(st, found);
    if (err >= 0 && *found) {
        out->vnull = cn_meta_column_int64(st, 0) != 0;
        out->table = CN__VT_CURRENT;
    }
    cn_meta_finish(st);
    if (err < 0 || *found)
        return err;
    err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_V_HIST_BY_ID], "iib", id, bucket_id,
                         (const void *)key, kl);
    if (err >= 0)
        err = one_row(st, found);
    if (err >= 0 && *found) {
        out->marker = cn_meta_column_int64(st, 0) != 0;
        out->vnull = cn_meta_column_int64(st, 1) != 0;
        out->table = CN__VT_HISTORY;
    }
    cn_meta_finish(st);
    return err;
}

cn_err_t cn__obj_version_resolve(cn_meta_txn_t *txn, cn_objects_req_t *rq, int64_t bucket_id,
                                 const char *key, const char *version, cn__vref_t *out)
{
    memset(out, 0, sizeof *out);
    if (!version)
        return resolve_latest(txn, rq, bucket_id, key, false, out);
    int64_t id = 0;
    bool is_null = false;
    if (cn_objects_version_parse(version, &id, &is_null) < 0)
        return cn__fail_d(rq, CN_E_INVALID, CN_OBJ_WHAT_ARG, CN_OBJ_VERSION_ID_INVALID,
                          "invalid version id");
    bool found = false;
    cn_err_t err;
    if (is_null) {
        err = resolve_null(txn, bucket_id, key, out, &found);
        out->vnull = true;
    } else {
        out->version_id = id;
        err = resolve_id(txn, bucket_id, key, id, out, &found);
    }
    if (err >= 0 && !found)
        err = cn__fail_d(rq, CN_E_NOT_FOUND, CN_OBJ_WHAT_KEY, CN_OBJ_NO_SUCH_VERSION,
                         "the version does not exist");
    return err;
}

/* ---- removal ------------------------------------------------------------------- */

cn_err_t cn__obj_version_removable(cn_meta_txn_t *txn, cn_objects_req_t *rq, int64_t version_id,
                                   bool bypass, int64_t now_ms)
{
    cn_meta_stmt_t *st = NULL;
    bool found = false;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_V_LOCK_ROW], "i", version_id);
    if (err >= 0)
        err = one_row(st, &found);
    if (err >= 0 && found) {
        const char *mode = cn_meta_column_text(st, 0, NULL);
        int64_t until = cn_meta_column_int64(st, 1);
        bool hold = cn_meta_column_int64(st, 2) != 0;
        bool running = mode && until > now_ms;
        if (hold)
            err = cn__fail_d(rq, CN_E_DENIED, CN_OBJ_WHAT_KEY, CN_OBJ_VERSION_LOCKED,
                             "the version is under a legal hold");
        else if (running && !strcmp(mode, "COMPLIANCE"))
            err = cn__fail_d(rq, CN_E_DENIED, CN_OBJ_WHAT_KEY, CN_OBJ_VERSION_LOCKED,
                             "the version is under COMPLIANCE retention");
        else if (running && !bypass)
            err = cn__fail_d(rq, CN_E_DENIED, CN_OBJ_WHAT_KEY, CN_OBJ_VERSION_LOCKED,
                             "the version is under GOVERNANCE retention");
    }
    cn_meta_finish(st);
    return err < 0 ? err : 0;
}

cn_err_t cn__obj_version_purge(cn_meta_txn_t *txn, int64_t version_id, cn__vtable_t table)
{
    cn_err_t err = cn_meta_pushf(txn, cn__sql_obj[CN_SQL_OBJ_SEGMENTS_DELETE], "i", version_id);
    if (err >= 0)
        err = cn_meta_pushf(txn,
                            cn__sql_obj[table == CN__VT_CURRENT ? CN_SQL_OBJ_VERSION_DELETE
                                                                : CN_SQL_OBJ_V_HIST_DELETE],
                            "i", version_id);
    if (err >= 0)
        err = cn_meta_pushf(txn, cn__sql_obj[CN_SQL_OBJ_V_TAGS_DELETE], "i", version_id);
    if (err >= 0)
        err = cn_meta_pushf(txn, cn__sql_obj[CN_SQL_OBJ_V_LOCK_DELETE], "i", version_id);
    return err < 0 ? err : 0;
}

/* ---- the bucket's state -------------------------------------------------------- */

/* The state from the bucket's "versioning" and default-retention settings
 * (cn__bkt_setting: b may be NULL).  The default is read only when
 * versioning is Enabled: object lock, and so its default, exists only on a
 * bucket it keeps Enabled (lock.c, versioning_set_body), so one read is
 * enough for an unversioned bucket's write. */
static cn_err_t vstate_read(cn_meta_txn_t *txn, const cn__bkt_t *b, int64_t bucket_id,
                            cn__vstate_t *out)
{
    memset(out, 0, sizeof *out);
    cn_buf_t v = { 0 };
    cn_err_t err = cn__bkt_setting(txn, b, bucket_id, "versioning", &v);
    /* An empty value is no setting (as the stored text never is). */
    if (err > 0 && v.len)
        out->versioning = v.len == 7 && !memcmp(v.data, "Enabled", 7) ? CN_OBJ_VERSIONING_ENABLED
                                                                      : CN_OBJ_VERSIONING_SUSPENDED;
    v.len = 0;
    if (err >= 0 && out->versioning == CN_OBJ_VERSIONING_ENABLED)
        err = cn__bkt_setting(txn, b, bucket_id, CN_OBJECTS_LOCK_DEFAULT_ATTR, &v);
    cn_objects_lock_mode_t mode;
    int32_t days, years;
    if (err > 0 &&
        cn_objects_lock_default_parse((const char *)v.data, v.len, &mode, &days, &years)) {
        out->default_mode = mode;
        out->default_ms = cn_objects_lock_default_until(days, years, 0);
    }
    cn_buf_free(&v);
    return err < 0 ? err : 0;
}

cn_err_t cn__obj_vstate(cn_meta_txn_t *txn, int64_t bucket_id, cn__vstate_t *out)
{
    return vstate_read(txn, NULL, bucket_id, out);
}

cn_err_t cn__bkt_vstate(cn_meta_txn_t *txn, const cn__bkt_t *b, cn__vstate_t *out)
{
    return vstate_read(txn, b, b->id, out);
}

/* ---- making a version current ---------------------------------------------------- */

/* Moves current version cur to obj_history, noncurrent from now (pushed:
 * retire_current's callers pass errors on). */
static cn_err_t to_history(cn_meta_txn_t *txn, int64_t cur, int64_t now)
{
    cn_err_t err = cn_meta_pushf(txn, cn__sql_obj[CN_SQL_OBJ_V_TO_HISTORY], "ii", now, cur);
    if (err >= 0)
        err = cn_meta_pushf(txn, cn__sql_obj[CN_SQL_OBJ_VERSION_DELETE], "i", cur);
    return err < 0 ? err : 0;
}

/* Before a new latest version of key (a version or a marker): the current
 * one goes to history, or away for good when it is the null version and
 * the new one is null too; a null version in history goes away for good
 * when the new one is null; a latest marker becomes noncurrent.  no_current:
 * txn already found the key without a current version. */
static cn_err_t retire_current(cn_meta_txn_t *txn, cn_objects_req_t *rq, int64_t bucket_id,
                               const char *key, bool new_null, int64_t now, bool no_current)
{
    cn__vref_t latest = { 0 }, nul = { 0 };
    bool has_null = false;
    cn_err_t err = resolve_latest(txn, NULL, bucket_id, key, no_current, &latest);
    if (err == CN_E_NOT_FOUND)
        return 0; /* a new key */
    if (err >= 0 && new_null)
        err = resolve_null(txn, bucket_id, key, &nul, &has_null);
    if (err < 0)
        return err;
    /* A locked null version is not replaced (none is, while object lock
     * keeps versioning Enabled; the check keeps that true by itself). */
    if (has_null)
        err = cn__obj_version_removable(txn, rq, nul.version_id, false, now);
    if (err >= 0 && has_null)
        err = cn__obj_version_purge(txn, nul.version_id, nul.table);
    bool purged_latest = has_null && nul.version_id == latest.version_id;
    if (err >= 0 && !purged_latest && latest.table == CN__VT_CURRENT)
        err = to_history(txn, latest.version_id, now);
    else if (err >= 0 && !purged_latest)
        err = cn_meta_pushf(txn, cn__sql_obj[CN_SQL_OBJ_V_HIST_NONCURRENT], "ii", now,
                            latest.version_id);
    return err < 0 ? err : 0;
}

/* The new version's tags and retention. */
static cn_err_t version_attrs(cn_meta_txn_t *txn, const cn__vmake_t *mk, const cn__vstate_t *vs)
{
    cn_err_t err = 0;
    for (size_t i = 0; i < mk->ntags && err >= 0; i++)
        err = cn_meta_pushf(txn, cn__sql_obj[CN_SQL_OBJ_V_TAG_INSERT], "ibb", mk->vid,
                            (const void *)mk->tags[i].key, strlen(mk->tags[i].key),
                            (const void *)mk->tags[i].value, strlen(mk->tags[i].value));
    cn_objects_lock_mode_t mode = CN_OBJ_LOCK_NONE;
    int64_t until = 0;
    int hold = mk->retention ? mk->retention->legal_hold : -1;
    if (mk->retention && mk->retention->mode != CN_OBJ_LOCK_NONE) {
        mode = mk->retention->mode;
        until = mk->retention->until_ms;
    } else if (vs->default_mode != CN_OBJ_LOCK_NONE) {
        mode = vs->default_mode;
        until = mk->now_ms + vs->default_ms;
    }
    /* 's' binds NULL for a NULL string; until 0 stands for none. */
    const char *mname = mode == CN_OBJ_LOCK_COMPLIANCE   ? "COMPLIANCE"
                        : mode == CN_OBJ_LOCK_GOVERNANCE ? "GOVERNANCE"
                                                         : NULL;
    if (err >= 0 && (mname || hold > 0))
        err = cn_meta_pushf(txn, cn__sql_obj[CN_SQL_OBJ_V_LOCK_INSERT], "isii", mk->vid, mname,
                            until, (int64_t)(hold > 0));
    return err < 0 ? err : 0;
}

int cn__vclaim_step(cn_meta_stmt_t *st, cn_err_t err, int64_t *vid)
{
    if (err >= 0)
        err = cn_meta_step(st);
    if (err == CN_META_ROW)
        *vid = cn_meta_column_int64(st, 0);
    cn_meta_finish(st);
    return err < 0 ? err : err == CN_META_ROW;
}

/* The bucket's versioning state, from mk->bkt when the caller loaded it. */
static cn_err_t vstate_of(cn_meta_txn_t *txn, const cn__vmake_t *mk, cn__vstate_t *vs)
{
    return mk->bkt ? cn__bkt_vstate(txn, mk->bkt, vs) : cn__obj_vstate(txn, mk->bucket_id, vs);
}

/* mk's claim when it may be made (cn__vmake_t): 1 claimed, 0 not (the
 * usual path follows), or an error; *vs_read when vs was read for it. */
static int claim_new_key(cn_meta_txn_t *txn, cn__vmake_t *mk, cn__vstate_t *vs, bool *vs_read)
{
    *vs_read = false;
    if (!mk->claim || (mk->cond && mk->cond->if_match) || !cn_meta_round_trips(txn))
        return 0;
    cn_err_t err = vstate_of(txn, mk, vs);
    *vs_read = err >= 0;
    if (err < 0 || vs->versioning != CN_OBJ_VERSIONING_OFF)
        return err < 0 ? err : 0;
    return mk->claim(txn, mk->ctx, &mk->vid);
}

cn_err_t cn__obj_version_make(cn_meta_txn_t *txn, cn_objects_req_t *rq, cn__vmake_t *mk)
{
    cn__vstate_t vs = { 0 };
    int64_t cur = 0;
    char cur_etag[CN_ETAG_MAX];
    bool vs_read = false;
    int claimed = claim_new_key(txn, mk, &vs, &vs_read);
    cn_err_t err = claimed < 0 ? claimed : 0;
    if (claimed > 0 && mk->pre) /* a new key: no current version to outlive */
        err = mk->pre(txn, mk->ctx, mk->vid);
    if (claimed == 0) {
        err = cn__version_find_next(txn, mk->bucket_id, mk->key, &cur, cur_etag, &mk->vid);
        if (err >= 0)
            err = cn__put_conditions(rq, mk->cond, cur, cur_etag);
        if (err >= 0 && !vs_read)
            err = vstate_of(txn, mk, &vs);
        if (err >= 0 && mk->pre)
            err = mk->pre(txn, mk->ctx, mk->vid);
    }
    mk->vnull = vs.versioning != CN_OBJ_VERSIONING_ENABLED;
    mk->versioned = vs.versioning != CN_OBJ_VERSIONING_OFF;
    /* A bucket whose versioning was never set has no history (its deletes
     * purge, it makes no markers) and its one version of a key is the null
     * one, the current row cur: a new key has nothing to retire, and an
     * overwrite replaces cur (retire_current's result, without its
     * lookups of the key's latest and null versions). */
    if (err >= 0 && mk->versioned) {
        err = retire_current(txn, rq, mk->bucket_id, mk->key, mk->vnull, mk->now_ms, cur == 0);
    } else if (err >= 0 && cur) {
        err = cn__obj_version_removable(txn, rq, cur, false, mk->now_ms);
        if (err >= 0)
            err = cn__obj_version_purge(txn, cur, CN__VT_CURRENT);
    }
    if (err >= 0)
        err = mk->rows(txn, mk->ctx, mk->vid);
    /* Rows are inserted null (the column's default); only Enabled differs. */
    if (err >= 0 && !mk->vnull)
        err = cn_meta_pushf(txn, cn__sql_obj[CN_SQL_OBJ_V_SET_VNULL], "ii", (int64_t)0, mk->vid);
    if (err >= 0)
        err = version_attrs(txn, mk, &vs);
    return err < 0 ? err : 0;
}

/* ---- the bucket's versioning setting ------------------------------------------------ */

static cn_err_t versioning_get_body(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b,
                                    void *ctx)
{
    (void)rq;
    cn__vstate_t vs;
    cn_err_t err = cn__bkt_vstate(txn, b, &vs);
    *(cn_objects_versioning_t *)ctx = vs.versioning;
    return err;
}

cn_err_t cn_objects_versioning_get(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                   cn_objects_versioning_t *out)
{
    *out = CN_OBJ_VERSIONING_OFF;
    return cn__bkt_run(o, rq, bucket, CN_ACT_GET_BUCKET_VERSIONING,
                       CN_META_RUN_READ | CN_META_RETRY, versioning_get_body, out);
}

static cn_err_t versioning_set_body(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b,
                                    void *ctx)
{
    cn_objects_versioning_t st = *(const cn_objects_versioning_t *)ctx;
    const char *v = st == CN_OBJ_VERSIONING_ENABLED ? "Enabled" : "Suspended";
    cn_err_t err = 0;
    if (st == CN_OBJ_VERSIONING_SUSPENDED) {
        err = cn__bkt_setting(txn, b, b->id, CN_OBJECTS_LOCK_ATTR, NULL);
        if (err > 0)
            return cn__fail_d(rq, CN_E_CONFLICT, CN_OBJ_WHAT_BUCKET, CN_OBJ_BUCKET_STATE_INVALID,
                              "versioning cannot be suspended on a bucket with object lock");
    }
    if (err >= 0)
        err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_BUCKET_ATTR_UPSERT], "isb", b->id,
                            "versioning", (const void *)v, strlen(v));
    /* The generation moves with the setting (cache.c). */
    if (err >= 0)
        err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_BUCKET_GEN_BUMP], "i", b->id);
    return err < 0 ? err : CN_OK;
}

cn_err_t cn_objects_versioning_set(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                   cn_objects_versioning_t state)
{
    if (state != CN_OBJ_VERSIONING_ENABLED && state != CN_OBJ_VERSIONING_SUSPENDED)
        return cn__fail_d(rq, CN_E_INVALID, CN_OBJ_WHAT_ARG, CN_OBJ_VERSIONING_STATE_INVALID,
                          "versioning is Enabled or Suspended");
    return cn__bkt_run(o, rq, bucket, CN_ACT_PUT_BUCKET_VERSIONING,
                       CN_META_RUN_WRITE | CN_META_RETRY, versioning_set_body, &state);
}

/* ---- tags kept by a session -------------------------------------------------------- */

cn_err_t cn__tags_copy(const cn_objects_kv_t *in, size_t n, cn_objects_kv_t **out)
{
    *out = NULL;
    if (!n)
        return 0;
    if (n > CN_OBJECTS_TAGS_MAX)
        return CN_E_INVALID;
    size_t bytes = n * sizeof **out;
    for (size_t i = 0; i < n; i++)
        bytes += strlen(in[i].key) + strlen(in[i].value) + 2;
    char *blk = malloc(bytes);
    if (!blk)
        return -ENOMEM;
    cn_objects_kv_t *kv = (cn_objects_kv_t *)blk;
    char *s = blk + n * sizeof *kv;
    for (size_t i = 0; i < n; i++) {
        size_t kl = strlen(in[i].key) + 1, vl = strlen(in[i].value) + 1;
        kv[i].key = memcpy(s, in[i].key, kl);
        s += kl;
        kv[i].value = memcpy(s, in[i].value, vl);
        s += vl;
    }
    *out = kv;
    return 0;
}

/* ---- access to a named version ----------------------------------------------------- */

cn_err_t cn__authorize_version(cn_objects_req_t *rq, const cn__bkt_t *b, cn_authz_action_t act,
                               const char *key, cn_err_t found, const cn__objacl_t *obj)
{
    uint16_t detail = rq->fail.cls == found ? rq->fail.detail : 0;
    if (found >= 0 || (found == CN_E_NOT_FOUND && !detail))
        return cn__authorize_found(rq, b, act, key, found, obj);
    if (detail != CN_OBJ_NO_SUCH_VERSION && detail != CN_OBJ_VERSION_IS_MARKER)
        return found;
    /* A version-level answer is told only to whom act is allowed on the
     * key; the details of the failure are kept through the check. */
    cn_fail_t saved = rq->fail;
    cn_objects_what_t what = rq->what;
    cn_err_t err = cn__authorize_found(rq, b, act, key, CN_E_NOT_FOUND, NULL);
    if (err != CN_E_NOT_FOUND)
        return err;
    rq->fail = saved;
    rq->what = what;
    return found;
}

/* ---- what CreateMultipartUpload keeps for the completion ------------------------------ */

cn_err_t cn__upload_attrs_set(cn_meta_txn_t *txn, const char *upload_id,
                              const cn_objects_put_args_t *args)
{
    const cn_objects_retention_t *r = args ? args->retention : NULL;
    if (!args || (!args->ntags && !r))
        return 0;
    cn_buf_t tags = { 0 };
    cn_err_t err = cn__umeta_encode(args->tags, args->ntags, &tags);
    const char *mode = !r                                  ? NULL
                       : r->mode == CN_OBJ_LOCK_COMPLIANCE ? "COMPLIANCE"
                       : r->mode == CN_OBJ_LOCK_GOVERNANCE ? "GOVERNANCE"
                                                           : NULL;
    int64_t hold = r ? r->legal_hold : -1;
    int64_t until = r ? r->until_ms : 0;
    const char *sql = cn__sql_obj[CN_SQL_OBJ_V_UPLOAD_SET_ATTRS];
    /* tags: SQL NULL when none ('n' takes no argument). */
    if (err >= 0 && tags.len)
        err = cn_meta_execf(txn, sql, "bsiis", (const void *)tags.data, tags.len, mode, until, hold,
                            upload_id);
    else if (err >= 0)
        err = cn_meta_execf(txn, sql, "nsiis", mode, until, hold, upload_id);
    cn_buf_free(&tags);
    return err < 0 ? err : 0;
}

cn_err_t cn__upload_attrs_get(cn_meta_txn_t *txn, const char *upload_id, cn__vattrs_t *out)
{
    free(out->tags);
    memset(out, 0, sizeof *out);
    cn_meta_stmt_t *st = NULL;
    bool found = false;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_V_UPLOAD_ATTRS], "s", upload_id);
    if (err >= 0)
        err = one_row(st, &found);
    if (err >= 0 && found) {
        size_t n = 0;
        const void *t = cn_meta_column_blob(st, 0, &n);
        cn_object_info_t tmp;
        memset(&tmp, 0, sizeof tmp);
        /* The tags are stored as user metadata is: decode them the same way. */
        if (t)
            err = cn__info_fill(&tmp, "", 0, t, n);
        if (err >= 0 && tmp.nmeta)
            err = tmp.nmeta > CN_OBJECTS_TAGS_MAX ? CN_E_CORRUPT
                                                  : cn__tags_copy(tmp.meta, tmp.nmeta, &out->tags);
        out->ntags = out->tags ? tmp.nmeta : 0;
        cn_objects_info_free(&tmp);
        const char *mode = cn_meta_column_text(st, 1, NULL);
        bool has_hold = !cn_meta_column_is_null(st, 3);
        out->has_retention = mode || has_hold;
        out->retention.mode = !mode                         ? CN_OBJ_LOCK_NONE
                              : !strcmp(mode, "COMPLIANCE") ? CN_OBJ_LOCK_COMPLIANCE
                                                            : CN_OBJ_LOCK_GOVERNANCE;
        out->retention.until_ms = cn_meta_column_int64(st, 2);
        out->retention.legal_hold = has_hold ? (int)cn_meta_column_int64(st, 3) : -1;
    }
    cn_meta_finish(st);
    return err < 0 ? err : 0;
}

/* ---- reads ----------------------------------------------------------------------------- */

cn_err_t cn__obj_marker_look(cn_meta_txn_t *txn, int64_t bucket_id, const char *key,
                             cn_object_info_t *info)
{
    if (!key)
        return 0;
    cn_meta_stmt_t *st = NULL;
    bool found = false;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_V_HIST_NEWEST], "ib", bucket_id,
                                  (const void *)key, strlen(key));
    if (err >= 0)
        err = one_row(st, &found);
    if (err >= 0 && found && cn_meta_column_int64(st, 1)) {
        info->delete_marker = true;
        info->version_id = cn_meta_column_int64(st, 0);
        info->vnull = cn_meta_column_int64(st, 2) != 0;
    }
    cn_meta_finish(st);
    return err;
}

bool cn__bkt_versioned(const cn__bkt_t *b)
{
    const void *v = NULL;
    size_t n = 0;
    /* Settings too large to cache: say versioned (a "null" named on the
     * wire is still true). */
    return !b || !b->attrs_cached || cn__bkt_attr(b, "versioning", &v, &n) == 1;
}

cn_err_t cn__obj_marker_make(cn_meta_txn_t *txn, cn_objects_req_t *rq, cn__vmark_t *m)
{
    cn_err_t err = cn__next_version(txn, &m->vid);
    if (err >= 0)
        err = retire_current(txn, rq, m->bucket_id, m->key, m->vnull, m->now_ms, false);
    if (err >= 0)
        err = cn_meta_pushf(txn, cn__sql_obj[CN_SQL_OBJ_V_MARKER_INSERT], "iibiis", m->vid,
                            m->bucket_id, (const void *)m->key, strlen(m->key), (int64_t)m->vnull,
                            m->now_ms, m->owner);
    return err < 0 ? err : 0;
}
