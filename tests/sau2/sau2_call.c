/* One SAU2 request through libcairn's client connection, for the listener's
 * integration tests (Python's ssl cannot offer X25519MLKEM768).  Prints
 * "group NAME" after the handshake, then "code N" and either "message TEXT"
 * or one "row" line per reply row followed by its strings, one per line,
 * each prefixed "  " with newlines written as "\n".
 *
 * usage: sau2_call [--ca FILE] [--cert FILE --key FILE] [--op HEX32]
 *                  [--secret-env VAR] [--wait-first MS] [--again-after MS] [--pool]
 *                  [--threads N --repeat R] HOST:PORT VERB [ARG...]
 * --wait-first: sleep before sending; --again-after: send the request once
 * more on the same connection after sleeping (prints "second" and its
 * outcome); --pool: both through libcairn's connection pool instead (no
 * "group" line); with --threads, the first sending is N threads at once,
 * each sending the request R times through the one pool, which prints
 * "calls N*R ok K" instead of the replies.  Exit 0 after a reply (every
 * reply), 3 when the server closed the connection first ("closed"), 4 when
 * the handshake failed ("handshake failed"), 1 else. */
#include "cairn/sau2_client.h"

#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

static void print_str(const cn_sau2_str_t *s)
{
    fputs("  ", stdout);
    for (uint16_t i = 0; i < s->len; i++) {
        if (s->p[i] == '\n')
            fputs("\\n", stdout);
        else
            putchar(s->p[i]);
    }
    putchar('\n');
}

/* One call on c, or through the pool pl when c is NULL. */
static int call_once(cn_sau2_conn_t *c, cn_sau2_client_t *pl, const cn_sau2_req_t *req)
{
    cn_buf_t payload = { 0 };
    cn_sau2_reply_view_t v;
    cn_err_t e =
        c ? cn_sau2_conn_call(c, req, &payload, &v) : cn_sau2_client_call(pl, req, &payload, &v);
    int rc = 0;
    if (e == CN_E_CLOSED) {
        puts("closed");
        rc = 3;
    } else if (e < 0) {
        printf("error %s\n", cn_strerror(e));
        rc = 1;
    } else {
        printf("code %u\n", v.code);
        if (v.code) {
            printf("message %.*s\n", v.message.len, (const char *)v.message.p);
        } else {
            size_t off = 0;
            cn_sau2_row_t row;
            while (cn_sau2_row_next(&v, &off, &row)) {
                puts("row");
                for (uint16_t i = 0; i < row.n; i++)
                    print_str(&row.s[i]);
            }
        }
    }
    cn_buf_free(&payload);
    fflush(stdout);
    return rc;
}

/* --threads: n threads sending req repeat times each through one pool. */
typedef struct burst {
    cn_sau2_client_t *pl;
    const cn_sau2_req_t *req;
    long repeat;
    atomic_long ok;
} burst_t;

static void *burst_main(void *arg)
{
    burst_t *b = arg;
    cn_buf_t payload = { 0 };
    for (long i = 0; i < b->repeat; i++) {
        cn_sau2_reply_view_t v;
        if (cn_sau2_client_call(b->pl, b->req, &payload, &v) == CN_OK && v.code == 0)
            atomic_fetch_add(&b->ok, 1);
    }
    cn_buf_free(&payload);
    return NULL;
}

