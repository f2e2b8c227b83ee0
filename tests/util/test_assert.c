/* CN_ALWAYS / CN_NEVER (cairn/err.h): in a build without NDEBUG a violated
 * condition aborts the process and names its file and line; under NDEBUG the
 * code's own handling of the impossible branch runs instead.  A condition
 * that holds yields 1 (CN_ALWAYS) or 0 (CN_NEVER) and evaluates once.  Each
 * violation runs in a forked child whose stderr is captured, so the test
 * itself survives it. */
#include "cairn/err.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cn_test.h"

static volatile int zero = 0; /* volatile: the compiler may not fold the conditions */

/* Exit status 4: the impossible branch was taken and handled. */
static const int always_line = __LINE__ + 3; /* the line of the check below */
static void violate_always(void)
{
    if (CN_ALWAYS(zero))
        _exit(3);
    _exit(4);
}
static const int never_line = __LINE__ + 3; /* the line of the check below */
static void violate_never(void)
{
    if (CN_NEVER(zero + 1))
        _exit(4);
    _exit(3);
}

/* Runs fn in a child; returns its wait status, and what it wrote to stderr in
 * err (NUL-terminated). */
static int in_child(void (*fn)(void), char *err, size_t errlen)
{
    int p[2];
    if (pipe(p) != 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        dup2(p[1], 2);
        fn();
        _exit(0);
    }
    close(p[1]);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < errlen && (r = read(p[0], err + n, errlen - 1 - n)) > 0)
        n += (size_t)r;
    err[n] = 0;
    close(p[0]);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return status;
}

/* fn dies of SIGABRT and its last words are "test_assert.c:<line>: <what>
 * failed"; under NDEBUG it handles the branch and exits with status 4. */
static void check_aborts(void (*fn)(void), int line, const char *what)
{
    char err[1024];
    int status = in_child(fn, err, sizeof err);
#ifdef NDEBUG
    (void)line;
    (void)what;
    CN_CHECK(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 4);
#else
    CN_CHECK(status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    char want[128];
    snprintf(want, sizeof want, "test_assert.c:%d: %s failed", line, what);
    if (!strstr(err, want))
        fprintf(stderr, "# wanted \"%s\" in \"%s\"\n", want, err);
    CN_CHECK(strstr(err, want) != NULL);
#endif
}

static void test_always_aborts(void)
{
    check_aborts(violate_always, always_line, "CN_ALWAYS(zero)");
}

static void test_never_aborts(void)
{
    check_aborts(violate_never, never_line, "CN_NEVER(zero + 1)");
}

static void test_holding_conditions(void)
{
    int n = 0;
    CN_CHECK_EQ(CN_ALWAYS(++n == 1), 1);
    CN_CHECK_EQ(CN_NEVER(++n == 3), 0);
    CN_CHECK_EQ(n, 2);
    int *volatile pn = &n;
    CN_CHECK_EQ(CN_ALWAYS(pn), 1); /* a pointer is a condition too */
}

CN_TEST_MAIN(CN_TEST(test_always_aborts), CN_TEST(test_never_aborts),
             CN_TEST(test_holding_conditions))
