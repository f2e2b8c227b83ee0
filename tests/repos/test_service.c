/* Unit tests of the repos service over a real meta + store in a temp dir:
 * repositories, object batches verified from bytes, atomic submits with
 * operation identity, base and path rules, the persistent tree against the
 * in-memory oracle tree, the tree update cost bound, history and notes. */
#include "cn_test.h"
#include "cairn/repos.h"
#include "cairn/meta.h"
#include "cairn/store.h"
#include "cairn/crypto.h"
#include "repos/service_int.h"
#include "oracle_tree.h"
#include "service_env.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- tests ------------------------------------------------------------------------- */
static cn_err_t collect_name(void *ctx, const cn_repos_info_t *ri)
{
    cn_buf_t *b = ctx;
    cn_buf_append_str(b, ri->name);
    cn_buf_append_str(b, ",");
    return 0;
}

static void test_repositories(void)
{
    env_t e;
    env_open(&e);
    cn_repos_req_t rq = trusted();
    cn_repos_info_t ri;
    CN_CHECK_EQ(cn_repos_create(e.r, &rq, "art", 3, 0, &ri), CN_E_EXISTS);
    CN_CHECK_EQ(rq.fail.detail, CN_REPOS_E_REPOSITORY_EXISTS);
    CN_CHECK_EQ(cn_repos_create(e.r, &rq, "a/b", 3, 0, &ri), CN_E_INVALID);
    CN_CHECK_EQ(cn_repos_create(e.r, &rq, "..", 2, 0, &ri), CN_E_INVALID);
    CN_CHECK_EQ(cn_repos_create(e.r, &rq, "music", 5, 1, &ri), 0);
    CN_CHECK_EQ(ri.compression, 1);
    CN_CHECK_EQ(ri.head, 0);
    cn_repos_info_t got;
    CN_CHECK_EQ(cn_repos_info(e.r, &rq, ri.id, &got), 0);
    CN_CHECK_STR(got.name, "music");
    CN_CHECK_MEM(got.incarnation, ri.incarnation, 16);
    CN_CHECK_EQ(cn_repos_info_by_name(e.r, &rq, "art", 3, &got), 0);
    CN_CHECK_MEM(got.id, e.repo.id, 16);
    uint8_t none[16] = { 9 };
    CN_CHECK_EQ(cn_repos_info(e.r, &rq, none, &got), CN_E_NOT_FOUND);
    CN_CHECK_EQ(rq.fail.detail, CN_REPOS_E_REPOSITORY_NOT_FOUND);
    cn_buf_t names = { 0 };
    bool more = false;
    CN_CHECK_EQ(cn_repos_list(e.r, &rq, NULL, 1, collect_name, &names, &more), 0);
    CN_CHECK(more);
    CN_CHECK_EQ(cn_repos_list(e.r, &rq, "art", 10, collect_name, &names, &more), 0);
    CN_CHECK(!more);
    cn_buf_put_u8(&names, 0);
    CN_CHECK_STR((char *)names.data, "art,music,");
    cn_buf_free(&names);
    /* Anonymous: nothing; an admin principal: everything. */
    cn_repos_req_t anon;
    memset(&anon, 0, sizeof anon);
    CN_CHECK_EQ(cn_repos_info(e.r, &anon, ri.id, &got), CN_E_NOT_FOUND);
    CN_CHECK_EQ(cn_repos_create(e.r, &anon, "x", 1, 0, &got), CN_E_DENIED);
    cn_principal_t admin;
    memset(&admin, 0, sizeof admin);
    admin.perms = CN_PERM_ALL;
    anon.principal = &admin;
    CN_CHECK_EQ(cn_repos_info(e.r, &anon, ri.id, &got), 0);
    env_close(&e);
}

