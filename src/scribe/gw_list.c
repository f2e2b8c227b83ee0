/* repo_list through the gateway: the storage servers' lists merged by wire
 * name behind an opaque, connection-scoped cursor.  The cursor keeps, per
 * server, the rows of its current page not yet handed out and its own
 * continuation token; the client sees only an 8-byte handle that means
 * nothing outside its connection.  What a caller may see is storage's
 * decision (each server filters its own page); a server that does not
 * answer fails the page, never shortens it silently, and one that refuses
 * fails it with its own refusal (its code reaches the client: a refusal is
 * storage's verdict, not an outage).
 *
 * Over protocol 4 storage's continuation is secured: an opaque token that
 * lives on its connection only until that connection's next request.  So a
 * lane holding one keeps, until its next page, the upstream session that
 * carried its page, lent out of the client connection's (cn__gw_up_for),
 * and no other request goes on it; the client's other requests to that
 * server take another session meanwhile. */
#include "gw_int.h"

#include "cairn/crypto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define UP_PAGE 256 /* rows asked of one server at a time */

typedef struct {
    cn_scribe_repo_info_t info; /* name points at wire[] */
    char wire[CN_SCRIBE_MAX_REPO_NAME + 2];
} row_t;

typedef struct {
    row_t *rows;
    uint32_t n, next;
    bool done;
    bool has_token;
    uint8_t *token;
    uint32_t token_len;
    cn__gw_up_t *up; /* protocol 4, while has_token: the session the token lives on */
} lane_t;

typedef struct cn__gw_cursor {
    lane_t lanes[CN_GW_MAX_SERVERS];
    cn_buf_t refusal; /* the error payload of the server that refused a page */
} cursor_t;

static void cursor_free(cn__gw_conn_t *gc, cursor_t *cur)
{
    if (!cur)
        return;
    for (size_t i = 0; i < CN_GW_MAX_SERVERS; i++) {
        free(cur->lanes[i].rows);
        free(cur->lanes[i].token);
        cn__gw_up_return(gc, cur->lanes[i].up);
    }
    cn_buf_free(&cur->refusal);
    free(cur);
}

void cn__gw_cursors_free(cn__gw_conn_t *gc)
{
    for (size_t i = 0; i < CN__GW_LIST_CURSORS; i++) {
        cursor_free(gc, gc->cursors[i]);
        gc->cursors[i] = NULL;
        gc->cursor_ids[i] = 0;
    }
}

/* One page of server's list on protocol 4: the first on a session borrowed
 * as any request's (tried once more on a new one when it broke, a read
 * without side effects), a later one on the session its token lives on
 * (nothing to retry: the token dies with it).  The session stays in
 * l->up; a broken one is closed. */
static cn_err_t ask_page(cn__gw_call_t *k, size_t server, lane_t *l, const cn_buf_t *req,
                         cn_scribe_hdr_t *h, cn_buf_t *reply)
{
    for (int attempt = 0;; attempt++) {
        cn_err_t e = l->up ? CN_OK : cn__gw_up_for(k, server, 0, false, &l->up);
        if (e < 0)
            return e;
        e = cn__gw_up_call(l->up, CN_SCRIBE_OP_REPO_LIST, 2, req, CN_SCRIBE_MAX_FRAME, h, reply);
        if (e >= 0)
            return CN_OK;
        cn__gw_up_close(l->up);
        l->up = NULL;
        if (e == -ENOMEM || attempt == 1 || l->has_token)
            return e == -ENOMEM ? e : CN_E_UNAVAILABLE;
    }
}

/* The server's next page: on protocol 2 its token is a name any session
 * continues from. */
static cn_err_t ask(cn__gw_call_t *k, size_t server, lane_t *l, const cn_buf_t *req,
                    cn_scribe_hdr_t *h, cn_buf_t *reply)
{
    if (!k->gc->g->cfg.tls)
        return cn__gw_ask_for(k, server, CN_SCRIBE_OP_REPO_LIST, req, CN_SCRIBE_MAX_FRAME, h,
                              reply);
    return ask_page(k, server, l, req, h, reply);
}

/* The next page of one server into its lane.  CN_E_DENIED when the server
 * refused it (its error payload in *refusal), CN_E_UNAVAILABLE when it did
 * not answer. */
