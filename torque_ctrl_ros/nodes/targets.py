"""Target inputs per controller: which topics a controller listens to and how they become its reference.

The controller node asks :func:`create_target_source` for the source registered under the
controller's name; a source creates its subscriptions on the node and, for every accepted joint
state, returns the reference to pass to ``Controller.compute``. A source registers itself,
e.g.::

    @register_target_source("achd_rnea")
    class PoseTargetSource(TargetSource):
        def __init__(self, node, controller): ...   # subscribe to ~/target_pose
        def reference(self, state): ...

Message callbacks only store a *pending* target; it takes effect in the next :meth:`reference`
call, at the time of that joint state's stamp. The reference therefore depends only on the state
stream (deterministic in lockstep), never on when a callback happened to run.

Controllers without a registered source hold ``controller.hold_reference`` of the first state.

Registered here:

* ``gravity_comp``: none.
* ``computed_torque``: ``~/joint_target`` (JointState), ``~/joint_trajectory`` (JointTrajectory).
* ``achd_rnea``: ``~/target_pose`` (PoseStamped in the model's base frame).
* ``qpid``, ``hqpid``: ``~/<task>/target`` (PoseStamped, base frame) per Cartesian task and
  ``~/joint_target`` (JointState, by name) for the posture task(s).

Every message is validated in its callback (a trajectory's timing and its segment from the start
state again when it takes effect): a refused one is counted in ``targets_rejected``, logged
(throttled) and leaves the active target unchanged. Refused besides malformed input: a joint
named twice; a joint target with a non-zero velocity (a held point is at rest); a trajectory of
more than :data:`MAX_TRAJECTORY_POINTS` points, whose interpolated motion passes a position or
velocity limit or asks an acceleration beyond what the effort limits allow between its waypoints
(:func:`check_motion`, :func:`~..core.trajectory.acceleration_limits`), whose last point still
moves, whose first point at time 0 is not where and how the reference moves
(:data:`START_TOLERANCE`), or stamped before 0 or more than :data:`MAX_START_DELAY` ahead; a pose
or position target the frame cannot reach (:class:`~..core.reach.Reach`: farther from the circle
joint_1 turns the next joint's origin on than the rest of the chain reaches).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Any, TypeVar

import numpy as np
from geometry_msgs.msg import PoseStamped
from rclpy.exceptions import InvalidTopicNameException
from rclpy.node import Node
from rclpy.qos import QoSProfile
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import JointState as JointStateMsg
from trajectory_msgs.msg import JointTrajectory as JointTrajectoryMsg

from ..core.approach import JointApproachPlanner, PoseApproach, PoseApproachPlanner
from ..core.constrained_dynamics import AXIS_NAMES
from ..core.controllers import HQPID, QPID, AchdRnea, ComputedTorque, Controller, PoseReference
from ..core.errors import ConfigError, StateError, TargetError
from ..core.qp.tasks import CartesianTarget, FrameTask
from ..core.reach import Reach
from ..core.robot import RobotModel
from ..core.safety import MAX_ANGLE, JointNameMap
from ..core.trajectory import JointTrajectory, check_motion
from ..core.types import JointReference, JointState
from ..core.validation import FloatArray, as_vector
from .common import ThrottledLog
from .conversions import stamp_to_ns
from .wire import trajectory_sizes

TARGET_QOS = QoSProfile(depth=10)

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
million names in one message had taken 93 ms of conversion before it could be refused."""

MAX_TRAJECTORY_BYTES = 8_000_000
"""Largest serialized ``~/joint_trajectory`` taken (bytes): 2 000 points with positions,
velocities, accelerations and efforts for 64 joints take ~4.2 MB."""

MAX_START_DELAY = 60.0
"""Latest start (s after the node's clock) a trajectory may ask for: a later ``header.stamp`` is
taken for one on another clock (a sender on wall time, ~1.8e9 s, to a node on sim time), which
would otherwise wait for ever."""

START_TOLERANCE = 0.01
"""Farthest (rad, on each joint) a trajectory's first point at ``time_from_start`` 0 may be from
the current reference or the measured position (the nearer of the two, joint by joint) (the value of MoveIt's
``allowed_start_tolerance``, which MoveIt checks against the measured state its first point is
taken from). Such a point is taken at once: 3 rad away on joint_1, the reference had jumped there
and the torques clipped joint by joint had spun joints 3, 5 and 7, which had no error, to 13–16
times their velocity limits. Near the measured position the jump only takes the error down (an
arm lagging its reference under a load the model lacks: 0.044 rad on joint_6 with 20 g more).

Its velocities, if given, must be within :meth:`JointTargetSource.start_tolerances` of the
reference's (a change that steps the computed-torque law's command no more than this position
tolerance does: 0.05 rad/s with ``kp`` 100, ``kd`` 20); the trajectory then starts from the
reference's velocity and acceleration (positions only: always), so they do not step. Taken as
given, a first point with velocity 0 had stepped a reference moving 1.125 rad/s on joint_1 to
rest: −4.6 N·m at once. Given accelerations there are not compared: the first segment blends
from the reference's to the next point's (held to the acceleration bound like any segment).
Refused beyond 1 rad/s² apart, MoveIt's time-optimal trajectories at full acceleration scaling,
which start the wrist at ~10 rad/s² from rest, had been turned away."""


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
        self.log = ThrottledLog(node.get_logger())  # refusals, at most one a second

    @abstractmethod
    def reference(self, state: JointState) -> Any:
        """The reference for ``state`` (controller joint order; ``state.stamp`` in s)."""

    def pause(self, since: float, until: float) -> None:  # noqa: B027 - optional hook, a no-op by default
        """No torque was computed from ``since`` to ``until`` (s, the state clock: a fallback, the arm
        held on the safe torque): a reference that runs in time takes up where it stood, not where
        it would be by now."""

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

    def _refuse(self, message: str) -> None:
        self.rejected += 1
        self.last_error = message
        self.log.error("rejected", f"target rejected: {message}")


