/* Entry points of the `cairn` sub-commands.  Each takes argv starting at its
 * own verb and returns the process exit status; none calls exit(). */
#ifndef CN_CMD_H
#define CN_CMD_H

/* The exit codes of the object, blob and repo commands (docs/cli.md). */
enum {
    EXIT_OK = 0,
    EXIT_SERVER = 1,
    EXIT_USAGE = 2,
    EXIT_NOT_FOUND = 3,
    EXIT_DENIED = 4,
    EXIT_NETWORK = 5,
    EXIT_CONFLICT = 6,
    EXIT_LOCAL = 7,
    EXIT_INTEGRITY = 8,
    EXIT_ROLLBACK = 9 /* repo sync: the head does not descend from the verified anchor */
};

/* `cairn admin ...` (src/cmd/admin.c).  Exit 0 ok, 1 failure, 2 usage. */
int cn_cmd_admin(int argc, char **argv);
/* `cairn admin --data DIR repo backup|restore ...` (src/cmd/admin_repo.c);
 * argv[0] is the verb. */
int cn_cmd_admin_repo(const char *data, int argc, char **argv);
/* `cairn admin --data DIR auth init` (src/cmd/admin_auth.c); argv[0] is the verb. */
int cn_cmd_admin_auth(const char *data, int argc, char **argv);
/* `cairn admin --data DIR store compact ...` (src/cmd/admin_store.c); argv[0] is the verb. */
int cn_cmd_admin_store(const char *data, int argc, char **argv);
/* `cairn admin [--meta URL | --data DIR] fleet status` (src/cmd/admin_fleet.c); data
 * may be NULL when --meta was given; argv[0] is the verb. */
int cn_cmd_admin_fleet(const char *data, int argc, char **argv);
/* `cairn admin [--meta URL | --data DIR] identity rotate-key ...`
 * (src/cmd/admin_identity.c); data may be NULL with --meta; argv[0] is the verb. */
int cn_cmd_admin_identity(const char *data, int argc, char **argv);

/* `cairn <verb> ...` for the object verbs (src/cmd/obj.c).  Exit codes are
 * documented in docs/cli.md. */
int cn_cmd_object(int argc, char **argv);

/* `cairn blob ...` (src/cmd/blob.c): the blob operation family and sync. */
int cn_cmd_blob(int argc, char **argv);

/* `cairn repo ...` (src/cmd/repo.c): repositories over Scribe. */
int cn_cmd_repo(int argc, char **argv);

#endif
