/* The gateway's placements: which storage server holds a repository, kept
 * durably in the gateway's data directory through src/meta (the statements
 * are src/meta/sql/gateway.c), and the rule that picks a server for a new
 * repository.  A placement is written (durably) before the repository is
 * created upstream and confirmed with its id afterwards; one left pending by
 * a crash in between keeps naming the server it picked, so a retry goes
 * there again and can only create the repository once (docs/protocol/
 * scribe-gateway.md, "Placement").  The pick rule reads the inventory's
 * snapshots (gw_inventory.c) when fresh, else asks instance_status's first
 * page; confirmed placements by id are cached in memory for forwarding.
 * Never asks storage anything to decide a mutation's outcome, and never
 * serves a cached id another confirmation may have changed. */
#include "gw_int.h"

#include "cairn/meta.h"
#include "meta/sql/gateway.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SQL(x) cn__sql_gateway[CN_SQL_GW_##x]

cn_err_t cn__gw_place_migrate(cn_meta_t *meta)
{
    return cn__sql_migrate(meta, &cn__sql_gateway_set);
}

/* The configured index of a stored server address. */
static cn_err_t server_index(const cn__gw_t *g, const char *addr, size_t len, size_t *out)
{
    for (size_t i = 0; i < g->cfg.n; i++)
        if (strlen(g->cfg.servers[i].address) == len &&
            !memcmp(g->cfg.servers[i].address, addr, len)) {
            *out = i;
            return CN_OK;
        }
    return CN_E_CONFLICT;
}

/* ---- the id cache ----------------------------------------------------------------------------
 * Every forwarded request asks where its repository lives: confirmed
 * placements by id are kept in a direct-mapped table (ids are random, their
 * first bytes index it) so that a request costs no read transaction.  Only
 * this process writes its placements, and a confirmation is the one write
 * that can change what an id maps to: it empties the table and bumps the
 * generation, and a lookup fills its slot only when no confirmation ran
 * while it read the map (never a stale slot). */
#define IDC_SLOTS 4096

typedef struct {
    bool used;
    uint8_t id[16];
    size_t server;
} idc_slot_t;

struct cn__gw_idcache {
    pthread_mutex_t mu;
    uint64_t gen;
    idc_slot_t slot[IDC_SLOTS];
};

static idc_slot_t *idc_slot(struct cn__gw_idcache *c, const uint8_t id[16])
{
    return &c->slot[((size_t)id[0] << 8 | id[1]) % IDC_SLOTS];
}

static bool idc_get(cn__gw_t *g, const uint8_t id[16], size_t *server, uint64_t *gen)
{
    struct cn__gw_idcache *c = g->idc;
    if (!c)
        return false;
    pthread_mutex_lock(&c->mu);
    idc_slot_t *sl = idc_slot(c, id);
    bool hit = sl->used && !memcmp(sl->id, id, 16);
    if (hit)
        *server = sl->server;
    *gen = c->gen;
    pthread_mutex_unlock(&c->mu);
    return hit;
}

static void idc_put(cn__gw_t *g, const uint8_t id[16], size_t server, uint64_t gen)
{
    struct cn__gw_idcache *c = g->idc;
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    if (c->gen == gen) {
        idc_slot_t *sl = idc_slot(c, id);
        sl->used = true;
        memcpy(sl->id, id, 16);
        sl->server = server;
    }
    pthread_mutex_unlock(&c->mu);
}

static void idc_clear(cn__gw_t *g)
{
    struct cn__gw_idcache *c = g->idc;
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    c->gen++;
    memset(c->slot, 0, sizeof c->slot);
    pthread_mutex_unlock(&c->mu);
}

cn_err_t cn__gw_place_start(cn__gw_t *g)
{
    g->idc = calloc(1, sizeof *g->idc);
    if (!g->idc)
        return -ENOMEM;
    pthread_mutex_init(&g->idc->mu, NULL);
    cn_err_t e = cn__gw_inv_start(g);
    if (e < 0)
        cn__gw_place_stop(g);
    return e;
}

void cn__gw_place_stop(cn__gw_t *g)
{
    cn__gw_inv_stop(g);
    if (g->idc) {
        pthread_mutex_destroy(&g->idc->mu);
        free(g->idc);
        g->idc = NULL;
    }
}

