"""Real-time scheduling and CPU pinning of a node process (no rclpy here: the runner imports it too)."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import ConfigError

#: Environment variable naming the SCHED_FIFO priority a node process asks for (unset or 0: none).
RT_PRIORITY_ENV = "TORQUE_CTRL_RT_PRIORITY"
#: Environment variable naming the CPUs a node process is pinned to (``"1"``, ``"0,2"``, ``"2-3"``;
#: unset or empty: any CPU).
CPUS_ENV = "TORQUE_CTRL_CPUS"
#: Environment variable with the pid of a parent whose end must stop the node (``make sim``).
PARENT_ENV = "TORQUE_CTRL_PARENT_PID"
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def stop_with_parent(env: Mapping[str, str] = os.environ) -> bool:
    """Get SIGINT when the process named in ``$TORQUE_CTRL_PARENT_PID`` ends, however it ends.

    ``make sim`` starts the nodes in sessions of their own (a Ctrl-C reaches only the runner,
    which then stops them in order); a runner killed by SIGKILL or SIGQUIT would leave them
    running for good. SIGINT is what the runner sends too: the node writes its summary and
    exits. Returns whether the request was made (Linux); if the named parent has already gone,
    the process sends itself that SIGINT.
    """
    try:
        parent = int(env.get(PARENT_ENV, ""))
    except ValueError:
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGINT), 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError):  # not Linux
        return False
    if os.getppid() != parent:  # it ended before the request: nothing would signal us
        os.kill(os.getpid(), signal.SIGINT)
    return True


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
    # explicitly.
    _all_threads(lambda tid: os.sched_setscheduler(tid, os.SCHED_FIFO, os.sched_param(priority)))
    return f"fifo:{priority}"


def _all_threads(apply: Callable[[int], None]) -> None:
    """``apply(tid)`` for every thread of this process (Linux lists them in /proc/self/task)."""
    for task in Path("/proc/self/task").iterdir():
        try:
            apply(int(task.name))
        except (OSError, ValueError):
            pass  # a thread that ended meanwhile


def parse_cpus(text: str, field: str = CPUS_ENV) -> frozenset[int]:
    """CPU numbers from a list like ``"1"``, ``"0,2"`` or ``"2-3,5"`` (empty: none).

    Raises:
        ConfigError: not such a list (the message names ``field``).
    """
    cpus: set[int] = set()
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        first, dash, last = part.partition("-")
        try:
            lo, hi = int(first), int(last if dash else first)
        except ValueError:
            lo, hi = -1, -2
        if not 0 <= lo <= hi:
            raise ConfigError(f"{field}: expected CPU numbers like 1, 0,2 or 2-3, got {text!r}")
        cpus.update(range(lo, hi + 1))
    return frozenset(cpus)


def request_cpus(env: Mapping[str, str] = os.environ) -> str:
    """Pin this process, every thread, to the CPUs in ``$TORQUE_CTRL_CPUS`` (unset or empty: no pinning).

    The simulator and the controller wake each other up to twice per step; a wake-up that has to
    reach another, idle CPU is the slow part of the round trip on a VM, and the scheduler moving
    the processes around adds more. Pinned to one CPU each (measured here, three alternating
    pairs: lockstep computed torque 2.40–2.85× → 3.58–4.38×, realtime latency median of gravity
    compensation −75 to −145 µs, of qpid −20 to −80 µs; see docs/performance.md). Threads
    started later (DDS) inherit the mask.

    Returns:
        ``""`` (not pinned) or ``"cpus:<list>"``.

    Raises:
        ConfigError: a malformed list, or CPUs this process may not use.
    """
    cpus = parse_cpus(env.get(CPUS_ENV, ""))
    if not cpus:
        return ""
    allowed = os.sched_getaffinity(0)
    if not cpus <= allowed:
        raise ConfigError(
            f"{CPUS_ENV}: CPUs {sorted(cpus - allowed)} are not available; "
            f"this process may use {sorted(allowed)}"
        )
    _all_threads(lambda tid: os.sched_setaffinity(tid, cpus))
    return _cpu_list(cpus)


def _cpu_list(cpus: frozenset[int] | set[int]) -> str:
    return "cpus:" + ",".join(map(str, sorted(cpus)))


def current_policy() -> str:
    """The calling thread's scheduling: ``"fifo:<priority>"`` or ``"normal"``, then ``" cpus:<list>"``
    when it is pinned to fewer CPUs than the machine has (for the summaries)."""
    policy = "normal"
    if os.sched_getscheduler(0) == os.SCHED_FIFO:
        policy = f"fifo:{os.sched_getparam(0).sched_priority}"
    cpus = os.sched_getaffinity(0)
    if len(cpus) < (os.cpu_count() or len(cpus)):
        policy += " " + _cpu_list(cpus)
    return policy


@dataclass(frozen=True)
class Placement:
    """How the node processes run: ``SCHED_FIFO`` priority (0: normal scheduling) and the CPUs of
    the simulator and of the controller (``""``: any), as a runner passes them to each node."""

    rt_priority: int = 0
    sim_cpus: str = ""
    controller_cpus: str = ""

    def env(self, node: str) -> dict[str, str]:
        """Environment of ``node``: ``controller_node``, or ``sim_node`` / ``composed`` (the
        simulator's CPUs)."""
        cpus = self.controller_cpus if node == "controller_node" else self.sim_cpus
        return {RT_PRIORITY_ENV: str(self.rt_priority), CPUS_ENV: cpus}

    @classmethod
    def from_spec(cls, rt_priority: int, cpus: str) -> Placement:
        """``cpus``: ``none`` (any CPU), ``auto`` (simulator and controller on the first two CPUs
        this process may use; none with fewer) or ``SIM:CONTROLLER`` lists (``0:1``, ``0-1:2``).

        Raises:
            ConfigError: another spec, or a malformed list.
        """
        spec = cpus.strip()
        if spec in ("", "none"):
            return cls(rt_priority)
        if spec == "auto":
            allowed = sorted(os.sched_getaffinity(0))
            if len(allowed) < 2:
                return cls(rt_priority)
            return cls(rt_priority, str(allowed[0]), str(allowed[1]))
        sim, colon, ctrl = spec.partition(":")
        if not colon or not parse_cpus(sim, "cpus") or not parse_cpus(ctrl, "cpus"):
            raise ConfigError(
                f"cpus: expected none, auto or SIM:CONTROLLER CPU lists (e.g. 0:1), got {cpus!r}"
            )
        return cls(rt_priority, sim, ctrl)


#: Normal scheduling on any CPU.
UNPLACED = Placement()
