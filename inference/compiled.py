"""A compiled copy of the fp32 network for the forward passes that play (``compile``: auto, on
or off): self-play's, set by ``actors.compile``; a ``ValueFunction`` built elsewhere (evaluation,
the inference servers) is eager unless it is given ``compile``.

``torch.compile`` (inductor, on the CPU: C++ kernels built with the machine's compiler)
turns the network's forward into one graph: each LayerNorm and GELU is fused into one loop
after the matrix product before it, and the per-module Python of ``nn.Module`` calls (10% of
a Connect Four self-play call, docs/benchmarks.md, Beside the JAX stack) is gone. The
weights stay the eager network's parameters, read by the graph at every call, so a new weight
version (``load_state_dict`` copies into them) needs no new compile.

Modes (:data:`COMPILE_MODES`):

- ``off``: the eager network; bitwise the behaviour without this module.
- ``on``: compiled at the first call.
- ``auto``: eager until the network has answered :data:`AUTO_AFTER_CALLS` calls of at least
  :data:`AUTO_MIN_ROWS` rows, then compiled: the compile costs minutes of one core
  (measured, below), which only a long run with large batches wins back, and tests, the quick
  presets and short evaluations never reach it, so they pay nothing.

Batch sizes: compiled with ``dynamic=True``, one graph for every batch size of 2 rows or
more (a batch of one is padded to two rather than compiled a second time, which cost as
much as the first compile). Measured on the 2-core AVX2 EPYC, Connect Four's preset with its
policy head, one thread, a lighter load: the first compile 106 s of wall time, a batch
of one compiled apart another 117 s; later calls at any new size of 2 or more 2-30 ms, no
recompile. Under a load average of 20-33: 569 s from a cold cache, 43 s with the kernels in the
cache (docs/benchmarks.md, The compiled network). The compiled kernels are kept in inductor's
cache (``TORCHINDUCTOR_CACHE_DIR``, by default ``/tmp/torchinductor_<user>``), which every
process of a node shares, so the actors of one node after the first find the kernels built.

Inside Ray actors: the compile runs in the calling thread (``compile_threads = 1``), not in a
pool of forked workers, which a one-CPU actor has no cores for. Where the toolchain is missing
(no C++ compiler on the PATH) or the compile fails, :class:`Compiled` warns once, saying why,
and answers with the eager network from then on.

The values differ from eager's by rounding alone (measured up to 6e-7 on the Connect Four
preset: the fused loops sum in another order); ``tests/inference/test_compiled.py`` holds the
greedy moves and the search's visit counts equal to eager's on fixed positions.
"""

from __future__ import annotations

import shutil
import time
import warnings

import torch
from torch import nn

COMPILE_MODES = ("auto", "on", "off")
AUTO_MIN_ROWS = 64  # auto counts only calls this large: below it eager's overheads are small
AUTO_AFTER_CALLS = 2000  # auto compiles after this many large calls: a run long enough to win it back


def check_compile(mode: str, where: str) -> str:
    if mode not in COMPILE_MODES:
        raise ValueError(f"{where}: compile must be one of {', '.join(COMPILE_MODES)}, got {mode!r}")
    return mode


def toolchain_missing() -> str | None:
    """Why inductor cannot build CPU kernels here, or None if it can: the C++ compiler it
    would call is not on the PATH."""
    try:
        import torch._inductor.config as inductor_config

        cxx = inductor_config.cpp.cxx[-1] if isinstance(inductor_config.cpp.cxx, tuple) else inductor_config.cpp.cxx
        from torch._inductor.cpp_builder import get_cpp_compiler

        cxx = get_cpp_compiler() or cxx
    except Exception as error:  # noqa: BLE001 - any failure here means no compiled path
        return f"torch's inductor is not usable here ({type(error).__name__}: {error})"
    if shutil.which(cxx) is None:
        return f"inductor's C++ compiler {cxx!r} is not on the PATH (install g++ or set CXX)"
    return None


class Compiled:
    """The network to call for a batch: ``net`` itself, or its compiled copy as ``mode`` says.

    Called on a chunk, it answers the network's output (a chunk of one row is run padded to
    two on the compiled copy); ``active`` says whether the compiled copy answers; ``compile_s``
    is the wall time of its first call (the compile), ``fallback`` why it fell back to eager."""

    def __init__(self, net: nn.Module, mode: str, where: str = "network"):
        self.net, self.mode, self.where = net, check_compile(mode, where), where
        self.large_calls = 0
        self.compiled: nn.Module | None = None
        self.compile_s: float | None = None
        self.fallback: str | None = None

    @property
    def active(self) -> bool:
        return self.compiled is not None and self.fallback is None

    def _wanted(self, rows: int) -> bool:
        if self.mode == "off" or self.fallback is not None:
            return False
        if self.mode == "on":
            return True
        if rows >= AUTO_MIN_ROWS:
            self.large_calls += 1
        return self.compiled is not None or self.large_calls >= AUTO_AFTER_CALLS

    def _give_up(self, reason: str) -> None:
        self.fallback = reason
        warnings.warn(f"{self.where}: the compiled network is off, the eager network answers: {reason}",
                      RuntimeWarning, stacklevel=3)

    def __call__(self, chunk: torch.Tensor):
        """The network's output on ``chunk`` [N, ...], from the compiled copy where it answers."""
        if not self._wanted(len(chunk)) or len(chunk) == 0:
            return self.net(chunk)
        if self.compiled is None:
            missing = toolchain_missing()
            if missing is not None:
                self._give_up(missing)
                return self.net(chunk)
            import torch._inductor.config as inductor_config

            inductor_config.compile_threads = 1  # no forked pool of compile workers (one-CPU actors)
            self.compiled = torch.compile(self.net, dynamic=True)
        rows = len(chunk)
        padded = chunk if rows >= 2 else torch.cat([chunk, chunk[:1].expand(2 - rows, *chunk.shape[1:])])
        start = time.perf_counter()
        try:
            out = self.compiled(padded)
        except Exception as error:  # noqa: BLE001 - the compiler's failures are many; eager still answers
            self._give_up(f"torch.compile failed ({type(error).__name__}: {str(error).splitlines()[0][:300]})")
            return self.net(chunk)
        if self.compile_s is None:
            self.compile_s = time.perf_counter() - start
        if rows < 2:
            out = type(out)(*(None if t is None else t[:rows] for t in out))
        return out
