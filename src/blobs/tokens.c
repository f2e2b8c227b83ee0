/* Pin tokens: the handle a put answers with.  The token *is* the pin — there
 * is no second pin state:
 *
 *   pin_ttl_ms == 0   the token holds an in-process store guard; nothing
 *                     expires (the embedded engine: process lifetime).
 *   pin_ttl_ms  > 0   the token names a durable pin row expiring TTL after
 *                     the put; a renewal writes a fresh row (expiring TTL
 *                     from now) and then drops the old one, so the blob is
 *                     protected without a gap.  An expired token is
 *                     forgotten and answers false; the store's sweeper drops
 *                     the expired row.
 *
 * The token→pin mapping is this process's memory: a token is valid only on
 * the node that minted it, and a restart forgets every token (the re-put is
 * the backstop).  The table is bounded by opts.max_tokens: past it the
 * oldest token's pin ends first.
 */
#include "blobs_int.h"
#include "cairn/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cn_err_t cn__tok_init(cn__tokens_t *t)
{
    memset(t, 0, sizeof *t);
    t->nbuckets = 1024;
    t->buckets = calloc(t->nbuckets, sizeof *t->buckets);
    if (!t->buckets)
        return -ENOMEM;
    pthread_mutex_init(&t->mu, NULL);
    return CN_OK;
}

static size_t tok_hash(const char *id)
{
    uint64_t h = 1469598103934665603ull;
    for (; *id; id++)
        h = (h ^ (uint8_t)*id) * 1099511628211ull;
    return (size_t)h;
}

static void list_unlink(cn__tokens_t *t, cn__tok_t *e)
{
    if (e->older)
        e->older->younger = e->younger;
    else
        t->oldest = e->younger;
    if (e->younger)
        e->younger->older = e->older;
    else
        t->youngest = e->older;
    e->older = e->younger = NULL;
}

static void list_push_young(cn__tokens_t *t, cn__tok_t *e)
{
    e->older = t->youngest;
    e->younger = NULL;
    if (t->youngest)
        t->youngest->younger = e;
    else
        t->oldest = e;
    t->youngest = e;
}

static cn__tok_t **slot_of(cn__tokens_t *t, const char *id)
{
    cn__tok_t **pp = &t->buckets[tok_hash(id) & (t->nbuckets - 1)];
    while (*pp && strcmp((*pp)->id, id) != 0)
        pp = &(*pp)->hnext;
    return pp;
}

/* Unlinks e from both structures (locked). */
static void remove_locked(cn__tokens_t *t, cn__tok_t *e)
{
    cn__tok_t **pp = slot_of(t, e->id);
    if (*pp == e)
        *pp = e->hnext;
    list_unlink(t, e);
    t->count--;
}

static void grow_locked(cn__tokens_t *t)
{
    size_t nb = t->nbuckets * 2;
    cn__tok_t **nbk = calloc(nb, sizeof *nbk);
    if (!nbk)
        return; /* keep the smaller table: slower, still correct */
    for (size_t i = 0; i < t->nbuckets; i++) {
        cn__tok_t *e = t->buckets[i];
        while (e) {
            cn__tok_t *next = e->hnext;
            size_t j = tok_hash(e->id) & (nb - 1);
            e->hnext = nbk[j];
            nbk[j] = e;
            e = next;
        }
    }
    free(t->buckets);
    t->buckets = nbk;
    t->nbuckets = nb;
}

/* Ends a pin that is no longer in the table (unlocked: may write meta). */
static void release(cn_blobs_t *b, cn__tok_t *e)
{
    if (e->guard)
        cn_store_guard_release(e->guard);
    else if (e->pin_id && e->expires_ms > cn_wall_ms())
        (void)cn_store_unpin(b->store, e->pin_id);
    free(e);
}

static void release_list(cn_blobs_t *b, cn__tok_t *list)
{
    while (list) {
        cn__tok_t *next = list->hnext;
        release(b, list);
        list = next;
    }
}

cn_err_t cn__tok_mint(cn_blobs_t *b, const char *ns, const cn_digest_t *d,
                      char id[CN_BLOBS_TOKEN_LEN + 1])
{
    cn__tok_t *e = calloc(1, sizeof *e);
    if (!e)
        return -ENOMEM;
    uint8_t rnd[16];
    cn_err_t rc = cn_random_bytes(rnd, sizeof rnd);
    if (rc < 0) {
        free(e);
        return rc;
    }
    memcpy(e->id, "pt_", 3);
    cn_hex_encode(rnd, sizeof rnd, e->id + 3);
    e->id[CN_BLOBS_TOKEN_LEN] = 0;
    snprintf(e->ns, sizeof e->ns, "%s", ns);
    e->d = *d;
    if (b->opts.pin_ttl_ms > 0) {
        char owner[8 + CN_NAMESPACE_MAX + 1];
        snprintf(owner, sizeof owner, "blobs:%s", ns);
        e->expires_ms = cn_wall_ms() + b->opts.pin_ttl_ms;
        rc = cn_store_pin(b->store, d, owner, e->expires_ms, &e->pin_id);
    } else {
        rc = cn_store_guard_acquire(b->store, d, &e->guard);
    }
    if (rc < 0) {
        free(e);
        return rc;
    }
    memcpy(id, e->id, sizeof e->id);

    cn__tokens_t *t = &b->tok;
    cn__tok_t *gone = NULL;
    int64_t now = cn_wall_ms();
    pthread_mutex_lock(&t->mu);
    /* Forget expired tokens (oldest first: with one TTL, age order is
     * expiry order) and make room under the bound. */
    while (t->oldest && ((t->oldest->expires_ms && t->oldest->expires_ms <= now) ||
                         t->count >= b->opts.max_tokens)) {
        cn__tok_t *old = t->oldest;
        remove_locked(t, old);
        old->hnext = gone;
        gone = old;
    }
    if (t->count >= t->nbuckets)
        grow_locked(t);
    cn__tok_t **pp = &t->buckets[tok_hash(e->id) & (t->nbuckets - 1)];
    e->hnext = *pp;
    *pp = e;
    list_push_young(t, e);
    t->count++;
    pthread_mutex_unlock(&t->mu);
    release_list(b, gone);
    return CN_OK;
}

