#!/usr/bin/env python3
"""Embeds the web console's files (src/console/web/) into a C source file.

usage: console_assets.py WEB_DIR OUT.c [DEPFILE]

Every file under WEB_DIR but index.html becomes an asset served at
/_cairn/console/assets/NAME-HASH8.EXT, where HASH8 is the first 8 hex digits
of a SHA-256 over the file's path and the bytes of every file it reaches
through its references (its closure: a changed module renames each module
that imports it, and import cycles are fine).  Literal relative references are rewritten to the hashed names: href=
and src= attributes in index.html, import/export ... from '...' and
import '...' specifiers in JavaScript, url(...) and @import in CSS.  Each
asset also carries its gzip (level 9, mtime 0: the output is deterministic)
when that is smaller.  The depfile names every file and directory read, so
that adding a file reruns the generator.  Never fetches anything; reads only
WEB_DIR.
"""
import gzip
import hashlib
import os
import posixpath
import re
import sys

TYPES = {
    '.html': 'text/html; charset=utf-8',
    '.css': 'text/css; charset=utf-8',
    '.js': 'text/javascript; charset=utf-8',
    '.mjs': 'text/javascript; charset=utf-8',
    '.json': 'application/json',
    '.svg': 'image/svg+xml',
    '.png': 'image/png',
    '.ico': 'image/x-icon',
    '.woff2': 'font/woff2',
    '.txt': 'text/plain; charset=utf-8',
}

JS_REF = re.compile(r"""(\b(?:from|import)\s*\(?\s*)(['"])(\.{1,2}/[^'"\n]+)\2""")
CSS_REF = re.compile(r"""(url\(\s*|@import\s+)(['"]?)([^'")\s]+)\2""")
HTML_REF = re.compile(r"""(\b(?:href|src)\s*=\s*)(['"])([^'"]+)\2""", re.I)


def walk(web):
    files, dirs = [], [web]
    for root, dnames, fnames in os.walk(web):
        dnames[:] = sorted(d for d in dnames if not d.startswith('.'))
        dirs.extend(os.path.join(root, d) for d in dnames)
        for f in sorted(fnames):
            if f.startswith('.') or f.endswith('~'):
                continue
            files.append(posixpath.relpath(os.path.join(root, f), web).replace(os.sep, '/'))
    return files, dirs


def pattern(rel):
    ext = posixpath.splitext(rel)[1]
    if rel == 'index.html':
        return HTML_REF
    return {'.js': JS_REF, '.mjs': JS_REF, '.css': CSS_REF}.get(ext)


def refs(rel, text, known):
    """The known files rel refers to, as (match span, target) pairs."""
    pat = pattern(rel)
    if pat is None or text is None:
        return []
    out = []
    base = posixpath.dirname(rel)
    for m in pat.finditer(text):
        spec = m.group(3).split('#')[0].split('?')[0]
        if not spec or ':' in spec or spec.startswith('/'):
            continue
        target = posixpath.normpath(posixpath.join(base, spec))
        if target in known:
            out.append((m.span(3), target))
    return out


def closure(rel, edges):
    seen, todo = set(), [rel]
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.add(f)
        todo.extend(edges.get(f, ()))
    return sorted(seen)


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    web, out_c = sys.argv[1], sys.argv[2]
    files, dirs = walk(web)
    raw = {f: open(os.path.join(web, f), 'rb').read() for f in files}
    text = {}
    for f in files:
        try:
            text[f] = raw[f].decode('utf-8') if pattern(f) else None
        except UnicodeDecodeError:
            text[f] = None
    known = set(files)
    found = {f: refs(f, text[f], known) for f in files}
    edges = {f: [t for _, t in found[f]] for f in files}
    hashed = {}
    for f in files:
        if f == 'index.html':
            continue
        h = hashlib.sha256(f.encode() + b'\0')  # two files of one cycle differ
        for g in closure(f, edges):
            h.update(g.encode() + b'\0' + raw[g] + b'\0')
        stem, ext = posixpath.splitext(posixpath.basename(f))
        hashed[f] = '%s-%s%s' % (stem, h.hexdigest()[:8], ext)
    if len(set(hashed.values())) != len(hashed):
        sys.exit('console_assets.py: two files hash to one name; rename one')
    assets = []
    for f in files:
        body = raw[f]
        if found[f]:
            t, pieces, pos = text[f], [], 0
            prefix = 'assets/' if f == 'index.html' else './'
            for (a, b), target in found[f]:
                if target == 'index.html':
                    continue
                pieces.append(t[pos:a] + prefix + hashed[target])
                pos = b
            body = (''.join(pieces) + t[pos:]).encode('utf-8')
        name = 'index.html' if f == 'index.html' else hashed[f]
        ctype = TYPES.get(posixpath.splitext(f)[1].lower(), 'application/octet-stream')
        gz = gzip.compress(body, compresslevel=9, mtime=0)
        assets.append((name, f, ctype, body, gz if len(gz) < len(body) else None))
    write_c(out_c, assets)
    if len(sys.argv) == 4:
        deps = [os.path.join(web, f) for f in files] + dirs
        with open(sys.argv[3], 'w') as d:
            d.write('%s: %s\n' % (esc(out_c), ' \\\n  '.join(esc(p) for p in deps)))


def esc(path):
    """path as a Makefile-style depfile names it."""
    return path.replace('\\', '\\\\').replace(' ', '\\ ').replace('#', '\\#').replace('$', '$$')


def c_bytes(name, data):
    lines = ['static const unsigned char %s[%d] = {' % (name, max(len(data), 1))]
    for i in range(0, len(data), 16):
        lines.append('    ' + ', '.join('0x%02x' % b for b in data[i:i + 16]) + ',')
    if not data:
        lines.append('    0')
    lines.append('};')
    return '\n'.join(lines)


def c_str(s):
    return '"' + s.replace('\\', '\\\\').replace('"', '\\"') + '"'


def write_c(path, assets):
    out = ['/* Generated by scripts/console_assets.py from src/console/web/: do not edit. */',
           '#include "console_int.h"', '']
    rows = []
    for i, (name, src, ctype, body, gz) in enumerate(assets):
        out.append(c_bytes('raw_%d' % i, body))
        if gz is not None:
            out.append(c_bytes('gz_%d' % i, gz))
        etag = hashlib.sha256(body).hexdigest()[:16]
        rows.append('    { %s, %s, %s, raw_%d, %d, %s, %d, "\\"%s\\"" },' % (
            c_str(name), c_str(src), c_str(ctype), i, len(body),
            'gz_%d' % i if gz is not None else 'NULL', len(gz) if gz is not None else 0, etag))
    out.append('')
    out.append('const cn__console_asset_t cn__console_assets[] = {')
    out.extend(rows)
    out.append('    { NULL, NULL, NULL, NULL, 0, NULL, 0, NULL },')
    out.append('};')
    out.append('const size_t cn__console_nassets = %d;' % len(assets))
    data = '\n'.join(out) + '\n'
    try:
        if open(path).read() == data:
            return
    except OSError:
        pass
    with open(path, 'w') as f:
        f.write(data)


if __name__ == '__main__':
    main()
