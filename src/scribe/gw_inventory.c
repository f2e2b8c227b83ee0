/* The gateway's inventory of its storage servers (docs/protocol/
 * scribe-gateway.md, "Inventory"): one thread walks every configured
 * server's instance_status (26) pages in turn, following the cursor (at
 * most 128 repositories a page) and starting the walk of a server again
 * from its first page when the data-root incarnation or the repository
 * count changes between two pages; then it waits the configured interval
 * and walks again.  A complete walk leaves a snapshot per server (its
 * incarnation, repository count, used and available bytes) that the pick
 * rule reads instead of asking every server on every repo_create; every
 * repository a walk finds that the placement map does not know is recorded
 * (adopted) on the server that holds it.
 *
 * It must never answer a client, never acknowledge a mutation (a snapshot
 * is a sample: placement only), never delete a placement (a server
 * restored from an older copy may lack repositories for a while; forgetting
 * their names would let them be placed elsewhere), and never move a name a
 * placement already gives to another server. */
#include "gw_int.h"

#include "cairn/crypto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

struct cn__gw_inv {
    pthread_t thread;
    bool running, stop;
    pthread_mutex_t mu; /* everything below */
    pthread_cond_t cv;  /* CLOCK_MONOTONIC: the wait between walks, and stop */
    int64_t interval_ms;
    cn__gw_up_t *busy; /* the connection a walk waits on: shut down by stop */
    cn__gw_snap_t snap[CN_GW_MAX_SERVERS];
    uint64_t placed[CN_GW_MAX_SERVERS]; /* placements reserved, ever */
    uint64_t strays[CN_GW_MAX_SERVERS]; /* the last walk's names placed elsewhere */
    bool walked[CN_GW_MAX_SERVERS];     /* a walk ever completed: snap keeps its
                                           incarnation across failed walks */
};

/* ---- one walk, pure ------------------------------------------------------------------------- */
void cn__gw_walk_init(cn__gw_walk_t *w)
{
    memset(w, 0, sizeof *w);
}

/* The walk starts again from the first page, unless it has already
 * restarted CN__GW_WALK_RESTARTS times (the server changes faster than it
 * can be read: left for the next interval). */
static int walk_restart(cn__gw_walk_t *w)
{
    if (++w->restarts > CN__GW_WALK_RESTARTS)
        return CN__GW_WALK_GIVE_UP;
    w->has_after = false;
    w->pages = 0;
    w->rows = 0;
    return CN__GW_WALK_RESTART;
}

int cn__gw_walk_page(cn__gw_walk_t *w, const cn_scribe_instance_resp_t *r)
{
    if (!w->has_after) { /* the answer to a first-page request */
        memcpy(w->incarnation, r->incarnation.b, 16);
        w->total = r->total_repositories;
        w->used = r->used_bytes;
        w->pages = 0;
        w->rows = 0;
    } else if (memcmp(w->incarnation, r->incarnation.b, 16) || w->total != r->total_repositories) {
        return walk_restart(w);
    }
    /* sampled on every page: the latest is the best */
    w->has_available = r->has_available;
    w->available = r->has_available ? r->available_bytes : 0;
    w->pages++;
    w->rows += r->count;
    if (!r->has_next)
        return CN__GW_WALK_DONE;
    /* A cursor must advance and the pages must end: a server breaking
     * either (the codec already refuses a cursor before its page's last
     * row) is not walked further this time. */
    if (w->has_after && memcmp(r->next.b, w->after, 16) <= 0)
        return CN__GW_WALK_GIVE_UP;
    if (w->pages > w->total / CN_SCRIBE_MAX_INSTANCE_PAGE + 16)
        return CN__GW_WALK_GIVE_UP;
    w->has_after = true;
    memcpy(w->after, r->next.b, 16);
    return CN__GW_WALK_NEXT;
}

/* ---- asking a server ------------------------------------------------------------------------ */
static bool stopping(struct cn__gw_inv *v)
{
    pthread_mutex_lock(&v->mu);
    bool s = v->stop;
    pthread_mutex_unlock(&v->mu);
    return s;
}

/* Marks up as the connection the walk waits on (NULL: none), unless the
 * gateway is stopping: false then. */
static bool set_busy(struct cn__gw_inv *v, cn__gw_up_t *up)
{
    pthread_mutex_lock(&v->mu);
    bool ok = !v->stop || !up;
    if (ok)
        v->busy = up;
    pthread_mutex_unlock(&v->mu);
    return ok;
}

