"""``python -m gtp referee``: two GTP engines play each other, refereed by our rules.

    python -m gtp referee --game go --black "gnugo --mode gtp --chinese-rules --level 0" \\
        --white "python -m launch gtp --checkpoint ckpt.pt" --games 4 --swap --sgf-dir games/

Each engine is a command line (split as a shell would, no shell run). ``--opening`` gives
moves played before the engines take over (vertex names, ``gtp.vertices``), repeatable:
each opening is one game (``--games`` games of the empty board without any). ``--swap``
plays every game twice, the colours exchanged. Prints one line per game and a JSON
summary per engine; the exit status is 1 when a game failed, 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

import games
from gtp import vertices
from gtp.protocol import GtpError
from gtp.referee import Engine, Pairing, play_games, summary
from gtp.sgf import SGF_GAMES, record_sgf


def referee_main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gtp referee", description="Referee games between two GTP engines.")
    p.add_argument("--game", default="go", choices=vertices.GAMES)
    p.add_argument("--size", type=int, help="board size (Go: default 9; Hex: default 7)")
    p.add_argument("--komi", type=float, default=7.0, help="Go's komi (default 7)")
    p.add_argument("--black", required=True, help="command line of the engine playing Black (first)")
    p.add_argument("--white", required=True, help="command line of the engine playing White")
    p.add_argument("--opening", action="append", default=[], help='opening moves, e.g. "E5" or "d3 c3 c4"')
    p.add_argument("--games", type=int, default=1, help="games from the empty board (without --opening)")
    p.add_argument("--swap", action="store_true", help="play each game again with the colours exchanged")
    p.add_argument("--tables", type=int, default=1, help="games at once")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds an engine may take per move")
    p.add_argument("--sgf-dir", type=Path, help="write each game as SGF (Go, Othello) and games.jsonl here")
    args = p.parse_args(argv)
    # The options the game takes (Go: size and komi; Hex: size), at the game's defaults
    # where not given (Go's komi has its default above).
    accepted = games.parameters(args.game)
    params = {k: v for k, v in (("size", args.size), ("komi", args.komi)) if k in accepted and v is not None}
    game = games.make(args.game, **params)
    openings = []
    try:
        for text in args.opening:
            moves: list[int] = []
            for word in text.split():
                moves.append(vertices.action(game, word, moves))
            game.from_moves([moves])  # IllegalMoveError names the move
            openings.append(tuple(moves))
    except (GtpError, ValueError) as e:
        p.error(f"--opening: {e}")
    openings = openings or [()] * args.games
    first = Engine(Path(shlex.split(args.black)[0]).name + " (first)", shlex.split(args.black), timeout=args.timeout)
    second = Engine(Path(shlex.split(args.white)[0]).name + " (second)", shlex.split(args.white),
                    timeout=args.timeout)
    pairings = [Pairing(o, first, second) for o in openings]
    if args.swap:
        pairings += [Pairing(o, second, first) for o in openings]
    records = play_games(game, pairings, tables=args.tables)
    if args.sgf_dir:
        args.sgf_dir.mkdir(parents=True, exist_ok=True)
    for i, rec in enumerate(records):
        result = "failed" if rec.outcome is None else {1.0: "Black wins", 0.0: "draw", -1.0: "White wins"}[rec.outcome]
        line = f"game {i}: {rec.black} vs {rec.white}: {result} ({rec.end}, {len(rec.moves)} moves"
        line += f", our score {rec.score:g})" if rec.score is not None else ")"
        if rec.engine_scores:
            line += " engines: " + ", ".join(f"{k} {v}" for k, v in rec.engine_scores.items())
        if rec.disagreement:
            line += f" DISAGREEMENT: {rec.disagreement}"
        if rec.failure:
            line += f" FAILURE of {rec.failure['engine']}: {rec.failure['problem']} (answer {rec.failure['answer']!r})"
        print(line, flush=True)
        if args.sgf_dir:
            if game.name in SGF_GAMES:
                (args.sgf_dir / f"game-{i:03d}.sgf").write_bytes(record_sgf(rec))
            with open(args.sgf_dir / "games.jsonl", "a") as f:
                f.write(json.dumps(rec.as_dict()) + "\n")
    for engine in (first, second):
        print(json.dumps({"engine": engine.name, **summary(records, engine.name)}))
    return 1 if any(r.outcome is None for r in records) else 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] != "referee":
        print("usage: python -m gtp referee --black CMD --white CMD [--game G] ... (--help)", file=sys.stderr)
        return 2
    return referee_main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
