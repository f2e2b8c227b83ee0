/* Multipart uploads: CreateMultipartUpload, UploadPart, UploadPartCopy,
 * CompleteMultipartUpload, AbortMultipartUpload, ListParts,
 * ListMultipartUploads.  The completed object's etag is "md5-N" (the
 * service computes it); ETags are quoted on the wire and compared unquoted. */
#include "s3_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CN__S3_COMPLETE_BODY_MAX (4u << 20)

static const char *upload_id(cn__s3_rq_t *q)
{
    const char *u = cn_http_req_query(q->r, "uploadId");
    if (!u || !*u || strlen(u) > CN_UPLOAD_ID_MAX) {
        cn__s3_error(q, CN_S3E_NO_SUCH_UPLOAD, NULL);
        return NULL;
    }
    return u;
}

/* ---- Create ------------------------------------------------------------------------ */

/* x-amz-checksum-algorithm and x-amz-checksum-type of CreateMultipartUpload:
 * the algorithm's S3 name in *name (NULL when none).  Only COMPOSITE
 * checksums are made.  false after answering. */
static bool create_checksum(cn__s3_rq_t *q, const char **name)
{
    *name = NULL;
    const char *alg = cn_http_req_header(q->r, "x-amz-checksum-algorithm");
    const char *type = cn_http_req_header(q->r, "x-amz-checksum-type");
    cn_http_cksum_alg_t a = cn_http_cksum_parse(alg);
    if (alg && (a == CN_CKSUM_NONE || strncasecmp(alg, "x-amz-", 6) == 0)) {
        cn__s3_error(q, CN_S3E_INVALID_REQUEST, "Checksum algorithm provided is unsupported.");
        return false;
    }
    if (type && strcmp(type, "COMPOSITE") != 0) {
        cn__s3_error(
            q, strcmp(type, "FULL_OBJECT") == 0 ? CN_S3E_NOT_IMPLEMENTED : CN_S3E_INVALID_REQUEST,
            "only COMPOSITE checksums of multipart uploads are supported");
        return false;
    }
    if (type && !alg) {
        cn__s3_error(q, CN_S3E_INVALID_REQUEST,
                     "x-amz-checksum-type needs x-amz-checksum-algorithm");
        return false;
    }
    *name = a == CN_CKSUM_NONE ? NULL : cn_http_cksum_name(a);
    return true;
}

void cn__s3_mpu_create(cn__s3_rq_t *q)
{
    cn__s3_put_hdrs_t h;
    memset(&h, 0, sizeof h);
    cn__s3_tags_t tags;
    memset(&tags, 0, sizeof tags);
    const char *alg = NULL;
    if (!create_checksum(q, &alg) || !cn__s3_put_hdrs(q, &h, false) ||
        !cn__s3_tagging_header(q, &tags)) {
        cn__s3_put_hdrs_free(&h);
        cn__s3_tags_free(&tags);
        return;
    }
    h.args.checksum_alg = alg;
    h.args.tags = tags.kv;
    h.args.ntags = tags.n;
    char id[CN_UPLOAD_ID_MAX + 1];
    cn_err_t e = cn_objects_mpu_create(q->s3->objects, &q->orq, q->bucket, q->key, &h.args, id);
    cn__s3_put_hdrs_free(&h);
    cn__s3_tags_free(&tags);
    if (e < 0) {
        cn__s3_fail(q, e);
        return;
    }
    if (alg) {
        cn_http_resp_header(q->r, "x-amz-checksum-algorithm", alg);
        cn_http_resp_header(q->r, "x-amz-checksum-type", "COMPOSITE");
    }
    cn_buf_t out = { 0 };
    cn_xml_writer_t w;
    cn_xml_begin(&w, &out);
    cn_xml_open(&w, "InitiateMultipartUploadResult", CN_S3_XMLNS);
    cn_xml_elem(&w, "Bucket", q->bucket);
    cn_xml_elem(&w, "Key", q->key);
    cn_xml_elem(&w, "UploadId", id);
    cn_xml_close(&w);
    cn__s3_xml(q, 200, &w);
}

