/* Branches: the branch table of a repository (list, info), branch
 * mutations with operation identity (create, rename), their recorded
 * outcomes, and the snapshot of a branch at a revision of its lifetime,
 * followed through branch origins.
 *
 * A mutation runs in ONE write transaction, so it is durable before it
 * returns and nothing of a refusal is written: the recorded operation is
 * looked up first (an exact replay answers the recorded outcome and commits
 * nothing), then the incarnation, the branch ids, the source change, and
 * last the names, whose refusals (branch_exists, name_mismatch) are recorded
 * outcomes.  Names are unique ignoring ASCII case: the table keeps each
 * name's lowercase key under a unique index.  It must never delete a
 * branch: merges, provenance and log rows name branches by id. */
#include "service_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* More origins than this in one chain means the table loops. */
#define ORIGIN_HOPS_MAX 100000

/* ---- names ---------------------------------------------------------------------------- */
/* The uniqueness key of a valid name: its ASCII lowercase. */
static void name_key(const char *name, size_t len, char *key)
{
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        key[i] = (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
    }
}

static void id_hex(const uint8_t id[16], char out[33])
{
    cn_hex_encode(id, 16, out);
}

/* ---- rows ----------------------------------------------------------------------------- */
/* Reads a BRANCH_COLS row (meta/sql/repos.h). */
static cn_err_t branch_row(cn_meta_stmt_t *st, cn_repos_branch_t *b)
{
    memset(b, 0, sizeof *b);
    size_t n = 0;
    const void *name = cn_meta_column_blob(st, 1, &n);
    if (!cn__col_fixed(st, 0, b->id, 16) || !name || n == 0 || n > CN_REPOS_BRANCH_NAME_MAX)
        return CN_E_CORRUPT;
    memcpy(b->name, name, n);
    b->head = (uint64_t)cn_meta_column_int64(st, 2);
    b->has_origin = !cn_meta_column_is_null(st, 3);
    if (b->has_origin && !cn__col_fixed(st, 3, b->origin, 16))
        return CN_E_CORRUPT;
    b->origin_change = (uint64_t)cn_meta_column_int64(st, 4);
    b->created_ms = cn_meta_column_int64(st, 5);
    return CN_OK;
}

/* The branch of the first row of a bound BRANCH_COLS query (finished here):
 * *found false without one. */
static cn_err_t branch_first(cn_meta_stmt_t *st, bool *found, cn_repos_branch_t *out)
{
    cn_err_t err = cn_meta_step(st);
    *found = err == CN_META_ROW;
    if (err == CN_META_ROW)
        err = branch_row(st, out);
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
}

static cn_err_t branch_find(cn_meta_txn_t *txn, const uint8_t repo[16], const uint8_t id[16],
                            bool *found, cn_repos_branch_t *out)
{
    cn_meta_stmt_t *st = NULL;
    CN_TRY(cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_BRANCH_GET], "bb", CN__ARG_ID(repo),
                          CN__ARG_ID(id)));
    return branch_first(st, found, out);
}

cn_err_t cn__branch_load(cn_meta_txn_t *txn, cn_repos_req_t *rq, const uint8_t repo[16],
                         const uint8_t branch[16], cn_repos_branch_t *out)
{
    bool found = false;
    CN_TRY(branch_find(txn, repo, branch, &found, out));
    if (found)
        return CN_OK;
    char hex[33];
    id_hex(branch, hex);
    return cn__rfail(rq, CN_E_NOT_FOUND, CN_REPOS_E_BRANCH_NOT_FOUND,
                     "branch %s is not in the repository's branch table", hex);
}

cn_err_t cn__branch_head(cn_meta_txn_t *txn, cn_repos_req_t *rq, const uint8_t repo[16],
                         const uint8_t branch[16], uint64_t *head, char *name, size_t cap)
{
    cn_repos_branch_t b;
    CN_TRY(cn__branch_load(txn, rq, repo, branch, &b));
    *head = b.head;
    if (name && cap)
        snprintf(name, cap, "%s", b.name);
    return CN_OK;
}

