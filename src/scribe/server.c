/* Scribe server adapter, protocol 2 (plaintext) or 4 (TLS; one per
 * listener): the adapter tables, the handshake, sessions, data connections
 * and protocol 4's binding secrets, frame admission (header rules, the exact
 * per-opcode payload bound, the listener memory budget), and the ONE table
 * from service errors to the protocol's numeric codes.  It must never let a
 * protocol-4 data connection join a session without its secret, nor speak
 * protocol 2 inside TLS.
 *
 * The stream must never desynchronise: every request's payload and stream
 * are either consumed in full or the connection is closed.  The network
 * layer reads the 24-byte header; everything after it is read here, exactly,
 * never past the frame. */
#include "server_int.h"

#include "cairn/metrics.h"
#include "cairn/util.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* The largest hello of either protocol: 16,692 bytes (protocol 4 with a
 * delegated certificate); scribe_open reads it into the heap. */
#define HELLO_BOUND_V4 16692

/* ---- the error table --------------------------------------------------------------
 * The repos service's detail (cn_repos_code_t) → Scribe code; the contract
 * gave both the same numbers, but the wire's are Scribe's to keep, so the
 * pairing is written out.  A failure without a detail maps by its class. */
static const struct {
    uint16_t detail;
    uint16_t code;
} detail_codes[] = {
    { CN_REPOS_E_MALFORMED, CN_SCRIBE_E_MALFORMED },
    { CN_REPOS_E_FORBIDDEN, CN_SCRIBE_E_FORBIDDEN },
    { CN_REPOS_E_INTERNAL, CN_SCRIBE_E_INTERNAL },
    { CN_REPOS_E_BUSY, CN_SCRIBE_E_BUSY },
    { CN_REPOS_E_LIMIT_EXCEEDED, CN_SCRIBE_E_LIMIT_EXCEEDED },
    { CN_REPOS_E_STORAGE_FAILURE, CN_SCRIBE_E_STORAGE_FAILURE },
    { CN_REPOS_E_CORRUPT, CN_SCRIBE_E_CORRUPT },
    { CN_REPOS_E_REPOSITORY_NOT_FOUND, CN_SCRIBE_E_REPOSITORY_NOT_FOUND },
    { CN_REPOS_E_BRANCH_NOT_FOUND, CN_SCRIBE_E_BRANCH_NOT_FOUND },
    { CN_REPOS_E_CHANGE_NOT_FOUND, CN_SCRIBE_E_CHANGE_NOT_FOUND },
    { CN_REPOS_E_REPOSITORY_EXISTS, CN_SCRIBE_E_REPOSITORY_EXISTS },
    { CN_REPOS_E_OBJECT_MISSING, CN_SCRIBE_E_OBJECT_MISSING },
    { CN_REPOS_E_OBJECT_INVALID, CN_SCRIBE_E_OBJECT_INVALID },
    { CN_REPOS_E_WORKSPACE_MISMATCH, CN_SCRIBE_E_WORKSPACE_MISMATCH },
    { CN_REPOS_E_INTENT_FINALIZED, CN_SCRIBE_E_INTENT_FINALIZED },
    { CN_REPOS_E_PATH_CONFLICT, CN_SCRIBE_E_PATH_CONFLICT },
    { CN_REPOS_E_WORKSPACE_RETIRED, CN_SCRIBE_E_WORKSPACE_RETIRED },
    { CN_REPOS_E_BRANCH_EXISTS, CN_SCRIBE_E_BRANCH_EXISTS },
    { CN_REPOS_E_NAME_MISMATCH, CN_SCRIBE_E_NAME_MISMATCH },
    { CN_REPOS_E_CHANGE_NOT_PICKABLE, CN_SCRIBE_E_CHANGE_NOT_PICKABLE },
    { CN_REPOS_E_SCHEMA_OUTDATED, CN_SCRIBE_E_SCHEMA_OUTDATED },
    { CN_REPOS_E_OPERATION_INTENT_MISMATCH, CN_SCRIBE_E_OPERATION_INTENT_MISMATCH },
    { CN_REPOS_E_INCARNATION_MISMATCH, CN_SCRIBE_E_INCARNATION_MISMATCH },
    { CN_REPOS_E_BASE_CONFLICT, CN_SCRIBE_E_BASE_CONFLICT },
    { CN_REPOS_E_BASE_MISMATCH, CN_SCRIBE_E_BASE_MISMATCH },
    { CN_REPOS_E_MERGE_INCOMPLETE, CN_SCRIBE_E_MERGE_INCOMPLETE },
    { CN_REPOS_E_LOCK_REQUIRED, CN_SCRIBE_E_LOCK_REQUIRED },
    { CN_REPOS_E_LOCK_HELD, CN_SCRIBE_E_LOCK_HELD },
    { CN_REPOS_E_INVALID_REPOSITORY_CONFIG, CN_SCRIBE_E_INVALID_REPOSITORY_CONFIG },
    { CN_REPOS_E_ALREADY_APPLIED, CN_SCRIBE_E_ALREADY_APPLIED },
    { CN_REPOS_E_NOTE_REVISION_STALE, CN_SCRIBE_E_NOTE_REVISION_STALE },
};

