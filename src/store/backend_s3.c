/* The S3 tier: published blobs as objects of an S3-compatible store
 * (docs/fleet.md, "Bytes"): the store's operations as S3 requests (signed,
 * sent and retried by s3_http.c).
 *
 * Layout and decisions:
 *  - Blob d is the object PREFIX/<lowercase hex of d>; its stored form is in
 *    the object's metadata, x-amz-meta-cairn-form: raw | lz4 (absent = raw).
 *    A listing (ListObjectsV2) does not carry metadata: list() reports every
 *    blob as raw with its stored size, which is all the sweeper reads.
 *  - Written once: PUT with If-None-Match: *; 412 means it exists (its
 *    LastModified is then refreshed, as a local publish refreshes mtime).  A
 *    backend that answers 501 or 400 to the condition is asked HEAD before
 *    PUT from then on.  Blobs of S3_MULTIPART_MIN bytes or more go as a
 *    multipart upload (HEAD first; the completion carries the condition).
 *  - touch() is a self-copy (CopyObject onto itself, metadata replaced): it
 *    restarts LastModified, the mtime the sweeper's grace window reads; no
 *    metadata-side time is needed and every node sees the same value.
 *  - Reads fill the local cache (cache.c) with the whole object, hashed
 *    before it is named; a retried GET resumes with a Range from the bytes
 *    already written.  open() hands out the cache file (sendfile-able).  A
 *    large raw blob missing from the cache is served while it lands
 *    (open_lazy and stream, s3_fill.c); one fill per blob serves every
 *    reader that asks meanwhile.
 *  - sync() is a no-op: an S3 PUT answered 2xx is durable.
 *  - Faults (transport errors and timeouts, 5xx, 408, 429) are retried with
 *    jittered exponential backoff while the request's deadline (30 s by
 *    default) allows, then CN_E_UNAVAILABLE.  A fault is never reported as
 *    absence: only a 404 is CN_E_NOT_FOUND.
 * The backend never sees namespaces or pins, and never answers a put before
 * the backend answered it with success.
 */
#include "store/s3_int.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cairn/sigv4.h"
#include "cairn/util.h"

/* ---- keys, forms and small helpers ------------------------------------------ */

void cn__s3_blob_key(const s3_be_t *be, const cn_digest_t *d, char out[S3_KEY_MAX])
{
    char hex[CN_DIGEST_HEX_LEN + 1];
    cn_digest_hex(d, hex);
    snprintf(out, S3_KEY_MAX, "%s%s%s", be->prefix, *be->prefix ? "/" : "", hex);
}

static const char *form_name(cn_store_form_t f)
{
    return f == CN_STORE_LZ4 ? "lz4" : "raw";
}

cn_store_form_t cn__s3_form_of(const char *s)
{
    return strcmp(s, "lz4") == 0 ? CN_STORE_LZ4 : CN_STORE_RAW;
}

/* The text of the first <tag>…</tag> in [p, end), entities decoded. */
static bool xml_text(const char *p, const char *end, const char *tag, char *out, size_t cap)
{
    char open[64], close_[64];
    snprintf(open, sizeof open, "<%s>", tag);
    snprintf(close_, sizeof close_, "</%s>", tag);
    const char *a = memmem(p, (size_t)(end - p), open, strlen(open));
    if (!a)
        return false;
    a += strlen(open);
    const char *b = memmem(a, (size_t)(end - a), close_, strlen(close_));
    if (!b)
        return false;
    static const char *const ent[][2] = {
        { "&amp;", "&" }, { "&lt;", "<" }, { "&gt;", ">" }, { "&quot;", "\"" }, { "&apos;", "'" }
    };
    size_t n = 0;
    while (a < b) {
        size_t k = 0;
        if (*a == '&')
            for (k = 0; k < 5 && strncmp(a, ent[k][0], strlen(ent[k][0])) != 0; k++)
                ;
        const char *rep = *a == '&' && k < 5 ? ent[k][1] : NULL;
        if (n + 1 >= cap)
            return false;
        out[n++] = rep ? rep[0] : *a;
        a += rep ? strlen(ent[k][0]) : 1;
    }
    out[n] = '\0';
    return true;
}

