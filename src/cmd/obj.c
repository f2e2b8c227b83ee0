/* `cairn mb|rb|ls|put|get|cat|rm|cp|stat`: the object commands, over Jay
 * native v1 through libcairn's client (include/cairn/client.h).  Exit codes
 * are documented in docs/cli.md and mapped in exit_for().  Uploads and
 * downloads are cn_client_put_file (parallel multipart parts above the part
 * size) and cn_client_get_to_fd (checked against the object's SHA-256, before
 * they are renamed into place); this file parses, prints and draws the bar. */
#include "cmd.h"

#include "cairn/client.h"
#include "cairn/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_META 64

static const char obj_usage[] =
    "usage: cairn mb BUCKET                      create a bucket\n"
    "       cairn rb BUCKET                      delete an empty bucket\n"
    "       cairn ls [-r] [BUCKET[/PREFIX]]      list buckets, or objects\n"
    "       cairn put FILE|- BUCKET/KEY [--content-type T] [--meta K=V]...\n"
    "       cairn get BUCKET/KEY FILE|-\n"
    "       cairn cat BUCKET/KEY\n"
    "       cairn rm BUCKET/KEY\n"
    "       cairn cp SRC_BUCKET/KEY DST_BUCKET/KEY\n"
    "       cairn stat BUCKET/KEY\n"
    "options (anywhere after the command):\n"
    "         --endpoint HOST:PORT (CAIRN_ENDPOINT, default 127.0.0.1:7446)\n"
    "         --token ID:SECRET    (CAIRN_TOKEN)\n"
    "         --tls  --tls-ca FILE (CAIRN_TLS_CA)  --tls-insecure\n"
    "         --part-size BYTES[K|M|G] (default 64M; larger files go up in parallel parts)\n"
    "         --jobs N (parallel part uploads, default 4)  --quiet (no progress bar)\n"
    "exit: 0 ok, 1 server error, 2 usage, 3 not found, 4 access denied, 5 network,\n"
    "      6 conflict, 7 local error (file, memory), 8 checksum mismatch (docs/cli.md)\n";

typedef struct opts {
    const char *endpoint, *token, *tls_ca, *content_type;
    bool tls, tls_insecure, recursive, quiet;
    int64_t part_size;
    int jobs;
    const char *meta_k[MAX_META], *meta_v[MAX_META];
    char *meta_buf[MAX_META];
    size_t n_meta;
    const char *pos[4];
    int n_pos;
} opts_t;

/* ---- errors ----------------------------------------------------------------------- */

/* docs/cli.md's exit statuses.  1 is the server refusing; what failed
 * here, on this machine (memory, descriptors), is a local error, 7. */
static int exit_for(cn_err_t e)
{
    switch (e) {
    case CN_OK: return EXIT_OK;
    case -ENOMEM:
    case -EMFILE:
    case -ENFILE: return EXIT_LOCAL;
    case CN_E_NOT_FOUND:
    case CN_E_NO_UPLOAD: return EXIT_NOT_FOUND;
    case CN_E_DENIED:
    case CN_E_AUTH: return EXIT_DENIED;
    case CN_E_EXISTS:
    case CN_E_NOT_EMPTY:
    case CN_E_CONFLICT: return EXIT_CONFLICT;
    case CN_E_LENGTH_MISMATCH: return EXIT_LOCAL; /* the input ended early (put) */
    case CN_E_CLOSED:
    case CN_E_TIMEOUT:
    case CN_E_PROTOCOL:
    case CN_E_BUSY:
    case -ECONNREFUSED:
    case -ECONNRESET:
    case -ECONNABORTED:
    case -EPIPE:
    case -EHOSTUNREACH:
    case -ENETUNREACH:
    case -ETIMEDOUT: return EXIT_NETWORK;
    default: return EXIT_SERVER;
    }
}

static int report(const char *what, cn_err_t e, const cn_jay_error_t *je)
{
    int code = exit_for(e);
    if (je && je->hs_status == CN_JAY_HS_VERSION_MISMATCH)
        code = EXIT_NETWORK;
    if (je && je->code[0])
        fprintf(stderr, "cairn: %s: %s: %s\n", what, je->code, je->message);
    else if (je && je->message[0])
        fprintf(stderr, "cairn: %s: %s\n", what, je->message);
    else
        fprintf(stderr, "cairn: %s: %s\n", what, cn_strerror(e));
    return code;
}

