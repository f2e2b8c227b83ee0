/* faultshim: an LD_PRELOAD library that makes chosen file-system calls fail,
 * for the fault tests (tests/proof/test_faults.py).  Test-only; never linked
 * into cairn.
 *
 * CN_FAULT_CTL names a control file, read again whenever it changes (size,
 * mtime or inode), so a test turns a fault on and off while the server runs.
 * Absent, empty or "off": no fault.  Otherwise lines of key=value:
 *   ops=write,fsync,fdatasync,rename   calls to fail (write covers write,
 *                                      pwrite, pwrite64, writev, pwritev;
 *                                      rename covers rename, renameat, renameat2)
 *   errno=EIO|ENOSPC|EDQUOT|EROFS      the error returned (default EIO)
 *   pattern=GLOB                       fnmatch(3) on the file's path (for
 *                                      rename: either path); default "*"
 *   after=N                            let the first N matching calls pass
 *   times=M                            fail M calls, then pass (0: every one)
 * The counters restart whenever the file changes.  Each injected failure
 * increments a decimal count written to "<CN_FAULT_CTL>.hits", so a test can
 * tell that its fault was really met.
 *
 * It must never change behaviour when the control file says "off", and never
 * recurse: its own I/O goes through raw syscalls.
 */
/* The interposed names must be the plain ones (write, pwrite64 distinct), so
 * no large-file aliasing; and they must be exported despite the project's
 * -fvisibility=hidden. */
#undef _FILE_OFFSET_BITS
#define SHIM_API __attribute__((visibility("default")))

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define OP_WRITE 1u
#define OP_FSYNC 2u
#define OP_FDATASYNC 4u
#define OP_RENAME 8u

typedef struct {
    bool active;
    unsigned ops;
    int err;
    char pattern[1024];
    uint64_t after, times;
} fault_cfg_t;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static fault_cfg_t g_cfg;
static struct stat g_seen; /* identity of the control file last parsed */
static bool g_seen_valid;
static uint64_t g_matched, g_failed, g_hits_total;

static void parse_line(fault_cfg_t *c, char *line)
{
    char *eq = strchr(line, '=');
    if (!eq)
        return;
    *eq = 0;
    const char *k = line, *v = eq + 1;
    if (!strcmp(k, "ops")) {
        c->ops = 0;
        if (strstr(v, "write"))
            c->ops |= OP_WRITE;
        if (strstr(v, "fdatasync"))
            c->ops |= OP_FDATASYNC;
        /* "fsync" as its own word, not the tail of "fdatasync" */
        for (const char *p = v; (p = strstr(p, "fsync")) != NULL; p += 5)
            if (p == v || p[-1] == ',')
                c->ops |= OP_FSYNC;
        if (strstr(v, "rename"))
            c->ops |= OP_RENAME;
    } else if (!strcmp(k, "errno")) {
        c->err = !strcmp(v, "ENOSPC")   ? ENOSPC
                 : !strcmp(v, "EDQUOT") ? EDQUOT
                 : !strcmp(v, "EROFS")  ? EROFS
                                        : EIO;
    } else if (!strcmp(k, "pattern")) {
        snprintf(c->pattern, sizeof c->pattern, "%s", v);
    } else if (!strcmp(k, "after")) {
        c->after = strtoull(v, NULL, 10);
    } else if (!strcmp(k, "times")) {
        c->times = strtoull(v, NULL, 10);
    }
}

/* Re-reads the control file if it changed.  Called with g_mu held. */
static void reload_locked(const char *ctl)
{
    struct stat st;
    if (syscall(SYS_newfstatat, AT_FDCWD, ctl, &st, 0) != 0) {
        g_cfg.active = false;
        g_seen_valid = false;
        return;
    }
    if (g_seen_valid && st.st_ino == g_seen.st_ino && st.st_size == g_seen.st_size &&
        st.st_mtim.tv_sec == g_seen.st_mtim.tv_sec && st.st_mtim.tv_nsec == g_seen.st_mtim.tv_nsec)
        return;
    g_seen = st;
    g_seen_valid = true;
    g_matched = g_failed = 0;
    fault_cfg_t c = { .err = EIO, .pattern = "*" };
    char buf[4096];
    long n = -1;
    int fd = (int)syscall(SYS_openat, AT_FDCWD, ctl, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        n = syscall(SYS_read, fd, buf, sizeof buf - 1);
        syscall(SYS_close, fd);
    }
    if (n <= 0) {
        g_cfg = c;
        return;
    }
    buf[n] = 0;
    if (strncmp(buf, "off", 3) != 0) {
        char *save = NULL;
        for (char *line = strtok_r(buf, "\r\n", &save); line; line = strtok_r(NULL, "\r\n", &save))
            parse_line(&c, line);
        c.active = c.ops != 0;
    }
    g_cfg = c;
}

