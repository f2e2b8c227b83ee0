/* The tree proof verifier (src/client/tree_verify.c) against proofs the repos
 * service produces (src/repos/service_proof.c) and hand-built ones: every
 * selector against tree_page and the submitted history, fragments forced
 * small so a page spans many, empty and all-deleted trees, and an adversary
 * between producer and verifier that drops, replays, reorders, truncates,
 * appends or flips bits: each time the proof fails and yields no value. */
#include "service_env.h"
#include "cairn/tree_verify.h"
#include "cairn/scribe.h"

#include <stdio.h>

#define LE CN_SCRIBE_CODEC_LE

/* ---- the history: change 1 adds N_FILES + a few, change 2 deletes and modifies --------- */
#define N_FILES 300
static env_t E;
static const char *extra[] = { "a.txt", "art/a.png", "art/b.png", "art/sub/c",
                               "artx",  "b",         "bb/x",      "é/ü" };
#define N_EXTRA (sizeof extra / sizeof extra[0])

static void file_path(char *out, size_t cap, int i)
{
    snprintf(out, cap, "d/%03d/f%d", i % 37, i);
}

static void build(void)
{
    env_open(&E);
    cn_digest_t m1 = put_file(&E, "one"), m2 = put_file(&E, "two");
    static char names[N_FILES][32];
    cn_repos_change_t c[N_FILES + N_EXTRA];
    uint32_t n = 0;
    for (int i = 0; i < N_FILES; i++) {
        file_path(names[i], sizeof names[i], i);
        c[n++] = ch(CN_REPOS_ADD, names[i], &m1);
    }
    for (size_t i = 0; i < N_EXTRA; i++)
        c[n++] = ch(CN_REPOS_ADD, extra[i], &m1);
    /* canonical order: ascending bytes */
    for (uint32_t i = 1; i < n; i++)
        for (uint32_t j = i;
             j > 0 && strcmp((const char *)c[j - 1].path, (const char *)c[j].path) > 0; j--) {
            cn_repos_change_t t = c[j];
            c[j] = c[j - 1];
            c[j - 1] = t;
        }
    cn_repos_submit_t s;
    cn_repos_outcome_t o;
    cn_digest_t cs = put_cs(&E, c, n);
    submit_req(&E, &s, 1, 0, &cs, "one");
    CN_CHECK_EQ(submit(&E, &s, &o, NULL), 0);
    CN_CHECK_EQ(o.change, 1);
    cn_repos_outcome_free(&o);
    cn_repos_change_t c2[] = { ch(CN_REPOS_DELETE, "art/a.png", NULL),
                               ch(CN_REPOS_MODIFY, "art/b.png", &m2),
                               ch(CN_REPOS_DELETE, "b", NULL) };
    cs = put_cs(&E, c2, 3);
    submit_req(&E, &s, 2, 1, &cs, "two");
    CN_CHECK_EQ(submit(&E, &s, &o, NULL), 0);
    CN_CHECK_EQ(o.change, 2);
    cn_repos_outcome_free(&o);
}

/* ---- the producer behind a call function --------------------------------------------- */
typedef struct {
    uint32_t max_nodes;
    int attack;               /* 0 none, else one of the adversary's edits */
    int call;                 /* calls made */
    cn_buf_t last;            /* the previous reply (replays) */
    cn_tree_verify_t *shadow; /* an honest verifier in step (omissions) */
    bool edited;              /* the adversary changed a reply */
} prod_t;

static cn_err_t add_node(void *ctx, const uint8_t *p, size_t n)
{
    uint32_t *count = (uint32_t *)((cn_buf_t *)ctx + 1);
    (*count)++;
    return cn_scribe_enc_tree_proof_node(ctx, LE, p, n);
}

/* One fragment from the service, as the server would answer d. */
static cn_err_t produce(prod_t *pd, const cn_scribe_tree_proof_req_t *d, cn_buf_t *reply)
{
    cn_repos_proof_req_t q;
    memset(&q, 0, sizeof q);
    memcpy(q.repo, d->pq.repo.b, 16);
    memcpy(q.branch, d->pq.branch.b, 16);
    q.change = d->pq.change;
    q.query.selector = d->selector;
    q.query.lower = d->lower;
    q.query.prefix = d->pq.prefix.len ? d->pq.prefix.p : (const uint8_t *)"";
    q.query.prefix_len = d->pq.prefix.len;
    if (d->pq.has_after) {
        q.query.after = d->pq.after.p;
        q.query.after_len = d->pq.after.len;
    }
    q.query.limit = cn_scribe_tree_proof_limit(d->selector, d->pq.limit);
    cn_repos_pathref_t refs[16];
    cn_scribe_rows_t it = d->paths;
    cn_scribe_str_t s;
    for (uint32_t i = 0; i < d->path_count && i < 16 && cn_scribe_next_path(&it, &s); i++)
        refs[i] = (cn_repos_pathref_t){ s.p, (uint16_t)s.len };
    q.query.paths = refs;
    q.query.npaths = d->path_count;
    q.remaining = d->continuation ? d->remaining : q.query.limit + 1;
    if (d->continuation) {
        q.edge = d->edge.p;
        q.edge_len = d->edge.len;
    }
    q.max_nodes = pd->max_nodes;
    struct {
        cn_buf_t items;
        uint32_t count;
    } acc = { { 0 }, 0 };
    cn_digest_t cr, rr;
    cn_repos_req_t rq = trusted();
    cn_err_t err = cn_repos_tree_proof(E.r, &rq, &q, add_node, &acc, &cr, &rr);
    if (err >= 0)
        err = cn_scribe_enc_tree_proof_resp(reply, LE, &cr, &rr, acc.count, acc.items.data,
                                            acc.items.len);
    cn_buf_free(&acc.items);
    return err;
}

