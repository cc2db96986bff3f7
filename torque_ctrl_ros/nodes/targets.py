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
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np
from rclpy.node import Node
from rclpy.qos import QoSProfile
from sensor_msgs.msg import JointState as JointStateMsg
from trajectory_msgs.msg import JointTrajectory as JointTrajectoryMsg

from ..core.controllers import Controller
from ..core.errors import StateError, TargetError
from ..core.safety import JointNameMap
from ..core.trajectory import JointTrajectory
from ..core.types import JointReference, JointState
from ..core.validation import FloatArray
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
        }

    def describe(self) -> str:
        """One word on what is tracked."""
        return "hold"

    def _refuse(self, message: str) -> None:
        self.rejected += 1
        self.last_error = message
        self.node.get_logger().error(f"target rejected: {message}", throttle_duration_sec=1.0)


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
    Positions outside the model's joint limits are refused.
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
    def _check_limits(self, q: FloatArray, what: str) -> None:
        bad = (q < self.robot.position_lower) | (q > self.robot.position_upper)
        if bad.any():
            names = [self.robot.joint_names[i] for i in np.flatnonzero(bad)]
            raise TargetError(f"{what}: outside the position limits at {names}")

    def _on_joint_target(self, msg: JointStateMsg) -> None:
        try:
            q = np.empty(self.n)
            self.map.take(msg.name, np.asarray(msg.position, dtype=np.float64), q, "position")
            v = None
            if len(msg.velocity):
                v = np.empty(self.n)
                self.map.take(msg.name, np.asarray(msg.velocity, dtype=np.float64), v, "velocity")
            if not np.isfinite(q).all() or (v is not None and not np.isfinite(v).all()):
                raise TargetError("joint target: non-finite entries")
            self._check_limits(q, "joint target")
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
                points.append((t, pos[idx], vel[idx] if vel.size else None, acc[idx] if acc.size else None))
                self._check_limits(pos[idx], f"trajectory point {k}")
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
            q0, v0 = self._current(state)
            try:
                self._trajectory = JointTrajectory.from_points(points, self.n, start=(q0, v0))
            except TargetError as exc:
                self._refuse(str(exc))
                return
            self._t0 = stamp if stamp > 0.0 else state.stamp
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
