/* One handler per Jay opcode: take the decoded request, call ONE objects
 * service function, encode the answer in the spec's layout.
 *
 * Bodies: PutObject and UploadPart stream the body into a service put session
 * in 64 KiB reads; a refused upload is answered first and its body then
 * drained by server.c (or the connection closed past the drain limit), so an
 * EntityTooLarge is decided before any body byte is stored.  GetObject and
 * GetObjectRange send header + metadata with the body: up to 16 KiB in one
 * write, more ahead of its sendfile(2) (cn_conn_send_head_file); a body that
 * cannot be opened before anything was sent is answered as an error. */
#include "server_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Metadata block budget of a response: leave room for the fixed fields. */
#define CN_JAY_RESP_BUDGET (CN_JAY_MAX_META - 4096)

static cn_jay_str_t js(const char *s)
{
    cn_jay_str_t out = { NULL, 0 };
    if (cn_jay_str_make(s, &out) < 0)
        out.len = 0;
    return out;
}

/* NUL-terminated copies of the request's strings; a string that holds a NUL
 * byte is not a valid name or key anywhere, so it is refused here. */
static const char *cs(cn__jay_call_t *k, cn_jay_str_t s, bool *bad)
{
    if (s.len && memchr(s.p, 0, s.len))
        *bad = true;
    const char *p = cn__jay_cstr(k, s);
    if (!p)
        *bad = true;
    return p ? p : "";
}

static cn_err_t jay_bad_strings(cn__jay_call_t *k)
{
    return cn__jay_fail_code(k, CN_JAY_CODE_INVALID_ARGUMENT,
                             "a string holds a NUL byte or is unusable");
}

/* ---- buckets ---------------------------------------------------------------------- */
static cn_err_t op_bucket(cn__jay_call_t *k)
{
    cn__jay_srv_t *s = k->jc->srv;
    bool bad = false;
    const char *b = cs(k, k->req.bucket, &bad);
    if (bad)
        return cn__jay_fail_code(k, CN_JAY_CODE_INVALID_BUCKET_NAME, "invalid bucket name");
    cn_err_t err;
    switch (k->hdr.code) {
    case CN_JAY_OP_CREATE_BUCKET:
        err = cn_objects_bucket_create(s->objs, &k->rq, b, NULL, NULL);
        return err < 0 ? cn__jay_fail(k, err) : cn__jay_reply(k, NULL, 0);
    case CN_JAY_OP_DELETE_BUCKET:
        err = cn_objects_bucket_delete(s->objs, &k->rq, b);
        return err < 0 ? cn__jay_fail(k, err) : cn__jay_reply(k, NULL, 0);
    default: {
        cn_bucket_info_t bi;
        err = cn_objects_bucket_head(s->objs, &k->rq, b, &bi);
        if (err < 0)
            return cn__jay_fail(k, err);
        char id[24], created[CN_RFC3339_LEN];
        snprintf(id, sizeof id, "%" PRId64, bi.bucket_id);
        cn__jay_time(bi.created_ms, created);
        cn_jay_resp_t r;
        memset(&r, 0, sizeof r);
        r.bucket_id = js(id);
        r.name = js(bi.name);
        r.created_at = js(created);
        r.visibility = js(cn_authz_visibility_name(bi.visibility));
        return cn__jay_reply(k, &r, 0);
    }
    }
}

typedef struct {
    cn_jay_bucket_entry_t *v;
    char (*times)[CN_RFC3339_LEN];
    char (*names)[CN_BUCKET_NAME_MAX + 1];
    size_t n, cap, bytes;
    bool capped;
} cn_jay_blist_t;

static cn_err_t jay_bucket_cb(void *arg, const cn_bucket_info_t *b)
{
    cn_jay_blist_t *l = arg;
    size_t sz = 4 + strlen(b->name) + 24;
    if (l->n == CN_JAY_MAX_COUNT || l->bytes + sz > CN_JAY_RESP_BUDGET) {
        l->capped = true;
        return 1;
    }
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 64;
        void *a = realloc(l->v, nc * sizeof *l->v);
        if (a)
            l->v = a;
        void *t = a ? realloc(l->times, nc * sizeof *l->times) : NULL;
        if (t)
            l->times = t;
        void *nm = t ? realloc(l->names, nc * sizeof *l->names) : NULL;
        if (!nm)
            return -ENOMEM;
        l->names = nm;
        l->cap = nc;
    }
    snprintf(l->names[l->n], sizeof l->names[0], "%s", b->name);
    cn__jay_time(b->created_ms, l->times[l->n]);
    l->n++;
    l->bytes += sz;
    return 0;
}

