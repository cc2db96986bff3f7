"""Behaviours of ``tools/generate_gen3_description.py`` that a mutation review found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch.
The committed URDF/MJCF files pin everything the shipped description writes; these tests pin
what those files cannot show: how numbers and lists are read from the YAML, the descriptions
the generator refuses (and its messages), and the exit status, report and writes of ``main``
with and without ``--check``. The generator only ever writes into ``tmp_path`` here.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mujoco
import pytest
import yaml
from test_model_equivalence import GEN, _description_yaml

Edit = Callable[[dict[str, Any]], None]
GENERATED = (GEN.URDF_FILE, GEN.MJCF_FILE, GEN.SCENE_FILE)
#: The message of a link whose mass, principal inertia or shape radius is not > 0.
NOT_POSITIVE = "base_link: mass, principal inertias and shape radius must be > 0"


def _refuses(edit: Edit, match: str) -> None:
    """The shipped description with ``edit`` applied raises a ValueError matching ``match``."""
    raw = _description_yaml()
    edit(raw)
    with pytest.raises(ValueError, match=match):
        GEN.description_from_dict(raw)


def _set(*keys: str | int, value: Any) -> Edit:
    """An edit that sets ``raw[keys[0]]...[keys[-1]] = value`` (an int key indexes a list)."""

    def edit(raw: dict[str, Any]) -> None:
        node: Any = raw  # a mapping or, under an int key, a list
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = value

    return edit


# ---------------------------------------------------------------------------------------------
# Reading numbers
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3*pi/4", math.pi * 3 / 4),
        ("0.5*pi", math.pi * 0.5),
        ("pi/12", math.pi / 12),
        ("-2*pi/3", -math.pi * 2 / 3),
        ("+pi/2", math.pi / 2),
        (" 2. * pi / 3 ", math.pi * 2 / 3),
    ],
)
def test_pi_expressions_beyond_the_shipped_ones_read_exactly(text: str, expected: float) -> None:
    """The YAML's angle syntax beyond the shipped ``pi``/``pi/2``: a factor (integer or
    decimal), a divisor of more than one digit, a ``+`` sign and spaces give the double of
    ``±factor·π/divisor``. (Mutants ``result += float(factor)``, the divisor group ``(\\d+)`` →
    ``(\\d)``, the factor group without its decimals, the sign group ``([+-])?`` → ``(-)?``.)"""
    assert GEN.parse_number(text) == pytest.approx(expected, rel=0.0, abs=1e-15)


@pytest.mark.parametrize("text", ["pi/2x", "pi/2 rad", "3*pi/4/2"])
def test_a_pi_expression_with_trailing_text_is_refused(text: str) -> None:
    """``pi/2x`` is no angle: it is refused, not read as its leading ``pi/2``. (Mutant: the
    pattern loses its closing ``\\s*$``, so ``re.match`` accepts any text after the expression.)"""
    with pytest.raises(ValueError, match="expected a number or a multiple of pi"):
        GEN.parse_number(text)


@pytest.mark.parametrize("text", ["pi/0", "-3*pi/00"])
def test_a_pi_expression_divided_by_zero_is_refused_as_bad_text(text: str) -> None:
    """``pi/0`` gets the generator's ValueError naming the text, like any other bad number.
    (Bug at 3b504aa: the divisor group accepted ``0`` and ``parse_number`` raised a bare
    ``ZeroDivisionError: float division by zero`` that names neither the value nor the field.)"""
    with pytest.raises(
        ValueError, match=re.escape(f"expected a number or a multiple of pi such as 'pi/2', got '{text}'")
    ):
        GEN.parse_number(text)


@pytest.mark.parametrize("value", [True, False])
def test_a_yaml_boolean_is_not_a_number(value: bool) -> None:
    """YAML reads ``yes``/``true`` as a bool, which Python counts as the int 1; the generator
    refuses it instead of writing 1.0. (Mutant: the ``isinstance(value, bool)`` check removed.)"""
    with pytest.raises(ValueError, match=f"expected a number, got {value}"):
        GEN.parse_number(value)


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, "inf", "-inf", "1e999"])
def test_infinite_and_nan_numbers_are_refused(value: float | str) -> None:
    """YAML's ``.inf``/``.nan`` arrive as floats, ``inf`` or ``1e999`` as strings: all are
    refused. (Mutants: ``return float(value)`` without ``_finite`` for floats, and
    ``math.isnan`` for ``not math.isfinite`` in ``_finite``, which lets infinities through.)"""
    with pytest.raises(ValueError, match="expected a finite number"):
        GEN.parse_number(value)


@pytest.mark.parametrize(
    "value",
    [10**400, -(10**400), "9" * 400 + "*pi", "-" + "9" * 400 + "*pi/2"],
    ids=["int", "negative int", "pi factor", "negative pi factor"],
)
def test_numbers_beyond_the_float_range_are_refused_as_not_finite(value: int | str) -> None:
    """A YAML integer past the float range and a multiple of pi whose factor overflows are
    refused like ``1e999``. (Bugs at 15ef164: the integer raised a bare ``OverflowError`` naming
    neither the field nor the value, and the pi factor gave ``inf`` without a word.)"""
    with pytest.raises(ValueError, match="expected a finite number"):
        GEN.parse_number(value, "links.base_link.mass")


def test_the_largest_integer_below_the_float_range_is_read() -> None:
    """The float range's own largest value, given as a YAML integer, is still a number."""
    assert GEN.parse_number(int(sys.float_info.max)) == sys.float_info.max


