"""Real-time scheduling of a node process (no rclpy here: the runner imports it too)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ..core.errors import ConfigError

#: Environment variable naming the SCHED_FIFO priority a node process asks for (unset or 0: none).
RT_PRIORITY_ENV = "TORQUE_CTRL_RT_PRIORITY"


def request_realtime(env: Mapping[str, str] = os.environ) -> str:
    """Put this process under ``SCHED_FIFO`` at the priority in ``$TORQUE_CTRL_RT_PRIORITY``.

    A 1 kHz loop on Linux needs real-time scheduling to keep its wake-ups on time while other
    processes use the CPUs (ros2_control runs its loop at SCHED_FIFO 50; measured here: QPID late
    steps 18–24 % → 1.3–2.3 %, see docs/performance.md). Called before ``rclpy.init``, so the DDS
    threads started later inherit the policy; threads already running get it too. An
    environment variable rather than a ROS parameter because parameters only exist once those
    threads run. Without the privilege
    (root, CAP_SYS_NICE or an ``rtprio`` limit) the process stays on the normal policy.

    Returns:
        What the process got: ``"normal"``, ``"fifo:<priority>"`` or
        ``"normal (SCHED_FIFO <priority> not permitted: <reason>)"``.

    Raises:
        ConfigError: the variable is not an integer in 0–99.
    """
    raw = env.get(RT_PRIORITY_ENV, "").strip()
    try:
        priority = int(raw or 0)
    except ValueError:
        priority = -1
    if not 0 <= priority <= 99:
        raise ConfigError(f"{RT_PRIORITY_ENV}: expected an integer 0..99 (0: normal scheduling), got {raw!r}")
    if priority == 0:
        return "normal"
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
    except OSError as exc:
        return f"normal (SCHED_FIFO {priority} not permitted: {exc.strerror})"
    # The call covers this thread and those it starts later; threads that imports already
    # started (two, measured: rclpy's are among the modules imported before this runs) get it
    # explicitly. Linux lists a process's threads under /proc/self/task.
    for task in Path("/proc/self/task").iterdir():
        try:
            os.sched_setscheduler(int(task.name), os.SCHED_FIFO, os.sched_param(priority))
        except (OSError, ValueError):
            pass  # a thread that ended meanwhile
    return f"fifo:{priority}"


def current_policy() -> str:
    """The calling thread's scheduling: ``"fifo:<priority>"`` or ``"normal"`` (for the summaries)."""
    if os.sched_getscheduler(0) == os.SCHED_FIFO:
        return f"fifo:{os.sched_getparam(0).sched_priority}"
    return "normal"
