/* cairn repos: the repositories service — repositories and their branch
 * table, the objects of a repository (chunks, manifests, change sets,
 * commits) kept as store blobs with per-repository membership, atomic
 * submits with operation identity, the persistent snapshot tree, history
 * (log, changed paths, tree pages) and change notes.
 *
 * The service speaks in semantic requests and results: it never sees a
 * socket, a wire layout or a codec, so a submit replayed through any adapter
 * resolves to the same outcome.  Every id is verified from the bytes it
 * names.  A mutation returns only after its blobs are durable (published by
 * the store) and its metadata transaction committed.  docs/protocol/scribe.md
 * ("Server") describes the schema, the permission mapping and the choices.
 *
 * Numeric outcome codes (cn_repos_code_t) are the stable semantic codes of
 * the Scribe contract, persisted in operation records; an adapter maps them
 * onto its wire in one table.
 *
 * Threads: a cn_repos_t is safe to use from any number of threads at once; a
 * put session or an object reader belongs to one thread at a time.
 */
#ifndef CAIRN_REPOS_H
#define CAIRN_REPOS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cairn/err.h"
#include "cairn/util.h"
#include "cairn/crypto.h"
#include "cairn/identity.h"
#include "cairn/repos_model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cn_repos cn_repos_t;
typedef struct cn_store cn_store_t; /* cairn/store.h */
typedef struct cn_meta cn_meta_t;   /* cairn/meta.h */

/* ---- semantic outcome codes (stable; persisted) ----------------------------
 * The repos service's detail enum (cn_fail_t.detail of a failed call, and
 * cn_repos_outcome_t.code): X(name, value).  The values are persisted in
 * operation records and are never renumbered; 0 = none (a plain system
 * failure: the class alone says it).  Adapters map them to wire codes in one
 * table; their unit tests walk this list. */
#define CN_REPOS_DETAILS(X)           \
    X(MALFORMED, 1)                   \
    X(FORBIDDEN, 4)                   \
    X(INTERNAL, 5)                    \
    X(BUSY, 6)                        \
    X(LIMIT_EXCEEDED, 8)              \
    X(STORAGE_FAILURE, 10)            \
    X(CORRUPT, 11)                    \
    X(REPOSITORY_NOT_FOUND, 100)      \
    X(BRANCH_NOT_FOUND, 101)          \
    X(CHANGE_NOT_FOUND, 102)          \
    X(REPOSITORY_EXISTS, 103)         \
    X(OBJECT_MISSING, 104)            \
    X(OBJECT_INVALID, 105)            \
    X(WORKSPACE_MISMATCH, 106)        \
    X(INTENT_FINALIZED, 107)          \
    X(PATH_CONFLICT, 108)             \
    X(WORKSPACE_RETIRED, 109)         \
    X(BRANCH_EXISTS, 110)             \
    X(NAME_MISMATCH, 111)             \
    X(CHANGE_NOT_PICKABLE, 112)       \
    X(SCHEMA_OUTDATED, 113)           \
    X(OPERATION_INTENT_MISMATCH, 200) \
    X(INCARNATION_MISMATCH, 201)      \
    X(BASE_CONFLICT, 202)             \
    X(BASE_MISMATCH, 203)             \
    X(MERGE_INCOMPLETE, 204)          \
    X(LOCK_REQUIRED, 205)             \
    X(LOCK_HELD, 206)                 \
    X(INVALID_REPOSITORY_CONFIG, 207) \
    X(ALREADY_APPLIED, 208)           \
    X(NOTE_REVISION_STALE, 212)

typedef enum {
    CN_REPOS_E_NONE = 0,
#define CN__REPOS_DETAIL_ENUM(name, value) CN_REPOS_E_##name = value,
    CN_REPOS_DETAILS(CN__REPOS_DETAIL_ENUM)
#undef CN__REPOS_DETAIL_ENUM
    CN_REPOS_E_LAST = CN_REPOS_E_NOTE_REVISION_STALE /* the largest value */
} cn_repos_code_t;

/* The code's name ("BASE_CONFLICT"), "NONE" for 0; NULL for a value that is
 * not a cn_repos_code_t. */
CN_API const char *cn_repos_code_name(unsigned code);

/* ---- limits ------------------------------------------------------------------ */
#define CN_REPOS_NAME_MAX 128   /* storage name bytes */
#define CN_REPOS_BATCH_MAX 8192 /* objects per put/get/presence/pin */
#define CN_REPOS_BATCH_BYTES_MAX 1073741824ull
#define CN_REPOS_PAGE_MAX 4096
#define CN_REPOS_DETAIL_MAX 4096
#define CN_REPOS_CONFLICT_PATHS_MAX 64
#define CN_REPOS_NOTE_REVISIONS_MAX 1024
#define CN_REPOS_NOTE_TEXT_MAX 65536
#define CN_REPOS_SCHEMA 3 /* the repository schema this service records */

/* ---- the request context ----------------------------------------------------
 * Who asks, and where a failure is explained.  principal NULL with trusted
 * set: an unauthenticated endpoint that treats every caller as trusted
 * (plaintext Scribe, as the contract says).  principal NULL without trusted:
 * anonymous, allowed nothing.  On a failure the service sets fail: the
 * class, the detail (a cn_repos_code_t, 0 when the error is a plain system
 * failure) and a message. */
typedef struct cn_repos_req {
    const cn_principal_t *principal;
    bool trusted;
    cn_fail_t fail;
    /* An authenticated Scribe listener (protocol 4) whose adapter decided
     * the request's role itself (trusted stays set): authed true; account
     * the session's principal (NUL-terminated, NULL when anonymous): the
     * owner of the workspaces it registers and must own to use them, the
     * author of its submits and notes, the principal of its locks;
     * maintainer: its role on the request's repository reaches Maintainer
     * (cn_repos_maintainer).  Zero elsewhere: today's rules. */
    bool authed;
    bool maintainer;
    const char *account;
} cn_repos_req_t;

typedef struct cn_repos_opts {
    /* A liveness source for the store is always registered; this only sets
     * the row cache of snapshot-tree reads per request (0 = 4096 nodes). */
    unsigned tree_cache_nodes;
} cn_repos_opts_t;

/* Opens the service over an open meta handle, store and identity (all
 * borrowed, they must outlive it; identity may be NULL: then only trusted
 * requests and admins are authorized).  Applies the "repos" migrations and
 * registers the store liveness source "repos" (every blob a repository's
 * membership names is live).  opts may be NULL.  Errors: CN_E_INVALID, meta
 * errors, -ENOMEM. */
CN_API cn_err_t cn_repos_open(cn_meta_t *meta, cn_store_t *store, cn_identity_t *id,
                              const cn_repos_opts_t *opts, cn_repos_t **out);
/* NULL is a no-op.  No request may be in progress. */
CN_API void cn_repos_close(cn_repos_t *r);

/* ---- repositories ------------------------------------------------------------ */
typedef struct cn_repos_info {
    uint8_t id[16];
    char name[CN_REPOS_NAME_MAX + 1]; /* NUL-terminated */
    uint8_t main_branch[16];
    uint64_t head; /* last accepted change of the repository */
    uint8_t incarnation[16];
    int64_t created_ms;
    uint8_t compression; /* 0 none, 1 LZ4 (chunk storage form) */
} cn_repos_info_t;

/* Creates a repository named name (1..128 bytes of UTF-8, no '/', no control
 * characters, not "." or ".."), with a random id and incarnation and a main
 * branch named "main" at change 0.  compression 0 or 1.  Needs CN_PERM_ADMIN
 * (or a trusted request).  Errors (rq->fail.detail): CN_E_INVALID (MALFORMED),
 * CN_E_EXISTS (REPOSITORY_EXISTS), CN_E_DENIED (FORBIDDEN), meta errors. */