def check_joint_limits(robot: RobotModel, q: FloatArray, what: str, v: FloatArray | None = None) -> None:
    """Raise :class:`TargetError` naming the joints of ``q`` (rad) outside the model's position
    limits, or of ``v`` (rad/s) above its velocity limits.

    A joint without position limits (continuous) takes ``|q| <= MAX_ANGLE``: beyond, the
    wrapped error to the target rounds to nothing and the joint would silently lose its
    stiffness. A target velocity no joint can reach only drives every joint into saturation.
    """
    bad = (q < robot.position_lower) | (q > robot.position_upper) | (np.abs(q) > MAX_ANGLE)
    if bad.any():
        names = [robot.joint_names[i] for i in np.flatnonzero(bad)]
        raise TargetError(f"{what}: outside the position limits at {names}")
    if v is not None:
        fast = np.abs(v) > robot.velocity_limit
        if fast.any():
            names = [robot.joint_names[i] for i in np.flatnonzero(fast)]
            raise TargetError(f"{what}: velocity above the joint velocity limits at {names}")


def base_frame(robot: RobotModel) -> str:
    """Name of the model's root body frame (``base_link`` for the Gen3): the frame of pose targets.

    That is the first frame attached to the universe joint after the universe frame itself.
    """
    frames = robot.model.frames
    for k in range(1, len(frames)):
        if frames[k].parentJoint == 0:
            return str(frames[k].name)
    return str(frames[0].name)


def check_frame(msg: PoseStamped, expected: str, what: str) -> None:
    """Refuse a pose whose ``header.frame_id`` is not ``expected`` (no TF lookup here)."""
    if msg.header.frame_id != expected:
        raise TargetError(f"{what}: header.frame_id must be {expected!r}, got {msg.header.frame_id!r}")


def pose_position(msg: PoseStamped, what: str) -> FloatArray:
    """The position of ``msg`` (m), finite, or :class:`TargetError`."""
    p = msg.pose.position
    return as_vector(f"{what} position", (p.x, p.y, p.z), 3, error=TargetError)


def pose_reference(msg: PoseStamped, what: str) -> PoseReference:
    """``msg`` as a validated :class:`PoseReference` (unit-norm quaternion required)."""
    o = msg.pose.orientation
    try:
        return PoseReference.from_position_quaternion(pose_position(msg, what), (o.x, o.y, o.z, o.w))
    except TargetError as exc:
        raise TargetError(f"{what}: {exc}") from None


def pose_rotation(msg: PoseStamped, what: str) -> FloatArray:
    """The orientation of ``msg`` as a rotation matrix (unit-norm quaternion required)."""
    o = msg.pose.orientation
    try:
        return PoseReference.from_position_quaternion(np.zeros(3), (o.x, o.y, o.z, o.w)).rotation
    except TargetError as exc:
        raise TargetError(f"{what}: {exc}") from None


def joint_positions(
    robot: RobotModel, names_map: JointNameMap, msg: JointStateMsg, what: str
) -> tuple[FloatArray, FloatArray | None]:
    """Positions (and velocities if given) of ``msg`` in model order, finite and within limits.

    The velocities, if given, must all be zero: the target is held, a rest point that cannot
    move. A held ``(q, v ≠ 0)`` makes a PD law settle where ``kp·e + kd·(v − q̇) = 0`` with
    ``q̇ = 0``, i.e. at ``q + (kd/kp)·v`` rather than at ``q``. Moving through a point takes a
    trajectory. (A JointState carries no accelerations; its ``effort`` is ignored.)
    """
    q = np.empty(robot.n)
    names_map.take(msg.name, np.asarray(msg.position, dtype=np.float64), q, "position", what)
    v = None
    if len(msg.velocity):
        v = np.empty(robot.n)
        names_map.take(msg.name, np.asarray(msg.velocity, dtype=np.float64), v, "velocity", what)
    if not np.isfinite(q).all() or (v is not None and not np.isfinite(v).all()):
        raise TargetError(f"{what}: non-finite entries")
    check_joint_limits(robot, q, what, v)
    if v is not None and v.any():
        names = [robot.joint_names[i] for i in np.flatnonzero(v)]
        raise TargetError(
            f"{what}: non-zero velocity at {names}; a held target is a rest point, it cannot move "
            "(it would settle off the target): leave velocity empty or zero; to move through a "
            "point, send a trajectory (~/joint_trajectory, computed_torque)"
        )
    return q, v


TrajectoryPoints = tuple[FloatArray, FloatArray, FloatArray | None, FloatArray | None]
"""``(times (m,) s, positions (m × n) rad, velocities rad/s | None, accelerations rad/s² | None)``."""


#: Largest |velocity| (rad/s) accepted at a trajectory's last point.
_END_VELOCITY_TOLERANCE = 1e-6


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
        # Dropped for every point, they had been ignored without a word.
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


def too_many_points(m: int) -> str:
    """The refusal of a trajectory of ``m`` points, more than :data:`MAX_TRAJECTORY_POINTS`."""
    return (
        f"trajectory: {m} points, more than the {MAX_TRAJECTORY_POINTS} allowed (converting and checking "
        "them would hold up the control loop); send it in parts"
    )


