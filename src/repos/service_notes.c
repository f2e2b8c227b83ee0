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
    cn_meta_stmt_t *st = NULL;
    CN_TRY(cn_meta_prepare(txn, "SELECT 1 FROM repos_commit WHERE repo = ? AND change = ?", &st));
    cn__bind_id(st, 1, repo);
    cn_meta_bind_int64(st, 2, (int64_t)(change > (uint64_t)INT64_MAX ? 0 : change));
    cn_err_t err = cn_meta_step(st);
    cn_meta_finish(st);
    if (err == CN_META_DONE)
        return cn__rfail(rq, CN_E_NOT_FOUND, CN_REPOS_E_CHANGE_NOT_FOUND, "no such change");
    return err < 0 ? err : CN_OK;
}

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

#define NOTE_COLS "change, revision, author, edited_ms, text"

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
    cn_meta_txn_t *txn = NULL;
    CN_TRY(cn_meta_begin(r->meta, CN_META_WRITE, &txn));
    cn__repo_t rp;
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn__repo_load(r, txn, rq, repo, CN__WRITE, &rp);
    if (err >= 0)
        err = change_exists(txn, rq, repo, change);
    uint32_t last = 0;
    if (err >= 0 && (err = cn_meta_prepare(txn, "SELECT COALESCE(MAX(revision), 0) FROM repos_note"
                                           " WHERE repo = ? AND change = ?", &st)) >= 0) {
        cn__bind_id(st, 1, repo);
        cn_meta_bind_int64(st, 2, (int64_t)change);
        err = cn_meta_step(st);
        last = (uint32_t)cn_meta_column_int64(st, 0);
        cn_meta_finish(st);
    }
    if (err >= 0 && last != expected)
        err = cn__rfail(rq, CN_E_CONFLICT, CN_REPOS_E_NOTE_REVISION_STALE,
                        "the journal is at revision %u, not %u", last, expected);
    if (err >= 0 && last >= CN_REPOS_NOTE_REVISIONS_MAX)
        err = cn__rfail(rq, CN_E_LIMIT, CN_REPOS_E_LIMIT_EXCEEDED,
                        "a change keeps at most 1,024 description revisions");
    int64_t now = cn__repos_now_ms();
    if (err >= 0 && (err = cn_meta_prepare(txn, "INSERT INTO repos_note (repo, " NOTE_COLS
                                           ") VALUES (?, ?, ?, ?, ?, ?)", &st)) >= 0) {
        cn__bind_id(st, 1, repo);
        cn_meta_bind_int64(st, 2, (int64_t)change);
        cn_meta_bind_int64(st, 3, last + 1);
        cn_meta_bind_blob(st, 4, author_len ? author : (const uint8_t *)"", author_len);
        cn_meta_bind_int64(st, 5, now);
        cn_meta_bind_blob(st, 6, text, text_len);
        err = cn_meta_step(st);
        cn_meta_finish(st);
    }
    if (err < 0) {
        cn_meta_rollback(txn);
        return err;
    }
    if ((err = cn_meta_commit(txn)) < 0)
        return err;
    out->change = change;
    out->revision = last + 1;
    memcpy(out->author, author, author_len);
    out->edited_ms = now;
    if (!(out->text = malloc(text_len + 1)))
        return -ENOMEM;
    memcpy(out->text, text, text_len);
    out->text[text_len] = 0;
    out->text_len = text_len;
    return CN_OK;
}

cn_err_t cn_repos_notes(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                        const uint64_t *changes, uint32_t n, bool *present, cn_repos_note_t *notes)
{
    for (uint32_t i = 0; i < n; i++) {
        present[i] = false;
        memset(&notes[i], 0, sizeof notes[i]);
    }
    cn_meta_txn_t *txn = NULL;
    CN_TRY(cn_meta_begin(r->meta, CN_META_READ, &txn));
    cn__repo_t rp;
    cn_err_t err = cn__repo_load(r, txn, rq, repo, CN__READ, &rp);
    for (uint32_t i = 0; i < n && err >= 0; i++) {
        cn_meta_stmt_t *st = NULL;
        if ((err = cn_meta_prepare(txn, "SELECT " NOTE_COLS " FROM repos_note WHERE repo = ?"
                                   " AND change = ? ORDER BY revision DESC LIMIT 1", &st)) < 0)
            break;
        cn__bind_id(st, 1, repo);
        cn_meta_bind_int64(st, 2, (int64_t)(changes[i] > (uint64_t)INT64_MAX ? 0 : changes[i]));
        err = cn_meta_step(st);
        if (err == CN_META_ROW) {
            present[i] = true;
            err = note_row(st, &notes[i]);
        }
        cn_meta_finish(st);
    }
    cn_meta_rollback(txn);
    if (err < 0) {
        for (uint32_t i = 0; i < n; i++)
            cn_repos_note_free(&notes[i]);
        return err;
    }
    return CN_OK;
}

cn_err_t cn_repos_note_history(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                               uint64_t change, uint32_t after, uint32_t limit,
                               cn_repos_note_fn fn, void *ctx, bool *more)
{
    *more = false;
    if (limit == 0)
        limit = 1;
    if (limit > CN_REPOS_NOTE_REVISIONS_MAX)
        limit = CN_REPOS_NOTE_REVISIONS_MAX;
    cn_meta_txn_t *txn = NULL;
    CN_TRY(cn_meta_begin(r->meta, CN_META_READ, &txn));
    cn__repo_t rp;
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn__repo_load(r, txn, rq, repo, CN__READ, &rp);
    if (err >= 0)
        err = change_exists(txn, rq, repo, change);
    if (err >= 0 && (err = cn_meta_prepare(txn, "SELECT " NOTE_COLS " FROM repos_note WHERE"
                                           " repo = ? AND change = ? AND revision > ?"
                                           " ORDER BY revision LIMIT ?", &st)) >= 0) {
        cn__bind_id(st, 1, repo);
        cn_meta_bind_int64(st, 2, (int64_t)change);
        cn_meta_bind_int64(st, 3, after);
        cn_meta_bind_int64(st, 4, (int64_t)limit + 1);
        uint32_t k = 0;
        while ((err = cn_meta_step(st)) == CN_META_ROW) {
            if (k == limit) {
                *more = true;
                err = CN_META_DONE;
                break;
            }
            cn_repos_note_t nt;
            if ((err = note_row(st, &nt)) < 0)
                break;
            err = fn(ctx, &nt);
            cn_repos_note_free(&nt);
            if (err)
                break;
            k++;
        }
        cn_meta_finish(st);
    }
    cn_meta_rollback(txn);
    return err < 0 ? err : (err == CN_META_DONE ? CN_OK : err);
}