@pytest.mark.parametrize("integrator", ["implicitFast", "RK45", "", 4])
def test_an_integrator_mujoco_does_not_know_is_refused(integrator: Any) -> None:
    """A misspelt integrator was written into the MJCF as given and only failed when MuJoCo
    loaded the scene (bug at 15ef164); it is refused, listing the valid names."""
    _refuses(
        _set("simulation", "integrator", value=integrator),
        re.escape("simulation.integrator: expected one of ['Euler', 'RK4', 'implicit', 'implicitfast']"),
    )


@pytest.mark.parametrize("integrator", ["Euler", "RK4", "implicit", "implicitfast"])
def test_every_integrator_the_generator_accepts_loads_in_mujoco(integrator: str, tmp_path: Path) -> None:
    """The accepted names are exactly MuJoCo's: a scene generated with each one loads, with
    that integrator."""
    raw = _description_yaml()
    raw["simulation"]["integrator"] = integrator
    description = GEN.description_from_dict(raw)
    model = mujoco.MjModel.from_xml_string(GEN.render_mjcf(description))
    assert model.opt.integrator == getattr(mujoco.mjtIntegrator, f"mjINT_{integrator.upper()}")


def test_a_key_given_twice_in_the_yaml_is_refused_with_its_line(tmp_path: Path) -> None:
    """PyYAML keeps the last of two equal keys without a word: a colour (or a link) pasted twice
    under one name would replace the first. The generator's loader refuses it, naming the key and
    the line of the second one; the shipped file has none."""
    text = GEN.DESCRIPTION_PATH.read_text(encoding="utf-8")
    first = "  dark: [0.2, 0.2, 0.22, 1]\n"
    assert text.count(first) == 1
    line = text[: text.index(first)].count("\n") + 2  # the pasted line, 1-based
    doubled = tmp_path / "doubled.yaml"
    doubled.write_text(text.replace(first, first + "  dark: [0.3, 0.3, 0.3, 1]\n"), encoding="utf-8")
    with pytest.raises(ValueError, match=rf"^line {line}: key 'dark' given twice in one mapping$"):
        GEN.load_description(doubled)
    assert GEN.load_description().colors["dark"] == (0.2, 0.2, 0.22, 1.0)


# ---------------------------------------------------------------------------------------------
# Lists
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (_set("links", "base_link", "com", value="000"), "base_link.com: expected a list of 3 numbers"),
        (
            _set("links", "base_link", "com", value={"x": 0, "y": 0, "z": 0}),
            "base_link.com: expected a list of 3",
        ),
        (_set("poses", "home", value=[0.0] * 8), "poses.home: expected a list of 7 numbers"),
        (
            _set("joints", "joint_2", "limits", "position", value=[-1, 0, 1]),
            "joint_2.limits.position: expected a list of 2",
        ),
        (_set("colors", "dark", value=[0.2, 0.2, 0.2]), "colors.dark: expected a list of 4 numbers"),
        (
            _set("joints", "joint_2", "origin", "rpy", value=[0, 0]),
            "joint_2.origin.rpy: expected a list of 3",
        ),
        (_set("tool", "origin", "xyz", value=[0, 0]), "tool.origin.xyz: expected a list of 3"),
        (
            _set("links", "base_link", "shape", "from", value=[0, 0]),
            "base_link.shape.from: expected a list of 3",
        ),
    ],
    ids=[
        "string",
        "mapping",
        "long-pose",
        "three-limits",
        "rgb",
        "short-rpy",
        "short-tool-xyz",
        "short-from",
    ],
)
def test_a_list_of_the_wrong_kind_or_length_is_refused_by_name(edit: Edit, match: str) -> None:
    """Every vector of the YAML must be a list of exactly its size; the message names the
    field. A string of three characters is no xyz, a mapping is no list, a pose with an extra
    angle is not silently cut. (Mutants in ``_vec``: ``isinstance(values, str)`` removed,
    ``len(values) != size`` removed, ``not isinstance(values, Sequence)`` removed; a field's
    label swapped, e.g. ``f"{what}.xyz"`` → ``f"{what}.rpy"`` in ``_origin``.)"""
    _refuses(edit, match)


