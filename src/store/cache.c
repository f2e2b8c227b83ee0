/* The S3 tier's local cache (backend.h): whole blobs in their stored form,
 * one file each, named <hex> (raw) or <hex>.lz4, in one directory (default
 * DATA/cache), least recently used out past a byte budget.
 *
 * Contracts:
 *  K1. A name appears only by an atomic rename of a complete file whose bytes
 *      were hashed to their digest (a fill from the backend, or the staged
 *      file a publish just uploaded), so a reader never sees a partial file.
 *      Fills are written under "tmp-<32 hex>.part" names, removed at open.
 *  K2. Files found at open are adopted unverified: their first use in this
 *      process hashes them (the backend's caller does), and a mismatch evicts
 *      the file and fetches it again.  A file whose size changed under us is
 *      treated as absent.
 *  K3. Eviction unlinks the file under the lock; a reader holding its
 *      descriptor keeps reading the unlinked inode (Linux keeps it until the
 *      last close), which is the only pin in-flight reads need.  The budget
 *      therefore bounds the named files; evicted files still open are
 *      counted only until their readers close them, by the kernel.
 *  K4. The cache never decides existence: a miss asks the backend, and the
 *      backend's remove evicts.
 *  K5. A fill makes room for itself on the file system before its first
 *      byte lands (cn__cache_make_room: least recently used files out until
 *      it and a reserve, 1/64 of the file system up to 256 MiB, are free, or
 *      none is left), so a budget larger than the file system's free space
 *      evicts instead of failing reads; a blob that cannot fit even in an
 *      emptied cache fails its fill before any byte is served.
 */
#include "store/store_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cairn/util.h"

#define CACHE_BUCKETS 4096
#define CACHE_NAME_MAX (CN_DIGEST_HEX_LEN + 5)
/* K5's reserve: 1/64 of the file system, at most this. */
#define RESERVE_MAX (256ull << 20)

typedef struct cache_ent {
    cn_digest_t d;
    cn_store_form_t form;
    uint64_t size;
    bool verified;
    struct cache_ent *hnext;       /* hash chain */
    struct cache_ent *prev, *next; /* recency: head is the most recent */
} cache_ent_t;

struct cn__cache {
    pthread_mutex_t mu;
    int dirfd;
    uint64_t cap, used;
    cache_ent_t *buckets[CACHE_BUCKETS];
    cache_ent_t *head, *tail;
};

static void ent_name(const cn_digest_t *d, cn_store_form_t form, char out[CACHE_NAME_MAX + 1])
{
    cn_digest_hex(d, out);
    if (form == CN_STORE_LZ4)
        memcpy(out + CN_DIGEST_HEX_LEN, ".lz4", 5);
}

static size_t bucket_of(const cn_digest_t *d)
{
    return ((size_t)d->b[0] << 8 | d->b[1]) % CACHE_BUCKETS;
}

static cache_ent_t *find_locked(cn__cache_t *c, const cn_digest_t *d)
{
    for (cache_ent_t *e = c->buckets[bucket_of(d)]; e; e = e->hnext)
        if (memcmp(e->d.b, d->b, CN_DIGEST_LEN) == 0)
            return e;
    return NULL;
}

static void lru_unlink(cn__cache_t *c, cache_ent_t *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        c->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        c->tail = e->prev;
    e->prev = e->next = NULL;
}

static void lru_push(cn__cache_t *c, cache_ent_t *e)
{
    e->prev = NULL;
    e->next = c->head;
    if (c->head)
        c->head->prev = e;
    c->head = e;
    if (!c->tail)
        c->tail = e;
}

/* Unlinks e from every structure, removes its file, frees it. */
static void drop_locked(cn__cache_t *c, cache_ent_t *e)
{
    cache_ent_t **pp = &c->buckets[bucket_of(&e->d)];
    while (*pp != e)
        pp = &(*pp)->hnext;
    *pp = e->hnext;
    lru_unlink(c, e);
    c->used -= e->size;
    char name[CACHE_NAME_MAX + 1];
    ent_name(&e->d, e->form, name);
    (void)unlinkat(c->dirfd, name, 0);
    free(e);
}

static void insert_locked(cn__cache_t *c, const cn_digest_t *d, cn_store_form_t form, uint64_t size,
                          bool verified)
{
    cache_ent_t *e = find_locked(c, d);
    if (e) {
        c->used -= e->size;
        lru_unlink(c, e);
    } else {
        if (!(e = calloc(1, sizeof *e)))
            return; /* untracked: the file stays until the next open adopts it */
        e->d = *d;
        size_t b = bucket_of(d);
        e->hnext = c->buckets[b];
        c->buckets[b] = e;
    }
    e->form = form;
    e->size = size;
    e->verified = verified;
    c->used += size;
    lru_push(c, e);
}

static void evict_over_budget_locked(cn__cache_t *c)
{
    while (c->used > c->cap && c->tail)
        drop_locked(c, c->tail);
}

