/* The metadata engine interface: what meta.c needs from a database engine.
 *
 * meta.c owns everything engine-independent — the writer slot, the reader
 * pool, group commit, statement caching, the failed-transaction rule and
 * migrations.  An engine only opens connections and runs SQL on them.  A
 * connection is used by one thread at a time (meta.c guarantees it).  Engines
 * map their own result codes onto cn_err_t and never log bound values.
 */
#ifndef CN_META_ENGINE_H
#define CN_META_ENGINE_H

#include "cairn/meta.h"

typedef struct cn__meta_db cn__meta_db_t;     /* engine-wide shared state */
typedef struct cn__meta_conn cn__meta_conn_t; /* one connection */
typedef struct cn__meta_raw cn__meta_raw_t;   /* one compiled statement */

typedef struct cn__meta_engine {
    const char *name;

    /* target is the engine-specific location (a file path for SQLite). */
    cn_err_t (*db_open)(const char *target, const cn_meta_opts_t *opts, cn__meta_db_t **out);
    void (*db_close)(cn__meta_db_t *db);
    /* Makes every commit already returned by commit() durable.  Called
     * without the writer slot held, by one thread at a time. */
    cn_err_t (*sync)(cn__meta_db_t *db);

    /* writer: the one connection that runs write transactions; otherwise a
     * read-only reader. */
    cn_err_t (*conn_open)(cn__meta_db_t *db, bool writer, cn__meta_conn_t **out);
    void (*conn_close)(cn__meta_conn_t *c);
    cn_err_t (*begin)(cn__meta_conn_t *c, cn_meta_mode_t mode);
    /* Optional: begins the writer's transaction for a schema change, holding
     * whatever makes two processes' schema changes run one after the other
     * and lets the later one see the earlier one's result (PostgreSQL: an
     * advisory lock under READ COMMITTED).  NULL: begin(c, CN_META_WRITE). */
    cn_err_t (*begin_schema)(cn__meta_conn_t *c);
    /* Commits; for writes the commit is visible but durable only after sync(). */
    cn_err_t (*commit)(cn__meta_conn_t *c);
    void (*rollback)(cn__meta_conn_t *c);
    cn_err_t (*exec)(cn__meta_conn_t *c, const char *sql);
    /* Optional: the engine's own text of a schema step written in the
     * portable dialect (cairn/meta.h), malloc'd; NULL on -ENOMEM.  NULL hook:
     * the text runs as written. */
    char *(*translate_ddl)(const char *sql);
    int64_t (*changes)(cn__meta_conn_t *c);
    const char *(*errmsg)(cn__meta_conn_t *c);

    cn_err_t (*prepare)(cn__meta_conn_t *c, const char *sql, cn__meta_raw_t **out);
    void (*finalize)(cn__meta_raw_t *r);
    void (*reset)(cn__meta_raw_t *r); /* also clears bindings */
    cn_err_t (*bind_int64)(cn__meta_raw_t *r, int idx, int64_t v);
    cn_err_t (*bind_text)(cn__meta_raw_t *r, int idx, const char *s, size_t len);
    cn_err_t (*bind_blob)(cn__meta_raw_t *r, int idx, const void *p, size_t len);
    cn_err_t (*bind_null)(cn__meta_raw_t *r, int idx);
    cn_err_t (*step)(cn__meta_raw_t *r); /* CN_META_ROW, CN_META_DONE or error */
    bool (*column_is_null)(cn__meta_raw_t *r, int col);
    int64_t (*column_int64)(cn__meta_raw_t *r, int col);
    const char *(*column_text)(cn__meta_raw_t *r, int col, size_t *len);
    const void *(*column_blob)(cn__meta_raw_t *r, int col, size_t *len);
    int (*column_count)(cn__meta_raw_t *r);
} cn__meta_engine_t;

extern const cn__meta_engine_t cn__meta_engine_sqlite;
extern const cn__meta_engine_t cn__meta_engine_pg;

/* meta.c for migrate.c: a write transaction for a schema change (the
 * engine's begin_schema), and a schema step run through the engine's DDL
 * translation.  Errors as cn_meta_begin / cn_meta_exec. */
cn_err_t cn__meta_begin_schema(cn_meta_t *meta, cn_meta_txn_t **out);
cn_err_t cn__meta_exec_ddl(cn_meta_txn_t *txn, const char *sql);

#endif
