"""Helpers for the tests over real DDS: node subprocesses, an in-process probe node, domain ids.

Every test gets its own ``ROS_DOMAIN_ID`` (claimed with a lock file, so parallel pytest runs on
the same machine never share one) and discovery limited to localhost. Node processes are
always stopped at teardown (SIGINT, then SIGKILL).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from torque_ctrl_ros.nodes.domain import DomainLease

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "config" / "gen3_controllers.yaml"
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"  # before any rclpy context exists

# Imported, not skipped without: the project's set-up installs rclpy, and a run whose node tests
# all skipped for a broken install would look green.
import rclpy  # noqa: E402

#: Marks a test that runs rclpy (``pytest.mark.ros`` marks those over DDS). Without rclpy these
#: modules fail to import: an error, not a skip.
requires_rclpy = pytest.mark.rclpy


def param_literal(value: Any) -> str:
    """A Python value as the YAML literal of a ``-p name:=value`` override (the node processes the
    tests start; ``make sim`` passes its overrides in a file, ``nodes/params.py``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(param_literal(v) for v in value) + "]"
    if isinstance(value, float):
        return repr(value)
    return str(value)


class LineLogger:
    """Stands in for a node's logger (behind a ThrottledLog, say): ``(level, text)`` of each line."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def error(self, text: str) -> None:
        self.lines.append(("error", text))

    def warning(self, text: str) -> None:
        self.lines.append(("warning", text))

    def info(self, text: str) -> None:
        self.lines.append(("info", text))


class FakeTargetNode:
    """Just what a target source uses of a node: subscriptions (kept by topic), a logger (refusals
    kept in ``errors``, or raised with ``strict``; warnings in ``warnings``, info in ``infos``) and a
    clock reading ``now_ns``."""

    def __init__(self, strict: bool = False) -> None:
        self.callbacks: dict[str, Any] = {}
        self.errors: list[str] = []
        self.warnings: list[str] = []
        self.infos: list[str] = []
        self.strict = strict
        self.now_ns = 0

    def create_subscription(
        self, _type: Any, topic: str, callback: Any, _qos: Any, raw: bool = False
    ) -> None:
        self.callbacks[topic] = callback  # the sources' raw callbacks take a message object too

    def get_logger(self) -> Any:
        return self

    def error(self, message: str, **_kwargs: Any) -> None:
        if self.strict:
            raise AssertionError(f"unexpected refusal: {message}")
        self.errors.append(message)

    def warning(self, message: str, **_kwargs: Any) -> None:
        self.warnings.append(message)

    def info(self, message: str, **_kwargs: Any) -> None:
        self.infos.append(message)

    def get_clock(self) -> Any:
        return self

    def now(self) -> Any:
        return SimpleNamespace(nanoseconds=self.now_ns)


def shipped_parameters(node: str) -> dict[str, Any]:
    """``node``'s ``ros__parameters`` in ``config/gen3_controllers.yaml``, with nested sections
    flattened to dotted names as rclpy does (``watchdog.max_age``, ``qpid.tool.kp``)."""
    import yaml

    def flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in d.items():
            if isinstance(v, dict):
                out |= flat(v, f"{prefix}{k}.")
            else:
                out[f"{prefix}{k}"] = v
        return out

    return flat(yaml.safe_load(CONFIG.read_text())[node]["ros__parameters"])


def ros_env(domain: int) -> dict[str, str]:
    """Environment of a node process: its domain, localhost discovery, the package importable."""
    env = dict(os.environ)
    env["ROS_DOMAIN_ID"] = str(domain)
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env.setdefault("AMENT_PREFIX_PATH", sys.prefix)
    env["OMP_NUM_THREADS"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    return env


class NodeProcess:
    """``python -m torque_ctrl_ros.nodes.<module>`` with the project config plus overrides."""

    def __init__(self, module: str, domain: int, log_dir: Path, params: dict[str, Any] | None = None) -> None:
        self.module = module
        self.log_path = log_dir / f"{module}.log"
        cmd = [
            sys.executable,
            "-m",
            f"torque_ctrl_ros.nodes.{module}",
            "--ros-args",
            "--params-file",
            str(CONFIG),
        ]
        for key, value in (params or {}).items():
            cmd += ["-p", f"{key}:={param_literal(value)}"]
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            cmd,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=ros_env(domain),
            cwd=ROOT,
            start_new_session=True,
        )

    def alive(self) -> bool:
        """Still running."""
        return self.proc.poll() is None

    def wait(self, timeout: float) -> int:
        """Exit status; raises ``subprocess.TimeoutExpired`` after ``timeout`` s."""
        return self.proc.wait(timeout)

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGINT, then SIGKILL after ``timeout`` s; returns the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        self._log.close()
        return self.proc.returncode

    def log(self) -> str:
        """Everything the process printed so far."""
        self._log.flush()
        return self.log_path.read_text(errors="replace")


class Probe:
    """An rclpy node in the test process, spun in a background thread on its own context."""

    def __init__(self, domain: int, name: str = "test_probe") -> None:
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.node import Node

        self.context = Context()
        rclpy.init(context=self.context, domain_id=domain)
        self.node = Node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.lock = threading.Lock()
        self._stop = False
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        while not self._stop and self.context.ok():
            self.executor.spin_once(timeout_sec=0.02)

    def collect(self, msg_type: Any, topic: str, depth: int = 100) -> list[tuple[float, Any]]:
        """Subscribe; returns the list the ``(monotonic time, message)`` pairs are appended to."""
        store: list[tuple[float, Any]] = []

        def on_msg(msg: Any) -> None:
            with self.lock:
                store.append((time.monotonic(), msg))

        self.node.create_subscription(msg_type, topic, on_msg, depth)
        return store

    def publisher(self, msg_type: Any, topic: str, depth: int = 10) -> Any:
        """A publisher on ``topic``."""
        return self.node.create_publisher(msg_type, topic, depth)

    def close(self) -> None:
        """Stop the thread, then the executor, then the context (in that order)."""
        self._stop = True
        self._thread.join(5)
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)


def wait_until(predicate: Callable[[], Any], timeout: float, what: str, period: float = 0.02) -> Any:
    """Poll ``predicate`` until truthy; fail the test with ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(period)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")


def diagnostic_values(store: list[tuple[float, Any]], name_part: str) -> dict[str, str]:
    """Values of the latest status whose name contains ``name_part`` (empty if none yet)."""
    for _, array in reversed(list(store)):
        for st in array.status:
            if name_part in st.name:
                return {kv.key: kv.value for kv in st.values} | {"_level": st.level, "_message": st.message}
    return {}


@pytest.fixture
def ros_domain() -> Iterator[int]:
    """A domain id exclusive to this test."""
    lease = DomainLease()
    try:
        yield lease.domain
    finally:
        lease.release()


@pytest.fixture
def launch(ros_domain: int, tmp_path: Path) -> Iterator[Callable[..., NodeProcess]]:
    """Factory starting node processes on the test's domain; all are stopped at teardown."""
    started: list[NodeProcess] = []

    def start(module: str, **params: Any) -> NodeProcess:
        proc = NodeProcess(module, ros_domain, tmp_path, params)
        started.append(proc)
        return proc

    yield start
    for proc in reversed(started):
        proc.stop()


def _ros_args(params_files: tuple[Path, ...], params: dict[str, Any]) -> list[str]:
    """Command-line arguments of a node in this process: the shipped YAML, then ``params_files``,
    then ``params`` (``-p`` overrides)."""
    args = ["--ros-args", "--params-file", str(CONFIG)]
    for path in params_files:
        args += ["--params-file", str(path)]
    for key, value in params.items():
        args += ["-p", f"{key}:={param_literal(value)}"]
    return args


@contextmanager
def in_process_controllers(domain: int) -> Iterator[Callable[..., Any]]:
    """``make(*params_files, **params)``: ControllerNode instances in this process on ``domain``,
    on the shipped YAML, then the given files, then ``params`` (``-p`` overrides); every node is
    closed and rclpy shut down on exit. Callers replace the publishers to record what is sent."""
    import rclpy

    from torque_ctrl_ros.nodes.controller_node import ControllerNode

    made: list[Any] = []

    def make(*params_files: Path, **params: Any) -> Any:
        rclpy.init(args=_ros_args(params_files, params), domain_id=domain)
        node = ControllerNode()
        made.append(node)
        return node

    try:
        yield make
    finally:
        for node in made:
            node.close()
        if rclpy.ok():
            rclpy.shutdown()


@contextmanager
def in_process_sim(domain: int, **params: Any) -> Iterator[Any]:
    """A SimNode in this process on ``domain``, on the shipped YAML and ``params`` (``-p``
    overrides); closed (its summary written where ``stats_file`` says) and rclpy shut down on exit."""
    import rclpy

    from torque_ctrl_ros.nodes.sim_node import SimNode

    rclpy.init(args=_ros_args((), params), domain_id=domain)
    try:
        sim = SimNode()
        try:
            yield sim
        finally:
            sim.close()
    finally:
        if rclpy.ok():
            rclpy.shutdown()


def sim_clock(node: Any) -> Callable[[float], float]:
    """``at(t)``: sets an in-process node's sim time to ``t`` (s) and returns ``t``."""
    from rclpy.time import Time

    clock = node.node.get_clock()

    def at(t: float) -> float:
        clock.set_ros_time_override(Time(nanoseconds=round(t * 1e9), clock_type=clock.clock_type))
        return t

    return at


def joint_state_msg(stamp: float, position: Any, names: list[str] | None = None) -> Any:
    """A ``sensor_msgs/JointState`` stamped ``stamp`` (s): ``position`` (rad) of ``names``
    (default the Gen3's ``joint_1`` … ``joint_7``), at rest."""
    from sensor_msgs.msg import JointState as JointStateMsg

    names = names or [f"joint_{i}" for i in range(1, 8)]
    msg = JointStateMsg(name=names, position=[float(p) for p in position], velocity=[0.0] * len(names))
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(round(stamp * 1e9), 10**9)
    return msg


def node_now(node: Any) -> float:
    """The ROS time (s) of an in-process node (sim or wall clock, as it was configured)."""
    return float(node.node.get_clock().now().nanoseconds * 1e-9)


@pytest.fixture
def probe(ros_domain: int) -> Iterator[Probe]:
    """A probe node on the test's domain."""
    p = Probe(ros_domain)
    try:
        yield p
    finally:
        p.close()


def diagnostic_samples(store: list[tuple[float, Any]], name_part: str) -> list[dict[str, Any]]:
    """Values of every status so far whose name contains ``name_part``, oldest first."""
    out = []
    for _, array in list(store):
        for st in array.status:
            if name_part in st.name:
                out.append(
                    {kv.key: kv.value for kv in st.values} | {"_level": st.level, "_message": st.message}
                )
    return out


def run_lockstep_pair(
    launch: Callable[..., NodeProcess],
    tmp_path: Path,
    duration: float,
    before_sim: Callable[[], None] | None = None,
    sim_params: dict[str, Any] | None = None,
    **controller_params: Any,
) -> dict[str, Any]:
    """Controller node (``controller_params`` over the config) + lockstep sim (``sim_params`` over
    it) for ``duration`` s.

    ``before_sim()`` runs once the controller process is started, before the simulator (send
    targets there: they are pending when the first state arrives). Returns the simulator's
    record (t, q, v, tau per step) and summary, and the controller's process (still running);
    fails on a missing or rejected command.
    """
    import json

    import numpy as np

    ctrl = launch("controller_node", diagnostics_period=0.2, **controller_params)
    if before_sim is not None:
        before_sim()
    sim = launch(
        "sim_node",
        mode="lockstep",
        duration=duration,
        record_file=str(tmp_path / "record.npz"),
        stats_file=str(tmp_path / "sim.json"),
        **(sim_params or {}),
    )
    rc = sim.wait(timeout=120)
    assert rc == 0, sim.log()
    assert ctrl.alive(), ctrl.log()
    record = dict(np.load(tmp_path / "record.npz"))
    stats = json.loads((tmp_path / "sim.json").read_text())
    print(
        f"lockstep {controller_params.get('controller')}: {stats['steps']} steps in "
        f"{stats['wall_time_s']:.2f} s ({stats['step_rate_hz']:.0f} Hz), round trip p50 "
        f"{stats['latency']['p50_ms']:.2f} ms p99 {stats['latency']['p99_ms']:.2f} ms"
    )
    assert stats["missing_command_steps"] == 0 and stats["rejected_commands"] == 0
    return {"record": record, "stats": stats, "controller": ctrl}
