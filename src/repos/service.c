/* The repos service handle: schema, the store liveness source, the
 * permission mapping, and shared helpers.
 *
 * Durability invariants:
 *   1. Every blob a membership row names was published (fsynced, renamed,
 *      directory fsynced) before the transaction inserting the row began to
 *      commit.
 *   2. A submit's commit blob is published before the write transaction that
 *      advances the branch; the transaction re-checks the branch head it was
 *      planned against, so a concurrent submit makes it re-plan, never lose
 *      an update.
 *   3. Tree-node rows are immutable and named by their hash; they are only
 *      ever inserted (ON CONFLICT DO NOTHING), so a snapshot once committed
 *      stays readable.
 *
 * Permission mapping (docs/protocol/scribe.md, "Server"): a trusted request
 * (plaintext Scribe) may do everything; a principal holding CN_PERM_ADMIN may
 * do everything; any other principal reads a repository with a CN_NS_READ
 * grant and writes it with a CN_NS_WRITE grant on the namespace
 * "scribe/<repository name>"; creating a repository needs CN_PERM_ADMIN. */
#include "service_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int64_t cn__repos_now_ms(void)
{
    return cn_wall_ms();
}

cn_err_t cn__rfail(cn_repos_req_t *rq, cn_err_t err, uint16_t code, const char *fmt, ...)
{
    if (rq) {
        va_list ap;
        va_start(ap, fmt);
        cn_fail_vset(&rq->fail, err, code, fmt, ap);
        va_end(ap);
    }
    return err;
}

const char *cn_repos_code_name(unsigned code)
{
    switch (code) {
    case CN_REPOS_E_NONE: return "NONE";
#define CN__REPOS_DETAIL_NAME(name, value) \
    case value: return #name;
        CN_REPOS_DETAILS(CN__REPOS_DETAIL_NAME)
#undef CN__REPOS_DETAIL_NAME
    default: return NULL;
    }
}

cn_err_t cn__bind_id(cn_meta_stmt_t *st, int idx, const uint8_t id[16])
{
    return cn_meta_bind_blob(st, idx, id, 16);
}

cn_err_t cn__bind_digest(cn_meta_stmt_t *st, int idx, const cn_digest_t *d)
{
    return cn_meta_bind_blob(st, idx, d->b, CN_DIGEST_LEN);
}

bool cn__col_fixed(cn_meta_stmt_t *st, int col, void *out, size_t len)
{
    size_t n = 0;
    const void *p = cn_meta_column_blob(st, col, &n);
    if (!p || n != len)
        return false;
    memcpy(out, p, len);
    return true;
}

/* ---- authorization ------------------------------------------------------------------ */
bool cn__repo_allowed(cn_repos_t *r, const cn_repos_req_t *rq, const char *name, int access)
{
    if (rq->trusted)
        return true;
    const cn_principal_t *p = rq->principal;
    if (!p)
        return false;
    if (p->perms & CN_PERM_ADMIN)
        return true;
    if (!r->identity || !name)
        return false;
    char ns[CN_NAMESPACE_MAX + 1];
    if ((size_t)snprintf(ns, sizeof ns, "scribe/%s", name) >= sizeof ns)
        return false;
    uint32_t actions = 0;
    if (cn_identity_ns_actions(r->identity, ns, p->account_id, &actions) < 0)
        return false;
    return (actions & (access == CN__WRITE ? CN_NS_WRITE : CN_NS_READ)) != 0;
}

/* ---- repositories ----------------------------------------------------------------------- */
/* Reads a row of a REPO_COLS statement (meta/sql/repos.h) into ri. */
static cn_err_t repo_row(cn_meta_stmt_t *st, cn_repos_info_t *ri)
{
    memset(ri, 0, sizeof *ri);
    size_t n = 0;
    const void *name = cn_meta_column_blob(st, 1, &n);
    if (!cn__col_fixed(st, 0, ri->id, 16) || !name || n > CN_REPOS_NAME_MAX ||
        !cn__col_fixed(st, 2, ri->incarnation, 16) || !cn__col_fixed(st, 3, ri->main_branch, 16))
        return CN_E_CORRUPT;
    memcpy(ri->name, name, n);
    ri->name[n] = 0;
    ri->head = (uint64_t)cn_meta_column_int64(st, 4);
    ri->created_ms = cn_meta_column_int64(st, 5);
    ri->compression = (uint8_t)cn_meta_column_int64(st, 6);
    return CN_OK;
}

