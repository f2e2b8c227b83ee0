/* Streaming puts: PutObject and UploadPart share one session type.  Bytes go
 * straight into a store writer (which hashes BLAKE3) while SHA-256 and MD5 are
 * computed here (SHA-256 not when the caller hands over a digest it verified
 * itself: sha256_verified); commit publishes the blob, then commits the rows
 * that make it visible.  Nothing is visible before that commit (objects.c,
 * invariants).  A committed part is handed to its upload's running SHA-256
 * (mpu_chain.c) before the answer; a part that began when that chain covered
 * every part before it feeds a copy of the chain as it streams (a feed), so
 * the chain need not read it back.
 *
 * A large body hashes beside the write, one slot behind it (the lane): its
 * bytes are copied into one of two LANE_SLOT buffers, and a full slot's MD5
 * and SHA-256 run on the service's shared hashing pool (a side pool,
 * cairn/side.h) while the caller's thread goes back for the next bytes,
 * copies them into the store, hashes BLAKE3 and fills the other slot.  So a body is bound by its slowest
 * hash, not by that hash plus the socket; the caller's buffer is never read
 * after the call.  Lane invariants:
 *   L1. Bytes reach every digest in body order: once a session's lane is on,
 *       every byte goes through it (lane_write), and a slot is hashed only
 *       after the jobs of the slot before it are done (lane_flush waits hs).
 *   L2. Jobs in flight read only the slot being hashed and the digest states;
 *       the caller fills the other slot.  Nothing of p is freed, finalised or
 *       copied while a job may run: commit, put_sha256 and free drain first.
 * Small bodies hash inline: no hand-off or copy for a 4 KiB PUT.  Must never
 * hash a byte twice. */
#include "objects_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bodies from CN_OBJECTS_PUT_BESIDE_MIN hash beside the write, in the lane
 * (below it a hand-off costs more than it saves).  A lane slot: large enough
 * that a hand-off (a wake-up) is rare against the MD5 of its bytes, small
 * enough that two per large put stay cheap. */
#define LANE_SLOT ((size_t)256 << 10)

typedef enum {
    CN_OBJ_PUT_OBJECT = 1,
    CN_OBJ_PUT_PART = 2
} cn_obj_put_kind_t;

struct cn_objects_put {
    cn_objects_t *o;
    cn_objects_req_t *rq; /* borrowed: the session lives within one request */
    cn_obj_put_kind_t kind;
    int64_t bucket_id;
    char bucket[CN_BUCKET_NAME_MAX + 1];
    char *key;
    /* object puts */
    char *content_type;
    cn_buf_t umeta;
    cn_buf_t acl;
    char owner[CN_ACCOUNT_NAME_MAX + 1];
    uint64_t lc_word; /* the settings word put_begin's read saw (rows mode) */
    bool key_seen;    /* and whether key had a current version then */
    bool skip_etag;
    bool if_none_match;
    char *if_match;
    cn_objects_kv_t *tags; /* one block (cn__tags_copy) */
    size_t ntags;
    bool has_retention;
    cn_objects_retention_t retention;
    /* parts */
    char upload_id[CN_UPLOAD_ID_MAX + 1];
    int32_t part_number;
    char cksum_alg[CN_OBJECTS_CKSUM_ALG_MAX]; /* the upload's; "" none */
    char cksum[CN_OBJECTS_CKSUM_MAX];         /* the part's, set by the adapter */
    /* integrity */
    bool has_md5, has_sha;
    bool sha_given; /* want_sha is the body's, verified by the caller: no sha */
    uint8_t want_md5[CN_MD5_LEN];
    uint8_t want_sha[CN_DIGEST_LEN];
    /* the stream */
    int64_t declared;
    uint64_t limit;
    uint64_t n;
    cn_store_writer_t *w;
    cn_sha256_t *sha;
    cn_md5_t *md5;
    cn_side_set_t hs;  /* MD5 and SHA-256 jobs on the pool: the lane's last slot */
    uint8_t *slot[2];  /* the lane (NULL: off); slot[cur] is filling */
    bool lane_refused; /* its memory was refused once: this body hashes inline */
    size_t fill;
    unsigned cur;
    cn__chain_feed_t feed; /* a part's continuation of its upload's chain */
    cn_sha256_t *own_sha;  /* part 1 without a feed: the state the chain takes */
    cn_err_t err;          /* sticky */
};

