/* libFuzzer harness: the bounded XML reader for S3 request bodies
 * (src/http/xml_reader.c, on expat).
 *
 * Input: a limits byte, a split byte, then the document.  The limits byte
 * picks the element cap (1 + low six bits; 10,000 with bit7).  The document
 * is parsed in one shot and again fed in three pieces cut at the split
 * byte's fraction and at the middle of the rest, with max_bytes exactly its
 * length.  Invariants: the outcome is one of the documented errors; both
 * parses agree on it and, when accepted, on the whole tree; an accepted tree
 * has one root, at most the cap of elements, each reachable once, with
 * non-empty names and text whose length is its C-string length; a body one
 * byte over max_bytes is refused as too large. */
#include "cairn/http.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void ok_rc(cn_err_t e)
{
    if (e != CN_OK && e != CN_E_INVALID && e != CN_E_LIMIT && e != CN_E_TOO_LARGE && e != -ENOMEM)
        abort();
}

/* Walks the tree depth first, hashing names and texts; returns the count. */
static size_t walk(const cn_xml_doc_t *d, int node, int depth, uint64_t *h)
{
    if (depth > 2 * CN_XML_MAX_DEPTH + 2)
        abort();
    const char *name = cn_xml_name(d, node);
    size_t tl = 0;
    const char *text = cn_xml_node_text(d, node, &tl);
    if (!name || !name[0] || !text || strlen(text) != tl || strchr(name, '\x01'))
        abort();
    for (const char *p = name; *p; p++)
        *h = (*h ^ (uint8_t)*p) * 1099511628211ull;
    *h = (*h ^ 0x100) * 1099511628211ull;
    for (size_t i = 0; i < tl; i++)
        *h = (*h ^ (uint8_t)text[i]) * 1099511628211ull;
    size_t n = 1;
    int first = cn_xml_child(d, node, NULL);
    if (first >= 0 && tl != 0)
        abort(); /* only leaves carry text */
    for (int c = first; c >= 0; c = cn_xml_next(d, c, NULL)) {
        if (c <= node)
            abort(); /* children come after their parent */
        n += walk(d, c, depth + 1, h);
        /* The named lookup finds this child or an earlier one of that name. */
        int byname = cn_xml_child(d, node, cn_xml_name(d, c));
        if (byname < 0 || byname > c)
            abort();
    }
    *h = (*h ^ 0x200) * 1099511628211ull;
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t max_nodes = (data[0] & 0x80) ? 10000 : 1 + (data[0] & 0x3f);
    size_t n = size - 2;
    uint8_t *doc = malloc(n ? n : 1);
    if (!doc)
        return 0;
    memcpy(doc, data + 2, n);

    cn_xml_doc_t *one = NULL, *inc = NULL;
    cn_err_t e1 = cn_xml_parse(doc, n, max_nodes, &one);
    ok_rc(e1);
    if ((e1 == CN_OK) != (one != NULL))
        abort();

    cn_err_t e2 = cn_xml_doc_new(n, max_nodes, &inc);
    if (e2 == CN_OK) {
        size_t cut1 = n * data[1] / 256, cut2 = cut1 + (n - cut1) / 2;
        e2 = cn_xml_doc_feed(inc, doc, cut1);
        if (!e2)
            e2 = cn_xml_doc_feed(inc, doc + cut1, cut2 - cut1);
        if (!e2)
            e2 = cn_xml_doc_feed(inc, doc + cut2, n - cut2);
        if (!e2)
            e2 = cn_xml_doc_finish(inc);
        ok_rc(e2);
        /* A finished or failed document takes no more. */
        if (cn_xml_doc_feed(inc, "<a/>", 4) == CN_OK || cn_xml_doc_finish(inc) == CN_OK)
            abort();
    }
    if (e1 != -ENOMEM && e2 != -ENOMEM && e1 != e2)
        abort();
    if (e1 == CN_OK && e2 == CN_OK) {
        uint64_t h1 = 14695981039346656037ull, h2 = h1;
        int r1 = cn_xml_root(one), r2 = cn_xml_root(inc);
        if (r1 < 0 || r2 < 0)
            abort();
        size_t c1 = walk(one, r1, 0, &h1), c2 = walk(inc, r2, 0, &h2);
        if (c1 != c2 || h1 != h2 || c1 > max_nodes)
            abort();
        if (cn_xml_name(one, -1) || cn_xml_name(one, (int)c1) || cn_xml_child(one, -1, NULL) >= 0)
            abort();
    }
    cn_xml_doc_free(one);
    cn_xml_doc_free(inc);

    /* One byte over the bound. */
    if (n > 0) {
        cn_xml_doc_t *small = NULL;
        if (cn_xml_doc_new(n - 1, max_nodes, &small) == CN_OK) {
            cn_err_t e = cn_xml_doc_feed(small, doc, n);
            if (e != CN_E_TOO_LARGE)
                abort();
            cn_xml_doc_free(small);
        }
    }
    free(doc);
    return 0;
}
