/* Forwarding through the gateway: a request goes to the storage server that
 * owns its repository on a pooled upstream connection of the client's codec
 * and transfer compression, and the answer comes back byte for byte.  Object
 * streams (put_objects' request stream, get_objects' and get_chunks' reply
 * streams) are relayed in CN__GW_IO pieces as they arrive, parsed only as
 * far as needed to find where they end; no body is held whole.  Any failure
 * once a request has gone upstream closes the client connection, so an
 * unknown outcome never looks like a definitive one.  repo_create and
 * repo_info, which name repositories, are here too. */
#include "gw_int.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* ---- byte pipes --------------------------------------------------------------------------- */
/* n bytes client -> upstream.  *up_failed tells which side broke. */
static cn_err_t pipe_up(cn__gw_call_t *k, cn__gw_up_t *up, uint64_t n, bool *up_failed)
{
    uint8_t *io = k->gc->io;
    while (n) {
        size_t want = n < CN__GW_IO ? (size_t)n : CN__GW_IO, got = 0;
        CN_TRY(cn_conn_read_some(k->c, io, want, &got, cn_conn_deadline_for(k->c, want)));
        cn_err_t e = cn__gw_up_write(up, io, got);
        if (e < 0) {
            *up_failed = true;
            return e;
        }
        n -= got;
    }
    return CN_OK;
}

/* n bytes upstream -> client. */
static cn_err_t pipe_down(cn__gw_call_t *k, cn__gw_up_t *up, uint64_t n)
{
    uint8_t *io = k->gc->io;
    while (n) {
        size_t want = n < CN__GW_IO ? (size_t)n : CN__GW_IO, got = 0;
        CN_TRY(cn__gw_up_read_some(up, io, want, &got));
        CN_TRY(cn_conn_write_all(k->c, io, got, cn_conn_deadline_for(k->c, got)));
        n -= got;
    }
    return CN_OK;
}

/* One object's transfer bytes of `length` original bytes, client ->
 * upstream: raw, or LZ4 blocks whose headers say how many bytes follow. */
static cn_err_t pipe_object(cn__gw_call_t *k, cn__gw_up_t *up, uint64_t length, bool *up_failed)
{
    if (!k->gc->compression)
        return pipe_up(k, up, length, up_failed);
    while (length) {
        uint8_t bh[CN_SCRIBE_BLOCK_HDR_LEN];
        cn_scribe_block_t b;
        CN_TRY(cn_conn_read_full(k->c, bh, sizeof bh, cn_conn_deadline_for(k->c, sizeof bh)));
        if (cn_scribe_dec_block(bh, length, &b) < 0)
            return CN_E_PROTOCOL;
        cn_err_t e = cn__gw_up_write(up, bh, sizeof bh);
        if (e < 0) {
            *up_failed = true;
            return e;
        }
        CN_TRY(pipe_up(k, up, b.stored, up_failed));
        length -= b.original;
    }
    return CN_OK;
}

/* put_objects' stream, item by item as the request payload announced. */
static cn_err_t relay_put_stream(cn__gw_call_t *k, cn__gw_up_t *up, const cn_scribe_put_req_t *q,
                                 bool *up_failed)
{
    for (uint32_t i = 0; i < q->count; i++) {
        cn_scribe_put_item_t it;
        cn_scribe_put_item(q, i, &it);
        CN_TRY(pipe_object(k, up, it.length, up_failed));
    }
    return CN_OK;
}

/* Sends pre (n bytes: headers held back, possibly none) and the next
 * `more` bytes up holds read ahead (all there) to the client in one write. */
static cn_err_t send_ahead(cn__gw_call_t *k, cn__gw_up_t *up, const uint8_t *pre, size_t n,
                           size_t more)
{
    struct iovec iov[2];
    int cnt = 0;
    if (n)
        iov[cnt++] = (struct iovec){ (void *)pre, n };
    if (more)
        iov[cnt++] = (struct iovec){ up->rb + up->rpos, more };
    up->rpos += (uint32_t)more;
    return cnt ? cn_conn_writev(k->c, iov, cnt, cn_conn_deadline_for(k->c, n + more)) : CN_OK;
}

/* Where a reply stream stands as its bytes pass through the relay: what the
 * next bytes are (an item header, an LZ4 block header, or data) and how many
 * of each are still due, so that the relay knows where the stream ends
 * without holding any of it. */
typedef struct stream_pos {
    uint32_t items;  /* item headers not yet complete (the one being read included) */
    uint64_t data;   /* bytes of the current object (raw) or block (LZ4) still to pass */
    uint64_t object; /* LZ4: original bytes of the current object after its last block */
    uint8_t hdr[CN_SCRIBE_GET_ITEM_HDR_MAX]; /* the header being read */
    size_t have;                             /* its bytes so far */
    bool block;                              /* hdr is an LZ4 block header */
} stream_pos_t;

/* The fewest bytes the stream still holds: never more than it does, so a
 * read of that many never reaches past its end.  0: it has ended.  (An item
 * header is 34 bytes, 42 with a length; a header that needs 42 has 34.) */
static uint64_t stream_due(const stream_pos_t *s)
{
    if (s->data)
        return s->data + (s->object ? CN_SCRIBE_BLOCK_HDR_LEN : 0) + 34 * (uint64_t)s->items;
    if (s->block)
        return CN_SCRIBE_BLOCK_HDR_LEN - s->have + 34 * (uint64_t)s->items;
    if (!s->items)
        return 0;
    return (s->have < 34 ? 34 - s->have : 42 - s->have) + 34 * (uint64_t)(s->items - 1);
}

