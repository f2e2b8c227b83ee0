/* The workspace state, DIR/.cairn/state (format in docs/cli.md): the
 * repository, branch (id and name), incarnation and workspace ids, the
 * synced change, the pending submit and branch operations, the sparse
 * prefixes, the moves not submitted yet, the history anchors
 * (workspace_verify.c), and per file its mode, size,
 * mtime and manifest id, so a scan only rehashes files whose size or mtime
 * changed.  It is only ever replaced whole and atomically, never edited in
 * place. */
#include "workspace_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Whether path is inside the workspace's prefixes. */
bool cn__ws_in_scope(const cn__ws_state_t *s, const char *path)
{
    if (!s->npaths)
        return true;
    for (size_t i = 0; i < s->npaths; i++) {
        size_t n = strlen(s->paths[i]);
        if (!strncmp(path, s->paths[i], n) && (path[n] == 0 || path[n] == '/'))
            return true;
    }
    return false;
}

/* Adds a prefix (canonical, without a trailing '/'); a prefix already
 * covered is not added twice. */
cn_err_t cn__ws_scope_add(cn__ws_state_t *s, const char *prefix, cn_ws_error_t *err)
{
    char p[8200];
    snprintf(p, sizeof p, "%s", prefix);
    size_t n = strlen(p);
    while (n && p[n - 1] == '/')
        p[--n] = 0;
    if (!n || cn_repos_path_check((const uint8_t *)p, n) < 0)
        return cn__ws_local(err, CN_E_INVALID, "--path %s is not a canonical repository path",
                            prefix);
    if (s->npaths && cn__ws_in_scope(s, p))
        return CN_OK;
    if (s->npaths == CN_WS_PATHS_MAX)
        return cn__ws_local(err, CN_E_INVALID, "at most %d --path prefixes", CN_WS_PATHS_MAX);
    if (!(s->paths[s->npaths] = strdup(p)))
        return cn__ws_file_fail(err, "out of memory for", prefix, ENOMEM);
    s->npaths++;
    return CN_OK;
}

void cn__ws_files_free(cn__ws_state_t *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->files[i].path);
    free(s->files);
    s->files = NULL;
    s->n = s->cap = 0;
}

void cn__ws_moves_clear(cn__ws_state_t *s)
{
    for (size_t i = 0; i < s->nmoves; i++) {
        free(s->moves[i].from);
        free(s->moves[i].to);
    }
    free(s->moves);
    s->moves = NULL;
    s->nmoves = 0;
}

void cn__ws_state_free(cn__ws_state_t *s)
{
    for (size_t i = 0; i < s->npaths; i++)
        free(s->paths[i]);
    s->npaths = 0;
    cn__ws_files_free(s);
    cn__ws_moves_clear(s);
    free(s->anchors);
    s->anchors = NULL;
    s->nanchors = 0;
}

const cn__ws_move_t *cn__ws_move_to(const cn__ws_state_t *s, const char *to)
{
    for (size_t i = 0; i < s->nmoves; i++)
        if (!strcmp(s->moves[i].to, to))
            return &s->moves[i];
    return NULL;
}

const cn__ws_move_t *cn__ws_move_live(cn__ws_state_t *s, const char *path)
{
    for (size_t i = 0; i < s->nmoves; i++) {
        const cn__ws_move_t *m = &s->moves[i];
        if (strcmp(m->from, path) && strcmp(m->to, path))
            continue;
        const cn__ws_file_t *f = cn__ws_state_find(s, m->from, s->n);
        const cn__ws_file_t *t = cn__ws_state_find(s, m->to, s->n);
        if (f && f->mtime_ns != -2 && !f->on_disk && t && t->mtime_ns == -2 && t->on_disk)
            return m;
    }
    return NULL;
}

/* A chain a -> b -> c is one move a -> c (the server knows only a); a
 * chain back to a is no move at all. */
cn_err_t cn__ws_move_add(cn__ws_state_t *s, const char *from, const char *to)
{
    for (size_t i = 0; i < s->nmoves; i++) {
        cn__ws_move_t *m = &s->moves[i];
        if (strcmp(m->to, from))
            continue;
        if (!strcmp(m->from, to)) {
            free(m->from);
            free(m->to);
            s->moves[i] = s->moves[--s->nmoves];
            return CN_OK;
        }
        char *t = strdup(to);
        if (!t)
            return -ENOMEM;
        free(m->to);
        m->to = t;
        return CN_OK;
    }
    cn__ws_move_t *mv = realloc(s->moves, (s->nmoves + 1) * sizeof *mv);
    if (!mv)
        return -ENOMEM;
    s->moves = mv;
    char *f = strdup(from), *t = strdup(to);
    if (!f || !t) {
        free(f);
        free(t);
        return -ENOMEM;
    }
    s->moves[s->nmoves++] = (cn__ws_move_t){ f, t };
    return CN_OK;
}

