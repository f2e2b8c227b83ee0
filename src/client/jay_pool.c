/* The Jay client's connection pool (include/cairn/client.h): creation, TLS
 * context, and borrowing/returning connections with the 45 s idle discard and
 * a liveness check before reuse. */
#include "client_int.h"

#include "cairn/crypto.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>

cn_err_t cn_client_parse_endpoint(const char *ep, char *host, size_t host_cap, uint16_t *port)
{
    if (!ep || !*ep)
        ep = CN_CLIENT_DEFAULT_ENDPOINT;
    const char *h = ep, *hend, *p = NULL;
    if (*ep == '[') {
        h = ep + 1;
        hend = strchr(h, ']');
        if (!hend)
            return CN_E_INVALID;
        if (hend[1] == ':')
            p = hend + 2;
        else if (hend[1] != '\0')
            return CN_E_INVALID;
    } else {
        const char *colon = strrchr(ep, ':');
        if (colon && strchr(ep, ':') != colon)
            return CN_E_INVALID; /* a bare IPv6 address needs brackets */
        hend = colon ? colon : ep + strlen(ep);
        p = colon ? colon + 1 : NULL;
    }
    size_t hl = (size_t)(hend - h);
    if (hl == 0 || hl >= host_cap)
        return CN_E_INVALID;
    memcpy(host, h, hl);
    host[hl] = '\0';
    if (!p) {
        *port = CN_JAY_DEFAULT_PORT;
        return CN_OK;
    }
    char *end;
    unsigned long v = strtoul(p, &end, 10);
    if (*p == '\0' || *end != '\0' || v == 0 || v > 65535)
        return CN_E_INVALID;
    *port = (uint16_t)v;
    return CN_OK;
}

/* The pool's TLS context: TLS 1.3 with the hybrid group X25519MLKEM768
 * offered first and the classical groups after it (docs/protocol/tls.md),
 * so a cairnd Jay listener, pq-only or not, negotiates the hybrid group and
 * a server without it still can answer with a classical one. */
static SSL_CTX *tls_context(const cn_client_cfg_t *cfg, cn_jay_error_t *err)
{
    SSL_CTX *ctx = NULL;
    if (cn_tls_client_ctx_new(CN_TLS_GROUPS_HYBRID_FIRST, &ctx) < 0)
        goto fail;
    if (cfg->tls_insecure) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    } else {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        int ok = cfg->tls_ca_file ? SSL_CTX_load_verify_locations(ctx, cfg->tls_ca_file, NULL)
                                  : SSL_CTX_set_default_verify_paths(ctx);
        if (!ok)
            goto fail;
    }
    return ctx;
fail:
    cn__err_set(err, "TLS set-up failed%s%s", cfg->tls_ca_file ? ": cannot load " : "",
                cfg->tls_ca_file ? cfg->tls_ca_file : "");
    ERR_clear_error();
    SSL_CTX_free(ctx);
    return NULL;
}

cn_err_t cn_client_new(const cn_client_cfg_t *cfg, cn_client_t **out, cn_jay_error_t *err)
{
    uint16_t port;
    *out = NULL;
    if (err)
        memset(err, 0, sizeof *err);
    cn_client_t *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    pthread_mutex_init(&c->mu, NULL);
    if (cn_client_parse_endpoint(cfg->endpoint, c->cfg.host, sizeof c->cfg.host, &port)) {
        cn__err_set(err, "bad endpoint '%s' (want HOST:PORT)", cfg->endpoint);
        cn_client_free(c);
        return CN_E_INVALID;
    }
    if (!cfg->token || !*cfg->token) {
        cn__err_set(err, "no credential (token_id:secret)");
        cn_client_free(c);
        return CN_E_INVALID;
    }
    snprintf(c->cfg.port, sizeof c->cfg.port, "%u", port);
    c->cfg.token = strdup(cfg->token);
    c->cfg.connect_timeout_ms = cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms : 10000;
    c->cfg.io_timeout_ms = cfg->io_timeout_ms > 0 ? cfg->io_timeout_ms : 30000;
    c->idle_ms = cfg->idle_ms > 0 ? cfg->idle_ms : CN_CLIENT_IDLE_MS;
    c->complete_ms = cfg->complete_timeout_ms > 0 ? cfg->complete_timeout_ms : 600000;
    c->max_idle = cfg->max_idle ? cfg->max_idle : 16;
    c->idle = calloc(c->max_idle, sizeof *c->idle);
    if (!c->cfg.token || !c->idle) {
        cn_client_free(c);
        return -ENOMEM;
    }
    if (cfg->tls) {
        c->cfg.ssl_ctx = tls_context(cfg, err);
        if (!c->cfg.ssl_ctx) {
            cn_client_free(c);
            return CN_E_PROTOCOL;
        }
    }
    *out = c;
    return CN_OK;
}

