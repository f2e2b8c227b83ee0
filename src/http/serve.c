/* One request on the worker that serves its connection: the adapter's
 * serve() (include/cairn/http.h, over cairn/net.h).  The network layer's
 * loop hands a connection over once the next request's first byte is there;
 * this file then owns the request's whole life on that worker:
 *
 *   head      read and parse (parse.c) until the head is complete, within
 *             head_timeout_ms of its first byte; a refused head is answered
 *             and the connection closed
 *   decide    target, method, route, credential, body set-up (auth.c); the
 *             handler's on_request answers now or asks for the body
 *   body      100 Continue when the client waits for it; llhttp's payload
 *             (chunked framing removed) → aws-chunked → hash, checksum, cap
 *             → on_body, under the body deadline; an error switches to
 *             draining (bounded by CN__DRAIN_MAX; past that: close)
 *   end       verify what can only be verified at the end, on_end
 *   respond   response.c; on_cleanup; metrics
 *   next      bytes read past the message go back to the connection, so a
 *             pipelined request is dispatched at once
 *
 * No thread is started.  Only cn__serve_fast runs on the loop thread: a
 * bodiless GET or HEAD that the loop already holds whole goes through the
 * same parse, decide and respond steps there, for a route that allows it,
 * and is declined (left to a worker, untouched) whenever its answer would
 * need to wait or is not a success. */
#include "http_int.h"
#include "cairn/crypto.h"

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CONTINUE_100 "HTTP/1.1 100 Continue\r\n\r\n"

unsigned cn__method_bit(const char *m)
{
    static const struct {
        const char *n;
        unsigned bit;
    } t[] = {
        { "GET", CN_HTTP_GET },     { "HEAD", CN_HTTP_HEAD },     { "PUT", CN_HTTP_PUT },
        { "POST", CN_HTTP_POST },   { "DELETE", CN_HTTP_DELETE }, { "OPTIONS", CN_HTTP_OPTIONS },
        { "PATCH", CN_HTTP_PATCH },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strcmp(m, t[i].n) == 0)
            return t[i].bit;
    return 0;
}

int cn__route_find(const cn_http_server_t *s, unsigned method_bit, const char *path,
                   cn_http_req_t *r)
{
    for (size_t i = 0; i < s->n_routes; i++) {
        const cn_http_route_t *rt = &s->routes[i];
        if (!(rt->methods & method_bit))
            continue;
        size_t pl = strlen(rt->prefix);
        if (strncmp(path, rt->prefix, pl) != 0)
            continue;
        if ((rt->flags & CN_HTTP_ROUTE_EXACT) && path[pl] != 0)
            continue;
        if (r && rt->match && !rt->match(r, rt->ctx))
            continue;
        return (int)i;
    }
    return -1;
}

/* The request ids (x-amz-request-id, x-amz-id-2) are opaque labels, not
 * secrets: a per-thread xorshift128+ seeded once from the system's generator
 * makes them, because RAND_bytes costs a getpid() system call (its fork
 * check) on every request. */
static void id_bytes(uint8_t *out, size_t n)
{
    static _Thread_local uint64_t st[2];
    if (!st[0] && !st[1]) {
        if (cn_random_bytes(st, sizeof st) != CN_OK || (!st[0] && !st[1])) {
            st[0] = (uint64_t)cn_mono_ns() | 1;
            st[1] = (uint64_t)(uintptr_t)&st;
        }
    }
    while (n) {
        uint64_t a = st[0], b = st[1];
        st[0] = b;
        a ^= a << 23;
        st[1] = a ^ b ^ (a >> 17) ^ (b >> 26);
        uint64_t v = st[1] + b;
        size_t k = n < sizeof v ? n : sizeof v;
        memcpy(out, &v, k);
        out += k;
        n -= k;
    }
}

