"""Capsules on the links: their distances to each other (self-collision) and to the floor, with gradients.

The capsules come from a YAML file (URDF cannot describe capsules; urdfdom silently
drops them), for example ``config/gen3_collision.yaml``::

    capsules:                     # one or more per link, in the link frame (m)
      base_link:
        - {from: [0, 0, 0.01], to: [0, 0, 0.12], radius: 0.05}
    exclude_pairs:                # optional, on top of the adjacent links
      - [spherical_wrist_1_link, bracelet_link]

A pair of links is checked unless the two links hang on the same joint or on a joint
and its parent joint (adjacent links touch by construction), or the pair is excluded.
Distances are computed by coal (through Pinocchio's geometry model) in one call per
step. For the closest pair with witness points ``p₁`` (on link a) and ``p₂`` (on link b)
and unit normal ``n̂`` pointing from ``p₁`` to ``p₂`` (the direction that increases the
distance when ``p₂`` moves along it)::

    d_min = signed distance (m, negative when the capsules overlap)
    ∇d    = n̂ᵀ·(J_p₂ − J_p₁)                 (1 × n, m/rad)
    drift = n̂ᵀ·(J̇_p₂·q̇ − J̇_p₁·q̇)             (m/s²)

where ``J_p`` is the Jacobian of the linear velocity of the material point of the link
at ``p`` and ``J̇_p·q̇`` its classical bias acceleration. ``d̈ = ∇d·q̈ + drift`` leaves out
the normal's rotation, ``ṅᵀ·(v_p₂ − v_p₁)``. That term would be ``≥ 0`` if the witness points
stayed the same material points, but they slide along the capsules' axes, and then it takes
either sign. So a barrier built on it is not conservative: with the slack unused the distance
can still dip a couple of mm below ``d_safe``; pick ``d_safe`` with that margin. The missing
term grows with the speed squared, so the QP controllers accept this barrier only with the joint
velocity barrier, which keeps the speeds where the dip stays that small. (The term's size against
finite differences, and the dips in MuJoCo with and without the velocity barrier:
docs/controllers.md, "Measurements behind the core's bounds and defaults".)

The same capsules, those that move up and down, are kept above the floor's plane by
:class:`FloorModel` (a ``coal.Halfspace`` paired with each): there the normal is fixed, and the
rows are exact. :class:`CapsuleDistances` holds what both share (the distance query, the closest
pairs' rows).

A capsule is ``coal.Capsule(radius, length)`` with the full segment length (coal keeps half of
it as ``halfLength``; given the half length, a capsule would cover only the middle half of its
segment, leaving the joints unchecked).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import coal
import numpy as np
import pinocchio as pin
import yaml

from ..errors import ConfigError
from ..robot import RobotModel, sample_configurations
from ..validation import FloatArray, as_positive_float, as_vector

#: Largest capsule coordinate or radius accepted (m): far beyond any link of an arm.
_MAX_SIZE_M = 10.0


@dataclass(frozen=True)
class Capsule:
    """A capsule fixed to a link: segment ``start``–``end`` (m, link frame) swept by ``radius`` (m)."""

    link: str
    start: FloatArray
    end: FloatArray
    radius: float


@dataclass(frozen=True)
class CollisionSpec:
    """Validated contents of a collision YAML file."""

    capsules: tuple[Capsule, ...]
    exclude_pairs: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], source: str = "<collision model>") -> CollisionSpec:
        """Validate ``{capsules: {link: [{from, to, radius}, ...]}, exclude_pairs: [[a, b], ...]}``."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"{source}: expected a mapping with 'capsules', got {type(data).__name__}")
        unknown = sorted(set(data) - {"capsules", "exclude_pairs"})
        if unknown:
            raise ConfigError(f"{source}: unknown key(s) {unknown}; valid are ['capsules', 'exclude_pairs']")
        links = data.get("capsules")
        if not isinstance(links, Mapping) or not links:
            raise ConfigError(f"{source}: 'capsules' must map link names to lists of capsules")
        capsules: list[Capsule] = []
        for link, items in links.items():
            if isinstance(items, Mapping):
                items = [items]
            if not isinstance(items, Sequence) or not items:
                raise ConfigError(f"{source}: capsules.{link}: expected a list of capsules")
            for k, item in enumerate(items):
                where = f"{source}: capsules.{link}[{k}]"
                if not isinstance(item, Mapping) or set(item) != {"from", "to", "radius"}:
                    raise ConfigError(f"{where}: expected keys from, to, radius; got {item!r}")
                capsule = Capsule(
                    str(link),
                    as_vector(f"{where}.from", item["from"], 3),
                    as_vector(f"{where}.to", item["to"], 3),
                    as_positive_float(f"{where}.radius", item["radius"]),
                )
                # 1e300 passed as a number and broke coal's distance query on the first step.
                if max(np.abs(capsule.start).max(), np.abs(capsule.end).max(), capsule.radius) > _MAX_SIZE_M:
                    raise ConfigError(f"{where}: coordinates and radius must be within {_MAX_SIZE_M:g} m")
                capsules.append(capsule)
        pairs: list[tuple[str, str]] = []
        excluded = data.get("exclude_pairs") or []
        if not isinstance(excluded, Sequence) or isinstance(excluded, str):
            raise ConfigError(
                f"{source}: exclude_pairs: expected a list of [link_a, link_b], got {excluded!r}"
            )
        for pair in excluded:
            if not isinstance(pair, Sequence) or isinstance(pair, str) or len(pair) != 2:
                raise ConfigError(f"{source}: exclude_pairs: expected [link_a, link_b], got {pair!r}")
            pairs.append((str(pair[0]), str(pair[1])))
        return cls(tuple(capsules), tuple(pairs))

    @classmethod
    def from_file(cls, path: str | Path) -> CollisionSpec:
        """Load and validate a collision YAML file."""
        path = Path(path)
        if not path.is_file():
            raise ConfigError(f"collision model file not found: {str(path)!r}")
        with path.open() as f:
            try:
                data = yaml.safe_load(f)
            except (yaml.YAMLError, UnicodeDecodeError) as exc:
                raise ConfigError(f"{path}: invalid YAML: {exc}") from None
        return cls.from_mapping(data, str(path))


