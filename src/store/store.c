/* The store handle: open with startup recovery, close, and the read-side
 * queries (stat, have, open_fd, touch, delete, verify).
 *
 * Recovery, in this order: (1) everything in DATA/staging is an upload that
 * was never acknowledged (a publish moves its file out of staging before it
 * returns), so it is removed; (2) the small-blob journal is replayed, which
 * rewrites any journalled blob whose file a crash lost or tore (journal.c);
 * (3) with packing on, each pack's tail is scanned and re-indexed, and a torn
 * tail is cut (pack.c, P5).  Other names are only ever created by an atomic
 * rename of a complete, synced file, so nothing else needs repair.
 *
 * Every query looks for a digest in the pack index first, then in the file
 * tree: a data directory written before packs keeps its small blobs as files.
 */
#include "store/store_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cairn/util.h"

#define STORE_DEFAULT_MAX_BLOB (1ull << 40)
#define STORE_DEFAULT_BATCH_MAX (256u * 1024)

cn_err_t cn__store_staging_name(char out[48])
{
    /* "<shard>/<32 hex>.part": uploads spread over CN__STORE_STAGING_SHARDS
     * directories because creates in one directory serialise on its lock. */
    uint8_t r[17];
    CN_TRY(cn_random_bytes(r, sizeof r));
    static const char hex[] = "0123456789abcdef";
    out[0] = hex[r[16] % CN__STORE_STAGING_SHARDS];
    out[1] = '/';
    cn_hex_encode(r, 16, out + 2);
    memcpy(out + 34, ".part", 6);
    return CN_OK;
}

bool cn__store_dio_ok(const cn_store_t *s)
{
    return !atomic_load_explicit(&s->dio_off, memory_order_relaxed);
}

void cn__store_dio_refused(cn_store_t *s)
{
    if (!atomic_exchange(&s->dio_off, true))
        cn_info("store", "staging refuses O_DIRECT: large blobs are written through the page "
                         "cache");
}

/* Removes every file in dirfd (one level); counts them in *removed. */
static cn_err_t clean_dir(int dirfd, unsigned *removed, bool top)
{
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    DIR *dir = fdopendir(fd);
    if (!dir) {
        close(fd);
        return -errno;
    }
    cn_err_t rc = CN_OK;
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (unlinkat(dirfd, de->d_name, 0) == 0) {
            (*removed)++;
            continue;
        }
        if (errno == ENOENT)
            continue;
        if ((errno == EISDIR || errno == EPERM) && top) {
            int sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (sub < 0) {
                rc = -errno;
                break;
            }
            rc = clean_dir(sub, removed, false);
            close(sub);
            if (rc < 0)
                break;
            continue;
        }
        rc = -errno;
        break;
    }
    closedir(dir);
    return rc;
}

/* Removes every staging leftover and makes sure the shard directories exist. */
static cn_err_t clean_staging(cn_store_t *s, unsigned *removed)
{
    *removed = 0;
    CN_TRY(clean_dir(s->staging_fd, removed, true));
    for (unsigned i = 0; i < CN__STORE_STAGING_SHARDS; i++) {
        char name[2] = { "0123456789abcdef"[i], '\0' };
        if (mkdirat(s->staging_fd, name, 0700) < 0 && errno != EEXIST)
            return -errno;
    }
    return CN_OK;
}

static char *path_join(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    char *p = malloc(na + nb + 2);
    if (p) {
        memcpy(p, a, na);
        p[na] = '/';
        memcpy(p + na + 1, b, nb + 1);
    }
    return p;
}

/* The blob backend the options choose: DATA/blobs, or the S3 tier with its
 * cache (opts.tier.cache_dir, default DATA/cache). */
static cn_err_t open_backend(cn_store_t *s, const char *blobs)
{
    const struct cn_store_tier *t = &s->opts.tier;
    if (!t->blob_store)
        return cn__backend_local_open(blobs, &s->be);
    char *cache = t->cache_dir ? strdup(t->cache_dir) : path_join(s->data_dir, "cache");
    if (!cache)
        return -ENOMEM;
    cn_err_t rc = cn__backend_s3_open(t, cache, &s->be);
    free(cache);
    return rc;
}

bool cn_store_is_tiered(const cn_store_t *s)
{
    return s->opts.tier.blob_store != NULL;
}

cn_err_t cn_store_ping(cn_store_t *s)
{
    return cn_store_is_tiered(s) ? cn__backend_s3_ping(s->be) : CN_OK;
}

