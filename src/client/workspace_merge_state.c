/* The merge state file of a workspace (workspace_merge.h) and the verbs
 * that only read or edit it: status and resolve.  Format, one record a
 * line, strings hex-encoded so any path or name survives:
 *   cairn-merge 1
 *   phase applying|stopped
 *   source HEXID HEAD HEXNAME
 *   target HEAD HEXNAME
 *   base HEXID BASE
 *   p STATE WHY HEXPATH SIDE SIDE SIDE [HEXFROM [HEXOTHER]]  (base, ours, theirs;
 *                                            from and other of a lined-up move)
 * where SIDE is LIVE,CHANGE,SIZE,MODE,HEXMANIFEST,HEXAUTHOR (an empty
 * author is "-"). */
#include "workspace_merge.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void cn_ws_merge_free(cn_ws_merge_t *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++) {
        free(m->paths[i].path);
        free(m->paths[i].from);
        free(m->paths[i].other);
    }
    free(m->paths);
    free(m);
}

cn_ws_merge_path_t *cn__ws_merge_add(cn_ws_merge_t *m, const char *path)
{
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        cn_ws_merge_path_t *p = realloc(m->paths, cap * sizeof *p);
        if (!p)
            return NULL;
        m->paths = p;
        m->cap = cap;
    }
    cn_ws_merge_path_t *p = &m->paths[m->n];
    memset(p, 0, sizeof *p);
    if (!(p->path = strdup(path)))
        return NULL;
    m->n++;
    return p;
}

static int by_path(const void *a, const void *b)
{
    return strcmp(((const cn_ws_merge_path_t *)a)->path, ((const cn_ws_merge_path_t *)b)->path);
}

cn_ws_merge_path_t *cn__ws_merge_find(cn_ws_merge_t *m, const char *path)
{
    cn_ws_merge_path_t key = { .path = (char *)path };
    return m->n ? bsearch(&key, m->paths, m->n, sizeof key, by_path) : NULL;
}

void cn__ws_merge_side_path(const char *dir, const char *side, const char *path, char *out,
                            size_t cap)
{
    snprintf(out, cap, "%s/.cairn/merge/%s/%s", dir, side, path);
}

/* Hex of s ("-" for an empty string) into a malloc'd string. */
static char *hex_str(const char *s)
{
    size_t n = strlen(s);
    char *h = malloc(2 * n + 2);
    if (h && n)
        cn__ws_hex(s, n, h);
    else if (h)
        strcpy(h, "-");
    return h;
}

/* Decodes hex (or "-") into out (cap bytes, NUL-terminated). */
static bool unhex_str(const char *hex, char *out, size_t cap)
{
    size_t n = strlen(hex);
    if (!strcmp(hex, "-")) {
        out[0] = 0;
        return true;
    }
    if (n % 2 || n / 2 >= cap || cn_hex_decode(hex, n, out, n / 2) < 0)
        return false;
    out[n / 2] = 0;
    return true;
}

static void side_write(FILE *f, const cn_ws_merge_side_t *s)
{
    char mh[CN_DIGEST_HEX_LEN + 1];
    cn_digest_hex(&s->manifest, mh);
    char *ah = hex_str(s->author);
    fprintf(f, " %d,%" PRIu64 ",%" PRIu64 ",%u,%s,%s", s->live ? 1 : 0, s->change, s->size, s->mode,
            mh, ah ? ah : "-");
    free(ah);
}

static bool side_parse(char *tok, cn_ws_merge_side_t *s)
{
    int live;
    unsigned mode;
    char mh[80], ah[2 * CN_WS_BRANCH_NAME_MAX + 9]; /* %520s and its NUL */
    if (!tok || sscanf(tok, "%d,%" SCNu64 ",%" SCNu64 ",%u,%79[^,],%520s", &live, &s->change,
                       &s->size, &mode, mh, ah) != 6)
        return false;
    s->live = live == 1;
    s->mode = (uint8_t)mode;
    return cn_digest_parse(mh, strlen(mh), &s->manifest) >= 0 &&
           unhex_str(ah, s->author, sizeof s->author);
}

