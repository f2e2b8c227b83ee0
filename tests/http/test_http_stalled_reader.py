"""A client that stops reading a large reply must not hold a worker.

The worker that serves a GET writes what the socket takes; when the socket
is full and the rest of the reply is a file range or bytes in memory, it
hands the connection with that rest to its network loop (cn_conn_reply),
which finishes the write as the client reads, under the same deadline, and
goes back to the worker pool.  With one worker per request pool, more
stalled downloaders than workers must leave a fresh client's signed PUT
and GET answered at once; the stalled ones then read their bodies whole and
byte-exact; and one that stays stalled past the write deadline is closed.

The downloaders ask for a receive buffer of 4 KiB, so that an object of a
few MiB is far more than the socket can hold."""
import os
import signal
import socket
import time

import boto3
from botocore.config import Config

from conftest import ADMIN_TOKEN, Server

ADMIN_KEY, ADMIN_SECRET = ADMIN_TOKEN.split(":", 1)
BIG = 6 << 20


def start(tmp_path, floor_ms):
    cfg = tmp_path / "cairnd.toml"
    cfg.write_text("[server]\nquery_workers = 1\nstorage_workers = 1\n"
                   "[http]\nworker_share_percent = 0\nio_timeout_floor_ms = %d\n"
                   "io_rate_bytes_per_sec = 1000000000\n" % floor_ms)
    srv = Server(tmp_path / "data", args=["--jay", "off", "--scribe", "off", "--http",
                                          "127.0.0.1:0", "--config", str(cfg)],
                 env={"CAIRN_ADMIN_TOKEN": ADMIN_TOKEN})
    return srv.start(wait_for=("http",))


def client(addr):
    return boto3.client("s3", endpoint_url="http://%s:%d" % addr, aws_access_key_id=ADMIN_KEY,
                        aws_secret_access_key=ADMIN_SECRET, region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}, signature_version="s3v4",
                                      retries={"max_attempts": 0}, connect_timeout=10,
                                      read_timeout=10))


def stalled_get(addr, s3, bucket, key):
    """A presigned GET on a socket with a 4 KiB receive buffer, not read."""
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": key})
    target = url.split("%s:%d" % addr, 1)[1]
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(30)
    s.connect(addr)
    s.sendall(b"GET %s HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (target.encode(), addr[0].encode(),
                                                          addr[1]))
    return s