uint16_t cn__scribe_detail_code(uint16_t detail)
{
    for (size_t i = 0; i < sizeof detail_codes / sizeof detail_codes[0]; i++)
        if (detail_codes[i].detail == detail)
            return detail_codes[i].code;
    return 0;
}

uint16_t cn__scribe_code_for(const cn_fail_t *f, cn_err_t err)
{
    uint16_t code = f->detail ? cn__scribe_detail_code(f->detail) : 0;
    if (code)
        return code;
    switch (err) {
    case CN_E_INVALID:
    case CN_E_PROTOCOL:
    case CN_E_LENGTH_MISMATCH: return CN_SCRIBE_E_MALFORMED;
    case CN_E_DIGEST_MISMATCH: return CN_SCRIBE_E_OBJECT_INVALID;
    case CN_E_DENIED: return CN_SCRIBE_E_FORBIDDEN;
    case CN_E_AUTH: return CN_SCRIBE_E_UNAUTHENTICATED;
    case CN_E_BUSY:
    case CN_E_DB_LOCKED:
    case CN_E_RATE_LIMITED: return CN_SCRIBE_E_BUSY;
    case CN_E_LIMIT:
    case CN_E_TOO_LARGE: return CN_SCRIBE_E_LIMIT_EXCEEDED;
    case CN_E_UNSUPPORTED: return CN_SCRIBE_E_UNSUPPORTED_OPERATION;
    case CN_E_CORRUPT: return CN_SCRIBE_E_CORRUPT;
    case CN_E_SHUTDOWN: return CN_SCRIBE_E_SHUTTING_DOWN;
    case CN_E_DB:
    case CN_E_UNAVAILABLE: /* the blob tier's backend, or the metadata engine */
    case -ENOSPC:
    case -EIO:
    case -EDQUOT:
    case -EROFS: return CN_SCRIBE_E_STORAGE_FAILURE;
    default: return CN_SCRIBE_E_INTERNAL;
    }
}

static cn_err_t send_frame(cn_conn_t *c, uint16_t opcode, uint16_t flags, uint64_t id,
                           const cn_buf_t *payload, uint64_t stream_hint)
{
    uint8_t h[CN_SCRIBE_HDR_LEN];
    cn_scribe_hdr_t hdr = { opcode, flags, id, (uint32_t)payload->len };
    cn_scribe_hdr_encode(h, &hdr);
    struct iovec iov[2] = { { h, sizeof h }, { payload->data, payload->len } };
    return cn_conn_writev(c, iov, payload->len ? 2 : 1,
                          cn_conn_deadline_for(c, payload->len + stream_hint));
}

