"""Commands whose ``--json`` output a program reads (``python -m launch ... --json``,
``launch evaluate --json``): their stdout holds that one JSON document and nothing else,
so that ``| jq`` or ``json.loads`` can take it whole.

Much else would reach stdout while such a command works: the progress lines of a
dataset built on first use (printed in the driver, or in the evaluator actor, whose
stdout Ray's ``log_to_driver`` prints on the driver's ``sys.stdout``), and whatever native
code or a child process writes to file descriptor 1. :func:`stdout_to_stderr` points
both ``sys.stdout`` and descriptor 1 at stderr while the command works; the command
prints its document once the block has ended. A command that started Ray shuts it
down inside the block: Ray prints the last lines it forwards while it shuts down, which
the exit's shutdown would put on stdout after the document.
"""

from __future__ import annotations

import contextlib
import os
import sys


@contextlib.contextmanager
def stdout_to_stderr(enabled: bool = True):
    """Within the block, what is written to stdout (``sys.stdout`` or descriptor 1) goes to
    stderr; ``enabled`` False: a block that changes nothing."""
    if not enabled:
        yield
        return
    sys.stdout.flush()
    try:
        saved = os.dup(1)
        os.dup2(2, 1)
    except OSError:  # no descriptor 1 (a closed stdout): only sys.stdout is diverted
        saved = None
    with contextlib.redirect_stdout(sys.stderr):
        try:
            yield
        finally:
            sys.stderr.flush()
            if saved is not None:
                os.dup2(saved, 1)
                os.close(saved)
