/* util: the metrics registry (cairn/metrics.h) — counters, gauges and
 * histograms by family and labels, the refusals of malformed or clashing
 * registrations, concurrent lock-free updates, and the exact Prometheus text
 * the renderer writes. */
#include "cn_test.h"
#include "cairn/metrics.h"

#include <pthread.h>
#include <stdint.h>

static const cn_metric_family_t reqs = {
    "cairn_test_requests_total", "Requests by outcome.", CN_METRIC_COUNTER, NULL, 0,
};
static const cn_metric_family_t open_g = {
    "cairn_test_open", "Open things.", CN_METRIC_GAUGE, NULL, 0,
};
static const double lat_bounds[3] = { 0.001, 0.01, 0.1 };
static const cn_metric_family_t lat = {
    "cairn_test_duration_seconds", "Durations.", CN_METRIC_HISTOGRAM, lat_bounds, 3,
};

static char *render(cn_metrics_t *r)
{
    cn_buf_t b = { 0 };
    CN_CHECK_EQ(cn_metrics_render(r, &b), 0);
    cn_buf_append(&b, "", 1);
    return (char *)b.data;
}

static void test_counter_gauge_text(void)
{
    cn_metrics_t *r;
    CN_CHECK_EQ(cn_metrics_new(&r), 0);
    cn_metric_t *ok = cn_metric_series(r, &reqs, "face=\"jay\",outcome=\"ok\"");
    cn_metric_t *bad = cn_metric_series(r, &reqs, "face=\"jay\",outcome=\"denied\"");
    CN_CHECK(ok && bad && ok != bad);
    CN_CHECK(cn_metric_series(r, &reqs, "face=\"jay\",outcome=\"ok\"") == ok);
    cn_metric_add(ok, 3);
    cn_metric_add(ok, -5); /* counters never go down */
    cn_metric_add(bad, 1);
    cn_metric_t *g = cn_metric_series(r, &open_g, NULL);
    cn_metric_add(g, 4);
    cn_metric_add(g, -1);
    CN_CHECK_EQ(cn_metric_value(ok), 3);
    CN_CHECK_EQ(cn_metric_value(g), 3);
    cn_metric_set(g, -2);
    cn_metric_observe(ok, 1.0); /* wrong kind: ignored */
    char *t = render(r);
    CN_CHECK_STR(t, "# HELP cairn_test_requests_total Requests by outcome.\n"
                    "# TYPE cairn_test_requests_total counter\n"
                    "cairn_test_requests_total{face=\"jay\",outcome=\"ok\"} 3\n"
                    "cairn_test_requests_total{face=\"jay\",outcome=\"denied\"} 1\n"
                    "# HELP cairn_test_open Open things.\n"
                    "# TYPE cairn_test_open gauge\n"
                    "cairn_test_open -2\n");
    free(t);
    cn_metrics_free(r);
}

static void test_histogram_text(void)
{
    cn_metrics_t *r;
    CN_CHECK_EQ(cn_metrics_new(&r), 0);
    cn_metric_t *h = cn_metric_series(r, &lat, "kind=\"read\"");
    cn_metric_observe(h, 0.001); /* on a bound: counted in that bucket (le) */
    cn_metric_observe(h, 0.05);
    cn_metric_observe(h, 7.0);
    cn_metric_observe_ns(h, 2000000); /* 2 ms */
    CN_CHECK_EQ(cn_metric_value(h), 4);
    double sum = cn_metric_sum(h);
    CN_CHECK(sum > 7.0529 && sum < 7.0531);
    char *t = render(r);
    CN_CHECK_STR(t, "# HELP cairn_test_duration_seconds Durations.\n"
                    "# TYPE cairn_test_duration_seconds histogram\n"
                    "cairn_test_duration_seconds_bucket{kind=\"read\",le=\"0.001\"} 1\n"
                    "cairn_test_duration_seconds_bucket{kind=\"read\",le=\"0.01\"} 2\n"
                    "cairn_test_duration_seconds_bucket{kind=\"read\",le=\"0.1\"} 3\n"
                    "cairn_test_duration_seconds_bucket{kind=\"read\",le=\"+Inf\"} 4\n"
                    "cairn_test_duration_seconds_sum{kind=\"read\"} 7.053\n"
                    "cairn_test_duration_seconds_count{kind=\"read\"} 4\n");
    free(t);
    cn_metrics_free(r);
}

