/* Scribe sessions and the handshake, shared by the storage adapter
 * (server.c, protocol 2 or 4) and the gateway's (gw_server.c, protocol 2):
 * frames out, the session table (control sessions, their data connections,
 * inactivity counted per session, protocol 4's binding secrets), the hello
 * read by the handshake deadline and answered, and a request frame's
 * admission up to its body (header rules, the exact per-opcode bound, the
 * listener's memory budget).
 *
 * It must never let a protocol-4 data connection join a session without its
 * secret, caller mode, subject and version, and never read past a frame: a
 * frame is consumed in full or the caller closes the connection. */
#include "server_int.h"

#include "cairn/util.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* ---- frames out --------------------------------------------------------------------------- */
/* Encodes the header of a frame of payload into h; iov gets header and
 * payload.  Returns the iovec count. */
static int frame_iov(uint8_t h[CN_SCRIBE_HDR_LEN], struct iovec iov[2], uint16_t opcode,
                     uint16_t flags, uint64_t id, const cn_buf_t *payload)
{
    cn_scribe_hdr_t hdr = { opcode, flags, id, (uint32_t)payload->len };
    cn_scribe_hdr_encode(h, &hdr);
    iov[0] = (struct iovec){ h, CN_SCRIBE_HDR_LEN };
    iov[1] = (struct iovec){ payload->data, payload->len };
    return payload->len ? 2 : 1;
}

cn_err_t cn__scribe_send_frame(cn_conn_t *c, uint16_t opcode, uint16_t flags, uint64_t id,
                               const cn_buf_t *payload, uint64_t stream_hint)
{
    uint8_t h[CN_SCRIBE_HDR_LEN];
    struct iovec iov[2];
    int n = frame_iov(h, iov, opcode, flags, id, payload);
    return cn_conn_writev(c, iov, n, cn_conn_deadline_for(c, payload->len + stream_hint));
}

cn_err_t cn__scribe_send_last(cn_conn_t *c, uint16_t opcode, uint64_t id, const cn_buf_t *payload)
{
    uint8_t h[CN_SCRIBE_HDR_LEN];
    struct iovec iov[2];
    int n = frame_iov(h, iov, opcode, 0, id, payload);
    return cn_conn_reply(c, iov, n, -1, 0, 0, cn_conn_deadline_for(c, payload->len));
}

void cn__scribe_vmsg(char *msg, size_t cap, const char *fmt, va_list ap)
{
    vsnprintf(msg, cap, fmt, ap);
    /* A message is for humans: never let invalid UTF-8 from a name reach it. */
    for (char *p = msg; *p; p++)
        if ((unsigned char)*p >= 0x80)
            *p = '?';
}

cn_err_t cn__scribe_send_error(cn_conn_t *c, cn_buf_t *o, cn_scribe_codec_t codec,
                               const cn_scribe_hdr_t *hd, uint16_t code, const char *msg)
{
    cn_buf_reset(o);
    CN_TRY(cn_scribe_enc_error(o, codec, code, cn_scribe_cstr(msg)));
    return cn__scribe_send_frame(c, hd->opcode, CN_SCRIBE_FLAG_ERROR, hd->request_id, o, 0);
}

void cn__scribe_busy_send(int fd, const char *msg)
{
    uint8_t frame[CN_SCRIBE_HDR_LEN + 64];
    cn_buf_t b = { 0 };
    if (cn_scribe_enc_error(&b, CN_SCRIBE_CODEC_LE, CN_SCRIBE_E_BUSY, cn_scribe_cstr(msg)) >= 0 &&
        b.len <= sizeof frame - CN_SCRIBE_HDR_LEN) {
        cn_scribe_hdr_t h = { CN_SCRIBE_OP_HELLO, CN_SCRIBE_FLAG_ERROR, 0, (uint32_t)b.len };
        cn_scribe_hdr_encode(frame, &h);
        memcpy(frame + CN_SCRIBE_HDR_LEN, b.data, b.len);
        ssize_t rc = send(fd, frame, CN_SCRIBE_HDR_LEN + b.len, MSG_DONTWAIT | MSG_NOSIGNAL);
        (void)rc; /* best effort: the socket is closed next */
    }
    cn_buf_free(&b);
}

/* ---- the session table ----------------------------------------------------------------------- */
cn_err_t cn__scribe_session_new(cn__scribe_sessions_t *t, uint16_t version, uint8_t caller,
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
    if (who)
        ss->who = *who;
    ss->control_open = true;
    ss->last_ms = cn_mono_ms();
    pthread_mutex_lock(t->mu);
    ss->next = t->head;
    t->head = ss;
    pthread_mutex_unlock(t->mu);
    *out = ss;
    return CN_OK;
}

/* Why ss refuses a protocol-4 data connection of principal who (NULL: it
 * may bind, busy aside). */
