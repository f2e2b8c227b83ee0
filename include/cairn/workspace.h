/* cairn workspace: libcairn's working copies of a Scribe repository.
 *
 * A workspace is a directory DIR checked out from one branch of a
 * repository (main unless told otherwise), with its state in
 * DIR/.cairn/state (format in docs/cli.md): the repository, branch (id and
 * name), incarnation and workspace ids, the synced change, pending
 * operation ids, the sparse prefixes, and each tracked file's mode, size,
 * mtime and manifest id.  A state written before branches (no branch name)
 * is on main.  The verbs here are what `cairn repo` runs: clone, sync,
 * status, submit, log, describe, the branch verbs (list, info, create,
 * rename, switch; docs/branches.md) and merges (merge, continue, abort,
 * resolve).  Each call opens the state,
 * connects to the workspace's endpoint through the Scribe client
 * (include/cairn/scribe_client.h) when it needs the server, and releases
 * everything before it returns; nothing is shared between calls, so calls on
 * different workspaces may run on different threads at once.  Two calls on
 * one workspace at once are not supported.
 *
 * This module must never leave a half-written file at a tracked path (a
 * fetched file is written under a CN_WS_TMP_PREFIX name beside its target,
 * checked chunk by chunk against its id, and renamed into place); never let
 * the state name a file before the file is durable; never write the state
 * other than atomically (temporary file, fsync, rename, directory fsync).
 * It never prints, never exits and never returns process exit codes:
 * failures are cn_err_t values with a message in a cn_ws_error_t, progress
 * and notices go to callbacks the caller supplies.
 *
 * Errors: every call returns 0 or a cn_err_t and fills *err (which may be
 * NULL) with it and a message for humans.  err->local says where it
 * happened:
 *   local (this machine): -errno for a file of the workspace or its state
 *     (-ENOENT: DIR is not a workspace) or memory; CN_E_CORRUPT, a damaged
 *     state; CN_E_INVALID, a bad argument (a --path prefix, too many of
 *     them, prefixes for a workspace that is not sparse); CN_E_CONFLICT, a
 *     sync would overwrite local changes, or the changes do not form a valid
 *     change set; CN_E_DIGEST_MISMATCH, a fetched manifest or chunk does not
 *     match its id.
 *   not local (the server or the network): the Scribe client's errors
 *     (scribe_client.h); CN_E_CONFLICT also for a submit the server
 *     rejected (a stale base, a locked path) and for a repository restored
 *     from a backup (a new incarnation: clone again); CN_E_EXISTS and
 *     CN_E_CONFLICT for a branch mutation rejected as branch_exists and
 *     name_mismatch.  err->code is then the wire code (0 when none).
 */
#ifndef CAIRN_WORKSPACE_H
#define CAIRN_WORKSPACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cairn/err.h"
#include "cairn/scribe_client.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CN_WS_PATHS_MAX 64             /* sparse prefixes per workspace */
#define CN_WS_TMP_PREFIX ".cairn-tmp-" /* a file being fetched, beside its target */
#define CN_WS_BRANCH_NAME_MAX 256      /* bytes of a branch name */

typedef struct cn_ws_error {
    cn_err_t err;       /* what the call returned */
    bool local;         /* it happened on this machine (see above) */
    uint16_t code;      /* the server's wire code (docs/protocol/scribe.md 5); 0 when none */
    char message[1024]; /* "what: why", for humans; may change */
} cn_ws_error_t;

/* Progress of a transfer ("fetching" or "uploading", total object bytes):
 * called once with done 0 before it starts, as bytes move (from the
 * transfer's threads, one call at a time), and once with end true after it
 * stopped, whether it completed or not. */
typedef void (*cn_ws_progress_fn)(void *ctx, const char *what, uint64_t done, uint64_t total,
                                  bool end);
/* A path a scan of the workspace skips, and why ("path too long", "not a
 * canonical repository path"); the call goes on. */
typedef void (*cn_ws_notice_fn)(void *ctx, const char *path, const char *why);

