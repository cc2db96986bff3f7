"""Target inputs per controller: which topics a controller listens to and how they become its reference.

The controller node asks :func:`create_target_source` for the source registered under the
controller's name; a source creates its subscriptions on the node and, for every accepted joint
state, returns the reference to pass to ``Controller.compute``. A source registers itself,
e.g.::

    @register_target_source("achd_rnea")
    class PoseTargetSource(TrackedSource[PoseTargetTracker]):
        def __init__(self, node, controller): ...   # subscribe to ~/target_pose
        def _on_pose(self, msg): ...                 # parse, check, self.tracker.submit(pose)

A source turns messages into numpy data and checks their fields; what the reference is, state
by state, is decided by its tracker in :mod:`~..core.target_tracking` (no ROS): a message
only submits a *pending* target, which takes effect at the stamp of a later joint state (the next,
or for a joint or frame target within 10 ms of the last one planned, the first 10 ms on), so the
reference depends only on the state stream (deterministic in lockstep).

Controllers without a registered source hold ``controller.hold_reference`` of the first state.

Registered here:

* ``gravity_comp``: none.
* ``computed_torque``: ``~/joint_target`` (JointState), ``~/joint_trajectory`` (JointTrajectory).
* ``achd_rnea``: ``~/target_pose`` (PoseStamped in the model's base frame).
* ``qpid``, ``hqpid``: ``~/<task>/target`` (PoseStamped, base frame) per Cartesian task and
  ``~/joint_target`` (JointState, by name) for the posture task(s).

Every message is validated when it arrives (a trajectory's segment from the start again when it
takes effect): a refused one is counted in ``targets_rejected``, logged and leaves the active
target unchanged. Refusals are logged at most once a second for each kind of refusal
(:func:`refusal_kind`), so another reason is logged at once however many came just before. Refused
here, as a message: malformed or oversized input, a joint named twice, a trajectory of more than
:data:`MAX_TRAJECTORY_POINTS` points, a pose in another frame. Refused by the core's checks once
read into arrays (:mod:`~..core.target_checks`): a joint target or waypoint beyond the joint
limits, a joint target with a non-zero velocity (a held point is at rest), a trajectory whose last
point still moves or with accelerations but no velocities. Refused by the tracker
(:mod:`~..core.target_tracking`): a trajectory whose interpolated motion passes a position or
velocity limit or asks an acceleration beyond what the effort limits allow between its waypoints
(:func:`~..core.trajectory.check_motion`, :func:`~..core.trajectory.acceleration_limits`), whose
first point at time 0 is not where and how the reference moves
(:data:`~..core.target_tracking.START_TOLERANCE`), or stamped before 0 or more than
:data:`~..core.target_tracking.MAX_START_DELAY` ahead. A pose or position target is refused when
its frame cannot reach it (:class:`~..core.reach.Reach`: farther from the circle joint_1 turns the
next joint's origin on than the rest of the chain reaches); for ``qpid`` / ``hqpid`` also when it
lies below the floor barrier's plane (:meth:`~..core.qp.constraints.FloorBarrier.check_target`).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Any, Generic, TypeVar, cast

import numpy as np
from geometry_msgs.msg import PoseStamped
from rclpy.exceptions import InvalidTopicNameException
from rclpy.node import Node
from rclpy.qos import QoSProfile
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import JointState as JointStateMsg
from trajectory_msgs.msg import JointTrajectory as JointTrajectoryMsg

from ..core.controllers import HQPID, QPID, AchdRnea, ComputedTorque, Controller, PoseReference
from ..core.controllers.cartesian import rotation_from_quaternion
from ..core.errors import ConfigError, StateError, TargetError
from ..core.reach import Reach
from ..core.robot import RobotModel
from ..core.safety import JointNameMap
from ..core.target_checks import base_frame, check_joint_target, check_trajectory_points
from ..core.target_tracking import (
    JointTargetTracker,
    PoseTargetTracker,
    TargetTracker,
    TaskTarget,
    TaskTargetTracker,
    TrajectoryPoints,
)
from ..core.types import JointState
from ..core.validation import FloatArray, as_vector
from .common import ThrottledLog
from .conversions import stamp_to_ns
from .wire import trajectory_sizes

TARGET_QOS = QoSProfile(depth=10)
MsgT = TypeVar("MsgT")

MAX_TRAJECTORY_POINTS = 2_000
"""Most points a ``~/joint_trajectory`` may have. Everything a trajectory costs runs on the control
thread, linear in the points (7 joints, positions, velocities and accelerations, a busy 2-core
host): rclpy's conversion of the message ~6 µs a point (2 000: 12 ms, 10 000: 61 ms), the checks
in the callback ~1–3 µs (~3 µs when every quintic segment runs near a limit), the build at
activation ~1–3 µs. 2 000 points then take ~16–28 ms, below the simulator's 50 ms command
timeout; 10 000 took ~100–150 ms. The count is read from the
message's bytes before any conversion (:func:`~.wire.trajectory_sizes`), so a larger count
costs nothing to refuse; so is the number of joint names (:data:`MAX_TRAJECTORY_NAMES`) and the
message's size (:data:`MAX_TRAJECTORY_BYTES`)."""

