/* The event loop: accepts, holds idle connections, reads request heads,
 * hands connections to the worker pools and takes them back, enforces the
 * loop-side deadlines (handshake start, idle), and runs graceful shutdown.
 *
 * Only this thread changes a connection's st, its poll registration and the
 * loop-owned list; a connection in CN__ST_WORKER belongs to a worker.
 * Nothing here blocks on a peer: reads are non-blocking, busy() writes at
 * most one short refusal into an empty socket buffer, and a request the
 * adapter answers on the loop (fast()) writes without waiting, leaving what
 * the socket does not take to a worker. */
#include "net/net_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
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
/* The most events one wait may bring for the loop still to answer requests
 * itself (fast()). */
#define CN__FAST_BATCH 8

/* The batch being processed (s->batch), so that a connection dropped while
 * handling one event (an eviction victim) is not touched by a later event. */
struct cn__batch {
    cn__poll_event_t ev[CN__MAX_EVENTS];
    int n, i;
};
typedef struct cn__batch cn__batch_t;

/* ---- loop-owned bookkeeping -------------------------------------------------- */
static void lo_link(cn_server_t *s, cn_conn_t *c)
{
    c->lo_prev = NULL;
    c->lo_next = s->lo_head;
    if (s->lo_head)
        s->lo_head->lo_prev = c;
    s->lo_head = c;
    if (c->deadline < s->next_timer)
        s->next_timer = c->deadline;
}

static void lo_unlink(cn_server_t *s, cn_conn_t *c)
{
    if (c->lo_prev)
        c->lo_prev->lo_next = c->lo_next;
    else if (s->lo_head == c)
        s->lo_head = c->lo_next;
    if (c->lo_next)
        c->lo_next->lo_prev = c->lo_prev;
    c->lo_prev = c->lo_next = NULL;
}

/* Connections are registered one-shot: an event disarms the descriptor,
 * so handing the connection to a worker costs no epoll_ctl, and taking it
 * back costs one (the re-arm), where add + delete cost two. */
static void watch(cn_server_t *s, cn_conn_t *c, int mask)
{
    cn_err_t e = CN_OK;
    if (!c->in_poll)
        e = cn__poll_add(s->poll, c->fd, mask | CN__EV_ONESHOT, c);
    else if (!c->armed || c->poll_mask != mask)
        e = cn__poll_mod(s->poll, c->fd, mask | CN__EV_ONESHOT, c);
    if (e == CN_OK) {
        c->in_poll = true;
        c->armed = true;
        c->poll_mask = mask;
    } else {
        cn_warn("net", "epoll: %s", cn_strerror(e));
    }
}

static void unwatch(cn_server_t *s, cn_conn_t *c)
{
    if (c->in_poll)
        cn__poll_del(s->poll, c->fd);
    c->in_poll = false;
    c->armed = false;
}

/* The loop lets go of c (to a worker, or to wait): no event may reach it
 * until watch again.  A fired one-shot registration is silent already. */
static void loop_quiet(cn_server_t *s, cn_conn_t *c)
{
    if (c->armed)
        unwatch(s, c);
}

static void park_unlink(cn_server_t *s, cn_conn_t *c)
{
    for (int p = 0; p < CN_POOL_COUNT; p++) {
        cn_conn_t **pp = &s->park_head[p], *prev = NULL;
        while (*pp && *pp != c) {
            prev = *pp;
            pp = &(*pp)->park_next;
        }
        if (*pp) {
            *pp = c->park_next;
            if (s->park_tail[p] == c)
                s->park_tail[p] = prev;
            c->park_next = NULL;
            return;
        }
    }
}

/* Takes a held connection off its key's wait list. */
static void held_unlink(cn_conn_t *c)
{
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
}

/* Closes a loop-owned connection. */
static void drop(cn_server_t *s, cn_conn_t *c)
{
    unwatch(s, c);
    lo_unlink(s, c);
    if (c->st == CN__ST_PARKED)
        park_unlink(s, c);
    else if (c->st == CN__ST_HELD)
        held_unlink(c);
    cn__batch_t *b = s->batch;
    if (b)
        for (int i = b->i + 1; i < b->n; i++)
            if (b->ev[i].ptr == c)
                b->ev[i].ptr = NULL;
    cn__conn_destroy(c);
    /* A descriptor is free: a listener paused for want of one may accept
     * again (on the next pass, not in the middle of this batch). */
    if (s->accept_retry != INT64_MAX)
        s->accept_retry = 0;
}