/* The adversary's edits of a reply (after the roots and count: 68 bytes). */
enum {
    A_NONE,
    A_FLIP_NODE,
    A_FLIP_ROOT,
    A_DROP_FIRST,
    A_REPLAY,
    A_EMPTY,
    A_TRUNC,
    A_APPEND,
    A_SWAP,
    A_SKIP_FRAGMENT,
    A_LAST
};

static void set_count(cn_buf_t *b, uint32_t n)
{
    b->data[64] = (uint8_t)n;
    b->data[65] = (uint8_t)(n >> 8);
    b->data[66] = (uint8_t)(n >> 16);
    b->data[67] = (uint8_t)(n >> 24);
}

static uint32_t count_of(const cn_buf_t *b)
{
    return (uint32_t)b->data[64] | (uint32_t)b->data[65] << 8 | (uint32_t)b->data[66] << 16 |
           (uint32_t)b->data[67] << 24;
}

static size_t item_len(const cn_buf_t *b, size_t at)
{
    const uint8_t *p = b->data + at;
    return 4 + ((size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 | (size_t)p[3] << 24);
}

static void attack(prod_t *pd, cn_buf_t *r)
{
    uint32_t n = count_of(r);
    switch (pd->attack) {
    case A_FLIP_NODE: r->data[r->len - 1 - (size_t)pd->call % 40] ^= 0x10; break;
    case A_FLIP_ROOT: r->data[pd->call % 64] ^= 1; break;
    case A_DROP_FIRST: {
        size_t l = item_len(r, 68);
        memmove(r->data + 68, r->data + 68 + l, r->len - 68 - l);
        r->len -= l;
        set_count(r, n - 1);
        break;
    }
    case A_REPLAY:
        if (pd->last.len) {
            cn_buf_reset(r);
            cn_buf_append(r, pd->last.data, pd->last.len);
        }
        break;
    case A_EMPTY:
        r->len = 68;
        set_count(r, 0);
        break;
    case A_TRUNC:
        if (n > 1) {
            r->len = 68 + item_len(r, 68);
            set_count(r, 1);
        } else {
            r->len -= 1; /* a cut inside the only node */
        }
        break;
    case A_APPEND: {
        size_t l = item_len(r, 68);
        uint8_t *copy = malloc(l); /* the first node again, past the end */
        memcpy(copy, r->data + 68, l);
        cn_buf_append(r, copy, l);
        free(copy);
        set_count(r, n + 1);
        break;
    }
    case A_SWAP:
        if (n >= 2) {
            size_t l1 = item_len(r, 68), l2 = item_len(r, 68 + l1);
            uint8_t *tmp = malloc(l1 + l2);
            memcpy(tmp, r->data + 68 + l1, l2);
            memcpy(tmp + l2, r->data + 68, l1);
            memcpy(r->data + 68, tmp, l1 + l2);
            free(tmp);
        } else {
            r->data[68 + 4] ^= 0x80;
        }
        break;
    default: break;
    }
}

static cn_err_t call(void *ctx, const uint8_t *req, size_t len, cn_buf_t *reply)
{
    prod_t *pd = ctx;
    cn_scribe_tree_proof_req_t d;
    if (cn_scribe_dec_tree_proof_req(req, len, LE, &d) < 0)
        return CN_E_PROTOCOL;
    cn_err_t err = produce(pd, &d, reply);
    if (err >= 0 && pd->shadow)
        cn_tree_verify_feed(pd->shadow, reply->data, reply->len);
    if (err >= 0 && pd->attack == A_SKIP_FRAGMENT && pd->shadow && pd->call == 0 &&
        !cn_tree_verify_done(pd->shadow)) {
        /* omit this fragment: answer the one after it */
        cn_buf_t next = { 0 };
        err = cn_tree_verify_request(pd->shadow, &next);
        if (err >= 0 && cn_scribe_dec_tree_proof_req(next.data, next.len, LE, &d) < 0)
            err = CN_E_PROTOCOL;
        cn_buf_reset(reply);
        if (err >= 0)
            err = produce(pd, &d, reply);
        cn_buf_free(&next);
        pd->edited = true;
    } else if (err >= 0 && pd->attack && pd->attack != A_SKIP_FRAGMENT) {
        cn_buf_t before = { 0 };
        cn_buf_append(&before, reply->data, reply->len);
        attack(pd, reply);
        if (before.len != reply->len || memcmp(before.data, reply->data, reply->len) != 0)
            pd->edited = true;
        cn_buf_free(&before);
    }
    cn_buf_reset(&pd->last);
    cn_buf_append(&pd->last, reply->data, reply->len);
    pd->call++;
    return err;
}

/* ---- a proof run ----------------------------------------------------------------------------- */
typedef struct {
    uint8_t selector;
    uint64_t lower, change;
    const char *prefix, *after;
    uint32_t limit;
    const char *paths[8];
    uint32_t npaths;
} query_t;

static void page_bytes(const query_t *x, cn_buf_t *out)
{
    cn_scribe_tree_page_req_t q;
    memset(&q, 0, sizeof q);
    memcpy(q.repo.b, E.repo.id, 16);
    memcpy(q.branch.b, E.repo.main_branch, 16);
    q.change = x->change;
    q.prefix = cn_scribe_cstr(x->prefix ? x->prefix : "");
    q.limit = x->limit;
    q.has_after = x->after != NULL;
    if (x->after)
        q.after = cn_scribe_cstr(x->after);
    CN_CHECK_EQ(cn_scribe_enc_tree_page_req(out, LE, &q), 0);
}

/* The snapshot's roots and its live page, from tree_page. */
typedef struct {
    cn_buf_t rows; /* "path\n" per row */
    uint32_t n;
} rows_t;

static cn_err_t row_cb(void *ctx, const cn_repos_tree_row_t *row)
{
    rows_t *r = ctx;
    r->n++;
    cn_buf_append(&r->rows, row->path, row->path_len);
    return cn_buf_append(&r->rows, "\n", 1);
}

static void roots(const query_t *x, rows_t *rows, bool *more, cn_digest_t *cr, cn_digest_t *rr)
{
    cn_repos_page_q_t pq;
    memset(&pq, 0, sizeof pq);
    memcpy(pq.repo, E.repo.id, 16);
    memcpy(pq.branch, E.repo.main_branch, 16);
    pq.change = x->change;
    pq.prefix = (const uint8_t *)(x->prefix ? x->prefix : "");
    pq.prefix_len = strlen((const char *)pq.prefix);
    pq.limit = x->limit;
    if (x->after) {
        pq.after = (const uint8_t *)x->after;
        pq.after_len = strlen(x->after);
    }
    cn_repos_req_t rq = trusted();
    CN_CHECK_EQ(cn_repos_tree_page(E.r, &rq, &pq, row_cb, rows, more, cr, rr), 0);
}

static cn_tree_verify_t *verifier(const query_t *x, const cn_digest_t *cr, const cn_digest_t *rr)
{
    cn_buf_t page = { 0 };
    page_bytes(x, &page);
    cn_scribe_str_t paths[8];
    for (uint32_t i = 0; i < x->npaths; i++)
        paths[i] = cn_scribe_cstr(x->paths[i]);
    cn_tree_verify_cfg_t cfg = { LE,    page.data, page.len, x->selector, x->lower,
                                 paths, x->npaths, *cr,      *rr };
    cn_tree_verify_t *v = NULL;
    CN_CHECK_EQ(cn_tree_verify_new(&cfg, &v), 0);
    cn_buf_free(&page);
    return v;
}

/* Runs the proof of x with fragments of at most max_nodes nodes; the
 * verified values as "path\n" lines (tombstones marked '-'), *more. */
static cn_err_t run_edit(const query_t *x, uint32_t max_nodes, int attack_kind, cn_buf_t *out,
                         bool *more, uint32_t *fragments, bool *edited)
{
    rows_t rows = { { 0 }, 0 };
    bool pmore;
    cn_digest_t cr, rr;
    roots(x, &rows, &pmore, &cr, &rr);
    cn_buf_free(&rows.rows);
    cn_tree_verify_t *v = verifier(x, &cr, &rr);
    if (!v)
        return CN_E_INVALID;
    prod_t pd = { max_nodes, attack_kind, 0, { 0 }, verifier(x, &cr, &rr), false };
    cn_err_t err = cn_tree_verify_page(v, call, &pd);
    if (edited)
        *edited = pd.edited;
    cn_tree_verify_free(pd.shadow);
    uint32_t n = 0;
    if (err >= 0) {
        CN_CHECK(cn_tree_verify_done(v));
        CN_CHECK_EQ(cn_tree_verify_result(v, &n, more), 0);
        for (uint32_t i = 0; i < n; i++) {
            const cn_tree_value_t *val = cn_tree_verify_value(v, i);
            if (val->entry.state == CN_REPOS_TOMBSTONE)
                cn_buf_append(out, "-", 1);
            cn_buf_append(out, val->path, val->path_len);
            cn_buf_append(out, "\n", 1);
        }
    } else {
        /* a failed proof holds nothing and takes nothing more */
        CN_CHECK(!cn_tree_verify_done(v));
        CN_CHECK(cn_tree_verify_value(v, 0) == NULL);
        CN_CHECK(cn_tree_verify_result(v, &n, more) < 0);
        cn_buf_t b = { 0 };
        CN_CHECK(cn_tree_verify_request(v, &b) < 0);
        cn_buf_free(&b);
    }
    if (fragments)
        *fragments = cn_tree_verify_fragments(v);
    cn_tree_verify_free(v);
    cn_buf_free(&pd.last);
    return err;
}

static cn_err_t run(const query_t *x, uint32_t max_nodes, int attack_kind, cn_buf_t *out,
                    bool *more, uint32_t *fragments)
{
    return run_edit(x, max_nodes, attack_kind, out, more, fragments, NULL);
}

/* Selector 0 equals tree_page, whatever the fragment size. */
static void check_live(const query_t *x, uint32_t max_nodes, uint32_t min_fragments)
{
    rows_t rows = { { 0 }, 0 };
    bool pmore, more = false;
    cn_digest_t cr, rr;
    roots(x, &rows, &pmore, &cr, &rr);
    cn_buf_t got = { 0 };
    uint32_t frags = 0;
    CN_CHECK_EQ(run(x, max_nodes, A_NONE, &got, &more, &frags), 0);
    CN_CHECK_EQ(got.len, rows.rows.len);
    CN_CHECK(got.len == rows.rows.len &&
             (got.len == 0 || memcmp(got.data, rows.rows.data, got.len) == 0));
    CN_CHECK_EQ(more, pmore);
    CN_CHECK(frags >= min_fragments);
    cn_buf_free(&got);
    cn_buf_free(&rows.rows);
}

static void test_live_ranges(void)
{
    query_t all = { 0, 0, 2, NULL, NULL, 4096, { NULL }, 0 };
    check_live(&all, 0, 1);
    check_live(&all, 5, 20); /* many fragments */
    check_live(&all, 1, 100);
    query_t small = { 0, 0, 2, NULL, NULL, 10, { NULL }, 0 };
    check_live(&small, 3, 2); /* more = true, the witness proved */
    query_t art = { 0, 0, 2, "art", NULL, 100, { NULL }, 0 };
    check_live(&art, 2, 1);
    query_t after = { 0, 0, 2, "d", "d/017/f91", 50, { NULL }, 0 };
    check_live(&after, 4, 2);
    query_t old = { 0, 0, 1, "art", NULL, 100, { NULL }, 0 };
    check_live(&old, 1, 1);
    query_t none = { 0, 0, 2, "nothing/here", NULL, 5, { NULL }, 0 };
    check_live(&none, 1, 1);
}

static void test_changed_range(void)
{
    /* newer than change 1: the two deletes and the modify, tombstones included */
    query_t q = { 1, 1, 2, NULL, NULL, 100, { NULL }, 0 };
    cn_buf_t got = { 0 };
    bool more = true;
    CN_CHECK_EQ(run(&q, 2, A_NONE, &got, &more, NULL), 0);
    cn_buf_append(&got, "", 1);
    CN_CHECK_STR((const char *)got.data, "-art/a.png\nart/b.png\n-b\n");
    CN_CHECK(!more);
    cn_buf_free(&got);
    /* limit 2: the third is the witness */
    query_t q2 = { 1, 1, 2, NULL, NULL, 2, { NULL }, 0 };
    CN_CHECK_EQ(run(&q2, 0, A_NONE, &got, &more, NULL), 0);
    cn_buf_append(&got, "", 1);
    CN_CHECK_STR((const char *)got.data, "-art/a.png\nart/b.png\n");
    CN_CHECK(more);
    cn_buf_free(&got);
}

static void test_points(void)
{
    cn_buf_t got = { 0 };
    bool more = true;
    query_t ex = { 2, 0, 2, "art/a.png", NULL, 1, { NULL }, 0 };
    CN_CHECK_EQ(run(&ex, 1, A_NONE, &got, &more, NULL), 0);
    cn_buf_append(&got, "", 1);
    CN_CHECK_STR((const char *)got.data, "-art/a.png\n");
    CN_CHECK(!more);
    cn_buf_free(&got);
    query_t absent = { 2, 0, 2, "art/zz", NULL, 1, { NULL }, 0 };
    CN_CHECK_EQ(run(&absent, 1, A_NONE, &got, &more, NULL), 0);
    CN_CHECK_EQ(got.len, 0);
    /* "artx" shares its first bytes with "art/...": exact is the path alone */
    query_t dir = { 2, 0, 2, "artx", NULL, 1, { NULL }, 0 };
    CN_CHECK_EQ(run(&dir, 1, A_NONE, &got, &more, NULL), 0);
    cn_buf_append(&got, "", 1);
    CN_CHECK_STR((const char *)got.data, "artx\n");
    cn_buf_free(&got);
    query_t ps = { 3, 0, 2, NULL, NULL, 5, { "a.txt", "art/b", "art/b.png", "b", "d/000/f0" }, 5 };
    CN_CHECK_EQ(run(&ps, 2, A_NONE, &got, &more, NULL), 0);
    cn_buf_append(&got, "", 1);
    CN_CHECK_STR((const char *)got.data, "a.txt\nart/b.png\n-b\nd/000/f0\n");
    cn_buf_free(&got);
}

/* Every edit of the adversary, on every selector, fails the proof. */
static void test_adversary(void)
{
    query_t qs[] = {
        { 0, 0, 2, NULL, NULL, 4096, { NULL }, 0 },
        { 0, 0, 2, NULL, NULL, 10, { NULL }, 0 },
        { 1, 1, 2, NULL, NULL, 100, { NULL }, 0 },
        { 2, 0, 2, "art/b.png", NULL, 1, { NULL }, 0 },
        { 3, 0, 2, NULL, NULL, 3, { "a.txt", "art/b.png", "b" }, 3 },
    };
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++)
        for (int a = A_NONE + 1; a < A_LAST; a++) {
            int tried = 0;
            for (uint32_t mx = 1; mx <= 9; mx += 4) {
                cn_buf_t got = { 0 };
                bool more = false, edited = false;
                cn_err_t err = run_edit(&qs[i], mx, a, &got, &more, NULL, &edited);
                if (!edited) {
                    /* a replay or an omission needs two fragments */
                    CN_CHECK(a == A_REPLAY || a == A_SKIP_FRAGMENT);
                    CN_CHECK_EQ(err, 0);
                } else {
                    tried++;
                    if (err >= 0)
                        fprintf(stderr, "# query %zu attack %d max %u verified\n", i, a, mx);
                    CN_CHECK(err < 0);
                    CN_CHECK_EQ(got.len, 0);
                }
                cn_buf_free(&got);
            }
            CN_CHECK(tried > 0); /* every edit applied at least once */
        }
}

