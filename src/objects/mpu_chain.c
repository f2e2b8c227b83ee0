/* The running SHA-256 of multipart uploads, so that CompleteMultipartUpload
 * need not read the whole object again for its SHA-256 (issue 17).
 *
 * Each upload in progress may have a chain: a SHA-256 context over its parts
 * 1, 2, ..., k in number order, with the blob digest of each part it hashed.
 * A part that commits is noted; the thread that notes the next part in
 * order reads it back from the store (just written: the page cache) and
 * extends the chain, and then any later parts already noted, so parts sent
 * in parallel are hashed while the others still stream.  Completion takes
 * the chain and uses it when its parts are exactly the first parts listed
 * (same numbers, same blobs: the blobs are content-addressed, so the same
 * bytes); it reads only the parts after them.
 *
 * The chain is a cache, in memory only: a restart, another node, a part
 * re-uploaded with other bytes, parts out of order, a full table or a read
 * error all leave completion with its read pass, never with a wrong digest.
 * It must never be trusted for a part whose blob digest it did not hash.
 *
 * Not a SHA-256 computed later instead: Jay's completion answers with it,
 * `cairn get` checks every download against it, S3's FULL_OBJECT checksum
 * (x-amz-checksum-mode) and CopyObject carry it, so the version row has it
 * from its first moment. */
#include "objects_int.h"

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
} chain_t;

struct cn__chains {
    pthread_mutex_t mu;
    chain_t *head;
    size_t n;
    uint64_t tick;
};

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

/* The busy thread, without the lock: hashes part's bytes into c->sha and
 * appends it to c->done.  An error leaves sha unusable (the caller breaks
 * the chain). */
static cn_err_t chain_hash(cn_objects_t *o, chain_t *c, const cn__chain_part_t *part)
{
    if (c->ndone == c->capdone) {
        size_t nc = c->capdone ? c->capdone * 2 : 16;
        cn__chain_part_t *nd = realloc(c->done, nc * sizeof *nd);
        if (!nd)
            return -ENOMEM;
        c->done = nd;
        c->capdone = nc;
    }
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

void cn__chain_part_done(cn_objects_t *o, const char *upload_id, const cn__chain_part_t *part)
{
    cn__chains_t *cs = o->chains;
    if (!cs)
        return;
    pthread_mutex_lock(&cs->mu);
    chain_t *c = chain_get(cs, upload_id);
    if (!c || c->broken) {
        pthread_mutex_unlock(&cs->mu);
        return;
    }
    c->used = ++cs->tick;
    if (!chain_note(c, part))
        c->broken = true;
    if (c->broken || c->busy) {
        /* The busy thread hashes this part too, if it extends the chain. */
        pthread_mutex_unlock(&cs->mu);
        return;
    }
    c->busy = true;
    cn__chain_part_t next;
    while (!c->broken && chain_next(c, &next)) {
        pthread_mutex_unlock(&cs->mu);
        cn_err_t err = chain_hash(o, c, &next);
        pthread_mutex_lock(&cs->mu);
        if (err < 0)
            c->broken = true;
    }
    c->busy = false;
    pthread_mutex_unlock(&cs->mu);
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
