/* blobs/put: a streamed upload into a namespace, answered with a pin token.
 *
 * Order of a commit (each step only after the previous one succeeded):
 *  1. the store writer publishes: the bytes hash to the canonical digest
 *     (and to the offered digest and length, when given), are fsynced,
 *     renamed into place and their directory fsynced;
 *  2. a guard on the digest is held from before step 1 (when the digest was
 *     offered) or from right after it (the publish restarted the blob's grace
 *     window, which covers the gap), until step 4;
 *  3. the membership row (ns, digest) commits;
 *  4. the token is minted (its own pin), the broadcast ends cleanly, and the
 *     guard is released: the answer {token, digest} follows.
 * A failure at any step answers an error and leaves no membership row; bytes
 * published in step 1 without a row are reclaimed by the sweeper.
 */
#include "blobs_int.h"
#include "cairn/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cn_blobs_put {
    cn_blobs_t *b;
    char ns[CN_NAMESPACE_MAX + 1];
    cn_store_writer_t *w;
    cn_store_guard_t *guard;
    cn__bcast_t *bc;
    cn_err_t err;
};

cn_err_t cn_blobs_put_begin(cn_blobs_t *b, cn_blobs_caller_t *c, const char *ns,
                            const cn_digest_t *expect, int64_t expect_len, cn_blobs_put_t **out)
{
    *out = NULL;
    if (!ns || !cn_blobs_ns_valid(ns, strnlen(ns, CN_NAMESPACE_MAX + 1)) || expect_len < -1)
        return CN_E_INVALID;
    CN_TRY(cn__blobs_authorize(b, c, ns, CN_NS_WRITE));
    cn_blobs_put_t *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    p->b = b;
    snprintf(p->ns, sizeof p->ns, "%s", ns);
    cn_err_t rc = cn_store_writer_open(b->store, expect, expect_len, &p->w);
    if (rc >= 0 && expect)
        rc = cn_store_guard_acquire(b->store, expect, &p->guard);
    if (rc >= 0 && expect)
        rc = cn__bcast_start(b, ns, expect, &p->bc);
    if (rc < 0) {
        cn_blobs_put_abort(p);
        return rc;
    }
    *out = p;
    return CN_OK;
}

cn_err_t cn_blobs_put_write(cn_blobs_put_t *p, const void *buf, size_t n)
{
    if (p->err)
        return p->err;
    cn_err_t rc = cn_store_writer_write(p->w, buf, n);
    if (rc < 0) {
        p->err = rc;
        cn__bcast_end(p->b, p->bc, false);
        p->bc = NULL;
        return rc;
    }
    cn__bcast_push(p->b, p->bc, buf, n);
    return CN_OK;
}

static void put_free(cn_blobs_put_t *p, bool ok)
{
    cn__bcast_end(p->b, p->bc, ok);
    cn_store_guard_release(p->guard);
    free(p);
}

cn_err_t cn_blobs_put_commit(cn_blobs_put_t *p, cn_blobs_put_result_t *out)
{
    cn_blobs_t *b = p->b;
    memset(out, 0, sizeof *out);
    cn_err_t rc = p->err;
    if (rc < 0) {
        cn_store_writer_abort(p->w);
        put_free(p, false);
        return rc;
    }
    cn_digest_t d;
    uint64_t len = 0;
    rc = cn_store_writer_publish(p->w, &d, &len);
    p->w = NULL;
    if (rc >= 0 && !p->guard)
        rc = cn_store_guard_acquire(b->store, &d, &p->guard);
    if (rc >= 0)
        rc = cn__blobs_add_member(b, p->ns, &d, len);
    if (rc >= 0)
        rc = cn__tok_mint(b, p->ns, &d, out->token);
    if (rc < 0) {
        cn_warn(CN__MOD, "put into %s failed: %s", p->ns, cn_strerror(rc));
        put_free(p, false);
        memset(out, 0, sizeof *out);
        return rc;
    }
    out->digest = d;
    out->len = len;
    atomic_fetch_add(&b->n.puts, 1);
    atomic_fetch_add(&b->n.put_bytes, len);
    put_free(p, true);
    return CN_OK;
}

void cn_blobs_put_abort(cn_blobs_put_t *p)
{
    if (!p)
        return;
    cn_store_writer_abort(p->w);
    put_free(p, false);
}
