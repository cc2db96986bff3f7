"""MujocoPlant: exact torque plant with motors, sign conventions, clamping, errors, and the
nulled position actuators (exact under every integrator).

Run with ``-s`` to see the measured figures.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import mujoco
import numpy as np
import pytest

from torque_ctrl_ros.core.errors import FrameNotFoundError, ModelError, SimulationError, StateError
from torque_ctrl_ros.sim.plant import MujocoPlant

ROOT = Path(__file__).resolve().parents[1]
SCENE = ROOT / "mjcf" / "scene.xml"
ARM = ROOT / "mjcf" / "gen3.xml"
JOINTS = tuple(f"joint_{i}" for i in range(1, 8))
EFFORT = np.array([39.0] * 4 + [9.0] * 3)
HOME = np.array([0, 0.26179939, 3.14159265, -2.26892803, 0, 0.95993109, 1.57079633])
# Menagerie kinova_gen3 position actuators.
KP = np.array([2000.0] * 4 + [500.0] * 3)
KV = np.array([100.0] * 4 + [50.0] * 3)
FORCERANGE = np.array([105.0] * 4 + [52.0] * 3)


def _mass_matrix(plant: MujocoPlant) -> np.ndarray:
    mass = np.zeros((plant.model.nv, plant.model.nv))
    mujoco.mj_fullM(plant.model, plant.data, mass)
    return mass


def _random_state(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    limits = np.array([np.pi, 2.24, np.pi, 2.57, np.pi, 2.09, np.pi])
    return rng.uniform(-limits, limits), rng.uniform(-1.5, 1.5, 7)


def _position_variant(directory: Path, integrator: str) -> Path:
    """mjcf/gen3.xml with Menagerie-style position actuators and the given integrator."""
    tree = ET.parse(ARM)
    root = tree.getroot()
    option = root.find("option")
    assert option is not None
    option.set("integrator", integrator)
    ranges = {j.get("name"): j.get("range") for j in root.iter("joint") if j.get("name")}
    actuators = root.find("actuator")
    assert actuators is not None
    for i, motor in enumerate(list(actuators)):
        actuators.remove(motor)
        joint = motor.get("joint")
        ET.SubElement(
            actuators,
            "position",
            name=str(motor.get("name")),
            joint=str(joint),
            kp=repr(float(KP[i])),
            kv=repr(float(KV[i])),
            ctrlrange=ranges.get(joint) or "-6.2831 6.2831",
            forcerange=f"{-float(FORCERANGE[i])!r} {float(FORCERANGE[i])!r}",
        )
    path = directory / f"gen3_position_{integrator}.xml"
    tree.write(path)
    return path


def _motor_variant(directory: Path, integrator: str) -> Path:
    tree = ET.parse(ARM)
    option = tree.getroot().find("option")
    assert option is not None
    option.set("integrator", integrator)
    path = directory / f"gen3_motor_{integrator}.xml"
    tree.write(path)
    return path


def _actuation_disabled_variant(directory: Path) -> Path:
    """mjcf/gen3.xml with ``<flag actuation="disable"/>``: its motors exert no force."""
    tree = ET.parse(ARM)
    option = tree.getroot().find("option")
    assert option is not None
    ET.SubElement(option, "flag", actuation="disable")
    path = directory / "gen3_actuation_disabled.xml"
    tree.write(path)
    return path


@pytest.fixture
def plant() -> MujocoPlant:
    return MujocoPlant(SCENE)


# (a) exact torque plant ------------------------------------------------------------------------


def test_motor_plant_is_exact(plant: MujocoPlant) -> None:
    """M·q̈ = τ − c: MuJoCo's qacc equals M⁻¹(τ − qfrc_bias), and tau_applied equals τ."""
    assert plant.torque_mode == "motor"
    assert plant.joint_names == JOINTS and plant.n == 7
    rng = np.random.default_rng(1)
    worst_acc = worst_tau = worst_torque = largest_acc = 0.0
    used = 0
    for _ in range(200):
        q, v = _random_state(rng)
        tau = rng.uniform(-0.9 * EFFORT, 0.9 * EFFORT)
        plant.set_state(q, v)
        plant.set_torque(tau)
        plant.forward()
        if plant.data.ncon or plant.data.nefc:  # touching the floor or a limit: not free motion
            continue
        used += 1
        mass = _mass_matrix(plant)
        expected = np.linalg.solve(mass, tau - plant.data.qfrc_bias)
        worst_acc = max(worst_acc, float(np.max(np.abs(plant.qacc - expected))))
        largest_acc = max(largest_acc, float(np.max(np.abs(expected))))
        torque_error = mass @ plant.qacc - (tau - plant.data.qfrc_bias)
        worst_torque = max(worst_torque, float(np.max(np.abs(torque_error))))
        worst_tau = max(worst_tau, float(np.max(np.abs(plant.tau_applied - tau))))
        plant.step()
        worst_tau = max(worst_tau, float(np.max(np.abs(plant.tau_applied - tau))))
    print(
        f"\nmotor plant over {used} free states: max |qacc - M^-1(tau - c)| = {worst_acc:.2e} rad/s^2 "
        f"(|qacc| up to {largest_acc:.1e}), max |M qacc - (tau - c)| = {worst_torque:.2e} N*m, "
        f"max |tau_applied - tau| = {worst_tau:.2e} N*m"
    )
    assert used >= 100
    # Light wrist links under up to 8 N*m give |qacc| ~ 2e4 rad/s^2: the measured 3e-10 is a
    # relative error of ~1e-14. The torque-space residual is the better-conditioned check.
    assert worst_acc <= 1e-9
    assert worst_torque <= 1e-9
    assert worst_tau <= 1e-12


