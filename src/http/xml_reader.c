/* A bounded XML reader for request bodies, on expat (include/cairn/http.h).
 *
 * The document becomes a small tree of elements addressed by index; only the
 * text of leaf elements is kept (S3 request bodies carry no mixed content).
 * It never expands a DTD: a DOCTYPE or an entity declaration stops the parse,
 * and the body and the element count are both bounded before anything grows.
 */
#include "cairn/http.h"

#include <errno.h>
#include <expat.h>
#include <stdlib.h>
#include <string.h>

#define CN__XML_MAX_DEPTH 64

typedef struct {
    uint32_t name_off;
    uint32_t text_off;
    uint32_t text_len;
    int parent, first_child, last_child, next;
} cn__xml_node_t;

struct cn_xml_doc {
    XML_Parser parser;
    size_t max_bytes, max_nodes, fed;
    cn__xml_node_t *nodes;
    size_t n_nodes, cap_nodes;
    cn_buf_t strings; /* NUL-terminated names and texts */
    cn_buf_t scratch; /* character data of the open element */
    int cur;          /* open element, -1 at top level */
    int depth;
    int root;
    cn_err_t err;
    bool finished;
};

static void xml_reader_fail(cn_xml_doc_t *d, cn_err_t err)
{
    if (d->err == CN_OK)
        d->err = err;
    XML_StopParser(d->parser, XML_FALSE);
}

static int intern(cn_xml_doc_t *d, const char *s, size_t n, uint32_t *off)
{
    if (d->strings.len + n + 1 > UINT32_MAX)
        return CN_E_TOO_LARGE;
    *off = (uint32_t)d->strings.len;
    CN_TRY(cn_buf_append(&d->strings, s, n));
    return cn_buf_put_u8(&d->strings, 0);
}

static void XMLCALL start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
    (void)attrs;
    cn_xml_doc_t *d = ud;
    if (d->err)
        return;
    if (d->n_nodes >= d->max_nodes) {
        xml_reader_fail(d, CN_E_LIMIT);
        return;
    }
    if (d->depth >= CN__XML_MAX_DEPTH || (d->cur < 0 && d->root >= 0)) {
        xml_reader_fail(d, CN_E_INVALID);
        return;
    }
    if (d->n_nodes == d->cap_nodes) {
        size_t cap = d->cap_nodes ? d->cap_nodes * 2 : 16;
        if (cap > d->max_nodes)
            cap = d->max_nodes;
        cn__xml_node_t *n = realloc(d->nodes, cap * sizeof *n);
        if (!n) {
            xml_reader_fail(d, -ENOMEM);
            return;
        }
        d->nodes = n;
        d->cap_nodes = cap;
    }
    /* Namespaced names arrive as "uri\x01local": keep the local part. */
    const char *local = strrchr(name, '\x01');
    local = local ? local + 1 : name;
    int idx = (int)d->n_nodes;
    cn__xml_node_t *nd = &d->nodes[d->n_nodes++];
    memset(nd, 0, sizeof *nd);
    nd->parent = d->cur;
    nd->first_child = nd->last_child = nd->next = -1;
    cn_err_t e = intern(d, local, strlen(local), &nd->name_off);
    if (e) {
        xml_reader_fail(d, e);
        return;
    }
    if (d->cur >= 0) {
        cn__xml_node_t *p = &d->nodes[d->cur];
        if (p->last_child >= 0)
            d->nodes[p->last_child].next = idx;
        else
            p->first_child = idx;
        p->last_child = idx;
    } else {
        d->root = idx;
    }
    cn_buf_reset(&d->scratch);
    d->cur = idx;
    d->depth++;
}

static void XMLCALL end(void *ud, const XML_Char *name)
{
    (void)name;
    cn_xml_doc_t *d = ud;
    if (d->err || d->cur < 0)
        return;
    cn__xml_node_t *nd = &d->nodes[d->cur];
    if (nd->first_child < 0) {
        uint32_t off;
        cn_err_t e = intern(d, (const char *)d->scratch.data, d->scratch.len, &off);
        if (e) {
            xml_reader_fail(d, e);
            return;
        }
        nd = &d->nodes[d->cur];
        nd->text_off = off;
        nd->text_len = (uint32_t)d->scratch.len;
    }
    cn_buf_reset(&d->scratch);
    d->cur = nd->parent;
    d->depth--;
}

static void XMLCALL chars(void *ud, const XML_Char *s, int len)
{
    cn_xml_doc_t *d = ud;
    if (d->err || d->cur < 0 || len <= 0)
        return;
    cn_err_t e = cn_buf_append(&d->scratch, s, (size_t)len);
    if (e)
        xml_reader_fail(d, e);
}

static void XMLCALL doctype(void *ud, const XML_Char *name, const XML_Char *sysid,
                            const XML_Char *pubid, int has_internal)
{
    (void)name;
    (void)sysid;
    (void)pubid;
    (void)has_internal;
    xml_reader_fail(ud, CN_E_INVALID);
}

