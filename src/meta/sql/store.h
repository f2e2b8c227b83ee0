/* The store's statements: durable pins (src/store/pins.c) and the pack index
 * (src/store/pack.c).  See sql.h. */
#ifndef CAIRN_META_SQL_STORE_H
#define CAIRN_META_SQL_STORE_H

#include "meta/sql/sql.h"

enum {
    CN_SQL_STORE_PIN_FIND_LIVE,    /* (digest, now) -> pin_id of a live pin */
    CN_SQL_STORE_PIN_INSERT,       /* (pin_id, digest, owner_tag, expires, created) */
    CN_SQL_STORE_PIN_DELETE,       /* (pin_id) */
    CN_SQL_STORE_PIN_EXPIRE,       /* (now): pins whose expiry has passed */
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
    CN_SQL_STORE_COUNT
};

extern const char *const cn__sql_store[CN_SQL_STORE_COUNT];
extern const cn_sql_set_t cn__sql_store_set;

#endif