typedef struct {
    const cn__gw_t *g;
    const char *ns, *name;
    size_t nlen;
    const uint8_t *id;
    size_t server;
    cn__gw_place_t *out;
} place_q;

static cn_err_t by_name_body(cn_meta_txn_t *txn, void *ctx)
{
    place_q *q = ctx;
    cn_meta_stmt_t *st = NULL;
    CN_TRY(cn_meta_queryf(txn, &st, SQL(BY_NAME), "st", q->ns, q->name, q->nlen));
    cn_err_t e = cn_meta_step(st);
    if (e == CN_META_ROW) {
        size_t alen = 0, ilen = 0;
        const char *addr = cn_meta_column_text(st, 0, &alen);
        const void *id = cn_meta_column_is_null(st, 1) ? NULL : cn_meta_column_blob(st, 1, &ilen);
        e = server_index(q->g, addr ? addr : "", alen, &q->out->server);
        q->out->confirmed = id && ilen == 16;
        if (q->out->confirmed)
            memcpy(q->out->id, id, 16);
    } else if (e == CN_META_DONE) {
        e = CN_E_NOT_FOUND;
    }
    cn_meta_finish(st);
    return e;
}

cn_err_t cn__gw_place_by_name(cn__gw_t *g, const char *ns, const char *name, size_t nlen,
                              cn__gw_place_t *out)
{
    memset(out, 0, sizeof *out);
    place_q q = { .g = g, .ns = ns, .name = name, .nlen = nlen, .out = out };
    return cn_meta_run(g->meta, CN_META_RUN_READ | CN_META_RETRY, by_name_body, &q);
}

static cn_err_t by_id_body(cn_meta_txn_t *txn, void *ctx)
{
    place_q *q = ctx;
    cn_meta_stmt_t *st = NULL;
    CN_TRY(cn_meta_queryf(txn, &st, SQL(BY_ID), "b", q->id, (size_t)16));
    cn_err_t e = cn_meta_step(st);
    if (e == CN_META_ROW) {
        size_t alen = 0;
        const char *addr = cn_meta_column_text(st, 0, &alen);
        e = server_index(q->g, addr ? addr : "", alen, &q->out->server);
        q->out->confirmed = true;
        memcpy(q->out->id, q->id, 16);
    } else if (e == CN_META_DONE) {
        e = CN_E_NOT_FOUND;
    }
    cn_meta_finish(st);
    return e;
}

cn_err_t cn__gw_place_by_id(cn__gw_t *g, const uint8_t id[16], cn__gw_place_t *out)
{
    memset(out, 0, sizeof *out);
    uint64_t gen = 0;
    if (idc_get(g, id, &out->server, &gen)) {
        out->confirmed = true;
        memcpy(out->id, id, 16);
        return CN_OK;
    }
    place_q q = { .g = g, .id = id, .out = out };
    cn_err_t e = cn_meta_run(g->meta, CN_META_RUN_READ | CN_META_RETRY, by_id_body, &q);
    if (e >= 0)
        idc_put(g, id, out->server, gen);
    return e;
}

static cn_err_t reserve_body(cn_meta_txn_t *txn, void *ctx)
{
    place_q *q = ctx;
    cn_err_t e = cn_meta_execf(txn, SQL(RESERVE), "stsi", q->ns, q->name, q->nlen,
                               q->g->cfg.servers[q->server].address, (int64_t)cn_wall_ms());
    if (e < 0)
        return e;
    return by_name_body(txn, q);
}

cn_err_t cn__gw_place_reserve(cn__gw_t *g, const char *ns, const char *name, size_t nlen,
                              size_t server, cn__gw_place_t *out)
{
    memset(out, 0, sizeof *out);
    place_q q = { .g = g, .ns = ns, .name = name, .nlen = nlen, .server = server, .out = out };
    cn_err_t e = cn_meta_run(g->meta, CN_META_RUN_WRITE | CN_META_RETRY, reserve_body, &q);
    if (e >= 0 && out->server == server && !out->confirmed)
        cn__gw_inv_placed(g, server); /* counted by the pick rule until the next walk */
    return e;
}