/* What a call may be told; a NULL cn_ws_opts_t means every default. */
typedef struct cn_ws_opts {
    const char *endpoint; /* "host:port".  clone: NULL = 127.0.0.1:7447; the other
                                 * verbs: NULL = the endpoint the workspace recorded */
    bool lz4;             /* ask for LZ4 object transfers */
    int data_conns;       /* data connections for transfers: 0 = 4, < 0 = none */
    bool has_change;      /* clone, sync, switch: check out `change` instead of the head */
    uint64_t change;
    const char *branch;       /* clone: BRANCH or BRANCH@N to check out (NULL = main) */
    const char *const *paths; /* clone: the sparse prefixes (none = every path); sync:
                                 * prefixes added to a workspace cloned with some */
    size_t npaths;
    const char *author;         /* submit, describe: NULL = "cairn" */
    cn_ws_progress_fn progress; /* NULL: none */
    void *progress_ctx;
    cn_ws_notice_fn notice; /* NULL: none */
    void *notice_ctx;
    bool keep_locks;         /* submit: keep this workspace's locks on the submitted paths */
    const char *const *tags; /* clone: the workspace's tags, "name" or "name=value" */
    size_t ntags;
} cn_ws_opts_t;

/* What clone and sync did. */
typedef struct cn_ws_sync_result {
    bool settled;            /* a submit whose reply was lost turned out accepted, */
    uint64_t settled_change; /* as this change (valid even when the call failed) */
    bool up_to_date;         /* sync: nothing to do, already at the head */
    uint64_t change;         /* the change the workspace is at */
    uint64_t fetched;        /* files written */
    uint64_t bytes;          /* chunk bytes received */
    uint64_t removed;        /* files the change no longer holds */
    /* verified sync (docs/workspace.md): the branch had no history anchor,
     * so the server's head (anchor_change) was trusted and anchored */
    bool first_contact;
    uint64_t anchor_change;
    uint32_t mounts; /* nested workspaces cloned or synced at their pins (docs/workspace.md) */
} cn_ws_sync_result_t;

/* `cairn repo anchor reset`: forgets the history anchor of the workspace's
 * branch and anchors the server's current head (trusted, as at first
 * contact), without touching files.  *res (may be NULL): the head anchored
 * (change 0: the branch has no commit). */
typedef struct cn_ws_anchor {
    uint64_t change;
    char commit[65]; /* hex */
} cn_ws_anchor_t;
CN_API cn_err_t cn_ws_anchor_reset(const char *dir, const cn_ws_opts_t *opts, cn_ws_anchor_t *res,
                                   cn_ws_error_t *err);

/* Checks repository `repo` (a name) out into dir, created if absent (its
 * .cairn must not exist yet): the head of the main branch (or of
 * opts->branch, BRANCH[@N]), or opts->change, only opts->paths when given.
 * An unknown branch is CN_E_NOT_FOUND before dir is created.  The state is
 * written before the first file is fetched, so a failed clone leaves a
 * workspace that a sync completes.  *res (may be NULL) says what was
 * fetched. */
CN_API cn_err_t cn_ws_clone(const char *repo, const char *dir, const cn_ws_opts_t *opts,
                            cn_ws_sync_result_t *res, cn_ws_error_t *err);

/* Brings workspace dir to its branch's head (or opts->change), after
 * settling a submit whose reply was lost, adding opts->paths to its
 * prefixes first (and recording the branch's current name):
 * fetches every file whose manifest or mode differs, removes the files the
 * change no longer holds.  A file the sync would replace or remove that was
 * edited since the last sync stops it with a local CN_E_CONFLICT naming the
 * path, before anything is written.  Clone and sync are verified
 * (docs/workspace.md "Verified sync"): the tree is read only through proofs
 * against an authenticated commit; a head that does not descend from the
 * branch's history anchor is a not-local CN_E_CORRUPT (rollback or restore)
 * and a proof or commit that fails is CN_E_DIGEST_MISMATCH, nothing applied.
 * Both then materialise the config's mounts as nested workspaces ("Mounts"). */
