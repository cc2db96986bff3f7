"""Acceleration-level tasks for the QP controllers.

A task ``i`` of dimension ``m`` describes what the robot should do as a desired task
acceleration ``ẍᵈ`` (m) and how that acceleration depends on the joint acceleration::

    ẍ = J·q̈ + J̇·q̇                     (J: m × n Jacobian, J̇·q̇: the drift)
    ẍᵈ = ẍ_ref + K_p∘e + K_d∘(ẋ_ref − J·q̇)

with ``e`` the task error (target ⊖ current), element-wise gains ``K_p`` (1/s²) and
``K_d`` (1/s, ``2·√K_p`` = critically damped by default). The QP then minimises
``‖ẍᵈ − J·q̈ − J̇·q̇‖²_W`` with ``W = diag(weight)``.

Every quantity is read from a :class:`KinematicsState` that runs Pinocchio once per
control step; tasks only read from it and fill their preallocated ``J``, ``drift``,
``desired`` and ``error`` arrays.

Cartesian quantities are in the base frame, at the task frame's origin
(Pinocchio's ``LOCAL_WORLD_ALIGNED``): linear rows first (m, m/s, m/s²), then angular
rows (rad, rad/s, rad/s²). Orientation errors are ``log₃(R_ref·Rᵀ)``, a rotation
vector in the base frame.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pinocchio as pin

from ..errors import ConfigError, TargetError
from ..reach import check_target_position
from ..robot import ROW_CHECK_SAMPLES, RobotModel, check_pd_gains, sample_configurations
from ..target_checks import check_target_rates, checked_joint_reference
from ..types import JointReference
from ..validation import FloatArray, all_finite, as_rotation, as_vector

_LWA = pin.LOCAL_WORLD_ALIGNED
_NO_TARGET = object()


class KinematicsState:
    """Pinocchio quantities of one control step, computed once and shared.

    After :meth:`update`: ``robot.data`` holds joint placements, frame placements,
    joint velocities, the bias accelerations (``q̈ = 0``), the world joint Jacobians,
    ``M`` and ``nle``; :attr:`M` is the full symmetric mass matrix
    (kg·m²), :attr:`nle` ``= C(q, q̇)·q̇ + g(q)`` (N·m) and :attr:`JJd` (2 × 6 × n) stacks the
    world Jacobian of the whole chain ``J`` (6 × n, column ``c`` joint ``c``'s axis as a spatial
    motion at the world origin) and its time variation ``J̇`` (6 × n), copied once per step
    for the barriers that read them (a link's own Jacobian is ``J`` with the columns of the
    joints that do not move it set to 0).
    """

    def __init__(self, robot: RobotModel) -> None:
        self.robot = robot
        self.model = robot.model
        self.data = robot.data
        n = robot.n
        self.q = np.zeros(n)
        self.v = np.zeros(n)
        self.q_pin = np.zeros(robot.model.nq)
        self.M = np.zeros((n, n))
        self.nle = np.zeros(n)
        self.JJd = np.zeros((2, 6, n))

    def update(self, q: FloatArray, v: FloatArray) -> None:
        """Run forward kinematics, Jacobians, CRBA and NLE for joint angles ``q``, velocities ``v``."""
        # Slice assignment: the cheapest copy into an existing array (np.copyto costs ~0.3 µs).
        self.q[:] = q
        self.v[:] = v
        self.q_pin[:] = self.robot.configuration(q)
        # One pass: placements, velocities, bias accelerations (q̈ = 0), joint Jacobians, M, nle.
        pin.computeAllTerms(self.model, self.data, self.q_pin, self.v)
        pin.updateFramePlacements(self.model, self.data)
        # Pinocchio's Python computeAllTerms fills both triangles of data.M (the C++ one only
        # the upper), so M needs no symmetrising here; test_step_fast_paths checks it.
        self.M[:] = self.data.M
        self.nle[:] = self.data.nle
        self.JJd[0] = self.data.J
        self.JJd[1] = self.data.dJ


@dataclass(frozen=True)
class CartesianTarget:
    """A Cartesian reference for a frame task.

    Attributes:
        pose: target placement of the frame in the base frame.
        velocity: ``[ẋ; ω]`` (m/s, rad/s), base-frame axes, at the frame origin; ``None`` = 0.
        acceleration: ``[ẍ; ω̇]`` (m/s², rad/s²), same convention; ``None`` = 0.

    Position tasks use the translation and the first three entries of velocity and
    acceleration, orientation tasks the rotation and the last three.
    """

    pose: pin.SE3
    velocity: FloatArray | None = None
    acceleration: FloatArray | None = None


class Task(ABC):
    """Base of all tasks: gains, weights, buffers and the PD law.

    Attributes:
        name: unique task name (the key of its target in a controller reference).
        dim: task dimension ``m``.
        weight: per-axis weights (diagonal of ``W``), ``>= 0``.
        kp, kd: per-axis PD gains (1/s², 1/s).
        level: priority level (0 = highest), used by the hierarchical controller.
        J, drift, desired, error: buffers filled by :meth:`update`.
    """

    kind: ClassVar[str] = ""
    axis_names: ClassVar[tuple[str, ...]] = ()
    #: ``J`` never changes (set once in ``__init__``): the controller forms ``JᵀW·J`` once.
    constant_jacobian: ClassVar[bool] = False

    def __init__(
        self,
        name: str,
        robot: RobotModel,
        dim: int,
        *,
        kp: Any = 100.0,
        kd: Any = None,
        weight: Any = 1.0,
        level: int = 0,
    ) -> None:
        self.name = name
        self.robot = robot
        self.dim = dim
        self.kp = as_vector(f"{name}.kp", kp, dim, broadcast_scalar=True, min_value=0.0)
        self.kd = (
            2.0 * np.sqrt(self.kp)
            if kd is None
            else as_vector(f"{name}.kd", kd, dim, broadcast_scalar=True, min_value=0.0)
        )
        axes = self.axis_names if len(self.axis_names) == dim else tuple(f"axis #{i + 1}" for i in range(dim))
        # Reached, a task's axis follows ë = −kp·e − kd·ė one period (or command_delay) late.
        check_pd_gains(name, self.kp, self.kd, axes, robot.delay_periods)
        self.weight = as_vector(f"{name}.weight", weight, dim, broadcast_scalar=True, min_value=0.0)
        if not float(self.weight.max()) > 0.0:
            raise ConfigError(f"{name}.weight: at least one axis must have a weight > 0")
        if isinstance(level, bool) or not isinstance(level, int | np.integer) or level < 0:
            raise ConfigError(f"{name}.level: expected an integer >= 0, got {level!r}")
        self.level = int(level)
        n = robot.n
        self.J = np.zeros((dim, n))
        self.drift = np.zeros(dim)
        self.desired = np.zeros(dim)
        self.error = np.zeros(dim)
        self.velocity = np.zeros(dim)
        self._ref_vel = np.zeros(dim)
        self._ref_acc = np.zeros(dim)
        # Nothing passed yet: not None, which set_target would then skip as already seen.
        self._target_obj: object = _NO_TARGET

    # ------------------------------------------------------------------ targets
    def set_target(self, target: Any) -> None:
        """Validate and store ``target`` (kept until replaced). Raises :class:`TargetError`.

        The object passed last is skipped without being read again (a controller passes the
        same reference every step): a target changed in place must be passed as a new object.
        """
        if target is self._target_obj:
            return
        self._set_target(target)
        self._target_obj = target

    @abstractmethod
    def _set_target(self, target: Any) -> None:
        """Store a validated target in the task's own buffers."""

    @abstractmethod
    def hold_target(self, kin: KinematicsState) -> Any:
        """A target equal to the current state (for :meth:`Controller.hold_reference`)."""

    # ------------------------------------------------------------------ per step
    @abstractmethod
    def _compute(self, kin: KinematicsState) -> None:
        """Fill ``J``, ``drift`` and ``error`` for the current state."""

    def update(self, kin: KinematicsState) -> None:
        """Fill ``J``, ``drift``, ``error``, ``velocity = J·q̇`` and ``desired`` (see module doc)."""
        self._compute(kin)
        # ndarray.dot and positional outputs: ~0.2 µs less per call than np.dot(..., out=...).
        self.J.dot(kin.v, self.velocity)
        # desired = a_ref + kp∘e + kd∘(v_ref − J·q̇)
        desired = self.desired
        np.subtract(self._ref_vel, self.velocity, desired)
        desired *= self.kd
        desired += self.kp * self.error
        desired += self._ref_acc

    def error_norm(self) -> float:
        """Euclidean norm of the last task error (m, rad or a mix for pose tasks)."""
        e = self.error
        return math.sqrt(float(e @ e))


