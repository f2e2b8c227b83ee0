/* The Scribe operations: each handler decodes its payload, calls ONE repos
 * service function, and encodes the answer.  Object bodies stream: an
 * upload goes into the service in bounded reads (raw, or LZ4 transfer
 * blocks of at most 256 KiB decoded into a fixed buffer); a download goes
 * file → socket by sendfile(2) when both the transfer and the blob are raw
 * (a small object, up to 16 KiB, is read into the reply instead, so that it
 * leaves with its header and its neighbours in one write); otherwise (a
 * compressed blob, an LZ4 transfer) in bounded pieces read by position,
 * each handed to cn_conn_reply, so that the stream can stop after any of
 * them (CN_CONN_MORE) and a client that stops reading holds no worker. */
#include "server_int.h"

#include <errno.h>
#include <lz4.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static cn_err_t ensure_io(cn__scribe_conn_t *sc)
{
    if (!sc->io && !(sc->io = malloc(CN_SCRIBE_BLOCK_MAX)))
        return -ENOMEM;
    if (!sc->io2 && !(sc->io2 = malloc((size_t)LZ4_compressBound(CN_SCRIBE_BLOCK_MAX))))
        return -ENOMEM;
    return CN_OK;
}

static void info_view(const cn_repos_info_t *ri, cn_scribe_repo_info_t *out)
{
    memset(out, 0, sizeof *out);
    memcpy(out->id.b, ri->id, 16);
    out->name = cn_scribe_cstr(ri->name);
    memcpy(out->main_branch.b, ri->main_branch, 16);
    out->head = ri->head;
    memcpy(out->incarnation.b, ri->incarnation, 16);
    out->created_ms = (uint64_t)ri->created_ms;
    out->compression = ri->compression;
}

/* ---- discover and repositories ----------------------------------------------------- */
static cn_err_t op_discover(cn__scribe_call_t *k)
{
    if (k->len)
        return cn__scribe_malformed(k);
    /* With auth: authentication = 1 and the namespace this server serves. */
    cn_scribe_auth_t *auth = k->sc->srv->auth;
    cn_scribe_str_t label = cn_scribe_cstr(auth ? cn_scribe_auth_namespace(auth) : "");
    cn_buf_reset(&k->sc->out);
    CN_TRY(cn_scribe_enc_discover(&k->sc->out, k->sc->codec, CN_SCRIBE_ROLE_STORAGE, auth != NULL,
                                  &label, 1));
    return cn__scribe_reply(k, 0);
}

static cn_err_t reply_info(cn__scribe_call_t *k, const cn_repos_info_t *ri)
{
    cn_scribe_repo_info_t v;
    info_view(ri, &v);
    cn_buf_reset(&k->sc->out);
    CN_TRY(cn_scribe_enc_repo_info_resp(&k->sc->out, k->sc->codec, &v));
    return cn__scribe_reply(k, 0);
}

static cn_err_t op_repo_create(cn__scribe_call_t *k)
{
    cn_scribe_repo_create_req_t q;
    if (cn_scribe_dec_repo_create_req(k->payload, k->len, k->sc->codec, &q) < 0)
        return cn__scribe_malformed(k);
    cn_repos_info_t ri;
    cn_err_t err = cn_repos_create(k->sc->srv->repos, &k->rq, (const char *)q.name.p, q.name.len,
                                   q.compression, &ri);
    return err < 0 ? cn__scribe_fail(k, err) : reply_info(k, &ri);
}

static cn_err_t op_repo_info(cn__scribe_call_t *k)
{
    cn_scribe_repo_info_req_t q;
    if (cn_scribe_dec_repo_info_req(k->payload, k->len, k->sc->codec, &q) < 0)
        return cn__scribe_malformed(k);
    cn_repos_info_t ri;
    cn_err_t err = q.by == CN_SCRIBE_REPO_BY_ID
                       ? cn_repos_info(k->sc->srv->repos, &k->rq, q.id.b, &ri)
                       : cn_repos_info_by_name(k->sc->srv->repos, &k->rq, (const char *)q.name.p,
                                               q.name.len, &ri);
    return err < 0 ? cn__scribe_fail(k, err) : reply_info(k, &ri);
}

typedef struct {
    cn_repos_info_t *rows;
    uint32_t n, cap;
} list_acc_t;

static cn_err_t list_row(void *ctx, const cn_repos_info_t *ri)
{
    list_acc_t *a = ctx;
    if (a->n == a->cap)
        return CN_E_LIMIT;
    a->rows[a->n++] = *ri;
    return 0;
}

/* The name after which the page of token starts: on plaintext the token is
 * that name; with auth it is the opaque token of this connection's live
 * cursor (which it ends), since a candidate's name may be one the caller
 * cannot read.  <0 when the token is neither. */
static cn_err_t list_token_take(cn__scribe_conn_t *sc, const cn_scribe_str_t *t,
                                char after[CN_REPOS_NAME_MAX + 1])
{
    if (!sc->srv->auth) {
        if (t->len > CN_REPOS_NAME_MAX)
            return CN_E_INVALID;
        memcpy(after, t->p, t->len);
        after[t->len] = 0;
        return 0;
    }
    bool ok = sc->list_live && t->len == strlen(sc->list_token) &&
              cn_ct_equal(t->p, sc->list_token, t->len);
    sc->list_live = false;
    if (!ok)
        return CN_E_INVALID;
    memcpy(after, sc->list_after, sizeof sc->list_after);
    return 0;
}

/* The token that continues after the candidate name last: the name itself
 * on plaintext; with auth a fresh random token for this connection's cursor. */
static cn_err_t list_token_make(cn__scribe_conn_t *sc, const char *last, const char **token)
{
    *token = last;
    if (!sc->srv->auth)
        return 0;
    uint8_t r[16];
    cn_err_t err = cn_random_bytes(r, sizeof r);
    if (err < 0)
        return err;
    cn_hex_encode(r, sizeof r, sc->list_token);
    memcpy(sc->list_after, last, sizeof sc->list_after);
    sc->list_live = true;
    *token = sc->list_token;
    return 0;
}

static cn_err_t op_repo_list(cn__scribe_call_t *k)
{
    cn_scribe_repo_list_req_t q;
    if (cn_scribe_dec_repo_list_req(k->payload, k->len, k->sc->codec, &q) < 0)
        return cn__scribe_malformed(k);
    uint32_t limit = q.limit == 0 ? 1 : q.limit > CN_SCRIBE_MAX_PAGE ? CN_SCRIBE_MAX_PAGE : q.limit;
    char after[CN_REPOS_NAME_MAX + 1] = "";
    if (q.has_token && list_token_take(k->sc, &q.token, after) < 0)
        return k->sc->srv->auth
                   ? cn__scribe_fail_code(k, CN_SCRIBE_E_MALFORMED,
                                          "not this connection's listing: another "
                                          "request came between its pages; list again")
                   : cn__scribe_fail_code(k, CN_SCRIBE_E_MALFORMED, "not a token of this server");
    list_acc_t a = { calloc(limit, sizeof *a.rows), 0, limit };
    if (!a.rows)
        return -ENOMEM;
    bool more = false;
    cn_err_t err = cn_repos_list(k->sc->srv->repos, &k->rq, after, limit, list_row, &a, &more);
    if (err < 0) {
        free(a.rows);
        return cn__scribe_fail(k, err);
    }
    /* The page continues after the last candidate, kept before protocol
     * 4's filter drops the repositories the caller cannot read (a page may
     * be empty and still continue); with auth the token only names it. */
    char last[CN_REPOS_NAME_MAX + 1] = "";
    bool cont = more && a.n;
    if (cont)
        memcpy(last, a.rows[a.n - 1].name, sizeof last);
    bool refused = false;
    err = cn__scribe_auth_filter(k, a.rows, &a.n, &refused);
    cn_scribe_repo_info_t *v = refused ? NULL : calloc(a.n ? a.n : 1, sizeof *v);
    if (!v) {
        free(a.rows);
        return refused ? err : -ENOMEM;
    }
    for (uint32_t i = 0; i < a.n; i++)
        info_view(&a.rows[i], &v[i]);
    const char *tok = "";
    err = cont ? list_token_make(k->sc, last, &tok) : 0;
    cn_scribe_str_t token = cn_scribe_cstr(tok);
    cn_buf_reset(&k->sc->out);
    if (err >= 0)
        err = cn_scribe_enc_repo_list_resp(&k->sc->out, k->sc->codec, v, a.n, cont, token);
    if (err >= 0)
        err = cn__scribe_reply(k, 0);
    free(v);
    free(a.rows);
    return err;
}