static void test_refusals(void)
{
    cn_metrics_t *r;
    CN_CHECK_EQ(cn_metrics_new(&r), 0);
    CN_CHECK(!cn_metric_series(r, &reqs, "face=jay"));            /* unquoted */
    CN_CHECK(!cn_metric_series(r, &reqs, "face=\"a\"b\""));       /* quote in a value */
    CN_CHECK(!cn_metric_series(r, &reqs, "face=\"a\\\"\""));      /* backslash */
    CN_CHECK(!cn_metric_series(r, &reqs, "face=\"a\",,x=\"b\"")); /* empty pair */
    CN_CHECK(!cn_metric_series(r, &reqs, "9x=\"a\""));            /* bad label name */
    CN_CHECK(!cn_metric_series(r, &reqs, "face=\"a\"\n"));        /* trailing junk */
    CN_CHECK(cn_metric_series(r, &reqs, "face=\"\""));            /* an empty value is fine */
    /* The same name with another kind or other bounds is refused. */
    cn_metric_family_t clash = reqs;
    clash.kind = CN_METRIC_GAUGE;
    CN_CHECK(!cn_metric_series(r, &clash, NULL));
    CN_CHECK(cn_metric_series(r, &lat, NULL));
    static const double other[2] = { 1, 2 };
    cn_metric_family_t lat2 = lat;
    lat2.bounds = other;
    lat2.nbounds = 2;
    CN_CHECK(!cn_metric_series(r, &lat2, NULL));
    static const double unsorted[2] = { 2, 1 };
    cn_metric_family_t bad = { "cairn_test_bad", "x", CN_METRIC_HISTOGRAM, unsorted, 2 };
    CN_CHECK(!cn_metric_series(r, &bad, NULL));
    cn_metric_family_t badname = { "cairn-test", "x", CN_METRIC_COUNTER, NULL, 0 };
    CN_CHECK(!cn_metric_series(r, &badname, NULL));
    /* NULL handles are no-ops everywhere. */
    cn_metric_add(NULL, 1);
    cn_metric_set(NULL, 1);
    cn_metric_observe(NULL, 1);
    CN_CHECK_EQ(cn_metric_value(NULL), 0);
    cn_metrics_free(r);
}

static void test_series_cap(void)
{
    cn_metrics_t *r;
    CN_CHECK_EQ(cn_metrics_new(&r), 0);
    char l[32];
    int made = 0;
    for (int i = 0; i < CN_METRIC_MAX_SERIES + 10; i++) {
        snprintf(l, sizeof l, "n=\"%d\"", i);
        made += cn_metric_series(r, &reqs, l) != NULL;
    }
    CN_CHECK_EQ(made, CN_METRIC_MAX_SERIES);
    cn_metrics_free(r);
}

#define THREADS 4
#define ROUNDS 100000

static void *hammer(void *arg)
{
    cn_metric_t **m = arg;
    for (int i = 0; i < ROUNDS; i++) {
        cn_metric_add(m[0], 1);
        cn_metric_observe(m[1], 0.5);
    }
    return NULL;
}

static void test_concurrent_updates(void)
{
    cn_metrics_t *r;
    CN_CHECK_EQ(cn_metrics_new(&r), 0);
    cn_metric_t *m[2] = { cn_metric_series(r, &reqs, NULL), cn_metric_series(r, &lat, NULL) };
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, hammer, m);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    CN_CHECK_EQ(cn_metric_value(m[0]), THREADS * ROUNDS);
    CN_CHECK_EQ(cn_metric_value(m[1]), THREADS * ROUNDS);
    /* Halves add exactly in binary: a lost compare-and-swap would show. */
    CN_CHECK(cn_metric_sum(m[1]) == 0.5 * THREADS * ROUNDS);
    cn_metrics_free(r);
}

static void test_process_registry_cached(void)
{
    static _Atomic(cn_metric_t *) slot;
    cn_metric_t *a = cn_metric_cached(&slot, &reqs, "outcome=\"ok\"");
    CN_CHECK(a != NULL);
    /* Later calls do not look at the labels again: the slot decides. */
    CN_CHECK(cn_metric_cached(&slot, &reqs, "outcome=\"%s\"", "other") == a);
    static _Atomic(cn_metric_t *) slot2;
    CN_CHECK(cn_metric_cached(&slot2, &reqs, "outcome=\"%s\"", "ok") == a);
    static _Atomic(cn_metric_t *) slot3;
    CN_CHECK(!cn_metric_cached(&slot3, &reqs, "outcome=%s", "bare"));
    CN_CHECK(cn_metric_series(NULL, &reqs, "outcome=\"ok\"") == a);
    cn_metric_add(a, 2);
    cn_buf_t b = { 0 };
    CN_CHECK_EQ(cn_metrics_render(NULL, &b), 0);
    cn_buf_append(&b, "", 1);
    CN_CHECK(strstr((char *)b.data, "cairn_test_requests_total{outcome=\"ok\"} 2\n") != NULL);
    cn_buf_free(&b);
    cn_metrics_free(NULL);
}

CN_TEST_MAIN(CN_TEST(test_counter_gauge_text), CN_TEST(test_histogram_text), CN_TEST(test_refusals),
             CN_TEST(test_series_cap), CN_TEST(test_concurrent_updates),
             CN_TEST(test_process_registry_cached))