static void XMLCALL xml_reader_entity(void *ud, const XML_Char *name, int pe, const XML_Char *value,
                                      int value_len, const XML_Char *base, const XML_Char *sysid,
                                      const XML_Char *pubid, const XML_Char *notation)
{
    (void)name;
    (void)pe;
    (void)value;
    (void)value_len;
    (void)base;
    (void)sysid;
    (void)pubid;
    (void)notation;
    xml_reader_fail(ud, CN_E_INVALID);
}

cn_err_t cn_xml_doc_new(size_t max_bytes, size_t max_nodes, cn_xml_doc_t **out)
{
    *out = NULL;
    cn_xml_doc_t *d = calloc(1, sizeof *d);
    if (!d)
        return -ENOMEM;
    d->parser = XML_ParserCreateNS("UTF-8", '\x01');
    if (!d->parser) {
        free(d);
        return -ENOMEM;
    }
    d->max_bytes = max_bytes;
    d->max_nodes = max_nodes ? max_nodes : 1;
    d->cur = -1;
    d->root = -1;
    XML_SetUserData(d->parser, d);
    XML_SetElementHandler(d->parser, start, end);
    XML_SetCharacterDataHandler(d->parser, chars);
    XML_SetStartDoctypeDeclHandler(d->parser, doctype);
    XML_SetEntityDeclHandler(d->parser, xml_reader_entity);
    *out = d;
    return CN_OK;
}

static cn_err_t xml_reader_parse(cn_xml_doc_t *d, const void *p, size_t n, bool final)
{
    if (d->err)
        return d->err;
    if (d->finished)
        return CN_E_INVALID;
    if (n > d->max_bytes - d->fed) {
        d->err = CN_E_TOO_LARGE;
        return d->err;
    }
    d->fed += n;
    while (n > 0 || final) {
        int piece = n > (1u << 30) ? (1 << 30) : (int)n;
        bool last = final && (size_t)piece == n;
        if (XML_Parse(d->parser, p, piece, last) != XML_STATUS_OK) {
            if (d->err == CN_OK)
                d->err = CN_E_INVALID;
            return d->err;
        }
        p = (const char *)p + piece;
        n -= (size_t)piece;
        if (last)
            break;
    }
    if (d->err)
        return d->err;
    if (final) {
        d->finished = true;
        if (d->root < 0)
            return d->err = CN_E_INVALID;
    }
    return CN_OK;
}

cn_err_t cn_xml_doc_feed(cn_xml_doc_t *d, const void *p, size_t n)
{
    return xml_reader_parse(d, p, n, false);
}

cn_err_t cn_xml_doc_finish(cn_xml_doc_t *d)
{
    return xml_reader_parse(d, "", 0, true);
}

void cn_xml_doc_free(cn_xml_doc_t *d)
{
    if (!d)
        return;
    if (d->parser)
        XML_ParserFree(d->parser);
    free(d->nodes);
    cn_buf_free(&d->strings);
    cn_buf_free(&d->scratch);
    free(d);
}

cn_err_t cn_xml_parse(const void *p, size_t n, size_t max_nodes, cn_xml_doc_t **out)
{
    cn_xml_doc_t *d;
    CN_TRY(cn_xml_doc_new(n, max_nodes, &d));
    cn_err_t e = cn_xml_doc_feed(d, p, n);
    if (!e)
        e = cn_xml_doc_finish(d);
    if (e) {
        cn_xml_doc_free(d);
        return e;
    }
    *out = d;
    return CN_OK;
}

static bool valid(const cn_xml_doc_t *d, int node)
{
    return d && d->finished && d->err == CN_OK && node >= 0 && (size_t)node < d->n_nodes;
}

int cn_xml_root(const cn_xml_doc_t *d)
{
    return d && d->finished && !d->err ? d->root : -1;
}

const char *cn_xml_name(const cn_xml_doc_t *d, int node)
{
    return valid(d, node) ? (const char *)d->strings.data + d->nodes[node].name_off : NULL;
}

const char *cn_xml_node_text(const cn_xml_doc_t *d, int node, size_t *len)
{
    if (!valid(d, node))
        return NULL;
    const cn__xml_node_t *nd = &d->nodes[node];
    if (len)
        *len = nd->first_child >= 0 ? 0 : nd->text_len;
    if (nd->first_child >= 0)
        return "";
    return (const char *)d->strings.data + nd->text_off;
}

static int scan(const cn_xml_doc_t *d, int from, const char *name)
{
    for (int i = from; i >= 0; i = d->nodes[i].next)
        if (!name || strcmp((const char *)d->strings.data + d->nodes[i].name_off, name) == 0)
            return i;
    return -1;
}

int cn_xml_child(const cn_xml_doc_t *d, int node, const char *name)
{
    return valid(d, node) ? scan(d, d->nodes[node].first_child, name) : -1;
}

int cn_xml_next(const cn_xml_doc_t *d, int node, const char *name)
{
    return valid(d, node) ? scan(d, d->nodes[node].next, name) : -1;
}

const char *cn_xml_child_text(const cn_xml_doc_t *d, int node, const char *name, size_t *len)
{
    int c = cn_xml_child(d, node, name);
    return c >= 0 ? cn_xml_node_text(d, c, len) : NULL;
}
