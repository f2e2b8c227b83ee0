/* Reading a workspace: the walk of its directory (which skips .cairn and
 * the temporary files of a fetch), the content of one file split by
 * content-defined chunking into a manifest, and the comparison of the
 * directory with the state.  It only reads the working files, never writes
 * or removes them. */
#include "ws.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define CN_WS_READ_MAX (64 << 10)       /* files up to this are read, larger ones mapped */
#define CN_WS_REL_MAX 8193              /* a canonical path's 8,192 bytes and its NUL */

void cn_ws_scan_free(scan_t *sc)
{
    for (size_t i = 0; i < sc->n; i++)
        free(sc->paths[i]);
    free(sc->paths);
    free(sc->st);
}

static int scan_push(scan_t *sc, const char *rel, size_t len, const struct stat *st)
{
    if (sc->n == sc->cap) {
        size_t cap = sc->cap ? sc->cap * 2 : 256;
        char **p = realloc(sc->paths, cap * sizeof *p);
        if (p)
            sc->paths = p;
        struct stat *s2 = p ? realloc(sc->st, cap * sizeof *s2) : NULL;
        if (!s2)
            return cn_ws_local_fail("out of memory scanning", rel, ENOMEM);
        sc->st = s2;
        sc->cap = cap;
    }
    if (!(sc->paths[sc->n] = malloc(len + 1)))
        return cn_ws_local_fail("out of memory scanning", rel, ENOMEM);
    memcpy(sc->paths[sc->n], rel, len + 1);
    sc->st[sc->n] = *st;
    sc->n++;
    return EXIT_OK;
}

/* Walks the directory open at dfd (taken over and closed), whose path
 * relative to the workspace is rel[0..len) (rel has room for PATH_MAX
 * more).  Entries are looked up relative to their directory, so no full
 * path is resolved per file; a d_type of DT_DIR saves the stat. */
