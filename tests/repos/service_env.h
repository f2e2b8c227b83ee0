/* The repos service tests' shared fixture (test_service.c, test_branches.c):
 * a service over a real meta + store in a temp dir with one repository
 * "art", and helpers that build and upload objects, submit change sets,
 * mutate branches and read them back.
 * Header-only (static inline): the CN_CHECKs count in the including test. */
#ifndef REPOS_SERVICE_ENV_H
#define REPOS_SERVICE_ENV_H

#include "cn_test.h"
#include "cairn/repos.h"
#include "cairn/meta.h"
#include "cairn/store.h"
#include "cairn/crypto.h"
#include "meta/test_target.h"
#include "store/test_blob_target.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    char dir[64];
    cn_meta_t *meta;
    cn_store_t *store;
    cn_repos_t *r;
    cn_repos_info_t repo;
} env_t;

static inline int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

static inline cn_repos_req_t trusted(void)
{
    cn_repos_req_t rq;
    memset(&rq, 0, sizeof rq);
    rq.trusted = true;
    return rq;
}

static inline void env_open(env_t *e)
{
    memset(e, 0, sizeof *e);
    snprintf(e->dir, sizeof e->dir, "/tmp/cn-repostest-XXXXXX");
    CN_CHECK(mkdtemp(e->dir) != NULL);
    cn_meta_opts_t mo = { .no_sync = true };
    /* on PostgreSQL when CAIRN_TEST_META names a server (tests/fleet/pg.sh) */
    CN_CHECK_EQ(cn_meta_open(cn_test_meta_for(e->dir), &mo, &e->meta), 0);
    cn_store_opts_t so = { .meta = e->meta };
    /* the blobs on the S3 tier with CAIRN_TEST_BLOBS=s3 (pg.sh --blob-tier) */
    cn_test_blob_target(e->dir, &so);
    CN_CHECK_EQ(cn_store_open(e->dir, &so, &e->store), 0);
    CN_CHECK_EQ(cn_repos_open(e->meta, e->store, NULL, NULL, &e->r), 0);
    cn_repos_req_t rq = trusted();
    CN_CHECK_EQ(cn_repos_create(e->r, &rq, "art", 3, 0, &e->repo), 0);
}

