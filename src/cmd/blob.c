/* `cairn blob ...`: the blob operation family from the command line
 * (docs/protocol/blobs.md) — stat, have, put, get (verified, whole or
 * ranged), rm, ls — and `cairn blob sync`, the replicator, which is
 * cn_blobc_sync (include/cairn/blobs_client.h): have/need diffing between two
 * servers, fetching only what the target lacks.  This file parses, prints
 * and maps errors to exit codes; the logic lives in libcairn.
 *
 * Exit status (as the object commands, docs/cli.md): 0 ok, 1 server error,
 * 2 usage, 3 not found (have: something absent), 4 access denied or bad
 * credentials, 5 network, 7 local file error, 8 verification failed.
 */
#include "cmd.h"
#include "cairn/blobs_client.h"
#include "cairn/util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char blob_usage[] =
    "usage: cairn blob stat NS DIGEST\n"
    "       cairn blob have NS DIGEST... [--pin PIN_TOKEN]   (--pin: renew that put's pin)\n"
    "       cairn blob put NS FILE|- [--digest DIGEST]     prints DIGEST TOKEN\n"
    "       cairn blob get NS DIGEST [-o FILE] [--range OFFSET:LENGTH]\n"
    "       cairn blob rm NS DIGEST...                     (operator)\n"
    "       cairn blob ls NS\n"
    "       cairn blob sync --from URL --to URL --namespace NS (--all | DIGEST...)\n"
    "                        [--jobs N]  (parallel copies, default 4)\n"
    "options: --url URL (CAIRN_BLOBS_URL, default http://127.0.0.1:7448)\n"
    "         --token ID:SECRET (CAIRN_TOKEN); sync: --from-token, --to-token\n"
    "         (CAIRN_FROM_TOKEN, CAIRN_TO_TOKEN; default the --token)\n"
    "         --progress (progress on stderr)  --quiet\n"
    "exit: 0 ok, 1 server error, 2 usage, 3 not found, 4 access denied, 5 network,\n"
    "      7 local file error, 8 verification failed\n";

#define MAX_POS 4096
#define FETCH_TRIES 5

typedef struct {
    const char *url, *token, *from, *to, *from_token, *to_token, *ns, *out, *digest, *pin;
    const char *range;
    bool all, progress, quiet;
    int jobs;
    const char *pos[MAX_POS];
    size_t npos;
} bopts_t;

static int usage(const char *why)
{
    if (why)
        fprintf(stderr, "cairn blob: %s\n", why);
    fputs(blob_usage, stderr);
    return 2;
}

static int exit_for(cn_err_t e)
{
    switch (e) {
    case CN_OK: return 0;
    case CN_E_NOT_FOUND: return 3;
    case CN_E_AUTH:
    case CN_E_DENIED: return 4;
    case CN_E_CLOSED: return 5;
    case CN_E_DIGEST_MISMATCH:
    case CN_E_LENGTH_MISMATCH: return 8;
    case CN_E_INVALID: return 2;
    default: return e < 0 && e > -4096 ? 7 : 1;
    }
}

static int report(cn_blobc_t *c, const char *what, cn_err_t e)
{
    const cn_blobc_error_t *er = c ? cn_blobc_error(c) : NULL;
    if (er && er->code[0])
        fprintf(stderr, "cairn blob: %s: %s (%s/%s): %s\n", what, cn_strerror(e), er->code,
                er->reason, er->message);
    else if (er && er->message[0])
        fprintf(stderr, "cairn blob: %s: %s: %s\n", what, cn_strerror(e), er->message);
    else
        fprintf(stderr, "cairn blob: %s: %s\n", what, cn_strerror(e));
    return exit_for(e);
}

static bool parse_digest(const char *s, cn_digest_t *d)
{
    if (strlen(s) != CN_DIGEST_HEX_LEN)
        return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return false;
    return cn_digest_parse(s, CN_DIGEST_HEX_LEN, d) >= 0;
}

