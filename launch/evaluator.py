"""The evaluator of a training run: a Ray actor around ``evaluation.runner.SuiteRunner``.

Every ``evaluation.every`` iterations the run hands it the newest weights (a versioned object
reference, as the self-play actors get them) and logs the metrics it returns under
``eval/<suite>/...`` in ``metrics.jsonl`` and W&B. Its game suites (``PLAY_KINDS``: play
against the oracle, self-play traces and games against an outside engine, whole games
from every opening) run at every
``evaluation.play_every``-th of those evaluations, counted from the untrained network's, and
on the final weights; the other suites at every one. Where it scores the game's states,
the run logs no built-in exact metrics (``eval/value_mae`` ...) beside it. It works in
its own process, on the game's fixed datasets (``evaluation/datasets.py``), and keeps
its suites loaded between calls; it takes no CPU of its own because the synchronous
schedule leaves the actors idle while it runs.
Its Connect Four and Hex oracle queries (play and trace suites) go to the run's oracle
service (``oracle``, an ``OracleClient``), which the run starts for them.

A run whose algorithm searches (its descriptor's ``searches``: AlphaZero, AZAL) also
plays every suite with that search at its training budget, PUCT (``mcts``) or Gumbel
as ``actors.search`` says at ``actors.mcts.simulations``, without root noise, beside the
evaluation's own policy (its policy head): ``evaluation.also_search=auto``
(:func:`training_search`). Each suite by each policy is one of the evaluator's
:func:`evaluated_runs`, ``connect4-play`` and ``connect4-play@mcts64``: its metrics have
keys of their own (``evaluation.metric_keys.policy_suite``), and a wall clock plans,
times and leaves out each on its own (``launch/eval_plan.py``).

Which suites (``EvaluationConfig.suites``): ``auto`` runs the default suites of the games
with an oracle dataset (Connect Four, Chomp, F-Games), and on Hex its labelled states
(``hex-uniform``, seconds, once the file exists) but not its play against the solver
(256 games, minutes of solving for a new network: ``hex-play`` is
run when named, or by ``launch evaluate``); on Hex 3x3 to 6x6 (sets built on first use) its
states and its play, seconds each; Othello and Go have only match suites, slow
on CPUs, so ``auto`` runs none there. ``default`` runs the game's defaults whatever the game, ``none`` none,
and a comma-separated list those suites.
"""

from __future__ import annotations

from typing import NamedTuple

import ray
import torch

import algorithms
import games
from evaluation.config import EvaluationConfig, named_suites
from evaluation.metric_keys import policy_tag
from evaluation.oracles import oracle_in_service
from evaluation.runner import SuiteRunner, evaluation_policies, suite_runs
from evaluation.suites import auto_suite_names, suites_for
from inference.game_network import GameNetwork
from lifecycle import TASK_EVENTS, watched

# Suites of whole games from every opening, on the evaluation.play_every cadence: on Connect
# Four they take minutes (1,136 games against the oracle), the states suites seconds.
PLAY_KINDS = ("play", "traces", "engine")  # engine: games against GNU Go or gtp-rhino over GTP
# The evaluation policy (evaluation/policy_registry.py) of each self-play search (actors.search):
# the same search without its root noise, the most visited move or the Sequential Halving winner.
SEARCH_POLICIES = {"puct": "mcts", "gumbel": "gumbel"}


def training_search(config) -> str | None:
    """The tag of the search a run (a ``TrainConfig``) trains with at its training budget
    (``mcts64``, ``gumbel16``), or None where its algorithm's self-play searches no tree."""
    if not algorithms.descriptor(config.algo).searches:
        return None
    return policy_tag(SEARCH_POLICIES[config.actors.search], config.actors.mcts.simulations)


def training_search_settings(config) -> dict:
    """The exploration constants a run's search trains with (``actors.mcts``'s PUCT
    constants), which its evaluation by that search plays with too."""
    mcts = config.actors.mcts
    return {"c_puct": mcts.c_puct, "c_init": mcts.c_init, "c_base": mcts.c_base}


def evaluated_runs(config) -> list[str]:
    """The names of what the evaluator of a run (a ``TrainConfig``) scores, each suite by
    each policy, as :meth:`EvaluatorWorker.runs` gives them: the suites' own names (its
    ``evaluation.policy``), then the second policy's (``connect4-play@mcts64``)."""
    game = config.game_network.make_game()
    own, also = evaluation_policies(config.evaluation, policy_head=config.network.policy_head, gamma=config.gamma,
                                    training_search=training_search(config))
    return [run.name for run in suite_runs(evaluated_suites(game, config.evaluation.suites), own, also)]


