"""What the rest of the system knows about a training algorithm, declared once in its module.

Each algorithm module of this package (``algorithms/avi.py``, ``alphazero.py``, ...)
defines ``DESCRIPTOR``, an :class:`AlgorithmDescriptor`, and ``algorithms`` registers it
under its name (``algorithms.descriptor(name)``); an algorithm defined elsewhere (a test's
toy algorithm) registers its own with ``algorithms.register``. Code outside
``algorithms/`` asks the descriptor instead of comparing the algorithm's name with a literal.

An algorithm module imports its building blocks (the collector's parts in ``actors``, the
loss in ``learner``) and hands them over as objects, so that the import graph shows
``algorithms`` above the roles; the roles are handed the resolved descriptor and never look
an algorithm up by name. A :data:`games.descriptors.Ref`, ``"module:attribute"``, is still
taken (:meth:`AlgorithmDescriptor.piece`).

An algorithm's own settings (the hybrid's policy temperature, AZAL's lambda_aux and first
labelled ply) are a frozen dataclass it defines, ``settings_record``; a run sets them as
``algorithm.FIELD`` config keys, and its roles read them from the descriptor the run hands
them (:meth:`AlgorithmDescriptor.configured`): the actors' collector from ``settings``, the
learner its loss from :meth:`AlgorithmDescriptor.training_loss`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from games.descriptors import Ref, resolve

REPORT_POLICIES = ("greedy", "policy-head")  # the evaluation.policy values ``auto`` may stand for
EVAL_CACHES = ("cache", "batch", "off")  # search.cache.EVAL_CACHE_MODES (not imported: search is above)


def check_at_least_zero(name: str, value: Any, *, integer: bool = False, zero: str = "") -> None:
    """A settings record's check of its field ``name``: ``value`` must be a number (an
    integer where ``integer``) >= 0; ValueError naming the field (``zero``: what 0 means)."""
    kind = "an integer" if integer else "a number"
    if isinstance(value, bool) or not isinstance(value, int if integer else (int, float)):
        raise ValueError(f"{name} must be {kind}, got {value!r}")
    if not value >= 0:
        raise ValueError(f"{name} must be >= 0{f' ({zero})' if zero else ''}, got {value}")


@dataclass(frozen=True, eq=False)  # one per algorithm, compared and hashed by identity (its dicts are unhashable)
class AlgorithmDescriptor:
    """Everything the system must know about a training algorithm besides its code."""

    name: str  # the registry name (``--algo NAME``; ``algo`` in config.json)
    title: str  # as people write it in messages and reports ("AlphaZero")
    # --- self-play (actors.pool.SelfPlayWorker)
    # (actors.collectors.CollectorSetup) -> (value function or evaluator, collector): what an
    # actor plays with; the collector's ``collect`` gives the rows of the schema below.
    collector: Ref
    # The action distributions (float32[A] each) its rows carry beyond obs, target and
    # version (replay.rows.schema_for), in the order its loss reads them.
    policy_columns: tuple[str, ...] = ()
    labels_while_collecting: bool = False  # its actors ask the oracle service for labels (the game's labeller)
    rows_from_finished_games: bool = False  # a row is stored only once its game has ended
    eval_cache: str = "off"  # actors.eval_cache=auto: cache, batch or off (search/cache.py)
    inference_server: bool = False  # an inference server (values only) can evaluate for its actors
    # Its self-play searches a tree (actors.search, at actors.mcts.simulations): its runs score
    # that search beside report_policy (evaluation.also_search=auto).
    searches: bool = False
    gumbel: bool = False  # actors.search=gumbel applies (its self-play searches with MCTS)
    # --- training (learner.learner.Learner)
    # A learner.losses.Loss (the loss and the metrics it reports), or a function that makes
    # one from its settings record (AZAL's, of its lambda_aux): the learner's is ``training_loss()``.
    loss: Ref = "learner.losses:AVI"
    policy_head: bool = False  # its loss trains the network's policy head (network.policy_head must be true)
    # --- presets (launch.config.for_algo): dotted config keys over the game's preset
    builds_on: str | None = None  # the algorithm whose changes come first (AZAL: AlphaZero's)
    preset: Mapping[str, Any] = field(default_factory=dict)  # its changes at every game
    preset_by_game: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # game name -> its changes there
    # --- evaluation and reports
    report_policy: str = "greedy"  # what evaluation.policy=auto plays in reports: greedy or policy-head
    # --- its own settings: a frozen dataclass whose fields are the run's ``algorithm.FIELD``
    # config keys (None: it has none), their values for this run (``configured``; its
    # defaults until then), and the config keys they had before, old dotted key -> field.
    settings_record: type | None = None
    settings: Any = None
    moved_keys: Mapping[str, str] = field(default_factory=dict)
    # --- tuning (launch.experiments.tuning): the config key of its exploration parameter
    exploration: str = "actors.epsilon"

    def __post_init__(self):
        if not self.name or not self.name.isidentifier():
            raise ValueError(f"an algorithm's name must be a nonempty identifier, got {self.name!r}")
        if self.report_policy not in REPORT_POLICIES:
            raise ValueError(f"algorithm {self.name!r}: report_policy must be one of {', '.join(REPORT_POLICIES)}, "
                             f"got {self.report_policy!r}")
        if self.eval_cache not in EVAL_CACHES:
            raise ValueError(f"algorithm {self.name!r}: eval_cache must be one of {', '.join(EVAL_CACHES)}, "
                             f"got {self.eval_cache!r}")
        if self.gumbel and not self.searches:
            raise ValueError(f"algorithm {self.name!r}: actors.search=gumbel is a self-play search; "
                             f"set searches=True")
        if self.policy_columns and not self.policy_head:
            raise ValueError(f"algorithm {self.name!r}: rows with action distributions "
                             f"({', '.join(self.policy_columns)}) train a policy head: set policy_head=True")
        if self.settings_record is not None and not dataclasses.is_dataclass(self.settings_record):
            raise TypeError(f"algorithm {self.name!r}: settings_record must be a dataclass, "
                            f"got {self.settings_record!r}")
        if self.settings_record is None and self.settings is not None:
            raise ValueError(f"algorithm {self.name!r} has settings but no settings_record")
        if self.settings_record is not None and self.settings is None:
            object.__setattr__(self, "settings", self.settings_record())  # its defaults
        unmoved = set(self.moved_keys.values()) - set(self.setting_names())
        if unmoved:
            raise ValueError(f"algorithm {self.name!r}: moved_keys name no setting: {', '.join(sorted(unmoved))}")
        object.__setattr__(self, "moved_keys", dict(self.moved_keys))
        object.__setattr__(self, "policy_columns", tuple(self.policy_columns))
        object.__setattr__(self, "preset", dict(self.preset))  # copies: the caller's stay its own
        object.__setattr__(self, "preset_by_game", {g: dict(c) for g, c in self.preset_by_game.items()})

    def piece(self, field_name: str) -> Any:
        """The object the :data:`Ref` field ``field_name`` names (``collector``, ``loss``)."""
        return resolve(getattr(self, field_name))

    def training_loss(self) -> Any:
        """The ``learner.losses.Loss`` it trains with: ``loss`` itself, or the one ``loss``
        makes of its settings (a ``Loss`` is a record, not callable)."""
        loss = self.piece("loss")
        return loss(self.settings) if callable(loss) else loss

    def setting_names(self) -> tuple[str, ...]:
        """The fields of its settings record (``algorithm.FIELD`` keys), in order."""
        return tuple(f.name for f in dataclasses.fields(self.settings_record)) if self.settings_record else ()

    def configured(self, values: Mapping[str, Any]) -> AlgorithmDescriptor:
        """This descriptor with its settings made from ``values`` (a run's ``algorithm``
        section: field -> value, the others at their defaults); ValueError naming the key
        that it does not have, or whose value its record refuses."""
        unknown = sorted(set(values) - set(self.setting_names()))
        if unknown:
            have = ", ".join(self.setting_names()) or "none"
            raise ValueError(f"{self.title} has no setting {', '.join('algorithm.' + k for k in unknown)} "
                             f"(its settings: {have})")
        if self.settings_record is None:
            return self
        return dataclasses.replace(self, settings=self.settings_record(**values))

    def own_changes(self, game: str) -> dict[str, Any]:
        """Its own changes of ``game``'s preset: those of every game, then the game's."""
        return {**self.preset, **self.preset_by_game.get(game, {})}
