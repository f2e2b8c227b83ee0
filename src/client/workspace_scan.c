/* Reading a workspace: the walk of its directory (which skips .cairn and
 * the temporary files of a fetch), the content of one file split by
 * content-defined chunking into a manifest, and the comparison of the
 * directory with the state.  It only reads the working files, never writes
 * or removes them. */
#include "workspace_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define CN_WS_READ_MAX (64 << 10) /* files up to this are read, larger ones mapped */
#define CN_WS_REL_MAX 8193        /* a canonical path's 8,192 bytes and its NUL */

void cn__ws_scan_free(cn__ws_scan_t *sc)
{
    for (size_t i = 0; i < sc->n; i++)
        free(sc->paths[i]);
    free(sc->paths);
    free(sc->st);
}

/* A walk's context: where it reports. */
typedef struct walk {
    const char *root;
    const cn_ws_opts_t *o;
    cn_ws_error_t *err;
} walk_t;

static void notice(const walk_t *wk, const char *path, const char *why)
{
    if (wk->o->notice)
        wk->o->notice(wk->o->notice_ctx, path, why);
}

static cn_err_t scan_push(cn__ws_scan_t *sc, const char *rel, size_t len, const struct stat *st,
                          cn_ws_error_t *err)
{
    if (sc->n == sc->cap) {
        size_t cap = sc->cap ? sc->cap * 2 : 256;
        char **p = realloc(sc->paths, cap * sizeof *p);
        if (p)
            sc->paths = p;
        struct stat *s2 = p ? realloc(sc->st, cap * sizeof *s2) : NULL;
        if (!s2)
            return cn__ws_file_fail(err, "out of memory scanning", rel, ENOMEM);
        sc->st = s2;
        sc->cap = cap;
    }
    if (!(sc->paths[sc->n] = malloc(len + 1)))
        return cn__ws_file_fail(err, "out of memory scanning", rel, ENOMEM);
    memcpy(sc->paths[sc->n], rel, len + 1);
    sc->st[sc->n] = *st;
    sc->n++;
    return CN_OK;
}

/* Walks the directory open at dfd (taken over and closed), whose path
 * relative to the workspace is rel[0..len) (rel has room for PATH_MAX
 * more).  Entries are looked up relative to their directory, so no full
 * path is resolved per file; a d_type of DT_DIR saves the stat. */
static cn_err_t scan_dir(const walk_t *wk, int dfd, char *rel, size_t len, cn__ws_scan_t *sc)
{
    DIR *d = fdopendir(dfd);
    if (!d) {
        int e = errno;
        close(dfd);
        return cn__ws_file_fail(wk->err, "cannot read", len ? rel : wk->root, e);
    }
    struct dirent *de;
    cn_err_t rc = CN_OK;
    while (rc == CN_OK && (de = readdir(d))) {
        const char *name = de->d_name;
        if (!strcmp(name, ".") || !strcmp(name, ".."))
            continue;
        if (!len && !strcmp(name, ".cairn"))
            continue;
        if (!strncmp(name, CN_WS_TMP_PREFIX, sizeof CN_WS_TMP_PREFIX - 1))
            continue; /* a fetch's temporary file (job_open) */
        size_t nl = strlen(name), cl = len + (len ? 1 : 0) + nl;
        if (cl >= CN_WS_REL_MAX) {
            char *skipped = malloc(len + 1 + nl + 1);
            if (skipped) {
                memcpy(skipped, rel, len);
                skipped[len] = '/';
                memcpy(skipped + len + 1, name, nl + 1);
            }
            notice(wk, skipped ? skipped : name, "path too long");
            free(skipped);
            continue;
        }
        if (len)
            rel[len] = '/';
        memcpy(rel + cl - nl, name, nl + 1);
        struct stat st;
        if (de->d_type == DT_DIR) {
            st.st_mode = S_IFDIR;
        } else if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            rc = cn__ws_file_fail(wk->err, "cannot stat", rel, errno);
            break;
        }
        if (S_ISDIR(st.st_mode)) {
            int sub = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0 && faccessat(sub, ".cairn/state", F_OK, 0) == 0) {
                close(sub); /* a nested workspace (a mount): its own state tracks it */
                rel[len] = 0;
                continue;
            }
            rc = sub < 0 ? cn__ws_file_fail(wk->err, "cannot read", rel, errno)
                         : scan_dir(wk, sub, rel, cl, sc);
        } else if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) {
            if (cn_repos_path_check((const uint8_t *)rel, cl) < 0)
                notice(wk, rel, "not a canonical repository path");
            else
                rc = scan_push(sc, rel, cl, &st, wk->err);
        }
        rel[len] = 0;
    }
    closedir(d);
    return rc;
}

static uint8_t mode_of(const struct stat *st)
{
    if (S_ISLNK(st->st_mode))
        return CN_REPOS_MODE_SYMLINK;
    return (st->st_mode & 0100) ? CN_REPOS_MODE_EXEC : CN_REPOS_MODE_FILE;
}

void cn__ws_content_free(cn__ws_content_t *c)
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

