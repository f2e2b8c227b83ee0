/* Reads (HeadObject, GetObject with ranges and part numbers), DeleteObject
 * and object ACLs.
 *
 * A GET or HEAD is answered from the object-head cache (head.c) when the
 * bucket's write generation has not moved since the head was read (gen.c):
 * no transaction at all; authorization still runs.  Otherwise it is one read
 * transaction running one statement (CN_SQL_OBJ_V_KEY_READ: the bucket's
 * generation, the key's current version and its segments), with the bucket's
 * compiled settings taken from the handle's cache when that generation is
 * current (cache.c), and its result filed as a head.
 *
 * A reader holds store guards on the blobs it serves, taken after the
 * version was read.  The version may have been replaced, and its blobs swept,
 * between the snapshot and the guards; so each guarded blob is then opened
 * (and kept open for the send): one that is there now is protected from here
 * on, whatever became of the version; so is a small blob whose bytes the
 * store holds in memory (cn_store_bytes_get: its digest's bytes, whatever
 * became of its file).  Only when a blob is missing, or the
 * window touches more than CN__HOLD_SEGS segments, does a second look at the
 * key decide: a version still current then was current while the sweeper
 * could have judged its blobs, so they were live (a missing one is damage,
 * CN_E_CORRUPT); a replaced one is read again.  A cached head needs no
 * second look: if the generation is unchanged after the guards, the version
 * was current, so its blobs live, until they were guarded; a missing blob
 * sends the read down the slow path, which decides.
 *
 * A raw blob is sent from a descriptor and an offset (cn_store_fd_get_at):
 * a file's own at 0, or a packed blob's pack at its payload, so packed small
 * blobs go out by sendfile(2) too; the store keeps that descriptor reading
 * the right bytes through compaction (store pack.c, P9).  LZ4 blobs are
 * decoded through cn_store_read_range. */
#include "objects_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct cn_obj_seg {
    cn_digest_t digest;
    uint64_t size; /* whole blob */
    uint64_t off;  /* served part of it */
    uint64_t len;
    cn_store_guard_t *guard;
    bool held; /* fd is open on the blob (cn_store_fd_get_at; fdh NULL: the reader's own) */
    int fd;
    uint64_t base; /* where the blob's bytes start in fd: a packed blob's offset in its pack */
    void *fdh;
    const uint8_t *mem; /* the whole blob's bytes in the store's memory (cn_store_bytes_get) */
    void *memh;
} cn_obj_seg_t;

/* Windows of more segments than this are confirmed by a second look at the
 * key instead of by opening each blob. */
#define CN__HOLD_SEGS 4

struct cn_objects_reader {
    cn_store_t *store;
    uint64_t offset, len;
    cn_obj_seg_t *segs;
    size_t nsegs;
};

void cn_objects_reader_free(cn_objects_reader_t *rd)
{
    if (!rd)
        return;
    for (size_t i = 0; i < rd->nsegs; i++) {
        if (rd->segs[i].mem)
            cn_store_bytes_put(rd->segs[i].memh);
        else if (rd->segs[i].held)
            cn_store_fd_put(rd->store, rd->segs[i].fd, rd->segs[i].fdh);
        cn_store_guard_release(rd->segs[i].guard);
    }
    free(rd->segs);
    free(rd);
}

uint64_t cn_objects_reader_len(const cn_objects_reader_t *rd)
{
    return rd->len;
}
uint64_t cn_objects_reader_offset(const cn_objects_reader_t *rd)
{
    return rd->offset;
}

bool cn_objects_reader_mem(const cn_objects_reader_t *rd, const uint8_t **p)
{
    if (rd->nsegs != 1 || !rd->segs[0].mem)
        return false;
    *p = rd->segs[0].mem + rd->segs[0].off;
    return true;
}

typedef struct {
    cn_objects_write_fn write;
    void *ctx;
} cn_obj_sink_t;

static cn_err_t obj_sink(void *ctx, const void *p, size_t n)
{
    cn_obj_sink_t *s = ctx;
    return s->write(s->ctx, p, n);
}

/* Serves the range from its byte from on (the segments before it skipped,
 * the one holding it entered at the right offset). */
static cn_err_t obj_reader_send(cn_objects_reader_t *rd, uint64_t from,
                                cn_objects_send_fd_fn send_fd, cn_objects_write_fn write, void *ctx,
                                bool borrow)
{
    for (size_t i = 0; i < rd->nsegs; i++) {
        cn_obj_seg_t part = rd->segs[i], *s = &part;
        uint64_t skip = from < s->len ? from : s->len;
        from -= skip;
        s->off += skip;
        s->len -= skip;
        if (!s->len)
            continue;
        if (s->mem) {
            cn_err_t err = write(ctx, s->mem + s->off, (size_t)s->len);
            if (err)
                return err;
            continue;
        }
        /* The descriptor held since the get serves a borrower, and an owner
         * too when it is the reader's own; a shared one is not for an owner. */
        if (send_fd && s->held && (borrow || !s->fdh)) {
            cn_err_t err = send_fd(ctx, s->fd, s->base + s->off, s->len);
            if (err)
                return err;
            continue;
        }
        if (send_fd) {
            int fd = -1;
            uint64_t blen = 0, base = 0;
            void *h = NULL;
            cn_err_t err = borrow ? cn_store_fd_get_at(rd->store, &s->digest, &fd, &base, &blen, &h)
                                  : cn_store_open_fd_at(rd->store, &s->digest, &fd, &base, &blen);
            if (err >= 0) {
                err =
                    blen < s->off + s->len ? CN_E_CORRUPT : send_fd(ctx, fd, base + s->off, s->len);
                cn_store_fd_put(rd->store, fd, h);
                if (err)
                    return err;
                continue;
            }
            if (err != CN_E_UNSUPPORTED)
                return err;
        }
        cn_obj_sink_t sk = { write, ctx };
        uint64_t served = 0;
        cn_err_t err = cn_store_read_range(rd->store, &s->digest, s->off, s->len, obj_sink, &sk,
                                           NULL, &served);
        if (err)
            return err;
        if (served != s->len)
            return CN_E_CORRUPT;
    }
    return 0;
}

cn_err_t cn_objects_reader_send(cn_objects_reader_t *rd, cn_objects_send_fd_fn send_fd,
                                cn_objects_write_fn write, void *ctx)
{
    return obj_reader_send(rd, 0, send_fd, write, ctx, false);
}

/* The descriptor may be shared with other readers (the store's cache of open
 * small blobs), which is why it is offered only to a send_fd that reads by
 * offset and keeps nothing. */
