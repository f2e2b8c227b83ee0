/* The event loops: each holds the idle connections it was given, reads
 * request heads, hands connections to the worker pools and takes them back,
 * enforces the loop-side deadlines (handshake start, idle), and runs its part
 * of graceful shutdown.  Loop 0 also accepts: it admits each connection
 * (admit.c, global per listener) and hands it to the least loaded loop,
 * where it lives until it closes.
 *
 * Only a connection's loop changes its st, its poll registration and the
 * loop-owned list; a connection in CN__ST_WORKER belongs to a worker.  What
 * the loops share (admission, the worker share) is under the server's
 * mutexes; a loop asks another to act through its return list, its ready
 * list or its evictions flag, each followed by a write to its eventfd.
 * Nothing here blocks on a peer: reads are non-blocking, busy() writes at
 * most one short refusal into an empty socket buffer, and a request the
 * adapter answers on the loop (fast()) writes without waiting, leaving what
 * the socket does not take to a worker.
 *
 * Registration rule (watch): a connection is in epoll only while its loop
 * owns it, and a worker never receives its events.  It is registered
 * one-shot (an event disarms it, so a hand-off to a worker costs no
 * epoll_ctl and the return one re-arm), except where the loop answers
 * nearly every request itself: a plaintext connection of an adapter with
 * fast() on a server with a loop per CPU (persist_ok) is registered
 * level-triggered for reading and stays armed between the requests the
 * loop answers, so an answered request costs no epoll_ctl; what it pays
 * instead is an EPOLL_CTL_DEL when it is handed to a worker (loop_quiet)
 * and an ADD when it comes back.  So a connection whose last request went
 * to a worker (to_worker: a PUT, a large GET) comes back one-shot, and a
 * stream of such requests pays one re-arm each instead of a DEL and an
 * ADD; the first request the loop answers again makes it persistent (one
 * MOD).  Level-triggered, not edge-triggered:
 * bytes left in the socket (a pipelined request behind the CN__FAST_RUN
 * cap, a request declined to a worker and back) report again by
 * themselves, as with a re-armed one-shot registration. */
#include "net/net_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#define CN__MAX_EVENTS 256
#define CN__ACCEPT_BATCH 64
/* How long a listener that found no descriptor stays out of epoll, unless a
 * connection of ours closes first (see accept_pause). */
#define CN__ACCEPT_RETRY_MS 100
/* Requests of one connection the loop answers in a row (fast()) before the
 * next one goes to a worker: a pipelining client cannot hold the loop. */
#define CN__FAST_RUN 8
/* The busy-loop cut-off, for a server with fewer loops than CPUs: the most
 * events one wait may bring for the loop still to answer requests itself
 * (fast()).  Past it the loop is the bottleneck on its one core while CPUs
 * the loops do not use are idle, and the workers spread the requests over
 * them.  With a loop per CPU (cairnd's default) there is no idle CPU to
 * spread to, and the hand-off only adds work (a semaphore post, a worker
 * wake-up, the return list and its eventfd, a re-arm): measured at 64
 * connections on 2 CPUs and 2 loops, server CPU per 4 KiB Jay GET was 27-30
 * us with every request answered on the loops against 29-34 us with the
 * cut-off (which sent 82-85 % of them to workers), 46 against 57-62 us when
 * half the object heads missed the cache, and futex calls per GET fell from
 * 5.1 to 1.1 (docs/performance.md).  So the cut-off is off then
 * (loop_register).  Fairness
 * between connections does not rest on it: each event of a batch is served
 * in turn, and one connection gets at most CN__FAST_RUN requests in a row. */
#define CN__FAST_BATCH 8

/* The batch being processed (l->batch), so that a connection dropped while
 * handling one event (an eviction victim) is not touched by a later event. */
struct cn__batch {
    cn__poll_event_t ev[CN__MAX_EVENTS];
    int n, i;
};
typedef struct cn__batch cn__batch_t;

/* ---- loop-owned bookkeeping -------------------------------------------------- */
static void lo_link(cn__loop_t *l, cn_conn_t *c)
{
    c->lo_prev = NULL;
    c->lo_next = l->lo_head;
    if (l->lo_head)
        l->lo_head->lo_prev = c;
    l->lo_head = c;
    if (c->deadline < l->next_timer)
        l->next_timer = c->deadline;
}

static void lo_unlink(cn__loop_t *l, cn_conn_t *c)
{
    if (c->lo_prev)
        c->lo_prev->lo_next = c->lo_next;
    else if (l->lo_head == c)
        l->lo_head = c->lo_next;
    if (c->lo_next)
        c->lo_next->lo_prev = c->lo_prev;
    c->lo_prev = c->lo_next = NULL;
}

/* Registers c for mask, one-shot or persistent by the rule at the top of
 * this file; an armed registration that already says so costs nothing. */
static void watch(cn__loop_t *l, cn_conn_t *c, int mask)
{
    cn_err_t e = CN_OK;
    /* A hello the loop waits for (hello.c) is told of as each part arrives. */
    if (mask == CN__EV_READ && c->st == CN__ST_HELLO && cn__hello_waits(c))
        mask |= CN__EV_EDGE;
    bool persist =
        (l->persist_ok && mask == CN__EV_READ && !c->ssl && c->ls->ad->fast && !c->to_worker) ||
        (mask == CN__EV_WRITE && c->st == CN__ST_TAIL) || (mask & CN__EV_EDGE);
    int m = persist ? mask : mask | CN__EV_ONESHOT;
    if (!c->in_poll)
        e = cn__poll_add(l->poll, c->fd, m, c);
    else if (!c->armed || c->poll_mask != mask || c->persist != persist)
        e = cn__poll_mod(l->poll, c->fd, m, c);
    if (e == CN_OK) {
        c->in_poll = true;
        c->armed = true;
        c->persist = persist;
        c->poll_mask = mask;
    } else {
        cn_warn("net", "epoll: %s", cn_strerror(e));
    }
}