/* The header in s->hdr once it is whole (s->have bytes so far): the
 * position moves past it (s->have 0) to its object's bytes or blocks, or to
 * the next header.  CN_E_PROTOCOL for one that is malformed. */
static cn_err_t stream_header(stream_pos_t *s, cn_scribe_codec_t codec, bool lz4)
{
    if (s->block) {
        cn_scribe_block_t b;
        if (s->have < CN_SCRIBE_BLOCK_HDR_LEN)
            return CN_OK;
        if (cn_scribe_dec_block(s->hdr, s->object, &b) < 0)
            return CN_E_PROTOCOL;
        s->object -= b.original;
        s->data = b.stored;
        s->block = false;
        s->have = 0;
        return CN_OK;
    }
    cn_scribe_get_item_t it;
    if (s->have != 34 && s->have != CN_SCRIBE_GET_ITEM_HDR_MAX)
        return CN_OK;
    long r = cn_scribe_dec_get_item(s->hdr, s->have, codec, &it);
    if (r == CN_E_AGAIN)
        return CN_OK;
    if (r < 0)
        return CN_E_PROTOCOL;
    s->items--;
    s->have = 0;
    if (it.present && it.length && lz4) {
        s->object = it.length;
        s->block = true;
    } else if (it.present) {
        s->data = it.length;
    }
    return CN_OK;
}

/* m (at most s->data) bytes of the current object or block have passed. */
static void stream_pass(stream_pos_t *s, uint64_t m)
{
    s->data -= m;
    s->block = !s->data && s->object; /* the object's next block */
}

/* Follows the n bytes at p through the stream: *used of them belong to it
 * (fewer than n only when it ended).  CN_E_PROTOCOL for a malformed item or
 * block header. */
static cn_err_t stream_follow(stream_pos_t *s, cn_scribe_codec_t codec, bool lz4, const uint8_t *p,
                              size_t n, size_t *used)
{
    size_t at = 0;
    while (at < n && stream_due(s)) {
        if (s->data) {
            size_t m = s->data < n - at ? (size_t)s->data : n - at;
            stream_pass(s, m);
            at += m;
            continue;
        }
        s->hdr[s->have++] = p[at++];
        CN_TRY(stream_header(s, codec, lz4));
    }
    *used = at;
    return CN_OK;
}

/* Takes the next bytes of s's stream from up into io + *fill (at most
 * CN__GW_IO in all): what the read-ahead holds, then, when at least a
 * read-ahead's worth is still due, what has arrived, read straight into io.
 * Never a byte past the stream's end.  (The TLS relay's step; a plaintext
 * one takes only the read-ahead's bytes, ahead_take.) */
static cn_err_t stream_take(cn__gw_call_t *k, cn__gw_up_t *up, stream_pos_t *s, uint8_t *io,
                            size_t *fill)
{
    cn_scribe_codec_t codec = k->gc->codec;
    bool lz4 = k->gc->compression != 0;
    size_t used = 0;
    if (up->rpos == up->rlen && stream_due(s) < CN__GW_UP_RB)
        CN_TRY(cn__gw_up_ahead(up, 1)); /* a few headers or a small object: read ahead */
    if (up->rpos < up->rlen) {
        size_t m = up->rlen - up->rpos;
        m = m < CN__GW_IO - *fill ? m : CN__GW_IO - *fill;
        CN_TRY(stream_follow(s, codec, lz4, up->rb + up->rpos, m, &used));
        memcpy(io + *fill, up->rb + up->rpos, used);
        up->rpos += (uint32_t)used;
        *fill += used;
    }
    uint64_t due = stream_due(s);
    if (due < CN__GW_UP_RB || up->rpos < up->rlen || CN__GW_IO - *fill < CN__GW_UP_RB)
        return CN_OK;
    size_t want = due < CN__GW_IO - *fill ? (size_t)due : CN__GW_IO - *fill, got = 0;
    CN_TRY(cn__gw_up_read_some(up, io + *fill, want, &got)); /* >= the read-ahead: straight */
    CN_TRY(stream_follow(s, codec, lz4, io + *fill, got, &used));
    *fill += got;
    return used == got ? CN_OK : CN_E_PROTOCOL;
}

/* ---- the plaintext relay: through the worker's pipe ------------------------------------------ */
/* Bytes peeked at a header: the longest item header (42) and the first
 * bytes after it; and the most header bytes (absent items) peeked in one
 * step. */
#define PEEK 64
#define PEEK_MAX 256

/* Where a plaintext reply stream's bytes go out: io[0..fill) (bytes copied
 * through user space, not yet sent), after what the relay's pipe holds
 * once it has been begun (on) by the stream's first splice; before that
 * they go by write. */
typedef struct plain_out {
    cn__gw_call_t *k;
    cn_conn_relay_t r;
    bool on;
    size_t fill;
} plain_out_t;

/* Sends io's bytes on, after the pipe's (into it when the relay is on). */
static cn_err_t out_emit(plain_out_t *o)
{
    cn_conn_t *c = o->k->c;
    size_t n = o->fill;
    o->fill = 0;
    if (!n)
        return CN_OK;
    int64_t deadline = cn_conn_deadline_for(c, n);
    return o->on ? cn_conn_relay_write(&o->r, o->k->gc->io, n, deadline)
                 : cn_conn_write_all(c, o->k->gc->io, n, deadline);
}

/* Everything held so far goes to the client: before a wait for storage,
 * and at the stream's end. */
static cn_err_t out_flush(plain_out_t *o)
{
    CN_TRY(out_emit(o));
    return o->on && o->r.held ? cn_conn_relay_flush(&o->r, cn_conn_deadline_for(o->k->c, o->r.held))
                              : CN_OK;
}

/* Whether the pipe holds bytes, which go out before a wait for storage
 * (io's alone wait, as a relay buffer's did: a small reply stays one write). */
