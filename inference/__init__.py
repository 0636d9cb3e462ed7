"""The networks and the copies of them that play: architectures (``networks``), the game
and network a Ray worker is built from (``game_network``), the forward of one weight
version on batches of encodings or game states with its bounds (``network``), its
reduced-precision fast paths (``precision``), the machine they run on (``machine``) and
numpy across the process boundary (``tensors``).

It sits on ``games`` alone, below everything that evaluates a network: ``learner`` trains
these networks, ``actors`` and ``evaluation`` play them, and ``search`` calls them through
its evaluator protocol without importing them.
"""