static void unwatch(cn__loop_t *l, cn_conn_t *c)
{
    if (c->in_poll)
        cn__poll_del(l->poll, c->fd);
    c->in_poll = false;
    c->armed = false;
}

/* The loop lets go of c (to a worker, or to wait): no event may reach it
 * until watch again.  A fired one-shot registration is silent already; a
 * persistent one is removed. */
static void loop_quiet(cn__loop_t *l, cn_conn_t *c)
{
    if (c->armed)
        unwatch(l, c);
}

static void park_unlink(cn__loop_t *l, cn_conn_t *c)
{
    for (int p = 0; p < CN_POOL_COUNT; p++) {
        cn_conn_t **pp = &l->park_head[p], *prev = NULL;
        while (*pp && *pp != c) {
            prev = *pp;
            pp = &(*pp)->park_next;
        }
        if (*pp) {
            *pp = c->park_next;
            if (l->park_tail[p] == c)
                l->park_tail[p] = prev;
            c->park_next = NULL;
            return;
        }
    }
}

/* ---- the worker share ------------------------------------------------------------
 * One principal (or, without one, one source) may have at most
 * ls->share[pool] requests on a request pool at once, whatever loop their
 * connections live on; its next request waits in its own loop, unread and
 * holding no worker, until one of its own finishes.  So a client that
 * dribbles its requests cannot occupy every worker.  The counts and wait
 * lists are shared by the loops, under share_mu. */

/* A request of key f on pool p is over: the key's oldest held request (of
 * any loop) takes the slot.  Returns it when it lives on l, for the caller
 * to enqueue once share_mu is released; one of another loop goes to that
 * loop's ready list, and that loop is woken.  Once stopping, nothing is
 * passed on: every held connection is being closed.  (share_mu) */
static cn_conn_t *share_pass_locked(cn__loop_t *l, cn__count_ent_t *f, int p)
{
    f->busy[p]--;
    cn_conn_t *w = f->wait_head[p];
    if (!w || atomic_load(&l->srv->stopping))
        return NULL;
    f->wait_head[p] = w->park_next;
    if (!f->wait_head[p])
        f->wait_tail[p] = NULL;
    w->park_next = NULL;
    f->busy[p]++;
    w->busy_pool = p;
    if (w->loop == l)
        return w;
    cn__loop_t *o = w->loop;
    w->ready = true;
    if (o->ready_tail)
        o->ready_tail->park_next = w;
    else
        o->ready_head = w;
    o->ready_tail = w;
    cn__loop_wake(o);
    return NULL;
}

/* Takes a held connection off its key's wait list, or off l's ready list
 * (then the slot another loop gave it is passed on: returned as by
 * share_pass_locked).  (share_mu) */
static cn_conn_t *held_unlink_locked(cn__loop_t *l, cn_conn_t *c)
{
    if (c->ready) {
        cn_conn_t **pp = &l->ready_head, *prev = NULL;
        while (*pp && *pp != c) {
            prev = *pp;
            pp = &(*pp)->park_next;
        }
        if (CN_ALWAYS(*pp)) {
            *pp = c->park_next;
            if (l->ready_tail == c)
                l->ready_tail = prev;
        }
        c->park_next = NULL;
        c->ready = false;
        int p = c->busy_pool;
        c->busy_pool = -1;
        return share_pass_locked(l, c->fair, p);
    }
    cn__count_ent_t *f = c->fair;
    int p = c->pool;
    cn_conn_t **pp = &f->wait_head[p], *prev = NULL;
    while (*pp && *pp != c) {
        prev = *pp;
        pp = &(*pp)->park_next;
    }
    if (*pp) {
        *pp = c->park_next;
        if (f->wait_tail[p] == c)
            f->wait_tail[p] = prev;
    }
    c->park_next = NULL;
    return NULL;
}

static void enqueue(cn__loop_t *l, cn_conn_t *c);

/* w (of l, held) was given a slot: its request goes to the pool. */
static void held_go(cn__loop_t *l, cn_conn_t *w)
{
    if (!w)
        return;
    lo_unlink(l, w);
    enqueue(l, w);
}

/* Closes a loop-owned connection. */
static void drop(cn__loop_t *l, cn_conn_t *c)
{
    cn_server_t *s = l->srv;
    cn_conn_t *w = NULL;
    unwatch(l, c);
    lo_unlink(l, c);
    if (c->st == CN__ST_PARKED) {
        park_unlink(l, c);
    } else if (c->st == CN__ST_HELD) {
        pthread_mutex_lock(&s->share_mu);
        w = held_unlink_locked(l, c);
        pthread_mutex_unlock(&s->share_mu);
    }
    cn__batch_t *b = l->batch;
    if (b)
        for (int i = b->i + 1; i < b->n; i++)
            if (b->ev[i].ptr == c)
                b->ev[i].ptr = NULL;
    cn__conn_destroy(c);
    held_go(l, w);
    /* A descriptor is free: a listener paused for want of one may accept
     * again (on the acceptor's next pass, not in the middle of a batch). */
    if (l->idx == 0) {
        if (s->accept_retry != INT64_MAX)
            s->accept_retry = 0;
    } else if (atomic_load(&s->accept_paused)) {
        atomic_store(&s->fd_freed, true);
        cn__loop_wake(&s->loops[0]);
    }
}

/* ---- dispatch ------------------------------------------------------------------ */
static bool try_push(cn__loop_t *l, cn_conn_t *c)
{
    c->st = CN__ST_WORKER;
    cn_err_t e = cn__queue_push(&l->srv->pools[c->pool].q, c);
    if (e == CN_OK)
        return true;
    c->st = CN__ST_PARKED;
    return false;
}

/* Queues c (loop-owned, unlinked) on its pool, or parks it when the queue
 * is full. */