static void test_objects(void)
{
    env_t e;
    env_open(&e);
    obj_t o[3];
    obj_chunk(&o[0], "hello");
    obj_manifest(&o[1], &o[0]);
    cn_repos_change_t c = ch(CN_REPOS_ADD, "a.txt", &o[1].id);
    obj_changeset(&o[2], &c, 1);
    /* the documented fixture ids */
    char hex[65];
    cn_digest_hex(&o[1].id, hex);
    CN_CHECK_STR(hex, "8dc7a813a81f2748f277006c88e6bd3b9a1f754bbc9486a92e81948fd7d103a1");
    cn_digest_hex(&o[2].id, hex);
    CN_CHECK_STR(hex, "d199e5245c55ff3d06db681dd0a733182b7166ecb9cb24adea079037bb89ab6c");

    uint16_t code = 0;
    /* A manifest before its chunk is missing; a change set alone too. */
    CN_CHECK_EQ(put_all(&e, &o[1], 1, NULL, &code), CN_E_NOT_FOUND);
    CN_CHECK_EQ(code, CN_REPOS_E_OBJECT_MISSING);
    CN_CHECK_EQ(put_all(&e, &o[2], 1, NULL, &code), CN_E_NOT_FOUND);
    /* A wrong id is refused from the bytes. */
    obj_t bad;
    obj_chunk(&bad, "hellp");
    bad.id = o[0].id;
    CN_CHECK_EQ(put_all(&e, &bad, 1, NULL, &code), CN_E_DIGEST_MISMATCH);
    CN_CHECK_EQ(code, CN_REPOS_E_OBJECT_INVALID);
    obj_free(&bad);
    obj_t badm = { CN_REPOS_MANIFEST, { { 0 } }, { 0 } };
    cn_buf_append(&badm.bytes, o[1].bytes.data, o[1].bytes.len);
    badm.bytes.data[1] ^= 1; /* size no longer the sum of lengths */
    cn_repos_object_id(CN_REPOS_MANIFEST, badm.bytes.data, badm.bytes.len, &badm.id);
    obj_t pair[2] = { o[0], badm };
    CN_CHECK_EQ(put_all(&e, pair, 2, NULL, &code), CN_E_INVALID);
    CN_CHECK_EQ(code, CN_REPOS_E_OBJECT_INVALID);
    obj_free(&badm);

    cn_repos_objref_t refs[3];
    for (int i = 0; i < 3; i++)
        refs[i] = (cn_repos_objref_t){ o[i].kind, o[i].id };
    bool present[3];
    cn_repos_req_t rq = trusted();
    CN_CHECK_EQ(cn_repos_presence(e.r, &rq, e.repo.id, refs, 3, present), 0);
    CN_CHECK(!present[0] && !present[1] && !present[2]);
    /* The whole batch in dependency order. */
    uint8_t stored[3];
    CN_CHECK_EQ(put_all(&e, o, 3, stored, NULL), 0);
    CN_CHECK(stored[0] == 1 && stored[1] == 1 && stored[2] == 1);
    CN_CHECK_EQ(put_all(&e, o, 3, stored, NULL), 0);
    CN_CHECK(stored[0] == 0 && stored[1] == 0 && stored[2] == 0);
    CN_CHECK_EQ(cn_repos_presence(e.r, &rq, e.repo.id, refs, 3, present), 0);
    CN_CHECK(present[0] && present[1] && present[2]);
    /* one batch per kind: kinds mixed, an id asked under the wrong kind, a
     * ref twice, the order of the request kept */
    cn_repos_objref_t mix[5] = { refs[2], { CN_REPOS_CHUNK, o[1].id }, refs[0], refs[1], refs[2] };
    bool five[5];
    CN_CHECK_EQ(cn_repos_presence(e.r, &rq, e.repo.id, mix, 5, five), 0);
    CN_CHECK(five[0] && !five[1] && five[2] && five[3] && five[4]);
    /* get: bytes back, absent reported */
    cn_repos_objref_t gr[2] = { refs[1], { CN_REPOS_CHUNK, o[1].id } };
    cn_repos_obj_t got[2];
    CN_CHECK_EQ(cn_repos_get_lookup(e.r, &rq, e.repo.id, gr, 2, got), 0);
    CN_CHECK(got[0].present && !got[1].present);
    CN_CHECK_EQ(got[0].length, o[1].bytes.len);
    uint64_t usage = 0;
    CN_CHECK_EQ(cn_repos_usage(e.r, &rq, e.repo.id, &usage), 0);
    CN_CHECK_EQ(usage, o[0].bytes.len + o[1].bytes.len + o[2].bytes.len);
    /* pins: scoped to a workspace, idempotent */
    uint8_t ws[16], ws2[16], intent[16];
    memset(ws, 1, 16);
    memset(ws2, 2, 16);
    memset(intent, 3, 16);
    CN_CHECK_EQ(cn_repos_pin(e.r, &rq, e.repo.id, ws, intent, refs, 3, present), 0);
    CN_CHECK(present[0] && present[2]);
    CN_CHECK_EQ(cn_repos_pin(e.r, &rq, e.repo.id, ws, intent, refs, 3, present), 0);
    CN_CHECK_EQ(cn_repos_pin(e.r, &rq, e.repo.id, ws2, intent, refs, 3, present), CN_E_CONFLICT);
    CN_CHECK_EQ(rq.fail.detail, CN_REPOS_E_WORKSPACE_MISMATCH);
    for (int i = 0; i < 3; i++)
        obj_free(&o[i]);
    env_close(&e);
}

