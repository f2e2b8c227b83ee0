/* Workspaces: registration rows, listings and removal (retirement) of the
 * workspaces of a repository (docs/protocol/scribe.md 7.11).
 *
 * Invariants:
 *  1. A registration's tags never change: the first registration fixes the
 *     set (stored sorted), and every later one must name the same set.
 *  2. A removal's outcome (retired or LOCK_HELD) is recorded in the
 *     operation table in the same write transaction that retires the row
 *     and releases the pins, and that transaction commits before the call
 *     returns: a lost reply is answered again by the record.
 *  3. A retired row is never live again: registration, pins, submits and
 *     lock requests consult cn__ws_check and refuse it.
 * This file never decides lock or submit rules beyond refusing a retired
 * workspace. */
#include "service_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- rows ------------------------------------------------------------------------------ */
/* The owner id of the caller: on an authenticated Scribe listener the
 * first 16 bytes of BLAKE3("scribe:workspace-owner:v1\0" | account), so
 * that every credential of one account owns the same workspaces; else an
 * identity principal's account id, little-endian in the first 8 bytes;
 * false without a principal. */
static bool owner_of(const cn_repos_req_t *rq, uint8_t owner[16])
{
    memset(owner, 0, 16);
    if (rq->authed) {
        static const char domain[] = "scribe:workspace-owner:v1";
        if (!rq->account)
            return false;
        cn_blake3_t h;
        cn_digest_t d;
        cn_blake3_init(&h);
        cn_blake3_update(&h, domain, sizeof domain); /* includes the NUL */
        cn_blake3_update(&h, rq->account, strlen(rq->account));
        cn_blake3_final(&h, &d);
        memcpy(owner, d.b, 16);
        return true;
    }
    if (!rq->principal)
        return false;
    uint64_t id = (uint64_t)rq->principal->account_id;
    for (int i = 0; i < 8; i++)
        owner[i] = (uint8_t)(id >> (8 * i));
    return true;
}

/* Reads a WS_COLS row into w (*retired_ms: 0 when live). */
static cn_err_t ws_row(cn_meta_stmt_t *st, cn_repos_ws_t *w, int64_t *retired_ms)
{
    memset(w, 0, sizeof *w);
    const uint8_t *label = NULL, *tags = NULL;
    size_t ll = cn__col_blob(st, 3, &label), tl = cn__col_blob(st, 4, &tags);
    if (!cn__col_fixed(st, 0, w->id, 16) || !cn__col_fixed(st, 1, w->branch, 16) ||
        ll > CN_REPOS_WS_LABEL_MAX)
        return CN_E_CORRUPT;
    w->has_owner = cn__col_fixed(st, 2, w->owner, 16);
    memcpy(w->label, label, ll);
    for (size_t i = 0, start = 0; tl && i <= tl; i++) {
        if (i < tl && tags[i] != '\n')
            continue;
        size_t n = i - start;
        if (n == 0 || n > CN_REPOS_WS_TAG_MAX || w->tag_count == CN_REPOS_WS_TAGS_MAX)
            return CN_E_CORRUPT;
        memcpy(w->tags[w->tag_count++], tags + start, n);
        start = i + 1;
    }
    w->created_ms = cn_meta_column_int64(st, 5);
    *retired_ms = cn_meta_column_int64(st, 6);
    w->has_locks = cn_meta_column_int64(st, 7) != 0;
    return CN_OK;
}

/* The row of (repo, id): *found, *retired_ms (0: live). */
static cn_err_t ws_get(cn_meta_txn_t *txn, const uint8_t repo[16], const uint8_t id[16],
                       bool *found, cn_repos_ws_t *w, int64_t *retired_ms)
{
    cn_meta_stmt_t *st = NULL;
    *found = false;
    *retired_ms = 0;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_WS_GET], "bb",
                                  CN__ARG_ID(repo), CN__ARG_ID(id));
    if (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW) {
        *found = true;
        err = ws_row(st, w, retired_ms);
    }
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
}

