/* The HTTP/1.1 server (include/cairn/http.h): its configuration and routes,
 * and the cn_adapter_t that puts it on cairn's network layer (cairn/net.h).
 *
 * The layer's loop accepts, applies admission and holds idle connections;
 * each request (head = 0: the adapter reads its own) goes to the query pool
 * when it reads and to the storage pool when it writes or carries a body
 * (http_classify, from the first bytes the loop peeks), where serve.c runs
 * it.  A connection's state between requests is a
 * few hundred bytes: its read buffer exists only while it is served, and
 * bytes of a pipelined request go back to the layer (cn_conn_unread).
 *
 * busy() is admission's refusal (the connection table is full of answered
 * connections, or the source holds its share of pending ones): S3's 503
 * SlowDown with Retry-After, written on the raw socket before a byte is
 * read, then the layer closes it.
 *
 * Stand-alone (cn_http_server_start: tests, embedders), the server makes a
 * network layer of its own and runs its loop on one thread; under cairnd it
 * is one listener of the shared layer (cn_http_server_adapter). */
#include "http_int.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CN__MOD "http"

void cn_http_config_default(cn_http_config_t *c)
{
    memset(c, 0, sizeof *c);
    c->listen = "127.0.0.1:0";
    c->log_name = "http";
}

/* ---- the adapter ------------------------------------------------------------- */
static cn_err_t http_open(void *actx, cn_conn_t *c, void **cstate)
{
    cn_http_server_t *s = actx;
    cn__hconn_t *hc = calloc(1, sizeof *hc);
    if (!hc)
        return -ENOMEM;
    int rc = cn_cond_init_mono(&hc->cv); /* cn__req_wait_resume's clock */
    if (rc) {
        free(hc);
        return -rc;
    }
    pthread_mutex_init(&hc->mu, NULL);
    hc->srv = s;
    hc->c = c;
    *cstate = hc;
    return CN_OK;
}

static void http_close(void *cstate)
{
    cn__hconn_t *hc = cstate;
    if (!hc)
        return;
    cn__serve_abandon(hc);
    pthread_cond_destroy(&hc->cv);
    pthread_mutex_destroy(&hc->mu);
    free(hc->buf);
    free(hc);
}

/* The pool of a request, from the first bytes of its request line (head:
 * NUL-terminated, NULL under TLS): reads go to the query pool, so that
 * uploads stalled on the storage pool never hold up a GET; mutations,
 * bodies and whatever the bytes at hand do not show go to the storage pool.
 * The route decides (cn_http_route_t.reads), else the method: GET, HEAD and
 * OPTIONS read. */
static int http_classify(void *cstate, const uint8_t *head)
{
    const cn__hconn_t *hc = cstate;
    if (!head)
        return CN_POOL_STORAGE;
    const char *line = (const char *)head;
    char method[8], path[CN_HEAD_MAX];
    size_t ml = strcspn(line, " ");
    if (line[ml] != ' ' || ml >= sizeof method)
        return CN_POOL_STORAGE;
    memcpy(method, line, ml);
    method[ml] = 0;
    unsigned mb = cn__method_bit(method);
    const char *p = line + ml + 1;
    size_t pl = strcspn(p, " ?\r\n");
    memcpy(path, p, pl); /* shorter than head */
    path[pl] = 0;
    /* path may be a prefix of the request's when the peeked bytes cut it
     * short, and no route's match() runs: a hint for the pool, nothing more. */
    int i = mb ? cn__route_find(hc->srv, mb, path, NULL) : -1;
    const cn_http_route_t *rt = i >= 0 ? &hc->srv->routes[i] : NULL;
    bool reads = rt && rt->reads ? rt->reads(method, path, rt->ctx)
                                 : (mb & (CN_HTTP_GET | CN_HTTP_HEAD | CN_HTTP_OPTIONS)) != 0;
    return reads ? CN_POOL_QUERY : CN_POOL_STORAGE;
}

