/* Verified sync (docs/workspace.md, "Verified sync"): the history anchors
 * a workspace keeps per branch in its state, the walk that authenticates a
 * new head against them, and the trusted roots the tree pages of a sync
 * are proved against (scribe_proof.c).
 *
 * An anchor is the last head this workspace authenticated: its change,
 * commit id and roots.  A later head is accepted only when its commit
 * reaches the anchor's through first parents, every commit fetched by id
 * and hashed here (commit ids bind parents and roots, section 9.4 of
 * docs/protocol/scribe.md); otherwise the sync stops as a rollback (a
 * not-local CN_E_CORRUPT, exit 9).  A branch without an anchor is first
 * contact: the server's head is trusted and the caller says so.  A walk of
 * more than two commits is prefetched in batches of up to 4,096: one log
 * page names a batch's commits from the head (then from below the last
 * batch) down, one get_objects fetches them all, and while the walk hashes
 * one batch the next is fetched on a data connection by a thread of its
 * own (pipelined; memory: two batches, however long the history; without
 * a data connection the next batch is fetched once the walk used this one
 * up), and the walk still hashes and checks each (a commit the log did not
 * name, or one the server left out, is fetched alone).  It never
 * moves an anchor itself: the caller records cn__ws_verified_t.head in the
 * state it saves with the files it applied, so both commit at once. */
#include "scribe_int.h"
#include "workspace_int.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- anchors in the state --------------------------------------------------------------- */
cn__ws_anchor_t *cn__ws_anchor_find(cn__ws_state_t *s, const uint8_t branch[16])
{
    for (size_t i = 0; i < s->nanchors; i++)
        if (!memcmp(s->anchors[i].branch, branch, 16))
            return &s->anchors[i];
    return NULL;
}

cn_err_t cn__ws_anchor_set(cn__ws_state_t *s, const cn__ws_anchor_t *a)
{
    cn__ws_anchor_t *have = cn__ws_anchor_find(s, a->branch);
    if (!have) {
        cn__ws_anchor_t *n = realloc(s->anchors, (s->nanchors + 1) * sizeof *n);
        if (!n)
            return -ENOMEM;
        s->anchors = n;
        have = &s->anchors[s->nanchors++];
    }
    *have = *a;
    return CN_OK;
}

void cn__ws_anchor_drop(cn__ws_state_t *s, const uint8_t branch[16])
{
    cn__ws_anchor_t *a = cn__ws_anchor_find(s, branch);
    if (a)
        *a = s->anchors[--s->nanchors];
}

bool cn__ws_anchor_parse(cn__ws_state_t *s, const char *p)
{
    char br[40], cm[72], ct[72], rv[72];
    unsigned long long change;
    cn__ws_anchor_t a;
    if (sscanf(p, "%39s %llu %71s %71s %71s", br, &change, cm, ct, rv) != 5 || strlen(br) != 32 ||
        strlen(cm) != 64 || strlen(ct) != 64 || strlen(rv) != 64 ||
        cn_hex_decode(br, 32, a.branch, 16) < 0 || cn_hex_decode(cm, 64, a.commit.b, 32) < 0 ||
        cn_hex_decode(ct, 64, a.content_root.b, 32) < 0 ||
        cn_hex_decode(rv, 64, a.revision_root.b, 32) < 0)
        return false;
    a.change = change;
    return cn__ws_anchor_set(s, &a) == CN_OK;
}

void cn__ws_anchor_write(FILE *f, const cn__ws_anchor_t *a)
{
    char br[33], cm[65], ct[65], rv[65];
    cn__ws_hex(a->branch, 16, br);
    cn__ws_hex(a->commit.b, 32, cm);
    cn__ws_hex(a->content_root.b, 32, ct);
    cn__ws_hex(a->revision_root.b, 32, rv);
    fprintf(f, "anchor %s %" PRIu64 " %s %s %s\n", br, a->change, cm, ct, rv);
}

/* ---- the commit chain ------------------------------------------------------------------------ */
/* The empty snapshot's roots (change 0; docs/protocol/scribe.md 10.5). */
static void empty_roots(cn_digest_t *content, cn_digest_t *revision)
{
    static const uint8_t root[34] = { 1 }; /* version 1, everything else empty or 0 */
    static const char dom[] = "cairn:content-empty:v1";
    cn_repos_node_hash(root, sizeof root, revision);
    cn_blake3(dom, sizeof dom, content); /* the domain with its NUL */
}

