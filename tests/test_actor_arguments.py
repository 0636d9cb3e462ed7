"""The replay service and the oracle client cross to other actors by name: a restartable
actor built with them holds no reference among its constructor arguments, so Ray prints
no error about restarts that may fail (ray#53727, which every run used to print), and the
actor uses both again after its process died. In a process of its own, because Ray
prints that error once per process, from C++, on the driver's stderr."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RAY_ERROR = "has constructor arguments in the object store"

DRIVER = textwrap.dedent("""
    import json
    import os
    import time

    import numpy as np
    import ray
    from oracle_service.service import OracleClient
    from replay.rows import avi_schema
    from replay.service import ReplayService

    ray.init()  # the test session's (RAY_ADDRESS): this process's own driver, no Ray start of its own
    replay = ReplayService.create(avi_schema((3, 3, 3)), 8, 2, name="arguments-test")
    oracle = OracleClient(1, os.environ["STORE"], replica_options={"num_cpus": 0})

    @ray.remote(num_cpus=0, max_restarts=1, max_task_retries=0)
    class User:
        def __init__(self, replay, oracle):
            self.replay, self.oracle = replay, oracle

        def use(self):
            rows = {"obs": np.zeros((2, 3, 3, 3), np.uint8), "target": np.zeros(2, np.float32),
                    "version": np.zeros(2, np.int64)}
            stored, _ = self.replay.put(rows, shard=0)
            return json.dumps([stored.size, self.oracle.chomp_grundy(2, 2, [[2, 2]])[0].value])

        def die(self):
            os._exit(1)

    user = User.remote(replay, oracle)
    print("before", ray.get(user.use.remote()), flush=True)
    try:
        ray.get(user.die.remote())
    except ray.exceptions.RayActorError:
        pass
    deadline = time.monotonic() + 120
    while True:  # until the restarted actor answers (a call during the restart fails)
        try:
            print("after", ray.get(user.use.remote()), flush=True)
            break
        except ray.exceptions.ActorUnavailableError:
            assert time.monotonic() < deadline, "the actor did not come back"
            time.sleep(0.2)
""")


def test_an_actor_built_with_the_replay_and_the_oracle_restarts_without_ray_error(ray_session, tmp_path):
    env = {**os.environ, "RAY_ADDRESS": ray_session.get_runtime_context().gcs_address, "RAY_AUTH_MODE": "disabled",
           "STORE": str(tmp_path / "store.sqlite")}
    done = subprocess.run([sys.executable, "-c", DRIVER], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if line.startswith(("before", "after")))
    size_before, grundy_before = json.loads(lines["before"])
    size_after, grundy_after = json.loads(lines["after"])
    assert (size_before, size_after) == (2, 4)  # the restarted actor reached the same shard
    assert grundy_before == grundy_after is not None  # and the same oracle
    assert RAY_ERROR not in done.stderr + done.stdout, done.stderr[-3000:]
