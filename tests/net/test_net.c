/* Unit tests for the pieces of src/net that stand alone: the bounded queue,
 * the worker pool, the queue depths a sampler reads (cn_net_queued), source
 * keys (an IPv6 /64 is one source), the counting table, and listener address
 * parsing. */
#include "cn_test.h"
#include "net/net_int.h"

#include <arpa/inet.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

static void test_queue_fifo_bounded(void)
{
    cn__queue_t q;
    cn__idle_t self;
    memset(&self, 0, sizeof self);
    CN_CHECK_EQ(sem_init(&self.sem, 0, 0), 0);
    CN_CHECK_EQ(cn__queue_init(&q, 3), 0);
    int a = 1, b = 2, c = 3, d = 4;
    CN_CHECK_EQ(cn__queue_push(&q, &a), 0);
    CN_CHECK_EQ(cn__queue_push(&q, &b), 0);
    CN_CHECK_EQ(cn__queue_push(&q, &c), 0);
    CN_CHECK_EQ(cn__queue_push(&q, &d), CN_E_BUSY);
    CN_CHECK(cn__queue_pop(&q, &self) == &a);
    CN_CHECK_EQ(cn__queue_push(&q, &d), 0); /* wraps around the ring */
    CN_CHECK(cn__queue_pop(&q, &self) == &b);
    CN_CHECK(cn__queue_pop(&q, &self) == &c);
    CN_CHECK(cn__queue_pop(&q, &self) == &d);
    cn__queue_close(&q);
    CN_CHECK(cn__queue_pop(&q, &self) == NULL);
    CN_CHECK_EQ(cn__queue_push(&q, &a), CN_E_SHUTDOWN);
    cn__queue_destroy(&q);
    CN_CHECK_EQ(cn__queue_init(&q, 0), CN_E_INVALID);
    sem_destroy(&self.sem);
}

/* A sleeping worker is handed the next item directly, past a full ring. */
typedef struct {
    cn__queue_t *q;
    void *got[2];
} popper_t;

static void *popper(void *arg)
{
    popper_t *p = arg;
    cn__idle_t self;
    memset(&self, 0, sizeof self);
    sem_init(&self.sem, 0, 0);
    p->got[0] = cn__queue_pop(p->q, &self);
    p->got[1] = cn__queue_pop(p->q, &self); /* NULL: closed */
    sem_destroy(&self.sem);
    return NULL;
}

