"""What each algorithm's self-play actor plays with: its value function (or evaluator)
and its collector, built from one :class:`CollectorSetup` by the factory its descriptor
names (``algorithms.descriptors.AlgorithmDescriptor.collector``).

The factories share one signature, so that ``actors.pool.SelfPlayWorker`` builds any
algorithm's pieces without knowing which it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from actors.alphazero import AlphaZeroCollector
from actors.avi import AviCollector
from actors.config import SelfPlayConfig
from actors.inference_server import InferenceClient
from games import Game
from inference.network import ValueFunction
from inference.networks import NetworkConfig
from search.cache import CachedEvaluator, CachedValueFn
from inference.network import NetworkEvaluator


@dataclass(frozen=True)
class CollectorSetup:
    """What an actor knows when it builds its collector."""

    game: Game
    network: NetworkConfig
    config: SelfPlayConfig  # the run's self-play settings, whole
    num_envs: int  # this actor's environments
    seed: int  # this actor's (drawn from the run's seed and its index)
    gamma: float  # the run's discount
    eval_cache: str  # "cache", "batch" or "off" (``auto`` already made concrete)
    oracle: Any = None  # an OracleClient: the labels of an algorithm that asks for them while collecting
    oracle_store: str | None = None
    inference_server: Any = None  # an InferenceActor that evaluates for this actor (values only)
    settings: Any = None  # the algorithm's own settings record (its descriptor's ``settings``), if it has one


def value_function(setup: CollectorSetup):
    """Values of positions, ``float32[N]`` of encodings: an inference server's client (the
    server applies the cache and the inference path), or the actor's own network behind the
    evaluation cache. A symmetrized network (Connect Four, Hex) values a position and its
    images alike: they share one cache entry (more hits: docs/benchmarks.md)."""
    if setup.inference_server is not None:
        return InferenceClient(setup.inference_server)
    value_fn = ValueFunction(setup.game, setup.network, inference_dtype=setup.config.inference_dtype,
                             compile=setup.config.compile)
    if setup.eval_cache == "off":
        return value_fn
    images = [s.obs for s in setup.game.symmetries()] if setup.network.symmetrize else None
    return CachedValueFn(value_fn, persist=setup.eval_cache == "cache", symmetries=images)


def avi_options(config: SelfPlayConfig) -> dict:
    """The AviCollector's keyword arguments that come from the self-play config."""
    return dict(epsilon=config.epsilon, sample_actions=config.sample_actions, sample_by=config.sample_by,
                archive_start=config.archive_start, archive_size=config.archive_size)


def avi(setup: CollectorSetup):
    """AVI: epsilon-greedy one-step lookahead on the network's values."""
    return value_function(setup), AviCollector(setup.game, setup.num_envs, gamma=setup.gamma, seed=setup.seed,
                                               **avi_options(setup.config))


def network_evaluator(setup: CollectorSetup):
    """Priors and values for MCTS from the actor's own network, behind the evaluation cache."""
    evaluator = NetworkEvaluator(setup.game, setup.network, inference_dtype=setup.config.inference_dtype,
                                 compile=setup.config.compile)
    if setup.eval_cache == "off":
        return evaluator
    return CachedEvaluator(setup.game, evaluator, persist=setup.eval_cache == "cache")


def alphazero_options(config: SelfPlayConfig) -> dict:
    """The AlphaZeroCollector's keyword arguments that come from the self-play config."""
    return dict(mcts=config.mcts, search=config.search, gumbel=config.gumbel,
                archive_start=config.archive_start, archive_size=config.archive_size)


def alphazero(setup: CollectorSetup):
    """AlphaZero: MCTS self-play; rows of finished games."""
    return network_evaluator(setup), AlphaZeroCollector(setup.game, setup.num_envs, seed=setup.seed,
                                                        **alphazero_options(setup.config))