/* Roots that are not the snapshot's: the first fragment fails. */
static void test_wrong_roots(void)
{
    query_t x = { 0, 0, 2, NULL, NULL, 100, { NULL }, 0 };
    rows_t rows = { { 0 }, 0 };
    bool more;
    cn_digest_t cr, rr, cr1, rr1;
    roots(&x, &rows, &more, &cr, &rr);
    query_t x1 = x;
    x1.change = 1;
    roots(&x1, &rows, &more, &cr1, &rr1);
    cn_buf_free(&rows.rows);
    /* trusting change 1's roots while the server proves change 2 */
    cn_tree_verify_t *v = verifier(&x, &cr1, &rr1);
    prod_t pd = { 0, A_NONE, 0, { 0 }, NULL, false };
    CN_CHECK(cn_tree_verify_page(v, call, &pd) < 0);
    CN_CHECK(cn_tree_verify_value(v, 0) == NULL);
    cn_tree_verify_free(v);
    cn_buf_free(&pd.last);
}

/* A fragment fed after completion, and a fragment fed twice, fail. */
static void test_surplus_fragments(void)
{
    query_t x = { 0, 0, 2, "art", NULL, 100, { NULL }, 0 };
    rows_t rows = { { 0 }, 0 };
    bool more;
    cn_digest_t cr, rr;
    roots(&x, &rows, &more, &cr, &rr);
    cn_buf_free(&rows.rows);
    cn_tree_verify_t *v = verifier(&x, &cr, &rr);
    prod_t pd = { 0, A_NONE, 0, { 0 }, NULL, false };
    cn_buf_t req = { 0 }, rep = { 0 };
    CN_CHECK_EQ(cn_tree_verify_request(v, &req), 0);
    CN_CHECK_EQ(call(&pd, req.data, req.len, &rep), 0);
    CN_CHECK_EQ(cn_tree_verify_feed(v, rep.data, rep.len), 0);
    CN_CHECK(cn_tree_verify_done(v));
    CN_CHECK(cn_tree_verify_feed(v, rep.data, rep.len) < 0); /* surplus */
    CN_CHECK(cn_tree_verify_value(v, 0) == NULL);
    cn_tree_verify_free(v);
    cn_buf_free(&req);
    cn_buf_free(&rep);
    cn_buf_free(&pd.last);
}

