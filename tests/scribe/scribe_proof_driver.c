/* The tree proof verifier (cairn/tree_verify.h) on stdin/stdout, for
 * tests/scribe/test_scribe_proof.py: the test carries each request to the
 * real server (and may tamper with the reply) while the verifier decides.
 *
 *   argv: page-request-hex selector lower content-root-hex revision-root-hex [path-hex ...]
 *   out:  "REQ <hex>" per request; in: "REP <hex>" (a reply payload) or "ERR"
 *   end:  "OK <count> <more> <fragments>" then "V <state> <change> <path-hex>" per
 *         value; or "FAIL <error>" and no value.  Codec 1 (little-endian). */
#include "cairn/tree_verify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int hexval(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static int unhex(const char *s, cn_buf_t *out)
{
    size_t n = strlen(s);
    if (n % 2)
        return -1;
    for (size_t i = 0; i < n; i += 2) {
        int a = hexval(s[i]), b = hexval(s[i + 1]);
        uint8_t v = (uint8_t)(a << 4 | b);
        if (a < 0 || b < 0 || cn_buf_append(out, &v, 1) < 0)
            return -1;
    }
    return 0;
}

static void put_hex(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        printf("%02x", p[i]);
}

/* One round trip through the test: REQ out, REP in. */
static cn_err_t via_stdio(void *ctx, const uint8_t *req, size_t len, cn_buf_t *reply)
{
    cn_buf_t *line = ctx;
    printf("REQ ");
    put_hex(req, len);
    printf("\n");
    fflush(stdout);
    cn_buf_reset(line);
    int c;
    while ((c = getchar()) != EOF && c != '\n') {
        uint8_t ch = (uint8_t)c;
        if (cn_buf_append(line, &ch, 1) < 0)
            return -1;
    }
    uint8_t nul = 0;
    if (cn_buf_append(line, &nul, 1) < 0)
        return -1;
    const char *s = (const char *)line->data;
    if (strncmp(s, "REP ", 4) != 0 || unhex(s + 4, reply) < 0)
        return CN_E_PROTOCOL; /* the test's transport failed */
    return CN_OK;
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: %s page selector lower content revision [path...]\n", argv[0]);
        return 2;
    }
    cn_buf_t page = { 0 }, roots = { 0 }, line = { 0 }, pathbytes = { 0 };
    if (unhex(argv[1], &page) < 0 || unhex(argv[4], &roots) < 0 || unhex(argv[5], &roots) < 0 ||
        roots.len != 64)
        return 2;
    uint32_t npaths = (uint32_t)(argc - 6);
    cn_scribe_str_t *paths = calloc(npaths + 1, sizeof *paths);
    size_t *offs = calloc(npaths + 1, sizeof *offs);
    for (uint32_t i = 0; i < npaths; i++) {
        offs[i] = pathbytes.len;
        if (unhex(argv[6 + i], &pathbytes) < 0)
            return 2;
    }
    offs[npaths] = pathbytes.len;
    for (uint32_t i = 0; i < npaths; i++)
        paths[i] = (cn_scribe_str_t){ pathbytes.data + offs[i], (uint32_t)(offs[i + 1] - offs[i]) };
    cn_tree_verify_cfg_t cfg = { CN_SCRIBE_CODEC_LE,
                                 page.data,
                                 page.len,
                                 (uint8_t)atoi(argv[2]),
                                 strtoull(argv[3], NULL, 10),
                                 paths,
                                 npaths,
                                 { { 0 } },
                                 { { 0 } } };
    memcpy(cfg.content_root.b, roots.data, 32);
    memcpy(cfg.revision_root.b, roots.data + 32, 32);
    cn_tree_verify_t *v = NULL;
    cn_err_t err = cn_tree_verify_new(&cfg, &v);
    if (err >= 0)
        err = cn_tree_verify_page(v, via_stdio, &line);
    uint32_t count = 0;
    bool more = false;
    if (err >= 0)
        err = cn_tree_verify_result(v, &count, &more);
    if (err < 0) {
        printf("FAIL %d\n", (int)err);
    } else {
        printf("OK %u %d %u\n", count, more ? 1 : 0, cn_tree_verify_fragments(v));
        for (uint32_t i = 0; i < count; i++) {
            const cn_tree_value_t *x = cn_tree_verify_value(v, i);
            printf("V %u %llu ", x->entry.state, (unsigned long long)x->entry.change);
            put_hex(x->path, x->path_len);
            printf("\n");
        }
    }
    cn_tree_verify_free(v);
    cn_buf_free(&page);
    cn_buf_free(&roots);
    cn_buf_free(&line);
    cn_buf_free(&pathbytes);
    free(paths);
    free(offs);
    return 0;
}