static int newest_row(void *ctx, const cn_scribe_client_logrow_t *r)
{
    cn_scribe_client_logrow_t *out = ctx;
    *out = *r;
    out->path = out->author = out->message = NULL; /* borrowed for the call only */
    return 1;
}

/* ---- the prefetch ------------------------------------------------------------------------------ */
#define WALK_BATCH 4096 /* commits one prefetch names (one log page, one get_objects) */

/* Commits the walk will probably need, by id, their bytes as the server
 * sent them (unchecked until the walk hashes them): one batch at a time,
 * the next fetched only when the walk has used up this one, so memory
 * stays one batch however long the walk. */
typedef struct walk_cache {
    cn_digest_t *ids;
    cn_buf_t *enc;
    size_t n, cap, next; /* next: where the walk's next lookup starts */
    uint64_t low;        /* the oldest change the walk may need */
    uint64_t last;       /* the change of this batch's oldest row (0: none yet) */
    bool more;           /* the batch was full: older commits may follow */
} walk_cache_t;

/* Commits one batch names: WALK_BATCH, or CAIRN_WALK_BATCH (1..4,096) so
 * that a test can cross batches with a short history. */
static size_t walk_batch(void)
{
    const char *v = getenv("CAIRN_WALK_BATCH");
    char *end;
    unsigned long n = v ? strtoul(v, &end, 10) : 0;
    return v && *v && !*end && n >= 1 && n <= WALK_BATCH ? (size_t)n : WALK_BATCH;
}

static int cache_row(void *ctx, const cn_scribe_client_logrow_t *r)
{
    walk_cache_t *c = ctx;
    if (c->n < c->cap) {
        c->ids[c->n++] = r->commit;
        c->last = r->change;
    }
    return 0;
}

static cn_err_t cache_sink(void *ctx, size_t i, bool present, const void *p, size_t n, bool last)
{
    (void)last;
    walk_cache_t *c = ctx;
    return present ? cn_buf_append(&c->enc[i], p, n) : CN_OK; /* left to a single fetch */
}

static void cache_free(walk_cache_t *c)
{
    for (size_t i = 0; c->enc && i < c->cap; i++)
        cn_buf_free(&c->enc[i]);
    free(c->enc);
    free(c->ids);
    memset(c, 0, sizeof *c);
}

/* Fetches the batch below change c->last (0: from the head): at most
 * c->cap commits and no more than the walk can need down to c->low, one
 * log page naming them and one get_objects for them all, replacing the
 * previous batch.  false when it fails (the cache is then empty: the walk
 * fetches one by one). */
static bool cache_batch(cn_scribe_client_t *cl, const cn__ws_state_t *s, walk_cache_t *c)
{
    uint64_t want = c->last ? c->last - c->low : 0; /* rows strictly below last */
    size_t n = c->last && want < c->cap ? (size_t)want : c->cap;
    for (size_t i = 0; i < c->n; i++)
        cn_buf_reset(&c->enc[i]);
    uint64_t before = c->last;
    c->n = c->next = 0;
    c->more = false;
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    cn_scribe_client_ref_t *refs = n ? malloc(n * sizeof *refs) : NULL;
    size_t cap = c->cap;
    c->cap = n; /* cache_row stops at the rows this batch may use */
    bool ok = refs && cn__scribe_client_log_before(cl, s->repo_id, s->branch, before, (uint32_t)n,
                                                   cache_row, c, &serr) >= 0;
    c->cap = cap;
    for (size_t i = 0; ok && i < c->n; i++)
        refs[i] = (cn_scribe_client_ref_t){ CN_REPOS_COMMIT, c->ids[i] };
    ok = ok && c->n && cn_scribe_client_get(cl, s->repo_id, refs, c->n, cache_sink, c, &serr) >= 0;
    free(refs);
    if (!ok) {
        for (size_t i = 0; i < c->n; i++)
            cn_buf_reset(&c->enc[i]);
        c->n = 0;
        return false;
    }
    c->more = c->n == n && c->last > c->low;
    return true;
}

/* The batches of a walk: cur, the one the walk uses, and ahead, the one
 * below it, fetched on conn (a data connection; NULL: none) by thread t
 * while the walk uses cur. */
