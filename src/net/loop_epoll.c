/* The epoll back end of the event loop, behind the cn__poll_* functions (as
 * redis keeps ae.c over ae_epoll.c).  Level-triggered: the loop reads what it
 * wants and is told again when more is there; edge-triggered (CN__EV_EDGE)
 * only for a hello the loop waits for without reading it, told as each part
 * arrives. */
#include "net/net_int.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct cn__poll {
    int epfd;
    int max;
    struct epoll_event *evs;
};

cn_err_t cn__poll_create(int max_events, cn__poll_t **out)
{
    cn__poll_t *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    p->max = max_events > 0 ? max_events : 64;
    p->evs = calloc((size_t)p->max, sizeof *p->evs);
    p->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (!p->evs || p->epfd < 0) {
        cn_err_t e = p->evs ? -errno : -ENOMEM;
        cn__poll_free(p);
        return e;
    }
    *out = p;
    return CN_OK;
}

void cn__poll_free(cn__poll_t *p)
{
    if (!p)
        return;
    if (p->epfd >= 0)
        close(p->epfd);
    free(p->evs);
    free(p);
}

static uint32_t to_epoll(int mask)
{
    uint32_t ev = EPOLLRDHUP;
    if (mask & CN__EV_READ)
        ev |= EPOLLIN;
    if (mask & CN__EV_WRITE)
        ev |= EPOLLOUT;
    if (mask & CN__EV_ONESHOT)
        ev |= EPOLLONESHOT;
    if (mask & CN__EV_EDGE)
        ev |= EPOLLET;
    return ev;
}

cn_err_t cn__poll_add(cn__poll_t *p, int fd, int mask, void *ptr)
{
    struct epoll_event ev = { .events = to_epoll(mask), .data.ptr = ptr };
    return epoll_ctl(p->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : CN_OK;
}

cn_err_t cn__poll_mod(cn__poll_t *p, int fd, int mask, void *ptr)
{
    struct epoll_event ev = { .events = to_epoll(mask), .data.ptr = ptr };
    return epoll_ctl(p->epfd, EPOLL_CTL_MOD, fd, &ev) < 0 ? -errno : CN_OK;
}

void cn__poll_del(cn__poll_t *p, int fd)
{
    struct epoll_event ev = { 0 };
    (void)epoll_ctl(p->epfd, EPOLL_CTL_DEL, fd, &ev);
}

int cn__poll_wait(cn__poll_t *p, cn__poll_event_t *ev, int max, int timeout_ms)
{
    if (max > p->max)
        max = p->max;
    int n = epoll_wait(p->epfd, p->evs, max, timeout_ms);
    if (n < 0)
        return errno == EINTR ? 0 : -errno;
    for (int i = 0; i < n; i++) {
        uint32_t e = p->evs[i].events;
        ev[i].ptr = p->evs[i].data.ptr;
        ev[i].mask = 0;
        if (e & EPOLLIN)
            ev[i].mask |= CN__EV_READ;
        if (e & EPOLLOUT)
            ev[i].mask |= CN__EV_WRITE;
        if (e & (EPOLLERR | EPOLLHUP | EPOLLRDHUP))
            ev[i].mask |= CN__EV_ERROR;
    }
    return n;
}

void cn__poll_break(cn__poll_t *p)
{
    int fd = eventfd(0, EFD_CLOEXEC);
    if (fd >= 0 && fd != p->epfd) {
        (void)dup2(fd, p->epfd);
        close(fd);
    }
}
