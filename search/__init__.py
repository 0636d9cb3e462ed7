"""Search over a game with learned or exact evaluations: batched PUCT MCTS for AlphaZero
self-play and evaluation (:mod:`search.mcts`), Gumbel AlphaZero's search
(:mod:`search.gumbel`), tree reuse between moves for both (:mod:`search.reuse`), the leaf evaluators
(:mod:`search.evaluators`), and depth-limited full-width negamax over a value function
(:mod:`search.minimax`). The search needs ``games`` and numpy alone: the network that
evaluates its leaves is ``inference.network.NetworkEvaluator``, one layer below and apart."""

from search.evaluators import (  # noqa: F401  (re-exported: the package's public API)
    CrossEvaluator,
    Evaluator,
    RolloutEvaluator,
    UniformEvaluator,
)
from search.mcts import MCTS, MCTSConfig, SearchResult  # noqa: F401
from search.minimax import minimax, minimax_actions  # noqa: F401