def test_joint_order_follows_joint_names() -> None:
    order = tuple(reversed(JOINTS))
    plant = MujocoPlant(SCENE, joint_names=order)
    assert plant.joint_names == order
    plant.reset("home")
    np.testing.assert_array_equal(plant.q, HOME[::-1])
    natural = MujocoPlant(SCENE)
    natural.reset("home")
    np.testing.assert_array_equal(plant.gravity(), natural.gravity()[::-1])  # the safe torque's hold
    tau = np.arange(1.0, 8.0)
    plant.set_torque(tau)
    plant.step()
    np.testing.assert_allclose(plant.tau_applied, tau, atol=1e-12)
    np.testing.assert_allclose(plant.data.ctrl, tau[::-1], atol=1e-12)


# (b) sign convention -----------------------------------------------------------------------------


def _hold(plant: MujocoPlant, seconds: float, through_applied: bool) -> float:
    plant.reset("home")
    q0 = plant.q
    for _ in range(round(seconds / plant.timestep)):
        plant.forward()
        bias = plant.data.qfrc_bias.copy()
        if through_applied:
            plant.data.qfrc_applied[:] = bias
        else:
            plant.set_torque(bias)
        plant.step()
    plant.data.qfrc_applied[:] = 0.0
    return float(np.max(np.abs(plant.q - q0)))


def test_bias_torque_holds_pose(plant: MujocoPlant) -> None:
    """τ = qfrc_bias (gravity at rest) cancels gravity, via the motors or via qfrc_applied."""
    drift_motor = _hold(plant, 1.0, through_applied=False)
    drift_applied = _hold(plant, 1.0, through_applied=True)
    plant.reset("home")
    plant.step(200)
    fall = float(np.max(np.abs(plant.q - HOME)))
    print(
        f"\nhold 1 s at home: drift {drift_motor:.2e} rad (motors), {drift_applied:.2e} rad "
        f"(qfrc_applied); zero torque moves {fall:.3f} rad in 0.2 s"
    )
    assert drift_motor < 1e-9
    assert drift_applied < 1e-9
    assert fall > 1e-2


# (c) clamping ------------------------------------------------------------------------------------


def test_effort_limit_is_reported(plant: MujocoPlant) -> None:
    plant.reset("home")
    command = np.array([100.0, -100.0, 39.0, -50.0, 9.0, 20.0, -9.5])
    plant.set_torque(command)
    plant.step()
    np.testing.assert_array_equal(plant.tau_applied, np.clip(command, -EFFORT, EFFORT))


