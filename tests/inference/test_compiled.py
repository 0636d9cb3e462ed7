"""The compiled network (``inference.compiled``): on fixed positions it plays the eager
network's greedy moves and its searches visit the same children the same number of times;
new batch sizes do not recompile; a missing toolchain or a failed compile leaves the eager
network answering, with a warning; ``auto`` waits for a long run of large batches.

The compile itself is real in the two tests marked slow (one small symmetrized Connect Four
network, compiled once for the module: 474 s of wall time on the 2-core test machine under a
load average of 20-25); the rest replace ``torch.compile`` by a stand-in and run in the quick
tier."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import games
from actors.config import SelfPlayConfig
from games.testing import random_move_lists
from inference import compiled as compiled_module
from inference.compiled import Compiled, check_compile, toolchain_missing
from inference.network import NetworkEvaluator, ValueFunction
from inference.networks import NetworkConfig, build_network
from inference.tensors import numpy_weights
from search.mcts import MCTS, MCTSConfig

C4 = games.make("connect4")
# The preset's layers (Linear-LayerNorm-GELU residual blocks, two heads, the mirror image
# averaged), narrower: the same graph for the compiler, a shorter compile.
NET = NetworkConfig("mlp", width=64, blocks=2, layers_per_block=2, head_width=32, policy_head=True, symmetrize=True)


def weights(seed: int = 0) -> dict:
    torch.manual_seed(seed)
    return numpy_weights(build_network(C4, NET))


def positions(count: int = 48):
    return C4.from_moves(random_move_lists(C4, count, np.random.default_rng(7), max_plies=30))


def evaluator(compile: str, w: dict) -> NetworkEvaluator:
    net = NetworkEvaluator(C4, NET, compile=compile)
    net.set_weights(w, version=0)
    return net


def greedy_moves(net: NetworkEvaluator, states) -> tuple[np.ndarray, np.ndarray]:
    """(AVI's greedy moves by the one-step values of every child, the policy head's argmax)."""
    expansion = C4.expand(states)
    q = games.one_step_q(expansion, net.forward(C4.encode(expansion.children))[1], gamma=1.0)
    return q.argmax(1), net.logits(states).argmax(1)


def visits(net: NetworkEvaluator, states) -> np.ndarray:
    """int32[B, A] root visits of 64 PUCT simulations with root noise, from a fixed seed."""
    search = MCTS(C4, MCTSConfig(simulations=64, noise_fraction=0.25, temperature=0))
    return search.search(states, net, np.random.default_rng(3)).visits


def differences(a: NetworkEvaluator, b: NetworkEvaluator, states) -> dict:
    """How many positions' greedy moves (by values, by priors) and searches' visit counts differ."""
    (va, pa), (vb, pb) = greedy_moves(a, states), greedy_moves(b, states)
    return {"value moves": int((va != vb).sum()), "prior moves": int((pa != pb).sum()),
            "visit counts": int((visits(a, states) != visits(b, states)).any(1).sum())}


@pytest.fixture(scope="module")
def compiled_and_eager():
    if toolchain_missing():
        pytest.skip(toolchain_missing())
    w = weights()
    eager, fast = evaluator("off", w), evaluator("on", w)
    fast.evaluate(positions(4))  # the compile
    assert fast.compiled.active, fast.compiled.fallback
    return eager, fast


@pytest.mark.slow
def test_the_compiled_network_plays_the_eager_moves_and_visits(compiled_and_eager):
    eager, fast = compiled_and_eager
    states = positions()
    assert differences(eager, fast, states) == {"value moves": 0, "prior moves": 0, "visit counts": 0}
    logits_e, values_e = eager.evaluate(states)
    logits_c, values_c = fast.evaluate(states)
    np.testing.assert_allclose(values_c, values_e, atol=1e-5)
    np.testing.assert_allclose(logits_c, logits_e, atol=1e-5)
    assert fast.compiled.active and fast.compiled.fallback is None


def test_the_comparison_sees_a_network_that_plays_differently():
    # The check above can fail: eager against eager with other weights differs on every count.
    states = positions()
    found = differences(evaluator("off", weights(0)), evaluator("off", weights(1)), states)
    assert all(count > 0 for count in found.values()), found


@pytest.mark.slow
def test_new_batch_sizes_and_a_new_version_do_not_recompile(compiled_and_eager):
    _, fast = compiled_and_eager
    states = positions()
    # A recompile raises here; the wrapper would then fall back to eager and say why.
    with torch._dynamo.config.patch(error_on_recompile=True):
        for n in (1, 2, 3, 17, 48):
            fast.evaluate(games.take(states, np.arange(n)))
        fast.set_weights(weights(2), version=1)
        fast.evaluate(states)
    assert fast.compiled.fallback is None and fast.compiled.active
    reference = evaluator("off", weights(2))
    np.testing.assert_allclose(fast.evaluate(states)[1], reference.evaluate(states)[1], atol=1e-5)
    one = games.take(states, np.arange(1))
    np.testing.assert_allclose(fast.evaluate(one)[1], reference.evaluate(one)[1], atol=1e-5)


class FakeCompile:
    """``torch.compile``'s stand-in: counts what it was asked to compile; ``fail`` raises at the call."""

    def __init__(self, fail: bool = False):
        self.fail, self.compiled = fail, 0

    def __call__(self, net, dynamic=None):
        self.compiled += 1

        def call(x):
            if self.fail:
                raise RuntimeError("C++ compile failed: cc1plus: fatal error")
            return net(x)
        return call


