/* The auth service's statements (src/identity/auth_*.c, the SAU2 verbs):
 * its state row, CA certificates, users, servers, credentials, registered
 * keys, grants and namespace roles, delegates, visibility, operations,
 * audit and rollback high-water marks.  See sql.h and docs/protocol/sau2.md
 * section 8.
 *
 * USER_COLS: id, name, kind, administrator, disabled, pw_hash, generation.
 * CRED_COLS: id, kind, account, key_id, public_key, certificate, created_ms,
 * expires_ms, parent, revoked_ms, label (account: a user's or server's id). */
#ifndef CAIRN_META_SQL_AUTH_H
#define CAIRN_META_SQL_AUTH_H

#include "meta/sql/sql.h"

enum {
    /* state */
    CN_SQL_AU_STATE_GET,     /* () -> incarnation, revision, domain */
    CN_SQL_AU_STATE_PUT,     /* (incarnation, revision, created_ms, domain): the one row */
    CN_SQL_AU_REVISION_BUMP, /* () revision + 1 */
    CN_SQL_AU_CA_PUT,        /* (name, certificate PEM) inserts or replaces */
    CN_SQL_AU_CA_GET,        /* (name) -> certificate PEM */
    CN_SQL_AU_CA_LIST,       /* () -> name, certificate PEM by name */
    /* users */
    CN_SQL_AU_USER_INSERT,       /* (id, name, kind, administrator, pw_hash or NULL, generation) */
    CN_SQL_AU_USER_TAKEN,        /* (name, id) -> 1 when a user has that name or id */
    CN_SQL_AU_USER_BY_NAME,      /* (name) -> USER_COLS */
    CN_SQL_AU_USER_BY_ID,        /* (id) -> USER_COLS */
    CN_SQL_AU_USER_LIST,         /* (cursor) -> USER_COLS with name > cursor, by name, 256 */
    CN_SQL_AU_USER_SET_DISABLED, /* (disabled, name) */
    CN_SQL_AU_USER_SET_PASSWORD, /* (pw_hash, generation, name) */
    /* servers */
    CN_SQL_AU_SERVER_INSERT,       /* (id, name, namespace) */
    CN_SQL_AU_SERVER_TAKEN,        /* (name, id) -> 1 when a server has that name or id */
    CN_SQL_AU_SERVER_BY_NAME,      /* (name) -> id, namespace, disabled */
    CN_SQL_AU_SERVER_LIST,         /* (cursor) -> name, namespace, id, disabled; name > cursor */
    CN_SQL_AU_SERVER_SET_DISABLED, /* (disabled, name) */
    /* credentials and keys */
    CN_SQL_AU_KEY_SEEN,       /* (key_id, credential) -> 1 when either is registered */
    CN_SQL_AU_KEY_REGISTER,   /* (key_id, credential) fails (exists) for a key seen before */
    CN_SQL_AU_CRED_INSERT,    /* (id, kind, account, key_id, public_key, certificate,
                                  created_ms, expires_ms, parent or NULL, label) */
    CN_SQL_AU_CRED_GET,       /* (id) -> CRED_COLS */
    CN_SQL_AU_CRED_REVOKE,    /* (revoked_ms, id, id): it and its children, kept if revoked */
    CN_SQL_AU_CRED_LIST,      /* (cursor) -> CRED_COLS with id > cursor, by id, 256 */
    CN_SQL_AU_CRED_LIST_USER, /* (cursor, account) -> the same for one user's credentials */
    /* grants, namespace admins, namespace readers, delegates: four statements
     * each, in this order (auth_admin.c indexes them by table):
     * SET (user_id, namespace[, role]) inserts or replaces; REVOKE (namespace,
     * user_id); LIST (cursor "namespace/user") -> namespace, user name[, role]
     * after the cursor by namespace, name, 256; LIST_NS (cursor, namespace) the
     * same within one namespace. */
    CN_SQL_AU_GRANT_SET,
    CN_SQL_AU_GRANT_REVOKE,
    CN_SQL_AU_GRANT_LIST,
    CN_SQL_AU_GRANT_LIST_NS,
    CN_SQL_AU_NSADMIN_SET,
    CN_SQL_AU_NSADMIN_REVOKE,
    CN_SQL_AU_NSADMIN_LIST,
    CN_SQL_AU_NSADMIN_LIST_NS,
    CN_SQL_AU_NSREADER_SET,
    CN_SQL_AU_NSREADER_REVOKE,
    CN_SQL_AU_NSREADER_LIST,
    CN_SQL_AU_NSREADER_LIST_NS,
    CN_SQL_AU_DELEGATE_SET,
    CN_SQL_AU_DELEGATE_REVOKE,
    CN_SQL_AU_DELEGATE_LIST,
    CN_SQL_AU_DELEGATE_LIST_NS,
    CN_SQL_AU_VISIBILITY_GET, /* (namespace, repository) -> visibility */
    CN_SQL_AU_VISIBILITY_SET, /* (namespace, repository, visibility) inserts or replaces */
    /* operations */
    CN_SQL_AU_OP_GET, /* (id) -> actor, intent, code, rows */
    CN_SQL_AU_OP_PUT, /* (id, actor, intent, code, rows, revision) */
    /* audit */
    CN_SQL_AU_AUDIT_ADD,  /* (at_ms, actor, verb, arguments, code, revision) */
    CN_SQL_AU_AUDIT_LIST, /* (cursor seq) -> seq, at_ms, actor, verb, arguments, code,
                                  revision with seq > cursor, by seq, 256 */
    /* rollback protection (storage side) */
    CN_SQL_AU_HIGHWATER_GET, /* (incarnation) -> revision */
    CN_SQL_AU_HIGHWATER_PUT, /* (incarnation, revision): raises, never lowers */
    /* authorize, authorize-batch, public-policy (auth_authorize.c) */
    CN_SQL_AU_SERVER_BY_ID, /* (id) -> name, namespace, disabled */
    CN_SQL_AU_GRANT_GET,    /* (namespace, user_id) -> role */
    CN_SQL_AU_NSADMIN_HAS,  /* (namespace, user_id) -> 1 */
    CN_SQL_AU_DELEGATE_HAS, /* (namespace, user_id) -> 1 */
    CN_SQL_AU_NSREADER_HAS, /* (namespace, user_id) -> 1 */
    /* migrate, backup, restore (auth_backup.c) */
    CN_SQL_AU_STATE_RENEW, /* (incarnation): a new incarnation; revision, domain kept */
    CN_SQL_AU_COUNT
};

extern const char *const cn__sql_au[CN_SQL_AU_COUNT];

/* The auth state's tables as `auth backup` and `auth restore` copy them
 * (every table but cn_auth_highwater, which is the storage side's own):
 * select (all rows, every column), insert (one row, every column), clear
 * (delete all rows), and the column types, one letter a column: i integer,
 * t text, b blob (any may be NULL). */
typedef struct cn__sql_au_table {
    const char *select, *insert, *clear, *types;
} cn__sql_au_table_t;
#define CN_SQL_AU_NTABLES 13
extern const cn__sql_au_table_t cn__sql_au_tables[CN_SQL_AU_NTABLES];
extern const cn_sql_set_t cn__sql_au_set;

#endif
