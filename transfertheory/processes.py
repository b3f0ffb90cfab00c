r"""Worker processes and stop signals: the one executor of the package, and SIGINT, SIGTERM, SIGHUP answered alike.

* **Stop signals** — :func:`stop_signals_raise` makes SIGTERM (``kill``, a batch scheduler's cancel,
  ``docker stop``) and SIGHUP (the terminal closed) raise :class:`Interrupted` in the main thread, exactly as
  Ctrl-C raises :class:`KeyboardInterrupt` (of which :class:`Interrupted` is a subclass, so every ``finally``
  and ``except KeyboardInterrupt`` that cleans up after Ctrl-C cleans up after them too). A signal that is
  ignored when the block starts (``nohup`` ignores SIGHUP, a shell's background job SIGINT) stays ignored.
  :attr:`Interrupted.exit_code` is the shell's convention 128 + signal number: 130 (SIGINT), 143 (SIGTERM),
  129 (SIGHUP).
* **Worker processes** — :func:`completed_in_workers` runs ``function(item)`` for independent items in N
  processes of a :class:`concurrent.futures.ProcessPoolExecutor` (each with ⌊cores / N⌋ BLAS threads,
  :mod:`transfertheory.threads`) and yields each finished item's future; :func:`in_workers` yields the results in
  the items' order. Both the figures and claims (``in_workers``) and the sweep engine (``completed_in_workers``,
  in fresh interpreters) use it. A worker ignores SIGINT and SIGHUP (a terminal sends them to the whole process
  group; the parent answers them) and ends on SIGTERM after the ``finally`` blocks of its task have run (a
  temporary file being written is removed), printing nothing. When the caller stops (a stop signal, an error, the
  generator closed) every worker is sent SIGTERM, joined, and killed if still alive after
  :data:`STOP_GRACE` seconds, and the executor is shut down, so that no process is left behind and no
  ``resource_tracker`` warning follows the one line of the interrupt. On Linux a worker also ends when its parent
  dies (``PR_SET_PDEATHSIG``), even of ``kill -9``.
"""
from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading

from .params import COUNT
from .threads import available_cores, blas_threads, threads_per_worker

__all__ = ["STOP_SIGNALS", "STOP_GRACE", "Interrupted", "exit_code_of", "interrupt_line", "stop_signals_to",
           "stop_signals_raise", "worker_count", "warn_oversubscribed", "start_order", "completed_in_workers",
           "in_workers"]

#: the signals answered like Ctrl-C
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: seconds a stopped worker has to run its ``finally`` blocks before it is killed
STOP_GRACE = 10.0


class Interrupted(KeyboardInterrupt):
    """A stop signal (SIGINT, SIGTERM or SIGHUP) received by this process: a KeyboardInterrupt naming its signal."""

    def __init__(self, signum=signal.SIGINT):
        super().__init__(signal.Signals(signum).name)
        self.signum = signal.Signals(signum)


def _signal_of(interrupt) -> signal.Signals:
    return getattr(interrupt, "signum", signal.SIGINT)


def exit_code_of(interrupt) -> int:
    """128 + the signal number of ``interrupt`` (a KeyboardInterrupt: SIGINT's 130 unless it names another)."""
    return 128 + int(_signal_of(interrupt))


def interrupt_line(interrupt) -> str:
    """The one line printed for ``interrupt``: ``interrupted`` (Ctrl-C), ``interrupted (SIGTERM)``, …"""
    signum = _signal_of(interrupt)
    return "interrupted" if signum == signal.SIGINT else f"interrupted ({signum.name})"


def _raise_interrupted(signum, frame):
    raise Interrupted(signum)


@contextlib.contextmanager
def stop_signals_to(handler):
    """While the block runs in the main thread, SIGINT, SIGTERM and SIGHUP go to ``handler``, but a signal ignored
    before stays ignored; the earlier handlers come back afterwards (elsewhere than in the main thread: nothing)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    for signum, before in previous.items():
        if before is not signal.SIG_IGN:
            signal.signal(signum, handler)
    try:
        yield
    finally:
        for signum, before in previous.items():
            signal.signal(signum, before if before is not None else signal.SIG_DFL)


def stop_signals_raise():
    """While the block runs in the main thread, SIGINT, SIGTERM and SIGHUP raise :class:`Interrupted` (module
    docstring); a signal ignored before stays ignored, and the earlier handlers come back afterwards."""
    return stop_signals_to(_raise_interrupted)


def worker_count(requested, tasks) -> int:
    """Worker processes for ``tasks`` independent tasks: ``requested`` (``--workers``; None: one per core,
    :func:`~transfertheory.threads.available_cores`), at most one per task, at least 1."""
    return min(available_cores() if requested is None else COUNT.scalar(requested, "workers"), max(1, tasks))


def start_order(count, costs=None):
    """Indices of ``count`` tasks in the order to hand them to workers: costliest first (``costs``: one number per
    task, or one comparable key per task such as a tuple; equal costs keep their order), or as given when ``costs``
    is None."""
    return list(range(count)) if costs is None else sorted(range(count), key=costs.__getitem__, reverse=True)


# --------------------------------------------------------------------------- inside a worker process

#: whether this worker is running a task (SIGTERM then unwinds it; between tasks the worker just ends)
_busy = False


def _stop_worker(signum, frame):
    if _busy:
        raise Interrupted(signum)
    os._exit(128 + signum)


def _end_with_parent(parent):
    """Linux: SIGTERM to this process when its parent dies (``prctl(PR_SET_PDEATHSIG)``); elsewhere nothing."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):  # pragma: no cover - no prctl in this libc
        return
    if os.getppid() != parent:  # the parent died before prctl
        os._exit(128 + signal.SIGTERM)


