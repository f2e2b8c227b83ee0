/* merge_read tag 4: the base-file origin of paths, from the file_lineage
 * index (service_lineage.c) alone — never from names or content.
 *
 * A base file is a revision the base snapshot holds: (change, path) with the
 * base snapshot's entry at path written by that change.  For a path of the
 * selected snapshot, the walk starts at the revision the snapshot holds
 * there and follows predecessors (selected-side history); a base file met
 * is an origin and is not walked past.  From every revision met that is not
 * a base file it also follows successors no newer than the base revision:
 * a successor path ends at a base file only through revisions that base
 * file descends from, all inside the base's commit ancestry, so this finds
 * bases reached by merges or moves that kept other bytes or names, while
 * other branches' and later revisions establish nothing.  One origin path is
 * unique; two or more distinct ones are several (automatic matching is
 * unsafe).  The whole batch shares one budget of lineage visits and path
 * bytes; past it the read fails, it never answers short. */
#include "service_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define PATH_BYTES_BUDGET (32u << 20)

/* ---- a set of revisions ------------------------------------------------------------- */
typedef struct node {
    uint64_t change;
    uint8_t *path; /* owned; NULL marks a free slot */
    size_t n;
} node_t;

typedef struct nodeset {
    node_t *slots;
    size_t used, cap;
} nodeset_t;