CN_API cn_err_t cn_ws_sync(const char *dir, const cn_ws_opts_t *opts, cn_ws_sync_result_t *res,
                           cn_ws_error_t *err);

/* One path that differs from the synced change. */
typedef struct cn_ws_entry {
    char kind; /* 'A' added, 'M' modified, 'D' deleted, 'R' moved (renamed) from `from` */
    const char *path;
    const char *from; /* 'R' only: the path the file was moved from (cn_ws_move) */
} cn_ws_entry_t;
typedef struct cn_ws_status {
    uint64_t change;    /* the synced change */
    const char *branch; /* the branch the workspace follows, as last recorded */
    size_t n;
    const cn_ws_entry_t *entries; /* sorted by path; none when the workspace is clean */
} cn_ws_status_t;

/* Compares workspace dir with its state, without the network; only files
 * whose size, mtime or mode differ are read.  *out is the caller's, freed by
 * cn_ws_status_free (NULL on failure).  opts may be NULL (only notice is
 * used). */
CN_API cn_err_t cn_ws_status(const char *dir, const cn_ws_opts_t *opts, cn_ws_status_t **out,
                             cn_ws_error_t *err);
CN_API void cn_ws_status_free(cn_ws_status_t *st); /* NULL is a no-op */

/* Moves tracked file `from` to `to` in workspace dir (paths relative to
 * the workspace, canonical), without the network: renames the file on
 * disk (creating to's directories) and records the move in the state, so
 * status lists it as 'R' and the next submit sends one move entry (its
 * history continues at `to`) rather than a delete and an add.  The file may
 * be edited after the move; the move is sent as long as `from` stays gone
 * and `to` is a new file.  Moving a moved file again moves it from its
 * original path.  A local CN_E_INVALID when `from` is not a tracked file
 * (directories are not moved whole), `to` exists or is tracked, or either
 * is outside the workspace's prefixes. */
CN_API cn_err_t cn_ws_move(const char *dir, const char *from, const char *to, cn_ws_error_t *err);

/* What submit did. */
typedef struct cn_ws_submit_result {
    bool settled; /* as in cn_ws_sync_result_t */
    uint64_t settled_change;
    bool nothing;          /* no change to submit; change is the synced one */
    uint64_t change;       /* the change created */
    size_t paths;          /* paths it changed */
    size_t objects;        /* objects uploaded (the server lacked them) */
    uint64_t object_bytes; /* their bytes */
    uint64_t bytes_sent;   /* every byte the connections sent */
} cn_ws_submit_result_t;

/* Submits every change in workspace dir as one change with `message`
 * (required): settles a lost earlier submit, chunks the changed files by
 * content, records a new operation id in the state, pins every identity
 * under it, uploads what the server lacks, submits once, and records the
 * new change in the state.  An interrupted submit is resumed by the next
 * one.  A rejection (stale base) is a not-local CN_E_CONFLICT whose message
 * names the first conflicting path. */
CN_API cn_err_t cn_ws_submit(const char *dir, const char *message, const cn_ws_opts_t *opts,
                             cn_ws_submit_result_t *res, cn_ws_error_t *err);

/* The history of workspace dir's branch, newest first: limit rows (0 = all)
 * of changes touching path and below (NULL = every change), each handed to
 * fn (rows valid during the call; fn's non-zero return stops the walk). */
CN_API cn_err_t cn_ws_log(const char *dir, const char *path, uint32_t limit,
                          const cn_ws_opts_t *opts, cn_scribe_client_log_fn fn, void *ctx,
                          cn_ws_error_t *err);
/* The merge-aware log of one path on workspace dir's branch
 * (src/client/workspace_log.c): follow-merges (its origins and merge
 * sources, following moves), or with all_branches every revision of the
 * file on any branch, each row saying whether the branch's snapshot holds
 * it in its ancestry.  change (0 = none): follow-merges starts at that
 * change; all-branch takes it as the snapshot ceiling.  limit rows (0 =
 * all), each handed to fn as cn_ws_log's.  A missing path is a local
 * CN_E_INVALID. */
