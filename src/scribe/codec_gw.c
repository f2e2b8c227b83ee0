/* The gateway preflights' layouts (docs/protocol/scribe-gateway.md,
 * "Wire"): authorize_upload (27) is one repository id
 * (cn_scribe_enc_repo_id_req), authorize_repo_create (28) an optional
 * namespace label; both answer an empty payload.  instance_status (26) is
 * in codec_repo.c with the other repository layouts. */
#include "codec_int.h"

#include <string.h>

cn_err_t cn_scribe_enc_authorize_create_req(cn_buf_t *out, cn_scribe_codec_t c,
                                            const cn_scribe_authorize_create_req_t *q)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, q->has_namespace && !cn_scribe_namespace_ok(q->ns));
    cn_scribe_wr_bool(&w, q->has_namespace);
    if (q->has_namespace)
        cn_scribe_wr_str16(&w, q->ns, CN_SCRIBE_MAX_NAMESPACE);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_authorize_create_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                            cn_scribe_authorize_create_req_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    out->has_namespace = cn_scribe_rd_bool(&r);
    if (out->has_namespace) {
        cn_scribe_rd_str16(&r, CN_SCRIBE_MAX_NAMESPACE, &out->ns);
        if (!r.r.err && !cn_scribe_namespace_ok(out->ns))
            cn__rd_fail(&r);
    }
    return cn_scribe_rd_end(&r);
}

cn_err_t cn_scribe_dec_empty_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c)
{
    (void)p;
    (void)c;
    return n == 0 ? CN_OK : CN_E_PROTOCOL;
}
