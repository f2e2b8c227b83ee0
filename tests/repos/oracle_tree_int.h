/* Internals shared by the in-memory oracle tree's files (oracle_tree*.c);
 * tests include oracle_tree.h instead. */
#ifndef ORACLE_TREE_INT_H
#define ORACLE_TREE_INT_H

#include "oracle_fold_index.h"
#include "oracle_tree.h"
#include "repos/model_tree_codec.h"

typedef struct oracle_tnode {
    uint8_t *prefix; /* edge bytes from the parent (root: none) */
    uint16_t plen;
    uint8_t state; /* CN_REPOS_NONE / LIVE / TOMBSTONE */
    cn_repos_entry_t e;
    struct oracle_tnode **kids; /* ascending by prefix[0] */
    uint16_t nkids, kcap;
    bool dirty;
    cn__tree_sum_t sum; /* current unless dirty */
} oracle_tnode_t;

struct oracle_tree {
    oracle_tnode_t *root;
    uint64_t rehashed;
    oracle_fold_index_t folds; /* folds of live paths */
};

/* The node whose full key is exactly path (NULL when there is none). */
const oracle_tnode_t *oracle_tree_find(const oracle_tree_t *t, const uint8_t *path, size_t n);
/* Live entries whose path starts with the given bytes (summaries must be current). */
uint64_t oracle_tree_live_under(const oracle_tree_t *t, const uint8_t *prefix, size_t n);

#endif