cn_err_t cn_objects_reader_send_shared(cn_objects_reader_t *rd, cn_objects_send_fd_fn send_fd,
                                       cn_objects_write_fn write, void *ctx)
{
    return obj_reader_send(rd, 0, send_fd, write, ctx, true);
}

cn_err_t cn_objects_reader_send_at(cn_objects_reader_t *rd, uint64_t from,
                                   cn_objects_send_fd_fn send_fd, cn_objects_write_fn write,
                                   void *ctx)
{
    return obj_reader_send(rd, from, send_fd, write, ctx, true);
}

cn_err_t cn_objects_reader_read_at(cn_objects_reader_t *rd, uint64_t pos, void *buf, size_t max,
                                   size_t *n)
{
    *n = 0;
    uint64_t base = 0;
    for (size_t i = 0; i < rd->nsegs; base += rd->segs[i++].len) {
        const cn_obj_seg_t *s = &rd->segs[i];
        if (pos >= base + s->len)
            continue;
        uint64_t in = pos - base;
        size_t want = s->len - in < max ? (size_t)(s->len - in) : max;
        cn_err_t err;
        if (s->mem) {
            memcpy(buf, s->mem + s->off + in, want);
            *n = want;
            return CN_OK;
        }
        if (s->held) { /* its descriptor reads by offset, shared or not */
            err = cn_pread_full(s->fd, buf, want, s->base + s->off + in, CN_E_CORRUPT);
            *n = err ? 0 : want;
            return err;
        }
        /* Each segment's last piece waits for its blob's verdict: an earlier
         * segment's blob still being fetched must not be left unverified
         * behind a response that completes with a later one. */
        bool last = in + want == s->len;
        err = cn_store_read_part(rd->store, &s->digest, s->off + in, buf, want, n, last);
        return err ? err : *n == want ? CN_OK : CN_E_CORRUPT;
    }
    return CN_OK;
}

/* Fills info, and acl when not NULL (its ACL through o's cache; o may be
 * NULL), from the version columns of st, which start at column base in the
 * CN__VCOL_* order. */
static cn_err_t obj_info_cols(cn_objects_t *o, cn_meta_stmt_t *st, int base, cn_object_info_t *info,
                              cn__objacl_t *acl)
{
    size_t n = 0, ctl = 0, uml = 0;
    memset(info, 0, sizeof *info);
    info->version_id = cn_meta_column_int64(st, base + CN__VCOL_ID);
    info->size = (uint64_t)cn_meta_column_int64(st, base + CN__VCOL_SIZE);
    const char *s = cn_meta_column_text(st, base + CN__VCOL_ETAG, &n);
    cn__strcpy(info->etag, sizeof info->etag, s, n);
    s = cn_meta_column_text(st, base + CN__VCOL_SHA256, &n);
    cn__strcpy(info->sha256, sizeof info->sha256, s, n);
    const char *ct = cn_meta_column_text(st, base + CN__VCOL_CTYPE, &ctl);
    const void *um = cn_meta_column_blob(st, base + CN__VCOL_UMETA, &uml);
    info->last_modified_ms = cn_meta_column_int64(st, base + CN__VCOL_MTIME);
    const char *owner = cn_meta_column_text(st, base + CN__VCOL_OWNER, &n);
    cn__strcpy(info->owner, sizeof info->owner, owner, n);
    info->nparts = (uint32_t)cn_meta_column_int64(st, base + CN__VCOL_NPARTS);
    s = cn_meta_column_text(st, base + CN__VCOL_CKSUM, &n);
    if (s) {
        cn__strcpy(info->checksum, sizeof info->checksum, s, n);
        s = cn_meta_column_text(st, base + CN__VCOL_CKALG, &n);
        cn__strcpy(info->checksum_alg, sizeof info->checksum_alg, s, n);
    }
    cn_err_t err = cn__info_fill(info, ct, ctl, um, uml);
    if (err >= 0 && acl) {
        const char *a = cn_meta_column_text(st, base + CN__VCOL_ACL, &n);
        err = cn__objacl_set(o, acl, info->owner, strlen(info->owner), a, n);
    }
    return err;
}

/* Validates key, then loads its current version into info for act: not
 * found only to whom act is allowed on a missing key. */
static cn_err_t obj_load_for(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b,
                             const char *key, cn_authz_action_t act, cn_object_info_t *info)
{
    cn__objacl_t acl = { 0 };
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn__key_check(rq, key);
    if (err >= 0) {
        err = cn__version_row(txn, rq, b->id, key, &st);
        if (err >= 0)
            err = obj_info_cols(NULL, st, 0, info, &acl);
        cn_meta_finish(st);
        err = cn__authorize_found(rq, b, act, key, err, &acl);
    }
    cn__objacl_free(&acl);
    return err;
}

/* Validates key, then finds its current version (*vid, its access facts in
 * acl) for act: CN_E_NOT_FOUND only to whom act is allowed on a missing key. */
static cn_err_t obj_find_for(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b,
                             const char *key, cn_authz_action_t act, int64_t *vid,
                             cn__objacl_t *acl)
{
    *vid = 0;
    cn_err_t err = cn__key_check(rq, key);
    if (err >= 0)
        err = cn__version_find(txn, b->id, key, vid, NULL, acl);
    if (err >= 0)
        err = cn__authorize_found(rq, b, act, key, *vid ? 0 : CN_E_NOT_FOUND, acl);
    return err;
}

/* The V_KEY_READ statement's columns after the version's. */
enum {
    KR_VERSION = 2, /* CN__VCOL_ID's column: the version columns start here */
    KR_DIGEST = KR_VERSION + CN__VCOL_CKSUM + 1,
    KR_SEG_SIZE,
    KR_VNULL,
    KR_LOCK,               /* mode, retain_until_ms, legal_hold, then the tag count */
    KR_STAMP = KR_LOCK + 4 /* V_KEY_READ_GEN: the stamp's sum, then bgen */
};

/* The lock columns from column base (mode, until, hold). */
static void obj_lock_cols(cn_meta_stmt_t *st, int base, cn_object_info_t *info)
{
    const char *mode = cn_meta_column_text(st, base, NULL);
    info->lock_mode = !mode                         ? CN_OBJ_LOCK_NONE
                      : !strcmp(mode, "COMPLIANCE") ? CN_OBJ_LOCK_COMPLIANCE
                                                    : CN_OBJ_LOCK_GOVERNANCE;
    info->lock_until_ms = cn_meta_column_int64(st, base + 1);
    info->legal_hold = cn_meta_column_int64(st, base + 2) != 0;
}

/* Collects the segments of the version st is on, one per row from the
 * current one, into a new array (*segs, *nsegs). */