static cn_err_t op_repo_usage(cn__scribe_call_t *k)
{
    cn_scribe_id_t id;
    if (cn_scribe_dec_repo_id_req(k->payload, k->len, k->sc->codec, &id) < 0)
        return cn__scribe_malformed(k);
    uint64_t bytes = 0;
    cn_err_t err = cn_repos_usage(k->sc->srv->repos, &k->rq, id.b, &bytes);
    if (err < 0)
        return cn__scribe_fail(k, err);
    cn_buf_reset(&k->sc->out);
    CN_TRY(cn_scribe_enc_u64_resp(&k->sc->out, k->sc->codec, bytes));
    return cn__scribe_reply(k, 0);
}

typedef struct {
    cn_repos_info_t rows[CN_SCRIBE_MAX_INSTANCE_PAGE];
    uint64_t bytes[CN_SCRIBE_MAX_INSTANCE_PAGE];
    uint32_t n;
} inst_acc_t;

static cn_err_t inst_row(void *ctx, const cn_repos_info_t *ri, uint64_t bytes)
{
    inst_acc_t *a = ctx;
    if (a->n == CN_SCRIBE_MAX_INSTANCE_PAGE)
        return CN_E_LIMIT;
    a->rows[a->n] = *ri;
    a->bytes[a->n++] = bytes;
    return 0;
}

static cn_err_t op_instance_status(cn__scribe_call_t *k)
{
    cn_scribe_instance_req_t q;
    if (cn_scribe_dec_instance_req(k->payload, k->len, k->sc->codec, &q) < 0)
        return cn__scribe_malformed(k);
    if (cn__scribe_gw_delegated(k)) /* a gateway polls as itself (server_gw.c) */
        return cn__scribe_fail_code(k, CN_SCRIBE_E_FORBIDDEN,
                                    "instance_status is for direct callers only");
    inst_acc_t *a = calloc(1, sizeof *a);
    cn_scribe_instance_row_t *rows = calloc(CN_SCRIBE_MAX_INSTANCE_PAGE, sizeof *rows);
    if (!a || !rows) {
        free(a);
        free(rows);
        return -ENOMEM;
    }
    cn_repos_instance_t in;
    bool has_next = false;
    uint8_t next[16];
    cn_err_t err =
        cn_repos_instance_status(k->sc->srv->repos, &k->rq, q.has_after ? q.after.b : NULL, &in,
                                 inst_row, a, &has_next, next);
    if (err < 0) {
        err = cn__scribe_fail(k, err);
    } else {
        cn_scribe_instance_resp_t h;
        memset(&h, 0, sizeof h);
        memcpy(h.incarnation.b, in.incarnation, 16);
        h.total_repositories = in.total_repositories;
        h.used_bytes = in.used_bytes;
        h.has_available = in.has_available;
        h.available_bytes = in.available_bytes;
        h.count = a->n;
        h.has_next = has_next;
        if (has_next)
            memcpy(h.next.b, next, 16);
        for (uint32_t i = 0; i < a->n; i++) {
            info_view(&a->rows[i], &rows[i].info);
            rows[i].bytes = a->bytes[i];
        }
        cn_buf_reset(&k->sc->out);
        err = cn_scribe_enc_instance_resp(&k->sc->out, k->sc->codec, &h, rows);
        if (err >= 0)
            err = cn__scribe_reply(k, 0);
    }
    free(a);
    free(rows);
    return err;
}

/* ---- put_objects ------------------------------------------------------------------- */
/* Reads one object's transfer bytes into the session.  *sock: the error
 * came from the connection or the transfer encoding (the stream position is
 * lost); otherwise from the service. */
static cn_err_t recv_object(cn__scribe_call_t *k, cn_repos_put_t *p, uint64_t len, bool *sock)
{
    cn__scribe_conn_t *sc = k->sc;
    int64_t deadline = cn_conn_deadline_for(k->c, len);
    *sock = true;
    while (len) {
        size_t n;
        if (!sc->compression) {
            size_t want = len < CN_SCRIBE_BLOCK_MAX ? (size_t)len : CN_SCRIBE_BLOCK_MAX;
            CN_TRY(cn_conn_read_some(k->c, sc->io, want, &n, deadline));
        } else {
            uint8_t bh[CN_SCRIBE_BLOCK_HDR_LEN];
            cn_scribe_block_t b;
            CN_TRY(cn_conn_read_full(k->c, bh, sizeof bh, deadline));
            CN_TRY(cn_scribe_dec_block(bh, len, &b));
            if (b.raw) {
                CN_TRY(cn_conn_read_full(k->c, sc->io, b.original, deadline));
            } else {
                CN_TRY(cn_conn_read_full(k->c, sc->io2, b.stored, deadline));
                int got = LZ4_decompress_safe((const char *)sc->io2, (char *)sc->io, (int)b.stored,
                                              (int)b.original);
                if (got < 0 || (uint32_t)got != b.original)
                    return CN_E_PROTOCOL;
            }
            n = b.original;
        }
        len -= n;
        cn_err_t err = cn_repos_put_write(p, sc->io, n);
        if (err < 0) {
            *sock = false;
            return err;
        }
    }
    *sock = false;
    return CN_OK;
}

/* Protocol 4's upload admission (docs/protocol/scribe.md 15.5): the client
 * waits after the request, before any stream byte.  The rule for now is the
 * listener's memory budget: the stream's two transfer buffers are reserved
 * for the upload (*held, released by the caller).  Admitted: an empty
 * non-STREAM reply, returns 0.  Refused: an error frame, *refused set, and
 * the connection stays usable (no stream byte was sent, none to drain). */
static cn_err_t put_admit(cn__scribe_call_t *k, cn_err_t begin_err, uint64_t *held, bool *refused)
{
    *refused = true;
    if (begin_err < 0)
        return cn__scribe_fail(k, begin_err);
    uint64_t want = 2 * (uint64_t)CN_SCRIBE_BLOCK_MAX;
    if (cn_conn_budget_reserve(k->c, want) < 0)
        return cn__scribe_fail_code(k, CN_SCRIBE_E_BUSY, "server memory is busy; retry");
    *held = want;
    *refused = false;
    cn_buf_reset(&k->sc->out);
    return cn__scribe_reply(k, 0);
}

