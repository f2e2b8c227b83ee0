/* Internals shared by the repos service's files; never included from
 * another module. */
#ifndef CN_REPOS_SERVICE_INT_H
#define CN_REPOS_SERVICE_INT_H

#include "cairn/repos.h"
#include "cairn/meta.h"
#include "cairn/store.h"
#include "meta/sql/repos.h"

#include <pthread.h>

#define CN__REPO_LOCKS 64

#define CN__CFG_CACHE 8
typedef struct cn__cfg_ent cn__cfg_ent_t;

struct cn_repos {
    cn_meta_t *meta;
    cn_store_t *store;
    cn_identity_t *identity;
    cn_repos_opts_t opts;
    /* Submits of one repository are serialized in this process (striped by
     * repository id), so the optimistic head check of the write phase only
     * retries against other processes. */
    pthread_mutex_t repo_mu[CN__REPO_LOCKS];
    /* Parsed .scribe/config.toml texts by manifest (service_lock_policy.c). */
    pthread_mutex_t cfg_mu;
    cn__cfg_ent_t *cfg[CN__CFG_CACHE];
    unsigned cfg_next;
};

/* Drops every cached config (cn_repos_close). */
void cn__cfg_cache_clear(cn_repos_t *r);

enum {
    CN__READ = 1,
    CN__WRITE = 2
};

/* A repository row. */
typedef struct cn__repo {
    cn_repos_info_t info;
} cn__repo_t;

/* Sets rq->fail (class err, detail code: a cn_repos_code_t) and returns err. */
cn_err_t cn__rfail(cn_repos_req_t *rq, cn_err_t err, uint16_t code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Loads repository id inside txn and checks the caller's access (CN__READ /
 * CN__WRITE).  CN_E_NOT_FOUND (REPOSITORY_NOT_FOUND) also for a repository
 * the caller may not read; CN_E_DENIED (FORBIDDEN) for a missing write. */
cn_err_t cn__repo_load(cn_repos_t *r, cn_meta_txn_t *txn, cn_repos_req_t *rq, const uint8_t id[16],
                       int access, cn__repo_t *out);
/* A transaction body run on one repository: repo was loaded in txn and the
 * caller's access checked (cn__repo_run).  Returns as a cn_meta_body_fn. */
typedef cn_err_t (*cn__repo_body_fn)(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx);
/* Runs, in one transaction of the kind flags names (cn_meta_run), the load
 * of repository id with the access check (cn__repo_load) and then body.
 * Returns cn__repo_load's error, or as cn_meta_run.  Any thread. */
cn_err_t cn__repo_run(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t id[16], int access,
                      unsigned flags, cn__repo_body_fn body, void *ctx);
/* Repository id's row in *out, once the caller's access (CN__READ /
 * CN__WRITE) is checked; errors as cn__repo_load.  Its own read transaction. */
cn_err_t cn__repo_info(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t id[16], int access,
                       cn_repos_info_t *out);
/* Whether the caller may access repository `name` as asked. */
bool cn__repo_allowed(cn_repos_t *r, const cn_repos_req_t *rq, const char *name, int access);

/* ---- branches (service_branch.c) ------------------------------------------------ */
/* The row of (repo, branch): CN_E_NOT_FOUND (BRANCH_NOT_FOUND, the message
 * naming the id) when the branch table has none. */
cn_err_t cn__branch_load(cn_meta_txn_t *txn, cn_repos_req_t *rq, const uint8_t repo[16],
                         const uint8_t branch[16], cn_repos_branch_t *out);
/* Branch head of (repo, branch) and its name (NUL-terminated in name[cap],
 * name may be NULL): as cn__branch_load. */
cn_err_t cn__branch_head(cn_meta_txn_t *txn, cn_repos_req_t *rq, const uint8_t repo[16],
                         const uint8_t branch[16], uint64_t *head, char *name, size_t cap);
/* CN_E_NOT_FOUND (CHANGE_NOT_FOUND) unless rev lies in b's lifetime: from its
 * origin change (0 for main) to its head. */
cn_err_t cn__branch_within(cn_repos_req_t *rq, const cn_repos_branch_t *b, uint64_t rev);

