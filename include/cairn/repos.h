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
    X(OPERATION_INTENT_MISMATCH, 200) \
    X(INCARNATION_MISMATCH, 201)      \
    X(BASE_CONFLICT, 202)             \
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
/* Streams the logical bytes [off, off+len) of an object to sink. */
typedef cn_err_t (*cn_repos_sink_fn)(void *ctx, const void *p, size_t n);
CN_API cn_err_t cn_repos_object_read(cn_repos_t *r, const cn_repos_obj_t *o, uint64_t off,
                                     uint64_t len, cn_repos_sink_fn sink, void *ctx);

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
/* *known false: no outcome was recorded for operation (the submit was not
 * accepted and may be sent again). */
CN_API cn_err_t cn_repos_operation_outcome(cn_repos_t *r, cn_repos_req_t *rq,
                                           const uint8_t repo[16], const uint8_t operation[16],
                                           bool *known, cn_repos_outcome_t *out);

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
 * from one read snapshot.  Read permission.  CN_E_NOT_FOUND. */
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

#ifdef __cplusplus
}
#endif
#endif
