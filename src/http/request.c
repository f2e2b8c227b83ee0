/* Request target parsing and the request accessors (include/cairn/http.h). */
#include "http_int.h"

#include <errno.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CN__MAX_QUERY_PARAMS 1024

/* The query's pairs, decoded in request order into one allocation: the pair
 * array, then each name and value NUL-terminated (decoding never lengthens,
 * so the raw query's length plus two NULs a pair bounds the text).  One
 * malloc per query instead of two a pair (a presigned GET carries six);
 * cn__req_free frees r->q alone.  CN_E_INVALID for a bad escape or an encoded
 * NUL. */
static cn_err_t parse_query(cn_http_req_t *r)
{
    size_t qn = strlen(r->raw_query);
    if (qn == 0)
        return CN_OK;
    size_t count = 1;
    for (size_t i = 0; i < qn; i++)
        count += r->raw_query[i] == '&';
    if (count > CN__MAX_QUERY_PARAMS)
        return CN_E_INVALID;
    r->q = calloc(1, count * sizeof *r->q + qn + 2 * count);
    if (!r->q)
        return -ENOMEM;
    char *o = (char *)(r->q + count);
    const char *p = r->raw_query;
    while (*p) {
        size_t len = strcspn(p, "&");
        if (len > 0) {
            const char *eq = memchr(p, '=', len);
            size_t nl = eq ? (size_t)(eq - p) : len;
            long a = cn_http_pct_decode_to(o, p, nl);
            long b = a >= 0 && eq ? cn_http_pct_decode_to(o + a + 1, eq + 1, len - nl - 1) : 0;
            if (a < 0 || b < 0)
                return CN_E_INVALID;
            r->q[r->nq].name = o;
            o[a] = 0;
            o += a + 1;
            r->q[r->nq].value = o;
            o[b] = 0;
            o += b + 1;
            r->nq++;
        }
        p += len;
        if (*p == '&')
            p++;
    }
    return CN_OK;
}

/* Splits the raw URI at '?', decodes the path, and decodes the query pairs.
 * CN_E_INVALID for a bad escape or an encoded NUL. */
cn_err_t cn__req_parse_target(cn_http_req_t *r)
{
    if (!r->uri)
        return -ENOMEM;
    char *q = strchr(r->uri, '?');
    if (q)
        *q++ = 0;
    /* An absolute-form target ("http://host/path") is reduced to its path. */
    char *path = r->uri;
    if (strncasecmp(path, "http://", 7) == 0 || strncasecmp(path, "https://", 8) == 0) {
        char *slash = strchr(strstr(path, "//") + 2, '/');
        path = slash ? slash : (char *)"/";
    }
    r->raw_path = path;
    r->raw_query = q ? q : "";
    cn_err_t err = cn_http_pct_decode(&r->path, r->raw_path, strlen(r->raw_path));
    if (!err)
        err = cn_buf_put_u8(&r->path, 0);
    if (!err && (r->path.len <= 1 || r->path.data[0] != '/'))
        err = CN_E_INVALID;
    if (err) {
        /* Accessors fall back to the raw path. */
        cn_buf_free(&r->path);
        return err;
    }
    r->path.len--;
    return parse_query(r);
}

/* Each thread's spare request (cn__req_alloc), freed when the thread ends. */
static pthread_key_t spare_key;
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;
static bool spare_ok;

/* A request freed for good, with the buffers it keeps between requests. */
static void req_drop(void *p)
{
    cn_http_req_t *r = p;
    cn_buf_free(&r->rhl);
    free(r);
}

static void spare_key_init(void)
{
    spare_ok = pthread_key_create(&spare_key, req_drop) == 0;
}

