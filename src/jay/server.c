/* Jay native v1 server adapter: the adapter table, frame handling (header
 * limits, metadata, stream_id echo, unknown opcodes, draining refused
 * bodies), rate limiting, and the ONE table from service errors to the
 * protocol's (status, code).
 *
 * The stream must never desynchronise: every request's metadata and body are
 * either consumed in full or the connection is closed.  The request head (17
 * bytes) is read by the network layer; everything after it is read here,
 * exactly, never past the frame (the loop reads the next head itself). */
#include "server_int.h"

#include "cairn/metrics.h"
#include "cairn/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CN_JAY_DEFAULT_DRAIN (64ull << 20)

/* ---- the error table ---------------------------------------------------------
 * (class, what, objects detail) → v1 code; the status is the one the spec
 * pairs with the code (cn_jay_code_status).  Every objects detail has its
 * row (tests/jay/test_jay_errors.c walks them); a failure without a detail
 * maps by class and what. */
#define ANY CN_OBJ_WHAT_ANY
static const cn_obj_err_row_t jay_errors[] = {
    /* by rule */
    { CN_E_INVALID, ANY, CN_OBJ_BUCKET_NAME_INVALID, CN_JAY_CODE_INVALID_BUCKET_NAME },
    { CN_E_INVALID, ANY, CN_OBJ_KEY_INVALID, CN_JAY_CODE_INVALID_ARGUMENT },
    { CN_E_INVALID, ANY, CN_OBJ_KEY_TOO_LONG, CN_JAY_CODE_INVALID_ARGUMENT },
    { CN_E_INVALID, ANY, CN_OBJ_CONTENT_TYPE_TOO_LONG, CN_JAY_CODE_INVALID_ARGUMENT },
    { CN_E_INVALID, ANY, CN_OBJ_METADATA_KEY_INVALID, CN_JAY_CODE_INVALID_ARGUMENT },
    { CN_E_INVALID, ANY, CN_OBJ_METADATA_TOO_LARGE, CN_JAY_CODE_INVALID_ARGUMENT },
    { CN_E_INVALID, ANY, CN_OBJ_CHECKSUM_ALG_INVALID, CN_JAY_CODE_INVALID_ARGUMENT },
    { CN_E_INVALID, ANY, CN_OBJ_LIST_ARG_INVALID, CN_JAY_CODE_INVALID_ARGUMENT },
    { CN_E_INVALID, ANY, CN_OBJ_PART_NUMBER_INVALID, CN_JAY_CODE_INVALID_ARGUMENT },
    { CN_E_INVALID, ANY, CN_OBJ_PART_LIST_INVALID, CN_JAY_CODE_INVALID_ARGUMENT },
    { CN_E_INVALID, ANY, CN_OBJ_PART_ORDER, CN_JAY_CODE_INVALID_ARGUMENT },
    { CN_E_INVALID, ANY, CN_OBJ_PART_MISSING, CN_JAY_CODE_INVALID_ARGUMENT },
    { CN_E_INVALID, ANY, CN_OBJ_PART_ETAG_MISMATCH, CN_JAY_CODE_INVALID_ARGUMENT },
    /* Jay sets no part minimum (docs/protocol/jay.md); should a check raise it */
    { CN_E_INVALID, ANY, CN_OBJ_PART_TOO_SMALL, CN_JAY_CODE_INVALID_ARGUMENT },
    { CN_E_INVALID, ANY, CN_OBJ_POLICY_INVALID, CN_JAY_CODE_INVALID_ARGUMENT },
    { CN_E_INVALID, ANY, CN_OBJ_SETTING_NAME_INVALID, CN_JAY_CODE_INVALID_ARGUMENT },
    { CN_E_NOT_FOUND, ANY, CN_OBJ_SETTING_UNSET, CN_JAY_CODE_NO_SUCH_KEY },
    /* S3 versioning, object lock, tagging and lifecycle: Jay names no version
     * and sets none of these, so a detail reaching it answers as its nearest
     * v1 code (docs/protocol/jay.md, "Versioned buckets"). */
    { CN_E_INVALID, ANY, CN_OBJ_VERSION_ID_INVALID, CN_JAY_CODE_INVALID_ARGUMENT },
    { CN_E_NOT_FOUND, ANY, CN_OBJ_NO_SUCH_VERSION, CN_JAY_CODE_NO_SUCH_KEY },
    { CN_E_UNSUPPORTED, ANY, CN_OBJ_VERSION_IS_MARKER, CN_JAY_CODE_NO_SUCH_KEY },
    { CN_E_DENIED, ANY, CN_OBJ_VERSION_LOCKED, CN_JAY_CODE_ACCESS_DENIED },
    { CN_E_INVALID, ANY, CN_OBJ_VERSIONING_STATE_INVALID, CN_JAY_CODE_INVALID_ARGUMENT },
    { CN_E_CONFLICT, ANY, CN_OBJ_BUCKET_STATE_INVALID, CN_JAY_CODE_INVALID_ARGUMENT },
    { CN_E_INVALID, ANY, CN_OBJ_LOCK_NOT_ENABLED, CN_JAY_CODE_INVALID_ARGUMENT },
    { CN_E_NOT_FOUND, ANY, CN_OBJ_LOCK_UNSET, CN_JAY_CODE_NO_SUCH_KEY },
    { CN_E_DENIED, ANY, CN_OBJ_LOCK_RETAINED, CN_JAY_CODE_ACCESS_DENIED },
    { CN_E_INVALID, ANY, CN_OBJ_LOCK_DATE_PAST, CN_JAY_CODE_INVALID_ARGUMENT },
    { CN_E_INVALID, ANY, CN_OBJ_TAGS_INVALID, CN_JAY_CODE_INVALID_ARGUMENT },
    { CN_E_INVALID, ANY, CN_OBJ_LIFECYCLE_INVALID, CN_JAY_CODE_INVALID_ARGUMENT },
    /* by class and what */
    { CN_E_NOT_FOUND, CN_OBJ_WHAT_BUCKET, 0, CN_JAY_CODE_NO_SUCH_BUCKET },
    { CN_E_NOT_FOUND, ANY, 0, CN_JAY_CODE_NO_SUCH_KEY },
    { CN_E_INVALID, CN_OBJ_WHAT_BUCKET, 0, CN_JAY_CODE_INVALID_BUCKET_NAME },
    { CN_E_INVALID, ANY, 0, CN_JAY_CODE_INVALID_ARGUMENT },
    /* by class */
    { CN_E_NO_UPLOAD, ANY, 0, CN_JAY_CODE_NO_SUCH_UPLOAD },
    { CN_E_EXISTS, ANY, 0, CN_JAY_CODE_BUCKET_ALREADY_EXISTS },
    { CN_E_NOT_EMPTY, ANY, 0, CN_JAY_CODE_BUCKET_NOT_EMPTY },
    { CN_E_TOO_LARGE, ANY, 0, CN_JAY_CODE_ENTITY_TOO_LARGE },
    { CN_E_RANGE, ANY, 0, CN_JAY_CODE_INVALID_RANGE },
    { CN_E_DENIED, ANY, 0, CN_JAY_CODE_ACCESS_DENIED },
    { CN_E_AUTH, ANY, 0, CN_JAY_CODE_ACCESS_DENIED },
    { CN_E_RATE_LIMITED, ANY, 0, CN_JAY_CODE_RATE_LIMIT_EXCEEDED }, /* retryable */
    { CN_E_BUSY, ANY, 0, CN_JAY_CODE_RATE_LIMIT_EXCEEDED },
    { CN_E_LIMIT, ANY, 0, CN_JAY_CODE_INVALID_ARGUMENT },
    { CN_E_PROTOCOL, ANY, 0, CN_JAY_CODE_INVALID_ARGUMENT },
    { CN_E_LENGTH_MISMATCH, ANY, 0, CN_JAY_CODE_INVALID_ARGUMENT },
    { CN_E_DIGEST_MISMATCH, ANY, 0, CN_JAY_CODE_INVALID_ARGUMENT },
    { CN_E_PRECONDITION, ANY, 0, CN_JAY_CODE_INVALID_ARGUMENT },
    { CN_E_UNSUPPORTED, ANY, 0, CN_JAY_CODE_UNKNOWN_OP },
};
#undef ANY

