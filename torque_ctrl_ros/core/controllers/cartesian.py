"""Cartesian control through constrained dynamics: ``achd_rnea`` (ACHD → RNEA).

Per control step, with the tool frame ``f`` at pose ``(p, R)`` and twist ``ẋ = J q̇``
(``LOCAL_WORLD_ALIGNED``: velocity of the frame origin and angular velocity, base axes):

1. pose error ``e`` (6, base axes): ``e_p = p_ref − p`` and ``e_R = log3(R_ref Rᵀ)``
   (``pose_error: decoupled``, the default), or the SE(3) logarithm
   ``log6(oMf⁻¹ · oM_ref)`` rotated into base axes (``pose_error: se3``);
2. desired tool acceleration (classical, inertial frame, m/s² and rad/s²)
   ``a_des = a_ref + K_p ∘ e + K_d ∘ (ẋ_ref − ẋ)``;
3. ``β = αᵀ a_des`` for the constrained axes ``α`` (6 × n_c);
4. Gauss's principle (:mod:`..constrained_dynamics`) with feed-forward torque
   ``τ_ff = g(q) − K_null q̇`` (``g`` only with ``gravity_feedforward``) and the wrench
   ``f = f_task − B ∘ ẋ`` on the tool (``B``: ``free_axis_damping``, on the unconstrained axes
   only) → ``q̈``, ``λ``;
5. command ``τ = RNEA(q, q̇, q̈)`` with zero external wrench (``= M q̈ + c``), saturated by
   the base class.

On an exact plant every constrained axis then obeys ``ë + K_d ė + K_p e = 0`` (exactly for
the decoupled translation error; to first order in the rotation error). Because
``M q̈ + c = τ_ff + Jᵀ f + J_cᵀ λ``, the command equals ``τ_ff + Jᵀ f + J_cᵀ λ``:

* ``τ_ff`` only acts where the constraints leave freedom (Gauss's principle projects it
  dynamically consistently). On the 7-DoF Gen3 with all six axes constrained that is the
  elbow self-motion: without ``g(q)`` in ``τ_ff`` the self-motion would *fall* under gravity
  (the constraint forces hold only the tool), and without ``K_null`` nothing damps it.
* ``f_task`` only acts along unconstrained axes: with ``n_c = 6`` it changes ``λ`` but not
  ``q̈`` nor the command. With linear ``z`` left free it is the push that presses the tool
  onto a table (``f_task = (0, 0, −F, 0, 0, 0)`` gives a normal force ``≈ F``).
* ``J_cᵀ λ`` alone (the "constraint torque", :attr:`AchdSolution.constraint_torque`) misses
  ``τ_ff``, i.e. gravity: sending it alone lets the arm sag. It is kept for diagnostics.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike

from ..constrained_dynamics import (
    AXIS_NAMES,
    MIN_RCOND,
    ConstrainedDynamics,
    ConstrainedDynamicsResult,
    alpha_from_axes,
    selection_rows,
)
from ..errors import ConfigError, TargetError
from ..reach import check_target_position
from ..robot import DELAYED_DAMPING, ROW_CHECK_SAMPLES, RobotModel, check_pd_gains, sample_configurations
from ..target_checks import check_target_rates
from ..types import JointState
from ..validation import FloatArray, as_positive_float, as_rotation, as_vector, check_choice
from .base import Controller, reject_unknown_keys

POSE_ERRORS = ("decoupled", "se3")
#: Largest ``task_wrench`` entry accepted (N, N·m): far beyond what any arm's actuators give, while
#: the rounding it adds to the command stays small. With every axis constrained the wrench changes
#: only ``λ``, yet its rounding reaches the command, growing with the wrench until the solve
#: overflows (docs/controllers.md, "Measurements behind the core's bounds and defaults").
MAX_TASK_WRENCH = 1e6


def rotation_from_quaternion(quaternion_xyzw: ArrayLike) -> FloatArray:
    """The rotation matrix (3 × 3) of a quaternion ``(x, y, z, w)`` (``geometry_msgs`` order),
    normalised.

    Raises:
        TargetError: not 4 finite numbers, or a norm outside ``[0.9, 1.1]`` (e.g. an all-zero
            default message).
    """
    quat = as_vector("target quaternion (x, y, z, w)", quaternion_xyzw, 4, error=TargetError)
    norm = float(np.linalg.norm(quat))
    if not 0.9 <= norm <= 1.1:
        raise TargetError(f"target quaternion (x, y, z, w): expected unit norm, got {quat.tolist()}")
    x, y, z, w = quat / norm
    return np.array(pin.Quaternion(w, x, y, z).toRotationMatrix())


@dataclass(frozen=True)
class PoseReference:
    """A tool-frame reference in the robot's base frame.

    Attributes:
        position: frame origin ``p_ref`` (m), shape (3,).
        rotation: orientation ``R_ref`` (3 × 3, columns = frame axes in base axes).
        twist: ``[ṗ_ref; ω_ref]`` (m/s, rad/s, base axes) or ``None`` (zero).
        acceleration: classical ``[p̈_ref; ω̇_ref]`` (m/s², rad/s², base axes) or ``None`` (zero).

    Treat it as immutable: :class:`AchdRnea` validates a reference object once and reuses
    the result while the same object is passed, so change targets by making a new one.
    """

    position: FloatArray
    rotation: FloatArray
    twist: FloatArray | None = None
    acceleration: FloatArray | None = None

    @classmethod
    def from_se3(
        cls, pose: pin.SE3, twist: ArrayLike | None = None, acceleration: ArrayLike | None = None
    ) -> PoseReference:
        """Validated reference from a :class:`pinocchio.SE3` pose."""
        return check_pose_reference(
            cls(np.array(pose.translation), np.array(pose.rotation), _opt(twist), _opt(acceleration))
        )

    @classmethod
    def from_position_quaternion(
        cls,
        position: ArrayLike,
        quaternion_xyzw: ArrayLike,
        twist: ArrayLike | None = None,
        acceleration: ArrayLike | None = None,
    ) -> PoseReference:
        """Validated reference from a position (m) and a quaternion ``(x, y, z, w)``.

        The quaternion order is that of ``geometry_msgs/Quaternion``. It is normalised;
        a norm outside ``[0.9, 1.1]`` (e.g. an all-zero default message) is rejected.

        Raises:
            TargetError: wrong sizes, non-finite numbers, or a quaternion far from unit norm.
        """
        p = as_vector("target position", position, 3, error=TargetError)
        rot = rotation_from_quaternion(quaternion_xyzw)
        return check_pose_reference(cls(p, rot, _opt(twist), _opt(acceleration)))

    @property
    def se3(self) -> pin.SE3:
        """The pose as a :class:`pinocchio.SE3`."""
        return pin.SE3(self.rotation, self.position)


def _opt(value: ArrayLike | None) -> FloatArray | None:
    return None if value is None else np.array(value, dtype=np.float64)


def check_pose_reference(reference: PoseReference) -> PoseReference:
    """Return ``reference`` with float arrays of the right shapes, or raise :class:`TargetError`.

    Checks: finite numbers, ``position`` (3,), ``rotation`` a proper rotation matrix
    (:func:`~torque_ctrl_ros.core.validation.as_rotation`), ``twist`` and ``acceleration`` (6,)
    when given, within :data:`~torque_ctrl_ros.core.target_checks.MAX_TARGET_VELOCITY` and
    :data:`~torque_ctrl_ros.core.target_checks.MAX_TARGET_ACCELERATION`
    (:func:`~torque_ctrl_ros.core.target_checks.check_target_rates`).
    """
    return PoseReference(*_checked_pose_fields(reference))


#: The checked copies of a reference's ``position``, ``rotation``, ``twist``, ``acceleration``.
_PoseFields = tuple[FloatArray, FloatArray, FloatArray | None, FloatArray | None]


def _checked_pose_fields(reference: PoseReference) -> _PoseFields:
    """The checks of :func:`check_pose_reference`; the fields' checked copies, without the
    :class:`PoseReference` (a frozen dataclass: 0.7 µs to build) the controller does not need."""
    if not isinstance(reference, PoseReference):
        raise TargetError(f"achd_rnea: expected a PoseReference, got {type(reference).__name__}")
    p = as_vector("target position", reference.position, 3, error=TargetError)
    rot = as_rotation("target rotation", reference.rotation, error=TargetError)
    twist = (
        None if reference.twist is None else as_vector("target twist", reference.twist, 6, error=TargetError)
    )
    acc = (
        None
        if reference.acceleration is None
        else as_vector("target acceleration", reference.acceleration, 6, error=TargetError)
    )
    check_target_rates("target", twist, acc)
    return p, rot, twist, acc


def pose_error(current: pin.SE3, target: pin.SE3, kind: str = "decoupled") -> FloatArray:
    """Pose error ``[e_p; e_R]`` (m, rad) of ``current`` towards ``target``, base axes.

    ``decoupled``: ``e_p = p_ref − p``, ``e_R = log3(R_ref Rᵀ)`` (rotation vector taking
    ``R`` to ``R_ref``, in base axes). The translation error is then exactly the difference
    the Jacobian's linear rows differentiate, so the translational loop is linear.

    ``se3``: ``ν = log6(current⁻¹ · target)`` (tool axes) rotated into base axes. Its linear
    part is ``V(θ)⁻¹ Rᵀ (p_ref − p)``, so a combined rotation and translation error makes the
    tool point follow a screw (curved) path.
    """
    if kind == "se3":
        nu = pin.log6(current.actInv(target))
        rot = current.rotation
        return np.concatenate([rot @ nu.linear, rot @ nu.angular])
    e_rot = pin.log3(target.rotation @ current.rotation.T)
    return np.concatenate([target.translation - current.translation, e_rot])


def check_pose_error_axes(kind: str, axes: Sequence[str]) -> None:
    """Refuse ``se3`` errors unless all three angular axes ``rx, ry, rz`` are constrained.

    The ``se3`` linear part ``V(θ)⁻¹ Rᵀ (p_ref − p)`` mixes the translation error of every
    axis through the rotation error ``θ`` (rad), which only the angular rows regulate:

    * a free rotation axis leaves ``θ`` where it is. With a free translation axis too the
      constrained translation rows settle at 0 away from the target (with ``x, y, rz``: 8.3 mm
      off in ``y``, docs/controllers.md).
    * with all three translation axes constrained and a rotation axis free, the translation
      loop ``p̈ = K_p R V(θ)⁻¹ Rᵀ (p_ref − p) − K_d ṗ`` is unstable for ``θ`` above ~2.5 rad:
      ``V(θ)⁻¹`` is not symmetric and its complex eigenvalues' real part falls to 0 at π
      (largest real part of the loop's roots +0.22 1/s at 2.6 rad with ``K_p`` 100 1/s²,
      ``K_d`` 20 1/s; in MuJoCo a 3 cm step with the reference 3 rad off about ``z`` grew to
      102 mm off in 2 s).
    * angular rows alone read ``log3(R_ref Rᵀ)``, as ``decoupled`` does: nothing to gain.

    With ``rx, ry, rz`` constrained ``θ → 0`` and ``V → I``: the equilibrium is the target's
    and the translation loop tends to the decoupled one.

    Raises:
        ConfigError: ``kind`` is ``se3`` and one of ``rx, ry, rz`` is not in ``axes``.
    """
    if kind != "se3":
        return
    free_angular = [a for a in AXIS_NAMES[3:] if a not in axes]
    if not free_angular:
        return
    constrained_linear = [a for a in AXIS_NAMES[:3] if a in axes]
    why = (
        f"nothing regulates the rotation error θ that the translation rows {constrained_linear} mix "
        "in: they settle away from the target, or are unstable for θ above ~2.5 rad"
        if constrained_linear
        else "on angular axes alone it is the 'decoupled' error"
    )
    raise ConfigError(
        f"achd_rnea.pose_error: 'se3' needs all of rx, ry, rz constrained, got {list(axes)} "
        f"(free: {free_angular}): {why}; use 'decoupled'"
    )


@dataclass(frozen=True)
class AchdRneaConfig:
    """Configuration of :class:`AchdRnea` (see the module docs for the formulas).

    Attributes:
        frame: the controlled (constrained) frame, e.g. ``end_effector_link``.
        constrained_axes: names from ``x, y, z, rx, ry, rz`` (base axes), the columns of ``α``
            (a list, or one comma-separated string).
        kp: Cartesian stiffness ``ω_n²`` (1/s²) per axis ``x, y, z, rx, ry, rz``, ``> 0``.
        kd: Cartesian damping ``2 ζ ω_n`` (1/s) per axis, ``>= 0``; ``2 √kp`` by default.
        joint_damping: ``K_null`` (N·m·s/rad) per joint in ``τ_ff``, ``>= 0``; by default
            :data:`~..robot.DELAYED_DAMPING`, which stays stable with the command up to 5 ms
            late. It acts at every step, so every late command of a busy simulator or of the
            real arm's loop delays it: with the safe brakes' larger
            :data:`~..robot.DEFAULT_DAMPING` joints 1 and 3 ring with the command a few ms late,
            where this one tracks as it does on time (docs/hardware.md, "Damping and the delay,
            measured"). Alone or with ``free_axis_damping``, it is
            refused where the 1 kHz update with the robot's ``command_delay`` would make it grow
            (:meth:`RobotModel.check_frame_damping`): a scalar 1.0 is (the wrist needs ~10× less
            than the shoulder).
        gravity_feedforward: include ``g(q)`` in ``τ_ff``.
        task_wrench: ``f_task = [f; m]`` (N, N·m) on the frame origin, base axes; entries within
            ``±``:data:`MAX_TASK_WRENCH`.
        free_axis_damping: ``B`` (N·s/m for x, y, z; N·m·s/rad for rx, ry, rz), ``>= 0``: the
            wrench ``−B ∘ ẋ`` is added to ``f_task`` on the *unconstrained* axes only. It damps
            the motion the constraints leave free, e.g. the tool's bounce on a table.
        pose_error: ``decoupled`` or ``se3``; ``se3`` only with all three angular axes
            constrained (see :func:`check_pose_error_axes`).
        rcond: Delassus eigenvalue threshold for damping, relative to ``max(d_max, d_ref)`` (the
            largest eigenvalue, floored at its workspace scale), in ``[MIN_RCOND, 1)``.
        floor_height: the plane ``z = floor_height`` (m, base frame, within ±:data:`MAX_FLOOR_HEIGHT`)
            of the floor or table the arm stands on: a target position of the frame below it is
            refused (:meth:`AchdRnea.check_target_height`). This controller keeps no link above
            it (the QP controllers' floor barrier does): a target taken below it drove the arm
            into the floor in MuJoCo, joint_6 at 1.15× its speed limit at the impact.
    """

    frame: str
    constrained_axes: tuple[str, ...]
    kp: FloatArray
    kd: FloatArray
    joint_damping: FloatArray
    gravity_feedforward: bool
    task_wrench: FloatArray
    free_axis_damping: FloatArray
    pose_error: str
    rcond: float
    floor_height: float = 0.0

    @classmethod
    def create(
        cls,
        n: int,
        *,
        frame: str = "end_effector_link",
        constrained_axes: Sequence[str] = AXIS_NAMES,
        kp: Any = 100.0,
        kd: Any = None,
        joint_damping: Any = DELAYED_DAMPING,
        gravity_feedforward: Any = True,
        task_wrench: Any = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
        free_axis_damping: Any = 0.0,
        pose_error: Any = "decoupled",
        rcond: Any = 1e-6,
        floor_height: Any = 0.0,
    ) -> AchdRneaConfig:
        """Validated config; scalar gains apply to every axis (or joint)."""
        if not isinstance(frame, str) or not frame:
            raise ConfigError(f"achd_rnea.frame: expected a frame name, got {frame!r}")
        # A ROS string parameter "x, y, rx" is accepted as well as a YAML list.
        names = constrained_axes.split(",") if isinstance(constrained_axes, str) else constrained_axes
        if not isinstance(names, Sequence | np.ndarray):
            raise ConfigError(
                f"achd_rnea.constrained_axes: expected a list of names from {list(AXIS_NAMES)}, "
                f"got {constrained_axes!r}"
            )
        axes = tuple(str(a).strip().lower() for a in names)
        try:
            alpha_from_axes(list(axes), error=ConfigError)
        except ConfigError as exc:  # its messages, shared with the targets' axes, name no parameter
            reason = str(exc).removeprefix("constrained axes: ")
            raise ConfigError(f"achd_rnea.constrained_axes: {reason}") from None
        kp_arr = as_vector("achd_rnea.kp", kp, 6, broadcast_scalar=True, strictly_positive=True)
        kd_arr = (
            2.0 * np.sqrt(kp_arr)
            if kd is None
            else as_vector("achd_rnea.kd", kd, 6, broadcast_scalar=True, min_value=0.0)
        )
        _check_gains(axes, kp_arr, kd_arr, delay=1)
        if not isinstance(gravity_feedforward, bool | np.bool_):
            raise ConfigError(
                f"achd_rnea.gravity_feedforward: expected true or false, got {gravity_feedforward!r}"
            )
        kind = check_choice("achd_rnea.pose_error", pose_error, POSE_ERRORS)
        check_pose_error_axes(kind, axes)
        rc = as_positive_float("achd_rnea.rcond", rcond)
        if not MIN_RCOND <= rc < 1.0:
            raise ConfigError(f"achd_rnea.rcond: expected a number in [{MIN_RCOND:g}, 1), got {rcond!r}")
        wrench = as_vector("achd_rnea.task_wrench", task_wrench, 6)
        if np.abs(wrench).max() > MAX_TASK_WRENCH:
            raise ConfigError(
                f"achd_rnea.task_wrench: expected entries within ±{MAX_TASK_WRENCH:g} (N, N·m), got "
                f"{wrench.tolist()}"
            )
        if (
            isinstance(floor_height, bool)
            or not isinstance(floor_height, int | float | np.integer | np.floating)
            or not abs(float(floor_height)) <= MAX_FLOOR_HEIGHT
        ):
            raise ConfigError(
                f"achd_rnea.floor_height: expected one finite height (m, base frame) within "
                f"±{MAX_FLOOR_HEIGHT:g}, got {floor_height!r}"
            )
        return cls(
            frame=frame,
            constrained_axes=axes,
            kp=kp_arr,
            kd=kd_arr,
            joint_damping=as_vector(
                "achd_rnea.joint_damping", joint_damping, n, broadcast_scalar=True, min_value=0.0
            ),
            gravity_feedforward=bool(gravity_feedforward),
            task_wrench=wrench,
            free_axis_damping=as_vector(
                "achd_rnea.free_axis_damping", free_axis_damping, 6, broadcast_scalar=True, min_value=0.0
            ),
            pose_error=kind,
            rcond=rc,
            floor_height=float(floor_height),
        )


#: Largest ``floor_height`` accepted (m): beyond any arm's reach from its base.
MAX_FLOOR_HEIGHT = 10.0


def _check_gains(axes: Sequence[str], kp: FloatArray, kd: FloatArray, delay: int) -> None:
    """:func:`check_pd_gains` on the constrained ``axes`` only (the others' gains are not used),
    with the command ``delay`` periods late."""
    used = [AXIS_NAMES.index(a) for a in axes]
    kp, kd = np.asarray(kp, dtype=np.float64), np.asarray(kd, dtype=np.float64)  # a config built directly
    check_pd_gains("achd_rnea.kp/kd", kp[used], kd[used], [AXIS_NAMES[i] for i in used], delay)


@dataclass(slots=True)
class AchdSolution:
    """Everything :meth:`AchdRnea.solve` computed for one state, read-only by convention (a record
    made every control step, not frozen: see :class:`~..constrained_dynamics.FrameKinematics`).

    Attributes:
        tau: the command ``RNEA(q, q̇, q̈)`` (N·m), unsaturated.
        constraint_torque: ``J_cᵀ λ`` (N·m), for comparison only (not a valid command).
        feedforward_torque: ``τ_ff`` (N·m).
        wrench: the wrench given to the solve, ``f_task − B ∘ ẋ`` on free axes (N, N·m).
        error: pose error ``[e_p; e_R]`` (m, rad, base axes) the PD law acts on
            (``config.pose_error``).
        tracking_error: ``[p_ref − p; log3(R_ref Rᵀ)]`` (m, rad, base axes), whatever
            ``pose_error`` is: what the diagnostics report (the same array as ``error`` with
            ``decoupled``).
        desired_acceleration: ``a_des`` (6,) before projection on ``α``.
        beta: ``αᵀ a_des`` (n_c,).
        dynamics: the full constrained-dynamics result (``q̈``, ``λ``, regularisation).
    """

    tau: FloatArray
    constraint_torque: FloatArray
    feedforward_torque: FloatArray
    wrench: FloatArray
    error: FloatArray
    tracking_error: FloatArray
    desired_acceleration: FloatArray
    beta: FloatArray
    dynamics: ConstrainedDynamicsResult


class AchdRnea(Controller[PoseReference]):
    """Cartesian PD through Gauss-principle constrained dynamics, then RNEA.

    Diagnostics (``info``): ``position_error`` (m), ``orientation_error`` (rad), the norms of
    ``p_ref − p`` and ``log3(R_ref Rᵀ)`` on the *constrained* axes only (an unconstrained axis
    is not regulated), with either ``pose_error``;
    ``regularised`` (0/1); ``delassus_condition``; ``constraint_residual``; ``torque_scale``.
    A command beyond the effort limits is scaled (``torque_scale`` = ``s`` < 1) rather than
    clipped joint by joint: toward ``τ₀``, the command of the same step with ``β = 0``, so the
    constrained axes get ``αᵀẍ = s·β`` and keep the direction the PD law asked. Scaled toward
    ``c(q, q̇)`` instead, ``q̈' = s·q̈`` gives ``ẍ' = s·β + (1 − s)·J̇q̇``: at speed the drift
    turns the tool's acceleration off that line (41° at kp 1000 on a 0.3 m step).
    """

    name = "achd_rnea"
    scales_saturated_torque = True
    PARAMS = frozenset(
        {
            "frame",
            "constrained_axes",
            "kp",
            "kd",
            "joint_damping",
            "gravity_feedforward",
            "task_wrench",
            "free_axis_damping",
            "pose_error",
            "rcond",
            "floor_height",
        }
    )

    def __init__(self, robot: RobotModel, config: AchdRneaConfig | None = None) -> None:
        super().__init__(robot)
        self.config = config or AchdRneaConfig.create(robot.n)
        try:
            self.dynamics = ConstrainedDynamics(robot, self.config.frame, rcond=self.config.rcond)
        except KeyError as exc:  # FrameNotFoundError: the message lists the valid frames
            raise ConfigError(f"achd_rnea.frame: {exc}") from None
        except ConfigError as exc:  # rcond of a config built directly (create() checks it)
            raise ConfigError(f"achd_rnea.{exc}") from None
        self.alpha = alpha_from_axes(list(self.config.constrained_axes), error=ConfigError)
        # A config built directly: create() checked these. An unknown pose_error would take solve()'s
        # se3 branch toward a pose that was never built (the identity), with no sign in the info.
        check_choice("achd_rnea.pose_error", self.config.pose_error, POSE_ERRORS)
        check_pose_error_axes(self.config.pose_error, self.config.constrained_axes)
        # create() checked the gains one period late; the robot's arm may be later than that.
        _check_gains(self.config.constrained_axes, self.config.kp, self.config.kd, robot.delay_periods)
        axes, dofs = len(self.config.constrained_axes), robot.dofs_moving(self.config.frame)
        if dofs < axes:
            # The constraint rows are then dependent everywhere: every step would be regularised.
            raise ConfigError(
                f"achd_rnea.frame: {self.config.frame!r} is moved by {dofs} joint(s), fewer than the "
                f"{axes} constrained axes {list(self.config.constrained_axes)}"
            )
        rows = selection_rows(self.alpha)
        assert rows is not None, "alpha_from_axes gives unit axes only"
        self._check_axes_independent(rows)
        self._alpha_rows = rows  # αᵀ·X = X[rows]: axis selection
        mask = self.alpha.sum(axis=1) > 0.0
        self._linear_mask = mask[:3]
        self._angular_mask = mask[3:]
        # Damping on a constrained axis would only change λ (the constraint absorbs it): keep it off.
        self._free_damping = np.where(mask, 0.0, self.config.free_axis_damping)
        # No task wrench and no damping on a free axis (every axis constrained, say): the wrench is
        # 0 at every step, and its Jᵀ·f in the solve (~1 µs) is left out.
        self._wrench_acts = bool(np.any(self.config.task_wrench) or self._free_damping.any())
        self._no_wrench = np.zeros(6)
        self._no_wrench.flags.writeable = False
        self._minus_joint_damping = np.negative(self.config.joint_damping, dtype=np.float64)
        # K_null·q̇ in τ_ff and B∘ẋ on the free axes are dampings held for one period. Where the
        # constraints leave freedom they act through N = M⁻¹ − M⁻¹·J_cᵀ·D⁻¹·J_c·M⁻¹ ⪯ M⁻¹, so the
        # check with M⁻¹ is on the safe side: a scalar 1.0 sends the self-motion of the
        # [x, y, z]-constrained arm from 0.01 to 16 rad/s in 50 ms.
        robot.check_frame_damping(
            "achd_rnea.joint_damping, free_axis_damping",
            self.config.joint_damping,
            self.config.frame,
            self._free_damping,
        )
        # Rows of the error on constrained axes, for the diagnostics.
        self._linear_rows = np.flatnonzero(self._linear_mask)
        self._angular_rows = 3 + np.flatnonzero(self._angular_mask)
        # The last reference object passed in, its fields' checked copies and, for the se3
        # error, its pose (references are immutable, so check each once: a new one each step
        # costs 3-7 µs in checks, a held one nothing).
        self._reference_in: object = None
        self._reference: _PoseFields | None = None
        self._reference_se3 = pin.SE3.Identity()
        self._last_solution: AchdSolution | None = None

    def _check_axes_independent(self, rows: slice | np.ndarray) -> None:
        """Refuse constrained axes whose Jacobian rows are dependent at every sampled configuration:
        every step would be regularised. E.g. ``x`` of shoulder_link (0 everywhere: its origin lies
        on joint 1's axis) or ``x, y`` of half_arm_1_link (both from joint 1 alone): the check on
        ``dofs_moving`` counts the joints that move the frame, not the axes they move it along."""
        frame, axes = self.config.frame, list(self.config.constrained_axes)
        samples = sample_configurations(self.robot, ROW_CHECK_SAMPLES)
        if self.robot.frame_rows_rank(frame, rows, samples) == len(axes):
            return
        working = self.robot.frames_reaching_rank(rows, samples, len(axes))
        raise ConfigError(
            f"achd_rnea.frame: the Jacobian rows of {frame!r} on the constrained axes {axes} are 0 or "
            f"dependent at all {ROW_CHECK_SAMPLES} sampled configurations (the joints never move it "
            f"along them independently), so every step would be regularised; frames the joints move "
            f"along {axes} independently: {working}"
        )

    @classmethod
    def from_params(cls, robot: RobotModel, params: Mapping[str, Any]) -> AchdRnea:
        """Parameters: the fields of :class:`AchdRneaConfig` (all optional)."""
        reject_unknown_keys(cls.name, params, set(cls.PARAMS))
        return cls(robot, AchdRneaConfig.create(robot.n, **dict(params)))

    def check_target_height(self, position: FloatArray, what: str) -> None:
        """Refuse a target ``position`` (m, base frame) of the frame below the plane
        ``z = floor_height`` (:class:`AchdRneaConfig`), raising :class:`TargetError`."""
        if not float(position[2]) >= self.config.floor_height:
            x, y, z = (float(c) for c in position)
            raise TargetError(
                f"{what}: position ({x:.3f}, {y:.3f}, {z:.3f}) m is below the floor's plane z = "
                f"{self.config.floor_height:g} m (achd_rnea.floor_height): the arm would be driven into it"
            )

    def hold_reference(self, state: JointState) -> PoseReference:
        """The tool pose at ``state``, at rest."""
        q, _ = self.robot.check_state(state.q, state.v)
        return PoseReference.from_se3(self.robot.frame_placement(q, self.dynamics.frame_index))

    def _checked_reference(self, reference: PoseReference) -> _PoseFields:
        """The checks of :func:`check_pose_reference` and :func:`~..reach.check_target_position`
        (a coordinate beyond ±``MAX_TARGET_DISTANCE`` is refused), run once per reference
        object; the fields' checked copies (``position``, ``rotation``, ``twist``,
        ``acceleration``)."""
        if reference is not self._reference_in or self._reference is None:
            fields = _checked_pose_fields(reference)
            check_target_position(fields[0], f"{self.name} target")
            if self.config.pose_error != "decoupled":  # solve()'s condition; decoupled needs no SE3 (0.8 µs)
                self._reference_se3 = pin.SE3(fields[1], fields[0])
            self._reference = fields
            self._reference_in = reference
        return self._reference

    def solve(self, q: FloatArray, v: FloatArray, reference: PoseReference) -> AchdSolution:
        """Run steps 1–5 of the module docs (without saturation) for a validated state.

        Pinocchio work per call: one ``computeAllTerms`` (kinematics, ``M``, ``c``, ``g``),
        a Cholesky factorisation of ``M`` and one RNEA for the command.
        """
        position, rotation, twist, acceleration = self._checked_reference(reference)
        cfg = self.config
        dyn = self.dynamics
        kin = dyn.kinematics(q, v)
        # pose_error(..., "decoupled") written into one preallocated vector.
        tracking_error = np.empty(6)
        placement = kin.placement
        np.subtract(position, placement.translation, out=tracking_error[:3])
        tracking_error[3:] = pin.log3(rotation.dot(placement.rotation.T))
        if cfg.pose_error == "decoupled":
            error = tracking_error
        else:
            error = pose_error(placement, self._reference_se3, cfg.pose_error)
        v_err = -kin.velocity if twist is None else twist - kin.velocity
        a_des = cfg.kp * error + cfg.kd * v_err
        if acceleration is not None:
            a_des += acceleration
        beta = a_des[self._alpha_rows]  # αᵀ·a_des
        tau_ff = self._minus_joint_damping * v
        if cfg.gravity_feedforward:
            tau_ff += dyn.gravity(q, kin)  # g(q) from the same computeAllTerms pass
        if self._wrench_acts:
            wrench = cfg.task_wrench - self._free_damping * kin.velocity
            f_ext: FloatArray | None = wrench
        else:
            wrench, f_ext = self._no_wrench, None
        result = dyn.solve_validated(q, v, self.alpha, beta, tau_ff, f_ext, kin, alpha_rows=self._alpha_rows)
        # τ = RNEA(q, q̇, q̈) with zero wrench, on the robot's own data buffer (the dynamics'
        # buffer keeps the terms of this step) and the configuration converted once above.
        tau = np.array(pin.rnea(self.robot.model, self.robot.data, dyn.configuration, v, result.qdd))
        return AchdSolution(
            tau, result.constraint_torque, tau_ff, wrench, error, tracking_error, a_des, beta, result
        )

    def torque(
        self, q: FloatArray, v: FloatArray, reference: PoseReference
    ) -> tuple[FloatArray, dict[str, float]]:
        """``RNEA(q, q̇, q̈_ACHD)`` and the diagnostics listed in the class docs."""
        sol = self.solve(q, v, reference)
        self._last_solution = sol
        e = sol.tracking_error
        e_lin = e[self._linear_rows]
        e_ang = e[self._angular_rows]
        info = {
            "position_error": math.sqrt(float(e_lin.dot(e_lin))),
            "orientation_error": math.sqrt(float(e_ang.dot(e_ang))),
            "regularised": float(sol.dynamics.regularised),
            "delassus_condition": sol.dynamics.delassus_condition,
            "constraint_residual": sol.dynamics.constraint_residual,
        }
        return sol.tau, info

    def saturation_bias(self, q: FloatArray, v: FloatArray) -> FloatArray:
        """``τ₀ = τ − J_cᵀ·(D + μ·I)⁻¹·β`` (N·m), the last step's command with ``β = 0``
        (:meth:`ConstrainedDynamicsResult.beta_torque`): see the class docs."""
        sol = self._last_solution
        if sol is None:  # torque() has not run: nothing of this step to keep
            return super().saturation_bias(q, v)
        return sol.tau - sol.dynamics.beta_torque(sol.beta)

    def constraint_torque_command(self, state: JointState, reference: PoseReference) -> FloatArray:
        """``J_cᵀ λ`` alone (N·m), saturated: the command the module docs warn against (without
        ``τ_ff`` the arm sags); for comparison in tests, never published."""
        q, v = self.robot.check_state(state.q, state.v)
        return self.limiter.apply(self.solve(q, v, reference).constraint_torque).tau


__all__ = [
    "AchdRnea",
    "AchdRneaConfig",
    "AchdSolution",
    "PoseReference",
    "check_pose_error_axes",
    "check_pose_reference",
    "pose_error",
    "rotation_from_quaternion",
]
