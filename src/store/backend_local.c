/* The local-directory backend: blob d lives at ROOT/ab/cd/<hex> (raw) or
 * ROOT/ab/cd/<hex>.lz4 (LZ4 envelope), where ab and cd are the first two
 * digest bytes in hex.  Files are created read-only (0444) and never
 * rewritten in place: a name appears only by an atomic rename of a complete,
 * already-synced staged file.
 */
#include "store/backend.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cairn/util.h"

typedef struct local_be {
    cn__backend_t base;
    int root_fd;
    /* The leaf directories ab/cd that may hold a blob, bit ab << 8 | cd: set
     * at open for each one there, and by put before it creates one (under
     * the digest's lock); never cleared.  A clear bit proves d has no
     * file in this process's view (local_may_have). */
    _Atomic uint64_t dirs[(1u << 16) / 64];
} local_be_t;

static unsigned dir_bit(const cn_digest_t *d)
{
    return (unsigned)d->b[0] << 8 | d->b[1];
}

static void dir_mark(local_be_t *be, unsigned bit)
{
    atomic_fetch_or_explicit(&be->dirs[bit / 64], UINT64_C(1) << (bit % 64), memory_order_relaxed);
}

/* "ab/cd/<64 hex>[.lz4]" */
#define LOCAL_PATH_MAX (6 + CN_DIGEST_HEX_LEN + 5)

static void local_path(const cn_digest_t *d, cn_store_form_t form, char out[LOCAL_PATH_MAX])
{
    char hex[CN_DIGEST_HEX_LEN + 1];
    cn_digest_hex(d, hex);
    snprintf(out, LOCAL_PATH_MAX, "%.2s/%.2s/%s%s", hex, hex + 2, hex,
             form == CN_STORE_LZ4 ? ".lz4" : "");
}

static int64_t stat_mtime_ms(const struct stat *st)
{
    return (int64_t)st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000;
}

/* Finds d in either form.  CN_E_NOT_FOUND when absent. */
static cn_err_t local_find(local_be_t *be, const cn_digest_t *d, cn_store_form_t *form,
                           struct stat *st, char path[LOCAL_PATH_MAX])
{
    static const cn_store_form_t forms[] = { CN_STORE_RAW, CN_STORE_LZ4 };
    for (size_t i = 0; i < 2; i++) {
        local_path(d, forms[i], path);
        if (fstatat(be->root_fd, path, st, 0) == 0) {
            *form = forms[i];
            return CN_OK;
        }
        if (errno != ENOENT && errno != ENOTDIR)
            return -errno;
    }
    return CN_E_NOT_FOUND;
}