static cn_err_t op_list_buckets(cn__jay_call_t *k)
{
    cn_jay_blist_t l;
    memset(&l, 0, sizeof l);
    cn_err_t err = cn_objects_bucket_list(k->jc->srv->objs, &k->rq, jay_bucket_cb, &l);
    if (err < 0) {
        err = cn__jay_fail(k, err);
    } else {
        if (l.capped)
            cn_warn("jay", "ListBuckets answer capped at %zu buckets (the frame's metadata limit)",
                    l.n);
        for (size_t i = 0; i < l.n; i++) {
            l.v[i].name = js(l.names[i]);
            l.v[i].created_at = js(l.times[i]);
        }
        cn_jay_resp_t r;
        memset(&r, 0, sizeof r);
        static cn_jay_bucket_entry_t none;
        r.buckets = l.n ? l.v : &none;
        r.n_entries = l.n;
        err = cn__jay_reply(k, &r, 0);
    }
    free(l.v);
    free(l.times);
    free(l.names);
    return err;
}

/* ---- object reads ---------------------------------------------------------------- */
/* The response header and metadata (jc->out) go out with the first body
 * bytes: a small object in one write, a large one ahead of its sendfile.
 * Every write goes through cn_conn_reply; when the client does not take a
 * segment (or a decoded piece) at once, its rest goes to the connection's
 * loop and the send stops there (CN_CONN_MORE): the worker is free, and the
 * body goes on from where it stopped on a worker once the client took that
 * rest (cn__jay_resume).  A stalled reader holds no worker. */
typedef struct {
    cn_conn_t *c;
    cn_buf_t *head; /* NULL once sent */
    int64_t deadline;
    uint64_t sent, len; /* body bytes handed to cn_conn_reply, of len */
} cn_jay_send_t;

/* Writes p (n bytes) then len bytes of fd from off (fd < 0: none), after the
 * response head if it has not gone yet; CN_CONN_MORE when the loop holds a
 * rest and the body is not done. */
static cn_err_t jay_send(cn_jay_send_t *s, const void *p, size_t n, int fd, uint64_t off,
                         uint64_t len)
{
    struct iovec iov[2];
    int cnt = 0;
    if (s->head) {
        iov[cnt++] = (struct iovec){ s->head->data, s->head->len };
        s->head = NULL;
    }
    if (n)
        iov[cnt++] = (struct iovec){ (void *)p, n };
    cn_err_t err = cn_conn_reply(s->c, iov, cnt, fd, off, len, s->deadline);
    s->sent += n + (fd >= 0 ? len : 0);
    if (err || s->sent >= s->len || cn_conn_on_loop(s->c))
        return err;
    err = cn_conn_reply_settle(s->c, CN_CONN_PART_WAIT_MS);
    return !err && cn_conn_reply_pending(s->c) ? CN_CONN_MORE : err;
}

static cn_err_t jay_send_fd(void *ctx, int fd, uint64_t off, uint64_t len)
{
    return jay_send(ctx, NULL, 0, fd, off, len);
}

static cn_err_t jay_send_buf(void *ctx, const void *p, size_t n)
{
    return jay_send(ctx, p, n, -1, 0, 0);
}

/* The body of rd from sc->sent on: 0 when it is all out, CN_CONN_MORE with
 * rd kept in jc->more for the next part, CN_E_CLOSED when it broke after
 * bytes went out (logged), another error when nothing did. */