/* ---- UploadPart / UploadPartCopy --------------------------------------------------------- */

static bool part_number(cn__s3_rq_t *q, int32_t *out)
{
    int64_t n;
    const char *pn = cn_http_req_query(q->r, "partNumber");
    if (!pn) {
        cn__s3_error(q, CN_S3E_INVALID_ARGUMENT, "partNumber is required");
        return false;
    }
    if (!cn__s3_int_arg(q, pn,
                        "Part number must be an integer between 1 and 10000, inclusive;"
                        " partNumber",
                        1, CN_PART_NUMBER_MAX, 1, &n))
        return false;
    *out = (int32_t)n;
    return true;
}

void cn__s3_mpu_upload_part(cn__s3_rq_t *q)
{
    int32_t part;
    const char *id = upload_id(q);
    if (!id || !part_number(q, &part))
        return;
    cn__s3_put_part(q, id, part);
}

/* x-amz-copy-source-range: "bytes=a-b" only (S3 takes no other form). */
static int copy_range(cn__s3_rq_t *q, cn_objects_range_t *rg)
{
    const char *h = cn_http_req_header(q->r, "x-amz-copy-source-range");
    if (!h)
        return 0;
    unsigned long long a, b;
    char tail;
    if (sscanf(h, "bytes=%llu-%llu%c", &a, &b, &tail) != 2 || b < a) {
        cn__s3_error(q, CN_S3E_INVALID_ARGUMENT,
                     "The x-amz-copy-source-range value must be of the form bytes=first-last "
                     "where first and last are the zero-based offsets of the first and last "
                     "bytes to copy");
        return -1;
    }
    rg->kind = CN_RANGE_FROM;
    rg->off = a;
    rg->len = b - a + 1;
    return 1;
}

void cn__s3_mpu_upload_part_copy(cn__s3_rq_t *q)
{
    int32_t part;
    const char *id = upload_id(q);
    if (!id || !part_number(q, &part))
        return;
    cn_objects_range_t rg;
    memset(&rg, 0, sizeof rg);
    int hr = copy_range(q, &rg);
    if (hr < 0)
        return;
    char *sb = NULL, *sk = NULL, *sv = NULL;
    if (!cn__s3_copy_source(q, &sb, &sk, &sv))
        return;
    cn_object_info_t info;
    memset(&info, 0, sizeof info);
    cn_objects_reader_t *rd = NULL;
    cn_objects_put_t *put = NULL;
    cn_objects_req_t src = q->orq;
    cn_err_t e =
        cn_objects_get_version(q->s3->objects, &src, sb, sk, sv, hr ? &rg : NULL, &info, &rd);
    if (e < 0) {
        if (e == CN_E_RANGE) {
            char m[128];
            snprintf(m, sizeof m, "Range specified is not valid for source object of size: %llu",
                     (unsigned long long)info.size);
            cn__s3_error(q, CN_S3E_INVALID_ARGUMENT, m);
        } else {
            q->orq = src;
            q->orq.side = CN_OBJ_SIDE_SOURCE;
            cn__s3_fail(q, e);
        }
        goto out;
    }
    if (hr && rg.off + rg.len > info.size) {
        char m[128];
        snprintf(m, sizeof m, "Range specified is not valid for source object of size: %llu",
                 (unsigned long long)info.size);
        cn__s3_error(q, CN_S3E_INVALID_ARGUMENT, m);
        goto out;
    }
    cn_s3_err_t c =
        cn__s3_conditions(q, info.etag, info.last_modified_ms, "x-amz-copy-source-if-match",
                          "x-amz-copy-source-if-none-match", "x-amz-copy-source-if-modified-since",
                          "x-amz-copy-source-if-unmodified-since", true);
    if (c != CN_S3E_NONE) {
        cn__s3_error(q, c, NULL);
        goto out;
    }
    e = cn_objects_part_begin(q->s3->objects, &q->orq, q->bucket, q->key, id, part, NULL,
                              (int64_t)cn_objects_reader_len(rd), &put);
    if (e < 0) {
        cn__s3_fail(q, e);
        goto out;
    }
    e = cn__s3_reader_to_put(rd, put);
    cn_objects_reader_free(rd);
    rd = NULL;
    cn_objects_put_result_t res;
    if (e >= 0) {
        e = cn_objects_put_commit(put, &res);
        put = NULL;
    }
    if (e < 0) {
        cn__s3_fail(q, e);
    } else {
        if (sv)
            cn__s3_version_header(q, "x-amz-copy-source-version-id", info.version_id, info.vnull,
                                  true);
        cn__s3_copy_result(q, "CopyPartResult", &res);
    }
out:
    cn_objects_put_abort(put);
    cn_objects_reader_free(rd);
    cn_objects_info_free(&info);
    free(sb);
    free(sk);
    free(sv);
}

