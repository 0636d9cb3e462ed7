"""The numba option the solvers' inner-loop kernels share.

A small kernel called millions of times (a solver's recursion, H-search's list updates)
is compiled without numba's reference counting when it allocates nothing: otherwise every
call increments and decrements each array argument with an atomic instruction. ``perf``
showed those two instructions taking half of H-search's time (the measurement, with
``python -m benchmarks.hex_solver_speed --hsearch 300``, is in docs/oracles/hex.md).
A kernel that allocates (``np.empty``...) keeps the counting: without it, its arrays would
never be freed.
"""

from numba import njit

NO_REFCOUNT = {"cache": True, "_nrt": False}  # njit's options, for a kernel with an explicit signature
refcount_free = njit(**NO_REFCOUNT)