/* One instance_status exchange with server on a pooled connection (the
 * gateway's own codec-1 connections), repeated once on a new connection
 * when a pooled one breaks under it: it has no side effect.  *why says
 * what failed. */
static cn_err_t ask(cn__gw_t *g, size_t server, const cn_buf_t *req, cn_scribe_hdr_t *h,
                    cn_buf_t *reply, const char **why)
{
    for (int attempt = 0;; attempt++) {
        cn__gw_up_t *up = NULL;
        cn_err_t e = cn__gw_up_get(g, server, CN_SCRIBE_CODEC_LE, 0, &up);
        if (e < 0) {
            *why = "it does not answer";
            return e;
        }
        if (!set_busy(g->inv, up)) {
            cn__gw_up_close(up);
            *why = "the gateway is stopping";
            return CN_E_CLOSED;
        }
        e = cn__gw_up_call(up, CN_SCRIBE_OP_INSTANCE_STATUS, 26, req, CN_SCRIBE_MAX_FRAME, h,
                           reply);
        set_busy(g->inv, NULL);
        if (e >= 0) {
            cn__gw_up_put(g, up);
            return CN_OK;
        }
        cn__gw_up_close(up);
        if (e == -ENOMEM || attempt == 1 || stopping(g->inv)) {
            *why = "the exchange broke";
            return e == -ENOMEM ? e : CN_E_UNAVAILABLE;
        }
    }
}

/* Asks one page: the walk's next request, its decoded answer in *r (views
 * into reply). */
static cn_err_t ask_page(cn__gw_t *g, size_t server, const cn__gw_walk_t *w, cn_buf_t *req,
                         cn_buf_t *reply, cn_scribe_instance_resp_t *r, const char **why)
{
    cn_scribe_instance_req_t q;
    memset(&q, 0, sizeof q);
    q.has_after = w->has_after;
    if (w->has_after)
        memcpy(q.after.b, w->after, 16);
    cn_buf_reset(req);
    cn_scribe_hdr_t h;
    CN_TRY(cn_scribe_enc_instance_req(req, CN_SCRIBE_CODEC_LE, &q));
    CN_TRY(ask(g, server, req, &h, reply, why));
    cn_scribe_error_t er;
    if ((h.flags & CN_SCRIBE_FLAG_ERROR) &&
        cn_scribe_dec_error(reply->data, reply->len, CN_SCRIBE_CODEC_LE, &er) >= 0) {
        /* e.g. forbidden: the gateway's credential lacks the grant */
        *why = cn_scribe_errcode_name(er.code);
        return CN_E_DENIED;
    }
    if ((h.flags & CN_SCRIBE_FLAG_ERROR) ||
        cn_scribe_dec_instance_resp(reply->data, reply->len, CN_SCRIBE_CODEC_LE, r) < 0) {
        *why = "it sent a malformed instance_status page";
        return CN_E_PROTOCOL;
    }
    return CN_OK;
}

/* ---- adoption ------------------------------------------------------------------------------- */
/* Records a repository the placement map does not know on server, unless
 * its name is placed on another server (counted in *strays: the name stays
 * where it is, the gateway never moves it).  A pending placement of the
 * name on this server is settled; one naming a server no longer configured
 * follows the repository. */
static bool adopt_one(cn__gw_t *g, size_t server, const cn_scribe_repo_info_t *ri, uint64_t *strays)
{
    const char *ns = cn__gw_server_ns(g, server);
    cn__gw_place_t p;
    cn_err_t e = cn__gw_place_by_name(g, ns, (const char *)ri->name.p, ri->name.len, &p);
    if (e >= 0 && p.server != server) {
        (*strays)++;
        return false;
    }
    if (e < 0 && e != CN_E_NOT_FOUND && e != CN_E_CONFLICT)
        return false;
    e = cn__gw_place_confirm(g, ns, (const char *)ri->name.p, ri->name.len, server, ri->id.b);
    if (e < 0)
        cn_debug("gateway", "inventory: storage server %zu: %.*s not recorded: %s", server + 1,
                 (int)ri->name.len, (const char *)ri->name.p, cn_strerror(e));
    return e >= 0;
}

/* Every row of a page the map does not record on server (one read
 * transaction for the page), adopted.  Returns how many were recorded. */
