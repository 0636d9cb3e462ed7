"""Reduced-precision inference for the actors' networks (``inference_dtype``).

The learner trains and publishes fp32 weights; an actor's :class:`learner.learner.ValueFunction`
keeps them in an fp32 network and, for a fast ``inference_dtype``, derives one converted
copy per published weight version (:class:`FastPath`), at the first call that version
answers. Modes (:data:`INFERENCE_DTYPES`):

- ``fp32``: the fp32 network itself; bitwise the behaviour without this module.
- ``bf16``: a copy with bfloat16 weights, fed bfloat16 activations (oneDNN kernels).
  Fast only on CPUs with native bf16 arithmetic (AVX512_BF16, AMX) and on GPUs; on an
  AVX2 CPU torch emulates it, 4-7x slower than fp32 (docs/benchmarks.md, Inference precision).
- ``int8``: int8 weights and activations through fbgemm: dynamic quantisation of the
  ``nn.Linear`` layers for the residual MLPs (activation scales per batch), static
  quantisation of the conv towers (convs fused with their BatchNorm and ReLU, activation
  scales calibrated on the version's first batch).
- ``auto``: the fastest of these on this machine: the candidates its hardware runs
  natively (:func:`candidates`) timed against fp32 once per process and network
  architecture, on the first batch (:func:`choose`); one is kept only if it beats fp32
  by :data:`MIN_SPEEDUP` there.

Whatever the mode, every version is checked before it is used: the fast copy and the fp32
network evaluate the same first batch (up to :data:`GUARD_ROWS` rows), and when any value
differs by more than :data:`TOLERANCE` that version answers in fp32 (``FastPath.dtype``
says which path answered). The tolerance is the one the tests hold every labelled
dataset to (``tests/learner/test_fast_inference.py``). Values leave as float32 numpy
arrays in every mode.
"""

from __future__ import annotations

import contextlib
import copy
import statistics
import time
import warnings

import torch
from torch import nn

from learner.networks import ConvResTower, NetOutput, Symmetrized

INFERENCE_DTYPES = ("auto", "fp32", "bf16", "int8")
FAST_DTYPES = ("bf16", "int8")  # the candidates of auto, in order of preference on a tie
TOLERANCE = 0.02  # maximum absolute value difference from fp32 (issue 15)
GUARD_ROWS = 1024  # rows of a version's first batch checked against fp32
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


class _Bf16(nn.Module):
    def __init__(self, net: nn.Module):
        super().__init__()
        self.net = copy.deepcopy(net).to(torch.bfloat16)

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
    """The dtypes ``auto`` times for ``net`` on ``device``: bf16 on a GPU; int8 for the
    conv towers on a CPU with fbgemm's x86 kernels. Not: bf16 on a CPU, where it is
    either emulated, 4-7x slower than fp32 (measured on AVX2), or native (AVX512 with
    BF16, AMX) but outside the tolerance: on an Intel Xeon with AMX it changed 1.2-17%
    of the greedy moves on the labelled sets (tests/learner/test_fast_inference.py;
    ``inference_dtype=bf16`` still asks for it); int8 for the residual MLPs,
    whose dynamically quantised activations (the residual stream, one scale per batch)
    put the values 0.03-0.15 off fp32 (tic-tac-toe untrained, Connect Four trained), far
    outside the tolerance, for a gain of 1.05-1.6x (docs/benchmarks.md, Inference precision)."""
    if device.type == "cuda":
        return ("bf16",)
    out = ()
    if isinstance(_tower(net), ConvResTower) and {"fbgemm", "x86"} & set(torch.backends.quantized.supported_engines):
        out += ("int8",)
    return out


# auto's choice per process: (architecture key, torch threads) -> dtype.
_CHOICES: dict[tuple, str] = {}


def choose(net: nn.Module, key, probe: torch.Tensor) -> tuple[str, nn.Module, float]:
    """``auto``'s dtype for a network of architecture ``key`` (game, NetworkConfig,
    device), with the converted copy and its max |difference| from fp32 on ``probe``
    (the version's first rows, real encodings). Among :func:`candidates`, those within
    :data:`TOLERANCE` on ``probe`` are timed against fp32 in alternation there; the best
    median speed-up wins if it reaches :data:`MIN_SPEEDUP`, else fp32 (``net`` itself).

    Timed once per process, architecture and thread count: a kernel's speed depends on
    the machine and the shapes, not on the weights, so later versions reuse the answer
    (their tolerance is checked again, each, by :class:`FastPath`). The margin keeps the
    choice stable under the noise of a shared machine: a candidate that barely wins is
    not worth its rounding error."""
    cache_key = (key, torch.get_num_threads())
    fits = {}
    for dtype in ((_CHOICES[cache_key],) if cache_key in _CHOICES else candidates(net, probe.device)):
        if dtype == "fp32":
            break
        fast = convert(net, dtype, probe)
        diff = max_abs_diff(fast, net, probe)
        if diff <= TOLERANCE:
            fits[dtype] = fast, diff
    if cache_key not in _CHOICES:
        ratio = speedups(net, {k: m for k, (m, _) in fits.items()}, probe[:PROBE_ROWS]) if fits else {}
        best = max(ratio, key=ratio.get, default=None)
        _CHOICES[cache_key] = best if best is not None and ratio[best] >= MIN_SPEEDUP else "fp32"
    dtype = _CHOICES[cache_key]
    if dtype not in fits:  # fp32 chosen, or the chosen dtype out of tolerance on this version
        return "fp32", net, 0.0
    return (dtype, *fits[dtype])


class FastPath:
    """The network a ValueFunction calls for one weight version: the fp32 ``net`` or its
    converted copy, built at the version's first batch and checked against fp32 there."""

    def __init__(self, dtype: str, key):
        self.requested = check_dtype(dtype, "FastPath")
        self.key = key  # the architecture, for auto's per-process choice
        self.dtype = "fp32"  # the path that answers the current version
        self.max_abs_diff = 0.0  # of the current version's fast copy on its first rows
        self.rejected = 0  # versions answered in fp32 because their fast copy was out of tolerance
        self._module: nn.Module | None = None  # None: not built for the current version

    def new_version(self) -> None:
        self._module = None

    def module(self, net: nn.Module, first: torch.Tensor) -> nn.Module:
        """The module answering the current version; ``first`` (float32 [N, *obs_shape])
        is the version's first batch when it is not built yet."""
        if self._module is None:
            guard = first[:GUARD_ROWS]
            if self.requested == "auto":
                self.dtype, self._module, self.max_abs_diff = choose(net, self.key, guard)
                chosen = _CHOICES[(self.key, torch.get_num_threads())]
                self.rejected += chosen != self.dtype  # chosen for the machine, out of tolerance here
            else:
                fast = convert(net, self.requested, guard)
                diff = max_abs_diff(fast, net, guard)
                ok = diff <= TOLERANCE
                self.dtype, self._module, self.max_abs_diff = (self.requested, fast, diff) if ok else ("fp32", net, 0.0)
                self.rejected += not ok
        return self._module
