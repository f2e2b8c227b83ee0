/* meta statement files: every service's schema steps apply to a fresh
 * database, and every named statement is one non-empty statement that the
 * engine prepares against that schema — a typo, a dropped column or an entry
 * left NULL fails here, not in a request.  On PostgreSQL too when
 * CAIRN_TEST_META names a server (tests/fleet/pg.sh). */
#include "cn_test.h"

#include <string.h>
#include <unistd.h>

#include "cairn/meta.h"
#include "meta/test_target.h"
#include "meta/sql/store.h"
#include "meta/sql/repos.h"
#include "meta/sql/identity.h"
#include "meta/sql/objects.h"
#include "meta/sql/auth.h"
#include "meta/sql/blobs.h"
#include "meta/sql/objgen.h"
#include "meta/sql/fleet.h"
#include "meta/sql/gateway.h"
#include "meta/sql/console.h"

/* Every statement file; a new one is added here. */
static const cn_sql_set_t *const sets[] = {
    &cn__sql_store_set, &cn__sql_repos_set,   &cn__sql_id_set,     &cn__sql_obj_set,
    &cn__sql_blobs_set, &cn__sql_au_set,      &cn__sql_objgen_set, &cn__sql_gateway_set,
    &cn__sql_fleet_set, &cn__sql_console_set,
};
enum {
    NSETS = sizeof sets / sizeof sets[0]
};

typedef struct {
    const cn_sql_set_t *set;
    size_t bad; /* the first statement that failed (batch ones after stmts), or all */
    cn_err_t err;
} prep_t;

/* The batch statements (cairn/meta.h, "batch lookups") of a statement
 * file, each written once per engine; a new array is added here. */
typedef struct batch_set {
    const cn_sql_set_t *set;
    const cn_meta_batch_sql_t *sql;
    size_t n;
} batch_set_t;
static const batch_set_t batches[] = {
    { &cn__sql_blobs_set, cn__sql_blobs_batch, CN_SQL_BLOBS_BATCH_COUNT },
    { &cn__sql_repos_set, cn__sql_repos_batch, CN_SQL_REPOS_BATCH_COUNT },
    /* statements written once per engine that are no batch lookups */
    { &cn__sql_obj_set, cn__sql_obj_engine, CN_SQL_OBJ_E_COUNT },
    { &cn__sql_blobs_set, cn__sql_blobs_engine, CN_SQL_BLOBS_E_COUNT },
    { &cn__sql_store_set, cn__sql_store_engine, CN_SQL_STORE_E_COUNT },
    { &cn__sql_console_set, cn__sql_console_engine, CN_SQL_CON_E_COUNT },
    { &cn__sql_id_set, cn__sql_id_engine, CN_SQL_ID_E_COUNT },
};
enum {
    NBATCHES = sizeof batches / sizeof batches[0]
};

/* The statements of set's per-engine arrays, in batches' order. */
static size_t nbatch(const cn_sql_set_t *set)
{
    size_t n = 0;
    for (size_t i = 0; i < NBATCHES; i++)
        n += batches[i].set == set ? batches[i].n : 0;
    return n;
}

static bool one_statement(const char *sql);

static cn_err_t prepare_all(cn_meta_txn_t *txn, void *ctx)
{
    prep_t *p = ctx;
    for (p->bad = 0; p->bad < p->set->nstmts; p->bad++) {
        cn_meta_stmt_t *st = NULL;
        p->err = cn_meta_prepare(txn, p->set->stmts[p->bad], &st);
        cn_meta_finish(st);
        if (p->err < 0)
            return CN_OK;
    }
    /* batch statements: this engine's text (past nstmts in p->bad) */
    for (size_t k = 0; k < NBATCHES; k++) {
        const batch_set_t *b = &batches[k];
        for (size_t i = 0; b->set == p->set && i < b->n; i++, p->bad++) {
            const char *sql = cn_meta_batch_text(txn, &b->sql[i]);
            cn_meta_stmt_t *st = NULL;
            p->err =
                sql && sql[0] && one_statement(sql) ? cn_meta_prepare(txn, sql, &st) : CN_E_INVALID;
            cn_meta_finish(st);
            if (p->err < 0)
                return CN_OK;
        }
    }
    return CN_OK;
}

/* True when sql holds one statement: no ';' but trailing blanks after it. */
static bool one_statement(const char *sql)
{
    const char *semi = strchr(sql, ';');
    if (!semi)
        return true;
    return strspn(semi + 1, " \n\t") == strlen(semi + 1);
}

static void test_every_statement_prepares(void)
{
    char dir[] = "/tmp/cn_test_sql_XXXXXX";
    CN_CHECK(mkdtemp(dir) != NULL);
    char target[512];
    CN_CHECK(cn_test_meta_target(dir, target, sizeof target));
    cn_meta_opts_t o = { .no_sync = true };
    cn_meta_t *m = NULL;
    CN_CHECK_EQ(cn_meta_open(target, &o, &m), 0);
    for (size_t s = 0; s < NSETS; s++)
        CN_CHECK_EQ(cn__sql_migrate(m, sets[s]), 0);
    for (size_t s = 0; s < NSETS; s++) {
        const cn_sql_set_t *set = sets[s];
        CN_CHECK(set->nstmts > 0);
        for (size_t i = 0; i < set->nstmts; i++) {
            bool ok = set->stmts[i] && set->stmts[i][0] && one_statement(set->stmts[i]);
            if (!ok)
                fprintf(stderr, "# %s statement %zu: missing or not one statement\n",
                        set->component, i);
            CN_CHECK(ok);
        }
        prep_t p = { .set = set };
        CN_CHECK_EQ(cn_meta_run(m, CN_META_RUN_WRITE, prepare_all, &p), 0);
        if (p.bad < set->nstmts)
            fprintf(stderr, "# %s statement %zu does not prepare (%d): %s\n", set->component, p.bad,
                    (int)p.err, set->stmts[p.bad]);
        else if (p.bad < set->nstmts + nbatch(set))
            fprintf(stderr, "# %s batch statement %zu does not prepare (%d)\n", set->component,
                    p.bad - set->nstmts, (int)p.err);
        CN_CHECK_EQ(p.bad, set->nstmts + nbatch(set));
    }
    cn_meta_close(m);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CN_CHECK_EQ(system(cmd), 0);
}

CN_TEST_MAIN(CN_TEST(test_every_statement_prepares), )
