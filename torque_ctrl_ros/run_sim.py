"""``make sim``: the simulated Gen3 under a controller, headless, as separate ROS 2 nodes.

Starts ``sim_node`` and ``controller_node`` as two processes with ``config/gen3_controllers.yaml``
(the file the launch files use), on a ROS domain of their own (``ROS_DOMAIN_ID`` if set), with
discovery limited to localhost. A monitor node in this process shows a live status line and
gives the arm something to do: a joint trajectory for the joint-space controllers with a
trajectory input (the tracking error is measured against it), tool pose targets for the
Cartesian ones (:mod:`.pose_demo`: how soon the tool reached each). The controller is started
once the monitor receives the simulator's state 0, so that the monitor sees the whole run.
Stops after ``--duration`` simulated seconds or on Ctrl-C, then prints a summary. Parameter files
under which the two nodes would not fit together (two joint orders: :func:`joint_order_error`) are
refused before anything starts; a controller model whose gravity is not the simulated arm's is a
warning (:func:`model_mismatch`).

    python -m torque_ctrl_ros.run_sim --controller computed_torque --mode realtime --duration 10
"""

from __future__ import annotations

import argparse
import copy
import math
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple, NoReturn

import numpy as np

from .bench.host import cpu_ticks, steal_between
from .core.controllers import CONTROLLERS
from .core.errors import ConfigError, TorqueCtrlError
from .core.robot import CONTROL_PERIOD, wrap_angle
from .core.safety import RejectReason, WatchdogState
from .core.trajectory import JointTrajectory
from .joint_order import joint_order_error, model_mismatch
from .node_processes import TRAJECTORY_TOPIC, Domain, NodePair, env_domain_id, step_parts
from .nodes.params import check_params_file, controller_model, file_parameter
from .nodes.scheduling import Placement, parse_cpu_latency
from .paths import data_path
from .pose_demo import DemoFigures, PoseDemo

#: How far inside its position limits (rad) the demo keeps a joint it swings: the arm passes a
#: waypoint by a little (0.2 mrad with computed torque from ``home``), and a limit reached is
#: MuJoCo's joint-limit constraint, which no controller models.
DEMO_LIMIT_MARGIN = 0.05


def demo_trajectory(
    q0: np.ndarray,
    duration: float,
    start: float,
    lower: np.ndarray | None = None,
    upper: np.ndarray | None = None,
) -> list[tuple[float, np.ndarray]]:
    """Waypoints (s from ``start``, rad): joints 1, 4, 6 swing ±0.3 rad and joint 2 ±0.2 rad,
    one waypoint a second, back at ``q0`` by ``duration`` (s of simulated time, as ``start``) at
    the latest; none (no demo) when not even one swing and the way back fit: a ``duration`` below
    ``start + 2`` s (the monitor starts it 0.5 s after the state it sends it at, so a run needs
    that state's time + 2.5 s).

    ``lower`` / ``upper``: the controller's position limits (rad, ∓inf on continuous joints, in
    ``q0``'s order). Each swing is cut to stay :data:`DEMO_LIMIT_MARGIN` inside them, both ways:
    from the ``retract`` keyframe joint 4 sits 22 mrad from its limit and does not swing (a swing
    past it is a trajectory the controller refuses), from ``home`` it swings 0.25 rad."""
    pattern = np.zeros_like(q0)
    pattern[[0, 1, 3, 5]] = [0.3, 0.2, 0.3, 0.3]
    if lower is not None and upper is not None:
        room = np.minimum(q0 - lower, upper - q0) - DEMO_LIMIT_MARGIN
        np.minimum(pattern, np.maximum(room, 0.0), out=pattern)
    points, sign, t = [], 1.0, 1.0
    while start + t + 1.0 <= duration:
        points.append((t, q0 + sign * pattern))
        sign, t = -sign, t + 1.0
    if not points:
        return []
    points.append((t, q0.copy()))
    return points


class ErrorStats:
    """Running max, RMS and last value of the tracking error (rad), in constant memory (a list of
    every state's would grow by ~100 MB an hour at 1 kHz in a run without end)."""

    def __init__(self) -> None:
        self.count = 0
        self.max = 0.0
        self.last = math.nan
        self._sum_squares = 0.0

    def add(self, value: float) -> None:
        self.count += 1
        self.max = max(self.max, value)
        self.last = value
        self._sum_squares += value * value

    @property
    def rms(self) -> float:
        return math.sqrt(self._sum_squares / self.count) if self.count else math.nan

    def snapshot(self) -> ErrorStats:
        """A copy of the figures so far (:meth:`rewind` goes back to it)."""
        return copy.copy(self)

    def rewind(self, snapshot: ErrorStats) -> None:
        """Go back to the figures of ``snapshot``, in place (the object stays the one others hold)."""
        self.count, self.max, self.last = snapshot.count, snapshot.max, snapshot.last
        self._sum_squares = snapshot._sum_squares


class Tracked(NamedTuple):
    """What the monitor tracked over a run: ``what`` the error is against, the ``errors`` (rad)
    over the states it read, the ``skipped`` states it could not read, the targets it sent
    itself (``sent``: the demo trajectory, 0 or 1, or the pose targets) and, for a pose demo,
    its report (``poses``, :meth:`.PoseDemo.summary`; the joint errors are then not measured)."""

    what: str
    errors: ErrorStats
    skipped: int = 0
    sent: int = 0
    poses: str = ""
    no_demo: str = ""  # why no demo was sent, where the controller takes one
    foreign_at: float = math.nan  # when a target from elsewhere stopped the demo (s; NaN: never)
    measured_until: float = math.nan  # the error's last state then (s): the report before it
    crowded: str = ""  # the arm's topics more than one node published (Monitor.crowded)


def takes_joint_trajectory(controller: str) -> bool:
    """The controller node takes a JointTrajectory (on ``~/joint_trajectory``) under ``controller``:
    the target source registered for it (:data:`.nodes.targets.TARGET_SOURCES`) is the joint one."""
    # The registry imports rclpy and the messages: only once the monitor needs them too.
    from .nodes.targets import TARGET_SOURCES, JointTargetSource

    source = TARGET_SOURCES.get(controller)
    return isinstance(source, type) and issubclass(source, JointTargetSource)


