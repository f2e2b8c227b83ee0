/* The merge base (cn_repos_merge_base, cairn/repos_model.h): pure, over a
 * caller's parents() accessor, so the server (over its commit rows) and a
 * client (over what it fetched) find the same base.
 *
 * The target's ancestry is expanded from a max-heap of change numbers, newest
 * first, with a set of commits already queued; the source's first-parent
 * chain is walked down in step.  Since every parent is older than its child,
 * once the heap's newest commit is below a chain commit c, c is not in the
 * ancestry, and when it equals c, c is the base.  It must never return a
 * base it did not find: a budget overrun is an error. */
#include "cairn/repos_model.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A max-heap of change numbers and the set of those ever pushed. */
typedef struct walk {
    uint64_t *heap;
    size_t n, cap;
    uint64_t *set; /* open addressing; 0 marks a free slot */
    size_t used, slots;
} walk_t;

static size_t slot_of(uint64_t v, size_t slots)
{
    v ^= v >> 33;
    v *= 0xff51afd7ed558ccdull;
    v ^= v >> 33;
    return (size_t)v & (slots - 1);
}

/* Adds v (nonzero) to the set: *fresh when it was not there. */
static cn_err_t set_add(walk_t *w, uint64_t v, bool *fresh)
{
    if ((w->used + 1) * 2 > w->slots) {
        size_t slots = w->slots ? w->slots * 2 : 64;
        uint64_t *set = calloc(slots, sizeof *set);
        if (!set)
            return -ENOMEM;
        for (size_t i = 0; i < w->slots; i++)
            if (w->set[i]) {
                size_t k = slot_of(w->set[i], slots);
                while (set[k])
                    k = (k + 1) & (slots - 1);
                set[k] = w->set[i];
            }
        free(w->set);
        w->set = set;
        w->slots = slots;
    }
    size_t k = slot_of(v, w->slots);
    while (w->set[k] && w->set[k] != v)
        k = (k + 1) & (w->slots - 1);
    *fresh = w->set[k] == 0;
    if (*fresh) {
        w->set[k] = v;
        w->used++;
    }
    return CN_OK;
}

/* Queues commit v once (0 is no commit). */
static cn_err_t push(walk_t *w, uint64_t v)
{
    bool fresh = false;
    if (v == 0)
        return CN_OK;
    CN_TRY(set_add(w, v, &fresh));
    if (!fresh)
        return CN_OK;
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 64;
        uint64_t *h = realloc(w->heap, cap * sizeof *h);
        if (!h)
            return -ENOMEM;
        w->heap = h;
        w->cap = cap;
    }
    size_t i = w->n++;
    while (i && w->heap[(i - 1) / 2] < v) {
        w->heap[i] = w->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    w->heap[i] = v;
    return CN_OK;
}

static uint64_t pop(walk_t *w)
{
    uint64_t top = w->heap[0], last = w->heap[--w->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= w->n)
            break;
        if (c + 1 < w->n && w->heap[c + 1] > w->heap[c])
            c++;
        if (w->heap[c] <= last)
            break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    if (w->n)
        w->heap[i] = last;
    return top;
}

/* parents() within the budget, checking that parents are older. */
static cn_err_t parents_of(cn_repos_parents_fn parents, void *ctx, uint64_t *budget,
                           uint64_t change, uint64_t *first, uint64_t *merge)
{
    if (*budget == 0)
        return CN_E_LIMIT;
    (*budget)--;
    *first = *merge = 0;
    CN_TRY(parents(ctx, change, first, merge));
    return *first >= change || *merge >= change ? CN_E_CORRUPT : CN_OK;
}

cn_err_t cn_repos_merge_base(uint64_t target, uint64_t source, cn_repos_parents_fn parents,
                             void *ctx, uint64_t budget, uint64_t *base)
{
    walk_t w;
    memset(&w, 0, sizeof w);
    *base = 0;
    cn_err_t err = push(&w, target);
    uint64_t c = source, first = 0, merge = 0;
    while (err >= 0 && c && w.n) {
        /* expand the ancestry down to c */
        while (err >= 0 && w.n && w.heap[0] > c) {
            uint64_t x = pop(&w);
            if ((err = parents_of(parents, ctx, &budget, x, &first, &merge)) >= 0 &&
                (err = push(&w, first)) >= 0)
                err = push(&w, merge);
        }
        if (err < 0)
            break;
        if (w.n && w.heap[0] == c) {
            *base = c;
            break;
        }
        if ((err = parents_of(parents, ctx, &budget, c, &first, &merge)) >= 0)
            c = first;
    }
    free(w.heap);
    free(w.set);
    return err < 0 ? err : CN_OK;
}
