/* AWS Signature Version 4 verification for S3 (include/cairn/sigv4.h).
 *
 * Canonical request as AWS specifies it for S3: the path is the received path
 * percent-decoded once and re-encoded once with UriEncode ('/' kept), never
 * normalised nor double-encoded; the query is decoded, re-encoded, and sorted
 * by name then value; signed header values are trimmed, inner runs of spaces
 * collapsed, repeated headers joined with ','.  The secret is used only to
 * derive the signing key and (when its store gives no tag) the key cache's
 * fingerprint of it, and is never copied elsewhere or logged.
 *
 * Every S3 request pays for this, so it does no work twice and never touches
 * the heap on the read path: the canonical request is written in one pass
 * into a bounded scratch area on the caller's stack (a request that does not
 * fit is refused, never truncated), presigned URL values are decoded into the
 * same area, and the signing key comes from a small cache (below).
 */
#include "cairn/http.h"
#include "cairn/crypto.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/crypto.h>

#define CN__EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define CN__MAX_QUERY_PARAMS 1024
#define CN__STR_(x) #x
#define CN__STR(x) CN__STR_(x)

static const char hexdig[] = "0123456789ABCDEF";

static inline bool unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

cn_err_t cn_sigv4_uri_encode(cn_buf_t *out, const char *s, size_t n, bool keep_slash)
{
    CN_TRY(cn_buf_reserve(out, n));
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (unreserved(c) || (keep_slash && c == '/')) {
            CN_TRY(cn_buf_put_u8(out, c));
        } else {
            char e[3] = { '%', hexdig[c >> 4], hexdig[c & 15] };
            CN_TRY(cn_buf_append(out, e, 3));
        }
    }
    return CN_OK;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The byte that starts at s[*i] once percent-decoded, advancing *i past it;
 * -1 for a bad escape or a NUL, encoded or not (what cn_http_pct_decode
 * refuses). */
static int pct_next(const char *s, size_t n, size_t *i)
{
    unsigned char c = (unsigned char)s[*i];
    if (c == '%') {
        if (*i + 2 >= n)
            return -1;
        int hi = hexval(s[*i + 1]), lo = hexval(s[*i + 2]);
        if (hi < 0 || lo < 0)
            return -1;
        c = (unsigned char)(hi << 4 | lo);
        *i += 2;
    }
    (*i)++;
    return c ? c : -1;
}

/* Decodes s into dst (which holds n bytes: decoding never lengthens) and
 * returns the decoded length, or -1 as pct_next. */
static long pct_decode_into(char *dst, const char *s, size_t n)
{
    if (n == 0) /* s may then be NULL, which memchr must not see */
        return 0;
    if (memchr(s, 0, n))
        return -1;
    size_t len = 0, i = 0;
    while (i < n) {
        const char *pct = memchr(s + i, '%', n - i);
        size_t run = pct ? (size_t)(pct - s) - i : n - i;
        memcpy(dst + len, s + i, run);
        len += run;
        i += run;
        if (!pct)
            break;
        int c = pct_next(s, n, &i);
        if (c < 0)
            return -1;
        dst[len++] = (char)c;
    }
    return (long)len;
}

long cn_http_pct_decode_to(char *dst, const char *s, size_t n)
{
    return pct_decode_into(dst, s, n);
}

cn_err_t cn_http_pct_decode(cn_buf_t *out, const char *s, size_t n)
{
    CN_TRY(cn_buf_reserve(out, n + 1));
    long len = pct_decode_into((char *)out->data + out->len, s, n);
    if (len < 0)
        return CN_E_INVALID;
    out->len += (size_t)len;
    return CN_OK;
}

/* ---- the canonical request, written once into a bounded buffer ------------ */

/* An output that never grows: once something does not fit, full is set and
 * the output is void (the caller refuses it; nothing is ever truncated). */
typedef struct {
    char *p;
    size_t len, cap;
    bool full;
} cw_t;

static void cw_put(cw_t *w, const void *s, size_t n)
{
    if (n == 0)
        return;
    if (w->full || n > w->cap - w->len) {
        w->full = true;
        return;
    }
    memcpy(w->p + w->len, s, n);
    w->len += n;
}

static void cw_putc(cw_t *w, char c)
{
    if (w->full || w->len == w->cap) {
        w->full = true;
        return;
    }
    w->p[w->len++] = c;
}

/* Writes UriEncode(decode(s)), the canonical form of a path ('/' kept) or of
 * a query name or value.  CN_E_INVALID on a bad escape. */
static cn_err_t cw_requote(cw_t *w, const char *s, size_t n, bool keep_slash)
{
    size_t run = 0, i = 0; /* s[run..i) is canonical already: copied as one block */
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        if (unreserved(c) || (keep_slash && c == '/')) {
            i++;
            continue;
        }
        cw_put(w, s + run, i - run);
        int d = pct_next(s, n, &i);
        if (d < 0)
            return CN_E_INVALID;
        if (unreserved((unsigned char)d) || (keep_slash && d == '/')) {
            cw_putc(w, (char)d);
        } else {
            char e[3] = { '%', hexdig[d >> 4], hexdig[d & 15] };
            cw_put(w, e, 3);
        }
        run = i;
    }
    cw_put(w, s + run, n - run);
    return CN_OK;
}

/* ---- query ---------------------------------------------------------------- */

/* One name=value item of the raw query, as offsets into it. */
typedef struct {
    uint32_t name, name_len, val, val_len;
} qpair_t;

/* Walks UriEncode(decode(s)) one byte at a time without writing it anywhere,
 * so that items sort by their canonical form straight from the raw query. */
typedef struct {
    const char *s;
    size_t n, i;
    char pend[2];
    int npend;
} enc_it_t;

/* The next canonical byte, or -1 at the end (s was checked by pct_valid). */
static int enc_next(enc_it_t *it)
{
    if (it->npend)
        return it->pend[2 - it->npend--];
    if (it->i >= it->n)
        return -1;
    int c = pct_next(it->s, it->n, &it->i);
    if (c < 0 || unreserved((unsigned char)c))
        return c;
    it->pend[0] = hexdig[c >> 4];
    it->pend[1] = hexdig[c & 15];
    it->npend = 2;
    return '%';
}

/* Byte order of the canonical forms; a prefix sorts first. */
static int enc_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    /* Equal raw bytes other than '%' have equal canonical forms: skip them
     * ("X-Amz-" starts every name of a presigned URL). */
    size_t k = 0;
    while (k < an && k < bn && a[k] == b[k] && a[k] != '%')
        k++;
    enc_it_t x = { a, an, k, { 0 }, 0 }, y = { b, bn, k, { 0 }, 0 };
    for (;;) {
        int ca = enc_next(&x), cb = enc_next(&y);
        if (ca != cb)
            return ca < cb ? -1 : 1;
        if (ca < 0)
            return 0;
    }
}

static int pair_cmp(const char *q, const qpair_t *x, const qpair_t *y)
{
    int c = enc_cmp(q + x->name, x->name_len, q + y->name, y->name_len);
    return c ? c : enc_cmp(q + x->val, x->val_len, q + y->val, y->val_len);
}

/* Heapsort: no allocation (glibc's qsort may call malloc) and n log n at
 * worst, whatever order a client chose. */
static void sift(qpair_t *p, size_t root, size_t n, const char *q)
{
    for (;;) {
        size_t child = 2 * root + 1;
        if (child >= n)
            return;
        if (child + 1 < n && pair_cmp(q, &p[child], &p[child + 1]) < 0)
            child++;
        if (pair_cmp(q, &p[root], &p[child]) >= 0)
            return;
        qpair_t t = p[root];
        p[root] = p[child];
        p[child] = t;
        root = child;
    }
}

