/* The branch verbs of a workspace (include/cairn/workspace.h,
 * docs/branches.md): BRANCH@N references, finding the workspace that holds
 * a directory, clone's choice of branch and the branch head a sync goes
 * to, then list, info, create, rename and switch.
 *
 * A mutation's operation id and the branch id it names are recorded in the
 * state, with the intent's fingerprint, before they are sent, and forgotten
 * once an outcome arrives (or a refusal, which records nothing), so the
 * same command after a lost reply replays that operation instead of making
 * a second one.  A switch never runs over local changes: it refuses before
 * anything is written. */
#include "workspace_int.h"
#include "cairn/scribe.h" /* cn_scribe_errcode_name */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- references and finding a workspace ------------------------------------------------ */
cn_err_t cn_ws_branch_ref_parse(const char *ref, char name[CN_WS_BRANCH_NAME_MAX + 1],
                                bool *has_change, uint64_t *change)
{
    *has_change = false;
    *change = 0;
    name[0] = 0;
    if (!ref)
        return CN_E_INVALID;
    const char *at = strchr(ref, '@'); /* a branch name never holds '@' */
    size_t nl = at ? (size_t)(at - ref) : strlen(ref);
    if (!nl || nl > CN_WS_BRANCH_NAME_MAX)
        return CN_E_INVALID;
    memcpy(name, ref, nl);
    name[nl] = 0;
    if (!cn_scribe_client_branch_name_ok(name)) {
        name[0] = 0;
        return CN_E_INVALID;
    }
    if (!at)
        return CN_OK;
    const char *d = at + 1;
    uint64_t v = 0;
    if (!*d)
        return CN_E_INVALID;
    for (; *d; d++) {
        if (*d < '0' || *d > '9')
            return CN_E_INVALID; /* no sign, no space, no second '@' */
        unsigned digit = (unsigned)(*d - '0');
        if (v > (UINT64_MAX - digit) / 10)
            return CN_E_INVALID;
        v = v * 10 + digit;
    }
    *has_change = true;
    *change = v;
    return CN_OK;
}

cn_err_t cn_ws_find(const char *start, char *dir, size_t cap)
{
    char *p = realpath(start ? start : ".", NULL);
    if (!p)
        return -errno;
    cn_err_t rc = -ENOENT;
    for (;;) {
        if (cn_ws_exists(p)) {
            size_t n = strlen(p);
            rc = n < cap ? CN_OK : -ENAMETOOLONG;
            if (rc == CN_OK)
                memcpy(dir, p, n + 1);
            break;
        }
        char *slash = strrchr(p, '/');
        if (!slash || !p[1])
            break; /* "/" was the last to look at */
        slash[slash == p ? 1 : 0] = 0;
    }
    free(p);
    return rc;
}

/* ---- looking branches up ----------------------------------------------------------------- */
/* Branch `name` of s's repository into *b; a failure names the branch. */
static cn_err_t by_name(cn_scribe_client_t *cl, const cn__ws_state_t *s, const char *name,
                        cn_scribe_client_branch_t *b, cn_ws_error_t *err)
{
    if (!cn_scribe_client_branch_name_ok(name))
        return cn__ws_local(err, CN_E_INVALID,
                            "'%s' is not a branch name (1..256 of A-Z a-z 0-9 - _ . /)", name);
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    cn_err_t rc = cn_scribe_client_branch_info(cl, s->repo_id, NULL, name, b, &serr);
    if (rc < 0) {
        char what[300];
        snprintf(what, sizeof what, "branch %s", name);
        return cn__ws_fail(err, what, rc, &serr);
    }
    return CN_OK;
}

/* Branch `id` of s's repository into *b. */
static cn_err_t by_id(cn_scribe_client_t *cl, const cn__ws_state_t *s, const uint8_t id[16],
                      cn_scribe_client_branch_t *b, cn_ws_error_t *err)
{
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    cn_err_t rc = cn_scribe_client_branch_info(cl, s->repo_id, id, NULL, b, &serr);
    if (rc < 0) {
        char hex[33], what[64];
        cn__ws_hex(id, 16, hex);
        snprintf(what, sizeof what, "branch %s", hex);
        return cn__ws_fail(err, what, rc, &serr);
    }
    return CN_OK;
}

