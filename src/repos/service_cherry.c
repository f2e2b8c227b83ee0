/* Cherry-picks (docs/protocol/scribe.md 7.9): which changes qualify, whether
 * a change is already on a target, cherry_pick_info (32), and the checks a
 * cherry-pick submit (33) adds to the submit's plan (service_submit.c runs
 * the submit itself).
 *
 * A pick is one change's difference applied to another branch: the commit it
 * makes has one parent and records where it was picked from, and that
 * provenance is never ancestry.  Nothing here writes; every read runs inside
 * its caller's transaction and within the history budget. */
#include "service_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cn_repos_pick_fp(const cn_repos_pick_t *p, cn_digest_t *out)
{
    static const char domain[] = "scribe:cherry-pick-operation:v1";
    cn_blake3_t h;
    cn__fp_open(&h, domain, sizeof domain, &p->submit); /* the domain's NUL included */
    cn__fp_le64(&h, p->submit.base);
    cn_blake3_update(&h, p->source, 16);
    cn__fp_le64(&h, p->change);
    cn_blake3_final(&h, out);
}

cn_err_t cn__commit_pick(cn_meta_txn_t *txn, const uint8_t repo[16], uint64_t change,
                         uint64_t *pick_change, uint8_t pick_branch[16])
{
    cn_meta_stmt_t *st = NULL;
    *pick_change = 0;
    CN_TRY(cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_COMMIT_PICK], "bi", CN__ARG_ID(repo),
                          (int64_t)change));
    cn_err_t err = cn_meta_step(st);
    if (err == CN_META_ROW) {
        *pick_change = (uint64_t)cn_meta_column_int64(st, 1);
        if (*pick_change && !cn__col_fixed(st, 0, pick_branch, 16))
            err = CN_E_CORRUPT;
    }
    cn_meta_finish(st);
    return err < 0 ? err : CN_OK;
}

/* Whether change qualifies for a pick from source: an ordinary commit
 * accepted on source itself.  *parent and parent_branch: its first parent
 * and the branch that accepted that (main for none). */
static cn_err_t qualify(cn_meta_txn_t *txn, cn_repos_req_t *rq, const cn__repo_t *repo,
                        const cn_repos_branch_t *source, uint64_t change, uint64_t *parent,
                        uint8_t parent_branch[16])
{
    const uint8_t *id = repo->info.id;
    uint64_t first = 0, merge = 0, ff = 0, fm = 0;
    uint8_t branch[16];
    bool found = false;
    CN_TRY(cn__commit_parents(txn, id, change, &found, &first, &merge, branch));
    if (!found)
        return cn__rfail(rq, CN_E_NOT_FOUND, CN_REPOS_E_CHANGE_NOT_FOUND,
                         "change %llu is not a commit of the repository",
                         (unsigned long long)change);
    if (merge || memcmp(branch, source->id, 16) != 0 || change > source->head)
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_CHANGE_NOT_PICKABLE,
                         "change %llu is not an ordinary commit of branch %s",
                         (unsigned long long)change, source->name);
    *parent = first;
    memcpy(parent_branch, repo->info.main_branch, 16);
    if (first) {
        CN_TRY(cn__commit_parents(txn, id, first, &found, &ff, &fm, parent_branch));
        if (!found)
            return CN_E_CORRUPT; /* a parent is always a commit */
    }
    return CN_OK;
}

/* The commits picked from (source, change), ascending: *out (caller frees),
 * *n of them; at most the history budget. */
static cn_err_t picks_of(cn_meta_txn_t *txn, cn_repos_req_t *rq, const uint8_t repo[16],
                         const uint8_t source[16], uint64_t change, uint64_t **out, size_t *n)
{
    cn_meta_stmt_t *st = NULL;
    size_t cap = 0;
    *out = NULL;
    *n = 0;
    CN_TRY(cn_meta_queryf(txn, &st, cn__sql_repos[CN_SQL_REPOS_COMMIT_PICKS_OF], "bibi",
                          CN__ARG_ID(repo), (int64_t)change, CN__ARG_ID(source),
                          (int64_t)CN_REPOS_HISTORY_BUDGET + 1));
    cn_err_t err;
    while ((err = cn_meta_step(st)) == CN_META_ROW) {
        if (*n == CN_REPOS_HISTORY_BUDGET) {
            err = cn__rfail(rq, CN_E_LIMIT, CN_REPOS_E_LIMIT_EXCEEDED,
                            "more than %u picks of one change", CN_REPOS_HISTORY_BUDGET);
            break;
        }
        if (*n == cap) {
            cap = cap ? cap * 2 : 8;
            uint64_t *v = realloc(*out, cap * sizeof *v);
            if (!v) {
                err = -ENOMEM;
                break;
            }
            *out = v;
        }
        (*out)[(*n)++] = (uint64_t)cn_meta_column_int64(st, 0);
    }
    cn_meta_finish(st);
    return err == CN_META_DONE ? CN_OK : err;
}

/* *applied: change, or a commit picked from (source, change), is in the
 * ancestry of target's snapshot at rev. */