static uint64_t node_hash(uint64_t change, const uint8_t *p, size_t n)
{
    uint64_t h = 1469598103934665603ull ^ change;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

static void nodeset_free(nodeset_t *s)
{
    for (size_t i = 0; i < s->cap; i++)
        free(s->slots[i].path);
    free(s->slots);
    memset(s, 0, sizeof *s);
}

static node_t *slot_for(node_t *slots, size_t cap, uint64_t change, const uint8_t *p, size_t n)
{
    size_t k = (size_t)node_hash(change, p, n) & (cap - 1);
    while (slots[k].path &&
           !(slots[k].change == change && slots[k].n == n && memcmp(slots[k].path, p, n) == 0))
        k = (k + 1) & (cap - 1);
    return &slots[k];
}

/* Adds (change, p): *added when it was not there; *stored is the set's copy. */
static cn_err_t nodeset_add(nodeset_t *s, uint64_t change, const uint8_t *p, size_t n, bool *added,
                            const node_t **stored)
{
    if ((s->used + 1) * 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        node_t *slots = calloc(cap, sizeof *slots);
        if (!slots)
            return -ENOMEM;
        for (size_t i = 0; i < s->cap; i++)
            if (s->slots[i].path)
                *slot_for(slots, cap, s->slots[i].change, s->slots[i].path, s->slots[i].n) =
                    s->slots[i];
        free(s->slots);
        s->slots = slots;
        s->cap = cap;
    }
    node_t *slot = slot_for(s->slots, s->cap, change, p, n);
    *added = slot->path == NULL;
    if (*added) {
        if (!(slot->path = malloc(n ? n : 1)))
            return -ENOMEM;
        memcpy(slot->path, p, n);
        slot->change = change;
        slot->n = n;
        s->used++;
    }
    *stored = slot;
    return CN_OK;
}

/* ---- the walk ---------------------------------------------------------------------------- */
/* One batch: the lineage to read, the base snapshot, the shared budget, and
 * for the path being walked its queue (revisions by value: their paths are
 * owned by the sets, whose slots move as they grow), its visited revisions
 * and the distinct origins found (up to two). */
typedef struct walk {
    cn_meta_txn_t *txn;
    cn_repos_req_t *rq;
    const uint8_t *repo;
    cn__ptree_t *base;
    uint64_t base_rev;
    uint64_t visits, bytes;
    nodeset_t back, fwd;
    node_t *queue;
    size_t qhead, qlen, qcap;
    uint32_t norigins;
    node_t origin[2];
} walk_t;

static cn_err_t spend(walk_t *w, size_t bytes)
{
    w->visits++;
    w->bytes += bytes;
    if (w->visits <= CN_REPOS_HISTORY_BUDGET && w->bytes <= PATH_BYTES_BUDGET)
        return CN_OK;
    return cn__rfail(w->rq, CN_E_LIMIT, CN_REPOS_E_LIMIT_EXCEEDED,
                     "the origin read passed its budget of %u lineage visits or 32 MiB of paths",
                     CN_REPOS_HISTORY_BUDGET);
}

/* Queues (change, p) unless set has seen it. */
static cn_err_t visit(walk_t *w, nodeset_t *set, uint64_t change, const uint8_t *p, size_t n)
{
    const node_t *stored = NULL;
    bool added = false;
    CN_TRY(nodeset_add(set, change, p, n, &added, &stored));
    if (!added)
        return CN_OK;
    if (w->qlen == w->qcap) {
        size_t cap = w->qcap ? w->qcap * 2 : 64;
        node_t *q = realloc(w->queue, cap * sizeof *q);
        if (!q)
            return -ENOMEM;
        w->queue = q;
        w->qcap = cap;
    }
    w->queue[w->qlen++] = *stored;
    return CN_OK;
}

/* Whether the base snapshot holds revision nd; an origin is noted once. */
static cn_err_t base_file(walk_t *w, const node_t *nd, bool *is)
{
    bool found = false;
    cn_repos_entry_t e;
    CN_TRY(cn__ptree_get(w->base, nd->path, nd->n, &found, &e));
    *is = found && e.change == nd->change;
    if (!*is)
        return CN_OK;
    for (uint32_t i = 0; i < w->norigins; i++)
        if (w->origin[i].n == nd->n && memcmp(w->origin[i].path, nd->path, nd->n) == 0)
            return CN_OK;
    if (w->norigins < 2)
        w->origin[w->norigins++] = *nd;
    return CN_OK;
}

/* The predecessors (forward false) or the successors no newer than the base
 * revision (forward true) of nd that its set has not seen, each queued. */
static cn_err_t neighbours(walk_t *w, const node_t *nd, bool forward)
{
    cn_meta_stmt_t *st = NULL;
    CN_TRY(spend(w, 0));
    if (forward)
        CN_TRY(cn_meta_queryf(w->txn, &st, cn__sql_repos[CN_SQL_REPOS_LINEAGE_SUCCS], "bibi",
                              CN__ARG_ID(w->repo), (int64_t)nd->change, (const void *)nd->path,
                              nd->n, (int64_t)w->base_rev));
    else
        CN_TRY(cn_meta_queryf(w->txn, &st, cn__sql_repos[CN_SQL_REPOS_LINEAGE_PREDS], "bib",
                              CN__ARG_ID(w->repo), (int64_t)nd->change, (const void *)nd->path,
                              nd->n));
    cn_err_t err;
    while ((err = cn_meta_step(st)) == CN_META_ROW) {
        size_t n = 0;
        const uint8_t *p = cn_meta_column_blob(st, 1, &n);
        if (!p) {
            err = CN_E_CORRUPT;
            break;
        }
        if ((err = spend(w, n)) < 0 ||
            (err = visit(w, forward ? &w->fwd : &w->back, (uint64_t)cn_meta_column_int64(st, 0), p,
                         n)) < 0)
            break;
    }
    cn_meta_finish(st);
    return err == CN_META_DONE ? CN_OK : err;
}

/* Walks the queue from qhead, expanding every revision that is not a base
 * file, until it ends or two origins are found. */
static cn_err_t run_queue(walk_t *w, bool forward)
{
    while (w->qhead < w->qlen && w->norigins < 2) {
        node_t nd = w->queue[w->qhead++];
        bool is = false;
        CN_TRY(base_file(w, &nd, &is));
        if (!is)
            CN_TRY(neighbours(w, &nd, forward));
    }
    return CN_OK;
}

/* The origins of the revision (change, p): backward, then forward from
 * every revision the backward walk met that is not a base file. */
static cn_err_t walk_from(walk_t *w, uint64_t change, const uint8_t *p, size_t n)
{
    w->qhead = w->qlen = 0;
    w->norigins = 0;
    CN_TRY(visit(w, &w->back, change, p, n));
    CN_TRY(run_queue(w, false));
    size_t end = w->qlen;
    for (size_t i = 0; i < end && w->norigins < 2; i++) {
        node_t nd = w->queue[i];
        bool is = false;
        CN_TRY(base_file(w, &nd, &is));
        if (!is)
            CN_TRY(visit(w, &w->fwd, nd.change, nd.path, nd.n));
    }
    return run_queue(w, true);
}

/* ---- the read ------------------------------------------------------------------------------ */
typedef struct origins_read {
    cn_repos_req_t *rq;
    const uint8_t *branch, *base_branch;
    uint64_t revision, base_revision;
    const cn_repos_pathv_t *paths;
    uint32_t n;
    cn_repos_origin_t *out;
    cn_buf_t *arena;
} origins_read_t;

/* The origin of each path into or->out, the walk's sets reset per path. */
static cn_err_t origins_of(origins_read_t * or, walk_t *w, cn__ptree_t *mine)
{
    cn_err_t err = CN_OK;
    for (uint32_t i = 0; err >= 0 && i < or->n; i++) {
        const cn_repos_pathv_t *p = & or->paths[i];
        cn_repos_origin_t *o = & or->out[i];
        bool found = false;
        cn_repos_entry_t e;
        memset(o, 0, sizeof *o);
        if ((err = cn__ptree_get(mine, p->p, p->n, &found, &e)) < 0 || !found)
            continue;
        err = walk_from(w, e.change, p->p, p->n);
        if (err >= 0 && w->norigins == 1) {
            o->kind = CN_REPOS_ORIGIN_UNIQUE;
            o->off = or->arena->len;
            o->len = w->origin[0].n;
            err = cn_buf_append(or->arena, w->origin[0].path, w->origin[0].n);
        } else if (w->norigins == 2) {
            o->kind = CN_REPOS_ORIGIN_SEVERAL;
        }
        nodeset_free(&w->back);
        nodeset_free(&w->fwd);
    }
    return err;
}

static cn_err_t origins_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    origins_read_t * or = ctx;
    const uint8_t *id = repo->info.id;
    cn_repos_branch_t b;
    cn_digest_t rev, content;
    cn__ptree_t *mine = NULL;
    walk_t w = { .txn = txn, .rq = or->rq, .repo = id, .base_rev = or->base_revision };
    cn_buf_reset(or->arena);
    CN_TRY(cn__branch_load(txn, or->rq, id, or->branch, &b));
    CN_TRY(cn__branch_load(txn, or->rq, id, or->base_branch, &b));
    CN_TRY(cn__schema_check(txn, or->rq, id));
    cn_err_t err = cn__snapshot_open(txn, or->rq, id, or->branch, or->revision, or->revision, &rev,
                                     &content, &mine);
    if (err >= 0)
        err = cn__snapshot_open(txn, or->rq, id, or->base_branch, or->base_revision,
                                or->base_revision, &rev, &content, &w.base);
    if (err >= 0)
        err = origins_of(or, &w, mine);
    nodeset_free(&w.back);
    nodeset_free(&w.fwd);
    free(w.queue);
    cn__ptree_free(mine);
    cn__ptree_free(w.base);
    return err;
}

cn_err_t cn_repos_merge_origins(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                                const uint8_t branch[16], uint64_t revision,
                                const uint8_t base_branch[16], uint64_t base_revision,
                                const cn_repos_pathv_t *paths, uint32_t n, cn_repos_origin_t *out,
                                cn_buf_t *arena)
{
    CN_TRY(cn__paths_check(rq, paths, n));
    origins_read_t or = { rq, branch, base_branch, revision, base_revision, paths, n, out, arena };
    return cn__repo_run(r, rq, repo, CN__READ, CN_META_RUN_READ | CN_META_RETRY, origins_body,
                        & or);
}