CN_API cn_err_t cn_repos_create(cn_repos_t *r, cn_repos_req_t *rq, const char *name, size_t len,
                                uint8_t compression, cn_repos_info_t *out);
/* CN_E_NOT_FOUND (REPOSITORY_NOT_FOUND) also when the caller may not read it. */
CN_API cn_err_t cn_repos_info(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t id[16],
                              cn_repos_info_t *out);
CN_API cn_err_t cn_repos_info_by_name(cn_repos_t *r, cn_repos_req_t *rq, const char *name,
                                      size_t len, cn_repos_info_t *out);
/* Lists repositories the caller may read, by name, after the exclusive
 * cursor `after` (NULL or "" = from the start), at most limit (clamped to
 * 1..4096).  fn is called per row from one read snapshot (a non-zero return
 * stops and is returned).  *more: a later row exists; the next page starts
 * after the last name seen. */
typedef cn_err_t (*cn_repos_info_fn)(void *ctx, const cn_repos_info_t *ri);
CN_API cn_err_t cn_repos_list(cn_repos_t *r, cn_repos_req_t *rq, const char *after, uint32_t limit,
                              cn_repos_info_fn fn, void *ctx, bool *more);
/* Apparent bytes: the logical lengths of the blobs the repository's
 * membership names (each object counted once).  CN_E_NOT_FOUND. */
CN_API cn_err_t cn_repos_usage(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t id[16],
                               uint64_t *bytes);

/* instance_status: the data root's incarnation (random, made once), the
 * repository count, the apparent bytes of every repository (first page only,
 * after NULL), then up to 128 repositories by id after the exclusive cursor
 * `after` (NULL = from the start), each with its apparent bytes.  *has_next
 * with next set when more follow.  Trusted or admin requests only
 * (CN_E_DENIED, FORBIDDEN). */
typedef struct cn_repos_instance {
    uint8_t incarnation[16];
    uint64_t total_repositories;
    uint64_t used_bytes;
    /* The data directory's free bytes (cn_store_space), sampled on every
     * page; has_available false when the store cannot say (a tiered store,
     * or statvfs failed): absent rather than a guess. */
    bool has_available;
    uint64_t available_bytes;
} cn_repos_instance_t;
typedef cn_err_t (*cn_repos_usage_fn)(void *ctx, const cn_repos_info_t *ri, uint64_t bytes);
CN_API cn_err_t cn_repos_instance_status(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t *after,
                                         cn_repos_instance_t *out, cn_repos_usage_fn fn, void *ctx,
                                         bool *has_next, uint8_t next[16]);

/* ---- backup and restore (offline: `cairn admin repo backup|restore`) ------------
 * A backup is one stream (docs/protocol/scribe.md, section 13.8) of a
 * repository's rows and every blob its membership names, read in one read
 * transaction, ending in the BLAKE3 of everything before it.  A restore
 * publishes the blobs (each verified), then inserts the rows in one write
 * transaction committed only when the trailer matches, under the same id and
 * name with a NEW random incarnation (clients that knew the repository get
 * incarnation_mismatch).  An existing repository of that id is replaced only
 * with `replace`; another repository holding the name is CN_E_EXISTS.
 * Errors: CN_E_NOT_FOUND (no such repository), CN_E_EXISTS, CN_E_INVALID
 * (not a backup), CN_E_CORRUPT (truncated, damaged, a blob that does not
 * match its digest), store / meta errors, -errno of fd. */
typedef struct cn_repos_backup_stats {
    uint64_t blobs, rows, bytes;
    uint64_t head; /* the repository's head change */
} cn_repos_backup_stats_t;
CN_API cn_err_t cn_repos_backup(cn_repos_t *r, const char *name, int fd,
                                cn_repos_backup_stats_t *stats);
CN_API cn_err_t cn_repos_restore(cn_repos_t *r, int fd, bool replace, cn_repos_info_t *out,
                                 cn_repos_backup_stats_t *stats);

/* ---- objects ------------------------------------------------------------------
 * A put session receives a batch of objects whose lengths are announced up
 * front, hashes them as they stream in, publishes every blob durably, then
 * validates the batch (ids from bytes; manifests canonical with every chunk
 * present in the repository or earlier in the batch; change sets canonical
 * and valid with every manifest present or earlier) and records membership
 * in one transaction.  Nothing is a member before put_commit returns 0.
 * Kinds 1..3 only: commits are made by submits. */
typedef struct cn_repos_put cn_repos_put_t;
typedef struct cn_repos_objref {
    uint8_t kind;
    cn_digest_t id;
} cn_repos_objref_t;

/* Needs write permission.  Errors: CN_E_NOT_FOUND (REPOSITORY_NOT_FOUND),
 * CN_E_DENIED, CN_E_INVALID (MALFORMED: count 0 or over 8192). */
CN_API cn_err_t cn_repos_put_begin(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                                   uint32_t count, cn_repos_put_t **out);
/* Starts the next object (they come in the order announced).  CN_E_INVALID
 * (MALFORMED) for a kind outside 1..3, a length outside the kind's limits, a
 * batch over 1 GiB, or more objects than announced. */
CN_API cn_err_t cn_repos_put_object(cn_repos_put_t *p, uint8_t kind, const cn_digest_t *id,
                                    uint64_t length);
/* Appends bytes of the current object (never more than its length). */
CN_API cn_err_t cn_repos_put_write(cn_repos_put_t *p, const void *buf, size_t n);
/* Finishes the current object once all its bytes were written: the id is
 * checked (CN_E_DIGEST_MISMATCH, OBJECT_INVALID) and the blob published. */
CN_API cn_err_t cn_repos_put_end_object(cn_repos_put_t *p);
/* Validates and records the batch.  stored[i] (count entries, may be NULL):
 * 1 when object i became a member now, 0 when it already was.  Errors:
 * OBJECT_INVALID (CN_E_INVALID), OBJECT_MISSING (CN_E_NOT_FOUND), meta
 * errors.  The session is freed in every case. */
CN_API cn_err_t cn_repos_put_commit(cn_repos_put_t *p, uint8_t *stored);
/* Abandons a session (published blobs stay unreferenced for the sweeper).
 * NULL is a no-op. */
CN_API void cn_repos_put_abort(cn_repos_put_t *p);

/* presence: present[i] = refs[i] is a member of the repository and its blob
 * is in the store.  Read permission.  n <= 8192. */
CN_API cn_err_t cn_repos_presence(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                                  const cn_repos_objref_t *refs, uint32_t n, bool *present);

/* pin_objects: records, durably and idempotently, a pin on each ref scoped to
 * (workspace, intent), then answers presence like cn_repos_presence.  An
 * intent already used by another workspace: CN_E_CONFLICT
 * (WORKSPACE_MISMATCH); an intent with a recorded final outcome:
 * CN_E_CONFLICT (INTENT_FINALIZED).  Zero workspace or intent: MALFORMED.
 * Write permission. */
CN_API cn_err_t cn_repos_pin(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                             const uint8_t workspace[16], const uint8_t intent[16],
                             const cn_repos_objref_t *refs, uint32_t n, bool *present);

/* An object to send.  The blob is verified by name only (scrubbing is the
 * store's); present false means the repository does not hold it. */
typedef struct cn_repos_obj {
    uint8_t kind;
    cn_digest_t id;
    bool present;
    uint64_t length;  /* logical length of the object's bytes */
    cn_digest_t blob; /* the store digest of those bytes */
} cn_repos_obj_t;
/* Looks up n objects from one read snapshot (read permission). */
CN_API cn_err_t cn_repos_get_lookup(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                                    const cn_repos_objref_t *refs, uint32_t n, cn_repos_obj_t *out);
/* The raw file of a looked-up object for sendfile(2) (*fd is the caller's to
 * close).  CN_E_UNSUPPORTED when the blob is stored compressed: use
 * cn_repos_object_read.  CN_E_NOT_FOUND if the blob vanished. */