def _capsule_placement(start: FloatArray, end: FloatArray) -> tuple[pin.SE3, float]:
    """Placement of a coal capsule (axis = local z, centred) and its half length (m)."""
    axis = end - start
    length = float(np.linalg.norm(axis))
    centre = 0.5 * (start + end)
    if length < 1e-12:
        return pin.SE3(np.eye(3), centre), 0.0
    z = axis / length
    # Any rotation taking e_z to z: the minimal one (Rodrigues), or a half turn if opposite.
    c = float(z[2])
    if c < -1.0 + 1e-12:
        R = np.diag([1.0, -1.0, -1.0])
    else:
        k = np.cross([0.0, 0.0, 1.0], z)
        K = pin.skew(k)
        R = np.eye(3) + K + K @ K / (1.0 + c)
    return pin.SE3(R, centre), 0.5 * length


def _add_capsules(robot: RobotModel, spec: CollisionSpec, geom_model: pin.GeometryModel) -> list[str]:
    """Add the spec's capsules to ``geom_model`` on their links' joints; returns each one's link.

    Raises:
        ConfigError: a link of the spec is not a frame of the model (the message lists the
            valid frames).
    """
    model = robot.model
    capsule_link: list[str] = []
    for k, cap in enumerate(spec.capsules):
        try:
            fid = robot.frame_id(cap.link)
        except KeyError as exc:
            raise ConfigError(f"collision model: capsules.{cap.link}: {exc}") from None
        frame = model.frames[fid]
        placement, half_length = _capsule_placement(cap.start, cap.end)
        obj = pin.GeometryObject(
            f"{cap.link}_{k}",
            frame.parentJoint,
            fid,
            frame.placement * placement,
            coal.Capsule(cap.radius, 2.0 * half_length),
        )
        geom_model.addGeometryObject(obj)
        capsule_link.append(cap.link)
    return capsule_link