static void test_submit_and_identity(void)
{
    env_t e;
    env_open(&e);
    cn_digest_t m = put_file(&e, "hello");
    cn_repos_change_t c = ch(CN_REPOS_ADD, "a.txt", &m);
    cn_digest_t cs = put_cs(&e, &c, 1);
    cn_repos_submit_t s;
    submit_req(&e, &s, 0x30, 0, &cs, "add a");
    cn_repos_outcome_t o, o2;
    CN_CHECK_EQ(submit(&e, &s, &o, NULL), 0);
    CN_CHECK_EQ(o.outcome, CN_REPOS_ACCEPTED);
    CN_CHECK_EQ(o.change, 1);
    /* The commit is an object of the repository whose id is its bytes'. */
    cn_repos_req_t rq = trusted();
    cn_repos_objref_t ref = { CN_REPOS_COMMIT, o.commit };
    cn_repos_obj_t got;
    CN_CHECK_EQ(cn_repos_get_lookup(e.r, &rq, e.repo.id, &ref, 1, &got), 0);
    CN_CHECK(got.present);
    cn_buf_t bytes = { 0 };
    CN_CHECK_EQ(cn_repos_object_read(e.r, &got, 0, got.length, sink_buf, &bytes), 0);
    cn_digest_t id;
    cn_repos_object_id(CN_REPOS_COMMIT, bytes.data, bytes.len, &id);
    CN_CHECK_MEM(id.b, o.commit.b, 32);
    cn_repos_commit_t cm;
    CN_CHECK_EQ(cn_repos_commit_parse(bytes.data, bytes.len, &cm), 0);
    CN_CHECK_EQ(cm.change, 1);
    CN_CHECK_EQ(cm.parent_count, 0);
    char hex[65];
    cn_digest_hex(&cm.revision_root, hex);
    CN_CHECK_STR(hex, "aac3195eeaf787fe1747008fca15233a291b9cd607e1149a7aeb0603d096bab6");
    cn_digest_hex(&cm.content_root, hex);
    CN_CHECK_STR(hex, "5ab8008cab68dc4710ceab43cd2831ece0cc0a65ef0446e60754dd9869797996");
    cn_buf_free(&bytes);

    /* Retry: the recorded outcome, without a second change. */
    CN_CHECK_EQ(submit(&e, &s, &o2, NULL), 0);
    CN_CHECK_EQ(o2.change, 1);
    CN_CHECK_MEM(o2.commit.b, o.commit.b, 32);
    cn_repos_outcome_free(&o2);
    /* The author is not intent. */
    s.author = (const uint8_t *)"bob";
    CN_CHECK_EQ(submit(&e, &s, &o2, NULL), 0);
    CN_CHECK_EQ(o2.change, 1);
    cn_repos_outcome_free(&o2);
    /* The message is. */
    uint16_t code = 0;
    s.message = (const uint8_t *)"other";
    s.message_len = 5;
    CN_CHECK_EQ(submit(&e, &s, &o2, &code), CN_E_CONFLICT);
    CN_CHECK_EQ(code, CN_REPOS_E_OPERATION_INTENT_MISMATCH);
    /* operation_outcome */
    uint8_t kind = 0;
    cn_repos_branch_outcome_t bo;
    CN_CHECK_EQ(cn_repos_operation_outcome(e.r, &rq, e.repo.id, s.operation, &kind, &o2, &bo), 0);
    CN_CHECK_EQ(kind, CN_REPOS_OP_SUBMIT);
    CN_CHECK_EQ(o2.outcome, CN_REPOS_ACCEPTED);
    CN_CHECK_EQ(o2.change, 1);
    cn_repos_outcome_free(&o2);
    uint8_t unknown[16];
    memset(unknown, 0x77, 16);
    CN_CHECK_EQ(cn_repos_operation_outcome(e.r, &rq, e.repo.id, unknown, &kind, &o2, &bo), 0);
    CN_CHECK_EQ(kind, CN_REPOS_OP_UNKNOWN);
    /* Incarnation mismatch for a new operation; unknown branch; missing change set. */
    cn_repos_submit_t s2;
    cn_digest_t m2 = put_file(&e, "world");
    cn_repos_change_t c2 = ch(CN_REPOS_ADD, "b.txt", &m2);
    cn_digest_t cs2 = put_cs(&e, &c2, 1);
    submit_req(&e, &s2, 0x31, 1, &cs2, "add b");
    s2.incarnation[0] ^= 1;
    CN_CHECK_EQ(submit(&e, &s2, &o2, &code), CN_E_CONFLICT);
    CN_CHECK_EQ(code, CN_REPOS_E_INCARNATION_MISMATCH);
    s2.incarnation[0] ^= 1;
    s2.branch[0] ^= 1;
    CN_CHECK_EQ(submit(&e, &s2, &o2, &code), CN_E_NOT_FOUND);
    CN_CHECK_EQ(code, CN_REPOS_E_BRANCH_NOT_FOUND);
    s2.branch[0] ^= 1;
    cn_digest_t nocs = m2;
    s2.changeset = nocs;
    CN_CHECK_EQ(submit(&e, &s2, &o2, &code), CN_E_NOT_FOUND);
    CN_CHECK_EQ(code, CN_REPOS_E_OBJECT_MISSING);
    s2.changeset = cs2;
    memset(s2.operation, 0, 16);
    CN_CHECK_EQ(submit(&e, &s2, &o2, &code), CN_E_INVALID);
    memset(s2.operation, 0x31, 16);
    CN_CHECK_EQ(submit(&e, &s2, &o2, NULL), 0);
    CN_CHECK_EQ(o2.change, 2);
    cn_repos_info_t ri;
    CN_CHECK_EQ(cn_repos_info(e.r, &rq, e.repo.id, &ri), 0);
    CN_CHECK_EQ(ri.head, 2);
    cn_repos_outcome_free(&o2);
    cn_repos_outcome_free(&o);
    env_close(&e);
}

