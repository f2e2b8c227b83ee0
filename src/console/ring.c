/* The console's metrics ring: one sample every 5 s for the last hour (720)
 * of what the process already counts — requests per face and status class,
 * bytes in and out, p50/p99 latency, open connections, requests queued on
 * each worker pool, blobs and bytes the store wrote, bytes the sweeper
 * freed — as deltas of the process metrics registry (cairn/metrics.h), so
 * that no request path keeps a second account.
 *
 * The sampler renders the registry's text every interval and parses the
 * few families it reads, and reads the pool queues' depths
 * (cn_net_queued); nothing here touches a hot path.  Store figures are
 * what the store wrote per interval, plus the store's running totals (the
 * gauges cairn_store_blobs and cairn_store_bytes, kept exact by the store:
 * src/store/usage.c) as values at each sample's end.  The ring is
 * process-wide, as the registry it samples is: consoles share it (started
 * by the first cn__console_ring_start, stopped with the last
 * cn__console_ring_stop), so two consoles of one process never count the
 * same requests twice.  CAIRN_CONSOLE_METRICS_MS (tests) shortens the
 * interval.  Never blocks a request beyond copying the ring under its
 * mutex. */
#include "console_data.h"

#include "cairn/metrics.h"
#include "cairn/net.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RING_N 720
#define RING_STEP_MS 5000
#define FACE_MAX 8
#define FACE_LEN 16
#define LE_MAX 20
#define NCLASS 5 /* status classes 1xx .. 5xx */

/* Cumulative values read from one rendering of the registry. */
typedef struct snap {
    char face[FACE_MAX][FACE_LEN];
    uint64_t face_n[FACE_MAX];
    uint64_t cls[FACE_MAX][NCLASS]; /* cairn_requests_total{face,status} */
    bool has_cls[FACE_MAX];         /* the face reports status classes */
    int nfaces;
    double le[LE_MAX]; /* the request-duration buckets, summed over series */
    uint64_t le_n[LE_MAX];
    int nle;
    uint64_t bytes_in, bytes_out, store_bytes, store_blobs, swept;
    int64_t conns;
    int64_t held_blobs, held_bytes; /* the store's totals (gauges); -1: not reported */
    uint64_t queued[CN_POOL_COUNT];
} snap_t;

/* One sample: deltas over its interval (conns: the gauge at its end). */
typedef struct sample {
    int64_t t; /* unix seconds at its end */
    char face[FACE_MAX][FACE_LEN];
    uint64_t face_n[FACE_MAX];
    uint64_t cls[FACE_MAX][NCLASS];
    bool has_cls[FACE_MAX], seen[FACE_MAX][NCLASS]; /* seen: answered since the start */
    int nfaces;
    double p50_ms, p99_ms; /* -1: no request */
    uint64_t bytes_in, bytes_out, store_bytes, store_blobs, swept;
    int64_t conns;
    int64_t held_blobs, held_bytes; /* the store's totals at its end; -1: none */
    uint64_t queued[CN_POOL_COUNT]; /* at its end */
} sample_t;

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned users;
    bool stop, running;
    pthread_t thread;
    int64_t step_ms;
    sample_t ring[RING_N];
    size_t head, n; /* next slot, samples held */
} R = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

/* The value of label name in labels ("a=\"x\",b=\"y\"") into out. */
static bool label(const char *labels, size_t len, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    for (const char *p = labels; p && p + nl + 2 < labels + len;) {
        if (strncmp(p, name, nl) == 0 && p[nl] == '=' && p[nl + 1] == '"') {
            const char *v = p + nl + 2, *q = memchr(v, '"', (size_t)(labels + len - v));
            if (!q || (size_t)(q - v) >= cap)
                return false;
            memcpy(out, v, (size_t)(q - v));
            out[q - v] = 0;
            return true;
        }
        p = memchr(p, ',', (size_t)(labels + len - p));
        p = p ? p + 1 : NULL;
    }
    return false;
}

/* The index of face in s, added when new; -1 when the table is full. */
static int face_at(snap_t *s, const char *face)
{
    int i = 0;
    while (i < s->nfaces && strcmp(s->face[i], face) != 0)
        i++;
    if (i == s->nfaces) {
        if (s->nfaces == FACE_MAX)
            return -1;
        snprintf(s->face[s->nfaces++], FACE_LEN, "%s", face);
    }
    return i;
}