/* ---- dispatch ------------------------------------------------------------------ */
static bool try_push(cn_server_t *s, cn_conn_t *c)
{
    c->st = CN__ST_WORKER;
    cn_err_t e = cn__queue_push(&s->pools[c->pool].q, c);
    if (e == CN_OK)
        return true;
    c->st = CN__ST_PARKED;
    return false;
}

/* Queues c (loop-owned, unlinked) on its pool, or parks it when the queue
 * is full. */
static void enqueue(cn_server_t *s, cn_conn_t *c)
{
    int pool = c->pool;
    if (try_push(s, c))
        return;
    /* The pool's queue is full: wait here, unread, until a worker frees up.
     * A parked request has no loop deadline (the server is the slow one);
     * a parked handshake keeps its handshake deadline. */
    if (pool != CN_POOL_HANDSHAKE)
        c->deadline = INT64_MAX;
    c->park_next = NULL;
    if (s->park_tail[pool])
        s->park_tail[pool]->park_next = c;
    else
        s->park_head[pool] = c;
    s->park_tail[pool] = c;
    lo_link(s, c);
}

/* The worker share: one principal (or, without one, one source) may have at
 * most ls->share[pool] requests on a request pool at once; its next request
 * waits here, unread and holding no worker, until one of its own finishes.
 * So a client that dribbles its requests cannot occupy every worker. */
static void loop_dispatch(cn_server_t *s, cn_conn_t *c, int pool)
{
    loop_quiet(s, c);
    lo_unlink(s, c);
    c->pool = pool;
    if (pool != CN_POOL_HANDSHAKE) {
        cn__admit_settle(c); /* a complete request head arrived */
        unsigned cap = c->ls->share[pool];
        cn__count_ent_t *f = cap ? cn__admit_fair_key(c) : NULL;
        if (f && f->busy[pool] >= cap) {
            c->st = CN__ST_HELD;
            c->deadline = INT64_MAX; /* the server is the slow one */
            c->park_next = NULL;
            if (f->wait_tail[pool])
                f->wait_tail[pool]->park_next = c;
            else
                f->wait_head[pool] = c;
            f->wait_tail[pool] = c;
            lo_link(s, c);
            return;
        }
        if (f) {
            f->busy[pool]++;
            c->busy_pool = pool;
        }
    }
    enqueue(s, c);
}

/* c's request is over: its key's next held request (if any) takes the slot. */
static void share_release(cn_server_t *s, cn_conn_t *c)
{
    int p = c->busy_pool;
    if (p < 0)
        return;
    c->busy_pool = -1;
    cn__count_ent_t *f = c->fair;
    f->busy[p]--;
    cn_conn_t *w = f->wait_head[p];
    if (!w)
        return;
    f->wait_head[p] = w->park_next;
    if (!f->wait_head[p])
        f->wait_tail[p] = NULL;
    w->park_next = NULL;
    lo_unlink(s, w);
    f->busy[p]++;
    w->busy_pool = p;
    enqueue(s, w);
}

