"""Control-barrier-function constraints on the joint acceleration.

Every constraint is a group of rows ``C·q̈ + s ≥ l`` (rad/s² or the barrier's units
per s²). A *soft* group gives every row a slack ``s ≥ 0`` of its own (the QP pays
``w_s·s`` for each), except that the two rows of one joint's limits share one (only one of
them can need it); a *hard* group has none. A row's slack loosens no other row: one slack for
the whole group would let every joint of it past its limit by what the worst joint needs.

A constraint object owns no matrix: :meth:`Barrier.bind` hands it views of the stacked rows,
which :meth:`Barrier.update` refills in place each control step.

Barriers, for ``h(q) ≥ 0`` with gain ``α`` (1/s):

- first order (``h`` depends on ``q̇``): ``ḣ ≥ −α·h``;
- second order (``h`` depends on ``q``, ``q̈`` appears in ``ḧ``):
  ``ḧ + 2α·ḣ + α²·h ≥ 0`` (a critically damped bound: in continuous time ``h`` never crosses
  zero from a start with ``h ≥ 0`` and ``ḣ + α·h ≥ 0``; a start heading in faster, e.g. after a
  fallback or a state jump, can overshoot: with the row met with equality
  ``h(t) = (h₀ + (ḣ₀ + α·h₀)·t)·e^{−α·t}``, e.g. −0.019 rad from ``h₀ = 0.05`` rad at
  −1.4 rad/s with ``α = 10``).
"""

from __future__ import annotations

import itertools
import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import ConfigError, TargetError
from ..reach import point_text
from ..robot import RobotModel, sample_configurations
from ..validation import FloatArray, as_positive_float
from .collision import CapsuleDistances, FloorModel, SelfCollisionModel
from .tasks import KinematicsState


class Barrier(ABC):
    """A group of rows ``C·q̈ (+ s) ≥ l`` refilled every step.

    Attributes:
        name: the group's name (used in diagnostics: ``active.<name>``, ``slack.<name>``).
        rows: number of rows.
        soft: whether the group has slack variables.
        slack_of_row: for each row, which of the group's slacks it takes (``0 … slacks − 1``).
        slacks: number of slack variables of a soft group.
        margin: the smallest barrier value ``h`` at the last update (units of ``h``).
    """

    name: str = ""

    def __init__(self, rows: int, *, soft: bool = True) -> None:
        self.rows = rows
        self.soft = bool(soft)
        self.slack_of_row: NDArray[np.intp] = np.arange(rows, dtype=np.intp)
        self.margin = math.inf
        self.C: FloatArray = np.zeros((rows, 0))
        self.lower: FloatArray = np.zeros(rows)

    @property
    def slacks(self) -> int:
        """Number of slack variables the group takes when soft."""
        return int(self.slack_of_row.max()) + 1 if self.rows else 0

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


#: Smallest barrier gain ``α`` (1/s) accepted. ``1/α`` is how long a barrier takes to let the arm
#: use its margin: from rest the velocity barrier allows ``|q̈| ≤ α·(v_max − |q̇|)``, a second-order
#: one ``ḧ ≥ −α²·h``, so a small ``α`` holds the arm still far from every bound, without a fallback
#: or a slack to show it. Measured in MuJoCo (shipped qpid, the tool 10 cm down, one group's
#: ``alpha`` changed): at 1 every group let it arrive within 0.3 mm in 2 s, at 0.5 each still
#: missed by 11–39 mm, and at 1e-6 the velocity barrier held the arm still.
MIN_ALPHA = 1.0


def check_barrier_alpha(field: str, value: Any) -> float:
    """``value`` as a barrier's gain ``α`` (1/s), at least :data:`MIN_ALPHA`."""
    alpha = as_positive_float(field, value)
    if alpha < MIN_ALPHA:
        raise ConfigError(
            f"{field}: expected at least {MIN_ALPHA:g} 1/s, got {alpha:g}: a barrier takes ~1/alpha to "
            "let the arm near its bound, so a smaller one holds the arm still (at 0.5, a 10 cm tool move "
            "was still 1-4 cm short after 2 s)"
        )
    return alpha