cn_err_t cn__repo_load(cn_repos_t *r, cn_meta_txn_t *txn, cn_repos_req_t *rq, const uint8_t id[16],
                       int access, cn__repo_t *out)
{
    cn_meta_stmt_t *st = NULL;
    cn_err_t err =
        cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_REPO_BY_ID], "b", CN__ARG_ID(id));
    if (err >= 0)
        err = cn_meta_step(st);
    if (err == CN_META_ROW)
        err = repo_row(st, &out->info);
    else if (err == CN_META_DONE)
        err = CN_E_NOT_FOUND;
    cn_meta_finish(st);
    if (err == CN_E_NOT_FOUND || (err >= 0 && !cn__repo_allowed(r, rq, out->info.name, CN__READ)))
        err = cn__rfail(rq, CN_E_NOT_FOUND, CN_REPOS_E_REPOSITORY_NOT_FOUND, "no such repository");
    else if (err >= 0 && access == CN__WRITE && !cn__repo_allowed(r, rq, out->info.name, CN__WRITE))
        err = cn__rfail(rq, CN_E_DENIED, CN_REPOS_E_FORBIDDEN,
                        "writing repository %s is not allowed", out->info.name);
    return err;
}

/* One repository body of cn__repo_run: what to load, and what runs next. */
typedef struct repo_run {
    cn_repos_t *r;
    cn_repos_req_t *rq;
    const uint8_t *id;
    int access;
    cn__repo_body_fn body;
    void *ctx;
} repo_run_t;

static cn_err_t repo_run_body(cn_meta_txn_t *txn, void *ctx)
{
    const repo_run_t *rr = ctx;
    cn__repo_t repo;
    cn_err_t err = cn__repo_load(rr->r, txn, rr->rq, rr->id, rr->access, &repo);
    return err < 0 ? err : rr->body(txn, &repo, rr->ctx);
}

cn_err_t cn__repo_run(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t id[16], int access,
                      unsigned flags, cn__repo_body_fn body, void *ctx)
{
    repo_run_t rr = { r, rq, id, access, body, ctx };
    return cn_meta_run(r->meta, flags, repo_run_body, &rr);
}

static cn_err_t info_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    (void)txn;
    *(cn_repos_info_t *)ctx = repo->info;
    return CN_OK;
}

cn_err_t cn__repo_info(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t id[16], int access,
                       cn_repos_info_t *out)
{
    cn_repos_info_t info;
    cn_err_t err =
        cn__repo_run(r, rq, id, access, CN_META_RUN_READ | CN_META_RETRY, info_body, &info);
    if (err >= 0)
        *out = info;
    return err;
}

static bool name_ok(const char *name, size_t len)
{
    if (!len || len > CN_REPOS_NAME_MAX || cn_repos_utf8_check((const uint8_t *)name, len) < 0)
        return false;
    if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c == '/' || c < 0x20 || c == 0x7f)
            return false;
    }
    return true;
}

/* A repository to create: its name and its row; rq takes the failure. */
typedef struct new_repo {
    cn_repos_req_t *rq;
    const char *name;
    size_t len;
    cn_repos_info_t info;
} new_repo_t;