/* Receives the announced objects into p; see op_put_objects.  Owns p. */
static cn_err_t put_stream(cn__scribe_call_t *k, const cn_scribe_put_req_t *q, cn_repos_put_t *p)
{
    uint8_t *stored = malloc(q->count);
    if (!stored) {
        cn_repos_put_abort(p);
        return -ENOMEM;
    }
    cn_err_t err = CN_OK;
    for (uint32_t i = 0; i < q->count; i++) {
        cn_scribe_put_item_t it;
        cn_scribe_put_item(q, i, &it);
        bool sock = false;
        err = cn_repos_put_object(p, it.kind, &it.id, it.length);
        if (err >= 0)
            err = recv_object(k, p, it.length, &sock);
        bool consumed = err >= 0;
        if (err >= 0)
            err = cn_repos_put_end_object(p);
        if (err < 0) {
            cn_repos_put_abort(p);
            free(stored);
            if (sock)
                return err;
            /* Announced bytes still unread: answer, then close. */
            k->close = !(consumed && i + 1 == q->count);
            return cn__scribe_fail(k, err);
        }
    }
    err = cn_repos_put_commit(p, stored);
    if (err < 0) {
        free(stored);
        return cn__scribe_fail(k, err);
    }
    cn_buf_reset(&k->sc->out);
    err = cn_scribe_enc_put_resp(&k->sc->out, k->sc->codec, stored, q->count);
    free(stored);
    return err < 0 ? err : cn__scribe_reply(k, 0);
}

static cn_err_t op_put_objects(cn__scribe_call_t *k)
{
    cn_scribe_put_req_t q;
    if (cn_scribe_dec_put_req(k->payload, k->len, k->sc->codec, &q) < 0) {
        /* Protocol 4: no stream follows an unadmitted request. */
        k->close = k->sc->version != 4; /* else the stream cannot be delimited */
        return cn__scribe_malformed(k);
    }
    CN_TRY(ensure_io(k->sc));
    cn_repos_put_t *p = NULL;
    cn_err_t err = cn_repos_put_begin(k->sc->srv->repos, &k->rq, q.repo.b, q.count, &p);
    if (k->sc->version == 4) {
        uint64_t held = 0;
        bool refused = false;
        cn_err_t e = put_admit(k, err, &held, &refused);
        if (e < 0 || refused) {
            cn_repos_put_abort(p);
            cn_conn_budget_release(k->c, held);
            return e;
        }
        err = put_stream(k, &q, p);
        cn_conn_budget_release(k->c, held);
        return err;
    }
    if (err < 0) {
        k->close = true; /* a request-level failure before the stream: answer, close */
        return cn__scribe_fail(k, err);
    }
    return put_stream(k, &q, p);
}

/* ---- get_objects ---------------------------------------------------------------------- */
static cn_err_t objrefs(cn__scribe_call_t *k, uint16_t op, cn_scribe_objs_req_t *q,
                        cn_repos_objref_t **refs)
{
    if (cn_scribe_dec_objs_req(k->payload, k->len, k->sc->codec, op, q) < 0)
        return CN_E_PROTOCOL;
    *refs = malloc(q->count * sizeof **refs);
    if (!*refs)
        return -ENOMEM;
    for (uint32_t i = 0; i < q->count; i++) {
        cn_scribe_objref_t r;
        cn_scribe_objref(q, i, &r);
        (*refs)[i].kind = r.kind;
        (*refs)[i].id = r.id;
    }
    return CN_OK;
}

/* A reply stream being gathered: its frame header and count, item headers
 * and small raw objects go out together, in one write per buffer rather
 * than three per object (header and count, item header, body). */
typedef struct gather {
    cn__scribe_call_t *k;
    uint8_t *buf; /* sc->io on raw transfers, else a few headers' room */
    size_t cap, fill;
    bool sent;    /* a byte of the reply was handed to the connection */
    cn_err_t why; /* what stopped send_items, when it failed */
} gather_t;

/* The gather buffer's room on LZ4 transfers, whose blocks use sc->io. */
#define GATHER_ROOM (CN_SCRIBE_HDR_LEN + 4 + CN_SCRIBE_GET_ITEM_HDR_MAX)

static void gather_init(gather_t *g, cn__scribe_call_t *k, uint8_t room[GATHER_ROOM])
{
    bool lz4 = k->sc->compression;
    *g = (gather_t){ .k = k,
                     .buf = lz4 ? room : k->sc->io,
                     .cap = lz4 ? GATHER_ROOM : CN_SCRIBE_BLOCK_MAX };
}

#define SMALL_OBJECT (16u * 1024) /* read into the reply rather than sent by sendfile(2) */
/* How long a reply stream waits for its client to take an object's rest
 * before it stops there (CN_CONN_MORE).  Longer than HTTP's: a clone's
 * objects average 64 KiB, so a stop per object under a busy CPU cost the
 * 1 GiB get 10-15 % at 2 ms (bench/scribe_gateway.py, stop 28). */
#define SCRIBE_PART_WAIT_MS 20

static cn_err_t gather_flush(gather_t *g)
{
    cn_conn_t *c = g->k->c;
    size_t n = g->fill;
    g->fill = 0;
    g->sent |= n > 0;
    return n ? cn_conn_write_all(c, g->buf, n, cn_conn_deadline_for(c, n)) : CN_OK;
}

/* After a part of a reply stream went by cn_conn_reply: CN_CONN_MORE when the
 * client has not taken it within SCRIBE_PART_WAIT_MS (the stream stops there
 * and goes on from a worker once the loop wrote it), CN_OK when it has, or
 * the write's error. */
static cn_err_t part_sent(cn__scribe_call_t *k)
{
    CN_TRY(cn_conn_reply_settle(k->c, SCRIBE_PART_WAIT_MS));
    return cn_conn_reply_pending(k->c) ? CN_CONN_MORE : CN_OK;
}

/* Bytes [*at, length) of an object without a descriptor to send (an
 * LZ4-stored blob, or one the S3 tier is still fetching) on a raw transfer:
 * decoded a piece at a time into the gather buffer behind what it holds,
 * each piece by cn_conn_reply.  When the client has not taken a piece that
 * is not the object's last, the stream stops there: CN_CONN_MORE with *at
 * the bytes sent.  Pieces end on envelope blocks, so each block is decoded
 * once however often the stream stops. */
static cn_err_t gather_pieces(gather_t *g, const cn_repos_obj_t *o, uint64_t *at)
{
    cn__scribe_call_t *k = g->k;
    while (*at < o->length) {
        if (g->cap - g->fill < CN_REPOS_PIECE_ALIGN)
            CN_TRY(gather_flush(g));
        uint64_t end = (*at + (g->cap - g->fill)) / CN_REPOS_PIECE_ALIGN * CN_REPOS_PIECE_ALIGN;
        size_t n = 0;
        bool last = o->length <= end;
        CN_TRY(cn_repos_object_read_at(k->sc->srv->repos, o, *at, g->buf + g->fill,
                                       (size_t)(end - *at), &n, last));
        struct iovec iov = { g->buf, g->fill + n };
        g->sent = true;
        cn_err_t err =
            cn_conn_reply(k->c, &iov, 1, -1, 0, 0, cn_conn_deadline_for(k->c, iov.iov_len));
        g->fill = 0;
        *at += n;
        if (err < 0 || (*at < o->length && (err = part_sent(k)) != CN_OK))
            return err;
    }
    return CN_OK;
}

/* Bytes [*at, length) of an object of a raw transfer after its header,
 * already in the gather buffer: a small one stored raw is read into it; a
 * larger one goes by sendfile(2) with the buffer in front (held back for
 * its first pages); one without a descriptor goes in pieces (gather_pieces,
 * which may stop: CN_CONN_MORE). */