def _drop(*keys: str) -> Edit:
    """An edit that deletes ``raw[keys[0]]...[keys[-1]]``."""

    def edit(raw: dict[str, Any]) -> None:
        node = raw
        for key in keys[:-1]:
            node = node[key]
        del node[keys[-1]]

    return edit


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (_drop("links", "base_link", "mass"), r"^links\.base_link\.mass: missing \(given: \['color', "),
        (_drop("links", "base_link", "inertia", "xz"), r"^links\.base_link\.inertia\.xz: missing"),
        (_drop("joints", "joint_2", "limits", "effort"), r"^joints\.joint_2\.limits\.effort: missing"),
        (_drop("joints", "joint_2", "origin", "rpy"), r"^joints\.joint_2\.origin\.rpy: missing"),
        (_drop("tool", "parent"), r"^tool\.parent: missing"),
        (_drop("simulation", "timestep"), r"^simulation\.timestep: missing"),
        (_drop("colors"), r"^description\.colors: missing"),
        (_set("links", "base_link", "mass", value="heavy"), r"^links\.base_link\.mass: expected a number or"),
        (_set("links", "base_link", "com", value=[0, "x", 0]), r"^links\.base_link\.com\[1\]: expected a"),
        (
            _set("joints", "joint_2", "limits", "velocity", value=True),
            r"^joints\.joint_2\.limits\.velocity: ",
        ),
        (_set("poses", "home", 6, value=math.inf), r"^poses\.home\[6\]: expected a finite number"),
        (_set("joints", "joint_2", "limits", value=[1, 2]), r"^joints\.joint_2\.limits: expected a mapping"),
        (_set("links", value=["base_link"]), r"^links: expected a mapping, got \['base_link'\]"),
    ],
    ids=[
        "no-mass",
        "no-inertia-entry",
        "no-effort",
        "no-rpy",
        "no-tool-parent",
        "no-timestep",
        "no-colors",
        "text-mass",
        "text-in-com",
        "bool-velocity",
        "infinite-pose-angle",
        "limits-list",
        "links-list",
    ],
)
def test_a_missing_or_bad_field_is_refused_by_its_path(edit: Edit, match: str) -> None:
    """A missing key, a value that is no number, or a section that is no mapping is refused by
    the field's path in the YAML, not with a bare ``KeyError('mass')``, ``AttributeError`` or
    a message naming no field (before, ``parse_number``'s errors named only the value)."""
    _refuses(edit, match)


# ---------------------------------------------------------------------------------------------
# Values that make no robot
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (_set("links", "base_link", "inertia", "xx", value=0), NOT_POSITIVE),
        (_set("links", "base_link", "inertia", "yy", value=0), NOT_POSITIVE),
        (_set("links", "base_link", "inertia", "zz", value=0), NOT_POSITIVE),
        (_set("links", "base_link", "shape", "radius", value=0), NOT_POSITIVE),
        (
            _set("joints", "joint_2", "limits", "velocity", value=0),
            "joint_2: velocity and effort limits must be > 0",
        ),
        (_set("simulation", "timestep", value=0), "simulation.timestep: expected > 0, got 0.0"),
        (_set("simulation", "timestep", value=-0.001), "simulation.timestep: expected > 0, got -0.001"),
    ],
    ids=[
        "zero-ixx",
        "zero-iyy",
        "zero-izz",
        "zero-radius",
        "zero-velocity",
        "zero-timestep",
        "negative-timestep",
    ],
)
def test_zero_is_not_a_positive_value(edit: Edit, match: str) -> None:
    """Each principal inertia, the shape radius, the velocity limit and the time step must be
    strictly positive: zero is refused. (Mutants in ``_check_values``: ``min(inertia[:3])`` →
    ``min(inertia[:2])`` or ``max(inertia[:3])``, ``radius > 0`` → ``>= 0`` or dropped,
    ``velocity_limit > 0`` → ``>= 0``, ``timestep > 0`` → ``>= 0`` or the check removed.)"""
    _refuses(edit, match)


