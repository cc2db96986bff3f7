"""Behaviour a mutation review of ``sim/``, ``joint_order.py``, ``paths.py`` and the nodes' ROS-free
helpers found unpinned: each test here failed on one hand-made fault in the code (the mutant its
docstring names) while the rest of the suite passed on it.

The plant's models here are small MJCF documents written for each test; none runs ROS.
"""

from __future__ import annotations

import os
from pathlib import Path

import mujoco
import numpy as np
import pytest
import yaml
from ros_helpers import LineLogger, requires_rclpy

from torque_ctrl_ros.core.errors import ConfigError, ModelError, StateError
from torque_ctrl_ros.sim.commands import CommandRules, Verdict
from torque_ctrl_ros.sim.plant import MujocoPlant

ROOT = Path(__file__).resolve().parents[1]
SCENE = ROOT / "mjcf" / "scene.xml"
URDF = ROOT / "urdf" / "gen3.urdf"
GEN3_JOINTS = [f"joint_{i}" for i in range(1, 8)]

_TWO_JOINTS = """<mujoco><option integrator="Euler" gravity="0 0 0"/><worldbody>
<body><inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/><joint name="a" type="hinge" axis="0 0 1"/></body>
<body pos="1 0 0"><inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/>
<joint name="b" type="hinge" axis="0 0 1"/></body></worldbody>
<actuator>ACTUATORS</actuator>KEYFRAMES</mujoco>"""

#: A free body before a hinge and a slide: the driven joints' qpos and dof addresses differ
#: (hinge: qpos 7, dof 6; slide: qpos 8, dof 7), as they do in any scene with a loose object
#: declared before the arm.
_FREE_BODY_FIRST = """<mujoco><option integrator="Euler" gravity="0 0 0"/><worldbody>
<body name="ball" pos="2 0 0"><freejoint name="free"/><geom size="0.1" mass="1"/></body>
<body name="link"><joint name="hinge" type="hinge" axis="0 0 1"/>
<geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.05" mass="1"/>
<body pos="0.5 0 0"><joint name="slide" type="slide" axis="1 0 0"/><geom size="0.05" mass="0.5"/></body>
</body></worldbody><actuator><motor joint="hinge"/></actuator></mujoco>"""