static cn_err_t create_body(cn_meta_txn_t *txn, void *ctx)
{
    const new_repo_t *nr = ctx;
    const cn_repos_info_t *ri = &nr->info;
    cn_digest_t rev, content;
    cn_err_t err =
        cn_meta_execf(txn, cn__sql_repos[CN_SQL_REPOS_REPO_NAME_TAKEN], "b", nr->name, nr->len);
    if (err == CN_META_ROW)
        err = CN_E_EXISTS;
    if (err >= 0)
        err = cn_meta_execf(txn, cn__sql_repos[CN_SQL_REPOS_REPO_INSERT], "bbbbiii",
                            CN__ARG_ID(ri->id), nr->name, nr->len, CN__ARG_ID(ri->incarnation),
                            CN__ARG_ID(ri->main_branch), ri->created_ms, (int64_t)ri->compression,
                            (int64_t)CN_REPOS_SCHEMA);
    /* main: no origin, at change 0, its name key its own (lowercase) name */
    if (err >= 0)
        err = cn_meta_execf(txn, cn__sql_repos[CN_SQL_REPOS_BRANCH_INSERT], "bbbbinii",
                            CN__ARG_ID(ri->id), CN__ARG_ID(ri->main_branch), "main", (size_t)4,
                            "main", (size_t)4, (int64_t)0, (int64_t)0, ri->created_ms);
    if (err >= 0)
        err = cn__ptree_init_empty(txn, ri->id, &rev, &content);
    if (err >= 0)
        err = cn_meta_execf(txn, cn__sql_repos[CN_SQL_REPOS_ROOT_INSERT], "bbb", CN__ARG_ID(ri->id),
                            CN__ARG_DIGEST(&content), CN__ARG_DIGEST(&rev));
    if (err == CN_E_EXISTS)
        err = cn__rfail(nr->rq, err, CN_REPOS_E_REPOSITORY_EXISTS, "a repository named %s exists",
                        ri->name);
    return err < 0 ? err : CN_OK;
}

/* The new repository's random id is the create's operation key
 * (cn_meta_run_keyed): a row of that id is this create's. */
static cn_err_t create_landed(cn_meta_txn_t *txn, void *ctx, bool *found)
{
    const new_repo_t *nr = ctx;
    cn_err_t err =
        cn_meta_execf(txn, cn__sql_repos[CN_SQL_REPOS_REPO_BY_ID], "b", CN__ARG_ID(nr->info.id));
    *found = err == CN_META_ROW;
    return err < 0 ? err : CN_OK;
}

cn_err_t cn_repos_create(cn_repos_t *r, cn_repos_req_t *rq, const char *name, size_t len,
                         uint8_t compression, cn_repos_info_t *out)
{
    if (!name_ok(name, len))
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                         "a repository name is 1..128 bytes of UTF-8 without '/' or control "
                         "characters, and not '.' or '..'");
    if (compression > 1)
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                         "storage compression is 0 (none) or 1 (LZ4)");
    if (!rq->trusted && !(rq->principal && (rq->principal->perms & CN_PERM_ADMIN)))
        return cn__rfail(rq, CN_E_DENIED, CN_REPOS_E_FORBIDDEN,
                         "creating repositories needs the admin permission");
    new_repo_t nr = { .rq = rq, .name = name, .len = len };
    cn_repos_info_t *ri = &nr.info;
    memcpy(ri->name, name, len);
    CN_TRY(cn_random_bytes(ri->id, 16));
    CN_TRY(cn_random_bytes(ri->incarnation, 16));
    CN_TRY(cn_random_bytes(ri->main_branch, 16));
    ri->created_ms = cn__repos_now_ms();
    ri->compression = compression;
    cn_err_t err = cn_meta_run_keyed(r->meta, CN_META_RUN_WRITE | CN_META_RETRY, create_body,
                                     create_landed, &nr);
    if (err >= 0 && out)
        *out = nr.info;
    return err;
}

cn_err_t cn_repos_info(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t id[16],
                       cn_repos_info_t *out)
{
    return cn__repo_info(r, rq, id, CN__READ, out);
}

/* A repository asked for by name, and its row as found. */
typedef struct repo_name {
    const char *name;
    size_t len;
    cn_repos_info_t *out;
} repo_name_t;

static cn_err_t by_name_body(cn_meta_txn_t *txn, void *ctx)
{
    const repo_name_t *rn = ctx;
    cn_meta_stmt_t *st = NULL;
    cn_err_t err =
        cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_REPO_BY_NAME], "b", rn->name, rn->len);
    if (err >= 0)
        err = cn_meta_step(st);
    if (err == CN_META_ROW)
        err = repo_row(st, rn->out);
    else if (err == CN_META_DONE)
        err = CN_E_NOT_FOUND;
    cn_meta_finish(st);
    return err;
}

