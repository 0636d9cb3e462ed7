"""The training algorithms behind one registry: ``algorithms.descriptor(name)``, an
``algorithms.descriptors.AlgorithmDescriptor`` with what the rest of the system knows
about the algorithm (its collector, its rows, its loss, its presets, how it is evaluated).

One module per algorithm (``algorithms/avi.py``, ``alphazero.py``, ``azal.py``, ...),
imported on first use; an algorithm defined elsewhere (a test's toy) is added with
:func:`register`. An algorithm module imports its building blocks (``actors``,
``learner``) for real: the package sits above the roles, which are handed the resolved
descriptor (:func:`configured`, with the run's settings) and never look an algorithm up.
"""

from __future__ import annotations

import importlib

from algorithms.descriptors import AlgorithmDescriptor

# name -> the module that defines its DESCRIPTOR, imported on first use. The command
# line's --algo choices keep this order.
BUILTIN = {
    "avi": "algorithms.avi",
    "alphazero": "algorithms.alphazero",
    "azal": "algorithms.azal",
    "hybrid": "algorithms.hybrid",
}
_registered: dict[str, AlgorithmDescriptor] = {}  # algorithms added by register (tests' toys)


def names() -> list[str]:
    """Every algorithm's name: the built-in ones in BUILTIN's order, then those registered."""
    return [*BUILTIN, *_registered]


def register(described: AlgorithmDescriptor) -> None:
    """Add an algorithm defined outside this package; ValueError if its name is taken."""
    if described.name in BUILTIN or described.name in _registered:
        raise ValueError(f"algorithm {described.name!r} is already registered")
    _registered[described.name] = described


def unregister(name: str) -> None:
    """Remove an algorithm added by :func:`register` (the built-in ones stay)."""
    if name not in _registered:
        raise ValueError(f"algorithm {name!r} was not added by algorithms.register")
    del _registered[name]


def descriptor(algo: str | AlgorithmDescriptor) -> AlgorithmDescriptor:
    """The descriptor of the algorithm named ``algo`` (a descriptor is given back as it is:
    a Ray worker is handed the run's descriptor, which its own registry may not hold)."""
    if isinstance(algo, AlgorithmDescriptor):
        return algo
    if algo in _registered:
        return _registered[algo]
    if algo not in BUILTIN:
        raise ValueError(f"unknown algorithm {algo!r}; known algorithms: {', '.join(names())}")
    found = getattr(importlib.import_module(BUILTIN[algo]), "DESCRIPTOR", None)
    if not isinstance(found, AlgorithmDescriptor) or found.name != algo:
        raise TypeError(f"{BUILTIN[algo]}.DESCRIPTOR must be the AlgorithmDescriptor of {algo!r}, got {found!r}")
    return found


def configured(algo: str | AlgorithmDescriptor, settings: dict) -> AlgorithmDescriptor:
    """The descriptor of ``algo`` with the run's settings of it (the config's ``algorithm``
    section); ValueError naming a key it does not have, or a value its record refuses."""
    return descriptor(algo).configured(settings)


def moved_keys() -> dict[str, tuple[str, str]]:
    """The config keys that are now an algorithm's own settings: old dotted key ->
    (the algorithm's name, the setting's field), over every algorithm."""
    return {old: (name, new) for name in names() for old, new in descriptor(name).moved_keys.items()}


def preset_changes(algo: str | AlgorithmDescriptor, game: str) -> dict:
    """The changes ``algo`` makes to ``game``'s preset, as dotted config keys: those of the
    algorithm it builds on first (recursively), then its own (every game's, then the game's)."""
    described = descriptor(algo)
    base = preset_changes(described.builds_on, game) if described.builds_on else {}
    return {**base, **described.own_changes(game)}
