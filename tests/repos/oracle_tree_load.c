/* Rebuilding a snapshot tree from node encodings: fetch every node by hash
 * from the root down into a full-tree proof, verify it completely, then
 * insert its entries.  The shape of the tree is a function of its keys, so
 * the rebuilt tree re-derives the same roots, which is checked. */
#include "oracle_tree_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t off;
    uint32_t len;
    uint16_t next, count;
} lframe_t;

static uint32_t ld32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Appends u32le length || encoding of the node with this hash. */
static cn_err_t fetch_one(cn_buf_t *proof, cn_buf_t *tmp, const cn_digest_t *h,
                          oracle_fetch_fn fetch, void *ctx, lframe_t *f)
{
    cn_repos_node_t nd;
    cn_digest_t got;
    cn_buf_reset(tmp);
    CN_TRY(fetch(ctx, h, tmp));
    cn_repos_node_hash(tmp->data, tmp->len, &got);
    if (!cn_ct_equal(got.b, h->b, CN_DIGEST_LEN))
        return CN_E_DIGEST_MISMATCH;
    CN_TRY(cn_repos_node_parse(tmp->data, tmp->len, &nd));
    if (tmp->len > UINT32_MAX)
        return CN_E_INVALID;
    f->off = proof->len + 4;
    f->len = (uint32_t)tmp->len;
    f->next = 0;
    f->count = nd.child_count;
    CN_TRY(cn_buf_put_u32le(proof, (uint32_t)tmp->len));
    return cn_buf_append(proof, tmp->data, tmp->len);
}

cn_err_t oracle_tree_load(oracle_tree_t **out, const cn_digest_t *revision_root,
                          oracle_fetch_fn fetch, void *ctx)
{
    cn_buf_t proof = { 0 }, tmp = { 0 };
    lframe_t *st = NULL;
    size_t depth = 0, cap = 0;
    cn_err_t err;
    lframe_t f;
    if ((err = fetch_one(&proof, &tmp, revision_root, fetch, ctx, &f)))
        goto out;
    for (;;) {
        if (depth == cap) {
            size_t nc = cap ? cap * 2 : 16;
            lframe_t *ns = realloc(st, nc * sizeof *ns);
            if (!ns) {
                err = -ENOMEM;
                goto out;
            }
            st = ns;
            cap = nc;
        }
        st[depth++] = f;
        /* A path is at most 8,192 bytes and every edge below the root at
         * least one, so a deeper chain cannot be a valid tree. */
        if (depth > CN_REPOS_MAX_PATH + 1) {
            err = CN_E_INVALID;
            goto out;
        }
        while (depth > 0 && st[depth - 1].next == st[depth - 1].count)
            depth--;
        if (depth == 0)
            break;
        lframe_t *top = &st[depth - 1];
        cn_digest_t child;
        size_t at =
            top->off + top->len - (size_t)(top->count - top->next) * CN_REPOS_NODE_CHILD_LEN + 1;
        memcpy(child.b, proof.data + at, CN_DIGEST_LEN);
        top->next++;
        if ((err = fetch_one(&proof, &tmp, &child, fetch, ctx, &f)))
            goto out;
    }
    err = oracle_tree_from_proof(out, proof.data, proof.len, revision_root);
out:
    free(st);
    cn_buf_free(&tmp);
    cn_buf_free(&proof);
    return err;
}

typedef struct {
    size_t key_len;
    uint16_t left;
} bframe_t;

cn_err_t oracle_tree_from_proof(oracle_tree_t **out, const uint8_t *p, size_t n,
                                const cn_digest_t *revision_root)
{
    cn_digest_t content;
    uint64_t live;
    CN_TRY(cn_repos_tree_proof_verify(p, n, revision_root, &content, &live));
    oracle_tree_t *t = NULL;
    bframe_t *st = NULL;
    uint8_t *key = malloc(CN_REPOS_MAX_PATH);
    size_t depth = 0, cap = 0, off = 0;
    cn_err_t err = key ? oracle_tree_new(&t) : -ENOMEM;
    /* The proof is verified: lengths, shape and key sizes are sound. */
    while (!err && off < n) {
        uint32_t len = ld32(p + off);
        cn_repos_node_t nd;
        if ((err = cn_repos_node_parse(p + off + 4, len, &nd)))
            break;
        off += 4u + len;
        while (depth > 0 && st[depth - 1].left == 0)
            depth--;
        size_t base = depth ? st[depth - 1].key_len : 0;
        if (depth)
            st[depth - 1].left--;
        memcpy(key + base, nd.prefix, nd.prefix_len);
        size_t kl = base + nd.prefix_len;
        if (nd.entry_state != CN_REPOS_NONE && (err = oracle_tree_put(t, key, kl, &nd.entry)))
            break;
        if (nd.child_count) {
            if (depth == cap) {
                size_t nc = cap ? cap * 2 : 16;
                bframe_t *ns = realloc(st, nc * sizeof *ns);
                if (!ns) {
                    err = -ENOMEM;
                    break;
                }
                st = ns;
                cap = nc;
            }
            st[depth++] = (bframe_t){ kl, nd.child_count };
        }
    }
    cn_digest_t c2, r2;
    if (!err)
        err = oracle_tree_roots(t, &c2, &r2);
    if (!err && (!cn_ct_equal(r2.b, revision_root->b, CN_DIGEST_LEN) ||
                 !cn_ct_equal(c2.b, content.b, CN_DIGEST_LEN)))
        err = CN_E_CORRUPT;
    free(st);
    free(key);
    if (err) {
        oracle_tree_free(t);
        return err;
    }
    *out = t;
    return CN_OK;
}
