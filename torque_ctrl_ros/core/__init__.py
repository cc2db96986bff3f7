"""Pure math for torque control: robot model, controllers, safety. No ROS in here.

No ROS, no MuJoCo: besides the standard library, numpy, pinocchio, proxsuite, and for the
self-collision barrier coal (Pinocchio's collision library) and yaml (its capsule file);
``test/test_core_is_ros_free.py`` checks the list.
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