cn_jay_code_t cn__jay_code_of(const cn_objects_req_t *rq, cn_err_t err)
{
    return (cn_jay_code_t)cn_objects_err_lookup(
        jay_errors, sizeof jay_errors / sizeof jay_errors[0], rq, err, CN_JAY_CODE_INTERNAL_ERROR);
}

void cn__jay_time(int64_t ms, char out[CN_RFC3339_LEN])
{
    cn_rfc3339(ms, out);
}

const char *cn__jay_cstr(cn__jay_call_t *k, cn_jay_str_t s)
{
    if (k->nstrs == CN_JAY_MAX_STRS)
        return NULL;
    char *p = malloc((size_t)s.len + 1);
    if (!p)
        return NULL;
    if (s.len)
        memcpy(p, s.p, s.len);
    p[s.len] = 0;
    k->strs[k->nstrs++] = p;
    return p;
}

static cn_err_t jay_send_out(cn__jay_call_t *k, int64_t data_len)
{
    cn_buf_t *o = &k->jc->out;
    return cn_conn_write_all(
        k->c, o->data, o->len,
        cn_conn_deadline_for(k->c, o->len + (uint64_t)(data_len > 0 ? data_len : 0)));
}

cn_err_t cn__jay_fail_code(cn__jay_call_t *k, cn_jay_code_t code, const char *msg)
{
    cn_buf_t *o = &k->jc->out;
    cn_buf_reset(o);
    k->code = code;
    /* A message is for humans: cut it rather than fail (strings ≤ 65535). */
    char m[1024];
    snprintf(m, sizeof m, "%s", msg ? msg : "");
    cn_err_t err = cn_jay_error_encode(o, cn_jay_code_status(code), k->hdr.stream_id, m,
                                       cn_jay_code_str(code));
    if (err < 0)
        return err;
    return jay_send_out(k, 0);
}

