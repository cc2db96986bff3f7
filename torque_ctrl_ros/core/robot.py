"""Robot model: Pinocchio dynamics behind a joint-angle interface.

The controllers see the arm as ``n`` one-degree-of-freedom joints with angles
``q`` (rad), velocities ``v`` (rad/s) and torques ``tau`` (N·m), in the order of
:attr:`RobotModel.joint_names`. Pinocchio stores a URDF ``continuous`` joint as
``(cos q, sin q)`` (so ``nq != nv``); :meth:`RobotModel.configuration` does that
mapping once, so no other module has to know about it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike, NDArray

from .errors import FrameNotFoundError, ModelError, StateError
from .validation import FloatArray, all_finite, as_vector

# Pinocchio uses the largest double (or inf) for "no limit"; treat anything this big as none.
_NO_LIMIT = 1e10
_REVOLUTE_BOUNDED = {"JointModelRX", "JointModelRY", "JointModelRZ", "JointModelRevoluteUnaligned"}
_REVOLUTE_UNBOUNDED = {
    "JointModelRUBX",
    "JointModelRUBY",
    "JointModelRUBZ",
    "JointModelRevoluteUnboundedUnaligned",
}


def wrap_angle(angle: FloatArray) -> FloatArray:
    """Wrap angles (rad) into ``[-pi, pi)``."""
    return np.mod(angle + np.pi, 2.0 * np.pi) - np.pi


def _as_slice(index: NDArray[np.intp]) -> slice | NDArray[np.intp]:
    """``index`` as an equivalent slice when it is evenly spaced and increasing, else unchanged.

    Basic indexing with a slice gives a view, which a ufunc can write its result into.
    """
    if index.size == 0:
        return slice(0, 0)
    start = int(index[0])
    step = int(index[1] - index[0]) if index.size > 1 else 1
    if step > 0 and np.array_equal(index, np.arange(start, start + step * index.size, step)):
        return slice(start, start + step * (index.size - 1) + 1, step)
    return index


class RobotModel:
    """A fixed-base serial arm of one-DoF revolute joints, loaded into Pinocchio.

    Attributes:
        model: the Pinocchio model (gravity ``(0, 0, -9.81)`` m/s² unless changed).
        data: a Pinocchio data buffer owned by this object (not thread-safe).
        joint_names: actuated joints, in Pinocchio's (kinematic-tree) order.
        n: number of joints (= ``model.nv``).
        continuous: ``True`` for joints that turn without end (no position limits).
        position_lower, position_upper: limits in rad (``∓inf`` on continuous joints).
        velocity_limit: |q̇| bound in rad/s (``inf`` where the description gives none).
        effort_limit: |τ| bound in N·m (``inf`` where the description gives none).
    """

    def __init__(self, model: pin.Model, *, source: str = "<model>") -> None:
        self.model = model
        self.data = model.createData()
        self.source = source
        names: list[str] = []
        continuous: list[bool] = []
        idx_q: list[int] = []
        two_slots: list[bool] = []  # stored as (cos q, sin q) rather than q
        for jid in range(1, model.njoints):
            joint = model.joints[jid]
            shortname = joint.shortname()
            if shortname in _REVOLUTE_UNBOUNDED:
                continuous.append(True)
            elif shortname in _REVOLUTE_BOUNDED:
                lo = model.lowerPositionLimit[joint.idx_q]
                hi = model.upperPositionLimit[joint.idx_q]
                continuous.append(not (abs(lo) < _NO_LIMIT and abs(hi) < _NO_LIMIT and lo < hi))
            else:
                raise ModelError(
                    f"{source}: joint {model.names[jid]!r} is a {shortname}; only one-DoF "
                    "revolute joints on a fixed base are supported"
                )
            names.append(model.names[jid])
            idx_q.append(joint.idx_q)
            two_slots.append(joint.nq == 2)
        if model.nv != len(names):
            raise ModelError(f"{source}: expected nv == number of joints, got nv={model.nv}")
        if not names:
            raise ModelError(f"{source}: the model has no joints")
        self.joint_names: tuple[str, ...] = tuple(names)
        self.n: int = len(names)
        self.continuous = np.array(continuous, dtype=bool)
        idx = np.array(idx_q, dtype=np.intp)
        self._cont_idx = np.flatnonzero(self.continuous)
        # How Pinocchio stores each angle: as (cos q, sin q) for its unbounded revolute joints
        # (a URDF "continuous" joint), as q itself for the others, which include unbounded ones
        # (an MJCF hinge without a range is a plain revolute joint without limits).
        self._cs_idx = np.flatnonzero(two_slots)
        self._angle_idx = np.flatnonzero(~np.array(two_slots, dtype=bool))
        self._q_cos = idx[self._cs_idx]
        self._q_sin = idx[self._cs_idx] + 1
        self._q_angle = idx[self._angle_idx]
        self._q_pin = pin.neutral(model)
        # configuration() runs every control step: when each kind of Pinocchio slot is evenly
        # spaced (the Gen3's are), angles, cosines and sines go straight into views of _q_pin.
        slots = [_as_slice(i) for i in (self._q_angle, self._q_cos, self._q_sin)]
        self._q_pin_views: tuple[FloatArray, FloatArray, FloatArray] | None = (
            (self._q_pin[slots[0]], self._q_pin[slots[1]], self._q_pin[slots[2]])
            if all(isinstance(sl, slice) for sl in slots)
            else None
        )
        self._wrap_scale = np.where(self.continuous, 2.0 * np.pi, 0.0)

        lower = np.full(self.n, -np.inf)
        upper = np.full(self.n, np.inf)
        bounded = ~self.continuous
        lower[bounded] = model.lowerPositionLimit[idx[bounded]]
        upper[bounded] = model.upperPositionLimit[idx[bounded]]
        self.position_lower: FloatArray = lower
        self.position_upper: FloatArray = upper
        self.velocity_limit: FloatArray = self._limit_or_inf(np.array(model.velocityLimit))
        self.effort_limit: FloatArray = self._limit_or_inf(np.array(model.effortLimit))
        self._frame_names: tuple[str, ...] = tuple(f.name for f in model.frames)

    @staticmethod
    def _limit_or_inf(values: FloatArray) -> FloatArray:
        out = values.astype(np.float64).copy()
        out[~(np.abs(out) < _NO_LIMIT) | (out <= 0.0)] = np.inf
        return out

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_urdf_string(cls, urdf: str) -> RobotModel:
        """Build from a URDF document (e.g. the ``robot_description`` parameter)."""
        if not isinstance(urdf, str) or "<robot" not in urdf:
            raise ModelError("robot_description: expected a URDF document containing <robot>")
        try:
            model = pin.buildModelFromXML(urdf)
        except (RuntimeError, ValueError) as exc:
            raise ModelError(f"robot_description: cannot parse URDF: {exc}") from None
        return cls(model, source="robot_description")

    @classmethod
    def from_urdf_file(cls, path: str | Path) -> RobotModel:
        """Build from a URDF file."""
        path = Path(path)
        if not path.is_file():
            raise ModelError(f"URDF file not found: {str(path)!r}")
        try:
            model = pin.buildModelFromUrdf(str(path))
        except (RuntimeError, ValueError) as exc:
            raise ModelError(f"{path}: cannot parse URDF: {exc}") from None
        return cls(model, source=str(path))

    @classmethod
    def from_mjcf_file(cls, path: str | Path) -> RobotModel:
        """Build from an MJCF file (hinges without a range count as continuous)."""
        path = Path(path)
        if not path.is_file():
            raise ModelError(f"MJCF file not found: {str(path)!r}")
        try:
            model = pin.buildModelFromMJCF(str(path))
        except (RuntimeError, ValueError) as exc:
            raise ModelError(f"{path}: cannot parse MJCF: {exc}") from None
        return cls(model, source=str(path))

    @classmethod
    def from_file(cls, path: str | Path) -> RobotModel:
        """Build from a ``.urdf`` or ``.xml`` (MJCF) file, chosen by extension."""
        suffix = Path(path).suffix.lower()
        if suffix == ".urdf":
            return cls.from_urdf_file(path)
        if suffix == ".xml":
            return cls.from_mjcf_file(path)
        raise ModelError(f"{path}: expected a .urdf or an MJCF .xml file")

    # ------------------------------------------------------------ configuration
    def check_state(self, q: ArrayLike, v: ArrayLike) -> tuple[FloatArray, FloatArray]:
        """Validate a joint state; raise :class:`StateError` on wrong length or non-finite.

        Well-formed float64 arrays are returned as they are (this runs every control step);
        anything else goes through the full conversion, whose error says what was wrong.
        """
        if (
            isinstance(q, np.ndarray)
            and isinstance(v, np.ndarray)
            and q.dtype == np.float64
            and v.dtype == np.float64
            and q.shape == v.shape == (self.n,)
            and all_finite(q)
            and all_finite(v)
        ):
            return q, v
        return (
            as_vector("joint positions", q, self.n, error=StateError),
            as_vector("joint velocities", v, self.n, error=StateError),
        )

    def configuration(self, q: FloatArray) -> FloatArray:
        """Pinocchio configuration (length ``nq``) for joint angles ``q`` (length ``n``).

        Returns an internal buffer, overwritten by the next call.
        """
        out = self._q_pin
        qc = q[self._cs_idx]
        if self._q_pin_views is not None:
            angle, cos, sin = self._q_pin_views
            angle[:] = q[self._angle_idx]
            np.cos(qc, cos)
            np.sin(qc, sin)
        else:
            out[self._q_angle] = q[self._angle_idx]
            out[self._q_cos] = np.cos(qc)
            out[self._q_sin] = np.sin(qc)
        return out

    def angles(self, q_pin: FloatArray) -> FloatArray:
        """Joint angles (rad) from a Pinocchio configuration (inverse of :meth:`configuration`)."""
        q = np.empty(self.n)
        q[self._angle_idx] = q_pin[self._q_angle]
        q[self._cs_idx] = np.arctan2(q_pin[self._q_sin], q_pin[self._q_cos])
        return q

    def wrap(self, q: FloatArray) -> FloatArray:
        """Copy of ``q`` with continuous-joint angles wrapped into ``[-pi, pi)``."""
        out = np.array(q, dtype=np.float64)
        out[self._cont_idx] = wrap_angle(out[self._cont_idx])
        return out

    def difference(self, q_to: FloatArray, q_from: FloatArray, out: FloatArray | None = None) -> FloatArray:
        """``q_to ⊖ q_from`` (rad): plain difference, the short way round on continuous joints.

        ``d = q_to − q_from``, then ``d −= 2π·rint(d / 2π)`` on continuous joints (the scale is 0
        on bounded ones). Written into ``out`` when given (same shape), else into a new array.
        """
        d = np.subtract(q_to, q_from, out=out)
        # np.rint rounds half to even like np.round, without np.round's ~0.6 µs Python wrapper.
        d -= self._wrap_scale * np.rint(d * (0.5 / np.pi))
        return d

    # ------------------------------------------------------------------- frames
    @property
    def frame_names(self) -> tuple[str, ...]:
        """All frame names of the model (links, joints, fixed frames)."""
        return self._frame_names

    def frame_id(self, name: str | int) -> int:
        """Index of frame ``name`` (or ``name`` itself when it is a valid index);
        :class:`FrameNotFoundError` lists the valid names."""
        if isinstance(name, int | np.integer) and not isinstance(name, bool):
            # Pinocchio does not check an index: out of range it reads past its frame list.
            if not 0 <= name < self.model.nframes:
                raise FrameNotFoundError(
                    f"frame index {name} is not in {self.source}, which has {self.model.nframes} "
                    f"frames; valid frames are {list(self._frame_names)}"
                )
            return int(name)
        if not isinstance(name, str) or not self.model.existFrame(name):
            raise FrameNotFoundError(
                f"frame {name!r} is not in {self.source}; valid frames are {list(self._frame_names)}"
            )
        return int(self.model.getFrameId(name))

    def dofs_moving(self, frame: str | int) -> int:
        """Number of joint DoFs between the root and ``frame``: the most rows of its Jacobian that
        can be independent (e.g. 1 for the first link of the Gen3, 7 for its tool)."""
        model = self.model
        joint = model.frames[self.frame_id(frame)].parentJoint
        return sum(int(model.joints[j].nv) for j in list(model.supports[joint])[1:])  # not the universe

    def joint_index(self, names: Sequence[str]) -> np.ndarray:
        """Indices (into :attr:`joint_names`) of ``names``; error lists the valid names."""
        missing = [n for n in names if n not in self.joint_names]
        if missing:
            raise StateError(f"unknown joint name(s) {missing}; valid joints are {list(self.joint_names)}")
        return np.array([self.joint_names.index(n) for n in names], dtype=np.intp)

    # ----------------------------------------------------------------- dynamics
    def rnea(self, q: FloatArray, v: FloatArray, a: FloatArray) -> FloatArray:
        """Inverse dynamics ``tau = M(q)·a + C(q, v)·v + g(q)`` (N·m), no external forces."""
        return np.array(pin.rnea(self.model, self.data, self.configuration(q), v, a))

    def gravity(self, q: FloatArray) -> FloatArray:
        """Generalised gravity ``g(q)`` (N·m): the torque that holds the arm still."""
        return np.array(pin.computeGeneralizedGravity(self.model, self.data, self.configuration(q)))

    def nonlinear_effects(self, q: FloatArray, v: FloatArray) -> FloatArray:
        """``c(q, v) = C(q, v)·v + g(q)`` (N·m)."""
        return np.array(pin.nonLinearEffects(self.model, self.data, self.configuration(q), v))

    def mass_matrix(self, q: FloatArray) -> FloatArray:
        """Joint-space inertia ``M(q)`` (kg·m²), symmetric ``n × n``."""
        m = pin.crba(self.model, self.data, self.configuration(q))
        return np.triu(m) + np.triu(m, 1).T

    def frame_placement(self, q: FloatArray, frame: str | int) -> pin.SE3:
        """Pose of ``frame`` in the base frame (forward kinematics)."""
        fid = self.frame_id(frame)
        pin.framesForwardKinematics(self.model, self.data, self.configuration(q))
        return self.data.oMf[fid].copy()

    def frame_jacobian(
        self,
        q: FloatArray,
        frame: str | int,
        reference: pin.ReferenceFrame = pin.LOCAL_WORLD_ALIGNED,
    ) -> FloatArray:
        """Frame Jacobian ``J`` (6 × n, linear rows first) with ``[ẋ; ω] = J·q̇``."""
        fid = self.frame_id(frame)
        return np.array(
            pin.computeFrameJacobian(self.model, self.data, self.configuration(q), fid, reference)
        )

    def frame_bias_acceleration(
        self,
        q: FloatArray,
        v: FloatArray,
        frame: str | int,
        reference: pin.ReferenceFrame = pin.LOCAL_WORLD_ALIGNED,
    ) -> FloatArray:
        """Drift ``J̇·q̇`` (6,) of the frame's classical acceleration: ``ẍ = J·q̈ + J̇·q̇``.

        The linear part is the classical (not spatial) acceleration of the frame origin,
        so a point moving on a circle has a centripetal term here.
        """
        fid = self.frame_id(frame)
        pin.forwardKinematics(self.model, self.data, self.configuration(q), v, np.zeros(self.n))
        acc = pin.getFrameClassicalAcceleration(self.model, self.data, fid, reference)
        return np.array(acc.vector)
