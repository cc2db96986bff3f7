"""The simulator and controller nodes as processes: started, stopped, and their summaries read.

``make sim`` (:mod:`torque_ctrl_ros.run_sim`) and the DDS benchmark (:mod:`torque_ctrl_ros.bench.dds`)
both run their nodes through :class:`NodePair`, on a ROS domain of their own (:class:`Domain`), and
break the state→command latency down from the nodes' summaries with :func:`step_parts`. No rclpy
here: the nodes import it in their own processes.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .core.errors import ConfigError
from .nodes.params import write_overrides
from .nodes.scheduling import PARENT_ENV, UNPLACED, Placement
from .paths import data_path

PACKAGE_ROOT = Path(__file__).resolve().parent.parent

#: The nodes' names, as :class:`NodePair` starts them (no namespace).
SIM_NODE = "sim_node"
CONTROLLER_NODE = "controller_node"
#: The controller node's trajectory input, ``~/joint_trajectory`` (:mod:`torque_ctrl_ros.nodes.targets`),
#: under the name :class:`NodePair` starts it with.
TRAJECTORY_TOPIC = f"/{CONTROLLER_NODE}/joint_trajectory"
#: What a previous run in the same folder left and a run writes anew: :meth:`NodePair.start`
#: removes them first, so that a node that fails before writing its own does not pass for this run's.
RUN_FILES = ("sim.json", "controller.json", f"{SIM_NODE}.log", f"{CONTROLLER_NODE}.log")
#: The ROS domain ids DDS can use: from 233 on, Fast DDS refuses the id (its ports would pass 65535).
DOMAIN_IDS = range(233)


def child_env(domain: int) -> dict[str, str]:
    """Environment of the node processes."""
    env = dict(os.environ)
    env["ROS_DOMAIN_ID"] = str(domain)
    env.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_ROOT), env.get("PYTHONPATH", "")) if p)
    # ament_index finds message packages under the venv prefix (the wheels set only LD_LIBRARY_PATH).
    prefixes = [p for p in env.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    if sys.prefix not in prefixes:
        prefixes.append(sys.prefix)
    env["AMENT_PREFIX_PATH"] = os.pathsep.join(prefixes)
    env.setdefault("OMP_NUM_THREADS", "1")  # BLAS threads would fight the two nodes for 2 cores
    env["PYTHONUNBUFFERED"] = "1"
    # The nodes stop when this runner ends, however it ends (the kernel signals them when the
    # thread that started them exits: start them from the thread that lasts the run).
    env[PARENT_ENV] = str(os.getpid())
    return env


def start_node(
    module: str,
    params_files: Sequence[Path],
    env: dict[str, str],
    log: Path,
    placement: Placement = UNPLACED,
) -> subprocess.Popen:
    """``python -m torque_ctrl_ros.nodes.<module> --ros-args --params-file ...``, the files in
    order (the overrides last: :meth:`NodePair.start`).

    ``placement``: the node asks for ``SCHED_FIFO`` and its CPUs itself (through
    ``$TORQUE_CTRL_RT_PRIORITY`` and ``$TORQUE_CTRL_CPUS``, see :mod:`.nodes.scheduling`).
    """
    cmd = [
        sys.executable,
        "-m",
        f"torque_ctrl_ros.nodes.{module}",
        "--ros-args",
    ]
    for path in params_files:
        cmd += ["--params-file", str(path)]
    # Own session: Ctrl-C reaches only this runner, which then stops the nodes in order. The child
    # holds its own copy of the log's descriptor: this one is closed once it started.
    with log.open("w") as out:
        return subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**env, **placement.env(module)},
        )


def stop(proc: subprocess.Popen, timeout: float = 10.0) -> int:
    """SIGINT (the nodes write their summaries), then SIGKILL."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


#: Parts of a step on the state→command path, in order: (name, node, key in its summary).
STEP_PARTS = (
    ("state_out", "sim", "state_out"),
    ("state_in", "controller", "callback_parts.state_in"),
    ("compute", "controller", "compute"),
    ("prepare", "controller", "callback_parts.prepare"),
    ("qp_solve", "controller", "callback_parts.qp_solve"),
    ("command_out", "controller", "callback_parts.command_out"),
    ("callback", "controller", "callback"),
)


