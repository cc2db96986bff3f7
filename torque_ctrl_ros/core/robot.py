"""Robot model: Pinocchio dynamics behind a joint-angle interface.

The controllers see the arm as ``n`` one-degree-of-freedom joints with angles
``q`` (rad), velocities ``v`` (rad/s) and torques ``tau`` (N·m), in the order of
:attr:`RobotModel.joint_names`. Pinocchio stores a URDF ``continuous`` joint as
``(cos q, sin q)`` (so ``nq != nv``); :meth:`RobotModel.configuration` does that
mapping once, so no other module has to know about it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike, NDArray

from .errors import ConfigError, FrameNotFoundError, ModelError, StateError
from .validation import FloatArray, all_finite, as_positive_float, as_vector

CONTROL_PERIOD = 1.0e-3
"""Period ``h`` (s) of the Gen3's torque loop (Kinova's low-level interface runs at 1 kHz; the
simulator steps at the same rate): a safe or damping torque ``−K_d·q̇`` is applied once per ``h``."""

DAMPING_EIGENVALUE_MAX = 1.0
"""Bound (exclusive) on the largest eigenvalue ``λ`` of ``h·M⁻¹·K_d`` for a damping ``−K_d·q̇``
computed from the state and held for one period ``h``.

Without delay the velocity follows ``q̇⁺ = (I − h·M⁻¹·K_d)·q̇``: each mode is multiplied by
``1 − λ`` per period, so it decays while ``λ < 2``, and rings (flips sign every period) from
``λ = 1``. With the command ``d`` periods late, ``q̇⁺ = q̇ − λ·q̇₋d`` decays only while
``λ <`` :func:`damping_eigenvalue_bound` ``(d) = 2·sin(π/(2·(2d + 1)))``: 1 for one period (a
late step in the simulator's realtime mode, a transport delay), 0.618 for two, 0.445 for three,
0.347 for four. This bound is one period's: no ringing, and a late step cannot make it grow;
:meth:`RobotModel.check_damping` uses the lower one of the robot's ``command_delay`` for a
damping fed back from measurements (:func:`delay_periods`).

The simulator shows a command in the next state (1 ms from state to the state that shows it);
the real Gen3's 3–5 ms command-to-measurement delay is ``d`` = 2–4 periods on top of that
first one, bounds 0.62–0.35 (``config/gen3_hardware.yaml`` sets 5 ms). The safe brakes'
default (:data:`DEFAULT_DAMPING`) reaches 0.975 on this model where joints 1, 3, 5 and 7 line up
(the arm stretched straight up, e.g. ``q = [0, 0, π, 0, 0, 0, π]``; 0.32 at home): in MuJoCo
with the commands 3 or 5 ms late, a damping torque with them rang joints 1 and 3 up to
27–190 rad/s there (README, "Damping and the real arm's delay"). The real
actuators' reflected rotor inertia, which the model lacks (Kinova does not publish it), lowers
``λ`` there by a factor nobody here could measure.
"""


DEFAULT_DAMPING: tuple[float, ...] = (2.0, 2.0, 0.5, 1.0, 0.2, 0.2, 0.2)
"""Per-joint ``K_d`` (N·m·s/rad) of the safe torques ``g − K_d·q̇`` and ``−K_d·q̇``: Gen3, 1 kHz.

A damping torque applied once per period ``h`` is explicit: on time, the velocity follows
``q̇⁺ = (I − h·M⁻¹·K_d)·q̇``, each mode multiplied by ``1 − λ`` per period (``λ`` an eigenvalue
of ``h·M⁻¹·K_d``): it decays while ``λ < 2``, without flipping sign while ``λ < 1``. One period
late, ``q̇⁺ = q̇ − λ·q̇₋₁`` still decays while ``λ < 1`` (by ``√λ`` per period), oscillating
slowly above ``λ = ¼``. ``λ < 1`` is the bound every damping is held to
(:data:`DAMPING_EIGENVALUE_MAX`). The wrist's
inertia is ~7e-4 kg·m², so one scalar for all joints cannot work: ``K_d = 1`` gives eigenvalues
up to 3.5 and ``K_d = 2`` up to 7. These values keep the largest eigenvalue below 1 over the
joint space (0.947–0.965 at most over 20 000 random configurations, by seed; 0.975 at the
stretched and folded corners that :meth:`RobotModel.check_damping` adds;
``test/test_safety.py`` checks < 1). Every damping a node or controller is given goes through
that check at start (refused at ≥ :func:`damping_eigenvalue_bound` of the robot's delay: 1 one
period late, 0.347 at 5 ms; 0.98 of that with a twist damping). Another robot must set its
own. The real arm's 3–5 ms delay asks for less on the model (0.62–0.35, exceeded most where
joints 1, 3, 5 and 7 line up): README, "Damping and the real arm's delay".
"""


DELAYED_DAMPING: tuple[float, ...] = (0.4, 1.5, 0.1, 0.8, 0.1, 0.1, 0.08)
"""Per-joint ``K_d`` (N·m·s/rad) of a closed-loop damping on the Gen3 with the command 5 ms late
(the real arm through its base): the largest eigenvalue of ``h·M⁻¹·K_d`` is 0.308 over the
checked configurations (0.300 over 5000 random ones), below ``damping_eigenvalue_bound(4)`` = 0.347
(:data:`DEFAULT_DAMPING` reaches 0.975 where joints 1, 3, 5 and 7 line up). Tried in
MuJoCo as achd_rnea's ``joint_damping`` with the commands 3 and 5 ms late: settled (README,
"Damping and the real arm's delay"). The default of the dampings that act in closed loop
(achd_rnea's ``joint_damping``, the QP controllers' ``fallback_damping``), in the core and both
parameter files."""

MAX_COMMAND_DELAY = 0.05
"""Longest ``command_delay`` (s) taken: 50 periods; a longer one is a number in milliseconds."""


def check_command_delay(field: str, seconds: Any) -> float:
    """``seconds`` as a command delay (s, see :meth:`RobotModel.set_command_delay`); :class:`ConfigError`
    outside ``[CONTROL_PERIOD,`` :data:`MAX_COMMAND_DELAY` ``]``."""
    value = as_positive_float(field, seconds)
    if not CONTROL_PERIOD <= value <= MAX_COMMAND_DELAY:
        raise ConfigError(
            f"{field}: expected {CONTROL_PERIOD:g} to {MAX_COMMAND_DELAY:g} s (a command shows in the state "
            f"one period after the state it answers at the earliest; the value is in seconds), got {value:g}"
        )
    return value


def showing_period(command_delay: float, period: float = CONTROL_PERIOD) -> int:
    """The period of the first state that shows a command ``command_delay`` (s) after the state it
    answers: ``⌈command_delay / h⌉`` (4.4 ms: the fifth; 1 ms, the simulator's: the first). The
    start-up checks (:func:`delay_periods`), the delay prediction
    (:func:`~.prediction.commands_in_flight`) and the delay read from the efforts all count so."""
    # The tolerance keeps a delay a rounding error above whole periods at those periods: 37 ms
    # computed as 370 * 0.0001 (0.037000000000000005 s) gives 37, not 38.
    return math.ceil(command_delay / period - 1e-9)


def delay_periods(command_delay: float, period: float = CONTROL_PERIOD) -> int:
    """The ``d`` of :func:`damping_eigenvalue_bound` and :func:`pd_spectral_radius` for a
    command-to-measurement delay ``command_delay`` (s, from a state to the first state that
    shows the command answering it): the periods beyond the first, rounded up (4.4 ms is checked
    as 5), at least 1 (a late step, which the simulator's realtime mode and any transport can
    add). 1 ms (the simulator) and 2 ms give 1, the real Gen3's 3 and 5 ms give 2 and 4."""
    return max(1, showing_period(command_delay, period) - 1)


def damping_eigenvalue_bound(delay: int) -> float:
    """Largest ``λ`` (exclusive) for which ``q̇⁺ = q̇ − λ·q̇₋d`` decays with the damping command
    ``d = delay`` ≥ 1 periods late: ``2·sin(π/(2·(2d + 1)))`` (1, 0.618, 0.445, 0.347 for 1–4)."""
    return 2.0 * math.sin(math.pi / (2.0 * (2 * delay + 1)))


DAMPING_SAMPLES = 300
"""Seeded random configurations over which a damping is checked, besides the zero pose and a grid
of corners (:func:`damping_configurations`)."""

_DAMPING_SEED = 0
_MAX_GRID = 4096  # corner configurations at most: ~3 ms of M⁻¹ on the Gen3 per 1000

# Pinocchio uses the largest double (or inf) for "no limit"; treat anything this big as none.
_NO_LIMIT = 1e10
#: Smallest / largest eigenvalue of ``M(q)`` at or below which a model is refused
#: (:meth:`RobotModel._check_inertia`); the Gen3's is at least 1.8e-4 over 200 sampled poses.
_SINGULAR_INERTIA = 1e-9
_REVOLUTE_BOUNDED = {"JointModelRX", "JointModelRY", "JointModelRZ", "JointModelRevoluteUnaligned"}
_REVOLUTE_UNBOUNDED = {
    "JointModelRUBX",
    "JointModelRUBY",
    "JointModelRUBZ",
    "JointModelRevoluteUnboundedUnaligned",
}


def wrap_angle(angle: FloatArray) -> FloatArray:
    """Wrap angles (rad) into ``[-pi, pi)``."""
    return np.mod(angle + np.pi, 2.0 * np.pi) - np.pi


def _as_slice(index: NDArray[np.intp]) -> slice | NDArray[np.intp]:
    """``index`` as an equivalent slice when it is evenly spaced and increasing, else unchanged.

    Basic indexing with a slice gives a view, which a ufunc can write its result into.
    """
    if index.size == 0:
        return slice(0, 0)
    start = int(index[0])
    step = int(index[1] - index[0]) if index.size > 1 else 1
    if step > 0 and np.array_equal(index, np.arange(start, start + step * index.size, step)):
        return slice(start, start + step * (index.size - 1) + 1, step)
    return index


def configuration_rows(field: str, value: ArrayLike, n: int) -> FloatArray:
    """``value`` as joint configurations (rad), ``m × n`` with ``m ≥ 1`` and every entry finite;
    one configuration of ``n`` numbers is one row. Raises :class:`ConfigError` naming ``field``.

    Without it a column of ``m`` numbers broadcast each onto every joint of the simulator's
    rows, and an empty set made the largest eigenvalue a bare numpy error.
    """
    try:
        rows = np.atleast_2d(np.asarray(value, dtype=np.float64))
    except (TypeError, ValueError) as exc:
        got = type(value).__name__
        raise ConfigError(f"{field}: expected joint positions (rad), got {got} ({exc})") from None
    if rows.ndim != 2 or rows.shape[0] == 0 or rows.shape[1] != n:
        raise ConfigError(f"{field}: expected configurations of {n} joint positions, got shape {rows.shape}")
    if not np.isfinite(rows).all():
        raise ConfigError(f"{field}: expected finite joint positions")
    return rows


def damping_configurations(
    lower: FloatArray, upper: FloatArray, count: int = DAMPING_SAMPLES, seed: int = _DAMPING_SEED
) -> FloatArray:
    """Joint configurations (rad), ``m × n``, for checking a damping over the joint space.

    Row 0 is the zero pose (clipped into the limits). Then a grid of the corners where the
    inertia seen by the joints is extreme (arm stretched or folded): every combination of
    ``{lower, 0, upper}`` on bounded joints and ``{0, π}`` on continuous ones, the first joint
    held at 0 (a root joint's angle does not change ``M``); it is left out beyond
    ``_MAX_GRID`` rows. Last, ``count`` rows uniform within ``[lower, upper]`` (``±π`` where a bound
    is infinite: a continuous joint repeats after 2π). On the Gen3 (517 rows) the largest
    eigenvalue of ``h·M⁻¹·K_d`` over them is within 1e-4 of a bounded optimiser's, for a scalar
    and per-joint dampings; over the random rows alone it is up to 7 % lower (3.30 vs 3.54 for
    ``K_d = 1``). Deterministic: the same bounds, count and seed give the same rows.
    """
    lo = np.where(np.isfinite(lower), lower, -np.pi)
    hi = np.where(np.isfinite(upper), upper, np.pi)
    zero = np.clip(np.zeros(lo.shape), lo, hi)
    axes = [[float(zero[0])]]
    for j in range(1, lo.size):
        if lo[j] == hi[j]:
            axes.append([float(lo[j])])
        elif np.isfinite(lower[j]) and np.isfinite(upper[j]):
            axes.append(sorted({float(lo[j]), float(zero[j]), float(hi[j])}))
        else:
            axes.append([float(zero[j]), float(np.clip(np.pi, lo[j], hi[j]))])
    rows = [zero[None]]
    if math.prod(len(a) for a in axes) <= _MAX_GRID:
        rows.append(np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, lo.size))
    rows.append(random_configurations(lower, upper, count, seed))
    return np.vstack(rows)


