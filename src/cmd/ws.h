/* The workspace layer under `cairn repo` (src/cmd/repo.c): a directory with
 * DIR/.cairn/state (ws_state.c), the scan that compares it with that state
 * and the content-defined chunking of a file (ws_scan.c), and the fetch that
 * writes files from a snapshot (ws_fetch.c).  Internal to src/cmd.
 *
 * It must never talk to the network except through the libcairn Scribe
 * client (include/cairn/scribe_client.h) it is handed; never leave a
 * half-written file at a tracked path (a fetched file is written under a
 * CN_WS_TMP_PREFIX name beside its target, checked chunk by chunk, and
 * renamed into place); never let the state name a file before the file is
 * durable, nor write the state other than atomically.  Failures are reported
 * on stderr as "cairn repo: ..." and returned as the exit codes below. */
#ifndef CN_CMD_WS_H
#define CN_CMD_WS_H

#include "cairn/scribe_client.h"
#include "cairn/repos_model.h"
#include "cairn/crypto.h"
#include "cairn/util.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* Exit codes, as the object commands (docs/cli.md). */
enum {
    EXIT_OK = 0, EXIT_SERVER = 1, EXIT_USAGE = 2, EXIT_NOT_FOUND = 3, EXIT_DENIED = 4,
    EXIT_NETWORK = 5, EXIT_CONFLICT = 6, EXIT_LOCAL = 7, EXIT_INTEGRITY = 8
};

#define CN_WS_PATHS_MAX 64
#define CN_WS_TMP_PREFIX ".cairn-tmp-"  /* a file being fetched, beside its target */

/* ---- shared helpers -------------------------------------------------------------------- */
/* The exit code for a libcairn error. */
static inline int cn_ws_exit_for(cn_err_t e)
{
    switch (e) {
    case CN_OK:           return EXIT_OK;
    case CN_E_NOT_FOUND:  return EXIT_NOT_FOUND;
    case CN_E_DENIED:     return EXIT_DENIED;
    case CN_E_EXISTS:
    case CN_E_CONFLICT:   return EXIT_CONFLICT;
    case CN_E_CLOSED:
    case CN_E_TIMEOUT:
    case CN_E_PROTOCOL:   return EXIT_NETWORK;
    case CN_E_DIGEST_MISMATCH: return EXIT_INTEGRITY;
    default:              return e < 0 && e > -4096 ? EXIT_NETWORK : EXIT_SERVER;
    }
}

/* Reports "cairn repo: WHAT: reason" (the server's message when err holds
 * one) and returns the exit code for e. */
static inline int cn_ws_fail(const char *what, cn_err_t e, const cn_scribe_cerr_t *err)
{
    fprintf(stderr, "cairn repo: %s: %s\n", what,
            err && err->message[0] ? err->message : cn_strerror(e));
    return cn_ws_exit_for(e);
}

/* Reports a local file error (errno value e) on path; returns EXIT_LOCAL. */
static inline int cn_ws_local_fail(const char *what, const char *path, int e)
{
    fprintf(stderr, "cairn repo: %s %s: %s\n", what, path, strerror(e));
    return EXIT_LOCAL;
}

/* Writes n bytes as 2n hex digits and a NUL to out. */
static inline void cn_ws_hex(const void *p, size_t n, char *out)
{
    cn_hex_encode(p, n, out);
    out[2 * n] = 0;
}