cn_err_t cn__tok_renew(cn_blobs_t *b, const char *ns, const cn_digest_t *d, const char *token,
                       bool *ok)
{
    *ok = false;
    if (strlen(token) != CN_BLOBS_TOKEN_LEN)
        return CN_OK;
    cn__tokens_t *t = &b->tok;
    int64_t now = cn_wall_ms();
    pthread_mutex_lock(&t->mu);
    cn__tok_t *e = *slot_of(t, token);
    if (!e || strcmp(e->ns, ns) != 0 || memcmp(e->d.b, d->b, CN_DIGEST_LEN) != 0) {
        pthread_mutex_unlock(&t->mu);
        return CN_OK;
    }
    if (e->expires_ms && e->expires_ms <= now) {
        remove_locked(t, e);
        pthread_mutex_unlock(&t->mu);
        e->hnext = NULL;
        release(b, e);
        return CN_OK;
    }
    if (!e->expires_ms) { /* process-lifetime guard */
        list_unlink(t, e);
        list_push_young(t, e);
        pthread_mutex_unlock(&t->mu);
        *ok = true;
        return CN_OK;
    }
    pthread_mutex_unlock(&t->mu);

    /* Fresh row first, then drop the old one: no instant without a pin. */
    char owner[8 + CN_NAMESPACE_MAX + 1];
    snprintf(owner, sizeof owner, "blobs:%s", ns);
    int64_t expires = cn_wall_ms() + b->opts.pin_ttl_ms;
    uint64_t pin_id = 0;
    cn_err_t rc = cn_store_pin(b->store, d, owner, expires, &pin_id);
    if (rc < 0)
        return rc;
    uint64_t old_pin = 0;
    bool swapped = false;
    pthread_mutex_lock(&t->mu);
    e = *slot_of(t, token); /* it may have ended meanwhile */
    if (e && e->expires_ms > cn_wall_ms()) {
        old_pin = e->pin_id;
        e->pin_id = pin_id;
        e->expires_ms = expires;
        list_unlink(t, e);
        list_push_young(t, e);
        swapped = true;
    }
    pthread_mutex_unlock(&t->mu);
    (void)cn_store_unpin(b->store, swapped ? old_pin : pin_id);
    *ok = swapped;
    return CN_OK;
}

static int cmp_digest(const void *a, const void *b)
{
    return memcmp(a, b, CN_DIGEST_LEN);
}

void cn__tok_end(cn_blobs_t *b, const char *ns, const cn_digest_t *d, size_t n)
{
    if (n == 0)
        return;
    cn_digest_t *sorted = malloc(n * sizeof *sorted);
    if (sorted) {
        memcpy(sorted, d, n * sizeof *sorted);
        qsort(sorted, n, sizeof *sorted, cmp_digest);
    }
    cn__tokens_t *t = &b->tok;
    cn__tok_t *gone = NULL;
    pthread_mutex_lock(&t->mu);
    for (cn__tok_t *e = t->oldest; e;) {
        cn__tok_t *next = e->younger;
        bool hit = false;
        if (strcmp(e->ns, ns) == 0) {
            if (sorted)
                hit = bsearch(&e->d, sorted, n, sizeof *sorted, cmp_digest) != NULL;
            else
                for (size_t i = 0; i < n && !hit; i++)
                    hit = memcmp(e->d.b, d[i].b, CN_DIGEST_LEN) == 0;
        }
        if (hit) {
            remove_locked(t, e);
            e->hnext = gone;
            gone = e;
        }
        e = next;
    }
    pthread_mutex_unlock(&t->mu);
    free(sorted);
    release_list(b, gone);
}

size_t cn__tok_count(cn_blobs_t *b)
{
    pthread_mutex_lock(&b->tok.mu);
    size_t n = b->tok.count;
    pthread_mutex_unlock(&b->tok.mu);
    return n;
}

void cn__tok_fini(cn_blobs_t *b)
{
    cn__tokens_t *t = &b->tok;
    if (!t->buckets)
        return;
    cn__tok_t *e = t->oldest;
    while (e) {
        cn__tok_t *next = e->younger;
        e->hnext = NULL;
        release(b, e);
        e = next;
    }
    free(t->buckets);
    t->buckets = NULL;
    pthread_mutex_destroy(&t->mu);
}
