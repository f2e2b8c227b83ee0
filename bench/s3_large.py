#!/usr/bin/python3
"""bench/s3_large: durable 1 GiB PUTs through cairn's S3 face against the
disk's own sequential write + fsync, on the same filesystem (issue 17).

  seq      write the object's bytes to a file in 1 MiB writes, then fsync
  put      one PutObject, anonymous, unsigned (curl -T from a page-cached
           file, as bench/s3.py)
  put_sig  one PutObject, SigV4 with the payload's SHA-256 in
           x-amz-content-sha256 (the server checks it)
  mp       one multipart upload, 64 MiB parts, PARALLEL parts at a time,
           each part signed with its payload SHA-256, then Complete
  mp_seq   the same with one part at a time, in order

The client is not the bottleneck: signatures and payload hashes are made
before the clock starts, bodies are in memory and go out by http.client
(sendall of a memoryview, the GIL released), parts on their own threads.
Each row is the best of ROUNDS; every PUT has content of its own (no CAS
hit); the writeback of the previous row is synced before the next starts.
Prints "name value unit" lines: MiB/s, cairnd CPU s/GiB, and each S3 row's
ratio to seq.

usage: bench/s3_large.py BUILD [--rounds N] [--mib N] [--parallel N] [--only ROWS]
"""
import datetime
import hashlib
import hmac
import http.client
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

REGION = "us-east-1"
BUCKET = "large"


def arg(name, default):
    if name in sys.argv:
        return sys.argv[sys.argv.index(name) + 1]
    return default


BUILD = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else "build"
ROUNDS = int(arg("--rounds", "2"))
MIB = int(arg("--mib", "1024"))
PARALLEL = int(arg("--parallel", "4"))
ONLY = arg("--only", "seq,put,put_sig,mp,mp_seq").split(",")
PART = 64 << 20
SIZE = MIB << 20


def say(name, value, unit):
    print("%s %s %s" % (name, value, unit), flush=True)


# The server under test is bench/s3.py's (started the same way, with its CPU
# reading); its build directory is this run's.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import s3 as _s3  # noqa: E402

_s3.BUILD = os.path.abspath(BUILD)
Cairnd = _s3.Cairnd


