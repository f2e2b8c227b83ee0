/* Object lock in the objects service: a bucket's object-lock configuration
 * (two named settings, written together and only on a versioned bucket) and
 * each version's retention and legal hold (obj_version_lock).
 *
 * The rules kept here: object lock is never turned off; a retention in
 * force is only ever extended in its own mode, unless it is GOVERNANCE and
 * the caller both asks for the bypass and is allowed
 * s3:BypassGovernanceRetention; COMPLIANCE is never shortened, removed or
 * changed, by anyone, administrators included (the token's admin bit lifts
 * token caps in authz, never this rule).  The server clock decides whether a
 * retention is in force.  Removal of a version for good is judged by
 * versions.c (cn__obj_version_removable), not here.
 *
 * Never: parses a wire document (the face validates and canonicalises the
 * configuration), or sees a socket. */
#include "objects_int.h"

#include <string.h>

#define LOCK_VERSIONING "versioning"
#define LOCK_DAY_MS (86400LL * 1000)
#define LOCK_DAYS_MAX 36500
#define LOCK_YEARS_MAX 100

/* ---- modes and the compact default ------------------------------------------------- */

static const char *lock_mode_name(cn_objects_lock_mode_t m)
{
    return m == CN_OBJ_LOCK_GOVERNANCE   ? "GOVERNANCE"
           : m == CN_OBJ_LOCK_COMPLIANCE ? "COMPLIANCE"
                                         : NULL;
}

static cn_objects_lock_mode_t lock_mode_of(const char *s, size_t n)
{
    if (n == 10 && memcmp(s, "GOVERNANCE", 10) == 0)
        return CN_OBJ_LOCK_GOVERNANCE;
    if (n == 10 && memcmp(s, "COMPLIANCE", 10) == 0)
        return CN_OBJ_LOCK_COMPLIANCE;
    return CN_OBJ_LOCK_NONE;
}

bool cn_objects_lock_default_parse(const char *s, size_t n, cn_objects_lock_mode_t *mode,
                                   int32_t *days, int32_t *years)
{
    /* "MODE D123" / "MODE Y12": mode, one space, unit, 1..5 digits. */
    if (!s || n < 13 || n > 17 || s[10] != ' ' || (s[11] != 'D' && s[11] != 'Y'))
        return false;
    cn_objects_lock_mode_t m = lock_mode_of(s, 10);
    if (m == CN_OBJ_LOCK_NONE || s[12] == '0')
        return false;
    int32_t v = 0;
    for (size_t i = 12; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    bool d = s[11] == 'D';
    if (v < 1 || v > (d ? LOCK_DAYS_MAX : LOCK_YEARS_MAX))
        return false;
    *mode = m;
    *days = d ? v : 0;
    *years = d ? 0 : v;
    return true;
}

int64_t cn_objects_lock_default_until(int32_t days, int32_t years, int64_t now_ms)
{
    return now_ms + ((int64_t)days + (int64_t)years * 365) * LOCK_DAY_MS;
}

/* ---- bucket settings read inside a transaction ------------------------------------- */

/* CN_E_INVALID (LOCK_NOT_ENABLED) unless b has object lock. */
static cn_err_t lock_enabled(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b)
{
    cn_err_t err = cn__bkt_setting(txn, b, b->id, CN_OBJECTS_LOCK_ATTR, NULL);
    if (err == 0)
        return cn__fail_d(rq, CN_E_INVALID, CN_OBJ_WHAT_BUCKET, CN_OBJ_LOCK_NOT_ENABLED,
                          "Bucket is missing Object Lock Configuration");
    return err < 0 ? err : 0;
}

/* ---- a write's explicit retention ----------------------------------------------------
 * Here, not in a face, so that every face is held to it: the S3 face
 * answers what this answers, after the write was authorized (so a caller
 * without s3:PutObject learns nothing of the bucket's settings). */

cn_err_t cn__lock_put_check(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b,
                            const cn_objects_put_args_t *args)
{
    const cn_objects_retention_t *r = args ? args->retention : NULL;
    if (!r || (r->mode == CN_OBJ_LOCK_NONE && r->legal_hold < 0))
        return 0;
    /* A token's permissions are a ceiling: locking needs object:lock. */
    if (!rq->principal || !cn_perms_allow(rq->principal->perms, CN_PERM_OBJECT_LOCK))
        return cn__fail(rq, CN_E_DENIED, CN_OBJ_WHAT_KEY,
                        "a retention or legal hold needs the object:lock permission");
    return lock_enabled(txn, rq, b);
}

/* ---- PutObjectLockConfiguration / GetObjectLockConfiguration ------------------------ */

typedef struct lock_cfg {
    const char *doc;
    size_t len;
    const char *dflt; /* NULL: none */
} lock_cfg_t;

static cn_err_t lock_cfg_set_body(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b,
                                  void *ctx)
{
    lock_cfg_t *c = ctx;
    cn_buf_t v = { 0 };
    cn_err_t err = cn__bkt_setting(txn, b, b->id, LOCK_VERSIONING, &v);
    bool enabled = v.len == 7 && !memcmp(v.data, "Enabled", 7);
    cn_buf_free(&v);
    if (err < 0)
        return err;
    if (!enabled)
        return cn__fail_d(rq, CN_E_CONFLICT, CN_OBJ_WHAT_BUCKET, CN_OBJ_BUCKET_STATE_INVALID,
                          "object lock needs versioning Enabled on %s", b->name);
    err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_BUCKET_ATTR_UPSERT], "isb", b->id,
                        CN_OBJECTS_LOCK_ATTR, (const void *)c->doc, c->len);
    if (err >= 0 && c->dflt)
        err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_BUCKET_ATTR_UPSERT], "isb", b->id,
                            CN_OBJECTS_LOCK_DEFAULT_ATTR, (const void *)c->dflt, strlen(c->dflt));
    else if (err >= 0)
        err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_BUCKET_ATTR_DELETE], "is", b->id,
                            CN_OBJECTS_LOCK_DEFAULT_ATTR);
    /* The generation moves with the settings, in this transaction (cache.c). */
    if (err >= 0)
        err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_BUCKET_GEN_BUMP], "i", b->id);
    return err < 0 ? err : CN_OK;
}