static void md5_job(void *h, const void *p, size_t n)
{
    cn_md5_update(h, p, n);
}

static void sha256_job(void *h, const void *p, size_t n)
{
    cn_sha256_update(h, p, n);
}

static void obj_put_free(cn_objects_put_t *p)
{
    if (!p)
        return;
    cn_side_wait(p->o->hashpool, &p->hs); /* L2 */
    free(p->slot[0]);
    free(p->slot[1]);
    cn__chain_feed_end(p->o, p->upload_id, &p->feed);
    cn_store_writer_abort(p->w);
    cn_side_set_destroy(&p->hs);
    cn_sha256_free(p->own_sha);
    cn_sha256_free(p->sha);
    cn_md5_free(p->md5);
    free(p->key);
    free(p->content_type);
    free(p->if_match);
    free(p->tags);
    cn_buf_free(&p->umeta);
    cn_buf_free(&p->acl);
    free(p);
}

void cn_objects_put_abort(cn_objects_put_t *p)
{
    obj_put_free(p);
}

static cn_err_t obj_put_new(cn_objects_t *o, cn_objects_req_t *rq, cn_obj_put_kind_t kind,
                            const char *key, const cn_objects_put_args_t *args, int64_t size,
                            cn_objects_put_t **out)
{
    *out = NULL;
    if (size >= 0 && (uint64_t)size > o->opts.max_object_bytes)
        return cn__fail(rq, CN_E_TOO_LARGE, CN_OBJ_WHAT_ARG,
                        "body of %lld bytes exceeds the limit of %llu", (long long)size,
                        (unsigned long long)o->opts.max_object_bytes);
    cn_objects_put_t *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    p->o = o;
    p->rq = rq;
    p->kind = kind;
    cn_side_set_init(&p->hs);
    p->declared = size;
    p->limit = o->opts.max_object_bytes;
    p->key = cn__strndup(key, strlen(key));
    cn_err_t err = p->key ? 0 : -ENOMEM;
    if (err >= 0 && args) {
        if (args->expect_md5) {
            p->has_md5 = true;
            memcpy(p->want_md5, args->expect_md5, CN_MD5_LEN);
        }
        if (args->expect_sha256) {
            p->has_sha = true;
            p->sha_given = args->sha256_verified;
            memcpy(p->want_sha, args->expect_sha256, CN_DIGEST_LEN);
        }
    }
    if (err >= 0 && !p->sha_given)
        err = cn_sha256_new(&p->sha);
    /* No MD5 for an object put that asks for no ETag and sends no
     * Content-MD5: nothing else reads it, and it is the one hash that runs
     * at half the disk's speed (docs/performance.md). */
    bool md5_wanted = kind == CN_OBJ_PUT_PART || !args || !args->skip_etag || p->has_md5;
    if (err >= 0 && md5_wanted)
        err = cn_md5_new(&p->md5);
    if (err >= 0)
        err = cn_store_writer_open(o->store, NULL, size, &p->w);
    /* Raw files, so that a GET can go out by sendfile(2). */
    if (err >= 0)
        err = cn_store_writer_set_form(p->w, CN_STORE_RAW);
    if (err == CN_E_TOO_LARGE)
        err = cn__fail(rq, err, CN_OBJ_WHAT_ARG, "body exceeds the store's limit");
    if (err < 0) {
        obj_put_free(p);
        return err;
    }
    *out = p;
    return 0;
}

/* What a put or part session opens on in its bucket: the checks run in one
 * read snapshot, and the bucket facts the session keeps. */
