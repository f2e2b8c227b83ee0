/* Console API: GET metrics[?node=ID] — a node's samples from its metrics
 * ring (ring.c): deltas per interval, oldest first, at most 720 — and the
 * fleet's nodes, for the view's node picker.
 *
 * Another node's samples come from that node's own GET metrics, at the URL
 * it advertises in the node registry (cn_nodes, docs/fleet.md), asked with
 * the caller's own session cookie: sessions are metadata rows every node of
 * a fleet shares, so the peer checks and authorizes the call exactly as if
 * the caller had asked it directly, and no node-to-node credential exists.
 * This file must never reach a URL that is not a registered node's http or
 * https advertise, follow a redirect, wait longer than PEER_TIMEOUT_MS,
 * hold more than PEER_MAX bytes of an answer, pass on any other cookie or
 * header of the caller, or log the cookie. */
#include "console_data.h"
#include "console_int.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define NODES_MAX 64
#define PEER_TIMEOUT_MS 3000
#define PEER_CONNECT_MS 1000
#define PEER_MAX (4u << 20) /* 720 samples are ~0.3 MiB */

/* [{"id","up","self"}] of the n nodes; NULL when short of memory. */
static json_t *nodes_json(const char *self, const cn_console_node_t *nodes, size_t n)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n; i++)
        if (cn__console_append(arr, json_pack("{s:s,s:b,s:b}", "id", nodes[i].id, "up", nodes[i].up,
                                              "self", self && !strcmp(self, nodes[i].id))) < 0) {
            json_decref(arr);
            return NULL;
        }
    return arr;
}

static json_t *interval_json(double iv)
{
    return iv == (double)(int64_t)iv ? json_integer((json_int_t)iv) : json_real(iv);
}

/* Answers this node's document: {"node","interval_s","samples","nodes"}. */
static int local_answer(cn_console_call_t *c, json_t *nodes)
{
    const cn_console_config_t *cfg = cn__console_cfg(c->con);
    json_t *samples = cn__console_ring_samples(c->con);
    if (!samples || !nodes) {
        json_decref(samples);
        json_decref(nodes);
        return cn__console_err(c, -ENOMEM);
    }
    json_t *doc =
        json_pack("{s:s,s:o,s:o,s:o}", "node", cfg->node ? cfg->node : "", "interval_s",
                  interval_json(cn__console_ring_interval_s()), "samples", samples, "nodes", nodes);
    return cn__console_json(c, 200, doc);
}

typedef struct sink {
    cn_buf_t b;
    bool over;
} sink_t;

static size_t sink_write(char *p, size_t size, size_t nmemb, void *arg)
{
    sink_t *s = arg;
    size_t n = size * nmemb;
    if (s->b.len + n > PEER_MAX) {
        s->over = true;
        return 0; /* aborts the transfer */
    }
    return cn_buf_append(&s->b, p, n) < 0 ? 0 : n;
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* GET base + the metrics call with cookie ("NAME=VALUE"): the HTTP status
 * into *status and the body into out (the caller frees it); a transfer
 * that failed (no answer, timeout, over PEER_MAX) is CN_E_UNAVAILABLE with why
 * filled. */
static cn_err_t peer_get(const char *base, const char *cookie, long *status, cn_buf_t *out,
                         char *why, size_t whycap)
{
    pthread_once(&curl_once, curl_init_once);
    char url[320];
    size_t bl = strlen(base);
    while (bl && base[bl - 1] == '/')
        bl--;
    snprintf(url, sizeof url, "%.*s/_cairn/console/api/metrics", (int)bl, base);
    sink_t s = { { 0 }, false };
    cn_err_t e = CN_OK;
    CURL *h = curl_easy_init();
    if (!h)
        return -ENOMEM;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)PEER_TIMEOUT_MS);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)PEER_CONNECT_MS);
    curl_easy_setopt(h, CURLOPT_COOKIE, cookie);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
    CURLcode rc = curl_easy_perform(h);
    if (rc != CURLE_OK) {
        snprintf(why, whycap, "%s", s.over ? "its answer is too large" : curl_easy_strerror(rc));
        e = CN_E_UNAVAILABLE;
        cn_buf_free(&s.b);
    } else {
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
        *out = s.b;
    }
    curl_easy_cleanup(h);
    return e;
}

/* The peer's answer (status, body) for node id as this node's answer:
 * its samples under the local nodes list (stolen), or 502. */