/* Ownership on an authenticated listener (rq->authed): FORBIDDEN unless the
 * caller is a principal and the row (found: w) is its own; an id never
 * registered passes only when unregistered_ok (a removal retires it). */
static cn_err_t ws_owned(cn_repos_req_t *rq, bool found, const cn_repos_ws_t *w,
                         bool unregistered_ok)
{
    uint8_t mine[16];
    if (!rq->authed)
        return CN_OK;
    if (!owner_of(rq, mine))
        return cn__rfail(rq, CN_E_DENIED, CN_REPOS_E_FORBIDDEN,
                         "anonymous callers own no workspace: sign in");
    if (!found)
        return unregistered_ok ? CN_OK
                               : cn__rfail(rq, CN_E_DENIED, CN_REPOS_E_FORBIDDEN,
                                           "the workspace is not registered: register it first");
    if (!w->has_owner)
        return cn__rfail(rq, CN_E_DENIED, CN_REPOS_E_FORBIDDEN,
                         "the workspace has no owner: register it again to own it");
    if (memcmp(w->owner, mine, 16) != 0)
        return cn__rfail(rq, CN_E_DENIED, CN_REPOS_E_FORBIDDEN,
                         "the workspace belongs to another principal");
    return CN_OK;
}

cn_err_t cn__ws_check(cn_meta_txn_t *txn, cn_repos_req_t *rq, const uint8_t repo[16],
                      const uint8_t workspace[16])
{
    bool found = false;
    int64_t retired = 0;
    cn_repos_ws_t w;
    CN_TRY(ws_get(txn, repo, workspace, &found, &w, &retired));
    if (found && retired)
        return cn__rfail(rq, CN_E_CONFLICT, CN_REPOS_E_WORKSPACE_RETIRED,
                         "the workspace was removed at %lld ms and cannot be used again",
                         (long long)retired);
    return ws_owned(rq, found, &w, false);
}

/* ---- registration ---------------------------------------------------------------------- */
static int tag_cmp(const void *a, const void *b)
{
    const cn_repos_pathv_t *x = a, *y = b;
    int d = memcmp(x->p, y->p, x->n < y->n ? x->n : y->n);
    return d ? d : (x->n > y->n) - (x->n < y->n);
}

static size_t tag_name_len(const cn_repos_pathv_t *t)
{
    const uint8_t *eq = memchr(t->p, '=', t->n);
    return eq ? (size_t)(eq - t->p) : t->n;
}

typedef struct ws_reg {
    cn_repos_req_t *rq;
    const uint8_t *workspace, *branch;
    const char *label;
    size_t label_len;
    char tags[CN_REPOS_WS_TAGS_MAX * (CN_REPOS_WS_TAG_MAX + 1)]; /* sorted, '\n'-joined */
    size_t tags_len;
    cn_repos_ws_t out;
} ws_reg_t;

/* Sorts the tags into wr->tags; MALFORMED for a bad size, whitespace or a
 * repeated name. */
static cn_err_t tags_join(ws_reg_t *wr, const cn_repos_pathv_t *tags, uint32_t n)
{
    cn_repos_pathv_t sorted[CN_REPOS_WS_TAGS_MAX];
    if (n > CN_REPOS_WS_TAGS_MAX)
        return cn__rfail(wr->rq, CN_E_INVALID, CN_REPOS_E_MALFORMED, "at most 16 tags");
    memcpy(sorted, tags, n * sizeof *tags);
    qsort(sorted, n, sizeof *sorted, tag_cmp);
    wr->tags_len = 0;
    for (uint32_t i = 0; i < n; i++) {
        const cn_repos_pathv_t *t = &sorted[i];
        bool bad = t->n == 0 || t->n > CN_REPOS_WS_TAG_MAX;
        for (size_t k = 0; !bad && k < t->n; k++)
            bad = t->p[k] <= 0x20 || t->p[k] >= 0x7f;
        for (uint32_t j = 0; !bad && j < i; j++)
            bad = tag_name_len(&sorted[j]) == tag_name_len(t) &&
                  memcmp(sorted[j].p, t->p, tag_name_len(t)) == 0;
        if (bad)
            return cn__rfail(wr->rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                             "tag %u is not a tag (1..64 printable bytes, names unique)", i);
        if (i)
            wr->tags[wr->tags_len++] = '\n';
        memcpy(wr->tags + wr->tags_len, t->p, t->n);
        wr->tags_len += t->n;
    }
    return CN_OK;
}