#: Smallest self-collision gradient filter gain ``β``: the filtered row lags the closest pairs'
#: gradient by about ``1/β`` steps, and constrains a direction the pairs' gradient has left. Driving
#: qpid's tool into the base (MuJoCo, the shipped section, ``d_safe`` 2 cm, the command 1 or 5 ms
#: late), the capsules went 9.7–9.8 mm inside ``d_safe`` at 0.01, 5.4–5.5 at 0.02, 0.1–0.2 at
#: 0.05, and stayed 2.2–2.3 mm outside at 0.1, 3.5–3.7 at the default 0.2.
MIN_FILTER_GAIN = 0.05


def check_filter_gain(field: str, value: Any) -> float:
    """``value`` as the gradient filter's gain ``β``, in [:data:`MIN_FILTER_GAIN`, 1]."""
    gain = as_positive_float(field, value)
    if not MIN_FILTER_GAIN <= gain <= 1.0:
        raise ConfigError(
            f"{field}: expected a gain from {MIN_FILTER_GAIN:g} to 1 (1: no filtering), got {value!r}"
        )
    return gain


class _JointRowsBarrier(Barrier):
    """Rows ``±q̈_j + s ≥ l`` for joints ``index``: first all ``+``, then all ``−`` (``C = σ·e_j``).

    Per step the subclasses gather ``q`` / ``q̇`` of those joints twice (``[x; x]``, one
    fancy index) and work on all ``2k`` rows at once with the row signs ``σ``. (Small arrays:
    a numpy call costs ~0.5 µs whatever it does, ``ndarray.min`` ~1.2 µs, ``min(list)`` 0.5.)
    """

    def __init__(self, index: np.ndarray, *, soft: bool) -> None:
        super().__init__(2 * len(index), soft=soft)
        self.index = index
        self._joint_of_row = np.concatenate([index, index])
        # A joint's lower and upper rows share a slack: only the one it is past can need it.
        self.slack_of_row = np.concatenate([np.arange(len(index)), np.arange(len(index))]).astype(np.intp)
        self._sign = np.concatenate([np.ones(len(index)), -np.ones(len(index))])
        self._x2 = np.zeros(self.rows)  # work array

    def _bound(self) -> None:
        self.C[np.arange(self.rows), self._joint_of_row] = self._sign


class JointPositionBarrier(_JointRowsBarrier):
    """Second-order barrier on the joint position limits (bounded joints only).

    With ``h₋ = q − q_min`` and ``h₊ = q_max − q`` (rad)::

         q̈ + s ≥ −2α·q̇ − α²·(q − q_min)
        −q̈ + s ≥  2α·q̇ − α²·(q_max − q)

    i.e. ``σ·q̈ + s ≥ −2α·σ·q̇ − α²·h`` with ``h = σ·q − [q_min; −q_max]``. Continuous joints
    have no rows. ``margin`` is the smallest ``h`` (rad).

    A larger ``α`` brakes later and harder, until the torque limits cannot: the slack then takes
    what the torque cannot, and the joint crosses its limit by a few mrad (docs/controllers.md,
    "Measurements behind the core's bounds and defaults").
    """

    name = "joint_position"

    def __init__(self, robot: RobotModel, alpha: float, *, soft: bool = True) -> None:
        index = np.flatnonzero(np.isfinite(robot.position_lower) & np.isfinite(robot.position_upper))
        super().__init__(index, soft=soft)
        self.alpha = check_barrier_alpha("joint_position_limit.alpha", alpha)
        self.q_min = robot.position_lower[index].copy()
        self.q_max = robot.position_upper[index].copy()
        self._offset = np.concatenate([self.q_min, -self.q_max])
        self._damping = -2.0 * self.alpha * self._sign

    def update(self, kin: KinematicsState) -> None:
        if not self.rows:
            return
        h = kin.q[self._joint_of_row]
        h *= self._sign
        h -= self._offset
        np.multiply(kin.v[self._joint_of_row], self._damping, out=self.lower)
        np.multiply(h, self.alpha * self.alpha, out=self._x2)
        self.lower -= self._x2
        self.margin = min(h.tolist())


