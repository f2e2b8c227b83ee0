"""The gateway's plaintext reply relay through the worker's pipe (issue 23):
item and LZ4 block headers are peeked at storage's socket, not read, so an
object with CN__GW_SPLICE (16 KiB) or more to come moves with its header
from storage's socket into the pipe, several objects to a pipe-full, and
no byte of it is copied through the gateway's user space; small objects
and runs of headers are still read many at a time and go into the pipe in
order.  Checked byte for byte at the edges of the peeks (runs of absent
items longer than one step's peeks, a stream that ends in a large object
or in absent items, objects at the threshold), raw and LZ4, and, by
tracing the gateway's system calls, that a stream of large objects is not
copied through user space (the relay before this one read each object's
first 16 KiB and wrote them out)."""
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

from scribe_wire import CHUNK, Conn, chunk_id

from test_gateway_streams import pair  # noqa: F401 (the storage + gateway fixture)

KIB = 1024


def chunk(b):
    return (CHUNK, chunk_id(b), b)


def absent(i):
    return (CHUNK, bytes([7, i]) * 16)


def check(addr, rid, want, caps):
    with Conn(addr, caps=caps) as c:
        refs = [(k, i) for k, i, *_ in want]
        got = c.get_objects(rid, refs)
        assert [(k, i) for k, i, _ in got] == refs
        for (_, _, data), w in zip(got, want):
            assert data == (w[2] if len(w) == 3 else None), len(w[2]) if len(w) == 3 else None
        # the stream ended where it should: the connection still serves
        assert c.get_objects(rid, refs[:1])[0][2] == (want[0][2] if len(want[0]) == 3 else None)


@pytest.mark.parametrize("caps", [0, 1])
def test_peeked_headers_at_their_edges_are_byte_exact(pair, caps):
    storage, gw = pair
    big = [chunk(os.urandom(n)) for n in (16 * KIB, 16 * KIB + 1, 64 * KIB, 100 * KIB,
                                          300 * KIB, 40 * KIB)]
    small = [chunk(os.urandom(n)) for n in (1, 500, 16 * KIB - 1, 3000)]
    text = chunk(b"peek" * 30000)  # compresses: a short LZ4 block
    with Conn(gw.addrs["scribe"], caps=caps) as c:
        rid = c.repo_create("peek%d" % caps)["id"]
        c.put_objects(rid, big + small + [text])
    run = [absent(i) for i in range(12)]  # 12 x 34 bytes: more than one step's peeks
    asks = [
        big,                                   # ends in a large object
        big[:2] + run,                         # ends in a run of absent items
        [big[2]] + run + [big[3]] + run[:1] + [big[4]],
        [small[0], big[0], small[1], big[1], small[2], big[2], small[3], text, big[3]],
        [text, big[4], text, small[0]],
        run[:3] + big[:3] + run[3:],
        [big[5]],
    ]
    for want in asks:
        for _ in range(2):  # a fresh and a pooled upstream connection
            check(gw.addrs["scribe"], rid, want, caps)


def gateway_copies(trace_dir):
    """Bytes the traced gateway read from sockets into user space (recvfrom
    without MSG_PEEK), over every thread's trace file."""
    total = 0
    pat = re.compile(r"^recvfrom\(\d+, .*, \d+, ([A-Z_|0-9]+), .*\) = (\d+)")
    for name in os.listdir(trace_dir):
        with open(os.path.join(trace_dir, name)) as f:
            for line in f:
                m = pat.match(line)
                if m and "MSG_PEEK" not in m.group(1):
                    total += int(m.group(2))
    return total


def test_large_objects_are_not_copied_through_the_gateway(pair, tmp_path):
    if not shutil.which("strace"):
        pytest.skip("strace is not installed")
    storage, gw = pair
    objs = [chunk(os.urandom(96 * KIB)) for _ in range(24)]  # 2.25 MiB of chunk-sized objects
    with Conn(gw.addrs["scribe"]) as c:
        rid = c.repo_create("nocopy")["id"]
        c.put_objects(rid, objs)
    check(gw.addrs["scribe"], rid, objs[:2], 0)  # an upstream connection in the pool
    trace = tmp_path / "trace"
    trace.mkdir()
    st = subprocess.Popen(["strace", "-f", "-ff", "-qq", "-s", "0", "-e", "trace=recvfrom", "-o",
                           str(trace / "t"), "-p", str(gw.proc.pid)],
                          stderr=subprocess.PIPE)
    deadline = time.time() + 10
    while time.time() < deadline and len(os.listdir(trace)) < 2 and st.poll() is None:
        time.sleep(0.05)  # one file per thread once attached
    if st.poll() is not None:
        pytest.skip("strace cannot attach: %s" % st.stderr.read().decode(errors="replace"))
    time.sleep(0.5)
    try:
        check(gw.addrs["scribe"], rid, objs, 0)
    finally:
        st.send_signal(signal.SIGINT)
        st.wait(30)
    copied = gateway_copies(trace)
    # the request, the reply's header and the first read-ahead (16 KiB) at
    # most, of 2.25 MiB; copying each object's head would be 24 x 16 KiB
    assert 0 < copied <= 48 * KIB, copied
