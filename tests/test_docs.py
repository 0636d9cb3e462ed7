"""The documentation: the site builds strictly (a broken link or a page missing from the nav
fails), the configuration reference matches the code, the README stays short, and no tracked
file points to a document outside the repository."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README_MAX_LINES = 300


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path):
    """``mkdocs build --strict`` as ``make docs`` runs it; CI builds the site through this test."""
    # The test extra installs MkDocs (make setup); a missing one is a failure, not a skip.
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"})
    log = done.stdout + done.stderr
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{log[-6000:]}"
    assert (tmp_path / "site" / "index.html").exists()
    assert (tmp_path / "site" / "reference" / "config" / "index.html").exists()


def test_the_config_reference_matches_the_code():
    from launch import config_doc

    committed = config_doc.PAGE.read_text() if config_doc.PAGE.exists() else ""
    assert committed == config_doc.render(), (
        f"{config_doc.PAGE.relative_to(ROOT)} differs from the config dataclasses: "
        f"run `.venv/bin/python -m {config_doc.COMMAND.split(' -m ')[1]}` and commit the page")


def test_field_docs_come_from_trailing_comments_docstrings_and_comments_above():
    from dataclasses import dataclass, field

    from launch.config_doc import rows

    @dataclass(frozen=True)
    class Inner:
        depth: int = 2
        """How deep, in plies."""

    @dataclass(frozen=True)
    class Outer:
        # The first line above,
        # and the second.
        width: int = 8
        name: str = "x"  # a trailing comment wins
        inner: Inner = field(default_factory=lambda: Inner(depth=3))  # the nested record

    got = {key: (default, doc) for key, _, default, doc in rows(Outer())}
    assert got == {"width": ("8", "The first line above, and the second."), "name": ("'x'", "a trailing comment wins"),
                   "inner": ("(below)", "the nested record"), "inner.depth": ("3", "How deep, in plies.")}


def test_the_readme_is_short():
    lines = (ROOT / "README.md").read_text().count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; at most {README_MAX_LINES}: move detail to docs/"


def test_the_readme_links_resolve():
    text = (ROOT / "README.md").read_text()
    missing = [target for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
               if "://" not in target and not (ROOT / target).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def _tracked_files() -> list[Path]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [ROOT / n for n in names.decode().split("\0") if n and (ROOT / n).is_file()]


def test_no_tracked_file_points_outside_the_repository():
    """A clone has nothing beside it: the design is docs/design.md, the papers are cited by name."""
    outside = ["../" + "shared", "/work/" + "shared"]  # split so that this file does not match itself
    design = "DESIGN" + ".md"
    tracked = _tracked_files()
    designs = {p.relative_to(ROOT).as_posix() for p in tracked if p.name == design}
    found = []
    for path in tracked:
        try:
            text = path.read_text()
        except (UnicodeDecodeError, OSError):
            continue
        rel = path.relative_to(ROOT).as_posix()
        for number, line in enumerate(text.splitlines(), 1):
            if any(o in line for o in outside):
                found.append(f"{rel}:{number}: {line.strip()[:120]}")
            elif design in line and not designs:
                found.append(f"{rel}:{number}: names {design}, which is not in the repository "
                             f"(the design is docs/design.md)")
    assert not found, "references outside the repository:\n" + "\n".join(found)


def _readme_launch_commands() -> list[list[str]]:
    import shlex

    text = (ROOT / "README.md").read_text()
    lines = "\n".join(re.findall(r"```bash\n(.*?)```", text, re.S)).replace("\\\n", " ").splitlines()
    return [shlex.split(line.split("python -m launch", 1)[1].split("#", 1)[0].replace('"$CKPT"', "CKPT"))
            for line in lines if "python -m launch" in line and not line.lstrip().startswith("#")]


def test_the_readme_training_commands_are_valid_runs():
    """The README's training commands parse and give a valid configuration (their `--set`
    keys included), and its other commands are subcommands that exist."""
    from launch.cli import SUBCOMMANDS, train_parser
    from launch.config import resolve, validate

    subcommands = set(SUBCOMMANDS)
    commands = _readme_launch_commands()
    trained = 0
    for words in commands:
        if words and words[0] in subcommands:
            continue
        assert words and words[0].startswith("--"), f"README runs an unknown subcommand: python -m launch {words}"
        args = train_parser().parse_args(words)
        if args.resume:
            continue
        validate(resolve(args.game, args.preset, args.overrides, algo=args.algo, seed=args.seed))
        trained += 1
    assert trained >= 2, commands


# A tracker number (the word issue, then a number, with or without "#") or a heading anchor made from one.
# Pieces joined here so that this file does not match itself.
ISSUE_NUMBER = re.compile(r"\b[Ii]ssues?\s*#?\d+\b|-" + "issue" + r"-\d+\b")


def test_no_tracked_file_names_an_issue_number():
    """A clone has no tracker: code, tests, specs and pages say what a thing is, not which
    ticket asked for it."""
    found = []
    for path in _tracked_files():
        try:
            text = path.read_text()
        except (UnicodeDecodeError, OSError):
            continue
        rel = path.relative_to(ROOT).as_posix()
        found += [f"{rel}:{number}: {line.strip()[:120]}" for number, line in enumerate(text.splitlines(), 1)
                  if ISSUE_NUMBER.search(line)]
    assert not found, "issue numbers, which a reader cannot look up:\n" + "\n".join(found)


def test_every_headline_result_is_dated():
    """Each row of the README's headline results names the date of its runs."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Headline results", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| study")]
    assert rows, "README.md has no headline results table"
    undated = [row[:100] for row in rows if not re.search(r"\b20\d\d-\d\d-\d\d\b", row.split(" | ")[0])]
    assert not undated, "headline results without the date of their runs:\n" + "\n".join(undated)