typedef struct put_open {
    cn_objects_t *o;
    const char *key;
    const cn_objects_put_args_t *args;
    const char *upload_id; /* a part's upload */
    int32_t part_number;
    int64_t bucket_id;
    char bucket[CN_BUCKET_NAME_MAX + 1];
    char owner[CN_ACCOUNT_NAME_MAX + 1];
    char alg[CN_OBJECTS_CKSUM_ALG_MAX];
} put_open_t;

static void put_open_keep(put_open_t *po, const cn__bkt_t *b)
{
    po->bucket_id = b->id;
    snprintf(po->bucket, sizeof po->bucket, "%s", b->name);
    snprintf(po->owner, sizeof po->owner, "%s", b->owner);
}

static cn_err_t put_open_body(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b,
                              void *ctx)
{
    put_open_t *po = ctx;
    put_open_keep(po, b);
    cn_err_t err = cn__key_check(rq, po->key);
    if (err >= 0)
        err = cn__put_authorize(rq, b, po->key, po->args);
    if (err >= 0)
        err = cn__lock_put_check(txn, rq, b, po->args);
    return err;
}

cn_err_t cn_objects_put_begin(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                              const char *key, const cn_objects_put_args_t *args, int64_t size,
                              cn_objects_put_t **out)
{
    *out = NULL;
    cn_err_t err = cn__put_args_check(rq, args);
    if (err < 0)
        return err;
    put_open_t po = { .o = o, .key = key, .args = args };
    cn__bkt_peek_t pk = { .key = key };
    /* One statement when the bucket's entry is cached at its generation
     * (cn_meta_run starts over as a plain read otherwise). */
    err = cn__bkt_run_peek(o, rq, bucket, CN_ACT_INVALID,
                           CN_META_RUN_READ | CN_META_RUN_ONE | CN_META_RETRY, put_open_body, &po,
                           &pk);
    if (err < 0)
        return err;
    cn_objects_put_t *p = NULL;
    err = obj_put_new(o, rq, CN_OBJ_PUT_OBJECT, key, args, size, &p);
    if (err < 0)
        return err;
    p->lc_word = pk.word;
    p->key_seen = pk.key_seen;
    p->bucket_id = po.bucket_id;
    snprintf(p->bucket, sizeof p->bucket, "%s", po.bucket);
    const char *owner = cn__principal_name(rq);
    snprintf(p->owner, sizeof p->owner, "%s", owner ? owner : po.owner);
    const char *ct = args && args->content_type ? args->content_type : "application/octet-stream";
    p->content_type = cn__strndup(ct, strlen(ct));
    if (!p->content_type)
        err = -ENOMEM;
    if (err >= 0 && args) {
        p->skip_etag = args->skip_etag;
        p->if_none_match = args->if_none_match;
        if (args->if_match && !(p->if_match = cn__strndup(args->if_match, strlen(args->if_match))))
            err = -ENOMEM;
        if (err >= 0)
            err = cn__umeta_encode(args->meta, args->nmeta, &p->umeta);
        if (err >= 0)
            err = cn__acl_for_put(args->acl, p->owner, &p->acl);
        if (err >= 0)
            err = cn__tags_copy(args->tags, args->ntags, &p->tags);
        p->ntags = p->tags ? args->ntags : 0;
        if (args->retention) {
            p->has_retention = true;
            p->retention = *args->retention;
        }
    }
    if (err < 0)
        obj_put_free(p);
    else
        *out = p;
    return err;
}

static cn_err_t part_open_body(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b,
                               void *ctx)
{
    put_open_t *po = ctx;
    put_open_keep(po, b);
    cn_err_t err =
        cn__upload_access(po->o, txn, rq, b, po->key, po->upload_id, CN_ACT_PUT_OBJECT, po->alg);
    if (err >= 0 && (po->part_number < 1 || po->part_number > CN_PART_NUMBER_MAX))
        err = cn__fail_d(rq, CN_E_INVALID, CN_OBJ_WHAT_PART, CN_OBJ_PART_NUMBER_INVALID,
                         "part number must be 1..%d", CN_PART_NUMBER_MAX);
    return err;
}

