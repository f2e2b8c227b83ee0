/* libcairn's workspace module (include/cairn/workspace.h) without a server:
 * status against hand-written states (an empty workspace, the regression of
 * the scan's bsearch over no files; added, modified, deleted and skipped
 * paths), the errors of a directory that is not a workspace, of a damaged
 * state and of an unreachable endpoint, each with its `local` class; the
 * BRANCH@N parser, the branch a state records (main for a state written
 * before branches) and finding the workspace that holds a directory.  The
 * verbs that need the server are driven by workspace_live.c
 * (test_workspace_live.py) and tests/cmd/test_repo_branch_cli.py. */
#include "cn_test.h"

#include "cairn/workspace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_root[256];

/* A fresh directory under the test's temporary root (its name stays valid
 * for the next seven calls). */
static const char *fresh_dir(const char *name)
{
    static char paths[8][512];
    static unsigned next;
    char *path = paths[next++ % 8];
    snprintf(path, sizeof paths[0], "%s/%s", g_root, name);
    CN_CHECK(mkdir(path, 0755) == 0);
    return path;
}

static void write_file(const char *dir, const char *rel, const char *fmt, ...)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    FILE *f = fopen(path, "w");
    CN_CHECK(f != NULL);
    if (!f)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fclose(f);
}

static const char zeros32[] = "00000000000000000000000000000000";

/* A state as a clone at change `change` of an empty repository writes it,
 * plus the given file lines. */
static void write_state(const char *dir, uint64_t change, const char *files)
{
    char cdir[600];
    snprintf(cdir, sizeof cdir, "%s/.cairn", dir);
    CN_CHECK(mkdir(cdir, 0700) == 0);
    write_file(dir, ".cairn/state",
               "cairn-workspace 1\nendpoint 127.0.0.1:1\nrepo r\nrepo_id %s\nbranch %s\n"
               "incarnation %s\nworkspace %s\nchange %llu\n%s",
               zeros32, zeros32, zeros32, zeros32, (unsigned long long)change, files);
}

static void test_status_of_an_empty_workspace(void)
{
    /* no tracked file and nothing on disk: the scan looks paths up in an
     * empty array, which must never reach bsearch as NULL (UBSan) */
    const char *dir = fresh_dir("empty");
    write_state(dir, 0, "");
    cn_ws_status_t *st = NULL;
    cn_ws_error_t err;
    CN_CHECK_EQ(cn_ws_status(dir, NULL, &st, &err), CN_OK);
    CN_CHECK(st != NULL);
    if (st) {
        CN_CHECK_EQ(st->n, 0);
        CN_CHECK_EQ(st->change, 0);
    }
    CN_CHECK_EQ(err.err, CN_OK);
    cn_ws_status_free(st);

    /* a first file in it is added */
    write_file(dir, "new.txt", "hello\n");
    CN_CHECK_EQ(cn_ws_status(dir, NULL, &st, &err), CN_OK);
    CN_CHECK(st && st->n == 1);
    if (st && st->n == 1) {
        CN_CHECK_EQ(st->entries[0].kind, 'A');
        CN_CHECK_STR(st->entries[0].path, "new.txt");
    }
    cn_ws_status_free(st);
}

static void notice_count(void *ctx, const char *path, const char *why)
{
    (void)path;
    (void)why;
    ++*(int *)ctx;
}

static void test_status_lists_every_kind(void)
{
    const char *dir = fresh_dir("kinds");
    /* tracked: gone.txt (not on disk), same.txt and edit.txt (on disk, with
     * sizes that differ from the record, so both are rehashed: the zero
     * manifest matches neither) */
    char files[1024];
    snprintf(files, sizeof files, "file 0 3 0 %s%s\tedit.txt\nfile 0 3 0 %s%s\tgone.txt\n", zeros32,
             zeros32, zeros32, zeros32);
    write_state(dir, 7, files);
    write_file(dir, "edit.txt", "changed content\n");
    fresh_dir("kinds/sub");
    write_file(dir, "sub/added.bin", "abc");
    write_file(dir, "bad\001name", "x"); /* a control character: skipped */
    write_file(dir, CN_WS_TMP_PREFIX "1-0", "a fetch's leftover"); /* ignored */
    int notices = 0;
    cn_ws_opts_t o = { .notice = notice_count, .notice_ctx = &notices };
    cn_ws_status_t *st = NULL;
    CN_CHECK_EQ(cn_ws_status(dir, &o, &st, NULL), CN_OK);
    CN_CHECK(st && st->n == 3);
    if (st && st->n == 3) {
        CN_CHECK_EQ(st->change, 7);
        CN_CHECK_EQ(st->entries[0].kind, 'M');
        CN_CHECK_STR(st->entries[0].path, "edit.txt");
        CN_CHECK_EQ(st->entries[1].kind, 'D');
        CN_CHECK_STR(st->entries[1].path, "gone.txt");
        CN_CHECK_EQ(st->entries[2].kind, 'A');
        CN_CHECK_STR(st->entries[2].path, "sub/added.bin");
    }
    CN_CHECK_EQ(notices, 1);
    cn_ws_status_free(st);
    cn_ws_status_free(NULL);
}