static cn_err_t s3_head(s3_be_t *be, const char *key, cn__be_stat_t *st)
{
    s3_req_t q;
    cn__s3_req_init(&q, "HEAD", key);
    q.small = true;
    cn_err_t rc = cn__s3_call(be, &q);
    if (rc == CN_OK && q.status == 404)
        rc = CN_E_NOT_FOUND;
    else if (rc == CN_OK && q.status / 100 != 2)
        rc = cn__s3_unexpected(&q);
    if (rc == CN_OK)
        *st = (cn__be_stat_t){ q.length, q.last_modified_ms, cn__s3_form_of(q.form) };
    cn_buf_free(&q.body);
    return rc;
}

/* Restarts key's LastModified by copying it onto itself (the header
 * comment): CN_E_NOT_FOUND when it is gone. */
static cn_err_t s3_touch_key(s3_be_t *be, const char *key, cn_store_form_t form)
{
    s3_req_t q;
    cn_buf_t src = { 0 };
    cn__s3_req_init(&q, "PUT", key);
    cn_err_t rc = cn_buf_printf(&src, "/%s/", be->bucket);
    if (rc == CN_OK)
        rc = cn_sigv4_uri_encode(&src, key, strlen(key), true);
    if (rc == CN_OK)
        rc = cn_buf_put_u8(&src, 0);
    if (rc < 0) {
        cn_buf_free(&src);
        return rc;
    }
    cn__s3_req_hdr(&q, "x-amz-copy-source", (const char *)src.data);
    cn__s3_req_hdr(&q, "x-amz-meta-cairn-form", form_name(form));
    cn__s3_req_hdr(&q, "x-amz-metadata-directive", "REPLACE");
    rc = cn__s3_call(be, &q);
    if (rc == CN_OK && q.status == 404)
        rc = CN_E_NOT_FOUND;
    else if (rc == CN_OK && (q.status / 100 != 2 || memmem(q.body.data, q.body.len, "<Error>", 7)))
        rc = cn__s3_unexpected(&q);
    cn_buf_free(&src);
    cn_buf_free(&q.body);
    return rc;
}

/* ---- put -------------------------------------------------------------------- */

/* One PUT of the whole file: CN_E_EXISTS when the condition failed. */
static cn_err_t put_single(s3_be_t *be, const char *key, int fd, uint64_t size,
                           cn_store_form_t form)
{
    for (;;) {
        bool cond = !atomic_load(&be->inm_unsupported);
        s3_req_t q;
        cn__s3_req_init(&q, "PUT", key);
        q.in_fd = fd;
        q.in_len = size;
        q.has_body = true;
        q.small = size <= S3_SMALL_BODY;
        if (cond)
            cn__s3_req_hdr(&q, "if-none-match", "*");
        cn__s3_req_hdr(&q, "x-amz-meta-cairn-form", form_name(form));
        cn_err_t rc = cn__s3_call(be, &q);
        long st = q.status;
        if (rc == CN_OK && st / 100 != 2 && st != 412 && !(cond && (st == 501 || st == 400)))
            rc = cn__s3_unexpected(&q);
        cn_buf_free(&q.body);
        if (rc < 0)
            return rc;
        if (st == 412)
            return CN_E_EXISTS;
        if (st / 100 == 2)
            return CN_OK;
        /* 501/400 to the condition: HEAD before PUT from now on. */
        cn_warn("store", "s3: the backend refuses If-None-Match (%ld): HEAD before PUT", st);
        atomic_store(&be->inm_unsupported, true);
        cn__be_stat_t hs;
        rc = s3_head(be, key, &hs);
        if (rc == CN_OK)
            return CN_E_EXISTS;
        if (rc != CN_E_NOT_FOUND)
            return rc;
    }
}

typedef struct mpu {
    char id[512];
    char enc_id[1600];
    char (*etags)[160];
    uint32_t parts;
} mpu_t;

