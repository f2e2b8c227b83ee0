/* The gateway's adapter (protocol 2, plaintext): the client handshake, the
 * gateway's own sessions and their data connections (up to four bound to a
 * control session, inactivity counted per session as on storage), frame
 * admission (the header rules, each opcode's exact payload bound, the
 * listener's memory budget) and the dispatch: discover from configuration,
 * repo_create / repo_info / repo_list by name, every other repository
 * operation forwarded to its owner.  It must never read past a frame, and
 * never answer an operation storage has to decide. */
#include "gw_int.h"

#include "cairn/crypto.h"
#include "cairn/meta.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define HELLO_BOUND 273 /* the protocol-2 hello's exact bound */

#ifndef CN_SCRIBE_TEST_CODEC
#define CN_SCRIBE_TEST_CODEC 0
#endif

static cn_err_t send_frame(cn_conn_t *c, uint16_t opcode, uint16_t flags, uint64_t id,
                           const cn_buf_t *payload)
{
    uint8_t h[CN_SCRIBE_HDR_LEN];
    cn_scribe_hdr_t hdr = { opcode, flags, id, (uint32_t)payload->len };
    cn_scribe_hdr_encode(h, &hdr);
    struct iovec iov[2] = { { h, sizeof h }, { payload->data, payload->len } };
    return cn_conn_writev(c, iov, payload->len ? 2 : 1, cn_conn_deadline_for(c, payload->len));
}

cn_err_t cn__gw_fail(cn__gw_call_t *k, uint16_t code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    for (char *p = msg; *p; p++)
        if ((unsigned char)*p >= 0x80)
            *p = '?';
    cn_buf_t *o = &k->gc->out;
    cn_buf_reset(o);
    CN_TRY(cn_scribe_enc_error(o, k->gc->codec, code, cn_scribe_cstr(msg)));
    return send_frame(k->c, k->hdr.opcode, CN_SCRIBE_FLAG_ERROR, k->hdr.request_id, o);
}

cn_err_t cn__gw_reply(cn__gw_call_t *k)
{
    return send_frame(k->c, k->hdr.opcode, 0, k->hdr.request_id, &k->gc->out);
}