cn_err_t cn__jay_fail(cn__jay_call_t *k, cn_err_t err)
{
    cn_jay_code_t code = cn__jay_code_of(&k->rq, err);
    const char *side = k->rq.side == CN_OBJ_SIDE_SOURCE ? "source: "
                       : k->rq.side == CN_OBJ_SIDE_DEST ? "destination: "
                                                        : "";
    char msg[400];
    const char *text = k->rq.fail.message[0] ? k->rq.fail.message : cn_strerror(err);
    snprintf(msg, sizeof msg, "%s%s", side, text);
    static cn_log_limit_t lim;
    if (code == CN_JAY_CODE_INTERNAL_ERROR)
        cn_warn_limited(
            &lim, "jay", "conn %llu: %s failed: %s (%s)", (unsigned long long)cn_conn_id(k->c),
            cn_jay_op_name(k->hdr.code) ? cn_jay_op_name(k->hdr.code) : "?", text, cn_errname(err));
    return cn__jay_fail_code(k, code, msg);
}

cn_err_t cn__jay_reply_encode(cn__jay_call_t *k, const cn_jay_resp_t *resp, int64_t data_len)
{
    cn_buf_t *o = &k->jc->out;
    cn_buf_reset(o);
    cn_jay_resp_t empty;
    memset(&empty, 0, sizeof empty);
    cn_err_t err = cn_jay_resp_encode(o, k->hdr.code, CN_JAY_ST_OK, k->hdr.stream_id,
                                      resp ? resp : &empty, data_len);
    if (err < 0)
        cn_fail_set(&k->rq.fail, CN_E_LIMIT, 0, "the response exceeds a protocol limit");
    return err < 0 ? (err == -ENOMEM ? err : CN_E_LIMIT) : 0;
}