static cn_err_t mpu_initiate(s3_be_t *be, const char *key, cn_store_form_t form, mpu_t *m)
{
    s3_req_t q;
    cn__s3_req_init(&q, "POST", key);
    q.query = "uploads=";
    cn__s3_req_hdr(&q, "x-amz-meta-cairn-form", form_name(form));
    cn_err_t rc = cn__s3_call(be, &q);
    if (rc == CN_OK && q.status / 100 != 2)
        rc = cn__s3_unexpected(&q);
    if (rc == CN_OK && !xml_text((const char *)q.body.data, (const char *)q.body.data + q.body.len,
                                 "UploadId", m->id, sizeof m->id))
        rc = cn__s3_unexpected(&q);
    cn_buf_free(&q.body);
    if (rc < 0)
        return rc;
    cn_buf_t enc = { 0 };
    rc = cn_sigv4_uri_encode(&enc, m->id, strlen(m->id), false);
    if (rc == CN_OK && enc.len < sizeof m->enc_id) {
        memcpy(m->enc_id, enc.data, enc.len);
        m->enc_id[enc.len] = '\0';
    } else if (rc == CN_OK) {
        rc = CN_E_LIMIT;
    }
    cn_buf_free(&enc);
    return rc;
}

static cn_err_t mpu_part(s3_be_t *be, const char *key, mpu_t *m, uint32_t i, int fd, uint64_t off,
                         uint64_t len)
{
    char query[1700];
    snprintf(query, sizeof query, "partNumber=%u&uploadId=%s", i + 1, m->enc_id);
    s3_req_t q;
    cn__s3_req_init(&q, "PUT", key);
    q.query = query;
    q.in_fd = fd;
    q.in_off = off;
    q.in_len = len;
    q.has_body = true;
    cn_err_t rc = cn__s3_call(be, &q);
    if (rc == CN_OK && (q.status / 100 != 2 || !q.etag[0]))
        rc = cn__s3_unexpected(&q);
    if (rc == CN_OK)
        memcpy(m->etags[i], q.etag, sizeof q.etag);
    cn_buf_free(&q.body);
    return rc;
}

/* CN_E_EXISTS when the completion's condition failed (the object exists). */
static cn_err_t mpu_complete(s3_be_t *be, const char *key, mpu_t *m)
{
    char query[1700];
    snprintf(query, sizeof query, "uploadId=%s", m->enc_id);
    cn_buf_t xml = { 0 };
    cn_err_t rc = cn_buf_append_str(&xml, "<CompleteMultipartUpload>");
    for (uint32_t i = 0; rc == CN_OK && i < m->parts; i++)
        rc = cn_buf_printf(&xml, "<Part><PartNumber>%u</PartNumber><ETag>%s</ETag></Part>", i + 1,
                           m->etags[i]);
    if (rc == CN_OK)
        rc = cn_buf_append_str(&xml, "</CompleteMultipartUpload>");
    if (rc < 0) {
        cn_buf_free(&xml);
        return rc;
    }
    s3_req_t q;
    cn__s3_req_init(&q, "POST", key);
    q.query = query;
    q.in_mem = (const char *)xml.data;
    q.in_mem_len = xml.len;
    q.has_body = true;
    if (!atomic_load(&be->inm_unsupported))
        cn__s3_req_hdr(&q, "if-none-match", "*");
    rc = cn__s3_call(be, &q);
    if (rc == CN_OK && q.status == 412)
        rc = CN_E_EXISTS;
    else if (rc == CN_OK &&
             (q.status / 100 != 2 || memmem(q.body.data, q.body.len, "<Error>", 7) != NULL))
        rc = cn__s3_unexpected(&q); /* S3 may report a failed completion inside a 200 */
    cn_buf_free(&q.body);
    cn_buf_free(&xml);
    return rc;
}

static void mpu_abort(s3_be_t *be, const char *key, mpu_t *m)
{
    char query[1700];
    snprintf(query, sizeof query, "uploadId=%s", m->enc_id);
    s3_req_t q;
    cn__s3_req_init(&q, "DELETE", key);
    q.query = query;
    if (cn__s3_call(be, &q) < 0 || q.status / 100 != 2)
        cn_warn("store",
                "s3: abort of upload %s of %s failed (the backend's lifecycle rule"
                " must reap it)",
                m->id, key);
    cn_buf_free(&q.body);
}