cn_err_t cn_repos_info_by_name(cn_repos_t *r, cn_repos_req_t *rq, const char *name, size_t len,
                               cn_repos_info_t *out)
{
    cn_err_t err = CN_E_NOT_FOUND;
    repo_name_t rn = { name, len, out };
    if (name_ok(name, len))
        err = cn_meta_run(r->meta, CN_META_RUN_READ | CN_META_RETRY, by_name_body, &rn);
    if (err == CN_E_NOT_FOUND || (err >= 0 && !cn__repo_allowed(r, rq, out->name, CN__READ)))
        err = cn__rfail(rq, CN_E_NOT_FOUND, CN_REPOS_E_REPOSITORY_NOT_FOUND, "no such repository");
    return err;
}

/* A page of the repositories the caller may read, named after `after`: at
 * most limit, read into rows (each a cn_repos_info_t) and handed to the
 * caller's fn after the run, so that a repeated run (CN_META_RETRY) hands
 * each once; more when another follows. */
typedef struct repo_page {
    cn_repos_t *r;
    cn_repos_req_t *rq;
    const char *after;
    uint32_t limit;
    cn_buf_t rows;
    bool more;
} repo_page_t;

static cn_err_t list_body(cn_meta_txn_t *txn, void *ctx)
{
    repo_page_t *pg = ctx;
    cn_meta_stmt_t *st = NULL;
    uint32_t n = 0;
    cn_buf_reset(&pg->rows); /* an earlier attempt's page */
    pg->more = false;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_REPO_LIST_AFTER], "b",
                                  pg->after ? pg->after : "", pg->after ? strlen(pg->after) : 0);
    while (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW) {
        cn_repos_info_t ri;
        if ((err = repo_row(st, &ri)) < 0)
            break;
        if (!cn__repo_allowed(pg->r, pg->rq, ri.name, CN__READ))
            continue;
        if (n == pg->limit) {
            pg->more = true;
            break;
        }
        if ((err = cn_buf_append(&pg->rows, &ri, sizeof ri)) != 0)
            break;
        n++;
    }
    cn_meta_finish(st);
    return err < 0 ? err : (err > 0 && err != CN_META_ROW ? err : CN_OK);
}

cn_err_t cn_repos_list(cn_repos_t *r, cn_repos_req_t *rq, const char *after, uint32_t limit,
                       cn_repos_info_fn fn, void *ctx, bool *more)
{
    if (limit == 0)
        limit = 1;
    if (limit > CN_REPOS_PAGE_MAX)
        limit = CN_REPOS_PAGE_MAX;
    repo_page_t pg = { r, rq, after, limit, { 0 }, false };
    cn_err_t err = cn_meta_run(r->meta, CN_META_RUN_READ | CN_META_RETRY, list_body, &pg);
    for (size_t off = 0; err == CN_OK && off < pg.rows.len; off += sizeof(cn_repos_info_t)) {
        cn_repos_info_t ri;
        memcpy(&ri, pg.rows.data + off, sizeof ri);
        err = fn(ctx, &ri);
    }
    cn_buf_free(&pg.rows);
    *more = pg.more;
    return err;
}

uint32_t cn__page_limit(uint32_t limit)
{
    return limit == 0 ? 1 : limit > CN_REPOS_PAGE_MAX ? CN_REPOS_PAGE_MAX : limit;
}

void cn__rows_start(cn__rows_t *r, uint32_t max)
{
    cn_buf_reset(&r->recs);
    cn_buf_reset(&r->bytes);
    r->n = 0;
    r->max = max;
}

cn_err_t cn__rows_add(cn__rows_t *r, const void *rec, size_t size)
{
    if (r->n >= r->max)
        return CN_E_LIMIT;
    CN_TRY(cn_buf_append(&r->recs, rec, size));
    r->n++;
    return CN_OK;
}

cn_err_t cn__rows_keep(cn__rows_t *r, const void *p, size_t n, size_t *off)
{
    *off = r->bytes.len;
    if (r->n >= r->max)
        return CN_E_LIMIT;
    return n ? cn_buf_append(&r->bytes, p, n) : CN_OK;
}