cn_err_t cn_objects_lock_config_set(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                    const char *doc, size_t len, const char *dflt)
{
    cn_objects_lock_mode_t m;
    int32_t d, y;
    if (!doc || !len || len > (1u << 20))
        return cn__fail(rq, CN_E_INVALID, CN_OBJ_WHAT_ARG, "an empty or oversized configuration");
    if (dflt && !cn_objects_lock_default_parse(dflt, strlen(dflt), &m, &d, &y))
        return cn__fail(rq, CN_E_INVALID, CN_OBJ_WHAT_ARG, "a default retention that is not one");
    lock_cfg_t c = { doc, len, dflt };
    return cn__bkt_run(o, rq, bucket, CN_ACT_PUT_BUCKET_OBJECT_LOCK_CONFIGURATION,
                       CN_META_RUN_WRITE | CN_META_RETRY, lock_cfg_set_body, &c);
}

cn_err_t cn_objects_lock_config_get(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                    cn_buf_t *doc)
{
    return cn_objects_bucket_attr_get(o, rq, bucket, CN_OBJECTS_LOCK_ATTR,
                                      CN_ACT_GET_BUCKET_OBJECT_LOCK_CONFIGURATION, doc);
}

/* ---- a version's lock row ---------------------------------------------------------- */

/* The lock row of version_id into *out: 1 found, 0 none (out zeroed), or an error. */
static cn_err_t lock_row(cn_meta_txn_t *txn, int64_t version_id, cn_objects_retention_t *out)
{
    memset(out, 0, sizeof *out);
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_V_LOCK_ROW], "i", version_id);
    if (err < 0)
        return err;
    err = cn_meta_step(st);
    if (err == CN_META_ROW) {
        size_t n = 0;
        const char *m = cn_meta_column_text(st, 0, &n);
        out->mode = m ? lock_mode_of(m, n) : CN_OBJ_LOCK_NONE;
        out->until_ms = out->mode != CN_OBJ_LOCK_NONE ? cn_meta_column_int64(st, 1) : 0;
        out->legal_hold = cn_meta_column_int64(st, 2) != 0;
        err = 1;
    } else if (err == CN_META_DONE) {
        err = 0;
    }
    cn_meta_finish(st);
    return err;
}

