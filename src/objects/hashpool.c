/* The objects service's hashing pool: a few threads, shared by every put of
 * the process, that run a digest's update over a caller's buffer while the
 * caller does other work on the same bytes (issue 17: a large PUT's MD5 and
 * SHA-256 beside the store's copy and BLAKE3, so that a body is bound by the
 * slowest hash, not by their sum).
 *
 * Bounded in both directions: one thread fewer than the machine has cores
 * (the caller's thread is the last core; at most HP_THREADS_MAX, started at
 * the first job), and a job is queued only when a thread is idle to take it
 * at once.  Otherwise it runs on the caller's thread before run returns:
 * that is the back-pressure (a busy machine hashes inline, as a small body
 * does), so no job waits behind another request's and no queue grows, and
 * a put never makes more hashing threads runnable than there are cores.
 *
 * Must never copy or keep a caller's buffer: a caller waits for its set
 * (cn__hashpool_wait) before it reuses the buffer, touches a context it
 * posted, or frees either, on success, error and abort alike; so the pool
 * holds nothing of a set once wait has returned. */
#include "objects_int.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#define HP_THREADS_MAX 8

typedef struct hp_job {
    cn__hash_fn fn;
    void *h;
    const void *buf;
    size_t n;
    cn__hashset_t *set;
} hp_job_t;

struct cn__hashpool {
    pthread_mutex_t mu;
    pthread_cond_t work;           /* a job was queued, or quit */
    hp_job_t ring[HP_THREADS_MAX]; /* queued: never more than idle threads */
    size_t head, len;
    pthread_t th[HP_THREADS_MAX];
    size_t nth;
    size_t busy;  /* threads running a job */
    bool started; /* threads were tried (nth may be 0: then every job runs inline) */
    bool quit;
};

cn__hashpool_t *cn__hashpool_new(void)
{
    cn__hashpool_t *hp = calloc(1, sizeof *hp);
    if (!hp)
        return NULL;
    pthread_mutex_init(&hp->mu, NULL);
    pthread_cond_init(&hp->work, NULL);
    return hp;
}

static void *hp_main(void *arg)
{
    cn__hashpool_t *hp = arg;
    pthread_mutex_lock(&hp->mu);
    for (;;) {
        while (!hp->len && !hp->quit)
            pthread_cond_wait(&hp->work, &hp->mu);
        if (!hp->len)
            break;
        hp_job_t j = hp->ring[hp->head];
        hp->head = (hp->head + 1) % HP_THREADS_MAX;
        hp->len--;
        hp->busy++;
        pthread_mutex_unlock(&hp->mu);
        j.fn(j.h, j.buf, j.n);
        pthread_mutex_lock(&hp->mu);
        hp->busy--; /* idle again before its caller can see the job done */
        if (--j.set->pending == 0)
            pthread_cond_signal(&j.set->done);
    }
    pthread_mutex_unlock(&hp->mu);
    return NULL;
}

/* Threads to start: cores - 1, or CAIRN_TEST_HASH_THREADS (0 to
 * HP_THREADS_MAX), so that tests on a small machine reach the path where
 * MD5 and SHA-256 both hash beside the write. */
static size_t hp_threads_wanted(void)
{
    const char *t = getenv("CAIRN_TEST_HASH_THREADS");
    if (t && *t >= '0' && *t <= '9' && !t[1])
        return (size_t)(*t - '0') > HP_THREADS_MAX ? HP_THREADS_MAX : (size_t)(*t - '0');
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores <= 1 ? 0 : cores > HP_THREADS_MAX ? HP_THREADS_MAX : (size_t)cores - 1;
}

/* Under hp->mu: starts the threads once (signals blocked in them: they
 * belong to whoever handles them).  A thread that cannot be had leaves
 * fewer; none leaves every job inline. */
static void hp_start_locked(cn__hashpool_t *hp)
{
    hp->started = true;
    size_t want = hp_threads_wanted();
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    while (hp->nth < want && pthread_create(&hp->th[hp->nth], NULL, hp_main, hp) == 0)
        hp->nth++;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void cn__hashpool_free(cn__hashpool_t *hp)
{
    if (!hp)
        return;
    pthread_mutex_lock(&hp->mu);
    hp->quit = true;
    pthread_cond_broadcast(&hp->work);
    pthread_mutex_unlock(&hp->mu);
    for (size_t i = 0; i < hp->nth; i++)
        pthread_join(hp->th[i], NULL);
    pthread_cond_destroy(&hp->work);
    pthread_mutex_destroy(&hp->mu);
    free(hp);
}

void cn__hashset_init(cn__hashset_t *s)
{
    s->pending = 0;
    pthread_cond_init(&s->done, NULL);
}

void cn__hashset_destroy(cn__hashset_t *s)
{
    pthread_cond_destroy(&s->done);
}

bool cn__hashpool_run(cn__hashpool_t *hp, cn__hashset_t *s, cn__hash_fn fn, void *h,
                      const void *buf, size_t n, bool inline_now)
{
    bool queued = false;
    if (hp) {
        pthread_mutex_lock(&hp->mu);
        if (!hp->started)
            hp_start_locked(hp);
        if (!hp->quit && hp->busy + hp->len < hp->nth) {
            hp->ring[(hp->head + hp->len) % HP_THREADS_MAX] =
                (hp_job_t){ .fn = fn, .h = h, .buf = buf, .n = n, .set = s };
            hp->len++;
            s->pending++;
            queued = true;
            pthread_cond_signal(&hp->work);
        }
        pthread_mutex_unlock(&hp->mu);
    }
    if (!queued && inline_now)
        fn(h, buf, n);
    return queued;
}

void cn__hashpool_wait(cn__hashpool_t *hp, cn__hashset_t *s)
{
    if (!hp)
        return;
    pthread_mutex_lock(&hp->mu);
    while (s->pending)
        pthread_cond_wait(&s->done, &hp->mu);
    pthread_mutex_unlock(&hp->mu);
}
