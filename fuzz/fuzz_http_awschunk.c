/* libFuzzer harness: the incremental aws-chunked decoder (src/http/awschunk.c).
 *
 * Input: a flags byte, a slice byte, then the raw body.
 * flags: bit0 chunk signatures are required (the seed signature of the AWS
 * documentation's streaming example, or with bit3 its trailer example; both
 * sign with the documented key for 20130524/us-east-1/s3); bit1 trailers
 * follow the final chunk; bit2 the decoded payload is capped at
 * 64 * (slice byte) bytes instead of unbounded.
 *
 * The body is decoded twice: in one feed, and in feeds of (slice byte)
 * bytes (1 when 0).  Invariants: the outcome is one of the documented errors;
 * every emitted span lies inside the bytes just fed; the decoded count never
 * passes the cap; and the two slicings agree on the outcome, the S3 error,
 * the emitted bytes and the trailers — the framing is a property of the
 * bytes, not of how the network cut them. */
#include "cairn/crypto.h"
#include "cairn/http.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct {
    const uint8_t *lo, *hi; /* the piece being fed */
    uint64_t n;
    uint64_t h; /* FNV-1a of the emitted bytes */
} sink_t;

static int emit(void *ctx, const uint8_t *p, size_t n)
{
    sink_t *s = ctx;
    if (n == 0 || p < s->lo || p + n > s->hi)
        abort();
    for (size_t i = 0; i < n; i++)
        s->h = (s->h ^ p[i]) * 1099511628211ull;
    s->n += n;
    return 0;
}

typedef struct {
    cn_err_t rc;
    cn_s3_err_t s3err;
    sink_t out;
    bool done;
    size_t n_trailers;
    char trailers[CN_AWSCHUNK_TRAILER_MAX];
    size_t trailer_len;
} outcome_t;

static void decode(const cn_sigv4_t *sig, uint8_t flags, uint64_t cap, const uint8_t *p, size_t n,
                   size_t slice, outcome_t *o)
{
    cn_awschunk_t d;
    memset(o, 0, sizeof *o);
    o->out.h = 14695981039346656037ull;
    o->rc = cn_awschunk_init(&d, sig, flags & 1, (flags & 2) != 0, cap);
    if (o->rc) {
        if (o->rc != -ENOMEM)
            abort();
        cn_awschunk_free(&d);
        return;
    }
    for (size_t off = 0; off < n && !o->rc; off += slice) {
        size_t take = n - off < slice ? n - off : slice;
        o->out.lo = p + off;
        o->out.hi = p + off + take;
        o->rc = cn_awschunk_feed(&d, p + off, take, emit, &o->out);
        if (d.decoded > cap || d.decoded != o->out.n)
            abort();
    }
    if (!o->rc)
        o->rc = cn_awschunk_end(&d);
    if (o->rc != CN_OK && o->rc != CN_E_AUTH && o->rc != CN_E_PROTOCOL && o->rc != CN_E_TOO_LARGE &&
        o->rc != -ENOMEM)
        abort();
    if (o->rc == CN_OK) {
        if (!d.done || d.s3err != CN_S3E_NONE)
            abort();
        for (size_t i = 0; i < d.n_trailers; i++) {
            const cn_http_kv_t *kv = &d.trailer_kv[i];
            if (kv->name < d.trailers || kv->value + kv->value_len > d.trailers + d.trailer_len ||
                strlen(kv->name) != kv->name_len || strlen(kv->value) != kv->value_len)
                abort();
            const char *v = cn_awschunk_trailer(&d, kv->name);
            if (!v)
                abort();
        }
    } else if (d.s3err == CN_S3E_NONE) {
        abort(); /* a refusal names its S3 error */
    }
    o->s3err = d.s3err;
    o->done = d.done;
    o->n_trailers = d.n_trailers;
    o->trailer_len = d.trailer_len;
    memcpy(o->trailers, d.trailers, d.trailer_len);
    cn_awschunk_free(&d);
}

static void make_sig(cn_sigv4_t *s, bool trailer_example)
{
    static const char secret[] = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    memset(s, 0, sizeof *s);
    cn_sigv4_signing_key((const uint8_t *)secret, sizeof secret - 1, "20130524", "us-east-1", "s3",
                         s->signing_key);
    strcpy(s->amz_date, "20130524T000000Z");
    strcpy(s->scope, "20130524/us-east-1/s3/aws4_request");
    strcpy(s->region, "us-east-1");
    strcpy(s->signature, trailer_example
                             ? "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e"
                             : "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9");
    s->payload = trailer_example ? CN_SIGV4_PAYLOAD_STREAMING_TRAILER : CN_SIGV4_PAYLOAD_STREAMING;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    uint8_t flags = data[0];
    size_t slice = data[1] ? data[1] : 1;
    uint64_t cap = (flags & 4) ? 64u * data[1] : UINT64_MAX;
    /* Exact-size copies, so the sanitizer sees a read past either end. */
    size_t n = size - 2;
    uint8_t *body = malloc(n ? n : 1);
    if (!body)
        return 0;
    memcpy(body, data + 2, n);

    cn_sigv4_t sig;
    make_sig(&sig, (flags & 8) != 0);
    outcome_t *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    if (!a || !b)
        goto out;
    decode(&sig, flags, cap, body, n, n ? n : 1, a);
    decode(&sig, flags, cap, body, n, slice, b);
    if (a->rc != b->rc || a->s3err != b->s3err || a->out.n != b->out.n || a->out.h != b->out.h ||
        a->done != b->done || a->n_trailers != b->n_trailers || a->trailer_len != b->trailer_len ||
        memcmp(a->trailers, b->trailers, a->trailer_len) != 0)
        abort();
out:
    free(a);
    free(b);
    free(body);
    return 0;
}
