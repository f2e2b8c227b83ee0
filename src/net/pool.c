/* Bounded FIFO queues and the worker pools that drain them.
 *
 * Workers have no event loop of their own, so they sleep on the queue's
 * condition variable; the loop, which sleeps in epoll, is woken by an
 * eventfd when a worker hands a connection back (loop.c). */
#include "net/net_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cn_err_t cn__queue_init(cn__queue_t *q, size_t cap)
{
    memset(q, 0, sizeof *q);
    if (cap == 0)
        return CN_E_INVALID;
    q->ring = calloc(cap, sizeof *q->ring);
    if (!q->ring)
        return -ENOMEM;
    q->cap = cap;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    return CN_OK;
}

void cn__queue_destroy(cn__queue_t *q)
{
    if (!q->ring)
        return;
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
    free(q->ring);
    q->ring = NULL;
}

cn_err_t cn__queue_push(cn__queue_t *q, void *item)
{
    cn_err_t e = CN_OK;
    pthread_mutex_lock(&q->mu);
    if (q->closed)
        e = CN_E_SHUTDOWN;
    else if (q->len == q->cap)
        e = CN_E_BUSY;
    else {
        q->ring[(q->head + q->len) % q->cap] = item;
        q->len++;
        pthread_cond_signal(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
    return e;
}

void *cn__queue_pop(cn__queue_t *q)
{
    void *item = NULL;
    pthread_mutex_lock(&q->mu);
    while (q->len == 0 && !q->closed)
        pthread_cond_wait(&q->cv, &q->mu);
    if (q->len) {
        item = q->ring[q->head];
        q->head = (q->head + 1) % q->cap;
        q->len--;
    }
    pthread_mutex_unlock(&q->mu);
    return item;
}

void cn__queue_close(cn__queue_t *q)
{
    pthread_mutex_lock(&q->mu);
    q->closed = true;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

static void *cn__pool_main(void *arg)
{
    cn__pool_t *p = arg;
    void *item;
    while ((item = cn__queue_pop(&p->q)) != NULL)
        p->run(p->arg, item);
    return NULL;
}

cn_err_t cn__pool_start(cn__pool_t *p, const char *name, unsigned nthreads, size_t qcap,
                        void (*run)(void *arg, void *item), void *arg)
{
    memset(p, 0, sizeof *p);
    if (nthreads == 0)
        return CN_E_INVALID;
    cn_err_t e = cn__queue_init(&p->q, qcap);
    if (e < 0)
        return e;
    p->threads = calloc(nthreads, sizeof *p->threads);
    if (!p->threads) {
        cn__queue_destroy(&p->q);
        return -ENOMEM;
    }
    p->run = run;
    p->arg = arg;
    snprintf(p->name, sizeof p->name, "%s", name);
    for (unsigned i = 0; i < nthreads; i++) {
        int rc = pthread_create(&p->threads[i], NULL, cn__pool_main, p);
        if (rc) {
            cn__pool_stop(p);
            return -rc;
        }
        char tn[16];
        snprintf(tn, sizeof tn, "cn-%.6s-%u", name, i % 1000u);
        pthread_setname_np(p->threads[i], tn);
        p->nthreads++;
    }
    return CN_OK;
}

void cn__pool_stop(cn__pool_t *p)
{
    if (!p->q.ring)
        return;
    cn__queue_close(&p->q);
    for (unsigned i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    free(p->threads);
    p->threads = NULL;
    p->nthreads = 0;
    cn__queue_destroy(&p->q);
}
