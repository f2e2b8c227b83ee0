"""`cairn admin --data DIR auth migrate|backup|restore` through the real
command: backup writes the state and keys to a 0600 file; restore brings
back the backed-up state under a new incarnation (the revision kept) and the
keys as they were; migrate draws another incarnation; a damaged backup is
refused without touching the state."""
import os
import re
import stat

from conftest import binary, run

PW = "an administrator password"


def admin(data, *args, env=None):
    return run([binary("cairn"), "admin", "--data", data, "auth", *args], env=env or {})


def incarnation(out):
    m = re.search(r"^incarnation: ([0-9a-f]{32})$", out, re.M)
    assert m, out
    return m.group(1)


def revision(out):
    return int(re.search(r"^revision: (\d+)$", out, re.M).group(1))


def test_backup_restore_migrate(tmp_path):
    data = str(tmp_path / "data")
    backup = str(tmp_path / "auth.bak")
    r = admin(data, "init", env={"CAIRN_AUTH_ADMIN_PASSWORD": PW})
    assert r.returncode == 0, r.stderr
    first = incarnation(r.stdout)
    assert revision(r.stdout) == 1
    key = open(os.path.join(data, "auth", "access-ca.key"), "rb").read()

    r = admin(data, "backup", backup)
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE(os.stat(backup).st_mode) == 0o600
    assert PW.encode() not in open(backup, "rb").read()

    # The keys are replaced by the backup's on restore.
    os.remove(os.path.join(data, "auth", "access-ca.key"))
    r = admin(data, "restore", backup)
    assert r.returncode == 0, r.stderr
    restored = incarnation(r.stdout)
    assert restored != first
    assert revision(r.stdout) == 1
    assert open(os.path.join(data, "auth", "access-ca.key"), "rb").read() == key

    r = admin(data, "migrate")
    assert r.returncode == 0, r.stderr
    assert incarnation(r.stdout) not in (first, restored)


def test_damaged_backup_and_usage(tmp_path):
    data = str(tmp_path / "data")
    backup = str(tmp_path / "auth.bak")
    assert admin(data, "migrate").returncode == 1  # no state yet
    assert admin(data, "init", env={"CAIRN_AUTH_ADMIN_PASSWORD": PW}).returncode == 0
    assert admin(data, "backup", backup).returncode == 0
    raw = bytearray(open(backup, "rb").read())
    raw[100] ^= 1
    open(backup, "wb").write(bytes(raw))
    r = admin(data, "restore", backup)
    assert r.returncode == 1
    assert "damaged" in r.stderr
    assert admin(data, "backup").returncode == 2
    assert admin(data, "restore").returncode == 2