static uint64_t adopt_page(cn__gw_t *g, size_t server, const cn_scribe_instance_resp_t *r,
                           uint64_t *strays)
{
    uint8_t ids[CN_SCRIBE_MAX_INSTANCE_PAGE][16];
    bool known[CN_SCRIBE_MAX_INSTANCE_PAGE];
    cn_scribe_rows_t it = r->rows;
    cn_scribe_instance_row_t row;
    size_t n = 0;
    while (n < CN_SCRIBE_MAX_INSTANCE_PAGE && cn_scribe_next_instance_row(&it, &row))
        memcpy(ids[n++], row.info.id.b, 16);
    if (!n || cn__gw_place_known(g, server, ids, n, known) < 0)
        return 0;
    uint64_t adopted = 0;
    it = r->rows;
    for (size_t i = 0; i < n && cn_scribe_next_instance_row(&it, &row); i++)
        if (!known[i])
            adopted += adopt_one(g, server, &row.info, strays);
    return adopted;
}

/* ---- the snapshots --------------------------------------------------------------------------- */
static void hex16(const uint8_t id[16], char out[33])
{
    cn_hex_encode(id, 16, out);
    out[32] = 0;
}

/* Says what a walk found (info when something changed since the last
 * complete walk, had one been, debug otherwise). */
static void report(cn__gw_t *g, size_t server, bool had, const cn__gw_snap_t *old,
                   const cn__gw_snap_t *s, uint64_t adopted)
{
    char inc[33], was[33];
    hex16(s->incarnation, inc);
    hex16(old->incarnation, was);
    size_t n = g->cfg.n;
    if (had && memcmp(old->incarnation, s->incarnation, 16))
        cn_info("gateway",
                "inventory: storage server %zu of %zu has a new data-root incarnation %s (was "
                "%s): walked again from its first page",
                server + 1, n, inc, was);
    bool changed = !had || old->total != s->total || adopted || s->restarts ||
                   memcmp(old->incarnation, s->incarnation, 16);
    cn_log(changed ? CN_LOG_INFO : CN_LOG_DEBUG, "gateway",
           "inventory: storage server %zu of %zu: %llu repositories in %u page(s), %llu adopted, "
           "%u restart(s), incarnation %s",
           server + 1, n, (unsigned long long)s->total, s->pages, (unsigned long long)adopted,
           s->restarts, inc);
}

/* Publishes a walk's outcome: a snapshot when it completed, else the
 * server's snapshot stops counting (the pick rule asks it directly). */
static void publish(cn__gw_t *g, size_t server, const cn__gw_walk_t *w, bool done, uint64_t placed0,
                    uint64_t adopted, uint64_t strays, const char *why)
{
    struct cn__gw_inv *v = g->inv;
    pthread_mutex_lock(&v->mu);
    cn__gw_snap_t old = v->snap[server], *s = &v->snap[server];
    uint64_t old_strays = v->strays[server];
    bool had = v->walked[server];
    if (done) {
        v->walked[server] = true;
        s->valid = true;
        memcpy(s->incarnation, w->incarnation, 16);
        s->total = w->total;
        s->used = w->used;
        s->has_available = w->has_available;
        s->available = w->available;
        s->pages = w->pages;
        s->restarts = w->restarts;
        s->at_ms = cn_mono_ms();
        s->placed_at = placed0;
        v->strays[server] = strays;
    } else {
        s->valid = false; /* the rest stays: the last complete walk's */
    }
    cn__gw_snap_t now = *s;
    pthread_mutex_unlock(&v->mu);
    if (!done) {
        cn_log(old.valid ? CN_LOG_WARN : CN_LOG_DEBUG, "gateway",
               "inventory: storage server %zu of %zu not walked: %s", server + 1, g->cfg.n, why);
        return;
    }
    report(g, server, had, &old, &now, adopted);
    if (strays && strays != old_strays)
        cn_warn("gateway",
                "inventory: storage server %zu holds %llu repositories whose names are placed on "
                "another server of its namespace; they stay where placed",
                server + 1, (unsigned long long)strays);
}