static cn_err_t jay_body(cn__jay_conn_t *jc, cn_objects_reader_t *rd, cn_jay_send_t *sc,
                         const char *what)
{
    bool fresh = sc->head != NULL;
    cn_err_t err = cn_objects_reader_send_at(rd, sc->sent, jay_send_fd, jay_send_buf, sc);
    if (err == CN_CONN_MORE) {
        jc->more.rd = rd;
        jc->more.sent = sc->sent;
        jc->more.deadline = sc->deadline;
        return err;
    }
    cn_objects_reader_free(rd);
    if (err < 0 && !(fresh && sc->head)) {
        cn_warn("jay", "conn %llu: body of %s stopped: %s", (unsigned long long)cn_conn_id(sc->c),
                what, cn_strerror(err));
        err = CN_E_CLOSED; /* part of a promised body went out: the stream is gone */
    }
    return err;
}

cn_err_t cn__jay_resume(void *cstate, cn_conn_t *c)
{
    cn__jay_conn_t *jc = cstate;
    cn_objects_reader_t *rd = jc->more.rd;
    if (!rd)
        return CN_E_INVALID;
    jc->more.rd = NULL;
    cn_jay_send_t sc = { c, NULL, jc->more.deadline, jc->more.sent, cn_objects_reader_len(rd) };
    return jay_body(jc, rd, &sc, "an object");
}

/* Fills r with the object-info layout from info; kv must hold info->nmeta. */
static void jay_info_resp(const cn_object_info_t *info, cn_jay_kv_t *kv, char lm[CN_RFC3339_LEN],
                          cn_jay_resp_t *r)
{
    memset(r, 0, sizeof *r);
    r->content_type = js(info->content_type);
    r->size = (int64_t)info->size;
    r->etag = js(info->etag);
    r->checksum = js(info->sha256);
    cn__jay_time(info->last_modified_ms, lm);
    r->last_modified = js(lm);
    for (size_t i = 0; i < info->nmeta; i++) {
        kv[i].key = js(info->meta[i].key);
        kv[i].value = js(info->meta[i].value);
    }
    static cn_jay_kv_t none;
    r->meta_kv = info->nmeta ? kv : &none;
    r->n_meta_kv = info->nmeta;
}

/* A GetObject / HeadObject / GetObjectRange looked up, not answered yet. */
typedef struct {
    const char *key;
    cn_object_info_t info;
    cn_objects_reader_t *rd; /* the GETs, on success */
    cn_err_t err;            /* the service's answer */
} cn_jay_got_t;

static void get_free(cn_jay_got_t *g);

/* The loop's lookup on a database that is not local: the object-head
 * cache only, never the database (whose answer may wait on the network,
 * and the loop serves every connection on it); a miss, or any failure,
 * declines (*declined) to a worker, which looks again and answers.  head:
 * the info alone (no blob opened). */
static cn_err_t get_cached(cn__jay_call_t *k, cn_jay_got_t *g, const char *b,
                           const cn_objects_range_t *range, bool head, bool *declined)
{
    k->rq.no_bytes = head;
    g->err = cn_objects_get_cached(k->jc->srv->objs, &k->rq, b, g->key, head ? NULL : range,
                                   &g->info, &g->rd);
    k->rq.no_bytes = false;
    if (g->err < 0) {
        g->rd = NULL;
        get_free(g);
        *declined = true;
    } else if (head) {
        cn_objects_reader_free(g->rd); /* a window only: the reply is the info */
        g->rd = NULL;
    }
    return 0;
}

/* Asks the service.  A request refused before that (bad strings, a negative
 * offset) is answered here and *answered set — unless probe (the loop's fast
 * path, which must not answer what it has not consumed): then *declined is
 * set and nothing is written. */
