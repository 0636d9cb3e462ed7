"""The policies an agent plays with, by name: each declared once, here, with what it
needs, the settings it reads and the factory that builds it.

Evaluation (``evaluation.runner.SuiteRunner``, ``launch evaluate --policy``), the board
(``board.agents``, ``launch play --policy``) and GTP (``launch gtp --policy``) build
their players through :func:`make` and list the choices with :func:`names`, so that a
policy registered here (:func:`register`) is playable by all three with no other edit.

A policy is ``choose(states) -> int64[B]`` (``evaluation.policies.Choose``). One that can
show its reasoning on the board also has ``choose.think(state) -> (action, info)`` for a
one-state batch (``evaluation.policies.greedy_policy`` and the searches have it); the
board shows the move alone for the others.

To add a policy: write its factory ``factory(PolicyInputs) -> Choose`` (the policies
themselves are in ``evaluation.policies``) and register a :class:`PolicyEntry` naming
what it needs (NEEDS) and the :class:`PolicySpec` settings it reads (PARAMETERS).
``"auto"`` is not a policy but a choice resolved per network (:func:`resolve`). This
module needs no torch, so that a configuration check can list the names.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from evaluation import policies as P
from games import Game

AUTO = "auto"  # the policy head's argmax for a network with one, else greedy (resolve)

# What a policy may need, as an error names it when it is missing.
NEEDS = {"value-head": "a network's value head", "policy-head": "a network's policy head",
         "oracle": "the game's exact oracle"}


class PolicySpec(NamedTuple):
    """A policy by name and settings, built on a model with :meth:`build`; plain data, so
    that it travels to Ray tasks. Each policy reads the settings its entry lists."""

    policy: str  # a registered name (not auto: resolved by the caller)
    gamma: float = 1.0  # the discount of the values (greedy, minimax)
    simulations: int = 64  # the search's simulations per move
    depth: int = 2  # minimax's depth in plies
    seed: int = 0  # the generator of the search or the tie-breaks
    reuse: bool = False  # tree reuse between moves (search.reuse); off: reproducible suites
    # PUCT's exploration (search.mcts.MCTSConfig): a run's search is evaluated with the
    # constants it trained with, which tuning may have changed from the paper's.
    c_puct: float = 3.0
    c_init: float = 1.25
    c_base: float = 0.0

    def build(self, game: Game, model, prior=None, oracle=None) -> P.Choose:
        """The policy on ``model`` (an ``evaluation.network.NetworkModel``); ``prior``, a
        second one, gives a search its prior while ``model`` gives the leaf values."""
        return make(self, game, model, prior=prior, oracle=oracle)


PARAMETERS = tuple(f for f in PolicySpec._fields if f != "policy")  # the settings a policy may read


class PolicyInputs(NamedTuple):
    """What a factory builds its policy from; what the entry does not need may be None."""

    game: Game
    model: object  # evaluation.network.NetworkModel (value_obs, logits, evaluate)
    spec: PolicySpec
    prior: object = None  # a second NetworkModel whose policy head gives a search's prior
    oracle: object = None  # evaluation.oracles.Oracle


@dataclass(frozen=True)
class PolicyEntry:
    """One policy: its name, a line saying what it plays, what it needs, the settings it
    reads and its factory. ``takes_prior``: it searches with a second network's prior."""

    name: str
    summary: str
    factory: Callable[[PolicyInputs], P.Choose]
    needs: tuple[str, ...] = ("value-head",)
    parameters: tuple[str, ...] = ()
    takes_prior: bool = False
    budget: str | None = None  # the setting an experiment's inference study varies (simulations, depth)
    # Network evaluations a decision costs, from the game's number of actions and the
    # policy's settings (the reports' inference cost); None: not counted.
    evaluations: Callable[[int, PolicySpec], float] | None = None

    def __post_init__(self):
        # Letters and hyphens: a suite played with it is named <suite>@<name><budget>
        # (evaluation.metric_keys), its budget the digits at the end.
        if not re.fullmatch(r"[A-Za-z_-]+", self.name) or self.name == AUTO:
            raise ValueError(f"a policy's name must be letters, hyphens or underscores, other than {AUTO!r}, "
                             f"got {self.name!r}")
        unknown = [n for n in self.needs if n not in NEEDS]
        if unknown:
            raise ValueError(f"policy {self.name!r}: unknown needs {unknown}; known: {', '.join(NEEDS)}")
        unknown = [p for p in self.parameters if p not in PARAMETERS]
        if unknown:
            raise ValueError(f"policy {self.name!r}: unknown parameters {unknown}; known: {', '.join(PARAMETERS)}")