/* ---- the body ---------------------------------------------------------------------- */
static void begin_drain(cn_http_req_t *r, cn_s3_err_t e)
{
    if (r->body_err == CN_S3E_NONE && !r->responded)
        r->body_err = e;
    r->stage = CN__RQ_DRAIN;
}

cn_s3_err_t cn__handler_err(cn_http_req_t *r, cn_err_t rc)
{
    const cn_http_route_t *rt = r->route >= 0 ? &r->srv->routes[r->route] : NULL;
    cn_s3_err_t e = rt && rt->err_of ? rt->err_of(r, rc, rt->ctx) : cn_s3_err_from_cn(rc);
    if (e == CN_S3E_NONE && r->responded)
        return e; /* the adapter answered it in its own vocabulary */
    if (e == CN_S3E_NONE)
        e = CN_S3E_INTERNAL_ERROR;
    if (e == CN_S3E_INTERNAL_ERROR)
        cn_warn("http", "%s %s: the handler failed: %s [%s]", r->method, r->raw_path,
                cn_strerror(rc), r->id);
    return e;
}

/* When the next byte of the body must have arrived: a declared length has
 * its deadline for the whole; a chunked body keeps the rate on average. */
static int64_t body_deadline(const cn_http_req_t *r)
{
    if (r->content_length >= 0)
        return r->body_deadline;
    return cn__rolling_deadline(r->hc->c, r->body_start_ms, r->wire_received + CN__READ_BUF);
}

/* The handler paused (CN_HTTP_PAUSE): its worker waits for the resume,
 * within the body's deadline. */
static int wait_paused(cn_http_req_t *r)
{
    cn_err_t e = cn__req_wait_resume(r, body_deadline(r));
    if (e) {
        begin_drain(r, CN_S3E_REQUEST_TIMEOUT);
        r->close_after = true; /* the stream is behind the handler: give up on it */
    }
    return e;
}

/* Decoded payload bytes: cap, length, hash, checksum, then the handler. */
static int emit(void *ctx, const uint8_t *p, size_t n)
{
    cn_http_req_t *r = ctx;
    if (n > r->max_body - r->received) {
        begin_drain(r, CN_S3E_ENTITY_TOO_LARGE);
        return CN_E_TOO_LARGE;
    }
    if (r->payload_length >= 0 && r->received + n > (uint64_t)r->payload_length) {
        begin_drain(r, CN_S3E_INCOMPLETE_BODY);
        return CN_E_LENGTH_MISMATCH;
    }
    r->received += n;
    if (r->body_sha && !r->sha_delegated)
        EVP_DigestUpdate(r->body_sha, p, n);
    if (r->cksum_alg)
        cn_http_cksum_update(&r->cksum, p, n);
    const cn_http_route_t *rt = &r->srv->routes[r->route];
    if (!rt->on_body)
        return 0;
    pthread_mutex_lock(&r->hc->mu);
    r->wait_gen = r->hc->resume_gen; /* a resume from here on ends a pause */
    pthread_mutex_unlock(&r->hc->mu);
    int rc = rt->on_body(r, p, n, rt->ctx);
    if (r->responded) {
        /* The handler answered mid-body (e.g. a quota): drain and send it. */
        r->stage = CN__RQ_DRAIN;
        return CN_E_CLOSED;
    }
    if (rc == CN_HTTP_PAUSE)
        return wait_paused(r);
    if (rc < 0) {
        begin_drain(r, cn__handler_err(r, rc));
        return rc;
    }
    return 0;
}

/* llhttp's payload bytes (chunked framing removed). */
static void on_wire_body(void *ctx, const uint8_t *data, size_t n)
{
    cn_http_req_t *r = ctx;
    atomic_fetch_add(&r->srv->stats[r->route >= 0 ? r->route : CN__MAX_ROUTES].bytes_in, n);
    r->wire_received += n;
    if (r->stage != CN__RQ_BODY) {
        r->drained += n;
        return;
    }
    if (r->chunk) {
        cn_err_t err = cn_awschunk_feed(r->chunk, data, n, emit, r);
        if (err && r->stage != CN__RQ_DRAIN)
            begin_drain(r, r->chunk->s3err ? r->chunk->s3err : cn_s3_err_from_cn(err));
    } else {
        emit(r, data, n);
    }
}

