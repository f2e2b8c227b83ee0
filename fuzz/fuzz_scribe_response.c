/* libFuzzer harness: every core response decoder (the client's side).
 * Input: opcode byte, codec byte (1 or 2), flags byte (bit0: error payload;
 * bit1: all-branch log layout), then the payload.  Invariants: no read
 * outside the payload; every slice inside it; row iterators yield exactly
 * their count; simple layouts re-encode to the input. */
#include "fuzz_scribe_common.h"

static void walk_fail(void)
{
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3 || (data[1] != 1 && data[1] != 2))
        return 0;
    uint16_t op = data[0];
    cn_scribe_codec_t c = (cn_scribe_codec_t)data[1];
    uint8_t fl = data[2];
    const uint8_t *p = data + 3, *end = data + size;
    size_t n = size - 3;
    cn_buf_t b = { 0 };
    uint32_t k = 0;
    if (fl & 1) {
        cn_scribe_error_t er;
        if (cn_scribe_dec_error(p, n, c, &er) == CN_OK) {
            fz_in(er.message, p, end);
            if (er.code == 0 || cn_scribe_enc_error(&b, c, er.code, er.message) != CN_OK)
                abort();
            fz_same(&b, p, n);
        }
        cn_buf_free(&b);
        return 0;
    }
    switch (op) {
    case CN_SCRIBE_OP_DISCOVER: {
        cn_scribe_discover_t d;
        if (cn_scribe_dec_discover(p, n, c, &d) == CN_OK)
            for (uint32_t i = 0; i < d.count; i++)
                fz_in(cn_scribe_discover_label(&d, c, i), p, end);
        break;
    }
    case CN_SCRIBE_OP_REPO_CREATE:
    case CN_SCRIBE_OP_REPO_INFO: {
        cn_scribe_repo_info_t ri;
        if (cn_scribe_dec_repo_info_resp(p, n, c, &ri) == CN_OK) {
            fz_in(ri.name, p, end);
            if (cn_scribe_enc_repo_info_resp(&b, c, &ri))
                walk_fail();
            fz_same(&b, p, n);
        }
        break;
    }
    case CN_SCRIBE_OP_REPO_LIST: {
        cn_scribe_repo_list_resp_t r;
        cn_scribe_repo_info_t ri;
        if (cn_scribe_dec_repo_list_resp(p, n, c, &r) == CN_OK) {
            for (k = 0; cn_scribe_next_repo_info(&r.rows, &ri); k++)
                fz_in(ri.name, p, end);
            if (k != r.count)
                walk_fail();
        }
        break;
    }
    case CN_SCRIBE_OP_INSTANCE_STATUS: {
        cn_scribe_instance_resp_t r;
        cn_scribe_instance_row_t row;
        if (cn_scribe_dec_instance_resp(p, n, c, &r) == CN_OK) {
            for (k = 0; cn_scribe_next_instance_row(&r.rows, &row); k++)
                fz_in(row.info.name, p, end);
            if (k != r.count)
                walk_fail();
        }
        break;
    }
    case CN_SCRIBE_OP_REPO_USAGE: {
        uint64_t v;
        if (cn_scribe_dec_u64_resp(p, n, c, &v) == CN_OK && n != 8)
            walk_fail();
        break;
    }
    case CN_SCRIBE_OP_PUT_OBJECTS: {
        const uint8_t *st;
        if (cn_scribe_dec_put_resp(p, n, c, &k, &st) == CN_OK && (st < p || st + k > end))
            walk_fail();
        break;
    }
    case CN_SCRIBE_OP_GET_OBJECTS: {
        cn_scribe_get_item_t it;
        if (cn_scribe_dec_count_resp(p, n, c, &k) == CN_OK && (k < 1 || k > CN_SCRIBE_MAX_BATCH))
            walk_fail();
        long r = cn_scribe_dec_get_item(p, n, c, &it);
        if (r > 0 && (size_t)r > n)
            walk_fail();
        break;
    }
    case CN_SCRIBE_OP_PRESENCE:
    case CN_SCRIBE_OP_PIN_OBJECTS: {
        const uint8_t *bits;
        uint32_t want =
            n >= 4 ? (c == CN_SCRIBE_CODEC_BE ? cn_load_u32be(p)
                                              : (uint32_t)p[0] | (uint32_t)p[1] << 8 |
                                                    (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24)
                   : 0;
        if (cn_scribe_dec_bits_resp(p, n, c, want, &bits) == CN_OK && bits + (want + 7) / 8 > end)
            walk_fail();
        break;
    }
    case CN_SCRIBE_OP_SUBMIT:
    case CN_SCRIBE_OP_OPERATION_OUTCOME: {
        cn_scribe_outcome_resp_t o;
        cn_scribe_submit_outcome_t *so = &o.submit;
        cn_err_t e = op == CN_SCRIBE_OP_SUBMIT ? cn_scribe_dec_submit_resp(p, n, c, so)
                                               : cn_scribe_dec_outcome_resp(p, n, c, &o);
        if (e == CN_OK && (op == CN_SCRIBE_OP_SUBMIT || o.kind == 1)) {
            fz_in(so->detail, p, end);
            for (uint32_t i = 0; i < so->path_count; i++)
                fz_in(cn_scribe_outcome_path(so, c, i), p, end);
        }
        break;
    }
    case CN_SCRIBE_OP_TREE_PAGE: {
        cn_scribe_tree_page_resp_t r;
        cn_scribe_tree_entry_t te;
        if (cn_scribe_dec_tree_page_resp(p, n, c, &r) == CN_OK) {
            for (k = 0; cn_scribe_next_tree_entry(&r.rows, &te); k++)
                fz_in(te.path, p, end);
            if (k != r.count)
                walk_fail();
        }
        break;
    }
    case CN_SCRIBE_OP_CHANGED_PATHS: {
        cn_scribe_changed_resp_t r;
        cn_scribe_changed_row_t row;
        if (cn_scribe_dec_changed_resp(p, n, c, &r) == CN_OK) {
            for (k = 0; cn_scribe_next_changed_row(&r.rows, &row); k++)
                fz_in(row.path, p, end);
            if (k != r.count)
                walk_fail();
            fz_in(r.token, p, end);
        }
        break;
    }
    case CN_SCRIBE_OP_LOG: {
        bool all = fl & 2;
        cn_scribe_log_resp_t r;
        cn_scribe_log_row_t row;
        if (cn_scribe_dec_log_resp(p, n, c, all, &r) == CN_OK) {
            for (k = 0; cn_scribe_next_log_row(&r.rows, all, &row); k++) {
                fz_in(row.path, p, end);
                fz_in(row.from_path, p, end);
                fz_in(row.author, p, end);
                fz_in(row.message, p, end);
                fz_in(row.branch_name, p, end);
            }
            if (k != r.count)
                walk_fail();
        }
        break;
    }
    case CN_SCRIBE_OP_DESCRIBE_CHANGE: {
        cn_scribe_note_t nt;
        if (cn_scribe_dec_note_resp(p, n, c, &nt) == CN_OK) {
            fz_in(nt.author, p, end);
            fz_in(nt.text, p, end);
            if (cn_scribe_enc_note_resp(&b, c, &nt))
                walk_fail();
            fz_same(&b, p, n);
        }
        break;
    }
    case CN_SCRIBE_OP_CHANGE_NOTES: {
        cn_scribe_rows_t rows;
        bool present;
        cn_scribe_note_t nt;
        if (cn_scribe_dec_notes_resp(p, n, c, &rows, &k) == CN_OK) {
            uint32_t got = 0;
            while (cn_scribe_next_note_opt(&rows, &present, &nt)) {
                got++;
                fz_in(nt.text, p, end);
            }
            if (got != k)
                walk_fail();
        }
        break;
    }
    case CN_SCRIBE_OP_CHANGE_NOTE_HISTORY: {
        cn_scribe_rows_t rows;
        bool more;
        cn_scribe_note_t nt;
        if (cn_scribe_dec_history_resp(p, n, c, &rows, &k, &more) == CN_OK) {
            uint32_t got = 0;
            while (cn_scribe_next_note(&rows, &nt)) {
                got++;
                fz_in(nt.text, p, end);
            }
            if (got != k)
                walk_fail();
        }
        break;
    }
    default: break;
    }
    cn_buf_free(&b);
    return 0;
}
