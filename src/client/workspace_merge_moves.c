/* Renames in a merge (docs/branches.md, "Clean paths and conflicts"): a
 * file one side moved is lined up with its base file through recorded
 * lineage only (MergeRead 4, origin kind 1), never by name or content.
 *
 *   theirs moved a -> b:  b's base is a's base and b's ours is a's ours, so
 *                         an edit ours made to a merges into b; the apply
 *                         moves ours' file from a to b in the workspace and
 *                         records the move, so the merge submits one.
 *   ours moved a -> c:    the source's change to a is merged into c (a new
 *                         merge path c with a's base and theirs).
 *   both moved, to b and c: a conflict at b (CN_WS_WHY_MOVED); ours stays
 *                         at c until resolved.
 *   one moved, the other deleted: a conflict (CN_WS_WHY_DELETED).
 *
 * It never lines up a path whose origin is ambiguous, and never a file the
 * other side also holds under the new name (that stays an ordinary path). */
#include "workspace_merge.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The target's paths changed since the base that the merge does not hold
 * yet; collected by the MergeRead 1 walk. */
typedef struct cands {
    const cn_ws_merge_t *m;
    char **v;
    size_t n, cap;
} cands_t;

static int add_cand(void *ctx, const char *path)
{
    cands_t *c = ctx;
    if (cn__ws_merge_find((cn_ws_merge_t *)c->m, path))
        return 0;
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        char **v = realloc(c->v, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        c->v = v;
        c->cap = cap;
    }
    return (c->v[c->n] = strdup(path)) ? (c->n++, 0) : -ENOMEM;
}

static void cands_free(cands_t *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->v[i]);
    free(c->v);
}

/* Whether m holds a path with base live and ours gone: a file ours may
 * have moved away. */
static bool has_orphans(const cn_ws_merge_t *m)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->paths[i].base.live && !m->paths[i].ours.live)
            return true;
    return false;
}

/* dest[i] (malloc'd, or NULL): where ours moved m->paths[i] since the base,
 * by the target's recorded lineage; *ours_of[i] that file's state in ours. */
static cn_err_t ours_moves(cn_scribe_client_t *cl, const cn__ws_state_t *s, const cn_ws_merge_t *m,
                           char **dest, cn_scribe_client_fstate_t *ours_of, cn_ws_error_t *err)
{
    if (m->base == 0 || !has_orphans(m))
        return CN_OK;
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    cands_t c = { .m = m };
    cn_scribe_client_origin_t *og = NULL;
    cn_scribe_client_fstate_t *fs = NULL;
    cn_err_t e =
        cn_scribe_client_merge_chains(cl, s->repo_id, m->base, m->target_head, add_cand, &c, &serr);
    cn_err_t rc = e < 0 ? cn__ws_fail(err, "paths the target changed", e, &serr) : CN_OK;
    if (rc == CN_OK && c.n) {
        og = calloc(c.n, sizeof *og);
        fs = calloc(c.n, sizeof *fs);
        if (!og || !fs)
            rc = cn__ws_file_fail(err, "out of memory for", s->dir, ENOMEM);
        else if ((e = cn_scribe_client_merge_origins(
                      cl, s->repo_id, s->branch, m->target_head, m->base_branch, m->base,
                      (const char *const *)c.v, c.n, og, &serr)) < 0 ||
                 (e = cn_scribe_client_merge_states(cl, s->repo_id, s->branch, m->target_head,
                                                    (const char *const *)c.v, c.n, fs, &serr)) < 0)
            rc = cn__ws_fail(err, "reading the target's moves", e, &serr);
    }
    for (size_t k = 0; rc == CN_OK && k < c.n; k++) {
        if (og[k].kind != CN_SCRIBE_CLIENT_ORIGIN_UNIQUE || !fs[k].live ||
            !strcmp(og[k].base_path, c.v[k]))
            continue;
        cn_ws_merge_path_t *a = cn__ws_merge_find((cn_ws_merge_t *)m, og[k].base_path);
        if (!a || !a->base.live || a->ours.live)
            continue;
        size_t i = (size_t)(a - m->paths);
        if (dest[i]) { /* two files from one: no single move to line up */
            free(dest[i]);
            dest[i] = NULL;
            continue;
        }
        dest[i] = c.v[k];
        c.v[k] = NULL;
        ours_of[i] = fs[k];
    }
    for (size_t k = 0; og && k < c.n; k++)
        free(og[k].base_path);
    for (size_t k = 0; k < c.n; k++)
        free(c.v[k]);
    c.n = 0;
    cands_free(&c);
    free(og);
    free(fs);
    return rc;
}

static cn_err_t set_str(char **dst, const char *v, const cn__ws_state_t *s, cn_ws_error_t *err)
{
    free(*dst);
    return (*dst = strdup(v)) ? CN_OK : cn__ws_file_fail(err, "out of memory for", s->dir, ENOMEM);
}

/* A new merge path c (ours' destination of a): the file's three states. */
static cn_err_t add_ours_dest(cn_ws_merge_t *m, size_t ai, const char *c,
                              const cn_scribe_client_fstate_t *ours, bool kept_only,
                              const cn__ws_state_t *s, cn_ws_error_t *err)
{
    cn_ws_merge_path_t a = m->paths[ai]; /* copied: the add may move the array */
    cn_ws_merge_path_t *p = cn__ws_merge_add(m, c);
    if (!p)
        return cn__ws_file_fail(err, "out of memory for", s->dir, ENOMEM);
    p->ours.live = ours->live;
    p->ours.change = ours->change;
    p->ours.size = ours->size, p->ours.mode = ours->mode, p->ours.manifest = ours->manifest;
    if (kept_only) { /* restored by --abort, named KEEP by the submit */
        p->base = p->theirs = p->ours;
        p->state = CN_WS_MERGE_KEPT;
        return CN_OK;
    }
    p->base = a.base;
    p->theirs = a.theirs;
    return set_str(&p->from, a.path, s, err);
}

