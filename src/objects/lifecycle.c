/* Lifecycle configuration: the bucket's "lifecycle" setting holds the rules
 * an adapter decoded and validated, in a compact encoding the service reads
 * without any XML, then the accepted document for byte-exact readback; and
 * the matcher that says when, and by which rule, an object expires
 * (x-amz-expiration).
 *
 * The stored value (little-endian):
 *   "CNLC1" NUL, u32 nrules, then per rule:
 *     str id, u8 enabled, str prefix, u8 ntags, ntags × (str key, str value),
 *     i64 size_gt, i64 size_lt, i32 exp_days, i64 exp_date_ms, u8 exp_marker,
 *     i32 nc_days, i32 nc_newer, i32 abort_days
 *   (str: u32 length, bytes), then the document to the end.
 *
 * Never: stamps anything on objects (a changed or deleted rule governs
 * objects already stored), or acts on them: expiring is the worker's
 * (docs/s3.md), through the calls a client's DELETE uses. */
#include "objects_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define LC_MAGIC "CNLC1"
#define LC_MAGIC_LEN 6 /* with its NUL */
#define LC_ATTR "lifecycle"
#define DAY_MS (86400 * (int64_t)1000)

/* ---- encoding ---------------------------------------------------------------------- */

static cn_err_t put_str(cn_buf_t *b, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    cn_err_t err = cn_buf_put_u32le(b, (uint32_t)n);
    return err < 0 || !n ? err : cn_buf_append(b, s, n);
}

static cn_err_t put_rule(cn_buf_t *b, const cn_objects_lc_rule_t *r)
{
    cn_err_t err = put_str(b, r->id);
    if (err >= 0)
        err = cn_buf_put_u8(b, r->enabled ? 1 : 0);
    if (err >= 0)
        err = put_str(b, r->prefix);
    if (err >= 0)
        err = cn_buf_put_u8(b, (uint8_t)r->ntags);
    for (size_t i = 0; err >= 0 && i < r->ntags; i++) {
        err = put_str(b, r->tags[i].key);
        if (err >= 0)
            err = put_str(b, r->tags[i].value);
    }
    if (err >= 0)
        err = cn_buf_put_u64le(b, (uint64_t)r->size_gt);
    if (err >= 0)
        err = cn_buf_put_u64le(b, (uint64_t)r->size_lt);
    if (err >= 0)
        err = cn_buf_put_u32le(b, (uint32_t)r->exp_days);
    if (err >= 0)
        err = cn_buf_put_u64le(b, (uint64_t)r->exp_date_ms);
    if (err >= 0)
        err = cn_buf_put_u8(b, r->exp_marker ? 1 : 0);
    if (err >= 0)
        err = cn_buf_put_u32le(b, (uint32_t)r->nc_days);
    if (err >= 0)
        err = cn_buf_put_u32le(b, (uint32_t)r->nc_newer);
    if (err >= 0)
        err = cn_buf_put_u32le(b, (uint32_t)r->abort_days);
    return err;
}

/* The encoder's own check of what it must be able to decode again. */
static bool rules_ok(const cn_objects_lc_rule_t *rules, size_t n)
{
    if (n > CN_OBJECTS_LC_RULES_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        const cn_objects_lc_rule_t *r = &rules[i];
        size_t il = r->id ? strlen(r->id) : 0;
        if (il == 0 || il > CN_OBJECTS_LC_ID_MAX)
            return false;
        if (r->ntags > CN_OBJECTS_TAGS_MAX || (r->ntags && !r->tags))
            return false;
        if ((r->prefix ? strlen(r->prefix) : 0) > CN_OBJECT_KEY_MAX)
            return false;
        for (size_t j = 0; j < i; j++)
            if (strcmp(rules[j].id, r->id) == 0)
                return false;
    }
    return true;
}

cn_err_t cn_objects_lc_encode(const cn_objects_lc_rule_t *rules, size_t n, const char *doc,
                              size_t doc_len, cn_buf_t *out)
{
    if (!rules_ok(rules, n))
        return CN_E_INVALID;
    cn_err_t err = cn_buf_append(out, LC_MAGIC, LC_MAGIC_LEN);
    if (err >= 0)
        err = cn_buf_put_u32le(out, (uint32_t)n);
    for (size_t i = 0; err >= 0 && i < n; i++)
        err = put_rule(out, &rules[i]);
    if (err >= 0 && doc_len)
        err = cn_buf_append(out, doc, doc_len);
    return err < 0 ? err : 0;
}

/* ---- decoding ---------------------------------------------------------------------- */

