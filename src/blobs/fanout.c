/* Fanout: a put in flight that names its digest is a broadcast, and fetches
 * of that digest in the same namespace tap it chunk for chunk.
 *
 * Discipline (the spec's tap-time rule):
 *  1. A tap receives the bytes pushed after it subscribed, nothing before:
 *     a tap that joined mid-put has no prefix, fails the consumer's hash
 *     check, and the consumer re-fetches (the late joiner is then served by
 *     the store).
 *  2. The putter never waits for a tap: push copies into each tap's queue;
 *     a tap whose queue would pass opts.tap_queue_bytes, or the queues of
 *     all taps together opts.fanout_budget_bytes, is dropped (its reader
 *     sees CN_E_CLOSED) and must late-join.
 *  3. A broadcast ends cleanly only after the put committed (bytes durable,
 *     membership recorded), and is unregistered only then, so a fetch that
 *     finds neither a member nor a broadcast has really missed (fetch.c
 *     re-checks membership after a failed tap lookup).
 *  4. Fetches never start broadcasts: only put_begin does.
 *
 * One mutex (b->fan_mu) guards the registry, every broadcast and every tap;
 * pushes and reads hold it only to move queue pointers and copy one chunk.
 */
#include "blobs_int.h"
#include "cairn/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
    BC_LIVE = 0,
    BC_DONE,
    BC_FAILED,
    BC_SHUTDOWN
};

typedef struct cn__chunk {
    struct cn__chunk *next;
    size_t len, off;
    uint8_t data[];
} cn__chunk_t;

struct cn__tap {
    cn__bcast_t *bc;
    cn__tap_t *next;
    cn__chunk_t *head, *tail;
    size_t queued;
    bool dropped;
    bool waiting; /* suspended through w, to be resumed once */
    bool resumed; /* resumed; counted in b->resuming until it reads */
    cn_blobs_waiter_t w;
};

struct cn__bcast {
    char ns[CN_NAMESPACE_MAX + 1];
    cn_digest_t d;
    int state;
    int refs; /* the putter + each tap */
    bool registered;
    cn__tap_t *taps;
    cn__bcast_t *next;
};

static void free_chunks(cn_blobs_t *b, cn__tap_t *t)
{
    b->queued -= t->queued;
    cn__chunk_t *c = t->head;
    while (c) {
        cn__chunk_t *next = c->next;
        free(c);
        c = next;
    }
    t->head = t->tail = NULL;
    t->queued = 0;
}

/* Locked.  Wakes a tap's reader: resumes its suspended connection once. */
static void wake(cn_blobs_t *b, cn__tap_t *t)
{
    if (t->waiting) {
        t->waiting = false;
        t->resumed = true;
        b->resuming++;
        t->w.resume(t->w.ctx);
    }
}

/* Locked.  The tap's reader runs again (or the tap ends). */
static void settle(cn_blobs_t *b, cn__tap_t *t)
{
    if (t->resumed) {
        t->resumed = false;
        b->resuming--;
        pthread_cond_broadcast(&b->fan_cv);
    }
}

static void unregister_locked(cn_blobs_t *b, cn__bcast_t *bc)
{
    if (!bc->registered)
        return;
    for (cn__bcast_t **pp = &b->bcasts; *pp; pp = &(*pp)->next)
        if (*pp == bc) {
            *pp = bc->next;
            break;
        }
    bc->registered = false;
}

static void unref_locked(cn__bcast_t *bc, bool *free_it)
{
    *free_it = --bc->refs == 0;
}

cn_err_t cn__bcast_start(cn_blobs_t *b, const char *ns, const cn_digest_t *d, cn__bcast_t **out)
{
    *out = NULL;
    cn__bcast_t *bc = calloc(1, sizeof *bc);
    if (!bc)
        return -ENOMEM;
    snprintf(bc->ns, sizeof bc->ns, "%s", ns);
    bc->d = *d;
    bc->refs = 1;
    pthread_mutex_lock(&b->fan_mu);
    bool taken = b->shutdown;
    for (cn__bcast_t *x = b->bcasts; x && !taken; x = x->next)
        taken = !strcmp(x->ns, ns) && !memcmp(x->d.b, d->b, CN_DIGEST_LEN);
    if (!taken) {
        bc->registered = true;
        bc->next = b->bcasts;
        b->bcasts = bc;
    }
    pthread_mutex_unlock(&b->fan_mu);
    if (taken) {
        free(bc); /* another put of it broadcasts already */
        return CN_OK;
    }
    atomic_fetch_add(&b->n.broadcasts, 1);
    *out = bc;
    return CN_OK;
}

void cn__bcast_push(cn_blobs_t *b, cn__bcast_t *bc, const void *p, size_t n)
{
    if (!bc || n == 0)
        return;
    pthread_mutex_lock(&b->fan_mu);
    if (bc->state != BC_LIVE) {
        pthread_mutex_unlock(&b->fan_mu);
        return;
    }
    for (cn__tap_t *t = bc->taps; t; t = t->next) {
        if (t->dropped)
            continue;
        cn__chunk_t *c = NULL;
        if (t->queued + n <= b->opts.tap_queue_bytes &&
            b->queued + n <= b->opts.fanout_budget_bytes)
            c = malloc(sizeof *c + n);
        if (!c) {
            /* Too slow (or out of memory): drop it rather than wait. */
            t->dropped = true;
            free_chunks(b, t);
            atomic_fetch_add(&b->n.taps_dropped, 1);
            wake(b, t);
            continue;
        }
        c->next = NULL;
        c->len = n;
        c->off = 0;
        memcpy(c->data, p, n);
        if (t->tail)
            t->tail->next = c;
        else
            t->head = c;
        t->tail = c;
        t->queued += n;
        b->queued += n;
        wake(b, t);
    }
    pthread_cond_broadcast(&b->fan_cv);
    pthread_mutex_unlock(&b->fan_mu);
}

