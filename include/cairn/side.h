/* cairn side pool: a few shared threads that run a caller's job on bytes the
 * caller keeps (a digest update, a write to a file), beside the caller's own
 * work on other bytes: the objects service's hashing of large put bodies,
 * the store's O_DIRECT writes of large blobs.
 *
 * Bounded in both directions: at most CN_SIDE_THREADS_MAX threads, started
 * at the first job, and a job is queued only when a thread is idle to take
 * it at once.  Otherwise it runs on the caller's thread: that is the
 * back-pressure (a busy machine runs jobs inline), so no job waits behind
 * another caller's and no queue grows.
 *
 * Must never copy or keep a caller's buffer: a caller waits for its set
 * (cn_side_wait) before it reuses the buffer, touches a state it posted, or
 * frees either, on success, error and abort alike; so the pool holds nothing
 * of a set once wait has returned.
 */
#ifndef CAIRN_SIDE_H
#define CAIRN_SIDE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include "cairn/err.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CN_SIDE_THREADS_MAX 8

typedef struct cn_side cn_side_t;
typedef void (*cn_side_fn)(void *h, const void *p, size_t n);
/* One caller's jobs in flight: pending counts them under the pool's lock. */
typedef struct cn_side_set {
    pthread_cond_t done;
    unsigned pending;
} cn_side_set_t;

/* A pool of up to threads threads (at most CN_SIDE_THREADS_MAX; 0: every
 * job inline), named name (≤ 15 bytes) for profiles and ps.  NULL when memory
 * is short: every job then runs on its caller's thread. */
CN_API cn_side_t *cn_side_new(size_t threads, const char *name);
/* Joins the threads; no set may have jobs pending.  NULL is a no-op. */
CN_API void cn_side_free(cn_side_t *sp);
CN_API void cn_side_set_init(cn_side_set_t *s);
CN_API void cn_side_set_destroy(cn_side_set_t *s); /* none pending */
/* fn(h, buf, n) on a pool thread that is idle now: true.  false when sp is
 * NULL or no thread is idle; then fn ran here before returning if
 * inline_now, else it is the caller's to run.  A queued job's buf and h are
 * borrowed: the caller must not reuse, touch or free them until
 * cn_side_wait(sp, s) has returned.  Jobs on one h must not overlap: post
 * the next after the wait. */
CN_API bool cn_side_run(cn_side_t *sp, cn_side_set_t *s, cn_side_fn fn, void *h, const void *buf,
                        size_t n, bool inline_now);
/* Returns when every job of s has run.  sp NULL: at once. */
CN_API void cn_side_wait(cn_side_t *sp, cn_side_set_t *s);

#ifdef __cplusplus
}
#endif
#endif