/* Writes r as version_id's lock row (legal_hold taken as 0/1), or removes
 * the row when r holds nothing. */
static cn_err_t lock_row_put(cn_meta_txn_t *txn, int64_t version_id,
                             const cn_objects_retention_t *r)
{
    const char *m = lock_mode_name(r->mode);
    int64_t hold = r->legal_hold > 0;
    if (!m && !hold)
        return cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_V_LOCK_DELETE], "i", version_id);
    if (!m)
        return cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_LOCK_UPSERT], "inni", version_id, hold);
    return cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_LOCK_UPSERT], "isii", version_id, m,
                         r->until_ms, hold);
}

static cn_err_t lock_row_body(cn_meta_txn_t *txn, void *ctx)
{
    void **a = ctx;
    cn_err_t err = lock_row(txn, *(const int64_t *)a[0], a[1]);
    return err < 0 ? err : CN_OK;
}

cn_err_t cn_objects_version_lock(cn_objects_t *o, int64_t version_id, cn_objects_retention_t *out)
{
    void *a[2] = { &version_id, out };
    memset(out, 0, sizeof *out);
    return cn_meta_run(o->meta, CN_META_RUN_READ | CN_META_RETRY, lock_row_body, a);
}

/* ---- per-version operations --------------------------------------------------------- */

typedef struct lock_op {
    const char *key;
    const char *version;
    cn_authz_action_t act;
    bool legal_hold; /* the legal-hold operation (else retention) */
    bool set;
    const cn_objects_retention_t *in; /* set: the new retention / hold */
    bool bypass;
    cn_objects_retention_t *out; /* get */
} lock_op_t;

/* The version op names, authorized: its id, after the bucket's object lock,
 * the action and the key were checked.  A delete marker has no lock: named
 * by its id, CN_E_UNSUPPORTED (VERSION_IS_MARKER: S3's 405); as the key's
 * latest version, the key is deleted (CN_E_NOT_FOUND, what = KEY). */
static cn_err_t lock_target(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b,
                            const lock_op_t *op, int64_t *vid)
{
    cn_err_t err = cn__key_check(rq, op->key);
    if (err >= 0)
        err = cn__authorize(rq, b, op->act, op->key, NULL, NULL);
    if (err >= 0)
        err = lock_enabled(txn, rq, b);
    cn__vref_t ref;
    if (err >= 0)
        err = cn__obj_version_resolve(txn, rq, b->id, op->key, op->version, &ref);
    if (err < 0)
        return err;
    if (ref.marker && !op->version)
        return cn__fail(rq, CN_E_NOT_FOUND, CN_OBJ_WHAT_KEY, "%s is deleted", op->key);
    if (ref.marker)
        return cn__fail_d(rq, CN_E_UNSUPPORTED, CN_OBJ_WHAT_KEY, CN_OBJ_VERSION_IS_MARKER,
                          "a delete marker has no object lock");
    *vid = ref.version_id;
    return 0;
}

/* Whether a change of cur (in force at now) to r is allowed: extending in
 * the same mode always is; anything else only on GOVERNANCE with the bypass
 * asked for and allowed.  CN_E_DENIED (LOCK_RETAINED) otherwise. */
static cn_err_t lock_change_ok(cn_objects_req_t *rq, const cn__bkt_t *b, const lock_op_t *op,
                               const cn_objects_retention_t *cur, int64_t now)
{
    const cn_objects_retention_t *r = op->in;
    if (cur->mode == CN_OBJ_LOCK_NONE || cur->until_ms <= now)
        return 0; /* nothing in force */
    if (r->mode == cur->mode && r->until_ms >= cur->until_ms)
        return 0; /* kept or extended */
    if (cur->mode == CN_OBJ_LOCK_COMPLIANCE)
        return cn__fail_d(rq, CN_E_DENIED, CN_OBJ_WHAT_KEY, CN_OBJ_LOCK_RETAINED,
                          "COMPLIANCE retention of %s is never shortened or changed", op->key);
    if (op->bypass &&
        cn__authorize(rq, b, CN_ACT_BYPASS_GOVERNANCE_RETENTION, op->key, NULL, NULL) >= 0)
        return 0;
    return cn__fail_d(rq, CN_E_DENIED, CN_OBJ_WHAT_KEY, CN_OBJ_LOCK_RETAINED,
                      "GOVERNANCE retention of %s needs the bypass to be shortened or changed%s",
                      op->key, op->bypass ? " (not allowed)" : "");
}