cn_err_t cn__jay_reply(cn__jay_call_t *k, const cn_jay_resp_t *resp, int64_t data_len)
{
    cn_err_t err = cn__jay_reply_encode(k, resp, data_len);
    /* An answer that does not fit the frozen layout (over a cap): say so
     * instead of truncating it.  No body was promised yet. */
    if (err < 0)
        return data_len > 0 ? err : cn__jay_fail(k, err);
    return jay_send_out(k, data_len);
}

cn_err_t cn__jay_body_read(cn__jay_call_t *k, void *buf, size_t n, size_t *got)
{
    *got = 0;
    if (n > k->body_left)
        n = (size_t)k->body_left;
    if (!n)
        return 0;
    cn_err_t err = cn_conn_read_some(k->c, buf, n, got, k->body_deadline);
    if (err < 0)
        return err;
    k->body_left -= *got;
    return 0;
}

/* ---- the adapter ------------------------------------------------------------------ */
static int jay_classify(void *cstate, const uint8_t *head)
{
    (void)cstate;
    switch (head ? head[0] : 0) {
    case CN_JAY_OP_PUT_OBJECT:
    case CN_JAY_OP_GET_OBJECT:
    case CN_JAY_OP_GET_OBJECT_RANGE:
    case CN_JAY_OP_UPLOAD_PART:
    case CN_JAY_OP_COMPLETE_MULTIPART:
    case CN_JAY_OP_COPY_OBJECT: return CN_POOL_STORAGE;
    default: return CN_POOL_QUERY;
    }
}

static void jay_close(void *cstate)
{
    cn__jay_conn_t *jc = cstate;
    if (!jc)
        return;
    cn_objects_reader_free(jc->more.rd); /* a body left in parts */
    cn_buf_free(&jc->out);
    free(jc->io);
    free(jc);
}

/* Discards the rest of the body, or asks for the connection to be closed
 * when it is larger than the drain limit. */
static cn_err_t jay_drain(cn__jay_call_t *k)
{
    if (!k->body_left)
        return 0;
    if (k->body_left > k->jc->srv->cfg.drain_max_bytes)
        return CN_E_TOO_LARGE;
    cn_err_t err = cn_conn_drain(k->c, k->body_left, k->body_deadline);
    if (err >= 0)
        k->body_left = 0;
    return err;
}

/* A call on connection c of jc, with who asks and over what. */
static void call_init(cn__jay_call_t *k, cn__jay_conn_t *jc, cn_conn_t *c)
{
    memset(k, 0, sizeof *k);
    k->jc = jc;
    k->c = c;
    k->rq.principal = &jc->principal;
    k->rq.source_ip = jc->peer;
    k->rq.secure_transport = jc->tls;
}

/* Counts a request that was answered or failed: cairn_jay_operations_total
 * by operation and outcome ("ok", the v1 error code answered, or "aborted"
 * when the connection failed first), its duration, and its status class
 * in cairn_requests_total.  Series are registered on first use of each
 * pair, then found by one atomic load. */
static void jay_count(const cn__jay_call_t *k, cn_err_t err, int64_t t0)
{
    static const cn_metric_family_t ops = {
        .name = "cairn_jay_operations_total",
        .help = "Jay requests by operation and outcome (ok, or the error code answered).",
        .kind = CN_METRIC_COUNTER,
    };
    static _Atomic(cn_metric_t *) outcome[256][CN_JAY_CODE_END + 1], dur[256];
    const char *op = cn_jay_op_name(k->hdr.code);
    if (!op)
        op = "unknown";
    size_t oc = k->code != CN_JAY_CODE_NONE ? (size_t)k->code
                : err < 0                   ? CN_JAY_CODE_END
                                            : CN_JAY_CODE_NONE;
    const char *what = oc == CN_JAY_CODE_NONE  ? "ok"
                       : oc == CN_JAY_CODE_END ? "aborted"
                                               : cn_jay_code_str(k->code);
    cn_metric_add(
        cn_metric_cached(&outcome[k->hdr.code][oc], &ops, "op=\"%s\",outcome=\"%s\"", op, what), 1);
    cn_metric_observe_ns(cn_metric_cached(&dur[k->hdr.code], &cn_metric_request_duration,
                                          "face=\"jay\",op=\"%s\"", op),
                         cn_mono_ns() - t0);
    /* cairn_requests_total{face="jay",status}: the HTTP class the same
     * answer would have on S3 (docs/architecture.md): OK 2xx; InternalError,
     * and RateLimitExceeded (busy: S3's 503 SlowDown) 5xx; every other code
     * 4xx.  A request the connection failed before answering has none. */
    static _Atomic(cn_metric_t *) by_class[6];
    bool server = oc == CN_JAY_CODE_INTERNAL_ERROR || oc == CN_JAY_CODE_RATE_LIMIT_EXCEEDED;
    unsigned cls = oc == CN_JAY_CODE_NONE ? 2 : oc == CN_JAY_CODE_END ? 0 : server ? 5 : 4;
    if (cls)
        cn_metric_add(cn_metric_cached(&by_class[cls], &cn_metric_requests,
                                       "face=\"jay\",status=\"%uxx\"", cls),
                      1);
}