static cn_err_t put_multipart(s3_be_t *be, const char *key, int fd, uint64_t size,
                              cn_store_form_t form)
{
    uint64_t part = S3_PART_MIN;
    while (size / part >= S3_MAX_PARTS)
        part *= 2;
    mpu_t m = { .parts = (uint32_t)((size + part - 1) / part) };
    if (!(m.etags = calloc(m.parts, sizeof m.etags[0])))
        return -ENOMEM;
    cn_err_t rc = mpu_initiate(be, key, form, &m);
    bool started = rc == CN_OK;
    for (uint32_t i = 0; rc == CN_OK && i < m.parts; i++) {
        uint64_t off = (uint64_t)i * part;
        rc = mpu_part(be, key, &m, i, fd, off, size - off < part ? size - off : part);
    }
    if (rc == CN_OK)
        rc = mpu_complete(be, key, &m);
    if (rc < 0 && started)
        mpu_abort(be, key, &m);
    free(m.etags);
    return rc;
}

/* Stores the file unless the key exists: CN_E_EXISTS then. */
static cn_err_t put_once(s3_be_t *be, const char *key, int staging_dirfd, const char *staged_name,
                         cn_store_form_t form, uint64_t *size_out)
{
    struct stat sb = { 0 };
    int fd = openat(staging_dirfd, staged_name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    cn_err_t rc = fstat(fd, &sb) < 0 ? -errno : CN_OK;
    uint64_t size = (uint64_t)sb.st_size;
    bool big = size >= S3_MULTIPART_MIN;
    if (rc == CN_OK && (big || atomic_load(&be->inm_unsupported))) {
        cn__be_stat_t hs;
        rc = s3_head(be, key, &hs);
        rc = rc == CN_OK ? CN_E_EXISTS : rc == CN_E_NOT_FOUND ? CN_OK : rc;
    }
    if (rc == CN_OK)
        rc = big ? put_multipart(be, key, fd, size, form) : put_single(be, key, fd, size, form);
    close(fd);
    *size_out = size;
    return rc;
}

static cn_err_t s3_put(cn__backend_t *base, int staging_dirfd, const char *staged_name,
                       const cn_digest_t *d, cn_store_form_t form, unsigned flags, bool *existed)
{
    s3_be_t *be = (s3_be_t *)base;
    char key[S3_KEY_MAX];
    uint64_t size = 0;
    cn_err_t rc = CN_E_EXISTS;
    (void)flags; /* a 2xx answer is durable: CN__BE_PUT_SYNC holds by itself */
    *existed = false;
    cn__s3_blob_key(be, d, key);
    /* Twice at most: an object swept between the failed condition and the
     * touch (another node's sweeper) is stored anew. */
    for (int i = 0; i < 2 && rc == CN_E_EXISTS; i++) {
        rc = put_once(be, key, staging_dirfd, staged_name, form, &size);
        if (rc == CN_E_EXISTS) {
            rc = s3_touch_key(be, key, form);
            if (rc == CN_OK)
                *existed = true; /* the caller removes the staged file */
            else if (rc == CN_E_NOT_FOUND)
                rc = CN_E_EXISTS;
        }
    }
    if (rc == CN_E_EXISTS)
        rc = CN_E_CONFLICT;
    if (rc < 0 || *existed)
        return rc;
    /* Stored: the staged file (hashed as it was written) becomes the cache
     * entry, or goes; the caller treats it as consumed either way. */
    if (cn__cache_commit(be->cache, staging_dirfd, staged_name, d, form, size) < 0)
        (void)unlinkat(staging_dirfd, staged_name, 0);
    return CN_OK;
}

/* ---- reads ------------------------------------------------------------------ */

cn_err_t cn__s3_fetch(s3_be_t *be, const cn_digest_t *d, int f, cn__s3_progress_fn progress,
                      cn__s3_resume_fn resume, void *ctx, cn__be_stat_t *st)
{
    char key[S3_KEY_MAX];
    cn__s3_blob_key(be, d, key);
    s3_req_t q;
    cn_blake3_t h;
    cn_blake3_init(&h);
    cn__s3_req_init(&q, "GET", key);
    q.out_fd = f;
    q.out_hash = &h; /* raw bytes are hashed as they arrive */
    q.progress = progress;
    q.progress_ctx = ctx;
    cn_err_t rc = cn__s3_call(be, &q);
    /* Each round asks for a Range from out_done; the hash runs on. */
    while (rc == CN_E_CLOSED && resume && resume(ctx))
        rc = cn__s3_call(be, &q);
    /* A missing bucket is a misconfigured backend, not a missing blob. */
    if (rc == CN_OK && q.status == 404 && !memmem(q.body.data, q.body.len, "NoSuchBucket", 12))
        rc = CN_E_NOT_FOUND;
    else if (rc == CN_OK && q.status / 100 != 2)
        rc = cn__s3_unexpected(&q);
    cn_store_form_t form = cn__s3_form_of(q.form);
    cn_digest_t got;
    if (rc == CN_OK && form == CN_STORE_RAW)
        cn_blake3_final(&h, &got);
    else if (rc == CN_OK) /* an envelope hashes its decoded bytes */
        rc = cn__store_hash_fd(f, q.out_done, form, &got);
    if (rc == CN_OK && !cn_ct_equal(got.b, d->b, CN_DIGEST_LEN))
        rc = CN_E_CORRUPT;
    if (rc == CN_E_CORRUPT)
        cn_error("store", "s3: object %s does not hash to its name: not served", key);
    if (rc == CN_OK && q.last_modified_ms >= 0) {
        struct timespec ts[2] = { { 0, UTIME_OMIT }, { (time_t)(q.last_modified_ms / 1000), 0 } };
        (void)futimens(f, ts);
    }
    if (rc == CN_OK)
        *st = (cn__be_stat_t){ q.out_done, q.last_modified_ms, form };
    cn_buf_free(&q.body);
    return rc;
}

/* d's cache file, hashed at its first use in this process (cache.c K2):
 * CN_OK, or CN_E_NOT_FOUND when it is not cached (or was evicted now). */
static cn_err_t cached_open(s3_be_t *be, const cn_digest_t *d, int *fd, cn__be_stat_t *st)
{
    bool verified = false;
    int f;
    cn_err_t rc = cn__cache_get(be->cache, d, &f, st, &verified);
    if (rc == CN_OK && !verified) {
        cn_digest_t got;
        rc = cn__store_hash_fd(f, st->size, st->form, &got);
        if (rc == CN_OK && cn_ct_equal(got.b, d->b, CN_DIGEST_LEN)) {
            cn__cache_verified(be->cache, d);
        } else {
            char hex[CN_DIGEST_HEX_LEN + 1];
            cn_digest_hex(d, hex);
            cn_warn("store", "cache: %s does not hash to its name: evicted, fetched again", hex);
            close(f);
            cn__cache_evict(be->cache, d);
            rc = CN_E_NOT_FOUND;
        }
    }
    if (rc == CN_OK)
        *fd = f;
    return rc;
}

static cn_err_t s3_open(cn__backend_t *base, const cn_digest_t *d, int *fd, cn__be_stat_t *st)
{
    s3_be_t *be = (s3_be_t *)base;
    cn_err_t rc = cached_open(be, d, fd, st);
    return rc == CN_E_NOT_FOUND ? cn__s3_fill_open(be, d, false, fd, st) : rc;
}

static cn_err_t s3_open_lazy(cn__backend_t *base, const cn_digest_t *d, int *fd, cn__be_stat_t *st)
{
    s3_be_t *be = (s3_be_t *)base;
    cn_err_t rc = cached_open(be, d, fd, st);
    return rc == CN_E_NOT_FOUND ? cn__s3_fill_open(be, d, true, fd, st) : rc;
}

static cn_err_t s3_stream(cn__backend_t *base, const cn_digest_t *d, uint64_t off, uint64_t len,
                          bool hold, cn_store_sink_fn sink, void *ctx, cn_blake3_t *h,
                          uint64_t *served, bool *streamed)
{
    return cn__s3_fill_stream((s3_be_t *)base, d, off, len, hold, sink, ctx, h, served, streamed);
}

static cn_err_t s3_stat(cn__backend_t *base, const cn_digest_t *d, cn__be_stat_t *st)
{
    s3_be_t *be = (s3_be_t *)base;
    char key[S3_KEY_MAX];
    cn__s3_blob_key(be, d, key);
    return s3_head(be, key, st);
}

static cn_err_t s3_touch(cn__backend_t *base, const cn_digest_t *d)
{
    s3_be_t *be = (s3_be_t *)base;
    char key[S3_KEY_MAX];
    cn__be_stat_t st = { 0 };
    cn__s3_blob_key(be, d, key);
    CN_TRY(s3_head(be, key, &st));
    return s3_touch_key(be, key, st.form);
}

static cn_err_t s3_remove(cn__backend_t *base, const cn_digest_t *d, uint64_t *freed)
{
    s3_be_t *be = (s3_be_t *)base;
    char key[S3_KEY_MAX];
    cn__be_stat_t st = { 0 };
    cn__s3_blob_key(be, d, key);
    CN_TRY(s3_head(be, key, &st));
    s3_req_t q;
    cn__s3_req_init(&q, "DELETE", key);
    q.small = true;
    cn_err_t rc = cn__s3_call(be, &q);
    if (rc == CN_OK && q.status / 100 != 2 && q.status != 404)
        rc = cn__s3_unexpected(&q);
    cn_buf_free(&q.body);
    if (rc < 0)
        return rc;
    cn__cache_evict(be->cache, d);
    if (freed)
        *freed = st.size;
    return CN_OK;
}

/* "2026-12-04T12:00:00.000Z" → Unix ms (-1 if malformed). */
static int64_t iso8601_ms(const char *s)
{
    struct tm tm = { 0 };
    int ms = 0;
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
               &tm.tm_min, &tm.tm_sec) != 6)
        return -1;
    const char *dot = strchr(s, '.');
    if (dot)
        ms = atoi(dot + 1) % 1000;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return (int64_t)timegm(&tm) * 1000 + ms;
}

