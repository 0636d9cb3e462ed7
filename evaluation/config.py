"""The evaluation configuration: what the evaluator of a training run and ``launch
evaluate`` read, declared once and validated here.

A training run hands its evaluator actor this record whole (``launch/evaluator.py``);
``launch evaluate`` builds its options from the same fields (:func:`add_arguments`), and
an experiment spec's sizes set them under ``evaluation``. ``--set evaluation.KEY=VALUE``
sets one field of a run.
"""

from __future__ import annotations

import argparse
import inspect
import io
import tokenize
from dataclasses import dataclass, fields

from evaluation import policy_registry
from evaluation.metric_keys import parse_policy_tag, policy_tag
from inference.precision import INFERENCE_DTYPES, check_dtype

# Which suites: ``auto`` runs the defaults of the games whose oracle data answers in
# seconds to minutes (their descriptors say which), ``default`` the game's defaults,
# ``none`` none, and a comma-separated list those suites.
SUITE_CHOICES = ("auto", "default", "none")


@dataclass(frozen=True)
class EvaluationConfig:
    """The suites a network is scored on, how it plays them, and how often a run does it."""

    suites: str = "auto"  # auto, default, none, or a comma-separated list of suite names
    policy: str = "auto"  # auto (greedy, or the policy head's argmax) or a policy of evaluation/policy_registry.py
    simulations: int = 64  # the search's simulations per move (policy mcts or gumbel)
    depth: int = 2  # minimax depth (policy minimax)
    max_openings: int = 0  # play, trace and match suites from the first N openings only (0: all)
    inference_dtype: str = "fp32"  # the network's inference path: auto, fp32, bf16 or int8 (inference/precision.py)
    reuse: bool = False  # mcts, gumbel: each search starts from the subtree kept from the game's previous one
    # (off by default: with reuse a move depends on the game's history, and a suite's results on its batching)

    # A second policy whose decisions every suite also scores, under eval/<suite>@<tag>/
    # (evaluation/metric_keys.py), beside `policy`'s under the suite's own keys; the value
    # head's metrics are the network's, kept once. auto: a training run's own search at
    # its training budget (actors.search at actors.mcts.simulations: mcts64) where its
    # algorithm searches (its descriptor's `searches`), none elsewhere and in `launch
    # evaluate`; or a policy's tag, its name and budget (mcts128, gumbel32, minimax3,
    # greedy), a bare search taking `simulations` or `depth`.
    also_search: str = "auto"  # a second policy every suite scores (keys eval/SUITE@mcts32/...): auto (a searching algorithm's training search at its budget), none, or a policy and budget (mcts32)

    every: int = 1  # training: iterations between evaluations (built-in exact labels and the suites)
    play_every: int = 1  # training: evaluations between the game suites (play, traces, engines: minutes each)
    # training on a wall clock (--minutes): the share of it all evaluations may take; the
    # game suites are planned into it, the final weights' first (launch/eval_plan.py)
    time_share: float = 0.2  # of a --minutes run's wall clock, at most, for its evaluations

    def __post_init__(self):
        if self.policy not in policy_registry.choices():
            raise ValueError(f"policy must be one of {', '.join(policy_registry.choices())}, got {self.policy!r}")
        for name in ("simulations", "depth", "every", "play_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not 0.0 < self.time_share < 1.0:
            raise ValueError(f"time_share must lie strictly between 0 and 1, got {self.time_share}")
        if self.max_openings < 0:
            raise ValueError(f"max_openings must be >= 0 (0: all), got {self.max_openings}")
        check_dtype(self.inference_dtype, type(self).__name__)
        _check_also_search(self.also_search)
        if not named_suites(self.suites) and self.suites.strip() not in SUITE_CHOICES:
            raise ValueError(f"suites must be auto, default, none or a list of suite names, got {self.suites!r}")


    def also_policy(self, training_search: str | None = None) -> str | None:
        """The tag of the policy every suite is also scored with (``mcts32``: the name its
        suites' keys carry, ``evaluation.metric_keys.policy_suite``), or None for none.
        ``training_search``: the tag of the search the network trains with at its training
        budget, what auto stands for (None: it trains with none, or is not a run's)."""
        value = self.also_search.strip()
        if value == ALSO_NONE:
            return None
        if value == ALSO_AUTO:
            return training_search
        policy, budget = parse_policy_tag(value)
        setting = policy_registry.entry(policy).budget
        if budget is None and setting is not None:  # a bare search plays at this config's own budget
            budget = getattr(self, setting)
        return policy_tag(policy, budget)


# also_search's words besides a policy's tag.
ALSO_AUTO, ALSO_NONE = "auto", "none"


def _check_also_search(value: str) -> None:
    """ValueError naming the field unless ``value`` is auto, none or a registered policy's tag
    (with a budget only where the policy has one)."""
    value = value.strip()
    if value in (ALSO_AUTO, ALSO_NONE):
        return
    usage = (f"also_search must be {ALSO_AUTO}, {ALSO_NONE} or a policy of evaluation/policy_registry.py "
             f"({', '.join(policy_registry.names())}) with its budget, e.g. mcts32")
    try:
        policy, budget = parse_policy_tag(value)
        setting = policy_registry.entry(policy).budget
    except ValueError:
        raise ValueError(f"{usage}; got {value!r}") from None
    if budget is not None and setting is None:
        raise ValueError(f"{usage}; {policy} has no budget, got {value!r}")
    if budget is not None and budget < 1:
        raise ValueError(f"{usage}; its {setting} must be >= 1, got {value!r}")


def named_suites(suites: str) -> list[str]:
    """The suite names a ``suites`` setting lists ([] for auto, default and none)."""
    value = suites.strip()
    if value in SUITE_CHOICES:
        return []
    return [s.strip() for s in value.split(",") if s.strip()]


# The fields `launch evaluate` takes as options (the others are a training run's cadence).
EVALUATE_OPTIONS = ("policy", "simulations", "depth", "max_openings", "inference_dtype", "reuse")
# Read when a parser is made, so that it offers every policy registered by then.
_CHOICES = {"policy": policy_registry.choices, "inference_dtype": lambda: INFERENCE_DTYPES}


def field_comments(cls) -> dict[str, str]:
    """Each field of dataclass ``cls`` -> the comment at the end of its line in the source."""
    out, names = {}, {f.name for f in fields(cls)}
    tokens = tokenize.generate_tokens(io.StringIO(inspect.getsource(cls)).readline)
    line_name: str | None = None
    for tok in tokens:
        if tok.type == tokenize.NEWLINE or tok.type == tokenize.NL:
            line_name = None
        elif tok.type == tokenize.NAME and line_name is None and tok.string in names and tok.start[1] == 4:
            line_name = tok.string
        elif tok.type == tokenize.COMMENT and line_name is not None:
            out[line_name] = tok.string.lstrip("# ").strip()
    return out


def add_arguments(parser: argparse.ArgumentParser, names=EVALUATE_OPTIONS) -> None:
    """Options ``--NAME`` for the fields ``names`` of EvaluationConfig, with its defaults,
    types and comments: the command line declares no evaluation setting of its own."""
    helps, defaults = field_comments(EvaluationConfig), EvaluationConfig()
    for f in fields(EvaluationConfig):
        if f.name not in names:
            continue
        default, flag = getattr(defaults, f.name), f"--{f.name.replace('_', '-')}"
        if isinstance(default, bool):  # a switch: --reuse / --no-reuse
            parser.add_argument(flag, dest=f.name, action=argparse.BooleanOptionalAction, default=default,
                                help=helps.get(f.name, ""))
        else:
            choices = _CHOICES[f.name]() if f.name in _CHOICES else None
            parser.add_argument(flag, dest=f.name, type=type(default), default=default, choices=choices,
                                help=f"{helps.get(f.name, '')} (default: {default})")


def from_arguments(args: argparse.Namespace, **changes) -> EvaluationConfig:
    """The EvaluationConfig of ``launch evaluate``'s parsed options (and ``changes``)."""
    values = {name: getattr(args, name) for name in EVALUATE_OPTIONS if hasattr(args, name)}
    return EvaluationConfig(**{**values, **changes})
