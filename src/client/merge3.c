/* Three-way line merge (merge3.h): each side is split into lines, diffed
 * against the base with Myers' greedy algorithm (the furthest-reaching
 * D-paths, kept per D for the walk back), and the two diffs are walked
 * together in diff3's way: base lines matched on both sides are stable,
 * and each unstable region between them is decided as a whole. */
#include "merge3.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct line {
    const uint8_t *p;
    size_t n;      /* with its newline, when it has one */
    uint64_t hash; /* FNV-1a of the bytes: a cheap first comparison */
} line_t;

typedef struct text {
    line_t *v;
    size_t n;
} text_t;

bool cn__merge3_is_text(const uint8_t *p, size_t n)
{
    if (n > CN_MERGE3_TEXT_MAX)
        return false;
    for (size_t i = 0; i < n;) {
        uint8_t c = p[i];
        size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (!c || !len || (len > 1 && c < 0xc2) || i + len > n)
            return false;
        for (size_t k = 1; k < len; k++)
            if ((p[i + k] & 0xc0) != 0x80)
                return false;
        if (len == 3) {
            uint32_t cp = (uint32_t)(c & 0x0f) << 12 | (uint32_t)(p[i + 1] & 0x3f) << 6;
            if (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))
                return false; /* overlong or a surrogate */
        } else if (len == 4) {
            uint32_t cp = (uint32_t)(c & 0x07) << 18 | (uint32_t)(p[i + 1] & 0x3f) << 12;
            if (cp < 0x10000 || cp > 0x10ffff)
                return false;
        }
        i += len;
    }
    return true;
}

static cn_err_t split(const uint8_t *p, size_t n, text_t *t)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        count += p[i] == '\n';
    t->v = malloc((count + 1) * sizeof *t->v);
    t->n = 0;
    if (!t->v)
        return -ENOMEM;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        uint64_t h = 1469598103934665603ull;
        while (j < n && p[j] != '\n')
            h = (h ^ p[j++]) * 1099511628211ull;
        j += j < n; /* the newline belongs to its line */
        t->v[t->n++] = (line_t){ p + i, j - i, h };
        i = j;
    }
    return CN_OK;
}

static bool line_eq(const line_t *a, const line_t *b)
{
    return a->hash == b->hash && a->n == b->n && memcmp(a->p, b->p, a->n) == 0;
}

/* Myers' diff of a[lo..ahi) against b[lo2..bhi): match[i] gets the index in
 * b of each matched a line (others stay -1).  CN_E_LIMIT beyond
 * CN_MERGE3_EDITS_MAX edits, -ENOMEM. */
static cn_err_t myers(const line_t *a, size_t n, const line_t *b, size_t m, ptrdiff_t *match)
{
    size_t dmax = n + m < CN_MERGE3_EDITS_MAX ? n + m : CN_MERGE3_EDITS_MAX;
    /* snapshot d holds the furthest x on diagonals -d..d at offset d*d */
    int32_t *v = malloc((dmax + 1) * (dmax + 1) * sizeof *v); /* lines < 2^31 (8 MiB) */
    if (!v)
        return -ENOMEM;
    ptrdiff_t N = (ptrdiff_t)n, M = (ptrdiff_t)m, D = -1;
    for (ptrdiff_t d = 0; d <= (ptrdiff_t)dmax && D < 0; d++) {
        int32_t *cur = v + d * d + d, *prev = d ? v + (d - 1) * (d - 1) + (d - 1) : NULL;
        for (ptrdiff_t k = -d; k <= d; k += 2) {
            ptrdiff_t x = !d                                                   ? 0
                          : (k == -d || (k != d && prev[k - 1] < prev[k + 1])) ? prev[k + 1]
                                                                               : prev[k - 1] + 1;
            ptrdiff_t y = x - k;
            while (x < N && y < M && line_eq(&a[x], &b[y]))
                x++, y++;
            cur[k] = (int32_t)x;
            if (x >= N && y >= M) {
                D = d;
                break;
            }
        }
    }
    if (D < 0) {
        free(v);
        return CN_E_LIMIT;
    }
    ptrdiff_t x = N, y = M;
    for (ptrdiff_t d = D; d > 0; d--) {
        int32_t *prev = v + (d - 1) * (d - 1) + (d - 1);
        ptrdiff_t k = x - y;
        bool down = k == -d || (k != d && prev[k - 1] < prev[k + 1]);
        ptrdiff_t pk = down ? k + 1 : k - 1, px = prev[pk];
        ptrdiff_t sx = down ? px : px + 1; /* where the snake on diagonal k starts */
        while (x > sx)
            match[--x] = --y;
        x = px;
        y = px - pk;
    }
    while (x > 0 && y > 0)
        match[--x] = --y;
    free(v);
    return CN_OK;
}

/* base's match in other: common prefix and suffix first (the usual case of
 * a few edits in a long file), Myers for the middle. */