def random_configurations(
    lower: FloatArray, upper: FloatArray, count: int, seed: int = _DAMPING_SEED
) -> FloatArray:
    """``count`` seeded configurations (rad), ``count × n``, uniform within ``[lower, upper]``
    (``±π`` where a bound is infinite: a continuous joint repeats after 2π)."""
    lo = np.where(np.isfinite(lower), lower, -np.pi)
    hi = np.where(np.isfinite(upper), upper, np.pi)
    return np.random.default_rng(seed).uniform(lo, hi, (count, lo.size))


#: How many of :func:`sample_configurations` the start-up checks of a frame's Jacobian rows give
#: :meth:`RobotModel.frame_rows_rank` (the ACHD constraints' and the QP tasks' checks).
ROW_CHECK_SAMPLES = 32
#: Largest singular value (m/rad or rad/rad) of Jacobian rows still taken as 0 by
#: :meth:`RobotModel.frame_rows_rank`. A row that the geometry pins reads rounding: on the Gen3 at
#: most 1.2e-16 (shoulder_link's ry row, half_arm_1_link's z row 6.5e-19), while its shortest real
#: lever, half_arm_1_link's origin off joint 1's axis, gives 5.4e-3. 1e-9 lies far from both. (A
#: relative tolerance would find rank 1 in a row of rounding alone.)
ZERO_ROW_TOLERANCE = 1e-9