def chosen_suites(game: games.Game | str, eval_suites: str) -> list[str] | None | bool:
    """The suites to pass to ``SuiteRunner`` (None: the game's defaults), or False: none;
    ``auto`` is what the game's descriptor says at its board (``evaluation.suites.auto_suite_names``;
    a game's name: its default parameters)."""
    value = eval_suites.strip()
    if value == "none":
        return False
    if value == "auto":
        return auto_suite_names(game)
    if value == "default":
        return None
    return named_suites(value)


def evaluated_suites(game: games.Game, eval_suites: str) -> list:
    """The game's suites that ``eval_suites`` (``EvaluationConfig.suites``) makes the evaluator run (its defaults for
    auto/default, none for none); names that are not the game's are left out."""
    chosen = chosen_suites(game, eval_suites)
    if chosen is False:
        return []
    return [s for s in suites_for(game) if (s.default if chosen is None else s.name in chosen)]


def evaluator_needs_oracle(game: games.Game | str, eval_suites: str) -> bool:
    """Whether the evaluator asks the Connect Four or Hex oracle (its play or trace
    suites), so that the run starts the oracle service for it. Chomp's and F-Games'
    oracles are tables and values by construction, answered in the evaluator's process."""
    if not oracle_in_service(game):
        return False
    game = games.make(game) if isinstance(game, str) else game
    return any(s.kind in PLAY_KINDS for s in evaluated_suites(game, eval_suites))


class Evaluated(NamedTuple):
    """An evaluation's answer: the flat ``eval/...`` metrics, and the game suites given up
    on for time (run name -> seconds they ran)."""

    metrics: dict
    abandoned: dict


class EvaluatorWorker:
    def __init__(self, *, game_network: GameNetwork, config: EvaluationConfig, gamma: float,
                 oracle_store: str | None, oracle=None, training_search: str | None = None,
                 search_settings: dict | None = None):
        """``game_network``: the game and the network it evaluates (the run's,
        ``TrainConfig.game_network``); ``config``: the run's evaluation settings, whole (its
        suites resolved by :func:`chosen_suites`; a run with none starts no evaluator);
        ``training_search``: the run's :func:`training_search`, what ``also_search=auto`` plays,
        with ``search_settings`` (:func:`training_search_settings`)."""
        torch.set_num_threads(1)
        made = game_network.make_game()
        suites = chosen_suites(made, config.suites)
        if suites is False:
            raise ValueError(f"evaluation.suites={config.suites!r} runs no suite of {made!r}: start no evaluator")
        self.evaluator = SuiteRunner(made, game_network.network, suites=suites,
                                     evaluation=config, gamma=gamma, oracle_store=oracle_store or "default",
                                     oracle_client=oracle, training_search=training_search,
                                     search_settings=search_settings)

    def evaluate(self, weights: list, *, play: bool = True, others: bool = True,
                 limits: dict[str, float] | None = None, deadline: float | None = None) -> Evaluated:
        """Metrics of ``weights[0]`` (a ``WeightVersion``, in a list so Ray passes the
        reference) on its costly runs (``play``: :meth:`play_suites`) and the others
        (``others``). With ``limits`` (a run on a wall clock: ``launch/eval_plan.py``), only
        the costly runs it names are played, each abandoned after its seconds or at
        ``deadline``."""
        costly = set(self.play_suites())
        wanted = [run.name for run in self.evaluator.runs
                  if (play and run.name in costly and (limits is None or run.name in limits))
                  or (others and run.name not in costly)]
        if not wanted:
            return Evaluated({}, {})
        skip = [run.name for run in self.evaluator.runs if run.name not in wanted]
        metrics = self.evaluator.evaluate(ray.get(weights[0].ref), skip=skip, limits=limits, deadline=deadline)
        return Evaluated(metrics, dict(self.evaluator.abandoned))

    def suites(self) -> list[str]:
        """The names of what it scores, each suite by each policy (:func:`evaluated_runs`)."""
        return [run.name for run in self.evaluator.runs]

    def play_suites(self) -> list[str]:
        """The names of its costly runs, on the ``play_every`` cadence and planned by a wall
        clock: the game suites by every policy, and every suite by the second policy (a
        search at its training budget costs its simulations per state, far more than the
        policy head's one evaluation)."""
        return [run.name for run in self.evaluator.runs if run.suite.kind in PLAY_KINDS or not run.own]


EvaluatorActor = ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=-1, enable_task_events=TASK_EVENTS)(
    watched(EvaluatorWorker))