static const char *bind_mismatch(const cn__scribe_session_t *ss, const cn_scribe_hello_t *h,
                                 const cn_scribe_principal_t *who)
{
    if (ss->version != h->version)
        return "the control session speaks another protocol version";
    if (h->version != 4)
        return NULL;
    if (CRYPTO_memcmp(ss->binding, h->binding, sizeof ss->binding) != 0)
        return "the binding does not match the control session";
    if (ss->caller != h->caller)
        return "the caller mode differs from the control session's";
    if (ss->who.present != who->present || strcmp(ss->who.credential, who->credential) != 0 ||
        strcmp(ss->who.key_id, who->key_id) != 0)
        return "the subject differs from the control session's";
    if (strcmp(ss->who.delegate_credential, who->delegate_credential) != 0 ||
        strcmp(ss->who.delegate_key_id, who->delegate_key_id) != 0)
        return "the delegate differs from the control session's";
    return NULL;
}

uint16_t cn__scribe_session_bind(cn__scribe_sessions_t *t, const cn_scribe_hello_t *h,
                                 const cn_scribe_principal_t *who, cn__scribe_session_t **out,
                                 const char **why)
{
    uint16_t code = h->version == 4 ? CN_SCRIBE_E_UNAUTHENTICATED : CN_SCRIBE_E_MALFORMED;
    *why = "no live control session with that id";
    pthread_mutex_lock(t->mu);
    for (cn__scribe_session_t *ss = t->head; ss; ss = ss->next) {
        if (ss->id != h->bind_session || !ss->control_open)
            continue;
        const char *mismatch = bind_mismatch(ss, h, who);
        if (mismatch) {
            *why = mismatch;
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
    pthread_mutex_unlock(t->mu);
    return code;
}

void cn__scribe_session_release(cn__scribe_sessions_t *t, uint64_t id, bool data)
{
    pthread_mutex_lock(t->mu);
    for (cn__scribe_session_t **pp = &t->head; *pp; pp = &(*pp)->next) {
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
    pthread_mutex_unlock(t->mu);
}

void cn__scribe_sessions_free(cn__scribe_sessions_t *t)
{
    while (t->head) {
        cn__scribe_session_t *n = t->head->next;
        free(t->head);
        t->head = n;
    }
}

void cn__scribe_session_activity(cn__scribe_sessions_t *t, cn__scribe_session_t *ss, bool start)
{
    pthread_mutex_lock(t->mu);
    if (start)
        ss->busy++;
    else if (ss->busy)
        ss->busy--;
    ss->last_ms = cn_mono_ms();
    pthread_mutex_unlock(t->mu);
}

int64_t cn__scribe_session_idle(cn__scribe_sessions_t *t, cn__scribe_session_t *ss,
                                uint32_t inactivity_s, int64_t now_ms)
{
    int64_t timeout_ms = (int64_t)inactivity_s * 1000;
    pthread_mutex_lock(t->mu);
    int64_t keep = ss->busy ? now_ms + timeout_ms : ss->last_ms + timeout_ms;
    pthread_mutex_unlock(t->mu);
    return keep > now_ms ? keep : 0;
}

/* ---- the handshake --------------------------------------------------------------------------- */
cn_err_t cn__scribe_hello_fail(cn_conn_t *c, uint64_t id, uint16_t code, const char *msg)
{
    cn_buf_t b = { 0 };
    if (cn_scribe_enc_error(&b, CN_SCRIBE_CODEC_LE, code, cn_scribe_cstr(msg)) >= 0)
        cn__scribe_send_frame(c, CN_SCRIBE_OP_HELLO, CN_SCRIBE_FLAG_ERROR, id, &b, 0);
    cn_buf_free(&b);
    return CN_E_PROTOCOL;
}

size_t cn__scribe_hello_len(const uint8_t *p, size_t have)
{
    cn_scribe_hdr_t h;
    if (have < CN_SCRIBE_HDR_LEN)
        return CN_SCRIBE_HDR_LEN;
    if (cn_scribe_hdr_parse(p, &h) < 0 || h.opcode != CN_SCRIBE_OP_HELLO || h.flags ||
        h.length > CN_SCRIBE_HELLO_BOUND)
        return have; /* read_hello answers or closes at once */
    return CN_SCRIBE_HDR_LEN + h.length;
}

cn_err_t cn__scribe_read_hello(cn_conn_t *c, const cn__scribe_hs_t *hs, uint8_t *body,
                               cn_scribe_hdr_t *hd, cn_scribe_hello_t *h)
{
    int64_t deadline = cn_conn_handshake_deadline(c);
    uint8_t head[CN_SCRIBE_HDR_LEN];
    cn_err_t err = cn_conn_read_full(c, head, sizeof head, deadline);
    if (err < 0)
        return err;
    if (cn_scribe_hdr_parse(head, hd) < 0)
        return CN_E_PROTOCOL;
    if (hd->opcode != CN_SCRIBE_OP_HELLO || hd->flags)
        return cn__scribe_hello_fail(c, hd->request_id, CN_SCRIBE_E_MALFORMED,
                                     "the first frame of a connection is a hello");
    /* The bound includes protocol 4's caller envelope on every listener, so
     * that an over-long client string, or a v4 hello on plaintext, is read
     * and answered rather than cut off. */
    if (hd->length > CN_SCRIBE_HELLO_BOUND)
        return CN_E_PROTOCOL; /* over the opcode's bound: close unread */
    if (hs->budget && cn_conn_budget_reserve(c, hd->length) < 0)
        return cn__scribe_hello_fail(c, hd->request_id, CN_SCRIBE_E_BUSY, "server memory is busy");
    err = cn_conn_read_full(c, body, hd->length, deadline);
    if (hs->budget)
        cn_conn_budget_release(c, hd->length);
    if (err < 0)
        return err;
    err = cn_scribe_dec_hello(body, hd->length, hs->version, hs->test_codec, h);
    if (err == CN_E_UNSUPPORTED)
        return cn__scribe_hello_fail(c, hd->request_id, CN_SCRIBE_E_UNSUPPORTED_VERSION,
                                     hs->unsupported);
    if (err < 0)
        return cn__scribe_hello_fail(c, hd->request_id, CN_SCRIBE_E_MALFORMED, "malformed hello");
    return CN_OK;
}

cn_err_t cn__scribe_hello_answer(cn__scribe_sessions_t *t, cn_conn_t *c, const cn__scribe_hs_t *hs,
                                 uint64_t request_id, const cn_scribe_hello_t *h,
                                 const cn_scribe_principal_t *who, cn__scribe_session_t **out)
{
    cn__scribe_session_t *ss = NULL;
    if (h->bind_session) {
        const char *why = NULL;
        uint16_t code = cn__scribe_session_bind(t, h, who, &ss, &why);
        if (code)
            return cn__scribe_hello_fail(c, request_id, code, why);
    } else {
        CN_TRY(cn__scribe_session_new(t, hs->version, h->caller, who, &ss));
    }
    cn_scribe_hello_ok_t ok;
    memset(&ok, 0, sizeof ok);
    ok.version = hs->version;
    ok.codec = h->codec;
    ok.session = ss->id;
    ok.timeout_s = hs->inactivity_s;
    ok.compression = (h->caps & CN_SCRIBE_CAP_LZ4) ? 1 : 0;
    if (hs->version == 4 && !h->bind_session) {
        ok.has_binding = true;
        memcpy(ok.binding, ss->binding, sizeof ok.binding);
    }
    cn_buf_t b = { 0 };
    cn_err_t err = cn_scribe_enc_hello_ok(&b, &ok);
    if (err >= 0)
        err = cn__scribe_send_frame(c, CN_SCRIBE_OP_HELLO, 0, request_id, &b, 0);
    cn_buf_free(&b);
    OPENSSL_cleanse(ok.binding, sizeof ok.binding);
    if (err < 0) {
        cn__scribe_session_release(t, ss->id, h->bind_session != 0);
        return err;
    }
    *out = ss;
    return CN_OK;
}

/* ---- a request frame's admission ------------------------------------------------------------- */
cn_err_t cn__scribe_frame_admit(cn_conn_t *c, const cn_scribe_hdr_t *hd, bool v4)
{
    uint32_t bound = 0;
    bool core = cn_scribe_request_bound(hd->opcode, v4, &bound);
    if (!core || hd->opcode == CN_SCRIBE_OP_HELLO) {
        /* Reserved or unknown (or a second hello): drain a bounded body, so
         * that the caller answers and the connection stays usable. */
        if (hd->length > CN_SCRIBE_DRAIN_MAX || (hd->flags & CN_SCRIBE_FLAG_STREAM))
            return CN_E_PROTOCOL;
        CN_TRY(cn_conn_drain(c, hd->length, cn_conn_deadline_for(c, hd->length)));
        return CN__SCRIBE_FRAME_DRAINED;
    }
    if (hd->length > bound)
        return CN_E_PROTOCOL; /* over the exact bound: close without reading */
    bool stream = hd->opcode == CN_SCRIBE_OP_PUT_OBJECTS;
    if (((hd->flags & CN_SCRIBE_FLAG_STREAM) != 0) != stream || (hd->flags & CN_SCRIBE_FLAG_ERROR))
        return CN_E_PROTOCOL; /* we cannot tell where this frame ends */
    if (cn_conn_budget_reserve(c, hd->length) < 0)
        return CN__SCRIBE_FRAME_BUSY; /* the body is never read: answer busy, close */
    return CN__SCRIBE_FRAME_READ;
}

cn_err_t cn__scribe_frame_body(cn_conn_t *c, const cn_scribe_hdr_t *hd, cn_buf_t *in)
{
    cn_buf_reset(in);
    CN_TRY(cn_buf_reserve(in, hd->length ? hd->length : 1));
    CN_TRY(cn_conn_read_full(c, in->data, hd->length, cn_conn_deadline_for(c, hd->length)));
    in->len = hd->length;
    return CN_OK;
}

void cn__scribe_frame_done(cn_conn_t *c, const cn_scribe_hdr_t *hd, cn_buf_t *in, cn_buf_t *out)
{
    cn_conn_budget_release(c, hd->length);
    if (in->cap > (1u << 20))
        cn_buf_free(in);
    if (out->cap > (4u << 20))
        cn_buf_free(out);
}
