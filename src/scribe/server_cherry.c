/* The Scribe cherry-pick operations (docs/protocol/scribe.md 7.9):
 * cherry_pick_info (32), a read, and cherry_pick_submit (33), a submit.
 * Each decodes its payload, calls ONE repos service function and encodes
 * the answer; the checks and their order are the service's. */
#include "server_int.h"

#include <string.h>

static cn_err_t op_pick_info(cn__scribe_call_t *k)
{
    cn_scribe_pick_info_req_t q;
    if (cn_scribe_dec_pick_info_req(k->payload, k->len, k->sc->codec, &q) < 0)
        return cn__scribe_malformed(k);
    cn_repos_pick_info_t o;
    cn_err_t err = cn_repos_pick_info(k->sc->srv->repos, &k->rq, q.repo.b, q.target.b, q.source.b,
                                      q.change, &o);
    if (err < 0)
        return cn__scribe_fail(k, err);
    cn_scribe_pick_info_t v;
    memset(&v, 0, sizeof v);
    cn__scribe_branch_view(&o.target, &v.target);
    cn__scribe_branch_view(&o.source, &v.source);
    memcpy(v.parent_branch.b, o.parent_branch, 16);
    v.parent = o.parent;
    v.already_applied = o.already_applied;
    cn_buf_reset(&k->sc->out);
    CN_TRY(cn_scribe_enc_pick_info_resp(&k->sc->out, k->sc->codec, &v));
    return cn__scribe_reply(k, 0);
}

static cn_err_t op_pick_submit(cn__scribe_call_t *k)
{
    cn_scribe_pick_submit_req_t q;
    if (cn_scribe_dec_pick_submit_req(k->payload, k->len, k->sc->codec, &q) < 0)
        return cn__scribe_malformed(k);
    cn_repos_pick_t p;
    memset(&p, 0, sizeof p);
    cn__scribe_submit_view(&q.submit, &p.submit);
    memcpy(p.source, q.source.b, 16);
    p.change = q.source_change;
    cn_repos_outcome_t o;
    cn_err_t err = cn_repos_pick_submit(k->sc->srv->repos, &k->rq, &p, &o);
    return err < 0 ? cn__scribe_fail(k, err) : cn__scribe_reply_outcome(k, &o);
}

cn_err_t cn__scribe_op_cherry(cn__scribe_call_t *k)
{
    if (k->hdr.opcode == CN_SCRIBE_OP_CHERRY_PICK_SUBMIT)
        return op_pick_submit(k);
    return op_pick_info(k);
}
