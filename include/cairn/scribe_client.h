/* cairn scribe client: libcairn's client of Scribe protocol 2 (plaintext),
 * and the content-defined chunker its uploads use.
 *
 * A cn_scribe_client_t is one control connection (handshake on creation,
 * either codec, optional LZ4 transfers) and up to four data connections of
 * its session, which large puts and gets spread over.  Every core operation is one
 * function: it sends one request, reads its answer, and maps an error frame
 * to a cn_err_t with the wire code and message in cn_scribe_cerr_t.  A
 * transport failure condemns the connection; the next call reconnects.
 * Submits and branch mutations are made safe to retry: one whose reply was
 * lost is resolved through operation_outcome (branch_outcome), and re-sent
 * under the same operation id only when no outcome was recorded.
 * Object bodies are sent from caller buffers (a mapped file) and received
 * through a sink, never collected whole.  One thread at a time per client.
 *
 * Errors: 0, or CN_E_PROTOCOL (the server broke the contract), CN_E_CLOSED,
 * CN_E_TIMEOUT, -errno (transport); for an error frame CN_E_NOT_FOUND
 * (repository/branch/change not found, object missing), CN_E_EXISTS
 * (repository or branch exists), CN_E_CONFLICT (intent/incarnation
 * mismatch, stale note, branch name mismatch), CN_E_INVALID
 * (malformed, object invalid), CN_E_BUSY, CN_E_UNSUPPORTED, CN_E_DENIED,
 * -EIO otherwise; err->code is the wire code (0 when none).
 */
#ifndef CAIRN_SCRIBE_CLIENT_H
#define CAIRN_SCRIBE_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cairn/err.h"
#include "cairn/crypto.h"
#include "cairn/util.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CN_SCRIBE_CLIENT_DEFAULT_ENDPOINT "127.0.0.1:7447"

typedef struct cn_scribe_cerr {
    uint16_t code; /* the wire error code; 0 when the failure was local */
    char message[512];
} cn_scribe_cerr_t;

typedef struct cn_scribe_client_cfg {
    /* "host:port", or "scribes://host:port" for protocol 4 over TLS 1.3
     * (X25519MLKEM768 only; the server's certificate must chain to the PEM
     * CA file $CAIRN_SCRIBE_CA, else to the system's store); NULL =
     * 127.0.0.1:7447. */
    const char *endpoint;
    int codec;              /* 1 (default) or 2 (test servers only) */
    bool lz4;               /* ask for LZ4 object transfers */
    int connect_timeout_ms; /* 0 = 10000 */
    int io_timeout_ms;      /* 0 = 300000 */
    int data_conns;         /* data connections transfers may add: 0 = 4, < 0 = none */
    uint64_t bind_session;  /* nonzero: this is a data connection of that session */
} cn_scribe_client_cfg_t;

#define CN_SCRIBE_CLIENT_MAX_DATA 4 /* data connections per session (the protocol's cap) */

typedef struct cn_scribe_client cn_scribe_client_t;

CN_API cn_err_t cn_scribe_client_new(const cn_scribe_client_cfg_t *cfg, cn_scribe_client_t **out,
                                     cn_scribe_cerr_t *err);
CN_API void cn_scribe_client_free(cn_scribe_client_t *cl); /* NULL is a no-op */
/* Bytes sent and received (headers, payloads and streams), data
 * connections included. */
CN_API void cn_scribe_client_bytes(const cn_scribe_client_t *cl, uint64_t *sent,
                                   uint64_t *received);
/* Object bytes moved by put / get (uploaded or received), reported as they
 * go; calls are serialized (data connections run on their own threads).
 * fn NULL stops reporting. */
typedef void (*cn_scribe_client_progress_fn)(void *ctx, uint64_t bytes);
CN_API void cn_scribe_client_set_progress(cn_scribe_client_t *cl, cn_scribe_client_progress_fn fn,
                                          void *ctx);

typedef struct cn_scribe_client_repo {
    uint8_t id[16];
    char name[194];
    uint8_t main_branch[16];
    uint64_t head;
    uint8_t incarnation[16];
    uint64_t created_ms;
    uint8_t compression;
} cn_scribe_client_repo_t;

CN_API cn_err_t cn_scribe_client_repo_create(cn_scribe_client_t *cl, const char *name,
                                             uint8_t compression, cn_scribe_client_repo_t *out,
                                             cn_scribe_cerr_t *err);
CN_API cn_err_t cn_scribe_client_repo_info(cn_scribe_client_t *cl, const char *name,
                                           cn_scribe_client_repo_t *out, cn_scribe_cerr_t *err);
/* Every repository, page by page; fn's non-zero return stops the walk. */
typedef int (*cn_scribe_client_repo_fn)(void *ctx, const cn_scribe_client_repo_t *r);
CN_API cn_err_t cn_scribe_client_repo_list(cn_scribe_client_t *cl, cn_scribe_client_repo_fn fn,
                                           void *ctx, cn_scribe_cerr_t *err);

