"""The papers' metrics over labelled states, traces and matches, and their statistics.

- :func:`state_metrics`: value MAE (AVI eq. 6) and policy regret (eq. 7) of any policy
  ``choose(states) -> int64[B]`` and value ``value(states) -> float32[B]``, overall and
  per group (the six Connect Four groups of D.3) and per game phase;
- :func:`trace_metrics`: the AZAL paper's trace metrics (Table 1, 3, 4): Perfect, Match,
  Chain, FirstFail, per player, and the losing-but-won count;
- :func:`t_quantile`, :func:`mean_ci`: means and Student-t confidence intervals
  across seeds (Section 4.6), without scipy.

Regret of a move is ``V*(s) - q*(s, a)`` with exact undiscounted action values, so a
move that keeps the outcome costs 0, a win given up for a draw 1, for a loss 2.
Against a weak oracle (Hex: V* and q* in {-1, +1}) the value MAE is the paper's, and
``value_sign_error`` (asked with ``sign_error=True``) is the fraction of states whose
predicted value has not the sign of V* (0 counts as wrong), which no discount changes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from evaluation.labels import LabelledStates
from games import take

# ------------------------------------------------------------------ statistics


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularized incomplete beta (Lentz's method)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom."""
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t (bisection on :func:`t_cdf`)."""
    if not 0.0 < p < 1.0 or df <= 0:
        raise ValueError(f"t_quantile: need 0 < p < 1 and df > 0, got p={p}, df={df}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if t_cdf(mid, df) < p else (lo, mid)
    return 0.5 * (lo + hi)


def mean_ci(samples: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """(mean, half-width of the ``level`` Student-t interval); half-width 0 for one sample."""
    x = np.asarray(samples, np.float64)
    if x.size == 0:
        raise ValueError("mean_ci: no samples")
    if x.size == 1:
        return float(x[0]), 0.0
    sem = x.std(ddof=1) / math.sqrt(x.size)
    return float(x.mean()), float(t_quantile(0.5 + level / 2.0, x.size - 1) * sem)


# -------------------------------------------------------------- labelled states


def phase_of(groups: np.ndarray) -> np.ndarray:
    """Game phase (opening, midgame, endgame) of Connect Four group names."""
    return np.array([g.split("-")[-1] for g in groups], dtype=object)


def regrets(labels: LabelledStates, actions: np.ndarray) -> np.ndarray:
    """float32[N]: V*(s) - q*(s, a) of ``actions``; ValueError for an illegal one."""
    actions = np.asarray(actions)
    n = len(labels.v_star)
    if actions.shape != (n,):
        raise ValueError(f"policy returned actions of shape {actions.shape} for {n} states")
    q = labels.q_star[np.arange(n), actions]
    if not np.isfinite(q).all():
        i = int(np.flatnonzero(~np.isfinite(q))[0])
        raise ValueError(f"policy chose illegal action {int(actions[i])} in state {i}")
    return (labels.v_star - q).astype(np.float32)


def _summary(err: np.ndarray | None, reg: np.ndarray | None, prefix: str, wrong_sign: np.ndarray | None = None) -> dict:
    out = {}
    if err is not None:
        out[f"{prefix}value_mae"] = float(err.mean())
    if wrong_sign is not None:
        out[f"{prefix}value_sign_error"] = float(wrong_sign.mean())
    if reg is not None:
        out[f"{prefix}policy_regret"] = float(reg.mean())
        out[f"{prefix}optimal_move_rate"] = float((reg <= 1e-6).mean())
    return out


def state_metrics(labels: LabelledStates, *, choose=None, value=None, groups: np.ndarray | None = None,
                  batch: int = 4096, sign_error: bool = False) -> dict:
    """Value MAE and policy regret on ``labels`` (each part only if its callable is given),
    overall, then ``{group}/...`` and ``{phase}/...`` when Connect Four ``groups`` are given;
    with ``sign_error`` (labels without draws: a weak oracle's) also ``value_sign_error``.
    Callables are called on batches of at most ``batch`` states."""
    n = len(labels.v_star)
    err = reg = wrong = None
    if value is not None:
        v = np.concatenate([np.asarray(value(take(labels.states, slice(lo, lo + batch))), np.float32)
                            for lo in range(0, n, batch)])
        err = np.abs(v - labels.v_star)
        if sign_error:
            wrong = v * labels.v_star <= 0
    if choose is not None:
        a = np.concatenate([np.asarray(choose(take(labels.states, slice(lo, lo + batch))))
                            for lo in range(0, n, batch)])
        reg = regrets(labels, a)
    out = {**_summary(err, reg, "", wrong), "states": n}
    if groups is not None and not all(g == "all" for g in groups):
        groups = np.asarray(groups, dtype=object)
        for kind in (groups, phase_of(groups)):
            for g in sorted(set(kind)):
                m = kind == g
                out.update(_summary(None if err is None else err[m], None if reg is None else reg[m], f"{g}/",
                                    None if wrong is None else wrong[m]))
                out[f"{g}/states"] = int(m.sum())
    return out


# ----------------------------------------------------------------------- traces


class Trace(NamedTuple):
    """One oracle-annotated game, ply by ply (AZAL B.4)."""

    seat: np.ndarray  # int8[T], 0 = the player who moved first in the trace, 1 = the other
    labelled: np.ndarray  # bool[T], the oracle has a best move set here
    matched: np.ndarray  # bool[T], the move played is in it (meaningful where labelled)
    losing: np.ndarray  # bool[T], the oracle says the mover is losing (V* < 0; Chomp g = 0)
    winner: int  # seat of the winner, -1 for a draw


def _longest_run(ok: np.ndarray) -> int:
    best = run = 0
    for x in ok:
        run = run + 1 if x else 0
        best = max(best, run)
    return best


def trace_metrics(traces: Sequence[Trace]) -> dict:
    """AZAL trace metrics over ``traces``.

    perfect: fraction of traces with no labelled non-oracle move. match: oracle-best moves
    / labelled moves, pooled. chain: mean over traces of the longest run of consecutive
    labelled oracle-best moves (unlabelled plies neither extend nor break a run).
    first_fail: mean over imperfect traces of the ply (0-based) of the first labelled
    non-oracle move. Suffixes ``_p1`` / ``_p2``: the same over the first / second
    player's moves only (NaN where undefined, AZAL's N/A). losing_but_won: plies where the
    oracle says the mover is losing and that player still won the game, over the
    oracle-losing plies (``losing_plies``)."""
    out: dict = {"traces": len(traces), "plies": int(sum(len(t.seat) for t in traces))}
    for suffix, seats in (("", (0, 1)), ("_p1", (0,)), ("_p2", (1,))):
        labelled = matched = 0
        chains, fails, perfect = [], [], 0
        for t in traces:
            mine = np.isin(t.seat, seats) & t.labelled
            ok = t.matched[mine]
            labelled += int(mine.sum())
            matched += int(ok.sum())
            chains.append(_longest_run(ok))
            bad = np.flatnonzero(mine & ~t.matched)
            if bad.size:
                fails.append(int(bad[0]))
            else:
                perfect += 1
        out[f"perfect{suffix}"] = perfect / len(traces) if traces else float("nan")
        out[f"match{suffix}"] = matched / labelled if labelled else float("nan")
        out[f"labelled{suffix}"] = labelled
        out[f"chain{suffix}"] = float(np.mean(chains)) if chains else float("nan")
        out[f"first_fail{suffix}"] = float(np.mean(fails)) if fails else float("nan")
    losing = won = 0
    for t in traces:
        losing += int(t.losing.sum())
        won += int((t.losing & (t.seat == t.winner)).sum())
    out["losing_plies"] = losing
    out["losing_but_won"] = won
    out["losing_but_won_rate"] = won / losing if losing else float("nan")
    return out