CN_API cn_err_t cn_ws_log_merges(const char *dir, const char *path, bool all_branches,
                                 uint64_t change, uint32_t limit, const cn_ws_opts_t *opts,
                                 cn_scribe_client_mlog_fn fn, void *ctx, cn_ws_error_t *err);

/* Appends a revision of change's description over the latest one (its
 * message itself never changes); *revision (may be NULL) gets the new
 * revision's number. */
CN_API cn_err_t cn_ws_describe(const char *dir, uint64_t change, const char *text,
                               const cn_ws_opts_t *opts, uint32_t *revision, cn_ws_error_t *err);

/* Whether dir holds a workspace (a DIR/.cairn/state). */
CN_API bool cn_ws_exists(const char *dir);

/* The workspace holding directory `start`: start itself or its nearest
 * parent with a .cairn/state, written (absolute) to dir (cap bytes).
 * 0, -ENOENT when there is none, -ENAMETOOLONG, or -errno resolving
 * start. */
CN_API cn_err_t cn_ws_find(const char *start, char *dir, size_t cap);

/* ---- branches (docs/branches.md) --------------------------------------------------------- */
/* Parses ref, `BRANCH` or `BRANCH@N` (N: decimal digits, the change as
 * `cairn repo log` prints it on that branch), into name (the branch, NUL
 * terminated) and *has_change / *change.  CN_E_INVALID for an invalid
 * branch name, an empty or non-decimal N, or an N over 2^64 - 1.  Pure. */
CN_API cn_err_t cn_ws_branch_ref_parse(const char *ref, char name[CN_WS_BRANCH_NAME_MAX + 1],
                                       bool *has_change, uint64_t *change);

/* A branch as the branch verbs report it. */
typedef struct cn_ws_branch {
    cn_scribe_client_branch_t info;              /* the server's record */
    char origin_name[CN_WS_BRANCH_NAME_MAX + 1]; /* its origin's current name ("" for main) */
    bool current;                                /* the branch the workspace follows */
} cn_ws_branch_t;

/* Every branch of workspace dir's repository, ascending by name: *out
 * (*n entries) is the caller's, freed by cn_ws_branch_list_free. */
CN_API cn_err_t cn_ws_branch_list(const char *dir, const cn_ws_opts_t *opts, cn_ws_branch_t **out,
                                  size_t *n, cn_ws_error_t *err);
CN_API void cn_ws_branch_list_free(cn_ws_branch_t *b); /* NULL is a no-op */
/* The branch named `name` (CN_E_NOT_FOUND, code branch_not_found, when none). */
CN_API cn_err_t cn_ws_branch_info(const char *dir, const char *name, const cn_ws_opts_t *opts,
                                  cn_ws_branch_t *out, cn_ws_error_t *err);
/* Creates branch `name` from `from` (BRANCH[@N]; NULL = the head of the
 * workspace's branch), without switching to it.  The operation and the new
 * branch's id are recorded in the state before they are sent, so the same
 * command after a lost reply replays that operation instead of making a
 * second branch.  A name in use is a not-local CN_E_EXISTS (code
 * branch_exists); *out (may be NULL) gets the new branch. */
CN_API cn_err_t cn_ws_branch_create(const char *dir, const char *name, const char *from,
                                    const cn_ws_opts_t *opts, cn_ws_branch_t *out,
                                    cn_ws_error_t *err);
/* Renames branch `old` to `name` (old is the expected current name),
 * recorded and replayed as a create is.  CN_E_EXISTS (branch_exists) for a
 * name in use, CN_E_CONFLICT (name_mismatch) when the branch was renamed
 * first.  A workspace on that branch records its new name. */
CN_API cn_err_t cn_ws_branch_rename(const char *dir, const char *old, const char *name,
                                    const cn_ws_opts_t *opts, cn_ws_branch_t *out,
                                    cn_ws_error_t *err);
