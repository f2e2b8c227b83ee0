/* The fleet's node registry: each cairnd writes its row in cn_nodes at
 * start (id, advertised URL, version, heartbeat interval; then, from the
 * HTTP face, its console's own URL: cn_node_console), moves its
 * heartbeat every interval from a thread of its own, and marks the row
 * stopped at a clean stop; `cairn admin fleet status` lists the rows.
 *
 * A node's id is --node-id, else DATA/node.id, made once with a random id
 * (written to a unique temporary name, fsynced, then link(2)ed into place so
 * two processes starting at once agree on one).  A row whose heartbeat is
 * older than three of its intervals is "lost": its node died or cannot
 * reach the database.  The registry is for operators: nothing in the
 * server decides anything from it yet (job leases will).
 *
 * This file must never block a request (the heartbeat has its own thread)
 * and never stop a node for a failed heartbeat (it is logged and tried again
 * at the next interval). */
#include "fleet_node.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cairn/crypto.h"
#include "cairn/util.h"
#include "meta/sql/fleet.h"

struct cn_node {
    cn_meta_t *meta;
    char id[CN_NODE_ID_MAX + 1];
    int64_t every_ms;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
};

bool cn_node_id_ok(const char *id)
{
    size_t n = strlen(id);
    if (n == 0 || n > CN_NODE_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)id[i]) && !strchr("._-", id[i]))
            return false;
    return true;
}

/* DATA/node.id's id into id: 0, -ENOENT, CN_E_CORRUPT, -errno. */
static cn_err_t id_read(const char *path, char id[CN_NODE_ID_MAX + 1])
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    char buf[CN_NODE_ID_MAX + 2];
    long long n = cn_read_full(fd, buf, sizeof buf - 1);
    close(fd);
    if (n < 0)
        return (cn_err_t)n;
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
        n--;
    buf[n] = '\0';
    if (!cn_node_id_ok(buf))
        return CN_E_CORRUPT;
    memcpy(id, buf, (size_t)n + 1);
    return 0;
}

/* DATA/node.id, created with a random id when missing. */
static cn_err_t id_file(const char *data_dir, char id[CN_NODE_ID_MAX + 1])
{
    char path[4096], tmp[4200];
    if ((size_t)snprintf(path, sizeof path, "%s/node.id", data_dir) >= sizeof path)
        return -ENAMETOOLONG;
    cn_err_t e = id_read(path, id);
    if (e != -ENOENT)
        return e;
    uint8_t r[8];
    char text[32] = "node-";
    CN_TRY(cn_random_bytes(r, sizeof r));
    cn_hex_encode(r, sizeof r, text + 5);
    memcpy(text + 5 + 2 * sizeof r, "\n", 2);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    e = cn_write_full(fd, text, strlen(text));
    if (e == 0 && fsync(fd) != 0)
        e = -errno;
    close(fd);
    if (e == 0 && link(tmp, path) != 0 && errno != EEXIST)
        e = -errno; /* EEXIST: another process made it first; use theirs */
    unlink(tmp);
    if (e == 0)
        e = cn_fsync_dir(data_dir);
    return e < 0 ? e : id_read(path, id);
}

typedef struct node_write {
    const cn_node_t *n;
    int sql;
    const char *advertise;
} node_write_t;

static cn_err_t node_write_body(cn_meta_txn_t *txn, void *ctx)
{
    const node_write_t *w = ctx;
    const char *sql = cn__sql_fleet[w->sql];
    int64_t now = cn_wall_ms();
    cn_err_t e = w->sql == CN_SQL_FLEET_NODE_UP
                     ? cn_meta_execf(txn, sql, "sssii", w->n->id, w->advertise, CAIRN_VERSION, now,
                                     w->n->every_ms)
                     : cn_meta_execf(txn, sql, "is", now, w->n->id);
    return e < 0 ? e : 0;
}

static cn_err_t node_write(const cn_node_t *n, int sql, const char *advertise)
{
    node_write_t w = { n, sql, advertise };
    return cn_meta_run(n->meta, CN_META_RUN_WRITE | CN_META_RETRY, node_write_body, &w);
}

