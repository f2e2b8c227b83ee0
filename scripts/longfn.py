#!/usr/bin/python3
"""List C functions longer than a limit (default 150 lines).

usage: scripts/longfn.py [--max N] [PATH ...]      (default PATH: src)

A function is a top-level brace block whose head (the text since the previous
top-level ';' or '}') ends in a parameter list: enough for cairn's style, where
every definition starts at column 0.  Comments, string and character literals
are blanked before braces are counted, so a brace inside them is not one.  Its
length runs from the line of its name to its closing brace.  Prints
"path:line: name N lines", longest first; exits 1 if any is found, so it can
guard a build.
"""
import argparse
import os
import re
import sys

HEAD_RE = re.compile(r'([A-Za-z_]\w*)\s*\([^()]*(?:\([^()]*\)[^()]*)*\)\s*'
                     r'(?:__attribute__\s*\(\(.*?\)\)\s*)*$', re.S)


def blank(src):
    """src with comments and literals replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith('/*', i):
            j = src.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', src[i:j]))
            i = j
        elif src.startswith('//', i):
            j = src.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i))
            i = j
        elif c in '"\'':
            j = i + 1
            while j < n and src[j] != c and src[j] != '\n':
                j += 2 if src[j] == '\\' else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r'[^\n]', ' ', src[i + 1:j - 1]) + c)
            i = j
        elif c == '#' and (i == 0 or src[i - 1] == '\n'):
            # a preprocessor line (with its continuations) holds no function
            j = i
            while True:
                k = src.find('\n', j)
                if k < 0:
                    k = n
                    break
                if src[k - 1] != '\\':
                    break
                j = k + 1
            out.append(re.sub(r'[^\n]', ' ', src[i:k]))
            i = k
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def functions(src):
    """Yields (name, first line, line count) of each top-level function."""
    text = blank(src)
    depth, head_start, open_at, name = 0, 0, None, None
    for i, c in enumerate(text):
        if c == '{':
            if depth == 0:
                head = text[head_start:i]
                m = HEAD_RE.search(head)
                if m and '=' not in head and not re.search(r'\b(struct|union|enum)\s*\w*\s*$',
                                                           head.strip()):
                    name = m.group(1)
                    open_at = head_start + m.start(1)
                else:
                    name = None
            depth += 1
        elif c == '}':
            depth -= 1
            if depth == 0:
                if name:
                    first = text.count('\n', 0, open_at) + 1
                    last = text.count('\n', 0, i) + 1
                    yield name, first, last - first + 1
                name = None
                head_start = i + 1
        elif c == ';' and depth == 0:
            head_start = i + 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--max', type=int, default=150)
    ap.add_argument('paths', nargs='*', default=['src'])
    a = ap.parse_args()
    found = []
    for p in a.paths:
        walk = [(p, [], [os.path.basename(p)])] if os.path.isfile(p) else os.walk(p)
        for d, _, files in walk:
            for f in sorted(files):
                if not f.endswith('.c'):
                    continue
                path = d if os.path.isfile(d) else os.path.join(d, f)
                with open(path, encoding='utf-8', errors='replace') as fh:
                    for name, line, count in functions(fh.read()):
                        if count > a.max:
                            found.append((count, path, line, name))
    for count, path, line, name in sorted(found, key=lambda r: (-r[0], r[1])):
        print(f'{path}:{line}: {name} {count} lines')
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main())
