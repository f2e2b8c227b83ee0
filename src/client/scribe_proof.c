/* The Scribe client's verified reads (include/cairn/scribe_client.h,
 * "verified reads"): tree pages proved through tree_proof (43) by the
 * verifier of cairn/tree_verify.h over the client's own connection, and
 * commit objects checked against their ids.
 *
 * It never hands out an entry of a page whose proof (page and lookahead)
 * did not complete, never falls back to tree_page, and never retries a
 * proof that failed verification: only a transport failure restarts the
 * page's proof, once, from its first fragment.
 *
 * Pipelined (docs/protocol/scribe.md 17.5): each reply's shape pass gives
 * the next request (the page's next fragment, or the next page's first
 * from the page's last path), which is sent before the reply's nodes are
 * hashed and its entries handed out, so the server produces the next
 * reply while this one is checked.  One request in flight, two replies
 * held (8 MiB each at most).  CAIRN_PROOF_PIPELINE=0 waits for each reply
 * before sending the next request (the unpipelined order, for
 * measurement).
 *
 * Split (17.5, "Key-range splits"): a whole-tree listing runs as up to
 * five key ranges at once, one per connection, each its own pipelined
 * listing from the bound before it up to its own, merged in order; a range
 * never hands out an entry past its bound nor asks for a page past it, and
 * no entry of a range after the first reaches the caller before every
 * range verified.  The bounds come from an unverified probe and are hints
 * only: the proofs make the ranges tile the listing whatever they are.
 * The first range to fail cancels the others (17.5, "Early cancel"): each
 * checks a shared flag before every reply it waits for, and the data
 * connections are shut down so that a range blocked on a reply returns;
 * the sync then ends within about one page's time. */
#include "cairn/scribe_client.h"
#include "cairn/scribe.h"
#include "cairn/tree_verify.h"
#include "cairn/repos_model.h"
#include "scribe_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cn__scribe_tree_page_fill(cn_scribe_tree_page_req_t *q, const uint8_t repo[16],
                               const uint8_t branch[16], uint64_t change, const char *prefix,
                               bool has_after, const char *after)
{
    memset(q, 0, sizeof *q);
    memcpy(q->repo.b, repo, 16);
    memcpy(q->branch.b, branch, 16);
    q->change = change;
    q->prefix = cn_scribe_cstr(prefix ? prefix : "");
    q->limit = CN_SCRIBE_MAX_PAGE;
    q->has_after = has_after;
    q->after = cn_scribe_cstr(has_after ? after : "");
}

/* ---- one page --------------------------------------------------------------------------- */
static bool transport_failure(cn_err_t e)
{
    return e == CN_E_CLOSED || e == CN_E_TIMEOUT || (e < 0 && e > -4096);
}

/* Byte order of two paths (the listing's order). */
static int path_cmp(const void *a, size_t an, const void *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : (an > bn) - (an < bn);
}

/* Hands page v's values to fn, those after bound (NULL: none) excepted;
 * *last gets the last path (for the cursor). */
static cn_err_t hand_out(const cn_tree_verify_t *v, uint32_t count, const char *bound,
                         cn_scribe_client_entry_fn fn, void *ctx, char *last)
{
    for (uint32_t i = 0; i < count; i++) {
        const cn_tree_value_t *x = cn_tree_verify_value(v, i);
        if (!x || x->entry.state != CN_REPOS_LIVE || x->path_len > CN_SCRIBE_MAX_PATH)
            return CN_E_PROTOCOL; /* a live range selects live entries only */
        if (bound && path_cmp(x->path, x->path_len, bound, strlen(bound)) > 0)
            return CN_OK; /* the next range's */
        memcpy(last, x->path, x->path_len);
        last[x->path_len] = 0;
        cn_scribe_client_entry_t ce = { last,          x->path_len,   x->entry.manifest,
                                        x->entry.size, x->entry.mode, x->entry.change };
        int rc = fn ? fn(ctx, &ce) : 0;
        if (rc)
            return rc;
    }
    return CN_OK;
}

