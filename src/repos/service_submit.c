/* Submits: operation identity, the checks against the branch head, the
 * snapshot-tree update, the commit, and the one transaction that publishes
 * it all.
 *
 * Phases (see the invariants in service.c):
 *   1. plan, in a read transaction: resolve the operation id (a recorded
 *      outcome replays; another intent is refused), check the incarnation,
 *      the branch and the change set, judge the base and the tree rules,
 *      apply the change set to a working view of the head snapshot, and
 *      encode the commit;
 *   2. publish the commit blob (durable before anything names it);
 *   3. in one write transaction: re-check that the operation is still
 *      unknown and the branch and repository heads are what was planned
 *      (else plan again), then insert the new tree nodes, the commit, its
 *      membership, the path events and fold rows, advance the heads and
 *      record the outcome.  Rejections decided by repository state are
 *      recorded the same way, without phases 2 and the tree rows.
 * Submits of one repository are serialized in this process, so phase 3
 * only re-plans when another process got in between. */
#include "service_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_ATTEMPTS 8
/* A fleet's nodes submit to one branch at once: a submit that keeps losing
 * the race replans, after a jittered pause, until this much time has passed
 * (docs/fleet.md, "Submits racing across nodes"). */
#define FLEET_RETRY_MS 30000

void cn_repos_outcome_free(cn_repos_outcome_t *o)
{
    if (o)
        cn_buf_free(&o->paths);
}

void cn_repos_outcome_path(const cn_repos_outcome_t *o, uint32_t i, const uint8_t **p, uint16_t *n)
{
    cn_rd_t r = cn_rd_init(o->paths.data, o->paths.len);
    for (uint32_t k = 0;; k++) {
        uint16_t len = cn_rd_u16le(&r);
        const uint8_t *b = cn_rd_bytes(&r, len);
        if (k == i || r.err) {
            *p = b;
            *n = r.err ? 0 : len;
            return;
        }
    }
}

void cn_repos_submit_fp(const cn_repos_submit_t *s, cn_digest_t *out)
{
    cn_repos_submit_intent_t in;
    memset(&in, 0, sizeof in);
    memcpy(in.repository, s->repo, 16);
    memcpy(in.incarnation, s->incarnation, 16);
    memcpy(in.branch, s->branch, 16);
    memcpy(in.workspace, s->workspace, 16);
    in.base = s->base;
    in.changeset = s->changeset;
    in.keep_locks = s->keep_locks;
    in.message = s->message;
    in.message_len = s->message_len;
    cn_repos_submit_fingerprint(&in, out);
}

/* ---- outcome records ------------------------------------------------------------------
 * u8 outcome | u64 change | [32] commit | u16 code | u64 head | u16 n | detail
 * | u32 npaths | (u16 n | path) x npaths, all little-endian. */
static cn_err_t outcome_encode(const cn_repos_outcome_t *o, cn_buf_t *b)
{
    size_t dl = strlen(o->detail);
    CN_TRY(cn_buf_put_u8(b, o->outcome));
    CN_TRY(cn_buf_put_u64le(b, o->change));
    CN_TRY(cn_buf_append(b, o->commit.b, CN_DIGEST_LEN));
    CN_TRY(cn_buf_put_u16le(b, o->code));
    CN_TRY(cn_buf_put_u64le(b, o->head));
    CN_TRY(cn_buf_put_u16le(b, (uint16_t)dl));
    CN_TRY(cn_buf_append(b, o->detail, dl));
    CN_TRY(cn_buf_put_u32le(b, o->npaths));
    return cn_buf_append(b, o->paths.data, o->paths.len);
}

static cn_err_t outcome_decode(const uint8_t *p, size_t n, const uint8_t op[16],
                               cn_repos_outcome_t *o)
{
    memset(o, 0, sizeof *o);
    memcpy(o->operation, op, 16);
    cn_rd_t r = cn_rd_init(p, n);
    o->outcome = cn_rd_u8(&r);
    o->change = cn_rd_u64le(&r);
    const uint8_t *c = cn_rd_bytes(&r, CN_DIGEST_LEN);
    if (c)
        memcpy(o->commit.b, c, CN_DIGEST_LEN);
    o->code = cn_rd_u16le(&r);
    o->head = cn_rd_u64le(&r);
    uint16_t dl = cn_rd_u16le(&r);
    const uint8_t *d = cn_rd_bytes(&r, dl);
    if (r.err || dl > CN_REPOS_DETAIL_MAX)
        return CN_E_CORRUPT;
    memcpy(o->detail, d, dl);
    o->npaths = cn_rd_u32le(&r);
    if (r.err || o->npaths > CN_REPOS_CONFLICT_PATHS_MAX)
        return CN_E_CORRUPT;
    size_t rest = cn_rd_left(&r);
    CN_TRY(cn_buf_append(&o->paths, p + r.off, rest));
    return (o->outcome == CN_REPOS_ACCEPTED || o->outcome == CN_REPOS_REJECTED) ? CN_OK
                                                                                : CN_E_CORRUPT;
}

/* The recorded operation: *found, and when found *same: it is a submit's
 * whose fingerprint is fp (then *out is its outcome).  An id recorded by
 * another kind of operation is never the same intent. */
static cn_err_t op_lookup(cn_meta_txn_t *txn, const uint8_t repo[16], const uint8_t op[16],
                          const cn_digest_t *fp, bool *found, bool *same, cn_repos_outcome_t *out)
{
    cn__op_t rec;
    cn_err_t err = cn__op_find(txn, repo, op, &rec);
    *found = err >= 0 && rec.found;
    *same = *found && rec.kind == CN_REPOS_OP_SUBMIT && memcmp(rec.fp.b, fp->b, CN_DIGEST_LEN) == 0;
    if (*same)
        err = outcome_decode(rec.outcome.data, rec.outcome.len, op, out);
    cn__op_free(&rec);
    return err;
}

/* An operation asked about: the kind that recorded it and its outcome. */
typedef struct operation_query {
    cn_repos_req_t *rq;
    const uint8_t *operation;
    uint8_t kind;
    cn_repos_outcome_t *out;
    cn_repos_branch_outcome_t *bout;
} operation_query_t;

