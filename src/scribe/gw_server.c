/* The gateway's adapter (protocol 2 on plaintext storage, protocol 4 on
 * scribes:// storage, one or the other per configuration): the client
 * handshake (on protocol 4 a user's hello waits until a storage server has
 * accepted an upstream session speaking for the user), the gateway's own
 * sessions and their data connections (up to four bound to a control
 * session, inactivity counted per session as on storage) and frame
 * admission (the header rules, each opcode's exact payload bound, the
 * listener's memory budget), all three through server_session.c as on
 * storage, and the dispatch: discover from configuration,
 * repo_create / repo_info / repo_list by name, every other repository
 * operation forwarded to its owner; a worker keeps a client whose requests
 * come back to back for its next one (gw_serve).  It must never read past
 * a frame without giving the bytes back to the stream, and never answer an
 * operation storage has to decide. */
#include "gw_int.h"

#include "cairn/crypto.h"
#include "cairn/meta.h"
#include "cairn/metrics.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

cn_err_t cn__gw_fail(cn__gw_call_t *k, uint16_t code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    cn__scribe_vmsg(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return cn__scribe_send_error(k->c, &k->gc->out, k->gc->codec, &k->hdr, code, msg);
}

cn_err_t cn__gw_reply(cn__gw_call_t *k)
{
    return cn__scribe_send_last(k->c, k->hdr.opcode, k->hdr.request_id, &k->gc->out);
}

cn_err_t cn__gw_unavailable(cn__gw_call_t *k, size_t server)
{
    const char *ns = k->gc->g->cfg.servers[server].ns;
    cn__gw_refusal_t *rf = k->gc->refusal;
    if (rf && rf->code) {
        /* storage refused this client's session (protocol 4): its verdict,
         * not an outage, so the client sees storage's code and reason */
        uint16_t code = rf->code;
        rf->code = 0;
        return cn__gw_fail(k, code, "storage server %zu of %zu refused the session: %s", server + 1,
                           k->gc->g->cfg.n, rf->msg);
    }
    return cn__gw_fail(k, CN_SCRIBE_E_STORAGE_FAILURE,
                       "storage server %zu of %zu%s%s%s does not answer; retry later", server + 1,
                       k->gc->g->cfg.n, *ns ? " (namespace " : "", ns, *ns ? ")" : "");
}

const char *cn__gw_server_ns(const cn__gw_t *g, size_t server)
{
    return g->cfg.servers[server].ns;
}

size_t cn__gw_wire_name(const cn__gw_t *g, const char *ns, const char *name, size_t nlen, char *out,
                        size_t cap)
{
    int n = g->cfg.nns > 1 ? snprintf(out, cap, "%s/%.*s", ns, (int)nlen, name)
                           : snprintf(out, cap, "%.*s", (int)nlen, name);
    return n < 0 ? 0 : (size_t)n >= cap ? cap - 1 : (size_t)n;
}

/* ---- the handshake (server_session.c) ------------------------------------------------------- */
static cn__scribe_hs_t gw_hs(const cn__gw_t *g)
{
    return (cn__scribe_hs_t){
        .version = g->cfg.tls ? 4 : 2,
        .test_codec = CN_SCRIBE_TEST_CODEC,
        .budget = false,
        .inactivity_s = g->inactivity_s,
        .unsupported = g->cfg.tls ? "this gateway speaks protocol 4 with codec 1 only"
                                  : "this gateway speaks protocol 2 with codec 1 only",
    };
}

static void conn_free(cn__gw_conn_t *gc)
{
    if (!gc)
        return;
    cn__gw_cursors_free(gc); /* first: their sessions go back to the connection's */
    cn__gw_conn_ups_free(gc);
    free(gc->pem);
    cn_buf_free(&gc->in);
    cn_buf_free(&gc->out);
    free(gc->io);
    free(gc);
}

/* The per-principal connection cap on the gateway's listener (issues
 * 21/23; max_connections_per_principal of [scribe-tls], 64 by default, as
 * on storage: docs/protocol/scribe.md 15.6, "Admission"), claimed for peer
 * before anything else is done for it.  The principal is the certificate's
 * user (its subject CN) bound to the key the TLS handshake proved: the
 * gateway verifies no certificate itself (storage does, later), so a
 * certificate forged to name a user must not take that user's places; the
 * user's own connections from one login all count against one cap.  0, or
 * the handshake code with why filled. */
static uint16_t gw_claim(cn_conn_t *c, X509 *peer, char *why, size_t cap)
{
    char user[128] = "", key[sizeof user + 1 + 2 * 32];
    unsigned char md[32];
    unsigned mdlen = 0;
    int n = X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, user,
                                      (int)sizeof user);
    if (n <= 0 || (size_t)n >= sizeof user)
        user[0] = '\0';
    cn_err_t e =
        X509_pubkey_digest(peer, EVP_sha256(), md, &mdlen) == 1 && mdlen == 32 ? CN_OK : -ENOMEM;
    ERR_clear_error();
    size_t k = (size_t)snprintf(key, sizeof key, "%s/", user);
    for (unsigned i = 0; e >= 0 && i < 32; i++)
        k += (size_t)snprintf(key + k, sizeof key - k, "%02x", md[i]);
    if (e >= 0)
        e = cn_conn_claim_principal(c, key);
    if (e == CN_E_BUSY)
        snprintf(why, cap, "too many concurrent connections for this identity");
    else if (e < 0)
        snprintf(why, cap, "out of memory");
    return e == CN_E_BUSY ? CN_SCRIBE_E_BUSY : e < 0 ? CN_SCRIBE_E_INTERNAL : 0;
}