CN_API cn_err_t cn_repos_object_fd(cn_repos_t *r, const cn_repos_obj_t *o, int *fd);
/* As cn_repos_object_fd, for packed blobs too: the object's bytes start at
 * *off of *fd (a small blob's pack), so read it by offset only (sendfile(2)
 * with an offset, pread).  Same errors. */
CN_API cn_err_t cn_repos_object_fd_at(cn_repos_t *r, const cn_repos_obj_t *o, int *fd,
                                      uint64_t *off);
/* Streams the logical bytes [off, off+len) of an object to sink. */
typedef cn_err_t (*cn_repos_sink_fn)(void *ctx, const void *p, size_t n);
CN_API cn_err_t cn_repos_object_read(cn_repos_t *r, const cn_repos_obj_t *o, uint64_t off,
                                     uint64_t len, cn_repos_sink_fn sink, void *ctx);
/* One piece of a looked-up object by position, for a reply sent in parts:
 * its logical bytes from off, min(cap, length - off) of them, into buf
 * (*n = that count).  An LZ4-stored blob decodes only the envelope blocks
 * that hold the piece (its index seeks there), so an object read piece by
 * piece decodes each block once when the pieces end on block boundaries
 * (CN_REPOS_PIECE_ALIGN).  last: the caller's last piece of this object (a
 * blob the S3 tier is still fetching waits for its verdict then, as
 * cn_store_read_part).  Any thread.  CN_E_RANGE (off > length),
 * CN_E_CORRUPT (the blob is shorter than looked up, or does not decode),
 * CN_E_NOT_FOUND, -errno. */
#define CN_REPOS_PIECE_ALIGN (64u * 1024)
CN_API cn_err_t cn_repos_object_read_at(cn_repos_t *r, const cn_repos_obj_t *o, uint64_t off,
                                        void *buf, size_t cap, size_t *n, bool last);

/* ---- submit --------------------------------------------------------------------- */
typedef struct cn_repos_submit {
    uint8_t repo[16];
    uint8_t incarnation[16]; /* expected */
    uint8_t operation[16];   /* client-chosen, nonzero */
    uint8_t branch[16];
    uint8_t workspace[16];
    uint64_t base; /* expected branch head the change set was made on */
    cn_digest_t changeset;
    bool keep_locks;
    const uint8_t *author; /* UTF-8, <= 256 bytes */
    uint16_t author_len;
    const uint8_t *message; /* UTF-8, <= 65536 bytes */
    uint32_t message_len;
} cn_repos_submit_t;

enum {
    CN_REPOS_ACCEPTED = 1,
    CN_REPOS_REJECTED = 2
};
/* An operation's recorded outcome.  Owns paths; free with cn_repos_outcome_free. */
typedef struct cn_repos_outcome {
    uint8_t operation[16];
    uint8_t outcome;    /* CN_REPOS_ACCEPTED / CN_REPOS_REJECTED */
    uint64_t change;    /* accepted */
    cn_digest_t commit; /* accepted */
    uint16_t code;      /* rejected: BASE_CONFLICT, PATH_CONFLICT */
    uint64_t head;      /* rejected: the branch head judged against */
    char detail[CN_REPOS_DETAIL_MAX + 1];
    uint32_t npaths; /* rejected: conflicting paths (<= 64) */
    cn_buf_t paths;  /* npaths x (u16le length, bytes) */
} cn_repos_outcome_t;
CN_API void cn_repos_outcome_free(cn_repos_outcome_t *o);
/* i-th conflicting path of an outcome (i < npaths). */
CN_API void cn_repos_outcome_path(const cn_repos_outcome_t *o, uint32_t i, const uint8_t **p,
                                  uint16_t *n);

/* The submit fingerprint (docs/protocol/scribe.md 9.6) of a request. */
CN_API void cn_repos_submit_fp(const cn_repos_submit_t *s, cn_digest_t *out);

/* Submits a change set atomically: 0 with *out filled for an accepted or a
 * recorded rejected outcome.  The same operation id with the same
 * fingerprint returns the recorded outcome; with another, CN_E_CONFLICT
 * (OPERATION_INTENT_MISMATCH).  Unrecorded refusals: CN_E_NOT_FOUND
 * (REPOSITORY_NOT_FOUND, BRANCH_NOT_FOUND, OBJECT_MISSING), CN_E_CONFLICT
 * (INCARNATION_MISMATCH), CN_E_INVALID (MALFORMED), CN_E_DENIED.  A stale
 * base whose submitted paths did not change since it is applied to the
 * head; one whose paths did is a recorded BASE_CONFLICT rejection; a change
 * set that breaks a tree rule (add of a live path, modify of an absent one,
 * case-fold alias, file/directory clash) a recorded PATH_CONFLICT.  The tree
 * update costs O(paths x depth) node reads and writes. */
CN_API cn_err_t cn_repos_submit(cn_repos_t *r, cn_repos_req_t *rq, const cn_repos_submit_t *s,
                                cn_repos_outcome_t *out);

/* ---- branches -------------------------------------------------------------------
 * A repository's branch table (docs/protocol/scribe.md 7.8, docs/branches.md).
 * The main branch has no origin; every other branch was created from an
 * origin branch at an origin change, and its lifetime is the revisions from
 * its origin change (0 for main) to its head.  Its snapshot at a revision r
 * of its lifetime is its newest commit <= r, or without one its origin's
 * snapshot at the origin change.  Branches are never deleted. */
typedef struct cn_repos_branch {
    uint8_t id[16];
    char name[CN_REPOS_BRANCH_NAME_MAX + 1]; /* NUL-terminated, current */
    uint64_t head;      /* last change accepted on it; its origin change before that */
    bool has_origin;    /* false for the main branch */
    uint8_t origin[16]; /* has_origin: the branch it was created from */
    uint64_t origin_change;
    int64_t created_ms; /* the server's clock at acceptance */
} cn_repos_branch_t;

/* Lists repo's branches by name in byte order, strictly after `after`
 * (NULL = from the first), at most limit (clamped to 1..4096), each handed
 * to fn from one read snapshot (a non-zero return stops and is returned).
 * *more: another branch follows the last one handed.  Read permission.
 * Errors: CN_E_NOT_FOUND (REPOSITORY_NOT_FOUND), CN_E_INVALID (MALFORMED: an
 * `after` breaking the name rule). */
typedef cn_err_t (*cn_repos_branch_fn)(void *ctx, const cn_repos_branch_t *b);
CN_API cn_err_t cn_repos_branch_list(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                                     const char *after, size_t after_len, uint32_t limit,
                                     cn_repos_branch_fn fn, void *ctx, bool *more);
/* One branch, by id (id non-NULL) or by its current name, byte for byte.
 * Read permission.  CN_E_NOT_FOUND: REPOSITORY_NOT_FOUND, BRANCH_NOT_FOUND
 * (the message names the id or the name). */
CN_API cn_err_t cn_repos_branch_info(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                                     const uint8_t *id, const char *name, size_t name_len,
                                     cn_repos_branch_t *out);

enum {
    CN_REPOS_BRANCH_CREATE = 1,
    CN_REPOS_BRANCH_RENAME = 2
};
/* A branch mutation (opcode 21).  create: `branch` is the new branch's id
 * (client-chosen, nonzero), named `name`, from `source` at `source_change`
 * (inside the source's lifetime).  rename: `branch` takes `name` when its
 * current name is `expected` byte for byte.  The strings are borrowed. */
