/* cairn metrics: counters, gauges and fixed-bucket histograms, registered by
 * family name and label set, rendered once as Prometheus text (exposition
 * format 0.0.4) at /_cairn/metrics.
 *
 * A series is registered once (a mutex and an allocation) and updated through
 * its handle with relaxed atomics only: the hot path never locks, allocates or
 * looks a name up.  Registries only grow: a handle stays valid until its
 * registry is freed, and the process registry (NULL) is never freed.  The
 * process registry is the one piece of process-wide mutable state outside a
 * server context, as the log level is: the store and the metadata engine have
 * no server to hang counters on, and one scrape must see every face.
 *
 * This module must never block an update on a reader, never grow without a
 * bound (families and series per family are capped; past a cap registration
 * answers NULL and updates of NULL are no-ops), and never parse or escape
 * label text on the hot path.
 */
#ifndef CAIRN_METRICS_H
#define CAIRN_METRICS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include "cairn/err.h"
#include "cairn/util.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    CN_METRIC_COUNTER,
    CN_METRIC_GAUGE,
    CN_METRIC_HISTOGRAM
} cn_metric_kind_t;

#define CN_METRIC_MAX_BOUNDS 16   /* histogram buckets besides +Inf */
#define CN_METRIC_MAX_FAMILIES 96 /* per registry */
#define CN_METRIC_MAX_SERIES 256  /* per family */

/* A family: one name, one HELP line, one TYPE.  Usually a static const in the
 * module that reports it.  name follows Prometheus conventions (cairn_
 * prefix, base units, _total for counters); bounds are a histogram's bucket
 * upper bounds in base units, strictly ascending, at most
 * CN_METRIC_MAX_BOUNDS (ignored for counters and gauges).  Every
 * registration of a name must use the same kind and bounds. */
typedef struct cn_metric_family {
    const char *name;
    const char *help;
    cn_metric_kind_t kind;
    const double *bounds;
    size_t nbounds;
} cn_metric_family_t;

typedef struct cn_metric cn_metric_t;   /* one series: a family and a label set */
typedef struct cn_metrics cn_metrics_t; /* a registry */

/* Shared bucket bounds.  Seconds: 100 us .. 10 s.  Sizes: 1 .. 4096 in
 * powers of four (batch sizes, counts). */
CN_API extern const double cn_metric_bounds_seconds[14];
CN_API extern const double cn_metric_bounds_count[7];

/* The family every face reports its requests in, one way:
 * cairn_request_duration_seconds{face="jay|scribe|http",op="<operation>"},
 * from when the face starts serving the request (its head read) until the
 * last byte of its answer is handed to the socket. */
CN_API extern const cn_metric_family_t cn_metric_request_duration;
/* Its companion counter, for the faces whose answers have a status class:
 * cairn_requests_total{face="http",status="1xx|2xx|3xx|4xx|5xx"}, counted
 * where the face observes the request's duration (each series through a
 * cn_metric_cached slot: one atomic load and one atomic add per request). */
CN_API extern const cn_metric_family_t cn_metric_requests;

/* A separate registry (tests); NULL everywhere below means the process
 * registry.  Errors: -ENOMEM.  cn_metrics_free accepts NULL and must not run
 * while a handle of the registry may still be used. */
CN_API cn_err_t cn_metrics_new(cn_metrics_t **out);
CN_API void cn_metrics_free(cn_metrics_t *r);

/* The series of family f with labels, created on first use with value 0 and
 * returned as is afterwards (any thread; takes the registry mutex: call at
 * set-up, or through cn_metric_cached).  labels is `name="value"` pairs
 * joined by commas, or NULL/"" for none; values must not contain '"', '\\'
 * or a newline (callers pass identifiers).  Returns NULL when labels or f
 * are malformed, f's name is registered with another kind or bounds, a cap is
 * reached, or memory is short: updates of NULL do nothing. */
CN_API cn_metric_t *cn_metric_series(cn_metrics_t *r, const cn_metric_family_t *f,
                                     const char *labels);

/* cn_metric_series in the process registry, remembered in *slot: the first
 * call per slot formats the labels (printf-style fmt, at most 255 bytes) and
 * registers; later calls are one atomic load, fmt and its arguments unused.
 * For label sets known only at run time from a small fixed set (an outcome
 * class, an operation code).  NULL as cn_metric_series; a slot left NULL is
 * tried again at its next call (only a malformed family or label text, a
 * full registry or no memory leave it so).  Any thread. */
CN_API cn_metric_t *cn_metric_cached(_Atomic(cn_metric_t *) *slot, const cn_metric_family_t *f,
                                     const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Updates; any thread, lock-free, no allocation; m may be NULL.
 * cn_metric_add: a counter by n >= 0 (negative n is ignored), a gauge by n.
 * cn_metric_set: a gauge to v.  cn_metric_observe: a histogram sample v in
 * the family's base unit; cn_metric_observe_ns takes nanoseconds and records
 * seconds.  A call of the wrong kind does nothing. */
CN_API void cn_metric_add(cn_metric_t *m, int64_t n);
CN_API void cn_metric_set(cn_metric_t *m, int64_t v);
CN_API void cn_metric_observe(cn_metric_t *m, double v);
CN_API void cn_metric_observe_ns(cn_metric_t *m, int64_t ns);

/* Reads (tests, logs): a counter's or gauge's value, a histogram's sample
 * count (cn_metric_value) and sum (cn_metric_sum).  0 for NULL. */
CN_API int64_t cn_metric_value(const cn_metric_t *m);
CN_API double cn_metric_sum(const cn_metric_t *m);

/* Appends every family of r that has a series, as Prometheus text: HELP and
 * TYPE once per family, then its series; histograms with cumulative _bucket
 * lines, _sum and _count.  Any thread; holds the registry mutex while it
 * renders (registration waits, updates never do).  Errors: -ENOMEM (b then
 * holds a partial text). */
CN_API cn_err_t cn_metrics_render(cn_metrics_t *r, cn_buf_t *b);

#ifdef __cplusplus
}
#endif

#endif