/* The wall second after which peer is no longer valid; 1 (long past) when
 * it cannot be read, so that its sessions are never reused. */
static int64_t not_after_s(X509 *peer)
{
    struct tm tm;
    const ASN1_TIME *t = X509_get0_notAfter(peer);
    if (!t || ASN1_TIME_to_tm(t, &tm) != 1)
        return 1;
    return (int64_t)timegm(&tm);
}

/* Protocol 4: who the client is.  Anonymous (caller 0, no certificate) or
 * direct (caller 1 and its access certificate in TLS, kept as PEM to be
 * forwarded in upstream hellos with caller 2); a gateway does not take
 * delegated callers.  The gateway judges no certificate itself: storage
 * verifies it and the user's role on every upstream session.  A direct
 * caller's connection is claimed for its principal first (gw_claim).  *who names
 * the certificate (its SHA-256) so that a data connection binds only with
 * the same one. */
static cn_err_t v4_caller(cn__gw_conn_t *gc, cn_conn_t *c, const cn_scribe_hello_t *h, uint64_t rid,
                          cn_scribe_principal_t *who)
{
    X509 *peer = cn_conn_peer_cert(c);
    if (h->caller == CN_SCRIBE_CALLER_DELEGATED)
        return cn__scribe_hello_fail(c, rid, CN_SCRIBE_E_UNAUTHENTICATED,
                                     "a gateway does not accept delegated callers");
    if (!peer != (h->caller == CN_SCRIBE_CALLER_ANONYMOUS))
        return cn__scribe_hello_fail(c, rid, CN_SCRIBE_E_UNAUTHENTICATED,
                                     peer ? "an anonymous caller (tag 0) presents no client "
                                            "certificate"
                                          : "an access certificate is required");
    gc->user.caller = CN_SCRIBE_CALLER_ANONYMOUS;
    if (!peer)
        return CN_OK;
    char why[96];
    uint16_t code = gw_claim(c, peer, why, sizeof why);
    if (code)
        return cn__scribe_hello_fail(c, rid, code, why);
    BIO *bio = BIO_new(BIO_s_mem());
    char *pem = NULL;
    long n = bio && PEM_write_bio_X509(bio, peer) == 1 ? BIO_get_mem_data(bio, &pem) : 0;
    unsigned char md[32];
    unsigned mdlen = 0;
    if (n > 0 && n <= 16384 && (gc->pem = malloc((size_t)n)) &&
        X509_digest(peer, EVP_sha256(), md, &mdlen) == 1 && mdlen == 32) {
        memcpy(gc->pem, pem, (size_t)n);
        gc->user = (cn__gw_user_t){ .caller = CN_SCRIBE_CALLER_DELEGATED,
                                    .pem = gc->pem,
                                    .pem_len = (size_t)n,
                                    .until_s = not_after_s(peer) };
        memcpy(gc->user.key, md, sizeof gc->user.key);
        who->present = true;
        for (unsigned i = 0; i < 32; i++)
            snprintf(who->key_id + 2 * i, 3, "%02x", md[i]);
    }
    BIO_free(bio);
    ERR_clear_error();
    if (!who->present)
        return cn__scribe_hello_fail(c, rid, CN_SCRIBE_E_UNAUTHENTICATED,
                                     "the client certificate cannot be forwarded");
    return CN_OK;
}

