/* Object operations: PutObject (streamed into a put session), GetObject and
 * HeadObject (ranges, part numbers, conditionals, response-* overrides; the
 * body by sendfile where the blob is a raw file), DeleteObject,
 * DeleteObjects, CopyObject, GetObjectAttributes. */
#include "s3_int.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define CN__MOD "s3"
#define CN__S3_MAX_SINGLE_PUT (5ull << 30) /* S3's limit for one PUT / one part */

/* ---- PutObject ------------------------------------------------------------------- */

typedef struct {
    cn__s3_put_hdrs_t h;
    cn__s3_tags_t tags; /* x-amz-tagging of a PutObject */
    uint8_t md5[CN_MD5_LEN];
    uint8_t sha[CN_DIGEST_LEN];
    cn_objects_put_t *put;
    int32_t part;       /* UploadPart: its number, else 0 */
    bool has_ck;        /* UploadPart of an upload with a checksum algorithm */
    cn_http_cksum_t ck; /* ... the part's checksum, computed here */
    bool sha_report;    /* the session's SHA-256 is the framework's payload check */
    uint64_t size;      /* ... reported once this many bytes are in */
} cn__put_t;

static void put_cleanup(cn__s3_rq_t *q)
{
    cn__put_t *p = q->op;
    if (!p)
        return;
    cn_objects_put_abort(p->put);
    cn_http_cksum_free(&p->ck);
    cn__s3_put_hdrs_free(&p->h);
    cn__s3_tags_free(&p->tags);
    free(p);
    q->op = NULL;
}

static int put_body(cn__s3_rq_t *q, const uint8_t *b, size_t n)
{
    cn__put_t *p = q->op;
    if (p->has_ck)
        cn_http_cksum_update(&p->ck, b, n);
    cn_err_t e = cn_objects_put_write(p->put, b, n);
    if (e >= 0 && p->sha_report && cn_objects_put_len(p->put) == p->size) {
        uint8_t sha[CN_DIGEST_LEN];
        e = cn_objects_put_sha256(p->put, sha);
        if (e >= 0)
            cn_http_req_body_sha_report(q->r, sha);
    }
    return e;
}

/* The checksum echo: the verified x-amz-checksum-* value, when one was sent. */
static void echo_checksum(cn__s3_rq_t *q)
{
    const char *b64 = NULL;
    cn_http_cksum_alg_t alg = cn_http_req_checksum(q->r, &b64);
    if (alg != CN_CKSUM_NONE && b64 && *b64)
        cn_http_resp_header(q->r, cn_http_cksum_header(alg), b64);
}

static void put_end(cn__s3_rq_t *q)
{
    cn__put_t *p = q->op;
    if (cn_http_req_body_error(q->r) != CN_S3E_NONE)
        return; /* cleanup aborts the session; the framework answers */
    char b64[CN_CKSUM_B64_LEN] = "";
    if (p->has_ck) {
        /* The part's checksum under the upload's algorithm: equal to the
         * client's, when it sent one (the framework verified that). */
        uint8_t raw[CN_CKSUM_MAX_LEN];
        cn_http_cksum_alg_t alg = p->ck.alg;
        cn_http_cksum_final(&p->ck, raw, b64);
        p->has_ck = false;
        if (cn_objects_put_set_checksum(p->put, b64) < 0) {
            cn__s3_error(q, CN_S3E_INTERNAL_ERROR, NULL);
            return;
        }
        cn_http_resp_header(q->r, cn_http_cksum_header(alg), b64);
    }
    cn_objects_put_result_t res;
    char etag[CN__S3_ETAG_MAX];
    if (!cn__s3_put_commit(q, &p->put, &res, etag))
        return;
    cn_http_resp_header(q->r, "ETag", etag);
    if (!p->part)
        cn__s3_version_header(q, "x-amz-version-id", res.version_id, res.vnull,
                              res.bucket_versioned);
    /* The tags are read by version (a worker's call); the loop's cached
     * answer is best effort here: the object is stored already. */
    if (!p->part) {
        q->lc_word = res.lc_word;
        (void)cn__s3_expiration_header(q, q->key, res.size, res.version_id, 0,
                                       res.last_modified_ms);
    }
    if (!b64[0])
        echo_checksum(q);
    cn_http_respond_empty(q->r, 200, 0);
}

/* An UploadPart into an upload created with a checksum algorithm: the part's
 * checksum is computed as the body streams (a client's x-amz-checksum-*
 * of another algorithm is refused, as S3 does).  false after answering. */
static bool part_checksum(cn__s3_rq_t *q, cn__put_t *p)
{
    const char *name = cn_objects_put_checksum_alg(p->put);
    cn_http_cksum_alg_t alg = cn_http_cksum_parse(name);
    if (alg == CN_CKSUM_NONE)
        return true;
    cn_http_cksum_alg_t sent = cn_http_req_checksum(q->r, NULL);
    if (sent != CN_CKSUM_NONE && sent != alg) {
        char m[160];
        snprintf(m, sizeof m,
                 "Checksum Type mismatch occurred, expected checksum Type: %s, "
                 "actual checksum Type: %s",
                 name, cn_http_cksum_name(sent));
        cn__s3_error(q, CN_S3E_INVALID_REQUEST, m);
        return false;
    }
    if (cn_http_cksum_init(&p->ck, alg) != CN_OK) {
        cn__s3_error(q, CN_S3E_INTERNAL_ERROR, NULL);
        return false;
    }
    p->has_ck = true;
    return true;
}

/* Integrity expectations from Content-MD5, x-amz-checksum-sha256 and a
 * signed payload hash.  A body SHA-256 the framework checks before on_end
 * (an x-amz-checksum-sha256 header) goes to the service as verified, so the
 * bytes are hashed with SHA-256 once (put_end never commits a body that
 * failed a check).  A signed payload hash (x-amz-content-sha256 as a hex
 * value) of a large body is the other way round: the session hashes it
 * (beside the write, on the objects service's pool, and its state can seed
 * an upload's running SHA-256) and put_body reports the digest to the
 * framework's check in its stead.  false after answering. */