static void test_queue_hands_to_idle_worker(void)
{
    cn__queue_t q;
    CN_CHECK_EQ(cn__queue_init(&q, 1), 0);
    popper_t p = { .q = &q };
    pthread_t th;
    CN_CHECK_EQ(pthread_create(&th, NULL, popper, &p), 0);
    /* Wait until it sleeps on the idle stack. */
    for (int i = 0; i < 2000; i++) {
        pthread_mutex_lock(&q.mu);
        bool idle = q.idle != NULL;
        pthread_mutex_unlock(&q.mu);
        if (idle)
            break;
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
    int a = 1;
    CN_CHECK_EQ(cn__queue_push(&q, &a), 0);
    /* The worker may not have woken yet, but the item is its already. */
    cn__queue_close(&q);
    pthread_join(th, NULL);
    CN_CHECK(p.got[0] == &a);
    CN_CHECK(p.got[1] == NULL);
    cn__queue_destroy(&q);
}

static atomic_int ran;
static void count_item(void *arg, void *item)
{
    (void)arg;
    atomic_fetch_add(&ran, *(int *)item);
}

static void test_pool_runs_everything_queued(void)
{
    cn__pool_t p;
    static int one = 1;
    atomic_store(&ran, 0);
    CN_CHECK_EQ(cn__pool_start(&p, "t", 4, 1000, count_item, NULL), 0);
    int pushed = 0;
    for (int i = 0; i < 500; i++)
        if (cn__queue_push(&p.q, &one) == 0)
            pushed++;
    cn__pool_stop(&p); /* finishes what is queued, then joins */
    CN_CHECK_EQ(atomic_load(&ran), pushed);
    CN_CHECK_EQ(pushed, 500);
    cn__pool_stop(&p); /* idempotent */
    CN_CHECK_EQ(cn__pool_start(&p, "t", 0, 10, count_item, NULL), CN_E_INVALID);
}

static atomic_bool release_items;

static void block_item(void *arg, void *item)
{
    (void)arg;
    (void)item;
    while (!atomic_load(&release_items))
        nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
}

/* The storage depth cn_net_queued reports, polled up to 5 s until it is want. */
static uint64_t storage_depth_until(uint64_t want)
{
    uint64_t d[CN_POOL_COUNT] = { 0 };
    for (int i = 0; i < 5000; i++) {
        cn_net_queued(d);
        if (d[CN_POOL_STORAGE] == want)
            break;
        nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
    }
    return d[CN_POOL_STORAGE];
}

/* cn_net_queued counts what waits in a live server's pool queues (not what a
 * worker holds), and forgets a destroyed server; cn__queue_len the ring. */
static void test_queued_depths(void)
{
    cn__queue_t q;
    int a = 1, b = 2;
    CN_CHECK_EQ(cn__queue_init(&q, 4), 0);
    CN_CHECK_EQ(cn__queue_len(&q), 0u);
    CN_CHECK_EQ(cn__queue_push(&q, &a), 0);
    CN_CHECK_EQ(cn__queue_push(&q, &b), 0);
    CN_CHECK_EQ(cn__queue_len(&q), 2u);
    cn__queue_destroy(&q);

    cn_server_config_t cfg;
    cn_server_config_default(&cfg);
    cn_server_t *s = NULL;
    CN_CHECK_EQ(cn_server_create(&cfg, &s), 0);
    CN_CHECK_EQ(storage_depth_until(0), 0u);
    /* The storage pool's workers swapped for one that holds its item until
     * released: of four requests, one is held and three wait. */
    atomic_store(&release_items, false);
    cn__pool_stop(&s->pools[CN_POOL_STORAGE]);
    CN_CHECK_EQ(cn__pool_start(&s->pools[CN_POOL_STORAGE], "t", 1, 8, block_item, NULL), 0);
    for (int i = 0; i < 4; i++)
        CN_CHECK_EQ(cn__queue_push(&s->pools[CN_POOL_STORAGE].q, &a), 0);
    CN_CHECK_EQ(storage_depth_until(3), 3u);
    uint64_t d[CN_POOL_COUNT];
    cn_net_queued(d);
    CN_CHECK_EQ(d[CN_POOL_HANDSHAKE] + d[CN_POOL_QUERY], 0u);
    atomic_store(&release_items, true);
    CN_CHECK_EQ(storage_depth_until(0), 0u);
    CN_CHECK(strcmp(cn_net_pool_name(CN_POOL_STORAGE), "storage") == 0);
    CN_CHECK(strcmp(cn_net_pool_name(CN_POOL_COUNT), "unknown") == 0);
    /* Left queued at destroy: the server leaves the set before its pools stop. */
    atomic_store(&release_items, false);
    for (int i = 0; i < 3; i++)
        CN_CHECK_EQ(cn__queue_push(&s->pools[CN_POOL_STORAGE].q, &a), 0);
    CN_CHECK_EQ(storage_depth_until(2), 2u);
    atomic_store(&release_items, true);
    cn_server_destroy(s);
    cn_net_queued(d);
    CN_CHECK_EQ(d[CN_POOL_STORAGE], 0u);
}

static void key_of(const char *addr, uint8_t key[16], size_t *klen)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    CN_CHECK_EQ(cn_net_addr_parse(addr, &ss, &sl), 0);
    cn__source_key((struct sockaddr *)&ss, key, klen);
}

static void test_source_key_v6_slash64(void)
{
    uint8_t a[16], b[16], c[16], d[16], e[16];
    size_t la, lb, lc, ld, le;
    key_of("[2001:db8:1:2::1]:1", a, &la);
    key_of("[2001:db8:1:2:ffff:ffff:ffff:ffff]:2", b, &lb);
    key_of("[2001:db8:1:3::1]:1", c, &lc);
    CN_CHECK(la == lb && memcmp(a, b, la) == 0);    /* same /64: one source */
    CN_CHECK(!(la == lc && memcmp(a, c, la) == 0)); /* next /64: another */
    key_of("192.0.2.7:9", d, &ld);
    key_of("[::ffff:192.0.2.7]:9", e, &le);
    CN_CHECK(ld == 4 && ld == le && memcmp(d, e, 4) == 0); /* v4-mapped = v4 */
    key_of("192.0.2.8:9", e, &le);
    CN_CHECK(memcmp(d, e, 4) != 0);
}

