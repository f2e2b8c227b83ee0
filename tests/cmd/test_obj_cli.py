"""`cairn mb|rb|ls|put|get|cat|rm|cp|stat` end to end through the real cairnd,
with the endpoint and credential from flags and from the environment."""
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "client"))
from clitools import cairn, endpoint, md5, multipart_etag, ok, sha256, stat_fields  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "jay"))
from jayfixtures import conn  # noqa: E402


def test_every_verb_with_flags_and_environment(server_factory, tmp_path):
    srv = server_factory()
    for flags in (False, True):
        b = "flags" if flags else "env"
        assert ok(cairn(srv, "mb", b, flags=flags)) == ""
        assert b in ok(cairn(srv, "ls", flags=flags)).split()

        data = os.urandom(300000)
        src = tmp_path / f"{b}.txt"
        src.write_bytes(data)
        out = ok(cairn(srv, "put", str(src), f"{b}/docs/a.txt", "--meta", "owner=ann",
                       "--meta", "note=two words", flags=flags))
        assert f"{b}/docs/a.txt" in out and sha256(data) in out and md5(data) in out

        st = stat_fields(ok(cairn(srv, "stat", f"{b}/docs/a.txt", flags=flags)))
        assert st["bucket"] == b and st["key"] == "docs/a.txt"
        assert st["size"] == str(len(data))
        assert st["content-type"] == "text/plain"          # guessed from .txt
        assert st["etag"] == md5(data) and st["sha256"] == sha256(data)
        assert st["last-modified"].endswith("Z") and "T" in st["last-modified"]
        assert sorted(st["meta"]) == ["note=two words", "owner=ann"]

        dst = tmp_path / f"{b}.out"
        assert ok(cairn(srv, "get", f"{b}/docs/a.txt", str(dst), flags=flags)) == ""
        assert dst.read_bytes() == data
        assert not [p for p in os.listdir(tmp_path) if ".cairn-" in p]   # no temporaries
        r = cairn(srv, "get", f"{b}/docs/a.txt", "-", flags=flags)
        assert r.returncode == 0 and r.stdout == data
        r = cairn(srv, "cat", f"{b}/docs/a.txt", flags=flags)
        assert r.returncode == 0 and r.stdout == data and r.stderr == b""

        out = ok(cairn(srv, "cp", f"{b}/docs/a.txt", f"{b}/copy/b.txt", flags=flags))
        assert f"{b}/copy/b.txt" in out and sha256(data) in out
        cp = stat_fields(ok(cairn(srv, "stat", f"{b}/copy/b.txt", flags=flags)))
        assert cp["sha256"] == st["sha256"] and cp["etag"] == st["etag"]
        assert cp["content-type"] == "text/plain" and cp["meta"] == st["meta"]
        assert cairn(srv, "cat", f"{b}/copy/b.txt", flags=flags).stdout == data

        assert cairn(srv, "rb", b, flags=flags).returncode == 6        # not empty
        for k in ("docs/a.txt", "copy/b.txt"):
            assert ok(cairn(srv, "rm", f"{b}/{k}", flags=flags)) == ""
        assert cairn(srv, "stat", f"{b}/docs/a.txt", flags=flags).returncode == 3
        assert ok(cairn(srv, "rb", b, flags=flags)) == ""
        assert b not in ok(cairn(srv, "ls", flags=flags)).split()


def test_flags_override_the_environment(server_factory):
    srv = server_factory()
    env = {"CAIRN_ENDPOINT": "127.0.0.1:1", "CAIRN_TOKEN": "nobody:nothing"}
    r = cairn(None, "mb", "over", token=None, env=env)
    assert r.returncode in (4, 5), r.stderr
    ok(cairn(srv, "mb", "over", flags=True, env=env))
    ok(cairn(srv, "ls", "over", "--endpoint=" + endpoint(srv), flags=True, env=env))