cn_err_t cn__ws_branch_head(cn_scribe_client_t *cl, cn__ws_state_t *s,
                            const cn_scribe_client_repo_t *r, uint64_t *head, cn_ws_error_t *err)
{
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    cn_scribe_client_branch_t b;
    cn_err_t rc = cn_scribe_client_branch_info(cl, s->repo_id, s->branch, NULL, &b, &serr);
    if (rc == CN_E_UNSUPPORTED && !memcmp(s->branch, r->main_branch, 16)) {
        *head = r->head; /* a server without branches: every change is main's */
        return CN_OK;
    }
    if (rc < 0) {
        char what[300];
        snprintf(what, sizeof what, "branch %s", s->branch_name);
        return cn__ws_fail(err, what, rc, &serr);
    }
    snprintf(s->branch_name, sizeof s->branch_name, "%s", b.name);
    *head = b.head;
    return CN_OK;
}

/* A --branch/--change pair: N of ref (BRANCH@N) or o->change, which must
 * agree when both are given.  name receives the branch. */
static cn_err_t ref_and_change(const char *ref, const cn_ws_opts_t *o,
                               char name[CN_WS_BRANCH_NAME_MAX + 1], bool *has, uint64_t *change,
                               cn_ws_error_t *err)
{
    if (cn_ws_branch_ref_parse(ref, name, has, change) < 0)
        return cn__ws_local(err, CN_E_INVALID,
                            "'%s' is not BRANCH or BRANCH@CHANGE (a branch name is 1..256 of "
                            "A-Z a-z 0-9 - _ . /)",
                            ref ? ref : "");
    if (*has && o->has_change && *change != o->change)
        return cn__ws_local(err, CN_E_INVALID, "%s and --change %" PRIu64 " name different changes",
                            ref, o->change);
    if (!*has && o->has_change) {
        *has = true;
        *change = o->change;
    }
    return CN_OK;
}

cn_err_t cn__ws_clone_branch(cn_scribe_client_t *cl, cn__ws_state_t *s,
                             const cn_scribe_client_repo_t *r, const cn_ws_opts_t *o,
                             uint64_t *target, cn_ws_error_t *err)
{
    uint64_t head = 0, change = o->change;
    bool has = o->has_change;
    if (!o->branch) {
        memcpy(s->branch, r->main_branch, 16);
        snprintf(s->branch_name, sizeof s->branch_name, "main");
        CN_TRY(cn__ws_branch_head(cl, s, r, &head, err));
    } else {
        char name[CN_WS_BRANCH_NAME_MAX + 1];
        cn_scribe_client_branch_t b;
        CN_TRY(ref_and_change(o->branch, o, name, &has, &change, err));
        CN_TRY(by_name(cl, s, name, &b, err));
        memcpy(s->branch, b.id, 16);
        snprintf(s->branch_name, sizeof s->branch_name, "%s", b.name);
        head = b.head;
    }
    *target = has ? change : head;
    return CN_OK;
}

/* b as a verb reports it: its origin's current name, whether s follows it. */
static cn_err_t describe(cn_scribe_client_t *cl, const cn__ws_state_t *s,
                         const cn_scribe_client_branch_t *b, cn_ws_branch_t *out,
                         cn_ws_error_t *err)
{
    memset(out, 0, sizeof *out);
    out->info = *b;
    out->current = !memcmp(b->id, s->branch, 16);
    if (!b->has_origin)
        return CN_OK;
    cn_scribe_client_branch_t origin;
    CN_TRY(by_id(cl, s, b->origin, &origin, err));
    snprintf(out->origin_name, sizeof out->origin_name, "%s", origin.name);
    return CN_OK;
}

/* ---- list and info ----------------------------------------------------------------------- */
typedef struct list_acc {
    cn_ws_branch_t *v;
    size_t n, cap;
} list_acc_t;

static int list_row(void *ctx, const cn_scribe_client_branch_t *b)
{
    list_acc_t *a = ctx;
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 16;
        cn_ws_branch_t *v = realloc(a->v, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        a->v = v;
        a->cap = cap;
    }
    memset(&a->v[a->n], 0, sizeof a->v[a->n]);
    a->v[a->n++].info = *b;
    return 0;
}

static int id_order(const void *x, const void *y)
{
    return memcmp(((const cn_ws_branch_t *)x)->info.id, ((const cn_ws_branch_t *)y)->info.id, 16);
}

/* Names every listed branch's origin from the list itself (one page walk,
 * no lookup per branch) and marks s's branch. */