static void write_hits(const char *ctl, uint64_t hits)
{
    char path[1100], num[32];
    if ((size_t)snprintf(path, sizeof path, "%s.hits", ctl) >= sizeof path)
        return;
    int len = snprintf(num, sizeof num, "%llu\n", (unsigned long long)hits);
    int fd =
        (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    (void)!syscall(SYS_write, fd, num, (size_t)len);
    syscall(SYS_close, fd);
}

/* Decides whether this call fails; returns the errno to fail with, or 0. */
static int should_fail(unsigned op, const char *path1, const char *path2)
{
    const char *ctl = getenv("CN_FAULT_CTL");
    if (!ctl || !*ctl)
        return 0;
    int err = 0;
    pthread_mutex_lock(&g_mu);
    reload_locked(ctl);
    if (g_cfg.active && (g_cfg.ops & op) &&
        ((path1 && fnmatch(g_cfg.pattern, path1, 0) == 0) ||
         (path2 && fnmatch(g_cfg.pattern, path2, 0) == 0))) {
        g_matched++;
        if (g_matched > g_cfg.after && (g_cfg.times == 0 || g_failed < g_cfg.times)) {
            g_failed++;
            g_hits_total++;
            err = g_cfg.err;
            write_hits(ctl, g_hits_total);
        }
    }
    pthread_mutex_unlock(&g_mu);
    return err;
}

static int fd_fault(unsigned op, int fd)
{
    const char *ctl = getenv("CN_FAULT_CTL");
    if (!ctl || !*ctl)
        return 0;
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0)
        return 0;
    path[n] = 0;
    if (path[0] != '/') /* sockets, pipes, anonymous files */
        return 0;
    return should_fail(op, path, NULL);
}

static char *abs_path(int dirfd, const char *p, char *out, size_t cap)
{
    if (p[0] == '/' || dirfd == AT_FDCWD) {
        if (p[0] == '/') {
            snprintf(out, cap, "%s", p);
        } else {
            char cwd[2048];
            if (!getcwd(cwd, sizeof cwd))
                cwd[0] = 0;
            snprintf(out, cap, "%s/%s", cwd, p);
        }
        return out;
    }
    char link[64], dir[2048];
    snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
    ssize_t n = readlink(link, dir, sizeof dir - 1);
    if (n <= 0)
        return NULL;
    dir[n] = 0;
    snprintf(out, cap, "%s/%s", dir, p);
    return out;
}

typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);
typedef ssize_t (*pwrite64_fn)(int, const void *, size_t, off_t);
typedef ssize_t (*writev_fn)(int, const struct iovec *, int);
typedef ssize_t (*pwritev_fn)(int, const struct iovec *, int, off_t);
typedef int (*fsync_fn)(int);
typedef int (*fdatasync_fn)(int);
typedef int (*rename_fn)(const char *, const char *);
typedef int (*renameat_fn)(int, const char *, int, const char *);
typedef int (*renameat2_fn)(int, const char *, int, const char *, unsigned);

/* The next definition of a symbol (libc's).  dlsym returns an object pointer;
 * memcpy converts it without the cast ISO C forbids. */
static void *next_sym(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

#define REAL(name, type)                      \
    type real_##name;                         \
    do {                                      \
        void *p_ = next_sym(#name);           \
        memcpy(&real_##name, &p_, sizeof p_); \
    } while (0)

#define FAIL_FD(op, fd)            \
    do {                           \
        int e_ = fd_fault(op, fd); \
        if (e_) {                  \
            errno = e_;            \
            return -1;             \
        }                          \
    } while (0)

SHIM_API ssize_t write(int fd, const void *buf, size_t n)
{
    REAL(write, write_fn);
    FAIL_FD(OP_WRITE, fd);
    return real_write(fd, buf, n);
}

SHIM_API ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    REAL(pwrite, pwrite_fn);
    FAIL_FD(OP_WRITE, fd);
    return real_pwrite(fd, buf, n, off);
}

SHIM_API ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    REAL(pwrite64, pwrite64_fn);
    FAIL_FD(OP_WRITE, fd);
    return real_pwrite64(fd, buf, n, off);
}

SHIM_API ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    REAL(writev, writev_fn);
    FAIL_FD(OP_WRITE, fd);
    return real_writev(fd, iov, cnt);
}

SHIM_API ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
    REAL(pwritev, pwritev_fn);
    FAIL_FD(OP_WRITE, fd);
    return real_pwritev(fd, iov, cnt, off);
}

SHIM_API int fsync(int fd)
{
    REAL(fsync, fsync_fn);
    FAIL_FD(OP_FSYNC, fd);
    return real_fsync(fd);
}

SHIM_API int fdatasync(int fd)
{
    REAL(fdatasync, fdatasync_fn);
    FAIL_FD(OP_FDATASYNC, fd);
    return real_fdatasync(fd);
}

static int rename_fault(int olddir, const char *oldp, int newdir, const char *newp)
{
    if (!getenv("CN_FAULT_CTL"))
        return 0;
    char a[4096], b[4096];
    return should_fail(OP_RENAME, abs_path(olddir, oldp, a, sizeof a),
                       abs_path(newdir, newp, b, sizeof b));
}

SHIM_API int rename(const char *oldp, const char *newp)
{
    REAL(rename, rename_fn);
    int e = rename_fault(AT_FDCWD, oldp, AT_FDCWD, newp);
    if (e) {
        errno = e;
        return -1;
    }
    return real_rename(oldp, newp);
}

SHIM_API int renameat(int od, const char *oldp, int nd, const char *newp)
{
    REAL(renameat, renameat_fn);
    int e = rename_fault(od, oldp, nd, newp);
    if (e) {
        errno = e;
        return -1;
    }
    return real_renameat(od, oldp, nd, newp);
}

SHIM_API int renameat2(int od, const char *oldp, int nd, const char *newp, unsigned flags)
{
    REAL(renameat2, renameat2_fn);
    int e = rename_fault(od, oldp, nd, newp);
    if (e) {
        errno = e;
        return -1;
    }
    return real_renameat2(od, oldp, nd, newp, flags);
}