/* Calls fn for each blob of one ListObjectsV2 page; *next = its token. */
static cn_err_t list_page(s3_be_t *be, const cn_buf_t *body, cn__be_list_fn fn, void *ctx,
                          char *next, size_t cap)
{
    const char *p = (const char *)body->data, *end = p + body->len;
    size_t plen = strlen(be->prefix) + (*be->prefix ? 1 : 0);
    const char *c;
    while ((c = memmem(p, (size_t)(end - p), "<Contents>", 10)) != NULL) {
        const char *ce = memmem(c, (size_t)(end - c), "</Contents>", 11);
        if (!ce)
            break;
        char key[S3_KEY_MAX], size[32], lm[64];
        cn_digest_t d;
        if (xml_text(c, ce, "Key", key, sizeof key) && xml_text(c, ce, "Size", size, sizeof size) &&
            xml_text(c, ce, "LastModified", lm, sizeof lm) &&
            strlen(key) == plen + CN_DIGEST_HEX_LEN &&
            cn_digest_parse(key + plen, CN_DIGEST_HEX_LEN, &d) == CN_OK) {
            char hex[CN_DIGEST_HEX_LEN + 1];
            cn_digest_hex(&d, hex);
            if (strcmp(hex, key + plen) == 0) { /* lowercase only: our own names */
                cn__be_stat_t st = { strtoull(size, NULL, 10), iso8601_ms(lm), CN_STORE_RAW };
                CN_TRY(fn(ctx, &d, &st));
            }
        }
        p = ce + 11;
    }
    char trunc[8];
    next[0] = '\0';
    if (xml_text((const char *)body->data, end, "IsTruncated", trunc, sizeof trunc) &&
        !strcmp(trunc, "true") &&
        !xml_text((const char *)body->data, end, "NextContinuationToken", next, cap))
        return CN_E_PROTOCOL;
    return CN_OK;
}