/* A re-registration on an authenticated listener: the owner's own row
 * passes; a row without an owner (registered over plaintext or by an
 * anonymous caller) is adopted by the registering principal; another
 * principal's row is FORBIDDEN.  Anonymous callers change only ownerless
 * rows. */
static cn_err_t register_owner(cn_meta_txn_t *txn, ws_reg_t *wr, const uint8_t repo[16])
{
    uint8_t mine[16];
    bool me = owner_of(wr->rq, mine);
    if (!wr->rq->authed || (!me && !wr->out.has_owner))
        return CN_OK;
    if (wr->out.has_owner)
        return ws_owned(wr->rq, true, &wr->out, false);
    cn_err_t err = cn_meta_execf(txn, cn__sql_repos[CN_SQL_REPOS_WS_SET_OWNER], "bbb",
                                 CN__ARG_ID(mine), CN__ARG_ID(repo), CN__ARG_ID(wr->workspace));
    return err < 0 ? err : CN_OK;
}

static cn_err_t register_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    ws_reg_t *wr = ctx;
    const uint8_t *id = repo->info.id;
    cn_repos_branch_t b;
    CN_TRY(cn__branch_load(txn, wr->rq, id, wr->branch, &b));
    bool found = false;
    int64_t retired = 0;
    CN_TRY(ws_get(txn, id, wr->workspace, &found, &wr->out, &retired));
    if (found && retired)
        return cn__ws_check(txn, wr->rq, id, wr->workspace);
    cn_err_t err;
    if (found) {
        char have[sizeof wr->tags];
        size_t hl = 0;
        for (uint16_t i = 0; i < wr->out.tag_count; i++)
            hl += (size_t)snprintf(have + hl, sizeof have - hl, "%s%s", i ? "\n" : "",
                                   wr->out.tags[i]);
        if (hl != wr->tags_len || memcmp(have, wr->tags, hl) != 0)
            return cn__rfail(wr->rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                             "the workspace was registered with other tags; tags never change");
        CN_TRY(register_owner(txn, wr, id));
        err = cn_meta_execf(txn, cn__sql_repos[CN_SQL_REPOS_WS_UPDATE], "bbbb",
                            CN__ARG_ID(wr->branch), (const void *)wr->label, wr->label_len,
                            CN__ARG_ID(id), CN__ARG_ID(wr->workspace));
    } else {
        uint8_t owner[16];
        bool has_owner = owner_of(wr->rq, owner);
        err = has_owner
                  ? cn_meta_execf(txn, cn__sql_repos[CN_SQL_REPOS_WS_INSERT], "bbbbbbii",
                                  CN__ARG_ID(id), CN__ARG_ID(wr->workspace), CN__ARG_ID(wr->branch),
                                  CN__ARG_ID(owner), (const void *)wr->label, wr->label_len,
                                  (const void *)wr->tags, wr->tags_len, cn__repos_now_ms(),
                                  (int64_t)0)
                  : cn_meta_execf(txn, cn__sql_repos[CN_SQL_REPOS_WS_INSERT], "bbbnbbii",
                                  CN__ARG_ID(id), CN__ARG_ID(wr->workspace), CN__ARG_ID(wr->branch),
                                  (const void *)wr->label, wr->label_len, (const void *)wr->tags,
                                  wr->tags_len, cn__repos_now_ms(), (int64_t)0);
    }
    if (err >= 0)
        err = ws_get(txn, id, wr->workspace, &found, &wr->out, &retired);
    return err < 0 ? err : CN_OK;
}