def trajectory_points(
    robot: RobotModel, names_map: JointNameMap, msg: JointTrajectoryMsg
) -> TrajectoryPoints:
    """The points of a non-empty ``msg`` in model order, its waypoints within the joint limits.

    Whole-array checks (no per-point Python beyond reading the fields): at most
    :data:`MAX_TRAJECTORY_POINTS` points, ``len(joint_names)`` positions per point and as many
    velocities and accelerations for every point or for none (accelerations only with
    velocities), each joint named once, waypoint
    positions and velocities within :func:`check_joint_limits`, the last point's velocities
    (if given) 0 to 1e-6 rad/s. Times, finiteness and the motion between
    waypoints are left to :class:`JointTrajectory` and :func:`check_motion`.

    Raises:
        StateError: a joint missing or named twice.
        TargetError: anything else (the message names the point).
    """
    points = msg.points
    m, width = len(points), len(msg.joint_names)
    if m > MAX_TRAJECTORY_POINTS:
        raise TargetError(too_many_points(m))
    idx = names_map.indices(msg.joint_names, "trajectory joint_names")
    stamps = list(map(attrgetter("time_from_start"), points))
    times = np.fromiter(map(attrgetter("sec"), stamps), np.float64, m)
    times += np.fromiter(map(attrgetter("nanosec"), stamps), np.float64, m) * 1e-9
    rows = _point_rows(points, "positions", width, required=True)
    assert rows is not None
    pos = rows[:, idx]
    vel = _point_rows(points, "velocities", width, required=False)
    acc = _point_rows(points, "accelerations", width, required=False)
    if acc is not None and vel is None:
        # The interpolation needs both for a quintic; without velocities they had been dropped
        # without a word (a cubic through the positions instead).
        raise TargetError("trajectory: accelerations without velocities; give both, or positions only")
    vel = None if vel is None else vel[:, idx]
    acc = None if acc is None else acc[:, idx]
    bad = (pos < robot.position_lower) | (pos > robot.position_upper) | (np.abs(pos) > MAX_ANGLE)
    if vel is not None:
        bad |= np.abs(vel) > robot.velocity_limit
    first_bad = np.flatnonzero(bad.any(axis=1))
    if first_bad.size:
        k = int(first_bad[0])
        check_joint_limits(robot, pos[k], f"trajectory point {k}", None if vel is None else vel[k])
    # The reference stops at the last point: a velocity given there would step to zero (one
    # ending at a limit while still moving had carried the arm past it). Rounding is let through
    # (ros2_controllers allows 1.2e-7), and so is an acceleration: planners such as MoveIt's
    # time parameterisation end on the final deceleration, and only a feedforward term steps.
    if vel is not None and np.any(np.abs(vel[-1]) > _END_VELOCITY_TOLERANCE):
        raise TargetError(
            f"trajectory: the last point has velocities {vel[-1].tolist()} rad/s; they must be 0 "
            "there (the reference stops at the last point)"
        )
    return times, pos, vel, acc


def _same_pose(a: PoseReference, b: PoseReference | None) -> bool:
    """Whether ``b`` is the pose ``a`` (bit for bit: a target sent again)."""
    return b is not None and np.array_equal(a.position, b.position) and np.array_equal(a.rotation, b.rotation)


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

    def reference(self, state: JointState) -> Any:
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