cn_http_req_t *cn__req_alloc(void)
{
    pthread_once(&spare_once, spare_key_init);
    cn_http_req_t *r = spare_ok ? pthread_getspecific(spare_key) : NULL;
    if (r)
        pthread_setspecific(spare_key, NULL);
    else if ((r = malloc(sizeof *r)) != NULL)
        memset(&r->rhl, 0, sizeof r->rhl);
    else
        return NULL;
    memset(r, 0, CN__REQ_CLEARED);
    r->rhl.len = 0;
    r->peer[0] = r->client_ip[0] = r->access_key[0] = r->auth_detail[0] = 0;
    r->cksum_expected[0] = 0;
    memset(&r->sig.deferred, 0, sizeof r->sig.deferred);
    return r;
}

void cn__req_free(cn_http_req_t *r)
{
    if (!r)
        return;
    free(r->q); /* the pairs' text lives in the same block (parse_query) */
    cn__resp_discard(r);
    if (r->chunk) {
        cn_awschunk_free(r->chunk);
        free(r->chunk);
    }
    if (r->body_sha)
        EVP_MD_CTX_free(r->body_sha);
    cn_http_cksum_free(&r->cksum);
    cn_sigv4_clear(&r->sig);
    cn_buf_free(&r->path);
    cn__head_free(&r->head);
    free(r->content_encoding);
    free(r->uri);
    pthread_once(&spare_once, spare_key_init);
    if (r->rhl.cap > CN__RHL_KEEP) /* an unusual one's: not kept */
        cn_buf_free(&r->rhl);
    if (spare_ok && !pthread_getspecific(spare_key) && pthread_setspecific(spare_key, r) == 0)
        return;
    req_drop(r);
}

const char *cn_http_req_method(const cn_http_req_t *r)
{
    return r->method;
}
unsigned cn_http_req_method_bit(const cn_http_req_t *r)
{
    return r->method_bit;
}

const char *cn_http_req_path(const cn_http_req_t *r, size_t *len)
{
    if (len)
        *len = r->path.len;
    if (!r->path.data) {
        const char *raw = r->raw_path ? r->raw_path : "/";
        if (len)
            *len = strlen(raw);
        return raw;
    }
    return (const char *)r->path.data;
}

const char *cn_http_req_raw_path(const cn_http_req_t *r)
{
    return r->raw_path ? r->raw_path : "/";
}
const char *cn_http_req_raw_query(const cn_http_req_t *r)
{
    return r->raw_query ? r->raw_query : "";
}

const char *cn_http_req_query(const cn_http_req_t *r, const char *name)
{
    /* The first byte first: a router asks for a dozen names, and a presigned
     * URL's items all begin "X-Amz-", so most comparisons end there. */
    for (size_t i = 0; i < r->nq; i++)
        if (r->q[i].name[0] == name[0] && strcmp(r->q[i].name, name) == 0)
            return r->q[i].value;
    return NULL;
}

bool cn_http_req_has_query(const cn_http_req_t *r, const char *name)
{
    return cn_http_req_query(r, name) != NULL;
}

size_t cn_http_req_query_count(const cn_http_req_t *r)
{
    return r->nq;
}

void cn_http_req_query_at(const cn_http_req_t *r, size_t i, const char **name, const char **value)
{
    *name = i < r->nq ? r->q[i].name : NULL;
    *value = i < r->nq ? r->q[i].value : NULL;
}

const char *cn_http_req_header(const cn_http_req_t *r, const char *name)
{
    return cn__head_header(&r->head, name);
}

void cn_http_req_headers(const cn_http_req_t *r,
                         bool (*fn)(void *ctx, const char *name, const char *value), void *ctx)
{
    for (size_t i = 0; r->head.kv && i < r->head.n; i++)
        if (!fn(ctx, r->head.kv[i].name, r->head.kv[i].value))
            return;
}

const char *cn_http_req_peer(const cn_http_req_t *r)
{
    return r->peer;
}
const char *cn_http_req_client_ip(const cn_http_req_t *r)
{
    return r->client_ip;
}
const char *cn_http_req_id(const cn_http_req_t *r)
{
    return r->id;
}
const char *cn_http_req_host_id(const cn_http_req_t *r)
{
    return r->host_id;
}
int64_t cn_http_req_content_length(const cn_http_req_t *r)
{
    return r->content_length;
}
int64_t cn_http_req_payload_length(const cn_http_req_t *r)
{
    return r->payload_length;
}
uint64_t cn_http_req_body_received(const cn_http_req_t *r)
{
    return r->received;
}
bool cn_http_req_is_tls(const cn_http_req_t *r)
{
    return r->tls;
}

