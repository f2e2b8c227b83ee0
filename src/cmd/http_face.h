/* The HTTP listener of cairnd: the HTTP framework's server, one listener of
 * cairnd's network layer, carrying the blob operation family, the S3 API and
 * the health/metrics endpoints, all over the shared services.  Internal to
 * src/cmd. */
#ifndef CN_HTTP_FACE_H
#define CN_HTTP_FACE_H

#include "cairnd.h"

/* Builds the HTTP server with SigV4 and bearer credentials checked against
 * svc->identity and plugs it into srv as a listener on opts (address, TLS
 * when opts carries a cert and a key, limits).  Environment:
 * JAY_TRUST_PROXY_HEADERS=1 takes the client address from X-Forwarded-For
 * (its rightmost entry, the one the proxy appended);
 * CAIRN_S3_DOMAIN enables virtual-host style.  *actx is freed by
 * cn_http_face_stop. */
cn_err_t cn_http_face_start(cn_services_t *svc, const cn_toml_val_t *section,
                            const cn_listen_opts_t *opts, cn_server_t *srv, void **actx);
/* Ends live blob broadcasts and frees the face; after srv stopped running.
 * NULL ok. */
void cn_http_face_stop(void *actx);

#endif
