/* `cairn admin --data DIR repo backup NAME FILE | repo restore FILE [--replace]`:
 * offline backup and restore of one Scribe repository (cn_repos_backup /
 * cn_repos_restore).  They open the store, which one process holds at a
 * time: stop cairnd first (a running server makes them fail with "busy").
 * With `--meta postgres://...` and the blob tier flags (a fleet,
 * docs/fleet.md "Repository backup and restore") they open the fleet's
 * database and tier instead, with the nodes running: a backup reads one
 * snapshot, a restore replaces the rows in one transaction.
 * A backup is written to FILE.partial, flushed and renamed, so FILE is
 * either complete or absent; "-" writes to stdout.  A restore reads FILE
 * ("-" = stdin) and gives the repository a new incarnation.
 * Exit 0 ok, 1 failure, 2 usage. */
#include "admin_open.h"
#include "cmd.h"

#include "cairn/meta.h"
#include "cairn/repos.h"
#include "cairn/store.h"
#include "cairn/util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char repo_usage[] =
    "usage: cairn admin --data DIR repo backup NAME FILE      (FILE '-' = stdout)\n"
    "       cairn admin --data DIR repo restore FILE [--replace] (a new incarnation)\n"
    "       (the server must be stopped: both open the store)\n"
    "       cairn admin --meta postgres://... repo backup|restore ... --blob-store s3://B/P\n"
    "         --blob-endpoint URL [--blob-region R] [--blob-credentials FILE]\n"
    "         [--blob-virtual-host]          (a fleet's database and blob tier, nodes running)\n";

static int backup(cn_repos_t *r, const char *name, const char *file)
{
    bool to_stdout = !strcmp(file, "-");
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.partial", file);
    int fd = to_stdout ? 1 : open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        fprintf(stderr, "cairn admin: cannot create %s: %s\n", tmp, strerror(errno));
        return 1;
    }
    cn_repos_backup_stats_t st;
    cn_err_t e = cn_repos_backup(r, name, fd, &st);
    if (!to_stdout) {
        if (close(fd) < 0 && e >= 0)
            e = -errno;
        if (e >= 0 && rename(tmp, file) < 0)
            e = -errno;
        if (e < 0)
            unlink(tmp);
        else {
            char dir[4200];
            snprintf(dir, sizeof dir, "%s", file);
            char *slash = strrchr(dir, '/');
            if (slash)
                *slash = 0;
            cn_fsync_dir(slash ? (dir[0] ? dir : "/") : ".");
        }
    }
    if (e < 0) {
        fprintf(stderr, "cairn admin: backup of %s: %s\n", name,
                e == CN_E_NOT_FOUND ? "no such repository" : cn_strerror(e));
        return 1;
    }
    fprintf(stderr,
            "backed up %s at change %" PRIu64 ": %" PRIu64 " blobs, %" PRIu64 " rows, %" PRIu64
            " bytes\n",
            name, st.head, st.blobs, st.rows, st.bytes);
    return 0;
}

static int restore(cn_repos_t *r, const char *file, bool replace)
{
    int fd = !strcmp(file, "-") ? 0 : open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "cairn admin: cannot open %s: %s\n", file, strerror(errno));
        return 1;
    }
    cn_repos_info_t ri;
    cn_repos_backup_stats_t st;
    cn_err_t e = cn_repos_restore(r, fd, replace, &ri, &st);
    if (fd)
        close(fd);
    if (e < 0) {
        const char *why = e == CN_E_EXISTS    ? "the repository exists (use --replace to roll it "
                                                "back to the backup)"
                          : e == CN_E_INVALID ? "not a repository backup"
                          : e == CN_E_CORRUPT ? "the backup is truncated or damaged"
                                              : cn_strerror(e);
        fprintf(stderr, "cairn admin: restore of %s: %s\n", file, why);
        return 1;
    }
    char inc[33];
    cn_hex_encode(ri.incarnation, 16, inc);
    inc[32] = 0;
    fprintf(stderr,
            "restored %s at change %" PRIu64 ": %" PRIu64 " blobs, %" PRIu64
            " rows; new incarnation %s\n",
            ri.name, st.head, st.blobs, st.rows, inc);
    return 0;
}

/* The fleet's metadata (--meta) and its blob tier, in a scratch directory. */
static cn_err_t open_fleet(const char *data, const struct cn_store_tier *tier, char *scratch,
                           cn_meta_t **meta, cn_store_t **store)
{
    *store = NULL;
    cn_err_t e = cn_meta_open(cn__admin_meta_target(data), NULL, meta);
    if (e < 0) {
        /* the URI is not printed: it may hold a password */
        fprintf(stderr, "cairn admin: cannot open the fleet's metadata: %s\n", cn_strerror(e));
        return e;
    }
    return cn__admin_open_tier(*meta, tier, scratch, store);
}

int cn_cmd_admin_repo(const char *data, int argc, char **argv)
{
    const char *verb = argc > 0 ? argv[0] : "";
    bool replace = false;
    const char *pos[2] = { NULL, NULL };
    int npos = 0;
    struct cn_store_tier tier = { 0 };
    for (int i = 1; i < argc; i++) {
        int taken = cn__admin_tier_flag(argc, argv, &i, &tier);
        if (taken < 0) {
            fputs(repo_usage, stderr);
            return 2;
        }
        if (taken)
            continue;
        if (!strcmp(argv[i], "--replace"))
            replace = true;
        else if (npos < 2 && (argv[i][0] != '-' || !strcmp(argv[i], "-")))
            pos[npos++] = argv[i];
        else {
            fputs(repo_usage, stderr);
            return 2;
        }
    }
    bool is_backup = !strcmp(verb, "backup") && npos == 2 && !replace;
    bool is_restore = !strcmp(verb, "restore") && npos == 1;
    if (!is_backup && !is_restore) {
        fputs(repo_usage, stderr);
        return 2;
    }
    if (!data && !tier.blob_store) {
        fputs("cairn admin: repo: --data DIR is required (or --meta with the blob tier flags)\n",
              stderr);
        return 2;
    }
    if (tier.blob_store && !tier.endpoint) {
        fputs("cairn admin: repo: --blob-store needs --blob-endpoint\n", stderr);
        return 2;
    }
    cn_meta_t *meta = NULL;
    cn_store_t *store = NULL;
    cn_repos_t *repos = NULL;
    char scratch[4096] = "";
    cn_err_t e = tier.blob_store ? open_fleet(data, &tier, scratch, &meta, &store)
                                 : cn__admin_open_store(data, 0, &meta, &store);
    if (e >= 0 && (e = cn_repos_open(meta, store, NULL, NULL, &repos)) < 0)
        cn__admin_open_failed(data, "repositories", e);
    int rc = 1;
    if (e >= 0)
        rc = is_backup ? backup(repos, pos[0], pos[1]) : restore(repos, pos[0], replace);
    cn_repos_close(repos);
    cn_store_close(store);
    cn_meta_close(meta);
    cn__admin_scratch_remove(scratch);
    return rc;
}
