/* Metrics registry and Prometheus text renderer (include/cairn/metrics.h).
 *
 * Families and series are linked lists that only grow, under the registry
 * mutex; a series' values are atomics updated with relaxed order, so an
 * update never waits for a registration or a scrape.  A histogram keeps one
 * counter per bucket (not cumulative) and its sum as the bits of a double
 * changed by compare-and-swap; the renderer accumulates the buckets and
 * takes _count from the same loads, so +Inf always equals _count.
 */
#include "cairn/metrics.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const double cn_metric_bounds_seconds[14] = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 10.0,
};
const double cn_metric_bounds_count[7] = { 1, 4, 16, 64, 256, 1024, 4096 };

const cn_metric_family_t cn_metric_request_duration = {
    "cairn_request_duration_seconds",
    "Requests from their head to their answer, by face and operation.",
    CN_METRIC_HISTOGRAM,
    cn_metric_bounds_seconds,
    14,
};
const cn_metric_family_t cn_metric_requests = {
    "cairn_requests_total",
    "Requests answered, by face and status class.",
    CN_METRIC_COUNTER,
    NULL,
    0,
};

struct cn_metric {
    struct cn_metric *next;
    const struct fam *fam;
    char *labels;                                      /* `k="v",...`, "" for none */
    _Atomic int64_t value;                             /* counter, gauge */
    _Atomic uint64_t bucket[CN_METRIC_MAX_BOUNDS + 1]; /* histogram; last = +Inf */
    _Atomic uint64_t sum_bits;                         /* histogram: a double's bits */
};

typedef struct fam {
    struct fam *next;
    char *name, *help;
    cn_metric_kind_t kind;
    double bounds[CN_METRIC_MAX_BOUNDS];
    size_t nbounds;
    cn_metric_t *head, *tail;
    size_t nseries;
} fam_t;

struct cn_metrics {
    pthread_mutex_t mu;
    fam_t *head, *tail;
    size_t nfam;
};

static cn_metrics_t process = { .mu = PTHREAD_MUTEX_INITIALIZER };

cn_err_t cn_metrics_new(cn_metrics_t **out)
{
    *out = calloc(1, sizeof **out);
    if (!*out)
        return -ENOMEM;
    pthread_mutex_init(&(*out)->mu, NULL);
    return CN_OK;
}

static void fam_free(fam_t *f)
{
    for (cn_metric_t *m = f->head, *next; m; m = next) {
        next = m->next;
        free(m->labels);
        free(m);
    }
    free(f->name);
    free(f->help);
    free(f);
}

void cn_metrics_free(cn_metrics_t *r)
{
    if (!r || r == &process)
        return;
    for (fam_t *f = r->head, *next; f; f = next) {
        next = f->next;
        fam_free(f);
    }
    pthread_mutex_destroy(&r->mu);
    free(r);
}

/* True for a metric or label name: [a-zA-Z_:][a-zA-Z0-9_:]* (labels: no ':',
 * which the caller's text never needs). */
static bool name_ok(const char *s, size_t n)
{
    if (n == 0 || (s[0] >= '0' && s[0] <= '9'))
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == ':'))
            return false;
    }
    return true;
}

/* labels is empty or `name="value"(,name="value")*` with no '"', '\\' or
 * newline inside a value: it can be pasted between braces as is. */
static bool labels_ok(const char *s)
{
    while (*s) {
        const char *eq = strchr(s, '=');
        if (!eq || !name_ok(s, (size_t)(eq - s)) || eq[1] != '"')
            return false;
        const char *v = eq + 2;
        size_t vn = strcspn(v, "\"\\\n");
        if (v[vn] != '"')
            return false;
        s = v + vn + 1;
        if (*s == ',')
            s++;
        else if (*s)
            return false;
    }
    return true;
}

