/* The file_lineage index (repos_lineage): for each file revision a commit
 * writes — a node (change, path), live or tombstone — the revisions it
 * came from.  A modify or delete follows the path's previous revision, a
 * move follows its source's at both ends; an ordinary add starts a new
 * incarnation (no predecessor: names and content never link files).  A
 * merge's entries follow the target's previous revision and the source's
 * revision at the same path as well; a keep writes no node (an
 * ancestry-only entry).  Rows are planned from the snapshots before the
 * change set is applied and written in the commit's transaction, so the
 * index costs O(paths changed) per submit; a branch created from another
 * shares its origin's nodes (fork snapshots keep their revisions).
 *
 * It must never derive a link from a name or a content hash. */
#include "service_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void cn__lineage_free(cn__lineage_t *lin)
{
    free(lin->rows);
    memset(lin, 0, sizeof *lin);
}

static cn_err_t add_row(cn__lineage_t *lin, const uint8_t *p, size_t n, uint64_t pred,
                        const uint8_t *pp, size_t pn)
{
    if (lin->n == lin->cap) {
        size_t cap = lin->cap ? lin->cap * 2 : 16;
        cn__lineage_row_t *rows = realloc(lin->rows, cap * sizeof *rows);
        if (!rows)
            return -ENOMEM;
        lin->rows = rows;
        lin->cap = cap;
    }
    lin->rows[lin->n++] = (cn__lineage_row_t){ p, n, pred, pp, pn };
    return CN_OK;
}

/* The revision at path in t: *change 0 when t never held it. */
static cn_err_t revision_at(cn__ptree_t *t, const uint8_t *p, size_t n, uint64_t *change)
{
    bool found = false;
    cn_repos_entry_t e;
    *change = 0;
    CN_TRY(cn__ptree_get(t, p, n, &found, &e));
    if (found)
        *change = e.change;
    return CN_OK;
}

/* The predecessors of one change set entry's node at its destination (the
 * move source's node is planned by the caller). */
static cn_err_t entry_rows(cn__lineage_t *lin, cn__ptree_t *tree, cn__ptree_t *source,
                           const cn_repos_change_t *e)
{
    uint64_t mine = 0, theirs = 0;
    const uint8_t *pp = e->kind == CN_REPOS_MOVE ? e->from : e->path;
    size_t pn = e->kind == CN_REPOS_MOVE ? e->from_len : e->path_len;
    if (e->kind != CN_REPOS_ADD)
        CN_TRY(revision_at(tree, pp, pn, &mine));
    if (mine)
        CN_TRY(add_row(lin, e->path, e->path_len, mine, pp, pn));
    if (source)
        CN_TRY(revision_at(source, e->path, e->path_len, &theirs));
    if (theirs && !(theirs == mine && e->kind != CN_REPOS_MOVE))
        CN_TRY(add_row(lin, e->path, e->path_len, theirs, e->path, e->path_len));
    return CN_OK;
}

cn_err_t cn__lineage_plan(cn__lineage_t *lin, cn__ptree_t *tree, cn__ptree_t *source,
                          const cn_repos_changeset_t *cs)
{
    cn_repos_changeset_iter_t it;
    cn_repos_change_t e;
    cn_repos_changeset_iter(cs, &it);
    while (cn_repos_changeset_next(&it, &e)) {
        if (e.kind == CN_REPOS_KEEP)
            continue;
        CN_TRY(entry_rows(lin, tree, source, &e));
        if (e.kind == CN_REPOS_MOVE) {
            /* the move source's tombstone follows the revision it removed */
            uint64_t was = 0;
            CN_TRY(revision_at(tree, e.from, e.from_len, &was));
            if (was)
                CN_TRY(add_row(lin, e.from, e.from_len, was, e.from, e.from_len));
        }
    }
    return CN_OK;
}

typedef struct lin_store {
    const cn__lineage_t *lin;
    const uint8_t *repo;
    uint64_t change;
} lin_store_t;

static cn_err_t bind_lineage(void *ctx, cn_meta_stmt_t *st, int base, size_t i)
{
    const lin_store_t *ls = ctx;
    const cn__lineage_row_t *r = &ls->lin->rows[i];
    return cn_meta_bindf(st, base, "bibib", CN__ARG_ID(ls->repo), (int64_t)ls->change,
                         (const void *)r->path, r->path_len, (int64_t)r->pred,
                         (const void *)r->pred_path, r->pred_len);
}

cn_err_t cn__lineage_store(const cn__lineage_t *lin, cn_meta_txn_t *txn, const uint8_t repo[16],
                           uint64_t change)
{
    lin_store_t ls = { lin, repo, change };
    return cn__push_rows(txn, CN_SQL_REPOS_ROWS_LINEAGE, lin->n, bind_lineage, &ls);
}
