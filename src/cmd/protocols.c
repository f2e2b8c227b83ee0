/* The protocols cairnd serves, and where each one plugs in.  To add one,
 * give its row a create/destroy pair (see docs/development.md); a row whose
 * create is NULL is a protocol this build does not carry, and a listener for
 * it refuses to start. */
#include "cairnd.h"
#include "cairn/jay_server.h"

#include <stddef.h>

static cn_err_t jay_create(cn_services_t *svc, const cn_toml_val_t *section,
                           const cn_adapter_t **ad, void **actx)
{
    (void)section;
    return cn_jay_adapter_create(NULL, svc->objects, svc->identity, ad, actx);
}

const cn_protocol_t cn_protocols[] = {
    {.name = "jay", .default_addr = "127.0.0.1:7446",
     .env_tls_cert = "JAY_NATIVE_TLS_CERT", .env_tls_key = "JAY_NATIVE_TLS_KEY",
     .create = jay_create, .destroy = cn_jay_adapter_destroy},
    {.name = "scribe", .default_addr = "127.0.0.1:7447"},
    {.name = "http", .default_addr = "127.0.0.1:7448"},
};

const size_t cn_protocols_count = sizeof cn_protocols / sizeof cn_protocols[0];
