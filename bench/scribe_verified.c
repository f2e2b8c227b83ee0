/* bench_scribe_verified: one sync of a large tree, plain against verified,
 * through libcairn's Scribe client (bench/scribe_verified.py builds the
 * repository and runs it).
 *
 *   bench_scribe_verified ENDPOINT REPO [ROUNDS]
 *
 * REPO's main branch must hold at least two changes; the sync measured goes
 * from the one before the head (B) to the head (H), as a workspace's sync
 * does after one submit elsewhere, each way on a connection opened for it:
 *
 *   plain     log (the head), every tree_page page of H's snapshot
 *             (cn_scribe_client_tree, no proof), the entries that differ
 *             from B's listing, their manifests and chunks (get_objects);
 *   verified  log, the head commit and its first parents down to B's commit
 *             (the anchor) fetched by id and hashed, every page of H proved
 *             through tree_proof against the head commit's roots
 *             (cn_scribe_client_tree_verified), the same diff and fetch.
 *
 * "Plain" is what the client did before syncs were verified: the client
 * library still has the tree_page reader, the workspace no longer uses it.
 * B's listing is read once, untimed.  Each round runs both; the best time
 * of each over the rounds is kept.  Bytes are the client's own counts
 * (cn_scribe_client_bytes: frames both ways, data connections included).
 * Prints "name value unit" lines:
 *   scribe_v_entries, scribe_v_pages        H's live entries, 4,096-entry pages
 *   scribe_v_fetched                        files the sync fetches
 *   scribe_v_plain_sync, _verified_sync     seconds
 *   scribe_v_sync_ratio                     verified / plain (target <= 1.2)
 *   scribe_v_plain_list, _verified_list     seconds of the listing alone
 *   scribe_v_plain_bytes, _verified_bytes   bytes on the wire of the sync
 *   scribe_v_bytes_ratio                    verified / plain
 *   scribe_v_page_bytes                     tree_page bytes received per page
 *   scribe_v_proof_bytes                    tree_proof bytes received per page
 *   scribe_v_proof_sent                     tree_proof bytes sent per page
 *   scribe_v_fragments                      tree_proof replies per page
 *   scribe_v_commits                        commits the verified walk fetched
 * It never writes files: fetched bytes are counted and dropped. */
#include "cairn/repos_model.h"
#include "cairn/scribe.h"
#include "cairn/scribe_client.h"
#include "cairn/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct listing {
    char **path;
    cn_digest_t *manifest;
    size_t n, cap;
} listing_t;

typedef struct figures {
    double sync_s, list_s;
    uint64_t bytes, list_recv, list_sent;
    uint32_t fragments, commits;
    size_t entries, fetched;
} figures_t;

static void die(const char *what, cn_err_t e, const cn_scribe_cerr_t *err)
{
    fprintf(stderr, "bench_scribe_verified: %s: %s\n", what,
            err && err->message[0] ? err->message : cn_strerror(e));
    exit(1);
}

static int collect(void *ctx, const cn_scribe_client_entry_t *e)
{
    listing_t *l = ctx;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4096;
        char **p = realloc(l->path, cap * sizeof *p);
        cn_digest_t *m = p ? realloc(l->manifest, cap * sizeof *m) : NULL;
        if (p)
            l->path = p;
        if (!m)
            return -ENOMEM;
        l->manifest = m;
        l->cap = cap;
    }
    if (!(l->path[l->n] = strdup(e->path)))
        return -ENOMEM;
    l->manifest[l->n++] = e->manifest;
    return 0;
}

static void listing_free(listing_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->path[i]);
    free(l->path);
    free(l->manifest);
    memset(l, 0, sizeof *l);
}

/* The manifests of now's entries that before lacks or holds with another
 * manifest (both in path order, as the tree hands them out). */