static bool put_expect(cn__s3_rq_t *q, cn__put_t *p, cn_objects_put_args_t *a)
{
    int m = cn__s3_content_md5(q, p->md5);
    if (m < 0)
        return false;
    if (m == 1)
        a->expect_md5 = p->md5;
    const char *s = cn_http_req_header(q->r, "x-amz-checksum-sha256");
    uint8_t raw[CN_DIGEST_LEN + 3];
    if (s && cn_base64_decode(s, strlen(s), raw, sizeof raw) == CN_DIGEST_LEN) {
        memcpy(p->sha, raw, CN_DIGEST_LEN);
        a->expect_sha256 = p->sha;
        a->sha256_verified = cn_http_req_checksum(q->r, NULL) == CN_CKSUM_SHA256;
        return true;
    }
    s = cn_http_req_header(q->r, "x-amz-content-sha256");
    if (cn_http_req_payload_mode(q->r) == CN_SIGV4_PAYLOAD_HASH && s && strlen(s) == 64 &&
        cn_hex_decode(s, 64, p->sha, CN_DIGEST_LEN) == CN_OK) {
        /* A small body keeps the framework's inline hash: nothing to gain. */
        int64_t len = cn_http_req_payload_length(q->r);
        a->expect_sha256 = p->sha;
        p->sha_report =
            len >= (int64_t)CN_OBJECTS_PUT_BESIDE_MIN && cn_http_req_body_sha_delegate(q->r);
        a->sha256_verified = !p->sha_report;
        p->size = (uint64_t)len;
    }
    return true;
}

/* Size checks before any byte is accepted.  false after answering. */
static bool put_size(cn__s3_rq_t *q, int64_t *size)
{
    /* S3 takes a body only with its length declared up front: a
     * Content-Length, or a Transfer-Encoding (aws-chunked bodies declare theirs
     * in x-amz-decoded-content-length, which the framework checks). */
    if (!cn_http_req_header(q->r, "Content-Length") &&
        !cn_http_req_header(q->r, "Transfer-Encoding")) {
        cn__s3_error(q, CN_S3E_MISSING_CONTENT_LENGTH, NULL);
        return false;
    }
    *size = cn_http_req_payload_length(q->r);
    if (*size >= 0 && (uint64_t)*size > CN__S3_MAX_SINGLE_PUT) {
        cn__s3_error(q, CN_S3E_ENTITY_TOO_LARGE, NULL);
        return false;
    }
    return true;
}

/* The size checks, then the upload state of q (freed by its cleanup).  NULL
 * after answering. */
static cn__put_t *put_new(cn__s3_rq_t *q, int64_t *size)
{
    if (!put_size(q, size))
        return NULL;
    cn__put_t *p = calloc(1, sizeof *p);
    if (!p) {
        cn__s3_error(q, CN_S3E_INTERNAL_ERROR, NULL);
        return NULL;
    }
    q->op = p;
    q->on_cleanup = put_cleanup;
    return p;
}

void cn__s3_put_object(cn__s3_rq_t *q)
{
    int64_t size;
    cn__put_t *p = put_new(q, &size);
    if (!p)
        return;
    if (!cn__s3_put_hdrs(q, &p->h, true) || !put_expect(q, p, &p->h.args) ||
        !cn__s3_tagging_header(q, &p->tags))
        return;
    p->h.args.tags = p->tags.kv;
    p->h.args.ntags = p->tags.n;
    cn_err_t e =
        cn_objects_put_begin(q->s3->objects, &q->orq, q->bucket, q->key, &p->h.args, size, &p->put);
    if (e < 0) {
        cn__s3_fail(q, e);
        return;
    }
    q->on_body = put_body;
    q->on_end = put_end;
}

void cn__s3_put_part(cn__s3_rq_t *q, const char *upload_id, int32_t part)
{
    int64_t size;
    cn__put_t *p = put_new(q, &size);
    if (!p)
        return;
    p->part = part;
    if (!put_expect(q, p, &p->h.args))
        return;
    cn_err_t e = cn_objects_part_begin(q->s3->objects, &q->orq, q->bucket, q->key, upload_id, part,
                                       &p->h.args, size, &p->put);
    if (e < 0) {
        cn__s3_fail(q, e);
        return;
    }
    if (!part_checksum(q, p))
        return;
    q->on_body = put_body;
    q->on_end = put_end;
}

/* ---- conditionals ------------------------------------------------------------------- */

/* An If-Match / If-None-Match list ("*", "a", W/"b", ...) against etag. */
static bool etag_list_match(const char *list, const char *etag)
{
    const char *p = list;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (!*p)
            break;
        if (*p == '*')
            return true;
        if (p[0] == 'W' && p[1] == '/')
            p += 2;
        const char *s = p, *e;
        if (*p == '"') {
            s = ++p;
            e = strchr(p, '"');
            if (!e)
                e = p + strlen(p);
            p = *e ? e + 1 : e;
        } else {
            e = p + strcspn(p, ", \t");
            p = e;
        }
        size_t n = (size_t)(e - s);
        if (n == strlen(etag) && memcmp(s, etag, n) == 0)
            return true;
    }
    return false;
}

/* RFC 7232 order: If-Match, else If-Unmodified-Since (412); If-None-Match
 * (304 on GET/HEAD), else If-Modified-Since (304).  Returns the S3 error or
 * NONE.  Dates compare at one-second resolution, as HTTP dates carry. */
cn_s3_err_t cn__s3_conditions(cn__s3_rq_t *q, const char *etag, int64_t mtime_ms,
                              const char *h_match, const char *h_none, const char *h_ms,
                              const char *h_ums, bool is_copy)
{
    const char *im = cn_http_req_header(q->r, h_match);
    const char *inm = cn_http_req_header(q->r, h_none);
    const char *ims = cn_http_req_header(q->r, h_ms);
    const char *ius = cn_http_req_header(q->r, h_ums);
    int64_t t, m = mtime_ms / 1000;
    if (im) {
        if (!etag_list_match(im, etag))
            return CN_S3E_PRECONDITION_FAILED;
    } else if (ius && cn__s3_parse_http_date(ius, &t) && m > t / 1000) {
        return CN_S3E_PRECONDITION_FAILED;
    }
    if (inm) {
        if (etag_list_match(inm, etag))
            return is_copy ? CN_S3E_PRECONDITION_FAILED : CN_S3E_NOT_MODIFIED;
    } else if (ims && cn__s3_parse_http_date(ims, &t) && m <= t / 1000) {
        return is_copy ? CN_S3E_PRECONDITION_FAILED : CN_S3E_NOT_MODIFIED;
    }
    return CN_S3E_NONE;
}

/* ---- GetObject / HeadObject ----------------------------------------------------------- */

/* Range: bytes=a-b | a- | -n.  0 = no (usable) range, 1 = range, -1 = the
 * suffix of zero bytes (unsatisfiable).  Multiple ranges and malformed
 * values are ignored, as S3 does: the whole object is served. */
