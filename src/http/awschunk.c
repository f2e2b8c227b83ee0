/* aws-chunked body decoding with per-chunk SigV4 signatures and trailers
 * (include/cairn/http.h).
 *
 *   chunk   = hex-size [";chunk-signature=" 64hex] CRLF data CRLF
 *   final   = "0" [";chunk-signature=" 64hex] CRLF
 *   trailer = *(name ":" value CRLF) ["x-amz-trailer-signature:" 64hex CRLF] CRLF
 *
 * Each chunk's signature is HMAC(signing key, "AWS4-HMAC-SHA256-PAYLOAD\n"
 * date "\n" scope "\n" previous signature "\n" sha256("") "\n" sha256(data)),
 * chained from the seed signature; the trailer's uses "AWS4-HMAC-SHA256-
 * TRAILER" and the hash of the canonical trailer lines.  The decoder holds
 * one line buffer, the trailers buffer and one reused SHA-256 context; it
 * allocates nothing per chunk, and checks every length before trusting it.
 */
#include "cairn/http.h"
#include "cairn/crypto.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define CN__EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

enum {
    ST_HDR,
    ST_DATA,
    ST_DATA_END,
    ST_TRAILER,
    ST_DONE,
    ST_FAILED
};

cn_err_t cn_awschunk_init(cn_awschunk_t *d, const cn_sigv4_t *sig, bool signed_chunks, bool trailer,
                          uint64_t max_decoded)
{
    memset(d, 0, sizeof *d);
    d->sig = sig;
    d->signed_chunks = signed_chunks;
    d->trailer = trailer;
    d->max_decoded = max_decoded;
    d->state = ST_HDR;
    if (signed_chunks) {
        if (!sig)
            return CN_E_INVALID;
        memcpy(d->prev_sig, sig->signature, 65);
        EVP_MD_CTX *ctx = EVP_MD_CTX_new();
        if (!ctx)
            return -ENOMEM;
        d->chunk_sha = ctx;
    }
    return CN_OK;
}

void cn_awschunk_free(cn_awschunk_t *d)
{
    if (d && d->chunk_sha) {
        EVP_MD_CTX_free(d->chunk_sha);
        d->chunk_sha = NULL;
    }
}

static cn_err_t awschunk_fail(cn_awschunk_t *d, cn_err_t err, cn_s3_err_t e)
{
    d->state = ST_FAILED;
    d->s3err = e;
    return err;
}

static void hmac_hex(const cn_awschunk_t *d, const char *sts, size_t n, char out[65])
{
    uint8_t mac[32];
    cn_hmac_sha256(d->sig->signing_key, 32, sts, n, mac);
    cn_hex_encode(mac, 32, out);
}

/* Verifies the signature of the chunk whose data hash is data_hex. */
static bool check_chunk(cn_awschunk_t *d, const char *data_hex)
{
    char sts[512], mine[65];
    int n = snprintf(sts, sizeof sts, "AWS4-HMAC-SHA256-PAYLOAD\n%s\n%s\n%s\n%s\n%s",
                     d->sig->amz_date, d->sig->scope, d->prev_sig, CN__EMPTY_SHA256, data_hex);
    if (n < 0 || (size_t)n >= sizeof sts)
        return false;
    hmac_hex(d, sts, (size_t)n, mine);
    if (!cn_ct_equal(mine, d->chunk_sig, 64))
        return false;
    memcpy(d->prev_sig, mine, 65);
    return true;
}

static bool ishex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
            return false;
    }
    return true;
}

/* A chunk header line (without its line end). */
static cn_err_t chunk_header(cn_awschunk_t *d, char *line, size_t len)
{
    size_t i = 0;
    uint64_t size = 0;
    while (i < len && ishex(line + i, 1)) {
        if (i >= 16)
            return awschunk_fail(d, CN_E_PROTOCOL, CN_S3E_INVALID_REQUEST);
        char c = line[i];
        size = size << 4 | (uint64_t)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
        i++;
    }
    if (i == 0)
        return awschunk_fail(d, CN_E_PROTOCOL, CN_S3E_INCOMPLETE_BODY);
    bool have_sig = false;
    while (i < len) {
        if (line[i] != ';')
            return awschunk_fail(d, CN_E_PROTOCOL, CN_S3E_INVALID_REQUEST);
        i++;
        const char *ext = line + i;
        const char *semi = memchr(ext, ';', len - i);
        size_t el = semi ? (size_t)(semi - ext) : len - i;
        if (el == 16 + 64 && memcmp(ext, "chunk-signature=", 16) == 0 && ishex(ext + 16, 64)) {
            for (int k = 0; k < 64; k++)
                d->chunk_sig[k] = (char)(ext[16 + k] | 0x20);
            d->chunk_sig[64] = 0;
            have_sig = true;
        }
        i += el;
    }
    if (d->signed_chunks && !have_sig)
        return awschunk_fail(d, CN_E_AUTH, CN_S3E_SIGNATURE_DOES_NOT_MATCH);
    if (size > d->max_decoded - d->decoded)
        return awschunk_fail(d, CN_E_TOO_LARGE, CN_S3E_ENTITY_TOO_LARGE);
    d->chunk_left = size;
    if (size == 0) {
        if (d->signed_chunks && !check_chunk(d, CN__EMPTY_SHA256))
            return awschunk_fail(d, CN_E_AUTH, CN_S3E_SIGNATURE_DOES_NOT_MATCH);
        d->state = ST_TRAILER;
        return CN_OK;
    }
    if (d->signed_chunks && EVP_DigestInit_ex(d->chunk_sha, EVP_sha256(), NULL) != 1)
        return awschunk_fail(d, -ENOMEM, CN_S3E_INTERNAL_ERROR);
    d->state = ST_DATA;
    return CN_OK;
}

