"""``python -m launch results``: every results table and figure, the results index and
README's headline rows, drawn from the trial data in ``results/``.

    python -m launch results                 # rewrite every generated part of the pages
    python -m launch results --check         # exit 1 where a page differs from its data
    python -m launch results add EXP_DIR --study NAME [--commit C --machine M]

A page holds prose around generated parts; each part sits between a marker that names
its kind and arguments and a closing marker (launch/results/fragments.py):

    <!-- results: final study=ladder-hex-held metrics=eval/*-play/error_rate -->
    (what the data gives)
    <!-- /results -->

``add`` copies an experiment directory's trial data into ``results/NAME/`` (a new study,
or a newer record of the same one); nothing else writes there.
"""

from __future__ import annotations

import argparse
import difflib
import re
import shlex
import sys
from pathlib import Path

from launch.results.data import JOIN, RESULTS_DIR, ROOT, load_study
from launch.results.fragments import KINDS, WITHOUT_STUDY, Context, FragmentError

MARKER = re.compile(r"(<!-- results: (?P<spec>[^>]*?) -->\n)(?P<body>.*?)(<!-- /results -->)", re.DOTALL)
PAGES = ("README.md", "docs/results/*.md")  # where markers are looked for


FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)


def markers(text: str) -> list[re.Match]:
    """The generated parts of a page, leaving out markers quoted in code blocks."""
    fenced = [m.span() for m in FENCE.finditer(text)]
    return [m for m in MARKER.finditer(text) if not any(a <= m.start() < b for a, b in fenced)]


def pages(root: Path = ROOT) -> list[Path]:
    return sorted({p for pattern in PAGES for p in root.glob(pattern)})


def parse_marker(spec: str, where: str) -> tuple[str, dict]:
    parts = shlex.split(spec)
    if not parts or parts[0] not in KINDS:
        raise FragmentError(f"{where}: marker 'results: {spec}' names no kind; kinds: {', '.join(sorted(KINDS))}")
    args = {}
    for part in parts[1:]:
        key, eq, value = part.partition("=")
        if not eq or not key:
            raise FragmentError(f"{where}: marker argument {part!r} is not key=value")
        args[key] = value
    if parts[0] not in WITHOUT_STUDY and "study" not in args:
        raise FragmentError(f"{where}: marker '{parts[0]}' needs study=NAME")
    return parts[0], args


def _pages_of(texts: dict) -> dict:
    """Each study -> the first results page (not README) whose markers draw from it: from
    it alone where a page does, else joined with others (``study=a+b``)."""
    alone, joined = {}, {}
    for page, text in texts.items():
        if page.name == "README.md" or page.name == "index.md":
            continue
        for m in markers(text):
            study = re.search(r"study=(\S+)", m.group("spec"))
            if study:
                parts = study.group(1).split(JOIN)
                for part in parts:
                    (alone if len(parts) == 1 else joined).setdefault(part, page)
    return joined | alone


def render(page: Path, text: str, *, data_root: Path, pages_of: dict, draw: bool) -> str:
    """``text`` of ``page`` with every generated part redrawn from the data."""
    ctx = Context(page=page, root=data_root, pages_of=pages_of, draw=draw)

    def one(m: re.Match) -> str:
        line = text.count("\n", 0, m.start()) + 1
        kind, args = parse_marker(m.group("spec"), f"{page}:{line}")
        try:
            study = None if kind in WITHOUT_STUDY else load_study(args["study"], data_root)
            body = KINDS[kind](study, {k: v for k, v in args.items() if k != "study"}, ctx)
        except (KeyError, ValueError, FileNotFoundError) as err:
            raise FragmentError(f"{page}:{line}: {kind}: {err}") from err
        return f"{m.group(1)}{body.rstrip()}\n{m.group(4)}"

    out, at = [], 0
    for m in markers(text):
        out += [text[at:m.start()], one(m)]
        at = m.end()
    return "".join(out) + text[at:]