static void enqueue(cn__loop_t *l, cn_conn_t *c)
{
    int pool = c->pool;
    if (try_push(l, c))
        return;
    /* The pool's queue is full: wait here, unread, until a worker frees up.
     * A parked request has no loop deadline (the server is the slow one);
     * a parked handshake keeps its handshake deadline. */
    if (pool != CN_POOL_HANDSHAKE)
        c->deadline = INT64_MAX;
    c->park_next = NULL;
    if (l->park_tail[pool])
        l->park_tail[pool]->park_next = c;
    else
        l->park_head[pool] = c;
    l->park_tail[pool] = c;
    lo_link(l, c);
}

/* Sends c's next request to pool, unless its key holds its worker share:
 * then c waits here (CN__ST_HELD) until share_pass_locked gives it a slot. */
static void loop_dispatch(cn__loop_t *l, cn_conn_t *c, int pool)
{
    loop_quiet(l, c);
    lo_unlink(l, c);
    c->pool = pool;
    if (pool != CN_POOL_HANDSHAKE) {
        c->to_worker = true;
        cn__admit_settle(c); /* a complete request head arrived */
        unsigned cap = c->ls->share[pool];
        cn__count_ent_t *f = cap ? cn__admit_fair_key(c) : NULL;
        if (f) {
            pthread_mutex_lock(&l->srv->share_mu);
            bool hold = f->busy[pool] >= cap;
            if (hold) {
                c->st = CN__ST_HELD;
                c->deadline = INT64_MAX; /* the server is the slow one */
                c->park_next = NULL;
                if (f->wait_tail[pool])
                    f->wait_tail[pool]->park_next = c;
                else
                    f->wait_head[pool] = c;
                f->wait_tail[pool] = c;
            } else {
                f->busy[pool]++;
                c->busy_pool = pool;
            }
            pthread_mutex_unlock(&l->srv->share_mu);
            if (hold) {
                lo_link(l, c);
                return;
            }
        }
    }
    enqueue(l, c);
}

/* c's request is over: its key's next held request (if any) takes the slot. */
static void share_release(cn__loop_t *l, cn_conn_t *c)
{
    if (c->busy_pool < 0) /* c is not held: nobody else writes busy_pool now */
        return;
    pthread_mutex_lock(&l->srv->share_mu);
    int p = c->busy_pool;
    c->busy_pool = -1;
    cn_conn_t *w = share_pass_locked(l, c->fair, p);
    pthread_mutex_unlock(&l->srv->share_mu);
    held_go(l, w);
}

/* Held connections of l that another loop gave a slot: to their pools. */
static void take_ready(cn__loop_t *l)
{
    pthread_mutex_lock(&l->srv->share_mu);
    cn_conn_t *c = l->ready_head;
    l->ready_head = l->ready_tail = NULL;
    for (cn_conn_t *r = c; r; r = r->park_next)
        r->ready = false;
    pthread_mutex_unlock(&l->srv->share_mu);
    while (c) {
        cn_conn_t *next = c->park_next;
        c->park_next = NULL;
        held_go(l, c);
        c = next;
    }
}

static void unpark(cn__loop_t *l)
{
    for (int p = 0; p < CN_POOL_COUNT; p++) {
        while (l->park_head[p]) {
            cn_conn_t *c = l->park_head[p];
            /* Once pushed, c belongs to a worker, which reuses park_next for
             * the return list: unlink it from the park list first. */
            cn_conn_t *next = c->park_next;
            lo_unlink(l, c);
            if (!try_push(l, c)) {
                lo_link(l, c);
                break;
            }
            l->park_head[p] = next;
            if (!next)
                l->park_tail[p] = NULL;
        }
    }
}

/* The acceptor evicted connections of l (their sockets are shut down):
 * close those l holds; a worker-owned one comes back failed. */
static void drop_evicted(cn__loop_t *l)
{
    if (!atomic_exchange(&l->evictions, false))
        return;
    cn_conn_t *c = l->lo_head;
    while (c) {
        /* An evicted connection is pending, never held: dropping it passes
         * no slot on, so next stays on the list. */
        cn_conn_t *next = c->lo_next;
        if (atomic_load(&c->evicted))
            drop(l, c);
        c = next;
    }
}

/* ---- the rest of a reply (CN__ST_TAIL) ----------------------------------------------
 * A worker whose reply met a full socket handed the rest to the loop
 * (cn_conn_reply), or the loop's own answer (fast()) did not fit: the loop
 * writes it as the socket drains, registered level-triggered for writing,
 * so that each writable report costs no re-arm, by the reply's deadline
 * (loop_timers), then reads the next request.  At a stop it is in flight,
 * as a worker's request is: it keeps writing until the grace period ends. */
static void read_head(cn__loop_t *l, cn_conn_t *c, bool readable);

/* c (loop-owned, on the loop's list) writes its tail from now on. */
static void tail_begin(cn__loop_t *l, cn_conn_t *c)
{
    c->st = CN__ST_TAIL;
    c->deadline = c->tail.deadline;
    if (c->deadline < l->next_timer)
        l->next_timer = c->deadline;
    if (atomic_load(&l->srv->stopping))
        c->tail.close_after = true; /* no next request once stopping */
    watch(l, c, c->tail.want_read ? CN__EV_READ : CN__EV_WRITE);
}

/* c's socket is writable (or failed): more of the tail; once it is all
 * written, the next request, or the close the reply asked for. */
