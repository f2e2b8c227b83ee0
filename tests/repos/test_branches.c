/* Unit tests of the repos service's branches over a real meta + store: the
 * name rule, create / rename with operation identity (replay, changed
 * intent, an older incarnation, recorded name refusals), list and info,
 * branch_outcome and operation_outcome, snapshots and submits through
 * branch origins (first parent, the case-fold index of a new branch), the
 * log's inherited history, lifetimes, and a backup restored with the
 * branch table and its recorded outcomes. */
#include "cn_test.h"
#include "service_env.h"
#include "repos/service_int.h"

#include <fcntl.h>

/* ---- tests ----------------------------------------------------------------------------- */
static void test_names_and_fingerprints(void)
{
    static const char *good[] = { "main", "feature/ui", "v1.2", "a_b-c", "A" };
    static const char *bad[] = { "", "-x", "/a", "a/", "a//b", ".a", "a/.b", "a b", "a@1", "é" };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        CN_CHECK(cn_repos_branch_name_ok(good[i], strlen(good[i])));
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CN_CHECK(!cn_repos_branch_name_ok(bad[i], strlen(bad[i])));
    char longest[258];
    memset(longest, 'a', sizeof longest);
    CN_CHECK(cn_repos_branch_name_ok(longest, 256));
    CN_CHECK(!cn_repos_branch_name_ok(longest, 257));

    /* The documented fixtures (docs/protocol/scribe.md 9.6). */
    cn_repos_branch_mutate_t m;
    memset(&m, 0, sizeof m);
    for (int i = 0; i < 16; i++) {
        m.repo[i] = (uint8_t)i;
        m.incarnation[i] = (uint8_t)(0x20 + i);
        m.operation[i] = (uint8_t)(0x30 + i);
        m.branch[i] = (uint8_t)(0x50 + i);
        m.source[i] = (uint8_t)(0x10 + i);
    }
    m.name = "feature";
    m.name_len = 7;
    m.action = CN_REPOS_BRANCH_CREATE;
    m.source_change = 5;
    cn_digest_t fp;
    char hex[65];
    cn_repos_branch_fp(&m, &fp);
    cn_digest_hex(&fp, hex);
    CN_CHECK_STR(hex, "32306a5bd842978cb9ad8097bb7e96ed654e36d52b29db038ab6725f58a31d7e");
    m.action = CN_REPOS_BRANCH_RENAME;
    m.name = "feature/ui";
    m.name_len = 10;
    m.expected = "feature";
    m.expected_len = 7;
    memset(m.operation, 0x60, 16); /* not intent */
    cn_repos_branch_fp(&m, &fp);
    cn_digest_hex(&fp, hex);
    CN_CHECK_STR(hex, "fd583806cbf804cdac5e02be5ffb22897efccf6f94da4fdc92e52cbec79a9192");
}

