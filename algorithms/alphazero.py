"""AlphaZero (AVI paper Section 3.4 and A.2): self-play by batched PUCT (or Gumbel) MCTS,
rows of finished games with the final outcome as value target and the search's
distribution as policy target, trained by value MSE plus policy cross-entropy (eq. 11).

Its search needs priors, which an inference server does not answer; the evaluation
cache is off (about a third of the leaves repeat, the speed-up not shown). Reports play
its policy head. Its preset is the game's with a policy head and Table 4's search and
schedule (the config's defaults); Table 6 for F-Games, and the AZAL paper's trace
suites beside play on Connect Four.
"""

from actors import collectors
from algorithms.descriptors import AlgorithmDescriptor
from learner.losses import ALPHAZERO

DESCRIPTOR = AlgorithmDescriptor(
    name="alphazero",
    title="AlphaZero",
    collector=collectors.alphazero,
    policy_columns=("policy",),  # replay.rows.POLICY: the search's distribution
    rows_from_finished_games=True,
    searches=True,  # PUCT or Gumbel MCTS at actors.mcts.simulations
    gumbel=True,
    loss=ALPHAZERO,
    policy_head=True,
    preset_by_game={
        # AVI paper Table 6: 4096 x 32 positions, batches of 1024, 200 steps per
        # iteration, and the c_init / c_base schedule of PUCT.
        "fgame": {"actors.num_envs": 4096, "actors.collect_steps": 32, "learner.batch_size": 1024,
                  "learner.epochs_per_iteration": 200 * 1024 / (4096 * 32),
                  "actors.mcts.c_init": 1.25, "actors.mcts.c_base": 19652.0},
        # The AZAL paper's trace metrics (Tables 1 and 2) beside play, for AlphaZero and AZAL alike.
        "connect4": {"evaluation.suites": "connect4-uniform,connect4-eps-optimal,connect4-play,connect4-traces"},
    },
    report_policy="policy-head",
    exploration="actors.mcts.c_puct",  # the constant PUCT's (tuning)
)