static void tail_run(cn__loop_t *l, cn_conn_t *c)
{
    cn_err_t e = cn__tail_write(c);
    if (e == CN_E_AGAIN) { /* still registered for writing, unless TLS must read first */
        watch(l, c, c->tail.want_read ? CN__EV_READ : CN__EV_WRITE);
        return;
    }
    /* A reply in parts is finished at a stop, as a request in flight is. */
    bool close = e < 0 || ((c->tail.close_after || atomic_load(&l->srv->stopping)) && !c->more);
    if (e < 0)
        cn_debug("net", "%s connection %llu from %s: reply: %s", c->ls->ad->name,
                 (unsigned long long)c->id, c->peer_text, cn_strerror(e));
    cn__tail_free(c);
    if (close) {
        drop(l, c);
        return;
    }
    if (c->more) { /* the reply's next part, on a worker of the same pool */
        loop_dispatch(l, c, c->pool);
        return;
    }
    c->st = CN__ST_IDLE;
    c->head_got = 0;
    c->deadline = cn_mono_ms() + c->ls->lim.idle_ms;
    if (c->deadline < l->next_timer)
        l->next_timer = c->deadline;
    if (c->ls->ad->idle_pending)
        cn__admit_repend(c);
    if (c->ssl || cn__conn_buffered(c))
        read_head(l, c, false); /* a pipelined request may be here already */
    else
        watch(l, c, CN__EV_READ);
}

/* For an adapter that reads its own requests (head_len 0): copies the first
 * bytes of the next request that the process holds (bytes given back, then
 * the read-ahead) into c->head, NUL-terminated, without taking them from the
 * stream, so that classify() can pick a pool.  Returns how many. */
static size_t head_from_buffer(cn_conn_t *c)
{
    const uint8_t *p = c->back_len ? c->back + c->back_off : c->rbuf + c->roff;
    size_t n = c->back_len ? c->back_len - c->back_off : (size_t)(c->rlen - c->roff);
    n = n < CN_HEAD_MAX - 1 ? n : CN_HEAD_MAX - 1;
    memcpy(c->head, p, n);
    c->head[n] = 0;
    return n;
}

/* For an adapter that says where a request head ends (head_end): reads the
 * next request's bytes into c until its head is whole, CN_HEAD_WAIT_MAX of
 * it is held, or its time is up (head_late); true when the request may go
 * on, false when c waits here (watched, its head deadline set) or was
 * dropped. */
static bool head_here(cn__loop_t *l, cn_conn_t *c)
{
    const cn_adapter_t *ad = c->ls->ad;
    bool want_write = false;
    for (long r = 1;;) {
        const uint8_t *p;
        size_t n = cn__conn_buffered(c) ? cn_conn_peek(c, &p) : 0;
        if (n && (c->head_late || n >= CN_HEAD_WAIT_MAX || ad->head_end(p, n)))
            return true;
        if (n && !c->req_start_ms) { /* the head's first bytes: its clock starts */
            c->req_start_ms = cn_mono_ms();
            c->deadline = c->req_start_ms + ad->head_wait_ms;
            if (c->deadline < l->next_timer)
                l->next_timer = c->deadline;
        }
        if (r == 0) { /* nothing more came (and what is held was looked at whole) */
            watch(l, c, want_write ? CN__EV_WRITE : CN__EV_READ);
            return false;
        }
        r = cn__conn_hold_more(c, CN_HEAD_WAIT_MAX, &want_write);
        if (r < 0) {
            drop(l, c);
            return false;
        }
    }
}

/* For an adapter that reads its own requests (head_len 0), says where
 * their heads end and answers some on the loop (fast(), plaintext, a quiet
 * loop, not stopping): each whole head head_here holds (as given-back
 * bytes, so every later read sees them first, in order) is offered to
 * fast(), up to CN__FAST_RUN requests in a row.  Returns true when c was
 * handled here (answered and watched or dispatched, or dropped, or waiting
 * for its next head), false to dispatch the next request as usual. */
static bool fast_unframed(cn__loop_t *l, cn_conn_t *c)
{
    const cn_adapter_t *ad = c->ls->ad;
    bool quiet = !l->batch || l->batch->n <= l->fast_batch;
    if (!ad->fast || !ad->head_end || c->ssl || !quiet || atomic_load(&l->srv->stopping))
        return false;
    for (int left = CN__FAST_RUN; left > 0; left--) {
        /* read_head found the first head whole; each later one waits here. */
        if (left < CN__FAST_RUN && !head_here(l, c))
            return true;
        c->on_loop = true;
        int r = ad->fast(c->cstate, c, NULL);
        c->on_loop = false;
        if (r < 0) {
            drop(l, c);
            return true;
        }
        if (r == 0)
            return false;
        cn__admit_settle(c); /* a complete request arrived (and was answered) */
        c->to_worker = false;
        c->req_start_ms = 0;
        c->head_late = false;
        cn_metric_add(c->ls->m.loop_answered, 1);
        c->deadline = cn_mono_ms() + c->ls->lim.idle_ms;
        if (c->pend_len) {
            /* The peer is slow to take the answer: the loop writes the
             * rest as it reads, holding no worker. */
            cn__tail_from_pend(c);
            tail_begin(l, c);
            return true;
        }
        if (!cn__conn_buffered(c)) {
            watch(l, c, CN__EV_READ);
            return true;
        }
    }
    return false;
}

/* readable: called for a poll event (else after a return, with nothing
 * known about the socket). */