static void *heartbeat_main(void *arg)
{
    cn_node_t *n = arg;
    pthread_mutex_lock(&n->mu);
    while (!n->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t ns = ts.tv_nsec + (n->every_ms % 1000) * 1000000;
        ts.tv_sec += (time_t)(n->every_ms / 1000 + ns / 1000000000);
        ts.tv_nsec = (long)(ns % 1000000000);
        pthread_cond_timedwait(&n->cv, &n->mu, &ts);
        if (n->stop)
            break;
        pthread_mutex_unlock(&n->mu);
        cn_err_t e = node_write(n, CN_SQL_FLEET_NODE_BEAT, NULL);
        if (e < 0)
            cn_warn("fleet", "node %s: heartbeat failed: %s", n->id, cn_strerror(e));
        pthread_mutex_lock(&n->mu);
    }
    pthread_mutex_unlock(&n->mu);
    return NULL;
}

cn_err_t cn_node_start(cn_meta_t *meta, const char *data_dir, const char *id, const char *advertise,
                       int64_t every_ms, cn_node_t **out)
{
    *out = NULL;
    if (every_ms <= 0 || (id && !cn_node_id_ok(id))) {
        cn_error("fleet", "--node-id wants 1 to %d of A-Z a-z 0-9 . _ -", CN_NODE_ID_MAX);
        return CN_E_INVALID;
    }
    CN_TRY(cn__sql_migrate(meta, &cn__sql_fleet_set));
    cn_node_t *n = calloc(1, sizeof *n);
    if (!n)
        return -ENOMEM;
    n->meta = meta;
    n->every_ms = every_ms;
    cn_err_t e = 0;
    if (id)
        snprintf(n->id, sizeof n->id, "%s", id);
    else if ((e = id_file(data_dir, n->id)) < 0)
        cn_error("fleet", "%s/node.id: %s", data_dir, cn_strerror(e));
    if (e >= 0)
        e = node_write(n, CN_SQL_FLEET_NODE_UP, advertise);
    pthread_mutex_init(&n->mu, NULL);
    pthread_cond_init(&n->cv, NULL);
    if (e >= 0)
        e = -pthread_create(&n->thread, NULL, heartbeat_main, n);
    if (e < 0) {
        pthread_cond_destroy(&n->cv);
        pthread_mutex_destroy(&n->mu);
        free(n);
        return e;
    }
    cn_info("fleet", "node %s registered (heartbeat every %lld ms)", n->id, (long long)every_ms);
    cn_meta_watch_label(meta, n->id); /* lease holders named by node (fleet status) */
    *out = n;
    return 0;
}

void cn_node_stop(cn_node_t *n)
{
    if (!n)
        return;
    pthread_mutex_lock(&n->mu);
    n->stop = true;
    pthread_cond_signal(&n->cv);
    pthread_mutex_unlock(&n->mu);
    pthread_join(n->thread, NULL);
    cn_err_t e = node_write(n, CN_SQL_FLEET_NODE_DOWN, NULL);
    if (e < 0)
        cn_warn("fleet", "node %s: could not mark it stopped: %s", n->id, cn_strerror(e));
    pthread_cond_destroy(&n->cv);
    pthread_mutex_destroy(&n->mu);
    free(n);
}

typedef struct node_list {
    cn_node_fn fn;
    void *arg;
} node_list_t;

static void col_copy(cn_meta_stmt_t *st, int col, char *out, size_t cap)
{
    size_t len = 0;
    const char *s = cn_meta_column_text(st, col, &len);
    len = s ? (len < cap ? len : cap - 1) : 0;
    if (len)
        memcpy(out, s, len);
    out[len] = '\0';
}

static cn_err_t node_list_body(cn_meta_txn_t *txn, void *ctx)
{
    const node_list_t *l = ctx;
    cn_meta_stmt_t *st = NULL;
    cn_err_t e = cn_meta_queryf(txn, &st, cn__sql_fleet[CN_SQL_FLEET_NODE_LIST], "");
    while (e >= 0 && (e = cn_meta_step(st)) == CN_META_ROW) {
        cn_node_info_t ni;
        memset(&ni, 0, sizeof ni);
        col_copy(st, 0, ni.id, sizeof ni.id);
        col_copy(st, 1, ni.advertise, sizeof ni.advertise);
        col_copy(st, 2, ni.version, sizeof ni.version);
        ni.started_ms = cn_meta_column_int64(st, 3);
        ni.heartbeat_ms = cn_meta_column_int64(st, 4);
        ni.every_ms = cn_meta_column_int64(st, 5);
        ni.stopped_ms = cn_meta_column_is_null(st, 6) ? 0 : cn_meta_column_int64(st, 6);
        col_copy(st, 7, ni.console, sizeof ni.console);
        e = l->fn(l->arg, &ni);
    }
    cn_meta_finish(st);
    return e < 0 ? e : 0;
}