def test_a_shape_whose_ends_coincide_is_refused_by_name() -> None:
    """A capsule from ``[0, 0, 0.01]`` to ``[0, 0, 0.01]`` has no axis: the description is
    refused with a message naming the link's shape. (Bug at 3b504aa: it was accepted, and
    rendering it raised a bare ``ZeroDivisionError`` in ``_segment`` naming no link.)"""
    _refuses(
        _set("links", "base_link", "shape", "to", value=[0, 0, 0.01]),
        re.escape("base_link.shape: 'from' and 'to' must differ, both are [0.0, 0.0, 0.01]"),
    )


def test_equal_position_limits_are_refused() -> None:
    """``[1.0, 1.0]`` leaves a limited joint no range: refused as not ``[lower, upper]``.
    (Mutant: ``not lower < upper`` → ``not lower <= upper``.)"""
    _refuses(
        _set("joints", "joint_2", "limits", "position", value=[1.0, 1.0]),
        r"joint_2.limits.position: expected \[lower, upper\], got \[1.0, 1.0\]",
    )


def test_a_pose_exactly_at_a_position_limit_is_accepted() -> None:
    """A named pose may sit on either end stop: joint_2 at −2.24 and at 2.24 rad (its limits)
    passes. (Mutants: ``lower <= q[i] <= upper`` → ``lower < q[i] <= upper`` or
    ``lower <= q[i] < upper``.)"""
    raw = _description_yaml()
    raw["poses"]["home"][1] = -2.24
    raw["poses"]["retract"][1] = 2.24
    poses = GEN.description_from_dict(raw).poses
    assert (poses["home"][1], poses["retract"][1]) == (-2.24, 2.24)


# ---------------------------------------------------------------------------------------------
# The chain
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (_set("tool", "name", value="bracelet_link"), r"^tool\.name: 'bracelet_link' is already a link name"),
        (_set("tool", "name", value="joint_7"), r"^tool\.name: 'joint_7' is already a joint name"),
        (_set("tool", "joint", value="joint_3"), r"^tool\.joint: 'joint_3' is already a joint name"),
        (_set("tool", "joint", value="base_link"), r"^tool\.joint: 'base_link' is already a link name"),
        (_set("tool", "joint", value="end_effector_link"), r"^tool\.joint: 'end_effector_link' is also"),
    ],
    ids=["tool-is-link", "tool-is-joint", "tool-joint-is-joint", "tool-joint-is-link", "tool-joint-is-tool"],
)
def test_a_tool_named_like_another_frame_is_refused(edit: Edit, match: str) -> None:
    """The URDF adds the tool as a link and its fixed joint as a joint, and Pinocchio makes a
    frame of each: a name already taken would give two frames of one name, and a task or
    barrier on it would act on whichever Pinocchio finds first."""
    _refuses(edit, match)


@pytest.mark.parametrize("rgba", [[0.2, 0.2, 1.5, 1.0], [0.2, -0.1, 0.2, 1.0], [0.2, 0.2, 0.2, 2.0]])
def test_a_colour_component_outside_zero_to_one_is_refused(rgba: list[float]) -> None:
    """URDF and MuJoCo colours are fractions: 1.5 or -0.1 is a typo (a 0-255 value, a sign)."""
    _refuses(
        _set("colors", "dark", value=rgba), re.escape("colors.dark: expected r, g, b, a in [0, 1], got ")
    )


def _add_link_after_the_bracelet(raw: dict[str, Any]) -> None:
    raw["links"]["gripper_link"] = dict(raw["links"]["bracelet_link"])


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (_add_link_after_the_bracelet, "9 links need 8 joints, got 7"),
        (
            _set("joints", "joint_3", "child", value="forearm_link"),
            "joint_3 connects half_arm_1_link -> forearm_link, expected half_arm_1_link -> half_arm_2_link",
        ),
        (
            _set("joints", "joint_3", "parent", value="shoulder_link"),
            "joint_3 connects shoulder_link -> half_arm_2_link, expected half_arm_1_link -> half_arm_2_link",
        ),
        (_set("tool", "parent", value="gripper_link"), "tool parent 'gripper_link' is not a link"),
        (_set("links", "base_link", "color", value="red"), "base_link: unknown color 'red'"),
    ],
    ids=["extra-link", "wrong-child", "wrong-parent", "unknown-tool-parent", "unknown-color"],
)
def test_a_description_that_is_no_serial_chain_is_refused(edit: Edit, match: str) -> None:
    """The renderers assume link i → joint i → link i+1, a tool on a known link and known
    colours; anything else is refused with a message naming the culprit. An extra link would
    otherwise become an MJCF body welded at its parent's origin. (Mutants: ``_check_chain``
    not called; ``len(names) != joints + 1`` → ``<``; the message's ``len(names) - 1`` →
    ``len(names)``; only the parent or only the child compared; the tool and colour checks
    removed.)"""
    _refuses(edit, match)