static void read_head(cn__loop_t *l, cn_conn_t *c, bool readable)
{
    const cn_adapter_t *ad = c->ls->ad;
    if (ad->head_len == 0) {
        if (ad->head_end && !head_here(l, c))
            return;
        if (fast_unframed(l, c))
            return;
        /* classify() sees the first bytes of the request, NUL-terminated
         * (not taken from the stream), or NULL under TLS. */
        bool known = false;
        if (!c->ssl && !cn__conn_buffered(c)) {
            ssize_t r = recv(c->fd, c->head, CN_HEAD_MAX - 1, MSG_PEEK | MSG_DONTWAIT);
            if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
                drop(l, c);
                return;
            }
            if (r < 0) {
                watch(l, c, CN__EV_READ);
                return;
            }
            c->head[r] = 0;
            known = true;
        } else if (!c->ssl) {
            known = head_from_buffer(c) > 0;
        } else if (!cn__conn_buffered(c) && !readable) {
            watch(l, c, CN__EV_READ);
            return;
        }
        int pool = ad->classify ? ad->classify(c->cstate, known ? c->head : NULL) : CN_POOL_STORAGE;
        loop_dispatch(l, c, pool == CN_POOL_QUERY ? CN_POOL_QUERY : CN_POOL_STORAGE);
        return;
    }
    for (int fast_left = CN__FAST_RUN;; fast_left--) {
        while (c->head_got < ad->head_len) {
            bool want_write;
            long r =
                cn__conn_read_nb(c, c->head + c->head_got, ad->head_len - c->head_got, &want_write);
            if (r < 0) {
                drop(l, c);
                return;
            }
            if (r == 0) {
                watch(l, c, want_write ? CN__EV_READ | CN__EV_WRITE : CN__EV_READ);
                return;
            }
            c->head_got += (size_t)r;
        }
        /* A busy loop of a server with fewer loops than CPUs (many events
         * in one wait) leaves requests to the workers, which spread over the
         * idle CPUs; otherwise the loop answers the small reads itself,
         * sparing the hand-off and its latency (CN__FAST_BATCH). */
        bool quiet = !l->batch || l->batch->n <= l->fast_batch;
        if (ad->fast && !c->ssl && fast_left > 0 && quiet && !atomic_load(&l->srv->stopping)) {
            cn__admit_settle(c); /* a complete request head arrived */
            c->on_loop = true;
            int r = ad->fast(c->cstate, c, c->head);
            c->on_loop = false;
            if (r < 0) {
                drop(l, c);
                return;
            }
            if (r > 0) {
                c->to_worker = false;
                cn_metric_add(c->ls->m.loop_answered, 1);
                c->head_got = 0;
                c->deadline = cn_mono_ms() + c->ls->lim.idle_ms;
                if (c->pend_len) {
                    /* The peer is slow to take the answer: the loop writes
                     * the rest as it reads, by the write deadline, holding
                     * no worker. */
                    cn__tail_from_pend(c);
                    tail_begin(l, c);
                    return;
                }
                if (cn__conn_buffered(c))
                    continue; /* the next head is here already */
                watch(l, c, CN__EV_READ);
                return;
            }
        }
        int pool = ad->classify ? ad->classify(c->cstate, c->head) : CN_POOL_STORAGE;
        loop_dispatch(l, c, pool == CN_POOL_QUERY ? CN_POOL_QUERY : CN_POOL_STORAGE);
        return;
    }
}

/* ---- worker side ----------------------------------------------------------------- */
/* Puts c on its loop's return list (a worker's return, or a new connection
 * from the acceptor) and wakes the loop. */
void cn__loop_give_back(cn_conn_t *c)
{
    cn__loop_t *l = c->loop;
    c->park_next = NULL;
    pthread_mutex_lock(&l->ret_mu);
    /* The loop reads the eventfd before it takes the list, so a non-empty
     * list already has a wake-up on its way: only the first return of a
     * batch writes one. */
    bool first = l->ret_head == NULL;
    if (l->ret_tail)
        l->ret_tail->park_next = c;
    else
        l->ret_head = c;
    l->ret_tail = c;
    pthread_mutex_unlock(&l->ret_mu);
    if (first)
        cn__loop_wake(l);
}

/* A new connection's TLS handshake, as far as the bytes that arrived allow,
 * then (for a protocol whose client speaks first, once the record that
 * carries its hello is here too) its adapter's open():
 * CN_OK when open() succeeded, CN_E_AGAIN when the peer must send more
 * first, so that a peer that stalls between its flights holds no worker. */
static cn_err_t handshake_run(cn_conn_t *c)
{
    if (c->ls->tls && !(c->ssl && SSL_is_init_finished(c->ssl))) {
        cn_err_t e = cn__tls_accept(c, cn_conn_handshake_deadline(c));
        if (e < 0)
            return e;
        if (c->ls->ad->hello_len && !cn__hello_here(c, 0))
            return CN_E_AGAIN; /* TLS is up; the protocol's hello is not here yet */
    }
    return c->ls->ad->open(c->ls->actx, c, &c->cstate);
}

void cn__worker_run(void *arg, void *item)
{
    (void)arg;
    cn_conn_t *c = item;
    const cn_adapter_t *ad = c->ls->ad;
    cn_err_t e;
    if (c->pool == CN_POOL_HANDSHAKE) {
        e = handshake_run(c);
        if (e == CN_E_AGAIN) {
            /* Back to the loop, which waits for the peer's next bytes. */
            c->hello_again = true;
            cn__loop_give_back(c);
            return;
        }
        if (e < 0)
            goto fail;
        c->opened = true;
    } else if (c->pend_len) {
        e = cn__conn_flush(c); /* the rest of an answer the loop gave */
        if (e < 0)
            goto fail;
    } else {
        bool more = c->more;
        c->more = false;
        e = more ? ad->resume(c->cstate, c)
                 : ad->serve(c->cstate, c, ad->head_len ? c->head : NULL);
        while (e == CN_CONN_MORE && ad->resume && !c->tail.set)
            e = ad->resume(c->cstate, c); /* all written: the next part at once */
        if (e == CN_CONN_MORE && c->tail.set && ad->resume) {
            c->more = true; /* after the tail (tail_run) */
            e = CN_OK;
        } else if (e > 0) {
            e = CN_E_INVALID; /* CN_CONN_MORE without a resume() */
        }
        if (e < 0 && c->tail.set) {
            /* The reply's rest is the loop's to write; the close the
             * failure (or the reply) asks for comes after it. */
            c->tail.close_after = true;
            e = CN_OK;
        }
        if (e < 0)
            goto fail;
    }
    cn__loop_give_back(c);
    return;
fail:
    cn_debug("net", "%s connection %llu from %s closed: %s", ad->name, (unsigned long long)c->id,
             c->peer_text, cn_strerror(e));
    /* The loop closes it, so that the worker share it held is given on
     * there, with the rest of the loop's bookkeeping. */
    c->closing = true;
    cn__loop_give_back(c);
}

