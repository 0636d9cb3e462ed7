"""The project's licence and its dependencies': pyproject declares Apache-2.0 with the
LICENSE file; every runtime dependency, as installed, declares a permissive licence (no
GPL family: BitBully's AGPL solver may only be an optional extra); and the README's
licence table names each of them."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
COPYLEFT = re.compile(r"\b(A|L)?GPL|General Public License", re.IGNORECASE)


def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def declared_licence(name: str) -> str:
    """What the installed distribution says: its SPDX expression, else its licence text's
    first line, plus its licence classifiers."""
    meta = metadata.metadata(name)
    text = meta.get("License-Expression") or (meta.get("License") or "").strip().splitlines()[:1]
    classifiers = [c for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]
    return " ".join([text if isinstance(text, str) else " ".join(text), *classifiers]).strip()


def test_the_project_is_apache_2_with_its_licence_file():
    assert project()["license"] == "Apache-2.0"
    assert project()["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text


def test_runtime_dependencies_are_permissive_and_named_in_the_readme():
    readme = (ROOT / "README.md").read_text().split("## Licence", 1)
    assert len(readme) == 2, "README.md has no '## Licence' section"
    table = readme[1].lower()
    for requirement in map(Requirement, project()["dependencies"]):
        licence = declared_licence(requirement.name)
        assert licence, f"{requirement.name} declares no licence"
        assert not COPYLEFT.search(licence), f"{requirement.name} is {licence!r}: not a default dependency"
        assert requirement.name.lower() in table, f"README's licence section does not name {requirement.name}"


def test_copyleft_engines_are_optional_only():
    assert not any(Requirement(r).name == "bitbully" for r in project()["dependencies"])