/* A string of the value, copied NUL-terminated into the arena at *at. */
static const char *get_str(cn_rd_t *rd, char **at, const char *end)
{
    uint32_t n = cn_rd_u32le(rd);
    const uint8_t *p = cn_rd_bytes(rd, n);
    if (rd->err || (size_t)(end - *at) < (size_t)n + 1 || (n && memchr(p, 0, n))) {
        rd->err = CN_E_CORRUPT;
        return "";
    }
    char *s = *at;
    if (n)
        memcpy(s, p, n);
    s[n] = 0;
    *at += n + 1;
    return s;
}

static void get_rule(cn_rd_t *rd, cn_objects_lc_rule_t *r, cn_objects_kv_t *kv, char **at,
                     const char *end)
{
    r->id = get_str(rd, at, end);
    r->enabled = cn_rd_u8(rd) != 0;
    r->prefix = get_str(rd, at, end);
    r->ntags = cn_rd_u8(rd);
    if (r->ntags > CN_OBJECTS_TAGS_MAX) {
        rd->err = CN_E_CORRUPT;
        r->ntags = 0;
    }
    for (size_t i = 0; i < r->ntags; i++) {
        kv[i].key = get_str(rd, at, end);
        kv[i].value = get_str(rd, at, end);
    }
    r->tags = r->ntags ? kv : NULL;
    r->size_gt = (int64_t)cn_rd_u64le(rd);
    r->size_lt = (int64_t)cn_rd_u64le(rd);
    r->exp_days = (int32_t)cn_rd_u32le(rd);
    r->exp_date_ms = (int64_t)cn_rd_u64le(rd);
    r->exp_marker = cn_rd_u8(rd) != 0;
    r->nc_days = (int32_t)cn_rd_u32le(rd);
    r->nc_newer = (int32_t)cn_rd_u32le(rd);
    r->abort_days = (int32_t)cn_rd_u32le(rd);
}

/* One allocation: rules, then their tags, then the strings and the document. */
typedef struct lc_priv {
    cn_objects_kv_t *kv;
    char *arena;
} lc_priv_t;

cn_err_t cn_objects_lc_decode(const void *v, size_t len, cn_objects_lc_t *out)
{
    memset(out, 0, sizeof *out);
    cn_rd_t rd = cn_rd_init(v, len);
    const uint8_t *magic = cn_rd_bytes(&rd, LC_MAGIC_LEN);
    uint32_t n = cn_rd_u32le(&rd);
    if (rd.err || memcmp(magic, LC_MAGIC, LC_MAGIC_LEN) != 0 || n > CN_OBJECTS_LC_RULES_MAX)
        return CN_E_CORRUPT;
    /* Every string is shorter than the value: the arena never outgrows it
     * plus one NUL per string (at most 2 + 2 × tags per rule). */
    size_t nstr = (size_t)n * (2 + 2 * CN_OBJECTS_TAGS_MAX);
    size_t cap = len + nstr + 1;
    cn_objects_lc_rule_t *rules = calloc(n ? n : 1, sizeof *rules);
    cn_objects_kv_t *kv = calloc((size_t)(n ? n : 1) * CN_OBJECTS_TAGS_MAX, sizeof *kv);
    char *arena = malloc(cap);
    lc_priv_t *pv = malloc(sizeof *pv);
    if (!rules || !kv || !arena || !pv) {
        free(rules);
        free(kv);
        free(arena);
        free(pv);
        return -ENOMEM;
    }
    char *at = arena;
    for (uint32_t i = 0; i < n && !rd.err; i++)
        get_rule(&rd, &rules[i], kv + (size_t)i * CN_OBJECTS_TAGS_MAX, &at, arena + cap);
    size_t doc_len = cn_rd_left(&rd);
    const uint8_t *doc = cn_rd_bytes(&rd, doc_len);
    if (rd.err || (size_t)(arena + cap - at) < doc_len + 1) {
        free(rules);
        free(kv);
        free(arena);
        free(pv);
        return CN_E_CORRUPT;
    }
    if (doc_len)
        memcpy(at, doc, doc_len);
    at[doc_len] = 0;
    pv->kv = kv;
    pv->arena = arena;
    out->rules = rules;
    out->nrules = n;
    out->doc = at;
    out->doc_len = doc_len;
    out->priv_ = pv;
    return 0;
}

void cn_objects_lc_free(cn_objects_lc_t *lc)
{
    if (!lc)
        return;
    lc_priv_t *pv = lc->priv_;
    if (pv) {
        free(pv->kv);
        free(pv->arena);
        free(pv);
    }
    free(lc->rules);
    memset(lc, 0, sizeof *lc);
}