static cn_err_t outcome_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    operation_query_t *oq = ctx;
    cn__op_t rec;
    cn_err_t err = cn__op_find(txn, repo->info.id, oq->operation, &rec);
    oq->kind = err >= 0 && rec.found ? rec.kind : CN_REPOS_OP_UNKNOWN;
    cn_repos_outcome_free(oq->out);
    memset(oq->out, 0, sizeof *oq->out);
    if (oq->kind == CN_REPOS_OP_SUBMIT)
        err = outcome_decode(rec.outcome.data, rec.outcome.len, oq->operation, oq->out);
    else if (oq->kind == CN_REPOS_OP_BRANCH)
        err = cn__branch_outcome_decode(rec.outcome.data, rec.outcome.len, oq->operation, oq->bout);
    else if (oq->kind == CN_REPOS_OP_WS_REMOVE) /* answered by workspace_remove_outcome */
        err = cn__rfail(oq->rq, CN_E_CONFLICT, CN_REPOS_E_OPERATION_INTENT_MISMATCH,
                        "the operation id belongs to a workspace removal");
    else if (err >= 0 && rec.found)
        err = CN_E_CORRUPT;
    cn__op_free(&rec);
    return err;
}

cn_err_t cn_repos_operation_outcome(cn_repos_t *r, cn_repos_req_t *rq, const uint8_t repo[16],
                                    const uint8_t operation[16], uint8_t *kind,
                                    cn_repos_outcome_t *out, cn_repos_branch_outcome_t *bout)
{
    memset(out, 0, sizeof *out);
    memset(bout, 0, sizeof *bout);
    operation_query_t oq = { rq, operation, CN_REPOS_OP_UNKNOWN, out, bout };
    cn_err_t err =
        cn__repo_run(r, rq, repo, CN__READ, CN_META_RUN_READ | CN_META_RETRY, outcome_body, &oq);
    if (err < 0) {
        cn_repos_outcome_free(out);
        memset(out, 0, sizeof *out);
    }
    *kind = err >= 0 ? oq.kind : CN_REPOS_OP_UNKNOWN;
    return err;
}

/* ---- the plan ---------------------------------------------------------------------- */
typedef struct removed {
    const uint8_t *p;
    size_t n;
    uint8_t *fold;
    size_t fn;
} removed_t;

typedef struct plan {
    cn_repos_t *r;
    cn_repos_req_t *rq;
    const cn_repos_submit_t *s;
    const cn_repos_merge_t *merge; /* a merge submit's, else NULL */
    const cn_repos_pick_t *pick;   /* a cherry-pick submit's, else NULL */
    cn_digest_t fp;
    cn__repo_t repo;
    uint64_t head;         /* branch head planned against */
    uint64_t parent;       /* the change of the commit of the head's snapshot: the first parent */
    uint64_t merge_parent; /* a merge's: the commit of the source's snapshot at its head */
    cn_digest_t merge_id;
    uint64_t repo_head;
    uint64_t change;    /* the change number to assign */
    const uint8_t *map; /* the change set's bytes */
    size_t map_len;
    cn_repos_changeset_t cs;
    cn__ptree_t *tree;
    cn__ptree_t *source; /* a merge's: the source's snapshot at its head */
    cn__lineage_t lin;   /* the file_lineage rows of the commit */
    removed_t *rm;       /* deletes and move sources */
    size_t nrm;
    cn_repos_outcome_t out;
    cn_buf_t commit; /* commit encoding when accepted */
    cn_digest_t commit_blob;
    /* replay: the operation was already recorded */
    bool replay;
    /* again: phase 3 found the heads moved since the plan */
    bool again;
} plan_t;

static void plan_clear(plan_t *pl)
{
    cn__unmap(pl->map, pl->map_len);
    pl->map = NULL;
    cn__ptree_free(pl->tree);
    pl->tree = NULL;
    cn__ptree_free(pl->source);
    pl->source = NULL;
    cn__lineage_free(&pl->lin);
    for (size_t i = 0; i < pl->nrm; i++)
        free(pl->rm[i].fold);
    free(pl->rm);
    pl->rm = NULL;
    pl->nrm = 0;
    cn_buf_free(&pl->commit);
    cn_repos_outcome_free(&pl->out);
    memset(&pl->out, 0, sizeof pl->out);
    pl->replay = false;
}

cn_err_t cn__outcome_add_path(cn_repos_outcome_t *o, const uint8_t *p, size_t n)
{
    if (o->npaths >= CN_REPOS_CONFLICT_PATHS_MAX)
        return CN_OK;
    CN_TRY(cn_buf_put_u16le(&o->paths, (uint16_t)n));
    CN_TRY(cn_buf_append(&o->paths, p, n));
    o->npaths++;
    return CN_OK;
}

static void reject(plan_t *pl, uint16_t code, const char *detail)
{
    pl->out.outcome = CN_REPOS_REJECTED;
    pl->out.code = code;
    pl->out.head = pl->head;
    snprintf(pl->out.detail, sizeof pl->out.detail, "%s", detail);
}

static cn_err_t live_at(plan_t *pl, const uint8_t *p, size_t n, bool *live, bool *held)
{
    bool found = false;
    cn_repos_entry_t e;
    CN_TRY(cn__ptree_get(pl->tree, p, n, &found, &e));
    *live = found && e.state == CN_REPOS_LIVE;
    if (held)
        *held = found;
    return CN_OK;
}

static bool removed_has(const plan_t *pl, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < pl->nrm; i++)
        if (pl->rm[i].n == n && memcmp(pl->rm[i].p, p, n) == 0)
            return true;
    return false;
}

static uint64_t removed_under(const plan_t *pl, const uint8_t *p, size_t n)
{
    uint64_t c = 0;
    for (size_t i = 0; i < pl->nrm; i++)
        if (pl->rm[i].n > n && memcmp(pl->rm[i].p, p, n) == 0)
            c++;
    return c;
}

static uint64_t removed_folds(const plan_t *pl, const uint8_t *f, size_t fn)
{
    uint64_t c = 0;
    for (size_t i = 0; i < pl->nrm; i++)
        if (pl->rm[i].fn == fn && memcmp(pl->rm[i].fold, f, fn) == 0)
            c++;
    return c;
}

typedef struct fold_acc {
    uint64_t *counts;
    bool *got;
} fold_acc_t;

static cn_err_t fold_row(void *ctx, cn_meta_stmt_t *st, size_t i)
{
    fold_acc_t *a = ctx;
    int64_t k = cn_meta_column_int64(st, 1);
    if (k < 0 || a->got[i])
        return CN_E_CORRUPT;
    a->got[i] = true;
    a->counts[i] = (uint64_t)k;
    return CN_OK;
}

/* counts[i] = the branch's paths whose case fold is fold i of the keys, in
 * one padded batch statement (issue 24: a 100-path submit is one round
 * trip, not 100). */