static void test_create_rename_identity(void)
{
    env_t e;
    env_open(&e);
    const uint8_t *main_id = e.repo.main_branch;
    cn_repos_branch_outcome_t o, o2;
    uint16_t code = 0;
    /* create feature from main at 0 */
    cn_repos_branch_mutate_t m = create_req(&e, 0x30, 0x50, "feature", main_id, 0);
    CN_CHECK_EQ(mutate(&e, &m, &o, NULL), 0);
    CN_CHECK_EQ(o.outcome, CN_REPOS_ACCEPTED);
    CN_CHECK_STR(o.branch.name, "feature");
    CN_CHECK(o.branch.has_origin && memcmp(o.branch.origin, main_id, 16) == 0);
    CN_CHECK_EQ(o.branch.head, 0);
    CN_CHECK(o.branch.created_ms > 0);
    int64_t created_ms = o.branch.created_ms;
    /* the same operation replays the same outcome, created ms included */
    CN_CHECK_EQ(mutate(&e, &m, &o2, NULL), 0);
    CN_CHECK_MEM(&o2, &o, sizeof o);
    /* a changed intent under the same id, and a changed incarnation, are refused */
    m.name = "feature2";
    m.name_len = 8;
    CN_CHECK_EQ(mutate(&e, &m, &o2, &code), CN_E_CONFLICT);
    CN_CHECK_EQ(code, CN_REPOS_E_OPERATION_INTENT_MISMATCH);
    m = create_req(&e, 0x30, 0x50, "feature", main_id, 0);
    m.incarnation[0] ^= 1;
    CN_CHECK_EQ(mutate(&e, &m, &o2, &code), CN_E_CONFLICT);
    CN_CHECK_EQ(code, CN_REPOS_E_OPERATION_INTENT_MISMATCH);
    /* a new operation from an older incarnation: refused, nothing recorded */
    m = create_req(&e, 0x31, 0x51, "other", main_id, 0);
    m.incarnation[0] ^= 1;
    CN_CHECK_EQ(mutate(&e, &m, &o2, &code), CN_E_CONFLICT);
    CN_CHECK_EQ(code, CN_REPOS_E_INCARNATION_MISMATCH);
    cn_repos_req_t rq = trusted();
    bool known = true;
    CN_CHECK_EQ(cn_repos_branch_outcome(e.r, &rq, e.repo.id, m.operation, &known, &o2), 0);
    CN_CHECK(!known);
    CN_CHECK_EQ(info_of(&e, m.branch, NULL, &o2.branch, &code), CN_E_NOT_FOUND);
    CN_CHECK_EQ(code, CN_REPOS_E_BRANCH_NOT_FOUND);
    /* a name taken ignoring case is a recorded rejection; so is an id in use */
    m = create_req(&e, 0x32, 0x52, "FEATURE", main_id, 0);
    CN_CHECK_EQ(mutate(&e, &m, &o2, NULL), 0);
    CN_CHECK(o2.outcome == CN_REPOS_REJECTED && o2.code == CN_REPOS_E_BRANCH_EXISTS);
    CN_CHECK_EQ(cn_repos_branch_outcome(e.r, &rq, e.repo.id, m.operation, &known, &o), 0);
    CN_CHECK(known && o.outcome == CN_REPOS_REJECTED && o.code == CN_REPOS_E_BRANCH_EXISTS);
    m = create_req(&e, 0x33, 0x50, "fresh", main_id, 0);
    CN_CHECK_EQ(mutate(&e, &m, &o2, NULL), 0);
    CN_CHECK(o2.outcome == CN_REPOS_REJECTED && o2.code == CN_REPOS_E_BRANCH_EXISTS);
    /* unknown source; source change outside its lifetime; malformed names */
    uint8_t nowhere[16];
    memset(nowhere, 0x99, 16);
    m = create_req(&e, 0x34, 0x54, "x", nowhere, 0);
    CN_CHECK_EQ(mutate(&e, &m, &o2, &code), CN_E_NOT_FOUND);
    CN_CHECK_EQ(code, CN_REPOS_E_BRANCH_NOT_FOUND);
    m = create_req(&e, 0x34, 0x54, "x", main_id, 1);
    CN_CHECK_EQ(mutate(&e, &m, &o2, &code), CN_E_NOT_FOUND);
    CN_CHECK_EQ(code, CN_REPOS_E_CHANGE_NOT_FOUND);
    m = create_req(&e, 0x34, 0x54, "a//b", main_id, 0);
    CN_CHECK_EQ(mutate(&e, &m, &o2, &code), CN_E_INVALID);
    CN_CHECK_EQ(code, CN_REPOS_E_MALFORMED);
    CN_CHECK_EQ(cn_repos_branch_outcome(e.r, &rq, e.repo.id, m.operation, &known, &o2), 0);
    CN_CHECK(!known);

    /* rename: a stale expected name, a taken name, then a case variant of its own */
    uint8_t feat[16];
    memset(feat, 0x50, 16);
    m = rename_req(&e, 0x40, feat, "feature/ui", "feat");
    CN_CHECK_EQ(mutate(&e, &m, &o2, NULL), 0);
    CN_CHECK(o2.outcome == CN_REPOS_REJECTED && o2.code == CN_REPOS_E_NAME_MISMATCH);
    m = rename_req(&e, 0x41, feat, "MAIN", "feature");
    CN_CHECK_EQ(mutate(&e, &m, &o2, NULL), 0);
    CN_CHECK(o2.outcome == CN_REPOS_REJECTED && o2.code == CN_REPOS_E_BRANCH_EXISTS);
    m = rename_req(&e, 0x42, feat, "Feature", "feature");
    CN_CHECK_EQ(mutate(&e, &m, &o2, NULL), 0);
    CN_CHECK(o2.outcome == CN_REPOS_ACCEPTED);
    CN_CHECK_STR(o2.branch.name, "Feature");
    CN_CHECK_EQ(o2.branch.created_ms, created_ms);
    m = rename_req(&e, 0x43, nowhere, "y", "x");
    CN_CHECK_EQ(mutate(&e, &m, &o2, &code), CN_E_NOT_FOUND);
    CN_CHECK_EQ(code, CN_REPOS_E_BRANCH_NOT_FOUND);
    /* names match byte for byte; the old name is free at once, and gone
     * from the list */
    cn_repos_branch_t b;
    CN_CHECK_EQ(info_of(&e, NULL, "feature", &b, &code), CN_E_NOT_FOUND);
    CN_CHECK_EQ(code, CN_REPOS_E_BRANCH_NOT_FOUND);
    CN_CHECK_EQ(info_of(&e, NULL, "Feature", &b, NULL), 0);
    CN_CHECK_MEM(b.id, feat, 16);
    m = rename_req(&e, 0x45, feat, "feature/ui", "Feature");
    CN_CHECK_EQ(mutate(&e, &m, &o2, NULL), 0);
    CN_CHECK(o2.outcome == CN_REPOS_ACCEPTED);
    CN_CHECK_EQ(info_of(&e, NULL, "Feature", &b, &code), CN_E_NOT_FOUND);
    CN_CHECK_EQ(info_of(&e, main_id, NULL, &b, NULL), 0);
    CN_CHECK_STR(b.name, "main");
    CN_CHECK(!b.has_origin);
    CN_CHECK_EQ(b.created_ms, e.repo.created_ms);
    m = create_req(&e, 0x44, 0x55, "feature", main_id, 0);
    CN_CHECK_EQ(mutate(&e, &m, &o2, NULL), 0);
    CN_CHECK(o2.outcome == CN_REPOS_ACCEPTED);
    cn_buf_t names = { 0 };
    bool more = false;
    list_names(&e, NULL, 10, &names, &more);
    CN_CHECK_STR((const char *)names.data, "feature,feature/ui,main,");
    CN_CHECK(!more);
    list_names(&e, NULL, 2, &names, &more);
    CN_CHECK_STR((const char *)names.data, "feature,feature/ui,");
    CN_CHECK(more);
    list_names(&e, "feature/ui", 2, &names, &more);
    CN_CHECK_STR((const char *)names.data, "main,");
    CN_CHECK(!more);
    cn_buf_free(&names);

    /* operation ids are one namespace: a branch id reused by a submit and a
     * submit's id asked as a branch outcome are other intents */
    cn_repos_outcome_t so;
    uint8_t kind = 0;
    CN_CHECK_EQ(cn_repos_operation_outcome(e.r, &rq, e.repo.id, m.operation, &kind, &so, &o2), 0);
    CN_CHECK_EQ(kind, CN_REPOS_OP_BRANCH);
    CN_CHECK(o2.outcome == CN_REPOS_ACCEPTED && memcmp(o2.branch.id, m.branch, 16) == 0);
    cn_digest_t mf = put_file(&e, "x");
    cn_repos_change_t c = ch(CN_REPOS_ADD, "x", &mf);
    cn_digest_t cs = put_cs(&e, &c, 1);
    cn_repos_submit_t s;
    submit_req(&e, &s, 0x44, 0, &cs, "reuse");
    CN_CHECK_EQ(submit(&e, &s, &so, &code), CN_E_CONFLICT);
    CN_CHECK_EQ(code, CN_REPOS_E_OPERATION_INTENT_MISMATCH);
    submit_req(&e, &s, 0x46, 0, &cs, "fine");
    CN_CHECK_EQ(submit(&e, &s, &so, NULL), 0);
    cn_repos_outcome_free(&so);
    CN_CHECK_EQ(cn_repos_branch_outcome(e.r, &rq, e.repo.id, s.operation, &known, &o2),
                CN_E_CONFLICT);
    CN_CHECK_EQ(rq.fail.detail, CN_REPOS_E_OPERATION_INTENT_MISMATCH);
    env_close(&e);
}

