"""AVI (the AVI paper, Algorithm 1): epsilon-greedy one-step lookahead self-play, each
row's target ``max_a r - gamma V(f(s, a))``, the value head trained by MSE (eq. 5).

Its rows come at every step (no game need end), its actors ask values only (an inference
server can answer them), and the evaluation cache pays: about half of Connect Four's
children repeat within a phase (docs/benchmarks.md). It plays greedily on the one-step
values. Its preset is the game's own (the AVI paper's Table 3 and the game's changes).
"""

from actors import collectors
from algorithms.descriptors import AlgorithmDescriptor
from learner.losses import AVI

DESCRIPTOR = AlgorithmDescriptor(
    name="avi",
    title="AVI",
    collector=collectors.avi,
    loss=AVI,
    eval_cache="cache",
    inference_server=True,
    report_policy="greedy",
)