static cn_err_t diff(const text_t *base, const text_t *other, ptrdiff_t *match)
{
    for (size_t i = 0; i < base->n; i++)
        match[i] = -1;
    size_t pre = 0, suf = 0;
    while (pre < base->n && pre < other->n && line_eq(&base->v[pre], &other->v[pre]))
        match[pre] = (ptrdiff_t)pre, pre++;
    while (suf < base->n - pre && suf < other->n - pre &&
           line_eq(&base->v[base->n - 1 - suf], &other->v[other->n - 1 - suf])) {
        match[base->n - 1 - suf] = (ptrdiff_t)(other->n - 1 - suf);
        suf++;
    }
    size_t bn = base->n - pre - suf, on = other->n - pre - suf;
    if (!bn || !on)
        return CN_OK;
    cn_err_t e = myers(base->v + pre, bn, other->v + pre, on, match + pre);
    if (e < 0)
        return e;
    for (size_t i = pre; i < pre + bn; i++)
        if (match[i] >= 0)
            match[i] += (ptrdiff_t)pre;
    return CN_OK;
}

static bool range_eq(const line_t *a, size_t an, const line_t *b, size_t bn)
{
    if (an != bn)
        return false;
    for (size_t i = 0; i < an; i++)
        if (!line_eq(&a[i], &b[i]))
            return false;
    return true;
}

/* Appends lines, ending the last with a newline when a marker follows. */
static cn_err_t emit(cn_buf_t *out, const line_t *v, size_t n, bool close)
{
    for (size_t i = 0; i < n; i++)
        CN_TRY(cn_buf_append(out, v[i].p, v[i].n));
    if (close && n && v[n - 1].p[v[n - 1].n - 1] != '\n')
        CN_TRY(cn_buf_append(out, "\n", 1));
    return CN_OK;
}

typedef struct region {
    const line_t *b, *o, *t;
    size_t nb, no, nt;
} region_t;

/* One unstable region: the side that changed it, or both between markers. */
static cn_err_t decide(const region_t *r, const char *ol, const char *tl, cn_buf_t *out,
                       size_t *conflicts)
{
    bool ours_same = range_eq(r->o, r->no, r->b, r->nb);
    bool theirs_same = range_eq(r->t, r->nt, r->b, r->nb);
    if (ours_same)
        return emit(out, r->t, r->nt, false);
    if (theirs_same || range_eq(r->o, r->no, r->t, r->nt))
        return emit(out, r->o, r->no, false);
    ++*conflicts;
    CN_TRY(cn_buf_printf(out, "<<<<<<< %s\n", ol));
    CN_TRY(emit(out, r->o, r->no, true));
    CN_TRY(cn_buf_append_str(out, "||||||| base\n"));
    CN_TRY(emit(out, r->b, r->nb, true));
    CN_TRY(cn_buf_append_str(out, "=======\n"));
    CN_TRY(emit(out, r->t, r->nt, true));
    return cn_buf_printf(out, ">>>>>>> %s\n", tl);
}

/* Walks base with its matches in ours (mo) and theirs (mt). */
static cn_err_t walk(const text_t *b, const text_t *o, const text_t *t, const ptrdiff_t *mo,
                     const ptrdiff_t *mt, const char *ol, const char *tl, cn_buf_t *out,
                     size_t *conflicts)
{
    size_t i = 0, io = 0, it = 0;
    while (i < b->n || io < o->n || it < t->n) {
        if (i < b->n && mo[i] == (ptrdiff_t)io && mt[i] == (ptrdiff_t)it) {
            CN_TRY(cn_buf_append(out, b->v[i].p, b->v[i].n));
            i++, io++, it++;
            continue;
        }
        size_t k = i;
        while (k < b->n && (mo[k] < 0 || mt[k] < 0))
            k++;
        size_t oe = k < b->n ? (size_t)mo[k] : o->n, te = k < b->n ? (size_t)mt[k] : t->n;
        region_t r = { b->v + i, o->v + io, t->v + it, k - i, oe - io, te - it };
        CN_TRY(decide(&r, ol, tl, out, conflicts));
        i = k, io = oe, it = te;
    }
    return CN_OK;
}

cn_err_t cn__merge3(const uint8_t *base, size_t nb, const uint8_t *ours, size_t no,
                    const uint8_t *theirs, size_t nt, const char *ours_label,
                    const char *theirs_label, cn_buf_t *out, size_t *conflicts)
{
    text_t b = { 0 }, o = { 0 }, t = { 0 };
    ptrdiff_t *mo = NULL, *mt = NULL;
    *conflicts = 0;
    cn_err_t e;
    if ((e = split(base, nb, &b)) < 0 || (e = split(ours, no, &o)) < 0 ||
        (e = split(theirs, nt, &t)) < 0)
        goto out;
    mo = malloc((b.n + 1) * sizeof *mo);
    mt = malloc((b.n + 1) * sizeof *mt);
    if (!mo || !mt) {
        e = -ENOMEM;
        goto out;
    }
    e = diff(&b, &o, mo);
    if (e >= 0)
        e = diff(&b, &t, mt);
    if (e == CN_E_LIMIT) {
        /* Too far apart to align: one region, decided whole. */
        region_t r = { b.v, o.v, t.v, b.n, o.n, t.n };
        e = decide(&r, ours_label, theirs_label, out, conflicts);
    } else if (e >= 0) {
        e = walk(&b, &o, &t, mo, mt, ours_label, theirs_label, out, conflicts);
    }
out:
    free(b.v);
    free(o.v);
    free(t.v);
    free(mo);
    free(mt);
    return e;
}
