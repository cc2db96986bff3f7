"""Claim a ROS domain id nobody else on this machine is using (for tests and ``make sim``).

Two runs on the same domain cross-talk (their nodes see each other's topics). A lock file per id
under the temp directory makes the claim exclusive across processes until released (or until
the process exits, which drops the lock).
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import time
from pathlib import Path

LOCK_DIR = Path(tempfile.gettempdir()) / "torque_ctrl_ros_domains"
# Ids up to 101 keep the DDS ports (7400 + 250·id + offsets) below Linux's ephemeral range
# (32768–60999); ports stay valid up to id 232.
DOMAINS = range(10, 101)


def _shared_folder(path: Path) -> None:
    """``path``, created writable by every user and sticky (as the temp directory is): with the
    umask's ``rwxr-xr-x`` a second user's lease could create no lock file there."""
    try:
        path.mkdir(mode=0o1777)
    except FileExistsError:
        # One made before the folders were shared, ours to widen (another user's stays as it is).
        info = path.stat()
        if info.st_uid != os.getuid() or info.st_mode & 0o7777 == 0o1777:
            return
    os.chmod(path, 0o1777)  # the umask narrowed mkdir's mode


def _lock_file(path: Path) -> int:
    """A descriptor of the lock file ``path`` (created readable and writable by every user, so
    that another user's run can lock it too); read-only where this user may not write it (flock
    needs no write access)."""
    try:
        fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o666)
    except PermissionError:
        return os.open(path, os.O_RDONLY)
    try:
        os.fchmod(fd, 0o666)  # the umask narrowed it; only its owner may change it
    except PermissionError:
        pass
    return fd


class DomainLease:
    """A ROS domain id held exclusively until :meth:`release`.

    Attributes:
        domain: the id.
    """

    def __init__(self) -> None:
        _shared_folder(LOCK_DIR)
        start = (os.getpid() * 7 + int(time.monotonic() * 1000)) % len(DOMAINS)
        refused: OSError | None = None
        for i in range(len(DOMAINS)):
            domain = DOMAINS[(start + i) % len(DOMAINS)]
            try:
                fd = _lock_file(LOCK_DIR / f"{domain}.lock")
            except OSError as exc:  # another user's lock file this one may not open: taken
                refused = exc
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            self.domain: int = domain
            self._fd = fd
            return
        why = f" (last: {refused})" if refused is not None else ""
        raise RuntimeError(f"no free ROS domain id in {DOMAINS.start}..{DOMAINS.stop - 1}{why}")

    def release(self) -> None:
        """Give the id back."""
        if self._fd >= 0:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = -1