/* Makes workspace dir follow branch ref (BRANCH[@N]; N, else
 * opts->change, else the branch head) and updates its files as sync does:
 * only what differs is fetched.  Refuses with a local CN_E_CONFLICT naming
 * the first path when the workspace has local changes (added, modified or
 * deleted files), before anything is written; settles a lost submit first. */
CN_API cn_err_t cn_ws_switch(const char *dir, const char *ref, const cn_ws_opts_t *opts,
                             cn_ws_sync_result_t *res, cn_ws_error_t *err);

/* ---- merges (docs/branches.md, "Merging in a workspace") --------------------------------- */
/* One side of a merged path: its state in the base, ours (the target) or
 * theirs (the source) snapshot. */
typedef struct cn_ws_merge_side {
    bool live;       /* false: absent or deleted */
    uint64_t change; /* the change that last wrote it (0: never held) */
    uint64_t size;
    uint8_t mode;
    cn_digest_t manifest;
    char author[CN_WS_BRANCH_NAME_MAX + 1]; /* of `change`; conflicts only */
} cn_ws_merge_side_t;
/* What the merge did with a path the source changed since the base. */
enum {
    CN_WS_MERGE_THEIRS = 'T',   /* only the source changed it: taken */
    CN_WS_MERGE_KEPT = 'K',     /* the source's change is already ours (or undone) */
    CN_WS_MERGE_LINES = 'M',    /* text changed on both sides, merged by lines */
    CN_WS_MERGE_CONFLICT = 'C', /* unresolved */
    CN_WS_MERGE_RESOLVED = 'R'  /* a conflict resolved (cn_ws_merge_resolve) */
};
/* Why a path conflicts. */
enum {
    CN_WS_WHY_BINARY = 'b',  /* not small UTF-8 text on every side: never content-merged */
    CN_WS_WHY_LINES = 't',   /* overlapping line edits: markers in the file */
    CN_WS_WHY_DELETED = 'd', /* deleted on one side, changed on the other */
    CN_WS_WHY_ORIGINS = 'o', /* several recorded base files: a manual choice */
    CN_WS_WHY_MOVED = 'v'    /* moved to different paths on both sides (`other` is ours') */
};
/* A path the source changed, or a file a recorded move lined up (origin
 * kind 1 of MergeRead 4): `from` is then the base path the file had, base
 * is that file in the base, and ours and theirs are the file on each side
 * wherever it went; the merged file goes to `path`. */
typedef struct cn_ws_merge_path {
    char *path;
    char state, why; /* CN_WS_MERGE_*, CN_WS_WHY_* (conflicts and resolutions) */
    cn_ws_merge_side_t base, ours, theirs;
    char *from;  /* a lined-up move: the file's base path; NULL otherwise */
    char *other; /* CN_WS_WHY_MOVED: where ours moved the file (ours stays there) */
} cn_ws_merge_path_t;
/* An unfinished (or just finished) merge, as DIR/.cairn/merge/state holds it. */
typedef struct cn_ws_merge {
    char source_name[CN_WS_BRANCH_NAME_MAX + 1], target_name[CN_WS_BRANCH_NAME_MAX + 1];
    uint8_t source[16], base_branch[16];
    uint64_t source_head, base, target_head;
    bool applying;             /* the plan is saved, the workspace not fully updated yet */
    cn_ws_merge_path_t *paths; /* sorted by path */
    size_t n, cap;
    size_t unresolved; /* paths in state CN_WS_MERGE_CONFLICT */
    bool submitted;    /* the merge is change `change` (its state is gone) */
    uint64_t change;
    bool settled;                        /* a lost submit reply turned out accepted */
    uint64_t bytes_sent, bytes_received; /* by the call that returned it */
} cn_ws_merge_t;
CN_API void cn_ws_merge_free(cn_ws_merge_t *m); /* NULL is a no-op */

