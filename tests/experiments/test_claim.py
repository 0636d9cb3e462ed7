"""One driver at a time runs an experiment directory (launch/experiments/claim.py): a
second one is refused while the first lives, a claim left by a dead driver is taken over,
and a claim of another host is never taken silently."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from launch.experiments.claim import CLAIM_FILE, claimed
from launch.experiments.spec import SpecError


def test_a_directory_run_by_a_live_driver_is_refused_and_a_dead_ones_is_taken_over(tmp_path):
    said = []
    with claimed(tmp_path, said.append):
        held = json.loads((tmp_path / CLAIM_FILE).read_text())
        # This process holds it: a second driver (here, a second claim) is refused by name.
        with pytest.raises(SpecError, match=rf"is being run by pid {held['pid']} on this host .* \(kill -INT"):
            with claimed(tmp_path, said.append):
                pass
    assert not (tmp_path / CLAIM_FILE).exists()  # released at the end
    # A driver killed without its cleanup leaves its claim: its process is gone, so it is taken over.
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (tmp_path / CLAIM_FILE).write_text(json.dumps({**held, "pid": int(dead.stdout)}))
    with claimed(tmp_path, said.append):
        assert json.loads((tmp_path / CLAIM_FILE).read_text())["pid"] == held["pid"]
    assert said and "is gone; taking it over" in said[-1]
    # The same pid now a newer process (its start differs): not the holder either.
    (tmp_path / CLAIM_FILE).write_text(json.dumps({**held, "started": -1}))
    with claimed(tmp_path, said.append):
        pass


def test_another_hosts_claim_is_refused_naming_how_to_release_it(tmp_path):
    (tmp_path / CLAIM_FILE).write_text(json.dumps({"host": "elsewhere", "pid": 1, "started": 0, "time": 0}))
    with pytest.raises(SpecError, match=rf"pid 1 on host elsewhere since 1970-01-01 00:00:00 UTC; if that driver "
                                        rf"has ended, remove .*{CLAIM_FILE}"):
        with claimed(tmp_path):
            pass
    assert (tmp_path / CLAIM_FILE).exists()  # left as it was