static void test_count_table(void)
{
    cn__count_tab_t t = { 0 };
    cn__count_ent_t *e = cn__count_get(&t, "alice", 5, true);
    CN_CHECK(e != NULL);
    e->count = 2;
    CN_CHECK(cn__count_get(&t, "alice", 5, false) == e);
    CN_CHECK(cn__count_get(&t, "alicf", 5, false) == NULL);
    cn__count_put(&t, e); /* still used: kept */
    CN_CHECK(cn__count_get(&t, "alice", 5, false) == e);
    e->count = 0;
    cn__count_put(&t, e); /* unused: freed */
    CN_CHECK(cn__count_get(&t, "alice", 5, false) == NULL);
    for (int i = 0; i < 1000; i++)
        cn__count_get(&t, &i, sizeof i, true)->count = 1;
    int k = 999;
    CN_CHECK(cn__count_get(&t, &k, sizeof k, false) != NULL);
    cn__count_clear(&t);
    CN_CHECK(cn__count_get(&t, &k, sizeof k, false) == NULL);
}

static void test_addr_parse(void)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    char out[CN_NET_ADDR_LEN];
    CN_CHECK_EQ(cn_net_addr_parse("127.0.0.1:7446", &ss, &sl), 0);
    cn_net_addr_format((struct sockaddr *)&ss, out);
    CN_CHECK_STR(out, "127.0.0.1:7446");
    CN_CHECK(cn_net_addr_is_loopback((struct sockaddr *)&ss));
    CN_CHECK_EQ(cn_net_addr_parse("[::1]:0", &ss, &sl), 0);
    cn_net_addr_format((struct sockaddr *)&ss, out);
    CN_CHECK_STR(out, "[::1]:0");
    CN_CHECK(cn_net_addr_is_loopback((struct sockaddr *)&ss));
    CN_CHECK_EQ(cn_net_addr_parse("localhost:1", &ss, &sl), 0);
    CN_CHECK(cn_net_addr_is_loopback((struct sockaddr *)&ss));
    CN_CHECK_EQ(cn_net_addr_parse("0.0.0.0:80", &ss, &sl), 0);
    CN_CHECK(!cn_net_addr_is_loopback((struct sockaddr *)&ss));
    CN_CHECK_EQ(cn_net_addr_parse("[2001:db8::1]:65535", &ss, &sl), 0);
    CN_CHECK(!cn_net_addr_is_loopback((struct sockaddr *)&ss));
    CN_CHECK_EQ(cn_net_addr_parse("[::ffff:127.0.0.1]:1", &ss, &sl), 0);
    CN_CHECK(cn_net_addr_is_loopback((struct sockaddr *)&ss));
    static const char *bad[] = {
        "",
        "127.0.0.1",
        "127.0.0.1:",
        "127.0.0.1:65536",
        "127.0.0.1:-1",
        "127.0.0.1:1x",
        "bad:addr:x",
        "::1:80",
        "[::1]80",
        "[::1]:",
        "[127.0.0.1]:80",
        "example.com:80",
        "127.0.0.1:123456",
        "[::1:80",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (cn_net_addr_parse(bad[i], &ss, &sl) != CN_E_INVALID) {
            fprintf(stderr, "# accepted bad address '%s'\n", bad[i]);
            CN_CHECK(0);
        }
    }
}

CN_TEST_MAIN(CN_TEST(test_queue_fifo_bounded), CN_TEST(test_queue_hands_to_idle_worker),
             CN_TEST(test_pool_runs_everything_queued), CN_TEST(test_queued_depths),
             CN_TEST(test_source_key_v6_slash64), CN_TEST(test_count_table),
             CN_TEST(test_addr_parse))
