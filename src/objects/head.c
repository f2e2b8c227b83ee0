/* The object-head cache: what a current-version GET or HEAD needs to answer
 * without a read transaction (the version's info, its segments, the
 * bucket's compiled settings and the version's access facts), filed under
 * the bucket's write-generation word and served only while the slot still
 * holds that word (gen.c's invariants say why that is never stale for an
 * acknowledged write, in any process on the data dir).
 *
 * This file must never decide access (callers authorize every request
 * against the cached settings), and never file a head under a word read
 * after the transaction that produced it began, or under a word with a
 * writer in flight. */
#include "objects_int.h"

#include "cairn/metrics.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define HEAD_SLOTS 65536        /* entries (pointers: 512 KiB); HEAD_BUDGET bounds the rest */
#define HEAD_BUDGET (32u << 20) /* bytes of entries */
#define HEAD_KEY_MAX (CN_BUCKET_NAME_MAX + 1 + CN_OBJECT_KEY_MAX)

static const cn_metric_family_t head_hits = {
    "cairn_objects_head_cache_hits_total",
    "Current-version GETs and HEADs answered from the object-head cache, with no SQL",
    CN_METRIC_COUNTER, NULL, 0
};
static const cn_metric_family_t head_misses = {
    "cairn_objects_head_cache_misses_total",
    "Current-version GETs and HEADs the object-head cache could not answer", CN_METRIC_COUNTER,
    NULL, 0
};

cn_err_t cn__objhead_init(cn_objects_t *o, const char *data_dir)
{
    /* SQLite: the data dir's shared word file; PostgreSQL: the words are
     * rows bumped by each write's own transaction (gen.c, rows mode). */
    bool rows = !strcmp(cn_meta_engine(o->meta), "postgres");
    bool on = data_dir && (rows || !strcmp(cn_meta_engine(o->meta), "sqlite"));
    cn_err_t err = cn_cache_init(&o->heads, on ? HEAD_SLOTS : 0, HEAD_BUDGET);
    if (err >= 0 && on)
        err = rows ? cn__gen_open_rows(o->meta, &o->gen) : cn__gen_open(data_dir, &o->gen);
    if (err >= 0 && on) {
        o->head_hits = cn_metric_series(NULL, &head_hits, NULL);
        o->head_misses = cn_metric_series(NULL, &head_misses, NULL);
    }
    return err;
}

void cn__objhead_destroy(cn_objects_t *o)
{
    cn_cache_destroy(&o->heads);
    cn__gen_close(o->gen);
    o->gen = NULL;
}

/* A quiet word's version for the cache: its generation, which a later
 * filing of the same key only ever raises (until it wraps: gen.c's
 * invariant 5), so a newer head replaces an older one. */
static int64_t head_version(uint64_t stamp)
{
    return (int64_t)(stamp >> 32);
}

/* bucket NUL key into buf (HEAD_KEY_MAX bytes): its length, 0 if either is
 * missing or too long (never cached). */
static size_t head_key(char *buf, const char *bucket, const char *key)
{
    if (!bucket || !key)
        return 0;
    size_t bl = strlen(bucket), kl = strlen(key);
    if (bl > CN_BUCKET_NAME_MAX || kl > CN_OBJECT_KEY_MAX)
        return 0;
    memcpy(buf, bucket, bl);
    buf[bl] = 0;
    memcpy(buf + bl + 1, key, kl);
    return bl + 1 + kl;
}

const cn__objhead_t *cn__objhead_find(cn_objects_t *o, const char *bucket, const char *key,
                                      cn__hstamp_t *stamp)
{
    *stamp = (cn__hstamp_t){ 0, 0 };
    if (!o->gen)
        return NULL;
    char kb[HEAD_KEY_MAX];
    size_t kl = head_key(kb, bucket, key);
    cn_cent_t *e = NULL;
    if (!cn__gen_local(o->gen) && (!kl || !cn_cache_has(&o->heads, kb, kl))) {
        *stamp = cn__gen_hstamp_rows(-1, -1); /* read with the key (gen.c) */
        cn_metric_add(o->head_misses, 1);
        return NULL;
    }
    *stamp = cn__gen_hload(o->gen, cn__gen_slot(bucket), cn__gen_kslot(o->gen, bucket, key));
    /* A word with a writer in flight was never filed under (invariant 2). */
    if (kl && cn__gen_quiet(stamp->w))
        e = cn_cache_find(&o->heads, kb, kl, head_version(stamp->w), 0);
    cn_metric_add(e ? o->head_hits : o->head_misses, 1);
    return (const cn__objhead_t *)e;
}

