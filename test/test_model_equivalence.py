"""The generated URDF (Pinocchio) and MJCF (MuJoCo) describe the same Gen3, to 1e-9.

Checks on random states: Pinocchio's RNEA with zero acceleration against MuJoCo's
``qfrc_bias`` (gravity + Coriolis + centrifugal, N·m), Pinocchio's CRBA against
``mj_fullM`` (kg·m²), and every link frame and the tool frame against MuJoCo's bodies and the
``end_effector_link`` site. Also: the committed files are the generator's output, the limits in
both files are the YAML's, the scene's keyframes start without contacts, and both match an
independent model of the Gen3 (MuJoCo Menagerie's) at two poses.

Run with ``-s`` to see the largest differences found.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import mujoco
import numpy as np
import pinocchio as pin
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
URDF_PATH = ROOT / "urdf" / "gen3.urdf"
SCENE_PATH = ROOT / "mjcf" / "scene.xml"
TOLERANCE = 1e-9
N_STATES = 200


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "generate_gen3_description", ROOT / "tools" / "generate_gen3_description.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


GEN = _load_generator()
DESCRIPTION = GEN.load_description()
JOINT_NAMES = [joint.name for joint in DESCRIPTION.joints]


class Pair:
    """A Pinocchio model and a MuJoCo model of the arm, with explicit joint-angle mapping.

    Pinocchio stores a continuous joint as (cos θ, sin θ) (2 entries of q, 1 of v); MuJoCo stores
    every hinge as θ. Both are addressed by joint name, never by position in the vector.
    """

    def __init__(self, pin_model: pin.Model, mj_model: mujoco.MjModel) -> None:
        self.pm = pin_model
        self.pd = pin_model.createData()
        self.mm = mj_model
        self.md = mujoco.MjData(mj_model)
        self.pin_joints = [pin_model.joints[pin_model.getJointId(name)] for name in JOINT_NAMES]
        ids = [mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_JOINT, name) for name in JOINT_NAMES]
        assert min(ids) >= 0
        self.mj_qadr = np.array([mj_model.jnt_qposadr[i] for i in ids])
        self.mj_vadr = np.array([mj_model.jnt_dofadr[i] for i in ids])
        self.pin_vadr = np.array([joint.idx_v for joint in self.pin_joints])

    def set_state(self, angles: np.ndarray, velocities: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Put (θ, θ̇) in joint_1..7 order into MuJoCo (then mj_forward); return Pinocchio's (q, v)."""
        q = np.zeros(self.pm.nq)
        v = np.zeros(self.pm.nv)
        for joint, angle, velocity in zip(self.pin_joints, angles, velocities, strict=True):
            if joint.nq == 2:
                q[joint.idx_q : joint.idx_q + 2] = (math.cos(angle), math.sin(angle))
            else:
                q[joint.idx_q] = angle
            v[joint.idx_v] = velocity
        self.md.qpos[:] = 0.0
        self.md.qvel[:] = 0.0
        self.md.qpos[self.mj_qadr] = angles
        self.md.qvel[self.mj_vadr] = velocities
        mujoco.mj_forward(self.mm, self.md)
        return q, v

    def pin_to_joint_order(self, vector: np.ndarray) -> np.ndarray:
        return vector[self.pin_vadr]

    def mj_to_joint_order(self, vector: np.ndarray) -> np.ndarray:
        return vector[self.mj_vadr]