typedef struct cn_scribe_client_ref {
    uint8_t kind;
    cn_digest_t id;
} cn_scribe_client_ref_t;

/* presence / pin_objects over any number of refs (split into batches of
 * 8,192).  pin: workspace and intent are nonzero. */
CN_API cn_err_t cn_scribe_client_presence(cn_scribe_client_t *cl, const uint8_t repo[16],
                                          const cn_scribe_client_ref_t *refs, size_t n,
                                          bool *present, cn_scribe_cerr_t *err);
CN_API cn_err_t cn_scribe_client_pin(cn_scribe_client_t *cl, const uint8_t repo[16],
                                     const uint8_t workspace[16], const uint8_t intent[16],
                                     const cn_scribe_client_ref_t *refs, size_t n, bool *present,
                                     cn_scribe_cerr_t *err);

typedef struct cn_scribe_client_obj {
    uint8_t kind;
    cn_digest_t id;
    const void *data; /* borrowed for the call */
    size_t len;
} cn_scribe_client_obj_t;
/* Uploads objects in order, in batches of at most 16 MiB of object bytes
 * (each published on its own, so an interrupted upload keeps what was
 * answered).  objs must be in dependency order (kinds ascending); a large
 * run of one kind is split over the control connection and up to four data
 * connections of its session (opened on first use, kept), each on its own
 * thread. */
CN_API cn_err_t cn_scribe_client_put(cn_scribe_client_t *cl, const uint8_t repo[16],
                                     const cn_scribe_client_obj_t *objs, size_t n,
                                     cn_scribe_cerr_t *err);

/* Downloads objects; sink gets each present object's bytes in pieces
 * (index i of refs, the piece, whether it is the last piece); absent objects
 * call sink once with present false. */
typedef cn_err_t (*cn_scribe_client_sink_fn)(void *ctx, size_t i, bool present, const void *p,
                                             size_t n, bool last);
CN_API cn_err_t cn_scribe_client_get(cn_scribe_client_t *cl, const uint8_t repo[16],
                                     const cn_scribe_client_ref_t *refs, size_t n,
                                     cn_scribe_client_sink_fn sink, void *ctx,
                                     cn_scribe_cerr_t *err);
/* The same over up to five lanes (the control connection and data
 * connections), each fetching a contiguous slice of refs on its own thread:
 * sink is called concurrently from different lanes (lane 0..4), but all
 * pieces of one object come from one lane, in order. */
typedef cn_err_t (*cn_scribe_client_lane_sink_fn)(void *ctx, unsigned lane, size_t i, bool present,
                                                  const void *p, size_t n, bool last);
CN_API cn_err_t cn_scribe_client_get_lanes(cn_scribe_client_t *cl, const uint8_t repo[16],
                                           const cn_scribe_client_ref_t *refs, size_t n,
                                           cn_scribe_client_lane_sink_fn sink, void *ctx,
                                           cn_scribe_cerr_t *err);

typedef struct cn_scribe_client_submit {
    uint8_t repo[16], incarnation[16], operation[16], branch[16], workspace[16];
    uint64_t base;
    cn_digest_t changeset;
    bool keep_locks;
    const char *author;
    const char *message;
} cn_scribe_client_submit_t;
typedef struct cn_scribe_client_outcome {
    bool accepted;
    uint64_t change; /* accepted */
    cn_digest_t commit;
    uint16_t code; /* rejected */
    uint64_t head;
    char detail[512];
    uint32_t npaths;
    /* The paths the rejection names (path_conflict, lock_required: up to 64),
     * ", "-separated; when they do not all fit, the last words say how many
     * more there are. */
    char paths[4096];
} cn_scribe_client_outcome_t;
/* Submits; a transport failure is resolved by reconnecting and asking
 * operation_outcome (re-sending only when none was recorded, up to 3 times).
 * *out holds an accepted or rejected outcome on 0. */
CN_API cn_err_t cn_scribe_client_submit(cn_scribe_client_t *cl, const cn_scribe_client_submit_t *s,
                                        cn_scribe_client_outcome_t *out, cn_scribe_cerr_t *err);
/* *known false: no outcome recorded. */
CN_API cn_err_t cn_scribe_client_outcome(cn_scribe_client_t *cl, const uint8_t repo[16],
                                         const uint8_t op[16], bool *known,
                                         cn_scribe_client_outcome_t *out, cn_scribe_cerr_t *err);

typedef struct cn_scribe_client_entry {
    const char *path; /* NUL-terminated, valid during the callback */
    size_t path_len;
    cn_digest_t manifest;
    uint64_t size;
    uint8_t mode;
    uint64_t last_change;
} cn_scribe_client_entry_t;
typedef int (*cn_scribe_client_entry_fn)(void *ctx, const cn_scribe_client_entry_t *e);
/* Every live entry of the snapshot under prefix ("" = all), all pages;
 * roots (either may be NULL) of the snapshot. */