static bool zero16(const uint8_t id[16])
{
    static const uint8_t zero[16];
    return memcmp(id, zero, 16) == 0;
}

cn_err_t cn_repos_ws_register(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                              const uint8_t workspace[16], const uint8_t branch[16],
                              const char *label, size_t label_len, const cn_repos_pathv_t *tags,
                              uint32_t ntags, cn_repos_ws_t *out)
{
    memset(out, 0, sizeof *out);
    if (zero16(workspace) || label_len > CN_REPOS_WS_LABEL_MAX ||
        (label_len && memchr(label, 0, label_len)))
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                         "a workspace id is nonzero and a label at most 256 bytes");
    ws_reg_t *wr = calloc(1, sizeof *wr);
    if (!wr)
        return -ENOMEM;
    *wr = (ws_reg_t){ .rq = rq,
                      .workspace = workspace,
                      .branch = branch,
                      .label = label_len ? label : "",
                      .label_len = label_len };
    cn_err_t err = tags_join(wr, tags, ntags);
    if (err >= 0)
        err = cn__repo_run(r, rq, repo, CN__WRITE, CN_META_RUN_WRITE | CN_META_RETRY, register_body,
                           wr);
    if (err >= 0)
        *out = wr->out;
    free(wr);
    return err;
}

/* ---- listing --------------------------------------------------------------------------- */
/* A page of workspaces, read into rows (each a cn_repos_ws_t) and handed to
 * the caller's fn after the run, so that a repeated run (CN_META_RETRY)
 * hands each once. */
typedef struct ws_page {
    const uint8_t *after, *owner;
    uint32_t limit;
    cn_buf_t rows;
    bool more;
} ws_page_t;

static cn_err_t page_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    ws_page_t *wp = ctx;
    static const uint8_t zero[16];
    cn_meta_stmt_t *st = NULL;
    cn_buf_reset(&wp->rows); /* an earlier attempt's page */
    wp->more = false;
    cn_err_t err = cn_meta_queryf(
        txn, &st, cn__sql_repos[CN_SQL_REPOS_WS_PAGE], "bbibi", CN__ARG_ID(repo->info.id),
        CN__ARG_ID(wp->after ? wp->after : zero), (int64_t)(wp->owner != NULL),
        CN__ARG_ID(wp->owner ? wp->owner : zero), (int64_t)wp->limit + 1);
    cn_repos_ws_t *w = malloc(sizeof *w);
    if (!w)
        err = err < 0 ? err : -ENOMEM;
    for (uint32_t k = 0; err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW; k++) {
        if (k == wp->limit) {
            wp->more = true;
            err = CN_META_DONE;
            break;
        }
        int64_t retired = 0;
        if ((err = ws_row(st, w, &retired)) < 0 ||
            (err = cn_buf_append(&wp->rows, w, sizeof *w)) != 0)
            break;
    }
    free(w);
    cn_meta_finish(st);
    return err < 0 ? err : (err == CN_META_DONE ? CN_OK : err);
}