/* ---- Complete -------------------------------------------------------------------------------- */

/* What a CompleteMultipartUpload request says: the listed parts with the
 * etag and the checksum sent for each (alg NONE when none), and the object's
 * checksum headers; then the S3 error its check found. */
typedef struct {
    size_t n;
    int32_t *parts;
    char **etags;
    cn_http_cksum_alg_t *ck_alg;
    char **cks;
    cn_http_cksum_alg_t obj_alg;
    const char *obj_ck;
    const char *obj_type;
    cn_s3_err_t err;
    char msg[200];
} cn__complete_req_t;

static void complete_req_free(cn__complete_req_t *c)
{
    for (size_t k = 0; k < c->n; k++) {
        if (c->etags)
            free(c->etags[k]);
        if (c->cks)
            free(c->cks[k]);
    }
    free(c->etags);
    free(c->cks);
    free(c->ck_alg);
    free(c->parts);
}

/* Text of child name of node p, trimmed of quotes and blanks, as a new
 * string in *out (NULL when absent or empty).  false on ENOMEM. */
static bool child_dup(const cn_xml_doc_t *d, int p, const char *name, char **out)
{
    size_t l = 0;
    const char *t = cn_xml_child_text(d, p, name, &l);
    *out = NULL;
    while (t && l && (*t == '"' || *t == ' ')) {
        t++;
        l--;
    }
    while (t && l && (t[l - 1] == '"' || t[l - 1] == ' '))
        l--;
    if (!t || !l)
        return true;
    return (*out = strndup(t, l)) != NULL;
}

/* One Part element into slot i.  Answers and returns false on an error. */
static bool complete_part(cn__s3_rq_t *q, const cn_xml_doc_t *d, int p, cn__complete_req_t *c,
                          size_t i)
{
    size_t nl = 0;
    const char *num = cn_xml_child_text(d, p, "PartNumber", &nl);
    char buf[16];
    if (!num || !nl || nl >= sizeof buf) {
        cn__s3_error(q, CN_S3E_MALFORMED_XML, NULL);
        return false;
    }
    memcpy(buf, num, nl);
    buf[nl] = 0;
    char *end;
    long v = strtol(buf, &end, 10);
    if (*end || v < 1 || v > CN_PART_NUMBER_MAX) {
        cn__s3_error(q, CN_S3E_INVALID_ARGUMENT,
                     "Part number must be an integer between 1 and 10000, inclusive");
        return false;
    }
    c->parts[i] = (int32_t)v;
    if (i && c->parts[i] <= c->parts[i - 1]) {
        cn__s3_error(q, CN_S3E_INVALID_PART_ORDER, NULL);
        return false;
    }
    bool ok = child_dup(d, p, "ETag", &c->etags[i]); /* the service compares bare hex */
    for (cn_http_cksum_alg_t a = CN_CKSUM_NONE + 1; a < CN_CKSUM_COUNT && ok && !c->cks[i]; a++) {
        char name[32];
        snprintf(name, sizeof name, "Checksum%s", cn_http_cksum_name(a));
        ok = child_dup(d, p, name, &c->cks[i]);
        if (c->cks[i])
            c->ck_alg[i] = a;
    }
    if (!ok)
        cn__s3_error(q, CN_S3E_INTERNAL_ERROR, NULL);
    return ok;
}

