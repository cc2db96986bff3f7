"""The safe command while no joint state can be trusted: brake by the model's prediction.

When the controller node's watchdog refuses the joint states (stale, non-finite, implausible)
or the controller fails on one, the node keeps sending a safe command for up to
``watchdog.fallback_duration`` before it stops. The last trustworthy information is the last
good state ``(q₀, q̇₀)``. Repeating ``g(q₀) − K_d·q̇₀`` is no damping: the term does not follow
the arm, so once it has stopped a joint it keeps pushing that joint the other way (in the
simulator it spins the last wrist joint far past its limit).

:class:`SafeBrake` sends instead what damping feedback would send if the arm moved as the model
predicts under the commands actually sent. From ``(q̂, q̂̇) = (q₀, q̇₀)`` when the first safe
command goes out, each command is::

    τ = sat(g(q̂) − K_d·q̂̇)                                   (N·m, clipped to the effort limits)

and between two commands the prediction runs for the whole periods ``h`` between them with
that ``τ`` held, as the driver holds it::

    q̈ = M(q̂)⁻¹·(τ − C(q̂, q̂̇)·q̂̇ − g(q̂))                      (forward dynamics, ABA)
    q̂̇ ← q̂̇ + h·q̈,   q̂ ← q̂ + h·q̂̇                            (semi-implicit Euler, per period)

At 1 kHz that is one period per command; a state lost (two periods under one command) or a
late one advances the prediction by what the arm really went through. Held for ``m`` periods,
``K_d`` changes a mode's velocity by the factor ``1 − m·λ`` (``λ`` an eigenvalue of
``h·M⁻¹·K_d``, below 1 by :meth:`RobotModel.check_damping`), which leaves ``(−1, 1)`` once
``m·λ ≥ 2``. How long a command will be held is only known afterwards, so once a gap of
``m > 2`` periods has been seen in the window the commands damp with ``K_d·2/m``, ``m`` the
longest gap so far: scaled by the gap just before each command instead, a command after a
short gap can be held for a long one. The scaling is for the largest ``λ`` over the workspace,
so it brakes more slowly than needed where ``λ`` is smaller (at home).

The first command has no gap to go by. When it answers a refused state, the stream itself is
in doubt and the next state may not come: it damps with ``K_d·2/``:data:`FIRST_HOLD_PERIODS`,
safe held that long (the simulator's command timeout; a driver's is a few periods). Held 1 ms,
as at 1 kHz, that costs one period of damping; with ``K_d`` instead, a first command held tens
of ms spins the wrist past its velocity limit. When it answers a good state the controller
failed on, the stream is alive and the command is restarted from each such state: damped for
the stream's period once it is known (before, as after a refused state), ``K_d`` at 1 kHz.
Beyond that, every damping bound here is for one state per 1 ms; on a stream of one state
every ``m`` ms each damping of this package is ``m`` times closer to its bound, this one
included. (The MuJoCo runs behind these choices: docs/controllers.md, "Measurements behind the
core's bounds and defaults".)

A gap longer than the command timeout (:data:`FIRST_HOLD_PERIODS`, or 1.5 of the stream's period
where that is longer: the caller's choice, :meth:`SafeBrake.start`) is past what any command here
is made safe for, and past it the driver no longer applies the command: its own timeout took
over, and the prediction no longer says where the arm is. Predicted on, a 200 ms gap after the
first command had the prediction at 3.8 times a velocity limit and the commands after it damping
with ``K_d/200``; :meth:`SafeBrake.held_past_timeout` tells the caller, which ends the window
(:class:`~.supervisor.Supervisor`) instead.

The prediction is timed from the first safe command sent, not from when the fallback began
(after a silence the window opens before any command can go out), and starts where the arm is
then: the caller carries the last good state over a silence before it under the command the
driver held meanwhile (:class:`~.supervisor.Supervisor`; started from that state as if it were
measured then, a 45 ms silence had the brake drive joint_6 to 5.2 times its velocity limit). On
the simulator, whose model is the controller's, this is the damping feedback it would get from
good states: the arm brakes and holds (``test/test_safety.py``). On a real arm it is open loop
and drifts with the model's errors (payload, friction, the rotor inertia Kinova does not
publish), which is why it lasts only the fallback window; after it, the driver's own command
timeout must take over (see ``launch/hardware_gen3.launch.py``).
"""

from __future__ import annotations

import math

import numpy as np

from .errors import ConfigError
from .prediction import forward_step
from .robot import CONTROL_PERIOD, RobotModel
from .validation import FloatArray, as_positive_float, as_vector

#: Periods the first safe command of a window is made safe to be held, when it answers a refused
#: state: the simulator's default command timeout (50 ms; ``test/test_supervisor.py`` ties the two).
FIRST_HOLD_PERIODS = 50


