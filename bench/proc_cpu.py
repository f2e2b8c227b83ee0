"""CPU seconds (user + system) of processes, from /proc/PID/stat, for the
bench scripts that charge a server's CPU to the requests they timed.

Counted at the kernel's clock-tick resolution (SC_CLK_TCK, 10 ms here); a
process that ended meanwhile (a PostgreSQL backend) counts nothing."""
import os

TCK = os.sysconf("SC_CLK_TCK")


def cpu(pids):
    """The summed utime + stime of pids, in seconds."""
    t = 0
    for p in pids:
        try:
            with open("/proc/%d/stat" % p) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            t += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return t / TCK
