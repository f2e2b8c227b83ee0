/* Object verbs — placeholder until the Jay client lands. */
#include "cmd.h"

#include <stdio.h>

int cn_cmd_object(int argc, char **argv)
{
    (void)argc;
    fprintf(stderr, "cairn: unknown command '%s'\n", argv[0]);
    return 2;
}
