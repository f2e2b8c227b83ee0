/* The SQLite engine's VFS: the default one, except that a writer's frames go
 * to meta.db-wal in one write(2) per commit instead of two per page.
 *
 * SQLite appends a transaction's frames to the WAL with one write for each
 * frame's 24-byte header and one for its page: a 4 KiB PUT's group commit
 * made about twenty such calls per PUT, each a system call on the one
 * writer, for bytes that land in the page cache side by side.  Here a WAL
 * file's writes that follow one another are gathered in a buffer and handed
 * to the file in one call.
 *
 * Invariants (they keep engine_sqlite.c's 1-3 true):
 *  B1. The file's bytes, seen by any read or sync through SQLite, are those
 *      of the plain VFS: every operation other than a contiguous append
 *      (a read, a write elsewhere, sync, truncate, size, file control,
 *      close) first writes what is gathered, in write order.
 *  B2. A commit frame's page (its header names the database size, nonzero
 *      only on the frame that commits) is written through before its xWrite
 *      returns, with that xWrite reporting any failure: the COMMIT fails as
 *      it would have, and no frame of a commit is still gathered once
 *      SQLite publishes it in the WAL index, where other connections (with
 *      their own descriptors) look for frames to read, or once COMMIT
 *      returns, after which meta's group sync may fdatasync the file
 *      through another descriptor.
 *  B3. Only files SQLite opens as a WAL are wrapped; the database, its
 *      shared-memory index and every other file use the default VFS's
 *      methods unchanged.
 * A write reported as done while gathered can fail later only at the next
 * operation, which then reports it; until a commit frame, no other
 * connection may read those frames (they lie past the WAL index's end).
 */
#include "engine.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

/* Gathered bytes at most: one write.  The default VFS writes at most
 * 128 KiB - 1 bytes per system call and reports a longer write that the
 * kernel took whole as SQLITE_FULL (its seekAndWrite masks the length). */
#define WB_CAP ((int)(96u << 10))
#define WB_FRAME_HDR 24 /* SQLite's WAL frame header */

typedef struct wb_file {
    sqlite3_file base;
    sqlite3_file *real; /* the default VFS's file, after this struct */
    unsigned char *buf; /* gathered bytes (allocated on the first write) */
    int len;            /* of buf */
    sqlite3_int64 off;  /* the file offset of buf[0] */
    bool commit_next;   /* the last header written was a commit frame's */
} wb_file_t;

static sqlite3_vfs *wb_real; /* the default VFS */
static sqlite3_vfs wb_vfs;

/* Writes what is gathered (B1); SQLite's own error on failure. */
static int wb_flush(wb_file_t *f)
{
    if (f->len == 0)
        return SQLITE_OK;
    int rc = f->real->pMethods->xWrite(f->real, f->buf, f->len, f->off);
    f->len = 0;
    return rc;
}

static int wb_close(sqlite3_file *pf)
{
    wb_file_t *f = (wb_file_t *)pf;
    int rc = wb_flush(f);
    int rc2 = f->real->pMethods->xClose(f->real);
    free(f->buf);
    f->buf = NULL;
    return rc != SQLITE_OK ? rc : rc2;
}

static int wb_read(sqlite3_file *pf, void *p, int amt, sqlite3_int64 off)
{
    wb_file_t *f = (wb_file_t *)pf;
    int rc = wb_flush(f);
    return rc != SQLITE_OK ? rc : f->real->pMethods->xRead(f->real, p, amt, off);
}

/* Appends to the gathered bytes when the write continues them and fits;
 * otherwise writes them, then this one through.  A frame header's commit
 * mark makes the next write (its page) go through at once (B2). */
static int wb_write(sqlite3_file *pf, const void *p, int amt, sqlite3_int64 off)
{
    wb_file_t *f = (wb_file_t *)pf;
    bool commit = f->commit_next;
    f->commit_next = false;
    if (amt == WB_FRAME_HDR) {
        const unsigned char *h = p;
        f->commit_next = (h[4] | h[5] | h[6] | h[7]) != 0;
    }
    if (f->len > 0 && (off != f->off + f->len || f->len + amt > WB_CAP)) {
        int rc = wb_flush(f);
        if (rc != SQLITE_OK)
            return rc;
    }
    if (!f->buf && amt <= WB_CAP)
        f->buf = malloc((size_t)WB_CAP);
    if (!f->buf || amt > WB_CAP)
        return f->real->pMethods->xWrite(f->real, p, amt, off);
    if (f->len == 0)
        f->off = off;
    memcpy(f->buf + f->len, p, (size_t)amt);
    f->len += amt;
    return commit ? wb_flush(f) : SQLITE_OK;
}

static int wb_truncate(sqlite3_file *pf, sqlite3_int64 size)
{
    wb_file_t *f = (wb_file_t *)pf;
    int rc = wb_flush(f);
    return rc != SQLITE_OK ? rc : f->real->pMethods->xTruncate(f->real, size);
}

static int wb_sync(sqlite3_file *pf, int flags)
{
    wb_file_t *f = (wb_file_t *)pf;
    int rc = wb_flush(f);
    return rc != SQLITE_OK ? rc : f->real->pMethods->xSync(f->real, flags);
}

static int wb_size(sqlite3_file *pf, sqlite3_int64 *size)
{
    wb_file_t *f = (wb_file_t *)pf;
    int rc = wb_flush(f);
    return rc != SQLITE_OK ? rc : f->real->pMethods->xFileSize(f->real, size);
}