static int usage(const char *why)
{
    if (why)
        fprintf(stderr, "cairn: %s\n", why);
    fputs(obj_usage, stderr);
    return EXIT_USAGE;
}

/* ---- arguments --------------------------------------------------------------------- */

static bool parse_size(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || v <= 0)
        return false;
    int shift = 0;
    if (*end == 'k' || *end == 'K')
        shift = 10;
    else if (*end == 'm' || *end == 'M')
        shift = 20;
    else if (*end == 'g' || *end == 'G')
        shift = 30;
    else if (*end != '\0')
        return false;
    if (shift && end[1] != '\0')
        return false;
    if (v > (INT64_MAX >> shift))
        return false;
    *out = (int64_t)v << shift;
    return true;
}

/* Matches "--name VALUE" or "--name=VALUE"; advances *i past a separate value. */
static bool opt_value(int argc, char **argv, int *i, const char *name, const char **val)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0)
        return false;
    if (argv[*i][n] == '=') {
        *val = argv[*i] + n + 1;
        return true;
    }
    if (argv[*i][n] != '\0')
        return false;
    if (*i + 1 >= argc) {
        *val = NULL;
        return true;
    }
    *val = argv[++*i];
    return true;
}

static int parse_args(int argc, char **argv, opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->endpoint = getenv("CAIRN_ENDPOINT");
    o->token = getenv("CAIRN_TOKEN");
    o->tls_ca = getenv("CAIRN_TLS_CA");
    o->part_size = CN_CLIENT_DEFAULT_PART_SIZE;
    o->jobs = 4;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        if (a[0] != '-' || !strcmp(a, "-")) {
            if (o->n_pos >= 3)
                return usage("too many arguments");
            o->pos[o->n_pos++] = a;
        } else if (!strcmp(a, "--")) {
            while (++i < argc && o->n_pos < 3)
                o->pos[o->n_pos++] = argv[i];
            if (i < argc)
                return usage("too many arguments");
        } else if (opt_value(argc, argv, &i, "--endpoint", &v)) {
            if (!v)
                return usage("--endpoint needs HOST:PORT");
            o->endpoint = v;
        } else if (opt_value(argc, argv, &i, "--token", &v)) {
            if (!v)
                return usage("--token needs ID:SECRET");
            o->token = v;
        } else if (opt_value(argc, argv, &i, "--tls-ca", &v)) {
            if (!v)
                return usage("--tls-ca needs a file");
            o->tls_ca = v;
            o->tls = true;
        } else if (opt_value(argc, argv, &i, "--content-type", &v)) {
            if (!v)
                return usage("--content-type needs a value");
            o->content_type = v;
        } else if (opt_value(argc, argv, &i, "--meta", &v)) {
            const char *eq = v ? strchr(v, '=') : NULL;
            if (!eq || eq == v)
                return usage("--meta needs KEY=VALUE");
            if (o->n_meta >= MAX_META)
                return usage("too many --meta pairs");
            char *k = strndup(v, (size_t)(eq - v));
            if (!k)
                return EXIT_LOCAL;
            o->meta_buf[o->n_meta] = k;
            o->meta_k[o->n_meta] = k;
            o->meta_v[o->n_meta] = eq + 1;
            o->n_meta++;
        } else if (opt_value(argc, argv, &i, "--part-size", &v)) {
            if (!v || !parse_size(v, &o->part_size) || o->part_size < CN_CLIENT_MIN_PART_SIZE)
                return usage("--part-size needs a size of at least 5M");
        } else if (opt_value(argc, argv, &i, "--jobs", &v)) {
            int64_t j;
            if (!v || !parse_size(v, &j) || j > 64)
                return usage("--jobs needs a number from 1 to 64");
            o->jobs = (int)j;
        } else if (!strcmp(a, "--tls")) {
            o->tls = true;
        } else if (!strcmp(a, "--tls-insecure")) {
            o->tls = o->tls_insecure = true;
        } else if (!strcmp(a, "-r") || !strcmp(a, "--recursive")) {
            o->recursive = true;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            o->quiet = true;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(obj_usage, stdout);
            return -1;
        } else {
            fprintf(stderr, "cairn: unknown option '%s'\n", a);
            return usage(NULL);
        }
    }
    return 0;
}

static void free_opts(opts_t *o)
{
    for (size_t i = 0; i < o->n_meta; i++)
        free(o->meta_buf[i]);
}