def _random_state(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    angles = np.empty(len(JOINT_NAMES))
    for i, joint in enumerate(DESCRIPTION.joints):
        low, high = joint.position_limits or (-math.pi, math.pi)
        angles[i] = rng.uniform(low, high)
    velocities = rng.uniform(-2.0, 2.0, len(JOINT_NAMES))
    return angles, velocities


def _frame_errors(pair: Pair, q: np.ndarray) -> float:
    """Largest difference (m or rotation-matrix entry) over all links and the tool frame."""
    pin.framesForwardKinematics(pair.pm, pair.pd, q)
    worst = 0.0
    for link in DESCRIPTION.links:
        placement = pair.pd.oMf[pair.pm.getFrameId(link.name)]
        body = pair.mm.body(link.name).id
        worst = max(
            worst,
            np.max(np.abs(placement.translation - pair.md.xpos[body])),
            np.max(np.abs(placement.rotation - pair.md.xmat[body].reshape(3, 3))),
        )
    tool = pair.pd.oMf[pair.pm.getFrameId(DESCRIPTION.tool.name)]
    site = pair.mm.site(DESCRIPTION.tool.name).id
    worst = max(
        worst,
        np.max(np.abs(tool.translation - pair.md.site_xpos[site])),
        np.max(np.abs(tool.rotation - pair.md.site_xmat[site].reshape(3, 3))),
    )
    return float(worst)


@pytest.fixture(scope="module")
def pair() -> Pair:
    return Pair(pin.buildModelFromUrdf(str(URDF_PATH)), mujoco.MjModel.from_xml_path(str(SCENE_PATH)))


def test_pinocchio_model_shape(pair: Pair) -> None:
    continuous = [j.name for j in DESCRIPTION.joints if j.position_limits is None]
    assert continuous == ["joint_1", "joint_3", "joint_5", "joint_7"]
    assert (pair.pm.nq, pair.pm.nv) == (11, 7)
    for name, joint in zip(JOINT_NAMES, pair.pin_joints, strict=True):
        assert joint.nq == (2 if name in continuous else 1), name
    assert (pair.mm.nq, pair.mm.nv, pair.mm.nu) == (7, 7, 7)


def test_dynamics_agree_on_random_states(pair: Pair) -> None:
    rng = np.random.default_rng(20240607)
    worst_bias = worst_mass = worst_frame = 0.0
    mass = np.zeros((pair.mm.nv, pair.mm.nv))
    for _ in range(N_STATES):
        angles, velocities = _random_state(rng)
        q, v = pair.set_state(angles, velocities)

        bias_pin = pair.pin_to_joint_order(pin.rnea(pair.pm, pair.pd, q, v, np.zeros(pair.pm.nv)))
        bias_mj = pair.mj_to_joint_order(pair.md.qfrc_bias)
        worst_bias = max(worst_bias, float(np.max(np.abs(bias_pin - bias_mj))))

        crba = pin.crba(pair.pm, pair.pd, q)
        crba = np.triu(crba) + np.triu(crba, 1).T  # Pinocchio fills the upper triangle only
        mujoco.mj_fullM(pair.mm, pair.md, mass)  # MuJoCo 4.0: (m, d, dst); there is no d.qM
        crba_j = crba[np.ix_(pair.pin_vadr, pair.pin_vadr)]
        mass_j = mass[np.ix_(pair.mj_vadr, pair.mj_vadr)]
        worst_mass = max(worst_mass, float(np.max(np.abs(crba_j - mass_j))))

        worst_frame = max(worst_frame, _frame_errors(pair, q))
    print(
        f"\nPinocchio vs MuJoCo over {N_STATES} random states: "
        f"max |rnea - qfrc_bias| = {worst_bias:.3e} N*m, "
        f"max |crba - fullM| = {worst_mass:.3e} kg*m^2, "
        f"max frame difference = {worst_frame:.3e}"
    )
    assert worst_bias <= TOLERANCE
    assert worst_mass <= TOLERANCE
    assert worst_frame <= TOLERANCE


def test_tool_frame_at_named_poses(pair: Pair) -> None:
    for name, pose in DESCRIPTION.poses.items():
        q, _ = pair.set_state(np.array(pose), np.zeros(len(pose)))
        error = _frame_errors(pair, q)
        print(f"\n{name}: tool at {pair.md.site_xpos[0]}, frame difference {error:.3e}")
        assert error <= TOLERANCE


def test_rpy_convention_holds_for_general_angles() -> None:
    """URDF rpy and MJCF euler(eulerseq=XYZ) give the same frames for arbitrary roll/pitch/yaw.

    The real arm only has roll angles, which could not tell XYZ from other sequences.
    """
    rng = np.random.default_rng(7)
    twisted_joints = tuple(
        GEN.Joint(**{**joint.__dict__, "origin": GEN.Origin(joint.origin.xyz, tuple(rng.uniform(-3, 3, 3)))})
        for joint in DESCRIPTION.joints
    )
    tool = DESCRIPTION.tool
    twisted_tool = GEN.Tool(tool.name, tool.joint, tool.parent, GEN.Origin(tool.origin.xyz, (0.4, -1.1, 2.5)))
    twisted = GEN.Description(**{**DESCRIPTION.__dict__, "joints": twisted_joints, "tool": twisted_tool})
    pair = Pair(
        pin.buildModelFromXML(GEN.render_urdf(twisted)),
        mujoco.MjModel.from_xml_string(GEN.render_mjcf(twisted)),
    )
    for _ in range(10):
        angles, velocities = _random_state(rng)
        q, _ = pair.set_state(angles, velocities)
        assert _frame_errors(pair, q) <= TOLERANCE


def test_committed_files_match_generator() -> None:
    for relative, text in GEN.generate_texts().items():
        committed = (ROOT / relative).read_text(encoding="utf-8")
        assert committed == text, (
            f"{relative} is out of date: run `python tools/generate_gen3_description.py`"
        )


def _description_yaml() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "config" / "gen3_description.yaml").read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (
            lambda d: d["joints"]["joint_2"]["limits"].update(position=[2.24, -2.24]),
            "expected \\[lower, upper\\]",
        ),
        (lambda d: d["joints"]["joint_2"]["limits"].update(effort=0), "limits must be > 0"),
        (lambda d: d["joints"]["joint_5"]["limits"].update(velocity=-1.2), "limits must be > 0"),
        (lambda d: d["joints"]["joint_2"]["origin"].update(rpy=["nan", 0, 0]), "finite"),
        (lambda d: d["poses"]["home"].__setitem__(1, 3.0), "poses.home: joint_2 at 3.0 is outside"),
        (lambda d: d["links"]["base_link"].update(mass=0), "must be > 0"),
    ],
    ids=["swapped-limits", "zero-effort", "negative-velocity", "nan-angle", "pose-outside", "zero-mass"],
)
def test_the_generator_refuses_what_makes_no_robot(edit: Any, match: str) -> None:
    # The URDF and MJCF of such a description still agree (MuJoCo quietly leaves a joint with
    # swapped limits unlimited), so the equivalence checks above cannot catch it.
    raw = _description_yaml()
    GEN.description_from_dict(raw)  # the shipped one passes
    edit(raw)
    with pytest.raises(ValueError, match=match):
        GEN.description_from_dict(raw)