/* Hand-built: the empty tree of 10.5 (its root node and roots from the
 * document), proved by the root alone; with a surplus node it fails. */
static void test_empty_tree_by_hand(void)
{
    /* 01 0000 00, three u64 0, u16 lo 0, u16 hi 0, u16 children 0 */
    uint8_t root[1 + 2 + 1 + 24 + 2 + 2 + 2];
    memset(root, 0, sizeof root);
    root[0] = 1;
    cn_digest_t cr, rr;
    cn_digest_parse("c6192c01cd0b847dfc11a4890be6e81fdedbda5ae0da0fb50b4df794ac7206f3", 64, &cr);
    cn_digest_parse("fb3ee5fdbecbdf20bcb365f4b8ecc2cebcbac576873c230771ff368588c5ada2", 64, &rr);
    query_t x = { 0, 0, 0, NULL, NULL, 100, { NULL }, 0 };
    for (int surplus = 0; surplus < 2; surplus++) {
        cn_tree_verify_t *v = verifier(&x, &cr, &rr);
        cn_buf_t items = { 0 }, rep = { 0 };
        for (int i = 0; i <= surplus; i++)
            CN_CHECK_EQ(cn_scribe_enc_tree_proof_node(&items, LE, root, sizeof root), 0);
        CN_CHECK_EQ(cn_scribe_enc_tree_proof_resp(&rep, LE, &cr, &rr, (uint32_t)surplus + 1,
                                                  items.data, items.len),
                    0);
        cn_err_t err = cn_tree_verify_feed(v, rep.data, rep.len);
        uint32_t n = 9;
        bool more = true;
        if (!surplus) {
            CN_CHECK_EQ(err, 0);
            CN_CHECK_EQ(cn_tree_verify_result(v, &n, &more), 0);
            CN_CHECK_EQ(n, 0);
            CN_CHECK(!more);
        } else {
            CN_CHECK(err < 0);
        }
        cn_tree_verify_free(v);
        cn_buf_free(&items);
        cn_buf_free(&rep);
    }
}

