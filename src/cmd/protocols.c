/* The protocols cairnd serves, and where each one plugs in.  To add one,
 * give its row a create/destroy pair (see docs/development.md); a row whose
 * create is NULL is a protocol this build does not carry, and a listener for
 * it refuses to start. */
#include "cairnd.h"
#include "cairn/jay_server.h"
#include "cairn/scribe_server.h"
#include "http_face.h"

#include <stddef.h>

static cn_err_t jay_create(cn_services_t *svc, const cn_toml_val_t *section,
                           const cn_adapter_t **ad, void **actx)
{
    (void)section;
    return cn_jay_adapter_create(NULL, svc->objects, svc->identity, ad, actx);
}

/* Scribe's inactivity timeout, announced in hello-ok and counted per session
 * by the adapter: [scribe] idle_timeout_ms, else the specification's 300 s. */
static cn_err_t scribe_create(cn_services_t *svc, const cn_toml_val_t *section,
                              const cn_adapter_t **ad, void **actx)
{
    int64_t idle_ms = 300000;
    const cn_toml_val_t *v = section ? cn_toml_get(section, "idle_timeout_ms") : NULL;
    if (v && cn_toml_int(v, &idle_ms) < 0)
        idle_ms = 300000;
    cn_scribe_config_t cfg = { .inactivity_s = idle_ms >= 1000 ? (uint32_t)(idle_ms / 1000) : 1 };
    return cn_scribe_adapter_create(&cfg, svc->repos, ad, actx);
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
      .create = scribe_create,
      .destroy = cn_scribe_adapter_destroy },
    { .name = "http",
      .default_addr = "127.0.0.1:7448",
      .max_conns = 4096,
      .max_pending_per_source = 256,
      .start = cn_http_face_start,
      .stop = cn_http_face_stop },
};

const size_t cn_protocols_count = sizeof cn_protocols / sizeof cn_protocols[0];
