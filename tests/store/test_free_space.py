"""The free-space reserve (docs/store.md "Free space"; src/store/space.c):
new blob bytes are refused while the data directory's file system has less
than the reserve free, so the last of the disk stays for deletes and
metadata and an operator can always free space through the API.

test_full_disk_still_deletes: the data directory on a 40 MiB tmpfs (the
default reserve: 8 MiB, the floor of 1 %).  PUTs of 1 MiB and smaller
objects until they are refused (500, with the reserve still free); then
deletes of half the objects all succeed, the sweeper (grace 1 s) gives the
space back, and PUTs succeed again; every acknowledged object reads back,
also after a restart.  Before the reserve, the disk filled to its last
byte and every DELETE failed too ("No space left on device"): nothing could
be freed through the API."""
import os
import re
import sys
import time

import pytest
from botocore.exceptions import ClientError

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "s3"))
from conftest import Server, assert_no_sanitizer, small_fs  # noqa: E402
from s3fixtures import S3Server, s3_args  # noqa: E402

SIZES = (1 << 20, 4096, 100000)
RESERVE = 8 << 20


def free_bytes(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def start(data):
    env = {"CAIRN_SWEEP_GRACE_SECONDS": "1", "CAIRN_SWEEP_INTERVAL_SECONDS": "1"}
    return S3Server(Server(data, args=s3_args([]), env=env).start(wait_for=("http", "jay")))


def test_full_disk_still_deletes(tmp_path):
    with small_fs(tmp_path / "small", "40m") as mnt:
        node = start(mnt / "data")
        try:
            fill_delete_refill(node, mnt)
        finally:
            node.server.stop()


def fill_delete_refill(node, mnt):
    s3 = node.client()
    s3.create_bucket(Bucket="full")
    acked, i = {}, 0
    while True:
        body, key = os.urandom(SIZES[i % 3]), "k%04d" % i
        try:
            s3.put_object(Bucket="full", Key=key, Body=body)
            acked[key] = body
        except ClientError as e:
            assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 500
            break
        i += 1
        assert i < 1000, "never refused"
    left = free_bytes(mnt)
    print("refused after %d PUTs, %d bytes still free" % (len(acked), left))
    assert left > RESERVE - (1 << 20) - (4 << 20)  # the reserve, less a write and zeros ahead
    for key in list(acked)[::2]:
        s3.delete_object(Bucket="full", Key=key)
        del acked[key]
    deadline = time.monotonic() + 30
    while True:  # the sweeper gives the deleted blobs' space back
        try:
            s3.put_object(Bucket="full", Key="after", Body=b"x" * 5000)
            acked["after"] = b"x" * 5000
            break
        except ClientError:
            assert time.monotonic() < deadline, "no room came back"
            time.sleep(0.5)
    for key, body in acked.items():
        assert s3.get_object(Bucket="full", Key=key)["Body"].read() == body, key
    node.server.stop()
    out = node.server.output()
    assert_no_sanitizer(out)
    assert "under the reserve" in out
    node2 = start(mnt / "data")
    try:
        s3 = node2.client()
        for key, body in acked.items():
            assert s3.get_object(Bucket="full", Key=key)["Body"].read() == body, key
    finally:
        node2.server.stop()


def test_start_on_a_disk_another_filled(tmp_path):
    """Something else fills the data file system to its last byte while
    cairnd is stopped.  cairnd lets go of its spacer (DATA/space.spacer, 8
    MiB, taken while the disk had room) and starts: reads and deletes work,
    new blobs are refused; with room back, the spacer is taken again.
    Before, cairnd could not start at all ("cannot open the metadata
    service": SQLite could not create its -wal and -shm files)."""
    with small_fs(tmp_path / "small", "64m") as mnt:
        data, spacer = mnt / "data", mnt / "data" / "space.spacer"
        node = start(data)
        try:
            s3 = node.client()
            s3.create_bucket(Bucket="kept")
            bodies = {"k%d" % i: os.urandom(100000) for i in range(5)}
            for key, body in bodies.items():
                s3.put_object(Bucket="kept", Key=key, Body=body)
            assert spacer.stat().st_size == 8 << 20
        finally:
            node.server.stop()
        ballast = mnt / "ballast"
        fd = os.open(ballast, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            while os.write(fd, b"\0" * (1 << 16)):
                pass
        except OSError:  # ENOSPC: full to the last block
            pass
        finally:
            os.close(fd)
        node = start(data)
        try:
            s3 = node.client()
            assert s3.get_object(Bucket="kept", Key="k1")["Body"].read() == bodies["k1"]
            s3.delete_object(Bucket="kept", Key="k2")
            with pytest.raises(ClientError):
                s3.put_object(Bucket="kept", Key="new", Body=os.urandom(100000))
        finally:
            node.server.stop()
        out = node.server.output()
        assert_no_sanitizer(out)
        assert "released the 8 MiB spacer" in out
        assert not spacer.exists()
        os.unlink(ballast)
        node = start(data)
        try:
            assert spacer.stat().st_size == 8 << 20
            s3 = node.client()
            assert s3.get_object(Bucket="kept", Key="k3")["Body"].read() == bodies["k3"]
        finally:
            node.server.stop()


def test_a_body_of_unknown_length_stops_at_the_reserve(tmp_path):
    """A blob put whose body is chunked, with no length declared, is held to
    the reserve as it grows: a body that would leave less than the reserve
    free is refused (507 no_space), as the same body with its length
    declared is refused before its first byte, and its staged bytes go.
    Before, the reserve was asked only when the writer opened, with nothing
    to ask for: the chunked body was stored and left the disk under its
    reserve."""
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "blobops"))
    from blobsclient import Ops
    with small_fs(tmp_path / "small", "64m") as mnt:
        node = start(mnt / "data")
        try:
            ops = Ops(node.server)
            size = free_bytes(mnt) - RESERVE // 2  # would leave half the reserve
            body = os.urandom(1 << 20) * (size >> 20)
            status, answer = ops.put("big", chunks_of(body))
            print("a chunked body of %d bytes: %d %s" % (len(body), status, answer))
            assert status == 507 and answer["error"]["reason"] == "no_space", answer
            status, answer = ops.put("big", body)
            assert status == 507 and answer["error"]["reason"] == "no_space", answer
            assert free_bytes(mnt) > size  # the refused bytes went
            status, answer = ops.put("big", chunks_of(os.urandom(3 << 20)))
            assert status == 200, answer  # a body that fits is stored
        finally:
            node.server.stop()
        assert_no_sanitizer(node.server.output())