static void test_base_and_paths(void)
{
    env_t e;
    env_open(&e);
    cn_digest_t m1 = put_file(&e, "one"), m2 = put_file(&e, "two"), m3 = put_file(&e, "three");
    cn_repos_change_t c[2] = { ch(CN_REPOS_ADD, "a", &m1), ch(CN_REPOS_ADD, "b", &m1) };
    cn_digest_t cs = put_cs(&e, c, 2);
    cn_repos_submit_t s;
    cn_repos_outcome_t o;
    uint16_t code = 0;
    submit_req(&e, &s, 1, 0, &cs, "one");
    CN_CHECK_EQ(submit(&e, &s, &o, NULL), 0);
    cn_repos_outcome_free(&o);
    /* Two workspaces both based on change 1 modify "a": the second is a
     * recorded base conflict naming the path; one modifying "b" from base 1
     * after that is accepted (its path did not change). */
    cn_repos_change_t ma = ch(CN_REPOS_MODIFY, "a", &m2);
    cn_digest_t csa = put_cs(&e, &ma, 1);
    submit_req(&e, &s, 2, 1, &csa, "mod a");
    CN_CHECK_EQ(submit(&e, &s, &o, NULL), 0);
    CN_CHECK_EQ(o.outcome, CN_REPOS_ACCEPTED);
    CN_CHECK_EQ(o.change, 2);
    cn_repos_outcome_free(&o);
    cn_repos_change_t ma3 = ch(CN_REPOS_MODIFY, "a", &m3);
    cn_digest_t csa3 = put_cs(&e, &ma3, 1);
    submit_req(&e, &s, 3, 1, &csa3, "mod a again");
    CN_CHECK_EQ(submit(&e, &s, &o, NULL), 0);
    CN_CHECK_EQ(o.outcome, CN_REPOS_REJECTED);
    CN_CHECK_EQ(o.code, CN_REPOS_E_BASE_CONFLICT);
    CN_CHECK_EQ(o.head, 2);
    CN_CHECK_EQ(o.npaths, 1);
    const uint8_t *pp;
    uint16_t pn;
    cn_repos_outcome_path(&o, 0, &pp, &pn);
    CN_CHECK(pn == 1 && pp[0] == 'a');
    cn_repos_outcome_free(&o);
    uint8_t kind = 0;
    cn_repos_branch_outcome_t bo;
    cn_repos_req_t rq = trusted();
    CN_CHECK_EQ(cn_repos_operation_outcome(e.r, &rq, e.repo.id, s.operation, &kind, &o, &bo), 0);
    CN_CHECK(kind == CN_REPOS_OP_SUBMIT && o.outcome == CN_REPOS_REJECTED &&
             o.code == CN_REPOS_E_BASE_CONFLICT);
    cn_repos_outcome_free(&o);
    cn_repos_change_t mb = ch(CN_REPOS_MODIFY, "b", &m3);
    cn_digest_t csb = put_cs(&e, &mb, 1);
    submit_req(&e, &s, 4, 1, &csb, "mod b");
    CN_CHECK_EQ(submit(&e, &s, &o, NULL), 0);
    CN_CHECK_EQ(o.outcome, CN_REPOS_ACCEPTED);
    CN_CHECK_EQ(o.change, 3);
    cn_repos_outcome_free(&o);
    /* Tree rules: a case-fold alias, a file under a file, a directory over
     * files, an add of a live path, a modify of an absent one. */
    const char *bad[][2] = { { "A", "add" }, { "a/x", "add" }, { "c", "mod" } };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cn_repos_change_t x =
            ch(bad[i][1][0] == 'a' ? CN_REPOS_ADD : CN_REPOS_MODIFY, bad[i][0], &m1);
        cn_digest_t csx = put_cs(&e, &x, 1);
        submit_req(&e, &s, (uint8_t)(10 + i), 3, &csx, "bad");
        CN_CHECK_EQ(submit(&e, &s, &o, &code), 0);
        CN_CHECK_EQ(o.outcome, CN_REPOS_REJECTED);
        CN_CHECK_EQ(o.code, CN_REPOS_E_PATH_CONFLICT);
        cn_repos_outcome_free(&o);
    }
    cn_repos_change_t d1 = ch(CN_REPOS_ADD, "dir/f", &m1);
    cn_digest_t csd = put_cs(&e, &d1, 1);
    submit_req(&e, &s, 20, 3, &csd, "dir");
    CN_CHECK_EQ(submit(&e, &s, &o, NULL), 0);
    CN_CHECK_EQ(o.outcome, CN_REPOS_ACCEPTED);
    cn_repos_outcome_free(&o);
    cn_repos_change_t d2 = ch(CN_REPOS_ADD, "dir", &m1);
    cn_digest_t csd2 = put_cs(&e, &d2, 1);
    submit_req(&e, &s, 21, 4, &csd2, "dir over file");
    CN_CHECK_EQ(submit(&e, &s, &o, NULL), 0);
    CN_CHECK_EQ(o.code, CN_REPOS_E_PATH_CONFLICT);
    cn_repos_outcome_free(&o);
    /* A case-only rename is a move: delete "a" + add "A" in one change. */
    cn_repos_change_t mv[2] = { ch(CN_REPOS_ADD, "A", &m1), ch(CN_REPOS_DELETE, "a", NULL) };
    cn_digest_t csm = put_cs(&e, mv, 2);
    submit_req(&e, &s, 22, 4, &csm, "rename");
    CN_CHECK_EQ(submit(&e, &s, &o, NULL), 0);
    CN_CHECK_EQ(o.outcome, CN_REPOS_ACCEPTED);
    cn_repos_outcome_free(&o);
    env_close(&e);
}

/* Submits the n changes to the main branch at base, and checks that the
 * submit is accepted. */
