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

/* The data root's incarnation: random, made by the migration that adds it. */
static cn_err_t cn_repos_instance_init(cn_meta_txn_t *txn, void *arg)
{
    (void)arg;
    uint8_t inc[16];
    CN_TRY(cn_random_bytes(inc, sizeof inc));
    cn_meta_stmt_t *st = NULL;
    CN_TRY(cn_meta_prepare(txn, "INSERT INTO repos_instance (id, incarnation) VALUES (1, ?)", &st));
    cn_meta_bind_blob(st, 1, inc, sizeof inc);
    cn_err_t err = cn_meta_step(st);
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
}

static const cn_meta_migration_t cn_repos_migrations[] = {
    {1,
     "CREATE TABLE repos_repo (id BLOB PRIMARY KEY, name BLOB NOT NULL UNIQUE,"
     " incarnation BLOB NOT NULL, main_branch BLOB NOT NULL, head BIGINT NOT NULL,"
     " created_ms BIGINT NOT NULL, compression BIGINT NOT NULL);"
     "CREATE TABLE repos_branch (repo BLOB NOT NULL, id BLOB NOT NULL, name BLOB NOT NULL,"
     " head BIGINT NOT NULL, PRIMARY KEY (repo, id));"
     "CREATE TABLE repos_object (repo BLOB NOT NULL, kind BIGINT NOT NULL, id BLOB NOT NULL,"
     " blob BLOB NOT NULL, len BIGINT NOT NULL, fsize BIGINT NOT NULL,"
     " PRIMARY KEY (repo, kind, id));"
     "CREATE INDEX repos_object_blob ON repos_object (blob);"
     "CREATE TABLE repos_commit (repo BLOB NOT NULL, change BIGINT NOT NULL,"
     " branch BLOB NOT NULL, commit_id BLOB NOT NULL, parent BIGINT NOT NULL,"
     " changeset BLOB NOT NULL, author BLOB NOT NULL, message BLOB NOT NULL,"
     " time_ms BIGINT NOT NULL, content_root BLOB NOT NULL, revision_root BLOB NOT NULL,"
     " PRIMARY KEY (repo, change));"
     "CREATE INDEX repos_commit_branch ON repos_commit (repo, branch, change);"
     "CREATE TABLE repos_root (repo BLOB PRIMARY KEY, content_root BLOB NOT NULL,"
     " revision_root BLOB NOT NULL);"
     "CREATE TABLE repos_tree_node (repo BLOB NOT NULL, hash BLOB NOT NULL, enc BLOB NOT NULL,"
     " aux BLOB NOT NULL, PRIMARY KEY (repo, hash));"
     "CREATE TABLE repos_fold (repo BLOB NOT NULL, branch BLOB NOT NULL, path BLOB NOT NULL,"
     " fold BLOB NOT NULL, PRIMARY KEY (repo, branch, path));"
     "CREATE INDEX repos_fold_fold ON repos_fold (repo, branch, fold);"
     "CREATE TABLE repos_event (repo BLOB NOT NULL, branch BLOB NOT NULL, path BLOB NOT NULL,"
     " change BIGINT NOT NULL, event BIGINT NOT NULL, from_path BLOB,"
     " PRIMARY KEY (repo, branch, path, change));"
     "CREATE INDEX repos_event_change ON repos_event (repo, branch, change);"
     "CREATE TABLE repos_operation (repo BLOB NOT NULL, op BLOB NOT NULL, kind BIGINT NOT NULL,"
     " fingerprint BLOB NOT NULL, workspace BLOB NOT NULL, outcome BLOB NOT NULL,"
     " created_ms BIGINT NOT NULL, PRIMARY KEY (repo, op));"
     "CREATE TABLE repos_intent (repo BLOB NOT NULL, intent BLOB NOT NULL,"
     " workspace BLOB NOT NULL, created_ms BIGINT NOT NULL, PRIMARY KEY (repo, intent));"
     "CREATE TABLE repos_pin (repo BLOB NOT NULL, intent BLOB NOT NULL, kind BIGINT NOT NULL,"
     " id BLOB NOT NULL, PRIMARY KEY (repo, intent, kind, id));"
     "CREATE TABLE repos_note (repo BLOB NOT NULL, change BIGINT NOT NULL,"
     " revision BIGINT NOT NULL, author BLOB NOT NULL, edited_ms BIGINT NOT NULL,"
     " text BLOB NOT NULL, PRIMARY KEY (repo, change, revision))",
     NULL, NULL},
    {2, "CREATE TABLE repos_instance (id BIGINT PRIMARY KEY, incarnation BLOB NOT NULL)",
     cn_repos_instance_init, NULL},
};