static cn_err_t name_origins(const cn__ws_state_t *s, list_acc_t *a, cn_ws_error_t *err)
{
    cn_ws_branch_t *byid = malloc((a->n ? a->n : 1) * sizeof *byid);
    if (!byid)
        return cn__ws_file_fail(err, "out of memory for", s->dir, ENOMEM);
    if (a->n)
        memcpy(byid, a->v, a->n * sizeof *byid);
    qsort(byid, a->n, sizeof *byid, id_order);
    for (size_t i = 0; i < a->n; i++) {
        cn_ws_branch_t *b = &a->v[i];
        b->current = !memcmp(b->info.id, s->branch, 16);
        if (!b->info.has_origin)
            continue;
        cn_ws_branch_t key;
        memcpy(key.info.id, b->info.origin, 16);
        const cn_ws_branch_t *o = bsearch(&key, byid, a->n, sizeof *byid, id_order);
        if (o)
            snprintf(b->origin_name, sizeof b->origin_name, "%s", o->info.name);
    }
    free(byid);
    return CN_OK;
}

static cn_err_t list_open(cn_scribe_client_t *cl, cn__ws_state_t *s, const cn_ws_opts_t *o,
                          void *arg, cn_ws_error_t *err)
{
    (void)o;
    list_acc_t *a = arg;
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    cn_err_t rc = cn_scribe_client_branch_list(cl, s->repo_id, list_row, a, &serr);
    if (rc == -ENOMEM && !serr.message[0])
        return cn__ws_file_fail(err, "out of memory for", s->dir, ENOMEM);
    if (rc < 0)
        return cn__ws_fail(err, "branch list", rc, &serr);
    return name_origins(s, a, err);
}

cn_err_t cn_ws_branch_list(const char *dir, const cn_ws_opts_t *opts, cn_ws_branch_t **out,
                           size_t *n, cn_ws_error_t *err)
{
    cn_ws_error_t scratch;
    err = cn__ws_begin(err, &scratch);
    list_acc_t a = { 0 };
    cn_err_t rc = cn__ws_run(dir, cn__ws_opts(opts), list_open, &a, err);
    if (rc) {
        free(a.v);
        a.v = NULL;
        a.n = 0;
    }
    *out = a.v;
    *n = a.n;
    return rc;
}

void cn_ws_branch_list_free(cn_ws_branch_t *b)
{
    free(b);
}

typedef struct info_args {
    const char *name;
    cn_ws_branch_t *out;
} info_args_t;

static cn_err_t info_open(cn_scribe_client_t *cl, cn__ws_state_t *s, const cn_ws_opts_t *o,
                          void *arg, cn_ws_error_t *err)
{
    (void)o;
    info_args_t *a = arg;
    cn_scribe_client_branch_t b;
    CN_TRY(by_name(cl, s, a->name, &b, err));
    return describe(cl, s, &b, a->out, err);
}

cn_err_t cn_ws_branch_info(const char *dir, const char *name, const cn_ws_opts_t *opts,
                           cn_ws_branch_t *out, cn_ws_error_t *err)
{
    cn_ws_error_t scratch;
    err = cn__ws_begin(err, &scratch);
    info_args_t a = { name, out };
    return cn__ws_run(dir, cn__ws_opts(opts), info_open, &a, err);
}

/* ---- create and rename ------------------------------------------------------------------- */
typedef struct mutate_args {
    uint8_t action;
    const char *name; /* the new branch / the new name */
    const char *from; /* create: BRANCH[@N], NULL = the workspace's branch head */
    const char *old;  /* rename: the expected current name */
    cn_ws_branch_t *out;
} mutate_args_t;

/* Whether s's unsettled branch operation has op's intent once op names the
 * branch id it recorded: the same command again, after a lost reply. */
static bool same_intent(const cn__ws_state_t *s, cn_scribe_client_branch_op_t *op)
{
    if (!s->has_branch_op)
        return false;
    uint8_t was[16], was_op[16];
    memcpy(was, op->branch, 16);
    memcpy(was_op, op->operation, 16);
    memcpy(op->branch, s->branch_op_branch, 16);
    memcpy(op->operation, s->branch_op, 16); /* outside the intent, but never zero */
    cn_digest_t fp;
    if (cn_scribe_client_branch_intent(op, &fp) == CN_OK && !memcmp(fp.b, s->branch_op_fp.b, 32))
        return true;
    memcpy(op->branch, was, 16);
    memcpy(op->operation, was_op, 16);
    return false;
}

