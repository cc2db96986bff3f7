"""QP building blocks for the torque-level QP controllers (``qpid``, ``hqpid``).

- :mod:`.problem`: :class:`DenseQP`, a persistent, warm-started dense QP (ProxSuite stays
  behind this boundary) and its :class:`Solution`.
- :mod:`.tasks`: acceleration tasks (frame pose, position, orientation, joint posture) and
  the per-step :class:`KinematicsState`.
- :mod:`.constraints`: control-barrier-function rows (joint position, joint velocity,
  self-collision, singularity, fixed linear rows).
- :mod:`.collision`: the capsule self-collision model loaded from ``config/*.yaml``.
"""

from __future__ import annotations

from .collision import Capsule, CollisionSpec, SelfCollisionModel
from .constraints import (
    Barrier,
    JointPositionBarrier,
    JointVelocityBarrier,
    LinearBarrier,
    SelfCollisionBarrier,
    SingularityBarrier,
)
from .problem import DenseQP, Solution, SolveStatus
from .tasks import (
    TASK_TYPES,
    CartesianTarget,
    FramePoseTask,
    JointPostureTask,
    KinematicsState,
    OrientationTask,
    PositionTask,
    Task,
)

__all__ = [
    "TASK_TYPES",
    "Barrier",
    "Capsule",
    "CartesianTarget",
    "CollisionSpec",
    "DenseQP",
    "FramePoseTask",
    "JointPositionBarrier",
    "JointPostureTask",
    "JointVelocityBarrier",
    "KinematicsState",
    "LinearBarrier",
    "OrientationTask",
    "PositionTask",
    "SelfCollisionBarrier",
    "SelfCollisionModel",
    "SingularityBarrier",
    "Solution",
    "SolveStatus",
    "Task",
]