static void test_submits_through_origins(void)
{
    env_t e;
    env_open(&e);
    const uint8_t *main_id = e.repo.main_branch;
    cn_digest_t m1 = put_file(&e, "one"), m2 = put_file(&e, "two");
    cn_repos_outcome_t o;
    cn_repos_change_t a = ch(CN_REPOS_ADD, "a.txt", &m1), b = ch(CN_REPOS_ADD, "b.txt", &m1);
    CN_CHECK_EQ(submit_on(&e, main_id, 1, 0, &a, 1, &o), 1);
    cn_repos_outcome_free(&o);
    CN_CHECK_EQ(submit_on(&e, main_id, 2, 1, &b, 1, &o), 2);
    cn_digest_t commit2 = o.commit;
    cn_repos_outcome_free(&o);
    /* "old" from main at 1 (its fold index from the snapshot), "new" from
     * main at its head 2 (copied from main's) */
    cn_repos_branch_outcome_t bo;
    uint8_t old_id[16], new_id[16];
    memset(old_id, 0x60, 16);
    memset(new_id, 0x61, 16);
    cn_repos_branch_mutate_t m = create_req(&e, 0x60, 0x60, "old", main_id, 1);
    CN_CHECK_EQ(mutate(&e, &m, &bo, NULL), 0);
    CN_CHECK(bo.outcome == CN_REPOS_ACCEPTED && bo.branch.head == 1);
    m = create_req(&e, 0x61, 0x61, "new", main_id, 2);
    CN_CHECK_EQ(mutate(&e, &m, &bo, NULL), 0);
    CN_CHECK(bo.outcome == CN_REPOS_ACCEPTED && bo.branch.head == 2);
    CN_CHECK_EQ(tree_count(&e, old_id, 1, NULL), 1);
    CN_CHECK_EQ(tree_count(&e, new_id, 2, NULL), 2);
    uint16_t code = 0;
    CN_CHECK_EQ(tree_count(&e, old_id, 0, &code), -1); /* before its lifetime */
    CN_CHECK_EQ(code, CN_REPOS_E_CHANGE_NOT_FOUND);

    /* Case-fold aliases through the copied index: "A.TXT" clashes on both,
     * "B.TXT" only where b.txt is in the snapshot. */
    cn_repos_change_t up_a = ch(CN_REPOS_ADD, "A.TXT", &m2), up_b = ch(CN_REPOS_ADD, "B.TXT", &m2);
    CN_CHECK_EQ(submit_on(&e, old_id, 3, 1, &up_a, 1, &o), 0);
    CN_CHECK_EQ(o.code, CN_REPOS_E_PATH_CONFLICT);
    cn_repos_outcome_free(&o);
    CN_CHECK_EQ(submit_on(&e, new_id, 4, 2, &up_b, 1, &o), 0);
    CN_CHECK_EQ(o.code, CN_REPOS_E_PATH_CONFLICT);
    cn_repos_outcome_free(&o);
    CN_CHECK_EQ(submit_on(&e, old_id, 5, 1, &up_b, 1, &o), 3);
    cn_repos_outcome_free(&o);
    /* new's first commit has main's change 2 as its first parent */
    cn_repos_change_t mod = ch(CN_REPOS_MODIFY, "a.txt", &m2);
    CN_CHECK_EQ(submit_on(&e, new_id, 6, 2, &mod, 1, &o), 4);
    cn_repos_req_t rq = trusted();
    cn_repos_objref_t ref = { CN_REPOS_COMMIT, o.commit };
    cn_repos_obj_t got;
    cn_buf_t bytes = { 0 };
    CN_CHECK_EQ(cn_repos_get_lookup(e.r, &rq, e.repo.id, &ref, 1, &got), 0);
    CN_CHECK_EQ(cn_repos_object_read(e.r, &got, 0, got.length, sink_buf, &bytes), 0);
    cn_repos_commit_t cm;
    CN_CHECK_EQ(cn_repos_commit_parse(bytes.data, bytes.len, &cm), 0);
    CN_CHECK_EQ(cm.parent_count, 1);
    CN_CHECK_MEM(cm.parents[0].b, commit2.b, 32);
    CN_CHECK_MEM(cm.branch, new_id, 16);
    cn_buf_free(&bytes);
    cn_repos_outcome_free(&o);
    /* the head moved on the branch only */
    cn_repos_branch_t br;
    CN_CHECK_EQ(info_of(&e, new_id, NULL, &br, NULL), 0);
    CN_CHECK_EQ(br.head, 4);
    CN_CHECK_EQ(info_of(&e, main_id, NULL, &br, NULL), 0);
    CN_CHECK_EQ(br.head, 2);
    CN_CHECK_EQ(tree_count(&e, new_id, 2, NULL), 2);
    CN_CHECK_EQ(tree_count(&e, new_id, 3, NULL), 2);
    /* a base before the branch's origin is outside its lifetime */
    cn_digest_t cs = put_cs(&e, &mod, 1);
    cn_repos_submit_t s;
    submit_req(&e, &s, 7, 1, &cs, "too old");
    memcpy(s.branch, new_id, 16);
    CN_CHECK_EQ(submit(&e, &s, &o, &code), CN_E_INVALID);
    CN_CHECK_EQ(code, CN_REPOS_E_MALFORMED);

    /* The log: native first, then what was inherited, each row on the
     * branch that accepted it; first parents through origins. */
    cn_buf_t log = { 0 };
    log_of(&e, new_id, NULL, &log);
    CN_CHECK_STR((const char *)log.data, "4/2/new 2/1/main 1/0/main ");
    log_of(&e, old_id, NULL, &log);
    CN_CHECK_STR((const char *)log.data, "3/1/old 1/0/main ");
    log_of(&e, new_id, "a.txt", &log);
    CN_CHECK_STR((const char *)log.data, "4/2/new 1/0/main ");
    log_of(&e, main_id, NULL, &log);
    CN_CHECK_STR((const char *)log.data, "2/1/main 1/0/main ");
    cn_buf_free(&log);
    env_close(&e);
}