class JointVelocityBarrier(_JointRowsBarrier):
    """First-order barrier on the joint velocity limits (joints with a finite limit).

    With ``h₋ = q̇ + q̇_max`` and ``h₊ = q̇_max − q̇`` (rad/s)::

         q̈ + s ≥ −α·(q̇ + q̇_max)
        −q̈ + s ≥ −α·(q̇_max − q̇)

    i.e. ``σ·q̈ + s ≥ −α·h`` with ``h = σ·q̇ + [q̇_max; q̇_max]``. In discrete time (step
    ``Δt``, ``α·Δt ≤ 1``) ``h`` shrinks at most by the factor ``1 − α·Δt`` per step and never
    changes sign. ``margin`` is the smallest ``h`` (rad/s).
    """

    name = "joint_velocity"

    def __init__(self, robot: RobotModel, alpha: float, *, soft: bool = True) -> None:
        index = np.flatnonzero(np.isfinite(robot.velocity_limit))
        super().__init__(index, soft=soft)
        self.alpha = check_barrier_alpha("joint_velocity_limit.alpha", alpha)
        self.v_max = robot.velocity_limit[index].copy()
        self._offset = np.concatenate([self.v_max, self.v_max])

    def update(self, kin: KinematicsState) -> None:
        if not self.rows:
            return
        h = kin.v[self._joint_of_row]
        h *= self._sign
        h += self._offset
        np.multiply(h, -self.alpha, out=self.lower)
        self.margin = min(h.tolist())


#: Largest ``self_collision.d_safe`` (m) the barrier's rows hold (within ~2 mm) with this many rows
#: (``self_collision.pairs``); more rows, :data:`MAX_D_SAFE`. Farther out more pairs are near
#: ``d_safe`` at once, and one without a row closes in unchecked until it is among the closest.
#: Measured in MuJoCo on the Gen3 (qpid and hqpid from home, the command 1 or 5 ms late, the tool
#: driven into the base, to its side, low in front and over the shoulder; deepest dip below
#: ``d_safe``): one row 1.5–1.7 mm at 0.01–0.02 m, 6.6–7.1 at 0.03; two rows 0.1 at 0.02, 1.8–2.0 at
#: 0.03, 5.7–5.9 at 0.035, 7.7–8.1 at 0.04, 9.1–9.4 at 0.05, 11.4–11.8 at 0.07; three or four rows
#: at most 0.4 mm up to 0.07 and 1.3 at 0.08.
MAX_D_SAFE_BY_ROWS = {1: 0.02, 2: 0.03}

#: Largest ``self_collision.d_safe`` (m) accepted with any number of rows: at 0.09, three or four
#: rows let the capsules 3.0–3.1 mm inside it (the tool low in front, see
#: :data:`MAX_D_SAFE_BY_ROWS`), and with the tool driven into the base the barrier pushed the arm
#: into the floor. ``d_safe`` is clearance on top of the capsules, which follow the description's
#: links but not Kinova's meshes of them (up to 42 mm out: config/gen3_collision.yaml).
MAX_D_SAFE = 0.08


