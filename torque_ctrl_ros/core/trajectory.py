"""Joint trajectory interpolation (the content of ``trajectory_msgs/JointTrajectory``; pure).

Between two waypoints the interpolant is

* quintic Hermite when both velocities and accelerations are given (C² at the waypoints),
* cubic Hermite when velocities are given (C¹),
* cubic Hermite with estimated velocities when only positions are given: zero at the first
  and last point, the time-weighted mean of the adjacent secant slopes inside (C¹; the
  velocity at an interior point is zero where the path turns back, so no overshoot there).

Before the first waypoint the first position is held at rest; after the last one the last position is
held with zero velocity and acceleration.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .errors import TargetError
from .validation import FloatArray


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


class JointTrajectory:
    """A time-parameterised joint path sampled as ``(q_ref, q̇_ref, q̈_ref)``.

    Args:
        times: waypoint times (s) from the trajectory start, strictly increasing, ``>= 0``.
        positions: ``m × n`` joint angles (rad).
        velocities: optional ``m × n`` joint velocities (rad/s).
        accelerations: optional ``m × n`` accelerations (rad/s²); used only with velocities.
        start: optional ``(q, v)`` at time 0, prepended when the first waypoint is later than 0
            (a trajectory normally starts from where the arm is).

    Raises:
        TargetError: malformed input (the message says which field).
    """

    def __init__(
        self,
        times: Sequence[float] | FloatArray,
        positions: ArrayLike,
        velocities: ArrayLike | None = None,
        accelerations: ArrayLike | None = None,
        start: tuple[ArrayLike, ArrayLike | None] | None = None,
    ) -> None:
        t = np.array(times, dtype=np.float64).reshape(-1)
        m = t.size
        if m == 0:
            raise TargetError("trajectory: expected at least one point")
        pos_arr = np.asarray(positions, dtype=np.float64) if positions is not None else None
        if pos_arr is None or pos_arr.ndim != 2:
            raise TargetError("trajectory positions: expected one row of joint angles per point")
        n = pos_arr.shape[1]
        if n == 0:
            raise TargetError("trajectory positions: expected at least one joint")
        if not np.isfinite(t).all() or (t < 0).any():
            raise TargetError(f"trajectory times: expected finite times >= 0, got {t.tolist()}")
        if (np.diff(t) <= 0).any():
            raise TargetError(f"trajectory times: expected strictly increasing times, got {t.tolist()}")
        p = _matrix("positions", positions, m, n)
        v = _matrix("velocities", velocities, m, n)
        a = _matrix("accelerations", accelerations, m, n) if v is not None else None
        assert p is not None
        start_v: FloatArray | None = None
        if start is not None and t[0] > 0.0:
            q0 = np.asarray(start[0], dtype=np.float64)
            v0 = np.zeros(n) if start[1] is None else np.asarray(start[1], dtype=np.float64)
            if q0.shape != (n,) or v0.shape != (n,) or not (np.isfinite(q0).all() and np.isfinite(v0).all()):
                raise TargetError(f"trajectory start state: expected {n} finite angles and velocities")
            t = np.concatenate(([0.0], t))
            p = np.vstack((q0, p))
            if v is not None:
                v = np.vstack((v0, v))
                if a is not None:
                    a = np.vstack((np.zeros(n), a))
            else:
                # Estimated velocities would ignore the start velocity; keep it for continuity.
                start_v = v0
        self.times = t
        self.positions = p
        self.n = n
        self.kind = "quintic" if a is not None else "cubic"
        self.velocities = v if v is not None else self._estimate_velocities(t, p, start_v)
        self.accelerations = a

    @staticmethod
    def _estimate_velocities(t: FloatArray, p: FloatArray, v_start: FloatArray | None) -> FloatArray:
        v = np.zeros_like(p)
        if v_start is not None:
            v[0] = v_start
        if len(t) > 2:
            dt = np.diff(t)[:, None]
            slope = np.diff(p, axis=0) / dt
            left, right = slope[:-1], slope[1:]
            w_left, w_right = dt[1:], dt[:-1]  # the nearer secant weighs more
            mean = (w_left * left + w_right * right) / (w_left + w_right)
            v[1:-1] = np.where(left * right > 0.0, mean, 0.0)
        return v

    @property
    def duration(self) -> float:
        """Time (s) of the last waypoint."""
        return float(self.times[-1])

    def sample(self, t: float) -> tuple[FloatArray, FloatArray, FloatArray]:
        """``(q_ref, q̇_ref, q̈_ref)`` (rad, rad/s, rad/s²) at ``t`` s from the start."""
        times = self.times
        if t >= times[-1]:
            return self.positions[-1].copy(), np.zeros(self.n), np.zeros(self.n)
        if t < times[0]:
            return self.positions[0].copy(), np.zeros(self.n), np.zeros(self.n)
        i = int(np.searchsorted(times, t, side="right")) - 1
        T = float(times[i + 1] - times[i])
        s = (t - float(times[i])) / T
        p0, p1 = self.positions[i], self.positions[i + 1]
        v0, v1 = self.velocities[i] * T, self.velocities[i + 1] * T  # derivatives w.r.t. s
        if self.accelerations is None:
            h = _cubic_basis(s)
            q = h[0, 0] * p0 + h[0, 1] * v0 + h[0, 2] * p1 + h[0, 3] * v1
            qd = h[1, 0] * p0 + h[1, 1] * v0 + h[1, 2] * p1 + h[1, 3] * v1
            qdd = h[2, 0] * p0 + h[2, 1] * v0 + h[2, 2] * p1 + h[2, 3] * v1
        else:
            a0, a1 = self.accelerations[i] * T * T, self.accelerations[i + 1] * T * T
            h = _quintic_basis(s)
            q = h[0, 0] * p0 + h[0, 1] * v0 + h[0, 2] * a0 + h[0, 3] * p1 + h[0, 4] * v1 + h[0, 5] * a1
            qd = h[1, 0] * p0 + h[1, 1] * v0 + h[1, 2] * a0 + h[1, 3] * p1 + h[1, 4] * v1 + h[1, 5] * a1
            qdd = h[2, 0] * p0 + h[2, 1] * v0 + h[2, 2] * a0 + h[2, 3] * p1 + h[2, 4] * v1 + h[2, 5] * a1
        return q, qd / T, qdd / (T * T)

    @classmethod
    def from_points(
        cls, points: Sequence[Any], n: int, start: tuple[ArrayLike, ArrayLike | None] | None = None
    ) -> JointTrajectory:
        """Build from ``(t, positions, velocities|None, accelerations|None)`` tuples of ``n`` joints.

        Velocities (accelerations) are used only if every point has them.
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
        return cls(times, pos, vel if has_v else None, acc if has_a else None, start=start)


