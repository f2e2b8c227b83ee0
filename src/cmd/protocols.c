/* The protocols cairnd serves, and where each one plugs in.  To add one,
 * give its row a create/destroy pair (see docs/development.md); a row whose
 * create is NULL is a protocol this build does not carry, and a listener for
 * it refuses to start. */
#include "cairnd.h"
#include "cairn/jay_server.h"
#include "cairn/sau2_client.h"
#include "cairn/sau2_server.h"
#include "cairn/scribe_server.h"
#include "cairn/util.h"
#include "http_face.h"
#include "client/scribe_tls.h"
#include "scribe/gw_int.h"

#include <stddef.h>

static cn_err_t jay_create(cn_services_t *svc, const cn_toml_val_t *section,
                           const cn_adapter_t **ad, void **actx)
{
    (void)section;
    return cn_jay_adapter_create(NULL, svc->objects, svc->identity, ad, actx);
}

/* Scribe's inactivity timeout in seconds, announced in hello-ok and counted
 * per session by the adapter (or the gateway role): section's (NULL: none)
 * idle_timeout_ms, else the specification's 300 s; an integer below one
 * second is one second, a value that is not an integer is the default. */
static uint32_t scribe_idle_s(const cn_toml_val_t *section)
{
    int64_t idle_ms = 300000;
    const cn_toml_val_t *v = section ? cn_toml_get(section, "idle_timeout_ms") : NULL;
    if (v && cn_toml_int(v, &idle_ms) < 0)
        idle_ms = 300000;
    return idle_ms >= 1000 ? (uint32_t)(idle_ms / 1000) : 1;
}

/* The Scribe adapter over [scribe] (or [scribe-tls]): version 2 plaintext,
 * 4 the TLS listener; auth as cn_scribe_config_t says. */
static cn_err_t scribe_make(cn_services_t *svc, const cn_toml_val_t *section, uint16_t version,
                            cn_scribe_auth_t *auth, const cn_adapter_t **ad, void **actx)
{
    cn_scribe_config_t cfg = { .inactivity_s = scribe_idle_s(section),
                               .version = version,
                               .auth = auth };
    return cn_scribe_adapter_create(&cfg, svc->repos, ad, actx);
}

/* With --gateway the plaintext listener is the gateway role (src/scribe/
 * gw_int.h) over the loaded configuration, its placements in the data
 * directory's metadata; one process has one such listener, so a flag tells
 * scribe_destroy which context it frees. */
static bool scribe_is_gateway;

static cn_err_t scribe_create(cn_services_t *svc, const cn_toml_val_t *section,
                              const cn_adapter_t **ad, void **actx)
{
    if (!svc->gateway)
        return scribe_make(svc, section, 2, NULL, ad, actx);
    cn_gw_opts_t o = { .inactivity_s = scribe_idle_s(section) };
    scribe_is_gateway = true;
    cn_err_t e = cn_gw_adapter_create(svc->gateway, svc->meta, &o, ad, actx);
    if (e >= 0)
        cn_info("cairnd", "scribe: gateway role in front of %zu storage server(s)",
                svc->gateway->n);
    return e;
}

static void scribe_destroy(void *actx)
{
    if (scribe_is_gateway)
        cn_gw_adapter_destroy(actx);
    else
        cn_scribe_adapter_destroy(actx);
}

/* The protocol-4 listener: the same adapter speaking protocol 4 inside TLS
 * 1.3 (X25519MLKEM768 only).  Its auth (docs/protocol/scribe.md 15.6):
 * [scribe-tls] auth_server = "HOST:PORT" names a remote SAU2 service, reached
 * with libcairn's pool, trusting auth_trust (PEM: the trust bundle) and
 * presenting auth_credential (PEM: this server's `server` credential
 * certificate and its key, in one file); else, when `cairn admin auth init`
 * ran on this data directory, the in-process provider over that state; else
 * anonymous sessions only, every caller trusted.  Either provider serves
 * [scribe-tls] namespace (default "default") and reuses a confirmed
 * identity for at most auth_cache_ms (default and ceiling 30,000). */
static const char *const scribe_tls_keys[] = { "namespace",  "auth_cache_ms",   "auth_server",
                                               "auth_trust", "auth_credential", NULL };