class PolicyUnavailable(ValueError):
    """The policy asked for needs what the network (or the caller) lacks."""


_ENTRIES: dict[str, PolicyEntry] = {}


def register(entry: PolicyEntry) -> PolicyEntry:
    if entry.name in _ENTRIES:
        raise ValueError(f"a policy named {entry.name!r} is registered already")
    _ENTRIES[entry.name] = entry
    return entry


def unregister(name: str) -> None:
    """Remove the policy ``name`` (a test's own, once the test is done)."""
    entry(name)
    del _ENTRIES[name]


def names() -> tuple[str, ...]:
    """The registered policies, in the order they were registered."""
    return tuple(_ENTRIES)


def choices() -> tuple[str, ...]:
    """What a ``--policy`` option takes: auto and the registered policies."""
    return (AUTO, *names())


def entry(name: str) -> PolicyEntry:
    if name not in _ENTRIES:
        raise ValueError(f"unknown policy {name!r}; known: {', '.join(names())}")
    return _ENTRIES[name]


def describe(name: str) -> str:
    """One line: the policy, what it plays, what it needs and which settings it reads."""
    e = entry(name)
    needs = ", ".join(NEEDS[n] for n in e.needs) or "nothing"
    reads = ", ".join(e.parameters) or "none"
    prior = "; takes a second network's prior" if e.takes_prior else ""
    return f"{e.name}: {e.summary} (needs {needs}; settings {reads}{prior})"


def resolve(name: str, has_policy_head: bool) -> str:
    """``name``, with auto made the policy head's argmax or greedy by the network."""
    if name != AUTO:
        return entry(name).name
    return "policy-head" if has_policy_head else "greedy"


def check(name: str, *, has_policy_head: bool, prior: bool = False, oracle: bool = False) -> None:
    """Raise :class:`PolicyUnavailable` naming what ``name`` needs and is not given: a
    network without a policy head, no prior network, no oracle; before any suite loads."""
    e = entry(name)
    if "policy-head" in e.needs and not has_policy_head:
        raise PolicyUnavailable(f"{name} needs a policy head; this checkpoint's network has none "
                                f"(policies for a value network: {', '.join(_playable_without_policy_head())})")
    if "oracle" in e.needs and not oracle:
        raise PolicyUnavailable(f"{name} needs {NEEDS['oracle']}; none is given here")
    if prior and not e.takes_prior:
        takers = [n for n, x in _ENTRIES.items() if x.takes_prior]
        raise PolicyUnavailable(f"a prior network is used by {', '.join(takers) or 'no policy'} only, "
                                f"not by the {name!r} policy")


def _playable_without_policy_head() -> list[str]:
    return [n for n, e in _ENTRIES.items() if "policy-head" not in e.needs]


def make(policy: str | PolicySpec, game: Game, model, *, prior=None, oracle=None, **settings) -> P.Choose:
    """The policy ``policy`` (a name with its ``settings``, PolicySpec's fields, or a
    PolicySpec) on ``model`` (an ``evaluation.network.NetworkModel``), after :func:`check`;
    ``prior``: a second model (cross-inference), ``oracle``: the game's oracle, for the
    policies that take them."""
    spec = PolicySpec(policy, **settings) if isinstance(policy, str) else policy._replace(**settings)
    has_head = model is not None and bool(model.net_config.policy_head)
    if model is None and "value-head" in entry(spec.policy).needs:
        raise PolicyUnavailable(f"{spec.policy} needs {NEEDS['value-head']}; no network is given")
    check(spec.policy, has_policy_head=has_head, prior=prior is not None, oracle=oracle is not None)
    return entry(spec.policy).factory(PolicyInputs(game, model, spec, prior, oracle))