void cn__bcast_end(cn_blobs_t *b, cn__bcast_t *bc, bool ok)
{
    if (!bc)
        return;
    bool free_it;
    pthread_mutex_lock(&b->fan_mu);
    if (bc->state == BC_LIVE)
        bc->state = ok ? BC_DONE : BC_FAILED;
    unregister_locked(b, bc);
    for (cn__tap_t *t = bc->taps; t; t = t->next)
        wake(b, t);
    pthread_cond_broadcast(&b->fan_cv);
    unref_locked(bc, &free_it);
    pthread_mutex_unlock(&b->fan_mu);
    if (free_it)
        free(bc);
}

cn_err_t cn__tap_open(cn_blobs_t *b, const char *ns, const cn_digest_t *d, cn__tap_t **out)
{
    *out = NULL;
    cn__tap_t *t = calloc(1, sizeof *t);
    if (!t)
        return -ENOMEM;
    cn_err_t rc = CN_E_NOT_FOUND;
    pthread_mutex_lock(&b->fan_mu);
    if (b->shutdown)
        rc = CN_E_SHUTDOWN;
    for (cn__bcast_t *x = b->bcasts; x && rc == CN_E_NOT_FOUND; x = x->next) {
        if (x->state == BC_LIVE && !strcmp(x->ns, ns) && !memcmp(x->d.b, d->b, CN_DIGEST_LEN)) {
            t->bc = x;
            t->next = x->taps;
            x->taps = t;
            x->refs++;
            rc = CN_OK;
        }
    }
    pthread_mutex_unlock(&b->fan_mu);
    if (rc < 0) {
        free(t);
        return rc;
    }
    *out = t;
    return CN_OK;
}

ssize_t cn__tap_read(cn_blobs_t *b, cn__tap_t *t, void *buf, size_t max, const cn_blobs_waiter_t *w)
{
    pthread_mutex_lock(&b->fan_mu);
    settle(b, t);
    for (;;) {
        if (t->head) {
            cn__chunk_t *c = t->head;
            size_t n = c->len - c->off;
            if (n > max)
                n = max;
            memcpy(buf, c->data + c->off, n);
            c->off += n;
            t->queued -= n;
            b->queued -= n;
            if (c->off == c->len) {
                t->head = c->next;
                if (!t->head)
                    t->tail = NULL;
                free(c);
            }
            pthread_mutex_unlock(&b->fan_mu);
            return (ssize_t)n;
        }
        ssize_t r;
        if (t->dropped)
            r = CN_E_CLOSED;
        else if (t->bc->state == BC_DONE)
            r = 0;
        else if (t->bc->state == BC_FAILED)
            r = CN_E_CLOSED;
        else if (t->bc->state == BC_SHUTDOWN)
            r = CN_E_SHUTDOWN;
        else if (w) {
            /* Suspend under the lock, so the putter's resume comes after it. */
            w->suspend(w->ctx);
            t->w = *w;
            t->waiting = true;
            r = CN_E_AGAIN;
        } else {
            pthread_cond_wait(&b->fan_cv, &b->fan_mu);
            continue;
        }
        pthread_mutex_unlock(&b->fan_mu);
        return r;
    }
}

void cn__tap_close(cn_blobs_t *b, cn__tap_t *t)
{
    if (!t)
        return;
    bool free_it;
    pthread_mutex_lock(&b->fan_mu);
    cn__bcast_t *bc = t->bc;
    settle(b, t);
    for (cn__tap_t **pp = &bc->taps; *pp; pp = &(*pp)->next)
        if (*pp == t) {
            *pp = t->next;
            break;
        }
    free_chunks(b, t);
    unref_locked(bc, &free_it);
    pthread_mutex_unlock(&b->fan_mu);
    free(t);
    if (free_it)
        free(bc);
}

void cn__fan_shutdown(cn_blobs_t *b)
{
    pthread_mutex_lock(&b->fan_mu);
    b->shutdown = true;
    while (b->bcasts) {
        cn__bcast_t *bc = b->bcasts;
        if (bc->state == BC_LIVE)
            bc->state = BC_SHUTDOWN;
        unregister_locked(b, bc);
        for (cn__tap_t *t = bc->taps; t; t = t->next)
            wake(b, t);
    }
    pthread_cond_broadcast(&b->fan_cv);
    /* A listener must not stop with a connection still suspended: give each
     * resumed reader a bounded moment to run and see the end. */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 2;
    while (b->resuming > 0)
        if (pthread_cond_timedwait(&b->fan_cv, &b->fan_mu, &until) != 0)
            break;
    pthread_mutex_unlock(&b->fan_mu);
}