static size_t diff(const listing_t *before, const listing_t *now, cn_scribe_client_ref_t *out)
{
    size_t k = 0, j = 0;
    for (size_t i = 0; i < now->n; i++) {
        while (j < before->n && strcmp(before->path[j], now->path[i]) < 0)
            j++;
        bool same = j < before->n && !strcmp(before->path[j], now->path[i]) &&
                    !memcmp(before->manifest[j].b, now->manifest[i].b, 32);
        if (!same)
            out[k++] = (cn_scribe_client_ref_t){ CN_REPOS_MANIFEST, now->manifest[i] };
    }
    return k;
}

typedef struct manifests {
    cn_buf_t *enc;
} manifests_t;

static cn_err_t manifest_sink(void *ctx, size_t i, bool present, const void *p, size_t n, bool last)
{
    (void)last;
    manifests_t *m = ctx;
    return present ? cn_buf_append(&m->enc[i], p, n) : CN_E_NOT_FOUND;
}

static cn_err_t drop_sink(void *ctx, size_t i, bool present, const void *p, size_t n, bool last)
{
    (void)i;
    (void)p;
    (void)last;
    *(uint64_t *)ctx += n;
    return present ? CN_OK : CN_E_NOT_FOUND;
}

/* The changed files' manifests, then their chunks (counted, dropped). */
static void fetch(cn_scribe_client_t *cl, const uint8_t repo[16],
                  const cn_scribe_client_ref_t *mrefs, size_t n)
{
    cn_scribe_cerr_t err = { 0 };
    manifests_t m = { calloc(n ? n : 1, sizeof(cn_buf_t)) };
    if (!m.enc)
        die("fetch", -ENOMEM, NULL);
    cn_err_t e = n ? cn_scribe_client_get(cl, repo, mrefs, n, manifest_sink, &m, &err) : CN_OK;
    if (e < 0)
        die("manifests", e, &err);
    size_t total = 0;
    cn_repos_manifest_t *man = calloc(n ? n : 1, sizeof *man);
    for (size_t i = 0; i < n; i++) {
        if (cn_repos_manifest_parse(m.enc[i].data, m.enc[i].len, &man[i]) < 0)
            die("a manifest", CN_E_INVALID, NULL);
        total += man[i].count;
    }
    cn_scribe_client_ref_t *refs = malloc((total ? total : 1) * sizeof *refs);
    size_t at = 0;
    for (size_t i = 0; i < n; i++)
        for (uint32_t c = 0; c < man[i].count; c++) {
            cn_repos_chunk_ref_t r;
            cn_repos_manifest_chunk(&man[i], c, &r);
            refs[at++] = (cn_scribe_client_ref_t){ CN_REPOS_CHUNK, r.id };
        }
    uint64_t bytes = 0;
    if (total && (e = cn_scribe_client_get(cl, repo, refs, total, drop_sink, &bytes, &err)) < 0)
        die("chunks", e, &err);
    for (size_t i = 0; i < n; i++)
        cn_buf_free(&m.enc[i]);
    free(m.enc);
    free(man);
    free(refs);
}

static cn_scribe_client_t *connect_to(const char *ep)
{
    cn_scribe_client_cfg_t cfg = { .endpoint = ep };
    cn_scribe_client_t *cl;
    cn_scribe_cerr_t err = { 0 };
    cn_err_t e = cn_scribe_client_new(&cfg, &cl, &err);
    if (e < 0)
        die(ep, e, &err);
    return cl;
}

static uint64_t wire(const cn_scribe_client_t *cl, uint64_t *recv)
{
    uint64_t s, r;
    cn_scribe_client_bytes(cl, &s, &r);
    if (recv)
        *recv = r;
    return s + r;
}

typedef struct rows {
    cn_scribe_client_logrow_t r[2]; /* newest first */
    int n;
} rows_t;

static int newest(void *ctx, const cn_scribe_client_logrow_t *r)
{
    rows_t *x = ctx;
    if (x->n < 2) {
        x->r[x->n] = *r;
        x->r[x->n].path = x->r[x->n].author = x->r[x->n].message = NULL; /* borrowed */
        x->n++;
    }
    return 0;
}

