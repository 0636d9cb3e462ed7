"""The keys of evaluation metrics in ``metrics.jsonl`` and W&B: written by the suite
runner, read by the reports.

A suite's metric is ``eval/<suite>/<kind>`` (``eval/connect4-uniform/policy_regret``),
or per subset of its states ``eval/<suite>/<subset>/<kind>``, where the subset may hold
slashes of its own (``eval/connect4-uniform/easy-opening/policy_regret``). The run's
built-in exact metrics are ``eval/<kind>``, without a suite.

A suite played with a second policy beside the run's own (``evaluation.also_search``:
AlphaZero's search at its training budget beside its policy head) is its own suite by
name, ``<suite>@<policy><budget>``: ``eval/connect4-play@mcts32/error_rate`` is the
error rate of PUCT MCTS at 32 simulations on ``connect4-play``. The budget is the
setting the policy's entry names (``evaluation.policy_registry``: simulations, depth),
absent for a policy without one (``connect4-uniform@greedy``). The suite part of such a
key holds no slash, so :func:`parse_metric_key` splits it as any other, and the keys of
the run's own policy stay ``eval/<suite>/<kind>``; :func:`policy_suite` builds the name
and :func:`split_policy_suite` takes it apart.
"""

from __future__ import annotations

import re
from typing import NamedTuple

PREFIX = "eval/"
POLICY_MARK = "@"  # between a suite's name and the policy it was played with

# The kinds each view of a run shows, declared here once for the reports and the
# end-of-run summary.
# The AVI paper's Figure 1 columns: first, in this order, in an experiment's figures.
FIGURE_ONE_KINDS = ("value_mae", "policy_regret", "error_rate")
# What the reports draw and tabulate (a run's, an experiment's, and the checkpoint
# sensitivity of both): Figure 1's, the value's sign, the rest of play against the
# oracle (blunders, score, margin) and head-to-head matches.
REPORT_KINDS = frozenset(FIGURE_ONE_KINDS + ("value_sign_error", "blunder_rate", "score", "margin", "match"))
# The lines of the end-of-run summary, per suite in this order.
SUMMARY_KINDS = ("value_mae", "policy_regret", "optimal_move_rate", "error_rate", "blunder_rate", "score")
# The metrics an inference point is drawn by, first the paper's (Figure 2: the error rate
# in play; the policy regret of a states suite), then the per-move rates of play, which
# still tell the searches apart while every game is lost to the oracle (a weak network
# against a perfect opponent leaves the error rate at the share of openings not lost).
INFERENCE_KINDS = ("error_rate", "move_error_rate", "move_match_rate", "policy_regret", "optimal_move_rate")
# The scale each bounded kind lies on. A figure draws a 95% band over seeds within it:
# over two or three seeds a Student-t band can pass the scale's ends, which says no more
# than the ends do.
KIND_RANGES = {"error_rate": (0.0, 1.0), "blunder_rate": (0.0, 1.0), "value_sign_error": (0.0, 1.0),
               "optimal_move_rate": (0.0, 1.0), "move_error_rate": (0.0, 1.0), "move_match_rate": (0.0, 1.0),
               "score": (-1.0, 1.0)}


class MetricKey(NamedTuple):
    suite: str | None  # None: the run's built-in exact metrics
    subset: str | None  # None: the suite's overall value
    kind: str  # value_mae, policy_regret, error_rate, ...

    def __str__(self) -> str:
        return PREFIX + "/".join(p for p in (self.suite, self.subset, self.kind) if p is not None)


def suite_metric(suite: str, name: str) -> str:
    """The key of a suite's metric ``name`` (``kind`` or ``subset/kind``)."""
    return f"{PREFIX}{suite}/{name}"


def parse_metric_key(key: str) -> MetricKey | None:
    """The parts of an evaluation metric's key; None for a key that is not one."""
    if not key.startswith(PREFIX) or key == PREFIX:
        return None
    parts = key[len(PREFIX):].split("/")
    if len(parts) == 1:
        return MetricKey(None, None, parts[0])
    return MetricKey(parts[0], "/".join(parts[1:-1]) or None, parts[-1])


class PolicySuite(NamedTuple):
    suite: str  # the suite's own name (connect4-play)
    policy: str | None  # the policy it was played with; None: the run's own (no mark)
    budget: int | None  # that policy's budget (simulations, depth); None: it has none


# A policy's tag: its name, then its budget's digits (mcts32, minimax3, policy-head).
# Registered names hold letters and hyphens only (evaluation.policy_registry), so the split is unique.
_TAG = re.compile(r"(?P<policy>[A-Za-z_-]+)(?P<budget>[0-9]+)?")


def policy_tag(policy: str, budget: int | None = None) -> str:
    """``mcts32``: the policy's name and its budget, as a suite's name and
    ``evaluation.also_search`` spell them."""
    if not _TAG.fullmatch(policy) or (budget is not None and budget < 1):
        raise ValueError(f"a policy tag needs a name of letters and hyphens and a budget >= 1, "
                         f"got {policy!r} and {budget!r}")
    return policy if budget is None else f"{policy}{int(budget)}"


def parse_policy_tag(tag: str) -> tuple[str, int | None]:
    """(policy, budget) of a tag (``mcts32`` -> ("mcts", 32), ``greedy`` -> ("greedy", None))."""
    found = _TAG.fullmatch(tag)
    if found is None:
        raise ValueError(f"a policy tag is a policy's name and its budget (mcts32, minimax3, greedy), got {tag!r}")
    return found["policy"], None if found["budget"] is None else int(found["budget"])


def policy_suite(suite: str, policy: str, budget: int | None = None) -> str:
    """The name of ``suite`` played with ``policy`` at ``budget``: ``connect4-play@mcts32``."""
    return f"{suite}{POLICY_MARK}{policy_tag(policy, budget)}"


def split_policy_suite(name: str) -> PolicySuite:
    """The parts of a suite's name: ``connect4-play@mcts32`` -> (connect4-play, mcts, 32);
    a name without the mark is the run's own policy's (``connect4-play`` -> (connect4-play,
    None, None))."""
    suite, mark, tag = name.partition(POLICY_MARK)
    if not mark:
        return PolicySuite(name, None, None)
    return PolicySuite(suite, *parse_policy_tag(tag))