static bool out_holds(const plain_out_t *o)
{
    return o->on && o->r.held;
}

/* Moves the next n bytes of up's socket to the client after io's, by the
 * pipe (begun on the first call).  known: some of them are known to have
 * arrived (peeked); else what the pipe holds goes first, since the splice
 * may wait for storage. */
static cn_err_t out_splice(plain_out_t *o, cn__gw_up_t *up, uint64_t n, bool known)
{
    cn_conn_t *c = o->k->c;
    int64_t deadline = cn_conn_deadline_for(c, n);
    if (!o->on) {
        CN_TRY(cn_conn_relay_begin(c, &o->r, deadline));
        o->on = true;
    }
    CN_TRY(out_emit(o));
    if (!known && o->r.held)
        CN_TRY(cn_conn_relay_flush(&o->r, deadline));
    return cn_conn_relay_splice(&o->r, up->fd, n, CN__GW_IO_MS, deadline);
}

/* The read-ahead's bytes of the stream (taken with its header) into io. */
static cn_err_t ahead_take(cn__gw_call_t *k, cn__gw_up_t *up, stream_pos_t *s, plain_out_t *o)
{
    size_t m = up->rlen - up->rpos, used = 0;
    m = m < CN__GW_IO - o->fill ? m : CN__GW_IO - o->fill;
    CN_TRY(stream_follow(s, k->gc->codec, k->gc->compression != 0, up->rb + up->rpos, m, &used));
    memcpy(k->gc->io + o->fill, up->rb + up->rpos, used);
    up->rpos += (uint32_t)used;
    o->fill += used;
    return CN_OK;
}

/* Follows the headers at the socket's head by peeking, without consuming
 * them, up to the next object (or LZ4 block) data or PEEK_MAX bytes: *hb
 * bytes followed (headers, and data that the peeks reached), which are
 * still in the socket.  *cut when the last peek could not look past the
 * header (the stream's last bytes).  What is held goes out before a wait
 * when the pipe holds some (out_holds). */
static cn_err_t peek_headers(cn__gw_call_t *k, cn__gw_up_t *up, stream_pos_t *s, plain_out_t *o,
                             size_t *hb, bool *cut)
{
    uint8_t pk[PEEK_MAX];
    while (!s->data && stream_due(s) && *hb + PEEK <= sizeof pk) {
        uint64_t due = stream_due(s);
        size_t want = *hb + (due < PEEK ? (size_t)due : PEEK), used = 0;
        cn_err_t e = cn__gw_up_peek(up, pk, want, !out_holds(o));
        if (e == CN_E_AGAIN) {
            CN_TRY(out_flush(o));
            e = cn__gw_up_peek(up, pk, want, true);
        }
        CN_TRY(e);
        CN_TRY(
            stream_follow(s, k->gc->codec, k->gc->compression != 0, pk + *hb, want - *hb, &used));
        *hb += used;
        *cut = due < PEEK;
    }
    return CN_OK;
}

/* Copies what has arrived, the hb followed bytes at least and at most a
 * read-ahead's worth past them (never past the stream's end), into io:
 * the way of small objects, many to a read. */
static cn_err_t copy_take(cn__gw_call_t *k, cn__gw_up_t *up, stream_pos_t *s, plain_out_t *o,
                          size_t hb)
{
    uint64_t due = stream_due(s);
    size_t want = hb + (due < CN__GW_UP_RB ? (size_t)due : CN__GW_UP_RB), got = 0, used = 0;
    while (got < hb || !got) {
        size_t g = 0;
        cn_err_t e =
            cn__gw_up_recv(up, k->gc->io + o->fill + got, want - got, !out_holds(o) && !hb, &g);
        if (e == CN_E_AGAIN && !got)
            CN_TRY(out_flush(o)); /* nothing has arrived: the pipe's bytes go first */
        if (e == CN_E_AGAIN)
            e = cn__gw_up_recv(up, k->gc->io + o->fill + got, want - got, true, &g);
        CN_TRY(e);
        got += g;
    }
    CN_TRY(stream_follow(s, k->gc->codec, k->gc->compression != 0, k->gc->io + o->fill + hb,
                         got - hb, &used));
    o->fill += got;
    return used == got - hb ? CN_OK : CN_E_PROTOCOL;
}

/* One step of a plaintext reply stream: the read-ahead's bytes; else the
 * next headers, peeked; then the object's (or LZ4 block's) data, spliced
 * with those headers when at least CN__GW_SPLICE of it is to come, else
 * copied. */
static cn_err_t plain_step(cn__gw_call_t *k, cn__gw_up_t *up, stream_pos_t *s, plain_out_t *o)
{
    if (CN__GW_IO - o->fill < CN__GW_UP_RB + PEEK_MAX)
        CN_TRY(out_emit(o));
    if (up->rpos < up->rlen)
        return ahead_take(k, up, s, o);
    size_t hb = 0;
    bool cut = false;
    CN_TRY(peek_headers(k, up, s, o, &hb, &cut));
    if (s->data < CN__GW_SPLICE)
        return copy_take(k, up, s, o, hb);
    uint64_t n = hb + s->data;
    stream_pass(s, s->data);
    return out_splice(o, up, n, hb && !cut);
}