class _DistanceBarrier(Barrier):
    """Second-order rows ``∇d_i·q̈ + s_i ≥ −drift_i − 2α·∇d_i·q̇ − α²·(d_i − d_safe)`` on the tracked
    pairs of a :class:`~.collision.CapsuleDistances` model, closest first: the shared update of
    :class:`SelfCollisionBarrier` and :class:`FloorBarrier`."""

    def __init__(
        self, robot: RobotModel, model: CapsuleDistances, alpha: float, d_safe: float, soft: bool, apart: str
    ) -> None:
        """``apart``: what the model's smallest distance is, for the message refusing a ``d_safe``
        never met ("the closest pair of capsules is apart")."""
        super().__init__(model.pairs, soft=soft)
        self.alpha = check_barrier_alpha(f"{self.name}.alpha", alpha)
        self.d_safe = as_positive_float(f"{self.name}.d_safe", d_safe, allow_zero=True)
        most = max(model.closest_distance(q) for q in sample_configurations(robot))
        if self.d_safe >= SAMPLED_MAX_MARGIN * most:
            # Never met: a hard row is infeasible at every step (the QP falls back on each), a
            # soft one pulls on its slack for ever.
            raise ConfigError(
                f"{self.name}.d_safe: {d_safe!r} m is more than {apart} anywhere sampled (at most "
                f"{most:.4g} m, the true maximum no more than {SAMPLED_MAX_MARGIN:g} times that): the "
                "barrier could never hold"
            )
        self.gradients = np.zeros((model.pairs, robot.n))
        self.gradient = self.gradients[0]
        self.distance = math.inf
        self._rate = np.zeros(model.pairs)  # ∇d·q̇ per row, a work array

    def _fill(self, model: CapsuleDistances, kin: KinematicsState) -> None:
        """The rows from :attr:`gradients` and ``model``'s last update (distances and drifts)."""
        a = self.alpha
        g = self.gradients
        self.C[:] = g
        g.dot(kin.v, self._rate)
        # lower = −drift − 2α·∇d·q̇ − α²·(d − d_safe), all rows at once
        np.multiply(self._rate, -2.0 * a, self.lower)
        self.lower -= model.drifts
        self.lower -= a * a * (model.distances - self.d_safe)
        self.distance = model.distance
        self.margin = model.distance - self.d_safe