/* ---- hand-built trees: canonical except for one defect each ------------------------------- */
typedef struct {
    const char *prefix;
    uint8_t state; /* CN_REPOS_NONE / LIVE / TOMBSTONE */
    uint64_t entries, live, highest;
    const char *lo, *hi;
} hnode_t;

/* Appends a node encoding; kids: n child records (byte, node, its summaries). */
static void henc(cn_buf_t *b, const hnode_t *h, uint16_t n, const uint8_t *bytes,
                 const cn_buf_t *kids, const hnode_t *ksum)
{
    size_t pl = strlen(h->prefix);
    cn_buf_put_u8(b, 1);
    cn_buf_put_u16le(b, (uint16_t)pl);
    cn_buf_append(b, h->prefix, pl);
    cn_buf_put_u8(b, h->state);
    if (h->state != CN_REPOS_NONE)
        cn_buf_put_u64le(b, 1);
    if (h->state == CN_REPOS_LIVE) {
        uint8_t m[32];
        memset(m, 0x5a, 32);
        cn_buf_append(b, m, 32);
        cn_buf_put_u64le(b, 3);
        cn_buf_put_u8(b, 0);
    }
    cn_buf_put_u64le(b, h->entries);
    cn_buf_put_u64le(b, h->live);
    cn_buf_put_u64le(b, h->highest);
    cn_buf_put_u16le(b, (uint16_t)strlen(h->lo));
    cn_buf_append(b, h->lo, strlen(h->lo));
    cn_buf_put_u16le(b, (uint16_t)strlen(h->hi));
    cn_buf_append(b, h->hi, strlen(h->hi));
    cn_buf_put_u16le(b, n);
    for (uint16_t i = 0; i < n; i++) {
        cn_digest_t d;
        cn_repos_node_hash(kids[i].data, kids[i].len, &d);
        cn_buf_put_u8(b, bytes[i]);
        cn_buf_append(b, d.b, 32);
        cn_buf_put_u64le(b, ksum[i].entries);
        cn_buf_put_u64le(b, ksum[i].live);
        cn_buf_put_u64le(b, ksum[i].highest);
    }
}