typedef struct target {
    const char *ep;
    cn_scribe_client_repo_t repo;
    uint64_t head, base;
    cn_digest_t base_commit;
    listing_t before;
} target_t;

/* The head's change through log (limit 1), as both syncs begin. */
static cn_scribe_client_logrow_t head_row(cn_scribe_client_t *cl, const target_t *t)
{
    rows_t rows = { 0 };
    cn_scribe_cerr_t err = { 0 };
    cn_err_t e =
        cn_scribe_client_log(cl, t->repo.id, t->repo.main_branch, NULL, 1, newest, &rows, &err);
    if (e < 0 || rows.n != 1)
        die("log", e < 0 ? e : CN_E_NOT_FOUND, &err);
    return rows.r[0];
}

static void finish(cn_scribe_client_t *cl, const target_t *t, listing_t *now, figures_t *f,
                   int64_t t0, uint64_t b0)
{
    cn_scribe_client_ref_t *refs = malloc((now->n ? now->n : 1) * sizeof *refs);
    f->entries = now->n;
    f->fetched = diff(&t->before, now, refs);
    fetch(cl, t->repo.id, refs, f->fetched);
    f->sync_s = (double)(cn_mono_ns() - t0) / 1e9;
    f->bytes = wire(cl, NULL) - b0;
    free(refs);
    listing_free(now);
}

/* The head commit and first parents down to the base (the anchor): the
 * head's roots into content/revision. */
static uint32_t authenticate(cn_scribe_client_t *cl, const target_t *t,
                             const cn_scribe_client_logrow_t *h, cn_digest_t *content,
                             cn_digest_t *revision)
{
    cn_buf_t enc = { 0 };
    cn_digest_t id = h->commit;
    cn_repos_commit_t c;
    uint32_t fetched = 0;
    for (;;) {
        cn_scribe_cerr_t err = { 0 };
        cn_buf_reset(&enc);
        cn_err_t e = cn_scribe_client_commit(cl, t->repo.id, &id, &enc, &err);
        if (e < 0 || cn_repos_commit_parse(enc.data, enc.len, &c) < 0)
            die("a commit", e < 0 ? e : CN_E_INVALID, &err);
        fetched++;
        if (c.change == h->change) {
            *content = c.content_root;
            *revision = c.revision_root;
        }
        if (c.change <= t->base) {
            if (c.change != t->base || memcmp(id.b, t->base_commit.b, 32))
                die("the anchor", CN_E_CORRUPT, NULL);
            break;
        }
        if (!c.parent_count)
            die("the chain", CN_E_CORRUPT, NULL);
        id = c.parents[0];
    }
    cn_buf_free(&enc);
    return fetched;
}

/* One sync from the base to the head on a new connection, plain or
 * verified (the header comment says what each does). */
static figures_t sync_once(const target_t *t, bool verified)
{
    figures_t f = { 0 };
    cn_scribe_client_t *cl = connect_to(t->ep);
    uint64_t r0, r1, b0 = wire(cl, NULL);
    int64_t t0 = cn_mono_ns();
    cn_scribe_client_logrow_t h = head_row(cl, t);
    cn_digest_t content, revision;
    if (verified)
        f.commits = authenticate(cl, t, &h, &content, &revision);
    listing_t now = { 0 };
    cn_scribe_cerr_t err = { 0 };
    uint64_t s0 = wire(cl, &r0);
    int64_t l0 = cn_mono_ns();
    const uint8_t *repo = t->repo.id, *branch = t->repo.main_branch;
    cn_err_t e = verified
                     ? cn_scribe_client_tree_verified(cl, repo, branch, h.change, "", &content,
                                                      &revision, collect, &now, &f.fragments, &err)
                     : cn_scribe_client_tree(cl, repo, branch, h.change, "", collect, &now, NULL,
                                             NULL, &err);
    if (e < 0)
        die(verified ? "tree_proof" : "tree_page", e, &err);
    f.list_s = (double)(cn_mono_ns() - l0) / 1e9;
    f.list_sent = wire(cl, &r1) - s0 - (r1 - r0);
    f.list_recv = r1 - r0;
    finish(cl, t, &now, &f, t0, b0);
    cn_scribe_client_free(cl);
    return f;
}

