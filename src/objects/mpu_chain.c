/* The running SHA-256 of multipart uploads, so that CompleteMultipartUpload
 * need not read the whole object again for its SHA-256 (issue 17).
 *
 * Each upload in progress may have a chain: a SHA-256 context over its parts
 * 1, 2, ..., k in number order, with the blob digest of each part it hashed.
 * A part that commits is noted; the thread that notes the next part in
 * order reads it back from the store (just written: the page cache) and
 * extends the chain, and then any later parts already noted, so parts sent
 * in parallel are hashed while the others still stream.  Part 1 is not read
 * back when its put hands over the SHA-256 state it computed as the part
 * streamed: for an empty chain that is the chain's next state.  A later
 * part's own state cannot serve (SHA-256 states do not compose: the chain
 * needs the part's bytes hashed after the parts before it), so a part k that
 * begins when the chain covers exactly parts 1..k-1 (the usual sequential
 * upload) takes a copy of the chain's state and feeds it its bytes as they
 * stream (a feed, claimed: one at a time per chain); at commit the chain
 * takes that copy as its next state when it still stands where the copy was
 * made (same chain, same parts), and reads nothing.  The chain is never fed
 * directly, so a part that fails, is aborted or is overtaken leaves it as it
 * was; such a part, and any part that began with no feed, is read back.  Completion takes
 * the chain and uses it when its parts are exactly the first parts listed
 * (same numbers, same blobs: the blobs are content-addressed, so the same
 * bytes); it reads only the parts after them.
 *
 * An UploadPartCopy part is a put session like any other (put.c): the
 * source bytes it reads pass through the same feed under the same guard.
 *
 * The chain is a cache, in memory only: a restart, another node, a part
 * re-uploaded with other bytes, parts out of order, a full table or a read
 * error all leave completion with its read pass, never with a wrong digest.
 * It must never be trusted for a part whose blob digest it did not hash.
 * Not saved with the upload's rows: cn_sha256_t is an OpenSSL 3.0 EVP
 * context, which has no way to export or import a midstate (the public
 * SHA256_CTX of the low-level API is deprecated and bypasses providers), so
 * an upload that spans a restart is read back once at completion, as before
 * (docs/performance.md, "Copied parts and restarts").
 *
 * Not a SHA-256 computed later instead: Jay's completion answers with it,
 * `cairn get` checks every download against it, S3's FULL_OBJECT checksum
 * (x-amz-checksum-mode) and CopyObject carry it, so the version row has it
 * from its first moment. */
#include "objects_int.h"

#include "cairn/metrics.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Uploads followed at once (least recently noted goes first), and parts
 * noted ahead of the chain per upload (more: the chain is given up). */
#define CHAIN_UPLOADS_MAX 64
#define CHAIN_AHEAD_MAX 64

typedef struct chain {
    struct chain *next;
    char id[CN_UPLOAD_ID_MAX + 1];
    cn_sha256_t *sha;       /* over done[0..ndone), in order */
    cn__chain_part_t *done; /* the parts hashed */
    size_t ndone, capdone;
    cn__chain_part_t ahead[CHAIN_AHEAD_MAX]; /* committed, not yet hashed */
    size_t nahead;
    bool busy;   /* a thread is extending sha and done (outside the lock) */
    bool broken; /* given up: completion reads every part */
    uint64_t used;
    uint64_t serial;  /* this chain among all made: done only grows within it */
    uint64_t feeding; /* the token of the part feeding a copy, 0 none */
} chain_t;

struct cn__chains {
    pthread_mutex_t mu;
    chain_t *head;
    size_t n;
    uint64_t tick;
    uint64_t ids; /* chain serials and feed tokens */
};