/* A root over two leaves "a.txt" and "b", one defect (0: none): the proof
 * of the whole live range, trusted at the root's hash.  Returns the feed's
 * result; *n the values when it verified. */
static cn_err_t hand_tree(int defect, uint32_t *n)
{
    hnode_t la = { "a.txt", CN_REPOS_LIVE, 1, 1, 1, "", "" };
    hnode_t lb = { "b", CN_REPOS_LIVE, 1, 1, 1, "", "" };
    hnode_t root = { "", CN_REPOS_NONE, 2, 2, 1, "a.txt", "b" };
    hnode_t sums[2] = { la, lb };
    uint8_t bytes[2] = { 'a', 'b' };
    switch (defect) {
    case 1: root.live = 3; break;       /* own summary not the children's sum */
    case 2: sums[1].highest = 0; break; /* parent's record of a child differs */
    case 3: bytes[0] = 'c'; break;      /* record byte not the child's first */
    case 4: root.hi = "c"; break;       /* hi not the last child's key */
    case 5: lb.prefix = "b/"; break;    /* an entry at a non-canonical path */
    case 6:
        bytes[0] = 'b';
        bytes[1] = 'a';
        break;                  /* children out of order */
    case 7: la.lo = "x"; break; /* a leaf with a bound */
    case 8:
        root.state = CN_REPOS_LIVE;
        root.entries = 3;
        root.live = 3;
        break; /* root entry */
    default: break;
    }
    cn_buf_t kids[2] = { { 0 }, { 0 } }, rb = { 0 }, items = { 0 }, rep = { 0 };
    henc(&kids[0], defect == 6 ? &lb : &la, 0, NULL, NULL, NULL);
    henc(&kids[1], defect == 6 ? &la : &lb, 0, NULL, NULL, NULL);
    henc(&rb, &root, 2, bytes, kids, sums);
    cn_digest_t rr, cr;
    cn_repos_node_hash(rb.data, rb.len, &rr);
    memset(cr.b, 7, 32);
    cn_scribe_enc_tree_proof_node(&items, LE, rb.data, rb.len);
    cn_scribe_enc_tree_proof_node(&items, LE, kids[0].data, kids[0].len);
    cn_scribe_enc_tree_proof_node(&items, LE, kids[1].data, kids[1].len);
    cn_scribe_enc_tree_proof_resp(&rep, LE, &cr, &rr, 3, items.data, items.len);
    query_t x = { 0, 0, 1, NULL, NULL, 10, { NULL }, 0 };
    cn_tree_verify_t *v = verifier(&x, &cr, &rr);
    cn_err_t err = cn_tree_verify_feed(v, rep.data, rep.len);
    bool more;
    if (err >= 0 && cn_tree_verify_result(v, n, &more) < 0)
        err = CN_E_INVALID; /* fed whole yet not done */
    cn_tree_verify_free(v);
    cn_buf_free(&kids[0]);
    cn_buf_free(&kids[1]);
    cn_buf_free(&rb);
    cn_buf_free(&items);
    cn_buf_free(&rep);
    return err;
}

