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


class DomainLease:
    """A ROS domain id held exclusively until :meth:`release`.

    Attributes:
        domain: the id.
    """

    def __init__(self) -> None:
        LOCK_DIR.mkdir(exist_ok=True)
        start = (os.getpid() * 7 + int(time.monotonic() * 1000)) % len(DOMAINS)
        for i in range(len(DOMAINS)):
            domain = DOMAINS[(start + i) % len(DOMAINS)]
            fd = os.open(LOCK_DIR / f"{domain}.lock", os.O_CREAT | os.O_RDWR, 0o666)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            self.domain: int = domain
            self._fd = fd
            return
        raise RuntimeError(f"no free ROS domain id in {DOMAINS.start}..{DOMAINS.stop - 1}")

    def release(self) -> None:
        """Give the id back."""
        if self._fd >= 0:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = -1