/* Gives op its ids -- the recorded ones for the same intent, else a new
 * operation id (and for a create a new branch id) -- and records them in
 * the state before anything is sent. */
static cn_err_t op_ids(cn__ws_state_t *s, cn_scribe_client_branch_op_t *op, cn_ws_error_t *err)
{
    if (same_intent(s, op))
        return CN_OK;
    cn_random_bytes(op->operation, 16);
    if (op->action == CN_SCRIBE_CLIENT_BRANCH_CREATE)
        cn_random_bytes(op->branch, 16);
    cn_digest_t fp;
    if (cn_scribe_client_branch_intent(op, &fp) < 0)
        return cn__ws_local(err, CN_E_INVALID, "'%s' is not a branch name", op->name);
    s->has_branch_op = true;
    memcpy(s->branch_op, op->operation, 16);
    memcpy(s->branch_op_branch, op->branch, 16);
    s->branch_op_fp = fp;
    return cn__ws_state_save(s, err);
}

/* The create's source: a->from (BRANCH[@N]), else the head of s's branch. */
static cn_err_t create_source(cn_scribe_client_t *cl, const cn__ws_state_t *s,
                              const mutate_args_t *a, cn_scribe_client_branch_op_t *op,
                              cn_ws_error_t *err)
{
    cn_scribe_client_branch_t src;
    bool has = false;
    uint64_t change = 0;
    if (!a->from) {
        CN_TRY(by_id(cl, s, s->branch, &src, err));
    } else {
        char name[CN_WS_BRANCH_NAME_MAX + 1];
        if (cn_ws_branch_ref_parse(a->from, name, &has, &change) < 0)
            return cn__ws_local(err, CN_E_INVALID, "--from %s: want BRANCH or BRANCH@CHANGE",
                                a->from);
        CN_TRY(by_name(cl, s, name, &src, err));
    }
    memcpy(op->source, src.id, 16);
    op->source_change = has ? change : src.head;
    return CN_OK;
}

/* A recorded rejection as the error to report: branch_exists is
 * CN_E_EXISTS, name_mismatch CN_E_CONFLICT. */
static cn_err_t rejected(cn_ws_error_t *err, const char *what,
                         const cn_scribe_client_branch_outcome_t *out)
{
    const char *code = cn_scribe_errcode_name(out->code);
    cn_err_t e = out->code == CN_SCRIBE_E_BRANCH_EXISTS   ? CN_E_EXISTS
                 : out->code == CN_SCRIBE_E_NAME_MISMATCH ? CN_E_CONFLICT
                                                          : -EIO;
    cn__ws_server(err, e, "%s: %s: %s", what, code ? code : "rejected", out->detail);
    err->code = out->code;
    return e;
}

static cn_err_t mutate_open(cn_scribe_client_t *cl, cn__ws_state_t *s, const cn_ws_opts_t *o,
                            void *arg, cn_ws_error_t *err)
{
    (void)o;
    const mutate_args_t *a = arg;
    bool create = a->action == CN_SCRIBE_CLIENT_BRANCH_CREATE;
    char what[600];
    if (create)
        snprintf(what, sizeof what, "branch create %s", a->name);
    else
        snprintf(what, sizeof what, "branch rename %s to %s", a->old, a->name);
    if (!cn_scribe_client_branch_name_ok(a->name))
        return cn__ws_local(err, CN_E_INVALID,
                            "%s: '%s' is not a branch name (1..256 of A-Z a-z 0-9 - _ . /)", what,
                            a->name);
    cn_scribe_client_branch_op_t op;
    memset(&op, 0, sizeof op);
    memcpy(op.repo, s->repo_id, 16);
    memcpy(op.incarnation, s->incarnation, 16);
    op.action = a->action;
    op.name = a->name;
    op.expected = a->old;
    if (create)
        CN_TRY(create_source(cl, s, a, &op, err));
    else if (!same_intent(s, &op)) { /* a retry need not find the old name again */
        cn_scribe_client_branch_t target;
        CN_TRY(by_name(cl, s, a->old, &target, err));
        memcpy(op.branch, target.id, 16);
    }
    CN_TRY(op_ids(s, &op, err));
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    cn_scribe_client_branch_outcome_t out;
    cn_err_t rc = cn_scribe_client_branch_mutate(cl, &op, &out, &serr);
    if (rc < 0 && !serr.code)
        return cn__ws_fail(err, what, rc, &serr); /* unsettled: the operation stays recorded */
    s->has_branch_op = false; /* an outcome, or a refusal that recorded nothing */
    if (rc == CN_OK && out.accepted && !memcmp(out.branch.id, s->branch, 16))
        snprintf(s->branch_name, sizeof s->branch_name, "%s", out.branch.name);
    cn_ws_error_t save_err;
    cn_err_t saved = cn__ws_state_save(s, rc < 0 ? &save_err : err);
    if (rc < 0)
        return cn__ws_fail(err, what, rc, &serr);
    if (saved)
        return saved;
    if (!out.accepted)
        return rejected(err, what, &out);
    return a->out ? describe(cl, s, &out.branch, a->out, err) : CN_OK;
}

