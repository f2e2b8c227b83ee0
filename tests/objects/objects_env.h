/* The environment of the objects service's unit tests: a real meta, store
 * and objects handle in a test's own temp dir, and a caller's request.
 * Shared by test_objects.c and test_versions.c; a header of static
 * functions, for one test program at a time. */
#ifndef CN_TEST_OBJECTS_ENV_H
#define CN_TEST_OBJECTS_ENV_H

#include "cn_test.h"
#include "cairn/objects.h"
#include "cairn/meta.h"
#include "cairn/store.h"
#include "meta/test_target.h"
#include "store/test_blob_target.h"

typedef struct {
    char *dir; /* cn_test_tmpdir's */
    cn_meta_t *meta;
    cn_store_t *store;
    cn_objects_t *o;
    cn_principal_t alice;
} env_t;

/* The store's pack threshold of the envs opened next (0: packs off). */
static uint64_t g_pack_max;

/* An env in a new directory; its metadata (and, with heads, the head
 * cache's generation table) that of data_dir, or its own when NULL.  A
 * second env on another's data_dir is another process in all but the
 * address space: its own database connections on the same meta.db, its own
 * store (a data dir's store is one process's; settings never touch blobs,
 * a copy only references them).  With CAIRN_TEST_META set (tests/fleet/pg.sh)
 * the metadata is a PostgreSQL database of data_dir's own instead
 * (cn_test_meta_for: the same one for the same data_dir), and with
 * CAIRN_TEST_BLOBS=s3 (pg.sh --blob-tier) the blobs are on the S3 tier, under
 * data_dir's key prefix (cn_test_blob_target: envs on one data_dir share
 * them, as a fleet's nodes do). */
static void env_open_on(env_t *e, const cn_objects_opts_t *oo, const char *data_dir, bool heads)
{
    memset(e, 0, sizeof *e);
    e->dir = cn_test_tmpdir("objtest");
    CN_CHECK(e->dir != NULL);
    if (!data_dir)
        data_dir = e->dir;
    cn_meta_opts_t mo = { .no_sync = true };
    CN_CHECK_EQ(cn_meta_open(cn_test_meta_for(data_dir), &mo, &e->meta), 0);
    cn_store_opts_t so = { .meta = e->meta, .pack_max_bytes = g_pack_max };
    cn_test_blob_target(data_dir, &so);
    CN_CHECK_EQ(cn_store_open(e->dir, &so, &e->store), 0);
    cn_objects_opts_t def = { .upload_sweep_ms = -1 };
    if (oo)
        def = *oo;
    if (heads)
        def.data_dir = data_dir;
    CN_CHECK_EQ(cn_objects_open(e->meta, e->store, &def, &e->o), 0);
    snprintf(e->alice.account, sizeof e->alice.account, "alice");
    snprintf(e->alice.token_id, sizeof e->alice.token_id, "tok-alice");
    e->alice.account_id = 1;
    e->alice.perms = CN_PERM_DEFAULT;
}

/* An env of its own (oo NULL: no upload sweeper). */
static void env_open(env_t *e, const cn_objects_opts_t *oo)
{
    env_open_on(e, oo, NULL, false);
}

static void env_close(env_t *e)
{
    cn_objects_close(e->o);
    cn_store_close(e->store);
    cn_meta_close(e->meta);
    cn_test_rmtree(e->dir);
    free(e->dir);
    e->dir = NULL;
}

static cn_objects_req_t req_for(const cn_principal_t *p)
{
    cn_objects_req_t r;
    memset(&r, 0, sizeof r);
    r.principal = p;
    cn_authz_ip_parse("127.0.0.1", &r.source_ip);
    return r;
}

#endif