cn_err_t cn__branch_within(cn_repos_req_t *rq, const cn_repos_branch_t *b, uint64_t rev)
{
    if (rev >= b->origin_change && rev <= b->head)
        return CN_OK;
    return cn__rfail(rq, CN_E_NOT_FOUND, CN_REPOS_E_CHANGE_NOT_FOUND,
                     "change %llu is outside the lifetime of branch %s (%llu..%llu)",
                     (unsigned long long)rev, b->name, (unsigned long long)b->origin_change,
                     (unsigned long long)b->head);
}

/* ---- snapshots -------------------------------------------------------------------------- */
/* The newest commit of branch at or before change: *found, its change, id
 * and roots. */
static cn_err_t commit_at(cn_meta_txn_t *txn, const uint8_t repo[16], const uint8_t branch[16],
                          uint64_t change, bool *found, uint64_t *at, cn_digest_t *id,
                          cn_digest_t *revision, cn_digest_t *content)
{
    cn_meta_stmt_t *st = NULL;
    CN_TRY(cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_COMMIT_AT], "bbi", CN__ARG_ID(repo),
                          CN__ARG_ID(branch), (int64_t)change));
    cn_err_t err = cn_meta_step(st);
    *found = err == CN_META_ROW;
    if (err == CN_META_ROW) {
        *at = (uint64_t)cn_meta_column_int64(st, 0);
        if (!cn__col_fixed(st, 1, id->b, CN_DIGEST_LEN) ||
            !cn__col_fixed(st, 2, revision->b, CN_DIGEST_LEN) ||
            !cn__col_fixed(st, 3, content->b, CN_DIGEST_LEN))
            err = CN_E_CORRUPT;
    }
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
}

static cn_err_t empty_root(cn_meta_txn_t *txn, const uint8_t repo[16], cn_digest_t *revision,
                           cn_digest_t *content)
{
    cn_meta_stmt_t *st = NULL;
    CN_TRY(cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_ROOT_GET], "b", CN__ARG_ID(repo)));
    cn_err_t err = cn_meta_step(st);
    if (err == CN_META_ROW && (!cn__col_fixed(st, 0, revision->b, CN_DIGEST_LEN) ||
                               !cn__col_fixed(st, 1, content->b, CN_DIGEST_LEN)))
        err = CN_E_CORRUPT;
    else if (err == CN_META_DONE)
        err = CN_E_CORRUPT;
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
}

cn_err_t cn__snapshot_at(cn_meta_txn_t *txn, const uint8_t repo[16], const uint8_t branch[16],
                         uint64_t change, uint64_t *commit_change, cn_digest_t *commit_id,
                         cn_digest_t *revision, cn_digest_t *content)
{
    uint8_t cur[16];
    uint64_t at = 0;
    cn_digest_t id;
    memset(&id, 0, sizeof id);
    memcpy(cur, branch, 16);
    cn_err_t err = CN_E_CORRUPT;
    for (int hop = 0; hop < ORIGIN_HOPS_MAX; hop++) {
        bool found = false;
        cn_repos_branch_t b;
        if ((err = commit_at(txn, repo, cur, change, &found, &at, &id, revision, content)) < 0 ||
            found)
            break;
        if ((err = branch_find(txn, repo, cur, &found, &b)) < 0)
            break;
        if (!found || !b.has_origin) {
            /* main before its first commit: the empty tree */
            at = 0;
            memset(&id, 0, sizeof id);
            err = found ? empty_root(txn, repo, revision, content) : CN_E_CORRUPT;
            break;
        }
        memcpy(cur, b.origin, 16);
        change = b.origin_change;
        err = CN_E_CORRUPT; /* unless a later hop ends the chain */
    }
    if (err >= 0 && commit_change)
        *commit_change = at;
    if (err >= 0 && commit_id)
        *commit_id = id;
    return err;
}

cn_err_t cn__snapshot_root(cn_meta_txn_t *txn, const uint8_t repo[16], const uint8_t branch[16],
                           uint64_t change, cn_digest_t *revision, cn_digest_t *content)
{
    return cn__snapshot_at(txn, repo, branch, change, NULL, NULL, revision, content);
}

/* ---- list and info -------------------------------------------------------------------- */
/* A page of branches named after `after`, read into rows (each a
 * cn_repos_branch_t) and handed to the caller's fn after the run, so that a
 * repeated run (CN_META_RETRY) hands each once. */
