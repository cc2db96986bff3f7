"""The interface every controller shares: state + reference in, torque out.

A controller is built from a :class:`~torque_ctrl_ros.core.robot.RobotModel` and a
validated configuration object. :meth:`Controller.compute` checks the state, asks
the subclass for the raw torque, refuses non-finite results and saturates last.
Subclasses implement :meth:`Controller.from_params`, :meth:`Controller.torque` and
:meth:`Controller.hold_reference`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np

from ..errors import ConfigError, SolverError
from ..robot import RobotModel
from ..saturation import TorqueLimiter
from ..types import ControlOutput, JointState
from ..validation import FloatArray, all_finite

RefT = TypeVar("RefT")


class Controller(ABC, Generic[RefT]):
    """Base class of all torque controllers.

    Attributes:
        name: the value of the ``controller`` parameter that selects this class.
        robot: the model the torques are computed with.
        limiter: the saturation applied to every command.
        scales_saturated_torque: the torque is ``M(q)·q̈ + c(q, q̇)``: a command beyond the
            limits is scaled toward :meth:`saturation_bias` rather than clipped joint by joint
            (:class:`~..saturation.TorqueLimiter`); its info then carries ``torque_scale``,
            the factor ``s`` (1 when nothing was beyond a limit).
    """

    name: ClassVar[str] = ""
    scales_saturated_torque: ClassVar[bool] = False

    def __init__(self, robot: RobotModel) -> None:
        self.robot = robot
        self.limiter = TorqueLimiter(robot.joint_names, robot.effort_limit)

    @classmethod
    @abstractmethod
    def from_params(cls, robot: RobotModel, params: Mapping[str, Any]) -> Controller[RefT]:
        """Build from a flat parameter mapping (the node's YAML section); unknown keys fail."""

    @abstractmethod
    def hold_reference(self, state: JointState) -> RefT:
        """A reference that keeps the arm where ``state`` is (used until a target arrives)."""

    @abstractmethod
    def torque(self, q: FloatArray, v: FloatArray, reference: RefT) -> tuple[FloatArray, dict[str, float]]:
        """Unsaturated joint torque (N·m) and scalar diagnostics for a validated state."""

    def reset(self) -> None:
        """Forget what the controller carries from one step to the next (QP warm starts, filtered
        gradients), because the next state does not follow the last one: the arm moved under
        another command, or a simulator restarted. Nothing to forget by default."""
        return None

    def bounds_past(self, state: JointState) -> list[str]:
        """The bounds this controller keeps the arm within that ``state`` is already past, each as
        a sentence for a warning when control starts there (the controller then moves the arm
        back, which someone expecting it held does not). None by default."""
        return []

    def diagnostics(self) -> dict[str, float]:
        """Diagnostics of the last :meth:`compute` that are too costly to produce every step.

        ``ControlOutput.info`` carries what every step needs (status, fallback, timings); a
        node asks for these only when it publishes ``/diagnostics``. None by default.
        """
        return {}

    def saturation_bias(self, q: FloatArray, v: FloatArray) -> FloatArray:
        """The torque (N·m) a command beyond the limits is scaled toward, for controllers with
        :attr:`scales_saturated_torque`, asked right after :meth:`torque` at the same state.

        ``c(q, q̇)`` by default: ``τ' = c + s·(τ − c)`` gives ``q̈' = s·q̈``. A controller whose
        ``q̈`` carries a part it must keep whole overrides it (:class:`~.cartesian.AchdRnea`).
        """
        return self.robot.nonlinear_effects(q, v)

    def compute(self, state: JointState, reference: RefT) -> ControlOutput:
        """Torque command for ``state`` tracking ``reference``, saturated to the effort limits.

        Raises:
            StateError: the state has the wrong length or non-finite entries.
            TargetError: the reference is malformed.
            SolverError: the controller produced a non-finite torque, or not one per joint
                (never sent: the limiter would broadcast a scalar to every joint).
        """
        q, v = self.robot.check_state(state.q, state.v)
        tau, info = self.torque(q, v, reference)
        tau = np.asarray(tau, dtype=np.float64)
        if tau.shape != (self.robot.n,):
            raise SolverError(f"{self.name}: a torque of shape {tau.shape}, expected ({self.robot.n},)")
        if not all_finite(tau):
            raise SolverError(f"{self.name}: non-finite torque {tau.tolist()}")
        out = self.limiter.apply(tau, info)
        if self.scales_saturated_torque:
            if out.saturated_joints:  # the bias only then: the normal step costs nothing more
                out = self.limiter.apply(tau, info, self.saturation_bias(q, v))
            out.info["torque_scale"] = out.torque_scale
        return out


def reject_unknown_keys(section: str, params: Mapping[str, Any], known: set[str]) -> None:
    """Raise :class:`ConfigError` naming any key of ``params`` not in ``known``."""
    unknown = sorted(set(params) - known)
    if unknown:
        raise ConfigError(f"{section}: unknown parameter(s) {unknown}; valid are {sorted(known)}")