typedef struct cn_repos_branch_mutate {
    uint8_t repo[16];
    uint8_t incarnation[16]; /* expected */
    uint8_t operation[16];   /* client-chosen, nonzero */
    uint8_t branch[16];
    const char *name;
    size_t name_len;
    uint8_t action; /* CN_REPOS_BRANCH_CREATE / _RENAME */
    uint8_t source[16];
    uint64_t source_change;
    const char *expected;
    size_t expected_len;
} cn_repos_branch_mutate_t;
/* A branch mutation's recorded outcome: accepted with the branch right after
 * it (as recorded: a replay answers the same), or rejected with
 * BRANCH_EXISTS / NAME_MISMATCH and a detail. */
typedef struct cn_repos_branch_outcome {
    uint8_t operation[16];
    uint8_t outcome;          /* CN_REPOS_ACCEPTED / CN_REPOS_REJECTED */
    cn_repos_branch_t branch; /* accepted */
    uint16_t code;            /* rejected */
    char detail[CN_REPOS_DETAIL_MAX + 1];
} cn_repos_branch_outcome_t;

/* The branch fingerprint (docs/protocol/scribe.md 9.6): BLAKE3 of
 * "cairn:branch-operation:v1\0", repository, incarnation, branch, u8 action,
 * u16 LE name length, name, then create: source, u64 LE source change;
 * rename: u16 LE expected length, expected. */
CN_API void cn_repos_branch_fp(const cn_repos_branch_mutate_t *m, cn_digest_t *out);

/* Creates or renames a branch in one write transaction, durable before it
 * returns: 0 with *out for an accepted or a recorded rejected outcome
 * (BRANCH_EXISTS: the name is taken ignoring ASCII case, or a create's id is
 * in use; NAME_MISMATCH: a rename whose expected name is not current).
 * Checks in order: the request's form (CN_E_INVALID, MALFORMED: zero ids, a
 * name breaking the rule, an unknown action); the repository
 * (REPOSITORY_NOT_FOUND; write permission, FORBIDDEN); a recorded operation
 * replays its outcome when the fingerprint matches, else CN_E_CONFLICT
 * (OPERATION_INTENT_MISMATCH, also for an id a submit used); a new operation
 * naming an older incarnation is CN_E_CONFLICT (INCARNATION_MISMATCH) and
 * writes nothing; the branch ids (CN_E_NOT_FOUND, BRANCH_NOT_FOUND naming
 * the renamed branch or the create's source); the source change
 * (CHANGE_NOT_FOUND outside the source's lifetime); then the names.  A
 * create copies the case-fold index of the source's snapshot at the source
 * change (O(live paths) rows once). */
CN_API cn_err_t cn_repos_branch_mutate(cn_repos_t *r, cn_repos_req_t *rq,
                                       const cn_repos_branch_mutate_t *m,
                                       cn_repos_branch_outcome_t *out);
/* branch_outcome (23): *known false when operation has no recorded outcome;
 * an operation recorded by a submit is CN_E_CONFLICT
 * (OPERATION_INTENT_MISMATCH).  Read permission. */
CN_API cn_err_t cn_repos_branch_outcome(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                                        const uint8_t operation[16], bool *known,
                                        cn_repos_branch_outcome_t *out);

/* ---- merges (docs/protocol/scribe.md 7.9, docs/branches.md) -------------------------
 * Ancestry follows every parent of a commit: the first (its branch's previous
 * commit, or for a branch's first commit the commit of its origin snapshot)
 * and, for a merge, the source head it merged.  The merge base is the model's
 * rule (cn_repos_merge_base) over the repository's commits.  These reads and
 * the merge submit need the repository's recorded schema to be 3
 * (CN_E_UNSUPPORTED, SCHEMA_OUTDATED otherwise). */
#define CN_REPOS_MERGE_PATHS_MAX 1024   /* paths per merge read, or per chains page */
#define CN_REPOS_MERGE_COMMITS_MAX 128  /* commits per chains page */
#define CN_REPOS_HISTORY_BUDGET 100000u /* metadata visits of one history read */

typedef struct cn_repos_pathv {
    const uint8_t *p;
    size_t n;
} cn_repos_pathv_t;

/* The merge base of source at source_rev into target at target_rev (each
 * inside its branch's lifetime, CHANGE_NOT_FOUND otherwise), named by the
 * branch that accepted it and its change; change 0 (the empty snapshot) is
 * named by the repository's main branch.  Read permission.  Errors:
 * REPOSITORY_NOT_FOUND, BRANCH_NOT_FOUND, CHANGE_NOT_FOUND, SCHEMA_OUTDATED,
 * CN_E_LIMIT (LIMIT_EXCEEDED past the history budget). */
CN_API cn_err_t cn_repos_find_merge_base(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                                         const uint8_t target[16], uint64_t target_rev,
                                         const uint8_t source[16], uint64_t source_rev,
                                         uint8_t base_branch[16], uint64_t *base);

/* One page of the paths changed by two first-parent chains until they meet
 * (merge_read tag 1): while *left != *right the larger is a commit whose
 * paths (its change set's destinations and move sources, in byte order) are
 * handed to fn (each path once a page), and is replaced by its first parent.
 * A page ends after 128 commits or 1,024 paths; when a commit's paths did
 * not fit, *left and *right still name it and *has_cursor is set with the
 * last path handed in next_cursor (pass it as `cursor` to continue).  Equal
 * revisions: done, never with a cursor.  Read permission.  Errors:
 * CHANGE_NOT_FOUND (a revision that is no commit), CN_E_INVALID (a cursor
 * that is not a canonical path), SCHEMA_OUTDATED. */
typedef cn_err_t (*cn_repos_path_fn)(void *ctx, const uint8_t *p, size_t n);
CN_API cn_err_t cn_repos_merge_chains(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                                      uint64_t *left, uint64_t *right, const uint8_t *cursor,
                                      size_t cursor_len, cn_buf_t *next_cursor, bool *has_cursor,
                                      cn_repos_path_fn fn, void *ctx);

/* The entry of each of n canonical paths (n <= 1024) in branch's snapshot at
 * revision (inside its lifetime): present[i] false where the snapshot never
 * held paths[i], else out[i] (live, or a tombstone with the change that
 * removed it).  Read permission.  MALFORMED for a path that is not canonical
 * or n over 1024; BRANCH_NOT_FOUND, CHANGE_NOT_FOUND, SCHEMA_OUTDATED. */
CN_API cn_err_t cn_repos_file_states(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                                     const uint8_t branch[16], uint64_t revision,
                                     const cn_repos_pathv_t *paths, uint32_t n, bool *present,
                                     cn_repos_entry_t *out);

/* merge_read tag 5: *unchanged when `from` is in the ancestry of `to` (on
 * one branch: from <= to, both in its lifetime) and none of the n canonical
 * paths, their case-fold aliases, ancestors or descendants has an event
 * (tombstones included) in (from, to].  It reads the branch's events of that
 * interval only, at most the history budget of them (LIMIT_EXCEEDED beyond).
 * Errors as cn_repos_file_states. */
CN_API cn_err_t cn_repos_paths_unchanged(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                                         const uint8_t branch[16], uint64_t from, uint64_t to,
                                         const cn_repos_pathv_t *paths, uint32_t n,
                                         bool *unchanged);

/* merge_read tag 4: the base-file origin of each of n canonical paths of
 * branch's snapshot at revision, against base_branch's snapshot at
 * base_revision (both inside their lifetimes), from the file_lineage index
 * alone: the revisions the path's revision came from (its predecessors),
 * and from those their descendants no newer than the base revision, up to
 * revisions the base snapshot holds.  out[i]: NONE (no recorded base file,
 * or a path the snapshot never held), UNIQUE with the base path at
 * arena[off, off + len), or SEVERAL (automatic matching is unsafe).  One
 * budget for the batch: 100,000 lineage visits and 32 MiB of paths
 * (CN_E_LIMIT, LIMIT_EXCEEDED beyond; never a short answer).  Errors as
 * cn_repos_file_states. */