class Monitor:
    """The runner's node: status line, tracking error, the demo trajectory or pose targets."""

    def __init__(
        self,
        domain: int,
        controller: str,
        duration: float,
        pose_demo: PoseDemo | None = None,
        limits: Mapping[str, tuple[float, float]] | None = None,
    ) -> None:
        """``limits``: the controller model's position limits (rad) by joint name, which the demo
        trajectory keeps inside (:func:`demo_trajectory`); ``None``: not known, not kept."""
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from geometry_msgs.msg import PoseStamped
        from rclpy.context import Context
        from rclpy.node import Node
        from sensor_msgs.msg import JointState as JointStateMsg
        from trajectory_msgs.msg import JointTrajectory as TrajectoryMsg

        from .nodes.common import COMMAND_TOPIC, DIAGNOSTICS_TOPIC, STATE_TOPIC, make_executor
        from .nodes.wire import JointStateWire

        self.rclpy = rclpy
        self.context = Context()
        rclpy.init(
            context=self.context, domain_id=domain, signal_handler_options=rclpy.SignalHandlerOptions.NO
        )
        self.node = Node("run_sim_monitor", context=self.context)
        # The monitor takes every state (1 kHz, ~2–3 kHz in lockstep) on the CPUs the two nodes
        # need, so it reads them as the controller does: EventsExecutor, bytes decoded by the
        # node's codec. With the SingleThreadedExecutor and rclpy's messages it took a third of
        # a CPU at 1 kHz (docs/performance.md, "make sim's monitor").
        self.executor = make_executor("events", self.context)
        self.executor.add_node(self.node)
        self.node.create_subscription(JointStateMsg, STATE_TOPIC, self._on_state, 100, raw=True)
        self._state_msg = JointStateMsg
        self._state_wire = JointStateWire
        self._wire: JointStateWire | None = None  # set from the first state's joint names
        self.node.create_subscription(DiagnosticArray, DIAGNOSTICS_TOPIC, self._on_diag, 20)
        self.traj_pub = self.node.create_publisher(TrajectoryMsg, TRAJECTORY_TOPIC, 10)
        self.controller = controller
        self.duration = duration
        self.limits = limits
        self.sends_trajectory = takes_joint_trajectory(controller)
        self.pose_demo = pose_demo
        self._pose_msg = PoseStamped
        self.pose_pub = self.node.create_publisher(PoseStamped, pose_demo.topic, 10) if pose_demo else None
        self.tool_error = math.nan  # m, the frame's distance to the last pose target sent
        self.no_demo = ""  # why the demo (trajectory or pose targets) was not sent, once known
        self.diag: dict[str, dict[str, str]] = {}
        self.q0: np.ndarray | None = None
        self.reference: JointTrajectory | None = None
        self.t0 = 0.0
        self.sent_at = math.nan  # simulated time (s) of the state that triggered the trajectory
        self.names: list[str] = []
        #: Error against the initial pose over every state, and the error reported: the same
        #: object until the demo trajectory is sent, the error against it from then (the states
        #: before it included), and ``hold_errors`` again if the controller refuses the demo.
        self.hold_errors = ErrorStats()
        self.errors = self.hold_errors
        #: Simulated time (s) at which the controller was seen to refuse the demo trajectory (its
        #: /diagnostics' targets_rejected above 0). NaN: not seen.
        self.refused_at = math.nan
        self._rejected_before_demo = 0  # the controller's targets_rejected last seen before the demo
        self.sim_time = 0.0
        #: States that were no JointState (bytes another publisher put on the topic): skipped.
        self.unreadable_states = 0
        #: Simulated time (s) at which the controller was seen to have taken a target the monitor
        #: did not send (its /diagnostics' targets_received above the demo's count): the demo then
        #: stops and the tracking error stops being measured against it. NaN: none seen.
        self.foreign_at = math.nan
        #: The simulated time (s; NaN: before its first) and the errors (and the pose demo's
        #: figures) at the controller's last /diagnostics that had taken no target from elsewhere:
        #: one is seen up to a report late, and the figures go back to these then, so that they do
        #: not measure its motion.
        self._before_foreign = self._error_snapshots(math.nan)
        self.measured_until = math.nan
        #: The most nodes seen publishing the arm's states and its commands (:meth:`count_publishers`).
        self.publishers: dict[str, int] = {STATE_TOPIC: 0, COMMAND_TOPIC: 0}

    def count_publishers(self) -> None:
        """Note how many nodes publish the arm's states and its commands now (a graph query, ~0.1 ms).
        This run has one of each: more is another run, or a driver, on the same ROS domain (an
        exported ``ROS_DOMAIN_ID`` another shell uses too), whose states and commands mix with
        this run's. Two simulators at the same pose, both answered, showed no jump to stop on:
        their run ended "done" with a tracking error and a watchdog line that were neither's."""
        from .nodes.common import publishing_nodes

        for topic, most in self.publishers.items():
            now = publishing_nodes(self.node.get_publishers_info_by_topic(topic))
            self.publishers[topic] = max(most, now)

    def crowded(self) -> str:
        """``2 nodes published /joint_states`` (and the like for the commands), or "" where each of
        the arm's topics had one publisher at most (:meth:`count_publishers`)."""
        return ", ".join(f"{n} nodes published {topic}" for topic, n in self.publishers.items() if n > 1)

    def _on_diag(self, msg: Any) -> None:
        for st in msg.status:
            key = "sim" if "simulation" in st.name else "ctrl" if "controller" in st.name else None
            if key:
                self.diag[key] = {kv.key: kv.value for kv in st.values} | {"_message": st.message}
                if key == "ctrl":
                    self._check_foreign(self.diag[key].get("targets_received", ""))
                    self._check_refused(self.diag[key].get("targets_rejected", ""))

    def _own_targets(self) -> int:
        """The targets the monitor sent: the pose demo's, or the demo trajectory (0 or 1)."""
        if self.pose_demo is not None:
            return len(self.pose_demo.sent)
        return int(self.reference is not None)

    def _check_foreign(self, received: str) -> None:
        """Note a target taken that the monitor did not send (``received``: the controller's
        ``targets_received``), and stop the demo: a user's target from a second shell would
        otherwise be replaced at the pose demo's next one, and the tracking error measured
        against a demo no longer followed. (Seen up to a diagnostics period late; a demo target
        the controller refused can hide one.)"""
        if not math.isnan(self.foreign_at) or not received.isdigit():
            return
        if int(received) > self._own_targets():
            self.foreign_at = self.sim_time
            self.measured_until, snapshots, demo = self._before_foreign
            if all(self.errors is not stats for stats, _ in snapshots):
                self.errors.rewind(ErrorStats())  # made since (the demo sent): all after the report
            for stats, snapshot in snapshots:
                stats.rewind(snapshot)
            if self.pose_demo is not None:
                self.pose_demo.stop()
                if demo is not None:
                    self.pose_demo.rewind(demo)
        else:
            self._before_foreign = self._error_snapshots(self.sim_time)

    def _error_snapshots(
        self, at: float
    ) -> tuple[float, list[tuple[ErrorStats, ErrorStats]], DemoFigures | None]:
        """``at`` (the simulated time, s), for each error measured (the initial pose's and the
        demo's) the object and a snapshot of it, and the pose demo's figures (``None``: none)."""
        measured = [self.hold_errors] + ([self.errors] if self.errors is not self.hold_errors else [])
        demo = self.pose_demo.snapshot() if self.pose_demo is not None else None
        return at, [(stats, stats.snapshot()) for stats in measured], demo

    def _check_refused(self, rejected: str) -> None:
        """Note the controller refusing the demo trajectory (``rejected``: its ``targets_rejected``,
        grown once the demo was sent, from its last value before): the arm then holds its pose, so
        the error reported is the one against the initial pose, over the whole run, not against a
        motion that never ran. (A target from elsewhere that the controller refused meanwhile, or
        up to a report before the demo, reads the same.)"""
        if not rejected.isdigit():
            return
        if self.reference is None:
            self._rejected_before_demo = int(rejected)  # refusals of targets from elsewhere
            return
        if math.isnan(self.refused_at) and int(rejected) > self._rejected_before_demo:
            self.refused_at = self.sim_time
            self.errors = self.hold_errors

    def _read_state(self, raw: bytes) -> tuple[float, np.ndarray]:
        """Stamp (s) and joint angles (rad) of a serialized JointState, in the first state's order."""
        decoded = self._wire.decode(raw) if self._wire is not None else None
        if decoded is not None:
            return decoded[0] * 1e-9, decoded[1]
        from rclpy.serialization import deserialize_message

        msg = deserialize_message(raw, self._state_msg)
        if not self.names:
            self.names = list(msg.name)
            wire = self._state_wire(self.names)
            self._wire = wire if wire.available else None
        position = dict(zip(msg.name, msg.position, strict=False))
        q = np.array([position.get(name, math.nan) for name in self.names])
        return msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9, q

    def _on_state(self, raw: bytes) -> None:
        try:
            t, q = self._read_state(raw)
        except Exception as exc:  # rclpy raises RMWError on bytes it cannot read
            # The monitor only watches: a message it cannot read must not end the run (its spin
            # would stop both nodes).
            self.unreadable_states += 1
            if self.unreadable_states == 1:
                self.node.get_logger().warning(f"run_sim monitor: skipping an unreadable joint state: {exc}")
            return
        if self.q0 is None:
            self.q0 = q.copy()
        # Only once the controller's subscription is matched: the topic is volatile, a trajectory
        # sent before discovery completes would be lost. Until then the controller holds q0.
        if (
            self.sends_trajectory
            and self.reference is None
            and math.isnan(self.foreign_at)  # a target from elsewhere came first: no demo over it
            and self.traj_pub.get_subscription_count()
        ):
            self._send_trajectory(t)
        self.sim_time = t
        if self.pose_demo is not None:
            self._pose_step(t, q)
            # _pose_step drops the demo (None) when it cannot start one: the joints are then tracked.
            if self.pose_demo is not None and self.pose_demo.started:
                return  # the joints move where the controller takes them: no joint error to measure
        if not math.isnan(self.foreign_at):
            return  # the arm follows someone else's target now, not the demo
        # Joint angle errors the short way round (continuous joints wrap; on the others an error
        # is far under π here).
        hold_error = float(np.abs(wrap_angle(self.q0 - q)).max())
        self.hold_errors.add(hold_error)
        if self.reference is not None and self.errors is not self.hold_errors:
            q_ref = self.reference.sample(t - self.t0)[0]
            self.errors.add(float(np.abs(wrap_angle(q_ref - q)).max()))

    def _pose_step(self, t: float, q: np.ndarray) -> None:
        """The pose demo at the state at ``t`` (s): planned once the controller's target
        subscription is matched (as the trajectory), each target sent when due, the frame's
        distance to the last one measured."""
        demo = self.pose_demo
        assert demo is not None and self.pose_pub is not None
        if not demo.started:
            if not self.pose_pub.get_subscription_count():
                return
            if not demo.start(self.names, q, t, self.duration):
                self.no_demo = demo.refusal
                self.pose_demo = None  # the arm holds its pose
                return
        if not math.isnan(self.foreign_at):
            return  # stopped: the frame goes where someone else's target takes it
        target = demo.due(t)
        if target is not None:
            msg = self._pose_msg()
            msg.header.frame_id = demo.base
            sec, nsec = divmod(round(t * 1e9), 1_000_000_000)
            msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nsec
            p, (x, y, z, w) = msg.pose.position, target.quaternion_xyzw()
            p.x, p.y, p.z = (float(c) for c in target.position)
            o = msg.pose.orientation
            o.x, o.y, o.z, o.w = x, y, z, w
            self.pose_pub.publish(msg)
        self.tool_error = demo.observe(t, q)

    def _send_trajectory(self, t_now: float) -> None:
        from builtin_interfaces.msg import Duration
        from trajectory_msgs.msg import JointTrajectory as TrajectoryMsg
        from trajectory_msgs.msg import JointTrajectoryPoint

        assert self.q0 is not None
        start = t_now + 0.5  # explicit start time: the monitor knows exactly what is tracked
        # Until Ctrl-C (duration 0): a minute of motion from this state, then hold (as the pose demo).
        lower = upper = None
        if self.limits is not None:
            unlimited = (-math.inf, math.inf)
            lower, upper = np.array([self.limits.get(name, unlimited) for name in self.names]).T
        until = self.duration if self.duration > 0 else t_now + 60.0
        points = demo_trajectory(self.q0, until, start, lower, upper)
        if not points:
            self.no_demo = (
                f"the run ends at {self.duration:g} s, before a swing and the way back could (from the "
                f"controller's trajectory topic, discovered at t = {t_now:.2f} s, they need until "
                f"{t_now + 2.5:.2f} s)"
            )
            self.sends_trajectory = False  # too short a run for the demo: the arm holds its pose
            return
        msg = TrajectoryMsg(joint_names=self.names)
        sec, nsec = divmod(round(start * 1e9), 1_000_000_000)
        msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nsec
        for tp, q in points:
            s, ns = divmod(round(tp * 1e9), 1_000_000_000)
            msg.points.append(
                JointTrajectoryPoint(positions=q.tolist(), time_from_start=Duration(sec=s, nanosec=ns))
            )
        self.traj_pub.publish(msg)
        self.errors = copy.copy(self.hold_errors)  # the states so far were measured against q0
        self.sent_at = t_now
        self.t0 = sec + nsec * 1e-9
        self.reference = JointTrajectory.from_points(
            [
                (p.time_from_start.sec + p.time_from_start.nanosec * 1e-9, np.array(p.positions), None, None)
                for p in msg.points
            ],
            len(self.names),
            start=(self.q0, None),
        )

    def wait_for_state(self, timeout: float, alive: Callable[[], bool] = lambda: True) -> bool:
        """Spin until the first joint state arrives (True), or ``timeout`` s pass or ``alive()``
        turns false (the simulator exited) first (False)."""
        end = time.monotonic() + timeout
        while self.q0 is None and time.monotonic() < end and alive():
            self.spin(0.05)
        return self.q0 is not None

    def spin(self, seconds: float) -> None:
        """Run callbacks for ``seconds``; ``KeyboardInterrupt`` once a stop signal came."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if _STOP_REQUESTED.is_set():
                raise KeyboardInterrupt
            self.executor.spin_once(timeout_sec=max(0.0, min(0.02, end - time.monotonic())))

    def status_line(self) -> str:
        """One line of live figures from the nodes' ``/diagnostics`` (each node publishes them
        once a second). Until the simulator's first, and until they count a command from the
        controller (before it, a step rate of 0 and no latency), a line saying what it waits
        for rather than placeholders."""
        sim, ctrl = self.diag.get("sim", {}), self.diag.get("ctrl", {})
        if not math.isnan(self.foreign_at):
            tracking = f"a target from elsewhere since t={self.foreign_at:.2f} s"
        elif self.pose_demo is not None and self.pose_demo.sent:
            tracking = f"tool {self.tool_error * 1e3:.1f} mm from its target"
        else:
            tracking = f"tracking {self.errors.last:.1e} rad"
        if not sim:
            return f"t={self.sim_time:6.2f} s | waiting for the simulator's first /diagnostics"
        if sim.get("commands_received") == "0":
            return f"t={self.sim_time:6.2f} s | waiting for the controller's first command"
        return (
            f"t={self.sim_time:6.2f} s | rate {float(sim.get('step_rate_hz', 'nan')):6.1f} Hz"
            f" | {_latency_figures(sim)}"
            f" | {tracking} | watchdog {ctrl.get('watchdog_state', 'not reported yet')}"
            f"{_fallbacks(ctrl)}"
            f" | late {sim.get('late_steps', '?')} rejected {sim.get('rejected_commands', '?')}"
        )

    def tracked(self) -> Tracked:
        """What the tracking error is against (the demo trajectory once sent, the initial pose
        before it or without one) and its figures so far."""
        if self.pose_demo is not None and self.pose_demo.started:
            demo = self.pose_demo
            return Tracked(
                "pose targets",
                self.errors,
                self.unreadable_states,
                len(demo.sent),
                demo.summary(),
                foreign_at=self.foreign_at,
                measured_until=self.measured_until,
                crowded=self.crowded(),
            )
        sent = self.reference is not None
        no_demo = self.no_demo
        if sent and self.errors is self.hold_errors:
            what = (
                f"initial pose (the controller refused the demo trajectory sent at t = {self.sent_at:.2f} s,"
                f" seen at t = {self.refused_at:.2f} s)"
            )
        elif sent:
            what = f"trajectory (sent at t = {self.sent_at:.2f} s; before it, the initial pose)"
        else:
            what = "initial pose"
        if ((self.sends_trajectory and not sent) or self.pose_demo is not None) and math.isnan(
            self.foreign_at
        ):
            no_demo = "the controller's target topic was not discovered during the run"
        return Tracked(
            what,
            self.errors,
            self.unreadable_states,
            int(sent),
            no_demo=no_demo,
            foreign_at=self.foreign_at,
            measured_until=self.measured_until,
            crowded=self.crowded(),
        )

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        self.rclpy.shutdown(context=self.context)


def _fallbacks(ctrl: Mapping[str, str]) -> str:
    """`` (N fallbacks)`` once the controller's watchdog fell back since start, else "": the state
    shown is the watchdog's now, and a fallback over between two lines would not show."""
    count = ctrl.get("watchdog_fallbacks", "0")
    return "" if count in ("0", "") else f" ({count} fallback{'s' if count != '1' else ''} so far)"