static cn_err_t key_read_segs(cn_meta_stmt_t *st, const cn_object_info_t *info, cn_obj_seg_t **segs,
                              size_t *nsegs)
{
    size_t n = 0, cap = info->nparts ? info->nparts : 1;
    cn_obj_seg_t *v = calloc(cap, sizeof *v);
    if (!v)
        return -ENOMEM;
    cn_err_t err = CN_META_ROW;
    /* The LEFT JOIN's one row of NULLs is a version with no segment. */
    while (err == CN_META_ROW && !cn_meta_column_is_null(st, KR_DIGEST)) {
        size_t dl = 0;
        const void *d = cn_meta_column_blob(st, KR_DIGEST, &dl);
        if (!d || dl != CN_DIGEST_LEN || n == cap) {
            err = CN_E_CORRUPT;
            break;
        }
        memcpy(v[n].digest.b, d, CN_DIGEST_LEN);
        v[n].size = (uint64_t)cn_meta_column_int64(st, KR_SEG_SIZE);
        n++;
        err = cn_meta_step(st);
    }
    if (err < 0) {
        free(v);
        return err;
    }
    *segs = v;
    *nsegs = n;
    return 0;
}

/* A read of one key (GetObject, HeadObject): what it asks, and what it
 * found (info, and the segments when segs is not NULL). */
typedef struct key_read {
    cn_objects_t *o;
    cn_objects_req_t *rq;
    const char *bucket, *key;
    cn_object_info_t *info;
    cn_obj_seg_t **segs;
    size_t *nsegs;
    int64_t bucket_id;
    const cn__bkt_t *b; /* held, as the run that succeeded loaded it */
    cn__objacl_t acl;   /* held */
    bool stamp_in;      /* rows mode: the head's stamp read by the read itself */
    cn__hstamp_t stamp; /* that stamp (never quiet when not read) */
} key_read_t;

/* Releases what kr holds of its last run. */
static void key_read_drop(key_read_t *kr)
{
    cn__bkt_release(kr->b);
    kr->b = NULL;
    cn__objacl_free(&kr->acl);
}

/* The key read once V_KEY_READ's first row is in st: the bucket's settings
 * (cached for its generation), the key, the version, the access decision. */
static cn_err_t key_read_row(cn_meta_txn_t *txn, key_read_t *kr, cn_meta_stmt_t *st)
{
    cn_objects_req_t *rq = kr->rq;
    kr->bucket_id = cn_meta_column_int64(st, 0);
    cn_err_t err =
        cn__bkt_get(kr->o, txn, kr->bucket, kr->bucket_id, cn_meta_column_int64(st, 1), &kr->b);
    if (err >= 0)
        err = cn__key_check(rq, kr->key);
    if (err >= 0) {
        cn_err_t found = 0;
        if (cn_meta_column_is_null(st, KR_VERSION)) {
            /* One more indexed look, on a miss only: a latest delete marker,
             * which a bucket whose versioning was never set cannot hold (its
             * read then stays one statement: CN_META_RUN_ONE). */
            found = cn__bkt_versioned(kr->b)
                        ? cn__obj_marker_look(txn, kr->bucket_id, kr->key, kr->info)
                        : 0;
            found = found < 0 ? found : CN_E_NOT_FOUND;
        } else {
            found = obj_info_cols(kr->o, st, KR_VERSION, kr->info, &kr->acl);
            kr->info->vnull = cn_meta_column_int64(st, KR_VNULL) != 0;
            obj_lock_cols(st, KR_LOCK, kr->info);
            kr->info->ntags = (uint32_t)cn_meta_column_int64(st, KR_LOCK + 3);
        }
        kr->info->bucket_versioned = cn__bkt_versioned(kr->b);
        if (found >= 0 && kr->segs)
            found = key_read_segs(st, kr->info, kr->segs, kr->nsegs);
        err = cn__authorize_found(rq, kr->b, CN_ACT_GET_OBJECT, kr->key, found, &kr->acl);
    }
    return err;
}

/* One run of a key read; a repeated run starts from nothing loaded. */
static cn_err_t key_read_body(cn_meta_txn_t *txn, void *ctx)
{
    key_read_t *kr = ctx;
    key_read_drop(kr);
    cn_objects_info_free(kr->info);
    memset(kr->info, 0, sizeof *kr->info);
    if (kr->segs) {
        free(*kr->segs);
        *kr->segs = NULL;
        *kr->nsegs = 0;
    }
    if (!cn_objects_bucket_name_ok(kr->bucket))
        return cn__fail_d(kr->rq, CN_E_INVALID, CN_OBJ_WHAT_BUCKET, CN_OBJ_BUCKET_NAME_INVALID,
                          "invalid bucket name");
    cn_meta_stmt_t *st = NULL;
    size_t klen = kr->key ? strlen(kr->key) : 0;
    const void *kp = kr->key ? kr->key : "";
    kr->stamp = cn__gen_hstamp_rows(-1, -1);
    cn_err_t err = kr->stamp_in
                       ? cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_V_KEY_READ_GEN], "bsii",
                                        kp, klen, kr->bucket, (int64_t)cn__gen_slot(kr->bucket),
                                        (int64_t)cn__gen_kslot(kr->o->gen, kr->bucket, kr->key))
                       : cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_V_KEY_READ], "bs", kp,
                                        klen, kr->bucket);
    if (err >= 0)
        err = cn_meta_step(st);
    if (err == CN_META_ROW && kr->stamp_in)
        kr->stamp = cn__gen_hstamp_rows(cn_meta_column_int64(st, KR_STAMP),
                                        cn_meta_column_int64(st, KR_STAMP + 1));
    if (err == CN_META_ROW)
        err = key_read_row(txn, kr, st);
    else if (err == CN_META_DONE)
        err = cn__fail(kr->rq, CN_E_NOT_FOUND, CN_OBJ_WHAT_BUCKET, "bucket %s does not exist",
                       kr->bucket);
    cn_meta_finish(st);
    return err;
}

/* Files what kr read, with its segments, under stamp (cn__objhead_offer),
 * or under the stamp the read itself read (kr->stamp_in, rows mode: gen.c);
 * rows mode tells the bucket word of that stamp (info->gen_word), so the
 * lifecycle answer costs no second read of it (as head_hit_info). */
static void key_read_offer(const key_read_t *kr, cn__hstamp_t stamp, const cn_obj_seg_t *segs,
                           size_t nsegs)
{
    if (kr->stamp_in)
        stamp = kr->stamp;
    if (!cn__gen_local(kr->o->gen))
        kr->info->gen_word = stamp.b;
    cn__hseg_t few[CN__HOLD_SEGS] = { { { { 0 } }, 0 } };
    cn__hseg_t *hs = nsegs <= CN__HOLD_SEGS ? few : malloc(nsegs * sizeof *hs);
    if (!hs)
        return;
    for (size_t i = 0; i < nsegs; i++) {
        hs[i].digest = segs[i].digest;
        hs[i].size = segs[i].size;
    }
    cn__objhead_offer(kr->o, kr->bucket, kr->key, stamp, kr->b, &kr->acl, kr->bucket_id, kr->info,
                      hs, nsegs);
    if (hs != few)
        free(hs);
}