static void test_backup_keeps_branches(void)
{
    env_t e;
    env_open(&e);
    const uint8_t *main_id = e.repo.main_branch;
    cn_digest_t m1 = put_file(&e, "one");
    cn_repos_change_t a = ch(CN_REPOS_ADD, "a.txt", &m1), b = ch(CN_REPOS_ADD, "b.txt", &m1);
    cn_repos_outcome_t o;
    CN_CHECK_EQ(submit_on(&e, main_id, 1, 0, &a, 1, &o), 1);
    cn_repos_outcome_free(&o);
    cn_repos_branch_outcome_t bo, bo2;
    uint8_t feat[16];
    memset(feat, 0x50, 16);
    cn_repos_branch_mutate_t made = create_req(&e, 0x30, 0x50, "feature", main_id, 1);
    CN_CHECK_EQ(mutate(&e, &made, &bo, NULL), 0);
    CN_CHECK_EQ(bo.outcome, CN_REPOS_ACCEPTED);
    CN_CHECK_EQ(submit_on(&e, feat, 2, 1, &b, 1, &o), 2);
    cn_repos_outcome_free(&o);

    char path[128];
    snprintf(path, sizeof path, "%s/art.bak", e.dir);
    int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600);
    CN_CHECK(fd >= 0);
    CN_CHECK_EQ(cn_repos_backup(e.r, "art", fd, NULL), 0);
    CN_CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
    cn_repos_info_t ri;
    CN_CHECK_EQ(cn_repos_restore(e.r, fd, true, &ri, NULL), 0);
    close(fd);
    CN_CHECK(memcmp(ri.incarnation, e.repo.incarnation, 16) != 0);

    /* the exact intent recorded before the backup finishes after it */
    uint16_t code = 0;
    CN_CHECK_EQ(mutate(&e, &made, &bo2, NULL), 0);
    CN_CHECK_MEM(&bo2, &bo, sizeof bo);
    /* a new one from the old incarnation does not */
    cn_repos_branch_mutate_t m = create_req(&e, 0x31, 0x51, "later", feat, 2);
    CN_CHECK_EQ(mutate(&e, &m, &bo2, &code), CN_E_CONFLICT);
    CN_CHECK_EQ(code, CN_REPOS_E_INCARNATION_MISMATCH);
    e.repo = ri;
    m = create_req(&e, 0x31, 0x51, "later", feat, 2);
    CN_CHECK_EQ(mutate(&e, &m, &bo2, NULL), 0);
    CN_CHECK_EQ(bo2.outcome, CN_REPOS_ACCEPTED);
    /* the branch table came back whole: origin, head, creation time */
    cn_repos_branch_t br;
    CN_CHECK_EQ(info_of(&e, NULL, "feature", &br, NULL), 0);
    CN_CHECK(br.has_origin && memcmp(br.origin, main_id, 16) == 0 && br.origin_change == 1);
    CN_CHECK_EQ(br.head, 2);
    CN_CHECK_EQ(br.created_ms, bo.branch.created_ms);
    CN_CHECK_EQ(tree_count(&e, feat, 2, NULL), 2);
    CN_CHECK_EQ(tree_count(&e, bo2.branch.id, 2, NULL), 2);
    cn_repos_change_t c = ch(CN_REPOS_DELETE, "a.txt", NULL);
    CN_CHECK_EQ(submit_on(&e, feat, 3, 2, &c, 1, &o), 3);
    cn_repos_outcome_free(&o);
    CN_CHECK_EQ(tree_count(&e, feat, 3, NULL), 1);
    CN_CHECK_EQ(tree_count(&e, main_id, 1, NULL), 1);
    env_close(&e);
}