/* The snapshot of branch at change (inside its lifetime): its newest commit
 * <= change, or without one its origin's snapshot at the origin change,
 * followed through origins; the empty tree when no commit is found.
 * *commit_change (0 for the empty tree) and *commit_id name that commit
 * (either may be NULL); revision and content are its roots.  CN_E_CORRUPT
 * for a branch table whose origins do not end. */
cn_err_t cn__snapshot_at(cn_meta_txn_t *txn, const uint8_t repo[16], const uint8_t branch[16],
                         uint64_t change, uint64_t *commit_change, cn_digest_t *commit_id,
                         cn_digest_t *revision, cn_digest_t *content);
/* cn__snapshot_at's roots alone. */
cn_err_t cn__snapshot_root(cn_meta_txn_t *txn, const uint8_t repo[16], const uint8_t branch[16],
                           uint64_t change, cn_digest_t *revision, cn_digest_t *content);

/* ---- merges (service_merge.c) -----------------------------------------------------
 * CN_E_UNSUPPORTED (SCHEMA_OUTDATED) unless repository repo records schema 3
 * or later; MALFORMED unless the n paths are canonical and at most 1,024. */
cn_err_t cn__schema_check(cn_meta_txn_t *txn, cn_repos_req_t *rq, const uint8_t repo[16]);
cn_err_t cn__paths_check(cn_repos_req_t *rq, const cn_repos_pathv_t *paths, uint32_t n);

/* The checks of cn_repos_merge_submit that come before the publication gate
 * and record nothing.  cn__merge_plan, once the target branch is loaded:
 * the source and base branches, the schema, the target head (the nested
 * submit's base) and the source head inside their lifetimes, and the
 * recomputed merge base (BASE_MISMATCH); it answers the commit of the
 * source's snapshot at its head, the merge parent.  cn__merge_covers: every
 * path the source changed since the base is named by the change set
 * (MERGE_INCOMPLETE). */
cn_err_t cn__merge_plan(cn_meta_txn_t *txn, cn_repos_req_t *rq, const cn__repo_t *repo,
                        const cn_repos_branch_t *target, const cn_repos_merge_t *m,
                        uint64_t *source_commit, cn_digest_t *source_id);
cn_err_t cn__merge_covers(cn_meta_txn_t *txn, cn_repos_req_t *rq, const uint8_t repo[16],
                          const cn_repos_changeset_t *cs, uint64_t source_commit, uint64_t base);
/* The integration fingerprints (docs/protocol/scribe.md 9.6): cn__fp_open
 * starts h with the domain (len bytes, its NUL included) and the nested
 * submit's fingerprint; cn__fp_le64 adds v little-endian. */
void cn__fp_open(cn_blake3_t *h, const char *domain, size_t len, const cn_repos_submit_t *s);
void cn__fp_le64(cn_blake3_t *h, uint64_t v);
/* The parents of commit change and the branch that accepted it (*found). */
cn_err_t cn__commit_parents(cn_meta_txn_t *txn, const uint8_t repo[16], uint64_t change,
                            bool *found, uint64_t *first, uint64_t *merge, uint8_t branch[16]);
/* *in: commit c is in the commit ancestry of commit tip (itself included;
 * tip 0 has none).  CN_E_LIMIT (LIMIT_EXCEEDED) past the history budget. */
cn_err_t cn__in_ancestry(cn_meta_txn_t *txn, cn_repos_req_t *rq, const uint8_t repo[16],
                         uint64_t tip, uint64_t c, bool *in);
/* hit[i]: paths[i], an ancestor of it, a path under it or a case-fold alias
 * of it has an event on branch in (from, to] (at most the history budget of
 * events: LIMIT_EXCEEDED beyond). */
cn_err_t cn__paths_touched(cn_meta_txn_t *txn, cn_repos_req_t *rq, const uint8_t repo[16],
                           const uint8_t branch[16], uint64_t from, uint64_t to,
                           const cn_repos_pathv_t *paths, size_t n, bool *hit);
/* A cherry-pick submit's checks in the submit's plan (service_cherry.c).
 * cn__pick_check, with the target loaded: the unrecorded refusals (source
 * BRANCH_NOT_FOUND, SCHEMA_OUTDATED, CHANGE_NOT_FOUND, CHANGE_NOT_PICKABLE).
 * cn__pick_judge, against the target's live head: the recorded rejections
 * (ALREADY_APPLIED, then BASE_CONFLICT naming the changed dependencies)
 * written into *out (outcome REJECTED), else *out untouched. */