/* A cached head's answer to its caller: the access decision against the
 * cached settings (every request), then a copy of the info; rows mode tells
 * the word h was found under during this call on (info->gen_word), for the
 * lifecycle answer. */
static cn_err_t head_hit_info(const cn_objects_t *o, cn_objects_req_t *rq, const cn__objhead_t *h,
                              const char *key, cn_object_info_t *info)
{
    cn_err_t err = cn__authorize_found(rq, h->b, CN_ACT_GET_OBJECT, key, 0, &h->acl);
    if (err >= 0)
        err = cn__info_copy(info, &h->info);
    if (err >= 0)
        info->gen_word = cn__gen_local(o->gen) ? 0 : h->bword;
    return err;
}

cn_err_t cn_objects_head(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket, const char *key,
                         cn_object_info_t *info)
{
    memset(info, 0, sizeof *info);
    cn__hstamp_t stamp;
    const cn__objhead_t *h = cn__objhead_find(o, bucket, key, &stamp);
    cn_err_t err;
    if (h) {
        err = head_hit_info(o, rq, h, key, info);
        cn__objhead_release(h);
        return err;
    }
    /* The segments only to file a complete head (a GET may use it). */
    cn_obj_seg_t *segs = NULL;
    size_t nsegs = 0;
    key_read_t kr = { .o = o,
                      .rq = rq,
                      .bucket = bucket,
                      .key = key,
                      .info = info,
                      .segs = o->gen ? &segs : NULL,
                      .nsegs = &nsegs,
                      .stamp_in = o->gen && !cn__gen_local(o->gen) };
    /* One statement when the bucket's entry is cached at its generation and
     * the key has a current version (cn_meta_run starts over otherwise). */
    err = cn_meta_run(o->meta, CN_META_RUN_READ | CN_META_RUN_ONE | CN_META_RETRY, key_read_body,
                      &kr);
    if (err >= 0 && o->gen)
        key_read_offer(&kr, stamp, segs, nsegs);
    key_read_drop(&kr);
    free(segs);
    if (err < 0)
        cn_objects_info_free(info);
    return err;
}

/* The confirming look at key in bucket_id: its current version id. */
typedef struct key_look {
    int64_t bucket_id;
    const char *key;
    int64_t vid;
} key_look_t;

static cn_err_t key_look_body(cn_meta_txn_t *txn, void *ctx)
{
    key_look_t *kl = ctx;
    return cn__version_find(txn, kl->bucket_id, kl->key, &kl->vid, NULL, NULL);
}

/* Opens the guarded blobs of rd for the send when there are at most
 * CN__HOLD_SEGS of them (the store's descriptor cache); *missing when one is
 * not there (then the others stay as they are).  CN_E_CORRUPT when one is
 * shorter than the window, or a store error. */
static cn_err_t obj_open_segs(cn_objects_t *o, cn_objects_reader_t *rd, bool *missing)
{
    *missing = false;
    for (size_t i = 0; i < rd->nsegs && rd->nsegs <= CN__HOLD_SEGS; i++) {
        cn_obj_seg_t *s = &rd->segs[i];
        uint64_t blen = 0;
        /* A small hot blob comes from memory: no descriptor, no read. */
        if (cn_store_bytes_get(o->store, &s->digest, s->size, &s->mem, &s->memh) == CN_OK)
            continue;
        /* A packed blob comes as its pack's descriptor and offset: sent by
         * sendfile like a file, no copy (cn_store_fd_get_at). */
        cn_err_t err = cn_store_fd_get_at(o->store, &s->digest, &s->fd, &s->base, &blen, &s->fdh);
        if (err == CN_E_UNSUPPORTED) /* there, enveloped: served by reads */
            continue;
        if (err == CN_E_NOT_FOUND) {
            *missing = true;
            return 0;
        }
        if (err < 0)
            return err;
        s->held = true;
        if (blen < s->off + s->len)
            return CN_E_CORRUPT;
    }
    return 0;
}

/* Makes sure the guarded blobs of rd, read as version vid of key, are still
 * there (the file's comment): 0, *retry with CN_E_CONFLICT when the version
 * was replaced meanwhile, CN_E_CORRUPT when a blob of the current version is
 * missing, or a store or meta error. */
static cn_err_t obj_hold(cn_objects_t *o, cn_objects_reader_t *rd, int64_t bucket_id,
                         const char *key, int64_t vid, bool *retry)
{
    bool missing = false;
    cn_err_t err = obj_open_segs(o, rd, &missing);
    if (err < 0)
        return err;
    if (rd->nsegs <= CN__HOLD_SEGS && !missing)
        return 0;
    key_look_t kl = { bucket_id, key, 0 };
    err = cn_meta_run(o->meta, CN_META_RUN_READ | CN_META_RETRY, key_look_body, &kl);
    if (err < 0)
        return err;
    if (kl.vid != vid) {
        *retry = true;
        return CN_E_CONFLICT;
    }
    return missing ? CN_E_CORRUPT : 0;
}

/* Every segment of rd is open (none left for later reads). */
static bool obj_all_held(const cn_objects_reader_t *rd)
{
    for (size_t i = 0; i < rd->nsegs; i++)
        if (!rd->segs[i].held && !rd->segs[i].mem)
            return false;
    return true;
}

/* The hold of a cached head's reader: its blobs were referenced by the
 * version current under stamp, and are guarded now; if the bucket's slot
 * still holds stamp after that, they were live until guarded (gen.c), so no
 * second look at the key is needed.  In rows mode, where that look is a
 * database read, it is skipped when every blob is open: an open blob's
 * bytes are its digest's whatever became of the version since, and the
 * version was current when the find read the word, during this request.
 * CN_E_AGAIN when a blob is missing or the word moved (the slow path
 * decides), else as obj_open_segs. */
static cn_err_t obj_hold_cached(cn_objects_t *o, cn_objects_reader_t *rd, const char *bucket,
                                const char *key, uint64_t stamp)
{
    bool missing = false;
    cn_err_t err = obj_open_segs(o, rd, &missing);
    if (err < 0 || (!missing && !cn__gen_local(o->gen) && obj_all_held(rd)))
        return err;
    if (missing || !cn__objhead_current(o, bucket, key, stamp))
        err = CN_E_AGAIN;
    return err;
}

