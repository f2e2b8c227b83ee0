/* Admission: the connection table of each listener, pending connections per
 * source with eviction of the oldest, the principal of each connection,
 * the request-body memory budget, and the anonymous-request permits of a
 * handshake (Scribe protocol 4).  Everything here runs under srv->mu; the
 * critical sections are a few pointer and counter updates, never I/O other
 * than shutdown(2) of an evicted socket.
 *
 * The connection table (max_conns) is the only limit that refuses a
 * connection for its number at accept.  A principal's connections are
 * counted (the count keeps its entry, which carries its worker share and
 * budget) and capped only where the adapter asks (cn_conn_claim_principal:
 * Scribe protocol 4, whose busy is decided from the certificate before the
 * auth round trip); Jay and HTTP bind with cn_conn_set_principal, which
 * never refuses, since a refusal after authentication would be answered as
 * the server-wide busy that the Jay contract reserves for a full table.
 *
 * Invariants (under mu), asserted where they are relied upon:
 *  1. ls->nconns counts the connections with holds_slot, and never exceeds
 *     max_conns; an evicted connection gives its slot back at once, before
 *     its owner closes it.
 *  2. A connection is in ls->pend list iff pending, and then counted once in
 *     ls->sources under its source key.  Pending: from accept until its
 *     first request head is complete, and for an adapter with idle_pending
 *     again whenever it is idle between requests (cn__admit_repend).
 *  3. reserved of every connection sums to ls->budget_used; a principal's
 *     bytes sum the reserved of its connections; ls->budget_anon sums the
 *     reserved of the connections without a principal.
 *  4. A principal's (or anonymous source's) count is the number of
 *     connections bound to its entry, as their principal or as their
 *     worker-share key (each counts once per role), so it is positive while
 *     one is.  Its conns counts only the first role (the per-principal
 *     cap), so conns <= count.
 */