class FrameTask(Task):
    """Shared code of the tasks on one frame: Jacobian and drift rows ``rows`` of the 6-D ones."""

    rows: ClassVar[slice] = slice(0, 6)

    def __init__(self, name: str, robot: RobotModel, frame: str, **kwargs: Any) -> None:
        if not isinstance(frame, str) or not frame:
            raise ConfigError(f"{name}.frame: expected a frame name, got {frame!r}")
        self.frame = frame
        try:
            self.frame_id = robot.frame_id(frame)
        except KeyError as exc:
            raise ConfigError(f"{name}.frame: {exc}") from None
        if robot.dofs_moving(self.frame_id) == 0:
            moving = [f.name for f in robot.model.frames if robot.dofs_moving(f.name) > 0]
            raise ConfigError(
                f"{name}.frame: {frame!r} does not move with any joint (it is fixed to the base): its "
                f"Jacobian is 0 everywhere, so the task could never act; frames a joint moves: {moving}"
            )
        dim = self.rows.stop - self.rows.start
        super().__init__(name, robot, dim, **kwargs)
        self._check_weighted_rows_move()
        self._set_target_pose(pin.SE3.Identity())

    def _check_weighted_rows_move(self) -> None:
        """Refuse a frame along one of whose weighted rows no joint moves anywhere sampled. E.g. the
        Gen3's shoulder_link turns with joint 1 about z and its origin stays put: a position task
        there never acts, and a pose or orientation task would track the turn about z only while
        its weights on the other rows pretend otherwise. Such a row is 0 at every configuration;
        the error names it, so that its weight can be set to 0 or another frame chosen."""
        weighted = np.flatnonzero(self.weight > 0.0)
        samples = sample_configurations(self.robot, ROW_CHECK_SAMPLES)
        still = self.robot.still_rows(self.frame_id, self.rows.start + weighted, samples)
        if not still:
            return
        axes = [self.axis_names[r - self.rows.start] for r in still]
        working = self.robot.frames_moving_each_row(np.array(still), samples)
        raise ConfigError(
            f"{self.name}.frame: no joint moves {self.frame!r} along the task's weighted rows {axes}: "
            f"their Jacobian is 0 at all {ROW_CHECK_SAMPLES} sampled configurations, so the task could never "
            f"act along them; set their weight to 0, or use a frame that a joint moves along each of "
            f"{axes}: {working}"
        )

    def _compute(self, kin: KinematicsState) -> None:
        model, data, fid, rows = kin.model, kin.data, self.frame_id, self.rows
        self.J[:] = pin.getFrameJacobian(model, data, fid, _LWA)[rows]
        self.drift[:] = pin.getFrameClassicalAcceleration(model, data, fid, _LWA).vector[rows]
        self._error(data.oMf[fid])

    @abstractmethod
    def _error(self, current: pin.SE3) -> None:
        """Fill ``error`` from the current frame placement."""

    def _set_target(self, target: Any) -> None:
        if isinstance(target, CartesianTarget):
            pose, vel, acc = target.pose, target.velocity, target.acceleration
        else:
            pose, vel, acc = target, None, None
        checked_pose = self._as_pose(pose)
        s = self.rows
        if s.start < 3:  # the task reads the translation (pose, position)
            check_target_position(checked_pose.translation, f"{self.name} target")
        vel6 = None if vel is None else _as6(self.name, vel)
        acc6 = None if acc is None else _as6(self.name, acc)
        check_target_rates(f"{self.name} target", vel6, acc6)
        # _as6 gave checked float64 copies: their rows need no second check.
        ref_vel = np.zeros(self.dim) if vel6 is None else vel6[s]
        ref_acc = np.zeros(self.dim) if acc6 is None else acc6[s]
        # Stored only once every part is valid: a refused target leaves the previous one whole.
        self._set_target_pose(checked_pose)
        self._ref_vel[:] = ref_vel
        self._ref_acc[:] = ref_acc

    def _set_target_pose(self, pose: pin.SE3) -> None:
        """Keep ``pose`` (owned by this task) and views of its translation (m) and rotation.

        Reading an SE3 property costs ~0.15 µs; the views (Pinocchio's own column-major
        storage, so the error's matrix product sees the same operands) are read every step
        instead. ``R_ref.dot(Rᵀ)``: the same BLAS product as ``@``, ~0.4 µs cheaper.
        """
        self._target_pose = pose
        self._target_p = pose.translation
        self._target_R = pose.rotation

    def _as_pose(self, pose: Any) -> pin.SE3:
        if not isinstance(pose, pin.SE3):
            raise TargetError(
                f"{self.name}: expected a pinocchio.SE3 or CartesianTarget, got {type(pose).__name__}"
            )
        if not all_finite(pose.translation):
            raise TargetError(f"{self.name}: target pose has non-finite entries")
        if self.rows.stop > 3:  # the task reads the rotation (pose, orientation)
            # pin.SE3 stores any 3 × 3 matrix: a reflection or a scaled rotation would pass unseen.
            as_rotation(f"{self.name} target rotation", pose.rotation, error=TargetError)
        elif not np.isfinite(pose.rotation).all():
            raise TargetError(f"{self.name}: target pose has non-finite entries")
        return pose.copy()

    def hold_target(self, kin: KinematicsState) -> pin.SE3:
        """The frame's current placement (call after :meth:`KinematicsState.update`)."""
        return kin.data.oMf[self.frame_id].copy()