static cn_err_t get_lookup(cn__jay_call_t *k, cn_jay_got_t *g, bool probe, bool *answered,
                           bool *declined)
{
    cn__jay_srv_t *s = k->jc->srv;
    *answered = *declined = false;
    memset(g, 0, sizeof *g);
    bool bad = false;
    const char *b = cs(k, k->req.bucket, &bad);
    g->key = cs(k, k->req.key, &bad);
    bool neg = k->hdr.code == CN_JAY_OP_GET_OBJECT_RANGE && k->req.offset < 0;
    if ((bad || neg) && probe) {
        *declined = true;
        return 0;
    }
    if (bad) {
        *answered = true;
        return jay_bad_strings(k);
    }
    bool head = k->hdr.code == CN_JAY_OP_HEAD_OBJECT;
    /* The loop reads local metadata itself; never a database's. */
    bool cached_only = probe && !cn_objects_meta_local(s->objs);
    if (head && !cached_only) {
        g->err = cn_objects_head(s->objs, &k->rq, b, g->key, &g->info);
        return 0;
    }
    cn_objects_range_t range = { .kind = CN_RANGE_ALL };
    if (k->hdr.code == CN_JAY_OP_GET_OBJECT_RANGE) {
        if (neg) {
            *answered = true;
            return cn__jay_fail_code(k, CN_JAY_CODE_INVALID_ARGUMENT,
                                     "offset must not be negative");
        }
        range.kind = CN_RANGE_FROM;
        range.off = (uint64_t)k->req.offset;
        /* length <= 0: to the end; past the end: clamped by the service. */
        range.len = k->req.length > 0 ? (uint64_t)k->req.length : 0;
    }
    if (cached_only)
        return get_cached(k, g, b, &range, head, declined);
    g->err = cn_objects_get(s->objs, &k->rq, b, g->key, &range, &g->info, &g->rd);
    if (g->err < 0)
        g->rd = NULL;
    return 0;
}

static void get_free(cn_jay_got_t *g)
{
    cn_objects_reader_free(g->rd);
    g->rd = NULL;
    cn_objects_info_free(&g->info);
}

/* Answers a looked-up request and frees g. */
static cn_err_t get_answer(cn__jay_call_t *k, cn_jay_got_t *g)
{
    cn_err_t err = g->err;
    if (err < 0) {
        get_free(g);
        return cn__jay_fail(k, err);
    }
    cn_object_info_t *info = &g->info;
    cn_jay_kv_t *kv = calloc(info->nmeta ? info->nmeta : 1, sizeof *kv);
    char lm[CN_RFC3339_LEN];
    cn_jay_resp_t r;
    if (!kv) {
        err = cn__jay_fail(k, -ENOMEM);
    } else if (!g->rd) {
        jay_info_resp(info, kv, lm, &r);
        err = cn__jay_reply(k, &r, 0);
    } else {
        jay_info_resp(info, kv, lm, &r);
        uint64_t len = cn_objects_reader_len(g->rd);
        err = len ? cn__jay_reply_encode(k, &r, (int64_t)len) : cn__jay_reply(k, &r, 0);
        if (err >= 0 && len) {
            uint64_t total = k->jc->out.len + len;
            cn_jay_send_t sc = { k->c, &k->jc->out, cn_conn_deadline_for(k->c, total), 0, len };
            cn_objects_reader_t *rd = g->rd;
            g->rd = NULL; /* jay_body's */
            err = jay_body(k->jc, rd, &sc, g->key);
            if (err < 0 && err != CN_E_CLOSED && sc.head)
                err = cn__jay_fail(k, err); /* nothing promised yet: an answer, not a cut */
        } else if (err < 0 && len) {
            err = cn__jay_fail(k, err); /* over a layout cap: nothing sent */
        }
    }
    free(kv);
    get_free(g);
    return err;
}

static cn_err_t op_get(cn__jay_call_t *k)
{
    cn_jay_got_t g;
    bool answered, declined;
    cn_err_t err = get_lookup(k, &g, false, &answered, &declined);
    if (answered)
        return err;
    return get_answer(k, &g);
}

int cn__jay_get_fast(cn__jay_call_t *k, uint64_t max_body)
{
    cn_jay_got_t g;
    bool answered, declined;
    get_lookup(k, &g, true, &answered, &declined);
    if (declined)
        return 0;
    if (g.rd && cn_objects_reader_len(g.rd) > max_body) {
        get_free(&g); /* a worker sends it, by sendfile: looked up again there */
        return 0;
    }
    /* From here the request is the loop's: consume its metadata (buffered,
     * so no wait), then what cn_jay_serve does before an operation. */
    cn_err_t err = cn_conn_read_full(k->c, k->jc->meta_small, k->hdr.meta_len, 0);
    if (err < 0) {
        get_free(&g);
        return err;
    }
    if (cn_identity_rate_take(k->jc->srv->id, k->jc->principal.token_id) == CN_E_RATE_LIMITED) {
        get_free(&g);
        err = cn__jay_fail_code(k, CN_JAY_CODE_RATE_LIMIT_EXCEEDED,
                                "rate limit exceeded for this token");
    } else {
        err = get_answer(k, &g);
    }
    if (err >= 0 && k->close)
        err = CN_E_CLOSED;
    return err < 0 ? err : 1;
}