def sample_configurations(robot: RobotModel, count: int = 200) -> FloatArray:
    """``count`` seeded random configurations (rad) within ``robot``'s joint limits, for checking
    at start that a barrier's bound can be met, or a frame's rows can move, somewhere
    (:func:`random_configurations`)."""
    return random_configurations(robot.position_lower, robot.position_upper, count)


def damping_eigenvalues(m_inv: FloatArray, kd: FloatArray, period: float) -> FloatArray:
    """Largest eigenvalue of ``h·M⁻¹·K_d`` for each of a stack of ``M⁻¹`` (``m × n × n``): shape ``(m,)``.

    ``M⁻¹·K_d`` is similar to the symmetric ``√K_d·M⁻¹·√K_d`` (same eigenvalues, all real and
    ``>= 0``), whose eigenvalues one batched ``eigvalsh`` gives. A damping so large that the
    product overflows (~1e306 N·m·s/rad on the Gen3) gives ``inf``: ``eigvalsh`` raised on it.
    """
    s = np.sqrt(kd)
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = s[:, None] * m_inv * s
    if not np.isfinite(scaled).all():
        return np.full(len(m_inv), np.inf)
    return period * np.linalg.eigvalsh(scaled)[:, -1].astype(np.float64, copy=False)


def check_damping_stability(
    field: str,
    kd: FloatArray,
    period: float,
    m_inv: FloatArray,
    configurations: FloatArray,
    joint_names: Sequence[str],
    delay: int = 1,
    *,
    closed_loop: bool = False,
) -> float:
    """Largest eigenvalue ``λ`` of ``h·M⁻¹·K_d`` over ``m_inv`` (one ``M⁻¹`` per configuration);
    :class:`ConfigError` when ``λ >=`` :func:`damping_eigenvalue_bound` ``(delay)`` (for one
    period, :data:`DAMPING_EIGENVALUE_MAX`: beyond it the velocity rings, and grows with one
    period of delay; for ``delay`` periods, beyond it the delayed damping makes it grow).

    The message names the joint that moves most in the worst mode (``v = M⁻¹·√K_d·w`` for the
    eigenvector ``w`` of ``√K_d·M⁻¹·√K_d``), and suggests :data:`DELAYED_DAMPING` for a
    ``closed_loop`` damping (fed back from measurements, which the real arm's delay makes late),
    else :data:`DEFAULT_DAMPING`.
    """
    if not kd.any():
        return 0.0
    eigenvalues = damping_eigenvalues(m_inv, kd, period)
    worst = int(np.argmax(eigenvalues))
    largest = float(eigenvalues[worst])
    bound = damping_eigenvalue_bound(delay)
    if largest < bound:
        return largest
    if not math.isfinite(largest):
        raise ConfigError(
            f"{field}: {kd.tolist()} N·m·s/rad overflows h·M⁻¹·K_d: orders of magnitude beyond the "
            f"damping a {period * 1e3:g} ms step can apply (its eigenvalue must stay below {bound:.3g})"
        )
    s = np.sqrt(kd)
    _, vectors = np.linalg.eigh(s[:, None] * m_inv[worst] * s)
    joint = joint_names[int(np.argmax(np.abs(m_inv[worst] @ (s * vectors[:, -1]))))]
    q_worst = np.round(configurations[worst], 2).tolist()
    if delay > 1:
        raise ConfigError(
            f"{field}: {kd.tolist()} N·m·s/rad is too much for a damping command "
            f"{describe_delay(delay)}: h·M⁻¹·K_d reaches eigenvalue "
            f"{largest:.3g} >= {bound:.3g} (at q = {q_worst} rad), and the velocity of {joint} grows "
            "(unstable). Lower it on the joints that line up there, e.g. the Gen3's "
            f'{list(DELAYED_DAMPING)} (README, "Damping and the real arm\'s delay").'
        )
    raise ConfigError(
        f"{field}: {kd.tolist()} N·m·s/rad is too much to apply once per {period * 1e3:g} ms: "
        f"h·M⁻¹·K_d reaches eigenvalue {largest:.3g} >= {DAMPING_EIGENVALUE_MAX:g} (at q = {q_worst} "
        f"rad), so the velocity of {joint} is multiplied by {1.0 - largest:.3g} per period: it rings, "
        "and one period of delay makes it grow (unstable). One value cannot suit the heavy shoulder "
        "and the light wrist: give one per joint, scaled to its inertia, e.g. the Gen3's "
        + (
            f"{list(DELAYED_DAMPING)}, which also holds with the real arm's 5 ms delay "
            '(README, "Damping and the real arm\'s delay").'
            if closed_loop
            else f"{list(DEFAULT_DAMPING)} (core/robot.py)."
        )
    )


#: The share of the damping bound (:data:`DAMPING_EIGENVALUE_MAX`, or :func:`damping_eigenvalue_bound`
#: of the robot's :attr:`RobotModel.delay_periods` when longer) a twist damping may reach at the
#: sampled poses (:meth:`RobotModel.check_frame_damping`): the worst pose between them can be ~1 %
#: above the sampled maximum.
_FRAME_DAMPING_MARGIN = 0.98


def pd_spectral_radius(kp: float, kd: float, period: float = CONTROL_PERIOD, delay: int = 1) -> float:
    """Spectral radius of the error dynamics ``ë = −kp·e − kd·ė`` of one axis (an exact model:
    computed torque, or the constrained solve at the tool), integrated as the plant is
    (semi-implicit Euler, step ``h``) with the command ``d = delay`` periods late::

        v_{k+1} = v_k − h·(kp·e_{k−d} + kd·v_{k−d}),   e_{k+1} = e_k + h·v_{k+1}

    Below 1 the error decays. (Without delay the bound is ``h·kd < 2`` and
    ``h²·kp + 2·h·kd < 4``; one period late, what the gain checks assume, kp 1e5 at critical
    damping gives 0.87, 2e5 gives 1.07.) Longer delays allow less: 2 to 4 periods late (the real
    Gen3's 3–5 ms command-to-measurement, see :data:`DAMPING_EIGENVALUE_MAX`), critical damping
    is stable only up to kp ~6.2e4 to ~2.0e4 (kp 1e5 gives 1.09–1.17; the defaults, kp 100 and kd
    20, 0.991–0.992). The checks use the robot's :attr:`RobotModel.delay_periods`: one period
    for the simulator, four with ``command_delay`` 5 ms (``config/gen3_hardware.yaml``). The real
    actuators' rotor inertia, which the model lacks, lowers the effective gains there by a factor
    Kinova does not publish.
    """
    return float(np.abs(_pd_eigenvalues(kp, kd, period, delay)).max())


def _pd_eigenvalues(kp: float, kd: float, period: float, delay: int) -> NDArray[np.complex128]:
    """Eigenvalues of the one-period step of :func:`pd_spectral_radius`'s recursion."""
    h = period
    # State [e_k, v_k, e_{k−1}, v_{k−1}, …, e_{k−d}, v_{k−d}]: the command acts on the last pair.
    a = np.zeros((2 * delay + 2, 2 * delay + 2))
    a[1, 1] = 1.0
    a[1, 2 * delay] -= h * kp
    a[1, 2 * delay + 1] -= h * kd
    a[0] = h * a[1]
    a[0, 0] += 1.0
    a[2:, :-2] = np.eye(2 * delay)  # shift the history by one period
    return np.linalg.eigvals(a).astype(np.complex128)


