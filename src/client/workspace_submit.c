/* cn_ws_submit (include/cairn/workspace.h): every change in a workspace
 * submitted as one change.
 *
 * Changed files are split by content-defined chunking; every identity
 * (chunks, manifests, the change set) is pinned under a new operation id
 * that is saved in the state before anything names it; only the objects the
 * server lacks are uploaded, in dependency order; then one submit.  A lost
 * reply is settled through operation_outcome by the next submit or sync
 * (cn__ws_settle_pending), never by submitting twice.  The state records
 * the new change only after the server accepted it. */
#include "workspace_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int ref_cmp(const void *a, const void *b)
{
    const cn_scribe_client_obj_t *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    return memcmp(x->id.b, y->id.b, 32);
}

/* One submit's working set; submit_free releases it. */
typedef struct {
    cn__ws_content_t *cont; /* by index of the state's files when the submit began */
    size_t ncont;
    cn_repos_change_t *changes; /* one per changed path */
    size_t nch;
    size_t total_chunks;
    cn_buf_t csenc; /* the change set, encoded */
    cn_digest_t csid;
    cn_scribe_client_obj_t *objs; /* every identity, in dependency order, no repeats */
    size_t nobj;
    size_t send; /* objs[0..send) are those the server lacked */
    uint64_t send_bytes;
} submit_t;

static void submit_free(submit_t *sb)
{
    if (sb->cont)
        for (size_t i = 0; i < sb->ncont; i++)
            cn__ws_content_free(&sb->cont[i]);
    free(sb->cont);
    free(sb->changes);
    free(sb->objs);
    cn_buf_free(&sb->csenc);
}

static int change_cmp(const void *a, const void *b)
{
    const cn_repos_change_t *x = a, *y = b;
    int c = memcmp(x->path, y->path, x->path_len < y->path_len ? x->path_len : y->path_len);
    return c ? c : (int)x->path_len - (int)y->path_len;
}

/* Whether a move among changes[0..n) leaves from path p. */
static bool move_source(const cn_repos_change_t *changes, size_t n, const char *p)
{
    size_t len = strlen(p);
    for (size_t i = 0; i < n; i++)
        if (changes[i].kind == CN_REPOS_MOVE && changes[i].from_len == len &&
            !memcmp(changes[i].from, p, len))
            return true;
    return false;
}

/* A merge's keep entries: each path of merge->keep the changes do not name
 * yet (as a destination or a move's source), then every entry in path
 * order. */
static void add_keeps(submit_t *sb, const cn__ws_merge_submit_t *merge)
{
    size_t named = sb->nch;
    qsort(sb->changes, named, sizeof *sb->changes, change_cmp);
    for (size_t i = 0; i < merge->nkeep; i++) {
        cn_repos_change_t k = { .kind = CN_REPOS_KEEP,
                                .path = (const uint8_t *)merge->keep[i],
                                .path_len = (uint16_t)strlen(merge->keep[i]) };
        if (!bsearch(&k, sb->changes, named, sizeof k, change_cmp) &&
            !move_source(sb->changes, named, merge->keep[i]))
            sb->changes[sb->nch++] = k;
    }
    qsort(sb->changes, sb->nch, sizeof *sb->changes, change_cmp);
}

/* One change per file that differs from the state (s sorted by path); a
 * recorded move whose source is gone and whose destination is new is one
 * move entry instead of a delete and an add; each added, modified or
 * moved file is loaded and chunked into sb->cont; a merge's keep entries
 * after them.  0 or a local error. */