static cn_err_t gather_raw(gather_t *g, const cn_repos_obj_t *o, uint64_t *at)
{
    cn__scribe_call_t *k = g->k;
    int fd = -1;
    uint64_t off = 0;
    cn_err_t err = cn_repos_object_fd_at(k->sc->srv->repos, o, &fd, &off);
    if (err == CN_E_UNSUPPORTED)
        return gather_pieces(g, o, at);
    CN_TRY(err);
    if (!*at && o->length <= SMALL_OBJECT && o->length <= g->cap - g->fill) {
        /* its size was looked up: a short file changed under us */
        err = cn_pread_full(fd, g->buf + g->fill, (size_t)o->length, off, CN_E_LENGTH_MISMATCH);
        g->fill += err < 0 ? 0 : (size_t)o->length;
    } else { /* by cn_conn_reply: a client that stops reading holds no worker */
        struct iovec head = { g->buf, g->fill };
        uint64_t left = o->length - *at;
        g->sent = true;
        err = cn_conn_reply(k->c, &head, g->fill ? 1 : 0, fd, off + *at, left,
                            cn_conn_deadline_for(k->c, g->fill + left));
        g->fill = 0;
    }
    close(fd);
    return err;
}

/* Bytes [*at, length) of an object of an LZ4 transfer: blocks of at most
 * CN_SCRIBE_BLOCK_MAX counted from the object's start, each compressed
 * when that makes it smaller, each read by position into sc->io and sent
 * by cn_conn_reply behind what the gather buffer holds; stops as
 * gather_pieces does (CN_CONN_MORE, *at the bytes sent). */
static cn_err_t send_object_lz4(gather_t *g, const cn_repos_obj_t *o, uint64_t *at)
{
    cn__scribe_call_t *k = g->k;
    cn__scribe_conn_t *sc = k->sc;
    while (*at < o->length) {
        size_t n = 0;
        bool last = o->length - *at <= CN_SCRIBE_BLOCK_MAX;
        CN_TRY(
            cn_repos_object_read_at(sc->srv->repos, o, *at, sc->io, CN_SCRIBE_BLOCK_MAX, &n, last));
        uint8_t h[CN_SCRIBE_BLOCK_HDR_LEN];
        const uint8_t *data;
        size_t stored = cn_scribe_pack_block(sc->io, n, sc->io2, h, &data);
        struct iovec iov[3] = { { g->buf, g->fill }, { h, sizeof h }, { (void *)data, stored } };
        int from = g->fill ? 0 : 1;
        g->sent = true;
        cn_err_t err = cn_conn_reply(k->c, iov + from, 3 - from, -1, 0, 0,
                                     cn_conn_deadline_for(k->c, g->fill + sizeof h + stored));
        g->fill = 0;
        *at += n;
        if (err < 0 || (*at < o->length && (err = part_sent(k)) != CN_OK))
            return err;
    }
    return CN_OK;
}

/* An item of a reply stream from *at bytes of its object on: its header
 * when *at is 0, then its object's bytes.  CN_OK when the item is all
 * sent (or gathered), CN_CONN_MORE when it stopped inside the object (*at
 * the bytes sent), or an error. */
static cn_err_t send_item(gather_t *g, const cn_repos_obj_t *o, uint64_t *at)
{
    bool lz4 = g->k->sc->compression;
    if (!*at) {
        uint8_t h[CN_SCRIBE_GET_ITEM_HDR_MAX];
        cn_scribe_get_item_t it = { o->kind, o->id, o->present, o->length };
        size_t hl = cn_scribe_enc_get_item(h, g->k->sc->codec, &it);
        uint64_t body = !lz4 && o->present && o->length <= SMALL_OBJECT ? o->length : 0;
        if (g->cap - g->fill < hl + body)
            CN_TRY(gather_flush(g));
        memcpy(g->buf + g->fill, h, hl);
        g->fill += hl;
    }
    if (!o->present)
        return CN_OK;
    return lz4 ? send_object_lz4(g, o, at) : gather_raw(g, o, at);
}

/* Items [*next, count) of a reply stream, the first from *at bytes of its
 * object on, then what the gather buffer holds.  After an object (or a
 * piece of one) whose rest the client has not taken within
 * SCRIBE_PART_WAIT_MS (it went to the loop), the send stops there:
 * CN_CONN_MORE with *next and *at where to go on (docs/architecture.md, "A
 * reply in parts").  Errors as cn__scribe_send_objects, logged. */
static cn_err_t send_items(gather_t *g, const cn_repos_obj_t *objs, uint32_t count, uint32_t *next,
                           uint64_t *at)
{
    cn__scribe_call_t *k = g->k;
    cn_err_t err = CN_OK;
    for (uint32_t i = *next; i < count && err >= 0; i++) {
        err = send_item(g, &objs[i], at);
        if (err == CN_CONN_MORE) {
            *next = i;
            return err;
        }
        if (err < 0) {
            cn_warn("scribe", "conn %llu: %s stopped after %u of %u items: %s",
                    (unsigned long long)cn_conn_id(k->c), cn_scribe_op_name(k->hdr.opcode), i,
                    count, cn_strerror(err));
            g->why = err;
            break;
        }
        *at = 0;
        if (g->fill || i + 1 == count)
            continue;
        if ((err = part_sent(k)) == CN_CONN_MORE) {
            *next = i + 1;
            return err;
        }
    }
    if (err >= 0)
        err = gather_flush(g);
    return err < 0 ? CN_E_CLOSED : CN_OK;
}

cn_err_t cn__scribe_send_objects(cn__scribe_call_t *k, const cn_repos_obj_t *objs, uint32_t count)
{
    uint8_t room[GATHER_ROOM];
    cn_err_t err = ensure_io(k->sc);
    if (err < 0)
        return err;
    cn_buf_reset(&k->sc->out);
    err = cn_scribe_enc_count_resp(&k->sc->out, k->sc->codec, count);
    if (err < 0)
        return err;
    gather_t g;
    gather_init(&g, k, room);
    cn_scribe_hdr_t hdr = { k->hdr.opcode, CN_SCRIBE_FLAG_STREAM, k->hdr.request_id,
                            (uint32_t)k->sc->out.len };
    cn_scribe_hdr_encode(g.buf, &hdr);
    memcpy(g.buf + CN_SCRIBE_HDR_LEN, k->sc->out.data, k->sc->out.len);
    g.fill = CN_SCRIBE_HDR_LEN + k->sc->out.len;
    /* From here the reply has committed to count items: a failure once any
     * of it went out closes. */
    uint32_t next = 0;
    uint64_t at = 0;
    err = send_items(&g, objs, count, &next, &at);
    /* Nothing of the reply went out (the first object's bytes could not be
     * had: an S3 tier's backend away, CN_E_UNAVAILABLE): the request still
     * gets its error frame (storage_failure) rather than a closed
     * connection (tests/fleet/test_fleet_faults_faces.py). */
    if (err == CN_E_CLOSED && !g.sent && g.why < 0)
        return cn__scribe_fail(k, g.why);
    if (err != CN_CONN_MORE)
        return err;
    /* The rest is the connection's, for cn__scribe_resume. */
    k->sc->more.objs = malloc((count - next) * sizeof *objs);
    if (!k->sc->more.objs)
        return CN_E_CLOSED;
    memcpy(k->sc->more.objs, objs + next, (count - next) * sizeof *objs);
    k->sc->more.next = 0;
    k->sc->more.at = at;
    k->sc->more.count = count - next;
    k->sc->more.opcode = k->hdr.opcode;
    return CN_CONN_MORE;
}

