/* cairn scribe server: the Scribe TCP adapter for the network layer,
 * protocol 2 on a plaintext listener or protocol 4 on a TLS one (one adapter
 * context per listener; never both on one, never protocol 2 inside TLS)
 * (shared/spec/scribe-wire-v2-v4.txt; the wire codec is cairn/scribe.h, the
 * semantics the repos service, cairn/repos.h).
 *
 * It reads one SCR1 frame, checks the opcode's exact payload bound and the
 * listener's memory budget before reading the body, decodes it, calls ONE
 * repos-service function and encodes the answer.  It never touches files or
 * SQL; object bodies stream (put_objects into the service in bounded reads,
 * get_objects file → socket by sendfile(2) for raw transfers of raw blobs on
 * plaintext, through bounded TLS writes on protocol 4,
 * LZ4 transfer blocks of at most 256 KiB otherwise).  docs/protocol/scribe.md
 * ("Server") lists its choices.
 */
#ifndef CAIRN_SCRIBE_SERVER_H
#define CAIRN_SCRIBE_SERVER_H

#include <stdint.h>
#include "cairn/err.h"
#include "cairn/net.h"
#include "cairn/repos.h"
#include "cairn/scribe_auth.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cn_scribe_config {
    /* The inactivity timeout announced in hello-ok, in seconds.  The
     * listener's idle timeout (cn_limits_t.idle_ms) should equal it.
     * 0 = 300. */
    uint32_t inactivity_s;
    /* The protocol the listener speaks: 2 (plaintext; 0 means 2) or 4 (the
     * TLS listener, X25519MLKEM768 only; docs/protocol/scribe.md section
     * 14).  A listener answers any other hello with unsupported_version. */
    uint16_t version;
    /* Protocol 4 only: the auth provider that resolves access certificates
     * and decides the role table (docs/protocol/scribe.md 15.6), or NULL:
     * anonymous sessions only, every caller trusted as on protocol 2.  The
     * adapter takes it (freed by cn_scribe_adapter_destroy, or by a failed
     * create). */
    cn_scribe_auth_t *auth;
} cn_scribe_config_t;

/* Builds the adapter over the repos service (borrowed; it must outlive the
 * listener).  cfg may be NULL.  *ad is a static table; *actx the listener
 * context, freed by cn_scribe_adapter_destroy.  Errors: CN_E_INVALID,
 * -ENOMEM. */
CN_API cn_err_t cn_scribe_adapter_create(const cn_scribe_config_t *cfg, cn_repos_t *repos,
                                         const cn_adapter_t **ad, void **actx);
/* Frees the listener context after the server stopped.  NULL is a no-op. */
CN_API void cn_scribe_adapter_destroy(void *actx);

#ifdef __cplusplus
}
#endif
#endif