/* st's modification time in nanoseconds, as the state records it. */
static inline int64_t cn_ws_mtime_ns(const struct stat *st)
{
    return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/* ---- workspace state (ws_state.c) ------------------------------------------------------ */
typedef struct wfile {
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
} wfile_t;

typedef struct wstate {
    char dir[4096];
    char endpoint[300];
    char repo[200];
    uint8_t repo_id[16], branch[16], incarnation[16], workspace[16], pending[16];
    bool has_pending;
    uint64_t change;
    char *paths[CN_WS_PATHS_MAX];   /* sparse: the prefixes synced (none = everything) */
    size_t npaths;
    wfile_t *files;
    size_t n, cap;
} wstate_t;

/* Reads DIR/.cairn/state into s (s need not be initialised; s->files sorted
 * by path).  EXIT_LOCAL, with a message, when DIR is not a workspace or the
 * state is damaged.  s owns its strings either way: cn_ws_state_free. */
int cn_ws_state_load(const char *dir, wstate_t *s);
/* Writes s to DIR/.cairn/state atomically (a temporary file, fsync, rename,
 * directory fsync); files marked mtime_ns -2 are left out.  EXIT_OK or
 * EXIT_LOCAL. */
int cn_ws_state_save(const wstate_t *s);
/* Frees s's files (s stays usable, with none) or everything s owns. */
void cn_ws_files_free(wstate_t *s);
void cn_ws_state_free(wstate_t *s);
/* Appends a zeroed record for path (a copy is kept); NULL when out of
 * memory.  The files are unsorted until the caller sorts them by
 * cn_ws_by_path. */
wfile_t *cn_ws_state_add(wstate_t *s, const char *path);
/* Finds path in s->files, which must be sorted; NULL when absent. */
wfile_t *cn_ws_state_find(wstate_t *s, const char *path);
/* qsort/bsearch order of wfile_t by path. */
int cn_ws_by_path(const void *a, const void *b);
/* Whether path is inside s's sparse prefixes (always, when it has none). */
bool cn_ws_in_scope(const wstate_t *s, const char *path);
/* Adds a --path prefix to s's scope.  EXIT_OK, EXIT_USAGE (with a message)
 * for a bad prefix or too many, EXIT_LOCAL when out of memory. */
int cn_ws_scope_add(wstate_t *s, const char *prefix);

/* ---- scanning and chunking (ws_scan.c) ------------------------------------------------- */
/* The regular files and symlinks under a workspace, with their lstat. */
typedef struct scan {
    char **paths;
    struct stat *st;
    size_t n, cap;
} scan_t;

/* A file's content split into chunks, with its manifest.  Bytes stay in a
 * read-only mapping (or, for a symlink, in a small buffer). */
typedef struct fcontent {
    uint8_t *map;
    size_t len;
    bool mapped;
    cn_repos_chunk_ref_t *chunks;
    size_t *offs;
    uint32_t nchunks;
    cn_buf_t manifest;
    cn_digest_t mid;
} fcontent_t;

/* Compares the directory with s (see ws_scan.c); sc receives the scan and is
 * freed by cn_ws_scan_free even on failure.  EXIT_OK or EXIT_LOCAL. */
int cn_ws_diff(wstate_t *s, scan_t *sc);
void cn_ws_scan_free(scan_t *sc);
/* Loads ROOT/REL (st its lstat) into c and chunks it.  EXIT_OK or
 * EXIT_LOCAL; c is freed by cn_ws_content_free either way. */
int cn_ws_content_load(const char *root, const char *rel, const struct stat *st, fcontent_t *c);
void cn_ws_content_free(fcontent_t *c);

/* ---- fetching files (ws_fetch.c) -------------------------------------------------------- */
/* One file to fetch. */
typedef struct job {
    wfile_t *w;                 /* the target record (manifest, mode already set) */
    cn_buf_t menc;
    cn_repos_manifest_t m;
    uint32_t remaining;         /* chunks not yet written */
    bool created;               /* the temporary file exists */
    char tmp[4300];
} job_t;

/* A progress bar on stderr while a transfer runs (a terminal only). */
typedef struct progress {
    const char *what;
    uint64_t total, done;
    int64_t last_ms;
    bool on;
} progress_t;

/* Fetches jobs[0..nj) from s's repository over cl and renames each into
 * place, setting its record's size and mtime; adds the chunk bytes received
 * to *bytes.  The batch is synced to disk before it returns EXIT_OK; on
 * failure the temporary files of unfinished jobs are removed.  The caller
 * frees each job's menc. */
int cn_ws_fetch_all(cn_scribe_client_t *cl, wstate_t *s, job_t *jobs, size_t nj, uint64_t *bytes,
                    bool quiet);
/* Draws a progress bar on stderr for a transfer of total bytes over cl
 * while it runs, unless quiet, under 8 MiB or stderr is no terminal; pg
 * must live until cn_ws_progress_end. */
void cn_ws_progress_start(progress_t *pg, cn_scribe_client_t *cl, const char *what,
                          uint64_t total, bool quiet);
void cn_ws_progress_end(progress_t *pg, cn_scribe_client_t *cl);

#endif