CN_API cn_err_t cn_scribe_client_tree(cn_scribe_client_t *cl, const uint8_t repo[16],
                                      const uint8_t branch[16], uint64_t change, const char *prefix,
                                      cn_scribe_client_entry_fn fn, void *ctx,
                                      cn_digest_t *content_root, cn_digest_t *revision_root,
                                      cn_scribe_cerr_t *err);

typedef struct cn_scribe_client_logrow {
    uint64_t change;
    cn_digest_t commit;
    uint64_t parent;
    const char *path; /* "" without a path query */
    uint8_t event;
    const char *author;
    const char *message;
    uint64_t time_ms;
    bool has_pick; /* a cherry-pick: the change it was picked from */
    uint8_t pick_branch[16];
    uint64_t pick_change;
} cn_scribe_client_logrow_t;
typedef int (*cn_scribe_client_log_fn)(void *ctx, const cn_scribe_client_logrow_t *r);
/* History newest first, up to limit rows (0 = all), all pages. */
CN_API cn_err_t cn_scribe_client_log(cn_scribe_client_t *cl, const uint8_t repo[16],
                                     const uint8_t branch[16], const char *path, uint32_t limit,
                                     cn_scribe_client_log_fn fn, void *ctx, cn_scribe_cerr_t *err);

/* ---- the merge-aware log (docs/protocol/scribe.md 7.5) ----------------------------- */
typedef struct cn_scribe_client_mlogrow {
    cn_scribe_client_logrow_t row; /* as the ordinary log's; path = historical path */
    const char *from_path;         /* a move's source, "" otherwise */
    uint8_t branch[16];            /* where the change was accepted */
    const char *branch_name;       /* its current name */
    bool has_merge;                /* a merge commit: the source head it merged */
    uint8_t merge_branch[16];
    uint64_t merge_change;
    uint64_t ceiling; /* all_branches: the snapshot ceiling of the whole walk */
    bool member;      /* all_branches: in the selected snapshot's commit ancestry */
} cn_scribe_client_mlogrow_t;
typedef int (*cn_scribe_client_mlog_fn)(void *ctx, const cn_scribe_client_mlogrow_t *r);
/* The follow-merges (all_branches false) or all-branch log of one exact
 * path, every page through the (before, after path) cursor, up to limit
 * rows (0 = all); before (0 = none) starts below that change; ceiling (0 =
 * the head the server pins, repeated on later pages) only with
 * all_branches.  Rows are valid during fn; its non-zero return stops. */
CN_API cn_err_t cn_scribe_client_log_merges(cn_scribe_client_t *cl, const uint8_t repo[16],
                                            const uint8_t branch[16], const char *path,
                                            bool all_branches, uint64_t ceiling, uint64_t before,
                                            uint32_t limit, cn_scribe_client_mlog_fn fn, void *ctx,
                                            cn_scribe_cerr_t *err);

/* ---- branches (opcodes 20-23, docs/protocol/scribe.md 7.8) -------------------------- */
#define CN_SCRIBE_CLIENT_BRANCH_NAME_MAX 256 /* bytes of a branch name */

/* A branch as the server records it (the branch-info record). */
typedef struct cn_scribe_client_branch {
    uint8_t id[16];
    char name[CN_SCRIBE_CLIENT_BRANCH_NAME_MAX + 1]; /* current name */
    uint64_t head;   /* last change on it; its origin change before its first commit */
    bool has_origin; /* false for the repository's main branch */
    uint8_t origin[16];
    uint64_t origin_change;
    uint64_t created_ms;
} cn_scribe_client_branch_t;

/* True for a valid branch name (1..256 bytes of ASCII letters, digits, '-',
 * '_', '.', '/'; no empty segment, none starting with '.', no leading '-'). */
CN_API bool cn_scribe_client_branch_name_ok(const char *name);

/* Every branch of repo in ascending byte order of name, all pages; fn's
 * non-zero return stops the walk and is returned. */
typedef int (*cn_scribe_client_branch_fn)(void *ctx, const cn_scribe_client_branch_t *b);
CN_API cn_err_t cn_scribe_client_branch_list(cn_scribe_client_t *cl, const uint8_t repo[16],
                                             cn_scribe_client_branch_fn fn, void *ctx,
                                             cn_scribe_cerr_t *err);
/* One branch, by id (id non-NULL) or by its current name (byte for byte).
 * CN_E_NOT_FOUND (code branch_not_found) when there is none; CN_E_INVALID
 * (code 0) for a name that breaks the rule, before anything is sent. */
CN_API cn_err_t cn_scribe_client_branch_info(cn_scribe_client_t *cl, const uint8_t repo[16],
                                             const uint8_t *id, const char *name,
                                             cn_scribe_client_branch_t *out, cn_scribe_cerr_t *err);