/* Protocol 4: storage's verdict on a user's certificate, before the client's
 * session is answered (cn__gw_up_hello).  A control connection of a user
 * only: an anonymous caller is not authenticated, and a data connection
 * binds to a session whose hello was judged. */
static cn_err_t hello_upstream(cn__gw_conn_t *gc, cn_conn_t *c, uint64_t rid)
{
    if (!gc->g->cfg.tls || gc->user.caller != CN_SCRIBE_CALLER_DELEGATED || gc->data)
        return CN_OK;
    cn__gw_refusal_t rf;
    size_t server = 0;
    /* Half a second before the listener's own deadline closes the
     * connection: time to write the answer when no server answered. */
    cn_err_t e = cn__gw_up_hello(gc, cn_conn_handshake_deadline(c) - 500, &rf, &server);
    if (e != CN_E_UNAVAILABLE)
        return e;
    char msg[400];
    if (rf.code)
        snprintf(msg, sizeof msg, "storage server %zu of %zu refused the session: %s", server + 1,
                 gc->g->cfg.n, rf.msg);
    else
        snprintf(msg, sizeof msg,
                 "no storage server answered to confirm the access certificate; retry later");
    return cn__scribe_hello_fail(c, rid, rf.code ? rf.code : CN_SCRIBE_E_AUTH_UNAVAILABLE, msg);
}

static cn_err_t gw_open(void *actx, cn_conn_t *c, void **cstate)
{
    cn__gw_t *g = actx;
    cn_scribe_hdr_t h;
    cn_scribe_hello_t hello;
    cn__scribe_hs_t hs = gw_hs(g);
    uint8_t *body = malloc(CN_SCRIBE_HELLO_BOUND);
    if (!body)
        return -ENOMEM;
    cn_err_t e = cn__scribe_read_hello(c, &hs, body, &h, &hello);
    cn__gw_conn_t *gc = e < 0 ? NULL : calloc(1, sizeof *gc);
    if (gc)
        gc->io = malloc(CN__GW_IO);
    free(body); /* hello's views die here: only numbers are read below */
    if (!gc || !gc->io) {
        conn_free(gc);
        return e < 0 ? e : -ENOMEM;
    }
    gc->g = g;
    gc->codec = hello.codec;
    gc->compression = (hello.caps & CN_SCRIBE_CAP_LZ4) ? 1 : 0;
    gc->data = hello.bind_session != 0;
    cn_scribe_principal_t who;
    memset(&who, 0, sizeof who);
    if (g->cfg.tls && ((e = v4_caller(gc, c, &hello, h.request_id, &who)) < 0 ||
                       (e = hello_upstream(gc, c, h.request_id)) < 0)) {
        conn_free(gc);
        return e;
    }
    e = cn__scribe_hello_answer(&g->sessions, c, &hs, h.request_id, &hello, &who, &gc->ss);
    if (e < 0) {
        conn_free(gc);
        return e;
    }
    gc->session = gc->ss->id;
    *cstate = gc;
    return CN_OK;
}

/* ---- dispatch ----------------------------------------------------------------------------------- */
/* Where a forwarded request names its repository: the id's offset in the
 * payload (0, or 4 after a bytes32 length), or -1 for an opcode the
 * gateway answers itself or does not offer. */
static int id_offset(uint16_t op)
{
    switch (op) {
    case CN_SCRIBE_OP_MERGE_SUBMIT:
    case CN_SCRIBE_OP_CHERRY_PICK_SUBMIT:
    case CN_SCRIBE_OP_TREE_PROOF: return 4;
    case CN_SCRIBE_OP_HELLO:
    case CN_SCRIBE_OP_DISCOVER:
    case CN_SCRIBE_OP_REPO_CREATE:
    case CN_SCRIBE_OP_REPO_INFO:
    case CN_SCRIBE_OP_REPO_LIST:
    case CN_SCRIBE_OP_INSTANCE_STATUS:
    case CN_SCRIBE_OP_AUTHORIZE_UPLOAD:
    case CN_SCRIBE_OP_AUTHORIZE_REPO_CREATE: return -1;
    default: return 0;
    }
}

