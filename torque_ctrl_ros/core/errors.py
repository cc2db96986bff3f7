"""The package's exception types.

Every error the controllers, the robot model and the simulator raise on purpose for bad
input derives from :class:`TorqueCtrlError`, so callers (the ROS nodes in particular) can
catch the package's own failures without swallowing programming errors. A few helpers use
the built-in types their callers expect: a data file not found is a ``FileNotFoundError``
(:mod:`~torque_ctrl_ros.paths`), bad arguments to the benchmark's tools or the simulator's
command rules a ``ValueError``.
"""

from __future__ import annotations


class TorqueCtrlError(Exception):
    """Base class of all errors raised on purpose by torque_ctrl_ros."""


class ConfigError(TorqueCtrlError, ValueError):
    """A configuration value is malformed: wrong shape, sign, type, NaN, unknown name."""


class StateError(TorqueCtrlError, ValueError):
    """A measured state cannot be used: non-finite, wrong length, unknown joint names."""


class ModelError(TorqueCtrlError):
    """A robot description cannot be loaded or does not describe what is expected."""


class FrameNotFoundError(TorqueCtrlError, KeyError):
    """A frame name is not in the model; the message lists the valid names."""

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return str(self.args[0]) if self.args else ""


class SolverError(TorqueCtrlError):
    """A numerical solve (QP, constrained dynamics) failed or returned non-finite values."""


class SimulationError(TorqueCtrlError):
    """The simulation diverged (non-finite or huge accelerations, velocities or positions)."""


class TargetError(TorqueCtrlError, ValueError):
    """A reference or target is malformed: wrong length, non-finite, wrong frame."""
