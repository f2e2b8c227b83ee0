/* `cairn admin [--meta URL | --data DIR] fleet status|nodes`: the fleet's node
 * registry (fleet_node.c) as one line per node: id, state (up, stopped, or
 * lost: no heartbeat for three of its intervals), advertised URL, version,
 * start time and the age of the last heartbeat.  `--json` prints one JSON
 * array instead.  Reads only; never changes a row. */
#include "admin_open.h"
#include "cmd.h"
#include "fleet_node.h"

#include <stdio.h>
#include <string.h>

#include "cairn/util.h"

static const char fleet_usage[] =
    "usage: cairn admin [--meta URL | --data DIR] fleet status|nodes [--json]\n";

typedef struct {
    bool json;
    int64_t now;
    size_t n;
} status_t;

/* s as a JSON string body (ids, URLs and versions: printable ASCII expected;
 * anything else is escaped). */
static void json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

static cn_err_t print_node(void *arg, const cn_node_info_t *ni)
{
    status_t *st = arg;
    const char *state = cn_node_state(ni, st->now);
    char started[CN_RFC3339_LEN];
    cn_rfc3339(ni->started_ms, started);
    long long age = (long long)(st->now - ni->heartbeat_ms);
    if (!st->json) {
        printf("%s\t%s\t%s\t%s\t%s\t%lld ms\n", ni->id, state,
               ni->advertise[0] ? ni->advertise : "-", ni->version, started, age);
        st->n++;
        return 0;
    }
    printf("%s{\"id\":", st->n++ ? "," : "");
    json_str(ni->id);
    printf(",\"state\":\"%s\",\"advertise\":", state);
    if (ni->advertise[0])
        json_str(ni->advertise);
    else
        fputs("null", stdout);
    fputs(",\"version\":", stdout);
    json_str(ni->version);
    printf(",\"started\":\"%s\",\"heartbeat_age_ms\":%lld,\"heartbeat_every_ms\":%lld}", started,
           age, (long long)ni->every_ms);
    return 0;
}

int cn_cmd_admin_fleet(const char *data, int argc, char **argv)
{
    bool json = argc == 2 && !strcmp(argv[1], "--json");
    /* "nodes" is the other name for the same listing. */
    bool verb = argc >= 1 && (!strcmp(argv[0], "status") || !strcmp(argv[0], "nodes"));
    if (!verb || argc > 2 || (argc == 2 && !json)) {
        fputs(fleet_usage, stderr);
        return EXIT_USAGE;
    }
    const char *target = cn__admin_meta_target(data);
    if (!target) {
        fprintf(stderr, "cairn admin: fleet status needs --meta URL or --data DIR\n%s",
                fleet_usage);
        return EXIT_USAGE;
    }
    cn_meta_t *meta = NULL;
    cn_err_t e = cn_meta_open(target, NULL, &meta);
    status_t st = { json, cn_wall_ms(), 0 };
    if (e >= 0 && json)
        putchar('[');
    if (e >= 0)
        e = cn_node_list(meta, print_node, &st);
    if (e >= 0 && json)
        puts("]");
    cn_meta_close(meta);
    if (e < 0) {
        fprintf(stderr, "cairn admin: fleet status: %s\n", cn_strerror(e));
        return EXIT_SERVER;
    }
    return fflush(stdout) == 0 ? EXIT_OK : EXIT_SERVER;
}
