"""What the CPU under this process runs natively, and how many cores it may use: the one
machine check behind the learner's ``precision=auto`` (``learner.config.auto_precision``)
and inference's ``auto`` candidates (``inference.precision.candidates``).

bf16 is native where the CPU multiplies bf16 itself: AVX512_BF16 (dot products of bf16
pairs into fp32, e.g. AMD Zen 4, Intel Cooper Lake) or AMX (tile matrix units, Intel
Sapphire Rapids and later). Elsewhere (AVX2 alone, AVX-512 without BF16) oneDNN emulates
it by converting to fp32, 2-10x slower than fp32 itself (docs/benchmarks.md, Inference
precision). No torch here: the driver resolves configs without it.
"""

from __future__ import annotations

import functools
import os
from typing import NamedTuple

# The /proc/cpuinfo flags of native bf16 arithmetic, the stronger first.
NATIVE_BF16_FLAGS = ("amx_bf16", "avx512_bf16")
CPUINFO = "/proc/cpuinfo"


class Bf16Support(NamedTuple):
    native: bool
    reason: str  # the flag that makes it native, or what is missing; for config.json and the logs


def cpu_flags(path: str = CPUINFO) -> frozenset[str] | None:
    """The feature flags of the first processor of ``path`` (Linux), or None where the
    file cannot be read (another system): then nothing is known to be native."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.partition(":")[2].split())
    except OSError:
        return None
    return frozenset()


def bf16_support(flags: frozenset[str] | None) -> Bf16Support:
    """Whether a CPU with ``flags`` (:func:`cpu_flags`) runs bf16 natively, and why."""
    if flags is None:
        return Bf16Support(False, f"no {CPUINFO}: native bf16 unknown")
    for flag in NATIVE_BF16_FLAGS:
        if flag in flags:
            return Bf16Support(True, f"native bf16 ({flag})")
    isa = "avx512f" if "avx512f" in flags else "avx2" if "avx2" in flags else "no avx2"
    return Bf16Support(False, f"no native bf16 (no {' or '.join(NATIVE_BF16_FLAGS)}; {isa})")


@functools.cache
def this_cpu() -> Bf16Support:
    """:func:`bf16_support` of the CPU this process runs on (read once per process)."""
    return bf16_support(cpu_flags())


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask: a container's or taskset's
    limit, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity masks (macOS)
        return os.cpu_count() or 1


def threads_value(value, where: str) -> int | str:
    """A ``threads`` setting as configs hold it: ``"auto"`` or a positive int (a digit
    string, as ``--set`` parses it beside an ``auto``, becomes the int)."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if value == "auto" or (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
        return value
    raise ValueError(f"{where}: threads must be auto or an integer >= 1, got {value!r}")


def threads_here(value: int | str) -> int:
    """The torch threads a process takes for a ``threads`` setting: the run's resolved
    count, or 1 where it was left ``auto`` (built without a run), capped at the cores this
    process may use (a run resolves for the node it saw; this one may have fewer)."""
    return min(value if value != "auto" else 1, usable_cores())


# The Ray runtime environment of the processes that run torch on several threads (the
# learner, self-play actors, inference servers): OpenMP threads that spin for a short while
# only (GOMP_SPINCOUNT, in spin iterations; libgomp's default is 300,000), then sleep. A
# thread spinning while another process holds a core steals that core from the threads that
# work: on the 2-core machine with two other busy processes, the Connect Four actor's
# 2-thread collection ran at 1,721 positions/s with libgomp's default, 3,270 with 10,000 spins
# and 3,806 sleeping at once (OMP_WAIT_POLICY=PASSIVE); with the cores free, 9,663, 9,515 and
# 6,240: sleeping at once costs a wake-up at every parallel region. (docs/benchmarks.md,
# Precision and threads on the CPU.) libgomp reads it when it loads: it is set for the
# process, before torch is imported.
THREADED_RUNTIME_ENV = {"env_vars": {"GOMP_SPINCOUNT": "10000"}}


def describe_machine(cpuinfo: str = CPUINFO) -> str:
    """The machine in one line, as a result names it: the CPU model, the cores this
    process may use, its bf16 and AMX support, and the GPU torch sees (if any)."""
    model = "unknown CPU"
    try:
        with open(cpuinfo) as f:
            model = next((line.partition(":")[2].strip() for line in f if line.startswith("model name")), model)
    except OSError:
        pass
    flags = cpu_flags(cpuinfo) or frozenset()
    isa = ", ".join(f for f in ("avx512_bf16", "amx_bf16", "avx2") if f in flags) or "no avx2"
    gpu = "no GPU"
    try:
        import torch

        if torch.cuda.is_available():
            gpu = f"{torch.cuda.device_count()} x {torch.cuda.get_device_name(0)}"
    except ImportError:
        pass
    return f"{model}, {usable_cores()} cores, {isa}, {gpu}"
