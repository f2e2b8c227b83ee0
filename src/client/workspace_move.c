/* cn_ws_move (include/cairn/workspace.h): a tracked file moved in the
 * workspace, recorded so that the next submit sends a move entry (docs/cli.md,
 * `cairn repo mv`) and the file's history continues at its new path.
 *
 * It never touches the network and never records a move it did not make on
 * disk: the file is renamed first and the state saved after, so a crash in
 * between leaves a plain delete and add, never a move the disk does not
 * hold. */
#include "workspace_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Checks that p is a canonical repository path inside s's prefixes. */
static cn_err_t check_path(const cn__ws_state_t *s, const char *p, cn_ws_error_t *err)
{
    if (cn_repos_path_check((const uint8_t *)p, strlen(p)) < 0)
        return cn__ws_local(err, CN_E_INVALID, "%s is not a canonical repository path", p);
    if (!cn__ws_in_scope(s, p))
        return cn__ws_local(err, CN_E_INVALID, "%s is outside this sparse workspace's prefixes", p);
    return CN_OK;
}

/* The checks before anything moves: from a tracked file (or a moved one's
 * new path) present on disk, to not on disk and not tracked (unless it is
 * where the moved file came from). */
static cn_err_t check_move(cn__ws_state_t *s, const char *from, const char *to, cn_ws_error_t *err)
{
    CN_TRY(check_path(s, from, err));
    CN_TRY(check_path(s, to, err));
    if (!strcmp(from, to))
        return cn__ws_local(err, CN_E_INVALID, "%s: source and destination are the same", from);
    if (!cn__ws_state_find(s, from, s->n) && !cn__ws_move_to(s, from))
        return cn__ws_local(err, CN_E_INVALID, "%s is not a tracked file", from);
    const cn__ws_move_t *back = cn__ws_move_to(s, from);
    if (cn__ws_state_find(s, to, s->n) && !(back && !strcmp(back->from, to)))
        return cn__ws_local(err, CN_E_INVALID, "%s is a tracked file", to); /* unless moved back */
    char full[8600];
    struct stat st;
    snprintf(full, sizeof full, "%s/%s", s->dir, from);
    if (lstat(full, &st) < 0)
        return cn__ws_file_fail(err, "cannot move", full, errno);
    if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
        return cn__ws_local(err, CN_E_INVALID,
                            "%s is not a file (directories are moved file by file)", from);
    snprintf(full, sizeof full, "%s/%s", s->dir, to);
    if (lstat(full, &st) == 0)
        return cn__ws_local(err, CN_E_INVALID, "%s already exists", to);
    return CN_OK;
}

cn_err_t cn_ws_move(const char *dir, const char *from, const char *to, cn_ws_error_t *err)
{
    cn_ws_error_t scratch;
    err = cn__ws_begin(err, &scratch);
    cn__ws_state_t *s = calloc(1, sizeof *s);
    if (!s)
        return cn__ws_file_fail(err, "out of memory for", dir, ENOMEM);
    cn_err_t rc = cn__ws_state_load(dir, s, err);
    if (rc == CN_OK)
        rc = check_move(s, from, to, err);
    char src[8600], dst[8600];
    snprintf(src, sizeof src, "%s/%s", dir, from);
    snprintf(dst, sizeof dst, "%s/%s", dir, to);
    char *slash = strrchr(dst, '/');
    if (rc == CN_OK && slash > dst + strlen(dir)) {
        *slash = 0;
        rc = cn_mkdir_p(dst, 0755);
        *slash = '/';
        if (rc)
            cn__ws_file_fail(err, "cannot create the directory of", dst, -rc);
    }
    if (rc == CN_OK && rename(src, dst) < 0)
        rc = cn__ws_file_fail(err, "cannot move", src, errno);
    if (rc == CN_OK && (rc = cn__ws_move_add(s, from, to)) < 0)
        cn__ws_file_fail(err, "out of memory for", to, ENOMEM);
    if (rc == CN_OK)
        rc = cn__ws_state_save(s, err);
    cn__ws_state_free(s);
    free(s);
    return rc;
}