cn_err_t cn__scribe_resume(void *cstate, cn_conn_t *c)
{
    cn__scribe_conn_t *sc = cstate;
    if (!sc->more.objs)
        return CN_E_INVALID;
    cn__scribe_call_t k;
    memset(&k, 0, sizeof k);
    k.sc = sc;
    k.c = c;
    k.hdr.opcode = sc->more.opcode;
    uint8_t room[GATHER_ROOM];
    gather_t g;
    gather_init(&g, &k, room);
    cn_err_t err = send_items(&g, sc->more.objs, sc->more.count, &sc->more.next, &sc->more.at);
    if (err == CN_CONN_MORE)
        return err;
    cn__scribe_more_free(sc);
    return err;
}

void cn__scribe_more_free(cn__scribe_conn_t *sc)
{
    if (!sc->more.objs)
        return;
    free(sc->more.objs);
    sc->more.objs = NULL;
    cn__scribe_session_activity(&sc->srv->sessions, sc->ss, false); /* serve kept it busy */
}

/* A public-only caller: anonymous on an authenticated listener, so its
 * Reader role (the dispatch check passed) comes from the repository being
 * public-read.  get_objects and presence then expose only commits and
 * accepted manifests (cn_repos_get_public; docs/protocol/scribe.md 16.1);
 * file bytes go through get_chunks with witnesses. */
static bool public_only(const cn__scribe_call_t *k)
{
    return k->rq.authed && !k->rq.account;
}

static cn_err_t op_get_objects(cn__scribe_call_t *k)
{
    cn_scribe_objs_req_t q;
    cn_repos_objref_t *refs = NULL;
    cn_err_t err = objrefs(k, CN_SCRIBE_OP_GET_OBJECTS, &q, &refs);
    if (err == CN_E_PROTOCOL)
        return cn__scribe_malformed(k);
    if (err < 0)
        return err;
    cn_repos_obj_t *objs = malloc(q.count * sizeof *objs);
    if (!objs || (err = ensure_io(k->sc)) < 0) {
        free(objs);
        free(refs);
        return -ENOMEM;
    }
    err = public_only(k)
              ? cn_repos_get_public(k->sc->srv->repos, &k->rq, q.repo.b, refs, q.count, objs)
              : cn_repos_get_lookup(k->sc->srv->repos, &k->rq, q.repo.b, refs, q.count, objs);
    free(refs);
    if (err < 0) {
        free(objs);
        return cn__scribe_fail(k, err);
    }
    err = cn__scribe_send_objects(k, objs, q.count);
    free(objs);
    return err;
}

static cn_err_t reply_bits(cn__scribe_call_t *k, const bool *bits, uint32_t n)
{
    cn_buf_reset(&k->sc->out);
    CN_TRY(cn_scribe_enc_bits_resp(&k->sc->out, k->sc->codec, bits, n));
    return cn__scribe_reply(k, 0);
}

/* presence for a public-only caller: what its get_objects would serve. */
static cn_err_t presence_public(cn__scribe_call_t *k, const uint8_t repo[16],
                                const cn_repos_objref_t *refs, uint32_t n, bool *bits)
{
    cn_repos_obj_t *objs = malloc(n * sizeof *objs);
    if (!objs)
        return -ENOMEM;
    cn_err_t err = cn_repos_get_public(k->sc->srv->repos, &k->rq, repo, refs, n, objs);
    for (uint32_t i = 0; i < n && err >= 0; i++)
        bits[i] = objs[i].present;
    free(objs);
    return err;
}

static cn_err_t op_presence(cn__scribe_call_t *k, bool pin)
{
    cn_scribe_objs_req_t q;
    cn_repos_objref_t *refs = NULL;
    cn_err_t err = objrefs(k, pin ? CN_SCRIBE_OP_PIN_OBJECTS : CN_SCRIBE_OP_PRESENCE, &q, &refs);
    if (err == CN_E_PROTOCOL)
        return cn__scribe_malformed(k);
    if (err < 0)
        return err;
    bool *bits = malloc(q.count * sizeof *bits);
    if (!bits) {
        free(refs);
        return -ENOMEM;
    }
    err = pin ? cn_repos_pin(k->sc->srv->repos, &k->rq, q.repo.b, q.workspace.b, q.intent.b, refs,
                             q.count, bits)
          : public_only(k)
              ? presence_public(k, q.repo.b, refs, q.count, bits)
              : cn_repos_presence(k->sc->srv->repos, &k->rq, q.repo.b, refs, q.count, bits);
    free(refs);
    err = err < 0 ? cn__scribe_fail(k, err) : reply_bits(k, bits, q.count);
    free(bits);
    return err;
}

/* ---- submit and outcomes ----------------------------------------------------------------- */
static cn_err_t outcome_view(const cn_repos_outcome_t *o, cn_scribe_submit_outcome_t *v,
                             cn_scribe_str_t *paths)
{
    memset(v, 0, sizeof *v);
    memcpy(v->operation.b, o->operation, 16);
    v->outcome = o->outcome;
    v->change = o->change;
    v->commit = o->commit;
    v->code = cn__scribe_detail_code(o->code);
    v->head = o->head;
    v->detail = cn_scribe_cstr(o->detail);
    v->path_count = o->npaths;
    for (uint32_t i = 0; i < o->npaths; i++) {
        uint16_t n = 0;
        cn_repos_outcome_path(o, i, &paths[i].p, &n);
        paths[i].len = n;
    }
    return CN_OK;
}

void cn__scribe_submit_view(const cn_scribe_submit_req_t *q, cn_repos_submit_t *s)
{
    memset(s, 0, sizeof *s);
    memcpy(s->repo, q->repo.b, 16);
    memcpy(s->incarnation, q->incarnation.b, 16);
    memcpy(s->operation, q->operation.b, 16);
    memcpy(s->branch, q->branch.b, 16);
    memcpy(s->workspace, q->workspace.b, 16);
    s->base = q->base;
    s->changeset = q->changeset;
    s->keep_locks = q->keep_locks;
    s->author = q->author.p;
    s->author_len = (uint16_t)q->author.len;
    s->message = q->message.p;
    s->message_len = q->message.len;
}

cn_err_t cn__scribe_reply_outcome(cn__scribe_call_t *k, cn_repos_outcome_t *o)
{
    cn_scribe_submit_outcome_t v;
    cn_scribe_str_t paths[CN_REPOS_CONFLICT_PATHS_MAX];
    outcome_view(o, &v, paths);
    cn_buf_reset(&k->sc->out);
    cn_err_t err = cn_scribe_enc_submit_resp(&k->sc->out, k->sc->codec, &v, paths);
    cn_repos_outcome_free(o);
    return err < 0 ? err : cn__scribe_reply(k, 0);
}

static cn_err_t op_submit(cn__scribe_call_t *k)
{
    cn_scribe_submit_req_t q;
    if (cn_scribe_dec_submit_req(k->payload, k->len, k->sc->codec, &q) < 0)
        return cn__scribe_malformed(k);
    cn_repos_submit_t s;
    cn__scribe_submit_view(&q, &s);
    cn_repos_outcome_t o;
    cn_err_t err = cn_repos_submit(k->sc->srv->repos, &k->rq, &s, &o);
    return err < 0 ? cn__scribe_fail(k, err) : cn__scribe_reply_outcome(k, &o);
}