def _latency_figures(sim: dict[str, str]) -> str:
    """The status line's latency part from the simulator's ``/diagnostics``: percentiles over the
    latest answered states. Commands that answer no state (untagged, or every one refused) give
    none, and the line then says so instead of showing ``nan``."""
    p50, p99 = float(sim.get("latency_p50_ms", "nan")), float(sim.get("latency_p99_ms", "nan"))
    if math.isnan(p50) or math.isnan(p99):
        return "latency: no state answered yet"
    return f"latency p50 {p50:.2f} ms p99 {p99:.2f} ms"


def _duration(text: str) -> float:
    """``--duration``: a finite number of simulated seconds ≥ 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 <= value < math.inf:
        raise argparse.ArgumentTypeError(f"expected simulated seconds >= 0 (0: until Ctrl-C), got {text!r}")
    return value


def parameter_files(params_file: Path | None) -> list[Path]:
    """The files the nodes read, in order: the shipped one, then ``params_file`` if given."""
    files = [Path(data_path("config", "gen3_controllers.yaml"))]
    if params_file is not None:
        files.append(params_file)
    return files


def file_controller(params_file: Path | None) -> str:
    """The controller the parameter files name for the controller node: ``params_file``'s, else the
    shipped file's (``make sim`` without ``CONTROLLER=``).

    Raises:
        ConfigError: none names one, or the one named is no controller.
    """
    files = parameter_files(params_file)
    name = file_parameter(files, "/controller_node", "controller")
    if not isinstance(name, str) or name not in CONTROLLERS:
        raise ConfigError(
            f"controller_node controller: {name!r} in {' + '.join(map(str, files))} is no controller; "
            f"expected one of {sorted(CONTROLLERS)} (or pass --controller)"
        )
    return str(name)


#: Set by a stop signal (Ctrl-C, SIGTERM, SIGHUP) during the run; :meth:`Monitor.spin` then raises
#: ``KeyboardInterrupt`` between two callbacks.
_STOP_REQUESTED = threading.Event()
#: The signals that stop a run: a closed terminal or a kill stops it as Ctrl-C does.
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: The runner's exit status when it was stopped before the nodes were up (as a shell's for Ctrl-C).
INTERRUPTED_AT_START = 130


def _request_stop(signum: int, frame: object) -> None:
    """Note a stop signal. Not raised here: raised inside an rclpy callback, the executor would
    report it as a fatal callback error, traceback and all, before the run's summary."""
    _STOP_REQUESTED.set()


