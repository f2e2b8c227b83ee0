/* Open-addressing multiset of folded live paths (see oracle_fold_index.h).
 * Keys hash with BLAKE3, so chosen path names cannot force long probes. */
#include "oracle_fold_index.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint64_t key_hash(const uint8_t *k, size_t n)
{
    cn_digest_t d;
    cn_blake3(k, n, &d);
    uint64_t h;
    memcpy(&h, d.b, 8);
    return h;
}

void oracle_fold_index_free(oracle_fold_index_t *ix)
{
    for (size_t i = 0; i < ix->cap; i++)
        free(ix->slots[i].key);
    free(ix->slots);
    ix->slots = NULL;
    ix->cap = ix->used = 0;
}

static oracle_fold_slot_t *probe(const oracle_fold_index_t *ix, uint64_t h, const uint8_t *k,
                                 size_t n)
{
    size_t i = h & (ix->cap - 1);
    for (;;) {
        oracle_fold_slot_t *s = &ix->slots[i];
        if (!s->key || (s->h == h && s->len == n && memcmp(s->key, k, n) == 0))
            return s;
        i = (i + 1) & (ix->cap - 1);
    }
}

cn_err_t oracle_fold_index_reserve(oracle_fold_index_t *ix)
{
    if ((ix->used + 1) * 4 < ix->cap * 3)
        return CN_OK;
    size_t cap = ix->cap ? ix->cap * 2 : 64;
    oracle_fold_index_t nx = { calloc(cap, sizeof(oracle_fold_slot_t)), cap, ix->used };
    if (!nx.slots)
        return -ENOMEM;
    for (size_t i = 0; i < ix->cap; i++)
        if (ix->slots[i].key)
            *probe(&nx, ix->slots[i].h, ix->slots[i].key, ix->slots[i].len) = ix->slots[i];
    free(ix->slots);
    *ix = nx;
    return CN_OK;
}

/* Entries whose count drops to zero stay as zero-count keys: removal from
 * an open-addressing table would break probe chains, and a path that was
 * live once usually comes back. */
cn_err_t oracle_fold_index_add(oracle_fold_index_t *ix, const uint8_t *path, size_t n, int delta)
{
    uint8_t fold[CN_REPOS_MAX_PATH];
    long fn = cn_repos_path_fold(path, n, fold, sizeof fold);
    if (fn < 0)
        return CN_E_INVALID;
    CN_TRY(oracle_fold_index_reserve(ix));
    uint64_t h = key_hash(fold, (size_t)fn);
    oracle_fold_slot_t *s = probe(ix, h, fold, (size_t)fn);
    if (!s->key) {
        if (delta < 0)
            return CN_OK;
        s->key = malloc(fn ? (size_t)fn : 1);
        if (!s->key)
            return -ENOMEM;
        memcpy(s->key, fold, (size_t)fn);
        s->len = (uint16_t)fn;
        s->h = h;
        s->count = 0;
        ix->used++;
    }
    if (delta > 0)
        s->count++;
    else if (s->count)
        s->count--;
    return CN_OK;
}

uint32_t oracle_fold_index_count(const oracle_fold_index_t *ix, const uint8_t *path, size_t n)
{
    uint8_t fold[CN_REPOS_MAX_PATH];
    long fn = cn_repos_path_fold(path, n, fold, sizeof fold);
    if (fn < 0 || ix->cap == 0)
        return 0;
    const oracle_fold_slot_t *s = probe(ix, key_hash(fold, (size_t)fn), fold, (size_t)fn);
    return s->key ? s->count : 0;
}