MAX_TRAJECTORY_NAMES = 64
"""Most ``joint_names`` a ``~/joint_trajectory`` may have (the arm's and, say, a gripper's): a
million names in one message take 93 ms to convert before they could be refused."""

MAX_TARGET_BYTES = 65_536
"""Largest serialized ``~/joint_target``, ``~/target_pose`` or ``~/<task>/target`` taken (bytes),
refused before any conversion: a Gen3 joint target is ~190-250 bytes, a pose ~85. Converted first, a
joint target naming a million joints held the control thread for ~0.7–1.8 s before it could be
refused, and a 50 MB ``frame_id`` for 86 ms."""

MAX_TRAJECTORY_BYTES = 8_000_000
"""Largest serialized ``~/joint_trajectory`` taken (bytes): 2 000 points with positions,
velocities, accelerations and efforts for 64 joints take ~4.2 MB."""


MAX_REFUSAL_KINDS = 64
"""Kinds of refusal (:func:`refusal_kind`) a source throttles apart; those beyond share one
throttle. The messages of this package make a few dozen kinds at most."""

#: A refusal message's values: quoted names, lists, numbers (with the digits of ``joint_7``).
_VALUES = re.compile(r"'[^']*'|\"[^\"]*\"|\[[^\]]*\]|[-+]?\d+(?:\.\d*)?(?:e[-+]?\d+)?")


def refusal_kind(message: str) -> str:
    """What a refusal ``message`` says with its values left out (each a ``…``): the input it is
    about and the rule it broke, e.g. ``joint target: non-finite position at joint_… (…)``.
    Refusals of one kind share a throttle; the values of a flood of them may vary."""
    return _VALUES.sub("…", message)