cn_err_t cn__ws_merge_save(const char *dir, cn_ws_merge_t *m, cn_ws_error_t *err)
{
    char mdir[4200], tmp[4300], path[4300];
    snprintf(mdir, sizeof mdir, "%s/.cairn/merge", dir);
    snprintf(tmp, sizeof tmp, "%s/state.tmp", mdir);
    snprintf(path, sizeof path, "%s/state", mdir);
    if (cn_mkdir_p(mdir, 0700) < 0)
        return cn__ws_file_fail(err, "cannot create", mdir, errno);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return cn__ws_file_fail(err, "cannot write", tmp, errno);
    char idh[33], bh[33];
    cn__ws_hex(m->source, 16, idh);
    cn__ws_hex(m->base_branch, 16, bh);
    char *sn = hex_str(m->source_name), *tn = hex_str(m->target_name);
    fprintf(f, "cairn-merge 1\nphase %s\nsource %s %" PRIu64 " %s\ntarget %" PRIu64 " %s\n",
            m->applying ? "applying" : "stopped", idh, m->source_head, sn ? sn : "-",
            m->target_head, tn ? tn : "-");
    fprintf(f, "base %s %" PRIu64 "\n", bh, m->base);
    free(sn);
    free(tn);
    m->unresolved = 0;
    bool ok = true;
    for (size_t i = 0; i < m->n && ok; i++) {
        const cn_ws_merge_path_t *p = &m->paths[i];
        char *ph = hex_str(p->path);
        ok = ph != NULL;
        fprintf(f, "p %c %c %s", p->state, p->why ? p->why : '-', ph ? ph : "-");
        side_write(f, &p->base);
        side_write(f, &p->ours);
        side_write(f, &p->theirs);
        for (int k = 0; k < 2; k++) {
            const char *x = k ? p->other : p->from;
            char *xh = x ? hex_str(x) : NULL;
            ok = ok && (!x || xh);
            if (x && xh)
                fprintf(f, " %s", xh);
            free(xh);
            if (!x)
                break; /* other only ever follows from */
        }
        fputc('\n', f);
        free(ph);
        m->unresolved += p->state == CN_WS_MERGE_CONFLICT;
    }
    return cn__ws_file_publish(f, ok, tmp, path, mdir, err);
}

/* One "p" record into m; false when damaged. */
static bool parse_path(cn_ws_merge_t *m, char *line)
{
    char *save = NULL, *st = strtok_r(line, " ", &save), *why = strtok_r(NULL, " ", &save);
    char *ph = strtok_r(NULL, " ", &save);
    char path[8193]; /* a repository path: at most 8,192 bytes */
    if (!st || !why || !ph || strlen(st) != 1 || strlen(why) != 1 ||
        !unhex_str(ph, path, sizeof path) || !path[0])
        return false;
    cn_ws_merge_path_t *p = cn__ws_merge_add(m, path);
    if (!p)
        return false;
    p->state = st[0];
    p->why = why[0] == '-' ? 0 : why[0];
    if (!side_parse(strtok_r(NULL, " ", &save), &p->base) ||
        !side_parse(strtok_r(NULL, " ", &save), &p->ours) ||
        !side_parse(strtok_r(NULL, " ", &save), &p->theirs))
        return false;
    for (int k = 0; k < 2; k++) {
        char *xh = strtok_r(NULL, " ", &save);
        if (!xh)
            break;
        char **dst = k ? &p->other : &p->from;
        if (!unhex_str(xh, path, sizeof path) || !path[0] || !(*dst = strdup(path)))
            return false;
    }
    return true;
}

/* One header record into m; false when damaged. */
static bool parse_header(cn_ws_merge_t *m, const char *line)
{
    char a[600], b[600], c[600];
    uint64_t v;
    if (sscanf(line, "phase %599s", a) == 1) {
        m->applying = !strcmp(a, "applying");
        return true;
    }
    if (sscanf(line, "source %599s %" SCNu64 " %599s", a, &v, b) == 3) {
        m->source_head = v;
        return cn_hex_decode(a, strlen(a), m->source, 16) >= 0 &&
               unhex_str(b, m->source_name, sizeof m->source_name);
    }
    if (sscanf(line, "target %" SCNu64 " %599s", &v, b) == 2) {
        m->target_head = v;
        return unhex_str(b, m->target_name, sizeof m->target_name);
    }
    if (sscanf(line, "base %599s %" SCNu64, c, &v) == 2) {
        m->base = v;
        return cn_hex_decode(c, strlen(c), m->base_branch, 16) >= 0;
    }
    return !strcmp(line, "cairn-merge 1");
}

