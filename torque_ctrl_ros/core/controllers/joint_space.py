"""Joint-space controllers: gravity compensation and RNEA computed torque."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..robot import RobotModel, check_pd_gains
from ..safety import MAX_ANGLE
from ..target_checks import MAX_TARGET_ACCELERATION, MAX_TARGET_VELOCITY, checked_joint_reference, within
from ..types import JointReference, JointState
from ..validation import FloatArray, as_vector
from .base import Controller, reject_unknown_keys


@dataclass(frozen=True)
class GravityCompensationConfig:
    """Gains of :class:`GravityCompensation`.

    Attributes:
        damping: joint damping ``K_d`` (N·m·s/rad), one per joint, ``>= 0``.
    """

    damping: FloatArray

    @classmethod
    def create(cls, n: int, damping: Any = 0.0) -> GravityCompensationConfig:
        """Validated config; ``damping`` may be a scalar (same for every joint)."""
        return cls(as_vector("gravity_comp.damping", damping, n, broadcast_scalar=True, min_value=0.0))


class GravityCompensation(Controller[None]):
    """``tau = g(q) − K_d·q̇`` (N·m): the arm floats where it is, optionally damped.

    ``K_d`` acts once per control period ``h``, so it must keep every eigenvalue of
    ``h·M(q)⁻¹·K_d`` below 1 (:meth:`RobotModel.check_damping`, ``h`` = 1 ms; below 0.347 with the
    robot's ``command_delay`` at the real Gen3's 5 ms); a scalar above 0.28 N·m·s/rad breaks that
    on the Gen3's wrist and is refused with a :class:`ConfigError`.
    """

    name = "gravity_comp"

    def __init__(self, robot: RobotModel, config: GravityCompensationConfig | None = None) -> None:
        super().__init__(robot)
        self.config = config or GravityCompensationConfig.create(robot.n)
        robot.check_damping("gravity_comp.damping", self.config.damping)

    @classmethod
    def from_params(cls, robot: RobotModel, params: Mapping[str, Any]) -> GravityCompensation:
        """Parameters: ``damping`` (scalar or per joint, N·m·s/rad)."""
        reject_unknown_keys(cls.name, params, {"damping"})
        return cls(robot, GravityCompensationConfig.create(robot.n, params.get("damping", 0.0)))

    def hold_reference(self, state: JointState) -> None:
        """Gravity compensation has no reference."""
        return None

    def torque(self, q: FloatArray, v: FloatArray, reference: None) -> tuple[FloatArray, dict[str, float]]:
        """``g(q) − K_d·q̇``."""
        return self.robot.gravity(q) - self.config.damping * v, {}


#: ``kp`` (1/s²) of :class:`ComputedTorque` when none is given: ``ω_n = 10`` rad/s on every joint.
DEFAULT_KP = 100.0


@dataclass(frozen=True)
class ComputedTorqueConfig:
    """Gains of :class:`ComputedTorque`.

    Attributes:
        kp: stiffness as a squared natural frequency ``ω_n²`` (1/s²), one per joint, ``> 0``.
        kd: damping ``2·ζ·ω_n`` (1/s), one per joint; critical (``2·√kp``) by default. Gains
            unstable at 1 kHz with the command :meth:`create`'s ``delay`` periods late (one by
            default; :class:`ComputedTorque` holds them to its robot's ``delay_periods``), ``kd = 0``
            among them, or stable with a damping ratio below 0.1 there, are refused
            (:func:`check_pd_gains`).
    """

    kp: FloatArray
    kd: FloatArray

    @classmethod
    def create(
        cls, n: int, kp: Any, kd: Any = None, delay: int = 1, *, joint_names: Sequence[str] | None = None
    ) -> ComputedTorqueConfig:
        """Validated config; scalars apply to every joint; ``kd=None`` gives ``2·√kp``; the gains
        checked with the command ``delay`` periods late (:func:`check_pd_gains`), a refusal naming
        the joint from ``joint_names`` (``joint #1`` … without)."""
        kp_arr = as_vector("computed_torque.kp", kp, n, broadcast_scalar=True, strictly_positive=True)
        if kd is None:
            kd_arr = 2.0 * np.sqrt(kp_arr)
        else:
            kd_arr = as_vector("computed_torque.kd", kd, n, broadcast_scalar=True, min_value=0.0)
        names = [f"joint #{i + 1}" for i in range(n)] if joint_names is None else joint_names
        check_pd_gains("computed_torque.kp/kd", kp_arr, kd_arr, names, delay)
        return cls(kp_arr, kd_arr)


def _well_formed(reference: JointReference, n: int) -> bool:
    """Cheap per-step check that the reference is one :func:`~..target_checks.checked_joint_reference` would
    return as it is: float64 vectors of ``n`` finite entries (``v``, ``a`` optional), ``|q| ≤ MAX_ANGLE``,
    ``|v| ≤ MAX_TARGET_VELOCITY``, ``|a| ≤ MAX_TARGET_ACCELERATION``."""
    q = reference.q
    if not (
        isinstance(q, np.ndarray)
        and q.dtype == np.float64
        and q.shape == (n,)
        and within(q, MAX_ANGLE)  # False for NaN
    ):
        return False
    for arr, bound in ((reference.v, MAX_TARGET_VELOCITY), (reference.a, MAX_TARGET_ACCELERATION)):
        if arr is not None and not (
            isinstance(arr, np.ndarray)
            and arr.dtype == np.float64
            and arr.shape == (n,)
            and within(arr, bound)
        ):
            return False
    return True


class ComputedTorque(Controller[JointReference]):
    """RNEA computed torque.

    ``q̈_cmd = q̈_ref + K_p·(q_ref ⊖ q) + K_d·(q̇_ref − q̇)`` and ``tau = RNEA(q, q̇, q̈_cmd)``,
    where ``⊖`` takes the short way round on continuous joints. On an exact plant each
    joint error ``e = q_ref − q`` then obeys ``ë + K_d·ė + K_p·e = 0``.

    A command beyond the effort limits is scaled along ``q̈_cmd`` (``τ = c + s·(τ − c)``, see
    :class:`~..saturation.TorqueLimiter`), not clipped joint by joint: the joints the reference
    does not move stay still.

    Diagnostics: ``max_abs_error`` (rad), the largest joint position error; ``torque_scale``,
    the factor ``s`` (1 when nothing was beyond a limit).
    """

    name = "computed_torque"
    scales_saturated_torque = True

    def __init__(self, robot: RobotModel, config: ComputedTorqueConfig | None = None) -> None:
        """``config`` ``None``: :data:`DEFAULT_KP` on every joint, critically damped (what
        :meth:`from_params` gives without parameters)."""
        super().__init__(robot)
        kp, kd = (DEFAULT_KP, None) if config is None else (config.kp, config.kd)
        # Validated again: a config built directly (not by create) is unchecked (a negative kp
        # would run as negative stiffness); and the robot's arm may be later than the one period
        # create() assumes.
        self.config = ComputedTorqueConfig.create(
            robot.n, kp, kd, robot.delay_periods, joint_names=robot.joint_names
        )
        self._reference_in: JointReference | None = None
        self._reference = JointReference(np.zeros(robot.n))

    @classmethod
    def from_params(cls, robot: RobotModel, params: Mapping[str, Any]) -> ComputedTorque:
        """Parameters: ``kp`` (1/s², scalar or per joint, default :data:`DEFAULT_KP`), ``kd`` (1/s,
        optional)."""
        reject_unknown_keys(cls.name, params, {"kp", "kd"})
        config = ComputedTorqueConfig.create(
            robot.n,
            params.get("kp", DEFAULT_KP),
            params.get("kd"),
            robot.delay_periods,
            joint_names=robot.joint_names,
        )
        return cls(robot, config)

    def hold_reference(self, state: JointState) -> JointReference:
        """Hold the measured position at rest (raises :class:`~..errors.StateError` for a malformed state)."""
        q, _ = self.robot.check_state(state.q, state.v)
        return JointReference(q.copy())

    def torque(
        self, q: FloatArray, v: FloatArray, reference: JointReference
    ) -> tuple[FloatArray, dict[str, float]]:
        """RNEA of the PD-corrected reference acceleration."""
        if reference is not self._reference_in:  # references are immutable: check each once
            n = self.robot.n
            # Not as it came (a list, ints, a bool array): its float64 copy, or the reason it is refused.
            checked = reference
            if not _well_formed(reference, n):
                checked = JointReference(
                    *checked_joint_reference("reference", n, reference.q, reference.v, reference.a)
                )
            self._reference = checked
            self._reference_in = reference
        reference = self._reference
        error = self.robot.difference(reference.q, q)
        qdd = self.config.kp * error
        if reference.v is None:
            qdd -= self.config.kd * v
        else:
            qdd += self.config.kd * (reference.v - v)
        if reference.a is not None:
            qdd += reference.a
        return self.robot.rnea(q, v, qdd), {"max_abs_error": float(np.abs(error).max())}
