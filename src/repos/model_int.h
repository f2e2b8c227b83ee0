/* Internals shared by the model files; never included outside src/repos. */
#ifndef CN_REPOS_MODEL_INT_H
#define CN_REPOS_MODEL_INT_H

#include "cairn/repos_model.h"
#include "model_fold_index.h"

typedef struct cn__tnode {
    uint8_t *prefix;                  /* edge bytes from the parent (root: none) */
    uint16_t plen;
    uint8_t state;                    /* CN_REPOS_NONE / LIVE / TOMBSTONE */
    cn_repos_entry_t e;
    struct cn__tnode **kids;          /* ascending by prefix[0] */
    uint16_t nkids, kcap;
    bool dirty;
    bool has_content;
    uint64_t entries, live, highest;
    cn_digest_t rev;                  /* revision hash of this node */
    cn_digest_t content;              /* content hash, when live > 0 */
} cn__tnode_t;

struct cn_repos_tree {
    cn__tnode_t *root;
    uint64_t rehashed;
    cn__fold_index_t folds;           /* folds of live paths */
};

/* The node whose full key is exactly path (NULL when there is none). */
const cn__tnode_t *cn__tree_find(const cn_repos_tree_t *t, const uint8_t *path, size_t n);
/* Live entries whose path starts with the given bytes (summaries must be current). */
uint64_t cn__tree_live_under(const cn_repos_tree_t *t, const uint8_t *prefix, size_t n);

/* Domain prefixes of the tree hashes (sizeof includes the NUL). */
extern const char cn__dom_node[];
extern const size_t cn__dom_node_len;

/* Content hash of a live entry: BLAKE3("cairn:content-entry:v1\0" || u16le
 * path length || path || [32] manifest || u64le size || u8 mode). */
void cn__content_entry(const uint8_t *path, size_t n, const cn_repos_entry_t *e, cn_digest_t *out);
/* Starts a content-node hash: BLAKE3("cairn:content-node:v1\0" || u8 has
 * entry || [entry hash] || u16le n || ...); the caller adds n child content
 * hashes and finalises. */
void cn__content_node_init(cn_blake3_t *h, const cn_digest_t *entry, uint16_t nkids);
void cn__content_empty(cn_digest_t *out);

#endif