static int parse(int argc, char **argv, bopts_t *o)
{
    memset(o, 0, sizeof *o);
    o->url = getenv("CAIRN_BLOBS_URL");
    if (!o->url)
        o->url = "http://127.0.0.1:7448";
    o->token = getenv("CAIRN_TOKEN");
    o->from_token = getenv("CAIRN_FROM_TOKEN");
    o->to_token = getenv("CAIRN_TO_TOKEN");
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = NULL;
        if (!strcmp(a, "--url"))
            slot = &o->url;
        else if (!strcmp(a, "--token"))
            slot = &o->token;
        else if (!strcmp(a, "--from"))
            slot = &o->from;
        else if (!strcmp(a, "--to"))
            slot = &o->to;
        else if (!strcmp(a, "--from-token"))
            slot = &o->from_token;
        else if (!strcmp(a, "--to-token"))
            slot = &o->to_token;
        else if (!strcmp(a, "--namespace"))
            slot = &o->ns;
        else if (!strcmp(a, "-o") || !strcmp(a, "--output"))
            slot = &o->out;
        else if (!strcmp(a, "--digest"))
            slot = &o->digest;
        else if (!strcmp(a, "--range"))
            slot = &o->range;
        else if (!strcmp(a, "--all"))
            o->all = true;
        else if (!strcmp(a, "--jobs") && i + 1 < argc) {
            o->jobs = atoi(argv[++i]);
            if (o->jobs < 1 || o->jobs > 64)
                return usage("--jobs takes 1 to 64");
        } else if (!strcmp(a, "--progress"))
            o->progress = true;
        else if (!strcmp(a, "--quiet") || !strcmp(a, "-q"))
            o->quiet = true;
        else if (!strcmp(a, "--pin"))
            slot = &o->pin;
        else if (a[0] == '-' && a[1] && strcmp(a, "-") != 0)
            return usage("unknown option");
        else if (o->npos < MAX_POS)
            o->pos[o->npos++] = a;
        else
            return usage("too many arguments");
        if (slot) {
            if (i + 1 >= argc)
                return usage("an option needs a value");
            *slot = argv[++i];
        }
    }
    return 0;
}

/* ---- progress ------------------------------------------------------------------ */
typedef struct {
    bool on;
    int64_t last_ms;
    const char *what;
} prog_t;

static void progress(void *ctx, uint64_t done, uint64_t total)
{
    prog_t *p = ctx;
    if (!p->on)
        return;
    int64_t now = cn_mono_ms();
    if (now - p->last_ms < 200 && done != total)
        return;
    p->last_ms = now;
    if (total)
        fprintf(stderr, "\r%s %llu / %llu bytes (%.0f%%)", p->what, (unsigned long long)done,
                (unsigned long long)total, 100.0 * (double)done / (double)total);
    else
        fprintf(stderr, "\r%s %llu bytes", p->what, (unsigned long long)done);
}

static void progress_end(prog_t *p)
{
    if (p->on && p->last_ms)
        fputc('\n', stderr);
}

/* ---- the simple verbs ---------------------------------------------------------------- */
static int digests_of(const bopts_t *o, size_t from, cn_digest_t **out, size_t *n)
{
    *n = o->npos > from ? o->npos - from : 0;
    *out = calloc(*n ? *n : 1, sizeof **out);
    if (!*out)
        return 1;
    for (size_t i = 0; i < *n; i++)
        if (!parse_digest(o->pos[from + i], &(*out)[i])) {
            free(*out);
            return usage("a digest is 64 lowercase hex digits");
        }
    return 0;
}

static int cmd_stat(cn_blobc_t *c, const bopts_t *o)
{
    cn_digest_t d;
    if (o->npos != 2 || !parse_digest(o->pos[1], &d))
        return usage("stat NS DIGEST");
    uint64_t len = 0;
    cn_err_t e = cn_blobc_stat(c, o->pos[0], &d, &len);
    if (e < 0)
        return report(c, "stat", e);
    printf("%s %llu\n", o->pos[1], (unsigned long long)len);
    return 0;
}

static int cmd_have(cn_blobc_t *c, const bopts_t *o)
{
    if (o->npos < 2)
        return usage("have NS DIGEST...");
    cn_digest_t *d;
    size_t n;
    int rc = digests_of(o, 1, &d, &n);
    if (rc)
        return rc;
    if (o->pin && n != 1) {
        free(d);
        return usage("--pin renews one digest's pin");
    }
    bool *present = calloc(n, sizeof *present);
    cn_err_t e = present ? cn_blobc_have(c, o->pos[0], d, n, o->pin, present) : -ENOMEM;
    int status = 0;
    if (e < 0) {
        status = report(c, "have", e);
    } else {
        for (size_t i = 0; i < n; i++) {
            printf("%s %s\n", o->pos[1 + i], present[i] ? "present" : "absent");
            if (!present[i])
                status = 3;
        }
    }
    free(present);
    free(d);
    return status;
}