static cn_err_t jay_serve(void *cstate, cn_conn_t *c, const uint8_t *head)
{
    cn__jay_conn_t *jc = cstate;
    cn__jay_call_t k;
    call_init(&k, jc, c);
    int64_t t0 = cn_mono_ns();

    cn_err_t err = cn_jay_hdr_decode(head, CN_JAY_HDR_LEN, &k.hdr);
    if (err < 0) {
        /* meta_len over 1 MiB or a negative data_len: the stream cannot be
         * trusted any more.  Say why (best effort), then close. */
        cn__jay_fail_code(&k, CN_JAY_CODE_INVALID_ARGUMENT,
                          err == CN_E_LIMIT ? "meta_len exceeds 1 MiB" : "negative data_len");
        return CN_E_PROTOCOL;
    }
    k.body_left = (uint64_t)k.hdr.data_len;
    k.body_deadline = cn_conn_deadline_for(c, k.body_left);
    uint8_t *meta = NULL;
    bool reserved = false;

    /* Metadata first, whatever the opcode: the frame must be consumed. */
    if (k.hdr.meta_len && k.hdr.meta_len <= CN_JAY_META_INLINE) {
        err = cn_conn_read_full(c, jc->meta_small, k.hdr.meta_len,
                                cn_conn_deadline_for(c, k.hdr.meta_len));
        if (err < 0)
            goto out;
    } else if (k.hdr.meta_len) {
        err = cn_conn_budget_reserve(c, k.hdr.meta_len);
        if (err < 0) {
            /* No memory to hold it: skip it and refuse, retryably. */
            err = cn_conn_drain(c, k.hdr.meta_len, cn_conn_deadline_for(c, k.hdr.meta_len));
            if (err < 0)
                return err;
            err = cn__jay_fail_code(&k, CN_JAY_CODE_RATE_LIMIT_EXCEEDED, "server memory is busy");
            goto drain;
        }
        reserved = true;
        meta = malloc(k.hdr.meta_len);
        if (!meta) {
            err = -ENOMEM;
            goto out;
        }
        err = cn_conn_read_full(c, meta, k.hdr.meta_len, cn_conn_deadline_for(c, k.hdr.meta_len));
        if (err < 0)
            goto out;
    }
    if (!cn_jay_op_name(k.hdr.code)) {
        char msg[64];
        snprintf(msg, sizeof msg, "opcode 0x%02x is unknown to this server", k.hdr.code);
        err = cn__jay_fail_code(&k, CN_JAY_CODE_UNKNOWN_OP, msg);
        goto drain;
    }
    if (cn_identity_rate_take(jc->srv->id, jc->principal.token_id) == CN_E_RATE_LIMITED) {
        err = cn__jay_fail_code(&k, CN_JAY_CODE_RATE_LIMIT_EXCEEDED,
                                "rate limit exceeded for this token");
        goto drain;
    }
    err = cn_jay_req_decode(k.hdr.code, meta ? meta : jc->meta_small, k.hdr.meta_len, &k.req);
    if (err < 0) {
        err = cn__jay_fail_code(&k, CN_JAY_CODE_INVALID_ARGUMENT, "undecodable metadata");
        goto drain;
    }
    err = cn__jay_op(&k);
drain:
    if (err >= 0 && !k.close) {
        cn_err_t d = jay_drain(&k);
        if (d < 0)
            err = d;
    }
    if (err >= 0 && k.close)
        err = CN_E_CLOSED;
out:
    jay_count(&k, err, t0);
    for (size_t i = 0; i < k.nstrs; i++)
        free(k.strs[i]);
    free(meta);
    if (reserved)
        cn_conn_budget_release(c, k.hdr.meta_len);
    /* Keep the per-connection buffer small between requests. */
    if (jc->out.cap > 2 * CN_JAY_IO_BUF && !jc->more.rd)
        cn_buf_free(&jc->out);
    return err < 0 ? err : err == CN_CONN_MORE ? err : 0;
}