typedef struct branch_page {
    const char *after;
    size_t after_len;
    uint32_t limit;
    cn_buf_t rows;
    bool more;
} branch_page_t;

static cn_err_t list_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    branch_page_t *pg = ctx;
    cn_meta_stmt_t *st = NULL;
    cn_buf_reset(&pg->rows); /* an earlier attempt's page */
    pg->more = false;
    cn_err_t err = cn_meta_queryf(
        txn, &st, cn__sql_repos[CN_SQL_REPOS_BRANCH_PAGE_AFTER], "bbi", CN__ARG_ID(repo->info.id),
        (const void *)(pg->after ? pg->after : ""), pg->after_len, (int64_t)pg->limit + 1);
    for (uint32_t n = 0; err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW; n++) {
        cn_repos_branch_t b;
        if (n == pg->limit) {
            pg->more = true;
            break;
        }
        if ((err = branch_row(st, &b)) < 0 || (err = cn_buf_append(&pg->rows, &b, sizeof b)) != 0)
            break;
    }
    cn_meta_finish(st);
    return err == CN_META_ROW || err == CN_META_DONE ? CN_OK : err;
}

cn_err_t cn_repos_branch_list(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                              const char *after, size_t after_len, uint32_t limit,
                              cn_repos_branch_fn fn, void *ctx, bool *more)
{
    *more = false;
    if (after && !cn_repos_branch_name_ok(after, after_len))
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED, "the cursor is not a branch name");
    branch_page_t pg = { after, after ? after_len : 0, limit, { 0 }, false };
    if (pg.limit == 0)
        pg.limit = 1;
    if (pg.limit > CN_REPOS_PAGE_MAX)
        pg.limit = CN_REPOS_PAGE_MAX;
    cn_err_t err =
        cn__repo_run(r, rq, repo, CN__READ, CN_META_RUN_READ | CN_META_RETRY, list_body, &pg);
    for (size_t off = 0; err == CN_OK && off < pg.rows.len; off += sizeof(cn_repos_branch_t)) {
        cn_repos_branch_t b;
        memcpy(&b, pg.rows.data + off, sizeof b);
        err = fn(ctx, &b);
    }
    cn_buf_free(&pg.rows);
    *more = err >= 0 && pg.more;
    return err;
}

/* A branch asked for by id (id non-NULL) or name, and the row found. */
typedef struct branch_query {
    cn_repos_req_t *rq;
    const uint8_t *id;
    const char *name;
    size_t name_len;
    cn_repos_branch_t out;
} branch_query_t;

static cn_err_t info_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    branch_query_t *bq = ctx;
    if (bq->id)
        return cn__branch_load(txn, bq->rq, repo->info.id, bq->id, &bq->out);
    cn_meta_stmt_t *st = NULL;
    bool found = false;
    CN_TRY(cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_BRANCH_BY_NAME], "bb",
                          CN__ARG_ID(repo->info.id), (const void *)bq->name, bq->name_len));
    CN_TRY(branch_first(st, &found, &bq->out));
    return found ? CN_OK
                 : cn__rfail(bq->rq, CN_E_NOT_FOUND, CN_REPOS_E_BRANCH_NOT_FOUND,
                             "no branch is named %.*s", (int)bq->name_len, bq->name);
}

cn_err_t cn_repos_branch_info(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                              const uint8_t *id, const char *name, size_t name_len,
                              cn_repos_branch_t *out)
{
    if (!id && !cn_repos_branch_name_ok(name, name_len))
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED, "not a branch name");
    branch_query_t bq = { .rq = rq, .id = id, .name = name, .name_len = name_len };
    cn_err_t err =
        cn__repo_run(r, rq, repo, CN__READ, CN_META_RUN_READ | CN_META_RETRY, info_body, &bq);
    if (err >= 0)
        *out = bq.out;
    return err;
}

/* ---- fingerprints and recorded outcomes ------------------------------------------------ */
static void b3_le(cn_blake3_t *h, uint64_t v, int n)
{
    uint8_t le[8];
    for (int i = 0; i < n; i++)
        le[i] = (uint8_t)(v >> (8 * i));
    cn_blake3_update(h, le, (size_t)n);
}