static int cmd_rm(cn_blobc_t *c, const bopts_t *o)
{
    if (o->npos < 2)
        return usage("rm NS DIGEST...");
    cn_digest_t *d;
    size_t n, removed = 0;
    int rc = digests_of(o, 1, &d, &n);
    if (rc)
        return rc;
    cn_err_t e = cn_blobc_delete(c, o->pos[0], d, n, &removed);
    free(d);
    if (e < 0)
        return report(c, "rm", e);
    if (!o->quiet)
        printf("removed %zu of %zu\n", removed, n);
    return 0;
}

static int cmd_ls(cn_blobc_t *c, const bopts_t *o)
{
    if (o->npos != 1)
        return usage("ls NS");
    cn_digest_t *page = malloc(1000 * sizeof *page), after;
    if (!page)
        return 1;
    bool more = true, first = true;
    while (more) {
        size_t n = 0;
        cn_err_t e = cn_blobc_list(c, o->pos[0], first ? NULL : &after, 1000, page, &n, &more);
        if (e < 0) {
            free(page);
            return report(c, "ls", e);
        }
        for (size_t i = 0; i < n; i++) {
            char hex[CN_DIGEST_HEX_LEN + 1];
            cn_digest_hex(&page[i], hex);
            puts(hex);
        }
        if (n)
            after = page[n - 1];
        first = false;
        more = more && n;
    }
    free(page);
    return 0;
}

static ssize_t fd_source(void *ctx, void *buf, size_t max)
{
    int fd = *(int *)ctx;
    for (;;) {
        ssize_t k = read(fd, buf, max);
        if (k >= 0 || errno != EINTR)
            return k;
    }
}

static int cmd_put(cn_blobc_t *c, const bopts_t *o)
{
    if (o->npos != 2)
        return usage("put NS FILE|-");
    cn_digest_t d;
    if (o->digest && !parse_digest(o->digest, &d))
        return usage("--digest is 64 lowercase hex digits");
    bool stdin_in = !strcmp(o->pos[1], "-");
    int fd = stdin_in ? 0 : open(o->pos[1], O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "cairn blob: %s: %s\n", o->pos[1], strerror(errno));
        return 7;
    }
    int64_t len = -1;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        len = (int64_t)st.st_size;
    prog_t pg = { o->progress || (!o->quiet && isatty(2)), 0, "put" };
    cn_blobc_put_result_t res;
    cn_err_t e =
        cn_blobc_put(c, o->pos[0], o->digest ? &d : NULL, len, fd_source, &fd, progress, &pg, &res);
    progress_end(&pg);
    if (!stdin_in)
        close(fd);
    if (e < 0)
        return report(c, "put", e);
    char hex[CN_DIGEST_HEX_LEN + 1];
    cn_digest_hex(&res.digest, hex);
    printf("%s %s\n", hex, res.token);
    return 0;
}

static cn_err_t fd_sink(void *ctx, const void *p, size_t n)
{
    return cn_write_full(*(int *)ctx, p, n);
}

static int cmd_get(cn_blobc_t *c, const bopts_t *o)
{
    cn_digest_t d;
    if (o->npos != 2 || !parse_digest(o->pos[1], &d))
        return usage("get NS DIGEST [-o FILE]");
    uint64_t range[2];
    if (o->range) {
        unsigned long long off, len;
        char tail;
        if (sscanf(o->range, "%llu:%llu%c", &off, &len, &tail) != 2)
            return usage("--range is OFFSET:LENGTH");
        range[0] = off;
        range[1] = len;
    }
    bool to_file = o->out && strcmp(o->out, "-") != 0;
    char tmp[4096];
    int fd = 1;
    if (to_file) {
        /* Unverified bytes never appear under the name asked for. */
        fd = cn_file_tmp_beside(o->out, tmp, sizeof tmp);
        if (fd == CN_E_INVALID)
            return usage("output path too long");
        if (fd < 0) {
            fprintf(stderr, "cairn blob: %s: %s\n", o->out, strerror(-fd));
            return 7;
        }
    }
    prog_t pg = { o->progress || (!o->quiet && isatty(2) && to_file), 0, "get" };
    cn_err_t e = CN_OK;
    for (int attempt = 0; attempt < FETCH_TRIES; attempt++) {
        cn_blobc_get_info_t info;
        e = cn_blobc_get(c, o->pos[0], &d, o->range ? range : NULL, fd_sink, &fd, progress, &pg,
                         &info);
        /* A tap that missed the prefix fails its hash check: re-fetch once the
         * put has landed (only possible when the output can be rewound). */
        if (e != CN_E_DIGEST_MISMATCH || !info.fanout || !to_file)
            break;
        if (ftruncate(fd, 0) < 0 || lseek(fd, 0, SEEK_SET) < 0)
            break;
        usleep(200000u << attempt);
    }
    progress_end(&pg);
    if (to_file) {
        if (e >= 0)
            e = cn_file_tmp_publish(fd, tmp, o->out, 0644);
        else
            cn_file_tmp_discard(fd, tmp);
    }
    return e < 0 ? report(c, "get", e) : 0;
}