static cn_err_t fold_counts(cn_meta_txn_t *txn, const plan_t *pl, const cn__keys_t *folds,
                            uint64_t *counts)
{
    fold_acc_t a = { counts, calloc(folds->n ? folds->n : 1, sizeof(bool)) };
    cn_err_t err = a.got ? CN_OK : -ENOMEM;
    if (err >= 0)
        err = cn__padded_batch(txn, CN_SQL_REPOS_BATCH_FOLD_COUNT, folds, pl->s->repo,
                               pl->s->branch, fold_row, &a);
    for (size_t i = 0; err >= 0 && i < folds->n; i++)
        if (!a.got[i])
            err = CN_E_CORRUPT; /* every position has its count row */
    free(a.got);
    return err;
}

/* Whether the path of an entry that becomes live clashes in the tree: a
 * live ancestor file or a live descendant (paths removed by the same change
 * set do not count).  key: room for CN_REPOS_MAX_PATH + 1 bytes. */
static cn_err_t tree_clash(plan_t *pl, const cn_repos_change_t *e, uint8_t *key, bool *bad)
{
    *bad = false;
    for (size_t k = 0; k < e->path_len && !*bad; k++) {
        bool live = false;
        if (e->path[k] != '/')
            continue;
        CN_TRY(live_at(pl, e->path, k, &live, NULL));
        *bad = live && !removed_has(pl, e->path, k);
    }
    if (*bad)
        return CN_OK;
    memcpy(key, e->path, e->path_len);
    key[e->path_len] = '/';
    uint64_t under = 0;
    CN_TRY(cn__ptree_live_under(pl->tree, key, e->path_len + 1u, &under));
    *bad = under > removed_under(pl, key, e->path_len + 1u);
    return CN_OK;
}

/* Judge's rule 3 for every entry that becomes live (an add or a move's
 * target): no tree clash, and no live path of its case fold left once the
 * change set's removals are counted; the folds are counted in one batch.
 * Conflicting paths are reported in change-set order. */
static cn_err_t judge_shapes(plan_t *pl, cn_meta_txn_t *txn)
{
    uint32_t n = pl->cs.count ? pl->cs.count : 1, nf = 0;
    uint8_t *key = malloc(CN_REPOS_MAX_PATH + 1);
    int8_t *state = calloc(n, sizeof *state); /* 0 not judged, 1 clash, 2 fold counted */
    size_t *off = calloc(n, sizeof *off), *len = calloc(n, sizeof *len);
    uint64_t *counts = calloc(n, sizeof *counts);
    cn_buf_t folds = { 0 };
    cn_repos_changeset_iter_t it;
    cn_repos_change_t e;
    cn_err_t err = key && state && off && len && counts ? CN_OK : -ENOMEM;
    cn_repos_changeset_iter(&pl->cs, &it);
    for (uint32_t i = 0; err >= 0 && cn_repos_changeset_next(&it, &e); i++) {
        bool bad = false;
        if (e.kind != CN_REPOS_ADD && e.kind != CN_REPOS_MOVE)
            continue;
        if ((err = tree_clash(pl, &e, key, &bad)) < 0)
            break;
        state[i] = bad ? 1 : 2;
        if (bad)
            continue;
        long fn = cn_repos_path_fold(e.path, e.path_len, key, CN_REPOS_MAX_PATH);
        if (fn <= 0)
            err = CN_E_CORRUPT;
        else if ((err = cn_buf_append(&folds, key, (size_t)fn)) >= 0) {
            off[nf] = folds.len - (size_t)fn;
            len[nf++] = (size_t)fn;
        }
    }
    cn__keys_t keys = { folds.data, off, len, nf };
    if (err >= 0 && nf)
        err = fold_counts(txn, pl, &keys, counts);
    cn_repos_changeset_iter(&pl->cs, &it);
    for (uint32_t i = 0, f = 0; err >= 0 && cn_repos_changeset_next(&it, &e); i++) {
        bool bad = state[i] == 1;
        if (state[i] == 2) {
            bad = counts[f] > removed_folds(pl, folds.data + off[f], len[f]);
            f++;
        }
        if (bad)
            err = cn__outcome_add_path(&pl->out, e.path, e.path_len);
    }
    free(key);
    free(state);
    free(off);
    free(len);
    free(counts);
    cn_buf_free(&folds);
    if (err < 0)
        return err;
    if (pl->out.npaths)
        reject(pl, CN_REPOS_E_PATH_CONFLICT,
               "the change would create a case-fold alias or a file/directory clash");
    return CN_OK;
}

/* Base and tree rules; a violation becomes a recorded rejection. */
static cn_err_t judge(plan_t *pl, cn_meta_txn_t *txn)
{
    cn_repos_changeset_iter_t it;
    cn_repos_change_t e;
    const cn_repos_submit_t *s = pl->s;
    /* 1. A stale base conflicts when a submitted path changed after it. */
    if (s->base < pl->head) {
        cn_repos_changeset_iter(&pl->cs, &it);
        while (cn_repos_changeset_next(&it, &e)) {
            for (int side = 0; side < 2; side++) {
                const uint8_t *p = side ? e.from : e.path;
                size_t n = side ? e.from_len : e.path_len;
                if (side && e.kind != CN_REPOS_MOVE)
                    continue;
                bool found = false;
                cn_repos_entry_t te;
                CN_TRY(cn__ptree_get(pl->tree, p, n, &found, &te));
                if (found && te.change > s->base)
                    CN_TRY(cn__outcome_add_path(&pl->out, p, n));
            }
        }
        if (pl->out.npaths) {
            reject(pl, CN_REPOS_E_BASE_CONFLICT, "submitted paths changed after the expected base");
            return CN_OK;
        }
    }
    /* 2. Preconditions of each entry against the head. */
    pl->rm = calloc(pl->cs.count, sizeof *pl->rm);
    if (!pl->rm)
        return -ENOMEM;
    cn_repos_changeset_iter(&pl->cs, &it);
    while (cn_repos_changeset_next(&it, &e)) {
        bool live = false, held = false, ok = true;
        CN_TRY(live_at(pl, e.path, e.path_len, &live, &held));
        switch (e.kind) {
        case CN_REPOS_ADD: ok = !live; break;
        case CN_REPOS_MODIFY:
        case CN_REPOS_DELETE: ok = live; break;
        case CN_REPOS_MOVE: {
            bool src = false;
            CN_TRY(live_at(pl, e.from, e.from_len, &src, NULL));
            ok = !live && src;
            break;
        }
        default: ok = held; break;
        }
        if (!ok)
            CN_TRY(cn__outcome_add_path(&pl->out, e.path, e.path_len));
        if (e.kind == CN_REPOS_DELETE || e.kind == CN_REPOS_MOVE) {
            removed_t *rm = &pl->rm[pl->nrm];
            rm->p = e.kind == CN_REPOS_DELETE ? e.path : e.from;
            rm->n = e.kind == CN_REPOS_DELETE ? e.path_len : e.from_len;
            if (!(rm->fold = malloc(rm->n ? rm->n : 1)))
                return -ENOMEM;
            long fn = cn_repos_path_fold(rm->p, rm->n, rm->fold, rm->n);
            if (fn < 0)
                return CN_E_CORRUPT;
            rm->fn = (size_t)fn;
            pl->nrm++;
        }
    }
    if (pl->out.npaths) {
        reject(pl, CN_REPOS_E_PATH_CONFLICT,
               "an entry does not match the head (add of a live path, modify, delete or move "
               "of an absent one, keep of a path never held)");
        return CN_OK;
    }
    /* 3. Every path that becomes live: no live ancestor file, no live
     * descendant, no other live path with the same case fold. */
    return judge_shapes(pl, txn);
}