cn_err_t cn_ws_branch_create(const char *dir, const char *name, const char *from,
                             const cn_ws_opts_t *opts, cn_ws_branch_t *out, cn_ws_error_t *err)
{
    cn_ws_error_t scratch;
    err = cn__ws_begin(err, &scratch);
    mutate_args_t a = { CN_SCRIBE_CLIENT_BRANCH_CREATE, name ? name : "", from, NULL, out };
    return cn__ws_run(dir, cn__ws_opts(opts), mutate_open, &a, err);
}

cn_err_t cn_ws_branch_rename(const char *dir, const char *old, const char *name,
                             const cn_ws_opts_t *opts, cn_ws_branch_t *out, cn_ws_error_t *err)
{
    cn_ws_error_t scratch;
    err = cn__ws_begin(err, &scratch);
    if (!old || !cn_scribe_client_branch_name_ok(old))
        return cn__ws_local(err, CN_E_INVALID, "'%s' is not a branch name", old ? old : "");
    mutate_args_t a = { CN_SCRIBE_CLIENT_BRANCH_RENAME, name ? name : "", NULL, old, out };
    return cn__ws_run(dir, cn__ws_opts(opts), mutate_open, &a, err);
}

/* ---- switch -------------------------------------------------------------------------------- */
typedef struct switch_args {
    const char *ref;
    cn_ws_sync_result_t *res;
} switch_args_t;

/* The first tracked or new path that differs from the state (s scanned). */
static const char *first_change(const cn__ws_state_t *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (!s->files[i].on_disk || s->files[i].changed)
            return s->files[i].path;
    return NULL;
}

static cn_err_t switch_open(cn_scribe_client_t *cl, cn__ws_state_t *s, const cn_ws_opts_t *o,
                            void *arg, cn_ws_error_t *err)
{
    switch_args_t *a = arg;
    char name[CN_WS_BRANCH_NAME_MAX + 1];
    bool has = false;
    uint64_t change = 0;
    cn_scribe_client_repo_t r;
    cn_scribe_client_branch_t b;
    cn__ws_scan_t sc = { 0 };
    cn_err_t rc;
    if ((rc = ref_and_change(a->ref, o, name, &has, &change, err)) ||
        (rc = cn__ws_settle_pending(cl, s, &a->res->settled, &a->res->settled_change, err)) ||
        (rc = cn__ws_repo(cl, s, &r, err)) || (rc = by_name(cl, s, name, &b, err)) ||
        (rc = cn__ws_diff(s, &sc, o, err)))
        goto out;
    cn__ws_state_sort(s);
    const char *changed = first_change(s);
    if (changed) {
        rc = cn__ws_local(err, CN_E_CONFLICT,
                          "%s has local changes; submit or revert them before switching to %s",
                          changed, b.name);
        goto out;
    }
    memcpy(s->branch, b.id, 16);
    snprintf(s->branch_name, sizeof s->branch_name, "%s", b.name);
    rc = cn__ws_sync_to(cl, s, has ? change : b.head, o, a->res, err);
out:
    cn__ws_scan_free(&sc);
    return rc;
}

cn_err_t cn_ws_switch(const char *dir, const char *ref, const cn_ws_opts_t *opts,
                      cn_ws_sync_result_t *res, cn_ws_error_t *err)
{
    cn_ws_error_t scratch;
    cn_ws_sync_result_t rscratch;
    err = cn__ws_begin(err, &scratch);
    res = res ? res : &rscratch;
    memset(res, 0, sizeof *res);
    switch_args_t a = { ref, res };
    return cn__ws_run(dir, cn__ws_opts(opts), switch_open, &a, err);
}