cn_err_t cn_repos_ws_list(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16], bool all,
                          const uint8_t *after, uint32_t limit, cn_repos_ws_fn fn, void *ctx,
                          bool *more)
{
    *more = false;
    uint8_t owner[16];
    bool own = owner_of(rq, owner);
    if (!own && (!rq->trusted || rq->authed))
        return cn__rfail(rq, CN_E_DENIED, CN_REPOS_E_FORBIDDEN,
                         "anonymous callers cannot list workspaces");
    if (all && !cn_repos_maintainer(rq))
        return cn__rfail(rq, CN_E_DENIED, CN_REPOS_E_FORBIDDEN,
                         "listing every workspace needs the Maintainer role");
    /* A trusted caller without a principal owns nothing and is trusted with all. */
    ws_page_t wp = { after, own && !all ? owner : NULL, 0, { 0 }, false };
    wp.limit = limit == 0 ? 1 : limit > CN_REPOS_WS_PAGE_MAX ? CN_REPOS_WS_PAGE_MAX : limit;
    cn_err_t err =
        cn__repo_run(r, rq, repo, CN__READ, CN_META_RUN_READ | CN_META_RETRY, page_body, &wp);
    cn_repos_ws_t *w = err == CN_OK && wp.rows.len ? malloc(sizeof *w) : NULL;
    if (err == CN_OK && wp.rows.len && !w)
        err = -ENOMEM;
    for (size_t off = 0; err == CN_OK && off < wp.rows.len; off += sizeof *w) {
        memcpy(w, wp.rows.data + off, sizeof *w);
        err = fn(ctx, w);
    }
    free(w);
    cn_buf_free(&wp.rows);
    *more = wp.more;
    return err;
}

/* ---- removal --------------------------------------------------------------------------- */
void cn_repos_ws_remove_fp(const uint8_t repo[16], const uint8_t incarnation[16],
                           const uint8_t workspace[16], cn_digest_t *out)
{
    static const char domain[] = "scribe:workspace-remove:v1";
    cn_blake3_t h;
    cn_blake3_init(&h);
    cn_blake3_update(&h, domain, sizeof domain); /* includes the NUL */
    cn_blake3_update(&h, repo, 16);
    cn_blake3_update(&h, incarnation, 16);
    cn_blake3_update(&h, workspace, 16);
    cn_blake3_final(&h, out);
}

/* A removal record, little-endian: u16 code | code 0: i64 retired ms; else
 * u16 n | detail. */
static cn_err_t removal_encode(const cn_repos_ws_removal_t *o, cn_buf_t *b)
{
    CN_TRY(cn_buf_put_u16le(b, o->code));
    if (o->code == 0)
        return cn_buf_put_u64le(b, (uint64_t)o->retired_ms);
    size_t dl = strlen(o->detail);
    CN_TRY(cn_buf_put_u16le(b, (uint16_t)dl));
    return cn_buf_append(b, o->detail, dl);
}

static cn_err_t removal_decode(const cn_buf_t *rec, const uint8_t op[16], cn_repos_ws_removal_t *o)
{
    memset(o, 0, sizeof *o);
    memcpy(o->operation, op, 16);
    cn_rd_t r = cn_rd_init(rec->data, rec->len);
    o->code = cn_rd_u16le(&r);
    if (o->code == 0) {
        o->retired_ms = (int64_t)cn_rd_u64le(&r);
    } else {
        uint16_t dl = cn_rd_u16le(&r);
        const uint8_t *p = dl <= CN_REPOS_DETAIL_MAX ? cn_rd_bytes(&r, dl) : NULL;
        if (!p)
            return CN_E_CORRUPT;
        memcpy(o->detail, p, dl);
    }
    return r.err || cn_rd_left(&r) ? CN_E_CORRUPT : CN_OK;
}

typedef struct ws_remove {
    cn_repos_req_t *rq;
    const uint8_t *incarnation, *operation, *workspace;
    cn_digest_t fp;
    cn_repos_ws_removal_t out;
} ws_remove_t;