static int parse_range(const char *h, cn_objects_range_t *rg)
{
    if (!h || strncasecmp(h, "bytes=", 6) != 0)
        return 0;
    const char *p = h + 6;
    while (*p == ' ')
        p++;
    if (strchr(p, ','))
        return 0;
    char *end;
    if (*p == '-') {
        errno = 0;
        unsigned long long n = strtoull(p + 1, &end, 10);
        if (end == p + 1 || errno || *end)
            return 0;
        if (n == 0)
            return -1;
        rg->kind = CN_RANGE_SUFFIX;
        rg->len = n;
        return 1;
    }
    if (*p < '0' || *p > '9')
        return 0;
    errno = 0;
    unsigned long long a = strtoull(p, &end, 10);
    if (errno || *end != '-')
        return 0;
    p = end + 1;
    rg->kind = CN_RANGE_FROM;
    rg->off = a;
    rg->len = 0;
    if (*p) {
        unsigned long long b = strtoull(p, &end, 10);
        if (errno || *end || *p < '0' || *p > '9' || b < a)
            return 0;
        rg->len = b - a + 1;
        if (rg->len == 0) /* b - a + 1 wrapped: to the end */
            rg->len = 0;
    }
    return 1;
}

typedef struct {
    int fd;
    uint64_t off, len;
} cn__seg_t;

typedef struct {
    cn__seg_t *segs;
    size_t n, cap;
    bool fallback; /* a blob is not a raw file */
} cn__segs_t;

static cn_err_t seg_fd(void *ctx, int fd, uint64_t off, uint64_t len)
{
    cn__segs_t *s = ctx;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 4;
        cn__seg_t *ns = realloc(s->segs, cap * sizeof *ns);
        if (!ns)
            return -ENOMEM;
        s->segs = ns;
        s->cap = cap;
    }
    int d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (d < 0)
        return -errno;
    s->segs[s->n++] = (cn__seg_t){ d, off, len };
    return 0;
}

static cn_err_t seg_write(void *ctx, const void *p, size_t n)
{
    (void)p;
    (void)n;
    ((cn__segs_t *)ctx)->fallback = true;
    return CN_E_AGAIN;
}

static void segs_free(cn__segs_t *s)
{
    for (size_t i = 0; i < s->n; i++)
        close(s->segs[i].fd);
    free(s->segs);
    memset(s, 0, sizeof *s);
}

/* A producer over several raw segments: pread from each in turn. */
static ssize_t segs_read(void *ctx, uint64_t pos, char *buf, size_t max)
{
    cn__segs_t *s = ctx;
    uint64_t base = 0;
    for (size_t i = 0; i < s->n; i++) {
        const cn__seg_t *g = &s->segs[i];
        if (pos < base + g->len) {
            uint64_t in = pos - base;
            size_t want = (size_t)(g->len - in < max ? g->len - in : max);
            ssize_t got;
            do {
                got = pread(g->fd, buf, want, (off_t)(g->off + in));
            } while (got < 0 && errno == EINTR);
            return got > 0 ? got : -1; /* 0: the blob shrank underneath us */
        }
        base += g->len;
    }
    return 0;
}

static void segs_done(void *ctx)
{
    segs_free(ctx);
    free(ctx);
}

/* A body for blobs that are not raw files (LZ4 envelopes, a blob the S3
 * tier is still fetching): piece by piece from the reader's position
 * (cn_objects_reader_read_at), decoded on whichever worker the framework
 * runs the piece on; the client's pace decides, no worker waits for it. */
static ssize_t pump_read(void *ctx, uint64_t pos, char *buf, size_t max)
{
    size_t n = 0;
    cn_err_t e = cn_objects_reader_read_at(ctx, pos, buf, max, &n);
    if (e) {
        cn_warn(CN__MOD, "object read failed: %s", cn_strerror(e));
        return -1; /* a failed read must not look like a complete body: the framework closes */
    }
    return (ssize_t)n;
}

static void pump_done(void *ctx)
{
    cn_objects_reader_free(ctx);
}

typedef struct {
    uint8_t *buf;
    uint64_t len, got;
} cn__copy_t;

static cn_err_t copy_fd(void *ctx, int fd, uint64_t off, uint64_t len)
{
    cn__copy_t *c = ctx;
    if (len > c->len - c->got)
        return CN_E_CORRUPT;
    uint64_t end = c->got + len;
    while (c->got < end) {
        ssize_t n = pread(fd, c->buf + c->got, (size_t)(end - c->got),
                          (off_t)(off + (c->got - (end - len))));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return CN_E_CORRUPT; /* the blob is shorter than its record */
        c->got += (uint64_t)n;
    }
    return 0;
}

static cn_err_t copy_write(void *ctx, const void *p, size_t n)
{
    cn__copy_t *c = ctx;
    if (n > c->len - c->got)
        return CN_E_CORRUPT;
    memcpy(c->buf + c->got, p, n);
    c->got += n;
    return 0;
}

/* Answers status with the reader's bytes; takes rd.  Returns CN_E_AGAIN when
 * a blob is not a raw file and pump is false (rd is then spent: the caller
 * gets the object again and calls with pump). */
static cn_err_t send_body(cn__s3_rq_t *q, int status, const char *ct, cn_objects_reader_t *rd,
                          bool pump)
{
    uint64_t len = cn_objects_reader_len(rd);
    if (len == 0) {
        cn_objects_reader_free(rd);
        return cn_http_respond(q->r, status, ct, "", 0);
    }
    const uint8_t *mem;
    if (cn_objects_reader_mem(rd, &mem)) {
        /* The store's own copy, lent to the response until it is written. */
        cn_err_t e = cn_http_respond_borrowed(q->r, status, ct, mem, (size_t)len, pump_done, rd);
        if (e)
            cn_objects_reader_free(rd);
        return e;
    }
    if (len <= CN_HTTP_INLINE_BODY_MAX) {
        uint8_t buf[CN_HTTP_INLINE_BODY_MAX];
        cn__copy_t c = { .buf = buf, .len = len };
        /* copy_fd reads by offset only, so the store's kept descriptor
         * serves it: no open, fstat and close per small GET. */
        cn_err_t e = cn_objects_reader_send_shared(rd, copy_fd, copy_write, &c);
        cn_objects_reader_free(rd);
        if (!e && c.got != len)
            e = CN_E_CORRUPT;
        return e ? e : cn_http_respond(q->r, status, ct, buf, (size_t)len);
    }
    if (pump)
        return cn_http_respond_stream(q->r, status, ct, len, pump_read, pump_done, rd);
    cn__segs_t *s = calloc(1, sizeof *s);
    if (!s) {
        cn_objects_reader_free(rd);
        return -ENOMEM;
    }
    cn_err_t e = cn_objects_reader_send(rd, seg_fd, seg_write, s);
    cn_objects_reader_free(rd);
    if (s->fallback || e) {
        bool fb = s->fallback;
        segs_done(s);
        return fb ? CN_E_AGAIN : e;
    }
    if (s->n == 1) {
        int fd = s->segs[0].fd;
        uint64_t off = s->segs[0].off;
        s->n = 0;
        segs_done(s);
        return cn_http_respond_fd(q->r, status, ct, fd, off, len);
    }
    return cn_http_respond_stream(q->r, status, ct, len, segs_read, segs_done, s);
}