enum {
    CN_SCRIBE_CLIENT_BRANCH_CREATE = 1,
    CN_SCRIBE_CLIENT_BRANCH_RENAME = 2
};
/* One branch mutation (branch_mutate, 21).  The operation id and the branch
 * id are nonzero and chosen by the caller, who keeps them (with the intent)
 * until an outcome arrives: create names the new branch's id (random),
 * rename the id of the branch renamed. */
typedef struct cn_scribe_client_branch_op {
    uint8_t repo[16], incarnation[16], operation[16], branch[16];
    uint8_t action;         /* CN_SCRIBE_CLIENT_BRANCH_CREATE or _RENAME */
    const char *name;       /* the new branch's name / the new name */
    uint8_t source[16];     /* create: the branch it starts from */
    uint64_t source_change; /* create: inside the source's lifetime */
    const char *expected;   /* rename: the branch's current name */
} cn_scribe_client_branch_op_t;
typedef struct cn_scribe_client_branch_outcome {
    bool accepted;
    cn_scribe_client_branch_t branch; /* accepted: the branch right after the mutation */
    uint16_t code;                    /* rejected: branch_exists (110) or name_mismatch (111) */
    char detail[512];
} cn_scribe_client_branch_outcome_t;
/* The operation's intent fingerprint (docs/protocol/scribe.md 9.6): equal
 * fingerprints mean that re-sending under the same operation id replays.
 * CN_E_INVALID for an op whose layout is invalid (names, action). */
CN_API cn_err_t cn_scribe_client_branch_intent(const cn_scribe_client_branch_op_t *op,
                                               cn_digest_t *fp);
/* Sends op; a transport failure is resolved as a submit's is: reconnect,
 * ask branch_outcome, re-send only when none was recorded (up to 3 times).
 * On 0, *out holds the accepted or rejected (recorded) outcome.  A refusal
 * that records nothing is an error (incarnation_mismatch,
 * operation_intent_mismatch: CN_E_CONFLICT; branch_not_found,
 * change_not_found: CN_E_NOT_FOUND; malformed: CN_E_INVALID). */
CN_API cn_err_t cn_scribe_client_branch_mutate(cn_scribe_client_t *cl,
                                               const cn_scribe_client_branch_op_t *op,
                                               cn_scribe_client_branch_outcome_t *out,
                                               cn_scribe_cerr_t *err);
/* branch_outcome (23): *known false when nothing was recorded under op. */
CN_API cn_err_t cn_scribe_client_branch_outcome(cn_scribe_client_t *cl, const uint8_t repo[16],
                                                const uint8_t op[16], bool *known,
                                                cn_scribe_client_branch_outcome_t *out,
                                                cn_scribe_cerr_t *err);

/* ---- merges (opcodes 24, 25, docs/protocol/scribe.md 7.9) ----------------------------- */
/* A merge submit: the target's ordinary submit (its base is the target head
 * the merge was planned on, its change set covers every path the source
 * changed since the base), the source branch and head it merges, and the
 * merge base the plan used (cn_scribe_client_merge_base). */
typedef struct cn_scribe_client_merge {
    cn_scribe_client_submit_t submit;
    uint8_t source[16];
    uint64_t source_head;
    uint8_t base_branch[16];
    uint64_t base;
} cn_scribe_client_merge_t;
/* Sends merge_submit (24) as cn_scribe_client_submit sends a submit: a lost
 * reply is resolved through operation_outcome (kind 1), re-sent only when
 * nothing was recorded.  On 0 *out holds the accepted or rejected outcome.
 * base_mismatch and merge_incomplete are not recorded: CN_E_CONFLICT with
 * their wire code (203, 204) in err. */
CN_API cn_err_t cn_scribe_client_merge_submit(cn_scribe_client_t *cl,
                                              const cn_scribe_client_merge_t *m,
                                              cn_scribe_client_outcome_t *out,
                                              cn_scribe_cerr_t *err);
/* MergeRead 6: the merge base of source at source_rev into target at
 * target_rev, as (base branch, base change). */
CN_API cn_err_t cn_scribe_client_merge_base(cn_scribe_client_t *cl, const uint8_t repo[16],
                                            const uint8_t target[16], uint64_t target_rev,
                                            const uint8_t source[16], uint64_t source_rev,
                                            uint8_t base_branch[16], uint64_t *base,
                                            cn_scribe_cerr_t *err);
/* MergeRead 1, all pages: every path named on the first-parent chains from
 * left and right down to where they meet (base and source head: the paths
 * the source changed since the base), handed to fn (NUL-terminated, valid
 * during the call; a path may come more than once across pages).  fn's
 * non-zero return stops the walk with -ECANCELED. */
typedef int (*cn_scribe_client_path_fn)(void *ctx, const char *path);
CN_API cn_err_t cn_scribe_client_merge_chains(cn_scribe_client_t *cl, const uint8_t repo[16],
                                              uint64_t left, uint64_t right,
                                              cn_scribe_client_path_fn fn, void *ctx,
                                              cn_scribe_cerr_t *err);
