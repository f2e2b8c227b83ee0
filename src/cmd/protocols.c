/* The protocols cairnd serves, and where each one plugs in.  To add one,
 * give its row a create/destroy pair (see docs/development.md); a row whose
 * create is NULL is a protocol this build does not carry, and a listener for
 * it refuses to start. */
#include "cairnd.h"
#include "cairn/jay_server.h"
#include "cairn/sau2_server.h"
#include "cairn/scribe_server.h"
#include "cairn/util.h"
#include "http_face.h"

#include <stddef.h>

static cn_err_t jay_create(cn_services_t *svc, const cn_toml_val_t *section,
                           const cn_adapter_t **ad, void **actx)
{
    (void)section;
    return cn_jay_adapter_create(NULL, svc->objects, svc->identity, ad, actx);
}

/* Scribe's inactivity timeout, announced in hello-ok and counted per session
 * by the adapter: [scribe] (or [scribe-tls]) idle_timeout_ms, else the
 * specification's 300 s.  version: 2 plaintext, 4 the TLS listener. */
static cn_err_t scribe_make(cn_services_t *svc, const cn_toml_val_t *section, uint16_t version,
                            const cn_adapter_t **ad, void **actx)
{
    int64_t idle_ms = 300000;
    const cn_toml_val_t *v = section ? cn_toml_get(section, "idle_timeout_ms") : NULL;
    if (v && cn_toml_int(v, &idle_ms) < 0)
        idle_ms = 300000;
    cn_scribe_config_t cfg = { .inactivity_s = idle_ms >= 1000 ? (uint32_t)(idle_ms / 1000) : 1,
                               .version = version };
    return cn_scribe_adapter_create(&cfg, svc->repos, ad, actx);
}

static cn_err_t scribe_create(cn_services_t *svc, const cn_toml_val_t *section,
                              const cn_adapter_t **ad, void **actx)
{
    return scribe_make(svc, section, 2, ad, actx);
}

/* The protocol-4 listener: the same adapter speaking protocol 4 inside TLS
 * 1.3 (X25519MLKEM768 only). */
static cn_err_t scribe_tls_create(cn_services_t *svc, const cn_toml_val_t *section,
                                  const cn_adapter_t **ad, void **actx)
{
    return scribe_make(svc, section, 4, ad, actx);
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
      .destroy = cn_scribe_adapter_destroy },
    /* Scribe protocol 4: off unless --scribe-tls ADDR, configured by
     * --scribe-tls-cert / --scribe-tls-key; anonymous sessions until the
     * SAU2 service resolves principals (a client certificate is asked for,
     * and refused by the adapter, meanwhile). */
    { .name = "scribe-tls",
      .default_addr = "off",
      .tls_flags = "scribe",
      .tls_required = true,
      .tls_pq_only = true,
      .tls_client_cert = true,
      .create = scribe_tls_create,
      .destroy = cn_scribe_adapter_destroy },
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