void cn_repos_branch_fp(const cn_repos_branch_mutate_t *m, cn_digest_t *out)
{
    static const char domain[] = "cairn:branch-operation:v1";
    cn_blake3_t h;
    cn_blake3_init(&h);
    cn_blake3_update(&h, domain, sizeof domain); /* includes the NUL */
    cn_blake3_update(&h, m->repo, 16);
    cn_blake3_update(&h, m->incarnation, 16);
    cn_blake3_update(&h, m->branch, 16);
    b3_le(&h, m->action, 1);
    b3_le(&h, m->name_len, 2);
    cn_blake3_update(&h, m->name, m->name_len);
    if (m->action == CN_REPOS_BRANCH_CREATE) {
        cn_blake3_update(&h, m->source, 16);
        b3_le(&h, m->source_change, 8);
    } else {
        b3_le(&h, m->expected_len, 2);
        cn_blake3_update(&h, m->expected, m->expected_len);
    }
    cn_blake3_final(&h, out);
}

/* A branch outcome record, little-endian:
 *   u8 outcome, then accepted: [16] id | u16 n | name | u64 head | u8 has
 *   origin | [16] origin | u64 origin change | i64 created ms;
 *   rejected: u16 code | u16 n | detail. */
static cn_err_t outcome_encode(const cn_repos_branch_outcome_t *o, cn_buf_t *b)
{
    CN_TRY(cn_buf_put_u8(b, o->outcome));
    if (o->outcome == CN_REPOS_REJECTED) {
        size_t dl = strlen(o->detail);
        CN_TRY(cn_buf_put_u16le(b, o->code));
        CN_TRY(cn_buf_put_u16le(b, (uint16_t)dl));
        return cn_buf_append(b, o->detail, dl);
    }
    const cn_repos_branch_t *br = &o->branch;
    size_t nl = strlen(br->name);
    CN_TRY(cn_buf_append(b, br->id, 16));
    CN_TRY(cn_buf_put_u16le(b, (uint16_t)nl));
    CN_TRY(cn_buf_append(b, br->name, nl));
    CN_TRY(cn_buf_put_u64le(b, br->head));
    CN_TRY(cn_buf_put_u8(b, br->has_origin ? 1 : 0));
    CN_TRY(cn_buf_append(b, br->origin, 16));
    CN_TRY(cn_buf_put_u64le(b, br->origin_change));
    return cn_buf_put_u64le(b, (uint64_t)br->created_ms);
}

static void rd_fixed(cn_rd_t *r, void *out, size_t n)
{
    const uint8_t *p = cn_rd_bytes(r, n);
    if (p)
        memcpy(out, p, n);
}

cn_err_t cn__branch_outcome_decode(const uint8_t *p, size_t n, const uint8_t op[16],
                                   cn_repos_branch_outcome_t *out)
{
    memset(out, 0, sizeof *out);
    memcpy(out->operation, op, 16);
    cn_rd_t r = cn_rd_init(p, n);
    out->outcome = cn_rd_u8(&r);
    if (out->outcome == CN_REPOS_REJECTED) {
        out->code = cn_rd_u16le(&r);
        uint16_t dl = cn_rd_u16le(&r);
        if (dl > CN_REPOS_DETAIL_MAX)
            return CN_E_CORRUPT;
        rd_fixed(&r, out->detail, dl);
    } else if (out->outcome == CN_REPOS_ACCEPTED) {
        cn_repos_branch_t *b = &out->branch;
        rd_fixed(&r, b->id, 16);
        uint16_t nl = cn_rd_u16le(&r);
        if (nl == 0 || nl > CN_REPOS_BRANCH_NAME_MAX)
            return CN_E_CORRUPT;
        rd_fixed(&r, b->name, nl);
        b->head = cn_rd_u64le(&r);
        b->has_origin = cn_rd_u8(&r) != 0;
        rd_fixed(&r, b->origin, 16);
        b->origin_change = cn_rd_u64le(&r);
        b->created_ms = (int64_t)cn_rd_u64le(&r);
    } else {
        return CN_E_CORRUPT;
    }
    return r.err || cn_rd_left(&r) ? CN_E_CORRUPT : CN_OK;
}

/* ---- mutations ------------------------------------------------------------------------- */
/* A mutation in progress: the request, its fingerprint, and its outcome
 * (replay: the recorded one was found). */
