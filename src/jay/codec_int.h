/* Internals shared by the Jay codec's files (codec.c, codec_msg.c); never
 * included from another module. */
#ifndef CN_JAY_CODEC_INT_H
#define CN_JAY_CODEC_INT_H

#include "cairn/jay.h"

/* Read and validate a whole list of ListObjects / ListBuckets / ListParts
 * entries, handing out its slice (errors sticky in r, as every reader). */
void cn__jay_r_obj_list(cn_rd_t *r, cn_jay_list_t *out);
void cn__jay_r_bucket_list(cn_rd_t *r, cn_jay_list_t *out);
void cn__jay_r_part_list(cn_rd_t *r, cn_jay_list_t *out);

#endif
