/* The public-read and mount layouts: get_chunks (30) and
 * repository_mounts (31), docs/protocol/scribe.md 16.  Pure codec: every
 * count is checked against its bound and the bytes that remain before
 * anything is read, every field of a mount row against its grammar, and
 * nothing is allocated.  get_chunks answers with get_objects' reply
 * (cn_scribe_enc_count_resp and the streamed items), so it has no reply
 * layout of its own here. */
#include "codec_int.h"

#include <string.h>

#define WITNESS_LEN 64 /* [32] chunk | [32] manifest */
#define MOUNT_ROW_MIN (2 * 5 + 1 + 1 + 32 + 32 + 1)
#define ID_HEX 32
#define REVISION_MAX 20

cn_err_t cn_scribe_enc_chunks_req(cn_buf_t *out, cn_scribe_codec_t c, const cn_scribe_id_t *repo,
                                  const cn_scribe_witness_t *wit, uint32_t count)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, count < 1 || count > CN_SCRIBE_MAX_WITNESSES);
    cn_scribe_wr_raw(&w, repo->b, 16);
    cn_scribe_wr_u32(&w, count);
    for (uint32_t i = 0; i < count && !w.err; i++) {
        cn_scribe_wr_raw(&w, wit[i].chunk.b, CN_DIGEST_LEN);
        cn_scribe_wr_raw(&w, wit[i].manifest.b, CN_DIGEST_LEN);
    }
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_chunks_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                  cn_scribe_chunks_req_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    cn_scribe_rd_id(&r, &out->repo);
    out->count = cn_scribe_rd_u32(&r);
    if (!r.r.err && (out->count < 1 || out->count > CN_SCRIBE_MAX_WITNESSES))
        cn__rd_fail(&r);
    if (cn_scribe_rd_fits(&r, out->count, WITNESS_LEN)) {
        out->items = cn_rd_bytes(&r.r, (size_t)out->count * WITNESS_LEN);
    }
    return cn_scribe_rd_end(&r);
}

void cn_scribe_chunks_witness(const cn_scribe_chunks_req_t *q, uint32_t i, cn_scribe_witness_t *out)
{
    memcpy(out->chunk.b, q->items + (size_t)i * WITNESS_LEN, CN_DIGEST_LEN);
    memcpy(out->manifest.b, q->items + (size_t)i * WITNESS_LEN + CN_DIGEST_LEN, CN_DIGEST_LEN);
}