/* get_objects' and get_chunks' reply stream of count items after pre (n
 * bytes: the reply's header and count), relayed as it arrives, its item
 * and LZ4 block headers followed on the way (malformed: CN_E_PROTOCOL), only
 * to know where the stream ends; no more than the relay buffer of it is
 * held.  In plaintext, an object (or LZ4 block) with at least CN__GW_SPLICE
 * still to come is spliced from storage's socket with its headers, which
 * are peeked, not read, into the worker's pipe, and the pipe goes to the
 * client when it fills or storage has no more for now: about a splice in
 * and a peek per object and a splice out per pipe-full, no copy through
 * user space.  Smaller objects are read many at a time and go into the
 * pipe (or, before the stream's first splice, to the client) in order.
 * Under TLS on either side each read goes to the client in one write,
 * whatever item or block boundaries it spans (about a read and a write per
 * relay buffer, CN__GW_IO). */
static cn_err_t relay_get_stream(cn__gw_call_t *k, cn__gw_up_t *up, uint32_t count,
                                 const uint8_t *pre, size_t n)
{
    uint8_t *io = k->gc->io;
    stream_pos_t s = { .items = count };
    memcpy(io, pre, n);
    if (up->ssl || cn_conn_is_tls(k->c)) {
        size_t fill = n;
        while (stream_due(&s)) {
            CN_TRY(stream_take(k, up, &s, io, &fill));
            CN_TRY(cn_conn_write_all(k->c, io, fill, cn_conn_deadline_for(k->c, fill)));
            fill = 0;
        }
        return CN_OK;
    }
    plain_out_t o = { .k = k, .fill = n };
    cn_err_t e = CN_OK;
    while (e >= 0 && stream_due(&s))
        e = plain_step(k, up, &s, &o);
    if (e >= 0)
        e = out_flush(&o);
    if (o.on)
        cn_conn_relay_end(&o.r);
    return e;
}

/* The answer to a forwarded request: its header checked and passed on, its
 * payload and stream relayed.  A payload that fits the read-ahead goes with
 * the header in one write, as does a stream's header with its first item. */
static cn_err_t relay_reply(cn__gw_call_t *k, cn__gw_up_t *up)
{
    uint8_t head[CN_SCRIBE_HDR_LEN + 4]; /* the header, and a stream's count */
    cn_scribe_hdr_t h;
    CN_TRY(cn__gw_up_read(up, head, CN_SCRIBE_HDR_LEN));
    bool may_stream =
        k->hdr.opcode == CN_SCRIBE_OP_GET_OBJECTS || k->hdr.opcode == CN_SCRIBE_OP_GET_CHUNKS;
    if (cn_scribe_hdr_parse(head, &h) < 0 || h.opcode != k->hdr.opcode ||
        h.request_id != k->hdr.request_id || ((h.flags & CN_SCRIBE_FLAG_STREAM) && !may_stream) ||
        ((h.flags & CN_SCRIBE_FLAG_STREAM) && (h.flags & CN_SCRIBE_FLAG_ERROR)))
        return CN_E_PROTOCOL;
    if (!(h.flags & CN_SCRIBE_FLAG_STREAM) && h.length <= CN__GW_UP_RB) {
        CN_TRY(cn__gw_up_ahead(up, h.length));
        return send_ahead(k, up, head, CN_SCRIBE_HDR_LEN, h.length);
    }
    if (!(h.flags & CN_SCRIBE_FLAG_STREAM)) {
        CN_TRY(
            cn_conn_write_all(k->c, head, CN_SCRIBE_HDR_LEN, cn_conn_deadline_for(k->c, h.length)));
        return pipe_down(k, up, h.length);
    }
    uint8_t *cnt = head + CN_SCRIBE_HDR_LEN;
    uint32_t count = 0;
    if (h.length != 4)
        return CN_E_PROTOCOL;
    CN_TRY(cn__gw_up_read(up, cnt, 4));
    if (cn_scribe_dec_count_resp(cnt, 4, k->gc->codec, &count) < 0 || count > CN_SCRIBE_MAX_BATCH)
        return CN_E_PROTOCOL;
    return relay_get_stream(k, up, count, head, sizeof head);
}

/* After an upstream write failed mid-upload: storage answers a refused
 * upload with an error before closing, so pass that error on when it can
 * still be read.  The client connection closes either way (its stream is
 * unread). */
static void relay_late_error(cn__gw_call_t *k, cn__gw_up_t *up)
{
    uint8_t head[CN_SCRIBE_HDR_LEN];
    cn_scribe_hdr_t h;
    if (cn__gw_up_read(up, head, sizeof head) < 0 || cn_scribe_hdr_parse(head, &h) < 0 ||
        h.opcode != k->hdr.opcode || !(h.flags & CN_SCRIBE_FLAG_ERROR) || h.length > 8192)
        return;
    uint8_t body[8192];
    if (cn__gw_up_read(up, body, h.length) < 0)
        return;
    struct iovec iov[2] = { { head, sizeof head }, { body, h.length } };
    cn_conn_writev(k->c, iov, h.length ? 2 : 1, cn_conn_deadline_for(k->c, h.length));
}

/* Protocol 4's upload admission (docs/protocol/scribe.md 15.5) through the
 * gateway: the forwarded put_objects is admitted or refused by its owning
 * storage server, for this user, and the gateway admits the client's
 * stream only after storage has (its own admission is storage's, passed
 * on).  *refused when storage's refusal was passed on instead: no stream
 * follows, both connections stay usable. */
static cn_err_t relay_admission(cn__gw_call_t *k, cn__gw_up_t *up, bool *refused)
{
    uint8_t head[CN_SCRIBE_HDR_LEN], body[8192];
    cn_scribe_hdr_t h;
    *refused = false;
    CN_TRY(cn__gw_up_read(up, head, sizeof head));
    if (cn_scribe_hdr_parse(head, &h) < 0 || h.opcode != k->hdr.opcode ||
        h.request_id != k->hdr.request_id || (h.flags & ~CN_SCRIBE_FLAG_ERROR) ||
        h.length > sizeof body || (!(h.flags & CN_SCRIBE_FLAG_ERROR) && h.length))
        return CN_E_PROTOCOL;
    CN_TRY(cn__gw_up_read(up, body, h.length));
    *refused = (h.flags & CN_SCRIBE_FLAG_ERROR) != 0;
    struct iovec iov[2] = { { head, sizeof head }, { body, h.length } };
    return cn_conn_writev(k->c, iov, h.length ? 2 : 1, cn_conn_deadline_for(k->c, h.length));
}

