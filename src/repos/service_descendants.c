/* merge_read tag 3 (docs/protocol/scribe.md 7.9, 13.9): the entries of one
 * historical snapshot that clash with a path — its ancestors that hold an
 * entry, the path itself, and its historical descendants (every path under
 * "path/" the snapshot ever held, live or tombstone), paged by the last
 * descendant handed over.  The snapshot tree answers each from the nodes on
 * the way (O(depth) for the ancestors, O(page) for the descendants); no page
 * examines more than CN_REPOS_DESCENDANTS_PAGE descendants, so a reply holds
 * at most CN_REPOS_DESCENDANTS_MAX entries (5,120, a bound: a path with a
 * descendant has at most 4,094 ancestors, since n segments take at least
 * 2n - 1 of a path's 8,192 bytes, so a reply holds at most 4,094 + 1 + 1,024).
 *
 * It must never read another snapshot than the one named, nor match by
 * anything but the path's bytes. */
#include "service_int.h"

#include <errno.h>
#include <string.h>

/* A read's entries are collected into rows (each a desc_rec_t, at most
 * CN_REPOS_DESCENDANTS_MAX) and handed to the caller's fn after the run, so
 * that a repeated run (CN_META_RETRY) hands each once. */
typedef struct desc_read {
    cn_repos_req_t *rq;
    const uint8_t *branch;
    uint64_t revision;
    const uint8_t *path, *cursor;
    size_t n, cursor_len;
    cn_repos_desc_fn fn;
    void *ctx;
    cn_buf_t *next;
    bool more;
    cn__rows_t rows;
} desc_read_t;

/* A collected entry: its path is p[0..n) of the rows' bytes. */
typedef struct desc_rec {
    cn_repos_entry_t e;
    size_t p, n;
} desc_rec_t;

/* Collects the entry at path p[0..n). */
static cn_err_t desc_keep(desc_read_t *d, const uint8_t *p, size_t n, const cn_repos_entry_t *e)
{
    desc_rec_t rec = { .e = *e, .n = n };
    return cn__rows_add_with(&d->rows, &rec, sizeof rec, &rec.p, p, n);
}

static cn_err_t desc_put(const cn__rows_t *rows, void *rec, void *ctx)
{
    const desc_rec_t *dr = rec;
    const desc_read_t *d = ctx;
    return d->fn(d->ctx, cn__rows_at(rows, dr->p), dr->n, &dr->e);
}

/* The first page's head: each ancestor of the path that holds an entry,
 * shortest first, then the path itself. */
static cn_err_t exact_and_ancestors(desc_read_t *d, cn__ptree_t *t)
{
    for (size_t i = 1; i <= d->n; i++) {
        if (i < d->n && d->path[i] != '/')
            continue;
        bool found = false;
        cn_repos_entry_t e;
        CN_TRY(cn__ptree_get(t, d->path, i, &found, &e));
        if (found)
            CN_TRY(desc_keep(d, d->path, i, &e));
    }
    return CN_OK;
}

/* Collects a descendant and remembers it as the page's last. */
static cn_err_t descendant(void *ctx, const uint8_t *p, size_t n, const cn_repos_entry_t *e)
{
    desc_read_t *d = ctx;
    cn_buf_reset(d->next);
    CN_TRY(cn_buf_append(d->next, p, n));
    return desc_keep(d, p, n, e);
}

static cn_err_t desc_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    desc_read_t *d = ctx;
    const uint8_t *id = repo->info.id;
    cn_digest_t rev, content;
    cn__ptree_t *t = NULL;
    cn_buf_reset(d->next); /* an earlier attempt's page */
    cn__rows_start(&d->rows, CN_REPOS_DESCENDANTS_MAX);
    d->more = false;
    CN_TRY(cn__schema_check(txn, d->rq, id));
    cn_err_t err =
        cn__snapshot_open(txn, d->rq, id, d->branch, d->revision, d->revision, &rev, &content, &t);
    if (err >= 0 && !d->cursor)
        err = exact_and_ancestors(d, t);
    /* the path itself sorts before everything under "path/": as the first
     * page's cursor it leaves exactly the descendants */
    if (err >= 0)
        err = cn__ptree_entries(t, d->path, d->n, d->cursor ? d->cursor : d->path,
                                d->cursor ? d->cursor_len : d->n, CN_REPOS_DESCENDANTS_PAGE,
                                descendant, d, &d->more);
    cn__ptree_free(t);
    return err;
}

cn_err_t cn_repos_descendants(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                              const uint8_t branch[16], uint64_t revision, const uint8_t *path,
                              size_t n, const uint8_t *cursor, size_t cursor_len,
                              cn_repos_desc_fn fn, void *ctx, cn_buf_t *next, bool *has_next)
{
    *has_next = false;
    cn_buf_reset(next);
    if (cn_repos_path_check(path, n) < 0)
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED, "the path is not canonical");
    if (cursor && (cn_repos_path_check(cursor, cursor_len) < 0 || cursor_len <= n + 1 ||
                   memcmp(cursor, path, n) != 0 || cursor[n] != '/'))
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                         "the cursor is not a canonical path under the queried path");
    desc_read_t d = { rq,         branch, revision, path, cursor, n,
                      cursor_len, fn,     ctx,      next, false,  { { 0 }, { 0 }, 0, 0 } };
    cn_err_t err =
        cn__repo_run(r, rq, repo, CN__READ, CN_META_RUN_READ | CN_META_RETRY, desc_body, &d);
    err = cn__rows_hand(&d.rows, err, sizeof(desc_rec_t), desc_put, &d);
    *has_next = err >= 0 && d.more;
    if (!*has_next)
        cn_buf_reset(next);
    return err;
}