/* Merges branch `source` (at its head) into workspace dir's branch, which
 * must be clean and at its branch head (a local CN_E_CONFLICT otherwise):
 * plans with the merge base and the paths the source changed since it,
 * saves the plan in DIR/.cairn/merge/state (temporary file, fsync, rename)
 * before a file changes, applies the paths only the source changed, merges
 * small UTF-8 texts changed on both sides by lines, and for a conflict
 * keeps ours in place (with markers for text) and writes ours, theirs and
 * base under DIR/.cairn/merge/{ours,theirs,base}/PATH.  With no conflict
 * it submits at once (opcode 24) with message (NULL: "Merge SOURCE into
 * TARGET") and removes the merge state; otherwise it returns a local
 * CN_E_CONFLICT ("unresolved paths") with *out describing them.  A merge
 * already in progress is a local CN_E_CONFLICT.  *out (may be NULL) is the
 * caller's, freed by cn_ws_merge_free. */
CN_API cn_err_t cn_ws_merge(const char *dir, const char *source, const char *message,
                            const cn_ws_opts_t *opts, cn_ws_merge_t **out, cn_ws_error_t *err);
/* Finishes the merge in progress: settles a lost submit (an accepted merge
 * ends here), completes an interrupted apply, refuses while paths are
 * unresolved (local CN_E_CONFLICT), re-checks with MergeRead 5 that the
 * target did not change the merged paths since the plan, and submits.
 * Temporary files a killed cairn left in the workspace are removed first.
 * -ENOENT (local) when no merge is in progress. */
CN_API cn_err_t cn_ws_merge_continue(const char *dir, const char *message, const cn_ws_opts_t *opts,
                                     cn_ws_merge_t **out, cn_ws_error_t *err);
/* Abandons the merge in progress: every merged path is restored to the
 * target's snapshot the merge began from (fetched again), and the merge
 * state removed, and temporary files a killed cairn left are removed.  A
 * merge whose submit was already accepted is a local CN_E_CONFLICT naming
 * its change. */
CN_API cn_err_t cn_ws_merge_abort(const char *dir, const cn_ws_opts_t *opts, cn_ws_error_t *err);
/* Resolves a path of the merge in progress without the network: how 'o'
 * (ours), 't' (theirs) or 'f' (the content of file `file`); a side that
 * deleted the path removes it.  For a file both sides moved to different
 * paths (CN_WS_WHY_MOVED), 'o' keeps it where ours moved it (`other`), 't'
 * or 'f' puts it at path and moves ours' file away from `other` (recorded
 * as a move from there, so the merge submits one).  A local CN_E_INVALID for a path the merge
 * does not hold or that did not conflict. */
CN_API cn_err_t cn_ws_merge_resolve(const char *dir, const char *path, char how, const char *file,
                                    cn_ws_error_t *err);
/* The merge in progress (*out NULL when none), without the network. */
CN_API cn_err_t cn_ws_merge_status(const char *dir, cn_ws_merge_t **out, cn_ws_error_t *err);

/* ---- cherry-picks (docs/branches.md, "Cherry-picks") ------------------------------------ */
/* What a cherry-pick did. */
typedef struct cn_ws_pick_result {
    bool settled; /* as in cn_ws_sync_result_t */
    uint64_t settled_change;
    uint64_t change;    /* the change created */
    size_t applied;     /* paths written or removed */
    size_t conflicts;   /* paths changed on both sides (nothing applied then) */
    char conflict[512]; /* the first of them */
} cn_ws_pick_result_t;
/* Applies change N of branch B (ref `B@N`) to workspace dir's branch and
 * submits it as a cherry-pick (opcode 33) with message (NULL: the picked
 * change's message and its origin).  The workspace must be clean and at its
 * branch head (local CN_E_CONFLICT otherwise).  Each path the change names
 * is compared with the change's parent: applied when the workspace still
 * holds the parent's version, skipped when it already holds the change's;
 * any path changed on both sides stops the pick before a file is written
 * (local CN_E_CONFLICT, res->conflict the first).  Not local: CN_E_INVALID
 * (change_not_pickable), CN_E_NOT_FOUND (branch_not_found,
 * change_not_found), CN_E_CONFLICT (already_applied, known before anything
 * is written or recorded by the server, or a rejected submit: every
 * applied path is then put back to the branch head's version first, so the
 * workspace is as it was before the pick; when that restore fails the error
 * is still the rejection, its message saying what to run next, and the
 * paths stay recorded for cn_ws_cherry_pick_abort). */
