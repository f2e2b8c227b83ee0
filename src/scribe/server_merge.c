/* The Scribe merge operations (docs/protocol/scribe.md 7.9): merge_submit
 * (24) and merge_read (25) tags 1 (chains), 2 (file states), 3
 * (descendants), 4 (origins), 5 (unchanged) and 6 (merge base).  Each
 * decodes its payload, calls ONE repos service function and encodes the
 * answer; none decides history itself. */
#include "server_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- merge_submit (24) ------------------------------------------------------------------- */
static cn_err_t op_merge_submit(cn__scribe_call_t *k)
{
    cn_scribe_merge_submit_req_t q;
    if (cn_scribe_dec_merge_submit_req(k->payload, k->len, k->sc->codec, &q) < 0)
        return cn__scribe_malformed(k);
    cn_repos_merge_t m;
    memset(&m, 0, sizeof m);
    cn__scribe_submit_view(&q.submit, &m.submit);
    memcpy(m.source, q.source.b, 16);
    m.source_head = q.source_head;
    memcpy(m.base_branch, q.base_branch.b, 16);
    m.base = q.base;
    cn_repos_outcome_t o;
    cn_err_t err = cn_repos_merge_submit(k->sc->srv->repos, &k->rq, &m, &o);
    return err < 0 ? cn__scribe_fail(k, err) : cn__scribe_reply_outcome(k, &o);
}

/* ---- merge_read (25) --------------------------------------------------------------------- */
/* The decoded path list of q as service views (*out: count of them, the
 * caller frees it). */
static cn_err_t path_views(const cn_scribe_merge_read_req_t *q, cn_repos_pathv_t **out)
{
    cn_repos_pathv_t *v = calloc(q->count ? q->count : 1, sizeof *v);
    if (!v)
        return -ENOMEM;
    cn_scribe_rows_t it = q->paths;
    cn_scribe_str_t s;
    for (uint32_t i = 0; i < q->count && cn_scribe_next_path(&it, &s); i++)
        v[i] = (cn_repos_pathv_t){ s.p, s.len };
    *out = v;
    return CN_OK;
}

static cn_err_t reply_out(cn__scribe_call_t *k, cn_err_t enc)
{
    return enc < 0 ? enc : cn__scribe_reply(k, 0);
}

/* Tag 1: the paths are collected in an arena (offsets while it grows). */
typedef struct chains_acc {
    cn_buf_t arena;
    size_t off[CN_REPOS_MERGE_PATHS_MAX];
    uint32_t len[CN_REPOS_MERGE_PATHS_MAX];
    uint32_t n;
} chains_acc_t;

static cn_err_t chains_path(void *ctx, const uint8_t *p, size_t n)
{
    chains_acc_t *a = ctx;
    if (a->n == CN_REPOS_MERGE_PATHS_MAX)
        return CN_E_LIMIT;
    a->off[a->n] = a->arena.len;
    a->len[a->n++] = (uint32_t)n;
    return cn_buf_append(&a->arena, p, n);
}

static cn_err_t mr_chains(cn__scribe_call_t *k, const cn_scribe_merge_read_req_t *q)
{
    chains_acc_t *a = calloc(1, sizeof *a);
    cn_scribe_str_t *paths = calloc(CN_REPOS_MERGE_PATHS_MAX, sizeof *paths);
    if (!a || !paths) {
        free(a);
        free(paths);
        return -ENOMEM;
    }
    cn_buf_t next = { 0 };
    uint64_t left = q->left, right = q->right;
    bool has = false;
    cn_err_t err = cn_repos_merge_chains(k->sc->srv->repos, &k->rq, q->repo.b, &left, &right,
                                         q->has_cursor ? q->cursor.p : NULL, q->cursor.len, &next,
                                         &has, chains_path, a);
    if (err < 0) {
        err = cn__scribe_fail(k, err);
    } else {
        for (uint32_t i = 0; i < a->n; i++)
            paths[i] = (cn_scribe_str_t){ a->arena.data + a->off[i], a->len[i] };
        cn_scribe_str_t cursor = { next.data, (uint32_t)next.len };
        cn_buf_reset(&k->sc->out);
        err = reply_out(k, cn_scribe_enc_merge_chains_resp(&k->sc->out, k->sc->codec, left, right,
                                                           has, cursor, paths, a->n));
    }
    cn_buf_free(&a->arena);
    free(a);
    free(paths);
    cn_buf_free(&next);
    return err;
}