/* The request's XML body and checksum headers into c.  false after
 * answering. */
static bool complete_parse(cn__s3_rq_t *q, const cn_xml_doc_t *d, cn__complete_req_t *c)
{
    int root = cn_xml_root(d);
    const char *rn = cn_xml_name(d, root);
    size_t n = 0;
    if (rn && strcmp(rn, "CompleteMultipartUpload") == 0)
        for (int p = cn_xml_child(d, root, "Part"); p >= 0; p = cn_xml_next(d, p, "Part"))
            n++;
    if (n == 0 || n > CN_PART_NUMBER_MAX) {
        cn__s3_error(q, CN_S3E_MALFORMED_XML, NULL);
        return false;
    }
    c->parts = calloc(n, sizeof *c->parts);
    c->etags = calloc(n, sizeof *c->etags);
    c->cks = calloc(n, sizeof *c->cks);
    c->ck_alg = calloc(n, sizeof *c->ck_alg);
    if (!c->parts || !c->etags || !c->cks || !c->ck_alg) {
        cn__s3_error(q, CN_S3E_INTERNAL_ERROR, NULL);
        return false;
    }
    c->n = n;
    size_t i = 0;
    for (int p = cn_xml_child(d, root, "Part"); p >= 0; p = cn_xml_next(d, p, "Part"), i++)
        if (!complete_part(q, d, p, c, i))
            return false;
    for (cn_http_cksum_alg_t a = CN_CKSUM_NONE + 1; a < CN_CKSUM_COUNT; a++) {
        const char *v = cn_http_req_header(q->r, cn_http_cksum_header(a));
        if (v && c->obj_ck) {
            cn__s3_error(q, CN_S3E_INVALID_REQUEST, "Expecting a single x-amz-checksum- header");
            return false;
        }
        if (v) {
            c->obj_alg = a;
            c->obj_ck = v;
        }
    }
    c->obj_type = cn_http_req_header(q->r, "x-amz-checksum-type");
    return true;
}

static cn_err_t complete_refuse(cn__complete_req_t *c, cn_s3_err_t e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static cn_err_t complete_refuse(cn__complete_req_t *c, cn_s3_err_t e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg, sizeof c->msg, fmt, ap);
    va_end(ap);
    c->err = e;
    return CN_E_INVALID;
}

/* S3's composite checksum of the parts: the algorithm over their raw
 * checksums in order, base64, then "-N"; "" when a part has none. */
static void multipart_composite(cn_http_cksum_alg_t alg, const cn_objects_part_t *parts, size_t n,
                                char out[CN_OBJECTS_CKSUM_MAX])
{
    out[0] = 0;
    cn_http_cksum_t ck;
    if (cn_http_cksum_init(&ck, alg) != CN_OK)
        return;
    for (size_t i = 0; i < n; i++) {
        uint8_t raw[CN_CKSUM_MAX_LEN + 3];
        const char *v = parts[i].checksum;
        if (cn_base64_decode(v, strlen(v), raw, sizeof raw) != (long)cn_http_cksum_len(alg)) {
            cn_http_cksum_free(&ck);
            return;
        }
        cn_http_cksum_update(&ck, raw, cn_http_cksum_len(alg));
    }
    uint8_t raw[CN_CKSUM_MAX_LEN];
    char b64[CN_CKSUM_B64_LEN];
    cn_http_cksum_final(&ck, raw, b64);
    /* n <= CN_PART_NUMBER_MAX: "%u" lets the compiler see the result fits */
    snprintf(out, CN_OBJECTS_CKSUM_MAX, "%s-%u", b64, (unsigned)n);
}