#: Smallest damping ratio (:func:`pd_damping_ratio`) a PD loop's least damped mode may have. A loop
#: just inside stability decays too slowly to hold anything: in MuJoCo from home (computed torque,
#: a 0.3 rad step on every joint), kd 20 with kp 18 995 (the command 1 ms late; ratio 0.002) or
#: 4 659 (5 ms late; 0.005) never settled, and at 5 ms critical damping with kp 19 200 (0.01) took
#: 0.83 s to settle a 3 mrad step that kp 14 500 (0.1) settled in 0.1 s. With the command 5 ms late
#: and a 0.2 rad step, kp 1000 at ratio 0.05 was still 17 mrad off after 3 s; at 0.1, within 2 % in
#: 1.7 s.
MIN_DAMPING_RATIO = 0.1

#: Eigenvalues of the PD recursion smaller than this in modulus are left out of
#: :func:`pd_damping_ratio`: such a mode loses half its size or more every period (the history's
#: modes among them), whatever its angle.
_FAST_MODE = 0.5


def pd_damping_ratio(kp: float, kd: float, period: float = CONTROL_PERIOD, delay: int = 1) -> float:
    """Damping ratio ``ζ`` of the least damped mode of :func:`pd_spectral_radius`'s recursion.

    Each eigenvalue ``z`` of the one-period step stands for a continuous pole ``s = ln(z)/h``;
    its ratio is ``ζ = −Re(s)/|s|``: 1 for a real ``z`` in (0, 1), near 0 for a mode that rings
    for many cycles, below 0 for one that grows. Modes with ``|z| <`` 0.5 are left out (they halve
    every period). Without delay and for small ``h·√kp`` it is the continuous ``kd/(2·√kp)``;
    the delay lowers it: critical damping with kp 1e5 reads 0.16 one period late, 19 200 reads
    0.01 four periods late (5 ms).
    """
    ratios = [
        -s.real / abs(s)
        for s in (np.log(z) / period for z in _pd_eigenvalues(kp, kd, period, delay) if abs(z) >= _FAST_MODE)
    ]
    return float(min(ratios, default=1.0))


def describe_delay(delay: int) -> str:
    """How late a command is, for messages: one period of delay (the margin every check keeps), or
    the ``command_delay`` that ``delay`` periods of :data:`CONTROL_PERIOD` beyond the first stand for
    (whatever period the damping is applied at)."""
    if delay == 1:
        return "one period late"
    return f"{(delay + 1) * CONTROL_PERIOD * 1e3:g} ms late (command_delay)"


#: The largest kp (1/s²) that passes :func:`check_pd_gains` at critical damping, per delay (periods):
#: held there by the damping ratio's bound (stability alone allowed ~1.6e5, ~6.2e4, ~3.2e4, ~2.0e4).
_CRITICAL_KP_MAX = {1: "1.18e5", 2: "4.52e4", 3: "2.36e4", 4: "1.44e4"}


#: A stiffness (1/s²) below which :func:`pd_loop_holds` counts an axis as holding no position: the
#: decay of its position mode per period, ``h·kp/kd`` (above 1e-12 from here, for ``h·kd < 1``),
#: would sink into the rounding of :func:`pd_spectral_radius` (~1e-15: kp 1e-12 with kd 91 reads
#: exactly 1, unstable).
NEGLIGIBLE_STIFFNESS = 1e-6


def pd_loop_holds(kp: float, kd: float, delay: int = 1) -> bool:
    """Whether ``ë = −kp·e − kd·ė`` decays stepped at 1 kHz with the command ``delay`` periods
    late: a damping alone (``kp`` below :data:`NEGLIGIBLE_STIFFNESS`: ``ė⁺ = ė − h·kd·ė₋d``) by
    ``h·kd <`` :func:`damping_eigenvalue_bound` ``(delay)``, else by :func:`pd_spectral_radius`
    ``< 1``."""
    if kp < NEGLIGIBLE_STIFFNESS:
        return CONTROL_PERIOD * kd < damping_eigenvalue_bound(delay)
    return pd_spectral_radius(kp, kd, CONTROL_PERIOD, delay) < 1.0


def _passing_kd(kp: float, delay: int) -> tuple[float, float] | None:
    """The range of ``kd`` (1/s, ends within 1 %) with which ``kp`` passes :func:`check_pd_gains`,
    or ``None`` when none does (a ``kp`` too stiff for the delay). It is one interval: too little
    ``kd`` rings, too much rings through the delay."""
    passing = [
        float(kd)
        for kd in np.geomspace(1e-3, 2.0 / CONTROL_PERIOD, 1400)
        if pd_loop_holds(kp, float(kd), delay)
        and pd_damping_ratio(kp, float(kd), delay=delay) >= MIN_DAMPING_RATIO
    ]
    return (passing[0], passing[-1]) if passing else None


def check_pd_gains(field: str, kp: FloatArray, kd: FloatArray, axes: Sequence[str], delay: int = 1) -> None:
    """:class:`ConfigError` naming the first axis whose gains fail :func:`pd_loop_holds` at 1 kHz
    with the command ``delay`` periods late (1: the delay every damping bound here allows by
    default; more with a robot's :attr:`RobotModel.command_delay`), or hold it with a damping ratio
    (:func:`pd_damping_ratio`) below :data:`MIN_DAMPING_RATIO`. An axis with ``kp`` 0 (below
    :data:`NEGLIGIBLE_STIFFNESS`) holds no position: its velocity follows ``ė⁺ = ė − h·kd·ė₋d``, a
    damping held to ``h·kd <`` :func:`damping_eigenvalue_bound` ``(delay)``. With ``kd`` 0 too it
    holds nothing (``ë = 0``: the axis keeps its velocity), which passes: a gain pair chosen to
    leave the feed-forward alone, e.g. a QP posture task kept only as an acceleration
    regulariser. (A ``kp`` from 1e-6 up with ``kd`` 0 is refused: it rings and grows.)"""
    for name, p, d in zip(axes, kp, kd, strict=True):
        when = f"{1e-3 / CONTROL_PERIOD:g} kHz with the command {describe_delay(delay)}"
        if pd_loop_holds(float(p), float(d), delay):
            ratio = pd_damping_ratio(float(p), float(d), delay=delay) if p >= NEGLIGIBLE_STIFFNESS else 1.0
            if ratio >= MIN_DAMPING_RATIO:
                continue
            passing = _passing_kd(float(p), delay)
            raise ConfigError(
                f"{field}: kp {float(p):g} 1/s², kd {float(d):g} 1/s on {name} leave the error ringing at "
                f"{when}: the loop's least damped mode has a damping ratio of {ratio:.3g}, below "
                f"{MIN_DAMPING_RATIO:g} (it barely settles); "
                + (
                    f"kd from {passing[0]:.3g} to {passing[1]:.3g} passes with this kp"
                    if passing is not None
                    else f"no kd passes with this kp: lower it (at critical damping, kd = 2·√kp, "
                    f"kp up to {_CRITICAL_KP_MAX.get(delay, 'a smaller value')} passes)"
                )
            )
        if float(p) < NEGLIGIBLE_STIFFNESS:
            raise ConfigError(
                f"{field}: kd {float(d):g} 1/s with kp {float(p):g} on {name} is too much damping at "
                f"{when}: h·kd = {CONTROL_PERIOD * float(d):.3g} >= {damping_eigenvalue_bound(delay):.3g} "
                "(the velocity error rings and grows)"
            )
        critical = _CRITICAL_KP_MAX.get(delay)
        raise ConfigError(
            f"{field}: kp {float(p):g} 1/s², kd {float(d):g} 1/s on {name} are unstable at {when} (the "
            f"error grows by {pd_spectral_radius(float(p), float(d), delay=delay):.3g} per period); "
            + ("kd = 0 leaves it undamped" if float(d) == 0.0 else "lower them")
            + (f" (at critical damping, kd = 2·√kp, kp up to {critical} passes)" if critical else "")
        )