const char *cn_node_id(const cn_node_t *n)
{
    return n->id;
}

/* Into out (cap bytes), the base URL of a console on port at advertise's
 * host: "SCHEME://HOST:PORT", scheme https when tls; "" when advertise is
 * no http(s) URL with a host, or the URL does not fit. */
static void console_url(const char *advertise, bool tls, int port, char *out, size_t cap)
{
    const char *host = !strncmp(advertise, "http://", 7)    ? advertise + 7
                       : !strncmp(advertise, "https://", 8) ? advertise + 8
                                                            : NULL;
    out[0] = '\0';
    if (!host)
        return;
    size_t auth = strcspn(host, "/?#"); /* the authority: [userinfo@]host[:port] */
    for (size_t i = auth; i > 0; i--)
        if (host[i - 1] == '@') {
            host += i;
            auth -= i;
            break;
        }
    size_t hl = host[0] == '[' ? strcspn(host, "]") + 1 : strcspn(host, ":");
    if (hl > auth)
        hl = auth;
    int n =
        hl ? snprintf(out, cap, "%s://%.*s:%d", tls ? "https" : "http", (int)hl, host, port) : 0;
    if (n < 0 || (size_t)n >= cap)
        out[0] = '\0';
}

typedef struct node_console {
    const char *id;
    bool tls;
    int port;
} node_console_t;

static cn_err_t node_console_body(cn_meta_txn_t *txn, void *ctx)
{
    const node_console_t *c = ctx;
    cn_meta_stmt_t *st = NULL;
    char adv[256] = "", url[256] = "";
    cn_err_t e = cn_meta_queryf(txn, &st, cn__sql_fleet[CN_SQL_FLEET_NODE_ADVERTISE], "s", c->id);
    if (e >= 0 && (e = cn_meta_step(st)) == CN_META_ROW)
        col_copy(st, 0, adv, sizeof adv);
    cn_meta_finish(st);
    if (e >= 0)
        console_url(adv, c->tls, c->port, url, sizeof url);
    if (e >= 0 && url[0])
        e = cn_meta_execf(txn, cn__sql_fleet[CN_SQL_FLEET_NODE_CONSOLE], "ss", url, c->id);
    return e < 0 ? e : 0;
}

cn_err_t cn_node_console(cn_meta_t *meta, const char *id, bool tls, int port)
{
    node_console_t c = { id, tls, port };
    return cn_meta_run(meta, CN_META_RUN_WRITE | CN_META_RETRY, node_console_body, &c);
}

cn_err_t cn_node_migrate(cn_meta_t *meta)
{
    return cn__sql_migrate(meta, &cn__sql_fleet_set);
}

cn_err_t cn_node_list(cn_meta_t *meta, cn_node_fn fn, void *arg)
{
    CN_TRY(cn__sql_migrate(meta, &cn__sql_fleet_set));
    node_list_t l = { fn, arg };
    return cn_meta_run(meta, CN_META_RUN_READ | CN_META_RETRY, node_list_body, &l);
}

int64_t cn_node_every_ms(void)
{
    const char *v = getenv("CAIRN_NODE_HEARTBEAT_MS");
    char *end = NULL;
    long long ms = v && *v ? strtoll(v, &end, 10) : 0;
    if (v && *v && (*end || ms < 10 || ms > 3600000)) {
        cn_warn("fleet", "CAIRN_NODE_HEARTBEAT_MS=%s: want 10 to 3600000; using 10000", v);
        ms = 0;
    }
    return ms ? ms : 10000;
}

const char *cn_node_state(const cn_node_info_t *n, int64_t now_ms)
{
    if (n->stopped_ms)
        return "stopped";
    return now_ms - n->heartbeat_ms > 3 * n->every_ms ? "lost" : "up";
}
