/* `cairn admin --data DIR auth init|migrate|backup|restore`.  init creates
 * the SAU2 auth state on the data directory (cn_auth_init): a new
 * incarnation, the credential, access and server CAs, the auth listener's
 * TLS certificate (keys under DIR/auth, mode 0600) and the first
 * administrator `admin`, whose password comes from CAIRN_AUTH_ADMIN_PASSWORD
 * or is drawn at random and printed once on stdout.  migrate runs the schema
 * steps; backup writes the state and keys to a file (mode 0600); restore
 * loads one (refused while a cairnd holds the data directory); migrate and
 * restore draw a new incarnation, which each prints.
 * It prints nothing else secret, and never logs the password.  Exit 0 ok,
 * 1 failure, 2 usage. */
#include "admin_open.h"
#include "cmd.h"

#include "cairn/crypto.h"
#include "cairn/meta.h"
#include "cairn/sau2.h"
#include "cairn/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

static const char auth_usage[] =
    "usage: cairn admin --data DIR auth init\n"
    "       cairn admin --data DIR auth migrate\n"
    "       cairn admin --data DIR auth backup FILE   (state and private keys, mode 0600)\n"
    "       cairn admin --data DIR auth restore FILE  (cairnd stopped; a new incarnation)\n"
    "       (the first administrator's password: CAIRN_AUTH_ADMIN_PASSWORD, 12..1024\n"
    "       bytes, or a random one printed once)\n";

/* Prints the state's incarnation and revision (after init, migrate, restore). */
static void print_incarnation(const char *data)
{
    cn_meta_t *meta = NULL;
    uint8_t inc[CN_SAU2_ID_LEN];
    uint64_t rev = 0;
    char hex[2 * CN_SAU2_ID_LEN + 1];
    if (cn_meta_open(cn__admin_meta_target(data), NULL, &meta) == 0 &&
        cn_auth_incarnation(meta, inc, &rev) == 0) {
        cn_hex_encode(inc, sizeof inc, hex);
        printf("incarnation: %s\nrevision: %llu\n", hex, (unsigned long long)rev);
    }
    cn_meta_close(meta);
}

/* migrate, backup FILE, restore FILE.  restore replaces the state and keys
 * a running cairnd has loaded, so it holds the data directory as the other
 * offline commands do (the store's lock, admin_open.c): with a cairnd
 * running it refuses, CN_E_BUSY, and changes nothing. */
static int auth_state_op(const char *data, const char *verb, const char *file)
{
    cn_meta_t *meta = NULL;
    cn_store_t *store = NULL;
    bool restore = !strcmp(verb, "restore");
    cn_err_t e = restore ? cn__admin_open_store(data, 0, &meta, &store)
                         : cn_meta_open(cn__admin_meta_target(data), NULL, &meta);
    if (restore && e < 0) { /* the message (and the hint for BUSY) is printed already */
        cn_store_close(store);
        cn_meta_close(meta);
        return EXIT_SERVER;
    }
    if (e == 0)
        e = !strcmp(verb, "migrate")  ? cn_auth_migrate(meta)
            : !strcmp(verb, "backup") ? cn_auth_backup(meta, data, file)
                                      : cn_auth_restore(meta, data, file);
    cn_store_close(store);
    cn_meta_close(meta);
    if (e < 0) {
        fprintf(stderr, "cairn admin: auth %s: %s\n", verb,
                e == CN_E_NOT_FOUND ? "no auth state (run auth init first)"
                : e == CN_E_CORRUPT ? "the backup is damaged or not an auth backup"
                                    : cn_strerror(e));
        return EXIT_SERVER;
    }
    if (!strcmp(verb, "backup"))
        printf("auth state written to %s (mode 0600: it holds the private keys)\n", file);
    else
        print_incarnation(data);
    return EXIT_OK;
}

static int auth_init(const char *data)
{
    cn_meta_t *meta = NULL;
    char pw[64] = "";
    const char *given = getenv("CAIRN_AUTH_ADMIN_PASSWORD");
    if (given && !*given)
        given = NULL;
    cn_err_t e = cn_meta_open(cn__admin_meta_target(data), NULL, &meta);
    if (e == 0)
        e = cn_auth_init(meta, data, NULL, given, pw, sizeof pw);
    cn_meta_close(meta);
    if (e < 0) {
        fprintf(stderr, "cairn admin: auth init: %s\n",
                e == CN_E_EXISTS    ? "the auth state already exists"
                : e == CN_E_INVALID ? "the administrator password must be 12..1024 bytes"
                                    : cn_strerror(e));
        return EXIT_SERVER;
    }
    printf("auth state created in %s (keys in %s/auth)\n", data, data);
    print_incarnation(data);
    if (given)
        printf("administrator: admin (password from CAIRN_AUTH_ADMIN_PASSWORD)\n");
    else
        printf("administrator: admin\npassword: %s\n(shown once: keep it now)\n", pw);
    OPENSSL_cleanse(pw, sizeof pw);
    return EXIT_OK;
}

int cn_cmd_admin_auth(const char *data, int argc, char **argv)
{
    if (argc == 1 && !strcmp(argv[0], "init"))
        return auth_init(data);
    if (argc == 1 && !strcmp(argv[0], "migrate"))
        return auth_state_op(data, argv[0], NULL);
    if (argc == 2 && (!strcmp(argv[0], "backup") || !strcmp(argv[0], "restore")))
        return auth_state_op(data, argv[0], argv[1]);
    fputs(auth_usage, stderr);
    return EXIT_USAGE;
}