typedef struct walk_fetch {
    walk_cache_t cur, ahead;
    const cn__ws_state_t *s;
    cn_scribe_client_t *conn;
    pthread_t t;
    bool running, ahead_ok;
} walk_fetch_t;

static bool cache_alloc(walk_cache_t *c, size_t cap, uint64_t low)
{
    c->cap = cap;
    c->low = low;
    c->ids = malloc(cap * sizeof *c->ids);
    c->enc = calloc(cap, sizeof *c->enc);
    return c->ids && c->enc;
}

static void *ahead_run(void *arg)
{
    walk_fetch_t *f = arg;
    f->ahead_ok = cache_batch(f->conn, f->s, &f->ahead);
    return NULL;
}

/* Starts fetching the batch below cur's on the data connection, when
 * older commits may follow and there is one (CAIRN_PROOF_PIPELINE=0: never,
 * for measurement). */
static void ahead_start(cn_scribe_client_t *cl, walk_fetch_t *f)
{
    const char *knob = getenv("CAIRN_PROOF_PIPELINE");
    if (f->running || !f->cur.more || !f->ahead.ids || (knob && !strcmp(knob, "0")))
        return;
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    if (!f->conn && cn__scribe_client_data_conn(cl, 0, &f->conn, &serr) < 0) {
        f->conn = NULL;
        return;
    }
    f->ahead.last = f->cur.last;
    f->running = pthread_create(&f->t, NULL, ahead_run, f) == 0;
}

static void ahead_join(walk_fetch_t *f)
{
    if (f->running)
        pthread_join(f->t, NULL);
    f->running = false;
}

static void fetch_free(walk_fetch_t *f)
{
    ahead_join(f);
    cache_free(&f->cur);
    cache_free(&f->ahead);
}

/* The batch below cur's as cur: the one fetched ahead, or (none, or its
 * fetch failed) fetched now on the control connection. */
static bool next_batch(cn_scribe_client_t *cl, walk_fetch_t *f)
{
    bool ran = f->running;
    ahead_join(f);
    if (!ran || !f->ahead_ok)
        return cache_batch(cl, f->s, &f->cur);
    walk_cache_t t = f->cur;
    f->cur = f->ahead;
    f->ahead = t;
    ahead_start(cl, f);
    return true;
}

/* Prefetches the newest `want` commits of s's branch, down to change low,
 * a batch at a time, the next one ahead.  A failure leaves the cache
 * empty: the walk then fetches one by one. */
static void cache_fill(cn_scribe_client_t *cl, const cn__ws_state_t *s, uint64_t want, uint64_t low,
                       walk_fetch_t *f)
{
    memset(f, 0, sizeof *f);
    f->s = s;
    size_t batch = walk_batch();
    size_t cap = want < batch ? (size_t)want : batch;
    if (!cache_alloc(&f->cur, cap, low) || !cache_batch(cl, s, &f->cur)) {
        fetch_free(f);
        return;
    }
    if (f->cur.more && !cache_alloc(&f->ahead, cap, low))
        cache_free(&f->ahead); /* no memory for a second batch: fetched in turn */
    ahead_start(cl, f);
}

/* The cached bytes of commit id appended to enc: false when not cached.
 * A walk that used up its batch in order (and older commits may follow)
 * moves to the next batch first. */
static bool cache_take(cn_scribe_client_t *cl, walk_fetch_t *f, const cn_digest_t *id,
                       cn_buf_t *enc)
{
    walk_cache_t *c = f ? &f->cur : NULL;
    if (c && c->n && c->next >= c->n && c->more && !next_batch(cl, f))
        return false;
    for (size_t k = 0; c && k < c->n; k++) {
        size_t i = (c->next + k) % c->n;
        if (memcmp(c->ids[i].b, id->b, CN_DIGEST_LEN) != 0 || !c->enc[i].len)
            continue;
        c->next = i + 1;
        return cn_buf_append(enc, c->enc[i].data, c->enc[i].len) >= 0;
    }
    return false;
}

/* Commit id, from cache (may be NULL) or fetched alone, hashed and parsed
 * into *c (enc holds its bytes). */