/* authorize_upload (27) for q's repository on up, the user's own upstream
 * session.  *refused when storage refused: its answer was passed to the
 * client as the put_objects' (the return is that write's).  Else
 * CN_E_PROTOCOL for a reply that is not 27's, or the transport's error. */
static cn_err_t ask_authorize_upload(cn__gw_call_t *k, cn__gw_up_t *up,
                                     const cn_scribe_put_req_t *q, bool *refused)
{
    cn_buf_t req = { 0 }, reply = { 0 };
    cn_scribe_hdr_t h;
    cn_err_t e = cn_scribe_enc_repo_id_req(&req, k->gc->codec, &q->repo);
    if (e >= 0)
        e = cn__gw_up_call(up, CN_SCRIBE_OP_AUTHORIZE_UPLOAD, k->hdr.request_id, &req, 8192, &h,
                           &reply);
    if (e >= 0 && (h.flags & CN_SCRIBE_FLAG_ERROR)) {
        *refused = true;
        e = cn__gw_relay_error(k, &reply);
    } else if (e >= 0 && cn_scribe_dec_empty_resp(reply.data, reply.len, k->gc->codec) < 0) {
        e = CN_E_PROTOCOL;
    }
    cn_buf_free(&req);
    cn_buf_free(&reply);
    return e;
}

/* Protocol 4, 27 as its own step (docs/protocol/scribe-gateway.md, "Upload
 * admission"): before the gateway grants a client's upload admission, the
 * owning server answers authorize_upload for this user on the connection
 * the put_objects will take (*up, borrowed as cn__gw_up_for), so an upload
 * storage would refuse never reaches it.  *refused: storage's refusal was
 * the client's answer (*up NULL; no stream follows).  Nothing is kept: 27
 * grants no lease and storage repeats admission on the put_objects.  A
 * broken exchange has sent nothing of the upload, so it is tried once
 * more on a new session (a kept one may have been closed under it). */
static cn_err_t preflight_upload(cn__gw_call_t *k, size_t server, const cn_scribe_put_req_t *q,
                                 cn__gw_up_t **up, bool *refused)
{
    for (int attempt = 0;; attempt++) {
        CN_TRY(cn__gw_up_for(k, server, k->gc->compression, true, up));
        cn_err_t e = ask_authorize_upload(k, *up, q, refused);
        if (e >= 0 && !*refused)
            return CN_OK;
        if (*refused)
            cn__gw_up_done(k, *up);
        else
            cn__gw_up_drop(k, *up);
        *up = NULL;
        if (*refused || e == -ENOMEM || attempt == 1)
            return e;
    }
}

cn_err_t cn__gw_forward(cn__gw_call_t *k, size_t server)
{
    bool v4 = k->gc->g->cfg.tls, refused = false;
    bool put = k->hdr.opcode == CN_SCRIBE_OP_PUT_OBJECTS;
    cn_scribe_put_req_t q;
    if (put && cn_scribe_dec_put_req(k->payload, k->len, k->gc->codec, &q) < 0) {
        cn__gw_fail(k, CN_SCRIBE_E_MALFORMED, "malformed put_objects request");
        /* protocol 2: its stream cannot be told apart from the next frame;
         * 4: no stream follows an unadmitted request */
        return v4 ? CN_OK : CN_E_CLOSED;
    }
    cn__gw_up_t *up = NULL;
    cn_err_t e = put && v4 ? preflight_upload(k, server, &q, &up, &refused)
                           : cn__gw_up_for(k, server, k->gc->compression, true, &up);
    if (refused) /* answered with storage's refusal: both connections stay */
        return e;
    if (e < 0) {
        cn_err_t w = cn__gw_unavailable(k, server);
        return put && !v4 ? CN_E_CLOSED : w;
    }
    /* the header and the payload in one write when they fit the relay
     * buffer (free until the streams below) */
    uint8_t *io = k->gc->io;
    cn_scribe_hdr_encode(io, &k->hdr);
    bool up_failed = false, joined = k->len <= CN__GW_IO - CN_SCRIBE_HDR_LEN;
    if (joined && k->len)
        memcpy(io + CN_SCRIBE_HDR_LEN, k->payload, k->len);
    e = cn__gw_up_write(up, io, CN_SCRIBE_HDR_LEN + (joined ? k->len : 0));
    if (e >= 0 && !joined)
        e = cn__gw_up_write(up, k->payload, k->len);
    up_failed = e < 0;
    if (e >= 0 && put && v4)
        e = relay_admission(k, up, &refused);
    if (e >= 0 && put && !refused)
        e = relay_put_stream(k, up, &q, &up_failed);
    if (e >= 0 && !refused)
        e = relay_reply(k, up);
    else if (up_failed && put)
        relay_late_error(k, up);
    if (e < 0) {
        cn_warn("gateway", "storage server %zu: %s %s; closing the client connection", server + 1,
                cn_scribe_op_name(k->hdr.opcode), cn_strerror(e));
        cn__gw_up_drop(k, up);
        return e == CN_E_PROTOCOL || up_failed ? CN_E_CLOSED : e;
    }
    cn__gw_up_done(k, up);
    return CN_OK;
}

