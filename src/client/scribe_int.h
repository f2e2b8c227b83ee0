/* What the Scribe client's files share with each other and with the
 * workspace (scribe_client.c, scribe_proof.c, workspace_fetch.c,
 * workspace_verify.c): the one way a tree_page request is filled, whether
 * a client is anonymous, get_chunks over the transfer lanes, and the log
 * from below a change.  Never included outside src/client. */
#ifndef CN_CLIENT_SCRIBE_INT_H
#define CN_CLIENT_SCRIBE_INT_H

#include "cairn/scribe.h"
#include "cairn/scribe_client.h"

#include <stdbool.h>
#include <stdint.h>

/* q for one page of 4,096 live entries under prefix (NULL = "") of
 * branch's snapshot at change, after the path `after` (NUL-terminated;
 * has_after false: from the start).  q borrows prefix and after. */
void cn__scribe_tree_page_fill(cn_scribe_tree_page_req_t *q, const uint8_t repo[16],
                               const uint8_t branch[16], uint64_t change, const char *prefix,
                               bool has_after, const char *after);

/* Whether cl speaks protocol 4 without a credential (an anonymous caller:
 * not signed in, or CAIRN_SCRIBE_ANONYMOUS=1).  Such a caller reads only
 * public-read repositories, and fetches their chunks with get_chunks. */
bool cn__scribe_client_anonymous(const cn_scribe_client_t *cl);

/* get_chunks (30) as cn_scribe_client_get_lanes fetches objects: the n
 * witnesses w in requests of 1,024, split over up to five connections in
 * contiguous slices, each item to sink with its lane and index in w (a
 * witness the server does not accept is absent, present false). */
cn_err_t cn__scribe_client_get_chunks_lanes(cn_scribe_client_t *cl, const uint8_t repo[16],
                                            const cn_scribe_client_witness_t *w, size_t n,
                                            cn_scribe_client_lane_sink_fn sink, void *ctx,
                                            cn_scribe_cerr_t *err);

/* cn_scribe_client_log's first-parent history of branch (no path),
 * newest first, starting strictly below change `before` (0: from the
 * head), up to limit rows (0 = all), all pages.  The commit walk of a
 * verified sync prefetches its batches with it. */
cn_err_t cn__scribe_client_log_before(cn_scribe_client_t *cl, const uint8_t repo[16],
                                      const uint8_t branch[16], uint64_t before, uint32_t limit,
                                      cn_scribe_client_log_fn fn, void *ctx, cn_scribe_cerr_t *err);

#endif
