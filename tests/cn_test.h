/* A minimal unit-test harness: each test is a function; CN_CHECK records a
 * failure with file and line and keeps going; the program exits non-zero if
 * any check failed.  Output is TAP so meson shows each test. */
#ifndef CN_TEST_H
#define CN_TEST_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cn_test_failures;
static int cn_test_current_failed;
static const char *cn_test_current_skip;

/* Ends the calling test as a TAP skip with its reason ("ok N - name # SKIP
 * reason"): for a case that cannot hold in this configuration by design
 * (e.g. on PostgreSQL), never for one that merely fails.  The caller
 * returns right after; checks it made before still count. */
#define CN_SKIP(reason) (cn_test_current_skip = (reason))

#define CN_CHECK(cond)                                                                 \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "# %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            cn_test_failures++;                                                        \
            cn_test_current_failed = 1;                                                \
        }                                                                              \
    } while (0)

#define CN_CHECK_EQ(a, b)                                                                       \
    do {                                                                                        \
        long long cn__a = (long long)(a), cn__b = (long long)(b);                               \
        if (cn__a != cn__b) {                                                                   \
            fprintf(stderr, "# %s:%d: %s == %s failed: %lld != %lld\n", __FILE__, __LINE__, #a, \
                    #b, cn__a, cn__b);                                                          \
            cn_test_failures++;                                                                 \
            cn_test_current_failed = 1;                                                         \
        }                                                                                       \
    } while (0)

#define CN_CHECK_STR(a, b)                                                                      \
    do {                                                                                        \
        const char *cn__a = (a), *cn__b = (b);                                                  \
        if (!cn__a || !cn__b || strcmp(cn__a, cn__b) != 0) {                                    \
            fprintf(stderr, "# %s:%d: %s == %s failed: \"%s\" != \"%s\"\n", __FILE__, __LINE__, \
                    #a, #b, cn__a ? cn__a : "(null)", cn__b ? cn__b : "(null)");                \
            cn_test_failures++;                                                                 \
            cn_test_current_failed = 1;                                                         \
        }                                                                                       \
    } while (0)

#define CN_CHECK_MEM(a, b, n) CN_CHECK(memcmp((a), (b), (n)) == 0)

typedef struct {
    const char *name;
    void (*fn)(void);
} cn_test_case_t;

static inline int cn_test_run(const cn_test_case_t *cases, size_t n)
{
    printf("1..%zu\n", n);
    for (size_t i = 0; i < n; i++) {
        cn_test_current_failed = 0;
        cn_test_current_skip = NULL;
        cases[i].fn();
        if (cn_test_current_skip && !cn_test_current_failed)
            printf("ok %zu - %s # SKIP %s\n", i + 1, cases[i].name, cn_test_current_skip);
        else
            printf("%s %zu - %s\n", cn_test_current_failed ? "not ok" : "ok", i + 1, cases[i].name);
        fflush(stdout);
    }
    return cn_test_failures ? 1 : 0;
}

/* ---- temp dirs ------------------------------------------------------------------
 * A test's own directory: cn_test_tmpdir makes a new empty one named
 * /tmp/cn-<tag>-XXXXXX and returns its path (heap: free it), or NULL;
 * cn_test_rmtree removes a tree and everything in it (links not followed). */
static inline char *cn_test_tmpdir(const char *tag)
{
    char tmpl[128];
    snprintf(tmpl, sizeof tmpl, "/tmp/cn-%s-XXXXXX", tag);
    return mkdtemp(tmpl) ? strdup(tmpl) : NULL;
}

static inline int cn_test_rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

static inline void cn_test_rmtree(const char *dir)
{
    if (dir && nftw(dir, cn_test_rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
        fprintf(stderr, "# could not remove %s\n", dir);
}

#define CN_TEST(fn) \
    {               \
#fn, fn     \
    }
#define CN_TEST_MAIN(...)                                                      \
    int main(void)                                                             \
    {                                                                          \
        static const cn_test_case_t cn__cases[] = { __VA_ARGS__ };             \
        return cn_test_run(cn__cases, sizeof cn__cases / sizeof cn__cases[0]); \
    }

#endif