/* ---- the pipeline ------------------------------------------------------------------------ */
/* A split listing's early cancel: raised by the first range that fails;
 * every range checks it before each reply it waits for, and the raiser
 * shuts down the data connections (conn: set before any range starts, the
 * control connection never among them: its session carries the others,
 * and it has at most one reply to wait for). */
typedef struct tstop {
    atomic_bool raised;
    int n;
    cn_scribe_client_t *conn[CN_SCRIBE_CLIENT_MAX_DATA];
} tstop_t;

/* Raises s; true when this call raised it (the others then see it). */
static bool tstop_raise(tstop_t *s)
{
    if (atomic_exchange(&s->raised, true))
        return false;
    for (int k = 0; k < s->n; k++)
        cn__scribe_client_interrupt(s->conn[k]);
    return true;
}

/* One listing in flight: the page being verified (cur, from the cursor
 * cur_after), the next page once cur's shape pass named its last path, the
 * two reply buffers (one being checked, one being received) and whether a
 * request is outstanding. */
typedef struct tpipe {
    cn_scribe_client_t *cl;
    cn_scribe_cerr_t *err;
    const uint8_t *repo, *branch;
    uint64_t change;
    const char *prefix;
    cn_digest_t content, revision;
    cn_tree_verify_t *cur, *next;
    char *cur_after, *next_after; /* NUL-terminated; "" with no cursor */
    bool cur_has, next_has, inflight;
    const char *bound; /* a key range's last path (NULL: to the end) */
    /* A range's hint: the entries its probe counted from each page's cursor
     * through the first at or past its bound (UINT64_MAX: none; 0: used up,
     * so a wrong hint costs full pages, never tiny ones). */
    uint64_t cur_left, next_left;
    tstop_t *stop;  /* a split listing's early cancel (NULL: unsplit) */
    bool cancelled; /* failed after another range raised stop */
    cn_buf_t req, reply[2];
    char *path; /* hand_out's scratch */
} tpipe_t;

/* Entries one page asks for: 4,096, or CAIRN_PROOF_PAGE (1..4,096) so that
 * a test can cross pages with a small tree. */
static uint32_t page_limit(void)
{
    const char *v = getenv("CAIRN_PROOF_PAGE");
    char *end;
    unsigned long n = v ? strtoul(v, &end, 10) : 0;
    return v && *v && !*end && n >= 1 && n <= CN_SCRIBE_MAX_PAGE ? (uint32_t)n : CN_SCRIBE_MAX_PAGE;
}

/* A page's limit: page_limit(), or fewer when a range's hint says fewer
 * are left (left entries, 0 or UINT64_MAX: no hint), so that a range's
 * last page does not list far past its bound. */
static uint32_t limit_for(uint64_t left)
{
    uint32_t full = page_limit();
    return left && left < full ? (uint32_t)left : full;
}

/* A verifier for the page after `after` (has_after false: the first),
 * with left entries hinted. */
static cn_err_t tpipe_page(tpipe_t *p, bool has_after, const char *after, uint64_t left,
                           cn_tree_verify_t **out)
{
    cn_scribe_tree_page_req_t q;
    cn__scribe_tree_page_fill(&q, p->repo, p->branch, p->change, p->prefix, has_after, after);
    q.limit = limit_for(left);
    cn_scribe_codec_t codec = (cn_scribe_codec_t)cn_scribe_client_codec(p->cl);
    cn_buf_t page = { 0 };
    cn_err_t e = cn_scribe_enc_tree_page_req(&page, codec, &q);
    cn_tree_verify_cfg_t cfg = { codec, page.data, page.len,   CN_REPOS_PROOF_LIVE, 0,
                                 NULL,  0,         p->content, p->revision };
    if (e >= 0)
        e = cn_tree_verify_new(&cfg, out);
    cn_buf_free(&page);
    return e;
}