# (d) errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tau", "fragment"),
    [
        (np.zeros(6), "7 entries"),
        (np.zeros((7, 1)), "7 entries"),
        ([0, 0, 0, np.nan, 0, 0, 0], "not finite at ['joint_4']"),
        ([0, 0, 0, 0, 0, 0, np.inf], "not finite at ['joint_7']"),
        (["a"] * 7, "must be 7 numbers"),
    ],
)
def test_bad_torque_raises_state_error(plant: MujocoPlant, tau: object, fragment: str) -> None:
    with pytest.raises(StateError) as info:
        plant.set_torque(tau)  # type: ignore[arg-type]
    assert fragment in str(info.value)


def test_bad_state_raises_state_error(plant: MujocoPlant) -> None:
    with pytest.raises(StateError, match="q must have 7 entries"):
        plant.set_state(np.zeros(3), np.zeros(7))
    with pytest.raises(StateError, match="v is not finite"):
        plant.set_state(np.zeros(7), [np.nan] * 7)
    with pytest.raises(StateError):
        plant.step(-1)


def test_a_diverged_simulation_raises_instead_of_resetting(plant: MujocoPlant) -> None:
    """The full effort limit held on every joint spins the free wrist up until MuJoCo flags the
    acceleration (after ~0.17 s). Its automatic reset would go on from the zero pose at t = 0."""
    plant.reset("home")
    plant.set_torque(EFFORT)
    with pytest.raises(SimulationError, match="diverged at t = 0.1[0-9]+ s .*BADQACC"):
        for _ in range(2000):
            plant.step()
    assert 0.1 < plant.time < 0.2  # not reset to 0
    plant.reset("home")  # a reset by the caller starts over cleanly
    plant.set_torque(np.zeros(7))
    plant.step(10)
    assert plant.time == pytest.approx(0.01)


def test_a_diverged_velocity_alone_raises_at_the_step_that_flags_it(plant: MujocoPlant) -> None:
    """MuJoCo checks positions, velocities and accelerations apart: a velocity past its bound while
    the positions are still finite is a divergence already, not one step of several."""
    plant.reset("home")
    plant.data.qvel[6] = 1e11  # joint_7, spun up from outside the plant
    with pytest.raises(SimulationError, match="BADQVEL"):
        plant.step()


def test_model_errors_list_valid_names(plant: MujocoPlant, tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=r"unknown keyframe 'rest'.*\['home', 'retract'\]"):
        plant.reset("rest")
    with pytest.raises(ModelError, match=r"unknown joint name\(s\) \['joint_8'\].*'joint_1'.*'joint_7'"):
        MujocoPlant(SCENE, joint_names=["joint_1", "joint_8"])
    with pytest.raises(ModelError, match="more than once"):
        MujocoPlant(SCENE, joint_names=["joint_1", "joint_1"])
    with pytest.raises(ModelError, match="not found"):
        MujocoPlant(tmp_path / "missing.xml")
    broken = tmp_path / "broken.xml"
    broken.write_text("<mujoco><worldbody><body></mujoco>")
    with pytest.raises(ModelError, match="cannot load"):
        MujocoPlant(broken)
    with pytest.raises(FrameNotFoundError, match="end_effector_link"):
        plant.site_pose("tcp")


def test_site_pose_follows_q(plant: MujocoPlant) -> None:
    plant.reset("home")
    plant.set_torque(np.full(7, 2.0))
    plant.step(50)
    pos, rot = plant.site_pose()
    check = mujoco.MjData(plant.model)
    check.qpos[:] = plant.q
    mujoco.mj_kinematics(plant.model, check)
    np.testing.assert_array_equal(pos, check.site_xpos[0])
    np.testing.assert_array_equal(rot, check.site_xmat[0].reshape(3, 3))


# (e) equation of motion --------------------------------------------------------------------------