static void submit_accepted(env_t *e, const cn_repos_change_t *c, uint32_t n, uint8_t op,
                            uint64_t base)
{
    cn_digest_t cs = put_cs(e, c, n);
    cn_repos_submit_t s;
    cn_repos_outcome_t o;
    submit_req(e, &s, op, base, &cs, "accepted");
    CN_CHECK_EQ(submit(e, &s, &o, NULL), 0);
    CN_CHECK_EQ(o.outcome, CN_REPOS_ACCEPTED);
    cn_repos_outcome_free(&o);
}

/* A whole-tree page query of the fixture's main branch at change. */
static cn_repos_page_q_t page_q(const env_t *e, uint64_t change, uint32_t limit)
{
    cn_repos_page_q_t q;
    memset(&q, 0, sizeof q);
    memcpy(q.repo, e->repo.id, 16);
    memcpy(q.branch, e->repo.main_branch, 16);
    q.change = change;
    q.prefix = (const uint8_t *)"";
    q.limit = limit;
    return q;
}

/* Sizes of a snapshot's entries, as "path=size," (paths up to 16 bytes). */
static cn_err_t size_row(void *ctx, const cn_repos_tree_row_t *row)
{
    char t[48];
    snprintf(t, sizeof t, "%.*s=%llu,", (int)(row->path_len < 16 ? row->path_len : 16),
             (const char *)row->path, (unsigned long long)row->size);
    return cn_buf_append_str(ctx, t);
}

/* The rules a submit reads in one batch per change set (issue 24): case
 * folds of different widths (one past 4,096 bytes) and the manifests' sizes,
 * with the conflicting paths reported in change-set order. */
static void test_batched_rules(void)
{
    env_t e;
    env_open(&e);
    cn_digest_t m1 = put_file(&e, "one"), m2 = put_file(&e, "two two");
    cn_repos_change_t c0[2] = { ch(CN_REPOS_ADD, "Docs/Guide.txt", &m1),
                                ch(CN_REPOS_ADD, "readme", &m1) };
    submit_accepted(&e, c0, 2, 0x50, 0);
    /* "long/" and 24 segments of 199 bytes: a 4,808-byte path and fold. */
    char *lp = malloc(5000);
    size_t n = (size_t)sprintf(lp, "long");
    for (int i = 0; i < 24; i++)
        n += (size_t)sprintf(lp + n, "/%0199d", i);
    CN_CHECK(n > 4096);
    cn_repos_change_t c1[5] = { ch(CN_REPOS_ADD, "README", &m1),
                                ch(CN_REPOS_ADD, "docs/guide.TXT", &m1), ch(CN_REPOS_ADD, lp, &m1),
                                ch(CN_REPOS_ADD, "new", &m2), ch(CN_REPOS_MODIFY, "readme", &m2) };
    cn_digest_t cs = put_cs(&e, c1, 4); /* a change set's own paths never alias: no "readme" */
    cn_repos_submit_t s;
    cn_repos_outcome_t o;
    submit_req(&e, &s, 0x51, 1, &cs, "aliases");
    CN_CHECK_EQ(submit(&e, &s, &o, NULL), 0);
    CN_CHECK_EQ(o.outcome, CN_REPOS_REJECTED);
    CN_CHECK_EQ(o.code, CN_REPOS_E_PATH_CONFLICT);
    CN_CHECK_EQ(o.npaths, 2);
    CN_CHECK_EQ(o.paths.len, 2 + 6 + 2 + 14);
    CN_CHECK_MEM(o.paths.data,
                 "\x06\x00README\x0e\x00"
                 "docs/guide.TXT",
                 24);
    cn_repos_outcome_free(&o);
    submit_accepted(&e, c1 + 2, 3, 0x53, 1); /* the same without the aliases */
    cn_repos_req_t rq = trusted();
    cn_repos_page_q_t q = page_q(&e, 2, 100);
    cn_buf_t got = { 0 };
    bool more = false;
    cn_digest_t cr, rr;
    CN_CHECK_EQ(cn_repos_tree_page(e.r, &rq, &q, size_row, &got, &more, &cr, &rr), 0);
    CN_CHECK_EQ(cn_buf_append(&got, "", 1), 0);
    CN_CHECK_STR((const char *)got.data, "Docs/Guide.txt=3,long/00000000000=3,new=7,readme=7,");
    cn_buf_free(&got);
    free(lp);
    env_close(&e);
}

/* Random submits, mirrored into the in-memory oracle tree: the persistent
 * tree's roots equal the oracle's after every change. */
/* Reads a node row of the persistent tree, for the oracle's verifying loader. */
typedef struct {
    env_t *e;
} fetch_ctx_t;
static cn_err_t fetch_node(void *ctx, const cn_digest_t *hash, cn_buf_t *out)
{
    fetch_ctx_t *f = ctx;
    cn_meta_txn_t *txn = NULL;
    CN_TRY(cn_meta_begin(f->e->meta, CN_META_READ, &txn));
    cn_meta_stmt_t *st = NULL;
    cn_err_t err =
        cn_meta_prepare(txn, "SELECT enc FROM repos_tree_node WHERE repo = ? AND hash = ?", &st);
    if (err >= 0) {
        cn_meta_bind_blob(st, 1, f->e->repo.id, 16);
        cn_meta_bind_blob(st, 2, hash->b, 32);
        err = cn_meta_step(st);
        if (err == CN_META_ROW) {
            size_t n = 0;
            const void *p = cn_meta_column_blob(st, 0, &n);
            err = cn_buf_append(out, p, n);
        } else if (err == CN_META_DONE) {
            err = CN_E_NOT_FOUND;
        }
        cn_meta_finish(st);
    }
    cn_meta_rollback(txn);
    return err;
}
static cn_err_t model_size(void *ctx, const cn_digest_t *m, uint64_t *size)
{
    (void)ctx;
    (void)m;
    *size = 3;
    return 0;
}