def test_a_missing_toolchain_leaves_the_eager_network_answering_with_a_warning(monkeypatch):
    fake = FakeCompile()
    monkeypatch.setattr(compiled_module.torch, "compile", fake)
    missing = "inductor's C++ compiler 'g++' is not on the PATH"
    monkeypatch.setattr(compiled_module, "toolchain_missing", lambda: missing)
    w, states = weights(), positions(8)
    net = evaluator("on", w)
    with pytest.warns(RuntimeWarning, match="not on the PATH"):
        values = net.evaluate(states)[1]
    assert fake.compiled == 0 and not net.compiled.active and "PATH" in net.compiled.fallback
    np.testing.assert_array_equal(values, evaluator("off", w).evaluate(states)[1])  # bitwise eager's


def test_a_failed_compile_leaves_the_eager_network_answering_with_a_warning(monkeypatch):
    fake = FakeCompile(fail=True)
    monkeypatch.setattr(compiled_module.torch, "compile", fake)
    monkeypatch.setattr(compiled_module, "toolchain_missing", lambda: None)
    w, states = weights(), positions(8)
    net = evaluator("on", w)
    with pytest.warns(RuntimeWarning, match="torch.compile failed .*cc1plus"):
        values = net.evaluate(states)[1]
    np.testing.assert_array_equal(values, evaluator("off", w).evaluate(states)[1])
    net.evaluate(states)  # no second try, no second warning
    assert fake.compiled == 1 and not net.compiled.active


def test_auto_compiles_only_after_a_long_run_of_large_batches(monkeypatch):
    fake = FakeCompile()
    monkeypatch.setattr(compiled_module.torch, "compile", fake)
    monkeypatch.setattr(compiled_module, "toolchain_missing", lambda: None)
    monkeypatch.setattr(compiled_module, "AUTO_AFTER_CALLS", 3)
    monkeypatch.setattr(compiled_module, "AUTO_MIN_ROWS", 10)
    net = Compiled(torch.nn.Linear(4, 1), "auto")
    for _ in range(5):
        net(torch.zeros(9, 4))  # small batches do not count
    assert fake.compiled == 0
    net(torch.zeros(10, 4))
    net(torch.zeros(10, 4))
    assert fake.compiled == 0 and not net.active
    net(torch.zeros(10, 4))
    assert fake.compiled == 1 and net.active
    net(torch.zeros(3, 4))  # once compiled, every batch goes through it
    assert fake.compiled == 1 and net.active


def test_off_never_compiles(monkeypatch):
    fake = FakeCompile()
    monkeypatch.setattr(compiled_module.torch, "compile", fake)
    net = ValueFunction(C4, NET, compile="off")
    net.set_weights(weights(), 0)
    for _ in range(3):
        net(C4.encode(positions(8)))
    assert fake.compiled == 0 and not net.compiled.active


def test_the_setting_is_checked_where_it_is_defined():
    assert check_compile("auto", "here") == "auto"
    assert SelfPlayConfig().compile == "off"  # a run repeats exactly unless asked
    with pytest.raises(ValueError, match="compile must be one of auto, on, off, got 'yes'"):
        SelfPlayConfig(compile="yes")
    with pytest.raises(ValueError, match="ValueFunction: compile must be one of"):
        ValueFunction(C4, NET, compile="fast")