def step_parts(sim: Mapping[str, Any], ctrl: Mapping[str, Any]) -> dict[str, Any]:
    """Where the state→command latency goes: p50 / p99 (ms) of each part, from both summaries.

    The simulator encodes and publishes the state (``state_out``); the controller's callback
    (``callback``) reads it (``state_in``), computes (``compute``; the QP controllers report
    ``prepare``: kinematics, tasks, barriers, and ``qp_solve``: QP updates and solves) and
    publishes the command (``command_out``). ``hops`` is what the latency median leaves to
    the transport both ways (DDS delivery, wake-ups and executor dispatch in both processes):
    ``latency p50 − state_out p50 − callback p50``, a difference of medians, not a median.
    Parts a controller does not report are absent.
    """
    nodes = {"sim": sim, "controller": ctrl}
    parts: dict[str, Any] = {}
    for name, node, key in STEP_PARTS:
        figures: Any = nodes[node]
        for k in key.split("."):
            figures = figures.get(k, {}) if isinstance(figures, Mapping) else {}
        if figures:
            parts[name] = {k: float_or_nan(figures.get(k)) for k in ("p50_ms", "p99_ms")}
    latency = float_or_nan(sim.get("latency", {}).get("p50_ms"))
    if "state_out" in parts and "callback" in parts:
        parts["hops"] = {
            "p50_ms": latency - parts["state_out"]["p50_ms"] - parts["callback"]["p50_ms"],
            "p99_ms": math.nan,
        }
    return parts


def float_or_nan(value: Any) -> float:
    """A summary figure as a float, NaN where a node did not write it (``None``)."""
    return math.nan if value is None else float(value)