static void test_tree_matches_model(void)
{
    env_t e;
    env_open(&e);
    cn_digest_t m = put_file(&e, "abc");
    oracle_tree_t *model = NULL;
    CN_CHECK_EQ(oracle_tree_new(&model), 0);
    static const char *const names[] = { "a",     "ab", "abc",  "b/c", "b/d",  "b/e/f",
                                         "x/y/z", "xy", "x/yy", "m",   "mn/o", "q\xc3\xa9" };
    bool live[12] = { false };
    unsigned seed = 7;
    uint64_t base = 0;
    for (int round = 0; round < 40; round++) {
        cn_repos_change_t c[12];
        uint32_t n = 0;
        /* names[] is not sorted as bytes; pick in byte order */
        int order[12];
        for (int i = 0; i < 12; i++)
            order[i] = i;
        for (int i = 0; i < 12; i++)
            for (int j = i + 1; j < 12; j++)
                if (strcmp(names[order[j]], names[order[i]]) < 0) {
                    int t = order[i];
                    order[i] = order[j];
                    order[j] = t;
                }
        bool pick[12] = { false };
        for (int k = 0; k < 12; k++) {
            seed = seed * 1103515245u + 12345u;
            pick[k] = (seed >> 16) % 4 == 0;
        }
        for (int oi = 0; oi < 12; oi++) {
            int i = order[oi];
            if (!pick[i])
                continue;
            c[n++] = ch(live[i] ? CN_REPOS_DELETE : CN_REPOS_ADD, names[i], &m);
        }
        if (!n)
            continue;
        obj_t cso;
        obj_changeset(&cso, c, n);
        cn_repos_changeset_t parsed;
        CN_CHECK_EQ(cn_repos_changeset_parse(cso.bytes.data, cso.bytes.len, &parsed), 0);
        if (cn_repos_changeset_validate(&parsed) < 0) {
            obj_free(&cso);
            continue;
        }
        cn_err_t merr = oracle_tree_apply(model, &parsed, base + 1, model_size, NULL);
        CN_CHECK_EQ(put_all(&e, &cso, 1, NULL, NULL), 0);
        cn_repos_submit_t s;
        submit_req(&e, &s, (uint8_t)(round + 1), base, &cso.id, "r");
        cn_repos_outcome_t o;
        CN_CHECK_EQ(submit(&e, &s, &o, NULL), 0);
        /* The service accepts exactly what the model accepts. */
        CN_CHECK_EQ(o.outcome == CN_REPOS_ACCEPTED, merr == 0);
        if (o.outcome == CN_REPOS_ACCEPTED) {
            base = o.change;
            for (uint32_t k = 0; k < n; k++)
                for (int i = 0; i < 12; i++)
                    if (strlen(names[i]) == c[k].path_len &&
                        !memcmp(names[i], c[k].path, c[k].path_len))
                        live[i] = c[k].kind == CN_REPOS_ADD;
            cn_digest_t mc, mr;
            CN_CHECK_EQ(oracle_tree_roots(model, &mc, &mr), 0);
            cn_repos_req_t rq = trusted();
            cn_repos_page_q_t q;
            memset(&q, 0, sizeof q);
            memcpy(q.repo, e.repo.id, 16);
            memcpy(q.branch, e.repo.main_branch, 16);
            q.change = base;
            q.prefix = (const uint8_t *)"";
            q.limit = 1;
            cn_digest_t pc, pr;
            bool more;
            CN_CHECK_EQ(cn_repos_tree_page(e.r, &rq, &q, NULL, NULL, &more, &pc, &pr), 0);
            CN_CHECK_MEM(pr.b, mr.b, 32);
            CN_CHECK_MEM(pc.b, mc.b, 32);
            /* The stored nodes are a complete, verifiable proof of the root. */
            oracle_tree_t *loaded = NULL;
            fetch_ctx_t fc = { &e };
            CN_CHECK_EQ(oracle_tree_load(&loaded, &pr, fetch_node, &fc), 0);
            CN_CHECK_EQ(oracle_tree_live(loaded), oracle_tree_live(model));
            oracle_tree_free(loaded);
        }
        cn_repos_outcome_free(&o);
        obj_free(&cso);
    }
    CN_CHECK(base > 10);
    oracle_tree_free(model);
    env_close(&e);
}

typedef struct {
    cn_buf_t paths;
    uint32_t n;
} page_acc_t;
static cn_err_t page_row(void *ctx, const cn_repos_tree_row_t *row)
{
    page_acc_t *a = ctx;
    cn_buf_append(&a->paths, row->path, row->path_len);
    cn_buf_append_str(&a->paths, ",");
    a->n++;
    return 0;
}