static cn_err_t sau2_pool_call(void *ctx, const cn_sau2_req_t *req, cn_buf_t *payload,
                               cn_sau2_reply_view_t *v)
{
    return cn_sau2_client_call(ctx, req, payload, v);
}

static void sau2_pool_free(void *ctx)
{
    cn_sau2_client_free(ctx);
}

/* A [scribe-tls] string key, or NULL when absent; *bad when not a string. */
static const char *tls_str(const cn_toml_val_t *section, const char *key, bool *bad)
{
    const cn_toml_val_t *v = section ? cn_toml_get(section, key) : NULL;
    const char *s = v ? cn_toml_str(v) : NULL;
    *bad = *bad || (v && !s);
    return s;
}

static cn_err_t scribe_tls_auth(cn_services_t *svc, const cn_toml_val_t *section,
                                cn_scribe_auth_t **auth)
{
    bool bad = false;
    const char *ns = tls_str(section, "namespace", &bad);
    const char *server = tls_str(section, "auth_server", &bad);
    const char *trust = tls_str(section, "auth_trust", &bad);
    const char *cred = tls_str(section, "auth_credential", &bad);
    server = svc->auth.server ? svc->auth.server : server;
    trust = svc->auth.trust ? svc->auth.trust : trust;
    cred = svc->auth.credential ? svc->auth.credential : cred;
    int64_t cache_ms = 0;
    const cn_toml_val_t *v = section ? cn_toml_get(section, "auth_cache_ms") : NULL;
    if (bad || (v && (cn_toml_int(v, &cache_ms) < 0 || cache_ms < 0)) ||
        (server && (!trust || !cred))) {
        cn_error("cairnd", "scribe-tls: --auth-server (auth_server) needs --auth-trust and "
                           "--auth-credential (auth_trust, auth_credential)");
        return CN_E_INVALID;
    }
    ns = ns ? ns : "default";
    if (!server)
        return cn_scribe_auth_local(svc->meta, svc->data_dir, ns, cache_ms, auth);
    cn_sau2_client_opts_t o = {
        .addr = server, .trust_file = trust, .cert_file = cred, .key_file = cred
    };
    cn_sau2_client_t *cl = NULL;
    CN_TRY(cn_sau2_client_new(&o, &cl));
    cn_err_t e =
        cn_scribe_auth_remote(svc->meta, ns, cache_ms, sau2_pool_call, cl, sau2_pool_free, auth);
    return e == CN_E_NOT_FOUND ? CN_E_PROTOCOL : e; /* never "no auth" when one is named */
}

/* A protocol-4 gateway's TLS client context (issue 23): its own access
 * certificate from --auth-server with --auth-credential, storage
 * certificates verified against the configuration's storage_ca or else
 * --auth-trust (src/client/scribe_tls.c). */
static cn_err_t gw_tls(void *arg, const char *ca, struct ssl_ctx_st **ctx, int64_t *renew_ms,
                       char *msg, size_t cap)
{
    const cn_services_t *svc = arg;
    uint64_t at = 0;
    CN_TRY(cn__scribe_tls_service_ctx(ca, svc->auth.server, svc->auth.trust, svc->auth.credential,
                                      ctx, &at, msg, cap));
    *renew_ms = (int64_t)(at / 1000000u);
    return CN_OK;
}

/* With a scribes:// --gateway configuration the TLS listener is the
 * gateway role (protocol 4); one per process, as scribe_is_gateway. */
static bool scribe_tls_is_gateway;

static cn_err_t scribe_tls_create(cn_services_t *svc, const cn_toml_val_t *section,
                                  const cn_adapter_t **ad, void **actx)
{
    if (svc->gateway) {
        cn_gw_opts_t o = { .inactivity_s = scribe_idle_s(section), .tls = gw_tls, .tls_arg = svc };
        scribe_tls_is_gateway = true;
        cn_err_t e = cn_gw_adapter_create(svc->gateway, svc->meta, &o, ad, actx);
        if (e >= 0)
            cn_info("cairnd",
                    "scribe-tls: gateway role (protocol 4) in front of %zu storage "
                    "server(s)",
                    svc->gateway->n);
        return e;
    }
    cn_scribe_auth_t *auth = NULL;
    cn_err_t e = scribe_tls_auth(svc, section, &auth);
    if (e < 0 && e != CN_E_NOT_FOUND) {
        cn_error("cairnd", "scribe-tls: cannot use its auth: %s", cn_strerror(e));
        return e;
    }
    if (auth)
        cn_info("cairnd", "scribe-tls: principals from %s auth, namespace %s",
                svc->auth.server || (section && cn_toml_get(section, "auth_server"))
                    ? "a remote"
                    : "this data directory's",
                cn_scribe_auth_namespace(auth));
    return scribe_make(svc, section, 4, auth, ad, actx);
}

