/* Entry points of the `cairn` sub-commands.  Each takes argv starting at its
 * own verb and returns the process exit status; none calls exit(). */
#ifndef CN_CMD_H
#define CN_CMD_H

/* `cairn admin ...` (src/cmd/admin.c).  Exit 0 ok, 1 failure, 2 usage. */
int cn_cmd_admin(int argc, char **argv);

/* `cairn <verb> ...` for the object verbs (src/cmd/obj.c).  Exit codes are
 * documented in docs/cli.md. */
int cn_cmd_object(int argc, char **argv);

#endif
