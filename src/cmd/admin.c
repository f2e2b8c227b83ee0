/* `cairn admin` — placeholder until the identity module lands. */
#include "cmd.h"

#include <stdio.h>

int cn_cmd_admin(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fputs("cairn admin: no administration commands in this build\n", stderr);
    return 2;
}