class CapsuleDistances:
    """Signed distances of pairs of geometries on the robot (capsules, or a capsule and a fixed
    plane) and, for the :attr:`pairs` closest, their gradient and drift: the algebra
    :class:`SelfCollisionModel` and :class:`FloorModel` share.

    Call :meth:`update` after the robot's kinematics (joint placements and world joint
    Jacobians in ``robot.data``, and their time variation ``data.dJ`` for the drift, e.g.
    after ``pinocchio.computeAllTerms``) to fill :attr:`distance`, :attr:`gradient`,
    :attr:`drift`, :attr:`closest_pair`, :attr:`witness` and :attr:`normal` (the closest
    pair's), and the same of the ``pairs`` closest pairs, closest first: :attr:`distances`,
    :attr:`gradients`, :attr:`drifts`, :attr:`tracked_pairs`.
    """

    def __init__(
        self,
        robot: RobotModel,
        geom_model: pin.GeometryModel,
        pair_links: list[tuple[str, str]],
        pairs: int,
    ) -> None:
        """``geom_model`` holds the geometries and their collision pairs, ``pair_links`` names each
        pair's two links."""
        if isinstance(pairs, bool) or not isinstance(pairs, int) or not 1 <= pairs <= len(pair_links):
            raise ConfigError(
                f"collision model: pairs: expected an integer in [1, {len(pair_links)}] "
                f"(the pairs checked), got {pairs!r}"
            )
        self.robot = robot
        self.geom_model = geom_model
        self.pair_links = pair_links
        self.pairs = pairs
        self.geom_data = pin.GeometryData(self.geom_model)
        for req in self.geom_data.distanceRequests:
            req.enable_signed_distance = True
        n = robot.n
        joint_of = [int(o.parentJoint) for o in self.geom_model.geometryObjects]
        # Per pair: which columns of the world Jacobians move link b and link a (1 = a joint
        # between the base and the link), as a (1, 2, 1, n) array that masks [J; J̇].
        self._pair_masks: list[FloatArray] = []
        for pair in self.geom_model.collisionPairs:
            mask = np.stack([robot.moving_columns(joint_of[geom]) for geom in (pair.second, pair.first)])
            self._pair_masks.append(mask.reshape(1, 2, 1, n))
        # The result objects stay in place in geom_data; a list indexes faster.
        self._results = list(self.geom_data.distanceResults)
        self._JJd = np.zeros((2, 1, 6, n))  # [J; J̇] of the whole model, when not given
        self._masked = np.zeros((2, 2, 6, n))  # [J; J̇] × [link b, link a] × 6 × n
        self._J_ba = self._masked[0].reshape(12, n)
        self._Jd_ba = self._masked[1].reshape(12, n)
        self._rows = np.zeros(12)
        self.distances = np.full(pairs, np.inf)
        self.gradients = np.zeros((pairs, n))
        self.drifts = np.zeros(pairs)
        self.tracked_pairs: list[tuple[str, str]] = self.pair_links[:pairs]
        self.distance = np.inf
        self.gradient = self.gradients[0]
        self.drift = 0.0
        self.closest_pair: tuple[str, str] = self.pair_links[0]
        self.witness = (np.zeros(3), np.zeros(3))
        self.normal = np.zeros(3)

    def closest_distance(self, q: FloatArray) -> float:
        """The smallest pair distance (m) at configuration ``q`` (rad), for checks at start: it
        overwrites the robot's kinematics data and :meth:`pair_distances` (the tracked pairs,
        gradients and drifts of the last :meth:`update` stay as they were)."""
        model, data = self.robot.model, self.robot.data
        pin.forwardKinematics(model, data, self.robot.configuration(q))
        pin.updateGeometryPlacements(model, data, self.geom_model, self.geom_data)
        pin.computeDistances(self.geom_model, self.geom_data)
        return min(res.min_distance for res in self.geom_data.distanceResults)

    def pair_distances(self) -> FloatArray:
        """Distance of every pair (m) from the last :meth:`update`, in :attr:`pair_links` order."""
        return np.array([res.min_distance for res in self.geom_data.distanceResults])

    @property
    def num_pairs(self) -> int:
        """Number of link-capsule pairs checked."""
        return len(self.pair_links)

    def update(self, v: FloatArray | None = None, JJd: FloatArray | None = None) -> float:
        """Distances of all pairs; gradient and drift of the :attr:`pairs` smallest. Returns ``d_min`` (m).

        Args:
            v: joint velocities ``q̇`` (rad/s) of the kinematics pass, for the drift; ``None``
                computes the distance and gradient only (``drift = 0``).
            JJd: the world Jacobian of the chain and its time variation stacked (2 × 6 × n, as
                ``KinematicsState.JJd``); ``None`` copies them from ``robot.data``.

        With the witness points ``p`` and the world Jacobian ``J_j`` of the link's joint
        (columns of the joints that do not move the link set to 0), the material point's
        velocity is ``[n̂; p × n̂]ᵀ·J_j·q̇`` along ``n̂``, and its classical acceleration at
        ``q̈ = 0`` is ``a + α × p + ω × v_p`` with ``(a, α) = J̇_j·q̇`` the spatial bias
        acceleration and ``(v, ω) = J_j·q̇`` the spatial velocity at the world origin,
        ``v_p = v + ω × p``; and ``n̂·(α × p) = α·(p × n̂)``. So, with the signed rows
        ``r_b = [n̂; p₂ × n̂]``, ``r_a = −[n̂; p₁ × n̂]``::

            ∇d    = r_b·J_b + r_a·J_a
            drift = (r_b·J̇_b + r_a·J̇_a)·q̇ + n̂·(ω_b × v_p₂) − n̂·(ω_a × v_p₁)

        Both links' masked ``[J; J̇]`` come from one product with the pair's column masks; the
        3-vector algebra runs on Python floats (a numpy call costs ~1 µs whatever its size).
        """
        model, data = self.robot.model, self.robot.data
        pin.updateGeometryPlacements(model, data, self.geom_model, self.geom_data)
        # Returns the index of the pair with the smallest distance.
        k = int(pin.computeDistances(self.geom_model, self.geom_data))
        if JJd is None:
            self._JJd[0, 0] = data.J
            self._JJd[1, 0] = data.dJ
            JJd4 = self._JJd
        else:
            JJd4 = JJd[:, None]  # (2, 1, 6, n), as the pair masks broadcast
        if self.pairs == 1:
            self._pair_terms(0, k, v, JJd4)
        else:
            self._track_closest(v, JJd4)
        self.distance = float(self.distances[0])
        self.drift = float(self.drifts[0])
        self.closest_pair = self.tracked_pairs[0]
        return self.distance

    def _track_closest(self, v: FloatArray | None, JJd4: FloatArray) -> None:
        """Rows for the :attr:`pairs` closest pairs, skipping a pair at the distance of a closer
        one to within 1 nm: capsules ending on the same joint sphere give the same witness
        points, distance and gradient, and two identical rows make the QP degenerate (its solve
        runs out of iterations); distinct pairs that close are a coincidence, and the row they
        would take goes to the next pair. Rows left over stay inactive (distance inf, gradient
        and drift 0).
        """
        distances = [res.min_distance for res in self._results]
        row, last = 0, -math.inf
        for k in sorted(range(len(distances)), key=distances.__getitem__):
            d = distances[k]
            if d - last < 1e-9:
                continue
            last = d
            self._pair_terms(row, k, v, JJd4)
            row += 1
            if row == self.pairs:
                return
        self.distances[row:] = np.inf
        self.gradients[row:] = 0.0
        self.drifts[row:] = 0.0

    def _pair_terms(self, row: int, k: int, v: FloatArray | None, JJd4: FloatArray) -> None:
        """Distance, gradient and drift of pair ``k`` into row ``row`` (row 0 also: witness, normal);
        ``JJd4``: ``[J; J̇]`` of the chain as (2, 1, 6, n)."""
        res = self._results[k]
        self.distances[row] = res.min_distance
        self.tracked_pairs[row] = self.pair_links[k]
        p1 = res.getNearestPoint1()  # fresh arrays, not views into res
        p2 = res.getNearestPoint2()
        x1, y1, z1 = p1.tolist()
        x2, y2, z2 = p2.tolist()
        nx, ny, nz = res.normal.tolist()
        norm = math.sqrt(nx * nx + ny * ny + nz * nz)
        if norm < 1e-12:
            # coal's witnesses satisfy p₂ − p₁ = d·n̂: overlapping (d < 0) they point against n̂.
            sign = -1.0 if res.min_distance < 0.0 else 1.0
            nx, ny, nz = sign * (x2 - x1), sign * (y2 - y1), sign * (z2 - z1)
            norm = math.sqrt(nx * nx + ny * ny + nz * nz)
        if norm > 1e-12:
            nx, ny, nz = nx / norm, ny / norm, nz / norm
        else:
            nx = ny = nz = 0.0
        if row == 0:
            self.normal = np.array((nx, ny, nz))
            self.witness = (p1, p2)
        np.multiply(JJd4, self._pair_masks[k], self._masked)
        rows = self._rows
        # r_b = [n̂; p₂ × n̂], r_a = −[n̂; p₁ × n̂]
        rows[:] = (
            nx,
            ny,
            nz,
            y2 * nz - z2 * ny,
            z2 * nx - x2 * nz,
            x2 * ny - y2 * nx,
            -nx,
            -ny,
            -nz,
            z1 * ny - y1 * nz,
            x1 * nz - z1 * nx,
            y1 * nx - x1 * ny,
        )
        rows.dot(self._J_ba, self.gradients[row])
        if v is None:
            self.drifts[row] = 0.0
            return
        # Spatial velocities (v, ω) of link b and link a at the world origin.
        vx2, vy2, vz2, wx2, wy2, wz2, vx1, vy1, vz1, wx1, wy1, wz1 = self._J_ba.dot(v).tolist()
        # v_p = v + ω × p
        ux2, uy2, uz2 = vx2 + wy2 * z2 - wz2 * y2, vy2 + wz2 * x2 - wx2 * z2, vz2 + wx2 * y2 - wy2 * x2
        ux1, uy1, uz1 = vx1 + wy1 * z1 - wz1 * y1, vy1 + wz1 * x1 - wx1 * z1, vz1 + wx1 * y1 - wy1 * x1
        self.drifts[row] = (
            float(rows.dot(self._Jd_ba).dot(v))
            + nx * (wy2 * uz2 - wz2 * uy2 - wy1 * uz1 + wz1 * uy1)
            + ny * (wz2 * ux2 - wx2 * uz2 - wz1 * ux1 + wx1 * uz1)
            + nz * (wx2 * uy2 - wy2 * ux2 - wx1 * uy1 + wy1 * ux1)
        )