@contextmanager
def _stop_signals() -> Iterator[None]:
    """Within: a stop signal only notes the stop (:func:`_request_stop`), which the run then acts
    on (:func:`_watch`); after: the handlers from before. Set from the set-up on: a
    ``KeyboardInterrupt`` raised in the middle of an import or of rclpy's set-up would end the
    runner with a traceback, and the nodes run in sessions of their own and would outlive it."""
    previous = {sig: signal.getsignal(sig) for sig in _STOP_SIGNALS}
    _STOP_REQUESTED.clear()
    for sig in _STOP_SIGNALS:
        signal.signal(sig, _request_stop)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


#: The ``make sim`` variable that sets each of the runner's options (the Makefile's ``sim`` rule).
MAKE_VARIABLES = {
    "--controller": "CONTROLLER",
    "--mode": "MODE",
    "--duration": "DURATION",
    "--params-file": "PARAMS",
    "--rt-priority": "RT",
    "--cpus": "PIN",
    "--cpu-latency-us": "CPU_LATENCY",
}

#: The fields the scheduling's errors begin with (``Placement.from_spec``), by the option giving each.
_SCHEDULING_FIELDS = {"rt priority": "--rt-priority", "cpus": "--cpus"}


def with_make_variables(message: str) -> str:
    """``message`` with the make variable after each option it names, e.g. ``--controller (make:
    CONTROLLER=)``: ``make sim`` users set those, and the error is the runner's."""

    def named(option: re.Match[str]) -> str:
        variable = MAKE_VARIABLES.get(option[0])
        return f"{option[0]} (make: {variable}=)" if variable else option[0]

    return re.sub(r"--[a-z][a-z-]*", named, message)