/* A short query (a presigned URL's five signed items, already in order from
 * every SDK) by insertion: n - 1 comparisons when sorted, against the heap's
 * 2n log n; past SORT_SHORT items the heap, whose worst case stays n log n. */
#define SORT_SHORT 8

static void sort_pairs(qpair_t *p, size_t n, const char *q)
{
    if (n <= SORT_SHORT) {
        for (size_t i = 1; i < n; i++) {
            qpair_t t = p[i];
            size_t j = i;
            for (; j > 0 && pair_cmp(q, &p[j - 1], &t) > 0; j--)
                p[j] = p[j - 1];
            p[j] = t;
        }
        return;
    }
    for (size_t i = n / 2; i-- > 0;)
        sift(p, i, n, q);
    for (size_t end = n; end-- > 1;) {
        qpair_t t = p[0];
        p[0] = p[end];
        p[end] = t;
        sift(p, 0, end, q);
    }
}

/* Whether s decodes (pct_next accepts every byte of it). */
static bool pct_valid(const char *s, size_t n)
{
    if (n == 0)
        return true;
    if (memchr(s, 0, n))
        return false;
    for (size_t i = 0; i < n;) {
        const char *pct = memchr(s + i, '%', n - i);
        if (!pct)
            break;
        i = (size_t)(pct - s);
        if (pct_next(s, n, &i) < 0)
            return false;
    }
    return true;
}

/* The canonical query: every item but X-Amz-Signature, decoded, re-encoded
 * and sorted by name then value.  CN_E_LIMIT past CN__MAX_QUERY_PARAMS items,
 * CN_E_INVALID on a bad escape. */
static cn_err_t canonical_query(cw_t *w, const char *q, size_t qn)
{
    size_t count = 1;
    for (const char *amp = q; (amp = memchr(amp, '&', qn - (size_t)(amp - q))); amp++)
        count++;
    if (count > CN__MAX_QUERY_PARAMS || qn > UINT32_MAX)
        return CN_E_LIMIT;
    qpair_t pairs[CN__MAX_QUERY_PARAMS];
    size_t np = 0, pos = 0;
    while (pos < qn) {
        const char *amp = memchr(q + pos, '&', qn - pos);
        size_t end = amp ? (size_t)(amp - q) : qn, ilen = end - pos;
        const char *eq = memchr(q + pos, '=', ilen);
        size_t nlen = eq ? (size_t)(eq - q) - pos : ilen;
        if (ilen > 0 && !(nlen == 15 && memcmp(q + pos, "X-Amz-Signature", 15) == 0)) {
            qpair_t *p = &pairs[np++];
            *p = (qpair_t){ (uint32_t)pos, (uint32_t)nlen, (uint32_t)(eq ? pos + nlen + 1 : end),
                            eq ? (uint32_t)(ilen - nlen - 1) : 0 };
            if (!pct_valid(q + p->name, p->name_len) || !pct_valid(q + p->val, p->val_len))
                return CN_E_INVALID;
        }
        pos = end + 1;
    }
    sort_pairs(pairs, np, q);
    for (size_t i = 0; i < np; i++) {
        if (i)
            cw_putc(w, '&');
        /* Both were checked above: neither requote can fail. */
        (void)cw_requote(w, q + pairs[i].name, pairs[i].name_len, false);
        cw_putc(w, '=');
        (void)cw_requote(w, q + pairs[i].val, pairs[i].val_len, false);
    }
    return CN_OK;
}

/* ---- headers -------------------------------------------------------------- */

static const cn_http_kv_t *find(const cn_http_kv_t *h, size_t n, const char *name, size_t name_len)
{
    for (size_t i = 0; i < n; i++)
        if (h[i].name_len == name_len && strncasecmp(h[i].name, name, name_len) == 0)
            return &h[i];
    return NULL;
}

/* Writes v trimmed, with inner runs of spaces and tabs collapsed to one. */
static void cw_trimmed(cw_t *w, const char *v, size_t n)
{
    while (n && (*v == ' ' || *v == '\t')) {
        v++;
        n--;
    }
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '\r' || v[n - 1] == '\n'))
        n--;
    size_t run = 0; /* start of the run of plain bytes not yet written */
    for (size_t i = 0; i < n; i++) {
        if (v[i] != ' ' && v[i] != '\t')
            continue;
        cw_put(w, v + run, i - run);
        cw_putc(w, ' ');
        while (i + 1 < n && (v[i + 1] == ' ' || v[i + 1] == '\t'))
            i++;
        run = i + 1;
    }
    cw_put(w, v + run, n - run);
}

/* The canonical headers, in the order of the signed list, each
 * "name:value\n" with repeated headers joined by ','.  CN_E_INVALID when a
 * name is empty, not lower case, or not among the headers. */
static cn_err_t canonical_headers(cw_t *w, const cn_http_kv_t *headers, size_t n_headers,
                                  const char *signed_headers, size_t signed_len)
{
    size_t pos = 0;
    while (pos < signed_len) {
        const char *semi = memchr(signed_headers + pos, ';', signed_len - pos);
        size_t end = semi ? (size_t)(semi - signed_headers) : signed_len;
        const char *name = signed_headers + pos;
        size_t nlen = end - pos;
        if (nlen == 0)
            return CN_E_INVALID;
        for (size_t k = 0; k < nlen; k++)
            if (isupper((unsigned char)name[k]))
                return CN_E_INVALID;
        cw_put(w, name, nlen);
        cw_putc(w, ':');
        bool found = false;
        for (size_t i = 0; i < n_headers; i++) {
            if (headers[i].name_len != nlen || strncasecmp(headers[i].name, name, nlen) != 0)
                continue;
            if (found)
                cw_putc(w, ',');
            /* Once full, only the checks go on: a list naming one header
             * many times must not cost its value's length each time. */
            if (!w->full)
                cw_trimmed(w, headers[i].value, headers[i].value_len);
            found = true;
        }
        if (!found)
            return CN_E_INVALID;
        cw_putc(w, '\n');
        pos = end + 1;
    }
    return CN_OK;
}

/* The whole canonical request, without a trailing newline.  The errors of
 * cn_sigv4_canonical_request, and CN_E_TOO_LARGE when w is too small. */
static cn_err_t canonical_request(cw_t *w, const char *method, const char *path, size_t path_len,
                                  const char *query, size_t query_len, const cn_http_kv_t *headers,
                                  size_t n_headers, const char *signed_headers, size_t signed_len,
                                  const char *payload_hash)
{
    cw_put(w, method, strlen(method));
    cw_putc(w, '\n');
    if (path_len == 0)
        cw_putc(w, '/');
    else
        CN_TRY(cw_requote(w, path, path_len, true));
    cw_putc(w, '\n');
    if (query && query_len)
        CN_TRY(canonical_query(w, query, query_len));
    cw_putc(w, '\n');
    CN_TRY(canonical_headers(w, headers, n_headers, signed_headers, signed_len));
    cw_putc(w, '\n');
    cw_put(w, signed_headers, signed_len);
    cw_putc(w, '\n');
    cw_put(w, payload_hash, strlen(payload_hash));
    return w->full ? CN_E_TOO_LARGE : CN_OK;
}

