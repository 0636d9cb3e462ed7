"""AZAL (the AZAL paper): AlphaZero whose rows also carry the oracle's smoothed target
over optimal moves (``aux_policy``, actors/labels.py), asked of the oracle service while
collecting, and whose loss adds lambda_aux times its cross-entropy over the labelled rows
(eq. 10; ``algorithm.aux_weight``, 1.0 as in the paper).

Its collector is AlphaZero's search (``actors/alphazero.py``) with the labels added: the
positions of the games that end in a step are sent to the oracle in one batch, without
waiting (``OracleLabeler.submit``): the search goes on while the replicas solve, and a
game's rows wait in a queue until their labels come. The queue is first in, first out, so
rows leave in the order their games ended, exactly as if each batch had been labelled at
once; a collection call ends by waiting for every label still due, so no row is held
between calls (nor in checkpoints). With archive starts the archive keeps each state's
moves, from which the oracle reads a position.

Its preset is AlphaZero's, and on Connect Four it labels every ply, the opening
included, where the AZAL paper finds the oracle's guidance matters most: the solver's
12-ply book answers a position before ply 12 in milliseconds.

This module is the whole algorithm: its settings (:class:`AzalSettings`, the run's
``algorithm.FIELD`` keys), its collector, its loss and its preset.
"""

import time
from collections import deque
from dataclasses import dataclass

import numpy as np

from actors.alphazero import AlphaZeroCollector
from actors.collectors import CollectorSetup, alphazero_options, network_evaluator
from actors.labels import OracleLabeler, PendingLabels
from algorithms.descriptors import AlgorithmDescriptor, check_at_least_zero
from learner.losses import Loss, azal


@dataclass(frozen=True)
class AzalSettings:
    """AZAL's own settings (``algorithm.FIELD`` config keys)."""

    aux_weight: float = 1.0
    """lambda_aux: the weight of the oracle cross-entropy in the loss (AZAL paper eq. 10: 1.0)"""

    label_min_ply: int = 0
    """Connect Four 7x6: positions with fewer stones are not solved, only looked up in the store (0: every ply)"""

    def __post_init__(self):
        check_at_least_zero("aux_weight", self.aux_weight)
        check_at_least_zero("label_min_ply", self.label_min_ply, integer=True, zero="0: every ply")
        object.__setattr__(self, "aux_weight", float(self.aux_weight))  # 1 in a config.json is 1.0


class AzalCollector(AlphaZeroCollector):
    """AlphaZero's self-play whose rows of finished games also carry the oracle's
    ``aux_policy`` float32[N, A] (all zeros where it gave no label)."""

    def __init__(self, game, num_envs: int, *, labeler: OracleLabeler, **alphazero_options):
        """``labeler``: asks the oracle service; ``alphazero_options``: AlphaZeroCollector's."""
        super().__init__(game, num_envs, keep_moves=True, **alphazero_options)
        self.labeler = labeler
        # The rows of finished games and their labels on the way, oldest first.
        self.unlabelled: deque[tuple[dict[str, np.ndarray], PendingLabels]] = deque()

    def _finished(self, rows, ended, envs, plies):
        """The rows of the games ended in this step queue until their labels come; the
        queued rows whose labels have come leave (:meth:`collect` waits for the rest)."""
        if len(ended):
            t0 = time.perf_counter()
            histories = self.moves_of(envs, plies)
            self.unlabelled.append((rows, self.labeler.submit(self.game.from_moves(histories), histories)))
            self.timings["labels"] += time.perf_counter() - t0
        return self._labelled(wait=False)

    def _no_rows(self) -> dict[str, np.ndarray]:
        return {**super()._no_rows(), "aux_policy": np.zeros((0, self.game.num_actions), np.float32)}

    def _labelled(self, wait: bool) -> dict[str, np.ndarray]:
        """The queued rows whose labels have come, the oldest games first, with their
        ``aux_policy``; with ``wait``, all of them (waiting for the oracle)."""
        t0 = time.perf_counter()
        parts = []
        while self.unlabelled and (wait or self.unlabelled[0][1].ready()):
            rows, labels = self.unlabelled.popleft()
            parts.append({**rows, "aux_policy": labels.result()})
        self.timings["labels"] += time.perf_counter() - t0
        return {key: np.concatenate([p[key] for p in parts]) for key in parts[0]} if parts else self._no_rows()

    def collect(self, evaluate, steps: int, deadline: float | None = None) -> dict[str, np.ndarray]:
        """AlphaZero's collection, returned once the labels of every game that ended have come."""
        rows = super().collect(evaluate, steps, deadline)
        if not self.unlabelled:
            return rows
        rest = self._labelled(wait=True)
        return {key: np.concatenate([rows[key], rest[key]]) for key in rows}

    def get_state(self) -> dict:
        if self.unlabelled:  # collect returns only once the queue is empty
            raise RuntimeError("AzalCollector.get_state: finished games are still waiting for their labels")
        return super().get_state()


def collector(setup: CollectorSetup):
    """AlphaZero's evaluator and search, the rows of finished games labelled by the oracle service."""
    settings: AzalSettings = setup.settings
    labeler = OracleLabeler(setup.game, setup.oracle, min_ply=settings.label_min_ply, store=setup.oracle_store)
    return network_evaluator(setup), AzalCollector(setup.game, setup.num_envs, seed=setup.seed, labeler=labeler,
                                                   **alphazero_options(setup.config))


def loss(settings: AzalSettings) -> Loss:
    """AlphaZero's loss plus lambda_aux times the oracle cross-entropy (``learner.losses.azal``)."""
    return azal(settings.aux_weight)


DESCRIPTOR = AlgorithmDescriptor(
    name="azal",
    title="AZAL",
    collector=collector,
    policy_columns=("policy", "aux_policy"),  # replay.rows.POLICY and AUX_POLICY
    labels_while_collecting=True,
    rows_from_finished_games=True,
    searches=True,  # PUCT or Gumbel MCTS at actors.mcts.simulations
    gumbel=True,
    loss=loss,
    policy_head=True,
    builds_on="alphazero",
    preset_by_game={"connect4": {"algorithm.label_min_ply": 0}},
    report_policy="policy-head",
    settings_record=AzalSettings,
    # Its keys before they were its own settings.
    moved_keys={"learner.aux_weight": "aux_weight", "actors.label_min_ply": "label_min_ply"},
    exploration="actors.mcts.c_puct",  # the constant PUCT's (tuning)
)