class SelfCollisionModel(CapsuleDistances):
    """Capsules on the robot's links and the distances between non-adjacent ones.

    Raises:
        ConfigError: a link of the spec is not a frame of the model (the message lists
            the valid frames), ``exclude_pairs`` names a link without capsules, no pair is left
            to check, or ``pairs`` is not in ``[1, number of pairs checked]``.
    """

    def __init__(self, robot: RobotModel, spec: CollisionSpec, pairs: int = 1) -> None:
        model = robot.model
        geom_model = pin.GeometryModel()
        capsule_link = _add_capsules(robot, spec, geom_model)
        link_joint = {
            link: int(obj.parentJoint)
            for link, obj in zip(capsule_link, geom_model.geometryObjects, strict=True)
        }
        excluded = set()
        for a, b in spec.exclude_pairs:
            for name in (a, b):
                if name not in link_joint:
                    raise ConfigError(
                        f"collision model: exclude_pairs names link {name!r} without capsules; "
                        f"links with capsules are {sorted(link_joint)}"
                    )
            excluded.add(frozenset((a, b)))

        def adjacent(ja: int, jb: int) -> bool:
            return ja == jb or model.parents[ja] == jb or model.parents[jb] == ja

        pair_links: list[tuple[str, str]] = []
        for i in range(len(capsule_link)):
            for j in range(i + 1, len(capsule_link)):
                la, lb = capsule_link[i], capsule_link[j]
                if la == lb or adjacent(link_joint[la], link_joint[lb]):
                    continue
                if frozenset((la, lb)) in excluded:
                    continue
                geom_model.addCollisionPair(pin.CollisionPair(i, j))
                pair_links.append((la, lb))
        if not pair_links:
            raise ConfigError("collision model: no pair of non-adjacent links to check")
        super().__init__(robot, geom_model, pair_links, pairs)

    @classmethod
    def from_file(cls, robot: RobotModel, path: str | Path, pairs: int = 1) -> SelfCollisionModel:
        """Build from a collision YAML file (``pairs``: how many of the closest pairs to track)."""
        return cls(robot, CollisionSpec.from_file(path), pairs)