static cn_err_t fill(cn__gw_call_t *k, size_t server, lane_t *l, cn_buf_t *refusal)
{
    cn__gw_t *g = k->gc->g;
    cn_buf_t req = { 0 }, reply = { 0 };
    cn_scribe_hdr_t h;
    cn_scribe_repo_list_req_t q = { .limit = UP_PAGE,
                                    .has_token = l->has_token,
                                    .token = { l->token, l->token_len } };
    cn_scribe_repo_list_resp_t r;
    cn_err_t e = cn_scribe_enc_repo_list_req(&req, k->gc->codec, &q);
    if (e >= 0 && (e = ask(k, server, l, &req, &h, &reply)) < 0 && e != -ENOMEM)
        e = CN_E_UNAVAILABLE;
    if (e >= 0 && (h.flags & CN_SCRIBE_FLAG_ERROR)) {
        cn_buf_free(refusal);
        *refusal = reply;
        reply = (cn_buf_t){ 0 };
        e = CN_E_DENIED;
    }
    if (e >= 0 && cn_scribe_dec_repo_list_resp(reply.data, reply.len, k->gc->codec, &r) < 0) {
        e = CN_E_UNAVAILABLE;
        cn__gw_up_close(l->up); /* a server answering nonsense: never ask it on this again */
        l->up = NULL;
    }
    row_t *rows = e >= 0 && r.count ? calloc(r.count, sizeof *rows) : NULL;
    if (e >= 0 && r.count && !rows)
        e = -ENOMEM;
    uint8_t *tok = e >= 0 && r.has_token ? malloc(r.token.len ? r.token.len : 1) : NULL;
    if (e >= 0 && r.has_token && !tok)
        e = -ENOMEM;
    if (e >= 0) {
        const char *ns = cn__gw_server_ns(g, server);
        for (uint32_t i = 0; i < r.count && cn_scribe_next_repo_info(&r.rows, &rows[i].info); i++) {
            size_t n = cn__gw_wire_name(g, ns, (const char *)rows[i].info.name.p,
                                        rows[i].info.name.len, rows[i].wire, sizeof rows[i].wire);
            rows[i].info.name.p = (const uint8_t *)rows[i].wire;
            rows[i].info.name.len = (uint32_t)n;
        }
        if (tok)
            memcpy(tok, r.token.p, r.token.len);
        free(l->rows);
        free(l->token);
        l->rows = rows;
        l->n = r.count;
        l->next = 0;
        l->has_token = r.has_token;
        l->token = tok;
        l->token_len = r.has_token ? r.token.len : 0;
        l->done = !r.has_token;
        rows = NULL;
        tok = NULL;
    }
    if (e < 0 || !l->has_token) { /* no token lives on it any more */
        cn__gw_up_return(k->gc, l->up);
        l->up = NULL;
    }
    free(rows);
    free(tok);
    cn_buf_free(&req);
    cn_buf_free(&reply);
    return e;
}

static int name_cmp(const cn_scribe_repo_info_t *a, const cn_scribe_repo_info_t *b)
{
    uint32_t n = a->name.len < b->name.len ? a->name.len : b->name.len;
    int c = memcmp(a->name.p, b->name.p, n);
    return c ? c : (a->name.len > b->name.len) - (a->name.len < b->name.len);
}

/* The lane with the smallest next name, filling empty lanes first; -1 when
 * every lane is finished.  *failed: the server that did not answer. */
static int smallest(cn__gw_call_t *k, cursor_t *cur, size_t *failed, cn_err_t *err)
{
    int best = -1;
    for (size_t i = 0; i < k->gc->g->cfg.n; i++) {
        lane_t *l = &cur->lanes[i];
        while (l->next == l->n && !l->done) {
            cn_err_t e = fill(k, i, l, &cur->refusal);
            if (e < 0) {
                *failed = i;
                *err = e;
                return -1;
            }
        }
        if (l->next < l->n &&
            (best < 0 || name_cmp(&l->rows[l->next].info,
                                  &cur->lanes[best].rows[cur->lanes[best].next].info) < 0))
            best = (int)i;
    }
    return best;
}

/* The cursor a token names on this connection (taken out of its slot), or
 * a new one for no token. */