static int peer_answer(cn_console_call_t *c, const char *id, long status, const cn_buf_t *body,
                       json_t *nodes)
{
    json_t *doc = status == 200 ? json_loadb((const char *)body->data, body->len, 0, NULL) : NULL;
    json_t *node = json_object_get(doc, "node"), *samples = json_object_get(doc, "samples");
    json_t *iv = json_object_get(doc, "interval_s");
    if (!json_is_string(node) || strcmp(json_string_value(node), id) != 0 ||
        !json_is_array(samples) || !json_is_number(iv)) {
        char msg[160];
        if (status == 200)
            snprintf(msg, sizeof msg, "node %s answered something other than its metrics", id);
        else
            snprintf(msg, sizeof msg, "node %s answered HTTP %ld", id, status);
        json_decref(doc);
        json_decref(nodes);
        return cn__console_error(c, 502, "NodeUnavailable", msg);
    }
    json_t *out = json_pack("{s:O,s:O,s:O,s:o*}", "node", node, "interval_s", iv, "samples",
                            samples, "nodes", nodes);
    json_decref(doc);
    return out ? cn__console_json(c, 200, out) : cn__console_err(c, -ENOMEM);
}

/* GET metrics?node=ID of another node, asked at its console's own listener
 * when the registry names one, else at its advertised URL: 404 NoSuchNode
 * when the registry has no such node, 503 NodeUnavailable when it is not up
 * or advertises no URL, 502 NodeUnavailable when it does not answer its
 * metrics. */
static int peer_metrics(cn_console_call_t *c, const char *id, const cn_console_node_t *nodes,
                        size_t n, json_t *list)
{
    const cn_console_node_t *p = NULL;
    for (size_t i = 0; i < n && !p; i++)
        if (!strcmp(nodes[i].id, id))
            p = &nodes[i];
    char msg[400], cookie[CN__CONSOLE_COOKIE_MAX];
    if (!p) {
        json_decref(list);
        return cn__console_error(c, 404, "NoSuchNode", "the fleet has no such node");
    }
    const char *base = p->console[0] ? p->console : p->url; /* its console's listener */
    if (!p->up || (strncmp(base, "http://", 7) != 0 && strncmp(base, "https://", 8) != 0)) {
        snprintf(msg, sizeof msg, "node %s %s", id,
                 !p->up ? "is not up" : "advertises no http(s) URL (cairnd --advertise)");
        json_decref(list);
        return cn__console_error(c, 503, "NodeUnavailable", msg);
    }
    if (!cn__console_session_cookie(c->req, cookie)) { /* checked already: never */
        json_decref(list);
        return cn__console_error(c, 401, "Unauthenticated", "no session");
    }
    long status = 0;
    cn_buf_t body = { 0 };
    char why[200];
    cn_err_t e = peer_get(base, cookie, &status, &body, why, sizeof why);
    explicit_bzero(cookie, sizeof cookie);
    if (e < 0) {
        snprintf(msg, sizeof msg, "node %s did not answer: %s", id,
                 e == CN_E_UNAVAILABLE ? why : "no memory");
        json_decref(list);
        return cn__console_error(c, 502, "NodeUnavailable", msg);
    }
    int r = peer_answer(c, id, status, &body, list);
    cn_buf_free(&body);
    return r;
}

static int metrics_get(cn_console_call_t *c)
{
    const cn_console_config_t *cfg = cn__console_cfg(c->con);
    const char *want = cn__console_query(c, "node");
    cn_console_node_t *nodes = calloc(NODES_MAX, sizeof *nodes);
    size_t n = 0;
    if (!nodes)
        return cn__console_err(c, -ENOMEM);
    cn_err_t e = cfg->nodes ? cfg->nodes(cfg->nodes_arg, nodes, NODES_MAX, &n) : CN_OK;
    int r;
    if (e < 0 && want && *want && (!cfg->node || strcmp(want, cfg->node) != 0))
        r = cn__console_err(c, e);
    else if (want && *want && (!cfg->node || strcmp(want, cfg->node) != 0))
        r = peer_metrics(c, want, nodes, n, nodes_json(cfg->node, nodes, n));
    else /* this node's: a registry that failed leaves the picker empty */
        r = local_answer(c, nodes_json(cfg->node, nodes, e < 0 ? 0 : n));
    free(nodes);
    return r;
}

const cn_console_op_t cn__console_metrics_ops[] = {
    { CN_HTTP_GET, "metrics", metrics_get, 0 },
    { 0, NULL, NULL, 0 },
};
