/* libcairn's workspace verbs (include/cairn/workspace.h) against the real
 * cairnd, driven by tests/client/test_workspace_live.py, which starts the
 * server with its Scribe listener and passes CAIRN_SCRIBE_ENDPOINT and
 * CAIRN_TEST_DIR (an empty directory for the workspaces).
 *
 *   round trip  clone an empty repository, add files, status, submit, a
 *               second clone that sees them byte for byte, an edit
 *               submitted and synced into the second clone, log, describe;
 *   conflicts   a sync that would overwrite a local edit (local conflict,
 *               nothing written), a submit on a stale base (the server's
 *               conflict, naming the path);
 *   empty       a clone of an empty repository, then status, submit and
 *               sync with nothing to do (the scan over no files: run under
 *               ASan/UBSan);
 *   sparse      a clone of one prefix; a bad prefix is a usage error.
 *
 * Output is TAP; the exit status is non-zero if any check failed. */
#include "cn_test.h"

#include "cairn/scribe_client.h"
#include "cairn/workspace.h"

#include <errno.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *g_endpoint, *g_root;

/* ---- helpers ------------------------------------------------------------------ */
static const char *path_of(const char *dir, const char *rel)
{
    static char paths[8][1024];
    static unsigned next;
    char *p = paths[next++ % 8];
    snprintf(p, sizeof paths[0], "%s/%s%s%s", g_root, dir, rel ? "/" : "", rel ? rel : "");
    return p;
}

static void put_file(const char *dir, const char *rel, const void *data, size_t n)
{
    const char *p = path_of(dir, rel);
    const char *slash = strrchr(p, '/');
    char parent[1024];
    snprintf(parent, sizeof parent, "%.*s", (int)(slash - p), p);
    mkdir(parent, 0755);
    FILE *f = fopen(p, "wb");
    CN_CHECK(f != NULL);
    if (f) {
        CN_CHECK_EQ(fwrite(data, 1, n, f), n);
        fclose(f);
    }
}

/* Whether dir/rel holds exactly data[0..n). */
static bool file_is(const char *dir, const char *rel, const void *data, size_t n)
{
    FILE *f = fopen(path_of(dir, rel), "rb");
    if (!f)
        return false;
    uint8_t *buf = malloc(n + 1);
    size_t got = buf ? fread(buf, 1, n + 1, f) : 0;
    fclose(f);
    bool same = buf && got == n && memcmp(buf, data, n) == 0;
    free(buf);
    return same;
}

static uint8_t *pattern(size_t n, uint32_t seed)
{
    uint8_t *p = malloc(n);
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; p && i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (uint8_t)x;
    }
    return p;
}

static void create_repo(const char *name)
{
    cn_scribe_client_cfg_t cfg = { .endpoint = g_endpoint };
    cn_scribe_client_t *cl = NULL;
    cn_scribe_cerr_t err;
    cn_scribe_client_repo_t r;
    cn_err_t e = cn_scribe_client_new(&cfg, &cl, &err);
    if (e == CN_OK)
        e = cn_scribe_client_repo_create(cl, name, 0, &r, &err);
    if (e)
        fprintf(stderr, "# creating %s: %s %s\n", name, cn_strerror(e), err.message);
    CN_CHECK_EQ(e, CN_OK);
    cn_scribe_client_free(cl);
}

typedef struct progress_log {
    int starts, ends, moves;
    uint64_t last_done, total;
} progress_log_t;

static void on_progress(void *ctx, const char *what, uint64_t done, uint64_t total, bool end)
{
    progress_log_t *p = ctx;
    CN_CHECK(!strcmp(what, "uploading") || !strcmp(what, "fetching"));
    if (end)
        p->ends++;
    else if (!done)
        p->starts++;
    else
        p->moves++;
    p->last_done = done;
    p->total = total;
}

static cn_ws_opts_t opts(void)
{
    return (cn_ws_opts_t){ .endpoint = g_endpoint, .author = "tester" };
}

/* The status of dir as "K path;K path;..." ("" when clean). */
static const char *status_line(const char *dir)
{
    static char line[2048];
    line[0] = 0;
    cn_ws_status_t *st = NULL;
    cn_ws_error_t err;
    cn_ws_opts_t o = opts();
    if (cn_ws_status(path_of(dir, NULL), &o, &st, &err)) {
        fprintf(stderr, "# status %s: %s\n", dir, err.message);
        return "(failed)";
    }
    for (size_t i = 0; i < st->n; i++) {
        size_t l = strlen(line);
        snprintf(line + l, sizeof line - l, "%s%c %s", l ? ";" : "", st->entries[i].kind,
                 st->entries[i].path);
    }
    cn_ws_status_free(st);
    return line;
}

static int count_row(void *ctx, const cn_scribe_client_logrow_t *r)
{
    (void)r;
    ++*(int *)ctx;
    return 0;
}

