"""Real-time scheduling, CPU pinning and the CPU latency request of a node process (no rclpy here: the
runner imports it too)."""

from __future__ import annotations

import errno
import os
import signal
import stat
import struct
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
#: Environment variable with the CPU wake-up latency (µs) a node process asks the kernel to keep
#: while it runs (unset, empty or ``none``: no request).
CPU_LATENCY_ENV = "TORQUE_CTRL_CPU_LATENCY_US"
#: Linux's PM QoS device: a latency request written to it holds while the file stays open.
CPU_LATENCY_DEVICE = Path("/dev/cpu_dma_latency")
#: Largest request accepted (µs): one second, far beyond any idle state's exit latency.
_MAX_CPU_LATENCY_US = 1_000_000
# The open request of this process (a file descriptor) and its value (µs); closed when the
# process ends.
_latency_fd: int | None = None
_latency_us: int | None = None
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
        # raise_signal rather than os.kill(getpid): sent to this thread, its handler has run
        # when the call returns (the nodes install theirs first: run_node).
        signal.raise_signal(signal.SIGINT)
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
    priority = _natural(raw) if raw else 0
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


def request_cpu_latency(env: Mapping[str, str] = os.environ, device: Path = CPU_LATENCY_DEVICE) -> str:
    """Keep every CPU's wake-up latency at or below ``$TORQUE_CTRL_CPU_LATENCY_US`` µs while this
    process runs (Linux PM QoS: the request holds while ``/dev/cpu_dma_latency`` stays open, and
    ends with the process however it ends).

    An idle CPU goes into an idle state and takes its exit latency to wake up; in a VM, halting
    a virtual CPU hands it back to the hypervisor, and waking it (a message from the other node)
    takes a round trip through it. 0 keeps the CPUs polling instead of halting, as real-time
    setups do (``cyclictest`` holds 0 by default); it costs every CPU of the machine its idle
    time while the request holds. Measured here with 0 (docs/performance.md): state→command
    latency medians ~0.1 ms lower at 1 kHz, two-process lockstep about twice as fast. Without
    the privilege (the device is root's, mode ``0600``) nothing is held.

    A new request replaces the process's earlier one; one that fails leaves none held. Only a
    character device is written to (a plain file in its place is not the kernel's interface).

    Returns:
        ``""`` (no request), ``"cpu_latency:<us>us"`` or ``"cpu latency <us> us not held: <reason>"``.

    Raises:
        ConfigError: the variable is neither empty, ``none`` nor an integer in 0–1 000 000.
    """
    global _latency_fd, _latency_us
    us = parse_cpu_latency(env.get(CPU_LATENCY_ENV, ""), CPU_LATENCY_ENV)
    if us is None:
        return ""
    release_cpu_latency()  # a new request replaces this process's earlier one
    try:
        # No O_CREAT: where the device is missing (a container), root would otherwise create a
        # plain file there and report a request that nothing honours.
        fd = os.open(device, os.O_WRONLY | os.O_CLOEXEC)
    except OSError as exc:
        return f"cpu latency {us} us not held: {exc.strerror or exc}"
    try:
        if not stat.S_ISCHR(os.fstat(fd).st_mode):
            raise OSError(errno.ENODEV, f"{device} is not a device")
        os.write(fd, struct.pack("=i", us))  # the kernel's binary form: one s32
    except OSError as exc:
        os.close(fd)
        return f"cpu latency {us} us not held: {exc.strerror or exc}"
    _latency_fd, _latency_us = fd, us
    return _cpu_latency_text(us)


def parse_cpu_latency(text: str, field: str = "cpu latency") -> int | None:
    """A CPU latency request as the environment or a runner's ``--cpu-latency-us`` gives it:
    ``none`` or empty for no request, else µs in 0–1 000 000.

    Raises:
        ConfigError: anything else (the message names ``field``).
    """
    spec = text.strip().lower()
    if spec in ("", "none"):
        return None
    us = _natural(spec)
    if not 0 <= us <= _MAX_CPU_LATENCY_US:
        raise ConfigError(f"{field}: expected none or an integer 0..{_MAX_CPU_LATENCY_US} (µs), got {text!r}")
    return us


def release_cpu_latency() -> None:
    """End this process's :func:`request_cpu_latency` request, if any (the process's end does too)."""
    global _latency_fd, _latency_us
    if _latency_fd is not None:
        os.close(_latency_fd)
    _latency_fd = _latency_us = None


def _cpu_latency_text(us: int) -> str:
    return f"cpu_latency:{us}us"