static void test_not_a_workspace(void)
{
    const char *dir = fresh_dir("plain");
    CN_CHECK(!cn_ws_exists(dir));
    cn_ws_status_t dummy, *st = &dummy; /* must be reset to NULL */
    cn_ws_error_t err;
    CN_CHECK_EQ(cn_ws_status(dir, NULL, &st, &err), -ENOENT);
    CN_CHECK(st == NULL);
    CN_CHECK_EQ(err.err, -ENOENT);
    CN_CHECK(err.local);
    CN_CHECK(strstr(err.message, "is not a workspace") != NULL);
    /* every verb that opens a workspace says the same, before any network */
    cn_ws_sync_result_t res;
    CN_CHECK_EQ(cn_ws_sync(dir, NULL, &res, &err), -ENOENT);
    CN_CHECK(err.local && !res.settled);
    cn_ws_submit_result_t sres;
    CN_CHECK_EQ(cn_ws_submit(dir, "m", NULL, &sres, &err), -ENOENT);
    CN_CHECK_EQ(cn_ws_describe(dir, 1, "t", NULL, NULL, NULL), -ENOENT);
}

static void test_damaged_state(void)
{
    const char *dir = fresh_dir("damaged");
    write_state(dir, 1, "file 1 x\tbroken\n");
    CN_CHECK(cn_ws_exists(dir));
    cn_ws_status_t *st = NULL;
    cn_ws_error_t err;
    CN_CHECK_EQ(cn_ws_status(dir, NULL, &st, &err), CN_E_CORRUPT);
    CN_CHECK(err.local);
    CN_CHECK(strstr(err.message, "damaged") != NULL);
    CN_CHECK(st == NULL);
}

static void test_unreachable_endpoint(void)
{
    /* the state names 127.0.0.1:1, where nothing listens: a network
     * failure, not a local one, and the state is left as it was */
    const char *dir = fresh_dir("unreachable");
    write_state(dir, 3, "");
    cn_ws_sync_result_t res;
    cn_ws_error_t err;
    cn_err_t e = cn_ws_sync(dir, NULL, &res, &err);
    CN_CHECK(e < 0);
    CN_CHECK_EQ(err.err, e);
    CN_CHECK(!err.local);
    CN_CHECK(strncmp(err.message, "connect: ", 9) == 0);
    /* a clone that cannot connect creates nothing */
    char target[600];
    snprintf(target, sizeof target, "%s/never", g_root);
    cn_ws_opts_t o = { .endpoint = "127.0.0.1:1" };
    CN_CHECK(cn_ws_clone("r", target, &o, &res, &err) < 0);
    CN_CHECK(!err.local);
    CN_CHECK(access(target, F_OK) != 0);
    cn_ws_status_t *st = NULL;
    CN_CHECK_EQ(cn_ws_status(dir, NULL, &st, NULL), CN_OK);
    CN_CHECK(st && st->change == 3);
    cn_ws_status_free(st);
}

static void test_branch_ref_parse(void)
{
    char name[CN_WS_BRANCH_NAME_MAX + 1];
    bool has = true;
    uint64_t change = 7;
    CN_CHECK_EQ(cn_ws_branch_ref_parse("main", name, &has, &change), CN_OK);
    CN_CHECK_STR(name, "main");
    CN_CHECK(!has);
    CN_CHECK_EQ(change, 0);
    CN_CHECK_EQ(cn_ws_branch_ref_parse("team/ui-rework.v2@120", name, &has, &change), CN_OK);
    CN_CHECK_STR(name, "team/ui-rework.v2");
    CN_CHECK(has);
    CN_CHECK_EQ(change, 120);
    CN_CHECK_EQ(cn_ws_branch_ref_parse("main@0", name, &has, &change), CN_OK);
    CN_CHECK(has && change == 0);
    CN_CHECK_EQ(cn_ws_branch_ref_parse("b@18446744073709551615", name, &has, &change), CN_OK);
    CN_CHECK(has && change == UINT64_MAX);
    /* a name of exactly 256 bytes, and one over */
    char longest[CN_WS_BRANCH_NAME_MAX + 8];
    memset(longest, 'n', CN_WS_BRANCH_NAME_MAX);
    strcpy(longest + CN_WS_BRANCH_NAME_MAX, "@3");
    CN_CHECK_EQ(cn_ws_branch_ref_parse(longest, name, &has, &change), CN_OK);
    CN_CHECK_EQ(strlen(name), CN_WS_BRANCH_NAME_MAX);
    CN_CHECK_EQ(change, 3);
    longest[CN_WS_BRANCH_NAME_MAX] = 'n';
    longest[CN_WS_BRANCH_NAME_MAX + 1] = 0;
    CN_CHECK_EQ(cn_ws_branch_ref_parse(longest, name, &has, &change), CN_E_INVALID);
    static const char *const bad[] = {
        "",        "@5",      "main@",       "main@-1",   "main@+1",
        "main@1x", "main@ 1", "main@1@2",    "main@0x10", "main@18446744073709551616",
        "-main",   "a//b",    "/a",          "a/",        ".hidden",
        "a/.b",    "a b",     "caf\xc3\xa9", "x@@1",      "a\tb",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        has = true;
        change = 9;
        CN_CHECK_EQ(cn_ws_branch_ref_parse(bad[i], name, &has, &change), CN_E_INVALID);
        CN_CHECK(!has);
    }
    CN_CHECK_EQ(cn_ws_branch_ref_parse(NULL, name, &has, &change), CN_E_INVALID);
}