def read_reply(s):
    """(head, body) of one reply with a Content-Length; the body may be cut
    short when the server closes."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            return buf, None
        buf += chunk
    head, _, body = buf.partition(b"\r\n\r\n")
    length = int([ln.split(b":", 1)[1] for ln in head.split(b"\r\n")
                  if ln.lower().startswith(b"content-length:")][0])
    while len(body) < length:
        try:
            chunk = s.recv(1 << 20)
        except ConnectionResetError:
            break
        if not chunk:
            break
        body += chunk
    return head, body


def timed(fn):
    t = time.monotonic()
    out = fn()
    return out, time.monotonic() - t


def with_big_object(tmp_path, servers, floor_ms):
    """A server (write deadline floor floor_ms) holding big/obj of BIG random
    bytes: (its HTTP address, an S3 client, the bytes)."""
    srv = start(tmp_path, floor_ms)
    servers.append(srv)
    addr = srv.addrs["http"]
    s3 = client(addr)
    s3.create_bucket(Bucket="big")
    data = os.urandom(BIG)
    s3.put_object(Bucket="big", Key="obj", Body=data)
    return addr, s3, data


def test_stalled_downloaders_leave_the_workers_free(tmp_path, servers):
    addr, s3, data = with_big_object(tmp_path, servers, 15000)
    stalled_round(addr, s3, "obj", data)


def test_stalled_downloaders_of_a_multipart_object_leave_the_workers_free(tmp_path, servers):
    """An object of several parts is a producer's body: each piece goes
    out by cn_conn_reply, and the next one is made on a worker only once
    the client took the last (CN_CONN_MORE)."""
    addr, s3, _ = with_big_object(tmp_path, servers, 15000)
    stalled_round(addr, s3, "parts", b"".join(multipart_object(s3)))


def stalled_round(addr, s3, key, data, opener=None, fresh_client=None):
    """Four stalled GETs of big/key leave a fresh PUT and GET answered at
    once, then read data whole, and a keep-alive request after it.  opener()
    opens one stalled GET and fresh_client() makes the fresh client (plain
    HTTP by default)."""
    opener = opener or (lambda: stalled_get(addr, s3, "big", key))
    fresh_client = fresh_client or (lambda: client(addr))
    small = os.urandom(100 << 10)  # past the inline size: a worker's file reply
    s3.put_object(Bucket="big", Key="small", Body=small)

    # More stalled downloaders than there are workers in both request pools.
    stalled = [opener() for _ in range(4)]
    time.sleep(0.5)  # each has had its turn on the one worker

    fresh = fresh_client()
    _, took = timed(lambda: fresh.put_object(Bucket="big", Key="fresh", Body=b"x" * 200000))
    assert took < 2, "a PUT waited %.1f s behind stalled readers" % took
    got, took = timed(lambda: fresh.get_object(Bucket="big", Key="small")["Body"].read())
    assert took < 2, "a GET waited %.1f s behind stalled readers" % took
    assert got == small

    # The stalled downloaders are still open; now they read, and get it all
    # (with a receive buffer that lets them read at loopback speed).
    for s in stalled:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    for s in stalled:
        head, body = read_reply(s)
        assert head.startswith(b"HTTP/1.1 200 "), head[:200]
        assert body == data
    # Keep-alive: the connection reads its next request after the reply.
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "big", "Key": "small"})
    stalled[0].sendall(b"GET %s HTTP/1.1\r\nHost: %s:%d\r\n\r\n" %
                       (url.split("%s:%d" % addr, 1)[1].encode(), addr[0].encode(), addr[1]))
    head, body = read_reply(stalled[0])
    assert head.startswith(b"HTTP/1.1 200 ") and body == small
    for s in stalled:
        s.close()


def test_a_reader_stalled_past_the_deadline_is_closed(tmp_path, servers):
    addr, s3, data = with_big_object(tmp_path, servers, 1000)
    s = stalled_get(addr, s3, "big", "obj")
    time.sleep(3)  # the write deadline is 1 s (and a few ms for the bytes)
    head, body = read_reply(s)
    assert head.startswith(b"HTTP/1.1 200 "), head[:200]
    assert body is not None and len(body) < len(data)
    assert body == data[:len(body)]
    s.close()
    # The server is still serving.
    got = s3.get_object(Bucket="big", Key="obj")["Body"].read()
    assert got == data


def multipart_object(s3, bucket="big", key="parts", sizes=(5 << 20, 5 << 20, 2 << 20)):
    """bucket/key uploaded in parts of random bytes of the given sizes;
    returns the parts' bytes, in order."""
    parts = [os.urandom(n) for n in sizes]
    up = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    done = [{"PartNumber": i + 1, "ETag": s3.upload_part(
        Bucket=bucket, Key=key, UploadId=up, PartNumber=i + 1, Body=p)["ETag"]}
        for i, p in enumerate(parts)]
    s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=up,
                                 MultipartUpload={"Parts": done})
    return parts


def test_replies_in_parts_end_cleanly_when_clients_go_and_at_a_stop(tmp_path, servers):
    """Readers that hang up while their reply waits between parts leave
    nothing behind (the request, its producer and its guards are freed by
    close(): no sanitizer report at exit), and a graceful stop finishes a
    reply in parts within its grace period instead of cutting it."""
    addr, s3, _ = with_big_object(tmp_path, servers, 15000)
    data = b"".join(multipart_object(s3))
    gone = [stalled_get(addr, s3, "big", "parts") for _ in range(3)]
    kept = stalled_get(addr, s3, "big", "parts")
    time.sleep(0.5)
    for s in gone:
        s.close()
    srv = servers[0]
    srv.proc.send_signal(signal.SIGTERM)  # stop: the reply in parts is in flight
    time.sleep(0.3)
    kept.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    head, body = read_reply(kept)
    assert head.startswith(b"HTTP/1.1 200 "), head[:200]
    assert body == data
    kept.close()
    assert srv.proc.wait(30) == 0
    out = srv.output()
    assert "Sanitizer" not in out and "runtime error:" not in out, out
