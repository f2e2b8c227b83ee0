/* Objects of a repository: put sessions (hash while receiving, publish,
 * validate, record membership), presence, durable upload pins, and reads.
 *
 * Chunks are stored under their id (the store verifies the digest); a
 * structured object (manifest, change set) is stored raw under the BLAKE3 of
 * its encoding while its id (BLAKE3 of the domain prefix and the encoding)
 * is computed alongside, and is validated after publication from a
 * read-only mapping of the blob, so no object is ever held whole in the
 * heap.  Membership rows (repository, kind, id) -> blob are what make an
 * object part of a repository.
 *
 * Publishing a blob waits for its durability.  So that a batch of many small
 * objects does not pay one flush each, a session hands finished writers to
 * a few publisher threads: concurrent publishes share the store's group
 * commit.  put_commit waits for every publish before it validates. */
#include "service_int.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define PUBLISHERS 32
#define PUBLISH_QUEUE 256

typedef struct put_key {
    uint8_t kind;
    cn_digest_t id;
    uint32_t index;
} put_key_t;

typedef struct put_item {
    uint8_t kind;
    cn_digest_t id;
    uint64_t length;
    cn_digest_t blob;
    uint64_t fsize;
    bool done;
} put_item_t;

struct cn_repos_put {
    cn_repos_t *r;
    cn_repos_req_t *rq;
    uint8_t repo[16];
    uint8_t compression;
    uint32_t count, n; /* announced, started */
    uint64_t total;
    put_item_t *items;
    struct put_key *keys; /* items sorted by (kind, id, index), for batch lookups */
    cn_store_writer_t *w; /* current object */
    cn_blake3_t h;
    uint64_t written;
    /* publisher pool: a ring of (writer, item) waiting to be published */
    pthread_mutex_t mu;
    pthread_cond_t cv_work, cv_done;
    pthread_t threads[PUBLISHERS];
    unsigned nthreads;
    struct {
        cn_store_writer_t *w;
        uint32_t item;
    } q[PUBLISH_QUEUE];
    unsigned qhead, qlen, busy;
    bool stop;
    cn_err_t pub_err; /* first publish failure */
    uint32_t pub_err_item;
};

static void publish_one(cn_repos_put_t *p, cn_store_writer_t *w, uint32_t item, bool locked)
{
    uint64_t len = 0;
    cn_digest_t blob;
    if (locked)
        pthread_mutex_unlock(&p->mu);
    cn_err_t err = cn_store_writer_publish(w, &blob, &len);
    if (locked)
        pthread_mutex_lock(&p->mu);
    if (err >= 0) {
        p->items[item].blob = blob;
        p->items[item].fsize = len;
        p->items[item].done = true;
    } else if (p->pub_err >= 0) {
        p->pub_err = err;
        p->pub_err_item = item;
    }
}

static void *publisher(void *arg)
{
    cn_repos_put_t *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->qlen && !p->stop)
            pthread_cond_wait(&p->cv_work, &p->mu);
        if (!p->qlen)
            break;
        cn_store_writer_t *w = p->q[p->qhead].w;
        uint32_t item = p->q[p->qhead].item;
        p->qhead = (p->qhead + 1) % PUBLISH_QUEUE;
        p->qlen--;
        p->busy++;
        pthread_cond_broadcast(&p->cv_done); /* room in the queue */
        publish_one(p, w, item, true);
        p->busy--;
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Queues a finished writer, starting another publisher while every one is
 * busy and the pool is not full. */
static cn_err_t publish_async(cn_repos_put_t *p, cn_store_writer_t *w, uint32_t item)
{
    pthread_mutex_lock(&p->mu);
    while (p->qlen == PUBLISH_QUEUE)
        pthread_cond_wait(&p->cv_done, &p->mu);
    p->q[(p->qhead + p->qlen) % PUBLISH_QUEUE].w = w;
    p->q[(p->qhead + p->qlen) % PUBLISH_QUEUE].item = item;
    p->qlen++;
    bool spawn = p->nthreads < PUBLISHERS && p->busy + p->qlen > p->nthreads;
    pthread_cond_signal(&p->cv_work);
    pthread_mutex_unlock(&p->mu);
    if (spawn) {
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        int rc = pthread_create(&p->threads[p->nthreads], NULL, publisher, p);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (rc == 0)
            p->nthreads++;
    }
    return CN_OK;
}

/* Waits until every queued writer is published and stops the pool; returns
 * the first publish failure. */