enum {
    CN_REPOS_ORIGIN_NONE = 0,
    CN_REPOS_ORIGIN_UNIQUE = 1,
    CN_REPOS_ORIGIN_SEVERAL = 2
};
typedef struct cn_repos_origin {
    uint8_t kind;
    size_t off, len; /* UNIQUE: the base path in the caller's arena */
} cn_repos_origin_t;
CN_API cn_err_t cn_repos_merge_origins(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                                       const uint8_t branch[16], uint64_t revision,
                                       const uint8_t base_branch[16], uint64_t base_revision,
                                       const cn_repos_pathv_t *paths, uint32_t n,
                                       cn_repos_origin_t *out, cn_buf_t *arena);

/* A merge submit (opcode 24): an ordinary submit on the target whose base is
 * the target head it was planned on, the source branch and head it merges,
 * and the merge base the plan used. */
typedef struct cn_repos_merge {
    cn_repos_submit_t submit;
    uint8_t source[16];
    uint64_t source_head;
    uint8_t base_branch[16];
    uint64_t base;
} cn_repos_merge_t;
/* BLAKE3("scribe:merge-operation:v1\0" | the submit's fingerprint | u64 LE
 * target head | source | u64 LE source head | base branch | u64 LE base). */
CN_API void cn_repos_merge_fp(const cn_repos_merge_t *m, cn_digest_t *out);
/* Submits a merge: as cn_repos_submit (same outcomes, replay and refusals,
 * fingerprint cn_repos_merge_fp), and before the publication gate, in order:
 * MALFORMED (source = target, base above either head); the source and base
 * branches (BRANCH_NOT_FOUND); SCHEMA_OUTDATED; the target head above the
 * target's live head or the source head outside the source's lifetime
 * (CHANGE_NOT_FOUND); a base other than the recomputed one (CN_E_CONFLICT,
 * BASE_MISMATCH); a change set that does not name every path the source
 * changed since the base (CN_E_CONFLICT, MERGE_INCOMPLETE, the message
 * naming missing paths).  None of these is recorded.  The accepted commit's
 * parents are the target's head commit and the source head's commit. */
CN_API cn_err_t cn_repos_merge_submit(cn_repos_t *r, cn_repos_req_t *rq, const cn_repos_merge_t *m,
                                      cn_repos_outcome_t *out);

/* ---- cherry-picks (opcodes 32, 33; docs/protocol/scribe.md 7.9) ---------------------
 * A change qualifies when it is an ordinary commit (one parent, no merge
 * parent) accepted on the source branch itself.  A pick records its
 * provenance (source, change) on the new commit; it is not ancestry. */
typedef struct cn_repos_pick_info {
    cn_repos_branch_t target;  /* head: its live head */
    cn_repos_branch_t source;  /* head: the selected change */
    uint8_t parent_branch[16]; /* the branch that accepted the parent (main for 0) */
    uint64_t parent;           /* the picked commit's first parent, 0 for none */
    bool already_applied;      /* the change, or a pick of it, is in the target's ancestry */
} cn_repos_pick_info_t;
/* cherry_pick_info (32), one read transaction, read permission.  Errors:
 * CN_E_NOT_FOUND (REPOSITORY/BRANCH_NOT_FOUND, CHANGE_NOT_FOUND for a change
 * the repository lacks), CN_E_INVALID (CHANGE_NOT_PICKABLE: a merge, or a
 * change accepted on another branch), CN_E_UNSUPPORTED (SCHEMA_OUTDATED),
 * CN_E_LIMIT (LIMIT_EXCEEDED: the ancestry walk passed the history budget). */
CN_API cn_err_t cn_repos_pick_info(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                                   const uint8_t target[16], const uint8_t source[16],
                                   uint64_t change, cn_repos_pick_info_t *out);
/* A cherry-pick submit (33): an ordinary submit on the target whose base is
 * the target head the pick was planned on, and the picked change. */
typedef struct cn_repos_pick {
    cn_repos_submit_t submit;
    uint8_t source[16];
    uint64_t change;
} cn_repos_pick_t;
/* BLAKE3("scribe:cherry-pick-operation:v1\0" | the submit's fingerprint |
 * u64 LE target head | source | u64 LE source change). */
CN_API void cn_repos_pick_fp(const cn_repos_pick_t *p, cn_digest_t *out);
/* Submits a pick: as cn_repos_submit (same outcomes, replay and refusals,
 * fingerprint cn_repos_pick_fp), and before the publication gate, unrecorded:
 * BRANCH_NOT_FOUND (source), SCHEMA_OUTDATED, CHANGE_NOT_FOUND (target head
 * outside the target's lifetime, or no such change), CHANGE_NOT_PICKABLE;
 * then recorded rejections: ALREADY_APPLIED (the change or a pick of it is in
 * the target head's ancestry), BASE_CONFLICT (the target advanced past the
 * target head and an integration path dependency changed: the change set's
 * paths, their case-fold aliases, ancestors and descendants; up to 64 named).
 * Otherwise the change set applies to the live head; the commit has one
 * parent and records the provenance. */
CN_API cn_err_t cn_repos_pick_submit(cn_repos_t *r, cn_repos_req_t *rq, const cn_repos_pick_t *p,
                                     cn_repos_outcome_t *out);

/* ---- operation outcomes ------------------------------------------------------------ */
enum {
    CN_REPOS_OP_UNKNOWN = 0,  /* no outcome recorded: not accepted, may be sent again */
    CN_REPOS_OP_SUBMIT = 1,   /* a submit's (ordinary, merge or cherry-pick): *out */
    CN_REPOS_OP_BRANCH = 2,   /* a branch mutation's: *bout */
    CN_REPOS_OP_WS_REMOVE = 3 /* a workspace removal's (cn_repos_ws_removal_outcome) */
};
/* The recorded outcome of operation, whatever kind recorded it, in *kind
 * (CN_REPOS_OP_*); *out is set (and owned: cn_repos_outcome_free) for a
 * submit, *bout for a branch mutation.  Read permission. */
CN_API cn_err_t cn_repos_operation_outcome(cn_repos_t *r, cn_repos_req_t *rq,
                                           const uint8_t repo[16], const uint8_t operation[16],
                                           uint8_t *kind, cn_repos_outcome_t *out,
                                           cn_repos_branch_outcome_t *bout);

/* ---- history ------------------------------------------------------------------ */
typedef struct cn_repos_tree_row {
    const uint8_t *path; /* borrowed, valid during the callback */
    size_t path_len;
    cn_digest_t manifest;
    uint64_t size;
    uint8_t mode;
    uint64_t last_change;
} cn_repos_tree_row_t;
typedef cn_err_t (*cn_repos_tree_fn)(void *ctx, const cn_repos_tree_row_t *row);

typedef struct cn_repos_page_q {
    uint8_t repo[16], branch[16];
    uint64_t change;       /* <= branch head; 0 = empty snapshot */
    const uint8_t *prefix; /* "" or a canonical path */
    size_t prefix_len;
    uint32_t limit;       /* clamped 1..4096 */
    const uint8_t *after; /* exclusive cursor, or NULL */
    size_t after_len;
} cn_repos_page_q_t;
/* Live entries of the snapshot of branch at change under prefix (the path
 * itself and paths under "prefix/"), ascending, after the cursor, at most
 * limit; *more when another follows; the snapshot's two roots.  Read
 * permission.  CN_E_NOT_FOUND (REPOSITORY/BRANCH/CHANGE_NOT_FOUND),
 * CN_E_INVALID (a non-canonical prefix or cursor). */