def test_put_get_round_trips(server_factory, tmp_path):
    srv = server_factory()
    ok(cairn(srv, "mb", "rtt"))
    for i, size in enumerate((0, 1, 65535, 65536, 65537, 3 << 20)):
        data = os.urandom(size)
        f = tmp_path / f"in{i}"
        f.write_bytes(data)
        out = ok(cairn(srv, "put", str(f), f"rtt/k{i}", "--content-type", "x/y"))
        assert sha256(data) in out and md5(data) in out
        got = tmp_path / f"out{i}"
        ok(cairn(srv, "get", f"rtt/k{i}", str(got)))
        assert got.read_bytes() == data
        assert sha256(cairn(srv, "cat", f"rtt/k{i}").stdout) == sha256(data)
        assert stat_fields(ok(cairn(srv, "stat", f"rtt/k{i}")))["content-type"] == "x/y"
    # From a pipe, below the part size: one PutObject.
    data = os.urandom(100000)
    out = ok(cairn(srv, "put", "-", "rtt/stdin", input=data))
    assert sha256(data) in out and "parts" not in out
    assert cairn(srv, "cat", "rtt/stdin").stdout == data
    st = stat_fields(ok(cairn(srv, "stat", "rtt/stdin")))
    assert st["content-type"] == "application/octet-stream" and st["etag"] == md5(data)
    # Files whose size says nothing (/proc) and FIFOs are read to their end.
    proc = open("/proc/version", "rb").read()
    out = ok(cairn(srv, "put", "/proc/version", "rtt/proc"))
    assert sha256(proc) in out
    assert cairn(srv, "cat", "rtt/proc").stdout == proc
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(data))
    writer.start()
    out = ok(cairn(srv, "put", str(fifo), "rtt/fifo"))
    writer.join()
    assert sha256(data) in out
    assert cairn(srv, "cat", "rtt/fifo").stdout == data
    # get into an existing directory writes DIR/<last key segment>.
    ok(cairn(srv, "put", str(tmp_path / "in1"), "rtt/deep/name.bin"))
    d = tmp_path / "dir"
    d.mkdir()
    ok(cairn(srv, "get", "rtt/deep/name.bin", str(d)))
    assert (d / "name.bin").read_bytes() == (tmp_path / "in1").read_bytes()


def test_large_file_goes_up_as_parallel_parts(server_factory, tmp_path):
    srv = server_factory()
    ok(cairn(srv, "mb", "big"))
    part = 5 << 20
    data = os.urandom(4 * part + 12345)
    f = tmp_path / "big.bin"
    f.write_bytes(data)
    out = ok(cairn(srv, "put", str(f), "big/file.bin", "--part-size", "5M", "--jobs", "3"))
    want = multipart_etag(data, part)
    assert want.endswith("-5")
    assert "5 parts" in out and want in out and sha256(data) in out, out
    st = stat_fields(ok(cairn(srv, "stat", "big/file.bin")))
    assert st["etag"] == want and st["size"] == str(len(data)) and st["sha256"] == sha256(data)
    assert st["content-type"] == "application/octet-stream"
    got = tmp_path / "big.out"
    ok(cairn(srv, "get", "big/file.bin", str(got)))
    assert sha256(got.read_bytes()) == sha256(data)
    # Only the completed object is listed.
    with conn(srv) as c:
        assert [o["key"] for o in c.list_objects("big")["contents"]] == ["file.bin"]

    # The same bytes from a pipe go up as sequential parts of the same size.
    out = ok(cairn(srv, "put", "-", "big/piped.bin", "--part-size", "5M", input=data))
    assert "5 parts" in out and want in out
    assert sha256(cairn(srv, "cat", "big/piped.bin").stdout) == sha256(data)

    # Exactly one part's worth from a pipe is still a whole object.
    out = ok(cairn(srv, "put", "-", "big/exact.bin", "--part-size", "5M", input=data[:part]))
    assert sha256(data[:part]) in out
    assert cairn(srv, "cat", "big/exact.bin").stdout == data[:part]


def test_ls(server_factory):
    srv = server_factory()
    ok(cairn(srv, "mb", "tree"))
    ok(cairn(srv, "mb", "other"))
    keys = ["a/1", "a/2", "a/b/3", "b/4", "c"]
    for k in keys:
        ok(cairn(srv, "put", "-", f"tree/{k}", input=k.encode()))

    lines = ok(cairn(srv, "ls")).splitlines()
    names = [ln.split()[-1] for ln in lines]
    assert names == ["other", "tree"]
    assert all(ln.split()[0].endswith("Z") for ln in lines)

    def listing(arg, *flags):
        rows = []
        for ln in ok(cairn(srv, "ls", arg, *flags)).splitlines():
            f = ln.split()
            rows.append(("PRE", f[-1]) if f[0] == "PRE" else (int(f[1]), f[2]))
        return rows

    assert listing("tree") == [("PRE", "a/"), ("PRE", "b/"), (1, "c")]
    assert listing("tree/a/") == [("PRE", "a/b/"), (3, "a/1"), (3, "a/2")]
    assert listing("tree/a") == [("PRE", "a/")]
    assert listing("tree/", "-r") == [(len(k), k) for k in keys]
    assert listing("tree/a/", "--recursive") == [(3, "a/1"), (3, "a/2"), (5, "a/b/3")]
    assert listing("tree/zzz") == []
    assert listing("other") == []

    # More keys than one page (1000): ls follows next_start_after.
    with conn(srv) as c:
        for i in range(1205):
            c.put_object("other", "k%05d" % i, b"x")
    rows = listing("other")
    assert [k for _, k in rows] == ["k%05d" % i for i in range(1205)]