static cn_err_t publish_drain(cn_repos_put_t *p)
{
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->cv_work);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    p->nthreads = 0;
    /* what no thread took (none could be started) is published here */
    while (p->qlen) {
        cn_store_writer_t *w = p->q[p->qhead].w;
        uint32_t item = p->q[p->qhead].item;
        p->qhead = (p->qhead + 1) % PUBLISH_QUEUE;
        p->qlen--;
        publish_one(p, w, item, false);
    }
    return p->pub_err;
}

cn_err_t cn_repos_put_begin(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                            uint32_t count, cn_repos_put_t **out)
{
    *out = NULL;
    if (count == 0 || count > CN_REPOS_BATCH_MAX)
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED, "a batch holds 1..8192 objects");
    cn_repos_info_t info;
    CN_TRY(cn__repo_info(r, rq, repo, CN__WRITE, &info));
    cn_repos_put_t *p = calloc(1, sizeof *p);
    if (!p || !(p->items = calloc(count, sizeof *p->items))) {
        free(p);
        return -ENOMEM;
    }
    p->r = r;
    p->rq = rq;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv_work, NULL);
    pthread_cond_init(&p->cv_done, NULL);
    memcpy(p->repo, repo, 16);
    p->compression = info.compression;
    p->count = count;
    *out = p;
    return CN_OK;
}

static bool length_ok(uint8_t kind, uint64_t len)
{
    switch (kind) {
    case CN_REPOS_CHUNK: return len >= 1 && len <= CN_REPOS_MAX_CHUNK;
    case CN_REPOS_MANIFEST: return len >= CN_REPOS_MANIFEST_HDR && len <= CN_REPOS_MAX_MANIFEST_LEN;
    case CN_REPOS_CHANGESET: return len >= 9 && len <= CN_REPOS_MAX_CHANGESET_LEN;
    default: return false;
    }
}

cn_err_t cn_repos_put_object(cn_repos_put_t *p, uint8_t kind, const cn_digest_t *id,
                             uint64_t length)
{
    if (p->w || p->n == p->count)
        return cn__rfail(p->rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                         "more objects than the batch announced");
    if (!length_ok(kind, length))
        return cn__rfail(p->rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                         "object %u: kind %u with length %llu is outside its limits", p->n, kind,
                         (unsigned long long)length);
    if (p->total + length > CN_REPOS_BATCH_BYTES_MAX)
        return cn__rfail(p->rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                         "a batch carries at most 1 GiB");
    put_item_t *it = &p->items[p->n];
    it->kind = kind;
    it->id = *id;
    it->length = length;
    cn_err_t err = cn_store_writer_open(p->r->store, kind == CN_REPOS_CHUNK ? id : NULL,
                                        (int64_t)length, &p->w);
    if (err < 0)
        return err;
    cn_store_form_t form = kind == CN_REPOS_CHUNK && p->compression ? CN_STORE_LZ4 : CN_STORE_RAW;
    if ((err = cn_store_writer_set_form(p->w, form)) < 0) {
        cn_store_writer_abort(p->w);
        p->w = NULL;
        return err;
    }
    /* Every id is checked here, as the bytes arrive, so a bad object is
     * refused before the rest of the stream is read (the store checks a
     * chunk's digest again when it publishes). */
    cn_repos_id_init(&p->h, kind);
    p->written = 0;
    p->total += length;
    p->n++;
    return CN_OK;
}

cn_err_t cn_repos_put_write(cn_repos_put_t *p, const void *buf, size_t n)
{
    if (!p->w)
        return CN_E_INVALID;
    put_item_t *it = &p->items[p->n - 1];
    if (n > it->length - p->written)
        return CN_E_LENGTH_MISMATCH;
    cn_blake3_update(&p->h, buf, n);
    p->written += n;
    return cn_store_writer_write(p->w, buf, n);
}

cn_err_t cn_repos_put_end_object(cn_repos_put_t *p)
{
    if (!p->w)
        return CN_E_INVALID;
    put_item_t *it = &p->items[p->n - 1];
    cn_store_writer_t *w = p->w;
    p->w = NULL;
    if (p->written != it->length) {
        cn_store_writer_abort(w);
        return CN_E_LENGTH_MISMATCH;
    }
    cn_digest_t got;
    cn_blake3_final(&p->h, &got);
    if (memcmp(got.b, it->id.b, CN_DIGEST_LEN) != 0) {
        cn_store_writer_abort(w);
        return cn__rfail(p->rq, CN_E_DIGEST_MISMATCH, CN_REPOS_E_OBJECT_INVALID,
                         "object %u: the bytes do not hash to the announced id", p->n - 1);
    }
    return publish_async(p, w, p->n - 1);
}

