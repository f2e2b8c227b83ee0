"""The gateway's inventory (docs/protocol/scribe-gateway.md, "Inventory")
through real processes: a gateway walking its storage servers'
instance_status (26) pages every few hundred milliseconds.  More than one
page of repositories created directly on storage are all adopted; a backend
restored on its address with a new data directory (a new incarnation) is
walked again and what it holds now is adopted; a server that went down since
its last walk is not picked for a new repository.  Each test would fail
without the inventory: a repository only storage knows would be created a
second time on another server."""
import re
import time

import pytest

from conftest import Server
from scribe_wire import ERR, ScribeError
from test_gateway import STORAGE, Fleet, raises, write_config

INTERVAL_MS = 300


class InventoryFleet(Fleet):
    """A Fleet whose gateway walks its servers every `interval` ms."""

    def __init__(self, tmp_path, n=2, interval=INTERVAL_MS, **kw):
        self.interval = interval
        super().__init__(tmp_path, n=n, **kw)

    def start_gateway(self, env=None):
        write_config(self.config, self.addrs, "inventory_interval_ms = %d\n" % self.interval)
        return super().start_gateway(env)

    def wait_log(self, pattern, timeout=30):
        """The first match of pattern in the gateway's log of this run."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            m = re.search(pattern, self.gw.output(self.gw.log_offset))
            if m:
                return m
            time.sleep(0.1)
        raise AssertionError("no %r in:\n%s" % (pattern, self.gw.output(self.gw.log_offset)))


@pytest.fixture
def inv_fleet(tmp_path):
    f = InventoryFleet(tmp_path)
    yield f
    f.stop()


def walked(server, total, n=2):
    return r"inventory: storage server %d of %d: %d repositories in (\d+) page\(s\)" % (
        server, n, total)


def test_more_than_one_page_on_one_backend_all_adopted(inv_fleet):
    f = inv_fleet
    names = ["direct%03d" % i for i in range(130)]
    ids = {}
    with f.direct(1) as d:
        for n in names:
            ids[n] = d.repo_create(n)["id"]
    # 130 rows: pages of 128, then 2
    m = f.wait_log(walked(2, 130))
    assert m.group(1) == "2", m.group(0)
    with f.conn() as c:
        for n in names:
            # adopted on server 2: a create through the gateway goes there
            # and finds it, never makes a second one on server 1
            raises("repository_exists", c.repo_create, n)
        assert c.repo_info(name=names[129])["id"] == ids[names[129]]
    with f.direct(0) as d:
        assert d.instance_status()["total"] == 0
    assert f.where(names[0]) == [1] and f.where(names[129]) == [1]


def test_restored_backend_with_a_new_incarnation_is_walked_again(inv_fleet):
    f = inv_fleet
    with f.direct(1) as d:
        old_a = d.repo_create("a")["id"]
        d.repo_create("b")
        old_inc = d.instance_status()["incarnation"]
    f.wait_log(walked(2, 2))
    # restored on its address from an empty data directory: a new incarnation
    f.servers[1].stop()
    port = f.servers[1].addrs["scribe"][1]
    back = Server(f.tmp / "storage1-restored",
                  args=STORAGE[:-1] + ["127.0.0.1:%d" % port])
    f.servers[1] = back.start(wait_for=("scribe",))
    with f.direct(1) as d:
        new_a = d.repo_create("a")["id"]
        d.repo_create("c")
        new_inc = d.instance_status()["incarnation"]
    assert new_inc != old_inc and new_a != old_a
    m = f.wait_log(r"storage server 2 of 2 has a new data-root incarnation (\w+) \(was (\w+)\)")
    assert m.group(1) == new_inc.hex() and m.group(2) == old_inc.hex(), m.group(0)
    # a walk of the new incarnation that saw both (the first may have run
    # between the two creates)
    f.wait_log(walked(2, 2) + r", \d+ adopted, \d+ restart\(s\), incarnation " + new_inc.hex())
    with f.conn() as c:
        # "a" follows the repository storage holds now
        assert c.repo_info(name="a")["id"] == new_a
        assert c.repo_info(rid=new_a)["name"] == "a"
        raises("repository_not_found", c.repo_info, rid=old_a)
        # "c" was adopted: never created a second time on server 1
        raises("repository_exists", c.repo_create, "c")
        # "b" is gone from storage; its name stays placed on server 2
        raises("repository_not_found", c.repo_info, name="b")
        c.repo_create("b")
    assert f.where("c") == [1] and f.where("b") == [1]


def test_server_down_since_its_walk_is_not_picked(tmp_path):
    # walked once at start, then not for ten minutes: the pick rule reads
    # the snapshot and must find out by itself that server 1 went away
    f = InventoryFleet(tmp_path, interval=600000)
    try:
        f.wait_log(walked(1, 0))
        f.wait_log(walked(2, 0))
        f.servers[0].stop()
        with f.conn() as c:
            for i in range(3):
                c.repo_create("after%d" % i)
        assert all(f.where("after%d" % i) == [1] for i in range(3))
        # both down: the unavailable error, never a guess
        f.servers[1].stop()
        with f.conn() as c:
            e = raises("storage_failure", c.repo_create, "nowhere")
            assert "does not answer" in e.message or "no storage server" in e.message, e.message
    finally:
        f.stop()


def test_placement_alternates_between_walks(tmp_path):
    """Between two walks the snapshot is all the pick rule reads: the
    placements made since count, so consecutive creates still take turns."""
    f = InventoryFleet(tmp_path, interval=600000)
    try:
        f.wait_log(walked(2, 0))
        names = ["t%d" % i for i in range(6)]
        with f.conn() as c:
            for n in names:
                c.repo_create(n)
        counts = [sum(1 for n in names if f.where(n) == [i]) for i in range(2)]
        assert counts == [3, 3], counts
    finally:
        f.stop()


def test_a_walk_that_fails_is_reported_and_retried(inv_fleet):
    f = inv_fleet
    f.wait_log(walked(1, 0))
    f.servers[0].stop()
    f.wait_log(r"inventory: storage server 1 of 2 not walked: it does not answer")
    # and a server that comes back is walked again
    port = f.servers[0].addrs["scribe"][1]
    back = Server(f.servers[0].data_dir, args=STORAGE[:-1] + ["127.0.0.1:%d" % port])
    f.servers[0] = back.start(wait_for=("scribe",))
    with f.direct(0) as d:
        d.repo_create("back")
    f.wait_log(walked(1, 1) + r", 1 adopted")
    with f.conn() as c:
        raises("repository_exists", c.repo_create, "back")
    with pytest.raises(ScribeError) as ei:
        with f.direct(1) as d:
            d.repo_info(name="back")
    assert ei.value.code == ERR["repository_not_found"]