/* ---- who owns a repository ---------------------------------------------------------------- */
/* Sends the upstream error payload (same codec) to the client as is. */
cn_err_t cn__gw_relay_error(cn__gw_call_t *k, const cn_buf_t *payload)
{
    cn_scribe_error_t er;
    if (cn_scribe_dec_error(payload->data, payload->len, k->gc->codec, &er) < 0)
        return cn__gw_fail(k, CN_SCRIBE_E_INTERNAL, "a storage server sent a malformed error");
    return cn__gw_fail(k, er.code, "%.*s", (int)(er.message.len > 400 ? 400 : er.message.len),
                       (const char *)er.message.p);
}

static uint16_t error_code(const cn_buf_t *payload, cn_scribe_codec_t codec)
{
    cn_scribe_error_t er;
    return cn_scribe_dec_error(payload->data, payload->len, codec, &er) < 0 ? 0 : er.code;
}

/* Asks every server (of namespace ns, or all when ns is NULL) for a
 * repository by the request `req` (a repo_info): the first that has it
 * owns it, and its placement is recorded (adopted: created on storage
 * directly, or a placement lost).  *server, and the reply in *reply.
 * CN_E_NOT_FOUND when none has it; CN_E_UNAVAILABLE when none has it and
 * one did not answer (*down). */
static cn_err_t adopt(cn__gw_call_t *k, const char *ns, const cn_buf_t *req, size_t *server,
                      cn_buf_t *reply, size_t *down)
{
    cn__gw_t *g = k->gc->g;
    bool missing = false;
    for (size_t i = 0; i < g->cfg.n; i++) {
        if (ns && strcmp(g->cfg.servers[i].ns, ns))
            continue;
        cn_scribe_hdr_t h;
        cn_err_t e = cn__gw_ask_for(k, i, CN_SCRIBE_OP_REPO_INFO, req, 1u << 16, &h, reply);
        if (e < 0) {
            missing = true;
            *down = i;
            continue;
        }
        if (h.flags & CN_SCRIBE_FLAG_ERROR)
            continue;
        cn_scribe_repo_info_t ri;
        if (cn_scribe_dec_repo_info_resp(reply->data, reply->len, k->gc->codec, &ri) < 0)
            continue;
        cn__gw_place_confirm(g, g->cfg.servers[i].ns, (const char *)ri.name.p, ri.name.len, i,
                             ri.id.b);
        *server = i;
        return CN_OK;
    }
    return missing ? CN_E_UNAVAILABLE : CN_E_NOT_FOUND;
}

cn_err_t cn__gw_owner_by_id(cn__gw_call_t *k, const uint8_t id[16], size_t *server, bool *answered)
{
    cn__gw_place_t p;
    *answered = false;
    cn_err_t e = cn__gw_place_by_id(k->gc->g, id, &p);
    if (e >= 0) {
        *server = p.server;
        return CN_OK;
    }
    *answered = true;
    if (e == CN_E_CONFLICT)
        return cn__gw_fail(k, CN_SCRIBE_E_STORAGE_FAILURE,
                           "the repository is placed on a storage server this gateway no longer "
                           "configures");
    if (e != CN_E_NOT_FOUND)
        return cn__gw_fail(k, CN_SCRIBE_E_STORAGE_FAILURE, "the placement map failed: %s",
                           cn_strerror(e));
    cn_buf_t req = { 0 }, reply = { 0 };
    cn_scribe_repo_info_req_t q = { .by = CN_SCRIBE_REPO_BY_ID };
    memcpy(q.id.b, id, 16);
    size_t down = 0;
    e = cn_scribe_enc_repo_info_req(&req, k->gc->codec, &q);
    if (e >= 0)
        e = adopt(k, NULL, &req, server, &reply, &down);
    cn_buf_free(&req);
    cn_buf_free(&reply);
    if (e >= 0) {
        *answered = false;
        return CN_OK;
    }
    if (e == CN_E_UNAVAILABLE)
        return cn__gw_unavailable(k, down);
    return cn__gw_fail(k, CN_SCRIBE_E_REPOSITORY_NOT_FOUND, "repository not found");
}

/* Answers a Repo info reply from storage with its name in wire form. */
static cn_err_t reply_info(cn__gw_call_t *k, size_t server, const cn_buf_t *reply,
                           cn_scribe_repo_info_t *ri)
{
    cn__gw_t *g = k->gc->g;
    if (cn_scribe_dec_repo_info_resp(reply->data, reply->len, k->gc->codec, ri) < 0)
        return cn__gw_fail(k, CN_SCRIBE_E_INTERNAL, "a storage server sent a malformed Repo info");
    char wire[CN_SCRIBE_MAX_REPO_NAME + 2];
    size_t n = cn__gw_wire_name(g, cn__gw_server_ns(g, server), (const char *)ri->name.p,
                                ri->name.len, wire, sizeof wire);
    cn_scribe_repo_info_t out = *ri;
    out.name.p = (const uint8_t *)wire;
    out.name.len = n;
    cn_buf_reset(&k->gc->out);
    CN_TRY(cn_scribe_enc_repo_info_resp(&k->gc->out, k->gc->codec, &out));
    return cn__gw_reply(k);
}