/* Sends v's next request; a request is then outstanding. */
static cn_err_t tpipe_send(tpipe_t *p, cn_tree_verify_t *v)
{
    cn_buf_reset(&p->req);
    CN_TRY(cn_tree_verify_request(v, &p->req));
    CN_TRY(cn__scribe_client_tree_proof_send(p->cl, p->req.data, p->req.len, p->err));
    p->inflight = true;
    return CN_OK;
}

/* After cur's shape pass: the request that follows it (cur's next
 * fragment, or the next page's first when cur has more), sent now unless
 * `hold` (then *pending says what to send after the check). */
static cn_err_t tpipe_follow(tpipe_t *p, bool hold, cn_tree_verify_t **pending)
{
    *pending = NULL;
    cn_tree_verify_t *v = p->cur;
    if (cn__tree_verify_shaped(p->cur)) {
        bool more;
        const uint8_t *last;
        size_t len;
        CN_TRY(cn__tree_verify_cursor(p->cur, &more, &last, &len));
        if (!more || !len || len > CN_SCRIBE_MAX_PATH)
            return CN_OK; /* the end (an overlong path fails cur's hand_out) */
        if (p->bound && path_cmp(last, len, p->bound, strlen(p->bound)) >= 0)
            return CN_OK; /* the range's end: its bound is listed */
        memcpy(p->next_after, last, len);
        p->next_after[len] = 0;
        p->next_has = true;
        uint64_t used = limit_for(p->cur_left); /* cur has more: it listed its limit */
        p->next_left = p->cur_left == UINT64_MAX ? UINT64_MAX
                       : p->cur_left > used      ? p->cur_left - used
                                                 : 0;
        CN_TRY(tpipe_page(p, true, p->next_after, p->next_left, &p->next));
        v = p->next;
    }
    if (hold) {
        *pending = v;
        return CN_OK;
    }
    return tpipe_send(p, v);
}

/* One reply for cur, received into reply[r]: shape pass, the next request
 * out, check pass, and when cur is complete its entries handed out and the
 * next page made current.  *end: nothing follows. */
static cn_err_t tpipe_step(tpipe_t *p, int r, bool hold, cn_scribe_client_entry_fn fn, void *ctx,
                           uint32_t *fragments, bool *end)
{
    cn_buf_reset(&p->reply[r]);
    cn_err_t e = cn__scribe_client_tree_proof_recv(p->cl, &p->reply[r], p->err);
    p->inflight = false;
    CN_TRY(e);
    CN_TRY(cn__tree_verify_shape(p->cur, p->reply[r].data, p->reply[r].len));
    cn_tree_verify_t *pending;
    CN_TRY(tpipe_follow(p, hold, &pending));
    CN_TRY(cn__tree_verify_check(p->cur));
    if (fragments)
        (*fragments)++;
    *end = false;
    if (cn_tree_verify_done(p->cur)) {
        uint32_t count;
        bool more;
        CN_TRY(cn_tree_verify_result(p->cur, &count, &more));
        CN_TRY(hand_out(p->cur, count, p->bound, fn, ctx, p->path));
        cn_tree_verify_free(p->cur);
        p->cur = p->next;
        p->next = NULL;
        char *t = p->cur_after;
        p->cur_after = p->next_after;
        p->next_after = t;
        p->cur_has = p->next_has;
        p->next_has = false;
        p->cur_left = p->next_left;
        *end = !p->cur;
    }
    return pending ? tpipe_send(p, pending) : CN_OK;
}

static void tpipe_reset(tpipe_t *p)
{
    if (p->inflight)
        cn__scribe_client_tree_proof_drain(p->cl);
    p->inflight = false;
    cn_tree_verify_free(p->cur);
    cn_tree_verify_free(p->next);
    p->cur = p->next = NULL;
    p->next_has = false;
}

/* A proof that failed, named in err (when the server sent no error): the
 * page's prefix and cursor. */