static cn_err_t op_delete(cn__jay_call_t *k)
{
    bool bad = false;
    const char *b = cs(k, k->req.bucket, &bad);
    const char *key = cs(k, k->req.key, &bad);
    if (bad)
        return jay_bad_strings(k);
    cn_err_t err = cn_objects_delete(k->jc->srv->objs, &k->rq, b, key);
    return err < 0 ? cn__jay_fail(k, err) : cn__jay_reply(k, NULL, 0);
}

/* ---- listing ------------------------------------------------------------------------ */
static size_t jay_list_size(const cn_objects_list_t *l)
{
    size_t n = 2 + 2 + 1 + 2 + (l->next_start_after ? strlen(l->next_start_after) : 0);
    for (size_t i = 0; i < l->nentries; i++)
        n += 2 + strlen(l->entries[i].key) + 8 + 2 + strlen(l->entries[i].etag) + 2 +
             strlen(l->entries[i].sha256) + 2 + 24 + 2 + strlen(l->entries[i].content_type);
    for (size_t i = 0; i < l->nprefixes; i++)
        n += 2 + strlen(l->prefixes[i]);
    return n;
}

static cn_err_t op_list(cn__jay_call_t *k)
{
    bool bad = false;
    const char *b = cs(k, k->req.bucket, &bad);
    const char *prefix = cs(k, k->req.prefix, &bad);
    const char *delim = cs(k, k->req.delimiter, &bad);
    const char *after = cs(k, k->req.start_after, &bad);
    if (bad)
        return jay_bad_strings(k);
    if (k->req.max_keys < 0)
        return cn__jay_fail_code(k, CN_JAY_CODE_INVALID_ARGUMENT, "max_keys must not be negative");
    cn_objects_list_args_t a = { .prefix = prefix,
                                 .delimiter = delim,
                                 .start_after = after[0] ? after : NULL,
                                 .max_keys = k->req.max_keys };
    cn_objects_list_t l;
    cn_err_t err;
    /* A page of long keys can outgrow the 1 MiB metadata frame: ask for a
     * smaller page then (the client follows next_start_after as usual). */
    for (;;) {
        err = cn_objects_list(k->jc->srv->objs, &k->rq, b, &a, &l);
        if (err < 0)
            return cn__jay_fail(k, err);
        if (jay_list_size(&l) <= CN_JAY_RESP_BUDGET)
            break;
        size_t got = l.nentries + l.nprefixes;
        cn_objects_list_free(&l);
        a.max_keys = (int32_t)(got / 2 ? got / 2 : 1);
    }
    cn_jay_obj_entry_t *ev = calloc(l.nentries ? l.nentries : 1, sizeof *ev);
    char(*lm)[CN_RFC3339_LEN] = calloc(l.nentries ? l.nentries : 1, sizeof *lm);
    cn_jay_str_t *pv = calloc(l.nprefixes ? l.nprefixes : 1, sizeof *pv);
    if (!ev || !lm || !pv) {
        err = cn__jay_fail(k, -ENOMEM);
        goto out;
    }
    for (size_t i = 0; i < l.nentries; i++) {
        cn_objects_entry_t *e = &l.entries[i];
        cn__jay_time(e->last_modified_ms, lm[i]);
        ev[i].key = js(e->key);
        ev[i].size = (int64_t)e->size;
        ev[i].etag = js(e->etag);
        ev[i].checksum = js(e->sha256);
        ev[i].last_modified = js(lm[i]);
        ev[i].content_type = js(e->content_type);
    }
    for (size_t i = 0; i < l.nprefixes; i++)
        pv[i] = js(l.prefixes[i]);
    cn_jay_resp_t r;
    memset(&r, 0, sizeof r);
    r.objs = ev;
    r.n_entries = l.nentries;
    r.prefixes = pv;
    r.n_prefixes = l.nprefixes;
    r.is_truncated = l.is_truncated;
    r.next_start_after = js(l.next_start_after ? l.next_start_after : "");
    err = cn__jay_reply(k, &r, 0);
out:
    free(ev);
    free(lm);
    free(pv);
    cn_objects_list_free(&l);
    return err;
}