/* Chooses the served window [off, off+len) of the whole object. */
static cn_err_t obj_window(cn_objects_req_t *rq, const cn_objects_range_t *r,
                           const cn_object_info_t *info, const cn_obj_seg_t *segs, size_t nsegs,
                           uint64_t *off, uint64_t *len)
{
    uint64_t size = info->size;
    if (!r || r->kind == CN_RANGE_ALL) {
        *off = 0;
        *len = size;
        return 0;
    }
    switch (r->kind) {
    case CN_RANGE_FROM:
        if (r->off >= size)
            break;
        *off = r->off;
        *len = (r->len == 0 || r->len > size - r->off) ? size - r->off : r->len;
        return 0;
    case CN_RANGE_SUFFIX:
        if (size == 0 || r->len == 0)
            break;
        *len = r->len > size ? size : r->len;
        *off = size - *len;
        return 0;
    case CN_RANGE_PART: {
        uint32_t parts = info->nparts ? info->nparts : 1;
        if (r->part_number < 1 || (uint32_t)r->part_number > parts ||
            (size_t)r->part_number > nsegs)
            return cn__fail(rq, CN_E_RANGE, CN_OBJ_WHAT_PART, "the object has %u part(s)", parts);
        uint64_t o = 0;
        for (int32_t i = 0; i < r->part_number - 1; i++)
            o += segs[i].size;
        *off = o;
        *len = segs[r->part_number - 1].size;
        return 0;
    }
    default: return cn__fail(rq, CN_E_INVALID, CN_OBJ_WHAT_ARG, "unknown range kind");
    }
    return cn__fail(rq, CN_E_RANGE, CN_OBJ_WHAT_ARG, "the range does not intersect the object");
}

/* Builds the reader of the window range chooses out of the object's segs
 * (taken over: freed in every case), with guards on the blobs it touches. */
static cn_err_t obj_reader_new(cn_objects_t *o, cn_objects_req_t *rq,
                               const cn_objects_range_t *range, const cn_object_info_t *info,
                               cn_obj_seg_t *segs, size_t nsegs, cn_objects_reader_t **out)
{
    cn_objects_reader_t *rd = NULL;
    uint64_t off = 0, len = 0;
    cn_err_t err = obj_window(rq, range, info, segs, nsegs, &off, &len);
    if (err < 0)
        goto fail;
    rd = calloc(1, sizeof *rd);
    if (!rd) {
        err = -ENOMEM;
        goto fail;
    }
    rd->store = o->store;
    rd->offset = off;
    rd->len = len;
    /* Keep only the segments the window touches, trimmed to it. */
    uint64_t pos = 0;
    size_t k = 0;
    for (size_t i = 0; i < nsegs; i++) {
        uint64_t s0 = pos, s1 = pos + segs[i].size;
        pos = s1;
        uint64_t a = off > s0 ? off : s0, z = off + len < s1 ? off + len : s1;
        if (a >= z)
            continue;
        segs[k] = segs[i];
        segs[k].off = a - s0;
        segs[k].len = z - a;
        k++;
    }
    rd->segs = segs;
    rd->nsegs = k;
    segs = NULL;
    for (size_t i = 0; i < rd->nsegs && !rq->no_bytes; i++) {
        err = cn_store_guard_acquire(o->store, &rd->segs[i].digest, &rd->segs[i].guard);
        if (err < 0)
            goto fail;
    }
    *out = rd;
    return 0;
fail:
    free(segs);
    cn_objects_reader_free(rd);
    return err;
}

/* The GET from the head cache only: CN_E_AGAIN (nothing filled; *stamp the
 * slot's word, read after the attempt, to stamp a read with) when it cannot
 * answer, else as cn_objects_get. */
static cn_err_t obj_get_cached(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                               const char *key, const cn_objects_range_t *range,
                               cn_object_info_t *info, cn_objects_reader_t **out,
                               cn__hstamp_t *stamp)
{
    const cn__objhead_t *h = cn__objhead_find(o, bucket, key, stamp);
    if (!h)
        return CN_E_AGAIN;
    cn_obj_seg_t *segs = h->nsegs ? calloc(h->nsegs, sizeof *segs) : NULL;
    cn_err_t err = h->nsegs && !segs ? -ENOMEM : head_hit_info(o, rq, h, key, info);
    for (size_t i = 0; err >= 0 && i < h->nsegs; i++) {
        segs[i].digest = h->segs[i].digest;
        segs[i].size = h->segs[i].size;
    }
    if (err >= 0)
        err = obj_reader_new(o, rq, range, info, segs, h->nsegs, out);
    else
        free(segs);
    if (err >= 0 && !rq->no_bytes) {
        err = obj_hold_cached(o, *out, bucket, key, h->stamp);
        if (err < 0) {
            cn_objects_reader_free(*out);
            *out = NULL;
        }
    }
    cn__objhead_release(h);
    /* The file's word is read before the SQL read; rows mode reads it in
     * that read (gen.c). */
    if (err == CN_E_AGAIN && cn__gen_local(o->gen))
        *stamp = cn__gen_hload(o->gen, cn__gen_slot(bucket), cn__gen_kslot(o->gen, bucket, key));
    if (err < 0 && err != CN_E_RANGE) {
        cn_objects_info_free(info);
        memset(info, 0, sizeof *info);
    }
    return err;
}

/* One read of the key through SQL, its head filed under stamp (read before
 * it began). */
static cn_err_t obj_get_once(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                             const char *key, const cn_objects_range_t *range,
                             cn_object_info_t *info, cn_objects_reader_t **out, cn__hstamp_t stamp,
                             bool *retry)
{
    *retry = false;
    cn_obj_seg_t *segs = NULL;
    size_t nsegs = 0;
    cn_objects_reader_t *rd = NULL;
    key_read_t kr = { .o = o,
                      .rq = rq,
                      .bucket = bucket,
                      .key = key,
                      .info = info,
                      .segs = &segs,
                      .nsegs = &nsegs,
                      .stamp_in = o->gen && !cn__gen_local(o->gen) };
    cn_err_t err = cn_meta_run(o->meta, CN_META_RUN_READ | CN_META_RUN_ONE | CN_META_RETRY,
                               key_read_body, &kr);
    if (err >= 0 && o->gen)
        key_read_offer(&kr, stamp, segs, nsegs);
    key_read_drop(&kr);
    if (err >= 0)
        err = obj_reader_new(o, rq, range, info, segs, nsegs, &rd);
    else
        free(segs);
    if (err < 0)
        goto fail;
    if (!rq->no_bytes)
        err = obj_hold(o, rd, kr.bucket_id, key, info->version_id, retry);
    if (err == CN_E_CORRUPT)
        cn__fail(rq, err, CN_OBJ_WHAT_KEY, "a blob of the current version is missing or short");
    if (err < 0)
        goto fail;
    *out = rd;
    return 0;
fail:
    cn_objects_reader_free(rd);
    if (err != CN_E_RANGE)
        cn_objects_info_free(info);
    return err;
}

