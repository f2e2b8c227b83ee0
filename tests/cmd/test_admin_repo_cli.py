"""`cairn admin --data DIR repo backup|restore` through the real cairnd: a
backup taken offline, history moved on, the backup restored over it: the
repository is back at the backed-up change with a new incarnation, so a
workspace that knew it is refused with incarnation_mismatch and a fresh
clone gets the backed-up files; damaged backups are refused whole."""
import os

from cairnutil import SCRIBE_ONLY, admin_repo, read, repo, scribe_ep, write


def test_backup_restore_new_incarnation(server_factory, tmp_path):
    data = tmp_path / "srv"
    s = server_factory(args=SCRIBE_ONLY, data=data, wait_for=("scribe",))
    ep = scribe_ep(s)
    repo(ep, "create", "art", "--lz4-storage")
    ws = str(tmp_path / "ws")
    repo(ep, "clone", "art", ws)
    big = os.urandom(3 << 20)
    write(os.path.join(ws, "big.bin"), big)
    write(os.path.join(ws, "d/small.txt"), b"hello\n")
    repo(ep, "submit", ws, "-m", "first")
    repo(ep, "describe", ws, "1", "-m", "a note")
    before = repo(ep, "info", "art").stdout
    s.stop()

    # a running server holds the store: the admin command says so
    s.start(wait_for=("scribe",))
    r = admin_repo(data, "backup", "art", str(tmp_path / "b.bak"))
    assert r.returncode == 1 and "busy" in r.stderr, r.stderr
    assert not os.path.exists(tmp_path / "b.bak")
    s.stop()

    r = admin_repo(data, "backup", "art", str(tmp_path / "art.bak"))
    assert r.returncode == 0, r.stderr
    assert "at change 1" in r.stderr
    assert not os.path.exists(str(tmp_path / "art.bak") + ".partial")
    r = admin_repo(data, "backup", "nope", str(tmp_path / "nope.bak"))
    assert r.returncode == 1 and "no such repository" in r.stderr

    # history moves on after the backup
    s.start(wait_for=("scribe",))
    ep = scribe_ep(s)
    write(os.path.join(ws, "later.txt"), b"after the backup\n")
    repo(ep, "submit", ws, "-m", "second")
    assert "head 2" in repo(ep, "info", "art").stdout
    s.stop()

    # an existing repository is replaced only on request
    r = admin_repo(data, "restore", str(tmp_path / "art.bak"))
    assert r.returncode == 1 and "--replace" in r.stderr
    # a damaged backup is refused whole
    raw = bytearray(read(tmp_path / "art.bak"))
    bad = bytearray(raw)
    bad[len(bad) // 2] ^= 0x40
    write(str(tmp_path / "bad.bak"), bytes(bad))
    r = admin_repo(data, "restore", str(tmp_path / "bad.bak"), "--replace")
    assert r.returncode == 1 and "damaged" in r.stderr, r.stderr
    write(str(tmp_path / "short.bak"), bytes(raw[:-10]))
    r = admin_repo(data, "restore", str(tmp_path / "short.bak"), "--replace")
    assert r.returncode == 1 and "damaged" in r.stderr, r.stderr
    write(str(tmp_path / "junk.bak"), b"not a backup at all")
    r = admin_repo(data, "restore", str(tmp_path / "junk.bak"), "--replace")
    assert r.returncode == 1 and "not a repository backup" in r.stderr, r.stderr

    r = admin_repo(data, "restore", str(tmp_path / "art.bak"), "--replace")
    assert r.returncode == 0, r.stderr
    assert "new incarnation" in r.stderr and "at change 1" in r.stderr

    s.start(wait_for=("scribe",))
    ep = scribe_ep(s)
    after = repo(ep, "info", "art").stdout
    assert "head 1" in after
    field = lambda out, k: [l.split()[1] for l in out.splitlines() if l.startswith(k + " ")][0]
    assert field(after, "id") == field(before, "id")
    assert field(after, "incarnation") != field(before, "incarnation")
    assert "storage lz4" in after

    # the old workspace is refused: its incarnation is gone
    write(os.path.join(ws, "again.txt"), b"x")
    r = repo(ep, "submit", ws, "-m", "third", check=False)
    assert r.returncode == 6, (r.stdout, r.stderr)
    assert "incarnation" in r.stderr
    r = repo(ep, "sync", ws, check=False)
    assert r.returncode == 6 and "restored" in r.stderr

    # a fresh clone has the backed-up content, notes and history
    ws2 = str(tmp_path / "ws2")
    repo(ep, "clone", "art", ws2)
    assert read(os.path.join(ws2, "big.bin")) == big
    assert read(os.path.join(ws2, "d/small.txt")) == b"hello\n"
    assert not os.path.exists(os.path.join(ws2, "later.txt"))
    log = repo(ep, "log", ws2).stdout
    assert "first" in log and "second" not in log
    # and it accepts new history on the new incarnation
    write(os.path.join(ws2, "new.txt"), b"new history\n")
    out = repo(ep, "submit", ws2, "-m", "after restore").stdout
    assert "change 2" in out


def test_restore_into_empty_data_dir(server_factory, tmp_path):
    data = tmp_path / "a"
    s = server_factory(args=SCRIBE_ONLY, data=data, wait_for=("scribe",))
    ep = scribe_ep(s)
    repo(ep, "create", "music")
    ws = str(tmp_path / "ws")
    repo(ep, "clone", "music", ws)
    payload = os.urandom(700 << 10)
    write(os.path.join(ws, "song.wav"), payload)
    repo(ep, "submit", ws, "-m", "one")
    s.stop()
    bak = str(tmp_path / "m.bak")
    assert admin_repo(data, "backup", "music", bak).returncode == 0
    # another server's data directory receives it
    data2 = tmp_path / "b"
    assert admin_repo(data2, "restore", bak).returncode == 0
    s2 = server_factory(args=SCRIBE_ONLY, data=data2, wait_for=("scribe",))
    ep2 = scribe_ep(s2)
    ws2 = str(tmp_path / "ws2")
    repo(ep2, "clone", "music", ws2)
    assert read(os.path.join(ws2, "song.wav")) == payload