static const struct {
    const char *param, *header;
} cn__overrides[] = {
    { "response-content-type", "Content-Type" },
    { "response-content-language", "Content-Language" },
    { "response-expires", "Expires" },
    { "response-cache-control", "Cache-Control" },
    { "response-content-disposition", "Content-Disposition" },
    { "response-content-encoding", "Content-Encoding" },
};

/* The headers describing the object (not the length). */
static void object_headers(cn__s3_rq_t *q, const cn_object_info_t *info, bool whole)
{
    char etag[CN__S3_ETAG_MAX], date[CN__S3_HTTP_DATE_MAX];
    cn__s3_quote_etag(info->etag, etag);
    cn__s3_http_date(info->last_modified_ms, date);
    cn_http_resp_header(q->r, "ETag", etag);
    cn_http_resp_header(q->r, "Last-Modified", date);
    cn_http_resp_header(q->r, "Accept-Ranges", "bytes");
    /* Stored bytes share the console's origin: a browser runs them in an
     * opaque origin, never as the type sniffed (docs/s3.md). */
    cn_http_resp_header(q->r, "Content-Security-Policy", "sandbox");
    cn_http_resp_header(q->r, "X-Content-Type-Options", "nosniff");
    cn__s3_version_header(q, "x-amz-version-id", info->version_id, info->vnull,
                          info->bucket_versioned);
    if (info->ntags) {
        char n[16];
        snprintf(n, sizeof n, "%u", info->ntags);
        cn_http_resp_header(q->r, "x-amz-tagging-count", n);
    }
    cn_objects_retention_t lock = { (cn_objects_lock_mode_t)info->lock_mode, info->lock_until_ms,
                                    info->legal_hold };
    cn__s3_lock_echo(q, &lock);
    for (size_t i = 0; i < info->nmeta; i++) {
        bool sys = false;
        for (size_t k = 0; k < CN__S3_SYSTEM_META_COUNT && !sys; k++)
            sys = strcmp(info->meta[i].key, cn__s3_system_meta[k]) == 0;
        if (sys) {
            /* A response-* override of the same header wins. */
            bool overridden = false;
            for (size_t k = 1; k < sizeof cn__overrides / sizeof cn__overrides[0]; k++)
                overridden =
                    overridden || (strcmp(cn__overrides[k].header, info->meta[i].key) == 0 &&
                                   cn_http_req_has_query(q->r, cn__overrides[k].param));
            if (!overridden)
                cn_http_resp_header(q->r, info->meta[i].key, info->meta[i].value);
            continue;
        }
        char name[300];
        int n = snprintf(name, sizeof name, "x-amz-meta-%s", info->meta[i].key);
        if (n > 0 && (size_t)n < sizeof name)
            cn_http_resp_header(q->r, name, info->meta[i].value);
    }
    const char *mode = cn_http_req_header(q->r, "x-amz-checksum-mode");
    cn_http_cksum_alg_t ck = cn_http_cksum_parse(info->checksum_alg);
    if (whole && mode && strcasecmp(mode, "ENABLED") == 0 && ck != CN_CKSUM_NONE &&
        info->checksum[0]) {
        /* A multipart upload's additional checksum: S3's composite. */
        cn_http_resp_header(q->r, cn_http_cksum_header(ck), info->checksum);
        cn_http_resp_header(q->r, "x-amz-checksum-type", "COMPOSITE");
    } else if (whole && mode && strcasecmp(mode, "ENABLED") == 0 && strlen(info->sha256) == 64) {
        uint8_t raw[CN_DIGEST_LEN];
        char b64[CN_CKSUM_B64_LEN];
        if (cn_hex_decode(info->sha256, 64, raw, sizeof raw) == CN_OK) {
            cn_base64_encode(raw, sizeof raw, b64);
            cn_http_resp_header(q->r, "x-amz-checksum-sha256", b64);
            cn_http_resp_header(q->r, "x-amz-checksum-type", "FULL_OBJECT");
        }
    }
}

/* A GET's answer when a condition or its range fails (c): 304 with the
 * object's ETag and Last-Modified, 416 with its size, or c's error. */
static void answer_unmet(cn__s3_rq_t *q, cn_s3_err_t c, const cn_object_info_t *info)
{
    if (c == CN_S3E_NOT_MODIFIED) {
        char etag[CN__S3_ETAG_MAX], date[CN__S3_HTTP_DATE_MAX];
        cn__s3_quote_etag(info->etag, etag);
        cn__s3_http_date(info->last_modified_ms, date);
        cn_http_resp_header(q->r, "ETag", etag);
        cn_http_resp_header(q->r, "Last-Modified", date);
        cn_http_respond_empty(q->r, 304, 0);
        return;
    }
    if (c == CN_S3E_INVALID_RANGE) {
        char cr[64];
        snprintf(cr, sizeof cr, "bytes */%llu", (unsigned long long)info->size);
        cn_http_resp_header(q->r, "Content-Range", cr);
    }
    cn__s3_error(q, c, NULL);
}

/* A GET's conditions on the object, in cn__s3_conditions' order. */
static const char *const get_conds[] = { "If-Match", "If-None-Match", "If-Modified-Since",
                                         "If-Unmodified-Since" };

/* Whether the GET carries one of get_conds. */
static bool conditional_get(cn_http_req_t *r)
{
    for (size_t i = 0; i < sizeof get_conds / sizeof get_conds[0]; i++)
        if (cn_http_req_header(r, get_conds[i]))
            return true;
    return false;
}