void cn_repos_put_abort(cn_repos_put_t *p)
{
    if (!p)
        return;
    publish_drain(p);
    pthread_cond_destroy(&p->cv_work);
    pthread_cond_destroy(&p->cv_done);
    pthread_mutex_destroy(&p->mu);
    cn_store_writer_abort(p->w);
    free(p->keys);
    free(p->items);
    free(p);
}

static int key_cmp(const void *a, const void *b)
{
    const put_key_t *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    int c = memcmp(x->id.b, y->id.b, CN_DIGEST_LEN);
    if (c)
        return c;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* The smallest index of an item (kind, id), or p->count if none: binary
 * search for its first occurrence (the smallest index sorts first). */
static uint32_t first_item(const cn_repos_put_t *p, uint8_t kind, const cn_digest_t *id)
{
    put_key_t k = { kind, *id, 0 };
    size_t lo = 0, hi = p->count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (key_cmp(&p->keys[mid], &k) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < p->count && p->keys[lo].kind == kind &&
                   memcmp(p->keys[lo].id.b, id->b, CN_DIGEST_LEN) == 0
               ? p->keys[lo].index
               : p->count;
}

/* Whether (kind, id) is among the first `before` items. */
static bool earlier(const cn_repos_put_t *p, uint32_t before, uint8_t kind, const cn_digest_t *id)
{
    return first_item(p, kind, id) < before;
}

/* ---- object keys looked up many at a time -------------------------------------------- */
/* One key of CN_SQL_REPOS_BATCH_OBJECT_GET's list: the kind's byte, then
 * the id. */
typedef struct obj_key {
    uint8_t kind;
    uint8_t id[CN_DIGEST_LEN];
} obj_key_t;

_Static_assert(sizeof(obj_key_t) == 1 + CN_DIGEST_LEN, "keys pack as the batch key list");

/* For each of the n keys (any kinds, repeats allowed, in any order):
 * found[i] (the repository holds it) and, when found and asked for,
 * blob[i] and len[i]; a key not found leaves them untouched (a kind no row
 * has, outside 1..3, is never found on either engine).  One statement
 * per CN_META_BATCH_MAX keys (issue 24: one round trip on PostgreSQL).
 * Errors: CN_E_CORRUPT (a row names no position or has no digest),
 * cn_meta_batch_query's and cn_meta_step's. */
static cn_err_t objects_get(cn_meta_txn_t *txn, const uint8_t repo[16], const obj_key_t *keys,
                            uint32_t n, bool *found, cn_digest_t *blob, uint64_t *len)
{
    cn_err_t err = CN_OK;
    memset(found, 0, n * sizeof *found);
    for (uint32_t from = 0; from < n && err >= 0; from += CN_META_BATCH_MAX) {
        uint32_t c = n - from < CN_META_BATCH_MAX ? n - from : CN_META_BATCH_MAX;
        cn_meta_stmt_t *st = NULL;
        err = cn_meta_batch_query(txn, &st, &cn__sql_repos_batch[CN_SQL_REPOS_BATCH_OBJECT_GET],
                                  keys + from, sizeof *keys, c, "b", CN__ARG_ID(repo));
        while (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW) {
            int64_t j = cn_meta_column_int64(st, 0);
            cn_digest_t b;
            if (j < 0 || j >= c || !cn__col_fixed(st, 1, b.b, CN_DIGEST_LEN)) {
                err = CN_E_CORRUPT;
                break;
            }
            found[from + j] = true;
            if (blob)
                blob[from + j] = b;
            if (len)
                len[from + j] = (uint64_t)cn_meta_column_int64(st, 2);
        }
        cn_meta_finish(st);
    }
    return err < 0 ? err : CN_OK;
}

/* ---- validation of a session's structured objects ------------------------------------- */
/* The references of the objects validated so far that no earlier object of
 * the batch satisfies, waiting to be looked up together: key i was named by
 * item[i].  At most CN_META_BATCH_MAX (one statement's worth) at a time. */
typedef struct pending {
    obj_key_t *keys;
    uint32_t *item;
    bool *found;
    uint32_t n;
} pending_t;

/* Fails the session: object i names an object the repository lacks. */
static cn_err_t missing(cn_repos_put_t *p, uint32_t i)
{
    if (p->items[i].kind == CN_REPOS_MANIFEST)
        return cn__rfail(p->rq, CN_E_NOT_FOUND, CN_REPOS_E_OBJECT_MISSING,
                         "object %u: the manifest names a chunk the repository lacks", i);
    return cn__rfail(p->rq, CN_E_NOT_FOUND, CN_REPOS_E_OBJECT_MISSING,
                     "object %u: the change set names a manifest the repository lacks", i);
}

/* Looks the pending references up and empties pd; the first one the
 * repository lacks fails its object (the lowest index: pd holds them in
 * the order of the objects). */
static cn_err_t resolve(cn_repos_put_t *p, cn_meta_txn_t *txn, pending_t *pd)
{
    uint32_t n = pd->n;
    pd->n = 0;
    if (!n)
        return CN_OK;
    CN_TRY(objects_get(txn, p->repo, pd->keys, n, pd->found, NULL, NULL));
    for (uint32_t k = 0; k < n; k++)
        if (!pd->found[k])
            return missing(p, pd->item[k]);
    return CN_OK;
}

/* Object i names (kind, id): satisfied by an earlier object of the batch
 * (the `before` rule: only items with a smaller index count), else pending
 * for the repository's answer (resolved first when pd is full). */
static cn_err_t ref_pending(cn_repos_put_t *p, cn_meta_txn_t *txn, pending_t *pd, uint32_t i,
                            uint8_t kind, const cn_digest_t *id)
{
    if (earlier(p, i, kind, id))
        return CN_OK;
    if (pd->n == CN_META_BATCH_MAX)
        CN_TRY(resolve(p, txn, pd));
    pd->keys[pd->n].kind = kind;
    memcpy(pd->keys[pd->n].id, id->b, CN_DIGEST_LEN);
    pd->item[pd->n++] = i;
    return CN_OK;
}

/* Parses structured object i from its published bytes (*bad: it is not a
 * canonical, valid object; nothing reported yet) and queues its
 * references. */
static cn_err_t collect(cn_repos_put_t *p, cn_meta_txn_t *txn, pending_t *pd, uint32_t i, bool *bad)
{
    put_item_t *it = &p->items[i];
    const uint8_t *map = NULL;
    size_t len = 0;
    CN_TRY(cn__blob_map(p->r, &it->blob, &map, &len));
    cn_err_t err = CN_OK;
    cn_repos_manifest_t m;
    cn_repos_changeset_t cs;
    if (it->kind == CN_REPOS_MANIFEST) {
        if (!(*bad = cn_repos_manifest_parse(map, len, &m) < 0)) {
            it->fsize = m.size;
            for (uint32_t k = 0; k < m.count && err >= 0; k++) {
                cn_repos_chunk_ref_t c;
                cn_repos_manifest_chunk(&m, k, &c);
                err = ref_pending(p, txn, pd, i, CN_REPOS_CHUNK, &c.id);
            }
        }
    } else if (!(*bad = cn_repos_changeset_parse(map, len, &cs) < 0 ||
                        cn_repos_changeset_validate(&cs) < 0)) {
        it->fsize = 0;
        cn_repos_changeset_iter_t ci;
        cn_repos_change_t e;
        cn_repos_changeset_iter(&cs, &ci);
        while (err >= 0 && cn_repos_changeset_next(&ci, &e))
            if (e.kind == CN_REPOS_ADD || e.kind == CN_REPOS_MODIFY || e.kind == CN_REPOS_MOVE)
                err = ref_pending(p, txn, pd, i, CN_REPOS_MANIFEST, &e.manifest);
    }
    cn__unmap(map, len);
    return err;
}

/* Validates every structured object of the session p, failing the first
 * (by index) that does not parse or names an object neither the repository
 * nor an earlier object of the batch holds: the references of many objects
 * are looked up together, and pending ones are resolved before a parse
 * failure is reported, so the object blamed is the one a lookup per
 * reference in order would blame. */
static cn_err_t validate_body(cn_meta_txn_t *txn, void *ctx)
{
    cn_repos_put_t *p = ctx;
    pending_t pd = { malloc(CN_META_BATCH_MAX * sizeof *pd.keys),
                     malloc(CN_META_BATCH_MAX * sizeof *pd.item),
                     malloc(CN_META_BATCH_MAX * sizeof *pd.found), 0 };
    cn_err_t err = pd.keys && pd.item && pd.found ? CN_OK : -ENOMEM;
    bool bad = false;
    for (uint32_t i = 0; i < p->count && err >= 0 && !bad; i++) {
        if (p->items[i].kind == CN_REPOS_CHUNK)
            continue;
        err = collect(p, txn, &pd, i, &bad);
        if (err >= 0 && bad && (err = resolve(p, txn, &pd)) >= 0)
            err = cn__rfail(p->rq, CN_E_INVALID, CN_REPOS_E_OBJECT_INVALID,
                            p->items[i].kind == CN_REPOS_MANIFEST
                                ? "object %u: not a canonical manifest"
                                : "object %u: not a canonical, valid change set",
                            i);
    }
    if (err >= 0)
        err = resolve(p, txn, &pd);
    free(pd.keys);
    free(pd.item);
    free(pd.found);
    return err;
}

/* The session's membership rows, and stored[i] (may be NULL): item i's row
 * is new. */
typedef struct put_rows {
    cn_repos_put_t *p;
    uint8_t *stored;
} put_rows_t;

/* Inserts the membership rows of the n items at[] (distinct keys; 1 <= n
 * <= CN_SQL_REPOS_OBJECT_ROWS_MAX) with one statement, and marks stored[]
 * of those whose row is new (a row already held is left as it is and not
 * returned).  Errors: CN_E_CORRUPT (a returned row is no item's), -ENOMEM,
 * cn_meta_prepare's and cn_meta_step's. */
static cn_err_t insert_rows(cn_meta_txn_t *txn, const put_rows_t *pr, const uint32_t *at,
                            uint32_t n)
{
    const cn_repos_put_t *p = pr->p;
    char *sql = cn__sql_repos_object_insert_rows(n);
    cn_meta_stmt_t *st = NULL;
    cn_err_t err = sql ? cn_meta_prepare(txn, sql, &st) : -ENOMEM;
    free(sql);
    for (uint32_t r = 0; r < n && err >= 0; r++) {
        const put_item_t *it = &p->items[at[r]];
        int b = (int)r * 6;
        if ((err = cn_meta_bind_blob(st, b + 1, p->repo, 16)) >= 0 &&
            (err = cn_meta_bind_int64(st, b + 2, it->kind)) >= 0 &&
            (err = cn_meta_bind_blob(st, b + 3, it->id.b, CN_DIGEST_LEN)) >= 0 &&
            (err = cn_meta_bind_blob(st, b + 4, it->blob.b, CN_DIGEST_LEN)) >= 0 &&
            (err = cn_meta_bind_int64(st, b + 5, (int64_t)it->length)) >= 0)
            err = cn_meta_bind_int64(st, b + 6, (int64_t)it->fsize);
    }
    while (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW) {
        int64_t kind = cn_meta_column_int64(st, 0);
        cn_digest_t id;
        uint32_t i = p->count;
        if (kind >= 0 && kind <= UINT8_MAX && cn__col_fixed(st, 1, id.b, CN_DIGEST_LEN))
            i = first_item(p, (uint8_t)kind, &id);
        if (i == p->count) {
            err = CN_E_CORRUPT;
            break;
        }
        if (pr->stored)
            pr->stored[i] = 1;
    }
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
}

/* The session's membership rows, a row per distinct (kind, id), in order of
 * the items (the first of a repeated key is the one inserted, as a row per
 * item in order would have it), as multi-row INSERTs of up to
 * CN_SQL_REPOS_OBJECT_ROWS_MAX rows (issue 24: a round trip per statement
 * on PostgreSQL).  A statement's rows are a power of two, so that at most
 * a handful of texts are ever prepared.  stored[i]: item i's row is new. */
static cn_err_t insert_body(cn_meta_txn_t *txn, void *ctx)
{
    const put_rows_t *pr = ctx;
    const cn_repos_put_t *p = pr->p;
    uint32_t *at = malloc((p->count ? p->count : 1) * sizeof *at), n = 0;
    if (!at)
        return -ENOMEM;
    if (pr->stored)
        memset(pr->stored, 0, p->count);
    for (uint32_t i = 0; i < p->count; i++)
        if (!earlier(p, i, p->items[i].kind, &p->items[i].id))
            at[n++] = i;
    cn_err_t err = CN_OK;
    for (uint32_t from = 0; from < n && err >= 0;) {
        uint32_t c = CN_SQL_REPOS_OBJECT_ROWS_MAX;
        while (c > n - from)
            c /= 2;
        err = insert_rows(txn, pr, at + from, c);
        from += c;
    }
    free(at);
    return err;
}

cn_err_t cn_repos_put_commit(cn_repos_put_t *p, uint8_t *stored)
{
    cn_err_t err = CN_OK;
    put_rows_t pr = { p, stored };
    if (p->w || p->n != p->count) {
        err = cn__rfail(p->rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                        "fewer objects than the batch announced");
        goto out;
    }
    if ((err = publish_drain(p)) < 0) {
        if (err == CN_E_DIGEST_MISMATCH)
            cn__rfail(p->rq, err, CN_REPOS_E_OBJECT_INVALID,
                      "object %u: the bytes do not hash to the announced id", p->pub_err_item);
        goto out;
    }
    if (!(p->keys = malloc(p->count * sizeof *p->keys))) {
        err = -ENOMEM;
        goto out;
    }
    for (uint32_t i = 0; i < p->count; i++)
        p->keys[i] = (put_key_t){ p->items[i].kind, p->items[i].id, i };
    qsort(p->keys, p->count, sizeof *p->keys, key_cmp);
    err = cn_meta_run(p->r->meta, CN_META_RUN_READ | CN_META_RETRY, validate_body, p);
    if (err >= 0)
        err = cn_meta_run(p->r->meta, CN_META_RUN_WRITE | CN_META_RETRY, insert_body, &pr);
out:
    cn_repos_put_abort(p);
    return err < 0 ? err : CN_OK;
}

/* ---- presence, pins, lookups --------------------------------------------------------- */
/* The k ids (of one kind) whose refs sit at pos[], looked up in one batch
 * statement per CN_META_BATCH_MAX (issue 24: a presence of thousands of
 * chunks is one round trip on PostgreSQL): each found one appends its blob
 * to blobs and its ref's index to at (*m of them, at most cap). */
static cn_err_t find_kind(cn_meta_txn_t *txn, const uint8_t repo[16], uint8_t kind,
                          const cn_digest_t *ids, const uint32_t *pos, uint32_t k,
                          cn_digest_t *blobs, uint32_t *at, uint32_t *m, uint32_t cap)
{
    cn_err_t err = CN_OK;
    for (uint32_t from = 0; from < k && err >= 0; from += CN_META_BATCH_MAX) {
        uint32_t c = k - from < CN_META_BATCH_MAX ? k - from : CN_META_BATCH_MAX;
        cn_meta_stmt_t *st = NULL;
        err =
            cn_meta_batch_query(txn, &st, &cn__sql_repos_batch[CN_SQL_REPOS_BATCH_OBJECT_FIND],
                                ids + from, sizeof *ids, c, "bi", CN__ARG_ID(repo), (int64_t)kind);
        while (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW) {
            int64_t j = cn_meta_column_int64(st, 0);
            size_t len = 0;
            const void *b = cn_meta_column_blob(st, 1, &len);
            if (j < 0 || j >= c || !b || len != CN_DIGEST_LEN || *m >= cap) {
                err = CN_E_CORRUPT;
                break;
            }
            memcpy(blobs[*m].b, b, CN_DIGEST_LEN);
            at[(*m)++] = pos[from + (uint32_t)j];
        }
        cn_meta_finish(st);
    }
    return err < 0 ? err : CN_OK;
}

_Static_assert(sizeof(cn_digest_t) == CN_DIGEST_LEN, "ids pack as the batch key list");

static cn_err_t presence_in(cn_repos_t *r, cn_meta_txn_t *txn, const uint8_t repo[16],
                            const cn_repos_objref_t *refs, uint32_t n, bool *present)
{
    cn_digest_t *blobs = malloc((n ? n : 1) * sizeof *blobs);
    cn_digest_t *ids = malloc((n ? n : 1) * sizeof *ids);
    uint32_t *at = malloc((n ? n : 1) * sizeof *at);
    uint32_t *pos = malloc((n ? n : 1) * sizeof *pos);
    bool *have = malloc((n ? n : 1) * sizeof *have);
    cn_err_t err = blobs && ids && at && pos && have ? CN_OK : -ENOMEM;
    uint32_t m = 0;
    bool kinds[256] = { false };
    for (uint32_t i = 0; i < n; i++) {
        present[i] = false;
        kinds[refs[i].kind] = true;
    }
    /* one batch per kind named (three at most: the key is (repo, kind, id)) */
    for (unsigned kind = 0; kind < 256 && err >= 0; kind++) {
        uint32_t k = 0;
        for (uint32_t i = 0; kinds[kind] && i < n; i++)
            if (refs[i].kind == kind) {
                ids[k] = refs[i].id;
                pos[k++] = i;
            }
        if (k)
            err = find_kind(txn, repo, (uint8_t)kind, ids, pos, k, blobs, at, &m, n);
    }
    if (err >= 0 && m)
        err = cn_store_have(r->store, blobs, m, have);
    for (uint32_t k = 0; k < m && err >= 0; k++)
        present[at[k]] = have[k];
    free(blobs);
    free(ids);
    free(at);
    free(pos);
    free(have);
    return err;
}

/* A batch of object references (a pin's with its workspace and intent) and,
 * per reference, what was found: present[i] (held by the repository and the
 * store) or out[i]. */
typedef struct ref_batch {
    cn_repos_t *r;
    cn_repos_req_t *rq;
    const uint8_t *workspace, *intent;
    const cn_repos_objref_t *refs;
    uint32_t n;
    bool *present;
    cn_repos_obj_t *out;
} ref_batch_t;

static cn_err_t presence_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    const ref_batch_t *rb = ctx;
    return presence_in(rb->r, txn, repo->info.id, rb->refs, rb->n, rb->present);
}

cn_err_t cn_repos_presence(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                           const cn_repos_objref_t *refs, uint32_t n, bool *present)
{
    if (n == 0 || n > CN_REPOS_BATCH_MAX)
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED, "a batch holds 1..8192 objects");
    ref_batch_t rb = { .r = r, .refs = refs, .n = n, .present = present };
    return cn__repo_run(r, rq, repo, CN__READ, CN_META_RUN_READ | CN_META_RETRY, presence_body,
                        &rb);
}