class SafeBrake:
    """Braking command predicted from the last good state (see the module docstring).

    Args:
        robot: the controller's model.
        damping: ``K_d`` (N·m·s/rad), ``n`` values ``>= 0`` (checked by the caller against
            :meth:`RobotModel.check_damping`, as for every damping).
        horizon: longest prediction (s): past it the prediction stops and the command stays
            the last one (the fallback window). It also bounds the work of one call: ~10 µs a
            period, so a call after a gap of the whole default window (0.5 s) takes ~5 ms.
        period: ``h`` (s), the integration step and the command period.
    """

    def __init__(
        self, robot: RobotModel, damping: FloatArray, horizon: float, period: float = CONTROL_PERIOD
    ) -> None:
        self.robot = robot
        n = robot.n
        self.damping = as_vector("safe brake damping", damping, n, broadcast_scalar=True, min_value=0.0)
        self.period = as_positive_float("safe brake period", period)
        horizon = as_positive_float("safe brake horizon", horizon, allow_zero=True)
        if horizon / self.period > 1e6:
            raise ConfigError(f"safe brake horizon: {horizon} s is over a million periods of {self.period} s")
        self.max_periods = math.ceil(horizon / self.period)
        self._limit = robot.effort_limit  # inf where the model gives none
        self.q = np.zeros(n)  # q̂ (rad)
        self.v = np.zeros(n)  # q̂̇ (rad/s)
        self.command = np.zeros(n)  # g(q̂) − K_d·q̂̇ (N·m), before saturation
        self.tau = np.zeros(n)  # the command saturated: what the arm gets and the prediction holds
        self.k = 0  # periods predicted so far
        self._t = math.nan  # the time (s) the prediction has reached
        self._longest_gap = 1  # periods between two commands, the most seen since start()
        self.timeout = FIRST_HOLD_PERIODS  # periods a command is applied at most (start())

    def start(
        self,
        q: FloatArray,
        v: FloatArray,
        now: float,
        *,
        hold: int = FIRST_HOLD_PERIODS,
        timeout: int = FIRST_HOLD_PERIODS,
    ) -> None:
        """Predict from ``(q, v)`` (rad, rad/s), the last state the arm was known in, with the
        first safe command going out at ``now`` (s) and expected to be held ``hold`` periods:
        it damps with ``K_d·min(1, 2/hold)``. :data:`FIRST_HOLD_PERIODS` (the default) when it
        answers a refused state; the stream's period when it answers a good state the
        controller failed on and that period is known (the stream is alive: one period at
        1 kHz, ``K_d`` in full). ``timeout``: the periods the driver applies a command at most
        (:meth:`held_past_timeout`)."""
        np.copyto(self.q, q)
        np.copyto(self.v, v)
        self.k = 0
        self._t = now
        self._longest_gap = 1
        self.timeout = max(int(timeout), 1)
        self._command(min(1.0, 2.0 / max(int(hold), 1)))

    def held_past_timeout(self, now: float) -> int:
        """The periods the last command has been out by ``now`` (s), when more than
        :attr:`timeout` (0 otherwise, and 0 once the prediction reached its horizon): the driver
        stopped applying it meanwhile, so what the arm did since is not predicted here (the
        module docstring). The caller stops sending these commands then."""
        periods = (now - self._t) / self.period
        if not periods >= 0.5 or self.k >= self.max_periods:  # nan: no time told
            return 0
        gap = round(min(periods, 1e9))
        return gap if gap > self.timeout else 0

    def _command(self, scale: float = 1.0) -> None:
        """``g(q̂) − scale·K_d·q̂̇`` into :attr:`command`, saturated into :attr:`tau`."""
        g = self.robot.gravity(self.q)
        np.subtract(g, scale * self.damping * self.v, out=self.command)
        np.clip(self.command, -self._limit, self._limit, out=self.tau)

    def torque(self, now: float) -> FloatArray:
        """The command to send at ``now`` (s, the clock of :meth:`start`), before saturation
        (N·m; a :class:`~torque_ctrl_ros.core.saturation.TorqueLimiter` on the same effort
        limits sends :attr:`tau` and reports what it clipped).

        The prediction first runs ``m = round((now − t)/h)`` periods under the last command,
        ``t`` being where it stands, at most to ``horizon``; the new command's damping is
        ``K_d·min(1, 2/m_max)``, ``m_max`` the longest such ``m`` since :meth:`start` (not cut
        at the horizon). When ``now`` is not later (a clock gone back, NaN) nothing is
        predicted and the last command is returned again.
        """
        periods = (now - self._t) / self.period
        if periods >= 0.5:  # False for NaN
            # Periods since the last command: ≥ 1, except 0 at exactly half a period (round()
            # halves to even), where nothing is predicted and the last command comes again.
            gap = round(min(periods, 1e9))
            m = min(gap, self.max_periods - self.k)
            if m > 0:
                for _ in range(m):
                    forward_step(self.robot, self.robot.data, self.q, self.v, self.tau, self.period)
                self.k += m
                self._t += m * self.period
                self._longest_gap = max(self._longest_gap, gap)
                self._command(min(1.0, 2.0 / self._longest_gap))
        return self.command.copy()


__all__ = ["FIRST_HOLD_PERIODS", "SafeBrake"]