/* End of the body: everything that can only be checked once it is all in. */
static cn_s3_err_t verify_end(cn_http_req_t *r)
{
    if (r->chunk) {
        if (cn_awschunk_end(r->chunk) != CN_OK)
            return r->chunk->s3err ? r->chunk->s3err : CN_S3E_INCOMPLETE_BODY;
    }
    if (r->payload_length >= 0 && r->received != (uint64_t)r->payload_length)
        return CN_S3E_INCOMPLETE_BODY;
    if (r->body_sha) {
        uint8_t h[32];
        unsigned int hl = 32;
        EVP_DigestFinal_ex(r->body_sha, h, &hl);
        EVP_MD_CTX_free(r->body_sha);
        r->body_sha = NULL;
        if (r->sha_delegated && r->sha_reported)
            memcpy(h, r->sha_report, 32);
        else if (r->sha_delegated) /* the handler hashed nothing: no digest matches */
            return r->payload == CN_SIGV4_PAYLOAD_DEFERRED ? CN_S3E_SIGNATURE_DOES_NOT_MATCH
                                                           : CN_S3E_CONTENT_SHA256_MISMATCH;
        if (r->payload == CN_SIGV4_PAYLOAD_DEFERRED) {
            if (cn_sigv4_finish_deferred(&r->sig, h) != CN_OK)
                return CN_S3E_SIGNATURE_DOES_NOT_MATCH;
        } else if (!cn_ct_equal(h, r->sig.payload_hash, 32)) {
            return CN_S3E_CONTENT_SHA256_MISMATCH;
        }
    } else if (r->payload == CN_SIGV4_PAYLOAD_EMPTY && r->received != 0) {
        return CN_S3E_CONTENT_SHA256_MISMATCH;
    }
    if (r->cksum_alg) {
        uint8_t raw[CN_CKSUM_MAX_LEN];
        cn_http_cksum_final(&r->cksum, raw, r->cksum_b64);
        if (r->cksum_trailer) {
            const char *v = cn_awschunk_trailer(r->chunk, cn_http_cksum_header(r->cksum_alg));
            if (!v || strlen(v) >= sizeof r->cksum_expected)
                return CN_S3E_INVALID_REQUEST;
            strcpy(r->cksum_expected, v);
        }
        if (strcmp(r->cksum_expected, r->cksum_b64) != 0)
            return CN_S3E_BAD_DIGEST;
    }
    return CN_S3E_NONE;
}

/* ---- the request ------------------------------------------------------------------- */
static cn_http_req_t *req_new(cn__hconn_t *hc)
{
    cn_http_req_t *r = cn__req_alloc();
    if (!r)
        return NULL;
    r->srv = hc->srv;
    r->hc = hc;
    r->route = -1;
    r->start_ns = cn_mono_ns();
    r->content_length = -1;
    r->payload_length = -1;
    cn__head_init(&r->head, on_wire_body, r);
    uint8_t rnd[8 + 24];
    id_bytes(rnd, sizeof rnd);
    /* Hex by table: snprintf per byte was the top libc entry of a 4 KiB GET. */
    static const char hex[] = "0123456789ABCDEF";
    for (int i = 0; i < 8; i++) {
        r->id[2 * i] = hex[rnd[i] >> 4];
        r->id[2 * i + 1] = hex[rnd[i] & 15];
    }
    r->id[16] = '\0';
    cn_base64_encode(rnd + 8, 24, r->host_id);
    return r;
}