def generate(*, root: Path = ROOT, data_root: Path = RESULTS_DIR, check: bool = False, out=sys.stdout) -> int:
    """Rewrite (or with ``check`` compare) every page's generated parts; 1 where a page
    differs from what its data gives."""
    texts = {p: p.read_text() for p in pages(root)}
    pages_of = _pages_of(texts)
    stale = 0
    for page, text in texts.items():
        if not markers(text):
            continue
        try:
            new = render(page, text, data_root=data_root, pages_of=pages_of, draw=not check)
        except FragmentError as err:
            print(f"{err}", file=out)
            stale += 1
            continue
        if new == text:
            continue
        if check:
            stale += 1
            rel = page.relative_to(root)
            print(f"{rel}: its generated parts differ from its data (python -m launch results rewrites them):",
                  file=out)
            out.writelines(list(difflib.unified_diff(text.splitlines(True), new.splitlines(True), str(rel),
                                                     f"{rel} from results/", n=1))[:40])
        else:
            page.write_text(new)
            print(f"{page.relative_to(root)}: rewritten", file=out)
    if check and not stale:
        print(f"results: {len([t for t in texts.values() if markers(t)])} pages match their data", file=out)
    return 1 if stale else 0


def add(exp_dir: Path, study: str, *, commit: str | None, machine: str | None, data_root: Path = RESULTS_DIR,
        tunings: tuple = ()) -> Path:
    """The experiment's trial data into ``data_root/study``, with each tuning directory's
    ``tune.json`` as ``tune-[<instance>-]<arm>.json``: those given (``launch tune``) and
    those of the experiment's own tuning steps (``EXP_DIR/tuning/*``) that have ended."""
    import json

    from launch.experiments.layout import TUNE_FILE, TUNING_DIR
    from launch.results.record import experiment_tables, study_info, write_tables
    from launch.results.schema import TUNING_PREFIX

    tunings = (*tunings, *sorted(p.parent for p in (Path(exp_dir) / TUNING_DIR).glob(f"*/{TUNE_FILE}")))

    if not re.fullmatch(r"[a-z0-9][a-z0-9.-]*", study):
        raise ValueError(f"--study {study!r}: lower-case letters, digits, dots and dashes")
    tables = experiment_tables(exp_dir, study, stated={"commit": commit, "machine": machine, "strict": True})
    if tables["trials"].num_rows == 0 and not tunings:
        # A study whose tuning steps have ended enters with them alone: its trials follow.
        raise ValueError(f"{exp_dir}: no trial has metrics yet and no tuning step has ended; nothing to add")
    records = []
    for tuning in tunings:
        if not (Path(tuning) / TUNE_FILE).is_file():
            raise ValueError(f"--tune {tuning}: no {TUNE_FILE} (a launch tune directory holds one)")
        record = json.loads((Path(tuning) / TUNE_FILE).read_text())
        # The command as a reader would run it: the tuning directory under runs/.
        record["command"] = record["command"].replace(str(Path(tuning).resolve()), f"runs/{Path(tuning).name}")
        record["command"] = record["command"].replace(str(Path(exp_dir).resolve()), f"runs/{study}")
        records.append(record)
    out = write_tables(tables, study_info(exp_dir, study), data_root / study)
    for record in records:
        name = "-".join(p for p in (record.get("instance"), record["arm"], "beyond" if "extends" in record else "") if p)
        (out / f"{TUNING_PREFIX}{name}.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return out


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["add"]:
        parser = argparse.ArgumentParser(prog="python -m launch results add",
                                         description="Copy an experiment directory's trial data into results/STUDY.")
        parser.add_argument("exp_dir", type=Path)
        parser.add_argument("--study", required=True, help="the study's name: its directory under results/")
        parser.add_argument("--commit", help="the commit that ran trials without a provenance file")
        parser.add_argument("--machine", help="the machine that ran trials without a provenance file")
        parser.add_argument("--tune", action="append", default=[], type=Path, metavar="TUNE_DIR",
                            help="a launch tune directory of one of the study's arms; repeat for each")
        args = parser.parse_args(argv[1:])
        try:
            path = add(args.exp_dir, args.study, commit=args.commit, machine=args.machine, tunings=tuple(args.tune))
        except (ValueError, FileNotFoundError) as err:
            parser.error(str(err))
        print(f"{path.relative_to(ROOT)}: written; now python -m launch results")
        return 0
    parser = argparse.ArgumentParser(prog="python -m launch results",
                                     description="Draw every results table and figure from the data in results/.")
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 where a page's generated part differs from its data")
    args = parser.parse_args(argv)
    return generate(check=args.check)
