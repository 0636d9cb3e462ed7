"""``python -m launch.kernels`` (run by ``make setup``) leaves the kernels of every game, its
oracle and the searches in numba's cache on disk: a later process loads each one it calls
and compiles none."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Another process, other random games: every kernel it called from Python, by how it got
# it (a kernel without numba's cache compiles in every process).
PROBE = """
import json, sys
import numpy as np
from numba.core.dispatcher import Dispatcher
from numba.core.caching import NullCache
import games
from launch import kernels

rng = np.random.default_rng(1)
for name in games.names():
    kernels.compile_game(name, rng)
kernels.compile_searches(rng)
loaded, compiled = [], []
for module_name, module in list(sys.modules.items()):
    if module_name.partition(".")[0] not in ("games", "search", "oracle_service"):
        continue
    for attribute, value in vars(module).items():
        if isinstance(value, Dispatcher) and value.signatures:
            where = f"{module_name}.{attribute}"
            if isinstance(value._cache, NullCache) or value.stats.cache_misses:  # uncached: compiled here
                compiled.append(where)
            elif value.stats.cache_hits:
                loaded.append(where)
print(json.dumps({"loaded": sorted(set(loaded)), "compiled": sorted(set(compiled))}))
"""


def run(args: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


@pytest.mark.slow
def test_a_process_after_the_compile_step_loads_every_kernel_it_calls():
    assert "numba kernels compiled and cached" in run(["-m", "launch.kernels"]).stdout
    found = json.loads(run(["-c", PROBE]).stdout.splitlines()[-1])
    assert found["compiled"] == [], found["compiled"]
    # the engines', the searches' and the oracles' kernels, each loaded from the cache
    for kernel in ("games.hex._step_kernel", "games.go._score_kernel", "search.mcts._backup_select_puct",
                   "search.gumbel.gumbel_root", "oracle_service.connect4_solver._solve_batch",
                   "oracle_service.hex_solver._mid", "oracle_service.chomp_grundy._rank_kernel"):
        assert kernel in found["loaded"], (kernel, found["loaded"])
