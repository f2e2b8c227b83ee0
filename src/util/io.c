/* Whole-buffer read/write loops, directory fsync, mkdir -p and rm -r. */
#include "cairn/util.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

long long cn_read_full(int fd, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (long long)got;
}

cn_err_t cn_pread_full(int fd, void *buf, size_t n, uint64_t off, cn_err_t short_err)
{
    for (size_t got = 0; got < n;) {
        ssize_t r = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r < 0 ? -errno : short_err;
        got += (size_t)r;
    }
    return CN_OK;
}

cn_err_t cn_write_full(int fd, const void *buf, size_t n)
{
    size_t put = 0;
    while (put < n) {
        ssize_t w = write(fd, (const char *)buf + put, n - put);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        put += (size_t)w;
    }
    return CN_OK;
}

cn_err_t cn_pwrite_full(int fd, const void *buf, size_t n, uint64_t off)
{
    size_t put = 0;
    while (put < n) {
        ssize_t w = pwrite(fd, (const char *)buf + put, n - put, (off_t)(off + put));
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (w == 0)
            return -EIO; /* a file that takes nothing would be retried forever */
        put += (size_t)w;
    }
    return CN_OK;
}

cn_err_t cn_fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    cn_err_t rc = fsync(fd) < 0 ? -errno : CN_OK;
    close(fd);
    return rc;
}

cn_err_t cn_mkdir_p(const char *path, unsigned mode)
{
    char tmp[PATH_MAX];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof tmp)
        return -ENAMETOOLONG;
    memcpy(tmp, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (tmp[i] == '/' || tmp[i] == '\0') {
            char c = tmp[i];
            tmp[i] = '\0';
            if (mkdir(tmp, (mode_t)mode) < 0 && errno != EEXIST)
                return -errno;
            tmp[i] = c;
        }
    }
    return CN_OK;
}

int cn_file_tmp_beside(const char *target, char *tmp, size_t tmpsz)
{
    /* mkstemp replaces the trailing six template characters with a unique name */
    int n = snprintf(tmp, tmpsz, "%s.cairn-XXXXXX", target);
    if (n < 0 || (size_t)n >= tmpsz)
        return CN_E_INVALID;
    int fd = mkstemp(tmp);
    return fd < 0 ? -errno : fd;
}

cn_err_t cn_file_tmp_publish(int fd, const char *tmp, const char *target, unsigned mode)
{
    cn_err_t rc = fsync(fd) < 0 || fchmod(fd, (mode_t)mode) < 0 ? -errno : CN_OK;
    if (close(fd) < 0 && rc == CN_OK)
        rc = -errno;
    if (rc == CN_OK && rename(tmp, target) < 0)
        rc = -errno;
    if (rc < 0)
        unlink(tmp);
    return rc;
}

void cn_file_tmp_discard(int fd, const char *tmp)
{
    close(fd);
    unlink(tmp);
}

cn_err_t cn_file_replace(const char *target, const void *p, size_t n, unsigned mode)
{
    char tmp[PATH_MAX + 16];
    int fd = cn_file_tmp_beside(target, tmp, sizeof tmp);
    if (fd < 0)
        return fd;
    cn_err_t e = cn_write_full(fd, p, n);
    if (e < 0) {
        cn_file_tmp_discard(fd, tmp);
        return e;
    }
    return cn_file_tmp_publish(fd, tmp, target, mode);
}

cn_err_t cn_fs_space(int fd, uint64_t *avail, uint64_t *total)
{
    struct statvfs v;
    if (fstatvfs(fd, &v) != 0)
        return -errno;
    uint64_t unit = v.f_frsize ? (uint64_t)v.f_frsize : (uint64_t)v.f_bsize;
    uint64_t blocks = (uint64_t)v.f_bavail;
    *avail = unit && blocks > UINT64_MAX / unit ? UINT64_MAX : blocks * unit;
    if (total)
        *total = (uint64_t)v.f_blocks * unit;
    return CN_OK;
}

/* nftw has no argument for its callback: the first failure of a walk, per
 * thread. */
static _Thread_local int tree_errno;

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void)st, (void)flag, (void)f;
    if (remove(path) < 0 && errno != ENOENT && !tree_errno)
        tree_errno = errno;
    return 0; /* on to the rest */
}

cn_err_t cn_remove_tree(const char *path)
{
    tree_errno = 0;
    if (nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) < 0 && errno != ENOENT && !tree_errno)
        tree_errno = errno;
    return tree_errno ? -tree_errno : CN_OK;
}