/* sizes[i] = the file size the repository's manifest ids[i] records, for
 * the n ids, in one batch statement per CN_META_BATCH_MAX (issue 24: a
 * 100-path submit reads them in one round trip, not 100); a manifest the
 * repository lacks fails the submit. */
static cn_err_t manifest_sizes(cn_meta_txn_t *txn, const plan_t *pl, const cn_digest_t *ids,
                               uint32_t n, uint64_t *sizes)
{
    bool *got = calloc(n ? n : 1, sizeof *got);
    cn_err_t err = got ? CN_OK : -ENOMEM;
    for (uint32_t from = 0; err >= 0 && from < n; from += CN_META_BATCH_MAX) {
        uint32_t c = n - from < CN_META_BATCH_MAX ? n - from : CN_META_BATCH_MAX;
        cn_meta_stmt_t *st = NULL;
        err = cn_meta_batch_query(txn, &st, &cn__sql_repos_batch[CN_SQL_REPOS_BATCH_OBJECT_FIND],
                                  ids + from, sizeof *ids, c, "bi", CN__ARG_ID(pl->s->repo),
                                  (int64_t)CN_REPOS_MANIFEST);
        while (err >= 0 && (err = cn_meta_step(st)) == CN_META_ROW) {
            int64_t j = cn_meta_column_int64(st, 0);
            if (j < 0 || j >= c) {
                err = CN_E_CORRUPT;
                break;
            }
            got[from + j] = true;
            sizes[from + j] = (uint64_t)cn_meta_column_int64(st, 2);
        }
        cn_meta_finish(st);
    }
    for (uint32_t i = 0; err >= 0 && i < n; i++)
        if (!got[i])
            err = cn__rfail(pl->rq, CN_E_NOT_FOUND, CN_REPOS_E_OBJECT_MISSING,
                            "the change set names a manifest the repository lacks");
    free(got);
    return err < 0 ? err : CN_OK;
}

/* Whether entry e leaves a live path (and so names a manifest). */
static bool becomes_live(const cn_repos_change_t *e)
{
    return e->kind != CN_REPOS_KEEP && e->kind != CN_REPOS_DELETE;
}

static cn_err_t apply_entries(plan_t *pl, const uint64_t *sizes)
{
    cn_repos_changeset_iter_t it;
    cn_repos_change_t e;
    uint32_t live = 0;
    cn_repos_changeset_iter(&pl->cs, &it);
    while (cn_repos_changeset_next(&it, &e)) {
        cn_repos_entry_t ne;
        memset(&ne, 0, sizeof ne);
        ne.change = pl->change;
        if (e.kind == CN_REPOS_KEEP)
            continue;
        if (e.kind == CN_REPOS_DELETE || e.kind == CN_REPOS_MOVE) {
            ne.state = CN_REPOS_TOMBSTONE;
            CN_TRY(cn__ptree_put(pl->tree, e.kind == CN_REPOS_DELETE ? e.path : e.from,
                                 e.kind == CN_REPOS_DELETE ? e.path_len : e.from_len, &ne));
            if (e.kind == CN_REPOS_DELETE)
                continue;
        }
        ne.state = CN_REPOS_LIVE;
        ne.mode = e.mode;
        ne.manifest = e.manifest;
        ne.size = sizes[live++];
        CN_TRY(cn__ptree_put(pl->tree, e.path, e.path_len, &ne));
    }
    return CN_OK;
}

/* The change set's entries into the tree, each live one with its
 * manifest's size. */
static cn_err_t apply(plan_t *pl, cn_meta_txn_t *txn)
{
    cn_repos_changeset_iter_t it;
    cn_repos_change_t e;
    uint32_t n = 0, cap = pl->cs.count ? pl->cs.count : 1;
    cn_digest_t *ids = malloc(cap * sizeof *ids);
    uint64_t *sizes = calloc(cap, sizeof *sizes);
    cn_err_t err = ids && sizes ? CN_OK : -ENOMEM;
    cn_repos_changeset_iter(&pl->cs, &it);
    while (err >= 0 && n < cap && cn_repos_changeset_next(&it, &e))
        if (becomes_live(&e))
            ids[n++] = e.manifest;
    if (err >= 0)
        err = manifest_sizes(txn, pl, ids, n, sizes);
    if (err >= 0)
        err = apply_entries(pl, sizes);
    free(ids);
    free(sizes);
    return err;
}

/* The operation id: a recorded one replays (pl->replay) or is another
 * intent; a new one must name the current incarnation. */
static cn_err_t plan_identity(plan_t *pl, cn_meta_txn_t *txn)
{
    const cn_repos_submit_t *s = pl->s;
    bool found = false, same = false;
    CN_TRY(op_lookup(txn, s->repo, s->operation, &pl->fp, &found, &same, &pl->out));
    if (found && !same)
        return cn__rfail(pl->rq, CN_E_CONFLICT, CN_REPOS_E_OPERATION_INTENT_MISMATCH,
                         "the operation id was used for another request");
    pl->replay = found;
    if (found)
        return CN_OK;
    memset(&pl->out, 0, sizeof pl->out);
    memcpy(pl->out.operation, s->operation, 16);
    if (memcmp(pl->repo.info.incarnation, s->incarnation, 16) != 0)
        return cn__rfail(pl->rq, CN_E_CONFLICT, CN_REPOS_E_INCARNATION_MISMATCH,
                         "the repository was restored: its incarnation differs");
    return cn__ws_check(txn, pl->rq, s->repo, s->workspace);
}