typedef struct mutation {
    cn_repos_t *r;
    cn_repos_req_t *rq;
    const cn_repos_branch_mutate_t *m;
    cn_digest_t fp;
    cn_repos_branch_outcome_t out;
    bool replay;
} mutation_t;

static void reject(mutation_t *mt, uint16_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void reject(mutation_t *mt, uint16_t code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    mt->out.outcome = CN_REPOS_REJECTED;
    mt->out.code = code;
    vsnprintf(mt->out.detail, sizeof mt->out.detail, fmt, ap);
    va_end(ap);
}

/* The id of the branch whose name key is key: *taken. */
static cn_err_t key_owner(cn_meta_txn_t *txn, const uint8_t repo[16], const char *key, size_t n,
                          bool *taken, uint8_t owner[16])
{
    cn_meta_stmt_t *st = NULL;
    CN_TRY(cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_BRANCH_KEY_OWNER], "bb",
                          CN__ARG_ID(repo), (const void *)key, n));
    cn_err_t err = cn_meta_step(st);
    *taken = err == CN_META_ROW;
    if (err == CN_META_ROW && !cn__col_fixed(st, 0, owner, 16))
        err = CN_E_CORRUPT;
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
}

/* The fold rows of a path of a new branch (a tree page callback). */
typedef struct fold_copy {
    cn_meta_txn_t *txn;
    const uint8_t *repo, *branch;
    uint8_t *fold;
} fold_copy_t;

static cn_err_t fold_row(void *ctx, const cn_repos_tree_row_t *row)
{
    fold_copy_t *fc = ctx;
    long fn = cn_repos_path_fold(row->path, row->path_len, fc->fold, CN_REPOS_MAX_PATH);
    if (fn < 0)
        return CN_E_CORRUPT;
    cn_err_t err =
        cn_meta_execf(fc->txn, cn__sql_repos[CN_SQL_REPOS_FOLD_INSERT], "bbbb",
                      CN__ARG_ID(fc->repo), CN__ARG_ID(fc->branch), (const void *)row->path,
                      row->path_len, (const void *)fc->fold, (size_t)fn);
    return err < 0 ? err : CN_OK;
}

/* The case-fold rows of a new branch: those of the live paths of its
 * source's snapshot at `at`.  At the source's head they are the source's own
 * rows; at an older change the snapshot's live entries are walked. */
static cn_err_t copy_folds(cn_meta_txn_t *txn, const uint8_t repo[16], const cn_repos_branch_t *src,
                           uint64_t at, const uint8_t branch[16])
{
    if (at == src->head) {
        cn_err_t err = cn_meta_execf(txn, cn__sql_repos[CN_SQL_REPOS_FOLD_COPY], "bbb",
                                     CN__ARG_ID(branch), CN__ARG_ID(repo), CN__ARG_ID(src->id));
        return err < 0 ? err : CN_OK;
    }
    fold_copy_t fc = { txn, repo, branch, malloc(CN_REPOS_MAX_PATH) };
    cn__ptree_t *t = NULL;
    cn_digest_t rev, content;
    bool more = false;
    cn_err_t err = fc.fold ? CN_OK : -ENOMEM;
    if (err >= 0)
        err = cn__snapshot_root(txn, repo, src->id, at, &rev, &content);
    if (err >= 0)
        err = cn__ptree_open(txn, repo, &rev, &t);
    if (err >= 0)
        err = cn__ptree_page(t, (const uint8_t *)"", 0, NULL, 0, UINT32_MAX, fold_row, &fc, &more);
    cn__ptree_free(t);
    free(fc.fold);
    return err;
}

