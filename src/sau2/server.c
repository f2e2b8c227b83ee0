/* The SAU2 listener adapter (`cairnd --auth ADDR`): frames in, the auth
 * service's cn_sau2_handle, frames out.  The network layer does TLS 1.3 with
 * X25519MLKEM768 alone and reads each 8-byte frame head; this file reads the
 * payload, decides who the caller is from the TLS client certificate alone
 * (cn_auth_peer_caller), holds certificate-less callers to the five
 * certificate-less verbs, keeps automation-create to a connection of its
 * own, and maps its own failures to SAU2 codes through
 * one table (the service builds the replies of everything else).
 *
 * Deadlines: one for the TLS handshake and the first frame (its head and its
 * payload) from accept; then net's idle deadline between requests.  An idle
 * connection counts as pending again in net's admission (idle_pending).
 *
 * Never: let the stream desynchronise (a payload is consumed in full or the
 * connection closed); keep or log a request's secret (the payload buffer is
 * wiped before it is freed); take a caller from anything but a certificate
 * verified against the credential CA. */
#include "cairn/sau2_server.h"

#include "cairn/meta.h"
#include "cairn/util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

struct cn_sau2_listener {
    cn_auth_t *auth;
};

typedef struct {
    cn_sau2_listener_t *l;
    cn_sau2_caller_t caller;
    bool refused;  /* a certificate was presented and refused */
    char why[200]; /* the refusal's message */
    bool first;    /* the first frame: its payload by first_deadline */
    int64_t first_deadline;
    uint64_t requests; /* requests answered so far on this connection */
    bool automation;   /* its first request was automation-create: nothing follows */
} sconn_t;

/* ---- the error table --------------------------------------------------------------
 * The adapter's own failures (the service answers everything else itself)
 * → SAU2 codes, which are the storage codes of docs/protocol/scribe.md. */
enum {
    CODE_MALFORMED = 1,
    CODE_UNAUTHENTICATED = 3,
    CODE_FORBIDDEN = 4,
    CODE_INTERNAL = 5,
    CODE_BUSY = 6,
    CODE_LIMIT = 8
};

static uint16_t code_for(cn_err_t e)
{
    switch (e) {
    case CN_E_PROTOCOL:
    case CN_E_INVALID: return CODE_MALFORMED;
    case CN_E_AUTH: return CODE_UNAUTHENTICATED;
    case CN_E_BUSY: return CODE_BUSY;
    case CN_E_LIMIT:
    case CN_E_TOO_LARGE: return CODE_LIMIT;
    default: return CODE_INTERNAL;
    }
}

/* The verbs a caller without a certificate may use (sau2.md section 5.1). */
static bool certificate_less(const cn_sau2_str_t *verb)
{
    static const char *const verbs[] = { "trust-bundle", "login", "login-outcome", "admin-login",
                                         "admin-login-outcome" };
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
        if (strlen(verbs[i]) == verb->len && memcmp(verbs[i], verb->p, verb->len) == 0)
            return true;
    return false;
}

/* automation-create only over its own connection (sau2.md section 11):
 * the first request of a fresh connection, and the last one it carries.
 * Returns the refusal's message, or NULL when the request may go on. */
static const char *own_connection(sconn_t *s, const cn_sau2_str_t *verb)
{
    static const char create[] = "automation-create";
    bool is_create = verb->len == sizeof create - 1 && memcmp(verb->p, create, verb->len) == 0;
    if (s->automation)
        return "this connection carried automation-create: open a new one";
    if (is_create && s->requests > 0)
        return "automation-create must be the first request of its own connection";
    s->automation = is_create;
    return NULL;
}

/* ---- the adapter ----------------------------------------------------------------- */

