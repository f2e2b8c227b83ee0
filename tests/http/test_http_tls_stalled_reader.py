"""A client that stops reading a large reply over TLS must not hold a
worker either (issue 16).

Under TLS a reply handed to the loop (cn_conn_reply) is written there with
non-blocking SSL_write: its bytes are kept until the socket takes them, and
a file range goes through one record-sized buffer, read as the client
drains it.  The same round as test_http_stalled_reader.py over HTTPS: with
one worker per request pool, four stalled downloaders of a 6 MiB object
leave a fresh client's PUT and GET answered at once; they then read their
bodies byte-exact, and a keep-alive request after it is answered; a client
that goes away mid-reply leaves nothing behind (no sanitizer report at
exit)."""
import os
import socket
import ssl
import sys
import time

import boto3
from botocore.config import Config

from conftest import ADMIN_TOKEN, Server, assert_no_sanitizer
from test_http_stalled_reader import BIG, stalled_round

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "s3"))
from test_s3_server import tls_pair  # noqa: E402,F401 (the certificate fixture)

ADMIN_KEY, ADMIN_SECRET = ADMIN_TOKEN.split(":", 1)


def start(tmp_path, cert, key):
    cfg = tmp_path / "cairnd.toml"
    cfg.write_text("[server]\nquery_workers = 1\nstorage_workers = 1\n"
                   "[http]\nworker_share_percent = 0\nio_timeout_floor_ms = 15000\n"
                   "io_rate_bytes_per_sec = 1000000000\n")
    srv = Server(tmp_path / "data", args=["--jay", "off", "--scribe", "off", "--http",
                                          "127.0.0.1:0", "--config", str(cfg),
                                          "--http-tls-cert", cert, "--http-tls-key", key],
                 env={"CAIRN_ADMIN_TOKEN": ADMIN_TOKEN})
    return srv.start(wait_for=("http",))


def client(addr, cert):
    return boto3.client("s3", endpoint_url="https://%s:%d" % addr, aws_access_key_id=ADMIN_KEY,
                        aws_secret_access_key=ADMIN_SECRET, region_name="us-east-1", verify=cert,
                        config=Config(s3={"addressing_style": "path"}, signature_version="s3v4",
                                      retries={"max_attempts": 0}, connect_timeout=10,
                                      read_timeout=10))


def stalled_get(addr, s3, cert, key):
    """A presigned GET over TLS on a socket with a 4 KiB receive buffer,
    not read past the handshake."""
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "big", "Key": key})
    target = url.split("%s:%d" % addr, 1)[1]
    raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    raw.settimeout(30)
    raw.connect(addr)
    ctx = ssl.create_default_context(cafile=cert)
    s = ctx.wrap_socket(raw, server_hostname=addr[0])
    s.sendall(b"GET %s HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (target.encode(), addr[0].encode(),
                                                          addr[1]))
    return s


def test_stalled_tls_downloaders_leave_the_workers_free(tmp_path, servers, tls_pair):  # noqa: F811
    cert, key = tls_pair
    srv = start(tmp_path, cert, key)
    servers.append(srv)
    addr = srv.addrs["http"]
    s3 = client(addr, cert)
    s3.create_bucket(Bucket="big")
    data = os.urandom(BIG)
    s3.put_object(Bucket="big", Key="obj", Body=data)
    gone = stalled_get(addr, s3, cert, "obj")  # hangs up with its reply pending
    time.sleep(0.3)
    gone.close()
    stalled_round(addr, s3, "obj", data, opener=lambda: stalled_get(addr, s3, cert, "obj"),
                  fresh_client=lambda: client(addr, cert))
    srv.stop()
    assert_no_sanitizer(srv.output())
