"""The gateway's splice relay at a clone's chunk sizes (issue 23): objects
of a get_objects stream with CN__GW_SPLICE (16 KiB) or more still to come
(a clone's chunks are 16-256 KiB) are moved from storage's socket to the
client through a pipe that each worker keeps, after the head of the object that the read-ahead
already holds.  Checked byte for byte through a real gateway, raw and LZ4,
with many chunk-sized objects interleaved with small and compressible ones
(which still go through the relay buffer); the kept pipes stay few: after
the first streams the gateway holds pipes, and neither its pipes nor its
open descriptors grow over further requests; and a client that closes in
the middle of a spliced stream leaves no stale bytes behind for the next
stream the same workers relay."""
import os
import socket

import pytest

from conftest import assert_no_sanitizer
from scribe_wire import CHUNK, OP, Conn, chunk_id

from test_gateway_streams import pair  # noqa: F401 (the storage + gateway fixture)

KIB = 1024


def chunk(b):
    return (CHUNK, chunk_id(b), b)


def clone_like():
    """Chunk-sized random objects around the splice threshold, each followed
    by a small or a compressible one."""
    sizes = [64 * KIB, 64 * KIB - 1, 64 * KIB + 1, 40 * KIB, 100 * KIB, 16 * KIB, 200 * KIB]
    out = []
    for i in range(36):
        out.append(chunk(os.urandom(sizes[i % len(sizes)])))
        if i % 3 == 0:
            out.append(chunk(os.urandom(1 + 97 * i)))
        elif i % 3 == 1:
            out.append(chunk(b"%06d" % i * (11000 + 31 * i)))  # compresses: a short LZ4 block
    return out


def fds(pid):
    """The process's open descriptors: (all, pipes)."""
    links = []
    for n in os.listdir("/proc/%d/fd" % pid):
        try:
            links.append(os.readlink("/proc/%d/fd/%s" % (pid, n)))
        except FileNotFoundError:
            pass
    return len(links), sum(1 for x in links if x.startswith("pipe:"))


def get_all(addr, rid, objs, caps):
    with Conn(addr, caps=caps) as c:
        refs = [(k, i) for k, i, _ in objs]
        got = c.get_objects(rid, refs)
        assert [(k, i) for k, i, _ in got] == refs
        for (_, _, data), (_, _, want) in zip(got, objs):
            assert data == want, len(want)
        # the stream ended where it should: the connection still serves
        assert c.get_objects(rid, [refs[1]])[0][2] == objs[1][2]


@pytest.mark.parametrize("caps", [0, 1])
def test_chunk_sized_streams_are_byte_exact_and_the_kept_pipes_do_not_grow(pair, caps):
    storage, gw = pair
    objs = clone_like()
    with Conn(gw.addrs["scribe"], caps=caps) as c:
        rid = c.repo_create("clone%d" % caps)["id"]
        c.put_objects(rid, objs)
    pid = gw.proc.pid
    _, pipes0 = fds(pid)
    for _ in range(3):
        get_all(gw.addrs["scribe"], rid, objs, caps)
    all1, pipes1 = fds(pid)
    if caps == 0:  # raw objects of 64 KiB are spliced, through a pipe kept afterwards
        assert pipes1 > pipes0, (pipes0, pipes1)
    for _ in range(12):
        get_all(gw.addrs["scribe"], rid, objs, caps)
        get_all(gw.addrs["scribe"], rid, objs[::-1], caps)
    all2, pipes2 = fds(pid)
    # a few workers may splice for the first time (two descriptors each), but a
    # request leaks none: 24 more requests would add at least 48
    assert pipes2 - pipes1 <= 8 and all2 - all1 <= 8, (all1, pipes1, all2, pipes2)


def test_a_client_gone_mid_splice_leaves_no_stale_bytes(pair):
    storage, gw = pair
    objs = [chunk(os.urandom(200 * KIB)) for _ in range(40)]  # 8 MiB: more than the sockets hold
    small = clone_like()
    with Conn(gw.addrs["scribe"]) as c:
        rid = c.repo_create("gone")["id"]
        c.put_objects(rid, objs + small)
    for _ in range(6):
        c = Conn(gw.addrs["scribe"])
        c.send_frame(OP["get_objects"], c.refs_payload(rid, [(k, i) for k, i, _ in objs]))
        c.recv_exact(24 + 4 + 42 + 100 * KIB)  # the stream has begun
        # close with unread bytes: an RST, and the gateway's splice to us fails
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        c.sock.close()
        for _ in range(2):  # whichever worker failed, a later stream is exact
            get_all(gw.addrs["scribe"], rid, small, 0)
    out = gw.output()
    assert_no_sanitizer(out)