cn_err_t cn_objects_get(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket, const char *key,
                        const cn_objects_range_t *range, cn_object_info_t *info,
                        cn_objects_reader_t **rd)
{
    *rd = NULL;
    memset(info, 0, sizeof *info);
    cn_err_t err = CN_E_CONFLICT;
    /* The key changing between our two looks is a race with a writer: read
     * the newer version. */
    for (int attempt = 0; attempt < 5; attempt++) {
        bool retry = false;
        cn__hstamp_t stamp = { 0, 0 };
        err = obj_get_cached(o, rq, bucket, key, range, info, rd, &stamp);
        if (err != CN_E_AGAIN)
            return err;
        err = obj_get_once(o, rq, bucket, key, range, info, rd, stamp, &retry);
        if (!retry)
            return err;
    }
    return cn__fail(rq, err, CN_OBJ_WHAT_KEY, "the key kept changing while being read");
}

bool cn_objects_meta_local(const cn_objects_t *o)
{
    return strcmp(cn_meta_engine(o->meta), "sqlite") == 0;
}

cn_err_t cn_objects_get_cached(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                               const char *key, const cn_objects_range_t *range,
                               cn_object_info_t *info, cn_objects_reader_t **rd)
{
    *rd = NULL;
    memset(info, 0, sizeof *info);
    /* Rows mode: a word is a database read, which an event loop must never
     * wait for (it stalls every connection of the loop); a worker asks. */
    if (!cn__gen_local(o->gen))
        return CN_E_AGAIN;
    cn__hstamp_t stamp = { 0, 0 };
    return obj_get_cached(o, rq, bucket, key, range, info, rd, &stamp);
}

/* ---- named versions ------------------------------------------------------------ */

/* A read of one named version (GET / HEAD ?versionId=): what it asks, and
 * what it found (info, and the segments when segs is not NULL). */
typedef struct vread {
    cn_objects_t *o;
    const char *key, *version;
    cn_object_info_t *info;
    cn_obj_seg_t **segs;
    size_t *nsegs;
    int64_t bucket_id;
    cn_authz_action_t act; /* 0: s3:GetObject */
} vread_t;

/* The segments of version vid, in order, into a new array. */
static cn_err_t vread_segs(cn_meta_txn_t *txn, int64_t vid, uint32_t nparts, cn_obj_seg_t **segs,
                           size_t *nsegs)
{
    size_t n = 0, cap = nparts ? nparts : 1;
    cn_obj_seg_t *v = calloc(cap, sizeof *v);
    cn_meta_stmt_t *st = NULL;
    cn_err_t err =
        v ? cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_SEGMENTS_OF_VERSION], "i", vid)
          : -ENOMEM;
    while (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW) {
        size_t dl = 0;
        const void *d = cn_meta_column_blob(st, 0, &dl);
        if (!d || dl != CN_DIGEST_LEN || n == cap) {
            err = CN_E_CORRUPT;
            break;
        }
        memcpy(v[n].digest.b, d, CN_DIGEST_LEN);
        v[n].size = (uint64_t)cn_meta_column_int64(st, 1);
        n++;
    }
    cn_meta_finish(st);
    if (err < 0) {
        free(v);
        return err;
    }
    *segs = v;
    *nsegs = n;
    return 0;
}

/* A named version's lock row and tag count into info. */
static cn_err_t vread_lock(cn_meta_txn_t *txn, int64_t vid, cn_object_info_t *info)
{
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_V_LOCK_ROW], "i", vid);
    if (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW) {
        obj_lock_cols(st, 0, info);
    }
    cn_meta_finish(st);
    if (err >= 0)
        err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_V_TAGS_COUNT], "i", vid);
    if (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW)
        info->ntags = (uint32_t)cn_meta_column_int64(st, 0);
    cn_meta_finish(st);
    return err < 0 ? err : 0;
}

/* Loads version v's row into vr->info (and acl), and its segments. */
static cn_err_t vread_row(cn_meta_txn_t *txn, vread_t *vr, const cn__vref_t *v, cn__objacl_t *acl)
{
    cn_meta_stmt_t *st = NULL;
    int q = v->table == CN__VT_CURRENT ? CN_SQL_OBJ_V_CUR_ROW : CN_SQL_OBJ_V_HIST_ROW;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_obj[q], "i", v->version_id);
    if (err >= 0)
        err = cn_meta_step(st);
    if (err == CN_META_ROW)
        err = obj_info_cols(vr->o, st, 0, vr->info, acl);
    else if (err == CN_META_DONE)
        err = CN_E_CORRUPT;
    cn_meta_finish(st);
    vr->info->vnull = v->vnull;
    if (err >= 0)
        err = vread_lock(txn, v->version_id, vr->info);
    if (err >= 0 && vr->segs)
        err = vread_segs(txn, v->version_id, vr->info->nparts, vr->segs, vr->nsegs);
    return err;
}

static cn_err_t vread_body(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b, void *ctx)
{
    vread_t *vr = ctx;
    cn_objects_info_free(vr->info);
    memset(vr->info, 0, sizeof *vr->info);
    if (vr->segs) {
        free(*vr->segs);
        *vr->segs = NULL;
        *vr->nsegs = 0;
    }
    vr->bucket_id = b->id;
    cn__objacl_t acl = { 0 };
    cn__vref_t v;
    cn_err_t err = cn__key_check(rq, vr->key);
    if (err < 0)
        return err;
    err = cn__obj_version_resolve(txn, rq, b->id, vr->key, vr->version, &v);
    if (err >= 0 && v.marker)
        err = cn__fail_d(rq, CN_E_UNSUPPORTED, CN_OBJ_WHAT_KEY, CN_OBJ_VERSION_IS_MARKER,
                         "the version is a delete marker");
    else if (err >= 0)
        err = vread_row(txn, vr, &v, &acl);
    if (err == CN_E_UNSUPPORTED) {
        vr->info->delete_marker = true;
        vr->info->version_id = v.version_id;
        vr->info->vnull = v.vnull;
    }
    vr->info->bucket_versioned = cn__bkt_versioned(b);
    err = cn__authorize_version(rq, b, vr->act ? vr->act : CN_ACT_GET_OBJECT, vr->key, err, &acl);
    cn__objacl_free(&acl);
    return err;
}