cn_err_t cn_objects_part_begin(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                               const char *key, const char *upload_id, int32_t part_number,
                               const cn_objects_put_args_t *args, int64_t size,
                               cn_objects_put_t **out)
{
    *out = NULL;
    put_open_t po = { .o = o, .key = key, .upload_id = upload_id, .part_number = part_number };
    cn_err_t err = cn__bkt_run(o, rq, bucket, CN_ACT_INVALID, CN_META_RUN_READ | CN_META_RETRY,
                               part_open_body, &po);
    cn_objects_put_t *p = NULL;
    if (err >= 0)
        err = obj_put_new(o, rq, CN_OBJ_PUT_PART, key, args, size, &p);
    if (err >= 0) {
        p->bucket_id = po.bucket_id;
        snprintf(p->bucket, sizeof p->bucket, "%s", po.bucket);
        snprintf(p->upload_id, sizeof p->upload_id, "%s", upload_id);
        p->part_number = part_number;
        memcpy(p->cksum_alg, po.alg, sizeof p->cksum_alg);
        /* Part 1 with its own SHA-256 hands that over (nothing to feed). */
        if (part_number > 1 || !p->sha)
            cn__chain_feed_begin(o, upload_id, part_number, &p->feed);
        *out = p;
    }
    return err;
}

/* The hashes of buf that an idle pool thread can take go there (MD5 first,
 * the slowest), the rest run here; the jobs join p->hs. */
static void hash_beside(cn_objects_put_t *p, const void *buf, size_t n)
{
    cn_side_t *hp = p->o->hashpool;
    cn_sha256_t *feed = p->feed.sha;
    bool md5_out = p->md5 && cn_side_run(hp, &p->hs, md5_job, p->md5, buf, n, false);
    bool sha_out = p->sha && cn_side_run(hp, &p->hs, sha256_job, p->sha, buf, n, false);
    bool feed_out = feed && cn_side_run(hp, &p->hs, sha256_job, feed, buf, n, false);
    if (!sha_out && p->sha)
        cn_sha256_update(p->sha, buf, n);
    if (!feed_out && feed)
        cn_sha256_update(feed, buf, n);
    if (!md5_out && p->md5)
        cn_md5_update(p->md5, buf, n);
}

/* Hashes the filling slot once the slot before it is done (L1), and turns
 * to the other. */
static void lane_flush(cn_objects_put_t *p)
{
    if (!p->fill)
        return;
    cn_side_wait(p->o->hashpool, &p->hs);
    hash_beside(p, p->slot[p->cur], p->fill);
    p->cur ^= 1;
    p->fill = 0;
}

/* Every byte written so far is in every digest, and no job runs (L2). */
static void lane_drain(cn_objects_put_t *p)
{
    if (!p->slot[0])
        return;
    lane_flush(p);
    cn_side_wait(p->o->hashpool, &p->hs);
}

static void lane_write(cn_objects_put_t *p, const uint8_t *buf, size_t n)
{
    while (n) {
        size_t k = n < LANE_SLOT - p->fill ? n : LANE_SLOT - p->fill;
        memcpy(p->slot[p->cur] + p->fill, buf, k);
        p->fill += k;
        buf += k;
        n -= k;
        if (p->fill == LANE_SLOT)
            lane_flush(p);
    }
}

/* Turns the lane on for a large body (false: memory is short, and the body
 * hashes inline). */
static bool lane_on(cn_objects_put_t *p)
{
    if (p->slot[0])
        return true;
    if (p->lane_refused) /* not asked again at every write of the body */
        return false;
    p->slot[0] = malloc(LANE_SLOT);
    p->slot[1] = p->slot[0] ? malloc(LANE_SLOT) : NULL;
    if (!p->slot[1]) {
        free(p->slot[0]);
        p->slot[0] = NULL;
        p->lane_refused = true;
    }
    return p->slot[0] != NULL;
}

