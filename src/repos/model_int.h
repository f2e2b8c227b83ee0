/* Internals shared by the model files; never included outside src/repos. */
#ifndef CN_REPOS_MODEL_INT_H
#define CN_REPOS_MODEL_INT_H

#include "cairn/repos_model.h"
#include "model_fold_index.h"
#include "tree_codec.h"

typedef struct cn__tnode {
    uint8_t *prefix;                  /* edge bytes from the parent (root: none) */
    uint16_t plen;
    uint8_t state;                    /* CN_REPOS_NONE / LIVE / TOMBSTONE */
    cn_repos_entry_t e;
    struct cn__tnode **kids;          /* ascending by prefix[0] */
    uint16_t nkids, kcap;
    bool dirty;
    cn__tree_sum_t sum;               /* current unless dirty */
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

#endif
