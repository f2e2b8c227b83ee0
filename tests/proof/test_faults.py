"""Faults: a full disk, failing writes/fsyncs/renames, a metadata database
held locked by another process.  In each case a request fails with a clear
error and the right Jay code (InternalError, status 0x05), nothing that was
acknowledged is lost, the server stays up, and it serves again once the
fault clears — without a restart.

Failing calls come from tests/proof/faultshim.so (LD_PRELOAD), switched on
and off while the server runs through its control file.  The full disk is a
size-limited tmpfs when this process may mount one (root), else the shim's
ENOSPC on every write under the data dir."""
import hashlib
import os
import subprocess
import time

import pytest

from proofutil import (faultshim_path, jay, jayclient, meta_db_locked, mount_tmpfs,  # noqa: F401
                       node_factory, wait_staging_empty)

BUCKET = "faults"


def put_ok(c, key, data):
    out = c.put_object(BUCKET, key, data)
    assert out["checksum"] == hashlib.sha256(data).hexdigest()
    return out


def assert_internal(exc_info):
    e = exc_info.value
    assert e.status == jayclient.ST_INTERNAL, e
    assert e.code == "InternalError", e
    assert e.message, "an error without a message"


def check_all(c, acked):
    for key, data in acked.items():
        info, body = c.get_object(BUCKET, key)
        assert body == data, key
        assert info["checksum"] == hashlib.sha256(data).hexdigest()


class Shim:
    def __init__(self, tmp_path):
        self.ctl = str(tmp_path / "fault.ctl")
        self.env = {"LD_PRELOAD": faultshim_path(), "CN_FAULT_CTL": self.ctl}
        self.off()

    def set(self, **kv):
        # A new inode each time: the shim notices the change on its next call.
        tmp = self.ctl + ".new"
        with open(tmp, "w") as f:
            f.write("".join("%s=%s\n" % kv_ for kv_ in kv.items()))
        os.replace(tmp, self.ctl)

    def off(self):
        tmp = self.ctl + ".new"
        with open(tmp, "w") as f:
            f.write("off\n")
        os.replace(tmp, self.ctl)

    def hits(self):
        try:
            with open(self.ctl + ".hits") as f:
                return int(f.read() or 0)
        except FileNotFoundError:
            return 0


FAULTS = [
    # (id, shim settings relative to the data dir, payload size)
    ("write-eio-blob", dict(ops="write", errno="EIO", pattern="{data}/staging/*"), 300_000),
    # 3 MiB: whole O_DIRECT chunks, written on the store's side pool while the
    # next fills (writer.c, W7); a chunk's failure fails the PUT all the same
    ("write-eio-large", dict(ops="write", errno="EIO", pattern="{data}/staging/*"), 3 << 20),
    ("write-enospc-large", dict(ops="write", errno="ENOSPC", pattern="{data}/staging/*",
                                after="1"), 3 << 20),
    ("write-enospc-all", dict(ops="write", errno="ENOSPC", pattern="{data}/*"), 300_000),
    # 4 KiB: under the pack threshold, so the full disk is met by the pack
    # append, not by a staged file as above
    ("write-enospc-packs", dict(ops="write", errno="ENOSPC", pattern="{data}/packs/*"), 4096),
    ("fsync-eio-all", dict(ops="fsync,fdatasync", errno="EIO", pattern="{data}/*"), 4096),
    # 100 KB: over the pack threshold (64 KiB) when [store] packs are on, so
    # still a journalled file that is renamed
    ("rename-eio-blob", dict(ops="rename", errno="EIO", pattern="{data}/*"), 100_000),
    ("write-eio-meta", dict(ops="write", errno="EIO", pattern="{data}/meta.db*"), 4096),
]


@pytest.mark.parametrize("fault", FAULTS, ids=[f[0] for f in FAULTS])
def test_injected_fault(node_factory, tmp_path, fault):
    _, settings, size = fault
    shim = Shim(tmp_path)
    node = node_factory(env=shim.env)
    data_dir = os.path.abspath(node.data_dir)
    acked = {}
    with jay(node) as c:
        c.create_bucket(BUCKET)
        for i in range(5):
            acked["before/%d" % i] = os.urandom(size)
            put_ok(c, "before/%d" % i, acked["before/%d" % i])

        shim.set(**{k: v.format(data=data_dir) for k, v in settings.items()})
        with pytest.raises(jayclient.JayError) as ei:
            c.put_object(BUCKET, "during", os.urandom(size))
        assert_internal(ei)
        assert shim.hits() > 0, "the fault was never met"
        # The same connection keeps working for reads while the fault holds.
        assert c.ping()
        check_all(c, acked)

        shim.off()
        acked["after"] = os.urandom(size)
        put_ok(c, "after", acked["after"])
        check_all(c, acked)
        with pytest.raises(jayclient.JayError) as ei:
            c.head_object(BUCKET, "during")
        assert ei.value.code == "NoSuchKey"
    assert node.server.proc.poll() is None, "the server died"
    assert wait_staging_empty(data_dir) == []

    # And all of it survives a restart, without the shim.
    node.stop()
    node.env = {}
    node.start()
    with jay(node) as c:
        check_all(c, acked)


