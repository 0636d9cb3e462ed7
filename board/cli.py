"""``python -m launch play``: the board in the browser (or ``--tui``, in the terminal).

Without ``--checkpoint`` the agent is the exact oracle where the game has one (Connect
Four, Chomp, F-Games) and a uniformly random player elsewhere.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

import games
from board.agents import OracleAgent, RandomAgent, load_agent
from board.replay import ReplayError, parse_replay, play_suite_game
from board.session import BadMove, Table
from evaluation import policy_registry
from evaluation.checkpoints import CheckpointMismatchError
from learner.checkpoint import CorruptCheckpointError

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def play_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m launch play",
        description="Play a checkpoint (or the oracle) on a board in the browser, with the oracle's marks.")
    p.add_argument("--game", required=True, choices=games.names())
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="game parameter without a checkpoint, e.g. --param rows=4 (a value in JSON, else a "
                        "string); a checkpoint brings its own")
    p.add_argument("--checkpoint", type=Path, help="a `python -m launch` checkpoint (default: the oracle, "
                                                   "else a random player)")
    p.add_argument("--policy", default="greedy", choices=policy_registry.names(),
                   help="; ".join(policy_registry.describe(name) for name in policy_registry.names()))
    p.add_argument("--simulations", type=int, default=64, help="search simulations per move (mcts, gumbel)")
    p.add_argument("--depth", type=int, default=2, help="minimax depth in plies")
    p.add_argument("--no-reuse", dest="reuse", action="store_false",
                   help="search every move from scratch (default: a search starts from the subtree of the "
                        "position its previous searches kept)")
    p.add_argument("--opponent", type=Path, help="a second checkpoint, seat 1 when watching")
    p.add_argument("--human", default="first", choices=("first", "second", "watch"),
                   help="the person's side in a new game (the page can change it)")
    p.add_argument("--replay", type=Path, help="open this recorded game (JSON record, SGF, or Connect Four digits)")
    p.add_argument("--replay-index", type=int, default=0, metavar="N",
                   help="of a file of several game records (launch evaluate --games-out), game N (default 0)")
    p.add_argument("--eval-game", type=int, metavar="N",
                   help="replay game N of evaluation's play suite against the oracle, as `launch evaluate` plays "
                        "it (games 0..n-1: the agent first from opening N; n..2n-1: second); needs --checkpoint")
    p.add_argument("--oracle-store", default="none",
                   help="the Connect Four oracle's solved-position store: 'none' (default), 'default', a path "
                        "or redis:// URL")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    p.add_argument("--port", type=int, default=8765, help="port (0: any free one)")
    p.add_argument("--tui", action="store_true", help="play in the terminal instead of the browser")
    return p


def build_table(args) -> Table:
    """The game, agent, opponent and oracle of the arguments; the errors of a bad
    checkpoint or game are raised as they are (``play_main`` prints them)."""
    if args.checkpoint is not None:
        if args.param:
            raise ValueError("--param is for play without a checkpoint: a checkpoint brings its game's parameters")
        game, agent = load_agent(args.checkpoint, args.game, policy=args.policy, simulations=args.simulations,
                                 depth=args.depth, reuse=args.reuse)
    else:
        game, agent = games.make(args.game, **games.parse_params(args.param)), None
    store = None if args.oracle_store == "none" else args.oracle_store
    oracle = Table.oracle_for(game, store)
    if agent is None:
        agent = OracleAgent(game, oracle) if oracle is not None else RandomAgent(game)
    opponent = None
    if args.opponent is not None:
        _, opponent = load_agent(args.opponent, args.game, policy=args.policy, simulations=args.simulations,
                                 depth=args.depth, expect_params=game.params, reuse=args.reuse)
    return Table(game, agent, opponent=opponent, oracle=oracle)


def _human(args) -> int | None:
    return {"first": 0, "second": 1, "watch": None}[args.human]


def play_main(argv: list[str] | None = None) -> int:
    args = play_parser().parse_args(argv)
    if args.simulations < 1:
        print(f"error: --simulations must be >= 1, got {args.simulations}", file=sys.stderr)
        return 2
    try:
        table = build_table(args)
        replay, source, who = None, str(args.replay), None
        if args.replay is not None and args.eval_game is not None:
            raise ValueError("--replay and --eval-game each open a game: give one")
        if args.replay is not None:
            replay = parse_replay(args.replay.read_text(), table.game, args.replay_index)
        if args.eval_game is not None:
            if args.checkpoint is None or table.oracle is None:
                raise ValueError("--eval-game replays a checkpoint's game against the oracle: give --checkpoint, "
                                 "for a game with an oracle (connect4, chomp, fgame)")
            record = play_suite_game(table.game, table.agent.choose(), table.oracle, args.eval_game)
            replay, source, who = record["moves"], record["source"], record["who"]
    except (CheckpointMismatchError, CorruptCheckpointError, ReplayError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.tui:
        from board.tui import run_tui
        return run_tui(table, _human(args), replay=replay, source=source, who=who)
    return serve(table, args.host, args.port, human=_human(args), replay=replay, source=source, who=who)


def host_warning(host: str, port: int) -> str | None:
    """The warning printed when the board listens beyond loopback."""
    if host in LOOPBACK:
        return None
    return (f"warning: listening on {host}, not loopback: anyone who reaches this machine on port {port} "
            f"can play on the board and use its compute")


def serve(table: Table, host: str, port: int, *, human=0, replay=None, source="", who=None) -> int:
    """Serve until Ctrl-C; prints the page's address (with the real port when ``port`` is 0)."""
    warning = host_warning(host, port)
    if warning:
        print(warning, file=sys.stderr)
    server = BackgroundServer(table, host, port=port, human=human)
    if replay is not None:  # every session opens with the recorded game
        server.app.state.sessions.replay = (replay, source, who)
    try:
        server.__enter__()
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{table.game.name} against {table.agent.name}: {server.url}/  (Ctrl-C stops)", flush=True)
    try:
        while server.thread.is_alive():
            server.thread.join(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        server.__exit__(None, None, None)
    return 0


class BackgroundServer:
    """The app served by uvicorn in a thread on ``host`` and ``port`` (0: a free one)."""

    def __init__(self, table: Table, host: str = "127.0.0.1", port: int = 0, **app_options):
        import uvicorn

        from board.server import make_app
        self.app = make_app(table, **app_options)
        self.server = uvicorn.Server(uvicorn.Config(self.app, host=host, port=port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.host, self.port = host, port

    def __enter__(self) -> "BackgroundServer":
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError(f"the board's server did not start on {self.host}:{self.port} "
                                   f"(is the port in use? --port 0 takes a free one)")
            time.sleep(0.02)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://{self.host if ':' not in self.host else f'[{self.host}]'}:{port}"
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


__all__ = ["BackgroundServer", "BadMove", "build_table", "host_warning", "play_main", "play_parser", "serve"]