static void tpipe_name(tpipe_t *p, cn_err_t e)
{
    if ((e != CN_E_DIGEST_MISMATCH && e != CN_E_INVALID) || p->err->code || p->err->message[0])
        return;
    const char *pre = p->prefix ? p->prefix : "";
    char scope[240] = "";
    if (*pre)
        snprintf(scope, sizeof scope, " of '%.200s'", pre);
    if (p->cur_has)
        snprintf(p->err->message, sizeof p->err->message, "the page%s after '%.200s'", scope,
                 p->cur_after);
    else
        snprintf(p->err->message, sizeof p->err->message, "the first page%s", scope);
}

/* The listing, pipelined; a transport failure restarts the page being
 * verified from its first fragment, once per page. */
static cn_err_t tpipe_run(tpipe_t *p, bool hold, cn_scribe_client_entry_fn fn, void *ctx,
                          uint32_t *fragments)
{
    cn_err_t e = CN_OK;
    bool end = false, retried = false;
    while (!end) {
        if (!p->cur && (e = tpipe_page(p, p->cur_has, p->cur_after, p->cur_left, &p->cur)) >= 0)
            e = tpipe_send(p, p->cur);
        for (int r = 0; e >= 0 && !end; r ^= 1) {
            const cn_tree_verify_t *was = p->cur;
            if (p->stop && atomic_load(&p->stop->raised))
                e = CN_E_CLOSED; /* another range failed */
            else
                e = tpipe_step(p, r, hold, fn, ctx, fragments, &end);
            if (p->cur != was)
                retried = false; /* a new page: its own restart */
        }
        if (e >= 0 || !transport_failure(e) || retried ||
            (p->stop && atomic_load(&p->stop->raised)))
            break;
        retried = true;
        tpipe_reset(p); /* the current page starts again */
        memset(p->err, 0, sizeof *p->err);
        e = CN_OK;
    }
    if (e < 0 && p->stop)
        p->cancelled = !tstop_raise(p->stop);
    tpipe_name(p, e);
    tpipe_reset(p);
    return e;
}

/* p set up for one listing on cl (its buffers allocated: -ENOMEM). */
static cn_err_t tpipe_init(tpipe_t *p, cn_scribe_client_t *cl, cn_scribe_cerr_t *err,
                           const tpipe_t *like)
{
    *p = (tpipe_t){ .cl = cl,
                    .err = err,
                    .repo = like->repo,
                    .branch = like->branch,
                    .change = like->change,
                    .prefix = like->prefix,
                    .content = like->content,
                    .revision = like->revision,
                    .cur_left = UINT64_MAX };
    p->cur_after = calloc(1, CN_SCRIBE_MAX_PATH + 1);
    p->next_after = calloc(1, CN_SCRIBE_MAX_PATH + 1);
    p->path = malloc(CN_SCRIBE_MAX_PATH + 1);
    return p->cur_after && p->next_after && p->path ? CN_OK : -ENOMEM;
}

static void tpipe_fini(tpipe_t *p)
{
    free(p->cur_after);
    free(p->next_after);
    free(p->path);
    cn_buf_free(&p->req);
    cn_buf_free(&p->reply[0]);
    cn_buf_free(&p->reply[1]);
}

/* ---- key-range splits (docs/protocol/scribe.md 17.5, "Key-range splits") ----------------
 * The listing as n ranges that tile it: range 0 up to and including bound
 * 0, range i after bound i-1 up to and including bound i, the last after
 * the last bound to the end.  Each is its own pipelined listing (cursor =
 * the bound before it, entries after its own bound dropped and no page
 * asked for past it) on a connection of its own, range 0 on the control
 * connection, the others on data connections in threads of their own.
 * Each page is proved as before, and a proof of a page after cursor A
 * shows every live entry after A up to its last: so the ranges together
 * hold every entry exactly once whatever the bounds are.  The bounds are
 * only hints for balance (from one small probe proof, unverified), and
 * the server cannot move an entry across one. */
#define SPLIT_MAX (1 + CN_SCRIBE_CLIENT_MAX_DATA)