/* ---- a backup from before branches (format version 1) ------------------------------ */
/* The column types of each table in a version 2 backup (docs/protocol/scribe.md
 * 13.8) and how many of them version 1 had. */
static const char *const v2_types[] = { "BBBBIII", "BBBBIbII", "BIBBII", "BIBBIBBBIBBIbI",
                                        "BBB",     "BBBB",     "BBBB",   "BBBIIb",
                                        "BBIBBBI", "BIIBIB",   "BIBIB" };

/* The byte length of the first `ncols` columns of a row body (after its
 * table byte). */
static size_t cols_len(const uint8_t *p, const char *types, size_t ncols)
{
    size_t off = 0;
    for (size_t c = 0; c < ncols; c++) {
        if (types[c] == 'I') {
            off += 8;
            continue;
        }
        if (types[c] == 'b' && !p[off++])
            continue;
        uint32_t n = (uint32_t)p[off] | (uint32_t)p[off + 1] << 8 | (uint32_t)p[off + 2] << 16 |
                     (uint32_t)p[off + 3] << 24;
        off += 4 + n;
    }
    return off;
}

/* Rewrites a version 2 backup as version 1 would have written it: the
 * branch rows' (repo, id, name, head), the commit rows without their last
 * three columns, no file_lineage rows (table 10), the trailer recomputed. */