static cn_err_t confirm_body(cn_meta_txn_t *txn, void *ctx)
{
    place_q *q = ctx;
    cn_err_t e = cn_meta_execf(txn, SQL(CONFIRM), "stsbi", q->ns, q->name, q->nlen,
                               q->g->cfg.servers[q->server].address, q->id, (size_t)16,
                               (int64_t)cn_wall_ms());
    return e < 0 ? e : CN_OK;
}

cn_err_t cn__gw_place_confirm(cn__gw_t *g, const char *ns, const char *name, size_t nlen,
                              size_t server, const uint8_t id[16])
{
    place_q q = { .g = g, .ns = ns, .name = name, .nlen = nlen, .server = server, .id = id };
    cn_err_t e = cn_meta_run(g->meta, CN_META_RUN_WRITE | CN_META_RETRY, confirm_body, &q);
    idc_clear(g); /* an id may now map elsewhere, or nowhere (replaced) */
    return e;
}

static cn_err_t forget_body(cn_meta_txn_t *txn, void *ctx)
{
    place_q *q = ctx;
    cn_err_t e = cn_meta_execf(txn, SQL(FORGET), "st", q->ns, q->name, q->nlen);
    return e < 0 ? e : CN_OK;
}

cn_err_t cn__gw_place_forget(cn__gw_t *g, const char *ns, const char *name, size_t nlen)
{
    place_q q = { .g = g, .ns = ns, .name = name, .nlen = nlen };
    return cn_meta_run(g->meta, CN_META_RUN_WRITE | CN_META_RETRY, forget_body, &q);
}

typedef struct {
    const cn__gw_t *g;
    size_t server, n;
    uint8_t (*ids)[16];
    bool *known;
} known_q;

static cn_err_t known_body(cn_meta_txn_t *txn, void *ctx)
{
    known_q *q = ctx;
    const char *mine = q->g->cfg.servers[q->server].address;
    for (size_t i = 0; i < q->n; i++) {
        cn_meta_stmt_t *st = NULL;
        CN_TRY(cn_meta_queryf(txn, &st, SQL(BY_ID), "b", q->ids[i], (size_t)16));
        cn_err_t e = cn_meta_step(st);
        size_t alen = 0;
        const char *addr = e == CN_META_ROW ? cn_meta_column_text(st, 0, &alen) : NULL;
        q->known[i] = addr && alen == strlen(mine) && !memcmp(addr, mine, alen);
        cn_meta_finish(st);
        if (e < 0)
            return e;
    }
    return CN_OK;
}

cn_err_t cn__gw_place_known(cn__gw_t *g, size_t server, uint8_t (*ids)[16], size_t n, bool *known)
{
    known_q q = { .g = g, .server = server, .n = n, .ids = ids, .known = known };
    return cn_meta_run(g->meta, CN_META_RUN_READ | CN_META_RETRY, known_body, &q);
}

static cn_err_t count_body(cn_meta_txn_t *txn, void *ctx)
{
    place_q *q = ctx;
    cn_meta_stmt_t *st = NULL;
    CN_TRY(cn_meta_queryf(txn, &st, SQL(COUNT_ON), "s", q->g->cfg.servers[q->server].address));
    cn_err_t e = cn_meta_step(st);
    int64_t n = e == CN_META_ROW ? cn_meta_column_int64(st, 0) : 0;
    cn_meta_finish(st);
    return e < 0 ? e : (cn_err_t)(n > 1000000000 ? 1000000000 : n);
}

/* ---- the pick rule --------------------------------------------------------------------------- */
/* What one server says of itself now: instance_status's first page.
 * False when it does not answer. */
