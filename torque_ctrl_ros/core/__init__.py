"""Pure math for torque control: robot model, controllers, safety. No ROS in here.

Only numpy, pinocchio and proxsuite (and coal through pinocchio) may be imported
under this package; ``test/test_core_is_ros_free.py`` checks it.
"""

from .errors import (
    ConfigError,
    FrameNotFoundError,
    ModelError,
    SolverError,
    StateError,
    TargetError,
    TorqueCtrlError,
)
from .robot import RobotModel, wrap_angle
from .types import ControlOutput, JointReference, JointState

__all__ = [
    "ConfigError",
    "ControlOutput",
    "FrameNotFoundError",
    "JointReference",
    "JointState",
    "ModelError",
    "RobotModel",
    "SolverError",
    "StateError",
    "TargetError",
    "TorqueCtrlError",
    "wrap_angle",
]