static const cn_metric_family_t chain_reads = {
    "cairn_objects_mpu_sha_reads_total",
    "Multipart parts read back from the store for the upload's SHA-256, by the running chain "
    "or by completion's read pass",
    CN_METRIC_COUNTER, NULL, 0
};
static const cn_metric_family_t chain_streamed = {
    "cairn_objects_mpu_sha_streamed_total",
    "Multipart parts whose bytes reached the upload's running SHA-256 as they streamed (not read "
    "back)",
    CN_METRIC_COUNTER, NULL, 0
};
static const cn_metric_family_t chain_dropped = {
    "cairn_objects_mpu_sha_feeds_dropped_total",
    "Multipart parts that fed a copy of the upload's running SHA-256 which the chain did not take "
    "(the part failed or was aborted, or the chain had moved on)",
    CN_METRIC_COUNTER, NULL, 0
};
static _Atomic(cn_metric_t *) reads_chain, reads_complete, streamed, dropped;

void cn__chain_count_reads(bool complete, size_t parts)
{
    if (!parts)
        return;
    cn_metric_t *m = complete ? cn_metric_cached(&reads_complete, &chain_reads, "by=\"complete\"")
                              : cn_metric_cached(&reads_chain, &chain_reads, "by=\"chain\"");
    cn_metric_add(m, (int64_t)parts);
}

cn__chains_t *cn__chains_new(void)
{
    cn__chains_t *cs = calloc(1, sizeof *cs);
    if (cs)
        pthread_mutex_init(&cs->mu, NULL);
    return cs;
}

static void chain_free(chain_t *c)
{
    if (!c)
        return;
    cn_sha256_free(c->sha);
    free(c->done);
    free(c);
}

void cn__chains_free(cn__chains_t *cs)
{
    if (!cs)
        return;
    while (cs->head) {
        chain_t *c = cs->head;
        cs->head = c->next;
        chain_free(c);
    }
    pthread_mutex_destroy(&cs->mu);
    free(cs);
}

/* Under cs->mu: unlinks and returns upload_id's chain, or NULL. */
static chain_t *chain_unlink(cn__chains_t *cs, const char *upload_id)
{
    for (chain_t **pp = &cs->head; *pp; pp = &(*pp)->next) {
        if (!strcmp((*pp)->id, upload_id)) {
            chain_t *c = *pp;
            *pp = c->next;
            cs->n--;
            return c;
        }
    }
    return NULL;
}

/* Under cs->mu: makes room for one more chain by dropping the least
 * recently used idle one.  false when every chain is busy. */
static bool chain_room(cn__chains_t *cs)
{
    if (cs->n < CHAIN_UPLOADS_MAX)
        return true;
    chain_t *old = NULL;
    for (chain_t *c = cs->head; c; c = c->next)
        if (!c->busy && (!old || c->used < old->used))
            old = c;
    if (!old)
        return false;
    chain_free(chain_unlink(cs, old->id));
    return true;
}

/* Under cs->mu: upload_id's chain, made when there is none (NULL when
 * memory or room is short). */
static chain_t *chain_get(cn__chains_t *cs, const char *upload_id)
{
    for (chain_t *c = cs->head; c; c = c->next)
        if (!strcmp(c->id, upload_id))
            return c;
    if (!chain_room(cs))
        return NULL;
    chain_t *c = calloc(1, sizeof *c);
    if (!c || cn_sha256_new(&c->sha) < 0) {
        free(c);
        return NULL;
    }
    snprintf(c->id, sizeof c->id, "%s", upload_id);
    c->serial = ++cs->ids;
    c->next = cs->head;
    cs->head = c;
    cs->n++;
    return c;
}

/* Under cs->mu: records part as committed, replacing an earlier note of its
 * number.  false when too many parts are ahead of the chain. */
static bool chain_note(chain_t *c, const cn__chain_part_t *part)
{
    for (size_t i = 0; i < c->nahead; i++) {
        if (c->ahead[i].number == part->number) {
            c->ahead[i] = *part;
            return true;
        }
    }
    if (c->nahead == CHAIN_AHEAD_MAX)
        return false;
    c->ahead[c->nahead++] = *part;
    return true;
}

