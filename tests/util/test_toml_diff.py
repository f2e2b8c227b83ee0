"""Differential test of the TOML 1.0.0 parser against tomli (Debian's
python3-tomli): documents from the toml-test corpus plus seeded random
mutations of them, a few thousand in all, fed through toml2json --batch.
Both parsers must agree on accept/refuse, and on the value when both accept
(dates and times compared to the microsecond, tomli's precision)."""
import datetime
import glob
import json
import math
import os
import random
import subprocess

import pytest

from conftest import binary
from test_toml_corpus import CORPUS, norm

tomli = pytest.importorskip("tomli", reason="python3-tomli is not installed "
                            "(scripts/deps.sh test installs it)")

SEED = 19
MUTANTS_PER_DOC = 8
# Characters a mutation inserts: TOML's syntax and the edges of its lexemes.
ALPHABET = list("=[]{}.,#\"'\\ \t\n\r_-+:0123456789aeEfinxobtTZz") + ["\"\"\"", "'''", "\r\n",
                                                                      "\x7f", "\x01", "é"]

HANDWRITTEN = [
    "a.b.c = 1\n[a.d]\n", "[a]\nb.c = 1\n[a.b]\n", "x = {a.b = 1}\nx.c = 2\n",
    "[[t]]\n[t.s]\n[[t]]\n[t.s]\n", "k = 1979-05-27 07:32:00.1234567Z\n",
    "s = \"\"\"\\\n   \\\n  x\"\"\"\n", "l = '''''x'''''\n", "f = -0.0e+0_1\n",
    "i = 0b1_0\no = 0o7_7\nh = 0xA_b\n", "q = \"\\U0010FFFF\"\n", "t = 23:59:59.999999999\n",
]


def seeds():
    docs = [h.encode() for h in HANDWRITTEN]
    if os.path.isdir(CORPUS):
        for f in sorted(glob.glob(os.path.join(CORPUS, "**", "*.toml"), recursive=True)):
            docs.append(open(f, "rb").read())
    return docs


def mutate(rng, doc):
    text = doc.decode("utf-8", errors="replace")
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(5)
        i = rng.randint(0, len(text))
        if op == 0 and text:
            text = text[:i] + text[i + 1:]
        elif op == 1:
            text = text[:i] + rng.choice(ALPHABET) + text[i:]
        elif op == 2 and text:
            j = min(len(text), i + rng.randint(1, 3))
            text = text[:i] + rng.choice(ALPHABET) + text[j:]
        else:
            lines = text.split("\n")
            a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
            if op == 3:
                lines.insert(b, lines[a])
            else:
                lines[a], lines[b] = lines[b], lines[a]
            text = "\n".join(lines)
    return text.encode("utf-8")


def cases():
    rng = random.Random(SEED)
    out = []
    for d in seeds():
        out.append(d)
        out.extend(mutate(rng, d) for _ in range(MUTANTS_PER_DOC))
    return out


def typed(v):
    """A tomli value in the form norm() gives toml-test's JSON."""
    if isinstance(v, dict):
        return {k: typed(x) for k, x in v.items()}
    if isinstance(v, list):
        return [typed(x) for x in v]
    if isinstance(v, bool):
        return ("bool", "true" if v else "false")
    if isinstance(v, int):
        return ("integer", v)
    if isinstance(v, float):
        return ("float", "nan" if math.isnan(v) else v)
    if isinstance(v, str):
        return ("string", v)
    date = time = off = None
    if isinstance(v, (datetime.datetime, datetime.date)):
        date = ("%04d" % v.year, "%02d" % v.month, "%02d" % v.day)
    if isinstance(v, (datetime.datetime, datetime.time)):
        time = ("%02d" % v.hour, "%02d" % v.minute, "%02d" % v.second, v.microsecond * 1000)
    if isinstance(v, datetime.datetime) and v.tzinfo is not None:
        m = int(v.utcoffset().total_seconds()) // 60
        off = "Z" if m == 0 else "%s%02d:%02d" % ("-" if m < 0 else "+", abs(m) // 60, abs(m) % 60)
    kind = ("datetime" if off else "datetime-local") if date and time else \
        ("date-local" if date else "time-local")
    return (kind, (date or (None,) * 3) + (time or (None,) * 3 + (0,)) + (off,))


def micro(v):
    """Fractions of a second to the microsecond, tomli's precision."""
    if isinstance(v, dict):
        return {k: micro(x) for k, x in v.items()}
    if isinstance(v, list):
        return [micro(x) for x in v]
    if isinstance(v, tuple) and isinstance(v[1], tuple) and len(v[1]) == 8:
        f = list(v[1])
        f[6] = f[6] // 1000 * 1000
        return (v[0], tuple(f))
    return v


def tomli_known_difference(doc):
    """Where tomli departs from TOML 1.0.0 itself (never counted as a
    disagreement): it cannot represent year 0 (Python's datetime starts at
    year 1), and it does not skip a UTF-8 byte order mark."""
    return doc.startswith(b"\xef\xbb\xbf") or b"0000-" in doc


def test_cairn_and_tomli_agree():
    docs = cases()
    assert len(docs) > 2000
    stdin = b"".join(b"%d\n" % len(d) + d for d in docs)
    r = subprocess.run([binary("tests/util/toml2json"), "--batch"], input=stdin,
                       capture_output=True, timeout=600)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.rstrip(b"\n").split(b"\n")
    assert len(lines) == len(docs)
    disagree, accepted = [], 0
    for doc, line in zip(docs, lines):
        ours = json.loads(line.decode("utf-8"))
        try:
            theirs = tomli.loads(doc.decode("utf-8"))
        except (UnicodeDecodeError, tomli.TOMLDecodeError, ValueError):
            theirs = None
        if tomli_known_difference(doc):
            continue
        if ("ok" in ours) != (theirs is not None):
            disagree.append("%r: cairn %s, tomli %s" % (
                doc[:200], "accepts" if "ok" in ours else "refuses: " + ours["error"],
                "accepts" if theirs is not None else "refuses"))
        elif theirs is not None:
            accepted += 1
            if micro(norm(ours["ok"])) != micro(typed(theirs)):
                disagree.append("%r: values differ: %s vs %s" % (doc[:200], ours["ok"], theirs))
    print("%d documents, %d accepted by both, %d disagreements" % (len(docs), accepted,
                                                                    len(disagree)))
    assert not disagree, "\n".join(disagree[:40])