static void add_face(snap_t *s, const char *face, uint64_t v)
{
    int i = face_at(s, face);
    if (i >= 0)
        s->face_n[i] += v;
}

/* A cairn_requests_total series: its face and status class ("2xx"). */
static void add_class(snap_t *s, const char *lab, size_t lablen, uint64_t v)
{
    char face[FACE_LEN], st[8];
    if (!label(lab, lablen, "face", face, sizeof face) ||
        !label(lab, lablen, "status", st, sizeof st) || st[0] < '1' || st[0] > '5' ||
        strcmp(st + 1, "xx") != 0)
        return;
    int i = face_at(s, face);
    if (i < 0)
        return;
    s->has_cls[i] = true;
    s->cls[i][st[0] - '1'] += v;
}

static void add_le(snap_t *s, double le, uint64_t v)
{
    int i = 0;
    while (i < s->nle && s->le[i] != le)
        i++;
    if (i == s->nle) {
        if (s->nle == LE_MAX)
            return;
        int k = s->nle++;
        while (k > 0 && s->le[k - 1] > le) { /* keep the bounds ascending */
            s->le[k] = s->le[k - 1];
            s->le_n[k] = s->le_n[k - 1];
            k--;
        }
        s->le[k] = le;
        s->le_n[k] = 0;
        i = k;
    }
    s->le_n[i] += v;
}

/* One line of the text ("name{labels} value") into s. */
static void snap_line(snap_t *s, const char *line, size_t len)
{
    const char *brace = memchr(line, '{', len), *sp = memrchr(line, ' ', len);
    if (!sp || line[0] == '#')
        return;
    size_t nlen = (size_t)((brace && brace < sp ? brace : sp) - line);
    const char *lab = brace && brace < sp ? brace + 1 : "";
    size_t lablen = brace && brace < sp ? (size_t)(sp - 1 - lab) : 0;
    double v = strtod(sp + 1, NULL);
    uint64_t u = v > 0 ? (uint64_t)v : 0;
    char tmp[FACE_LEN];
#define IS(n) (nlen == sizeof(n) - 1 && memcmp(line, n, nlen) == 0)
    if (IS("cairn_request_duration_seconds_count") && label(lab, lablen, "face", tmp, sizeof tmp))
        add_face(s, tmp, u);
    else if (IS("cairn_requests_total"))
        add_class(s, lab, lablen, u);
    else if (IS("cairn_request_duration_seconds_bucket") &&
             label(lab, lablen, "le", tmp, sizeof tmp))
        add_le(s, strcmp(tmp, "+Inf") == 0 ? 1e300 : strtod(tmp, NULL), u);
    else if (IS("cairn_received_bytes_total"))
        s->bytes_in += u;
    else if (IS("cairn_sent_bytes_total"))
        s->bytes_out += u;
    else if (IS("cairn_connections_open"))
        s->conns += (int64_t)v;
    else if (IS("cairn_store_written_bytes_total"))
        s->store_bytes += u;
    else if (IS("cairn_store_blobs_written_total"))
        s->store_blobs += u;
    else if (IS("cairn_store_sweep_freed_bytes_total"))
        s->swept += u;
    else if (IS("cairn_store_blobs"))
        s->held_blobs = (int64_t)v;
    else if (IS("cairn_store_bytes"))
        s->held_bytes = (int64_t)v;
#undef IS
}

static cn_err_t snap_take(snap_t *s)
{
    memset(s, 0, sizeof *s);
    s->held_blobs = s->held_bytes = -1;
    cn_buf_t b = { 0 };
    cn_err_t e = cn_metrics_render(NULL, &b);
    for (size_t off = 0; e == CN_OK && off < b.len;) {
        const char *line = (const char *)b.data + off;
        const char *nl = memchr(line, '\n', b.len - off);
        size_t len = nl ? (size_t)(nl - line) : b.len - off;
        snap_line(s, line, len);
        off += len + 1;
    }
    cn_buf_free(&b);
    cn_net_queued(s->queued);
    return e;
}

