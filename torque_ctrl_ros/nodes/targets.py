"""Target inputs per controller: which topics a controller listens to and how they become its reference.

The controller node asks :func:`create_target_source` for the source registered under the
controller's name; a source creates its subscriptions on the node and, for every accepted joint
state, returns the reference to pass to ``Controller.compute``. Later controllers register their
own source::

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

Every message is validated in its callback (a trajectory's timing again when it takes effect): a
refused one is counted in ``targets_rejected``, logged (throttled) and leaves the active target
unchanged.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np
from geometry_msgs.msg import PoseStamped
from rclpy.exceptions import InvalidTopicNameException
from rclpy.node import Node
from rclpy.qos import QoSProfile
from sensor_msgs.msg import JointState as JointStateMsg
from trajectory_msgs.msg import JointTrajectory as JointTrajectoryMsg

from ..core.controllers import Controller, PoseReference
from ..core.errors import ConfigError, StateError, TargetError
from ..core.robot import RobotModel
from ..core.safety import MAX_ANGLE, JointNameMap
from ..core.trajectory import JointTrajectory
from ..core.types import JointReference, JointState
from ..core.validation import FloatArray, as_vector
from .conversions import stamp_to_ns

TARGET_QOS = QoSProfile(depth=10)


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

    @abstractmethod
    def reference(self, state: JointState) -> Any:
        """The reference for ``state`` (controller joint order; ``state.stamp`` in s)."""

    def reset(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Forget the active target (after the watchdog stopped): hold where the arm is next."""

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
        self.node.get_logger().error(f"target rejected: {message}", throttle_duration_sec=1.0)


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
    """Positions (and velocities if given) of ``msg`` in model order, finite and within limits."""
    q = np.empty(robot.n)
    names_map.take(msg.name, np.asarray(msg.position, dtype=np.float64), q, "position")
    v = None
    if len(msg.velocity):
        v = np.empty(robot.n)
        names_map.take(msg.name, np.asarray(msg.velocity, dtype=np.float64), v, "velocity")
    if not np.isfinite(q).all() or (v is not None and not np.isfinite(v).all()):
        raise TargetError(f"{what}: non-finite entries")
    check_joint_limits(robot, q, what, v)
    return q, v


TargetFactory = Callable[[Node, Controller[Any]], TargetSource]

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

    def reset(self) -> None:
        self._have = False


@register_target_source("gravity_comp")
class NoTargetSource(HoldSource):
    """Gravity compensation takes no target."""

    def describe(self) -> str:
        return "none"