static bool all_zero(const uint8_t id[16])
{
    for (int i = 0; i < 16; i++)
        if (id[i])
            return false;
    return true;
}

/* The intent's row: refused once the intent has an outcome or when it
 * belongs to another workspace; inserted when new. */
static cn_err_t intent_claim(cn_meta_txn_t *txn, const ref_batch_t *rb, const uint8_t repo[16])
{
    cn_meta_stmt_t *st = NULL;
    uint8_t ws[16];
    cn_err_t err = cn_meta_execf(txn, cn__sql_repos[CN_SQL_REPOS_OPERATION_EXISTS], "bb",
                                 CN__ARG_ID(repo), CN__ARG_ID(rb->intent));
    if (err == CN_META_ROW)
        err = cn__rfail(rb->rq, CN_E_CONFLICT, CN_REPOS_E_INTENT_FINALIZED,
                        "the intent already has a final outcome");
    if (err >= 0 && (err = cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_INTENT_WORKSPACE],
                                          "bb", CN__ARG_ID(repo), CN__ARG_ID(rb->intent))) >= 0)
        err = cn_meta_step(st);
    if (err == CN_META_ROW && !cn__col_fixed(st, 0, ws, 16))
        err = CN_E_CORRUPT;
    else if (err == CN_META_ROW && memcmp(ws, rb->workspace, 16) != 0)
        err = cn__rfail(rb->rq, CN_E_CONFLICT, CN_REPOS_E_WORKSPACE_MISMATCH,
                        "the intent belongs to another workspace");
    cn_meta_finish(st);
    if (err == CN_META_DONE)
        err =
            cn_meta_execf(txn, cn__sql_repos[CN_SQL_REPOS_INTENT_INSERT], "bbbi", CN__ARG_ID(repo),
                          CN__ARG_ID(rb->intent), CN__ARG_ID(rb->workspace), cn__repos_now_ms());
    return err < 0 ? err : CN_OK;
}

