/* libFuzzer harness: the blob ops' JSON params (call bodies, the fetch params
 * and the Cairn-Offer header of a put) through the op-table validator of
 * src/http/blobs_ops.c.  Input: one byte choosing the op, then the JSON text.
 * Invariants: every accepted value holds the schema's promises (a valid
 * namespace, counts within their limits, the renewal form's single digest),
 * and an accepted value re-encoded from the decoded params validates again to
 * the same params. */
#include "../src/blobops/blobops_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static json_t *reencode(cn__bh_op_t op, const cn__bh_params_t *p)
{
    json_t *o = json_object();
    json_object_set_new(o, "namespace", json_string(p->ns));
    char hex[CN_DIGEST_HEX_LEN + 1];
    if (p->has_digest) {
        cn_digest_hex(&p->digest, hex);
        json_object_set_new(o, "digest", json_string(hex));
    }
    if (op == CN__BH_HAVE || op == CN__BH_DELETE) {
        json_t *a = json_array();
        for (size_t i = 0; i < p->ndigests; i++) {
            cn_digest_hex(&p->digests[i], hex);
            json_array_append_new(a, json_string(hex));
        }
        json_object_set_new(o, "digests", a);
    }
    if (p->token)
        json_object_set_new(o, "token", json_string(p->token));
    if (p->has_ranges) {
        json_t *a = json_array();
        for (size_t i = 0; i < p->nranges; i++)
            json_array_append_new(
                a, json_pack("[I,I]", (json_int_t)p->ranges[i].off, (json_int_t)p->ranges[i].len));
        json_object_set_new(o, "ranges", a);
    }
    if (p->len >= 0)
        json_object_set_new(o, "len", json_integer(p->len));
    if (p->has_after) {
        cn_digest_hex(&p->after, hex);
        json_object_set_new(o, "after", json_string(hex));
    }
    if (p->limit >= 0)
        json_object_set_new(o, "limit", json_integer(p->limit));
    return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    cn__bh_op_t op = (cn__bh_op_t)(data[0] % CN__BH_NOPS);
    json_error_t jerr;
    json_t *v = json_loadb((const char *)data + 1, size - 1, JSON_REJECT_DUPLICATES, &jerr);
    if (!v)
        return 0;
    cn__bh_params_t p;
    char reason[CN__BH_REASON_MAX], msg[CN__BH_MSG_MAX];
    cn_err_t rc = cn__bh_validate(op, v, &p, reason, msg);
    if (rc == CN_E_INVALID) {
        if (!reason[0] || !memchr(msg, 0, sizeof msg) || p.digests)
            abort();
    } else if (rc == CN_OK) {
        if (!p.ns || !cn_blobs_ns_valid(p.ns, strlen(p.ns)))
            abort();
        if (p.ndigests > CN_BLOBS_HAVE_MAX || p.nranges > CN_BLOBS_RANGES_MAX)
            abort();
        if (op == CN__BH_HAVE && p.token && p.ndigests != 1)
            abort();
        if ((op == CN__BH_STAT || op == CN__BH_SUB) && !p.has_digest)
            abort();
        json_t *again = reencode(op, &p);
        cn__bh_params_t q;
        if (cn__bh_validate(op, again, &q, reason, msg) != CN_OK)
            abort();
        if (strcmp(q.ns, p.ns) || q.ndigests != p.ndigests || q.nranges != p.nranges ||
            q.len != p.len || q.has_digest != p.has_digest || q.limit != p.limit ||
            q.has_after != p.has_after ||
            (p.ndigests && memcmp(q.digests, p.digests, p.ndigests * sizeof *p.digests)) ||
            (p.nranges && memcmp(q.ranges, p.ranges, p.nranges * sizeof *p.ranges)))
            abort();
        cn__bh_params_free(&q);
        json_decref(again);
        cn__bh_params_free(&p);
    } else if (rc != -ENOMEM) {
        abort();
    }
    json_decref(v);
    return 0;
}