CN_API cn_err_t cn_ws_cherry_pick(const char *dir, const char *ref, const char *message,
                                  const cn_ws_opts_t *opts, cn_ws_pick_result_t *res,
                                  cn_ws_error_t *err);
/* Finishes a cherry-pick whose rejection left picked files in workspace dir
 * (the restore failed, or the pick was killed; DIR/.cairn/pick names
 * them): settles a submit whose reply was lost, and unless the pick turned
 * out accepted puts every picked path back to the branch head's version.
 * -ENOENT (local) when no pick is left to undo.  A later cn_ws_cherry_pick
 * does the same first. */
CN_API cn_err_t cn_ws_cherry_pick_abort(const char *dir, const cn_ws_opts_t *opts,
                                        cn_ws_error_t *err);
/* Whether workspace dir holds picked files to undo (without the network). */
CN_API bool cn_ws_cherry_pick_pending(const char *dir);

/* Repository mounts (docs/protocol/scribe.md 16): the [mounts.NAME]
 * declarations of the `.scribe/config.toml` of workspace dir's branch at
 * `change` (has_change), else at the change the workspace has checked out,
 * handed to fn in name order.  Ids in lowercase hex.  Declarations only:
 * nothing is fetched from the mounted repositories. */
typedef struct cn_ws_mount {
    const char *name, *path;
    char repository[33], branch[33]; /* hex ids */
    uint64_t revision;
} cn_ws_mount_t;
typedef cn_err_t (*cn_ws_mount_fn)(void *ctx, const cn_ws_mount_t *m);
CN_API cn_err_t cn_ws_mounts(const char *dir, bool has_change, uint64_t change,
                             const cn_ws_opts_t *opts, cn_ws_mount_fn fn, void *ctx, uint64_t *at,
                             cn_ws_error_t *err);

/* Locks (docs/protocol/scribe.md 7.10, docs/branches.md "Locks"), for the
 * workspace dir on its branch.  Paths are repository paths (canonical,
 * relative to the workspace root).  cn_ws_lock acquires the n paths all or
 * nothing (*changed: newly locked); cn_ws_unlock releases them (force: also
 * another workspace's, Maintainer only; *changed: released).  A path held
 * by another workspace: not local CN_E_CONFLICT, code 206, the message
 * naming the holder.  cn_ws_locks hands every lock of the repository under
 * prefix (NULL or "" = all) to fn, only the workspace's own with mine. */
CN_API cn_err_t cn_ws_lock(const char *dir, const char *const *paths, uint32_t n, bool release,
                           bool force, const cn_ws_opts_t *opts, uint32_t *changed,
                           cn_ws_error_t *err);
typedef struct cn_ws_lock_row {
    const char *path;
    char workspace[33]; /* hex */
    const char *principal;
    char branch[CN_WS_BRANCH_NAME_MAX + 1]; /* its current name, else its id in hex */
    uint64_t since_ms;
    bool mine; /* held by this workspace */
} cn_ws_lock_row_t;
typedef cn_err_t (*cn_ws_lock_fn)(void *ctx, const cn_ws_lock_row_t *row);
CN_API cn_err_t cn_ws_locks(const char *dir, const char *prefix, bool mine,
                            const cn_ws_opts_t *opts, cn_ws_lock_fn fn, void *ctx,
                            cn_ws_error_t *err);

/* Read-only files and `cairn repo edit` (docs/workspace.md, "Read-only
 * files").  Main's lock policy (opcode 29) is cached in DIR/.cairn/policy
 * and re-read only when main's head moved.  A tracked file under a
 * `required` rule is read-only (no write bit) while the workspace does not
 * hold its lock -- after clone, sync, switch, a submit that released it and
 * unlock -- and owner-writable once locked (cn_ws_lock, cn_ws_edit); a file
 * edited since the state recorded it never has its mode changed.  Modes
 * are advice: the server enforces the rules at submit.
 *
 * cn_ws_edit: the n paths under a required rule are locked all or nothing
 * (a path held by another workspace: not local CN_E_CONFLICT, code 206,
 * the message naming the holder; nothing changes), then every path on
 * disk is made owner-writable.  A policy that changed since the cache
 * re-marks the whole workspace first. */