def _fall_residuals(plant: MujocoPlant) -> tuple[float, float, int]:
    """Zero torque from ``retract`` for 1.5 s: the arm hits its joint limits and the floor.

    Returns the largest residual on steps with contacts, on steps without, and the number of
    steps with contacts.
    """
    plant.reset("retract")
    plant.set_torque(np.zeros(7))
    with_contact = without_contact = 0.0
    contact_steps = 0
    for _ in range(1500):
        residual = plant.dynamics_residual()
        if plant.data.ncon:
            contact_steps += 1
            with_contact = max(with_contact, residual)
        else:
            without_contact = max(without_contact, residual)
        plant.step()
    return with_contact, without_contact, contact_steps


def test_dynamics_residual_small_every_step(plant: MujocoPlant, tmp_path: Path) -> None:
    """Free motion with random torques, nulled position actuators, a fall onto limits and floor.

    With contacts the residual measures the constraint solver's convergence, not the plant: at
    MuJoCo's default ``tolerance`` (1e-8) Newton stops after one iteration on the first floor
    contact and qacc misses M⁻¹(... + J^T·f) by ~6e-3 rad/s²; at 1e-10 the residual is ~1e-11.
    """
    rng = np.random.default_rng(3)
    plant.reset("home")
    worst_free = 0.0
    for _ in range(300):
        plant.set_torque(plant.data.qfrc_bias + rng.uniform(-2.0, 2.0, 7))
        worst_free = max(worst_free, plant.dynamics_residual())
        plant.step()

    nulled = MujocoPlant(_position_variant(tmp_path, "implicitfast"))
    nulled.reset()
    worst_nulled = 0.0
    for _ in range(300):
        nulled.set_torque(rng.uniform(-5.0, 5.0, 7))
        worst_nulled = max(worst_nulled, nulled.dynamics_residual())
        nulled.step()

    default_contact, limits_only, contact_steps = _fall_residuals(plant)
    plant.model.opt.tolerance = 1e-10
    tight_contact, tight_limits, _ = _fall_residuals(plant)
    print(
        f"\ndynamics residual (rad/s^2): free {worst_free:.2e}, nulled position actuators "
        f"{worst_nulled:.2e}, fall: joint limits only {limits_only:.2e}, {contact_steps} steps with "
        f"floor contacts {default_contact:.2e} at solver tolerance 1e-8, {tight_contact:.2e} at 1e-10"
    )
    assert contact_steps > 100  # the fall did reach the floor
    assert max(worst_free, worst_nulled, limits_only, tight_contact, tight_limits) <= 1e-9
    assert default_contact < 0.1


# (f) position-actuator nulling study ------------------------------------------------------------


def _one_step(path: Path, q0: np.ndarray, v0: np.ndarray, a: np.ndarray) -> tuple[MujocoPlant, np.ndarray]:
    """τ = c + M·a from (q0, v0), one step; returns the plant and M."""
    plant = MujocoPlant(path)
    plant.set_state(q0, v0)
    mass = _mass_matrix(plant)
    plant.set_torque(plant.data.qfrc_bias + mass @ a)
    plant.step()
    return plant, mass


def test_nulled_position_actuators_are_an_exact_torque_plant(tmp_path: Path) -> None:
    """With their bias zeroed in the plant's model, position actuators add nothing, under every
    integrator: one step equals the motor plant's. (Nulled through the control alone, the
    velocity derivative −kv stayed and implicitfast stepped with (M + h·Kv)⁻¹: 0.68–0.80 of the
    commanded acceleration on joints 1–4, −0.13 to 0.19 on the wrist.)"""
    q0, v0, a = HOME, np.full(7, 0.3), np.ones(7)
    h = 0.001
    for integrator in ("Euler", "implicitfast", "implicit", "RK4"):
        motor, _ = _one_step(_motor_variant(tmp_path, integrator), q0, v0, a)
        nulled, _ = _one_step(_position_variant(tmp_path, integrator), q0, v0, a)
        assert motor.torque_mode == "motor" and nulled.torque_mode == "nulled_position"
        assert motor.timestep == nulled.timestep == h
        if integrator in ("Euler", "implicitfast"):  # no velocity derivative of c in the step
            np.testing.assert_allclose(motor.v, v0 + h * a, rtol=0, atol=1e-12)
        error = float(np.max(np.abs(nulled.v - motor.v)))
        force = float(np.max(np.abs(nulled.data.actuator_force)))
        print(
            f"\n{integrator}: max |v_nulled - v_motor| = {error:.1e} rad/s, "
            f"max |actuator_force| = {force:.1e}"
        )
        # Measured 0 here for all four; 1e-9 leaves room for BLAS changes.
        assert error <= 1e-9 and force <= 1e-9, integrator