@register_target_source("computed_torque")
class JointTargetSource(TargetSource):
    """``~/joint_target`` (JointState: position; velocity empty or zero) and ``~/joint_trajectory``.

    A joint target is reached along a quintic from the current reference, planned with the law's
    gains (:class:`~..core.approach.JointApproachPlanner`: every joint at most half its velocity
    limit, 0.24 s at least with the default ``kp`` 100, 2.7 s for 1 rad on joint_1; a moving
    reference goes on into it when that stays on course, within 0.625 of the limits, else stops
    first), and then held until replaced; the target under way sent again changes nothing.

    A trajectory (``header.stamp`` zero: start at the next joint state) starts from the current
    reference when its first point is later than 0, else at that point, which must then lie within
    :data:`START_TOLERANCE` of the reference or of the measured position, with the reference's
    velocity and acceleration (given velocities may differ by :meth:`start_tolerances`, else it is
    refused; given accelerations are blended into over the first segment); one stamped later
    than the joint state waits for it while the active target runs on (at most
    :data:`MAX_START_DELAY` ahead of the node's clock); after its end the last point is
    held. An empty trajectory stops a moving reference of a trajectory or of a joint target's
    approach along the planner's stop (:meth:`JointApproachPlanner.stop`: its velocity and
    acceleration carried on, at rest ``q̇·T_s/2`` further on after ``T_s``, 0.24 s with kp 100; no
    torque step), holds one at rest where it stands, or, from a hold, holds where the arm is. One
    stamped before the joint state it takes effect at drops the points already due and reaches
    the next one from the current reference; one that ended before it is refused. On continuous
    joints every segment takes the short way round (the waypoints are unwrapped against the one
    before, the start first). Positions outside the model's joint limits are refused, at the
    waypoints and along the interpolated motion, and so are speeds above its velocity limits and
    accelerations above :attr:`acceleration_limit` (25.9 rad/s² on the Gen3's joint_1).
    A joint target's velocities must be empty or zero.
    """

    def __init__(self, node: Node, controller: Controller[Any]) -> None:
        super().__init__(node, controller)
        robot = controller.robot
        self.robot = robot
        self.n = robot.n
        self.map = JointNameMap(robot.joint_names)
        self._pending: tuple[str, Any] | None = None
        self._fixed: JointReference | None = None
        self._trajectory: JointTrajectory | None = None
        self._t0 = 0.0
        self._mode = "hold"
        ctrl = _expect(controller, ComputedTorque)
        self._planner = JointApproachPlanner(robot, ctrl.config.kp, ctrl.config.kd)
        #: Largest |q̈| (rad/s²) per joint a trajectory may ask: the planner's own bound
        #: (:func:`acceleration_limits`).
        self.acceleration_limit = self._planner.acceleration_limit
        self.start_velocity_tolerance, self.start_acceleration_tolerance = self.start_tolerances(
            ctrl.config.kp, ctrl.config.kd
        )
        node.create_subscription(JointStateMsg, "~/joint_target", self._on_joint_target, TARGET_QOS)
        node.create_subscription(
            JointTrajectoryMsg, "~/joint_trajectory", self._on_trajectory, TARGET_QOS, raw=True
        )

    @staticmethod
    def start_tolerances(kp: FloatArray, kd: FloatArray) -> tuple[FloatArray, FloatArray]:
        """``(velocity (rad/s), acceleration (rad/s²))`` per joint: how far a first point at time 0
        (or a stop at once) may change the reference's velocity and acceleration. The law commands
        ``q̈_ref + kp·e + kd·ė``; :data:`START_TOLERANCE` lets the position step by 0.01 rad, i.e.
        the command by ``kp·0.01``, and the same step is let through for ``kd·Δq̇`` and ``Δq̈``:
        ``Δq̇ ≤ kp·0.01/kd``, ``Δq̈ ≤ kp·0.01`` (0.05 rad/s and 1 rad/s² with kp 100, kd 20; ``inf``
        where ``kd`` is 0)."""
        step = START_TOLERANCE * np.asarray(kp, dtype=np.float64)
        kd = np.asarray(kd, dtype=np.float64)
        with np.errstate(divide="ignore"):
            return np.where(kd > 0.0, step / kd, np.inf), step

    # ---------------------------------------------------------------- callbacks
    def _on_joint_target(self, msg: JointStateMsg) -> None:
        try:
            q, v = joint_positions(self.robot, self.map, msg, "joint target")
        except (StateError, TargetError) as exc:
            self._refuse(str(exc))
            return
        self.received += 1
        self._pending = ("target", JointReference(q, v))

    def _on_trajectory(self, msg: JointTrajectoryMsg | bytes) -> None:
        """A trajectory, as the subscription's bytes (refused by its point count before any
        conversion) or as a message."""
        if isinstance(msg, bytes):
            if len(msg) > MAX_TRAJECTORY_BYTES:
                self._refuse(f"trajectory: {len(msg)} bytes, more than the {MAX_TRAJECTORY_BYTES} allowed")
                return
            sizes = trajectory_sizes(msg, MAX_TRAJECTORY_NAMES)
            if sizes is not None and sizes[0] > MAX_TRAJECTORY_NAMES:
                self._refuse(
                    f"trajectory: {sizes[0]} joint names, more than the {MAX_TRAJECTORY_NAMES} allowed"
                )
                return
            if sizes is not None and sizes[1] is not None and sizes[1] > MAX_TRAJECTORY_POINTS:
                self._refuse(too_many_points(sizes[1]))
                return
            msg = deserialize_message(msg, JointTrajectoryMsg)
        try:
            if not msg.points:
                self.received += 1
                self._pending = ("stop", None)
                return
            points = trajectory_points(self.robot, self.map, msg)
            # Validate now: times, then the motion in between. The start is added at activation,
            # where the first waypoint's estimated velocity changes with it (0 here): that first
            # segment is checked then, with the next (checked here as it never runs, it had
            # refused motions within the limits). A first point at time 0 takes the reference's
            # velocity and acceleration then, which changes its segment only from a moving one.
            times, _, vel, _ = points
            first = 1 if times[0] > 0.0 and vel is None else 0
            check_motion(
                self.robot,
                JointTrajectory(*points, continuous=self.robot.continuous),
                first,
                acceleration_limit=self.acceleration_limit,
            )
        except (StateError, TargetError) as exc:
            self._refuse(str(exc))
            return
        stamp = stamp_to_ns(msg.header.stamp) * 1e-9
        now = self.node.get_clock().now().nanoseconds * 1e-9
        if stamp < 0.0:
            self._refuse(f"trajectory header.stamp {stamp:.3f} s is negative (0 starts it at the next state)")
            return
        if stamp - now > MAX_START_DELAY:
            self._refuse(
                f"trajectory header.stamp {stamp:.3f} s is {stamp - now:.0f} s after this node's clock "
                f"({now:.3f} s; more than {MAX_START_DELAY:g} s): another clock (wall time to a node on "
                "sim time)?"
            )
            return
        self.received += 1
        self._pending = ("trajectory", (stamp, points))

    # ---------------------------------------------------------------- reference
    def _current(self, state: JointState) -> tuple[FloatArray, FloatArray | None, FloatArray | None]:
        """The reference at ``state`` before a new target takes over: ``(q, q̇, q̈)``, ``None`` for 0."""
        if self._trajectory is not None:
            return self._trajectory.sample(state.stamp - self._t0)
        if self._fixed is not None:
            return self._fixed.q, self._fixed.v, self._fixed.a
        return np.array(state.q, dtype=np.float64), None, None

    def _approach(self, state: JointState, target: JointReference) -> JointTrajectory | None:
        """The approach from the current reference to ``target`` (:class:`JointApproachPlanner`), or
        ``None`` after refusing it (its motion passes a limit: a start moving fast toward one)."""
        under_way = None if self._trajectory is None else (self._trajectory, state.stamp - self._t0)
        try:
            return self._planner.plan(self._current(state), target.q, under_way)
        except TargetError as exc:
            self._refuse(f"joint target: {exc}")
            return None

    def _activate(self, state: JointState) -> None:
        """Take the pending joint target, stop or trajectory at ``state`` (its clock and pose)."""
        assert self._pending is not None
        kind, payload = self._pending
        self._pending = None
        if kind == "target":
            self._activate_target(state, payload)
        elif kind == "stop":
            self._activate_stop(state)
        else:
            self._activate_trajectory(state, *payload)

    def _activate_target(self, state: JointState, target: JointReference) -> None:
        if (
            self._mode == "joint_target"
            and self._fixed is not None
            and np.array_equal(target.q, self._fixed.q)
        ):
            return  # the target under way, sent again (a device repeating its last pose)
        approach = self._approach(state, target)
        if approach is not None:
            self._fixed, self._trajectory, self._t0, self._mode = (
                target,
                approach,
                state.stamp,
                "joint_target",
            )

    def _activate_stop(self, state: JointState) -> None:
        """Stop a moving reference along :meth:`JointApproachPlanner.stop` (its velocity and
        acceleration carried on, no torque step), else hold where it stands (from a hold, where
        the arm is). Stepped to rest at once, a reference moving 1.125 rad/s on joint_1 had asked
        −5.75 N·m and the arm overshot the held point by 0.041 rad; the smooth stop runs on 0.135
        rad (``q̇·T_s/2``, 0.24 s with kp 100). A reference moving no more than
        :meth:`start_tolerances` is held at once (the step it asks is no larger than a start's)."""
        self._mode = "hold"
        if self._trajectory is None:
            # A hold already (or no reference yet): nothing moves to bring to rest. Held where the
            # arm is, so that a stop never sets the arm moving toward a point it stands away from.
            self._fixed = JointReference(np.array(state.q, dtype=np.float64))
            return
        current = self._current(state)
        q, v, a = current
        slow = (v is None or bool(np.all(np.abs(v) <= self.start_velocity_tolerance))) and (
            a is None or bool(np.all(np.abs(a) <= self.start_acceleration_tolerance))
        )
        if not slow:
            try:
                stopping = self._planner.stop(current, (self._trajectory, state.stamp - self._t0))
            except TargetError as exc:  # rare: its rest point within a hair of a limit
                self.log.warning("stop", f"stop: held at once, its smooth stop refused ({exc})")
            else:
                self._fixed, self._trajectory, self._t0 = None, stopping, state.stamp
                return
        self._fixed, self._trajectory = JointReference(np.array(q, dtype=np.float64)), None

    def _activate_trajectory(self, state: JointState, stamp: float, points: Any) -> None:
        t0 = stamp if stamp > 0.0 else state.stamp
        late = state.stamp - t0
        if late > 0.0:
            # Stamped before this state: the points already due are dropped and the rest
            # keep their times, reached from the current reference (no jump into the middle).
            times, pos, vel, acc = points
            end = float(times[-1])
            due = times > late
            if not due.any():
                self._refuse(
                    f"trajectory ended {late - end:.3f} s before the joint state it arrived at "
                    f"(header.stamp {stamp:.3f} s, last point at {end:.3f} s)"
                )
                return
            points = (
                times[due] - late,
                pos[due],
                None if vel is None else vel[due],
                None if acc is None else acc[due],
            )
            t0 = state.stamp
        times, pos, vel, acc = points
        current = self._current(state)
        if times[0] == 0.0:
            try:
                times, pos, vel, acc, current = self._from_first_point(state, current, points)
            except TargetError as exc:
                self._refuse(str(exc))
                return
        try:
            trajectory = JointTrajectory(
                times, pos, vel, acc, start=current, continuous=self.robot.continuous
            )
            # Only the segment from the start and the next one differ from those checked in the
            # callback (the first waypoint's estimated velocity changes with the start).
            check_motion(
                self.robot,
                trajectory,
                last=2,
                offset=max(late, 0.0),
                acceleration_limit=self.acceleration_limit,
            )
        except TargetError as exc:
            self._refuse(str(exc))
            return
        self._trajectory = trajectory
        self._t0 = t0
        self._fixed, self._mode = None, "trajectory"

    def _from_first_point(
        self,
        state: JointState,
        current: tuple[FloatArray, FloatArray | None, FloatArray | None],
        points: TrajectoryPoints,
    ) -> tuple[
        FloatArray,
        FloatArray,
        FloatArray | None,
        FloatArray | None,
        tuple[FloatArray, FloatArray | None, FloatArray | None],
    ]:
        """The points after a first point at time 0 and the start that replaces it: its position
        (within :data:`START_TOLERANCE` of the reference or the arm), the reference's velocity and
        acceleration (the given velocities within :meth:`start_tolerances` of the reference's; the
        given accelerations are left for the first segment to blend into). A lone point is
        the trajectory's end, at rest: the reference must be slow enough to stop there at once.

        Raises:
            TargetError: the point is farther than that (the message names the joint).
        """
        times, pos, vel, acc = points
        names = self.robot.joint_names
        off = np.minimum(
            np.abs(self.robot.difference(pos[0], current[0])),
            np.abs(self.robot.difference(pos[0], state.q)),
        )
        worst = int(np.argmax(off))
        if off[worst] > START_TOLERANCE:
            raise TargetError(
                f"trajectory: its first point, at time_from_start 0, is {off[worst]:.3f} rad from "
                f"the current reference and from the arm on {names[worst]} (at most "
                f"{START_TOLERANCE:g} rad): give it a time_from_start > 0 to reach it from there"
            )
        v_ref = np.zeros(self.n) if current[1] is None else current[1]
        a_ref = np.zeros(self.n) if current[2] is None else current[2]
        lone = len(times) == 1
        given_v = np.zeros(self.n) if lone else vel[0] if vel is not None else None
        given_a = np.zeros(self.n) if lone else None  # a lone point is at rest: no acceleration
        for what, unit, given, ref, tolerance in (
            ("velocity", "rad/s", given_v, v_ref, self.start_velocity_tolerance),
            ("acceleration", "rad/s²", given_a, a_ref, self.start_acceleration_tolerance),
        ):
            if given is None:
                continue
            excess = np.abs(given - ref) - tolerance
            j = int(np.argmax(excess))
            if excess[j] > 0.0:
                point = (
                    "its only point, at time_from_start 0, is at rest"
                    if lone
                    else f"its first point, at time_from_start 0, has {what} {given[j]:.3f} {unit}"
                )
                raise TargetError(
                    f"trajectory: {point} on {names[j]} where the current reference has "
                    f"{ref[j]:.3f} {unit} (at most {tolerance[j]:.3g} {unit} apart: the reference "
                    f"would step); give the point the reference's {what} or a time_from_start > 0, "
                    "or stop with an empty trajectory"
                )
        if lone:
            return times, pos, vel, acc, current
        start = (pos[0], v_ref, a_ref)
        rest = slice(1, None)
        return (
            times[rest],
            pos[rest],
            None if vel is None else vel[rest],
            None if acc is None else acc[rest],
            start,
        )

    def _pending_stamp(self) -> float | None:
        """``header.stamp`` (s) of the pending trajectory (0: at the next state); None if none."""
        if self._pending is None or self._pending[0] != "trajectory":
            return None
        return float(self._pending[1][0])

    def _due(self, state: JointState) -> bool:
        """Whether the pending target takes effect at ``state``: at once, except a trajectory
        stamped later, which waits for its stamp (the active target runs on until then; switched
        early, the reference had stood still at the start until the stamp and then set off)."""
        stamp = self._pending_stamp()
        return stamp is None or stamp <= state.stamp

    def reference(self, state: JointState) -> JointReference:
        if self._pending is not None and self._due(state):
            self._activate(state)
        if self._trajectory is not None:
            q, v, a = self._trajectory.sample(state.stamp - self._t0)
            return JointReference(q, v, a)
        if self._fixed is None:
            self._fixed = JointReference(np.array(state.q, dtype=np.float64))
        return self._fixed

    def pause(self, since: float, until: float) -> None:
        # Sampled 0.4 s further on after a 0.4 s fallback, the trajectory had stepped the reference
        # 0.35 rad ahead of the held arm (14 N·m on the first torque).
        if self._trajectory is not None:
            self._t0 += until - since
        # One due to start during the pause starts at its end (activated late, it had been
        # compressed into the time left: 1 s asked, 0.6 s run).
        stamp = self._pending_stamp()
        if stamp is not None and 0.0 < stamp < until:
            assert self._pending is not None
            self._pending = ("trajectory", (stamp + until - max(stamp, since), self._pending[1][1]))

    def reset(self, clock_reset: bool = False) -> None:
        self._fixed = None
        self._trajectory = None
        self._mode = "hold"
        # A trajectory stamped for later was planned on a timeline a clock reset leaves (a
        # simulator restart: it had started in the new run at the old run's stamp). After a stop
        # on the same clock it still starts at its stamp (dropped there, one sent while the arm
        # was stopped had been lost without a word).
        stamp = self._pending_stamp() or 0.0
        if clock_reset and stamp > 0.0:
            self._pending = None
            self._refuse(
                f"trajectory stamped {stamp:.3f} s dropped: the clock went back (simulator restarted?)"
            )

    def describe(self) -> str:
        return self._mode