/* The service's complete_check (after the service judged every part but
 * the last against args.min_part_size, the face's: EntityTooSmall): each
 * checksum the request lists must be the one its part was uploaded with,
 * and the object's checksum header, when sent, the composite (with or
 * without "-N").  Makes the composite. */
static cn_err_t multipart_complete_check(void *ctx, cn_objects_req_t *rq, const char *alg_name,
                                         const cn_objects_part_t *parts, size_t n,
                                         char checksum[CN_OBJECTS_CKSUM_MAX])
{
    cn__complete_req_t *c = ctx;
    (void)rq; /* refusals here are the face's own (c->err) */
    cn_http_cksum_alg_t alg = cn_http_cksum_parse(alg_name);
    for (size_t i = 0; i < n && i < c->n; i++) {
        if (c->ck_alg[i] == CN_CKSUM_NONE)
            continue;
        if (c->ck_alg[i] != alg)
            return complete_refuse(
                c, CN_S3E_INVALID_REQUEST,
                "Checksum Type mismatch occurred, expected checksum Type: %s, actual checksum "
                "Type: %s (part %d)",
                alg ? cn_http_cksum_name(alg) : "null", cn_http_cksum_name(c->ck_alg[i]),
                parts[i].part_number);
        if (strcmp(c->cks[i], parts[i].checksum) != 0)
            return complete_refuse(
                c, CN_S3E_BAD_DIGEST,
                "The %s checksum of part %d does not match the one it was uploaded with",
                cn_http_cksum_name(alg), parts[i].part_number);
    }
    if (alg != CN_CKSUM_NONE)
        multipart_composite(alg, parts, n, checksum);
    if (c->obj_type && (alg == CN_CKSUM_NONE || strcmp(c->obj_type, "COMPOSITE") != 0))
        return complete_refuse(c, CN_S3E_BAD_DIGEST, "The upload's checksum type is not %s",
                               c->obj_type);
    if (c->obj_alg == CN_CKSUM_NONE)
        return 0;
    size_t cl = strlen(checksum), vl = strlen(c->obj_ck);
    const char *dash = strrchr(checksum, '-');
    bool same = c->obj_alg == alg && cl &&
                ((vl == cl && !strcmp(c->obj_ck, checksum)) ||
                 (dash && vl == (size_t)(dash - checksum) && !strncmp(c->obj_ck, checksum, vl)));
    if (!same)
        return complete_refuse(c, CN_S3E_BAD_DIGEST,
                               "The %s you specified did not match the calculated checksum.",
                               cn_http_cksum_header(c->obj_alg));
    return 0;
}

/* CompleteMultipartUploadResult for res. */
static void complete_answer(cn__s3_rq_t *q, const cn_objects_put_result_t *res)
{
    char etag[CN__S3_ETAG_MAX];
    cn__s3_quote_etag(res->etag, etag);
    cn_buf_t loc = { 0 };
    const char *host = cn_http_req_header(q->r, "Host");
    cn_buf_printf(&loc, "%s://%s/", cn_http_req_is_tls(q->r) ? "https" : "http",
                  host ? host : "localhost");
    cn_sigv4_uri_encode(&loc, q->bucket, strlen(q->bucket), false);
    cn_buf_put_u8(&loc, '/');
    cn_sigv4_uri_encode(&loc, q->key, strlen(q->key), true);
    cn_buf_t ob = { 0 };
    cn_xml_writer_t w;
    cn_xml_begin(&w, &ob);
    cn_xml_open(&w, "CompleteMultipartUploadResult", CN_S3_XMLNS);
    cn_xml_elem_n(&w, "Location", (const char *)loc.data, loc.len);
    cn_xml_elem(&w, "Bucket", q->bucket);
    cn_xml_elem(&w, "Key", q->key);
    cn_xml_elem(&w, "ETag", etag);
    /* A repeated completion does not know the version's nullness: it names
     * no version. */
    if (!res->repeated) {
        cn__s3_version_header(q, "x-amz-version-id", res->version_id, res->vnull,
                              res->bucket_versioned);
        (void)cn__s3_expiration_header(q, q->key, res->size, res->version_id, 0,
                                       res->last_modified_ms);
    }
    cn_http_cksum_alg_t alg = cn_http_cksum_parse(res->checksum_alg);
    if (alg != CN_CKSUM_NONE && res->checksum[0]) {
        char elem[32];
        snprintf(elem, sizeof elem, "Checksum%s", cn_http_cksum_name(alg));
        cn_xml_elem(&w, elem, res->checksum);
        cn_xml_elem(&w, "ChecksumType", "COMPOSITE");
    }
    cn_xml_close(&w);
    cn_buf_free(&loc);
    cn__s3_xml(q, 200, &w);
}

