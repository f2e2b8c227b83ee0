/* Scribe server adapter, protocol 2 (plaintext) or 4 (TLS; one per
 * listener): the adapter tables, protocol 4's checks of the hello (a zero
 * binding on control connections, the principal), the dispatch of each
 * admitted request, and the ONE table from service errors to the protocol's
 * numeric codes.  Sessions, data connections, binding secrets, the hello and
 * frame admission (header rules, the exact per-opcode payload bound, the
 * listener memory budget) are server_session.c's, shared with the gateway.
 * It must never speak protocol 2 inside TLS.
 *
 * The stream must never desynchronise: every request's payload and stream
 * are either consumed in full or the connection is closed.  The network
 * layer reads the 24-byte header; everything after it is read here, exactly,
 * never past the frame. */
#include "server_int.h"

#include "cairn/metrics.h"
#include "cairn/util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

cn_err_t cn__scribe_fail_code(cn__scribe_call_t *k, uint16_t code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    cn__scribe_vmsg(msg, sizeof msg, fmt, ap);
    va_end(ap);
    k->code = code;
    static cn_log_limit_t lim;
    if (code == CN_SCRIBE_E_INTERNAL || code == CN_SCRIBE_E_STORAGE_FAILURE ||
        code == CN_SCRIBE_E_CORRUPT)
        cn_warn_limited(
            &lim, "scribe", "conn %llu: %s failed: %s", (unsigned long long)cn_conn_id(k->c),
            cn_scribe_op_name(k->hdr.opcode) ? cn_scribe_op_name(k->hdr.opcode) : "?", msg);
    return cn__scribe_send_error(k->c, &k->sc->out, k->sc->codec, &k->hdr, code, msg);
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
    if (flags)
        return cn__scribe_send_frame(k->c, k->hdr.opcode, flags, k->hdr.request_id, &k->sc->out, 0);
    return cn__scribe_send_last(k->c, k->hdr.opcode, k->hdr.request_id, &k->sc->out);
}

cn_err_t cn__scribe_write(cn__scribe_call_t *k, const void *p, size_t n)
{
    return cn_conn_write_all(k->c, p, n, cn_conn_deadline_for(k->c, n));
}