static cn_err_t mr_states(cn__scribe_call_t *k, const cn_scribe_merge_read_req_t *q,
                          const cn_repos_pathv_t *pv)
{
    bool *present = calloc(q->count ? q->count : 1, sizeof *present);
    cn_repos_entry_t *e = calloc(q->count ? q->count : 1, sizeof *e);
    cn_scribe_file_state_t *st = calloc(q->count ? q->count : 1, sizeof *st);
    const cn_scribe_file_state_t **ptrs = calloc(q->count ? q->count : 1, sizeof *ptrs);
    cn_err_t err = present && e && st && ptrs ? CN_OK : -ENOMEM;
    if (err >= 0 && (err = cn_repos_file_states(k->sc->srv->repos, &k->rq, q->repo.b, q->branch.b,
                                                q->revision, pv, q->count, present, e)) < 0) {
        err = cn__scribe_fail(k, err);
    } else if (err >= 0) {
        for (uint32_t i = 0; i < q->count; i++) {
            if (!present[i])
                continue;
            st[i].kind =
                e[i].state == CN_REPOS_LIVE ? CN_SCRIBE_FILE_LIVE : CN_SCRIBE_FILE_TOMBSTONE;
            st[i].change = e[i].change;
            st[i].manifest = e[i].manifest;
            st[i].size = e[i].size;
            st[i].mode = e[i].mode;
            ptrs[i] = &st[i];
        }
        cn_buf_reset(&k->sc->out);
        err = reply_out(k,
                        cn_scribe_enc_merge_states_resp(&k->sc->out, k->sc->codec, ptrs, q->count));
    }
    free(present);
    free(e);
    free(st);
    free(ptrs);
    return err;
}

static cn_err_t mr_unchanged(cn__scribe_call_t *k, const cn_scribe_merge_read_req_t *q,
                             const cn_repos_pathv_t *pv)
{
    bool same = false;
    cn_err_t err = cn_repos_paths_unchanged(k->sc->srv->repos, &k->rq, q->repo.b, q->branch.b,
                                            q->from, q->to, pv, q->count, &same);
    if (err < 0)
        return cn__scribe_fail(k, err);
    cn_buf_reset(&k->sc->out);
    return reply_out(k, cn_scribe_enc_merge_unchanged_resp(&k->sc->out, k->sc->codec, same));
}

static cn_err_t mr_origins(cn__scribe_call_t *k, const cn_scribe_merge_read_req_t *q,
                           const cn_repos_pathv_t *pv)
{
    cn_repos_origin_t *o = calloc(q->count ? q->count : 1, sizeof *o);
    cn_scribe_origin_t *v = calloc(q->count ? q->count : 1, sizeof *v);
    if (!o || !v) {
        free(o);
        free(v);
        return -ENOMEM;
    }
    cn_buf_t arena = { 0 };
    cn_err_t err =
        cn_repos_merge_origins(k->sc->srv->repos, &k->rq, q->repo.b, q->branch.b, q->revision,
                               q->other.b, q->other_revision, pv, q->count, o, &arena);
    if (err < 0) {
        err = cn__scribe_fail(k, err);
    } else {
        for (uint32_t i = 0; i < q->count; i++) {
            v[i].kind = o[i].kind;
            if (o[i].kind == CN_REPOS_ORIGIN_UNIQUE)
                v[i].base_path = (cn_scribe_str_t){ arena.data + o[i].off, (uint32_t)o[i].len };
        }
        cn_buf_reset(&k->sc->out);
        err =
            reply_out(k, cn_scribe_enc_merge_origins_resp(&k->sc->out, k->sc->codec, v, q->count));
    }
    cn_buf_free(&arena);
    free(o);
    free(v);
    return err;
}