cn_err_t cn__rows_add_with(cn__rows_t *r, void *rec, size_t size, size_t *off, const void *p,
                           size_t n)
{
    CN_TRY(cn__rows_keep(r, p, n, off));
    return cn__rows_add(r, rec, size);
}

const uint8_t *cn__rows_at(const cn__rows_t *r, size_t off)
{
    return r->bytes.data ? r->bytes.data + off : (const uint8_t *)"";
}

void cn__rows_free(cn__rows_t *r)
{
    cn_buf_free(&r->recs);
    cn_buf_free(&r->bytes);
    r->n = r->max = 0;
}

cn_err_t cn__rows_hand(cn__rows_t *r, cn_err_t err, size_t size, cn__rows_put_fn put, void *ctx)
{
    for (uint32_t i = 0; err == 0 && i < r->n; i++)
        err = put(r, r->recs.data + (size_t)i * size, ctx);
    cn__rows_free(r);
    return err;
}

/* A collected byte string: p[0..n) of the rows' bytes. */
typedef struct bytes_rec {
    size_t p, n;
} bytes_rec_t;

/* The caller's fn and its ctx, for bytes_put. */
typedef struct bytes_to {
    cn_repos_path_fn fn;
    void *ctx;
} bytes_to_t;

cn_err_t cn__rows_bytes_add(void *rows, const uint8_t *p, size_t n)
{
    bytes_rec_t rec = { .n = n };
    return cn__rows_add_with(rows, &rec, sizeof rec, &rec.p, p, n);
}

static cn_err_t bytes_put(const cn__rows_t *rows, void *rec, void *ctx)
{
    const bytes_rec_t *br = rec;
    const bytes_to_t *to = ctx;
    return to->fn(to->ctx, cn__rows_at(rows, br->p), br->n);
}

cn_err_t cn__rows_bytes_hand(cn__rows_t *r, cn_err_t err, cn_repos_path_fn fn, void *ctx)
{
    bytes_to_t to = { fn, ctx };
    return cn__rows_hand(r, err, sizeof(bytes_rec_t), bytes_put, &to);
}

/* The int64 in the first column of sql's first row (0 without one), with
 * ?1 = id unless id is NULL. */
static cn_err_t scalar(cn_meta_txn_t *txn, const char *sql, const uint8_t *id, int64_t *out)
{
    cn_meta_stmt_t *st = NULL;
    cn_err_t err =
        id ? cn_meta_queryf(txn, &st, sql, "b", CN__ARG_ID(id)) : cn_meta_queryf(txn, &st, sql, "");
    if (err >= 0)
        err = cn_meta_step(st);
    *out = err == CN_META_ROW ? cn_meta_column_int64(st, 0) : 0;
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
}

static cn_err_t usage_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    int64_t v = 0;
    cn_err_t err = scalar(txn, cn__sql_repos[CN_SQL_REPOS_REPO_USAGE], repo->info.id, &v);
    *(uint64_t *)ctx = (uint64_t)v;
    return err;
}

cn_err_t cn_repos_usage(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t id[16], uint64_t *bytes)
{
    uint64_t used = 0;
    cn_err_t err =
        cn__repo_run(r, rq, id, CN__READ, CN_META_RUN_READ | CN_META_RETRY, usage_body, &used);
    if (err >= 0)
        *bytes = used;
    return err;
}

/* The instance status and one page of at most 128 repositories after
 * `after` (NULL: from the first), read into rows (each a usage_row_t) and
 * handed with its usage to the caller's fn after the run, so that a
 * repeated run (CN_META_RETRY) hands each once. */
typedef struct instance_page {
    const uint8_t *after;
    cn_repos_instance_t *out;
    cn_buf_t rows;
    bool has_next;
    uint8_t *next;
} instance_page_t;

typedef struct usage_row {
    cn_repos_info_t ri;
    uint64_t bytes;
} usage_row_t;