def test_a_nulled_actuator_exerts_no_force_anywhere(tmp_path: Path) -> None:
    """Near a limit, moving outwards (where a position actuator pushes hardest): zero force."""
    plant = MujocoPlant(_position_variant(tmp_path, "Euler"))
    q = HOME.copy()
    q[1] = 2.2
    plant.set_state(q, np.full(7, 1.0))
    assert not plant.data.ctrl.any() and not plant.model.actuator_biasprm.any()
    assert np.max(np.abs(plant.data.actuator_force)) <= 1e-9
    assert not np.any(plant.model.actuator_ctrllimited)
    # The torque through qfrc_applied is clamped to the position actuator's force range.
    plant.set_torque(np.full(7, 200.0))
    plant.step()
    np.testing.assert_allclose(plant.tau_applied, FORCERANGE, rtol=0, atol=1e-9)


_ONE_JOINT = """<mujoco><option integrator="Euler" gravity="0 0 0"/><worldbody><body>
<inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/><joint name="j" type="hinge" axis="0 0 1" JOINT/>
</body></worldbody><actuator>ACTUATOR</actuator></mujoco>"""


@pytest.mark.parametrize(
    ("actuator", "fragment"),
    [
        ('<general joint="j" dyntype="filter" dynprm="0.1"/>', "activation dynamics"),
        ('<motor joint="j" gear="0"/>', "gear 0"),
        ('<motor joint="j" nsample="3" delay="0.002"/>', "delays its control"),
        ('<motor joint="j" damping="5"/>', "damping or armature"),
        ('<position joint="j" kp="100" kv="10" damping="5"/>', "damping or armature"),
        ('<motor joint="j" armature="0.1"/>', "damping or armature"),
    ],
    ids=["activation", "gear-0", "delay", "motor-damping", "position-damping", "armature"],
)
def test_an_actuator_that_is_no_exact_torque_source_is_refused(
    tmp_path: Path, actuator: str, fragment: str
) -> None:
    """MuJoCo 4's actuator delay, damping and armature are refused, not taken silently: the delay
    applies every torque 2 ms late, the damping of a nulled position actuator puts −4 N·m on the
    joint at zero command while ``tau_applied`` reads 0."""
    path = tmp_path / "one_joint.xml"
    path.write_text(_ONE_JOINT.replace("JOINT", "").replace("ACTUATOR", actuator))
    with pytest.raises(ModelError, match=f"actuator .* on joint j .*{fragment}"):
        MujocoPlant(path)


def test_an_actuator_history_without_delay_is_accepted_and_acts_at_once(tmp_path: Path) -> None:
    """``nsample`` alone (delay 0) keeps a history of the control but delays nothing: accepted, and
    each step's torque acts in that step (it had been refused as a delay)."""
    path = tmp_path / "one_joint.xml"
    path.write_text(_ONE_JOINT.replace("JOINT", "").replace("ACTUATOR", '<motor joint="j" nsample="3"/>'))
    plant = MujocoPlant(path)
    for tau in (2.0, -1.0, 0.5):
        plant.set_torque(np.array([tau]))
        plant.step()
        assert plant.tau_applied[0] == tau and plant.data.qacc[0] == pytest.approx(tau, abs=1e-12)


