/* `cairn repo create|list|info|clone|status|submit|sync|log`: version control
 * of large files over Scribe protocol 2 (include/cairn/scribe_client.h).
 *
 * A workspace is a directory with DIR/.cairn/state (format in docs/cli.md):
 * the repository, branch, incarnation and workspace ids, the synced change,
 * a pending operation id, and per file its mode, size, mtime and manifest id,
 * so `status` only rehashes files whose size or mtime changed.  `submit`
 * splits changed files by content-defined chunking, pins every identity
 * under the operation id (persisted before it is sent), uploads only the
 * absent objects in dependency order (chunks, manifests, change set), and
 * submits once; a lost reply is resolved through operation_outcome.  Files
 * are written to a temporary name beside their target and renamed into
 * place, every chunk checked against its id.  Exit codes as the object commands (docs/cli.md). */
#include "cmd.h"

#include "cairn/scribe_client.h"
#include "cairn/repos_model.h"
#include "cairn/crypto.h"
#include "cairn/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum {
    EXIT_OK = 0, EXIT_SERVER = 1, EXIT_USAGE = 2, EXIT_NOT_FOUND = 3, EXIT_DENIED = 4,
    EXIT_NETWORK = 5, EXIT_CONFLICT = 6, EXIT_LOCAL = 7, EXIT_INTEGRITY = 8
};

static const char repo_usage[] =
    "usage: cairn repo create NAME [--lz4-storage]     create a repository\n"
    "       cairn repo list                            list repositories\n"
    "       cairn repo info NAME                       show a repository\n"
    "       cairn repo clone NAME DIR [--change N] [--path PREFIX]...\n"
    "                                                  check a branch (or only PREFIXes) out\n"
    "       cairn repo status [DIR]                    added, modified, deleted files\n"
    "       cairn repo submit [DIR] -m MESSAGE         submit DIR's changes atomically\n"
    "       cairn repo sync [DIR] [--change N] [--path PREFIX]...\n"
    "                                                  bring DIR to the head (or change N);\n"
    "                                                  --path adds prefixes to a sparse DIR\n"
    "       cairn repo log [DIR] [PATH] [-n N]         history, newest first\n"
    "       cairn repo describe [DIR] CHANGE -m TEXT   revise a change's description\n"
    "options: --endpoint HOST:PORT (CAIRN_SCRIBE_ENDPOINT, default 127.0.0.1:7447)\n"
    "         --lz4 (LZ4 transfers)  --author NAME (default $USER)  --quiet\n"
    "         --conns N (data connections for transfers, 0..4, default 4)\n"
    "exit: 0 ok, 1 server error, 2 usage, 3 not found, 5 network, 6 conflict,\n"
    "      7 local file error, 8 checksum mismatch (docs/cli.md)\n";

#define CN_WS_PATHS_MAX 64
#define CN_WS_READ_MAX (64 << 10)       /* files up to this are read, larger ones mapped */
#define CN_WS_TMP_PREFIX ".cairn-tmp-"  /* a file being fetched, beside its target */

typedef struct ropts {
    const char *endpoint, *message, *author;
    bool lz4, lz4_storage, quiet;
    int conns;                  /* data connections: 0 = 4, -1 = none */
    bool has_change;
    uint64_t change;
    uint32_t limit;
    const char *paths[CN_WS_PATHS_MAX];     /* --path PREFIX (sparse workspaces) */
    int npaths;
    const char *pos[3];
    int npos;
} ropts_t;

static int exit_for(cn_err_t e)
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

static int fail(const char *what, cn_err_t e, const cn_scribe_cerr_t *err)
{
    fprintf(stderr, "cairn repo: %s: %s\n", what,
            err && err->message[0] ? err->message : cn_strerror(e));
    return exit_for(e);
}

static int local_fail(const char *what, const char *path, int e)
{
    fprintf(stderr, "cairn repo: %s %s: %s\n", what, path, strerror(e));
    return EXIT_LOCAL;
}

static void hex(const void *p, size_t n, char *out) { cn_hex_encode(p, n, out); out[2 * n] = 0; }

static cn_err_t connect_to(const ropts_t *o, cn_scribe_client_t **cl, cn_scribe_cerr_t *err)
{
    cn_scribe_client_cfg_t cfg = {o->endpoint, 1, o->lz4, 0, 0, o->conns, 0};
    return cn_scribe_client_new(&cfg, cl, err);
}

/* ---- workspace state ------------------------------------------------------------------ */
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

/* Whether path is inside the workspace's prefixes. */
static bool in_scope(const wstate_t *s, const char *path)
{
    if (!s->npaths)
        return true;
    for (size_t i = 0; i < s->npaths; i++) {
        size_t n = strlen(s->paths[i]);
        if (!strncmp(path, s->paths[i], n) && (path[n] == 0 || path[n] == '/'))
            return true;
    }
    return false;
}

/* Adds a prefix (canonical, without a trailing '/'); a prefix already
 * covered is not added twice.  EXIT_USAGE for a bad one. */
static int scope_add(wstate_t *s, const char *prefix)
{
    char p[8200];
    snprintf(p, sizeof p, "%s", prefix);
    size_t n = strlen(p);
    while (n && p[n - 1] == '/')
        p[--n] = 0;
    if (!n || cn_repos_path_check((const uint8_t *)p, n) < 0) {
        fprintf(stderr, "cairn repo: --path %s is not a canonical repository path\n", prefix);
        return EXIT_USAGE;
    }
    if (s->npaths && in_scope(s, p))
        return EXIT_OK;
    if (s->npaths == CN_WS_PATHS_MAX) {
        fprintf(stderr, "cairn repo: at most %d --path prefixes\n", CN_WS_PATHS_MAX);
        return EXIT_USAGE;
    }
    if (!(s->paths[s->npaths] = strdup(p)))
        return local_fail("out of memory for", prefix, ENOMEM);
    s->npaths++;
    return EXIT_OK;
}

static void files_free(wstate_t *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->files[i].path);
    free(s->files);
    s->files = NULL;
    s->n = s->cap = 0;
}

static void state_free(wstate_t *s)
{
    for (size_t i = 0; i < s->npaths; i++)
        free(s->paths[i]);
    s->npaths = 0;
    files_free(s);
}

static wfile_t *state_add(wstate_t *s, const char *path)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        wfile_t *f = realloc(s->files, cap * sizeof *f);
        if (!f)
            return NULL;
        s->files = f;
        s->cap = cap;
    }
    wfile_t *f = &s->files[s->n];
    memset(f, 0, sizeof *f);
    if (!(f->path = strdup(path)))
        return NULL;
    s->n++;
    return f;
}

static int by_path(const void *a, const void *b)
{
    return strcmp(((const wfile_t *)a)->path, ((const wfile_t *)b)->path);
}

static wfile_t *state_find(wstate_t *s, const char *path)
{
    wfile_t key;
    key.path = (char *)path;
    return bsearch(&key, s->files, s->n, sizeof *s->files, by_path);
}

static bool parse_hex(const char *h, void *out, size_t n)
{
    return strlen(h) == 2 * n && cn_hex_decode(h, 2 * n, out, n) >= 0;
}