static cn_err_t fetch_commit(cn_scribe_client_t *cl, const cn__ws_state_t *s, walk_fetch_t *cache,
                             const cn_digest_t *id, cn_buf_t *enc, cn_repos_commit_t *c,
                             cn_ws_error_t *err)
{
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    cn_buf_reset(enc);
    cn_err_t e;
    if (cache_take(cl, cache, id, enc)) {
        cn_digest_t got;
        cn_repos_object_id(CN_REPOS_COMMIT, enc->data, enc->len, &got);
        e = cn_ct_equal(got.b, id->b, CN_DIGEST_LEN) ? CN_OK : CN_E_DIGEST_MISMATCH;
    } else {
        e = cn_scribe_client_commit(cl, s->repo_id, id, enc, &serr);
    }
    if (e == CN_E_DIGEST_MISMATCH)
        return cn__ws_server(err, e, "a commit the server sent does not match its id");
    if (e < 0)
        return cn__ws_fail(err, "fetching a commit", e, &serr);
    if (cn_repos_commit_parse(enc->data, enc->len, c) < 0 ||
        memcmp(c->repository, s->repo_id, 16) != 0)
        return cn__ws_server(err, CN_E_DIGEST_MISMATCH, "a commit the server sent is not valid");
    return CN_OK;
}

static cn_err_t rollback(cn_ws_error_t *err, const cn__ws_state_t *s, const cn__ws_anchor_t *a,
                         uint64_t head)
{
    char cm[65];
    cn__ws_hex(a->commit.b, 32, cm);
    return cn__ws_server(err, CN_E_CORRUPT,
                         "rollback or restore: the head of %s (change %" PRIu64
                         ") does not descend from change %" PRIu64 " (commit %.16s...) that this "
                         "workspace verified; the repository was rolled back or restored from a "
                         "backup, or the server forks its history. Nothing was applied; "
                         "`cairn repo anchor reset` trusts the server's head again",
                         s->branch_name, head, a->change, cm);
}

/* What the walk is looking for and what it found. */
typedef struct walk {
    const cn__ws_anchor_t *anchor; /* NULL: first contact */
    walk_fetch_t *cache;           /* the prefetched commits (may be NULL) */
    uint64_t target;
    bool anchored, found;
    cn_digest_t content, revision; /* the target's, once found */
} walk_t;

/* One commit of the first-parent chain (newest first): the anchor, the
 * target, or a sign of rollback. */
static cn_err_t walk_step(walk_t *w, const cn__ws_state_t *s, const cn_digest_t *id,
                          const cn_repos_commit_t *c, uint64_t head, cn_ws_error_t *err)
{
    if (w->anchor && !w->anchored && c->change <= w->anchor->change) {
        if (c->change < w->anchor->change ||
            !cn_ct_equal(id->b, w->anchor->commit.b, CN_DIGEST_LEN))
            return rollback(err, s, w->anchor, head);
        w->anchored = true;
    }
    if (!w->found && c->change == w->target) {
        w->found = true;
        w->content = c->content_root;
        w->revision = c->revision_root;
    }
    if (!w->found && c->change < w->target)
        return cn__ws_server(err, CN_E_NOT_FOUND, "change %" PRIu64 " is not in the history of %s",
                             w->target, s->branch_name);
    return CN_OK;
}

/* Walks from the head commit (hc, id hid) down first parents until both
 * the anchor and the target are met. */
static cn_err_t walk_chain(cn_scribe_client_t *cl, const cn__ws_state_t *s, walk_t *w,
                           cn_digest_t hid, cn_buf_t *enc, cn_repos_commit_t c, cn_ws_error_t *err)
{
    uint64_t head = c.change;
    cn_digest_t id = hid;
    for (;;) {
        CN_TRY(walk_step(w, s, &id, &c, head, err));
        if ((!w->anchor || w->anchored) && (w->found || w->target == 0))
            return CN_OK;
        if (c.parent_count == 0)
            break;
        uint64_t was = c.change;
        id = c.parents[0];
        CN_TRY(fetch_commit(cl, s, w->cache, &id, enc, &c, err));
        if (c.change >= was)
            return cn__ws_server(err, CN_E_DIGEST_MISMATCH,
                                 "a commit's first parent is not older than the commit");
    }
    /* the repository's first change: nothing older */
    if (w->anchor && !w->anchored && w->anchor->change > 0)
        return rollback(err, s, w->anchor, head);
    if (!w->found && w->target != 0)
        return cn__ws_server(err, CN_E_NOT_FOUND, "change %" PRIu64 " is not in the history of %s",
                             w->target, s->branch_name);
    return CN_OK;
}