def _as6(name: str, value: Any) -> FloatArray:
    return as_vector(f"{name} target velocity/acceleration", value, 6, error=TargetError)


class FramePoseTask(FrameTask):
    """Full pose of a frame (6-D): ``e = [p_ref − p; log₃(R_ref·Rᵀ)]``."""

    kind = "pose"
    axis_names = ("x", "y", "z", "rx", "ry", "rz")
    rows = slice(0, 6)

    def __init__(self, name: str, robot: RobotModel, frame: str, **kwargs: Any) -> None:
        super().__init__(name, robot, frame, **kwargs)
        self._error_lin = self.error[:3]
        self._error_ang = self.error[3:]

    def _error(self, current: pin.SE3) -> None:
        np.subtract(self._target_p, current.translation, self._error_lin)
        self._error_ang[:] = pin.log3(self._target_R.dot(current.rotation.T))


class PositionTask(FrameTask):
    """Position of a frame origin (3-D): ``e = p_ref − p`` (m).

    Targets: a ``pinocchio.SE3`` or :class:`CartesianTarget` (translation used) or a
    3-vector (m).
    """

    kind = "position"
    axis_names = ("x", "y", "z")
    rows = slice(0, 3)

    def _error(self, current: pin.SE3) -> None:
        np.subtract(self._target_p, current.translation, self.error)

    def _as_pose(self, pose: Any) -> pin.SE3:
        if isinstance(pose, pin.SE3):
            return super()._as_pose(pose)
        p = as_vector(f"{self.name} target position", pose, 3, error=TargetError)
        return pin.SE3(np.eye(3), p)

    def hold_target(self, kin: KinematicsState) -> FloatArray:
        """The frame origin's current position (m)."""
        return kin.data.oMf[self.frame_id].translation.copy()


