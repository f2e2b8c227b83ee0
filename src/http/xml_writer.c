/* A small escaping XML writer (include/cairn/http.h).  Errors are sticky so a
 * caller writes a whole document and checks once. */
#include "cairn/http.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static void put(cn_xml_writer_t *w, const char *s, size_t n)
{
    if (w->err == CN_OK)
        w->err = cn_buf_append(w->out, s, n);
}

static void xml_writer_puts(cn_xml_writer_t *w, const char *s)
{
    put(w, s, strlen(s));
}

cn_err_t cn_xml_escape(cn_buf_t *out, const char *s, size_t n)
{
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *rep = NULL;
        char num[8];
        if (c >= 0x80) {
            /* A request path may hold any bytes (an error's Resource echoes
             * it): a byte that does not start well-formed UTF-8 is written
             * as U+FFFD, or the document would not be XML at all. */
            size_t len = cn_utf8_seq(s + i, n - i);
            if (len) {
                i += len - 1;
                continue;
            }
            rep = "\xEF\xBF\xBD";
        }
        switch (c) {
        case '&': rep = "&amp;"; break;
        case '<': rep = "&lt;"; break;
        case '>': rep = "&gt;"; break;
        case '"': rep = "&quot;"; break;
        case '\'': rep = "&apos;"; break;
        default:
            if (c < 0x20 || c == 0x7f) {
                /* Keys may hold control characters; S3 writes them as
                 * character references too. */
                snprintf(num, sizeof num, "&#x%X;", c);
                rep = num;
            }
        }
        if (!rep)
            continue;
        CN_TRY(cn_buf_append(out, s + run, i - run));
        CN_TRY(cn_buf_append_str(out, rep));
        run = i + 1;
    }
    return cn_buf_append(out, s + run, n - run);
}

void cn_xml_begin(cn_xml_writer_t *w, cn_buf_t *out)
{
    memset(w, 0, sizeof *w);
    w->out = out;
    xml_writer_puts(w, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
}

void cn_xml_open(cn_xml_writer_t *w, const char *name, const char *xmlns)
{
    if (w->depth >= CN_XML_MAX_DEPTH) {
        if (w->err == CN_OK)
            w->err = CN_E_LIMIT;
        return;
    }
    w->stack[w->depth++] = name;
    xml_writer_puts(w, "<");
    xml_writer_puts(w, name);
    if (xmlns) {
        xml_writer_puts(w, " xmlns=\"");
        if (w->err == CN_OK)
            w->err = cn_xml_escape(w->out, xmlns, strlen(xmlns));
        xml_writer_puts(w, "\"");
    }
    xml_writer_puts(w, ">");
}

void cn_xml_close(cn_xml_writer_t *w)
{
    if (w->depth <= 0) {
        if (w->err == CN_OK)
            w->err = CN_E_INVALID;
        return;
    }
    const char *name = w->stack[--w->depth];
    xml_writer_puts(w, "</");
    xml_writer_puts(w, name);
    xml_writer_puts(w, ">");
}

void cn_xml_text(cn_xml_writer_t *w, const char *s, size_t n)
{
    if (w->err == CN_OK)
        w->err = cn_xml_escape(w->out, s, n);
}

void cn_xml_elem_n(cn_xml_writer_t *w, const char *name, const char *text, size_t n)
{
    cn_xml_open(w, name, NULL);
    if (text)
        cn_xml_text(w, text, n);
    cn_xml_close(w);
}

void cn_xml_elem(cn_xml_writer_t *w, const char *name, const char *text)
{
    cn_xml_elem_n(w, name, text, text ? strlen(text) : 0);
}

void cn_xml_elem_u64(cn_xml_writer_t *w, const char *name, uint64_t v)
{
    char num[24];
    snprintf(num, sizeof num, "%" PRIu64, v);
    cn_xml_elem(w, name, num);
}

void cn_xml_elem_bool(cn_xml_writer_t *w, const char *name, bool v)
{
    cn_xml_elem(w, name, v ? "true" : "false");
}

cn_err_t cn_xml_finish(cn_xml_writer_t *w)
{
    if (w->err == CN_OK && w->depth != 0)
        w->err = CN_E_INVALID;
    return w->err;
}