cn_err_t cn_sigv4_canonical_request(cn_buf_t *out, const char *method, const char *path,
                                    size_t path_len, const char *query, size_t query_len,
                                    const cn_http_kv_t *headers, size_t n_headers,
                                    const char *signed_headers, size_t signed_len,
                                    const char *payload_hash)
{
    char buf[CN_SIGV4_MAX_CANONICAL];
    cw_t w = { buf, 0, sizeof buf, false };
    cn_err_t err = canonical_request(&w, method, path, path_len, query, query_len, headers,
                                     n_headers, signed_headers, signed_len, payload_hash);
    if (err)
        return err == CN_E_TOO_LARGE ? CN_E_LIMIT : err;
    return cn_buf_append(out, buf, w.len);
}

/* ---- the signing key and its cache ---------------------------------------- */

void cn_sigv4_signing_key(const uint8_t *secret, size_t secret_len, const char *date8,
                          const char *region, const char *service, uint8_t out[32])
{
    uint8_t k[4 + CN_SIGV4_MAX_SECRET];
    uint8_t a[32], b[32];
    size_t kl = secret_len > CN_SIGV4_MAX_SECRET ? CN_SIGV4_MAX_SECRET : secret_len;
    memcpy(k, "AWS4", 4);
    memcpy(k + 4, secret, kl);
    cn_hmac_sha256(k, 4 + kl, date8, 8, a);
    cn_hmac_sha256(a, 32, region, strlen(region), b);
    cn_hmac_sha256(b, 32, service, strlen(service), a);
    cn_hmac_sha256(a, 32, "aws4_request", 12, out);
    OPENSSL_cleanse(k, sizeof k);
    OPENSSL_cleanse(a, sizeof a);
    OPENSSL_cleanse(b, sizeof b);
}

/* The cache: KC_SETS sets of KC_WAYS slots; a tuple lives only in the set its
 * hash names, and a slot answers only when every field of the tuple matches
 * (the hash picks the set, it never vouches for a match).  The secret is
 * represented by a tag of it, never by itself: the credential store's tag,
 * handed out with the secret (computed once when the store cached it), or
 * else BLAKE3's keyed hash under a key made at random once per process
 * (kc_fp_key), computed per request.  A store's tag is unique per access
 * key only, so the access key is part of the tuple.  A slot keeps the key
 * twice: as bytes (cn_sigv4_t's signing_key) and prepared for HMAC (its
 * inner and outer pad blocks hashed: two of the signature HMAC's six SHA-256
 * blocks, done once per slot instead of per request).  One reader-writer
 * lock: lookups share it (the event loops and workers checking signatures at
 * once never wait for each other: no futex on a hit), a store takes it
 * exclusively; the four HMACs of a miss and the key's preparation run
 * outside it (two threads missing together both derive the same key, and the
 * second store is harmless).  Recency counts stores (clock moves only under
 * the writer lock), enough for the one decision it serves: which slot a
 * store replaces. */
#define KC_WAYS 4
#define KC_SETS (CN_SIGV4_KEY_CACHE_SLOTS / KC_WAYS)
#define KC_MAX_SERVICE 16
#define KC_MAX_ACCESS 64
#define KC_CONTEXT "cairn sigv4 signing-key cache: secret fingerprint"

typedef struct {
    _Atomic uint64_t stamp;  /* last use (0: empty) */
    cn_hmac_sha256_key_t mk; /* key, prepared: its HMAC's two pad blocks hashed once */
    uint8_t secret_fp[32];   /* the tag */
    uint8_t key[32];
    char date8[8];
    uint8_t access_len, region_len, service_len;
    char access[KC_MAX_ACCESS];
    char region[CN_SIGV4_MAX_REGION];
    char service[KC_MAX_SERVICE];
} kc_slot_t;

static struct {
    pthread_rwlock_t lock;
    _Atomic uint64_t clock, hits, misses;
    kc_slot_t slot[CN_SIGV4_KEY_CACHE_SLOTS];
} kc = { .lock = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP };

static uint64_t kc_load(const _Atomic uint64_t *v)
{
    return atomic_load_explicit(v, memory_order_relaxed);
}

static void kc_count(_Atomic uint64_t *v)
{
    atomic_fetch_add_explicit(v, 1, memory_order_relaxed);
}

/* The fingerprint's key: random, made once per process, so that a
 * fingerprint is a MAC under a key that never leaves memory (a fixed key,
 * from the context string, only if the system's generator fails). */
static uint8_t kc_fp_key[32];
static pthread_once_t kc_fp_once = PTHREAD_ONCE_INIT;

static void kc_fp_key_init(void)
{
    if (cn_random_bytes(kc_fp_key, sizeof kc_fp_key) != CN_OK) {
        cn_digest_t d;
        cn_blake3(KC_CONTEXT, sizeof KC_CONTEXT, &d);
        memcpy(kc_fp_key, d.b, sizeof kc_fp_key);
    }
}

/* BLAKE3 keyed by kc_fp_key over the secret alone: one compression for a
 * secret of up to 64 bytes (an AWS secret is 40), where hashing the context
 * string and the secret took two, plus a copy to join them. */
static void secret_fingerprint(const uint8_t *secret, size_t secret_len, uint8_t fp[32])
{
    size_t kl = secret_len > CN_SIGV4_MAX_SECRET ? CN_SIGV4_MAX_SECRET : secret_len;
    cn_digest_t d;
    pthread_once(&kc_fp_once, kc_fp_key_init);
    cn_blake3_keyed(kc_fp_key, secret, kl, &d);
    memcpy(fp, d.b, 32);
    OPENSSL_cleanse(&d, sizeof d);
}

/* One lookup's tuple: the tag and the public fields with their lengths. */
typedef struct {
    const uint8_t *fp;
    const char *access, *date8, *region, *service;
    size_t al, rl, sl;
} kc_tuple_t;

static bool kc_match(const kc_slot_t *s, const kc_tuple_t *t)
{
    return kc_load(&s->stamp) && s->access_len == t->al && s->region_len == t->rl &&
           s->service_len == t->sl && memcmp(s->date8, t->date8, 8) == 0 &&
           memcmp(s->access, t->access, t->al) == 0 && memcmp(s->region, t->region, t->rl) == 0 &&
           memcmp(s->service, t->service, t->sl) == 0 && cn_ct_equal(s->secret_fp, t->fp, 32);
}

/* The set of a tuple: FNV-1a over the public fields, mixed with the tag
 * (uniform already). */
static size_t kc_set(const kc_tuple_t *t)
{
    uint64_t h = 0xcbf29ce484222325ull, f;
    const char *parts[4] = { t->access, t->date8, t->region, t->service };
    const size_t lens[4] = { t->al, 8, t->rl, t->sl };
    for (int p = 0; p < 4; p++)
        for (size_t i = 0; i < lens[p]; i++)
            h = (h ^ (unsigned char)parts[p][i]) * 0x100000001b3ull;
    memcpy(&f, t->fp, sizeof f);
    return (size_t)((h ^ f) % KC_SETS);
}

/* Where a derived key goes: the tuple's own slot if another thread stored it
 * meanwhile, else an empty slot (stamp 0), else the least recently used. */
static kc_slot_t *kc_victim(kc_slot_t *set, const kc_tuple_t *t)
{
    kc_slot_t *lru = &set[0];
    for (int i = 0; i < KC_WAYS; i++) {
        if (kc_match(&set[i], t))
            return &set[i];
        if (kc_load(&set[i].stamp) < kc_load(&lru->stamp))
            lru = &set[i];
    }
    return lru;
}

