/* The side pool (cairn/side.h): a ring of at most CN_SIDE_THREADS_MAX jobs,
 * never more than the threads idle to take them, under one mutex. */
#include "cairn/side.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

typedef struct side_job {
    cn_side_fn fn;
    void *h;
    const void *buf;
    size_t n;
    cn_side_set_t *set;
} side_job_t;

struct cn_side {
    pthread_mutex_t mu;
    pthread_cond_t work;                  /* a job was queued, or quit */
    side_job_t ring[CN_SIDE_THREADS_MAX]; /* queued: never more than idle threads */
    size_t head, len;
    pthread_t th[CN_SIDE_THREADS_MAX];
    size_t nth, want;
    size_t busy;  /* threads running a job */
    bool started; /* threads were tried (nth may be 0: then every job runs inline) */
    bool quit;
    char name[16];
};

cn_side_t *cn_side_new(size_t threads, const char *name)
{
    cn_side_t *sp = calloc(1, sizeof *sp);
    if (!sp)
        return NULL;
    pthread_mutex_init(&sp->mu, NULL);
    pthread_cond_init(&sp->work, NULL);
    sp->want = threads > CN_SIDE_THREADS_MAX ? CN_SIDE_THREADS_MAX : threads;
    strncpy(sp->name, name ? name : "cn-side", sizeof sp->name - 1);
    return sp;
}

static void *side_main(void *arg)
{
    cn_side_t *sp = arg;
    pthread_setname_np(pthread_self(), sp->name);
    pthread_mutex_lock(&sp->mu);
    for (;;) {
        while (!sp->len && !sp->quit)
            pthread_cond_wait(&sp->work, &sp->mu);
        if (!sp->len)
            break;
        side_job_t j = sp->ring[sp->head];
        sp->head = (sp->head + 1) % CN_SIDE_THREADS_MAX;
        sp->len--;
        sp->busy++;
        pthread_mutex_unlock(&sp->mu);
        j.fn(j.h, j.buf, j.n);
        pthread_mutex_lock(&sp->mu);
        sp->busy--; /* idle again before its caller can see the job done */
        if (--j.set->pending == 0)
            pthread_cond_signal(&j.set->done);
    }
    pthread_mutex_unlock(&sp->mu);
    return NULL;
}

/* Under sp->mu: starts the threads once (signals blocked in them: they
 * belong to whoever handles them).  A thread that cannot be had leaves
 * fewer; none leaves every job inline. */
static void side_start_locked(cn_side_t *sp)
{
    sp->started = true;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    while (sp->nth < sp->want && pthread_create(&sp->th[sp->nth], NULL, side_main, sp) == 0)
        sp->nth++;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void cn_side_free(cn_side_t *sp)
{
    if (!sp)
        return;
    pthread_mutex_lock(&sp->mu);
    sp->quit = true;
    pthread_cond_broadcast(&sp->work);
    pthread_mutex_unlock(&sp->mu);
    for (size_t i = 0; i < sp->nth; i++)
        pthread_join(sp->th[i], NULL);
    pthread_cond_destroy(&sp->work);
    pthread_mutex_destroy(&sp->mu);
    free(sp);
}

void cn_side_set_init(cn_side_set_t *s)
{
    s->pending = 0;
    pthread_cond_init(&s->done, NULL);
}

void cn_side_set_destroy(cn_side_set_t *s)
{
    pthread_cond_destroy(&s->done);
}

bool cn_side_run(cn_side_t *sp, cn_side_set_t *s, cn_side_fn fn, void *h, const void *buf, size_t n,
                 bool inline_now)
{
    bool queued = false;
    if (sp) {
        pthread_mutex_lock(&sp->mu);
        if (!sp->started)
            side_start_locked(sp);
        if (!sp->quit && sp->busy + sp->len < sp->nth) {
            sp->ring[(sp->head + sp->len) % CN_SIDE_THREADS_MAX] =
                (side_job_t){ .fn = fn, .h = h, .buf = buf, .n = n, .set = s };
            sp->len++;
            s->pending++;
            queued = true;
            pthread_cond_signal(&sp->work);
        }
        pthread_mutex_unlock(&sp->mu);
    }
    if (!queued && inline_now)
        fn(h, buf, n);
    return queued;
}

void cn_side_wait(cn_side_t *sp, cn_side_set_t *s)
{
    if (!sp)
        return;
    pthread_mutex_lock(&sp->mu);
    while (s->pending)
        pthread_cond_wait(&s->done, &sp->mu);
    pthread_mutex_unlock(&sp->mu);
}