static void complete_done(cn__s3_rq_t *q)
{
    const char *id = upload_id(q);
    if (!id)
        return;
    cn_xml_doc_t *d = cn__s3_body_xml(q, true);
    if (!d)
        return;
    cn__complete_req_t c;
    memset(&c, 0, sizeof c);
    if (!complete_parse(q, d, &c))
        goto out;
    cn_objects_put_args_t args;
    memset(&args, 0, sizeof args);
    const char *inm = cn_http_req_header(q->r, "If-None-Match");
    if (inm) {
        if (strcmp(inm, "*") != 0) {
            cn__s3_error(q, CN_S3E_NOT_IMPLEMENTED, "If-None-Match on a write supports only '*'");
            goto out;
        }
        args.if_none_match = true;
    }
    args.if_match = cn_http_req_header(q->r, "If-Match");
    args.complete_check = multipart_complete_check;
    args.answer_repeat = true;
    args.min_part_size = q->s3->min_part_size;
    args.complete_ctx = &c;
    cn_objects_put_result_t res;
    cn_err_t e = cn_objects_mpu_complete(q->s3->objects, &q->orq, q->bucket, q->key, id, c.parts,
                                         (const char *const *)c.etags, c.n, &args, &res);
    if (e < 0 && c.err != CN_S3E_NONE)
        cn__s3_error(q, c.err, c.msg);
    else if (e < 0)
        cn__s3_fail(q, e);
    else
        complete_answer(q, &res);
out:
    complete_req_free(&c);
    cn_xml_doc_free(d);
}

void cn__s3_mpu_complete(cn__s3_rq_t *q)
{
    cn__s3_collect(q, CN__S3_COMPLETE_BODY_MAX, complete_done);
}

/* ---- Abort --------------------------------------------------------------------------------- */

void cn__s3_mpu_abort(cn__s3_rq_t *q)
{
    const char *id = upload_id(q);
    if (!id)
        return;
    cn_err_t e = cn_objects_mpu_abort(q->s3->objects, &q->orq, q->bucket, q->key, id);
    if (e < 0) {
        cn__s3_fail(q, e);
        return;
    }
    cn_http_respond_empty(q->r, 204, 0);
}

/* ---- ListParts ------------------------------------------------------------------------------- */

typedef struct {
    cn_xml_writer_t *w;
    int32_t last;
} cn__lp_t;

static cn_err_t lp_one(void *arg, const cn_objects_part_t *p)
{
    cn__lp_t *l = arg;
    char etag[CN__S3_ETAG_MAX], date[CN_RFC3339_LEN];
    cn__s3_quote_etag(p->etag, etag);
    cn__s3_iso_date(p->last_modified_ms, date);
    cn_xml_open(l->w, "Part", NULL);
    cn_xml_elem_u64(l->w, "PartNumber", (uint64_t)p->part_number);
    cn_xml_elem(l->w, "LastModified", date);
    cn_xml_elem(l->w, "ETag", etag);
    cn_xml_elem_u64(l->w, "Size", p->size);
    cn_xml_close(l->w);
    l->last = p->part_number;
    return 0;
}