def test_a_model_with_actuation_disabled_gets_every_torque_through_qfrc_applied(tmp_path: Path) -> None:
    """``<flag actuation="disable"/>`` has MuJoCo ignore ctrl: the torque goes into qfrc_applied,
    clamped as the motors would clamp it, and steps exactly as the motor plant does. (Written
    into ctrl, every torque was silently lost: the safe hold let the arm drop 3 rad in 0.5 s.)"""
    disabled = MujocoPlant(_actuation_disabled_variant(tmp_path))
    motor = MujocoPlant(_motor_variant(tmp_path, "implicitfast"))
    assert disabled.actuation_disabled and not motor.actuation_disabled
    assert disabled.torque_mode == "applied" and disabled.joint_modes == ("applied",) * 7
    rng = np.random.default_rng(7)
    for _ in range(20):
        q, v = _random_state(rng)
        tau = rng.uniform(-2.0 * EFFORT, 2.0 * EFFORT)  # past the limits on some joints
        for plant in (disabled, motor):
            plant.set_state(q, v)
            plant.set_torque(tau)
            plant.step()
        np.testing.assert_array_equal(disabled.tau_applied, np.clip(tau, -EFFORT, EFFORT))
        np.testing.assert_allclose(disabled.tau_applied, motor.tau_applied, rtol=0, atol=1e-12)
        np.testing.assert_allclose(disabled.v, motor.v, rtol=0, atol=1e-12)
        assert not disabled.data.qfrc_actuator.any()
    # The safe torque's hold holds the arm.
    disabled.set_state(HOME, np.zeros(7))
    for _ in range(500):
        disabled.set_torque(disabled.safe_torque(np.zeros(7), hold=True))
        disabled.step()
    assert np.max(np.abs(disabled.q - HOME)) < 1e-9


@pytest.mark.parametrize("actuation", ["enabled", "disabled"])
@pytest.mark.parametrize(
    ("joint", "actuator", "limits"),
    [
        # MuJoCo's joint torque is gear·clamp(force, forcerange): with gear −2, [−10, 20].
        ("", '<motor joint="j" gear="-2" forcerange="-10 5"/>', (-10.0, 20.0)),
        ("", '<position joint="j" gear="-2" kp="100" kv="10" forcerange="-10 5"/>', (-10.0, 20.0)),
        # A motor's control range: gear·gain·ctrlrange, here [−6, 4].
        ("", '<general joint="j" gear="2" gainprm="-1" ctrlrange="-2 3"/>', (-6.0, 4.0)),
        # The joint's own actuatorfrcrange bounds whatever drives it.
        ('actuatorfrcrange="-3 3"', '<motor joint="j"/>', (-3.0, 3.0)),
        ('actuatorfrcrange="-3 3"', '<position joint="j" kp="100" kv="10"/>', (-3.0, 3.0)),
        ('actuatorfrcrange="-3 3"', "", (-3.0, 3.0)),
        # A motor's gain scales its control too: ctrl = τ/(gear·gain).
        ("", '<general joint="j" gear="2" gainprm="5"/>', (-np.inf, np.inf)),
    ],
    ids=[
        "motor-negative-gear",
        "nulled-negative-gear",
        "motor-ctrlrange",
        "motor-joint-range",
        "nulled-joint-range",
        "applied-joint-range",
        "motor-gear-and-gain",
    ],
)
def test_every_torque_mode_applies_what_the_model_allows(
    tmp_path: Path, joint: str, actuator: str, limits: tuple[float, float], actuation: str
) -> None:
    """Driven by its actuator, or with actuation disabled through qfrc_applied, clamped alike."""
    text = _ONE_JOINT.replace("JOINT", joint).replace("ACTUATOR", actuator)
    if actuation == "disabled":
        text = text.replace('gravity="0 0 0"/>', 'gravity="0 0 0"><flag actuation="disable"/></option>')
    path = tmp_path / "one_joint.xml"
    path.write_text(text)
    plant = MujocoPlant(path)
    if actuation == "disabled":
        assert plant.joint_modes == ("applied",)
    for tau, expected in ((15.0, min(15.0, limits[1])), (-15.0, max(-15.0, limits[0]))):
        plant.reset()
        plant.set_torque([tau])
        plant.step()
        assert plant.tau_applied[0] == pytest.approx(expected, abs=1e-12), plant.joint_modes
        assert plant.qacc[0] == pytest.approx(expected, abs=1e-9)  # unit inertia, no gravity