/* ---- matching ------------------------------------------------------------------------ */

static bool rule_matches(const cn_objects_lc_rule_t *r, const char *key, uint64_t size,
                         const cn_objects_kv_t *tags, size_t ntags)
{
    size_t pl = r->prefix ? strlen(r->prefix) : 0;
    if (pl && strncmp(key, r->prefix, pl) != 0)
        return false;
    if (r->size_gt >= 0 && !(size > (uint64_t)r->size_gt))
        return false;
    if (r->size_lt >= 0 && !(size < (uint64_t)r->size_lt))
        return false;
    for (size_t i = 0; i < r->ntags; i++) {
        bool found = false;
        for (size_t j = 0; !found && j < ntags; j++)
            found = tags[j].key && strcmp(tags[j].key, r->tags[i].key) == 0 &&
                    strcmp(tags[j].value ? tags[j].value : "", r->tags[i].value) == 0;
        if (!found)
            return false;
    }
    return true;
}

/* The expiry of an object written at mtime under rule r, or -1 for none. */
static int64_t rule_expiry(const cn_objects_lc_rule_t *r, int64_t mtime, int64_t day_ms)
{
    if (r->exp_date_ms > 0)
        return r->exp_date_ms;
    if (r->exp_days <= 0)
        return -1;
    if (day_ms > 0)
        return mtime + (int64_t)r->exp_days * day_ms;
    /* S3: the days are counted from the write, then rounded up to the next
     * midnight UTC. */
    int64_t t = mtime + (int64_t)r->exp_days * DAY_MS;
    int64_t rem = ((t % DAY_MS) + DAY_MS) % DAY_MS;
    return rem ? t - rem + DAY_MS : t;
}

int cn_objects_lc_expiry(const cn_objects_lc_t *lc, const char *key, uint64_t size,
                         const cn_objects_kv_t *tags, size_t ntags, int64_t last_modified_ms,
                         int64_t day_ms, int64_t *expiry_ms, char rule_id[CN_OBJECTS_LC_ID_MAX + 1])
{
    int found = 0;
    for (size_t i = 0; lc && key && i < lc->nrules; i++) {
        const cn_objects_lc_rule_t *r = &lc->rules[i];
        if (!r->enabled || !rule_matches(r, key, size, tags, ntags))
            continue;
        int64_t t = rule_expiry(r, last_modified_ms, day_ms);
        if (t < 0 || (found && t >= *expiry_ms))
            continue;
        *expiry_ms = t;
        cn__strcpy(rule_id, CN_OBJECTS_LC_ID_MAX + 1, r->id, strlen(r->id));
        found = 1;
    }
    return found;
}

/* ---- the setting --------------------------------------------------------------------- */

cn_err_t cn_objects_lifecycle_set(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                  const cn_objects_lc_rule_t *rules, size_t n, const char *doc,
                                  size_t doc_len)
{
    if (!rules && n == 0) {
        cn_err_t err = cn_objects_bucket_attr_set(o, rq, bucket, LC_ATTR,
                                                  CN_ACT_PUT_LIFECYCLE_CONFIGURATION, NULL, 0);
        /* Deleting what is not there is still a success (S3 answers 204). */
        if (err == CN_E_NOT_FOUND && rq->what == CN_OBJ_WHAT_ARG)
            err = 0;
        return err;
    }
    cn_buf_t v = { 0 };
    cn_err_t err = cn_objects_lc_encode(rules, n, doc, doc_len, &v);
    if (err == CN_E_INVALID)
        err = cn__fail_d(rq, CN_E_INVALID, CN_OBJ_WHAT_ARG, CN_OBJ_LIFECYCLE_INVALID,
                         "the lifecycle rules do not validate");
    if (err >= 0)
        err = cn_objects_bucket_attr_set(o, rq, bucket, LC_ATTR, CN_ACT_PUT_LIFECYCLE_CONFIGURATION,
                                         v.data, v.len);
    cn_buf_free(&v);
    return err;
}

cn_err_t cn_objects_lifecycle_get(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                  cn_buf_t *doc)
{
    cn_buf_t v = { 0 };
    cn_err_t err =
        cn_objects_bucket_attr_get(o, rq, bucket, LC_ATTR, CN_ACT_GET_LIFECYCLE_CONFIGURATION, &v);
    cn_objects_lc_t lc;
    if (err >= 0)
        err = cn_objects_lc_decode(v.data, v.len, &lc);
    if (err >= 0) {
        err = cn_buf_append(doc, lc.doc, lc.doc_len);
        cn_objects_lc_free(&lc);
    }
    cn_buf_free(&v);
    return err < 0 ? err : 0;
}