cn_err_t cn__ws_verify(cn_scribe_client_t *cl, cn__ws_state_t *s, uint64_t target,
                       cn__ws_verified_t *out, cn_ws_error_t *err)
{
    memset(out, 0, sizeof *out);
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    cn_scribe_client_logrow_t row;
    memset(&row, 0, sizeof row);
    cn_err_t e = cn_scribe_client_log(cl, s->repo_id, s->branch, NULL, 1, newest_row, &row, &serr);
    if (e < 0)
        return cn__ws_fail(err, "reading the branch head", e, &serr);
    walk_t w = {
        cn__ws_anchor_find(s, s->branch), NULL, target, false, false, { { 0 } }, { { 0 } }
    };
    out->first_contact = !w.anchor;
    empty_roots(&w.content, &w.revision);
    if (row.change == 0) { /* no commit: the empty snapshot, nothing to anchor */
        if (w.anchor && w.anchor->change > 0)
            return rollback(err, s, w.anchor, 0);
        if (target != 0)
            return cn__ws_server(err, CN_E_NOT_FOUND, "change %" PRIu64 " is not in %s", target,
                                 s->branch_name);
        out->content = w.content;
        out->revision = w.revision;
        return CN_OK;
    }
    if (target > row.change)
        return cn__ws_server(err, CN_E_NOT_FOUND, "change %" PRIu64 " is newer than the head of %s",
                             target, s->branch_name);
    /* the lowest change the walk must reach (target 0: none but the
     * anchor), hence the commits it may need */
    uint64_t low = target ? target : row.change;
    if (w.anchor && w.anchor->change < low)
        low = w.anchor->change;
    walk_fetch_t cache;
    memset(&cache, 0, sizeof cache);
    if (low <= row.change && row.change - low + 1 > 2) {
        cache_fill(cl, s, row.change - low + 1, low, &cache);
        w.cache = &cache;
    }
    cn_buf_t enc = { 0 };
    cn_repos_commit_t c;
    if ((e = fetch_commit(cl, s, w.cache, &row.commit, &enc, &c, err)) == CN_OK &&
        c.change != row.change)
        e = cn__ws_server(err, CN_E_DIGEST_MISMATCH, "the head commit is not change %" PRIu64,
                          row.change);
    if (e == CN_OK) {
        out->head =
            (cn__ws_anchor_t){ { 0 }, c.change, row.commit, c.content_root, c.revision_root };
        memcpy(out->head.branch, s->branch, 16);
        e = walk_chain(cl, s, &w, row.commit, &enc, c, err);
    }
    cn_buf_free(&enc);
    fetch_free(&cache);
    out->has_head = e == CN_OK;
    out->content = w.content;
    out->revision = w.revision;
    return e;
}

/* ---- anchor reset ------------------------------------------------------------------------------- */
static cn_err_t reset_verb(cn_scribe_client_t *cl, cn__ws_state_t *s, const cn_ws_opts_t *o,
                           void *arg, cn_ws_error_t *err)
{
    (void)o;
    cn_ws_anchor_t *res = arg;
    cn_scribe_client_repo_t r;
    CN_TRY(cn__ws_repo(cl, s, &r, err));
    cn__ws_anchor_drop(s, s->branch);
    cn__ws_verified_t v;
    CN_TRY(cn__ws_verify(cl, s, 0, &v, err));
    if (v.has_head && cn__ws_anchor_set(s, &v.head) < 0)
        return cn__ws_file_fail(err, "out of memory for", s->dir, ENOMEM);
    /* the files were checked out under the old anchor: the next sync
     * re-checks every one against the new head (change 0 differs from any) */
    s->change = 0;
    CN_TRY(cn__ws_state_save(s, err));
    res->change = v.has_head ? v.head.change : 0;
    cn__ws_hex(v.head.commit.b, 32, res->commit);
    return CN_OK;
}

cn_err_t cn_ws_anchor_reset(const char *dir, const cn_ws_opts_t *opts, cn_ws_anchor_t *res,
                            cn_ws_error_t *err)
{
    cn_ws_error_t scratch;
    cn_ws_anchor_t rscratch;
    err = cn__ws_begin(err, &scratch);
    res = res ? res : &rscratch;
    memset(res, 0, sizeof *res);
    return cn__ws_run(dir, cn__ws_opts(opts), reset_verb, res, err);
}
