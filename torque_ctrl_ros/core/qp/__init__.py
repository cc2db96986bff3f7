"""QP building blocks for the torque-level QP controllers (``qpid``, ``hqpid``).

- :mod:`.problem`: :class:`DenseQP`, a persistent, warm-started dense QP (ProxSuite stays
  behind this boundary) and its :class:`Solution`.
- :mod:`.tasks`: acceleration tasks (frame pose, position, orientation, joint posture) and
  the per-step :class:`KinematicsState`.
- :mod:`.constraints`: control-barrier-function rows (joint position, joint velocity,
  self-collision, floor, singularity, fixed linear rows).
- :mod:`.collision`: the link capsules loaded from ``config/*.yaml``, their distances to each
  other (self-collision) and to the floor's plane.
"""

from __future__ import annotations

from .collision import Capsule, CapsuleDistances, CollisionSpec, FloorModel, SelfCollisionModel
from .constraints import (
    Barrier,
    FloorBarrier,
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
    "CapsuleDistances",
    "CartesianTarget",
    "CollisionSpec",
    "DenseQP",
    "FloorBarrier",
    "FloorModel",
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
