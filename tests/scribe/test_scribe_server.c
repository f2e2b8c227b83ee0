/* The Scribe adapter in a test build (CN_SCRIBE_TEST_CODEC=1, so codec 2 is
 * accepted), served in process on a loopback port and driven through the C
 * client: a submit, and a cherry-pick, sent through the big-endian codec and
 * replayed through the little-endian one resolve to the same change
 * (operation identity is codec-independent); LZ4 transfers round-trip;
 * get_chunks and repository_mounts answer alike in both codecs, and so do
 * discover, instance_status, authorize_upload and authorize_repo_create; the
 * CDC chunker is stable.  On SQLite with local blobs, and (scribe_server_pg)
 * on PostgreSQL with the blobs on the S3 tier (store/test_blob_target.h). */
#include "cn_test.h"
#include "meta/test_target.h"
#include "store/test_blob_target.h"
#include "cairn/repos.h"
#include "cairn/scribe_server.h"
#include "cairn/scribe_client.h"
#include "cairn/meta.h"
#include "cairn/store.h"
#include "cairn/net.h"
#include "cairn/util.h"

#include <arpa/inet.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

typedef struct {
    char dir[64];
    cn_meta_t *meta;
    cn_store_t *store;
    cn_repos_t *repos;
    cn_server_t *srv;
    void *actx;
    pthread_t thread;
    char endpoint[64];
} env_t;

static void *run_server(void *arg)
{
    cn_server_run(((env_t *)arg)->srv);
    return NULL;
}

static void env_open(env_t *e)
{
    memset(e, 0, sizeof *e);
    snprintf(e->dir, sizeof e->dir, "/tmp/cn-scribesrv-XXXXXX");
    CN_CHECK(mkdtemp(e->dir) != NULL);
    cn_meta_opts_t mo = { .no_sync = true };
    CN_CHECK_EQ(cn_meta_open(cn_test_meta_for(e->dir), &mo, &e->meta), 0);
    cn_store_opts_t so = { .meta = e->meta };
    cn_test_blob_target(e->dir, &so);
    CN_CHECK_EQ(cn_store_open(e->dir, &so, &e->store), 0);
    CN_CHECK_EQ(cn_repos_open(e->meta, e->store, NULL, NULL, &e->repos), 0);
    const cn_adapter_t *ad = NULL;
    CN_CHECK_EQ(cn_scribe_adapter_create(NULL, e->repos, &ad, &e->actx), 0);
    cn_server_config_t cfg;
    cn_server_config_default(&cfg);
    cfg.handle_signals = false;
    CN_CHECK_EQ(cn_server_create(&cfg, &e->srv), 0);
    cn_listen_opts_t lo;
    memset(&lo, 0, sizeof lo);
    lo.addr = "127.0.0.1:0";
    cn_limits_default(&lo.limits);
    CN_CHECK_EQ(cn_server_listen(e->srv, ad, e->actx, &lo), 0);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    CN_CHECK_EQ(cn_server_listener_addr(e->srv, 0, &ss, &sl), 0);
    snprintf(e->endpoint, sizeof e->endpoint, "127.0.0.1:%u",
             ntohs(((struct sockaddr_in *)&ss)->sin_port));
    CN_CHECK_EQ(pthread_create(&e->thread, NULL, run_server, e), 0);
}

