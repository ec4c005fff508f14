"""The ingest's planning helper: a second process that reads, chunks, counts and embeds the next
files while the ingest writes the current ones to Chroma.

Chroma's embedded `add` holds the GIL for most of its time, so a thread in the same process
would wait for it: the helper is a process, `python -m ragbudget_server.store.planner`, which
imports neither Chroma nor the caller's modules (it starts in well under a second). It runs
`records.prepare`, the very function the ingest runs itself, so a file planned there gives the
same records, and the same embeddings bit for bit (`hashing.embed_text`), as planned here.

The ingest takes the outcomes in file order and writes them exactly as before (`ingest`: the
same batches, add-new, update-kept, delete-stale). The helper is sent the files ahead of the one
the ingest needs, a window at a time; a file it has not been sent when the ingest needs it is
planned in the ingest's own process, so the helper's start-up costs no waiting, and while
the ingest would wait for the helper it plans the next unsent file itself. A file the helper
fails on is planned again here (an error it raises is then the ingest's own, raised where it
always was), and if the helper dies or cannot start, the ingest plans everything itself.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from ragbudget_server.store.records import Planned, PlanSetup, PlanTask, prepare

__all__ = ["MIN_BYTES", "MIN_FILES", "WINDOW", "Planner", "helper_wanted"]

logger = logging.getLogger(__name__)

MIN_FILES = 16
"""The fewest files to read for which an ingest starts the helper (a one-file change, and a
small tree, are planned in the ingest's own process)."""
MIN_BYTES = 1 << 20
"""The fewest bytes to read for which an ingest starts the helper (about 700 chunks: seconds of
planning, against a start-up of a fraction of one)."""
WINDOW = 32
"""The most files sent to the helper and not yet taken by the ingest."""
_STOP = "stop"
_READY = "ready"


def helper_wanted(files: int, size: int) -> bool:
    """Whether an ingest that reads `files` files of `size` bytes in all should start the
    helper: enough of them, on a POSIX system with two cores or more."""
    enough = files >= MIN_FILES and size >= MIN_BYTES
    return enough and os.name == "posix" and (os.cpu_count() or 1) >= 2


class Planner:
    """Plans tasks `0..count-1` (`task(k)`, None for a file left out unread; `size` bytes to
    read in all), in the helper when it is ready and here otherwise; `get(k)` for each k in
    order gives its outcome.

    `local(task)` plans one task here; `counter_spec` and
    `embed_dim` (None: the writer embeds) are what the helper rebuilds its counter and
    embedding from, and `counter_name` what its counter must be called. Use as a context
    manager: leaving it stops the helper.
    """

    def __init__(
        self,
        count: int,
        size: int,
        task: Callable[[int], PlanTask | None],
        local: Callable[[PlanTask], Planned],
        *,
        setup: PlanSetup,
        counter_spec: str | None,
        counter_name: str,
        embed_dim: int | None,
    ) -> None:
        self._count = count
        self._task = task
        self._local = local
        self._sent = 0  # tasks below this are decided: sent to the helper, or planned here
        self._remote: set[int] = set()  # sent and not yet received
        self._got: dict[int, Planned | None] = {}  # received (None: the helper failed on it)
        self._mine: dict[int, Planned | BaseException] = {}  # planned here while waiting
        self._ready = False
        self.helped = 0
        """How many outcomes the helper gave so far."""
        self._proc: subprocess.Popen[bytes] | None = None
        self._inbox: Connection | None = None
        self._outbox: Connection | None = None
        if counter_spec is not None and helper_wanted(count, size):
            self._start((setup, counter_spec, counter_name, embed_dim))

    def __enter__(self) -> Planner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the ingest's side ----------------------------------------------------------------------

    def get(self, k: int) -> Planned | None:
        """The outcome of task `k` (None when it has no task); tasks are taken in order."""
        if k in self._mine:
            done = self._mine.pop(k)
            if isinstance(done, BaseException):
                raise done
            return done
        self._feed(k + 1)
        if k in self._remote:
            planned = self._wait(k)
            if planned is not None:
                self.helped += 1
                return planned
        task = self._task(k)
        return self._local(task) if task is not None else None

    def _feed(self, start: int) -> None:
        """Send the helper the tasks from `start` on, up to the window."""
        if self._outbox is None or not self._is_ready():
            return
        self._sent = max(self._sent, start)
        while self._sent < self._count and len(self._remote) < WINDOW:
            k, self._sent = self._sent, self._sent + 1
            task = self._task(k)
            if task is None:
                continue
            try:
                self._outbox.send((k, task))
            except OSError:
                self._lost("cannot send it work")
                return
            self._remote.add(k)

    def _is_ready(self) -> bool:
        if not self._ready and self._inbox is not None:
            try:
                if self._inbox.poll():
                    self._ready = self._inbox.recv() == _READY
                    if not self._ready:
                        self._lost("it could not rebuild the counter")
            except (OSError, EOFError):
                self._lost("it stopped before it was ready")
        return self._ready

    def _wait(self, k: int) -> Planned | None:
        """The helper's outcome for `k`, planning the next unsent tasks here meanwhile."""
        while k not in self._got:
            inbox = self._inbox
            if inbox is None:  # the helper is gone: everything it held is planned here
                return None
            try:
                if not inbox.poll():
                    if self._sent < self._count:
                        self._plan_here(self._sent)
                        self._sent += 1
                        continue
                    if not inbox.poll(1.0):
                        if self._proc is not None and self._proc.poll() is not None:
                            self._lost(f"it exited with status {self._proc.returncode}")
                        continue
                index, planned = inbox.recv()
            except (OSError, EOFError):
                self._lost("it stopped")
                return None
            self._remote.discard(index)
            self._got[index] = planned
        return self._got.pop(k)

    def _plan_here(self, k: int) -> None:
        task = self._task(k)
        if task is None:
            return
        try:
            self._mine[k] = self._local(task)
        except Exception as exc:  # raised when the ingest comes to this file, as it would be
            self._mine[k] = exc

    def _lost(self, why: str) -> None:
        logger.debug("planning in this process from now on: the helper %s", why)
        self._remote.clear()
        self.close()

    # -- the helper process ---------------------------------------------------------------------

    def _start(self, setup: tuple[Any, ...]) -> None:
        read_end, write_end = os.pipe()  # ingest -> helper
        back_read, back_write = os.pipe()  # helper -> ingest
        env = dict(os.environ)
        roots = {str(Path(m.__file__).resolve().parents[1]) for m in _own_packages()}
        env["PYTHONPATH"] = os.pathsep.join([*sorted(roots), env.get("PYTHONPATH", "")])
        try:
            self._proc = subprocess.Popen(
                [*_command(), str(read_end), str(back_write)],
                pass_fds=(read_end, back_write),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                env=env,
                close_fds=True,
            )
        except OSError as exc:
            logger.debug("cannot start the planning helper: %s", exc)
            for fd in (read_end, write_end, back_read, back_write):
                os.close(fd)
            return
        os.close(read_end)
        os.close(back_write)
        self._outbox = Connection(write_end, readable=False)
        self._inbox = Connection(back_read, writable=False)
        try:
            self._outbox.send(setup)
        except OSError:
            self._lost("cannot be sent its setup")

    def close(self) -> None:
        """Stop the helper (it ends with the tasks it holds unplanned)."""
        outbox, inbox, proc = self._outbox, self._inbox, self._proc
        self._outbox = self._inbox = self._proc = None
        if proc is not None:
            logger.debug("the planning helper planned %d of %d files", self.helped, self._count)
        if outbox is not None:
            with contextlib.suppress(OSError):
                outbox.send(_STOP)
            outbox.close()
        if inbox is not None:
            inbox.close()
        if proc is not None:
            if not self._ready:  # still starting: nothing to finish
                proc.kill()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _command() -> list[str]:
    """How the helper is started (the ends of its two pipes follow)."""
    return [sys.executable, "-m", __name__]


def _own_packages() -> list[Any]:
    import ragbudget

    import ragbudget_server

    return [ragbudget, ragbudget_server]


def _serve(inbox: Connection, outbox: Connection) -> None:
    """The helper's loop: plan each task received, send outcomes back in order from a thread
    (so planning goes on while the ingest, busy writing, has yet to read them)."""
    from ragbudget.counters import get_counter

    from ragbudget_server.store.hashing import embed_text

    setup, spec, name, dim = inbox.recv()
    counter = get_counter(spec)
    out: queue.SimpleQueue[Any] = queue.SimpleQueue()

    def send_all() -> None:
        while (item := out.get()) is not _STOP:
            try:
                outbox.send(item)
            except OSError:  # the ingest is gone
                return

    sender = threading.Thread(target=send_all, daemon=True)
    sender.start()
    if counter.name != name:
        out.put(f"counter {counter.name!r} is not {name!r}")
    else:
        out.put(_READY)
        embed = (lambda texts: [embed_text(t, dim) for t in texts]) if dim else None
        while True:
            try:
                message = inbox.recv()
            except (OSError, EOFError):  # the ingest is gone
                break
            if message == _STOP:
                break
            index, task = message
            try:
                planned: Planned | None = prepare(task, setup, counter, embed)
            except Exception as exc:  # the ingest plans it again and raises it itself
                logger.debug("planning %s failed: %s", task.path, exc)
                planned = None
            out.put((index, planned))
    out.put(_STOP)
    sender.join()


if __name__ == "__main__":
    # Ctrl-C reaches the whole process group: the ingest stops, closes the pipes, and this
    # process ends on their end, with no traceback of its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _serve(
        Connection(int(sys.argv[1]), writable=False), Connection(int(sys.argv[2]), readable=False)
    )