static cn_err_t op_outcome(cn__scribe_call_t *k)
{
    cn_scribe_outcome_req_t q;
    if (cn_scribe_dec_outcome_req(k->payload, k->len, k->sc->codec, &q) < 0)
        return cn__scribe_malformed(k);
    uint8_t kind = CN_REPOS_OP_UNKNOWN;
    cn_repos_outcome_t o;
    cn_repos_branch_outcome_t bo;
    cn_err_t err = cn_repos_operation_outcome(k->sc->srv->repos, &k->rq, q.repo.b, q.operation.b,
                                              &kind, &o, &bo);
    if (err < 0)
        return cn__scribe_fail(k, err);
    cn_scribe_outcome_resp_t v;
    memset(&v, 0, sizeof v);
    cn_scribe_str_t paths[CN_REPOS_CONFLICT_PATHS_MAX];
    if (kind == CN_REPOS_OP_SUBMIT) {
        v.kind = CN_SCRIBE_OUTCOME_KIND_SUBMIT;
        outcome_view(&o, &v.submit, paths);
    } else if (kind == CN_REPOS_OP_BRANCH) {
        v.kind = CN_SCRIBE_OUTCOME_KIND_BRANCH;
        cn__scribe_branch_outcome_view(&bo, &v.branch);
    }
    cn_buf_reset(&k->sc->out);
    err = cn_scribe_enc_outcome_resp(&k->sc->out, k->sc->codec, &v, paths);
    cn_repos_outcome_free(&o);
    return err < 0 ? err : cn__scribe_reply(k, 0);
}

/* ---- history ---------------------------------------------------------------------------
 * Rows are collected with their strings in one arena (offsets, since the
 * arena moves as it grows) and turned into views once the read is done.
 * A page stops early, with more set, before its encoding would pass 16 MiB. */
#define PAGE_FULL 1

typedef struct {
    cn_buf_t arena;
    void *rows;
    size_t rsize;
    uint32_t n, cap;
    bool full;
} acc_t;

static cn_err_t acc_push(acc_t *a, const void *row, size_t extra)
{
    if (a->arena.len + extra + (size_t)a->n * 128 > CN_SCRIBE_REPLY_SOFT) {
        a->full = true;
        return PAGE_FULL;
    }
    if (a->n == a->cap) {
        uint32_t cap = a->cap ? a->cap * 2 : 64;
        void *r = realloc(a->rows, cap * a->rsize);
        if (!r)
            return -ENOMEM;
        a->rows = r;
        a->cap = cap;
    }
    memcpy((uint8_t *)a->rows + (size_t)a->n * a->rsize, row, a->rsize);
    a->n++;
    return CN_OK;
}

/* Appends bytes to the arena and returns their offset (as a fake pointer). */
static const uint8_t *acc_str(acc_t *a, const uint8_t *p, size_t n, cn_err_t *err)
{
    size_t off = a->arena.len;
    if (n && (*err = cn_buf_append(&a->arena, p, n)) < 0)
        return NULL;
    return (const uint8_t *)(uintptr_t)off;
}

static cn_scribe_str_t acc_view(const acc_t *a, const uint8_t *off, uint32_t n)
{
    cn_scribe_str_t s = { n ? a->arena.data + (uintptr_t)off : (const uint8_t *)"", n };
    return s;
}

static void acc_free(acc_t *a)
{
    cn_buf_free(&a->arena);
    free(a->rows);
}

/* The end of a paged read into a (*err its outcome): PAGE_FULL, a page cut
 * short to stay within the reply budget, is success with *more set (when
 * asked); another error frees a and answers the call (*err: its result).
 * False when the call is answered. */
static bool acc_read_ok(cn__scribe_call_t *k, acc_t *a, cn_err_t *err, bool *more)
{
    if (*err == PAGE_FULL) {
        if (more)
            *more = true;
        *err = CN_OK;
    }
    if (*err >= 0)
        return true;
    acc_free(a);
    *err = cn__scribe_fail(k, *err);
    return false;
}

/* Turns the string at byte offset off of every row of a from its arena
 * offset into a view (once the arena has stopped moving). */
static void acc_views(acc_t *a, size_t off)
{
    for (uint32_t i = 0; i < a->n; i++) {
        cn_scribe_str_t *v = (cn_scribe_str_t *)((uint8_t *)a->rows + i * a->rsize + off);
        *v = acc_view(a, v->p, v->len);
    }
}

/* Frees a and sends the reply encoded into k's buffer (enc: the encoder's
 * result). */
static cn_err_t acc_reply(cn__scribe_call_t *k, acc_t *a, cn_err_t enc)
{
    acc_free(a);
    return enc < 0 ? enc : cn__scribe_reply(k, 0);
}

static cn_err_t tree_row(void *ctx, const cn_repos_tree_row_t *row)
{
    acc_t *a = ctx;
    cn_err_t err = CN_OK;
    cn_scribe_tree_entry_t e = {
        { NULL, (uint32_t)row->path_len }, row->manifest, row->size, row->mode, row->last_change
    };
    e.path.p = acc_str(a, row->path, row->path_len, &err);
    if (err < 0)
        return err;
    return acc_push(a, &e, row->path_len + 64);
}

static cn_err_t op_tree_page(cn__scribe_call_t *k)
{
    cn_scribe_tree_page_req_t q;
    if (cn_scribe_dec_tree_page_req(k->payload, k->len, k->sc->codec, &q) < 0)
        return cn__scribe_malformed(k);
    cn_repos_page_q_t pq;
    memset(&pq, 0, sizeof pq);
    memcpy(pq.repo, q.repo.b, 16);
    memcpy(pq.branch, q.branch.b, 16);
    pq.change = q.change;
    pq.prefix = q.prefix.p ? q.prefix.p : (const uint8_t *)"";
    pq.prefix_len = q.prefix.len;
    pq.limit = q.limit;
    if (q.has_after) {
        pq.after = q.after.p;
        pq.after_len = q.after.len;
    }
    acc_t a = { { 0 }, NULL, sizeof(cn_scribe_tree_entry_t), 0, 0, false };
    bool more = false;
    cn_digest_t cr, rr;
    cn_err_t err =
        cn_repos_tree_page(k->sc->srv->repos, &k->rq, &pq, tree_row, &a, &more, &cr, &rr);
    if (!acc_read_ok(k, &a, &err, &more)) /* cut short: the roots are set */
        return err;
    acc_views(&a, offsetof(cn_scribe_tree_entry_t, path));
    cn_buf_reset(&k->sc->out);
    return acc_reply(
        k, &a,
        cn_scribe_enc_tree_page_resp(&k->sc->out, k->sc->codec, a.rows, a.n, more, &cr, &rr));
}

static cn_err_t changed_row(void *ctx, const cn_repos_changed_row_t *row)
{
    acc_t *a = ctx;
    cn_err_t err = CN_OK;
    cn_scribe_changed_row_t r = { { NULL, (uint32_t)row->path_len },
                                  row->change,
                                  row->present,
                                  row->manifest,
                                  row->size,
                                  row->mode };
    r.path.p = acc_str(a, row->path, row->path_len, &err);
    if (err < 0)
        return err;
    return acc_push(a, &r, row->path_len + 64);
}

static cn_err_t op_changed_paths(cn__scribe_call_t *k)
{
    cn_scribe_changed_req_t q;
    if (cn_scribe_dec_changed_req(k->payload, k->len, k->sc->codec, &q) < 0)
        return cn__scribe_malformed(k);
    cn_repos_changed_q_t cq;
    memset(&cq, 0, sizeof cq);
    memcpy(cq.repo, q.repo.b, 16);
    memcpy(cq.branch, q.branch.b, 16);
    cq.from = q.from;
    cq.to = q.to;
    cq.prefix = q.prefix.p;
    cq.prefix_len = q.prefix.len;
    cq.limit = q.limit;
    if (q.has_token) {
        /* The token is the last path of the previous page. */
        cq.after = q.token.p;
        cq.after_len = q.token.len;
    }
    acc_t a = { { 0 }, NULL, sizeof(cn_scribe_changed_row_t), 0, 0, false };
    bool more = false;
    cn_err_t err = cn_repos_changed_paths(k->sc->srv->repos, &k->rq, &cq, changed_row, &a, &more);
    if (!acc_read_ok(k, &a, &err, &more))
        return err;
    acc_views(&a, offsetof(cn_scribe_changed_row_t, path));
    cn_scribe_changed_row_t *rows = a.rows;
    cn_scribe_str_t token = { (const uint8_t *)"", 0 };
    if (more && a.n)
        token = rows[a.n - 1].path;
    cn_buf_reset(&k->sc->out);
    return acc_reply(
        k, &a,
        cn_scribe_enc_changed_resp(&k->sc->out, k->sc->codec, rows, a.n, more && a.n, token));
}