static void env_close(env_t *e)
{
    cn_server_stop(e->srv);
    pthread_join(e->thread, NULL);
    cn_server_destroy(e->srv);
    cn_scribe_adapter_destroy(e->actx);
    cn_repos_close(e->repos);
    cn_store_close(e->store);
    cn_meta_close(e->meta);
    nftw(e->dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static cn_scribe_client_t *client(env_t *e, int codec, bool lz4)
{
    cn_scribe_client_cfg_t cfg = { e->endpoint, codec, lz4, 0, 0, 0, 0 };
    cn_scribe_client_t *cl = NULL;
    cn_scribe_cerr_t err;
    cn_err_t rc = cn_scribe_client_new(&cfg, &cl, &err);
    if (rc < 0)
        fprintf(stderr, "# connect: %s\n", err.message);
    CN_CHECK_EQ(rc, 0);
    return cl;
}

typedef struct {
    cn_buf_t b;
} got_t;
static cn_err_t sink(void *ctx, size_t i, bool present, const void *p, size_t n, bool last)
{
    (void)i;
    (void)last;
    if (!present)
        return CN_E_NOT_FOUND;
    return cn_buf_append(&((got_t *)ctx)->b, p, n);
}

static void test_codec_independent_identity(void)
{
    env_t e;
    env_open(&e);
    cn_scribe_client_t *be = client(&e, 2, false), *le = client(&e, 1, true);
    cn_scribe_cerr_t err;
    cn_scribe_client_repo_t r;
    CN_CHECK_EQ(cn_scribe_client_repo_create(be, "art", 1, &r, &err), 0);
    /* a file of two chunks, its manifest, a change set adding it */
    size_t n = 300000;
    uint8_t *data = malloc(n);
    for (size_t i = 0; i < n; i++)
        data[i] = (uint8_t)(i * 2654435761u >> 13);
    cn_repos_chunk_ref_t refs[2] = { { { { 0 } }, 200000 }, { { { 0 } }, 100000 } };
    cn_blake3(data, 200000, &refs[0].id);
    cn_blake3(data + 200000, 100000, &refs[1].id);
    cn_buf_t menc = { 0 }, csenc = { 0 };
    CN_CHECK_EQ(cn_repos_manifest_encode(&menc, refs, 2), 0);
    cn_digest_t mid, csid;
    cn_repos_object_id(CN_REPOS_MANIFEST, menc.data, menc.len, &mid);
    cn_repos_change_t ch = { CN_REPOS_ADD, (const uint8_t *)"a.bin", 5, NULL, 0, mid, 0 };
    CN_CHECK_EQ(cn_repos_changeset_encode(&csenc, &ch, 1), 0);
    cn_repos_object_id(CN_REPOS_CHANGESET, csenc.data, csenc.len, &csid);
    cn_scribe_client_obj_t objs[4] = {
        { CN_REPOS_CHUNK, refs[0].id, data, 200000 },
        { CN_REPOS_CHUNK, refs[1].id, data + 200000, 100000 },
        { CN_REPOS_MANIFEST, mid, menc.data, menc.len },
        { CN_REPOS_CHANGESET, csid, csenc.data, csenc.len },
    };
    uint8_t ws[16], intent[16];
    memset(ws, 4, 16);
    memset(intent, 5, 16);
    cn_scribe_client_ref_t pr[4];
    bool present[4];
    for (int i = 0; i < 4; i++)
        pr[i] = (cn_scribe_client_ref_t){ objs[i].kind, objs[i].id };
    CN_CHECK_EQ(cn_scribe_client_pin(be, r.id, ws, intent, pr, 4, present, &err), 0);
    CN_CHECK(!present[0] && !present[3]);
    CN_CHECK_EQ(cn_scribe_client_put(le, r.id, objs, 4, &err), 0); /* LZ4 transfer */
    CN_CHECK_EQ(cn_scribe_client_presence(be, r.id, pr, 4, present, &err), 0);
    CN_CHECK(present[0] && present[1] && present[2] && present[3]);
    /* the bytes come back through both codecs and both transfer forms */
    got_t g1 = { { 0 } }, g2 = { { 0 } };
    CN_CHECK_EQ(cn_scribe_client_get(be, r.id, pr, 2, sink, &g1, &err), 0);
    CN_CHECK_EQ(cn_scribe_client_get(le, r.id, pr, 2, sink, &g2, &err), 0);
    CN_CHECK(g1.b.len == n && !memcmp(g1.b.data, data, n));
    CN_CHECK(g2.b.len == n && !memcmp(g2.b.data, data, n));
    cn_buf_free(&g1.b);
    cn_buf_free(&g2.b);

    cn_scribe_client_submit_t s;
    memset(&s, 0, sizeof s);
    memcpy(s.repo, r.id, 16);
    memcpy(s.incarnation, r.incarnation, 16);
    memcpy(s.operation, intent, 16);
    memcpy(s.branch, r.main_branch, 16);
    memcpy(s.workspace, ws, 16);
    s.changeset = csid;
    s.author = "ann";
    s.message = "add a";
    cn_scribe_client_outcome_t o1, o2, o3;
    CN_CHECK_EQ(cn_scribe_client_submit(be, &s, &o1, &err), 0);
    CN_CHECK(o1.accepted && o1.change == 1);
    CN_CHECK_EQ(cn_scribe_client_submit(le, &s, &o2, &err), 0);
    CN_CHECK(o2.accepted && o2.change == 1 && !memcmp(o1.commit.b, o2.commit.b, 32));
    bool known = false;
    CN_CHECK_EQ(cn_scribe_client_outcome(le, r.id, intent, &known, &o3, &err), 0);
    CN_CHECK(known && o3.change == 1);
    s.message = "another intent";
    CN_CHECK_EQ(cn_scribe_client_submit(be, &s, &o3, &err), CN_E_CONFLICT);
    CN_CHECK_EQ(err.code, 200);
    /* the finalized intent takes no more pins */
    CN_CHECK_EQ(cn_scribe_client_pin(le, r.id, ws, intent, pr, 1, present, &err), CN_E_CONFLICT);
    CN_CHECK_EQ(err.code, 107);
    free(data);
    cn_buf_free(&menc);
    cn_buf_free(&csenc);
    cn_scribe_client_free(be);
    cn_scribe_client_free(le);
    env_close(&e);
}

/* A one-entry change set of `kind` at path holding `text` (one chunk),
 * uploaded through cl: its id. */
static cn_digest_t upload_change(cn_scribe_client_t *cl, const uint8_t repo[16], uint8_t kind,
                                 const char *path, const char *text)
{
    size_t n = strlen(text);
    cn_repos_chunk_ref_t ref = { { { 0 } }, (uint32_t)n };
    cn_blake3(text, n, &ref.id);
    cn_buf_t menc = { 0 }, csenc = { 0 };
    CN_CHECK_EQ(cn_repos_manifest_encode(&menc, &ref, 1), 0);
    cn_digest_t mid, csid;
    cn_repos_object_id(CN_REPOS_MANIFEST, menc.data, menc.len, &mid);
    cn_repos_change_t ch = { kind, (const uint8_t *)path, (uint16_t)strlen(path), NULL, 0, mid, 0 };
    CN_CHECK_EQ(cn_repos_changeset_encode(&csenc, &ch, 1), 0);
    cn_repos_object_id(CN_REPOS_CHANGESET, csenc.data, csenc.len, &csid);
    cn_scribe_client_obj_t objs[3] = { { CN_REPOS_CHUNK, ref.id, text, n },
                                       { CN_REPOS_MANIFEST, mid, menc.data, menc.len },
                                       { CN_REPOS_CHANGESET, csid, csenc.data, csenc.len } };
    cn_scribe_cerr_t err;
    CN_CHECK_EQ(cn_scribe_client_put(cl, repo, objs, 3, &err), 0);
    cn_buf_free(&menc);
    cn_buf_free(&csenc);
    return csid;
}

/* A cherry-pick sent through the big-endian codec and replayed through the
 * little-endian one resolves to the same change: its fingerprint is
 * codec-independent (docs/protocol/scribe.md 9.6). */
static void test_pick_codec_replay(void)
{
    env_t e;
    env_open(&e);
    cn_scribe_client_t *be = client(&e, 2, false), *le = client(&e, 1, false);
    cn_scribe_cerr_t err;
    cn_scribe_client_repo_t r;
    CN_CHECK_EQ(cn_scribe_client_repo_create(le, "art", 0, &r, &err), 0);
    cn_scribe_client_submit_t s;
    memset(&s, 0, sizeof s);
    memcpy(s.repo, r.id, 16);
    memcpy(s.incarnation, r.incarnation, 16);
    memset(s.operation, 1, 16);
    memcpy(s.branch, r.main_branch, 16);
    memset(s.workspace, 4, 16);
    s.changeset = upload_change(le, r.id, CN_REPOS_ADD, "a.txt", "one");
    s.author = "ann";
    s.message = "add a";
    cn_scribe_client_outcome_t o1, o2;
    CN_CHECK_EQ(cn_scribe_client_submit(le, &s, &o1, &err), 0);
    CN_CHECK(o1.accepted && o1.change == 1);
    /* feature from main at 1, and a change on it */
    cn_scribe_client_branch_op_t op = { .action = CN_SCRIBE_CLIENT_BRANCH_CREATE,
                                        .name = "feature",
                                        .source_change = 1 };
    memcpy(op.repo, r.id, 16);
    memcpy(op.incarnation, r.incarnation, 16);
    memset(op.operation, 2, 16);
    memset(op.branch, 0x50, 16);
    memcpy(op.source, r.main_branch, 16);
    cn_scribe_client_branch_outcome_t bo;
    CN_CHECK_EQ(cn_scribe_client_branch_mutate(le, &op, &bo, &err), 0);
    CN_CHECK(bo.accepted);
    memset(s.operation, 3, 16);
    memcpy(s.branch, op.branch, 16);
    s.base = 1;
    s.changeset = upload_change(le, r.id, CN_REPOS_MODIFY, "a.txt", "two");
    s.message = "fix a";
    CN_CHECK_EQ(cn_scribe_client_submit(le, &s, &o1, &err), 0);
    CN_CHECK(o1.accepted && o1.change == 2);
    /* pick change 2 onto main at 1, through codec 2, then replay through codec 1 */
    cn_scribe_client_pick_info_t info;
    CN_CHECK_EQ(cn_scribe_client_pick_info(be, r.id, r.main_branch, op.branch, 2, &info, &err), 0);
    CN_CHECK(info.parent == 1 && !info.already_applied && info.source.head == 2);
    cn_scribe_client_pick_t p = { .submit = s, .change = 2 };
    memset(p.submit.operation, 6, 16);
    memcpy(p.submit.branch, r.main_branch, 16);
    p.submit.message = "fix a (picked)";
    memcpy(p.source, op.branch, 16);
    CN_CHECK_EQ(cn_scribe_client_pick_submit(be, &p, &o1, &err), 0);
    CN_CHECK(o1.accepted && o1.change == 3);
    CN_CHECK_EQ(cn_scribe_client_pick_submit(le, &p, &o2, &err), 0);
    CN_CHECK(o2.accepted && o2.change == 3 && !memcmp(o1.commit.b, o2.commit.b, 32));
    p.submit.message = "another intent";
    CN_CHECK_EQ(cn_scribe_client_pick_submit(le, &p, &o2, &err), CN_E_CONFLICT);
    CN_CHECK_EQ(err.code, 200);
    CN_CHECK_EQ(cn_scribe_client_pick_info(le, r.id, r.main_branch, op.branch, 2, &info, &err), 0);
    CN_CHECK(info.already_applied);
    cn_scribe_client_free(be);
    cn_scribe_client_free(le);
    env_close(&e);
}

/* get_chunks (30) and repository_mounts (31) give the same answers through
 * both codecs and both transfer forms (docs/protocol/scribe.md 16): a valid
 * witness streams its chunk, an invalid one is absent; the mounts of the
 * accepted config at its revision, none before it. */
static void test_public_codecs(void)
{
    env_t e;
    env_open(&e);
    cn_scribe_client_t *cls[2] = { client(&e, 2, false), client(&e, 1, true) };
    cn_scribe_cerr_t err;
    cn_scribe_client_repo_t r;
    CN_CHECK_EQ(cn_scribe_client_repo_create(cls[1], "pub", 1, &r, &err), 0);
    const char *text = "version = 1\n[mounts.lib]\npath = \"ext/lib\"\n"
                       "repository = \"0123456789abcdef0123456789abcdef\"\n"
                       "branch = \"fedcba9876543210fedcba9876543210\"\nrevision = \"9\"\n";
    cn_scribe_client_submit_t s = { .author = "ann", .message = "config" };
    memcpy(s.repo, r.id, 16);
    memcpy(s.incarnation, r.incarnation, 16);
    memset(s.operation, 7, 16);
    memcpy(s.branch, r.main_branch, 16);
    memset(s.workspace, 4, 16);
    s.changeset = upload_change(cls[1], r.id, CN_REPOS_ADD, ".scribe/config.toml", text);
    cn_scribe_client_outcome_t o;
    CN_CHECK_EQ(cn_scribe_client_submit(cls[0], &s, &o, &err), 0);
    CN_CHECK(o.accepted && o.change == 1);
    cn_repos_chunk_ref_t ref = { { { 0 } }, (uint32_t)strlen(text) };
    cn_blake3(text, ref.len, &ref.id);
    cn_buf_t menc = { 0 };
    CN_CHECK_EQ(cn_repos_manifest_encode(&menc, &ref, 1), 0);
    cn_scribe_client_witness_t w[2] = { { ref.id, { { 0 } } }, { ref.id, { { 0 } } } };
    cn_repos_object_id(CN_REPOS_MANIFEST, menc.data, menc.len, &w[0].manifest);
    memset(w[1].manifest.b, 0x33, 32); /* a manifest the repository never held */
    for (int c = 0; c < 2; c++) {
        got_t g = { { 0 } };
        CN_CHECK_EQ(cn_scribe_client_get_chunks(cls[c], r.id, w, 1, sink, &g, &err), 0);
        CN_CHECK(g.b.len == ref.len && !memcmp(g.b.data, text, ref.len));
        CN_CHECK_EQ(cn_scribe_client_get_chunks(cls[c], r.id, w + 1, 1, sink, &g, &err),
                    CN_E_NOT_FOUND); /* the sink saw an absent item */
        cn_buf_free(&g.b);
        cn_scribe_client_mount_t *rows = NULL;
        uint32_t n = 9;
        CN_CHECK_EQ(cn_scribe_client_mounts(cls[c], r.id, r.main_branch, 1, &rows, &n, &err), 0);
        CN_CHECK(n == 1 && rows && !strcmp(rows[0].name, "lib") &&
                 !strcmp(rows[0].path, "ext/lib") && rows[0].revision == 9 &&
                 rows[0].repository[0] == 0x01 && rows[0].branch[15] == 0x10);
        free(rows);
        CN_CHECK_EQ(cn_scribe_client_mounts(cls[c], r.id, r.main_branch, 0, &rows, &n, &err), 0);
        CN_CHECK(n == 0 && rows == NULL);
        CN_CHECK_EQ(cn_scribe_client_mounts(cls[c], r.id, r.main_branch, 2, &rows, &n, &err),
                    CN_E_NOT_FOUND);
        CN_CHECK_EQ(err.code, 102); /* change_not_found */
    }
    cn_buf_free(&menc);
    cn_scribe_client_free(cls[0]);
    cn_scribe_client_free(cls[1]);
    env_close(&e);
}

/* The gateway wire through the C client in both codecs (docs/protocol/
 * scribe-gateway.md): discover's storage form, an inventory walked page by
 * page with its free space, and the preflights 27 and 28. */
static int count_row(void *ctx, const cn_scribe_client_repo_t *r, uint64_t bytes)
{
    (void)r;
    (void)bytes;
    (*(unsigned *)ctx)++;
    return 0;
}

static void test_gateway_wire_codecs(void)
{
    env_t e;
    env_open(&e);
    cn_scribe_client_t *cls[2] = { client(&e, 2, false), client(&e, 1, false) };
    cn_scribe_cerr_t err;
    cn_scribe_client_repo_t r;
    char name[16];
    for (int i = 0; i < 130; i++) {
        snprintf(name, sizeof name, "g%03d", i);
        CN_CHECK_EQ(cn_scribe_client_repo_create(cls[i & 1], name, 0, &r, &err), 0);
    }
    for (int k = 0; k < 2; k++) {
        cn_scribe_client_discover_t d;
        CN_CHECK_EQ(cn_scribe_client_discover(cls[k], &d, &err), 0);
        CN_CHECK(d.role == 1 && !d.authentication && d.count == 1 && d.labels[0][0] == 0);
        cn_scribe_client_instance_t h;
        unsigned rows = 0;
        CN_CHECK_EQ(cn_scribe_client_instance_status(cls[k], NULL, &h, count_row, &rows, &err), 0);
        CN_CHECK(h.total_repositories == 130 && h.count == 128 && rows == 128 && h.has_next);
        /* A store on the S3 tier has no local space to report and sends none,
         * by decision (cn_store_space: CN_E_UNSUPPORTED). */
        if (cn_test_blobs_tiered())
            CN_CHECK(!h.has_available);
        else
            CN_CHECK(h.has_available && h.available_bytes > 0);
        uint8_t inc[16];
        memcpy(inc, h.incarnation, 16);
        CN_CHECK_EQ(cn_scribe_client_instance_status(cls[k], h.next, &h, count_row, &rows, &err),
                    0);
        CN_CHECK(rows == 130 && h.count == 2 && !h.has_next && h.used_bytes == 0 &&
                 !memcmp(inc, h.incarnation, 16));
        CN_CHECK_EQ(cn_scribe_client_authorize_upload(cls[k], r.id, &err), 0);
        uint8_t none[16] = { 0x5a };
        CN_CHECK_EQ(cn_scribe_client_authorize_upload(cls[k], none, &err), CN_E_NOT_FOUND);
        CN_CHECK_EQ(err.code, 100);
        CN_CHECK_EQ(cn_scribe_client_authorize_repo_create(cls[k], NULL, &err), 0);
        CN_CHECK_EQ(cn_scribe_client_authorize_repo_create(cls[k], "studio", &err), CN_E_INVALID);
        CN_CHECK(err.code == 1 && strstr(err.message, "studio") != NULL);
        CN_CHECK_EQ(cn_scribe_client_authorize_repo_create(cls[k], "no/label", &err), CN_E_INVALID);
        CN_CHECK_EQ(err.code, 0); /* refused before sending */
    }
    cn_scribe_client_free(cls[0]);
    cn_scribe_client_free(cls[1]);
    env_close(&e);
}

static void test_chunker(void)
{
    size_t n = 4u << 20;
    uint8_t *p = malloc(n);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = (uint8_t)x;
    }
    size_t cuts[512], nc = 0;
    for (size_t off = 0; off < n && nc < 512;) {
        size_t c = cn_scribe_cdc_cut(p + off, n - off);
        CN_CHECK(c >= (n - off < CN_SCRIBE_CDC_MIN ? n - off : CN_SCRIBE_CDC_MIN));
        CN_CHECK(c <= CN_SCRIBE_CDC_MAX);
        off += c;
        cuts[nc++] = off;
    }
    /* about 64 KiB on average */
    CN_CHECK(nc > n / (128u << 10) && nc < n / (32u << 10));
    /* an edit in the middle moves only nearby boundaries */
    memset(p + n / 2, 0x5a, 1000);
    size_t same = 0, k = 0;
    for (size_t off = 0; off < n;) {
        off += cn_scribe_cdc_cut(p + off, n - off);
        while (k < nc && cuts[k] < off)
            k++;
        if (k < nc && cuts[k] == off)
            same++;
    }
    CN_CHECK(same + 4 >= nc);
    free(p);
}

CN_TEST_MAIN(CN_TEST(test_codec_independent_identity), CN_TEST(test_pick_codec_replay),
             CN_TEST(test_public_codecs), CN_TEST(test_gateway_wire_codecs), CN_TEST(test_chunker))
