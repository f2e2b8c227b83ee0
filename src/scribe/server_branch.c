/* The Scribe branch operations (docs/protocol/scribe.md 7.8): branch_list
 * (20), branch_mutate (21), branch_info (22) and branch_outcome (23).  Each
 * decodes its payload, calls ONE repos service function and encodes the
 * answer; the Branch outcome view is shared with operation_outcome (10). */
#include "server_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A view of b (its strings borrowed from b). */
void cn__scribe_branch_view(const cn_repos_branch_t *b, cn_scribe_branch_info_t *v)
{
    memset(v, 0, sizeof *v);
    memcpy(v->id.b, b->id, 16);
    v->name = cn_scribe_cstr(b->name);
    v->head = b->head;
    v->has_origin = b->has_origin;
    memcpy(v->origin_branch.b, b->origin, 16);
    v->origin_change = b->origin_change;
    v->created_ms = (uint64_t)b->created_ms;
}

void cn__scribe_branch_outcome_view(const cn_repos_branch_outcome_t *o,
                                    cn_scribe_branch_outcome_t *v)
{
    memset(v, 0, sizeof *v);
    memcpy(v->operation.b, o->operation, 16);
    v->outcome = o->outcome;
    if (o->outcome == CN_REPOS_ACCEPTED) {
        cn__scribe_branch_view(&o->branch, &v->branch);
        return;
    }
    v->code = cn__scribe_detail_code(o->code);
    v->detail = cn_scribe_cstr(o->detail);
}

/* ---- branch_list (20) --------------------------------------------------------------- */
typedef struct {
    cn_repos_branch_t *rows;
    uint32_t n, cap;
} list_acc_t;

static cn_err_t list_row(void *ctx, const cn_repos_branch_t *b)
{
    list_acc_t *a = ctx;
    if (a->n == a->cap)
        return CN_E_LIMIT;
    a->rows[a->n++] = *b;
    return 0;
}

static cn_err_t op_branch_list(cn__scribe_call_t *k)
{
    cn_scribe_branch_list_req_t q;
    if (cn_scribe_dec_branch_list_req(k->payload, k->len, k->sc->codec, &q) < 0)
        return cn__scribe_malformed(k);
    uint32_t limit = q.limit == 0 ? 1 : q.limit > CN_SCRIBE_MAX_PAGE ? CN_SCRIBE_MAX_PAGE : q.limit;
    list_acc_t a = { calloc(limit, sizeof *a.rows), 0, limit };
    cn_scribe_branch_info_t *v = calloc(limit, sizeof *v);
    if (!a.rows || !v) {
        free(v);
        free(a.rows);
        return -ENOMEM;
    }
    bool more = false;
    cn_err_t err = cn_repos_branch_list(k->sc->srv->repos, &k->rq, q.repo.b,
                                        q.has_after ? (const char *)q.after.p : NULL, q.after.len,
                                        limit, list_row, &a, &more);
    if (err < 0) {
        err = cn__scribe_fail(k, err);
    } else {
        for (uint32_t i = 0; i < a.n; i++)
            cn__scribe_branch_view(&a.rows[i], &v[i]);
        cn_buf_reset(&k->sc->out);
        err = cn_scribe_enc_branch_list_resp(&k->sc->out, k->sc->codec, v, a.n, more && a.n);
        if (err >= 0)
            err = cn__scribe_reply(k, 0);
    }
    free(v);
    free(a.rows);
    return err;
}

/* ---- branch_mutate (21) --------------------------------------------------------------- */
static cn_err_t reply_branch_outcome(cn__scribe_call_t *k, const cn_repos_branch_outcome_t *o)
{
    cn_scribe_branch_outcome_t v;
    cn__scribe_branch_outcome_view(o, &v);
    cn_buf_reset(&k->sc->out);
    CN_TRY(cn_scribe_enc_branch_mutate_resp(&k->sc->out, k->sc->codec, &v));
    return cn__scribe_reply(k, 0);
}

