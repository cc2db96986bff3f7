"""How far a frame's origin can reach: the bound pose and position targets are checked against."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from .errors import ConfigError, TargetError
from .robot import RobotModel
from .validation import FloatArray

REACH_MARGIN = 0.01
"""Added to :class:`Reach`'s bound (m): it only keeps a target a few mm out (a tool frame measured
slightly short) from being refused."""

STRETCH_MARGIN = 0.015
"""How far (m) inside :class:`Reach`'s bound without its margin a target must lie for a law without a
singularity barrier (``achd_rnea``): :meth:`Reach.check_clear_of_stretch`. The bound is reached only
where the offsets line up (straight up, 0.9028 m for the Gen3's tool); sideways the arm stretches
at 0.8975 m, and an approached tool target there drives the wrist through the stretched
singularity at several times its velocity limit, where a few mm inside it stays near half a limit
(docs/controllers.md, "Measurements behind the core's bounds and defaults"). This margin leaves
10 mm sideways."""

MAX_TARGET_DISTANCE = 10.0
"""Largest coordinate (m, base frame) of a Cartesian target position a core task or controller
takes (:func:`check_target_position`): far past any arm's reach (the Gen3's tool: 0.91 m, see
:class:`Reach`, which the nodes check first), so only absurd numbers are refused (a unit
mistake, 1e160 m). Within it the laws here still solve at the highest gains they accept; beyond,
the error times the gain outgrows them: the QP falls back, and far enough out achd_rnea's
constrained solve is non-finite (docs/controllers.md)."""


def check_target_position(position: FloatArray, what: str) -> None:
    """Refuse a target ``position`` (m, base frame) with a coordinate beyond
    ±:data:`MAX_TARGET_DISTANCE` (or NaN)."""
    limit = MAX_TARGET_DISTANCE
    if not all(-limit <= x <= limit for x in position.tolist()):
        raise TargetError(
            f"{what}: position {point_text(position)} m is beyond ±{limit:g} m of the base frame origin, "
            "far past any arm's reach"
        )


@dataclass(frozen=True)
class Reach:
    """Where a frame's origin can be: within :attr:`radius` (m) of a circle about the first joint's axis.

    On the chain of joints ``j₁ … j_k`` from the root to the frame, with ``t_j`` the translation
    of joint ``j``'s placement in its parent and ``t_f`` that of the frame in its joint: ``j₁``
    turns about a fixed axis, so the next origin on the chain (``j₂``'s, or the frame's) runs on
    a circle about that axis, and every rotation after it can only add ``Σ_{j≥3}‖t_j‖ + ‖t_f‖``
    (triangle inequality; the joints are revolute: a joint moves nothing at its own origin). The
    origin is then within that sum of the circle. It is an outer bound, tight only where every
    offset after ``j₂`` can line up pointing away from the circle: for the Gen3's tool, 0.9028 m
    (+ :data:`REACH_MARGIN`) from a circle of 5.4 mm radius 0.285 m above the base. (Measured
    from the base origin, the bound would be 1.198 m in every direction while the arm reaches
    0.90 m sideways: it would take targets 1.15 m out, which the arm can only stretch toward,
    saturated.) Only revolute joints are supported (so does
    :class:`~.robot.RobotModel`): a prismatic one's travel is no offset.

    Attributes:
        center: the circle's centre (m, base frame).
        axis: unit vector normal to the circle (the first joint's axis, base frame).
        circle_radius: m.
        radius: the farthest (m) the frame's origin can be from the circle, margin included.
        joint: the first joint's name (for messages), or ``""`` for a frame fixed to the root body
            (the centre: its own position, the circle a point).
    """

    center: FloatArray
    axis: FloatArray
    circle_radius: float
    radius: float
    joint: str = ""

    @classmethod
    def of(cls, robot: RobotModel, frame: str | int) -> Reach:
        """The reach of ``frame``'s origin on ``robot`` (see the class docs)."""
        model = robot.model
        f = model.frames[robot.frame_id(frame)]
        chain: list[int] = []  # joint ids, root first
        joint = int(f.parentJoint)
        while joint > 0:
            chain.insert(0, joint)
            joint = int(model.parents[joint])
        # Offsets after the first joint: the next joint's placement (or the frame's), then the rest.
        offsets = [model.jointPlacements[j].translation for j in chain[1:]] + [f.placement.translation]
        total = sum(float(np.linalg.norm(t)) for t in offsets)
        if not chain:  # a frame on the root body: fixed
            return cls(np.array(f.placement.translation), np.array([0.0, 0.0, 1.0]), 0.0, REACH_MARGIN)
        data = model.createData()
        q0 = pin.neutral(model)
        pin.computeJointJacobians(model, data, q0)
        j1 = chain[0]
        column = pin.getJointJacobian(model, data, j1, pin.LOCAL_WORLD_ALIGNED)[:, model.joints[j1].idx_v]
        linear, angular = column[:3], column[3:]
        if (
            model.joints[j1].nv != 1
            or np.linalg.norm(linear) > 1e-12
            or abs(np.linalg.norm(angular) - 1.0) > 1e-12
        ):
            raise ConfigError(
                f"reach of {f.name!r}: its first joint {model.names[j1]!r} is not one revolute DoF"
            )
        origin = data.oMi[j1]
        axis = np.array(angular)
        arm = origin.rotation @ offsets[0]  # from j₁'s origin to the circle, at q = neutral
        height = float(arm @ axis)
        return cls(
            center=origin.translation + height * axis,
            axis=axis,
            circle_radius=float(np.linalg.norm(arm - height * axis)),
            radius=total - float(np.linalg.norm(offsets[0])) + REACH_MARGIN,
            joint=str(model.names[j1]),
        )

    def distance(self, position: FloatArray) -> float:
        """Distance (m) from ``position`` (m, base frame) to the circle (finite inputs; ``inf``
        only past ~1e308)."""
        v = np.asarray(position, dtype=np.float64) - self.center
        height = float(v @ self.axis)
        radial = math.hypot(*(v - height * self.axis))
        return math.hypot(radial - self.circle_radius, height)

    def check(self, position: FloatArray, what: str) -> None:
        """Refuse a target ``position`` (m, base frame) the frame's origin cannot reach: the arm
        could only stretch toward it, saturating its joints, and an absurd one (1e200 m) makes
        every step's solve fail."""
        distance = self.distance(position)
        if not distance <= self.radius:
            where = (
                f"the circle {self.joint}'s rotation moves the next joint on"
                if self.joint
                else "the frame's fixed position"
            )
            raise TargetError(
                f"{what}: position {point_text(position)} m is {distance:.4g} m from {where}, farther than "
                f"the rest of the chain reaches ({self.radius:.3f} m)"
            )

    def check_clear_of_stretch(self, position: FloatArray, what: str) -> None:
        """Refuse a target ``position`` (m, base frame) within :data:`STRETCH_MARGIN` of the bound
        (before its :data:`REACH_MARGIN`): near full stretch, where the arm can only get to it
        through (or past) its stretched singularity."""
        distance = self.distance(position)
        limit = self.radius - REACH_MARGIN - STRETCH_MARGIN
        if not distance <= limit:
            raise TargetError(
                f"{what}: position {point_text(position)} m is {distance:.4f} m from the circle "
                f"{self.joint}'s rotation moves the next joint on, more than {limit:.4f} m "
                f"(by {1e3 * (distance - limit):.2g} mm): within "
                f"{STRETCH_MARGIN * 1e3:g} mm of full stretch, or past it (the bound is an outer one, met "
                "only where the links line up: the Gen3's tool stretches 5 mm short of it sideways), the "
                "arm would pass its stretched singularity (the wrist at several times its velocity "
                "limits); use qpid or hqpid, whose singularity barrier holds it back: they take the frame "
                "as close as the arm reaches"
            )


def point_text(position: FloatArray) -> str:
    """``position`` (m) as ``(x, y, z)`` with four significant digits, for messages."""
    return "(" + ", ".join(f"{float(x):.4g}" for x in position) + ")"


__all__ = [
    "MAX_TARGET_DISTANCE",
    "REACH_MARGIN",
    "STRETCH_MARGIN",
    "Reach",
    "check_target_position",
    "point_text",
]