# ---- the built-in policies ---------------------------------------------------------

def _search_evaluator(inputs: PolicyInputs):
    """The network's evaluator, or the prior's logits with the network's values."""
    if inputs.prior is None:
        return inputs.model.evaluate
    return P.cross_evaluator(inputs.model, inputs.prior)


register(PolicyEntry(
    "greedy", "AVI's G(V): one-step lookahead over the network's values",
    lambda i: P.greedy_policy(i.game, i.model.value_obs, i.spec.gamma), parameters=("gamma",),
    evaluations=lambda actions, spec: float(actions)))  # every child, at most the game's actions
register(PolicyEntry(
    "policy-head", "the argmax of the policy head's logits over the legal moves",
    lambda i: P.policy_head_policy(i.game, i.model), needs=("policy-head",),
    evaluations=lambda actions, spec: 1.0))
register(PolicyEntry(
    "mcts", "PUCT search without root noise, the most visited move (a uniform prior without a policy head)",
    lambda i: P.mcts_policy(i.game, _search_evaluator(i), simulations=i.spec.simulations, seed=i.spec.seed,
                            reuse=i.spec.reuse, c_puct=i.spec.c_puct, c_init=i.spec.c_init, c_base=i.spec.c_base),
    parameters=("simulations", "seed", "reuse", "c_puct", "c_init", "c_base"), takes_prior=True, budget="simulations",
    evaluations=lambda actions, spec: float(spec.simulations)))
register(PolicyEntry(
    "gumbel", "Gumbel AlphaZero's search without its noise, the Sequential Halving winner",
    lambda i: P.gumbel_policy(i.game, i.model.evaluate, simulations=i.spec.simulations, seed=i.spec.seed,
                              reuse=i.spec.reuse),
    parameters=("simulations", "seed", "reuse"), budget="simulations",
    evaluations=lambda actions, spec: float(spec.simulations)))
register(PolicyEntry(
    "minimax", "minimax to a depth over the network's values",
    lambda i: P.minimax_policy(i.game, i.model.value_obs, depth=i.spec.depth, gamma=i.spec.gamma, seed=i.spec.seed),
    parameters=("depth", "gamma", "seed"), budget="depth"))


class NetworkPolicy(NamedTuple):
    """``()`` -> the policy ``spec`` of a network (``net_config``, ``weights``) on the game
    ``game_name(**game_params)``, built where it is called: a Ray task's own copy of an
    agent (``evaluation.engine_suites``), since the network is not shipped, its weights are."""

    game_name: str
    game_params: dict
    net_config: object
    weights: dict
    spec: PolicySpec
    inference_dtype: str = "fp32"

    def __call__(self) -> P.Choose:
        import games
        from evaluation.network import NetworkModel  # torch: only where the policy runs

        game = games.make(self.game_name, **self.game_params)
        model = NetworkModel(game, self.net_config, self.weights, inference_dtype=self.inference_dtype)
        return self.spec.build(game, model)


def budget(spec: PolicySpec) -> int | None:
    """The value of the setting ``spec``'s policy is budgeted by (its simulations, its
    depth); None for a policy without one (greedy, policy-head)."""
    setting = entry(spec.policy).budget
    return None if setting is None else int(getattr(spec, setting))


def played(spec: PolicySpec) -> dict:
    """The policy and its budget by name, as records say what played:
    ``{"policy": "mcts", "simulations": 32}``, ``{"policy": "policy-head"}``."""
    setting = entry(spec.policy).budget
    return {"policy": spec.policy, **({setting: budget(spec)} if setting is not None else {})}


def searches() -> dict[str, str]:
    """The policies an experiment's inference study may vary, each with the setting it
    varies (its budget: ``simulations``, ``depth``)."""
    return {name: e.budget for name, e in _ENTRIES.items() if e.budget is not None}