cn_err_t cn_scribe_enc_mounts_req(cn_buf_t *out, cn_scribe_codec_t c,
                                  const cn_scribe_mounts_req_t *q)
{
    CN__ENC_BEGIN(out, c);
    cn_scribe_wr_raw(&w, q->repo.b, 16);
    cn_scribe_wr_raw(&w, q->branch.b, 16);
    cn_scribe_wr_u64(&w, q->change);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_mounts_req(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                  cn_scribe_mounts_req_t *out)
{
    memset(out, 0, sizeof *out);
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    cn_scribe_rd_id(&r, &out->repo);
    cn_scribe_rd_id(&r, &out->branch);
    out->change = cn_scribe_rd_u64(&r);
    return cn_scribe_rd_end(&r);
}

/* ---- mount rows ------------------------------------------------------------------------ */
bool cn_scribe_mount_id(cn_scribe_str_t hex, uint8_t out[16])
{
    if (hex.len != ID_HEX)
        return false;
    for (uint32_t i = 0; i < ID_HEX; i++) {
        uint8_t h = hex.p[i];
        int v = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : -1;
        if (v < 0)
            return false;
        out[i / 2] = (uint8_t)(i % 2 ? out[i / 2] | v : v << 4);
    }
    return true;
}

bool cn_scribe_mount_revision(cn_scribe_str_t dec, uint64_t *out)
{
    if (dec.len == 0 || dec.len > REVISION_MAX || (dec.p[0] == '0' && dec.len > 1))
        return false;
    uint64_t v = 0;
    for (uint32_t i = 0; i < dec.len; i++) {
        if (dec.p[i] < '0' || dec.p[i] > '9')
            return false;
        unsigned d = (unsigned)(dec.p[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

/* Every field of one row against its grammar. */
static bool mount_ok(const cn_scribe_mount_t *m)
{
    uint8_t id[16];
    uint64_t rev;
    return m->name.len >= 1 && m->name.len <= CN_SCRIBE_MAX_MOUNT_NAME &&
           cn_repos_path_check(m->path.p, m->path.len) == CN_OK &&
           cn_scribe_mount_id(m->repository, id) && cn_scribe_mount_id(m->branch, id) &&
           cn_scribe_mount_revision(m->revision, &rev);
}

static int bytes_cmp(cn_scribe_str_t a, cn_scribe_str_t b)
{
    int d = a.len && b.len ? memcmp(a.p, b.p, a.len < b.len ? a.len : b.len) : 0;
    return d ? d : (a.len > b.len) - (a.len < b.len);
}

/* Row i after rows[0..i): its name strictly after the previous one, its
 * path unlike every earlier path (at most 64 rows: quadratic is fine). */
static bool mount_fits(const cn_scribe_mount_t *rows, uint32_t i)
{
    if (i > 0 && bytes_cmp(rows[i - 1].name, rows[i].name) >= 0)
        return false;
    for (uint32_t j = 0; j < i; j++)
        if (bytes_cmp(rows[j].path, rows[i].path) == 0)
            return false;
    return true;
}

static void wr_mount(cn_scribe_wr_t *w, const cn_scribe_mount_t *m)
{
    cn_scribe_wr_str16(w, m->name, CN_SCRIBE_MAX_MOUNT_NAME);
    cn__wr_path(w, m->path, false);
    cn_scribe_wr_str16(w, m->repository, ID_HEX);
    cn_scribe_wr_str16(w, m->branch, ID_HEX);
    cn_scribe_wr_str16(w, m->revision, REVISION_MAX);
}

static void rd_mount(cn_scribe_rd_t *r, cn_scribe_mount_t *out)
{
    cn_scribe_rd_str16(r, CN_SCRIBE_MAX_MOUNT_NAME, &out->name);
    cn__rd_path(r, false, &out->path);
    cn_scribe_rd_str16(r, ID_HEX, &out->repository);
    cn_scribe_rd_str16(r, ID_HEX, &out->branch);
    cn_scribe_rd_str16(r, REVISION_MAX, &out->revision);
}

cn_err_t cn_scribe_enc_mounts_resp(cn_buf_t *out, cn_scribe_codec_t c,
                                   const cn_scribe_mount_t *rows, uint32_t count)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, count > CN_SCRIBE_MAX_MOUNTS);
    cn_scribe_wr_u32(&w, count);
    for (uint32_t i = 0; i < count && !w.err; i++) {
        CN__FAIL_IF(&w, !mount_ok(&rows[i]) || !mount_fits(rows, i));
        wr_mount(&w, &rows[i]);
    }
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_mounts_resp(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                                   cn_scribe_rows_t *rows, uint32_t *count)
{
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    *count = cn_scribe_rd_u32(&r);
    if (!r.r.err && *count > CN_SCRIBE_MAX_MOUNTS)
        cn__rd_fail(&r);
    cn_scribe_rd_fits(&r, *count, MOUNT_ROW_MIN);
    rows->rd = r;
    rows->left = r.r.err ? 0 : *count;
    cn_scribe_mount_t seen[CN_SCRIBE_MAX_MOUNTS];
    for (uint32_t i = 0; i < *count && !r.r.err; i++) {
        rd_mount(&r, &seen[i]);
        if (!r.r.err && (!mount_ok(&seen[i]) || !mount_fits(seen, i)))
            cn__rd_fail(&r);
    }
    return cn_scribe_rd_end(&r);
}

bool cn_scribe_next_mount(cn_scribe_rows_t *it, cn_scribe_mount_t *out)
{
    if (it->left == 0)
        return false;
    it->left--;
    rd_mount(&it->rd, out);
    return !it->rd.r.err;
}
