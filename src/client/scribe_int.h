/* What the Scribe client's files share with each other and with the
 * workspace (scribe_client.c, scribe_proof.c, workspace_fetch.c,
 * workspace_verify.c): the one way a tree_page request is filled, whether
 * a client is anonymous, get_chunks over the transfer lanes, and the log
 * from below a change.  Never included outside src/client. */
#ifndef CN_CLIENT_SCRIBE_INT_H
#define CN_CLIENT_SCRIBE_INT_H

#include "cairn/scribe.h"
#include "cairn/scribe_client.h"
#include "cairn/tree_verify.h"

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

/* The data connections cl may open (0 for a data connection itself). */
int cn__scribe_client_ndata(const cn_scribe_client_t *cl);
/* Data connection k (0..) of control client cl, opened (bound to cl's
 * session) on first use, for a caller that runs its own requests on it on
 * another thread while cl serves this one; CN_E_INVALID when cl may open
 * no such connection (--conns 0, a data connection itself).  Call from the
 * thread that owns cl, never while another thread uses that data
 * connection; cl keeps it (freed with cl). */
cn_err_t cn__scribe_client_data_conn(cn_scribe_client_t *cl, int k, cn_scribe_client_t **out,
                                     cn_scribe_cerr_t *err);

/* ---- pipelined tree proofs (scribe_proof.c over scribe_client.c) ------------------------
 * tree_proof split in its two halves, so that one request can be in flight
 * while the previous reply is verified: _send sends payload req (connecting
 * first if needed) and returns without waiting; _recv waits for that
 * request's reply and appends its payload to reply (an error frame is its
 * error).  At most one request is outstanding: every _send is followed by
 * its _recv before the next _send or any other call on cl.  _drain reads
 * and drops the outstanding reply (after an abort), or closes the
 * connection when that fails; the next call reconnects. */
cn_err_t cn__scribe_client_tree_proof_send(cn_scribe_client_t *cl, const uint8_t *req, size_t len,
                                           cn_scribe_cerr_t *err);
cn_err_t cn__scribe_client_tree_proof_recv(cn_scribe_client_t *cl, cn_buf_t *reply,
                                           cn_scribe_cerr_t *err);
void cn__scribe_client_tree_proof_drain(cn_scribe_client_t *cl);
/* From another thread than cl's owner: shuts cl's connection down (both
 * ways) so that a read or write blocked on it returns at once (an error;
 * the owner's next call drops it and reconnects).  No-op when cl is not
 * connected.  Never closes the descriptor: only the owner does, under the
 * same lock, so an interrupt never hits a reused one. */
void cn__scribe_client_interrupt(cn_scribe_client_t *cl);

/* The verifier's two passes over one reply (tree_verify.c): _shape checks
 * everything but the nodes' hashes and records them, moving the frontier
 * (cn_tree_verify_request then gives the next request); reply bytes p must
 * stay alive and unchanged until _check hashes them.  Until _check
 * succeeded the verifier is not done, hands out nothing and refuses the
 * next fragment; either failing fails the proof for good, as
 * cn_tree_verify_feed (which is _shape then _check).  _shaped: the shape
 * pass reached the end of the page (checked or not); _cursor then gives
 * `more` and the page's last path (NULL when it has none), owned by v:
 * unverified until _check, so only ever used to form a request. */
cn_err_t cn__tree_verify_shape(cn_tree_verify_t *v, const uint8_t *p, size_t n);
cn_err_t cn__tree_verify_check(cn_tree_verify_t *v);
bool cn__tree_verify_shaped(const cn_tree_verify_t *v);
cn_err_t cn__tree_verify_cursor(const cn_tree_verify_t *v, bool *more, const uint8_t **path,
                                size_t *path_len);

#endif
