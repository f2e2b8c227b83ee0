/* The apply step of a merge (workspace_merge.h, invariants 1-2 of
 * workspace_merge.c): ours copied aside for conflicts, the source's
 * one-sided changes fetched into the workspace, theirs and base fetched
 * under DIR/.cairn/merge, small texts changed on both sides merged by
 * lines.  Every step can run again after a crash with the same result. */
#include "workspace_merge.h"
#include "merge3.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Side 't' (theirs) or 'b' (base) of m->paths[idx[0..n)] fetched into root
 * (the workspace itself, or a directory under .cairn/merge). */
static cn_err_t fetch_side(cn_scribe_client_t *cl, const cn__ws_state_t *s, const char *root,
                           cn_ws_merge_t *m, char which, const size_t *idx, size_t n,
                           const cn_ws_opts_t *o, cn_ws_error_t *err)
{
    if (!n)
        return CN_OK;
    if (cn_mkdir_p(root, 0755) < 0)
        return cn__ws_file_fail(err, "cannot create", root, errno);
    cn__ws_state_t *t = calloc(1, sizeof *t);
    cn__ws_file_t *recs = calloc(n, sizeof *recs);
    cn__ws_job_t *jobs = calloc(n, sizeof *jobs);
    cn_err_t rc = CN_OK;
    if (!t || !recs || !jobs) {
        rc = cn__ws_file_fail(err, "out of memory for", s->dir, ENOMEM);
        goto out;
    }
    snprintf(t->dir, sizeof t->dir, "%s", root);
    memcpy(t->repo_id, s->repo_id, 16);
    for (size_t k = 0; k < n; k++) {
        const cn_ws_merge_path_t *p = &m->paths[idx[k]];
        const cn_ws_merge_side_t *side = which == 't' ? &p->theirs : &p->base;
        recs[k].path = p->path; /* borrowed: t is never freed through cn__ws_state_free */
        recs[k].mode = side->mode;
        recs[k].manifest = side->manifest;
        jobs[k].w = &recs[k];
    }
    uint64_t bytes = 0;
    rc = cn__ws_fetch_all(cl, t, jobs, n, &bytes, o, err);
    for (size_t k = 0; k < n; k++)
        cn_buf_free(&jobs[k].menc);
out:
    free(jobs);
    free(recs);
    free(t);
    return rc;
}

static cn_err_t read_all(const char *path, cn_buf_t *b, cn_ws_error_t *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return cn__ws_file_fail(err, "cannot read", path, e);
    }
    cn_err_t e = cn_buf_reserve(b, (size_t)st.st_size + 1);
    long long got = e >= 0 ? cn_read_full(fd, b->data, (size_t)st.st_size) : -1;
    close(fd);
    if (got < 0)
        return cn__ws_file_fail(err, "cannot read", path, e < 0 ? -e : EIO);
    b->len = (size_t)got;
    return CN_OK;
}

/* Merges one path by lines from its copies, or leaves it a binary conflict. */
static cn_err_t merge_lines(const cn__ws_state_t *s, const cn_ws_merge_t *m, cn_ws_merge_path_t *p,
                            cn_ws_error_t *err)
{
    char bp[8700], op[8700], tp[8700], full[8600];
    cn__ws_merge_side_path(s->dir, "base", p->path, bp, sizeof bp);
    cn__ws_merge_side_path(s->dir, "ours", p->path, op, sizeof op);
    cn__ws_merge_side_path(s->dir, "theirs", p->path, tp, sizeof tp);
    snprintf(full, sizeof full, "%s/%s", s->dir, p->path);
    cn_buf_t b = { 0 }, ours = { 0 }, theirs = { 0 }, out = { 0 };
    cn_err_t rc;
    if ((p->base.live && (rc = read_all(bp, &b, err))) || (rc = read_all(op, &ours, err)) ||
        (rc = read_all(tp, &theirs, err)))
        goto out;
    if (!cn__merge3_is_text(b.data, b.len) || !cn__merge3_is_text(ours.data, ours.len) ||
        !cn__merge3_is_text(theirs.data, theirs.len)) {
        p->why = CN_WS_WHY_BINARY;
        goto out;
    }
    size_t conflicts = 0;
    char ol[300], tl[300];
    snprintf(ol, sizeof ol, "ours (%s)", m->target_name);
    snprintf(tl, sizeof tl, "theirs (%s)", m->source_name);
    if ((rc = cn__merge3(b.data, b.len, ours.data, ours.len, theirs.data, theirs.len, ol, tl, &out,
                         &conflicts)) < 0) {
        rc = cn__ws_file_fail(err, "out of memory merging", full, ENOMEM);
        goto out;
    }
    rc = cn__ws_write_file(full, out.data, out.len,
                           p->ours.mode == CN_REPOS_MODE_EXEC ? 0755 : 0644, err);
    if (rc == CN_OK && !conflicts)
        p->state = CN_WS_MERGE_LINES, p->why = 0;
out:
    cn_buf_free(&b);
    cn_buf_free(&ours);
    cn_buf_free(&theirs);
    cn_buf_free(&out);
    return rc;
}