static int burst_calls(cn_sau2_client_t *pl, const cn_sau2_req_t *req, long n, long repeat)
{
    burst_t b = { .pl = pl, .req = req, .repeat = repeat };
    atomic_init(&b.ok, 0);
    pthread_t th[64];
    long started = 0;
    while (started < n && pthread_create(&th[started], NULL, burst_main, &b) == 0)
        started++;
    for (long i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    long ok = atomic_load(&b.ok);
    printf("calls %ld ok %ld\n", n * repeat, ok);
    fflush(stdout);
    return ok == n * repeat ? 0 : 1;
}

/* --pool: the request through libcairn's pool (threads > 0: by a burst),
 * and again after again_after ms (the pool reuses its connection, or
 * retries on a new one when the service closed it). */
static int pool_calls(const cn_sau2_client_opts_t *o, const cn_sau2_req_t *req, long again_after,
                      long threads, long repeat)
{
    cn_sau2_client_t *pl = NULL;
    if (cn_sau2_client_new(o, &pl) < 0)
        return 1;
    int rc = threads > 0 ? burst_calls(pl, req, threads, repeat) : call_once(NULL, pl, req);
    if (rc == 0 && again_after >= 0) {
        sleep_ms(again_after);
        puts("second");
        rc = call_once(NULL, pl, req);
    }
    cn_sau2_client_free(pl);
    return rc;
}

static int hex_op(const char *s, uint8_t op[CN_SAU2_ID_LEN])
{
    if (strlen(s) != 2 * CN_SAU2_ID_LEN)
        return -1;
    for (int i = 0; i < CN_SAU2_ID_LEN; i++)
        if (sscanf(s + 2 * i, "%2hhx", &op[i]) != 1)
            return -1;
    return 0;
}

int main(int argc, char **argv)
{
    cn_sau2_client_opts_t o = { 0 };
    cn_sau2_req_t req = { 0 };
    long wait_first = 0, again_after = -1, threads = 0, repeat = 1;
    bool pool = false;
    static const struct option opts[] = { { "ca", required_argument, 0, 'a' },
                                          { "cert", required_argument, 0, 'c' },
                                          { "key", required_argument, 0, 'k' },
                                          { "op", required_argument, 0, 'o' },
                                          { "secret-env", required_argument, 0, 's' },
                                          { "wait-first", required_argument, 0, 'w' },
                                          { "again-after", required_argument, 0, 'g' },
                                          { "pool", no_argument, 0, 'p' },
                                          { "threads", required_argument, 0, 't' },
                                          { "repeat", required_argument, 0, 'r' },
                                          { 0, 0, 0, 0 } };
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'a': o.trust_file = optarg; break;
        case 'c': o.cert_file = optarg; break;
        case 'k': o.key_file = optarg; break;
        case 'o':
            if (hex_op(optarg, req.op) < 0)
                return 2;
            break;
        case 's': {
            const char *s = getenv(optarg);
            req.has_secret = s != NULL;
            req.secret =
                (cn_sau2_str_t){ (const uint8_t *)(s ? s : ""), (uint16_t)(s ? strlen(s) : 0) };
            break;
        }
        case 'w': wait_first = atol(optarg); break;
        case 'g': again_after = atol(optarg); break;
        case 'p': pool = true; break;
        case 't': threads = atol(optarg); break;
        case 'r': repeat = atol(optarg); break;
        default: return 2;
        }
    }
    if (argc - optind < 2 || argc - optind - 1 > CN_SAU2_MAX_STRINGS || threads < 0 ||
        threads > 64 || repeat < 1 || (threads && !pool)) {
        fputs("usage: sau2_call [options] HOST:PORT VERB [ARG...]\n", stderr);
        return 2;
    }
    o.addr = argv[optind];
    req.argc = (uint16_t)(argc - optind - 1);
    for (uint16_t i = 0; i < req.argc; i++)
        req.argv[i] = (cn_sau2_str_t){ (const uint8_t *)argv[optind + 1 + i],
                                       (uint16_t)strlen(argv[optind + 1 + i]) };
    if (pool)
        return pool_calls(&o, &req, again_after, threads, repeat);
    cn_sau2_conn_t *c = NULL;
    cn_err_t e = cn_sau2_conn_open(&o, &c);
    if (e < 0) {
        printf("handshake failed: %s\n", cn_strerror(e));
        return e == CN_E_AUTH ? 4 : 1;
    }
    printf("group %s\n", cn_sau2_conn_group(c));
    fflush(stdout);
    if (wait_first > 0)
        sleep_ms(wait_first);
    int rc = call_once(c, NULL, &req);
    if (rc == 0 && again_after >= 0) {
        sleep_ms(again_after);
        puts("second");
        rc = call_once(c, NULL, &req);
    }
    cn_sau2_conn_close(c);
    return rc;
}