typedef struct trange {
    tpipe_t p;
    cn_scribe_cerr_t err;
    cn_buf_t rows; /* ranges after the first: entries held until all verified */
    uint32_t fragments;
    bool hold;
    cn_err_t e;
    uint64_t before; /* the probe's count of the listing's entries before bound */
    char bound[CN_SCRIBE_MAX_PATH + 1];
} trange_t;

/* A spine node of the probe: the node and its full key's length. */
typedef struct spine {
    cn_repos_node_t nd;
    size_t klen;
} spine_t;

/* The first child of nd with live entries: its byte, or -1. */
static int first_live(const cn_repos_node_t *nd)
{
    for (uint16_t i = 0; i < nd->child_count; i++) {
        cn_repos_node_child_t c;
        cn_repos_node_child(nd, i, &c);
        if (c.live)
            return c.byte;
    }
    return -1;
}

/* The probe's path from the root into sp (at most 64 nodes): toward the
 * listing's prefix (plen bytes) while above it, then its leftmost entry;
 * key holds the deepest one's full key.  Returns the number of nodes. */
static int spine_of(const cn_scribe_tree_proof_resp_t *resp, const char *prefix, size_t plen,
                    spine_t *sp, uint8_t *key)
{
    cn_scribe_rows_t it = resp->nodes;
    cn_scribe_str_t s;
    int n = 0;
    size_t klen = 0;
    while (n < 64 && cn_scribe_next_proof_node(&it, &s)) {
        cn_repos_node_t nd;
        if (cn_repos_node_parse(s.p, s.len, &nd) < 0)
            break;
        int down = !n ? -1 : klen < plen ? (uint8_t)prefix[klen] : first_live(&sp[n - 1].nd);
        bool child = n ? nd.prefix_len && nd.prefix[0] == down : nd.prefix_len == 0;
        if (!child || klen + nd.prefix_len > CN_SCRIBE_MAX_PATH - 1)
            break;
        memcpy(key + klen, nd.prefix, nd.prefix_len);
        klen += nd.prefix_len;
        sp[n++] = (spine_t){ nd, klen };
    }
    return n;
}

/* Bounds for up to want ranges from the spine: the listing is the subtree
 * of its top node (the first whose key starts with the prefix, plen bytes),
 * its keyspace the leftmost entries, then, deepest node first, each child
 * subtree right of the path (all children of the deepest), whose live
 * counts are known; a bound is the start key of a subtree (key ‖ byte, when
 * it is a canonical path) where the live count before it passes j/want of
 * the total.  Returns the number of bounds (ascending). */
static int spine_bounds(const spine_t *sp, int n, const uint8_t *key, const char *prefix,
                        size_t plen, int want, trange_t *rs)
{
    int top = 0;
    while (top < n && sp[top].klen < plen)
        top++;
    if (top == n || memcmp(key, prefix, plen) != 0)
        return 0; /* nothing under the prefix */
    uint64_t total = sp[top].nd.live, before = 0;
    for (int j = top; j < n; j++)
        before += sp[j].nd.entry_state == CN_REPOS_LIVE;
    int nb = 0;
    for (int j = n - 1; j >= top && nb < want - 1; j--) {
        int skip = j + 1 < n ? sp[j + 1].nd.prefix[0] : -1; /* the path's own child */
        for (uint16_t i = 0; i < sp[j].nd.child_count && nb < want - 1; i++) {
            cn_repos_node_child_t c;
            cn_repos_node_child(&sp[j].nd, i, &c);
            if ((int)c.byte <= skip || !c.live)
                continue;
            char *b = rs[nb].bound;
            memcpy(b, key, sp[j].klen);
            b[sp[j].klen] = (char)c.byte;
            b[sp[j].klen + 1] = 0;
            if (before * (uint64_t)want >= total * (uint64_t)(nb + 1) && before &&
                cn_repos_path_check((const uint8_t *)b, sp[j].klen + 1) == CN_OK)
                rs[nb++].before = before;
            before += c.live;
        }
    }
    return nb;
}