/* Under cs->mu: takes the noted part that extends the chain into *out. */
static bool chain_next(chain_t *c, cn__chain_part_t *out)
{
    int32_t want = c->ndone ? c->done[c->ndone - 1].number + 1 : 1;
    for (size_t i = 0; i < c->nahead; i++) {
        if (c->ahead[i].number == want) {
            *out = c->ahead[i];
            c->ahead[i] = c->ahead[--c->nahead];
            return true;
        }
    }
    return false;
}

static cn_err_t chain_sink(void *ctx, const void *p, size_t n)
{
    cn_sha256_update(ctx, p, n);
    return 0;
}

/* A committing part's feed (its state over the chain's first base parts and
 * then its own bytes), and the part it is of. */
typedef struct chain_own {
    const cn__chain_part_t *part;
    cn__chain_feed_t *f;
} chain_own_t;

/* True when own's state is the chain's next state for part: own is part's
 * feed and the chain covers exactly the parts own's copy covered (base 0:
 * any chain's empty state; else the same chain, which only ever grows). */
static bool chain_own_fits(const chain_t *c, const cn__chain_part_t *part, const chain_own_t *own)
{
    const cn__chain_feed_t *f = own->f;
    return f && f->sha && own->part->number == part->number && own->part->size == part->size &&
           !memcmp(own->part->digest.b, part->digest.b, CN_DIGEST_LEN) && c->ndone == f->base &&
           part->number == (int64_t)f->base + 1 && (f->base == 0 || f->serial == c->serial);
}

/* The busy thread, without the lock: hashes part's bytes into c->sha (or,
 * when own fits, takes own's state instead of reading: the part is then
 * never hashed twice) and appends it to c->done.  An error leaves sha
 * unusable (the caller breaks the chain). */
static cn_err_t chain_hash(cn_objects_t *o, chain_t *c, const cn__chain_part_t *part,
                           chain_own_t *own)
{
    if (c->ndone == c->capdone) {
        size_t nc = c->capdone ? c->capdone * 2 : 16;
        cn__chain_part_t *nd = realloc(c->done, nc * sizeof *nd);
        if (!nd)
            return -ENOMEM;
        c->done = nd;
        c->capdone = nc;
    }
    if (chain_own_fits(c, part, own)) {
        cn_sha256_free(c->sha);
        c->sha = own->f->sha;
        own->f->sha = NULL;
        c->done[c->ndone++] = *part;
        cn_metric_add(cn_metric_cached(&streamed, &chain_streamed, "%s", ""), 1);
        return 0;
    }
    cn__chain_count_reads(false, 1);
    uint64_t served = 0;
    cn_err_t err = 0;
    if (part->size)
        err = cn_store_read_range(o->store, &part->digest, 0, part->size, chain_sink, c->sha, NULL,
                                  &served);
    if (err >= 0 && served != part->size)
        err = CN_E_CORRUPT;
    if (err >= 0)
        c->done[c->ndone++] = *part;
    return err;
}

/* Under cs->mu: upload_id's chain, or NULL. */
static chain_t *chain_find(cn__chains_t *cs, const char *upload_id)
{
    for (chain_t *c = cs->head; c; c = c->next)
        if (!strcmp(c->id, upload_id))
            return c;
    return NULL;
}

bool cn__chain_feed_begin(cn_objects_t *o, const char *upload_id, int32_t number,
                          cn__chain_feed_t *f)
{
    memset(f, 0, sizeof *f);
    cn__chains_t *cs = o->chains;
    if (!cs || number < 1)
        return false;
    pthread_mutex_lock(&cs->mu);
    chain_t *c = chain_get(cs, upload_id);
    /* Not busy: only the busy thread touches sha outside the lock. */
    if (c && !c->broken && !c->busy && !c->feeding && c->ndone == (size_t)number - 1 &&
        cn_sha256_copy(c->sha, &f->sha) >= 0) {
        c->used = ++cs->tick;
        f->serial = c->serial;
        f->base = c->ndone;
        f->token = c->feeding = ++cs->ids;
    } else {
        f->sha = NULL;
    }
    pthread_mutex_unlock(&cs->mu);
    return f->sha != NULL;
}

/* Under cs->mu: releases f's claim on upload_id's chain, if it still holds
 * one. */
