/* libFuzzer harness: the public-read and mount decoders (opcodes 30, 31),
 * both sides.  Input: opcode byte, codec byte (1 or 2), side byte (0
 * request, 1 response), then the payload.  Invariants: no read outside the
 * payload; every slice inside it; the mount iterator yields exactly its
 * count and every row it yields passes the grammar helpers; an accepted
 * payload re-encodes to exactly the input (every layout is canonical); an
 * accepted request is never longer than its opcode's bound. */
#include "fuzz_scribe_common.h"

static cn_scribe_witness_t witnesses[CN_SCRIBE_MAX_WITNESSES];
static cn_scribe_mount_t mounts[CN_SCRIBE_MAX_MOUNTS];

static cn_err_t request(uint16_t op, cn_scribe_codec_t c, const uint8_t *p, size_t n, cn_buf_t *b)
{
    cn_err_t e = CN_E_PROTOCOL, w = CN_OK;
    if (op == CN_SCRIBE_OP_GET_CHUNKS) {
        cn_scribe_chunks_req_t q;
        if (!(e = cn_scribe_dec_chunks_req(p, n, c, &q))) {
            if (q.count < 1 || q.count > CN_SCRIBE_MAX_WITNESSES || q.items < p ||
                q.items + (size_t)q.count * 64 > p + n)
                fz_fail();
            for (uint32_t i = 0; i < q.count; i++)
                cn_scribe_chunks_witness(&q, i, &witnesses[i]);
            w = cn_scribe_enc_chunks_req(b, c, &q.repo, witnesses, q.count);
        }
    } else if (op == CN_SCRIBE_OP_REPOSITORY_MOUNTS) {
        cn_scribe_mounts_req_t q;
        if (!(e = cn_scribe_dec_mounts_req(p, n, c, &q)))
            w = cn_scribe_enc_mounts_req(b, c, &q);
    }
    return fz_request_done(op, e, w, n);
}

static cn_err_t response(uint16_t op, cn_scribe_codec_t c, const uint8_t *p, size_t n, cn_buf_t *b)
{
    const uint8_t *end = p + n;
    cn_err_t e = CN_E_PROTOCOL, w = CN_OK;
    if (op == CN_SCRIBE_OP_GET_CHUNKS) {
        uint32_t count;
        if (!(e = cn_scribe_dec_count_resp(p, n, c, &count)))
            w = cn_scribe_enc_count_resp(b, c, count);
    } else if (op == CN_SCRIBE_OP_REPOSITORY_MOUNTS) {
        cn_scribe_rows_t it;
        uint32_t count = 0, k = 0;
        if (!(e = cn_scribe_dec_mounts_resp(p, n, c, &it, &count))) {
            uint8_t id[16];
            uint64_t rev;
            while (k < CN_SCRIBE_MAX_MOUNTS && cn_scribe_next_mount(&it, &mounts[k])) {
                cn_scribe_mount_t *m = &mounts[k++];
                fz_in(m->name, p, end);
                fz_in(m->path, p, end);
                fz_in(m->repository, p, end);
                fz_in(m->branch, p, end);
                fz_in(m->revision, p, end);
                if (!cn_scribe_mount_id(m->repository, id) || !cn_scribe_mount_id(m->branch, id) ||
                    !cn_scribe_mount_revision(m->revision, &rev))
                    fz_fail();
            }
            if (k != count)
                fz_fail();
            w = cn_scribe_enc_mounts_resp(b, c, mounts, count);
        }
    }
    return fz_response_done(e, w);
}

FZ_SIDED_HARNESS(request, response)
