/* Unit tests of the repos service's merges over a real meta + store: the
 * merge base (merge_read 6) through branch origins and after a merge, the
 * chains of two histories (1), file states (2), unchanged paths (5), and
 * merge submits: two parents, base_mismatch and merge_incomplete unrecorded
 * (a corrected plan under the same operation id is accepted), the merge
 * parent in the log, and a repository below schema 3 refused. */
#include "cn_test.h"
#include "service_env.h"
#include "repos/service_int.h"

/* A repository with main: 1 (a.txt, b.txt, d/x), 3 (c.txt) and feature
 * from main at 1: 2 (a.txt modified). */
typedef struct fixture {
    env_t e;
    uint8_t main_id[16], feat[16];
    cn_digest_t m1, m2, m3;
} fixture_t;

static void fixture_open(fixture_t *f)
{
    env_open(&f->e);
    memcpy(f->main_id, f->e.repo.main_branch, 16);
    memset(f->feat, 0x50, 16);
    f->m1 = put_file(&f->e, "one");
    f->m2 = put_file(&f->e, "two");
    f->m3 = put_file(&f->e, "three");
    cn_repos_change_t first[3] = { ch(CN_REPOS_ADD, "a.txt", &f->m1),
                                   ch(CN_REPOS_ADD, "b.txt", &f->m1),
                                   ch(CN_REPOS_ADD, "d/x", &f->m1) };
    cn_repos_outcome_t o;
    CN_CHECK_EQ(submit_on(&f->e, f->main_id, 1, 0, first, 3, &o), 1);
    cn_repos_outcome_free(&o);
    cn_repos_branch_outcome_t bo;
    cn_repos_branch_mutate_t m = create_req(&f->e, 0x30, 0x50, "feature", f->main_id, 1);
    CN_CHECK_EQ(mutate(&f->e, &m, &bo, NULL), 0);
    cn_repos_change_t mod = ch(CN_REPOS_MODIFY, "a.txt", &f->m2);
    CN_CHECK_EQ(submit_on(&f->e, f->feat, 2, 1, &mod, 1, &o), 2);
    cn_repos_outcome_free(&o);
    cn_repos_change_t add = ch(CN_REPOS_ADD, "c.txt", &f->m3);
    CN_CHECK_EQ(submit_on(&f->e, f->main_id, 3, 1, &add, 1, &o), 3);
    cn_repos_outcome_free(&o);
}

static uint64_t base_of(fixture_t *f, const uint8_t t[16], uint64_t tr, const uint8_t s[16],
                        uint64_t sr, uint8_t branch[16])
{
    cn_repos_req_t rq = trusted();
    uint64_t base = 99;
    uint8_t scratch[16];
    CN_CHECK_EQ(cn_repos_find_merge_base(f->e.r, &rq, f->e.repo.id, t, tr, s, sr,
                                         branch ? branch : scratch, &base),
                0);
    return base;
}

/* A merge request of change set entries c[0..n) on main at target_head. */
static cn_repos_merge_t merge_req(fixture_t *f, uint8_t op, uint64_t target_head,
                                  uint64_t source_head, const uint8_t base_branch[16],
                                  uint64_t base, const cn_repos_change_t *c, uint32_t n,
                                  cn_digest_t *cs)
{
    cn_repos_merge_t m;
    memset(&m, 0, sizeof m);
    *cs = put_cs(&f->e, c, n);
    submit_req(&f->e, &m.submit, op, target_head, cs, "merge feature");
    memcpy(m.source, f->feat, 16);
    m.source_head = source_head;
    memcpy(m.base_branch, base_branch, 16);
    m.base = base;
    return m;
}

static cn_err_t merge(fixture_t *f, const cn_repos_merge_t *m, cn_repos_outcome_t *o,
                      cn_repos_req_t *rq)
{
    *rq = trusted();
    return cn_repos_merge_submit(f->e.r, rq, m, o);
}