/* Parses the rest of a "move FROM<TAB>TO" line; false when malformed. */
static bool parse_move(cn__ws_state_t *s, const char *p)
{
    const char *tab = strchr(p, '\t');
    if (!tab || tab == p || !tab[1] || strchr(tab + 1, '\t'))
        return false;
    char *from = strndup(p, (size_t)(tab - p));
    bool ok = from && cn__ws_move_add(s, from, tab + 1) == CN_OK;
    free(from);
    return ok;
}

cn__ws_file_t *cn__ws_state_add(cn__ws_state_t *s, const char *path)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        cn__ws_file_t *f = realloc(s->files, cap * sizeof *f);
        if (!f)
            return NULL;
        s->files = f;
        s->cap = cap;
    }
    cn__ws_file_t *f = &s->files[s->n];
    memset(f, 0, sizeof *f);
    if (!(f->path = strdup(path)))
        return NULL;
    s->n++;
    return f;
}

int cn__ws_by_path(const void *a, const void *b)
{
    return strcmp(((const cn__ws_file_t *)a)->path, ((const cn__ws_file_t *)b)->path);
}

cn__ws_file_t *cn__ws_state_find(cn__ws_state_t *s, const char *path, size_t n)
{
    if (!n)
        return NULL; /* files may be NULL, which bsearch must not see */
    cn__ws_file_t key;
    key.path = (char *)path;
    return bsearch(&key, s->files, n, sizeof *s->files, cn__ws_by_path);
}

void cn__ws_state_sort(cn__ws_state_t *s)
{
    if (s->n) /* as for bsearch: files may be NULL */
        qsort(s->files, s->n, sizeof *s->files, cn__ws_by_path);
}

static bool parse_hex(const char *h, void *out, size_t n)
{
    return strlen(h) == 2 * n && cn_hex_decode(h, 2 * n, out, n) >= 0;
}

/* Parses the rest of a "branch_op OP BRANCH FINGERPRINT" line; false when
 * malformed. */
static bool parse_branch_op(cn__ws_state_t *s, const char *p)
{
    char op[40], br[40], fp[72];
    if (sscanf(p, "%39s %39s %71s", op, br, fp) != 3 || !parse_hex(op, s->branch_op, 16) ||
        !parse_hex(br, s->branch_op_branch, 16) || !parse_hex(fp, s->branch_op_fp.b, 32))
        return false;
    s->has_branch_op = true;
    return true;
}

/* Parses the rest of a "file MODE SIZE MTIME MANIFEST\tPATH" line (after
 * "file ") into a new entry; false for a malformed line or no memory.  A
 * hand-written parse: status reads 100,000 of these. */
static bool parse_file_line(cn__ws_state_t *s, char *p)
{
    char *end;
    errno = 0;
    unsigned long mode = strtoul(p, &end, 10);
    if (end == p || *end != ' ' || mode > 255)
        return false;
    p = end + 1;
    unsigned long long size = strtoull(p, &end, 10);
    if (end == p || *end != ' ')
        return false;
    p = end + 1;
    long long mt = strtoll(p, &end, 10);
    if (end == p || *end != ' ' || errno)
        return false;
    p = end + 1;
    char *tab = strchr(p, '\t');
    if (!tab || tab - p != 64 || !tab[1])
        return false;
    cn__ws_file_t *w = cn__ws_state_add(s, tab + 1);
    if (!w || cn_hex_decode(p, 64, w->manifest.b, 32) < 0)
        return false;
    w->mode = (uint8_t)mode;
    w->size = size;
    w->mtime_ns = mt;
    return true;
}