def test_failure_mid_stream_keeps_connection_or_closes_cleanly(node_factory, tmp_path):
    """A large upload that meets a write error half-way is answered with
    InternalError (the body is drained or the connection closed); a new
    connection is served at once."""
    shim = Shim(tmp_path)
    node = node_factory(env=shim.env)
    data_dir = os.path.abspath(node.data_dir)
    with jay(node) as c:
        c.create_bucket(BUCKET)
    shim.set(ops="write", errno="EIO", pattern=data_dir + "/staging/*", after="8")
    c = jay(node)
    try:
        with pytest.raises((jayclient.JayError, OSError, ConnectionError)) as ei:
            c.put_object(BUCKET, "big", os.urandom(8 << 20))
        if isinstance(ei.value, jayclient.JayError):
            assert_internal(ei)
    finally:
        c.close()
    assert shim.hits() > 0
    shim.off()
    with jay(node) as c:
        put_ok(c, "big", b"x" * 1000)
    assert wait_staging_empty(data_dir) == []


def test_full_disk(node_factory, tmp_path):
    disk = str(tmp_path / "disk")
    size = 24 << 20
    if os.geteuid() != 0 or not mount_tmpfs(disk, size):
        pytest.skip("cannot mount a size-limited tmpfs here; the shim's ENOSPC case covers it")
    try:
        ballast = os.path.join(disk, "ballast")
        node = node_factory(data=os.path.join(disk, "data"))
        acked = {}
        with jay(node) as c:
            c.create_bucket(BUCKET)
            for i in range(3):
                acked["small/%d" % i] = os.urandom(50_000)
                put_ok(c, "small/%d" % i, acked["small/%d" % i])
            # Leave ~3 MiB free, then fill it with 1 MiB objects until one fails.
            st = os.statvfs(disk)
            free = st.f_bavail * st.f_frsize
            with open(ballast, "wb") as f:
                f.write(b"\0" * max(0, free - (3 << 20)))
            failed = None
            for i in range(16):
                data = os.urandom(1 << 20)
                try:
                    put_ok(c, "fill/%d" % i, data)
                    acked["fill/%d" % i] = data
                except jayclient.JayError as e:
                    failed = e
                    break
            assert failed is not None, "the disk never filled"
            assert failed.status == jayclient.ST_INTERNAL and failed.code == "InternalError", failed
        assert node.server.proc.poll() is None
        # Reads still work on a full disk.
        with jay(node) as c:
            check_all(c, acked)
        # Free the space: the server serves writes again, without a restart.
        os.unlink(ballast)
        with jay(node) as c:
            acked["after"] = os.urandom(1 << 20)
            put_ok(c, "after", acked["after"])
            check_all(c, acked)
        assert wait_staging_empty(node.data_dir) == []
        node.stop()
        node.start()
        with jay(node) as c:
            check_all(c, acked)
        node.stop()
    finally:
        subprocess.run(["umount", "-l", disk], capture_output=True)


def test_metadata_db_locked(node_factory):
    node = node_factory()
    acked = {}
    with jay(node) as c:
        c.create_bucket(BUCKET)
        acked["k"] = os.urandom(4096)
        put_ok(c, "k", acked["k"])
    c = jay(node)     # connected (authenticated) before the lock is taken
    with meta_db_locked(node.data_dir):
        t0 = time.time()
        with pytest.raises(jayclient.JayError) as ei:
            c.put_object(BUCKET, "while-locked", os.urandom(4096))
        assert_internal(ei)
        waited = time.time() - t0
        assert waited < 30, "a locked database held the request for %.1fs" % waited
        assert c.ping()
    c.close()
    assert node.server.proc.poll() is None
    with jay(node) as c:
        acked["after"] = os.urandom(4096)
        put_ok(c, "after", acked["after"])
        check_all(c, acked)
        with pytest.raises(jayclient.JayError) as ei:
            c.head_object(BUCKET, "while-locked")
        assert ei.value.code == "NoSuchKey"