bool cn__objhead_current(const cn_objects_t *o, const char *bucket, const char *key, uint64_t stamp)
{
    return o->gen &&
           cn__gen_hload(o->gen, cn__gen_slot(bucket), cn__gen_kslot(o->gen, bucket, key)).w ==
               stamp;
}

static void head_destroy(cn_cent_t *e)
{
    cn__objhead_t *h = (cn__objhead_t *)e;
    cn__bkt_release(h->b);
    cn__objacl_free(&h->acl);
    cn_objects_info_free(&h->info);
    free(h->segs);
    free(h);
}

void cn__objhead_release(const cn__objhead_t *h)
{
    if (h)
        cn_cent_release((cn_cent_t *)&h->ent);
}

cn_err_t cn__info_copy(cn_object_info_t *dst, const cn_object_info_t *src)
{
    *dst = *src;
    dst->content_type = NULL;
    dst->meta = NULL;
    dst->priv_ = NULL;
    dst->nmeta = 0;
    /* The same layout as cn__info_fill: the kv array, then the strings. */
    size_t need = src->nmeta * sizeof(cn_objects_kv_t);
    for (size_t i = 0; i < src->nmeta; i++)
        need += strlen(src->meta[i].key) + strlen(src->meta[i].value) + 2;
    const char *ct = src->content_type ? src->content_type : "";
    dst->content_type = cn__strndup(ct, strlen(ct));
    char *blk = src->nmeta ? malloc(need) : NULL;
    if (!dst->content_type || (src->nmeta && !blk)) {
        free(blk);
        cn_objects_info_free(dst);
        memset(dst, 0, sizeof *dst);
        return -ENOMEM;
    }
    if (!src->nmeta)
        return 0;
    cn_objects_kv_t *kv = (cn_objects_kv_t *)blk;
    char *s = blk + src->nmeta * sizeof(cn_objects_kv_t);
    for (size_t i = 0; i < src->nmeta; i++) {
        const char *side[2] = { src->meta[i].key, src->meta[i].value };
        for (int j = 0; j < 2; j++) {
            size_t l = strlen(side[j]) + 1;
            memcpy(s, side[j], l);
            if (j == 0)
                kv[i].key = s;
            else
                kv[i].value = s;
            s += l;
        }
    }
    dst->priv_ = blk;
    dst->meta = kv;
    dst->nmeta = src->nmeta;
    return 0;
}

void cn__objhead_offer(cn_objects_t *o, const char *bucket, const char *key, cn__hstamp_t stamp,
                       const cn__bkt_t *b, const cn__objacl_t *acl, int64_t bucket_id,
                       const cn_object_info_t *info, const cn__hseg_t *segs, size_t nsegs)
{
    char kb[HEAD_KEY_MAX];
    size_t kl = o->gen && cn__gen_quiet(stamp.w) ? head_key(kb, bucket, key) : 0;
    if (!kl)
        return;
    cn__objhead_t *h = calloc(1, sizeof *h + kl);
    if (!h)
        return;
    atomic_init(&h->ent.refs, 1);
    h->ent.destroy = head_destroy;
    memcpy(h->kbuf, kb, kl);
    h->ent.key = h->kbuf;
    h->ent.klen = kl;
    h->ent.hash = cn_cache_hash(kb, kl);
    h->ent.v1 = head_version(stamp.w);
    h->stamp = stamp.w;
    h->bword = stamp.b;
    h->bucket_id = bucket_id;
    atomic_fetch_add_explicit((atomic_uint *)&b->ent.refs, 1, memory_order_relaxed);
    h->b = b;
    h->acl = *acl;
    if (acl->ref)
        atomic_fetch_add_explicit(&acl->ref->refs, 1, memory_order_relaxed);
    h->segs = nsegs ? malloc(nsegs * sizeof *segs) : NULL;
    cn_err_t err = nsegs && !h->segs ? -ENOMEM : cn__info_copy(&h->info, info);
    if (err >= 0) {
        if (nsegs)
            memcpy(h->segs, segs, nsegs * sizeof *segs);
        h->nsegs = nsegs;
        h->ent.cost = sizeof *h + kl + nsegs * sizeof *segs + info->nmeta * 64 +
                      (info->content_type ? strlen(info->content_type) : 0);
        cn_cache_offer(&o->heads, &h->ent);
    }
    cn_cent_release(&h->ent);
}