@register_target_source("achd_rnea")
class PoseTargetSource(TargetSource):
    """``~/target_pose`` (PoseStamped): the tool pose in the model's base frame, reached along a
    :class:`PoseApproach` from the current reference and then held until replaced.

    ``header.frame_id`` must name the base frame (no TF here); the quaternion must be near unit
    norm (an all-zero default orientation is refused), every number finite and the position
    within the controlled frame's reach (:class:`Reach`) and clear of its full stretch
    (:meth:`Reach.check_clear_of_stretch`: 15 mm inside the reach bound).

    The approach is planned on the constrained axes with the law's gains
    (:class:`~..core.approach.PoseApproachPlanner`: every joint at most half its velocity limit
    along the predicted joint path and at its start); a target whose predicted path ends more
    than a fifth of the move short (a singularity on the straight line, e.g. from the stretched
    pose itself) is refused. Planning takes 0.2–1 ms, once per target, on the control thread, up
    to ~2 ms when a moving reference has to stop first (both moves are planned): each target of a
    stream that turns back then makes its step late.
    """

    def __init__(self, node: Node, controller: Controller[Any]) -> None:
        super().__init__(node, controller)
        self.robot = controller.robot
        self.frame = base_frame(controller.robot)
        ctrl = _expect(controller, AchdRnea)
        self.controlled = ctrl.config.frame
        self.reach = Reach.of(controller.robot, ctrl.config.frame)
        rows = np.array([AXIS_NAMES.index(a) for a in ctrl.config.constrained_axes])
        kp, kd = np.asarray(ctrl.config.kp)[rows], np.asarray(ctrl.config.kd)[rows]
        self._planner = PoseApproachPlanner(self.robot, self.controlled, rows, kp, kd)
        self._pending: PoseReference | None = None
        self._active: PoseReference | None = None
        self._approach: PoseApproach | None = None
        self._t0 = 0.0  # stamp (s) the approach started at, moved on by pauses
        self._mode = "hold"
        node.create_subscription(PoseStamped, "~/target_pose", self._on_pose, TARGET_QOS)

    def _on_pose(self, msg: PoseStamped) -> None:
        try:
            check_frame(msg, self.frame, "target pose")
            ref = pose_reference(msg, "target pose")
            self.reach.check(ref.position, "target pose")
            self.reach.check_clear_of_stretch(ref.position, "target pose")
        except TargetError as exc:
            self._refuse(str(exc))
            return
        self.received += 1
        self._pending = ref

    def _current(self, state: JointState) -> PoseReference:
        """The reference at ``state`` before a new target takes over."""
        if self._approach is not None:
            return self._approach.sample(state.stamp - self._t0)
        return self._active if self._active is not None else self.controller.hold_reference(state)

    def _approach_to(self, state: JointState, goal: PoseReference) -> PoseApproach:
        """The move from the current reference to ``goal`` (see the class docstring).

        Raises:
            TargetError: the predicted joint path ends short of the goal (a singularity on the way).
        """
        under_way = None if self._approach is None else (self._approach, state.stamp - self._t0)
        try:
            return self._planner.plan(state.q, self._current(state), goal, under_way)
        except TargetError as exc:
            raise TargetError(f"target pose: {exc}; move the arm away from it first, or use qpid") from None

    def reference(self, state: JointState) -> PoseReference:
        goal, self._pending = self._pending, None
        if goal is not None and self._mode == "target_pose" and _same_pose(goal, self._active):
            goal = None  # the target under way, sent again (replanned, it overshot and rang)
        if goal is not None:
            try:
                self._approach, self._t0 = self._approach_to(state, goal), state.stamp
                self._active, self._mode = goal, "target_pose"
            except TargetError as exc:  # the active target runs on
                self._refuse(str(exc))
        if self._approach is not None:
            reference = self._approach.sample(state.stamp - self._t0)
            if reference is self._approach.goal:  # arrived: held from now on
                self._active, self._approach = reference, None
            return reference
        if self._active is None:
            self._active = self.controller.hold_reference(state)
        return self._active

    def pause(self, since: float, until: float) -> None:
        # As a trajectory: the approach takes up where it stood when the safe torque took over.
        self._t0 += until - since

    def reset(self, clock_reset: bool = False) -> None:
        self._active = None
        self._approach = None
        self._mode = "hold"

    def describe(self) -> str:
        return self._mode