static cn_err_t instance_body(cn_meta_txn_t *txn, void *ctx)
{
    instance_page_t *ip = ctx;
    cn_meta_stmt_t *st = NULL;
    cn_buf_reset(&ip->rows); /* an earlier attempt's page */
    ip->has_next = false;
    int64_t v = 0;
    static const uint8_t zero[16] = { 0 };
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_INSTANCE_INCARNATION], "");
    if (err >= 0) {
        err = cn_meta_step(st);
        err = err == CN_META_ROW && cn__col_fixed(st, 0, ip->out->incarnation, 16) ? CN_OK
                                                                                   : CN_E_CORRUPT;
        cn_meta_finish(st);
        st = NULL;
    }
    if (err >= 0 && (err = scalar(txn, cn__sql_repos[CN_SQL_REPOS_REPO_COUNT], NULL, &v)) >= 0)
        ip->out->total_repositories = (uint64_t)v;
    if (err >= 0 && !ip->after &&
        (err = scalar(txn, cn__sql_repos[CN_SQL_REPOS_USAGE_TOTAL], NULL, &v)) >= 0)
        ip->out->used_bytes = (uint64_t)v;
    if (err >= 0)
        err = cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_REPO_PAGE_AFTER_ID], "b",
                             CN__ARG_ID(ip->after ? ip->after : zero));
    for (uint32_t n = 0; err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW; n++) {
        cn_repos_info_t ri;
        if ((err = repo_row(st, &ri)) < 0)
            break;
        if (n == 128) {
            ip->has_next = true;
            break;
        }
        memcpy(ip->next, ri.id, 16);
        usage_row_t u = { ri, 0 };
        if ((err = scalar(txn, cn__sql_repos[CN_SQL_REPOS_REPO_USAGE], ri.id, &v)) < 0)
            break;
        u.bytes = (uint64_t)v;
        if ((err = cn_buf_append(&ip->rows, &u, sizeof u)) != 0)
            break;
    }
    cn_meta_finish(st);
    return err < 0 ? err : (err == CN_META_DONE || err == CN_META_ROW ? CN_OK : err);
}

cn_err_t cn_repos_instance_status(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t *after,
                                  cn_repos_instance_t *out, cn_repos_usage_fn fn, void *ctx,
                                  bool *has_next, uint8_t next[16])
{
    *has_next = false;
    memset(out, 0, sizeof *out);
    if (!rq->trusted && !(rq->principal && (rq->principal->perms & CN_PERM_ADMIN)))
        return cn__rfail(rq, CN_E_DENIED, CN_REPOS_E_FORBIDDEN,
                         "instance status needs the admin permission");
    instance_page_t ip = { after, out, { 0 }, false, next };
    cn_err_t err = cn_meta_run(r->meta, CN_META_RUN_READ | CN_META_RETRY, instance_body, &ip);
    for (size_t off = 0; err == CN_OK && off < ip.rows.len; off += sizeof(usage_row_t)) {
        usage_row_t u;
        memcpy(&u, ip.rows.data + off, sizeof u);
        err = fn(ctx, &u.ri, u.bytes);
    }
    cn_buf_free(&ip.rows);
    *has_next = ip.has_next;
    if (err >= 0)
        out->has_available = cn_store_space(r->store, &out->available_bytes) == CN_OK;
    return err;
}

/* ---- operation records ---------------------------------------------------------------- */
void cn__op_free(cn__op_t *o)
{
    if (o)
        cn_buf_free(&o->outcome);
}

cn_err_t cn__op_find(cn_meta_txn_t *txn, const uint8_t repo[16], const uint8_t op[16],
                     cn__op_t *out)
{
    memset(out, 0, sizeof *out);
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_OPERATION_FIND], "bb",
                                  CN__ARG_ID(repo), CN__ARG_ID(op));
    if (err >= 0)
        err = cn_meta_step(st);
    if (err == CN_META_ROW) {
        size_t n = 0;
        const uint8_t *b = cn_meta_column_blob(st, 2, &n);
        out->found = true;
        out->kind = (uint8_t)cn_meta_column_int64(st, 0);
        if (!cn__col_fixed(st, 1, out->fp.b, CN_DIGEST_LEN) || !b)
            err = CN_E_CORRUPT;
        else
            err = cn_buf_append(&out->outcome, b, n);
    }
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
}

