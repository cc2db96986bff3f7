"""Control-barrier-function constraints on the joint acceleration.

Every constraint is a group of rows ``C·q̈ + s ≥ l`` (rad/s² or the barrier's units
per s²), with one slack ``s ≥ 0`` shared by the group when it is *soft* (the QP pays
``w_s·s`` for it) and no slack when it is *hard*. A constraint object owns no matrix:
:meth:`Barrier.bind` hands it views of the stacked rows, which :meth:`Barrier.update`
refills in place each control step.

Barriers, for ``h(q) ≥ 0`` with gain ``α`` (1/s):

- first order (``h`` depends on ``q̇``): ``ḣ ≥ −α·h``;
- second order (``h`` depends on ``q``, ``q̈`` appears in ``ḧ``):
  ``ḧ + 2α·ḣ + α²·h ≥ 0`` (a critically damped bound: ``h`` never crosses zero from
  a safe start in continuous time).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import numpy as np
import pinocchio as pin

from ..errors import ConfigError
from ..robot import RobotModel
from ..validation import FloatArray, as_positive_float
from .collision import SelfCollisionModel
from .tasks import KinematicsState


class Barrier(ABC):
    """A group of rows ``C·q̈ (+ s) ≥ l`` refilled every step.

    Attributes:
        name: the group's name (used in diagnostics: ``active.<name>``, ``slack.<name>``).
        rows: number of rows.
        soft: whether the group has a slack variable.
        margin: the smallest barrier value ``h`` at the last update (units of ``h``).
    """

    name: str = ""

    def __init__(self, rows: int, *, soft: bool = True) -> None:
        self.rows = rows
        self.soft = bool(soft)
        self.margin = math.inf
        self.C: FloatArray = np.zeros((rows, 0))
        self.lower: FloatArray = np.zeros(rows)

    def bind(self, C: FloatArray, lower: FloatArray) -> None:
        """Use ``C`` (rows × n) and ``lower`` (rows,) — views into the stacked arrays."""
        if C.shape[0] != self.rows or lower.shape != (self.rows,):
            raise ValueError(f"{self.name}: bind() got {C.shape} / {lower.shape} for {self.rows} rows")
        self.C = C
        self.lower = lower
        self.C[:] = 0.0
        self._bound()

    def _bound(self) -> None:
        """Fill the constant parts of ``C`` once, after :meth:`bind` (none by default)."""
        return None

    @abstractmethod
    def update(self, kin: KinematicsState) -> None:
        """Refill ``C``, ``lower`` and ``margin`` for the current state."""


def _alpha(field: str, value: float) -> float:
    return as_positive_float(field, value)


class JointPositionBarrier(Barrier):
    """Second-order barrier on the joint position limits (bounded joints only).

    With ``h₋ = q − q_min`` and ``h₊ = q_max − q`` (rad)::

         q̈ + s ≥ −2α·q̇ − α²·(q − q_min)
        −q̈ + s ≥  2α·q̇ − α²·(q_max − q)

    Continuous joints have no rows. ``margin`` is the smallest ``h`` (rad).
    """

    name = "joint_position"

    def __init__(self, robot: RobotModel, alpha: float, *, soft: bool = True) -> None:
        self.index = np.flatnonzero(np.isfinite(robot.position_lower) & np.isfinite(robot.position_upper))
        super().__init__(2 * len(self.index), soft=soft)
        self.alpha = _alpha("joint_position_limit.alpha", alpha)
        self.q_min = robot.position_lower[self.index].copy()
        self.q_max = robot.position_upper[self.index].copy()

    def _bound(self) -> None:
        k = len(self.index)
        self.C[np.arange(k), self.index] = 1.0
        self.C[k + np.arange(k), self.index] = -1.0

    def update(self, kin: KinematicsState) -> None:
        k, a = len(self.index), self.alpha
        q = kin.q[self.index]
        v = kin.v[self.index]
        h_lo = q - self.q_min
        h_hi = self.q_max - q
        self.lower[:k] = -2.0 * a * v - a * a * h_lo
        self.lower[k:] = 2.0 * a * v - a * a * h_hi
        self.margin = float(min(h_lo.min(), h_hi.min())) if k else math.inf


class JointVelocityBarrier(Barrier):
    """First-order barrier on the joint velocity limits (joints with a finite limit).

    With ``h₋ = q̇ + q̇_max`` and ``h₊ = q̇_max − q̇`` (rad/s)::

         q̈ + s ≥ −α·(q̇ + q̇_max)
        −q̈ + s ≥ −α·(q̇_max − q̇)

    In discrete time (step ``Δt``, ``α·Δt ≤ 1``) ``h`` shrinks at most by the factor
    ``1 − α·Δt`` per step and never changes sign. ``margin`` is the smallest ``h`` (rad/s).
    """

    name = "joint_velocity"

    def __init__(self, robot: RobotModel, alpha: float, *, soft: bool = True) -> None:
        self.index = np.flatnonzero(np.isfinite(robot.velocity_limit))
        super().__init__(2 * len(self.index), soft=soft)
        self.alpha = _alpha("joint_velocity_limit.alpha", alpha)
        self.v_max = robot.velocity_limit[self.index].copy()

    def _bound(self) -> None:
        k = len(self.index)
        self.C[np.arange(k), self.index] = 1.0
        self.C[k + np.arange(k), self.index] = -1.0

    def update(self, kin: KinematicsState) -> None:
        k, a = len(self.index), self.alpha
        v = kin.v[self.index]
        h_lo = v + self.v_max
        h_hi = self.v_max - v
        self.lower[:k] = -a * h_lo
        self.lower[k:] = -a * h_hi
        self.margin = float(min(h_lo.min(), h_hi.min())) if k else math.inf


class SelfCollisionBarrier(Barrier):
    """Second-order barrier on the minimum capsule distance: ``h = d_min(q) − d_safe`` (m).

    One row::

        ∇d·q̈ + s ≥ −drift − 2α·∇d·q̇ − α²·(d_min − d_safe)

    ``∇d`` is passed through a first-order exponential filter
    ``∇d_f ← ∇d_f + β·(∇d − ∇d_f)`` (``β = 0.2`` by default) so the row does not jump
    when the closest pair changes; ``drift = (d/dt ∇d)·q̇`` comes from the witness
    points' bias accelerations (see :mod:`.collision`). ``margin`` is ``d_min − d_safe``.
    """

    name = "self_collision"

    def __init__(
        self,
        robot: RobotModel,
        collision: SelfCollisionModel,
        alpha: float,
        d_safe: float,
        *,
        filter_gain: float = 0.2,
        soft: bool = True,
    ) -> None:
        super().__init__(1, soft=soft)
        self.collision = collision
        self.alpha = _alpha("self_collision.alpha", alpha)
        self.d_safe = as_positive_float("self_collision.d_safe", d_safe, allow_zero=True)
        self.filter_gain = as_positive_float("self_collision.filter", filter_gain)
        if self.filter_gain > 1.0:
            raise ConfigError(f"self_collision.filter: expected a gain in (0, 1], got {filter_gain!r}")
        self.gradient = np.zeros(robot.n)
        self.distance = math.inf
        self._fresh = True

    def reset(self) -> None:
        """Restart the gradient filter (next update takes the raw gradient)."""
        self._fresh = True

    def update(self, kin: KinematicsState) -> None:
        col = self.collision
        d = col.update()
        if self._fresh:
            self.gradient[:] = col.gradient
            self._fresh = False
        else:
            self.gradient += self.filter_gain * (col.gradient - self.gradient)
        a = self.alpha
        self.distance = d
        self.C[0] = self.gradient
        self.lower[0] = -col.drift - 2.0 * a * float(self.gradient @ kin.v) - a * a * (d - self.d_safe)
        self.margin = d - self.d_safe


def _cross_cols(a: FloatArray, b: FloatArray) -> FloatArray:
    """Column-wise cross products of two 3 × n arrays (np.cross costs ~14 µs here)."""
    out = np.empty_like(a)
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]
    return out


class SingularityBarrier(Barrier):
    """Second-order barrier on the manipulability ``w(q) = √det(J·Jᵀ)`` of a frame: ``h = w − w_min``.

    ``J`` is the frame's 6 × n Jacobian (``w`` does not depend on the axes it is
    written in). One row::

        ∇w·q̈ + s ≥ −q̇ᵀ·∇²w·q̇ − 2α·∇w·q̇ − α²·(w − w_min)

    Gradient, analytic: ``∂w/∂q_i = w·tr((J·Jᵀ)⁻¹·(∂J/∂q_i)·Jᵀ)`` with, for the spatial
    (world) Jacobian, ``∂J_c/∂q_i = J_i ×ₘ J_c`` for ``i < c`` and 0 otherwise
    (``×ₘ`` the motion cross product). The curvature term ``q̇ᵀ·∇²w·q̇`` is the
    forward difference ``(∇w(q ⊕ ε·q̇) − ∇w(q))·q̇ / ε``. ``margin`` is ``w − w_min``.
    """

    name = "singularity"

    def __init__(
        self, robot: RobotModel, frame: str, alpha: float, w_min: float, *, soft: bool = True
    ) -> None:
        super().__init__(1, soft=soft)
        try:
            fid = robot.frame_id(frame)
        except KeyError as exc:
            raise ConfigError(f"singularity.frame: {exc}") from None
        self.frame = frame
        self.joint = int(robot.model.frames[fid].parentJoint)
        self.alpha = _alpha("singularity.alpha", alpha)
        self.w_min = as_positive_float("singularity.w_min", w_min)
        self.robot = robot
        self._data = robot.model.createData()
        self.gradient = np.zeros(robot.n)
        self.value = 0.0
        self.curvature = 0.0

    @staticmethod
    def manipulability_and_gradient(J: FloatArray) -> tuple[float, FloatArray]:
        """``w`` and ``∇w`` (n,) from a spatial world Jacobian ``J`` (6 × n, linear rows first)."""
        A = J @ J.T
        det = float(np.linalg.det(A))
        n = J.shape[1]
        if not det > 1e-30:
            return 0.0, np.zeros(n)
        w = math.sqrt(det)
        B = np.asarray(np.linalg.solve(A, J), dtype=np.float64)  # (J·Jᵀ)⁻¹·J, 6 × n
        V, W = J[:3], J[3:]  # columns' linear / angular parts, 3 × n
        Bl, Ba = B[:3], B[3:]
        # tr(A⁻¹·∂_iJ·Jᵀ) = Σ_{c>i} B_c·(J_i ×ₘ J_c)
        #   = W_i·Σ_{c>i}(V_c × Bl_c + W_c × Ba_c) + V_i·Σ_{c>i}(W_c × Bl_c)
        P = _cross_cols(V, Bl) + _cross_cols(W, Ba)
        Q = _cross_cols(W, Bl)
        # suffix sums over c > i: total minus inclusive prefix sums
        Ps = P.sum(axis=1, keepdims=True) - np.cumsum(P, axis=1)
        Qs = Q.sum(axis=1, keepdims=True) - np.cumsum(Q, axis=1)
        grad = w * ((W * Ps).sum(axis=0) + (V * Qs).sum(axis=0))
        return w, grad

    def update(self, kin: KinematicsState) -> None:
        model = kin.model
        J = pin.getJointJacobian(model, kin.data, self.joint, pin.WORLD)
        w, grad = self.manipulability_and_gradient(J)
        self.value = w
        self.gradient[:] = grad
        speed = float(np.abs(kin.v).max())
        if speed > 1e-9 and w > 0.0:
            eps = 1e-5 / speed  # a 1e-5 rad step along q̇
            q_eps = pin.integrate(model, kin.q_pin, eps * kin.v)
            pin.computeJointJacobians(model, self._data, q_eps)
            J_eps = pin.getJointJacobian(model, self._data, self.joint, pin.WORLD)
            _, grad_eps = self.manipulability_and_gradient(J_eps)
            self.curvature = float((grad_eps - grad) @ kin.v) / eps
        else:
            self.curvature = 0.0
        a = self.alpha
        self.C[0] = grad
        self.lower[0] = -self.curvature - 2.0 * a * float(grad @ kin.v) - a * a * (w - self.w_min)
        self.margin = w - self.w_min


class LinearBarrier(Barrier):
    """Fixed rows ``C·q̈ (+ s) ≥ l`` (e.g. acceleration bounds, or a test's contradictory rows)."""

    def __init__(self, name: str, C: FloatArray, lower: FloatArray, *, soft: bool = False) -> None:
        C = np.atleast_2d(np.asarray(C, dtype=np.float64))
        lower = np.asarray(lower, dtype=np.float64).reshape(-1)
        if C.shape[0] != lower.shape[0] or not (np.isfinite(C).all() and not np.isnan(lower).any()):
            raise ConfigError(f"{name}: expected finite C (m × n) and l (m,), got {C.shape} / {lower.shape}")
        super().__init__(C.shape[0], soft=soft)
        self.name = name
        self._C_const = C
        self._l_const = lower

    def _bound(self) -> None:
        if self._C_const.shape != self.C.shape:
            raise ConfigError(f"{self.name}: C has shape {self._C_const.shape}, expected {self.C.shape}")
        self.C[:] = self._C_const

    def update(self, kin: KinematicsState) -> None:
        self.lower[:] = self._l_const
        self.margin = math.inf
