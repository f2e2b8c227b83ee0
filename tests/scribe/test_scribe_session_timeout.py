"""Scribe inactivity is counted per session through the real cairnd: hello-ok
announces 300 s by default; a control connection that waits while its data
connection works stays open past the timeout; a session with no activity
on any connection is closed once the timeout passes."""
import time

from scribe_wire import Conn

ARGS = ["--jay", "off", "--http", "off", "--scribe", "127.0.0.1:0"]


def addr(s):
    return s.addrs["scribe"]


def test_default_announces_300_seconds(server_factory):
    s = server_factory(args=ARGS, wait_for=("scribe",))
    with Conn(addr(s)) as c:
        assert c.hello_ok["timeout"] == 300
        d = Conn(addr(s), bind=c.hello_ok["session"])
        assert d.hello_ok["timeout"] == 300 and d.hello_ok["session"] == c.hello_ok["session"]
        d.close()


def test_inactivity_counted_per_session(server_factory, tmp_path):
    conf = tmp_path / "cairn.toml"
    conf.write_text("[scribe]\nidle_timeout_ms = 2000\n")
    s = server_factory(args=ARGS + ["--config", str(conf)], wait_for=("scribe",))
    c = Conn(addr(s))
    assert c.hello_ok["timeout"] == 2
    d = Conn(addr(s), bind=c.hello_ok["session"])
    lone = Conn(addr(s))                   # another session, idle throughout
    # the data connection works for 5 s while the control connection waits
    t = time.time()
    while time.time() - t < 5:
        d.repo_list()
        time.sleep(0.3)
    assert lone.closed_by_peer(timeout=0.1)     # its own session was idle: closed
    rows, _ = c.repo_list()                     # the control connection is still open
    assert rows == []
    # then nothing happens on the session: both connections go
    t = time.time()
    assert c.closed_by_peer(timeout=6)
    assert d.closed_by_peer(timeout=2)
    assert time.time() - t < 6
    for x in (c, d, lone):
        x.close()