/* ---- scenarios ---------------------------------------------------------------- */
static void test_round_trip(void)
{
    static const char readme[] = "a repository of large files\n", edit[] = "edited\n";
    size_t big_n = 700 << 10; /* several content-defined chunks */
    uint8_t *big = pattern(big_n, 7);
    create_repo("live");
    cn_ws_opts_t o = opts();
    cn_ws_sync_result_t res;
    cn_ws_error_t err;
    CN_CHECK_EQ(cn_ws_clone("live", path_of("a", NULL), &o, &res, &err), CN_OK);
    CN_CHECK_EQ(res.change, 0);
    CN_CHECK_EQ(res.fetched, 0);
    CN_CHECK(cn_ws_exists(path_of("a", NULL)));
    CN_CHECK_STR(status_line("a"), "");

    put_file("a", "README", readme, sizeof readme - 1);
    put_file("a", "assets/big.bin", big, big_n);
    CN_CHECK_STR(status_line("a"), "A README;A assets/big.bin");

    progress_log_t pl = { 0 };
    o.progress = on_progress;
    o.progress_ctx = &pl;
    cn_ws_submit_result_t sr;
    CN_CHECK_EQ(cn_ws_submit(path_of("a", NULL), "first import", &o, &sr, &err), CN_OK);
    CN_CHECK(!sr.nothing && !sr.settled);
    CN_CHECK_EQ(sr.change, 1);
    CN_CHECK_EQ(sr.paths, 2);
    CN_CHECK(sr.objects >= 5); /* >= 3 chunks, 2 manifests, the change set */
    CN_CHECK(sr.object_bytes >= big_n);
    CN_CHECK(sr.bytes_sent >= sr.object_bytes);
    CN_CHECK_EQ(pl.starts, 1);
    CN_CHECK_EQ(pl.ends, 1);
    CN_CHECK_EQ(pl.total, sr.object_bytes);
    CN_CHECK_EQ(pl.last_done, sr.object_bytes);
    CN_CHECK_STR(status_line("a"), "");
    CN_CHECK_EQ(cn_ws_submit(path_of("a", NULL), "again", &o, &sr, &err), CN_OK);
    CN_CHECK(sr.nothing);
    CN_CHECK_EQ(sr.change, 1);

    /* a second clone sees the change */
    CN_CHECK_EQ(cn_ws_clone("live", path_of("b", NULL), &o, &res, &err), CN_OK);
    CN_CHECK_EQ(res.change, 1);
    CN_CHECK_EQ(res.fetched, 2);
    CN_CHECK_EQ(res.bytes, big_n + sizeof readme - 1);
    CN_CHECK(file_is("b", "README", readme, sizeof readme - 1));
    CN_CHECK(file_is("b", "assets/big.bin", big, big_n));
    CN_CHECK_STR(status_line("b"), "");

    /* an edit travels from a to b */
    put_file("a", "README", edit, sizeof edit - 1);
    CN_CHECK_STR(status_line("a"), "M README");
    CN_CHECK_EQ(cn_ws_submit(path_of("a", NULL), "edit", &o, &sr, &err), CN_OK);
    CN_CHECK_EQ(sr.change, 2);
    CN_CHECK_EQ(sr.paths, 1);
    CN_CHECK_EQ(cn_ws_sync(path_of("b", NULL), &o, &res, &err), CN_OK);
    CN_CHECK(!res.up_to_date);
    CN_CHECK_EQ(res.change, 2);
    CN_CHECK_EQ(res.fetched, 1);
    CN_CHECK(file_is("b", "README", edit, sizeof edit - 1));
    CN_CHECK_EQ(cn_ws_sync(path_of("b", NULL), &o, &res, &err), CN_OK);
    CN_CHECK(res.up_to_date);
    CN_CHECK_EQ(res.change, 2);

    /* a deletion, too */
    CN_CHECK(unlink(path_of("a", "assets/big.bin")) == 0);
    CN_CHECK_STR(status_line("a"), "D assets/big.bin");
    CN_CHECK_EQ(cn_ws_submit(path_of("a", NULL), "drop", &o, &sr, &err), CN_OK);
    CN_CHECK_EQ(cn_ws_sync(path_of("b", NULL), &o, &res, &err), CN_OK);
    CN_CHECK_EQ(res.removed, 1);
    CN_CHECK(access(path_of("b", "assets/big.bin"), F_OK) != 0);

    int rows = 0;
    CN_CHECK_EQ(cn_ws_log(path_of("b", NULL), NULL, 0, &o, count_row, &rows, &err), CN_OK);
    CN_CHECK_EQ(rows, 3);
    rows = 0;
    CN_CHECK_EQ(cn_ws_log(path_of("b", NULL), "README", 0, &o, count_row, &rows, &err), CN_OK);
    CN_CHECK_EQ(rows, 2);
    uint32_t rev = 0;
    CN_CHECK_EQ(cn_ws_describe(path_of("b", NULL), 1, "the import", &o, &rev, &err), CN_OK);
    CN_CHECK_EQ(rev, 1);
    CN_CHECK_EQ(cn_ws_describe(path_of("a", NULL), 1, "the first import", &o, &rev, &err), CN_OK);
    CN_CHECK_EQ(rev, 2);
    free(big);
}

