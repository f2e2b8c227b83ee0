/* Change notes: an append-only journal of descriptions per accepted change.
 * A commit's message never changes; a note overlays it.  describe appends
 * revision expected + 1 only when the journal is exactly at expected, which
 * also makes a retry after a lost reply safe (a duplicate is refused as
 * stale, never written). */
#include "service_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void cn_repos_note_free(cn_repos_note_t *n)
{
    if (n) {
        free(n->text);
        n->text = NULL;
    }
}

static bool blank(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strchr(" \t\r\n\v\f", p[i]) || !p[i])
            return false;
    return true;
}

static cn_err_t change_exists(cn_meta_txn_t *txn, cn_repos_req_t *rq, const uint8_t repo[16],
                              uint64_t change)
{
    cn_err_t err =
        cn_meta_execf(txn, cn__sql_repos[CN_SQL_REPOS_COMMIT_EXISTS], "bi", CN__ARG_ID(repo),
                      (int64_t)(change > (uint64_t)INT64_MAX ? 0 : change));
    if (err == CN_META_DONE)
        err = cn__rfail(rq, CN_E_NOT_FOUND, CN_REPOS_E_CHANGE_NOT_FOUND, "no such change");
    return err < 0 ? err : CN_OK;
}

/* The own-commit rule of an authenticated listener (scribe.md 15.6): below
 * Maintainer a principal describes only the changes whose commit author it
 * is (the author an authenticated submit records is its principal).
 * FORBIDDEN otherwise; trusted and identity callers pass. */
static cn_err_t own_commit(cn_meta_txn_t *txn, cn_repos_req_t *rq, const uint8_t repo[16],
                           uint64_t change)
{
    if (!rq->authed || rq->maintainer)
        return CN_OK;
    cn_meta_stmt_t *st = NULL;
    bool mine = false;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_LOG_COMMIT], "bi",
                                  CN__ARG_ID(repo), (int64_t)change);
    if (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW && rq->account) {
        const uint8_t *a = NULL;
        size_t al = cn__col_blob(st, 2, &a);
        mine = al == strlen(rq->account) && memcmp(a, rq->account, al) == 0;
    }
    cn_meta_finish(st);
    if (err < 0)
        return err;
    return mine ? CN_OK
                : cn__rfail(rq, CN_E_DENIED, CN_REPOS_E_FORBIDDEN,
                            "describing another principal's change needs Maintainer");
}

/* Reads a row of a NOTE_COLS statement (meta/sql/repos.h) into n. */
static cn_err_t note_row(cn_meta_stmt_t *st, cn_repos_note_t *n)
{
    memset(n, 0, sizeof *n);
    n->change = (uint64_t)cn_meta_column_int64(st, 0);
    n->revision = (uint32_t)cn_meta_column_int64(st, 1);
    size_t al = 0, tl = 0;
    const void *a = cn_meta_column_blob(st, 2, &al);
    const void *t = cn_meta_column_blob(st, 4, &tl);
    if (al >= sizeof n->author)
        return CN_E_CORRUPT;
    if (a)
        memcpy(n->author, a, al);
    n->edited_ms = cn_meta_column_int64(st, 3);
    if (!(n->text = malloc(tl + 1)))
        return -ENOMEM;
    if (t)
        memcpy(n->text, t, tl);
    n->text[tl] = 0;
    n->text_len = tl;
    return CN_OK;
}

/* A description to append to change's journal when it is at revision
 * expected, and the note that became (revision, edited_ms). */
typedef struct note_edit {
    cn_repos_req_t *rq;
    uint64_t change;
    uint32_t expected;
    const uint8_t *author, *text;
    size_t author_len, text_len;
    uint32_t revision;
    int64_t edited_ms;
} note_edit_t;