static cn_err_t s3_list(cn__backend_t *base, cn__be_list_fn fn, void *ctx)
{
    s3_be_t *be = (s3_be_t *)base;
    char token[1024] = "";
    cn_buf_t query = { 0 }, pfx = { 0 };
    cn_err_t rc = cn_buf_printf(&pfx, "%s%s", be->prefix, *be->prefix ? "/" : "");
    do {
        cn_buf_reset(&query);
        if (rc == CN_OK && token[0]) {
            rc = cn_buf_append_str(&query, "continuation-token=");
            if (rc == CN_OK)
                rc = cn_sigv4_uri_encode(&query, token, strlen(token), false);
            if (rc == CN_OK)
                rc = cn_buf_append_str(&query, "&");
        }
        if (rc == CN_OK)
            rc = cn_buf_append_str(&query, "list-type=2&prefix=");
        if (rc == CN_OK)
            rc = cn_sigv4_uri_encode(&query, (const char *)pfx.data, pfx.len, false);
        if (rc == CN_OK)
            rc = cn_buf_put_u8(&query, 0);
        if (rc < 0)
            break;
        s3_req_t q;
        cn__s3_req_init(&q, "GET", NULL);
        q.query = (const char *)query.data;
        rc = cn__s3_call(be, &q);
        if (rc == CN_OK && q.status / 100 != 2)
            rc = cn__s3_unexpected(&q);
        if (rc == CN_OK)
            rc = list_page(be, &q.body, fn, ctx, token, sizeof token);
        cn_buf_free(&q.body);
    } while (rc == CN_OK && token[0]);
    cn_buf_free(&query);
    cn_buf_free(&pfx);
    return rc;
}