/* Bounds for up to want ranges (p's listing, on its control connection):
 * one tree_proof of a page of limit 1 names the root and the nodes down to
 * the first entry with their children's live counts.  Hints only: its
 * bytes are not verified (a lie only unbalances the ranges).  0 on any
 * failure (the listing is then not split). */
static int split_bounds(tpipe_t *p, int want, trange_t *rs)
{
    size_t plen = p->prefix ? strlen(p->prefix) : 0;
    cn_scribe_tree_page_req_t q;
    cn__scribe_tree_page_fill(&q, p->repo, p->branch, p->change, p->prefix, false, NULL);
    q.limit = 1;
    cn_scribe_codec_t codec = (cn_scribe_codec_t)cn_scribe_client_codec(p->cl);
    cn_buf_t page = { 0 }, req = { 0 }, reply = { 0 };
    cn_tree_verify_t *v = NULL;
    cn_scribe_cerr_t err = { 0 };
    cn_scribe_tree_proof_resp_t resp;
    int nb = 0;
    spine_t *sp = malloc(64 * sizeof *sp);
    uint8_t *key = malloc(CN_SCRIBE_MAX_PATH + 1);
    cn_err_t e = sp && key ? cn_scribe_enc_tree_page_req(&page, codec, &q) : -ENOMEM;
    cn_tree_verify_cfg_t cfg = { codec, page.data, page.len,   CN_REPOS_PROOF_LIVE, 0,
                                 NULL,  0,         p->content, p->revision };
    if (e >= 0 && cn_tree_verify_new(&cfg, &v) >= 0 && cn_tree_verify_request(v, &req) >= 0 &&
        cn_scribe_client_tree_proof(p->cl, req.data, req.len, &reply, &err) >= 0 &&
        cn_scribe_dec_tree_proof_resp(reply.data, reply.len, codec, &resp) >= 0)
        nb = spine_bounds(sp, spine_of(&resp, p->prefix, plen, sp, key), key, p->prefix, plen, want,
                          rs);
    cn_tree_verify_free(v);
    cn_buf_free(&page);
    cn_buf_free(&req);
    cn_buf_free(&reply);
    free(sp);
    free(key);
    return nb;
}
/* A later range's entry, held: u32 path length, path, then the rest of
 * the entry as it is in memory (read back by replay in this process). */
static int range_row(void *ctx, const cn_scribe_client_entry_t *ce)
{
    cn_buf_t *b = ctx;
    uint32_t n = (uint32_t)ce->path_len;
    cn_scribe_client_entry_t rest = *ce;
    rest.path = NULL;
    if (cn_buf_append(b, &n, sizeof n) < 0 || cn_buf_append(b, ce->path, n) < 0 ||
        cn_buf_append(b, &rest, sizeof rest) < 0)
        return -ENOMEM;
    return 0;
}

static void *range_run(void *arg)
{
    trange_t *r = arg;
    r->e = tpipe_run(&r->p, r->hold, range_row, &r->rows, &r->fragments);
    return NULL;
}

/* Hands range r's held entries to fn in order; each must come after
 * *last (the previous range's last path, *lastn bytes; 0: none yet),
 * which then becomes r's last: the ranges tile the listing in order. */
static cn_err_t replay(const trange_t *r, cn_scribe_client_entry_fn fn, void *ctx, char *last,
                       size_t *lastn)
{
    for (size_t at = 0; at < r->rows.len;) {
        uint32_t n;
        cn_scribe_client_entry_t ce;
        memcpy(&n, r->rows.data + at, sizeof n);
        memcpy(last + CN_SCRIBE_MAX_PATH + 1, r->rows.data + at + sizeof n, n); /* scratch */
        memcpy(&ce, r->rows.data + at + sizeof n + n, sizeof ce);
        at += sizeof n + n + sizeof ce;
        char *path = last + CN_SCRIBE_MAX_PATH + 1;
        path[n] = 0;
        if (*lastn && path_cmp(path, n, last, *lastn) <= 0)
            return CN_E_DIGEST_MISMATCH; /* not after the range before: never, with proofs */
        memcpy(last, path, n + 1);
        *lastn = n;
        ce.path = last;
        int rc = fn ? fn(ctx, &ce) : 0;
        if (rc)
            return rc;
    }
    return CN_OK;
}

