/* bench_aio_extend: does Linux native AIO let O_DIRECT writes overlap with
 * the caller when the writes extend the file?
 *
 *   bench_aio_extend [--dir DIR] [--mib N]
 *
 * Writes N MiB (default 1024) to a new file in DIR (default /var/tmp) with
 * O_DIRECT, in 1 MiB page-aligned writes through io_submit with 1, 2, 3 and
 * 4 writes in flight, then fdatasync: once on a fresh file, every write
 * extending it, and once on a file first preallocated with fallocate to its
 * final length.  For each case and depth it prints the whole run's seconds
 * (first submission to the end of fdatasync; fallocate not included) and
 * the seconds spent inside io_submit, as "name value unit" lines:
 *   aio_{fresh,prealloc}_qD_total    seconds, D writes in flight
 *   aio_{fresh,prealloc}_qD_submit   seconds of those inside io_submit
 * Why: staging a large blob asynchronously (docs/performance.md, Stop 30)
 * only overlaps the disk with the socket if io_submit returns before the
 * write is done.  On ext4 a write that extends the file completes inside
 * io_submit, so the submit time is nearly the whole run; on a preallocated
 * file it is not.  The raw syscalls are used, so no libaio is needed.  DIR
 * must be on a file system that takes O_DIRECT (tmpfs may not: exit 2).
 * The files are unlinked as soon as they are open.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (1u << 20)
#define MAX_DEPTH 4

typedef struct {
    double total_s;  /* first io_submit to the end of fdatasync */
    double submit_s; /* inside io_submit */
} result_t;

static void die(const char *what, int err)
{
    fprintf(stderr, "bench_aio_extend: %s: %s\n", what, strerror(err));
    exit(1);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Opens a new file in DIR with O_DIRECT and unlinks it at once (the run
 * leaves nothing behind, even if it dies); EINVAL, O_DIRECT refused, ends
 * the program with 2. */
static int open_direct(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/bench_aio_extend.%ld", dir, (long)getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_DIRECT | O_CLOEXEC, 0600);
    if (fd < 0 && errno == EINVAL) {
        fprintf(stderr, "bench_aio_extend: %s refuses O_DIRECT (tmpfs?); use a disk\n", dir);
        exit(2);
    }
    if (fd < 0)
        die(path, errno);
    if (unlink(path) < 0)
        die("unlink", errno);
    return fd;
}

/* One write's completion: a failure ends the program (EINVAL, O_DIRECT
 * refused at the first write, with 2). */
static void check_event(const struct io_event *ev)
{
    if (ev->res == -EINVAL) {
        fprintf(stderr, "bench_aio_extend: O_DIRECT write refused (EINVAL); use a disk\n");
        exit(2);
    }
    if (ev->res < 0)
        die("aio write", (int)-ev->res);
    if (ev->res != CHUNK)
        die("aio write", EIO); /* short: not expected of a 1 MiB aligned write */
}

/* Submits the write of chunk NO from slot SLOT's buffer; adds the time spent
 * in io_submit to R. */
static void submit(aio_context_t ctx, int fd, struct iocb *cb, char *buf, unsigned slot,
                   uint64_t no, result_t *r)
{
    memset(cb, 0, sizeof *cb);
    cb->aio_data = slot;
    cb->aio_lio_opcode = IOCB_CMD_PWRITE;
    cb->aio_fildes = (uint32_t)fd;
    cb->aio_buf = (uint64_t)(uintptr_t)buf;
    cb->aio_nbytes = CHUNK;
    cb->aio_offset = (int64_t)(no * CHUNK);
    struct iocb *list[1] = { cb };
    double t0 = now_s();
    long n = syscall(SYS_io_submit, ctx, 1L, list);
    r->submit_s += now_s() - t0;
    if (n != 1)
        die("io_submit", n < 0 ? errno : EAGAIN);
}

/* Writes CHUNKS chunks to FD from BUFS (DEPTH slots of CHUNK bytes), keeping
 * DEPTH writes in flight, then fdatasync; fills R. */
static void write_all(int fd, char *bufs, unsigned depth, uint64_t chunks, result_t *r)
{
    aio_context_t ctx = 0;
    if (syscall(SYS_io_setup, (long)depth, &ctx) < 0)
        die("io_setup", errno);
    struct iocb cbs[MAX_DEPTH];
    unsigned free_slots[MAX_DEPTH], n_free = depth;
    for (unsigned i = 0; i < depth; i++)
        free_slots[i] = i;
    uint64_t next = 0, done = 0;
    *r = (result_t){ 0 };
    double t0 = now_s();
    while (done < chunks) {
        while (n_free > 0 && next < chunks) {
            unsigned s = free_slots[--n_free];
            submit(ctx, fd, &cbs[s], bufs + (size_t)s * CHUNK, s, next++, r);
        }
        struct io_event ev[MAX_DEPTH];
        long got = syscall(SYS_io_getevents, ctx, 1L, (long)depth, ev, NULL);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            die("io_getevents", errno);
        for (long i = 0; i < got; i++) {
            check_event(&ev[i]);
            free_slots[n_free++] = (unsigned)ev[i].data;
            done++;
        }
    }
    if (fdatasync(fd) < 0)
        die("fdatasync", errno);
    r->total_s = now_s() - t0;
    syscall(SYS_io_destroy, ctx);
}

/* One case at one depth: a new file in DIR, preallocated to its final length
 * first if PREALLOC. */
static void run_case(const char *dir, char *bufs, unsigned depth, uint64_t chunks, int prealloc)
{
    int fd = open_direct(dir);
    if (prealloc && fallocate(fd, 0, 0, (off_t)(chunks * CHUNK)) < 0)
        die("fallocate", errno);
    result_t r;
    write_all(fd, bufs, depth, chunks, &r);
    close(fd);
    const char *name = prealloc ? "prealloc" : "fresh";
    printf("aio_%s_q%u_total %.3f s\n", name, depth, r.total_s);
    printf("aio_%s_q%u_submit %.3f s\n", name, depth, r.submit_s);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    const char *dir = "/var/tmp";
    long mib = 1024;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "--mib") && i + 1 < argc)
            mib = strtol(argv[++i], NULL, 10);
        else
            mib = 0;
    }
    if (mib < 1 || mib > (1l << 20)) {
        fprintf(stderr, "usage: bench_aio_extend [--dir DIR] [--mib N]\n");
        return 2;
    }
    void *bufs;
    int rc = posix_memalign(&bufs, 4096, (size_t)MAX_DEPTH * CHUNK);
    if (rc)
        die("posix_memalign", rc);
    for (size_t i = 0; i < (size_t)MAX_DEPTH * CHUNK; i++)
        ((unsigned char *)bufs)[i] = (unsigned char)(i * 2654435761u >> 13);
    for (int prealloc = 0; prealloc < 2; prealloc++)
        for (unsigned depth = 1; depth <= MAX_DEPTH; depth++)
            run_case(dir, bufs, depth, (uint64_t)mib, prealloc);
    free(bufs);
    return 0;
}
