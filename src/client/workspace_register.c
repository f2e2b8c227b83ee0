/* Workspace registration and removal (docs/workspace.md, "Registration"):
 * clone's registration (label "host:DIR", tags), the one-time registration
 * of a workspace the server does not know yet at its next contact, the
 * listing of a repository's workspaces and the removal (retirement) of one.
 *
 * Files in DIR/.cairn: "registered" once the server has the row ("owned
 * 0|1", whether the row has an owner, then "tag T" per tag the server
 * recorded; an older client wrote "1"); "retired" once the server retired
 * this workspace (every verb but list and remove then refuses it);
 * "remove-<id>" holds the operation id of a removal of workspace <id>,
 * written (fsynced) before the request is sent so that a repeat, or a reply
 * lost, resolves to the recorded outcome.  This file never decides who may
 * register or remove: the server does.
 *
 * A row without an owner on a protocol-4 endpoint (registered by an
 * anonymous clone of a public-read repository) is registered again at each
 * contact, with the recorded tags (tags never change): once the caller is
 * signed in, that registration adopts the row (docs/protocol/scribe.md
 * 15.6), so its pins, submits and locks are accepted.  Until then it costs
 * one round trip per command.  Plaintext rows never have an owner. */
#include "workspace_int.h"

#include "cairn/scribe.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* DIR/.cairn/NAME into out. */
static void meta_path(const char *dir, const char *name, char *out, size_t cap)
{
    snprintf(out, cap, "%s/.cairn/%s", dir, name);
}

static bool meta_exists(const char *dir, const char *name)
{
    char p[4400];
    meta_path(dir, name, p, sizeof p);
    return access(p, F_OK) == 0;
}

/* Writes text to DIR/.cairn/NAME durably (temporary file, fsync, rename). */
static cn_err_t meta_write(const char *dir, const char *name, const char *text, cn_ws_error_t *err)
{
    char p[4400], tmp[4420], cdir[4200];
    meta_path(dir, name, p, sizeof p);
    snprintf(tmp, sizeof tmp, "%s.tmp", p);
    snprintf(cdir, sizeof cdir, "%s/.cairn", dir);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return cn__ws_file_fail(err, "cannot write", tmp, errno);
    bool ok = fputs(text, f) >= 0;
    return cn__ws_file_publish(f, ok, tmp, p, cdir, err);
}

/* ---- the registration marker -------------------------------------------------------------- */
typedef struct marker {
    bool found, known, owned; /* known: not an older client's "1" */
    uint16_t ntags;
    char tags[16][CN_SCRIBE_MAX_WS_TAG + 1];
    const char *tagp[16];
} marker_t;

static void marker_read(const char *dir, marker_t *m)
{
    char p[4400], line[128];
    memset(m, 0, sizeof *m);
    meta_path(dir, "registered", p, sizeof p);
    FILE *f = fopen(p, "r");
    m->found = f != NULL;
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (!strcmp(line, "owned 0") || !strcmp(line, "owned 1")) {
            m->known = true;
            m->owned = line[6] == '1';
        } else if (!strncmp(line, "tag ", 4) && m->ntags < 16 &&
                   strlen(line + 4) <= CN_SCRIBE_MAX_WS_TAG) {
            snprintf(m->tags[m->ntags], sizeof m->tags[0], "%s", line + 4);
            m->tagp[m->ntags] = m->tags[m->ntags];
            m->ntags++;
        }
    }
    if (f)
        fclose(f);
}

/* Records the server's row w in DIR/.cairn/registered, unless the file
 * already says the same (no write, no fsync, on a repeated registration). */
static cn_err_t marker_write(const char *dir, const cn_scribe_client_ws_t *w, cn_ws_error_t *err)
{
    char text[32 + 16 * (CN_SCRIBE_MAX_WS_TAG + 6)], old[sizeof text] = "", p[4400];
    size_t n = (size_t)snprintf(text, sizeof text, "owned %d\n", w->has_owner ? 1 : 0);
    for (uint16_t i = 0; i < w->tag_count && i < 16; i++)
        n += (size_t)snprintf(text + n, sizeof text - n, "tag %s\n", w->tags[i]);
    meta_path(dir, "registered", p, sizeof p);
    FILE *f = fopen(p, "r");
    size_t got = f ? fread(old, 1, sizeof old - 1, f) : 0;
    if (f)
        fclose(f);
    old[got] = 0;
    return strcmp(old, text) == 0 ? CN_OK : meta_write(dir, "registered", text, err);
}

static bool is_tls(const char *endpoint)
{
    return endpoint && !strncmp(endpoint, "scribes://", 10);
}

/* Registers s's workspace on its branch, labelled "host:DIR" (DIR made
 * absolute), with o's tags; then records DIR/.cairn/registered.  An old
 * server without workspace registration is not an error. */