cn_err_t cn_objects_head_version(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                 const char *key, const char *version, cn_object_info_t *info)
{
    if (!version)
        return cn_objects_head(o, rq, bucket, key, info);
    memset(info, 0, sizeof *info);
    vread_t vr = { .o = o, .key = key, .version = version, .info = info };
    cn_err_t err = cn__bkt_run(o, rq, bucket, CN_ACT_INVALID, CN_META_RUN_READ | CN_META_RETRY,
                               vread_body, &vr);
    if (err < 0)
        cn_objects_info_free(info);
    return err;
}

/* The version a reader was built from is still there (its blobs then are
 * live): a second look, as obj_hold's for a current version. */
static cn_err_t vread_look_body(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b,
                                void *ctx)
{
    const vread_t *vr = ctx;
    cn__vref_t v;
    return cn__obj_version_resolve(txn, rq, b->id, vr->key, vr->version, &v);
}

cn_err_t cn_objects_get_version(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                const char *key, const char *version,
                                const cn_objects_range_t *range, cn_object_info_t *info,
                                cn_objects_reader_t **rd)
{
    if (!version)
        return cn_objects_get(o, rq, bucket, key, range, info, rd);
    *rd = NULL;
    memset(info, 0, sizeof *info);
    cn_obj_seg_t *segs = NULL;
    size_t nsegs = 0;
    cn_objects_reader_t *r = NULL;
    vread_t vr = {
        .o = o, .key = key, .version = version, .info = info, .segs = &segs, .nsegs = &nsegs
    };
    cn_err_t err = cn__bkt_run(o, rq, bucket, CN_ACT_INVALID, CN_META_RUN_READ | CN_META_RETRY,
                               vread_body, &vr);
    if (err >= 0)
        err = obj_reader_new(o, rq, range, info, segs, nsegs, &r);
    else
        free(segs);
    bool missing = false;
    if (err >= 0 && !rq->no_bytes)
        err = obj_open_segs(o, r, &missing);
    if (err >= 0 && !rq->no_bytes && (missing || r->nsegs > CN__HOLD_SEGS)) {
        err = cn__bkt_run(o, rq, bucket, CN_ACT_INVALID, CN_META_RUN_READ | CN_META_RETRY,
                          vread_look_body, &vr);
        if (err >= 0 && missing)
            err = cn__fail(rq, CN_E_CORRUPT, CN_OBJ_WHAT_KEY,
                           "a blob of the version is missing or short");
    }
    if (err >= 0) {
        *rd = r;
        return 0;
    }
    cn_objects_reader_free(r);
    if (err != CN_E_RANGE && !info->delete_marker)
        cn_objects_info_free(info);
    return err;
}

/* A walk of a key's parts, read into rows (each a cn_objects_part_t) and
 * handed to the caller's fn after the run (cn__parts_hand). */
typedef struct parts_walk {
    const char *key, *version; /* version NULL: the current one */
    cn_buf_t rows;
} parts_walk_t;

cn_err_t cn__parts_hand(cn_err_t err, cn_buf_t *rows, cn_objects_part_fn fn, void *arg)
{
    for (size_t off = 0; err == 0 && off < rows->len; off += sizeof(cn_objects_part_t)) {
        cn_objects_part_t p;
        memcpy(&p, rows->data + off, sizeof p);
        err = fn(arg, &p);
    }
    cn_buf_free(rows);
    return err;
}

static cn_err_t parts_body(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b, void *ctx)
{
    parts_walk_t *pw = ctx;
    cn_buf_reset(&pw->rows); /* an earlier attempt's rows */
    cn_object_info_t info;
    memset(&info, 0, sizeof info);
    cn_meta_stmt_t *st = NULL;
    vread_t vr = {
        .key = pw->key, .version = pw->version, .info = &info, .act = CN_ACT_GET_OBJECT_ATTRIBUTES
    };
    cn_err_t err = pw->version
                       ? vread_body(txn, rq, b, &vr)
                       : obj_load_for(txn, rq, b, pw->key, CN_ACT_GET_OBJECT_ATTRIBUTES, &info);
    if (err >= 0)
        err = cn_meta_queryf(txn, &st, cn__sql_obj[CN_SQL_OBJ_SEGMENT_PARTS], "i", info.version_id);
    while (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW) {
        cn_objects_part_t p;
        memset(&p, 0, sizeof p);
        p.part_number = (int32_t)cn_meta_column_int64(st, 0);
        p.size = (uint64_t)cn_meta_column_int64(st, 1);
        const char *t = cn_meta_column_text(st, 2, NULL);
        snprintf(p.etag, sizeof p.etag, "%s", t ? t : "");
        t = cn_meta_column_text(st, 3, NULL);
        snprintf(p.sha256, sizeof p.sha256, "%s", t ? t : "");
        t = cn_meta_column_text(st, 4, NULL);
        snprintf(p.checksum, sizeof p.checksum, "%s", t ? t : "");
        p.last_modified_ms = info.last_modified_ms;
        err = cn_buf_append(&pw->rows, &p, sizeof p);
        if (err)
            break;
    }
    cn_meta_finish(st);
    cn_objects_info_free(&info);
    return err;
}

cn_err_t cn_objects_object_parts(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                 const char *key, cn_objects_part_fn fn, void *arg)
{
    return cn_objects_object_parts_version(o, rq, bucket, key, NULL, fn, arg);
}

cn_err_t cn_objects_object_parts_version(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                         const char *key, const char *version,
                                         cn_objects_part_fn fn, void *arg)
{
    parts_walk_t pw = { key, version, { 0 } };
    cn_err_t err = cn__bkt_run(o, rq, bucket, CN_ACT_INVALID, CN_META_RUN_READ | CN_META_RETRY,
                               parts_body, &pw);
    return cn__parts_hand(err, &pw.rows, fn, arg);
}

/* ---- deletes ---------------------------------------------------------------------- */

/* One delete: what it asks (version NULL: the key), and what it did. */
typedef struct del_run {
    const char *key, *version;
    bool bypass;     /* x-amz-bypass-governance-retention asked for */
    bool must_exist; /* a key without a current version is NOT_FOUND (Jay) */
    int64_t now;
    cn_objects_delete_result_t res;
} del_run_t;

/* After a version of key left for good: when no version is current, the
 * newest remaining one becomes current unless it is a marker. */
static cn_err_t del_restore(cn_meta_txn_t *txn, int64_t bucket_id, const char *key)
{
    cn__vref_t v;
    cn_err_t err = cn__obj_version_resolve(txn, NULL, bucket_id, key, NULL, &v);
    if (err == CN_E_NOT_FOUND || (err >= 0 && (v.table == CN__VT_CURRENT || v.marker)))
        return 0;
    if (err >= 0)
        err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_V_FROM_HISTORY], "i", v.version_id);
    if (err >= 0)
        err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_V_HIST_DELETE], "i", v.version_id);
    return err < 0 ? err : 0;
}