static cn_err_t sau2_open(void *actx, cn_conn_t *c, void **cstate)
{
    cn_sau2_listener_t *l = actx;
    sconn_t *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->l = l;
    s->first = true;
    s->first_deadline = cn_conn_handshake_deadline(c);
    char why[160];
    cn_err_t e = cn_auth_peer_caller(l->auth, cn_conn_peer_cert(c), &s->caller, why, sizeof why);
    /* Any certificate but a credential's gets the one message; a dead
     * credential is told why, since only its holder can present it. */
    snprintf(s->why, sizeof s->why, "a credential certificate is required%s%s",
             e == CN_E_DENIED ? ": " : "", e == CN_E_DENIED ? why : "");
    if (e == CN_E_AUTH || e == CN_E_DENIED) {
        /* Answered `unauthenticated` on every request, not a TLS alert, so
         * that the peer learns why. */
        cn_debug("auth", "connection %llu from %s: certificate refused: %s",
                 (unsigned long long)cn_conn_id(c), cn_conn_peer(c), why);
        s->refused = true;
        e = CN_OK;
    }
    /* The first frame's head is due by the same deadline as the handshake:
     * wait for it here (a handshake worker, as the TLS handshake was) and give
     * it back to the stream for the loop to dispatch. */
    uint8_t head[CN_SAU2_HDR_LEN];
    if (e == 0)
        e = cn_conn_read_full(c, head, sizeof head, s->first_deadline);
    if (e == 0)
        e = cn_conn_unread(c, head, sizeof head);
    if (e < 0) {
        cn_debug("auth", "connection %llu from %s: no first request: %s",
                 (unsigned long long)cn_conn_id(c), cn_conn_peer(c), cn_strerror(e));
        free(s);
        return e;
    }
    *cstate = s;
    return CN_OK;
}

static int sau2_classify(void *cstate, const uint8_t *head)
{
    (void)cstate;
    (void)head;
    return CN_POOL_QUERY; /* short metadata transactions (and argon2id at sign-in) */
}

/* Answers one decoded request (or a refusal of it) into out. */
static cn_err_t answer(sconn_t *s, const uint8_t *p, size_t n, cn_buf_t *out)
{
    cn_sau2_req_t req;
    cn_sau2_reply_t reply = { 0 };
    const char *lone = NULL;
    cn_err_t e = cn_sau2_dec_request(p, n, &req);
    if (e < 0)
        cn_sau2_reply_error(&reply, code_for(e), "malformed request");
    else if ((lone = own_connection(s, &req.argv[0])) != NULL)
        cn_sau2_reply_error(&reply, CODE_FORBIDDEN, "%s", lone);
    else if (s->refused)
        cn_sau2_reply_error(&reply, code_for(CN_E_AUTH), "%s", s->why);
    else if (!s->caller.present && !certificate_less(&req.argv[0]))
        cn_sau2_reply_error(&reply, code_for(CN_E_AUTH), "a credential certificate is required");
    else if ((e = cn_sau2_handle(s->l->auth, &s->caller, &req, &reply)) < 0)
        cn_sau2_reply_error(&reply, code_for(e), "internal error: %s", cn_strerror(e));
    e = cn_sau2_enc_reply(out, &reply);
    if (e < 0) {
        /* Over a reply's limits: say so in a reply that fits. */
        cn_sau2_reply_t small = { 0 };
        out->len = 0;
        cn_sau2_reply_error(&small, CODE_INTERNAL, "reply over the protocol's limits");
        e = cn_sau2_enc_reply(out, &small);
        cn_sau2_reply_free(&small);
    }
    cn_sau2_reply_free(&reply);
    s->requests++;
    return e;
}

