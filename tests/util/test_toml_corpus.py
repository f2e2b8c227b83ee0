"""TOML 1.0.0 conformance: the toml-test corpus that Debian ships in
golang-github-burntsushi-toml-dev (scripts/deps.sh test installs it), through
the toml2json test binary.  Every valid document must give the expected JSON,
equal as data (dates, times and floats compared by value); every invalid one
must be refused with a line and column."""
import glob
import json
import math
import os
import re
import subprocess

import pytest

from conftest import binary

CORPUS = "/usr/share/gocode/src/github.com/BurntSushi/toml/internal/toml-test/tests"

# Documents that the corpus judges by a later TOML than 1.0.0, each with the
# reason; cairn must judge them the other way, and the tests check that.
EXCEPTIONS = {
    "valid/string/escape-esc.toml": "\\e is a TOML 1.1 escape; TOML 1.0.0 has no \\e",
}


def corpus(kind):
    if not os.path.isdir(CORPUS):
        pytest.skip("the toml-test corpus is not installed (apt-get install "
                    "golang-github-burntsushi-toml-dev; scripts/deps.sh test does)")
    files = sorted(glob.glob(os.path.join(CORPUS, kind, "**", "*.toml"), recursive=True))
    assert files, "no %s documents under %s" % (kind, CORPUS)
    return files


DT = re.compile(r"^(?:(\d{4})-(\d{2})-(\d{2}))?[Tt ]?(?:(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?)?"
                r"([Zz]|[+-]\d{2}:\d{2})?$")


def norm_datetime(s):
    m = DT.match(s)
    assert m, s
    y, mo, d, h, mi, sec, frac, off = m.groups()
    frac = (frac or "").ljust(9, "0")[:9]
    if off in ("Z", "z", "+00:00", "-00:00"):
        off = "Z"
    return (y, mo, d, h, mi, sec, int(frac), off)


def norm(v):
    """toml-test's JSON as plain comparable data."""
    if isinstance(v, list):
        return [norm(x) for x in v]
    if isinstance(v, dict) and set(v) == {"type", "value"} and isinstance(v["type"], str) \
            and isinstance(v["value"], str):
        t, s = v["type"], v["value"]
        if t == "float":
            f = float(s.replace("_", ""))
            return ("float", "nan" if math.isnan(f) else f)
        if t == "integer":
            return ("integer", int(s))
        if t.startswith("date") or t.startswith("time"):
            return (t, norm_datetime(s))
        return (t, s)
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    return v


def parse(path):
    return subprocess.run([binary("tests/util/toml2json"), path], capture_output=True,
                          timeout=30)


def test_valid_documents_match_their_json():
    files = corpus("valid")
    failures = []
    for f in files:
        name = os.path.relpath(f, CORPUS)
        r = parse(f)
        if name in EXCEPTIONS:
            if r.returncode != 1:
                failures.append("%s: accepted, but %s" % (name, EXCEPTIONS[name]))
            continue
        if r.returncode != 0:
            failures.append("%s: refused: %s" % (name, r.stderr.decode(errors="replace").strip()))
            continue
        want = json.load(open(f[:-5] + ".json", encoding="utf-8"))
        got = json.loads(r.stdout.decode("utf-8"))
        if norm(got) != norm(want):
            failures.append("%s: got %s, want %s" % (name, got, want))
    print("valid: %d of %d pass (%d by the exceptions)" % (len(files) - len(failures), len(files),
                                                          len(EXCEPTIONS)))
    assert not failures, "\n".join(failures)


def test_invalid_documents_are_refused_with_a_position():
    files = corpus("invalid")
    failures = []
    for f in files:
        name = os.path.relpath(f, CORPUS)
        if name in EXCEPTIONS:
            continue
        r = parse(f)
        err = r.stderr.decode(errors="replace")
        if r.returncode == 0:
            failures.append("%s: accepted" % name)
        elif r.returncode != 1 or not re.search(r"line \d+, column \d+: ", err):
            failures.append("%s: refused without a position: %r" % (name, err))
    print("invalid: %d of %d pass" % (len(files) - len(failures), len(files)))
    assert not failures, "\n".join(failures)
