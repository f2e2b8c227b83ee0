/* A multiset of case-folded live paths, so a tree can tell in O(path) time
 * how many live paths share a fold.  Internal to the oracle tree
 * (oracle_tree*.c). */
#ifndef ORACLE_FOLD_INDEX_H
#define ORACLE_FOLD_INDEX_H

#include "cairn/repos_model.h"

typedef struct oracle_fold_slot {
    uint64_t h;
    uint8_t *key;
    uint16_t len;
    uint32_t count;
} oracle_fold_slot_t;
typedef struct oracle_fold_index {
    oracle_fold_slot_t *slots;
    size_t cap, used;
} oracle_fold_index_t;

void oracle_fold_index_free(oracle_fold_index_t *ix);
/* Makes room for one more key (-ENOMEM) so that a following add cannot fail
 * for want of slots. */
cn_err_t oracle_fold_index_reserve(oracle_fold_index_t *ix);
/* delta +1 or -1 for the fold of a valid path (-ENOMEM for the key copy). */
cn_err_t oracle_fold_index_add(oracle_fold_index_t *ix, const uint8_t *path, size_t n, int delta);
uint32_t oracle_fold_index_count(const oracle_fold_index_t *ix, const uint8_t *path, size_t n);

#endif