/* The decision on a new removal: LOCK_HELD, or retire (row kept, pins gone). */
static cn_err_t remove_decide(cn_meta_txn_t *txn, const cn__repo_t *repo, ws_remove_t *wm)
{
    const uint8_t *id = repo->info.id;
    cn_meta_stmt_t *st = NULL;
    const uint8_t *p = NULL;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_LOCK_OWNED_ANY], "bb",
                                  CN__ARG_ID(id), CN__ARG_ID(wm->workspace));
    if (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW) {
        size_t n = cn__col_blob(st, 0, &p);
        wm->out.code = CN_REPOS_E_LOCK_HELD;
        snprintf(wm->out.detail, sizeof wm->out.detail,
                 "the workspace holds locks (%.*s and perhaps more): release them first",
                 (int)(n > 512 ? 512 : n), (const char *)p);
    }
    cn_meta_finish(st);
    if (err < 0 || wm->out.code)
        return err < 0 ? err : CN_OK;
    bool found = false;
    int64_t retired = 0, now = cn__repos_now_ms();
    cn_repos_ws_t w;
    uint8_t mine[16];
    bool me = owner_of(wm->rq, mine);
    CN_TRY(ws_get(txn, id, wm->workspace, &found, &w, &retired));
    wm->out.retired_ms = retired ? retired : now;
    if (!found)
        err = me ? cn_meta_execf(txn, cn__sql_repos[CN_SQL_REPOS_WS_INSERT], "bbbbbbii",
                                 CN__ARG_ID(id), CN__ARG_ID(wm->workspace),
                                 CN__ARG_ID(repo->info.main_branch), CN__ARG_ID(mine),
                                 (const void *)"", (size_t)0, (const void *)"", (size_t)0, now, now)
                 : cn_meta_execf(txn, cn__sql_repos[CN_SQL_REPOS_WS_INSERT], "bbbnbbii",
                                 CN__ARG_ID(id), CN__ARG_ID(wm->workspace),
                                 CN__ARG_ID(repo->info.main_branch), (const void *)"", (size_t)0,
                                 (const void *)"", (size_t)0, now, now);
    else if (!retired)
        err = cn_meta_execf(txn, cn__sql_repos[CN_SQL_REPOS_WS_RETIRE], "ibb", now, CN__ARG_ID(id),
                            CN__ARG_ID(wm->workspace));
    if (err >= 0)
        err = cn_meta_execf(txn, cn__sql_repos[CN_SQL_REPOS_PIN_DELETE_WORKSPACE], "bbb",
                            CN__ARG_ID(id), CN__ARG_ID(id), CN__ARG_ID(wm->workspace));
    return err < 0 ? err : CN_OK;
}

static cn_err_t remove_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    ws_remove_t *wm = ctx;
    const uint8_t *id = repo->info.id;
    cn__op_t rec;
    memset(&wm->out, 0, sizeof wm->out);
    memcpy(wm->out.operation, wm->operation, 16);
    cn_err_t err = cn__op_find(txn, id, wm->operation, &rec);
    bool replay = err >= 0 && rec.found;
    if (replay && rec.kind == CN_REPOS_OP_WS_REMOVE &&
        memcmp(rec.fp.b, wm->fp.b, CN_DIGEST_LEN) == 0) {
        err = removal_decode(&rec.outcome, wm->operation, &wm->out);
        cn_meta_discard(txn); /* nothing to write: no commit, no fsync */
    } else if (replay) {
        err = cn__rfail(wm->rq, CN_E_CONFLICT, CN_REPOS_E_OPERATION_INTENT_MISMATCH,
                        "the operation id was used for another request");
    }
    cn__op_free(&rec);
    if (err < 0 || replay)
        return err;
    if (memcmp(repo->info.incarnation, wm->incarnation, 16) != 0)
        return cn__rfail(wm->rq, CN_E_CONFLICT, CN_REPOS_E_INCARNATION_MISMATCH,
                         "the repository was restored: its incarnation differs");
    bool found = false;
    int64_t retired = 0;
    cn_repos_ws_t w;
    CN_TRY(ws_get(txn, id, wm->workspace, &found, &w, &retired));
    CN_TRY(ws_owned(wm->rq, found, &w, true)); /* an unrecorded refusal */
    CN_TRY(remove_decide(txn, repo, wm));
    cn_buf_t out = { 0 };
    if ((err = removal_encode(&wm->out, &out)) >= 0)
        err = cn__op_record(txn, id, wm->operation, CN_REPOS_OP_WS_REMOVE, &wm->fp, wm->workspace,
                            &out);
    cn_buf_free(&out);
    return err;
}