class TargetSource(ABC):
    """Turns target messages into one controller's reference.

    Attributes:
        node: the controller node (for subscriptions and logging).
        controller: the controller the references are for.
        received: target messages accepted.
        rejected: target messages refused (malformed, out of limits, wrong joints).
    """

    def __init__(self, node: Node, controller: Controller[Any]) -> None:
        self.node = node
        self.controller = controller
        self.received = 0
        self.rejected = 0
        self.last_error = ""
        self.log = ThrottledLog(node.get_logger())  # refusals, at most one a second per kind
        self._refusal_kinds: set[str] = set()  # the kinds of refusal throttled apart so far

    @abstractmethod
    def reference(self, state: JointState, plan: bool = True) -> Any:
        """The reference for ``state`` (controller joint order; ``state.stamp`` in s); ``plan``
        false: a joint or frame target due there is planned by :meth:`take_due` instead."""

    def take_due(self, state: JointState) -> bool:
        """Plan what :meth:`reference` (``plan`` false) left at ``state``; whether anything was
        taken. The node calls it once the command is out, so a plan (~0.3–0.6 ms) does not hold
        that command up; the references from the next state on are the same as planned inside
        :meth:`reference` (``core/target_tracking.py``, ``TargetTracker.take_due``)."""
        return False

    def pause(self, since: float, until: float) -> bool:
        """No torque was computed from ``since`` to ``until`` (s, the state clock: a fallback, the arm
        held on the safe torque): a reference that runs in time takes up where it stood, not where
        it would be by now. Returns whether a target not yet started was held up too
        (``TargetTracker.pause``); none here."""
        return False

    def reset(self, clock_reset: bool = False) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Forget the active target (after a stop, or a simulator restart: ``clock_reset``, when
        one stamped to start later is dropped too): hold where the arm is next."""

    def diagnostics(self) -> dict[str, Any]:
        """Values for /diagnostics."""
        return {
            "targets_received": self.received,
            "targets_rejected": self.rejected,
            "target": self.describe(),
            "target_last_error": self.last_error,
        }

    def describe(self) -> str:
        """One word on what is tracked."""
        return "hold"

    def _accept(self, topic: str, message: str) -> None:
        """Count a target that passed the message's checks and log ``message`` (info, at most once
        a second per ``topic``: a 1 kHz stream of targets logs one line a second, saying how many it
        held back). The tracker takes it at the next state and may still refuse it (an error)."""
        self.received += 1
        self.log.info(f"received {topic}", message)

    def _refuse(self, message: str) -> None:
        """Count a refused target and log ``message``, its reason (an error, at most once a second
        for each :func:`refusal_kind`: a flood of one refusal logs one line a second, saying how
        many it held back, and a refusal of another kind goes out at once)."""
        self.rejected += 1
        self.last_error = message
        kind = refusal_kind(message)
        if kind not in self._refusal_kinds and len(self._refusal_kinds) >= MAX_REFUSAL_KINDS:
            kind = "other"  # a sender whose refusals vary without end must not grow the log's tables
        self._refusal_kinds.add(kind)
        self.log.error(f"rejected: {kind}", f"target rejected: {message}")

    def _message(
        self, msg: MsgT | bytes, msg_type: type[MsgT], what: str, most_bytes: int = MAX_TARGET_BYTES
    ) -> MsgT | None:
        """``msg`` as a message of ``msg_type``: the bytes of a raw subscription converted, or
        ``None`` after refusing them (beyond ``most_bytes``, or unreadable). A raw subscription
        gets whatever a publisher sent, and an exception out of a callback would end the
        executor's spin and leave the arm without commands."""
        if not isinstance(msg, bytes):
            return msg
        if len(msg) > most_bytes:
            self._refuse(f"{what}: {len(msg)} bytes, more than the {most_bytes} allowed")
            return None
        try:
            return cast(MsgT, deserialize_message(msg, msg_type))
        except Exception as exc:  # rclpy raises RMWError on bytes that are no such message
            self._refuse(f"{what}: unreadable message ({len(msg)} bytes): {exc}")
            return None


def check_frame(msg: PoseStamped, expected: str, what: str) -> None:
    """Refuse a pose whose ``header.frame_id`` is not ``expected`` (no TF lookup here)."""
    if msg.header.frame_id != expected:
        got = msg.header.frame_id
        shown = repr(got) if len(got) <= 64 else f"{got[:64]!r}… ({len(got)} characters)"
        raise TargetError(f"{what}: header.frame_id must be {expected!r}, got {shown}")


def pose_position(msg: PoseStamped, what: str) -> FloatArray:
    """The position of ``msg`` (m), finite, or :class:`TargetError`."""
    p = msg.pose.position
    return as_vector(f"{what} position", (p.x, p.y, p.z), 3, error=TargetError)


def check_unused_half(msg: PoseStamped, unused: str, what: str) -> None:
    """Refuse a NaN or inf in the half of a pose that a task does not use (``"position"`` or
    ``"orientation"``): the sender is broken, and the half the task would take is no more
    trustworthy than the other."""
    p, o = msg.pose.position, msg.pose.orientation
    values = (p.x, p.y, p.z) if unused == "position" else (o.x, o.y, o.z, o.w)
    if not np.isfinite(values).all():
        raise TargetError(
            f"{what}: non-finite {unused} {values} (unused by this task, but a sign of a broken sender)"
        )


def pose_reference(msg: PoseStamped, what: str) -> PoseReference:
    """``msg`` as a validated :class:`PoseReference` (unit-norm quaternion required)."""
    position = pose_position(msg, what)  # its error names ``what`` already
    o = msg.pose.orientation
    try:
        return PoseReference.from_position_quaternion(position, (o.x, o.y, o.z, o.w))
    except TargetError as exc:
        raise TargetError(f"{what}: {exc}") from None