static void chain_unclaim(cn__chains_t *cs, const char *upload_id, cn__chain_feed_t *f)
{
    chain_t *c = f->token ? chain_find(cs, upload_id) : NULL;
    if (c && c->feeding == f->token)
        c->feeding = 0;
    f->token = 0;
}

void cn__chain_feed_end(cn_objects_t *o, const char *upload_id, cn__chain_feed_t *f)
{
    if (!f)
        return;
    cn__chains_t *cs = o->chains;
    if (cs && f->token) {
        pthread_mutex_lock(&cs->mu);
        chain_unclaim(cs, upload_id, f);
        pthread_mutex_unlock(&cs->mu);
    }
    if (f->sha)
        cn_metric_add(cn_metric_cached(&dropped, &chain_dropped, "%s", ""), 1);
    cn_sha256_free(f->sha);
    f->sha = NULL;
}

void cn__chain_part_done(cn_objects_t *o, const char *upload_id, const cn__chain_part_t *part,
                         cn__chain_feed_t *f)
{
    cn__chains_t *cs = o->chains;
    chain_own_t own = { .part = part, .f = f };
    if (!cs)
        goto out;
    pthread_mutex_lock(&cs->mu);
    if (f)
        chain_unclaim(cs, upload_id, f);
    chain_t *c = chain_get(cs, upload_id);
    if (!c || c->broken) {
        pthread_mutex_unlock(&cs->mu);
        goto out;
    }
    c->used = ++cs->tick;
    if (!chain_note(c, part))
        c->broken = true;
    if (c->broken || c->busy) {
        /* The busy thread hashes this part too, if it extends the chain. */
        pthread_mutex_unlock(&cs->mu);
        goto out;
    }
    c->busy = true;
    cn__chain_part_t next;
    while (!c->broken && chain_next(c, &next)) {
        pthread_mutex_unlock(&cs->mu);
        cn_err_t err = chain_hash(o, c, &next, &own);
        pthread_mutex_lock(&cs->mu);
        if (err < 0)
            c->broken = true;
    }
    c->busy = false;
    pthread_mutex_unlock(&cs->mu);
out:
    cn__chain_feed_end(o, upload_id, f);
}

cn_sha256_t *cn__chain_take(cn_objects_t *o, const char *upload_id, const cn__chain_part_t *parts,
                            size_t n, size_t *covered)
{
    *covered = 0;
    cn__chains_t *cs = o->chains;
    if (!cs)
        return NULL;
    pthread_mutex_lock(&cs->mu);
    chain_t *c = NULL;
    for (chain_t *it = cs->head; it; it = it->next)
        if (!strcmp(it->id, upload_id))
            c = it;
    /* A chain being extended stays: its thread owns it. */
    if (c && !c->busy)
        c = chain_unlink(cs, upload_id);
    else
        c = NULL;
    pthread_mutex_unlock(&cs->mu);
    if (!c)
        return NULL;
    bool ok = !c->broken && c->ndone <= n;
    for (size_t i = 0; ok && i < c->ndone; i++)
        ok = c->done[i].number == parts[i].number && c->done[i].size == parts[i].size &&
             !memcmp(c->done[i].digest.b, parts[i].digest.b, CN_DIGEST_LEN);
    cn_sha256_t *sha = NULL;
    if (ok) {
        sha = c->sha;
        c->sha = NULL;
        *covered = c->ndone;
    }
    chain_free(c);
    return sha;
}

void cn__chain_drop(cn_objects_t *o, const char *upload_id)
{
    cn__chains_t *cs = o->chains;
    if (!cs)
        return;
    pthread_mutex_lock(&cs->mu);
    chain_t *c = NULL;
    for (chain_t *it = cs->head; it; it = it->next)
        if (!strcmp(it->id, upload_id))
            c = it;
    if (c && c->busy)
        c->broken = true; /* its thread stops; the table's limit frees it */
    else if (c)
        chain_free(chain_unlink(cs, upload_id));
    pthread_mutex_unlock(&cs->mu);
}