def _scheduling_error(message: str) -> str:
    """A scheduling error (``rt priority: expected …``) naming the runner's option for its field."""
    field, colon, rest = message.partition(": ")
    option = _SCHEDULING_FIELDS.get(field)
    return f"{option}: {rest}" if colon and option else message


class _Parser(argparse.ArgumentParser):
    """The runner's argument parser; its errors name the make variables too (:func:`with_make_variables`)."""

    def error(self, message: str) -> NoReturn:
        super().error(with_make_variables(message))


def _parser() -> argparse.ArgumentParser:
    """The runner's command line."""
    parser = _Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--controller",
        default=None,
        choices=sorted(CONTROLLERS),
        help="default: the parameter files' controller_node controller (computed_torque in the shipped one)",
    )
    parser.add_argument("--mode", default="realtime", choices=["realtime", "lockstep"])
    parser.add_argument(
        "--duration", type=_duration, default=10.0, help="simulated seconds (0: until Ctrl-C)"
    )
    parser.add_argument(
        "--params-file",
        type=Path,
        default=None,
        help="layered over config/gen3_controllers.yaml (its values win), e.g. config/gen3_hardware.yaml",
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="folder for logs and stats (default: a temp folder)"
    )
    parser.add_argument(
        "--rt-priority",
        type=int,
        default=0,
        help="run both nodes under SCHED_FIFO at this priority when permitted (0: normal scheduling)",
    )
    parser.add_argument(
        "--cpus",
        default="none",
        help="pin the nodes: none, auto (simulator and controller on one CPU each) or SIM:CONTROLLER "
        "CPU lists such as 0:1",
    )
    parser.add_argument(
        "--cpu-latency-us",
        default="none",
        help="CPU wake-up latency (µs) both nodes hold through /dev/cpu_dma_latency while they run, when "
        "permitted (0: the CPUs poll instead of halting; none, the default: no request)",
    )
    return parser


def _parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, Placement]:
    """The arguments, with ``controller`` the parameter files' one where none was given, and the
    nodes' scheduling. A bad one exits with status 2 and its error, before any node starts."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        latency = parse_cpu_latency(args.cpu_latency_us, "--cpu-latency-us")
        placement = Placement.from_spec(args.rt_priority, args.cpus, latency)
    except ConfigError as exc:
        parser.error(_scheduling_error(str(exc)))
    try:
        # The nodes this runner starts, without a namespace.
        check_params_file(args.params_file or data_path("config", "gen3_controllers.yaml"), NodePair.NAMES)
        args.controller = args.controller or file_controller(args.params_file)
        mismatch = joint_order_error(parameter_files(args.params_file))
    except ConfigError as exc:
        parser.error(str(exc))
    if mismatch:
        parser.error(mismatch)
    other_arm = model_mismatch(parameter_files(args.params_file))
    if other_arm:
        print(f"make sim: warning: {other_arm}", file=sys.stderr, flush=True)
    try:
        env_domain_id()
    except ConfigError as exc:
        parser.error(str(exc))
    if args.out is not None:
        if args.out.exists() and not args.out.is_dir():
            parser.error(f"--out: {args.out} is a file; expected a folder for the logs and stats")
        try:
            args.out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            parser.error(f"--out: cannot make {args.out}: {exc.strerror or exc}")
    return args, placement


def _set_up(args: argparse.Namespace, placement: Placement) -> tuple[Domain, NodePair, Monitor]:
    """The run's ROS domain, its nodes (not started yet) and the monitor; prints what runs where."""
    domain = Domain()
    out = args.out or Path(tempfile.mkdtemp(prefix="torque_ctrl_ros_sim_"))
    try:
        pair = NodePair(
            domain.id,
            out,
            args.controller,
            args.mode,
            args.duration,
            args.params_file,
            placement=placement,
        )
        print(
            f"make sim: controller={args.controller} mode={args.mode} duration={args.duration:g} s "
            f"ROS_DOMAIN_ID={domain.id} config={' + '.join(str(p) for p in pair.params_files)}\n"
            f"logs and stats: {out}",
            flush=True,
        )
        pose_demo = PoseDemo.for_controller(args.controller, pair.params_files)
        limits = _position_limits(pair.params_files) if takes_joint_trajectory(args.controller) else None
        return domain, pair, Monitor(domain.id, args.controller, args.duration, pose_demo, limits)
    except BaseException:
        domain.release()
        _remove_unused(args, out)
        raise


def _position_limits(params_files: Sequence[Path]) -> dict[str, tuple[float, float]] | None:
    """The position limits (rad) of the controller's model under ``params_files``, by joint name;
    ``None`` where the model cannot be loaded (the controller node then refuses it, and says why)."""
    try:
        robot = controller_model(params_files)
    except (TorqueCtrlError, OSError):
        return None
    bounds = zip(robot.position_lower.tolist(), robot.position_upper.tolist(), strict=True)
    return dict(zip(robot.joint_names, bounds, strict=True))


def _remove_unused(args: argparse.Namespace, out: Path) -> None:
    """Remove ``out`` where it is the temp folder :func:`_set_up` made (not the user's ``--out``)
    and no node ran in it: it holds no log, and a folder per failed start would pile up."""
    if args.out is None:
        shutil.rmtree(out, ignore_errors=True)


class RunOutcome(NamedTuple):
    """What a run left for its report: what the monitor ``tracked``, whether it was
    ``interrupted``, the CPU time the hypervisor took meanwhile (``steal``,
    :func:`.bench.host.steal_between`), and the simulated time (s) at which the controller exited
    where it did so before the simulator (``controller_exit``, :func:`_watch`; else ``None``)."""

    tracked: Tracked
    interrupted: bool
    steal: dict[str, Any]
    controller_exit: float | None = None