size_t cn__slow_down(char *out, size_t n)
{
    static const char body[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                               "<Error><Code>SlowDown</Code>"
                               "<Message>Please reduce your request rate.</Message></Error>";
    int w = snprintf(out, n,
                     "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/xml\r\n"
                     "Retry-After: 1\r\nServer: cairn\r\nConnection: close\r\n"
                     "Content-Length: %zu\r\n\r\n%s",
                     sizeof body - 1, body);
    return w < 0 ? 0 : (size_t)w < n ? (size_t)w : n - 1;
}

static void http_busy(void *actx, int fd)
{
    (void)actx;
    char msg[CN__SLOW_DOWN_MAX];
    size_t n = cn__slow_down(msg, sizeof msg);
    /* One write into an empty socket buffer: it never waits. */
    ssize_t w = send(fd, msg, n, MSG_DONTWAIT | MSG_NOSIGNAL);
    (void)w;
    /* Closing over unread bytes would reset the connection and could take
     * the answer with it: end our side, and take what already arrived. */
    shutdown(fd, SHUT_WR);
    char sink[1024];
    for (int i = 0; i < 64 && recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0; i++)
        ;
}

/* Where a request head ends: past its first empty line (CRLF or a bare LF,
 * which the parser judges); 0 while none has come. */
static size_t http_head_end(const uint8_t *p, size_t n)
{
    for (const uint8_t *q = p, *end = p + n; (q = memchr(q, '\n', (size_t)(end - q))) != NULL;) {
        q++;
        if (q < end && *q == '\n')
            return (size_t)(q + 1 - p);
        if (q + 1 < end && q[0] == '\r' && q[1] == '\n')
            return (size_t)(q + 2 - p);
    }
    return 0;
}

static void adapter_init(cn_http_server_t *s)
{
    s->adapter = (cn_adapter_t){
        .name = s->log_name,
        .head_len = 0,
        .head_end = http_head_end,
        .head_wait_ms = s->cfg.head_timeout_ms,
        .busy = http_busy,
        .open = http_open,
        .classify = http_classify,
        .serve = cn__serve,
        .resume = cn__serve_resume,
        .close = http_close,
    };
}

/* ---- the server ---------------------------------------------------------------- */
static char *server_dup(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* "host:port", "[v6]:port" or ":port" (every IPv4 address), checked here so
 * that a bad address is refused when the server is made. */
static char *listen_spec(const char *spec)
{
    char *out = NULL;
    if (spec[0] == ':') {
        size_t n = strlen(spec) + 8;
        out = malloc(n);
        if (out)
            snprintf(out, n, "0.0.0.0%s", spec);
    } else {
        out = strdup(spec);
    }
    return out;
}

cn_err_t cn_http_server_new(const cn_http_config_t *cfg, cn_http_server_t **out)
{
    *out = NULL;
    cn_http_server_t *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->cfg = *cfg;
    s->listen = listen_spec(cfg->listen ? cfg->listen : "127.0.0.1:0");
    s->log_name = server_dup(cfg->log_name ? cfg->log_name : "http");
    s->region = server_dup(cfg->region);
    s->tls_cert = server_dup(cfg->tls_cert_file);
    s->tls_key = server_dup(cfg->tls_key_file);
    s->cfg.listen = s->listen;
    s->cfg.log_name = s->log_name;
    s->cfg.region = s->region;
    s->cfg.tls_cert_file = s->tls_cert;
    s->cfg.tls_key_file = s->tls_key;
    if (!s->listen || !s->log_name || (cfg->region && !s->region) ||
        (cfg->tls_cert_file && !s->tls_cert) || (cfg->tls_key_file && !s->tls_key)) {
        cn_http_server_free(s);
        return -ENOMEM;
    }
    struct sockaddr_storage ss;
    socklen_t sl;
    if (cn_net_addr_parse(s->listen, &ss, &sl) != CN_OK || !s->tls_cert != !s->tls_key) {
        cn_error(CN__MOD, "bad listen address '%s' or half a TLS pair", s->listen);
        cn_http_server_free(s);
        return CN_E_INVALID;
    }
    if (!s->cfg.threads)
        s->cfg.threads = 8;
    if (!s->cfg.max_connections)
        s->cfg.max_connections = 4096;
    if (!s->cfg.idle_timeout_s)
        s->cfg.idle_timeout_s = 60;
    if (!s->cfg.head_timeout_ms)
        s->cfg.head_timeout_ms = 10000;
    if (!s->cfg.max_body)
        s->cfg.max_body = 5ull << 30;
    if (!s->cfg.max_skew_ms)
        s->cfg.max_skew_ms = CN_SIGV4_MAX_SKEW_MS;
    adapter_init(s);
    cn__metrics_register_builtin(s);
    *out = s;
    return CN_OK;
}

cn_err_t cn_http_server_route(cn_http_server_t *s, const cn_http_route_t *r)
{
    if (s->started || !r->on_request)
        return CN_E_INVALID;
    if (s->n_routes >= CN__MAX_ROUTES)
        return CN_E_LIMIT;
    size_t i = s->n_routes;
    s->routes[i] = *r;
    s->route_prefix[i] = strdup(r->prefix ? r->prefix : "/");
    s->route_name[i] = strdup(r->name ? r->name : "other");
    if (!s->route_prefix[i] || !s->route_name[i]) {
        free(s->route_prefix[i]);
        free(s->route_name[i]);
        return -ENOMEM;
    }
    if (r->flags & CN_HTTP_ROUTE_LOOP)
        s->adapter.fast = cn__serve_fast; /* plaintext bodiless reads on the loop */
    s->routes[i].prefix = s->route_prefix[i];
    s->routes[i].name = s->route_name[i];
    s->n_routes++;
    return CN_OK;
}

cn_err_t cn_http_server_metrics_source(cn_http_server_t *s, void (*fn)(cn_buf_t *, void *),
                                       void *ctx)
{
    if (s->n_metric_src >= CN__MAX_METRIC_SOURCES)
        return CN_E_LIMIT;
    s->metric_src[s->n_metric_src].fn = fn;
    s->metric_src[s->n_metric_src].ctx = ctx;
    s->n_metric_src++;
    return CN_OK;
}

cn_err_t cn_http_server_adapter(cn_http_server_t *s, const cn_adapter_t **ad, void **actx)
{
    if (s->net)
        return CN_E_INVALID;
    s->started = true;
    *ad = &s->adapter;
    *actx = s;
    return CN_OK;
}

/* ---- stand-alone ------------------------------------------------------------------ */
static void *net_main(void *arg)
{
    cn_http_server_t *s = arg;
    cn_err_t e = cn_server_run(s->net);
    if (e)
        cn_error(CN__MOD, "%s: the network layer stopped: %s", s->log_name, cn_strerror(e));
    return NULL;
}

cn_err_t cn_http_server_start(cn_http_server_t *s)
{
    if (s->started)
        return CN_E_INVALID;
    cn_server_config_t sc;
    cn_server_config_default(&sc);
    sc.workers[CN_POOL_HANDSHAKE] = s->cfg.threads < 4 ? 2 : s->cfg.threads / 2;
    sc.workers[CN_POOL_QUERY] = s->cfg.threads;
    sc.workers[CN_POOL_STORAGE] = s->cfg.threads;
    cn_listen_opts_t lo = {
        .addr = s->listen,
        .tls_cert = s->tls_cert,
        .tls_key = s->tls_key,
        .allow_plaintext_public = true, /* the embedder's choice, not cairnd's rule */
    };
    cn_limits_default(&lo.limits);
    lo.limits.max_conns = s->cfg.max_connections;
    if (s->cfg.max_per_ip)
        lo.limits.max_pending_per_source = s->cfg.max_per_ip;
    lo.limits.idle_ms = (int64_t)s->cfg.idle_timeout_s * 1000;
    cn_err_t e = cn_server_create(&sc, &s->net);
    if (e)
        return e;
    s->started = true;
    struct sockaddr_storage ss;
    socklen_t sl;
    if ((e = cn_server_listen(s->net, &s->adapter, s, &lo)) < 0 ||
        (e = cn_server_listener_addr(s->net, 0, &ss, &sl)) < 0)
        goto fail;
    s->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                             : ((struct sockaddr_in *)&ss)->sin_port);
    int rc = pthread_create(&s->net_thread, NULL, net_main, s);
    if (rc) {
        e = -rc;
        goto fail;
    }
    s->net_running = true;
    return CN_OK;
fail:
    cn_server_destroy(s->net);
    s->net = NULL;
    return e;
}

int cn_http_server_port(const cn_http_server_t *s)
{
    return s->port;
}

void cn_http_server_stop(cn_http_server_t *s)
{
    if (!s || !s->net)
        return;
    if (s->net_running) {
        cn_server_stop(s->net);
        pthread_join(s->net_thread, NULL);
        s->net_running = false;
    }
    cn_server_destroy(s->net);
    s->net = NULL;
}

void cn_http_server_free(cn_http_server_t *s)
{
    if (!s)
        return;
    cn_http_server_stop(s);
    for (size_t i = 0; i < s->n_routes; i++) {
        free(s->route_prefix[i]);
        free(s->route_name[i]);
    }
    free(s->listen);
    free(s->log_name);
    free(s->region);
    free(s->tls_cert);
    free(s->tls_key);
    free(s);
}