def test_the_table_scene_keeps_the_descriptions_poses() -> None:
    """mjcf/scene_table.xml is written by hand around gen3.xml; its keyframes must not drift."""
    model = mujoco.MjModel.from_xml_path(str(ROOT / "mjcf" / "scene_table.xml"))
    poses = GEN.description_from_dict(_description_yaml()).poses
    for name, q in poses.items():
        np.testing.assert_allclose(model.key(name).qpos, q, atol=1e-8, err_msg=name)


def test_keyframes_start_without_contacts(pair: Pair) -> None:
    model = pair.mm
    data = mujoco.MjData(model)
    assert {model.key(i).name for i in range(model.nkey)} == set(DESCRIPTION.poses)
    for name, pose in DESCRIPTION.poses.items():
        key = model.key(name)
        np.testing.assert_array_equal(key.qpos, pose)
        np.testing.assert_array_equal(key.ctrl, np.zeros(model.nu))
        mujoco.mj_resetDataKeyframe(model, data, key.id)
        mujoco.mj_forward(model, data)
        assert data.ncon == 0, f"{name}: {data.ncon} contacts"


def test_limits_match_description(pair: Pair) -> None:
    pm, mm = pair.pm, pair.mm
    for joint, pin_joint in zip(DESCRIPTION.joints, pair.pin_joints, strict=True):
        assert pm.effortLimit[pin_joint.idx_v] == joint.effort_limit
        assert pm.velocityLimit[pin_joint.idx_v] == joint.velocity_limit
        mj_joint = mm.joint(joint.name)
        actuator = mm.actuator(joint.name)
        assert actuator.trntype[0] == mujoco.mjtTrn.mjTRN_JOINT
        assert actuator.trnid[0] == mj_joint.id
        assert actuator.gear[0] == 1.0
        np.testing.assert_array_equal(actuator.ctrlrange, [-joint.effort_limit, joint.effort_limit])
        np.testing.assert_array_equal(actuator.forcerange, [-joint.effort_limit, joint.effort_limit])
        assert actuator.ctrllimited[0] and actuator.forcelimited[0]
        if joint.position_limits is None:
            assert not mj_joint.limited[0], joint.name
        else:
            assert pm.lowerPositionLimit[pin_joint.idx_q] == joint.position_limits[0]
            assert pm.upperPositionLimit[pin_joint.idx_q] == joint.position_limits[1]
            assert mj_joint.limited[0], joint.name
            np.testing.assert_array_equal(mj_joint.range, joint.position_limits)


def test_mujoco_model_has_no_extra_dynamics(pair: Pair) -> None:
    """Explicit inertials only; no damping, armature or friction (none is published)."""
    mm = pair.mm
    assert not np.any(mm.dof_damping) and not np.any(mm.dof_armature)
    assert not np.any(mm.dof_frictionloss)
    assert mm.opt.timestep == DESCRIPTION.timestep
    assert mm.opt.integrator == mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    for link in DESCRIPTION.links:
        assert mm.body(link.name).mass[0] == pytest.approx(link.inertial.mass, abs=1e-15)