/* ---- repo_info (4) -------------------------------------------------------------------------- */
static cn_err_t info_by_name(cn__gw_call_t *k, const cn_scribe_repo_info_req_t *q)
{
    cn__gw_t *g = k->gc->g;
    const char *ns, *sname;
    size_t slen, server = 0, down = 0;
    char msg[256];
    if (cn_gw_name_resolve(&g->cfg, (const char *)q->name.p, q->name.len, &ns, &sname, &slen, msg,
                           sizeof msg) < 0)
        return cn__gw_fail(k, CN_SCRIBE_E_MALFORMED, "%s", msg);
    cn_scribe_repo_info_req_t sq = { .by = CN_SCRIBE_REPO_BY_NAME,
                                     .name = { (const uint8_t *)sname, slen } };
    cn_buf_t req = { 0 }, reply = { 0 };
    cn_scribe_hdr_t h = { 0 };
    cn__gw_place_t p;
    cn_err_t e = cn_scribe_enc_repo_info_req(&req, k->gc->codec, &sq);
    cn_err_t pe = e < 0 ? e : cn__gw_place_by_name(g, ns, sname, slen, &p);
    if (e < 0) {
    } else if (pe >= 0) {
        server = p.server;
        e = cn__gw_ask_for(k, server, CN_SCRIBE_OP_REPO_INFO, &req, 1u << 16, &h, &reply);
        e = e < 0                              ? cn__gw_unavailable(k, server)
            : (h.flags & CN_SCRIBE_FLAG_ERROR) ? cn__gw_relay_error(k, &reply)
                                               : CN_E_AGAIN;
    } else {
        e = adopt(k, ns, &req, &server, &reply, &down);
        e = e == CN_E_UNAVAILABLE ? cn__gw_unavailable(k, down)
            : e < 0 ? cn__gw_fail(k, CN_SCRIBE_E_REPOSITORY_NOT_FOUND, "repository not found")
                    : CN_E_AGAIN;
    }
    if (e == CN_E_AGAIN) {
        cn_scribe_repo_info_t ri;
        e = reply_info(k, server, &reply, &ri);
        if (pe >= 0 && (!p.confirmed || memcmp(p.id, ri.id.b, 16)))
            cn__gw_place_confirm(g, ns, sname, slen, server, ri.id.b); /* reconciled */
    }
    cn_buf_free(&req);
    cn_buf_free(&reply);
    return e;
}

cn_err_t cn__gw_op_info(cn__gw_call_t *k)
{
    cn_scribe_repo_info_req_t q;
    if (cn_scribe_dec_repo_info_req(k->payload, k->len, k->gc->codec, &q) < 0)
        return cn__gw_fail(k, CN_SCRIBE_E_MALFORMED, "malformed repo_info request");
    if (q.by == CN_SCRIBE_REPO_BY_NAME)
        return info_by_name(k, &q);
    size_t server = 0;
    bool answered = false;
    cn_err_t e = cn__gw_owner_by_id(k, q.id.b, &server, &answered);
    if (e < 0 || answered)
        return e;
    cn_buf_t reply = { 0 };
    cn_scribe_hdr_t h;
    e = cn__gw_ask_for(k, server, CN_SCRIBE_OP_REPO_INFO,
                       &(cn_buf_t){ .data = (uint8_t *)k->payload, .len = k->len }, 1u << 16, &h,
                       &reply);
    if (e < 0)
        e = cn__gw_unavailable(k, server);
    else if (h.flags & CN_SCRIBE_FLAG_ERROR)
        e = cn__gw_relay_error(k, &reply);
    else {
        cn_scribe_repo_info_t ri;
        e = reply_info(k, server, &reply, &ri);
    }
    cn_buf_free(&reply);
    return e;
}

/* ---- repo_create (3) ------------------------------------------------------------------------ */
#ifndef NDEBUG
/* Test builds only: CAIRN_TEST_KILL_AFTER_GW_PLACEMENT=1 kills the gateway
 * once a new placement is durable and before the repository is created, so
 * that the integration test can check the reconciliation. */
static void test_kill_point(const cn__gw_t *g)
{
    if (g->kill_after_placement)
        raise(SIGKILL);
}
#else
static void test_kill_point(const cn__gw_t *g)
{
    (void)g;
}
#endif

/* 28 AuthorizeRepoCreate on the picked server, before anything is
 * persisted: 0 when storage permits it (or does not offer the preflight
 * yet: it authorizes the create itself), else the answer was sent
 * (*answered). */
static cn_err_t preflight(cn__gw_call_t *k, size_t server, bool *answered)
{
    cn__gw_t *g = k->gc->g;
    cn_buf_t req = { 0 }, reply = { 0 };
    cn_scribe_hdr_t h;
    /* plaintext: none; protocol 4: the label the name resolved to, which
     * storage checks is the one it serves */
    cn_scribe_authorize_create_req_t q = { .has_namespace = g->cfg.tls };
    if (g->cfg.tls)
        q.ns = cn_scribe_cstr(g->cfg.servers[server].ns);
    cn_err_t e = cn_scribe_enc_authorize_create_req(&req, k->gc->codec, &q);
    if (e >= 0)
        e = cn__gw_ask_for(k, server, CN_SCRIBE_OP_AUTHORIZE_REPO_CREATE, &req, 1u << 16, &h,
                           &reply);
    *answered = true;
    if (e < 0)
        e = cn__gw_unavailable(k, server);
    else if ((h.flags & CN_SCRIBE_FLAG_ERROR) &&
             error_code(&reply, k->gc->codec) != CN_SCRIBE_E_UNSUPPORTED_OPERATION)
        e = cn__gw_relay_error(k, &reply);
    else if (!(h.flags & CN_SCRIBE_FLAG_ERROR) &&
             cn_scribe_dec_empty_resp(reply.data, reply.len, k->gc->codec) < 0)
        e = cn__gw_fail(k, CN_SCRIBE_E_INTERNAL, "a storage server answered 28 with a payload");
    else
        *answered = false;
    cn_buf_free(&req);
    cn_buf_free(&reply);
    return e;
}

/* Where the repository goes: its existing placement (pending after a
 * crash, or confirmed: storage then answers repository_exists), else a
 * picked server, preflighted, placed durably.  *fresh when this call made
 * the placement. */