static void test_conflicts(void)
{
    static const char mine[] = "b's edit\n", theirs[] = "a's edit\n";
    cn_ws_opts_t o = opts();
    cn_ws_sync_result_t res;
    cn_ws_submit_result_t sr;
    cn_ws_error_t err;
    /* b edits README locally; a submits another edit of it */
    put_file("b", "README", mine, sizeof mine - 1);
    put_file("a", "README", theirs, sizeof theirs - 1);
    CN_CHECK_EQ(cn_ws_submit(path_of("a", NULL), "theirs", &o, &sr, &err), CN_OK);
    /* b's sync refuses to overwrite the local edit, and writes nothing */
    CN_CHECK_EQ(cn_ws_sync(path_of("b", NULL), &o, &res, &err), CN_E_CONFLICT);
    CN_CHECK(err.local);
    CN_CHECK(strstr(err.message, "README has local changes") != NULL);
    CN_CHECK(file_is("b", "README", mine, sizeof mine - 1));
    /* b's submit on its stale base: the server's conflict, naming the path */
    CN_CHECK_EQ(cn_ws_submit(path_of("b", NULL), "mine", &o, &sr, &err), CN_E_CONFLICT);
    CN_CHECK(!err.local);
    CN_CHECK(strstr(err.message, "submit rejected") != NULL);
    CN_CHECK(strstr(err.message, "README") != NULL);
    CN_CHECK_STR(status_line("b"), "M README");
}

static void test_empty_repository(void)
{
    create_repo("void");
    cn_ws_opts_t o = opts();
    cn_ws_sync_result_t res;
    cn_ws_error_t err;
    CN_CHECK_EQ(cn_ws_clone("void", path_of("e", NULL), &o, &res, &err), CN_OK);
    CN_CHECK_EQ(res.change, 0);
    CN_CHECK_STR(status_line("e"), "");
    cn_ws_submit_result_t sr;
    CN_CHECK_EQ(cn_ws_submit(path_of("e", NULL), "nothing", &o, &sr, &err), CN_OK);
    CN_CHECK(sr.nothing);
    CN_CHECK_EQ(cn_ws_sync(path_of("e", NULL), &o, &res, &err), CN_OK);
    CN_CHECK(res.up_to_date);
    /* a clone into a workspace that exists is refused, locally */
    CN_CHECK(cn_ws_clone("void", path_of("e", NULL), &o, &res, &err) == -EEXIST);
    CN_CHECK(err.local);
    /* a repository that does not exist: the server's not found */
    CN_CHECK_EQ(cn_ws_clone("absent", path_of("x", NULL), &o, &res, &err), CN_E_NOT_FOUND);
    CN_CHECK(!err.local);
}

static void test_sparse(void)
{
    static const char *const assets[] = { "assets" };
    static const char *const bad[] = { "../up" };
    cn_ws_opts_t o = opts();
    cn_ws_sync_result_t res;
    cn_ws_error_t err;
    /* change 2 of "live" holds README and assets/big.bin */
    o.has_change = true;
    o.change = 2;
    o.paths = assets;
    o.npaths = 1;
    CN_CHECK_EQ(cn_ws_clone("live", path_of("s", NULL), &o, &res, &err), CN_OK);
    CN_CHECK_EQ(res.fetched, 1);
    CN_CHECK(access(path_of("s", "assets/big.bin"), F_OK) == 0);
    CN_CHECK(access(path_of("s", "README"), F_OK) != 0);
    o.paths = bad;
    CN_CHECK_EQ(cn_ws_clone("live", path_of("t", NULL), &o, &res, &err), CN_E_INVALID);
    CN_CHECK(err.local);
    CN_CHECK(strstr(err.message, "--path ../up") != NULL);
}

int main(void)
{
    g_endpoint = getenv("CAIRN_SCRIBE_ENDPOINT");
    g_root = getenv("CAIRN_TEST_DIR");
    if (!g_endpoint || !g_root) {
        fprintf(stderr, "CAIRN_SCRIBE_ENDPOINT and CAIRN_TEST_DIR are required\n");
        return 2;
    }
    static const cn_test_case_t cases[] = {
        CN_TEST(test_round_trip),
        CN_TEST(test_conflicts),
        CN_TEST(test_empty_repository),
        CN_TEST(test_sparse),
    };
    return cn_test_run(cases, sizeof cases / sizeof cases[0]);
}
