"""Faults on pack files (src/store/pack.c): ENOSPC on the pack append and EIO
from its fdatasync, injected by the LD_PRELOAD shim (tests/proof/faultshim.c)
into the store's own test program (tests/store/test_pack.c, mode "faults").
Each failed write returns the fault's error, leaves no index entry, the store
stays consistent across a reopen, and the next write succeeds; ENOSPC during a
compaction pass fails the pass with nothing lost, and the next pass reclaims."""
import os
import subprocess

from proofutil import BUILD, faultshim_path


def test_pack_append_enospc_and_sync_eio(tmp_path):
    exe = os.path.join(BUILD, "tests", "store", "test_pack")
    assert os.path.exists(exe), exe + " is not built"
    ctl = str(tmp_path / "fault.ctl")
    with open(ctl, "w") as f:
        f.write("off\n")
    env = dict(os.environ, LD_PRELOAD=faultshim_path(), CN_FAULT_CTL=ctl,
               TMPDIR=str(tmp_path))
    out = subprocess.run([exe, "faults"], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "ok 1 - test_faults" in out.stdout