def _start_worker(parent):
    """Worker initializer: SIGINT and SIGHUP are the parent's to answer; SIGTERM ends the worker quietly.

    tqdm's bars in a worker take a lock of this process only: its default lock is a multiprocessing lock, which in
    a fresh interpreter (``spawn``) is a named semaphore registered with the resource tracker, and a worker stopped
    by SIGTERM (``os._exit``) never unregisters it, so that the tracker would warn of it after the one line."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _stop_worker)
    from tqdm import tqdm

    tqdm.set_lock(threading.RLock())
    _end_with_parent(parent)


def _call(task):
    """Run one task in a worker: ``function(item)`` under ``threads`` BLAS threads; SIGTERM ends the process once
    the task's ``finally`` blocks have run."""
    global _busy
    function, threads, item = task
    try:
        _busy = True
        try:
            with blas_threads(threads):
                return function(item)
        finally:
            _busy = False
    except Interrupted as stop:
        os._exit(exit_code_of(stop))


# --------------------------------------------------------------------------- in the calling process


def warn_oversubscribed(workers):
    """A warning on stderr when ``workers`` processes are more than the cores."""
    cores = available_cores()
    if workers > cores:
        print(f"warning: {workers} worker processes on {cores} cores: they take turns on the cores (no faster than "
              f"{cores})", file=sys.stderr, flush=True)


def _start_resource_tracker():
    """Start multiprocessing's resource tracker (the helper process of fresh interpreters) with SIGHUP blocked: it
    ignores SIGINT and SIGTERM itself but would die of a hang-up sent to the process group, and its relaunch
    prints warnings and tracebacks. It still ends with this process."""
    from multiprocessing import resource_tracker

    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGHUP})
    try:
        resource_tracker.ensure_running()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def _stop(executor):
    """SIGTERM to every worker of ``executor``, join them (SIGKILL after :data:`STOP_GRACE` s), shut it down.
    (``shutdown`` alone would wait for the running tasks; the executor offers its processes only as ``_processes``.)"""
    processes = list((executor._processes or {}).values())
    for process in processes:
        if process.exitcode is None:
            process.terminate()
    for process in processes:
        process.join(STOP_GRACE)
        if process.exitcode is None:  # pragma: no cover - a worker stuck in C code past the grace
            process.kill()
            process.join()
    executor.shutdown(wait=True, cancel_futures=True)


def completed_in_workers(function, items, workers, costs=None, *, fresh=False):
    """Yield ``(index, future)`` for every item of ``items`` as its ``function(item)`` finishes, in ``workers``
    processes (capped at the number of items; a warning on stderr above the cores) with
    :func:`~transfertheory.threads.threads_per_worker` BLAS threads each; ``function`` and the items must pickle
    (a module-level function). ``costs``: :func:`start_order`. ``fresh``: workers are new interpreters
    (``spawn``: they import what they need; for work that may use a GPU, which a forked process cannot) instead
    of forks of this process (which inherit its imports). The future holds the result, or the exception of the
    task or of a worker that died (``BrokenProcessPool``). When the caller stops — an exception, a stop signal,
    the generator closed — the workers are stopped (module docstring) and the exception goes on."""
    import concurrent.futures  # (not for --help)
    import multiprocessing

    items = list(items)
    workers = worker_count(workers, len(items))
    warn_oversubscribed(workers)
    threads = threads_per_worker(workers)
    context = multiprocessing.get_context("spawn" if fresh else None)
    if context.get_start_method() != "fork":
        _start_resource_tracker()
    executor = concurrent.futures.ProcessPoolExecutor(workers, mp_context=context, initializer=_start_worker,
                                                      initargs=(os.getpid(),))
    try:
        futures = {executor.submit(_call, (function, threads, items[k])): k for k in start_order(len(items), costs)}
        for future in concurrent.futures.as_completed(futures):
            yield futures[future], future
    except BaseException:
        with stop_signals_to(signal.SIG_IGN):  # a second stop signal does not cut the cleaning short
            _stop(executor)
        raise
    executor.shutdown(wait=True)


def in_workers(function, items, workers, costs=None):
    """Yield ``function(item)`` for every item of ``items``, in their order.

    ``workers`` = 1 runs them here, one after the other; N > 1 in N worker processes (forks of this one,
    :func:`completed_in_workers`, which also says how they are stopped). ``costs`` (one number per item, e.g. its
    runtime last time, or one comparable key per item: :func:`start_order`; None: unknown) start the costliest
    first, so that the longest task does not begin last; the results are still yielded in the order of ``items``,
    each as soon as it and those before it are done. An exception of a task reaches the caller at its place.
    """
    items = list(items)
    if worker_count(workers, len(items)) == 1:
        yield from map(function, items)
        return
    finished, next_index = {}, 0
    with contextlib.closing(completed_in_workers(function, items, workers, costs)) as completed:
        for index, future in completed:
            finished[index] = future
            while next_index in finished:
                yield finished.pop(next_index).result()
                next_index += 1