void cn__s3_get_object(cn__s3_rq_t *q)
{
    cn_http_req_t *r = q->r;
    cn_objects_range_t rg;
    memset(&rg, 0, sizeof rg);
    const char *pn = cn_http_req_query(r, "partNumber");
    const char *range = cn_http_req_header(r, "Range");
    int has_range = 0;
    if (pn) {
        int64_t n;
        if (!cn__s3_int_arg(q, pn, "partNumber", 1, CN_PART_NUMBER_MAX, 1, &n))
            return;
        if (range) {
            cn__s3_error(q, CN_S3E_INVALID_REQUEST,
                         "Cannot specify both Range header and partNumber query parameter");
            return;
        }
        rg.kind = CN_RANGE_PART;
        rg.part_number = (int32_t)n;
        has_range = 1;
    } else {
        has_range = parse_range(range, &rg);
    }
    bool overrides = false;
    for (size_t i = 0; i < sizeof cn__overrides / sizeof cn__overrides[0]; i++)
        overrides = overrides || cn_http_req_has_query(r, cn__overrides[i].param);
    if (overrides && q->anonymous) {
        cn__s3_error(
            q, CN_S3E_INVALID_REQUEST,
            "Request specific response headers cannot be used for anonymous GET requests.");
        return;
    }
    /* A named version is read by a worker (the head cache holds current
     * versions only). */
    const char *ver = cn_http_req_query(r, "versionId");
    if (ver && cn_http_req_on_loop(r)) {
        cn_http_req_decline(r);
        return;
    }
    /* HeadObject is metadata only: no blob opened (on the blob tier, none
     * fetched).  A conditional GET first looks the same way, so a 304 or a
     * 412 fetches nothing either; its conditions hold, it reads again with
     * the bytes (and judges them again: the object may have changed). */
    bool probe = !q->head && conditional_get(r);
    q->orq.no_bytes = q->head || probe;
    for (int attempt = 0; attempt < 2; attempt++) {
        cn_object_info_t info;
        memset(&info, 0, sizeof info);
        cn_objects_reader_t *rd = NULL;
        /* On the loop only the object-head cache answers (CN_E_AGAIN, like
         * every error there, declines: a worker reads the metadata). */
        cn_err_t e = cn_http_req_on_loop(r)
                         ? cn_objects_get_cached(q->s3->objects, &q->orq, q->bucket, q->key,
                                                 has_range > 0 ? &rg : NULL, &info, &rd)
                         : cn_objects_get_version(q->s3->objects, &q->orq, q->bucket, q->key, ver,
                                                  has_range > 0 ? &rg : NULL, &info, &rd);
        if (e < 0 && e != CN_E_RANGE) {
            /* NoSuchKey of a deleted key, MethodNotAllowed of a marker's id. */
            if ((e == CN_E_NOT_FOUND || e == CN_E_UNSUPPORTED) && !cn_http_req_on_loop(r))
                cn__s3_marker_headers(q, &info);
            cn_objects_info_free(&info);
            cn__s3_fail(q, e);
            return;
        }
        cn_s3_err_t c = cn__s3_conditions(q, info.etag, info.last_modified_ms, get_conds[0],
                                          get_conds[1], get_conds[2], get_conds[3], false);
        if (c == CN_S3E_NONE && (e == CN_E_RANGE || has_range < 0))
            c = e == CN_E_RANGE && q->orq.what == CN_OBJ_WHAT_PART ? CN_S3E_INVALID_PART_NUMBER
                                                                   : CN_S3E_INVALID_RANGE;
        if (c != CN_S3E_NONE) {
            cn_objects_reader_free(rd);
            answer_unmet(q, c, &info);
            cn_objects_info_free(&info);
            return;
        }
        if (probe) {
            cn_objects_reader_free(rd);
            cn_objects_info_free(&info);
            probe = q->orq.no_bytes = false;
            attempt--; /* the same attempt, now with its bytes */
            continue;
        }
        q->lc_word = info.gen_word;
        if (!cn__s3_expiration_header(q, q->key, info.size, info.version_id, info.ntags,
                                      info.last_modified_ms)) {
            /* The rules are not cached for the loop: a worker answers. */
            cn_objects_reader_free(rd);
            cn_objects_info_free(&info);
            cn_http_req_decline(r);
            return;
        }
        uint64_t off = cn_objects_reader_offset(rd), len = cn_objects_reader_len(rd);
        bool partial =
            has_range > 0 && !(rg.kind == CN_RANGE_PART && info.nparts == 0 && len == info.size);
        int status = partial ? 206 : 200;
        if (partial || rg.kind == CN_RANGE_PART) {
            /* A part of a single-put object is the whole object: 200, as S3. */
            if (partial) {
                char cr[96];
                snprintf(cr, sizeof cr, "bytes %llu-%llu/%llu", (unsigned long long)off,
                         (unsigned long long)(off + len - (len ? 1 : 0)),
                         (unsigned long long)info.size);
                cn_http_resp_header(r, "Content-Range", cr);
            }
            if (rg.kind == CN_RANGE_PART) {
                char pc[16];
                snprintf(pc, sizeof pc, "%u", info.nparts ? info.nparts : 1);
                cn_http_resp_header(r, "x-amz-mp-parts-count", pc);
            }
        }
        object_headers(q, &info, !partial);
        const char *ct = info.content_type ? info.content_type : "application/octet-stream";
        for (size_t i = 0; i < sizeof cn__overrides / sizeof cn__overrides[0]; i++) {
            const char *v = cn_http_req_query(r, cn__overrides[i].param);
            if (!v)
                continue;
            if (i == 0)
                ct = v;
            else
                cn_http_resp_header(r, cn__overrides[i].header, v);
        }
        if (q->head) {
            cn_objects_reader_free(rd);
            cn_http_resp_header(r, "Content-Type", ct);
            cn_http_respond_empty(r, status, len);
            cn_objects_info_free(&info);
            return;
        }
        if (cn_http_req_on_loop(r) && cn_objects_reader_len(rd) > CN_HTTP_INLINE_BODY_MAX) {
            /* Larger bodies go by sendfile(2) from a worker. */
            cn_objects_reader_free(rd);
            cn_objects_info_free(&info);
            cn_http_req_decline(r);
            return;
        }
        e = send_body(q, status, ct, rd, attempt == 1);
        cn_objects_info_free(&info);
        if (e == CN_E_AGAIN && attempt == 0) {
            /* Not a raw file: start over with the pumping producer. */
            continue;
        }
        if (e < 0)
            cn__s3_error(q, CN_S3E_INTERNAL_ERROR, NULL);
        return;
    }
}

/* ---- DeleteObject / DeleteObjects --------------------------------------------------- */

/* x-amz-bypass-governance-retention: true */
static bool bypass_asked(cn__s3_rq_t *q)
{
    const char *b = cn_http_req_header(q->r, "x-amz-bypass-governance-retention");
    return b && !strcasecmp(b, "true");
}

void cn__s3_delete_object(cn__s3_rq_t *q)
{
    const char *ver = cn_http_req_query(q->r, "versionId");
    cn_objects_delete_result_t res;
    cn_err_t e = cn_objects_delete_version(q->s3->objects, &q->orq, q->bucket, q->key, ver,
                                           bypass_asked(q), &res);
    /* Deleting what is not there succeeds: a missing key, or a version the
     * key does not have (S3). */
    if (e < 0 && !(e == CN_E_NOT_FOUND && q->orq.what == CN_OBJ_WHAT_KEY)) {
        cn__s3_fail(q, e);
        return;
    }
    if (e >= 0 && res.has_version) {
        cn__s3_version_header(q, "x-amz-version-id", res.version_id, res.vnull, true);
        if (res.delete_marker)
            cn_http_resp_header(q->r, "x-amz-delete-marker", "true");
    } else if (ver) {
        cn_http_resp_header(q->r, "x-amz-version-id", ver);
    }
    cn_http_respond_empty(q->r, 204, 0);
}