cn_err_t cn_store_open(const char *data_dir, const cn_store_opts_t *opts, cn_store_t **out)
{
    cn_err_t rc;
    char *staging = NULL, *blobs = NULL, *lockp = NULL;
    *out = NULL;
    if (!data_dir || !*data_dir)
        return CN_E_INVALID;
    cn_store_t *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->staging_fd = -1;
    s->lock_fd = -1;
    s->data_fd = -1;
    s->journal_fd = -1;
    s->packs_fd = -1;
    pthread_mutex_init(&s->pack_mu, NULL);
    if (opts)
        s->opts = *opts;
    if (!s->opts.max_blob_bytes)
        s->opts.max_blob_bytes = STORE_DEFAULT_MAX_BLOB;
    if (!s->opts.batch_max_bytes || s->opts.batch_max_bytes > STORE_DEFAULT_BATCH_MAX)
        s->opts.batch_max_bytes = STORE_DEFAULT_BATCH_MAX;
    if (s->opts.default_form != CN_STORE_RAW && s->opts.default_form != CN_STORE_LZ4) {
        pthread_mutex_destroy(&s->pack_mu);
        free(s);
        return CN_E_INVALID;
    }
    s->meta = s->opts.meta;
    if (s->opts.tier.blob_store) {
        /* The S3 tier: each blob is its own backend object (no packs), and
         * each writer uploads on its own thread (no group committer, whose
         * one thread would serialise the uploads). */
        s->opts.pack_max_bytes = 0;
        s->opts.batch_disable = true;
    }
    cn__dlock_init(s);
    pthread_mutex_init(&s->guard_mu, NULL);
    cn__fdc_init(s);
    cn__envix_open(s);
    cn__hot_open(s);
    pthread_mutex_init(&s->live_mu, NULL);
    pthread_mutex_init(&s->sweep_mu, NULL);
    pthread_mutex_init(&s->q_mu, NULL);
    pthread_cond_init(&s->q_cv, NULL);
    pthread_mutex_init(&s->ix_mu, NULL);
    pthread_cond_init(&s->ix_cv, NULL);

    s->data_dir = strdup(data_dir);
    staging = path_join(data_dir, "staging");
    blobs = path_join(data_dir, "blobs");
    lockp = path_join(data_dir, "store.lock");
    if (!s->data_dir || !staging || !blobs || !lockp) {
        rc = -ENOMEM;
        goto fail;
    }
    if ((rc = cn_mkdir_p(staging, 0700)) < 0)
        goto fail;
    /* One process per data dir: a second one would delete the first one's
     * uploads in progress as "leftovers". */
    s->lock_fd = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (s->lock_fd < 0) {
        rc = -errno;
        goto fail;
    }
    if (flock(s->lock_fd, LOCK_EX | LOCK_NB) < 0) {
        rc = errno == EWOULDBLOCK ? CN_E_BUSY : -errno;
        goto fail;
    }
    s->data_fd = open(data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (s->data_fd < 0) {
        rc = -errno;
        goto fail;
    }
    s->staging_fd = open(staging, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (s->staging_fd < 0) {
        rc = -errno;
        goto fail;
    }
    s->dio_off = s->opts.page_cache_writes;
    /* Threads that mostly wait for the disk: one per large write at once,
     * up to four; a fifth writes its chunks itself (NULL: all do). */
    s->dio_side = cn_side_new(CN__STORE_DIO_THREADS, "cn-dio");
    unsigned removed;
    if ((rc = clean_staging(s, &removed)) < 0)
        goto fail;
    if (removed)
        cn_info("store", "recovery: removed %u unpublished upload(s) from staging", removed);
    if ((rc = open_backend(s, blobs)) < 0)
        goto fail;
    cn__store_space_init(s);
    /* The directories themselves must survive a crash before any blob
     * inside them is acknowledged. */
    if ((rc = cn_fsync_dir(s->data_dir)) < 0)
        goto fail;
    if ((rc = cn__journal_open(s)) < 0)
        goto fail;
    if (s->meta && (rc = cn__store_pins_migrate(s)) < 0)
        goto fail;
    s->blob_rows = s->meta && cn_store_is_tiered(s) && !cn_meta_single_writer(s->meta);
    const char *hold = getenv("CAIRN_TEST_SWEEP_HOLD"); /* sweep.c */
    if (hold && *hold && !(s->sweep_hold = strdup(hold))) {
        rc = -ENOMEM;
        goto fail;
    }
    if ((rc = cn__pack_open(s)) < 0)
        goto fail;
    if ((rc = cn__store_usage_open(s)) < 0)
        goto fail;
    if (!s->opts.batch_disable && (rc = cn__committer_start(s)) < 0)
        goto fail;
    free(staging);
    free(blobs);
    free(lockp);
    *out = s;
    return CN_OK;
fail:
    free(staging);
    free(blobs);
    free(lockp);
    cn_store_close(s);
    return rc;
}

void cn_store_close(cn_store_t *s)
{
    if (!s)
        return;
    cn__committer_stop(s);
    cn__pack_close(s);
    if (s->be)
        cn__journal_close(s);
    else if (s->journal_fd >= 0)
        close(s->journal_fd);
    cn__store_usage_close(s); /* after the last note */
    if (s->be)
        s->be->ops->close(s->be);
    if (s->staging_fd >= 0)
        close(s->staging_fd);
    if (s->lock_fd >= 0)
        close(s->lock_fd);
    if (s->data_fd >= 0)
        close(s->data_fd);
    cn_side_free(s->dio_side); /* no writer is left */
    for (size_t i = 0; i < CN__STORE_GUARD_BUCKETS; i++) {
        cn__guard_node_t *g = s->guards[i];
        while (g) {
            cn__guard_node_t *next = g->next;
            free(g);
            g = next;
        }
    }
    cn__dlock_destroy(s);
    cn__fdc_close(s);
    cn__envix_close(s);
    cn__hot_close(s);
    pthread_mutex_destroy(&s->guard_mu);
    pthread_mutex_destroy(&s->live_mu);
    pthread_mutex_destroy(&s->sweep_mu);
    pthread_mutex_destroy(&s->pack_mu);
    pthread_mutex_destroy(&s->q_mu);
    pthread_cond_destroy(&s->q_cv);
    pthread_mutex_destroy(&s->ix_mu);
    pthread_cond_destroy(&s->ix_cv);
    free(s->data_dir);
    free(s->sweep_hold);
    free(s);
}

/* A packed blob's verified bytes in a private memory file: callers that
 * sendfile or mmap a blob's file work unchanged. */
static cn_err_t packed_memfd(const cn__pack_loc_t *loc, int *fd)
{
    uint8_t *buf = malloc(loc->len ? loc->len : 1);
    if (!buf)
        return -ENOMEM;
    int f = -1;
    cn_err_t rc = cn__pack_read(loc, buf);
    if (rc == CN_OK && (f = memfd_create("cairn-packed", MFD_CLOEXEC)) < 0)
        rc = -errno;
    if (rc == CN_OK)
        rc = cn_write_full(f, buf, loc->len);
    free(buf);
    if (rc < 0) {
        if (f >= 0)
            close(f);
        return rc;
    }
    *fd = f;
    return CN_OK;
}

cn_err_t cn_store_open_fd(cn_store_t *s, const cn_digest_t *d, int *fd, uint64_t *len)
{
    return cn__store_open_fd(s, d, false, fd, len);
}

cn_err_t cn__store_open_fd(cn_store_t *s, const cn_digest_t *d, bool lazy, int *fd, uint64_t *len)
{
    cn__be_stat_t st;
    cn__pack_loc_t loc;
    int f;
    if (cn__pack_find(s, d, &loc)) {
        CN_TRY(packed_memfd(&loc, fd));
        if (len)
            *len = loc.len;
        return CN_OK;
    }
    if (lazy && s->be->ops->open_lazy)
        CN_TRY(s->be->ops->open_lazy(s->be, d, &f, &st));
    else
        CN_TRY(s->be->ops->open(s->be, d, &f, &st));
    if (st.form != CN_STORE_RAW) {
        close(f);
        return CN_E_UNSUPPORTED;
    }
    *fd = f;
    if (len)
        *len = st.size;
    return CN_OK;
}

cn_err_t cn_store_stat(cn_store_t *s, const cn_digest_t *d, cn_store_stat_t *out)
{
    cn__be_stat_t st;
    cn__pack_loc_t loc;
    int fd;
    if (!out)
        return CN_E_INVALID;
    if (cn__pack_find(s, d, &loc)) {
        *out = (cn_store_stat_t){ loc.len, loc.len, CN_STORE_RAW, loc.mtime_ms };
        return CN_OK;
    }
    /* The S3 tier: a raw blob's HEAD says it all; only an envelope's
     * logical length needs its bytes (open fills the cache). */
    if (cn_store_is_tiered(s)) {
        CN_TRY(s->be->ops->stat(s->be, d, &st));
        if (st.form == CN_STORE_RAW) {
            *out = (cn_store_stat_t){ st.size, st.size, CN_STORE_RAW, st.mtime_ms };
            return CN_OK;
        }
    }
    CN_TRY(s->be->ops->open(s->be, d, &fd, &st));
    cn_err_t rc = CN_OK;
    out->stored_len = st.size;
    out->form = st.form;
    out->mtime_ms = st.mtime_ms;
    out->len = st.size;
    if (st.form == CN_STORE_LZ4) {
        cn__env_t e;
        rc = cn__env_open(fd, st.size, &e);
        out->len = e.raw_len;
    }
    close(fd);
    return rc;
}

cn_err_t cn_store_have(cn_store_t *s, const cn_digest_t *d, size_t n, bool *present)
{
    for (size_t i = 0; i < n; i++) {
        cn__be_stat_t st;
        cn_err_t rc = cn__store_stat_any(s, &d[i], &st);
        if (rc < 0 && rc != CN_E_NOT_FOUND)
            return rc;
        present[i] = rc == CN_OK;
    }
    return CN_OK;
}

cn_err_t cn_store_touch(cn_store_t *s, const cn_digest_t *d)
{
    CN_TRY(cn__store_blob_row_touch(s, d)); /* S7: the row before the backend */
    cn__dheld_t dl;
    cn__dlock(s, d, &dl);
    cn_err_t rc = cn__pack_touch_locked(s, d);
    if (rc == CN_E_NOT_FOUND)
        rc = s->be->ops->touch(s->be, d);
    cn__dunlock(s, &dl);
    return rc;
}

cn_err_t cn__store_stat_any(cn_store_t *s, const cn_digest_t *d, cn__be_stat_t *st)
{
    cn__pack_loc_t loc;
    if (cn__pack_find(s, d, &loc)) {
        *st = (cn__be_stat_t){ loc.len, loc.mtime_ms, CN_STORE_RAW };
        return CN_OK;
    }
    return s->be->ops->stat(s->be, d, st);
}

cn_err_t cn__store_remove_locked(cn_store_t *s, const cn_digest_t *d, uint64_t *freed)
{
    uint64_t a = 0, b = 0;
    /* Both places: a large publish may have landed a file beside a packed
     * record of the same digest (pack.c, P4 decides under the lock, but the
     * record is indexed after it). */
    cn_err_t rp = cn__pack_remove_locked(s, d, &a);
    if (rp < 0 && rp != CN_E_NOT_FOUND)
        return rp;
    cn_err_t rf = s->be->ops->remove(s->be, d, &b);
    if (rf < 0 && rf != CN_E_NOT_FOUND)
        return rf;
    if (rf == CN_OK)
        cn__fdc_forget(s, d);
    /* A digest counts once: a file beside its packed record was not
     * counted (usage.c), the row's trigger uncounted it. */
    if (rf == CN_OK && rp != CN_OK)
        cn__store_usage_note(s, -1, -(int64_t)b);
    else if (rp == CN_OK)
        cn__store_usage_note(s, 0, 0); /* the row's trigger counted it: the gauges */
    if (freed)
        *freed = a + b;
    return rp == CN_OK || rf == CN_OK ? CN_OK : CN_E_NOT_FOUND;
}

cn_err_t cn_store_delete(cn_store_t *s, const cn_digest_t *d)
{
    cn__dheld_t dl;
    bool pinned = false;
    cn_err_t rc;
    cn__dlock(s, d, &dl);
    if (cn__store_guarded(s, d)) {
        rc = CN_E_PINNED;
        goto out;
    }
    if ((rc = cn__store_pinned_durable(s, d, &pinned)) < 0)
        goto out;
    if (pinned) {
        rc = CN_E_PINNED;
        goto out;
    }
    rc = cn__store_remove_locked(s, d, NULL);
out:
    cn__dunlock(s, &dl);
    return rc;
}

static cn_err_t discard_sink(void *ctx, const void *p, size_t n)
{
    (void)ctx, (void)p, (void)n;
    return CN_OK;
}

cn_err_t cn_store_verify(cn_store_t *s, const cn_digest_t *d)
{
    cn_digest_t got;
    cn_err_t rc = cn_store_read_range(s, d, 0, UINT64_MAX, discard_sink, NULL, &got, NULL);
    if (rc < 0)
        return rc;
    return cn_ct_equal(got.b, d->b, CN_DIGEST_LEN) ? CN_OK : CN_E_CORRUPT;
}
