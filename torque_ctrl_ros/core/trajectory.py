"""Joint trajectory interpolation (the content of ``trajectory_msgs/JointTrajectory``; pure).

Between two waypoints the interpolant is

* quintic Hermite when both velocities and accelerations are given (C² at the waypoints),
* cubic Hermite when velocities are given (C¹),
* cubic Hermite with estimated velocities when only positions are given: zero at the first
  and last point and where the path turns back, inside the time-weighted mean of the adjacent
  secant slopes, limited to 3× the smaller one (Fritsch–Carlson): every segment between
  waypoints is then monotone, so the reference never passes one (C¹). The segment from a
  moving start state keeps that state's velocity and can still go past its first waypoint.
  The price is paid at the turns of a densely sampled smooth path: where the true turn falls
  between two samples, the zero velocity at the sample bends the segments either side (a 100 Hz
  raised cosine, peak 2.63 rad/s²: acceleration steps of up to 7.9 rad/s² with the turn 5 ms
  after a sample, 0.19 with it on one; a torque step of 3.6 N·m under computed torque), and a
  path well within the acceleration bounds can be refused for where its samples fall (a review,
  2026-12-08). Send velocities (cubic) or accelerations (quintic) with such a path.

Before the first waypoint the first position is held at rest; after the last one the last position is
held with zero velocity and acceleration.

On joints marked continuous (they turn without end) every waypoint is first unwrapped against the
one before it (the start state first), ``p[k] ← p[k−1] + wrap(p[k] − p[k−1])`` with
``wrap(d) = d − 2π·rint(d / 2π)`` (rad), so every segment takes the short way round: going from
3.1 to −3.1 rad moves +0.083 rad to 3.183 rad, the same pose as −3.1, rather than −6.2 rad.
"""

from __future__ import annotations

import bisect
import math
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import TargetError
from .validation import FloatArray

if TYPE_CHECKING:
    from .robot import RobotModel

#: How far (rad, rad/s, rad/s²) the motion may pass a limit before it counts: a segment that ends at rest
#: on a limit evaluates a few ulps beyond it at its computed extremum.
LIMIT_TOLERANCE = 1e-9
#: Segments evaluated at once by the limit check: bounds its temporaries to ~4 MB for 7 joints.
_CHECK_BLOCK = 1024
#: Seeded configurations :func:`acceleration_limits` takes the largest inertia over: 1 000 take
#: ~15–25 ms (once per model); on the Gen3 their bounds are within 1 % of 20 000's (4 % on joint_7).
ACCELERATION_SAMPLES = 1000
_ACCELERATION_SEED = 20240611
_ACCELERATION_LIMITS: weakref.WeakKeyDictionary[RobotModel, FloatArray] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class LimitViolation:
    """A point of a trajectory's interpolated motion past a limit, in the earliest segment that has
    one: the earliest of the points checked there (its ends and extrema) that is past it.

    Attributes:
        quantity: ``"position"``, ``"velocity"`` or ``"acceleration"``.
        joint: the joint's column in the trajectory.
        time: s from the trajectory's start (the time base of :attr:`JointTrajectory.times`).
        value: the position (rad), velocity (rad/s) or acceleration (rad/s²) there.
        limit: the bound passed: the lower or upper position limit (rad), the speed limit (rad/s)
            or the acceleration bound (rad/s²).
    """

    quantity: str
    joint: int
    time: float
    value: float
    limit: float


#: Per segment and joint (rows × n): the lower and upper position bounds (rad), the speed bound
#: (rad/s) and the acceleration bound (rad/s²; ``None``: not checked).
_RowBounds = tuple[FloatArray, FloatArray, FloatArray, FloatArray | None]
_Block = tuple[NDArray[np.intp], FloatArray, FloatArray, FloatArray, FloatArray | None, NDArray[np.bool_]]
"""Segments to evaluate and their bounds: ``(rows, q_lo, q_hi, v_lim, a_lim, may_pass)``."""


def _beyond(
    ranges: tuple[FloatArray, FloatArray, FloatArray, FloatArray | None], bounds: _RowBounds
) -> NDArray[np.bool_]:
    """Where ``ranges`` = ``(q_min, q_max, |q̇| max, |q̈| max or None)`` may pass ``bounds`` =
    ``(q_lo, q_hi, v_lim, a_lim or None)`` (each within :data:`LIMIT_TOLERANCE`), elementwise;
    accelerations only with both given."""
    q_min, q_max, speed, accel = ranges
    q_lo, q_hi, v_lim, a_lim = bounds
    # Written as "not within" so that a NaN counts as out (it compares false with everything).
    out = ~(q_max <= q_hi + LIMIT_TOLERANCE)
    out |= ~(q_min >= q_lo - LIMIT_TOLERANCE)
    out |= ~(speed <= v_lim + LIMIT_TOLERANCE)
    if a_lim is not None and accel is not None:
        out |= ~(accel <= a_lim + LIMIT_TOLERANCE)
    return np.asarray(out)


def _blocks(
    screened: tuple[NDArray[np.intp], _RowBounds, NDArray[np.bool_]] | None,
) -> Iterator[_Block]:
    """The segments a screen (:meth:`JointTrajectory._screen`) could not clear, with their bounds,
    in blocks of :data:`_CHECK_BLOCK` rows, earliest first (none when it cleared them all)."""
    if screened is None:
        return
    rows, (q_lo, q_hi, v_lim, a_lim), may_pass = screened
    for k in range(0, rows.size, _CHECK_BLOCK):
        at = slice(k, k + _CHECK_BLOCK)
        yield rows[at], q_lo[at], q_hi[at], v_lim[at], None if a_lim is None else a_lim[at], may_pass[at]


#: A trajectory's start: ``(q, v)`` or ``(q, v, a)``, ``None`` for zero velocity or acceleration.
StartState = tuple[ArrayLike, ArrayLike | None] | tuple[ArrayLike, ArrayLike | None, ArrayLike | None]


def _matrix(field: str, value: ArrayLike | None, m: int, n: int) -> FloatArray | None:
    if value is None:
        return None
    try:
        arr = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TargetError(f"trajectory {field}: expected {m}×{n} numbers ({exc})") from None
    if arr.shape != (m, n):
        raise TargetError(f"trajectory {field}: expected shape ({m}, {n}), got {arr.shape}")
    if not np.isfinite(arr).all():
        raise TargetError(f"trajectory {field}: non-finite entries")
    return arr