static cn_err_t trailer_end(cn_awschunk_t *d, const char *sig, bool have_sig)
{
    if (d->signed_chunks && d->trailer) {
        if (!have_sig)
            return awschunk_fail(d, CN_E_AUTH, CN_S3E_SIGNATURE_DOES_NOT_MATCH);
        /* Canonical trailers: "name:value\n" in the order received. */
        EVP_MD_CTX *ctx = d->chunk_sha;
        uint8_t h[32];
        unsigned int hl = 32;
        char hex[65], sts[512], mine[65];
        if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
            return awschunk_fail(d, -ENOMEM, CN_S3E_INTERNAL_ERROR);
        for (size_t i = 0; i < d->n_trailers; i++) {
            EVP_DigestUpdate(ctx, d->trailer_kv[i].name, d->trailer_kv[i].name_len);
            EVP_DigestUpdate(ctx, ":", 1);
            EVP_DigestUpdate(ctx, d->trailer_kv[i].value, d->trailer_kv[i].value_len);
            EVP_DigestUpdate(ctx, "\n", 1);
        }
        EVP_DigestFinal_ex(ctx, h, &hl);
        cn_hex_encode(h, 32, hex);
        int n = snprintf(sts, sizeof sts, "AWS4-HMAC-SHA256-TRAILER\n%s\n%s\n%s\n%s",
                         d->sig->amz_date, d->sig->scope, d->prev_sig, hex);
        if (n < 0 || (size_t)n >= sizeof sts)
            return awschunk_fail(d, CN_E_AUTH, CN_S3E_SIGNATURE_DOES_NOT_MATCH);
        hmac_hex(d, sts, (size_t)n, mine);
        if (!cn_ct_equal(mine, sig, 64))
            return awschunk_fail(d, CN_E_AUTH, CN_S3E_SIGNATURE_DOES_NOT_MATCH);
    } else if (have_sig && !d->signed_chunks) {
        return awschunk_fail(d, CN_E_PROTOCOL, CN_S3E_INVALID_REQUEST);
    }
    d->state = ST_DONE;
    d->done = true;
    return CN_OK;
}