cn_err_t cn__ws_state_load(const char *dir, cn__ws_state_t *s, cn_ws_error_t *err)
{
    memset(s, 0, sizeof *s);
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    char path[4200];
    snprintf(path, sizeof path, "%s/.cairn/state", dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        int e = errno;
        if (e == ENOENT || e == ENOTDIR)
            return cn__ws_local(err, -ENOENT, "%s is not a workspace (no .cairn/state)", dir);
        return cn__ws_file_fail(err, "cannot read", path, e);
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    bool ok = true;
    while ((len = getline(&line, &cap, f)) > 0) {
        if (line[len - 1] == '\n')
            line[--len] = 0;
        char k[32], v[300];
        if (!strncmp(line, "file ", 5)) {
            if (!parse_file_line(s, line + 5)) {
                ok = false;
                break;
            }
            continue;
        }
        if (!strncmp(line, "branch_op ", 10)) {
            if (!(ok = parse_branch_op(s, line + 10)))
                break;
            continue;
        }
        if (!strncmp(line, "anchor ", 7)) {
            if (!(ok = cn__ws_anchor_parse(s, line + 7)))
                break;
            continue;
        }
        if (!strncmp(line, "move ", 5)) {
            if (!(ok = parse_move(s, line + 5)))
                break;
            continue;
        }
        if (!strncmp(line, "path ", 5)) {
            if (s->npaths == CN_WS_PATHS_MAX || !(s->paths[s->npaths] = strdup(line + 5))) {
                ok = false;
                break;
            }
            s->npaths++;
            continue;
        }
        if (sscanf(line, "%31s %299s", k, v) != 2)
            continue;
        if (!strcmp(k, "endpoint"))
            snprintf(s->endpoint, sizeof s->endpoint, "%s", v);
        else if (!strcmp(k, "repo"))
            snprintf(s->repo, sizeof s->repo, "%s", v);
        else if (!strcmp(k, "repo_id"))
            ok = parse_hex(v, s->repo_id, 16) && ok;
        else if (!strcmp(k, "branch"))
            ok = parse_hex(v, s->branch, 16) && ok;
        else if (!strcmp(k, "branch_name") && cn_scribe_client_branch_name_ok(v))
            memcpy(s->branch_name, v, strlen(v) + 1); /* valid: at most 256 bytes */
        else if (!strcmp(k, "branch_name"))
            ok = false;
        else if (!strcmp(k, "incarnation"))
            ok = parse_hex(v, s->incarnation, 16) && ok;
        else if (!strcmp(k, "workspace"))
            ok = parse_hex(v, s->workspace, 16) && ok;
        else if (!strcmp(k, "pending"))
            s->has_pending = parse_hex(v, s->pending, 16);
        else if (!strcmp(k, "change"))
            s->change = strtoull(v, NULL, 10);
    }
    free(line);
    fclose(f);
    if (!s->branch_name[0]) /* written before branches: the workspace is on main */
        snprintf(s->branch_name, sizeof s->branch_name, "main");
    bool sorted = true; /* as state_save writes it, unless edited by hand */
    for (size_t i = 1; i < s->n && sorted; i++)
        sorted = cn__ws_by_path(&s->files[i - 1], &s->files[i]) < 0;
    if (!sorted)
        cn__ws_state_sort(s);
    return ok ? CN_OK : cn__ws_local(err, CN_E_CORRUPT, "%s is damaged", path);
}

/* Writes the state atomically: a temporary file, fsync, rename, dir fsync. */
cn_err_t cn__ws_state_save(const cn__ws_state_t *s, cn_ws_error_t *err)
{
    char dir[4200], tmp[4300], path[4300];
    snprintf(dir, sizeof dir, "%s/.cairn", s->dir);
    snprintf(tmp, sizeof tmp, "%s/state.tmp", dir);
    snprintf(path, sizeof path, "%s/state", dir);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return cn__ws_file_fail(err, "cannot write", tmp, errno);
    char h[65];
    fprintf(f, "cairn-workspace 1\nendpoint %s\nrepo %s\n", s->endpoint, s->repo);
    cn__ws_hex(s->repo_id, 16, h);
    fprintf(f, "repo_id %s\n", h);
    cn__ws_hex(s->branch, 16, h);
    fprintf(f, "branch %s\n", h);
    if (s->branch_name[0])
        fprintf(f, "branch_name %s\n", s->branch_name);
    cn__ws_hex(s->incarnation, 16, h);
    fprintf(f, "incarnation %s\n", h);
    cn__ws_hex(s->workspace, 16, h);
    fprintf(f, "workspace %s\n", h);
    fprintf(f, "change %" PRIu64 "\n", s->change);
    if (s->has_pending) {
        cn__ws_hex(s->pending, 16, h);
        fprintf(f, "pending %s\n", h);
    }
    if (s->has_branch_op) {
        char b[33], fp[65];
        cn__ws_hex(s->branch_op, 16, h);
        cn__ws_hex(s->branch_op_branch, 16, b);
        cn__ws_hex(s->branch_op_fp.b, 32, fp);
        fprintf(f, "branch_op %s %s %s\n", h, b, fp);
    }
    for (size_t i = 0; i < s->nanchors; i++)
        cn__ws_anchor_write(f, &s->anchors[i]);
    for (size_t i = 0; i < s->npaths; i++)
        fprintf(f, "path %s\n", s->paths[i]);
    for (size_t i = 0; i < s->nmoves; i++)
        fprintf(f, "move %s\t%s\n", s->moves[i].from, s->moves[i].to);
    for (size_t i = 0; i < s->n; i++) {
        if (s->files[i].mtime_ns == -2)
            continue; /* found by a scan, not recorded by a submit yet */
        cn__ws_hex(s->files[i].manifest.b, 32, h);
        fprintf(f, "file %u %" PRIu64 " %" PRId64 " %s\t%s\n", s->files[i].mode, s->files[i].size,
                s->files[i].mtime_ns, h, s->files[i].path);
    }
    return cn__ws_file_publish(f, true, tmp, path, dir, err);
}

cn_err_t cn__ws_file_publish(FILE *f, bool ok, const char *tmp, const char *path, const char *dir,
                             cn_ws_error_t *err)
{
    int e = ok ? 0 : EIO;
    if (ok && (fflush(f) != 0 || fsync(fileno(f)) != 0))
        e = errno ? errno : EIO;
    if (fclose(f) != 0 && !e)
        e = errno ? errno : EIO;
    if (!e && rename(tmp, path) < 0)
        e = errno ? errno : EIO;
    if (e) {
        unlink(tmp);
        return cn__ws_file_fail(err, "cannot write", path, e);
    }
    cn_fsync_dir(dir);
    return CN_OK;
}