static cn_err_t op_discover(cn__gw_call_t *k)
{
    const cn_gw_config_t *cfg = &k->gc->g->cfg;
    if (k->len)
        return cn__gw_fail(k, CN_SCRIBE_E_MALFORMED, "discover has no payload");
    cn_scribe_str_t labels[CN_GW_MAX_SERVERS];
    for (size_t i = 0; i < cfg->n; i++)
        labels[i] = cn_scribe_cstr(cfg->servers[i].ns);
    cn_buf_reset(&k->gc->out);
    CN_TRY(cn_scribe_enc_discover(&k->gc->out, k->gc->codec, CN_SCRIBE_ROLE_GATEWAY, cfg->tls,
                                  labels, (uint32_t)cfg->n));
    return cn__gw_reply(k);
}

static cn_err_t dispatch(cn__gw_call_t *k)
{
    switch (k->hdr.opcode) {
    case CN_SCRIBE_OP_DISCOVER: return op_discover(k);
    case CN_SCRIBE_OP_REPO_CREATE: return cn__gw_op_create(k);
    case CN_SCRIBE_OP_REPO_INFO: return cn__gw_op_info(k);
    case CN_SCRIBE_OP_REPO_LIST: return cn__gw_op_list(k);
    default: break;
    }
    int at = id_offset(k->hdr.opcode);
    if (at < 0 || k->len < (size_t)at + 16)
        return at < 0
                   ? cn__gw_fail(k, CN_SCRIBE_E_UNSUPPORTED_OPERATION,
                                 "%s is not offered by a gateway", cn_scribe_op_name(k->hdr.opcode))
                   : cn__gw_fail(k, CN_SCRIBE_E_MALFORMED, "malformed %s request",
                                 cn_scribe_op_name(k->hdr.opcode));
    size_t server = 0;
    bool answered = false;
    cn_err_t e = cn__gw_owner_by_id(k, k->payload + at, &server, &answered);
    if (e < 0 || answered)
        return e;
    return cn__gw_forward(k, server);
}

static cn_err_t serve_one(cn__gw_conn_t *gc, cn_conn_t *c, const uint8_t *head)
{
    cn__gw_call_t k = { .gc = gc, .c = c };
    if (cn_scribe_hdr_parse(head, &k.hdr) < 0)
        return CN_E_PROTOCOL;
    cn_err_t e = cn__scribe_frame_admit(c, &k.hdr, false);
    if (e == CN__SCRIBE_FRAME_DRAINED) /* reserved or unknown (or a second hello) */
        return k.hdr.opcode == CN_SCRIBE_OP_HELLO
                   ? cn__gw_fail(&k, CN_SCRIBE_E_MALFORMED, "the handshake is already done")
                   : cn__gw_fail(&k, CN_SCRIBE_E_UNSUPPORTED_OPERATION,
                                 "opcode %u is not offered by this gateway", k.hdr.opcode);
    if (e == CN__SCRIBE_FRAME_BUSY) {
        cn__gw_fail(&k, CN_SCRIBE_E_BUSY, "gateway memory is busy; retry");
        return CN_E_BUSY;
    }
    if (e < 0)
        return e;
    e = cn__scribe_frame_body(c, &k.hdr, &gc->in);
    if (e >= 0) {
        k.payload = gc->in.data;
        k.len = k.hdr.length;
        e = dispatch(&k);
    }
    cn__scribe_frame_done(c, &k.hdr, &gc->in, &gc->out);
    return e < 0 ? e : CN_OK;
}

/* The head of the client's next request, waited for at most
 * CN__GW_LINGER_MS on this worker.  What is read past the head goes back
 * to the stream (cn_conn_unread) for the request's body, and so does a head
 * cut short by the wait: then *got is false and the loop reads it. */
