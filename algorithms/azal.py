"""AZAL (the AZAL paper): AlphaZero whose rows also carry the oracle's smoothed target
over optimal moves (``aux_policy``, actors/labels.py), asked of the oracle service while
collecting, and whose loss adds lambda_aux times its cross-entropy over the labelled rows
(eq. 10; ``learner.aux_weight``, 1.0 as in the paper).

Its preset is AlphaZero's, and on Connect Four it labels every ply, the opening
included, where the AZAL paper finds the oracle's guidance matters most: the solver's
12-ply book answers a position before ply 12 in milliseconds.
"""

from actors import collectors
from algorithms.descriptors import AlgorithmDescriptor
from learner.losses import AZAL

DESCRIPTOR = AlgorithmDescriptor(
    name="azal",
    title="AZAL",
    collector=collectors.azal,
    policy_columns=("policy", "aux_policy"),  # replay.rows.POLICY and AUX_POLICY
    labels_while_collecting=True,
    rows_from_finished_games=True,
    searches=True,  # PUCT or Gumbel MCTS at actors.mcts.simulations
    gumbel=True,
    loss=AZAL,
    policy_head=True,
    builds_on="alphazero",
    preset_by_game={"connect4": {"actors.label_min_ply": 0}},
    report_policy="policy-head",
    exploration="actors.mcts.c_puct",  # the constant PUCT's (tuning)
)