cn_err_t cn__ws_content_load(const char *root, const char *rel, const struct stat *st,
                             cn__ws_content_t *c, cn_ws_error_t *err)
{
    memset(c, 0, sizeof *c);
    char full[8600];
    snprintf(full, sizeof full, "%s/%s", root, rel);
    if (S_ISLNK(st->st_mode)) {
        c->map = malloc(4097);
        ssize_t n = c->map ? readlink(full, (char *)c->map, 4096) : -1;
        if (n < 0)
            return cn__ws_file_fail(err, "cannot read link", full, c->map ? errno : ENOMEM);
        c->len = (size_t)n;
    } else if (st->st_size > 0 && st->st_size <= CN_WS_READ_MAX) {
        /* small files are read: a submit of 100,000 files must not hold
         * 100,000 mappings (vm.max_map_count) */
        int fd = open(full, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return cn__ws_file_fail(err, "cannot open", full, errno);
        c->map = malloc((size_t)st->st_size);
        long long n = c->map ? cn_read_full(fd, c->map, (size_t)st->st_size) : -1;
        int saved = c->map ? errno : ENOMEM;
        close(fd);
        if (n != (long long)st->st_size)
            return cn__ws_file_fail(err, "cannot read", full, n < 0 ? saved : EAGAIN);
        c->len = (size_t)n;
    } else if (st->st_size > 0) {
        int fd = open(full, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return cn__ws_file_fail(err, "cannot open", full, errno);
        void *p = mmap(NULL, (size_t)st->st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        int saved = errno;
        close(fd);
        if (p == MAP_FAILED)
            return cn__ws_file_fail(err, "cannot map", full, saved);
        c->map = p;
        c->len = (size_t)st->st_size;
        c->mapped = true;
    }
    size_t cap = c->len / CN_SCRIBE_CDC_MIN + 2;
    c->chunks = malloc(cap * sizeof *c->chunks);
    c->offs = malloc(cap * sizeof *c->offs);
    if (!c->chunks || !c->offs)
        return cn__ws_file_fail(err, "out of memory chunking", full, ENOMEM);
    for (size_t off = 0; off < c->len;) {
        size_t n = cn_scribe_cdc_cut(c->map + off, c->len - off);
        cn_blake3(c->map + off, n, &c->chunks[c->nchunks].id);
        c->chunks[c->nchunks].len = (uint32_t)n;
        c->offs[c->nchunks] = off;
        c->nchunks++;
        off += n;
    }
    if (cn_repos_manifest_encode(&c->manifest, c->chunks, c->nchunks) < 0)
        return cn__ws_file_fail(err, "cannot describe", full, EFBIG);
    cn_repos_object_id(CN_REPOS_MANIFEST, c->manifest.data, c->manifest.len, &c->mid);
    return CN_OK;
}

/* Compares the directory with the state; rehashes only files whose size or
 * mtime changed.  Fills changed/on_disk of state files and appends new ones
 * (marked with mtime_ns -2) to s. */
cn_err_t cn__ws_diff(cn__ws_state_t *s, cn__ws_scan_t *sc, const cn_ws_opts_t *o,
                     cn_ws_error_t *err)
{
    memset(sc, 0, sizeof *sc);
    sc->cap = s->n + 256; /* room for what the state knows, grown if more */
    sc->paths = malloc(sc->cap * sizeof *sc->paths);
    sc->st = malloc(sc->cap * sizeof *sc->st);
    if (!sc->paths || !sc->st)
        return cn__ws_file_fail(err, "out of memory scanning", s->dir, ENOMEM);
    walk_t wk = { s->dir, o, err };
    char *rel = malloc(CN_WS_REL_MAX);
    int dfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    cn_err_t rc = !rel      ? cn__ws_file_fail(err, "out of memory scanning", s->dir, ENOMEM)
                  : dfd < 0 ? cn__ws_file_fail(err, "cannot read", s->dir, errno)
                            : (rel[0] = 0, scan_dir(&wk, dfd, rel, 0, sc));
    if (!rel && dfd >= 0)
        close(dfd);
    free(rel);
    if (rc)
        return rc;
    size_t known = s->n;
    for (size_t i = 0; i < sc->n && rc == CN_OK; i++) {
        if (!cn__ws_in_scope(s, sc->paths[i]))
            continue; /* outside a sparse workspace's prefixes */
        /* an empty workspace has no files array: state_find spares bsearch the NULL */
        cn__ws_file_t *w = cn__ws_state_find(s, sc->paths[i], known);
        if (!w) {
            if (!(w = cn__ws_state_add(s, sc->paths[i])))
                return cn__ws_file_fail(err, "out of memory for", sc->paths[i], ENOMEM);
            w->mtime_ns = -2;
            w->changed = true;
        }
        w->on_disk = true;
        w->disk_mode = mode_of(&sc->st[i]);
        w->disk_size = (uint64_t)sc->st[i].st_size;
        w->disk_mtime = cn__ws_mtime_ns(&sc->st[i]);
        if (w->mtime_ns == -2)
            continue;
        if (w->disk_size == w->size && w->disk_mtime == w->mtime_ns && w->disk_mode == w->mode)
            continue;
        /* size or mtime differ: the content decides */
        cn__ws_content_t c;
        if ((rc = cn__ws_content_load(s->dir, w->path, &sc->st[i], &c, err)) == CN_OK) {
            w->changed = memcmp(c.mid.b, w->manifest.b, 32) != 0 || w->disk_mode != w->mode;
            if (!w->changed)
                w->mtime_ns = w->disk_mtime;
        }
        cn__ws_content_free(&c);
    }
    return rc;
}