cn_err_t cn__gw_unavailable(cn__gw_call_t *k, size_t server)
{
    const char *ns = k->gc->g->cfg.servers[server].ns;
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

/* ---- sessions -------------------------------------------------------------------------------- */
static cn_err_t session_new(cn__gw_t *g, cn__gw_session_t **out)
{
    cn__gw_session_t *ss = calloc(1, sizeof *ss);
    if (!ss)
        return -ENOMEM;
    cn_err_t e = CN_OK;
    do {
        e = cn_random_bytes(&ss->id, sizeof ss->id);
    } while (e >= 0 && ss->id == 0);
    if (e < 0) {
        free(ss);
        return e;
    }
    ss->control_open = true;
    ss->last_ms = cn_mono_ms();
    pthread_mutex_lock(&g->mu);
    ss->next = g->sessions;
    g->sessions = ss;
    pthread_mutex_unlock(&g->mu);
    *out = ss;
    return CN_OK;
}

/* Binds a data connection to a live control session: 0, or the code to
 * refuse with (malformed for no such session, busy for a fifth). */
static uint16_t session_bind(cn__gw_t *g, uint64_t id, cn__gw_session_t **out, const char **why)
{
    uint16_t code = CN_SCRIBE_E_MALFORMED;
    *why = "no live control session with that id";
    pthread_mutex_lock(&g->mu);
    for (cn__gw_session_t *ss = g->sessions; ss; ss = ss->next) {
        if (ss->id != id || !ss->control_open)
            continue;
        if (ss->data_conns >= CN__GW_DATA_CONNS) {
            code = CN_SCRIBE_E_BUSY;
            *why = "the session holds four data connections";
        } else {
            ss->data_conns++;
            ss->last_ms = cn_mono_ms();
            *out = ss;
            code = 0;
        }
        break;
    }
    pthread_mutex_unlock(&g->mu);
    return code;
}

static void session_release(cn__gw_t *g, uint64_t id, bool data)
{
    pthread_mutex_lock(&g->mu);
    for (cn__gw_session_t **pp = &g->sessions; *pp; pp = &(*pp)->next) {
        cn__gw_session_t *ss = *pp;
        if (ss->id != id)
            continue;
        if (data && ss->data_conns)
            ss->data_conns--;
        else if (!data)
            ss->control_open = false;
        if (!ss->control_open && !ss->data_conns) {
            *pp = ss->next;
            free(ss);
        }
        break;
    }
    pthread_mutex_unlock(&g->mu);
}

/* ---- the handshake ------------------------------------------------------------------------- */
static cn_err_t hello_fail(cn_conn_t *c, uint64_t id, uint16_t code, const char *msg)
{
    cn_buf_t b = { 0 };
    if (cn_scribe_enc_error(&b, CN_SCRIBE_CODEC_LE, code, cn_scribe_cstr(msg)) >= 0)
        send_frame(c, CN_SCRIBE_OP_HELLO, CN_SCRIBE_FLAG_ERROR, id, &b);
    cn_buf_free(&b);
    return CN_E_PROTOCOL;
}

static cn_err_t read_hello(cn_conn_t *c, uint8_t *body, cn_scribe_hdr_t *hd, cn_scribe_hello_t *h)
{
    int64_t deadline = cn_conn_handshake_deadline(c);
    uint8_t head[CN_SCRIBE_HDR_LEN];
    CN_TRY(cn_conn_read_full(c, head, sizeof head, deadline));
    if (cn_scribe_hdr_parse(head, hd) < 0)
        return CN_E_PROTOCOL;
    if (hd->opcode != CN_SCRIBE_OP_HELLO || hd->flags)
        return hello_fail(c, hd->request_id, CN_SCRIBE_E_MALFORMED,
                          "the first frame of a connection is a hello");
    if (hd->length > 16692)
        return CN_E_PROTOCOL;
    CN_TRY(cn_conn_read_full(c, body, hd->length, deadline));
    cn_err_t e = cn_scribe_dec_hello(body, hd->length, 2, CN_SCRIBE_TEST_CODEC, h);
    if (e == CN_E_UNSUPPORTED)
        return hello_fail(c, hd->request_id, CN_SCRIBE_E_UNSUPPORTED_VERSION,
                          "this gateway speaks protocol 2 with codec 1 only");
    if (e < 0)
        return hello_fail(c, hd->request_id, CN_SCRIBE_E_MALFORMED, "malformed hello");
    return CN_OK;
}

static void conn_free(cn__gw_conn_t *gc)
{
    if (!gc)
        return;
    cn__gw_cursors_free(gc);
    cn_buf_free(&gc->in);
    cn_buf_free(&gc->out);
    free(gc->io);
    free(gc);
}

static cn_err_t gw_open(void *actx, cn_conn_t *c, void **cstate)
{
    cn__gw_t *g = actx;
    cn_scribe_hdr_t h;
    cn_scribe_hello_t hello;
    uint8_t *body = malloc(16692);
    if (!body)
        return -ENOMEM;
    cn_err_t e = read_hello(c, body, &h, &hello);
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
    if (hello.bind_session) {
        const char *why = NULL;
        uint16_t code = session_bind(g, hello.bind_session, &gc->ss, &why);
        if (code) {
            conn_free(gc);
            return hello_fail(c, h.request_id, code, why);
        }
        gc->session = hello.bind_session;
        gc->data = true;
    } else if ((e = session_new(g, &gc->ss)) < 0) {
        conn_free(gc);
        return e;
    } else {
        gc->session = gc->ss->id;
    }
    cn_scribe_hello_ok_t ok = { .version = 2,
                                .codec = gc->codec,
                                .session = gc->session,
                                .timeout_s = g->inactivity_s,
                                .compression = gc->compression };
    cn_buf_t b = { 0 };
    e = cn_scribe_enc_hello_ok(&b, &ok);
    if (e >= 0)
        e = send_frame(c, CN_SCRIBE_OP_HELLO, 0, h.request_id, &b);
    cn_buf_free(&b);
    if (e < 0) {
        session_release(g, gc->session, gc->data);
        conn_free(gc);
        return e;
    }
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

/* Reserved or unknown opcodes (and a second hello): a bounded body drained,
 * then answered, so the connection stays usable. */
static cn_err_t drain_unknown(cn__gw_call_t *k)
{
    if (k->hdr.length > (16u << 20) || (k->hdr.flags & CN_SCRIBE_FLAG_STREAM))
        return CN_E_PROTOCOL;
    CN_TRY(cn_conn_drain(k->c, k->hdr.length, cn_conn_deadline_for(k->c, k->hdr.length)));
    return k->hdr.opcode == CN_SCRIBE_OP_HELLO
               ? cn__gw_fail(k, CN_SCRIBE_E_MALFORMED, "the handshake is already done")
               : cn__gw_fail(k, CN_SCRIBE_E_UNSUPPORTED_OPERATION,
                             "opcode %u is not offered by this gateway", k->hdr.opcode);
}

static cn_err_t serve_one(cn__gw_conn_t *gc, cn_conn_t *c, const uint8_t *head)
{
    cn__gw_call_t k = { .gc = gc, .c = c };
    if (cn_scribe_hdr_parse(head, &k.hdr) < 0)
        return CN_E_PROTOCOL;
    uint32_t bound = 0;
    if (!cn_scribe_request_bound(k.hdr.opcode, false, &bound) || k.hdr.opcode == CN_SCRIBE_OP_HELLO)
        return drain_unknown(&k);
    if (k.hdr.length > bound)
        return CN_E_PROTOCOL;
    bool stream = k.hdr.opcode == CN_SCRIBE_OP_PUT_OBJECTS;
    if (((k.hdr.flags & CN_SCRIBE_FLAG_STREAM) != 0) != stream ||
        (k.hdr.flags & CN_SCRIBE_FLAG_ERROR))
        return CN_E_PROTOCOL;
    if (cn_conn_budget_reserve(c, k.hdr.length) < 0) {
        cn__gw_fail(&k, CN_SCRIBE_E_BUSY, "gateway memory is busy; retry");
        return CN_E_BUSY;
    }
    cn_buf_reset(&gc->in);
    cn_err_t e = cn_buf_reserve(&gc->in, k.hdr.length ? k.hdr.length : 1);
    if (e >= 0)
        e = cn_conn_read_full(c, gc->in.data, k.hdr.length, cn_conn_deadline_for(c, k.hdr.length));
    if (e >= 0) {
        gc->in.len = k.hdr.length;
        k.payload = gc->in.data;
        k.len = k.hdr.length;
        e = dispatch(&k);
    }
    cn_conn_budget_release(c, k.hdr.length);
    if (gc->in.cap > (1u << 20))
        cn_buf_free(&gc->in);
    if (gc->out.cap > (4u << 20))
        cn_buf_free(&gc->out);
    return e < 0 ? e : CN_OK;
}

static void activity(cn__gw_conn_t *gc, bool start)
{
    pthread_mutex_lock(&gc->g->mu);
    if (start)
        gc->ss->busy++;
    else if (gc->ss->busy)
        gc->ss->busy--;
    gc->ss->last_ms = cn_mono_ms();
    pthread_mutex_unlock(&gc->g->mu);
}

static cn_err_t gw_serve(void *cstate, cn_conn_t *c, const uint8_t *head)
{
    cn__gw_conn_t *gc = cstate;
    activity(gc, true);
    cn_err_t e = serve_one(gc, c, head);
    activity(gc, false);
    return e;
}

static int64_t gw_idle(void *cstate, int64_t now_ms)
{
    cn__gw_conn_t *gc = cstate;
    int64_t timeout_ms = (int64_t)gc->g->inactivity_s * 1000;
    pthread_mutex_lock(&gc->g->mu);
    int64_t keep = gc->ss->busy ? now_ms + timeout_ms : gc->ss->last_ms + timeout_ms;
    pthread_mutex_unlock(&gc->g->mu);
    return keep > now_ms ? keep : 0;
}

static void gw_close(void *cstate)
{
    cn__gw_conn_t *gc = cstate;
    if (!gc)
        return;
    session_release(gc->g, gc->session, gc->data);
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
    uint8_t frame[CN_SCRIBE_HDR_LEN + 64];
    cn_buf_t b = { 0 };
    static const char msg[] = "the gateway is at its connection limit";
    if (cn_scribe_enc_error(&b, CN_SCRIBE_CODEC_LE, CN_SCRIBE_E_BUSY, cn_scribe_cstr(msg)) >= 0 &&
        b.len <= sizeof frame - CN_SCRIBE_HDR_LEN) {
        cn_scribe_hdr_t h = { CN_SCRIBE_OP_HELLO, CN_SCRIBE_FLAG_ERROR, 0, (uint32_t)b.len };
        cn_scribe_hdr_encode(frame, &h);
        memcpy(frame + CN_SCRIBE_HDR_LEN, b.data, b.len);
        ssize_t rc = send(fd, frame, CN_SCRIBE_HDR_LEN + b.len, MSG_DONTWAIT | MSG_NOSIGNAL);
        (void)rc;
    }
    cn_buf_free(&b);
}

static const cn_adapter_t gw_adapter = {
    .name = "scribe", /* clients see a Scribe endpoint; discover says gateway */
    .head_len = CN_SCRIBE_HDR_LEN,
    .busy = gw_busy,
    .open = gw_open,
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
    if (cfg->tls)
        return CN_E_UNSUPPORTED;
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
    pthread_mutex_init(&g->anchor_mu, NULL);
    cn_err_t ie = cn__gw_place_start(g); /* id cache, inventory walks (gw_place.c) */
    if (ie < 0) {
        cn_gw_adapter_destroy(g);
        return ie;
    }
    *ad = &gw_adapter;
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
    while (g->sessions) {
        cn__gw_session_t *n = g->sessions->next;
        free(g->sessions);
        g->sessions = n;
    }
    pthread_mutex_destroy(&g->mu);
    pthread_mutex_destroy(&g->anchor_mu);
    free(g);
}