cn_err_t cn__ws_merge_load(const char *dir, cn_ws_merge_t **out, cn_ws_error_t *err)
{
    *out = NULL;
    char path[4300];
    snprintf(path, sizeof path, "%s/.cairn/merge/state", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return errno == ENOENT ? CN_OK : cn__ws_file_fail(err, "cannot read", path, errno);
    cn_ws_merge_t *m = calloc(1, sizeof *m);
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    bool ok = m != NULL;
    while (ok && (len = getline(&line, &cap, f)) > 0) {
        if (line[len - 1] == '\n')
            line[--len] = 0;
        ok = !strncmp(line, "p ", 2) ? parse_path(m, line + 2) : parse_header(m, line);
    }
    free(line);
    fclose(f);
    if (!ok) {
        cn_ws_merge_free(m);
        return m ? cn__ws_local(err, CN_E_CORRUPT, "%s is damaged", path)
                 : cn__ws_file_fail(err, "out of memory reading", path, ENOMEM);
    }
    if (m->n)
        qsort(m->paths, m->n, sizeof *m->paths, by_path);
    for (size_t i = 0; i < m->n; i++)
        m->unresolved += m->paths[i].state == CN_WS_MERGE_CONFLICT;
    *out = m;
    return CN_OK;
}

cn_err_t cn__ws_merge_remove(const char *dir, cn_ws_error_t *err)
{
    char mdir[4200];
    snprintf(mdir, sizeof mdir, "%s/.cairn/merge", dir);
    /* The state goes first: a crash in between leaves no merge, only files. */
    char state[4300];
    snprintf(state, sizeof state, "%s/state", mdir);
    if (unlink(state) < 0 && errno != ENOENT)
        return cn__ws_file_fail(err, "cannot remove", state, errno);
    char cdir[4200];
    snprintf(cdir, sizeof cdir, "%s/.cairn", dir);
    cn_fsync_dir(cdir);
    cn_err_t e = cn_remove_tree(mdir);
    return e < 0 ? cn__ws_file_fail(err, "cannot remove", mdir, (int)-e) : CN_OK;
}

/* Creates the parent directories of path. */
static void parents(const char *path)
{
    char d[8600];
    snprintf(d, sizeof d, "%s", path);
    char *slash = strrchr(d, '/');
    if (slash) {
        *slash = 0;
        cn_mkdir_p(d, 0755);
    }
}

cn_err_t cn__ws_write_file(const char *dst, const void *p, size_t n, unsigned mode,
                           cn_ws_error_t *err)
{
    char tmp[8700];
    const char *slash = strrchr(dst, '/');
    int dl = slash ? (int)(slash - dst) : 0;
    snprintf(tmp, sizeof tmp, "%.*s/" CN_WS_TMP_PREFIX "merge-%d", dl, dst, (int)getpid());
    parents(dst);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0)
        return cn__ws_file_fail(err, "cannot create", tmp, errno);
    cn_err_t e = cn_write_full(fd, p, n);
    if (e >= 0 && fsync(fd) < 0)
        e = -errno;
    close(fd);
    if (e >= 0 && rename(tmp, dst) < 0)
        e = -errno;
    if (e < 0) {
        unlink(tmp);
        return cn__ws_file_fail(err, "cannot write", dst, -e);
    }
    return CN_OK;
}