static void setup(target_t *t, const char *ep, const char *repo)
{
    memset(t, 0, sizeof *t);
    t->ep = ep;
    cn_scribe_client_t *cl = connect_to(ep);
    cn_scribe_cerr_t err = { 0 };
    cn_err_t e = cn_scribe_client_repo_info(cl, repo, &t->repo, &err);
    if (e < 0)
        die(repo, e, &err);
    rows_t rows = { 0 };
    e = cn_scribe_client_log(cl, t->repo.id, t->repo.main_branch, NULL, 2, newest, &rows, &err);
    if (e < 0 || rows.n != 2)
        die("log (two changes on main are needed)", e < 0 ? e : CN_E_NOT_FOUND, &err);
    t->head = rows.r[0].change;
    t->base = rows.r[1].change;
    t->base_commit = rows.r[1].commit;
    e = cn_scribe_client_tree(cl, t->repo.id, t->repo.main_branch, t->base, "", collect, &t->before,
                              NULL, NULL, &err);
    if (e < 0)
        die("the base listing", e, &err);
    cn_scribe_client_free(cl);
}

static void keep_best(figures_t *best, const figures_t *f)
{
    if (best->sync_s == 0 || f->sync_s < best->sync_s)
        best->sync_s = f->sync_s;
    if (best->list_s == 0 || f->list_s < best->list_s)
        best->list_s = f->list_s;
    double s = best->sync_s, l = best->list_s;
    *best = *f;
    best->sync_s = s;
    best->list_s = l;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_scribe_verified ENDPOINT REPO [ROUNDS]\n");
        return 2;
    }
    int rounds = argc > 3 ? atoi(argv[3]) : 3;
    target_t t;
    setup(&t, argv[1], argv[2]);
    figures_t p = { 0 }, v = { 0 };
    for (int r = 0; r < (rounds > 0 ? rounds : 1); r++) {
        figures_t a = sync_once(&t, false), b = sync_once(&t, true);
        keep_best(&p, &a);
        keep_best(&v, &b);
    }
    double pages = (double)((v.entries + CN_SCRIBE_MAX_PAGE - 1) / CN_SCRIBE_MAX_PAGE);
    pages = pages > 0 ? pages : 1;
    printf("scribe_v_entries %zu entries\n", v.entries);
    printf("scribe_v_pages %.0f pages\n", pages);
    printf("scribe_v_fetched %zu files\n", v.fetched);
    printf("scribe_v_plain_sync %.3f s\n", p.sync_s);
    printf("scribe_v_verified_sync %.3f s\n", v.sync_s);
    printf("scribe_v_sync_ratio %.2f x\n", v.sync_s / p.sync_s);
    printf("scribe_v_plain_list %.3f s\n", p.list_s);
    printf("scribe_v_verified_list %.3f s\n", v.list_s);
    printf("scribe_v_plain_bytes %" PRIu64 " bytes\n", p.bytes);
    printf("scribe_v_verified_bytes %" PRIu64 " bytes\n", v.bytes);
    printf("scribe_v_bytes_ratio %.2f x\n", (double)v.bytes / (double)p.bytes);
    printf("scribe_v_page_bytes %.0f bytes\n", (double)p.list_recv / pages);
    printf("scribe_v_proof_bytes %.0f bytes\n", (double)v.list_recv / pages);
    printf("scribe_v_proof_sent %.0f bytes\n", (double)v.list_sent / pages);
    printf("scribe_v_fragments %.2f n\n", (double)v.fragments / pages);
    printf("scribe_v_commits %u n\n", v.commits);
    listing_free(&t.before);
    return p.entries == v.entries && p.fetched == v.fetched ? 0 : 1;
}