/* A path's state in a snapshot (MergeRead 2).  live false: absent or a
 * tombstone (change: the delete, 0 when never held). */
typedef struct cn_scribe_client_fstate {
    bool live;
    uint64_t change; /* the change that last wrote the path */
    cn_digest_t manifest;
    uint64_t size;
    uint8_t mode;
} cn_scribe_client_fstate_t;
/* MergeRead 2 over paths[0..n) (any n: batches of 1,024): out[i] is
 * paths[i]'s state in branch's snapshot at revision. */
CN_API cn_err_t cn_scribe_client_merge_states(cn_scribe_client_t *cl, const uint8_t repo[16],
                                              const uint8_t branch[16], uint64_t revision,
                                              const char *const *paths, size_t n,
                                              cn_scribe_client_fstate_t *out,
                                              cn_scribe_cerr_t *err);
/* A path's recorded base file (MergeRead 4): kind CN_SCRIBE_CLIENT_ORIGIN_*;
 * base_path (UNIQUE only) is malloc'd, the caller frees it. */
enum {
    CN_SCRIBE_CLIENT_ORIGIN_NONE = 0,
    CN_SCRIBE_CLIENT_ORIGIN_UNIQUE = 1,
    CN_SCRIBE_CLIENT_ORIGIN_SEVERAL = 2 /* automatic matching is unsafe */
};
typedef struct cn_scribe_client_origin {
    uint8_t kind;
    char *base_path;
} cn_scribe_client_origin_t;
/* MergeRead 4 over paths[0..n) (batches of 1,024) in branch at revision
 * against the base snapshot (base_branch, base).  CN_E_LIMIT (code
 * limit_exceeded) when a batch overruns the server's budget. */
CN_API cn_err_t cn_scribe_client_merge_origins(cn_scribe_client_t *cl, const uint8_t repo[16],
                                               const uint8_t branch[16], uint64_t revision,
                                               const uint8_t base_branch[16], uint64_t base,
                                               const char *const *paths, size_t n,
                                               cn_scribe_client_origin_t *out,
                                               cn_scribe_cerr_t *err);
/* MergeRead 5 over paths[0..n) (batches of 1,024): *unchanged true when
 * `from` is in `to`'s ancestry on branch and none of the paths changed in
 * between. */
CN_API cn_err_t cn_scribe_client_merge_unchanged(cn_scribe_client_t *cl, const uint8_t repo[16],
                                                 const uint8_t branch[16], uint64_t from,
                                                 uint64_t to, const char *const *paths, size_t n,
                                                 bool *unchanged, cn_scribe_cerr_t *err);

/* ---- cherry-picks (opcodes 32, 33, docs/protocol/scribe.md 7.9) ------------------------ */
/* What cherry_pick_info answers for change of source onto target. */
typedef struct cn_scribe_client_pick_info {
    cn_scribe_client_branch_t target; /* head: its live head */
    cn_scribe_client_branch_t source; /* head: the picked change */
    uint8_t parent_branch[16];        /* where the change's first parent was accepted */
    uint64_t parent;                  /* the change's first parent (0: none) */
    bool already_applied;             /* the change, or a pick of it, is on the target */
} cn_scribe_client_pick_info_t;
/* cherry_pick_info (32).  CN_E_INVALID with code change_not_pickable for a
 * merge or a change the source did not make itself; CN_E_NOT_FOUND
 * (branch_not_found, change_not_found). */
CN_API cn_err_t cn_scribe_client_pick_info(cn_scribe_client_t *cl, const uint8_t repo[16],
                                           const uint8_t target[16], const uint8_t source[16],
                                           uint64_t change, cn_scribe_client_pick_info_t *out,
                                           cn_scribe_cerr_t *err);
/* A cherry-pick submit: the target's ordinary submit (its base is the target
 * head the pick was planned on) and the picked (source, change). */
typedef struct cn_scribe_client_pick {
    cn_scribe_client_submit_t submit;
    uint8_t source[16];
    uint64_t change;
} cn_scribe_client_pick_t;
/* Sends cherry_pick_submit (33) as cn_scribe_client_submit sends a submit (a
 * lost reply resolved through operation_outcome).  On 0 *out holds the
 * accepted or rejected outcome (already_applied and base_conflict are
 * recorded rejections). */
CN_API cn_err_t cn_scribe_client_pick_submit(cn_scribe_client_t *cl,
                                             const cn_scribe_client_pick_t *p,
                                             cn_scribe_client_outcome_t *out,
                                             cn_scribe_cerr_t *err);

/* Change notes: the latest revision of change's description (*revision 0
 * and text "" when never described; text holds at most cap bytes), and a
 * new revision appended after `expected` (CN_E_CONFLICT, code 212, when the
 * journal moved on). */
