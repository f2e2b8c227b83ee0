/* The snapshot-tree node codec: encodings and hashes of one node at a time
 * (docs/protocol/scribe.md 10.4, 10.5).  Never walks a tree. */
#include "model_tree_codec.h"

#include <string.h>

/* Domain prefixes of the tree hashes; sizeof includes the terminating NUL,
 * which is part of the prefix. */
static const char dom_node[] = "cairn:tree-node:v1";
static const char dom_entry[] = "cairn:content-entry:v1";
static const char dom_cnode[] = "cairn:content-node:v1";
static const char dom_empty[] = "cairn:content-empty:v1";

void cn_repos_node_hash(const uint8_t *p, size_t n, cn_digest_t *out)
{
    cn_blake3_t h;
    cn_blake3_init(&h);
    cn_blake3_update(&h, dom_node, sizeof dom_node);
    cn_blake3_update(&h, p, n);
    cn_blake3_final(&h, out);
}

void cn__tree_entry_set(cn_repos_entry_t *dst, const cn_repos_entry_t *e)
{
    *dst = *e;
    if (e->state == CN_REPOS_TOMBSTONE) {
        dst->mode = 0;
        dst->size = 0;
        memset(dst->manifest.b, 0, CN_DIGEST_LEN);
    }
}

void cn__tree_content_entry(const uint8_t *key, size_t n, const cn_repos_entry_t *e,
                            cn_digest_t *out)
{
    uint8_t t[9];
    cn_blake3_t h;
    cn_blake3_init(&h);
    cn_blake3_update(&h, dom_entry, sizeof dom_entry);
    t[0] = (uint8_t)n;
    t[1] = (uint8_t)(n >> 8);
    cn_blake3_update(&h, t, 2);
    cn_blake3_update(&h, key, n);
    cn_blake3_update(&h, e->manifest.b, CN_DIGEST_LEN);
    for (int i = 0; i < 8; i++)
        t[i] = (uint8_t)(e->size >> (8 * i));
    t[8] = e->mode;
    cn_blake3_update(&h, t, 9);
    cn_blake3_final(&h, out);
}

void cn__tree_content_empty(cn_digest_t *out)
{
    cn_blake3_t h;
    cn_blake3_init(&h);
    cn_blake3_update(&h, dom_empty, sizeof dom_empty);
    cn_blake3_final(&h, out);
}

void cn__tree_content_begin(cn__tree_content_t *c, const cn_digest_t *entry, uint16_t nlive)
{
    c->has = entry || nlive > 0;
    /* A node with only E, or only one child's content, takes it unchanged:
     * the content is then independent of where the path splits. */
    c->hashed = entry ? nlive > 0 : nlive > 1;
    if (!c->hashed) {
        if (entry)
            c->only = *entry;
        return;
    }
    uint8_t t[2];
    cn_blake3_init(&c->h);
    cn_blake3_update(&c->h, dom_cnode, sizeof dom_cnode);
    t[0] = entry ? 1 : 0;
    cn_blake3_update(&c->h, t, 1);
    if (entry)
        cn_blake3_update(&c->h, entry->b, CN_DIGEST_LEN);
    t[0] = (uint8_t)nlive;
    t[1] = (uint8_t)(nlive >> 8);
    cn_blake3_update(&c->h, t, 2);
}

void cn__tree_content_add(cn__tree_content_t *c, const uint8_t *kids, size_t count)
{
    if (c->hashed)
        cn_blake3_update(&c->h, kids, count * CN_DIGEST_LEN);
    else if (count)
        memcpy(c->only.b, kids, CN_DIGEST_LEN); /* the one child */
}

bool cn__tree_content_end(const cn__tree_content_t *c, cn_digest_t *out)
{
    if (c->hashed)
        cn_blake3_final(&c->h, out);
    else if (c->has)
        *out = c->only;
    return c->has;
}