/* The branch and its head, a merge's checks, and the base inside the
 * branch's lifetime. */
static cn_err_t plan_branch(plan_t *pl, cn_meta_txn_t *txn)
{
    const cn_repos_submit_t *s = pl->s;
    cn_repos_branch_t br;
    CN_TRY(cn__branch_load(txn, pl->rq, s->repo, s->branch, &br));
    pl->head = br.head;
    pl->repo_head = pl->repo.info.head;
    if (pl->merge)
        CN_TRY(cn__merge_plan(txn, pl->rq, &pl->repo, &br, pl->merge, &pl->merge_parent,
                              &pl->merge_id));
    if (pl->pick)
        CN_TRY(cn__pick_check(txn, pl->rq, &pl->repo, &br, pl->pick));
    if (s->base > pl->head || s->base < br.origin_change)
        return cn__rfail(pl->rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                         "the expected base %llu is outside the branch's lifetime %llu..%llu",
                         (unsigned long long)s->base, (unsigned long long)br.origin_change,
                         (unsigned long long)pl->head);
    return CN_OK;
}

/* Maps and parses the change set, which must be a member. */
static cn_err_t plan_changeset(plan_t *pl, cn_meta_txn_t *txn)
{
    const cn_repos_submit_t *s = pl->s;
    cn_digest_t blob;
    bool found = false;
    CN_TRY(cn__object_find(txn, s->repo, CN_REPOS_CHANGESET, &s->changeset, &found, &blob, NULL,
                           NULL));
    if (!found)
        return cn__rfail(pl->rq, CN_E_NOT_FOUND, CN_REPOS_E_OBJECT_MISSING,
                         "the change set is not in the repository");
    CN_TRY(cn__blob_map(pl->r, &blob, &pl->map, &pl->map_len));
    if (cn_repos_changeset_parse(pl->map, pl->map_len, &pl->cs) < 0)
        return CN_E_CORRUPT;
    return pl->merge
               ? cn__merge_covers(txn, pl->rq, s->repo, &pl->cs, pl->merge_parent, pl->merge->base)
               : CN_OK;
}

/* Encodes the accepted commit: its first parent is the commit of the
 * head's snapshot, a merge's second the source head's commit (a target
 * without commits has the merge parent alone). */
static cn_err_t plan_commit(plan_t *pl, const cn_digest_t *parent_id)
{
    const cn_repos_submit_t *s = pl->s;
    cn_repos_commit_t c;
    memset(&c, 0, sizeof c);
    memcpy(c.repository, s->repo, 16);
    memcpy(c.branch, s->branch, 16);
    c.change = pl->change;
    if (pl->parent)
        c.parents[c.parent_count++] = *parent_id;
    if (pl->merge_parent)
        c.parents[c.parent_count++] = pl->merge_id;
    if (pl->pick) {
        c.has_pick = true;
        memcpy(c.pick_branch, pl->pick->source, 16);
        c.pick_change = pl->pick->change;
    }
    c.changeset = s->changeset;
    c.author = s->author;
    c.author_len = s->author_len;
    c.message = s->message;
    c.message_len = s->message_len;
    c.time_ms = (uint64_t)cn__repos_now_ms();
    CN_TRY(cn__ptree_finish(pl->tree, &c.content_root, &c.revision_root));
    CN_TRY(cn_repos_commit_encode(&pl->commit, &c));
    pl->out.outcome = CN_REPOS_ACCEPTED;
    pl->out.change = pl->change;
    cn_repos_object_id(CN_REPOS_COMMIT, pl->commit.data, pl->commit.len, &pl->out.commit);
    return CN_OK;
}

/* cn__ptree_prefetch of the change set's paths (and its moves' sources),
 * each followed by '/', into t, where a statement of txn is a round trip
 * (cn_meta_round_trips): the judge's lookups then find their nodes read. */
static cn_err_t prefetch_paths(cn_meta_txn_t *txn, cn__ptree_t *t, const cn_repos_changeset_t *cs)
{
    if (!cn_meta_round_trips(txn))
        return CN_OK;
    size_t cap = (size_t)cs->count * 2 + 1, n = 0, bytes = 0;
    cn_repos_changeset_iter_t it;
    cn_repos_change_t e;
    cn_repos_changeset_iter(cs, &it);
    while (cn_repos_changeset_next(&it, &e))
        bytes += e.path_len + 1u + (e.kind == CN_REPOS_MOVE ? e.from_len + 1u : 0);
    const uint8_t **keys = calloc(cap, sizeof *keys);
    size_t *lens = calloc(cap, sizeof *lens);
    uint8_t *buf = malloc(bytes + 1), *o = buf;
    cn_err_t err = keys && lens && buf ? CN_OK : -ENOMEM;
    cn_repos_changeset_iter(cs, &it);
    while (err >= 0 && n + 2 <= cap && cn_repos_changeset_next(&it, &e)) {
        for (int side = 0; side < 2; side++) {
            const uint8_t *p = side ? e.from : e.path;
            size_t pn = side ? e.from_len : e.path_len;
            if (side && e.kind != CN_REPOS_MOVE)
                break;
            memcpy(o, p, pn);
            o[pn] = '/';
            keys[n] = o;
            lens[n++] = pn + 1;
            o += pn + 1;
        }
    }
    if (err >= 0)
        err = cn__ptree_prefetch(t, keys, lens, n);
    free(keys);
    free(lens);
    free(buf);
    return err;
}

/* Phase 1's body.  On return either pl->replay (pl->out is the recorded
 * outcome), or pl->out is an outcome to record (accepted with pl->commit, or
 * rejected), or an error. */
