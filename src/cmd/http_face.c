/* cairnd's HTTP listener: routes, credentials, its place on the network
 * layer and shutdown order. */
#include "http_face.h"
#include "fleet_node.h"
#include "cairn/blobops.h"
#include "cairn/console.h"
#include "cairn/http.h"
#include "cairn/meta.h"
#include "cairn/s3.h"
#include "cairn/store.h"
#include "cairn/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    cn_services_t *svc;
    cn_http_server_t *srv;
    cn_s3_t *s3;
    cn_blobs_http_t *blobs;
    cn_console_t *console;     /* on the HTTP listener, or on its own */
    cn_http_server_t *con_srv; /* --console ADDR: the console's own server */
    uint64_t min_part;         /* CAIRN_S3_MIN_PART_SIZE (0: S3's), S3 and console */
} http_face_t;

static bool env_true(const char *name)
{
    const char *v = getenv(name);
    return v && (!strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "yes"));
}

/* CAIRN_S3_MIN_PART_SIZE: bytes, 1 .. 5 GiB; unset = 0 (S3's 5 MiB).
 * CN_E_INVALID, logged, for anything else: a typo must not start a server
 * that silently accepts what S3 refuses. */
static cn_err_t env_min_part(uint64_t *out)
{
    const char *v = getenv("CAIRN_S3_MIN_PART_SIZE");
    *out = 0;
    if (!v)
        return CN_OK;
    char *end = NULL;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (!*v || *end || errno || n < 1 || n > (5ull << 30)) {
        cn_error("http", "CAIRN_S3_MIN_PART_SIZE=%s: want bytes, 1 to 5 GiB", v);
        return CN_E_INVALID;
    }
    *out = n;
    return CN_OK;
}

/* /_cairn/ready: 200 only while the metadata engine and the blob backend
 * both answer, else 503 with {"ready":false,"reason":...}
 * (/_cairn/health stays liveness). */
static int ready_request(cn_http_req_t *r, void *ctx)
{
    cn_services_t *svc = ctx;
    cn_meta_txn_t *txn = NULL;
    int64_t v = 0;
    const char *why = NULL;
    cn_err_t e = cn_meta_begin(svc->meta, CN_META_READ, &txn);
    if (e >= 0)
        cn_meta_rollback(txn);
    if (e >= 0)
        e = cn_meta_schema_version(svc->meta, "store", &v);
    if (e < 0)
        why = "metadata";
    else if (cn_store_ping(svc->store) < 0)
        why = "blob_backend";
    char body[128];
    int n = why ? snprintf(body, sizeof body,
                           "{\"ready\":false,\"reason\":\"%s unavailable\",\"component\":\"%s\"}",
                           why, why)
                : snprintf(body, sizeof body, "{\"ready\":true}");
    return cn_http_respond(r, why ? 503 : 200, "application/json", body, (size_t)n);
}

static cn_err_t ready_register(cn_http_server_t *srv, cn_services_t *svc)
{
    cn_http_route_t ready = {
        .name = "ready",
        .methods = CN_HTTP_GET | CN_HTTP_HEAD,
        .prefix = "/_cairn/ready",
        .flags = CN_HTTP_ROUTE_EXACT | CN_HTTP_ROUTE_OWN_AUTH_ERRORS,
        .on_request = ready_request,
        .ctx = svc,
    };
    return cn_http_server_route(srv, &ready);
}

/* The console's node picker over the fleet's registry (cn_console_nodes_fn). */
typedef struct {
    cn_console_node_t *out;
    size_t cap, n;
    int64_t now_ms;
} node_walk_t;

static cn_err_t node_one(void *arg, const cn_node_info_t *ni)
{
    node_walk_t *w = arg;
    if (w->n == w->cap)
        return CN_OK;
    cn_console_node_t *o = &w->out[w->n++];
    snprintf(o->id, sizeof o->id, "%s", ni->id);
    snprintf(o->url, sizeof o->url, "%s", ni->advertise);
    snprintf(o->console, sizeof o->console, "%s", ni->console);
    o->up = strcmp(cn_node_state(ni, w->now_ms), "up") == 0;
    return CN_OK;
}

static cn_err_t console_nodes(void *arg, cn_console_node_t *out, size_t cap, size_t *n)
{
    node_walk_t w = { out, cap, 0, cn_wall_ms() };
    cn_err_t e = cn_node_list(arg, node_one, &w);
    *n = w.n;
    return e;
}

/* The console's config over f's services (own: it has a listener of its
 * own, whose presigned links then point at s3_base). */
static void console_config(const http_face_t *f, bool own, const char *s3_base,
                           cn_console_config_t *cc)
{
    const cn_services_t *svc = f->svc;
    *cc = (cn_console_config_t){ .meta = svc->meta,
                                 .identity = svc->identity,
                                 .objects = svc->objects,
                                 .repos = svc->repos,
                                 .blobs = svc->blobs,
                                 .node = svc->node_id,
                                 .nodes = console_nodes,
                                 .nodes_arg = svc->meta,
                                 .own_origin = own,
                                 .s3_base = s3_base,
                                 .min_part_size = f->min_part };
    cn_console_config_env(cc);
}