cn_err_t cn_objects_put_write(cn_objects_put_t *p, const void *buf, size_t n)
{
    if (p->err)
        return p->err;
    if (n > p->limit - p->n) {
        p->err = cn__fail(p->rq, CN_E_TOO_LARGE, CN_OBJ_WHAT_ARG, "body exceeds the limit of %llu",
                          (unsigned long long)p->limit);
        return p->err;
    }
    if (p->declared >= 0 && n > (uint64_t)p->declared - p->n) {
        p->err = CN_E_LENGTH_MISMATCH;
        return p->err;
    }
    uint64_t body = p->declared >= 0 ? (uint64_t)p->declared : p->n + n;
    cn_side_t *hp = p->o->hashpool;
    bool large = hp && body >= CN_OBJECTS_PUT_BESIDE_MIN;
    cn_err_t err = cn_store_writer_write(p->w, buf, n);
    if (err >= 0 && (p->slot[0] || (large && lane_on(p)))) {
        lane_write(p, buf, n); /* L1: on stays on */
    } else if (err >= 0) {
        if (p->sha)
            cn_sha256_update(p->sha, buf, n);
        if (p->feed.sha)
            cn_sha256_update(p->feed.sha, buf, n);
        if (p->md5)
            cn_md5_update(p->md5, buf, n);
    }
    if (err < 0) {
        p->err = err;
        return err;
    }
    p->n += n;
    return 0;
}

uint64_t cn_objects_put_len(const cn_objects_put_t *p)
{
    return p->n;
}

cn_err_t cn_objects_put_sha256(cn_objects_put_t *p, uint8_t out[CN_DIGEST_LEN])
{
    if (p->err)
        return p->err;
    if (!p->sha)
        return CN_E_INVALID;
    lane_drain(p);
    cn_sha256_t *h = NULL;
    cn_err_t err = cn_sha256_copy(p->sha, &h);
    if (err < 0)
        return err;
    cn_sha256_final(h, out);
    return 0;
}

const char *cn_objects_put_checksum_alg(const cn_objects_put_t *p)
{
    return p->kind == CN_OBJ_PUT_PART && p->cksum_alg[0] ? p->cksum_alg : NULL;
}

cn_err_t cn_objects_put_set_checksum(cn_objects_put_t *p, const char *b64)
{
    if (!cn_objects_put_checksum_alg(p) || !b64 || strlen(b64) >= sizeof p->cksum)
        return CN_E_INVALID;
    snprintf(p->cksum, sizeof p->cksum, "%s", b64);
    return 0;
}

/* Inserts the one segment of a put, and its version row unless claimed
 * (the claim inserted it). */
static cn_err_t obj_put_rows(cn_meta_txn_t *txn, cn_objects_put_t *p, int64_t vid,
                             const cn_digest_t *d, const cn_objects_put_result_t *r, bool claimed)
{
    cn_err_t err =
        cn_meta_pushf(txn, cn__sql_obj[CN_SQL_OBJ_SEGMENT_INSERT_PUT], "ibiss", vid,
                      (const void *)d->b, sizeof d->b, (int64_t)r->size, r->etag, r->sha256);
    if (err < 0 || claimed)
        return err < 0 ? err : 0;
    /* umeta last: SQL NULL when empty ('n' takes no argument, so the
     * pointer and length after it go unread). */
    return cn_meta_pushf(txn, cn__sql_obj[CN_SQL_OBJ_VERSION_INSERT_PUT],
                         p->umeta.len ? "iibisssistb" : "iibisssistn", vid, p->bucket_id,
                         (const void *)p->key, strlen(p->key), (int64_t)r->size, r->etag, r->sha256,
                         p->content_type, r->last_modified_ms, p->owner,
                         (const char *)(p->acl.len ? p->acl.data : NULL), p->acl.len,
                         (const void *)p->umeta.data, p->umeta.len);
}

/* A put's commit: the session, its published blob, and its result. */
typedef struct put_commit {
    cn_objects_put_t *p;
    const cn_digest_t *d;
    cn_objects_put_result_t *r;
    bool claimed; /* the version row is in: commit_object_claim made it */
} put_commit_t;