static void test_base_and_submit(void)
{
    fixture_t f;
    fixture_open(&f);
    cn_repos_req_t rq;
    uint8_t bb[16];
    /* never merged: the fork point, on main */
    CN_CHECK_EQ(base_of(&f, f.main_id, 3, f.feat, 2, bb), 1);
    CN_CHECK_MEM(bb, f.main_id, 16);
    CN_CHECK_EQ(base_of(&f, f.feat, 2, f.main_id, 3, bb), 1);
    CN_CHECK_EQ(base_of(&f, f.feat, 1, f.main_id, 1, NULL), 1);
    rq = trusted();
    uint64_t base = 0;
    CN_CHECK_EQ(
        cn_repos_find_merge_base(f.e.r, &rq, f.e.repo.id, f.feat, 0, f.main_id, 3, bb, &base),
        CN_E_NOT_FOUND);
    CN_CHECK_EQ(rq.fail.detail, CN_REPOS_E_CHANGE_NOT_FOUND);

    /* a plan against another base, or missing a path the source changed:
     * refused, nothing recorded */
    cn_repos_change_t only_c = ch(CN_REPOS_MODIFY, "c.txt", &f.m1);
    cn_repos_change_t both[2] = { ch(CN_REPOS_MODIFY, "a.txt", &f.m2),
                                  ch(CN_REPOS_KEEP, "c.txt", NULL) };
    cn_digest_t cs;
    cn_repos_outcome_t o;
    cn_repos_merge_t m = merge_req(&f, 0x70, 3, 2, f.main_id, 0, both, 2, &cs);
    CN_CHECK_EQ(merge(&f, &m, &o, &rq), CN_E_CONFLICT);
    CN_CHECK_EQ(rq.fail.detail, CN_REPOS_E_BASE_MISMATCH);
    m = merge_req(&f, 0x70, 3, 2, f.main_id, 1, &only_c, 1, &cs);
    CN_CHECK_EQ(merge(&f, &m, &o, &rq), CN_E_CONFLICT);
    CN_CHECK_EQ(rq.fail.detail, CN_REPOS_E_MERGE_INCOMPLETE);
    CN_CHECK(strstr(rq.fail.message, "a.txt") != NULL);
    uint8_t kind = 9;
    cn_repos_branch_outcome_t bo;
    rq = trusted();
    CN_CHECK_EQ(
        cn_repos_operation_outcome(f.e.r, &rq, f.e.repo.id, m.submit.operation, &kind, &o, &bo), 0);
    CN_CHECK_EQ(kind, CN_REPOS_OP_UNKNOWN);
    /* unknown source, target head past the live head, malformed */
    m = merge_req(&f, 0x70, 3, 2, f.main_id, 1, both, 2, &cs);
    m.source[0] ^= 1;
    CN_CHECK_EQ(merge(&f, &m, &o, &rq), CN_E_NOT_FOUND);
    CN_CHECK_EQ(rq.fail.detail, CN_REPOS_E_BRANCH_NOT_FOUND);
    m = merge_req(&f, 0x70, 3, 3, f.main_id, 1, both, 2, &cs);
    CN_CHECK_EQ(merge(&f, &m, &o, &rq), CN_E_NOT_FOUND);
    CN_CHECK_EQ(rq.fail.detail, CN_REPOS_E_CHANGE_NOT_FOUND);
    m = merge_req(&f, 0x70, 3, 2, f.main_id, 1, both, 2, &cs);
    memcpy(m.source, f.main_id, 16);
    CN_CHECK_EQ(merge(&f, &m, &o, &rq), CN_E_INVALID);

    /* the corrected plan under the same operation id: accepted, two parents */
    m = merge_req(&f, 0x70, 3, 2, f.main_id, 1, both, 2, &cs);
    CN_CHECK_EQ(merge(&f, &m, &o, &rq), 0);
    CN_CHECK_EQ(o.outcome, CN_REPOS_ACCEPTED);
    CN_CHECK_EQ(o.change, 4);
    cn_repos_objref_t ref = { CN_REPOS_COMMIT, o.commit };
    cn_repos_obj_t got;
    cn_buf_t bytes = { 0 };
    rq = trusted();
    CN_CHECK_EQ(cn_repos_get_lookup(f.e.r, &rq, f.e.repo.id, &ref, 1, &got), 0);
    CN_CHECK_EQ(cn_repos_object_read(f.e.r, &got, 0, got.length, sink_buf, &bytes), 0);
    cn_repos_commit_t cm;
    CN_CHECK_EQ(cn_repos_commit_parse(bytes.data, bytes.len, &cm), 0);
    CN_CHECK_EQ(cm.parent_count, 2);
    cn_buf_free(&bytes);
    cn_repos_outcome_free(&o);
    /* a replay answers the recorded outcome; an ordinary submit under the
     * same id is another intent */
    CN_CHECK_EQ(merge(&f, &m, &o, &rq), 0);
    CN_CHECK_EQ(o.change, 4);
    cn_repos_outcome_free(&o);
    CN_CHECK_EQ(submit(&f.e, &m.submit, &o, NULL), CN_E_CONFLICT);
    /* the log carries the merge parent; feature's head merged is the next base */
    cn_buf_t log = { 0 };
    log_of(&f.e, f.main_id, NULL, &log);
    CN_CHECK_STR((const char *)log.data, "4/3+2/main 3/1/main 1/0/main ");
    cn_buf_free(&log);
    CN_CHECK_EQ(base_of(&f, f.main_id, 4, f.feat, 2, bb), 2);
    CN_CHECK_MEM(bb, f.feat, 16);
    /* feature moves on: the next merge must name only what changed since */
    cn_repos_change_t modb = ch(CN_REPOS_MODIFY, "b.txt", &f.m3);
    CN_CHECK_EQ(submit_on(&f.e, f.feat, 0x71, 2, &modb, 1, &o), 5);
    cn_repos_outcome_free(&o);
    m = merge_req(&f, 0x72, 4, 5, f.feat, 2, &modb, 1, &cs);
    CN_CHECK_EQ(merge(&f, &m, &o, &rq), 0);
    CN_CHECK_EQ(o.change, 6);
    cn_repos_outcome_free(&o);

    /* the file_lineage index: modifies follow the previous revision, adds
     * start anew, a merge's entries follow both sides, a keep writes none,
     * a move follows its source at both ends */
    CN_CHECK_STR(lineage_of(&f.e, 2, "a.txt"), "1:a.txt");
    CN_CHECK_STR(lineage_of(&f.e, 3, "c.txt"), "");
    CN_CHECK_STR(lineage_of(&f.e, 4, "a.txt"), "1:a.txt,2:a.txt");
    CN_CHECK_STR(lineage_of(&f.e, 4, "c.txt"), "");
    CN_CHECK_STR(lineage_of(&f.e, 5, "b.txt"), "1:b.txt");
    CN_CHECK_STR(lineage_of(&f.e, 6, "b.txt"), "1:b.txt,5:b.txt");
    cn_repos_change_t mv = ch(CN_REPOS_MOVE, "e.txt", &f.m3);
    mv.from = (const uint8_t *)"c.txt";
    mv.from_len = 5;
    CN_CHECK_EQ(submit_on(&f.e, f.main_id, 0x73, 6, &mv, 1, &o), 7);
    cn_repos_outcome_free(&o);
    CN_CHECK_STR(lineage_of(&f.e, 7, "e.txt"), "3:c.txt");
    CN_CHECK_STR(lineage_of(&f.e, 7, "c.txt"), "3:c.txt");
    env_close(&f.e);
}

