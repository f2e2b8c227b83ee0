"""What the fleet tests of issue 24 share: the import paths of the S3 and
fleet helpers, the PostgreSQL cluster fixture (one per module, started and
removed by pgharness) with its skip when the server binaries are missing,
and a fresh identity key file as an operator makes one."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "s3"))
import pgharness  # noqa: E402

needs_pg = pytest.mark.skipif(not pgharness.available(),
                              reason="PostgreSQL 15 server binaries not installed")


@pytest.fixture(scope="module")
def pg():
    with pgharness.PgCluster() as cluster:
        yield cluster


def key_file(path):
    """A fresh key (`openssl rand -hex 32`: 64 hex digits and a newline), 0600."""
    fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, (os.urandom(32).hex() + "\n").encode())
    os.close(fd)
    return str(path)