cn_err_t cn__tree_node_encode(cn_buf_t *b, const cn__tree_node_t *n, const cn__tree_sum_t *self)
{
    CN_TRY(cn_buf_put_u8(b, 1));
    CN_TRY(cn_buf_put_u16le(b, n->plen));
    CN_TRY(cn_buf_append(b, n->prefix, n->plen));
    CN_TRY(cn_buf_put_u8(b, n->state));
    if (n->state != CN_REPOS_NONE)
        CN_TRY(cn_buf_put_u64le(b, n->e->change));
    if (n->state == CN_REPOS_LIVE) {
        CN_TRY(cn_buf_append(b, n->e->manifest.b, CN_DIGEST_LEN));
        CN_TRY(cn_buf_put_u64le(b, n->e->size));
        CN_TRY(cn_buf_put_u8(b, n->e->mode));
    }
    CN_TRY(cn_buf_put_u64le(b, self->entries));
    CN_TRY(cn_buf_put_u64le(b, self->live));
    CN_TRY(cn_buf_put_u64le(b, self->highest));
    CN_TRY(cn_buf_put_u16le(b, n->lo_len));
    CN_TRY(cn_buf_append(b, n->lo, n->lo_len));
    CN_TRY(cn_buf_put_u16le(b, n->hi_len));
    CN_TRY(cn_buf_append(b, n->hi, n->hi_len));
    CN_TRY(cn_buf_put_u16le(b, n->nkids));
    for (uint16_t i = 0; i < n->nkids; i++) {
        uint8_t byte;
        const cn__tree_sum_t *k = n->kid(n->kids, i, &byte);
        CN_TRY(cn_buf_put_u8(b, byte));
        CN_TRY(cn_buf_append(b, k->rev.b, CN_DIGEST_LEN));
        CN_TRY(cn_buf_put_u64le(b, k->entries));
        CN_TRY(cn_buf_put_u64le(b, k->live));
        CN_TRY(cn_buf_put_u64le(b, k->highest));
    }
    return CN_OK;
}

cn_err_t cn__tree_node_finish(const cn__tree_node_t *n, const uint8_t *key, size_t klen,
                              cn_buf_t *enc, cn__tree_sum_t *out)
{
    bool v = n->state == CN_REPOS_LIVE;
    cn__tree_sum_t s;
    memset(&s, 0, sizeof s);
    s.entries = n->state != CN_REPOS_NONE;
    s.live = v;
    s.highest = n->state != CN_REPOS_NONE ? n->e->change : 0;
    uint16_t nlive = 0;
    uint8_t byte;
    for (uint16_t i = 0; i < n->nkids; i++) {
        const cn__tree_sum_t *k = n->kid(n->kids, i, &byte);
        s.entries += k->entries;
        s.live += k->live;
        if (k->highest > s.highest)
            s.highest = k->highest;
        if (k->live)
            nlive++;
    }
    cn_digest_t entry;
    if (v)
        cn__tree_content_entry(key, klen, n->e, &entry);
    cn__tree_content_t c;
    cn__tree_content_begin(&c, v ? &entry : NULL, nlive);
    for (uint16_t i = 0; i < n->nkids && nlive > 0; i++) {
        const cn__tree_sum_t *k = n->kid(n->kids, i, &byte);
        if (k->live)
            cn__tree_content_add(&c, k->content.b, 1);
    }
    cn__tree_content_end(&c, &s.content);
    size_t at = enc->len;
    cn_err_t err = cn__tree_node_encode(enc, n, &s);
    if (err) {
        enc->len = at;
        return err;
    }
    cn_repos_node_hash(enc->data + at, enc->len - at, &s.rev);
    *out = s;
    return CN_OK;
}

int cn__bytes_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
    size_t n = an < bn ? an : bn;
    int c = n ? memcmp(a, b, n) : 0;
    return c ? c : (an < bn ? -1 : an > bn ? 1 : 0);
}
