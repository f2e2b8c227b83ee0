/* Bounded FIFO queues and the worker pools that drain them.
 *
 * Workers have no event loop of their own, so an idle worker sleeps on its
 * own semaphore, on the queue's stack of idle workers, and a pushed item is
 * handed to it directly; the loop, which sleeps in epoll, is woken by an
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
    return CN_OK;
}

void cn__queue_destroy(cn__queue_t *q)
{
    if (!q->ring)
        return;
    pthread_mutex_destroy(&q->mu);
    free(q->ring);
    q->ring = NULL;
}

/* An item goes straight to an idle worker when there is one: the worker
 * wakes holding it, without contending for mu, and the semaphore is posted
 * after mu is released.  Only when every worker is busy does it wait in the
 * ring. */
cn_err_t cn__queue_push(cn__queue_t *q, void *item)
{
    cn_err_t e = CN_OK;
    cn__idle_t *w = NULL;
    pthread_mutex_lock(&q->mu);
    if (q->closed) {
        e = CN_E_SHUTDOWN;
    } else if (q->idle) {
        w = q->idle;
        q->idle = w->next;
        w->item = item;
    } else if (q->len == q->cap) {
        e = CN_E_BUSY;
    } else {
        q->ring[(q->head + q->len) % q->cap] = item;
        q->len++;
    }
    pthread_mutex_unlock(&q->mu);
    if (w)
        sem_post(&w->sem);
    return e;
}

void *cn__queue_pop(cn__queue_t *q, cn__idle_t *self)
{
    void *item = NULL;
    pthread_mutex_lock(&q->mu);
    if (q->len) {
        item = q->ring[q->head];
        q->head = (q->head + 1) % q->cap;
        q->len--;
        pthread_mutex_unlock(&q->mu);
        return item;
    }
    if (q->closed) {
        pthread_mutex_unlock(&q->mu);
        return NULL;
    }
    self->item = NULL;
    self->next = q->idle;
    q->idle = self;
    pthread_mutex_unlock(&q->mu);
    while (sem_wait(&self->sem) != 0)
        ; /* EINTR */
    /* The pusher set item before its post, and the semaphore orders the two
     * (NULL: the queue closed). */
    return self->item;
}

size_t cn__queue_len(cn__queue_t *q)
{
    pthread_mutex_lock(&q->mu);
    size_t n = q->len;
    pthread_mutex_unlock(&q->mu);
    return n;
}

void cn__queue_close(cn__queue_t *q)
{
    pthread_mutex_lock(&q->mu);
    q->closed = true;
    cn__idle_t *w = q->idle;
    q->idle = NULL;
    pthread_mutex_unlock(&q->mu);
    while (w) {
        cn__idle_t *next = w->next; /* read before the post: w may go away */
        sem_post(&w->sem);
        w = next;
    }
}

static void *pool_main(void *arg)
{
    cn__pool_t *p = arg;
    cn__idle_t self;
    memset(&self, 0, sizeof self);
    if (sem_init(&self.sem, 0, 0) != 0)
        return NULL;
    void *item;
    while ((item = cn__queue_pop(&p->q, &self)) != NULL)
        p->run(p->arg, item);
    sem_destroy(&self.sem);
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
        int rc = pthread_create(&p->threads[i], NULL, pool_main, p);
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