class RobotModel:
    """A fixed-base serial arm of one-DoF revolute joints, loaded into Pinocchio.

    Attributes:
        model: the Pinocchio model (gravity ``(0, 0, -9.81)`` m/s² unless changed).
        data: a Pinocchio data buffer owned by this object (not thread-safe).
        joint_names: actuated joints, in Pinocchio's (kinematic-tree) order.
        n: number of joints (= ``model.nv``).
        continuous: ``True`` for joints that turn without end (no position limits).
        position_lower, position_upper: limits in rad (``∓inf`` on continuous joints).
        velocity_limit: |q̇| bound in rad/s (``inf`` where the description gives none).
        effort_limit: |τ| bound in N·m (``inf`` where the description gives none).
    """

    def __init__(self, model: pin.Model, *, source: str = "<model>") -> None:
        self.model = model
        self.data = model.createData()
        self.source = source
        #: s from a state to the first state showing the command that answers it (see
        #: :meth:`set_command_delay`); the damping and gain checks allow for it.
        self.command_delay = CONTROL_PERIOD
        names: list[str] = []
        continuous: list[bool] = []
        idx_q: list[int] = []
        two_slots: list[bool] = []  # stored as (cos q, sin q) rather than q
        for jid in range(1, model.njoints):
            joint = model.joints[jid]
            shortname = joint.shortname()
            if shortname in _REVOLUTE_UNBOUNDED:
                continuous.append(True)
            elif shortname in _REVOLUTE_BOUNDED:
                lo = float(model.lowerPositionLimit[joint.idx_q])
                hi = float(model.upperPositionLimit[joint.idx_q])
                # No limits: none given (±inf, or Pinocchio's largest double), or an empty range
                # (a URDF revolute joint whose <limit> leaves out lower and upper reads 0, 0).
                unlimited = (abs(lo) >= _NO_LIMIT and abs(hi) >= _NO_LIMIT) or lo == hi  # False with a NaN
                if not unlimited and not (abs(lo) < _NO_LIMIT and abs(hi) < _NO_LIMIT and lo < hi):
                    # Taken for unlimited, such a joint lost its limits in every check and its
                    # error wrapped through ±π (swapped limits: the torque pushed into the stop).
                    raise ModelError(
                        f"{source}: joint {model.names[jid]!r} has position limits [{lo:g}, {hi:g}] rad: "
                        "expected a lower limit below the upper one, both finite (a joint without "
                        "limits is 'continuous' in a URDF, a hinge without a range in an MJCF)"
                    )
                continuous.append(unlimited)
            else:
                raise ModelError(
                    f"{source}: joint {model.names[jid]!r} is a {shortname}; only one-DoF "
                    "revolute joints on a fixed base are supported"
                )
            names.append(model.names[jid])
            idx_q.append(joint.idx_q)
            two_slots.append(joint.nq == 2)
        if not names:
            raise ModelError(f"{source}: the model has no joints")
        self.joint_names: tuple[str, ...] = tuple(names)
        self.n: int = len(names)
        self.continuous = np.array(continuous, dtype=bool)
        idx = np.array(idx_q, dtype=np.intp)
        self._cont_idx = np.flatnonzero(self.continuous)
        # How Pinocchio stores each angle: as (cos q, sin q) for its unbounded revolute joints
        # (a URDF "continuous" joint), as q itself for the others, which include unbounded ones
        # (an MJCF hinge without a range is a plain revolute joint without limits).
        self._cs_idx = np.flatnonzero(two_slots)
        self._angle_idx = np.flatnonzero(~np.array(two_slots, dtype=bool))
        self._q_cos = idx[self._cs_idx]
        self._q_sin = idx[self._cs_idx] + 1
        self._q_angle = idx[self._angle_idx]
        self._q_pin = pin.neutral(model)
        # configuration() runs every control step: when each kind of Pinocchio slot is evenly
        # spaced (the Gen3's are), angles, cosines and sines go straight into views of _q_pin.
        slots = [_as_slice(i) for i in (self._q_angle, self._q_cos, self._q_sin)]
        self._q_pin_views: tuple[FloatArray, FloatArray, FloatArray] | None = (
            (self._q_pin[slots[0]], self._q_pin[slots[1]], self._q_pin[slots[2]])
            if all(isinstance(sl, slice) for sl in slots)
            else None
        )
        self._wrap_scale = np.where(self.continuous, 2.0 * np.pi, 0.0)

        lower = np.full(self.n, -np.inf)
        upper = np.full(self.n, np.inf)
        bounded = ~self.continuous
        lower[bounded] = model.lowerPositionLimit[idx[bounded]]
        upper[bounded] = model.upperPositionLimit[idx[bounded]]
        self.position_lower: FloatArray = lower
        self.position_upper: FloatArray = upper
        self.velocity_limit: FloatArray = self._limit_or_inf(np.array(model.velocityLimit))
        self.effort_limit: FloatArray = self._limit_or_inf(np.array(model.effortLimit))
        self._frame_names: tuple[str, ...] = tuple(f.name for f in model.frames)
        self._damping_samples: tuple[FloatArray, FloatArray] | None = None  # (configurations, M⁻¹)
        self._check_inertia()

    def _check_inertia(self) -> None:
        """:class:`ModelError` where the joint-space inertia ``M(q)`` is not finite, or singular
        (smallest eigenvalue at most :data:`_SINGULAR_INERTIA` times its largest) at one of 8
        sampled configurations: a joint whose links, and all after it, carry no inertia about
        its axis (a URDF link without ``<inertial>``). Forward dynamics, the damping checks and
        the constrained solve all need ``M⁻¹``; on such a model numpy's eigensolver failed at
        start with no joint named, or with no damping checked a brake ran on a singular ``M``."""
        for q in sample_configurations(self, 8):
            M = self.mass_matrix(q)
            if not np.isfinite(M).all():
                raise ModelError(
                    f"{self.source}: the joint-space inertia is not finite at q = {q.tolist()} rad"
                )
            eigenvalues, vectors = np.linalg.eigh(M)
            if eigenvalues[0] <= _SINGULAR_INERTIA * eigenvalues[-1]:
                joint = self.joint_names[int(np.argmax(np.abs(vectors[:, 0])))]
                raise ModelError(
                    f"{self.source}: {joint} moves almost no inertia at q = {np.round(q, 3).tolist()} rad "
                    f"(the joint-space inertia's smallest eigenvalue {eigenvalues[0]:.3g} kg·m², its "
                    f"largest {eigenvalues[-1]:.3g}): does a link after it lack its <inertial>?"
                )

    @staticmethod
    def _limit_or_inf(values: FloatArray) -> FloatArray:
        out = values.astype(np.float64).copy()
        out[~(np.abs(out) < _NO_LIMIT) | (out <= 0.0)] = np.inf
        return out

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_urdf_string(cls, urdf: str) -> RobotModel:
        """Build from a URDF document (e.g. the ``robot_description`` parameter)."""
        if not isinstance(urdf, str) or "<robot" not in urdf:
            raise ModelError("robot_description: expected a URDF document containing <robot>")
        try:
            model = pin.buildModelFromXML(urdf)
        except (RuntimeError, ValueError) as exc:
            raise ModelError(f"robot_description: cannot parse URDF: {exc}") from None
        return cls(model, source="robot_description")

    @classmethod
    def from_urdf_file(cls, path: str | Path) -> RobotModel:
        """Build from a URDF file."""
        path = Path(path)
        if not path.is_file():
            raise ModelError(f"URDF file not found: {str(path)!r}")
        try:
            model = pin.buildModelFromUrdf(str(path))
        except (RuntimeError, ValueError) as exc:
            raise ModelError(f"{path}: cannot parse URDF: {exc}") from None
        return cls(model, source=str(path))

    @classmethod
    def from_mjcf_file(cls, path: str | Path) -> RobotModel:
        """Build from an MJCF file (hinges without a range count as continuous)."""
        path = Path(path)
        if not path.is_file():
            raise ModelError(f"MJCF file not found: {str(path)!r}")
        try:
            model = pin.buildModelFromMJCF(str(path))
        except (RuntimeError, ValueError) as exc:
            raise ModelError(f"{path}: cannot parse MJCF: {exc}") from None
        return cls(model, source=str(path))

    @classmethod
    def from_file(cls, path: str | Path) -> RobotModel:
        """Build from a ``.urdf`` or ``.xml`` (MJCF) file, chosen by extension."""
        suffix = Path(path).suffix.lower()
        if suffix == ".urdf":
            return cls.from_urdf_file(path)
        if suffix == ".xml":
            return cls.from_mjcf_file(path)
        raise ModelError(f"{path}: expected a .urdf or an MJCF .xml file")

    # ------------------------------------------------------------ configuration
    def check_state(self, q: ArrayLike, v: ArrayLike) -> tuple[FloatArray, FloatArray]:
        """Validate a joint state; raise :class:`StateError` on wrong length or non-finite.

        Well-formed float64 arrays are returned as they are (this runs every control step);
        anything else goes through the full conversion, whose error says what was wrong.
        """
        if (
            isinstance(q, np.ndarray)
            and isinstance(v, np.ndarray)
            and q.dtype == np.float64
            and v.dtype == np.float64
            and q.shape == v.shape == (self.n,)
            and all_finite(q)
            and all_finite(v)
        ):
            return q, v
        return (
            as_vector("joint positions", q, self.n, error=StateError),
            as_vector("joint velocities", v, self.n, error=StateError),
        )

    def configuration(self, q: FloatArray) -> FloatArray:
        """Pinocchio configuration (length ``nq``) for joint angles ``q`` (length ``n``).

        Returns an internal buffer, overwritten by the next call.
        """
        out = self._q_pin
        qc = q[self._cs_idx]
        if self._q_pin_views is not None:
            angle, cos, sin = self._q_pin_views
            angle[:] = q[self._angle_idx]
            np.cos(qc, cos)
            np.sin(qc, sin)
        else:
            out[self._q_angle] = q[self._angle_idx]
            out[self._q_cos] = np.cos(qc)
            out[self._q_sin] = np.sin(qc)
        return out

    def angles(self, q_pin: FloatArray) -> FloatArray:
        """Joint angles (rad) from a Pinocchio configuration (inverse of :meth:`configuration`)."""
        q = np.empty(self.n)
        q[self._angle_idx] = q_pin[self._q_angle]
        q[self._cs_idx] = np.arctan2(q_pin[self._q_sin], q_pin[self._q_cos])
        return q

    def wrap(self, q: FloatArray) -> FloatArray:
        """Copy of ``q`` with continuous-joint angles wrapped into ``[-pi, pi)``."""
        out = np.array(q, dtype=np.float64)
        out[self._cont_idx] = wrap_angle(out[self._cont_idx])
        return out

    def difference(self, q_to: FloatArray, q_from: FloatArray, out: FloatArray | None = None) -> FloatArray:
        """``q_to ⊖ q_from`` (rad): plain difference, the short way round on continuous joints.

        ``d = q_to − q_from``, then ``d −= 2π·rint(d / 2π)`` on continuous joints (the scale is 0
        on bounded ones). Written into ``out`` when given (same shape), else into a new array.
        """
        d = np.subtract(q_to, q_from, out=out)
        # np.rint rounds half to even like np.round, without np.round's ~0.6 µs Python wrapper.
        d -= self._wrap_scale * np.rint(d * (0.5 / np.pi))
        return d

    # ------------------------------------------------------------------- frames
    def frame_id(self, name: str | int) -> int:
        """Index of frame ``name`` (or ``name`` itself when it is a valid index);
        :class:`FrameNotFoundError` lists the valid names."""
        if isinstance(name, int | np.integer) and not isinstance(name, bool):
            # Pinocchio does not check an index: out of range it reads past its frame list.
            if not 0 <= name < self.model.nframes:
                raise FrameNotFoundError(
                    f"frame index {name} is not in {self.source}, which has {self.model.nframes} "
                    f"frames; valid frames are {list(self._frame_names)}"
                )
            return int(name)
        if not isinstance(name, str) or not self.model.existFrame(name):
            raise FrameNotFoundError(
                f"frame {name!r} is not in {self.source}; valid frames are {list(self._frame_names)}"
            )
        return int(self.model.getFrameId(name))

    def dofs_moving(self, frame: str | int) -> int:
        """Number of joint DoFs between the root and ``frame``: the most rows of its Jacobian that
        can be independent (e.g. 1 for the first link of the Gen3, 7 for its tool)."""
        return int(self.moving_columns(int(self.model.frames[self.frame_id(frame)].parentJoint)).sum())

    def moving_columns(self, joint: int) -> FloatArray:
        """1 for each velocity column (length ``nv``) of a joint between the root and Pinocchio joint
        ``joint`` (that joint included), 0 elsewhere: the columns of the world Jacobian of the
        chain (``data.J``) that move the body of ``joint``."""
        model = self.model
        mask = np.zeros(model.nv)
        for j in list(model.supports[joint])[1:]:  # not the universe
            first = model.joints[j].idx_v
            mask[first : first + model.joints[j].nv] = 1.0
        return mask

    def joint_index(self, names: Sequence[str]) -> np.ndarray:
        """Indices (into :attr:`joint_names`) of ``names``; error lists the valid names."""
        missing = [n for n in names if n not in self.joint_names]
        if missing:
            raise StateError(f"unknown joint name(s) {missing}; valid joints are {list(self.joint_names)}")
        return np.array([self.joint_names.index(n) for n in names], dtype=np.intp)

    # ----------------------------------------------------------------- dynamics
    def rnea(self, q: FloatArray, v: FloatArray, a: FloatArray) -> FloatArray:
        """Inverse dynamics ``tau = M(q)·a + C(q, v)·v + g(q)`` (N·m), no external forces."""
        return np.array(pin.rnea(self.model, self.data, self.configuration(q), v, a))

    def gravity(self, q: FloatArray) -> FloatArray:
        """Generalised gravity ``g(q)`` (N·m): the torque that holds the arm still."""
        return np.array(pin.computeGeneralizedGravity(self.model, self.data, self.configuration(q)))

    def nonlinear_effects(self, q: FloatArray, v: FloatArray) -> FloatArray:
        """``c(q, v) = C(q, v)·v + g(q)`` (N·m)."""
        return np.array(pin.nonLinearEffects(self.model, self.data, self.configuration(q), v))

    def mass_matrix(self, q: FloatArray) -> FloatArray:
        """Joint-space inertia ``M(q)`` (kg·m²), symmetric ``n × n``."""
        m = pin.crba(self.model, self.data, self.configuration(q))
        return np.triu(m) + np.triu(m, 1).T

    def inverse_mass_matrices(self, configurations: FloatArray) -> FloatArray:
        """``M(q)⁻¹`` (1/(kg·m²)) for each row of ``configurations`` (``m × n``): shape ``m × n × n``."""
        return self._inverse_mass_rows(configuration_rows("configurations", configurations, self.n))

    def _inverse_mass_rows(self, qs: FloatArray) -> FloatArray:
        """:meth:`inverse_mass_matrices` of checked configurations ``qs`` (``m × n``)."""
        out = np.empty((len(qs), self.n, self.n))
        for k, q in enumerate(qs):
            out[k] = pin.computeMinverse(self.model, self.data, self.configuration(q))
        # Pinocchio's C++ fills the upper triangle only; the 4.1 bindings return it symmetric,
        # the mirror is kept for versions that do not.
        return np.triu(out) + np.swapaxes(np.triu(out, 1), 1, 2)

    def _damping_samples_or_given(self, configurations: ArrayLike | None) -> tuple[FloatArray, FloatArray]:
        """The configurations and their ``M⁻¹``: the default set (computed once, then cached) when
        ``configurations`` is None."""
        if configurations is not None:
            qs = configuration_rows("configurations", configurations, self.n)
            return qs, self._inverse_mass_rows(qs)
        if self._damping_samples is None:
            qs = damping_configurations(self.position_lower, self.position_upper)
            self._damping_samples = (qs, self._inverse_mass_rows(qs))
        return self._damping_samples

    def damping_eigenvalue(
        self, kd: ArrayLike, period: float = CONTROL_PERIOD, configurations: ArrayLike | None = None
    ) -> float:
        """Largest eigenvalue of ``h·M(q)⁻¹·K_d`` over the joint space.

        ``K_d = diag(kd)`` (N·m·s/rad; a scalar applies to every joint), ``h = period`` (s). The
        configurations are ``configurations`` (``m × n`` rad) when given, else those of
        :func:`damping_configurations` (zero pose, corner grid, :data:`DAMPING_SAMPLES` seeded
        random ones within the joint limits, ``±π`` on continuous joints), whose ``M⁻¹`` is computed
        on the first call (10–15 ms for the Gen3's 517, most of it Pinocchio's first call) and
        cached; later calls take ~1 ms. See :meth:`check_damping` for what the value means.
        """
        kd_vec = as_vector("damping", kd, self.n, broadcast_scalar=True, min_value=0.0)
        m_inv = self._damping_samples_or_given(configurations)[1]
        return float(damping_eigenvalues(m_inv, kd_vec, as_positive_float("period", period)).max())

    def set_command_delay(self, seconds: float) -> None:
        """Set :attr:`command_delay` (s): from a state to the first state that shows the command
        answering it. 1 ms (the default) in the simulator, which applies a command over the step
        after the state it answers; 3–5 ms reported for the real Gen3 (through its base: 5).
        Closed-loop dampings and PD gains are checked against it from then on
        (:attr:`delay_periods`); set it before creating a controller.

        Raises:
            ConfigError: not a duration in ``[CONTROL_PERIOD,`` :data:`MAX_COMMAND_DELAY` ``]``.
        """
        self.command_delay = check_command_delay("command_delay", seconds)

    @property
    def delay_periods(self) -> int:
        """:func:`delay_periods` of :attr:`command_delay`: 1 for the simulator, 4 for 5 ms."""
        return delay_periods(self.command_delay)

    def check_damping(self, field: str, kd: ArrayLike, *, open_loop: bool = False) -> float:
        """Refuse a damping ``K_d`` that the explicit per-period update would make unstable.

        A torque ``g(q) − K_d·q̇`` (or ``−K_d·q̇``) computed from the state and held for one period
        ``h`` (:data:`CONTROL_PERIOD`, the Gen3's 1 kHz loop) gives
        ``q̇⁺ = (I − h·M(q)⁻¹·K_d)·q̇``. With ``λ`` the largest eigenvalue of ``h·M⁻¹·K_d``
        (:meth:`damping_eigenvalue`):

        * ``λ < 1``: every mode decays, on time without flipping sign, one period late by
          ``√λ`` per period and oscillating slowly above ``λ = ¼`` (the Gen3's defaults: 0.975);
        * ``λ >= 1``: :class:`ConfigError` naming the value, the worst joint and the fix. Between
          1 and 2 the mode still decays without delay, ringing, but one period of delay makes it
          grow (:data:`DAMPING_EIGENVALUE_MAX`).

        A scalar ``K_d = 1`` gives ``λ ≈ 3.54`` on the Gen3: its wrist (~7e-4 kg·m²) needs ~10×
        less damping than its shoulder.

        A damping fed back from the measured state is late by :attr:`command_delay`: with
        :attr:`delay_periods` ``d > 1`` the bound is :func:`damping_eigenvalue_bound` ``(d)``
        (0.347 for the Gen3's 5 ms). ``open_loop`` keeps the one-period bound: a damping the caller
        applies to its own prediction (the safe brake, :mod:`.braking`), which no measurement late
        or not feeds.

        Args:
            field: parameter name for the message (e.g. ``"gravity_comp.damping"``).
            kd: N·m·s/rad, ``n`` values ``>= 0`` or one scalar for every joint.
            open_loop: the damping acts on a prediction, not on measurements.

        Returns:
            ``λ`` (0 for no damping).
        """
        kd_vec = as_vector(field, kd, self.n, broadcast_scalar=True, min_value=0.0)
        if not kd_vec.any():
            return 0.0
        qs, m_inv = self._damping_samples_or_given(None)
        delay = 1 if open_loop else self.delay_periods
        return check_damping_stability(
            field, kd_vec, CONTROL_PERIOD, m_inv, qs, self.joint_names, delay, closed_loop=not open_loop
        )

    def check_frame_damping(
        self,
        field: str,
        kd: ArrayLike,
        frame: str | int,
        twist_damping: ArrayLike,
    ) -> float:
        """:meth:`check_damping` for a joint damping ``K_d`` plus a damping ``B`` of a frame's twist.

        A wrench ``−B∘ẋ`` on ``frame`` (``ẋ = J·q̇``, ``LOCAL_WORLD_ALIGNED``, ``B`` per axis:
        N·s/m, N·m·s/rad) is the joint torque ``−Jᵀ·B·J·q̇``: held for one period it adds to
        ``K_d``, and the largest eigenvalue of ``h·M⁻¹·(K_d + Jᵀ·B·J)`` over the damping
        configurations must stay below the bound :meth:`check_damping` uses (1 for the simulator;
        :func:`damping_eigenvalue_bound` of :attr:`delay_periods` with a longer ``command_delay``).
        With ``B = 0`` this is :meth:`check_damping`.

        Returns:
            That eigenvalue. Raises :class:`ConfigError` when it is ``>= 0.98`` times that bound:
            the damping configurations were chosen for ``K_d`` alone, and with ``Jᵀ·B·J`` the worst
            pose can lie between them (~1 % higher: an optimiser reaches 1.0101 where they give
            1.0000).
        """
        kd_vec = as_vector(field, kd, self.n, broadcast_scalar=True, min_value=0.0)
        b = as_vector(field, twist_damping, 6, broadcast_scalar=True, min_value=0.0)
        if not b.any():
            return self.check_damping(field, kd_vec)
        h = CONTROL_PERIOD
        fid = self.frame_id(frame)
        qs, m_inv = self._damping_samples_or_given(None)
        damping = np.empty((len(qs), self.n, self.n))
        for k, q in enumerate(qs):
            J = pin.computeFrameJacobian(
                self.model, self.data, self.configuration(q), fid, pin.LOCAL_WORLD_ALIGNED
            )
            damping[k] = (J.T * b) @ J + np.diag(kd_vec)
        # M⁻¹·D is similar to the symmetric Lᵀ·D·L for M⁻¹ = L·Lᵀ.
        L = np.linalg.cholesky(m_inv)
        eigenvalues = h * np.linalg.eigvalsh(np.swapaxes(L, 1, 2) @ damping @ L)[:, -1]
        worst = int(np.argmax(eigenvalues))
        largest = float(eigenvalues[worst])
        delay = self.delay_periods
        bound = damping_eigenvalue_bound(delay) * _FRAME_DAMPING_MARGIN
        if largest >= bound:
            raise ConfigError(
                f"{field}: joint damping {kd_vec.tolist()} N·m·s/rad with {b.tolist()} on the twist of "
                f"{self.model.frames[fid].name!r} is too much to apply once per {h * 1e3:g} ms (unstable "
                f"with the command {describe_delay(delay)}): "
                f"h·M⁻¹·(K_d + Jᵀ·B·J) reaches eigenvalue {largest:.3g} >= {bound:g} "
                f"(at q = {np.round(qs[worst], 2).tolist()} rad); lower the twist damping on the axes the "
                "wrist turns"
            )
        return largest

    def frame_placement(self, q: FloatArray, frame: str | int) -> pin.SE3:
        """Pose of ``frame`` in the base frame (forward kinematics)."""
        fid = self.frame_id(frame)
        pin.framesForwardKinematics(self.model, self.data, self.configuration(q))
        return self.data.oMf[fid].copy()

    def frame_jacobian(
        self,
        q: FloatArray,
        frame: str | int,
        reference: pin.ReferenceFrame = pin.LOCAL_WORLD_ALIGNED,
    ) -> FloatArray:
        """Frame Jacobian ``J`` (6 × n, linear rows first) with ``[ẋ; ω] = J·q̇``."""
        fid = self.frame_id(frame)
        return np.array(
            pin.computeFrameJacobian(self.model, self.data, self.configuration(q), fid, reference)
        )

    def frame_rows_rank(self, frame: str | int, rows: slice | NDArray[np.intp], samples: FloatArray) -> int:
        """The largest rank of rows ``rows`` of ``frame``'s :meth:`frame_jacobian` over the
        configurations ``samples`` (rad, one per row): 0 when no joint ever moves the frame along
        them, ``len(rows)`` when the joints can move it along all of them independently somewhere.
        Singular values up to :data:`ZERO_ROW_TOLERANCE` count as 0."""
        rank = 0
        for q in samples:
            block = self.frame_jacobian(q, frame)[rows]
            rank = max(rank, int(np.linalg.matrix_rank(block, tol=ZERO_ROW_TOLERANCE)))
            if rank == block.shape[0]:
                break
        return rank

    def frames_reaching_rank(
        self, rows: slice | NDArray[np.intp], samples: FloatArray, rank: int
    ) -> list[str]:
        """Names of the frames whose rows ``rows`` reach rank ``rank`` somewhere in ``samples``
        (:meth:`frame_rows_rank`): what a start-up check's error offers instead of a refused frame."""
        return [f.name for f in self.model.frames if self.frame_rows_rank(f.name, rows, samples) >= rank]

    def still_rows(self, frame: str | int, rows: NDArray[np.intp], samples: FloatArray) -> list[int]:
        """The rows of ``rows`` (indices into the 6 of :meth:`frame_jacobian`) along which no joint
        moves ``frame`` at any of ``samples``: each one's Jacobian row is 0 there (a rank of 0,
        :meth:`frame_rows_rank`), whatever the other rows do."""
        return [int(r) for r in rows if self.frame_rows_rank(frame, np.array([r]), samples) == 0]

    def frames_moving_each_row(self, rows: NDArray[np.intp], samples: FloatArray) -> list[str]:
        """Names of the frames that some joint moves along each of ``rows`` somewhere in
        ``samples`` (none of them :meth:`still_rows`): what a task's refusal offers instead."""
        return [f.name for f in self.model.frames if not self.still_rows(f.name, rows, samples)]

    def frame_bias_acceleration(self, q: FloatArray, v: FloatArray, frame: str | int) -> FloatArray:
        """Drift ``J̇·q̇`` (6,) of the frame's classical acceleration, ``[ẍ; ω̇] = J·q̈ + J̇·q̇``, with
        ``J`` the :meth:`frame_jacobian` in ``LOCAL_WORLD_ALIGNED`` (origin velocity and angular
        velocity in the base frame's axes).

        The linear part is the classical (not spatial) acceleration of the frame origin,
        so a point moving on a circle has a centripetal term here. Only the world-aligned
        reference is offered: in ``LOCAL`` (axes turning with the frame) or ``WORLD`` (linear part
        the velocity of the body point at the base origin), Pinocchio's classical acceleration is
        not the time derivative of that reference's ``J·q̇``, so it is not that Jacobian's drift.
        """
        fid = self.frame_id(frame)
        pin.forwardKinematics(self.model, self.data, self.configuration(q), v, np.zeros(self.n))
        acc = pin.getFrameClassicalAcceleration(self.model, self.data, fid, pin.LOCAL_WORLD_ALIGNED)
        return np.array(acc.vector)
