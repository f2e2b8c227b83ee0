"""Loopback ports for servers that must be told their port before they start.

A port found by binding port 0 and releasing it comes from the kernel's
ephemeral range, so any server in a parallel test that binds port 0 (as
every cairnd in these tests does) may be handed the same port before the
test's server binds it. The ports here come from below that range, where
the kernel never assigns one by itself, at random, and are checked free.
"""

import random
import socket


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port():
    """A loopback TCP port free now, outside the kernel's ephemeral range."""
    high = _ephemeral_low()
    low = min(10000, high // 2)
    for _ in range(200):
        port = random.randrange(low, high)
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
            return port
        except OSError:
            continue
        finally:
            s.close()
    raise RuntimeError("no free loopback port below %d" % high)