#: An independent reference for the facts both files are generated from (one YAML: a typo in it
#: would pass every other test here): MuJoCo Menagerie's ``kinova_gen3`` model, which stores each
#: inertia in its own form (principal moments and a quaternion), its geometry left out, at two
#: poses: joint angles (rad), gravity torques (N·m), the mass matrix's diagonal (kg·m²), the
#: tool point (its ``pinch_site``, m, base axes), ``M·w`` (N·m for 1 rad/s² on each joint,
#: alternating signs: :data:`INDEPENDENT_W`) and the bias torques ``c(q, v) + g(q)`` at
#: :data:`INDEPENDENT_V` (N·m). The last two see the off-diagonal inertia products and the
#: velocity terms the diagonal and gravity miss (a flipped ``iyz`` of ``half_arm_1_link`` passed
#: them). Menagerie rounds its inertias: the two agree to 3e-8 (M), 1e-7 (bias at a velocity) and
#: 1e-14 (gravity, tool).
INDEPENDENT_POSES = [
    (
        [0.0, 0.26179939, 3.14159265, -2.26892803, 0.0, 0.95993109, 1.57079633],
        [0.0, -8.726914069, -0.09244494139, 4.486113717, -0.003275222362, 0.9683060786, -0.001378304873],
        [0.25655086, 0.564646354, 0.16784916, 0.233366664, 0.008736121, 0.012906835, 0.000674042],
        [0.45666519, 0.001350101, 0.433724312],
        [
            0.4285145009,
            -0.4459293049,
            0.3233537582,
            -0.1860776696,
            -0.05236027748,
            -0.005267425749,
            0.005016089644,
        ],
        [
            -0.1000668886,
            -8.770422758,
            -0.1575340256,
            4.36111705,
            0.002721362472,
            0.9599134417,
            -0.001921178831,
        ],
    ),
    (
        [0.3, 1.2, -0.7, 1.9, 0.4, -1.1, 0.8],
        [0.0, -15.832558605, -3.840055285, -1.391109473, 0.463447284, -0.833705039, 0.054247034],
        [
            0.700676284,
            0.6714031192,
            0.2107446851,
            0.2199022855,
            0.01125312159,
            0.01277088251,
            0.0006740424404,
        ],
        [0.563248987, 0.128595607, 0.170766797],
        [
            1.064214139,
            -0.7491661307,
            0.2616774469,
            -0.4472046838,
            -0.05363903115,
            -0.1009831393,
            0.003365120276,
        ],
        [0.01422216954, -15.8882442, -3.830845666, -1.210991742, 0.4753226188, -0.8354886023, 0.05498708974],
    ),
]
INDEPENDENT_W = [1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0]
INDEPENDENT_V = [0.5, -0.4, 0.3, -0.2, 0.6, -0.5, 0.4]


@pytest.mark.parametrize("angles, gravity, mass_diagonal, tool, mass_times_w, bias_at_v", INDEPENDENT_POSES)
def test_descriptions_match_an_independent_model(
    pair: Pair,
    angles: list[float],
    gravity: list[float],
    mass_diagonal: list[float],
    tool: list[float],
    mass_times_w: list[float],
    bias_at_v: list[float],
) -> None:
    q, v = pair.set_state(np.array(angles), np.zeros(len(angles)))
    g_pin = pair.pin_to_joint_order(pin.rnea(pair.pm, pair.pd, q, v, np.zeros(pair.pm.nv)))
    g_mj = pair.mj_to_joint_order(pair.md.qfrc_bias)
    np.testing.assert_allclose(g_pin, gravity, atol=1e-6)
    np.testing.assert_allclose(g_mj, gravity, atol=1e-6)
    M = pin.crba(pair.pm, pair.pd, q)
    np.testing.assert_allclose(pair.pin_to_joint_order(np.diag(M)), mass_diagonal, atol=1e-6)
    pin.framesForwardKinematics(pair.pm, pair.pd, q)
    np.testing.assert_allclose(
        pair.pd.oMf[pair.pm.getFrameId(DESCRIPTION.tool.name)].translation, tool, atol=1e-8
    )
    np.testing.assert_allclose(pair.md.site_xpos[pair.mm.site(DESCRIPTION.tool.name).id], tool, atol=1e-8)
    w = np.zeros(pair.pm.nv)
    w[pair.pin_vadr] = INDEPENDENT_W
    np.testing.assert_allclose(pair.pin_to_joint_order(M.dot(w)), mass_times_w, atol=1e-6)
    q, v = pair.set_state(np.array(angles), np.array(INDEPENDENT_V))
    bias = pair.pin_to_joint_order(pin.rnea(pair.pm, pair.pd, q, v, np.zeros(pair.pm.nv)))
    np.testing.assert_allclose(bias, bias_at_v, atol=1e-6)
    np.testing.assert_allclose(pair.mj_to_joint_order(pair.md.qfrc_bias), bias_at_v, atol=1e-6)