@register_target_source("computed_torque")
class JointTargetSource(TargetSource):
    """``~/joint_target`` (JointState: position, optional velocity) and ``~/joint_trajectory``.

    A joint target is held until replaced. A trajectory (``header.stamp`` zero: start at the
    next joint state) starts from the current reference when its first point is later than 0;
    after its end the last point is held. An empty trajectory holds the current position.
    One stamped before the joint state it takes effect at drops the points already due and
    reaches the next one from the current reference; one that ended before it is refused.
    On continuous joints every segment takes the short way round (the waypoints are unwrapped
    against the one before, the start first). Positions outside the model's joint limits are refused.
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
        node.create_subscription(JointStateMsg, "~/joint_target", self._on_joint_target, TARGET_QOS)
        node.create_subscription(JointTrajectoryMsg, "~/joint_trajectory", self._on_trajectory, TARGET_QOS)

    # ---------------------------------------------------------------- callbacks
    def _on_joint_target(self, msg: JointStateMsg) -> None:
        try:
            q, v = joint_positions(self.robot, self.map, msg, "joint target")
        except (StateError, TargetError) as exc:
            self._refuse(str(exc))
            return
        self.received += 1
        self._pending = ("target", JointReference(q, v))

    def _on_trajectory(self, msg: JointTrajectoryMsg) -> None:
        try:
            if not msg.points:
                self.received += 1
                self._pending = ("stop", None)
                return
            idx = self.map.indices(msg.joint_names)
            points = []
            for k, p in enumerate(msg.points):
                pos = np.asarray(p.positions, dtype=np.float64)
                if pos.size != len(msg.joint_names):
                    raise TargetError(
                        f"trajectory point {k}: {pos.size} positions for {len(msg.joint_names)} joints"
                    )
                vel = np.asarray(p.velocities, dtype=np.float64)
                acc = np.asarray(p.accelerations, dtype=np.float64)
                for name, arr in (("velocities", vel), ("accelerations", acc)):
                    if arr.size not in (0, len(msg.joint_names)):
                        raise TargetError(
                            f"trajectory point {k}: {arr.size} {name} for {len(msg.joint_names)} joints"
                        )
                t = p.time_from_start.sec + p.time_from_start.nanosec * 1e-9
                v_k = vel[idx] if vel.size else None
                points.append((t, pos[idx], v_k, acc[idx] if acc.size else None))
                check_joint_limits(self.robot, pos[idx], f"trajectory point {k}", v_k)
            JointTrajectory.from_points(points, self.n)  # validate now; the start is added at activation
        except (StateError, TargetError) as exc:
            self._refuse(str(exc))
            return
        self.received += 1
        self._pending = ("trajectory", (stamp_to_ns(msg.header.stamp) * 1e-9, points))

    # ---------------------------------------------------------------- reference
    def _current(self, state: JointState) -> tuple[FloatArray, FloatArray | None]:
        if self._trajectory is not None:
            q, v, _ = self._trajectory.sample(state.stamp - self._t0)
            return q, v
        if self._fixed is not None:
            return self._fixed.q, self._fixed.v
        return np.array(state.q, dtype=np.float64), None

    def _activate(self, state: JointState) -> None:
        assert self._pending is not None
        kind, payload = self._pending
        self._pending = None
        if kind == "target":
            self._fixed, self._trajectory, self._mode = payload, None, "joint_target"
        elif kind == "stop":
            q, _ = self._current(state)
            self._fixed, self._trajectory, self._mode = JointReference(np.array(q)), None, "hold"
        else:
            stamp, points = payload
            t0 = stamp if stamp > 0.0 else state.stamp
            late = state.stamp - t0
            if late > 0.0:
                # Stamped before this state: the points already due are dropped and the rest
                # keep their times, reached from the current reference (no jump into the middle).
                end = points[-1][0]
                points = [(t - late, *rest) for t, *rest in points if t > late]
                if not points:
                    self._refuse(
                        f"trajectory ended {late - end:.3f} s before the joint state it arrived at "
                        f"(header.stamp {stamp:.3f} s, last point at {end:.3f} s)"
                    )
                    return
                t0 = state.stamp
            q0, v0 = self._current(state)
            try:
                self._trajectory = JointTrajectory.from_points(
                    points, self.n, start=(q0, v0), continuous=self.robot.continuous
                )
            except TargetError as exc:
                self._refuse(str(exc))
                return
            self._t0 = t0
            self._fixed, self._mode = None, "trajectory"

    def reference(self, state: JointState) -> JointReference:
        if self._pending is not None:
            self._activate(state)
        if self._trajectory is not None:
            q, v, a = self._trajectory.sample(state.stamp - self._t0)
            return JointReference(q, v, a)
        if self._fixed is None:
            self._fixed = JointReference(np.array(state.q, dtype=np.float64))
        return self._fixed

    def reset(self) -> None:
        self._fixed = None
        self._trajectory = None
        self._mode = "hold"

    def describe(self) -> str:
        return self._mode


@register_target_source("achd_rnea")
class PoseTargetSource(TargetSource):
    """``~/target_pose`` (PoseStamped): the tool pose in the model's base frame, held until replaced.

    ``header.frame_id`` must name the base frame (no TF here); the quaternion must be near unit
    norm (an all-zero default orientation is refused) and every number finite.
    """

    def __init__(self, node: Node, controller: Controller[Any]) -> None:
        super().__init__(node, controller)
        self.frame = base_frame(controller.robot)
        self._pending: PoseReference | None = None
        self._active: PoseReference | None = None
        self._mode = "hold"
        node.create_subscription(PoseStamped, "~/target_pose", self._on_pose, TARGET_QOS)

    def _on_pose(self, msg: PoseStamped) -> None:
        try:
            check_frame(msg, self.frame, "target pose")
            ref = pose_reference(msg, "target pose")
        except TargetError as exc:
            self._refuse(str(exc))
            return
        self.received += 1
        self._pending = ref

    def reference(self, state: JointState) -> PoseReference:
        if self._pending is not None:
            self._active, self._pending, self._mode = self._pending, None, "target_pose"
        if self._active is None:
            self._active = self.controller.hold_reference(state)
        return self._active

    def reset(self) -> None:
        self._active = None
        self._mode = "hold"

    def describe(self) -> str:
        return self._mode


@register_target_source("qpid", "hqpid")
class TaskTargetSource(TargetSource):
    """One target topic per task of a QP controller; every task holds its start value until then.

    * ``~/<task>/target`` (PoseStamped, base frame) for each ``pose``, ``position`` or
      ``orientation`` task: a pose task takes the whole pose, a position task only the position
      (the orientation is ignored, so a default all-zero quaternion is fine), an orientation task
      only the orientation.
    * ``~/joint_target`` (JointState by name: positions, optional velocities) for every
      ``posture`` task; positions outside the joint limits are refused.

    The reference is one ``{task: target}`` mapping, rebuilt only when a target changes (the
    tasks skip revalidating target objects they have already seen).
    """

    CARTESIAN = ("pose", "position", "orientation")

    def __init__(self, node: Node, controller: Controller[Any]) -> None:
        super().__init__(node, controller)
        robot = controller.robot
        self.robot = robot
        self.frame = base_frame(robot)
        self.map = JointNameMap(robot.joint_names)
        ctrl: Any = controller  # a QPID / HQPID: task_names, task(name).kind
        self.kinds = {name: ctrl.task(name).kind for name in ctrl.task_names}
        self.posture_tasks = tuple(n for n, k in self.kinds.items() if k == "posture")
        self._pending: dict[str, Any] = {}
        self._reference: dict[str, Any] | None = None
        self._targeted: set[str] = set()
        self.topics: dict[str, str] = {}
        for name, kind in self.kinds.items():
            if kind not in self.CARTESIAN:
                continue
            topic = f"~/{name}/target"
            try:
                node.create_subscription(
                    PoseStamped, topic, lambda msg, task=name: self._on_pose(task, msg), TARGET_QOS
                )
            except InvalidTopicNameException as exc:
                raise ConfigError(
                    f"{controller.name}.tasks: task name {name!r} is not a valid topic name: {exc}"
                ) from None
            self.topics[name] = topic
        if self.posture_tasks:
            node.create_subscription(JointStateMsg, "~/joint_target", self._on_joint_target, TARGET_QOS)
            self.topics.update({name: "~/joint_target" for name in self.posture_tasks})

    def _on_pose(self, task: str, msg: PoseStamped) -> None:
        what = f"{task} target"
        try:
            check_frame(msg, self.frame, what)
            kind = self.kinds[task]
            target: Any
            if kind == "position":
                target = pose_position(msg, what)
            elif kind == "orientation":
                target = pose_rotation(msg, what)
            else:
                target = pose_reference(msg, what).se3
        except TargetError as exc:
            self._refuse(str(exc))
            return
        self.received += 1
        self._pending[task] = target

    def _on_joint_target(self, msg: JointStateMsg) -> None:
        try:
            q, v = joint_positions(self.robot, self.map, msg, "joint target")
        except (StateError, TargetError) as exc:
            self._refuse(str(exc))
            return
        self.received += 1
        target = q if v is None else JointReference(q, v)
        for name in self.posture_tasks:
            self._pending[name] = target

    def reference(self, state: JointState) -> dict[str, Any]:
        if self._reference is None:
            self._reference = dict(self.controller.hold_reference(state))
        if self._pending:
            # A new mapping: the controller sees a different object, the unchanged targets stay
            # the same objects and are not revalidated.
            self._reference = {**self._reference, **self._pending}
            self._targeted.update(self._pending)
            self._pending = {}
        return self._reference

    def reset(self) -> None:
        self._reference = None
        self._targeted.clear()

    def describe(self) -> str:
        if not self._targeted:
            return "hold"
        return ",".join(n for n in self.kinds if n in self._targeted)