static inline void env_close(env_t *e)
{
    cn_repos_close(e->r);
    cn_store_close(e->store);
    cn_meta_close(e->meta);
    nftw(e->dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- building objects ---------------------------------------------------------- */
typedef struct {
    uint8_t kind;
    cn_digest_t id;
    cn_buf_t bytes;
} obj_t;

static inline void obj_chunk(obj_t *o, const char *text)
{
    memset(o, 0, sizeof *o);
    o->kind = CN_REPOS_CHUNK;
    cn_buf_append(&o->bytes, text, strlen(text));
    cn_repos_object_id(CN_REPOS_CHUNK, o->bytes.data, o->bytes.len, &o->id);
}

static inline void obj_manifest(obj_t *o, const obj_t *chunk)
{
    memset(o, 0, sizeof *o);
    o->kind = CN_REPOS_MANIFEST;
    cn_repos_chunk_ref_t ref = { chunk->id, (uint32_t)chunk->bytes.len };
    CN_CHECK_EQ(cn_repos_manifest_encode(&o->bytes, &ref, 1), 0);
    cn_repos_object_id(CN_REPOS_MANIFEST, o->bytes.data, o->bytes.len, &o->id);
}

static inline void obj_changeset(obj_t *o, const cn_repos_change_t *e, uint32_t n)
{
    memset(o, 0, sizeof *o);
    o->kind = CN_REPOS_CHANGESET;
    CN_CHECK_EQ(cn_repos_changeset_encode(&o->bytes, e, n), 0);
    cn_repos_object_id(CN_REPOS_CHANGESET, o->bytes.data, o->bytes.len, &o->id);
}

static inline void obj_free(obj_t *o)
{
    cn_buf_free(&o->bytes);
}

static inline cn_err_t put_all(env_t *e, obj_t *objs, uint32_t n, uint8_t *stored, uint16_t *code)
{
    cn_repos_req_t rq = trusted();
    cn_repos_put_t *p = NULL;
    cn_err_t err = cn_repos_put_begin(e->r, &rq, e->repo.id, n, &p);
    for (uint32_t i = 0; i < n && err >= 0; i++) {
        err = cn_repos_put_object(p, objs[i].kind, &objs[i].id, objs[i].bytes.len);
        /* in two writes, as a stream would */
        size_t half = objs[i].bytes.len / 2;
        if (err >= 0)
            err = cn_repos_put_write(p, objs[i].bytes.data, half);
        if (err >= 0)
            err = cn_repos_put_write(p, objs[i].bytes.data + half, objs[i].bytes.len - half);
        if (err >= 0)
            err = cn_repos_put_end_object(p);
    }
    if (err >= 0)
        err = cn_repos_put_commit(p, stored);
    else
        cn_repos_put_abort(p);
    if (code)
        *code = rq.fail.detail;
    return err;
}

/* One file (path -> text) as chunk + manifest; returns the manifest id. */
static inline cn_digest_t put_file(env_t *e, const char *text)
{
    obj_t o[2];
    obj_chunk(&o[0], text);
    obj_manifest(&o[1], &o[0]);
    CN_CHECK_EQ(put_all(e, o, 2, NULL, NULL), 0);
    cn_digest_t id = o[1].id;
    obj_free(&o[0]);
    obj_free(&o[1]);
    return id;
}

static inline cn_repos_change_t ch(uint8_t kind, const char *path, const cn_digest_t *m)
{
    cn_repos_change_t c;
    memset(&c, 0, sizeof c);
    c.kind = kind;
    c.path = (const uint8_t *)path;
    c.path_len = (uint16_t)strlen(path);
    if (m)
        c.manifest = *m;
    return c;
}

static inline cn_digest_t put_cs(env_t *e, const cn_repos_change_t *c, uint32_t n)
{
    obj_t o;
    obj_changeset(&o, c, n);
    CN_CHECK_EQ(put_all(e, &o, 1, NULL, NULL), 0);
    cn_digest_t id = o.id;
    obj_free(&o);
    return id;
}

static inline void submit_req(env_t *e, cn_repos_submit_t *s, uint8_t opbyte, uint64_t base,
                              const cn_digest_t *cs, const char *msg)
{
    memset(s, 0, sizeof *s);
    memcpy(s->repo, e->repo.id, 16);
    memcpy(s->incarnation, e->repo.incarnation, 16);
    memset(s->operation, opbyte, 16);
    memcpy(s->branch, e->repo.main_branch, 16);
    memset(s->workspace, 0x40, 16);
    s->base = base;
    s->changeset = *cs;
    s->author = (const uint8_t *)"ann";
    s->author_len = 3;
    s->message = (const uint8_t *)msg;
    s->message_len = (uint32_t)strlen(msg);
}

static inline cn_err_t submit(env_t *e, cn_repos_submit_t *s, cn_repos_outcome_t *o, uint16_t *code)
{
    cn_repos_req_t rq = trusted();
    cn_err_t err = cn_repos_submit(e->r, &rq, s, o);
    if (code)
        *code = rq.fail.detail;
    return err;
}

static inline cn_err_t sink_buf(void *ctx, const void *p, size_t n)
{
    return cn_buf_append(ctx, p, n);
}

/* ---- requests ------------------------------------------------------------------------ */
/* A mutation of branch id in the fixture's repository, named name. */
static inline cn_repos_branch_mutate_t branch_req(const env_t *e, uint8_t op, const uint8_t id[16],
                                                  const char *name, uint8_t action)
{
    cn_repos_branch_mutate_t m;
    memset(&m, 0, sizeof m);
    memcpy(m.repo, e->repo.id, 16);
    memcpy(m.incarnation, e->repo.incarnation, 16);
    memset(m.operation, op, 16);
    memcpy(m.branch, id, 16);
    m.name = name;
    m.name_len = strlen(name);
    m.action = action;
    return m;
}

/* Creates branch id..id (16 bytes of id) from source at change. */
static inline cn_repos_branch_mutate_t create_req(const env_t *e, uint8_t op, uint8_t id,
                                                  const char *name, const uint8_t source[16],
                                                  uint64_t change)
{
    uint8_t bid[16];
    memset(bid, id, 16);
    cn_repos_branch_mutate_t m = branch_req(e, op, bid, name, CN_REPOS_BRANCH_CREATE);
    memcpy(m.source, source, 16);
    m.source_change = change;
    return m;
}

static inline cn_repos_branch_mutate_t rename_req(const env_t *e, uint8_t op, const uint8_t id[16],
                                                  const char *name, const char *expected)
{
    cn_repos_branch_mutate_t m = branch_req(e, op, id, name, CN_REPOS_BRANCH_RENAME);
    m.expected = expected;
    m.expected_len = strlen(expected);
    return m;
}

static inline cn_err_t mutate(env_t *e, const cn_repos_branch_mutate_t *m,
                              cn_repos_branch_outcome_t *o, uint16_t *code)
{
    cn_repos_req_t rq = trusted();
    cn_err_t err = cn_repos_branch_mutate(e->r, &rq, m, o);
    if (code)
        *code = rq.fail.detail;
    return err;
}

static inline cn_err_t info_of(env_t *e, const uint8_t *id, const char *name, cn_repos_branch_t *b,
                               uint16_t *code)
{
    cn_repos_req_t rq = trusted();
    cn_err_t err =
        cn_repos_branch_info(e->r, &rq, e->repo.id, id, name, name ? strlen(name) : 0, b);
    if (code)
        *code = rq.fail.detail;
    return err;
}

static inline cn_err_t collect_branch(void *ctx, const cn_repos_branch_t *b)
{
    cn_buf_append_str(ctx, b->name);
    cn_buf_append_str(ctx, ",");
    return 0;
}

/* The names of a page of branches after `after`, comma-separated. */
static inline void list_names(env_t *e, const char *after, uint32_t limit, cn_buf_t *out,
                              bool *more)
{
    cn_repos_req_t rq = trusted();
    cn_buf_reset(out);
    CN_CHECK_EQ(cn_repos_branch_list(e->r, &rq, e->repo.id, after, after ? strlen(after) : 0, limit,
                                     collect_branch, out, more),
                0);
    cn_buf_append(out, "", 1);
}

/* Submits one change set of n entries to branch at base; the outcome's change. */
static inline uint64_t submit_on(env_t *e, const uint8_t branch[16], uint8_t op, uint64_t base,
                                 const cn_repos_change_t *c, uint32_t n, cn_repos_outcome_t *o)
{
    cn_digest_t cs = put_cs(e, c, n);
    cn_repos_submit_t s;
    submit_req(e, &s, op, base, &cs, "on a branch");
    memcpy(s.branch, branch, 16);
    CN_CHECK_EQ(submit(e, &s, o, NULL), 0);
    return o->outcome == CN_REPOS_ACCEPTED ? o->change : 0;
}

static inline cn_err_t count_row(void *ctx, const cn_repos_tree_row_t *row)
{
    (void)row;
    (*(int *)ctx)++;
    return 0;
}

/* The live entries of branch at change (or the refusal's detail). */
static inline int tree_count(env_t *e, const uint8_t branch[16], uint64_t change, uint16_t *code)
{
    cn_repos_req_t rq = trusted();
    cn_repos_page_q_t q;
    memset(&q, 0, sizeof q);
    memcpy(q.repo, e->repo.id, 16);
    memcpy(q.branch, branch, 16);
    q.change = change;
    q.prefix = (const uint8_t *)"";
    q.limit = 100;
    int n = 0;
    bool more = false;
    cn_digest_t cr, rr;
    if (cn_repos_tree_page(e->r, &rq, &q, count_row, &n, &more, &cr, &rr) < 0)
        n = -1;
    if (code)
        *code = rq.fail.detail;
    return n;
}

/* Log rows as "change/parent/branch " (the branch's name), a merge's as
 * "change/parent+merge parent/branch ". */
static inline cn_err_t keep_row(void *ctx, const cn_repos_log_row_t *row)
{
    char line[320];
    if (row->merge_change)
        snprintf(line, sizeof line, "%llu/%llu+%llu/%s ", (unsigned long long)row->change,
                 (unsigned long long)row->parent, (unsigned long long)row->merge_change,
                 row->branch_name);
    else
        snprintf(line, sizeof line, "%llu/%llu/%s ", (unsigned long long)row->change,
                 (unsigned long long)row->parent, row->branch_name);
    cn_buf_append_str(ctx, line);
    return 0;
}

static inline void log_of(env_t *e, const uint8_t branch[16], const char *path, cn_buf_t *out)
{
    cn_repos_req_t rq = trusted();
    cn_repos_log_q_t q;
    memset(&q, 0, sizeof q);
    memcpy(q.repo, e->repo.id, 16);
    memcpy(q.branch, branch, 16);
    if (path) {
        q.path = (const uint8_t *)path;
        q.path_len = strlen(path);
    }
    q.limit = 100;
    cn_buf_reset(out);
    CN_CHECK_EQ(cn_repos_log(e->r, &rq, &q, keep_row, out), 0);
    cn_buf_append(out, "", 1);
}

/* The file_lineage predecessors of (change, path) as "change:path,..." in
 * key order (read straight from the index's table), in a static buffer. */
static inline const char *lineage_of(env_t *e, uint64_t change, const char *path)
{
    static char out[1024];
    cn_meta_txn_t *txn = NULL;
    cn_meta_stmt_t *st = NULL;
    size_t len = 0;
    out[0] = 0;
    CN_CHECK_EQ(cn_meta_begin(e->meta, CN_META_READ, &txn), 0);
    CN_CHECK_EQ(cn_meta_queryf(txn, &st,
                               "SELECT pred_change, pred_path FROM repos_lineage WHERE repo = ?"
                               " AND change = ? AND path = ? ORDER BY pred_change, pred_path",
                               "bib", (const void *)e->repo.id, (size_t)16, (int64_t)change,
                               (const void *)path, strlen(path)),
                0);
    while (cn_meta_step(st) == CN_META_ROW) {
        size_t n = 0;
        const char *p = cn_meta_column_blob(st, 1, &n);
        len += (size_t)snprintf(out + len, sizeof out - len, "%s%lld:%.*s", len ? "," : "",
                                (long long)cn_meta_column_int64(st, 0), (int)n, p);
    }
    cn_meta_finish(st);
    cn_meta_rollback(txn);
    return out;
}

#endif