def pose_rotation(msg: PoseStamped, what: str) -> FloatArray:
    """The orientation of ``msg`` as a rotation matrix (unit-norm quaternion required)."""
    o = msg.pose.orientation
    try:
        return rotation_from_quaternion((o.x, o.y, o.z, o.w))
    except TargetError as exc:
        raise TargetError(f"{what}: {exc}") from None


def joint_positions(
    robot: RobotModel, names_map: JointNameMap, msg: JointStateMsg, what: str
) -> tuple[FloatArray, FloatArray | None]:
    """Positions (and velocities if given) of ``msg`` in model order, checked as a target to hold
    (:func:`~..core.target_checks.check_joint_target`: finite, within limits, velocities zero).
    A JointState carries no accelerations; its ``effort`` is ignored.
    """
    q = np.empty(robot.n)
    names_map.take(msg.name, np.asarray(msg.position, dtype=np.float64), q, "position", what)
    v = None
    if len(msg.velocity):
        v = np.empty(robot.n)
        names_map.take(msg.name, np.asarray(msg.velocity, dtype=np.float64), v, "velocity", what)
    check_joint_target(robot, q, v, what)
    return q, v


def _point_rows(points: Sequence[Any], field: str, width: int, required: bool) -> FloatArray | None:
    """Field ``field`` of every point as an ``m × width`` array; ``None`` if no point has it (a
    :class:`TargetError` if only some have it, or a wrong number of values).

    One Python-level pass per field (``map``), then one copy: rclpy stores the numbers as
    ``array('d')``, whose bytes join into one buffer.
    """
    rows = list(map(attrgetter(field), points))
    sizes = np.fromiter(map(len, rows), np.intp, len(rows))
    wrong = np.flatnonzero((sizes != width) & ((sizes != 0) | required))
    if wrong.size:
        k = int(wrong[0])
        raise TargetError(f"trajectory point {k}: {sizes[k]} {field} for {width} joints")
    if not sizes.any():
        return None
    if not sizes.all():
        # Neither form can be interpolated as sent: dropping them for every point would silently
        # run another motion (velocities estimated in place of those given).
        k = int(np.flatnonzero(sizes == 0)[0])
        raise TargetError(
            f"trajectory point {k}: no {field} while other points have them; give them for every "
            "point or for none"
        )
    try:
        flat = np.frombuffer(b"".join(rows), dtype=np.float64)
    except TypeError:  # not buffers (a stand-in message built from lists)
        flat = np.array(rows, dtype=np.float64).reshape(-1)
    return flat.reshape(len(rows), width)


def _angles(q: FloatArray) -> str:
    """``[0.500, 0.260, …]``: joint angles (rad) for a log line."""
    return "[" + ", ".join(f"{x:.3f}" for x in q.tolist()) + "]"


def _metres(p: FloatArray) -> str:
    """``(0.450, 0.150, 0.400)``: a position (m) for a log line."""
    return "(" + ", ".join(f"{x:.3f}" for x in p.tolist()) + ")"


def too_many_names(m: int) -> str:
    """The refusal of a trajectory naming ``m`` joints, more than :data:`MAX_TRAJECTORY_NAMES`."""
    return f"trajectory: {m} joint names, more than the {MAX_TRAJECTORY_NAMES} allowed"


def too_many_points(m: int) -> str:
    """The refusal of a trajectory of ``m`` points, more than :data:`MAX_TRAJECTORY_POINTS`."""
    return (
        f"trajectory: {m} points, more than the {MAX_TRAJECTORY_POINTS} allowed (converting and checking "
        "them would hold up the control loop); send it in parts"
    )