static cn_err_t describe_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    note_edit_t *ne = ctx;
    const uint8_t *id = repo->info.id;
    cn_meta_stmt_t *st = NULL;
    uint32_t last = 0;
    cn_err_t err = change_exists(txn, ne->rq, id, ne->change);
    if (err >= 0)
        err = own_commit(txn, ne->rq, id, ne->change);
    if (err >= 0 && (err = cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_NOTE_LAST_REVISION],
                                          "bi", CN__ARG_ID(id), (int64_t)ne->change)) >= 0) {
        err = cn_meta_step(st);
        last = (uint32_t)cn_meta_column_int64(st, 0);
    }
    cn_meta_finish(st);
    if (err >= 0 && last != ne->expected)
        err = cn__rfail(ne->rq, CN_E_CONFLICT, CN_REPOS_E_NOTE_REVISION_STALE,
                        "the journal is at revision %u, not %u", last, ne->expected);
    if (err >= 0 && last >= CN_REPOS_NOTE_REVISIONS_MAX)
        err = cn__rfail(ne->rq, CN_E_LIMIT, CN_REPOS_E_LIMIT_EXCEEDED,
                        "a change keeps at most 1,024 description revisions");
    ne->revision = last + 1;
    ne->edited_ms = cn__repos_now_ms();
    if (err >= 0)
        err = cn_meta_execf(txn, cn__sql_repos[CN_SQL_REPOS_NOTE_INSERT], "biibib", CN__ARG_ID(id),
                            (int64_t)ne->change, (int64_t)ne->revision,
                            (const void *)(ne->author_len ? ne->author : (const uint8_t *)""),
                            ne->author_len, ne->edited_ms, (const void *)ne->text, ne->text_len);
    return err < 0 ? err : CN_OK;
}

cn_err_t cn_repos_describe(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                           uint64_t change, uint32_t expected, const uint8_t *author,
                           size_t author_len, const uint8_t *text, size_t text_len,
                           cn_repos_note_t *out)
{
    memset(out, 0, sizeof *out);
    if (!text_len || text_len > CN_REPOS_NOTE_TEXT_MAX || blank(text, text_len) ||
        cn_repos_utf8_check(text, text_len) < 0)
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                         "a description is 1..65,536 bytes of UTF-8, not blank");
    if (author_len > CN_REPOS_MAX_AUTHOR || cn_repos_utf8_check(author, author_len) < 0)
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                         "the author is UTF-8 of at most 256 bytes");
    if (rq->authed) { /* the revision is the principal's, whatever the request says */
        author = (const uint8_t *)(rq->account ? rq->account : "");
        author_len = strnlen((const char *)author, CN_REPOS_MAX_AUTHOR);
    }
    note_edit_t ne = { rq, change, expected, author, text, author_len, text_len, 0, 0 };
    CN_TRY(cn__repo_run(r, rq, repo, CN__WRITE, CN_META_RUN_WRITE | CN_META_RETRY, describe_body,
                        &ne));
    out->change = change;
    out->revision = ne.revision;
    memcpy(out->author, author, author_len);
    out->edited_ms = ne.edited_ms;
    if (!(out->text = malloc(text_len + 1)))
        return -ENOMEM;
    memcpy(out->text, text, text_len);
    out->text[text_len] = 0;
    out->text_len = text_len;
    return CN_OK;
}

/* Changes asked about and, per change, its latest note (present[i],
 * notes[i], which the caller frees). */
typedef struct note_batch {
    const uint64_t *changes;
    uint32_t n;
    bool *present;
    cn_repos_note_t *notes;
} note_batch_t;

static cn_err_t notes_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    const note_batch_t *nb = ctx;
    cn_err_t err = CN_OK;
    for (uint32_t i = 0; i < nb->n && err >= 0; i++) {
        cn_meta_stmt_t *st = NULL;
        uint64_t c = nb->changes[i];
        err = cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_NOTE_LATEST], "bi",
                             CN__ARG_ID(repo->info.id), (int64_t)(c > (uint64_t)INT64_MAX ? 0 : c));
        if (err >= 0)
            err = cn_meta_step(st);
        if (err == CN_META_ROW) {
            nb->present[i] = true;
            err = note_row(st, &nb->notes[i]);
        }
        cn_meta_finish(st);
    }
    /* A failed run leaves nothing allocated, so a repeat starts clean. */
    for (uint32_t i = 0; i < nb->n && err < 0; i++) {
        cn_repos_note_free(&nb->notes[i]);
        nb->present[i] = false;
    }
    return err < 0 ? err : CN_OK;
}

