/* `cairn admin --data DIR auth init`: creates the SAU2 auth state on the data
 * directory (cn_auth_init): a new incarnation, the credential, access and
 * server CAs, the auth listener's TLS certificate (keys under DIR/auth,
 * mode 0600) and the first administrator `admin`, whose password comes from
 * CAIRN_AUTH_ADMIN_PASSWORD or is drawn at random and printed once on
 * stdout.  It prints nothing else secret, and never logs the password.
 * Exit 0 ok, 1 failure, 2 usage. */
#include "cmd.h"

#include "cairn/meta.h"
#include "cairn/sau2.h"
#include "cairn/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

static const char auth_usage[] =
    "usage: cairn admin --data DIR auth init\n"
    "       (the first administrator's password: CAIRN_AUTH_ADMIN_PASSWORD, 12..1024\n"
    "       bytes, or a random one printed once)\n";

static int auth_init(const char *data)
{
    cn_meta_t *meta = NULL;
    char pw[64] = "";
    const char *given = getenv("CAIRN_AUTH_ADMIN_PASSWORD");
    if (given && !*given)
        given = NULL;
    cn_err_t e = cn_meta_open(data, NULL, &meta);
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
    fputs(auth_usage, stderr);
    return EXIT_USAGE;
}
