/* Three-way line merge of small UTF-8 texts, for `cairn repo merge`
 * (workspace_merge.c): base, ours and theirs are diffed line by line
 * (Myers' O((N+M)D) diff), and every region where one side changed the base
 * takes that side; where both changed it differently the region gets
 * conflict markers.  Pure, allocation only, any thread.
 *
 * It must never touch a file, never merge anything but text that
 * cn__merge3_is_text accepts, and never drop a side's lines: a region it
 * cannot decide carries both sides (and the base) between markers. */
#ifndef CN_CLIENT_MERGE3_H
#define CN_CLIENT_MERGE3_H

#include "cairn/err.h"
#include "cairn/util.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CN_MERGE3_TEXT_MAX (8u << 20) /* bytes of each side merged by lines */
#define CN_MERGE3_EDITS_MAX 2048      /* line edits a diff may take (4 D^2 bytes) */

/* Whether p[0..n) is text merged by lines: at most CN_MERGE3_TEXT_MAX bytes
 * of valid UTF-8 without a NUL byte.  Pure. */
bool cn__merge3_is_text(const uint8_t *p, size_t n);

/* Merges ours and theirs against base into out (appended): regions changed
 * on one side take that side, regions changed alike take it once, and
 * regions changed differently become
 *   <<<<<<< ours_label / ours / ||||||| base / base / ======= / theirs /
 *   >>>>>>> theirs_label
 * each marker on its own line.  *conflicts gets the number of such regions.
 * Sides further apart than CN_MERGE3_EDITS_MAX line edits become one
 * region.  0 or -ENOMEM (out then holds a partial result). */
cn_err_t cn__merge3(const uint8_t *base, size_t nb, const uint8_t *ours, size_t no,
                    const uint8_t *theirs, size_t nt, const char *ours_label,
                    const char *theirs_label, cn_buf_t *out, size_t *conflicts);

#endif