/* The bound address of the listener srv bound last into *last (zeroed when
 * none); whether there is one. */
static bool last_listener(cn_server_t *srv, struct sockaddr_storage *last)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    size_t i = 0;
    memset(last, 0, sizeof *last);
    while (cn_server_listener_addr(srv, i, &ss, &sl) >= 0) {
        *last = ss;
        i++;
    }
    return i > 0;
}

/* The absolute base URL of the listener srv bound last ("http://HOST:PORT"),
 * for the presigned links of a console on an origin of its own. */
static void last_listener_url(cn_server_t *srv, bool tls, char *out, size_t cap)
{
    struct sockaddr_storage last;
    char text[CN_NET_ADDR_LEN] = "127.0.0.1";
    if (last_listener(srv, &last))
        cn_net_addr_format((struct sockaddr *)&last, text);
    snprintf(out, cap, "%s://%s", tls ? "https" : "http", text);
}

/* Records the console's own listener, the one srv bound last, in this
 * node's registry row (cn_node_console: its advertised host with this bound
 * port), where peers fetch its metrics (GET metrics?node=). */
static cn_err_t console_own_record(const cn_services_t *svc, cn_server_t *srv, bool tls)
{
    struct sockaddr_storage ss;
    if (!svc->meta || !svc->node_id || !last_listener(srv, &ss))
        return CN_OK;
    int port = ss.ss_family == AF_INET    ? ntohs(((struct sockaddr_in *)&ss)->sin_port)
               : ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                          : 0;
    cn_err_t e = port ? cn_node_console(svc->meta, svc->node_id, tls, port) : CN_OK;
    if (e < 0)
        cn_error("fleet", "node %s: cannot record its console's URL: %s", svc->node_id,
                 cn_strerror(e));
    return e;
}

/* Whether r is an upload that a link the console minted carries, the one
 * piece of S3 a console of its own origin serves (its page may connect to
 * nothing else): PUT /BUCKET/KEY (PutObject) or the same with partNumber and
 * uploadId (UploadPart), signed in the query (X-Amz-*), no copy source, no
 * other subresource.  Nothing that reads stored bytes ever matches. */
static bool console_upload(const cn_http_req_t *r)
{
    if (cn_http_req_method_bit(r) != CN_HTTP_PUT || cn_http_req_header(r, "x-amz-copy-source"))
        return false;
    const char *p = cn_http_req_path(r, NULL);
    const char *slash = strchr(p + 1, '/');
    if (p[1] == '_' || !slash || slash == p + 1 || !slash[1])
        return false; /* reserved, or no bucket and key */
    bool part = false, upload = false, sig = false;
    for (size_t i = 0, n = cn_http_req_query_count(r); i < n; i++) {
        const char *name = NULL, *value = NULL;
        cn_http_req_query_at(r, i, &name, &value);
        if (!strncmp(name, "X-Amz-", 6))
            sig = sig || !strcmp(name, "X-Amz-Signature");
        else if (!strcmp(name, "partNumber"))
            part = true;
        else if (!strcmp(name, "uploadId"))
            upload = true;
        else
            return false;
    }
    return sig && part == upload;
}

static bool console_other(const cn_http_req_t *r, void *ctx)
{
    (void)ctx;
    return !console_upload(r);
}

/* A console-face 404: the JSON body ctx (a static string), nosniff. */
static int console_not_found(cn_http_req_t *r, void *ctx)
{
    const char *body = ctx;
    (void)cn_http_resp_header(r, "X-Content-Type-Options", "nosniff");
    return cn_http_respond(r, 404, "application/json", body, strlen(body));
}

/* Routes what is under prefix (and match passes, when given) on srv to the
 * 404 of body (a static JSON string). */
static cn_err_t not_found_route(cn_http_server_t *srv, const char *prefix,
                                bool (*match)(const cn_http_req_t *, void *), const char *body)
{
    cn_http_route_t rt = {
        .name = "console",
        .methods = CN_HTTP_ANY,
        .prefix = prefix,
        .flags = CN_HTTP_ROUTE_OWN_AUTH_ERRORS,
        .match = match,
        .on_request = console_not_found,
        .ctx = (void *)body,
    };
    return cn_http_server_route(srv, &rt);
}

/* The routes of the console's own listener after the console's: not found
 * for everything that is neither the console, the framework's health and
 * metrics, nor an upload; then the S3 face for the uploads. */
static cn_err_t console_own_routes(http_face_t *f)
{
    CN_TRY(not_found_route(f->con_srv, "/", console_other,
                           "{\"error\":\"NotFound\",\"message\":\"this listener serves "
                           "the console (/_cairn/console/) and its uploads only\"}"));
    return cn_s3_register(f->s3, f->con_srv);
}

/* --console ADDR: a second HTTP server carrying the console, the uploads
 * its links carry (console_upload) and the framework's health and metrics,
 * plugged into srv on ADDR with the HTTP listener's TLS files and limits.
 * Its download links point at the HTTP listener, bound just before; its
 * bound address goes to the node registry (console_own_record). */
