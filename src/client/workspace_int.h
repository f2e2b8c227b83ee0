/* The workspace module's internals (include/cairn/workspace.h), shared by
 * its files: the state (workspace_state.c), the scan and the chunking of a
 * file (workspace_scan.c), the fetch (workspace_fetch.c), the verbs
 * (workspace.c, workspace_submit.c).  Never included outside src/client.
 *
 * The never-rules are the public header's.  Every failure is recorded in a
 * cn_ws_error_t through cn__ws_fail / cn__ws_local / cn__ws_file_fail, which
 * return the error, so a failing path reads `return cn__ws_...(err, ...)`. */
#ifndef CN_CLIENT_WORKSPACE_INT_H
#define CN_CLIENT_WORKSPACE_INT_H

#include "cairn/workspace.h"
#include "cairn/scribe_client.h"
#include "cairn/repos_model.h"
#include "cairn/repos_config.h"
#include "cairn/crypto.h"
#include "cairn/util.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* ---- errors (workspace.c) -------------------------------------------------------------- */
/* Records a failure the Scribe client reported: "WHAT: reason" (the
 * server's message when serr holds one) and serr's wire code; not local.
 * Returns e. */
cn_err_t cn__ws_fail(cn_ws_error_t *err, const char *what, cn_err_t e,
                     const cn_scribe_cerr_t *serr);
/* Records a local failure e with a formatted message.  Returns e. */
cn_err_t cn__ws_local(cn_ws_error_t *err, cn_err_t e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Records a failure the server's state decided (a rejected submit, a new
 * incarnation) with a formatted message; not local.  Returns e. */
