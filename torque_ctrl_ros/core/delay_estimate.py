"""The command-to-measurement delay, read from the efforts the joint states report.

The start-up checks and the delay prediction (:mod:`.prediction`) take ``command_delay`` as
given: 1 ms in the simulator, about 5 ms through the Gen3's base and about 3 ms bypassing it. A
wrong value costs: predicting 5 ms on a 2 ms path tracked a trajectory worse than predicting
nothing (docs/hardware.md, "A command_delay off the arm's"). A driver that reports the torque
applied (or measured) in each state's ``effort`` shows the delay: the effort of the state in
period ``i`` holds the command that answered the state ``D`` periods before it,
``e_i ≈ τ_{i−D}`` with ``D = command_delay / h`` (this package's simulator: exactly).

:class:`DelayEstimator` keeps the efforts received and the commands sent over the last
``window`` periods, each by the period of the stamp of its state (``i = round(stamp / h)``), and
:meth:`DelayEstimator.estimate` correlates them at each candidate delay ``D = 1 … max_periods``::

    c_D = Σ_k cov(e_k,i, τ_k,i−D) / √(Σ_k var(e_k,i) · Σ_k var(τ_k,i−D))
          (k: joints; cov and var over the periods i of the window where both are known)

Each joint's mean is taken out: friction, a sensor's offset or the gravity a driver adds to what
it reports drop out. The estimate is the ``D`` of the largest ``c_D``, given with that
correlation, and only where the commands varied by at least :data:`MIN_SPREAD` N·m (an arm held
still shows no delay) and the correlation reaches :data:`MIN_CORRELATION`. A slow, smooth motion
tells neighbouring delays apart by little (a 0.5 Hz sine shifted by one period still correlates
to ~1 − 1e-5), so noise on the efforts can move the estimate by a period there. What ``effort``
holds is the driver's choice: a commanded torque echoed back shows the driver's delay, a torque
sensor's reading the arm's (with its own filter's lag); a driver reporting no effort leaves the
estimate unknown.

The same correlations tell when the efforts follow *none* of the commands
(:meth:`DelayEstimator.read`, :class:`Unfollowed`): commands that varied by at least
:data:`UNFOLLOWED_SPREAD` N·m while the efforts, varying too, correlate with them by less than
:data:`UNFOLLOWED_CORRELATION` at every delay. A driver publishing states while its actuators are
not in torque mode looks like that (the arm held by its own position control, the efforts its
sensors' reading of that), and the torque the controller has wound up meanwhile would be applied
at once when torque mode comes on (docs/hardware.md, "Start order"). It cannot be told where the
commands hardly vary (gravity compensation at rest: their torque is what the arm needs either
way), where the efforts are constant (a driver sending zeros for "no sensor") or absent, nor
where both follow a motion the driver makes itself (its position control moving the arm: the
efforts' gravity and the commands holding against it change together, a delay of 1 ms read at
a correlation of 0.996; a review). Efforts of the opposite sign to the commands (a driver's own
convention) correlate negatively: they count as following, and show no delay either.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .robot import CONTROL_PERIOD
from .validation import FloatArray

#: Least standard deviation of the commands over the window (N·m, the joints' pooled) for an
#: estimate: below it the commands hardly move and their variation is rounding and noise.
MIN_SPREAD = 1e-3
#: Least correlation for an estimate (1: the efforts are the commands, shifted).
MIN_CORRELATION = 0.5
#: Least periods with an effort and the command before it for an estimate.
MIN_SAMPLES = 100
#: Least standard deviation of the commands over the window (N·m, pooled over the joints) for
#: :class:`Unfollowed`: well above a joint torque sensor's noise, so that efforts that do follow
#: the commands correlate with them clearly.
UNFOLLOWED_SPREAD = 0.5
#: Largest correlation, at every delay, of efforts that follow none of the commands
#: (:class:`Unfollowed`); from it to :data:`MIN_CORRELATION` nothing is said either way.
UNFOLLOWED_CORRELATION = 0.2

_NONE = int(np.iinfo(np.int64).min)  # no period: no stamp lies 2.9e8 years before 1970


@dataclass(frozen=True)
class DelayEstimate:
    """The delay read from a window of states.

    Attributes:
        periods: ``D``, the periods from a state to the first state whose effort shows the
            command answering it.
        delay: ``D·h`` (s), comparable with ``command_delay``.
        correlation: ``c_D``, in ``[-1, 1]``.
        samples: the periods of the window with an effort and the command ``D`` periods
            before it.
    """

    periods: int
    delay: float
    correlation: float
    samples: int


@dataclass(frozen=True)
class Unfollowed:
    """Efforts that followed none of the commands over the window (see the module docstring).

    Attributes:
        spread: the commands' standard deviation (N·m, pooled over the joints).
        correlation: the largest correlation in size of the efforts with the commands at any delay.
        samples: the periods with an effort and the command one period before it.
    """

    spread: float
    correlation: float
    samples: int


class DelayEstimator:
    """Efforts against earlier commands over a window of periods (see the module docstring).

    Args:
        n: joints.
        window: periods kept (1 s at 1 kHz by default).
        max_periods: the longest delay tried, in periods.
        period: ``h`` (s).

    Use, per state: :meth:`add` with its stamp (ns), its effort and the command answering it
    (either ``None`` when there is none): two rows copied. :meth:`estimate` whenever a figure is
    wanted: products over the whole window (for /diagnostics, not for every state).
    """

    def __init__(
        self, n: int, window: int = 1000, max_periods: int = 20, period: float = CONTROL_PERIOD
    ) -> None:
        if not 1 <= max_periods < window:
            raise ValueError(
                f"max_periods: expected 1 <= max_periods < window ({window}), got {max_periods!r}"
            )
        self.n = n
        self.window = window
        self.max_periods = max_periods
        self.period = period
        self._period_ns = round(period * 1e9)
        self._effort = np.zeros((window, n))
        self._command = np.zeros((window, n))
        # The period each slot holds (_NONE: none yet): a slot counts only for the period it holds.
        self._effort_at = np.full(window, _NONE, dtype=np.int64)
        self._command_at = np.full(window, _NONE, dtype=np.int64)
        self._newest = _NONE  # the newest period with an effort
        self._ones = np.ones(n)

    def add(self, stamp_ns: int, effort: FloatArray | None, command: FloatArray | None) -> None:
        """The state stamped ``stamp_ns`` reported ``effort`` (N·m, controller order; ``None``:
        none) and was answered with ``command`` (N·m; ``None``: no command went out)."""
        i = (stamp_ns + self._period_ns // 2) // self._period_ns
        slot = i % self.window
        if command is not None:
            self._command[slot] = command
            self._command_at[slot] = i
        if effort is not None:
            self._effort[slot] = effort
            self._effort_at[slot] = i
            if i > self._newest:
                self._newest = i

    def reset(self) -> None:
        """Forget everything (a clock gone back: the periods start over)."""
        self._effort_at.fill(_NONE)
        self._command_at.fill(_NONE)
        self._newest = _NONE

    def _rows(
        self, values: FloatArray, at: np.ndarray, first: int, count: int
    ) -> tuple[FloatArray, FloatArray]:
        """The ``count`` periods from ``first`` on (``count × n``), zero where not held (or not
        finite); and 1.0 / 0.0 for held or not."""
        start = first % self.window
        end = start + count
        if end <= self.window:
            rows, stored = values[start:end].copy(), at[start:end]
        else:  # the periods wrap around the ring
            end -= self.window
            rows = np.concatenate((values[start:], values[:end]))
            stored = np.concatenate((at[start:], at[:end]))
        with np.errstate(all="ignore"):  # a row sum is not finite where a value is not (or is huge)
            held = (stored == np.arange(first, first + count)) & np.isfinite(rows.dot(self._ones))
        rows[~held] = 0.0
        return rows, held.astype(np.float64)

    def _cross(self, e: FloatArray, c: FloatArray, span: int) -> FloatArray:
        """``Σ_k Σ_p e_k[p]·c_k[p + lags − D]`` for D = 1 … lags, in one correlation: each joint's
        series laid end to end, ``lags`` zeros between the efforts' so that no product spans two
        joints (rows not held are zero already)."""
        lags, n = self.max_periods, self.n
        block = span + lags
        commands = np.ascontiguousarray(c.T).ravel()
        efforts = np.zeros(n * block)
        efforts.reshape(n, block)[:, :span] = e.T
        # np.correlate(a, v, "valid")[r] = Σ_i a[i + r]·v[i]: r = lags − D.
        return np.correlate(commands, efforts[: n * block - lags], "valid")[lags - 1 :: -1]

    def estimate(self) -> DelayEstimate | None:
        """The delay over the window, or ``None`` where it cannot be read (fewer than
        :data:`MIN_SAMPLES` periods with both known, commands spread less than
        :data:`MIN_SPREAD`, no delay correlating by :data:`MIN_CORRELATION`): 0.2–0.4 ms at the
        defaults on the development VM, some sixty numpy calls."""
        return self.read()[0]

    def read(self) -> tuple[DelayEstimate | None, Unfollowed | None]:
        """:meth:`estimate`, and :class:`Unfollowed` where the efforts followed none of the commands
        (else ``None``), from one set of correlations."""
        if self._newest == _NONE:
            return None, None
        lags, n = self.max_periods, self.n
        span = self.window - lags  # the efforts' periods whose commands stay in the window
        first = self._newest - span + 1
        # Efforts e[p] (period first + p) and commands c[q] (period first − lags + q): the
        # command D periods before effort p is c[p + lags − D].
        e, he = self._rows(self._effort, self._effort_at, first, span)
        c, hc = self._rows(self._command, self._command_at, first - lags, span + lags)
        # Row D − 1: whether the command D periods before each effort is held (D = 1 … lags),
        # and whether the effort D periods after each command is.
        held = np.empty((lags, span))
        after = np.zeros((lags, span + lags))
        for d in range(1, lags + 1):
            held[d - 1] = hc[lags - d : lags - d + span]
            after[d - 1, lags - d : lags - d + span] = he
        with np.errstate(all="ignore"):  # efforts of 1e300 overflow: not finite, not usable
            count = held.dot(he)
            se = held.dot(e)  # per delay and joint: Σe, Στ over the periods with both
            st = after.dot(c)
            see = held.dot(np.einsum("pk,pk->p", e, e))  # summed over the joints: Σe², Στ², Σe·τ
            stt = after.dot(np.einsum("qk,qk->q", c, c))
            set_ = self._cross(e, c, span)
            m = np.maximum(count, 1.0)
            var_t = stt - (st * st).sum(axis=1) / m
            var_e = see - (se * se).sum(axis=1) / m
            cov = set_ - (se * st).sum(axis=1) / m
            correlation = cov / np.sqrt(var_e * var_t)
        enough = (count >= MIN_SAMPLES) & (var_e > 0.0) & np.isfinite(correlation)
        usable = enough & (var_t >= count * n * MIN_SPREAD**2)
        if not usable.any():
            return None, None
        unfollowed = None
        if bool(np.all(enough & (var_t >= count * n * UNFOLLOWED_SPREAD**2))):
            # In size: efforts that mirror the commands (a sign convention of its own) follow them.
            best = float(np.abs(correlation).max())
            if best < UNFOLLOWED_CORRELATION:
                spread = float(np.sqrt(var_t[0] / (count[0] * n)))
                unfollowed = Unfollowed(spread, best, int(count[0]))
        correlation = np.where(usable, correlation, -np.inf)
        row = int(np.argmax(correlation))
        if correlation[row] < MIN_CORRELATION:
            return None, unfollowed
        found = DelayEstimate(row + 1, (row + 1) * self.period, float(correlation[row]), int(count[row]))
        return found, unfollowed


__all__ = [
    "MIN_CORRELATION",
    "MIN_SAMPLES",
    "MIN_SPREAD",
    "UNFOLLOWED_CORRELATION",
    "UNFOLLOWED_SPREAD",
    "DelayEstimate",
    "DelayEstimator",
    "Unfollowed",
]