static cn_err_t sau2_serve(void *cstate, cn_conn_t *c, const uint8_t *head)
{
    sconn_t *s = cstate;
    uint32_t len;
    CN_TRY(cn_sau2_frame_parse(head, &len)); /* the stream position is lost: close */
    int64_t deadline = s->first ? s->first_deadline : cn_conn_deadline_for(c, len);
    s->first = false;
    cn_buf_t out = { 0 };
    uint8_t *p = NULL;
    cn_err_t e = cn_conn_budget_reserve(c, len);
    if (e == CN_E_BUSY) {
        /* Refused without buffering: the payload is read past, then answered. */
        e = cn_conn_drain(c, len, deadline);
        cn_sau2_reply_t busy = { 0 };
        cn_sau2_reply_error(&busy, code_for(CN_E_BUSY), "the listener's memory budget is spent");
        if (e == 0)
            e = cn_sau2_enc_reply(&out, &busy);
        cn_sau2_reply_free(&busy);
        goto send;
    }
    if (e < 0)
        return e;
    p = malloc(len ? len : 1);
    e = p ? cn_conn_read_full(c, p, len, deadline) : -ENOMEM;
    if (e == 0)
        e = answer(s, p, len, &out);
    if (p)
        OPENSSL_cleanse(p, len); /* it may hold a password */
    free(p);
    cn_conn_budget_release(c, len);
send:
    if (e == 0)
        e = cn_conn_write_all(c, out.data, out.len, cn_conn_deadline_for(c, out.len));
    cn_buf_free(&out);
    return e;
}

static void sau2_close(void *cstate)
{
    free(cstate);
}

/* open() reads the first frame's head, by the handshake deadline. */
static size_t sau2_hello_len(const uint8_t *p, size_t have)
{
    (void)p, (void)have;
    return CN_SAU2_HDR_LEN;
}

static const cn_adapter_t sau2_adapter = {
    .name = "auth",
    .head_len = CN_SAU2_HDR_LEN,
    .open = sau2_open,
    .hello_len = sau2_hello_len,
    .classify = sau2_classify,
    .serve = sau2_serve,
    .close = sau2_close,
    /* An idle connection counts as pending again (sau2.md section 11): a
     * source's idle connections take its pending share, and a full table
     * closes the oldest of them before it refuses anyone. */
    .idle_pending = true,
};

/* ---- the listener ---------------------------------------------------------------- */

cn_err_t cn_sau2_listener_start(cn_meta_t *meta, const char *data_dir, const cn_sau2_listen_t *cfg,
                                const cn_listen_opts_t *opts, cn_server_t *srv,
                                cn_sau2_listener_t **out)
{
    *out = NULL;
    cn_sau2_listener_t *l = calloc(1, sizeof *l);
    if (!l)
        return -ENOMEM;
    char cert[PATH_MAX], key[PATH_MAX];
    cn_err_t e = cn_auth_open(meta, data_dir, NULL, &l->auth);
    if (e == CN_E_NOT_FOUND) {
        cn_error("auth", "no auth state in %s: run `cairn admin --data DIR auth init` first",
                 data_dir);
        goto fail;
    }
    if (e < 0) {
        cn_error("auth", "cannot open the auth service: %s", cn_strerror(e));
        goto fail;
    }
    e = cn_auth_listener_files(l->auth, data_dir, cert, key, sizeof cert);
    if (e < 0) {
        cn_error("auth", "cannot write the listener's certificate: %s", cn_strerror(e));
        goto fail;
    }
    cn_listen_opts_t o = *opts;
    o.tls_cert = cert;
    o.tls_key = key;
    o.tls_pq_only = true;
    o.tls_client_cert = true;
    o.limits.handshake_ms = cfg && cfg->first_request_ms > 0 ? cfg->first_request_ms : 3000;
    o.limits.idle_ms = cfg && cfg->idle_ms > 0 ? cfg->idle_ms : 60000;
    e = cn_server_listen(srv, &sau2_adapter, l, &o);
    if (e < 0)
        goto fail;
    *out = l;
    return CN_OK;
fail:
    cn_sau2_listener_free(l);
    return e;
}

void cn_sau2_listener_free(cn_sau2_listener_t *l)
{
    if (!l)
        return;
    cn_auth_close(l->auth);
    free(l);
}