static cn_err_t applied_at(cn_meta_txn_t *txn, cn_repos_req_t *rq, const uint8_t repo[16],
                           const uint8_t target[16], uint64_t rev, const uint8_t source[16],
                           uint64_t change, bool *applied)
{
    uint64_t tip = 0, *picks = NULL;
    size_t n = 0;
    cn_digest_t tid, root, content;
    *applied = false;
    CN_TRY(cn__snapshot_at(txn, repo, target, rev, &tip, &tid, &root, &content));
    cn_err_t err = cn__in_ancestry(txn, rq, repo, tip, change, applied);
    if (err >= 0 && !*applied)
        err = picks_of(txn, rq, repo, source, change, &picks, &n);
    for (size_t i = 0; err >= 0 && !*applied && i < n; i++)
        err = cn__in_ancestry(txn, rq, repo, tip, picks[i], applied);
    free(picks);
    return err;
}

/* ---- cherry_pick_info (32) ---------------------------------------------------------- */
typedef struct info_query {
    cn_repos_req_t *rq;
    const uint8_t *target, *source;
    uint64_t change;
    cn_repos_pick_info_t *out;
} info_query_t;

static cn_err_t info_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    info_query_t *iq = ctx;
    cn_repos_pick_info_t *o = iq->out;
    const uint8_t *id = repo->info.id;
    CN_TRY(cn__branch_load(txn, iq->rq, id, iq->target, &o->target));
    CN_TRY(cn__branch_load(txn, iq->rq, id, iq->source, &o->source));
    CN_TRY(cn__schema_check(txn, iq->rq, id));
    CN_TRY(qualify(txn, iq->rq, repo, &o->source, iq->change, &o->parent, o->parent_branch));
    o->source.head = iq->change;
    return applied_at(txn, iq->rq, id, o->target.id, o->target.head, o->source.id, iq->change,
                      &o->already_applied);
}

cn_err_t cn_repos_pick_info(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                            const uint8_t target[16], const uint8_t source[16], uint64_t change,
                            cn_repos_pick_info_t *out)
{
    memset(out, 0, sizeof *out);
    info_query_t iq = { rq, target, source, change, out };
    cn_err_t err =
        cn__repo_run(r, rq, repo, CN__READ, CN_META_RUN_READ | CN_META_RETRY, info_body, &iq);
    if (err < 0)
        memset(out, 0, sizeof *out);
    return err;
}

/* ---- cherry_pick_submit (33): the plan's checks ---------------------------------------- */
cn_err_t cn__pick_check(cn_meta_txn_t *txn, cn_repos_req_t *rq, const cn__repo_t *repo,
                        const cn_repos_branch_t *target, const cn_repos_pick_t *p)
{
    cn_repos_branch_t source;
    uint64_t parent = 0;
    uint8_t parent_branch[16];
    CN_TRY(cn__branch_load(txn, rq, repo->info.id, p->source, &source));
    CN_TRY(cn__schema_check(txn, rq, repo->info.id));
    CN_TRY(cn__branch_within(rq, target, p->submit.base));
    return qualify(txn, rq, repo, &source, p->change, &parent, parent_branch);
}

/* The integration path dependencies that changed on the target between the
 * pick's target head and the live head, added to out's paths. */
static cn_err_t dependencies(cn_meta_txn_t *txn, cn_repos_req_t *rq, const uint8_t repo[16],
                             const cn_repos_pick_t *p, uint64_t head,
                             const cn_repos_changeset_t *cs, cn_repos_outcome_t *out)
{
    cn_repos_pathv_t *v = malloc(((size_t)cs->count * 2 + 1) * sizeof *v);
    bool *hit = calloc((size_t)cs->count * 2 + 1, sizeof *hit);
    cn_err_t err = v && hit ? CN_OK : -ENOMEM;
    size_t n = 0;
    cn_repos_changeset_iter_t it;
    cn_repos_change_t e;
    cn_repos_changeset_iter(cs, &it);
    while (err >= 0 && cn_repos_changeset_next(&it, &e)) {
        v[n++] = (cn_repos_pathv_t){ e.path, e.path_len };
        if (e.kind == CN_REPOS_MOVE)
            v[n++] = (cn_repos_pathv_t){ e.from, e.from_len };
    }
    if (err >= 0)
        err = cn__paths_touched(txn, rq, repo, p->submit.branch, p->submit.base, head, v, n, hit);
    for (size_t i = 0; err >= 0 && i < n; i++)
        if (hit[i])
            err = cn__outcome_add_path(out, v[i].p, v[i].n);
    free(v);
    free(hit);
    return err;
}

cn_err_t cn__pick_judge(cn_meta_txn_t *txn, cn_repos_req_t *rq, const cn__repo_t *repo,
                        uint64_t head, const cn_repos_pick_t *p, const cn_repos_changeset_t *cs,
                        cn_repos_outcome_t *out)
{
    const uint8_t *id = repo->info.id;
    bool applied = false;
    CN_TRY(applied_at(txn, rq, id, p->submit.branch, head, p->source, p->change, &applied));
    if (applied) {
        out->outcome = CN_REPOS_REJECTED;
        out->code = CN_REPOS_E_ALREADY_APPLIED;
        out->head = head;
        snprintf(out->detail, sizeof out->detail,
                 "change %llu, or a pick of it, is already on the target",
                 (unsigned long long)p->change);
        return CN_OK;
    }
    if (p->submit.base < head)
        CN_TRY(dependencies(txn, rq, id, p, head, cs, out));
    if (out->npaths) {
        out->outcome = CN_REPOS_REJECTED;
        out->code = CN_REPOS_E_BASE_CONFLICT;
        out->head = head;
        snprintf(out->detail, sizeof out->detail, "%s",
                 "paths the pick depends on changed on the target after its head");
    }
    return CN_OK;
}
