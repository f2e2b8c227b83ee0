/* The server object: configuration defaults, event loops, worker pools,
 * listeners, run and stop.  The loop itself is in loop.c. */
#include "net/net_int.h"

#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

void cn_limits_default(cn_limits_t *l)
{
    memset(l, 0, sizeof *l);
    l->max_conns = 1000;
    l->max_pending_per_source = 16;
    l->max_conns_per_principal = 0; /* off: enforced only through cn_conn_claim_principal */
    l->budget_bytes = 128u << 20;
    l->budget_per_conn = 16u << 20;
    l->budget_per_principal = 32u << 20;
    l->handshake_ms = 10000;
    l->idle_ms = 60000;
    l->io_floor_ms = 30000;
    l->io_rate_bps = 1000000;
    l->worker_share_pct = 50;
}

void cn_server_config_default(cn_server_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->workers[CN_POOL_HANDSHAKE] = 8;
    cfg->workers[CN_POOL_QUERY] = 16;
    /* 64: a durable small PUT waits in its pool thread for a group's sync, so
     * the pool's size bounds how many PUTs share one; 16 left batches of ~3
     * blobs and cost 20-30 % more CPU per PUT (docs/performance.md, "Parked
     * groups, the P4 probe, and the storage pool's size"). */
    cfg->workers[CN_POOL_STORAGE] = 64;
    for (int p = 0; p < CN_POOL_COUNT; p++)
        cfg->queue_len[p] = 256;
    cfg->grace_ms = 5000;
    cfg->handle_signals = false;
    /* One loop: two measured no faster on a loaded 2-CPU machine
     * (docs/performance.md, "Several event loops"); 0 asks for one per CPU. */
    cfg->loops = 1;
}

unsigned cn__loops_wanted(const cn_server_config_t *cfg)
{
    if (cfg->loops)
        return cfg->loops;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > CN_NET_LOOPS_AUTO_MAX ? CN_NET_LOOPS_AUTO_MAX : (unsigned)n;
}

void cn__loop_wake(cn__loop_t *l)
{
    uint64_t one = 1;
    ssize_t w = write(l->wake_fd, &one, sizeof one);
    (void)w;
}

void cn__loops_wake(cn_server_t *s)
{
    for (unsigned i = 0; i < s->nloops; i++)
        cn__loop_wake(&s->loops[i]);
}

/* Sets up loop i: its epoll set, eventfd and gauge. */
static cn_err_t loop_init(cn_server_t *s, unsigned i)
{
    static const cn_metric_family_t fam = {
        .name = "cairn_net_loop_connections",
        .help = "Connections living on each event loop now (every listener).",
        .kind = CN_METRIC_GAUGE,
    };
    cn__loop_t *l = &s->loops[i];
    l->srv = s;
    l->idx = i;
    pthread_mutex_init(&l->ret_mu, NULL);
    char lab[32];
    snprintf(lab, sizeof lab, "loop=\"%u\"", i);
    l->gauge = cn_metric_series(NULL, &fam, lab);
    l->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (l->wake_fd < 0)
        return -errno;
    return cn__poll_create(256, &l->poll);
}

static const char *const cn__pool_names[CN_POOL_COUNT] = { "hshake", "query", "store" };

/* ---- queue depths (cn_net_queued) -------------------------------------------
 * The servers of the process whose pools run, so that a sampler reads their
 * queues without a handle: a server joins once its pools have started and
 * leaves, under live_mu, before they stop (pools_stop).  Past LIVE_MAX
 * servers, the others are not counted. */
#define LIVE_MAX 64
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static cn_server_t *live[LIVE_MAX];

static void live_join(cn_server_t *s)
{
    pthread_mutex_lock(&live_mu);
    for (size_t i = 0; i < LIVE_MAX; i++)
        if (!live[i]) {
            live[i] = s;
            break;
        }
    pthread_mutex_unlock(&live_mu);
}

/* Leaves the live set, then stops every started pool.  Idempotent. */
static void pools_stop(cn_server_t *s)
{
    pthread_mutex_lock(&live_mu);
    for (size_t i = 0; i < LIVE_MAX; i++)
        if (live[i] == s)
            live[i] = NULL;
    pthread_mutex_unlock(&live_mu);
    for (int p = 0; p < CN_POOL_COUNT; p++)
        if (s->pools_started[p]) {
            cn__pool_stop(&s->pools[p]);
            s->pools_started[p] = false;
        }
}

