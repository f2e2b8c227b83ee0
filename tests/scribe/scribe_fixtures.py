"""Shared pytest fixtures of the Scribe integration tests that drive one
plaintext cairnd through the wire: `srv` (the server, Scribe only) and
`repo` (a fresh repository on one connection, closed after the test).  A
test module uses them with `from scribe_fixtures import repo, srv`."""
import pytest

from scribe_wire import Conn
from test_scribe_server import ARGS, Repo, addr


@pytest.fixture
def srv(server_factory):
    return server_factory(args=ARGS, wait_for=("scribe",))


@pytest.fixture
def repo(srv):
    c = Conn(addr(srv))
    r = Repo(c)
    yield r
    c.close()