static cn_err_t collect_changes(cn__ws_state_t *s, const cn__ws_merge_submit_t *merge, submit_t *sb,
                                cn_ws_error_t *err)
{
    size_t nkeep = merge ? merge->nkeep : 0;
    sb->ncont = s->n;
    sb->cont = calloc(s->n ? s->n : 1, sizeof *sb->cont);
    sb->changes = calloc(s->n + nkeep + 1, sizeof *sb->changes);
    if (!sb->cont || !sb->changes)
        return cn__ws_file_fail(err, "out of memory for", s->dir, ENOMEM);
    for (size_t i = 0; i < s->n; i++) {
        const cn__ws_file_t *w = &s->files[i];
        if (w->on_disk && !w->changed)
            continue;
        const cn__ws_move_t *mv = s->nmoves ? cn__ws_move_live(s, w->path) : NULL;
        if (mv && !w->on_disk)
            continue; /* the move's source: named by its destination's entry */
        cn_repos_change_t *c = &sb->changes[sb->nch++];
        c->path = (const uint8_t *)w->path;
        c->path_len = (uint16_t)strlen(w->path);
        if (!w->on_disk) {
            c->kind = CN_REPOS_DELETE;
            continue;
        }
        c->kind = mv ? CN_REPOS_MOVE : w->mtime_ns == -2 ? CN_REPOS_ADD : CN_REPOS_MODIFY;
        if (mv) {
            c->from = (const uint8_t *)mv->from;
            c->from_len = (uint16_t)strlen(mv->from);
        }
        struct stat st;
        char full[8600];
        snprintf(full, sizeof full, "%s/%s", s->dir, w->path);
        if (lstat(full, &st) < 0)
            return cn__ws_file_fail(err, "cannot stat", full, errno);
        CN_TRY(cn__ws_content_load(s->dir, w->path, &st, &sb->cont[i], err));
        c->manifest = sb->cont[i].mid;
        c->mode = w->disk_mode;
        sb->total_chunks += sb->cont[i].nchunks;
    }
    if (merge)
        add_keeps(sb, merge);
    return CN_OK;
}

/* Encodes the change set, then lists every identity the submit names (chunks,
 * manifests, the change set) in dependency order without repeats.  0, a
 * local CN_E_CONFLICT (the changes do not form a valid change set) or
 * -ENOMEM. */
static cn_err_t list_objects(const cn__ws_state_t *s, submit_t *sb, cn_ws_error_t *err)
{
    if (cn_repos_changeset_encode(&sb->csenc, sb->changes, (uint32_t)sb->nch) < 0)
        return cn__ws_local(err, CN_E_CONFLICT,
                            "the changes are not a valid change set (a file and a directory "
                            "of the same name, or case-only aliases)");
    cn_repos_object_id(CN_REPOS_CHANGESET, sb->csenc.data, sb->csenc.len, &sb->csid);
    cn_scribe_client_obj_t *objs = malloc((sb->total_chunks + sb->ncont + 1) * sizeof *objs);
    if (!objs)
        return cn__ws_file_fail(err, "out of memory for", s->dir, ENOMEM);
    size_t n = 0;
    const cn__ws_content_t *cont = sb->cont;
    for (size_t i = 0; i < sb->ncont; i++)
        for (uint32_t k = 0; k < cont[i].nchunks; k++)
            objs[n++] =
                (cn_scribe_client_obj_t){ CN_REPOS_CHUNK, cont[i].chunks[k].id,
                                          cont[i].map + cont[i].offs[k], cont[i].chunks[k].len };
    for (size_t i = 0; i < sb->ncont; i++)
        if (cont[i].manifest.len)
            objs[n++] = (cn_scribe_client_obj_t){ CN_REPOS_MANIFEST, cont[i].mid,
                                                  cont[i].manifest.data, cont[i].manifest.len };
    objs[n++] =
        (cn_scribe_client_obj_t){ CN_REPOS_CHANGESET, sb->csid, sb->csenc.data, sb->csenc.len };
    qsort(objs, n, sizeof *objs, ref_cmp); /* kinds 1, 2, 3 stay in dependency order */
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (!u || ref_cmp(&objs[u - 1], &objs[i]) != 0)
            objs[u++] = objs[i];
    sb->objs = objs;
    sb->nobj = u;
    return CN_OK;
}

/* Persists a new operation id, pins every identity under it, then uploads
 * those the server lacks. */
