/* The gateway's placements: which storage server holds a repository, kept
 * durably in the gateway's data directory through src/meta (the statements
 * are src/meta/sql/gateway.c), and the rule that picks a server for a new
 * repository.  A placement is written (durably) before the repository is
 * created upstream and confirmed with its id afterwards; one left pending by
 * a crash in between keeps naming the server it picked, so a retry goes
 * there again and can only create the repository once (docs/protocol/
 * scribe-gateway.md, "Placement").  Never asks storage anything to decide
 * a mutation's outcome. */
#include "gw_int.h"

#include "cairn/meta.h"
#include "meta/sql/gateway.h"

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
    place_q q = { .g = g, .id = id, .out = out };
    return cn_meta_run(g->meta, CN_META_RUN_READ | CN_META_RETRY, by_id_body, &q);
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
    return cn_meta_run(g->meta, CN_META_RUN_WRITE | CN_META_RETRY, reserve_body, &q);
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
    return cn_meta_run(g->meta, CN_META_RUN_WRITE | CN_META_RETRY, confirm_body, &q);
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
typedef struct {
    bool up;
    bool has_avail;
    uint64_t avail, repos;
    int64_t placements;
} candidate_t;

/* What one server says of itself: instance_status's first page. */
static void probe(cn__gw_t *g, size_t server, uint8_t codec, candidate_t *c)
{
    cn_buf_t req = { 0 }, reply = { 0 };
    cn_scribe_hdr_t h;
    cn_scribe_instance_req_t q = { .has_after = false };
    cn_scribe_instance_resp_t r;
    memset(c, 0, sizeof *c);
    if (cn_scribe_enc_instance_req(&req, codec, &q) >= 0 &&
        cn__gw_ask(g, server, codec, CN_SCRIBE_OP_INSTANCE_STATUS, &req, CN_SCRIBE_MAX_FRAME, &h,
                   &reply) >= 0 &&
        !(h.flags & CN_SCRIBE_FLAG_ERROR) &&
        cn_scribe_dec_instance_resp(reply.data, reply.len, codec, &r) >= 0) {
        c->up = true;
        c->has_avail = r.has_available;
        c->avail = r.available_bytes;
        c->repos = r.total_repositories;
        place_q pq = { .g = g, .server = server };
        cn_err_t n = cn_meta_run(g->meta, CN_META_RUN_READ | CN_META_RETRY, count_body, &pq);
        c->placements = n < 0 ? INT64_MAX : n;
    }
    cn_buf_free(&req);
    cn_buf_free(&reply);
}

/* a better than b: more available bytes (a server that reports them beats
 * one that does not), then fewer repositories, then fewer placements. */
static bool better(const candidate_t *a, const candidate_t *b)
{
    if (a->has_avail != b->has_avail)
        return a->has_avail;
    if (a->has_avail && a->avail != b->avail)
        return a->avail > b->avail;
    if (a->repos != b->repos)
        return a->repos < b->repos;
    return a->placements < b->placements;
}

cn_err_t cn__gw_pick(cn__gw_t *g, const char *ns, uint8_t codec, size_t *server)
{
    candidate_t best = { 0 }, c;
    bool found = false;
    for (size_t i = 0; i < g->cfg.n; i++) {
        if (strcmp(g->cfg.servers[i].ns, ns))
            continue;
        probe(g, i, codec, &c);
        if (c.up && (!found || better(&c, &best))) {
            best = c;
            *server = i;
            found = true;
        }
    }
    return found ? CN_OK : CN_E_UNAVAILABLE;
}