/* Walks one server's pages from the first, adopting what it finds. */
static void walk_server(cn__gw_t *g, size_t server)
{
    cn__gw_walk_t w;
    cn__gw_walk_init(&w);
    pthread_mutex_lock(&g->inv->mu);
    uint64_t placed0 = g->inv->placed[server];
    pthread_mutex_unlock(&g->inv->mu);
    cn_buf_t req = { 0 }, reply = { 0 };
    uint64_t adopted = 0, strays = 0;
    const char *why = NULL;
    int st = CN__GW_WALK_NEXT;
    while (st == CN__GW_WALK_NEXT || st == CN__GW_WALK_RESTART) {
        cn_scribe_instance_resp_t r;
        if (stopping(g->inv) || ask_page(g, server, &w, &req, &reply, &r, &why) < 0) {
            st = CN__GW_WALK_GIVE_UP;
            break;
        }
        adopted += adopt_page(g, server, &r, &strays);
        st = cn__gw_walk_page(&w, &r);
        if (st == CN__GW_WALK_RESTART)
            cn_info("gateway",
                    "inventory: storage server %zu: its incarnation or repository count changed "
                    "between pages; walking again from the first page",
                    server + 1);
    }
    if (!why)
        why = w.restarts > CN__GW_WALK_RESTARTS
                  ? "it changed between pages at every restart"
                  : "its cursors do not advance or its pages do not end";
    if (!stopping(g->inv)) /* a walk cut short by the gateway's stop says nothing */
        publish(g, server, &w, st == CN__GW_WALK_DONE, placed0, adopted, strays, why);
    cn_buf_free(&req);
    cn_buf_free(&reply);
}

static void *inv_main(void *arg)
{
    cn__gw_t *g = arg;
    struct cn__gw_inv *v = g->inv;
    for (;;) {
        for (size_t i = 0; i < g->cfg.n && !stopping(v); i++)
            walk_server(g, i);
        pthread_mutex_lock(&v->mu);
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t ns = (int64_t)ts.tv_nsec + (v->interval_ms % 1000) * 1000000;
        ts.tv_sec += (time_t)(v->interval_ms / 1000 + ns / 1000000000);
        ts.tv_nsec = (long)(ns % 1000000000);
        while (!v->stop && pthread_cond_timedwait(&v->cv, &v->mu, &ts) != ETIMEDOUT) {
        }
        bool stop = v->stop;
        pthread_mutex_unlock(&v->mu);
        if (stop)
            return NULL;
    }
}

/* ---- lifecycle and readers ------------------------------------------------------------------- */
cn_err_t cn__gw_inv_start(cn__gw_t *g)
{
    struct cn__gw_inv *v = calloc(1, sizeof *v);
    if (!v)
        return -ENOMEM;
    v->interval_ms = g->cfg.inventory_ms ? g->cfg.inventory_ms : CN__GW_INV_DEFAULT_MS;
    pthread_mutex_init(&v->mu, NULL);
    cn_cond_init_mono(&v->cv);
    g->inv = v;
    int rc = pthread_create(&v->thread, NULL, inv_main, g);
    if (rc) {
        g->inv = NULL;
        pthread_cond_destroy(&v->cv);
        pthread_mutex_destroy(&v->mu);
        free(v);
        return -rc;
    }
    v->running = true;
    return CN_OK;
}

void cn__gw_inv_stop(cn__gw_t *g)
{
    struct cn__gw_inv *v = g->inv;
    if (!v)
        return;
    pthread_mutex_lock(&v->mu);
    v->stop = true;
    if (v->busy) /* a walk waiting on a slow server: wake it now */
        shutdown(v->busy->fd, SHUT_RDWR);
    pthread_cond_broadcast(&v->cv);
    pthread_mutex_unlock(&v->mu);
    if (v->running)
        pthread_join(v->thread, NULL);
    pthread_cond_destroy(&v->cv);
    pthread_mutex_destroy(&v->mu);
    free(v);
    g->inv = NULL;
}

bool cn__gw_inv_fresh(cn__gw_t *g, size_t server, cn__gw_snap_t *out)
{
    struct cn__gw_inv *v = g->inv;
    if (!v || server >= g->cfg.n)
        return false;
    pthread_mutex_lock(&v->mu);
    *out = v->snap[server];
    uint64_t since = v->placed[server] - out->placed_at;
    bool fresh = out->valid && cn_mono_ms() - out->at_ms <= 3 * v->interval_ms;
    pthread_mutex_unlock(&v->mu);
    /* repositories placed since the walk began count as there already */
    out->total += since;
    return fresh;
}

void cn__gw_inv_placed(cn__gw_t *g, size_t server)
{
    struct cn__gw_inv *v = g->inv;
    if (!v || server >= g->cfg.n)
        return;
    pthread_mutex_lock(&v->mu);
    v->placed[server]++;
    pthread_mutex_unlock(&v->mu);
}

void cn__gw_inv_stale(cn__gw_t *g, size_t server)
{
    struct cn__gw_inv *v = g->inv;
    if (!v || server >= g->cfg.n)
        return;
    pthread_mutex_lock(&v->mu);
    v->snap[server].valid = false;
    pthread_mutex_unlock(&v->mu);
}