static cn_err_t pin_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    const ref_batch_t *rb = ctx;
    const uint8_t *id = repo->info.id;
    cn_err_t err = cn__ws_check(txn, rb->rq, id, rb->workspace);
    if (err >= 0)
        err = intent_claim(txn, rb, id);
    for (uint32_t i = 0; i < rb->n && err >= 0; i++)
        err = cn_meta_execf(txn, cn__sql_repos[CN_SQL_REPOS_PIN_INSERT], "bbib", CN__ARG_ID(id),
                            CN__ARG_ID(rb->intent), (int64_t)rb->refs[i].kind,
                            CN__ARG_DIGEST(&rb->refs[i].id));
    if (err >= 0)
        err = presence_in(rb->r, txn, id, rb->refs, rb->n, rb->present);
    return err;
}

cn_err_t cn_repos_pin(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                      const uint8_t workspace[16], const uint8_t intent[16],
                      const cn_repos_objref_t *refs, uint32_t n, bool *present)
{
    if (n == 0 || n > CN_REPOS_BATCH_MAX)
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED, "a batch holds 1..8192 objects");
    if (all_zero(workspace) || all_zero(intent))
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                         "the workspace and the intent must be nonzero");
    for (uint32_t i = 0; i < n; i++)
        if (refs[i].kind < CN_REPOS_CHUNK || refs[i].kind > CN_REPOS_CHANGESET)
            return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                             "pins name chunks, manifests and change sets");
    ref_batch_t rb = { r, rq, workspace, intent, refs, n, present, NULL };
    return cn__repo_run(r, rq, repo, CN__WRITE, CN_META_RUN_WRITE | CN_META_RETRY, pin_body, &rb);
}