static cn_err_t log_row(void *ctx, const cn_repos_log_row_t *row)
{
    acc_t *a = ctx;
    cn_err_t err = CN_OK;
    cn_scribe_log_row_t r;
    memset(&r, 0, sizeof r);
    r.change = row->change;
    r.commit = row->commit;
    memcpy(r.branch.b, row->branch, 16);
    size_t bl = strlen(row->branch_name);
    r.branch_name.len = (uint32_t)bl;
    r.branch_name.p = acc_str(a, (const uint8_t *)row->branch_name, bl, &err);
    r.parent = row->parent;
    r.path.len = (uint32_t)row->path_len;
    r.path.p = acc_str(a, row->path, row->path_len, &err);
    r.event = row->event;
    r.from_path.len = (uint32_t)row->from_len;
    r.from_path.p = acc_str(a, row->from_path, row->from_len, &err);
    r.author.len = (uint32_t)row->author_len;
    r.author.p = acc_str(a, row->author, row->author_len, &err);
    r.message.len = (uint32_t)row->message_len;
    r.message.p = acc_str(a, row->message, row->message_len, &err);
    r.time_ms = (uint64_t)row->time_ms;
    r.has_merge = row->merge_change != 0;
    r.merge_change = row->merge_change;
    memcpy(r.merge_branch.b, row->merge_branch, 16);
    r.has_pick = row->pick_change != 0;
    r.pick_change = row->pick_change;
    memcpy(r.pick_branch.b, row->pick_branch, 16);
    if (err < 0)
        return err;
    return acc_push(a, &r,
                    bl + row->path_len + row->from_len + row->author_len + row->message_len + 128);
}

/* A merge-aware row: log_row's, then its membership (all-branch mode). */
static cn_err_t follow_row(void *ctx, const cn_repos_log_row_t *row, bool member)
{
    acc_t *a = ctx;
    cn_err_t err = log_row(ctx, row);
    if (err == CN_OK)
        ((cn_scribe_log_row_t *)a->rows)[a->n - 1].member = member;
    return err;
}

/* The follow-merges and all-branch modes (cn_repos_log_follow) into a. */
static cn_err_t log_follow(cn__scribe_call_t *k, const cn_scribe_log_req_t *q, acc_t *a,
                           uint64_t *ceiling)
{
    cn_repos_follow_q_t fq;
    memset(&fq, 0, sizeof fq);
    memcpy(fq.repo, q->repo.b, 16);
    memcpy(fq.branch, q->branch.b, 16);
    fq.path = q->path.p;
    fq.path_len = q->path.len;
    fq.all_branches = q->all_branches;
    fq.has_ceiling = q->has_ceiling;
    fq.ceiling = q->ceiling;
    fq.has_before = q->has_before;
    fq.before = q->before;
    if (q->has_after_path) {
        fq.after_path = q->after_path.p;
        fq.after_len = q->after_path.len;
    }
    fq.limit = q->limit;
    return cn_repos_log_follow(k->sc->srv->repos, &k->rq, &fq, ceiling, follow_row, a);
}

static cn_err_t op_log(cn__scribe_call_t *k)
{
    cn_scribe_log_req_t q;
    if (cn_scribe_dec_log_req(k->payload, k->len, k->sc->codec, &q) < 0)
        return cn__scribe_malformed(k);
    cn_repos_log_q_t lq;
    memset(&lq, 0, sizeof lq);
    memcpy(lq.repo, q.repo.b, 16);
    memcpy(lq.branch, q.branch.b, 16);
    if (q.has_path) {
        lq.path = q.path.p;
        lq.path_len = q.path.len;
    }
    lq.has_before = q.has_before;
    lq.before = q.before;
    if (q.has_after_path) {
        lq.after_path = q.after_path.p;
        lq.after_len = q.after_path.len;
    }
    lq.limit = q.limit;
    acc_t a = { { 0 }, NULL, sizeof(cn_scribe_log_row_t), 0, 0, false };
    uint64_t ceiling = 0;
    cn_err_t err = q.follow_merges ? log_follow(k, &q, &a, &ceiling)
                                   : cn_repos_log(k->sc->srv->repos, &k->rq, &lq, log_row, &a);
    if (!acc_read_ok(k, &a, &err, NULL))
        return err;
    static const size_t views[] = { offsetof(cn_scribe_log_row_t, branch_name),
                                    offsetof(cn_scribe_log_row_t, path),
                                    offsetof(cn_scribe_log_row_t, from_path),
                                    offsetof(cn_scribe_log_row_t, author),
                                    offsetof(cn_scribe_log_row_t, message) };
    for (size_t v = 0; v < sizeof views / sizeof views[0]; v++)
        acc_views(&a, views[v]);
    cn_scribe_log_row_t *rows = a.rows;
    for (uint32_t i = 0; i < a.n; i++)
        rows[i].ceiling = ceiling;
    cn_buf_reset(&k->sc->out);
    return acc_reply(k, &a,
                     cn_scribe_enc_log_resp(&k->sc->out, k->sc->codec, q.all_branches, rows, a.n));
}

/* ---- change notes ------------------------------------------------------------------------ */
static void note_view(const cn_repos_note_t *n, cn_scribe_note_t *v)
{
    v->change = n->change;
    v->revision = n->revision;
    v->author = cn_scribe_cstr(n->author);
    v->edited_ms = (uint64_t)n->edited_ms;
    v->text = (cn_scribe_str_t){ (const uint8_t *)n->text, (uint32_t)n->text_len };
}

static cn_err_t op_describe(cn__scribe_call_t *k)
{
    cn_scribe_describe_req_t q;
    if (cn_scribe_dec_describe_req(k->payload, k->len, k->sc->codec, &q) < 0)
        return cn__scribe_malformed(k);
    cn_repos_note_t n;
    cn_err_t err =
        cn_repos_describe(k->sc->srv->repos, &k->rq, q.repo.b, q.change, q.expected_revision,
                          q.author.p, q.author.len, q.text.p, q.text.len, &n);
    if (err < 0) {
        cn_repos_note_free(&n);
        return cn__scribe_fail(k, err);
    }
    cn_scribe_note_t v;
    note_view(&n, &v);
    cn_buf_reset(&k->sc->out);
    err = cn_scribe_enc_note_resp(&k->sc->out, k->sc->codec, &v);
    cn_repos_note_free(&n);
    return err < 0 ? err : cn__scribe_reply(k, 0);
}