def _model_file(tmp_path: Path, text: str, name: str = "model.xml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _two_joints(tmp_path: Path, actuators: str, keyframes: str = "") -> Path:
    return _model_file(tmp_path, _TWO_JOINTS.replace("ACTUATORS", actuators).replace("KEYFRAMES", keyframes))


# ------------------------------------------------------------------------------------------------
# sim/commands.py
# ------------------------------------------------------------------------------------------------


def test_lockstep_an_answer_to_a_state_seconds_old_is_earlier_not_stale() -> None:
    """In lockstep no answer is stale by age (the limit is the int64 range): an answer to a state
    5 s back is EARLIER, one more answer to state 0 is EARLIER_START (the node neither counts nor
    logs it), and neither is reported as older than ``command_timeout``, which lockstep does not use.
    Mutant: the lockstep limit an int32 (2.1 s) instead of the int64 range."""
    dt, t0 = 1_000_000, 3 * 10**9
    rules = CommandRules(7, "lockstep", dt, t0, 0.05)
    k = 5_000  # 5 s of simulated time
    assert rules.offer(t0, np.zeros(7), k) is Verdict.EARLIER_START
    assert rules.offer(t0 + 100 * dt, np.zeros(7), k) is Verdict.EARLIER
    assert not rules.held and not rules.answered


# ------------------------------------------------------------------------------------------------
# sim/plant.py: which joints, and where their values live
# ------------------------------------------------------------------------------------------------


def test_only_hinge_and_slide_joints_are_driven_and_a_model_without_them_is_refused(tmp_path: Path) -> None:
    """A free joint is no torque-driven joint: the default order skips it, naming it is refused
    with the valid names, and a model with no hinge or slide at all is refused at load.
    Mutants: every joint type taken as a scalar joint; the no-joint check dropped."""
    plant = MujocoPlant(_model_file(tmp_path, _FREE_BODY_FIRST))
    assert plant.joint_names == ("hinge", "slide") == plant.model_joint_names
    with pytest.raises(ModelError, match=r"unknown joint name\(s\) \['free'\].*\['hinge', 'slide'\]"):
        MujocoPlant(tmp_path / "model.xml", joint_names=["free", "hinge"])
    only_free = _FREE_BODY_FIRST.split('<body name="link">')[0] + "</worldbody></mujoco>"
    with pytest.raises(ModelError, match="no hinge or slide joint to drive"):
        MujocoPlant(_model_file(tmp_path, only_free, "only_free.xml"))


def test_velocities_and_torques_go_to_the_joints_dofs_not_their_qpos_slots(tmp_path: Path) -> None:
    """With a free body before the arm a joint's dof address is not its qpos address: velocities
    are written to and read from ``qvel[dofadr]`` and an applied torque lands in
    ``qfrc_applied[dofadr]``, so the free body stays untouched.
    Mutant: the velocity addresses taken from ``jnt_qposadr``."""
    plant = MujocoPlant(_model_file(tmp_path, _FREE_BODY_FIRST))
    model = plant.model
    dof = [int(model.jnt_dofadr[model.joint(name).id]) for name in ("hinge", "slide")]
    qpos = [int(model.jnt_qposadr[model.joint(name).id]) for name in ("hinge", "slide")]
    assert dof != qpos  # the case under test
    plant.set_state([0.3, 0.1], [1.5, -0.5])
    np.testing.assert_array_equal(plant.data.qvel[dof], [1.5, -0.5])
    np.testing.assert_array_equal(plant.data.qpos[qpos], [0.3, 0.1])
    assert not plant.data.qvel[:6].any()  # the free body
    plant.set_torque([0.0, 2.0])  # the slide has no actuator: qfrc_applied
    plant.forward()
    np.testing.assert_array_equal(plant.data.qfrc_applied[dof], [0.0, 2.0])
    np.testing.assert_array_equal(plant.tau_applied, [0.0, 2.0])


def test_inverse_mass_blocks_set_the_driven_joints_positions_by_their_qpos_slots(tmp_path: Path) -> None:
    """``inverse_mass_matrices`` puts each row's positions at the driven joints' qpos addresses
    (not their dof addresses, which differ after a free body) and returns the driven block of
    ``M⁻¹``, as built here from MuJoCo directly.
    Mutant: the positions written at ``jnt_dofadr``."""
    plant = MujocoPlant(_model_file(tmp_path, _FREE_BODY_FIRST))
    model = plant.model
    values = np.array([[0.3, 0.1], [-1.2, 0.4]])
    got = plant.inverse_mass_matrices(values)
    data = mujoco.MjData(model)
    dof = np.array([model.jnt_dofadr[model.joint(name).id] for name in ("hinge", "slide")])
    for row, block in zip(values, got, strict=True):
        data.qpos[:] = model.qpos0
        data.qpos[[model.jnt_qposadr[model.joint(name).id] for name in ("hinge", "slide")]] = row
        mujoco.mj_forward(model, data)
        mass = np.zeros((model.nv, model.nv))
        mujoco.mj_fullM(model, data, mass)
        np.testing.assert_allclose(block, np.linalg.inv(mass)[np.ix_(dof, dof)], rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------------------------------------
# sim/plant.py: actuators it refuses, and how torques reach the joints
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("actuators", "fragment"),
    [
        ('<motor joint="a"/><motor joint="a"/><motor joint="b"/>', "driven by 2 actuators"),
        ('<general joint="a" gainprm="0"/><motor joint="b"/>', "fixed non-zero gain"),
        ('<general joint="a" biastype="user"/><motor joint="b"/>', "bias type the plant cannot null"),
    ],
    ids=["two-actuators", "zero-gain", "user-bias"],
)
def test_actuators_that_are_no_exact_torque_source_are_refused(
    tmp_path: Path, actuators: str, fragment: str
) -> None:
    """Two actuators on one joint, a zero gain (τ = gear·gain·ctrl cannot be solved for ctrl) and
    a bias other than none/affine (one the plant cannot null) are refused at load, naming the joint.
    Mutants: more than two actuators needed to refuse; the zero-gain check dropped; the bias-type
    check dropped."""
    with pytest.raises(ModelError, match=f"joint a .*{fragment}"):
        MujocoPlant(_two_joints(tmp_path, actuators))


def test_a_huge_torque_on_one_unlimited_motor_leaves_the_other_joints_powered(tmp_path: Path) -> None:
    """A motor without ctrlrange or forcerange gets at most ``mjMAXVAL`` (1e10) as its control: a
    larger one MuJoCo takes for a diverged control and zeroes every actuator's, so one finite
    but huge command (the simulator checks finiteness only) left all the other joints unpowered.
    Mutant: the control range not clipped to ``mjMAXVAL``."""
    plant = MujocoPlant(_two_joints(tmp_path, '<motor joint="a"/><motor joint="b"/>'))
    plant.set_torque([1e12, 1.0])
    plant.step()
    np.testing.assert_array_equal(plant.tau_applied, [mujoco.mjMAXVAL, 1.0])


def test_a_model_with_motors_on_only_some_joints_reports_the_applied_mode(tmp_path: Path) -> None:
    """``torque_mode`` is ``motor`` only when every driven joint has a motor; one joint without
    an actuator makes it ``applied``.
    Mutant: ``all`` → ``any`` in :attr:`torque_mode`."""
    plant = MujocoPlant(_two_joints(tmp_path, '<motor joint="a"/>'))
    assert plant.joint_modes == ("motor", "applied")
    assert plant.torque_mode == "applied"


def test_the_torque_command_is_the_one_given_not_the_callers_buffer(tmp_path: Path) -> None:
    """``set_torque`` holds a copy: a caller that reuses its array (the simulator's held command
    is rewritten in place by every accepted command) changes nothing until the next
    ``set_torque``, and a NaN written into that array later never reaches MuJoCo unchecked.
    Mutant: ``_vector`` returns the caller's array itself."""
    plant = MujocoPlant(_two_joints(tmp_path, '<motor joint="a"/><motor joint="b"/>'))
    tau = np.array([1.0, -2.0])
    plant.set_torque(tau)
    tau[:] = [np.nan, 50.0]
    plant.step()
    np.testing.assert_array_equal(plant.tau_applied, [1.0, -2.0])


def test_a_nulled_actuator_exerts_nothing_after_a_keyframe_sets_its_control(tmp_path: Path) -> None:
    """A keyframe's ``ctrl`` (Menagerie's Gen3 keys carry the home pose there for its position
    actuators) is overwritten with 0 on every nulled actuator: with the bias zeroed, a control of
    0.5 would push the joint with kp·0.5 = 50 N·m at zero command.
    Mutant: the nulled actuators' control not written to 0."""
    path = _two_joints(
        tmp_path,
        '<position joint="a" kp="100" kv="10"/><position joint="b" kp="100" kv="10"/>',
        '<keyframe><key name="k" qpos="0.2 -0.1" ctrl="0.5 -0.3"/></keyframe>',
    )
    plant = MujocoPlant(path)
    assert plant.torque_mode == "nulled_position"
    plant.reset("k")
    np.testing.assert_array_equal(plant.data.actuator_force, [0.0, 0.0])
    plant.step()
    np.testing.assert_array_equal(plant.tau_applied, [0.0, 0.0])
    np.testing.assert_array_equal(plant.qacc, [0.0, 0.0])


def test_zero_steps_apply_the_command_without_advancing_time(plant_scene: MujocoPlant) -> None:
    """``step(0)`` is allowed (``n >= 0``): the command is written, nothing is integrated;
    ``step(-1)`` is refused.
    Mutant: ``n < 0`` → ``n <= 0``."""
    plant_scene.set_torque(np.full(7, 0.5))
    plant_scene.step(0)
    assert plant_scene.time == 0.0
    np.testing.assert_array_equal(plant_scene.data.ctrl, np.full(7, 0.5))
    with pytest.raises(StateError, match=">= 0"):
        plant_scene.step(-1)


def test_the_dynamics_residual_counts_external_body_wrenches(plant_scene: MujocoPlant) -> None:
    """``dynamics_residual`` rebuilds q̈ with ``Jᵀ·xfrc_applied``: a wrench pushed on a link (a
    perturbation from the MuJoCo viewer, a test's disturbance) leaves the residual at rounding.
    Mutant: the ``xfrc_applied`` term dropped (a residual of ~590 rad/s² here)."""
    plant_scene.reset("home")
    body = plant_scene.model.nbody - 1
    plant_scene.data.xfrc_applied[body] = [3.0, -2.0, 5.0, 0.4, -0.3, 0.2]
    assert plant_scene.dynamics_residual() < 1e-9


@pytest.fixture
def plant_scene() -> MujocoPlant:
    """The Gen3 scene (motors on every joint)."""
    return MujocoPlant(SCENE)


# ------------------------------------------------------------------------------------------------
# joint_order.py
# ------------------------------------------------------------------------------------------------


def _params_file(tmp_path: Path, sections: dict[str, dict[str, object]], name: str = "own.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump({node: {"ros__parameters": p} for node, p in sections.items()}))
    return path


def test_a_joint_order_given_in_a_file_alone_is_compared_with_the_other_nodes_default(tmp_path: Path) -> None:
    """With only the simulator's ``joints`` in the file (no ``mjcf``, no controller section), the
    parameters left out take the nodes' defaults, and the reversed order is reported.
    Mutant: the parameters a file does not set passed on as ``None`` (the node's check refused
    them, and the orders were not compared)."""
    from torque_ctrl_ros.joint_order import joint_order_error

    own = _params_file(tmp_path, {"sim_node": {"joints": GEN3_JOINTS[::-1]}})
    error = joint_order_error([own])
    assert f"sim_node.joints {GEN3_JOINTS[::-1]} and controller_node.joints {GEN3_JOINTS}" in error


def _renamed_urdf() -> str:
    """gen3.urdf with joint_7 named ``wrist_roll``: the controller's order then ends in it."""
    text = URDF.read_text()
    assert text.count('name="joint_7"') == 1
    return text.replace('name="joint_7"', 'name="wrist_roll"')


def test_the_controllers_order_comes_from_the_model_it_is_given(tmp_path: Path) -> None:
    """The controller's order is its model's: ``robot_description`` from the file, and the
    ``model_file`` argument (the launch file's) replacing both. Either model naming joint_7
    otherwise is reported against the simulator's joint_1..7.
    Mutants: ``robot_description`` ignored (``model_file`` read instead); the ``model_file``
    argument ignored."""
    from torque_ctrl_ros.joint_order import joint_order_error

    renamed = [*GEN3_JOINTS[:6], "wrist_roll"]
    described = _params_file(tmp_path, {"controller_node": {"robot_description": _renamed_urdf()}})
    assert f"controller_node.joints {renamed} (unset" in joint_order_error([described])
    urdf = tmp_path / "renamed.urdf"
    urdf.write_text(_renamed_urdf())
    empty = _params_file(tmp_path, {"sim_node": {"keyframe": "home"}}, "empty.yaml")
    assert joint_order_error([empty]) == ""
    assert f"controller_node.joints {renamed} (unset" in joint_order_error([empty], model_file=str(urdf))


# ------------------------------------------------------------------------------------------------
# paths.py
# ------------------------------------------------------------------------------------------------


def test_empty_ament_prefix_entries_are_no_share_candidates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An empty entry of ``AMENT_PREFIX_PATH`` (a leading, trailing or doubled ``:``) is skipped:
    taken as ``Path("")`` it would look in ``./share/torque_ctrl_ros`` of whatever the working
    directory is.
    Mutant: the empty entries kept."""
    from torque_ctrl_ros.paths import share_dir_candidates

    monkeypatch.setenv("AMENT_PREFIX_PATH", f":{tmp_path / 'ws'}::")
    candidates = share_dir_candidates(tmp_path / "site" / "torque_ctrl_ros")
    assert all(c.is_absolute() for c in candidates), candidates
    assert tmp_path / "ws" / "share" / "torque_ctrl_ros" in candidates


def test_the_share_dir_is_the_source_tree_only_with_both_its_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Next to the package, a folder with ``mjcf/`` but no ``urdf/`` is no source tree (a
    ``site-packages`` holding another project's ``mjcf``); and a candidate ``share`` directory
    without ``mjcf/`` is passed over for the next one that has it.
    Mutants: ``and`` → ``or`` in the source-tree check; a candidate taken for existing alone."""
    from torque_ctrl_ros.paths import find_share_dir

    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    site = tmp_path / "lib" / "python3.11" / "site-packages"
    package = site / "torque_ctrl_ros"
    package.mkdir(parents=True)
    (site / "mjcf").mkdir()
    (site / "share" / "torque_ctrl_ros" / "config").mkdir(parents=True)  # first candidate, no mjcf
    installed = tmp_path / "share" / "torque_ctrl_ros"  # three levels up: the colcon layout
    (installed / "mjcf").mkdir(parents=True)
    assert find_share_dir(package) == installed


# ------------------------------------------------------------------------------------------------
# nodes/scheduling.py (the process's policy and mask are never changed here)
# ------------------------------------------------------------------------------------------------


def test_rt_priority_99_is_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    """99, SCHED_FIFO's top priority, is in the accepted range 0..99.
    Mutant: ``priority <= 99`` → ``< 99``."""
    from torque_ctrl_ros.nodes import scheduling

    asked: list[int] = []
    monkeypatch.setattr(
        os, "sched_setscheduler", lambda pid, policy, param: asked.append(param.sched_priority)
    )
    monkeypatch.setattr(scheduling, "_all_threads", lambda apply: None)
    assert scheduling.request_realtime({scheduling.RT_PRIORITY_ENV: "99"}) == "fifo:99"
    assert asked == [99]


def test_cpus_partly_outside_the_allowed_set_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every CPU asked for must be one the process may use: ``1-2`` with only 0 and 1 allowed is
    refused naming CPU 2, before any thread is pinned.
    Mutant: the subset check weakened to an overlap."""
    from torque_ctrl_ros.nodes import scheduling

    pinned: list[object] = []
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(scheduling, "_all_threads", lambda apply: pinned.append(apply))
    with pytest.raises(ConfigError, match=r"CPUs \[2\] are not available"):
        scheduling.request_cpus({scheduling.CPUS_ENV: "1-2"})
    assert pinned == []


def test_auto_placement_on_a_single_cpu_pins_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """``auto`` on a process allowed one CPU leaves both nodes unpinned, as documented.
    Mutant: fewer than one CPU needed to fall back (IndexError on the second CPU)."""
    from torque_ctrl_ros.nodes.scheduling import Placement

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3})
    assert Placement.from_spec(10, "auto") == Placement(10)


# ------------------------------------------------------------------------------------------------
# nodes/wire.py, nodes/conversions.py
# ------------------------------------------------------------------------------------------------


@requires_rclpy
def test_a_command_claiming_more_dimensions_than_its_12_byte_slots_overclaims() -> None:
    """Each layout dimension takes at least 12 bytes (string length, size, stride): a command
    claiming one more than its bytes after the count hold in 12-byte slots overclaims, the real
    command does not. That is the bound the sim fuzz's model applies (test_sim_fuzz.read_bytes);
    claims just past it reach rclpy otherwise, which refuses them too, but counted as rclpy reads.
    Mutant: 8 bytes a dimension."""
    from torque_ctrl_ros.nodes.wire import CommandWire

    raw = bytearray(CommandWire(7).encode(np.zeros(7), 5 * 10**9))
    assert not CommandWire.overclaims(bytes(raw))
    slots = (len(raw) - 8) // 12
    for dims, over in ((slots, False), (slots + 1, True)):
        raw[4:8] = dims.to_bytes(4, "little")
        assert CommandWire.overclaims(bytes(raw)) is over, dims


@requires_rclpy
def test_a_stamp_label_with_non_ascii_nanosecond_digits_is_a_state_error() -> None:
    """The nine nanosecond digits of a ``joints@`` label are ASCII, as the encoders write them:
    Arabic-Indic digits (which ``str.isdigit`` and ``int`` take) make a malformed label, a
    StateError, not a stamp read from digits no encoder writes.
    Mutant: ``nsec.isascii()`` dropped."""
    from torque_ctrl_ros.nodes.conversions import label_stamp_ns

    with pytest.raises(StateError, match="expected joints@<sec>.<nanosec>"):
        label_stamp_ns("joints@5.\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669")


# ------------------------------------------------------------------------------------------------
# nodes/common.py: /diagnostics values, the throttled log
# ------------------------------------------------------------------------------------------------


@requires_rclpy
def test_diagnostic_values_are_floats_to_six_significant_digits() -> None:
    """/diagnostics shows floats with 6 significant digits (``%.6g``), other values as ``str``.
    Mutant: floats as ``str`` (17 digits)."""
    from torque_ctrl_ros.nodes.common import status

    out = status("sim", "gen3", b"\x00", "ok", {"latency_ms": 1.0 / 3.0, "steps": 12, "big": 1234567.0})
    assert [(v.key, v.value) for v in out.values] == [
        ("latency_ms", "0.333333"),
        ("steps", "12"),
        ("big", "1.23457e+06"),
    ]


@requires_rclpy
def test_flush_writes_the_held_messages_in_the_order_of_their_last_hold() -> None:
    """``flush`` writes each key's last held message, keys in the order their last message was
    held back: the watchdog's latest transition comes last in the log.
    Mutant: keys kept in the order of their first hold."""
    from torque_ctrl_ros.nodes.common import ThrottledLog

    logger = LineLogger()
    log = ThrottledLog(logger, period=3600.0)
    for key in ("a", "b"):
        assert log.warning(key, f"{key} first")
    assert not log.warning("a", "a held 1")
    assert not log.error("b", "b held")
    assert not log.warning("a", "a held 2")
    logger.lines.clear()
    log.flush()
    assert logger.lines == [
        ("error", "b held"),
        ("warning", "a held 2 (and 1 more since the last such message)"),
    ]


# ------------------------------------------------------------------------------------------------
# nodes/sim_node.py: step_count
# ------------------------------------------------------------------------------------------------


@requires_rclpy
def test_a_duration_under_half_a_step_is_refused_not_run_until_stopped() -> None:
    """A positive ``duration`` that rounds to 0 steps is refused: 0 steps means "until stopped",
    so a 0.4 ms run would never end.
    Mutant: the zero-steps check dropped."""
    from torque_ctrl_ros.nodes.params import sim_node_config
    from torque_ctrl_ros.nodes.sim_node import step_count

    with pytest.raises(ConfigError, match=r"duration: 0\.0004 s is less than half a step"):
        step_count(sim_node_config({"duration": 0.0004}), 0.001)
    assert step_count(sim_node_config({"duration": 0.0005}), 0.001) == 1


@pytest.mark.parametrize(
    ("key_time", "duration", "refused"),
    [(2.2e9, 0.0, True), (2.0e9, 2.0e8, True), (-1.0, 1.0, True), (1.0e6, 10.0, False)],
)
def test_a_run_whose_stamps_leave_int32_seconds_is_refused_at_start(
    tmp_path: Path, key_time: float, duration: float, refused: bool
) -> None:
    """The keyframe's time starts the states' stamps, which builtin_interfaces/Time holds in int32
    seconds: a run from 2.2e9 s (or reaching past 2^31 s, or from before 0) is refused at start
    naming the keyframe, not left to fail at its first state (the CDR writer's struct.error) or
    to send stamps wrapped to negative seconds (rclpy's message). (Mutant: no check.)"""
    from torque_ctrl_ros.nodes.params import sim_node_config
    from torque_ctrl_ros.nodes.sim_node import load_plant

    mjcf = Path(__file__).resolve().parent.parent / "mjcf"
    scene = (mjcf / "scene.xml").read_text()
    scene = scene.replace('<key name="home" ', f'<key name="home" time="{key_time!r}" ', 1)
    assert f'time="{key_time!r}"' in scene
    (tmp_path / "scene.xml").write_text(scene)
    (tmp_path / "gen3.xml").write_text((mjcf / "gen3.xml").read_text())
    cfg = sim_node_config({"mjcf": str(tmp_path / "scene.xml"), "keyframe": "home", "duration": duration})
    if not refused:
        assert load_plant(cfg, "sim_node").time == key_time
        return
    with pytest.raises(ModelError, match=r"sim_node\.keyframe: .* stamps must lie in \[0, 2\^31\) s"):
        load_plant(cfg, "sim_node")
