/* The public-read and mount operations of the Scribe adapter: get_chunks
 * (30) and repository_mounts (31), docs/protocol/scribe.md 16.  Each
 * decodes its request, calls ONE repos service function and encodes the
 * answer; get_chunks streams exactly as get_objects does.  Never judges a
 * witness itself: the service decides, and an invalid witness is an absent
 * item, never an error frame. */
#include "server_int.h"
#include "cairn/repos_config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cn_err_t op_get_chunks(cn__scribe_call_t *k)
{
    cn_scribe_chunks_req_t q;
    if (cn_scribe_dec_chunks_req(k->payload, k->len, k->sc->codec, &q) < 0)
        return cn__scribe_malformed(k);
    cn_repos_witness_t *w = malloc(q.count * sizeof *w);
    cn_repos_obj_t *objs = malloc(q.count * sizeof *objs);
    cn_err_t err = w && objs ? CN_OK : -ENOMEM;
    for (uint32_t i = 0; i < q.count && err >= 0; i++) {
        cn_scribe_witness_t v;
        cn_scribe_chunks_witness(&q, i, &v);
        w[i].chunk = v.chunk;
        w[i].manifest = v.manifest;
    }
    if (err >= 0) {
        err = cn_repos_get_chunks(k->sc->srv->repos, &k->rq, q.repo.b, w, q.count, objs);
        err = err < 0 ? cn__scribe_fail(k, err) : cn__scribe_send_objects(k, objs, q.count);
    }
    free(w);
    free(objs);
    return err;
}

/* The wire rows of parsed mounts: ids as lowercase hex and revisions as
 * decimal, in text (64 x 54 bytes), the rows borrowing from it. */
typedef struct mount_text {
    char ids[CN_SCRIBE_MAX_MOUNTS][2][33];
    char rev[CN_SCRIBE_MAX_MOUNTS][21];
    cn_scribe_mount_t rows[CN_SCRIBE_MAX_MOUNTS];
} mount_text_t;

static void mount_view(const cn_repo_mount_t *m, mount_text_t *t, uint32_t i)
{
    cn_hex_encode(m->repository, 16, t->ids[i][0]);
    cn_hex_encode(m->branch, 16, t->ids[i][1]);
    t->ids[i][0][32] = t->ids[i][1][32] = 0;
    snprintf(t->rev[i], sizeof t->rev[i], "%" PRIu64, m->revision);
    t->rows[i] = (cn_scribe_mount_t){ cn_scribe_cstr(m->name), cn_scribe_cstr(m->path),
                                      cn_scribe_cstr(t->ids[i][0]), cn_scribe_cstr(t->ids[i][1]),
                                      cn_scribe_cstr(t->rev[i]) };
}

static cn_err_t op_mounts(cn__scribe_call_t *k)
{
    cn_scribe_mounts_req_t q;
    if (cn_scribe_dec_mounts_req(k->payload, k->len, k->sc->codec, &q) < 0)
        return cn__scribe_malformed(k);
    cn_repo_config_t cfg;
    cn_err_t err = cn_repos_mounts(k->sc->srv->repos, &k->rq, q.repo.b, q.branch.b, q.change, &cfg);
    if (err < 0)
        return cn__scribe_fail(k, err);
    mount_text_t *t = calloc(1, sizeof *t);
    if (!t || cfg.nmounts > CN_SCRIBE_MAX_MOUNTS) {
        cn_repo_config_free(&cfg);
        free(t);
        return t ? CN_E_CORRUPT : -ENOMEM; /* the config's own bound is 64 */
    }
    for (uint32_t i = 0; i < cfg.nmounts; i++)
        mount_view(&cfg.mounts[i], t, i);
    cn_buf_reset(&k->sc->out);
    err = cn_scribe_enc_mounts_resp(&k->sc->out, k->sc->codec, t->rows, (uint32_t)cfg.nmounts);
    if (err >= 0)
        err = cn__scribe_reply(k, 0);
    cn_repo_config_free(&cfg);
    free(t);
    return err;
}

cn_err_t cn__scribe_op_public(cn__scribe_call_t *k)
{
    return k->hdr.opcode == CN_SCRIBE_OP_GET_CHUNKS ? op_get_chunks(k) : op_mounts(k);
}