/* The Content-Encoding header without its aws-chunked coding(s), the rest
 * kept verbatim: each kept coding keeps the separator text that came before
 * it (the first kept one none), so "aws-chunked, deflate, gzip" is
 * "deflate, gzip" and "deflate,aws-chunked, gzip" is "deflate, gzip". */
const char *cn_http_req_content_encoding(const cn_http_req_t *r)
{
    cn_http_req_t *w = (cn_http_req_t *)r;
    if (w->content_encoding)
        return w->content_encoding[0] ? w->content_encoding : NULL;
    const char *ce = cn_http_req_header(r, "Content-Encoding");
    cn_buf_t b = { 0 };
    const char *sep = ce; /* where the text before the next coding starts */
    while (ce && *ce) {
        size_t n = strcspn(ce, ",");
        const char *t = ce;
        size_t tl = n;
        while (tl && (*t == ' ' || *t == '\t')) {
            t++;
            tl--;
        }
        while (tl && (t[tl - 1] == ' ' || t[tl - 1] == '\t'))
            tl--;
        if (tl && !(tl == 11 && strncasecmp(t, "aws-chunked", 11) == 0)) {
            const char *from = b.len ? sep : t;
            if (cn_buf_append(&b, from, (size_t)(t + tl - from)))
                break;
        }
        if (tl)
            sep = t + tl;
        ce += n;
        if (*ce == ',')
            ce++;
    }
    if (cn_buf_put_u8(&b, 0)) {
        cn_buf_free(&b);
        return NULL;
    }
    w->content_encoding = (char *)b.data;
    return w->content_encoding[0] ? w->content_encoding : NULL;
}

cn_http_auth_kind_t cn_http_req_auth(const cn_http_req_t *r)
{
    return r->auth_kind;
}
const char *cn_http_req_access_key(const cn_http_req_t *r)
{
    return r->auth_kind == CN_HTTP_AUTH_ANONYMOUS ? NULL : r->access_key;
}
cn_s3_err_t cn_http_req_auth_error(const cn_http_req_t *r)
{
    return r->auth_err;
}
cn_sigv4_payload_t cn_http_req_payload_mode(const cn_http_req_t *r)
{
    return r->payload;
}
bool cn_http_req_body_sha_delegate(cn_http_req_t *r)
{
    if (!r->body_sha || r->received || r->payload_length <= 0)
        return false;
    r->sha_delegated = true;
    return true;
}

void cn_http_req_body_sha_report(cn_http_req_t *r, const uint8_t sha[32])
{
    if (!r->sha_delegated)
        return;
    memcpy(r->sha_report, sha, 32);
    r->sha_reported = true;
}

cn_s3_err_t cn_http_req_body_error(const cn_http_req_t *r)
{
    return r->body_err;
}

cn_http_cksum_alg_t cn_http_req_checksum(const cn_http_req_t *r, const char **b64)
{
    if (b64)
        *b64 = r->cksum_expected[0] ? r->cksum_expected : NULL;
    return r->cksum_alg;
}

void cn_http_req_set_data(cn_http_req_t *r, void *data)
{
    r->data = data;
}
void *cn_http_req_data(const cn_http_req_t *r)
{
    return r->data;
}
bool cn_http_req_responded(const cn_http_req_t *r)
{
    return r->responded;
}
unsigned cn_http_req_status(const cn_http_req_t *r)
{
    return r->responded ? r->status : 0;
}
bool cn_http_req_on_loop(const cn_http_req_t *r)
{
    return r->on_loop;
}
void cn_http_req_decline(cn_http_req_t *r)
{
    if (r->on_loop)
        r->declined = true;
}