cn_err_t cn__ws_register(cn_scribe_client_t *cl, const cn__ws_state_t *s, const cn_ws_opts_t *o,
                         cn_ws_error_t *err)
{
    char host[256] = "", abs[PATH_MAX], label[CN_SCRIBE_MAX_WS_LABEL + 1];
    if (gethostname(host, sizeof host - 1) < 0)
        snprintf(host, sizeof host, "localhost");
    if (!realpath(s->dir, abs))
        snprintf(abs, sizeof abs, "%s", s->dir);
    /* a label is at most 256 bytes: keep the end of a long directory */
    size_t hl = strlen(host), al = strlen(abs);
    size_t room = sizeof label - 2 - (hl < 128 ? hl : 128);
    const char *tail = al > room ? abs + (al - room) : abs;
    while (((unsigned char)*tail & 0xc0) == 0x80)
        tail++; /* never start inside a UTF-8 sequence */
    snprintf(label, sizeof label, "%.128s:%.*s", host, (int)room, tail);
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    cn_scribe_client_ws_t *row = calloc(1, sizeof *row);
    if (!row)
        return cn__ws_file_fail(err, "out of memory for", s->dir, ENOMEM);
    cn_err_t e = cn_scribe_client_ws_register(cl, s->repo_id, s->workspace, s->branch, label,
                                              o->tags, (uint16_t)o->ntags, row, &serr);
    if (e < 0 && serr.code == CN_SCRIBE_E_UNSUPPORTED_OPERATION)
        e = CN_OK; /* the server keeps no registrations */
    else if (e < 0)
        e = cn__ws_fail(err, "workspace registration", e, &serr);
    else
        e = marker_write(s->dir, row, err);
    free(row);
    return e;
}

cn_err_t cn__ws_contact(cn_scribe_client_t *cl, const cn__ws_state_t *s, const cn_ws_opts_t *o,
                        cn_ws_error_t *err)
{
    if (meta_exists(s->dir, "retired"))
        return cn__ws_local(err, CN_E_CONFLICT,
                            "%s is no longer a workspace: it was removed (cairn repo workspace "
                            "remove); clone the repository again",
                            s->dir);
    marker_t *m = calloc(1, sizeof *m);
    if (!m)
        return cn__ws_file_fail(err, "out of memory for", s->dir, ENOMEM);
    marker_read(s->dir, m);
    /* known and owned, or any row of a plaintext endpoint: nothing to do */
    bool again =
        m->found && is_tls(o->endpoint ? o->endpoint : s->endpoint) && !(m->known && m->owned);
    if (m->found && !again) {
        free(m);
        return CN_OK;
    }
    cn_ws_opts_t plain = *o; /* the tags the server recorded: they never change */
    plain.tags = m->ntags ? m->tagp : NULL;
    plain.ntags = m->ntags;
    cn_ws_error_t quiet;
    cn_err_t e = cn__ws_register(cl, s, &plain, &quiet);
    free(m);
    if (e < 0 && quiet.code == CN_SCRIBE_E_WORKSPACE_RETIRED) {
        meta_write(s->dir, "retired", "1\n", &quiet);
        *err = quiet;
        return e;
    }
    return CN_OK; /* another failure: tried again at the next contact */
}

/* ---- listing -------------------------------------------------------------------------- */
typedef struct list_args {
    bool all;
    cn_ws_row_fn fn;
    void *ctx;
    const cn__ws_state_t *s;
} list_args_t;

static cn_err_t list_row(void *ctx, const cn_scribe_client_ws_t *w)
{
    list_args_t *a = ctx;
    cn_ws_row_t r;
    memset(&r, 0, sizeof r);
    cn__ws_hex(w->workspace, 16, r.workspace);
    if (memcmp(w->branch, a->s->branch, 16) == 0)
        snprintf(r.branch, sizeof r.branch, "%s", a->s->branch_name);
    else
        cn__ws_hex(w->branch, 16, r.branch);
    snprintf(r.label, sizeof r.label, "%s", w->label);
    r.ntags = w->tag_count;
    for (uint16_t i = 0; i < w->tag_count && i < 16; i++)
        snprintf(r.tags[i], sizeof r.tags[i], "%s", w->tags[i]);
    r.created_ms = w->created_ms;
    r.has_locks = w->has_locks;
    r.mine = memcmp(w->workspace, a->s->workspace, 16) == 0;
    if (w->has_owner)
        cn__ws_hex(w->owner, 16, r.owner);
    return a->fn(a->ctx, &r);
}

/* Loads DIR's state and connects, without the contact rules of cn__ws_run:
 * list and remove also act on a retired workspace. */
static cn_err_t open_ws(const char *dir, const cn_ws_opts_t *o, cn__ws_state_t **s,
                        cn_scribe_client_t **cl, cn_ws_error_t *err)
{
    *cl = NULL;
    if (!(*s = calloc(1, sizeof **s)))
        return cn__ws_file_fail(err, "out of memory for", dir, ENOMEM);
    cn_err_t rc = cn__ws_state_load(dir, *s, err);
    if (rc == CN_OK)
        rc = cn__ws_connect(o->endpoint ? o->endpoint : (*s)->endpoint, o, cl, err);
    return rc;
}

