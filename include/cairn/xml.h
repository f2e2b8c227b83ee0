/* cairn xml: an escaping XML writer into a buffer and a bounded, expat-based
 * XML reader (S3 request and response bodies).  Never I/O; the reader never
 * holds more than its node and byte limits. */
#ifndef CAIRN_XML_H
#define CAIRN_XML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "cairn/err.h"
#include "cairn/util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================
 * XML writer and reader
 * ====================================================================== */

#define CN_XML_MAX_DEPTH 32
#define CN_S3_XMLNS "http://s3.amazonaws.com/doc/2006-03-01/"

/* An escaping writer into a caller-owned cn_buf_t.  Errors are sticky: write
 * a whole document, then check cn_xml_finish() once. */
typedef struct cn_xml_writer {
    cn_buf_t *out;
    const char *stack[CN_XML_MAX_DEPTH]; /* element names; must outlive the writer */
    int depth;
    cn_err_t err;
} cn_xml_writer_t;

/* Starts a document: writes the XML declaration. */
CN_API void cn_xml_begin(cn_xml_writer_t *w, cn_buf_t *out);
/* <name> or <name xmlns="ns"> (ns NULL for none).  name must be a literal or
 * otherwise outlive the element. */
CN_API void cn_xml_open(cn_xml_writer_t *w, const char *name, const char *xmlns);
CN_API void cn_xml_close(cn_xml_writer_t *w); /* </name> */
/* Escaped text content (& < > " ' and control characters as references). */
CN_API void cn_xml_text(cn_xml_writer_t *w, const char *s, size_t n);
/* <name>text</name>; text NULL writes <name></name>. */
CN_API void cn_xml_elem(cn_xml_writer_t *w, const char *name, const char *text);
CN_API void cn_xml_elem_n(cn_xml_writer_t *w, const char *name, const char *text, size_t n);
CN_API void cn_xml_elem_u64(cn_xml_writer_t *w, const char *name, uint64_t v);
CN_API void cn_xml_elem_bool(cn_xml_writer_t *w, const char *name, bool v);
/* Returns the first error (-ENOMEM, CN_E_LIMIT for depth, CN_E_INVALID for
 * unbalanced elements); 0 when the document is complete. */
CN_API cn_err_t cn_xml_finish(cn_xml_writer_t *w);
/* Appends s escaped for XML text or attribute values; each byte of s that
 * does not start a well-formed UTF-8 sequence is written as U+FFFD, so the
 * output is always well-formed whatever s holds. */
CN_API cn_err_t cn_xml_escape(cn_buf_t *out, const char *s, size_t n);

/* A bounded XML document parsed with expat into a small tree, for request
 * bodies (CompleteMultipartUpload, Delete, ...).  Namespaces are stripped, so
 * a body is accepted with or without xmlns.  DOCTYPE, entity declarations and
 * anything but elements, text and comments are refused.  Fed incrementally. */
typedef struct cn_xml_doc cn_xml_doc_t;

/* max_bytes bounds the whole body, max_nodes the element count.  -ENOMEM. */
CN_API cn_err_t cn_xml_doc_new(size_t max_bytes, size_t max_nodes, cn_xml_doc_t **out);
/* Feeds the next piece.  CN_E_INVALID on malformed XML (→ MalformedXML),
 * CN_E_TOO_LARGE past max_bytes, CN_E_LIMIT past max_nodes. */
CN_API cn_err_t cn_xml_doc_feed(cn_xml_doc_t *d, const void *p, size_t n);
/* Ends the document; same errors.  After success the tree may be read. */
CN_API cn_err_t cn_xml_doc_finish(cn_xml_doc_t *d);
CN_API void cn_xml_doc_free(cn_xml_doc_t *d);
/* One-shot parse of a complete buffer. */
CN_API cn_err_t cn_xml_parse(const void *p, size_t n, size_t max_nodes, cn_xml_doc_t **out);

/* Nodes are indices; -1 means none.  Strings belong to the document. */
CN_API int cn_xml_root(const cn_xml_doc_t *d);
CN_API const char *cn_xml_name(const cn_xml_doc_t *d, int node);
/* The node's text content (concatenated character data, not trimmed). */
CN_API const char *cn_xml_node_text(const cn_xml_doc_t *d, int node, size_t *len);
/* First child named name (NULL: any), and the next sibling named name. */
CN_API int cn_xml_child(const cn_xml_doc_t *d, int node, const char *name);
CN_API int cn_xml_next(const cn_xml_doc_t *d, int node, const char *name);
/* Text of the first child named name, or NULL when there is none. */
CN_API const char *cn_xml_child_text(const cn_xml_doc_t *d, int node, const char *name,
                                     size_t *len);

#ifdef __cplusplus
}
#endif
#endif
