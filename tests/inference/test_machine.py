"""The machine check (``inference.machine``) and the choices made from it: the learner's
``precision=auto`` (``learner.config.auto_precision``), its thread count, and a learner
on a node whose CPU differs from the driver's."""

from __future__ import annotations

import pytest

from learner.actor import _precision_here
from learner.config import LearnerConfig, auto_precision
from inference.machine import Bf16Support, bf16_support, cpu_flags, this_cpu
from inference.networks import PRESET_NETWORKS

NATIVE = Bf16Support(True, "native bf16 (avx512_bf16)")
EMULATED = Bf16Support(False, "no native bf16 (no amx_bf16 or avx512_bf16; avx2)")


def test_native_bf16_is_read_from_the_cpu_flags(tmp_path):
    assert bf16_support(frozenset({"avx2", "fma"})).native is False
    assert bf16_support(frozenset({"avx2", "avx512f"})).reason.endswith("avx512f)")  # AVX-512 without BF16
    assert bf16_support(frozenset({"avx512f", "avx512_bf16"})) == (True, "native bf16 (avx512_bf16)")
    assert bf16_support(frozenset({"avx512_bf16", "amx_bf16", "amx_tile"})).reason == "native bf16 (amx_bf16)"
    assert bf16_support(None).native is False  # no /proc/cpuinfo: nothing known to be native
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse avx2 avx512_bf16\n\nprocessor\t: 1\n")
    assert bf16_support(cpu_flags(str(cpuinfo))).native
    assert cpu_flags(str(tmp_path / "missing")) is None
    # This machine: the same check of its own flags.
    flags = cpu_flags()
    assert this_cpu().native == (flags is not None and bool({"avx512_bf16", "amx_bf16"} & flags))


def test_auto_precision_is_bf16_only_on_a_native_cpu_for_wide_networks():
    connect4, tictactoe, othello = (PRESET_NETWORKS[g] for g in ("connect4", "tictactoe", "othello"))
    assert auto_precision("cpu", NATIVE, connect4) == ("bf16", "auto on cpu: bf16, native bf16 (avx512_bf16)")
    assert auto_precision("cpu", NATIVE, othello)[0] == "bf16"  # a conv tower
    assert auto_precision("cpu", EMULATED, connect4)[0] == "fp32"
    precision, why = auto_precision("cpu", NATIVE, tictactoe)  # width 64: bf16 slower there
    assert precision == "fp32" and "width 64" in why
    assert auto_precision("cuda", NATIVE, connect4)[0] == "fp32"


def test_threads_are_auto_or_a_positive_count():
    assert LearnerConfig().threads == "auto" and LearnerConfig(threads="3").threads == 3  # as --set parses it
    for bad in (0, "many", True):
        with pytest.raises(ValueError, match="threads must be auto or an integer >= 1"):
            LearnerConfig(threads=bad)
    with pytest.raises(ValueError, match="precision must be one of auto, fp32, tf32, bf16"):
        LearnerConfig(precision="fp16")


def test_a_learner_whose_cpu_emulates_bf16_trains_in_fp32(caplog):
    """auto resolved on the driver's CPU (native) but the learner's node emulates bf16:
    the learner trains in fp32 and says so; an explicit bf16 is kept."""
    network = PRESET_NETWORKS["connect4"]
    chosen = LearnerConfig(precision="bf16", precision_note="auto on cpu: bf16, native bf16 (avx512_bf16)")
    precision, why = _precision_here(chosen, "cpu", network, EMULATED)
    assert precision == "fp32" and why.endswith(f"fp32 on the learner's node, {EMULATED.reason}")
    assert "training in fp32" in caplog.text
    assert _precision_here(chosen, "cpu", network, NATIVE) == ("bf16", chosen.precision_note)
    asked = LearnerConfig(precision="bf16", precision_note="set in the config")
    assert _precision_here(asked, "cpu", network, EMULATED)[0] == "bf16"
    assert _precision_here(LearnerConfig(), "cpu", network, NATIVE)[0] == "bf16"  # auto, unresolved