cn_err_t cn__pick_check(cn_meta_txn_t *txn, cn_repos_req_t *rq, const cn__repo_t *repo,
                        const cn_repos_branch_t *target, const cn_repos_pick_t *p);
cn_err_t cn__pick_judge(cn_meta_txn_t *txn, cn_repos_req_t *rq, const cn__repo_t *repo,
                        uint64_t head, const cn_repos_pick_t *p, const cn_repos_changeset_t *cs,
                        cn_repos_outcome_t *out);
/* The provenance of commit change: *pick_change 0 when it is no pick. */
cn_err_t cn__commit_pick(cn_meta_txn_t *txn, const uint8_t repo[16], uint64_t change,
                         uint64_t *pick_change, uint8_t pick_branch[16]);
/* Appends a conflicting path to a rejected outcome (at most 64 are kept). */
cn_err_t cn__outcome_add_path(cn_repos_outcome_t *o, const uint8_t *p, size_t n);

/* ---- operation records (service.c) ------------------------------------------------
 * One row per operation id of a repository, whatever kind recorded it: the
 * kind (CN_REPOS_OP_SUBMIT / CN_REPOS_OP_BRANCH), the fingerprint the id is
 * bound to and the encoded outcome (each kind has its own encoding). */
typedef struct cn__op {
    bool found;
    uint8_t kind;
    cn_digest_t fp;
    cn_buf_t outcome; /* owned: cn__op_free */
} cn__op_t;
cn_err_t cn__op_find(cn_meta_txn_t *txn, const uint8_t repo[16], const uint8_t op[16],
                     cn__op_t *out);
void cn__op_free(cn__op_t *o);
/* Inserts operation op's record (workspace: 16 bytes, zeros where none). */
cn_err_t cn__op_record(cn_meta_txn_t *txn, const uint8_t repo[16], const uint8_t op[16],
                       uint8_t kind, const cn_digest_t *fp, const uint8_t workspace[16],
                       const cn_buf_t *outcome);
/* Decodes a branch mutation's recorded outcome (service_branch.c):
 * CN_E_CORRUPT when the bytes are not one. */
cn_err_t cn__branch_outcome_decode(const uint8_t *p, size_t n, const uint8_t op[16],
                                   cn_repos_branch_outcome_t *out);

/* ---- locks (service_lock.c) -------------------------------------------------------
 * What an accepted submit does to the submitting workspace's locks, inside
 * its acceptance transaction: without keep_locks every submitted path (keep
 * entries and both ends of a move included) it holds is released; with
 * keep_locks they stay, and a move whose source it holds acquires the
 * destination when no one holds it.  Other paths and other workspaces'
 * locks are untouched. */
typedef struct cn__lock_disposition {
    const uint8_t *repo, *workspace;
    bool keep_locks;
    int64_t now_ms;
    uint64_t head; /* the branch head the submit is judged against */
} cn__lock_disposition_t;
cn_err_t cn__locks_dispose(cn_meta_txn_t *txn, const cn__lock_disposition_t *d,
                           const cn_repos_changeset_t *cs);
/* The lock policy's judgement of a submit planned as accepted, inside its
 * acceptance transaction (service_lock_policy.c): main's current config
 * decides.  A submitted .scribe/config.toml that is invalid: *out becomes a
 * rejection INVALID_REPOSITORY_CONFIG; one that changes main's decoded lock
 * rules without the Maintainer role (cn_repos_maintainer): FORBIDDEN; a
 * submitted path (either end of a move) under a required rule whose lock
 * the workspace does not hold: LOCK_REQUIRED naming up to 64 of them.
 * Otherwise *out is untouched.  Meta and store errors. */
cn_err_t cn__locks_enforce(cn_repos_t *r, cn_meta_txn_t *txn, cn_repos_req_t *rq,
                           const cn__repo_t *repo, const cn__lock_disposition_t *d,
                           const uint8_t branch[16], const cn_repos_changeset_t *cs,
                           cn_repos_outcome_t *out);

/* The bytes of the config file whose manifest is manifest into buf
 * (CN_REPO_CONFIG_MAX bytes), *len: CN_E_LIMIT for a larger file,
 * CN_E_CORRUPT for a missing object (service_lock_policy.c; the mounts of
 * service_public.c read the same file). */
