/* fleet import, the metadata half (`cairn admin fleet import`, docs/fleet.md
 * "Moving an embedded deployment in"): copies every service's rows of an
 * embedded database (SQLite) into a fleet's (PostgreSQL), table by table in
 * schema order, each table in one write transaction of the target that also
 * records the progress, so a killed import resumes where it stopped.
 *
 * The copy is generic: both databases hold the same schema text (the DDL is
 * translated, not rewritten), so a table is copied by its column names,
 * each value bound by its declared type, in multi-row INSERTs (a round trip
 * per IMP_BATCH_ROWS rows, not per row).  What is not copied is what belongs
 * to a node or a local store: cn_schema (the target is migrated by the
 * components' own steps instead), pins, the pack index, the node registry
 * and the topic rows.
 *
 * Invariants:
 *  I1. A target is taken only when it is empty (no component recorded but
 *      this file's own) or holds this import's progress row: never mixes two
 *      deployments.
 *  I2. A table is copied whole or not at all, together with its progress
 *      (one transaction): rerunning a table after a kill replaces what the
 *      previous attempt left (nothing, by I2) and the rows seeded by the
 *      target's own migrations (repos' instance row).
 *  I3. After each table whose key the target numbers itself (INTEGER
 *      PRIMARY KEY: an identity column there) the sequence is moved past the
 *      largest copied id, so later inserts never collide; and before the
 *      import is marked finished, each component's own counters kept outside
 *      its tables (cn_sql_set_t.after_import: the objects' version ids) are
 *      moved past what the copied rows hold.
 *
 * This file must never write to the source, nor copy into a target that
 * fails I1. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cairn/meta.h"
#include "cairn/util.h"
#include "meta/sql/auth.h"
#include "meta/sql/blobs.h"
#include "meta/sql/fleet.h"
#include "meta/sql/gateway.h"
#include "meta/sql/identity.h"
#include "meta/sql/console.h"
#include "meta/sql/objects.h"
#include "meta/sql/objgen.h"
#include "meta/sql/repos.h"
#include "meta/sql/sql.h"
#include "meta/sql/store.h"

#define IMP_TABLES_MAX 256
#define IMP_COLS_MAX 64
#define IMP_NAME_MAX 63
#define IMP_SQL_MAX 8192
/* One INSERT of the copy: at most this many rows, and values (parameters). */
#define IMP_BATCH_ROWS 256
#define IMP_BATCH_PARAMS 4096

/* Every statement file (as tests/meta/test_sql.c): the components a source
 * may record. */
static const cn_sql_set_t *const imp_sets[] = {
    &cn__sql_store_set, &cn__sql_repos_set,   &cn__sql_id_set,     &cn__sql_obj_set,
    &cn__sql_blobs_set, &cn__sql_au_set,      &cn__sql_objgen_set, &cn__sql_gateway_set,
    &cn__sql_fleet_set, &cn__sql_console_set,
};

/* Node-local or store-local tables, and the bookkeeping ones; and the usage
 * totals, which the target's own triggers rebuild from the rows as they are
 * copied (copied too, they would count every row twice). */
static const char *const imp_skip[] = {
    "cn_schema",         "cn_import",   "store_pin",         "store_pack",
    "cn_nodes",          "cn_topics",   "store_pack_blob",   "cn_obj_gen",
    "console_sessions",  "obj_usage",   "obj_usage_delta",   "blobs_usage",
    "blobs_usage_delta", "store_usage", "store_usage_delta",
};

static const cn_meta_migration_t imp_schema[] = {
    { 1,
      "CREATE TABLE cn_import ("
      "  import_id TEXT PRIMARY KEY,"
      "  tables_done BIGINT NOT NULL,"
      "  started_ms BIGINT NOT NULL,"
      "  finished_ms BIGINT NOT NULL DEFAULT 0);",
      NULL, NULL },
};

typedef struct imp_col {
    char name[IMP_NAME_MAX + 1];
    char kind; /* 'i' integer, 'b' blob, 't' anything else (text) */
} imp_col_t;

