"""hqpid's level-0 damping of the self-motion (``SELF_MOTION_DAMPING``) where the singularity barrier
needs that motion: started below ``w_min``, the barrier raises the manipulability by the self-motion
and the tool holds, instead of level 0 moving the tool (``SELF_MOTION_RECOVERY_BAND``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ros_helpers import shipped_parameters

import torque_ctrl_ros.core.controllers.qpid as qpid_module
from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.controllers import create_controller
from torque_ctrl_ros.core.controllers.qpid import HQPID
from torque_ctrl_ros.core.types import JointState
from torque_ctrl_ros.sim.plant import MujocoPlant

ROOT = Path(__file__).resolve().parent.parent
SCENE = ROOT / "mjcf" / "scene.xml"
TOOL = "end_effector_link"
HOME = np.array([0.0, 0.26179939, 3.14159265, -2.26892803, 0.0, 0.95993109, 1.57079633])
# A reachable pose clear of the floor and of self-collision whose manipulability (0.0053 m³) is
# about half the shipped w_min (0.01 m³).
BELOW_W_MIN = np.array([-0.946571, 0.182538, -1.817112, 2.401323, -1.536389, -0.943354, -2.553683])


def _shipped_hqpid(robot: RobotModel) -> HQPID:
    section = {k[6:]: v for k, v in shipped_parameters("controller_node").items() if k.startswith("hqpid.")}
    controller = create_controller("hqpid", robot, section)
    assert isinstance(controller, HQPID)
    return controller


def test_hqpid_below_w_min_raises_the_manipulability_by_the_self_motion_and_holds_the_tool(
    robot: RobotModel,
) -> None:
    """Holding a pose below ``w_min`` for 1 s in MuJoCo (no delay): the tool stays within 1 mm of its
    hold while the manipulability comes back to ``w_min``. With the damping whole below ``w_min`` it
    priced the self-motion the barrier needed and level 0 moved the tool instead: 13.4 mm here, as
    with the hardware file's 5 ms delay (now 0.80 mm, 0.09 with no damping at all)."""
    controller = _shipped_hqpid(robot)
    barrier = controller.singularity_barrier
    assert barrier is not None
    assert barrier.manipulability_at(BELOW_W_MIN) < 0.6 * barrier.w_min
    monitor = RobotModel.from_urdf_file(ROOT / "urdf" / "gen3.urdf")
    start = monitor.frame_placement(BELOW_W_MIN, TOOL).translation.copy()
    reference = controller.hold_reference(JointState(BELOW_W_MIN, np.zeros(7)))
    plant = MujocoPlant(SCENE, robot.joint_names)
    plant.set_state(BELOW_W_MIN, np.zeros(7))
    deviation = 0.0
    for _ in range(1000):
        out = controller.compute(JointState(plant.q, plant.v), reference)
        assert out.info["fallback"] == 0.0
        plant.set_torque(out.tau)
        plant.step()
        tool = monitor.frame_placement(plant.q, TOOL).translation
        deviation = max(deviation, float(np.linalg.norm(tool - start)))
    w_end = barrier.manipulability_at(plant.q)
    print(f"\n[below w_min] tool off its hold by at most {1e3 * deviation:.2f} mm, w {w_end:.4f} m³ at 1 s")
    assert deviation < 1e-3
    assert w_end > 0.97 * barrier.w_min


@pytest.mark.parametrize(("q", "damped"), [(HOME, True), (BELOW_W_MIN, False)])
def test_level_0_damps_the_self_motion_above_w_min_and_not_far_below(
    robot: RobotModel, monkeypatch: pytest.MonkeyPatch, q: np.ndarray, damped: bool
) -> None:
    """Level 0's cost with the damping is the one without it at a state more than
    ``SELF_MOTION_RECOVERY_BAND·w_min`` below ``w_min``, and differs from it at home (above)."""
    with_damping = _shipped_hqpid(robot)
    monkeypatch.setattr(qpid_module, "SELF_MOTION_WEIGHT_SHARE", 0.0)
    without = _shipped_hqpid(RobotModel.from_urdf_file(ROOT / "urdf" / "gen3.urdf"))
    state = JointState(q, np.full(7, 0.1))
    H = []
    for controller in (with_damping, without):
        controller.torque(state.q, state.v, controller.hold_reference(state))
        H.append(controller.levels[0].qp.H[:7, :7].copy())
    assert np.allclose(H[0], H[1], rtol=0.0, atol=1e-12) is not damped
