/* `cairn mb|rb|ls|put|get|cat|rm|cp|stat`: the object commands, over Jay
 * native v1 through libcairn's client (include/cairn/client.h).  Exit codes
 * are documented in docs/cli.md and mapped in exit_for().  Large uploads go up
 * as parallel multipart parts, one connection per thread; downloads are
 * checked against the object's SHA-256 before they are renamed into place. */
#include "cmd.h"

#include "cairn/client.h"
#include "cairn/crypto.h"
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

#define DEFAULT_PART_SIZE (64LL << 20)
#define MIN_PART_SIZE (5LL << 20)
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
    o->part_size = DEFAULT_PART_SIZE;
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
            if (!v || !parse_size(v, &o->part_size) || o->part_size < MIN_PART_SIZE)
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

/* Per-transfer progress callback state: the client reports cumulative bytes
 * of one call; the bar sums the deltas of every concurrent call. */
typedef struct progress_tap {
    progress_t *p;
    int64_t seen;
} progress_tap_t;

static void on_progress(void *ud, int64_t bytes)
{
    progress_tap_t *t = ud;
    atomic_fetch_add(&t->p->done, bytes - t->seen);
    t->seen = bytes;
    progress_draw(t->p, false);
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

/* A body read with pread(2) from [off, end) of a shared fd: thread-safe. */
typedef struct pread_src {
    int fd;
    int64_t off, end;
} pread_src_t;

static long long pread_cb(void *ud, void *buf, size_t n)
{
    pread_src_t *s = ud;
    if ((int64_t)n > s->end - s->off)
        n = (size_t)(s->end - s->off);
    if (n == 0)
        return 0;
    ssize_t r;
    do {
        r = pread(s->fd, buf, n, s->off);
    } while (r < 0 && errno == EINTR);
    if (r < 0)
        return -errno;
    s->off += r;
    return r;
}

/* A body from memory. */
typedef struct mem_src {
    const uint8_t *p;
    size_t len, off;
} mem_src_t;

static long long mem_cb(void *ud, void *buf, size_t n)
{
    mem_src_t *m = ud;
    if (n > m->len - m->off)
        n = m->len - m->off;
    memcpy(buf, m->p + m->off, n);
    m->off += n;
    return (long long)n;
}

typedef struct mp {
    cn_client_t *cl;
    const char *bucket, *key, *upload_id;
    int fd;
    int64_t size, part_size;
    int32_t n_parts;
    _Atomic int32_t next;
    _Atomic bool failed;
    pthread_mutex_t mu;
    cn_err_t err;
    cn_jay_error_t jerr;
    progress_t *prog;
} mp_t;

static void *mp_worker(void *arg)
{
    mp_t *m = arg;
    for (;;) {
        if (atomic_load(&m->failed))
            break;
        int32_t part = atomic_fetch_add(&m->next, 1);
        if (part > m->n_parts)
            break;
        int64_t off = (int64_t)(part - 1) * m->part_size;
        int64_t len = m->size - off < m->part_size ? m->size - off : m->part_size;
        pread_src_t src = { m->fd, off, off + len };
        progress_tap_t tap = { m->prog, 0 };
        cn_client_body_t body = { .len = len,
                                  .fd = -1,
                                  .read = pread_cb,
                                  .ud = &src,
                                  .progress = on_progress,
                                  .progress_ud = &tap };
        cn_client_written_t w;
        cn_jay_error_t je;
        cn_err_t e =
            cn_client_upload_part(m->cl, m->bucket, m->key, m->upload_id, part, &body, &w, &je);
        cn_client_written_clear(&w);
        if (e) {
            pthread_mutex_lock(&m->mu);
            if (!atomic_load(&m->failed)) {
                m->err = e;
                m->jerr = je;
                atomic_store(&m->failed, true);
            }
            pthread_mutex_unlock(&m->mu);
            break;
        }
    }
    return NULL;
}

static int put_multipart(const opts_t *o, cn_client_t *cl, int fd, int64_t size, const char *bucket,
                         const char *key, const char *ctype)
{
    int64_t ps = o->part_size;
    /* The part list is an int list: at most 65535 parts. */
    if ((size + ps - 1) / ps > CN_JAY_MAX_COUNT)
        ps = ((size / CN_JAY_MAX_COUNT) | ((1 << 20) - 1)) + 1;
    cn_jay_error_t je;
    char *upload_id = NULL;
    cn_err_t e = cn_client_create_multipart(cl, bucket, key, ctype, &upload_id, &je);
    if (e)
        return report("put: create multipart upload", e, &je);
    progress_t prog;
    progress_init(&prog, o, size);
    mp_t m = { .cl = cl,
               .bucket = bucket,
               .key = key,
               .upload_id = upload_id,
               .fd = fd,
               .size = size,
               .part_size = ps,
               .n_parts = (int32_t)((size + ps - 1) / ps),
               .prog = &prog };
    atomic_store(&m.next, 1);
    pthread_mutex_init(&m.mu, NULL);
    int jobs = o->jobs < m.n_parts ? o->jobs : m.n_parts;
    pthread_t th[64];
    int started = 0;
    for (; started < jobs; started++)
        if (pthread_create(&th[started], NULL, mp_worker, &m) != 0)
            break;
    if (started == 0)
        mp_worker(&m);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    progress_draw(&prog, true);
    int rc = EXIT_OK;
    if (atomic_load(&m.failed)) {
        rc = report("put: upload part", m.err, &m.jerr);
        cn_client_abort_multipart(cl, bucket, key, upload_id, NULL);
        goto out;
    }
    int32_t *parts = malloc((size_t)m.n_parts * sizeof *parts);
    if (!parts) {
        rc = report("put", -ENOMEM, NULL);
        cn_client_abort_multipart(cl, bucket, key, upload_id, NULL);
        goto out;
    }
    for (int32_t i = 0; i < m.n_parts; i++)
        parts[i] = i + 1;
    cn_client_written_t w;
    e = cn_client_complete_multipart(cl, bucket, key, upload_id, parts, (size_t)m.n_parts, &w, &je);
    free(parts);
    if (e) {
        rc = report("put: complete multipart upload", e, &je);
        cn_client_abort_multipart(cl, bucket, key, upload_id, NULL);
        goto out;
    }
    printf("%s/%s  %lld bytes  %d parts  etag %s  sha256 %s\n", bucket, key, (long long)w.size,
           m.n_parts, w.etag, w.checksum);
    cn_client_written_clear(&w);
out:
    pthread_mutex_destroy(&m.mu);
    pthread_mutex_destroy(&prog.mu);
    free(upload_id);
    return rc;
}

/* Input without a usable size (a pipe, a FIFO, /proc): read a part at a time
 * into memory; one part (or less) is a single PutObject, more go up as
 * sequential multipart parts. */
static int put_stream(const opts_t *o, cn_client_t *cl, int fd, const char *bucket, const char *key,
                      const cn_client_put_opts_t *po)
{
    size_t cap = (size_t)o->part_size;
    uint8_t *buf = malloc(cap);
    if (!buf)
        return report("put", -ENOMEM, NULL);
    cn_jay_error_t je;
    cn_client_written_t w;
    char *upload_id = NULL;
    int32_t *parts = NULL;
    int32_t n_parts = 0;
    int rc = EXIT_OK;
    cn_err_t e;
    progress_t prog;
    progress_init(&prog, o, 0);
    for (;;) {
        long long n = cn_read_full(fd, buf, cap);
        if (n < 0) {
            report("put: read", (cn_err_t)n, NULL);
            rc = EXIT_LOCAL;
            goto fail;
        }
        bool last = (size_t)n < cap;
        mem_src_t src = { buf, (size_t)n, 0 };
        progress_tap_t tap = { &prog, 0 };
        cn_client_body_t body = { .len = n,
                                  .fd = -1,
                                  .read = mem_cb,
                                  .ud = &src,
                                  .progress = on_progress,
                                  .progress_ud = &tap };
        if (!upload_id && last) {
            e = cn_client_put_object(cl, bucket, key, po, &body, &w, &je);
            progress_draw(&prog, true);
            if (e) {
                rc = report("put", e, &je);
                goto fail;
            }
            printf("%s/%s  %lld bytes  etag %s  sha256 %s\n", bucket, key, n, w.etag, w.checksum);
            cn_client_written_clear(&w);
            goto out;
        }
        if (!upload_id) {
            if (po->n_meta)
                fputs("cairn: put: note: --meta is not carried by a multipart upload in v1\n",
                      stderr);
            e = cn_client_create_multipart(cl, bucket, key, po->content_type, &upload_id, &je);
            if (e) {
                rc = report("put: create multipart upload", e, &je);
                goto fail;
            }
        }
        if (n > 0 || n_parts == 0) {
            if (n_parts >= (int32_t)CN_JAY_MAX_COUNT) {
                fputs("cairn: put: more than 65535 parts; raise --part-size\n", stderr);
                rc = EXIT_USAGE;
                goto fail;
            }
            int32_t *np = realloc(parts, (size_t)(n_parts + 1) * sizeof *parts);
            if (!np) {
                rc = report("put", -ENOMEM, NULL);
                goto fail;
            }
            parts = np;
            parts[n_parts] = n_parts + 1;
            e = cn_client_upload_part(cl, bucket, key, upload_id, n_parts + 1, &body, &w, &je);
            if (e) {
                rc = report("put: upload part", e, &je);
                goto fail;
            }
            cn_client_written_clear(&w);
            n_parts++;
        }
        if (last)
            break;
    }
    progress_draw(&prog, true);
    e = cn_client_complete_multipart(cl, bucket, key, upload_id, parts, (size_t)n_parts, &w, &je);
    if (e) {
        rc = report("put: complete multipart upload", e, &je);
        goto fail;
    }
    printf("%s/%s  %lld bytes  %d parts  etag %s  sha256 %s\n", bucket, key, (long long)w.size,
           n_parts, w.etag, w.checksum);
    cn_client_written_clear(&w);
    goto out;
fail:
    if (upload_id)
        cn_client_abort_multipart(cl, bucket, key, upload_id, NULL);
out:
    pthread_mutex_destroy(&prog.mu);
    free(upload_id);
    free(parts);
    free(buf);
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
    if (!S_ISREG(st.st_mode) || st.st_size == 0) {
        rc = put_stream(o, cl, fd, bucket, key, &po);
        goto out;
    }
    int64_t size = st.st_size;
    if (size > o->part_size) {
        if (o->n_meta)
            fputs("cairn: put: note: --meta is not carried by a multipart upload in v1\n", stderr);
        rc = put_multipart(o, cl, fd, size, bucket, key, po.content_type);
        goto out;
    }
    progress_t prog;
    progress_init(&prog, o, size);
    progress_tap_t tap = { &prog, 0 };
    cn_client_body_t body = { .len = size, .fd = fd, .progress = on_progress, .progress_ud = &tap };
    cn_client_written_t w;
    cn_jay_error_t je;
    cn_err_t e = cn_client_put_object(cl, bucket, key, &po, &body, &w, &je);
    progress_draw(&prog, true);
    pthread_mutex_destroy(&prog.mu);
    if (e) {
        rc = report("put", e, &je);
        goto out;
    }
    printf("%s/%s  %lld bytes  etag %s  sha256 %s\n", bucket, key, (long long)size, w.etag,
           w.checksum);
    cn_client_written_clear(&w);
out:
    if (fd >= 0 && !is_stdin)
        close(fd);
    free(bucket);
    free(key);
    return rc;
}

/* ---- get / cat -------------------------------------------------------------------- */

typedef struct hash_sink {
    int fd;
    cn_sha256_t *h;
    cn_err_t err; /* a local write failure, told apart from the network's */
} hash_sink_t;

static cn_err_t hash_write(void *ud, const void *p, size_t n)
{
    hash_sink_t *s = ud;
    cn_sha256_update(s->h, p, n);
    s->err = cn_write_full(s->fd, p, n);
    return s->err;
}

/* Downloads bucket/key to fd, verifying the SHA-256 the server reported. */
static int download(const opts_t *o, cn_client_t *cl, const char *bucket, const char *key, int fd,
                    const char *what)
{
    hash_sink_t hs = { fd, NULL, CN_OK };
    if (cn_sha256_new(&hs.h))
        return report(what, -ENOMEM, NULL);
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
    progress_tap_t tap = { &prog, 0 };
    cn_client_sink_t sink = {
        .fd = -1, .write = hash_write, .ud = &hs, .progress = on_progress, .progress_ud = &tap
    };
    cn_client_object_t info;
    cn_jay_error_t je;
    cn_err_t e = cn_client_get_object(cl, bucket, key, &sink, &info, &je);
    if (prog.done > 0)
        progress_draw(&prog, true);
    pthread_mutex_destroy(&prog.mu);
    uint8_t d[CN_DIGEST_LEN];
    cn_sha256_final(hs.h, d);
    if (hs.err) {
        fprintf(stderr, "cairn: %s: writing the output failed: %s\n", what, cn_strerror(hs.err));
        return EXIT_LOCAL;
    }
    if (e)
        return report(what, e, &je);
    char hex[2 * CN_DIGEST_LEN + 1];
    cn_hex_encode(d, sizeof d, hex);
    int rc = EXIT_OK;
    if (info.checksum && info.checksum[0] && strcasecmp(hex, info.checksum) != 0) {
        fprintf(stderr, "cairn: %s: checksum mismatch: server says %s, received %s\n", what,
                info.checksum, hex);
        rc = EXIT_INTEGRITY;
    }
    cn_client_object_clear(&info);
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