cn_err_t cn__ws_copy_file(const char *src, const char *dst, cn_ws_error_t *err)
{
    int fd = open(src, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return cn__ws_file_fail(err, "cannot read", src, errno);
    struct stat st;
    cn_buf_t b = { 0 };
    cn_err_t e = fstat(fd, &st) < 0 ? -errno : cn_buf_reserve(&b, (size_t)st.st_size + 1);
    long long got = e >= 0 ? cn_read_full(fd, b.data, (size_t)st.st_size) : -1;
    close(fd);
    if (e < 0 || got < 0) {
        cn_buf_free(&b);
        return cn__ws_file_fail(err, "cannot read", src, e < 0 ? -e : EIO);
    }
    e = cn__ws_write_file(dst, b.data, (size_t)got, (st.st_mode & 0100) ? 0755 : 0644, err);
    cn_buf_free(&b);
    return e;
}

cn_err_t cn_ws_merge_status(const char *dir, cn_ws_merge_t **out, cn_ws_error_t *err)
{
    cn_ws_error_t scratch;
    err = cn__ws_begin(err, &scratch);
    if (!cn_ws_exists(dir))
        return cn__ws_local(err, -ENOENT, "%s is not a workspace (no .cairn/state)", dir);
    return cn__ws_merge_load(dir, out, err);
}

/* Puts side `side` (ours or theirs) of p back at its workspace path: the
 * saved copy, or no file when that side deleted it. */
static cn_err_t take_side(const char *dir, const cn_ws_merge_path_t *p, const char *side,
                          const cn_ws_merge_side_t *s, cn_ws_error_t *err)
{
    char full[8600], copy[8700];
    snprintf(full, sizeof full, "%s/%s", dir, p->path);
    if (!s->live)
        return unlink(full) < 0 && errno != ENOENT
                   ? cn__ws_file_fail(err, "cannot remove", full, errno)
                   : CN_OK;
    cn__ws_merge_side_path(dir, side, p->path, copy, sizeof copy);
    return cn__ws_copy_file(copy, full, err);
}

/* A file both sides moved, resolved to theirs' path: ours' file leaves
 * `other`, recorded as a move so that the merge submits one. */
static cn_err_t leave_other(const char *dir, const cn_ws_merge_path_t *p, cn_ws_error_t *err)
{
    char full[8600];
    snprintf(full, sizeof full, "%s/%s", dir, p->other);
    if (unlink(full) < 0 && errno != ENOENT)
        return cn__ws_file_fail(err, "cannot remove", full, errno);
    cn__ws_state_t *s = calloc(1, sizeof *s);
    if (!s)
        return cn__ws_file_fail(err, "out of memory for", dir, ENOMEM);
    cn_err_t rc = cn__ws_state_load(dir, s, err);
    if (rc == CN_OK && !cn__ws_move_to(s, p->path) && cn__ws_move_add(s, p->other, p->path) < 0)
        rc = cn__ws_file_fail(err, "out of memory for", dir, ENOMEM);
    if (rc == CN_OK)
        rc = cn__ws_state_save(s, err);
    cn__ws_state_free(s);
    free(s);
    return rc;
}

cn_err_t cn_ws_merge_resolve(const char *dir, const char *path, char how, const char *file,
                             cn_ws_error_t *err)
{
    cn_ws_error_t scratch;
    err = cn__ws_begin(err, &scratch);
    cn_ws_merge_t *m = NULL;
    cn_err_t rc = cn__ws_merge_load(dir, &m, err);
    if (rc)
        return rc;
    cn_ws_merge_path_t *p = m ? cn__ws_merge_find(m, path) : NULL;
    char full[8600];
    snprintf(full, sizeof full, "%s/%s", dir, path);
    if (!m)
        rc = cn__ws_local(err, -ENOENT, "no merge in progress in %s", dir);
    else if (m->applying)
        rc = cn__ws_local(err, CN_E_CONFLICT,
                          "the merge was interrupted while applying: run merge --continue first");
    else if (!p)
        rc = cn__ws_local(err, CN_E_INVALID, "%s is not a path of the merge", path);
    else if (p->state != CN_WS_MERGE_CONFLICT && p->state != CN_WS_MERGE_RESOLVED)
        rc = cn__ws_local(err, CN_E_INVALID, "%s did not conflict", path);
    else if (how == 'o' && p->from && !p->ours.live && p->theirs.live)
        /* the change set can only keep a path the target has held
         * (docs/protocol/scribe.md 9.3): theirs' new path must be named */
        rc = cn__ws_local(err, CN_E_INVALID,
                          "%s is where %s moved %s: a merge cannot leave out the source's new "
                          "path; resolve --theirs or --file, then move or delete it in a later "
                          "change",
                          path, m->source_name, p->from);
    else if (how == 'o')
        rc = take_side(dir, p, "ours", &p->ours, err);
    else if (how == 't')
        rc = take_side(dir, p, "theirs", &p->theirs, err);
    else if (how == 'f' && file)
        rc = cn__ws_copy_file(file, full, err);
    else
        rc = cn__ws_local(err, CN_E_INVALID, "resolve needs --ours, --theirs or --file F");
    if (rc == CN_OK && p->why == CN_WS_WHY_MOVED && p->other && how != 'o')
        rc = leave_other(dir, p, err);
    if (rc == CN_OK) {
        p->state = CN_WS_MERGE_RESOLVED;
        rc = cn__ws_merge_save(dir, m, err);
    }
    cn_ws_merge_free(m);
    return rc;
}
