#!/usr/bin/env python3
"""Fails if a C file under src/, outside src/meta, holds SQL text.

Only src/meta and its statement files (src/meta/sql/) speak SQL; services
name statements from there.  A string literal that opens with an SQL verb is
SQL text, wherever it sits.  Usage: scripts/sqlcheck.py [SRC_DIR]
"""
import pathlib
import re
import sys

VERB = re.compile(r'"\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|DROP|WITH|REPLACE|'
                  r'BEGIN|COMMIT|ROLLBACK|PRAGMA|VALUES)\s+[A-Za-z0-9_(*]')


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "src")
    bad = []
    for path in sorted(root.rglob("*.[ch]")):
        if path.relative_to(root).parts[0] == "meta":
            continue
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            stripped = line.strip()
            if stripped.startswith(("//", "/*", "*")):
                continue
            if VERB.search(line):
                bad.append(f"{path}:{n}: {stripped}")
    for b in bad:
        print(b)
    if bad:
        print(f"sqlcheck: {len(bad)} line(s) of SQL outside src/meta; "
              "name a statement in src/meta/sql/ instead", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