static int scan_dir(const char *root, int dfd, char *rel, size_t len, scan_t *sc)
{
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return cn_ws_local_fail("cannot read", len ? rel : root, errno);
    }
    struct dirent *de;
    int rc = EXIT_OK;
    while (rc == EXIT_OK && (de = readdir(d))) {
        const char *name = de->d_name;
        if (!strcmp(name, ".") || !strcmp(name, ".."))
            continue;
        if (!len && !strcmp(name, ".cairn"))
            continue;
        if (!strncmp(name, CN_WS_TMP_PREFIX, sizeof CN_WS_TMP_PREFIX - 1))
            continue;           /* a fetch's temporary file (job_open) */
        size_t nl = strlen(name), cl = len + (len ? 1 : 0) + nl;
        if (cl >= CN_WS_REL_MAX) {
            fprintf(stderr, "cairn repo: skipping %.*s/%s: path too long\n", (int)len, rel, name);
            continue;
        }
        if (len)
            rel[len] = '/';
        memcpy(rel + cl - nl, name, nl + 1);
        struct stat st;
        if (de->d_type == DT_DIR) {
            st.st_mode = S_IFDIR;
        } else if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            rc = cn_ws_local_fail("cannot stat", rel, errno);
            break;
        }
        if (S_ISDIR(st.st_mode)) {
            int sub = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            rc = sub < 0 ? cn_ws_local_fail("cannot read", rel, errno)
                         : scan_dir(root, sub, rel, cl, sc);
        } else if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) {
            if (cn_repos_path_check((const uint8_t *)rel, cl) < 0)
                fprintf(stderr, "cairn repo: skipping %s: not a canonical repository path\n", rel);
            else
                rc = scan_push(sc, rel, cl, &st);
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

void cn_ws_content_free(fcontent_t *c)
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

int cn_ws_content_load(const char *root, const char *rel, const struct stat *st, fcontent_t *c)
{
    memset(c, 0, sizeof *c);
    char full[8600];
    snprintf(full, sizeof full, "%s/%s", root, rel);
    if (S_ISLNK(st->st_mode)) {
        c->map = malloc(4097);
        ssize_t n = c->map ? readlink(full, (char *)c->map, 4096) : -1;
        if (n < 0)
            return cn_ws_local_fail("cannot read link", full, errno);
        c->len = (size_t)n;
    } else if (st->st_size > 0 && st->st_size <= CN_WS_READ_MAX) {
        /* small files are read: a submit of 100,000 files must not hold
         * 100,000 mappings (vm.max_map_count) */
        int fd = open(full, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return cn_ws_local_fail("cannot open", full, errno);
        c->map = malloc((size_t)st->st_size);
        long long n = c->map ? cn_read_full(fd, c->map, (size_t)st->st_size) : -1;
        int saved = c->map ? errno : ENOMEM;
        close(fd);
        if (n != (long long)st->st_size)
            return cn_ws_local_fail("cannot read", full, n < 0 ? saved : EAGAIN);
        c->len = (size_t)n;
    } else if (st->st_size > 0) {
        int fd = open(full, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return cn_ws_local_fail("cannot open", full, errno);
        void *p = mmap(NULL, (size_t)st->st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        int saved = errno;
        close(fd);
        if (p == MAP_FAILED)
            return cn_ws_local_fail("cannot map", full, saved);
        c->map = p;
        c->len = (size_t)st->st_size;
        c->mapped = true;
    }
    size_t cap = c->len / CN_SCRIBE_CDC_MIN + 2;
    c->chunks = malloc(cap * sizeof *c->chunks);
    c->offs = malloc(cap * sizeof *c->offs);
    if (!c->chunks || !c->offs)
        return cn_ws_local_fail("out of memory chunking", full, ENOMEM);
    for (size_t off = 0; off < c->len;) {
        size_t n = cn_scribe_cdc_cut(c->map + off, c->len - off);
        cn_blake3(c->map + off, n, &c->chunks[c->nchunks].id);
        c->chunks[c->nchunks].len = (uint32_t)n;
        c->offs[c->nchunks] = off;
        c->nchunks++;
        off += n;
    }
    if (cn_repos_manifest_encode(&c->manifest, c->chunks, c->nchunks) < 0)
        return cn_ws_local_fail("cannot describe", full, EFBIG);
    cn_repos_object_id(CN_REPOS_MANIFEST, c->manifest.data, c->manifest.len, &c->mid);
    return EXIT_OK;
}

/* Compares the directory with the state; rehashes only files whose size or
 * mtime changed.  Fills changed/on_disk of state files and appends new ones
 * (marked with mtime_ns -2) to s. */
int cn_ws_diff(wstate_t *s, scan_t *sc)
{
    memset(sc, 0, sizeof *sc);
    sc->cap = s->n + 256;           /* room for what the state knows, grown if more */
    sc->paths = malloc(sc->cap * sizeof *sc->paths);
    sc->st = malloc(sc->cap * sizeof *sc->st);
    if (!sc->paths || !sc->st)
        return cn_ws_local_fail("out of memory scanning", s->dir, ENOMEM);
    char *rel = malloc(CN_WS_REL_MAX);
    int dfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = !rel ? cn_ws_local_fail("out of memory scanning", s->dir, ENOMEM)
           : dfd < 0 ? cn_ws_local_fail("cannot read", s->dir, errno)
           : (rel[0] = 0, scan_dir(s->dir, dfd, rel, 0, sc));
    if (!rel && dfd >= 0)
        close(dfd);
    free(rel);
    if (rc)
        return rc;
    size_t known = s->n;
    for (size_t i = 0; i < sc->n && rc == EXIT_OK; i++) {
        if (!cn_ws_in_scope(s, sc->paths[i]))
            continue;           /* outside a sparse workspace's prefixes */
        wfile_t *w = NULL;
        wfile_t key;
        key.path = sc->paths[i];
        w = bsearch(&key, s->files, known, sizeof *s->files, cn_ws_by_path);
        if (!w) {
            if (!(w = cn_ws_state_add(s, sc->paths[i])))
                return cn_ws_local_fail("out of memory for", sc->paths[i], ENOMEM);
            w->mtime_ns = -2;
            w->changed = true;
        }
        w->on_disk = true;
        w->disk_mode = mode_of(&sc->st[i]);
        w->disk_size = (uint64_t)sc->st[i].st_size;
        w->disk_mtime = cn_ws_mtime_ns(&sc->st[i]);
        if (w->mtime_ns == -2)
            continue;
        if (w->disk_size == w->size && w->disk_mtime == w->mtime_ns && w->disk_mode == w->mode)
            continue;
        /* size or mtime differ: the content decides */
        fcontent_t c;
        if ((rc = cn_ws_content_load(s->dir, w->path, &sc->st[i], &c)) == EXIT_OK) {
            w->changed = memcmp(c.mid.b, w->manifest.b, 32) != 0 || w->disk_mode != w->mode;
            if (!w->changed)
                w->mtime_ns = w->disk_mtime;
        }
        cn_ws_content_free(&c);
    }
    return rc;
}