#define CN__S3_DELETE_MAX 1000
#define CN__S3_DELETE_BODY_MAX (2u << 20)

/* One Deleted entry: the key, the version asked for, and the marker the
 * delete wrote or removed. */
static void delete_objects_deleted(cn_xml_writer_t *w, const char *k, size_t kl, const char *ver,
                                   const cn_objects_delete_result_t *dr)
{
    char v[CN_OBJECTS_VERSION_ID_MAX];
    cn_xml_open(w, "Deleted", NULL);
    cn_xml_elem_n(w, "Key", k, kl);
    if (ver)
        cn_xml_elem(w, "VersionId", ver);
    if (dr->has_version && dr->delete_marker) {
        cn_objects_version_str(dr->version_id, dr->vnull, v);
        cn_xml_elem(w, "DeleteMarker", "true");
        cn_xml_elem(w, "DeleteMarkerVersionId", v);
    }
    cn_xml_close(w);
}

static void delete_objects_done(cn__s3_rq_t *q)
{
    cn_xml_doc_t *d = cn__s3_body_xml(q, true);
    if (!d)
        return;
    int root = cn_xml_root(d);
    const char *rn = cn_xml_name(d, root);
    if (!rn || strcmp(rn, "Delete") != 0) {
        cn_xml_doc_free(d);
        cn__s3_error(q, CN_S3E_MALFORMED_XML, NULL);
        return;
    }
    bool bypass = bypass_asked(q);
    size_t ql = 0;
    const char *qt = cn_xml_child_text(d, root, "Quiet", &ql);
    bool quiet = qt && ql == 4 && strncasecmp(qt, "true", 4) == 0;
    size_t count = 0;
    for (int o = cn_xml_child(d, root, "Object"); o >= 0; o = cn_xml_next(d, o, "Object"))
        count++;
    if (count == 0 || count > CN__S3_DELETE_MAX) {
        cn_xml_doc_free(d);
        cn__s3_error(q, CN_S3E_MALFORMED_XML, NULL);
        return;
    }
    cn_buf_t out = { 0 };
    cn_xml_writer_t w;
    cn_xml_begin(&w, &out);
    cn_xml_open(&w, "DeleteResult", CN_S3_XMLNS);
    for (int o = cn_xml_child(d, root, "Object"); o >= 0; o = cn_xml_next(d, o, "Object")) {
        size_t kl = 0, vl = 0;
        const char *k = cn_xml_child_text(d, o, "Key", &kl);
        const char *v = cn_xml_child_text(d, o, "VersionId", &vl);
        cn_s3_err_t err = CN_S3E_NONE;
        const char *msg = NULL;
        char *key = NULL, *ver = NULL;
        cn_objects_delete_result_t dr = { 0 };
        /* Lives as long as msg may point into it. */
        cn_objects_req_t rq = q->orq;
        if (!k || !kl || memchr(k, 0, kl)) {
            err = CN_S3E_INVALID_ARGUMENT;
            msg = "missing key";
        } else if (!(key = strndup(k, kl)) || (v && !(ver = strndup(v, vl)))) {
            err = CN_S3E_INTERNAL_ERROR;
        } else {
            cn_err_t e =
                cn_objects_delete_version(q->s3->objects, &rq, q->bucket, key, ver, bypass, &dr);
            if (e < 0 && !(e == CN_E_NOT_FOUND && rq.what == CN_OBJ_WHAT_KEY)) {
                if (e == CN_E_NOT_FOUND && rq.what == CN_OBJ_WHAT_BUCKET) {
                    free(key);
                    free(ver);
                    cn_buf_free(&out);
                    cn_xml_doc_free(d);
                    cn__s3_error(q, CN_S3E_NO_SUCH_BUCKET, NULL);
                    return;
                }
                err = cn__s3_err_of(&rq, e);
                /* A malformed id names no version of the key: per key, S3
                 * says NoSuchVersion (a single DELETE: InvalidArgument). */
                if (rq.fail.cls == e && rq.fail.detail == CN_OBJ_VERSION_ID_INVALID)
                    err = CN_S3E_NO_SUCH_VERSION;
                msg = err == CN_S3E_ACCESS_DENIED ? NULL : rq.fail.message;
            }
        }
        if (err == CN_S3E_NONE) {
            if (!quiet)
                delete_objects_deleted(&w, k, kl, ver, &dr);
        } else {
            cn_xml_open(&w, "Error", NULL);
            cn_xml_elem_n(&w, "Key", k ? k : "", k ? kl : 0);
            if (v && vl)
                cn_xml_elem_n(&w, "VersionId", v, vl);
            cn_xml_elem(&w, "Code", cn_s3_err_code(err));
            cn_xml_elem(&w, "Message", msg && *msg ? msg : cn_s3_err_message(err));
            cn_xml_close(&w);
        }
        free(key);
        free(ver);
    }
    cn_xml_close(&w);
    cn_xml_doc_free(d);
    cn__s3_xml(q, 200, &w);
}

void cn__s3_delete_objects(cn__s3_rq_t *q)
{
    /* S3 requires an integrity check on this body: Content-MD5 or any
     * x-amz-checksum-* (the framework verifies the latter). */
    bool has_ck = false;
    static const char *const hs[] = {
        "x-amz-checksum-crc32", "x-amz-checksum-crc32c", "x-amz-checksum-crc64nvme",
        "x-amz-checksum-sha1",  "x-amz-checksum-sha256", "x-amz-trailer",
        "Content-MD5"
    };
    for (size_t i = 0; i < sizeof hs / sizeof hs[0]; i++)
        has_ck = has_ck || cn_http_req_header(q->r, hs[i]) != NULL;
    if (!has_ck) {
        cn__s3_error(q, CN_S3E_INVALID_REQUEST,
                     "Missing required header for this request: Content-MD5");
        return;
    }
    cn__s3_collect(q, CN__S3_DELETE_BODY_MAX, delete_objects_done);
}

/* ---- CopyObject ---------------------------------------------------------------------- */

