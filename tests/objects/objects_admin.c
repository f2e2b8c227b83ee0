/* objects_admin DATA_DIR ACCOUNT policy BUCKET FILE|-   set (or with "-" delete) a policy
 * objects_admin DATA_DIR ACCOUNT visibility BUCKET public|private
 * objects_admin DATA_DIR ACCOUNT pab BUCKET BITS|-      public access block (1 BlockPublicAcls,
 *                                                       2 IgnorePublicAcls, 4 BlockPublicPolicy,
 *                                                       8 RestrictPublicBuckets), "-" deletes it
 * objects_admin DATA_DIR ACCOUNT copy BUCKET SRC DST     CopyObject of SRC onto DST in BUCKET
 * objects_admin DATA_DIR ACCOUNT delete BUCKET KEY      DeleteObject
 *
 * A test helper: acts as ACCOUNT (with every permission) directly on the
 * service over the data directory's metadata, which a running cairnd may
 * hold open too (the metadata engine serializes writers across processes).
 * The data directory's store is one process's: while a cairnd holds it, a
 * scratch store stands in, since bucket settings never touch a blob, and a
 * copy only references the blobs cairnd stored.  It shares the data
 * directory's write-generation table (objects.gen), as every writer must. */
#include "cairn/objects.h"
#include "cairn/meta.h"
#include "cairn/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 6 && !(argc == 7 && !strcmp(argv[3], "copy"))) {
        fprintf(stderr,
                "usage: objects_admin DATA ACCOUNT policy|visibility|pab|delete BUCKET ARG\n"
                "       objects_admin DATA ACCOUNT copy BUCKET SRC DST\n");
        return 2;
    }
    cn_meta_t *meta = NULL;
    cn_store_t *store = NULL;
    cn_objects_t *o = NULL;
    /* CAIRN_META: the server's metadata elsewhere (make test-fleet, as `cairn admin`) */
    const char *target = getenv("CAIRN_META");
    cn_err_t err = cn_meta_open(target && *target ? target : argv[1], NULL, &meta);
    cn_store_opts_t so = { .meta = meta };
    char scratch[] = "/tmp/cn-objects-admin-XXXXXX";
    bool own_scratch = false;
    if (err >= 0)
        err = cn_store_open(argv[1], &so, &store);
    if (err == CN_E_BUSY && mkdtemp(scratch)) {
        own_scratch = true;
        err = cn_store_open(scratch, &so, &store);
    }
    cn_objects_opts_t oo = { .upload_sweep_ms = -1, .data_dir = argv[1] };
    if (err >= 0)
        err = cn_objects_open(meta, store, &oo, &o);
    cn_principal_t p;
    memset(&p, 0, sizeof p);
    snprintf(p.account, sizeof p.account, "%s", argv[2]);
    p.perms = CN_PERM_ALL;
    cn_objects_req_t rq;
    memset(&rq, 0, sizeof rq);
    rq.principal = &p;
    if (err >= 0 && !strcmp(argv[3], "policy")) {
        if (!strcmp(argv[5], "-")) {
            err = cn_objects_bucket_policy_set(o, &rq, argv[4], NULL, 0);
        } else {
            FILE *f = fopen(argv[5], "rb");
            char buf[CN_AUTHZ_POLICY_MAX + 1];
            size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
            if (f)
                fclose(f);
            err = f ? cn_objects_bucket_policy_set(o, &rq, argv[4], buf, n) : CN_E_INVALID;
        }
    } else if (err >= 0 && !strcmp(argv[3], "visibility")) {
        cn_authz_visibility_t v;
        err = cn_authz_visibility_parse(argv[5], &v);
        if (err >= 0)
            err = cn_objects_bucket_set_visibility(o, &rq, argv[4], v);
    } else if (err >= 0 && !strcmp(argv[3], "pab")) {
        long bits = strtol(argv[5], NULL, 10);
        cn_authz_pab_t pab = { .block_public_acls = bits & 1,
                               .ignore_public_acls = bits & 2,
                               .block_public_policy = bits & 4,
                               .restrict_public_buckets = bits & 8 };
        err = cn_objects_bucket_pab_set(o, &rq, argv[4], strcmp(argv[5], "-") ? &pab : NULL);
    } else if (err >= 0 && !strcmp(argv[3], "copy")) {
        err = cn_objects_copy(o, &rq, argv[4], argv[5], argv[4], argv[6], NULL, NULL);
    } else if (err >= 0 && !strcmp(argv[3], "delete")) {
        err = cn_objects_delete(o, &rq, argv[4], argv[5]);
    } else if (err >= 0) {
        err = CN_E_INVALID;
    }
    if (err < 0)
        fprintf(stderr, "objects_admin: %s %s\n", cn_strerror(err), rq.fail.message);
    cn_objects_close(o);
    cn_store_close(store);
    cn_meta_close(meta);
    if (own_scratch) {
        char cmd[sizeof scratch + 16];
        snprintf(cmd, sizeof cmd, "rm -rf %s", scratch);
        if (system(cmd) != 0)
            fprintf(stderr, "objects_admin: could not remove %s\n", scratch);
    }
    return err < 0 ? 1 : 0;
}