/* ---- uploads ------------------------------------------------------------------------- */
/* Streams the request body into session p and commits it. */
static cn_err_t jay_stream_body(cn__jay_call_t *k, cn_objects_put_t *p,
                                cn_objects_put_result_t *res, cn_err_t *svc_err)
{
    cn__jay_conn_t *jc = k->jc;
    *svc_err = 0;
    if (!jc->io && !(jc->io = malloc(CN_JAY_IO_BUF))) {
        cn_objects_put_abort(p);
        *svc_err = -ENOMEM;
        return 0;
    }
    while (k->body_left) {
        size_t got = 0;
        cn_err_t err = cn__jay_body_read(k, jc->io, CN_JAY_IO_BUF, &got);
        if (err < 0) {
            /* The peer went away mid-body: nothing becomes visible. */
            cn_objects_put_abort(p);
            return err;
        }
        err = cn_objects_put_write(p, jc->io, got);
        if (err < 0) {
            /* Refused mid-stream (limit, disk): answer, then server.c drains
             * the rest or closes. */
            cn_objects_put_abort(p);
            *svc_err = err;
            return 0;
        }
    }
    *svc_err = cn_objects_put_commit(p, res);
    return 0;
}

static cn_err_t op_put(cn__jay_call_t *k)
{
    cn__jay_srv_t *s = k->jc->srv;
    bool bad = false;
    const char *b = cs(k, k->req.bucket, &bad);
    const char *key = cs(k, k->req.key, &bad);
    const char *ct = "";
    const char *upload_id = NULL;
    if (k->hdr.code == CN_JAY_OP_PUT_OBJECT)
        ct = cs(k, k->req.content_type, &bad);
    else
        upload_id = cs(k, k->req.upload_id, &bad);
    if (bad)
        return jay_bad_strings(k);

    cn_objects_kv_t *kv = NULL;
    char *kvstore = NULL;
    cn_err_t err = 0;
    cn_objects_put_t *p = NULL;
    if (k->hdr.code == CN_JAY_OP_PUT_OBJECT) {
        /* The metadata map as NUL-terminated pairs (one block). */
        uint16_t n = k->req.metadata.count;
        kv = calloc(n ? n : 1, sizeof *kv);
        kvstore = malloc(k->req.metadata.len + 2u * n + 1);
        if (!kv || !kvstore) {
            err = cn__jay_fail(k, -ENOMEM);
            goto out;
        }
        cn_jay_iter_t it = cn_jay_iter(&k->req.metadata);
        cn_jay_kv_t e;
        char *w = kvstore;
        size_t i = 0;
        while (cn_jay_next_kv(&it, &e) && i < n) {
            if ((e.key.len && memchr(e.key.p, 0, e.key.len)) ||
                (e.value.len && memchr(e.value.p, 0, e.value.len))) {
                err = jay_bad_strings(k);
                goto out;
            }
            memcpy(w, e.key.p, e.key.len);
            w[e.key.len] = 0;
            kv[i].key = w;
            w += e.key.len + 1;
            memcpy(w, e.value.p, e.value.len);
            w[e.value.len] = 0;
            kv[i].value = w;
            w += e.value.len + 1;
            i++;
        }
        cn_objects_put_args_t a = {
            .content_type = ct[0] ? ct : NULL, .meta = kv, .nmeta = i, .skip_etag = k->req.skip_etag
        };
        err = cn_objects_put_begin(s->objs, &k->rq, b, key, &a, k->hdr.data_len, &p);
    } else {
        err = cn_objects_part_begin(s->objs, &k->rq, b, key, upload_id, k->req.part_number, NULL,
                                    k->hdr.data_len, &p);
    }
    if (err < 0) {
        /* Refused before any body byte was stored: answer, then drain. */
        err = cn__jay_fail(k, err);
        goto out;
    }
    cn_objects_put_result_t res;
    cn_err_t svc = 0;
    err = jay_stream_body(k, p, &res, &svc);
    if (err < 0)
        goto out;
    if (svc < 0) {
        err = cn__jay_fail(k, svc);
        goto out;
    }
    cn_jay_resp_t r;
    memset(&r, 0, sizeof r);
    r.etag = js(res.etag);
    r.checksum = js(res.sha256);
    err = cn__jay_reply(k, &r, 0);
out:
    free(kv);
    free(kvstore);
    return err;
}