/* A connection the acceptor handed to l: from now on it lives here. */
static void adopt(cn__loop_t *l, cn_conn_t *c)
{
    c->deadline = c->accepted_ms + c->ls->lim.handshake_ms;
    lo_link(l, c);
    if (atomic_load(&c->evicted) || atomic_load(&l->srv->stopping))
        drop(l, c);
    else
        watch(l, c, CN__EV_READ);
}

static void take_returns(cn__loop_t *l)
{
    cn_server_t *s = l->srv;
    pthread_mutex_lock(&l->ret_mu);
    cn_conn_t *c = l->ret_head;
    l->ret_head = l->ret_tail = NULL;
    pthread_mutex_unlock(&l->ret_mu);
    int64_t now = c ? cn_mono_ms() : 0;
    while (c) {
        cn_conn_t *next = c->park_next;
        c->park_next = NULL;
        if (c->st == CN__ST_HELLO || c->hello_again) {
            c->hello_again = false;
            c->st = CN__ST_HELLO;
            adopt(l, c);
            c = next;
            continue;
        }
        share_release(l, c);
        cn__admit_fair_refresh(c);
        c->req_start_ms = 0; /* that request is over: the next one's clock */
        c->head_late = false;
        c->st = CN__ST_IDLE;
        c->head_got = 0;
        c->deadline = now + c->ls->lim.idle_ms;
        lo_link(l, c);
        if (c->tail.set && !c->closing && !atomic_load(&c->evicted)) {
            tail_begin(l, c); /* the rest of its reply, then its next request */
            c = next;
            continue;
        }
        bool gone = c->closing || atomic_load(&c->evicted) || atomic_load(&s->stopping);
        if (!gone && c->ls->ad->idle_pending)
            cn__admit_repend(c); /* idle again: pending again (SAU2) */
        if (gone)
            drop(l, c);
        else if (c->ssl || cn__conn_buffered(c))
            read_head(l, c, false); /* the next head may be held here already */
        else
            watch(l, c, CN__EV_READ);
        c = next;
    }
}

/* ---- accept (the acceptor, loop 0) -------------------------------------------------- */
/* accept(2) failed because the process or the system ran out of something,
 * not because of the connection: it is still waiting in the backlog. */
static bool accept_starved(int err)
{
    return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
}

/* No descriptor (or memory) for the next connection.  The listener is
 * level-triggered and the connection stays in the backlog, so returning to
 * epoll_wait would report it again at once: a spin at full CPU.  Instead the
 * listener leaves epoll, as nginx disables accept events, and comes back
 * when one of our connections closes (drop, on any loop) or after
 * CN__ACCEPT_RETRY_MS, since another thread may free a descriptor too.
 * Meanwhile peers wait in the backlog; each retry costs one accept(2).  The
 * episode is logged when it begins and when it ends, never per retry. */
static void accept_pause(cn__loop_t *l, cn__listener_t *ls, int err)
{
    cn_server_t *s = l->srv;
    int64_t now = cn_mono_ms();
    if (!ls->starved_ms) {
        ls->starved_ms = now > 0 ? now : 1;
        cn_warn("net", "accept on %s: %s; new connections wait until a descriptor is free",
                ls->ad->name, strerror(err));
    }
    if (!ls->paused) {
        cn__poll_del(l->poll, ls->fd);
        ls->paused = true;
        atomic_store(&s->accept_paused, true);
    }
    if (s->accept_retry > now + CN__ACCEPT_RETRY_MS)
        s->accept_retry = now + CN__ACCEPT_RETRY_MS;
}

/* Puts the paused listeners back into epoll: the next wait reports a
 * waiting connection again, and accept(2) says whether it can be taken. */
static void accept_resume(cn__loop_t *l)
{
    cn_server_t *s = l->srv;
    s->accept_retry = INT64_MAX;
    bool paused = false;
    for (size_t i = 0; i < s->nls; i++) {
        cn__listener_t *ls = s->ls[i];
        if (!ls->paused || ls->fd < 0)
            continue;
        cn_err_t e = cn__poll_add(l->poll, ls->fd, CN__EV_READ, ls);
        if (e == CN_OK) {
            ls->paused = false;
        } else { /* epoll itself lacks memory: try again later */
            s->accept_retry = cn_mono_ms() + CN__ACCEPT_RETRY_MS;
            paused = true;
        }
    }
    atomic_store(&s->accept_paused, paused);
}

/* The loop a new connection will live on: the one holding the fewest,
 * searched from the one after the last pick, so that ties go round. */
static cn__loop_t *pick_loop(cn_server_t *s)
{
    unsigned n = s->nloops, best = s->next_loop % n;
    unsigned least = atomic_load(&s->loops[best].nconns);
    for (unsigned k = 1; k < n && least; k++) {
        unsigned i = (s->next_loop + k) % n;
        unsigned v = atomic_load(&s->loops[i].nconns);
        if (v < least) {
            best = i;
            least = v;
        }
    }
    s->next_loop = best + 1;
    return &s->loops[best];
}

/* A new connection record for fd, accepted from peer ss; NULL on ENOMEM. */
static cn_conn_t *conn_new(cn__listener_t *ls, int fd, const struct sockaddr_storage *ss,
                           socklen_t sl)
{
    cn_conn_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->kind = CN__SRC_CONN;
    c->fd = fd;
    c->busy_pool = -1;
    c->ls = ls;
    c->srv = ls->srv;
    c->peer = *ss;
    c->peerlen = sl;
    c->accepted_ms = cn_mono_ms();
    if (ss->ss_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, c->peer_text,
                  sizeof c->peer_text);
    else
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, c->peer_text,
                  sizeof c->peer_text);
    cn__source_key((const struct sockaddr *)ss, c->src_key, &c->src_klen);
    return c;
}