static bool probe(cn__gw_t *g, size_t server, uint8_t codec, cn__gw_cand_t *c)
{
    cn_buf_t req = { 0 }, reply = { 0 };
    cn_scribe_hdr_t h;
    cn_scribe_instance_req_t q = { .has_after = false };
    cn_scribe_instance_resp_t r;
    bool up = cn_scribe_enc_instance_req(&req, codec, &q) >= 0 &&
              cn__gw_ask(g, server, codec, CN_SCRIBE_OP_INSTANCE_STATUS, &req, CN_SCRIBE_MAX_FRAME,
                         &h, &reply) >= 0;
    /* A server that refuses 26 (protocol 4: the gateway's credential lacks
     * the inventory grant) still answers: a candidate without numbers. */
    if (up && !(h.flags & CN_SCRIBE_FLAG_ERROR) &&
        cn_scribe_dec_instance_resp(reply.data, reply.len, codec, &r) >= 0) {
        c->has_avail = r.has_available;
        c->avail = r.has_available ? r.available_bytes : 0;
        c->repos = r.total_repositories;
    }
    cn_buf_free(&req);
    cn_buf_free(&reply);
    return up;
}

/* Whether a server picked from the inventory's snapshot answers now (a
 * discover: the cheapest request, no inventory work on storage). */
static bool alive(cn__gw_t *g, size_t server, uint8_t codec)
{
    cn_buf_t req = { 0 }, reply = { 0 };
    cn_scribe_hdr_t h;
    bool up = cn__gw_ask(g, server, codec, CN_SCRIBE_OP_DISCOVER, &req, 4096, &h, &reply) >= 0 &&
              !(h.flags & CN_SCRIBE_FLAG_ERROR);
    cn_buf_free(&reply);
    return up;
}

/* The available bytes a candidate is ranked by: every server within
 * 1/64 of the most available counts as the most (free space sampled a
 * moment apart on a shared or busy file system differs by noise that must
 * not decide a placement). */
static uint64_t avail_rank(const cn__gw_cand_t *c, uint64_t most)
{
    return c->avail >= most - most / 64 ? most : c->avail;
}

/* a before b: reports available bytes (a server that does not comes
 * after every one that does), then more of them, then fewer repositories,
 * then fewer placements, then configuration order. */
static bool before(const cn__gw_cand_t *a, const cn__gw_cand_t *b, uint64_t most)
{
    if (a->has_avail != b->has_avail)
        return a->has_avail;
    uint64_t ra = avail_rank(a, most), rb = avail_rank(b, most);
    if (a->has_avail && ra != rb)
        return ra > rb;
    if (a->repos != b->repos)
        return a->repos < b->repos;
    if (a->placements != b->placements)
        return a->placements < b->placements;
    return a->server < b->server;
}

void cn__gw_rank(cn__gw_cand_t *c, size_t n)
{
    uint64_t most = 0;
    for (size_t i = 0; i < n; i++)
        if (c[i].has_avail && c[i].avail > most)
            most = c[i].avail;
    for (size_t i = 1; i < n; i++) { /* insertion sort: n <= 64 */
        cn__gw_cand_t x = c[i];
        size_t j = i;
        for (; j > 0 && before(&x, &c[j - 1], most); j--)
            c[j] = c[j - 1];
        c[j] = x;
    }
}

cn_err_t cn__gw_pick(cn__gw_t *g, const char *ns, uint8_t codec, size_t *server)
{
    cn__gw_cand_t c[CN_GW_MAX_SERVERS];
    size_t n = 0;
    for (size_t i = 0; i < g->cfg.n; i++) {
        if (strcmp(g->cfg.servers[i].ns, ns))
            continue;
        cn__gw_snap_t s;
        memset(&c[n], 0, sizeof c[n]);
        c[n].server = i;
        if (cn__gw_inv_fresh(g, i, &s)) { /* the inventory's numbers: no round trip */
            c[n].cached = true;
            c[n].has_avail = s.has_available;
            c[n].avail = s.available;
            c[n].repos = s.total;
        } else if (!probe(g, i, codec, &c[n])) {
            continue; /* does not answer: not a candidate */
        }
        place_q pq = { .g = g, .server = i };
        cn_err_t k = cn_meta_run(g->meta, CN_META_RUN_READ | CN_META_RETRY, count_body, &pq);
        c[n++].placements = k < 0 ? INT64_MAX : k;
    }
    cn__gw_rank(c, n);
    for (size_t k = 0; k < n; k++) {
        if (!c[k].cached || alive(g, c[k].server, codec)) {
            *server = c[k].server;
            return CN_OK;
        }
        cn__gw_inv_stale(g, c[k].server); /* down since its walk */
    }
    return CN_E_UNAVAILABLE;
}
