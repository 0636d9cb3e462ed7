"""The README's test command sets up what the tests need by itself: `make test` runs
.ci/system-deps (the Debian packages, installed as root where missing) before .venv and
pytest, and .ci/run is `make test` and the local cluster check, nothing else that installs.

.ci/system-deps runs here with a PATH of fakes only: `id` says who we are, `apt-get`
records its arguments, and empty executables stand for the tools the tests use."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / ".ci" / "system-deps"
BASH = shutil.which("bash")
CLUSTER_TOOLS = ("sshd", "ssh", "rsync", "ip", "curl")  # deploy/local-cluster/check.sh
TOOLS = ("redis-server", "redis-cli", "chromium", "chromedriver", *CLUSTER_TOOLS)  # looked for on PATH
ENGINES = ("gnugo", "gtp-rhino")  # on PATH or in /usr/games
CLUSTER_PACKAGES = ["openssh-server", "openssh-client", "rsync", "iproute2", "curl"]
EVERY_PACKAGE = ["redis-server", "redis-tools", "chromium", "chromium-driver", "gnugo", "grhino", "grhino-data",
                 *CLUSTER_PACKAGES]


def executable(path: Path, text: str = "#!/bin/sh\n") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


def system_deps(tmp_path: Path, *, uid: int, on_path=(), in_games=(), apt_rc: int = 0):
    """Runs .ci/system-deps with only fakes on PATH; returns (the process, apt-get's calls)."""
    bin_dir, games, log = tmp_path / "bin", tmp_path / "games", tmp_path / "apt-get.log"
    executable(bin_dir / "id", f'#!/bin/sh\n[ "$1" = -u ] && echo {uid}\n')
    executable(bin_dir / "apt-get", f'#!/bin/sh\necho "$DEBIAN_FRONTEND $*" >> {log}\nexit {apt_rc}\n')
    for name in on_path:
        executable(bin_dir / name)
    for name in in_games:
        executable(games / name)
    games.mkdir(exist_ok=True)
    proc = subprocess.run([BASH, str(SCRIPT)], capture_output=True, text=True, timeout=30,
                          env={"PATH": str(bin_dir), "SYSTEM_DEPS_GAMES_DIR": str(games),
                               "SYSTEM_DEPS_SSHD": str(tmp_path / "no-sshd")})
    calls = log.read_text().splitlines() if log.exists() else []
    return proc, calls


def test_as_root_with_nothing_installed_it_updates_once_and_installs_every_package(tmp_path):
    proc, calls = system_deps(tmp_path, uid=0)
    assert proc.returncode == 0, proc.stderr
    assert calls == ["noninteractive update -qq", "noninteractive install -y -qq " + " ".join(EVERY_PACKAGE)]


def test_as_root_it_installs_only_what_is_missing(tmp_path):
    proc, calls = system_deps(tmp_path, uid=0, on_path=("redis-server", "redis-cli", "chromium", "gtp-rhino",
                                                        *CLUSTER_TOOLS))
    assert proc.returncode == 0, proc.stderr
    assert calls == ["noninteractive update -qq", "noninteractive install -y -qq chromium-driver gnugo"]


@pytest.mark.parametrize("uid", [0, 1000])
@pytest.mark.parametrize("engines_where", ["path", "games"])
def test_with_every_tool_there_it_does_nothing(tmp_path, uid, engines_where):
    on_path, in_games = (TOOLS + ENGINES, ()) if engines_where == "path" else (TOOLS, ENGINES)
    proc, calls = system_deps(tmp_path, uid=uid, on_path=on_path, in_games=in_games)
    assert (proc.returncode, proc.stdout, proc.stderr, calls) == (0, "", "", [])


def test_chromium_browser_counts_as_chromium(tmp_path):
    # tests/board/test_board_browser.py takes either name.
    proc, calls = system_deps(tmp_path, uid=0, on_path=("redis-server", "redis-cli", "chromium-browser", "chromedriver",
                                                        *CLUSTER_TOOLS), in_games=ENGINES)
    assert (proc.returncode, calls) == (0, [])


def test_a_failed_install_fails(tmp_path):
    proc, _ = system_deps(tmp_path, uid=0, apt_rc=100)
    assert proc.returncode != 0


def test_not_as_root_it_installs_nothing_and_names_each_missing_package(tmp_path):
    proc, calls = system_deps(tmp_path, uid=1000, on_path=("redis-server", "redis-cli", "chromedriver"))
    assert proc.returncode != 0
    assert calls == []
    lines = proc.stderr.splitlines()
    for package in ("chromium", "gnugo", "grhino grhino-data"):
        assert sum(line.endswith(f"apt-get install -y {package}") for line in lines) == 1, proc.stderr
    assert "redis" not in proc.stderr and "chromium-driver" not in proc.stderr
    assert "only root can install them" in lines[-1]


def test_ci_run_is_make_test_and_installs_nothing_itself():
    commands = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
                if line.strip() and not line.lstrip().startswith("#")]
    # make test first, then the local cluster check (docs/cluster.md), last.
    assert "make test" in commands, commands
    assert commands[-1].startswith("bash deploy/local-cluster/check.sh --updates "), commands
    assert commands.index("make test") < len(commands) - 1
    assert not any("apt-get" in c or "system-deps" in c for c in commands), commands