class SelfCollisionBarrier(_DistanceBarrier):
    """Second-order barrier on the capsule distances: ``h_i = d_i(q) − d_safe`` (m).

    One row per tracked pair, the ``collision.pairs`` closest ones (closest first)::

        ∇d_i·q̈ + s_i ≥ −drift_i − 2α·∇d_i·q̇ − α²·(d_i − d_safe)

    Each row's ``∇d`` is passed through a first-order exponential filter
    ``∇d_f ← ∇d_f + β·(∇d − ∇d_f)`` (``β = 0.2`` by default) so the row does not jump when the
    pair in it changes; ``drift = (d/dt ∇d)·q̇`` comes from the witness points' bias
    accelerations (see :mod:`.collision`). ``margin`` is ``d_min − d_safe``; :attr:`gradient` is
    the closest pair's row.

    Two rows by default: a single row on the closest pair lets a second pair close in unchecked
    until it takes the row, too late to stop short of ``d_safe``. With two, the distance stays
    within ~2 mm of ``d_safe`` (``test/test_qpid.py`` allows 3), as with three, up to ``d_safe``
    3 cm: farther out more pairs are near it at once and three rows are needed
    (:data:`MAX_D_SAFE_BY_ROWS`, up to :data:`MAX_D_SAFE`). That needs the
    joint velocity barrier, which the QP controllers therefore require with this one
    (:class:`~..controllers.qpid.QPID`): faster, a closing pair takes a row too late and the
    distance model's missing term (see :mod:`.collision`) grows, and the capsules go well inside
    ``d_safe``. (Figures: docs/controllers.md, "Measurements behind the core's bounds and
    defaults".)
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
        super().__init__(robot, collision, alpha, d_safe, soft, "the closest pair of capsules is apart")
        self.collision = collision
        rows = collision.pairs
        most = MAX_D_SAFE_BY_ROWS.get(rows, MAX_D_SAFE)
        if self.d_safe > most:
            fix = "lower it"
            if self.d_safe <= MAX_D_SAFE:
                need = next(
                    n
                    for n in itertools.count(rows + 1)
                    if MAX_D_SAFE_BY_ROWS.get(n, MAX_D_SAFE) >= self.d_safe
                )
                fix = f"raise self_collision.pairs to {need}, or lower d_safe"
            raise ConfigError(
                f"self_collision.d_safe: {d_safe!r} m is more than the barrier holds with {rows} row(s) "
                f"(self_collision.pairs): at most {most:g} m (on the Gen3, farther out more capsule pairs "
                "come near d_safe at once and one without a row closes in unchecked: with two rows at "
                "0.05 m the capsules went 9 mm inside it, with three at 0.09 m 3 mm inside; "
                f"docs/controllers.md); {fix}"
            )
        self.filter_gain = check_filter_gain("self_collision.filter", filter_gain)
        self._fresh = True

    def reset(self) -> None:
        """Restart the gradient filter (next update takes the raw gradient)."""
        self._fresh = True

    def update(self, kin: KinematicsState) -> None:
        col = self.collision
        col.update(kin.v, kin.JJd)
        g = self.gradients
        if self._fresh:
            g[:] = col.gradients
            self._fresh = False
        else:
            g += self.filter_gain * (col.gradients - g)
        self._fill(col, kin)


class FloorBarrier(_DistanceBarrier):
    """Second-order barrier keeping the links' capsules above a horizontal plane (the table or
    floor the arm stands on): ``h_i = d_i(q) − d_safe`` (m), ``d_i`` the height of a capsule's
    lowest point above the plane (:class:`~.collision.FloorModel`).

    One row per tracked capsule, the ``floor.rows`` lowest (lowest first)::

        ∇d_i·q̈ + s_i ≥ −drift_i − 2α·∇d_i·q̇ − α²·(d_i − d_safe)

    Unlike the self-collision rows these are exact (the plane does not turn) and unfiltered: a
    row's gradient changes with its capsule, which nothing made ring (docs/controllers.md,
    "The floor barrier"). ``margin`` is the lowest capsule's ``d − d_safe``.
    """

    name = "floor"

    def __init__(
        self, robot: RobotModel, floor: FloorModel, alpha: float, d_safe: float, *, soft: bool = True
    ) -> None:
        above = f"the lowest moving capsule is above the plane z = {floor.height:g} m"
        super().__init__(robot, floor, alpha, d_safe, soft, above)
        self.floor = floor
        self.gradients = floor.gradients  # unfiltered: the model's own rows
        self.gradient = self.gradients[0]

    def update(self, kin: KinematicsState) -> None:
        floor = self.floor
        floor.update(kin.v, kin.JJd)
        self._fill(floor, kin)

    def check_target(self, position: FloatArray, what: str) -> None:
        """Refuse a frame's target ``position`` (m, base frame) below the plane: the barrier holds
        the capsules above it, so the frame could only be pressed toward it (its task error never
        settling), and a frame the capsules do not cover (a gripper's tip) would go into the floor.
        Between the plane and ``d_safe`` above it a target is taken: such a frame may get there."""
        z = float(position[2])
        if not z >= self.floor.height:
            raise TargetError(
                f"{what}: position {point_text(position)} m is below the floor barrier's plane z = "
                f"{self.floor.height:g} m (floor.height), which the arm is kept above"
            )


def _motion_cross_tensor() -> FloatArray:
    """``T`` (6 × 6 × 6) with ``(m ×ₘ x)_k = Σ_ij T[k, i, j]·m_i·x_j`` for ``[linear; angular]`` 6-vectors.

    The motion cross product is ``(v, ω) ×ₘ (v', ω') = (ω × v' + v × ω', ω × ω')``.
    """
    levi = np.zeros((3, 3, 3))
    for k, a, b in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):
        levi[k, a, b], levi[k, b, a] = 1.0, -1.0
    t = np.zeros((6, 6, 6))
    t[:3, 3:, :3] += levi  # ω × v'
    t[:3, :3, 3:] += levi  # v × ω'
    t[3:, 3:, 3:] += levi  # ω × ω'
    return t


_T = _motion_cross_tensor()
#: The dual contraction: ``F_a = Σ_kb T[k, a, b]·y_k·x_b``, so that ``y·(m ×ₘ x) = m·F``:
#: ``_DUAL @ (y[:, None, :] * x[None, :, :]).reshape(36, n)``.
_DUAL = np.ascontiguousarray(_T.transpose(1, 0, 2).reshape(6, 36))
# The gufuncs behind numpy.linalg.det / inv: the same LAPACK calls without the wrapper's
# checks, which cost more than a 6 × 6 factorisation (numpy.linalg as fallback).
_ulinalg = getattr(np.linalg, "_umath_linalg", None)
_det: Callable[..., Any] = getattr(_ulinalg, "det", np.linalg.det)
_inv: Callable[..., Any] = getattr(_ulinalg, "inv", np.linalg.inv)
#: Manipulability (m³) below which the barrier treats the frame as singular (its row left out).
#: Toward a singularity ``A = J·Jᵀ`` grows ill-conditioned (its condition number goes as ``w⁻²``
#: where one singular value of ``J`` vanishes; at w ≈ 1e-6 on straight paths into the stretched
#: pose, where three vanish together, it is 4e5–6e6) until its inverse's derivatives are rounding
#: noise: near the Gen3's stretched pose the curvature kept its order (~0.05) down to
#: w ≈ 1e-7 and read −83, +1.6e5 and −6e6 at w ≈ 1.2e-8, 1.2e-9 and 3.9e-10 (a lower bound that
#: flips sign switches the barrier off while it is violated).
SINGULAR_W = 1e-6


#: How far above the largest of :func:`sample_configurations` a barrier's bound must be to be
#: refused: on the Gen3 an optimiser from the best samples took the tool's manipulability 4.9 %
#: above the sampled 0.1084 m³ (the closest capsules' distance, 0.142 m, not at all).
SAMPLED_MAX_MARGIN = 1.1


def _manipulability(robot: RobotModel, frame: str, q: FloatArray) -> float:
    """``√det(J·Jᵀ)`` of ``frame`` at ``q`` (m³)."""
    J = robot.frame_jacobian(q, frame)
    return math.sqrt(max(float(np.linalg.det(J.dot(J.T))), 0.0))


class SingularityBarrier(Barrier):
    """Second-order barrier on the manipulability ``w(q) = √det(J·Jᵀ)`` of a frame: ``h = w − w_min``.

    ``J`` is the frame's 6 × n Jacobian (``w`` does not depend on the axes or the point it
    is written at: a change of either multiplies ``J`` by a 6 × 6 matrix of determinant 1).
    One row::

        ∇w·q̈ + s ≥ −q̇ᵀ·∇²w·q̇ − 2α·∇w·q̇ − α²·(w − w_min)

    Everything is analytic, from the spatial (world) Jacobian ``J`` of the frame's joint,
    whose column ``c`` is joint ``c``'s axis, and its time derivative ``J̇`` (Pinocchio's
    ``J̇_c = V_c ×ₘ J_c``, ``V_c = Σ_{i≤c} J_i·q̇_i`` the velocity of body ``c`` and ``×ₘ``
    the motion cross product; ``pinocchio.computeAllTerms`` in :class:`KinematicsState`
    fills both). With ``A = J·Jᵀ``, ``X = A⁻¹·J``, ``F_c`` the 6-vector with
    ``m·F_c = X_c·(m ×ₘ J_c)`` for every ``m`` (``F̃_c`` the same with ``J̇_c``) and the
    suffix sums ``S_i = Σ_{c≥i} F_c``, ``S̃_i = Σ_{c≥i} F̃_c``:

    - gradient: ``∂J_c/∂q_i = J_i ×ₘ J_c`` for ``i < c`` (0 otherwise), so
      ``∂w/∂q_i = w·tr(A⁻¹·∂_iJ·Jᵀ) = w·Σ_{c>i} X_c·(J_i ×ₘ J_c) = w·J_i·S_i`` (the
      ``c = i`` term of ``S_i`` adds nothing: ``J_i ×ₘ J_i = 0``);
    - rate: ``ẇ = ∇w·q̇ = w·ρ`` with ``ρ = tr(A⁻¹·J̇·Jᵀ)`` (``ẇ/w``, the log-rate);
    - curvature at ``q̈ = 0``: ``q̇ᵀ·∇²w·q̇ = ẅ = w·(ρ² + ρ̇)`` with
      ``ρ̇ = tr(A⁻¹·J̈·Jᵀ) + tr(A⁻¹·D) − tr(A⁻¹·Ȧ·A⁻¹·B)``, ``B = J̇·Jᵀ``, ``D = J̇·J̇ᵀ``,
      ``Ȧ = B + Bᵀ`` (from ``d(A⁻¹)/dt = −A⁻¹·Ȧ·A⁻¹``). ``J̈_c = a_c ×ₘ J_c + V_c ×ₘ J̇_c``
      with ``a_c = Σ_{i≤c} J̇_i·q̇_i``, so that, swapping the sums,
      ``tr(A⁻¹·J̈·Jᵀ) = Σ_c (a_c·F_c + V_c·F̃_c) = Σ_i q̇_i·(J̇_i·S_i + J_i·S̃_i)``.

    ``F`` and ``F̃`` of all columns are one contraction with a constant tensor (``_DUAL``),
    the suffix sums one product with a triangular matrix, and ``A``, ``B``, ``D`` blocks of
    one Gram matrix: about twenty numpy calls per step, no second kinematics pass.
    ``margin`` is ``w − w_min``. Below :data:`SINGULAR_W` the frame counts as singular: ``w``,
    its gradient and curvature are taken as 0 and the row is left out (no ``q̈`` moves ``w``
    there; the tasks and the other rows decide).
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
        dofs = robot.dofs_moving(fid)
        if dofs < 6:
            raise ConfigError(
                f"singularity.frame: {frame!r} is moved by {dofs} joint(s): its 6-row "
                "Jacobian never has rank 6, so its manipulability is 0 everywhere"
            )
        self.alpha = check_barrier_alpha("singularity.alpha", alpha)
        self.w_min = as_positive_float("singularity.w_min", w_min)
        if self.w_min < 10.0 * SINGULAR_W:
            raise ConfigError(
                f"singularity.w_min: expected >= {10.0 * SINGULAR_W:g} m³, got {w_min!r}: below "
                f"{SINGULAR_W:g} the manipulability's derivatives are rounding noise"
            )
        most = max(_manipulability(robot, frame, q) for q in sample_configurations(robot))
        if self.w_min >= SAMPLED_MAX_MARGIN * most:
            # Never met: a hard row is infeasible at every step (the QP falls back on each), a
            # soft one pulls on its slack for ever.
            raise ConfigError(
                f"singularity.w_min: {w_min!r} m³ is above the manipulability of {frame!r} anywhere "
                f"sampled (at most {most:.4g} m³, the true maximum no more than "
                f"{SAMPLED_MAX_MARGIN:g} times that): the barrier could never hold"
            )
        self.robot = robot
        n = robot.n
        self.gradient = np.zeros(n)
        self.value = 0.0
        self.rate = 0.0
        self.curvature = 0.0
        # Preallocated buffers and fixed views of them: a numpy call costs ~1 µs whatever its
        # size, so the update is a short list of calls with ``out`` arguments.
        # [J; J̇] of the frame's joint stacked (2 × 6 × n): the chain's with the columns of the
        # joints that do not move the frame set to 0. Its Gram matrix G (12 × 12) holds A, Bᵀ, B
        # and D.
        self._moves_frame = robot.moving_columns(self.joint)
        self._JJd = np.zeros((2, 6, n))
        self._J = self._JJd[0]
        self._JJd12 = self._JJd.reshape(12, n)
        self._G = np.zeros((12, 12))
        G = self._G
        self._A, self._Bt, self._B, self._D = G[:6, :6], G[:6, 6:], G[6:, :6], G[6:, 6:]
        self._Adot = np.zeros((6, 6))
        self._AiAdot = np.zeros((6, 6))
        self._BtAi = np.zeros((6, 6))
        self._X = np.zeros((6, n))
        # P[k, b, h, c] = X[k, c]·[J | J̇][b, h, c]: the outer products of both contractions.
        self._X4 = self._X.reshape(6, 1, 1, n)
        self._JJd4 = self._JJd.transpose(1, 0, 2)[None]
        self._P = np.zeros((6, 6, 2, n))
        self._P36 = self._P.reshape(36, 2 * n)
        self._FF = np.zeros((6, 2 * n))  # [F | F̃]
        self._FF12 = self._FF.reshape(12, n)
        self._SS = np.zeros((12, n))  # [S | S̃] (6 × 2n) as 12 rows of n
        self._S = self._SS.reshape(6, 2, n)[:, 0]
        # [J̇·diag(q̇) | J·diag(q̇)], laid out like [S | S̃].
        self._JdJ = self._JJd[::-1].transpose(1, 0, 2)
        self._JdJv = np.zeros((6, 2, n))
        # S = F @ _suffix sums the columns c ≥ i into column i (lower-triangular ones).
        self._suffix = np.tril(np.ones((n, n)))

    def manipulability_at(self, q: FloatArray) -> float:
        """``w`` (m³) of the frame at configuration ``q`` (rad), apart from the last update (it
        overwrites the robot's kinematics data: for checks at start)."""
        return _manipulability(self.robot, self.frame, q)

    def update(self, kin: KinematicsState) -> None:
        v, J = kin.v, self._J
        np.multiply(kin.JJd, self._moves_frame, self._JJd)
        self._JJd12.dot(self._JJd12.T, self._G)
        det = float(_det(self._A))
        if not det > SINGULAR_W * SINGULAR_W:
            # At (or numerically at) the singularity: no direction to push along.
            w = 0.0
            self.gradient[:] = 0.0
            self.rate = self.curvature = 0.0
        else:
            w = math.sqrt(det)
            Ai = _inv(self._A)
            Ai.dot(J, self._X)
            np.multiply(self._X4, self._JJd4, self._P)
            _DUAL.dot(self._P36, self._FF)
            self._FF12.dot(self._suffix, self._SS)
            g = J.T.dot(self._S).diagonal()  # g_i = J_i·S_i = (∂w/∂q_i)/w
            np.multiply(g, w, self.gradient)
            log_rate = float(g.dot(v))  # ρ = ẇ/w
            np.multiply(self._JdJ, v, self._JdJv)
            trace_X_Jdd = float(np.vdot(self._JdJv, self._SS))  # Σ_i q̇_i·(J̇_i·S_i + J_i·S̃_i)
            np.add(self._B, self._Bt, self._Adot)
            # tr(P·Q) = ⟨P, Qᵀ⟩ with P = A⁻¹·Ȧ, Q = A⁻¹·B (A⁻¹ symmetric)
            trace_AiAdotAiB = float(np.vdot(Ai.dot(self._Adot, self._AiAdot), self._Bt.dot(Ai, self._BtAi)))
            log_rate_dot = trace_X_Jdd + float(np.vdot(Ai, self._D)) - trace_AiAdotAiB
            self.rate = w * log_rate
            self.curvature = w * (log_rate * log_rate + log_rate_dot)
        self.value = w
        al = self.alpha
        self.C[0] = self.gradient
        if w == 0.0:
            # No q̈ moves w here: the row 0·q̈ ≥ α²·w_min cannot be met, and as a hard row it
            # would make every step fall back (~1 ms of solver iterations), leaving the arm there.
            self.lower[0] = -math.inf
        else:
            self.lower[0] = -self.curvature - 2.0 * al * self.rate - al * al * (w - self.w_min)
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