# ---------------------------------------------------------------------------------------------
# main: writing and --check
# ---------------------------------------------------------------------------------------------


def _texts(root: Path) -> dict[str, str | None]:
    """The three generated files under ``root`` (None for a missing one)."""
    return {
        relative: (root / relative).read_text(encoding="utf-8") if (root / relative).exists() else None
        for relative in GENERATED
    }


def test_main_writes_the_three_files_into_an_empty_root_and_then_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without ``--check``, ``main`` creates ``urdf/`` and ``mjcf/`` under ``--root``, writes
    the generator's texts, says so for each file and exits 0; a second run finds them up to
    date and writes and says nothing. (Mutants: the ``mkdir`` dropped; ``if not args.check`` →
    ``if args.check``; ``if args.check and stale`` → ``if stale``; the ``wrote`` line dropped;
    ``current == text`` → ``current != text``.)"""
    assert GEN.main(["--root", str(tmp_path)]) == 0
    assert _texts(tmp_path) == GEN.generate_texts()
    written = capsys.readouterr()
    assert written.out.splitlines() == [f"wrote {tmp_path / relative}" for relative in GENERATED]
    assert GEN.main(["--root", str(tmp_path)]) == 0
    assert capsys.readouterr().out == ""


def test_check_reports_every_stale_file_on_stderr_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--check`` with an up-to-date URDF, an edited ``gen3.xml`` and no ``scene.xml``: exit
    status 1, stderr names both stale files (after an up-to-date one), stdout is empty and no
    file changes. (Mutants: ``return 1`` → ``return 0``; ``if not args.check`` →
    ``if args.check``; ``continue`` → ``break`` after an up-to-date file; the report on stdout;
    only the first stale file reported.)"""
    GEN.main(["--root", str(tmp_path)])
    (tmp_path / GEN.MJCF_FILE).write_text("edited by hand\n", encoding="utf-8")
    (tmp_path / GEN.SCENE_FILE).unlink()
    before = _texts(tmp_path)
    capsys.readouterr()

    assert GEN.main(["--check", "--root", str(tmp_path)]) == 1
    report = capsys.readouterr()
    assert report.err == f"out of date: {GEN.MJCF_FILE}, {GEN.SCENE_FILE}\n"
    assert report.out == ""
    assert _texts(tmp_path) == before


def test_check_passes_silently_on_up_to_date_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--check`` on the files it just wrote: exit status 0 and no output. (Mutant:
    ``current == text`` → ``current != text``, which finds every file stale.)"""
    GEN.main(["--root", str(tmp_path)])
    capsys.readouterr()
    assert GEN.main(["--check", "--root", str(tmp_path)]) == 0
    assert capsys.readouterr() == ("", "")


def test_the_committed_files_pass_check_with_the_default_paths(capsys: pytest.CaptureFixture[str]) -> None:
    """``python tools/generate_gen3_description.py --check`` (the documented up-to-date check)
    exits 0 on the repository as committed. (Mutants: a wrong ``--root`` or ``--description``
    default.)"""
    assert GEN.main(["--check"]) == 0
    assert capsys.readouterr().err == ""


def test_main_reads_the_description_it_is_given(tmp_path: Path) -> None:
    """``--description`` picks the YAML: one with a 2 ms time step gives an MJCF with
    ``timestep="0.002"``. (Mutant: ``generate_texts(args.description)`` →
    ``generate_texts()``, which always reads the shipped file.)"""
    raw = _description_yaml()
    raw["simulation"]["timestep"] = 0.002
    description = tmp_path / "description.yaml"
    description.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    root = tmp_path / "out"

    assert GEN.main(["--description", str(description), "--root", str(root)]) == 0
    mjcf = (root / GEN.MJCF_FILE).read_text(encoding="utf-8")
    assert mjcf == GEN.render_mjcf(GEN.load_description(description))
    assert 'timestep="0.002"' in mjcf