/* Range 0's entries go to the caller's fn at once; its last path is kept
 * for replay's order check. */
typedef struct first_ctx {
    cn_scribe_client_entry_fn fn;
    void *ctx;
    char *last;
    size_t lastn;
} first_ctx_t;

static int first_row(void *arg, const cn_scribe_client_entry_t *ce)
{
    first_ctx_t *f = arg;
    memcpy(f->last, ce->path, ce->path_len + 1);
    f->lastn = ce->path_len;
    return f->fn ? f->fn(f->ctx, ce) : 0;
}

/* Opens a data connection for each range after range 0 (the server may
 * refuse some: fewer ranges, the last one running to the end) and starts
 * each in a thread of its own (run here when no thread can be made).
 * Returns the number of ranges after range 0. */
static int ranges_start(tpipe_t *base, trange_t *rs, int nb, pthread_t *t, bool *threaded)
{
    tstop_t *stop = base->stop;
    cn_scribe_client_t *d[SPLIT_MAX];
    int k = 0;
    while (k < nb && cn__scribe_client_data_conn(base->cl, k, &d[k], &rs[k].err) >= 0 &&
           tpipe_init(&rs[k].p, d[k], &rs[k].err, base) >= 0)
        k++;
    if (k < nb)
        tpipe_fini(&rs[k].p); /* NULL-safe: the one that failed, if it got that far */
    for (int i = 0; i < k; i++) {
        trange_t *r = &rs[i];
        memset(&r->err, 0, sizeof r->err);
        r->p.cur_has = true;
        memcpy(r->p.cur_after, r->bound, strlen(r->bound) + 1);
        r->p.bound = i + 1 < k ? rs[i + 1].bound : NULL;
        /* through the first entry at or past the bound: one more */
        r->p.cur_left = i + 1 < k ? rs[i + 1].before - rs[i].before + 1 : UINT64_MAX;
        r->p.stop = stop;
        stop->conn[stop->n++] = d[i];
    }
    for (int i = 0; i < k; i++) {
        trange_t *r = &rs[i];
        threaded[i] = pthread_create(&t[i], NULL, range_run, r) == 0;
        if (!threaded[i])
            range_run(r);
    }
    return k;
}

/* A split listing's error: the first failing range's in order that was
 * not cancelled by another's failure (its err copied to base's); e is
 * range 0's (base's) result.  CN_OK when every range verified. */
static cn_err_t split_error(tpipe_t *base, cn_err_t e, const trange_t *rs, int n)
{
    cn_err_t first = e;
    for (int k = -1; k < n; k++) {
        cn_err_t ek = k < 0 ? e : rs[k].e;
        if (ek >= 0)
            continue;
        first = first < 0 ? first : ek;
        if (!(k < 0 ? base->cancelled : rs[k].p.cancelled)) {
            if (k >= 0)
                *base->err = rs[k].err;
            return ek;
        }
    }
    return first;
}

/* The listing split at rs[0..nb).bound: range 0 on base (the control
 * connection) up to rs[0].bound, range k+1 (after rs[k].bound) on data
 * connection k.  Range 0's entries go to fn as they verify, the others'
 * once every range verified, in order.  The first range to fail cancels
 * the others; split_error names the failure. */