def test_the_residual_counts_the_joints_own_damping(tmp_path: Path) -> None:
    """Joint damping is the model's physics (an actuator's own is refused): the residual rebuilds
    q̈ with it (without, 3 rad/s² at damping 3 and 1 rad/s)."""
    path = tmp_path / "damped.xml"
    path.write_text(_ONE_JOINT.replace("JOINT", 'damping="3"').replace("ACTUATOR", '<motor joint="j"/>'))
    plant = MujocoPlant(path)
    plant.set_state([0.0], [1.0])
    plant.set_torque([0.5])
    assert plant.dynamics_residual() < 1e-12
    plant.step()
    assert plant.qacc[0] == pytest.approx(0.5 - 3.0)  # I = 1 kg·m²


def test_the_plant_checks_damping_on_the_configurations_the_robot_model_uses(plant: MujocoPlant) -> None:
    """Its docstring's claim: for the Gen3, the same samples (the continuous joints over ±π); on a
    plant driving the joints in another order, in that order (the q its refusals name)."""
    from torque_ctrl_ros.core import RobotModel
    from torque_ctrl_ros.core.robot import damping_configurations
    from torque_ctrl_ros.paths import data_path

    robot = RobotModel.from_urdf_file(data_path("urdf", "gen3.urdf"))
    samples = damping_configurations(robot.position_lower, robot.position_upper)
    np.testing.assert_array_equal(plant._default_damping_samples()[0], samples)
    reversed_plant = MujocoPlant(SCENE, joint_names=tuple(reversed(JOINTS)))
    np.testing.assert_array_equal(reversed_plant._default_damping_samples()[0], samples[:, ::-1])


def test_gravity_is_the_models_and_leaves_the_simulation_alone(plant: MujocoPlant) -> None:
    """``gravity()`` (the simulator's hold safe torque) is the URDF model's g(q) to rounding, at
    any velocity, and changes nothing in the running simulation."""
    from torque_ctrl_ros.core import RobotModel
    from torque_ctrl_ros.paths import data_path

    robot = RobotModel.from_urdf_file(data_path("urdf", "gen3.urdf"))
    rng = np.random.default_rng(4)
    for _ in range(20):
        q, v = rng.uniform(-2.0, 2.0, 7), rng.uniform(-1.0, 1.0, 7)
        plant.set_state(q, v)
        before = plant.data.qfrc_bias.copy()
        np.testing.assert_allclose(plant.gravity(), robot.gravity(q), rtol=0, atol=1e-10)
        np.testing.assert_array_equal(plant.data.qfrc_bias, before)
        np.testing.assert_array_equal(plant.v, v)


@pytest.mark.parametrize("hold", [True, False])
def test_the_safe_torque_damps_and_holds_against_gravity_only_when_asked(
    plant: MujocoPlant, hold: bool
) -> None:
    """``safe_torque`` is ``g(q) − K_d·q̇`` with ``hold`` and ``−K_d·q̇`` without, per joint."""
    damping = np.array([2.0, 2.0, 0.5, 1.0, 0.2, 0.2, 0.2])
    q, v = np.linspace(-1.0, 1.0, 7), np.linspace(0.7, -0.5, 7)
    plant.set_state(q, v)
    expected = -damping * v + (plant.gravity() if hold else 0.0)
    np.testing.assert_allclose(plant.safe_torque(damping, hold=hold), expected, rtol=0, atol=1e-12)
    assert np.abs(plant.gravity()).max() > 1.0  # so that the two cases differ


def test_a_model_with_gravity_compensation_is_refused(tmp_path: Path) -> None:
    """``gravcomp`` on a body has MuJoCo compensate its gravity on top of the torque commanded (or
    through the actuators), where the controllers command gravity themselves: held at g(q), the
    arm with ``gravcomp="1"`` on its shoulder drifted 0.354 rad in 0.2 s (a review). Refused,
    naming the bodies."""
    arm = tmp_path / "gen3.xml"
    text = ARM.read_text()
    assert text.count('<body name="shoulder_link"') == 1
    arm.write_text(text.replace('<body name="shoulder_link"', '<body name="shoulder_link" gravcomp="1"'))
    scene = tmp_path / "scene.xml"
    scene.write_text(SCENE.read_text().replace('file="gen3.xml"', f'file="{arm}"'))
    with pytest.raises(ModelError, match=r"scene.xml: body/bodies \['shoulder_link'\] have gravcomp"):
        MujocoPlant(scene)