static bool family_ok(const cn_metric_family_t *f)
{
    if (!f || !f->name || !f->help || !name_ok(f->name, strlen(f->name)) || strchr(f->help, '\n') ||
        strchr(f->help, '\\'))
        return false;
    if (f->kind != CN_METRIC_HISTOGRAM)
        return f->kind == CN_METRIC_COUNTER || f->kind == CN_METRIC_GAUGE;
    if (f->nbounds == 0 || f->nbounds > CN_METRIC_MAX_BOUNDS || !f->bounds)
        return false;
    for (size_t i = 1; i < f->nbounds; i++)
        if (!(f->bounds[i] > f->bounds[i - 1]))
            return false;
    return true;
}

static bool same_shape(const fam_t *x, const cn_metric_family_t *f)
{
    if (x->kind != f->kind)
        return false;
    if (f->kind != CN_METRIC_HISTOGRAM)
        return true;
    return x->nbounds == f->nbounds && !memcmp(x->bounds, f->bounds, f->nbounds * sizeof(double));
}

static fam_t *family_locked(cn_metrics_t *r, const cn_metric_family_t *f)
{
    for (fam_t *x = r->head; x; x = x->next)
        if (!strcmp(x->name, f->name))
            return same_shape(x, f) ? x : NULL;
    if (r->nfam >= CN_METRIC_MAX_FAMILIES)
        return NULL;
    fam_t *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->name = strdup(f->name);
    x->help = strdup(f->help);
    if (!x->name || !x->help) {
        fam_free(x);
        return NULL;
    }
    x->kind = f->kind;
    if (f->kind == CN_METRIC_HISTOGRAM) {
        memcpy(x->bounds, f->bounds, f->nbounds * sizeof(double));
        x->nbounds = f->nbounds;
    }
    if (r->tail)
        r->tail->next = x;
    else
        r->head = x;
    r->tail = x;
    r->nfam++;
    return x;
}

static cn_metric_t *series_locked(fam_t *x, const char *labels)
{
    for (cn_metric_t *m = x->head; m; m = m->next)
        if (!strcmp(m->labels, labels))
            return m;
    if (x->nseries >= CN_METRIC_MAX_SERIES)
        return NULL;
    cn_metric_t *m = calloc(1, sizeof *m);
    if (!m || !(m->labels = strdup(labels))) {
        free(m);
        return NULL;
    }
    m->fam = x;
    if (x->tail)
        x->tail->next = m;
    else
        x->head = m;
    x->tail = m;
    x->nseries++;
    return m;
}

cn_metric_t *cn_metric_series(cn_metrics_t *r, const cn_metric_family_t *f, const char *labels)
{
    if (!labels)
        labels = "";
    if (!family_ok(f) || !labels_ok(labels))
        return NULL;
    if (!r)
        r = &process;
    cn_metric_t *m = NULL;
    pthread_mutex_lock(&r->mu);
    fam_t *x = family_locked(r, f);
    if (x)
        m = series_locked(x, labels);
    pthread_mutex_unlock(&r->mu);
    return m;
}