static cn_err_t lookup_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    const ref_batch_t *rb = ctx;
    obj_key_t *keys = malloc(rb->n * sizeof *keys);
    bool *found = malloc(rb->n * sizeof *found);
    cn_digest_t *blob = malloc(rb->n * sizeof *blob);
    uint64_t *len = malloc(rb->n * sizeof *len);
    cn_err_t err = keys && found && blob && len ? CN_OK : -ENOMEM;
    for (uint32_t i = 0; i < rb->n && err >= 0; i++) {
        keys[i].kind = rb->refs[i].kind;
        memcpy(keys[i].id, rb->refs[i].id.b, CN_DIGEST_LEN);
    }
    if (err >= 0)
        err = objects_get(txn, repo->info.id, keys, rb->n, found, blob, len);
    for (uint32_t i = 0; i < rb->n && err >= 0; i++) {
        cn_repos_obj_t *o = &rb->out[i];
        memset(o, 0, sizeof *o);
        o->kind = rb->refs[i].kind;
        o->id = rb->refs[i].id;
        o->present = found[i];
        if (found[i]) {
            o->blob = blob[i];
            o->length = len[i];
        }
    }
    free(keys);
    free(found);
    free(blob);
    free(len);
    return err;
}

cn_err_t cn_repos_get_lookup(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                             const cn_repos_objref_t *refs, uint32_t n, cn_repos_obj_t *out)
{
    if (n == 0 || n > CN_REPOS_BATCH_MAX)
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED, "a batch holds 1..8192 objects");
    ref_batch_t rb = { .r = r, .refs = refs, .n = n, .out = out };
    return cn__repo_run(r, rq, repo, CN__READ, CN_META_RUN_READ | CN_META_RETRY, lookup_body, &rb);
}

