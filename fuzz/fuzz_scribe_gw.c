/* libFuzzer harness: the gateway wire (docs/protocol/scribe-gateway.md,
 * "Wire"), both sides, and the name resolver.  Input: opcode byte, codec
 * byte (1 or 2), side byte (0 request, 1 response), then the payload;
 * opcode 0 is the names mode: the payload is a wire name and a command
 * line's REPO at once.  Invariants: no read outside the payload; every
 * slice inside it; an accepted payload re-encodes to exactly the input (every
 * layout is canonical); an accepted request is never longer than its
 * opcode's bound; inventory rows come out strictly ascending and exactly
 * count of them; a split name puts back together into its input and both
 * halves pass their grammar. */
#include "fuzz_scribe_common.h"

static cn_scribe_instance_row_t rows[CN_SCRIBE_MAX_INSTANCE_PAGE];
static cn_scribe_str_t labels[CN_SCRIBE_MAX_STORAGE_SERVERS];

static cn_err_t request(uint16_t op, cn_scribe_codec_t c, const uint8_t *p, size_t n, cn_buf_t *b)
{
    cn_err_t e = CN_E_PROTOCOL, w = CN_OK;
    if (op == CN_SCRIBE_OP_INSTANCE_STATUS) {
        cn_scribe_instance_req_t q;
        if (!(e = cn_scribe_dec_instance_req(p, n, c, &q)))
            w = cn_scribe_enc_instance_req(b, c, &q);
    } else if (op == CN_SCRIBE_OP_AUTHORIZE_UPLOAD) {
        cn_scribe_id_t id;
        if (!(e = cn_scribe_dec_repo_id_req(p, n, c, &id)))
            w = cn_scribe_enc_repo_id_req(b, c, &id);
    } else if (op == CN_SCRIBE_OP_AUTHORIZE_REPO_CREATE) {
        cn_scribe_authorize_create_req_t q;
        if (!(e = cn_scribe_dec_authorize_create_req(p, n, c, &q))) {
            fz_in(q.ns, p, p + n);
            if (q.has_namespace != cn_scribe_namespace_ok(q.ns))
                fz_fail();
            w = cn_scribe_enc_authorize_create_req(b, c, &q);
        }
    }
    return fz_request_done(op, e, w, n);
}

static cn_err_t instance_resp(cn_scribe_codec_t c, const uint8_t *p, size_t n, cn_buf_t *b)
{
    cn_scribe_instance_resp_t h;
    cn_err_t e = cn_scribe_dec_instance_resp(p, n, c, &h);
    if (e)
        return e;
    uint32_t k = 0;
    while (k < CN_SCRIBE_MAX_INSTANCE_PAGE && cn_scribe_next_instance_row(&h.rows, &rows[k])) {
        fz_in(rows[k].info.name, p, p + n);
        if (k && memcmp(rows[k - 1].info.id.b, rows[k].info.id.b, 16) >= 0)
            fz_fail();
        k++;
    }
    if (k != h.count)
        fz_fail();
    return fz_response_done(e, cn_scribe_enc_instance_resp(b, c, &h, rows));
}

static cn_err_t response(uint16_t op, cn_scribe_codec_t c, const uint8_t *p, size_t n, cn_buf_t *b)
{
    if (op == CN_SCRIBE_OP_INSTANCE_STATUS)
        return instance_resp(c, p, n, b);
    if (op == CN_SCRIBE_OP_AUTHORIZE_UPLOAD || op == CN_SCRIBE_OP_AUTHORIZE_REPO_CREATE)
        return cn_scribe_dec_empty_resp(p, n, c); /* accepted only empty: re-encodes to "" */
    if (op != CN_SCRIBE_OP_DISCOVER)
        return CN_E_PROTOCOL;
    cn_scribe_discover_t d;
    cn_err_t e = cn_scribe_dec_discover(p, n, c, &d);
    if (e)
        return e;
    for (uint32_t i = 0; i < d.count; i++) {
        labels[i] = cn_scribe_discover_label(&d, c, i);
        fz_in(labels[i], p, p + n);
        if (d.authentication != cn_scribe_namespace_ok(labels[i]))
            fz_fail();
    }
    return fz_response_done(
        e, cn_scribe_enc_discover(b, c, d.role, d.authentication, labels, d.count));
}

/* The names mode: whatever the resolver accepts splits back into its input. */
static void names(const uint8_t *p, size_t n)
{
    if (n > 1024)
        return;
    cn_scribe_str_t s = { p, (uint32_t)n };
    cn_scribe_name_t nm;
    if (cn_scribe_name_split(s, &nm) == CN_OK) {
        fz_in(nm.ns, p, p + n);
        fz_in(nm.name, p, p + n);
        if (!cn_scribe_storage_name_ok(nm.name) || (nm.ns.len && !cn_scribe_namespace_ok(nm.ns)) ||
            nm.ns.len + (nm.ns.len ? 1u : 0u) + nm.name.len != n ||
            nm.name.p + nm.name.len != p + n || n > CN_SCRIBE_MAX_REPO_NAME)
            fz_fail();
    }
    cn_scribe_repo_ref_t r;
    if (cn_scribe_repo_ref_parse(s, &r) == CN_OK) {
        fz_in(r.endpoint, p, p + n);
        fz_in(r.wire, p, p + n);
        if (r.wire.p + r.wire.len != p + n || (r.has_endpoint && !r.endpoint.len) ||
            (!r.has_endpoint && r.wire.len != n) || cn_scribe_name_split(r.wire, &nm) != CN_OK)
            fz_fail();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size >= 3 && data[0] == 0) {
        names(data + 3, size - 3);
        return 0;
    }
    return fz_sided(data, size, request, response);
}