static cn_err_t op_notes(cn__scribe_call_t *k)
{
    cn_scribe_notes_req_t q;
    if (cn_scribe_dec_notes_req(k->payload, k->len, k->sc->codec, &q) < 0)
        return cn__scribe_malformed(k);
    uint64_t *changes = malloc(q.count * sizeof *changes);
    bool *present = malloc(q.count * sizeof *present);
    cn_repos_note_t *notes = calloc(q.count, sizeof *notes);
    cn_scribe_note_t *views = calloc(q.count, sizeof *views);
    const cn_scribe_note_t **ptrs = calloc(q.count, sizeof *ptrs);
    cn_err_t err = changes && present && notes && views && ptrs ? CN_OK : -ENOMEM;
    if (err >= 0) {
        for (uint32_t i = 0; i < q.count; i++)
            changes[i] = cn_scribe_notes_change(&q, i);
        err = cn_repos_notes(k->sc->srv->repos, &k->rq, q.repo.b, changes, q.count, present, notes);
        if (err < 0) {
            err = cn__scribe_fail(k, err);
        } else {
            for (uint32_t i = 0; i < q.count; i++)
                if (present[i]) {
                    note_view(&notes[i], &views[i]);
                    ptrs[i] = &views[i];
                }
            cn_buf_reset(&k->sc->out);
            err = cn_scribe_enc_notes_resp(&k->sc->out, k->sc->codec, ptrs, q.count);
            if (err >= 0)
                err = cn__scribe_reply(k, 0);
            for (uint32_t i = 0; i < q.count; i++)
                cn_repos_note_free(&notes[i]);
        }
    }
    free(changes);
    free(present);
    free(notes);
    free(views);
    free(ptrs);
    return err;
}

typedef struct {
    cn_scribe_note_t *v;
    char **texts;
    char (*authors)[257];
    uint32_t n;
} hist_acc_t;

static cn_err_t hist_row(void *ctx, const cn_repos_note_t *n)
{
    hist_acc_t *a = ctx;
    char *t = malloc(n->text_len + 1);
    if (!t)
        return -ENOMEM;
    memcpy(t, n->text, n->text_len + 1);
    a->texts[a->n] = t;
    memcpy(a->authors[a->n], n->author, sizeof a->authors[a->n]);
    a->v[a->n] = (cn_scribe_note_t){ n->change,
                                     n->revision,
                                     cn_scribe_cstr(a->authors[a->n]),
                                     (uint64_t)n->edited_ms,
                                     { (const uint8_t *)t, (uint32_t)n->text_len } };
    a->n++;
    return 0;
}

static cn_err_t op_note_history(cn__scribe_call_t *k)
{
    cn_scribe_history_req_t q;
    if (cn_scribe_dec_history_req(k->payload, k->len, k->sc->codec, &q) < 0)
        return cn__scribe_malformed(k);
    uint32_t limit = q.limit == 0                            ? 1
                     : q.limit > CN_REPOS_NOTE_REVISIONS_MAX ? CN_REPOS_NOTE_REVISIONS_MAX
                                                             : q.limit;
    /* Keep the page inside the frame: 64 KiB texts at most 200 per page. */
    if (limit > 200)
        limit = 200;
    hist_acc_t a = { calloc(limit, sizeof(cn_scribe_note_t)), calloc(limit, sizeof(char *)),
                     calloc(limit, 257), 0 };
    cn_err_t err = a.v && a.texts && a.authors ? CN_OK : -ENOMEM;
    bool more = false;
    if (err >= 0) {
        err = cn_repos_note_history(k->sc->srv->repos, &k->rq, q.repo.b, q.change, q.after_revision,
                                    limit, hist_row, &a, &more);
        if (err < 0) {
            err = cn__scribe_fail(k, err);
        } else {
            cn_buf_reset(&k->sc->out);
            err = cn_scribe_enc_history_resp(&k->sc->out, k->sc->codec, a.v, a.n, more);
            if (err >= 0)
                err = cn__scribe_reply(k, 0);
        }
    }
    for (uint32_t i = 0; i < a.n; i++)
        free(a.texts[i]);
    free(a.v);
    free(a.texts);
    free(a.authors);
    return err;
}

/* ---- the table ----------------------------------------------------------------------------- */
cn_err_t cn__scribe_op(cn__scribe_call_t *k)
{
    /* Protocol 4 with auth: the role table (15.6), once, before any handler. */
    /* A secured listing's cursor lives only until another request. */
    if (k->hdr.opcode != CN_SCRIBE_OP_REPO_LIST)
        k->sc->list_live = false;
    bool refused = false;
    cn_err_t aerr = cn__scribe_authorize(k, &refused);
    if (refused)
        return aerr;
    switch (k->hdr.opcode) {
    case CN_SCRIBE_OP_DISCOVER: return op_discover(k);
    case CN_SCRIBE_OP_REPO_CREATE: return op_repo_create(k);
    case CN_SCRIBE_OP_REPO_INFO: return op_repo_info(k);
    case CN_SCRIBE_OP_REPO_LIST: return op_repo_list(k);
    case CN_SCRIBE_OP_REPO_USAGE: return op_repo_usage(k);
    case CN_SCRIBE_OP_INSTANCE_STATUS: return op_instance_status(k);
    case CN_SCRIBE_OP_AUTHORIZE_UPLOAD:
    case CN_SCRIBE_OP_AUTHORIZE_REPO_CREATE: return cn__scribe_op_gw(k);
    case CN_SCRIBE_OP_PUT_OBJECTS: return op_put_objects(k);
    case CN_SCRIBE_OP_GET_OBJECTS: return op_get_objects(k);
    case CN_SCRIBE_OP_GET_CHUNKS:
    case CN_SCRIBE_OP_REPOSITORY_MOUNTS: return cn__scribe_op_public(k);
    case CN_SCRIBE_OP_PRESENCE: return op_presence(k, false);
    case CN_SCRIBE_OP_PIN_OBJECTS: return op_presence(k, true);
    case CN_SCRIBE_OP_SUBMIT: return op_submit(k);
    case CN_SCRIBE_OP_OPERATION_OUTCOME: return op_outcome(k);
    case CN_SCRIBE_OP_TREE_PAGE: return op_tree_page(k);
    case CN_SCRIBE_OP_TREE_PROOF: return cn__scribe_op_proof(k);
    case CN_SCRIBE_OP_CHANGED_PATHS: return op_changed_paths(k);
    case CN_SCRIBE_OP_LOG: return op_log(k);
    case CN_SCRIBE_OP_DESCRIBE_CHANGE: return op_describe(k);
    case CN_SCRIBE_OP_CHANGE_NOTES: return op_notes(k);
    case CN_SCRIBE_OP_CHANGE_NOTE_HISTORY: return op_note_history(k);
    case CN_SCRIBE_OP_BRANCH_LIST:
    case CN_SCRIBE_OP_BRANCH_MUTATE:
    case CN_SCRIBE_OP_BRANCH_INFO:
    case CN_SCRIBE_OP_BRANCH_OUTCOME: return cn__scribe_op_branch(k);
    case CN_SCRIBE_OP_MERGE_SUBMIT:
    case CN_SCRIBE_OP_MERGE_READ: return cn__scribe_op_merge(k);
    case CN_SCRIBE_OP_CHERRY_PICK_INFO:
    case CN_SCRIBE_OP_CHERRY_PICK_SUBMIT: return cn__scribe_op_cherry(k);
    case CN_SCRIBE_OP_LOCK_ACQUIRE:
    case CN_SCRIBE_OP_LOCK_RELEASE:
    case CN_SCRIBE_OP_LOCK_LIST:
    case CN_SCRIBE_OP_LOCK_POLICY: return cn__scribe_op_lock(k);
    case CN_SCRIBE_OP_WORKSPACE_REGISTER:
    case CN_SCRIBE_OP_WORKSPACE_LIST:
    case CN_SCRIBE_OP_WORKSPACE_REMOVE:
    case CN_SCRIBE_OP_WORKSPACE_REMOVE_OUTCOME: return cn__scribe_op_workspace(k);
    default:
        return cn__scribe_fail_code(k, CN_SCRIBE_E_UNSUPPORTED_OPERATION,
                                    "%s is not offered by this server yet",
                                    cn_scribe_op_name(k->hdr.opcode));
    }
}