static cn_err_t s3_sync(cn__backend_t *base)
{
    (void)base; /* every put returned only after a 2xx: durable already */
    return CN_OK;
}

static void s3_close(cn__backend_t *base)
{
    s3_be_t *be = (s3_be_t *)base;
    if (!be)
        return;
    cn__s3_fills_shutdown(be);
    for (size_t i = 0; i < be->n_pool; i++)
        curl_easy_cleanup(be->pool[i]);
    cn__cache_close(be->cache);
    pthread_mutex_destroy(&be->pool_mu);
    free(be->base_url);
    free(be->host);
    free(be->bucket);
    free(be->prefix);
    free(be->region);
    free(be->key_id);
    if (be->secret)
        explicit_bzero(be->secret, strlen(be->secret));
    free(be->secret);
    free(be);
}

cn_err_t cn__backend_s3_ping(cn__backend_t *base)
{
    s3_be_t *be = (s3_be_t *)base;
    s3_req_t q;
    cn__s3_req_init(&q, "HEAD", NULL);
    q.once = true;
    cn_err_t rc = cn__s3_call(be, &q);
    if (rc == CN_OK && q.status / 100 != 2)
        rc = CN_E_UNAVAILABLE;
    cn_buf_free(&q.body);
    return rc;
}

static const cn__backend_ops_t s3_ops = {
    .put = s3_put,
    .open = s3_open,
    .open_lazy = s3_open_lazy,
    .stream = s3_stream,
    .stat = s3_stat,
    .touch = s3_touch,
    .remove = s3_remove,
    .list = s3_list,
    .sync = s3_sync,
    .close = s3_close,
};

/* ---- configuration ---------------------------------------------------------- */

/* KEY_ID:SECRET from the file or the environment. */
static cn_err_t load_credentials(const char *file, char **key_id, char **secret)
{
    char buf[1024];
    if (file) {
        FILE *f = fopen(file, "re");
        if (!f) {
            cn_error("store", "--blob-credentials %s: %s", file, strerror(errno));
            return CN_E_INVALID;
        }
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
            buf[--n] = '\0';
        char *colon = strchr(buf, ':');
        if (!colon || colon == buf || !colon[1]) {
            cn_error("store", "--blob-credentials %s: want KEY_ID:SECRET", file);
            explicit_bzero(buf, sizeof buf);
            return CN_E_INVALID;
        }
        *colon = '\0';
        *key_id = strdup(buf);
        *secret = strdup(colon + 1);
        explicit_bzero(buf, sizeof buf);
    } else {
        const char *k = getenv("AWS_ACCESS_KEY_ID"), *s = getenv("AWS_SECRET_ACCESS_KEY");
        if (!k || !*k || !s || !*s) {
            cn_error("store", "--blob-store needs --blob-credentials or AWS_ACCESS_KEY_ID and"
                              " AWS_SECRET_ACCESS_KEY");
            return CN_E_INVALID;
        }
        *key_id = strdup(k);
        *secret = strdup(s);
    }
    return *key_id && *secret ? CN_OK : -ENOMEM;
}