static cn_err_t plan_body(cn_meta_txn_t *txn, const cn__repo_t *repo, void *ctx)
{
    plan_t *pl = ctx;
    const cn_repos_submit_t *s = pl->s;
    plan_clear(pl); /* what a run of this body lost with its session left */
    pl->repo = *repo;
    CN_TRY(plan_identity(pl, txn));
    if (pl->replay)
        return CN_OK;
    CN_TRY(plan_branch(pl, txn));
    CN_TRY(plan_changeset(pl, txn));
    cn_digest_t rev, content, parent_id;
    CN_TRY(cn__snapshot_at(txn, s->repo, s->branch, pl->head, &pl->parent, &parent_id, &rev,
                           &content));
    CN_TRY(cn__ptree_open(txn, s->repo, &rev, &pl->tree));
    CN_TRY(prefetch_paths(txn, pl->tree, &pl->cs));
    if (pl->pick)
        CN_TRY(cn__pick_judge(txn, pl->rq, &pl->repo, pl->head, pl->pick, &pl->cs, &pl->out));
    if (pl->out.outcome != CN_REPOS_REJECTED)
        CN_TRY(judge(pl, txn));
    if (pl->out.outcome == CN_REPOS_REJECTED)
        return CN_OK;
    pl->change = pl->repo_head + 1;
    if (pl->merge) {
        CN_TRY(cn__snapshot_root(txn, s->repo, pl->merge->source, pl->merge->source_head, &rev,
                                 &content));
        CN_TRY(cn__ptree_open(txn, s->repo, &rev, &pl->source));
        CN_TRY(prefetch_paths(txn, pl->source, &pl->cs));
    }
    CN_TRY(cn__lineage_plan(&pl->lin, pl->tree, pl->source, &pl->cs));
    CN_TRY(apply(pl, txn));
    return plan_commit(pl, &parent_id);
}

/* Phase 1, in one read transaction, repeated on a lost session
 * (CN_META_RETRY): its body maps the change set and opens the tree into pl,
 * and releases first what an earlier run of it left there. */
static cn_err_t plan(plan_t *pl)
{
    return cn__repo_run(pl->r, pl->rq, pl->s->repo, CN__WRITE, CN_META_RUN_READ | CN_META_RETRY,
                        plan_body, pl);
}

static cn_err_t publish_commit(plan_t *pl)
{
    cn_store_writer_t *w = NULL;
    CN_TRY(cn_store_writer_open(pl->r->store, NULL, (int64_t)pl->commit.len, &w));
    cn_err_t err = cn_store_writer_set_form(w, CN_STORE_RAW);
    if (err >= 0)
        err = cn_store_writer_write(w, pl->commit.data, pl->commit.len);
    if (err < 0) {
        cn_store_writer_abort(w);
        return err;
    }
    return cn_store_writer_publish(w, &pl->commit_blob, NULL);
}

/* One path event of an accepted change set, and its fold row when the
 * path becomes live. */
typedef struct ev_row {
    const uint8_t *p, *from; /* from: a move's source, for its destination's event */
    size_t n, from_len;
    uint8_t event;
    size_t fold_off, fold_len; /* in the folds buffer; fold_len 0: no fold row */
} ev_row_t;

typedef struct ev_rows {
    const plan_t *pl;
    ev_row_t *rows;
    size_t n;
    size_t *born; /* indexes of the rows with a fold row */
    size_t nborn;
    cn_buf_t folds;
} ev_rows_t;

static cn_err_t bind_event(void *ctx, cn_meta_stmt_t *st, int base, size_t i)
{
    const ev_rows_t *ev = ctx;
    const ev_row_t *r = &ev->rows[i];
    const cn_repos_submit_t *s = ev->pl->s;
    return cn_meta_bindf(st, base, r->from ? "bbbiib" : "bbbiin", CN__ARG_ID(s->repo),
                         CN__ARG_ID(s->branch), (const void *)r->p, r->n, (int64_t)ev->pl->change,
                         (int64_t)r->event, (const void *)r->from, r->from_len);
}

static cn_err_t bind_fold(void *ctx, cn_meta_stmt_t *st, int base, size_t i)
{
    const ev_rows_t *ev = ctx;
    const ev_row_t *r = &ev->rows[ev->born[i]];
    const cn_repos_submit_t *s = ev->pl->s;
    return cn_meta_bindf(st, base, "bbbb", CN__ARG_ID(s->repo), CN__ARG_ID(s->branch),
                         (const void *)r->p, r->n, (const void *)(ev->folds.data + r->fold_off),
                         r->fold_len);
}

/* The row of one side of change e (the source of a move when side is 1);
 * a path that stops being live has its fold row deleted (pushed) here. */
static cn_err_t event_row(ev_rows_t *ev, cn_meta_txn_t *txn, const cn_repos_change_t *e, int side,
                          uint8_t *fold)
{
    const cn_repos_submit_t *s = ev->pl->s;
    ev_row_t *r = &ev->rows[ev->n++];
    memset(r, 0, sizeof *r);
    r->p = side ? e->from : e->path;
    r->n = side ? e->from_len : e->path_len;
    r->event = side ? CN_REPOS_DELETE : e->kind;
    if (!side && e->kind == CN_REPOS_MOVE) {
        r->from = e->from;
        r->from_len = e->from_len;
    }
    if (side || e->kind == CN_REPOS_DELETE)
        return cn_meta_pushf(txn, cn__sql_repos[CN_SQL_REPOS_FOLD_DELETE], "bbb",
                             CN__ARG_ID(s->repo), CN__ARG_ID(s->branch), (const void *)r->p, r->n);
    if (e->kind != CN_REPOS_ADD && e->kind != CN_REPOS_MOVE)
        return CN_OK;
    long fn = cn_repos_path_fold(r->p, r->n, fold, CN_REPOS_MAX_PATH);
    if (fn <= 0)
        return CN_E_CORRUPT;
    r->fold_off = ev->folds.len;
    r->fold_len = (size_t)fn;
    ev->born[ev->nborn++] = ev->n - 1;
    return cn_buf_append(&ev->folds, fold, (size_t)fn);
}

/* The change set's path events and fold rows, as multi-row INSERTs (all
 * pushed).  The paths of one change set are distinct, so the fold rows'
 * deletes and inserts touch different rows whatever their order. */
static cn_err_t record_events(plan_t *pl, cn_meta_txn_t *txn)
{
    cn_repos_changeset_iter_t it;
    cn_repos_change_t e;
    size_t cap = (size_t)pl->cs.count * 2 + 1;
    ev_rows_t ev = { .pl = pl };
    ev.rows = calloc(cap, sizeof *ev.rows);
    ev.born = calloc(cap, sizeof *ev.born);
    uint8_t *fold = malloc(CN_REPOS_MAX_PATH);
    cn_err_t err = ev.rows && ev.born && fold ? CN_OK : -ENOMEM;
    cn_repos_changeset_iter(&pl->cs, &it);
    while (err >= 0 && ev.n + 2 <= cap && cn_repos_changeset_next(&it, &e)) {
        err = event_row(&ev, txn, &e, 0, fold);
        if (err >= 0 && e.kind == CN_REPOS_MOVE)
            err = event_row(&ev, txn, &e, 1, fold);
    }
    if (err >= 0)
        err = cn__push_rows(txn, CN_SQL_REPOS_ROWS_EVENT, ev.n, bind_event, &ev);
    if (err >= 0)
        err = cn__push_rows(txn, CN_SQL_REPOS_ROWS_FOLD, ev.nborn, bind_fold, &ev);
    free(fold);
    free(ev.rows);
    free(ev.born);
    cn_buf_free(&ev.folds);
    return err;
}