/* Splits "BUCKET/KEY" (the key may hold further slashes). */
static bool split_path(const char *s, char **bucket, char **key, bool need_key)
{
    const char *slash = strchr(s, '/');
    *bucket = slash ? strndup(s, (size_t)(slash - s)) : strdup(s);
    *key = strdup(slash ? slash + 1 : "");
    if (!*bucket || !*key || !**bucket || (need_key && !**key)) {
        free(*bucket);
        free(*key);
        *bucket = *key = NULL;
        return false;
    }
    return true;
}

/* ---- progress bar (stderr, only on a terminal) ----------------------------------- */

typedef struct progress {
    bool on;
    int64_t total;
    _Atomic int64_t done;
    int64_t start_ms;
    _Atomic int64_t last_ms;
    pthread_mutex_t mu;
} progress_t;

static void progress_init(progress_t *p, const opts_t *o, int64_t total)
{
    memset(p, 0, sizeof *p);
    p->on = !o->quiet && isatty(STDERR_FILENO);
    p->total = total;
    p->start_ms = cn_mono_ms();
    pthread_mutex_init(&p->mu, NULL);
}

static void progress_draw(progress_t *p, bool final)
{
    if (!p->on)
        return;
    int64_t now = cn_mono_ms();
    if (!final && now - atomic_load(&p->last_ms) < 100)
        return;
    if (pthread_mutex_trylock(&p->mu) != 0)
        return;
    atomic_store(&p->last_ms, now);
    int64_t done = atomic_load(&p->done);
    double secs = (double)(now - p->start_ms) / 1000.0;
    double rate = secs > 0 ? (double)done / secs / (1 << 20) : 0;
    char bar[31];
    int fill = p->total > 0 ? (int)(30.0 * (double)done / (double)p->total) : 30;
    if (fill > 30)
        fill = 30;
    memset(bar, '#', (size_t)fill);
    memset(bar + fill, ' ', (size_t)(30 - fill));
    bar[30] = '\0';
    if (p->total > 0)
        fprintf(stderr, "\r[%s] %3d%% %8.1f MiB  %7.1f MiB/s", bar,
                (int)(100.0 * (double)done / (double)p->total), (double)done / (1 << 20), rate);
    else
        fprintf(stderr, "\r%8.1f MiB  %7.1f MiB/s", (double)done / (1 << 20), rate);
    if (final)
        fputc('\n', stderr);
    pthread_mutex_unlock(&p->mu);
}

/* The library reports the transfer's cumulative bytes, possibly from several
 * threads and out of order: keep the largest. */
static void on_progress(void *ud, int64_t bytes)
{
    progress_t *p = ud;
    int64_t cur = atomic_load(&p->done);
    while (bytes > cur && !atomic_compare_exchange_weak(&p->done, &cur, bytes))
        ;
    progress_draw(p, false);
}

/* ---- connection --------------------------------------------------------------------- */

static int connect_client(const opts_t *o, cn_client_t **cl)
{
    cn_client_cfg_t cfg = {
        .endpoint = o->endpoint,
        .token = o->token,
        .tls = o->tls,
        .tls_ca_file = o->tls_ca,
        .tls_insecure = o->tls_insecure,
        .max_idle = (unsigned)o->jobs + 1,
    };
    if (!o->token || !*o->token) {
        fputs("cairn: no credential: pass --token ID:SECRET or set CAIRN_TOKEN\n", stderr);
        return EXIT_USAGE;
    }
    cn_jay_error_t je;
    cn_err_t e = cn_client_new(&cfg, cl, &je);
    if (e)
        return e == CN_E_INVALID ? (fprintf(stderr, "cairn: %s\n", je.message), EXIT_USAGE)
                                 : report("connect", e, &je);
    return EXIT_OK;
}