/* Bodies the loop may send itself (cn_adapter_t.fast); the rest go to a
 * worker, by sendfile. */
#define CN_JAY_FAST_BODY (16u * 1024)

/* The loop's fast path: a GetObject, HeadObject or GetObjectRange whose
 * metadata is already buffered and whose object is small is answered on the
 * loop thread, sparing the hand-off to a worker and back.  Everything else,
 * and anything unusual about these (a body, large or torn metadata), is
 * declined before a byte is consumed and served by jay_serve as ever. */
static int jay_fast(void *cstate, cn_conn_t *c, const uint8_t *head)
{
    cn__jay_conn_t *jc = cstate;
    uint8_t op = head[0];
    if (op != CN_JAY_OP_GET_OBJECT && op != CN_JAY_OP_HEAD_OBJECT &&
        op != CN_JAY_OP_GET_OBJECT_RANGE)
        return 0;
    cn__jay_call_t k;
    call_init(&k, jc, c);
    if (cn_jay_hdr_decode(head, CN_JAY_HDR_LEN, &k.hdr) < 0 || k.hdr.data_len != 0 ||
        k.hdr.meta_len > CN_JAY_META_INLINE)
        return 0;
    const uint8_t *p;
    if (cn_conn_peek(c, &p) < k.hdr.meta_len)
        return 0;
    /* Decoded from a copy: the read-ahead stays as it is until consumed. */
    memcpy(jc->meta_small, p, k.hdr.meta_len);
    if (cn_jay_req_decode(k.hdr.code, jc->meta_small, k.hdr.meta_len, &k.req) < 0)
        return 0;
    int64_t t0 = cn_mono_ns();
    int r = cn__jay_get_fast(&k, CN_JAY_FAST_BODY);
    if (r != 0)
        jay_count(&k, r < 0 ? r : 0, t0);
    for (size_t i = 0; i < k.nstrs; i++)
        free(k.strs[i]);
    if (jc->out.cap > 2 * CN_JAY_IO_BUF)
        cn_buf_free(&jc->out);
    return r;
}

static const cn_adapter_t cn_jay_adapter = {
    .name = "jay",
    .head_len = CN_JAY_HDR_LEN,
    .busy = cn__jay_busy,
    .open = cn__jay_open,
    .hello_len = cn__jay_hello_len,
    .classify = jay_classify,
    .serve = jay_serve,
    .resume = cn__jay_resume,
    .close = jay_close,
    .fast = jay_fast,
};

cn_err_t cn_jay_adapter_create(const cn_jay_config_t *cfg, cn_objects_t *objs, cn_identity_t *id,
                               const cn_adapter_t **ad, void **actx)
{
    *ad = NULL;
    *actx = NULL;
    if (!objs || !id)
        return CN_E_INVALID;
    cn__jay_srv_t *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    if (cfg)
        s->cfg = *cfg;
    if (!s->cfg.drain_max_bytes)
        s->cfg.drain_max_bytes = CN_JAY_DEFAULT_DRAIN;
    s->objs = objs;
    s->id = id;
    *ad = &cn_jay_adapter;
    *actx = s;
    return 0;
}

void cn_jay_adapter_destroy(void *actx)
{
    free(actx);
}