bool cn__s3_copy_source(cn__s3_rq_t *q, char **bucket, char **key, char **version)
{
    *bucket = *key = *version = NULL;
    const char *src = cn_http_req_header(q->r, "x-amz-copy-source");
    size_t n = src ? strlen(src) : 0;
    const char *qm = src ? strchr(src, '?') : NULL;
    if (qm) {
        /* The one parameter S3 knows there; the id itself is judged by the
         * service (InvalidArgument when malformed). */
        if (strncmp(qm, "?versionId=", 11) != 0) {
            cn__s3_error(q, CN_S3E_INVALID_ARGUMENT, "Unsupported copy source parameter.");
            return false;
        }
        if (!(*version = strdup(qm + 11))) {
            cn__s3_error(q, CN_S3E_INTERNAL_ERROR, NULL);
            return false;
        }
        n = (size_t)(qm - src);
    }
    cn_buf_t b = { 0 };
    if (!src || cn_http_pct_decode(&b, src, n) != CN_OK || cn_buf_put_u8(&b, 0) != CN_OK) {
        cn_buf_free(&b);
        free(*version);
        *version = NULL;
        cn__s3_error(q, CN_S3E_INVALID_ARGUMENT,
                     "Copy Source must mention the source bucket and key: sourcebucket/sourcekey");
        return false;
    }
    char *s = (char *)b.data;
    if (*s == '/')
        s++;
    char *slash = strchr(s, '/');
    if (!slash || slash == s || !slash[1]) {
        cn_buf_free(&b);
        free(*version);
        *version = NULL;
        cn__s3_error(q, CN_S3E_INVALID_ARGUMENT,
                     "Copy Source must mention the source bucket and key: sourcebucket/sourcekey");
        return false;
    }
    *slash = 0;
    *bucket = strdup(s);
    *key = strdup(slash + 1);
    cn_buf_free(&b);
    if (!*bucket || !*key) {
        free(*bucket);
        free(*key);
        free(*version);
        *bucket = *key = *version = NULL;
        cn__s3_error(q, CN_S3E_INTERNAL_ERROR, NULL);
        return false;
    }
    return true;
}

bool cn__s3_copy_conditions(cn__s3_rq_t *q, cn_objects_copy_args_t *ca)
{
    cn_http_req_t *r = q->r;
    ca->src_if_match = cn_http_req_header(r, "x-amz-copy-source-if-match");
    ca->src_if_none_match = cn_http_req_header(r, "x-amz-copy-source-if-none-match");
    const char *ms = cn_http_req_header(r, "x-amz-copy-source-if-modified-since");
    const char *us = cn_http_req_header(r, "x-amz-copy-source-if-unmodified-since");
    if (ms && !cn__s3_parse_http_date(ms, &ca->src_if_modified_since_ms))
        ca->src_if_modified_since_ms = 0;
    if (us && !cn__s3_parse_http_date(us, &ca->src_if_unmodified_since_ms))
        ca->src_if_unmodified_since_ms = 0;
    /* S3: when if-match holds, if-unmodified-since is not consulted; when
     * if-none-match holds (differs), if-modified-since is not. */
    if (ca->src_if_match)
        ca->src_if_unmodified_since_ms = 0;
    if (ca->src_if_none_match)
        ca->src_if_modified_since_ms = 0;
    return true;
}

void cn__s3_copy_object(cn__s3_rq_t *q)
{
    char *sb = NULL, *sk = NULL, *sv = NULL;
    cn__s3_put_hdrs_t h;
    memset(&h, 0, sizeof h);
    cn__s3_tags_t tags;
    memset(&tags, 0, sizeof tags);
    int tdir = cn__s3_tagging_directive(q);
    if (tdir < 0 || (tdir == 1 && !cn__s3_tagging_header(q, &tags)))
        return;
    if (!cn__s3_copy_source(q, &sb, &sk, &sv)) {
        cn__s3_tags_free(&tags);
        return;
    }
    const char *dir = cn_http_req_header(q->r, "x-amz-metadata-directive");
    bool replace = false;
    if (dir && strcmp(dir, "REPLACE") == 0)
        replace = true;
    else if (dir && strcmp(dir, "COPY") != 0) {
        cn__s3_error(q, CN_S3E_INVALID_ARGUMENT, "Unknown metadata directive.");
        goto out;
    }
    if (!cn__s3_put_hdrs(q, &h, true))
        goto out;
    if (!replace && !h.args.acl && !sv && strcmp(sb, q->bucket) == 0 && strcmp(sk, q->key) == 0) {
        cn__s3_error(q, CN_S3E_INVALID_REQUEST,
                     "This copy request is illegal because it is trying to copy an object to "
                     "itself without changing the object's metadata, storage class, website "
                     "redirect location or encryption attributes.");
        goto out;
    }
    cn_objects_copy_args_t ca;
    memset(&ca, 0, sizeof ca);
    ca.replace = replace;
    ca.put = &h.args;
    ca.src_version = sv;
    /* Tagging directive COPY (the default): the source version's tags. */
    ca.copy_tags = tdir == 0;
    h.args.tags = tags.kv;
    h.args.ntags = tags.n;
    cn__s3_copy_conditions(q, &ca);
    cn_objects_put_result_t res;
    cn_err_t e = cn_objects_copy(q->s3->objects, &q->orq, sb, sk, q->bucket, q->key, &ca, &res);
    if (e < 0) {
        cn__s3_fail(q, e);
        goto out;
    }
    cn__s3_version_header(q, "x-amz-version-id", res.version_id, res.vnull, res.bucket_versioned);
    (void)cn__s3_expiration_header(q, q->key, res.size, res.version_id, 0, res.last_modified_ms);
    if (sv)
        cn__s3_version_header(q, "x-amz-copy-source-version-id", res.src_version_id, res.src_vnull,
                              true);
    cn__s3_copy_result(q, "CopyObjectResult", &res);
out:
    cn__s3_put_hdrs_free(&h);
    cn__s3_tags_free(&tags);
    free(sb);
    free(sk);
    free(sv);
}

/* ---- UploadPartCopy's byte pump ------------------------------------------------------- */

typedef struct {
    cn_objects_put_t *put;
    cn_http_cksum_t ck; /* alg NONE when the upload has no checksum algorithm */
} cn__to_put_t;

static cn_err_t to_put(void *ctx, const void *p, size_t n)
{
    cn__to_put_t *t = ctx;
    cn_http_cksum_update(&t->ck, p, n);
    return cn_objects_put_write(t->put, p, n);
}

/* The reader's bytes into the put session and, for a part of an upload with
 * a checksum algorithm, the part's checksum recorded with it. */
cn_err_t cn__s3_reader_to_put(cn_objects_reader_t *rd, cn_objects_put_t *p)
{
    cn__to_put_t t = { .put = p };
    cn_err_t e = cn_http_cksum_init(&t.ck, cn_http_cksum_parse(cn_objects_put_checksum_alg(p)));
    if (e >= 0)
        e = cn_objects_reader_send(rd, NULL, to_put, &t);
    if (e >= 0 && t.ck.alg != CN_CKSUM_NONE) {
        uint8_t raw[CN_CKSUM_MAX_LEN];
        char b64[CN_CKSUM_B64_LEN];
        cn_http_cksum_final(&t.ck, raw, b64);
        e = cn_objects_put_set_checksum(p, b64);
    }
    cn_http_cksum_free(&t.ck);
    return e;
}