/* Trees whose root the caller trusts but which break a rule of the node
 * format: invalid summaries, records, bounds, order or shape are refused
 * even though every hash matches. */
static void test_hand_built_defects(void)
{
    uint32_t n = 0;
    CN_CHECK_EQ(hand_tree(0, &n), 0);
    CN_CHECK_EQ(n, 2);
    for (int d = 1; d <= 8; d++) {
        cn_err_t err = hand_tree(d, &n);
        if (err >= 0)
            fprintf(stderr, "# defect %d verified\n", d);
        CN_CHECK(err < 0);
    }
}

/* An all-deleted tree: a live range is its root alone; a changed range
 * proves the tombstones. */
static void test_all_deleted(void)
{
    env_t keep = E;
    env_open(&E);
    cn_digest_t m = put_file(&E, "x");
    cn_repos_change_t c1[] = { ch(CN_REPOS_ADD, "p/q", &m), ch(CN_REPOS_ADD, "r", &m) };
    cn_repos_change_t c2[] = { ch(CN_REPOS_DELETE, "p/q", NULL), ch(CN_REPOS_DELETE, "r", NULL) };
    cn_repos_submit_t s;
    cn_repos_outcome_t o;
    cn_digest_t cs = put_cs(&E, c1, 2);
    submit_req(&E, &s, 1, 0, &cs, "add");
    CN_CHECK_EQ(submit(&E, &s, &o, NULL), 0);
    cn_repos_outcome_free(&o);
    cs = put_cs(&E, c2, 2);
    submit_req(&E, &s, 2, 1, &cs, "del");
    CN_CHECK_EQ(submit(&E, &s, &o, NULL), 0);
    cn_repos_outcome_free(&o);
    query_t live = { 0, 0, 2, NULL, NULL, 100, { NULL }, 0 };
    cn_buf_t got = { 0 };
    bool more = true;
    uint32_t frags = 0;
    CN_CHECK_EQ(run(&live, 0, A_NONE, &got, &more, &frags), 0);
    CN_CHECK_EQ(got.len, 0);
    CN_CHECK(!more);
    CN_CHECK_EQ(frags, 1);
    query_t chg = { 1, 0, 2, NULL, NULL, 100, { NULL }, 0 };
    CN_CHECK_EQ(run(&chg, 1, A_NONE, &got, &more, NULL), 0);
    cn_buf_append(&got, "", 1);
    CN_CHECK_STR((const char *)got.data, "-p/q\n-r\n");
    cn_buf_free(&got);
    env_close(&E);
    E = keep;
}