/* s3://BUCKET/PREFIX and the endpoint into be. */
static cn_err_t parse_target(s3_be_t *be, const struct cn_store_tier *t)
{
    const char *u = t->blob_store, *ep = t->endpoint;
    if (strncmp(u, "s3://", 5) != 0 || !u[5] || u[5] == '/' || !ep ||
        (strncmp(ep, "http://", 7) != 0 && strncmp(ep, "https://", 8) != 0)) {
        cn_error("store", "--blob-store wants s3://BUCKET[/PREFIX] and --blob-endpoint"
                          " http[s]://HOST[:PORT]");
        return CN_E_INVALID;
    }
    const char *slash = strchr(u + 5, '/');
    size_t bl = slash ? (size_t)(slash - u - 5) : strlen(u + 5);
    be->bucket = strndup(u + 5, bl);
    const char *pf = slash ? slash + 1 : "";
    size_t pl = strlen(pf);
    while (pl && pf[pl - 1] == '/')
        pl--;
    be->prefix = strndup(pf, pl);
    const char *hs = strstr(ep, "://") + 3;
    size_t hl = strcspn(hs, "/");
    size_t sl = (size_t)(hs - ep);
    if (!hl)
        return CN_E_INVALID;
    cn_buf_t b = { 0 }, h = { 0 };
    cn_err_t rc = CN_OK;
    if (t->virtual_host)
        rc = cn_buf_printf(&h, "%s.%.*s", be->bucket, (int)hl, hs);
    else
        rc = cn_buf_printf(&h, "%.*s", (int)hl, hs);
    if (rc == CN_OK)
        rc = cn_buf_printf(&b, "%.*s%.*s", (int)sl, ep, (int)h.len, (const char *)h.data);
    if (rc == CN_OK) {
        be->host = strndup((const char *)h.data, h.len);
        be->base_url = strndup((const char *)b.data, b.len);
    }
    cn_buf_free(&b);
    cn_buf_free(&h);
    return rc == CN_OK && be->bucket && be->prefix && be->host && be->base_url ? CN_OK : -ENOMEM;
}

/* HEAD of the bucket at start: a bucket that does not exist (404) would make
 * every blob look absent, so the store refuses to open; a backend that does
 * not answer now is only reported (/_cairn/ready says 503 until it does). */
static cn_err_t check_bucket(s3_be_t *be)
{
    s3_req_t q;
    cn__s3_req_init(&q, "HEAD", NULL);
    q.once = true;
    cn_err_t rc = cn__s3_call(be, &q);
    long st = q.status;
    cn_buf_free(&q.body);
    if (rc == CN_OK && (st == 404 || st == 403 || st == 401)) {
        cn_error("store", "blob tier: bucket %s at %s answers %ld: %s", be->bucket, be->base_url,
                 st, st == 404 ? "no such bucket" : "access denied");
        return CN_E_INVALID;
    }
    if (rc < 0 || st / 100 != 2)
        cn_warn("store", "blob tier: %s does not answer yet; serving what the cache holds",
                be->base_url);
    return CN_OK;
}

static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

cn_err_t cn__backend_s3_open(const struct cn_store_tier *tier, const char *cache_dir,
                             cn__backend_t **out)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, curl_init_once);
    s3_be_t *be = calloc(1, sizeof *be);
    if (!be)
        return -ENOMEM;
    pthread_mutex_init(&be->pool_mu, NULL);
    cn__s3_fills_init(be);
    be->base.ops = &s3_ops;
    be->vhost = tier->virtual_host;
    be->deadline_ms = tier->deadline_ms > 0 ? tier->deadline_ms : S3_DEFAULT_DEADLINE_MS;
    be->relay_idle_ms = tier->relay_idle_ms > 0 ? tier->relay_idle_ms : S3_RELAY_IDLE_MS;
    be->region = strdup(tier->region && *tier->region ? tier->region : "us-east-1");
    cn_err_t rc = be->region ? parse_target(be, tier) : -ENOMEM;
    if (rc == CN_OK)
        rc = load_credentials(tier->credentials_file, &be->key_id, &be->secret);
    if (rc == CN_OK)
        rc = cn__cache_open(cache_dir, tier->cache_bytes ? tier->cache_bytes : 4ull << 30,
                            &be->cache);
    if (rc == CN_OK)
        rc = check_bucket(be);
    if (rc < 0) {
        s3_close(&be->base);
        return rc;
    }
    cn_info("store", "blob tier: s3 bucket %s prefix '%s' at %s (%s style), cache %s", be->bucket,
            be->prefix, be->base_url, be->vhost ? "virtual-host" : "path", cache_dir);
    *out = &be->base;
    return CN_OK;
}
