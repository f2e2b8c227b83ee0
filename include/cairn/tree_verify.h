/* cairn tree_verify: the client's verifier of tree proofs (Scribe opcode 43,
 * docs/protocol/scribe.md 17).  It checks each fragment against roots the
 * caller trusts (those of a commit it authenticated; the server's roots are
 * never a trust anchor), keeps the authenticated depth-first frontier,
 * derives every next request itself and hands out a page's values only
 * once the page and its lookahead are verified.
 *
 * It must never return a value from a proof that failed or is incomplete,
 * never accept a fragment after a failure or after completion, and never
 * fall back to unverified reads.  Transport-agnostic: the caller moves the
 * bytes (cn_tree_verify_page takes a call function).  Not thread-safe. */
#ifndef CAIRN_TREE_VERIFY_H
#define CAIRN_TREE_VERIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cairn/err.h"
#include "cairn/util.h"
#include "cairn/repos_model.h"
#include "cairn/scribe.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cn_tree_verify cn_tree_verify_t;

typedef struct cn_tree_verify_cfg {
    cn_scribe_codec_t codec;
    const uint8_t *page; /* the tree_page request's encoding in codec (copied) */
    size_t page_len;
    uint8_t selector;             /* CN_REPOS_PROOF_* */
    uint64_t lower;               /* selector 1 */
    const cn_scribe_str_t *paths; /* selector 3 (copied) */
    uint32_t npaths;
    cn_digest_t content_root, revision_root; /* trusted */
} cn_tree_verify_cfg_t;

/* One verified value: a selected entry (live, or for selectors 1-3 a
 * tombstone) at its full path. */
typedef struct cn_tree_value {
    const uint8_t *path; /* owned by the verifier */
    size_t path_len;
    cn_repos_entry_t entry;
} cn_tree_value_t;

/* CN_E_INVALID when the configuration is a request 17.2 calls malformed;
 * -ENOMEM. */
CN_API cn_err_t cn_tree_verify_new(const cn_tree_verify_cfg_t *cfg, cn_tree_verify_t **out);
CN_API void cn_tree_verify_free(cn_tree_verify_t *v); /* NULL is a no-op */

/* Appends the next request's payload to out: the first fragment's, then
 * continuations at the frontier's edge prefix with the remaining count.
 * CN_E_INVALID once done or failed. */
CN_API cn_err_t cn_tree_verify_request(cn_tree_verify_t *v, cn_buf_t *out);
/* Consumes one reply payload.  CN_OK: check cn_tree_verify_done.
 * CN_E_DIGEST_MISMATCH (a node or root that is not the committed one) or
 * CN_E_INVALID (bad layout, shape, summary, order; an empty fragment; a
 * node or fragment past the end): the proof failed for good and every
 * value gathered so far is discarded. */
CN_API cn_err_t cn_tree_verify_feed(cn_tree_verify_t *v, const uint8_t *p, size_t n);
CN_API bool cn_tree_verify_done(const cn_tree_verify_t *v);
/* The verified page, once done (CN_E_INVALID before or after a failure):
 * count values and more (selectors 0-1: the limit + 1 witness exists). */
CN_API cn_err_t cn_tree_verify_result(const cn_tree_verify_t *v, uint32_t *count, bool *more);
CN_API const cn_tree_value_t *cn_tree_verify_value(const cn_tree_verify_t *v, uint32_t i);
/* Fragments consumed so far. */
CN_API uint32_t cn_tree_verify_fragments(const cn_tree_verify_t *v);

/* One round trip: send req (a tree_proof payload) and put the reply
 * payload in *reply (reset by the caller).  An error reply or a transport
 * failure is the function's error. */
typedef cn_err_t (*cn_tree_verify_call_fn)(void *ctx, const uint8_t *req, size_t len,
                                           cn_buf_t *reply);
/* Fetches and verifies a whole page over as many fragments as it takes.
 * On any error the verifier is failed and holds no value: retrying means a
 * new verifier (the proof starts again). */
CN_API cn_err_t cn_tree_verify_page(cn_tree_verify_t *v, cn_tree_verify_call_fn call, void *ctx);

/* Point requests that would not fit split (selector 3): how many of
 * paths[from..n) one request carries within 1 MiB, room reserved for a
 * continuation (an 8,192-byte edge and its count) and the path limit
 * (4,096) kept, for a tree_page request of page_len bytes.  At least 1
 * when from < n (a path of 8,192 bytes always fits); each part is its own
 * proof, with its tree_page limit set to its count. */
CN_API uint32_t cn_tree_verify_paths_fit(size_t page_len, const cn_scribe_str_t *paths,
                                         uint32_t from, uint32_t n);

#ifdef __cplusplus
}
#endif
#endif