def test_a_keyframe_outside_a_joint_range_is_refused(tmp_path: Path) -> None:
    """joint_2 at 3.0 rad (range ±2.24) is refused: the range constraint would throw it back at
    6.6 rad/s within 50 ms. The shipped keyframes pass."""
    text = SCENE.read_text().replace(
        '<key name="home"',
        '<key name="outside" qpos="0 3.0 3.14159265 -2.26892803 0 0.95993109 1.57079633" '
        'ctrl="0 0 0 0 0 0 0"/>\n    <key name="home"',
    )
    scene = tmp_path / "scene.xml"
    scene.write_text(text.replace('file="gen3.xml"', f'file="{ARM}"'))
    plant = MujocoPlant(scene)
    for name in ("home", "retract"):
        plant.reset(name)
    with pytest.raises(
        ModelError, match=r"keyframe 'outside' in scene.xml puts joint\(s\) outside .*'joint_2': \(3.0"
    ):
        plant.reset("outside")


def test_the_joints_own_physics_is_listed_as_terms_no_controller_model_has(tmp_path: Path) -> None:
    """Joint damping, armature, dry friction and stiffness, and a fluid medium, are the simulated
    arm's physics (taken, not refused), which the controllers' rigid-body model has no term for: the
    plant names each with its joints and values, so that the simulator node and ``make sim`` warn of
    it (a review: damping 0.1 on every joint went unsaid, joint_7 then accelerating at 150 rad/s²
    under a torque for q̈ = 0). None in the shipped model; one the model's flags switch off is not
    listed."""
    assert MujocoPlant(SCENE).passive_terms() == []
    text = ARM.read_text()
    assert text.count('<joint name="joint_1"/>') == 1 and text.count('<joint name="joint_7"/>') == 1
    cases = {
        'damping="0.1"': "joint damping (joint_1 0.1, joint_7 0.1)",
        'armature="0.01"': "joint armature (joint_1 0.01, joint_7 0.01)",
        'frictionloss="0.2"': "joint frictionloss (joint_1 0.2, joint_7 0.2)",
        'stiffness="1"': "joint stiffness (joint_1 1, joint_7 1)",
    }
    for attribute, said in cases.items():
        arm = tmp_path / "gen3.xml"
        arm.write_text(
            text.replace('<joint name="joint_1"/>', f'<joint name="joint_1" {attribute}/>').replace(
                '<joint name="joint_7"/>', f'<joint name="joint_7" {attribute}/>'
            )
        )
        assert MujocoPlant(arm).passive_terms() == [said], attribute
    damped = text.replace('<joint name="joint_7"/>', '<joint name="joint_7" damping="0.1"/>')
    arm.write_text(damped.replace('<option timestep="0.001"', '<option density="1.2" timestep="0.001"'))
    assert MujocoPlant(arm).passive_terms() == [
        "joint damping (joint_7 0.1)",
        "fluid forces (density 1.2, viscosity 0)",
    ]
    option = '<option timestep="0.001" integrator="implicitfast"/>'
    assert damped.count(option) == 1
    arm.write_text(damped.replace(option, option[:-2] + '><flag damper="disable"/></option>'))
    assert MujocoPlant(arm).passive_terms() == []
    fluid = text.replace(option, option[:-2] + ' density="1000" viscosity="1"/>')
    arm.write_text(fluid)
    assert MujocoPlant(arm).passive_terms() == ["fluid forces (density 1000, viscosity 1)"]
    # Springs and dampers both off: MuJoCo applies no passive force, fluid forces included.
    arm.write_text(
        fluid.replace('viscosity="1"/>', 'viscosity="1"><flag spring="disable" damper="disable"/></option>')
    )
    assert MujocoPlant(arm).passive_terms() == []
