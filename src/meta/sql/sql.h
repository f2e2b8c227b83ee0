/* meta statement files: the SQL text of every service, kept beside the
 * engine that runs it.  Each service owns one statement file here
 * (objects.c, blobs.c, repos.c, identity.c, store.c): its schema steps and
 * its statements, each statement named by an enum constant and held in one
 * array indexed by it.  Services pass the named text to cn_meta_execf /
 * cn_meta_queryf / cn_meta_prepare and never write SQL themselves
 * (scripts/sqlcheck.py fails the build's checks if one does).
 *
 * A statement file must never hold logic or build text at run time: every
 * statement is a constant, one statement per entry (multi-statement text
 * belongs in schema steps; the one code allowed is a schema step's apply
 * hook that seeds rows the step defines, as repos.c's instance row), so
 * tests/meta/test_sql.c can prepare each one against the migrated schema and
 * the PostgreSQL engine can carry its own text for an entry later without
 * touching a service. */
#ifndef CAIRN_META_SQL_H
#define CAIRN_META_SQL_H

#include <stddef.h>
#include <stdint.h>
#include "cairn/meta.h"

/* One service's statement file: its migration component and steps, and its
 * statements (stmts[i] is the text of the statement whose enum constant is
 * i; every entry is non-NULL). */
typedef struct cn_sql_set {
    const char *component;
    const cn_meta_migration_t *schema;
    size_t nschema;
    const char *const *stmts;
    size_t nstmts;
    /* Optional: run once in an import's last transaction (src/meta/import.c)
     * when the target holds this component, to move what the copied rows
     * carry past (a sequence past their ids); NULL: nothing to do. */
    const cn_meta_batch_sql_t *after_import;
} cn_sql_set_t;

/* The database's clock in Unix milliseconds, an expression for either
 * engine: the one clock every node of a fleet shares, for times that nodes
 * compare (leases, pin expiries, the sweeper's grace). */
#define CN_SQL_NOW_MS_SQLITE "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)"
#define CN_SQL_NOW_MS_PG "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)"

/* A multi-row INSERT's text: head, then rows copies of row (which starts
 * with ", "; the first copy without it), then tail; NULL when rows is 0 or
 * above max, or out of memory.  Caller frees. */
char *cn__sql_rows_text(const char *head, const char *row, const char *tail, uint32_t rows,
                        uint32_t max);

/* Brings set's component up to its last schema step (cn_meta_migrate). */
static inline cn_err_t cn__sql_migrate(cn_meta_t *meta, const cn_sql_set_t *set)
{
    return cn_meta_migrate(meta, set->component, set->schema, set->nschema);
}

#endif
