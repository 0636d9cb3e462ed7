"""An outside GTP engine as a subprocess: commands written to its stdin, answers read from
its stdout under a deadline, so that a hung engine costs a timeout and never a hang.

:meth:`GtpEngine.send` and :meth:`GtpEngine.receive` are apart so that a referee can ask
many engines at once (each thinks in its own process) and then collect their answers;
:meth:`GtpEngine.command` is the two together. Any failure of the process (it exited, it
answered nothing within the timeout, it wrote something that is not GTP) raises
:class:`EngineFailure` naming the engine; a well-formed ``?`` answer raises
:class:`EngineRefused` (a subclass) with the engine's text.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import tempfile
import time
from collections.abc import Sequence

from gtp.protocol import parse_answer


class EngineFailure(RuntimeError):
    """The engine crashed, hung past its timeout or broke the protocol."""

    def __init__(self, engine: str, command: str, problem: str):
        super().__init__(f"engine {engine!r}, command {command!r}: {problem}")
        self.engine, self.command, self.problem = engine, command, problem


class EngineRefused(EngineFailure):
    """The engine answered ``? text``."""


class GtpEngine:
    """``argv`` run as a GTP engine. ``name``: how records name it (default: argv[0]'s
    base name). ``timeout``: seconds for an answer (``receive``'s default)."""

    def __init__(self, argv: Sequence[str], *, name: str | None = None, timeout: float = 30.0,
                 cwd: str | None = None, env: dict | None = None):
        self.argv = [str(a) for a in argv]
        self.name = name or os.path.basename(self.argv[0])
        self.timeout = timeout
        self._buffer = b""
        self._pending: list[str] = []  # commands sent, answers not yet read
        # stderr to a file, not a pipe: an engine that logs a lot never blocks on a full pipe.
        self._stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._stderr, cwd=cwd, env=env, start_new_session=True)
        os.set_blocking(self.proc.stdout.fileno(), False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.proc.stdout, selectors.EVENT_READ)

    # ---- the protocol ---------------------------------------------------------------

    def send(self, command: str) -> None:
        """Write one command line (its answer is read by :meth:`receive`, in order)."""
        self._pending.append(command)
        try:
            self.proc.stdin.write(command.encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise self._failure(command, "its input is closed (the process exited)") from None

    def receive(self, timeout: float | None = None) -> str:
        """The text of the answer to the oldest command sent; EngineRefused for ``?``."""
        command = self._pending.pop(0) if self._pending else "(none sent)"
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while b"\n\n" not in self._buffer.replace(b"\r", b""):
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._failure(command, f"no answer within {self.timeout if timeout is None else timeout:g} s")
            if not self._selector.select(left):
                continue
            chunk = self.proc.stdout.read()
            if chunk == b"":
                raise self._failure(command, "it closed its output (the process exited)")
            self._buffer += chunk or b""
        clean = self._buffer.replace(b"\r", b"")
        raw, _, self._buffer = clean.partition(b"\n\n")
        try:
            ok, text = parse_answer(raw.decode(errors="replace"))
        except ValueError as e:
            raise self._failure(command, str(e)) from None
        if not ok:
            raise EngineRefused(self.name, command, text)
        return text

    def command(self, command: str, timeout: float | None = None) -> str:
        self.send(command)
        return self.receive(timeout)

    # ---- the process ----------------------------------------------------------------

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def stderr_tail(self, chars: int = 400) -> str:
        try:
            size = self._stderr.seek(0, os.SEEK_END)
            self._stderr.seek(max(0, size - chars))
            return self._stderr.read().decode(errors="replace").strip()
        except (OSError, ValueError):
            return ""

    def _failure(self, command: str, problem: str) -> EngineFailure:
        code = self.proc.poll()
        if code is not None:
            problem += f"; exit status {code}"
        tail = self.stderr_tail()
        if tail:
            problem += f"; stderr: {tail}"
        return EngineFailure(self.name, command, problem)

    def close(self, timeout: float = 2.0) -> None:
        """``quit``, then kill the process if it has not exited within ``timeout``."""
        if self.alive:
            try:
                self._pending.clear()
                self.proc.stdin.write(b"quit\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                pass
        self.kill()

    def kill(self) -> None:
        if self.alive:
            try:
                os.killpg(self.proc.pid, 9)
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
        try:
            self.proc.wait(2.0)
        except subprocess.TimeoutExpired:
            pass
        self._selector.close()
        for f in (self.proc.stdin, self.proc.stdout, self._stderr):
            try:
                f.close()
            except (OSError, ValueError):
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