static cn_err_t lock_op_body(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b,
                             void *ctx)
{
    lock_op_t *op = ctx;
    int64_t vid = 0, now = cn_wall_ms();
    cn_objects_retention_t cur;
    cn_err_t err = lock_target(txn, rq, b, op, &vid);
    if (err >= 0)
        err = lock_row(txn, vid, &cur);
    if (err < 0)
        return err;
    if (!op->set) {
        if (err == 0 || (!op->legal_hold && cur.mode == CN_OBJ_LOCK_NONE))
            return cn__fail_d(rq, CN_E_NOT_FOUND, CN_OBJ_WHAT_KEY, CN_OBJ_LOCK_UNSET,
                              "%s has no %s", op->key, op->legal_hold ? "legal hold" : "retention");
        *op->out = cur;
        return CN_OK;
    }
    cn_objects_retention_t next = cur;
    if (op->legal_hold) {
        next.legal_hold = op->in->legal_hold > 0;
    } else {
        if (op->in->mode != CN_OBJ_LOCK_NONE && op->in->until_ms <= now)
            return cn__fail_d(rq, CN_E_INVALID, CN_OBJ_WHAT_ARG, CN_OBJ_LOCK_DATE_PAST,
                              "The retain until date must be in the future!");
        err = lock_change_ok(rq, b, op, &cur, now);
        if (err < 0)
            return err;
        next.mode = op->in->mode;
        next.until_ms = op->in->mode != CN_OBJ_LOCK_NONE ? op->in->until_ms : 0;
    }
    err = lock_row_put(txn, vid, &next);
    return err < 0 ? err : CN_OK;
}

static cn_err_t lock_op_run(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                            lock_op_t *op)
{
    /* Authorized in the body, where the key is known (object actions). */
    return cn__bkt_run(o, rq, bucket, CN_ACT_INVALID,
                       (op->set ? CN_META_RUN_WRITE : CN_META_RUN_READ) | CN_META_RETRY,
                       lock_op_body, op);
}

cn_err_t cn_objects_retention_get(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                  const char *key, const char *version, cn_objects_retention_t *out)
{
    lock_op_t op = { key, version, CN_ACT_GET_OBJECT_RETENTION, false, false, NULL, false, out };
    memset(out, 0, sizeof *out);
    return lock_op_run(o, rq, bucket, &op);
}

cn_err_t cn_objects_legal_hold_get(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                   const char *key, const char *version,
                                   cn_objects_retention_t *out)
{
    lock_op_t op = { key, version, CN_ACT_GET_OBJECT_LEGAL_HOLD, true, false, NULL, false, out };
    memset(out, 0, sizeof *out);
    return lock_op_run(o, rq, bucket, &op);
}

cn_err_t cn_objects_retention_set(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                  const char *key, const char *version,
                                  const cn_objects_retention_t *r, bool bypass)
{
    if (!r || (r->mode != CN_OBJ_LOCK_NONE && !lock_mode_name(r->mode)))
        return cn__fail(rq, CN_E_INVALID, CN_OBJ_WHAT_ARG, "no retention mode");
    lock_op_t op = { key, version, CN_ACT_PUT_OBJECT_RETENTION, false, true, r, bypass, NULL };
    return lock_op_run(o, rq, bucket, &op);
}

cn_err_t cn_objects_legal_hold_set(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                   const char *key, const char *version, bool on)
{
    cn_objects_retention_t r = { CN_OBJ_LOCK_NONE, 0, on ? 1 : 0 };
    lock_op_t op = { key, version, CN_ACT_PUT_OBJECT_LEGAL_HOLD, true, true, &r, false, NULL };
    return lock_op_run(o, rq, bucket, &op);
}