def _run(domain: Domain, pair: NodePair, monitor: Monitor) -> RunOutcome:
    """The run (:func:`_watch`) until it ends or is interrupted (Ctrl-C, SIGTERM, SIGHUP: within
    :func:`_stop_signals`); then, however it ended, the nodes stopped, the monitor closed and the
    domain given back.

    Returns what it left for the report (:class:`RunOutcome`).
    """
    ticks = cpu_ticks()
    interrupted = False
    controller_exit = None
    try:
        # Inside the try: the nodes run in sessions of their own and do not see a Ctrl-C given
        # during the start-up wait, so only the finally below stops them then.
        controller_exit = _watch(pair, monitor)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        # A second Ctrl-C or SIGTERM here would cut the nodes' stop short and leave one running.
        for sig in _STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        steal = steal_between(ticks, cpu_ticks())
        pair.stop()
        tracked = monitor.tracked()
        monitor.close()
        domain.release()
    return RunOutcome(tracked, interrupted, steal, controller_exit)


def status_output(line: str, tty: bool, columns: int = 80) -> str:
    """What to print for a status ``line``: on a terminal (``tty``), the line in place of the last
    one, cut to ``columns`` − 1 characters (a line as wide as the terminal or wider wraps, and each
    refresh would then leave a row behind) and the rest of the row cleared (a shorter line would
    leave the end of the last one); elsewhere the line as it is, on a line of its own."""
    if not tty:
        return line + "\n"
    return "\r" + line[: max(columns - 1, 1)] + "\x1b[K"


def _watch(pair: NodePair, monitor: Monitor) -> float | None:
    """Start the nodes and spin the monitor until the simulator ends or the controller exits
    early, printing its status line (every 0.25 s in place on a terminal, else a line every 2 s).
    Returns the simulated time (s) of the last state the monitor read when the controller exited
    before the simulator (it should outlive it), ``None`` when it did not.

    A stop requested before (during the set-up) starts nothing: ``KeyboardInterrupt`` at once."""
    if _STOP_REQUESTED.is_set():
        raise KeyboardInterrupt
    tty = sys.stdout.isatty()
    last_print = 0.0
    # The controller is started once the monitor has the simulator's state 0: discovery
    # between two participants sometimes takes ~3 s here (seen under load: no state reached
    # a monitor started alongside the nodes for a whole 3 s run).
    pair.start(before_controller=lambda: monitor.wait_for_state(timeout=15.0, alive=pair.sim_running))
    while pair.sim_running():
        monitor.spin(0.1)
        if pair.controller_exited():
            break
        if time.monotonic() - last_print > (0.25 if tty else 2.0):
            last_print = time.monotonic()
            monitor.count_publishers()
            columns = shutil.get_terminal_size().columns if tty else 80
            print(status_output(monitor.status_line(), tty, columns), end="", flush=True)
    # Also after the loop: exiting between its last check and the simulator's end, it did not
    # outlive the simulator either.
    controller_exit = monitor.sim_time if pair.controller_exited() else None
    if controller_exit is not None:
        print("\ncontroller_node exited early; see its log", file=sys.stderr)
    monitor.spin(0.2)
    monitor.count_publishers()
    return controller_exit


def _report(pair: NodePair, args: argparse.Namespace, outcome: RunOutcome) -> Verdict:
    """After the run: each node that was not started or did not end cleanly, with the last lines
    of its log (on stderr), then the summary (:func:`print_summary`), whose verdict it returns."""
    print()
    for name, rc in zip(NodePair.NAMES, pair.returncodes, strict=True):
        if rc is None:
            print(f"{name} was not started", file=sys.stderr)
        elif rc not in (0, -signal.SIGINT):
            print(f"{name} exited with status {rc}; last lines of its log:", file=sys.stderr)
            print(pair.log_tail(name), file=sys.stderr)
    return print_summary(pair, args, outcome)


def main(argv: list[str] | None = None) -> int:
    """Run the demo. Exit status (:func:`verdict`): 0 when both nodes ran (the whole duration,
    unless interrupted) and ended cleanly, 1 when one failed or the run ended early, 2 for bad
    arguments or parameter files, 130 when interrupted before the nodes were up."""
    args, placement = _parse_args(argv)
    with _stop_signals():
        domain, pair, monitor = _set_up(args, placement)
        try:
            outcome = _run(domain, pair, monitor)
        except ConfigError as exc:  # a file keeping an override from winning, before anything started
            print(f"make sim: {exc}", file=sys.stderr)
            return 2
        finally:
            if pair.sim is None:
                _remove_unused(args, pair.out)
        return _report(pair, args, outcome).exit_status


class Verdict(NamedTuple):
    """How a run ended: the word(s) its summary opens with, and the runner's exit status."""

    text: str
    exit_status: int


def ended_early(sim: Mapping[str, Any], duration: float, controller_exit: float | None) -> str:
    """Why a run that was not interrupted ended before its ``duration`` (s; 0: until Ctrl-C),
    "" where it did not (or where the simulator wrote no summary ``sim`` to tell).

    The controller exited before the simulator (at ``controller_exit``, s of simulated time), or
    the simulator stopped short of its steps (a kill, or a run until Ctrl-C that ended without
    one): both nodes end with status 0 on SIGTERM, so their statuses do not tell it."""
    of = f" of {duration:g} s" if duration > 0 else " (the run was to last until Ctrl-C)"
    if controller_exit is not None:
        return f"controller_node exited at t = {controller_exit:.2f} s{of}"
    steps, sim_time = sim.get("steps"), sim.get("sim_time_s")
    if not isinstance(steps, int) or not isinstance(sim_time, int | float):
        return ""
    # The steps the simulator takes for the duration, as it counts them (nodes/sim_node.py, step_count).
    if duration > 0 and steps >= math.floor(duration * 1e9 / round(CONTROL_PERIOD * 1e9) + 0.5):
        return ""
    return f"sim_node stopped at t = {sim_time:.2f} s{of}"


def verdict(
    pair: NodePair,
    sim: Mapping[str, Any],
    ctrl: Mapping[str, Any],
    duration: float,
    interrupted: bool,
    controller_exit: float | None = None,
) -> Verdict:
    """How the run of ``pair`` ended, from its nodes' exit statuses and summaries (``sim``,
    ``ctrl``; empty where not written) and what the runner saw (:func:`ended_early`).

    Interrupted before the nodes were up (no controller started, or none of its commands reached
    the simulator) is no result to sum up: status 130. A node that failed or wrote no summary:
    1; a run that ended early (:func:`ended_early`): 1 too, though both nodes ended cleanly."""
    clean = pair.clean_exit()
    if interrupted:
        # Clean here also where no node had started yet.
        failed = any(rc not in (0, -signal.SIGINT) for rc in pair.returncodes if rc is not None)
        answered = sim.get("commands_received")
        if not failed and (pair.ctrl is None or (sim and not (isinstance(answered, int) and answered > 0))):
            return Verdict("interrupted before the nodes were up", INTERRUPTED_AT_START)
        return Verdict("interrupted", 0 if clean else 1)
    early = ended_early(sim, duration, controller_exit)
    if not clean or not sim or not ctrl:
        return Verdict("failed" + (f": {early}" if early else ""), 1)
    if early:
        return Verdict(f"ended early: {early}", 1)
    return Verdict("done", 0)


