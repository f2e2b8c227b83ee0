/* cairn jay server: the Jay native protocol v1 adapter for the network layer
 * (shared/spec/jay-native-v1.txt; the wire codec is cairn/jay.h).
 *
 * It decodes a frame, checks its limits, calls ONE objects-service function
 * and encodes the answer; it never touches files or SQL and holds no body in
 * memory (uploads stream into the service in 64 KiB reads, downloads go file
 * → socket by sendfile(2) on plaintext).  docs/protocol/jay.md ("Server")
 * lists its choices: the error mapping, the drain limit, the etag rules.
 */
#ifndef CAIRN_JAY_SERVER_H
#define CAIRN_JAY_SERVER_H

#include <stdint.h>
#include "cairn/err.h"
#include "cairn/net.h"
#include "cairn/objects.h"
#include "cairn/identity.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cn_jay_config {
    /* A body the server refuses (an error before or while it streams, an
     * unknown opcode, a body on an operation that takes none) is read and
     * discarded up to this many bytes so the connection stays usable; a
     * larger one is answered and the connection closed.  0 = 64 MiB. */
    uint64_t drain_max_bytes;
} cn_jay_config_t;

/* Builds the adapter over the objects service and identity (both borrowed;
 * they must outlive the listener).  cfg may be NULL (defaults).  *ad is a
 * static table; *actx is the listener context, freed by
 * cn_jay_adapter_destroy.  Errors: -ENOMEM, CN_E_INVALID. */
CN_API cn_err_t cn_jay_adapter_create(const cn_jay_config_t *cfg, cn_objects_t *objs,
                                      cn_identity_t *id, const cn_adapter_t **ad, void **actx);
/* Frees the listener context after the server stopped.  NULL is a no-op. */
CN_API void cn_jay_adapter_destroy(void *actx);

#ifdef __cplusplus
}
#endif
#endif