/* Phase 3's rows of an accepted submit: the new tree nodes, the commit, its
 * membership and path events, and the advanced heads; pushed (cn_meta_pushf)
 * and read before it returns, so its error is its own. */
static cn_err_t record_accepted(plan_t *pl, cn_meta_txn_t *txn)
{
    const cn_repos_submit_t *s = pl->s;
    cn_repos_commit_t c;
    cn__ptree_set_txn(pl->tree, txn);
    cn_err_t err = cn__ptree_store(pl->tree, txn);
    if (err >= 0)
        err = cn_meta_pushf(txn, cn__sql_repos[CN_SQL_REPOS_OBJECT_INSERT_COMMIT], "bbbi",
                            CN__ARG_ID(s->repo), CN__ARG_DIGEST(&pl->out.commit),
                            CN__ARG_DIGEST(&pl->commit_blob), (int64_t)pl->commit.len);
    if (err >= 0)
        err = cn_repos_commit_parse(pl->commit.data, pl->commit.len, &c);
    if (err >= 0)
        err = cn_meta_pushf(
            txn, cn__sql_repos[CN_SQL_REPOS_COMMIT_INSERT], "bibbibbbibbini", CN__ARG_ID(s->repo),
            (int64_t)pl->change, CN__ARG_ID(s->branch), CN__ARG_DIGEST(&pl->out.commit),
            (int64_t)pl->parent, CN__ARG_DIGEST(&s->changeset),
            (const void *)(s->author_len ? s->author : (const uint8_t *)""), (size_t)s->author_len,
            (const void *)(s->message_len ? s->message : (const uint8_t *)""),
            (size_t)s->message_len, (int64_t)c.time_ms, CN__ARG_DIGEST(&c.content_root),
            CN__ARG_DIGEST(&c.revision_root), (int64_t)pl->merge_parent, (int64_t)0);
    if (err >= 0 && pl->pick)
        err = cn_meta_pushf(txn, cn__sql_repos[CN_SQL_REPOS_COMMIT_SET_PICK], "bibi",
                            CN__ARG_ID(pl->pick->source), (int64_t)pl->pick->change,
                            CN__ARG_ID(s->repo), (int64_t)pl->change);
    if (err >= 0)
        err = record_events(pl, txn);
    if (err >= 0)
        err = cn__lineage_store(&pl->lin, txn, s->repo, pl->change);
    if (err >= 0)
        err = cn_meta_pushf(txn, cn__sql_repos[CN_SQL_REPOS_BRANCH_SET_HEAD], "ibb",
                            (int64_t)pl->change, CN__ARG_ID(s->repo), CN__ARG_ID(s->branch));
    if (err >= 0)
        err = cn_meta_pushf(txn, cn__sql_repos[CN_SQL_REPOS_REPO_SET_HEAD], "ib",
                            (int64_t)pl->change, CN__ARG_ID(s->repo));
    /* Every row above was pushed: their answers are read here, so a
     * duplicate key among them is this call's, for raced() to judge. */
    if (err >= 0)
        err = cn_meta_flush(txn);
    return err < 0 ? err : CN_OK;
}

/* err of phase 3's inserts, with a duplicate key taken for the conflict it
 * is on a multi-writer engine.  The commit, event, fold and operation rows
 * are keyed by the change number and operation id this transaction has just
 * checked against the heads; on SQLite (one writer) no other transaction can
 * have inserted them since.  On PostgreSQL another node's submit may have
 * committed the same change number (or the same operation) after this
 * transaction's snapshot was taken, and PostgreSQL reports that as a unique
 * violation (23505, CN_E_EXISTS), not as a serialization failure, since
 * this transaction never read the key.  CN_E_DB_LOCKED has cn_meta_run
 * repeat the body, which then finds the heads moved (or the operation
 * recorded) and plans again or replays. */
static cn_err_t raced(const plan_t *pl, cn_err_t err)
{
    if (err == CN_E_EXISTS && !cn_meta_single_writer(pl->r->meta))
        return CN_E_DB_LOCKED;
    return err;
}

/* Phase 3's body: pl->again when the heads moved since the plan (nothing is
 * written then), else the outcome and, when accepted, its rows. */
static cn_err_t record_body(cn_meta_txn_t *txn, void *ctx)
{
    plan_t *pl = ctx;
    const cn_repos_submit_t *s = pl->s;
    cn__op_t prior;
    cn_err_t err = cn__op_find(txn, s->repo, s->operation, &prior);
    bool found = prior.found;
    cn__op_free(&prior);
    uint64_t head = 0;
    cn__repo_t now;
    memset(&now, 0, sizeof now);
    if (err >= 0 && !found)
        err = cn__branch_head(txn, pl->rq, s->repo, s->branch, &head, NULL, 0);
    if (err >= 0 && !found)
        err = cn__repo_load(pl->r, txn, pl->rq, s->repo, CN__WRITE, &now);
    pl->again = err >= 0 && (found || head != pl->head || now.info.head != pl->repo_head ||
                             memcmp(now.info.incarnation, pl->repo.info.incarnation, 16) != 0);
    /* Heads moved: nothing is written, so the run ends without a commit (and its fsync). */
    if (pl->again)
        cn_meta_discard(txn);
    /* The lock policy judges in the acceptance transaction, and the
     * disposition happens there (service_lock*.c); a rejection and a replay
     * (which never reaches this phase) keep every lock. */
    cn__lock_disposition_t ld = { s->repo, s->workspace, s->keep_locks, cn__repos_now_ms(),
                                  pl->head };
    if (err >= 0 && !pl->again && pl->out.outcome == CN_REPOS_ACCEPTED)
        err = cn__locks_enforce(pl->r, txn, pl->rq, &pl->repo, &ld, s->branch, &pl->cs, &pl->out);
    if (err >= 0 && !pl->again && pl->out.outcome == CN_REPOS_ACCEPTED)
        err = raced(pl, record_accepted(pl, txn));
    if (err >= 0 && !pl->again && pl->out.outcome == CN_REPOS_ACCEPTED)
        err = cn__locks_dispose(txn, &ld, &pl->cs);
    cn_buf_t rec = { 0 };
    if (err >= 0 && !pl->again && (err = outcome_encode(&pl->out, &rec)) >= 0)
        err = raced(pl, cn__op_record(txn, s->repo, s->operation, CN_REPOS_OP_SUBMIT, &pl->fp,
                                      s->workspace, &rec));
    cn_buf_free(&rec);
    /* The intent has its final outcome: its upload pins end here. */
    if (err >= 0 && !pl->again)
        err = cn_meta_execf(txn, cn__sql_repos[CN_SQL_REPOS_PIN_DELETE_INTENT], "bb",
                            CN__ARG_ID(s->repo), CN__ARG_ID(s->operation));
    return err < 0 ? err : CN_OK;
}