cn_err_t cn__op_record(cn_meta_txn_t *txn, const uint8_t repo[16], const uint8_t op[16],
                       uint8_t kind, const cn_digest_t *fp, const uint8_t workspace[16],
                       const cn_buf_t *outcome)
{
    cn_err_t err = cn_meta_execf(txn, cn__sql_repos[CN_SQL_REPOS_OPERATION_INSERT], "bbibbbi",
                                 CN__ARG_ID(repo), CN__ARG_ID(op), (int64_t)kind,
                                 CN__ARG_DIGEST(fp), CN__ARG_ID(workspace),
                                 (const void *)outcome->data, outcome->len, cn__repos_now_ms());
    return err < 0 ? err : CN_OK;
}

/* ---- multi-row inserts --------------------------------------------------------------- */
cn_err_t cn__push_rows(cn_meta_txn_t *txn, int which, size_t n, cn__bind_row_fn bind, void *ctx)
{
    int cols = cn__sql_repos_rows_cols(which);
    cn_err_t err = cols ? CN_OK : CN_E_INVALID;
    for (size_t from = 0; from < n && err >= 0;) {
        uint32_t c = CN_SQL_REPOS_ROWS_MAX;
        while (c > n - from)
            c = c > 4 ? c / 8 : 1; /* 256, 32, 4, 1 */
        char *sql = cn__sql_repos_rows(which, c);
        cn_meta_stmt_t *st = NULL;
        err = sql ? cn_meta_prepare(txn, sql, &st) : -ENOMEM;
        free(sql);
        for (uint32_t r = 0; r < c && err >= 0; r++)
            err = bind(ctx, st, (int)r * cols + 1, from + r);
        if (err >= 0)
            err = cn_meta_push(st);
        cn_meta_finish(st);
        from += c;
    }
    return err < 0 ? err : CN_OK;
}

/* ---- padded batch lists --------------------------------------------------------------- */
/* Padded keys per batch statement: a slice's list stays near 1 MiB
 * whatever the keys' width. */
#define PADDED_LIST_BYTES (1u << 20)

cn_err_t cn__padded_batch(cn_meta_txn_t *txn, int which, const cn__keys_t *k,
                          const uint8_t repo[16], const uint8_t *branch, cn__padded_row_fn row,
                          void *ctx)
{
    size_t width = 1;
    for (size_t i = 0; i < k->n; i++)
        width = k->len[i] > width ? k->len[i] : width;
    if (width > CN_REPOS_MAX_PATH)
        return CN_E_INVALID;
    size_t per = PADDED_LIST_BYTES / width;
    per = per < CN_META_BATCH_MAX ? per : CN_META_BATCH_MAX;
    uint8_t *keys = malloc((k->n < per ? k->n : per) * width + 1);
    cn_err_t err = keys ? CN_OK : -ENOMEM;
    for (size_t from = 0; err >= 0 && from < k->n; from += per) {
        size_t c = k->n - from < per ? k->n - from : per;
        memset(keys, 0, c * width);
        for (size_t i = 0; i < c; i++)
            memcpy(keys + i * width, k->buf + k->off[from + i], k->len[from + i]);
        cn_meta_stmt_t *st = NULL;
        const cn_meta_batch_sql_t *sql = &cn__sql_repos_batch[which];
        err = branch ? cn_meta_batch_query(txn, &st, sql, keys, width, c, "bbi", CN__ARG_ID(repo),
                                           CN__ARG_ID(branch), (int64_t)width)
                     : cn_meta_batch_query(txn, &st, sql, keys, width, c, "bi", CN__ARG_ID(repo),
                                           (int64_t)width);
        while (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW) {
            int64_t j = cn_meta_column_int64(st, 0);
            err = j < 0 || (size_t)j >= c ? CN_E_CORRUPT : row(ctx, st, from + (size_t)j);
        }
        cn_meta_finish(st);
    }
    free(keys);
    return err < 0 ? err : CN_OK;
}