def trajectory_points(
    robot: RobotModel, names_map: JointNameMap, msg: JointTrajectoryMsg
) -> TrajectoryPoints:
    """The points of a non-empty ``msg`` in model order, checked as waypoints
    (:func:`~..core.target_checks.check_trajectory_points`: accelerations only with velocities,
    all finite, within the joint limits, the last point at rest).

    Read as whole arrays (no per-point Python beyond reading the fields): at most
    :data:`MAX_TRAJECTORY_POINTS` points and :data:`MAX_TRAJECTORY_NAMES` joint names (also
    where the bytes' sizes were not read first: big-endian ones), ``len(joint_names)`` positions
    per point and as many
    velocities and accelerations for every point or for none, each joint named once.

    Raises:
        StateError: a joint missing or named twice.
        TargetError: anything else (the message names the point).
    """
    points = msg.points
    m, width = len(points), len(msg.joint_names)
    if m > MAX_TRAJECTORY_POINTS:
        raise TargetError(too_many_points(m))
    if width > MAX_TRAJECTORY_NAMES:
        raise TargetError(too_many_names(width))
    idx = names_map.indices(msg.joint_names, "trajectory joint_names")
    stamps = list(map(attrgetter("time_from_start"), points))
    times = np.fromiter(map(attrgetter("sec"), stamps), np.float64, m)
    times += np.fromiter(map(attrgetter("nanosec"), stamps), np.float64, m) * 1e-9
    rows = _point_rows(points, "positions", width, required=True)
    assert rows is not None
    vel = _point_rows(points, "velocities", width, required=False)
    acc = _point_rows(points, "accelerations", width, required=False)
    waypoints = TrajectoryPoints(
        times, rows[:, idx], None if vel is None else vel[:, idx], None if acc is None else acc[:, idx]
    )
    check_trajectory_points(robot, waypoints)
    return waypoints


TargetFactory = Callable[[Node, Controller[Any]], TargetSource]
CtrlT = TypeVar("CtrlT", bound=Controller[Any])


def _expect(controller: Controller[Any], *kinds: type[CtrlT]) -> CtrlT:
    """``controller`` as one of ``kinds``, the controllers a target source is written for."""
    if not isinstance(controller, kinds):
        raise TypeError(
            f"a target source for {[k.__name__ for k in kinds]} was given a {type(controller).__name__}"
        )
    return controller


#: Target source factory by controller name (the value of the ``controller`` parameter).
TARGET_SOURCES: dict[str, TargetFactory] = {}


def register_target_source(*controller_names: str) -> Callable[[TargetFactory], TargetFactory]:
    """Class decorator registering a :class:`TargetSource` for the named controllers."""

    def decorate(factory: TargetFactory) -> TargetFactory:
        for name in controller_names:
            TARGET_SOURCES[name] = factory
        return factory

    return decorate


def create_target_source(controller_name: str, node: Node, controller: Controller[Any]) -> TargetSource:
    """The registered source for ``controller_name`` (:class:`HoldSource` if none)."""
    return TARGET_SOURCES.get(controller_name, HoldSource)(node, controller)


class HoldSource(TargetSource):
    """No target topics: the controller holds ``hold_reference`` of the first state it sees."""

    def __init__(self, node: Node, controller: Controller[Any]) -> None:
        super().__init__(node, controller)
        self._held: Any = None
        self._have = False

    def reference(self, state: JointState, plan: bool = True) -> Any:
        if not self._have:
            self._held = self.controller.hold_reference(state)
            self._have = True
        return self._held

    def reset(self, clock_reset: bool = False) -> None:
        self._have = False


@register_target_source("gravity_comp")
class NoTargetSource(HoldSource):
    """Gravity compensation takes no target."""

    def describe(self) -> str:
        return "none"


TrackerT = TypeVar("TrackerT", bound=TargetTracker)


class TrackedSource(TargetSource, Generic[TrackerT]):
    """A source whose reference is decided by a tracker of :mod:`~..core.target_tracking`: the
    source parses and checks messages and submits them; the tracker does the rest."""

    tracker: TrackerT

    def reference(self, state: JointState, plan: bool = True) -> Any:
        return self.tracker.reference(state, plan)

    def take_due(self, state: JointState) -> bool:
        return self.tracker.take_due(state)

    def pause(self, since: float, until: float) -> bool:
        return self.tracker.pause(since, until)

    def reset(self, clock_reset: bool = False) -> None:
        self.tracker.reset(clock_reset)

    def describe(self) -> str:
        return self.tracker.describe()