CN_API cn_err_t cn_scribe_client_note(cn_scribe_client_t *cl, const uint8_t repo[16],
                                      uint64_t change, uint32_t *revision, char *text, size_t cap,
                                      cn_scribe_cerr_t *err);
CN_API cn_err_t cn_scribe_client_describe(cn_scribe_client_t *cl, const uint8_t repo[16],
                                          uint64_t change, uint32_t expected, const char *author,
                                          const char *text, uint32_t *revision,
                                          cn_scribe_cerr_t *err);

/* Locks (docs/protocol/scribe.md 7.10).  lock_edit acquires (release
 * false) the count paths for workspace on branch, all or nothing, or
 * releases them (force: also another workspace's, Maintainer only); a path
 * held by another workspace is CN_E_CONFLICT, code 206, with the holder in
 * err->message.  *changed: the locks acquired or released. */
typedef struct cn_scribe_client_lock {
    uint8_t repo[16], workspace[16], branch[16];
    bool release, force;
    const char *const *paths; /* canonical paths */
    uint32_t count;           /* 1..10,000 */
} cn_scribe_client_lock_t;
CN_API cn_err_t cn_scribe_client_lock_edit(cn_scribe_client_t *cl, const cn_scribe_client_lock_t *l,
                                           uint32_t *changed, cn_scribe_cerr_t *err);
/* Every lock of repo under prefix (NULL or "" = all; else the path and the
 * paths under "prefix/"), held by owner when owner is non-NULL, by path,
 * each handed to fn (all pages; a negative return stops and is returned). */
typedef struct cn_scribe_client_lock_row {
    char path[8193];
    uint8_t workspace[16];
    char principal[257];
    uint8_t branch[16];
    uint64_t since_ms;
} cn_scribe_client_lock_row_t;
typedef cn_err_t (*cn_scribe_client_lock_fn)(void *ctx, const cn_scribe_client_lock_row_t *row);
CN_API cn_err_t cn_scribe_client_locks(cn_scribe_client_t *cl, const uint8_t repo[16],
                                       const char *prefix, const uint8_t *owner,
                                       cn_scribe_client_lock_fn fn, void *ctx,
                                       cn_scribe_cerr_t *err);
/* lock_policy (29): main's `.scribe/config.toml` text and *change, the
 * change that last wrote it (0 and exactly "version = 1\n" without one).
 * *text (NUL-terminated, *len bytes, at most 65,536) is malloc'd: the
 * caller frees it; NULL on failure.  An old server answers
 * CN_E_UNSUPPORTED (code unsupported_operation). */
CN_API cn_err_t cn_scribe_client_lock_policy(cn_scribe_client_t *cl, const uint8_t repo[16],
                                             uint64_t *change, char **text, size_t *len,
                                             cn_scribe_cerr_t *err);

/* get_chunks (30): chunks fetched against their witnesses, the accepted
 * manifests that name them (docs/protocol/scribe.md 16), any number (split
 * into requests of 1,024), each handed to sink as cn_scribe_client_get does
 * (index i of w); a chunk whose witness the server does not accept is
 * absent (present false), never an error.  An old server answers
 * CN_E_UNSUPPORTED (code unsupported_operation). */
typedef struct cn_scribe_client_witness {
    cn_digest_t chunk, manifest;
} cn_scribe_client_witness_t;
CN_API cn_err_t cn_scribe_client_get_chunks(cn_scribe_client_t *cl, const uint8_t repo[16],
                                            const cn_scribe_client_witness_t *w, size_t n,
                                            cn_scribe_client_sink_fn sink, void *ctx,
                                            cn_scribe_cerr_t *err);
/* repository_mounts (31): the mounts the `.scribe/config.toml` of branch's
 * snapshot at change declares, in name order, into *rows (malloc'd, the
 * caller frees; NULL when *count is 0), at most 64. */
typedef struct cn_scribe_client_mount {
    char name[65];
    char path[8193];
    uint8_t repository[16], branch[16];
    uint64_t revision;
} cn_scribe_client_mount_t;
CN_API cn_err_t cn_scribe_client_mounts(cn_scribe_client_t *cl, const uint8_t repo[16],
                                        const uint8_t branch[16], uint64_t change,
                                        cn_scribe_client_mount_t **rows, uint32_t *count,
                                        cn_scribe_cerr_t *err);

/* ---- verified reads (tree_proof 43, docs/protocol/scribe.md 17; scribe_proof.c) ---------
 * cn_scribe_client_tree_proof sends one tree_proof payload (the verifier
 * builds it) and appends the reply payload to *reply; an error frame or a
 * transport failure is its error.  cn_scribe_client_codec: the codec the
 * connection speaks (the verifier's requests must be in it). */
CN_API int cn_scribe_client_codec(const cn_scribe_client_t *cl);
CN_API cn_err_t cn_scribe_client_tree_proof(cn_scribe_client_t *cl, const uint8_t *req, size_t len,
                                            cn_buf_t *reply, cn_scribe_cerr_t *err);
