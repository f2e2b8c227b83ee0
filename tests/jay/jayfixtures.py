"""Helpers shared by the Jay integration tests: start cairnd with the Jay
listener, make accounts and tokens through `cairn admin`, and open clients."""
import os

from conftest import ADMIN_TOKEN, BUILD, binary, run

import jayclient


def admin(server, *args):
    """Runs `cairn admin --data DIR ...` against a (running) server's data dir."""
    r = run([binary("cairn"), "admin", "--data", server.data_dir] + list(args),
            env={"CAIRN_ADMIN_TOKEN": ADMIN_TOKEN})
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def new_token(server, account, perms=None, create_account=True):
    if create_account:
        run([binary("cairn"), "admin", "--data", server.data_dir, "account", "create", account],
            env={"CAIRN_ADMIN_TOKEN": ADMIN_TOKEN})
    args = ["token", "create", "--account", account]
    for p in perms or []:
        args += ["--perm", p]
    return admin(server, *args)


def objects_admin(data_dir, account, *args):
    path = os.path.join(BUILD, "tests", "objects", "objects_admin")
    r = run([path, data_dir, account] + list(args))
    assert r.returncode == 0, r.stderr
    return r


def conn(server, cred=ADMIN_TOKEN, timeout=60):
    return jayclient.Conn(server.addrs["jay"], cred, timeout=timeout)


def jay_args(extra=()):
    return ["--jay", "127.0.0.1:0", "--scribe", "off", "--http", "off"] + list(extra)


def restart(server_factory, old, env=None):
    """Starts a new cairnd on old's data directory (old must be stopped).  The
    old log is moved aside first: Server reads listener ports from the log."""
    log = old.data_dir + ".log"
    if os.path.exists(log):
        os.replace(log, log + ".%d" % len(os.listdir(os.path.dirname(log))))
    return server_factory(args=jay_args(), env=env, data=old.data_dir)