/* A bypass of GOVERNANCE retention is honoured when asked for and
 * s3:BypassGovernanceRetention is allowed (object:bypass-governance on the
 * token, and the bucket policy); a refusal here is no failure of the call. */
static bool del_may_bypass(cn_objects_req_t *rq, const cn__bkt_t *b, const del_run_t *d)
{
    if (!d->bypass)
        return false;
    cn_fail_t saved = rq->fail;
    cn_objects_what_t what = rq->what;
    bool ok = cn__authorize(rq, b, CN_ACT_BYPASS_GOVERNANCE_RETENTION, d->key, NULL, NULL) >= 0;
    rq->fail = saved;
    rq->what = what;
    return ok;
}

/* DELETE ?versionId: that version leaves for good, if it may. */
static cn_err_t del_version(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b,
                            del_run_t *d)
{
    cn__vref_t v;
    cn_err_t err = cn__obj_version_resolve(txn, rq, b->id, d->key, d->version, &v);
    err = cn__authorize_version(rq, b, CN_ACT_DELETE_OBJECT, d->key, err, NULL);
    if (err >= 0)
        err = cn__obj_version_removable(txn, rq, v.version_id, del_may_bypass(rq, b, d), d->now);
    if (err >= 0)
        err = cn__obj_version_purge(txn, v.version_id, v.table);
    if (err >= 0)
        err = del_restore(txn, b->id, d->key);
    d->res = (cn_objects_delete_result_t){ true, v.version_id, v.vnull, v.marker };
    return err;
}

static cn_err_t delete_body(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b, void *ctx)
{
    del_run_t *d = ctx;
    memset(&d->res, 0, sizeof d->res);
    cn_err_t err = cn__key_check(rq, d->key);
    if (err < 0 || d->version)
        return err < 0 ? err : del_version(txn, rq, b, d);
    cn__objacl_t acl = { 0 };
    cn__vstate_t vs;
    int64_t vid = 0;
    err = cn__obj_vstate(txn, b->id, &vs);
    if (err >= 0)
        err = cn__version_find(txn, b->id, d->key, &vid, NULL, &acl);
    bool off = vs.versioning == CN_OBJ_VERSIONING_OFF;
    /* A versioned bucket marks even a missing key (S3), unless asked not to. */
    if (err >= 0)
        err = cn__authorize_found(rq, b, CN_ACT_DELETE_OBJECT, d->key,
                                  vid || (!off && !d->must_exist) ? 0 : CN_E_NOT_FOUND, &acl);
    cn__objacl_free(&acl);
    if (err >= 0 && off)
        return cn__obj_version_purge(txn, vid, CN__VT_CURRENT);
    cn__vmark_t m = { b->id,
                      d->key,
                      vs.versioning != CN_OBJ_VERSIONING_ENABLED,
                      d->now,
                      cn__principal_name(rq) ? cn__principal_name(rq) : b->owner,
                      0 };
    if (err >= 0)
        err = cn__obj_marker_make(txn, rq, &m);
    if (err >= 0)
        d->res = (cn_objects_delete_result_t){ true, m.vid, m.vnull, true };
    return err;
}

cn_err_t cn_objects_delete_version(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                   const char *key, const char *version, bool bypass_governance,
                                   cn_objects_delete_result_t *res)
{
    del_run_t d = {
        .key = key, .version = version, .bypass = bypass_governance, .now = cn_wall_ms()
    };
    cn_err_t err = cn__bkt_run(o, rq, bucket, CN_ACT_INVALID, CN_META_RUN_WRITE | CN_META_RETRY,
                               delete_body, &d);
    if (res)
        *res = err >= 0 ? d.res : (cn_objects_delete_result_t){ 0 };
    return err;
}

cn_err_t cn_objects_delete(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                           const char *key)
{
    del_run_t d = { .key = key, .must_exist = true, .now = cn_wall_ms() };
    return cn__bkt_run(o, rq, bucket, CN_ACT_INVALID, CN_META_RUN_WRITE | CN_META_RETRY,
                       delete_body, &d);
}

/* An object ACL to read (out) or to write (in) on key. */
typedef struct key_acl {
    const char *key;
    cn_authz_acl_t *out;
    const cn_authz_acl_t *in;
} key_acl_t;

static cn_err_t acl_get_body(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b,
                             void *ctx)
{
    const key_acl_t *ka = ctx;
    cn__objacl_t acl = { 0 };
    int64_t vid = 0;
    cn_err_t err = obj_find_for(txn, rq, b, ka->key, CN_ACT_GET_OBJECT_ACL, &vid, &acl);
    if (err >= 0) {
        if (acl.acl)
            *ka->out = *acl.acl;
        else
            err = cn_authz_acl_canned(ka->out, "private", 7, acl.owner, b->owner, false);
    }
    cn__objacl_free(&acl);
    return err;
}

cn_err_t cn_objects_object_acl_get(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                   const char *key, cn_authz_acl_t *out)
{
    key_acl_t ka = { key, out, NULL };
    return cn__bkt_run(o, rq, bucket, CN_ACT_INVALID, CN_META_RUN_READ | CN_META_RETRY,
                       acl_get_body, &ka);
}

static cn_err_t acl_set_body(cn_meta_txn_t *txn, cn_objects_req_t *rq, const cn__bkt_t *b,
                             void *ctx)
{
    const key_acl_t *ka = ctx;
    cn__objacl_t acl = { 0 };
    cn_buf_t text = { 0 };
    int64_t vid = 0;
    cn_err_t err = obj_find_for(txn, rq, b, ka->key, CN_ACT_PUT_OBJECT_ACL, &vid, &acl);
    if (err >= 0)
        err = cn__pab_put_acl(rq, b, ka->in);
    if (err >= 0)
        err = cn__acl_for_put(ka->in, acl.owner, &text);
    if (err >= 0)
        err = cn_meta_execf(txn, cn__sql_obj[CN_SQL_OBJ_VERSION_SET_ACL], "ti",
                            (const char *)text.data, text.len, vid);
    cn_buf_free(&text);
    cn__objacl_free(&acl);
    return err;
}

cn_err_t cn_objects_object_acl_set(cn_objects_t *o, cn_objects_req_t *rq, const char *bucket,
                                   const char *key, const cn_authz_acl_t *acl_in)
{
    if (!acl_in)
        return CN_E_INVALID;
    key_acl_t ka = { key, NULL, acl_in };
    return cn__bkt_run(o, rq, bucket, CN_ACT_INVALID, CN_META_RUN_WRITE | CN_META_RETRY,
                       acl_set_body, &ka);
}
