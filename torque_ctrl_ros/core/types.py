"""Plain data passed between the controllers and their callers."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from .validation import FloatArray


@dataclass(frozen=True)
class JointState:
    """A measured joint state in the controller's joint order.

    Attributes:
        q: joint angles (rad).
        v: joint velocities (rad/s).
        stamp: measurement time (s, the states' clock): the time a target source samples its
            trajectory or times its move at (:mod:`~torque_ctrl_ros.core.target_tracking`). The
            controllers ignore it, and staleness is judged on the message's own stamp
            (:meth:`~.safety.Watchdog.check`), so it may be 0 where no target source reads it.
    """

    q: FloatArray
    v: FloatArray
    stamp: float = 0.0


@dataclass(frozen=True)
class JointReference:
    """A joint-space reference: ``q_ref`` (rad) and optional ``q̇_ref`` (rad/s), ``q̈_ref`` (rad/s²).

    ``None`` means zero for velocity and acceleration. Treat it as immutable: controllers
    validate a reference object once, so change targets by making a new one.
    """

    q: FloatArray
    v: FloatArray | None = None
    a: FloatArray | None = None


@dataclass
class ControlOutput:
    """What a controller returns for one state.

    Attributes:
        tau: the command to send (N·m), saturated to the effort limits.
        tau_unsaturated: the command before saturation (N·m).
        saturated: per joint, ``True`` where the command was beyond the joint's limit by more than
            rounding (or clipped after scaling; see :class:`~.saturation.TorqueLimiter`).
        saturated_joints: names of the saturated joints.
        info: scalar diagnostics (names and units are documented by each controller).
        torque_scale: the factor ``s`` of a command scaled toward its bias (1: not scaled).
    """

    tau: FloatArray
    tau_unsaturated: FloatArray
    saturated: NDArray[np.bool_]
    saturated_joints: tuple[str, ...]
    info: dict[str, float] = field(default_factory=dict)
    torque_scale: float = 1.0

    @property
    def any_saturated(self) -> bool:
        """``True`` if any joint was saturated."""
        return bool(self.saturated.any())