def sign(c, method, path, query, body_sha, extra=None):
    """SigV4 headers for one request (path-style, host 127.0.0.1:port)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    amz, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    host = "127.0.0.1:%d" % c.port
    h = {"host": host, "x-amz-content-sha256": body_sha, "x-amz-date": amz}
    h.update(extra or {})
    names = sorted(h)
    canon = "\n".join([method, path, query, "".join("%s:%s\n" % (n, h[n]) for n in names),
                       ";".join(names), body_sha])
    scope = "%s/%s/s3/aws4_request" % (day, REGION)
    sts = "\n".join(["AWS4-HMAC-SHA256", amz, scope, hashlib.sha256(canon.encode()).hexdigest()])
    k = ("AWS4" + c.secret).encode()
    for part in (day, REGION, "s3", "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    sig = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
    h["Authorization"] = ("AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s"
                          % (c.key, scope, ";".join(names), sig))
    return h


def request(c, method, path, query="", body=b"", signed=True, extra=None):
    sha = hashlib.sha256(body).hexdigest() if signed else None
    h = sign(c, method, path, query, sha, extra) if signed else dict(extra or {})
    return send(c, method, path + ("?" + query if query else ""), body, h)


def send(c, method, url, body, headers):
    conn = http.client.HTTPConnection("127.0.0.1", c.port, timeout=600)
    headers = dict(headers)
    headers["Content-Length"] = str(len(body))
    conn.putrequest(method, url, skip_host=True, skip_accept_encoding=True)
    for k, v in headers.items():
        conn.putheader(k, v)
    conn.endheaders()
    mv = memoryview(body)
    for off in range(0, len(mv), 8 << 20):
        conn.sock.sendall(mv[off:off + (8 << 20)])
    r = conn.getresponse()
    data = r.read()
    conn.close()
    if r.status // 100 != 2:
        raise RuntimeError("%s %s: %d %s" % (method, url, r.status, data[:300]))
    return r, data


def fresh(tag):
    """SIZE bytes of content of their own (random blocks, a unique head)."""
    block = os.urandom(1 << 20)
    buf = bytearray(block * MIB)
    head = ("%-64s" % (tag + str(time.time()))).encode()
    buf[:64] = head
    for i in range(1, MIB):   # no two MiB the same: no dedup anywhere
        buf[i << 20:(i << 20) + 8] = i.to_bytes(8, "little")
    return bytes(buf)


def settle():
    subprocess.run(["sync"], check=True)


def seq_probe(work, body):
    path = os.path.join(work, "seq.bin")
    settle()
    t = time.time()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    mv = memoryview(body)
    for off in range(0, len(mv), 1 << 20):
        os.write(fd, mv[off:off + (1 << 20)])
    os.fsync(fd)
    os.close(fd)
    secs = time.time() - t
    os.unlink(path)
    return secs


def put_unsigned(c, work, body, key):
    path = os.path.join(work, "put.bin")
    with open(path, "wb") as f:
        f.write(body)
    settle()
    t = time.time()
    r = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-T", path,
                        "http://127.0.0.1:%d/%s/%s" % (c.port, BUCKET, key)],
                       capture_output=True, text=True)
    secs = time.time() - t
    os.unlink(path)
    if not r.stdout.startswith("2"):
        raise RuntimeError("curl PUT: %s %s" % (r.stdout, r.stderr))
    return secs


def put_signed(c, body, key):
    path = "/%s/%s" % (BUCKET, key)
    h = sign(c, "PUT", path, "", hashlib.sha256(body).hexdigest())
    settle()
    t = time.time()
    send(c, "PUT", path, body, h)
    return time.time() - t


def multipart(c, body, key, parallel, bucket=BUCKET):
    """One multipart upload of body in PART-sized parts, parallel at a time
    (c: a server with port, key and secret); seconds from create to the
    end of Complete, and of Complete alone."""
    path = "/%s/%s" % (bucket, key)
    parts = [body[o:o + PART] for o in range(0, len(body), PART)]
    shas = [hashlib.sha256(p).hexdigest() for p in parts]
    settle()
    t = time.time()
    _, data = request(c, "POST", path, "uploads=")
    uid = re.search(rb"<UploadId>([^<]+)</UploadId>", data).group(1).decode()
    etags = [None] * len(parts)
    errors = []
    nxt = [0]
    lock = threading.Lock()

    def worker():
        while True:
            with lock:
                i = nxt[0]
                nxt[0] += 1
            if i >= len(parts) or errors:
                return
            q = "partNumber=%d&uploadId=%s" % (i + 1, uid)
            try:
                r, _ = send(c, "PUT", path + "?" + q, parts[i], sign(c, "PUT", path, q, shas[i]))
                etags[i] = r.getheader("ETag")
            except Exception as e:   # reported after the join
                errors.append(e)

    ths = [threading.Thread(target=worker) for _ in range(parallel)]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    if errors:
        raise errors[0]
    xml = "<CompleteMultipartUpload>%s</CompleteMultipartUpload>" % "".join(
        "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part>" % (i + 1, e)
        for i, e in enumerate(etags))
    t_c = time.time()
    request(c, "POST", path, "uploadId=" + uid, xml.encode())
    return time.time() - t, time.time() - t_c


def main():
    work = tempfile.mkdtemp(prefix="cairn-bench-large.")
    c = None
    try:
        c = Cairnd(work)
        request(c, "PUT", "/" + BUCKET)
        request(c, "PUT", "/" + BUCKET, "acl=", extra={"x-amz-acl": "public-read-write"})
        say("large_load_start", open("/proc/loadavg").read().split()[0], "load")
        best, cpu, comp = {}, {}, {}
        for rnd in range(ROUNDS):
            for row in ONLY:
                body = fresh("%s-%d" % (row, rnd))
                c0 = c.cpu_secs()
                if row == "seq":
                    secs = seq_probe(work, body)
                elif row == "put":
                    secs = put_unsigned(c, work, body, "put-%d" % rnd)
                elif row == "put_sig":
                    secs = put_signed(c, body, "sig-%d" % rnd)
                else:
                    secs, cs = multipart(c, body, "%s-%d" % (row, rnd),
                                         PARALLEL if row == "mp" else 1)
                    comp[row] = min(comp.get(row, cs), cs)
                used = c.cpu_secs() - c0
                say("round%d_%s" % (rnd, row), "%.3f" % secs, "s")
                best[row] = min(best.get(row, secs), secs)
                if row != "seq":
                    cpu[row] = min(cpu.get(row, used), used)
        gib = SIZE / (1 << 30)
        for row in ONLY:
            say(row, "%.1f" % (MIB / best[row]), "MiB/s")
            if row in cpu:
                say(row + "_cpu", "%.2f" % (cpu[row] / gib), "s/GiB")
            if row in comp:
                say(row + "_complete", "%.3f" % comp[row], "s")
            if row != "seq" and "seq" in best:
                say(row + "_ratio", "%.2f" % (best["seq"] / best[row]), "x_seq")
        say("large_load_end", open("/proc/loadavg").read().split()[0], "load")
    finally:
        if c:
            c.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