static void to_v1(const uint8_t *in, size_t n, cn_buf_t *out)
{
    cn_buf_append(out, in, 8);
    cn_buf_put_u32le(out, 1);
    size_t i = 12;
    while (in[i] != 0xff) {
        if (in[i] == 2) { /* a blob: tag, kind, digest, u64 length, bytes */
            uint64_t len = 0;
            for (int k = 7; k >= 0; k--)
                len = len << 8 | in[i + 34 + k];
            cn_buf_append(out, in + i, 42 + len);
            i += 42 + len;
            continue;
        }
        uint32_t len = (uint32_t)in[i + 1] | (uint32_t)in[i + 2] << 8 | (uint32_t)in[i + 3] << 16 |
                       (uint32_t)in[i + 4] << 24;
        const uint8_t *body = in + i + 5;
        uint8_t t = body[0];
        size_t keep = len - 1;
        if (t == 10) {
            i += 5 + len;
            continue;
        }
        cn_buf_t row = { 0 };
        cn_buf_append(&row, body, 1);
        if (t == 1) { /* repo, id, name | name_key | head */
            size_t head_at = cols_len(body + 1, v2_types[1], 4);
            cn_buf_append(&row, body + 1, cols_len(body + 1, v2_types[1], 3));
            cn_buf_append(&row, body + 1 + head_at, 8);
        } else {
            if (t == 3)
                keep = cols_len(body + 1, v2_types[3], 11);
            cn_buf_append(&row, body + 1, keep);
        }
        cn_buf_put_u8(out, 1);
        cn_buf_put_u32le(out, (uint32_t)row.len);
        cn_buf_append(out, row.data, row.len);
        cn_buf_free(&row);
        i += 5 + len;
    }
    CN_CHECK_EQ(i + 33, n);
    cn_buf_put_u8(out, 0xff);
    cn_digest_t d;
    cn_blake3_t h;
    cn_blake3_init(&h);
    cn_blake3_update(&h, out->data, out->len);
    cn_blake3_final(&h, &d);
    cn_buf_append(out, d.b, 32);
}

static cn_err_t sink_fd(void *ctx, const void *p, size_t n)
{
    return cn_write_full(*(int *)ctx, p, n);
}