/* A body of 1 MiB or more is read in CN__BODY_BUF pieces instead of the
 * head's 16 KiB: a sixteenth of the reads and of the handler's calls (each a
 * store write and a hash hand-off).  Only once a read has filled the small
 * buffer, so that a slow or stalled upload never holds more of the
 * listener's budget than 16 KiB.  The unparsed bytes move with the buffer;
 * nothing points into it (the head's values are copies).  When the memory
 * budget or malloc refuses, the small buffer stays: slower, never wrong. */
static void body_grow(cn__hconn_t *hc, cn_http_req_t *r)
{
    if (r->content_length < ((int64_t)1 << 20) || hc->cap >= CN__BODY_BUF ||
        cn_conn_budget_reserve(hc->c, CN__BODY_BUF - hc->cap) != CN_OK)
        return;
    uint8_t *nb = malloc(CN__BODY_BUF);
    if (!nb) {
        cn_conn_budget_release(hc->c, CN__BODY_BUF - hc->cap);
        return;
    }
    memcpy(nb, hc->buf + hc->off, hc->len - hc->off);
    hc->len -= hc->off;
    hc->off = 0;
    free(hc->buf);
    hc->buf = nb;
    hc->cap = CN__BODY_BUF;
}

/* Feeds what the buffer holds, then reads more, until the parser reports
 * something other than "more" (*st).  deadline NULL: the body's. */
static cn_err_t pump(cn__hconn_t *hc, cn_http_req_t *r, const int64_t *deadline, cn__feed_t *st)
{
    for (;;) {
        size_t used;
        *st = cn__head_feed(&r->head, hc->buf + hc->off, hc->len - hc->off, &used);
        hc->off += used;
        if (*st != CN__FEED_MORE || r->close_after)
            return CN_OK;
        if (r->stage == CN__RQ_DRAIN && r->drained > CN__DRAIN_MAX) {
            r->close_after = true; /* too much to discard: answer, then close */
            return CN_OK;
        }
        hc->off = hc->len = 0; /* all parsed: what llhttp handed out is copied */
        if (hc->filled && r->stage == CN__RQ_BODY)
            body_grow(hc, r);
        size_t got;
        CN_TRY(cn_conn_read_some(hc->c, hc->buf, hc->cap, &got,
                                 deadline ? *deadline : body_deadline(r)));
        hc->len = got;
        hc->filled = got == hc->cap;
    }
}

static bool last_xff(void *ctx, const char *name, const char *value)
{
    if (!strcasecmp(name, "X-Forwarded-For"))
        *(const char **)ctx = value;
    return true;
}

/* The client address every consumer reads (S3's aws:SourceIp, the console's
 * sign-in limit and session rows, logs): the TCP peer, or — only when the
 * server trusts proxy headers — the RIGHTMOST X-Forwarded-For entry (of the
 * last such header), the one the trusted proxy appended.  Entries to its
 * left came from the client and are never used: a rightmost entry that is
 * not an address leaves the peer. */
_Static_assert(sizeof((cn_http_req_t *)0)->client_ip >= sizeof((cn_http_req_t *)0)->peer,
               "set_client_ip copies peer whole");
static void set_client_ip(cn_http_req_t *r)
{
    /* As snprintf("%s") would, without its formatting machinery (two of
     * them were 1.2 k instructions a request). */
    const char *peer = cn_conn_peer(r->hc->c);
    size_t pl = strnlen(peer, sizeof r->peer - 1);
    memcpy(r->peer, peer, pl);
    r->peer[pl] = 0;
    memcpy(r->client_ip, r->peer, pl + 1); /* client_ip is as large as peer */
    const char *xff = NULL;
    if (r->srv->cfg.trust_proxy_headers)
        cn_http_req_headers(r, last_xff, &xff);
    if (!xff)
        return;
    const char *last = strrchr(xff, ',');
    last = last ? last + 1 : xff;
    last += strspn(last, " \t");
    size_t n = strcspn(last, " \t");
    char ip[64];
    unsigned char bin[16];
    if (n > 0 && n < sizeof ip && !last[n + strspn(last + n, " \t")]) {
        memcpy(ip, last, n);
        ip[n] = 0;
        if (inet_pton(AF_INET, ip, bin) == 1 || inet_pton(AF_INET6, ip, bin) == 1)
            memcpy(r->client_ip, ip, n + 1);
    }
}

