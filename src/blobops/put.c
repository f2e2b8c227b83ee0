/* blobs/put on the HTTP listener: the offer {namespace, digest?, len?} as
 * JSON in the request header Cairn-Offer, the bytes as the body (a known
 * Content-Length, or chunked when the length is unknown).  Bytes stream into
 * the service as they arrive; nothing is committed before the framework has
 * verified every byte of the body (its signature or payload hash) and the
 * service has verified the canonical digest.  The answer is {token, digest}.
 */
#include "blobops_int.h"
#include "cairn/util.h"

#include <stdlib.h>
#include <string.h>

int cn__bh_put_request(cn_http_req_t *r, cn__bh_req_t *q)
{
    const char *offer = cn_http_req_header(r, "Cairn-Offer");
    if (!offer) {
        cn__bh_error(r, 400, "invalid_params", "missing_offer",
                     "blobs/put needs its offer in the Cairn-Offer header");
        return 0;
    }
    size_t olen = strnlen(offer, CN__BH_OFFER_MAX + 1);
    if (olen > CN__BH_OFFER_MAX) {
        cn__bh_error(r, 400, "invalid_params", "offer_too_large",
                     "the Cairn-Offer header exceeds %u bytes", CN__BH_OFFER_MAX);
        return 0;
    }
    json_error_t jerr;
    q->json = json_loadb(offer, olen, JSON_REJECT_DUPLICATES, &jerr);
    if (!q->json) {
        cn__bh_error(r, 400, "invalid_params", "malformed_json", "Cairn-Offer: %s at column %d",
                     jerr.text, jerr.column);
        return 0;
    }
    cn__bh_params_t *p = &q->params;
    if (cn__bh_params(r, CN__BH_PUT, q->json, p) < 0)
        return 0;
    int64_t body_len = cn_http_req_payload_length(r);
    if (body_len < 0 && cn_http_req_content_length(r) < 0 &&
        !cn_http_req_header(r, "Transfer-Encoding"))
        body_len = 0; /* no body at all: the empty blob */
    if (p->len >= 0 && body_len >= 0 && p->len != body_len) {
        cn__bh_error(r, 400, "verification_failed", "length_mismatch",
                     "the offer says %lld bytes, the body has %lld", (long long)p->len,
                     (long long)body_len);
        return 0;
    }
    cn_blobs_caller_t c;
    cn__bh_caller(q, &c);
    char hex[CN_DIGEST_HEX_LEN + 1];
    cn_digest_hex(&p->digest, hex);
    cn_err_t rc = cn_blobs_put_begin(q->h->b, &c, p->ns, p->has_digest ? &p->digest : NULL,
                                     p->len >= 0 ? p->len : body_len, &q->put);
    if (rc < 0)
        cn__bh_error_cn(r, rc, &c, "blob_missing", p->has_digest ? hex : NULL);
    return 0;
}

int cn__bh_put_body(cn_http_req_t *r, cn__bh_req_t *q, const uint8_t *p, size_t n)
{
    if (!q->put)
        return 0;
    cn_err_t rc = cn_blobs_put_write(q->put, p, n);
    if (rc < 0) {
        /* Answer now; the framework drains (or closes) the rest. */
        cn_blobs_put_abort(q->put);
        q->put = NULL;
        cn__bh_error_cn(r, rc, NULL, "blob_missing", NULL);
    }
    return 0;
}

void cn__bh_put_end(cn_http_req_t *r, cn__bh_req_t *q)
{
    if (!q->put)
        return;
    cn_blobs_put_t *put = q->put;
    q->put = NULL;
    if (cn_http_req_body_error(r) != CN_S3E_NONE) {
        cn_blobs_put_abort(put); /* unverified bytes: the framework answers */
        return;
    }
    cn_blobs_put_result_t res;
    cn_err_t rc = cn_blobs_put_commit(put, &res);
    if (rc < 0) {
        cn__bh_error_cn(r, rc, NULL, "blob_missing", NULL);
        return;
    }
    char hex[CN_DIGEST_HEX_LEN + 1];
    cn_digest_hex(&res.digest, hex);
    cn__bh_json(r, json_pack("{s:s,s:s}", "token", res.token, "digest", hex));
}