static const char *guess_type(const char *path)
{
    static const struct {
        const char *ext, *type;
    } types[] = {
        { ".txt", "text/plain" },        { ".html", "text/html" },
        { ".htm", "text/html" },         { ".css", "text/css" },
        { ".csv", "text/csv" },          { ".js", "text/javascript" },
        { ".json", "application/json" }, { ".xml", "application/xml" },
        { ".pdf", "application/pdf" },   { ".zip", "application/zip" },
        { ".gz", "application/gzip" },   { ".tar", "application/x-tar" },
        { ".png", "image/png" },         { ".jpg", "image/jpeg" },
        { ".jpeg", "image/jpeg" },       { ".gif", "image/gif" },
        { ".svg", "image/svg+xml" },     { ".webp", "image/webp" },
        { ".mp4", "video/mp4" },         { ".mp3", "audio/mpeg" },
        { ".wasm", "application/wasm" },
    };
    const char *dot = strrchr(path, '.');
    if (dot && !strchr(dot, '/'))
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
            if (!strcasecmp(dot, types[i].ext))
                return types[i].type;
    return "application/octet-stream";
}

/* ---- put ------------------------------------------------------------------------------ */

static const char multipart_meta_note[] =
    "cairn: put: note: --meta is not carried by a multipart upload in v1\n";

/* Maps a failed cn_client_put_file to its message and exit status. */
static int put_failed(cn_err_t e, const cn_client_put_result_t *r, const cn_jay_error_t *je)
{
    switch (r->stage) {
    case CN_CLIENT_PUT_STAGE_READ: report("put: read", e, NULL); return EXIT_LOCAL;
    case CN_CLIENT_PUT_STAGE_PARTS:
        fputs("cairn: put: more than 65535 parts; raise --part-size\n", stderr);
        return EXIT_USAGE;
    case CN_CLIENT_PUT_STAGE_CREATE: return report("put: create multipart upload", e, je);
    case CN_CLIENT_PUT_STAGE_PART: return report("put: upload part", e, je);
    case CN_CLIENT_PUT_STAGE_COMPLETE: return report("put: complete multipart upload", e, je);
    case CN_CLIENT_PUT_STAGE_PUT: break;
    }
    return report("put", e, je);
}

/* Uploads fd (size < 0: read to its end) through cn_client_put_file, drawing
 * the bar and printing the result line. */
static int put_fd(const opts_t *o, cn_client_t *cl, int fd, int64_t size, const char *bucket,
                  const char *key, const cn_client_put_opts_t *po)
{
    if (size > o->part_size && o->n_meta)
        fputs(multipart_meta_note, stderr);
    progress_t prog;
    progress_init(&prog, o, size > 0 ? size : 0);
    cn_client_transfer_opts_t to = { .put = po,
                                     .part_size = o->part_size,
                                     .jobs = o->jobs,
                                     .progress = on_progress,
                                     .progress_ud = &prog };
    cn_client_put_result_t r;
    cn_jay_error_t je;
    cn_err_t e = cn_client_put_file(cl, bucket, key, fd, size, &to, &r, &je);
    progress_draw(&prog, true);
    pthread_mutex_destroy(&prog.mu);
    /* A stream learns it is multipart only once its second part is read. */
    if (size < 0 && r.multipart && o->n_meta)
        fputs(multipart_meta_note, stderr);
    int rc = EXIT_OK;
    if (e)
        rc = put_failed(e, &r, &je);
    else if (r.n_parts > 0)
        printf("%s/%s  %lld bytes  %d parts  etag %s  sha256 %s\n", bucket, key,
               (long long)r.written.size, r.n_parts, r.written.etag, r.written.checksum);
    else
        printf("%s/%s  %lld bytes  etag %s  sha256 %s\n", bucket, key, (long long)r.written.size,
               r.written.etag, r.written.checksum);
    cn_client_put_result_clear(&r);
    return rc;
}

static int cmd_put(const opts_t *o, cn_client_t *cl)
{
    if (o->n_pos != 3)
        return usage("put needs FILE and BUCKET/KEY");
    char *bucket, *key;
    if (!split_path(o->pos[2], &bucket, &key, true))
        return usage("put needs BUCKET/KEY");
    const char *file = o->pos[1];
    bool is_stdin = !strcmp(file, "-");
    int fd = is_stdin ? STDIN_FILENO : open(file, O_RDONLY | O_CLOEXEC);
    int rc = EXIT_OK;
    if (fd < 0) {
        fprintf(stderr, "cairn: put: %s: %s\n", file, strerror(errno));
        rc = EXIT_LOCAL;
        goto out;
    }
    cn_client_put_opts_t po = {
        .content_type = o->content_type ? o->content_type
                        : is_stdin      ? "application/octet-stream"
                                        : guess_type(file),
        .meta_keys = o->meta_k,
        .meta_values = o->meta_v,
        .n_meta = o->n_meta,
    };
    struct stat st;
    if (fstat(fd, &st) != 0) {
        fprintf(stderr, "cairn: put: %s: %s\n", file, strerror(errno));
        rc = EXIT_LOCAL;
        goto out;
    }
    if (S_ISDIR(st.st_mode)) {
        fprintf(stderr, "cairn: put: %s: is a directory\n", file);
        rc = EXIT_LOCAL;
        goto out;
    }
    /* A pipe, a FIFO, a device -- or a regular file whose size says nothing,
     * like those of /proc -- is read to its end instead of by its size. */
    bool sized = S_ISREG(st.st_mode) && st.st_size != 0;
    rc = put_fd(o, cl, fd, sized ? (int64_t)st.st_size : -1, bucket, key, &po);
out:
    if (fd >= 0 && !is_stdin)
        close(fd);
    free(bucket);
    free(key);
    return rc;
}