class OrientationTask(FrameTask):
    """Orientation of a frame (3-D): ``e = log₃(R_ref·Rᵀ)`` (rad, base-frame axes).

    Targets: a ``pinocchio.SE3`` or :class:`CartesianTarget` (rotation used) or a 3 × 3
    rotation matrix.
    """

    kind = "orientation"
    axis_names = ("rx", "ry", "rz")
    rows = slice(3, 6)

    def _error(self, current: pin.SE3) -> None:
        self.error[:] = pin.log3(self._target_R.dot(current.rotation.T))

    def _as_pose(self, pose: Any) -> pin.SE3:
        if isinstance(pose, pin.SE3):
            return super()._as_pose(pose)
        R = as_rotation(f"{self.name} target rotation", pose, error=TargetError)
        return pin.SE3(R, np.zeros(3))

    def hold_target(self, kin: KinematicsState) -> FloatArray:
        """The frame's current rotation matrix."""
        return kin.data.oMf[self.frame_id].rotation.copy()


class JointPostureTask(Task):
    """Joint configuration (n-D): ``e = q_ref ⊖ q`` (rad), ``J = I``, drift ``0``.

    Targets: a :class:`~torque_ctrl_ros.core.types.JointReference` or a vector of n angles.
    Continuous joints take the short way round.
    """

    kind = "posture"
    constant_jacobian = True

    def __init__(self, name: str, robot: RobotModel, **kwargs: Any) -> None:
        super().__init__(name, robot, robot.n, **kwargs)
        self.J[:] = np.eye(robot.n)
        self._target_q = np.zeros(robot.n)

    @property
    def axis_names(self) -> tuple[str, ...]:  # type: ignore[override]
        return self.robot.joint_names

    def _set_target(self, target: Any) -> None:
        if isinstance(target, JointReference):
            parts = target.q, target.v, target.a
        else:
            parts = target, None, None
        q, vel, acc = checked_joint_reference(f"{self.name} target", self.robot.n, *parts)
        # Stored only once every part is valid (see FrameTask._set_target).
        self._target_q[:] = q
        self._ref_vel[:] = 0.0 if vel is None else vel
        self._ref_acc[:] = 0.0 if acc is None else acc

    def _compute(self, kin: KinematicsState) -> None:
        self.robot.difference(self._target_q, kin.q, out=self.error)

    def hold_target(self, kin: KinematicsState) -> FloatArray:
        """The current joint angles (rad)."""
        return kin.q.copy()


#: Task classes by the value of their ``<task>.type`` parameter.
TASK_TYPES: dict[str, type[Task]] = {
    FramePoseTask.kind: FramePoseTask,
    PositionTask.kind: PositionTask,
    OrientationTask.kind: OrientationTask,
    JointPostureTask.kind: JointPostureTask,
}
