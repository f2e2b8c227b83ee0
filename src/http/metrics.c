/* Health and Prometheus metrics (include/cairn/http.h).  /_cairn/metrics
 * answers one text: the HTTP listener's own families (requests by route and
 * status class, bytes in and out by route, a latency histogram by route,
 * open connections, signature failures: their names predate the shared
 * registry and are kept), then every family of the process registry
 * (cairn/metrics.h: listeners of every face, request durations by face and
 * operation, requests by face and status class, store, meta, Jay and Scribe
 * outcomes), then any text other modules add through
 * cn_http_server_metrics_source(). */
#include "http_int.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

static const double cn__lat_bounds_s[CN__LAT_BUCKETS] = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
};

static int metrics_health(cn_http_req_t *r, void *ctx)
{
    (void)ctx;
    return cn_http_respond(r, 200, "text/plain; charset=utf-8", "ok", 2);
}

static int metrics_metrics(cn_http_req_t *r, void *ctx)
{
    (void)ctx;
    cn_http_server_t *s = r->srv;
    cn_buf_t b = { 0 };
    cn_err_t e = 0;
    static const char *cls[6] = { "other", "1xx", "2xx", "3xx", "4xx", "5xx" };
    e |= cn_buf_append_str(
        &b, "# HELP cairn_http_requests_total HTTP requests by route and status class.\n"
            "# TYPE cairn_http_requests_total counter\n");
    for (size_t i = 0; i <= s->n_routes; i++) {
        const cn__route_stats_t *st = &s->stats[i < s->n_routes ? i : CN__MAX_ROUTES];
        const char *name = i < s->n_routes ? s->routes[i].name : "none";
        for (int c = 0; c < 6; c++) {
            uint64_t v = atomic_load(&st->status[c]);
            if (v)
                e |= cn_buf_printf(
                    &b, "cairn_http_requests_total{route=\"%s\",status=\"%s\"} %" PRIu64 "\n", name,
                    cls[c], v);
        }
    }
    e |= cn_buf_append_str(&b, "# HELP cairn_http_bytes_in_total Request body bytes received.\n"
                               "# TYPE cairn_http_bytes_in_total counter\n");
    for (size_t i = 0; i < s->n_routes; i++)
        e |= cn_buf_printf(&b, "cairn_http_bytes_in_total{route=\"%s\"} %" PRIu64 "\n",
                           s->routes[i].name, atomic_load(&s->stats[i].bytes_in));
    e |= cn_buf_append_str(&b, "# HELP cairn_http_bytes_out_total Response body bytes queued.\n"
                               "# TYPE cairn_http_bytes_out_total counter\n");
    for (size_t i = 0; i < s->n_routes; i++)
        e |= cn_buf_printf(&b, "cairn_http_bytes_out_total{route=\"%s\"} %" PRIu64 "\n",
                           s->routes[i].name, atomic_load(&s->stats[i].bytes_out));
    e |= cn_buf_append_str(
        &b, "# HELP cairn_http_request_duration_seconds Time from request line to completion.\n"
            "# TYPE cairn_http_request_duration_seconds histogram\n");
    for (size_t i = 0; i < s->n_routes; i++) {
        const cn__route_stats_t *st = &s->stats[i];
        uint64_t cum = 0;
        for (int k = 0; k < CN__LAT_BUCKETS; k++) {
            cum += atomic_load(&st->lat[k]);
            e |= cn_buf_printf(
                &b,
                "cairn_http_request_duration_seconds_bucket{route=\"%s\",le=\"%g\"} %" PRIu64 "\n",
                s->routes[i].name, cn__lat_bounds_s[k], cum);
        }
        cum += atomic_load(&st->lat[CN__LAT_BUCKETS]);
        e |= cn_buf_printf(
            &b,
            "cairn_http_request_duration_seconds_bucket{route=\"%s\",le=\"+Inf\"} %" PRIu64 "\n"
            "cairn_http_request_duration_seconds_sum{route=\"%s\"} %.6f\n"
            "cairn_http_request_duration_seconds_count{route=\"%s\"} %" PRIu64 "\n",
            s->routes[i].name, cum, s->routes[i].name, (double)atomic_load(&st->lat_sum_us) / 1e6,
            s->routes[i].name, atomic_load(&st->count));
    }
    e |= cn_buf_printf(
        &b,
        "# HELP cairn_http_auth_failures_total Requests whose signature did not verify.\n"
        "# TYPE cairn_http_auth_failures_total counter\n"
        "cairn_http_auth_failures_total %" PRIu64 "\n",
        atomic_load(&s->auth_failures));
    e |= cn_metrics_render(NULL, &b);
    for (size_t i = 0; i < s->n_metric_src; i++)
        s->metric_src[i].fn(&b, s->metric_src[i].ctx);
    if (e) {
        cn_buf_free(&b);
        return -ENOMEM;
    }
    e = cn_http_respond_buf(r, 200, "text/plain; version=0.0.4; charset=utf-8", &b);
    cn_buf_free(&b);
    return e;
}

void cn__metrics_register_builtin(cn_http_server_t *s)
{
    cn_http_route_t health = {
        .name = "health",
        .methods = CN_HTTP_GET | CN_HTTP_HEAD,
        .prefix = "/_cairn/health",
        .flags = CN_HTTP_ROUTE_EXACT | CN_HTTP_ROUTE_OWN_AUTH_ERRORS,
        .on_request = metrics_health,
    };
    cn_http_route_t metrics = {
        .name = "metrics",
        .methods = CN_HTTP_GET | CN_HTTP_HEAD,
        .prefix = "/_cairn/metrics",
        .flags = CN_HTTP_ROUTE_EXACT | CN_HTTP_ROUTE_OWN_AUTH_ERRORS,
        .on_request = metrics_metrics,
    };
    cn_http_server_route(s, &health);
    cn_http_server_route(s, &metrics);
}

void cn__metrics_record(cn_http_server_t *s, cn_http_req_t *r)
{
    cn__route_stats_t *st = &s->stats[r->route >= 0 ? r->route : CN__MAX_ROUTES];
    unsigned c = r->status / 100;
    atomic_fetch_add(&st->status[c >= 1 && c <= 5 ? c : 0], 1);
    atomic_fetch_add(&st->bytes_out, r->resp_len);
    uint64_t us = (uint64_t)((cn_mono_ns() - r->start_ns) / 1000);
    int k = 0;
    while (k < CN__LAT_BUCKETS && (double)us / 1e6 > cn__lat_bounds_s[k])
        k++;
    atomic_fetch_add(&st->lat[k], 1);
    atomic_fetch_add(&st->lat_sum_us, us);
    atomic_fetch_add(&st->count, 1);
    cn_metric_observe(cn_metric_cached(&st->duration, &cn_metric_request_duration,
                                       "face=\"http\",op=\"%s\"",
                                       r->route >= 0 ? s->routes[r->route].name : "none"),
                      (double)us / 1e6);
    /* One series per class, shared by every route and server: so are the
     * slots. */
    static _Atomic(cn_metric_t *) by_class[6];
    if (c >= 1 && c <= 5)
        cn_metric_add(
            cn_metric_cached(&by_class[c], &cn_metric_requests, "face=\"http\",status=\"%uxx\"", c),
            1);
}