/* ---- GetObjectAttributes --------------------------------------------------------------- */

/* ObjectParts' Part elements from marker on, at most max of them. */
typedef struct {
    cn_xml_writer_t *w;
    const char *elem; /* "ChecksumCRC32", or NULL without an algorithm */
    int64_t marker, max, listed, last;
} cn__attr_parts_t;

static cn_err_t attr_part(void *arg, const cn_objects_part_t *p)
{
    cn__attr_parts_t *a = arg;
    if (p->part_number <= a->marker || a->listed >= a->max)
        return 0;
    cn_xml_open(a->w, "Part", NULL);
    cn_xml_elem_u64(a->w, "PartNumber", (uint64_t)p->part_number);
    cn_xml_elem_u64(a->w, "Size", p->size);
    if (a->elem && p->checksum[0])
        cn_xml_elem(a->w, a->elem, p->checksum);
    cn_xml_close(a->w);
    a->last = p->part_number;
    a->listed++;
    return 0;
}

/* The Checksum element: a multipart upload's composite additional checksum,
 * else the whole object's SHA-256. */
static void attr_checksum(cn_xml_writer_t *w, const cn_object_info_t *info, const char *elem)
{
    if (elem && info->checksum[0]) {
        cn_xml_open(w, "Checksum", NULL);
        cn_xml_elem(w, elem, info->checksum);
        cn_xml_elem(w, "ChecksumType", "COMPOSITE");
        cn_xml_close(w);
        return;
    }
    uint8_t raw[CN_DIGEST_LEN];
    char b64[CN_CKSUM_B64_LEN];
    if (strlen(info->sha256) != 64 || cn_hex_decode(info->sha256, 64, raw, sizeof raw) != CN_OK)
        return;
    cn_base64_encode(raw, sizeof raw, b64);
    cn_xml_open(w, "Checksum", NULL);
    cn_xml_elem(w, "ChecksumSHA256", b64);
    cn_xml_elem(w, "ChecksumType", "FULL_OBJECT");
    cn_xml_close(w);
}

void cn__s3_get_object_attributes(cn__s3_rq_t *q)
{
    const char *want = cn_http_req_header(q->r, "x-amz-object-attributes");
    if (!want || !*want) {
        cn__s3_error(q, CN_S3E_INVALID_ARGUMENT,
                     "The x-amz-object-attributes header specifying the attributes to be "
                     "retrieved is either missing or empty");
        return;
    }
    bool a_etag = false, a_ck = false, a_parts = false, a_sc = false, a_size = false;
    for (const char *p = want; *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t n = strcspn(p, ", ");
        if (!n)
            break;
        if (n == 4 && !strncmp(p, "ETag", 4))
            a_etag = true;
        else if (n == 8 && !strncmp(p, "Checksum", 8))
            a_ck = true;
        else if (n == 11 && !strncmp(p, "ObjectParts", 11))
            a_parts = true;
        else if (n == 12 && !strncmp(p, "StorageClass", 12))
            a_sc = true;
        else if (n == 10 && !strncmp(p, "ObjectSize", 10))
            a_size = true;
        else {
            cn__s3_error(q, CN_S3E_INVALID_ARGUMENT, "Invalid attribute name specified.");
            return;
        }
        p += n;
    }
    int64_t max_parts, marker;
    if (!cn__s3_int_arg(q, cn_http_req_header(q->r, "x-amz-max-parts"), "x-amz-max-parts", 0, 1000,
                        1000, &max_parts) ||
        !cn__s3_int_arg(q, cn_http_req_header(q->r, "x-amz-part-number-marker"),
                        "x-amz-part-number-marker", 0, CN_PART_NUMBER_MAX, 0, &marker))
        return;
    const char *ver = cn_http_req_query(q->r, "versionId");
    cn_object_info_t info;
    memset(&info, 0, sizeof info);
    cn_err_t e = cn_objects_head_version(q->s3->objects, &q->orq, q->bucket, q->key, ver, &info);
    if (e < 0) {
        if (e == CN_E_NOT_FOUND || e == CN_E_UNSUPPORTED)
            cn__s3_marker_headers(q, &info);
        cn_objects_info_free(&info);
        cn__s3_fail(q, e);
        return;
    }
    char date[CN__S3_HTTP_DATE_MAX];
    cn__s3_http_date(info.last_modified_ms, date);
    cn_http_resp_header(q->r, "Last-Modified", date);
    cn__s3_version_header(q, "x-amz-version-id", info.version_id, info.vnull,
                          info.bucket_versioned);
    cn_buf_t out = { 0 };
    cn_xml_writer_t w;
    cn_xml_begin(&w, &out);
    cn_xml_open(&w, "GetObjectAttributesResponse", CN_S3_XMLNS);
    if (a_etag)
        cn_xml_elem(&w, "ETag", info.etag);
    cn_http_cksum_alg_t alg = cn_http_cksum_parse(info.checksum_alg);
    char elem[32] = "";
    if (alg != CN_CKSUM_NONE)
        snprintf(elem, sizeof elem, "Checksum%s", cn_http_cksum_name(alg));
    if (a_ck)
        attr_checksum(&w, &info, elem[0] ? elem : NULL);
    if (a_parts && info.nparts > 0) {
        cn_xml_open(&w, "ObjectParts", NULL);
        cn__attr_parts_t ap = { &w, elem[0] ? elem : NULL, marker, max_parts, 0, marker };
        e = cn_objects_object_parts_version(q->s3->objects, &q->orq, q->bucket, q->key, ver,
                                            attr_part, &ap);
        if (e < 0) {
            cn_buf_free(&out);
            cn_objects_info_free(&info);
            cn__s3_fail(q, e);
            return;
        }
        bool trunc = ap.last < (int64_t)info.nparts;
        cn_xml_elem_bool(&w, "IsTruncated", trunc);
        cn_xml_elem_u64(&w, "MaxParts", (uint64_t)max_parts);
        cn_xml_elem_u64(&w, "PartNumberMarker", (uint64_t)marker);
        if (trunc)
            cn_xml_elem_u64(&w, "NextPartNumberMarker", (uint64_t)ap.last);
        cn_xml_elem_u64(&w, "PartsCount", info.nparts);
        cn_xml_close(&w);
    }
    if (a_sc)
        cn_xml_elem(&w, "StorageClass", "STANDARD");
    if (a_size)
        cn_xml_elem_u64(&w, "ObjectSize", info.size);
    cn_xml_close(&w);
    cn_objects_info_free(&info);
    cn__s3_xml(q, 200, &w);
}