cn_err_t cn__ws_server(cn_ws_error_t *err, cn_err_t e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Records a local file failure: "WHAT PATH: strerror(errnum)".  Returns
 * -errnum. */
cn_err_t cn__ws_file_fail(cn_ws_error_t *err, const char *what, const char *path, int errnum);
/* Finishes a file written through f (opened on tmp; ok false when writing it
 * failed): flushes, fsyncs and closes f, renames tmp over path, fsyncs dir.
 * Closes f in every case; on failure removes tmp and fails "cannot write"
 * naming path. */
cn_err_t cn__ws_file_publish(FILE *f, bool ok, const char *tmp, const char *path, const char *dir,
                             cn_ws_error_t *err);

/* The start of every public call: the error to fill (scratch when the
 * caller passed none), cleared; and the options (defaults for NULL). */
cn_ws_error_t *cn__ws_begin(cn_ws_error_t *err, cn_ws_error_t *scratch);
const cn_ws_opts_t *cn__ws_opts(const cn_ws_opts_t *opts);

/* Writes n bytes as 2n hex digits and a NUL to out. */
static inline void cn__ws_hex(const void *p, size_t n, char *out)
{
    cn_hex_encode(p, n, out);
    out[2 * n] = 0;
}

/* st's modification time in nanoseconds, as the state records it. */
static inline int64_t cn__ws_mtime_ns(const struct stat *st)
{
    return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/* ---- workspace state (ws_state.c) ------------------------------------------------------ */
typedef struct cn__ws_file {
    char *path;
    uint8_t mode;
    uint64_t size;
    int64_t mtime_ns;
    cn_digest_t manifest;
    /* scan results */
    bool on_disk, changed;
    uint8_t disk_mode;
    uint64_t disk_size;
    int64_t disk_mtime;
} cn__ws_file_t;

/* A move recorded in the workspace, not submitted yet. */
typedef struct cn__ws_move {
    char *from, *to;
} cn__ws_move_t;

/* A history anchor (workspace_verify.c): the last head of a branch this
 * workspace authenticated. */
typedef struct cn__ws_anchor {
    uint8_t branch[16];
    uint64_t change;
    cn_digest_t commit, content_root, revision_root;
} cn__ws_anchor_t;

typedef struct cn__ws_state {
    char dir[4096];
    char endpoint[300];
    char repo[200];
    uint8_t repo_id[16], branch[16], incarnation[16], workspace[16], pending[16];
    bool has_pending;
    char branch_name[CN_WS_BRANCH_NAME_MAX + 1]; /* as last seen; "main" for an old state */
    /* a branch mutation sent whose outcome is not known yet: its operation
     * id, the branch id it names and its intent fingerprint */
    bool has_branch_op;
    uint8_t branch_op[16], branch_op_branch[16];
    cn_digest_t branch_op_fp;
    uint64_t change;
    char *paths[CN_WS_PATHS_MAX]; /* sparse: the prefixes synced (none = everything) */
    size_t npaths;
    cn__ws_file_t *files;
    size_t n, cap;
    /* moves recorded by cn_ws_move ("move FROM<TAB>TO" lines): the next
     * submit sends each as a move entry while FROM is gone from disk and TO
     * is a new file there, else as the add and delete the scan sees */
    cn__ws_move_t *moves;
    size_t nmoves;
    /* history anchors, one per branch synced ("anchor BRANCH CHANGE COMMIT
     * CONTENT REVISION" lines), saved with the files they verified */
    cn__ws_anchor_t *anchors;
    size_t nanchors;
} cn__ws_state_t;

/* Reads DIR/.cairn/state into s (s need not be initialised; s->files sorted
 * by path).  -errno when DIR is not a workspace (-ENOENT) or the state
 * cannot be read, CN_E_CORRUPT when it is damaged.  s owns its strings
 * either way: cn__ws_state_free. */
cn_err_t cn__ws_state_load(const char *dir, cn__ws_state_t *s, cn_ws_error_t *err);
/* Writes s to DIR/.cairn/state atomically (a temporary file, fsync, rename,
 * directory fsync); files marked mtime_ns -2 are left out.  0 or -errno. */
cn_err_t cn__ws_state_save(const cn__ws_state_t *s, cn_ws_error_t *err);
/* Frees s's files (s stays usable, with none) or everything s owns. */
void cn__ws_files_free(cn__ws_state_t *s);
void cn__ws_state_free(cn__ws_state_t *s);
/* Appends a zeroed record for path (a copy is kept); NULL when out of
 * memory.  The files are unsorted until the caller sorts them by
 * cn__ws_by_path. */
cn__ws_file_t *cn__ws_state_add(cn__ws_state_t *s, const char *path);
/* Finds path among s->files[0..n) (n <= s->n), which must be sorted by
 * path; NULL when absent. */
cn__ws_file_t *cn__ws_state_find(cn__ws_state_t *s, const char *path, size_t n);
/* Sorts s->files by path. */
void cn__ws_state_sort(cn__ws_state_t *s);
/* qsort/bsearch order of cn__ws_file_t by path. */
int cn__ws_by_path(const void *a, const void *b);
/* Records the move from -> to in s (not saved): a move already ending at
 * `from` is extended to `to` instead, and one that `to` brings back to
 * its source is dropped.  0 or -ENOMEM. */
cn_err_t cn__ws_move_add(cn__ws_state_t *s, const char *from, const char *to);
/* The recorded move whose destination is `to`; NULL when none. */
const cn__ws_move_t *cn__ws_move_to(const cn__ws_state_t *s, const char *to);
/* The recorded move that the next submit sends for path (s sorted by
 * path and scanned): one whose source or destination is path, whose
 * source s tracks and is gone from disk, and whose destination is a new
 * file on disk; NULL when none. */
const cn__ws_move_t *cn__ws_move_live(cn__ws_state_t *s, const char *path);
/* Forgets every recorded move (after a submit that sent them). */
void cn__ws_moves_clear(cn__ws_state_t *s);
/* Whether path is inside s's sparse prefixes (always, when it has none). */
bool cn__ws_in_scope(const cn__ws_state_t *s, const char *path);
/* Adds a --path prefix to s's scope.  0, CN_E_INVALID for a bad prefix or
 * too many, -ENOMEM. */
cn_err_t cn__ws_scope_add(cn__ws_state_t *s, const char *prefix, cn_ws_error_t *err);

/* ---- scanning and chunking (workspace_scan.c) ------------------------------------------------- */
/* The regular files and symlinks under a workspace, with their lstat. */
typedef struct cn__ws_scan {
    char **paths;
    struct stat *st;
    size_t n, cap;
} cn__ws_scan_t;

/* A file's content split into chunks, with its manifest.  Bytes stay in a
 * read-only mapping (or, for a symlink, in a small buffer). */
typedef struct cn__ws_content {
    uint8_t *map;
    size_t len;
    bool mapped;
    cn_repos_chunk_ref_t *chunks;
    size_t *offs;
    uint32_t nchunks;
    cn_buf_t manifest;
    cn_digest_t mid;
} cn__ws_content_t;

/* Compares the directory with s (see workspace_scan.c); sc receives the
 * scan and is freed by cn__ws_scan_free even on failure; o->notice hears of
 * skipped paths.  0 or a local error. */
cn_err_t cn__ws_diff(cn__ws_state_t *s, cn__ws_scan_t *sc, const cn_ws_opts_t *o,
                     cn_ws_error_t *err);
void cn__ws_scan_free(cn__ws_scan_t *sc);
/* Loads ROOT/REL (st its lstat) into c and chunks it.  0 or a local error;
 * c is freed by cn__ws_content_free either way. */
cn_err_t cn__ws_content_load(const char *root, const char *rel, const struct stat *st,
                             cn__ws_content_t *c, cn_ws_error_t *err);
void cn__ws_content_free(cn__ws_content_t *c);

/* ---- fetching files (workspace_fetch.c) -------------------------------------------------------- */
/* One file to fetch. */
typedef struct cn__ws_job {
    cn__ws_file_t *w; /* the target record (manifest, mode already set) */
    cn_buf_t menc;
    cn_repos_manifest_t m;
    uint32_t remaining; /* chunks not yet written */
    bool created;       /* the temporary file exists */
    char tmp[4300];
} cn__ws_job_t;

/* A transfer's progress, reported to o->progress (when set) through the
 * Scribe client's byte count. */
typedef struct cn__ws_progress {
    const cn_ws_opts_t *o;
    cn_scribe_client_t *cl;
    const char *what;
    uint64_t total, done;
} cn__ws_progress_t;

/* Fetches jobs[0..nj) from s's repository over cl and renames each into
 * place, setting its record's size and mtime; adds the chunk bytes received
 * to *bytes.  The batch is synced to disk before it returns 0; on failure
 * the temporary files of unfinished jobs are removed.  The caller frees
 * each job's menc. */
cn_err_t cn__ws_fetch_all(cn_scribe_client_t *cl, cn__ws_state_t *s, cn__ws_job_t *jobs, size_t nj,
                          uint64_t *bytes, const cn_ws_opts_t *o, cn_ws_error_t *err);
/* Reports a transfer of total bytes over cl to o->progress while it runs;
 * pg must live until cn__ws_progress_end. */
void cn__ws_progress_start(cn__ws_progress_t *pg, cn_scribe_client_t *cl, const cn_ws_opts_t *o,
                           const char *what, uint64_t total);
void cn__ws_progress_end(cn__ws_progress_t *pg);

/* ---- the verbs' shared steps (workspace.c) ---------------------------------------------- */
/* Connects *cl to endpoint (NULL: the default) with o's transfer options. */
cn_err_t cn__ws_connect(const char *endpoint, const cn_ws_opts_t *o, cn_scribe_client_t **cl,
                        cn_ws_error_t *err);
/* What a verb does on an open workspace: s loaded, cl connected. */
typedef cn_err_t (*cn__ws_verb_fn)(cn_scribe_client_t *cl, cn__ws_state_t *s, const cn_ws_opts_t *o,
                                   void *arg, cn_ws_error_t *err);
/* Loads workspace dir's state, connects to o->endpoint (else the endpoint
 * the state records), runs fn(cl, s, o, arg, err), and releases both. */
cn_err_t cn__ws_run(const char *dir, const cn_ws_opts_t *o, cn__ws_verb_fn fn, void *arg,
                    cn_ws_error_t *err);
/* Registration (workspace_register.c): cn__ws_register registers s's
 * workspace (label "host:DIR", o's tags) and records DIR/.cairn/registered;
 * cn__ws_contact, at every verb's contact (cn__ws_run), refuses a retired
 * workspace and registers one the server does not know yet (once). */
cn_err_t cn__ws_register(cn_scribe_client_t *cl, const cn__ws_state_t *s, const cn_ws_opts_t *o,
                         cn_ws_error_t *err);
cn_err_t cn__ws_contact(cn_scribe_client_t *cl, const cn__ws_state_t *s, const cn_ws_opts_t *o,
                        cn_ws_error_t *err);
/* Settles a previous submit whose reply was lost (s->has_pending): when it
 * was accepted, s is moved to that change (*settled, *change) and saved. */
cn_err_t cn__ws_settle_pending(cn_scribe_client_t *cl, cn__ws_state_t *s, bool *settled,
                               uint64_t *change, cn_ws_error_t *err);
/* s's repository (*r), checked to be the incarnation s was cloned from (a
 * not-local CN_E_CONFLICT otherwise: it was restored from a backup). */
cn_err_t cn__ws_repo(cn_scribe_client_t *cl, const cn__ws_state_t *s, cn_scribe_client_repo_t *r,
                     cn_ws_error_t *err);
/* Brings s to change `target` of its branch: fetches every file whose
 * manifest or mode differs, removes files the snapshot does not hold
 * (unless edited since), then saves the state (res: fetched, removed,
 * bytes, change). */
cn_err_t cn__ws_sync_to(cn_scribe_client_t *cl, cn__ws_state_t *s, uint64_t target,
                        const cn_ws_opts_t *o, cn_ws_sync_result_t *res, cn_ws_error_t *err);

/* ---- verified sync (workspace_verify.c) ------------------------------------------------- */
/* The anchor of branch in s; NULL when none.  set replaces or adds one
 * (0 or -ENOMEM); drop forgets one; parse reads the rest of an "anchor "
 * line (false when malformed); write prints one line. */
cn__ws_anchor_t *cn__ws_anchor_find(cn__ws_state_t *s, const uint8_t branch[16]);
cn_err_t cn__ws_anchor_set(cn__ws_state_t *s, const cn__ws_anchor_t *a);
void cn__ws_anchor_drop(cn__ws_state_t *s, const uint8_t branch[16]);
bool cn__ws_anchor_parse(cn__ws_state_t *s, const char *p);
void cn__ws_anchor_write(FILE *f, const cn__ws_anchor_t *a);
/* What cn__ws_verify authenticated. */
typedef struct cn__ws_verified {
    bool first_contact;            /* s had no anchor for its branch: the head was trusted */
    bool has_head;                 /* the branch has a commit: head is the anchor to record */
    cn__ws_anchor_t head;          /* the head commit (branch, change, id, roots) */
    cn_digest_t content, revision; /* the trusted roots of the target change */
} cn__ws_verified_t;
/* Authenticates s's branch from its head down first parents to s's anchor
 * (a not-local CN_E_CORRUPT naming rollback or restore when the head does
 * not descend from it) and to change target (CN_E_NOT_FOUND when not on
 * that chain), every commit hashed here.  Does not change s. */
cn_err_t cn__ws_verify(cn_scribe_client_t *cl, cn__ws_state_t *s, uint64_t target,
                       cn__ws_verified_t *out, cn_ws_error_t *err);

/* Mounts (workspace_mounts.c): after s reached its change, clones or syncs
 * each mount its config declares there as a nested workspace at its pin
 * (res->mounts counts them).  A mount's failure is the call's, named. */
cn_err_t cn__ws_mounts_apply(cn_scribe_client_t *cl, const cn__ws_state_t *s, const cn_ws_opts_t *o,
                             cn_ws_sync_result_t *res, cn_ws_error_t *err);
/* After a sync or a submit from change was to s->change: each mount
 * declared at was whose path the config no longer declares has its nested
 * workspace retired and removed when clean, else kept; either is told to
 * o->notice.  Never fails the sync or the submit. */
cn_err_t cn__ws_mounts_prune(cn_scribe_client_t *cl, const cn__ws_state_t *s, uint64_t was,
                             const cn_ws_opts_t *o);

/* ---- branches (workspace_branch.c) -------------------------------------------------------- */
/* The head of s's branch, from branch_info by id, refreshing
 * s->branch_name (not saved).  A server that serves no branches
 * (unsupported_operation) has only main: then r->head, when s's branch is
 * r's main branch. */
cn_err_t cn__ws_branch_head(cn_scribe_client_t *cl, cn__ws_state_t *s,
                            const cn_scribe_client_repo_t *r, uint64_t *head, cn_ws_error_t *err);
/* Clone's choice of branch: o->branch (BRANCH[@N]) or r's main branch,
 * into s->branch and s->branch_name; *target is the change to check out
 * (N, o->change, or the branch head). */
cn_err_t cn__ws_clone_branch(cn_scribe_client_t *cl, cn__ws_state_t *s,
                             const cn_scribe_client_repo_t *r, const cn_ws_opts_t *o,
                             uint64_t *target, cn_ws_error_t *err);

/* ---- before a merge or a cherry-pick (workspace_merge.c) ------------------------------- */
/* Settles a lost submit (*settled, *settled_change), then checks that s is
 * at its branch head (else a local CN_E_CONFLICT: sync first) and that no
 * tracked file has a local change (a local CN_E_CONFLICT naming the first,
 * "... before <before>").  Leaves s sorted, with its scan flags cleared
 * for the submit's own scan. */
cn_err_t cn__ws_check_clean(cn_scribe_client_t *cl, cn__ws_state_t *s, const cn_ws_opts_t *o,
                            const char *before, bool *settled, uint64_t *settled_change,
                            cn_ws_error_t *err);

/* Puts paths[0..n) back to s's records (s sorted by path): each file s
 * records is fetched again (its manifest and mode), each it does not is
 * removed; then saves s and gives the files their lock mode
 * (cn__ws_mark_restored).  merge --abort and a rejected cherry-pick undo
 * what they wrote this way. */
cn_err_t cn__ws_restore_paths(cn_scribe_client_t *cl, cn__ws_state_t *s, const char *const *paths,
                              size_t n, const cn_ws_opts_t *o, cn_ws_error_t *err);

/* ---- merge submits (workspace_submit.c, for workspace_merge*.c) ------------------------- */
/* What a merge submit adds to an ordinary one: the paths the source changed
 * since the base that the result leaves as the target has them (named
 * KEEP unless the workspace changed them), and the merge fields of
 * opcode 24. */
typedef struct cn__ws_merge_submit {
    const char *const *keep;
    size_t nkeep;
    bool pick; /* a cherry-pick (opcode 33) of change source_head of source; no keeps, no base */
    uint8_t source[16];
    uint64_t source_head;
    uint8_t base_branch[16];
    uint64_t base;
} cn__ws_merge_submit_t;
/* cn_ws_submit on an open workspace: settles a lost submit, scans, chunks,
 * pins, uploads and submits every local change with message, as opcode 24
 * when merge is non-NULL (a merge with no local change is still sent), and
 * records the new change. */
cn_err_t cn__ws_submit_open(cn_scribe_client_t *cl, cn__ws_state_t *s, const cn_ws_opts_t *o,
                            const char *message, const cn__ws_merge_submit_t *merge,
                            cn_ws_submit_result_t *res, cn_ws_error_t *err);

/* ---- lock policy and modes (workspace_edit.c) ------------------------------------------ */
/* Main's lock policy as this workspace knows it. */
typedef struct cn__ws_policy {
    uint64_t change;      /* the change that last wrote .scribe/config.toml on main */
    cn_repo_config_t cfg; /* its rules (none when it did not parse) */
    bool changed;         /* it differs from the cached one, or none was cached */
    bool had_required;    /* the cached one had a required rule */
} cn__ws_policy_t;
/* Main's policy for s, from DIR/.cairn/policy while main's head is the one
 * it was read at (one repo_info), else by lock_policy (29), then cached.
 * *p is zeroed first and freed by cn__ws_policy_free either way. */
cn_err_t cn__ws_policy_get(cn_scribe_client_t *cl, const cn__ws_state_t *s, cn__ws_policy_t *p,
                           cn_ws_error_t *err);
void cn__ws_policy_free(cn__ws_policy_t *p);
/* Whether path is under a `required` rule of p (first match wins). */
bool cn__ws_policy_requires(const cn__ws_policy_t *p, const char *path);
/* Gives files the mode their lock says (docs/workspace.md, "Read-only
 * files"): paths[0..n) now held (held) are made owner-writable; now not
 * held, those under a required rule read-only; paths NULL, or a policy
 * that changed, re-marks every tracked file against the workspace's locks
 * on the server.  A file edited since recorded is never made read-only.
 * A failure goes to o->notice (when set; the call then returns 0: the
 * operation it follows succeeded) or err. */
cn_err_t cn__ws_mark(cn_scribe_client_t *cl, cn__ws_state_t *s, const char *const *paths, size_t n,
                     bool held, const cn_ws_opts_t *o, cn_ws_error_t *err);
/* Gives paths[0..n), just written back from s's records (a merge
 * --abort, a pick undone), the mode a sync would: read-only under a
 * required rule unless the workspace holds the lock on the server (one
 * lock_list), else writable; a policy that changed re-marks every file.
 * Failures as cn__ws_mark. */
cn_err_t cn__ws_mark_restored(cn_scribe_client_t *cl, cn__ws_state_t *s, const char *const *paths,
                              size_t n, const cn_ws_opts_t *o, cn_ws_error_t *err);
/* Acquires (release false) or releases paths[0..n) for s's workspace on
 * its branch, all or nothing (workspace_lock.c); *changed: how many. */
cn_err_t cn__ws_lock_send(cn_scribe_client_t *cl, const cn__ws_state_t *s, const char *const *paths,
                          uint32_t n, bool release, bool force, uint32_t *changed,
                          cn_ws_error_t *err);

#endif