/* ---- get / cat -------------------------------------------------------------------- */

/* Downloads bucket/key to fd, verifying the SHA-256 the server reported. */
static int download(const opts_t *o, cn_client_t *cl, const char *bucket, const char *key, int fd,
                    const char *what)
{
    progress_t prog;
    progress_init(&prog, o, 0);
    if (prog.on) {
        /* Only for the bar's percentage: the size comes with the body's
         * metadata too, but after the first byte. */
        cn_client_object_t head;
        if (cn_client_head_object(cl, bucket, key, &head, NULL) == CN_OK)
            prog.total = head.size;
        cn_client_object_clear(&head);
    }
    cn_client_transfer_opts_t to = { .progress = on_progress, .progress_ud = &prog };
    cn_client_download_t dl;
    cn_jay_error_t je;
    cn_err_t e = cn_client_get_to_fd(cl, bucket, key, fd, &to, &dl, &je);
    if (prog.done > 0)
        progress_draw(&prog, true);
    pthread_mutex_destroy(&prog.mu);
    int rc = EXIT_OK;
    if (e && dl.local) {
        if (e == -ENOMEM)
            rc = report(what, e, NULL);
        else {
            fprintf(stderr, "cairn: %s: writing the output failed: %s\n", what, cn_strerror(e));
            rc = EXIT_LOCAL;
        }
    } else if (e == CN_E_DIGEST_MISMATCH) {
        fprintf(stderr, "cairn: %s: checksum mismatch: server says %s, received %s\n", what,
                dl.info.checksum, dl.sha256);
        rc = EXIT_INTEGRITY;
    } else if (e) {
        rc = report(what, e, &je);
    }
    cn_client_download_clear(&dl);
    return rc;
}

static int cmd_get(const opts_t *o, cn_client_t *cl)
{
    if (o->n_pos != 3)
        return usage("get needs BUCKET/KEY and FILE");
    char *bucket, *key;
    if (!split_path(o->pos[1], &bucket, &key, true))
        return usage("get needs BUCKET/KEY");
    const char *file = o->pos[2];
    char *joined = NULL, *tmp = NULL;
    int rc;
    if (!strcmp(file, "-")) {
        rc = download(o, cl, bucket, key, STDOUT_FILENO, "get");
        goto out;
    }
    /* Into an existing directory: DIR/<the key's last segment>. */
    struct stat st;
    if (stat(file, &st) == 0 && S_ISDIR(st.st_mode)) {
        const char *base = strrchr(key, '/') ? strrchr(key, '/') + 1 : key;
        if (!*base || !strcmp(base, ".") || !strcmp(base, "..")) {
            fprintf(stderr, "cairn: get: %s: is a directory and the key names no file\n", file);
            rc = EXIT_LOCAL;
            goto out;
        }
        size_t fl = strlen(file);
        if (asprintf(&joined, "%s%s%s", file, fl && file[fl - 1] == '/' ? "" : "/", base) < 0) {
            joined = NULL;
            rc = EXIT_LOCAL;
            goto out;
        }
        file = joined;
    }
    /* Into a temporary beside the target, renamed only once complete and verified. */
    size_t n = strlen(file) + 14;
    tmp = malloc(n);
    if (!tmp) {
        rc = EXIT_LOCAL;
        goto out;
    }
    int fd = cn_file_tmp_beside(file, tmp, n);
    if (fd < 0) {
        fprintf(stderr, "cairn: get: %s: %s\n", file, strerror(-fd));
        rc = EXIT_LOCAL;
        goto out;
    }
    rc = download(o, cl, bucket, key, fd, "get");
    if (rc != EXIT_OK) {
        cn_file_tmp_discard(fd, tmp);
        goto out;
    }
    mode_t um = umask(0);
    umask(um);
    cn_err_t e = cn_file_tmp_publish(fd, tmp, file, 0666 & ~um);
    if (e < 0) {
        fprintf(stderr, "cairn: get: %s: %s\n", file, strerror(-e));
        rc = EXIT_LOCAL;
    }
out:
    free(tmp);
    free(joined);
    free(bucket);
    free(key);
    return rc;
}

