/* cairn — the client command: object commands over Jay native v1 and the
 * `cairn admin` commands that manage a data directory. */
#include "cairn/util.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version"))) {
        puts("cairn " CAIRN_VERSION);
        return 0;
    }
    fputs("usage: cairn COMMAND ...\n", argc >= 2 && !strcmp(argv[1], "--help") ? stdout : stderr);
    return argc >= 2 && !strcmp(argv[1], "--help") ? 0 : 2;
}