static void scribe_tls_destroy(void *actx)
{
    if (scribe_tls_is_gateway)
        cn_gw_adapter_destroy(actx);
    else
        cn_scribe_adapter_destroy(actx);
}

/* The SAU2 listener (off unless --auth or [auth] address): TLS with the
 * certificate `cairn admin auth init` wrote, so no --auth-tls-* flag.  Its
 * deadlines: [auth] first_request_ms (3,000: accept -> handshake and the
 * first frame) and idle_ms (60,000). */
static const char *const auth_keys[] = { "first_request_ms", "idle_ms", NULL };

static cn_err_t auth_start(cn_services_t *svc, const cn_toml_val_t *section,
                           const cn_listen_opts_t *opts, cn_server_t *srv, void **actx)
{
    if (opts->tls_cert || opts->tls_key) {
        cn_error("cairnd", "auth: the listener uses the certificate of `cairn admin auth init`; "
                           "drop --auth-tls-cert/--auth-tls-key");
        return CN_E_INVALID;
    }
    cn_sau2_listen_t cfg = { 0 };
    const cn_toml_val_t *v;
    if (section && (v = cn_toml_get(section, "first_request_ms")) &&
        (cn_toml_int(v, &cfg.first_request_ms) < 0 || cfg.first_request_ms <= 0))
        return CN_E_INVALID;
    if (section && (v = cn_toml_get(section, "idle_ms")) &&
        (cn_toml_int(v, &cfg.idle_ms) < 0 || cfg.idle_ms <= 0))
        return CN_E_INVALID;
    return cn_sau2_listener_start(svc->meta, svc->data_dir, &cfg, opts, srv,
                                  (cn_sau2_listener_t **)actx);
}

static void auth_stop(void *actx)
{
    cn_sau2_listener_free(actx);
}

const cn_protocol_t cn_protocols[] = {
    { .name = "jay",
      .default_addr = "127.0.0.1:7446",
      .env_tls_cert = "JAY_NATIVE_TLS_CERT",
      .env_tls_key = "JAY_NATIVE_TLS_KEY",
      .create = jay_create,
      .destroy = cn_jay_adapter_destroy },
    { .name = "scribe",
      .default_addr = "127.0.0.1:7447",
      .plaintext_only = true,
      .create = scribe_create,
      .destroy = scribe_destroy },
    /* Scribe protocol 4: off unless --scribe-tls ADDR, configured by
     * --scribe-tls-cert / --scribe-tls-key; a client certificate is asked
     * for and judged by the adapter against the data directory's auth or a
     * remote one (scribe_tls_create), refused when there is none. */
    { .name = "scribe-tls",
      .default_addr = "off",
      .tls_flags = "scribe",
      .tls_required = true,
      .tls_pq_only = true,
      .tls_client_cert = true,
      .max_conns_per_principal = 64, /* docs/protocol/scribe.md 15 */
      .budget_anonymous = 64u << 20, /* of the 128 MiB listener budget */
      .config_keys = scribe_tls_keys,
      .create = scribe_tls_create,
      .destroy = scribe_tls_destroy },
    { .name = "http",
      .default_addr = "127.0.0.1:7448",
      .max_conns = 4096,
      .max_pending_per_source = 256,
      .start = cn_http_face_start,
      .stop = cn_http_face_stop },
    { .name = "auth",
      .default_addr = "off",
      .config_keys = auth_keys,
      .start = auth_start,
      .stop = auth_stop },
};

const size_t cn_protocols_count = sizeof cn_protocols / sizeof cn_protocols[0];
