"""Reduced-precision inference for the actors' networks (``inference_dtype``).

The learner trains and publishes fp32 weights; an actor's :class:`inference.network.ValueFunction`
keeps them in an fp32 network and, for a fast ``inference_dtype``, derives one converted
copy per published weight version (:class:`FastPath`), at the first call that version
answers. Modes (:data:`INFERENCE_DTYPES`):

- ``fp32``: the fp32 network itself; bitwise the behaviour without this module.
- ``bf16``: a copy with bfloat16 weights, fed bfloat16 activations (oneDNN kernels), whose
  heads' last layers run in fp32 (:class:`_Bf16`, below). Fast only on CPUs with native
  bf16 arithmetic (AVX512_BF16, AMX: ``inference.machine``) and on GPUs; on an AVX2 CPU
  torch emulates it, 4-7x slower than fp32 (docs/benchmarks.md, Inference precision).
- ``int8``: int8 weights and activations through fbgemm: dynamic quantisation of the
  ``nn.Linear`` layers for the residual MLPs (activation scales per batch), static
  quantisation of the conv towers (convs fused with their BatchNorm and ReLU, activation
  scales calibrated on the version's first batch).
- ``auto``: the fastest of these on this machine: the candidates its hardware runs
  natively (:func:`candidates`) timed against fp32 once per process and network
  architecture, on the first batch (:func:`choose`); one is kept only if it beats fp32
  by :data:`MIN_SPEEDUP` there.

Whatever the mode, every version is checked before it is used (:class:`FastPath`), on
two counts: the fast copy's values on the version's first batch (up to
:data:`GUARD_ROWS` rows) stay within :data:`TOLERANCE` of fp32's, and its greedy moves
agree with fp32's on the guard positions (:class:`GuardSet`, :func:`agreement`) on at
least :data:`MIN_AGREEMENT` of them. Otherwise that version answers in fp32
(``FastPath.dtype`` says which path answered). Values leave as float32 numpy arrays in
every mode.

Why the value bound alone does not guard the moves: bf16 changed 1.2-17% of the greedy
moves of the labelled sets while every value stayed within 0.013 of fp32. Two causes,
measured on the labelled sets (docs/benchmarks.md, Precision and threads on the CPU):

- Ties made by the output's rounding. A bf16 value has an 8-bit mantissa: in [0.5, 1)
  it moves in steps of 2^-8 = 0.0039, in [2^-6, 2^-5) of 2^-13. A position's children
  whose fp32 values differ by less than a step come out equal, and the argmax takes the
  first. On connect4-uniform the 9,084 children's values collapsed to 53 distinct bf16
  values; 46-97% of the changed moves were such exact ties. The heads' last layers now
  run in fp32 on the bf16 trunk's features, which keeps the values distinct.
- Near-ties. What remains are moves whose fp32 values differ by less than the trunk's
  rounding (every changed move was within 0.0084 of fp32's best, the median 0.0006-0.0017).
  Such a move is as good as the best by the network's own values, at a resolution no
  metric resolves: agreement counts a move within :data:`TIE` of fp32's best as agreeing.

With both fixes bf16 agrees on 99.87-100% of the labelled sets' moves. The guard still
answers many Connect Four versions in fp32: an untrained network's children lie so close
that bf16 changes 0.9-1.7% of its guard moves beyond the tie, and networks trained for
7,000-8,000 updates (10-minute runs) have bf16 values 0.019-0.038 off fp32 at worst,
beyond the value tolerance, while their moves agree on 99.6-100% of the guard positions.
"""

from __future__ import annotations

import contextlib
import copy
import statistics
import time
import warnings

from typing import Callable, NamedTuple

import numpy as np
import torch
from torch import nn

from games import Game, concat, one_step_q, random_play, take
from inference.machine import this_cpu
from inference.networks import ConvResTower, NetOutput, Symmetrized

INFERENCE_DTYPES = ("auto", "fp32", "bf16", "int8")
FAST_DTYPES = ("bf16", "int8")  # the candidates of auto, in order of preference on a tie
TOLERANCE = 0.02  # maximum absolute value difference from fp32
GUARD_ROWS = 1024  # rows of a version's first batch checked against fp32
# Greedy moves: a fast copy's move agrees with fp32's where fp32 values it within TIE of
# its best move (the same move, or a near-tie; see the module doc), on at least
# MIN_AGREEMENT of the guard positions, the share the labelled sets are held to
# (tests/inference/test_fast_inference.py).
TIE = 0.002
MIN_AGREEMENT = 0.995
# Random games cut at a random ply (those not over give the guard positions: some 420 of
# tic-tac-toe, 300 of Connect Four): enough that 0.5% is two positions or more.
GUARD_POSITIONS = 512
MIN_SPEEDUP = 1.2  # auto keeps a candidate only this much faster than fp32 on its probe
PROBE_ROWS = 512