cn_err_t cn__scribe_fail_code(cn__scribe_call_t *k, uint16_t code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* A message is for humans: never let invalid UTF-8 from a name reach it. */
    for (char *p = msg; *p; p++)
        if ((unsigned char)*p >= 0x80)
            *p = '?';
    cn_buf_t *o = &k->sc->out;
    cn_buf_reset(o);
    k->code = code;
    cn_err_t err = cn_scribe_enc_error(o, k->sc->codec, code, cn_scribe_cstr(msg));
    if (err < 0)
        return err;
    if (code == CN_SCRIBE_E_INTERNAL || code == CN_SCRIBE_E_STORAGE_FAILURE ||
        code == CN_SCRIBE_E_CORRUPT)
        cn_warn("scribe", "conn %llu: %s failed: %s", (unsigned long long)cn_conn_id(k->c),
                cn_scribe_op_name(k->hdr.opcode) ? cn_scribe_op_name(k->hdr.opcode) : "?", msg);
    return send_frame(k->c, k->hdr.opcode, CN_SCRIBE_FLAG_ERROR, k->hdr.request_id, o, 0);
}

cn_err_t cn__scribe_fail(cn__scribe_call_t *k, cn_err_t err)
{
    uint16_t code = cn__scribe_code_for(&k->rq.fail, err);
    const char *text = k->rq.fail.message[0] ? k->rq.fail.message : cn_strerror(err);
    return cn__scribe_fail_code(k, code, "%s", text);
}

cn_err_t cn__scribe_malformed(cn__scribe_call_t *k)
{
    return cn__scribe_fail_code(k, CN_SCRIBE_E_MALFORMED, "malformed %s request",
                                cn_scribe_op_name(k->hdr.opcode));
}

cn_err_t cn__scribe_reply(cn__scribe_call_t *k, uint16_t flags)
{
    return send_frame(k->c, k->hdr.opcode, flags, k->hdr.request_id, &k->sc->out, 0);
}

cn_err_t cn__scribe_write(cn__scribe_call_t *k, const void *p, size_t n)
{
    return cn_conn_write_all(k->c, p, n, cn_conn_deadline_for(k->c, n));
}

/* ---- sessions -------------------------------------------------------------------------- */
/* A new control session for a connection that spoke `version`; protocol 4
 * gives it 256 random bits of binding secret (anonymous sessions too). */
static cn_err_t session_new(cn__scribe_srv_t *s, uint16_t version, uint8_t caller,
                            const cn_scribe_principal_t *who, cn__scribe_session_t **out)
{
    cn__scribe_session_t *ss = calloc(1, sizeof *ss);
    if (!ss)
        return -ENOMEM;
    cn_err_t err = CN_OK;
    do {
        err = cn_random_bytes(&ss->id, sizeof ss->id);
    } while (err >= 0 && ss->id == 0);
    if (err >= 0 && version == 4)
        err = cn_random_bytes(ss->binding, sizeof ss->binding);
    if (err < 0) {
        free(ss);
        return err;
    }
    ss->version = version;
    ss->caller = caller;
    ss->who = *who;
    ss->control_open = true;
    ss->last_ms = cn_mono_ms();
    pthread_mutex_lock(&s->mu);
    ss->next = s->sessions;
    s->sessions = ss;
    pthread_mutex_unlock(&s->mu);
    *out = ss;
    return CN_OK;
}

/* Binds a data connection to the live control session h->bind_session.
 * Protocol 4 also needs the session's binding secret (compared in constant
 * time), its caller mode, its subject (the credential and key of its
 * access certificate) and its protocol version.  Returns 0, or the
 * Scribe code to refuse with (docs/protocol/scribe.md 15.4):
 * session_not_found-like refusals are malformed on protocol 2 (as before)
 * and unauthenticated on protocol 4; busy for a fifth data connection.
 * A bind is activity. */