/* ---- the adapter ------------------------------------------------------------------------- */
static void scribe_busy(void *actx, int fd)
{
    (void)actx;
    cn__scribe_busy_send(fd, "the server is at its connection limit");
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

/* The listener's handshake (server_session.c). */
static cn__scribe_hs_t scribe_hs(const cn__scribe_srv_t *s)
{
    return (cn__scribe_hs_t){
        .version = s->cfg.version,
        .test_codec = CN_SCRIBE_TEST_CODEC,
        .budget = true,
        .inactivity_s = s->cfg.inactivity_s,
        .unsupported = s->cfg.version == 4
                           ? "this TLS listener speaks protocol 4 with codec 1 only"
                           : "this plaintext listener speaks protocol 2 with codec 1 only",
    };
}

/* Reads the hello, then on protocol 4 checks a control hello's zero binding
 * and resolves its principal.  Returns 0 with *h decoded from body
 * (CN_SCRIBE_HELLO_BOUND bytes), or a negative error once the refusal (if
 * any) has been sent: the caller closes. */
static cn_err_t read_hello(cn__scribe_srv_t *s, cn_conn_t *c, uint8_t *body, cn_scribe_hdr_t *hd,
                           cn_scribe_hello_t *h, cn_scribe_principal_t *who)
{
    cn__scribe_hs_t hs = scribe_hs(s);
    CN_TRY(cn__scribe_read_hello(c, &hs, body, hd, h));
    memset(who, 0, sizeof *who);
    if (s->cfg.version == 4) {
        static const uint8_t zero[32];
        if (!h->bind_session && memcmp(h->binding, zero, sizeof zero) != 0)
            return cn__scribe_hello_fail(c, hd->request_id, CN_SCRIBE_E_MALFORMED,
                                         "a control connection's binding is zero");
        /* Handshake admission (docs/protocol/scribe.md 15.6): anonymous
         * hellos hold at most half the handshake pool; the permit goes back
         * once the reply is written (scribe_open) or at the close. */
        if (s->auth && h->caller == CN_SCRIBE_CALLER_ANONYMOUS &&
            cn_conn_anon_permit_take(c) == CN_E_BUSY)
            return cn__scribe_hello_fail(c, hd->request_id, CN_SCRIBE_E_BUSY,
                                         "too many anonymous handshakes in progress");
        /* The principal (docs/protocol/scribe.md 15.6): from the verified
         * access certificate, confirmed by auth (server_auth.c). */
        char why[256] = "";
        uint16_t code = cn__scribe_resolve(s, c, h, who, why, sizeof why);
        if (code)
            return cn__scribe_hello_fail(c, hd->request_id, code, why);
    }
    return CN_OK;
}

/* Test hook (CAIRN_TEST_SCRIBE_HELLO_STALL_MS, tests/scribe/
 * test_gateway_v4_admission.py): every hello read is answered only after so
 * many ms, so that a test stages a server that completes TLS and then stays
 * silent.  Unset, it costs one getenv per hello. */
static void hello_stall(void)
{
    const char *v = getenv("CAIRN_TEST_SCRIBE_HELLO_STALL_MS");
    cn_sleep_ms(v ? strtol(v, NULL, 10) : 0);
}

static cn_err_t scribe_open(void *actx, cn_conn_t *c, void **cstate)
{
    cn__scribe_srv_t *s = actx;
    cn_scribe_hdr_t h;
    cn_scribe_hello_t hello;
    cn_scribe_principal_t who;
    uint8_t *body = malloc(CN_SCRIBE_HELLO_BOUND);
    if (!body)
        return -ENOMEM;
    cn_err_t err = read_hello(s, c, body, &h, &hello, &who);
    if (err >= 0)
        hello_stall();
    cn__scribe_conn_t *sc = err < 0 ? NULL : calloc(1, sizeof *sc);
    free(body); /* hello's views die here: only its numbers are read below */
    if (!sc)
        return err < 0 ? err : -ENOMEM;
    sc->srv = s;
    sc->codec = hello.codec;
    sc->compression = (hello.caps & CN_SCRIBE_CAP_LZ4) ? 1 : 0;
    sc->version = s->cfg.version;
    sc->data = hello.bind_session != 0;
    cn__scribe_hs_t hs = scribe_hs(s);
    err = cn__scribe_hello_answer(&s->sessions, c, &hs, h.request_id, &hello, &who, &sc->ss);
    cn_conn_anon_permit_release(c);
    if (err < 0) {
        conn_free(sc);
        return err;
    }
    sc->session = sc->ss->id;
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

/* The net layer's idle hook: inactivity is counted per session. */
static int64_t scribe_idle(void *cstate, int64_t now_ms)
{
    cn__scribe_conn_t *sc = cstate;
    return cn__scribe_session_idle(&sc->srv->sessions, sc->ss, sc->srv->cfg.inactivity_s, now_ms);
}

static cn_err_t scribe_serve_one(cn__scribe_conn_t *sc, cn_conn_t *c, const uint8_t *head);

/* Counts an answered request in cairn_requests_total{face="scribe",status}:
 * the HTTP class the same answer would have (docs/architecture.md): code 0
 * (no error) 2xx; a client code (cn_scribe_errcode_is_client: malformed,
 * unauthenticated, forbidden, limits, not found, conflicts) 4xx; the rest —
 * internal, busy, auth_unavailable, storage_failure, corrupt,
 * shutting_down — 5xx, as HTTP's 500 and 503.  One atomic load and one add. */
static void scribe_count_class(uint16_t code)
{
    static _Atomic(cn_metric_t *) by_class[6];
    unsigned cls = code == 0 ? 2 : cn_scribe_errcode_is_client(code) ? 4 : 5;
    cn_metric_add(cn_metric_cached(&by_class[cls], &cn_metric_requests,
                                   "face=\"scribe\",status=\"%uxx\"", cls),
                  1);
}

/* Counts a core request that was read: its duration by operation, its
 * status class unless the connection failed before an answer, and for
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
    if (k->code || err >= 0)
        scribe_count_class(k->code);
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
    cn__scribe_session_activity(&sc->srv->sessions, sc->ss, true);
    cn_err_t err = scribe_serve_one(sc, c, head);
    if (err != CN_CONN_MORE) /* else busy until the reply's last part (cn__scribe_more_free) */
        cn__scribe_session_activity(&sc->srv->sessions, sc->ss, false);
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
    cn_err_t err = cn__scribe_frame_admit(c, &k.hdr, sc->version == 4);
    if (err == CN__SCRIBE_FRAME_DRAINED) {
        /* Reserved or unknown (or a second hello): answered, so the
         * connection stays usable. */
        scribe_count_class(k.hdr.opcode == CN_SCRIBE_OP_HELLO ? CN_SCRIBE_E_MALFORMED
                                                              : CN_SCRIBE_E_UNSUPPORTED_OPERATION);
        err = k.hdr.opcode == CN_SCRIBE_OP_HELLO
                  ? cn__scribe_fail_code(&k, CN_SCRIBE_E_MALFORMED, "the handshake is already done")
                  : cn__scribe_fail_code(&k, CN_SCRIBE_E_UNSUPPORTED_OPERATION,
                                         "opcode %u is not offered by this server", k.hdr.opcode);
        return err < 0 ? err : CN_OK;
    }
    if (err == CN__SCRIBE_FRAME_BUSY) {
        scribe_count_class(CN_SCRIBE_E_BUSY);
        cn__scribe_fail_code(&k, CN_SCRIBE_E_BUSY, "server memory is busy; retry");
        return CN_E_BUSY; /* the body was never read: close */
    }
    if (err < 0)
        return err;
    int64_t t0 = cn_mono_ns();
    err = cn__scribe_frame_body(c, &k.hdr, &sc->in);
    if (err >= 0) {
        k.payload = sc->in.data;
        k.len = k.hdr.length;
        err = cn__scribe_op(&k);
    }
    scribe_count(&k, err, t0);
    cn__scribe_frame_done(c, &k.hdr, &sc->in, &sc->out);
    if (err >= 0 && k.close)
        err = CN_E_CLOSED;
    return err < 0 ? err : err == CN_CONN_MORE ? err : CN_OK;
}

static void scribe_close(void *cstate)
{
    cn__scribe_conn_t *sc = cstate;
    if (!sc)
        return;
    cn__scribe_more_free(sc); /* a reply stream left in parts */
    cn__scribe_session_release(&sc->srv->sessions, sc->session, sc->data);
    conn_free(sc);
}

static const cn_adapter_t cn_scribe_adapter = {
    .name = "scribe",
    .head_len = CN_SCRIBE_HDR_LEN,
    .busy = scribe_busy,
    .open = scribe_open,
    .hello_len = cn__scribe_hello_len,
    .classify = scribe_classify,
    .serve = scribe_serve,
    .resume = cn__scribe_resume,
    .close = scribe_close,
    .idle = scribe_idle,
};

static const cn_adapter_t cn_scribes_adapter = {
    .name = "scribes", /* protocol 4; no busy hook: never called under TLS */
    .head_len = CN_SCRIBE_HDR_LEN,
    .open = scribe_open,
    .hello_len = cn__scribe_hello_len,
    .classify = scribe_classify,
    .serve = scribe_serve,
    .resume = cn__scribe_resume,
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
    s->sessions.mu = &s->mu;
    *ad = s->cfg.version == 4 ? &cn_scribes_adapter : &cn_scribe_adapter;
    *actx = s;
    return CN_OK;
}

void cn_scribe_adapter_destroy(void *actx)
{
    cn__scribe_srv_t *s = actx;
    if (!s)
        return;
    cn__scribe_sessions_free(&s->sessions);
    pthread_mutex_destroy(&s->mu);
    cn_scribe_auth_free(s->auth);
    free(s);
}
