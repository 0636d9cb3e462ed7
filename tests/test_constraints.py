"""constraints.txt, the exact versions CI tested (`make lock` writes it from pyproject.toml):
every dependency of pyproject, the test and bitbully extras included, has one pin inside its range;
torch is the CPU build of pyproject's release and no CUDA package is pinned; the image's
Ray is the pinned one; and the environment under test is the pinned one (`make setup`
installs through the file, so a version that differs means the tests ran on another)."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)$")


def pins() -> dict[str, str]:
    found: dict[str, str] = {}
    for number, line in enumerate((ROOT / "constraints.txt").read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        match = PIN.match(line)
        assert match, f"constraints.txt line {number}: {line!r} is not name==version"
        name = canonicalize_name(match.group(1))
        assert name not in found, f"constraints.txt line {number}: {name} pinned twice"
        found[name] = match.group(2)
    return found


def requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    return [Requirement(r) for r in project["dependencies"] + extras["test"] + extras["bitbully"]]


def test_every_dependency_is_pinned_inside_its_range():
    pinned = pins()
    for requirement in requirements():
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"{requirement} of pyproject.toml has no pin in constraints.txt: run make lock"
        assert requirement.specifier.contains(Version(pinned[name]), prereleases=True), (
            f"constraints.txt pins {name}=={pinned[name]}, outside pyproject's {requirement}: run make lock")


def test_torch_is_the_cpu_build_and_nothing_of_cuda_is_pinned():
    pinned = pins()
    torch = next(r for r in requirements() if r.name == "torch")
    assert Version(pinned["torch"]) == Version(f"{next(iter(torch.specifier)).version}+cpu")
    cuda = sorted(n for n in pinned if n.startswith(("nvidia-", "triton", "cuda-")))
    assert not cuda, f"constraints.txt pins CUDA packages {cuda}: it was compiled against the CUDA build of torch"


def test_the_image_installs_the_pinned_ray():
    ray_version = re.search(r"^ARG RAY_VERSION=(\S+)$", (ROOT / "deploy" / "Dockerfile").read_text(), re.M).group(1)
    assert ray_version == pins()["ray"]


def test_the_environment_under_test_is_the_pinned_one():
    differ = {}
    for name, version in pins().items():
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue  # a pin for another platform or Python (say, a backport)
        if Version(installed) != Version(version):
            differ[name] = f"installed {installed}, pinned {version}"
    assert not differ, f"the tests run on other versions than constraints.txt's (make setup installs them): {differ}"