void cn_net_queued(uint64_t depth[CN_POOL_COUNT])
{
    memset(depth, 0, CN_POOL_COUNT * sizeof *depth);
    pthread_mutex_lock(&live_mu);
    for (size_t i = 0; i < LIVE_MAX; i++)
        for (int p = 0; live[i] && p < CN_POOL_COUNT; p++)
            if (live[i]->pools_started[p])
                depth[p] += cn__queue_len(&live[i]->pools[p].q);
    pthread_mutex_unlock(&live_mu);
}

const char *cn_net_pool_name(int pool)
{
    static const char *const name[CN_POOL_COUNT] = { "handshake", "query", "storage" };
    return pool >= 0 && pool < CN_POOL_COUNT ? name[pool] : "unknown";
}

cn_err_t cn_server_create(const cn_server_config_t *cfg, cn_server_t **out)
{
    *out = NULL;
    for (int p = 0; p < CN_POOL_COUNT; p++)
        if (cfg->workers[p] == 0 || cfg->workers[p] > 4096 || cfg->queue_len[p] == 0)
            return CN_E_INVALID;
    if (cfg->grace_ms < 0 || cfg->loops > CN_NET_LOOPS_MAX)
        return CN_E_INVALID;
    cn_server_t *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    cn_err_t e;
    s->cfg = *cfg;
    s->sig_fd = -1;
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->share_mu, NULL);
    unsigned nloops = cn__loops_wanted(cfg);
    s->loops = calloc(nloops, sizeof *s->loops);
    if (!s->loops) {
        e = -ENOMEM;
        goto fail;
    }
    for (unsigned i = 0; i < nloops; i++) {
        s->loops[i].wake_fd = -1;
        s->nloops = i + 1;
        if ((e = loop_init(s, i)) < 0)
            goto fail;
    }
    if (cfg->handle_signals) {
        /* Blocked before the workers start, so they inherit the mask and the
         * signals arrive only through the loop's signalfd. */
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        pthread_sigmask(SIG_BLOCK, &set, NULL);
        s->sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
        if (s->sig_fd < 0) {
            e = -errno;
            goto fail;
        }
        /* A peer that goes away mid-write must be an error value, not a
         * signal: sendfile(2) and OpenSSL's writes can raise SIGPIPE. */
        signal(SIGPIPE, SIG_IGN);
    }
    for (int p = 0; p < CN_POOL_COUNT; p++) {
        e = cn__pool_start(&s->pools[p], cn__pool_names[p], cfg->workers[p], cfg->queue_len[p],
                           cn__worker_run, s);
        if (e < 0)
            goto fail;
        s->pools_started[p] = true;
    }
    live_join(s);
    *out = s;
    return CN_OK;
fail:
    cn_server_destroy(s);
    return e;
}

void cn__net_metrics_init(cn__net_metrics_t *m, const char *listener)
{
    static const cn_metric_family_t open = {
        .name = "cairn_connections_open",
        .help = "Connections open now, by listener.",
        .kind = CN_METRIC_GAUGE,
    };
    static const cn_metric_family_t accepted = {
        .name = "cairn_connections_accepted_total",
        .help = "Connections admitted, by listener.",
        .kind = CN_METRIC_COUNTER,
    };
    static const cn_metric_family_t refused = {
        .name = "cairn_connections_refused_total",
        .help = "Connections and requests refused by admission, by listener and reason.",
        .kind = CN_METRIC_COUNTER,
    };
    static const cn_metric_family_t bytes_in = {
        .name = "cairn_received_bytes_total",
        .help = "Bytes read from clients, by listener.",
        .kind = CN_METRIC_COUNTER,
    };
    static const cn_metric_family_t bytes_out = {
        .name = "cairn_sent_bytes_total",
        .help = "Bytes written to clients, by listener.",
        .kind = CN_METRIC_COUNTER,
    };
    static const cn_metric_family_t loop_answered = {
        .name = "cairn_net_loop_answered_total",
        .help = "Requests an event loop answered itself, with no hand-off to a worker, by "
                "listener.",
        .kind = CN_METRIC_COUNTER,
    };
    static const char *const reason[CN__REFUSE_COUNT] = { "limit", "per_source", "memory_budget",
                                                          "deadline" };
    char l[96];
    snprintf(l, sizeof l, "listener=\"%s\"", listener);
    m->open = cn_metric_series(NULL, &open, l);
    m->accepted = cn_metric_series(NULL, &accepted, l);
    m->bytes_in = cn_metric_series(NULL, &bytes_in, l);
    m->bytes_out = cn_metric_series(NULL, &bytes_out, l);
    m->loop_answered = cn_metric_series(NULL, &loop_answered, l);
    for (int i = 0; i < CN__REFUSE_COUNT; i++) {
        char lr[160];
        snprintf(lr, sizeof lr, "%s,reason=\"%s\"", l, reason[i]);
        m->refused[i] = cn_metric_series(NULL, &refused, lr);
    }
}