static void test_restore_version_1(void)
{
    env_t e;
    env_open(&e);
    const uint8_t *main_id = e.repo.main_branch;
    cn_digest_t m1 = put_file(&e, "one");
    cn_repos_change_t a = ch(CN_REPOS_ADD, "a.txt", &m1);
    cn_repos_outcome_t o;
    CN_CHECK_EQ(submit_on(&e, main_id, 1, 0, &a, 1, &o), 1);
    cn_repos_outcome_free(&o);
    cn_repos_change_t mv = ch(CN_REPOS_MOVE, "b.txt", &m1);
    mv.from = (const uint8_t *)"a.txt";
    mv.from_len = 5;
    CN_CHECK_EQ(submit_on(&e, main_id, 2, 1, &mv, 1, &o), 2);
    cn_repos_outcome_free(&o);
    char path[128], path1[128];
    snprintf(path, sizeof path, "%s/v2.bak", e.dir);
    snprintf(path1, sizeof path1, "%s/v1.bak", e.dir);
    int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600);
    CN_CHECK_EQ(cn_repos_backup(e.r, "art", fd, NULL), 0);
    off_t size = lseek(fd, 0, SEEK_END);
    cn_buf_t v2 = { 0 }, v1 = { 0 };
    cn_buf_reserve(&v2, (size_t)size);
    CN_CHECK_EQ(pread(fd, v2.data, (size_t)size, 0), size);
    v2.len = (size_t)size;
    close(fd);
    to_v1(v2.data, v2.len, &v1);
    fd = open(path1, O_CREAT | O_TRUNC | O_RDWR, 0600);
    CN_CHECK_EQ(sink_fd(&fd, v1.data, v1.len), 0);
    CN_CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
    cn_repos_info_t ri;
    CN_CHECK_EQ(cn_repos_restore(e.r, fd, true, &ri, NULL), 0);
    close(fd);
    cn_buf_free(&v1);
    cn_buf_free(&v2);
    /* main came back with its name key and its repository's creation time:
     * a case variant of its name is taken, and branches work on it */
    int64_t created_ms = e.repo.created_ms;
    e.repo = ri;
    cn_repos_branch_t br;
    CN_CHECK_EQ(info_of(&e, main_id, NULL, &br, NULL), 0);
    CN_CHECK_EQ(br.head, 2);
    CN_CHECK_EQ(br.created_ms, created_ms);
    /* the lineage was derived from the events, as the schema step does */
    CN_CHECK_STR(lineage_of(&e, 2, "b.txt"), "1:a.txt");
    CN_CHECK_STR(lineage_of(&e, 2, "a.txt"), "1:a.txt");
    CN_CHECK(!br.has_origin);
    cn_repos_branch_outcome_t bo;
    cn_repos_branch_mutate_t m = create_req(&e, 0x30, 0x50, "Main", main_id, 1);
    CN_CHECK_EQ(mutate(&e, &m, &bo, NULL), 0);
    CN_CHECK_EQ(bo.code, CN_REPOS_E_BRANCH_EXISTS);
    m = create_req(&e, 0x31, 0x51, "feature", main_id, 2);
    CN_CHECK_EQ(mutate(&e, &m, &bo, NULL), 0);
    CN_CHECK_EQ(bo.outcome, CN_REPOS_ACCEPTED);
    CN_CHECK_EQ(tree_count(&e, m.branch, 2, NULL), 1);
    cn_buf_t log = { 0 };
    log_of(&e, m.branch, NULL, &log);
    CN_CHECK_STR((const char *)log.data, "2/1/main 1/0/main ");
    cn_buf_free(&log);
    env_close(&e);
}

/* ---- the schema step that brings branches ------------------------------------------- */
/* Rows of a repository as the service kept them before step 3: "main" at
 * change 3 after an add (1), a modify (2) and a move (3) of a.txt. */
