"""Checks on joint targets and trajectory waypoints once read into arrays (model joint order; pure).

The controller node's target sources (:mod:`torque_ctrl_ros.nodes.targets`) turn messages into
numpy arrays and call these; a check raises :class:`TargetError` naming what is wrong and where
(the joints, and a trajectory's point), and the source refuses the message with that text.
What the trackers check when a target takes effect (the motion between waypoints, the start
state, the stamp) is in :mod:`.target_tracking` and :mod:`.trajectory`.

Both a single joint target and a trajectory's waypoints take the same joint limits
(:func:`limit_masks`): positions within the model's position limits (``|q| <= MAX_ANGLE`` on a
joint without any), speeds within its velocity limits. A reference handed to a controller
directly (computed_torque's, a posture task's) gets the looser :func:`checked_joint_reference`:
sizes, ``|q| <= MAX_ANGLE``, the most an angle difference can resolve, and velocities and
accelerations within :data:`MAX_TARGET_VELOCITY` and :data:`MAX_TARGET_ACCELERATION`
(:func:`check_target_rates`, which a QP frame task's target gets too).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np
from numpy.typing import NDArray

from .errors import TargetError
from .safety import MAX_ANGLE
from .validation import FloatArray, as_vector

if TYPE_CHECKING:
    from .robot import RobotModel
    from .target_tracking import TrajectoryPoints

END_VELOCITY_TOLERANCE = 1e-6
"""Largest |velocity| (rad/s) accepted at a trajectory's last point."""

MAX_TARGET_VELOCITY = 100.0
"""Largest |velocity| (rad/s, m/s) taken in a target handed to a controller directly (a joint
reference, a QP task's target). No real target comes near: the Gen3's joints are limited to
1.2–1.4 rad/s. Far beyond, the PD term ``kd·v`` swamps the QP: with the shipped qpid at home a
tool target velocity of 1e5 m/s (kd 20) made the step fall back."""

MAX_TARGET_ACCELERATION = 1.0e4
"""Largest |acceleration| (rad/s², m/s²) taken in a target handed to a controller directly. Above
the most a trajectory may ask of any Gen3 joint (:func:`~.trajectory.acceleration_limits`: 26 to
8001 rad/s², the light last joint the most); no planned motion comes near. With the shipped qpid at
home a tool target acceleration of 1e6 m/s² made the step fall back, 1e308 overflowed."""

BoolArray = NDArray[np.bool_]


def joints_at(robot: RobotModel, where: NDArray[np.generic]) -> list[str]:
    """The names of the joints whose entry of ``where`` (model order) is true or non-zero."""
    return [robot.joint_names[i] for i in np.flatnonzero(where)]


def base_frame(robot: RobotModel) -> str:
    """Name of the model's root body frame (``base_link`` for the Gen3): the frame of pose targets.

    That is the first frame attached to the universe joint after the universe frame itself.
    """
    frames = robot.model.frames
    for k in range(1, len(frames)):
        if frames[k].parentJoint == 0:
            return str(frames[k].name)
    return str(frames[0].name)


def limit_masks(
    robot: RobotModel, q: FloatArray, v: FloatArray | None = None
) -> tuple[BoolArray, BoolArray | None]:
    """Where ``q`` (rad) is outside the model's position limits and where ``v`` (rad/s) is above its
    velocity limits (``None`` without ``v``), elementwise: ``q`` and ``v`` are one target (``n``)
    or one row per waypoint (``m × n``).

    Outside: ``q < lower``, ``q > upper`` or ``|q| > MAX_ANGLE``. A joint without position limits
    (continuous) is still held to ``MAX_ANGLE``: beyond, the wrapped error to the target rounds to
    nothing and the joint would silently lose its stiffness. Above: ``|v| > velocity_limit``; a
    target velocity no joint can reach only drives every joint into saturation. A NaN is in
    neither mask (the finite checks come first).
    """
    outside = (q < robot.position_lower) | (q > robot.position_upper) | (np.abs(q) > MAX_ANGLE)
    fast = None if v is None else np.abs(v) > robot.velocity_limit
    return outside, fast


