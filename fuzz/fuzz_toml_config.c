/* libFuzzer harness: the `.scribe/config.toml` schema layer
 * (src/repos/config.c) over the TOML parser, and its glob matcher.
 * Input: TOML text.  Invariants: no crash or leak; a refusal is CN_E_INVALID
 * naming a line and column, with *out zeroed; an accepted config has
 * version 1, equals itself, and every rule's pattern is matched without a
 * crash against fixed paths, every mount path and itself (a pattern without
 * wildcards must match itself; `**` alone matches everything). */
#include "cairn/repos_config.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const paths[] = { "a", "a/b", "art/x.psd", "a/b/c/d.bin", "é/ü/x", "x.psd" };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cn_repo_config_t c;
    char err[256];
    cn_err_t e = cn_repo_config_parse((const char *)data, size, &c, err, sizeof err);
    if (e != CN_OK) {
        if ((e != CN_E_INVALID && e != -12) || c.nrules || c.nmounts || c.rules || c.mounts ||
            (e == CN_E_INVALID && strncmp(err, "line ", 5) != 0))
            abort();
        return 0;
    }
    if (c.version != 1 || !cn_repo_config_rules_equal(&c, &c))
        abort();
    for (size_t i = 0; i < c.nrules; i++) {
        const char *p = c.rules[i].pattern;
        for (size_t k = 0; k < sizeof paths / sizeof *paths; k++)
            if (cn_repo_glob_match(p, paths[k]) != cn_repo_glob_match(p, paths[k]) ||
                (strcmp(p, "**") == 0 && !cn_repo_glob_match(p, paths[k])))
                abort();
        for (size_t m = 0; m < c.nmounts; m++)
            (void)cn_repo_glob_match(p, c.mounts[m].path);
        if (!strpbrk(p, "*?") && !cn_repo_glob_match(p, p))
            abort();
    }
    if (c.nrules && cn_repo_config_match(&c, "a/b") == NULL &&
        cn_repo_glob_match(c.rules[0].pattern, "a/b"))
        abort();
    cn_repo_config_free(&c);
    cn_repo_config_free(NULL);
    return 0;
}