/* Every live entry under prefix ("" = all) of branch's snapshot at change,
 * page by page (4,096 entries), each page proved through cn_tree_verify
 * against the trusted roots (those of a commit the caller authenticated):
 * fn sees a page's entries only once the page and its lookahead verified.
 * A transport failure (CN_E_CLOSED, CN_E_TIMEOUT, -errno) discards the page
 * and restarts its proof once on a new connection; a proof that fails
 * (CN_E_DIGEST_MISMATCH, CN_E_INVALID) is never retried and nothing is read
 * another way.  Entries of earlier pages were handed out already: a caller
 * applies nothing until the call returned 0.  *fragments (may be NULL)
 * counts the replies verified.  Pipelined (docs/protocol/scribe.md 17.5):
 * the next request is sent before the current reply is hashed, at most one
 * outstanding per connection, two replies held per connection.  A
 * whole-tree listing (prefix "") is split into up to 1 + the client's data
 * connections key ranges listed at once (17.5, "Key-range splits";
 * CAIRN_PROOF_SPLIT=1: unsplit); fn still sees every entry once, in order,
 * from the calling thread. */
CN_API cn_err_t cn_scribe_client_tree_verified(cn_scribe_client_t *cl, const uint8_t repo[16],
                                               const uint8_t branch[16], uint64_t change,
                                               const char *prefix, const cn_digest_t *content_root,
                                               const cn_digest_t *revision_root,
                                               cn_scribe_client_entry_fn fn, void *ctx,
                                               uint32_t *fragments, cn_scribe_cerr_t *err);
/* The commit object id (get_objects, kind 4) into *enc (appended), checked
 * to hash to id: CN_E_NOT_FOUND when absent, CN_E_DIGEST_MISMATCH when the
 * bytes are not that commit's. */
CN_API cn_err_t cn_scribe_client_commit(cn_scribe_client_t *cl, const uint8_t repo[16],
                                        const cn_digest_t *id, cn_buf_t *enc,
                                        cn_scribe_cerr_t *err);

/* ---- the gateway wire (docs/protocol/scribe-gateway.md, "Wire") ------------------
 * discover (2): the endpoint's role (1 storage, 2 gateway), whether it runs
 * native authentication, and one namespace label per storage server in
 * configuration order (empty labels on plaintext). */
typedef struct cn_scribe_client_discover {
    uint8_t role;
    bool authentication;
    uint32_t count; /* 1..64 */
    char labels[64][65];
} cn_scribe_client_discover_t;
CN_API cn_err_t cn_scribe_client_discover(cn_scribe_client_t *cl, cn_scribe_client_discover_t *out,
                                          cn_scribe_cerr_t *err);
/* instance_status (26), one page: after NULL for the first (it may be the
 * previous page's head->next, read before *head is written).  fn sees each
 * row (ascending ids; its non-zero return stops the walk and is returned);
 * *head gets the page's header (its rows iterator spent).  A caller walking
 * pages restarts when the incarnation or the total changes between them. */
typedef int (*cn_scribe_client_inventory_fn)(void *ctx, const cn_scribe_client_repo_t *r,
                                             uint64_t bytes);
typedef struct cn_scribe_client_instance {
    uint8_t incarnation[16];
    uint64_t total_repositories, used_bytes;
    bool has_available;
    uint64_t available_bytes;
    uint32_t count;
    bool has_next;
    uint8_t next[16];
} cn_scribe_client_instance_t;
CN_API cn_err_t cn_scribe_client_instance_status(cn_scribe_client_t *cl, const uint8_t *after,
                                                 cn_scribe_client_instance_t *head,
                                                 cn_scribe_client_inventory_fn fn, void *ctx,
                                                 cn_scribe_cerr_t *err);
/* authorize_upload (27) and authorize_repo_create (28, ns NULL = the
 * endpoint's default): 0 when the server would admit the real request now
 * (it checks again then; nothing is reserved). */
CN_API cn_err_t cn_scribe_client_authorize_upload(cn_scribe_client_t *cl, const uint8_t repo[16],
                                                  cn_scribe_cerr_t *err);
CN_API cn_err_t cn_scribe_client_authorize_repo_create(cn_scribe_client_t *cl, const char *ns,
                                                       cn_scribe_cerr_t *err);

/* ---- content-defined chunking ---------------------------------------------------
 * FastCDC 2020 with normalized chunking level 2, the Remote Execution API's
 * FAST_CDC_2020 (docs/protocol/scribe.md, section 14.1): min = avg/4,
 * max = 4 x avg, masks of log2(avg) +/- 2 bits, an optional seed XORed into
 * the gear table.  cairn's uploads use avg 64 KiB, seed 0.  Pure functions,
 * any thread. */