def _refuse_beyond_limits(robot: RobotModel, what: str, outside: BoolArray, fast: BoolArray | None) -> None:
    """Raise :class:`TargetError` naming the joints of one target (``n`` masks from
    :func:`limit_masks`) outside the position limits, or else above the velocity limits."""
    if outside.any():
        raise TargetError(f"{what}: outside the position limits at {joints_at(robot, outside)}")
    if fast is not None and fast.any():
        raise TargetError(f"{what}: velocity above the joint velocity limits at {joints_at(robot, fast)}")


def check_joint_limits(robot: RobotModel, q: FloatArray, what: str, v: FloatArray | None = None) -> None:
    """Raise :class:`TargetError` naming the joints of ``q`` (rad) outside the model's position
    limits, or of ``v`` (rad/s) above its velocity limits (:func:`limit_masks`)."""
    _refuse_beyond_limits(robot, what, *limit_masks(robot, q, v))


def _check_finite(robot: RobotModel, what: str, field: str, values: FloatArray) -> None:
    if not np.isfinite(values).all():
        raise TargetError(f"{what}: non-finite {field} at {joints_at(robot, ~np.isfinite(values))}")


def check_joint_target(robot: RobotModel, q: FloatArray, v: FloatArray | None, what: str) -> None:
    """Check a joint target to hold: positions ``q`` (rad) and velocities ``v`` (rad/s, ``None``:
    not given), model order, finite and within the joint limits (:func:`check_joint_limits`),
    and the velocities, if given, all zero.

    A held target is a rest point that cannot move: a held ``(q, v ≠ 0)`` makes a PD law settle
    where ``kp·e + kd·(v − q̇) = 0`` with ``q̇ = 0``, i.e. at ``q + (kd/kp)·v`` rather than at
    ``q``. Moving through a point takes a trajectory.

    Raises:
        TargetError: naming ``what`` and the joints.
    """
    _check_finite(robot, what, "position", q)
    if v is not None:
        _check_finite(robot, what, "velocity", v)
    check_joint_limits(robot, q, what, v)
    if v is not None and v.any():
        raise TargetError(
            f"{what}: non-zero velocity at {joints_at(robot, v)}; a held target is a rest point, it "
            "cannot move (it would settle off the target): leave velocity empty or zero; to move "
            "through a point, send a trajectory (~/joint_trajectory, computed_torque)"
        )


def check_trajectory_points(robot: RobotModel, points: TrajectoryPoints) -> None:
    """Check a trajectory's waypoints (model order), in this order, whole arrays at a time:

    * accelerations only with velocities: a quintic needs both, and without velocities the
      accelerations could only be dropped, which would silently turn the motion into a cubic
      through the positions;
    * positions, velocities and accelerations finite (the first point with a NaN or infinity
      named, and its joints);
    * positions and velocities within the joint limits (:func:`limit_masks`; the first point
      past one named, and its joints);
    * the last point's velocities, if given, within :data:`END_VELOCITY_TOLERANCE` of 0.

    Times and the motion between waypoints are left to
    :class:`~.trajectory.JointTrajectory` and :func:`~.trajectory.check_motion`.

    Raises:
        TargetError: naming the point (or ``trajectory`` for the whole) and the joints.
    """
    pos, vel, acc = points.positions, points.velocities, points.accelerations
    if acc is not None and vel is None:
        raise TargetError("trajectory: accelerations without velocities; give both, or positions only")
    for field, values in (("positions", pos), ("velocities", vel), ("accelerations", acc)):
        if values is not None and not np.isfinite(values).all():
            k = int(np.flatnonzero(~np.isfinite(values).all(axis=1))[0])
            raise TargetError(
                f"trajectory point {k}: non-finite {field} at {joints_at(robot, ~np.isfinite(values[k]))}"
            )
    outside, fast = limit_masks(robot, pos, vel)
    beyond = outside if fast is None else outside | fast
    first_bad = np.flatnonzero(beyond.any(axis=1))
    if first_bad.size:
        k = int(first_bad[0])
        _refuse_beyond_limits(robot, f"trajectory point {k}", outside[k], None if fast is None else fast[k])
    # The reference stops at the last point: a velocity given there would step to zero (one
    # ending at a limit while still moving would carry the arm past it). Rounding is let through
    # (ros2_controllers allows 1.2e-7), and so is an acceleration: planners such as MoveIt's
    # time parameterisation end on the final deceleration, and only a feedforward term steps.
    if vel is not None and np.any(np.abs(vel[-1]) > END_VELOCITY_TOLERANCE):
        raise TargetError(
            f"trajectory: the last point has velocities {vel[-1].tolist()} rad/s; they must be 0 "
            "there (the reference stops at the last point)"
        )


