/* The workspace operations: workspace_register (12), workspace_list (34),
 * workspace_remove (35) and workspace_remove_outcome (36)
 * (docs/protocol/scribe.md 7.11).  Each decodes its payload, calls one repos
 * service function and encodes the answer; the rows, the retirement and the
 * operation records are the service's. */
#include "server_int.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* The wire view of a service row (its strings borrowed from w). */
static void row_view(const cn_repos_ws_t *w, cn_scribe_ws_row_t *v)
{
    memset(v, 0, sizeof *v);
    memcpy(v->workspace.b, w->id, 16);
    memcpy(v->branch.b, w->branch, 16);
    v->has_owner = w->has_owner;
    memcpy(v->owner.b, w->owner, 16);
    v->label = (cn_scribe_str_t){ (const uint8_t *)w->label, (uint32_t)strlen(w->label) };
    v->tag_count = w->tag_count;
    for (uint16_t i = 0; i < w->tag_count; i++)
        v->tags[i] = (cn_scribe_str_t){ (const uint8_t *)w->tags[i], (uint32_t)strlen(w->tags[i]) };
    v->created_ms = (uint64_t)w->created_ms;
    v->has_locks = w->has_locks;
}

static cn_err_t op_register(cn__scribe_call_t *k)
{
    cn_scribe_ws_register_req_t q;
    if (cn_scribe_dec_ws_register_req(k->payload, k->len, k->sc->codec, &q) < 0)
        return cn__scribe_malformed(k);
    cn_repos_pathv_t tags[CN_SCRIBE_MAX_WS_TAGS];
    for (uint16_t i = 0; i < q.tag_count; i++)
        tags[i] = (cn_repos_pathv_t){ q.tags[i].p, q.tags[i].len };
    cn_repos_ws_t *w = malloc(sizeof *w);
    if (!w)
        return -ENOMEM;
    cn_err_t err =
        cn_repos_ws_register(k->sc->srv->repos, &k->rq, q.repo.b, q.workspace.b, q.branch.b,
                             (const char *)q.label.p, q.label.len, tags, q.tag_count, w);
    if (err < 0) {
        err = cn__scribe_fail(k, err);
    } else {
        cn_scribe_ws_row_t v;
        row_view(w, &v);
        cn_buf_reset(&k->sc->out);
        err = cn_scribe_enc_ws_row_resp(&k->sc->out, k->sc->codec, &v);
        if (err >= 0)
            err = cn__scribe_reply(k, 0);
    }
    free(w);
    return err;
}

/* A page of service rows copied out of the callbacks. */
typedef struct ws_acc {
    cn_repos_ws_t *rows;
    uint32_t n;
} ws_acc_t;

static cn_err_t ws_row(void *ctx, const cn_repos_ws_t *w)
{
    ws_acc_t *a = ctx;
    a->rows[a->n++] = *w;
    return CN_OK;
}

static cn_err_t op_list(cn__scribe_call_t *k)
{
    cn_scribe_ws_list_req_t q;
    if (cn_scribe_dec_ws_list_req(k->payload, k->len, k->sc->codec, &q) < 0)
        return cn__scribe_malformed(k);
    ws_acc_t a = { calloc(CN_SCRIBE_MAX_WS_PAGE, sizeof *a.rows), 0 };
    cn_scribe_ws_row_t *v = calloc(CN_SCRIBE_MAX_WS_PAGE, sizeof *v);
    cn_err_t err = a.rows && v ? CN_OK : -ENOMEM;
    bool more = false;
    if (err >= 0)
        err = cn_repos_ws_list(k->sc->srv->repos, &k->rq, q.repo.b, q.scope == 1,
                               q.has_cursor ? q.cursor.b : NULL, q.limit, ws_row, &a, &more);
    if (err < 0) {
        err = cn__scribe_fail(k, err);
    } else {
        for (uint32_t i = 0; i < a.n; i++)
            row_view(&a.rows[i], &v[i]);
        cn_buf_reset(&k->sc->out);
        err = cn_scribe_enc_ws_list_resp(&k->sc->out, k->sc->codec, v, a.n, more);
        if (err >= 0)
            err = cn__scribe_reply(k, 0);
    }
    free(v);
    free(a.rows);
    return err;
}

/* Answers a removal outcome o. */
static cn_err_t reply_removal(cn__scribe_call_t *k, const cn_repos_ws_removal_t *o)
{
    cn_scribe_ws_removal_t v = { .code = o->code ? cn__scribe_detail_code(o->code) : 0,
                                 .retired_ms = (uint64_t)o->retired_ms,
                                 .detail = { (const uint8_t *)o->detail,
                                             (uint32_t)strlen(o->detail) } };
    memcpy(v.operation.b, o->operation, 16);
    if (o->code && !v.code)
        v.code = CN_SCRIBE_E_INTERNAL; /* a recorded code the table lacks */
    cn_buf_reset(&k->sc->out);
    CN_TRY(cn_scribe_enc_ws_removal(&k->sc->out, k->sc->codec, &v));
    return cn__scribe_reply(k, 0);
}

#ifndef NDEBUG
/* Test builds only: CAIRN_TEST_KILL_AFTER_WS_REMOVE=1 makes the server die
 * (SIGKILL) once a removal is durable and before its reply is sent, so the
 * integration test can check that workspace_remove_outcome resolves it. */
static void test_kill_point(void)
{
    const char *v = getenv("CAIRN_TEST_KILL_AFTER_WS_REMOVE");
    if (v && v[0] == '1')
        raise(SIGKILL);
}
#else
static void test_kill_point(void)
{
}
#endif

static cn_err_t op_remove(cn__scribe_call_t *k)
{
    cn_scribe_ws_remove_req_t q;
    if (cn_scribe_dec_ws_remove_req(k->payload, k->len, k->sc->codec, &q) < 0)
        return cn__scribe_malformed(k);
    cn_repos_ws_removal_t o;
    cn_err_t err = cn_repos_ws_remove(k->sc->srv->repos, &k->rq, q.repo.b, q.incarnation.b,
                                      q.operation.b, q.workspace.b, &o);
    if (err < 0)
        return cn__scribe_fail(k, err);
    test_kill_point();
    return reply_removal(k, &o);
}

static cn_err_t op_removal_outcome(cn__scribe_call_t *k)
{
    cn_scribe_outcome_req_t q;
    if (cn_scribe_dec_outcome_req(k->payload, k->len, k->sc->codec, &q) < 0)
        return cn__scribe_malformed(k);
    cn_repos_ws_removal_t o;
    bool known = false;
    cn_err_t err =
        cn_repos_ws_removal_outcome(k->sc->srv->repos, &k->rq, q.repo.b, q.operation.b, &known, &o);
    if (err < 0)
        return cn__scribe_fail(k, err);
    if (!known)
        return cn__scribe_fail_code(k, CN_SCRIBE_E_CHANGE_NOT_FOUND,
                                    "no removal is recorded under that operation");
    return reply_removal(k, &o);
}

cn_err_t cn__scribe_op_workspace(cn__scribe_call_t *k)
{
    switch (k->hdr.opcode) {
    case CN_SCRIBE_OP_WORKSPACE_REGISTER: return op_register(k);
    case CN_SCRIBE_OP_WORKSPACE_LIST: return op_list(k);
    case CN_SCRIBE_OP_WORKSPACE_REMOVE: return op_remove(k);
    default: return op_removal_outcome(k);
    }
}