cn_err_t cn_repos_ws_remove(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                            const uint8_t incarnation[16], const uint8_t operation[16],
                            const uint8_t workspace[16], cn_repos_ws_removal_t *out)
{
    memset(out, 0, sizeof *out);
    if (zero16(operation) || zero16(workspace))
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                         "the operation and workspace ids are nonzero");
    if ((!rq->principal && !rq->trusted) || (rq->authed && !rq->account))
        return cn__rfail(rq, CN_E_DENIED, CN_REPOS_E_FORBIDDEN,
                         "anonymous callers cannot remove workspaces");
    ws_remove_t *wm = calloc(1, sizeof *wm);
    if (!wm)
        return -ENOMEM;
    *wm = (ws_remove_t){
        .rq = rq, .incarnation = incarnation, .operation = operation, .workspace = workspace
    };
    cn_repos_ws_remove_fp(repo, incarnation, workspace, &wm->fp);
    cn_err_t err =
        cn__repo_run(r, rq, repo, CN__WRITE, CN_META_RUN_WRITE | CN_META_RETRY, remove_body, wm);
    if (err >= 0)
        *out = wm->out;
    free(wm);
    return err;
}

typedef struct ws_outcome {
    cn_repos_req_t *rq;
    const uint8_t *operation;
    bool known;
    cn_repos_ws_removal_t *out;
} ws_outcome_t;

/* On an authenticated listener only the principal that issued a removal
 * reads its outcome: the owner of the workspace it removed (a removal needs
 * that ownership, and one of an unregistered id makes the caller its
 * owner).  FORBIDDEN for anyone else. */
static cn_err_t outcome_reader(cn_meta_txn_t *txn, cn_repos_req_t *rq, const uint8_t repo[16],
                               const uint8_t op[16])
{
    if (!rq->authed)
        return CN_OK;
    cn_meta_stmt_t *st = NULL;
    uint8_t ws[16];
    bool have = false, found = false;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_OPERATION_WORKSPACE], "bb",
                                  CN__ARG_ID(repo), CN__ARG_ID(op));
    if (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW)
        have = cn__col_fixed(st, 0, ws, 16);
    cn_meta_finish(st);
    if (err < 0)
        return err;
    if (!have)
        return CN_E_CORRUPT;
    int64_t retired = 0;
    cn_repos_ws_t w;
    CN_TRY(ws_get(txn, repo, ws, &found, &w, &retired));
    return ws_owned(rq, found, &w, false);
}

static cn_err_t outcome_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    ws_outcome_t *wo = ctx;
    cn__op_t rec;
    wo->known = false;
    cn_err_t err = cn__op_find(txn, repo->info.id, wo->operation, &rec);
    if (err >= 0 && rec.found && rec.kind != CN_REPOS_OP_WS_REMOVE)
        err = cn__rfail(wo->rq, CN_E_CONFLICT, CN_REPOS_E_OPERATION_INTENT_MISMATCH,
                        "the operation id belongs to a submit or a branch operation");
    else if (err >= 0 && rec.found)
        err = removal_decode(&rec.outcome, wo->operation, wo->out);
    if (err >= 0 && rec.found)
        err = outcome_reader(txn, wo->rq, repo->info.id, wo->operation);
    wo->known = err >= 0 && rec.found;
    cn__op_free(&rec);
    return err;
}

cn_err_t cn_repos_ws_removal_outcome(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                                     const uint8_t operation[16], bool *known,
                                     cn_repos_ws_removal_t *out)
{
    memset(out, 0, sizeof *out);
    ws_outcome_t wo = { rq, operation, false, out };
    cn_err_t err =
        cn__repo_run(r, rq, repo, CN__READ, CN_META_RUN_READ | CN_META_RETRY, outcome_body, &wo);
    *known = err >= 0 && wo.known;
    return err;
}