def check_target_rates(what: str, velocity: FloatArray | None, acceleration: FloatArray | None) -> None:
    """Raise :class:`TargetError` where a target's ``velocity`` (rad/s, m/s) is above
    :data:`MAX_TARGET_VELOCITY` or its ``acceleration`` (rad/s², m/s²) above
    :data:`MAX_TARGET_ACCELERATION` in size (``None``: not given); ``what`` begins the message.

    An approach hands the controller a new target every step, so this runs every step then
    (:func:`within`: ~1.2 µs for two 7-vectors, where numpy's ``abs`` and ``max`` took ~3)."""
    if velocity is not None and not within(velocity, MAX_TARGET_VELOCITY):
        _refuse_rate(what, "velocity", velocity, MAX_TARGET_VELOCITY, "rad/s or m/s")
    if acceleration is not None and not within(acceleration, MAX_TARGET_ACCELERATION):
        _refuse_rate(what, "acceleration", acceleration, MAX_TARGET_ACCELERATION, "rad/s² or m/s²")


def within(values: FloatArray, bound: float) -> bool:
    """Whether every entry of the vector ``values`` lies in ``[−bound, bound]`` (``False`` for a
    NaN). On Python floats: ~0.6 µs for a 7-vector, ``np.abs(values).max() <= bound`` ~1.5."""
    return all(-bound <= x <= bound for x in values.tolist())


def _refuse_rate(what: str, field: str, values: FloatArray, bound: float, unit: str) -> NoReturn:
    raise TargetError(
        f"{what} {field}: an entry above {bound:g} {unit} in size, which no real target reaches: "
        f"{values.tolist()}"
    )


def checked_joint_reference(
    what: str, n: int, q: Any, v: Any = None, a: Any = None
) -> tuple[FloatArray, FloatArray | None, FloatArray | None]:
    """A joint reference's positions ``q`` (rad), velocities ``v`` (rad/s) and accelerations ``a``
    (rad/s², both optional) for ``n`` joints as float64 copies, or a :class:`TargetError`; the
    positions within ``±MAX_ANGLE``, the velocities and accelerations within
    :data:`MAX_TARGET_VELOCITY` and :data:`MAX_TARGET_ACCELERATION` (:func:`check_target_rates`).

    Beyond that no angle difference resolves: past ~1e15 rad the short way round on a continuous
    joint is rounding (at 1e17 a joint's error read 0), and a posture error of 1e200 rad
    overflows the QP's cost (every step falls back, said only in the step's info). ``what``
    begins every message: ``reference`` (computed_torque's) gives ``reference position: …``, a
    posture task ``posture target position: …``. Parts, not a :class:`JointReference`: a task
    streamed a new target every step builds no object for it.
    """
    q_arr = as_vector(f"{what} position", q, n, error=TargetError)
    if not np.abs(q_arr).max() <= MAX_ANGLE:
        raise TargetError(f"{what} position: |q| above {MAX_ANGLE:g} rad: {q_arr.tolist()}")
    v_arr = None if v is None else as_vector(f"{what} velocity", v, n, error=TargetError)
    a_arr = None if a is None else as_vector(f"{what} acceleration", a, n, error=TargetError)
    check_target_rates(what, v_arr, a_arr)
    return q_arr, v_arr, a_arr