/* The worker share and the budget count a request's verified principal
 * (its access key, which is the token id), an anonymous or refused one its
 * source address: an access key whose signature failed charges nobody.  A
 * failure to bind (memory) leaves the connection counted as it was. */
static void bind_principal(cn_http_req_t *r)
{
    bool verified =
        r->auth_kind != CN_HTTP_AUTH_ANONYMOUS && r->auth_err == CN_S3E_NONE && r->access_key[0];
    (void)cn_conn_set_principal(r->hc->c, verified ? r->access_key : NULL);
}

/* The head is in: what the request is, who asks, and whether the handler
 * answers at once or wants the body.  Every refusal is a response. */
static void decide(cn_http_req_t *r)
{
    cn_http_server_t *s = r->srv;
    r->method = cn__head_method(&r->head);
    r->method_bit = cn__method_bit(r->method);
    r->http10 = r->head.p.http_minor == 0;
    r->keep_alive = llhttp_should_keep_alive(&r->head.p);
    r->content_length = cn__head_content_length(&r->head);
    r->has_body = cn__head_chunked(&r->head) || r->content_length > 0;
    r->tls = cn_conn_is_tls(r->hc->c);
    set_client_ip(r);
    const char *expect = cn_http_req_header(r, "Expect");
    r->expect_continue = expect && !r->http10 && strcasecmp(expect, "100-continue") == 0;
    r->uri = strdup(cn__head_url(&r->head));
    if (cn__req_parse_target(r) != CN_OK) {
        /* A bad query under a good path: the path's route words the refusal
         * (the console in JSON, S3 in XML), as it does every later one. */
        if (r->path.data && r->method_bit)
            r->route = cn__route_find(s, r->method_bit, (const char *)r->path.data, r);
        cn__framework_error(r, CN_S3E_INVALID_URI, NULL);
        return;
    }
    if (!r->method_bit) {
        cn__framework_error(r, CN_S3E_NOT_IMPLEMENTED, "this HTTP method is not supported");
        return;
    }
    r->route = cn__route_find(s, r->method_bit, (const char *)r->path.data, r);
    if (expect && strcasecmp(expect, "100-continue") != 0) {
        cn__framework_error(r, CN_S3E_EXPECTATION_FAILED, NULL);
        return;
    }
    if (r->route < 0) {
        cn__framework_error(r, CN_S3E_NOT_IMPLEMENTED, "no handler serves this request");
        return;
    }
    const cn_http_route_t *rt = &s->routes[r->route];
    if (r->on_loop && !(rt->flags & CN_HTTP_ROUTE_LOOP)) {
        r->declined = true;
        return;
    }
    cn__auth_decide(r);
    if (r->declined)
        return;
    bind_principal(r);
    if (r->auth_err != CN_S3E_NONE && !(rt->flags & CN_HTTP_ROUTE_OWN_AUTH_ERRORS)) {
        cn__framework_error(r, r->auth_err, r->auth_detail[0] ? r->auth_detail : NULL);
        return;
    }
    if (r->auth_err != CN_S3E_NONE)
        r->payload = CN_SIGV4_PAYLOAD_UNSIGNED; /* the handler refuses; nothing to verify */
    cn_s3_err_t e = cn__body_setup(r);
    if (e != CN_S3E_NONE) {
        cn__framework_error(r, e, NULL);
        return;
    }
    r->handler_started = true;
    int rc = rt->on_request(r, rt->ctx);
    if (!r->responded && rc < 0)
        cn__framework_error(r, cn__handler_err(r, rc), NULL);
    if (!r->responded)
        r->stage = CN__RQ_BODY;
}