static int state_load(const char *dir, wstate_t *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    char path[4200];
    snprintf(path, sizeof path, "%s/.cairn/state", dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "cairn repo: %s is not a workspace (no .cairn/state)\n", dir);
        return EXIT_LOCAL;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int rc = EXIT_OK;
    while ((len = getline(&line, &cap, f)) > 0) {
        if (line[len - 1] == '\n')
            line[--len] = 0;
        char k[32], v[300];
        if (!strncmp(line, "file ", 5)) {
            unsigned mode;
            uint64_t size;
            int64_t mt;
            char mh[65];
            int off = 0;
            char *tab = strchr(line, '\t');
            if (!tab || sscanf(line, "file %u %" SCNu64 " %" SCNd64 " %64s%n", &mode, &size, &mt,
                               mh, &off) != 4) {
                rc = EXIT_LOCAL;
                break;
            }
            wfile_t *w = state_add(s, tab + 1);
            if (!w || !parse_hex(mh, w->manifest.b, 32)) {
                rc = EXIT_LOCAL;
                break;
            }
            w->mode = (uint8_t)mode;
            w->size = size;
            w->mtime_ns = mt;
            continue;
        }
        if (!strncmp(line, "path ", 5)) {
            if (s->npaths == CN_WS_PATHS_MAX || !(s->paths[s->npaths] = strdup(line + 5))) {
                rc = EXIT_LOCAL;
                break;
            }
            s->npaths++;
            continue;
        }
        if (sscanf(line, "%31s %299s", k, v) != 2)
            continue;
        if (!strcmp(k, "endpoint"))
            snprintf(s->endpoint, sizeof s->endpoint, "%s", v);
        else if (!strcmp(k, "repo"))
            snprintf(s->repo, sizeof s->repo, "%s", v);
        else if (!strcmp(k, "repo_id"))
            rc = parse_hex(v, s->repo_id, 16) ? rc : EXIT_LOCAL;
        else if (!strcmp(k, "branch"))
            rc = parse_hex(v, s->branch, 16) ? rc : EXIT_LOCAL;
        else if (!strcmp(k, "incarnation"))
            rc = parse_hex(v, s->incarnation, 16) ? rc : EXIT_LOCAL;
        else if (!strcmp(k, "workspace"))
            rc = parse_hex(v, s->workspace, 16) ? rc : EXIT_LOCAL;
        else if (!strcmp(k, "pending"))
            s->has_pending = parse_hex(v, s->pending, 16);
        else if (!strcmp(k, "change"))
            s->change = strtoull(v, NULL, 10);
    }
    free(line);
    fclose(f);
    if (rc)
        fprintf(stderr, "cairn repo: %s is damaged\n", path);
    qsort(s->files, s->n, sizeof *s->files, by_path);
    return rc;
}

/* Writes the state atomically: a temporary file, fsync, rename, dir fsync. */
static int state_save(const wstate_t *s)
{
    char dir[4200], tmp[4300], path[4300];
    snprintf(dir, sizeof dir, "%s/.cairn", s->dir);
    snprintf(tmp, sizeof tmp, "%s/state.tmp", dir);
    snprintf(path, sizeof path, "%s/state", dir);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return local_fail("cannot write", tmp, errno);
    char h[65];
    fprintf(f, "cairn-workspace 1\nendpoint %s\nrepo %s\n", s->endpoint, s->repo);
    hex(s->repo_id, 16, h);
    fprintf(f, "repo_id %s\n", h);
    hex(s->branch, 16, h);
    fprintf(f, "branch %s\n", h);
    hex(s->incarnation, 16, h);
    fprintf(f, "incarnation %s\n", h);
    hex(s->workspace, 16, h);
    fprintf(f, "workspace %s\n", h);
    fprintf(f, "change %" PRIu64 "\n", s->change);
    if (s->has_pending) {
        hex(s->pending, 16, h);
        fprintf(f, "pending %s\n", h);
    }
    for (size_t i = 0; i < s->npaths; i++)
        fprintf(f, "path %s\n", s->paths[i]);
    for (size_t i = 0; i < s->n; i++) {
        if (s->files[i].mtime_ns == -2)
            continue;           /* found by a scan, not recorded by a submit yet */
        hex(s->files[i].manifest.b, 32, h);
        fprintf(f, "file %u %" PRIu64 " %" PRId64 " %s\t%s\n", s->files[i].mode, s->files[i].size,
                s->files[i].mtime_ns, h, s->files[i].path);
    }
    bool ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) < 0)
        return local_fail("cannot write", path, errno);
    cn_fsync_dir(dir);
    return EXIT_OK;
}

/* ---- scanning the working directory ----------------------------------------------------- */
typedef struct scan {
    char **paths;
    struct stat *st;
    size_t n, cap;
} scan_t;

static void scan_free(scan_t *sc)
{
    for (size_t i = 0; i < sc->n; i++)
        free(sc->paths[i]);
    free(sc->paths);
    free(sc->st);
}