static void loop_accept(cn__loop_t *l, cn__listener_t *ls)
{
    cn_server_t *s = l->srv;
    for (int k = 0; k < CN__ACCEPT_BATCH; k++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        int fd = accept4(ls->fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (accept_starved(errno))
                accept_pause(l, ls, errno);
            return;
        }
        if (ls->starved_ms) {
            cn_info("net", "accepting on %s again, after %lld ms without a descriptor",
                    ls->ad->name, (long long)(cn_mono_ms() - ls->starved_ms));
            ls->starved_ms = 0;
        }
        int one = 1;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        cn_conn_t *c = conn_new(ls, fd, &ss, sl);
        if (!c) {
            close(fd);
            continue;
        }
        c->loop = pick_loop(s);
        cn_conn_t *victim = NULL;
        if (cn__admit(c, &victim) != CN__ADMIT_OK) {
            cn_debug("net", "%s: refused %s (connection limits)", ls->ad->name, c->peer_text);
            if (!ls->tls && ls->ad->busy)
                ls->ad->busy(ls->actx, fd);
            close(fd);
            free(c);
            continue;
        }
        if (victim) {
            cn_debug("net", "%s: evicted pending connection from %s", ls->ad->name,
                     victim->peer_text);
            drop(l, victim);
        }
        atomic_fetch_add(&c->loop->nconns, 1);
        cn_metric_add(c->loop->gauge, 1);
        c->st = CN__ST_HELLO;
        if (c->loop == l)
            adopt(l, c);
        else
            cn__loop_give_back(c); /* its loop adopts it */
    }
}

/* ---- timers, shutdown ------------------------------------------------------------ */
static void loop_timers(cn__loop_t *l, int64_t now)
{
    cn_server_t *s = l->srv;
    if (now < l->next_timer)
        return;
    l->next_timer = INT64_MAX;
    cn_conn_t *c = l->lo_head;
    while (c) {
        cn_conn_t *next = c->lo_next;
        int64_t keep = 0;
        if (c->deadline <= now && c->st == CN__ST_IDLE && c->req_start_ms &&
            !atomic_load(&s->stopping)) {
            /* A head the loop held that did not end in time: the adapter
             * answers it as it is. */
            c->head_late = true;
            read_head(l, c, false);
            c = next;
            continue;
        }
        if (c->deadline <= now && c->st == CN__ST_IDLE && c->ls->ad->idle &&
            !atomic_load(&s->stopping))
            keep = c->ls->ad->idle(c->cstate, now);
        if (keep > now)
            c->deadline = keep;
        if (c->deadline <= now) {
            cn_debug("net", "%s connection from %s: %s timeout", c->ls->ad->name, c->peer_text,
                     c->st == CN__ST_IDLE   ? "idle"
                     : c->st == CN__ST_TAIL ? "reply write"
                                            : "handshake");
            /* A connection that never delivered a request was refused by
             * the deadline; an idle one simply ended, also when its adapter
             * counts it as pending again.  (pending is cleared only by its
             * loop, which is us, or by an eviction, which also ends it.) */
            if ((c->st != CN__ST_IDLE && c->st != CN__ST_TAIL) ||
                (atomic_load(&c->pending) && !c->repended))
                cn_metric_add(c->ls->m.refused[CN__REFUSE_DEADLINE], 1);
            drop(l, c);
        } else if (c->deadline < l->next_timer) {
            l->next_timer = c->deadline;
        }
        c = next;
    }
}

/* l's part of the graceful stop: the acceptor closes the listeners (new
 * connections are refused); every loop closes its idle and parked
 * connections and cuts its handshakes in progress. */
static void begin_shutdown(cn__loop_t *l)
{
    cn_server_t *s = l->srv;
    atomic_store(&s->stopping, true);
    if (l->idx == 0) {
        for (size_t i = 0; i < s->nls; i++) {
            cn__listener_t *ls = s->ls[i];
            if (ls->fd >= 0) {
                if (!ls->paused)
                    cn__poll_del(l->poll, ls->fd);
                close(ls->fd);
                ls->fd = -1;
            }
        }
        /* No loop ends before this: a connection accepted until now may
         * still be on its way to one. */
        atomic_store(&s->accept_closed, true);
        cn__loops_wake(s);
    }
    /* A reply the loop is writing is in flight, as a worker's request is:
     * it may finish within the grace period, and then closes. */
    for (cn_conn_t *c = l->lo_head, *next; c; c = next) {
        next = c->lo_next;
        if (c->st == CN__ST_TAIL)
            c->tail.close_after = true;
        else
            drop(l, c);
    }
    /* Handshakes are not requests in flight: cut them now. */
    cn__admit_shutdown_all(l, true);
    if (l->idx == 0) {
        pthread_mutex_lock(&s->mu);
        unsigned live = s->nlive;
        pthread_mutex_unlock(&s->mu);
        cn_info("net", "shutting down: %u connection(s) still busy, grace %lld ms", live,
                (long long)s->cfg.grace_ms);
    }
}

/* Registers what l waits on: its eventfd; for the acceptor also the
 * listeners and the signalfd. */
