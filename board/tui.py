"""``python -m launch play --tui``: the board in a terminal, with the same marks as the page.

Commands at the prompt: a move by its name (Connect Four: the column 1..7) or ``#A`` for
action A; ``u`` undo; ``n`` new game (you first), ``n2`` (you second), ``w`` watch one
agent move; ``<`` / ``>`` step a replay; ``q`` quit.
"""

from __future__ import annotations

import sys

from board.session import BadMove, Session, Table


def _parse_action(game, word: str, legal_names: dict):
    if word.startswith("#"):
        try:
            return int(word[1:])
        except ValueError:
            raise BadMove(f"{word!r}: after # comes an action number") from None
    by_name = {name: int(a) for a, name in legal_names.items()}
    if word in by_name:
        return by_name[word]
    raise BadMove(f"{word!r} is not a legal move here; legal: {', '.join(legal_names.values()) or 'none'}")


def describe(s: dict, game) -> str:
    def name(a) -> str:  # a move's name for people (Connect Four: columns 1..7)
        return game.action_name(int(a))

    lines = [s["text"], ""]
    for p in s["history"]:
        tag = f" [{p['mark']}]" if p["mark"] else ""
        why = ""
        if p["oracle"] is not None and p["mark"] not in (None, "optimal"):
            o = p["oracle"]
            chosen = o["moves"][str(p["action"])]
            best = [name(m) for m, v in o["moves"].items() if v["best"]]
            why = (f"  position {o['value_text']}; played {chosen['score']} ({chosen['text']}); "
                   f"best {', '.join(best)} at {o['best_score']}")
        lines.append(f"  ply {p['ply'] + 1:>2} {p['who']:<8} {p['name']:>5}{tag}{why}")
    if s["values"]:
        v = s["values"]
        if "visits" in v:  # a search's reasoning
            lines.append("agent: prior " + " ".join(f"{name(a)}:{x:.2f}" for a, x in v["prior"].items())
                         + " | visits " + " ".join(f"{name(a)}:{x}" for a, x in v["visits"].items()))
        elif "values" in v:
            lines.append("agent's values of its last move's children: "
                         + " ".join(f"{name(a)}:{x:+.2f}" for a, x in v["values"].items()))
    if s["oracle"] and s["oracle"]["position"]:
        o = s["oracle"]["position"]
        lines.append(f"oracle, now ({o['value_text']} for the side to move): "
                     + " ".join(f"{name(a)}:{m['score']}" for a, m in o["moves"].items()))
    if s["done"]:
        lines.append(f"game over: {s['result']}")
    if s["replay"]:
        lines.append(f"replay {s['replay']['source']}: ply {s['replay']['cursor']}/{s['replay']['length']} "
                     f"(< and > step)")
    return "\n".join(lines)


def run_tui(table: Table, human: int | None = 0, *, replay=None, source: str = "", who=None, inp=None,
            out=None) -> int:
    inp, out = inp or sys.stdin, out or sys.stdout
    session = Session(table, human)
    if replay is not None:
        session.load_replay(replay, source, who)
    print(f"{table.game.name} against {table.agent.name}. Moves by name; u undo, n new, n2 new (you second), "
          f"w watch, < > replay, q quit.", file=out)
    while True:
        s = session.to_json()
        print(describe(s, table.game), file=out)
        print("> ", end="", file=out, flush=True)
        line = inp.readline()
        if not line:
            return 0
        word = line.strip()
        try:
            if word == "q":
                return 0
            if word == "u":
                session.undo()
            elif word in ("n", "n2"):
                session.new(0 if word == "n" else 1)
            elif word == "w":
                if session.human is not None:
                    session.new(None)
                session.step()
            elif word in ("<", ">") and s["replay"]:
                session.seek(max(0, min(s["replay"]["length"], s["replay"]["cursor"] + (1 if word == ">" else -1))))
            elif word:
                session.move(_parse_action(table.game, word, s["legal_names"]))
        except BadMove as e:
            print(f"error: {e}", file=out)