static int cmd_cat(const opts_t *o, cn_client_t *cl)
{
    if (o->n_pos != 2)
        return usage("cat needs BUCKET/KEY");
    char *bucket, *key;
    if (!split_path(o->pos[1], &bucket, &key, true))
        return usage("cat needs BUCKET/KEY");
    opts_t quiet = *o;
    quiet.quiet = true; /* the bytes go to stdout; keep the terminal clean */
    int rc = download(&quiet, cl, bucket, key, STDOUT_FILENO, "cat");
    free(bucket);
    free(key);
    return rc;
}

/* ---- the rest ----------------------------------------------------------------------- */

static int cmd_ls(const opts_t *o, cn_client_t *cl)
{
    cn_jay_error_t je;
    cn_err_t e;
    if (o->n_pos > 2)
        return usage("ls takes at most one BUCKET[/PREFIX]");
    if (o->n_pos == 1) {
        cn_client_buckets_t b;
        e = cn_client_list_buckets(cl, &b, &je);
        if (e)
            return report("ls", e, &je);
        for (size_t i = 0; i < b.n; i++)
            printf("%-24s  %s\n", b.v[i].created_at, b.v[i].name);
        cn_client_buckets_clear(&b);
        return EXIT_OK;
    }
    char *bucket, *prefix;
    if (!split_path(o->pos[1], &bucket, &prefix, false))
        return usage("ls needs BUCKET[/PREFIX]");
    char *after = NULL;
    int rc = EXIT_OK;
    for (;;) {
        cn_client_list_opts_t lo = { .prefix = prefix,
                                     .delimiter = o->recursive ? "" : "/",
                                     .start_after = after,
                                     .max_keys = 1000 };
        cn_client_listing_t l;
        e = cn_client_list_objects(cl, bucket, &lo, &l, &je);
        if (e) {
            rc = report("ls", e, &je);
            break;
        }
        for (size_t i = 0; i < l.n_prefixes; i++)
            printf("%-24s  %12s  %s\n", "", "PRE", l.prefixes[i]);
        for (size_t i = 0; i < l.n_objects; i++)
            printf("%-24s  %12lld  %s\n", l.objects[i].last_modified, (long long)l.objects[i].size,
                   l.objects[i].key);
        bool more = l.is_truncated;
        free(after);
        after = NULL;
        if (more) {
            /* next_start_after continues the listing; fall back to the last key. */
            const char *next = l.next_start_after && l.next_start_after[0] ? l.next_start_after
                               : l.n_objects ? l.objects[l.n_objects - 1].key
                                             : NULL;
            after = next ? strdup(next) : NULL;
            if (!after)
                more = false;
        }
        cn_client_listing_clear(&l);
        if (!more)
            break;
    }
    free(after);
    free(bucket);
    free(prefix);
    return rc;
}

static int cmd_stat(const opts_t *o, cn_client_t *cl)
{
    if (o->n_pos != 2)
        return usage("stat needs BUCKET/KEY");
    char *bucket, *key;
    if (!split_path(o->pos[1], &bucket, &key, true))
        return usage("stat needs BUCKET/KEY");
    cn_client_object_t info;
    cn_jay_error_t je;
    cn_err_t e = cn_client_head_object(cl, bucket, key, &info, &je);
    int rc = EXIT_OK;
    if (e) {
        rc = report("stat", e, &je);
    } else {
        printf("bucket:        %s\nkey:           %s\nsize:          %lld\n"
               "content-type:  %s\netag:          %s\nsha256:        %s\n"
               "last-modified: %s\n",
               bucket, key, (long long)info.size, info.content_type, info.etag, info.checksum,
               info.last_modified);
        for (size_t i = 0; i < info.n_meta; i++)
            printf("meta:          %s=%s\n", info.meta[i].key, info.meta[i].value);
        cn_client_object_clear(&info);
    }
    free(bucket);
    free(key);
    return rc;
}

