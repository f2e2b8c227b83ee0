/* Listener addresses: "host:port" and "[v6]:port" with numeric hosts (no
 * name resolution, so a flag can be validated before anything starts). */
#include "net/net_int.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cn_err_t cn_net_addr_parse(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
    char host[INET6_ADDRSTRLEN + 1];
    const char *port;
    if (!s || !*s)
        return CN_E_INVALID;
    memset(ss, 0, sizeof *ss);
    if (s[0] == '[') {
        const char *end = strchr(s, ']');
        if (!end || end[1] != ':' || (size_t)(end - s - 1) >= sizeof host)
            return CN_E_INVALID;
        memcpy(host, s + 1, (size_t)(end - s - 1));
        host[end - s - 1] = 0;
        port = end + 2;
    } else {
        const char *colon = strchr(s, ':');
        if (!colon || strchr(colon + 1, ':') || (size_t)(colon - s) >= sizeof host)
            return CN_E_INVALID;
        memcpy(host, s, (size_t)(colon - s));
        host[colon - s] = 0;
        port = colon + 1;
    }
    /* port: 1..5 decimal digits, <= 65535 */
    size_t pl = strlen(port);
    if (pl == 0 || pl > 5 || strspn(port, "0123456789") != pl)
        return CN_E_INVALID;
    long p = strtol(port, NULL, 10);
    if (p > 65535)
        return CN_E_INVALID;
    if (strcmp(host, "localhost") == 0)
        strcpy(host, "127.0.0.1");
    struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
    if (s[0] != '[' && inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)p);
        *len = sizeof *v4;
        return CN_OK;
    }
    if (s[0] == '[' && inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)p);
        *len = sizeof *v6;
        return CN_OK;
    }
    return CN_E_INVALID;
}

void cn_net_addr_format(const struct sockaddr *sa, char out[CN_NET_ADDR_LEN])
{
    char h[INET6_ADDRSTRLEN] = "?";
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *v4 = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &v4->sin_addr, h, sizeof h);
        snprintf(out, CN_NET_ADDR_LEN, "%s:%u", h, ntohs(v4->sin_port));
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &v6->sin6_addr, h, sizeof h);
        snprintf(out, CN_NET_ADDR_LEN, "[%s]:%u", h, ntohs(v6->sin6_port));
    } else {
        snprintf(out, CN_NET_ADDR_LEN, "?");
    }
}

bool cn_net_addr_is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_LOOPBACK(a))
            return true;
        return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
    }
    return false;
}
