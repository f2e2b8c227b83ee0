/* libFuzzer harness: the gateway's configuration parser and its repository
 * name resolver (src/scribe/gw_config.c).  Input: TOML text, also resolved
 * as a repository name against a fixed two-namespace configuration and,
 * when accepted, against itself.  Invariants: no crash or leak; a refusal is
 * CN_E_INVALID with a message and a zeroed configuration; an accepted one
 * has 1..64 servers, one protocol, valid labels (empty on plaintext), its
 * distinct labels once each, and a default among them; a resolved name
 * names a served namespace and a storage name of 1..128 bytes without '/'
 * inside the input. */
#include "scribe/gw_int.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char two_ns[] =
    "default_namespace = \"studio\"\n"
    "[[storage]]\naddress = \"scribes://127.0.0.1:7001\"\nnamespace = \"studio\"\n"
    "[[storage]]\naddress = \"scribes://127.0.0.1:7002\"\nnamespace = \"publishing\"\n"
    "[[storage]]\naddress = \"scribes://[::1]:7003\"\nnamespace = \"studio\"\n";

static void check_config(const cn_gw_config_t *c)
{
    if (c->n < 1 || c->n > CN_GW_MAX_SERVERS || c->nns < 1 || c->nns > c->n)
        abort();
    if (c->inventory_ms < 100 || c->inventory_ms > 86400000) /* inventory_interval_ms */
        abort();
    bool dflt = !c->has_default;
    for (size_t i = 0; i < c->n; i++) {
        const cn_gw_server_t *s = &c->servers[i];
        size_t n = strlen(s->ns);
        if (s->tls != c->tls || (c->tls ? !cn_gw_label_valid(s->ns, n) : n != 0))
            abort();
    }
    for (size_t j = 0; j < c->nns; j++) {
        dflt = dflt || !strcmp(c->ns[j], c->default_ns);
        for (size_t k = 0; k < j; k++)
            if (!strcmp(c->ns[j], c->ns[k]))
                abort();
    }
    if (!dflt)
        abort();
}

static void check_resolve(const cn_gw_config_t *c, const uint8_t *data, size_t size)
{
    const char *ns, *sname;
    size_t slen;
    char msg[256];
    cn_err_t e =
        cn_gw_name_resolve(c, (const char *)data, size, &ns, &sname, &slen, msg, sizeof msg);
    if (e < 0) {
        if (e != CN_E_INVALID || !msg[0] || ns || sname)
            abort();
        return;
    }
    bool served = false;
    for (size_t j = 0; j < c->nns; j++)
        served = served || ns == c->ns[j];
    if (!served || slen < 1 || slen > CN_SCRIBE_MAX_STORAGE_NAME || sname < (const char *)data ||
        sname + slen > (const char *)data + size || memchr(sname, '/', slen))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static cn_gw_config_t fixed, c;
    static bool ready;
    char err[256];
    if (!ready) {
        if (cn_gw_config_parse(two_ns, sizeof two_ns - 1, &fixed, err, sizeof err) < 0 ||
            fixed.nns != 2)
            abort();
        ready = true;
    }
    check_resolve(&fixed, data, size);
    cn_err_t e = cn_gw_config_parse((const char *)data, size, &c, err, sizeof err);
    if (e < 0) {
        if ((e != CN_E_INVALID && e != -12) || c.n || !err[0])
            abort();
        return 0;
    }
    check_config(&c);
    check_resolve(&c, data, size);
    return 0;
}