/* Whether a rule that could expire an object of key and size filters on
 * tags: then its tags must be read before the matcher can answer. */
static bool needs_tags(const cn_objects_lc_t *lc, const char *key, uint64_t size)
{
    for (size_t i = 0; i < lc->nrules; i++) {
        const cn_objects_lc_rule_t *r = &lc->rules[i];
        if (r->enabled && r->ntags && (r->exp_days > 0 || r->exp_date_ms > 0) &&
            rule_matches(r, key, size, r->tags, r->ntags))
            return true;
    }
    return false;
}

typedef struct tags_peek {
    int64_t version_id;
    cn_objects_tagset_t *ts;
} tags_peek_t;

static cn_err_t tags_peek_body(cn_meta_txn_t *txn, void *ctx)
{
    const tags_peek_t *tp = ctx;
    return cn__obj_tags_read(txn, tp->version_id, tp->ts);
}

/* ---- owner and rules cached per bucket settings generation ---------------------------
 * A bucket's owner and decoded rules (or their absence), filed under the
 * settings word of the bucket's slot (gen.c, invariant 6) read before the
 * SQL that read them: found only while no settings write (create, delete,
 * a named setting) has touched the bucket since, so a changed rule or a
 * bucket made again is never answered stale, while object writes, which do
 * not move that word, leave the entry usable. */
typedef struct lc_ent {
    cn_cent_t ent; /* key = bucket name; version = (settings generation, 0) */
    char owner[CN_ACCOUNT_NAME_MAX + 1];
    bool has;
    cn_objects_lc_t lc;
    char name[];
} lc_ent_t;

static void lc_ent_destroy(cn_cent_t *e)
{
    lc_ent_t *le = (lc_ent_t *)e;
    cn_objects_lc_free(&le->lc);
    free(le);
}

/* Whether the words are this machine's memory: PostgreSQL's are rows, and
 * reading one is SQL (gen.c, rows mode).  Where the words live, not whether
 * writers can race, so not cn_meta_single_writer (head.c's
 * cn__objhead_init chooses the mode by the same engine name). */
static bool words_local(const cn_objects_t *o)
{
    return !strcmp(cn_meta_engine(o->meta), "sqlite");
}

/* bucket's cached entry under its slot's settings word w (0: the current
 * one, read now), held, or NULL. */
static const lc_ent_t *lc_find_at(cn_objects_t *o, const char *bucket, uint64_t w)
{
    if (!o->gen || !bucket)
        return NULL;
    if (!w)
        w = cn__gen_sload(o->gen, cn__gen_slot(bucket));
    return cn__gen_quiet(w) ? (const lc_ent_t *)cn_cache_find(&o->lcs, bucket, strlen(bucket),
                                                              (int64_t)(w >> 32), 0)
                            : NULL;
}

static const lc_ent_t *lc_find(cn_objects_t *o, const char *bucket)
{
    return lc_find_at(o, bucket, 0);
}

/* A new entry for bucket (held once by the caller) with what one read
 * transaction begun after the settings word was read found, offered to the
 * cache under that word when it was quiet (gen.c, invariants 2 and 6).
 * cn_objects_bucket_peek's errors, CN_E_CORRUPT, -ENOMEM. */
static cn_err_t lc_read(cn_objects_t *o, const char *bucket, const lc_ent_t **out)
{
    *out = NULL;
    if (!bucket)
        return CN_E_INVALID;
    size_t bl = strlen(bucket);
    lc_ent_t *le = calloc(1, sizeof *le + bl + 1);
    if (!le)
        return -ENOMEM;
    atomic_init(&le->ent.refs, 1);
    le->ent.destroy = lc_ent_destroy;
    /* Read before the SQL: what it read is filed under this word. */
    uint64_t stamp = o->gen ? cn__gen_sload(o->gen, cn__gen_slot(bucket)) : 1;
    cn_buf_t v = { 0 };
    cn_err_t err = cn__bkt_peek_sql(o, bucket, le->owner, LC_ATTR, &v, &le->has);
    if (err >= 0 && le->has)
        err = cn_objects_lc_decode(v.data, v.len, &le->lc);
    size_t vlen = v.len;
    cn_buf_free(&v);
    if (err < 0) {
        cn_cent_release(&le->ent);
        return err;
    }
    memcpy(le->name, bucket, bl + 1);
    le->ent.key = le->name;
    le->ent.klen = bl;
    le->ent.hash = cn_cache_hash(bucket, bl);
    le->ent.v1 = (int64_t)(stamp >> 32);
    le->ent.cost = sizeof *le + bl + 2 * vlen;
    if (o->gen && cn__gen_quiet(stamp))
        cn_cache_offer(&o->lcs, &le->ent);
    *out = le;
    return 0;
}