static cn_err_t op_copy(cn__jay_call_t *k)
{
    bool bad = false;
    const char *sb = cs(k, k->req.bucket, &bad);
    const char *sk = cs(k, k->req.key, &bad);
    const char *db = cs(k, k->req.dst_bucket, &bad);
    const char *dk = cs(k, k->req.dst_key, &bad);
    if (bad)
        return jay_bad_strings(k);
    cn_objects_put_result_t res;
    cn_err_t err = cn_objects_copy(k->jc->srv->objs, &k->rq, sb, sk, db, dk, NULL, &res);
    if (err < 0)
        return cn__jay_fail(k, err);
    char lm[CN_RFC3339_LEN];
    cn__jay_time(res.last_modified_ms, lm);
    cn_jay_resp_t r;
    memset(&r, 0, sizeof r);
    r.etag = js(res.etag);
    r.checksum = js(res.sha256);
    r.size = (int64_t)res.size;
    r.last_modified = js(lm);
    return cn__jay_reply(k, &r, 0);
}

static cn_err_t op_mpu_create(cn__jay_call_t *k)
{
    bool bad = false;
    const char *b = cs(k, k->req.bucket, &bad);
    const char *key = cs(k, k->req.key, &bad);
    const char *ct = cs(k, k->req.content_type, &bad);
    if (bad)
        return jay_bad_strings(k);
    cn_objects_put_args_t a = { .content_type = ct[0] ? ct : NULL };
    char id[CN_UPLOAD_ID_MAX + 1];
    cn_err_t err = cn_objects_mpu_create(k->jc->srv->objs, &k->rq, b, key, &a, id);
    if (err < 0)
        return cn__jay_fail(k, err);
    cn_jay_resp_t r;
    memset(&r, 0, sizeof r);
    r.upload_id = js(id);
    return cn__jay_reply(k, &r, 0);
}

static cn_err_t op_mpu_complete(cn__jay_call_t *k)
{
    bool bad = false;
    const char *b = cs(k, k->req.bucket, &bad);
    const char *key = cs(k, k->req.key, &bad);
    const char *id = cs(k, k->req.upload_id, &bad);
    if (bad)
        return jay_bad_strings(k);
    uint16_t n = k->req.part_numbers.count;
    int32_t *parts = calloc(n ? n : 1, sizeof *parts);
    if (!parts)
        return cn__jay_fail(k, -ENOMEM);
    cn_jay_iter_t it = cn_jay_iter(&k->req.part_numbers);
    size_t i = 0;
    while (i < n && cn_jay_next_i32(&it, &parts[i]))
        i++;
    cn_objects_put_result_t res;
    cn_err_t err =
        cn_objects_mpu_complete(k->jc->srv->objs, &k->rq, b, key, id, parts, NULL, i, NULL, &res);
    free(parts);
    if (err < 0)
        return cn__jay_fail(k, err);
    cn_jay_resp_t r;
    memset(&r, 0, sizeof r);
    r.etag = js(res.etag);
    r.checksum = js(res.sha256);
    r.size = (int64_t)res.size;
    return cn__jay_reply(k, &r, 0);
}

static cn_err_t op_mpu_abort(cn__jay_call_t *k)
{
    bool bad = false;
    const char *b = cs(k, k->req.bucket, &bad);
    const char *key = cs(k, k->req.key, &bad);
    const char *id = cs(k, k->req.upload_id, &bad);
    if (bad)
        return jay_bad_strings(k);
    cn_err_t err = cn_objects_mpu_abort(k->jc->srv->objs, &k->rq, b, key, id);
    return err < 0 ? cn__jay_fail(k, err) : cn__jay_reply(k, NULL, 0);
}