def parse_cpus(text: str, field: str = CPUS_ENV) -> frozenset[int]:
    """CPU numbers from a list like ``"1"``, ``"0,2"`` or ``"2-3,5"`` (empty: none). Spaces may
    surround a number, not split one: ``"1 2"`` is refused, not read as CPU 12.

    Raises:
        ConfigError: not such a list (the message names ``field``).
    """
    cpus: set[int] = set()
    for part in text.split(","):
        if not part.strip():
            continue
        first, dash, last = part.partition("-")
        lo = _natural(first)
        hi = _natural(last) if dash else lo
        if not 0 <= lo <= hi:
            raise ConfigError(f"{field}: expected CPU numbers like 1, 0,2 or 2-3, got {text!r}")
        cpus.update(range(lo, hi + 1))
    return frozenset(cpus)


def _natural(text: str) -> int:
    """``text`` as a number if it is ASCII digits, spaces around them allowed; else -1.
    (``int`` would also read ``1_0`` as 10, ``+1`` as 1, and the digits of other scripts.)"""
    digits = text.strip()
    return int(digits) if digits.isascii() and digits.isdigit() else -1


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
    when it is pinned to fewer CPUs than the machine has, then ``" cpu_latency:<us>us"`` while
    this process holds a :func:`request_cpu_latency` (for the summaries)."""
    policy = "normal"
    if os.sched_getscheduler(0) == os.SCHED_FIFO:
        policy = f"fifo:{os.sched_getparam(0).sched_priority}"
    cpus = os.sched_getaffinity(0)
    if len(cpus) < (os.cpu_count() or len(cpus)):
        policy += " " + _cpu_list(cpus)
    if _latency_us is not None:
        policy += " " + _cpu_latency_text(_latency_us)
    return policy


@dataclass(frozen=True)
class Placement:
    """How the node processes run: ``SCHED_FIFO`` priority (0: normal scheduling), the CPUs of
    the simulator and of the controller (``""``: any) and the CPU wake-up latency both ask for
    (µs, ``None``: no request), as a runner passes them to each node."""

    rt_priority: int = 0
    sim_cpus: str = ""
    controller_cpus: str = ""
    cpu_latency_us: int | None = None

    def env(self, node: str) -> dict[str, str]:
        """Environment of ``node``: ``controller_node``, or ``sim_node`` / ``composed`` (the
        simulator's CPUs)."""
        cpus = self.controller_cpus if node == "controller_node" else self.sim_cpus
        latency = "" if self.cpu_latency_us is None else str(self.cpu_latency_us)
        return {RT_PRIORITY_ENV: str(self.rt_priority), CPUS_ENV: cpus, CPU_LATENCY_ENV: latency}

    @classmethod
    def from_spec(cls, rt_priority: int, cpus: str, cpu_latency_us: int | None = None) -> Placement:
        """``cpus``: ``none`` (any CPU), ``auto`` (simulator and controller on the first two CPUs
        this process may use; none with fewer) or ``SIM:CONTROLLER`` lists (``0:1``, ``0-1:2``).

        Raises:
            ConfigError: another spec, a malformed list, CPUs this process may not use, or a
                priority or latency out of range.
        """
        if cpu_latency_us is not None and not 0 <= cpu_latency_us <= _MAX_CPU_LATENCY_US:
            raise ConfigError(
                f"cpu latency: expected 0..{_MAX_CPU_LATENCY_US} µs or no request, got {cpu_latency_us!r}"
            )
        if not 0 <= rt_priority <= 99:
            raise ConfigError(
                f"rt priority: expected an integer 0..99 (0: normal scheduling), got {rt_priority!r}"
            )
        spec = cpus.strip()
        if spec in ("", "none"):
            return cls(rt_priority, cpu_latency_us=cpu_latency_us)
        if spec == "auto":
            allowed = sorted(os.sched_getaffinity(0))
            if len(allowed) < 2:
                return cls(rt_priority, cpu_latency_us=cpu_latency_us)
            return cls(rt_priority, str(allowed[0]), str(allowed[1]), cpu_latency_us)
        sim, colon, ctrl = spec.partition(":")
        sim_cpus = parse_cpus(sim, "cpus") if colon else frozenset()
        ctrl_cpus = parse_cpus(ctrl, "cpus") if colon else frozenset()
        if not sim_cpus or not ctrl_cpus:
            raise ConfigError(
                f"cpus: expected none, auto or SIM:CONTROLLER CPU lists (e.g. 0:1), got {cpus!r}"
            )
        # Checked here too, not only by each node (request_cpus): a runner then refuses the spec
        # before starting anything, and its message names the runner's option.
        usable = os.sched_getaffinity(0)
        if not sim_cpus | ctrl_cpus <= usable:
            raise ConfigError(
                f"cpus: CPUs {sorted((sim_cpus | ctrl_cpus) - usable)} are not available; "
                f"this process may use {sorted(usable)}"
            )
        return cls(rt_priority, sim, ctrl, cpu_latency_us)


#: Normal scheduling on any CPU.
UNPLACED = Placement()