static uint64_t sub(uint64_t a, uint64_t b)
{
    return a > b ? a - b : 0;
}

/* The q-quantile in ms of the request durations between a and b, from
 * their cumulative buckets (linear within a bucket); -1 when none. */
static double quantile(const snap_t *a, const snap_t *b, double q)
{
    uint64_t total = b->nle ? sub(b->le_n[b->nle - 1], 0) : 0;
    uint64_t before = 0;
    for (int i = 0; i < a->nle; i++)
        if (a->le[i] == b->le[b->nle - 1])
            before = a->le_n[i];
    total = sub(total, before);
    if (!total)
        return -1;
    double want = q * (double)total, lo = 0, prev = 0;
    for (int i = 0; i < b->nle; i++) {
        uint64_t was = 0;
        for (int k = 0; k < a->nle; k++)
            if (a->le[k] == b->le[i])
                was = a->le_n[k];
        double cum = (double)sub(b->le_n[i], was);
        if (cum >= want) {
            double hi = b->le[i] >= 1e300 ? lo : b->le[i];
            double f = cum > prev ? (want - prev) / (cum - prev) : 1;
            return 1000 * (lo + (hi - lo) * f);
        }
        prev = cum;
        lo = b->le[i] >= 1e300 ? lo : b->le[i];
    }
    return 1000 * lo;
}

/* The cumulative count of status class c (0: 1xx) of face in a. */
static uint64_t face_class(const snap_t *a, const char *face, int c)
{
    for (int k = 0; k < a->nfaces; k++)
        if (strcmp(a->face[k], face) == 0)
            return a->cls[k][c];
    return 0;
}

static void sample_make(const snap_t *a, const snap_t *b, sample_t *s)
{
    memset(s, 0, sizeof *s);
    s->t = cn_wall_ms() / 1000;
    for (int i = 0; i < b->nfaces; i++) {
        uint64_t was = 0;
        for (int k = 0; k < a->nfaces; k++)
            if (strcmp(a->face[k], b->face[i]) == 0)
                was = a->face_n[k];
        memcpy(s->face[i], b->face[i], FACE_LEN);
        s->face_n[i] = sub(b->face_n[i], was);
        s->has_cls[i] = b->has_cls[i];
        for (int c = 0; c < NCLASS; c++) {
            s->cls[i][c] = sub(b->cls[i][c], face_class(a, b->face[i], c));
            s->seen[i][c] = b->cls[i][c] > 0;
        }
    }
    s->nfaces = b->nfaces;
    s->p50_ms = quantile(a, b, 0.50);
    s->p99_ms = quantile(a, b, 0.99);
    s->bytes_in = sub(b->bytes_in, a->bytes_in);
    s->bytes_out = sub(b->bytes_out, a->bytes_out);
    s->store_bytes = sub(b->store_bytes, a->store_bytes);
    s->store_blobs = sub(b->store_blobs, a->store_blobs);
    s->swept = sub(b->swept, a->swept);
    s->conns = b->conns;
    s->held_blobs = b->held_blobs;
    s->held_bytes = b->held_bytes;
    memcpy(s->queued, b->queued, sizeof s->queued);
}