static bool limits_ok(const cn_limits_t *l)
{
    return l->handshake_ms > 0 && l->idle_ms > 0 && l->io_floor_ms >= 0 &&
           l->worker_share_pct <= 100;
}

/* The handshake takes any client certificate whose key the peer proves
 * (TLS checks the signature whatever this answers); the adapter verifies it
 * against its own CA (cn_conn_peer_cert). */
static int accept_any_cert(int preverify_ok, X509_STORE_CTX *ctx)
{
    (void)preverify_ok;
    (void)ctx;
    return 1;
}

cn_err_t cn_server_listen(cn_server_t *s, const cn_adapter_t *ad, void *actx,
                          const cn_listen_opts_t *o)
{
    if (!ad || !ad->name || !ad->open || !ad->serve || ad->head_len > CN_HEAD_MAX ||
        (ad->head_end && (ad->head_len || ad->head_wait_ms <= 0)) || !limits_ok(&o->limits) ||
        s->ran)
        return CN_E_INVALID;
    struct sockaddr_storage ss;
    socklen_t sl;
    if (cn_net_addr_parse(o->addr, &ss, &sl) < 0) {
        cn_error("net", "%s: bad listen address '%s' (want host:port or [v6]:port)", ad->name,
                 o->addr ? o->addr : "");
        return CN_E_INVALID;
    }
    bool tls = o->tls_cert || o->tls_key;
    if (tls && (!o->tls_cert || !o->tls_key)) {
        cn_error("net", "%s: TLS needs both a certificate and a key", ad->name);
        return CN_E_INVALID;
    }
    if (!tls && !o->allow_plaintext_public && !cn_net_addr_is_loopback((struct sockaddr *)&ss)) {
        cn_error("net",
                 "%s: refusing plaintext on non-loopback address %s: give a TLS "
                 "certificate and key, or allow it explicitly (--allow-plaintext-public)",
                 ad->name, o->addr);
        return CN_E_DENIED;
    }
    cn__listener_t **grown = realloc(s->ls, (s->nls + 1) * sizeof *grown);
    if (!grown)
        return -ENOMEM;
    s->ls = grown;
    cn__listener_t *ls = calloc(1, sizeof *ls);
    if (!ls)
        return -ENOMEM;
    cn_err_t e;
    ls->kind = CN__SRC_LISTENER;
    ls->srv = s;
    ls->ad = ad;
    ls->actx = actx;
    ls->lim = o->limits;
    ls->fd = -1;
    cn__net_metrics_init(&ls->m, ad->name);
    for (int p = CN_POOL_QUERY; p < CN_POOL_COUNT; p++) {
        unsigned pct = ls->lim.worker_share_pct;
        unsigned share = (unsigned)((uint64_t)s->cfg.workers[p] * pct / 100);
        ls->share[p] = pct == 0 || pct == 100 ? 0 : share ? share : 1;
    }
    if (tls) {
        /* pq-only whatever the environment says (SAU2, Scribe protocol 4);
         * else the Jay and HTTP rule (cn__tls_ctx_new). */
        e = o->tls_pq_only
                ? cn__tls_ctx_new_groups(o->tls_cert, o->tls_key, CN_TLS_GROUPS_PQ_ONLY, &ls->tls)
                : cn__tls_ctx_new(o->tls_cert, o->tls_key, &ls->tls);
        if (e < 0) {
            cn_error("net", "%s: cannot use TLS certificate %s / key %s", ad->name, o->tls_cert,
                     o->tls_key);
            goto fail;
        }
        if (o->tls_client_cert)
            SSL_CTX_set_verify(ls->tls, SSL_VERIFY_PEER, accept_any_cert);
    }
    ls->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (ls->fd < 0) {
        e = -errno;
        goto fail_log;
    }
    int one = 1;
    (void)setsockopt(ls->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (ss.ss_family == AF_INET6)
        (void)setsockopt(ls->fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (bind(ls->fd, (struct sockaddr *)&ss, sl) < 0 || listen(ls->fd, 1024) < 0) {
        e = -errno;
        goto fail_log;
    }
    ls->addrlen = sizeof ls->addr;
    if (getsockname(ls->fd, (struct sockaddr *)&ls->addr, &ls->addrlen) < 0) {
        e = -errno;
        goto fail_log;
    }
    char text[CN_NET_ADDR_LEN];
    cn_net_addr_format((struct sockaddr *)&ls->addr, text);
    if (tls)
        cn_info("net", "%s: TLS 1.3 with certificate %s", ad->name, o->tls_cert);
    cn_info("net", "listening %s on %s", ad->name, text);
    s->ls[s->nls++] = ls;
    return CN_OK;
fail_log:
    cn_error("net", "%s: cannot listen on %s: %s", ad->name, o->addr, cn_strerror(e));
fail:
    if (ls->fd >= 0)
        close(ls->fd);
    SSL_CTX_free(ls->tls);
    free(ls);
    return e;
}

cn_err_t cn_server_listener_addr(const cn_server_t *s, size_t i, struct sockaddr_storage *ss,
                                 socklen_t *len)
{
    if (i >= s->nls)
        return CN_E_NOT_FOUND;
    *ss = s->ls[i]->addr;
    *len = s->ls[i]->addrlen;
    return CN_OK;
}

static void *loop_thread(void *arg)
{
    cn__loop_t *l = arg;
    char name[16];
    snprintf(name, sizeof name, "loop%u", l->idx);
    pthread_setname_np(pthread_self(), name);
    l->result = cn__loop_run(l);
    if (l->result < 0)
        cn_server_stop(l->srv); /* a loop that failed cannot serve its connections */
    return NULL;
}

cn_err_t cn_server_run(cn_server_t *s)
{
    if (s->ran)
        return CN_E_INVALID;
    s->ran = true;
    cn_err_t e = CN_OK;
    /* Loops 1.. on threads of their own (inheriting the blocked signals);
     * loop 0, the acceptor, on the caller's. */
    for (unsigned i = 1; i < s->nloops; i++) {
        int r = pthread_create(&s->loops[i].thread, NULL, loop_thread, &s->loops[i]);
        if (r) {
            e = -r;
            cn_error("net", "cannot start event loop %u: %s", i, strerror(r));
            cn_server_stop(s);
            break;
        }
        s->loops[i].started = true;
    }
    cn_err_t e0 = cn__loop_run(&s->loops[0]);
    if (e0 < 0) {
        /* The other loops drain and return: nothing can be accepted now. */
        atomic_store(&s->accept_closed, true);
        cn_server_stop(s);
    }
    for (unsigned i = 1; i < s->nloops; i++)
        if (s->loops[i].started) {
            pthread_join(s->loops[i].thread, NULL);
            s->loops[i].started = false;
            if (s->loops[i].result < 0 && e == CN_OK)
                e = s->loops[i].result;
        }
    if (e0 < 0)
        e = e0;
    pools_stop(s);
    if (e == CN_OK)
        cn_info("net", "stopped");
    return e;
}

void cn_server_stop(cn_server_t *s)
{
    atomic_store(&s->stop_requested, true);
    cn__loops_wake(s);
}

bool cn_server_stopping(const cn_server_t *s)
{
    return atomic_load(&s->stop_requested);
}

void cn_server_destroy(cn_server_t *s)
{
    if (!s)
        return;
    pools_stop(s);
    for (size_t i = 0; i < s->nls; i++) {
        cn__listener_t *ls = s->ls[i];
        if (ls->fd >= 0)
            close(ls->fd);
        SSL_CTX_free(ls->tls);
        cn__count_clear(&ls->sources);
        cn__count_clear(&ls->principals);
        cn__count_clear(&ls->anon);
        free(ls);
    }
    free(s->ls);
    for (unsigned i = 0; i < s->nloops; i++) {
        cn__loop_t *l = &s->loops[i];
        cn__poll_free(l->poll);
        if (l->wake_fd >= 0)
            close(l->wake_fd);
        pthread_mutex_destroy(&l->ret_mu);
    }
    free(s->loops);
    if (s->sig_fd >= 0)
        close(s->sig_fd);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->share_mu);
    free(s);
}