static cn_err_t op_branch_mutate(cn__scribe_call_t *k)
{
    cn_scribe_branch_mutate_req_t q;
    if (cn_scribe_dec_branch_mutate_req(k->payload, k->len, k->sc->codec, &q) < 0)
        return cn__scribe_malformed(k);
    cn_repos_branch_mutate_t m;
    memset(&m, 0, sizeof m);
    memcpy(m.repo, q.repo.b, 16);
    memcpy(m.incarnation, q.incarnation.b, 16);
    memcpy(m.operation, q.operation.b, 16);
    memcpy(m.branch, q.branch.b, 16);
    m.name = (const char *)q.name.p;
    m.name_len = q.name.len;
    m.action = q.action;
    memcpy(m.source, q.source.b, 16);
    m.source_change = q.source_change;
    m.expected = (const char *)q.expected.p;
    m.expected_len = q.expected.len;
    cn_repos_branch_outcome_t o;
    cn_err_t err = cn_repos_branch_mutate(k->sc->srv->repos, &k->rq, &m, &o);
    return err < 0 ? cn__scribe_fail(k, err) : reply_branch_outcome(k, &o);
}

/* ---- branch_info (22) ------------------------------------------------------------------ */
static cn_err_t op_branch_info(cn__scribe_call_t *k)
{
    cn_scribe_branch_info_req_t q;
    if (cn_scribe_dec_branch_info_req(k->payload, k->len, k->sc->codec, &q) < 0)
        return cn__scribe_malformed(k);
    bool by_id = q.by == CN_SCRIBE_BRANCH_BY_ID;
    cn_repos_branch_t b;
    cn_err_t err = cn_repos_branch_info(k->sc->srv->repos, &k->rq, q.repo.b, by_id ? q.id.b : NULL,
                                        (const char *)q.name.p, q.name.len, &b);
    if (err < 0)
        return cn__scribe_fail(k, err);
    cn_scribe_branch_info_t v;
    cn__scribe_branch_view(&b, &v);
    cn_buf_reset(&k->sc->out);
    CN_TRY(cn_scribe_enc_branch_info_resp(&k->sc->out, k->sc->codec, &v));
    return cn__scribe_reply(k, 0);
}

/* ---- branch_outcome (23) ---------------------------------------------------------------- */
static cn_err_t op_branch_outcome(cn__scribe_call_t *k)
{
    cn_scribe_outcome_req_t q;
    if (cn_scribe_dec_outcome_req(k->payload, k->len, k->sc->codec, &q) < 0)
        return cn__scribe_malformed(k);
    bool known = false;
    cn_repos_branch_outcome_t o;
    cn_err_t err =
        cn_repos_branch_outcome(k->sc->srv->repos, &k->rq, q.repo.b, q.operation.b, &known, &o);
    if (err < 0)
        return cn__scribe_fail(k, err);
    cn_scribe_outcome_resp_t v;
    memset(&v, 0, sizeof v);
    v.kind = known ? CN_SCRIBE_OUTCOME_KIND_BRANCH : CN_SCRIBE_OUTCOME_KIND_UNKNOWN;
    if (known)
        cn__scribe_branch_outcome_view(&o, &v.branch);
    cn_buf_reset(&k->sc->out);
    CN_TRY(cn_scribe_enc_branch_outcome_resp(&k->sc->out, k->sc->codec, &v));
    return cn__scribe_reply(k, 0);
}

cn_err_t cn__scribe_op_branch(cn__scribe_call_t *k)
{
    switch (k->hdr.opcode) {
    case CN_SCRIBE_OP_BRANCH_LIST: return op_branch_list(k);
    case CN_SCRIBE_OP_BRANCH_MUTATE: return op_branch_mutate(k);
    case CN_SCRIBE_OP_BRANCH_INFO: return op_branch_info(k);
    case CN_SCRIBE_OP_BRANCH_OUTCOME: return op_branch_outcome(k);
    default:
        return cn__scribe_fail_code(k, CN_SCRIBE_E_INTERNAL, "%s is not a branch operation",
                                    cn_scribe_op_name(k->hdr.opcode));
    }
}