@register_target_source("computed_torque")
class JointTargetSource(TrackedSource[JointTargetTracker]):
    """``~/joint_target`` (JointState: position; velocity empty or zero) and ``~/joint_trajectory``
    (JointTrajectory; ``header.stamp`` zero: start at the next joint state; no points: stop),
    followed by a :class:`~..core.target_tracking.JointTargetTracker` (approaches, trajectory
    starts, stops).

    Refused on arrival: malformed or oversized messages (:func:`trajectory_points`), positions
    outside the model's joint limits at the waypoints, speeds above its velocity limits, a last
    point that still moves (:func:`~..core.target_checks.check_trajectory_points`); the tracker
    refuses a motion that passes a limit between the waypoints, and a stamp before 0 or on
    another clock.
    """

    def __init__(self, node: Node, controller: Controller[Any]) -> None:
        super().__init__(node, controller)
        self.robot = controller.robot
        self.map = JointNameMap(self.robot.joint_names)
        self.tracker = JointTargetTracker(
            _expect(controller, ComputedTorque),
            refuse=self._refuse,
            warn=lambda message: self.log.warning("stop", message),
        )
        node.create_subscription(JointStateMsg, "~/joint_target", self._on_joint_target, TARGET_QOS, raw=True)
        node.create_subscription(
            JointTrajectoryMsg, "~/joint_trajectory", self._on_trajectory, TARGET_QOS, raw=True
        )

    def _on_joint_target(self, msg: JointStateMsg | bytes) -> None:
        if (target := self._message(msg, JointStateMsg, "joint target")) is None:
            return
        try:
            q, _ = joint_positions(self.robot, self.map, target, "joint target")
        except (StateError, TargetError) as exc:
            self._refuse(str(exc))
            return
        self._accept("joint_target", f"joint target received: {_angles(q)} rad")
        self.tracker.submit_target(q)

    def _on_trajectory(self, msg: JointTrajectoryMsg | bytes) -> None:
        """A trajectory, as the subscription's bytes (refused by its size, joint names and point
        count before any conversion) or as a message."""
        if isinstance(msg, bytes) and len(msg) <= MAX_TRAJECTORY_BYTES:
            sizes = trajectory_sizes(msg, MAX_TRAJECTORY_NAMES)
            if sizes is not None and sizes[0] > MAX_TRAJECTORY_NAMES:
                self._refuse(too_many_names(sizes[0]))
                return
            if sizes is not None and sizes[1] is not None and sizes[1] > MAX_TRAJECTORY_POINTS:
                self._refuse(too_many_points(sizes[1]))
                return
        if (trajectory := self._message(msg, JointTrajectoryMsg, "trajectory", MAX_TRAJECTORY_BYTES)) is None:
            return
        msg = trajectory
        if not msg.points:
            self._accept(
                "joint_trajectory",
                "empty trajectory received: stop (a reference at rest stays where it is held)",
            )
            self.tracker.submit_stop()
            return
        try:
            self.tracker.submit_trajectory(
                trajectory_points(self.robot, self.map, msg),
                stamp_to_ns(msg.header.stamp) * 1e-9,
                now=self.node.get_clock().now().nanoseconds * 1e-9,
            )
        except (StateError, TargetError) as exc:
            self._refuse(str(exc))
            return
        self._accept(
            "joint_trajectory",
            f"trajectory received: {len(msg.points)} point{'s' if len(msg.points) != 1 else ''}",
        )


@register_target_source("achd_rnea")
class PoseTargetSource(TrackedSource[PoseTargetTracker]):
    """``~/target_pose`` (PoseStamped): the tool pose in the model's base frame, followed by a
    :class:`~..core.target_tracking.PoseTargetTracker` (approached from the current reference,
    then held until replaced).

    ``header.frame_id`` must name the base frame (no TF here); the quaternion must be near unit
    norm (an all-zero default orientation is refused), every number finite and the position
    within the controlled frame's reach (:class:`Reach`), clear of its full stretch
    (:meth:`Reach.check_clear_of_stretch`: 15 mm inside the reach bound) and not below the
    floor's plane (:meth:`AchdRnea.check_target_height`, ``achd_rnea.floor_height``).
    """

    def __init__(self, node: Node, controller: Controller[Any]) -> None:
        super().__init__(node, controller)
        ctrl = self.achd = _expect(controller, AchdRnea)
        self.frame = base_frame(controller.robot)
        self.reach = Reach.of(controller.robot, ctrl.config.frame)
        self.tracker = PoseTargetTracker(
            ctrl, refuse=self._refuse, warn=lambda message: self.log.warning("slow", message)
        )
        node.create_subscription(PoseStamped, "~/target_pose", self._on_pose, TARGET_QOS, raw=True)

    def _on_pose(self, msg: PoseStamped | bytes) -> None:
        if (pose := self._message(msg, PoseStamped, "target pose")) is None:
            return
        try:
            check_frame(pose, self.frame, "target pose")
            ref = pose_reference(pose, "target pose")
            self.reach.check(ref.position, "target pose")
            self.reach.check_clear_of_stretch(ref.position, "target pose")
            self.achd.check_target_height(ref.position, "target pose")
        except TargetError as exc:
            self._refuse(str(exc))
            return
        self._accept("target_pose", f"target pose received: position {_metres(ref.position)} m")
        self.tracker.submit(ref)