static cn_err_t old_rows(cn_meta_txn_t *txn, void *ctx)
{
    const uint8_t *id = ctx;
    static const uint8_t main_id[16] = { 7 };
    cn_err_t err =
        cn_meta_execf(txn, cn__sql_repos[CN_SQL_REPOS_REPO_LOAD], "bbbbiii", (const void *)id,
                      (size_t)16, "art", (size_t)3, (const void *)id, (size_t)16,
                      (const void *)main_id, (size_t)16, (int64_t)3, (int64_t)1234, (int64_t)0);
    if (err >= 0)
        err = cn_meta_execf(
            txn, "INSERT INTO repos_branch (repo, id, name, head) VALUES (?, ?, ?, 3)", "bbb",
            (const void *)id, (size_t)16, (const void *)main_id, (size_t)16, "main", (size_t)4);
    static const struct {
        const char *path;
        int64_t change, event;
        const char *from;
    } ev[] = { { "a.txt", 1, CN_REPOS_ADD, NULL },    { "a.txt", 2, CN_REPOS_MODIFY, NULL },
               { "a.txt", 3, CN_REPOS_DELETE, NULL }, { "b.txt", 3, CN_REPOS_MOVE, "a.txt" },
               { "k", 1, CN_REPOS_ADD, NULL },        { "k", 2, CN_REPOS_KEEP, NULL },
               { "k", 3, CN_REPOS_MODIFY, NULL } };
    for (size_t i = 0; err >= 0 && i < sizeof ev / sizeof ev[0]; i++)
        err = cn_meta_execf(txn, cn__sql_repos[CN_SQL_REPOS_EVENT_INSERT],
                            ev[i].from ? "bbbiib" : "bbbiin", (const void *)id, (size_t)16,
                            (const void *)main_id, (size_t)16, ev[i].path, strlen(ev[i].path),
                            ev[i].change, ev[i].event, ev[i].from,
                            ev[i].from ? strlen(ev[i].from) : (size_t)0);
    return err < 0 ? err : CN_OK;
}

static int64_t scalar_of(cn_meta_t *meta, const char *sql, const uint8_t id[16])
{
    cn_meta_txn_t *txn = NULL;
    cn_meta_stmt_t *st = NULL;
    int64_t v = -1;
    CN_CHECK_EQ(cn_meta_begin(meta, CN_META_READ, &txn), 0);
    CN_CHECK_EQ(cn_meta_queryf(txn, &st, sql, "b", (const void *)id, (size_t)16), 0);
    if (cn_meta_step(st) == CN_META_ROW)
        v = cn_meta_column_int64(st, 0);
    cn_meta_finish(st);
    cn_meta_rollback(txn);
    return v;
}

static void test_schema_step_upgrades(void)
{
    env_t e;
    memset(&e, 0, sizeof e);
    snprintf(e.dir, sizeof e.dir, "/tmp/cn-repostest-XXXXXX");
    CN_CHECK(mkdtemp(e.dir) != NULL);
    cn_meta_opts_t mo = { .no_sync = true };
    CN_CHECK_EQ(cn_meta_open(cn_test_meta_for(e.dir), &mo, &e.meta), 0);
    cn_sql_set_t before = cn__sql_repos_set;
    before.nschema = 2;
    CN_CHECK_EQ(cn__sql_migrate(e.meta, &before), 0);
    memset(e.repo.id, 0x11, 16);
    CN_CHECK_EQ(cn_meta_run(e.meta, CN_META_RUN_WRITE, old_rows, e.repo.id), 0);
    CN_CHECK_EQ(cn__sql_migrate(e.meta, &cn__sql_repos_set), 0);
    CN_CHECK_EQ(scalar_of(e.meta, "SELECT schema FROM repos_repo WHERE id = ?", e.repo.id), 3);
    CN_CHECK_EQ(scalar_of(e.meta, "SELECT created_ms FROM repos_branch WHERE repo = ?", e.repo.id),
                1234);
    CN_CHECK_EQ(scalar_of(e.meta,
                          "SELECT COUNT(*) FROM repos_branch WHERE repo = ? AND name_key = name",
                          e.repo.id),
                1);
    CN_CHECK_STR(lineage_of(&e, 2, "a.txt"), "1:a.txt");
    CN_CHECK_STR(lineage_of(&e, 3, "a.txt"), "2:a.txt");
    CN_CHECK_STR(lineage_of(&e, 3, "b.txt"), "2:a.txt");
    CN_CHECK_STR(lineage_of(&e, 1, "a.txt"), "");
    CN_CHECK_STR(lineage_of(&e, 3, "k"), "1:k"); /* a keep wrote nothing */
    cn_meta_close(e.meta);
    nftw(e.dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

CN_TEST_MAIN(CN_TEST(test_names_and_fingerprints), CN_TEST(test_create_rename_identity),
             CN_TEST(test_submits_through_origins), CN_TEST(test_backup_keeps_branches),
             CN_TEST(test_restore_version_1), CN_TEST(test_schema_step_upgrades))