static void test_cost_and_pages(void)
{
    env_t e;
    env_open(&e);
    cn_digest_t m = put_file(&e, "data"), m2 = put_file(&e, "data2");
    /* 1,500 files in one change, then one modify: the second submit reads and
     * writes only nodes on one path. */
    enum {
        N = 1500
    };
    cn_repos_change_t *c = calloc(N, sizeof *c);
    char(*names)[32] = calloc(N, sizeof *names);
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "d%02d/f%05d.bin", i % 50, i);
    }
    for (int i = 0; i < N; i++)
        for (int j = i + 1; j < N; j++)
            if (strcmp(names[j], names[i]) < 0) {
                char t[32];
                memcpy(t, names[i], 32);
                memcpy(names[i], names[j], 32);
                memcpy(names[j], t, 32);
            }
    for (int i = 0; i < N; i++)
        c[i] = ch(CN_REPOS_ADD, names[i], &m);
    submit_accepted(&e, c, N, 1, 0);
    cn_repos_submit_t s;
    cn_repos_outcome_t o;
    cn__ptree_stats_t st = { 0, 0 };
    cn_repos_change_t one = ch(CN_REPOS_MODIFY, names[700], &m2);
    cn_digest_t cs1 = put_cs(&e, &one, 1);
    submit_req(&e, &s, 2, 1, &cs1, "one");
    cn_repos_req_t srq = trusted();
    CN_CHECK_EQ(cn__repos_submit_stats(e.r, &srq, &s, &o, &st), 0);
    CN_CHECK_EQ(o.outcome, CN_REPOS_ACCEPTED);
    cn_repos_outcome_free(&o);
    /* depth here is root + d?? + f + the leaf: at most ~6 nodes on the path */
    CN_CHECK(st.nodes_written >= 2 && st.nodes_written <= 8);
    CN_CHECK(st.nodes_read >= 2 && st.nodes_read <= 8);
    fprintf(stderr, "# one modify in %d files: %llu nodes read, %llu written\n", N,
            (unsigned long long)st.nodes_read, (unsigned long long)st.nodes_written);

    /* Pages: the whole tree in pages of 100 with the cursor, and a prefix. */
    cn_repos_req_t rq = trusted();
    cn_repos_page_q_t q = page_q(&e, 2, 100);
    page_acc_t acc = { { 0 }, 0 };
    bool more = true;
    cn_digest_t cr, rr;
    char last[64] = "";
    int pages = 0;
    while (more) {
        size_t before = acc.paths.len;
        CN_CHECK_EQ(cn_repos_tree_page(e.r, &rq, &q, page_row, &acc, &more, &cr, &rr), 0);
        /* the last path of the page is the cursor */
        size_t end = acc.paths.len - 1, st0 = end;
        while (st0 > before && acc.paths.data[st0 - 1] != ',')
            st0--;
        memcpy(last, acc.paths.data + st0, end - st0);
        last[end - st0] = 0;
        q.after = (const uint8_t *)last;
        q.after_len = strlen(last);
        pages++;
    }
    CN_CHECK_EQ(acc.n, N);
    CN_CHECK_EQ(pages, N / 100);
    cn_buf_free(&acc.paths);
    acc.n = 0;
    q.after = NULL;
    q.prefix = (const uint8_t *)"d07";
    q.prefix_len = 3;
    q.limit = 4096;
    CN_CHECK_EQ(cn_repos_tree_page(e.r, &rq, &q, page_row, &acc, &more, &cr, &rr), 0);
    CN_CHECK_EQ(acc.n, N / 50);
    CN_CHECK(!more);
    cn_buf_free(&acc.paths);
    /* change 0 is the empty snapshot; past the head is change_not_found */
    acc.n = 0;
    q.prefix_len = 0;
    q.change = 0;
    CN_CHECK_EQ(cn_repos_tree_page(e.r, &rq, &q, page_row, &acc, &more, &cr, &rr), 0);
    CN_CHECK_EQ(acc.n, 0);
    q.change = 3;
    CN_CHECK_EQ(cn_repos_tree_page(e.r, &rq, &q, page_row, &acc, &more, &cr, &rr), CN_E_NOT_FOUND);
    CN_CHECK_EQ(rq.fail.detail, CN_REPOS_E_CHANGE_NOT_FOUND);
    free(c);
    free(names);
    env_close(&e);
}

typedef struct {
    uint64_t changes[16];
    uint8_t events[16];
    int n;
} log_acc_t;
static cn_err_t log_row(void *ctx, const cn_repos_log_row_t *row)
{
    log_acc_t *a = ctx;
    if (a->n < 16) {
        a->changes[a->n] = row->change;
        a->events[a->n] = row->event;
    }
    a->n++;
    return 0;
}
static cn_err_t changed_row(void *ctx, const cn_repos_changed_row_t *row)
{
    log_acc_t *a = ctx;
    if (a->n < 16) {
        a->changes[a->n] = row->change;
        a->events[a->n] = row->present;
    }
    a->n++;
    return 0;
}

