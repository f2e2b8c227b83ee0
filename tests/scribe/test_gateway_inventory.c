/* The gateway's inventory walk and pick rule, the pure parts (src/scribe/
 * gw_inventory.c, gw_place.c) against docs/protocol/scribe-gateway.md,
 * "Inventory" and "Placement": a walk follows cursors page by page, starts
 * again from the first page when the incarnation or the repository count
 * changes between pages, gives up after CN__GW_WALK_RESTARTS restarts or on
 * a cursor that does not advance; the pick rule's order; and the
 * configuration's inventory_interval_ms.  The walks through real servers
 * are tests/scribe/test_gateway_inventory.py. */
#include "cn_test.h"
#include "scribe/gw_int.h"

#include <string.h>

/* A page of instance_status as a decoder would hand it over (the walk
 * reads the header fields only). */
static cn_scribe_instance_resp_t page(uint8_t inc, uint64_t total, uint32_t count, int next)
{
    cn_scribe_instance_resp_t r;
    memset(&r, 0, sizeof r);
    memset(r.incarnation.b, inc, 16);
    r.total_repositories = total;
    r.used_bytes = 1000;
    r.has_available = true;
    r.available_bytes = 5000 + (uint64_t)next;
    r.count = count;
    if (next >= 0) {
        r.has_next = true;
        memset(r.next.b, 0, 16);
        r.next.b[15] = (uint8_t)next;
    }
    return r;
}

static void test_walk_follows_cursors(void)
{
    cn__gw_walk_t w;
    cn__gw_walk_init(&w);
    CN_CHECK(!w.has_after);
    cn_scribe_instance_resp_t r = page(1, 300, 128, 10);
    CN_CHECK_EQ(cn__gw_walk_page(&w, &r), CN__GW_WALK_NEXT);
    CN_CHECK(w.has_after);
    CN_CHECK_EQ(w.after[15], 10);
    r = page(1, 300, 128, 20);
    r.used_bytes = 0; /* later pages: 0, the first page's is kept */
    CN_CHECK_EQ(cn__gw_walk_page(&w, &r), CN__GW_WALK_NEXT);
    CN_CHECK_EQ(w.after[15], 20);
    r = page(1, 300, 44, -1);
    r.available_bytes = 7777;
    CN_CHECK_EQ(cn__gw_walk_page(&w, &r), CN__GW_WALK_DONE);
    CN_CHECK_EQ(w.pages, 3);
    CN_CHECK_EQ(w.rows, 300);
    CN_CHECK_EQ(w.total, 300);
    CN_CHECK_EQ(w.used, 1000);
    CN_CHECK_EQ(w.available, 7777); /* sampled on every page: the latest */
    CN_CHECK_EQ(w.restarts, 0);
}

static void test_walk_restarts_on_a_new_incarnation(void)
{
    cn__gw_walk_t w;
    cn__gw_walk_init(&w);
    cn_scribe_instance_resp_t r = page(1, 200, 128, 10);
    CN_CHECK_EQ(cn__gw_walk_page(&w, &r), CN__GW_WALK_NEXT);
    r = page(2, 200, 72, -1); /* restored between the pages */
    CN_CHECK_EQ(cn__gw_walk_page(&w, &r), CN__GW_WALK_RESTART);
    CN_CHECK(!w.has_after); /* the next request is a first page */
    CN_CHECK_EQ(w.pages, 0);
    CN_CHECK_EQ(w.rows, 0);
    r = page(2, 3, 3, -1);
    CN_CHECK_EQ(cn__gw_walk_page(&w, &r), CN__GW_WALK_DONE);
    CN_CHECK_EQ(w.incarnation[0], 2);
    CN_CHECK_EQ(w.total, 3);
    CN_CHECK_EQ(w.rows, 3);
    CN_CHECK_EQ(w.pages, 1);
    CN_CHECK_EQ(w.restarts, 1);
}

static void test_walk_restarts_on_a_new_total(void)
{
    cn__gw_walk_t w;
    cn__gw_walk_init(&w);
    cn_scribe_instance_resp_t r = page(1, 200, 128, 10);
    CN_CHECK_EQ(cn__gw_walk_page(&w, &r), CN__GW_WALK_NEXT);
    r = page(1, 201, 73, -1); /* a repository created between the pages */
    CN_CHECK_EQ(cn__gw_walk_page(&w, &r), CN__GW_WALK_RESTART);
    CN_CHECK(!w.has_after);
    r = page(1, 201, 128, 10);
    CN_CHECK_EQ(cn__gw_walk_page(&w, &r), CN__GW_WALK_NEXT);
    r = page(1, 201, 73, -1);
    CN_CHECK_EQ(cn__gw_walk_page(&w, &r), CN__GW_WALK_DONE);
    CN_CHECK_EQ(w.rows, 201);
    CN_CHECK_EQ(w.restarts, 1);
}

