/* `cairn repo discover [URL] [--endpoint HOST:PORT]` (docs/cli.md): what the
 * Scribe endpoint at URL (`HOST:PORT`, `scribe://HOST[:PORT]` or
 * `scribes://HOST:PORT`, a trailing '/' allowed; else --endpoint,
 * CAIRN_SCRIBE_ENDPOINT, 127.0.0.1:7447) reports: its role, whether it runs
 * native authentication, and its storage servers per namespace in the order
 * the configuration first names each ("-" for the empty label of plaintext
 * servers).  Parsing and printing only: the request is libcairn's
 * (cn_scribe_client_discover); discover reports configuration, never
 * health, so a stopped server behind a gateway is still counted. */
#include "cmd.h"
#include "repo_int.h"

#include "cairn/scribe_client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] = "usage: cairn repo discover [URL] [--endpoint HOST:PORT]\n"
                            "URL: HOST:PORT, scribe://HOST[:PORT] or scribes://HOST:PORT\n";

/* The endpoint a URL names, into ep (cap bytes): the client's spelling,
 * "scribes://" kept for TLS.  EXIT_OK or EXIT_USAGE. */
static int url_endpoint(const char *url, char *ep, size_t cap)
{
    const char *rest = url;
    size_t pre = 0;
    if (!strncmp(url, "scribes://", 10)) {
        rest = url + 10;
        pre = 10;
    } else if (!strncmp(url, "scribe://", 9)) {
        rest = url + 9;
    } else if (strstr(url, "://") || !strchr(url, ':')) {
        return EXIT_USAGE; /* an unknown scheme, or a bare word (a name, not an endpoint) */
    }
    size_t hl = strcspn(rest, "/");
    if (!hl || (rest[hl] == '/' && rest[hl + 1]) || pre + hl >= cap)
        return EXIT_USAGE;
    memcpy(ep, url, pre);
    memcpy(ep + pre, rest, hl);
    ep[pre + hl] = 0;
    return EXIT_OK;
}

static void print_discover(const cn_scribe_client_discover_t *d)
{
    printf("role %s\nauthentication %s\nservers %u\n", d->role == 2 ? "gateway" : "storage",
           d->authentication ? "yes" : "no", d->count);
    for (uint32_t i = 0; i < d->count; i++) {
        bool seen = false;
        for (uint32_t j = 0; j < i && !seen; j++)
            seen = !strcmp(d->labels[i], d->labels[j]);
        if (seen)
            continue;
        unsigned n = 0;
        for (uint32_t j = i; j < d->count; j++)
            n += !strcmp(d->labels[i], d->labels[j]);
        printf("namespace %s\tservers %u\n", d->labels[i][0] ? d->labels[i] : "-", n);
    }
}

static int exit_for(cn_err_t e)
{
    switch (e) {
    case CN_E_DENIED: return EXIT_DENIED;
    case CN_E_INVALID: return EXIT_USAGE;
    case CN_E_CLOSED:
    case CN_E_TIMEOUT:
    case CN_E_PROTOCOL: return EXIT_NETWORK;
    default: return e < 0 && e > -4096 ? EXIT_NETWORK : EXIT_SERVER;
    }
}

int cn__repo_discover(int argc, char **argv)
{
    const char *endpoint = getenv("CAIRN_SCRIBE_ENDPOINT"), *url = NULL;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--endpoint") && i + 1 < argc)
            endpoint = argv[++i];
        else if (argv[i][0] != '-' && !url)
            url = argv[i];
        else {
            fputs(usage, stderr);
            return EXIT_USAGE;
        }
    }
    char ep[300];
    if (url && url_endpoint(url, ep, sizeof ep) != EXIT_OK) {
        fprintf(stderr, "cairn repo discover: %s: not an endpoint\n%s", url, usage);
        return EXIT_USAGE;
    }
    cn_scribe_client_cfg_t cfg = { url ? ep : endpoint, 1, false, 0, 0, -1, 0 };
    cn_scribe_client_t *cl = NULL;
    cn_scribe_cerr_t err = { 0 };
    cn_scribe_client_discover_t d;
    cn_err_t e = cn_scribe_client_new(&cfg, &cl, &err);
    if (e >= 0)
        e = cn_scribe_client_discover(cl, &d, &err);
    cn_scribe_client_free(cl);
    if (e < 0) {
        fprintf(stderr, "cairn repo discover: %s\n", err.message[0] ? err.message : cn_strerror(e));
        return exit_for(e);
    }
    print_discover(&d);
    return EXIT_OK;
}