static cn_err_t linger_head(cn__gw_conn_t *gc, cn_conn_t *c, uint8_t head[CN_SCRIBE_HDR_LEN],
                            bool *got)
{
    uint8_t *buf = gc->io; /* free between two requests */
    size_t have = 0;
    int64_t deadline = cn_mono_ms() + CN__GW_LINGER_MS;
    *got = false;
    while (have < CN_SCRIBE_HDR_LEN) {
        size_t n = 0;
        cn_err_t e = cn_conn_read_some(c, buf + have, CN__GW_LINGER_TAKE - have, &n, deadline);
        if (e == CN_E_TIMEOUT) /* nothing was lost: the bytes go back */
            return cn_conn_unread(c, buf, have);
        if (e < 0)
            return e;
        have += n;
    }
    memcpy(head, buf, CN_SCRIBE_HDR_LEN);
    *got = true;
    return cn_conn_unread(c, buf + CN_SCRIBE_HDR_LEN, have - CN_SCRIBE_HDR_LEN);
}

/* Whether this worker serves the client's next request too (*got, its head
 * in head): only for a client whose requests come back to back (gc->linger,
 * cleared when one does not come within the wait), with at most
 * CN__GW_LINGER_MAX workers waiting at once, so that waiting never holds
 * the storage pool from other connections' requests. */
static cn_err_t linger_next(cn__gw_conn_t *gc, cn_conn_t *c, uint8_t head[CN_SCRIBE_HDR_LEN],
                            bool *got)
{
    cn__gw_t *g = gc->g;
    cn_err_t e = CN_OK;
    *got = false;
    if (atomic_fetch_add(&g->lingering, 1) < CN__GW_LINGER_MAX) {
        e = linger_head(gc, c, head, got);
        if (e >= 0 && !*got)
            gc->linger = false;
    }
    atomic_fetch_sub(&g->lingering, 1);
    return e;
}

/* Counts a request in cairn_gateway_requests_total{served}: "handed" to
 * its worker by the event loop, or "kept" by the worker that answered the
 * client's previous one (gw_serve).  One atomic load and one add. */
static void count_served(bool kept)
{
    static const cn_metric_family_t served = {
        .name = "cairn_gateway_requests_total",
        .help = "Scribe requests a gateway served, by how their worker got them: handed by the "
                "event loop, or kept by the worker that answered the client's previous request.",
        .kind = CN_METRIC_COUNTER,
    };
    static _Atomic(cn_metric_t *) slot[2];
    cn_metric_add(cn_metric_cached(&slot[kept], &served, "served=\"%s\"", kept ? "kept" : "handed"),
                  1);
}

/* Serves the request of head, then, while the client sends its requests
 * back to back, its next ones on this worker (at most CN__GW_LINGER_RUN,
 * never while the server stops): each forwarded request would otherwise
 * cost a hand-off from the loop to a worker and back, two thread wake-ups
 * that cost more than the relay itself (docs/protocol/scribe-gateway.md,
 * "Sessions and upstream connections"). */
static cn_err_t gw_serve(void *cstate, cn_conn_t *c, const uint8_t *head)
{
    cn__gw_conn_t *gc = cstate;
    uint8_t next[CN_SCRIBE_HDR_LEN];
    if (gc->answered_ms && cn_mono_ms() - gc->answered_ms <= CN__GW_LINGER_MS)
        gc->linger = true; /* it came within the wait of the last answer */
    for (unsigned run = 1;; run++) {
        count_served(run > 1);
        cn__scribe_session_activity(&gc->g->sessions, gc->ss, true);
        cn_err_t e = serve_one(gc, c, head);
        cn__scribe_session_activity(&gc->g->sessions, gc->ss, false);
        gc->answered_ms = cn_mono_ms();
        bool got = false;
        if (e < 0 || !gc->linger || run >= CN__GW_LINGER_RUN || cn_conn_stopping(c) ||
            (e = linger_next(gc, c, next, &got)) < 0 || !got)
            return e;
        head = next;
    }
}

static int64_t gw_idle(void *cstate, int64_t now_ms)
{
    cn__gw_conn_t *gc = cstate;
    return cn__scribe_session_idle(&gc->g->sessions, gc->ss, gc->g->inactivity_s, now_ms);
}

static void gw_close(void *cstate)
{
    cn__gw_conn_t *gc = cstate;
    if (!gc)
        return;
    cn__scribe_session_release(&gc->g->sessions, gc->session, gc->data);
    conn_free(gc);
}