typedef struct {
    cn_objects_part_t *v;
    size_t n, cap;
} cn_jay_plist_t;

static cn_err_t jay_part_cb(void *arg, const cn_objects_part_t *p)
{
    cn_jay_plist_t *l = arg;
    /* What fits one frame's metadata (each entry ~112 bytes). */
    if (l->n == CN_JAY_MAX_COUNT || (l->n + 1) * 112 > CN_JAY_RESP_BUDGET)
        return 1;
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 64;
        void *a = realloc(l->v, nc * sizeof *l->v);
        if (!a)
            return -ENOMEM;
        l->v = a;
        l->cap = nc;
    }
    l->v[l->n++] = *p;
    return 0;
}

static cn_err_t op_list_parts(cn__jay_call_t *k)
{
    bool bad = false;
    const char *b = cs(k, k->req.bucket, &bad);
    const char *key = cs(k, k->req.key, &bad);
    const char *id = cs(k, k->req.upload_id, &bad);
    if (bad)
        return jay_bad_strings(k);
    cn_jay_plist_t l = { 0 };
    cn_err_t err = cn_objects_mpu_list_parts(k->jc->srv->objs, &k->rq, b, key, id, 0, 0,
                                             jay_part_cb, &l, NULL);
    if (err < 0) {
        free(l.v);
        return cn__jay_fail(k, err);
    }
    cn_jay_part_entry_t *ev = calloc(l.n ? l.n : 1, sizeof *ev);
    if (!ev) {
        free(l.v);
        return cn__jay_fail(k, -ENOMEM);
    }
    for (size_t i = 0; i < l.n; i++) {
        ev[i].part_number = l.v[i].part_number;
        ev[i].size = (int64_t)l.v[i].size;
        ev[i].etag = js(l.v[i].etag);
        ev[i].checksum = js(l.v[i].sha256);
    }
    cn_jay_resp_t r;
    memset(&r, 0, sizeof r);
    r.parts = ev;
    r.n_entries = l.n;
    err = cn__jay_reply(k, &r, 0);
    free(ev);
    free(l.v);
    return err;
}

cn_err_t cn__jay_op(cn__jay_call_t *k)
{
    uint8_t op = k->hdr.code;
    bool takes_body = op == CN_JAY_OP_PUT_OBJECT || op == CN_JAY_OP_UPLOAD_PART;
    if (!takes_body && k->hdr.data_len > 0)
        return cn__jay_fail_code(k, CN_JAY_CODE_INVALID_ARGUMENT, "this operation takes no body");
    switch (op) {
    case CN_JAY_OP_CREATE_BUCKET:
    case CN_JAY_OP_DELETE_BUCKET:
    case CN_JAY_OP_HEAD_BUCKET: return op_bucket(k);
    case CN_JAY_OP_LIST_BUCKETS: return op_list_buckets(k);
    case CN_JAY_OP_PUT_OBJECT:
    case CN_JAY_OP_UPLOAD_PART: return op_put(k);
    case CN_JAY_OP_GET_OBJECT:
    case CN_JAY_OP_HEAD_OBJECT:
    case CN_JAY_OP_GET_OBJECT_RANGE: return op_get(k);
    case CN_JAY_OP_DELETE_OBJECT: return op_delete(k);
    case CN_JAY_OP_LIST_OBJECTS: return op_list(k);
    case CN_JAY_OP_COPY_OBJECT: return op_copy(k);
    case CN_JAY_OP_CREATE_MULTIPART: return op_mpu_create(k);
    case CN_JAY_OP_COMPLETE_MULTIPART: return op_mpu_complete(k);
    case CN_JAY_OP_ABORT_MULTIPART:
    case CN_JAY_OP_LIST_PARTS:
        return op == CN_JAY_OP_ABORT_MULTIPART ? op_mpu_abort(k) : op_list_parts(k);
    case CN_JAY_OP_PING: return cn__jay_reply(k, NULL, 0);
    default: return cn__jay_fail_code(k, CN_JAY_CODE_UNKNOWN_OP, "unknown opcode");
    }
}