static cn_err_t console_own_start(http_face_t *f, const cn_http_config_t *base,
                                  const cn_listen_opts_t *opts, cn_server_t *srv)
{
    char s3_base[CN_NET_ADDR_LEN + 16];
    last_listener_url(srv, opts->tls_cert != NULL, s3_base, sizeof s3_base);
    cn_http_config_t cfg = *base;
    cfg.log_name = "console";
    cfg.sigv4_lookup_cached = NULL;
    cn_console_config_t cc;
    console_config(f, true, s3_base, &cc);
    cn_err_t e = cn_http_server_new(&cfg, &f->con_srv);
    if (e >= 0)
        e = cn_console_register(f->con_srv, &cc, &f->console);
    if (e >= 0)
        e = console_own_routes(f);
    const cn_adapter_t *ad = NULL;
    void *actx = NULL;
    if (e >= 0)
        e = cn_http_server_adapter(f->con_srv, &ad, &actx);
    cn_listen_opts_t o = *opts;
    o.addr = f->svc->console;
    if (e >= 0)
        e = cn_server_listen(srv, ad, actx, &o);
    if (e >= 0)
        e = console_own_record(f->svc, srv, o.tls_cert != NULL);
    return e;
}

/* Without the console on this listener, /_cairn/console/ is not found
 * (rather than left to the S3 route, which names no bucket "_cairn"). */
static cn_err_t console_absent_register(cn_http_server_t *srv)
{
    return not_found_route(srv, "/_cairn/console", NULL,
                           "{\"error\":\"NotFound\",\"message\":\"the console is not served "
                           "here\"}");
}

/* Whether --console puts the console on the HTTP listener itself. */
static bool console_shared(const cn_services_t *svc)
{
    return !svc->console || !strcmp(svc->console, "on");
}

static bool console_own(const cn_services_t *svc)
{
    return !console_shared(svc) && strcmp(svc->console, "off");
}

cn_err_t cn_http_face_start(cn_services_t *svc, const cn_toml_val_t *section,
                            const cn_listen_opts_t *opts, cn_server_t *srv, void **actx)
{
    (void)section;
    *actx = NULL;
    http_face_t *f = calloc(1, sizeof *f);
    if (!f)
        return -ENOMEM;
    f->svc = svc;
    cn_http_config_t cfg;
    cn_http_config_default(&cfg);
    cfg.log_name = "http";
    cfg.trust_proxy_headers = env_true("JAY_TRUST_PROXY_HEADERS");
    cfg.sigv4_lookup = cn_s3_sigv4_lookup;
    cfg.sigv4_lookup_cached = cn_s3_sigv4_lookup_cached; /* S3 small GETs on the loop */
    cfg.sigv4_ctx = svc->identity;
    cfg.bearer_check = cn_s3_bearer_check;
    cfg.bearer_ctx = svc->identity;
    if (svc->objects) {
        uint64_t max = cn_objects_max_object_bytes(svc->objects);
        if (max)
            cfg.max_body = max;
    }

    cn_err_t e = env_min_part(&f->min_part);
    if (e >= 0)
        e = cn_http_server_new(&cfg, &f->srv);
    /* The blob ops live under /_cairn/, which the S3 route leaves alone, but
     * they are registered first so that the more specific routes win. */
    if (e >= 0)
        e = ready_register(f->srv, svc);
    if (e >= 0)
        e = cn_blobs_http_register(f->srv, svc->blobs, svc->identity, &f->blobs);
    if (e >= 0 && console_shared(svc)) {
        cn_console_config_t cc;
        console_config(f, false, NULL, &cc);
        e = cn_console_register(f->srv, &cc, &f->console);
    } else if (e >= 0)
        e = console_absent_register(f->srv);
    if (e >= 0) {
        cn_s3_config_t s3c = { .objects = svc->objects,
                               .identity = svc->identity,
                               .domain = getenv("CAIRN_S3_DOMAIN") };
        s3c.min_part_size = f->min_part;
        e = cn_s3_new(&s3c, &f->s3);
    }
    if (e >= 0)
        e = cn_s3_register(f->s3, f->srv);
    const cn_adapter_t *ad = NULL;
    void *actx_http = NULL;
    if (e >= 0)
        e = cn_http_server_adapter(f->srv, &ad, &actx_http);
    if (e >= 0)
        e = cn_server_listen(srv, ad, actx_http, opts);
    if (e >= 0 && console_own(svc))
        e = console_own_start(f, &cfg, opts, srv);
    if (e < 0) {
        cn_http_face_stop(f);
        return e;
    }
    *actx = f;
    return CN_OK;
}

void cn_http_face_stop(void *actx)
{
    http_face_t *f = actx;
    if (!f)
        return;
    if (f->svc && f->svc->blobs)
        cn_blobs_shutdown(f->svc->blobs);
    cn_http_server_free(f->srv);
    cn_http_server_free(f->con_srv);
    cn_console_free(f->console);
    cn_blobs_http_free(f->blobs);
    cn_s3_free(f->s3);
    free(f);
}