def _parse_times(times: Sequence[float] | FloatArray) -> FloatArray:
    """The waypoint times (s) as a flat array of at least one (their values unchecked yet)."""
    try:
        t = np.array(times, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise TargetError(f"trajectory times: expected a sequence of numbers ({exc})") from None
    if t.size == 0:
        raise TargetError("trajectory: expected at least one point")
    return t


def _joint_count(positions: ArrayLike) -> int:
    """The number of joints: the columns of ``positions``, one row per point (at least one)."""
    try:
        pos_arr = np.asarray(positions, dtype=np.float64) if positions is not None else None
    except (TypeError, ValueError) as exc:
        raise TargetError(
            f"trajectory positions: expected one row of joint angles per point ({exc})"
        ) from None
    if pos_arr is None or pos_arr.ndim != 2:
        raise TargetError("trajectory positions: expected one row of joint angles per point")
    n = int(pos_arr.shape[1])
    if n == 0:
        raise TargetError("trajectory positions: expected at least one joint")
    return n


def _check_times(t: FloatArray) -> None:
    """Refuse waypoint times (s) that are not finite, ``>= 0`` and strictly increasing."""
    # Only the first offending point is named, so that the message stays short however many
    # points there are; searched for only once known to be there (np.flatnonzero: ~3 µs a call).
    ok = np.isfinite(t) & (t >= 0.0)
    if not ok.all():
        k = int(np.flatnonzero(~ok)[0])
        raise TargetError(f"trajectory times: expected finite times >= 0, point {k} has {t[k]}")
    later = t[1:] > t[:-1]
    if not later.all():
        k = int(np.flatnonzero(~later)[0]) + 1
        raise TargetError(
            f"trajectory times: expected strictly increasing times, point {k} at {t[k]} s is not "
            f"after point {k - 1} at {t[k - 1]} s"
        )


def _prepend_start(
    start: StartState, t: FloatArray, p: FloatArray, v: FloatArray | None, a: FloatArray | None
) -> tuple[FloatArray, FloatArray, FloatArray | None, FloatArray | None, FloatArray | None]:
    """``(t, p, v, a, start_v)``: the waypoints with the start state ``(q, v[, a])`` prepended at
    time 0 (``None`` for zero velocity or acceleration); ``start_v`` is its velocity (rad/s) where
    no velocities are given (they are estimated then, keeping this one), else ``None``."""
    n = p.shape[1]
    q0 = np.asarray(start[0], dtype=np.float64)
    v0 = np.zeros(n) if start[1] is None else np.asarray(start[1], dtype=np.float64)
    a0 = np.zeros(n) if len(start) < 3 or start[2] is None else np.asarray(start[2], dtype=np.float64)
    if not (q0.shape == v0.shape == a0.shape == (n,) and np.isfinite(np.concatenate((q0, v0, a0))).all()):
        raise TargetError(f"trajectory start state: expected {n} finite angles, velocities and accelerations")
    t = np.concatenate(([0.0], t))
    p = np.concatenate((q0[None], p))
    if v is None:
        # Estimated velocities would ignore the start velocity; keep it for continuity.
        return t, p, None, None, v0
    v = np.concatenate((v0[None], v))
    if a is not None:
        a = np.concatenate((a0[None], a))
    return t, p, v, a, None


def _unwrap_continuous(p: FloatArray, continuous: ArrayLike) -> None:
    """Unwrap, in place, the waypoints ``p`` (points × n, rad) of the joints marked in
    ``continuous`` (n booleans), each against the one before it (:class:`JointTrajectory`)."""
    n = p.shape[1]
    cont = np.asarray(continuous)
    if cont.shape != (n,) or cont.dtype != np.bool_:
        raise TargetError(
            f"trajectory continuous: expected {n} booleans, got {cont.dtype} of shape {cont.shape}"
        )
    if cont.any() and len(p) > 1:
        # Whole turns to remove, accumulated: the unwrapped p[k−1] differs from the given one by
        # the turns removed so far. Subtracting whole turns leaves positions that needed none
        # bit-identical.
        at = p[:, cont]
        turns = np.cumsum(np.rint((at[1:] - at[:-1]) * (0.5 / np.pi)), axis=0)
        p[1:, cont] -= (2.0 * np.pi) * turns


class JointTrajectory:
    """A time-parameterised joint path sampled as ``(q_ref, q̇_ref, q̈_ref)``.

    Args:
        times: waypoint times (s) from the trajectory start, strictly increasing, ``>= 0``.
        positions: ``m × n`` joint angles (rad).
        velocities: optional ``m × n`` joint velocities (rad/s).
        accelerations: optional ``m × n`` accelerations (rad/s²); used only with velocities.
        start: optional ``(q, v)`` or ``(q, v, a)`` at time 0 (``None`` for zero ``v`` or ``a``),
            prepended when the first waypoint is later than 0 (a trajectory normally starts from
            where the arm, or the reference it replaces, is). ``a`` is used by a quintic only.
        continuous: optional ``n`` booleans, ``True`` for joints that turn without end
            (``RobotModel.continuous``). Their waypoints are unwrapped in order so that each
            differs from the previous one (the start state first) by at most π rad:
            ``p[k] = p[k−1] + (p[k] − p[k−1]) − 2π·rint((p[k] − p[k−1]) / 2π)``. :attr:`positions`
            holds the unwrapped angles; they may leave ``[−π, π]`` (an angle plus whole turns is
            the same pose). Other joints are left as given. ``None``: no joint is continuous.

    Raises:
        TargetError: malformed input (the message says which field).
    """

    def __init__(
        self,
        times: Sequence[float] | FloatArray,
        positions: ArrayLike,
        velocities: ArrayLike | None = None,
        accelerations: ArrayLike | None = None,
        start: StartState | None = None,
        continuous: ArrayLike | None = None,
    ) -> None:
        t = _parse_times(times)
        n = _joint_count(positions)
        _check_times(t)
        m = t.size
        p = _matrix("positions", positions, m, n)
        v = _matrix("velocities", velocities, m, n)
        a = _matrix("accelerations", accelerations, m, n) if v is not None else None
        assert p is not None
        start_v: FloatArray | None = None
        if start is not None and t[0] > 0.0:
            t, p, v, a, start_v = _prepend_start(start, t, p, v, a)
        if continuous is not None:
            _unwrap_continuous(p, continuous)
        self.times = t
        self.positions = p
        self.n = n
        self.kind = "quintic" if a is not None else "cubic"
        self.velocities = v if v is not None else self._estimate_velocities(t, p, start_v)
        self.accelerations = a
        self._times = t.tolist()  # bisect on a list: ~0.2 µs against ~1.5 for np.searchsorted
        with np.errstate(over="ignore", invalid="ignore"):  # overflow is refused just below
            self._segments = self._segment_polynomials()
        if not np.isfinite(self._segments).all():
            # Finite but huge inputs (accelerations of 1e308 over seconds) overflow the
            # coefficients; NaN compares false with every bound and would pass the limit check.
            raise TargetError(
                "trajectory: its polynomials overflow (velocities or accelerations far too large)"
            )

    def _segment_polynomials(self) -> FloatArray:
        """Per segment ``i``, ``K_i`` ((d+1) × 3n) with ``[1, s, …, s^d]·K_i = [q, q̇, q̈]`` at ``s ∈ [0, 1]``.

        With ``T`` the segment's duration and the endpoint data in ``s`` units
        (``[p₀, T·v₀, T²·a₀, p₁, T·v₁, T²·a₁]``, without the accelerations for cubics), the
        power coefficients are ``c = B·data`` (``B``: :data:`_CUBIC` or :data:`_QUINTIC`);
        ``q̇ = (dq/ds)/T`` and ``q̈ = (d²q/ds²)/T²`` are the same powers of ``s`` times the
        shifted coefficients ``k·c_k`` and ``k·(k−1)·c_k``.
        """
        t, p, v, a = self.times, self.positions, self.velocities, self.accelerations
        n = self.n
        T = (t[1:] - t[:-1])[:, None]
        if a is None:
            basis, data = _CUBIC, [p[:-1], v[:-1] * T, p[1:], v[1:] * T]
        else:
            basis = _QUINTIC
            data = [p[:-1], v[:-1] * T, a[:-1] * T * T, p[1:], v[1:] * T, a[1:] * T * T]
        d1 = basis.shape[0]
        # Filled in place, with few temporaries and no einsum: for a thousand segments the arrays
        # are a few hundred kB; built this way, 1 000 cubic segments of 7 joints take ~350 µs
        # (docs/performance.md).
        S = len(T)
        K = np.empty((S, d1, 3 * n))
        c = (basis @ np.array(data).reshape(d1, S * n)).reshape(d1, S, n).transpose(1, 0, 2)
        K[:, :, :n] = c
        k = np.arange(d1, dtype=np.float64)[None, :, None]
        inv_T = 1.0 / T[:, :, None]
        np.multiply(c[:, 1:], k[:, 1:] * inv_T, out=K[:, :-1, n : 2 * n])
        K[:, -1, n : 2 * n] = 0.0
        np.multiply(c[:, 2:], (k * (k - 1.0))[:, 2:] * (inv_T * inv_T), out=K[:, :-2, 2 * n :])
        K[:, -2:, 2 * n :] = 0.0
        return K

    @staticmethod
    def _estimate_velocities(t: FloatArray, p: FloatArray, v_start: FloatArray | None) -> FloatArray:
        v = np.zeros_like(p)
        if v_start is not None:
            v[0] = v_start
        if len(t) > 2:
            # Slices, not np.diff (whose wrapper costs ~3 µs a call): this runs when a trajectory
            # takes effect, inside the state callback.
            dt = (t[1:] - t[:-1])[:, None]
            slope = (p[1:] - p[:-1]) / dt
            left, right = slope[:-1], slope[1:]
            w_left, w_right = dt[1:], dt[:-1]  # the nearer secant weighs more
            mean = (w_left * left + w_right * right) / (w_left + w_right)
            limit = 3.0 * np.minimum(np.abs(left), np.abs(right))
            v[1:-1] = np.where(left * right > 0.0, np.clip(mean, -limit, limit), 0.0)
        return v

    @property
    def duration(self) -> float:
        """Time (s) of the last waypoint."""
        return float(self.times[-1])

    def sample(self, t: float) -> tuple[FloatArray, FloatArray, FloatArray]:
        """``(q_ref, q̇_ref, q̈_ref)`` (rad, rad/s, rad/s²) at ``t`` s from the start.

        Raises:
            TargetError: ``t`` is NaN or infinite.
        """
        if not math.isfinite(t):
            raise TargetError(f"trajectory sample: expected a finite time, got {t}")
        times = self._times
        if t >= times[-1]:
            return self.positions[-1].copy(), np.zeros(self.n), np.zeros(self.n)
        if t < times[0]:
            return self.positions[0].copy(), np.zeros(self.n), np.zeros(self.n)
        i = bisect.bisect_right(times, t) - 1
        s = (t - times[i]) / (times[i + 1] - times[i])
        s2 = s * s
        s3 = s2 * s
        powers = [1.0, s, s2, s3] if self.accelerations is None else [1.0, s, s2, s3, s2 * s2, s2 * s3]
        out = np.array(powers).dot(self._segments[i])  # [q | q̇ | q̈]
        n = self.n
        return out[:n], out[n : 2 * n], out[2 * n :]

    def limit_violation(
        self,
        lower: ArrayLike,
        upper: ArrayLike,
        velocity_limit: ArrayLike,
        first: int = 0,
        last: int | None = None,
        acceleration_limit: ArrayLike = np.inf,
    ) -> LimitViolation | None:
        """Where the motion leaves ``lower ≤ q ≤ upper`` (rad), ``|q̇| ≤ velocity_limit`` (rad/s) or
        ``|q̈| ≤ acceleration_limit`` (rad/s², none by default) first (:class:`LimitViolation`), or
        ``None``; over segments ``first`` to ``last − 1`` (all by default; segment ``i`` runs from
        ``times[i]`` to ``times[i + 1]``). Use ``∓inf`` for no limit.

        With ``s = (t − tᵢ)/T ∈ [0, 1]`` on a segment of duration ``T``:

        * cubic: ``q̇(s)`` is quadratic, so ``q`` is checked at the ends and at the real roots of
          ``q̇(s) = 0`` in ``[0, 1]``, ``q̇`` at the ends and at ``s* = −c₁/(2c₂)`` (``q̇ = c₀ + c₁s + c₂s²``,
          the root of ``q̈``), ``q̈`` (linear) at the ends: the exact extrema;
        * quintic: the same, with the real roots of the quartic ``q̇``, of the cubic ``q̈`` and of
          the quadratic ``q⃛`` in ``[0, 1]`` (eigenvalues of their companion matrices).

        The first segment may stay as far past a limit as the trajectory's first point is (a start
        state a hair outside a limit must not stop a trajectory leading back inside; its given
        acceleration too, for quintics); every other bound is the limit itself, plus
        :data:`LIMIT_TOLERANCE`. The waypoints are among the points checked. Cost: linear in the
        number of segments; a screen on every segment (:meth:`_may_pass`), then the evaluation
        above only on segments that may pass a bound, in blocks of ``_CHECK_BLOCK``.
        """
        screened = self._screen(lower, upper, velocity_limit, first, last, acceleration_limit)
        for block in _blocks(screened):
            found = self._rows_violation(*block)
            if found is not None:  # blocks go forward in time: the first one found is the earliest
                return found
        return None

    def position_range(self) -> tuple[FloatArray, FloatArray]:
        """The lowest and the highest ``q`` (rad, ``n`` each) of the whole motion, exactly: every
        segment at its ends and at the real roots of its ``q̇`` in it, as :meth:`limit_violation`
        finds them."""
        seg, n = self._segments, self.n
        if self.accelerations is None:
            q = _cubic_extrema(seg, n, False).q
        else:
            q = _quintic_extrema(seg, n, np.ones((seg.shape[0], n), dtype=bool), False).q
        return q.min(axis=(0, 1)), q.max(axis=(0, 1))

    def within_limits(
        self,
        lower: ArrayLike,
        upper: ArrayLike,
        velocity_limit: ArrayLike,
        acceleration_limit: ArrayLike = np.inf,
    ) -> bool:
        """Whether :meth:`limit_violation` over all segments finds nothing: the same answer, for
        less where it is no. A segment the screen cannot clear is sampled at ``s = k/16`` first; a
        sample past a bound by more than :data:`_SURELY_PAST` settles it without the exact search
        (~150 µs a quintic segment). A planner's course check mostly fails: this is what it pays."""
        screened = self._screen(lower, upper, velocity_limit, 0, None, acceleration_limit)
        for block in _blocks(screened):
            if self._sampled_past(*block) or self._rows_violation(*block) is not None:
                return False
        return True

    def _screen(
        self,
        lower: ArrayLike,
        upper: ArrayLike,
        velocity_limit: ArrayLike,
        first: int,
        last: int | None,
        acceleration_limit: ArrayLike,
    ) -> tuple[NDArray[np.intp], _RowBounds, NDArray[np.bool_]] | None:
        """The segments among ``first`` to ``last − 1`` that :meth:`_may_pass` cannot clear, in
        order, with their bounds (:data:`_RowBounds`, rows × n each; no acceleration bound where no
        joint has one) and which of their joints it cannot clear; ``None`` if it clears them all."""
        n = self.n
        segments = len(self._times) - 1
        start, stop = max(first, 0), segments if last is None else min(last, segments)
        if start >= stop:
            return None
        # Per segment and joint: the bounds (the first segment widened by the first point).
        # Assigned, not np.broadcast_to: ~4 µs a call less, four times over.
        bounds = np.empty((4, stop - start, n))
        q_lo, q_hi, v_lim, a_lim = bounds
        q_lo[:], q_hi[:], v_lim[:], a_lim[:] = lower, upper, velocity_limit, acceleration_limit
        check_acc = bool(np.isfinite(a_lim[0]).any())
        if start == 0:
            p0, v0 = self.positions[0], np.abs(self.velocities[0])
            q_lo[0], q_hi[0], v_lim[0] = (
                np.minimum(q_lo[0], p0),
                np.maximum(q_hi[0], p0),
                np.maximum(v_lim[0], v0),
            )
            if self.accelerations is not None:
                a_lim[0] = np.maximum(a_lim[0], np.abs(self.accelerations[0]))
        a_checked = a_lim if check_acc else None
        may_pass = self._may_pass(start, stop, q_lo, q_hi, v_lim, a_checked)
        at = np.flatnonzero(may_pass.any(axis=1))
        if at.size == 0:
            return None
        row_bounds = (q_lo[at], q_hi[at], v_lim[at], None if a_checked is None else a_checked[at])
        return start + at, row_bounds, may_pass[at]

    def _may_pass(
        self,
        start: int,
        stop: int,
        q_lo: FloatArray,
        q_hi: FloatArray,
        v_lim: FloatArray,
        a_lim: FloatArray | None,
    ) -> NDArray[np.bool_]:
        """Per segment ``start`` to ``stop − 1`` and joint, whether its motion may pass a bound (a
        cheap, safe screen; accelerations only with ``a_lim``).

        A polynomial on ``s ∈ [0, 1]`` lies within the range of its Bernstein coefficients. Over
        more than :data:`_FEW_SEGMENTS`, those of the whole segments first, from the waypoints
        (:meth:`_coarse_may_pass`, cheaper per segment); then, on what they leave, those on each
        half of a segment (:meth:`_fine_may_pass`), tighter: on the whole segment, the coefficients
        of a rest-to-rest quintic's speed reach 2.7 times its peak ``15/8·Δq/T`` (one peaking
        above 0.37 of a velocity limit would not be cleared); on halves they meet it.
        A segment whose ranges stay inside its bounds cannot pass them; only the others are
        evaluated.
        """
        if stop - start <= _FEW_SEGMENTS:
            return self._fine_may_pass(np.arange(start, stop), q_lo, q_hi, v_lim, a_lim)
        out = self._coarse_may_pass(start, stop, q_lo, q_hi, v_lim, a_lim)
        if not out.any():  # the common case for a user's trajectory: ~30 µs of row search saved
            return out
        left = np.flatnonzero(out.any(axis=1))
        for k in range(0, left.size, _CHECK_BLOCK):  # blocks bound the temporaries
            at = left[k : k + _CHECK_BLOCK]
            a_at = None if a_lim is None else a_lim[at]
            out[at] &= self._fine_may_pass(start + at, q_lo[at], q_hi[at], v_lim[at], a_at)
        return out

    def _fine_may_pass(
        self,
        rows: NDArray[np.intp],
        q_lo: FloatArray,
        q_hi: FloatArray,
        v_lim: FloatArray,
        a_lim: FloatArray | None,
    ) -> NDArray[np.bool_]:
        """:meth:`_may_pass` on the segments ``rows`` (bounds: rows × n): ``q``, ``q̇`` and ``q̈``
        from their power coefficients (:meth:`_segment_polynomials`) to the Bernstein coefficients
        of the segment's degree on each half (:func:`_bernstein_hull`), in one product."""
        n = self.n
        seg = self._segments[rows]
        S, d1, width = seg.shape
        hull = _CUBIC_HULL if self.accelerations is None else _QUINTIC_HULL
        points = (hull @ seg.transpose(1, 0, 2).reshape(d1, S * width)).reshape(-1, S, width)
        top, bottom = points.max(axis=0), points.min(axis=0)
        speed = np.maximum(top[:, n : 2 * n], -bottom[:, n : 2 * n])
        accel = None if a_lim is None else np.maximum(top[:, 2 * n :], -bottom[:, 2 * n :])
        return _beyond((bottom[:, :n], top[:, :n], speed, accel), (q_lo, q_hi, v_lim, a_lim))

    def _coarse_may_pass(
        self,
        start: int,
        stop: int,
        q_lo: FloatArray,
        q_hi: FloatArray,
        v_lim: FloatArray,
        a_lim: FloatArray | None,
    ) -> NDArray[np.bool_]:
        """:meth:`_may_pass`'s first screen, over many segments: per segment ``start`` to ``stop − 1``
        and joint, whether its motion may pass a bound (accelerations only with ``a_lim``).

        A polynomial on ``s ∈ [0, 1]`` lies within the range of its Bernstein coefficients. With
        ``m = T·q̇`` and ``A = T²·q̈`` at the ends: cubic ``(p₀, p₀ + m₀/3, p₁ − m₁/3, p₁)``, quintic
        ``(p₀, p₀ + m₀/5, p₀ + 2m₀/5 + A₀/20, p₁ − 2m₁/5 + A₁/20, p₁ − m₁/5, p₁)``; ``q̇`` has the
        coefficients ``d·(bᵢ₊₁ − bᵢ)/T`` (degree ``d``), ``q̈`` ``d·(d−1)·(bᵢ₊₂ − 2bᵢ₊₁ + bᵢ)/T²``.
        A segment whose ranges stay inside its bounds cannot pass them; only the others are
        evaluated.
        """
        t, p, v, a = self.times, self.positions, self.velocities, self.accelerations
        T = (t[start + 1 : stop + 1] - t[start:stop])[:, None]
        p0, p1 = p[start:stop], p[start + 1 : stop + 1]
        m0, m1 = v[start:stop] * T, v[start + 1 : stop + 1] * T
        if a is None:
            b = [p0, p0 + m0 / 3.0, p1 - m1 / 3.0, p1]
        else:
            A0, A1 = a[start:stop] * (T * T), a[start + 1 : stop + 1] * (T * T)
            b = [p0, p0 + m0 / 5.0, p0 + 0.4 * m0 + A0 / 20.0, p1 - 0.4 * m1 + A1 / 20.0, p1 - m1 / 5.0, p1]
        d = len(b) - 1
        speed = np.maximum.reduce([np.abs(b[i + 1] - b[i]) for i in range(d)]) * (d / T)
        accel = None
        if a_lim is not None:
            second = [np.abs(b[i + 2] - 2.0 * b[i + 1] + b[i]) for i in range(d - 1)]
            accel = np.maximum.reduce(second) * (d * (d - 1) / (T * T))
        ranges = (np.minimum.reduce(b), np.maximum.reduce(b), speed, accel)
        return _beyond(ranges, (q_lo, q_hi, v_lim, a_lim))

    def _sampled_past(
        self,
        rows: NDArray[np.intp],
        q_lo: FloatArray,
        q_hi: FloatArray,
        v_lim: FloatArray,
        a_lim: FloatArray | None,
        may_pass: NDArray[np.bool_],
    ) -> bool:
        """Whether the motion of the segments ``rows`` at ``s = k/16`` passes a bound (rows × n, as
        for :meth:`_rows_violation`) by more than :data:`_SURELY_PAST` on a joint of ``may_pass``:
        then so does its exact extremum, and :meth:`_rows_violation` finds a point past it."""
        seg = self._segments[rows]
        n = self.n
        x = _SAMPLE_POWERS[:, : seg.shape[1]] @ seg  # (S, samples, 3n): [q | q̇ | q̈]
        margin = LIMIT_TOLERANCE + _SURELY_PAST
        q, v = x[:, :, :n], x[:, :, n : 2 * n]
        past = (q > (q_hi + margin)[:, None]) | (q < (q_lo - margin)[:, None])
        past |= np.abs(v) > (v_lim + margin)[:, None]
        if a_lim is not None:
            past |= np.abs(x[:, :, 2 * n :]) > (a_lim + margin)[:, None]
        return bool((past & may_pass[:, None]).any())

    def _rows_violation(
        self,
        rows: NDArray[np.intp],
        q_lo: FloatArray,
        q_hi: FloatArray,
        v_lim: FloatArray,
        a_lim: FloatArray | None,
        may_pass: NDArray[np.bool_],
    ) -> LimitViolation | None:
        """:meth:`limit_violation` on the segments ``rows`` (increasing) with their bounds (rows × n;
        no acceleration bound: ``a_lim`` None); ``may_pass`` (rows × n): the joints the screen could
        not clear (the others are within their bounds: their quintic extrema are not searched)."""
        seg = self._segments[rows]  # (S, d + 1, 3n): [q | q̇ | q̈] coefficients of 1, s, s², …
        if self.accelerations is None:
            extrema = _cubic_extrema(seg, self.n, a_lim is not None)
        else:
            extrema = _quintic_extrema(seg, self.n, may_pass, a_lim is not None)
        passed = _passed_bounds(extrema, q_lo, q_hi, v_lim, a_lim)
        return self._earliest_violation(rows, passed) if passed else None

    def _earliest_violation(self, rows: NDArray[np.intp], passed: list[_Passed]) -> LimitViolation:
        """The earliest point past its bound among ``passed`` (at least one) on the segments ``rows``:
        its time is the segment's start plus ``s·T``; on a tie, the quantity listed first wins
        (position, then velocity, then acceleration)."""
        t0 = self.times[rows][:, None, None]
        T = (self.times[rows + 1] - self.times[rows])[:, None, None]
        best: LimitViolation | None = None
        for quantity, over, s, x, bound in passed:
            t = np.where(over, t0 + s * T, np.inf)
            i, k, j = np.unravel_index(int(np.argmin(t)), t.shape)
            if best is None or t[i, k, j] < best.time:
                limit = np.broadcast_to(bound, x.shape)[i, k, j]
                best = LimitViolation(quantity, int(j), float(t[i, k, j]), float(x[i, k, j]), float(limit))
        assert best is not None
        return best

    @classmethod
    def from_points(
        cls,
        points: Sequence[Any],
        n: int,
        start: StartState | None = None,
        continuous: ArrayLike | None = None,
    ) -> JointTrajectory:
        """Build from ``(t, positions, velocities|None, accelerations|None)`` tuples of ``n`` joints.

        Velocities (accelerations) are used only if every point has them. ``start`` and
        ``continuous`` are passed on to :class:`JointTrajectory`.
        """
        if not points:
            raise TargetError("trajectory: expected at least one point")
        times = [float(p[0]) for p in points]
        pos = [p[1] for p in points]
        if any(len(x) != n for x in pos):
            raise TargetError(f"trajectory positions: every point needs {n} positions")
        vel = [p[2] for p in points]
        acc = [p[3] for p in points]
        has_v = all(x is not None and len(x) > 0 for x in vel)
        has_a = has_v and all(x is not None and len(x) > 0 for x in acc)
        return cls(
            times, pos, vel if has_v else None, acc if has_a else None, start=start, continuous=continuous
        )


class _Extrema(NamedTuple):
    """Where segments are checked and their motion there (S segments × K points × n joints each):
    ``s ∈ [0, 1]`` along the segment, and the value at it."""

    s_q: FloatArray
    q: FloatArray
    """rad, at ``s_q``: the ends and the extrema of the position."""
    s_v: FloatArray
    v: FloatArray
    """rad/s, at ``s_v``: the ends and the extrema of the velocity."""
    s_a: FloatArray | None
    a: FloatArray | None
    """rad/s², at ``s_a``: the ends and the extrema of the acceleration (``None``: not checked)."""


#: A bound passed (:func:`_passed_bounds`): ``(quantity, where past, s, value, bound)``, the last
#: four S × K × n (the bound broadcast to that).
_Passed = tuple[str, NDArray[np.bool_], FloatArray, FloatArray, FloatArray]


def _cubic_extrema(seg: FloatArray, n: int, with_acceleration: bool) -> _Extrema:
    """The exact extrema of cubic segments (``seg``: S × 4 × 3n, as
    :meth:`JointTrajectory._segment_polynomials` gives them): ``q`` at the ends and the real roots
    of ``q̇`` (a quadratic) in the segment, ``q̇`` at the ends and the root of ``q̈``, and
    (``with_acceleration``) ``q̈``, linear, at the ends. A root outside the segment (or none: NaN)
    is replaced by its start."""
    S = seg.shape[0]
    c = seg[:, :, :n]
    v0, v1, v2 = seg[:, 0, n : 2 * n], seg[:, 1, n : 2 * n], seg[:, 2, n : 2 * n]
    zero, one = np.zeros((S, n)), np.ones((S, n))
    with np.errstate(divide="ignore", invalid="ignore"):
        # Roots of v2·s² + v1·s + v0 without cancellation; NaN or ±inf where there are none.
        r = -0.5 * (v1 + np.copysign(np.sqrt(v1 * v1 - 4.0 * v2 * v0), v1))
        s_q = np.stack((zero, one, r / v2, v0 / r), axis=1)
        s_v = np.stack((zero, one, -v1 / (2.0 * v2)), axis=1)
    s_q = np.where((s_q >= 0.0) & (s_q <= 1.0), s_q, 0.0)
    s_v = np.where((s_v >= 0.0) & (s_v <= 1.0), s_v, 0.0)
    q = ((c[:, 3:4] * s_q + c[:, 2:3]) * s_q + c[:, 1:2]) * s_q + c[:, 0:1]
    v = (v2[:, None] * s_v + v1[:, None]) * s_v + v0[:, None]
    if not with_acceleration:
        return _Extrema(s_q, q, s_v, v, None, None)
    acc = seg[:, :, 2 * n :]
    s_a = np.stack((zero, one), axis=1)
    return _Extrema(s_q, q, s_v, v, s_a, acc[:, 1:2] * s_a + acc[:, 0:1])


def _quintic_extrema(
    seg: FloatArray, n: int, may_pass: NDArray[np.bool_], with_acceleration: bool
) -> _Extrema:
    """The exact extrema of quintic segments (``seg``: S × 6 × 3n) on the joints of ``may_pass`` (S
    × n; the others' are left at the start): ``q`` at the ends and the real roots of ``q̇`` (a
    quartic) in the segment, ``q̇`` at the ends and the roots of ``q̈`` (a cubic), and
    (``with_acceleration``) ``q̈`` at the ends and the roots of the jerk (a quadratic). (Sampled at
    32 interior times instead, a peak between two samples can pass a limit by up to 4e-3 rad
    unseen.)"""
    s_q = _ends_and_roots(seg[:, :5, n : 2 * n], may_pass)
    s_v = _ends_and_roots(seg[:, :4, 2 * n :], may_pass)
    q = _horner(seg[:, :, :n], s_q)
    v = _horner(seg[:, :5, n : 2 * n], s_v)
    if not with_acceleration:
        return _Extrema(s_q, q, s_v, v, None, None)
    acc = seg[:, :, 2 * n :]
    jerk = acc[:, 1:4] * np.array([1.0, 2.0, 3.0])[None, :, None]
    s_a = _ends_and_roots(jerk, may_pass)
    return _Extrema(s_q, q, s_v, v, s_a, _horner(acc[:, :4], s_a))


def _passed_bounds(
    extrema: _Extrema, q_lo: FloatArray, q_hi: FloatArray, v_lim: FloatArray, a_lim: FloatArray | None
) -> list[_Passed]:
    """The bounds (rows × n: position, speed, and acceleration where ``a_lim`` is given) that some
    point of ``extrema`` passes by more than :data:`LIMIT_TOLERANCE` (a NaN counts as past), in
    that order, each with where it is passed; empty where none is. The bound of a position past
    its upper limit is that limit, of any other position the lower one."""
    lo3, hi3, vlim3 = q_lo[:, None], q_hi[:, None], v_lim[:, None]
    q, v = extrema.q, extrema.v
    over_q = ~((q <= hi3 + LIMIT_TOLERANCE) & (q >= lo3 - LIMIT_TOLERANCE))  # NaN: out
    over_v = ~(np.abs(v) <= vlim3 + LIMIT_TOLERANCE)
    checks: list[_Passed] = [
        ("position", over_q, extrema.s_q, q, np.where(q > hi3, hi3, lo3)),
        ("velocity", over_v, extrema.s_v, v, vlim3),
    ]
    if a_lim is not None:
        assert extrema.s_a is not None and extrema.a is not None
        alim3 = a_lim[:, None]
        over_a = ~(np.abs(extrema.a) <= alim3 + LIMIT_TOLERANCE)
        checks.append(("acceleration", over_a, extrema.s_a, extrema.a, alim3))
    return [check for check in checks if check[1].any()]


def _ends_and_roots(coef: FloatArray, which: NDArray[np.bool_]) -> FloatArray:
    """``s`` (S × (d + 2) × n): 0, 1 and the real roots in ``[0, 1]`` of the polynomials
    ``Σ_k coef[:, k]·s^k`` (coef: S × (d + 1) × n) marked in ``which`` (S × n), the roots outside
    and those of the others replaced by 0.

    The roots are the eigenvalues of the companion matrices, all in one batched call. A leading
    coefficient below ``1e-12`` of the largest is raised to that (its extra root lies near
    ``1e12``, far outside; the others move by rounding); an all-zero polynomial (no motion) has
    its roots at 0.
    """
    S, d1, n = coef.shape
    d = d1 - 1
    s = np.zeros((S * n, d))
    picked = np.flatnonzero(which.reshape(-1))
    c = coef.transpose(0, 2, 1).reshape(S * n, d1)[picked]  # one polynomial a row, s⁰ first
    scale = np.abs(c).max(axis=1)
    lead = c[:, d]
    floor = np.where(scale > 0.0, 1e-12 * scale, 1.0)
    lead = np.where(np.abs(lead) < floor, np.copysign(floor, lead), lead)
    companion = np.zeros((picked.size, d, d))
    companion[:, 1:, :-1] = np.eye(d - 1)
    companion[:, :, -1] = -c[:, :d] / lead[:, None]
    roots = np.linalg.eigvals(companion)
    real = roots.real
    ok = (np.abs(roots.imag) <= 1e-9 * (1.0 + np.abs(real))) & (real >= 0.0) & (real <= 1.0)
    s[picked] = np.where(ok, real, 0.0)
    ends = np.broadcast_to(np.array([0.0, 1.0])[None, :, None], (S, 2, n))
    return np.concatenate((ends, s.reshape(S, n, d).transpose(0, 2, 1)), axis=1)


def _horner(coef: FloatArray, s: FloatArray) -> FloatArray:
    """``Σ_k coef[:, k]·s^k`` at every ``s`` (coef: S × (d + 1) × n, s: S × K × n)."""
    out = np.broadcast_to(coef[:, -1:], s.shape).copy()
    for k in range(coef.shape[1] - 2, -1, -1):
        out *= s
        out += coef[:, k : k + 1]
    return out


def _bernstein_hull(degree: int, pieces: int) -> FloatArray:
    """``H`` ((pieces·(degree + 1)) × (degree + 1)): ``H·c`` are the Bernstein coefficients, of
    degree ``degree``, of ``Σ_k c_k·s^k`` on each of ``pieces`` equal parts of ``[0, 1]`` in turn.

    On the part ``[a, a + h]``, ``s = a + h·u``: the power coefficients in ``u`` are ``e_j = Σ_k
    C(k, j)·a^(k−j)·h^j·c_k``, the Bernstein ones ``b_i = Σ_{j ≤ i} C(i, j)/C(d, j)·e_j``. The
    polynomial stays within the range of each part's (they are its control points there; a lower
    degree's, raised, lie within its own).
    """
    d = degree
    to_bernstein = np.array([[math.comb(i, j) / math.comb(d, j) for j in range(d + 1)] for i in range(d + 1)])
    parts = []
    for part in range(pieces):
        a, h = part / pieces, 1.0 / pieces
        shift = np.array(
            [
                [math.comb(k, j) * a ** (k - j) * h**j if j <= k else 0.0 for k in range(d + 1)]
                for j in range(d + 1)
            ]
        )
        parts.append(to_bernstein @ shift)
    return np.vstack(parts)


#: Up to this many segments (a planner's one or two), :meth:`JointTrajectory._may_pass` uses its
#: finer screen alone (~10 µs); beyond, the whole segments' first, several times cheaper a segment
#: (0.16 ms for a user's 2 000 points), and the finer one only where that one cannot clear.
_FEW_SEGMENTS = 16
#: The finer screen's control points (:meth:`JointTrajectory._fine_may_pass`): cubic and quintic
#: segments, on halves.
_CUBIC_HULL = _bernstein_hull(3, 2)
_QUINTIC_HULL = _bernstein_hull(5, 2)
#: ``s^k`` at ``s = 0, 1/16, …, 1`` (rows) for ``k = 0…5`` (columns): where a planner's course
#: check samples a segment first (:meth:`JointTrajectory.within_limits`).
_SAMPLE_POWERS = np.linspace(0.0, 1.0, 17)[:, None] ** np.arange(6.0)
#: How far (rad, rad/s, rad/s²) beyond :data:`LIMIT_TOLERANCE` a sampled point must be past a bound
#: to settle that the exact extremum is: far above the rounding of either evaluation (~1e-15).
_SURELY_PAST = 1e-9


#: Power coefficients of the cubic Hermite interpolant: row ``k`` gives ``c_k`` (the factor of
#: ``s^k``) from the endpoint data ``[p₀, m₀, p₁, m₁]`` (``m = dq/ds``): ``q(s) = Σ_k c_k·s^k``
#: meets ``q(0) = p₀``, ``q'(0) = m₀``, ``q(1) = p₁``, ``q'(1) = m₁``.
_CUBIC = np.array(
    [
        [1.0, 0.0, 0.0, 0.0],
        [0.0, 1.0, 0.0, 0.0],
        [-3.0, -2.0, 3.0, -1.0],
        [2.0, 1.0, -2.0, 1.0],
    ]
)
#: The same for the quintic Hermite interpolant and ``[p₀, m₀, a₀, p₁, m₁, a₁]`` (``a = d²q/ds²``).
_QUINTIC = np.array(
    [
        [1.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [0.0, 1.0, 0.0, 0.0, 0.0, 0.0],
        [0.0, 0.0, 0.5, 0.0, 0.0, 0.0],
        [-10.0, -6.0, -1.5, 10.0, -4.0, 0.5],
        [15.0, 8.0, 1.5, -15.0, 7.0, -1.0],
        [-6.0, -3.0, -0.5, 6.0, -3.0, 0.5],
    ]
)


def acceleration_limits(robot: RobotModel) -> FloatArray:
    """Per joint ``i``, the largest ``|q̈ᵢ|`` (rad/s²) a trajectory may ask: the acceleration of that
    joint alone whose inertial torque ``M(q)·q̈`` reaches some joint's whole effort limit in the
    configuration where it weighs most,

        a_maxᵢ = 1 / max over q, j of |M_ji(q)| / τ_maxⱼ

    (``M`` the model's mass matrix, ``τ_max`` its effort limits, over :data:`ACCELERATION_SAMPLES`
    seeded configurations within the position limits, ``±π`` on continuous joints). Above it the
    feedforward alone asks more than an actuator has where the joint weighs most (elsewhere, at
    home for one, more fits); below it gravity and the feedback still need their share, so it is a
    cautious bound of what may not be tracked, not of what can.
    Gen3: 25.9, 25.7, 92, 70, 518, 459, 8001 rad/s² (joint_1 at home: M₁₁ = 0.256 kg·m², so 300
    rad/s² is 77 N·m of inertial torque alone against its 39; a trajectory asking that would
    command −73 N·m at once, the measured torque, gravity and coupling in it). Kinova's
    published ros2_control parameters for the Gen3 (1 rad/s² on joints 1–4, 10 on 5–7) are a
    planner's conservative choice, not a bound. This package's own joint approaches from rest ask
    up to ``v_max·√(0.41·kp)``: 8.9 rad/s² on joints 1–4 at the default ``kp`` 100 (``kd`` 20);
    at higher gains they and the stops are lengthened to stay within these bounds (the
    approaches of joints 1–2 from ``kp`` ≈ 830 on: :class:`~.approach.JointApproachPlanner`).
    Computed once per model (~20 ms) and cached. ``inf`` where no joint has an effort limit.
    """
    cached = _ACCELERATION_LIMITS.get(robot)
    if cached is not None:
        return cached
    from .robot import random_configurations

    effort = np.asarray(robot.effort_limit, dtype=np.float64)
    configurations = random_configurations(
        robot.position_lower, robot.position_upper, ACCELERATION_SAMPLES, _ACCELERATION_SEED
    )
    heaviest = np.zeros(robot.n)  # per column i: max over q, j of |M_ji| / τ_max_j (s²/rad)
    for q in configurations:
        np.maximum(heaviest, (np.abs(robot.mass_matrix(q)) / effort[:, None]).max(axis=0), out=heaviest)
    with np.errstate(divide="ignore"):
        limits = np.where(heaviest > 0.0, 1.0 / heaviest, np.inf)
    _ACCELERATION_LIMITS[robot] = limits
    return limits


class MotionWording(NamedTuple):
    """How :func:`check_motion` words a refusal for its caller: ``{motion} takes joint_2 to 2.2452
    rad at 0.1290 s {when}, past its position limit 2.2400 rad; {advice}``."""

    motion: str
    """What moves, opening the message (``trajectory: the interpolated motion``)."""
    when: str
    """What the time is counted from (``(time_from_start)``)."""
    position: str
    """Advice for a position limit passed (``""``: none)."""
    velocity: str
    """Advice for a velocity limit passed."""
    acceleration: str
    """Advice for an acceleration above its bound."""


TRAJECTORY_WORDING = MotionWording(
    "trajectory: the interpolated motion",
    "(time_from_start)",
    "add waypoints or give velocities that keep it inside",
    "slow it down",
    "slow it down or smooth it",
)
"""For a user's trajectory: what its waypoints can change."""


def check_motion(
    robot: RobotModel,
    trajectory: JointTrajectory,
    first: int = 0,
    last: int | None = None,
    offset: float = 0.0,
    acceleration_limit: ArrayLike | None = None,
    wording: MotionWording = TRAJECTORY_WORDING,
    velocity_limit: ArrayLike | None = None,
) -> None:
    """Refuse a trajectory whose interpolated motion passes a position limit (bounded joints), a
    velocity limit or, if given, ``acceleration_limit`` (rad/s² per joint, e.g.
    :func:`acceleration_limits`) (:meth:`JointTrajectory.limit_violation`, segments ``first`` to
    ``last − 1``); ``offset`` (s) is added to the reported time so that it reads as the message's
    ``time_from_start``. ``wording``: how the refusal names the motion and what it advises (by
    default for a user's trajectory; a motion the package planned words it for its caller).
    ``velocity_limit``: rad/s per joint in place of the model's (``inf``: speeds not checked).
    """
    found = trajectory.limit_violation(
        robot.position_lower,
        robot.position_upper,
        robot.velocity_limit if velocity_limit is None else velocity_limit,
        first,
        last,
        np.inf if acceleration_limit is None else acceleration_limit,
    )
    if found is None:
        return
    name, t = robot.joint_names[found.joint], found.time + offset
    at = f"at {t:.4f} s {wording.when}"
    if found.quantity == "position":
        message = (
            f"{wording.motion} takes {name} to {found.value:.4f} rad {at}, past its position limit "
            f"{found.limit:.4f} rad"
        )
        advice = wording.position
    elif found.quantity == "acceleration":
        message = (
            f"{wording.motion} accelerates {name} at {found.value:.2f} rad/s² {at}, above its bound "
            f"{found.limit:.2f} rad/s² (where the inertial torque alone reaches an effort limit)"
        )
        advice = wording.acceleration
    else:
        message = (
            f"{wording.motion} moves {name} at {found.value:.4f} rad/s {at}, above its velocity limit "
            f"{found.limit:.4f} rad/s"
        )
        advice = wording.velocity
    raise TargetError(f"{message}; {advice}" if advice else message)


__all__ = [
    "ACCELERATION_SAMPLES",
    "LIMIT_TOLERANCE",
    "TRAJECTORY_WORDING",
    "JointTrajectory",
    "LimitViolation",
    "MotionWording",
    "acceleration_limits",
    "check_motion",
]