static cn_err_t pin_and_upload(cn_scribe_client_t *cl, cn__ws_state_t *s, submit_t *sb,
                               const cn_ws_opts_t *o, cn_ws_error_t *err)
{
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    cn_scribe_client_ref_t *refs = malloc(sb->nobj * sizeof *refs);
    bool *present = malloc(sb->nobj * sizeof *present);
    cn_err_t rc = CN_OK;
    if (!refs || !present) {
        rc = cn__ws_file_fail(err, "out of memory for", s->dir, ENOMEM);
        goto out;
    }
    for (size_t i = 0; i < sb->nobj; i++)
        refs[i] = (cn_scribe_client_ref_t){ sb->objs[i].kind, sb->objs[i].id };
    /* The operation id is persisted before anything names it. */
    cn_random_bytes(s->pending, 16);
    s->has_pending = true;
    if ((rc = cn__ws_state_save(s, err)))
        goto out;
    if ((rc = cn_scribe_client_pin(cl, s->repo_id, s->workspace, s->pending, refs, sb->nobj,
                                   present, &serr)) < 0) {
        cn__ws_fail(err, "pinning", rc, &serr);
        goto out;
    }
    for (size_t i = 0; i < sb->nobj; i++)
        if (!present[i]) {
            sb->send_bytes += sb->objs[i].len;
            sb->objs[sb->send++] = sb->objs[i];
        }
    cn__ws_progress_t pg;
    cn__ws_progress_start(&pg, cl, o, "uploading", sb->send_bytes);
    rc = sb->send ? cn_scribe_client_put(cl, s->repo_id, sb->objs, sb->send, &serr) : CN_OK;
    cn__ws_progress_end(&pg);
    if (rc < 0)
        cn__ws_fail(err, "uploading", rc, &serr);
out:
    free(refs);
    free(present);
    return rc;
}

/* Submits the change set under the pending operation id and settles it: *out
 * holds the outcome.  0 when accepted, CN_E_CONFLICT when rejected (the
 * reason in err), or the failure when no outcome arrived. */
static cn_err_t submit_changeset(cn_scribe_client_t *cl, cn__ws_state_t *s, const submit_t *sb,
                                 const char *author, const char *message, bool keep_locks,
                                 const cn__ws_merge_submit_t *merge,
                                 cn_scribe_client_outcome_t *out, cn_ws_error_t *err)
{
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    cn_scribe_client_submit_t sub;
    memset(&sub, 0, sizeof sub);
    memcpy(sub.repo, s->repo_id, 16);
    memcpy(sub.incarnation, s->incarnation, 16);
    memcpy(sub.operation, s->pending, 16);
    memcpy(sub.branch, s->branch, 16);
    memcpy(sub.workspace, s->workspace, 16);
    sub.base = s->change;
    sub.changeset = sb->csid;
    sub.author = author;
    sub.message = message;
    sub.keep_locks = keep_locks;
    cn_err_t e;
    if (merge && merge->pick) {
        cn_scribe_client_pick_t p = { .submit = sub, .change = merge->source_head };
        memcpy(p.source, merge->source, 16);
        e = cn_scribe_client_pick_submit(cl, &p, out, &serr);
    } else if (merge) {
        cn_scribe_client_merge_t m = { .submit = sub,
                                       .source_head = merge->source_head,
                                       .base = merge->base };
        memcpy(m.source, merge->source, 16);
        memcpy(m.base_branch, merge->base_branch, 16);
        e = cn_scribe_client_merge_submit(cl, &m, out, &serr);
    } else {
        e = cn_scribe_client_submit(cl, &sub, out, &serr);
    }
    if (e < 0)
        return cn__ws_fail(err,
                           !merge        ? "submit"
                           : merge->pick ? "cherry-pick"
                                         : "merge submit",
                           e, &serr);
    s->has_pending = false;
    if (!out->accepted) {
        cn_ws_error_t ignored; /* the rejection is the error to report */
        cn__ws_state_save(s, &ignored);
        return cn__ws_server(err, CN_E_CONFLICT,
                             "submit rejected (code %u, head %" PRIu64 "): %s%s%s", out->code,
                             out->head, out->detail, out->npaths ? ": " : "", out->paths);
    }
    return CN_OK;
}

/* The state after an accepted submit: at change, the submitted files recorded
 * as they are on disk, the deleted ones dropped. */
static void record_submitted(cn__ws_state_t *s, const submit_t *sb, uint64_t change)
{
    size_t keep = 0;
    for (size_t i = 0; i < s->n; i++) {
        cn__ws_file_t *w = &s->files[i];
        if (!w->on_disk) {
            free(w->path);
            continue;
        }
        if (w->changed) {
            w->manifest = sb->cont[i].mid;
            w->mode = w->disk_mode;
            w->size = w->disk_size;
            w->mtime_ns = w->disk_mtime;
        }
        s->files[keep++] = *w;
    }
    s->n = keep;
    s->change = change;
    cn__ws_moves_clear(s); /* sent, or no longer moves (plain adds and deletes) */
}