static uint16_t session_bind(cn__scribe_srv_t *s, const cn_scribe_hello_t *h,
                             const cn_scribe_principal_t *who, cn__scribe_session_t **out,
                             const char **why)
{
    uint16_t code = h->version == 4 ? CN_SCRIBE_E_UNAUTHENTICATED : CN_SCRIBE_E_MALFORMED;
    *why = "no live control session with that id";
    pthread_mutex_lock(&s->mu);
    for (cn__scribe_session_t *ss = s->sessions; ss; ss = ss->next) {
        if (ss->id != h->bind_session || !ss->control_open)
            continue;
        if (ss->version != h->version) {
            *why = "the control session speaks another protocol version";
        } else if (h->version == 4 &&
                   CRYPTO_memcmp(ss->binding, h->binding, sizeof ss->binding) != 0) {
            *why = "the binding does not match the control session";
        } else if (h->version == 4 && ss->caller != h->caller) {
            *why = "the caller mode differs from the control session's";
        } else if (h->version == 4 && (ss->who.present != who->present ||
                                       strcmp(ss->who.credential, who->credential) != 0 ||
                                       strcmp(ss->who.key_id, who->key_id) != 0)) {
            *why = "the subject differs from the control session's";
        } else if (h->version == 4 &&
                   (strcmp(ss->who.delegate_credential, who->delegate_credential) != 0 ||
                    strcmp(ss->who.delegate_key_id, who->delegate_key_id) != 0)) {
            *why = "the delegate differs from the control session's";
        } else if (ss->data_conns >= CN_SCRIBE_DATA_CONNS) {
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
    pthread_mutex_unlock(&s->mu);
    return code;
}

static void session_release(cn__scribe_srv_t *s, uint64_t id, bool data)
{
    pthread_mutex_lock(&s->mu);
    for (cn__scribe_session_t **pp = &s->sessions; *pp; pp = &(*pp)->next) {
        cn__scribe_session_t *ss = *pp;
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
    pthread_mutex_unlock(&s->mu);
}

/* ---- the adapter ------------------------------------------------------------------------- */
static void scribe_busy(void *actx, int fd)
{
    (void)actx;
    /* A little-endian busy error for the hello not yet read, best effort. */
    uint8_t frame[CN_SCRIBE_HDR_LEN + 64];
    cn_buf_t b = { 0 };
    static const char msg[] = "the server is at its connection limit";
    if (cn_scribe_enc_error(&b, CN_SCRIBE_CODEC_LE, CN_SCRIBE_E_BUSY, cn_scribe_cstr(msg)) < 0 ||
        b.len > sizeof frame - CN_SCRIBE_HDR_LEN) {
        cn_buf_free(&b);
        return;
    }
    cn_scribe_hdr_t h = { CN_SCRIBE_OP_HELLO, CN_SCRIBE_FLAG_ERROR, 0, (uint32_t)b.len };
    cn_scribe_hdr_encode(frame, &h);
    memcpy(frame + CN_SCRIBE_HDR_LEN, b.data, b.len);
    ssize_t rc = send(fd, frame, CN_SCRIBE_HDR_LEN + b.len, MSG_DONTWAIT | MSG_NOSIGNAL);
    (void)rc;
    cn_buf_free(&b);
}

static void conn_free(cn__scribe_conn_t *sc)
{
    if (!sc)
        return;
    cn_buf_free(&sc->in);
    cn_buf_free(&sc->out);
    free(sc->io);
    free(sc->io2);
    free(sc);
}

/* A handshake error: a little-endian error frame, then the caller closes. */
static cn_err_t hello_fail(cn_conn_t *c, uint64_t id, uint16_t code, const char *msg)
{
    cn_buf_t b = { 0 };
    cn_err_t err = cn_scribe_enc_error(&b, CN_SCRIBE_CODEC_LE, code, cn_scribe_cstr(msg));
    if (err >= 0)
        send_frame(c, CN_SCRIBE_OP_HELLO, CN_SCRIBE_FLAG_ERROR, id, &b, 0);
    cn_buf_free(&b);
    return CN_E_PROTOCOL;
}

/* Reads and decodes the first frame, the hello, by the handshake deadline.
 * Returns 0 with *h decoded from body (HELLO_BOUND_V4 bytes, the caller's),
 * or a negative error once the refusal (if any) has been sent: the caller
 * closes. */
static cn_err_t read_hello(cn__scribe_srv_t *s, cn_conn_t *c, uint8_t *body, cn_scribe_hdr_t *hd,
                           cn_scribe_hello_t *h, cn_scribe_principal_t *who)
{
    int64_t deadline = cn_conn_handshake_deadline(c);
    uint8_t head[CN_SCRIBE_HDR_LEN];
    cn_err_t err = cn_conn_read_full(c, head, sizeof head, deadline);
    if (err < 0)
        return err;
    if (cn_scribe_hdr_parse(head, hd) < 0)
        return CN_E_PROTOCOL;
    if (hd->opcode != CN_SCRIBE_OP_HELLO || hd->flags)
        return hello_fail(c, hd->request_id, CN_SCRIBE_E_MALFORMED,
                          "the first frame of a connection is a hello");
    /* The bound includes protocol 4's caller envelope on every listener, so
     * that an over-long client string, or a v4 hello on plaintext, is read
     * and answered rather than cut off. */
    if (hd->length > HELLO_BOUND_V4)
        return CN_E_PROTOCOL; /* over the opcode's bound: close unread */
    if (cn_conn_budget_reserve(c, hd->length) < 0)
        return hello_fail(c, hd->request_id, CN_SCRIBE_E_BUSY, "server memory is busy");
    err = cn_conn_read_full(c, body, hd->length, deadline);
    cn_conn_budget_release(c, hd->length);
    if (err < 0)
        return err;
    err = cn_scribe_dec_hello(body, hd->length, s->cfg.version, CN_SCRIBE_TEST_CODEC, h);
    if (err == CN_E_UNSUPPORTED)
        return hello_fail(c, hd->request_id, CN_SCRIBE_E_UNSUPPORTED_VERSION,
                          s->cfg.version == 4
                              ? "this TLS listener speaks protocol 4 with codec 1 only"
                              : "this plaintext listener speaks protocol 2 with codec 1 only");
    if (err < 0)
        return hello_fail(c, hd->request_id, CN_SCRIBE_E_MALFORMED, "malformed hello");
    memset(who, 0, sizeof *who);
    if (s->cfg.version == 4) {
        static const uint8_t zero[32];
        if (!h->bind_session && memcmp(h->binding, zero, sizeof zero) != 0)
            return hello_fail(c, hd->request_id, CN_SCRIBE_E_MALFORMED,
                              "a control connection's binding is zero");
        /* The principal (docs/protocol/scribe.md 15.6): from the verified
         * access certificate, confirmed by auth (server_auth.c). */
        char why[256] = "";
        uint16_t code = cn__scribe_resolve(s, c, h, who, why, sizeof why);
        if (code)
            return hello_fail(c, hd->request_id, code, why);
    }
    return CN_OK;
}

static cn_err_t scribe_open(void *actx, cn_conn_t *c, void **cstate)
{
    cn__scribe_srv_t *s = actx;
    cn_scribe_hdr_t h;
    cn_scribe_hello_t hello;
    cn_scribe_principal_t who;
    uint8_t *body = malloc(HELLO_BOUND_V4);
    if (!body)
        return -ENOMEM;
    cn_err_t err = read_hello(s, c, body, &h, &hello, &who);
    cn__scribe_conn_t *sc = err < 0 ? NULL : calloc(1, sizeof *sc);
    if (!sc) {
        free(body);
        return err < 0 ? err : -ENOMEM;
    }
    sc->srv = s;
    sc->codec = hello.codec;
    sc->compression = (hello.caps & CN_SCRIBE_CAP_LZ4) ? 1 : 0;
    sc->version = s->cfg.version;
    if (hello.bind_session) {
        const char *why = NULL;
        uint16_t code = session_bind(s, &hello, &who, &sc->ss, &why);
        free(body);
        if (code) {
            conn_free(sc);
            return hello_fail(c, h.request_id, code, why);
        }
        sc->session = hello.bind_session;
        sc->data = true;
    } else {
        err = session_new(s, s->cfg.version, hello.caller, &who, &sc->ss);
        free(body); /* hello's views die here: nothing below reads them */
        if (err < 0) {
            conn_free(sc);
            return err;
        }
        sc->session = sc->ss->id;
    }
    cn_scribe_hello_ok_t ok;
    memset(&ok, 0, sizeof ok);
    ok.version = s->cfg.version;
    ok.codec = sc->codec;
    ok.session = sc->session;
    ok.timeout_s = s->cfg.inactivity_s;
    ok.compression = sc->compression;
    if (s->cfg.version == 4 && !sc->data) {
        ok.has_binding = true;
        memcpy(ok.binding, sc->ss->binding, sizeof ok.binding);
    }
    cn_buf_t b = { 0 };
    err = cn_scribe_enc_hello_ok(&b, &ok);
    if (err >= 0)
        err = send_frame(c, CN_SCRIBE_OP_HELLO, 0, h.request_id, &b, 0);
    cn_buf_free(&b);
    OPENSSL_cleanse(ok.binding, sizeof ok.binding);
    if (err < 0) {
        session_release(s, sc->session, sc->data);
        conn_free(sc);
        return err;
    }
    *cstate = sc;
    return CN_OK;
}

static int scribe_classify(void *cstate, const uint8_t *head)
{
    (void)cstate;
    uint16_t op = head ? (uint16_t)(head[4] | head[5] << 8) : 0;
    switch (op) {
    case CN_SCRIBE_OP_PUT_OBJECTS:
    case CN_SCRIBE_OP_GET_OBJECTS:
    case CN_SCRIBE_OP_SUBMIT:
    case CN_SCRIBE_OP_MERGE_SUBMIT:
    case CN_SCRIBE_OP_CHERRY_PICK_SUBMIT:
    case CN_SCRIBE_OP_PIN_OBJECTS:
    case CN_SCRIBE_OP_LOCK_ACQUIRE:
    case CN_SCRIBE_OP_LOCK_RELEASE:
    case CN_SCRIBE_OP_WORKSPACE_REGISTER:
    case CN_SCRIBE_OP_WORKSPACE_REMOVE:
    case CN_SCRIBE_OP_REPO_USAGE: return CN_POOL_STORAGE;
    default: return CN_POOL_QUERY;
    }
}

/* A request of the session starts (true) or ends (false). */
static void session_activity(cn__scribe_conn_t *sc, bool start)
{
    pthread_mutex_lock(&sc->srv->mu);
    if (start)
        sc->ss->busy++;
    else if (sc->ss->busy)
        sc->ss->busy--;
    sc->ss->last_ms = cn_mono_ms();
    pthread_mutex_unlock(&sc->srv->mu);
}

/* The net layer's idle hook: a connection stays while its session is
 * serving a request on any connection, or until the session's inactivity
 * timeout has passed since its last activity. */
static int64_t scribe_idle(void *cstate, int64_t now_ms)
{
    cn__scribe_conn_t *sc = cstate;
    int64_t timeout_ms = (int64_t)sc->srv->cfg.inactivity_s * 1000;
    pthread_mutex_lock(&sc->srv->mu);
    int64_t keep = sc->ss->busy ? now_ms + timeout_ms : sc->ss->last_ms + timeout_ms;
    pthread_mutex_unlock(&sc->srv->mu);
    return keep > now_ms ? keep : 0;
}

static cn_err_t scribe_serve_one(cn__scribe_conn_t *sc, cn_conn_t *c, const uint8_t *head);

/* Counts a core request that was read: its duration by operation, and for
 * the three submits cairn_scribe_submits_total by outcome ("ok", the error
 * code's name, or "aborted" when the connection failed first).  Series are
 * registered on first use, then found by one atomic load. */
static void scribe_count(const cn__scribe_call_t *k, cn_err_t err, int64_t t0)
{
    static const cn_metric_family_t submits = {
        .name = "cairn_scribe_submits_total",
        .help = "Scribe submits (submit, merge_submit, cherry_pick_submit) by outcome.",
        .kind = CN_METRIC_COUNTER,
    };
    enum {
        OK = 0,
        ABORTED = 256,
        OTHER = 257
    };
    static _Atomic(cn_metric_t *) dur[CN_SCRIBE_OP_LIMIT], sub[3][OTHER + 1];
    const char *op = cn_scribe_op_name(k->hdr.opcode);
    if (!op || k->hdr.opcode >= CN_SCRIBE_OP_LIMIT)
        return;
    cn_metric_observe_ns(cn_metric_cached(&dur[k->hdr.opcode], &cn_metric_request_duration,
                                          "face=\"scribe\",op=\"%s\"", op),
                         cn_mono_ns() - t0);
    int s = k->hdr.opcode == CN_SCRIBE_OP_SUBMIT               ? 0
            : k->hdr.opcode == CN_SCRIBE_OP_MERGE_SUBMIT       ? 1
            : k->hdr.opcode == CN_SCRIBE_OP_CHERRY_PICK_SUBMIT ? 2
                                                               : -1;
    if (s < 0)
        return;
    const char *name = k->code ? cn_scribe_errcode_name(k->code) : NULL;
    int i = k->code ? (k->code < ABORTED && name ? k->code : OTHER) : err < 0 ? ABORTED : OK;
    const char *what = i == OK ? "ok" : i == ABORTED ? "aborted" : i == OTHER ? "other" : name;
    cn_metric_add(cn_metric_cached(&sub[s][i], &submits, "op=\"%s\",outcome=\"%s\"", op, what), 1);
}

static cn_err_t scribe_serve(void *cstate, cn_conn_t *c, const uint8_t *head)
{
    cn__scribe_conn_t *sc = cstate;
    session_activity(sc, true);
    cn_err_t err = scribe_serve_one(sc, c, head);
    session_activity(sc, false);
    return err;
}

static cn_err_t scribe_serve_one(cn__scribe_conn_t *sc, cn_conn_t *c, const uint8_t *head)
{
    cn__scribe_call_t k;
    memset(&k, 0, sizeof k);
    k.sc = sc;
    k.c = c;
    k.rq.trusted = true; /* plaintext Scribe: every caller is trusted (spec section 6) */
    if (cn_scribe_hdr_parse(head, &k.hdr) < 0)
        return CN_E_PROTOCOL;
    uint32_t bound = 0;
    bool core = cn_scribe_request_bound(k.hdr.opcode, sc->version == 4, &bound);
    if (!core || k.hdr.opcode == CN_SCRIBE_OP_HELLO) {
        /* Reserved or unknown (or a second hello): drain a bounded body and
         * answer, so the connection stays usable. */
        if (k.hdr.length > CN_SCRIBE_DRAIN_MAX || (k.hdr.flags & CN_SCRIBE_FLAG_STREAM))
            return CN_E_PROTOCOL;
        cn_err_t err = cn_conn_drain(c, k.hdr.length, cn_conn_deadline_for(c, k.hdr.length));
        if (err < 0)
            return err;
        err = k.hdr.opcode == CN_SCRIBE_OP_HELLO
                  ? cn__scribe_fail_code(&k, CN_SCRIBE_E_MALFORMED, "the handshake is already done")
                  : cn__scribe_fail_code(&k, CN_SCRIBE_E_UNSUPPORTED_OPERATION,
                                         "opcode %u is not offered by this server", k.hdr.opcode);
        return err < 0 ? err : CN_OK;
    }
    if (k.hdr.length > bound)
        return CN_E_PROTOCOL; /* over the exact bound: close without reading */
    bool stream = k.hdr.opcode == CN_SCRIBE_OP_PUT_OBJECTS;
    if (((k.hdr.flags & CN_SCRIBE_FLAG_STREAM) != 0) != stream ||
        (k.hdr.flags & CN_SCRIBE_FLAG_ERROR))
        return CN_E_PROTOCOL; /* we cannot tell where this frame ends */
    if (cn_conn_budget_reserve(c, k.hdr.length) < 0) {
        cn__scribe_fail_code(&k, CN_SCRIBE_E_BUSY, "server memory is busy; retry");
        return CN_E_BUSY; /* the body was never read: close */
    }
    int64_t t0 = cn_mono_ns();
    cn_buf_reset(&sc->in);
    cn_err_t err = cn_buf_reserve(&sc->in, k.hdr.length ? k.hdr.length : 1);
    if (err >= 0)
        err =
            cn_conn_read_full(c, sc->in.data, k.hdr.length, cn_conn_deadline_for(c, k.hdr.length));
    if (err >= 0) {
        sc->in.len = k.hdr.length;
        k.payload = sc->in.data;
        k.len = k.hdr.length;
        err = cn__scribe_op(&k);
    }
    scribe_count(&k, err, t0);
    cn_conn_budget_release(c, k.hdr.length);
    if (sc->in.cap > (1u << 20))
        cn_buf_free(&sc->in);
    if (sc->out.cap > (4u << 20))
        cn_buf_free(&sc->out);
    if (err >= 0 && k.close)
        err = CN_E_CLOSED;
    return err < 0 ? err : CN_OK;
}

static void scribe_close(void *cstate)
{
    cn__scribe_conn_t *sc = cstate;
    if (!sc)
        return;
    session_release(sc->srv, sc->session, sc->data);
    conn_free(sc);
}

static const cn_adapter_t cn_scribe_adapter = {
    .name = "scribe",
    .head_len = CN_SCRIBE_HDR_LEN,
    .busy = scribe_busy,
    .open = scribe_open,
    .classify = scribe_classify,
    .serve = scribe_serve,
    .close = scribe_close,
    .idle = scribe_idle,
};

static const cn_adapter_t cn_scribes_adapter = {
    .name = "scribes", /* protocol 4; no busy hook: never called under TLS */
    .head_len = CN_SCRIBE_HDR_LEN,
    .open = scribe_open,
    .classify = scribe_classify,
    .serve = scribe_serve,
    .close = scribe_close,
    .idle = scribe_idle,
};

cn_err_t cn_scribe_adapter_create(const cn_scribe_config_t *cfg, cn_repos_t *repos,
                                  const cn_adapter_t **ad, void **actx)
{
    *ad = NULL;
    *actx = NULL;
    cn__scribe_srv_t *s = repos ? calloc(1, sizeof *s) : NULL;
    if (!s) {
        cn_scribe_auth_free(cfg ? cfg->auth : NULL); /* taken in every case */
        return repos ? -ENOMEM : CN_E_INVALID;
    }
    if (cfg)
        s->cfg = *cfg;
    s->auth = s->cfg.auth;
    if (!s->cfg.inactivity_s)
        s->cfg.inactivity_s = 300;
    if (!s->cfg.version)
        s->cfg.version = 2;
    if ((s->cfg.version != 2 && s->cfg.version != 4) || (s->auth && s->cfg.version != 4)) {
        cn_scribe_auth_free(s->auth);
        free(s);
        return CN_E_INVALID;
    }
    s->repos = repos;
    pthread_mutex_init(&s->mu, NULL);
    *ad = s->cfg.version == 4 ? &cn_scribes_adapter : &cn_scribe_adapter;
    *actx = s;
    return CN_OK;
}

void cn_scribe_adapter_destroy(void *actx)
{
    cn__scribe_srv_t *s = actx;
    if (!s)
        return;
    while (s->sessions) {
        cn__scribe_session_t *n = s->sessions->next;
        free(s->sessions);
        s->sessions = n;
    }
    pthread_mutex_destroy(&s->mu);
    cn_scribe_auth_free(s->auth);
    free(s);
}
