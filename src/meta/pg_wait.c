/* Bounded waits on a PostgreSQL server: see pg_wait.h. */
#include "pg_wait.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <sys/socket.h>

#include "cairn/util.h"

/* Shuts pg's socket down and reads its end: libpq marks the connection
 * bad, fails the query in flight, and the next PQreset opens a new one. */
static void cut(PGconn *pg, unsigned ms)
{
    int fd = PQsocket(pg);
    cn_warn("meta", "postgres: no answer within %u ms; the connection is closed", ms);
    if (fd >= 0)
        (void)shutdown(fd, SHUT_RDWR);
    (void)PQconsumeInput(pg);
}

/* Waits until PQgetResult(pg) would not block, or cuts pg after ms without
 * a byte of input.  A read error is left for PQgetResult to report. */
static void await_input(PGconn *pg, unsigned ms)
{
    int64_t due = cn_mono_ms() + ms;
    while (PQisBusy(pg)) {
        int fd = PQsocket(pg);
        int64_t left = due - cn_mono_ms();
        if (fd < 0)
            return;
        if (left <= 0) {
            cut(pg, ms);
            return;
        }
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int n = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0) {
            cut(pg, ms);
            return;
        }
        if (n < 0 || !PQconsumeInput(pg))
            return;
        due = cn_mono_ms() + ms; /* it answers: the clock starts again */
    }
}

PGresult *cn__pg_result(PGconn *pg, unsigned ms)
{
    if (ms)
        await_input(pg, ms);
    return PQgetResult(pg);
}

PGresult *cn__pg_collect(PGconn *pg, int sent, unsigned ms)
{
    PGresult *last = NULL, *r;
    if (!sent)
        return NULL;
    while ((r = cn__pg_result(pg, ms))) {
        if (last && PQresultStatus(last) == PGRES_FATAL_ERROR) {
            PQclear(r);
            continue;
        }
        PQclear(last);
        last = r;
    }
    return last;
}

PGresult *cn__pg_exec(PGconn *pg, const char *sql, unsigned ms)
{
    if (!ms)
        return PQexec(pg, sql);
    PGresult *r;
    while ((r = cn__pg_result(pg, ms))) /* what an earlier query left, as PQexec does */
        PQclear(r);
    return cn__pg_collect(pg, PQsendQuery(pg, sql), ms);
}