cn_err_t cn_repos_object_fd(cn_repos_t *r, const cn_repos_obj_t *o, int *fd)
{
    uint64_t len = 0;
    CN_TRY(cn_store_open_fd(r->store, &o->blob, fd, &len));
    return CN_OK;
}

cn_err_t cn_repos_object_fd_at(cn_repos_t *r, const cn_repos_obj_t *o, int *fd, uint64_t *off)
{
    uint64_t len = 0;
    CN_TRY(cn_store_open_fd_at(r->store, &o->blob, fd, off, &len));
    return CN_OK;
}

cn_err_t cn_repos_object_read(cn_repos_t *r, const cn_repos_obj_t *o, uint64_t off, uint64_t len,
                              cn_repos_sink_fn sink, void *ctx)
{
    uint64_t served = 0;
    CN_TRY(cn_store_read_range(r->store, &o->blob, off, len, sink, ctx, NULL, &served));
    return served == (len < o->length - off ? len : o->length - off) ? CN_OK : CN_E_CORRUPT;
}

cn_err_t cn_repos_object_read_at(cn_repos_t *r, const cn_repos_obj_t *o, uint64_t off, void *buf,
                                 size_t cap, size_t *n, bool last)
{
    *n = 0;
    if (off > o->length)
        return CN_E_RANGE;
    size_t want = o->length - off < cap ? (size_t)(o->length - off) : cap, got = 0;
    if (!want)
        return CN_OK;
    CN_TRY(cn_store_read_part(r->store, &o->blob, off, buf, want, &got, last));
    if (got != want)
        return CN_E_CORRUPT;
    *n = got;
    return CN_OK;
}