/* Step 1: ours of every conflict copied aside, once (a copy that exists
 * was taken before the workspace file changed). */
static cn_err_t save_ours(const cn__ws_state_t *s, const cn_ws_merge_t *m, cn_ws_error_t *err)
{
    for (size_t i = 0; i < m->n; i++) {
        const cn_ws_merge_path_t *p = &m->paths[i];
        if (p->state != CN_WS_MERGE_CONFLICT || !p->ours.live)
            continue;
        char copy[8700], full[8600];
        struct stat st;
        cn__ws_merge_side_path(s->dir, "ours", p->path, copy, sizeof copy);
        snprintf(full, sizeof full, "%s/%s", s->dir, p->path);
        if (lstat(copy, &st) < 0)
            CN_TRY(cn__ws_copy_file(full, copy, err));
    }
    return CN_OK;
}

cn_err_t cn__ws_merge_apply(cn_scribe_client_t *cl, cn__ws_state_t *s, cn_ws_merge_t *m,
                            const cn_ws_opts_t *o, cn_ws_error_t *err)
{
    size_t *take = malloc((m->n + 1) * sizeof *take), *conf = malloc((m->n + 1) * sizeof *conf);
    size_t *base = malloc((m->n + 1) * sizeof *base), nt = 0, nc = 0, nb = 0;
    /* theirs' moves first: ours' file must be at its new path before it is
     * copied aside or merged there */
    cn_err_t rc = !take || !conf || !base
                      ? cn__ws_file_fail(err, "out of memory for", s->dir, ENOMEM)
                      : cn__ws_merge_move_files(s, m, err);
    if (rc == CN_OK)
        rc = save_ours(s, m, err);
    for (size_t i = 0; rc == CN_OK && i < m->n; i++) {
        cn_ws_merge_path_t *p = &m->paths[i];
        char full[8600];
        snprintf(full, sizeof full, "%s/%s", s->dir, p->path);
        if (p->state == CN_WS_MERGE_THEIRS && p->theirs.live)
            take[nt++] = i;
        else if (p->state == CN_WS_MERGE_THEIRS && unlink(full) < 0 && errno != ENOENT)
            rc = cn__ws_file_fail(err, "cannot remove", full, errno);
        if (p->state == CN_WS_MERGE_CONFLICT && p->theirs.live)
            conf[nc++] = i;
        if (p->state == CN_WS_MERGE_CONFLICT && p->base.live)
            base[nb++] = i;
    }
    char root[4300];
    snprintf(root, sizeof root, "%s/.cairn/merge/theirs", s->dir);
    if (rc == CN_OK && (rc = fetch_side(cl, s, s->dir, m, 't', take, nt, o, err)) == CN_OK &&
        (rc = fetch_side(cl, s, root, m, 't', conf, nc, o, err)) == CN_OK) {
        snprintf(root, sizeof root, "%s/.cairn/merge/base", s->dir);
        rc = fetch_side(cl, s, root, m, 'b', base, nb, o, err);
    }
    for (size_t i = 0; rc == CN_OK && i < m->n; i++)
        if (m->paths[i].state == CN_WS_MERGE_CONFLICT && m->paths[i].why == CN_WS_WHY_LINES)
            rc = merge_lines(s, m, &m->paths[i], err);
    if (rc == CN_OK) {
        m->applying = false;
        rc = cn__ws_merge_save(s->dir, m, err);
    }
    free(take);
    free(conf);
    free(base);
    return rc;
}
