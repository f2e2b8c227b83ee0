/* The all-branch log's file selection (docs/protocol/scribe.md 7.5, 13.9):
 * from the revision the selected snapshot holds at the path, every revision
 * the file_lineage index (service_lineage.c) links to it, walked both ways —
 * predecessors, and successors no newer than the ceiling — on any branch.
 * An ordinary add has no predecessor, so it starts a new incarnation; a
 * merge's entry links both predecessors; fork snapshots share their
 * origin's revisions.  Membership (the commit ancestry of the selected
 * snapshot) is the walk of service_log_follow.c.
 *
 * It must never link revisions by name or content, and never reach a
 * revision past the ceiling, whatever the page's cursor. */
#include "service_log_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A revision waiting to be expanded: its path in the read's arena. */
typedef struct pending {
    uint64_t change;
    size_t off;
    uint32_t len;
} pending_t;

typedef struct bfs {
    cn__hist_t *h;
    uint64_t ceiling;
    pending_t *queue;
    size_t head, n, cap;
    cn_buf_t key; /* scratch */
} bfs_t;

/* Queues (change, p) and makes it a row unless it was seen. */
static cn_err_t reach(bfs_t *b, uint64_t change, const uint8_t *p, size_t n)
{
    uint8_t le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (uint8_t)(change >> (8 * i));
    cn_buf_reset(&b->key);
    CN_TRY(cn_buf_put_u8(&b->key, 'N'));
    CN_TRY(cn_buf_append(&b->key, le, sizeof le));
    CN_TRY(cn_buf_append(&b->key, p, n));
    bool added = false;
    uint64_t *value = NULL;
    CN_TRY(cn__hset_put(&b->h->seen, b->key.data, b->key.len, &added, &value));
    if (!added)
        return CN_OK;
    CN_TRY(cn__hist_grow((void **)&b->queue, &b->cap, b->n, sizeof *b->queue));
    pending_t *pd = &b->queue[b->n++];
    pd->change = change;
    pd->len = (uint32_t)n;
    CN_TRY(cn__hist_keep(b->h, p, n, &pd->off));
    /* event 0: the page reads it with the commit */
    return cn__hist_row(b->h, change, 0, pd->off, pd->len, 0, 0);
}

/* The neighbours of pd one way: predecessors, or successors no newer than
 * the ceiling. */
static cn_err_t expand(bfs_t *b, pending_t pd, bool forward)
{
    cn__hist_t *h = b->h;
    cn_meta_stmt_t *st = NULL;
    CN_TRY(cn__hist_spend(h, 0));
    /* the arena may move as neighbours are kept: the path is copied first */
    cn_buf_t path = { 0 };
    CN_TRY(cn_buf_append(&path, h->arena.data + pd.off, pd.len));
    cn_err_t err;
    if (forward)
        err = cn_meta_queryf(h->txn, &st, cn__sql_repos[CN_SQL_REPOS_LINEAGE_SUCCS], "bibi",
                             CN__ARG_ID(h->repo), (int64_t)pd.change, (const void *)path.data,
                             path.len, (int64_t)b->ceiling);
    else
        err = cn_meta_queryf(h->txn, &st, cn__sql_repos[CN_SQL_REPOS_LINEAGE_PREDS], "bib",
                             CN__ARG_ID(h->repo), (int64_t)pd.change, (const void *)path.data,
                             path.len);
    while (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW) {
        size_t n = 0;
        const uint8_t *p = cn_meta_column_blob(st, 1, &n);
        if (!p)
            err = CN_E_CORRUPT;
        else if ((err = cn__hist_spend(h, n)) >= 0)
            err = reach(b, (uint64_t)cn_meta_column_int64(st, 0), p, n);
    }
    cn_meta_finish(st);
    cn_buf_free(&path);
    return err;
}

cn_err_t cn__hist_lineage(cn__hist_t *h, uint64_t change, const uint8_t *path, size_t n,
                          uint64_t ceiling)
{
    bfs_t b = { .h = h, .ceiling = ceiling };
    cn_err_t err = reach(&b, change, path, n);
    while (err >= 0 && b.head < b.n) {
        pending_t pd = b.queue[b.head++];
        if ((err = expand(&b, pd, false)) >= 0)
            err = expand(&b, pd, true);
    }
    free(b.queue);
    cn_buf_free(&b.key);
    return err;
}
