/* cairn workspace: libcairn's working copies of a Scribe repository.
 *
 * A workspace is a directory DIR checked out from one repository's main
 * branch, with its state in DIR/.cairn/state (format in docs/cli.md): the
 * repository, branch, incarnation and workspace ids, the synced change, a
 * pending operation id, the sparse prefixes, and each tracked file's mode,
 * size, mtime and manifest id.  The verbs here are what `cairn repo` runs:
 * clone, sync, status, submit, log, describe.  Each call opens the state,
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
 *     from a backup (a new incarnation: clone again).
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

typedef struct cn_ws_error {
    cn_err_t err;       /* what the call returned */
    bool local;         /* it happened on this machine (see above) */
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
    bool has_change;      /* clone, sync: check out `change` instead of the head */
    uint64_t change;
    const char *const *paths; /* clone: the sparse prefixes (none = every path); sync:
                                 * prefixes added to a workspace cloned with some */
    size_t npaths;
    const char *author;         /* submit, describe: NULL = "cairn" */
    cn_ws_progress_fn progress; /* NULL: none */
    void *progress_ctx;
    cn_ws_notice_fn notice; /* NULL: none */
    void *notice_ctx;
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
} cn_ws_sync_result_t;

/* Checks repository `repo` (a name) out into dir, created if absent (its
 * .cairn must not exist yet): the head of the main branch, or opts->change,
 * only opts->paths when given.  The state is written before the first file
 * is fetched, so a failed clone leaves a workspace that a sync completes.
 * *res (may be NULL) says what was fetched. */
CN_API cn_err_t cn_ws_clone(const char *repo, const char *dir, const cn_ws_opts_t *opts,
                            cn_ws_sync_result_t *res, cn_ws_error_t *err);

/* Brings workspace dir to the head (or opts->change), after settling a
 * submit whose reply was lost, adding opts->paths to its prefixes first:
 * fetches every file whose manifest or mode differs, removes the files the
 * change no longer holds.  A file the sync would replace or remove that was
 * edited since the last sync stops it with a local CN_E_CONFLICT naming the
 * path, before anything is written. */
CN_API cn_err_t cn_ws_sync(const char *dir, const cn_ws_opts_t *opts, cn_ws_sync_result_t *res,
                           cn_ws_error_t *err);

/* One path that differs from the synced change. */
typedef struct cn_ws_entry {
    char kind; /* 'A' added, 'M' modified, 'D' deleted */
    const char *path;
} cn_ws_entry_t;
typedef struct cn_ws_status {
    uint64_t change; /* the synced change */
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

/* Appends a revision of change's description over the latest one (its
 * message itself never changes); *revision (may be NULL) gets the new
 * revision's number. */
CN_API cn_err_t cn_ws_describe(const char *dir, uint64_t change, const char *text,
                               const cn_ws_opts_t *opts, uint32_t *revision, cn_ws_error_t *err);

/* Whether dir holds a workspace (a DIR/.cairn/state). */
CN_API bool cn_ws_exists(const char *dir);

#ifdef __cplusplus
}
#endif
#endif