cn_err_t cn__bkt_owner(cn_objects_t *o, const char *bucket, char owner[CN_ACCOUNT_NAME_MAX + 1])
{
    owner[0] = 0;
    if (!o->gen || !words_local(o)) /* no cache, or one that costs SQL itself */
        return cn__bkt_peek_sql(o, bucket, owner, NULL, NULL, NULL);
    const lc_ent_t *le = lc_find(o, bucket);
    cn_err_t err = le ? 0 : lc_read(o, bucket, &le);
    if (err >= 0)
        cn__strcpy(owner, CN_ACCOUNT_NAME_MAX + 1, le->owner, strlen(le->owner));
    cn_cent_release((cn_cent_t *)le);
    return err < 0 ? err : CN_OK;
}

int cn_objects_lifecycle_expiry_cached(cn_objects_t *o, const char *bucket, const char *key,
                                       uint64_t size, uint32_t ntags, int64_t last_modified_ms,
                                       int64_t *expiry_ms, char rule_id[CN_OBJECTS_LC_ID_MAX + 1])
{
    /* Never SQL on the loop: not even a rows-mode word's read. */
    const lc_ent_t *le = key && words_local(o) ? lc_find(o, bucket) : NULL;
    int found = 0;
    if (!le)
        found = CN_E_AGAIN;
    else if (le->has && ntags && needs_tags(&le->lc, key, size))
        found = CN_E_AGAIN; /* the version's tags are SQL's to read */
    else if (le->has)
        found = cn_objects_lc_expiry(&le->lc, key, size, NULL, 0, last_modified_ms,
                                     atomic_load(&o->lc_day_ms), expiry_ms, rule_id);
    cn_cent_release((cn_cent_t *)le);
    return found;
}

/* The answer of rules lc for version_id of key: its tags read when a rule
 * that could match filters on them. */
static int lc_answer(cn_objects_t *o, const cn_objects_lc_t *lc, const char *key, uint64_t size,
                     int64_t version_id, int64_t last_modified_ms, int64_t *expiry_ms,
                     char rule_id[CN_OBJECTS_LC_ID_MAX + 1])
{
    cn_objects_tagset_t ts = { 0 };
    cn_err_t err = 0;
    if (version_id && needs_tags(lc, key, size)) {
        tags_peek_t tp = { version_id, &ts };
        err = cn_meta_run(o->meta, CN_META_RUN_READ | CN_META_RETRY, tags_peek_body, &tp);
    }
    int found = err < 0 ? err
                        : cn_objects_lc_expiry(lc, key, size, ts.tags, ts.ntags, last_modified_ms,
                                               atomic_load(&o->lc_day_ms), expiry_ms, rule_id);
    cn_objects_tagset_free(&ts);
    return found;
}

int cn_objects_lifecycle_expiry(cn_objects_t *o, const char *bucket, const char *key, uint64_t size,
                                int64_t version_id, int64_t last_modified_ms, int64_t *expiry_ms,
                                char rule_id[CN_OBJECTS_LC_ID_MAX + 1])
{
    return cn_objects_lifecycle_expiry_under(o, bucket, 0, key, size, version_id, last_modified_ms,
                                             expiry_ms, rule_id);
}

int cn_objects_lifecycle_expiry_under(cn_objects_t *o, const char *bucket, uint64_t word,
                                      const char *key, uint64_t size, int64_t version_id,
                                      int64_t last_modified_ms, int64_t *expiry_ms,
                                      char rule_id[CN_OBJECTS_LC_ID_MAX + 1])
{
    /* The rules cached under the bucket's current settings generation (or
     * under word, rows mode, where it is the same row: gen.c, 6): no SQL
     * for them.  A word of the caller's that was not quiet finds nothing. */
    const lc_ent_t *le = key ? lc_find_at(o, bucket, word) : NULL;
    cn_err_t err = le ? 0 : lc_read(o, bucket, &le);
    int found = 0;
    if (err >= 0 && le->has)
        found = lc_answer(o, &le->lc, key, size, version_id, last_modified_ms, expiry_ms, rule_id);
    cn_cent_release((cn_cent_t *)le);
    return err < 0 ? err : found;
}