CN_API cn_err_t cn_repos_tree_page(cn_repos_t *r, cn_repos_req_t *rq, const cn_repos_page_q_t *q,
                                   cn_repos_tree_fn fn, void *ctx, bool *more,
                                   cn_digest_t *content_root, cn_digest_t *revision_root);

/* One fragment of a tree proof (docs/protocol/scribe.md 17.3): the
 * snapshot of branch at change, the query's visitation from the root (no
 * edge) or from the node the edge prefix names (its parent's key || its
 * first edge byte), each node's canonical encoding handed to fn in order,
 * until the budget, the end or `remaining` selected values.  Read
 * permission.  Errors as cn_repos_tree_page, and CN_E_INVALID (MALFORMED)
 * for an edge that names no node; CN_E_CORRUPT for a stored node that does
 * not hash to its parent's commitment. */
typedef struct cn_repos_proof_req {
    uint8_t repo[16], branch[16];
    uint64_t change;
    cn_repos_proof_query_t query;
    const uint8_t *edge; /* NULL: the first fragment */
    size_t edge_len;     /* 1..8,192 */
    uint32_t remaining;  /* 1..L + 1 */
    uint32_t max_nodes;  /* 0: 8,192 (tests lower it) */
    size_t max_bytes;    /* 0: 8 MiB */
} cn_repos_proof_req_t;
typedef cn_err_t (*cn_repos_node_fn)(void *ctx, const uint8_t *node, size_t len);
CN_API cn_err_t cn_repos_tree_proof(cn_repos_t *r, cn_repos_req_t *rq,
                                    const cn_repos_proof_req_t *q, cn_repos_node_fn fn, void *ctx,
                                    cn_digest_t *content_root, cn_digest_t *revision_root);

typedef struct cn_repos_log_row {
    uint64_t change;
    cn_digest_t commit;
    uint8_t branch[16];
    const char *branch_name;
    uint64_t parent;     /* first-parent change, 0 none */
    const uint8_t *path; /* historical path ("" without a path query) */
    size_t path_len;
    uint8_t event;            /* 0 without a path query, else cn_repos_change_kind_t */
    const uint8_t *from_path; /* move events */
    size_t from_len;
    const uint8_t *author;
    size_t author_len;
    const uint8_t *message;
    size_t message_len;
    int64_t time_ms;
    uint64_t merge_change;    /* a merge commit's merge parent, 0 for none */
    uint8_t merge_branch[16]; /* merge_change: the branch that accepted it */
    uint64_t pick_change;     /* a cherry-pick's provenance: the picked change, 0 for none */
    uint8_t pick_branch[16];  /* pick_change: the branch it was picked from */
} cn_repos_log_row_t;
typedef cn_err_t (*cn_repos_log_fn)(void *ctx, const cn_repos_log_row_t *row);

typedef struct cn_repos_log_q {
    uint8_t repo[16], branch[16];
    const uint8_t *path; /* NULL: every commit; else the path and paths under it */
    size_t path_len;
    bool has_before;
    uint64_t before;           /* exclusive, or with after_path: inclusive of later paths */
    const uint8_t *after_path; /* NULL or the last row's path */
    size_t after_len;
    uint32_t limit; /* clamped 1..4096 */
} cn_repos_log_q_t;
/* First-parent history of a branch, newest first (then ascending path),
 * from one read snapshot; with a path, the exact path's history follows its
 * moves to their sources (never merge sources), and a history past the
 * lineage budget is CN_E_LIMIT.  Read permission.  CN_E_NOT_FOUND. */
CN_API cn_err_t cn_repos_log(cn_repos_t *r, cn_repos_req_t *rq, const cn_repos_log_q_t *q,
                             cn_repos_log_fn fn, void *ctx);

typedef struct cn_repos_changed_row {
    const uint8_t *path;
    size_t path_len;
    uint64_t change; /* last native event in the interval */
    bool present;    /* state at `to` */
    cn_digest_t manifest;
    uint64_t size;
    uint8_t mode;
} cn_repos_changed_row_t;
typedef cn_err_t (*cn_repos_changed_fn)(void *ctx, const cn_repos_changed_row_t *row);
typedef struct cn_repos_changed_q {
    uint8_t repo[16], branch[16];
    uint64_t from, to;
    const uint8_t *prefix;
    size_t prefix_len;
    uint32_t limit;
    const uint8_t *after; /* exclusive path cursor (the opaque token), or NULL */
    size_t after_len;
} cn_repos_changed_q_t;
/* Paths with a native event in (min(from,to), max(from,to)], each once,
 * ascending; state pinned at `to`.  *more when another follows. */
CN_API cn_err_t cn_repos_changed_paths(cn_repos_t *r, cn_repos_req_t *rq,
                                       const cn_repos_changed_q_t *q, cn_repos_changed_fn fn,
                                       void *ctx, bool *more);

/* ---- merge-aware history (service_log_follow.c, service_log_all.c,
 * service_descendants.c; docs/protocol/scribe.md 7.5, 13.9) -------------------------
 * The log's follow-merges and all-branch modes and merge_read tag 3.  They
 * need the repository's schema 3 (CN_E_UNSUPPORTED, SCHEMA_OUTDATED) and
 * share the history budget: past CN_REPOS_HISTORY_BUDGET metadata visits or
 * 32 MiB of lineage paths they fail (CN_E_LIMIT, LIMIT_EXCEEDED), never
 * answering short. */
typedef struct cn_repos_follow_q {
    uint8_t repo[16], branch[16];
    const uint8_t *path; /* one exact canonical path (required) */
    size_t path_len;
    bool all_branches; /* the file_lineage mode */
    bool has_ceiling;  /* all_branches only: the snapshot ceiling */
    uint64_t ceiling;  /* from the branch's origin change to the repository head */
    bool has_before;
    uint64_t before;           /* exclusive, or with after_path: inclusive of later paths */
    const uint8_t *after_path; /* NULL or the last row's historical path */
    size_t after_len;
    uint32_t limit; /* clamped 1..4096 */
} cn_repos_follow_q_t;
/* One row (borrowed during the call) and, in all-branch mode, whether its
 * commit is in the commit ancestry of the selected branch's snapshot at the
 * ceiling (false in follow-merges mode).  A non-zero return stops the page
 * and is returned. */
typedef cn_err_t (*cn_repos_follow_fn)(void *ctx, const cn_repos_log_row_t *row, bool member);
/* A page of the merge-aware log of one path, newest change first, then
 * ascending historical path, each (change, path) once, from one read
 * transaction.  Follow-merges: the path's events on the branch, its origins
 * and every merge source, each to its recorded revision, following move
 * sources (an add ends a path's history).  all_branches: every revision the
 * file_lineage index links, both ways, to the revision the branch's
 * snapshot at the ceiling holds at the path, none past the ceiling;
 * *ceiling is the ceiling used (the request's, or the repository head the
 * read pinned).  The cursor filters rows, never the walk.  Read permission.
 * MALFORMED (CN_E_INVALID): a non-canonical path, a cursor without path and
 * before, a ceiling before the branch's origin change or past the
 * repository head (past the branch's head its snapshot is its head's), or a
 * ceiling without all_branches; NOT_FOUND, UNSUPPORTED and LIMIT as above. */
CN_API cn_err_t cn_repos_log_follow(cn_repos_t *r, cn_repos_req_t *rq, const cn_repos_follow_q_t *q,
                                    uint64_t *ceiling, cn_repos_follow_fn fn, void *ctx);

#define CN_REPOS_DESCENDANTS_PAGE 1024 /* historical descendants examined a page */
#define CN_REPOS_DESCENDANTS_MAX 5120  /* entries of a merge_read tag 3 reply */
/* One entry of cn_repos_descendants: path borrowed during the call. */
typedef cn_err_t (*cn_repos_desc_fn)(void *ctx, const uint8_t *path, size_t n,
                                     const cn_repos_entry_t *e);