static void test_state_branch(void)
{
    /* a state written before branches has no branch_name: it is on main */
    const char *dir = fresh_dir("old-state");
    write_state(dir, 2, "");
    cn_ws_status_t *st = NULL;
    CN_CHECK_EQ(cn_ws_status(dir, NULL, &st, NULL), CN_OK);
    CN_CHECK(st && st->change == 2);
    if (st)
        CN_CHECK_STR(st->branch, "main");
    cn_ws_status_free(st);
    /* a recorded branch and an unsettled branch operation load */
    dir = fresh_dir("on-branch");
    write_state(dir, 4,
                "branch_name team/ui\nbranch_op 0102030405060708090a0b0c0d0e0f10 "
                "1112131415161718191a1b1c1d1e1f20 "
                "2122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f40\n");
    st = NULL;
    CN_CHECK_EQ(cn_ws_status(dir, NULL, &st, NULL), CN_OK);
    if (st)
        CN_CHECK_STR(st->branch, "team/ui");
    cn_ws_status_free(st);
    /* an invalid branch name or a broken operation record is a damaged state */
    static const char *const broken[] = {
        "branch_name ../x\n",
        "branch_op 0102 1112 2122\n",
        "branch_op 0102030405060708090a0b0c0d0e0f10 1112131415161718191a1b1c1d1e1f20\n",
    };
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "broken-%zu", i);
        dir = fresh_dir(name);
        write_state(dir, 1, broken[i]);
        cn_ws_error_t err;
        st = NULL;
        CN_CHECK_EQ(cn_ws_status(dir, NULL, &st, &err), CN_E_CORRUPT);
        CN_CHECK(err.local && st == NULL);
    }
}

static void test_find_workspace(void)
{
    const char *dir = fresh_dir("holder");
    write_state(dir, 0, "");
    char sub[700], found[4096], expect[4096];
    snprintf(sub, sizeof sub, "%s/a", dir);
    CN_CHECK(mkdir(sub, 0755) == 0);
    snprintf(sub, sizeof sub, "%s/a/b", dir);
    CN_CHECK(mkdir(sub, 0755) == 0);
    CN_CHECK(realpath(dir, expect) != NULL);
    CN_CHECK_EQ(cn_ws_find(sub, found, sizeof found), CN_OK);
    CN_CHECK_STR(found, expect);
    CN_CHECK_EQ(cn_ws_find(dir, found, sizeof found), CN_OK);
    CN_CHECK_STR(found, expect);
    /* too small a buffer, a directory in no workspace, one that does not exist */
    CN_CHECK_EQ(cn_ws_find(sub, found, 4), -ENAMETOOLONG);
    CN_CHECK_EQ(cn_ws_find(fresh_dir("loose"), found, sizeof found), -ENOENT);
    snprintf(sub, sizeof sub, "%s/missing", g_root);
    CN_CHECK_EQ(cn_ws_find(sub, found, sizeof found), -ENOENT);
}

static void cleanup(void)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_root);
    if (system(cmd) != 0)
        fprintf(stderr, "# could not remove %s\n", g_root);
}

int main(void)
{
    snprintf(g_root, sizeof g_root, "%s/cn-test-workspace-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(g_root)) {
        perror("mkdtemp");
        return 1;
    }
    static const cn_test_case_t cases[] = {
        CN_TEST(test_status_of_an_empty_workspace),
        CN_TEST(test_status_lists_every_kind),
        CN_TEST(test_not_a_workspace),
        CN_TEST(test_damaged_state),
        CN_TEST(test_unreachable_endpoint),
        CN_TEST(test_branch_ref_parse),
        CN_TEST(test_state_branch),
        CN_TEST(test_find_workspace),
    };
    int rc = cn_test_run(cases, sizeof cases / sizeof cases[0]);
    cleanup();
    return rc;
}