static cn_err_t keep_path(void *ctx, const uint8_t *p, size_t n)
{
    cn_buf_append(ctx, p, n);
    cn_buf_append_str(ctx, ",");
    return 0;
}

static void chains(fixture_t *f, uint64_t *l, uint64_t *r, const char *cursor, cn_buf_t *paths,
                   cn_buf_t *next, bool *has)
{
    cn_repos_req_t rq = trusted();
    cn_buf_reset(paths);
    CN_CHECK_EQ(cn_repos_merge_chains(f->e.r, &rq, f->e.repo.id, l, r, (const uint8_t *)cursor,
                                      cursor ? strlen(cursor) : 0, next, has, keep_path, paths),
                0);
    cn_buf_append(paths, "", 1);
}

static void test_reads(void)
{
    fixture_t f;
    fixture_open(&f);
    cn_buf_t paths = { 0 }, next = { 0 };
    bool has = true;
    uint64_t l = 3, r = 2;
    chains(&f, &l, &r, NULL, &paths, &next, &has);
    CN_CHECK_STR((const char *)paths.data, "c.txt,a.txt,");
    CN_CHECK(l == 1 && r == 1 && !has);
    l = 3;
    r = 0;
    chains(&f, &l, &r, NULL, &paths, &next, &has);
    CN_CHECK_STR((const char *)paths.data, "c.txt,a.txt,b.txt,d/x,");
    CN_CHECK(l == 0 && r == 0);
    l = 1;
    r = 0;
    chains(&f, &l, &r, "a.txt", &paths, &next, &has); /* continuing inside change 1 */
    CN_CHECK_STR((const char *)paths.data, "b.txt,d/x,");
    cn_repos_req_t rq = trusted();
    l = 9;
    CN_CHECK_EQ(cn_repos_merge_chains(f.e.r, &rq, f.e.repo.id, &l, &r, NULL, 0, &next, &has,
                                      keep_path, &paths),
                CN_E_NOT_FOUND);
    CN_CHECK_EQ(rq.fail.detail, CN_REPOS_E_CHANGE_NOT_FOUND);

    /* file states on feature at 2 */
    cn_repos_pathv_t pv[3] = { { (const uint8_t *)"a.txt", 5 },
                               { (const uint8_t *)"b.txt", 5 },
                               { (const uint8_t *)"zz", 2 } };
    bool present[3];
    cn_repos_entry_t st[3];
    rq = trusted();
    CN_CHECK_EQ(cn_repos_file_states(f.e.r, &rq, f.e.repo.id, f.feat, 2, pv, 3, present, st), 0);
    CN_CHECK(present[0] && st[0].state == CN_REPOS_LIVE && st[0].change == 2);
    CN_CHECK_MEM(st[0].manifest.b, f.m2.b, 32);
    CN_CHECK(present[1] && st[1].change == 1 && !present[2]);
    cn_repos_pathv_t badp = { (const uint8_t *)"/x", 2 };
    CN_CHECK_EQ(cn_repos_file_states(f.e.r, &rq, f.e.repo.id, f.feat, 2, &badp, 1, present, st),
                CN_E_INVALID);

    /* unchanged: main 1 -> 3 changed c.txt only */
    static const char *const cases[][2] = {
        { "c.txt", "0" }, { "C.TXT", "0" }, { "c.txt/y", "0" }, { "b.txt", "1" }, { "d", "1" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cn_repos_pathv_t p = { (const uint8_t *)cases[i][0], strlen(cases[i][0]) };
        bool same = false;
        rq = trusted();
        CN_CHECK_EQ(
            cn_repos_paths_unchanged(f.e.r, &rq, f.e.repo.id, f.main_id, 1, 3, &p, 1, &same), 0);
        if (same != (cases[i][1][0] == '1'))
            fprintf(stderr, "# unchanged(%s) = %d\n", cases[i][0], same);
        CN_CHECK_EQ(same, cases[i][1][0] == '1');
    }
    /* a directory whose file changed; a later "from" is not an ancestor */
    cn_repos_change_t dx = ch(CN_REPOS_DELETE, "d/x", NULL);
    cn_repos_outcome_t o;
    CN_CHECK_EQ(submit_on(&f.e, f.main_id, 4, 3, &dx, 1, &o), 4);
    cn_repos_outcome_free(&o);
    cn_repos_pathv_t d = { (const uint8_t *)"d", 1 };
    bool same = true;
    CN_CHECK_EQ(cn_repos_paths_unchanged(f.e.r, &rq, f.e.repo.id, f.main_id, 3, 4, &d, 1, &same),
                0);
    CN_CHECK(!same);
    CN_CHECK_EQ(
        cn_repos_paths_unchanged(f.e.r, &rq, f.e.repo.id, f.main_id, 4, 3, &pv[1], 1, &same), 0);
    CN_CHECK(!same);
    CN_CHECK_EQ(cn_repos_paths_unchanged(f.e.r, &rq, f.e.repo.id, f.feat, 0, 2, &pv[1], 1, &same),
                CN_E_NOT_FOUND);
    cn_buf_free(&paths);
    cn_buf_free(&next);
    env_close(&f.e);
}

/* The origins of one path of branch at rev against main at base_rev: "-"
 * none, "*" several, else the base path. */
static const char *origin_of(fixture_t *f, const uint8_t branch[16], uint64_t rev,
                             uint64_t base_rev, const char *path)
{
    static char out[256];
    cn_repos_req_t rq = trusted();
    cn_repos_pathv_t p = { (const uint8_t *)path, strlen(path) };
    cn_repos_origin_t o;
    cn_buf_t arena = { 0 };
    CN_CHECK_EQ(cn_repos_merge_origins(f->e.r, &rq, f->e.repo.id, branch, rev, f->main_id, base_rev,
                                       &p, 1, &o, &arena),
                0);
    if (o.kind == CN_REPOS_ORIGIN_UNIQUE)
        snprintf(out, sizeof out, "%.*s", (int)o.len, (const char *)arena.data + o.off);
    else
        snprintf(out, sizeof out, "%s", o.kind == CN_REPOS_ORIGIN_SEVERAL ? "*" : "-");
    cn_buf_free(&arena);
    return out;
}

static cn_repos_change_t move_of(const char *to, const char *from, const cn_digest_t *m)
{
    cn_repos_change_t c = ch(CN_REPOS_MOVE, to, m);
    c.from = (const uint8_t *)from;
    c.from_len = (uint16_t)strlen(from);
    return c;
}

static void test_origins(void)
{
    fixture_t f;
    fixture_open(&f);
    cn_repos_outcome_t o;
    /* a revision the base holds, its successor, an add, a path never held */
    CN_CHECK_STR(origin_of(&f, f.feat, 2, 1, "a.txt"), "a.txt");
    CN_CHECK_STR(origin_of(&f, f.feat, 2, 1, "b.txt"), "b.txt");
    CN_CHECK_STR(origin_of(&f, f.main_id, 3, 1, "c.txt"), "-");
    CN_CHECK_STR(origin_of(&f, f.main_id, 3, 1, "zz"), "-");
    /* main changes a.txt after the fork: found forward, inside the base */
    cn_repos_change_t moda = ch(CN_REPOS_MODIFY, "a.txt", &f.m3);
    CN_CHECK_EQ(submit_on(&f.e, f.main_id, 0x40, 3, &moda, 1, &o), 4);
    cn_repos_outcome_free(&o);
    CN_CHECK_STR(origin_of(&f, f.feat, 2, 4, "a.txt"), "a.txt");
    /* moves on both sides into x.txt: from a.txt on feature, b.txt on main */
    cn_repos_change_t mv = move_of("x.txt", "a.txt", &f.m2);
    CN_CHECK_EQ(submit_on(&f.e, f.feat, 0x41, 2, &mv, 1, &o), 5);
    cn_repos_outcome_free(&o);
    CN_CHECK_STR(origin_of(&f, f.feat, 5, 4, "x.txt"), "a.txt");
    mv = move_of("x.txt", "b.txt", &f.m1);
    CN_CHECK_EQ(submit_on(&f.e, f.main_id, 0x42, 4, &mv, 1, &o), 6);
    cn_repos_outcome_free(&o);
    CN_CHECK_STR(origin_of(&f, f.main_id, 6, 1, "x.txt"), "b.txt");
    /* the merge joins them: two base files, automatic matching is unsafe */
    cn_repos_change_t joined[2] = { ch(CN_REPOS_DELETE, "a.txt", NULL),
                                    ch(CN_REPOS_MODIFY, "x.txt", &f.m3) };
    cn_digest_t cs;
    cn_repos_req_t rq;
    cn_repos_merge_t m = merge_req(&f, 0x43, 6, 5, f.main_id, 1, joined, 2, &cs);
    CN_CHECK_EQ(merge(&f, &m, &o, &rq), 0);
    CN_CHECK_EQ(o.change, 7);
    cn_repos_outcome_free(&o);
    CN_CHECK_STR(origin_of(&f, f.main_id, 7, 1, "x.txt"), "*");
    /* a base revision outside main's lifetime */
    rq = trusted();
    cn_repos_pathv_t p = { (const uint8_t *)"x.txt", 5 };
    cn_repos_origin_t out;
    cn_buf_t arena = { 0 };
    CN_CHECK_EQ(cn_repos_merge_origins(f.e.r, &rq, f.e.repo.id, f.main_id, 7, f.feat, 0, &p, 1,
                                       &out, &arena),
                CN_E_NOT_FOUND);
    cn_buf_free(&arena);
    env_close(&f.e);
}

static cn_err_t downgrade(cn_meta_txn_t *txn, void *ctx)
{
    const uint8_t *id = ctx;
    cn_err_t err = cn_meta_execf(txn, "UPDATE repos_repo SET schema = 2 WHERE id = ?", "b",
                                 (const void *)id, (size_t)16);
    return err < 0 ? err : CN_OK;
}

static void test_schema_outdated(void)
{
    fixture_t f;
    fixture_open(&f);
    CN_CHECK_EQ(cn_meta_run(f.e.meta, CN_META_RUN_WRITE, downgrade, f.e.repo.id), 0);
    cn_repos_req_t rq = trusted();
    uint8_t bb[16];
    uint64_t base = 0;
    CN_CHECK_EQ(
        cn_repos_find_merge_base(f.e.r, &rq, f.e.repo.id, f.main_id, 3, f.feat, 2, bb, &base),
        CN_E_UNSUPPORTED);
    CN_CHECK_EQ(rq.fail.detail, CN_REPOS_E_SCHEMA_OUTDATED);
    cn_repos_change_t both[2] = { ch(CN_REPOS_MODIFY, "a.txt", &f.m2),
                                  ch(CN_REPOS_KEEP, "c.txt", NULL) };
    cn_digest_t cs;
    cn_repos_outcome_t o;
    cn_repos_merge_t m = merge_req(&f, 0x70, 3, 2, f.main_id, 1, both, 2, &cs);
    CN_CHECK_EQ(merge(&f, &m, &o, &rq), CN_E_UNSUPPORTED);
    CN_CHECK_EQ(rq.fail.detail, CN_REPOS_E_SCHEMA_OUTDATED);
    env_close(&f.e);
}

CN_TEST_MAIN(CN_TEST(test_base_and_submit), CN_TEST(test_reads), CN_TEST(test_origins),
             CN_TEST(test_schema_outdated))