def test_make_test_runs_system_deps_before_pytest():
    # make -n prints the commands `make test` would run, in order, and runs none of them.
    out = subprocess.run(["make", "-n", "-C", str(ROOT), "test"], capture_output=True, text=True, check=True,
                         timeout=60).stdout.splitlines()
    deps = [i for i, line in enumerate(out) if line == "bash .ci/system-deps"]
    pytest_runs = [i for i, line in enumerate(out) if "-m pytest" in line]
    assert len(deps) == 1 and len(pytest_runs) == 2 and deps[0] < pytest_runs[0], out
    venv = [i for i, line in enumerate(out) if "pip install" in line]  # when .venv is out of date
    assert all(deps[0] < i < pytest_runs[0] for i in venv), out
    # The quick tier on two workers, then the slow tier in one process: every test in one of them.
    quick, slow = (out[i] for i in pytest_runs)
    assert '-n 2 -m "not slow"' in quick and "-m slow" in slow and "-n " not in slow, out
    assert "quick=$?" in quick and "slow=$?" in slow, out  # the slow tier runs when the quick one fails


# An inline code span of Debian package names only: the docs' list of what .ci/system-deps installs.
PACKAGE_LIST = re.compile(r"`([a-z0-9][a-z0-9.+-]*(?:\s+[a-z0-9][a-z0-9.+-]*){2,})`")


def package_lists(page: Path) -> list[list[str]]:
    """Every inline code span made of three or more package-like words (a span may wrap onto the
    next line) in the paragraphs of ``page`` that name .ci/system-deps."""
    paragraphs = [p for p in page.read_text().split("\n\n") if ".ci/system-deps" in p]
    return [span.split() for p in paragraphs for span in PACKAGE_LIST.findall(p)]


@pytest.mark.parametrize("page", ["README.md", "docs/quickstart.md"])
def test_the_docs_name_exactly_the_packages_system_deps_installs(tmp_path, page):
    """The list a reader copies is the script's own: .ci/system-deps runs as root with nothing
    installed, and the packages it hands apt-get are the ones the page names, in its order."""
    proc, calls = system_deps(tmp_path, uid=0)
    assert proc.returncode == 0, proc.stderr
    installed = calls[-1].split("install -y -qq ", 1)[1].split()
    lists = package_lists(ROOT / page)
    assert len(lists) == 1, f"{page}: expected one inline list of the Debian packages, found {lists}"
    assert lists[0] == installed, (f"{page} names the Debian packages {lists[0]}; "
                                   f".ci/system-deps installs {installed}")