static int wb_lock(sqlite3_file *pf, int lock)
{
    wb_file_t *f = (wb_file_t *)pf;
    return f->real->pMethods->xLock(f->real, lock);
}

static int wb_unlock(sqlite3_file *pf, int lock)
{
    wb_file_t *f = (wb_file_t *)pf;
    return f->real->pMethods->xUnlock(f->real, lock);
}

static int wb_reserved(sqlite3_file *pf, int *out)
{
    wb_file_t *f = (wb_file_t *)pf;
    return f->real->pMethods->xCheckReservedLock(f->real, out);
}

static int wb_fcntl(sqlite3_file *pf, int op, void *arg)
{
    wb_file_t *f = (wb_file_t *)pf;
    int rc = wb_flush(f);
    return rc != SQLITE_OK ? rc : f->real->pMethods->xFileControl(f->real, op, arg);
}

static int wb_sector(sqlite3_file *pf)
{
    wb_file_t *f = (wb_file_t *)pf;
    return f->real->pMethods->xSectorSize(f->real);
}

static int wb_devchar(sqlite3_file *pf)
{
    wb_file_t *f = (wb_file_t *)pf;
    return f->real->pMethods->xDeviceCharacteristics(f->real);
}

/* A WAL is never mapped nor given shared memory: version 1 methods. */
static sqlite3_io_methods wb_methods = {
    .iVersion = 1,
    .xClose = wb_close,
    .xRead = wb_read,
    .xWrite = wb_write,
    .xTruncate = wb_truncate,
    .xSync = wb_sync,
    .xFileSize = wb_size,
    .xLock = wb_lock,
    .xUnlock = wb_unlock,
    .xCheckReservedLock = wb_reserved,
    .xFileControl = wb_fcntl,
    .xSectorSize = wb_sector,
    .xDeviceCharacteristics = wb_devchar,
};

/* Every file but a WAL is opened by the default VFS into pf itself (B3). */
static int wb_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *pf, int flags, int *out_flags)
{
    (void)vfs;
    if (!(flags & SQLITE_OPEN_WAL))
        return wb_real->xOpen(wb_real, name, pf, flags, out_flags);
    wb_file_t *f = (wb_file_t *)pf;
    memset(f, 0, sizeof *f);
    f->real = (sqlite3_file *)(f + 1);
    int rc = wb_real->xOpen(wb_real, name, f->real, flags, out_flags);
    if (rc == SQLITE_OK)
        f->base.pMethods = &wb_methods;
    return rc;
}

static int wb_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
    (void)vfs;
    return wb_real->xDelete(wb_real, name, sync_dir);
}

static int wb_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
    (void)vfs;
    return wb_real->xAccess(wb_real, name, flags, out);
}

static int wb_fullpath(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
    (void)vfs;
    return wb_real->xFullPathname(wb_real, name, n, out);
}

static int wb_random(sqlite3_vfs *vfs, int n, char *out)
{
    (void)vfs;
    return wb_real->xRandomness(wb_real, n, out);
}

static int wb_sleep(sqlite3_vfs *vfs, int us)
{
    (void)vfs;
    return wb_real->xSleep(wb_real, us);
}

static int wb_time(sqlite3_vfs *vfs, double *out)
{
    (void)vfs;
    return wb_real->xCurrentTime(wb_real, out);
}

static int wb_lasterr(sqlite3_vfs *vfs, int n, char *out)
{
    (void)vfs;
    return wb_real->xGetLastError(wb_real, n, out);
}

static void *wb_dlopen(sqlite3_vfs *vfs, const char *name)
{
    (void)vfs;
    return wb_real->xDlOpen(wb_real, name);
}

static void wb_dlerror(sqlite3_vfs *vfs, int n, char *out)
{
    (void)vfs;
    wb_real->xDlError(wb_real, n, out);
}

static void (*wb_dlsym(sqlite3_vfs *vfs, void *h, const char *sym))(void)
{
    (void)vfs;
    return wb_real->xDlSym(wb_real, h, sym);
}

static void wb_dlclose(sqlite3_vfs *vfs, void *h)
{
    (void)vfs;
    wb_real->xDlClose(wb_real, h);
}

static int wb_time64(sqlite3_vfs *vfs, sqlite3_int64 *out)
{
    (void)vfs;
    return wb_real->xCurrentTimeInt64(wb_real, out);
}

const char *cn__sq_walbuf_vfs(void)
{
    if (wb_vfs.zName)
        return wb_vfs.zName;
    wb_real = sqlite3_vfs_find(NULL);
    if (!wb_real || wb_real->iVersion < 2)
        return NULL;
    size_t sz = sizeof(wb_file_t) + (size_t)wb_real->szOsFile;
    wb_vfs = (sqlite3_vfs){
        .iVersion = 2,
        .szOsFile = (int)sz,
        .mxPathname = wb_real->mxPathname,
        .zName = "cn-walbuf",
        .xOpen = wb_open,
        .xDelete = wb_delete,
        .xAccess = wb_access,
        .xFullPathname = wb_fullpath,
        .xDlOpen = wb_dlopen,
        .xDlError = wb_dlerror,
        .xDlSym = wb_dlsym,
        .xDlClose = wb_dlclose,
        .xRandomness = wb_random,
        .xSleep = wb_sleep,
        .xCurrentTime = wb_time,
        .xGetLastError = wb_lasterr,
        .xCurrentTimeInt64 = wb_time64,
    };
    if (sqlite3_vfs_register(&wb_vfs, 0) != SQLITE_OK) {
        wb_vfs.zName = NULL;
        return NULL;
    }
    return wb_vfs.zName;
}