@register_target_source("qpid", "hqpid")
class TaskTargetSource(TargetSource):
    """One target topic per task of a QP controller; every task holds its start value until then.

    * ``~/<task>/target`` (PoseStamped, base frame) for each ``pose``, ``position`` or
      ``orientation`` task: a pose task takes the whole pose, a position task only the position
      (the orientation is ignored, so a default all-zero quaternion is fine), an orientation task
      only the orientation. A position farther than the task frame's reach is refused.
    * ``~/joint_target`` (JointState by name: positions; velocities empty or zero) for every
      ``posture`` task; positions outside the joint limits are refused.

    Each target is reached along an approach from the task's current reference, planned with the
    task's gains on the axes it tracks (weight and ``kp`` above 0): a
    :class:`~..core.approach.PoseApproach` for a frame task
    (:class:`~..core.approach.PoseApproachPlanner`, every joint at most half its velocity limit
    along the predicted path, not refused near a singularity: the QP's barriers hold there), a
    joint quintic for the posture tasks (:class:`~..core.approach.JointApproachPlanner`, timed by
    the slowest posture task's gains). Stepped into the QP, a tool target 0.3 m away had run
    joints 1 and 5 at exactly their velocity limits (the barriers held them there). Planning a
    frame task's approach takes 0.2–1 ms, once per target, on the control thread.

    The reference is one ``{task: target}`` mapping, rebuilt only while a target moves or when one
    changes (the tasks skip revalidating target objects they have already seen).
    """

    def __init__(self, node: Node, controller: Controller[Any]) -> None:
        super().__init__(node, controller)
        robot = controller.robot
        self.robot = robot
        self.frame = base_frame(robot)
        self.map = JointNameMap(robot.joint_names)
        ctrl = _expect(controller, QPID, HQPID)
        tasks = {name: ctrl.task(name) for name in ctrl.task_names}
        self.kinds = {name: task.kind for name, task in tasks.items()}
        self.posture_tasks = tuple(n for n, k in self.kinds.items() if k == "posture")
        #: The tasks on a frame (pose, position, orientation): each takes a PoseStamped target.
        self.frame_tasks = {name: task for name, task in tasks.items() if isinstance(task, FrameTask)}
        #: The reach of each task that takes a position (pose, position).
        self.reach = {
            name: Reach.of(robot, task.frame)
            for name, task in self.frame_tasks.items()
            if task.kind in ("pose", "position")
        }
        #: Approach planners of the tasks that track at least one axis (weight and kp above 0).
        self._pose_planners: dict[str, PoseApproachPlanner] = {}
        #: Per task, 1 on the axes it tracks and 0 elsewhere: an approach's velocity and
        #: acceleration go to those only (fed to an axis with kp 0, they had turned the tool 2.2
        #: rad toward an orientation its configuration leaves free).
        self._feed: dict[str, FloatArray] = {}
        for name, task in tasks.items():
            tracked = (task.weight > 0.0) & (task.kp > 0.0)
            if not isinstance(task, FrameTask):  # posture
                self._feed[name] = tracked.astype(np.float64)
                continue
            axes = np.arange(6)[task.rows][tracked]  # of x, y, z, rx, ry, rz
            self._feed[name] = np.zeros(6)
            self._feed[name][axes] = 1.0
            if tracked.any():
                self._pose_planners[name] = PoseApproachPlanner(
                    robot, task.frame, axes, task.kp[tracked], task.kd[tracked], refuse_shortfall=False
                )
        self._joint_planner: JointApproachPlanner | None = None
        gains = [(tasks[n].kp, tasks[n].kd) for n in self.posture_tasks]
        kp = np.concatenate([g[0] for g in gains]) if gains else np.zeros(0)
        if (kp > 0.0).any():
            kd = np.concatenate([g[1] for g in gains])
            self._joint_planner = JointApproachPlanner(robot, kp[kp > 0.0], kd[kp > 0.0])
        self._pending: dict[str, Any] = {}
        self._reference: dict[str, Any] | None = None
        #: Each frame task's current pose reference (both parts, whatever the task reads).
        self._poses: dict[str, PoseReference] = {}
        #: Approaches under way: task → (approach, the stamp it started at, moved on by pauses).
        self._pose_moves: dict[str, tuple[PoseApproach, float]] = {}
        self._joint_moves: dict[str, tuple[JointTrajectory, float]] = {}
        #: The last target each task took (a target sent again is not planned again).
        self._goals: dict[str, Any] = {}
        self._targeted: set[str] = set()
        for name in self.frame_tasks:
            topic = f"~/{name}/target"
            try:
                node.create_subscription(
                    PoseStamped, topic, lambda msg, task=name: self._on_pose(task, msg), TARGET_QOS
                )
            except InvalidTopicNameException as exc:
                raise ConfigError(
                    f"{controller.name}.tasks: task name {name!r} is not a valid topic name: {exc}"
                ) from None
        if self.posture_tasks:
            node.create_subscription(JointStateMsg, "~/joint_target", self._on_joint_target, TARGET_QOS)

    def _on_pose(self, task: str, msg: PoseStamped) -> None:
        what = f"{task} target"
        try:
            check_frame(msg, self.frame, what)
            kind = self.kinds[task]
            target: Any
            if kind == "position":
                target = pose_position(msg, what)
                self.reach[task].check(target, what)
            elif kind == "orientation":
                target = pose_rotation(msg, what)
            else:
                target = pose_reference(msg, what)
                self.reach[task].check(target.position, what)
        except TargetError as exc:
            self._refuse(str(exc))
            return
        self.received += 1
        self._pending[task] = target

    def _on_joint_target(self, msg: JointStateMsg) -> None:
        try:
            q, _ = joint_positions(self.robot, self.map, msg, "joint target")  # velocities 0
        except (StateError, TargetError) as exc:
            self._refuse(str(exc))
            return
        self.received += 1
        for name in self.posture_tasks:
            self._pending[name] = q

    # ---------------------------------------------------------------- reference
    def _start(self, state: JointState) -> None:
        """Hold every task where it stands at ``state``."""
        self._reference = dict(self.controller.hold_reference(state))
        self._pose_moves.clear()
        self._joint_moves.clear()
        self._goals.clear()
        for name, planner in self._pose_planners.items():
            self._poses[name] = PoseReference.from_se3(self.robot.frame_placement(state.q, planner.frame))

    def _take(self, name: str, target: Any, state: JointState, reference: dict[str, Any]) -> None:
        """Start the approach of task ``name`` to ``target`` from its current reference (or step
        ``reference`` there, for a task that tracks no axis). The target it last took, sent again,
        changes nothing (replanned from a moving reference, it had overshot and rung)."""
        last = self._goals.get(name)
        if last is not None and (
            _same_pose(target, last) if isinstance(target, PoseReference) else np.array_equal(target, last)
        ):
            return
        if self.kinds[name] == "posture":
            self._take_joint_target(name, target, state, reference)
            return
        planner = self._pose_planners.get(name)
        if planner is None:
            reference[name] = target
            self._targeted.add(name)
            return
        moving = self._pose_moves.get(name)
        now = moving[0].sample(state.stamp - moving[1]) if moving is not None else self._poses[name]
        kind = self.kinds[name]
        if kind == "position":
            goal = PoseReference(np.array(target, dtype=np.float64), now.rotation)
        elif kind == "orientation":
            goal = PoseReference(now.position.copy(), np.array(target, dtype=np.float64))
        else:
            goal = target
        under_way = None if moving is None else (moving[0], state.stamp - moving[1])
        self._pose_moves[name] = (planner.plan(state.q, now, goal, under_way), state.stamp)
        self._goals[name] = target
        self._targeted.add(name)

    def _take_joint_target(
        self, name: str, q: FloatArray, state: JointState, reference: dict[str, Any]
    ) -> None:
        if self._joint_planner is None:
            reference[name] = q
            self._targeted.add(name)
            return
        moving = self._joint_moves.get(name)
        start: tuple[FloatArray, FloatArray | None, FloatArray | None]
        under_way = None
        if moving is not None:
            under_way = (moving[0], state.stamp - moving[1])
            start = moving[0].sample(under_way[1])
        else:
            held = reference[name]
            start = (np.array(getattr(held, "q", held), dtype=np.float64), None, None)
        try:
            self._joint_moves[name] = (self._joint_planner.plan(start, q, under_way), state.stamp)
        except TargetError as exc:  # the active target runs on
            self._refuse(f"joint target: {exc}")
            return
        self._goals[name] = q
        self._targeted.add(name)

    def reference(self, state: JointState) -> dict[str, Any]:
        if self._reference is None:
            self._start(state)
        assert self._reference is not None
        if not (self._pending or self._pose_moves or self._joint_moves):
            return self._reference
        # A new mapping: the controller sees a different object; the unchanged targets stay the
        # same objects and are not revalidated.
        reference = dict(self._reference)
        for name, target in self._pending.items():
            self._take(name, target, state, reference)
        self._pending = {}
        for name, (pose_move, t0) in list(self._pose_moves.items()):
            pose = pose_move.sample(state.stamp - t0)
            feed = self._feed[name]
            twist, acceleration = pose.twist, pose.acceleration
            reference[name] = CartesianTarget(
                pose.se3,
                None if twist is None else twist * feed,
                None if acceleration is None else acceleration * feed,
            )
            if pose is pose_move.goal:  # arrived: held from now on
                self._poses[name] = pose
                del self._pose_moves[name]
        for name, (joint_move, t0) in list(self._joint_moves.items()):
            q, v, a = joint_move.sample(state.stamp - t0)
            if state.stamp - t0 < joint_move.duration:
                reference[name] = JointReference(q, v * self._feed[name], a * self._feed[name])
            else:  # arrived: held from now on
                reference[name] = q
                del self._joint_moves[name]
        self._reference = reference
        return reference

    def pause(self, since: float, until: float) -> None:
        # As a trajectory: an approach takes up where it stood when the safe torque took over.
        shift = until - since
        self._pose_moves = {n: (move, t0 + shift) for n, (move, t0) in self._pose_moves.items()}
        self._joint_moves = {n: (move, t0 + shift) for n, (move, t0) in self._joint_moves.items()}

    def reset(self, clock_reset: bool = False) -> None:
        self._reference = None
        self._pose_moves.clear()
        self._joint_moves.clear()
        self._goals.clear()
        self._targeted.clear()

    def describe(self) -> str:
        if not self._targeted:
            return "hold"
        return ",".join(n for n in self.kinds if n in self._targeted)
