/* libFuzzer harness: every core request decoder (the server's side).
 * Input: opcode byte, codec byte (1 or 2), then the payload.  Invariants: a
 * decoder never reads outside the payload; every slice lies inside it; an
 * accepted request re-encodes to exactly the input in the same codec (the
 * layouts are canonical, so a decoder/encoder disagreement is a byte
 * difference); an accepted payload is never longer than the opcode's bound. */
#include "fuzz_scribe_common.h"

static cn_scribe_put_item_t items[CN_SCRIBE_MAX_BATCH];
static cn_scribe_objref_t refs[CN_SCRIBE_MAX_BATCH];
static uint64_t changes[CN_SCRIBE_MAX_PAGE];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || (data[1] != 1 && data[1] != 2))
        return 0;
    uint16_t op = data[0];
    cn_scribe_codec_t c = (cn_scribe_codec_t)data[1];
    const uint8_t *p = data + 2, *end = data + size;
    size_t n = size - 2;
    cn_buf_t b = { 0 };
    cn_err_t e = CN_E_PROTOCOL, w = CN_OK;
    switch (op) {
    case CN_SCRIBE_OP_REPO_CREATE: {
        cn_scribe_repo_create_req_t q;
        if (!(e = cn_scribe_dec_repo_create_req(p, n, c, &q))) {
            fz_in(q.name, p, end);
            w = cn_scribe_enc_repo_create_req(&b, c, &q);
        }
        break;
    }
    case CN_SCRIBE_OP_REPO_INFO: {
        cn_scribe_repo_info_req_t q;
        if (!(e = cn_scribe_dec_repo_info_req(p, n, c, &q))) {
            fz_in(q.name, p, end);
            w = cn_scribe_enc_repo_info_req(&b, c, &q);
        }
        break;
    }
    case CN_SCRIBE_OP_REPO_LIST: {
        cn_scribe_repo_list_req_t q;
        if (!(e = cn_scribe_dec_repo_list_req(p, n, c, &q))) {
            fz_in(q.token, p, end);
            w = cn_scribe_enc_repo_list_req(&b, c, &q);
        }
        break;
    }
    case CN_SCRIBE_OP_PUT_OBJECTS: {
        cn_scribe_put_req_t q;
        if (!(e = cn_scribe_dec_put_req(p, n, c, &q))) {
            uint64_t total = 0;
            for (uint32_t i = 0; i < q.count; i++) {
                cn_scribe_put_item(&q, i, &items[i]);
                total += items[i].length;
            }
            if (total != q.total || total > CN_SCRIBE_MAX_BATCH_BYTES)
                abort();
            w = cn_scribe_enc_put_req(&b, c, &q.repo, items, q.count);
        }
        break;
    }
    case CN_SCRIBE_OP_GET_OBJECTS:
    case CN_SCRIBE_OP_PRESENCE:
    case CN_SCRIBE_OP_PIN_OBJECTS: {
        cn_scribe_objs_req_t q;
        if (!(e = cn_scribe_dec_objs_req(p, n, c, op, &q))) {
            for (uint32_t i = 0; i < q.count; i++)
                cn_scribe_objref(&q, i, &refs[i]);
            w = cn_scribe_enc_objs_req(&b, c, op, &q, refs);
        }
        break;
    }
    case CN_SCRIBE_OP_SUBMIT: {
        cn_scribe_submit_req_t q;
        if (!(e = cn_scribe_dec_submit_req(p, n, c, &q))) {
            fz_in(q.author, p, end);
            fz_in(q.message, p, end);
            cn_digest_t fp;
            cn_scribe_submit_fingerprint(&q, &fp);
            w = cn_scribe_enc_submit_req(&b, c, &q);
        }
        break;
    }
    case CN_SCRIBE_OP_OPERATION_OUTCOME: {
        cn_scribe_outcome_req_t q;
        if (!(e = cn_scribe_dec_outcome_req(p, n, c, &q)))
            w = cn_scribe_enc_outcome_req(&b, c, &q);
        break;
    }
    case CN_SCRIBE_OP_TREE_PAGE: {
        cn_scribe_tree_page_req_t q;
        if (!(e = cn_scribe_dec_tree_page_req(p, n, c, &q))) {
            fz_in(q.prefix, p, end);
            fz_in(q.after, p, end);
            w = cn_scribe_enc_tree_page_req(&b, c, &q);
        }
        break;
    }
    case CN_SCRIBE_OP_CHANGED_PATHS: {
        cn_scribe_changed_req_t q;
        if (!(e = cn_scribe_dec_changed_req(p, n, c, &q))) {
            fz_in(q.prefix, p, end);
            fz_in(q.token, p, end);
            w = cn_scribe_enc_changed_req(&b, c, &q);
        }
        break;
    }
    case CN_SCRIBE_OP_LOG: {
        cn_scribe_log_req_t q;
        if (!(e = cn_scribe_dec_log_req(p, n, c, &q))) {
            fz_in(q.path, p, end);
            fz_in(q.after_path, p, end);
            if ((q.all_branches && !q.follow_merges) || (q.has_after_path && !q.has_before))
                abort();
            w = cn_scribe_enc_log_req(&b, c, &q);
        }
        break;
    }
    case CN_SCRIBE_OP_INSTANCE_STATUS: {
        cn_scribe_instance_req_t q;
        if (!(e = cn_scribe_dec_instance_req(p, n, c, &q)))
            w = cn_scribe_enc_instance_req(&b, c, &q);
        break;
    }
    case CN_SCRIBE_OP_REPO_USAGE: {
        cn_scribe_id_t q;
        if (!(e = cn_scribe_dec_repo_id_req(p, n, c, &q)))
            w = cn_scribe_enc_repo_id_req(&b, c, &q);
        break;
    }
    case CN_SCRIBE_OP_DESCRIBE_CHANGE: {
        cn_scribe_describe_req_t q;
        if (!(e = cn_scribe_dec_describe_req(p, n, c, &q))) {
            fz_in(q.author, p, end);
            fz_in(q.text, p, end);
            w = cn_scribe_enc_describe_req(&b, c, &q);
        }
        break;
    }
    case CN_SCRIBE_OP_CHANGE_NOTES: {
        cn_scribe_notes_req_t q;
        if (!(e = cn_scribe_dec_notes_req(p, n, c, &q))) {
            for (uint32_t i = 0; i < q.count; i++)
                changes[i] = cn_scribe_notes_change(&q, i);
            w = cn_scribe_enc_notes_req(&b, c, &q.repo, changes, q.count);
        }
        break;
    }
    case CN_SCRIBE_OP_CHANGE_NOTE_HISTORY: {
        cn_scribe_history_req_t q;
        if (!(e = cn_scribe_dec_history_req(p, n, c, &q)))
            w = cn_scribe_enc_history_req(&b, c, &q);
        break;
    }
    default: return 0;
    }
    if (e == CN_OK) {
        uint32_t bound;
        if (w != CN_OK || !cn_scribe_request_bound(op, false, &bound) || n > bound)
            abort();
        fz_same(&b, p, n);
    } else if (e != CN_E_PROTOCOL) {
        abort();
    }
    cn_buf_free(&b);
    return 0;
}