#define CN_SCRIBE_CDC_MIN (16u << 10)
#define CN_SCRIBE_CDC_AVG (64u << 10)
#define CN_SCRIBE_CDC_MAX (256u << 10)
#define CN_SCRIBE_CDC_AVG_MIN (1u << 10) /* accepted averages: powers of two in */
#define CN_SCRIBE_CDC_AVG_MAX (1u << 20) /* [1 KiB, 1 MiB] (max chunk 4 MiB) */

typedef struct cn_scribe_cdc {
    uint32_t min, avg, max;
    uint64_t mask_s, mask_l; /* before / after the average */
    uint64_t seed;
} cn_scribe_cdc_t;

/* Parameters for average `avg` (a power of two in the range above) and
 * `seed`; CN_E_INVALID otherwise. */
CN_API cn_err_t cn_scribe_cdc_init(cn_scribe_cdc_t *c, uint32_t avg, uint64_t seed);
/* The length of the chunk that starts at p (n bytes available: the whole
 * rest when n <= min, at most max); *fp (may be NULL) gets the rolling hash
 * at the cut (0 when no byte was hashed). */
CN_API size_t cn_scribe_cdc_next(const cn_scribe_cdc_t *c, const uint8_t *p, size_t n,
                                 uint64_t *fp);
/* cn_scribe_cdc_next with cairn's parameters (avg 64 KiB, seed 0). */
CN_API size_t cn_scribe_cdc_cut(const uint8_t *p, size_t n);
/* The gear table's entry i (seed 0), for tests and documentation. */
CN_API uint64_t cn_scribe_cdc_gear(uint8_t i);

/* ---- workspaces (docs/protocol/scribe.md 7.11) -----------------------------------
 * Registration, listing and removal of the workspaces of a repository.  Any
 * thread that owns cl. */
typedef struct cn_scribe_client_ws {
    uint8_t workspace[16], branch[16];
    bool has_owner;
    uint8_t owner[16];
    char label[256 + 1];
    uint16_t tag_count;
    char tags[16][64 + 1]; /* at most 16 of 64 bytes, ascending */
    uint64_t created_ms;
    bool has_locks;
} cn_scribe_client_ws_t;
/* workspace_register (12): registers workspace on branch with a label (<=
 * 256 bytes) and ntags tags ("name" or "name=value", cn_scribe_ws_tag_ok),
 * or updates the label and branch of a registered one; *out (may be NULL):
 * the server's row.  CN_E_INVALID before sending for a bad tag or label;
 * wire refusals as err->code (malformed: other tags than the first
 * registration's; workspace_retired). */
CN_API cn_err_t cn_scribe_client_ws_register(cn_scribe_client_t *cl, const uint8_t repo[16],
                                             const uint8_t workspace[16], const uint8_t branch[16],
                                             const char *label, const char *const *tags,
                                             uint16_t ntags, cn_scribe_client_ws_t *out,
                                             cn_scribe_cerr_t *err);
/* workspace_list (34): every live workspace of repo (all: every
 * principal's; else the caller's own; plaintext lists all either way), by
 * id, paging at 128; fn's non-zero return stops and is returned. */
typedef cn_err_t (*cn_scribe_client_ws_fn)(void *ctx, const cn_scribe_client_ws_t *w);
CN_API cn_err_t cn_scribe_client_ws_list(cn_scribe_client_t *cl, const uint8_t repo[16], bool all,
                                         cn_scribe_client_ws_fn fn, void *ctx,
                                         cn_scribe_cerr_t *err);
/* A removal outcome: code 0 = retired at retired_ms; else the wire code
 * (lock_held) and its detail. */
typedef struct cn_scribe_client_ws_removal {
    uint8_t operation[16];
    uint16_t code;
    uint64_t retired_ms;
    char detail[4096 + 1];
} cn_scribe_client_ws_removal_t;
/* workspace_remove (35) under operation (nonzero; the caller persists it
 * before the call, so a lost reply can be resolved later): when the reply
 * is lost the call asks workspace_remove_outcome (36) before sending again
 * (up to 3 attempts).  A recorded rejection is *out with a nonzero code and
 * CN_OK; refusals (operation_intent_mismatch, incarnation_mismatch) as
 * err->code. */
CN_API cn_err_t cn_scribe_client_ws_remove(cn_scribe_client_t *cl, const uint8_t repo[16],
                                           const uint8_t incarnation[16],
                                           const uint8_t operation[16], const uint8_t workspace[16],
                                           cn_scribe_client_ws_removal_t *out,
                                           cn_scribe_cerr_t *err);
/* workspace_remove_outcome (36): *known false when the server recorded no
 * removal under operation (it may be sent again). */
CN_API cn_err_t cn_scribe_client_ws_removal_outcome(cn_scribe_client_t *cl, const uint8_t repo[16],
                                                    const uint8_t operation[16], bool *known,
                                                    cn_scribe_client_ws_removal_t *out,
                                                    cn_scribe_cerr_t *err);

#ifdef __cplusplus
}
#endif
#endif
