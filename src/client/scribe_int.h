/* What the Scribe client's files share (scribe_client.c, scribe_proof.c):
 * the one way a tree_page request is filled.  Never included outside
 * src/client. */
#ifndef CN_CLIENT_SCRIBE_INT_H
#define CN_CLIENT_SCRIBE_INT_H

#include "cairn/scribe.h"

#include <stdbool.h>
#include <stdint.h>

/* q for one page of 4,096 live entries under prefix (NULL = "") of
 * branch's snapshot at change, after the path `after` (NUL-terminated;
 * has_after false: from the start).  q borrows prefix and after. */
void cn__scribe_tree_page_fill(cn_scribe_tree_page_req_t *q, const uint8_t repo[16],
                               const uint8_t branch[16], uint64_t change, const char *prefix,
                               bool has_after, const char *after);

#endif