static void test_walk_gives_up(void)
{
    /* a server that changes at every page */
    cn__gw_walk_t w;
    cn__gw_walk_init(&w);
    int st = CN__GW_WALK_NEXT;
    uint64_t total = 500;
    for (int i = 0; i < 2 * (CN__GW_WALK_RESTARTS + 1) && st != CN__GW_WALK_GIVE_UP; i++) {
        cn_scribe_instance_resp_t r = page(1, total++, 128, 10);
        st = cn__gw_walk_page(&w, &r);
        CN_CHECK(st == CN__GW_WALK_NEXT || st == CN__GW_WALK_RESTART || st == CN__GW_WALK_GIVE_UP);
    }
    CN_CHECK_EQ(st, CN__GW_WALK_GIVE_UP);
    CN_CHECK_EQ(w.restarts, CN__GW_WALK_RESTARTS + 1);
    /* a cursor that does not advance */
    cn__gw_walk_init(&w);
    cn_scribe_instance_resp_t r = page(1, 400, 128, 10);
    CN_CHECK_EQ(cn__gw_walk_page(&w, &r), CN__GW_WALK_NEXT);
    CN_CHECK_EQ(cn__gw_walk_page(&w, &r), CN__GW_WALK_GIVE_UP);
    /* more pages than the total allows */
    cn__gw_walk_init(&w);
    st = CN__GW_WALK_NEXT;
    int pages = 0;
    for (int i = 1; i < 100 && st == CN__GW_WALK_NEXT; i++, pages++) {
        r = page(1, 1, 1, i);
        st = cn__gw_walk_page(&w, &r);
    }
    CN_CHECK_EQ(st, CN__GW_WALK_GIVE_UP);
    CN_CHECK_EQ(pages, 1 / CN_SCRIBE_MAX_INSTANCE_PAGE + 17);
}

static cn__gw_cand_t cand(size_t server, bool has, uint64_t avail, uint64_t repos, int64_t pl)
{
    cn__gw_cand_t c = {
        .server = server, .has_avail = has, .avail = avail, .repos = repos, .placements = pl
    };
    return c;
}

static void test_rank(void)
{
    const uint64_t G = 1ull << 30;
    /* the most available bytes first; not reporting them comes last */
    cn__gw_cand_t c[4] = { cand(0, false, 0, 0, 0), cand(1, true, 10 * G, 50, 9),
                           cand(2, true, 100 * G, 90, 9), cand(3, true, 50 * G, 0, 0) };
    cn__gw_rank(c, 4);
    CN_CHECK_EQ(c[0].server, 2);
    CN_CHECK_EQ(c[1].server, 3);
    CN_CHECK_EQ(c[2].server, 1);
    CN_CHECK_EQ(c[3].server, 0);
    /* within 1/64 of the most: equal, then the fewest repositories */
    cn__gw_cand_t d[3] = { cand(0, true, 100 * G, 7, 0), cand(1, true, 100 * G - G, 3, 5),
                           cand(2, true, 100 * G - 2 * G, 1, 0) };
    cn__gw_rank(d, 3);
    CN_CHECK_EQ(d[0].server, 1); /* 1 GiB less of 100: the same; 3 < 7 repositories */
    CN_CHECK_EQ(d[1].server, 0);
    CN_CHECK_EQ(d[2].server, 2); /* 2 GiB less: more than 1/64 */
    /* then the fewest placements, then configuration order */
    cn__gw_cand_t e[3] = { cand(2, true, G, 4, 1), cand(1, true, G, 4, 1), cand(0, true, G, 4, 2) };
    cn__gw_rank(e, 3);
    CN_CHECK_EQ(e[0].server, 1);
    CN_CHECK_EQ(e[1].server, 2);
    CN_CHECK_EQ(e[2].server, 0);
    /* nobody reports available bytes: the repositories decide */
    cn__gw_cand_t f[2] = { cand(0, false, 0, 9, 0), cand(1, false, 0, 2, 0) };
    cn__gw_rank(f, 2);
    CN_CHECK_EQ(f[0].server, 1);
    cn__gw_rank(f, 0); /* nothing to rank */
}

static void test_interval_configuration(void)
{
    static const char one[] = "[[storage]]\naddress = \"127.0.0.1:7447\"\n";
    char text[256], err[256];
    cn_gw_config_t c;
    CN_CHECK_EQ(cn_gw_config_parse(one, strlen(one), &c, err, sizeof err), 0);
    CN_CHECK_EQ(c.inventory_ms, CN__GW_INV_DEFAULT_MS);
    snprintf(text, sizeof text, "inventory_interval_ms = 250\n%s", one);
    CN_CHECK_EQ(cn_gw_config_parse(text, strlen(text), &c, err, sizeof err), 0);
    CN_CHECK_EQ(c.inventory_ms, 250);
    static const char *const bad[] = { "99", "86400001", "\"1000\"", "-5", "1.5" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(text, sizeof text, "inventory_interval_ms = %s\n%s", bad[i], one);
        CN_CHECK_EQ(cn_gw_config_parse(text, strlen(text), &c, err, sizeof err), CN_E_INVALID);
        CN_CHECK(strstr(err, "inventory_interval_ms must be an integer 100..86400000") != NULL);
    }
}

CN_TEST_MAIN(CN_TEST(test_walk_follows_cursors), CN_TEST(test_walk_restarts_on_a_new_incarnation),
             CN_TEST(test_walk_restarts_on_a_new_total), CN_TEST(test_walk_gives_up),
             CN_TEST(test_rank), CN_TEST(test_interval_configuration))
