/* The lock operations: lock_acquire (14), lock_release (16), lock_list (17)
 * and lock_policy (29)
 * (docs/protocol/scribe.md 7.10).  Each decodes its payload, calls one repos
 * service function and encodes the answer; the locks themselves, and every
 * rule about them, are the service's. */
#include "server_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Rows per lock_list page: 1,024 maximal rows (8 KiB paths) stay under the
 * 16 MiB reply bound. */
#define LOCK_PAGE_MAX 1024

/* The decoded path list of q as service path views (*out: free()). */
static cn_err_t path_views(cn_scribe_lock_req_t *q, cn_repos_pathv_t **out)
{
    cn_repos_pathv_t *v = calloc(q->count, sizeof *v);
    if (!v)
        return -ENOMEM;
    cn_scribe_str_t s;
    for (uint32_t i = 0; i < q->count && cn_scribe_next_path(&q->paths, &s); i++)
        v[i] = (cn_repos_pathv_t){ s.p, s.len };
    *out = v;
    return CN_OK;
}

static cn_err_t op_lock_edit(cn__scribe_call_t *k)
{
    cn_scribe_lock_req_t q;
    if (cn_scribe_dec_lock_req(k->payload, k->len, k->sc->codec, k->hdr.opcode, &q) < 0)
        return cn__scribe_malformed(k);
    cn_repos_pathv_t *v = NULL;
    CN_TRY(path_views(&q, &v));
    uint32_t changed = 0;
    cn_repos_t *r = k->sc->srv->repos;
    cn_err_t err = k->hdr.opcode == CN_SCRIBE_OP_LOCK_ACQUIRE
                       ? cn_repos_lock_acquire(r, &k->rq, q.repo.b, q.workspace.b, q.branch.b, v,
                                               q.count, &changed)
                       : cn_repos_lock_release(r, &k->rq, q.repo.b, q.workspace.b, q.force, v,
                                               q.count, &changed);
    free(v);
    if (err < 0)
        return cn__scribe_fail(k, err);
    cn_buf_reset(&k->sc->out);
    CN_TRY(cn_scribe_enc_u32_resp(&k->sc->out, k->sc->codec, changed));
    return cn__scribe_reply(k, 0);
}

/* A page of lock rows copied out of the service's callbacks. */
typedef struct lock_acc {
    cn_scribe_lock_row_t *rows;
    uint32_t n;
} lock_acc_t;

static cn_err_t lock_row(void *ctx, const cn_repos_lock_t *l)
{
    lock_acc_t *a = ctx;
    size_t pn = strlen(l->principal);
    uint8_t *copy = malloc(l->path_len + pn + 1);
    if (!copy)
        return -ENOMEM;
    memcpy(copy, l->path, l->path_len);
    memcpy(copy + l->path_len, l->principal, pn);
    cn_scribe_lock_row_t *row = &a->rows[a->n++];
    row->path = (cn_scribe_str_t){ copy, (uint32_t)l->path_len };
    row->principal = (cn_scribe_str_t){ copy + l->path_len, (uint32_t)pn };
    memcpy(row->workspace.b, l->workspace, 16);
    memcpy(row->branch.b, l->branch, 16);
    row->since_ms = (uint64_t)l->since_ms;
    return CN_OK;
}

static cn_err_t op_lock_list(cn__scribe_call_t *k)
{
    cn_scribe_lock_list_req_t q;
    if (cn_scribe_dec_lock_list_req(k->payload, k->len, k->sc->codec, &q) < 0)
        return cn__scribe_malformed(k);
    uint32_t limit = q.limit == 0 ? 1 : q.limit > LOCK_PAGE_MAX ? LOCK_PAGE_MAX : q.limit;
    lock_acc_t a = { calloc(limit, sizeof *a.rows), 0 };
    if (!a.rows)
        return -ENOMEM;
    bool more = false;
    cn_err_t err =
        cn_repos_lock_list(k->sc->srv->repos, &k->rq, q.repo.b, q.prefix.p, q.prefix.len,
                           q.has_owner ? q.owner.b : NULL, q.has_after ? q.after.p : NULL,
                           q.after.len, limit, lock_row, &a, &more);
    if (err < 0) {
        err = cn__scribe_fail(k, err);
    } else {
        cn_buf_reset(&k->sc->out);
        err = cn_scribe_enc_lock_list_resp(&k->sc->out, k->sc->codec, a.rows, a.n, more);
        if (err >= 0)
            err = cn__scribe_reply(k, 0);
    }
    for (uint32_t i = 0; i < a.n; i++)
        free((void *)a.rows[i].path.p);
    free(a.rows);
    return err;
}

static cn_err_t op_lock_policy(cn__scribe_call_t *k)
{
    cn_scribe_id_t repo;
    if (cn_scribe_dec_repo_id_req(k->payload, k->len, k->sc->codec, &repo) < 0)
        return cn__scribe_malformed(k);
    uint8_t *text = malloc(CN_SCRIBE_MAX_CONFIG);
    if (!text)
        return -ENOMEM;
    uint64_t change = 0;
    size_t len = 0;
    cn_err_t err = cn_repos_lock_policy(k->sc->srv->repos, &k->rq, repo.b, &change, text, &len);
    if (err < 0) {
        err = cn__scribe_fail(k, err);
    } else {
        cn_buf_reset(&k->sc->out);
        err = cn_scribe_enc_lock_policy_resp(&k->sc->out, k->sc->codec, change,
                                             (cn_scribe_str_t){ text, (uint32_t)len });
        /* a stored text that is not UTF-8 was never an accepted config */
        err = err < 0
                  ? cn__scribe_fail_code(k, CN_SCRIBE_E_CORRUPT, "the stored config is not UTF-8")
                  : cn__scribe_reply(k, 0);
    }
    free(text);
    return err;
}

cn_err_t cn__scribe_op_lock(cn__scribe_call_t *k)
{
    switch (k->hdr.opcode) {
    case CN_SCRIBE_OP_LOCK_ACQUIRE:
    case CN_SCRIBE_OP_LOCK_RELEASE: return op_lock_edit(k);
    case CN_SCRIBE_OP_LOCK_POLICY: return op_lock_policy(k);
    default: return op_lock_list(k);
    }
}
