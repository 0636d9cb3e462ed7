"""The board: play and inspect a checkpoint in the browser (or a terminal), with the exact
oracle's value of every move and a mark on each of the agent's moves.

``python -m launch play`` (``board.cli``) serves ``board.server``'s page and JSON API;
``board.session`` holds one game, ``board.agents`` the players, ``board.marks`` the oracle's
view and the marks (evaluation's definitions), ``board.grid`` what the page draws,
``board.replay`` recorded games and ``board.tui`` the terminal fallback.
"""