static void test_history_and_notes(void)
{
    env_t e;
    env_open(&e);
    cn_digest_t m = put_file(&e, "v1"), m2 = put_file(&e, "v2");
    cn_repos_change_t c1[2] = { ch(CN_REPOS_ADD, "docs/a", &m), ch(CN_REPOS_ADD, "src/b", &m) };
    cn_repos_change_t c2 = ch(CN_REPOS_MODIFY, "docs/a", &m2);
    cn_repos_change_t c3 = ch(CN_REPOS_DELETE, "src/b", NULL);
    cn_digest_t cs[3] = { put_cs(&e, c1, 2), put_cs(&e, &c2, 1), put_cs(&e, &c3, 1) };
    for (int i = 0; i < 3; i++) {
        cn_repos_submit_t s;
        cn_repos_outcome_t o;
        submit_req(&e, &s, (uint8_t)(i + 1), (uint64_t)i, &cs[i], "msg");
        CN_CHECK_EQ(submit(&e, &s, &o, NULL), 0);
        CN_CHECK_EQ(o.change, (uint64_t)i + 1);
        cn_repos_outcome_free(&o);
    }
    cn_repos_req_t rq = trusted();
    cn_repos_log_q_t q;
    memset(&q, 0, sizeof q);
    memcpy(q.repo, e.repo.id, 16);
    memcpy(q.branch, e.repo.main_branch, 16);
    q.limit = 10;
    log_acc_t a = { { 0 }, { 0 }, 0 };
    CN_CHECK_EQ(cn_repos_log(e.r, &rq, &q, log_row, &a), 0);
    CN_CHECK_EQ(a.n, 3);
    CN_CHECK(a.changes[0] == 3 && a.changes[2] == 1);
    memset(&a, 0, sizeof a);
    q.path = (const uint8_t *)"docs";
    q.path_len = 4;
    CN_CHECK_EQ(cn_repos_log(e.r, &rq, &q, log_row, &a), 0);
    CN_CHECK_EQ(a.n, 2);
    CN_CHECK(a.changes[0] == 2 && a.events[0] == CN_REPOS_MODIFY);
    CN_CHECK(a.changes[1] == 1 && a.events[1] == CN_REPOS_ADD);
    memset(&a, 0, sizeof a);
    q.has_before = true;
    q.before = 2;
    CN_CHECK_EQ(cn_repos_log(e.r, &rq, &q, log_row, &a), 0);
    CN_CHECK_EQ(a.n, 1);
    /* changed_paths (1, 3]: docs/a last changed 2 (present), src/b 3 (absent) */
    cn_repos_changed_q_t cq;
    memset(&cq, 0, sizeof cq);
    memcpy(cq.repo, e.repo.id, 16);
    memcpy(cq.branch, e.repo.main_branch, 16);
    cq.from = 1;
    cq.to = 3;
    cq.limit = 10;
    bool more = false;
    memset(&a, 0, sizeof a);
    CN_CHECK_EQ(cn_repos_changed_paths(e.r, &rq, &cq, changed_row, &a, &more), 0);
    CN_CHECK_EQ(a.n, 2);
    CN_CHECK(a.changes[0] == 2 && a.events[0] == 1 && a.changes[1] == 3 && a.events[1] == 0);
    /* reverse range: state at 1, where src/b was live */
    cq.from = 3;
    cq.to = 1;
    memset(&a, 0, sizeof a);
    CN_CHECK_EQ(cn_repos_changed_paths(e.r, &rq, &cq, changed_row, &a, &more), 0);
    CN_CHECK(a.n == 2 && a.events[1] == 1);
    /* notes */
    cn_repos_note_t nt;
    CN_CHECK_EQ(cn_repos_describe(e.r, &rq, e.repo.id, 2, 0, (const uint8_t *)"ann", 3,
                                  (const uint8_t *)"better", 6, &nt),
                0);
    CN_CHECK_EQ(nt.revision, 1);
    cn_repos_note_free(&nt);
    CN_CHECK_EQ(cn_repos_describe(e.r, &rq, e.repo.id, 2, 0, (const uint8_t *)"ann", 3,
                                  (const uint8_t *)"again", 5, &nt),
                CN_E_CONFLICT);
    CN_CHECK_EQ(rq.fail.detail, CN_REPOS_E_NOTE_REVISION_STALE);
    CN_CHECK_EQ(cn_repos_describe(e.r, &rq, e.repo.id, 2, 1, (const uint8_t *)"ann", 3,
                                  (const uint8_t *)" \n", 2, &nt),
                CN_E_INVALID);
    CN_CHECK_EQ(cn_repos_describe(e.r, &rq, e.repo.id, 9, 0, (const uint8_t *)"ann", 3,
                                  (const uint8_t *)"x", 1, &nt),
                CN_E_NOT_FOUND);
    uint64_t chs[2] = { 2, 3 };
    bool present[2];
    cn_repos_note_t notes[2];
    CN_CHECK_EQ(cn_repos_notes(e.r, &rq, e.repo.id, chs, 2, present, notes), 0);
    CN_CHECK(present[0] && !present[1]);
    CN_CHECK_STR(notes[0].text, "better");
    cn_repos_note_free(&notes[0]);
    env_close(&e);
}

CN_TEST_MAIN(CN_TEST(test_repositories), CN_TEST(test_objects), CN_TEST(test_submit_and_identity),
             CN_TEST(test_base_and_paths), CN_TEST(test_batched_rules),
             CN_TEST(test_tree_matches_model), CN_TEST(test_cost_and_pages),
             CN_TEST(test_history_and_notes))