/* The body: to the handler when it asked for it, else discarded so that
 * the next request can be read — unless the client waits for a 100
 * Continue it will not get, or the body is too large to discard: then the
 * connection closes after the answer.  I/O errors are returned (the peer is
 * gone or too slow: nobody to answer). */
static cn_err_t take_body(cn__hconn_t *hc, cn_http_req_t *r)
{
    bool wanted = r->stage == CN__RQ_BODY;
    if (!wanted && r->has_body &&
        (r->expect_continue || r->content_length > (int64_t)CN__DRAIN_MAX)) {
        r->close_after = true;
        return CN_OK;
    }
    if (!wanted)
        r->stage = CN__RQ_DRAIN;
    r->body_start_ms = cn_mono_ms();
    r->body_deadline =
        cn_conn_deadline_for(hc->c, r->content_length > 0 ? (uint64_t)r->content_length : 0);
    if (wanted && r->expect_continue) {
        CN_TRY(cn_conn_write_all(hc->c, CONTINUE_100, sizeof CONTINUE_100 - 1,
                                 cn_conn_deadline_for(hc->c, 0)));
        r->sent_continue = true;
    }
    cn__feed_t st;
    cn_err_t e = pump(hc, r, NULL, &st);
    if (e == CN_E_TIMEOUT) {
        begin_drain(r, CN_S3E_REQUEST_TIMEOUT);
        r->close_after = true;
        return CN_OK;
    }
    if (e)
        return e;
    if (st == CN__FEED_ERROR) {
        /* The framing broke mid-body (a bad chunk): answer, then close. */
        begin_drain(r, r->head.err);
        r->close_after = true;
    }
    return CN_OK;
}

/* The body ended (or was given up): verify, tell the handler, and make sure
 * one answer stands — the body's error over whatever the handler said. */
static void finish(cn_http_req_t *r)
{
    const cn_http_route_t *rt = &r->srv->routes[r->route];
    cn_s3_err_t e = CN_S3E_NONE;
    if (r->stage == CN__RQ_BODY && !r->close_after)
        e = verify_end(r);
    else if (r->stage == CN__RQ_BODY)
        e = CN_S3E_INCOMPLETE_BODY;
    if (e != CN_S3E_NONE && r->body_err == CN_S3E_NONE)
        r->body_err = e;
    if (r->responded && r->body_err == CN_S3E_NONE)
        return;
    if (!r->responded && rt->on_end)
        rt->on_end(r, rt->ctx);
    if (r->body_err != CN_S3E_NONE) {
        cn__resp_discard(r);
        cn__framework_error(r, r->body_err, NULL);
    }
}

/* After the answer: on_cleanup, the metrics, and the request freed. */
static void req_end(cn_http_req_t *r, bool record)
{
    cn_http_server_t *s = r->srv;
    if (r->handler_started && r->route >= 0 && s->routes[r->route].on_cleanup)
        s->routes[r->route].on_cleanup(r, s->routes[r->route].ctx);
    if (record)
        cn__metrics_record(s, r);
    cn__req_free(r);
}

/* The answer when no buffer can be had for the request (the listener's
 * memory budget is spent): retry later, as S3 says it. */
static void answer_slow_down(cn_conn_t *c)
{
    char msg[CN__SLOW_DOWN_MAX];
    size_t n = cn__slow_down(msg, sizeof msg);
    (void)cn_conn_write_all(c, msg, n, cn_conn_deadline_for(c, 0));
}

/* Frees the read buffer and gives its bytes back to the memory budget; with
 * keep, the bytes of a pipelined request first go back to the connection
 * (the loop dispatches it once this one ends).  Idempotent. */
static cn_err_t buf_end(cn__hconn_t *hc, bool keep)
{
    cn_err_t e = CN_OK;
    if (keep && hc->buf && hc->off < hc->len)
        e = cn_conn_unread(hc->c, hc->buf + hc->off, hc->len - hc->off);
    free(hc->buf);
    hc->buf = NULL;
    cn_conn_budget_release(hc->c, hc->cap);
    hc->cap = 0;
    return e;
}