/* After an accepted submit (s recorded): the submitted paths the server
 * released read-only where a rule requires their lock; with keep locks
 * they stay held, and writable. */
static cn_err_t mark_submitted(cn_scribe_client_t *cl, cn__ws_state_t *s, const submit_t *sb,
                               const cn_ws_opts_t *o, cn_ws_error_t *err)
{
    if (o->keep_locks || !sb->nch)
        return CN_OK;
    const char **paths = calloc(sb->nch, sizeof *paths);
    if (!paths)
        return cn__ws_file_fail(err, "out of memory for", s->dir, ENOMEM);
    size_t n = 0;
    for (size_t i = 0; i < sb->nch; i++)
        if (sb->changes[i].kind != CN_REPOS_DELETE)         /* a deleted path's string is freed */
            paths[n++] = (const char *)sb->changes[i].path; /* NUL-terminated: a record's */
    cn_err_t rc = cn__ws_mark(cl, s, paths, n, false, o, err);
    free(paths);
    return rc;
}

typedef struct submit_args {
    const char *message;
    cn_ws_submit_result_t *res;
} submit_args_t;

static cn_err_t submit_open(cn_scribe_client_t *cl, cn__ws_state_t *s, const cn_ws_opts_t *o,
                            void *arg, cn_ws_error_t *err)
{
    const submit_args_t *a = arg;
    return cn__ws_submit_open(cl, s, o, a->message, NULL, a->res, err);
}

/* The submit once the workspace is open: settle, scan, chunk, pin, upload,
 * submit, record; then the mounts the change it reached no longer declares
 * (dropped by this very submit, or by a settled earlier one) are pruned
 * now, as a sync would (workspace_mounts.c), not left for the next change:
 * a later sync at the same change prunes nothing. */
cn_err_t cn__ws_submit_open(cn_scribe_client_t *cl, cn__ws_state_t *s, const cn_ws_opts_t *o,
                            const char *message, const cn__ws_merge_submit_t *merge,
                            cn_ws_submit_result_t *res, cn_ws_error_t *err)
{
    uint64_t was = s->change;
    cn__ws_scan_t sc = { 0 };
    submit_t sb = { 0 };
    cn_scribe_client_outcome_t out;
    cn_err_t rc;
    if ((rc = cn__ws_settle_pending(cl, s, &res->settled, &res->settled_change, err)) ||
        (rc = cn__ws_diff(s, &sc, o, err)))
        goto out;
    cn__ws_state_sort(s);
    if ((rc = collect_changes(s, merge, &sb, err)))
        goto out;
    if (!sb.nch && !merge) {
        res->nothing = true;
        res->change = s->change;
        rc = cn__ws_state_save(s, err); /* refreshed mtimes */
        goto out;
    }
    if ((rc = list_objects(s, &sb, err)) || (rc = pin_and_upload(cl, s, &sb, o, err)) ||
        (rc = submit_changeset(cl, s, &sb, o->author ? o->author : "cairn", message, o->keep_locks,
                               merge, &out, err)))
        goto out;
    record_submitted(s, &sb, out.change);
    if ((rc = cn__ws_state_save(s, err)) == CN_OK)
        rc = mark_submitted(cl, s, &sb, o, err);
    if (rc == CN_OK) {
        uint64_t recv = 0;
        res->change = out.change;
        res->paths = sb.nch;
        res->objects = sb.send;
        res->object_bytes = sb.send_bytes;
        cn_scribe_client_bytes(cl, &res->bytes_sent, &recv);
    }
out:
    submit_free(&sb);
    cn__ws_scan_free(&sc);
    if (rc == CN_OK) /* the submit stands whatever the pruning meets */
        cn__ws_mounts_prune(cl, s, was, o);
    return rc;
}

cn_err_t cn_ws_submit(const char *dir, const char *message, const cn_ws_opts_t *opts,
                      cn_ws_submit_result_t *res, cn_ws_error_t *err)
{
    cn_ws_error_t scratch;
    cn_ws_submit_result_t rscratch;
    err = cn__ws_begin(err, &scratch);
    res = res ? res : &rscratch;
    memset(res, 0, sizeof *res);
    if (!message)
        return cn__ws_local(err, CN_E_INVALID, "a submit needs a message");
    submit_args_t a = { message, res };
    return cn__ws_run(dir, cn__ws_opts(opts), submit_open, &a, err);
}