void cn_client_free(cn_client_t *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_idle; i++)
        cn__jconn_close(c->idle[i].conn);
    free(c->idle);
    if (c->cfg.token) {
        OPENSSL_cleanse(c->cfg.token, strlen(c->cfg.token));
        free(c->cfg.token);
    }
    SSL_CTX_free(c->cfg.ssl_ctx);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

void cn_client_stats(cn_client_t *c, cn_client_stats_t *out)
{
    pthread_mutex_lock(&c->mu);
    *out = c->stats;
    pthread_mutex_unlock(&c->mu);
}

void cn__pool_note_retry(cn_client_t *cl)
{
    pthread_mutex_lock(&cl->mu);
    cl->stats.retries++;
    pthread_mutex_unlock(&cl->mu);
}

/* Removes and returns one connection that has idled idle_ms or more. */
static cn__jconn_t *take_stale_locked(cn_client_t *cl, int64_t now)
{
    for (size_t i = 0; i < cl->n_idle; i++) {
        if (now - cl->idle[i].since_ms >= cl->idle_ms) {
            cn__jconn_t *c = cl->idle[i].conn;
            memmove(&cl->idle[i], &cl->idle[i + 1], (cl->n_idle - i - 1) * sizeof cl->idle[0]);
            cl->n_idle--;
            cl->stats.idle_discards++;
            return c;
        }
    }
    return NULL;
}

/* Closes every stale pooled connection, outside the lock (a TLS close writes). */
static void drop_stale(cn_client_t *cl)
{
    for (;;) {
        pthread_mutex_lock(&cl->mu);
        cn__jconn_t *c = take_stale_locked(cl, cn_mono_ms());
        pthread_mutex_unlock(&cl->mu);
        if (!c)
            return;
        cn__jconn_close(c);
    }
}

cn_err_t cn__pool_get(cn_client_t *cl, bool fresh, cn__jconn_t **out, bool *reused,
                      cn_jay_error_t *err)
{
    drop_stale(cl);
    if (fresh) {
        pthread_mutex_lock(&cl->mu);
        cl->stats.dials++;
        pthread_mutex_unlock(&cl->mu);
    }
    while (!fresh) {
        cn__jconn_t *c = NULL;
        pthread_mutex_lock(&cl->mu);
        if (cl->n_idle > 0)
            c = cl->idle[--cl->n_idle].conn; /* most recently used first */
        else
            cl->stats.dials++;
        pthread_mutex_unlock(&cl->mu);
        if (!c)
            break;
        bool alive = cn__jconn_alive(c);
        pthread_mutex_lock(&cl->mu);
        if (alive)
            cl->stats.reuses++;
        else
            cl->stats.dead_discards++;
        pthread_mutex_unlock(&cl->mu);
        if (alive) {
            *reused = true;
            *out = c;
            return CN_OK;
        }
        cn__jconn_close(c);
    }
    *reused = false;
    return cn__jconn_open(&cl->cfg, out, err);
}

void cn__pool_put(cn_client_t *cl, cn__jconn_t *c)
{
    if (!cn__jconn_reusable(c)) {
        cn__jconn_close(c);
        return;
    }
    drop_stale(cl);
    pthread_mutex_lock(&cl->mu);
    if (cl->n_idle < cl->max_idle) {
        cl->idle[cl->n_idle].conn = c;
        cl->idle[cl->n_idle].since_ms = cn_mono_ms();
        cl->n_idle++;
        c = NULL;
    }
    pthread_mutex_unlock(&cl->mu);
    cn__jconn_close(c);
}