/* RFC 9110 tchar. */
static bool awschunk_tchar(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* One trailer line, or the empty line that ends the body. */
static cn_err_t trailer_line(cn_awschunk_t *d, char *line, size_t len)
{
    if (len == 0)
        return trailer_end(d, d->trailer_sig, d->trailer_sig_seen);
    if (!d->trailer)
        return awschunk_fail(d, CN_E_PROTOCOL, CN_S3E_INVALID_REQUEST);
    char *colon = memchr(line, ':', len);
    if (!colon || colon == line)
        return awschunk_fail(d, CN_E_PROTOCOL, CN_S3E_INVALID_REQUEST);
    size_t nl = (size_t)(colon - line);
    const char *v = colon + 1;
    size_t vl = len - nl - 1;
    while (vl && (*v == ' ' || *v == '\t')) {
        v++;
        vl--;
    }
    while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
        vl--;
    /* Names are HTTP tokens and values hold no control bytes: a NUL would cut
     * the C string a lookup compares while the signature covered all of it. */
    for (size_t i = 0; i < nl; i++)
        if (!awschunk_tchar((unsigned char)line[i]))
            return awschunk_fail(d, CN_E_PROTOCOL, CN_S3E_INVALID_REQUEST);
    for (size_t i = 0; i < vl; i++)
        if (((unsigned char)v[i] < 0x20 && v[i] != '\t') || v[i] == 0x7f)
            return awschunk_fail(d, CN_E_PROTOCOL, CN_S3E_INVALID_REQUEST);
    for (size_t i = 0; i < nl; i++)
        line[i] = (char)((line[i] >= 'A' && line[i] <= 'Z') ? line[i] | 0x20 : line[i]);
    if (nl == 23 && memcmp(line, "x-amz-trailer-signature", 23) == 0) {
        if (vl != 64 || !ishex(v, 64) || d->trailer_sig_seen)
            return awschunk_fail(d, CN_E_AUTH, CN_S3E_SIGNATURE_DOES_NOT_MATCH);
        for (int k = 0; k < 64; k++)
            d->trailer_sig[k] = (char)(v[k] | 0x20);
        d->trailer_sig[64] = 0;
        d->trailer_sig_seen = true;
        return CN_OK;
    }
    if (d->trailer_sig_seen || d->n_trailers >= CN_AWSCHUNK_MAX_TRAILERS ||
        nl + vl + 2 > CN_AWSCHUNK_TRAILER_MAX - d->trailer_len)
        return awschunk_fail(d, CN_E_PROTOCOL, CN_S3E_INVALID_REQUEST);
    char *dst = d->trailers + d->trailer_len;
    memcpy(dst, line, nl);
    dst[nl] = 0;
    memcpy(dst + nl + 1, v, vl);
    dst[nl + 1 + vl] = 0;
    cn_http_kv_t *kv = &d->trailer_kv[d->n_trailers++];
    kv->name = dst;
    kv->name_len = nl;
    kv->value = dst + nl + 1;
    kv->value_len = vl;
    d->trailer_len += nl + vl + 2;
    return CN_OK;
}

/* Collects bytes of a line; returns true with the line (no CR/LF) when complete. */
static bool awschunk_line(cn_awschunk_t *d, const uint8_t **p, size_t *n, cn_err_t *err)
{
    while (*n) {
        uint8_t c = **p;
        (*p)++;
        (*n)--;
        if (c == '\n') {
            if (d->line_len && d->line[d->line_len - 1] == '\r')
                d->line_len--;
            return true;
        }
        if (d->line_len >= CN_AWSCHUNK_LINE_MAX - 1) {
            *err = awschunk_fail(d, CN_E_PROTOCOL, CN_S3E_INVALID_REQUEST);
            return false;
        }
        d->line[d->line_len++] = (char)c;
    }
    return false;
}

cn_err_t cn_awschunk_feed(cn_awschunk_t *d, const uint8_t *p, size_t n, cn_awschunk_emit_fn emit,
                          void *ctx)
{
    cn_err_t err = CN_OK;
    while (n > 0) {
        switch (d->state) {
        case ST_HDR:
        case ST_DATA_END:
        case ST_TRAILER:
            if (!awschunk_line(d, &p, &n, &err)) {
                if (err)
                    return err;
                break;
            }
            {
                size_t len = d->line_len;
                d->line_len = 0;
                d->line[len] = 0;
                if (d->state == ST_HDR) {
                    err = chunk_header(d, d->line, len);
                } else if (d->state == ST_DATA_END) {
                    if (len != 0)
                        return awschunk_fail(d, CN_E_PROTOCOL, CN_S3E_INCOMPLETE_BODY);
                    d->state = ST_HDR;
                } else {
                    err = trailer_line(d, d->line, len);
                }
                if (err)
                    return err;
            }
            break;
        case ST_DATA: {
            size_t take = d->chunk_left < n ? (size_t)d->chunk_left : n;
            if (d->signed_chunks)
                EVP_DigestUpdate(d->chunk_sha, p, take);
            d->chunk_left -= take;
            d->decoded += take;
            if (emit) {
                int r = emit(ctx, p, take);
                if (r) {
                    d->state = ST_FAILED;
                    return r;
                }
            }
            p += take;
            n -= take;
            if (d->chunk_left == 0) {
                if (d->signed_chunks) {
                    uint8_t h[32];
                    unsigned int hl = 32;
                    char hex[65];
                    EVP_DigestFinal_ex(d->chunk_sha, h, &hl);
                    cn_hex_encode(h, 32, hex);
                    if (!check_chunk(d, hex))
                        return awschunk_fail(d, CN_E_AUTH, CN_S3E_SIGNATURE_DOES_NOT_MATCH);
                }
                d->state = ST_DATA_END;
            }
            break;
        }
        case ST_DONE: return awschunk_fail(d, CN_E_PROTOCOL, CN_S3E_INVALID_REQUEST);
        default: return CN_E_PROTOCOL;
        }
    }
    return CN_OK;
}

cn_err_t cn_awschunk_end(cn_awschunk_t *d)
{
    if (d->state == ST_DONE)
        return CN_OK;
    if (d->state != ST_FAILED)
        return awschunk_fail(d, CN_E_PROTOCOL, CN_S3E_INCOMPLETE_BODY);
    return CN_E_PROTOCOL;
}

const char *cn_awschunk_trailer(const cn_awschunk_t *d, const char *name)
{
    for (size_t i = 0; i < d->n_trailers; i++)
        if (strcasecmp(d->trailer_kv[i].name, name) == 0)
            return d->trailer_kv[i].value;
    return NULL;
}
