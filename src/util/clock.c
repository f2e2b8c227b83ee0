/* Monotonic and wall clocks, RFC 3339 formatting (include/cairn/util.h). */
#include "cairn/util.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

/* Milliseconds added to cn_wall_ms: 0 unless a test set it through
 * cn_wall_skew_from_env before any thread began. */
static int64_t wall_skew_ms;

void cn_wall_skew_from_env(void)
{
    const char *v = getenv("CAIRN_TEST_CLOCK_SKEW_MS");
    wall_skew_ms = v ? strtoll(v, NULL, 10) : 0;
}

int64_t cn_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t cn_mono_ms(void)
{
    return cn_mono_ns() / 1000000;
}

int cn_cond_init_mono(pthread_cond_t *c)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(c, &ca);
    pthread_condattr_destroy(&ca);
    return rc;
}

void cn_sleep_ms(int64_t ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

int64_t cn_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + wall_skew_ms;
}

/* One formatter for every date (util/date.c): no time-zone lock, no
 * snprintf for the usual years. */
void cn_rfc3339(int64_t unix_ms, char out[CN_RFC3339_LEN])
{
    _Static_assert(CN_RFC3339_LEN >= CN_DATE_MAX, "cn_date_format writes up to CN_DATE_MAX");
    cn_date_format(unix_ms, CN_DATE_RFC3339, out);
}
