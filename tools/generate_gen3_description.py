#!/usr/bin/env python3
"""Generate the Gen3's URDF and MJCF files from ``config/gen3_description.yaml``.

The YAML file is the single source of the arm's kinematics, inertials and limits; this tool
writes ``urdf/gen3.urdf`` (for Pinocchio / rviz), ``mjcf/gen3.xml`` (the arm for MuJoCo) and
``mjcf/scene.xml`` (floor, light, keyframes). Every number is written with :func:`repr`, i.e. the
shortest text that reads back as the same double, so the URDF and the MJCF carry bit-identical
values and Pinocchio and MuJoCo agree to rounding error (~1e-15).

Orientation: the URDF ``rpy`` is a fixed-axis roll-pitch-yaw, R = Rz(y)·Ry(p)·Rx(r). MuJoCo's
``euler`` with ``<compiler eulerseq="XYZ">`` (upper case = rotations about the *fixed* axes, in
the order x, y, z) gives the same matrix, so both files carry the same three numbers and there is
no quaternion conversion that could round differently.

Usage::

    python tools/generate_gen3_description.py           # (re)write the three files
    python tools/generate_gen3_description.py --check   # exit 1 if any file is out of date
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torque_ctrl_ros.yaml_keys import load_unique

REPO_ROOT: Path = Path(__file__).resolve().parent.parent
DESCRIPTION_PATH: Path = REPO_ROOT / "config" / "gen3_description.yaml"
URDF_FILE = "urdf/gen3.urdf"
MJCF_FILE = "mjcf/gen3.xml"
SCENE_FILE = "mjcf/scene.xml"

Vec3 = tuple[float, float, float]

# The largest float is an integer; any int above it in magnitude has no float.
_LARGEST_INT_AS_FLOAT = int(sys.float_info.max)
# MuJoCo's values for <option integrator=...> (its XML schema; anything else fails to load).
INTEGRATORS = ("Euler", "RK4", "implicit", "implicitfast")
# "pi", "-pi/2", "3*pi/4", "0.5*pi": an optional sign, factor and divisor around pi. The divisor
# starts with 1-9 so that "pi/0" is refused as text rather than raising ZeroDivisionError.
_PI_EXPR = re.compile(r"^\s*([+-])?\s*(?:(\d+(?:\.\d*)?)\s*\*\s*)?pi\s*(?:/\s*([1-9]\d*))?\s*$")


@dataclass(frozen=True)
class Origin:
    """A rigid placement of a child frame in its parent frame.

    ``xyz`` in m; ``rpy`` in rad, fixed-axis roll/pitch/yaw: R = Rz(yaw)·Ry(pitch)·Rx(roll).
    """

    xyz: Vec3
    rpy: Vec3


@dataclass(frozen=True)
class Inertial:
    """Mass (kg), centre of mass (m, link frame) and inertia tensor about the COM (kg·m²).

    ``inertia`` = (Ixx, Iyy, Izz, Ixy, Ixz, Iyz), the order of MuJoCo's ``fullinertia``.
    """

    mass: float
    com: Vec3
    inertia: tuple[float, float, float, float, float, float]


@dataclass(frozen=True)
class Shape:
    """A capsule of ``radius`` (m) around the segment ``start``–``end`` (m, link frame)."""

    start: Vec3
    end: Vec3
    radius: float


@dataclass(frozen=True)
class Link:
    """One rigid link: its inertial, its stand-in shape and a colour name."""

    name: str
    inertial: Inertial
    shape: Shape
    color: str


@dataclass(frozen=True)
class Joint:
    """A revolute joint about +z of the child frame.

    ``position_limits`` (rad) is None for a joint without end stops. ``velocity_limit`` in
    rad/s, ``effort_limit`` in N·m.
    """

    name: str
    parent: str
    child: str
    origin: Origin
    position_limits: tuple[float, float] | None
    velocity_limit: float
    effort_limit: float


@dataclass(frozen=True)
class Tool:
    """The tool frame, fixed to ``parent`` by the fixed joint ``joint``."""

    name: str
    joint: str
    parent: str
    origin: Origin


@dataclass(frozen=True)
class Description:
    """Everything the generated files are made of, with every angle already a float."""

    robot: str
    links: tuple[Link, ...]
    joints: tuple[Joint, ...]
    tool: Tool
    poses: dict[str, tuple[float, ...]]
    timestep: float
    integrator: str
    colors: dict[str, tuple[float, float, float, float]]


def parse_number(value: Any, what: str = "value") -> float:
    """Return ``value`` (the field ``what``, named in errors) as a float; strings may be exact
    multiples of pi (``"-pi/2"``).

    Plain numeric strings are accepted as well, because YAML 1.1 (PyYAML) reads ``1E-06`` as a
    string. ``-pi/2`` is computed as ``-(math.pi / 2)``, the double nearest to -π/2.
    """
    if isinstance(value, bool):
        raise ValueError(f"{what}: expected a number, got {value!r}")
    if isinstance(value, int):
        # float() of an int past ~1.8e308 raises OverflowError instead of giving inf.
        number = float(value) if abs(value) <= _LARGEST_INT_AS_FLOAT else math.inf
        return _finite(number, value, what)
    if isinstance(value, float):
        return _finite(value, value, what)
    if isinstance(value, str):
        match = _PI_EXPR.match(value)
        if match:
            sign, factor, divisor = match.groups()
            result = math.pi
            if factor is not None:
                result *= float(factor)
            if divisor is not None:
                result /= int(divisor)
            return _finite(-result if sign == "-" else result, value, what)
        try:
            number = float(value)
        except ValueError:
            pass
        else:
            return _finite(number, value, what)
    raise ValueError(f"{what}: expected a number or a multiple of pi such as 'pi/2', got {value!r}")


def _finite(number: float, given: Any, what: str) -> float:
    if not math.isfinite(number):
        raise ValueError(f"{what}: expected a finite number, got {given!r}")
    return number


def _vec(values: Any, size: int, what: str) -> tuple[float, ...]:
    if not isinstance(values, Sequence) or isinstance(values, str) or len(values) != size:
        raise ValueError(f"{what}: expected a list of {size} numbers, got {values!r}")
    return tuple(parse_number(v, f"{what}[{i}]") for i, v in enumerate(values))


def _key(raw: Any, key: str, what: str) -> Any:
    """``raw[key]``; a ValueError naming the field ``what.key`` when ``raw`` is no mapping or
    lacks the key (instead of a bare ``KeyError`` or ``TypeError``)."""
    if not isinstance(raw, Mapping):
        raise ValueError(f"{what}: expected a mapping, got {raw!r}")
    if key not in raw:
        raise ValueError(f"{what}.{key}: missing (given: {sorted(map(str, raw))})")
    return raw[key]


def _mapping(raw: Any, key: str) -> Mapping[str, Any]:
    """The top-level section ``raw[key]`` of the description, which must be a mapping."""
    value = _key(raw, key, "description")
    if not isinstance(value, Mapping):
        raise ValueError(f"{key}: expected a mapping, got {value!r}")
    return value


def _number(raw: Any, key: str, what: str) -> float:
    """The number at ``raw[key]`` (:func:`parse_number`), named ``what.key`` in errors."""
    return parse_number(_key(raw, key, what), f"{what}.{key}")


def _vec3(values: Any, what: str) -> Vec3:
    x, y, z = _vec(values, 3, what)
    return (x, y, z)


def _origin(raw: Mapping[str, Any], what: str) -> Origin:
    return Origin(
        xyz=_vec3(_key(raw, "xyz", what), f"{what}.xyz"), rpy=_vec3(_key(raw, "rpy", what), f"{what}.rpy")
    )


def description_from_dict(raw: Mapping[str, Any]) -> Description:
    """Build a :class:`Description` from the parsed YAML; checks that the chain is connected.
    A missing or malformed field is refused by its path (e.g. ``links.base_link.mass``)."""
    links = []
    for name, spec in _mapping(raw, "links").items():
        what = f"links.{name}"
        tensor, shape = _key(spec, "inertia", what), _key(spec, "shape", what)
        links.append(
            Link(
                name=name,
                inertial=Inertial(
                    mass=_number(spec, "mass", what),
                    com=_vec3(_key(spec, "com", what), f"{what}.com"),
                    inertia=tuple(
                        _number(tensor, k, f"{what}.inertia") for k in ("xx", "yy", "zz", "xy", "xz", "yz")
                    ),  # type: ignore[arg-type]
                ),
                shape=Shape(
                    start=_vec3(_key(shape, "from", f"{what}.shape"), f"{what}.shape.from"),
                    end=_vec3(_key(shape, "to", f"{what}.shape"), f"{what}.shape.to"),
                    radius=_number(shape, "radius", f"{what}.shape"),
                ),
                color=str(_key(spec, "color", what)),
            )
        )
    joints = []
    for name, spec in _mapping(raw, "joints").items():
        what = f"joints.{name}"
        limits = _key(spec, "limits", what)
        position = limits.get("position") if isinstance(limits, Mapping) else None
        lower_upper = None if position is None else _vec(position, 2, f"{what}.limits.position")
        joints.append(
            Joint(
                name=name,
                parent=str(_key(spec, "parent", what)),
                child=str(_key(spec, "child", what)),
                origin=_origin(_key(spec, "origin", what), f"{what}.origin"),
                position_limits=None if lower_upper is None else (lower_upper[0], lower_upper[1]),
                velocity_limit=_number(limits, "velocity", f"{what}.limits"),
                effort_limit=_number(limits, "effort", f"{what}.limits"),
            )
        )
    tool_raw = _key(raw, "tool", "description")
    tool = Tool(
        name=str(_key(tool_raw, "name", "tool")),
        joint=str(_key(tool_raw, "joint", "tool")),
        parent=str(_key(tool_raw, "parent", "tool")),
        origin=_origin(_key(tool_raw, "origin", "tool"), "tool.origin"),
    )
    poses = {
        name: _vec(values, len(joints), f"poses.{name}") for name, values in _mapping(raw, "poses").items()
    }
    colors = {}
    for name, rgba in _mapping(raw, "colors").items():
        r, g, b, a = _vec(rgba, 4, f"colors.{name}")
        colors[name] = (r, g, b, a)
    simulation = _key(raw, "simulation", "description")
    description = Description(
        robot=str(_key(raw, "robot", "description")),
        links=tuple(links),
        joints=tuple(joints),
        tool=tool,
        poses=poses,
        timestep=_number(simulation, "timestep", "simulation"),
        integrator=str(_key(simulation, "integrator", "simulation")),
        colors=colors,
    )
    _check_chain(description)
    _check_values(description)
    return description


def _check_values(description: Description) -> None:
    """Values the generated files would carry without complaint but which make no robot: a
    non-positive mass, inertia, radius, speed or torque limit, swapped position limits (MuJoCo
    would quietly leave such a joint unlimited), a named pose outside the limits, a colour
    component outside [0, 1]. Also a shape whose two ends coincide (its capsule has no axis to
    render) and an integrator MuJoCo does not know (the MJCF would fail to load)."""
    for link in description.links:
        inertial = link.inertial
        if not (inertial.mass > 0 and min(inertial.inertia[:3]) > 0 and link.shape.radius > 0):
            raise ValueError(f"{link.name}: mass, principal inertias and shape radius must be > 0")
        if link.shape.start == link.shape.end:
            raise ValueError(
                f"{link.name}.shape: 'from' and 'to' must differ, both are {list(link.shape.start)}"
            )
    for i, joint in enumerate(description.joints):
        if not (joint.velocity_limit > 0 and joint.effort_limit > 0):
            raise ValueError(f"{joint.name}: velocity and effort limits must be > 0")
        if joint.position_limits is None:
            continue
        lower, upper = joint.position_limits
        if not lower < upper:
            raise ValueError(f"{joint.name}.limits.position: expected [lower, upper], got {[lower, upper]}")
        for pose, q in description.poses.items():
            if not lower <= q[i] <= upper:
                raise ValueError(f"poses.{pose}: {joint.name} at {q[i]} is outside [{lower}, {upper}]")
    for name, rgba in description.colors.items():
        if not all(0.0 <= c <= 1.0 for c in rgba):
            raise ValueError(f"colors.{name}: expected r, g, b, a in [0, 1], got {list(rgba)}")
    if not description.timestep > 0:
        raise ValueError(f"simulation.timestep: expected > 0, got {description.timestep}")
    if description.integrator not in INTEGRATORS:
        raise ValueError(
            f"simulation.integrator: expected one of {list(INTEGRATORS)}, got {description.integrator!r}"
        )


def _check_chain(description: Description) -> None:
    """The generators assume a serial chain: link i is the parent of joint i, link i+1 its child."""
    names = [link.name for link in description.links]
    if len(names) != len(description.joints) + 1:
        raise ValueError(f"{len(names)} links need {len(names) - 1} joints, got {len(description.joints)}")
    for i, joint in enumerate(description.joints):
        if (joint.parent, joint.child) != (names[i], names[i + 1]):
            raise ValueError(
                f"{joint.name} connects {joint.parent} -> {joint.child}, "
                f"expected {names[i]} -> {names[i + 1]} (links must be listed in chain order)"
            )
    if description.tool.parent not in names:
        raise ValueError(f"tool parent {description.tool.parent!r} is not a link ({names})")
    # The URDF names the tool a link and its joint a joint: a clash makes two frames of one name.
    taken = {"link": names, "joint": [joint.name for joint in description.joints]}
    for field, name in (("name", description.tool.name), ("joint", description.tool.joint)):
        for kind, existing in taken.items():
            if name in existing:
                raise ValueError(f"tool.{field}: {name!r} is already a {kind} name")
    if description.tool.name == description.tool.joint:
        raise ValueError(f"tool.joint: {description.tool.joint!r} is also the tool's (link) name")
    for link in description.links:
        if link.color not in description.colors:
            raise ValueError(f"{link.name}: unknown color {link.color!r}")


def load_description(path: Path | str = DESCRIPTION_PATH) -> Description:
    """Read and check the YAML description at ``path``."""
    with open(path, encoding="utf-8") as stream:
        # A key given twice refused: PyYAML would keep the last (a link pasted twice replaced).
        return description_from_dict(load_unique(stream))


# ---------------------------------------------------------------------------------------------
# Text helpers
# ---------------------------------------------------------------------------------------------


def _f(value: float) -> str:
    """Full-precision text of a float (``repr`` round-trips exactly)."""
    return repr(float(value))


def _fs(values: Iterable[float]) -> str:
    return " ".join(_f(v) for v in values)


def _segment(shape: Shape) -> tuple[Vec3, float, Vec3]:
    """Midpoint (m), length (m) and URDF rpy (rad) that turn +z onto the shape's segment.

    With R = Ry(pitch)·Rx(roll), R·ez = (cos r·sin p, −sin r, cos r·cos p); solving for a unit
    direction d gives roll = atan2(−d_y, √(d_x² + d_z²)) and pitch = atan2(d_x, d_z).
    """
    delta = [e - s for s, e in zip(shape.start, shape.end, strict=True)]
    length = math.sqrt(sum(c * c for c in delta))
    dx, dy, dz = (c / length for c in delta)
    roll = math.atan2(-dy, math.hypot(dx, dz)) + 0.0  # + 0.0 turns -0.0 into 0.0 in the text
    pitch = math.atan2(dx, dz) + 0.0
    mid = tuple(0.5 * (s + e) for s, e in zip(shape.start, shape.end, strict=True))
    return (mid[0], mid[1], mid[2]), length, (roll, pitch, 0.0)


# ---------------------------------------------------------------------------------------------
# URDF
# ---------------------------------------------------------------------------------------------


def _urdf_capsule(tag: str, link: Link, color: bool) -> list[str]:
    """A capsule made of URDF primitives: a cylinder plus a sphere at each end.

    urdfdom has no capsule: it drops a ``<visual>`` or ``<collision>`` holding ``<capsule>``,
    with only an error on stderr ("Could not parse visual element for Link [...]"), and the model
    loads without that shape. So collisions use the same union of primitives as the visuals.
    """
    mid, length, rpy = _segment(link.shape)
    material = f'\n      <material name="{link.color}"/>' if color else ""
    radius = _f(link.shape.radius)
    lines = [
        f"    <{tag}>",
        f'      <origin xyz="{_fs(mid)}" rpy="{_fs(rpy)}"/>',
        f'      <geometry><cylinder radius="{radius}" length="{_f(length)}"/></geometry>{material}',
        f"    </{tag}>",
    ]
    for end in (link.shape.start, link.shape.end):
        lines += [
            f"    <{tag}>",
            f'      <origin xyz="{_fs(end)}" rpy="0.0 0.0 0.0"/>',
            f'      <geometry><sphere radius="{radius}"/></geometry>{material}',
            f"    </{tag}>",
        ]
    return lines


def render_urdf(description: Description) -> str:
    """URDF text: links with inertials and primitive shapes, joints, and the fixed tool frame."""
    out = [
        '<?xml version="1.0"?>',
        "<!-- Generated by tools/generate_gen3_description.py from config/gen3_description.yaml."
        " Do not edit. -->",
        f'<robot name="{description.robot}">',
    ]
    for name, rgba in description.colors.items():
        out.append(f'  <material name="{name}"><color rgba="{_fs(rgba)}"/></material>')
    for link in description.links:
        inertial = link.inertial
        ixx, iyy, izz, ixy, ixz, iyz = inertial.inertia
        out += [
            f'  <link name="{link.name}">',
            "    <inertial>",
            f'      <origin xyz="{_fs(inertial.com)}" rpy="0.0 0.0 0.0"/>',
            f'      <mass value="{_f(inertial.mass)}"/>',
            f'      <inertia ixx="{_f(ixx)}" ixy="{_f(ixy)}" ixz="{_f(ixz)}"'
            f' iyy="{_f(iyy)}" iyz="{_f(iyz)}" izz="{_f(izz)}"/>',
            "    </inertial>",
            *_urdf_capsule("visual", link, color=True),
            *_urdf_capsule("collision", link, color=False),
            "  </link>",
        ]
    for joint in description.joints:
        kind = "continuous" if joint.position_limits is None else "revolute"
        if joint.position_limits is None:
            limit = f'<limit effort="{_f(joint.effort_limit)}" velocity="{_f(joint.velocity_limit)}"/>'
        else:
            lower, upper = joint.position_limits
            limit = (
                f'<limit lower="{_f(lower)}" upper="{_f(upper)}"'
                f' effort="{_f(joint.effort_limit)}" velocity="{_f(joint.velocity_limit)}"/>'
            )
        out += [
            f'  <joint name="{joint.name}" type="{kind}">',
            f'    <parent link="{joint.parent}"/>',
            f'    <child link="{joint.child}"/>',
            f'    <origin xyz="{_fs(joint.origin.xyz)}" rpy="{_fs(joint.origin.rpy)}"/>',
            '    <axis xyz="0 0 1"/>',
            f"    {limit}",
            "  </joint>",
        ]
    tool = description.tool
    out += [
        f'  <link name="{tool.name}"/>',
        f'  <joint name="{tool.joint}" type="fixed">',
        f'    <parent link="{tool.parent}"/>',
        f'    <child link="{tool.name}"/>',
        f'    <origin xyz="{_fs(tool.origin.xyz)}" rpy="{_fs(tool.origin.rpy)}"/>',
        "  </joint>",
        "</robot>",
    ]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------
# MJCF
# ---------------------------------------------------------------------------------------------


def _mjcf_link_geoms(link: Link, indent: str) -> list[str]:
    shape = link.shape
    fromto = _fs((*shape.start, *shape.end))
    radius = _f(shape.radius)
    lines = [
        f'{indent}<geom class="gen3_visual" type="cylinder" fromto="{fromto}" size="{radius}"'
        f' material="gen3_{link.color}"/>',
        f'{indent}<geom class="gen3_visual" type="sphere" pos="{_fs(shape.start)}" size="{radius}"'
        f' material="gen3_{link.color}"/>',
        f'{indent}<geom class="gen3_visual" type="sphere" pos="{_fs(shape.end)}" size="{radius}"'
        f' material="gen3_{link.color}"/>',
    ]
    return lines


def render_mjcf(description: Description) -> str:
    """MJCF text of the arm: bodies, hinges, explicit inertials, geoms, tool site, motors."""
    out = [
        "<!-- Generated by tools/generate_gen3_description.py from config/gen3_description.yaml."
        " Do not edit. -->",
        f'<mujoco model="{description.robot}">',
        "  <!-- eulerseq XYZ = fixed-axis x, then y, then z: the URDF rpy convention, so the",
        "       euler triples below are the URDF rpy numbers verbatim. -->",
        '  <compiler angle="radian" autolimits="true" eulerseq="XYZ"/>',
        f'  <option timestep="{_f(description.timestep)}" integrator="{description.integrator}"/>',
        "",
        "  <!-- Contacts. Visual geoms (group 2) never collide. Collision capsules (group 3) have",
        "       contype=0 conaffinity=1: two arm geoms never make a contact (0&1 both ways), so",
        "       there are no self-contacts at all, but every moving link, the bracelet (tool)",
        "       included, collides with any environment geom whose contype has bit 1 (MuJoCo's",
        "       default, e.g. a floor or table). The base capsule has contype=conaffinity=0: the",
        "       base is bolted to whatever it stands on. -->",
        "  <default>",
        '    <default class="gen3">',
        '      <joint type="hinge" axis="0 0 1"/>',
        '      <default class="gen3_visual">',
        '        <geom group="2" contype="0" conaffinity="0"/>',
        "      </default>",
        '      <default class="gen3_collision">',
        '        <geom type="capsule" group="3" contype="0" conaffinity="1"/>',
        "      </default>",
        "    </default>",
        "  </default>",
        "",
        "  <asset>",
    ]
    for name, rgba in description.colors.items():
        out.append(f'    <material name="gen3_{name}" rgba="{_fs(rgba)}"/>')
    out += ["  </asset>", "", "  <worldbody>"]

    joints_by_child = {joint.child: joint for joint in description.joints}
    indent = "    "
    for depth, link in enumerate(description.links):
        indent = "    " + "  " * depth
        inner = indent + "  "
        joint = joints_by_child.get(link.name)
        if joint is None:
            out.append(f'{indent}<body name="{link.name}" childclass="gen3">')
        else:
            out.append(
                f'{indent}<body name="{link.name}" pos="{_fs(joint.origin.xyz)}"'
                f' euler="{_fs(joint.origin.rpy)}">'
            )
        inertial = link.inertial
        out.append(
            f'{inner}<inertial pos="{_fs(inertial.com)}" mass="{_f(inertial.mass)}"'
            f' fullinertia="{_fs(inertial.inertia)}"/>'
        )
        if joint is not None:
            limits = joint.position_limits
            joint_range = "" if limits is None else f' range="{_fs(limits)}"'
            out.append(f'{inner}<joint name="{joint.name}"{joint_range}/>')
        out += _mjcf_link_geoms(link, inner)
        shape = link.shape
        base_override = ' contype="0" conaffinity="0"' if joint is None else ""
        out.append(
            f'{inner}<geom name="{link.name}_collision" class="gen3_collision"'
            f' fromto="{_fs((*shape.start, *shape.end))}" size="{_f(shape.radius)}"{base_override}/>'
        )
        if link.name == description.tool.parent:
            tool = description.tool
            out.append(
                f'{inner}<site name="{tool.name}" pos="{_fs(tool.origin.xyz)}"'
                f' euler="{_fs(tool.origin.rpy)}" size="0.01"/>'
            )
    for depth in reversed(range(len(description.links))):
        out.append("    " + "  " * depth + "</body>")
    out += ["  </worldbody>", "", "  <!-- Torque motors: ctrl = joint torque in N*m. -->", "  <actuator>"]
    for joint in description.joints:
        effort = _f(joint.effort_limit)
        out.append(
            f'    <motor name="{joint.name}" joint="{joint.name}" gear="1"'
            f' ctrlrange="-{effort} {effort}" forcerange="-{effort} {effort}"/>'
        )
    out += ["  </actuator>", "</mujoco>"]
    return "\n".join(out) + "\n"


def render_scene(description: Description, arm_file: str = "gen3.xml") -> str:
    """MJCF scene: the arm (included), a floor, a light and the named poses as keyframes."""
    zeros = " ".join("0" for _ in description.joints)
    out = [
        "<!-- Generated by tools/generate_gen3_description.py from config/gen3_description.yaml."
        " Do not edit. -->",
        f'<mujoco model="{description.robot} scene">',
        f'  <include file="{arm_file}"/>',
        "",
        '  <statistic center="0.3 0 0.4" extent="1.2"/>',
        "  <visual>",
        '    <headlight diffuse="0.6 0.6 0.6" ambient="0.3 0.3 0.3" specular="0 0 0"/>',
        '    <global azimuth="120" elevation="-20"/>',
        "  </visual>",
        "  <asset>",
        '    <texture type="skybox" builtin="gradient" rgb1="0.3 0.5 0.7" rgb2="0 0 0" width="512"'
        ' height="3072"/>',
        '    <texture type="2d" name="groundplane" builtin="checker" mark="edge" rgb1="0.2 0.3 0.4"'
        ' rgb2="0.1 0.2 0.3" markrgb="0.8 0.8 0.8" width="300" height="300"/>',
        '    <material name="groundplane" texture="groundplane" texuniform="true" texrepeat="5 5"'
        ' reflectance="0.2"/>',
        "  </asset>",
        "",
        "  <worldbody>",
        '    <light pos="0 0 1.5" dir="0 0 -1" directional="true"/>',
        "    <!-- contype=conaffinity=1 (default): the arm's collision capsules can touch it. -->",
        '    <geom name="floor" size="0 0 0.05" type="plane" material="groundplane"/>',
        "  </worldbody>",
        "",
        "  <keyframe>",
    ]
    for name, pose in description.poses.items():
        out.append(f'    <key name="{name}" qpos="{_fs(pose)}" ctrl="{zeros}"/>')
    out += ["  </keyframe>", "</mujoco>"]
    return "\n".join(out) + "\n"


def generate_texts(description_path: Path | str = DESCRIPTION_PATH) -> dict[str, str]:
    """Return ``{relative path: text}`` for the three generated files."""
    description = load_description(description_path)
    return {
        URDF_FILE: render_urdf(description),
        MJCF_FILE: render_mjcf(description),
        SCENE_FILE: render_scene(description),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Write the generated files (or, with ``--check``, report the stale ones); exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--description", type=Path, default=DESCRIPTION_PATH)
    parser.add_argument("--root", type=Path, default=REPO_ROOT, help="where urdf/ and mjcf/ go")
    parser.add_argument("--check", action="store_true", help="only check the files are up to date")
    args = parser.parse_args(argv)
    stale = []
    for relative, text in generate_texts(args.description).items():
        target = args.root / relative
        current = target.read_text(encoding="utf-8") if target.exists() else None
        if current == text:
            continue
        stale.append(relative)
        if not args.check:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            print(f"wrote {target}")
    if args.check and stale:
        print("out of date: " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
