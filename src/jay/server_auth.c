/* The Jay handshake, server side: read the 8 fixed bytes and the credential
 * within the 10 s handshake deadline, answer with the status the spec's table
 * gives, authenticate through identity.
 *
 * Statuses are diagnoses: Malformed is decided on the first magic byte that
 * differs, VersionMismatch on the version byte alone, AuthFailed for a
 * rejected or misshapen credential, ServerBusy only before anything is read,
 * when the listener's connection table is full (cn__jay_busy): the spec's
 * ServerBusy says that no credential was examined, so nothing decided after
 * authentication may answer it, and no number of a token's connections is
 * refused (a client pool may open as many as the table holds).  A torn socket
 * (EOF, reset or the deadline before the handshake could be read) gets no
 * answer at all.  The flags byte is never looked at. */
#include "server_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void cn__jay_busy(void *actx, int fd)
{
    (void)actx;
    uint8_t w[CN_JAY_WELCOME_LEN];
    cn_jay_welcome_encode(w, CN_JAY_HS_SERVER_BUSY);
    /* Non-blocking and best effort: an empty socket buffer takes 8 bytes. */
    ssize_t n = write(fd, w, sizeof w);
    (void)n;
}

/* The 8 fixed bytes and the credential they announce; fewer when the bytes
 * at hand decide the answer (cn_adapter_t.hello_len). */
size_t cn__jay_hello_len(const uint8_t *p, size_t have)
{
    cn_jay_hello_t h;
    if (cn_jay_hello_decode(p, have, &h) == CN_OK)
        return h.consumed;
    return have < CN_JAY_HELLO_LEN ? CN_JAY_HELLO_LEN : CN_JAY_HELLO_LEN + cn_load_u16be(p + 6);
}

static cn_err_t jay_welcome(cn_conn_t *c, uint8_t status, int64_t deadline)
{
    uint8_t w[CN_JAY_WELCOME_LEN];
    cn_jay_welcome_encode(w, status);
    return cn_conn_write_all(c, w, sizeof w, deadline);
}

cn_err_t cn__jay_open(void *actx, cn_conn_t *c, void **cstate)
{
    cn__jay_srv_t *srv = actx;
    *cstate = NULL;
    int64_t deadline = cn_conn_handshake_deadline(c);
    /* 8 fixed bytes + at most 65535 of credential. */
    uint8_t *buf = malloc(CN_JAY_HELLO_LEN + 65535);
    if (!buf)
        return -ENOMEM;
    size_t have = 0;
    cn_jay_hello_t h;
    cn_err_t err;
    /* The fixed part byte by byte as it arrives, so a verdict is given as
     * soon as the bytes decide it (and never waits for bytes that will not
     * come from something that is not a Jay client). */
    for (;;) {
        err = cn_jay_hello_decode(buf, have, &h);
        if (err != CN_E_AGAIN)
            break;
        size_t want = have < CN_JAY_HELLO_LEN ? CN_JAY_HELLO_LEN - have
                                              : CN_JAY_HELLO_LEN + cn_load_u16be(buf + 6) - have;
        if (have < CN_JAY_HELLO_LEN) {
            size_t got = 0;
            err = cn_conn_read_some(c, buf + have, want, &got, deadline);
            if (err < 0)
                goto torn;
            have += got;
        } else {
            err = cn_conn_read_full(c, buf + have, want, deadline);
            if (err < 0)
                goto torn;
            have += want;
        }
    }
    if (err < 0)
        goto torn;
    if (h.verdict != CN_JAY_HS_OK) {
        jay_welcome(c, h.verdict, deadline);
        err = CN_E_AUTH;
        goto out;
    }
    cn_principal_t p;
    cn_jay_str_t id, secret;
    if (cn_jay_auth_split(h.auth, &id, &secret) < 0 ||
        (err = cn_identity_authenticate(srv->id, h.auth.p, h.auth.len, &p)) == CN_E_AUTH) {
        jay_welcome(c, CN_JAY_HS_AUTH_FAILED, deadline);
        err = CN_E_AUTH;
        goto out;
    }
    if (err < 0) {
        /* Not a diagnosis the table has (the database failed): no answer. */
        cn_warn("jay", "conn %llu: authentication failed: %s", (unsigned long long)cn_conn_id(c),
                cn_strerror(err));
        goto out;
    }
    /* Binds the token for its worker share and budget; it never refuses a
     * connection for the token's number of them.  What can fail (memory) has
     * no status in the table: logged, no answer. */
    err = cn_conn_set_principal(c, p.token_id);
    if (err < 0) {
        cn_warn("jay", "conn %llu: %s", (unsigned long long)cn_conn_id(c), cn_strerror(err));
        goto out;
    }
    cn__jay_conn_t *jc = calloc(1, sizeof *jc);
    if (!jc) {
        err = -ENOMEM;
        goto out;
    }
    jc->srv = srv;
    jc->principal = p;
    jc->tls = cn_conn_is_tls(c);
    socklen_t sl = 0;
    cn_authz_ip_from_sockaddr(cn_conn_peer_sa(c, &sl), &jc->peer);
    err = jay_welcome(c, CN_JAY_HS_OK, deadline);
    if (err < 0) {
        free(jc);
        goto out;
    }
    *cstate = jc;
    err = 0;
    goto out;
torn:
    /* EOF, reset or deadline while reading: no answer. */
    err = err < 0 ? err : CN_E_CLOSED;
out:
    explicit_bzero(buf, have); /* the secret */
    free(buf);
    return err;
}
