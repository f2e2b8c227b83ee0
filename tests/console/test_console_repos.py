"""The console's repository calls against a real cairnd, beyond the main
branch's basics in test_console_api.py (docs/console.md): the change log, a
change, the tree and a file of any branch (`branch=`); tree pages that name
each directory level entry exactly once however the page and read
boundaries cut a subdirectory's rows (CAIRN_CONSOLE_REPOS_PAGE makes pages
of a few entries); and a file download that carries exactly the headers S3
GetObject gives stored bytes."""
import os

import pytest

from cairnutil import cairn_at
from test_console_api import Api, scribe_ep


def node_with(server_factory, page=None):
    env = {"CAIRN_CONSOLE_REPOS_PAGE": str(page)} if page else {}
    return server_factory(args=["--jay", "off", "--scribe", "127.0.0.1:0", "--http",
                                "127.0.0.1:0"], wait_for=("http", "scribe"), env=env)


def write(ws, rel, data):
    p = os.path.join(ws, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(data)


def ids(doc):
    return [c["id"] for c in doc["changes"]]


def test_log_change_tree_and_file_follow_the_branch(server_factory, tmp_path):
    node = node_with(server_factory)
    ep = scribe_ep(node)
    ws = str(tmp_path / "ws")
    cairn_at(ep, "repo", "create", "art")
    cairn_at(ep, "repo", "clone", "art", ws)
    write(ws, "README.md", b"one\n")
    cairn_at(ep, "repo", "submit", ws, "-m", "c1")
    write(ws, "src/a.c", b"int a;\n")
    cairn_at(ep, "repo", "submit", ws, "-m", "c2")
    cairn_at(ep, "repo", "branch", "create", "feature", cwd=ws)
    cairn_at(ep, "repo", "switch", "feature", cwd=ws)
    write(ws, "README.md", b"feature\n")
    write(ws, "feat/new.txt", b"new\n")
    cairn_at(ep, "repo", "submit", ws, "-m", "c3 on feature")
    cairn_at(ep, "repo", "switch", "main", cwd=ws)
    write(ws, "README.md", b"main\n")
    cairn_at(ep, "repo", "submit", ws, "-m", "c4 on main")
    api = Api(node.addrs["http"])

    info = api.ok("GET", "repos/art")
    br = {b["name"]: b for b in info["branches"]}
    assert br["main"]["head"] == 4 and br["main"].get("main") is True
    assert br["feature"]["head"] == 3 and br["feature"]["origin_change"] == 2

    main = api.ok("GET", "repos/art/changes")
    assert ids(main) == [4, 2, 1] and main["branch"] == "main"
    feat = api.ok("GET", "repos/art/changes?branch=feature")
    assert ids(feat) == [3, 2, 1] and feat["branch"] == "feature"
    # Rows name the branch that accepted each change (the inherited ones: main).
    assert [c["branch"] for c in feat["changes"]] == ["feature", "main", "main"]
    page = api.ok("GET", "repos/art/changes?branch=feature&max=1&before=3")
    assert ids(page) == [2] and page["next"] == 2
    assert ids(api.ok("GET", "repos/art/changes?branch=feature&path=feat")) == [3]
    assert api.call("GET", "repos/art/changes?branch=nope")[0] == 404

    assert api.call("GET", "repos/art/changes/3")[0] == 404  # not on main
    c3 = api.ok("GET", "repos/art/changes/3?branch=feature")
    assert (c3["description"], c3["branch"]) == ("c3 on feature", "feature")
    assert sorted(p["path"] for p in c3["paths"]) == ["README.md", "feat/new.txt"]
    assert api.ok("GET", "repos/art/changes/1?branch=feature")["branch"] == "main"
    assert api.call("GET", "repos/art/changes/4?branch=feature")[0] == 404

    def names(q):
        doc = api.ok("GET", "repos/art/tree?" + q)
        return doc["change"], [e["name"] for e in doc["entries"]]

    # The default change is the branch's head, not the repository's.
    assert names("branch=feature") == (3, ["README.md", "feat", "src"])
    assert names("") == (4, ["README.md", "src"])
    assert names("branch=feature&change=2") == (2, ["README.md", "src"])
    assert api.call("GET", "repos/art/tree?branch=feature&change=4")[0] == 404
    assert api.call("GET", "repos/art/tree?branch=feature&change=1")[0] == 404  # before its origin
    assert api.raw("GET", "repos/art/file?branch=feature&path=README.md")[2] == b"feature\n"
    assert api.raw("GET", "repos/art/file?path=README.md")[2] == b"main\n"
    assert api.raw("GET", "repos/art/file?branch=feature&change=2&path=README.md")[2] == b"one\n"
    assert api.call("GET", "repos/art/file?path=feat/new.txt")[0] == 404


def test_file_download_has_the_stored_bytes_headers(server_factory, tmp_path):
    node = node_with(server_factory)
    ep = scribe_ep(node)
    ws = str(tmp_path / "ws")
    cairn_at(ep, "repo", "create", "art")
    cairn_at(ep, "repo", "clone", "art", ws)
    page = b"<html><script>fetch('/_cairn/console/api/tokens')</script></html>"
    write(ws, "site/index.html", page)
    cairn_at(ep, "repo", "submit", ws, "-m", "a page")
    api = Api(node.addrs["http"])
    st, hd, body = api.raw("GET", "repos/art/file?path=site/index.html")
    assert (st, body) == (200, page)
    # Exactly what S3 GetObject sends stored bytes (src/s3/object.c), once: no
    # second, console policy beside it.
    assert hd.get_all("Content-Security-Policy") == ["sandbox"], hd.get_all("Content-Security-Policy")
    assert hd.get_all("X-Content-Type-Options") == ["nosniff"]
    assert hd["Content-Type"] == "application/octet-stream"
    assert hd["Content-Disposition"] == "attachment; filename=\"index.html\"; filename*=UTF-8''index.html"
    assert hd["Cache-Control"] == "no-store"
    # An error of the same call is a console answer, with the console's policy.
    st, hd, _ = api.raw("GET", "repos/art/file?path=site/none.html")
    assert st == 404 and hd["Content-Security-Policy"].startswith("default-src 'none'")


# A level whose subdirectories straddle every alignment of pages and reads:
# "b-c.txt" and "b.txt" sort before "b/..." (bytes '-' and '.' precede '/'),
# "b0" right after b's subtree (the successor a subtree skip looks up),
# "b0d/" a directory starting with it, directories of 1..7 rows, and "big/",
# more rows than one answer may read (32 reads) at pages of 1 and 2.
LEVEL = {"big/%03d" % i: b"%d" % i for i in range(70)}
LEVEL |= {
    "a.txt": b"a", "b-c.txt": b"bc", "b.txt": b"b", "b0": b"b0", "b0d/x": b"x",
    "b/1": b"1", "b/2": b"2", "b/3": b"3", "b/4": b"4", "b/5": b"5", "b/z/deep": b"d",
    "c/1": b"c", "d.txt": b"d", "e/1": b"1", "e/2": b"2", "f.txt": b"f",
    "g/1": b"1", "g/2": b"2", "g/3": b"3", "g/4/5/6": b"6", "g/7": b"7", "h": b"h",
}


def level(files, prefix=""):
    """The one-level listing of files under prefix: [(name, type)], in the order of the
    snapshot's rows (a directory "d" sorts as "d/", after "d-x" and "d.x")."""
    seen = {}
    for p in files:
        if prefix and not p.startswith(prefix + "/"):
            continue
        rel = p[len(prefix) + 1:] if prefix else p
        name, _, rest = rel.partition("/")
        seen[name + "/" if rest else name] = (name, "dir" if rest else "file")
    return [seen[k] for k in sorted(seen, key=lambda s: s.encode())]


@pytest.mark.parametrize("page", [1, 2, 3, 5])
def test_tree_pages_name_each_entry_once(server_factory, tmp_path, page):
    node = node_with(server_factory, page)
    ep = scribe_ep(node)
    ws = str(tmp_path / "ws")
    cairn_at(ep, "repo", "create", "art")
    cairn_at(ep, "repo", "clone", "art", ws)
    files = {"top/" + k: v for k, v in LEVEL.items()}
    files.update({"z.txt": b"z"})
    for k, v in files.items():
        write(ws, k, v)
    cairn_at(ep, "repo", "submit", ws, "-m", "a wide tree")
    api = Api(node.addrs["http"])
    for prefix in ("top", "top/g", ""):
        got, token, pages = [], None, 0
        while True:
            q = "path=" + prefix + ("&token=" + token if token else "")
            doc = api.ok("GET", "repos/art/tree?" + q.replace("/", "%2F"))
            assert len(doc["entries"]) <= page, doc
            got += [(e["name"], e["type"]) for e in doc["entries"]]
            pages += 1
            token = doc["next"]
            if token is None:
                break
            assert pages < 100, (got[-8:], token)
        assert got == level(files, prefix), (prefix, got)
        assert pages >= len(got) // page
    # Files keep their details across a skipped subtree: "b0" follows b/.
    doc = api.ok("GET", "repos/art/tree?path=top&token=top%2Fb%2F")
    assert doc["entries"][0]["name"] == "b0" and doc["entries"][0]["size"] == 2
    assert api.call("GET", "repos/art/tree?path=top&token=top%2F%2F")[0] == 400
    # A path that is itself a file lists that file, whole.
    doc = api.ok("GET", "repos/art/tree?path=top%2Fg%2F4%2F5%2F6")
    assert [(e["name"], e["type"]) for e in doc["entries"]] == [("top/g/4/5/6", "file")]
    assert doc["next"] is None