/* Phase 3, in one write transaction, repeated while the database is locked. */
static cn_err_t record(plan_t *pl)
{
    return cn_meta_run(pl->r->meta, CN_META_RUN_WRITE | CN_META_RETRY, record_body, pl);
}

static bool zero16(const uint8_t id[16])
{
    for (int i = 0; i < 16; i++)
        if (id[i])
            return false;
    return true;
}

/* Whether a submit whose heads moved under it plans again.  With one
 * writer (SQLite) only this process moves them, and MAX_ATTEMPTS bounds the
 * repeats.  On a shared engine other nodes commit meanwhile, each of them
 * progress, so a loser keeps trying until FLEET_RETRY_MS, pausing a random
 * 1..(2 << min(attempt, 5)) ms with mu released (a local submit to the same
 * repository may go meanwhile). */
static bool again_after_race(cn_repos_t *r, pthread_mutex_t *mu, int attempt, int64_t t0)
{
    if (cn_meta_single_writer(r->meta))
        return attempt + 1 < MAX_ATTEMPTS;
    if (cn_mono_ms() - t0 >= FLEET_RETRY_MS)
        return false;
    uint8_t rnd = 0;
    (void)cn_random_bytes(&rnd, 1);
    int cap = 2 << (attempt < 5 ? attempt : 5);
    pthread_mutex_unlock(mu);
    cn_sleep_ms(1 + rnd % cap);
    pthread_mutex_lock(mu);
    return true;
}

/* A submit, ordinary (merge and pick NULL), a merge's or a cherry-pick's,
 * and its tree counters. */
static cn_err_t submit_run(cn_repos_t *r, cn_repos_req_t *rq, const cn_repos_submit_t *s,
                           const cn_repos_merge_t *merge, const cn_repos_pick_t *pick,
                           cn_repos_outcome_t *out, cn__ptree_stats_t *stats)
{
    memset(out, 0, sizeof *out);
    if (stats)
        memset(stats, 0, sizeof *stats);
    if (zero16(s->operation))
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                         "the operation id must be nonzero");
    if (s->author_len > CN_REPOS_MAX_AUTHOR || s->message_len > CN_REPOS_MAX_MESSAGE ||
        cn_repos_utf8_check(s->author, s->author_len) < 0 ||
        cn_repos_utf8_check(s->message, s->message_len) < 0)
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                         "author and message are UTF-8 of at most 256 and 65,536 bytes");
    /* On an authenticated listener the principal is the author, whatever the
     * request claims (scribe.md 15.6): replaced before the commit is encoded,
     * and outside every fingerprint, so a replay resolves as before. */
    cn_repos_submit_t as;
    if (rq->authed && rq->account) {
        as = *s;
        as.author = (const uint8_t *)rq->account;
        as.author_len = (uint16_t)strnlen(rq->account, CN_REPOS_MAX_AUTHOR);
        s = &as;
    }
    plan_t pl;
    memset(&pl, 0, sizeof pl);
    pl.r = r;
    pl.rq = rq;
    pl.s = s;
    pl.merge = merge;
    pl.pick = pick;
    if (merge)
        cn_repos_merge_fp(merge, &pl.fp);
    else if (pick)
        cn_repos_pick_fp(pick, &pl.fp);
    else
        cn_repos_submit_fp(s, &pl.fp);
    pthread_mutex_t *mu = &r->repo_mu[s->repo[0] % CN__REPO_LOCKS];
    pthread_mutex_lock(mu);
    int64_t t0 = cn_mono_ms();
    cn_err_t err = CN_OK;
    cn__ptree_stats_t st = { 0, 0 };
    for (int attempt = 0;; attempt++) {
        plan_clear(&pl);
        if ((err = plan(&pl)) < 0 || pl.replay)
            break;
        if (pl.tree)
            cn__ptree_stats(pl.tree, &st);
        if (pl.out.outcome == CN_REPOS_ACCEPTED && (err = publish_commit(&pl)) < 0)
            break;
        if ((err = record(&pl)) < 0 || !pl.again)
            break;
        if (!again_after_race(r, mu, attempt, t0)) {
            err = cn__rfail(rq, CN_E_BUSY, CN_REPOS_E_BUSY, "the branch kept moving; submit again");
            break;
        }
    }
    pthread_mutex_unlock(mu);
    if (stats)
        *stats = st;
    if (err >= 0) {
        *out = pl.out;
        memset(&pl.out, 0, sizeof pl.out);
    }
    plan_clear(&pl);
    return err;
}

cn_err_t cn__repos_submit_stats(cn_repos_t *r, cn_repos_req_t *rq, const cn_repos_submit_t *s,
                                cn_repos_outcome_t *out, cn__ptree_stats_t *stats)
{
    return submit_run(r, rq, s, NULL, NULL, out, stats);
}

cn_err_t cn_repos_merge_submit(cn_repos_t *r, cn_repos_req_t *rq, const cn_repos_merge_t *m,
                               cn_repos_outcome_t *out)
{
    memset(out, 0, sizeof *out);
    if (memcmp(m->source, m->submit.branch, 16) == 0 || m->base > m->source_head ||
        m->base > m->submit.base)
        return cn__rfail(rq, CN_E_INVALID, CN_REPOS_E_MALFORMED,
                         "a merge's source is another branch, and its base is at most both heads");
    return submit_run(r, rq, &m->submit, m, NULL, out, NULL);
}

cn_err_t cn_repos_submit(cn_repos_t *r, cn_repos_req_t *rq, const cn_repos_submit_t *s,
                         cn_repos_outcome_t *out)
{
    return submit_run(r, rq, s, NULL, NULL, out, NULL);
}

cn_err_t cn_repos_pick_submit(cn_repos_t *r, cn_repos_req_t *rq, const cn_repos_pick_t *p,
                              cn_repos_outcome_t *out)
{
    return submit_run(r, rq, &p->submit, NULL, p, out, NULL);
}
