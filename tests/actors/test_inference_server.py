"""The batched inference actor (actors/inference_server.py): requests that wait together
run as one network call and each gets its own rows back; errors reach every caller; on
Ray, two self-play processes share the server's batches and get the network's values."""

from __future__ import annotations

import asyncio

import time

import numpy as np
import pytest

import algorithms
import games
from actors.inference_server import BatchingServer, InferenceActor, InferenceClient
from inference.game_network import GameNetwork
from inference.network import ValueFunction
from inference.tensors import numpy_weights
from inference.networks import PRESET_NETWORKS, build_network


class Recorder:
    def __init__(self):
        self.calls = []

    def __call__(self, obs):
        self.calls.append(len(obs))
        return obs.reshape(len(obs), -1).sum(axis=1).astype(np.float32)


def test_waiting_requests_are_one_batch_and_each_gets_its_rows():
    fn = Recorder()
    server = BatchingServer(fn, min_requests=3, max_wait_s=10.0)
    requests = [np.full((n, 2), i, np.float32) for i, n in enumerate([2, 5, 1])]

    async def main():
        return await asyncio.gather(*(server.evaluate(r) for r in requests))

    answers = asyncio.run(main())
    assert fn.calls == [8]  # one call for the three
    for r, a in zip(requests, answers):
        np.testing.assert_array_equal(a, fn(r))
    assert server.stats()["max_requests_per_batch"] == 3


def test_a_lone_request_runs_after_max_wait_and_errors_reach_every_caller():
    fn = Recorder()
    server = BatchingServer(fn, min_requests=4, max_wait_s=0.01)
    assert asyncio.run(server.evaluate(np.ones((3, 2), np.float32))).tolist() == [2.0, 2.0, 2.0]

    def broken(obs):
        raise RuntimeError("out of memory")

    server = BatchingServer(broken, min_requests=2)

    async def main():
        return await asyncio.gather(*(server.evaluate(np.ones((1, 2), np.float32)) for _ in range(2)),
                                    return_exceptions=True)

    assert [str(e) for e in asyncio.run(main())] == ["out of memory"] * 2
    with pytest.raises(ValueError, match="min_requests"):
        BatchingServer(fn, min_requests=0)


def test_two_self_play_processes_share_the_server_s_batches(ray_session):
    ray = ray_session
    game, network = games.make("tictactoe"), PRESET_NETWORKS["tictactoe"]
    weights = numpy_weights(build_network(game, network))
    server = InferenceActor.options(num_cpus=0).remote(game_network=GameNetwork(game="tictactoe", network=network),
                                                       algo=algorithms.descriptor("avi"),
                                                       min_requests=2, max_wait_s=0.5)

    @ray.remote(num_cpus=0)
    def play(server, weights, seed):
        import numpy as np

        from actors.avi import AviCollector
        from actors.inference_server import InferenceClient

        client = InferenceClient(server)
        client.set_weights(weights, 3)
        asked, answered = [], []

        def value_fn(obs):
            values = client(obs)
            asked.append(obs.copy())
            answered.append(values)
            return values

        rows = AviCollector(games.make("tictactoe"), 32, epsilon=0.5, gamma=1.0, seed=seed).collect(value_fn, 6)
        return np.concatenate(asked), np.concatenate(answered), len(rows["target"])

    results = ray.get([play.remote(server, weights, seed) for seed in (0, 1)])
    local = ValueFunction(game, network)
    local.set_weights(weights, 3)
    for obs, values, rows in results:
        assert rows == 6 * 32
        np.testing.assert_allclose(values, local(obs), rtol=0, atol=1e-6)  # batch rounding only
    stats = ray.get(server.stats.remote())
    assert stats["version"] == 3 and stats["requests"] == 12
    assert stats["max_requests_per_batch"] == 2 and stats["batches"] < 12  # shared batches
    assert stats["cache"]["evaluated"] < stats["rows"]  # the two games' openings, evaluated once
    assert isinstance(InferenceClient(server).samples_forward, int)
    ray.kill(server)


def test_each_request_gets_its_share_of_the_batch_s_work():
    """The shares of a batch's work add up to it, in proportion to the requests' rows."""
    fn = Recorder()
    ran = {"inputs": 0}

    def counting(obs):
        ran["inputs"] += 7  # any count: what the shares must add up to
        return fn(obs)

    server = BatchingServer(counting, min_requests=3, max_wait_s=10.0, work=lambda: (ran["inputs"], 3 * ran["inputs"]))

    async def main():
        return await asyncio.gather(*(server.evaluate_counted(np.ones((n, 2), np.float32)) for n in (2, 5, 1)))

    answers = asyncio.run(main())
    shares = np.array([share for _, share in answers])
    assert shares.sum(axis=0).tolist() == [7, 21]
    assert shares[:, 0].tolist() == [2, 4, 1]  # 7 * (2, 5, 1) / 8 = 1.75, 4.375, 0.875, rounded on the running sum
    assert [len(values) for values, _ in answers] == [2, 5, 1]


def test_each_version_is_answered_by_its_weights_and_a_restarted_server_gets_them_again(ray_session):
    ray = ray_session
    game, network = games.make("tictactoe"), PRESET_NETWORKS["tictactoe"]
    nets = {}
    for version in (1, 2, 3):
        import torch

        torch.manual_seed(version)
        nets[version] = numpy_weights(build_network(game, network))
    refs = {v: [ray.put(w)] for v, w in nets.items()}
    server = InferenceActor.options(num_cpus=0).remote(game_network=GameNetwork(game="tictactoe", network=network),
                                                       algo=algorithms.descriptor("avi"), versions=2)
    old, new = InferenceClient(server), InferenceClient(server)
    old.set_weights(refs[1], 1)
    new.set_weights(refs[2], 2)
    obs = game.encode(game.from_moves([[], [4], [4, 0]])).astype(np.float32)
    local = ValueFunction(game, network)
    for client, version in ((old, 1), (new, 2)):  # two versions in flight, each its own
        local.set_weights(nets[version], version)
        np.testing.assert_allclose(client(obs), local(obs), atol=1e-6)
    assert ray.get(server.stats.remote())["versions_held"] == [1, 2]
    new.set_weights(refs[3], 3)  # evicts version 1: its client cannot be answered any more
    with pytest.raises(RuntimeError, match="weight version 1"):
        old(obs)
    ray.kill(server, no_restart=False)  # restarted empty: the client sends its version again
    # The kill is asynchronous: wait for the restarted server (holding nothing), else a call
    # may still reach the old process (seen on a fast machine).
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if not ray.get(server.stats.remote())["versions_held"]:
                break
        except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError):
            pass  # between the two processes
        time.sleep(0.2)
    local.set_weights(nets[3], 3)
    np.testing.assert_allclose(new(obs), local(obs), atol=1e-6)
    assert ray.get(server.stats.remote())["versions_held"] == [3]
    # Two calls of three distinct inputs, each run (the restart emptied the cache); tic-tac-toe's
    # network is not symmetrized, so an input costs one sample.
    assert new.cache.lookups == 6 and new.cache.evaluated == 6 and new.samples_forward == 6
    ray.kill(server)