static __thread cn_repos_tree_stats_t last_stats;

void cn__set_last_stats(const cn_repos_tree_stats_t *s) { last_stats = *s; }
void cn_repos_last_tree_stats(cn_repos_tree_stats_t *out) { *out = last_stats; }

int64_t cn__repos_now_ms(void) { return cn_wall_ms(); }

cn_err_t cn__rfail(cn_repos_req_t *rq, cn_err_t err, uint16_t code, const char *fmt, ...)
{
    if (rq) {
        rq->code = code;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(rq->msg, sizeof rq->msg, fmt, ap);
        va_end(ap);
    }
    return err;
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
#define REPO_COLS "id, name, incarnation, main_branch, head, created_ms, compression"

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

cn_err_t cn__repo_load(cn_repos_t *r, cn_meta_txn_t *txn, cn_repos_req_t *rq,
                       const uint8_t id[16], int access, cn__repo_t *out)
{
    cn_meta_stmt_t *st = NULL;
    CN_TRY(cn_meta_prepare(txn, "SELECT " REPO_COLS " FROM repos_repo WHERE id = ?", &st));
    cn__bind_id(st, 1, id);
    cn_err_t err = cn_meta_step(st);
    if (err == CN_META_ROW)
        err = repo_row(st, &out->info);
    else if (err == CN_META_DONE)
        err = CN_E_NOT_FOUND;
    cn_meta_finish(st);
    if (err == CN_E_NOT_FOUND ||
        (err >= 0 && !cn__repo_allowed(r, rq, out->info.name, CN__READ)))
        return cn__rfail(rq, CN_E_NOT_FOUND, CN_REPOS_E_REPOSITORY_NOT_FOUND,
                         "no such repository");
    if (err < 0)
        return err;
    if (access == CN__WRITE && !cn__repo_allowed(r, rq, out->info.name, CN__WRITE))
        return cn__rfail(rq, CN_E_DENIED, CN_REPOS_E_FORBIDDEN,
                         "writing repository %s is not allowed", out->info.name);
    return CN_OK;
}

cn_err_t cn__branch_head(cn_meta_txn_t *txn, cn_repos_req_t *rq, const uint8_t repo[16],
                         const uint8_t branch[16], uint64_t *head, char *name, size_t cap)
{
    cn_meta_stmt_t *st = NULL;
    CN_TRY(cn_meta_prepare(txn, "SELECT head, name FROM repos_branch WHERE repo = ? AND id = ?",
                           &st));
    cn__bind_id(st, 1, repo);
    cn__bind_id(st, 2, branch);
    cn_err_t err = cn_meta_step(st);
    if (err == CN_META_ROW) {
        *head = (uint64_t)cn_meta_column_int64(st, 0);
        if (name && cap) {
            size_t n = 0;
            const void *p = cn_meta_column_blob(st, 1, &n);
            if (n >= cap)
                n = cap - 1;
            if (p && n)
                memcpy(name, p, n);
            name[n] = 0;
        }
        err = CN_OK;
    } else if (err == CN_META_DONE) {
        err = cn__rfail(rq, CN_E_NOT_FOUND, CN_REPOS_E_BRANCH_NOT_FOUND,
                        "the branch is not in the repository's branch table");
    }
    cn_meta_finish(st);
    return err;
}

cn_err_t cn__snapshot_root(cn_meta_txn_t *txn, const uint8_t repo[16], const uint8_t branch[16],
                           uint64_t change, cn_digest_t *revision, cn_digest_t *content)
{
    cn_meta_stmt_t *st = NULL;
    CN_TRY(cn_meta_prepare(txn,
        "SELECT revision_root, content_root FROM repos_commit WHERE repo = ? AND branch = ?"
        " AND change <= ? ORDER BY change DESC LIMIT 1", &st));
    cn__bind_id(st, 1, repo);
    cn__bind_id(st, 2, branch);
    cn_meta_bind_int64(st, 3, (int64_t)change);
    cn_err_t err = cn_meta_step(st);
    bool found = err == CN_META_ROW;
    if (found && (!cn__col_fixed(st, 0, revision->b, CN_DIGEST_LEN) ||
                  !cn__col_fixed(st, 1, content->b, CN_DIGEST_LEN)))
        err = CN_E_CORRUPT;
    cn_meta_finish(st);
    if (err < 0)
        return err;
    if (found)
        return CN_OK;
    CN_TRY(cn_meta_prepare(txn, "SELECT revision_root, content_root FROM repos_root WHERE repo = ?",
                           &st));
    cn__bind_id(st, 1, repo);
    err = cn_meta_step(st);
    if (err == CN_META_ROW)
        err = cn__col_fixed(st, 0, revision->b, CN_DIGEST_LEN) &&
              cn__col_fixed(st, 1, content->b, CN_DIGEST_LEN) ? CN_OK : CN_E_CORRUPT;
    else if (err == CN_META_DONE)
        err = CN_E_CORRUPT;
    cn_meta_finish(st);
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
    cn_repos_info_t ri;
    memset(&ri, 0, sizeof ri);
    memcpy(ri.name, name, len);
    CN_TRY(cn_random_bytes(ri.id, 16));
    CN_TRY(cn_random_bytes(ri.incarnation, 16));
    CN_TRY(cn_random_bytes(ri.main_branch, 16));
    ri.created_ms = cn__repos_now_ms();
    ri.compression = compression;

    cn_meta_txn_t *txn = NULL;
    CN_TRY(cn_meta_begin(r->meta, CN_META_WRITE, &txn));
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_prepare(txn, "SELECT 1 FROM repos_repo WHERE name = ?", &st);
    if (err >= 0) {
        cn_meta_bind_blob(st, 1, name, len);
        err = cn_meta_step(st);
        cn_meta_finish(st);
        if (err == CN_META_ROW) {
            cn_meta_rollback(txn);
            return cn__rfail(rq, CN_E_EXISTS, CN_REPOS_E_REPOSITORY_EXISTS,
                             "a repository named %s exists", ri.name);
        }
    }
    if (err >= 0)
        err = cn_meta_prepare(txn, "INSERT INTO repos_repo (" REPO_COLS
                              ") VALUES (?, ?, ?, ?, 0, ?, ?)", &st);
    if (err >= 0) {
        cn__bind_id(st, 1, ri.id);
        cn_meta_bind_blob(st, 2, name, len);
        cn__bind_id(st, 3, ri.incarnation);
        cn__bind_id(st, 4, ri.main_branch);
        cn_meta_bind_int64(st, 5, ri.created_ms);
        cn_meta_bind_int64(st, 6, compression);
        err = cn_meta_step(st);
        cn_meta_finish(st);
    }
    if (err >= 0)
        err = cn_meta_prepare(txn, "INSERT INTO repos_branch (repo, id, name, head)"
                              " VALUES (?, ?, ?, 0)", &st);
    if (err >= 0) {
        cn__bind_id(st, 1, ri.id);
        cn__bind_id(st, 2, ri.main_branch);
        cn_meta_bind_blob(st, 3, "main", 4);
        err = cn_meta_step(st);
        cn_meta_finish(st);
    }
    cn_digest_t rev, content;
    if (err >= 0)
        err = cn__ptree_init_empty(txn, ri.id, &rev, &content);
    if (err >= 0)
        err = cn_meta_prepare(txn, "INSERT INTO repos_root (repo, content_root, revision_root)"
                              " VALUES (?, ?, ?)", &st);
    if (err >= 0) {
        cn__bind_id(st, 1, ri.id);
        cn__bind_digest(st, 2, &content);
        cn__bind_digest(st, 3, &rev);
        err = cn_meta_step(st);
        cn_meta_finish(st);
    }
    if (err < 0) {
        cn_meta_rollback(txn);
        return err == CN_E_EXISTS
                   ? cn__rfail(rq, err, CN_REPOS_E_REPOSITORY_EXISTS, "a repository named %s exists",
                               ri.name)
                   : err;
    }
    err = cn_meta_commit(txn);
    if (err < 0)
        return err;
    if (out)
        *out = ri;
    return CN_OK;
}

cn_err_t cn_repos_info(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t id[16],
                       cn_repos_info_t *out)
{
    cn_meta_txn_t *txn = NULL;
    CN_TRY(cn_meta_begin(r->meta, CN_META_READ, &txn));
    cn__repo_t repo;
    cn_err_t err = cn__repo_load(r, txn, rq, id, CN__READ, &repo);
    cn_meta_rollback(txn);
    if (err >= 0)
        *out = repo.info;
    return err;
}

cn_err_t cn_repos_info_by_name(cn_repos_t *r, cn_repos_req_t *rq, const char *name, size_t len,
                               cn_repos_info_t *out)
{
    if (!name_ok(name, len))
        return cn__rfail(rq, CN_E_NOT_FOUND, CN_REPOS_E_REPOSITORY_NOT_FOUND,
                         "no such repository");
    cn_meta_txn_t *txn = NULL;
    CN_TRY(cn_meta_begin(r->meta, CN_META_READ, &txn));
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_prepare(txn, "SELECT " REPO_COLS " FROM repos_repo WHERE name = ?", &st);
    if (err >= 0) {
        cn_meta_bind_blob(st, 1, name, len);
        err = cn_meta_step(st);
        if (err == CN_META_ROW)
            err = repo_row(st, out);
        else if (err == CN_META_DONE)
            err = CN_E_NOT_FOUND;
        cn_meta_finish(st);
    }
    cn_meta_rollback(txn);
    if (err == CN_E_NOT_FOUND || (err >= 0 && !cn__repo_allowed(r, rq, out->name, CN__READ)))
        return cn__rfail(rq, CN_E_NOT_FOUND, CN_REPOS_E_REPOSITORY_NOT_FOUND,
                         "no such repository");
    return err;
}

cn_err_t cn_repos_list(cn_repos_t *r, cn_repos_req_t *rq, const char *after, uint32_t limit,
                       cn_repos_info_fn fn, void *ctx, bool *more)
{
    *more = false;
    if (limit == 0)
        limit = 1;
    if (limit > CN_REPOS_PAGE_MAX)
        limit = CN_REPOS_PAGE_MAX;
    cn_meta_txn_t *txn = NULL;
    CN_TRY(cn_meta_begin(r->meta, CN_META_READ, &txn));
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = cn_meta_prepare(txn, "SELECT " REPO_COLS " FROM repos_repo WHERE name > ?"
                                   " ORDER BY name", &st);
    uint32_t n = 0;
    if (err >= 0) {
        cn_meta_bind_blob(st, 1, after ? after : "", after ? strlen(after) : 0);
        while ((err = cn_meta_step(st)) == CN_META_ROW) {
            cn_repos_info_t ri;
            if ((err = repo_row(st, &ri)) < 0)
                break;
            if (!cn__repo_allowed(r, rq, ri.name, CN__READ))
                continue;
            if (n == limit) {
                *more = true;
                break;
            }
            if ((err = fn(ctx, &ri)) != 0)
                break;
            n++;
        }
        cn_meta_finish(st);
    }
    cn_meta_rollback(txn);
    return err < 0 ? err : (err > 0 && err != CN_META_ROW ? err : CN_OK);
}

cn_err_t cn_repos_usage(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t id[16], uint64_t *bytes)
{
    cn_meta_txn_t *txn = NULL;
    CN_TRY(cn_meta_begin(r->meta, CN_META_READ, &txn));
    cn__repo_t repo;
    cn_err_t err = cn__repo_load(r, txn, rq, id, CN__READ, &repo);
    cn_meta_stmt_t *st = NULL;
    if (err >= 0)
        err = cn_meta_prepare(txn, "SELECT COALESCE(SUM(len), 0) FROM repos_object WHERE repo = ?",
                              &st);
    if (err >= 0) {
        cn__bind_id(st, 1, id);
        err = cn_meta_step(st);
        if (err == CN_META_ROW) {
            *bytes = (uint64_t)cn_meta_column_int64(st, 0);
            err = CN_OK;
        }
        cn_meta_finish(st);
    }
    cn_meta_rollback(txn);
    return err < 0 ? err : CN_OK;
}

static cn_err_t scalar(cn_meta_txn_t *txn, const char *sql, const uint8_t *id, int64_t *out)
{
    cn_meta_stmt_t *st = NULL;
    CN_TRY(cn_meta_prepare(txn, sql, &st));
    if (id)
        cn__bind_id(st, 1, id);
    cn_err_t err = cn_meta_step(st);
    *out = err == CN_META_ROW ? cn_meta_column_int64(st, 0) : 0;
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
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
    cn_meta_txn_t *txn = NULL;
    CN_TRY(cn_meta_begin(r->meta, CN_META_READ, &txn));
    cn_meta_stmt_t *st = NULL;
    int64_t v = 0;
    cn_err_t err = cn_meta_prepare(txn, "SELECT incarnation FROM repos_instance WHERE id = 1", &st);
    if (err >= 0) {
        err = cn_meta_step(st);
        err = err == CN_META_ROW && cn__col_fixed(st, 0, out->incarnation, 16) ? CN_OK : CN_E_CORRUPT;
        cn_meta_finish(st);
    }
    if (err >= 0 && (err = scalar(txn, "SELECT COUNT(*) FROM repos_repo", NULL, &v)) >= 0)
        out->total_repositories = (uint64_t)v;
    if (err >= 0 && !after &&
        (err = scalar(txn, "SELECT COALESCE(SUM(len), 0) FROM repos_object", NULL, &v)) >= 0)
        out->used_bytes = (uint64_t)v;
    if (err >= 0)
        err = cn_meta_prepare(txn, "SELECT " REPO_COLS " FROM repos_repo WHERE id > ?"
                              " ORDER BY id LIMIT 129", &st);
    if (err >= 0) {
        uint8_t zero[16] = {0};
        cn__bind_id(st, 1, after ? after : zero);
        uint32_t n = 0;
        while ((err = cn_meta_step(st)) == CN_META_ROW) {
            cn_repos_info_t ri;
            if ((err = repo_row(st, &ri)) < 0)
                break;
            if (n == 128) {
                *has_next = true;
                break;
            }
            memcpy(next, ri.id, 16);
            cn_meta_txn_t *t2 = txn;
            if ((err = scalar(t2, "SELECT COALESCE(SUM(len), 0) FROM repos_object WHERE repo = ?",
                              ri.id, &v)) < 0 ||
                (err = fn(ctx, &ri, (uint64_t)v)) != 0)
                break;
            n++;
        }
        cn_meta_finish(st);
    }
    cn_meta_rollback(txn);
    return err < 0 ? err : (err == CN_META_DONE || err == CN_META_ROW ? CN_OK : err);
}

/* ---- objects: shared helpers ------------------------------------------------------- */
cn_err_t cn__object_find(cn_meta_txn_t *txn, const uint8_t repo[16], uint8_t kind,
                         const cn_digest_t *id, bool *found, cn_digest_t *blob, uint64_t *len,
                         uint64_t *fsize)
{
    *found = false;
    cn_meta_stmt_t *st = NULL;
    CN_TRY(cn_meta_prepare(txn, "SELECT blob, len, fsize FROM repos_object"
                           " WHERE repo = ? AND kind = ? AND id = ?", &st));
    cn__bind_id(st, 1, repo);
    cn_meta_bind_int64(st, 2, kind);
    cn__bind_digest(st, 3, id);
    cn_err_t err = cn_meta_step(st);
    if (err == CN_META_ROW) {
        cn_digest_t b;
        if (!cn__col_fixed(st, 0, b.b, CN_DIGEST_LEN)) {
            err = CN_E_CORRUPT;
        } else {
            *found = true;
            if (blob)
                *blob = b;
            if (len)
                *len = (uint64_t)cn_meta_column_int64(st, 1);
            if (fsize)
                *fsize = (uint64_t)cn_meta_column_int64(st, 2);
            err = CN_OK;
        }
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
static cn_err_t cn_repos_are_live(void *ctx, const cn_digest_t *d, size_t n, bool *live)
{
    cn_repos_t *r = ctx;
    cn_meta_txn_t *txn = NULL;
    CN_TRY(cn_meta_begin(r->meta, CN_META_READ, &txn));
    cn_err_t err = CN_OK;
    for (size_t i = 0; i < n && err >= 0; i++) {
        cn_meta_stmt_t *st = NULL;
        live[i] = false;
        err = cn_meta_prepare(txn, "SELECT 1 FROM repos_object WHERE blob = ? LIMIT 1", &st);
        if (err < 0)
            break;
        cn__bind_digest(st, 1, &d[i]);
        err = cn_meta_step(st);
        live[i] = err == CN_META_ROW;
        cn_meta_finish(st);
    }
    cn_meta_rollback(txn);
    return err < 0 ? err : CN_OK;
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
    cn_err_t err = cn_meta_migrate(meta, "repos", cn_repos_migrations,
                                   sizeof cn_repos_migrations / sizeof cn_repos_migrations[0]);
    if (err >= 0)
        err = cn_store_register_liveness_batch(store, "repos", cn_repos_are_live, r);
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
    free(r);
}
