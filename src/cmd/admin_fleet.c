/* `cairn admin [--meta URL | --data DIR] fleet status|nodes`: the fleet's node
 * registry (fleet_node.c) as one line per node: id, state (up, stopped, or
 * lost: no heartbeat for three of its intervals), advertised URL, version,
 * start time and the age of the last heartbeat; `status` then adds who holds
 * each job lease (PostgreSQL only), one `lease:JOB` line each.  `--json`:
 * `nodes` prints one JSON array, `status` an object of `nodes` and `leases`.
 * `fleet import` lives in admin_import.c.  Reads only; never changes a row. */
#include "admin_open.h"
#include "cmd.h"
#include "fleet_node.h"

#include <stdio.h>
#include <string.h>

#include "cairn/util.h"

static const char fleet_usage[] =
    "usage: cairn admin [--meta URL | --data DIR] fleet status|nodes [--json]\n"
    "       cairn admin --meta URL [--identity-key FILE] fleet import --from DATA\n"
    "             [--blob-store s3://BUCKET/PREFIX --blob-endpoint URL [--blob-region R]\n"
    "              [--blob-credentials FILE] [--blob-virtual-host] | --blob-dir DIR]\n";

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

/* s as a JSON string, or null when empty. */
static void json_str_or_null(const char *s)
{
    if (s[0])
        json_str(s);
    else
        fputs("null", stdout);
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
    json_str_or_null(ni->advertise);
    fputs(",\"console\":", stdout);
    json_str_or_null(ni->console);
    fputs(",\"version\":", stdout);
    json_str(ni->version);
    printf(",\"started\":\"%s\",\"heartbeat_age_ms\":%lld,\"heartbeat_every_ms\":%lld}", started,
           age, (long long)ni->every_ms);
    return 0;
}

/* The advisory job leases cairnd's maintenance thread asks for
 * (src/cmd/services.c, "jobs"). */
static const char *const lease_jobs[] = { "blob-sweep", "upload-expiry", "usage-fold" };

static cn_err_t print_lease(void *arg, const cn_meta_lease_info_t *li)
{
    status_t *st = arg;
    const char *node = li->holder;
    size_t plen = strlen(CN_META_WATCH_APP "/");
    if (node && !strncmp(node, CN_META_WATCH_APP "/", plen))
        node = node + plen; /* a labelled watcher: the node's id */
    char until[CN_RFC3339_LEN] = "";
    if (li->expires_ms)
        cn_rfc3339(li->expires_ms, until);
    if (!st->json) {
        printf("lease:%s\t%s\t", li->job, node ? node : "-");
        if (li->pid)
            printf("pid %lld\n", (long long)li->pid);
        else
            printf("%s%s\n", until[0] ? "until " : "-", until);
        return 0;
    }
    printf("%s{\"job\":", st->n++ ? "," : "");
    json_str(li->job);
    fputs(",\"node\":", stdout);
    if (node)
        json_str(node);
    else
        fputs("null", stdout);
    if (li->pid)
        printf(",\"pid\":%lld", (long long)li->pid);
    if (until[0])
        printf(",\"until\":\"%s\"", until);
    putchar('}');
    return 0;
}

/* The registry, and for `status` the leases (none on SQLite, where one
 * process runs every job). */
static cn_err_t list_all(cn_meta_t *meta, status_t *st, bool leases)
{
    if (st->json && leases)
        fputs("{\"nodes\":", stdout);
    if (st->json)
        putchar('[');
    cn_err_t e = cn_node_list(meta, print_node, st);
    if (st->json)
        putchar(']');
    if (e < 0 || !leases)
        return e;
    st->n = 0;
    if (st->json)
        fputs(",\"leases\":[", stdout);
    if (!strcmp(cn_meta_engine(meta), "postgres"))
        e = cn_meta_lease_holders(meta, lease_jobs, sizeof lease_jobs / sizeof lease_jobs[0],
                                  print_lease, st);
    if (st->json)
        fputs("]}", stdout);
    return e;
}

int cn_cmd_admin_fleet(const char *data, int argc, char **argv)
{
    if (argc >= 1 && !strcmp(argv[0], "import"))
        return cn__admin_fleet_import(data, argc - 1, argv + 1);
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
    if (e >= 0)
        e = list_all(meta, &st, !strcmp(argv[0], "status"));
    if (e >= 0 && json)
        putchar('\n');
    cn_meta_close(meta);
    if (e < 0) {
        fprintf(stderr, "cairn admin: fleet status: %s\n", cn_strerror(e));
        return EXIT_SERVER;
    }
    return fflush(stdout) == 0 ? EXIT_OK : EXIT_SERVER;
}