typedef struct imp_table {
    char name[IMP_NAME_MAX + 1];
    imp_col_t cols[IMP_COLS_MAX];
    int ncols;
    int serial; /* index of its INTEGER PRIMARY KEY column, -1: none (I3) */
} imp_table_t;

typedef struct imp {
    cn_meta_t *src, *dst;
    const char *id;
    imp_table_t *tables;
    size_t ntables;
    int64_t done;          /* tables_done read from the progress row; -1: none */
    int64_t finished;      /* its finished_ms */
    const char *comp_used; /* I1: a component the target already records */
} imp_t;

static bool ident_ok(const char *s, size_t n)
{
    if (n == 0 || n > IMP_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return false;
    return true;
}

static bool skipped(const char *name)
{
    for (size_t i = 0; i < sizeof imp_skip / sizeof imp_skip[0]; i++)
        if (!strcmp(imp_skip[i], name))
            return true;
    return !strncmp(name, "sqlite_", 7);
}

/* ---- the source's tables -------------------------------------------------------- */

static char col_kind(const char *type)
{
    char up[32] = "";
    for (size_t i = 0; type && type[i] && i + 1 < sizeof up; i++)
        up[i] = (char)(type[i] >= 'a' && type[i] <= 'z' ? type[i] - 32 : type[i]);
    return strstr(up, "INT") ? 'i' : strstr(up, "BLOB") ? 'b' : 't';
}

static cn_err_t read_cols(cn_meta_txn_t *txn, imp_table_t *t)
{
    cn_meta_stmt_t *st = NULL;
    cn_err_t e = cn_meta_queryf(
        txn, &st, "SELECT name, type, pk FROM pragma_table_info(?) ORDER BY cid", "s", t->name);
    int npk = 0, pk_col = -1;
    while (e >= 0 && (e = cn_meta_step(st)) == CN_META_ROW) {
        size_t n = 0;
        const char *name = cn_meta_column_text(st, 0, &n);
        if (t->ncols >= IMP_COLS_MAX || !name || !ident_ok(name, n)) {
            e = CN_E_UNSUPPORTED;
            break;
        }
        imp_col_t *c = &t->cols[t->ncols];
        memcpy(c->name, name, n + 1);
        const char *type = cn_meta_column_text(st, 1, NULL);
        c->kind = col_kind(type);
        if (cn_meta_column_int64(st, 2) > 0) {
            npk++;
            pk_col = type && !strcmp(type, "INTEGER") ? t->ncols : -1;
        }
        t->ncols++;
    }
    cn_meta_finish(st);
    t->serial = npk == 1 ? pk_col : -1;
    return e < 0 ? e : (t->ncols ? 0 : CN_E_CORRUPT);
}

/* The tables in creation order (sqlite_master's rowid), which is schema
 * order: a table is created before any that references it. */
static cn_err_t list_body(cn_meta_txn_t *txn, void *ctx)
{
    imp_t *im = ctx;
    im->ntables = 0;
    cn_meta_stmt_t *st = NULL;
    cn_err_t e = cn_meta_queryf(
        txn, &st, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid", "");
    while (e >= 0 && (e = cn_meta_step(st)) == CN_META_ROW) {
        size_t n = 0;
        const char *name = cn_meta_column_text(st, 0, &n);
        if (!name || skipped(name))
            continue;
        if (im->ntables >= IMP_TABLES_MAX || !ident_ok(name, n)) {
            e = CN_E_UNSUPPORTED;
            break;
        }
        imp_table_t *t = &im->tables[im->ntables++];
        memset(t, 0, sizeof *t);
        memcpy(t->name, name, n + 1);
    }
    cn_meta_finish(st);
    for (size_t i = 0; e >= 0 && i < im->ntables; i++)
        e = read_cols(txn, &im->tables[i]);
    return e < 0 ? e : 0;
}

/* ---- the target: I1 and its schema ----------------------------------------------- */

static const cn_sql_set_t *set_of(const char *component)
{
    for (size_t i = 0; i < sizeof imp_sets / sizeof imp_sets[0]; i++)
        if (!strcmp(imp_sets[i]->component, component))
            return imp_sets[i];
    return NULL;
}

static cn_err_t progress_body(cn_meta_txn_t *txn, void *ctx)
{
    imp_t *im = ctx;
    cn_meta_stmt_t *st = NULL;
    im->done = -1;
    cn_err_t e = cn_meta_queryf(
        txn, &st, "SELECT tables_done, finished_ms, import_id = ? FROM cn_import", "s", im->id);
    while (e >= 0 && (e = cn_meta_step(st)) == CN_META_ROW) {
        if (!cn_meta_column_int64(st, 2)) {
            e = CN_E_EXISTS; /* another import's target (I1) */
            break;
        }
        im->done = cn_meta_column_int64(st, 0);
        im->finished = cn_meta_column_int64(st, 1);
    }
    cn_meta_finish(st);
    if (e < 0 || im->done >= 0)
        return e < 0 ? e : 0;
    /* A fresh import: nothing recorded but cn_import itself (I1). */
    e = cn_meta_queryf(txn, &st,
                       "SELECT component FROM cn_schema WHERE component <> 'import' LIMIT 1", "");
    if (e >= 0 && (e = cn_meta_step(st)) == CN_META_ROW)
        im->comp_used = "";
    cn_meta_finish(st);
    return e < 0 ? e : 0;
}

static cn_err_t start_body(cn_meta_txn_t *txn, void *ctx)
{
    imp_t *im = ctx;
    return cn_meta_execf(
        txn, "INSERT INTO cn_import (import_id, tables_done, started_ms) VALUES (?, 0, ?)", "si",
        im->id, cn_wall_ms());
}

/* Brings each of the source's components to the source's version on the
 * target (not beyond: the columns then match), unless already there. */
static cn_err_t migrate_target(imp_t *im)
{
    cn_meta_txn_t *txn = NULL;
    CN_TRY(cn_meta_begin(im->src, CN_META_READ, &txn));
    cn_meta_stmt_t *st = NULL;
    cn_err_t e = cn_meta_queryf(txn, &st, "SELECT component, version FROM cn_schema", "");
    while (e >= 0 && (e = cn_meta_step(st)) == CN_META_ROW) {
        const char *comp = cn_meta_column_text(st, 0, NULL);
        int64_t v = cn_meta_column_int64(st, 1), have = 0;
        const cn_sql_set_t *set = comp ? set_of(comp) : NULL;
        if (!set || v < 0 || (size_t)v > set->nschema) {
            cn_error("meta",
                     "import: the source's component %s (version %lld) is unknown to "
                     "this binary",
                     comp ? comp : "?", (long long)v);
            e = CN_E_UNSUPPORTED;
            break;
        }
        e = cn_meta_schema_version(im->dst, comp, &have);
        if (e >= 0 && have < v)
            e = cn_meta_migrate(im->dst, comp, set->schema, (size_t)v);
    }
    cn_meta_finish(st);
    cn_meta_rollback(txn);
    return e < 0 ? e : 0;
}

/* ---- one table ------------------------------------------------------------------- */

typedef struct copy {
    imp_t *im;
    const imp_table_t *t;
    size_t index;
    int64_t rows;
} copy_t;

/* Binds column idx of in's row to parameter at (1-based) of out. */
static cn_err_t bind_value(cn_meta_stmt_t *in, int idx, cn_meta_stmt_t *out, int at, char kind)
{
    if (cn_meta_column_is_null(in, idx))
        return cn_meta_bind_null(out, at);
    size_t n = 0;
    if (kind == 'i')
        return cn_meta_bind_int64(out, at, cn_meta_column_int64(in, idx));
    if (kind == 'b') {
        const void *p = cn_meta_column_blob(in, idx, &n);
        return cn_meta_bind_blob(out, at, p ? p : "", p ? n : 0);
    }
    const char *s = cn_meta_column_text(in, idx, &n);
    return cn_meta_bind_text(out, at, s ? s : "", s ? n : 0);
}

/* "SELECT a, b FROM t", "SELECT COUNT(*) FROM t" and the column list "a, b". */
static cn_err_t table_sql(const imp_table_t *t, char *sel, char *count, char *cols)
{
    int s = snprintf(sel, IMP_SQL_MAX, "SELECT ");
    int c = 0;
    cols[0] = '\0';
    for (int k = 0; k < t->ncols; k++) {
        s += snprintf(sel + s, (size_t)(IMP_SQL_MAX - s), "%s%s", k ? ", " : "", t->cols[k].name);
        c += snprintf(cols + c, (size_t)(IMP_SQL_MAX - c), "%s%s", k ? ", " : "", t->cols[k].name);
        if (s >= IMP_SQL_MAX - 128 || c >= IMP_SQL_MAX - 128)
            return CN_E_UNSUPPORTED;
    }
    snprintf(sel + s, (size_t)(IMP_SQL_MAX - s), " FROM %s", t->name);
    snprintf(count, IMP_SQL_MAX, "SELECT COUNT(*) FROM %s", t->name);
    return 0;
}

/* Rows in one INSERT of t: IMP_BATCH_ROWS, fewer for a wide table so that
 * one statement binds at most IMP_BATCH_PARAMS values (below SQLite's and
 * PostgreSQL's parameter limits). */
static size_t batch_rows(const imp_table_t *t)
{
    size_t k = IMP_BATCH_PARAMS / (size_t)(t->ncols > 0 ? t->ncols : 1);
    return k < 1 ? 1 : k > IMP_BATCH_ROWS ? IMP_BATCH_ROWS : k;
}

/* "INSERT INTO t (cols) VALUES (?, ?), (?, ?), ..." with rows rows,
 * malloc'd (NULL: -ENOMEM). */
static char *insert_sql(const imp_table_t *t, const char *cols, size_t rows)
{
    size_t one = (size_t)t->ncols * 3 + 4;
    size_t cap = strlen(t->name) + strlen(cols) + 32 + rows * one;
    char *sql = malloc(cap);
    if (!sql)
        return NULL;
    size_t n = (size_t)snprintf(sql, cap, "INSERT INTO %s (%s) VALUES ", t->name, cols);
    for (size_t r = 0; r < rows; r++) {
        n += (size_t)snprintf(sql + n, cap - n, "%s(", r ? ", " : "");
        for (int c = 0; c < t->ncols; c++)
            n += (size_t)snprintf(sql + n, cap - n, "%s?", c ? ", " : "");
        n += (size_t)snprintf(sql + n, cap - n, ")");
    }
    return sql;
}

/* I3 on PostgreSQL: the identity column's sequence past the largest id. */
static cn_err_t bump_serial(cn_meta_txn_t *dtx, cn_meta_t *dst, const imp_table_t *t)
{
    if (t->serial < 0 || strcmp(cn_meta_engine(dst), "postgres"))
        return 0;
    char sql[512];
    const char *col = t->cols[t->serial].name;
    snprintf(sql, sizeof sql,
             "SELECT setval(pg_get_serial_sequence('%s', '%s'), COALESCE(MAX(%s), 0) + 1, false)"
             " FROM %s",
             t->name, col, col, t->name);
    cn_err_t e = cn_meta_execf(dtx, sql, "");
    return e < 0 ? e : 0;
}

/* The source's rows (in, total of them) into the target (dtx), as
 * multi-row INSERTs of batch_rows(t) rows and one shorter one for the
 * rest: a round trip per batch on PostgreSQL, not per row. */
static cn_err_t copy_rows(copy_t *cp, cn_meta_txn_t *dtx, cn_meta_stmt_t *in, const char *cols,
                          int64_t total)
{
    const imp_table_t *t = cp->t;
    size_t k = batch_rows(t), j = 0, cap = 0;
    int64_t left = total;
    cn_meta_stmt_t *out = NULL;
    cn_err_t e = CN_OK;
    cp->rows = 0;
    while (e >= 0 && (e = cn_meta_step(in)) == CN_META_ROW) {
        if (j == 0) { /* a new statement: a full batch, or the rest */
            cn_meta_finish(out);
            out = NULL;
            cap = left >= (int64_t)k ? k : (size_t)left;
            char *ins = cap ? insert_sql(t, cols, cap) : NULL;
            e = !cap  ? CN_E_CONFLICT /* more rows than counted */
                : ins ? cn_meta_prepare(dtx, ins, &out)
                      : -ENOMEM;
            free(ins);
        }
        for (int c = 0; c < t->ncols && e >= 0; c++)
            e = bind_value(in, c, out, (int)j * t->ncols + c + 1, t->cols[c].kind);
        if (e >= 0 && ++j == cap) {
            e = cn_meta_step(out);
            cp->rows += e >= 0 ? (int64_t)cap : 0;
            left -= (int64_t)cap;
            j = 0;
        }
    }
    cn_meta_finish(out);
    if (e >= 0 && (j || left)) /* fewer rows than counted */
        e = CN_E_CONFLICT;
    return e < 0 ? e : CN_OK;
}

/* I2: the table's rows replace the target's, with the progress, in dtx. */
static cn_err_t copy_body(cn_meta_txn_t *dtx, void *ctx)
{
    copy_t *cp = ctx;
    char *sel = malloc(IMP_SQL_MAX), *count = malloc(IMP_SQL_MAX), *cols = malloc(IMP_SQL_MAX);
    cn_meta_txn_t *stx = NULL;
    cn_meta_stmt_t *in = NULL;
    int64_t total = 0;
    char del[128];
    snprintf(del, sizeof del, "DELETE FROM %s", cp->t->name);
    cn_err_t e = sel && count && cols ? table_sql(cp->t, sel, count, cols) : -ENOMEM;
    if (e >= 0)
        e = cn_meta_exec(dtx, del);
    /* one read snapshot: the count and the rows agree */
    if (e >= 0)
        e = cn_meta_begin(cp->im->src, CN_META_READ, &stx);
    if (e >= 0 && (e = cn_meta_queryf(stx, &in, count, "")) >= 0) {
        e = cn_meta_step(in);
        total = e == CN_META_ROW ? cn_meta_column_int64(in, 0) : 0;
        e = e == CN_META_ROW ? CN_OK : e < 0 ? e : CN_E_DB;
        cn_meta_finish(in);
        in = NULL;
    }
    if (e >= 0)
        e = cn_meta_prepare(stx, sel, &in);
    if (e >= 0)
        e = copy_rows(cp, dtx, in, cols, total);
    cn_meta_finish(in);
    cn_meta_rollback(stx);
    free(sel);
    free(count);
    free(cols);
    if (e >= 0)
        e = bump_serial(dtx, cp->im->dst, cp->t);
    if (e >= 0)
        e = cn_meta_execf(dtx, "UPDATE cn_import SET tables_done = ? WHERE import_id = ?", "is",
                          (int64_t)cp->index + 1, cp->im->id);
    return e < 0 ? e : 0;
}

/* I3 for what a component counts outside its tables (the objects' version
 * ids, drawn from a PostgreSQL sequence): each set's after_import, when the
 * target holds the component. */
static cn_err_t after_import(cn_meta_txn_t *txn)
{
    cn_err_t e = CN_OK;
    for (size_t i = 0; e >= 0 && i < sizeof imp_sets / sizeof imp_sets[0]; i++) {
        if (!imp_sets[i]->after_import)
            continue;
        cn_meta_stmt_t *st = NULL;
        e = cn_meta_queryf(txn, &st, "SELECT 1 FROM cn_schema WHERE component = ?", "s",
                           imp_sets[i]->component);
        bool held = e >= 0 && (e = cn_meta_step(st)) == CN_META_ROW;
        cn_meta_finish(st);
        if (e >= 0 && held)
            e = cn_meta_execf(txn, cn_meta_batch_text(txn, imp_sets[i]->after_import), "");
    }
    return e < 0 ? e : 0;
}

static cn_err_t finish_body(cn_meta_txn_t *txn, void *ctx)
{
    imp_t *im = ctx;
    CN_TRY(after_import(txn));
    return cn_meta_execf(txn, "UPDATE cn_import SET finished_ms = ? WHERE import_id = ?", "is",
                         cn_wall_ms(), im->id);
}

/* ---- the entry points ------------------------------------------------------------ */

static cn_err_t import_open(imp_t *im, const cn_meta_import_opts_t *o)
{
    size_t idn = o->import_id ? strlen(o->import_id) : 0;
    if (idn == 0 || idn > 128 || strcmp(cn_meta_engine(im->src), "sqlite"))
        return CN_E_INVALID;
    CN_TRY(cn_meta_migrate(im->dst, "import", imp_schema, 1));
    CN_TRY(cn_meta_run(im->dst, CN_META_RUN_READ, progress_body, im));
    if (im->done < 0 && im->comp_used)
        return CN_E_EXISTS; /* I1: a used target */
    if (im->finished)
        return CN_E_EXISTS; /* this import is done: a second one is not taken */
    if (im->done < 0) {
        CN_TRY(cn_meta_run(im->dst, CN_META_RUN_WRITE, start_body, im));
        im->done = 0;
    }
    CN_TRY(migrate_target(im));
    return cn_meta_run(im->src, CN_META_RUN_READ, list_body, im);
}

cn_err_t cn_meta_import(cn_meta_t *src, cn_meta_t *dst, const cn_meta_import_opts_t *o)
{
    imp_t im = { .src = src, .dst = dst, .id = o->import_id, .done = -1 };
    im.tables = calloc(IMP_TABLES_MAX, sizeof *im.tables);
    if (!im.tables)
        return -ENOMEM;
    cn_err_t e = import_open(&im, o);
    for (size_t i = 0; e >= 0 && i < im.ntables; i++) {
        copy_t cp = { &im, &im.tables[i], i, 0 };
        bool done = (int64_t)i < im.done;
        if (!done)
            e = cn_meta_run(dst, CN_META_RUN_WRITE | CN_META_RETRY, copy_body, &cp);
        if (e < 0) /* names the table (a column or table the target lacks is CN_E_INVALID) */
            cn_error("meta", "import: table %s: %s", im.tables[i].name, cn_strerror(e));
        if (e >= 0 && o->progress)
            e = o->progress(o->arg, im.tables[i].name, done ? -1 : cp.rows);
    }
    free(im.tables);
    return e < 0 ? e : 0;
}

cn_err_t cn_meta_import_finish(cn_meta_t *dst, const char *import_id)
{
    imp_t im = { .dst = dst, .id = import_id };
    return cn_meta_run(dst, CN_META_RUN_WRITE | CN_META_RETRY, finish_body, &im);
}

cn_err_t cn_meta_import_packed(cn_meta_t *src, cn_meta_import_digest_fn fn, void *arg)
{
    cn_meta_txn_t *txn = NULL;
    CN_TRY(cn_meta_begin(src, CN_META_READ, &txn));
    cn_meta_stmt_t *st = NULL;
    cn_err_t e = cn_meta_queryf(txn, &st, cn__sql_store[CN_SQL_STORE_PACKED_LIST], "");
    while (e >= 0 && (e = cn_meta_step(st)) == CN_META_ROW) {
        size_t n = 0;
        const void *p = cn_meta_column_blob(st, 0, &n);
        if (p && n == 32)
            e = fn(arg, p);
    }
    cn_meta_finish(st);
    cn_meta_rollback(txn);
    /* A source that never packed has no such table. */
    return e == CN_E_INVALID ? 0 : e < 0 ? e : 0;
}
