/* util: the side pool (cairn/side.h): a job goes to a thread only when one
 * is idle (else the caller runs it, or is told to), every queued job has
 * run once wait returns, and a pool of no threads or no pool runs jobs
 * inline. */
#include "cn_test.h"
#include "cairn/side.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

typedef struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool open;
    atomic_int entered;
    atomic_long sum;
    pthread_t ran_on;
} gate_t;

static void gate_init(gate_t *g)
{
    memset(g, 0, sizeof *g);
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
}

static void gate_open(gate_t *g)
{
    pthread_mutex_lock(&g->mu);
    g->open = true;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* Adds n to the sum, after the gate opens. */
static void held_job(void *h, const void *p, size_t n)
{
    gate_t *g = h;
    (void)p;
    atomic_fetch_add(&g->entered, 1);
    pthread_mutex_lock(&g->mu);
    while (!g->open)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
    atomic_fetch_add(&g->sum, (long)n);
}

static void where_job(void *h, const void *p, size_t n)
{
    gate_t *g = h;
    (void)p;
    g->ran_on = pthread_self();
    atomic_fetch_add(&g->sum, (long)n);
}

/* One thread: the first job is queued; while it runs a second is not, and
 * runs inline when asked; wait returns once the first has run. */
static void test_queued_only_when_idle(void)
{
    cn_side_t *sp = cn_side_new(1, "cn-test-side");
    CN_CHECK(sp != NULL);
    gate_t g, w;
    gate_init(&g);
    gate_init(&w);
    cn_side_set_t s;
    cn_side_set_init(&s);
    CN_CHECK(cn_side_run(sp, &s, held_job, &g, NULL, 5, true));
    while (atomic_load(&g.entered) == 0)
        sched_yield();
    CN_CHECK(!cn_side_run(sp, &s, where_job, &w, NULL, 7, false)); /* not run: ours to */
    CN_CHECK_EQ(atomic_load(&w.sum), 0);
    CN_CHECK(!cn_side_run(sp, &s, where_job, &w, NULL, 7, true)); /* ran here */
    CN_CHECK_EQ(atomic_load(&w.sum), 7);
    CN_CHECK(pthread_equal(w.ran_on, pthread_self()));
    gate_open(&g);
    cn_side_wait(sp, &s);
    CN_CHECK_EQ(atomic_load(&g.sum), 5);
    /* Idle again: the next job goes to the thread. */
    CN_CHECK(cn_side_run(sp, &s, where_job, &w, NULL, 1, true));
    cn_side_wait(sp, &s);
    CN_CHECK_EQ(atomic_load(&w.sum), 8);
    CN_CHECK(!pthread_equal(w.ran_on, pthread_self()));
    cn_side_set_destroy(&s);
    cn_side_free(sp);
}

/* No threads, or no pool: every job inline, wait a no-op. */
static void test_inline(void)
{
    cn_side_t *sp = cn_side_new(0, "cn-test-side");
    gate_t w;
    gate_init(&w);
    cn_side_set_t s;
    cn_side_set_init(&s);
    CN_CHECK(!cn_side_run(sp, &s, where_job, &w, NULL, 3, true));
    CN_CHECK(!cn_side_run(NULL, &s, where_job, &w, NULL, 4, true));
    cn_side_wait(sp, &s);
    cn_side_wait(NULL, &s);
    CN_CHECK_EQ(atomic_load(&w.sum), 7);
    CN_CHECK(pthread_equal(w.ran_on, pthread_self()));
    cn_side_set_destroy(&s);
    cn_side_free(sp);
    cn_side_free(NULL);
}

/* Many callers at once on three threads: every job runs exactly once,
 * queued or inline. */
typedef struct caller {
    cn_side_t *sp;
    atomic_long *sum;
    long queued;
} caller_t;

static void add_job(void *h, const void *p, size_t n)
{
    (void)p;
    atomic_fetch_add((atomic_long *)h, (long)n);
}

static void *caller_main(void *arg)
{
    caller_t *c = arg;
    cn_side_set_t s;
    cn_side_set_init(&s);
    for (int i = 0; i < 2000; i++) {
        c->queued += cn_side_run(c->sp, &s, add_job, c->sum, NULL, 1, true);
        if (i % 3 == 0)
            cn_side_wait(c->sp, &s);
    }
    cn_side_wait(c->sp, &s);
    cn_side_set_destroy(&s);
    return NULL;
}

static void test_many_callers(void)
{
    cn_side_t *sp = cn_side_new(3, "cn-test-side");
    atomic_long sum = 0;
    caller_t cs[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        cs[i] = (caller_t){ .sp = sp, .sum = &sum };
        CN_CHECK_EQ(pthread_create(&th[i], NULL, caller_main, &cs[i]), 0);
    }
    long queued = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        queued += cs[i].queued;
    }
    CN_CHECK_EQ(atomic_load(&sum), 8000);
    CN_CHECK(queued > 0);
    cn_side_free(sp);
}

CN_TEST_MAIN(CN_TEST(test_queued_only_when_idle), CN_TEST(test_inline), CN_TEST(test_many_callers))