cn_err_t cn__config_file_read(cn_repos_t *r, cn_meta_txn_t *txn, const uint8_t repo[16],
                              const cn_digest_t *manifest, uint8_t *buf, size_t *len);

/* ---- workspaces (service_workspace.c) ---------------------------------------------
 * CN_E_CONFLICT (WORKSPACE_RETIRED) when workspace was removed from repo;
 * CN_OK for a live or unknown workspace.  Registration, pins, submits and
 * lock requests call it inside their transactions. */
cn_err_t cn__ws_check(cn_meta_txn_t *txn, cn_repos_req_t *rq, const uint8_t repo[16],
                      const uint8_t workspace[16]);

/* Membership lookup: the blob digest and length of (kind, id) in repo.
 * *found false when absent. */
cn_err_t cn__object_find(cn_meta_txn_t *txn, const uint8_t repo[16], uint8_t kind,
                         const cn_digest_t *id, bool *found, cn_digest_t *blob, uint64_t *len,
                         uint64_t *fsize);
/* Maps a raw blob read-only (*map, *len; unmap with cn__unmap).  The blob
 * must be stored raw (structured objects always are). */
cn_err_t cn__blob_map(cn_repos_t *r, const cn_digest_t *blob, const uint8_t **map, size_t *len);
void cn__unmap(const uint8_t *map, size_t len);

/* ---- persistent snapshot tree (service_tree.c) -------------------------------
 * A working view of one snapshot: nodes are read from repos_tree_node rows
 * by hash as a request descends, kept for the request, and changed by path
 * copying.  finish re-encodes only the nodes on the changed paths; store
 * inserts them (unchanged subtrees stay shared by hash). */
typedef struct cn__ptree cn__ptree_t;

/* Opens the snapshot whose revision root is root, reading rows through txn
 * (which must outlive every call that reads; cn__ptree_set_txn swaps it). */
cn_err_t cn__ptree_open(cn_meta_txn_t *txn, const uint8_t repo[16], const cn_digest_t *root,
                        cn__ptree_t **out);
void cn__ptree_set_txn(cn__ptree_t *t, cn_meta_txn_t *txn);
void cn__ptree_free(cn__ptree_t *t);
/* Reads into t, level by level, every node the lookups of the n keys
 * (keys[i], lens[i] bytes) will read: one batch statement per level of the
 * descents instead of one per node (issue 24: a 100-path submit's tree on
 * PostgreSQL is a handful of round trips, not a hundred).  A key of a
 * path followed by '/' covers the path's get, its ancestors' and the
 * live_under of its descendants.  Errors: read_node's (CN_E_CORRUPT for a
 * missing or altered node), -ENOMEM, cn_meta's. */
cn_err_t cn__ptree_prefetch(cn__ptree_t *t, const uint8_t *const *keys, const size_t *lens,
                            size_t n);
/* The entry at path: *found false when the tree never held it. */
cn_err_t cn__ptree_get(cn__ptree_t *t, const uint8_t *path, size_t n, bool *found,
                       cn_repos_entry_t *e);
/* Live entries whose key starts with the given bytes. */
cn_err_t cn__ptree_live_under(cn__ptree_t *t, const uint8_t *prefix, size_t n, uint64_t *live);
/* Sets the entry at a canonical path (live or tombstone). */
cn_err_t cn__ptree_put(cn__ptree_t *t, const uint8_t *path, size_t n, const cn_repos_entry_t *e);
/* Re-encodes the changed nodes and returns both roots. */
cn_err_t cn__ptree_finish(cn__ptree_t *t, cn_digest_t *content, cn_digest_t *revision);
/* Inserts the nodes finish produced (idempotent). */
cn_err_t cn__ptree_store(cn__ptree_t *t, cn_meta_txn_t *wtxn);
/* Live entries in ascending order under prefix ("" = all; else the path
 * itself and paths under "prefix/"), strictly after `after` (NULL = none), at
 * most limit; *more when another live entry follows. */
cn_err_t cn__ptree_page(cn__ptree_t *t, const uint8_t *prefix, size_t plen, const uint8_t *after,
                        size_t alen, uint32_t limit, cn_repos_tree_fn fn, void *ctx, bool *more);
/* cn__ptree_page over every entry, tombstones included, each handed to fn
 * with its entry (merge_read tag 3). */