static int scan_dir(const char *root, const char *rel, scan_t *sc)
{
    char full[8600];
    snprintf(full, sizeof full, "%s%s%s", root, *rel ? "/" : "", rel);
    DIR *d = opendir(full);
    if (!d)
        return local_fail("cannot read", full, errno);
    struct dirent *de;
    int rc = EXIT_OK;
    while (rc == EXIT_OK && (de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (!*rel && !strcmp(de->d_name, ".cairn"))
            continue;
        if (!strncmp(de->d_name, CN_WS_TMP_PREFIX, sizeof CN_WS_TMP_PREFIX - 1))
            continue;           /* a fetch's temporary file (job_open) */
        char child[8600], cfull[17300];
        snprintf(child, sizeof child, "%s%s%s", rel, *rel ? "/" : "", de->d_name);
        snprintf(cfull, sizeof cfull, "%s/%s", root, child);
        struct stat st;
        if (lstat(cfull, &st) < 0) {
            rc = local_fail("cannot stat", cfull, errno);
            break;
        }
        if (S_ISDIR(st.st_mode)) {
            rc = scan_dir(root, child, sc);
            continue;
        }
        if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
            continue;
        if (cn_repos_path_check((const uint8_t *)child, strlen(child)) < 0) {
            fprintf(stderr, "cairn repo: skipping %s: not a canonical repository path\n", child);
            continue;
        }
        if (sc->n == sc->cap) {
            size_t cap = sc->cap ? sc->cap * 2 : 256;
            char **p = realloc(sc->paths, cap * sizeof *p);
            struct stat *s2 = p ? realloc(sc->st, cap * sizeof *s2) : NULL;
            if (p)
                sc->paths = p;
            if (!s2) {
                rc = local_fail("out of memory scanning", full, ENOMEM);
                break;
            }
            sc->st = s2;
            sc->cap = cap;
        }
        sc->paths[sc->n] = strdup(child);
        sc->st[sc->n] = st;
        sc->n++;
    }
    closedir(d);
    return rc;
}

static int64_t mtime_ns(const struct stat *st)
{
    return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

static uint8_t mode_of(const struct stat *st)
{
    if (S_ISLNK(st->st_mode))
        return CN_REPOS_MODE_SYMLINK;
    return (st->st_mode & 0100) ? CN_REPOS_MODE_EXEC : CN_REPOS_MODE_FILE;
}

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

static void content_free(fcontent_t *c)
{
    if (c->mapped && c->len)
        munmap(c->map, c->len);
    else
        free(c->map);
    free(c->chunks);
    free(c->offs);
    cn_buf_free(&c->manifest);
    memset(c, 0, sizeof *c);
}

static int content_load(const char *root, const char *rel, const struct stat *st, fcontent_t *c)
{
    memset(c, 0, sizeof *c);
    char full[8600];
    snprintf(full, sizeof full, "%s/%s", root, rel);
    if (S_ISLNK(st->st_mode)) {
        c->map = malloc(4097);
        ssize_t n = c->map ? readlink(full, (char *)c->map, 4096) : -1;
        if (n < 0)
            return local_fail("cannot read link", full, errno);
        c->len = (size_t)n;
    } else if (st->st_size > 0 && st->st_size <= CN_WS_READ_MAX) {
        /* small files are read: a submit of 100,000 files must not hold
         * 100,000 mappings (vm.max_map_count) */
        int fd = open(full, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return local_fail("cannot open", full, errno);
        c->map = malloc((size_t)st->st_size);
        long long n = c->map ? cn_read_full(fd, c->map, (size_t)st->st_size) : -1;
        int saved = c->map ? errno : ENOMEM;
        close(fd);
        if (n != (long long)st->st_size)
            return local_fail("cannot read", full, n < 0 ? saved : EAGAIN);
        c->len = (size_t)n;
    } else if (st->st_size > 0) {
        int fd = open(full, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return local_fail("cannot open", full, errno);
        void *p = mmap(NULL, (size_t)st->st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        int saved = errno;
        close(fd);
        if (p == MAP_FAILED)
            return local_fail("cannot map", full, saved);
        c->map = p;
        c->len = (size_t)st->st_size;
        c->mapped = true;
    }
    size_t cap = c->len / CN_SCRIBE_CDC_MIN + 2;
    c->chunks = malloc(cap * sizeof *c->chunks);
    c->offs = malloc(cap * sizeof *c->offs);
    if (!c->chunks || !c->offs)
        return local_fail("out of memory chunking", full, ENOMEM);
    for (size_t off = 0; off < c->len;) {
        size_t n = cn_scribe_cdc_cut(c->map + off, c->len - off);
        cn_blake3(c->map + off, n, &c->chunks[c->nchunks].id);
        c->chunks[c->nchunks].len = (uint32_t)n;
        c->offs[c->nchunks] = off;
        c->nchunks++;
        off += n;
    }
    if (cn_repos_manifest_encode(&c->manifest, c->chunks, c->nchunks) < 0)
        return local_fail("cannot describe", full, EFBIG);
    cn_repos_object_id(CN_REPOS_MANIFEST, c->manifest.data, c->manifest.len, &c->mid);
    return EXIT_OK;
}

/* ---- fetching files -----------------------------------------------------------------------
 * Every file to fetch is one job.  Their manifests come in one get_objects
 * stream, then all their chunks in file order in another, each written to a
 * temporary file that is renamed into place when its last chunk arrived and
 * checked against its id.  One syncfs at the end makes the batch durable
 * before the state names it. */
typedef struct job {
    wfile_t *w;                 /* the target record (manifest, mode already set) */
    cn_buf_t menc;
    cn_repos_manifest_t m;
    uint32_t remaining;         /* chunks not yet written */
    bool created;               /* the temporary file exists */
    char tmp[4300];
} job_t;

/* One lane's position: the file it writes and the chunk it hashes. */
typedef struct lane_state {
    int fd;
    size_t job;
    uint64_t pos;               /* bytes of the current chunk so far */
    cn_blake3_t h;
    uint64_t bytes;
} lane_state_t;

typedef struct fetch_ctx {
    wstate_t *s;
    job_t *jobs;
    size_t *job_of;             /* chunk ref index -> job */
    uint32_t *chunk_of;         /* chunk ref index -> chunk index in its manifest */
    uint64_t *off_of;           /* chunk ref index -> offset in its file */
    lane_state_t lanes[1 + CN_SCRIBE_CLIENT_MAX_DATA];
    pthread_mutex_t mu;         /* jobs' created, rc, bad (remaining is atomic) */
    int pid;                    /* names the temporary files */
    bool bad;
    int rc;
} fetch_ctx_t;

static cn_err_t manifest_sink(void *ctx, size_t i, bool present, const void *p, size_t n, bool last)
{
    (void)last;
    fetch_ctx_t *f = ctx;
    if (!present)
        return CN_E_NOT_FOUND;
    return cn_buf_append(&f->jobs[i].menc, p, n);
}

/* Creates the parent directories of full (a path under s->dir). */
static void make_parents(const wstate_t *s, char *full)
{
    for (char *p = strchr(full + strlen(s->dir) + 1, '/'); p; p = strchr(p + 1, '/')) {
        *p = 0;
        mkdir(full, 0755);
        *p = '/';
    }
}

/* Renames a finished temporary file into place and records it; fd, when
 * not -1, is open on the temporary file and gives its mtime (rename keeps
 * it). */
static int job_finish(wstate_t *s, job_t *j, int fd)
{
    char full[8600];
    snprintf(full, sizeof full, "%s/%s", s->dir, j->w->path);
    struct stat st;
    if (j->w->mode == CN_REPOS_MODE_SYMLINK) {
        /* the manifest holds the link target */
        char target[4097];
        int tfd = open(j->tmp, O_RDONLY | O_CLOEXEC);
        long long n = tfd >= 0 ? cn_read_full(tfd, target, sizeof target - 1) : -1;
        if (tfd >= 0)
            close(tfd);
        unlink(j->tmp);
        make_parents(s, full);
        unlink(full);
        if (n < 0 || (target[n] = 0, symlink(target, full) < 0))
            return local_fail("cannot create link", full, errno);
        fd = -1;
    } else if (fd >= 0 && fstat(fd, &st) < 0) {
        return local_fail("cannot stat", j->tmp, errno);
    } else if (rename(j->tmp, full) < 0) {
        int e = errno;
        unlink(j->tmp);
        return local_fail("cannot rename into", full, e);
    }
    if (fd < 0 && lstat(full, &st) < 0)
        return local_fail("cannot stat", full, errno);
    j->w->size = j->m.size;
    j->w->mtime_ns = mtime_ns(&st);
    return EXIT_OK;
}

/* Opens job k's temporary file for writing (the first opener creates it).
 * It lives beside its target, so the final rename stays in one directory
 * (a rename across directories takes the file system's rename lock);
 * scans skip the CN_WS_TMP_PREFIX names a crash may leave. */
static int job_open(fetch_ctx_t *f, size_t k, int *fd)
{
    job_t *j = &f->jobs[k];
    pthread_mutex_lock(&f->mu);
    if (!j->created) {
        const char *slash = strrchr(j->w->path, '/');
        int dl = slash ? (int)(slash - j->w->path) : 0;
        snprintf(j->tmp, sizeof j->tmp, "%s/%.*s%s" CN_WS_TMP_PREFIX "%d-%zu", f->s->dir, dl,
                 j->w->path, slash ? "/" : "", f->pid, k);
    }
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (j->created ? 0 : O_TRUNC);
    mode_t mode = j->w->mode == CN_REPOS_MODE_EXEC ? 0755 : 0644;
    *fd = open(j->tmp, flags, mode);
    if (*fd < 0 && errno == ENOENT) {
        make_parents(f->s, j->tmp);
        *fd = open(j->tmp, flags, mode);
    }
    int e = errno;
    if (*fd >= 0)
        j->created = true;
    pthread_mutex_unlock(&f->mu);
    return *fd < 0 ? local_fail("cannot create", j->tmp, e) : EXIT_OK;
}

static void lane_close(lane_state_t *l)
{
    if (l->fd >= 0)
        close(l->fd);
    l->fd = -1;
}

/* Chunks arrive on up to five lanes at once; each writes its pieces at
 * their offsets, hashes the chunk it is on, and the lane that writes a
 * file's last missing chunk renames it into place. */
static cn_err_t chunk_sink(void *ctx, unsigned lane, size_t i, bool present, const void *p,
                           size_t n, bool last)
{
    fetch_ctx_t *f = ctx;
    lane_state_t *l = &f->lanes[lane];
    if (!present)
        return CN_E_NOT_FOUND;
    size_t k = f->job_of[i];
    job_t *j = &f->jobs[k];
    if (l->fd < 0 || l->job != k) {
        lane_close(l);
        int rc = job_open(f, k, &l->fd);
        if (rc) {
            pthread_mutex_lock(&f->mu);
            f->rc = rc;
            pthread_mutex_unlock(&f->mu);
            return CN_E_CLOSED;
        }
        l->job = k;
    }
    if (n) {
        cn_blake3_update(&l->h, p, n);
        const uint8_t *b = p;
        for (size_t done = 0; done < n;) {
            ssize_t w = pwrite(l->fd, b + done, n - done, (off_t)(f->off_of[i] + l->pos + done));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                int rc = local_fail("cannot write", j->tmp, w < 0 ? errno : ENOSPC);
                pthread_mutex_lock(&f->mu);
                f->rc = rc;
                pthread_mutex_unlock(&f->mu);
                return CN_E_CLOSED;
            }
            done += (size_t)w;
        }
        l->pos += n;
        l->bytes += n;
    }
    if (!last)
        return CN_OK;
    cn_digest_t got;
    cn_repos_chunk_ref_t ref;
    cn_blake3_final(&l->h, &got);
    cn_blake3_init(&l->h);
    l->pos = 0;
    cn_repos_manifest_chunk(&j->m, f->chunk_of[i], &ref);
    if (memcmp(got.b, ref.id.b, 32) != 0) {
        pthread_mutex_lock(&f->mu);
        f->bad = true;
        pthread_mutex_unlock(&f->mu);
        return CN_E_DIGEST_MISMATCH;
    }
    bool done = __atomic_sub_fetch(&j->remaining, 1, __ATOMIC_ACQ_REL) == 0;
    if (done) {
        int rc = job_finish(f->s, j, l->fd);
        lane_close(l);
        if (rc) {
            pthread_mutex_lock(&f->mu);
            f->rc = rc;
            pthread_mutex_unlock(&f->mu);
            return CN_E_CLOSED;
        }
    }
    return CN_OK;
}

/* A progress bar on stderr while a transfer runs (a terminal only). */
typedef struct progress {
    const char *what;
    uint64_t total, done;
    int64_t last_ms;
    bool on;
} progress_t;

static void progress_draw(progress_t *pg, bool final)
{
    int64_t now = cn_mono_ms();
    if (!pg->on || (!final && now - pg->last_ms < 100))
        return;
    pg->last_ms = now;
    unsigned pct = pg->total ? (unsigned)(pg->done * 100 / pg->total) : 100;
    if (pct > 100)
        pct = 100;
    char bar[31];
    memset(bar, '#', pct * 30 / 100);
    memset(bar + pct * 30 / 100, '.', 30 - pct * 30 / 100);
    bar[30] = 0;
    fprintf(stderr, "\r%s [%s] %3u%% %" PRIu64 "/%" PRIu64 " MiB%s", pg->what, bar, pct,
            pg->done >> 20, pg->total >> 20, final ? "\n" : "");
    fflush(stderr);
}

static void progress_cb(void *ctx, uint64_t bytes)
{
    progress_t *pg = ctx;
    pg->done += bytes;
    progress_draw(pg, false);
}

static void progress_start(progress_t *pg, cn_scribe_client_t *cl, const char *what,
                           uint64_t total, bool quiet)
{
    memset(pg, 0, sizeof *pg);
    pg->what = what;
    pg->total = total;
    pg->on = !quiet && total >= (8u << 20) && isatty(2);
    if (pg->on)
        cn_scribe_client_set_progress(cl, progress_cb, pg);
}

static void progress_end(progress_t *pg, cn_scribe_client_t *cl)
{
    if (!pg->on)
        return;
    cn_scribe_client_set_progress(cl, NULL, NULL);
    progress_draw(pg, true);
}

static int fetch_all(cn_scribe_client_t *cl, wstate_t *s, job_t *jobs, size_t nj, uint64_t *bytes,
                     bool quiet)
{
    cn_scribe_cerr_t err;
    memset(&err, 0, sizeof err);
    fetch_ctx_t f;
    memset(&f, 0, sizeof f);
    f.s = s;
    f.jobs = jobs;
    f.pid = (int)getpid();
    pthread_mutex_init(&f.mu, NULL);
    for (size_t k = 0; k <= CN_SCRIBE_CLIENT_MAX_DATA; k++) {
        f.lanes[k].fd = -1;
        cn_blake3_init(&f.lanes[k].h);
    }
    int rc = EXIT_OK;
    cn_scribe_client_ref_t *refs = malloc((nj ? nj : 1) * sizeof *refs);
    if (!refs) {
        pthread_mutex_destroy(&f.mu);
        return local_fail("out of memory fetching", s->dir, ENOMEM);
    }
    for (size_t k = 0; k < nj; k++)
        refs[k] = (cn_scribe_client_ref_t){CN_REPOS_MANIFEST, jobs[k].w->manifest};
    cn_err_t e = nj ? cn_scribe_client_get(cl, s->repo_id, refs, nj, manifest_sink, &f, &err) : 0;
    free(refs);
    refs = NULL;
    if (e < 0) {
        pthread_mutex_destroy(&f.mu);
        return fail("fetching manifests", e, &err);
    }
    size_t total = 0;
    uint64_t total_bytes = 0;
    for (size_t k = 0; k < nj; k++) {
        cn_digest_t got;
        cn_repos_object_id(CN_REPOS_MANIFEST, jobs[k].menc.data, jobs[k].menc.len, &got);
        if (memcmp(got.b, jobs[k].w->manifest.b, 32) != 0 ||
            cn_repos_manifest_parse(jobs[k].menc.data, jobs[k].menc.len, &jobs[k].m) < 0) {
            fprintf(stderr, "cairn repo: the manifest of %s does not match its id\n",
                    jobs[k].w->path);
            pthread_mutex_destroy(&f.mu);
            return EXIT_INTEGRITY;
        }
        total += jobs[k].m.count;
        total_bytes += jobs[k].m.size;
    }
    refs = malloc((total ? total : 1) * sizeof *refs);
    f.job_of = malloc((total ? total : 1) * sizeof *f.job_of);
    f.chunk_of = malloc((total ? total : 1) * sizeof *f.chunk_of);
    f.off_of = malloc((total ? total : 1) * sizeof *f.off_of);
    if (!refs || !f.job_of || !f.chunk_of || !f.off_of) {
        rc = local_fail("out of memory fetching", s->dir, ENOMEM);
        goto out;
    }
    size_t at = 0;
    for (size_t k = 0; k < nj && rc == EXIT_OK; k++) {
        jobs[k].remaining = jobs[k].m.count;
        if (!jobs[k].m.count) {         /* an empty file has no chunks */
            int fd;
            if ((rc = job_open(&f, k, &fd)) == EXIT_OK) {
                rc = job_finish(s, &jobs[k], fd);
                close(fd);
            }
            continue;
        }
        uint64_t off = 0;
        for (uint32_t c = 0; c < jobs[k].m.count; c++, at++) {
            cn_repos_chunk_ref_t ref;
            cn_repos_manifest_chunk(&jobs[k].m, c, &ref);
            refs[at] = (cn_scribe_client_ref_t){CN_REPOS_CHUNK, ref.id};
            f.job_of[at] = k;
            f.chunk_of[at] = c;
            f.off_of[at] = off;
            off += ref.len;
        }
    }
    if (rc)
        goto out;
    progress_t pg;
    progress_start(&pg, cl, "fetching", total_bytes, quiet);
    e = total ? cn_scribe_client_get_lanes(cl, s->repo_id, refs, total, chunk_sink, &f, &err) : 0;
    progress_end(&pg, cl);
    if (f.rc) {
        rc = f.rc;
    } else if (f.bad) {
        fprintf(stderr, "cairn repo: a fetched chunk does not match its id\n");
        rc = EXIT_INTEGRITY;
    } else if (e < 0) {
        rc = fail("fetching chunks", e, &err);
    } else {
        /* one flush for the whole batch before the state names it */
        int dfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            syncfs(dfd);
            close(dfd);
        }
        for (size_t k = 0; k <= CN_SCRIBE_CLIENT_MAX_DATA; k++)
            *bytes += f.lanes[k].bytes;
    }
out:
    for (size_t k = 0; k <= CN_SCRIBE_CLIENT_MAX_DATA; k++)
        lane_close(&f.lanes[k]);
    for (size_t k = 0; k < nj; k++)
        if (jobs[k].created && jobs[k].remaining)
            unlink(jobs[k].tmp);
    free(refs);
    free(f.job_of);
    free(f.chunk_of);
    free(f.off_of);
    pthread_mutex_destroy(&f.mu);
    return rc;
}

/* ---- commands -------------------------------------------------------------------------------- */
static int print_repo(void *ctx, const cn_scribe_client_repo_t *r)
{
    (void)ctx;
    char id[33];
    hex(r->id, 16, id);
    printf("%s\thead %" PRIu64 "\t%s\n", r->name, r->head, id);
    return 0;
}

static int cmd_create(const ropts_t *o)
{
    if (o->npos != 1) {
        fputs(repo_usage, stderr);
        return EXIT_USAGE;
    }
    cn_scribe_client_t *cl = NULL;
    cn_scribe_cerr_t err;
    cn_err_t e = connect_to(o, &cl, &err);
    if (e < 0)
        return fail("connect", e, &err);
    cn_scribe_client_repo_t r;
    e = cn_scribe_client_repo_create(cl, o->pos[0], o->lz4_storage ? 1 : 0, &r, &err);
    cn_scribe_client_free(cl);
    if (e < 0)
        return fail(o->pos[0], e, &err);
    if (!o->quiet)
        print_repo(NULL, &r);
    return EXIT_OK;
}

static int cmd_list_info(const ropts_t *o, bool info)
{
    if (o->npos != (info ? 1 : 0)) {
        fputs(repo_usage, stderr);
        return EXIT_USAGE;
    }
    cn_scribe_client_t *cl = NULL;
    cn_scribe_cerr_t err;
    cn_err_t e = connect_to(o, &cl, &err);
    if (e < 0)
        return fail("connect", e, &err);
    if (info) {
        cn_scribe_client_repo_t r;
        e = cn_scribe_client_repo_info(cl, o->pos[0], &r, &err);
        if (e >= 0) {
            char id[33], br[33], inc[33];
            hex(r.id, 16, id);
            hex(r.main_branch, 16, br);
            hex(r.incarnation, 16, inc);
            printf("name %s\nid %s\nmain %s\nhead %" PRIu64 "\nincarnation %s\n"
                   "storage %s\n", r.name, id, br, r.head, inc, r.compression ? "lz4" : "raw");
        }
    } else {
        e = cn_scribe_client_repo_list(cl, print_repo, NULL, &err);
    }
    cn_scribe_client_free(cl);
    return e < 0 ? fail(info ? o->pos[0] : "list", e, &err) : EXIT_OK;
}

/* Brings the workspace to change `target`: fetches every file whose manifest
 * or mode differs, removes files the snapshot does not hold.  Local edits
 * to files the sync touches are overwritten only when unchanged since the
 * last sync; otherwise the sync stops with a conflict. */
typedef struct tree_acc { wstate_t *next; } tree_acc_t;

static int tree_row(void *ctx, const cn_scribe_client_entry_t *e)
{
    tree_acc_t *a = ctx;
    wfile_t *w = state_add(a->next, e->path);
    if (!w)
        return -ENOMEM;
    w->manifest = e->manifest;
    w->mode = e->mode;
    w->size = e->size;
    w->mtime_ns = -1;       /* not on disk yet */
    return 0;
}

static int sync_to(cn_scribe_client_t *cl, wstate_t *s, uint64_t target, bool quiet)
{
    cn_scribe_cerr_t err;
    memset(&err, 0, sizeof err);
    wstate_t next;
    memset(&next, 0, sizeof next);
    tree_acc_t a = {&next};
    cn_err_t e = CN_OK;
    for (size_t p = 0; p < (s->npaths ? s->npaths : 1) && e >= 0; p++)
        e = cn_scribe_client_tree(cl, s->repo_id, s->branch, target,
                                  s->npaths ? s->paths[p] : "", tree_row, &a, NULL, NULL, &err);
    if (e < 0) {
        state_free(&next);
        return fail("reading the tree", e, &err);
    }
    qsort(next.files, next.n, sizeof *next.files, by_path);
    int rc = EXIT_OK;
    uint64_t bytes = 0, fetched = 0, removed = 0;
    job_t *jobs = calloc(next.n ? next.n : 1, sizeof *jobs);
    size_t nj = 0;
    if (!jobs)
        rc = local_fail("out of memory for", s->dir, ENOMEM);
    for (size_t i = 0; i < next.n && rc == EXIT_OK; i++) {
        wfile_t *w = &next.files[i], *old = state_find(s, w->path);
        char full[8600];
        snprintf(full, sizeof full, "%s/%s", s->dir, w->path);
        struct stat st;
        bool exists = lstat(full, &st) == 0;
        if (old && exists && !memcmp(old->manifest.b, w->manifest.b, 32) && old->mode == w->mode) {
            w->mtime_ns = old->mtime_ns;
            continue;
        }
        if (exists && (!old || old->mtime_ns != mtime_ns(&st) || old->size != (uint64_t)st.st_size)) {
            fprintf(stderr, "cairn repo: %s has local changes; submit or remove them first\n",
                    w->path);
            rc = EXIT_CONFLICT;
            break;
        }
        jobs[nj].w = w;
        nj++;
    }
    if (rc == EXIT_OK)
        rc = fetch_all(cl, s, jobs, nj, &bytes, quiet);
    fetched = nj;
    for (size_t k = 0; jobs && k < nj; k++)
        cn_buf_free(&jobs[k].menc);
    free(jobs);
    for (size_t i = 0; i < s->n && rc == EXIT_OK; i++) {
        if (state_find(&next, s->files[i].path))
            continue;
        char full[8600];
        snprintf(full, sizeof full, "%s/%s", s->dir, s->files[i].path);
        struct stat st;
        if (lstat(full, &st) == 0 && mtime_ns(&st) == s->files[i].mtime_ns)
            unlink(full);
        removed++;
    }
    if (rc == EXIT_OK) {
        files_free(s);
        s->files = next.files;
        s->n = next.n;
        s->cap = next.cap;
        s->change = target;
        rc = state_save(s);
        if (!quiet && rc == EXIT_OK)
            printf("at change %" PRIu64 ": %" PRIu64 " file(s) fetched (%" PRIu64
                   " bytes), %" PRIu64 " removed\n", target, fetched, bytes, removed);
    } else {
        state_free(&next);
    }
    return rc;
}

static int cmd_clone(const ropts_t *o)
{
    if (o->npos != 2) {
        fputs(repo_usage, stderr);
        return EXIT_USAGE;
    }
    const char *name = o->pos[0], *dir = o->pos[1];
    cn_scribe_client_t *cl = NULL;
    cn_scribe_cerr_t err;
    cn_err_t e = connect_to(o, &cl, &err);
    if (e < 0)
        return fail("connect", e, &err);
    cn_scribe_client_repo_t r;
    if ((e = cn_scribe_client_repo_info(cl, name, &r, &err)) < 0) {
        cn_scribe_client_free(cl);
        return fail(name, e, &err);
    }
    char cdir[4200];
    snprintf(cdir, sizeof cdir, "%s/.cairn", dir);
    if (cn_mkdir_p(dir, 0755) < 0 || mkdir(cdir, 0700) < 0) {
        cn_scribe_client_free(cl);
        return local_fail("cannot create", errno == EEXIST ? cdir : dir, errno ? errno : EEXIST);
    }
    wstate_t s;
    memset(&s, 0, sizeof s);
    snprintf(s.dir, sizeof s.dir, "%s", dir);
    snprintf(s.endpoint, sizeof s.endpoint, "%s",
             o->endpoint ? o->endpoint : CN_SCRIBE_CLIENT_DEFAULT_ENDPOINT);
    snprintf(s.repo, sizeof s.repo, "%s", name);
    memcpy(s.repo_id, r.id, 16);
    memcpy(s.branch, r.main_branch, 16);
    memcpy(s.incarnation, r.incarnation, 16);
    cn_random_bytes(s.workspace, 16);
    int rc = EXIT_OK;
    for (int i = 0; i < o->npaths && rc == EXIT_OK; i++)
        rc = scope_add(&s, o->paths[i]);
    if (rc == EXIT_OK)
        rc = state_save(&s);
    if (rc == EXIT_OK)
        rc = sync_to(cl, &s, o->has_change ? o->change : r.head, o->quiet);
    state_free(&s);
    cn_scribe_client_free(cl);
    return rc;
}

/* Compares the directory with the state; rehashes only files whose size or
 * mtime changed.  Fills changed/on_disk of state files and appends new ones
 * (marked with mtime_ns -2) to s. */
static int diff_workspace(wstate_t *s, scan_t *sc)
{
    memset(sc, 0, sizeof *sc);
    int rc = scan_dir(s->dir, "", sc);
    if (rc)
        return rc;
    size_t known = s->n;
    for (size_t i = 0; i < sc->n && rc == EXIT_OK; i++) {
        if (!in_scope(s, sc->paths[i]))
            continue;           /* outside a sparse workspace's prefixes */
        wfile_t *w = NULL;
        wfile_t key;
        key.path = sc->paths[i];
        w = bsearch(&key, s->files, known, sizeof *s->files, by_path);
        if (!w) {
            if (!(w = state_add(s, sc->paths[i])))
                return local_fail("out of memory for", sc->paths[i], ENOMEM);
            w->mtime_ns = -2;
            w->changed = true;
        }
        w->on_disk = true;
        w->disk_mode = mode_of(&sc->st[i]);
        w->disk_size = (uint64_t)sc->st[i].st_size;
        w->disk_mtime = mtime_ns(&sc->st[i]);
        if (w->mtime_ns == -2)
            continue;
        if (w->disk_size == w->size && w->disk_mtime == w->mtime_ns && w->disk_mode == w->mode)
            continue;
        /* size or mtime differ: the content decides */
        fcontent_t c;
        if ((rc = content_load(s->dir, w->path, &sc->st[i], &c)) == EXIT_OK) {
            w->changed = memcmp(c.mid.b, w->manifest.b, 32) != 0 || w->disk_mode != w->mode;
            if (!w->changed)
                w->mtime_ns = w->disk_mtime;
        }
        content_free(&c);
    }
    return rc;
}

static int cmd_status(const ropts_t *o)
{
    wstate_t s;
    int rc = state_load(o->npos ? o->pos[0] : ".", &s);
    scan_t sc = {0};
    if (rc == EXIT_OK)
        rc = diff_workspace(&s, &sc);
    if (rc == EXIT_OK) {
        qsort(s.files, s.n, sizeof *s.files, by_path);
        size_t n = 0;
        for (size_t i = 0; i < s.n; i++) {
            const wfile_t *w = &s.files[i];
            char c = !w->on_disk ? 'D' : w->mtime_ns == -2 ? 'A' : w->changed ? 'M' : 0;
            if (c) {
                printf("%c %s\n", c, w->path);
                n++;
            }
        }
        if (!n && !o->quiet)
            printf("clean at change %" PRIu64 "\n", s.change);
    }
    scan_free(&sc);
    state_free(&s);
    return rc;
}

static int ref_cmp(const void *a, const void *b)
{
    const cn_scribe_client_obj_t *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    return memcmp(x->id.b, y->id.b, 32);
}

/* A previous submit whose reply was lost: settle it before anything else. */
static int settle_pending(cn_scribe_client_t *cl, wstate_t *s)
{
    if (!s->has_pending)
        return EXIT_OK;
    cn_scribe_cerr_t err;
    bool known = false;
    cn_scribe_client_outcome_t out;
    cn_err_t e = cn_scribe_client_outcome(cl, s->repo_id, s->pending, &known, &out, &err);
    if (e < 0)
        return fail("resolving the previous submit", e, &err);
    s->has_pending = false;
    if (!known || !out.accepted)
        return state_save(s);
    /* It was accepted: the workspace is at that change; files are
     * re-recorded from its tree (their mtimes force one rehash). */
    printf("the previous submit was accepted as change %" PRIu64 "\n", out.change);
    wstate_t next;
    memset(&next, 0, sizeof next);
    tree_acc_t a = {&next};
    for (size_t p = 0; p < (s->npaths ? s->npaths : 1) && e >= 0; p++)
        e = cn_scribe_client_tree(cl, s->repo_id, s->branch, out.change,
                                  s->npaths ? s->paths[p] : "", tree_row, &a, NULL, NULL, &err);
    if (e < 0) {
        state_free(&next);
        return fail("reading the tree", e, &err);
    }
    files_free(s);
    s->files = next.files;
    s->n = next.n;
    s->cap = next.cap;
    s->change = out.change;
    qsort(s->files, s->n, sizeof *s->files, by_path);
    return state_save(s);
}

static int cmd_submit(const ropts_t *o)
{
    if (!o->message) {
        fputs("cairn repo submit: -m MESSAGE is required\n", stderr);
        return EXIT_USAGE;
    }
    wstate_t s;
    int rc = state_load(o->npos ? o->pos[0] : ".", &s);
    if (rc)
        return rc;
    ropts_t oo = *o;
    if (!oo.endpoint)
        oo.endpoint = s.endpoint;
    cn_scribe_client_t *cl = NULL;
    cn_scribe_cerr_t err;
    memset(&err, 0, sizeof err);
    cn_err_t e = connect_to(&oo, &cl, &err);
    if (e < 0) {
        state_free(&s);
        return fail("connect", e, &err);
    }
    scan_t sc = {0};
    fcontent_t *cont = NULL;
    cn_repos_change_t *changes = NULL;
    cn_scribe_client_obj_t *objs = NULL;
    cn_scribe_client_ref_t *refs = NULL;
    bool *present = NULL;
    size_t nch = 0, nobj = 0;
    cn_buf_t csenc = {0};
    if ((rc = settle_pending(cl, &s)) || (rc = diff_workspace(&s, &sc)))
        goto out;
    qsort(s.files, s.n, sizeof *s.files, by_path);
    cont = calloc(s.n ? s.n : 1, sizeof *cont);
    changes = calloc(s.n ? s.n : 1, sizeof *changes);
    if (!cont || !changes) {
        rc = local_fail("out of memory for", s.dir, ENOMEM);
        goto out;
    }
    size_t total_chunks = 0;
    for (size_t i = 0; i < s.n && rc == EXIT_OK; i++) {
        wfile_t *w = &s.files[i];
        if (w->on_disk && !w->changed)
            continue;
        cn_repos_change_t *c = &changes[nch++];
        c->path = (const uint8_t *)w->path;
        c->path_len = (uint16_t)strlen(w->path);
        if (!w->on_disk) {
            c->kind = CN_REPOS_DELETE;
            continue;
        }
        c->kind = w->mtime_ns == -2 ? CN_REPOS_ADD : CN_REPOS_MODIFY;
        struct stat st;
        char full[8600];
        snprintf(full, sizeof full, "%s/%s", s.dir, w->path);
        if (lstat(full, &st) < 0) {
            rc = local_fail("cannot stat", full, errno);
            break;
        }
        if ((rc = content_load(s.dir, w->path, &st, &cont[i])) != EXIT_OK)
            break;
        c->manifest = cont[i].mid;
        c->mode = w->disk_mode;
        total_chunks += cont[i].nchunks;
    }
    if (rc)
        goto out;
    if (!nch) {
        if (!o->quiet)
            printf("nothing to submit at change %" PRIu64 "\n", s.change);
        rc = state_save(&s);    /* refreshed mtimes */
        goto out;
    }
    if (cn_repos_changeset_encode(&csenc, changes, (uint32_t)nch) < 0) {
        fprintf(stderr, "cairn repo: the changes are not a valid change set (a file and a "
                        "directory of the same name, or case-only aliases)\n");
        rc = EXIT_CONFLICT;
        goto out;
    }
    cn_digest_t csid;
    cn_repos_object_id(CN_REPOS_CHANGESET, csenc.data, csenc.len, &csid);
    /* Every identity, in dependency order, without repeats. */
    objs = malloc((total_chunks + s.n + 1) * sizeof *objs);
    if (!objs) {
        rc = local_fail("out of memory for", s.dir, ENOMEM);
        goto out;
    }
    for (size_t i = 0; i < s.n; i++)
        for (uint32_t k = 0; k < cont[i].nchunks; k++)
            objs[nobj++] = (cn_scribe_client_obj_t){CN_REPOS_CHUNK, cont[i].chunks[k].id,
                                                    cont[i].map + cont[i].offs[k],
                                                    cont[i].chunks[k].len};
    for (size_t i = 0; i < s.n; i++)
        if (cont[i].manifest.len)
            objs[nobj++] = (cn_scribe_client_obj_t){CN_REPOS_MANIFEST, cont[i].mid,
                                                    cont[i].manifest.data, cont[i].manifest.len};
    objs[nobj++] = (cn_scribe_client_obj_t){CN_REPOS_CHANGESET, csid, csenc.data, csenc.len};
    qsort(objs, nobj, sizeof *objs, ref_cmp);   /* kinds 1, 2, 3 stay in dependency order */
    size_t u = 0;
    for (size_t i = 0; i < nobj; i++)
        if (!u || ref_cmp(&objs[u - 1], &objs[i]) != 0)
            objs[u++] = objs[i];
    nobj = u;
    refs = malloc(nobj * sizeof *refs);
    present = malloc(nobj * sizeof *present);
    if (!refs || !present) {
        rc = local_fail("out of memory for", s.dir, ENOMEM);
        goto out;
    }
    for (size_t i = 0; i < nobj; i++)
        refs[i] = (cn_scribe_client_ref_t){objs[i].kind, objs[i].id};
    /* The operation id is persisted before anything names it. */
    cn_random_bytes(s.pending, 16);
    s.has_pending = true;
    if ((rc = state_save(&s)))
        goto out;
    if ((e = cn_scribe_client_pin(cl, s.repo_id, s.workspace, s.pending, refs, nobj, present,
                                  &err)) < 0) {
        rc = fail("pinning", e, &err);
        goto out;
    }
    size_t send = 0;
    uint64_t send_bytes = 0;
    for (size_t i = 0; i < nobj; i++)
        if (!present[i]) {
            send_bytes += objs[i].len;
            objs[send++] = objs[i];
        }
    progress_t pg;
    progress_start(&pg, cl, "uploading", send_bytes, o->quiet);
    e = send ? cn_scribe_client_put(cl, s.repo_id, objs, send, &err) : CN_OK;
    progress_end(&pg, cl);
    if (e < 0) {
        rc = fail("uploading", e, &err);
        goto out;
    }
    cn_scribe_client_submit_t sub;
    memset(&sub, 0, sizeof sub);
    memcpy(sub.repo, s.repo_id, 16);
    memcpy(sub.incarnation, s.incarnation, 16);
    memcpy(sub.operation, s.pending, 16);
    memcpy(sub.branch, s.branch, 16);
    memcpy(sub.workspace, s.workspace, 16);
    sub.base = s.change;
    sub.changeset = csid;
    sub.author = o->author;
    sub.message = o->message;
    cn_scribe_client_outcome_t out;
    if ((e = cn_scribe_client_submit(cl, &sub, &out, &err)) < 0) {
        rc = fail("submit", e, &err);
        goto out;
    }
    s.has_pending = false;
    if (!out.accepted) {
        fprintf(stderr, "cairn repo: submit rejected (code %u, head %" PRIu64 "): %s%s%s\n",
                out.code, out.head, out.detail, out.npaths ? ": " : "", out.first_path);
        state_save(&s);
        rc = EXIT_CONFLICT;
        goto out;
    }
    /* Record the new state: the submitted files as they are on disk. */
    size_t keep = 0;
    for (size_t i = 0; i < s.n; i++) {
        wfile_t *w = &s.files[i];
        if (!w->on_disk) {
            free(w->path);
            continue;
        }
        if (w->changed) {
            w->manifest = cont[i].mid;
            w->mode = w->disk_mode;
            w->size = w->disk_size;
            w->mtime_ns = w->disk_mtime;
        }
        s.files[keep++] = *w;
    }
    s.n = keep;
    s.change = out.change;
    if ((rc = state_save(&s)) == EXIT_OK && !o->quiet) {
        uint64_t sent = 0, recv = 0;
        cn_scribe_client_bytes(cl, &sent, &recv);
        printf("change %" PRIu64 ": %zu path(s), %zu object(s) uploaded (%" PRIu64
               " bytes), %" PRIu64 " bytes sent\n", out.change, nch, send, send_bytes, sent);
    }
out:
    if (cont)
        for (size_t i = 0; i < s.n; i++)
            content_free(&cont[i]);
    free(cont);
    free(changes);
    free(objs);
    free(refs);
    free(present);
    cn_buf_free(&csenc);
    scan_free(&sc);
    state_free(&s);
    cn_scribe_client_free(cl);
    return rc;
}

static int cmd_sync(const ropts_t *o)
{
    wstate_t s;
    int rc = state_load(o->npos ? o->pos[0] : ".", &s);
    if (rc)
        return rc;
    ropts_t oo = *o;
    if (!oo.endpoint)
        oo.endpoint = s.endpoint;
    cn_scribe_client_t *cl = NULL;
    cn_scribe_cerr_t err;
    cn_err_t e = connect_to(&oo, &cl, &err);
    if (e < 0) {
        state_free(&s);
        return fail("connect", e, &err);
    }
    cn_scribe_client_repo_t r;
    bool widened = false;
    if (o->npaths && !s.npaths) {
        fprintf(stderr, "cairn repo: %s syncs every path already (--path is for workspaces "
                        "cloned with --path)\n", s.dir);
        rc = EXIT_USAGE;
    }
    for (int i = 0; i < o->npaths && rc == EXIT_OK; i++) {
        size_t had = s.npaths;
        rc = scope_add(&s, o->paths[i]);
        widened = widened || s.npaths != had;
    }
    if (rc == EXIT_OK && (rc = settle_pending(cl, &s)) == EXIT_OK) {
        e = cn_scribe_client_repo_info(cl, s.repo, &r, &err);
        if (e < 0)
            rc = fail(s.repo, e, &err);
        else if (memcmp(r.incarnation, s.incarnation, 16) != 0) {
            fprintf(stderr, "cairn repo: the repository was restored (new incarnation); "
                            "clone it again\n");
            rc = EXIT_CONFLICT;
        } else if (!o->has_change && r.head == s.change && !widened) {
            if (!o->quiet)
                printf("up to date at change %" PRIu64 "\n", s.change);
        } else {
            rc = sync_to(cl, &s, o->has_change ? o->change : r.head, o->quiet);
        }
    }
    state_free(&s);
    cn_scribe_client_free(cl);
    return rc;
}

static int print_log(void *ctx, const cn_scribe_client_logrow_t *r)
{
    (void)ctx;
    char when[CN_RFC3339_LEN], id[65];
    cn_rfc3339((int64_t)r->time_ms, when);
    hex(r->commit.b, 12, id);
    static const char *const ev[] = {"", "add", "modify", "delete", "move", "keep"};
    printf("change %" PRIu64 "  %s  %s  %s", r->change, id, r->author, when);
    if (r->path[0])
        printf("  %s %s", r->event < 6 ? ev[r->event] : "?", r->path);
    printf("\n    %s\n", r->message);
    return 0;
}

static int cmd_log(const ropts_t *o)
{
    const char *dir = ".", *path = NULL;
    if (o->npos >= 1) {
        char probe[4200];
        snprintf(probe, sizeof probe, "%s/.cairn/state", o->pos[0]);
        if (access(probe, F_OK) == 0) {
            dir = o->pos[0];
            path = o->npos > 1 ? o->pos[1] : NULL;
        } else {
            path = o->pos[0];
        }
    }
    wstate_t s;
    int rc = state_load(dir, &s);
    if (rc)
        return rc;
    ropts_t oo = *o;
    if (!oo.endpoint)
        oo.endpoint = s.endpoint;
    cn_scribe_client_t *cl = NULL;
    cn_scribe_cerr_t err;
    cn_err_t e = connect_to(&oo, &cl, &err);
    if (e >= 0)
        e = cn_scribe_client_log(cl, s.repo_id, s.branch, path, o->limit, print_log, NULL, &err);
    cn_scribe_client_free(cl);
    state_free(&s);
    return e < 0 ? fail("log", e, &err) : EXIT_OK;
}

/* Appends a description revision over the latest one (a change's message
 * never changes; the note overlays it). */
static int cmd_describe(const ropts_t *o)
{
    if (!o->message || o->npos < 1 || o->npos > 2) {
        fputs(repo_usage, stderr);
        return EXIT_USAGE;
    }
    const char *dir = o->npos == 2 ? o->pos[0] : ".", *num = o->pos[o->npos - 1];
    char *end;
    uint64_t change = strtoull(num, &end, 10);
    if (*end || !*num) {
        fprintf(stderr, "cairn repo describe: CHANGE is a number\n");
        return EXIT_USAGE;
    }
    wstate_t s;
    int rc = state_load(dir, &s);
    if (rc)
        return rc;
    ropts_t oo = *o;
    if (!oo.endpoint)
        oo.endpoint = s.endpoint;
    cn_scribe_client_t *cl = NULL;
    cn_scribe_cerr_t err;
    uint32_t rev = 0, now = 0;
    cn_err_t e = connect_to(&oo, &cl, &err);
    if (e >= 0)
        e = cn_scribe_client_note(cl, s.repo_id, change, &rev, NULL, 0, &err);
    if (e >= 0)
        e = cn_scribe_client_describe(cl, s.repo_id, change, rev, o->author, o->message, &now, &err);
    cn_scribe_client_free(cl);
    state_free(&s);
    if (e < 0)
        return fail("describe", e, &err);
    if (!o->quiet)
        printf("change %" PRIu64 ": description revision %u\n", change, now);
    return EXIT_OK;
}

int cn_cmd_repo(int argc, char **argv)
{
    ropts_t o;
    memset(&o, 0, sizeof o);
    o.endpoint = getenv("CAIRN_SCRIBE_ENDPOINT");
    o.author = getenv("USER") ? getenv("USER") : "cairn";
    if (argc < 2) {
        fputs(repo_usage, stderr);
        return EXIT_USAGE;
    }
    const char *verb = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        bool more = i + 1 < argc;
        if (!strcmp(a, "--endpoint") && more)
            o.endpoint = argv[++i];
        else if ((!strcmp(a, "-m") || !strcmp(a, "--message")) && more)
            o.message = argv[++i];
        else if (!strcmp(a, "--author") && more)
            o.author = argv[++i];
        else if (!strcmp(a, "--lz4"))
            o.lz4 = true;
        else if (!strcmp(a, "--lz4-storage"))
            o.lz4_storage = true;
        else if (!strcmp(a, "--quiet") || !strcmp(a, "-q"))
            o.quiet = true;
        else if (!strcmp(a, "--change") && more) {
            char *end;
            o.change = strtoull(argv[++i], &end, 10);
            o.has_change = true;
            if (*end) {
                fprintf(stderr, "cairn repo: --change wants a number\n");
                return EXIT_USAGE;
            }
        } else if (!strcmp(a, "--path") && more) {
            if (o.npaths == CN_WS_PATHS_MAX) {
                fprintf(stderr, "cairn repo: at most %d --path prefixes\n", CN_WS_PATHS_MAX);
                return EXIT_USAGE;
            }
            o.paths[o.npaths++] = argv[++i];
        } else if (!strcmp(a, "--conns") && more) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 0 || v > CN_SCRIBE_CLIENT_MAX_DATA) {
                fprintf(stderr, "cairn repo: --conns wants 0..%d\n", CN_SCRIBE_CLIENT_MAX_DATA);
                return EXIT_USAGE;
            }
            o.conns = v ? (int)v : -1;
        } else if (!strcmp(a, "-n") && more)
            o.limit = (uint32_t)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(repo_usage, stdout);
            return EXIT_OK;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "cairn repo: unknown option '%s'\n%s", a, repo_usage);
            return EXIT_USAGE;
        } else if (o.npos < 3)
            o.pos[o.npos++] = a;
        else {
            fputs(repo_usage, stderr);
            return EXIT_USAGE;
        }
    }
    if (!strcmp(verb, "create"))
        return cmd_create(&o);
    if (!strcmp(verb, "list"))
        return cmd_list_info(&o, false);
    if (!strcmp(verb, "info"))
        return cmd_list_info(&o, true);
    if (!strcmp(verb, "clone") || !strcmp(verb, "checkout"))
        return cmd_clone(&o);
    if (!strcmp(verb, "status"))
        return cmd_status(&o);
    if (!strcmp(verb, "submit"))
        return cmd_submit(&o);
    if (!strcmp(verb, "sync"))
        return cmd_sync(&o);
    if (!strcmp(verb, "log"))
        return cmd_log(&o);
    if (!strcmp(verb, "describe"))
        return cmd_describe(&o);
    fprintf(stderr, "cairn repo: unknown command '%s'\n%s", verb, repo_usage);
    return EXIT_USAGE;
}