/* The new version's rows (cn__obj_version_make's rows callback). */
static cn_err_t commit_object_rows(cn_meta_txn_t *txn, void *ctx, int64_t vid)
{
    const put_commit_t *pc = ctx;
    pc->r->version_id = vid;
    return obj_put_rows(txn, pc->p, vid, pc->d, pc->r, pc->claimed);
}

/* The version row of a new key (cn__obj_version_make's claim callback). */
static int commit_object_claim(cn_meta_txn_t *txn, void *ctx, int64_t *vid)
{
    put_commit_t *pc = ctx;
    const cn_objects_put_t *p = pc->p;
    const cn_objects_put_result_t *r = pc->r;
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_queryf(
        txn, &st, cn_meta_batch_text(txn, &cn__sql_obj_engine[CN_SQL_OBJ_E_VERSION_CLAIM]),
        p->umeta.len ? "ibisssistinnb" : "ibisssistinnn", p->bucket_id, (const void *)p->key,
        strlen(p->key), (int64_t)r->size, r->etag, r->sha256, p->content_type, r->last_modified_ms,
        p->owner, (const char *)(p->acl.len ? p->acl.data : NULL), p->acl.len, (int64_t)0,
        (const void *)p->umeta.data, p->umeta.len);
    int got = cn__vclaim_step(st, err, vid);
    pc->claimed = got > 0;
    return got;
}

static cn_err_t commit_object_body(cn_meta_txn_t *txn, void *ctx)
{
    put_commit_t *pc = ctx;
    pc->claimed = false; /* a repeated run claims afresh */
    cn_objects_put_t *p = pc->p;
    /* The bucket may have been deleted (or deleted and made again) since
     * begin; its settings come with its row's generation, from the bucket
     * cache when that is current (no read of the settings themselves). */
    const cn__bkt_t *b = NULL;
    cn_err_t err = cn__bkt_load(p->o, txn, p->rq, p->bucket, &b);
    if (err >= 0 && b->id != p->bucket_id)
        err = cn__fail(p->rq, CN_E_NOT_FOUND, CN_OBJ_WHAT_BUCKET, "bucket %s does not exist",
                       p->bucket);
    cn_objects_put_args_t cond = { .if_none_match = p->if_none_match, .if_match = p->if_match };
    cn__vmake_t mk = { .bucket_id = p->bucket_id,
                       .key = p->key,
                       .cond = &cond,
                       .tags = p->tags,
                       .ntags = p->ntags,
                       .retention = p->has_retention ? &p->retention : NULL,
                       .now_ms = pc->r->last_modified_ms,
                       .rows = commit_object_rows,
                       /* A key seen before the body came is likely still there:
                        * its claim would cost a round trip and find it. */
                       .claim = p->key_seen ? NULL : commit_object_claim,
                       .ctx = (void *)pc,
                       .bkt = b };
    if (err >= 0)
        err = cn__obj_version_make(txn, p->rq, &mk);
    cn__bkt_release(b);
    pc->r->vnull = mk.vnull;
    pc->r->bucket_versioned = mk.versioned;
    return err < 0 ? err : CN_OK;
}

