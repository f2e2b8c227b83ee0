/* The free space of the store's data directory, for Scribe's
 * instance_status (available_bytes), which a gateway's placement reads.
 * A sample, never a reservation: nothing here holds space for a writer. */
#include "store_int.h"

#include <errno.h>
#include <sys/statvfs.h>

cn_err_t cn_store_space(cn_store_t *s, uint64_t *available)
{
    *available = 0;
    /* A tiered store keeps its blobs in the S3 tier: the local disk holds
     * staging and the cache only, and its free space says nothing of the
     * room left for repositories. */
    if (cn_store_is_tiered(s))
        return CN_E_UNSUPPORTED;
    struct statvfs v;
    if (fstatvfs(s->data_fd, &v) != 0)
        return -errno;
    /* f_bavail: the blocks an unprivileged writer may still take. */
    uint64_t frsize = v.f_frsize ? (uint64_t)v.f_frsize : (uint64_t)v.f_bsize;
    uint64_t blocks = (uint64_t)v.f_bavail;
    *available = frsize && blocks > UINT64_MAX / frsize ? UINT64_MAX : blocks * frsize;
    return CN_OK;
}