static int cmd_rm(const opts_t *o, cn_client_t *cl)
{
    if (o->n_pos != 2)
        return usage("rm needs BUCKET/KEY");
    char *bucket, *key;
    if (!split_path(o->pos[1], &bucket, &key, true))
        return usage("rm needs BUCKET/KEY");
    cn_jay_error_t je;
    cn_err_t e = cn_client_delete_object(cl, bucket, key, &je);
    free(bucket);
    free(key);
    return e ? report("rm", e, &je) : EXIT_OK;
}

static int cmd_cp(const opts_t *o, cn_client_t *cl)
{
    if (o->n_pos != 3)
        return usage("cp needs SRC_BUCKET/KEY and DST_BUCKET/KEY");
    char *sb, *sk, *db, *dk;
    if (!split_path(o->pos[1], &sb, &sk, true))
        return usage("cp needs SRC_BUCKET/KEY");
    if (!split_path(o->pos[2], &db, &dk, true)) {
        free(sb);
        free(sk);
        return usage("cp needs DST_BUCKET/KEY");
    }
    cn_client_written_t w;
    cn_jay_error_t je;
    cn_err_t e = cn_client_copy_object(cl, sb, sk, db, dk, &w, &je);
    int rc = EXIT_OK;
    if (e) {
        rc = report("cp", e, &je);
    } else {
        printf("%s/%s  %lld bytes  etag %s  sha256 %s\n", db, dk, (long long)w.size, w.etag,
               w.checksum);
        cn_client_written_clear(&w);
    }
    free(sb);
    free(sk);
    free(db);
    free(dk);
    return rc;
}

static int bucket_cmd(const opts_t *o, cn_client_t *cl, bool create)
{
    if (o->n_pos != 2 || strchr(o->pos[1], '/'))
        return usage(create ? "mb needs BUCKET" : "rb needs BUCKET");
    cn_jay_error_t je;
    cn_err_t e = create ? cn_client_create_bucket(cl, o->pos[1], &je)
                        : cn_client_delete_bucket(cl, o->pos[1], &je);
    return e ? report(create ? "mb" : "rb", e, &je) : EXIT_OK;
}

static int cmd_mb(const opts_t *o, cn_client_t *cl)
{
    return bucket_cmd(o, cl, true);
}
static int cmd_rb(const opts_t *o, cn_client_t *cl)
{
    return bucket_cmd(o, cl, false);
}

/* The object verbs: the one list that both recognises a verb and runs it. */
static const struct {
    const char *name;
    int (*run)(const opts_t *o, cn_client_t *cl);
} verbs[] = {
    { "mb", cmd_mb },   { "rb", cmd_rb },   { "ls", cmd_ls },
    { "put", cmd_put }, { "get", cmd_get }, { "cat", cmd_cat },
    { "rm", cmd_rm },   { "cp", cmd_cp },   { "stat", cmd_stat },
};

int cn_cmd_object(int argc, char **argv)
{
    const char *verb = argv[0];
    int (*run)(const opts_t *, cn_client_t *) = NULL;
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0] && !run; i++)
        if (!strcmp(verb, verbs[i].name))
            run = verbs[i].run;
    if (!run) {
        fprintf(stderr, "cairn: unknown command '%s'\n", verb);
        return usage(NULL);
    }
    opts_t o;
    int rc = parse_args(argc, argv, &o);
    if (rc) {
        free_opts(&o);
        return rc < 0 ? EXIT_OK : rc;
    }
    /* pos[0] is the verb's slot, so positional indices match the usage text. */
    memmove(o.pos + 1, o.pos, sizeof o.pos - sizeof o.pos[0]);
    o.pos[0] = verb;
    o.n_pos++;
    cn_client_t *cl = NULL;
    rc = connect_client(&o, &cl);
    if (rc) {
        free_opts(&o);
        return rc;
    }
    /* A closed stdout (cat | head) must end with an error, not a signal. */
    signal(SIGPIPE, SIG_IGN);
    rc = run(&o, cl);
    cn_client_free(cl);
    free_opts(&o);
    if (fflush(stdout) != 0 && rc == EXIT_OK)
        rc = EXIT_LOCAL;
    return rc;
}