static cn_err_t create_branch(cn_meta_txn_t *txn, const uint8_t repo[16], mutation_t *mt)
{
    const cn_repos_branch_mutate_t *m = mt->m;
    cn_repos_branch_t src, other;
    char key[CN_REPOS_BRANCH_NAME_MAX], hex[33];
    uint8_t owner[16];
    bool found = false;
    CN_TRY(cn__branch_load(txn, mt->rq, repo, m->source, &src));
    CN_TRY(cn__branch_within(mt->rq, &src, m->source_change));
    CN_TRY(branch_find(txn, repo, m->branch, &found, &other));
    if (found) {
        id_hex(m->branch, hex);
        reject(mt, CN_REPOS_E_BRANCH_EXISTS, "branch id %s is in use (by %s)", hex, other.name);
        return CN_OK;
    }
    name_key(m->name, m->name_len, key);
    CN_TRY(key_owner(txn, repo, key, m->name_len, &found, owner));
    if (found) {
        reject(mt, CN_REPOS_E_BRANCH_EXISTS,
               "a branch named %.*s exists (names are unique ignoring case)", (int)m->name_len,
               m->name);
        return CN_OK;
    }
    cn_repos_branch_t *b = &mt->out.branch;
    memcpy(b->id, m->branch, 16);
    memcpy(b->name, m->name, m->name_len);
    b->head = m->source_change;
    b->has_origin = true;
    memcpy(b->origin, m->source, 16);
    b->origin_change = m->source_change;
    b->created_ms = cn__repos_now_ms();
    cn_err_t err = cn_meta_execf(txn, cn__sql_repos[CN_SQL_REPOS_BRANCH_INSERT], "bbbbibii",
                                 CN__ARG_ID(repo), CN__ARG_ID(b->id), (const void *)m->name,
                                 m->name_len, (const void *)key, m->name_len, (int64_t)b->head,
                                 CN__ARG_ID(b->origin), (int64_t)b->origin_change, b->created_ms);
    if (err >= 0)
        err = copy_folds(txn, repo, &src, m->source_change, b->id);
    if (err >= 0)
        mt->out.outcome = CN_REPOS_ACCEPTED;
    return err < 0 ? err : CN_OK;
}

static cn_err_t rename_branch(cn_meta_txn_t *txn, const uint8_t repo[16], mutation_t *mt)
{
    const cn_repos_branch_mutate_t *m = mt->m;
    cn_repos_branch_t *b = &mt->out.branch;
    char key[CN_REPOS_BRANCH_NAME_MAX];
    uint8_t owner[16];
    bool taken = false;
    CN_TRY(cn__branch_load(txn, mt->rq, repo, m->branch, b));
    if (strlen(b->name) != m->expected_len || memcmp(b->name, m->expected, m->expected_len) != 0) {
        reject(mt, CN_REPOS_E_NAME_MISMATCH, "the branch is named %s, not %.*s", b->name,
               (int)m->expected_len, m->expected);
        return CN_OK;
    }
    name_key(m->name, m->name_len, key);
    CN_TRY(key_owner(txn, repo, key, m->name_len, &taken, owner));
    /* a case variant of its own name is its own to take */
    if (taken && memcmp(owner, m->branch, 16) != 0) {
        reject(mt, CN_REPOS_E_BRANCH_EXISTS,
               "a branch named %.*s exists (names are unique ignoring case)", (int)m->name_len,
               m->name);
        return CN_OK;
    }
    cn_err_t err = cn_meta_execf(txn, cn__sql_repos[CN_SQL_REPOS_BRANCH_RENAME], "bbbb",
                                 (const void *)m->name, m->name_len, (const void *)key, m->name_len,
                                 CN__ARG_ID(repo), CN__ARG_ID(m->branch));
    if (err < 0)
        return err;
    memset(b->name, 0, sizeof b->name);
    memcpy(b->name, m->name, m->name_len);
    mt->out.outcome = CN_REPOS_ACCEPTED;
    return CN_OK;
}

/* The whole mutation in one write transaction: replay, refusals, the
 * change and its recorded outcome.  Repeatable: it starts from scratch. */