/* Adopts one directory entry found at open (K1, K2). */
static void adopt(cn__cache_t *c, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(name, "tmp-", 4) == 0) {
        (void)unlinkat(c->dirfd, name, 0); /* an interrupted fill */
        return;
    }
    cn_store_form_t form;
    if (n == CN_DIGEST_HEX_LEN)
        form = CN_STORE_RAW;
    else if (n == CN_DIGEST_HEX_LEN + 4 && strcmp(name + CN_DIGEST_HEX_LEN, ".lz4") == 0)
        form = CN_STORE_LZ4;
    else
        return;
    cn_digest_t d;
    struct stat st;
    if (cn_digest_parse(name, CN_DIGEST_HEX_LEN, &d) < 0 ||
        fstatat(c->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
        return;
    insert_locked(c, &d, form, (uint64_t)st.st_size, false);
}

cn_err_t cn__cache_open(const char *dir, uint64_t cap, cn__cache_t **out)
{
    CN_TRY(cn_mkdir_p(dir, 0700));
    cn__cache_t *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->cap = cap;
    c->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int dup_fd = c->dirfd >= 0 ? dup(c->dirfd) : -1;
    DIR *dh = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    if (!dh) {
        cn_err_t rc = -errno;
        if (dup_fd >= 0)
            close(dup_fd);
        if (c->dirfd >= 0)
            close(c->dirfd);
        free(c);
        return rc;
    }
    pthread_mutex_init(&c->mu, NULL);
    struct dirent *de;
    while ((de = readdir(dh)) != NULL)
        adopt(c, de->d_name);
    closedir(dh);
    evict_over_budget_locked(c);
    *out = c;
    return CN_OK;
}

void cn__cache_close(cn__cache_t *c)
{
    if (!c)
        return;
    for (cache_ent_t *e = c->head, *next; e; e = next) {
        next = e->next;
        free(e);
    }
    close(c->dirfd);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

cn_err_t cn__cache_get(cn__cache_t *c, const cn_digest_t *d, int *fd, cn__be_stat_t *st,
                       bool *verified)
{
    char name[CACHE_NAME_MAX + 1];
    pthread_mutex_lock(&c->mu);
    cache_ent_t *e = find_locked(c, d);
    if (!e) {
        pthread_mutex_unlock(&c->mu);
        return CN_E_NOT_FOUND;
    }
    lru_unlink(c, e);
    lru_push(c, e);
    cn_store_form_t form = e->form;
    uint64_t size = e->size;
    *verified = e->verified;
    ent_name(d, form, name);
    pthread_mutex_unlock(&c->mu);

    struct stat sb;
    int f = openat(c->dirfd, name, O_RDONLY | O_CLOEXEC);
    if (f >= 0 && fstat(f, &sb) == 0 && (uint64_t)sb.st_size == size) {
        *fd = f;
        *st =
            (cn__be_stat_t){ size, (int64_t)sb.st_mtim.tv_sec * 1000 + sb.st_mtim.tv_nsec / 1000000,
                             form };
        return CN_OK;
    }
    if (f >= 0)
        close(f);
    cn__cache_evict(c, d); /* gone or changed under us (K2) */
    return CN_E_NOT_FOUND;
}

void cn__cache_verified(cn__cache_t *c, const cn_digest_t *d)
{
    pthread_mutex_lock(&c->mu);
    cache_ent_t *e = find_locked(c, d);
    if (e)
        e->verified = true;
    pthread_mutex_unlock(&c->mu);
}

cn_err_t cn__cache_tmp(cn__cache_t *c, char name[48], int *fd)
{
    uint8_t r[16];
    CN_TRY(cn_random_bytes(r, sizeof r));
    memcpy(name, "tmp-", 4);
    cn_hex_encode(r, sizeof r, name + 4);
    memcpy(name + 36, ".part", 6);
    int f = openat(c->dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (f < 0)
        return -errno;
    *fd = f;
    return CN_OK;
}

void cn__cache_discard(cn__cache_t *c, const char *tmp)
{
    (void)unlinkat(c->dirfd, tmp, 0);
}

cn_err_t cn__cache_commit(cn__cache_t *c, int src_dirfd, const char *tmp, const cn_digest_t *d,
                          cn_store_form_t form, uint64_t size)
{
    char name[CACHE_NAME_MAX + 1];
    ent_name(d, form, name);
    pthread_mutex_lock(&c->mu);
    /* Under the lock: an eviction of the same name cannot unlink the new
     * file between the rename and its entry. */
    cn_err_t rc = CN_OK;
    if (renameat(src_dirfd >= 0 ? src_dirfd : c->dirfd, tmp, c->dirfd, name) < 0)
        rc = -errno;
    if (rc == CN_OK) {
        insert_locked(c, d, form, size, true);
        evict_over_budget_locked(c);
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

void cn__cache_evict(cn__cache_t *c, const cn_digest_t *d)
{
    pthread_mutex_lock(&c->mu);
    cache_ent_t *e = find_locked(c, d);
    if (e)
        drop_locked(c, e);
    pthread_mutex_unlock(&c->mu);
}

uint64_t cn__cache_fs_bytes(cn__cache_t *c)
{
    uint64_t free_b = 0, total = 0;
    return cn_fs_space(c->dirfd, &free_b, &total) < 0 ? 0 : total;
}

bool cn__cache_make_room(cn__cache_t *c, uint64_t need)
{
    uint64_t free_b = 0, total = 0;
    if (cn_fs_space(c->dirfd, &free_b, &total) < 0)
        return true; /* not known: the write will tell */
    uint64_t reserve = total / 64 < RESERVE_MAX ? total / 64 : RESERVE_MAX;
    uint64_t evicted = 0, bytes = 0;
    pthread_mutex_lock(&c->mu);
    if (free_b + c->used < need) { /* even an emptied cache would not do */
        pthread_mutex_unlock(&c->mu);
        return false;
    }
    while (free_b < need + reserve && c->tail) {
        free_b += c->tail->size; /* once no reader holds it open (K3) */
        bytes += c->tail->size;
        evicted++;
        drop_locked(c, c->tail);
    }
    pthread_mutex_unlock(&c->mu);
    if (evicted)
        cn_info("store",
                "cache: %" PRIu64 " file(s), %" PRIu64
                " byte(s) evicted to make room for a fill of %" PRIu64 " byte(s)",
                evicted, bytes, need);
    return free_b >= need;
}
