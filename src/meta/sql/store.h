/* The store's statements: durable pins (src/store/pins.c), the pack index
 * (src/store/pack.c) and the blob rows of a shared tier (src/store/sweep.c).
 * See sql.h. */
#ifndef CAIRN_META_SQL_STORE_H
#define CAIRN_META_SQL_STORE_H

#include <stdint.h>

#include "meta/sql/sql.h"

enum {
    CN_SQL_STORE_PIN_DELETE,       /* (pin_id) */
    CN_SQL_STORE_PACK_LIST,        /* -> (pack_id, indexed_end) of every pack */
    CN_SQL_STORE_PACK_SET_END,     /* (pack_id, indexed_end): upsert */
    CN_SQL_STORE_PACKED_LIST,      /* -> (digest, pack_id, off, len, form, mtime_ms) */
    CN_SQL_STORE_PACKED_INSERT,    /* (digest, pack_id, off, len, form, mtime): kept if present */
    CN_SQL_STORE_PACKED_TOUCH,     /* (mtime, digest) */
    CN_SQL_STORE_PACKED_DELETE,    /* (digest) */
    CN_SQL_STORE_PACKED_DROP_PAST, /* (pack_id, size): entries whose record ends past size */
    CN_SQL_STORE_PACKED_MOVE,      /* (pack, off, digest, old pack, old off): compaction */
    CN_SQL_STORE_PACK_ROWS,        /* (pack_id) -> count of entries in it */
    CN_SQL_STORE_PACK_DELETE,      /* (pack_id): its store_pack row */
    CN_SQL_STORE_USAGE,            /* () -> blobs, bytes (base + deltas) */
    CN_SQL_STORE_USAGE_WALKED,     /* () -> walked of the base row */
    /* (file blobs, file bytes): the totals become the packed rows' plus
     * these, once (walked 0 -> 1) */
    CN_SQL_STORE_USAGE_SET_WALKED,
    CN_SQL_STORE_USAGE_DELTA_CLEAR, /* () every delta (with SET_WALKED) */
    /* (file blobs, file bytes): the totals become the packed rows' plus
     * these whatever they were (`cairn admin store recount`; upserts the
     * base row, walked 1) */
    CN_SQL_STORE_USAGE_RECOUNT,
    /* (walked): 2 while a store of one data directory (SQLite) has the
     * totals open, 1 again at its clean close; a start that finds 2
     * recounts (src/store/usage.c).  A base row not yet walked (0) stays. */
    CN_SQL_STORE_USAGE_MARK,
    /* Blob rows of a shared tier (src/store/sweep.c, S6-S8): */
    CN_SQL_STORE_BLOB_ADD,    /* (digest, mtime): a row for a blob put before v4, if none */
    CN_SQL_STORE_BLOB_DELETE, /* (digest) */
    CN_SQL_STORE_COUNT
};

/* Statements written once per engine (cn_meta_batch_text picks one).  "now"
 * in them is the database's clock (CN_SQL_NOW_MS_*): pin expiries and blob
 * rows' times are kept on it, so nodes whose clocks disagree still agree
 * on what has expired (docs/fleet.md, "Clocks"). */
enum {
    CN_SQL_STORE_E_USAGE_NOTE, /* (blobs, bytes): added to the totals */
    CN_SQL_STORE_E_USAGE_FOLD, /* () folds every committed delta into the base row */
    /* (digest) -> touched_ms, now; the row locked until the end */
    CN_SQL_STORE_E_BLOB_LOCK,
    /* (digest): upsert at now, the later time kept; locks the row */
    CN_SQL_STORE_E_BLOB_TOUCH,
    CN_SQL_STORE_E_PIN_FIND_LIVE, /* (digest) -> pin_id of a pin live at now */
    /* (pin_id, digest, owner_tag, expires, node_now): the row's expiry is
     * now + (expires - node_now), the time left on the caller's clock (1,
     * expired, if none is left); 0 stays 0 (never); created is now */
    CN_SQL_STORE_E_PIN_INSERT,
    CN_SQL_STORE_E_PIN_EXPIRE, /* (): pins whose expiry has passed */
    CN_SQL_STORE_E_COUNT
};
extern const cn_meta_batch_sql_t cn__sql_store_engine[CN_SQL_STORE_E_COUNT];

/* Pack index rows many at a time (src/store/pack.c, issue 24): the text of
 * "INSERT INTO store_pack_blob (digest, pack_id, off, len, form, mtime_ms)
 * VALUES (?, ?, ?, ?, ?, ?), ... ON CONFLICT (digest) DO NOTHING" with rows
 * rows (1 <= rows <= CN_SQL_STORE_PACKED_ROWS_MAX): the parameters are
 * PACKED_INSERT's, row after row; a row whose digest is held already (or
 * repeated in the statement) is skipped, as PACKED_INSERT skips it.
 * malloc'd; NULL: out of memory or rows out of range. */
#define CN_SQL_STORE_PACKED_ROWS_MAX 256u
char *cn__sql_store_packed_insert_rows(uint32_t rows);

extern const char *const cn__sql_store[CN_SQL_STORE_COUNT];
extern const cn_sql_set_t cn__sql_store_set;

#endif
