/* The blobs service's statements (src/blobs/blobs.c): namespace membership,
 * the rows that keep a digest in a namespace and alive for the sweeper.
 * Each comment gives the parameters, in order, then the result columns.
 * See sql.h; no statement here is built or chosen at run time. */
#ifndef CAIRN_META_SQL_BLOBS_H
#define CAIRN_META_SQL_BLOBS_H

#include "meta/sql/sql.h"

enum {
    CN_SQL_BLOBS_MEMBER_INSERT, /* (ns, digest, len, created_ms); a row already there stays */
    CN_SQL_BLOBS_MEMBER_DELETE, /* (ns, digest) */
    CN_SQL_BLOBS_MEMBERS_PAGE,  /* (ns, after digest, limit) -> digest; by digest */
    /* () -> ns, members, bytes of every namespace with members (base +
     * deltas), by ns */
    CN_SQL_BLOBS_USAGE,
    CN_SQL_BLOBS_COUNT
};

/* Statements written once per engine (cn_meta_batch_text picks one). */
enum {
    CN_SQL_BLOBS_E_USAGE_FOLD, /* () folds every committed usage delta into its base row */
    CN_SQL_BLOBS_E_COUNT
};

/* Batch statements (cn_meta_batch_found): ?1 the list of 32-byte digests. */
enum {
    CN_SQL_BLOBS_BATCH_IN_NS,  /* (digests, ns) -> position of each digest ns holds */
    CN_SQL_BLOBS_BATCH_ANY_NS, /* (digests) -> position of each digest any namespace holds */
    CN_SQL_BLOBS_BATCH_COUNT
};

extern const char *const cn__sql_blobs[CN_SQL_BLOBS_COUNT];
extern const cn_meta_batch_sql_t cn__sql_blobs_batch[CN_SQL_BLOBS_BATCH_COUNT];
extern const cn_meta_batch_sql_t cn__sql_blobs_engine[CN_SQL_BLOBS_E_COUNT];
extern const cn_sql_set_t cn__sql_blobs_set;

#endif