static void *sampler(void *arg)
{
    (void)arg;
    snap_t *prev = calloc(2, sizeof *prev);
    if (!prev)
        return NULL;
    snap_t *cur = prev + 1;
    (void)snap_take(prev);
    pthread_mutex_lock(&R.mu);
    while (!R.stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += R.step_ms / 1000;
        ts.tv_nsec += (R.step_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        if (pthread_cond_timedwait(&R.cv, &R.mu, &ts) == 0 || R.stop)
            continue;
        pthread_mutex_unlock(&R.mu);
        sample_t s;
        bool ok = snap_take(cur) == CN_OK;
        if (ok)
            sample_make(prev, cur, &s);
        pthread_mutex_lock(&R.mu);
        if (ok) {
            R.ring[R.head] = s;
            R.head = (R.head + 1) % RING_N;
            R.n += R.n < RING_N;
            snap_t *t = prev;
            prev = cur;
            cur = t;
        }
    }
    pthread_mutex_unlock(&R.mu);
    free(prev < cur ? prev : cur);
    return NULL;
}

cn_err_t cn__console_ring_start(cn_console_t *con)
{
    (void)con;
    cn_err_t e = CN_OK;
    pthread_mutex_lock(&R.mu);
    if (R.users++ == 0) {
        const char *env = getenv("CAIRN_CONSOLE_METRICS_MS");
        long ms = env ? strtol(env, NULL, 10) : 0;
        R.step_ms = ms >= 100 && ms <= RING_STEP_MS ? ms : RING_STEP_MS;
        R.stop = false;
        R.head = R.n = 0;
        int rc = pthread_create(&R.thread, NULL, sampler, NULL);
        R.running = rc == 0;
        if (rc) {
            R.users--;
            e = -rc;
        }
    }
    pthread_mutex_unlock(&R.mu);
    return e;
}

void cn__console_ring_stop(cn_console_t *con)
{
    (void)con;
    pthread_mutex_lock(&R.mu);
    bool join = R.users > 0 && --R.users == 0 && R.running;
    if (join) {
        R.stop = true;
        pthread_cond_broadcast(&R.cv);
    }
    pthread_mutex_unlock(&R.mu);
    if (!join)
        return;
    pthread_join(R.thread, NULL);
    pthread_mutex_lock(&R.mu);
    R.running = false;
    pthread_mutex_unlock(&R.mu);
}

/* A face's requests of the interval: {"2xx": n, "4xx": m, ...} by status
 * class when the face reports them (every class it has answered since the
 * start, 0 included), else {"all": n}; never both, so a sum over the
 * members is the face's total. */
static json_t *face_json(const sample_t *s, int i)
{
    static const char *const name[NCLASS] = { "1xx", "2xx", "3xx", "4xx", "5xx" };
    if (!s->has_cls[i])
        return json_pack("{s:I}", "all", (json_int_t)s->face_n[i]);
    json_t *o = json_object();
    for (int c = 0; o && c < NCLASS; c++)
        if (s->cls[i][c] || s->seen[i][c])
            json_object_set_new(o, name[c], json_integer((json_int_t)s->cls[i][c]));
    return o;
}

static json_t *sample_json(const sample_t *s)
{
    json_t *req = json_object(), *queues = json_object();
    for (int i = 0; req && i < s->nfaces; i++)
        json_object_set_new(req, s->face[i], face_json(s, i));
    for (int p = 0; queues && p < CN_POOL_COUNT; p++)
        json_object_set_new(queues, cn_net_pool_name(p), json_integer((json_int_t)s->queued[p]));
    return json_pack(
        "{s:I,s:o*,s:I,s:I,s:o,s:o,s:I,s:o*,s:I,s:I,s:I,s:o,s:o}", "t", (json_int_t)s->t,
        "requests", req, "bytes_in", (json_int_t)s->bytes_in, "bytes_out", (json_int_t)s->bytes_out,
        "p50_ms", s->p50_ms < 0 ? json_null() : json_real(s->p50_ms), "p99_ms",
        s->p99_ms < 0 ? json_null() : json_real(s->p99_ms), "connections", (json_int_t)s->conns,
        "queues", queues, "store_bytes", (json_int_t)s->store_bytes, "store_blobs",
        (json_int_t)s->store_blobs, "swept_bytes", (json_int_t)s->swept, "stored_blobs",
        s->held_blobs < 0 ? json_null() : json_integer((json_int_t)s->held_blobs), "stored_bytes",
        s->held_bytes < 0 ? json_null() : json_integer((json_int_t)s->held_bytes));
}

json_t *cn__console_ring_samples(cn_console_t *con)
{
    (void)con;
    json_t *arr = json_array();
    pthread_mutex_lock(&R.mu);
    for (size_t i = 0; arr && i < R.n; i++) {
        size_t slot = (R.head + RING_N - R.n + i) % RING_N;
        json_array_append_new(arr, sample_json(&R.ring[slot]));
    }
    pthread_mutex_unlock(&R.mu);
    return arr;
}

/* The interval in seconds (for GET metrics). */
double cn__console_ring_interval_s(void)
{
    pthread_mutex_lock(&R.mu);
    double s = (R.step_ms ? R.step_ms : RING_STEP_MS) / 1000.0;
    pthread_mutex_unlock(&R.mu);
    return s;
}