#: WAITING → OK → FALLBACK → STOPPED: the most transitions a run that tripped only at its end makes.
_END_OF_RUN_TRANSITIONS = 3


def watchdog_summary(ctrl: Mapping[str, Any]) -> str:
    """The controller's watchdog over a run, from its summary (``?`` where none was written).

    At the end of every run the simulator's states stop, and after ``max_age`` the watchdog
    goes to FALLBACK (then STOPPED) for lack of a state: that is said as such, apart from a
    trip during the run. It is the only trip when no state was refused, the last reason is a
    stale stream and the watchdog went no further than WAITING → OK → FALLBACK → STOPPED; with
    fallbacks before the last state (``watchdog_fallbacks_before_last_state``; in a summary
    without it, every fallback but one) and no state refused, the silences during the run are
    counted before the end. With states refused they are counted too, before the state the
    watchdog ended in (one stale state refused had dropped the count: "ok" after 477 fallbacks).
    """
    state = ctrl.get("watchdog_state", "?")
    reason = ctrl.get("watchdog_reason") or ""
    refused = sum(n for kind, n in ctrl.get("rejected", {}).items() if kind != RejectReason.SUPERSEDED.value)
    ended = (
        state in (WatchdogState.FALLBACK.value, WatchdogState.STOPPED.value)
        and ctrl.get("watchdog_reason_kind") == RejectReason.STALE.value
        and refused == 0
    )
    if ended and ctrl.get("watchdog_transitions", math.inf) <= _END_OF_RUN_TRANSITIONS:
        return f"ok until the states ended, then {state} ({reason})"
    # Silences during the run too (a stalled process): the last reason is only the end's, so the
    # line had read as a clean end (a newcomer's review); the log says why each came.
    # Not every fallback but the end's: the end may go from OK straight to STOPPED (its silence
    # first checked past max_age + fallback_duration), which hid a fallback during the run.
    before_end = ctrl.get("watchdog_fallbacks_before_last_state")
    during = before_end if isinstance(before_end, int) else int(ctrl.get("watchdog_fallbacks", 0)) - 1
    if ended and during > 0:
        return (
            f"fell back {_times(during)} during the run (no state for a while; controller_node.log says "
            f"how long), then at the end {state} ({reason})"
        )
    last = state if state in (WatchdogState.OK.value, "?") or not reason else f"{state} ({reason})"
    if during > 0:
        return f"fell back {_times(during)} during the run (controller_node.log says why), ended {last}"
    return last


def _times(count: int) -> str:
    """``once``, ``2 times``."""
    return "once" if count == 1 else f"{count} times"


def tracking_line(
    tracked: Tracked, targets_taken: Any = 0, pauses: Any = 0, drops: Any = 0, refused: Any = 0
) -> str:
    """The summary's tracking line: the error against ``tracked.what`` (rad) over the states the
    monitor read, the unreadable ones it skipped (bytes another publisher put on the topic), and
    the targets the controller took (``targets_taken``, its ``targets_received``) beyond the
    monitor's own, which the error is not measured against; empty when there is nothing to say.

    ``pauses`` and ``drops``: the controller's ``target_pauses`` and ``target_drops``. The monitor
    samples the trajectory on its own timeline; a target paused for a gap in the states runs late
    by it, and a dropped one is no longer followed: the error then measures those too, not only
    the control. ``refused``: its ``targets_rejected`` (a demo target it refused is never reached,
    which is not the control's doing either)."""
    errors, skipped = tracked.errors, tracked.skipped
    unread = f", {skipped} unreadable state{'s' if skipped != 1 else ''} skipped" if skipped else ""
    others = int(targets_taken) - tracked.sent if isinstance(targets_taken, int | float) else 0
    notes = (
        f"; the controller also took {others} target{'s' if others != 1 else ''} from elsewhere, "
        f"not tracked here"
        if others > 0
        else ""
    )
    if isinstance(pauses, int) and pauses > 0:
        notes += f"; the controller paused its target {_times(pauses)} (late by each pause)"
    if isinstance(drops, int) and drops > 0:
        notes += f"; the controller dropped its target {_times(drops)} (then held the arm)"
    if isinstance(refused, int) and refused > 0:
        notes += f"; the controller refused {refused} target{'s' if refused != 1 else ''} (its log says why)"
    if not math.isnan(tracked.foreign_at):
        notes += (
            f"; the demo stopped at t = {tracked.foreign_at:.2f} s, on the first target from elsewhere "
            + (
                "(nothing measured: it came before the controller's first report)"
                if math.isnan(tracked.measured_until)
                else f"(measured up to t = {tracked.measured_until:.2f} s, the controller's last report "
                "before it)"
            )
        )
    if tracked.poses:
        return f"  tool targets     {tracked.poses}{unread}{notes}"
    if tracked.no_demo:
        notes += f"; no demo: {tracked.no_demo}"
    if not errors.count:
        if not math.isnan(tracked.foreign_at):
            return f"  tracking error   none measured{unread}{notes}"
        return f"  tracking error   none: no state read{unread}{notes}" if skipped or tracked.no_demo else ""
    return (
        f"  tracking error   vs {tracked.what}: max {errors.max:.2e} rad, RMS {errors.rms:.2e} rad,"
        f" final {errors.last:.2e} rad ({errors.count} states{unread}){notes}"
    )