static cn_err_t mutate_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    mutation_t *mt = ctx;
    const cn_repos_branch_mutate_t *m = mt->m;
    const uint8_t *id = repo->info.id;
    cn__op_t rec;
    memset(&mt->out, 0, sizeof mt->out);
    memcpy(mt->out.operation, m->operation, 16);
    mt->replay = false;
    cn_err_t err = cn__op_find(txn, id, m->operation, &rec);
    if (err >= 0 && rec.found) {
        if (rec.kind == CN_REPOS_OP_BRANCH && memcmp(rec.fp.b, mt->fp.b, CN_DIGEST_LEN) == 0) {
            err = cn__branch_outcome_decode(rec.outcome.data, rec.outcome.len, m->operation,
                                            &mt->out);
            mt->replay = true;
            cn_meta_discard(txn); /* nothing to write: no commit, no fsync */
        } else {
            err = cn__rfail(mt->rq, CN_E_CONFLICT, CN_REPOS_E_OPERATION_INTENT_MISMATCH,
                            "the operation id was used for another request");
        }
    }
    cn__op_free(&rec);
    if (err < 0 || mt->replay)
        return err;
    if (memcmp(repo->info.incarnation, m->incarnation, 16) != 0)
        return cn__rfail(mt->rq, CN_E_CONFLICT, CN_REPOS_E_INCARNATION_MISMATCH,
                         "the repository was restored: its incarnation differs");
    err = m->action == CN_REPOS_BRANCH_CREATE ? create_branch(txn, id, mt)
                                              : rename_branch(txn, id, mt);
    cn_buf_t out = { 0 };
    static const uint8_t no_workspace[16];
    if (err >= 0 && (err = outcome_encode(&mt->out, &out)) >= 0)
        err = cn__op_record(txn, id, m->operation, CN_REPOS_OP_BRANCH, &mt->fp, no_workspace, &out);
    cn_buf_free(&out);
    return err;
}

static bool zero16(const uint8_t id[16])
{
    static const uint8_t zero[16];
    return memcmp(id, zero, 16) == 0;
}

cn_err_t cn_repos_branch_mutate(cn_repos_t *r, cn_repos_req_t *rq,
                                const cn_repos_branch_mutate_t *m, cn_repos_branch_outcome_t *out)
{
    memset(out, 0, sizeof *out);
    bool create = m->action == CN_REPOS_BRANCH_CREATE;
    if (zero16(m->operation) || zero16(m->branch) || (create && zero16(m->source)))
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                         "operation, branch and source ids are nonzero");
    if (!create && m->action != CN_REPOS_BRANCH_RENAME)
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                         "a branch action is 1 (create) or 2 (rename)");
    if (!cn_repos_branch_name_ok(m->name, m->name_len) ||
        (!create && !cn_repos_branch_name_ok(m->expected, m->expected_len)))
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                         "a branch name is 1..256 bytes of letters, digits, '-', '_', '.' and "
                         "'/' (segments not empty, not starting with '.'; not starting with '-')");
    mutation_t mt = { .r = r, .rq = rq, .m = m };
    cn_repos_branch_fp(m, &mt.fp);
    cn_err_t err = cn__repo_run(r, rq, m->repo, CN__WRITE, CN_META_RUN_WRITE | CN_META_RETRY,
                                mutate_body, &mt);
    if (err >= 0)
        *out = mt.out;
    return err;
}

/* An operation asked about: whether a branch outcome is recorded for it. */
typedef struct outcome_query {
    cn_repos_req_t *rq;
    const uint8_t *operation;
    bool known;
    cn_repos_branch_outcome_t out;
} outcome_query_t;

static cn_err_t outcome_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    outcome_query_t *oq = ctx;
    cn__op_t rec;
    oq->known = false;
    cn_err_t err = cn__op_find(txn, repo->info.id, oq->operation, &rec);
    if (err >= 0 && rec.found && rec.kind != CN_REPOS_OP_BRANCH)
        err = cn__rfail(oq->rq, CN_E_CONFLICT, CN_REPOS_E_OPERATION_INTENT_MISMATCH,
                        "the operation id belongs to a submit, not a branch mutation");
    else if (err >= 0 && rec.found)
        err = cn__branch_outcome_decode(rec.outcome.data, rec.outcome.len, oq->operation, &oq->out);
    oq->known = err >= 0 && rec.found;
    cn__op_free(&rec);
    return err;
}

cn_err_t cn_repos_branch_outcome(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                                 const uint8_t operation[16], bool *known,
                                 cn_repos_branch_outcome_t *out)
{
    outcome_query_t oq = { .rq = rq, .operation = operation };
    cn_err_t err =
        cn__repo_run(r, rq, repo, CN__READ, CN_META_RUN_READ | CN_META_RETRY, outcome_body, &oq);
    *known = err >= 0 && oq.known;
    memset(out, 0, sizeof *out);
    if (*known)
        *out = oq.out;
    return err;
}
