/* The data directory's spacer (docs/store.md, "Free space"): SPACER_BYTES
 * allocated in DATA/space.spacer while its file system has room, and let
 * go at start when something else filled the disk, so that cairnd can start
 * at all (SQLite must create its -wal and -shm files to open the metadata)
 * and an operator can delete through it.  It must never be created when
 * the disk is short, and is let go only before the services open: while
 * they run, the store's reserve keeps cairn's own writes off the last of
 * the disk. */
#include "cairnd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "cairn/util.h"

#define SPACER_NAME "space.spacer"
#define SPACER_BYTES (8ull << 20)

/* The free bytes of dir's file system, or UINT64_MAX when not known. */
static uint64_t free_bytes(const char *dir)
{
    uint64_t avail = UINT64_MAX;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0 && cn_fs_space(fd, &avail, NULL) < 0)
        avail = UINT64_MAX;
    if (fd >= 0)
        close(fd);
    return avail;
}

void cn__spacer_release_if_full(const char *data_dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/" SPACER_NAME, data_dir);
    uint64_t avail = free_bytes(data_dir);
    if (avail >= SPACER_BYTES || unlink(path) < 0)
        return;
    cn_warn("cairnd",
            "the data file system was full (%llu bytes free): released the %llu MiB spacer "
            "so that the server can start; reads and deletes work, new blobs are refused "
            "until space is freed",
            (unsigned long long)avail, (unsigned long long)(SPACER_BYTES >> 20));
}

void cn__spacer_ensure(const char *data_dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/" SPACER_NAME, data_dir);
    if (access(path, F_OK) == 0 || free_bytes(data_dir) < 4 * SPACER_BYTES)
        return;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    int e = posix_fallocate(fd, 0, (off_t)SPACER_BYTES);
    if (e == 0 && fsync(fd) < 0)
        e = errno;
    close(fd);
    if (e != 0) {
        (void)unlink(path); /* not the room it promises: none */
        return;
    }
    (void)cn_fsync_dir(data_dir);
}