#: Name of the plane in :attr:`FloorModel.pair_links` (the first of each pair).
FLOOR = "floor"


class FloorModel(CapsuleDistances):
    """The capsules' heights above the horizontal plane ``z = height`` of the base frame (m).

    Each pair is the plane (a ``coal.Halfspace`` fixed to the universe: everything below
    ``height`` is solid) and one capsule whose height changes with the configuration: a capsule
    at the same height in every sampled configuration (on the Gen3 the base's and the shoulder's,
    turned only about the vertical first axis) cannot be moved off the plane by any torque and
    is left out. The distance is ``min(z_start, z_end) − radius − height`` (negative below the
    plane), the normal ``+z``.

    The plane's normal ``ẑ`` does not turn, so the rows are exact (unlike two capsules', see the
    module docstring) when taken at the capsule's axis point ``p`` above the witness (``r``
    higher): a material point of the link whose height is the distance plus a constant. (The
    witness on the capsule's surface is a material point too, but its acceleration holds an
    extra ``r·(|ω|² − ω_z²)`` the distance does not.) With ``(v, ω)`` and ``(a, α)`` the link's
    spatial velocity and bias acceleration at the world origin (``J·q̇`` and ``J̇·q̇`` of its
    joint, the columns of the joints that do not move it set to 0), ``ṗ = v + ω × p`` and::

        ∇d    = J_vz + p_y·J_ωx − p_x·J_ωy            (ẑ·(ω × p) = ω·(p × ẑ))
        drift = a_z + p_y·α_x − p_x·α_y + (ω × ṗ)_z

    Raises:
        ConfigError: ``height`` not finite or beyond ±10 m, a link of the spec is not a frame
            of the model, no capsule moves, or ``pairs`` is not in ``[1, number of moving
            capsules]``.
    """

    def __init__(self, robot: RobotModel, spec: CollisionSpec, height: float = 0.0, pairs: int = 1) -> None:
        if not math.isfinite(height) or abs(height) > _MAX_SIZE_M:
            raise ConfigError(
                f"floor.height: expected a finite height within ±{_MAX_SIZE_M:g} m, got {height!r}"
            )
        self.height = float(height)
        geom_model = pin.GeometryModel()
        capsule_link = _add_capsules(robot, spec, geom_model)
        radii = [float(cap.radius) for cap in spec.capsules]
        plane = len(capsule_link)
        geom_model.addGeometryObject(
            pin.GeometryObject(
                FLOOR, 0, 0, pin.SE3.Identity(), coal.Halfspace(np.array([0.0, 0.0, 1.0]), self.height)
            )
        )
        for i in range(plane):
            geom_model.addCollisionPair(pin.CollisionPair(plane, i))
        # Heights at the sampled configurations: a capsule whose height never changes is dropped.
        probe = pin.GeometryData(geom_model)
        model, data = robot.model, robot.data
        heights = []
        for q in sample_configurations(robot):
            pin.forwardKinematics(model, data, robot.configuration(q))
            pin.updateGeometryPlacements(model, data, geom_model, probe)
            pin.computeDistances(geom_model, probe)
            heights.append([res.min_distance for res in probe.distanceResults])
        spread = np.ptp(np.array(heights), axis=0)
        moving = [i for i in range(plane) if spread[i] > 1e-9]
        if not moving:
            raise ConfigError("floor: no capsule of the collision model moves up or down")
        kept = pin.GeometryModel()
        for i in [*moving, plane]:
            kept.addGeometryObject(geom_model.geometryObjects[i])
        for k in range(len(moving)):
            kept.addCollisionPair(pin.CollisionPair(len(moving), k))
        pair_links = [(FLOOR, capsule_link[i]) for i in moving]
        #: Links whose capsules never change height, left out.
        self.fixed_links = sorted({capsule_link[i] for i in range(plane) if i not in moving})
        if isinstance(pairs, bool) or not isinstance(pairs, int) or not 1 <= pairs <= len(moving):
            raise ConfigError(
                f"floor.rows: expected an integer in [1, {len(moving)}] (the capsules that move up "
                f"and down), got {pairs!r}"
            )
        super().__init__(robot, kept, pair_links, pairs)
        self._radii = [radii[i] for i in moving]
        n = robot.n
        self._masks = [mask.reshape(2, n)[0] for mask in self._pair_masks]  # the capsule's link
        self._Jb = np.zeros((2, 6, n))  # [J; J̇] of one capsule's link
        self._coef = np.zeros(3)  # (1, p_y, −p_x) on rows (v_z, ω_x, ω_y)

    def _pair_terms(self, row: int, k: int, v: FloatArray | None, JJd4: FloatArray) -> None:
        """Height, gradient and drift of capsule ``k`` into row ``row`` (row 0 also: witness, normal)."""
        res = self._results[k]
        self.distances[row] = res.min_distance
        self.tracked_pairs[row] = self.pair_links[k]
        p2 = res.getNearestPoint2()
        x, y, z = p2.tolist()
        z += self._radii[k]  # the axis point above the witness
        if row == 0:
            self.normal = np.array((0.0, 0.0, 1.0))
            self.witness = (res.getNearestPoint1(), p2)
        Jb = self._Jb
        np.multiply(JJd4[:, 0], self._masks[k], Jb)
        coef = self._coef
        coef[:] = (1.0, y, -x)
        coef.dot(Jb[0, 2:5], self.gradients[row])
        if v is None:
            self.drifts[row] = 0.0
            return
        vx, vy, _, wx, wy, wz, _, _, az, ax, ay, _ = Jb.dot(v).ravel().tolist()
        # ṗ = v + ω × p (x and y components), then (ω × ṗ)_z
        px, py = vx + wy * z - wz * y, vy + wz * x - wx * z
        self.drifts[row] = az + y * ax - x * ay + wx * py - wy * px

    @classmethod
    def from_file(
        cls, robot: RobotModel, path: str | Path, height: float = 0.0, pairs: int = 1
    ) -> FloorModel:
        """Build from a collision YAML file (its ``exclude_pairs`` play no part here)."""
        return cls(robot, CollisionSpec.from_file(path), height, pairs)
