"""A MuJoCo model used as a joint-torque plant (no ROS).

:class:`MujocoPlant` takes joint torques τ (N·m for hinges, N for slides) and advances MuJoCo's

    M(q)·q̈ = qfrc_actuator + qfrc_applied + qfrc_passive + qfrc_constraint − qfrc_bias,

with τ entering either through the joint's motor actuator or through ``qfrc_applied``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import mujoco
import numpy as np
from numpy.typing import ArrayLike, NDArray

from torque_ctrl_ros.core.errors import FrameNotFoundError, ModelError, SimulationError, StateError
from torque_ctrl_ros.core.robot import (
    check_damping_stability,
    configuration_rows,
    damping_configurations,
    damping_eigenvalues,
)
from torque_ctrl_ros.core.validation import as_vector

FloatArray = NDArray[np.float64]

MODE_MOTOR = "motor"
MODE_NULLED = "nulled_position"
MODE_APPLIED = "applied"

# Plain ints: `numpy_int in (enum, ...)` is False even when the values are equal.
_JOINT_TRANSMISSIONS = (int(mujoco.mjtTrn.mjTRN_JOINT), int(mujoco.mjtTrn.mjTRN_JOINTINPARENT))
_SCALAR_JOINTS = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
_NULLABLE_BIASES = (int(mujoco.mjtBias.mjBIAS_NONE), int(mujoco.mjtBias.mjBIAS_AFFINE))
#: MuJoCo's warnings for a diverged state (it checks positions, velocities and accelerations).
_DIVERGED = (
    mujoco.mjtWarning.mjWARN_BADQPOS,
    mujoco.mjtWarning.mjWARN_BADQVEL,
    mujoco.mjtWarning.mjWARN_BADQACC,
)


#: How far (rad, m) a reset pose may be past a joint's range: rounding in a keyframe's text.
_RANGE_TOLERANCE = 1e-9


class MujocoPlant:
    """Joint-torque interface to a MuJoCo model (e.g. ``mjcf/scene.xml`` of the Gen3).

    How a commanded torque τ_i reaches joint i depends on what drives the joint:

    ``motor`` (one motor actuator: fixed gain, no bias, no activation, joint transmission)
        τ_i is first clamped to what the actuator can give, ``gear·gain·ctrlrange`` and
        ``gear·forcerange`` where limited, and to the joint's ``actuatorfrcrange`` where that is
        limited (as MuJoCo would clamp it), then written as ``ctrl = τ_i / (gear·gain)``, never
        above MuJoCo's ``mjMAXVAL`` (1e10); :attr:`tau_applied` shows the clamped torque. This is
        an exact torque plant: no term other than τ is added, whatever the integrator (the
        model's own joint-range and contact forces aside, which no controller model has, and
        the joint physics :meth:`passive_terms` lists, none in the shipped model).
    ``nulled_position`` (one affine actuator, e.g. a Menagerie ``<position kp kv>``)
        τ_i goes into ``qfrc_applied`` (clamped to what the actuator could give,
        ``gear·forcerange`` when it is force-limited, and to the joint's ``actuatorfrcrange``
        when that is limited) and the actuator is *nulled* in the plant's own model: its bias
        ``b0 + b1·l + b2·l̇`` is set to zero and its control held at 0 (``ctrllimited``
        cleared, in case ``ctrlrange`` excludes 0), so its force and the force's derivatives
        are zero. An exact torque plant, whatever the integrator (with the same asides).
    ``applied`` (no actuator on the joint, or actuation disabled in the model)
        τ_i goes into ``qfrc_applied``, clamped to what the joint's actuator, if any, could
        give (as for ``motor`` above: a motor's ``gear·gain·ctrlrange`` and
        ``gear·forcerange``; a nulled one's ``gear·forcerange``) and to the joint's
        ``actuatorfrcrange`` when that is limited. A model with
        ``<option><flag actuation="disable"/></option>`` has MuJoCo ignore ``ctrl`` and apply no
        actuator force, so every driven joint is ``applied`` there: a torque written into
        ``ctrl`` would never reach the arm.

    Why the bias and not the control: nulling the force with the control alone (``ctrl = q +
    (kv/kp)·q̇`` for a position actuator) leaves the force's velocity derivative −kv, which
    ``implicitfast`` integrates as damping, (M + h·diag(kv))·q̈ = τ − c. On the Gen3 with
    Menagerie gains (kp/kv = 2000/100 on joints 1–4, 500/50 on 5–7, h = 1 ms) the joints got
    0.68–0.80 of the commanded acceleration on joints 1–4 and −0.13, 0.19, 0.03 on the wrist
    (joint 5 moved the wrong way); RK4 broke that nulling entirely. With the bias zeroed the
    step equals the motor plant's under Euler, implicitfast, implicit and RK4
    (test/test_plant.py).

    Conventions: ``q``, ``v``, ``qacc``, ``tau_applied`` and the torque command are in the order
    of :attr:`joint_names`. After :meth:`step`, ``qacc`` and ``tau_applied`` are the values MuJoCo
    used during the last step (they were computed at the state *before* integration; under RK4,
    ``qacc`` is the step's average ``(v⁺ − v)/h`` instead); :meth:`forward` recomputes them at the
    current state. The torque command is held
    (zero-order hold) until the next :meth:`set_torque`.

    Actuators on joints that are not in :attr:`joint_names`, or with other transmissions
    (tendon, site, ...), are left alone at whatever ``ctrl`` they hold.

    A diverged simulation (MuJoCo flags a non-finite or huge position, velocity or acceleration,
    e.g. a free wrist spun up by a sustained torque) raises :class:`SimulationError` from
    :meth:`step`. MuJoCo's own answer, resetting the data to the model's zero pose and time
    0, is disabled in the plant's model: it would go on from another pose, silently.
    """

    def __init__(self, mjcf_path: str | Path, joint_names: Sequence[str] | None = None) -> None:
        """Load ``mjcf_path`` and pick the driven joints.

        ``joint_names`` defaults to every hinge and slide joint in model order. Raises
        :class:`ModelError` for a missing or invalid file, an unknown or repeated joint name, a
        body with ``gravcomp``, or an actuator the plant cannot turn into a torque source
        (activation dynamics, a gain that is not fixed, gear 0, a bias other than none / affine,
        a delayed control, or damping or armature of the actuator's own).
        """
        path = Path(mjcf_path)
        if not path.is_file():
            raise ModelError(f"MJCF file not found: {path}")
        try:
            model = mujoco.MjModel.from_xml_path(str(path))
        except ValueError as exc:
            raise ModelError(f"cannot load MJCF file {path}: {exc}") from exc
        compensated = [model.body(b).name for b in range(model.nbody) if model.body_gravcomp[b] != 0.0]
        if compensated:
            # MuJoCo would add gravity compensation to the torque commanded (or route it through the
            # actuators), where the controllers command gravity themselves: held at g(q), the
            # shipped arm with gravcomp="1" drifted 0.354 rad in 0.2 s (a review).
            raise ModelError(
                f"{path.name}: body/bodies {compensated} have gravcomp: MuJoCo would compensate "
                "gravity on top of the torques commanded, which hold the arm up themselves; remove "
                "gravcomp (the plant adds no term other than the torque)"
            )
        self._path = path
        self._model = model
        model.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_AUTORESET)
        self._data = mujoco.MjData(model)
        self._diverged = [self._data.warning[int(w)] for w in _DIVERGED]  # live views
        self._diverged_seen = 0

        scalar_joints = [
            model.joint(j).name for j in range(model.njnt) if int(model.jnt_type[j]) in _SCALAR_JOINTS
        ]
        names = tuple(scalar_joints) if joint_names is None else tuple(joint_names)
        if not names:
            raise ModelError(f"{path} has no hinge or slide joint to drive")
        unknown = [name for name in names if name not in scalar_joints]
        if unknown:
            raise ModelError(
                f"unknown joint name(s) {unknown} in {path.name}; valid hinge/slide joints: {scalar_joints}"
            )
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ModelError(f"joint name(s) {repeated} given more than once")
        self._joint_names = names
        self._model_joint_names = tuple(scalar_joints)
        joint_ids = [model.joint(name).id for name in names]
        self._qadr = np.array([model.jnt_qposadr[j] for j in joint_ids], dtype=np.intp)
        self._vadr = np.array([model.jnt_dofadr[j] for j in joint_ids], dtype=np.intp)
        self._joint_ids = np.array(joint_ids, dtype=np.intp)
        self._setup_drives(joint_ids)

        self._tau_cmd = np.zeros(len(names))
        self._mass = np.zeros((model.nv, model.nv))
        self._gravity_data: mujoco.MjData | None = None  # for gravity(): created on first use
        self._gravity_all = np.zeros(model.nv)
        self._damping_samples: tuple[FloatArray, FloatArray] | None = None  # (configurations, M⁻¹ block)
        mujoco.mj_forward(model, self._data)

    # ------------------------------------------------------------------------------------------
    # Set-up
    # ------------------------------------------------------------------------------------------

    def _setup_drives(self, joint_ids: Sequence[int]) -> None:
        """Classify each joint's drive, then precompute the torque ranges and per-mode indices."""
        model = self._model
        modes: list[str] = []
        actuators: list[int] = []  # each joint's actuator, -1 for none
        for name, joint_id in zip(self._joint_names, joint_ids, strict=True):
            a = self._joint_actuator(name, joint_id)
            actuators.append(a)
            if a < 0:
                modes.append(MODE_APPLIED)
            elif model.actuator_biastype[a] == mujoco.mjtBias.mjBIAS_NONE:
                modes.append(MODE_MOTOR)
            else:  # affine: _joint_actuator refused every other bias
                modes.append(MODE_NULLED)
                model.actuator_biasprm[a] = 0.0
                model.actuator_ctrllimited[a] = 0  # a control clamped into a range without 0 would act
        self._tau_low, self._tau_high = self._torque_ranges(modes, actuators)
        self._tau_clamped = np.zeros(len(modes))  # the command within them, rewritten every step
        if self.actuation_disabled:
            # MuJoCo then ignores ctrl and applies no actuator force: a torque written into ctrl
            # would never reach the joint, the safe torque's hold included.
            modes = [MODE_APPLIED] * len(modes)
        self._modes = tuple(modes)
        motor = [i for i, mode in enumerate(modes) if mode == MODE_MOTOR]
        self._motor_idx = np.array(motor, dtype=np.intp)
        self._motor_act = np.array([actuators[i] for i in motor], dtype=np.intp)
        # τ = gear · gain · ctrl for a motor with joint transmission.
        self._motor_scale = (
            model.actuator_gear[self._motor_act, 0] * model.actuator_gainprm[self._motor_act, 0]
        )
        self._null_act = np.array(
            [a for a, mode in zip(actuators, modes, strict=True) if mode == MODE_NULLED], dtype=np.intp
        )
        # Nulled and applied joints both take their torque through qfrc_applied.
        self._applied_idx = np.array([i for i, mode in enumerate(modes) if mode != MODE_MOTOR], dtype=np.intp)

    def _joint_actuator(self, name: str, joint_id: int) -> int:
        """The actuator driving joint ``name`` (-1 for none); :class:`ModelError` for one the plant
        cannot turn into a torque source, or for more than one."""
        model = self._model
        actuators = [
            a
            for a in range(model.nu)
            if int(model.actuator_trntype[a]) in _JOINT_TRANSMISSIONS
            and model.actuator_trnid[a, 0] == joint_id
        ]
        if not actuators:
            return -1
        if len(actuators) > 1:
            listed = [model.actuator(a).name for a in actuators]
            raise ModelError(
                f"joint {name} is driven by {len(actuators)} actuators {listed}; one is supported"
            )
        a = actuators[0]
        label = f"actuator {model.actuator(a).name!r} on joint {name}"
        if model.actuator_dyntype[a] != mujoco.mjtDyn.mjDYN_NONE:
            raise ModelError(f"{label} has activation dynamics; cannot use it as a torque source")
        if model.actuator_gaintype[a] != mujoco.mjtGain.mjGAIN_FIXED or model.actuator_gainprm[a, 0] == 0:
            raise ModelError(f"{label} needs a fixed non-zero gain to be used as a torque source")
        if model.actuator_gear[a, 0] == 0:
            raise ModelError(f"{label} has gear 0")
        if model.actuator_delay[a] > 0.0:
            # Every torque would reach the joint late: a delay the control loop's damping
            # bounds do not allow for (core/robot.py checks them for one period). A history
            # buffer alone (nsample, delay 0) only records: the control still acts at once.
            raise ModelError(
                f"{label} delays its control by {model.actuator_delay[a]:g} s; a torque source acts at once"
            )
        if (
            model.actuator_damping[a] != 0.0
            or model.actuator_dampingpoly[a].any()
            or model.actuator_armature[a]
        ):
            # Its passive force would act (with actuation disabled too) while tau_applied reads
            # only the command.
            raise ModelError(
                f"{label} has damping or armature of its own; set them on the joint (damping, "
                "armature), where they are the model's physics"
            )
        if int(model.actuator_biastype[a]) not in _NULLABLE_BIASES:
            raise ModelError(f"{label} has a bias type the plant cannot null (only none/affine)")
        return a

    def _torque_ranges(self, modes: Sequence[str], actuators: Sequence[int]) -> tuple[FloatArray, FloatArray]:
        """The joint torques (N·m) the model lets each driven joint's drive give, ``(low, high)``.

        Within the joint's ``actuatorfrcrange`` where limited (MuJoCo clamps the total actuator
        torque on the joint to it), ``gear·forcerange`` of its actuator where force-limited
        (signed: a negative gear swaps and mirrors the ends), and for a motor
        ``gear·gain·ctrlrange``, with controls within MuJoCo's ``mjMAXVAL`` (1e10) where there is
        no ``ctrlrange``: a larger one MuJoCo takes for a diverged control and answers by zeroing
        every actuator's (a motor limited by forcerange alone then left all the joints
        unpowered). A nulled actuator's control is held at 0, so its ``ctrlrange`` plays no part.
        """
        model = self._model
        low, high = self._joint_torque_range(model, np.arange(len(modes)))
        for i, (mode, a) in enumerate(zip(modes, actuators, strict=True)):
            spans = []
            if mode != MODE_APPLIED and model.actuator_forcelimited[a]:
                spans.append(model.actuator_gear[a, 0] * model.actuator_forcerange[a])
            if mode == MODE_MOTOR:
                ctrl = model.actuator_ctrlrange[a] if model.actuator_ctrllimited[a] else (-np.inf, np.inf)
                scale = model.actuator_gear[a, 0] * model.actuator_gainprm[a, 0]
                spans.append(scale * np.clip(ctrl, -mujoco.mjMAXVAL, mujoco.mjMAXVAL))
            for span in spans:
                low[i], high[i] = max(low[i], span.min()), min(high[i], span.max())
        return low, high

    def _joint_torque_range(self, model: mujoco.MjModel, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``actuatorfrcrange`` (N·m) of the driven joints ``idx`` (±inf where not limited)."""
        joints = self._joint_ids[idx]
        limited = model.jnt_actfrclimited[joints].astype(bool)
        frc = model.jnt_actfrcrange[joints]
        return np.where(limited, frc[:, 0], -np.inf), np.where(limited, frc[:, 1], np.inf)

    # ------------------------------------------------------------------------------------------
    # Properties
    # ------------------------------------------------------------------------------------------

    @property
    def torque_range(self) -> tuple[FloatArray, FloatArray]:
        """``(low, high)``: the joint torques (N·m) the drives can give; a command beyond is
        clamped to them (copies)."""
        return self._tau_low.copy(), self._tau_high.copy()

    @property
    def model(self) -> mujoco.MjModel:
        """The raw ``MjModel`` (the plant has nulled the affine actuators it drives, see above)."""
        return self._model

    @property
    def data(self) -> mujoco.MjData:
        """The raw ``MjData``."""
        return self._data

    @property
    def joint_names(self) -> tuple[str, ...]:
        """Driven joints; the order of every joint-space vector of this class."""
        return self._joint_names

    @property
    def model_joint_names(self) -> tuple[str, ...]:
        """Every hinge and slide joint in the model's order (the default :attr:`joint_names`)."""
        return self._model_joint_names

    @property
    def n(self) -> int:
        """Number of driven joints."""
        return len(self._joint_names)

    @property
    def timestep(self) -> float:
        """Integration step h (s)."""
        return float(self._model.opt.timestep)

    @property
    def time(self) -> float:
        """Simulated time (s)."""
        return float(self._data.time)

    @property
    def q(self) -> FloatArray:
        """Joint positions (rad or m), a copy."""
        return self._data.qpos[self._qadr].copy()

    @property
    def v(self) -> FloatArray:
        """Joint velocities (rad/s or m/s), a copy."""
        return self._data.qvel[self._vadr].copy()

    @property
    def qacc(self) -> FloatArray:
        """Joint accelerations (rad/s²) from the last step or forward, a copy."""
        return self._data.qacc[self._vadr].copy()

    @property
    def tau_applied(self) -> FloatArray:
        """Generalised force at the joints in the last step or forward (N·m).

        τ_applied = qfrc_actuator + qfrc_applied, read at the joints' DoFs.

        ``qfrc_actuator`` is the actuator force mapped through its moment arm (after clamping),
        so this is what acted on the joint, not what was commanded.
        """
        return self._data.qfrc_actuator[self._vadr] + self._data.qfrc_applied[self._vadr]

    @property
    def keyframe_names(self) -> tuple[str, ...]:
        """Names of the model's keyframes."""
        return tuple(self._model.key(k).name for k in range(self._model.nkey))

    @property
    def actuation_disabled(self) -> bool:
        """Whether the model disables actuation (``<option><flag actuation="disable"/>``): every
        driven joint then takes its torque through ``qfrc_applied``."""
        return bool(self._model.opt.disableflags & int(mujoco.mjtDisableBit.mjDSBL_ACTUATION))

    @property
    def torque_mode(self) -> str:
        """``"motor"`` if every joint has a motor, else ``"nulled_position"`` if any actuator is
        nulled, else ``"applied"`` (always with :attr:`actuation_disabled`). See
        :attr:`joint_modes` for the per-joint modes."""
        if all(mode == MODE_MOTOR for mode in self._modes):
            return MODE_MOTOR
        if MODE_NULLED in self._modes:
            return MODE_NULLED
        return MODE_APPLIED

    @property
    def joint_modes(self) -> tuple[str, ...]:
        """How the torque reaches each joint: ``"motor"``, ``"nulled_position"`` or ``"applied"``."""
        return self._modes

    def passive_terms(self) -> list[str]:
        """What the model adds to the driven joints' motion besides τ that a rigid-body model (the
        controllers' URDF) has no term for, one phrase each; ``[]`` for the shipped Gen3.

        Joint ``damping`` (a torque −d·q̇), ``armature`` (added to ``M``'s diagonal), dry friction
        (``frictionloss``), ``stiffness`` (a spring toward ``springref``), each with the driven joints
        that have it and their values in MuJoCo's units (SI, per radian for hinges), and fluid forces
        (the medium's ``density`` or ``viscosity``). MuJoCo applies them as the arm's own physics:
        the torque commanded still reaches the joint exactly, and :attr:`tau_applied` shows it alone,
        but the arm answers it as the controllers' model does not (a damping of 0.1 on every joint
        accelerated joint_7 at 150 rad/s² under a torque for q̈ = 0, a review). Terms the model's
        own flags switch off are left out.
        """
        model = self._model
        off = int(model.opt.disableflags)
        dofs, joints = self._vadr, self._joint_ids
        fields = (
            ("damping", model.dof_damping[dofs], mujoco.mjtDisableBit.mjDSBL_DAMPER),
            ("armature", model.dof_armature[dofs], None),
            ("frictionloss", model.dof_frictionloss[dofs], mujoco.mjtDisableBit.mjDSBL_FRICTIONLOSS),
            ("stiffness", model.jnt_stiffness[joints], mujoco.mjtDisableBit.mjDSBL_SPRING),
        )
        terms = []
        for field, values, flag in fields:
            if flag is not None and off & int(flag):
                continue
            pairs = zip(self._joint_names, values.tolist(), strict=True)
            named = [f"{name} {value:g}" for name, value in pairs if value]
            if named:
                terms.append(f"joint {field} ({', '.join(named)})")
        # MuJoCo skips every passive force, fluid forces included, with both springs and dampers off.
        passive_off = int(mujoco.mjtDisableBit.mjDSBL_SPRING) | int(mujoco.mjtDisableBit.mjDSBL_DAMPER)
        if (model.opt.density or model.opt.viscosity) and off & passive_off != passive_off:
            terms.append(f"fluid forces (density {model.opt.density:g}, viscosity {model.opt.viscosity:g})")
        return terms

    # ------------------------------------------------------------------------------------------
    # Commands
    # ------------------------------------------------------------------------------------------

    def _vector(self, values: ArrayLike, what: str) -> FloatArray:
        try:
            array = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise StateError(f"{what} must be {self.n} numbers, got {values!r}") from exc
        if array.shape != (self.n,):
            raise StateError(
                f"{what} must have {self.n} entries ({', '.join(self._joint_names)}), got shape {array.shape}"
            )
        if not np.all(np.isfinite(array)):
            bad = [name for name, x in zip(self._joint_names, array, strict=True) if not np.isfinite(x)]
            raise StateError(f"{what} is not finite at {bad}: {array.tolist()}")
        return array.copy()

    def set_torque(self, tau: ArrayLike) -> None:
        """Command joint torques τ (N·m; N for slides), held until the next call.

        Takes effect at the next :meth:`step` or :meth:`forward`. Raises :class:`StateError` on a
        wrong length or a non-finite entry.
        """
        self._tau_cmd = self._vector(tau, "torque")

    def set_state(self, q: ArrayLike, v: ArrayLike) -> None:
        """Set joint positions (rad) and velocities (rad/s), then :meth:`forward`."""
        q_new = self._vector(q, "q")
        v_new = self._vector(v, "v")
        self._data.qpos[self._qadr] = q_new
        self._data.qvel[self._vadr] = v_new
        self.forward()

    def reset(self, keyframe: str | None = None) -> None:
        """Reset the data (to ``keyframe`` if given), zero the torque command, then :meth:`forward`.

        Raises :class:`ModelError` listing the valid keyframes for an unknown name, or naming the
        driven joints the pose puts outside their ranges (the joint-range constraint would throw
        them back: joint_2 at 3.0 of ±2.24 rad is at −6.6 rad/s 50 ms later, holding gravity).
        """
        if keyframe is None:
            mujoco.mj_resetData(self._model, self._data)
        else:
            names = self.keyframe_names
            if keyframe not in names:
                raise ModelError(
                    f"unknown keyframe {keyframe!r} in {self._path.name}; valid keyframes: {list(names)}"
                )
            mujoco.mj_resetDataKeyframe(self._model, self._data, names.index(keyframe))
        model, q = self._model, self._data.qpos[self._qadr]
        limited = model.jnt_limited[self._joint_ids].astype(bool)
        low, high = model.jnt_range[self._joint_ids].T
        outside = limited & ((q < low - _RANGE_TOLERANCE) | (q > high + _RANGE_TOLERANCE))
        if outside.any():
            where = "keyframe " + repr(keyframe) if keyframe is not None else "the model's qpos0"
            bad = {
                self._joint_names[i]: (round(float(q[i]), 4), [float(low[i]), float(high[i])])
                for i in np.flatnonzero(outside)
            }
            raise ModelError(f"{where} in {self._path.name} puts joint(s) outside their ranges (rad): {bad}")
        self._diverged_seen = self._divergence_count()
        self._tau_cmd = np.zeros(self.n)
        self.forward()

    def _apply_command(self) -> None:
        """Write the held torque, clamped to what the model allows, into ctrl / qfrc_applied (and
        0 into the nulled actuators' ctrl)."""
        data = self._data
        # Two ufuncs into a buffer: np.clip allocates, and its wrapper costs ~1 µs more a step.
        tau = np.maximum(self._tau_cmd, self._tau_low, out=self._tau_clamped)
        np.minimum(tau, self._tau_high, out=tau)
        if self._motor_idx.size:
            data.ctrl[self._motor_act] = tau[self._motor_idx] / self._motor_scale
        if self._null_act.size:
            data.ctrl[self._null_act] = 0.0
        if self._applied_idx.size:
            idx = self._applied_idx
            data.qfrc_applied[self._vadr[idx]] = tau[idx]

    def step(self, n: int = 1) -> None:
        """Advance ``n`` steps of :attr:`timestep` with the held torque command."""
        if n < 0:
            raise StateError(f"step count must be >= 0, got {n}")
        self._apply_command()  # ctrl and qfrc_applied do not depend on the state
        if n:
            mujoco.mj_step(self._model, self._data, nstep=n)
        count = self._divergence_count()
        if count != self._diverged_seen:
            self._diverged_seen = count
            self._raise_diverged()

    def _divergence_count(self) -> int:
        """How often MuJoCo has flagged a diverged position, velocity or acceleration so far."""
        return sum(w.number for w in self._diverged)

    def _raise_diverged(self) -> None:
        flagged = [
            w.name.removeprefix("mjWARN_") for w, s in zip(_DIVERGED, self._diverged, strict=True) if s.number
        ]
        raise SimulationError(
            f"the simulation diverged at t = {self.time:.4f} s (MuJoCo flagged {', '.join(flagged)}); "
            f"joint velocities {np.round(self.v, 1).tolist()} rad/s, last torque command "
            f"{self._tau_cmd.tolist()} N·m"
        )

    def forward(self) -> None:
        """Apply the command and run ``mj_forward``: every derived quantity at the current state."""
        self._apply_command()
        mujoco.mj_forward(self._model, self._data)

    # ------------------------------------------------------------------------------------------
    # Checks and queries
    # ------------------------------------------------------------------------------------------

    def gravity(self) -> FloatArray:
        """Generalised gravity ``g(q)`` (N·m) on the driven joints at the current positions: the
        torque that holds the arm still, from the plant's own model (MuJoCo's inverse dynamics at
        ``q̇ = 0``, ``q̈ = 0``, on a data copy: the simulation's own data is left as it is)."""
        model = self._model
        if self._gravity_data is None:
            self._gravity_data = mujoco.MjData(model)
        data = self._gravity_data
        data.qpos[:] = self._data.qpos
        data.qvel[:] = 0.0
        mujoco.mj_kinematics(model, data)
        mujoco.mj_comPos(model, data)
        mujoco.mj_rne(model, data, 0, self._gravity_all)
        return self._gravity_all[self._vadr].copy()

    def safe_torque(self, damping: FloatArray, *, hold: bool) -> FloatArray:
        """The torque (N·m) applied when no valid command is due: ``−K_d·q̇`` (``damping`` is
        ``K_d``, N·m·s/rad per joint), plus ``g(q)`` with ``hold`` so that the arm stays about
        where it is, as a braked arm would (without, it falls under its own weight)."""
        tau = -damping * self.v
        if hold:
            tau += self.gravity()
        return tau

    def dynamics_residual(self) -> float:
        """Largest |q̈_rebuilt − qacc| (rad/s²) over all DoFs at the current state.

        Runs :meth:`forward`, then rebuilds q̈ = M⁻¹·(qfrc_actuator + qfrc_passive +
        qfrc_constraint + qfrc_applied + Jᵀ·xfrc_applied − qfrc_bias) with ``mj_fullM``.
        ``qfrc_passive`` already holds springs, dampers, fluid forces and the gravity
        compensation of bodies without ``actuatorgravcomp`` (which goes into ``qfrc_actuator``).
        Note that ``qacc`` is the forward-dynamics acceleration: implicit integrators solve with a
        modified matrix inside ``mj_step`` without storing it.

        Without contacts the result is rounding (~1e-12 on the Gen3). With contacts it also
        measures the constraint solver's convergence: ``qfrc_constraint`` is Jᵀ·f while ``qacc``
        is the solver's iterate; at MuJoCo's default ``opt.tolerance`` = 1e-8 the Gen3 falling
        onto the floor showed up to 6e-3 rad/s², at 1e-10 about 1e-11.
        """
        model, data = self._model, self._data
        self.forward()
        mujoco.mj_fullM(model, data, self._mass)
        rhs = (
            data.qfrc_actuator + data.qfrc_passive + data.qfrc_constraint + data.qfrc_applied - data.qfrc_bias
        )
        for body in np.flatnonzero(np.any(data.xfrc_applied != 0.0, axis=1)):
            wrench = data.xfrc_applied[body]
            mujoco.mj_applyFT(model, data, wrench[:3], wrench[3:], data.xipos[body], int(body), rhs)
        rebuilt = np.linalg.solve(self._mass, rhs)
        return float(np.max(np.abs(rebuilt - data.qacc))) if model.nv else 0.0

    def inverse_mass_matrices(self, configurations: ArrayLike) -> FloatArray:
        """Driven-joint block of ``M(q)⁻¹`` (1/(kg·m²)) for each row of ``configurations``.

        Each row gives the driven joints' positions (:attr:`joint_names` order, ``m × n``); every
        other position stays at the model's ``qpos0``. ``M`` comes from ``mj_fullM`` after
        ``mj_kinematics``, ``mj_comPos`` and ``mj_crb`` (armature included), in a scratch
        ``MjData``: the plant's state is untouched. The block of ``M⁻¹``, not the inverse of ``M``'s
        block, because undriven joints are free: a driven torque ``τ`` gives ``q̈ = (M⁻¹)_dd·τ``.
        Returns ``m × n × n``.
        """
        values = configuration_rows("configurations", configurations, self.n)
        qpos = np.tile(self._model.qpos0, (len(values), 1))
        qpos[:, self._qadr] = values
        return self._inverse_mass_block(qpos)

    def _inverse_mass_block(self, qpos: FloatArray) -> FloatArray:
        model = self._model
        data = mujoco.MjData(model)
        mass = np.empty((len(qpos), model.nv, model.nv))
        for k, row in enumerate(qpos):
            data.qpos[:] = row
            mujoco.mj_kinematics(model, data)
            mujoco.mj_comPos(model, data)
            mujoco.mj_crb(model, data)
            mujoco.mj_fullM(model, data, mass[k])
        return np.linalg.inv(mass)[:, self._vadr[:, None], self._vadr]

    def _default_damping_samples(self) -> tuple[FloatArray, FloatArray]:
        """Driven-joint positions and ``M⁻¹`` blocks of the damping check's configurations (cached).

        Every hinge and slide joint (driven or not) is sampled by
        :func:`~torque_ctrl_ros.core.robot.damping_configurations`: within its range when limited,
        ``±π`` for an unlimited hinge, at ``qpos0`` for an unlimited slide; other joints stay at
        ``qpos0``. For the Gen3 these are the configurations :class:`RobotModel` uses.
        """
        if self._damping_samples is None:
            model = self._model
            ids = np.array([model.joint(name).id for name in self._model_joint_names], dtype=np.intp)
            limited = model.jnt_limited[ids].astype(bool)
            hinge = model.jnt_type[ids] == int(mujoco.mjtJoint.mjJNT_HINGE)
            adr = model.jnt_qposadr[ids]
            q0 = model.qpos0[adr]
            lower = np.where(limited, model.jnt_range[ids, 0], np.where(hinge, -np.inf, q0))
            upper = np.where(limited, model.jnt_range[ids, 1], np.where(hinge, np.inf, q0))
            values = damping_configurations(lower, upper)
            qpos = np.tile(model.qpos0, (len(values), 1))
            qpos[:, adr] = values
            driven = [self._model_joint_names.index(name) for name in self._joint_names]
            self._damping_samples = (values[:, driven], self._inverse_mass_block(qpos))
        return self._damping_samples

    def damping_eigenvalue(self, kd: ArrayLike, configurations: ArrayLike | None = None) -> float:
        """Largest eigenvalue of ``h·(M⁻¹)_dd·K_d`` with ``h`` = :attr:`timestep` (s).

        ``K_d = diag(kd)`` (N·m·s/rad; a scalar applies to every driven joint). The configurations
        are ``configurations`` (driven-joint positions, ``m × n``) when given, else the zero pose,
        corner grid and seeded random ones of :meth:`_default_damping_samples`. The same bound as
        :meth:`RobotModel.damping_eigenvalue`, from MuJoCo's mass matrix and the model's own step.
        """
        kd_vec = as_vector("damping", kd, self.n, broadcast_scalar=True, min_value=0.0)
        if configurations is None:
            m_inv = self._default_damping_samples()[1]
        else:
            m_inv = self.inverse_mass_matrices(configurations)
        return float(damping_eigenvalues(m_inv, kd_vec, self.timestep).max())

    def check_damping(self, field: str, kd: ArrayLike) -> float:
        """Refuse a damping torque ``−K_d·q̇`` that would not decay at this model's timestep.

        The plant holds a torque for one :attr:`timestep` ``h``; a damping computed from the state
        gives ``q̇⁺ ≈ (I − h·(M⁻¹)_dd·K_d)·q̇`` (MuJoCo's implicit integrators treat the model's own
        joint damping implicitly, but not a commanded torque). With ``λ`` its largest eigenvalue over
        the sampled configurations: ``λ < 1`` decays smoothly, ``λ >= 1`` raises
        :class:`ConfigError` (it rings, and grows with one period of delay; see
        :func:`~torque_ctrl_ros.core.robot.check_damping_stability`).

        Args:
            field: parameter name for the message (e.g. ``"sim_node.safe_damping"``).
            kd: N·m·s/rad, one value ``>= 0`` per driven joint (:attr:`joint_names` order) or a scalar.

        Returns:
            ``λ`` (0 for no damping).
        """
        kd_vec = as_vector(field, kd, self.n, broadcast_scalar=True, min_value=0.0)
        if not kd_vec.any():
            return 0.0
        qs, m_inv = self._default_damping_samples()
        return check_damping_stability(field, kd_vec, self.timestep, m_inv, qs, self._joint_names)

    def site_pose(self, name: str = "end_effector_link") -> tuple[FloatArray, FloatArray]:
        """World position (3,) in m and rotation matrix (3, 3) of site ``name`` at the current q.

        Runs ``mj_kinematics`` first, so the pose matches :attr:`q` even right after a step.
        Raises :class:`FrameNotFoundError` listing the model's sites for an unknown name.
        """
        site = mujoco.mj_name2id(self._model, mujoco.mjtObj.mjOBJ_SITE, name)
        if site < 0:
            sites = [self._model.site(s).name for s in range(self._model.nsite)]
            raise FrameNotFoundError(f"unknown site {name!r}; sites in the model: {sites}")
        mujoco.mj_kinematics(self._model, self._data)
        return self._data.site_xpos[site].copy(), self._data.site_xmat[site].reshape(3, 3).copy()