static int gw_classify(void *cstate, const uint8_t *head)
{
    (void)cstate;
    uint16_t op = head ? (uint16_t)(head[4] | head[5] << 8) : 0;
    /* Every forwarded request waits on a storage server: the storage pool,
     * except the gateway's own small answers. */
    return op == CN_SCRIBE_OP_DISCOVER ? CN_POOL_QUERY : CN_POOL_STORAGE;
}

static void gw_busy(void *actx, int fd)
{
    (void)actx;
    cn__scribe_busy_send(fd, "the gateway is at its connection limit");
}

static const cn_adapter_t gw_adapter = {
    .name = "scribe", /* clients see a Scribe endpoint; discover says gateway */
    .head_len = CN_SCRIBE_HDR_LEN,
    .busy = gw_busy,
    .open = gw_open,
    .hello_len = cn__scribe_hello_len,
    .classify = gw_classify,
    .serve = gw_serve,
    .close = gw_close,
    .idle = gw_idle,
};

/* The protocol-4 listener's: named as storage's TLS adapter is. */
static const cn_adapter_t gw_adapter_tls = {
    .name = "scribes", /* no busy hook: never called under TLS */
    .head_len = CN_SCRIBE_HDR_LEN,
    .open = gw_open,
    .hello_len = cn__scribe_hello_len,
    .classify = gw_classify,
    .serve = gw_serve,
    .close = gw_close,
    .idle = gw_idle,
};

cn_err_t cn_gw_adapter_create(const cn_gw_config_t *cfg, struct cn_meta *meta,
                              const cn_gw_opts_t *opts, const cn_adapter_t **ad, void **actx)
{
    *ad = NULL;
    *actx = NULL;
    if (!cfg || !meta || cfg->n < 1 || cfg->n > CN_GW_MAX_SERVERS)
        return CN_E_INVALID;
    if (cfg->tls && (!opts || !opts->tls))
        return CN_E_INVALID; /* scribes:// needs the gateway's own credential */
    CN_TRY(cn__gw_place_migrate(meta));
    cn__gw_t *g = calloc(1, sizeof *g);
    if (!g)
        return -ENOMEM;
    g->cfg = *cfg;
    for (size_t i = 0, j = 0; i < g->cfg.n && j < g->cfg.nns; i++) {
        /* cfg->ns[] points into cfg->servers: re-point into the copy */
        if (!strcmp(g->cfg.servers[i].ns, cfg->ns[j]))
            g->cfg.ns[j++] = g->cfg.servers[i].ns;
    }
    g->meta = meta;
    g->inactivity_s = opts && opts->inactivity_s ? opts->inactivity_s : 300;
    const char *hook = getenv("CAIRN_TEST_KILL_AFTER_GW_PLACEMENT");
    g->kill_after_placement = hook && *hook == '1';
    pthread_mutex_init(&g->mu, NULL);
    g->sessions.mu = &g->mu;
    pthread_mutex_init(&g->anchor_mu, NULL);
    pthread_mutex_init(&g->tls_mu, NULL);
    cn_err_t ie = CN_OK;
    if (cfg->tls) {
        char msg[512] = "";
        g->tls_fn = opts->tls;
        g->tls_arg = opts->tls_arg;
        if ((ie = cn__gw_tls_start(g, msg, sizeof msg)) < 0)
            cn_error("gateway", "no access certificate for the gateway: %s",
                     msg[0] ? msg : cn_strerror(ie));
    }
    if (ie >= 0)
        ie = cn__gw_place_start(g); /* id cache, inventory walks (gw_place.c) */
    if (ie < 0) {
        cn_gw_adapter_destroy(g);
        return ie;
    }
    *ad = cfg->tls ? &gw_adapter_tls : &gw_adapter;
    *actx = g;
    return CN_OK;
}

void cn_gw_adapter_destroy(void *actx)
{
    cn__gw_t *g = actx;
    if (!g)
        return;
    cn__gw_place_stop(g); /* before the pool: a walk may hold a connection */
    cn__gw_pool_free(g);
    cn__scribe_sessions_free(&g->sessions);
    pthread_mutex_destroy(&g->mu);
    pthread_mutex_destroy(&g->anchor_mu);
    SSL_CTX_free(g->tls_ctx);
    pthread_mutex_destroy(&g->tls_mu);
    free(g);
}
