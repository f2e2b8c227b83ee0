/* cairnd's HTTP listener: routes, credentials, its place on the network
 * layer and shutdown order. */
#include "http_face.h"
#include "cairn/blobops.h"
#include "cairn/http.h"
#include "cairn/meta.h"
#include "cairn/s3.h"
#include "cairn/store.h"
#include "cairn/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    cn_services_t *svc;
    cn_http_server_t *srv;
    cn_s3_t *s3;
    cn_blobs_http_t *blobs;
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

    cn_err_t e = cn_http_server_new(&cfg, &f->srv);
    /* The blob ops live under /_cairn/, which the S3 route leaves alone, but
     * they are registered first so that the more specific routes win. */
    if (e >= 0)
        e = ready_register(f->srv, svc);
    if (e >= 0)
        e = cn_blobs_http_register(f->srv, svc->blobs, svc->identity, &f->blobs);
    if (e >= 0) {
        cn_s3_config_t s3c = { .objects = svc->objects,
                               .identity = svc->identity,
                               .domain = getenv("CAIRN_S3_DOMAIN") };
        e = env_min_part(&s3c.min_part_size);
        if (e >= 0)
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
    cn_blobs_http_free(f->blobs);
    cn_s3_free(f->s3);
    free(f);
}
