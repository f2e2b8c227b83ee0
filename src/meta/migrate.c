/* Per-component versioned migrations, written against the public meta API
 * (plus meta.c's schema transaction and DDL translation, engine.h), so every
 * engine shares them.  The cn_schema table (created by
 * cn_meta_open) holds one row per component: the last applied version. */
#include "cairn/meta.h"

#include <string.h>
#include <time.h>

#include "cairn/util.h"
#include "engine.h"

#define COMPONENT_MAX 63

static cn_err_t read_version(cn_meta_txn_t *t, const char *component, int64_t *version)
{
    cn_meta_stmt_t *st;
    CN_TRY(cn_meta_prepare(t, "SELECT version FROM cn_schema WHERE component = ?", &st));
    cn_err_t e = cn_meta_bind_str(st, 1, component);
    if (e == 0)
        e = cn_meta_step(st);
    if (e == CN_META_ROW) {
        *version = cn_meta_column_int64(st, 0);
        e = 0;
    } else if (e == CN_META_DONE) {
        *version = 0;
    }
    cn_meta_finish(st);
    return e;
}

cn_err_t cn_meta_schema_version(cn_meta_t *meta, const char *component, int64_t *version)
{
    cn_meta_txn_t *t;
    CN_TRY(cn_meta_begin(meta, CN_META_READ, &t));
    cn_err_t e = read_version(t, component, version);
    if (e < 0) {
        cn_meta_rollback(t);
        return e;
    }
    return cn_meta_commit(t);
}

static cn_err_t apply_steps(cn_meta_txn_t *t, const char *component,
                            const cn_meta_migration_t *steps, size_t n, int64_t from)
{
    for (size_t i = (size_t)from; i < n; i++) {
        if (steps[i].sql)
            CN_TRY(cn__meta_exec_ddl(t, steps[i].sql));
        if (steps[i].apply)
            CN_TRY(steps[i].apply(t, steps[i].arg));
    }
    cn_meta_stmt_t *st;
    CN_TRY(cn_meta_prepare(t,
                           "INSERT INTO cn_schema (component, version, updated_at) VALUES (?, ?, ?)"
                           " ON CONFLICT (component) DO UPDATE SET version = excluded.version,"
                           " updated_at = excluded.updated_at",
                           &st));
    cn_err_t e = cn_meta_bind_str(st, 1, component);
    if (e == 0)
        e = cn_meta_bind_int64(st, 2, (int64_t)n);
    if (e == 0)
        e = cn_meta_bind_int64(st, 3, (int64_t)time(NULL));
    if (e == 0)
        e = cn_meta_step(st);
    cn_meta_finish(st);
    return e;
}

cn_err_t cn_meta_migrate(cn_meta_t *meta, const char *component, const cn_meta_migration_t *steps,
                         size_t n)
{
    if (!component || !*component || strlen(component) > COMPONENT_MAX || (n && !steps))
        return CN_E_INVALID;
    for (size_t i = 0; i < n; i++)
        if (steps[i].version != (int64_t)i + 1 || (!steps[i].sql && !steps[i].apply))
            return CN_E_INVALID;

    /* Fast path without the write lock: already current. */
    int64_t cur = 0;
    CN_TRY(cn_meta_schema_version(meta, component, &cur));
    if (cur > (int64_t)n)
        return CN_E_UNSUPPORTED;
    if (cur == (int64_t)n)
        return 0;

    cn_meta_txn_t *t;
    CN_TRY(cn__meta_begin_schema(meta, &t));
    /* Re-read under the schema lock: another process may have migrated. */
    cn_err_t e = read_version(t, component, &cur);
    if (e == 0 && cur > (int64_t)n)
        e = CN_E_UNSUPPORTED;
    if (e == 0 && cur == (int64_t)n) {
        cn_meta_rollback(t);
        return 0;
    }
    if (e == 0)
        e = apply_steps(t, component, steps, n, cur);
    if (e < 0) {
        cn_warn("meta", "migrating %s from version %lld failed: %s (%s)", component, (long long)cur,
                cn_strerror(e), cn_meta_errmsg(t));
        cn_meta_rollback(t);
        return e;
    }
    e = cn_meta_commit(t);
    if (e == 0)
        cn_info("meta", "schema %s: version %lld -> %zu", component, (long long)cur, n);
    return e;
}
