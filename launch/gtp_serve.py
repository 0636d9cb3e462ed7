"""``python -m launch gtp --checkpoint CKPT [--game G] [--policy P] [--simulations N]``: a
training checkpoint of Go, Othello, Connect Four or Hex as a GTP engine on stdin/stdout
(``gtp.server``; the vertex names of each game are in ``gtp.vertices``). The checkpoint
is read and its policy (one of ``evaluation.policy_registry``) made as ``launch evaluate``
makes them (``evaluation.runner``);
nothing but GTP answers goes to stdout, notes go to stderr.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evaluation.checkpoints import CheckpointMismatchError, read_checkpoint
from evaluation.config import EvaluationConfig
from evaluation.config import add_arguments as add_evaluation_arguments
from evaluation.runner import SuiteRunner
from gtp.server import GtpServer
from gtp.vertices import GAMES
from learner.checkpoint import CorruptCheckpointError


def checkpoint_server(path, *, game: str | None = None, policy: str = "auto", simulations: int = 64,
                      depth: int = 2, seed: int = 0, reuse: bool = True) -> GtpServer:
    """A :class:`GtpServer` playing the checkpoint at ``path`` with ``policy``; ``reuse``:
    the mcts and gumbel searches start from the subtree their previous search kept of the
    position (``search.reuse``; the policy's ``choose.reuse`` counts what it saved)."""
    g, net_config, weights, config = read_checkpoint(path, game)
    if g.name not in GAMES:
        raise CheckpointMismatchError(f"checkpoint {path} is of {g!r}; GTP engines play {', '.join(GAMES)}")
    evaluation = EvaluationConfig(policy=policy, simulations=simulations, depth=depth, reuse=reuse)
    runner = SuiteRunner(g, net_config, suites=[], evaluation=evaluation, gamma=config.gamma,
                         seed=seed)
    runner.model.set_weights(weights)
    name = f"selfplay {config.algo} {Path(path).stem}"
    choose = runner.policy_spec.build(g, runner.model)
    return GtpServer(g, choose, name=name, version=f"{runner.policy}")


def gtp_main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m launch gtp",
                                     description="Serve a checkpoint as a GTP v2 engine on stdin/stdout.")
    parser.add_argument("--checkpoint", required=True, type=Path)
    parser.add_argument("--game", choices=GAMES, help="fail unless the checkpoint is of this game")
    # gumbel: Gumbel AlphaZero's search, without noise. An engine reuses its tree between
    # moves unless --no-reuse: a game's moves come one by one, and the subtree is the budget kept.
    add_evaluation_arguments(parser, ("policy", "simulations", "depth", "reuse"))
    parser.set_defaults(reuse=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1: an engine beside another)")
    args = parser.parse_args(argv)
    import torch  # here, so that --help needs no torch

    torch.set_num_threads(max(1, args.threads))
    try:
        server = checkpoint_server(args.checkpoint, game=args.game, policy=args.policy,
                                   simulations=args.simulations, depth=args.depth, seed=args.seed,
                                   reuse=args.reuse)
    except (CorruptCheckpointError, CheckpointMismatchError, ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{server.name}: {server.game!r}, policy {server.version}", file=sys.stderr)
    server.serve()
    return 0
