"""cairnd out of file descriptors: accept(2) fails with EMFILE while
connections wait in the backlog.  The listener is level-triggered, so the
loop must stop watching it (and not spin at full CPU, logging every pass)
until a descriptor frees up, and then serve again."""
import contextlib
import os
import resource
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "jay"))
import jayclient  # noqa: E402
from conftest import ADMIN_TOKEN  # noqa: E402

NOFILE = 64          # cairnd holds about 20 descriptors once started
EMFILE_LOG = "Too many open files"


@contextlib.contextmanager
def soft_nofile(n):
    """Lowers this process's soft RLIMIT_NOFILE while a child is started (the
    child inherits it), then restores it for the test's own sockets."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (n, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[0] is the state (field 3): utime and stime are fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def nfds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def wait_for(cond, what, timeout=30):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def test_descriptor_exhaustion_pauses_accepting(server_factory, tmp_path):
    cfg = tmp_path / "cairnd.toml"
    # Silent connections from one source hold their descriptors for the
    # whole test: no pending cap, no handshake deadline within it.
    cfg.write_text("[limits]\nmax_pending_per_source = 10000\n"
                   "handshake_timeout_ms = 600_000\n")
    with soft_nofile(NOFILE):
        srv = server_factory(args=["--jay", "127.0.0.1:0", "--scribe", "off", "--http", "off",
                                   "--config", str(cfg)])
    pid = srv.proc.pid
    assert resource.prlimit(pid, resource.RLIMIT_NOFILE)[0] == NOFILE
    addr = srv.addrs["jay"]

    # Dial silent connections one at a time until accept(2) runs out: each
    # is either accepted (cairnd holds one more descriptor) or the log
    # reports EMFILE, and then it waits in the backlog.
    held = []
    while EMFILE_LOG not in srv.output():
        assert len(held) < NOFILE, "cairnd never ran out of descriptors"
        before = nfds(pid)
        held.append(socket.create_connection(addr, timeout=10))
        wait_for(lambda: nfds(pid) > before or EMFILE_LOG in srv.output(),
                 "a connection was neither accepted nor refused for want of a descriptor")

    # Exhausted, with a connection waiting in the backlog: cairnd must idle.
    # A level-triggered listener that stays armed spins at ~100 % of a core.
    cpu0, t0 = cpu_seconds(pid), time.monotonic()
    time.sleep(2)
    cpu1, t1 = cpu_seconds(pid), time.monotonic()
    share = (cpu1 - cpu0) / (t1 - t0)
    assert share < 0.3, f"cairnd used {share:.0%} of a CPU while out of descriptors"
    out = srv.output()
    assert out.count(EMFILE_LOG) == 1, "logged per pass, not once per episode:\n" + out[-2000:]
    assert srv.proc.poll() is None

    # Descriptors free up: the waiting connection is taken, and a new one
    # gets a real answer (handshake and a request).
    for s in held[:10]:
        s.close()
    with jayclient.Conn(addr, ADMIN_TOKEN, timeout=30) as c:
        assert c.ping()
    wait_for(lambda: "accepting on jay again" in srv.output(), "the episode's end was not logged")
    for s in held[10:]:
        s.close()