def print_summary(pair: NodePair, args: argparse.Namespace, outcome: RunOutcome) -> Verdict:
    """The summary table: how the run ended (:func:`verdict`, returned), tracking error
    (:func:`tracking_line`), latency percentiles and parts, late / rejected counts, and the CPU
    time the hypervisor took during the run (:class:`RunOutcome`)."""
    tracked, interrupted, steal, controller_exit = outcome
    # No node started, no summary of this run: what the folder holds is another run's.
    sim, ctrl = pair.stats() if pair.sim is not None else ({}, {})
    out = pair.out
    ending = verdict(pair, sim, ctrl, args.duration, interrupted, controller_exit)
    if tracked.crowded and ending.exit_status == 0 and not interrupted:
        ending = Verdict("failed: another run on its ROS domain", 1)
    head = f"summary ({ending.text}): {args.controller}, {args.mode}"
    if ending.exit_status == INTERRUPTED_AT_START:
        # Nothing ran to sum up, and no error to see: neither a list of missing summaries nor a
        # demo that "was not discovered".
        print(head + (f" (logs in {out})" if pair.sim is not None else ""), flush=True)
        return ending
    silent = [name for name, stats in zip(NodePair.NAMES, (sim, ctrl), strict=True) if not stats]
    if silent:
        # A node that never ran (a refused parameter, a crash) leaves nothing to sum up: its
        # error, printed above, is the result; placeholders would bury it.
        print(
            f"{head}: {' and '.join(silent)} wrote no summary (see the errors above; logs in {out})",
            flush=True,
        )
        return ending
    policies = pair.scheduling()
    lat = sim.get("latency", {})
    comp = ctrl.get("compute", {})
    parts = step_parts(sim, ctrl)
    lines = [
        head,
        f"  simulated        {sim.get('sim_time_s', float('nan')):.3f} s in "
        f"{sim.get('wall_time_s', float('nan')):.2f} s wall"
        f" ({sim.get('step_rate_hz', float('nan')):.1f} steps/s, "
        f"{sim.get('realtime_factor', float('nan')):.2f}x real time)",
        "  scheduling       "
        + ", ".join(f"{k} {v}" for k, v in policies.items())
        + _not_granted(args, policies.values()),
    ]
    if tracked.crowded:
        lines.append(
            f"  ROS domain       {tracked.crowded} during the run: another run or a driver on this "
            "domain (ROS_DOMAIN_ID), whose states and commands mixed with this run's; the figures "
            "below are not this run's alone"
        )
    if steal:
        lines.append(
            f"  host             the hypervisor took {steal['steal_ms']['cpu']:.0f} ms of CPU time from this "
            "machine during the run (steal; 0 on a machine of its own)"
        )
    line = tracking_line(
        tracked,
        ctrl.get("targets_received", 0),
        ctrl.get("target_pauses", 0),
        ctrl.get("target_drops", 0),
        ctrl.get("targets_rejected", 0),
    )
    if line:
        lines.append(line)

    def ms(d: dict[str, Any], k: str) -> str:
        v = d.get(k)
        return "n/a" if v is None else f"{v:.3f}"

    lines += [
        f"  latency (ms)     state->command p50 {ms(lat, 'p50_ms')}  p90 {ms(lat, 'p90_ms')}  p99 "
        f"{ms(lat, 'p99_ms')}"
        f"  max {ms(lat, 'max_ms')}",
        f"  compute (ms)     p50 {ms(comp, 'p50_ms')}  p99 {ms(comp, 'p99_ms')}"
        "  (in the node: the target's reference and the controller)",
        "  step (ms, p50)   "
        + "  ".join(f"{name.replace('_', ' ')} {part['p50_ms']:.3f}" for name, part in parts.items()),
        f"  commands         received {sim.get('commands_received', '?')}, late steps "
        f"{sim.get('late_steps', '?')}{_share(sim.get('late_steps'), sim.get('steps'))} (in "
        f"{sim.get('late_runs', '?')} runs, longest {sim.get('longest_late_run', '?')})"
        f"{_given_up_text(sim.get('skipped_ticks'), sim.get('overruns'))},"
        f" steps on safe torque {sim.get('missing_command_steps', '?')}, rejected "
        f"{sim.get('rejected_commands', '?')}",
        f"  controller       watchdog {watchdog_summary(ctrl)}, refused states "
        f"{_counts_text(ctrl.get('rejected'))},"
        f" fallback commands {ctrl.get('fallback_commands', '?')}, saturated "
        f"{ctrl.get('saturated_commands', '?')}"
        f"{_backlog_text(ctrl.get('backlog_skipped'), ctrl.get('behind_skipped'))}"
        f"{_prediction_text(ctrl.get('predicted_commands'))}"
        f"{_delay_text(ctrl.get('measured_delay_ms'))}",
        f"  logs             {out}",
    ]
    print("\n".join(lines), flush=True)
    return ending


def _prediction_text(in_flight: Any) -> str:
    """``, each state predicted over 4 commands in flight`` where the controller predicts the
    delay (``predict_delay`` with a ``command_delay`` over one period), else nothing."""
    if not isinstance(in_flight, int) or in_flight <= 0:
        return ""
    return f", each state predicted over {in_flight} commands in flight"


def _delay_text(delay_ms: Any) -> str:
    """``, the efforts show each command 1 ms after its state`` where the controller read the delay
    from the states' efforts (``measured_delay_ms``, ``core/delay_estimate.py``), else nothing."""
    if not isinstance(delay_ms, int | float) or not math.isfinite(delay_ms):
        return ""
    return f", the efforts show each command {delay_ms:g} ms after its state"


def _share(count: Any, total: Any) -> str:
    """`` = 0.35 %`` of ``total`` steps, or nothing where either is missing."""
    if not isinstance(count, int | float) or not isinstance(total, int | float) or total <= 0:
        return ""
    return f" = {100.0 * count / total:.2f} %"


def _given_up_text(ticks: Any, overruns: Any) -> str:
    """``, 1428 ticks given up (28 times over 50 ms behind: no step ran at them)`` where the realtime
    simulator restarted its pacing (``overruns``) and skipped the ticks it had missed
    (``skipped_ticks``): the late steps count the steps run only, the benchmark these ticks too
    (a review found 74.5 % late reported where 80.2 % of the ticks were); nothing otherwise."""
    if not (isinstance(ticks, int) and ticks > 0):
        return ""
    times = f"{overruns} time{'s' if overruns != 1 else ''}" if isinstance(overruns, int) else "?"
    return (
        f", {ticks} tick{'s' if ticks != 1 else ''} given up ({times} over 50 ms behind: no step ran at them)"
    )


def _backlog_text(skipped: Any, behind: Any = 0) -> str:
    """``, 17 queued states skipped catching up after a stall`` where the controller process was
    away (stopped or descheduled) and took the newest of the states queued meanwhile
    (``backlog_skipped``), ``, 40 skipped falling behind`` where it took the newest after handling
    one for longer than a period (``behind_skipped``; ``core/backlog.py``); nothing otherwise."""
    text = ""
    if isinstance(skipped, int) and skipped > 0:
        text += f", {skipped} queued state{'s' if skipped != 1 else ''} skipped catching up after a stall"
    if isinstance(behind, int) and behind > 0:
        text += f", {behind} skipped falling behind"
    return text


def _counts_text(counts: Any) -> str:
    """``none`` or ``stale 3, non_finite 1`` from a ``{reason: count}`` mapping (``?`` if missing)."""
    if not isinstance(counts, Mapping):
        return "?"
    nonzero = [f"{k} {v}" for k, v in counts.items() if v]
    return ", ".join(nonzero) if nonzero else "none"


def _not_granted(args: argparse.Namespace, policies: Iterable[str]) -> str:
    """What was asked of the nodes' scheduling and not granted (a node's log says why), or nothing."""
    got = list(policies)
    notes = []
    if args.rt_priority > 0 and not all(p.startswith("fifo:") for p in got):
        notes.append(f"SCHED_FIFO {args.rt_priority}")
    if parse_cpu_latency(args.cpu_latency_us) is not None and not all("cpu_latency:" in p for p in got):
        notes.append(f"a CPU latency of {args.cpu_latency_us} µs")
    return f" (asked for {' and '.join(notes)}: not granted, see the nodes' logs)" if notes else ""


if __name__ == "__main__":
    raise SystemExit(main())
