/* Words of a file shared by every process of a data dir: the mapping and its
 * locking rule, for the write-generation tables (objects, identity).
 *
 * The file is zeroed only by a process alone with it (an exclusive flock
 * taken without waiting), and every user then holds a shared flock until it
 * closes: so a table left with a writer marked in flight by a process that
 * died is cleared once nobody is left to rely on it.  This file must never
 * zero a table another process has mapped. */
#include "cairn/util.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Zeroes fd's file when this process is alone with it, then takes the shared
 * lock every user holds. */
static cn_err_t words_lock(int fd, off_t bytes)
{
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
        if (ftruncate(fd, 0) < 0 || ftruncate(fd, bytes) < 0)
            return -errno;
    } else if (errno != EWOULDBLOCK) {
        return -errno;
    }
    /* Converting may let another opener in between: it is alone with the
     * file too and zeroes a table nobody used yet. */
    if (flock(fd, LOCK_SH) < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) < 0)
        return -errno;
    return st.st_size == bytes ? 0 : CN_E_CORRUPT;
}

cn_err_t cn_shared_words_open(const char *path, size_t nwords, int *fd, void **words)
{
    *words = NULL;
    *fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (*fd < 0)
        return -errno;
    size_t bytes = nwords * sizeof(uint64_t);
    cn_err_t err = words_lock(*fd, (off_t)bytes);
    void *m = err < 0 ? MAP_FAILED : mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
    if (err >= 0 && m == MAP_FAILED)
        err = -errno;
    if (err < 0) {
        close(*fd);
        *fd = -1;
        return err;
    }
    *words = m;
    return 0;
}

void cn_shared_words_close(int fd, void *words, size_t nwords)
{
    if (words)
        munmap(words, nwords * sizeof(uint64_t));
    if (fd >= 0)
        close(fd); /* drops the lock */
}