/* merge_read tag 3: the entries, live or tombstone, of branch's snapshot at
 * revision that clash with path.  Without a cursor the page starts with the
 * path's ancestors that hold an entry (shortest first) and the path itself;
 * every page then hands over the next historical descendants (paths under
 * "path/", ascending bytes) after the cursor, at most
 * CN_REPOS_DESCENDANTS_PAGE.  *has_next and next (reset, then the last
 * descendant handed over) when more follow.  Read permission.  MALFORMED
 * (a non-canonical path or cursor, or a cursor not under the path),
 * BRANCH_NOT_FOUND, CHANGE_NOT_FOUND, SCHEMA_OUTDATED. */
CN_API cn_err_t cn_repos_descendants(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                                     const uint8_t branch[16], uint64_t revision,
                                     const uint8_t *path, size_t n, const uint8_t *cursor,
                                     size_t cursor_len, cn_repos_desc_fn fn, void *ctx,
                                     cn_buf_t *next, bool *has_next);

/* ---- change notes --------------------------------------------------------------- */
typedef struct cn_repos_note {
    uint64_t change;
    uint32_t revision;
    char author[257];
    int64_t edited_ms;
    char *text; /* heap, NUL-terminated; cn_repos_note_free */
    size_t text_len;
} cn_repos_note_t;
CN_API void cn_repos_note_free(cn_repos_note_t *n);
/* Appends revision expected+1 to change's journal.  NOTE_REVISION_STALE
 * (CN_E_CONFLICT) when the journal is past expected; LIMIT_EXCEEDED
 * (CN_E_LIMIT) at 1,024; CHANGE_NOT_FOUND; MALFORMED for blank text. */
CN_API cn_err_t cn_repos_describe(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                                  uint64_t change, uint32_t expected, const uint8_t *author,
                                  size_t author_len, const uint8_t *text, size_t text_len,
                                  cn_repos_note_t *out);
/* The latest note of each change (present[i] false when never described). */
CN_API cn_err_t cn_repos_notes(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                               const uint64_t *changes, uint32_t n, bool *present,
                               cn_repos_note_t *notes);
/* Revisions after `after`, oldest first, at most limit (1..1024). */
typedef cn_err_t (*cn_repos_note_fn)(void *ctx, const cn_repos_note_t *n);
CN_API cn_err_t cn_repos_note_history(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                                      uint64_t change, uint32_t after, uint32_t limit,
                                      cn_repos_note_fn fn, void *ctx, bool *more);

/* ---- locks (docs/protocol/scribe.md 7.10) --------------------------------------
 * Exclusive locks on canonical paths, repository-wide: one holder per path
 * and per case-fold alias (a lock on "Art/A.png" also holds "art/a.png").
 * A lock names its holder workspace, the principal that took it (empty on
 * an unauthenticated endpoint) and the workspace's branch.  Locks are rows
 * of the metadata engine, so every listener and connection on one data
 * directory sees the same ones; each change is durable before the call
 * returns. */
#define CN_REPOS_LOCK_PATHS_MAX 10000      /* paths per acquire or release */
#define CN_REPOS_LOCK_BYTES_MAX (8u << 20) /* path bytes per acquire or release */
#define CN_REPOS_PRINCIPAL_MAX 256         /* principal bytes of a lock row */

typedef struct cn_repos_lock {
    uint8_t *path; /* borrowed from the service for the callback's duration */
    size_t path_len;
    uint8_t workspace[16];
    char principal[CN_REPOS_PRINCIPAL_MAX + 1]; /* "" when unauthenticated */
    uint8_t branch[16];
    int64_t since_ms;
} cn_repos_lock_t;

/* Acquires the n canonical paths for workspace (on branch, which must be in
 * the repository's branch table), all or nothing: when any path or a case-
 * fold alias of it is held by another workspace, nothing is acquired and
 * the call fails CN_E_CONFLICT (LOCK_HELD) with a message naming the path
 * and its holder (workspace, principal, branch).  Paths the workspace
 * already holds stay as they are (their since unchanged).  *acquired: the
 * paths newly locked.  Writer permission.  Errors: CN_E_INVALID (MALFORMED:
 * a non-canonical or repeated path, n outside 1..10,000, more than 8 MiB of
 * paths), CN_E_NOT_FOUND (REPOSITORY_NOT_FOUND, BRANCH_NOT_FOUND),
 * CN_E_DENIED, meta errors. */
CN_API cn_err_t cn_repos_lock_acquire(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                                      const uint8_t workspace[16], const uint8_t branch[16],
                                      const cn_repos_pathv_t *paths, uint32_t n,
                                      uint32_t *acquired);
/* Releases the n paths held by workspace, all or nothing.  A path not
 * locked is skipped; a path held by another workspace is CN_E_CONFLICT
 * (LOCK_HELD, naming the holder) unless force, which breaks any holder's
 * lock and needs Maintainer (cn_repos_maintainer; CN_E_DENIED, FORBIDDEN,
 * otherwise).  *released: the locks removed.  Writer permission; errors as
 * cn_repos_lock_acquire. */
CN_API cn_err_t cn_repos_lock_release(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                                      const uint8_t workspace[16], bool force,
                                      const cn_repos_pathv_t *paths, uint32_t n,
                                      uint32_t *released);
/* Lists repo's locks by path in byte order: under prefix ("" = all; else
 * the path itself and the paths under "prefix/"), held by owner when owner
 * is non-NULL, strictly after the path `after` (NULL = from the first), at
 * most limit (clamped to 1..4096), each handed to fn from one read snapshot
 * (a non-zero return stops and is returned).  *more: another lock follows
 * the last one handed.  Read permission.  CN_E_INVALID (MALFORMED) for a
 * non-canonical prefix or cursor. */
typedef cn_err_t (*cn_repos_lock_fn)(void *ctx, const cn_repos_lock_t *l);
CN_API cn_err_t cn_repos_lock_list(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                                   const uint8_t *prefix, size_t prefix_len, const uint8_t *owner,
                                   const uint8_t *after, size_t after_len, uint32_t limit,
                                   cn_repos_lock_fn fn, void *ctx, bool *more);
/* lock_policy: the repository's `.scribe/config.toml` on main at its head,
 * its text (at most 65,536 bytes) into text (the caller's, at least that
 * large), *len, and *change, the change that last wrote it; without one,
 * change 0 and exactly "version = 1\n".  Read permission.  Errors:
 * CN_E_NOT_FOUND (REPOSITORY_NOT_FOUND), CN_E_LIMIT for a stored config over
 * the bound, meta and store errors. */
CN_API cn_err_t cn_repos_lock_policy(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                                     uint64_t *change, uint8_t *text, size_t *len);
/* Whether the caller holds the Maintainer role over a repository: on an
 * authenticated Scribe listener (rq->authed) the role its adapter found;
 * on an unauthenticated endpoint every caller (trusted) does; an
 * identity principal needs the admin permission. */
CN_API bool cn_repos_maintainer(const cn_repos_req_t *rq);

/* ---- public reads and mounts (service_public.c; docs/protocol/scribe.md 16) ---------
 * A manifest is ACCEPTED in a repository when the change set of one of its
 * accepted commits (any branch) names it as the content of an add, modify
 * or move: it then is, or was, a live file revision of the snapshot tree.
 * Uploaded (staged) manifests, however present, are not accepted until a
 * submit naming them is. */