void cn__s3_mpu_list_parts(cn__s3_rq_t *q)
{
    const char *id = upload_id(q);
    int64_t max, marker;
    if (!id ||
        !cn__s3_int_arg(q, cn_http_req_query(q->r, "max-parts"), "max-parts", 0, INT32_MAX, 1000,
                        &max) ||
        !cn__s3_int_arg(q, cn_http_req_query(q->r, "part-number-marker"), "part-number-marker", 0,
                        CN_PART_NUMBER_MAX, 0, &marker))
        return;
    if (max > 1000)
        max = 1000;
    cn_buf_t parts = { 0 };
    cn_xml_writer_t pw;
    pw.out = &parts;
    pw.depth = 0;
    pw.err = 0;
    cn__lp_t l = { &pw, (int32_t)marker };
    bool trunc = false;
    cn_err_t e =
        max == 0 ? 0
                 : cn_objects_mpu_list_parts(q->s3->objects, &q->orq, q->bucket, q->key, id,
                                             (int32_t)marker, (uint32_t)max, lp_one, &l, &trunc);
    if (e < 0) {
        cn_buf_free(&parts);
        cn__s3_fail(q, e);
        return;
    }
    const char *owner = q->anonymous ? "anonymous" : q->principal.account;
    cn_buf_t out = { 0 };
    cn_xml_writer_t w;
    cn_xml_begin(&w, &out);
    cn_xml_open(&w, "ListPartsResult", CN_S3_XMLNS);
    cn_xml_elem(&w, "Bucket", q->bucket);
    cn_xml_elem(&w, "Key", q->key);
    cn_xml_elem(&w, "UploadId", id);
    cn__s3_owner(&w, "Initiator", owner);
    cn__s3_owner(&w, "Owner", owner);
    cn_xml_elem(&w, "StorageClass", "STANDARD");
    cn_xml_elem_u64(&w, "PartNumberMarker", (uint64_t)marker);
    cn_xml_elem_u64(&w, "NextPartNumberMarker", (uint64_t)l.last);
    cn_xml_elem_u64(&w, "MaxParts", (uint64_t)max);
    cn_xml_elem_bool(&w, "IsTruncated", trunc);
    if (pw.err)
        w.err = pw.err;
    else if (cn_buf_append(&out, parts.data, parts.len) != CN_OK)
        w.err = -ENOMEM;
    cn_buf_free(&parts);
    cn_xml_close(&w);
    cn__s3_xml(q, 200, &w);
}

/* ---- ListMultipartUploads ------------------------------------------------------------------------ */

typedef struct {
    cn_xml_writer_t *w;
    const char *prefix;
    const char *delim;
    char last_prefix[CN_OBJECT_KEY_MAX + 1];
    char next_key[CN_OBJECT_KEY_MAX + 1];
    char next_id[CN_UPLOAD_ID_MAX + 1];
    cn_buf_t prefixes;
    bool url;
} cn__lu_t;

static cn_err_t lu_one(void *arg, const cn_objects_upload_t *u)
{
    cn__lu_t *l = arg;
    snprintf(l->next_key, sizeof l->next_key, "%s", u->key);
    snprintf(l->next_id, sizeof l->next_id, "%s", u->upload_id);
    if (l->delim) {
        size_t pl = l->prefix ? strlen(l->prefix) : 0;
        const char *d = strstr(u->key + pl, l->delim);
        if (d) {
            size_t n = (size_t)(d - u->key) + strlen(l->delim);
            if (n < sizeof l->last_prefix &&
                !(strlen(l->last_prefix) == n && !memcmp(l->last_prefix, u->key, n))) {
                memcpy(l->last_prefix, u->key, n);
                l->last_prefix[n] = 0;
                cn_xml_writer_t pw = { .out = &l->prefixes };
                cn_xml_open(&pw, "CommonPrefixes", NULL);
                cn__s3_url_text(&pw, "Prefix", l->last_prefix, l->url);
                cn_xml_close(&pw);
                if (pw.err)
                    return pw.err;
            }
            return 0;
        }
    }
    char date[CN_RFC3339_LEN];
    cn__s3_iso_date(u->created_ms, date);
    cn_xml_open(l->w, "Upload", NULL);
    cn__s3_url_text(l->w, "Key", u->key, l->url);
    cn_xml_elem(l->w, "UploadId", u->upload_id);
    cn__s3_owner(l->w, "Initiator", u->owner);
    cn__s3_owner(l->w, "Owner", u->owner);
    cn_xml_elem(l->w, "StorageClass", "STANDARD");
    cn_xml_elem(l->w, "Initiated", date);
    cn_xml_close(l->w);
    return 0;
}