/* The end of a request whose answer went out (or failed with e): the
 * pipelined bytes handed back, the request and the read buffer freed. */
static cn_err_t serve_end(cn__hconn_t *hc, cn_http_req_t *r, cn_err_t e, bool keep, bool record)
{
    if (!e && !keep)
        e = CN_E_CLOSED;
    cn_err_t be = buf_end(hc, !e);
    if (!e)
        e = be;
    if (r)
        req_end(r, record);
    return e;
}

cn_err_t cn__serve(void *cstate, cn_conn_t *c, const uint8_t *head)
{
    (void)head;
    cn__hconn_t *hc = cstate;
    hc->c = c;
    cn_err_t e = cn_conn_budget_reserve(c, CN__READ_BUF);
    if (e) {
        answer_slow_down(c);
        return e;
    }
    hc->off = hc->len = 0;
    hc->cap = CN__READ_BUF;
    hc->filled = false;
    hc->buf = malloc(CN__READ_BUF);
    cn_http_req_t *r = hc->buf ? req_new(hc) : NULL;
    bool record = false, keep = false;
    if (!r) {
        e = -ENOMEM;
        goto out;
    }
    /* From the head's first byte, which the loop may have held a while. */
    int64_t deadline = cn_conn_request_start_ms(c) + hc->srv->cfg.head_timeout_ms;
    cn__feed_t st;
    e = pump(hc, r, &deadline, &st);
    if (e == CN_E_TIMEOUT && r->head.head_bytes) {
        r->head.err = CN_S3E_REQUEST_TIMEOUT; /* a head that never ends: say so, close */
        r->head.err_msg = "the request head did not arrive in time";
        st = CN__FEED_ERROR;
        e = CN_OK;
    }
    if (e)
        goto out; /* gone, or silent: nobody to answer */
    record = true;
    if (st == CN__FEED_ERROR) {
        cn__framework_error(r, r->head.err, r->head.err_msg);
        r->close_after = true;
    } else {
        decide(r);
        bool wanted = r->stage == CN__RQ_BODY;
        if ((e = take_body(hc, r)) != CN_OK)
            goto out;
        if (wanted)
            finish(r);
    }
    if (!r->responded)
        cn__framework_error(r, CN_S3E_INTERNAL_ERROR, NULL);
    keep = r->keep_alive && !r->close_after && r->head.msg_done && !r->head.p.upgrade &&
           !cn_conn_stopping(c);
    /* The request is read: its buffer goes back to the budget before the
     * answer goes out, so that a client reading the answer finds its share
     * free for its next request (the answer's own bytes are reserved apart,
     * cn_conn_reply).  A pipelined request that cannot be kept: close. */
    if (buf_end(hc, keep) != CN_OK)
        keep = false;
    e = r->responded ? cn__resp_send(r, keep) : -ENOMEM;
    if (e == CN_CONN_MORE) { /* the rest in parts: cn__serve_resume */
        hc->more = r;
        hc->more_keep = keep;
        return e;
    }
out:
    return serve_end(hc, r, e, keep, record);
}

cn_err_t cn__serve_resume(void *cstate, cn_conn_t *c)
{
    cn__hconn_t *hc = cstate;
    cn_http_req_t *r = hc->more;
    hc->c = c;
    cn_err_t e = r ? cn__resp_resume(r) : CN_E_INVALID;
    if (e == CN_CONN_MORE)
        return e;
    hc->more = NULL;
    return serve_end(hc, r, e, hc->more_keep, true);
}

void cn__serve_abandon(cn__hconn_t *hc)
{
    if (!hc->more)
        return;
    cn__resp_abandon(hc->more);
    (void)serve_end(hc, hc->more, CN_E_CLOSED, false, true);
    hc->more = NULL;
}