@register_target_source("qpid", "hqpid")
class TaskTargetSource(TrackedSource[TaskTargetTracker]):
    """One target topic per task of a QP controller, followed by a
    :class:`~..core.target_tracking.TaskTargetTracker` (each task approached from its current
    reference; every task holds its start value until then).

    * ``~/<task>/target`` (PoseStamped, base frame) for each ``pose``, ``position`` or
      ``orientation`` task: a pose task takes the whole pose, a position task only the position
      (the orientation is ignored, so a default all-zero quaternion is fine, but a NaN or inf
      there is refused), an orientation task only the orientation (likewise). A position farther
      than the task frame's reach, or below the floor barrier's plane (``floor.height``), is refused.
    * ``~/joint_target`` (JointState by name: positions; velocities empty or zero) for every
      ``posture`` task; positions outside the joint limits are refused.
    """

    def __init__(self, node: Node, controller: Controller[Any]) -> None:
        super().__init__(node, controller)
        self.robot = controller.robot
        self.frame = base_frame(self.robot)
        self.map = JointNameMap(self.robot.joint_names)
        qp = cast("QPID | HQPID", _expect(controller, QPID, HQPID))  # typed as their common base
        self.tracker = TaskTargetTracker(
            qp, refuse=self._refuse, warn=lambda message: self.log.warning("slow", message)
        )
        #: Each task's kind (``pose``, ``position``, ``orientation``, ``posture``).
        self.kinds = self.tracker.kinds
        #: The reach of each task that takes a position (pose, position).
        self.reach = {
            name: Reach.of(self.robot, task.frame)
            for name, task in self.tracker.frame_tasks.items()
            if task.kind in ("pose", "position")
        }
        self.floor = qp.floor_barrier  # refuses positions below its plane
        for name in self.tracker.frame_tasks:
            topic = f"~/{name}/target"
            try:
                node.create_subscription(
                    PoseStamped, topic, lambda msg, task=name: self._on_pose(task, msg), TARGET_QOS, raw=True
                )
            except InvalidTopicNameException as exc:
                raise ConfigError(
                    f"{controller.name}.tasks: task name {name!r} is not a valid topic name: {exc}"
                ) from None
        if self.tracker.posture_tasks:
            node.create_subscription(
                JointStateMsg, "~/joint_target", self._on_joint_target, TARGET_QOS, raw=True
            )

    def _on_pose(self, task: str, msg: PoseStamped | bytes) -> None:
        what = f"{task} target"
        if (pose_msg := self._message(msg, PoseStamped, what)) is None:
            return
        try:
            check_frame(pose_msg, self.frame, what)
            kind = self.kinds[task]
            target: TaskTarget
            if kind == "position":
                check_unused_half(pose_msg, "orientation", what)
                target = position = pose_position(pose_msg, what)
            elif kind == "orientation":
                check_unused_half(pose_msg, "position", what)
                target, position = pose_rotation(pose_msg, what), None
            else:
                target = pose = pose_reference(pose_msg, what)
                position = pose.position
            if position is not None:
                self.reach[task].check(position, what)
                if self.floor is not None:
                    self.floor.check_target(position, what)
        except TargetError as exc:
            self._refuse(str(exc))
            return
        self._accept(
            task, f"{what} received" + ("" if position is None else f": position {_metres(position)} m")
        )
        self.tracker.submit(task, target)

    def _on_joint_target(self, msg: JointStateMsg | bytes) -> None:
        if (target := self._message(msg, JointStateMsg, "joint target")) is None:
            return
        try:
            q, _ = joint_positions(self.robot, self.map, target, "joint target")  # velocities 0
        except (StateError, TargetError) as exc:
            self._refuse(str(exc))
            return
        self._accept("joint_target", f"posture joint target received: {_angles(q)} rad")
        self.tracker.submit_posture(q)