static cn_err_t loop_register(cn__loop_t *l)
{
    cn_server_t *s = l->srv;
    cn_err_t err;
    if (l->idx == 0) {
        for (size_t i = 0; i < s->nls; i++)
            if ((err = cn__poll_add(l->poll, s->ls[i]->fd, CN__EV_READ, s->ls[i])) < 0)
                return err;
        s->sig_src.kind = CN__SRC_SIGNAL;
        if (s->sig_fd >= 0 &&
            (err = cn__poll_add(l->poll, s->sig_fd, CN__EV_READ, &s->sig_src)) < 0)
            return err;
        s->accept_retry = INT64_MAX;
        cn_info("net", "%u event loop(s)", s->nloops);
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    l->fast_batch = cpus > 0 && s->nloops < (unsigned long)cpus ? CN__FAST_BATCH : INT_MAX;
    l->persist_ok = l->fast_batch == INT_MAX; /* the loops answer (nearly) every small read */
    l->wake_src.kind = CN__SRC_WAKE;
    l->next_timer = INT64_MAX;
    return cn__poll_add(l->poll, l->wake_fd, CN__EV_READ, &l->wake_src);
}

/* Handles one event of the batch. */
static void loop_event(cn__loop_t *l, void *ptr, int mask, bool draining)
{
    cn_server_t *s = l->srv;
    switch (*(int *)ptr) {
    case CN__SRC_LISTENER:
        if (!draining && !atomic_load(&s->stop_requested))
            loop_accept(l, ptr);
        break;
    case CN__SRC_WAKE: {
        uint64_t v;
        ssize_t r = read(l->wake_fd, &v, sizeof v);
        (void)r;
        take_returns(l);
        take_ready(l);
        break;
    }
    case CN__SRC_SIGNAL: {
        struct signalfd_siginfo si;
        while (read(s->sig_fd, &si, sizeof si) == (ssize_t)sizeof si)
            cn_info("net", "signal %u: stopping", si.ssi_signo);
        atomic_store(&s->stop_requested, true);
        cn__loops_wake(s);
        break;
    }
    case CN__SRC_CONN: {
        cn_conn_t *c = ptr;
        if (!c->persist)
            c->armed = false; /* one-shot: it fired */
        if (atomic_load(&c->evicted))
            drop(l, c); /* by the acceptor, on another loop: its socket is shut down */
        else if (c->st == CN__ST_HELLO && cn__hello_here(c, mask))
            loop_dispatch(l, c, CN_POOL_HANDSHAKE);
        else if (c->st == CN__ST_IDLE)
            read_head(l, c, true);
        else if (c->st == CN__ST_TAIL)
            tail_run(l, c);
        break;
    }
    }
}

/* How long the next wait may sleep; while draining, whether it is over
 * (every connection closed, and no new one can come): returns -2 then. */
static int loop_timeout(cn__loop_t *l, bool draining, int64_t grace_end, bool *forced)
{
    cn_server_t *s = l->srv;
    int64_t now = cn_mono_ms();
    int timeout = -1;
    if (draining) {
        pthread_mutex_lock(&s->mu);
        unsigned live = s->nlive;
        pthread_mutex_unlock(&s->mu);
        if (live == 0 && atomic_load(&s->accept_closed))
            return -2;
        if (now >= grace_end && !*forced) {
            if (l->idx == 0)
                cn_warn("net", "grace period over: closing %u connection(s)", live);
            cn__admit_shutdown_all(l, false);
            *forced = true;
        }
        timeout = 50;
    } else {
        int64_t next = l->next_timer;
        if (l->idx == 0 && s->accept_retry < next)
            next = s->accept_retry;
        if (next != INT64_MAX) {
            int64_t d = next - now;
            timeout = d < 0 ? 0 : d > 60000 ? 60000 : (int)d;
        }
    }
    for (int p = 0; p < CN_POOL_COUNT; p++)
        if (l->park_head[p] && (timeout < 0 || timeout > 5))
            timeout = 5; /* a worker may free up without telling us */
    return timeout;
}

void cn__loop_break_poll(cn_server_t *s, unsigned idx)
{
    if (idx < s->nloops) {
        cn__poll_break(s->loops[idx].poll);
        cn__loop_wake(&s->loops[idx]);
    }
}

/* The wait of a loop whose epoll set failed (l->poll_broken): its eventfd
 * alone, through poll(2); puts its event in b and returns 1, or 0 on a
 * timeout.  Never fails: if even poll(2) does, it sleeps a little and
 * reports the eventfd (non-blocking) anyway, so the drain goes on. */
static int wait_wake_only(cn__loop_t *l, cn__batch_t *b, int timeout)
{
    struct pollfd pf = { .fd = l->wake_fd, .events = POLLIN };
    int r = poll(&pf, 1, timeout);
    if (r == 0 || (r < 0 && errno == EINTR))
        return 0;
    if (r < 0)
        (void)poll(NULL, 0, 10);
    b->ev[0].ptr = &l->wake_src;
    b->ev[0].mask = CN__EV_READ;
    return 1;
}

cn_err_t cn__loop_run(cn__loop_t *l)
{
    cn_server_t *s = l->srv;
    cn_err_t err = CN_OK;
    cn__batch_t *b = calloc(1, sizeof *b);
    if (!b)
        return -ENOMEM;
    l->batch = b;
    if ((err = loop_register(l)) < 0)
        goto out;
    bool draining = false, forced = false;
    int64_t grace_end = 0;
    for (;;) {
        if (atomic_load(&s->stop_requested) && !draining) {
            begin_shutdown(l);
            draining = true;
            grace_end = cn_mono_ms() + s->cfg.grace_ms;
        }
        int timeout = loop_timeout(l, draining, grace_end, &forced);
        if (timeout == -2)
            break;
        int n = l->poll_broken ? wait_wake_only(l, b, timeout)
                               : cn__poll_wait(l->poll, b->ev, CN__MAX_EVENTS, timeout);
        if (n < 0) {
            /* This loop can no longer watch its connections: the server
             * stops.  Returning now would strand them (they count as live,
             * and no other loop may close them), so every loop's drain
             * would wait forever; instead this loop drains on its eventfd
             * alone, which still brings the workers' returns and the stop. */
            err = n;
            cn_error("net", "event loop %u: %s: stopping", l->idx, cn_strerror(err));
            l->poll_broken = true;
            cn_server_stop(s);
            continue;
        }
        b->n = n;
        for (b->i = 0; b->i < n; b->i++)
            if (b->ev[b->i].ptr)
                loop_event(l, b->ev[b->i].ptr, b->ev[b->i].mask, draining);
        b->n = 0;
        drop_evicted(l);
        unpark(l);
        int64_t after = cn_mono_ms();
        loop_timers(l, after);
        if (l->idx == 0 && atomic_exchange(&s->fd_freed, false) && s->accept_retry != INT64_MAX)
            s->accept_retry = 0;
        if (l->idx == 0 && !draining && after >= s->accept_retry)
            accept_resume(l);
    }
out:
    l->batch = NULL;
    free(b);
    return err;
}