typedef struct cn_ws_edit_result {
    uint64_t policy_change; /* the change that last wrote main's config (0: none) */
    uint32_t required;      /* paths under a required rule */
    uint32_t locked;        /* of them, newly locked (the others were held already) */
} cn_ws_edit_result_t;
CN_API cn_err_t cn_ws_edit(const char *dir, const char *const *paths, uint32_t n,
                           const cn_ws_opts_t *opts, cn_ws_edit_result_t *res, cn_ws_error_t *err);
/* What status adds about locks, from the server (the policy as above and
 * the workspace's locks) and a scan: each list ascending by path. */
typedef struct cn_ws_lock_status {
    uint64_t policy_change;
    size_t nheld;
    const char *const *held; /* every lock this workspace holds */
    size_t nneed;
    const char *const *need; /* changed files (added, modified, deleted, either end of a
                              * move) under a required rule whose lock it does not hold */
    size_t nwritable;
    const char *const *writable; /* unchanged files under a required rule, not locked, yet
                                  * writable: made writable by hand (read-only again at the
                                  * next sync, submit, unlock or edit that re-marks) */
} cn_ws_lock_status_t;
/* *out is the caller's, freed by cn_ws_lock_status_free (NULL on failure). */
CN_API cn_err_t cn_ws_lock_status(const char *dir, const cn_ws_opts_t *opts,
                                  cn_ws_lock_status_t **out, cn_ws_error_t *err);
CN_API void cn_ws_lock_status_free(cn_ws_lock_status_t *st); /* NULL is a no-op */

/* Workspace registration and removal (docs/workspace.md, "Registration").
 * Clone registers the new workspace (label "host:DIR", the tags of
 * opts->tags); a workspace the server does not know yet (cloned before the
 * server registered workspaces) registers at its next contact, once: DIR/
 * .cairn/registered records it.  A removed (retired) workspace keeps its
 * files, but DIR/.cairn/retired makes every verb but `workspace list` and
 * `workspace remove` refuse it. */
typedef struct cn_ws_row {
    char workspace[33], branch[CN_WS_BRANCH_NAME_MAX + 1]; /* hex; name (hex if unknown) */
    char label[257];
    char tags[16][65];
    uint16_t ntags;
    uint64_t created_ms;
    bool has_locks, mine; /* mine: the workspace of DIR */
    /* The owner id (the first 16 bytes of BLAKE3 of the registering account,
     * docs/protocol/scribe.md 15.6) in hex, "" for a row without an owner
     * (plaintext, anonymous).  The wire carries no owner name. */
    char owner[33];
} cn_ws_row_t;
typedef cn_err_t (*cn_ws_row_fn)(void *ctx, const cn_ws_row_t *w);
/* The repository's live workspaces (all: every principal's; plaintext
 * servers list all either way), by id. */
CN_API cn_err_t cn_ws_workspaces(const char *dir, bool all, const cn_ws_opts_t *opts,
                                 cn_ws_row_fn fn, void *ctx, cn_ws_error_t *err);
/* Removes (retires) workspace id (32 hex digits; NULL: DIR's own).  The
 * operation id is persisted in DIR/.cairn before it is sent, so a repeat
 * (or a reply lost) answers the recorded outcome: *retired_ms.  A workspace
 * holding locks: CN_E_CONFLICT (code 206, lock_held), and the next removal
 * is a new operation. */
CN_API cn_err_t cn_ws_remove(const char *dir, const char *id, const cn_ws_opts_t *opts,
                             uint64_t *retired_ms, cn_ws_error_t *err);

#ifdef __cplusplus
}
#endif
#endif