static cn_err_t commit_part_body(cn_meta_txn_t *txn, void *ctx)
{
    const put_commit_t *pc = ctx;
    cn_objects_put_t *p = pc->p;
    const cn_objects_put_result_t *r = pc->r;
    /* Completed, aborted or expired while the part streamed in: refuse. */
    cn_err_t err = cn__upload_check(p->o, txn, p->rq, p->upload_id, p->bucket_id, p->key, NULL);
    if (err >= 0)
        err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_PART_UPSERT], "sibisbsis", p->upload_id,
                            (int64_t)p->part_number, (const void *)pc->d->b, sizeof pc->d->b,
                            (int64_t)r->size, r->etag, (const void *)r->md5, (size_t)CN_MD5_LEN,
                            r->sha256, r->last_modified_ms, p->cksum[0] ? p->cksum : NULL);
    return err < 0 ? err : CN_OK;
}
cn_err_t cn_objects_put_commit(cn_objects_put_t *p, cn_objects_put_result_t *res)
{
    cn_objects_put_result_t r;
    memset(&r, 0, sizeof r);
    cn_err_t err = p->err;
    if (err >= 0 && p->declared >= 0 && p->n != (uint64_t)p->declared)
        err = cn__fail(p->rq, CN_E_LENGTH_MISMATCH, CN_OBJ_WHAT_ARG,
                       "received %llu of %lld declared bytes", (unsigned long long)p->n,
                       (long long)p->declared);
    if (err < 0)
        goto out;
    lane_drain(p);
    uint8_t sha[CN_DIGEST_LEN];
    if (p->sha && p->kind == CN_OBJ_PUT_PART && p->part_number == 1 && !p->feed.sha &&
        cn_sha256_copy(p->sha, &p->own_sha) < 0)
        p->own_sha = NULL; /* the chain reads the part instead */
    if (p->sha_given)
        memcpy(sha, p->want_sha, CN_DIGEST_LEN);
    else
        cn_sha256_final(p->sha, sha);
    p->sha = NULL;
    if (p->md5)
        cn_md5_final(p->md5, r.md5);
    p->md5 = NULL;
    if ((p->has_md5 && memcmp(r.md5, p->want_md5, CN_MD5_LEN)) ||
        (p->has_sha && memcmp(sha, p->want_sha, CN_DIGEST_LEN))) {
        err = cn__fail(p->rq, CN_E_DIGEST_MISMATCH, CN_OBJ_WHAT_ARG,
                       "the body does not match the digest sent with it");
        goto out;
    }
    cn_hex_encode(sha, sizeof sha, r.sha256);
    if (p->kind == CN_OBJ_PUT_PART || !p->skip_etag)
        cn_hex_encode(r.md5, CN_MD5_LEN, r.etag);
    r.size = p->n;
    r.last_modified_ms = cn_wall_ms();
    /* Invariant 1: the blob is durable before any row names it. */
    cn_digest_t d;
    err = cn_store_writer_publish(p->w, &d, NULL);
    p->w = NULL;
    if (err < 0)
        goto out;
    /* From publish to commit the blob is referenced by nothing; the
     * sweeper's grace window covers that gap, and a guard closes it even for
     * a grace shorter than the commit takes.  Between publish and guard a
     * sweep with no grace could still remove it: detect that, never commit
     * a row naming a missing blob. */
    cn_store_guard_t *g = NULL;
    err = cn_store_guard_acquire(p->o->store, &d, &g);
    bool present = false;
    if (err >= 0)
        err = cn_store_have(p->o->store, &d, 1, &present);
    if (err >= 0 && !present)
        err = cn__fail(p->rq, CN_E_CONFLICT, CN_OBJ_WHAT_NONE,
                       "the new blob was swept before it was committed; retry");
    if (err >= 0) {
        put_commit_t pc = { p, &d, &r, false };
        /* Combinable: both bodies only run SQL on their txn (meta/group.c, G9). */
        err = cn__write_run_key(
            p->o, p->bucket, p->key, CN_META_RUN_WRITE | CN_META_RETRY | CN_META_RUN_COMBINE,
            p->kind == CN_OBJ_PUT_PART ? commit_part_body : commit_object_body, &pc);
    }
    cn_store_guard_release(g);
    if (err >= 0 && p->kind == CN_OBJ_PUT_PART) {
        /* Before the answer: a client completes only after every part's. */
        cn__chain_part_t cp = { .number = p->part_number, .digest = d, .size = r.size };
        if (p->own_sha)
            p->feed = (cn__chain_feed_t){ .sha = p->own_sha }; /* base 0, no claim */
        p->own_sha = NULL;
        cn__chain_part_done(p->o, p->upload_id, &cp, &p->feed);
    }
out:
    r.lc_word = p->lc_word;
    if (err >= 0 && res)
        *res = r;
    obj_put_free(p);
    return err;
}