#include "net/net_int.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* ---- counting table ----------------------------------------------------------- */
static uint64_t fnv1a(const uint8_t *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

cn__count_ent_t *cn__count_get(cn__count_tab_t *t, const void *key, size_t klen, bool create)
{
    uint64_t h = fnv1a(key, klen);
    cn__count_ent_t **slot = &t->b[h % CN__COUNT_BUCKETS];
    for (cn__count_ent_t *e = *slot; e; e = e->next)
        if (e->hash == h && e->klen == klen && memcmp(e->key, key, klen) == 0)
            return e;
    if (!create)
        return NULL;
    cn__count_ent_t *e = calloc(1, sizeof *e + klen);
    if (!e)
        return NULL;
    e->hash = h;
    e->klen = klen;
    memcpy(e->key, key, klen);
    e->next = *slot;
    *slot = e;
    return e;
}

void cn__count_put(cn__count_tab_t *t, cn__count_ent_t *e)
{
    if (e->count || e->bytes)
        return;
    /* Unused: no request of its key is in flight or waiting (the loop's
     * worker share would otherwise still point at it). */
    for (int p = 0; p < CN_POOL_COUNT; p++)
        assert(e->busy[p] == 0 && !e->wait_head[p]);
    cn__count_ent_t **p = &t->b[e->hash % CN__COUNT_BUCKETS];
    while (*p && *p != e)
        p = &(*p)->next;
    if (*p)
        *p = e->next;
    free(e);
}

void cn__count_clear(cn__count_tab_t *t)
{
    for (size_t i = 0; i < CN__COUNT_BUCKETS; i++) {
        cn__count_ent_t *e = t->b[i];
        while (e) {
            cn__count_ent_t *n = e->next;
            free(e);
            e = n;
        }
        t->b[i] = NULL;
    }
}

/* ---- sources --------------------------------------------------------------------- */
void cn__source_key(const struct sockaddr *sa, uint8_t key[16], size_t *klen)
{
    memset(key, 0, 16);
    if (sa->sa_family == AF_INET) {
        memcpy(key, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        *klen = 4;
        return;
    }
    const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(a)) { /* the same host as its IPv4 form */
        memcpy(key, a->s6_addr + 12, 4);
        *klen = 4;
        return;
    }
    memcpy(key, a->s6_addr, 8); /* one /64 is one source */
    key[8] = 6;                 /* never equal to a 4-byte key */
    *klen = 9;
}

static void pend_unlink_locked(cn_conn_t *c)
{
    cn__listener_t *ls = c->ls;
    if (!c->pending)
        return;
    if (c->pend_prev)
        c->pend_prev->pend_next = c->pend_next;
    else
        ls->pend_head = c->pend_next;
    if (c->pend_next)
        c->pend_next->pend_prev = c->pend_prev;
    else
        ls->pend_tail = c->pend_prev;
    c->pend_prev = c->pend_next = NULL;
    c->pending = false;
    cn__count_ent_t *e = cn__count_get(&ls->sources, c->src_key, c->src_klen, false);
    assert(e && e->count > 0); /* invariant 2 */
    if (CN_ALWAYS(e)) {
        e->count--;
        cn__count_put(&ls->sources, e);
    }
}

/* c becomes the youngest pending connection of its listener, counted under
 * its source (invariant 2).  false on ENOMEM (c stays not pending). */
static bool pend_link_locked(cn_conn_t *c)
{
    cn__listener_t *ls = c->ls;
    cn__count_ent_t *src = cn__count_get(&ls->sources, c->src_key, c->src_klen, true);
    if (!src)
        return false;
    src->count++;
    c->pending = true;
    c->pend_prev = ls->pend_tail;
    if (ls->pend_tail)
        ls->pend_tail->pend_next = c;
    else
        ls->pend_head = c;
    ls->pend_tail = c;
    return true;
}

static void slot_release_locked(cn_conn_t *c)
{
    if (c->holds_slot) {
        assert(c->ls->nconns > 0); /* invariant 1 */
        c->holds_slot = false;
        c->ls->nconns--;
    }
}

/* The acceptor (loop 0) only; c->loop is already chosen. */
cn__admit_t cn__admit(cn_conn_t *c, cn_conn_t **victim)
{
    cn__listener_t *ls = c->ls;
    cn_server_t *s = c->srv;
    cn__admit_t r = CN__ADMIT_BUSY;
    cn__refuse_t why = CN__REFUSE_LIMIT;
    *victim = NULL;
    pthread_mutex_lock(&s->mu);
    cn__count_ent_t *src = cn__count_get(&ls->sources, c->src_key, c->src_klen, false);
    if (ls->lim.max_pending_per_source && src && src->count >= ls->lim.max_pending_per_source) {
        why = CN__REFUSE_PER_SOURCE;
        goto out;
    }
    if (ls->lim.max_conns && ls->nconns >= ls->lim.max_conns) {
        cn_conn_t *old = ls->pend_head;
        if (!old)
            goto out;
        cn_metric_add(ls->m.refused[CN__REFUSE_LIMIT], 1); /* the evicted one */
        /* The oldest pending connection makes room: an unauthenticated peer
         * can delay a newcomer by at most one handshake deadline. */
        pend_unlink_locked(old);
        slot_release_locked(old);
        atomic_store(&old->evicted, true);
        cn__loop_t *acceptor = &s->loops[0]; /* the caller */
        if (old->loop == acceptor && old->st != CN__ST_WORKER) {
            *victim = old;
        } else {
            /* Its owner sees the socket fail; a connection of another loop
             * (whose state only that loop may read) is also dropped by that
             * loop when it is told to look for evictions. */
            shutdown(old->fd, SHUT_RDWR);
            if (old->loop != acceptor) {
                atomic_store(&old->loop->evictions, true);
                cn__loop_wake(old->loop);
            }
        }
    }
    if (!pend_link_locked(c))
        goto out;
    c->holds_slot = true;
    ls->nconns++;
    assert(!ls->lim.max_conns || ls->nconns <= ls->lim.max_conns); /* invariant 1 */
    c->id = ++s->next_id;
    c->all_next = s->all_head;
    if (s->all_head)
        s->all_head->all_prev = c;
    s->all_head = c;
    s->nlive++;
    r = CN__ADMIT_OK;
    cn_metric_add(ls->m.accepted, 1);
    cn_metric_add(ls->m.open, 1);
out:
    pthread_mutex_unlock(&s->mu);
    if (r != CN__ADMIT_OK)
        cn_metric_add(ls->m.refused[why], 1);
    return r;
}

/* The worker-share key holds a count of its own on its entry, apart from
 * the principal binding: a worker may rebind c's principal while the loop
 * still counts c's request on the old key (cn__admit_fair_refresh). */
cn__count_ent_t *cn__admit_fair_key(cn_conn_t *c)
{
    if (c->fair)
        return c->fair;
    pthread_mutex_lock(&c->srv->mu);
    cn__count_ent_t *e =
        c->principal ? c->principal : cn__count_get(&c->ls->anon, c->src_key, c->src_klen, true);
    if (e) {
        e->count++;
        c->fair = e;
        c->fair_anon = !c->principal;
    }
    pthread_mutex_unlock(&c->srv->mu);
    return c->fair;
}

static void fair_drop_locked(cn_conn_t *c)
{
    if (!c->fair)
        return;
    assert(c->fair->count > 0); /* invariant 4 */
    c->fair->count--;
    cn__count_put(c->fair_anon ? &c->ls->anon : &c->ls->principals, c->fair);
    c->fair = NULL;
    c->fair_anon = false;
}

void cn__admit_fair_refresh(cn_conn_t *c)
{
    /* principal is written only by c's owner, which is the caller. */
    if (!c->fair || (c->fair_anon ? !c->principal : c->fair == c->principal))
        return;
    assert(c->busy_pool < 0); /* no request of c counted on the old key */
    pthread_mutex_lock(&c->srv->mu);
    fair_drop_locked(c);
    pthread_mutex_unlock(&c->srv->mu);
}

void cn__admit_settle(cn_conn_t *c)
{
    if (!c->pending) /* only the loop, which owns c here, ever clears it */
        return;
    pthread_mutex_lock(&c->srv->mu);
    pend_unlink_locked(c);
    pthread_mutex_unlock(&c->srv->mu);
}

void cn__admit_repend(cn_conn_t *c)
{
    if (c->pending) /* only the loop, which owns c here, ever sets it */
        return;
    pthread_mutex_lock(&c->srv->mu);
    /* An evicted connection gave its slot back and is being closed. */
    if (c->holds_slot && !atomic_load(&c->evicted) && pend_link_locked(c))
        c->repended = true;
    pthread_mutex_unlock(&c->srv->mu);
}

static void budget_release_locked(cn_conn_t *c, uint64_t n)
{
    if (n > c->reserved)
        n = c->reserved;
    assert(c->ls->budget_used >= n); /* invariant 3 */
    assert(!c->principal || c->principal->bytes >= n);
    c->reserved -= n;
    c->ls->budget_used -= n;
    if (c->principal)
        c->principal->bytes -= n;
    else
        c->ls->budget_anon -= n;
    assert(c->ls->budget_anon <= c->ls->budget_used); /* invariant 3 */
}

/* c's principal becomes p (NULL: none), its reservations moving along
 * (invariants 3, 4); the old entry is freed when unused. */
static void principal_bind_locked(cn_conn_t *c, cn__count_ent_t *p)
{
    cn__listener_t *ls = c->ls;
    cn__count_ent_t *old = c->principal;
    if (p) {
        p->count++;
        p->conns++;
        p->bytes += c->reserved;
    } else {
        ls->budget_anon += c->reserved;
    }
    if (old) {
        assert(old->conns > 0 && old->count >= old->conns && old->bytes >= c->reserved);
        old->count--;
        old->conns--;
        old->bytes -= c->reserved;
    } else {
        assert(ls->budget_anon >= c->reserved); /* invariant 3 */
        ls->budget_anon -= c->reserved;
    }
    c->principal = p;
    if (old)
        cn__count_put(&ls->principals, old);
}

static void principal_unbind_locked(cn_conn_t *c)
{
    if (c->principal)
        principal_bind_locked(c, NULL);
}

static void anon_permit_release_locked(cn_conn_t *c)
{
    if (!c->anon_permit)
        return;
    assert(c->ls->anon_permits > 0);
    c->ls->anon_permits--;
    c->anon_permit = false;
}

void cn__admit_release(cn_conn_t *c)
{
    cn_server_t *s = c->srv;
    pthread_mutex_lock(&s->mu);
    anon_permit_release_locked(c);
    pend_unlink_locked(c);
    slot_release_locked(c);
    budget_release_locked(c, c->reserved);
    fair_drop_locked(c);
    principal_unbind_locked(c);
    if (c->id) {
        if (c->all_prev)
            c->all_prev->all_next = c->all_next;
        else
            s->all_head = c->all_next;
        if (c->all_next)
            c->all_next->all_prev = c->all_prev;
        c->all_prev = c->all_next = NULL;
        c->id = 0;
        assert(s->nlive > 0);
        s->nlive--;
        cn_metric_add(c->ls->m.open, -1);
    }
    pthread_mutex_unlock(&s->mu);
}

void cn__admit_shutdown_all(cn__loop_t *l, bool handshakes_only)
{
    cn_server_t *s = l->srv;
    pthread_mutex_lock(&s->mu);
    /* st is read only for l's own connections: l is the thread that writes it. */
    for (cn_conn_t *c = s->all_head; c; c = c->all_next)
        if (c->loop == l &&
            ((c->st == CN__ST_WORKER && (!handshakes_only || c->pool == CN_POOL_HANDSHAKE)) ||
             (c->st == CN__ST_TAIL && !handshakes_only)))
            shutdown(c->fd, SHUT_RDWR);
    pthread_mutex_unlock(&s->mu);
}

/* ---- public: principal and budget ------------------------------------------------------ */
/* Binds c to its principal's entry, moving its reservations with it;
 * CN_E_BUSY (nothing changed) when max is not 0 and the entry already has
 * max connections bound. */
static cn_err_t principal_set(cn_conn_t *c, const char *key, unsigned max)
{
    cn_err_t e = CN_OK;
    cn__listener_t *ls = c->ls;
    size_t klen = key ? strlen(key) : 0;
    if (!klen && !c->principal)
        return CN_OK;
    if (c->principal && klen && c->principal->klen == klen &&
        memcmp(c->principal->key, key, klen) == 0)
        return CN_OK; /* the usual case of a keep-alive client: nothing moves */
    pthread_mutex_lock(&c->srv->mu);
    cn__count_ent_t *p = klen ? cn__count_get(&ls->principals, key, klen, true) : NULL;
    if (klen && !p) {
        e = -ENOMEM;
        goto out;
    }
    if (p && max && p->conns >= max) {
        e = CN_E_BUSY;
        cn__count_put(&ls->principals, p); /* frees an entry just made */
        goto out;
    }
    assert(!p || c->holds_slot || atomic_load(&c->evicted)); /* counted in the table */
    principal_bind_locked(c, p);
out:
    pthread_mutex_unlock(&c->srv->mu);
    return e;
}

/* Never refuses for the number of the principal's connections (see the top
 * of this file). */
cn_err_t cn_conn_set_principal(cn_conn_t *c, const char *key)
{
    return principal_set(c, key, 0);
}

cn_err_t cn_conn_claim_principal(cn_conn_t *c, const char *key)
{
    return principal_set(c, key, c->ls->lim.max_conns_per_principal);
}

cn_err_t cn_conn_anon_permit_take(cn_conn_t *c)
{
    unsigned cap = c->srv->cfg.workers[CN_POOL_HANDSHAKE] / 2;
    cn_err_t e = CN_OK;
    pthread_mutex_lock(&c->srv->mu);
    if (!c->anon_permit && c->ls->anon_permits >= (cap ? cap : 1)) {
        e = CN_E_BUSY;
    } else if (!c->anon_permit) {
        c->ls->anon_permits++;
        c->anon_permit = true;
    }
    pthread_mutex_unlock(&c->srv->mu);
    return e;
}

void cn_conn_anon_permit_release(cn_conn_t *c)
{
    if (!c->anon_permit) /* written only by c's owner, the caller */
        return;
    pthread_mutex_lock(&c->srv->mu);
    anon_permit_release_locked(c);
    pthread_mutex_unlock(&c->srv->mu);
}

cn_err_t cn_conn_budget_reserve(cn_conn_t *c, uint64_t n)
{
    cn__listener_t *ls = c->ls;
    const cn_limits_t *l = &ls->lim;
    cn_err_t e = CN_E_BUSY;
    pthread_mutex_lock(&c->srv->mu);
    if (l->budget_per_conn && (n > l->budget_per_conn || c->reserved > l->budget_per_conn - n))
        goto out;
    if (l->budget_bytes && (n > l->budget_bytes || ls->budget_used > l->budget_bytes - n))
        goto out;
    if (c->principal && l->budget_per_principal &&
        (n > l->budget_per_principal || c->principal->bytes > l->budget_per_principal - n))
        goto out;
    if (!c->principal && l->budget_anonymous &&
        (n > l->budget_anonymous || ls->budget_anon > l->budget_anonymous - n))
        goto out;
    c->reserved += n;
    ls->budget_used += n;
    if (c->principal)
        c->principal->bytes += n;
    else
        ls->budget_anon += n;
    assert(ls->budget_used >= c->reserved); /* invariant 3 */
    e = CN_OK;
out:
    pthread_mutex_unlock(&c->srv->mu);
    if (e == CN_E_BUSY)
        cn_metric_add(ls->m.refused[CN__REFUSE_MEMORY], 1);
    return e;
}

void cn_conn_budget_release(cn_conn_t *c, uint64_t n)
{
    pthread_mutex_lock(&c->srv->mu);
    budget_release_locked(c, n);
    pthread_mutex_unlock(&c->srv->mu);
}