/* The cache's lookup of tuple t; true with out (and mk, unless NULL)
 * filled on a hit. */
static bool kc_find(kc_slot_t *set, const kc_tuple_t *t, uint8_t out[32], cn_hmac_sha256_key_t *mk)
{
    pthread_rwlock_rdlock(&kc.lock);
    for (int i = 0; i < KC_WAYS; i++) {
        if (kc_match(&set[i], t)) {
            /* Stored only when it moves: a hot slot's line stays shared. */
            uint64_t now = kc_load(&kc.clock);
            if (kc_load(&set[i].stamp) != now)
                atomic_store_explicit(&set[i].stamp, now, memory_order_relaxed);
            memcpy(out, set[i].key, 32);
            if (mk)
                *mk = set[i].mk;
            pthread_rwlock_unlock(&kc.lock);
            kc_count(&kc.hits);
            return true;
        }
    }
    pthread_rwlock_unlock(&kc.lock);
    kc_count(&kc.misses);
    return false;
}

/* Files key, and mk prepared from it, under tuple t in its set. */
static void kc_store(kc_slot_t *set, const kc_tuple_t *t, const uint8_t key[32],
                     const cn_hmac_sha256_key_t *mk)
{
    pthread_rwlock_wrlock(&kc.lock);
    kc_slot_t *victim = kc_victim(set, t);
    uint64_t now = kc_load(&kc.clock) + 1;
    atomic_store_explicit(&kc.clock, now, memory_order_relaxed);
    atomic_store_explicit(&victim->stamp, now, memory_order_relaxed);
    memcpy(victim->secret_fp, t->fp, 32);
    memcpy(victim->key, key, 32);
    victim->mk = *mk;
    memcpy(victim->date8, t->date8, 8);
    victim->access_len = (uint8_t)t->al;
    victim->region_len = (uint8_t)t->rl;
    victim->service_len = (uint8_t)t->sl;
    memcpy(victim->access, t->access, t->al);
    memcpy(victim->region, t->region, t->rl);
    memcpy(victim->service, t->service, t->sl);
    pthread_rwlock_unlock(&kc.lock);
}

static bool tag_is_zero(const uint8_t tag[CN_SIGV4_TAG_LEN])
{
    uint8_t acc = 0;
    for (size_t i = 0; i < CN_SIGV4_TAG_LEN; i++)
        acc |= tag[i];
    return acc == 0;
}

/* cn_sigv4_signing_key_tagged, and the key prepared for cn_hmac_sha256_keyed
 * into mk unless it is NULL: the cache keeps the key prepared, so that a
 * verification's HMAC hashes no pad block of its own. */
static void signing_key_lookup(const char *access_key, const uint8_t tag[CN_SIGV4_TAG_LEN],
                               const uint8_t *secret, size_t secret_len, const char *date8,
                               const char *region, const char *service, uint8_t out[32],
                               cn_hmac_sha256_key_t *mk)
{
    kc_tuple_t t = { .access = access_key, .date8 = date8, .region = region, .service = service };
    t.al = strlen(access_key), t.rl = strlen(region), t.sl = strlen(service);
    if (t.al >= KC_MAX_ACCESS || t.rl >= CN_SIGV4_MAX_REGION || t.sl > KC_MAX_SERVICE) {
        cn_sigv4_signing_key(secret, secret_len, date8, region, service, out);
        if (mk)
            cn_hmac_sha256_key_init(mk, out, 32);
        kc_count(&kc.misses);
        return;
    }
    uint8_t fp[32];
    if (!tag || tag_is_zero(tag))
        secret_fingerprint(secret, secret_len, fp);
    else
        memcpy(fp, tag, sizeof fp);
    t.fp = fp;
    kc_slot_t *set = &kc.slot[kc_set(&t) * KC_WAYS];
    if (!kc_find(set, &t, out, mk)) {
        cn_hmac_sha256_key_t fresh;
        cn_sigv4_signing_key(secret, secret_len, date8, region, service, out);
        cn_hmac_sha256_key_init(&fresh, out, 32);
        kc_store(set, &t, out, &fresh);
        if (mk)
            *mk = fresh;
        cn_hmac_sha256_key_wipe(&fresh);
    }
    OPENSSL_cleanse(fp, sizeof fp);
}

void cn_sigv4_signing_key_tagged(const char *access_key, const uint8_t tag[CN_SIGV4_TAG_LEN],
                                 const uint8_t *secret, size_t secret_len, const char *date8,
                                 const char *region, const char *service, uint8_t out[32])
{
    signing_key_lookup(access_key, tag, secret, secret_len, date8, region, service, out, NULL);
}

void cn_sigv4_signing_key_cached(const uint8_t *secret, size_t secret_len, const char *date8,
                                 const char *region, const char *service, uint8_t out[32])
{
    cn_sigv4_signing_key_tagged("", NULL, secret, secret_len, date8, region, service, out);
}

void cn_sigv4_key_cache_stats(uint64_t *hits, uint64_t *misses)
{
    *hits = kc_load(&kc.hits);
    *misses = kc_load(&kc.misses);
}

void cn_sigv4_key_cache_clear(void)
{
    pthread_rwlock_wrlock(&kc.lock);
    OPENSSL_cleanse(kc.slot, sizeof kc.slot);
    pthread_rwlock_unlock(&kc.lock);
}

/* cn_sigv4_sign under a prepared key. */
static void sign_keyed(const cn_hmac_sha256_key_t *mk, const char *amz_date, const char *scope,
                       const char *canonical, size_t canonical_len, char sig_hex[65])
{
    uint8_t h[32], mac[32];
    char hh[65];
    char sts[512];
    cn_sha256(canonical, canonical_len, h);
    cn_hex_encode(h, 32, hh);
    size_t dl = strlen(amz_date), sl = strlen(scope), n = 17 + dl + 1 + sl + 1 + 64;
    if (n < sizeof sts) { /* else the empty string: a signature nobody matches */
        memcpy(sts, "AWS4-HMAC-SHA256\n", 17);
        memcpy(sts + 17, amz_date, dl);
        sts[17 + dl] = '\n';
        memcpy(sts + 18 + dl, scope, sl);
        sts[18 + dl + sl] = '\n';
        memcpy(sts + 19 + dl + sl, hh, 64);
    } else {
        n = 0;
    }
    cn_hmac_sha256_keyed(mk, sts, n, mac);
    cn_hex_encode(mac, 32, sig_hex);
}

void cn_sigv4_sign(const uint8_t key[32], const char *amz_date, const char *scope,
                   const char *canonical, size_t canonical_len, char sig_hex[65])
{
    cn_hmac_sha256_key_t mk;
    cn_hmac_sha256_key_init(&mk, key, 32);
    sign_keyed(&mk, amz_date, scope, canonical, canonical_len, sig_hex);
    cn_hmac_sha256_key_wipe(&mk);
}

/* Days from 1970-01-01 to the proleptic Gregorian date (y, m 1-12, d), in
 * pure arithmetic: timegm() would take glibc's time-zone lock, which every
 * event loop and worker checking a signature then contends for.  Counted in
 * 400-year eras of 146,097 days, with years starting in March so that the
 * leap day ends one. */
static int64_t days_from_civil(int y, int m, int d)
{
    y -= m <= 2;
    int era = (y >= 0 ? y : y - 399) / 400;
    int yoe = y - era * 400;                                   /* 0..399 */
    int doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1; /* 0..365 */
    int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;           /* 0..146096 */
    return (int64_t)era * 146097 + doe - 719468;
}