static cn_err_t mr_base(cn__scribe_call_t *k, const cn_scribe_merge_read_req_t *q)
{
    cn_scribe_id_t branch;
    uint64_t base = 0;
    cn_err_t err =
        cn_repos_find_merge_base(k->sc->srv->repos, &k->rq, q->repo.b, q->branch.b, q->revision,
                                 q->other.b, q->other_revision, branch.b, &base);
    if (err < 0)
        return cn__scribe_fail(k, err);
    cn_buf_reset(&k->sc->out);
    return reply_out(k, cn_scribe_enc_merge_base_resp(&k->sc->out, k->sc->codec, &branch, base));
}

/* Tag 3: the entries are collected in an arena (offsets while it grows). */
typedef struct desc_acc {
    cn_buf_t arena;
    cn_scribe_path_state_t *rows;
    uint32_t n;
} desc_acc_t;

static cn_err_t desc_entry(void *ctx, const uint8_t *p, size_t n, const cn_repos_entry_t *e)
{
    desc_acc_t *a = ctx;
    if (a->n == CN_REPOS_DESCENDANTS_MAX)
        return CN_E_CORRUPT; /* the service's bound: never more */
    cn_scribe_path_state_t *r = &a->rows[a->n++];
    memset(r, 0, sizeof *r);
    r->path = (cn_scribe_str_t){ (const uint8_t *)(uintptr_t)a->arena.len, (uint32_t)n };
    r->state.kind = e->state == CN_REPOS_LIVE ? CN_SCRIBE_FILE_LIVE : CN_SCRIBE_FILE_TOMBSTONE;
    r->state.change = e->change;
    r->state.manifest = e->manifest;
    r->state.size = e->size;
    r->state.mode = e->mode;
    return cn_buf_append(&a->arena, p, n);
}

static cn_err_t mr_descendants(cn__scribe_call_t *k, const cn_scribe_merge_read_req_t *q)
{
    desc_acc_t a = { { 0 }, calloc(CN_REPOS_DESCENDANTS_MAX, sizeof *a.rows), 0 };
    if (!a.rows)
        return -ENOMEM;
    cn_buf_t next = { 0 };
    bool has = false;
    cn_err_t err = cn_repos_descendants(
        k->sc->srv->repos, &k->rq, q->repo.b, q->branch.b, q->revision, q->path.p, q->path.len,
        q->has_cursor ? q->cursor.p : NULL, q->cursor.len, desc_entry, &a, &next, &has);
    if (err < 0) {
        err = cn__scribe_fail(k, err);
    } else {
        for (uint32_t i = 0; i < a.n; i++)
            a.rows[i].path.p = a.arena.data + (uintptr_t)a.rows[i].path.p;
        cn_scribe_str_t cursor = { next.data, (uint32_t)next.len };
        cn_buf_reset(&k->sc->out);
        err = reply_out(k, cn_scribe_enc_merge_descendants_resp(&k->sc->out, k->sc->codec, has,
                                                                cursor, a.rows, a.n));
    }
    cn_buf_free(&a.arena);
    cn_buf_free(&next);
    free(a.rows);
    return err;
}

static cn_err_t op_merge_read(cn__scribe_call_t *k)
{
    cn_scribe_merge_read_req_t q;
    if (cn_scribe_dec_merge_read_req(k->payload, k->len, k->sc->codec, &q) < 0)
        return cn__scribe_malformed(k);
    if (q.tag == CN_SCRIBE_MR_CHAINS)
        return mr_chains(k, &q);
    if (q.tag == CN_SCRIBE_MR_BASE)
        return mr_base(k, &q);
    if (q.tag == CN_SCRIBE_MR_DESCENDANTS)
        return mr_descendants(k, &q);
    cn_repos_pathv_t *pv = NULL;
    CN_TRY(path_views(&q, &pv));
    cn_err_t err = q.tag == CN_SCRIBE_MR_STATES    ? mr_states(k, &q, pv)
                   : q.tag == CN_SCRIBE_MR_ORIGINS ? mr_origins(k, &q, pv)
                                                   : mr_unchanged(k, &q, pv);
    free(pv);
    return err;
}

cn_err_t cn__scribe_op_merge(cn__scribe_call_t *k)
{
    if (k->hdr.opcode == CN_SCRIBE_OP_MERGE_SUBMIT)
        return op_merge_submit(k);
    return op_merge_read(k);
}