def _cubic_basis(s: float) -> FloatArray:
    """Rows: value, d/ds, d²/ds² of the Hermite basis (p0, m0, p1, m1) at ``s ∈ [0, 1]``."""
    s2, s3 = s * s, s * s * s
    return np.array(
        [
            [2 * s3 - 3 * s2 + 1, s3 - 2 * s2 + s, -2 * s3 + 3 * s2, s3 - s2],
            [6 * s2 - 6 * s, 3 * s2 - 4 * s + 1, -6 * s2 + 6 * s, 3 * s2 - 2 * s],
            [12 * s - 6, 6 * s - 4, -12 * s + 6, 6 * s - 2],
        ]
    )


def _quintic_basis(s: float) -> FloatArray:
    """Rows: value, d/ds, d²/ds² of the quintic Hermite basis (p0, v0, a0, p1, v1, a1)."""
    s2, s3, s4, s5 = s * s, s**3, s**4, s**5
    return np.array(
        [
            [
                1 - 10 * s3 + 15 * s4 - 6 * s5,
                s - 6 * s3 + 8 * s4 - 3 * s5,
                0.5 * s2 - 1.5 * s3 + 1.5 * s4 - 0.5 * s5,
                10 * s3 - 15 * s4 + 6 * s5,
                -4 * s3 + 7 * s4 - 3 * s5,
                0.5 * s3 - s4 + 0.5 * s5,
            ],
            [
                -30 * s2 + 60 * s3 - 30 * s4,
                1 - 18 * s2 + 32 * s3 - 15 * s4,
                s - 4.5 * s2 + 6 * s3 - 2.5 * s4,
                30 * s2 - 60 * s3 + 30 * s4,
                -12 * s2 + 28 * s3 - 15 * s4,
                1.5 * s2 - 4 * s3 + 2.5 * s4,
            ],
            [
                -60 * s + 180 * s2 - 120 * s3,
                -36 * s + 96 * s2 - 60 * s3,
                1 - 9 * s + 18 * s2 - 10 * s3,
                60 * s - 180 * s2 + 120 * s3,
                -24 * s + 84 * s2 - 60 * s3,
                3 * s - 12 * s2 + 10 * s3,
            ],
        ]
    )


__all__ = ["JointTrajectory"]