def chunks_of(data):
    for off in range(0, len(data), 1 << 20):
        yield data[off:off + (1 << 20)]


def test_refusals_do_not_flood_the_log(tmp_path):
    """A full disk refuses every new blob, on every face: the log says so a
    few times a second at most, and counts the lines it left out, rather
    than one line per refused request (a log on the same full disk)."""
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "blobops"))
    import requests
    from blobsclient import OPS, Ops
    with small_fs(tmp_path / "small", "40m") as mnt:
        node = start(mnt / "data")
        try:
            s3, ops = node.client(), Ops(node.server)
            s3.create_bucket(Bucket="full")
            ballast = mnt / "ballast"  # another program takes the room
            with open(ballast, "wb") as fh:
                while free_bytes(mnt) > RESERVE // 2:
                    fh.write(b"\0" * (1 << 20))
            mark = len(node.server.output())
            refused = 0
            t0 = time.monotonic()
            for i in range(60):
                with pytest.raises(ClientError) as e:
                    s3.put_object(Bucket="full", Key="k%d" % i, Body=os.urandom(5000))
                assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500
                status, answer = ops.put("full", os.urandom(5000))
                assert status == 507, answer
                refused += 2
            secs = time.monotonic() - t0
            lines = [ln for ln in node.server.output()[mark:].splitlines()
                     if "No space left" in ln or "under the reserve" in ln]
            print("%d refusals in %.1f s: %d log lines" % (refused, secs, len(lines)))
            print("\n".join(lines[:12]))
            assert len(lines) <= 10 * (secs + 1) + 2, lines[:20]  # and the store's own
            # the status line names the status (it said "Internal Server Error")
            r = requests.post(ops.base + OPS + "/blobs/put", data=b"x" * 5000,
                              headers=ops.headers({"Cairn-Offer": '{"namespace": "full"}'}))
            assert (r.status_code, r.reason) == (507, "Insufficient Storage")
            time.sleep(1.1)  # the next second's first line counts what was left out
            with pytest.raises(ClientError):
                s3.put_object(Bucket="full", Key="later", Body=os.urandom(5000))
            assert re.search(r"s3: \d+ more line\(s\) like the next were left out",
                             node.server.output()[mark:]), node.server.output()[mark:][-3000:]
            os.unlink(ballast)
            s3.put_object(Bucket="full", Key="after", Body=b"room again")
        finally:
            node.server.stop()
        out = node.server.output()
        assert_no_sanitizer(out)
