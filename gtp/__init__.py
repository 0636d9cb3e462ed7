"""GTP (the Go Text Protocol, version 2) in both directions, and nothing else.

- ``gtp.protocol``: command lines and answers (``= ...`` / ``? ...``), ``GtpError``.
- ``gtp.vertices``: each game's vertex names (Go ``D4``, Othello ``d3``, Connect Four
  ``d1``, Hex ``c4``; ``pass``), both ways.
- ``gtp.engine``: an outside engine as a subprocess (``GtpEngine``), every answer under a
  timeout, a crash or a hang raised as ``EngineFailure``; the engines we know
  (``gnugo``, ``gtp-rhino``) in ``gtp.engines``.
- ``gtp.referee``: games between GTP engines and our own policies, every move checked
  against our rules (``games.make``), each game kept as a ``GameRecord`` (and SGF,
  ``gtp.sgf``); a failing engine ends its game with a record, the match goes on.
- ``gtp.server``: one of our policies as a GTP engine on stdin/stdout
  (``python -m launch gtp --checkpoint CKPT``).

It depends on ``games`` only: the checkpoint-to-policy glue is ``launch.gtp_serve``, the
evaluation suites over it ``evaluation.engine_suites``.
"""