cn_metric_t *cn_metric_cached(_Atomic(cn_metric_t *) *slot, const cn_metric_family_t *f,
                              const char *fmt, ...)
{
    cn_metric_t *m = atomic_load_explicit(slot, memory_order_acquire);
    if (m)
        return m;
    char labels[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(labels, sizeof labels, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof labels)
        return NULL;
    /* Two racing first calls find the same series: storing it twice is
     * harmless. */
    m = cn_metric_series(NULL, f, labels);
    atomic_store_explicit(slot, m, memory_order_release);
    return m;
}

void cn_metric_add(cn_metric_t *m, int64_t n)
{
    if (!m || m->fam->kind == CN_METRIC_HISTOGRAM || (m->fam->kind == CN_METRIC_COUNTER && n < 0))
        return;
    atomic_fetch_add_explicit(&m->value, n, memory_order_relaxed);
}

void cn_metric_set(cn_metric_t *m, int64_t v)
{
    if (m && m->fam->kind == CN_METRIC_GAUGE)
        atomic_store_explicit(&m->value, v, memory_order_relaxed);
}

static double bits_double(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static uint64_t double_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

void cn_metric_observe(cn_metric_t *m, double v)
{
    if (!m || m->fam->kind != CN_METRIC_HISTOGRAM)
        return;
    const fam_t *x = m->fam;
    size_t k = 0;
    while (k < x->nbounds && v > x->bounds[k])
        k++;
    atomic_fetch_add_explicit(&m->bucket[k], 1, memory_order_relaxed);
    uint64_t old = atomic_load_explicit(&m->sum_bits, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&m->sum_bits, &old,
                                                  double_bits(bits_double(old) + v),
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
}

void cn_metric_observe_ns(cn_metric_t *m, int64_t ns)
{
    cn_metric_observe(m, (double)(ns > 0 ? ns : 0) / 1e9);
}

int64_t cn_metric_value(const cn_metric_t *m)
{
    if (!m)
        return 0;
    if (m->fam->kind != CN_METRIC_HISTOGRAM)
        return atomic_load_explicit(&m->value, memory_order_relaxed);
    uint64_t n = 0;
    for (size_t k = 0; k <= m->fam->nbounds; k++)
        n += atomic_load_explicit(&m->bucket[k], memory_order_relaxed);
    return (int64_t)n;
}

double cn_metric_sum(const cn_metric_t *m)
{
    if (!m || m->fam->kind != CN_METRIC_HISTOGRAM)
        return 0;
    return bits_double(atomic_load_explicit(&m->sum_bits, memory_order_relaxed));
}

/* `name{labels,extra}` or `name{extra}` or `name`, for one sample line. */
static cn_err_t sample_name(cn_buf_t *b, const char *name, const char *suffix, const char *labels,
                            const char *extra)
{
    cn_err_t e = cn_buf_printf(b, "%s%s", name, suffix);
    if (*labels || *extra)
        e |= cn_buf_printf(b, "{%s%s%s}", labels, *labels && *extra ? "," : "", extra);
    return e;
}

static cn_err_t render_histogram(cn_buf_t *b, const fam_t *x, const cn_metric_t *m)
{
    cn_err_t e = 0;
    uint64_t cum = 0;
    char le[48];
    for (size_t k = 0; k <= x->nbounds; k++) {
        cum += atomic_load_explicit(&m->bucket[k], memory_order_relaxed);
        if (k < x->nbounds)
            snprintf(le, sizeof le, "le=\"%g\"", x->bounds[k]);
        else
            snprintf(le, sizeof le, "le=\"+Inf\"");
        e |= sample_name(b, x->name, "_bucket", m->labels, le);
        e |= cn_buf_printf(b, " %" PRIu64 "\n", cum);
    }
    e |= sample_name(b, x->name, "_sum", m->labels, "");
    e |= cn_buf_printf(b, " %.9g\n", cn_metric_sum(m));
    e |= sample_name(b, x->name, "_count", m->labels, "");
    e |= cn_buf_printf(b, " %" PRIu64 "\n", cum);
    return e;
}

cn_err_t cn_metrics_render(cn_metrics_t *r, cn_buf_t *b)
{
    static const char *const type[] = { "counter", "gauge", "histogram" };
    if (!r)
        r = &process;
    cn_err_t e = 0;
    pthread_mutex_lock(&r->mu);
    for (const fam_t *x = r->head; x && !e; x = x->next) {
        if (!x->head)
            continue;
        e |= cn_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", x->name, x->help, x->name,
                           type[x->kind]);
        for (const cn_metric_t *m = x->head; m && !e; m = m->next) {
            if (x->kind == CN_METRIC_HISTOGRAM) {
                e |= render_histogram(b, x, m);
                continue;
            }
            e |= sample_name(b, x->name, "", m->labels, "");
            e |= cn_buf_printf(b, " %" PRId64 "\n",
                               atomic_load_explicit(&m->value, memory_order_relaxed));
        }
    }
    pthread_mutex_unlock(&r->mu);
    return e ? -ENOMEM : CN_OK;
}
