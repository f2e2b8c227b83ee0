/* proof_sweep DATA_DIR [GRACE_MS]
 *
 * A test helper for the crash suite: opens the data directory the way cairnd
 * does (metadata, store, identity, and in cairnd's order every liveness
 * source cairnd registers: objects, blobs (namespace membership), repos
 * (repository membership)), runs one store sweep with the given grace
 * (default 0: everything unreferenced goes), and prints its counters as one
 * line:
 *   scanned N young N live N pinned N deleted N bytes_deleted N
 * Run it while no cairnd holds the directory.  A service that adds a liveness
 * source to cairnd must add it here too, or this sweep would take its blobs.
 */
#include "cairn/blobs.h"
#include "cairn/identity.h"
#include "cairn/meta.h"
#include "cairn/objects.h"
#include "cairn/repos.h"
#include "cairn/store.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: proof_sweep DATA_DIR [GRACE_MS]\n");
        return 2;
    }
    int64_t grace = argc == 3 ? strtoll(argv[2], NULL, 10) : 0;
    cn_meta_t *meta = NULL;
    cn_store_t *store = NULL;
    cn_identity_t *id = NULL;
    cn_objects_t *o = NULL;
    cn_blobs_t *b = NULL;
    cn_repos_t *r = NULL;
    cn_store_sweep_stats_t st = { 0 };
    cn_err_t err = cn_meta_open(argv[1], NULL, &meta);
    cn_store_opts_t so = { .meta = meta };
    if (err >= 0)
        err = cn_store_open(argv[1], &so, &store);
    if (err >= 0)
        err = cn_identity_open(meta, argv[1], &id);
    cn_objects_opts_t oo = { .upload_sweep_ms = -1 };
    if (err >= 0)
        err = cn_objects_open(meta, store, &oo, &o);
    if (err >= 0)
        err = cn_blobs_open(meta, store, id, NULL, &b);
    if (err >= 0)
        err = cn_repos_open(meta, store, id, NULL, &r);
    if (err >= 0)
        err = cn_store_sweep(store, grace, &st);
    if (err >= 0)
        printf("scanned %llu young %llu live %llu pinned %llu deleted %llu bytes_deleted %llu\n",
               (unsigned long long)st.scanned, (unsigned long long)st.young,
               (unsigned long long)st.live, (unsigned long long)st.pinned,
               (unsigned long long)st.deleted, (unsigned long long)st.bytes_deleted);
    else
        fprintf(stderr, "proof_sweep: %s\n", cn_strerror(err));
    cn_repos_close(r);
    cn_blobs_close(b);
    cn_objects_close(o);
    cn_identity_close(id);
    cn_store_close(store);
    cn_meta_close(meta);
    return err < 0 ? 1 : 0;
}