/* ---- on the loop ------------------------------------------------------------------- */
static const cn_metric_family_t cn__loop_answered = {
    .name = "cairn_http_loop_answered_total",
    .help = "HTTP requests answered on the network loop, with no hand-off to a worker",
    .kind = CN_METRIC_COUNTER,
};

/* Parses the request the loop holds (p, n) with the worker's parser: true
 * when it is a whole bodiless GET or HEAD of a connection that stays open
 * (Connection: close and HTTP/1.0 are a worker's), its length in *used. */
static bool fast_head(cn_http_req_t *r, const uint8_t *p, size_t n, size_t *used)
{
    size_t u;
    if (cn__head_feed(&r->head, p, n, &u) != CN__FEED_HEAD)
        return false;
    *used = u;
    unsigned m = cn__method_bit(cn__head_method(&r->head));
    if (!(m & (CN_HTTP_GET | CN_HTTP_HEAD)) || cn__head_chunked(&r->head) ||
        cn__head_content_length(&r->head) > 0 || cn__head_header(&r->head, "Expect") ||
        !llhttp_should_keep_alive(&r->head.p))
        return false;
    if (cn__head_feed(&r->head, p + u, n - u, &u) != CN__FEED_DONE || r->head.p.upgrade)
        return false;
    *used += u;
    return true;
}

/* An answer the loop sends: a success or a 304, from memory, keeping the
 * connection.  Anything else is a worker's to give. */
static bool fast_answerable(const cn_http_req_t *r)
{
    bool ok = (r->status >= 200 && r->status < 300) || r->status == 304;
    bool mem = r->rb.kind == CN__RB_NONE || r->rb.kind == CN__RB_EMPTY ||
               (r->rb.kind == CN__RB_MEM && r->rb.mem_len <= CN_HTTP_INLINE_BODY_MAX);
    return r->responded && !r->declined && ok && mem && !r->close_after && r->head.msg_done;
}

/* Whether the buffered bytes can open a GET or HEAD: the request line's
 * method, after the empty lines llhttp skips before a request.  Anything
 * else (a PUT, a POST, a head not yet in) fast_head declines anyway; this
 * declines it before a request is made and its head parsed, which the
 * worker then does again (a signed PUT's head parsed twice was 9 k
 * instructions on the loop per PUT). */
static bool maybe_fast_method(const uint8_t *p, size_t n)
{
    while (n && (*p == '\r' || *p == '\n')) {
        p++;
        n--;
    }
    return (n >= 4 && memcmp(p, "GET ", 4) == 0) || (n >= 5 && memcmp(p, "HEAD ", 5) == 0);
}

int cn__serve_fast(void *cstate, cn_conn_t *c, const uint8_t *head)
{
    (void)head;
    cn__hconn_t *hc = cstate;
    const uint8_t *p;
    size_t n = cn_conn_peek(c, &p), used = 0;
    hc->c = c;
    cn_http_req_t *r = maybe_fast_method(p, n) ? req_new(hc) : NULL;
    if (!r)
        return 0;
    r->on_loop = true;
    int rc = 0;
    if (!fast_head(r, p, n, &used))
        goto out;
    decide(r);
    if (!fast_answerable(r) || cn_conn_stopping(c))
        goto out;
    /* Committed: counted before the answer leaves, so that a client that
     * has it and then reads the metrics sees it counted; the request's bytes
     * are taken (they are buffered), and the answer is written without
     * waiting (the layer keeps what the socket does not take, for a worker
     * to finish). */
    cn_metric_add(cn_metric_cached(&r->srv->stats[r->route].loop_answered, &cn__loop_answered,
                                   "route=\"%s\"", r->srv->routes[r->route].name),
                  1);
    rc = cn_conn_drain(c, used, 0) == CN_OK && cn__resp_send(r, true) == CN_OK ? 1 : -1;
out:
    if (rc == 0)
        cn__resp_discard(r);
    req_end(r, rc != 0);
    return rc;
}
