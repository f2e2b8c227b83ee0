/* `cairn admin [--data DIR | --meta URL] identity rotate-key --new FILE
 * --old FILE [--batch N]`: re-seals every token secret under a new identity
 * key and then records the new key's check value (cn_identity_rotate_key;
 * the runbook is docs/identity.md, "Rotating the identity key").  Safe while
 * nodes serve, and safe to run again after a crash.  Never prints a key or a
 * secret; stdout carries only the final counts.
 *
 * CAIRN_ROTATE_PAUSE_AFTER=N (tests only) stops after N committed batches,
 * says "paused" on stderr and waits to be killed. */
#include "admin_open.h"
#include "cmd.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cairn/identity.h"
#include "cairn/meta.h"
#include "cairn/util.h"

static const char identity_usage[] =
    "usage: cairn admin [--data DIR | --meta URL] identity rotate-key --new FILE --old FILE\n"
    "             [--batch N]\n"
    "  --new FILE   the new identity key (the nodes' --identity-key)\n"
    "  --old FILE   the key it replaces (the nodes' --identity-key-previous)\n"
    "  --batch N    token rows per transaction (default 500)\n";

typedef struct {
    const char *new_file, *old_file;
    size_t batch;
    uint64_t batches, pause_after; /* pause_after 0: never */
} rotate_args_t;

static int usage(const char *msg)
{
    if (msg)
        fprintf(stderr, "cairn admin: %s\n", msg);
    fputs(identity_usage, stderr);
    return EXIT_USAGE;
}

static cn_err_t progress(void *arg, const cn_identity_rotation_t *r)
{
    rotate_args_t *a = arg;
    fprintf(stderr, "rotate-key: %" PRIu64 " tokens read, %" PRIu64 " re-sealed\n", r->scanned,
            r->resealed);
    if (a->pause_after && ++a->batches >= a->pause_after) {
        fputs("rotate-key: paused\n", stderr);
        for (;;)
            pause(); /* the test kills it here, mid-rotation */
    }
    return 0;
}

static int parse(int argc, char **argv, rotate_args_t *a)
{
    a->batch = 500;
    for (int i = 1; i < argc; i += 2) { /* every option takes a value */
        const char *o = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!v || !*v)
            return usage("an option needs a value");
        if (!strcmp(o, "--new"))
            a->new_file = v;
        else if (!strcmp(o, "--old"))
            a->old_file = v;
        else if (strcmp(o, "--batch"))
            return usage("unknown option");
        else if ((a->batch = strtoul(v, &end, 10)) == 0 || *end || a->batch > 100000)
            return usage("--batch wants 1 to 100000");
    }
    if (!a->new_file || !a->old_file)
        return usage("rotate-key needs --new FILE and --old FILE");
    const char *p = getenv("CAIRN_ROTATE_PAUSE_AFTER");
    a->pause_after = p && *p ? strtoull(p, NULL, 10) : 0;
    return EXIT_OK;
}

static int rotate(const char *data, const rotate_args_t *ca)
{
    rotate_args_t a = *ca;
    cn_meta_t *meta = NULL;
    cn_err_t e = cn_meta_open(cn__admin_meta_target(data), NULL, &meta);
    if (e < 0) {
        cn__admin_open_failed(data ? data : "the fleet", "metadata", e);
        return EXIT_SERVER;
    }
    cn_identity_rotation_t r = { 0 };
    e = cn_identity_rotate_key(meta, a.new_file, a.old_file, a.batch, progress, &a, &r);
    cn_meta_close(meta);
    printf("read %" PRIu64 " resealed %" PRIu64 " current %" PRIu64 " unreadable %" PRIu64 "\n",
           r.scanned, r.resealed, r.current, r.unreadable);
    if (e < 0) {
        fprintf(stderr, "cairn admin: identity rotate-key: %s%s\n", cn_strerror(e),
                e == CN_E_AUTH ? " (see above)" : "; run it again to finish");
        return EXIT_SERVER;
    }
    fprintf(stderr,
            "rotate-key: done; the new key's check value is recorded: restart the nodes"
            " with --identity-key %s and without --identity-key-previous%s\n",
            a.new_file, r.unreadable ? " (some secrets opened with neither key: see above)" : "");
    return EXIT_OK;
}

int cn_cmd_admin_identity(const char *data, int argc, char **argv)
{
    if (argc < 1 || strcmp(argv[0], "rotate-key"))
        return usage(argc < 1 ? NULL : "unknown identity command");
    if (!data && cn__admin_meta_target(NULL) == NULL)
        return usage("--data DIR or --meta URL is required");
    rotate_args_t a = { 0 };
    int rc = parse(argc, argv, &a);
    return rc != EXIT_OK ? rc : rotate(data, &a);
}