static void unpark(cn_server_t *s)
{
    for (int p = 0; p < CN_POOL_COUNT; p++) {
        while (s->park_head[p]) {
            cn_conn_t *c = s->park_head[p];
            /* Once pushed, c belongs to a worker, which reuses park_next for
             * the return list: unlink it from the park list first. */
            cn_conn_t *next = c->park_next;
            lo_unlink(s, c);
            if (!try_push(s, c)) {
                lo_link(s, c);
                break;
            }
            s->park_head[p] = next;
            if (!next)
                s->park_tail[p] = NULL;
        }
    }
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

/* readable: called for a poll event (else after a return, with nothing
 * known about the socket). */
static void read_head(cn_server_t *s, cn_conn_t *c, bool readable)
{
    const cn_adapter_t *ad = c->ls->ad;
    if (ad->head_len == 0) {
        /* classify() sees the first bytes of the request, NUL-terminated
         * (not taken from the stream), or NULL under TLS. */
        bool known = false;
        if (!c->ssl && !cn__conn_buffered(c)) {
            ssize_t r = recv(c->fd, c->head, CN_HEAD_MAX - 1, MSG_PEEK | MSG_DONTWAIT);
            if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
                drop(s, c);
                return;
            }
            if (r < 0) {
                watch(s, c, CN__EV_READ);
                return;
            }
            c->head[r] = 0;
            known = true;
        } else if (!c->ssl) {
            known = head_from_buffer(c) > 0;
        } else if (!cn__conn_buffered(c) && !readable) {
            watch(s, c, CN__EV_READ);
            return;
        }
        int pool = ad->classify ? ad->classify(c->cstate, known ? c->head : NULL) : CN_POOL_STORAGE;
        loop_dispatch(s, c, pool == CN_POOL_QUERY ? CN_POOL_QUERY : CN_POOL_STORAGE);
        return;
    }
    for (int fast_left = CN__FAST_RUN;; fast_left--) {
        while (c->head_got < ad->head_len) {
            bool want_write;
            long r =
                cn__conn_read_nb(c, c->head + c->head_got, ad->head_len - c->head_got, &want_write);
            if (r < 0) {
                drop(s, c);
                return;
            }
            if (r == 0) {
                watch(s, c, want_write ? CN__EV_READ | CN__EV_WRITE : CN__EV_READ);
                return;
            }
            c->head_got += (size_t)r;
        }
        /* A busy loop (many events in one wait) leaves requests to the
         * workers, which spread over the CPUs; a quiet one answers the
         * small reads itself, sparing the hand-off and its latency. */
        bool quiet = !s->batch || s->batch->n <= CN__FAST_BATCH;
        if (ad->fast && !c->ssl && fast_left > 0 && quiet && !atomic_load(&s->stopping)) {
            cn__admit_settle(c); /* a complete request head arrived */
            c->on_loop = true;
            int r = ad->fast(c->cstate, c, c->head);
            c->on_loop = false;
            if (r < 0) {
                drop(s, c);
                return;
            }
            if (r > 0) {
                c->head_got = 0;
                c->deadline = cn_mono_ms() + c->ls->lim.idle_ms;
                if (c->pend_len) {
                    /* The peer is slow to take the answer: a worker waits for
                     * it, with the write deadline, not the loop. */
                    loop_dispatch(s, c, CN_POOL_STORAGE);
                    return;
                }
                if (cn__conn_buffered(c))
                    continue; /* the next head is here already */
                watch(s, c, CN__EV_READ);
                return;
            }
        }
        int pool = ad->classify ? ad->classify(c->cstate, c->head) : CN_POOL_STORAGE;
        loop_dispatch(s, c, pool == CN_POOL_QUERY ? CN_POOL_QUERY : CN_POOL_STORAGE);
        return;
    }
}

/* ---- worker side ----------------------------------------------------------------- */
void cn__loop_give_back(cn_conn_t *c)
{
    cn_server_t *s = c->srv;
    c->park_next = NULL;
    pthread_mutex_lock(&s->ret_mu);
    /* The loop reads the eventfd before it takes the list, so a non-empty
     * list already has a wake-up on its way: only the first return of a
     * batch writes one. */
    bool first = s->ret_head == NULL;
    if (s->ret_tail)
        s->ret_tail->park_next = c;
    else
        s->ret_head = c;
    s->ret_tail = c;
    pthread_mutex_unlock(&s->ret_mu);
    if (first) {
        uint64_t one = 1;
        ssize_t w = write(s->wake_fd, &one, sizeof one);
        (void)w;
    }
}