static cn_err_t place_new(cn__gw_call_t *k, const char *ns, const char *sname, size_t slen,
                          size_t *server, bool *fresh, bool *answered)
{
    cn__gw_t *g = k->gc->g;
    cn__gw_place_t p;
    *fresh = false;
    *answered = false;
    cn_err_t e = cn__gw_place_by_name(g, ns, sname, slen, &p);
    if (e >= 0) {
        *server = p.server;
        return CN_OK;
    }
    *answered = true;
    if (e != CN_E_NOT_FOUND)
        return cn__gw_fail(k, CN_SCRIBE_E_STORAGE_FAILURE, "the placement map failed: %s",
                           cn_strerror(e));
    if (cn__gw_pick(g, ns, k->gc->codec, server) < 0)
        return cn__gw_fail(k, CN_SCRIBE_E_STORAGE_FAILURE,
                           "no storage server of namespace '%s' answers; retry later", ns);
    CN_TRY(preflight(k, *server, answered));
    if (*answered)
        return CN_OK;
    e = cn__gw_place_reserve(g, ns, sname, slen, *server, &p);
    if (e < 0)
        return cn__gw_fail(k, CN_SCRIBE_E_STORAGE_FAILURE, "the placement map failed: %s",
                           cn_strerror(e));
    *fresh = p.server == *server && !p.confirmed;
    *server = p.server; /* a concurrent create of the same name placed it first */
    test_kill_point(g);
    *answered = false;
    return CN_OK;
}

/* The create's answer from storage, passed on, the placement settled. */
static cn_err_t create_answer(cn__gw_call_t *k, const char *ns, const char *sname, size_t slen,
                              size_t server, bool fresh, const cn_scribe_hdr_t *h,
                              const cn_buf_t *reply, const cn_buf_t *info_req)
{
    cn__gw_t *g = k->gc->g;
    if (!(h->flags & CN_SCRIBE_FLAG_ERROR)) {
        cn_scribe_repo_info_t ri;
        cn_err_t e = reply_info(k, server, reply, &ri);
        if (cn__gw_place_confirm(g, ns, sname, slen, server, ri.id.b) < 0)
            cn_warn("gateway", "a placement stays pending: it is settled on next use");
        return e;
    }
    uint16_t code = error_code(reply, k->gc->codec);
    if (code == CN_SCRIBE_E_REPOSITORY_EXISTS) {
        /* It exists there: record its id (an adoption, or the crash case). */
        cn_buf_t r2 = { 0 };
        cn_scribe_hdr_t h2;
        cn_scribe_repo_info_t ri;
        if (cn__gw_ask_for(k, server, CN_SCRIBE_OP_REPO_INFO, info_req, 1u << 16, &h2, &r2) >= 0 &&
            !(h2.flags & CN_SCRIBE_FLAG_ERROR) &&
            cn_scribe_dec_repo_info_resp(r2.data, r2.len, k->gc->codec, &ri) >= 0)
            cn__gw_place_confirm(g, ns, sname, slen, server, ri.id.b);
        cn_buf_free(&r2);
    } else if (fresh) {
        cn__gw_place_forget(g, ns, sname, slen); /* refused: nothing was created */
    }
    return cn__gw_relay_error(k, reply);
}

cn_err_t cn__gw_op_create(cn__gw_call_t *k)
{
    cn__gw_t *g = k->gc->g;
    cn_scribe_repo_create_req_t q;
    const char *ns, *sname;
    size_t slen, server = 0;
    char msg[256];
    if (cn_scribe_dec_repo_create_req(k->payload, k->len, k->gc->codec, &q) < 0)
        return cn__gw_fail(k, CN_SCRIBE_E_MALFORMED, "malformed repo_create request");
    if (cn_gw_name_resolve(&g->cfg, (const char *)q.name.p, q.name.len, &ns, &sname, &slen, msg,
                           sizeof msg) < 0)
        return cn__gw_fail(k, CN_SCRIBE_E_MALFORMED, "%s", msg);
    bool fresh = false, answered = false;
    cn_err_t e = place_new(k, ns, sname, slen, &server, &fresh, &answered);
    if (e < 0 || answered)
        return e;
    cn_scribe_repo_create_req_t sq = { { (const uint8_t *)sname, slen }, q.compression };
    cn_scribe_repo_info_req_t iq = { .by = CN_SCRIBE_REPO_BY_NAME, .name = sq.name };
    cn_buf_t req = { 0 }, ireq = { 0 }, reply = { 0 };
    cn__gw_up_t *up = NULL;
    cn_scribe_hdr_t h;
    e = cn_scribe_enc_repo_create_req(&req, k->gc->codec, &sq);
    if (e >= 0)
        e = cn_scribe_enc_repo_info_req(&ireq, k->gc->codec, &iq);
    if (e >= 0 && cn__gw_up_for(k, server, 0, false, &up) < 0)
        e = cn__gw_unavailable(k, server); /* nothing sent: a definitive answer */
    else if (e >= 0 && (e = cn__gw_up_call(up, CN_SCRIBE_OP_REPO_CREATE, k->hdr.request_id, &req,
                                           1u << 16, &h, &reply)) < 0) {
        cn_warn("gateway", "storage server %zu: repo_create %s; closing the client connection",
                server + 1, cn_strerror(e));
        cn__gw_up_drop(k, up); /* the outcome is unknown: never answer it */
        e = CN_E_CLOSED;
    } else if (e >= 0) {
        cn__gw_up_done(k, up);
        e = create_answer(k, ns, sname, slen, server, fresh, &h, &reply, &ireq);
    }
    cn_buf_free(&req);
    cn_buf_free(&ireq);
    cn_buf_free(&reply);
    return e;
}