static cn_err_t cursor_take(cn__gw_conn_t *gc, const cn_scribe_repo_list_req_t *q, cursor_t **out)
{
    *out = NULL;
    if (!q->has_token) {
        *out = calloc(1, sizeof **out);
        return *out ? CN_OK : -ENOMEM;
    }
    uint64_t id = 0;
    if (q->token.len != sizeof id)
        return CN_E_INVALID;
    memcpy(&id, q->token.p, sizeof id);
    for (size_t i = 0; i < CN__GW_LIST_CURSORS; i++)
        if (gc->cursors[i] && gc->cursor_ids[i] == id) {
            *out = gc->cursors[i];
            gc->cursors[i] = NULL;
            gc->cursor_ids[i] = 0;
            return CN_OK;
        }
    return CN_E_INVALID;
}

/* Keeps cur on the connection under a fresh handle (the oldest slot is
 * reused when all are taken). */
static cn_err_t cursor_keep(cn__gw_conn_t *gc, cursor_t *cur, uint64_t *id)
{
    CN_TRY(cn_random_bytes(id, sizeof *id));
    size_t slot = 0;
    for (size_t i = 0; i < CN__GW_LIST_CURSORS; i++)
        if (!gc->cursors[i]) {
            slot = i;
            break;
        }
    cursor_free(gc, gc->cursors[slot]);
    gc->cursors[slot] = cur;
    gc->cursor_ids[slot] = *id;
    return CN_OK;
}

static cn_err_t page(cn__gw_call_t *k, cursor_t *cur, uint32_t limit, row_t *out, uint32_t *n,
                     bool *more, size_t *failed)
{
    cn_err_t err = CN_OK;
    *n = 0;
    while (*n < limit) {
        int b = smallest(k, cur, failed, &err);
        if (b < 0)
            break;
        lane_t *l = &cur->lanes[b];
        row_t *r = &out[(*n)++];
        *r = l->rows[l->next++]; /* copied: a lane's page is freed when it is refilled */
        r->info.name.p = (const uint8_t *)r->wire;
    }
    if (err < 0)
        return err;
    *more = false;
    for (size_t i = 0; i < k->gc->g->cfg.n; i++)
        *more = *more || cur->lanes[i].next < cur->lanes[i].n || !cur->lanes[i].done;
    return CN_OK;
}

cn_err_t cn__gw_op_list(cn__gw_call_t *k)
{
    cn_scribe_repo_list_req_t q;
    if (cn_scribe_dec_repo_list_req(k->payload, k->len, k->gc->codec, &q) < 0)
        return cn__gw_fail(k, CN_SCRIBE_E_MALFORMED, "malformed repo_list request");
    uint32_t limit = q.limit < 1 ? 1 : q.limit > CN_SCRIBE_MAX_PAGE ? CN_SCRIBE_MAX_PAGE : q.limit;
    cursor_t *cur = NULL;
    cn_err_t e = cursor_take(k->gc, &q, &cur);
    if (e == CN_E_INVALID)
        return cn__gw_fail(k, CN_SCRIBE_E_MALFORMED,
                           "repo_list: not a token of this connection's listing");
    if (e < 0)
        return e;
    row_t *rows = calloc(limit, sizeof *rows);
    cn_scribe_repo_info_t *infos = calloc(limit, sizeof *infos);
    uint32_t n = 0;
    bool more = false, kept = false;
    size_t failed = 0;
    e = rows && infos ? page(k, cur, limit, rows, &n, &more, &failed) : -ENOMEM;
    uint64_t id = 0;
    if (e >= 0 && more && (e = cursor_keep(k->gc, cur, &id)) >= 0)
        kept = true; /* freed with the connection, or by the page that ends it */
    for (uint32_t i = 0; e >= 0 && i < n; i++)
        infos[i] = rows[i].info;
    if (e >= 0) {
        cn_buf_reset(&k->gc->out);
        e = cn_scribe_enc_repo_list_resp(&k->gc->out, k->gc->codec, infos, n, more,
                                         (cn_scribe_str_t){ (const uint8_t *)&id, sizeof id });
        if (e >= 0)
            e = cn__gw_reply(k);
    } else if (e == CN_E_UNAVAILABLE) {
        e = cn__gw_unavailable(k, failed);
    } else if (e == CN_E_DENIED) {
        e = cn__gw_relay_error(k, &cur->refusal);
    }
    if (!kept)
        cursor_free(k->gc, cur);
    free(rows);
    free(infos);
    return e;
}
