/* The SQLite metadata engine: DATA/meta.db in WAL mode.
 *
 * Durability invariants (the group commit lives in meta.c; this file supplies
 * the two halves):
 *  1. The writer runs synchronous=NORMAL: COMMIT appends the transaction's
 *     frames (ending in a commit frame) to meta.db-wal with write(2) only,
 *     gathered into one write per commit by walbuf.c's VFS, which writes
 *     them all before the commit frame's write returns (B1, B2 there).
 *  2. sync() fdatasyncs meta.db-wal.  Every commit whose COMMIT returned
 *     before sync() started is then on stable storage, because its frames
 *     were written to the same file earlier.  A checkpoint (run by SQLite
 *     inside a later COMMIT) syncs the WAL before copying frames into
 *     meta.db and syncs meta.db before the WAL may be reused, so a frame is
 *     only ever overwritten once its content is durable in the database.
 *  3. When sync() (re)opens the WAL file it fsyncs the directory too, so the
 *     WAL's directory entry is durable before any commit is acknowledged.
 * Readers open with query_only so a read transaction can never write.
 * foreign_keys is on because PostgreSQL always enforces them.
 */
#include "engine.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "cairn/util.h"

struct cn__meta_db {
    char *path;
    char *wal_path;
    char *dir;
    unsigned busy_ms;
    pthread_mutex_t wal_mu; /* guards wal_fd */
    int wal_fd;
    dev_t wal_dev;
    ino_t wal_ino;
};

/* The transaction-control statements, compiled once per connection: every
 * metadata operation runs two or three of them, and sqlite3_exec would parse
 * each one again. */
enum {
    TC_BEGIN,
    TC_BEGIN_IMMEDIATE,
    TC_COMMIT,
    TC_ROLLBACK,
    TC_SAVEPOINT,
    TC_RELEASE,
    TC_ROLLBACK_TO,
    TC_COUNT
};
static const char *const tc_sql[TC_COUNT] = { "BEGIN",
                                              "BEGIN IMMEDIATE",
                                              "COMMIT",
                                              "ROLLBACK",
                                              "SAVEPOINT cn_member",
                                              "RELEASE cn_member",
                                              "ROLLBACK TO cn_member" };

struct cn__meta_conn {
    cn__meta_db_t *db;
    sqlite3 *h;
    bool writer;
    sqlite3_stmt *tc[TC_COUNT];
};

/* The engine's statement handle is the sqlite3_stmt itself. */
#define RAW(r) ((sqlite3_stmt *)(void *)(r))

static cn_err_t map_rc(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_OK:
    case SQLITE_DONE: return CN_META_DONE;
    case SQLITE_ROW: return CN_META_ROW;
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return CN_E_DB_LOCKED;
    case SQLITE_CONSTRAINT:
        if (rc == SQLITE_CONSTRAINT_UNIQUE || rc == SQLITE_CONSTRAINT_PRIMARYKEY)
            return CN_E_EXISTS;
        return CN_E_INVALID;
    case SQLITE_NOMEM: return -ENOMEM;
    case SQLITE_FULL: return -ENOSPC;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: return CN_E_CORRUPT;
    case SQLITE_RANGE:
    case SQLITE_MISUSE:
    case SQLITE_TOOBIG: return CN_E_INVALID;
    case SQLITE_PERM: return -EACCES;
    case SQLITE_CANTOPEN: return -ENOENT;
    default: return CN_E_DB;
    }
}

static char *dup_cat(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *s = malloc(la + lb + 1);
    if (s) {
        memcpy(s, a, la);
        memcpy(s + la, b, lb + 1);
    }
    return s;
}

static void sq_db_close(cn__meta_db_t *db)
{
    if (!db)
        return;
    if (db->wal_fd >= 0)
        close(db->wal_fd);
    pthread_mutex_destroy(&db->wal_mu);
    free(db->path);
    free(db->wal_path);
    free(db->dir);
    free(db);
}

/* Process-wide SQLite settings, before the library initialises: no memory
 * statistics (they put one global mutex around every allocation, which every
 * reader connection contends for).  Connections are opened NOMUTEX, as meta.c
 * never lets two threads use one at a time. */
static pthread_once_t sq_once = PTHREAD_ONCE_INIT;
static const char *sq_vfs; /* walbuf.c's, or NULL for the default */
static void sq_configure(void)
{
    (void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); /* MISUSE if already initialised */
    sq_vfs = cn__sq_walbuf_vfs();
}

