"""Controller parameter sets the compute benchmark runs (name → flat parameter mapping).

They are the typical settings the acceptance tests use (``test/test_achd.py``,
``test/test_qpid.py``), with every safety barrier of the QP controllers switched on
(joint position, joint velocity, self-collision, floor, singularity), so the figures are those
of a realistic configuration rather than of the cheapest one.

- ``gravity_comp``: the safe brakes' per-joint damping, ``DEFAULT_DAMPING`` (gravity_comp's
  own default is 0).
- ``computed_torque``: ω_n = 10 rad/s, critically damped.
- ``achd_rnea``: all six tool axes constrained, kp = 100 /s² (the Cartesian step test).
- ``qpid``: tool pose task (kp = 100 /s²) plus a weak posture task (kp = 10 /s²,
  weight 1e-3), as in the QP tests, all barriers on with their default gains.
- ``hqpid``: the same two tasks on two priority levels (tool 0, posture 1).
"""

from __future__ import annotations

from typing import Any

from ..core.safety import DEFAULT_DAMPING

TOOL = "end_effector_link"

#: Every barrier group of the QP controllers on, with the defaults of ``QPIDConfig``.
QP_BARRIERS: dict[str, Any] = {
    "joint_position_limit.enabled": True,
    "joint_velocity_limit.enabled": True,
    "self_collision.enabled": True,
    "self_collision.d_safe": 0.02,
    "floor.enabled": True,
    "floor.d_safe": 0.02,
    "singularity.enabled": True,
    "singularity.w_min": 0.01,
}

_QP_TASKS: dict[str, Any] = {
    "tasks": ["tool", "posture"],
    "tool.type": "pose",
    "tool.frame": TOOL,
    "tool.kp": 100.0,
    "posture.type": "posture",
    "posture.kp": 10.0,
    "posture.weight": 1e-3,
}

#: Benchmark configurations: controller name → parameters for ``create_controller``.
BENCH_CONFIGS: dict[str, dict[str, Any]] = {
    "gravity_comp": {"damping": list(DEFAULT_DAMPING)},
    "computed_torque": {"kp": 100.0, "kd": 20.0},
    "achd_rnea": {"kp": 100.0},
    "qpid": {**_QP_TASKS, **QP_BARRIERS},
    "hqpid": {**_QP_TASKS, "tool.level": 0, "posture.level": 1, **QP_BARRIERS},
}

__all__ = ["BENCH_CONFIGS", "QP_BARRIERS", "TOOL"]