static cn_err_t fsync_at(int dirfd, const char *rel)
{
    int fd = openat(dirfd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    cn_err_t rc = fsync(fd) < 0 ? -errno : CN_OK;
    close(fd);
    return rc;
}

/* mkdir rel under root; *created tells whether it is new (its parent then
 * needs a flush for the new entry to be durable). */
static cn_err_t mkdir_at(int root_fd, const char *rel, bool *created)
{
    *created = false;
    if (mkdirat(root_fd, rel, 0755) == 0) {
        *created = true;
        return CN_OK;
    }
    return errno == EEXIST ? CN_OK : -errno;
}

static cn_err_t local_put(cn__backend_t *base, int staging_dirfd, const char *staged_name,
                          const cn_digest_t *d, cn_store_form_t form, unsigned flags, bool *existed)
{
    local_be_t *be = (local_be_t *)base;
    bool sync = flags & CN__BE_PUT_SYNC;
    char path[LOCAL_PATH_MAX];
    char dir1[3], dir2[6];
    struct stat st;
    cn_store_form_t have_form;
    cn_err_t rc;

    *existed = false;
    dir_mark(be, dir_bit(d)); /* before any file of d can appear */
    local_path(d, form, path);
    memcpy(dir1, path, 2);
    dir1[2] = '\0';
    memcpy(dir2, path, 5);
    dir2[5] = '\0';

    rc = local_find(be, d, &have_form, &st, path);
    if (rc == CN_OK) {
        *existed = true;
        if (utimensat(be->root_fd, path, NULL, 0) < 0)
            return -errno;
        /* Whoever renamed it may not have flushed its directory yet; an
         * acknowledgement that it exists must not run ahead of that. */
        return sync ? fsync_at(be->root_fd, dir2) : CN_OK;
    }
    if (rc != CN_E_NOT_FOUND)
        return rc;
    local_path(d, form, path);

    bool new1, new2;
    if ((rc = mkdir_at(be->root_fd, dir1, &new1)) < 0)
        return rc;
    if ((rc = mkdir_at(be->root_fd, dir2, &new2)) < 0)
        return rc;
    if (sync && new1 && fsync(be->root_fd) < 0)
        return -errno;
    if (sync && new2 && (rc = fsync_at(be->root_fd, dir1)) < 0)
        return rc;

    if (renameat2(staging_dirfd, staged_name, be->root_fd, path, RENAME_NOREPLACE) < 0) {
        if (errno == EEXIST) {
            /* Another process published it between the check and here. */
            *existed = true;
            return sync ? fsync_at(be->root_fd, dir2) : CN_OK;
        }
        if (errno != EINVAL && errno != ENOSYS)
            return -errno;
        /* No RENAME_NOREPLACE on this file system: the digest lock the
         * caller holds already excludes in-process races. */
        if (renameat(staging_dirfd, staged_name, be->root_fd, path) < 0)
            return -errno;
    }
    return sync ? fsync_at(be->root_fd, dir2) : CN_OK;
}

static cn_err_t local_open(cn__backend_t *base, const cn_digest_t *d, int *fd, cn__be_stat_t *out)
{
    local_be_t *be = (local_be_t *)base;
    static const cn_store_form_t forms[] = { CN_STORE_RAW, CN_STORE_LZ4 };
    char path[LOCAL_PATH_MAX];
    for (size_t i = 0; i < 2; i++) {
        local_path(d, forms[i], path);
        int f = openat(be->root_fd, path, O_RDONLY | O_CLOEXEC);
        if (f < 0) {
            if (errno == ENOENT || errno == ENOTDIR)
                continue;
            return -errno;
        }
        struct stat st;
        if (fstat(f, &st) < 0) {
            cn_err_t rc = -errno;
            close(f);
            return rc;
        }
        out->size = (uint64_t)st.st_size;
        out->mtime_ms = stat_mtime_ms(&st);
        out->form = forms[i];
        *fd = f;
        return CN_OK;
    }
    return CN_E_NOT_FOUND;
}

static cn_err_t local_stat(cn__backend_t *base, const cn_digest_t *d, cn__be_stat_t *out)
{
    local_be_t *be = (local_be_t *)base;
    char path[LOCAL_PATH_MAX];
    struct stat st;
    cn_store_form_t form = CN_STORE_RAW;
    CN_TRY(local_find(be, d, &form, &st, path));
    out->size = (uint64_t)st.st_size;
    out->mtime_ms = stat_mtime_ms(&st);
    out->form = form;
    return CN_OK;
}

static cn_err_t local_touch(cn__backend_t *base, const cn_digest_t *d)
{
    local_be_t *be = (local_be_t *)base;
    char path[LOCAL_PATH_MAX];
    struct stat st;
    cn_store_form_t form;
    CN_TRY(local_find(be, d, &form, &st, path));
    return utimensat(be->root_fd, path, NULL, 0) < 0 ? -errno : CN_OK;
}

static cn_err_t local_remove(cn__backend_t *base, const cn_digest_t *d, uint64_t *freed)
{
    local_be_t *be = (local_be_t *)base;
    char path[LOCAL_PATH_MAX];
    struct stat st;
    cn_store_form_t form;
    CN_TRY(local_find(be, d, &form, &st, path));
    if (unlinkat(be->root_fd, path, 0) < 0)
        return errno == ENOENT ? CN_E_NOT_FOUND : -errno;
    if (freed)
        *freed = (uint64_t)st.st_size;
    return CN_OK;
}

static bool is_hex2(const char *s)
{
    for (int i = 0; i < 2; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return s[2] == '\0';
}

static DIR *opendir_at(int dirfd, const char *rel)
{
    int fd = openat(dirfd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    DIR *dir = fdopendir(fd);
    if (!dir)
        close(fd);
    return dir;
}

/* Walks one leaf directory ab/cd. */
static cn_err_t list_leaf(int dfd, const char *a, const char *c, cn__be_list_fn fn, void *ctx)
{
    char rel[6] = { a[0], a[1], '/', c[0], c[1], '\0' };
    DIR *dir = opendir_at(dfd, rel);
    if (!dir)
        return errno == ENOENT ? CN_OK : -errno;
    cn_err_t rc = CN_OK;
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        size_t n = strlen(de->d_name);
        cn_store_form_t form;
        if (n == CN_DIGEST_HEX_LEN)
            form = CN_STORE_RAW;
        else if (n == CN_DIGEST_HEX_LEN + 4 && strcmp(de->d_name + CN_DIGEST_HEX_LEN, ".lz4") == 0)
            form = CN_STORE_LZ4;
        else
            continue;
        cn_digest_t d;
        if (cn_digest_parse(de->d_name, CN_DIGEST_HEX_LEN, &d) < 0 ||
            memcmp(de->d_name, rel, 2) != 0 || memcmp(de->d_name + 2, rel + 3, 2) != 0)
            continue;
        struct stat st;
        if (fstatat(dirfd(dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            if (errno == ENOENT)
                continue; /* removed meanwhile */
            rc = -errno;
            break;
        }
        if (!S_ISREG(st.st_mode))
            continue;
        cn__be_stat_t bs = { (uint64_t)st.st_size, stat_mtime_ms(&st), form };
        if ((rc = fn(ctx, &d, &bs)) != CN_OK)
            break;
    }
    closedir(dir);
    return rc;
}

/* Calls leaf for each leaf directory ab/cd (a: "ab", c: "cd"). */
typedef cn_err_t (*leaf_fn)(local_be_t *be, const char *a, const char *c, void *ctx);

static cn_err_t walk_dirs(local_be_t *be, leaf_fn leaf, void *ctx)
{
    DIR *top = opendir_at(be->root_fd, ".");
    if (!top)
        return -errno;
    cn_err_t rc = CN_OK;
    struct dirent *de;
    while (rc == CN_OK && (de = readdir(top)) != NULL) {
        if (!is_hex2(de->d_name))
            continue;
        char a[3];
        memcpy(a, de->d_name, 3);
        DIR *mid = opendir_at(be->root_fd, a);
        if (!mid) {
            if (errno == ENOENT || errno == ENOTDIR)
                continue;
            rc = -errno;
            break;
        }
        struct dirent *de2;
        while (rc == CN_OK && (de2 = readdir(mid)) != NULL) {
            if (is_hex2(de2->d_name))
                rc = leaf(be, a, de2->d_name, ctx);
        }
        closedir(mid);
    }
    closedir(top);
    return rc;
}

typedef struct list_ctx {
    cn__be_list_fn fn;
    void *ctx;
} list_ctx_t;

static cn_err_t list_one(local_be_t *be, const char *a, const char *c, void *ctx)
{
    const list_ctx_t *lc = ctx;
    return list_leaf(be->root_fd, a, c, lc->fn, lc->ctx);
}

static cn_err_t local_list(cn__backend_t *base, cn__be_list_fn fn, void *ctx)
{
    list_ctx_t lc = { fn, ctx };
    return walk_dirs((local_be_t *)base, list_one, &lc);
}

static cn_err_t mark_one(local_be_t *be, const char *a, const char *c, void *ctx)
{
    (void)ctx;
    dir_mark(be, (unsigned)strtoul(a, NULL, 16) << 8 | (unsigned)strtoul(c, NULL, 16));
    return CN_OK;
}

/* False only if d has no file: its leaf directory was neither there at open
 * nor created since by this process.  The caller holds d's digest lock, under
 * which put marks the directory, so a file of d put by this process is never
 * missed.  One another process adds while this one runs may be: the caller
 * then stores d a second time (a duplicate, never a loss). */
static bool local_may_have(cn__backend_t *base, const cn_digest_t *d)
{
    local_be_t *be = (local_be_t *)base;
    unsigned bit = dir_bit(d);
    return atomic_load_explicit(&be->dirs[bit / 64], memory_order_relaxed) >> (bit % 64) & 1;
}

static cn_err_t local_sync(cn__backend_t *base)
{
    local_be_t *be = (local_be_t *)base;
    /* One flush of the whole file system makes every rename and mkdir done
     * so far durable: the group committer's shared barrier. */
    return syncfs(be->root_fd) < 0 ? -errno : CN_OK;
}

static void local_close(cn__backend_t *base)
{
    local_be_t *be = (local_be_t *)base;
    if (!be)
        return;
    close(be->root_fd);
    free(be);
}

static const cn__backend_ops_t local_ops = {
    .put = local_put,
    .open = local_open,
    .stat = local_stat,
    .touch = local_touch,
    .remove = local_remove,
    .list = local_list,
    .may_have = local_may_have,
    .sync = local_sync,
    .close = local_close,
};

cn_err_t cn__backend_local_open(const char *root, cn__backend_t **out)
{
    CN_TRY(cn_mkdir_p(root, 0755));
    local_be_t *be = calloc(1, sizeof *be);
    if (!be)
        return -ENOMEM;
    be->root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (be->root_fd < 0) {
        cn_err_t rc = -errno;
        free(be);
        return rc;
    }
    be->base.ops = &local_ops;
    /* The leaf directories there now; if they cannot be read, every one is
     * assumed (may_have is then always true). */
    if (walk_dirs(be, mark_one, NULL) < 0) {
        cn_warn("store", "blob directories unreadable at open: every lookup probes the tree");
        for (size_t i = 0; i < sizeof be->dirs / sizeof be->dirs[0]; i++)
            atomic_init(&be->dirs[i], UINT64_MAX);
    }
    *out = &be->base;
    return CN_OK;
}