static cn_err_t sq_db_open(const char *target, const cn_meta_opts_t *opts, cn__meta_db_t **out)
{
    pthread_once(&sq_once, sq_configure);
    cn__meta_db_t *db = calloc(1, sizeof *db);
    if (!db)
        return -ENOMEM;
    db->wal_fd = -1;
    pthread_mutex_init(&db->wal_mu, NULL);
    db->busy_ms = opts->busy_timeout_ms;
    db->path = dup_cat(target, "");
    db->wal_path = dup_cat(target, "-wal");
    db->dir = dup_cat(target, "");
    if (!db->path || !db->wal_path || !db->dir) {
        sq_db_close(db);
        return -ENOMEM;
    }
    char *slash = strrchr(db->dir, '/');
    if (slash == db->dir)
        slash[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        strcpy(db->dir, ".");
    /* Create the file ourselves so it (and the -wal and -shm files SQLite
     * derives from its mode) is 0600: it holds sealed token secrets. */
    int fd = open(db->path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        cn_err_t e = -errno;
        sq_db_close(db);
        return e;
    }
    close(fd);
    *out = db;
    return 0;
}

/* Opens (or re-opens after the file was replaced) the WAL descriptor.
 * Returns 0 with wal_fd == -1 if there is no WAL file: nothing to sync. */
static cn_err_t wal_fd_locked(cn__meta_db_t *db)
{
    struct stat st;
    if (stat(db->wal_path, &st) != 0) {
        if (errno != ENOENT)
            return -errno;
        if (db->wal_fd >= 0) {
            close(db->wal_fd);
            db->wal_fd = -1;
        }
        return 0;
    }
    if (db->wal_fd >= 0 && st.st_dev == db->wal_dev && st.st_ino == db->wal_ino)
        return 0;
    if (db->wal_fd >= 0)
        close(db->wal_fd);
    db->wal_fd = open(db->wal_path, O_RDONLY | O_CLOEXEC);
    if (db->wal_fd < 0)
        return errno == ENOENT ? 0 : -errno;
    if (fstat(db->wal_fd, &st) != 0) {
        cn_err_t e = -errno;
        close(db->wal_fd);
        db->wal_fd = -1;
        return e;
    }
    db->wal_dev = st.st_dev;
    db->wal_ino = st.st_ino;
    return cn_fsync_dir(db->dir);
}

static cn_err_t sq_sync(cn__meta_db_t *db)
{
    pthread_mutex_lock(&db->wal_mu);
    cn_err_t e = wal_fd_locked(db);
    if (e == 0 && db->wal_fd >= 0 && fdatasync(db->wal_fd) != 0)
        e = -errno;
    pthread_mutex_unlock(&db->wal_mu);
    return e;
}

static cn_err_t conn_pragmas(cn__meta_conn_t *c)
{
    const char *common = "PRAGMA foreign_keys=ON;"
                         "PRAGMA temp_store=MEMORY;";
    int rc = sqlite3_exec(c->h, common, NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return map_rc(sqlite3_extended_errcode(c->h));
    if (c->writer) {
        /* journal_mode returns a row; read it to be sure WAL took. */
        sqlite3_stmt *st = NULL;
        rc = sqlite3_prepare_v2(c->h, "PRAGMA journal_mode=WAL", -1, &st, NULL);
        if (rc != SQLITE_OK)
            return map_rc(rc);
        rc = sqlite3_step(st);
        bool wal = rc == SQLITE_ROW && sqlite3_column_text(st, 0) &&
                   strcmp((const char *)sqlite3_column_text(st, 0), "wal") == 0;
        cn_err_t e = rc == SQLITE_ROW ? 0 : map_rc(sqlite3_extended_errcode(c->h));
        sqlite3_finalize(st);
        if (e < 0)
            return e;
        if (!wal)
            return CN_E_DB;
        rc = sqlite3_exec(c->h, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL);
    } else {
        rc = sqlite3_exec(c->h, "PRAGMA query_only=1", NULL, NULL, NULL);
    }
    return rc == SQLITE_OK ? 0 : map_rc(sqlite3_extended_errcode(c->h));
}

static void sq_conn_close(cn__meta_conn_t *c)
{
    if (!c)
        return;
    for (int i = 0; i < TC_COUNT; i++)
        sqlite3_finalize(c->tc[i]);
    sqlite3_close_v2(c->h);
    free(c);
}

static cn_err_t sq_conn_open(cn__meta_db_t *db, bool writer, cn__meta_conn_t **out)
{
    cn__meta_conn_t *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->db = db;
    c->writer = writer;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
    if (writer)
        flags |= SQLITE_OPEN_CREATE;
    int rc = sqlite3_open_v2(db->path, &c->h, flags, sq_vfs);
    if (rc != SQLITE_OK) {
        cn_err_t e = map_rc(c->h ? sqlite3_extended_errcode(c->h) : rc);
        sq_conn_close(c);
        return e < 0 ? e : CN_E_DB;
    }
    sqlite3_extended_result_codes(c->h, 1);
    sqlite3_busy_timeout(c->h, (int)db->busy_ms);
    cn_err_t e = conn_pragmas(c);
    if (e < 0) {
        sq_conn_close(c);
        return e;
    }
    *out = c;
    return 0;
}

static cn_err_t sq_exec(cn__meta_conn_t *c, const char *sql)
{
    int rc = sqlite3_exec(c->h, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? 0 : map_rc(sqlite3_extended_errcode(c->h));
}

/* Runs transaction-control statement i (prepared on first use). */
static cn_err_t sq_tc(cn__meta_conn_t *c, int i)
{
    if (!c->tc[i]) {
        int rc =
            sqlite3_prepare_v3(c->h, tc_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &c->tc[i], NULL);
        if (rc != SQLITE_OK) {
            c->tc[i] = NULL;
            return map_rc(sqlite3_extended_errcode(c->h));
        }
    }
    int rc = sqlite3_step(c->tc[i]);
    cn_err_t e = rc == SQLITE_DONE ? 0 : map_rc(sqlite3_extended_errcode(c->h));
    sqlite3_reset(c->tc[i]);
    return e;
}

static cn_err_t sq_begin(cn__meta_conn_t *c, cn_meta_mode_t mode)
{
    /* IMMEDIATE takes the write lock up front, so a writer never fails later
     * with a snapshot conflict; the busy handler bounds the wait for it. */
    return sq_tc(c, mode == CN_META_WRITE ? TC_BEGIN_IMMEDIATE : TC_BEGIN);
}

static cn_err_t sq_commit(cn__meta_conn_t *c)
{
    cn_err_t e = sq_tc(c, TC_COMMIT);
    if (e < 0 && !sqlite3_get_autocommit(c->h))
        (void)sq_tc(c, TC_ROLLBACK);
    return e;
}

static void sq_rollback(cn__meta_conn_t *c)
{
    if (!sqlite3_get_autocommit(c->h))
        (void)sq_tc(c, TC_ROLLBACK);
}

/* The group commit's member savepoint (group.c).  The writer's transaction
 * was begun with BEGIN IMMEDIATE, so RELEASE never commits: it only merges
 * the member's changes into the open transaction. */
static cn_err_t sq_savepoint(cn__meta_conn_t *c)
{
    return sq_tc(c, TC_SAVEPOINT);
}

static cn_err_t sq_release(cn__meta_conn_t *c)
{
    return sq_tc(c, TC_RELEASE);
}

static cn_err_t sq_rollback_to(cn__meta_conn_t *c)
{
    cn_err_t e = sq_tc(c, TC_ROLLBACK_TO);
    return e < 0 ? e : sq_tc(c, TC_RELEASE);
}

/* SQLite rolls a whole transaction back on some errors (SQLITE_FULL,
 * SQLITE_IOERR, SQLITE_NOMEM, ...); autocommit is then on again. */
static bool sq_in_txn(cn__meta_conn_t *c)
{
    return !sqlite3_get_autocommit(c->h);
}

static int64_t sq_changes(cn__meta_conn_t *c)
{
    return sqlite3_changes(c->h);
}
static const char *sq_errmsg(cn__meta_conn_t *c)
{
    return sqlite3_errmsg(c->h);
}

static cn_err_t sq_prepare(cn__meta_conn_t *c, const char *sql, cn__meta_raw_t **out)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v3(c->h, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL);
    if (rc != SQLITE_OK) {
        cn_err_t e = map_rc(sqlite3_extended_errcode(c->h));
        /* A syntax or schema error is the caller's SQL being wrong. */
        return (rc & 0xff) == SQLITE_ERROR ? CN_E_INVALID : (e < 0 ? e : CN_E_DB);
    }
    if (!st)
        return CN_E_INVALID; /* empty statement */
    *out = (cn__meta_raw_t *)(void *)st;
    return 0;
}

static void sq_finalize(cn__meta_raw_t *r)
{
    sqlite3_finalize(RAW(r));
}

static void sq_reset(cn__meta_raw_t *r)
{
    sqlite3_reset(RAW(r));
    sqlite3_clear_bindings(RAW(r));
}

static cn_err_t bind_rc(int rc)
{
    return rc == SQLITE_OK ? 0 : map_rc(rc);
}

static cn_err_t sq_bind_int64(cn__meta_raw_t *r, int idx, int64_t v)
{
    return bind_rc(sqlite3_bind_int64(RAW(r), idx, v));
}

static cn_err_t sq_bind_text(cn__meta_raw_t *r, int idx, const char *s, size_t len)
{
    return bind_rc(sqlite3_bind_text64(RAW(r), idx, s, len, SQLITE_TRANSIENT, SQLITE_UTF8));
}

static cn_err_t sq_bind_blob(cn__meta_raw_t *r, int idx, const void *p, size_t len)
{
    static const char empty;
    return bind_rc(sqlite3_bind_blob64(RAW(r), idx, p ? p : &empty, len, SQLITE_TRANSIENT));
}

/* The packed keys as one blob: the statement walks it with substr(). */
static cn_err_t sq_bind_list(cn__meta_raw_t *r, int idx, const void *p, size_t width, size_t n)
{
    return sq_bind_blob(r, idx, p, width * n);
}

static cn_err_t sq_bind_null(cn__meta_raw_t *r, int idx)
{
    return bind_rc(sqlite3_bind_null(RAW(r), idx));
}

static cn_err_t sq_step(cn__meta_raw_t *r)
{
    int rc = sqlite3_step(RAW(r));
    if (rc == SQLITE_ROW)
        return CN_META_ROW;
    if (rc == SQLITE_DONE)
        return CN_META_DONE;
    cn_err_t e = map_rc(sqlite3_extended_errcode(sqlite3_db_handle(RAW(r))));
    return e < 0 ? e : CN_E_DB;
}

static bool sq_column_is_null(cn__meta_raw_t *r, int col)
{
    return sqlite3_column_type(RAW(r), col) == SQLITE_NULL;
}

static int64_t sq_column_int64(cn__meta_raw_t *r, int col)
{
    return sqlite3_column_int64(RAW(r), col);
}

static const char *sq_column_text(cn__meta_raw_t *r, int col, size_t *len)
{
    const char *s = (const char *)sqlite3_column_text(RAW(r), col);
    if (len)
        *len = s ? (size_t)sqlite3_column_bytes(RAW(r), col) : 0;
    return s;
}

static const void *sq_column_blob(cn__meta_raw_t *r, int col, size_t *len)
{
    const void *p = sqlite3_column_blob(RAW(r), col);
    if (len)
        *len = p ? (size_t)sqlite3_column_bytes(RAW(r), col) : 0;
    return p;
}

static int sq_column_count(cn__meta_raw_t *r)
{
    return sqlite3_column_count(RAW(r));
}

const cn__meta_engine_t cn__meta_engine_sqlite = {
    .name = "sqlite",
    .single_writer = true, /* sq_begin: BEGIN IMMEDIATE */
    .db_open = sq_db_open,
    .db_close = sq_db_close,
    .sync = sq_sync,
    .conn_open = sq_conn_open,
    .conn_close = sq_conn_close,
    .begin = sq_begin,
    .commit = sq_commit,
    .rollback = sq_rollback,
    .savepoint = sq_savepoint,
    .release = sq_release,
    .rollback_to = sq_rollback_to,
    .in_txn = sq_in_txn,
    .exec = sq_exec,
    .changes = sq_changes,
    .errmsg = sq_errmsg,
    .prepare = sq_prepare,
    .finalize = sq_finalize,
    .reset = sq_reset,
    .bind_int64 = sq_bind_int64,
    .bind_text = sq_bind_text,
    .bind_blob = sq_bind_blob,
    .bind_null = sq_bind_null,
    .bind_list = sq_bind_list,
    .step = sq_step,
    .column_is_null = sq_column_is_null,
    .column_int64 = sq_column_int64,
    .column_text = sq_column_text,
    .column_blob = sq_column_blob,
    .column_count = sq_column_count,
};