cn_err_t cn_repos_notes(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                        const uint64_t *changes, uint32_t n, bool *present, cn_repos_note_t *notes)
{
    for (uint32_t i = 0; i < n; i++) {
        present[i] = false;
        memset(&notes[i], 0, sizeof notes[i]);
    }
    note_batch_t nb = { changes, n, present, notes };
    return cn__repo_run(r, rq, repo, CN__READ, CN_META_RUN_READ | CN_META_RETRY, notes_body, &nb);
}

/* A page of change's note revisions after `after`: at most limit,
 * collected into rows (each a note_rec_t) and handed to the caller's fn
 * after the run, so that a repeated run (CN_META_RETRY) hands each once;
 * more when another follows. */
typedef struct note_page {
    cn_repos_req_t *rq;
    uint64_t change;
    uint32_t after, limit;
    cn_repos_note_fn fn;
    void *ctx;
    bool more;
    cn__rows_t rows;
} note_page_t;

/* A collected revision: its text (NUL-terminated) is an offset into the
 * rows' bytes. */
typedef struct note_rec {
    cn_repos_note_t nt;
    size_t text;
} note_rec_t;

/* Collects the revision of st's row. */
static cn_err_t history_keep(note_page_t *np, cn_meta_stmt_t *st)
{
    note_rec_t rec;
    CN_TRY(note_row(st, &rec.nt));
    cn_err_t err =
        cn__rows_add_with(&np->rows, &rec, sizeof rec, &rec.text, rec.nt.text, rec.nt.text_len + 1);
    cn_repos_note_free(&rec.nt);
    return err;
}

static cn_err_t history_put(const cn__rows_t *rows, void *rec, void *ctx)
{
    note_rec_t *nr = rec;
    const note_page_t *np = ctx;
    nr->nt.text = (char *)cn__rows_at(rows, nr->text);
    return np->fn(np->ctx, &nr->nt);
}

static cn_err_t history_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    note_page_t *np = ctx;
    const uint8_t *id = repo->info.id;
    cn_meta_stmt_t *st = NULL;
    cn__rows_start(&np->rows, np->limit); /* an earlier attempt's rows */
    np->more = false;
    cn_err_t err = change_exists(txn, np->rq, id, np->change);
    if (err >= 0)
        err =
            cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_NOTE_PAGE], "biii", CN__ARG_ID(id),
                           (int64_t)np->change, (int64_t)np->after, (int64_t)np->limit + 1);
    for (uint32_t k = 0; err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW; k++) {
        if (k == np->limit) {
            np->more = true;
            err = CN_META_DONE;
            break;
        }
        if ((err = history_keep(np, st)) < 0)
            break;
    }
    cn_meta_finish(st);
    return err < 0 ? err : (err == CN_META_DONE ? CN_OK : err);
}

cn_err_t cn_repos_note_history(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                               uint64_t change, uint32_t after, uint32_t limit, cn_repos_note_fn fn,
                               void *ctx, bool *more)
{
    *more = false;
    if (limit == 0)
        limit = 1;
    if (limit > CN_REPOS_NOTE_REVISIONS_MAX)
        limit = CN_REPOS_NOTE_REVISIONS_MAX;
    note_page_t np = {
        .rq = rq, .change = change, .after = after, .limit = limit, .fn = fn, .ctx = ctx
    };
    cn_err_t err =
        cn__repo_run(r, rq, repo, CN__READ, CN_META_RUN_READ | CN_META_RETRY, history_body, &np);
    *more = np.more;
    return cn__rows_hand(&np.rows, err, sizeof(note_rec_t), history_put, &np);
}