/* ---- objects: shared helpers ------------------------------------------------------- */
cn_err_t cn__object_find(cn_meta_txn_t *txn, const uint8_t repo[16], uint8_t kind,
                         const cn_digest_t *id, bool *found, cn_digest_t *blob, uint64_t *len,
                         uint64_t *fsize)
{
    *found = false;
    cn_meta_stmt_t *st = NULL;
    cn_digest_t b;
    cn_err_t err = cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_OBJECT_FIND], "bib",
                                  CN__ARG_ID(repo), (int64_t)kind, CN__ARG_DIGEST(id));
    if (err >= 0)
        err = cn_meta_step(st);
    if (err == CN_META_ROW && !cn__col_fixed(st, 0, b.b, CN_DIGEST_LEN))
        err = CN_E_CORRUPT;
    if (err == CN_META_ROW) {
        *found = true;
        if (blob)
            *blob = b;
        if (len)
            *len = (uint64_t)cn_meta_column_int64(st, 1);
        if (fsize)
            *fsize = (uint64_t)cn_meta_column_int64(st, 2);
    }
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
}

cn_err_t cn__blob_map(cn_repos_t *r, const cn_digest_t *blob, const uint8_t **map, size_t *len)
{
    int fd = -1;
    uint64_t n = 0;
    CN_TRY(cn_store_open_fd(r->store, blob, &fd, &n));
    if (n == 0 || n > SIZE_MAX) {
        close(fd);
        return CN_E_CORRUPT;
    }
    void *p = mmap(NULL, (size_t)n, PROT_READ, MAP_PRIVATE, fd, 0);
    int saved = errno;
    close(fd);
    if (p == MAP_FAILED)
        return -saved;
    *map = p;
    *len = (size_t)n;
    return CN_OK;
}

void cn__unmap(const uint8_t *map, size_t len)
{
    if (map)
        munmap((void *)map, len);
}

/* ---- liveness ---------------------------------------------------------------------
 * A blob is live while any repository's membership names it: accepted
 * history and uploaded objects alike (uploads without an outcome are only
 * collected by an explicit offline operation, never by the sweeper). */
/* Digests d[0..n) asked about, and live[i]: some repository names d[i]. */
typedef struct digest_liveness {
    const cn_digest_t *d;
    size_t n;
    bool *live;
} digest_liveness_t;

static cn_err_t are_live_body(cn_meta_txn_t *txn, void *ctx)
{
    const digest_liveness_t *dl = ctx;
    cn_err_t err = CN_OK;
    for (size_t i = 0; i < dl->n && err >= 0; i++) {
        err = cn_meta_execf(txn, cn__sql_repos[CN_SQL_REPOS_BLOB_IS_LIVE], "b",
                            CN__ARG_DIGEST(&dl->d[i]));
        dl->live[i] = err == CN_META_ROW;
    }
    return err < 0 ? err : CN_OK;
}

static cn_err_t repos_are_live(void *ctx, const cn_digest_t *d, size_t n, bool *live)
{
    cn_repos_t *r = ctx;
    digest_liveness_t dl = { d, n, live };
    return cn_meta_run(r->meta, CN_META_RUN_READ | CN_META_RETRY, are_live_body, &dl);
}

cn_err_t cn_repos_open(cn_meta_t *meta, cn_store_t *store, cn_identity_t *id,
                       const cn_repos_opts_t *opts, cn_repos_t **out)
{
    *out = NULL;
    if (!meta || !store)
        return CN_E_INVALID;
    cn_repos_t *r = calloc(1, sizeof *r);
    if (!r)
        return -ENOMEM;
    r->meta = meta;
    r->store = store;
    r->identity = id;
    if (opts)
        r->opts = *opts;
    for (int i = 0; i < CN__REPO_LOCKS; i++)
        pthread_mutex_init(&r->repo_mu[i], NULL);
    pthread_mutex_init(&r->cfg_mu, NULL);
    cn_err_t err = cn__sql_migrate(meta, &cn__sql_repos_set);
    if (err >= 0)
        err = cn_store_register_liveness_batch(store, "repos", repos_are_live, r);
    if (err < 0) {
        cn_repos_close(r);
        return err;
    }
    *out = r;
    return CN_OK;
}

void cn_repos_close(cn_repos_t *r)
{
    if (!r)
        return;
    for (int i = 0; i < CN__REPO_LOCKS; i++)
        pthread_mutex_destroy(&r->repo_mu[i]);
    cn__cfg_cache_clear(r);
    pthread_mutex_destroy(&r->cfg_mu);
    free(r);
}
