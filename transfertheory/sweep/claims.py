"""Claims: which process is writing which name of a store, so that runs sharing a store never compute a point
twice nor remove each other's temporary files.

A claim on a name (a point id, ``manifest``, ``store``) is an exclusive ``flock`` on
``STORE/_sweep/claims/<name>.claim``, a file holding the holder's process id, host and start time (for people;
the lock is what counts). The kernel releases the lock when its holder exits, however it exits (``kill -9``
included), so a claim never outlives its writer and no run has to guess whether another is alive. Every write
into the store happens under the claim of the name it writes; a temporary file whose claim can be taken is
therefore left by a dead writer and may be removed, one whose claim is held belongs to a live writer and is left
alone.

Where the filesystem has no file locks (``flock`` fails with ENOLCK, ENOSYS, EOPNOTSUPP or EINVAL, e.g. Lustre
mounted without ``-o flock``, or a platform without :mod:`fcntl`), a claim is "unsupported": writers go ahead
unclaimed (a point may then be computed twice, still stored once, by an atomic rename), and a temporary file is
stale only when its name's writer (process id and host, in the name) is a process of this host that no longer
runs.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import socket
import time
import uuid
from pathlib import Path

from ..cli_support import process_alive

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

__all__ = ["claim", "is_claimed", "temporary_name", "temporary_is_stale"]

HOST = socket.gethostname().replace("/", "_") or "localhost"

#: flock errors that mean "this filesystem has no file locks", not "someone holds it"
_UNSUPPORTED = {errno.ENOLCK, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL}


def _open_locked(path: Path, wait: bool):
    """(fd, True) holding the lock of ``path``; (None, False) when a live process holds it; (None, None) when
    the filesystem has no locks."""
    if fcntl is None:
        return None, None
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            return None, False
        except OSError as error:
            os.close(fd)
            if error.errno in _UNSUPPORTED:
                return None, None
            raise
        # the previous holder removes the file when it lets go: a lock on a removed file claims nothing
        with contextlib.suppress(FileNotFoundError):
            if os.path.samestat(os.stat(path), os.fstat(fd)):
                return fd, True
        os.close(fd)


@contextlib.contextmanager
def claim(folder, name, wait=False):
    """Claim ``name`` in ``folder``: yields True (held until the block ends), False (a live process holds it;
    with ``wait``, block until it lets go instead) or None (no file locks here: go ahead unclaimed)."""
    path = Path(folder) / f"{name}.claim"
    fd, held = _open_locked(path, wait)
    if not held:
        yield held
        return
    try:
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps(dict(pid=os.getpid(), host=HOST, since=time.time())).encode())
        yield True
    finally:
        path.unlink(missing_ok=True)  # still locked: whoever opened it meanwhile sees it removed and retries
        os.close(fd)


def is_claimed(path) -> bool | None:
    """Whether a live process holds the claim file ``path`` (None: no file locks here); never writes."""
    if fcntl is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    except OSError as error:
        if error.errno in _UNSUPPORTED:
            return None
        raise
    finally:
        os.close(fd)  # closing releases a lock taken here


def temporary_name(path: Path) -> Path:
    """The hidden temporary name of ``path`` while it is written: ``.<stem>.<pid>.<random>.<host>.tmp``."""
    return path.parent / f".{path.stem}.{os.getpid()}.{uuid.uuid4().hex[:8]}.{HOST}.tmp"


def temporary_owner(path: Path) -> tuple:
    """(claim name, writer's process id or None, host) of a temporary file's name (the host of a name without
    one, written by an older version, is taken to be this one)."""
    parts = path.name[1:-len(".tmp")].split(".", 3)
    pid = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
    return parts[0], pid, parts[3] if len(parts) > 3 else HOST


def temporary_is_stale(path: Path) -> bool:
    """Whether the temporary file ``path`` was left by a dead writer, where there are no file locks (a free claim of
    its name says so where there are): its writer's process id is of this host and no longer runs."""
    _, pid, host = temporary_owner(path)
    return host == HOST and pid is not None and not process_alive(pid)