void cn__s3_mpu_list_uploads(cn__s3_rq_t *q)
{
    cn_http_req_t *r = q->r;
    int64_t max;
    if (!cn__s3_int_arg(q, cn_http_req_query(r, "max-uploads"), "max-uploads", 0, INT32_MAX, 1000,
                        &max))
        return;
    if (max > 1000)
        max = 1000;
    const char *enc = cn_http_req_query(r, "encoding-type");
    if (enc && strcmp(enc, "url") != 0) {
        cn__s3_error(q, CN_S3E_INVALID_ARGUMENT, "Invalid Encoding Method specified in Request");
        return;
    }
    const char *prefix = cn_http_req_query(r, "prefix");
    const char *delim = cn_http_req_query(r, "delimiter");
    const char *km = cn_http_req_query(r, "key-marker");
    const char *um = cn_http_req_query(r, "upload-id-marker");
    cn__lu_t *l = calloc(1, sizeof *l);
    if (!l) {
        cn__s3_error(q, CN_S3E_INTERNAL_ERROR, NULL);
        return;
    }
    cn_buf_t uploads = { 0 };
    cn_xml_writer_t uw = { .out = &uploads };
    l->w = &uw;
    l->prefix = prefix && *prefix ? prefix : NULL;
    l->delim = delim && *delim ? delim : NULL;
    l->url = enc != NULL;
    bool trunc = false;
    cn_err_t e = max == 0 ? 0
                          : cn_objects_mpu_list(q->s3->objects, &q->orq, q->bucket, l->prefix,
                                                km && *km ? km : NULL, um && *um ? um : NULL,
                                                (uint32_t)max, lu_one, l, &trunc);
    if (e < 0) {
        cn_buf_free(&uploads);
        cn_buf_free(&l->prefixes);
        free(l);
        if (e == CN_E_NOT_FOUND)
            q->orq.what = CN_OBJ_WHAT_BUCKET;
        cn__s3_fail(q, e);
        return;
    }
    cn_buf_t out = { 0 };
    cn_xml_writer_t w;
    cn_xml_begin(&w, &out);
    cn_xml_open(&w, "ListMultipartUploadsResult", CN_S3_XMLNS);
    cn_xml_elem(&w, "Bucket", q->bucket);
    cn__s3_url_text(&w, "KeyMarker", km ? km : "", l->url);
    cn_xml_elem(&w, "UploadIdMarker", um ? um : "");
    if (trunc) {
        cn__s3_url_text(&w, "NextKeyMarker", l->next_key, l->url);
        cn_xml_elem(&w, "NextUploadIdMarker", l->next_id);
    }
    if (prefix)
        cn__s3_url_text(&w, "Prefix", prefix, l->url);
    if (l->delim)
        cn__s3_url_text(&w, "Delimiter", l->delim, l->url);
    if (l->url)
        cn_xml_elem(&w, "EncodingType", "url");
    cn_xml_elem_u64(&w, "MaxUploads", (uint64_t)max);
    cn_xml_elem_bool(&w, "IsTruncated", trunc);
    if (uw.err)
        w.err = uw.err;
    else if (cn_buf_append(&out, uploads.data, uploads.len) != CN_OK ||
             cn_buf_append(&out, l->prefixes.data, l->prefixes.len) != CN_OK)
        w.err = -ENOMEM;
    cn_buf_free(&uploads);
    cn_buf_free(&l->prefixes);
    free(l);
    cn_xml_close(&w);
    cn__s3_xml(q, 200, &w);
}