#define CN_REPOS_WITNESSES_MAX 1024 /* chunks per get_chunks */
typedef struct cn_repos_witness {
    cn_digest_t chunk;    /* the chunk asked for */
    cn_digest_t manifest; /* the accepted manifest that names it */
} cn_repos_witness_t;
/* get_chunks (30): out[i] (kind chunk, id w[i].chunk) is present only when
 * w[i].manifest is accepted in the repository, names w[i].chunk, and the
 * repository holds the chunk; any other witness is an absent object, never
 * an error.  One read transaction; read permission.  The acceptance search
 * reads the change sets of the repository's commits newest first and stops
 * once every asked manifest is decided; past CN_REPOS_HISTORY_BUDGET commits
 * it fails CN_E_LIMIT (LIMIT_EXCEEDED).  Errors: MALFORMED (n outside
 * 1..1,024), REPOSITORY_NOT_FOUND, store and meta errors. */
CN_API cn_err_t cn_repos_get_chunks(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                                    const cn_repos_witness_t *w, uint32_t n, cn_repos_obj_t *out);

/* get_objects and presence for a public-only caller (an anonymous caller
 * of a public-read repository on protocol 4, docs/protocol/scribe.md 16.1):
 * as cn_repos_get_lookup, but out[i] is present only when refs[i] is a
 * commit of the repository or a manifest accepted in it; chunks, change
 * sets and staged manifests are absent objects, never an error.  One read
 * transaction (the acceptance search of cn_repos_get_chunks, for the asked
 * manifests the repository holds); read permission.  Errors: MALFORMED (n
 * outside 1..8,192), REPOSITORY_NOT_FOUND, LIMIT_EXCEEDED (CN_E_LIMIT: a
 * held manifest not decided in CN_REPOS_HISTORY_BUDGET commits), store and
 * meta errors. */
CN_API cn_err_t cn_repos_get_public(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                                    const cn_repos_objref_t *refs, uint32_t n, cn_repos_obj_t *out);

/* repository_mounts (31): the [mounts.NAME] declarations of the
 * `.scribe/config.toml` held by branch's snapshot at change (inside its
 * lifetime), sorted by name, into *out (cn_repo_config_free; only its
 * mounts are set).  No config at that revision: no mounts.  Never reads
 * the mounted repositories.  Read permission.  Errors: REPOSITORY_NOT_FOUND,
 * BRANCH_NOT_FOUND, CHANGE_NOT_FOUND (CN_E_NOT_FOUND), CN_E_INVALID
 * (INVALID_REPOSITORY_CONFIG: a stored text that is not a valid config,
 * accepted before configs were checked), store and meta errors. */
struct cn_repo_config; /* cairn/repos_config.h */
CN_API cn_err_t cn_repos_mounts(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                                const uint8_t branch[16], uint64_t change,
                                struct cn_repo_config *out);

/* ---- workspaces (docs/protocol/scribe.md 7.11) -------------------------------------
 * One registration row per (repository, workspace id), in the metadata
 * engine: every listener and connection on one data directory sees the same
 * workspaces, and each change is durable before the call returns.  A
 * removal is an operation in the repository's mutation namespace (with
 * submits and branch operations); a successful one retires the workspace id
 * for ever: registration, pins, submits (9, 24, 33) and lock requests then
 * fail CN_E_CONFLICT (WORKSPACE_RETIRED). */
#define CN_REPOS_WS_LABEL_MAX 256 /* label bytes (UTF-8) */
#define CN_REPOS_WS_TAGS_MAX 16   /* tags per workspace */
#define CN_REPOS_WS_TAG_MAX 64    /* bytes per tag */
#define CN_REPOS_WS_PAGE_MAX 128  /* rows per listing */

typedef struct cn_repos_ws {
    uint8_t id[16], branch[16];
    bool has_owner; /* false on an unauthenticated endpoint */
    uint8_t owner[16];
    char label[CN_REPOS_WS_LABEL_MAX + 1];
    uint16_t tag_count;
    char tags[CN_REPOS_WS_TAGS_MAX][CN_REPOS_WS_TAG_MAX + 1]; /* ascending bytes */
    int64_t created_ms;
    bool has_locks; /* holds at least one lock now */
} cn_repos_ws_t;

/* Registers workspace (nonzero) on branch (in the branch table) with a
 * label (<= 256 bytes, no NUL) and up to 16 tags (each 1..64 bytes without
 * whitespace; the tag grammar itself is the adapter decoder's check), or
 * updates its label and branch when it is registered; *out: the row.  The
 * tags are fixed by the first registration and compared as a set: another
 * set is CN_E_INVALID (MALFORMED), as is a repeated tag name.  Writer
 * permission.  Errors: CN_E_CONFLICT (WORKSPACE_RETIRED), CN_E_NOT_FOUND
 * (REPOSITORY_NOT_FOUND, BRANCH_NOT_FOUND), CN_E_DENIED, meta errors. */
CN_API cn_err_t cn_repos_ws_register(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                                     const uint8_t workspace[16], const uint8_t branch[16],
                                     const char *label, size_t label_len,
                                     const cn_repos_pathv_t *tags, uint32_t ntags,
                                     cn_repos_ws_t *out);
/* Lists repo's live (not retired) workspaces by id, strictly after `after`
 * (NULL = from the first), at most limit (clamped 1..128), each handed to
 * fn from one read snapshot (a non-zero return stops and is returned).
 * all: every principal's (Maintainer on an authenticated endpoint,
 * CN_E_DENIED otherwise); else the caller's own.  An unauthenticated
 * (trusted) caller has no principal: both list every workspace.  An
 * anonymous caller is CN_E_DENIED.  *more: another row follows. */
typedef cn_err_t (*cn_repos_ws_fn)(void *ctx, const cn_repos_ws_t *w);
CN_API cn_err_t cn_repos_ws_list(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                                 bool all, const uint8_t *after, uint32_t limit, cn_repos_ws_fn fn,
                                 void *ctx, bool *more);

/* A removal's recorded outcome: code 0 = retired at retired_ms; else a
 * cn_repos_code_t (LOCK_HELD) and its detail. */
typedef struct cn_repos_ws_removal {
    uint8_t operation[16];
    uint16_t code;
    int64_t retired_ms;
    char detail[CN_REPOS_DETAIL_MAX + 1];
} cn_repos_ws_removal_t;
/* BLAKE3("scribe:workspace-remove:v1\0" | repo | incarnation | workspace). */
CN_API void cn_repos_ws_remove_fp(const uint8_t repo[16], const uint8_t incarnation[16],
                                  const uint8_t workspace[16], cn_digest_t *out);
/* Removes (retires) workspace under operation (both nonzero).  The same
 * operation with the same fingerprint answers the recorded outcome; another
 * fingerprint or kind of operation is CN_E_CONFLICT
 * (OPERATION_INTENT_MISMATCH); a new operation naming another incarnation
 * is CN_E_CONFLICT (INCARNATION_MISMATCH).  A workspace holding a lock:
 * the recorded outcome LOCK_HELD naming a path.  Otherwise the row is kept
 * retired (one is made for an id never registered), the pins of its
 * intents are released and *out is the recorded retirement (a second
 * removal of a retired id answers the first time).  The record commits
 * before the call returns.  Writer permission. */
CN_API cn_err_t cn_repos_ws_remove(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                                   const uint8_t incarnation[16], const uint8_t operation[16],
                                   const uint8_t workspace[16], cn_repos_ws_removal_t *out);
/* The recorded removal outcome of operation (*known false when none is
 * recorded).  CN_E_CONFLICT (OPERATION_INTENT_MISMATCH) when a submit or a
 * branch operation recorded it.  Read permission. */
CN_API cn_err_t cn_repos_ws_removal_outcome(cn_repos_t *r, cn_repos_req_t *rq,
                                            const uint8_t repo[16], const uint8_t operation[16],
                                            bool *known, cn_repos_ws_removal_t *out);

#ifdef __cplusplus
}
#endif
#endif
