"""The safe command while no joint state can be trusted: brake by the model's prediction.

When the controller node's watchdog refuses the joint states (stale, non-finite, implausible)
or the controller fails on one, the node keeps sending a safe command for up to
``watchdog.fallback_duration`` before it stops. The last trustworthy information is the last
good state ``(q₀, q̇₀)``. Repeating ``g(q₀) − K_d·q̇₀`` is no damping: the term does not follow
the arm, so once it has stopped a joint it keeps pushing that joint the other way. In the
simulator, from the home pose at 0.5 rad/s on every joint, 0.5 s of it took the last wrist
joint to 75 rad/s (its limit is 1.22).

:class:`SafeBrake` sends instead what damping feedback would send if the arm moved as the model
predicts under that very command. From ``(q̂₀, q̂̇₀) = (q₀, q̇₀)``, per control period ``h``::

    τ_k     = sat(g(q̂_k) − K_d·q̂̇_k)                      (N·m, clipped to the effort limits)
    q̈_k     = M(q̂_k)⁻¹·(τ_k − C(q̂_k, q̂̇_k)·q̂̇_k − g(q̂_k))   (forward dynamics, ABA)
    q̂̇_{k+1} = q̂̇_k + h·q̈_k,   q̂_{k+1} = q̂_k + h·q̂̇_{k+1}   (semi-implicit Euler)

and the command ``k`` periods after the safe command took over is ``τ_k``. On the simulator,
whose model is the controller's, that is the damping feedback it would get from good states:
the arm brakes and holds (``test/test_safety.py``). On a real arm it is open loop and drifts
with the model's errors (payload, friction, the rotor inertia Kinova does not publish), which
is why it lasts only the fallback window; after it, the driver's own command timeout must take
over (see ``launch/hardware_gen3.launch.py``).
"""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin

from .errors import ConfigError
from .robot import CONTROL_PERIOD, RobotModel
from .validation import FloatArray, as_positive_float, as_vector


class SafeBrake:
    """Braking command predicted from the last good state (see the module docstring).

    Args:
        robot: the controller's model.
        damping: ``K_d`` (N·m·s/rad), ``n`` values ``>= 0`` (checked by the caller against
            :meth:`RobotModel.check_damping`, as for every damping).
        horizon: longest prediction (s): asked for later, the command stays the one at
            ``horizon`` (the fallback window; it also bounds the work of one call).
        period: ``h`` (s), the period over which each command is held.
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
        self._q0 = np.zeros(n)
        self._v0 = np.zeros(n)
        self.q = np.zeros(n)  # q̂_k (rad)
        self.v = np.zeros(n)  # q̂̇_k (rad/s)
        self.tau = np.zeros(n)  # τ_k (N·m)
        self.k = 0  # periods predicted so far

    def start(self, q: FloatArray, v: FloatArray) -> None:
        """Predict from the state ``(q, v)`` (rad, rad/s), the last one the arm was known in."""
        np.copyto(self._q0, q)
        np.copyto(self._v0, v)
        self._restart()

    def _restart(self) -> None:
        np.copyto(self.q, self._q0)
        np.copyto(self.v, self._v0)
        self.k = 0
        self._command()

    def _command(self) -> None:
        """``τ = sat(g(q̂) − K_d·q̂̇)`` into :attr:`tau`."""
        g = self.robot.gravity(self.q)
        np.subtract(g, self.damping * self.v, out=self.tau)
        np.clip(self.tau, -self._limit, self._limit, out=self.tau)

    def torque(self, elapsed: float) -> FloatArray:
        """The command ``elapsed`` s after :meth:`start` (N·m, saturated).

        ``k = round(elapsed / h)``, clamped to ``[0, max_periods]`` (NaN counts as 0). The
        prediction advances from where the last call left it (one period per call at 1 kHz);
        asked for an earlier ``k``, it starts over from the start state.
        """
        periods = 0.0 if math.isnan(elapsed) else elapsed / self.period
        k = round(min(max(periods, 0.0), float(self.max_periods)))
        if k < self.k:
            self._restart()
        robot = self.robot
        while self.k < k:
            a = pin.aba(robot.model, robot.data, robot.configuration(self.q), self.v, self.tau)
            self.v += self.period * a
            self.q += self.period * self.v
            self.k += 1
            self._command()
        return self.tau.copy()


__all__ = ["SafeBrake"]
