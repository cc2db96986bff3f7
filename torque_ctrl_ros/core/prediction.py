"""The state a command will act on: the measured state carried over the commands still in flight.

A command computed from the state measured at ``t₀`` reaches the arm ``command_delay`` later
(:meth:`~.robot.RobotModel.set_command_delay`: 1 ms in the simulator, which applies a command over
the period right after the state it answers; 3–5 ms on the real Gen3). Over the ``m`` periods in
between, the arm moves under the ``m`` commands sent before it::

    m = ⌈command_delay / h⌉ − 1                 (0 in the simulator, 4 at 5 ms)

A controller fed the measured state computes a torque for where the arm was, not for where it
will be when the torque acts: its model terms (``M``, ``c``, the barriers' rows) are ``m``
periods stale. On the model, which the simulator shares, a stiff posture task then ran a joint
over its speed limit by ~3.4 % per period of delay (the velocity barrier binds on the stale
velocity; docs/controllers.md).

:class:`DelayPredictor` carries the measured ``(q, q̇)`` over those commands, oldest first, as
the driver holds each for one period (the same step as the safe brake, :mod:`.braking`)::

    q̈ = M(q̂)⁻¹·(τ_k − c(q̂, q̂̇))                      (forward dynamics, ABA)
    q̂̇ ← q̂̇ + h·q̈,   q̂ ← q̂ + h·q̂̇                      (semi-implicit Euler)

and the controller computes on ``(q̂, q̂̇)``, the state at ``t₀ + m·h``
(:attr:`DelayPredictor.horizon`): the reference is sampled at that time too, or a moving target lags
by the delay (computed torque along a trajectory, kp 100, 5 ms late: 1.8 mrad off with the state
predicted and the reference sampled at ``t₀``, 0.16 mrad at ``t₀ + m·h``, 2.4 mrad predicting
nothing; at kp 400 the state predicted alone was worse than nothing, 1.85 against 0.66 mrad, and
0.09 with both). The commands are those this node sent, safe ones included, the last one again for
each period without a command of its own (:meth:`DelayPredictor.held`: the driver held it): a state
skipped for a newer one, a dropped state, a stream slower than 1 kHz (the supervisor counts the
periods from the stamps); a period whose command is not known (after a start, a stop, a clock
reset or a gap longer than the driver's command timeout the brake assumes, 50 ms or 1.5 of the
stream's period, before ``m`` were sent) is carried at
constant velocity. On the model the prediction is exact to the integrator's error; on a real arm it
is off by the model's error accumulated over ``m`` periods (payload, friction, rotor inertia): a
predictor is only as good as the model, which is why the closed-loop checks
(:meth:`~.robot.RobotModel.check_damping` and the gain checks) keep allowing for the full delay
rather than counting on it.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from .robot import CONTROL_PERIOD, RobotModel, showing_period
from .validation import FloatArray, as_positive_float


def forward_step(
    robot: RobotModel, data: pin.Data, q: FloatArray, v: FloatArray, tau: FloatArray, h: float
) -> None:
    """Advance ``(q, v)`` (rad, rad/s; both updated in place) by one period ``h`` (s) with the
    torque ``tau`` (N·m) held: ``q̈ = ABA(q, v, τ)``, ``v += h·q̈``, ``q += h·v`` (semi-implicit
    Euler, MuJoCo's step without joint damping). ``data``: a Pinocchio buffer of ``robot.model``."""
    # pin.aba returns a new array: scaled in place and reused for h·v, no other allocation.
    a = pin.aba(robot.model, data, robot.configuration(q), v, tau)
    a *= h
    v += a
    np.multiply(v, h, out=a)
    q += a


def commands_in_flight(command_delay: float, period: float = CONTROL_PERIOD) -> int:
    """``m = ⌈command_delay / h⌉ − 1``: the commands sent before the one answering a state that
    still act on the arm after it (0 for a delay of one period, the simulator's). A delay between
    whole periods counts up, to the first state that shows the command (2.1 ms: the third,
    :func:`~.robot.showing_period`), as the start-up checks count it."""
    return max(0, showing_period(command_delay, period) - 1)


class DelayPredictor:
    """Carries a measured state over the commands in flight (see the module docstring).

    Args:
        robot: the controller's model.
        in_flight: ``m``, the commands between a state and the one answering it
            (:func:`commands_in_flight`); 0 predicts nothing (the state is returned as it came).
        period: ``h`` (s), the integration step and the command period.

    Use per state: :meth:`predict`, then :meth:`sent` with the command that went out (whatever
    computed it); :meth:`held` before :meth:`predict` when states were skipped (their periods ran
    on the last command); :meth:`reset` when the arm moved under commands this object was not
    told of.
    """

    def __init__(self, robot: RobotModel, in_flight: int, period: float = CONTROL_PERIOD) -> None:
        if int(in_flight) != in_flight or in_flight < 0:
            raise ValueError(f"in_flight: expected a count of commands >= 0, got {in_flight!r}")
        self.robot = robot
        self.in_flight = int(in_flight)
        self.period = as_positive_float("prediction period", period)
        self._data = robot.model.createData()  # robot.data is the controller's
        n = robot.n
        self._sent = np.zeros((self.in_flight, n))  # ring of the last m commands (N·m)
        self._next = 0  # the ring's slot for the next command: its oldest one once full
        self._known = 0  # commands sent since the last reset, up to m
        self.q = np.zeros(n)  # q̂ (rad)
        self.v = np.zeros(n)  # q̂̇ (rad/s)

    @property
    def horizon(self) -> float:
        """``m·h`` (s): how far ahead of its measurement a predicted state is, the time the
        command answering it starts to act (0 without commands in flight)."""
        return self.in_flight * self.period

    def reset(self) -> None:
        """Forget the commands sent: the next predictions carry the unknown ones at constant velocity."""
        self._known = 0

    def sent(self, tau: FloatArray) -> None:
        """Note the command ``tau`` (N·m, saturated: what the arm gets) as sent."""
        if self.in_flight:
            self._sent[self._next] = tau
            self._next = (self._next + 1) % self.in_flight
            self._known = min(self._known + 1, self.in_flight)

    def unsend(self) -> None:
        """Take back the last command noted: the state it answered is answered again (a copy of
        it, the same stamp), and the driver applies one answer per state. If the ring was full,
        the command it overwrote is not restored: that oldest period is carried at constant
        velocity (no copy kept on every step)."""
        if self.in_flight and self._known:
            self._next = (self._next - 1) % self.in_flight
            self._known -= 1

    def held(self, periods: int) -> None:
        """The last command sent acted ``periods`` periods more: the states of those periods were
        skipped, none answered (:mod:`.backlog`), and the driver held it. Noted once per period,
        as :meth:`sent` would; nothing when no command is known."""
        if self.in_flight and self._known and periods > 0:
            last = self._sent[(self._next - 1) % self.in_flight].copy()
            for _ in range(min(periods, self.in_flight)):
                self.sent(last)

    def predict(self, q: FloatArray, v: FloatArray) -> tuple[FloatArray, FloatArray]:
        """``(q̂, q̂̇)`` (rad, rad/s) when the command answering ``(q, v)`` reaches the arm: ``(q, v)``
        themselves without commands in flight, else this object's buffers (valid until the next call)."""
        m = self.in_flight
        if m == 0:
            return q, v
        qh, vh, h = self.q, self.v, self.period
        np.copyto(qh, q)
        np.copyto(vh, v)
        unknown = m - self._known  # the oldest periods: before the first command noted
        if unknown:
            qh += (unknown * h) * vh
        for i in range(unknown, m):
            forward_step(self.robot, self._data, qh, vh, self._sent[(self._next + i) % m], h)
        return qh, vh


__all__ = ["DelayPredictor", "commands_in_flight", "forward_step"]
