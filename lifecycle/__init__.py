"""Long-running processes that say what they do: ``watched(Worker)`` logs the start, the
exit and the full traceback of every crash of an actor, as OpenSpiel's ``watcher`` does
for its AlphaZero processes.

    SelfPlayActor = ray.remote(num_cpus=1, max_restarts=-1)(watched(SelfPlayWorker))
    SelfPlayActor.remote(..., log_dir=str(run_dir / "logs"))

The watched class takes one keyword more than the worker, ``log_dir``: with a folder,
the actor writes ``<log_dir>/<actor name>.log`` (its Ray name, or the worker's class
name and Ray actor id when it has none), and its process's own warnings go there too;
with None it writes to stderr. A restarted actor appends to the same file, so the file
tells the actor's whole story: start, traceback, start again (``restarted``), exit.

What a process cannot log itself: a death by SIGKILL, ``os._exit`` or ``ray.kill``
(Ray skips the exit hooks there) leaves no exit line; the next start line, marked
``restarted``, is what says so. ``stop(actors)`` has each actor log its exit, then
kills it. The plain worker class stays as it was, for tests without Ray.
This package imports only Ray, so every package of the system can use it.
"""

from __future__ import annotations

import atexit
import functools
import inspect
import logging
import os
import sys
import warnings

import ray

FORMAT = "%(asctime)s %(levelname)s pid %(process)d %(name)s: %(message)s"
# The roles' actors are made with ``enable_task_events=TASK_EVENTS``. Ray keeps a record of
# every task and actor call in the GCS (up to RAY_task_events_max_num_task_in_gcs, 100,000
# by default, a few KB each): a run makes about a thousand calls a minute, and its head's
# GCS grew from 61 to 195 MiB in a 30-minute soak (docs/cluster.md). No one reads these
# calls one by one; the actors' states (alive, restarting, dead) are kept all the same.
TASK_EVENTS = False


def watched(worker: type) -> type:
    """A subclass of ``worker`` whose ``__init__`` takes ``log_dir: str | None = None`` and
    logs its start, whose public methods log the traceback of any exception they raise
    (raising it still: Ray's handling does not change), and whose process logs its exit."""

    class Watched(worker):
        def __init__(self, *args, log_dir: str | None = None, **kwargs):
            self._lifecycle_log = _actor_logger(worker.__name__, log_dir)
            restarted = was_restarted()
            self._lifecycle_log.info("started%s on node %s", " (restarted by Ray)" if restarted else "", _node_id())
            if _in_actor():  # the process is the actor's: its exit is the actor's
                atexit.register(self._lifecycle_log.info, "exiting")
            try:
                super().__init__(*args, **kwargs)
            except Exception:  # not SystemExit: Ray's exit_actor is an exit, not a crash
                self._lifecycle_log.exception("crashed while starting")
                raise

        def lifecycle_exit(self) -> None:
            """Log the exit now: ``stop`` kills the actor right after (no exit hooks run then)."""
            self._lifecycle_log.info("exiting (stopped by its driver)")
            for handler in self._lifecycle_log.handlers:
                handler.flush()

    for name, method in inspect.getmembers(worker, inspect.isfunction):
        if not name.startswith("_"):
            setattr(Watched, name, _logging_exceptions(method))
    # Ray names the actor's class after these (dashboard, `ray list actors`). The module
    # stays this one, where no such name exists: pickling by name cannot find the plain
    # worker instead, it pickles the watched class by value.
    Watched.__name__ = Watched.__qualname__ = worker.__name__
    Watched.__doc__ = worker.__doc__
    return Watched


def _logging_exceptions(method):
    if inspect.iscoroutinefunction(method):  # still a coroutine function: Ray makes such an actor async
        @functools.wraps(method)
        async def call_async(self, *args, **kwargs):
            try:
                return await method(self, *args, **kwargs)
            except Exception:
                self._lifecycle_log.exception("crashed in %s", method.__name__)
                raise

        return call_async

    @functools.wraps(method)  # keeps the signature Ray checks calls against
    def call(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except Exception:  # not SystemExit (exit_actor) nor KeyboardInterrupt (ray.cancel)
            self._lifecycle_log.exception("crashed in %s", method.__name__)
            raise

    return call


def _actor_logger(worker_name: str, log_dir: str | None) -> logging.Logger:
    """The lifecycle logger of this process, writing to ``<log_dir>/<actor name>.log`` or
    to stderr; with a folder, the process's other loggers write there too (root handler)."""
    name = _actor_name(worker_name)
    logger = logging.getLogger(f"lifecycle.{name}")
    logger.setLevel(logging.INFO)
    logger.propagate = False  # these lines go to the actor's log, not the console
    for old in list(logger.handlers):  # a second instance in one process (tests without Ray)
        logger.removeHandler(old)
        logging.getLogger().removeHandler(old)
        old.close()
    if log_dir is None:
        handler: logging.Handler = logging.StreamHandler(sys.stderr)
    else:
        os.makedirs(log_dir, exist_ok=True)
        handler = logging.FileHandler(os.path.join(log_dir, f"{name}.log"))
        logging.getLogger().addHandler(handler)
    handler.setFormatter(logging.Formatter(FORMAT))
    logger.addHandler(handler)
    return logger


def _actor_name(worker_name: str) -> str:
    """The Ray actor's name; unnamed actors: the worker class and the Ray actor id (the
    same after a restart); outside an actor: the worker class and the process id."""
    if _in_actor():
        context = ray.get_runtime_context()
        return context.get_actor_name() or f"{worker_name}-{context.get_actor_id()[:12]}"
    return f"{worker_name}-pid{os.getpid()}"


def _in_actor() -> bool:
    return ray.is_initialized() and ray.get_runtime_context().get_actor_id() is not None


def was_restarted() -> bool:
    """Whether the calling process is an actor that Ray restarted after its process or
    node died; False outside an actor (and without starting Ray)."""
    if not _in_actor():
        return False
    with warnings.catch_warnings():  # Ray reads its own deprecated actor_id in here
        warnings.simplefilter("ignore", DeprecationWarning)
        return ray.get_runtime_context().was_current_actor_reconstructed


def _node_id() -> str:
    return ray.get_runtime_context().get_node_id() if ray.is_initialized() else "(no Ray)"


def stop(actors: list, timeout: float = 10.0) -> None:
    """End ``actors`` for good, each first logging its exit (``lifecycle_exit``), then
    ``ray.kill``; an actor still inside a call after ``timeout`` s is killed without that
    line. Not Ray's graceful ``__ray_terminate__``: on an actor with task retries, Ray
    reports that task as failed and retried, on the driver's console (and stdout)."""
    said = [actor.lifecycle_exit.remote() for actor in actors]
    ray.wait(said, num_returns=len(said), timeout=timeout)
    for actor in actors:
        ray.kill(actor, no_restart=True)