/* A continuation whose edge names no node is refused by the producer. */
static void test_bad_edge(void)
{
    cn_repos_proof_req_t q;
    memset(&q, 0, sizeof q);
    memcpy(q.repo, E.repo.id, 16);
    memcpy(q.branch, E.repo.main_branch, 16);
    q.change = 2;
    q.query.limit = 10;
    q.query.prefix = (const uint8_t *)"";
    q.remaining = 3;
    q.edge = (const uint8_t *)"zz";
    q.edge_len = 2;
    struct {
        cn_buf_t items;
        uint32_t count;
    } acc = { { 0 }, 0 };
    cn_digest_t cr, rr;
    cn_repos_req_t rq = trusted();
    CN_CHECK_EQ(cn_repos_tree_proof(E.r, &rq, &q, add_node, &acc, &cr, &rr), CN_E_INVALID);
    CN_CHECK_EQ(rq.fail.detail, CN_REPOS_E_MALFORMED);
    q.remaining = 12; /* past limit + 1 */
    q.edge = (const uint8_t *)"a";
    q.edge_len = 1;
    CN_CHECK_EQ(cn_repos_tree_proof(E.r, &rq, &q, add_node, &acc, &cr, &rr), CN_E_INVALID);
    cn_buf_free(&acc.items);
}

/* Point requests split to fit 1 MiB with room for a continuation: each part
 * encodes, as a continuation at the longest edge, within the bound. */
static void test_point_split(void)
{
    static char big[4096][8193];
    static cn_scribe_str_t paths[4096];
    for (int i = 0; i < 4096; i++) {
        snprintf(big[i], sizeof big[i], "%05d/", i);
        memset(big[i] + 6, 'x', 8186);
        big[i][8192] = 0;
        paths[i] = (cn_scribe_str_t){ (const uint8_t *)big[i], 8192 };
    }
    uint32_t first = cn_tree_verify_paths_fit(47, paths, 0, 4096), parts = 0;
    CN_CHECK(first > 100 && first < 128); /* (1 MiB - 8,2xx) / 8,194 */
    static char edge[8193];
    memset(edge, 'x', 8192);
    for (uint32_t at = 0; at < 4096; parts++) {
        uint32_t k = cn_tree_verify_paths_fit(47, paths, at, 4096);
        CN_CHECK(k >= 1);
        if (k < 1)
            break;
        cn_buf_t pg = { 0 }, b = { 0 };
        query_t x = { 3, 0, 1, NULL, NULL, k, { NULL }, 0 };
        page_bytes(&x, &pg);
        CN_CHECK_EQ(pg.len, 47);
        cn_scribe_tree_proof_req_t q = { .page = { pg.data, (uint32_t)pg.len },
                                         .selector = 3,
                                         .path_count = k,
                                         .path_list = paths + at,
                                         .continuation = true,
                                         .edge = { (const uint8_t *)edge, 8192 },
                                         .remaining = 1 };
        CN_CHECK_EQ(cn_scribe_enc_tree_proof_req(&b, LE, &q), 0);
        CN_CHECK(b.len <= CN_SCRIBE_MAX_PROOF_REQ);
        cn_buf_free(&pg);
        cn_buf_free(&b);
        at += k;
    }
    CN_CHECK(parts >= 4096 / 128);
    /* small paths: the 4,096-path limit decides */
    static cn_scribe_str_t small[5000];
    for (int i = 0; i < 5000; i++)
        small[i] = cn_scribe_cstr("a");
    CN_CHECK_EQ(cn_tree_verify_paths_fit(47, small, 0, 5000), 4096);
    CN_CHECK_EQ(cn_tree_verify_paths_fit(47, small, 4096, 5000), 904);
    CN_CHECK_EQ(cn_tree_verify_paths_fit(47, small, 5000, 5000), 0);
}

static void test_setup(void)
{
    build();
}

static void test_teardown(void)
{
    env_close(&E);
}

CN_TEST_MAIN(CN_TEST(test_setup), CN_TEST(test_live_ranges), CN_TEST(test_changed_range),
             CN_TEST(test_points), CN_TEST(test_adversary), CN_TEST(test_wrong_roots),
             CN_TEST(test_surplus_fragments), CN_TEST(test_empty_tree_by_hand),
             CN_TEST(test_hand_built_defects), CN_TEST(test_all_deleted), CN_TEST(test_bad_edge),
             CN_TEST(test_point_split), CN_TEST(test_teardown))