static cn_err_t split_run(tpipe_t *base, trange_t *rs, int nb, bool hold,
                          cn_scribe_client_entry_fn fn, void *ctx, uint32_t *fragments)
{
    pthread_t t[SPLIT_MAX];
    bool threaded[SPLIT_MAX] = { false };
    tstop_t stop = { .n = 0 };
    atomic_init(&stop.raised, false);
    base->stop = &stop;
    for (int k = 0; k < nb; k++)
        rs[k].hold = hold;
    int n = ranges_start(base, rs, nb, t, threaded);
    char *last = malloc(2 * (CN_SCRIBE_MAX_PATH + 1));
    first_ctx_t f = { fn, ctx, last, 0 };
    base->bound = n ? rs[0].bound : NULL;
    base->cur_left = n ? rs[0].before + 1 : UINT64_MAX;
    cn_err_t e = last ? tpipe_run(base, hold, first_row, &f, fragments) : -ENOMEM;
    for (int k = 0; k < n; k++)
        if (threaded[k])
            pthread_join(t[k], NULL);
    e = split_error(base, e, rs, n);
    for (int k = 0; k < n; k++) {
        if (e >= 0)
            e = replay(&rs[k], fn, ctx, last, &f.lastn);
        if (fragments)
            *fragments += rs[k].fragments;
    }
    for (int k = 0; k < n; k++) {
        tpipe_fini(&rs[k].p);
        cn_buf_free(&rs[k].rows);
    }
    free(last);
    base->stop = NULL;
    return e;
}

/* Ranges this listing is split into: 1 + the data connections the client
 * may open (at most 5), or CAIRN_PROOF_SPLIT (1..5; 1 = unsplit). */
static int split_want(const cn_scribe_client_t *cl)
{
    const char *v = getenv("CAIRN_PROOF_SPLIT");
    char *end;
    unsigned long n = v ? strtoul(v, &end, 10) : 0;
    int want = 1 + cn__scribe_client_ndata(cl);
    if (v && *v && !*end && n >= 1 && n <= SPLIT_MAX)
        want = (int)n < want ? (int)n : want;
    return want;
}

cn_err_t cn_scribe_client_tree_verified(cn_scribe_client_t *cl, const uint8_t repo[16],
                                        const uint8_t branch[16], uint64_t change,
                                        const char *prefix, const cn_digest_t *content_root,
                                        const cn_digest_t *revision_root,
                                        cn_scribe_client_entry_fn fn, void *ctx,
                                        uint32_t *fragments, cn_scribe_cerr_t *err)
{
    const char *knob = getenv("CAIRN_PROOF_PIPELINE");
    bool hold = knob && !strcmp(knob, "0");
    cn_scribe_cerr_t scratch = { 0 };
    tpipe_t like = { .repo = repo,
                     .branch = branch,
                     .change = change,
                     .prefix = prefix,
                     .content = *content_root,
                     .revision = *revision_root };
    tpipe_t p;
    cn_err_t e = tpipe_init(&p, cl, err ? err : &scratch, &like);
    int want = e >= 0 ? split_want(cl) : 1;
    trange_t *rs = want > 1 ? calloc(SPLIT_MAX, sizeof *rs) : NULL;
    int nb = rs ? split_bounds(&p, want, rs) : 0;
    if (e >= 0 && nb > 0)
        e = split_run(&p, rs, nb, hold, fn, ctx, fragments);
    else if (e >= 0)
        e = tpipe_run(&p, hold, fn, ctx, fragments);
    free(rs);
    tpipe_fini(&p);
    return e;
}

/* ---- commits -------------------------------------------------------------------------------- */
static cn_err_t commit_sink(void *ctx, size_t i, bool present, const void *p, size_t n, bool last)
{
    (void)i;
    (void)last;
    if (!present)
        return CN_E_NOT_FOUND;
    return cn_buf_append(ctx, p, n);
}

cn_err_t cn_scribe_client_commit(cn_scribe_client_t *cl, const uint8_t repo[16],
                                 const cn_digest_t *id, cn_buf_t *enc, cn_scribe_cerr_t *err)
{
    size_t start = enc->len;
    cn_scribe_client_ref_t ref = { CN_REPOS_COMMIT, *id };
    CN_TRY(cn_scribe_client_get(cl, repo, &ref, 1, commit_sink, enc, err));
    cn_digest_t got;
    cn_repos_object_id(CN_REPOS_COMMIT, enc->data + start, enc->len - start, &got);
    return cn_ct_equal(got.b, id->b, CN_DIGEST_LEN) ? CN_OK : CN_E_DIGEST_MISMATCH;
}