void cn__worker_run(void *arg, void *item)
{
    (void)arg;
    cn_conn_t *c = item;
    const cn_adapter_t *ad = c->ls->ad;
    cn_err_t e;
    if (c->pool == CN_POOL_HANDSHAKE) {
        int64_t deadline = cn_conn_handshake_deadline(c);
        if (c->ls->tls && (e = cn__tls_accept(c, deadline)) < 0)
            goto fail;
        e = ad->open(c->ls->actx, c, &c->cstate);
        if (e < 0)
            goto fail;
        c->opened = true;
    } else if (c->pend_len) {
        e = cn__conn_flush(c); /* the rest of an answer the loop gave */
        if (e < 0)
            goto fail;
    } else {
        e = ad->serve(c->cstate, c, ad->head_len ? c->head : NULL);
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

static void take_returns(cn_server_t *s)
{
    pthread_mutex_lock(&s->ret_mu);
    cn_conn_t *c = s->ret_head;
    s->ret_head = s->ret_tail = NULL;
    pthread_mutex_unlock(&s->ret_mu);
    int64_t now = c ? cn_mono_ms() : 0;
    while (c) {
        cn_conn_t *next = c->park_next;
        c->park_next = NULL;
        share_release(s, c);
        cn__admit_fair_refresh(c);
        c->st = CN__ST_IDLE;
        c->head_got = 0;
        c->deadline = now + c->ls->lim.idle_ms;
        lo_link(s, c);
        if (c->closing || atomic_load(&c->evicted) || atomic_load(&s->stopping))
            drop(s, c);
        else if (c->ssl || cn__conn_buffered(c))
            read_head(s, c, false); /* the next head may be held here already */
        else
            watch(s, c, CN__EV_READ);
        c = next;
    }
}

/* ---- accept ------------------------------------------------------------------------ */
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
 * when one of our connections closes (drop) or after
 * CN__ACCEPT_RETRY_MS, since another thread may free a descriptor too.
 * Meanwhile peers wait in the backlog; each retry costs one accept(2).  The
 * episode is logged when it begins and when it ends, never per retry. */
static void accept_pause(cn_server_t *s, cn__listener_t *ls, int err)
{
    int64_t now = cn_mono_ms();
    if (!ls->starved_ms) {
        ls->starved_ms = now > 0 ? now : 1;
        cn_warn("net", "accept on %s: %s; new connections wait until a descriptor is free",
                ls->ad->name, strerror(err));
    }
    if (!ls->paused) {
        cn__poll_del(s->poll, ls->fd);
        ls->paused = true;
    }
    if (s->accept_retry > now + CN__ACCEPT_RETRY_MS)
        s->accept_retry = now + CN__ACCEPT_RETRY_MS;
}

/* Puts the paused listeners back into epoll: the next wait reports a
 * waiting connection again, and accept(2) says whether it can be taken. */
static void accept_resume(cn_server_t *s)
{
    s->accept_retry = INT64_MAX;
    for (size_t i = 0; i < s->nls; i++) {
        cn__listener_t *ls = s->ls[i];
        if (!ls->paused || ls->fd < 0)
            continue;
        cn_err_t e = cn__poll_add(s->poll, ls->fd, CN__EV_READ, ls);
        if (e == CN_OK)
            ls->paused = false;
        else /* epoll itself lacks memory: try again later */
            s->accept_retry = cn_mono_ms() + CN__ACCEPT_RETRY_MS;
    }
}

static void loop_accept(cn_server_t *s, cn__listener_t *ls)
{
    for (int k = 0; k < CN__ACCEPT_BATCH; k++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        int fd = accept4(ls->fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (accept_starved(errno))
                accept_pause(s, ls, errno);
            return;
        }
        if (ls->starved_ms) {
            cn_info("net", "accepting on %s again, after %lld ms without a descriptor",
                    ls->ad->name, (long long)(cn_mono_ms() - ls->starved_ms));
            ls->starved_ms = 0;
        }
        int one = 1;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        cn_conn_t *c = calloc(1, sizeof *c);
        if (!c) {
            close(fd);
            continue;
        }
        c->kind = CN__SRC_CONN;
        c->fd = fd;
        c->busy_pool = -1;
        c->ls = ls;
        c->srv = s;
        c->peer = ss;
        c->peerlen = sl;
        c->accepted_ms = cn_mono_ms();
        if (ss.ss_family == AF_INET)
            inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, c->peer_text,
                      sizeof c->peer_text);
        else
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, c->peer_text,
                      sizeof c->peer_text);
        cn__source_key((struct sockaddr *)&ss, c->src_key, &c->src_klen);
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
            drop(s, victim);
        }
        c->st = CN__ST_HELLO;
        c->deadline = c->accepted_ms + ls->lim.handshake_ms;
        lo_link(s, c);
        watch(s, c, CN__EV_READ);
    }
}

/* ---- timers, shutdown ------------------------------------------------------------ */
static void loop_timers(cn_server_t *s, int64_t now)
{
    if (now < s->next_timer)
        return;
    s->next_timer = INT64_MAX;
    cn_conn_t *c = s->lo_head;
    while (c) {
        cn_conn_t *next = c->lo_next;
        int64_t keep = 0;
        if (c->deadline <= now && c->st == CN__ST_IDLE && c->ls->ad->idle &&
            !atomic_load(&s->stopping))
            keep = c->ls->ad->idle(c->cstate, now);
        if (keep > now)
            c->deadline = keep;
        if (c->deadline <= now) {
            cn_debug("net", "%s connection from %s: %s timeout", c->ls->ad->name, c->peer_text,
                     c->st == CN__ST_IDLE ? "idle" : "handshake");
            /* A connection that never delivered a request was refused by
             * the deadline; an idle one simply ended.  (pending is cleared
             * only by the loop, which is us.) */
            if (c->st != CN__ST_IDLE || c->pending)
                cn_metric_add(c->ls->m.refused[CN__REFUSE_DEADLINE], 1);
            drop(s, c);
        } else if (c->deadline < s->next_timer) {
            s->next_timer = c->deadline;
        }
        c = next;
    }
}