cn_err_t cn__ptree_entries(cn__ptree_t *t, const uint8_t *prefix, size_t plen, const uint8_t *after,
                           size_t alen, uint32_t limit, cn_repos_desc_fn fn, void *ctx, bool *more);
/* Work counters of a tree's life so far: nodes read from metadata and node
 * encodings written. */
typedef struct cn__ptree_stats {
    uint64_t nodes_read, nodes_written;
} cn__ptree_stats_t;
void cn__ptree_stats(const cn__ptree_t *t, cn__ptree_stats_t *out);
/* cn_repos_submit that also reports the counters of the tree update of its
 * last attempt in *stats ({0, 0} when no tree was opened).  The tree update
 * cost bound of tests/repos/test_service.c is checked through it. */
cn_err_t cn__repos_submit_stats(cn_repos_t *r, cn_repos_req_t *rq, const cn_repos_submit_t *s,
                                cn_repos_outcome_t *out, cn__ptree_stats_t *stats);
/* Opens the tree of branch's snapshot at change `at` (<= upto) once upto and
 * at are checked against the branch's lifetime: CN_E_NOT_FOUND
 * (BRANCH_NOT_FOUND, CHANGE_NOT_FOUND outside it), or as cn__snapshot_root and
 * cn__ptree_open.  *t is NULL on entry; the caller frees it (cn__ptree_free). */
cn_err_t cn__snapshot_open(cn_meta_txn_t *txn, cn_repos_req_t *rq, const uint8_t repo[16],
                           const uint8_t branch[16], uint64_t upto, uint64_t at,
                           cn_digest_t *revision, cn_digest_t *content, cn__ptree_t **t);
/* Writes the empty snapshot's root row for a new repository. */
cn_err_t cn__ptree_init_empty(cn_meta_txn_t *wtxn, const uint8_t repo[16], cn_digest_t *revision,
                              cn_digest_t *content);

/* n variable-width keys: key i is len[i] bytes at buf + off[i]. */
typedef struct cn__keys {
    const uint8_t *buf;
    const size_t *off, *len;
    size_t n;
} cn__keys_t;
/* A row of a padded batch statement about key i (its column 0 checked). */
typedef cn_err_t (*cn__padded_row_fn)(void *ctx, cn_meta_stmt_t *st, size_t i);
/* Runs the padded batch statement which (cn__sql_repos_batch: ?1 the keys
 * padded with NUL to the longest, then repo, branch when not NULL, and the
 * width) over the keys (1..CN_REPOS_MAX_PATH bytes, no NUL: case folds),
 * one statement per MiB of padded keys, and hands each row to row.  Errors:
 * CN_E_INVALID (a key too long), CN_E_CORRUPT (a row about no key), row's,
 * cn_meta's, -ENOMEM. */
cn_err_t cn__padded_batch(cn_meta_txn_t *txn, int which, const cn__keys_t *k,
                          const uint8_t repo[16], const uint8_t *branch, cn__padded_row_fn row,
                          void *ctx);

/* Binds row i's parameters of a multi-row INSERT from index base on. */
typedef cn_err_t (*cn__bind_row_fn)(void *ctx, cn_meta_stmt_t *st, int base, size_t i);
/* Pushes (cn_meta_push) n rows of the multi-row INSERT which
 * (cn__sql_repos_rows), in statements of 256, 32, 4 or 1 rows (issue 24:
 * PostgreSQL's work is per statement), so that four texts per kind are
 * ever prepared: a connection caches 64 statements, which the single-row
 * ones of every other request share.  n 0 does nothing.  Errors:
 * cn_meta_prepare's and cn_meta_push's, bind's, -ENOMEM. */
cn_err_t cn__push_rows(cn_meta_txn_t *txn, int which, size_t n, cn__bind_row_fn bind, void *ctx);

/* ---- the file_lineage index (service_lineage.c) -----------------------------------
 * The predecessor rows of the file revisions one commit writes, planned from
 * the target head's snapshot (and a merge source's) before the change set is
 * applied to it; the paths are borrowed from the change set. */