def check_dtype(dtype: str, where: str) -> str:
    if dtype not in INFERENCE_DTYPES:
        raise ValueError(f"{where}: inference_dtype must be one of {', '.join(INFERENCE_DTYPES)}, got {dtype!r}")
    return dtype


@contextlib.contextmanager
def _quiet():
    """torch.ao.quantization warns that it is deprecated in favour of torchao (not
    installed here); its fbgemm kernels are the ones measured, so the warnings are noise."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        warnings.filterwarnings("ignore", message=r".*torch\.ao\.quantization.*")
        warnings.filterwarnings("ignore", category=UserWarning, module=r"torch\.ao\..*")
        yield


class _Fp32Layer(nn.Module):
    """A head's last layer in fp32, on the bf16 trunk's features: the value and the logits
    keep fp32's resolution instead of bf16's 8-bit mantissa (the module doc's ties)."""

    def __init__(self, layer: nn.Module):
        super().__init__()
        self.layer = layer.float()

    def forward(self, x):
        return self.layer(x.float())


class _Bf16(nn.Module):
    def __init__(self, net: nn.Module):
        super().__init__()
        self.net = copy.deepcopy(net).to(torch.bfloat16)
        for module in self.net.modules():
            for name in ("value_head", "policy_head"):
                head = getattr(module, name, None)
                if isinstance(head, nn.Sequential):
                    head[-1] = _Fp32Layer(head[-1])

    def forward(self, obs):  # float32 [N, ...] -> NetOutput of float32
        out = self.net(obs.to(torch.bfloat16))
        return NetOutput(out.value.float(), None if out.logits is None else out.logits.float())


class _StaticInt8Tower(nn.Module):
    """A conv tower quantised statically by torch's FX graph mode (fbgemm): the graph
    keeps the NetOutput, the convs are fused with BatchNorm and ReLU."""

    def __init__(self, net: nn.Module, calibration: torch.Tensor):
        super().__init__()
        from torch.ao.quantization import get_default_qconfig_mapping
        from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

        prepared = prepare_fx(copy.deepcopy(net).eval(), get_default_qconfig_mapping("fbgemm"), (calibration[:2],))
        with torch.inference_mode():
            prepared(calibration)  # observers record the activation ranges
        self.net = convert_fx(prepared)

    def forward(self, obs):
        return self.net(obs)


def _tower(net: nn.Module) -> nn.Module:
    return net.net if isinstance(net, Symmetrized) else net


def convert(net: nn.Module, dtype: str, calibration: torch.Tensor) -> nn.Module:
    """A copy of the eval-mode fp32 ``net`` for ``dtype`` (bf16 or int8), answering a
    NetOutput of float32 tensors; ``calibration`` float32[M, *obs_shape] sets the static
    int8 activation ranges."""
    if dtype == "bf16":
        return _Bf16(net).eval()
    if dtype != "int8":
        raise ValueError(f"convert: no conversion for dtype {dtype!r}")
    with _quiet():
        if isinstance(_tower(net), ConvResTower):
            if isinstance(net, Symmetrized):
                raise ValueError("convert: int8 of a symmetrized conv tower is not implemented")
            return _StaticInt8Tower(net, calibration).eval()
        from torch.ao.quantization import quantize_dynamic

        return quantize_dynamic(copy.deepcopy(net), {nn.Linear}, dtype=torch.qint8).eval()


def max_abs_diff(fast: nn.Module, net: nn.Module, obs: torch.Tensor) -> float:
    """Largest |value difference| of ``fast`` from the fp32 ``net`` on ``obs``."""
    with torch.inference_mode():
        return float((fast(obs).value - net(obs).value).abs().max())


class GuardSet(NamedTuple):
    """Positions whose greedy moves a fast copy must keep: what the network evaluates for
    them, and how its answers make move values."""

    obs: torch.Tensor  # float32 [M, *obs_shape], on the network's device
    # The network's answers on obs -> one q float32[S, A] per kind of greedy move (-inf where
    # no move): the children's negamax values, and for a policy head the logits of the legal moves.
    move_values: Callable[[NetOutput], list[np.ndarray]]


def guard_set(game: Game, policy_head: bool, device: torch.device, positions: int = GUARD_POSITIONS,
              seed: int = 0) -> GuardSet:
    """The guard positions of ``game``: ``positions`` uniformly random games, each cut at a
    ply drawn uniformly below ``game.max_length`` (games over by then give none), the same
    for every process. A value network's greedy move at a position is the argmax over its
    legal moves of ``r - V(child)`` (``games.one_step_q``, gamma 1: AVI's greedy move, the
    evaluation's greedy policy); a policy head's is the argmax of its logits over the legal
    moves."""
    rng = np.random.default_rng(seed)
    cut = rng.integers(game.max_length, size=positions)
    picked = []
    for ply, step in enumerate(random_play(game, game.init(positions), rng)):
        keep = step.moving & (cut == ply)  # games not over at their cut
        if keep.any():
            picked.append(take(step.state, keep))
    states = concat(picked)
    exp = game.expand(states)
    live = (exp.legal & ~exp.done).reshape(-1)  # [S * A]: children the network values
    parts = [game.encode(take(exp.children, live))]
    if policy_head:
        parts.append(game.encode(states))
    children = int(live.sum())
    legal = game.legal(states)  # [S, A]

    def move_values(out: NetOutput) -> list[np.ndarray]:
        child_v = np.zeros(live.shape, np.float32)
        child_v[live] = out.value[:children].float().cpu().numpy()
        kinds = [one_step_q(exp, child_v, 1.0)]
        if policy_head:
            kinds.append(np.where(legal, out.logits[children:].float().cpu().numpy(), -np.inf))
        return kinds

    return GuardSet(torch.from_numpy(np.concatenate(parts)).to(device), move_values)


def agreement(fast: nn.Module, net: nn.Module, guard: GuardSet) -> float:
    """The share of the guard positions where ``fast``'s greedy move agrees with the fp32
    ``net``'s: fp32 values it within :data:`TIE` of its best move (the lowest share over
    the kinds of greedy move)."""
    with torch.inference_mode():
        ref, got = guard.move_values(net(guard.obs)), guard.move_values(fast(guard.obs))
    shares = []
    for q_ref, q_fast in zip(ref, got):
        move = q_fast.argmax(1)  # [S]
        shares.append(float((q_ref[np.arange(len(q_ref)), move] >= q_ref.max(1) - TIE).mean()))
    return min(shares)


class Check(NamedTuple):
    """A fast copy measured against fp32 for one weight version."""

    max_abs_diff: float  # of the values on the version's first rows
    agreement: float  # of the greedy moves on the guard positions (1.0 without a GuardSet)

    @property
    def holds(self) -> bool:
        return self.max_abs_diff <= TOLERANCE and self.agreement >= MIN_AGREEMENT


def check(fast: nn.Module, net: nn.Module, rows: torch.Tensor, guard: GuardSet | None) -> Check:
    """``fast`` against the fp32 ``net``: values on ``rows``, greedy moves on ``guard``."""
    return Check(max_abs_diff(fast, net, rows), agreement(fast, net, guard) if guard is not None else 1.0)


def _rate(module: nn.Module, obs: torch.Tensor, seconds: float) -> float:
    calls, start = 0, time.perf_counter()
    while calls < 2 or time.perf_counter() - start < seconds:
        module(obs)
        calls += 1
    return calls * len(obs) / (time.perf_counter() - start)


def speedups(net: nn.Module, candidates: dict[str, nn.Module], obs: torch.Tensor, *, repeats: int = 3,
             seconds: float = 0.05) -> dict[str, float]:
    """Median ratio of each candidate's rows/s to fp32's on ``obs``, timed in alternation
    (fp32, then each candidate, ``repeats`` rounds), so that all see the same load."""
    ratios = {k: [] for k in candidates}
    with torch.inference_mode():
        for module in (net, *candidates.values()):
            module(obs)  # warm up (oneDNN primitives, allocator)
        for _ in range(repeats):
            base = _rate(net, obs, seconds)
            for k, module in candidates.items():
                ratios[k].append(_rate(module, obs, seconds) / base)
    return {k: statistics.median(v) for k, v in ratios.items()}


def candidates(net: nn.Module, device: torch.device) -> tuple[str, ...]:
    """The dtypes ``auto`` times for ``net`` on ``device``: bf16 on a GPU, and on a CPU
    that runs bf16 natively (``inference.machine.this_cpu``: AVX512_BF16 or AMX; elsewhere it
    is emulated, 4-7x slower than fp32, measured on AVX2); int8 for the conv towers on a CPU
    with fbgemm's x86 kernels. Not int8 for the residual MLPs, whose dynamically quantised
    activations (the residual stream, one scale per batch) put the values 0.03-0.15 off
    fp32 (tic-tac-toe untrained, Connect Four trained), far outside the tolerance, for a
    gain of 1.05-1.6x (docs/benchmarks.md, Inference precision). Every candidate is still
    checked per version (:class:`FastPath`)."""
    if device.type == "cuda":
        return ("bf16",)
    out = ("bf16",) if this_cpu().native else ()
    if isinstance(_tower(net), ConvResTower) and {"fbgemm", "x86"} & set(torch.backends.quantized.supported_engines):
        out += ("int8",)
    return out


# auto's choice per process: (architecture key, torch threads) -> dtype.
_CHOICES: dict[tuple, str] = {}


def choose(net: nn.Module, key, probe: torch.Tensor, guard: GuardSet | None = None) -> tuple[str, nn.Module, Check]:
    """``auto``'s dtype for a network of architecture ``key`` (game, NetworkConfig,
    device), with the converted copy and its :class:`Check` against fp32 on ``probe``
    (the version's first rows, real encodings) and ``guard``. Among :func:`candidates`,
    those that hold there are timed against fp32 in alternation on ``probe``; the best
    median speed-up wins if it reaches :data:`MIN_SPEEDUP`, else fp32 (``net`` itself).

    Timed once per process, architecture and thread count: a kernel's speed depends on
    the machine and the shapes, not on the weights, so later versions reuse the answer
    (they are checked again, each, by :class:`FastPath`). The margin keeps the
    choice stable under the noise of a shared machine: a candidate that barely wins is
    not worth its rounding error."""
    cache_key = (key, torch.get_num_threads())
    fits = {}
    for dtype in ((_CHOICES[cache_key],) if cache_key in _CHOICES else candidates(net, probe.device)):
        if dtype == "fp32":
            break
        fast = convert(net, dtype, probe)
        measured = check(fast, net, probe, guard)
        if measured.holds:
            fits[dtype] = fast, measured
    if cache_key not in _CHOICES:
        ratio = speedups(net, {k: m for k, (m, _) in fits.items()}, probe[:PROBE_ROWS]) if fits else {}
        best = max(ratio, key=ratio.get, default=None)
        _CHOICES[cache_key] = best if best is not None and ratio[best] >= MIN_SPEEDUP else "fp32"
    dtype = _CHOICES[cache_key]
    if dtype not in fits:  # fp32 chosen, or the chosen dtype does not hold for this version
        return "fp32", net, Check(0.0, 1.0)
    return (dtype, *fits[dtype])


class FastPath:
    """The network a ValueFunction calls for one weight version: the fp32 ``net`` or its
    converted copy, built at the version's first batch and checked against fp32 there
    and on the guard positions."""

    def __init__(self, dtype: str, key):
        self.requested = check_dtype(dtype, "FastPath")
        self.key = key  # the architecture, for auto's per-process choice
        self.dtype = "fp32"  # the path that answers the current version
        self.check = Check(0.0, 1.0)  # of the current version's fast copy
        self.rejected = 0  # versions answered in fp32 because their fast copy did not hold
        self._module: nn.Module | None = None  # None: not built for the current version

    @property
    def max_abs_diff(self) -> float:
        return self.check.max_abs_diff

    def new_version(self) -> None:
        self._module = None

    def module(self, net: nn.Module, first: torch.Tensor, guard: GuardSet | None = None) -> nn.Module:
        """The module answering the current version; ``first`` (float32 [N, *obs_shape])
        is the version's first batch when it is not built yet, ``guard`` the positions
        whose greedy moves the fast copy must keep (None: the values alone are checked)."""
        if self._module is None:
            rows = first[:GUARD_ROWS]
            if self.requested == "auto":
                self.dtype, self._module, self.check = choose(net, self.key, rows, guard)
                chosen = _CHOICES[(self.key, torch.get_num_threads())]
                self.rejected += chosen != self.dtype  # chosen for the machine, does not hold here
            else:
                fast = convert(net, self.requested, rows)
                measured = check(fast, net, rows, guard)
                self.dtype, self._module, self.check = ((self.requested, fast, measured) if measured.holds
                                                        else ("fp32", net, measured))
                self.rejected += not measured.holds
        return self._module