static void begin_shutdown(cn_server_t *s)
{
    atomic_store(&s->stopping, true);
    for (size_t i = 0; i < s->nls; i++) {
        cn__listener_t *ls = s->ls[i];
        if (ls->fd >= 0) {
            cn__poll_del(s->poll, ls->fd);
            close(ls->fd);
            ls->fd = -1;
        }
    }
    while (s->lo_head)
        drop(s, s->lo_head);
    /* Handshakes are not requests in flight: cut them now. */
    pthread_mutex_lock(&s->mu);
    unsigned live = s->nlive;
    for (cn_conn_t *c = s->all_head; c; c = c->all_next)
        if (c->st == CN__ST_WORKER && c->pool == CN_POOL_HANDSHAKE)
            shutdown(c->fd, SHUT_RDWR);
    pthread_mutex_unlock(&s->mu);
    cn_info("net", "shutting down: %u connection(s) still busy, grace %lld ms", live,
            (long long)s->cfg.grace_ms);
}

cn_err_t cn__loop_run(cn_server_t *s)
{
    cn_err_t err = CN_OK;
    cn__batch_t *b = calloc(1, sizeof *b);
    if (!b)
        return -ENOMEM;
    s->batch = b;
    for (size_t i = 0; i < s->nls; i++)
        if ((err = cn__poll_add(s->poll, s->ls[i]->fd, CN__EV_READ, s->ls[i])) < 0)
            goto out;
    s->wake_src.kind = CN__SRC_WAKE;
    if ((err = cn__poll_add(s->poll, s->wake_fd, CN__EV_READ, &s->wake_src)) < 0)
        goto out;
    s->sig_src.kind = CN__SRC_SIGNAL;
    if (s->sig_fd >= 0 && (err = cn__poll_add(s->poll, s->sig_fd, CN__EV_READ, &s->sig_src)) < 0)
        goto out;
    s->next_timer = INT64_MAX;
    s->accept_retry = INT64_MAX;
    bool draining = false, forced = false;
    int64_t grace_end = 0;
    for (;;) {
        int64_t now = cn_mono_ms();
        if (atomic_load(&s->stop_requested) && !draining) {
            begin_shutdown(s);
            draining = true;
            grace_end = now + s->cfg.grace_ms;
        }
        int timeout = -1;
        if (draining) {
            pthread_mutex_lock(&s->mu);
            unsigned live = s->nlive;
            pthread_mutex_unlock(&s->mu);
            if (live == 0)
                break;
            if (now >= grace_end && !forced) {
                cn_warn("net", "grace period over: closing %u connection(s)", live);
                cn__admit_shutdown_all(s);
                forced = true;
            }
            timeout = 50;
        } else {
            int64_t next = s->next_timer < s->accept_retry ? s->next_timer : s->accept_retry;
            if (next != INT64_MAX) {
                int64_t d = next - now;
                timeout = d < 0 ? 0 : d > 60000 ? 60000 : (int)d;
            }
        }
        for (int p = 0; p < CN_POOL_COUNT; p++)
            if (s->park_head[p] && (timeout < 0 || timeout > 5))
                timeout = 5; /* a worker may free up without telling us */
        int n = cn__poll_wait(s->poll, b->ev, CN__MAX_EVENTS, timeout);
        if (n < 0) {
            err = n;
            cn_error("net", "event loop: %s", cn_strerror(err));
            goto out;
        }
        b->n = n;
        for (b->i = 0; b->i < n; b->i++) {
            void *ptr = b->ev[b->i].ptr;
            if (!ptr)
                continue;
            switch (*(int *)ptr) {
            case CN__SRC_LISTENER:
                if (!draining)
                    loop_accept(s, ptr);
                break;
            case CN__SRC_WAKE: {
                uint64_t v;
                ssize_t r = read(s->wake_fd, &v, sizeof v);
                (void)r;
                take_returns(s);
                break;
            }
            case CN__SRC_SIGNAL: {
                struct signalfd_siginfo si;
                while (read(s->sig_fd, &si, sizeof si) == (ssize_t)sizeof si)
                    cn_info("net", "signal %u: stopping", si.ssi_signo);
                atomic_store(&s->stop_requested, true);
                break;
            }
            case CN__SRC_CONN: {
                cn_conn_t *c = ptr;
                c->armed = false; /* one-shot: it fired */
                if (c->st == CN__ST_HELLO)
                    loop_dispatch(s, c, CN_POOL_HANDSHAKE);
                else if (c->st == CN__ST_IDLE)
                    read_head(s, c, true);
                break;
            }
            }
        }
        b->n = 0;
        unpark(s);
        int64_t after = cn_mono_ms();
        loop_timers(s, after);
        if (!draining && after >= s->accept_retry)
            accept_resume(s);
    }
out:
    s->batch = NULL;
    free(b);
    return err;
}
