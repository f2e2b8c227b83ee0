/* cairn — the client command.  `cairn admin ...` manages a data directory
 * (src/cmd/admin.c); the object verbs (mb, rb, ls, put, get, cat, rm, cp,
 * stat) speak Jay native v1 to a server (src/cmd/obj.c). */
#include "cmd.h"

#include <stdio.h>
#include <string.h>

static const char cairn_usage[] =
    "usage: cairn admin --data DIR ...        manage accounts, tokens and grants\n"
    "       cairn mb|rb|ls|put|get|cat|rm|cp|stat ...   object commands (Jay native v1)\n"
    "       cairn blob stat|have|put|get|rm|ls|sync ...  blob commands (docs/protocol/blobs.md)\n"
    "       cairn repo ... | clone|status|submit|sync|log|describe ...  repositories (Scribe)\n"
    "       cairn --help | --version\n";

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(cairn_usage, stderr);
        return 2;
    }
    const char *verb = argv[1];
    if (!strcmp(verb, "--version") || !strcmp(verb, "version")) {
        puts("cairn " CAIRN_VERSION);
        return 0;
    }
    if (!strcmp(verb, "--help") || !strcmp(verb, "help")) {
        fputs(cairn_usage, stdout);
        return 0;
    }
    if (!strcmp(verb, "admin"))
        return cn_cmd_admin(argc - 1, argv + 1);
    if (!strcmp(verb, "repo"))
        return cn_cmd_repo(argc - 1, argv + 1);
    /* the workspace verbs also stand alone: `cairn clone`, `cairn submit`, ... */
    static const char *const ws_verbs[] = {
        "clone", "status", "submit", "sync", "log", "describe"
    };
    for (size_t i = 0; i < sizeof ws_verbs / sizeof ws_verbs[0]; i++)
        if (!strcmp(verb, ws_verbs[i]))
            return cn_cmd_repo(argc, argv);
    if (!strcmp(verb, "blob"))
        return cn_cmd_blob(argc - 1, argv + 1);
    return cn_cmd_object(argc - 1, argv + 1);
}