static void close_ws(cn__ws_state_t *s, cn_scribe_client_t *cl)
{
    if (s)
        cn__ws_state_free(s);
    free(s);
    cn_scribe_client_free(cl);
}

cn_err_t cn_ws_workspaces(const char *dir, bool all, const cn_ws_opts_t *opts, cn_ws_row_fn fn,
                          void *ctx, cn_ws_error_t *err)
{
    cn_ws_error_t scratch;
    err = cn__ws_begin(err, &scratch);
    cn__ws_state_t *s = NULL;
    cn_scribe_client_t *cl = NULL;
    cn_err_t rc = open_ws(dir, cn__ws_opts(opts), &s, &cl, err);
    if (rc == CN_OK) {
        list_args_t a = { all, fn, ctx, s };
        cn_scribe_cerr_t serr;
        memset(&serr, 0, sizeof serr);
        cn_err_t e = cn_scribe_client_ws_list(cl, s->repo_id, all, list_row, &a, &serr);
        rc = e < 0 ? cn__ws_fail(err, "workspace list", e, &serr) : CN_OK;
    }
    close_ws(s, cl);
    return rc;
}

/* ---- removal -------------------------------------------------------------------------- */
/* The operation id of a removal of ws: the one DIR/.cairn/remove-<ws>
 * holds, else a new one persisted there first. */
static cn_err_t removal_op(const char *dir, const char *wshex, uint8_t op[16], cn_ws_error_t *err)
{
    char name[64], p[4400], hex[40] = "";
    snprintf(name, sizeof name, "remove-%s", wshex);
    meta_path(dir, name, p, sizeof p);
    FILE *f = fopen(p, "r");
    if (f) {
        bool ok = fgets(hex, sizeof hex, f) && cn_hex_decode(hex, 32, op, 16) == CN_OK;
        fclose(f);
        if (ok)
            return CN_OK;
    }
    CN_TRY(cn_random_bytes(op, 16));
    cn__ws_hex(op, 16, hex);
    strcat(hex, "\n");
    return meta_write(dir, name, hex, err);
}

static void removal_forget(const char *dir, const char *wshex)
{
    char name[64], p[4400];
    snprintf(name, sizeof name, "remove-%s", wshex);
    meta_path(dir, name, p, sizeof p);
    unlink(p);
}

static cn_err_t remove_on(cn_scribe_client_t *cl, const cn__ws_state_t *s, const uint8_t ws[16],
                          uint64_t *retired_ms, cn_ws_error_t *err)
{
    char wshex[33];
    uint8_t op[16];
    cn__ws_hex(ws, 16, wshex);
    CN_TRY(removal_op(s->dir, wshex, op, err));
    cn_scribe_client_ws_removal_t *o = calloc(1, sizeof *o);
    if (!o)
        return cn__ws_file_fail(err, "out of memory for", s->dir, ENOMEM);
    cn_scribe_cerr_t serr;
    memset(&serr, 0, sizeof serr);
    cn_err_t e = cn_scribe_client_ws_remove(cl, s->repo_id, s->incarnation, op, ws, o, &serr);
    if (e < 0) {
        e = cn__ws_fail(err, "workspace remove", e, &serr);
    } else if (o->code) {
        /* a recorded rejection: the next removal is a new operation */
        removal_forget(s->dir, wshex);
        e = cn__ws_server(err, CN_E_CONFLICT, "workspace %s: %s", wshex, o->detail);
        err->code = o->code;
    } else {
        *retired_ms = o->retired_ms;
        if (memcmp(ws, s->workspace, 16) == 0)
            e = meta_write(s->dir, "retired", "1\n", err);
    }
    free(o);
    return e;
}

cn_err_t cn_ws_remove(const char *dir, const char *id, const cn_ws_opts_t *opts,
                      uint64_t *retired_ms, cn_ws_error_t *err)
{
    cn_ws_error_t scratch;
    err = cn__ws_begin(err, &scratch);
    *retired_ms = 0;
    uint8_t ws[16];
    if (id && (strlen(id) != 32 || cn_hex_decode(id, 32, ws, 16) != CN_OK))
        return cn__ws_local(err, CN_E_INVALID, "'%s' is not a workspace id (32 hex digits)", id);
    cn__ws_state_t *s = NULL;
    cn_scribe_client_t *cl = NULL;
    cn_err_t rc = open_ws(dir, cn__ws_opts(opts), &s, &cl, err);
    if (rc == CN_OK)
        rc = remove_on(cl, s, id ? ws : s->workspace, retired_ms, err);
    close_ws(s, cl);
    return rc;
}