typedef struct cn__lineage_row {
    const uint8_t *path;
    size_t path_len;
    uint64_t pred;
    const uint8_t *pred_path;
    size_t pred_len;
} cn__lineage_row_t;
typedef struct cn__lineage {
    cn__lineage_row_t *rows;
    size_t n, cap;
} cn__lineage_t;
/* source: the merge source's snapshot, or NULL.  -ENOMEM or a tree error. */
cn_err_t cn__lineage_plan(cn__lineage_t *lin, cn__ptree_t *tree, cn__ptree_t *source,
                          const cn_repos_changeset_t *cs);
/* Inserts the rows as change's (idempotent). */
cn_err_t cn__lineage_store(const cn__lineage_t *lin, cn_meta_txn_t *txn, const uint8_t repo[16],
                           uint64_t change);
void cn__lineage_free(cn__lineage_t *lin);

/* The two arguments ('b': pointer, size_t) cn_meta_execf / cn_meta_queryf
 * take for a 16-byte id and for a digest. */
#define CN__ARG_ID(id) (const void *)(id), (size_t)16
#define CN__ARG_DIGEST(d) (const void *)(d)->b, (size_t)CN_DIGEST_LEN

/* Binds a 16-byte id / digest. */
cn_err_t cn__bind_id(cn_meta_stmt_t *st, int idx, const uint8_t id[16]);
cn_err_t cn__bind_digest(cn_meta_stmt_t *st, int idx, const cn_digest_t *d);
/* Copies a column into a fixed buffer; false if NULL or of another length. */
bool cn__col_fixed(cn_meta_stmt_t *st, int col, void *out, size_t len);
/* A blob column as *p (borrowed until the next step; "" for NULL) and its
 * length (service_history.c). */
size_t cn__col_blob(cn_meta_stmt_t *st, int col, const uint8_t **p);

int64_t cn__repos_now_ms(void);

/* The page size of a read asked for limit rows: 1..CN_REPOS_PAGE_MAX. */
uint32_t cn__page_limit(uint32_t limit);

/* The rows of a page, collected inside a read's run and handed to the
 * caller's fn after it returned, so that a repeated run (CN_META_RETRY)
 * hands each row once: fixed-size records in recs, and the bytes the rows
 * borrowed from their statements copied into bytes, which a record names
 * by offset (bytes moves as it grows).  Zero-initialised: empty. */
typedef struct cn__rows {
    cn_buf_t recs, bytes;
    uint32_t n, max;
} cn__rows_t;

/* Starts an attempt's collection afresh (drops an earlier attempt's rows):
 * at most max rows. */
void cn__rows_start(cn__rows_t *r, uint32_t max);
/* Appends a record of size bytes; checks the count against max first
 * (CN_E_LIMIT past it: a walk that took more than its page).  -ENOMEM. */
cn_err_t cn__rows_add(cn__rows_t *r, const void *rec, size_t size);
/* Copies p[0..n) into r's bytes: *off is where.  CN_E_LIMIT when the page
 * is full (the bytes are kept for the row about to be added). */
cn_err_t cn__rows_keep(cn__rows_t *r, const void *p, size_t n, size_t *off);
/* Appends a record of size bytes that borrows one byte string, p[0..n):
 * keeps it, with its offset in *off (a member of rec), then adds rec. */
cn_err_t cn__rows_add_with(cn__rows_t *r, void *rec, size_t size, size_t *off, const void *p,
                           size_t n);
/* The bytes kept at off ("" while none are kept). */
const uint8_t *cn__rows_at(const cn__rows_t *r, size_t off);
void cn__rows_free(cn__rows_t *r);
/* Hands a collected record (in place: it may set its pointers from their
 * offsets) to the caller's fn, as ctx knows it. */
typedef cn_err_t (*cn__rows_put_fn)(const cn__rows_t *r, void *rec, void *ctx);
/* Passes each record of r (of size bytes), in order, to put while err, then
 * put's returns, are 0; frees r; returns the last err. */
cn_err_t cn__rows_hand(cn__rows_t *r, cn_err_t err, size_t size, cn__rows_put_fn put, void *ctx);
/* Rows that are byte strings (paths, tree nodes): collects a copy of
 * p[0..n) into the cn__rows_t rows (a cn_repos_path_fn and cn_repos_node_fn);
 * hands them as cn__rows_hand does. */
cn_err_t cn__rows_bytes_add(void *rows, const uint8_t *p, size_t n);
cn_err_t cn__rows_bytes_hand(cn__rows_t *r, cn_err_t err, cn_repos_path_fn fn, void *ctx);

#endif
