"""The S3 tier's backend for tests (issue 24): one cairnd on its embedded
engine (SQLite, local blobs) on an ephemeral loopback port, with one bucket
and a credentials file ("KEY_ID:SECRET", its administrator token) for the
stores that keep their blobs there.

Used by tests/fleetmode.py (make test-fleet: a node's blobs under a key
prefix per data dir) and by pgharness.py --blob-tier (the services' C unit
tests on PostgreSQL: tests/store/test_blob_target.h, a prefix per store).
tests/fleet/fleetutil.Fleet keeps a backend of its own on a fixed port, so
that it can stop and restart it under its nodes.

Needs nothing beyond the standard library: the bucket is made, listed and
emptied over the S3 face with the administrator token as a Bearer
credential.  The backend never listens beyond 127.0.0.1; it is stopped with
SIGTERM (killed after 20 s), and its log is kept for a sanitizer report.

As a command, for the C tests (CAIRN_TEST_BLOB_TOOL names this file):
`blobtier.py ls PREFIX` prints the keys under PREFIX, one a line, and
`blobtier.py rm PREFIX` deletes them, on the tier that CAIRN_TEST_BLOB_ENDPOINT,
CAIRN_TEST_BLOB_BUCKET and CAIRN_TEST_BLOB_CREDENTIALS name.
"""
import os
import re
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET

BUCKET = "tier"
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")
_S3 = "{http://s3.amazonaws.com/doc/2006-03-01/}"


def request(endpoint, token, method, path):
    """One S3 request to the backend as token's account; the body."""
    req = urllib.request.Request(endpoint + path, method=method,
                                 headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.read()


def list_keys(endpoint, token, bucket, prefix=""):
    """Every key of bucket under prefix, in order."""
    keys, cont = [], None
    while True:
        q = {"list-type": "2", "prefix": prefix}
        if cont:
            q["continuation-token"] = cont
        doc = ET.fromstring(request(endpoint, token, "GET",
                                    "/%s?%s" % (bucket, urllib.parse.urlencode(q))))
        keys += [k.text for k in doc.iter(_S3 + "Key")]
        cont = doc.findtext(_S3 + "NextContinuationToken")
        if doc.findtext(_S3 + "IsTruncated") != "true" or not cont:
            return keys


class TierBackend:
    """A backend cairnd in workdir/backend (log: workdir/backend.log):
    start(), then endpoint, bucket and creds (the credentials file); keys()
    lists the bucket; stop() ends it."""

    def __init__(self, cairnd, workdir, token, bucket=BUCKET, env=None):
        """cairnd: the binary; token: "ID:SECRET", the backend's administrator
        token and the stores' credential; env: the backend's environment
        (None: this process's)."""
        self.cairnd = cairnd
        self.workdir = workdir
        self.token = token
        self.bucket = bucket
        self.env = dict(os.environ if env is None else env, CAIRN_ADMIN_TOKEN=token)
        self.log_path = os.path.join(workdir, "backend.log")
        self.creds = os.path.join(workdir, "blob.creds")
        self.endpoint = None
        self.proc = None

    def start(self, timeout=30):
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [self.cairnd, "--data", os.path.join(self.workdir, "backend"), "--jay", "off",
                 "--scribe", "off", "--http", "127.0.0.1:0"],
                stdout=log, stderr=subprocess.STDOUT, env=self.env)
        deadline = time.monotonic() + timeout
        while self.endpoint is None:
            m = re.search(r"listening http on (127\.0\.0\.1:\d+)", self.output())
            if m:
                self.endpoint = "http://" + m.group(1)
            elif self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the blob tier's backend did not start:\n" + self.output())
            else:
                time.sleep(0.02)
        request(self.endpoint, self.token, "PUT", "/" + self.bucket)
        fd = os.open(self.creds, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(self.token + "\n")
        return self

    def keys(self, prefix=""):
        """Every key of the bucket under prefix, in order."""
        return list_keys(self.endpoint, self.token, self.bucket, prefix)

    def output(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def sanitizer_report(self):
        """The backend's log when it holds a sanitizer report, else None."""
        out = self.output()
        return out if any(m in out for m in SANITIZER_MARKS) else None

    def stop(self, timeout=20):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode if self.proc else None


def main(argv):
    if len(argv) != 2 or argv[0] not in ("ls", "rm"):
        print("usage: blobtier.py ls|rm PREFIX", file=sys.stderr)
        return 2
    endpoint = os.environ["CAIRN_TEST_BLOB_ENDPOINT"]
    bucket = os.environ["CAIRN_TEST_BLOB_BUCKET"]
    with open(os.environ["CAIRN_TEST_BLOB_CREDENTIALS"]) as f:
        token = f.read().strip()
    for key in list_keys(endpoint, token, bucket, argv[1]):
        if argv[0] == "rm":
            request(endpoint, token, "DELETE", "/%s/%s" % (bucket, urllib.parse.quote(key)))
        else:
            print(key)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