static int days_in_month(int y, int m)
{
    static const int days[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : days[m - 1];
}

cn_err_t cn_sigv4_parse_date(const char *s, size_t n, int64_t *out_ms)
{
    if (n != 16 || s[8] != 'T' || s[15] != 'Z')
        return CN_E_INVALID;
    for (int i = 0; i < 15; i++)
        if (i != 8 && !isdigit((unsigned char)s[i]))
            return CN_E_INVALID;
    int year = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 + (s[3] - '0');
    int mon = (s[4] - '0') * 10 + (s[5] - '0');
    int mday = (s[6] - '0') * 10 + (s[7] - '0');
    int hour = (s[9] - '0') * 10 + (s[10] - '0');
    int min = (s[11] - '0') * 10 + (s[12] - '0');
    int sec = (s[13] - '0') * 10 + (s[14] - '0');
    if (mon < 1 || mon > 12 || mday < 1 || mday > days_in_month(year, mon) || hour > 23 ||
        min > 59 || sec > 60)
        return CN_E_INVALID;
    /* A leap second that would carry into the next day is refused, as the
     * timegm() normalisation check this replaces refused it. */
    if (hour == 23 && min == 59 && sec == 60)
        return CN_E_INVALID;
    *out_ms =
        ((days_from_civil(year, mon, mday) * 24 + hour) * 60 + min) * 60000 + (int64_t)sec * 1000;
    return CN_OK;
}

/* Parses an RFC 7231 Date header ("Fri, 24 May 2013 00:00:00 GMT"). */
static cn_err_t parse_http_date(const char *s, size_t n, int64_t *out_ms)
{
    char tmp[64];
    if (n >= sizeof tmp)
        return CN_E_INVALID;
    memcpy(tmp, s, n);
    tmp[n] = 0;
    struct tm tm = { 0 };
    const char *end = strptime(tmp, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    if (!end || *end)
        return CN_E_INVALID;
    int year = tm.tm_year, mon = tm.tm_mon, mday = tm.tm_mday;
    time_t t = timegm(&tm);
    if (t == (time_t)-1 || tm.tm_year != year || tm.tm_mon != mon || tm.tm_mday != mday)
        return CN_E_INVALID;
    *out_ms = (int64_t)t * 1000;
    return CN_OK;
}

/* ---- verification --------------------------------------------------------- */

static cn_err_t sigv4_fail(cn_sigv4_t *v, cn_s3_err_t e, const char *detail)
{
    v->s3err = e;
    snprintf(v->detail, sizeof v->detail, "%s", detail);
    return CN_E_AUTH;
}

/* The scratch area of one verification, on the verifier's stack: a presigned
 * URL's decoded values from the front, then the canonical request in what is
 * left.  Bounded: a request that does not fit is refused (too_large). */
typedef struct {
    size_t used;
    char buf[CN_SIGV4_MAX_CANONICAL];
} scratch_t;

typedef enum {
    QV_ABSENT,
    QV_FOUND,
    QV_FULL
} qv_t;

/* The presigned form's query items.  qi_scan finds each one's first item in
 * a single pass over the raw query (they were found by name, one pass each:
 * 3 k instructions of a presigned GET); qi_get decodes one. */
enum {
    QI_ALGORITHM,
    QI_CREDENTIAL,
    QI_SIGNED_HEADERS,
    QI_SIGNATURE,
    QI_DATE,
    QI_EXPIRES,
    QI_N
};

static const struct {
    const char *name; /* after "X-Amz-" */
    size_t len;
} qi_names[QI_N] = {
    [QI_ALGORITHM] = { "Algorithm", 9 },
    [QI_CREDENTIAL] = { "Credential", 10 },
    [QI_SIGNED_HEADERS] = { "SignedHeaders", 13 },
    [QI_SIGNATURE] = { "Signature", 9 },
    [QI_DATE] = { "Date", 4 },
    [QI_EXPIRES] = { "Expires", 7 },
};

/* Each item's raw value (NULL: absent) and its length. */
typedef struct {
    const char *raw[QI_N];
    size_t len[QI_N];
} qitems_t;

/* Fills qi from the raw query q (may be NULL): for each name, the value of
 * the first item whose name is exactly it ("name=value", or "name" alone
 * for an empty value). */
static void qi_scan(const char *q, size_t qn, qitems_t *qi)
{
    memset(qi, 0, sizeof *qi);
    size_t pos = 0;
    while (q && pos < qn) {
        const char *amp = memchr(q + pos, '&', qn - pos);
        size_t end = amp ? (size_t)(amp - q) : qn;
        const char *item = q + pos;
        size_t ilen = end - pos;
        pos = end + 1;
        if (ilen < 6 || memcmp(item, "X-Amz-", 6) != 0)
            continue;
        const char *eq = memchr(item + 6, '=', ilen - 6);
        size_t nl = (eq ? (size_t)(eq - item) : ilen) - 6;
        for (int k = 0; k < QI_N; k++) {
            if (qi->raw[k] || qi_names[k].len != nl || memcmp(item + 6, qi_names[k].name, nl) != 0)
                continue;
            qi->raw[k] = eq ? eq + 1 : item + ilen;
            qi->len[k] = ilen - 6 - nl - (eq != NULL);
            break;
        }
    }
}

/* Percent-decodes item k's value, NUL-terminated, into the scratch area.
 * QV_ABSENT when the item is not there or its value has a bad escape;
 * QV_FULL when the scratch area cannot hold it. */
static qv_t qi_get(const qitems_t *qi, int k, scratch_t *s, const char **val, size_t *len)
{
    const char *vs = qi->raw[k];
    size_t vl = qi->len[k];
    if (!vs)
        return QV_ABSENT;
    if (vl >= sizeof s->buf - s->used)
        return QV_FULL;
    char *dst = s->buf + s->used;
    long dl = pct_decode_into(dst, vs, vl);
    if (dl < 0)
        return QV_ABSENT;
    dst[dl] = 0;
    s->used += (size_t)dl + 1;
    *val = dst;
    *len = (size_t)dl;
    return QV_FOUND;
}

typedef struct {
    const char *algorithm;
    size_t algorithm_len;
    const char *credential;
    size_t credential_len;
    const char *signed_headers;
    size_t signed_len;
    const char *signature;
    size_t signature_len;
} cn__auth_parts_t;

static void trim(const char **s, size_t *n)
{
    while (*n && (**s == ' ' || **s == '\t')) {
        (*s)++;
        (*n)--;
    }
    while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
        (*n)--;
}

/* "AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=..." */
static bool parse_auth_header(const char *h, size_t n, cn__auth_parts_t *p)
{
    memset(p, 0, sizeof *p);
    const char *sp = memchr(h, ' ', n);
    if (!sp)
        return false;
    p->algorithm = h;
    p->algorithm_len = (size_t)(sp - h);
    size_t pos = p->algorithm_len + 1;
    while (pos < n) {
        const char *comma = memchr(h + pos, ',', n - pos);
        size_t end = comma ? (size_t)(comma - h) : n;
        const char *item = h + pos;
        size_t ilen = end - pos;
        trim(&item, &ilen);
        const char *eq = memchr(item, '=', ilen);
        if (eq) {
            size_t kl = (size_t)(eq - item);
            const char *val = eq + 1;
            size_t vl = ilen - kl - 1;
            if (kl == 10 && memcmp(item, "Credential", 10) == 0) {
                p->credential = val;
                p->credential_len = vl;
            } else if (kl == 13 && memcmp(item, "SignedHeaders", 13) == 0) {
                p->signed_headers = val;
                p->signed_len = vl;
            } else if (kl == 9 && memcmp(item, "Signature", 9) == 0) {
                p->signature = val;
                p->signature_len = vl;
            }
        } else if (ilen) {
            return false;
        }
        pos = end + 1;
    }
    return p->credential && p->signed_headers && p->signature;
}

static bool copy(char *dst, size_t cap, const char *s, size_t n)
{
    if (n >= cap)
        return false;
    memcpy(dst, s, n);
    dst[n] = 0;
    return true;
}

static bool has_token(const char *list, size_t n, const char *tok)
{
    size_t tl = strlen(tok), pos = 0;
    while (pos < n) {
        const char *semi = memchr(list + pos, ';', n - pos);
        size_t end = semi ? (size_t)(semi - list) : n;
        if (end - pos == tl && memcmp(list + pos, tok, tl) == 0)
            return true;
        pos = end + 1;
    }
    return false;
}

/* Where a request's signature came from: the Authorization header (cred, sh
 * and sig point into it) or a presigned URL's query (they point into the
 * decoded copies in scratch). */
typedef struct {
    bool presigned;
    const char *cred, *sh, *sig;
    size_t cred_len, sh_len, sig_len;
    scratch_t *scratch;
    qitems_t qi; /* the query's X-Amz items (read_form) */
} form_t;

/* The error S3 gives for a malformed part of this form's signature. */
static cn_s3_err_t malformed(const form_t *f)
{
    return f->presigned ? CN_S3E_AUTH_QUERY_MALFORMED : CN_S3E_AUTH_HEADER_MALFORMED;
}

/* The refusal of a request past the scratch area's bound. */
static cn_err_t too_large(cn_sigv4_t *v, cn_s3_err_t e)
{
    return sigv4_fail(v, e,
                      "the request is too large to verify: its canonical request and signing "
                      "values need more than " CN__STR(CN_SIGV4_MAX_CANONICAL) " bytes");
}

static cn_err_t read_header_form(const cn_http_kv_t *authz, cn_sigv4_t *v, form_t *f)
{
    cn__auth_parts_t ap;
    v->kind = CN_HTTP_AUTH_SIGV4_HEADER;
    if (!parse_auth_header(authz->value, authz->value_len, &ap))
        return sigv4_fail(v, CN_S3E_AUTH_HEADER_MALFORMED, "the authorization header is malformed");
    if (ap.algorithm_len != 16 || memcmp(ap.algorithm, "AWS4-HMAC-SHA256", 16) != 0) {
        bool sigv4a =
            ap.algorithm_len == 22 && memcmp(ap.algorithm, "AWS4-ECDSA-P256-SHA256", 22) == 0;
        return sigv4_fail(v, sigv4a ? CN_S3E_NOT_IMPLEMENTED : CN_S3E_AUTH_HEADER_MALFORMED,
                          "unsupported signing algorithm");
    }
    f->cred = ap.credential;
    f->cred_len = ap.credential_len;
    f->sh = ap.signed_headers;
    f->sh_len = ap.signed_len;
    f->sig = ap.signature;
    f->sig_len = ap.signature_len;
    return CN_OK;
}

/* alg is the decoded X-Amz-Algorithm. */
static cn_err_t read_query_form(cn_sigv4_t *v, form_t *f, const char *alg)
{
    f->presigned = true;
    v->kind = CN_HTTP_AUTH_SIGV4_QUERY;
    if (strcmp(alg, "AWS4-HMAC-SHA256") != 0)
        return sigv4_fail(v, CN_S3E_AUTH_QUERY_MALFORMED, "unsupported X-Amz-Algorithm");
    static const int items[3] = { QI_CREDENTIAL, QI_SIGNED_HEADERS, QI_SIGNATURE };
    const char **vals[3] = { &f->cred, &f->sh, &f->sig };
    size_t *lens[3] = { &f->cred_len, &f->sh_len, &f->sig_len };
    for (int i = 0; i < 3; i++) {
        qv_t r = qi_get(&f->qi, items[i], f->scratch, vals[i], lens[i]);
        if (r == QV_FULL)
            return too_large(v, CN_S3E_AUTH_QUERY_MALFORMED);
        if (r == QV_ABSENT)
            return sigv4_fail(
                v, CN_S3E_AUTH_QUERY_MALFORMED,
                "X-Amz-Credential, X-Amz-SignedHeaders and X-Amz-Signature are required");
    }
    return CN_OK;
}

/* Step 1: which form signs the request (one at most).  CN_E_NOT_FOUND when
 * neither does: the request is not SigV4 at all. */
static cn_err_t read_form(const cn_sigv4_input_t *in, cn_sigv4_t *v, form_t *f)
{
    const cn_http_kv_t *authz = find(in->headers, in->n_headers, "authorization", 13);
    const char *alg = NULL;
    size_t alg_len;
    qi_scan(in->query, in->query_len, &f->qi);
    qv_t qa = qi_get(&f->qi, QI_ALGORITHM, f->scratch, &alg, &alg_len);
    if (qa == QV_FULL)
        return too_large(v, CN_S3E_AUTH_QUERY_MALFORMED);
    bool has_query_alg = qa == QV_FOUND;
    bool has_header = authz && authz->value_len >= 5 && strncmp(authz->value, "AWS4-", 5) == 0;
    if (has_header && has_query_alg)
        return sigv4_fail(v, CN_S3E_INVALID_ARGUMENT, "Only one auth mechanism allowed");
    if (has_header)
        return read_header_form(authz, v, f);
    if (has_query_alg)
        return read_query_form(v, f, alg);
    return CN_E_NOT_FOUND;
}

/* Step 2: Credential = <key>/<yyyymmdd>/<region>/<service>/aws4_request.
 * Fills v's access_key, region and scope; *date8 points at the credential's
 * date (8 characters, not NUL-terminated). */
static cn_err_t check_credential(const cn_sigv4_input_t *in, cn_sigv4_t *v, const form_t *f,
                                 const char **date8)
{
    const char *cred = f->cred, *slash[4];
    size_t cred_len = f->cred_len;
    int found = 0;
    for (size_t i = cred_len; i > 0 && found < 4; i--)
        if (cred[i - 1] == '/')
            slash[found++] = cred + i - 1;
    if (found < 4 || slash[3] == cred)
        return sigv4_fail(
            v, malformed(f),
            "the Credential is malformed; expected \"<key>/<date>/<region>/s3/aws4_request\"");
    const char *date = slash[3] + 1, *region = slash[2] + 1, *service = slash[1] + 1,
               *term = slash[0] + 1;
    size_t date_len = (size_t)(slash[2] - date), region_len = (size_t)(slash[1] - region),
           service_len = (size_t)(slash[0] - service), term_len = (size_t)(cred + cred_len - term);
    if (!copy(v->access_key, sizeof v->access_key, cred, (size_t)(slash[3] - cred)) ||
        !copy(v->region, sizeof v->region, region, region_len) || date_len != 8 ||
        region_len == 0 || term_len != 12 || memcmp(term, "aws4_request", 12) != 0)
        return sigv4_fail(v, malformed(f), "the Credential is malformed");
    if (service_len != strlen(in->service) || memcmp(service, in->service, service_len) != 0) {
        snprintf(v->detail, sizeof v->detail, "the service in the credential must be '%s'",
                 in->service);
        v->s3err = malformed(f);
        return CN_E_AUTH;
    }
    if (in->region && strcmp(in->region, v->region) != 0) {
        v->s3err = malformed(f);
        snprintf(v->detail, sizeof v->detail, "the region '%.60s' is wrong; expecting '%.60s'",
                 v->region, in->region);
        return CN_E_AUTH;
    }
    /* "<date>/<region>/<service>/aws4_request"; a NUL ends the date early,
     * which the date check below then refuses. */
    size_t dl = strnlen(date, 8), rl = strlen(v->region), sl = strlen(in->service);
    if (dl + 1 + rl + 1 + sl + 13 >= sizeof v->scope)
        return sigv4_fail(v, CN_S3E_AUTH_HEADER_MALFORMED, "the credential scope is too long");
    char *sc = v->scope;
    memcpy(sc, date, dl);
    sc[dl] = '/';
    memcpy(sc + dl + 1, v->region, rl);
    sc[dl + 1 + rl] = '/';
    memcpy(sc + dl + 2 + rl, in->service, sl);
    memcpy(sc + dl + 2 + rl + sl, "/aws4_request", 14);
    *date8 = date;
    return CN_OK;
}

/* Step 3: the request time, from X-Amz-Date (query or header) or else Date;
 * fills v's request_ms and amz_date. */
static cn_err_t read_request_time(const cn_sigv4_input_t *in, cn_sigv4_t *v, form_t *f)
{
    const char *ds = NULL;
    size_t dl = 0;
    bool http_date = false;
    if (f->presigned) {
        qv_t r = qi_get(&f->qi, QI_DATE, f->scratch, &ds, &dl);
        if (r == QV_FULL)
            return too_large(v, CN_S3E_AUTH_QUERY_MALFORMED);
        if (r == QV_ABSENT)
            return sigv4_fail(v, CN_S3E_AUTH_QUERY_MALFORMED, "X-Amz-Date is required");
    } else {
        const cn_http_kv_t *xd = find(in->headers, in->n_headers, "x-amz-date", 10);
        if (!xd) {
            xd = find(in->headers, in->n_headers, "date", 4);
            http_date = true;
        }
        if (!xd)
            return sigv4_fail(v, CN_S3E_ACCESS_DENIED,
                              "AWS authentication requires a valid Date or x-amz-date header");
        ds = xd->value;
        dl = xd->value_len;
        trim(&ds, &dl);
    }
    if (http_date) {
        if (parse_http_date(ds, dl, &v->request_ms) != CN_OK)
            return sigv4_fail(v, CN_S3E_ACCESS_DENIED, "the Date header is not valid");
        char d[CN_DATE_MAX]; /* cn_date_format: no time-zone lock */
        if (cn_date_format(v->request_ms, CN_DATE_AMZ, d) >= sizeof v->amz_date)
            return sigv4_fail(v, CN_S3E_ACCESS_DENIED, "the Date header is not valid");
        memcpy(v->amz_date, d, sizeof v->amz_date);
        return CN_OK;
    }
    if (cn_sigv4_parse_date(ds, dl, &v->request_ms) != CN_OK)
        return sigv4_fail(v, f->presigned ? CN_S3E_AUTH_QUERY_MALFORMED : CN_S3E_ACCESS_DENIED,
                          "X-Amz-Date must be in the ISO8601 basic format yyyyMMdd'T'HHmmss'Z'");
    memcpy(v->amz_date, ds, 16);
    v->amz_date[16] = 0;
    return CN_OK;
}

/* Step 4: now is inside the request's window: the URL's X-Amz-Expires, or
 * the allowed clock skew around a header-signed request's time. */
static cn_err_t check_window(const cn_sigv4_input_t *in, cn_sigv4_t *v, form_t *f)
{
    int64_t skew = in->max_skew_ms > 0 ? in->max_skew_ms : CN_SIGV4_MAX_SKEW_MS;
    if (!f->presigned) {
        int64_t d = in->now_ms - v->request_ms;
        if (d > skew || -d > skew)
            return sigv4_fail(
                v, CN_S3E_REQUEST_TIME_TOO_SKEWED,
                "The difference between the request time and the current time is too large.");
        return CN_OK;
    }
    const char *es = NULL;
    size_t el = 0;
    qv_t r = qi_get(&f->qi, QI_EXPIRES, f->scratch, &es, &el);
    if (r == QV_FULL)
        return too_large(v, CN_S3E_AUTH_QUERY_MALFORMED);
    if (r == QV_ABSENT)
        return sigv4_fail(v, CN_S3E_AUTH_QUERY_MALFORMED, "X-Amz-Expires is required");
    char *end = NULL;
    long long ex = strtoll(es, &end, 10);
    if (el == 0 || *end || ex < 1 || ex > CN_SIGV4_MAX_EXPIRES || !isdigit((unsigned char)es[0]))
        return sigv4_fail(v, CN_S3E_AUTH_QUERY_MALFORMED,
                          "X-Amz-Expires must be between 1 and 604800 seconds");
    v->expires_ms = v->request_ms + ex * 1000;
    if (v->request_ms - in->now_ms > skew)
        return sigv4_fail(v, CN_S3E_REQUEST_NOT_YET_VALID, "Request is not valid yet");
    if (in->now_ms > v->expires_ms)
        return sigv4_fail(v, CN_S3E_EXPIRED_REQUEST, "Request has expired");
    return CN_OK;
}

/* Step 5: the payload hash the client signed, into hash (NUL-terminated;
 * empty when the body's hash is deferred); fills v's payload (and
 * payload_hash for a hex value). */
static cn_err_t read_payload_hash(const cn_sigv4_input_t *in, cn_sigv4_t *v, bool presigned,
                                  char hash[80])
{
    const cn_http_kv_t *ph = find(in->headers, in->n_headers, "x-amz-content-sha256", 20);
    if (!ph) {
        if (presigned) {
            v->payload = CN_SIGV4_PAYLOAD_UNSIGNED;
            strcpy(hash, "UNSIGNED-PAYLOAD");
        } else if (in->has_body) {
            v->payload = CN_SIGV4_PAYLOAD_DEFERRED;
            hash[0] = 0;
        } else {
            v->payload = CN_SIGV4_PAYLOAD_EMPTY;
            strcpy(hash, CN__EMPTY_SHA256);
        }
        return CN_OK;
    }
    const char *p = ph->value;
    size_t pl = ph->value_len;
    trim(&p, &pl);
#define CN__IS(s) (pl == sizeof(s) - 1 && memcmp(p, s, pl) == 0)
    if (CN__IS("UNSIGNED-PAYLOAD"))
        v->payload = CN_SIGV4_PAYLOAD_UNSIGNED;
    else if (CN__IS("STREAMING-AWS4-HMAC-SHA256-PAYLOAD") && !presigned)
        v->payload = CN_SIGV4_PAYLOAD_STREAMING;
    else if (CN__IS("STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER") && !presigned)
        v->payload = CN_SIGV4_PAYLOAD_STREAMING_TRAILER;
    else if (CN__IS("STREAMING-UNSIGNED-PAYLOAD-TRAILER"))
        v->payload = CN_SIGV4_PAYLOAD_UNSIGNED_TRAILER;
    else if (pl >= 29 && memcmp(p, "STREAMING-AWS4-ECDSA-P256-SHA256", 29) == 0)
        return sigv4_fail(v, CN_S3E_NOT_IMPLEMENTED, "SigV4a streaming is not supported");
    else if (pl == 64 && cn_hex_decode(p, 64, v->payload_hash, 32) == CN_OK)
        v->payload = CN_SIGV4_PAYLOAD_HASH;
    else
        return sigv4_fail(
            v, CN_S3E_INVALID_ARGUMENT,
            "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-*, or a valid sha256 value");
#undef CN__IS
    if (pl >= 80)
        return sigv4_fail(v, CN_S3E_INVALID_ARGUMENT, "x-amz-content-sha256 is too long");
    memcpy(hash, p, pl);
    hash[pl] = 0;
    return CN_OK;
}

static bool is_hex64(const char *s, size_t n)
{
    if (n != 64)
        return false;
    for (size_t i = 0; i < 64; i++)
        if (!isxdigit((unsigned char)s[i]))
            return false;
    return true;
}

/* Step 6: the access key's secret, from the credential store, turned into
 * v->signing_key and mk, the same key prepared for HMAC.  The secret never
 * outlives this function. */
static cn_err_t derive_key(const cn_sigv4_input_t *in, cn_http_secret_lookup_fn lookup,
                           void *lookup_ctx, cn_sigv4_t *v, cn_hmac_sha256_key_t *mk)
{
    uint8_t secret[CN_SIGV4_MAX_SECRET], tag[CN_SIGV4_TAG_LEN] = { 0 };
    size_t secret_len = 0;
    int lr = lookup ? lookup(lookup_ctx, v->access_key, secret, sizeof secret, &secret_len, tag)
                    : CN_E_NOT_FOUND;
    if (lr == CN_E_NOT_FOUND)
        return sigv4_fail(v, CN_S3E_INVALID_ACCESS_KEY_ID,
                          "The AWS Access Key Id you provided does not exist in our records.");
    if (lr != 0 || secret_len > sizeof secret) {
        OPENSSL_cleanse(secret, sizeof secret);
        /* A store that is down or contended (the fleet's database
         * restarting) is a retryable 503, never a 500 a client gives up on. */
        if (lr == CN_E_UNAVAILABLE || lr == CN_E_DB_LOCKED || lr == CN_E_BUSY)
            return sigv4_fail(v, CN_S3E_SERVICE_UNAVAILABLE,
                              "the credential store is unavailable; retry");
        if (lr != CN_E_AGAIN) /* a miss of the loop's cache-only lookup is no failure */
            cn_warn("http", "credential store: %s", cn_strerror(lr));
        return sigv4_fail(v, CN_S3E_INTERNAL_ERROR, "the credential store failed");
    }
    char date8[9];
    memcpy(date8, v->amz_date, 8);
    date8[8] = 0;
    signing_key_lookup(v->access_key, tag, secret, secret_len, date8, v->region, in->service,
                       v->signing_key, mk);
    OPENSSL_cleanse(secret, secret_len); /* all the lookup wrote */
    OPENSSL_cleanse(tag, sizeof tag);
    return CN_OK;
}

/* Step 7: the canonical request, written into what is left of the scratch
 * area, then the signature compared in constant time; or, for a deferred
 * payload, the canonical request kept in v->deferred until
 * cn_sigv4_finish_deferred has the body's hash. */
static cn_err_t check_signature(const cn_sigv4_input_t *in, cn_sigv4_t *v, const form_t *f,
                                const char *payload_hash, const cn_hmac_sha256_key_t *mk)
{
    scratch_t *s = f->scratch;
    cw_t w = { s->buf + s->used, 0, sizeof s->buf - s->used, false };
    cn_err_t err =
        canonical_request(&w, in->method, in->path, in->path_len, in->query, in->query_len,
                          in->headers, in->n_headers, f->sh, f->sh_len, payload_hash);
    if (err == CN_E_TOO_LARGE)
        return too_large(v, malformed(f));
    if (err == CN_E_INVALID || err == CN_E_LIMIT)
        return sigv4_fail(v, malformed(f),
                          "a signed header is missing or the request URI is malformed");
    if (err)
        return err;
    for (size_t i = 0; i < 64; i++)
        v->signature[i] = (char)tolower((unsigned char)f->sig[i]);
    v->signature[64] = 0;
    if (v->payload == CN_SIGV4_PAYLOAD_DEFERRED)
        return cn_buf_append(&v->deferred, w.p, w.len);
    char mine[65];
    sign_keyed(mk, v->amz_date, v->scope, w.p, w.len, mine);
    if (!cn_ct_equal(v->signature, mine, 64)) /* both lower case; 64 long (is_hex64) */
        return sigv4_fail(v, CN_S3E_SIGNATURE_DOES_NOT_MATCH,
                          "The request signature we calculated does not match the signature you "
                          "provided. Check your key and signing method.");
    return CN_OK;
}

cn_err_t cn_sigv4_verify(const cn_sigv4_input_t *in, cn_http_secret_lookup_fn lookup,
                         void *lookup_ctx, cn_sigv4_t *v)
{
    memset(v, 0, sizeof *v);
    scratch_t scratch; /* not cleared: 64 KiB, and only what is written is read */
    scratch.used = 0;
    form_t f = { .scratch = &scratch };
    const char *date8 = NULL;
    char payload_hash[80];
    cn_hmac_sha256_key_t mk; /* the signing key, prepared (derive_key) */
    cn_err_t err;
    if ((err = read_form(in, v, &f)) || (err = check_credential(in, v, &f, &date8)) ||
        (err = read_request_time(in, v, &f)))
        goto out;
    if (memcmp(v->amz_date, date8, 8) != 0) {
        err = sigv4_fail(v, malformed(&f), "the credential date does not match the request date");
        goto out;
    }
    if ((err = check_window(in, v, &f)))
        goto out;
    if (!has_token(f.sh, f.sh_len, "host")) {
        err = sigv4_fail(v, malformed(&f), "the host header must be signed");
        goto out;
    }
    if ((err = read_payload_hash(in, v, f.presigned, payload_hash)))
        goto out;
    if (!is_hex64(f.sig, f.sig_len)) {
        /* Refused now, not after a deferred body has been read to compare it. */
        err = sigv4_fail(v, malformed(&f), "the signature must be 64 hexadecimal characters");
        goto out;
    }
    if ((err = derive_key(in, lookup, lookup_ctx, v, &mk)))
        goto out;
    err = check_signature(in, v, &f, payload_hash, &mk);
    cn_hmac_sha256_key_wipe(&mk);
out:
    /* Only a verified request keeps its key (a deferred one needs it). */
    if (err)
        memset(v->signing_key, 0, sizeof v->signing_key);
    return err;
}

cn_err_t cn_sigv4_finish_deferred(cn_sigv4_t *v, const uint8_t body_sha256[32])
{
    if (v->payload != CN_SIGV4_PAYLOAD_DEFERRED)
        return CN_OK;
    char hex[65], mine[65];
    cn_hex_encode(body_sha256, 32, hex);
    CN_TRY(cn_buf_append(&v->deferred, hex, 64));
    cn_sigv4_sign(v->signing_key, v->amz_date, v->scope, (const char *)v->deferred.data,
                  v->deferred.len, mine);
    cn_buf_free(&v->deferred);
    if (!cn_ct_equal(mine, v->signature, 64)) {
        v->s3err = CN_S3E_SIGNATURE_DOES_NOT_MATCH;
        return CN_E_AUTH;
    }
    return CN_OK;
}

void cn_sigv4_clear(cn_sigv4_t *v)
{
    if (!v)
        return;
    cn_buf_free(&v->deferred);
    memset(v->signing_key, 0, sizeof v->signing_key);
}
