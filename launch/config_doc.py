"""The configuration reference (``docs/reference/config.md``), generated from the dataclasses.

Every field of :class:`launch.config.TrainConfig` is walked, nested dataclasses to any depth
(``network.*``, ``mcts.*``, ...), and written as one table row: the dotted key that
``--set key=value`` takes, the annotated type, the default, and the field's one-line doc.
The doc is read from the source, so the page cannot say what the code does not: the
trailing ``# comment`` of the field's statement, else its attribute docstring (a string
literal on the lines after it), else the comment lines directly above it (a block of
comments above a group of fields belongs to the first field below it only).

    python -m launch.config_doc          # rewrite docs/reference/config.md
    python -m launch.config_doc --check  # exit 1 when the committed page is stale

``tests/test_docs.py`` fails when the committed page differs from the generated one.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import io
import sys
import textwrap
import tokenize
from pathlib import Path

PAGE = Path(__file__).resolve().parents[1] / "docs" / "reference" / "config.md"
COMMAND = "python -m launch.config_doc"


def field_docs(cls: type) -> dict[str, str]:
    """Field name -> its one-line doc from the source of dataclass ``cls`` (inherited fields
    from the classes that define them)."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if dataclasses.is_dataclass(klass) and klass is not object:
            try:
                docs.update(_own_field_docs(klass))
            except (OSError, TypeError):  # no source (built in a REPL): no docs
                pass
    return docs


def _own_field_docs(cls: type) -> dict[str, str]:
    source = textwrap.dedent(inspect.getsource(cls))
    lines = source.splitlines()
    trailing: dict[int, str] = {}  # 1-based row -> a comment after code on that row
    alone: dict[int, str] = {}  # row -> a comment that is the whole line
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            row, col = tok.start
            text = tok.string.lstrip("#").strip()
            (alone if not lines[row - 1][:col].strip() else trailing)[row] = text
    klass = ast.parse(source).body[0]
    docs = {}
    body = klass.body
    for i, node in enumerate(body):
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        doc = next((trailing[r] for r in range(node.lineno, node.end_lineno + 1) if r in trailing), "")
        after = body[i + 1] if i + 1 < len(body) else None
        if not doc and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant) \
                and isinstance(after.value.value, str):
            doc = " ".join(after.value.value.split())
        if not doc:
            above, row = [], node.lineno - 1
            while row in alone:
                above.insert(0, alone[row])
                row -= 1
            doc = " ".join(above)
        docs[node.target.id] = doc
    return docs


def rows(config, prefix: str = "") -> list[tuple[str, str, str, str]]:
    """(dotted key, type, default, doc) for every leaf field of the dataclass instance
    ``config``, nested dataclasses flattened under their field's name, in field order."""
    docs = field_docs(type(config))
    out = []
    for f in dataclasses.fields(config):
        if not f.init:
            continue
        value = getattr(config, f.name)
        key = prefix + f.name
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            doc = docs.get(f.name) or " ".join((inspect.getdoc(type(value)) or "").split("\n\n")[0].split())
            out.append((key, _type_name(f.type), "(below)", doc))
            out += rows(value, key + ".")
        else:
            out.append((key, _type_name(f.type), repr(value), docs.get(f.name, "")))
    return out


def _type_name(annotation) -> str:
    return annotation if isinstance(annotation, str) else getattr(annotation, "__name__", repr(annotation))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def board_rows() -> list[tuple[str, str, str]]:
    """(game, board, changes) for every board that a spec of ``experiments/`` trains on, of
    the games whose descriptor has a ``preset_at``: the changes it makes to the game's
    preset there, as ``key=value`` pairs."""
    import games
    from launch.experiments.spec import SPEC_DIR, load_spec

    boards = {}
    for path in sorted(SPEC_DIR.glob("*.toml")):
        spec = load_spec(str(path))
        for instance in spec.instances:
            params = {**spec.game_params, **instance.params}
            if params and games.descriptor(instance.game).preset_at:
                boards[(instance.game, tuple(sorted(params.items())))] = params
    out = []
    for (game, key), params in sorted(boards.items()):
        changes = games.descriptor(game).piece("preset_at")(dict(params))
        board = ", ".join(f"{k}={v}" for k, v in key)
        out.append((game, board, ", ".join(f"`{k}={v}`" for k, v in sorted(changes.items())) or "none"))
    return out


def algorithm_settings() -> list[str]:
    """The section of the algorithms' own settings (the ``algorithm`` field's keys): a
    table per algorithm whose descriptor has a ``settings_record``."""
    import algorithms

    out = ["", "## An algorithm's own settings", "",
           "The `algorithm` field holds the settings of the run's algorithm that are its own, declared",
           "in its module (`algorithms/<algo>.py`, its descriptor's `settings_record`), set with",
           "`--set algorithm.FIELD=VALUE`. A key given here before it was the algorithm's own is",
           "still taken, and an old `config.json` is read with it in its new place."]
    for name in algorithms.names():
        described = algorithms.descriptor(name)
        if described.settings is None:
            continue
        moved = {new: old for old, new in described.moved_keys.items()}
        out += ["", f"### {described.title} (`--algo {name}`)", "",
                "| key | type | default | doc |", "|---|---|---|---|"]
        for key, type_name, default, doc in rows(described.settings, "algorithm."):
            before = moved.get(key.removeprefix("algorithm."))
            doc += f" (before: `{before}`)" if before else ""
            out.append(f"| `{key}` | `{_cell(type_name)}` | `{_cell(default)}` | {_cell(doc)} |")
    return out


def render() -> str:
    from launch.config import TrainConfig

    config = TrainConfig()
    table = ["| key | type | default | doc |", "|---|---|---|---|"]
    for key, type_name, default, doc in rows(config):
        table.append(f"| `{key}` | `{_cell(type_name)}` | `{_cell(default)}` | {_cell(doc)} |")
    head = [
        "---",
        "hide:",
        "  - toc",
        "---",
        "",
        "# Configuration reference",
        "",
        f"<!-- Generated by `{COMMAND}` from the dataclasses of `launch/config.py`; do not edit. -->",
        "",
        f"Every field of `{TrainConfig.__module__}.{TrainConfig.__name__}`, nested dataclasses flattened",
        "to dotted keys. Any of them is set with `--set key=value` (`python -m launch ... --set",
        "network.channels=32`); a bad key or value is refused before anything starts. The defaults",
        "here are the dataclasses' own; a preset (`--preset`, [Training](../training.md)) changes",
        "many of them, and `config.json` in a run directory records the values a run used. Each",
        "doc is the field's comment in the source.",
        "",
        f"Generated by `{COMMAND}` (`make docs` runs it); `tests/test_docs.py` fails when this",
        "page and the code differ.",
        "",
    ]
    boards = [*algorithm_settings(),
        "",
        "## A board's changes to its game's preset",
        "",
        "A board other than the game's default (`game_params`) changes the game's preset as",
        "its descriptor's `preset_at` says (`games/<game>.py`; the measurements that chose them",
        "are in [Training](../training.md)); `--set` still overrides them. The boards the",
        "experiment specs train on:",
        "",
        "| game | board | changes |",
        "|---|---|---|",
        *[f"| {game} | {_cell(board)} | {_cell(changes)} |" for game, board, changes in board_rows()],
    ]
    return "\n".join(head + table + boards) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the page differs from the code")
    parser.add_argument("--out", type=Path, default=PAGE, help=f"the page (default {PAGE})")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = args.out.read_text() if args.out.exists() else ""
        if current != text:
            print(f"{args.out} is stale: run {COMMAND}", file=sys.stderr)
            return 1
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