class NodePair:
    """``controller_node`` and ``sim_node`` as two processes on one ROS domain.

    Both read ``config/gen3_controllers.yaml``, then ``params_file`` layered over it when given
    (its values win: a whole file, or only what differs, e.g. ``config/gen3_hardware.yaml``), then
    overrides. Logs go
    to ``out/<node>.log``; each node writes its whole-run summary to ``out/sim.json`` or
    ``out/controller.json`` at exit. As a context manager, both processes are stopped (SIGINT,
    then SIGKILL) on exit. With ``composed``, both nodes run in one process instead
    (:mod:`torque_ctrl_ros.nodes.composed`, log ``out/sim_node.log``). ``make sim`` and the DDS
    benchmark (:mod:`torque_ctrl_ros.bench.dds`) both start their nodes here.
    """

    NAMES = (SIM_NODE, CONTROLLER_NODE)

    def __init__(
        self,
        domain: int,
        out: Path,
        controller: str,
        mode: str = "realtime",
        duration: float = 10.0,
        params_file: Path | None = None,
        controller_params: dict[str, Any] | None = None,
        sim_params: dict[str, Any] | None = None,
        placement: Placement = UNPLACED,
        composed: bool = False,
    ) -> None:
        self.domain = domain
        self.out = out
        self.controller = controller
        self.mode = mode
        self.duration = duration
        shipped = Path(data_path("config", "gen3_controllers.yaml"))
        self.params_files = [shipped]
        if params_file is not None and Path(params_file).resolve() != shipped.resolve():
            self.params_files.append(Path(params_file))
        self.controller_params = controller_params or {}
        self.sim_params = sim_params or {}
        self.placement = placement
        self.composed = composed
        self.sim: subprocess.Popen | None = None
        self.ctrl: subprocess.Popen | None = None
        self.returncodes: tuple[int | None, int | None] = (None, None)

    def start(self, before_controller: Callable[[], object] | None = None) -> None:
        """Start the simulator, then the controller.

        The simulator holds state 0 (republished every 0.1 s) until the controller answers it,
        so the run starts only once both are up and have found each other.
        ``before_controller`` is called in between (``make sim``: until its monitor sees the
        simulator's states, so that it watches the run from its first step).

        The summaries and logs a previous run left in ``out`` (:data:`RUN_FILES`) are removed first.

        Raises:
            ConfigError: before any process starts, where the parameter files hold a section that
                keeps one of the overrides from winning (:func:`~.nodes.params.write_overrides`).
        """
        self.out.mkdir(parents=True, exist_ok=True)
        env = child_env(self.domain)
        ctrl = {
            "controller": self.controller,
            "stats_file": str(self.out / "controller.json"),
            **self.controller_params,
            # The simulator is the clock, whatever the file says (as sim_gen3.launch.py): a file
            # for the real arm (config/gen3_hardware.yaml: false) would have every state refused as
            # stale.
            "use_sim_time": True,
        }
        sim = {
            "mode": self.mode,
            "duration": float(self.duration),
            "stats_file": str(self.out / "sim.json"),
            **self.sim_params,
        }
        out = self.out
        place = self.placement
        # The overrides in a file after the others, written before any process starts (a file
        # that keeps one from winning is refused here): as -p name:=value they would lose to a
        # file opening with /**: (nodes/params.py, write_overrides).
        # Checked before written: refused, the last run's file stays.
        overrides = write_overrides(
            out / "overrides.yaml", {SIM_NODE: sim, CONTROLLER_NODE: ctrl}, self.params_files
        )
        files = [*self.params_files, overrides]
        # Only now, the start no longer refused: a refused one leaves the last run's results.
        for name in RUN_FILES:
            (out / name).unlink(missing_ok=True)
        if self.composed:
            # One process (torque_ctrl_ros.nodes.composed), each node reading its own section.
            self.sim = start_node("composed", files, env, out / "sim_node.log", place)
            return
        self.sim = start_node("sim_node", files, env, out / "sim_node.log", place)
        if before_controller is not None:
            before_controller()
        if not self.sim_running():  # it failed at start (its log says why): nothing to control
            return
        self.ctrl = start_node("controller_node", files, env, out / "controller_node.log", place)

    def scheduling(self) -> dict[str, str]:
        """The scheduling each node ran under (``fifo:<priority>`` or ``normal``, then its CPUs
        and CPU latency request if any: :func:`.nodes.scheduling.current_policy`), as its summary
        reports it (so only after the run; ``unknown`` where none was written)."""
        return {
            name: stats.get("scheduling", "unknown")
            for name, stats in zip(self.NAMES, self.stats(), strict=True)
        }

    def sim_running(self) -> bool:
        """The simulator has not exited yet."""
        return self.sim is not None and self.sim.poll() is None

    def controller_exited(self) -> bool:
        """The controller exited (it should outlive the simulator)."""
        return self.ctrl is not None and self.ctrl.poll() is not None

    def wait(self, timeout: float, poll: float = 0.1) -> bool:
        """Until the simulator ends (True), or the controller dies or ``timeout`` s pass (False)."""
        end = time.monotonic() + timeout
        while self.sim_running() and not self.controller_exited() and time.monotonic() < end:
            time.sleep(poll)
        return not self.sim_running()

    def stop(self) -> tuple[int | None, int | None]:
        """Stop the simulator, then the controller; returns their exit statuses."""
        rc_sim = stop(self.sim) if self.sim is not None else None
        rc_ctrl = stop(self.ctrl) if self.ctrl is not None else None
        self.returncodes = (rc_sim, rc_ctrl)
        return self.returncodes

    def clean_exit(self) -> bool:
        """Both nodes ended normally (status 0, or stopped by SIGINT)."""
        started = [rc for rc, proc in zip(self.returncodes, (self.sim, self.ctrl), strict=True) if proc]
        return bool(started) and all(rc in (0, -signal.SIGINT) for rc in started)

    def stats(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The nodes' summaries ``(sim, controller)`` (empty dicts where not written)."""

        def load(name: str) -> dict[str, Any]:
            path = self.out / name
            return json.loads(path.read_text()) if path.is_file() else {}

        return load("sim.json"), load("controller.json")

    def log_tail(self, name: str, lines: int = 15) -> str:
        """The last lines of ``sim_node``'s or ``controller_node``'s log."""
        path = self.out / f"{name}.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.is_file() else ""

    def __enter__(self) -> NodePair:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def env_domain_id() -> int | None:
    """``ROS_DOMAIN_ID`` from the environment; ``None`` where it is unset or empty (rcl then takes its
    default too).

    Raises:
        ConfigError: a value that is no whole number in :data:`DOMAIN_IDS`.
    """
    text = os.environ.get("ROS_DOMAIN_ID", "").strip()
    if not text:
        return None
    if not re.fullmatch(r"\d+", text) or int(text) not in DOMAIN_IDS:
        raise ConfigError(
            f"ROS_DOMAIN_ID={text}: expected a whole number {DOMAIN_IDS.start}..{DOMAIN_IDS.stop - 1} "
            "(the ROS domain ids DDS can use), or unset for a domain of the run's own"
        )
    return int(text)


class Domain:
    """``ROS_DOMAIN_ID`` if set (:func:`env_domain_id`), else an exclusive :class:`DomainLease`
    (see :meth:`release`).

    Raises:
        ConfigError: a ``ROS_DOMAIN_ID`` that is no domain id, or no id could be leased.
    """

    def __init__(self) -> None:
        from .nodes.domain import DomainLease

        self.lease: DomainLease | None = None
        given = env_domain_id()
        if given is not None:
            self.id = given
        else:
            try:
                self.lease = DomainLease()
            except (RuntimeError, OSError) as exc:
                raise ConfigError(f"ROS domain: {exc}; set ROS_DOMAIN_ID to one of your own") from None
            self.id = self.lease.domain
        os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")

    def release(self) -> None:
        """Give a leased id back."""
        if self.lease is not None:
            self.lease.release()
            self.lease = None