/* ---- sync ------------------------------------------------------------------------------- */

/* cn_blobc_sync's per-digest outcome (called under its lock, so serialised). */
static void sync_outcome(void *ctx, const cn_digest_t *d, cn_err_t e,
                         const cn_blobc_error_t *detail)
{
    const bopts_t *o = ctx;
    char hex[CN_DIGEST_HEX_LEN + 1];
    cn_digest_hex(d, hex);
    if (e == CN_E_NOT_FOUND) {
        fprintf(stderr, "cairn blob: sync: %s is not in the source\n", hex);
    } else if (e < 0) {
        if (detail->code[0])
            fprintf(stderr, "cairn blob: %s: %s (%s/%s): %s\n", hex, cn_strerror(e), detail->code,
                    detail->reason, detail->message);
        else if (detail->message[0])
            fprintf(stderr, "cairn blob: %s: %s: %s\n", hex, cn_strerror(e), detail->message);
        else
            fprintf(stderr, "cairn blob: %s: %s\n", hex, cn_strerror(e));
    } else if (o->progress) {
        fprintf(stderr, "copied %s\n", hex);
    }
}

static int cmd_sync(const bopts_t *o)
{
    if (!o->from || !o->to || !o->ns)
        return usage("sync needs --from URL --to URL --namespace NS");
    if (o->all == (o->npos > 0))
        return usage("sync takes --all or a list of digests");
    cn_blobc_t *src = NULL, *dst = NULL;
    cn_err_t e = cn_blobc_new(o->from, o->from_token ? o->from_token : o->token, &src);
    if (e >= 0)
        e = cn_blobc_new(o->to, o->to_token ? o->to_token : o->token, &dst);
    if (e < 0) {
        cn_blobc_free(src);
        return usage("--from and --to are http(s):// URLs");
    }
    int status = 0;
    cn_digest_t *want = NULL;
    size_t n = 0;
    if (!o->all) {
        status = digests_of(o, 0, &want, &n);
        if (status)
            goto out;
    }
    cn_blobc_sync_opts_t so = { .digests = o->all ? NULL : want,
                                .n_digests = n,
                                .jobs = o->jobs,
                                .on_digest = sync_outcome,
                                .ctx = (void *)o };
    cn_blobc_sync_stats_t st;
    e = cn_blobc_sync(src, dst, o->ns, &so, &st);
    if (e < 0) {
        if (st.stage == CN_BLOBC_SYNC_STAGE_LIST)
            status = report(src, "sync: list the source", e);
        else if (st.stage == CN_BLOBC_SYNC_STAGE_HAVE)
            status = report(dst, "sync: have on the target", e);
        else
            status = 1;
        goto out;
    }
    if (st.first_error)
        status = st.setup_failed ? 1 : exit_for(st.first_error);
    if (!o->quiet)
        printf("sync %s: %zu digests, %zu already present, %zu copied, %zu missing, "
               "%zu failed\n",
               o->ns, st.digests, st.present, st.copied, st.missing, st.failed);
    if (!status && st.missing)
        status = 3;
out:
    free(want);
    cn_blobc_free(src);
    cn_blobc_free(dst);
    return status;
}

int cn_cmd_blob(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        fputs(blob_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    signal(SIGPIPE, SIG_IGN);
    bopts_t o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc;
    const char *verb = argv[1];
    if (!strcmp(verb, "sync"))
        return cmd_sync(&o);
    cn_blobc_t *c = NULL;
    if (cn_blobc_new(o.url, o.token, &c) < 0)
        return usage("--url is an http(s):// URL");
    if (!strcmp(verb, "stat"))
        rc = cmd_stat(c, &o);
    else if (!strcmp(verb, "have"))
        rc = cmd_have(c, &o);
    else if (!strcmp(verb, "put"))
        rc = cmd_put(c, &o);
    else if (!strcmp(verb, "get"))
        rc = cmd_get(c, &o);
    else if (!strcmp(verb, "rm"))
        rc = cmd_rm(c, &o);
    else if (!strcmp(verb, "ls"))
        rc = cmd_ls(c, &o);
    else
        rc = usage("unknown blob command");
    cn_blobc_free(c);
    return rc;
}