static int merge_path_cmp(const void *x, const void *y)
{
    return strcmp(((const cn_ws_merge_path_t *)x)->path, ((const cn_ws_merge_path_t *)y)->path);
}

/* Lines theirs' move a -> b (m->paths[bi], origin a) up with ours' file. */
static cn_err_t line_up_theirs(cn_ws_merge_t *m, size_t bi, cn_ws_merge_path_t *a,
                               char *const *dest, const cn__ws_state_t *s, cn_ws_error_t *err)
{
    cn_ws_merge_path_t *b = &m->paths[bi];
    const char *ours_dest = dest[a - m->paths];
    if (b->ours.live && a->ours.live)
        return CN_OK; /* ours holds another file at b: an ordinary path */
    CN_TRY(set_str(&b->from, a->path, s, err));
    b->base = a->base;
    a->state = CN_WS_MERGE_KEPT; /* its removal travels with the move */
    if (ours_dest && strcmp(ours_dest, b->path)) {
        b->state = CN_WS_MERGE_CONFLICT, b->why = CN_WS_WHY_MOVED;
        return set_str(&b->other, ours_dest, s, err);
    }
    if (!b->ours.live)
        b->ours = a->ours;
    if (!b->ours.live || !b->theirs.live)
        b->state = CN_WS_MERGE_CONFLICT, b->why = CN_WS_WHY_DELETED; /* moved vs deleted */
    return CN_OK;
}

cn_err_t cn__ws_merge_line_up(cn_scribe_client_t *cl, const cn__ws_state_t *s, cn_ws_merge_t *m,
                              const cn_scribe_client_origin_t *og, cn_ws_error_t *err)
{
    size_t n = m->n;
    char **dest = calloc(n + 1, sizeof *dest);
    cn_scribe_client_fstate_t *ours_of = calloc(n + 1, sizeof *ours_of);
    bool *taken = calloc(n + 1, sizeof *taken);
    cn_err_t rc = dest && ours_of && taken
                      ? ours_moves(cl, s, m, dest, ours_of, err)
                      : cn__ws_file_fail(err, "out of memory for", s->dir, ENOMEM);
    for (size_t i = 0; rc == CN_OK && i < n; i++) {
        cn_ws_merge_path_t *b = &m->paths[i];
        if (og[i].kind != CN_SCRIBE_CLIENT_ORIGIN_UNIQUE || !b->theirs.live || b->base.live ||
            b->state || !strcmp(og[i].base_path, b->path))
            continue;
        cn_ws_merge_path_t *a = cn__ws_merge_find(m, og[i].base_path);
        if (!a || !a->base.live || a->theirs.live || a->from)
            continue;
        taken[a - m->paths] = dest[a - m->paths] != NULL;
        rc = line_up_theirs(m, i, a, dest, s, err);
    }
    for (size_t i = 0; rc == CN_OK && i < n; i++) {
        if (!dest[i] || m->paths[i].from)
            continue;
        if (!taken[i] && m->paths[i].state) /* decided already (several origins) */
            continue;
        rc = add_ours_dest(m, i, dest[i], &ours_of[i], taken[i], s, err);
        if (rc == CN_OK && !taken[i]) {
            cn_ws_merge_path_t *c = &m->paths[m->n - 1], *a = &m->paths[i];
            a->state = CN_WS_MERGE_KEPT; /* ours' move stands */
            if (!c->ours.live || !c->theirs.live)
                c->state = CN_WS_MERGE_CONFLICT, c->why = CN_WS_WHY_DELETED;
        }
    }
    if (m->n > n)
        qsort(m->paths, m->n, sizeof *m->paths, merge_path_cmp);
    for (size_t i = 0; dest && i < n; i++)
        free(dest[i]);
    free(dest);
    free(ours_of);
    free(taken);
    return rc;
}

cn_err_t cn__ws_merge_move_files(cn__ws_state_t *s, const cn_ws_merge_t *m, cn_ws_error_t *err)
{
    bool moved = false;
    for (size_t i = 0; i < m->n; i++) {
        const cn_ws_merge_path_t *p = &m->paths[i];
        if (!p->from || p->why == CN_WS_WHY_MOVED || !cn__ws_state_find(s, p->from, s->n) ||
            cn__ws_state_find(s, p->path, s->n))
            continue; /* not theirs' move of a file ours holds */
        char src[8600], dst[8600];
        struct stat st;
        snprintf(src, sizeof src, "%s/%s", s->dir, p->from);
        snprintf(dst, sizeof dst, "%s/%s", s->dir, p->path);
        if (lstat(dst, &st) < 0) { /* not moved yet (this step may run again) */
            char *slash = strrchr(dst, '/');
            *slash = 0;
            cn_err_t e = cn_mkdir_p(dst, 0755);
            *slash = '/';
            if (e < 0)
                return cn__ws_file_fail(err, "cannot create the directory of", dst, -e);
            if (rename(src, dst) < 0)
                return cn__ws_file_fail(err, "cannot move", src, errno);
        }
        if (!cn__ws_move_to(s, p->path) && cn__ws_move_add(s, p->from, p->path) < 0)
            return cn__ws_file_fail(err, "out of memory for", s->dir, ENOMEM);
        moved = true;
    }
    return moved ? cn__ws_state_save(s, err) : CN_OK;
}
