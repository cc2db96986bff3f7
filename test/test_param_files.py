"""Parameter files as rcl resolves them: ``file_parameters`` against what rclpy hands a node.

``make sim``, the launch files' checks and the pose demo read the parameter files themselves
(:func:`~torque_ctrl_ros.nodes.params.file_parameters`), and their overrides go into a file of
their own (:func:`~torque_ctrl_ros.nodes.params.write_overrides`). Both are only right if they
agree with rcl, which does not simply let a later file win: each case here is given to a real
rclpy node (its own context, no DDS traffic) and to the emulation.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ros_helpers import requires_rclpy, ros_domain  # noqa: F401

from torque_ctrl_ros.core.errors import ConfigError
from torque_ctrl_ros.nodes.params import (
    file_parameters,
    override_section,
    temporary_overrides,
    write_overrides,
)

pytestmark = requires_rclpy


def _section(name: str, **values: Any) -> str:
    """A parameter-file section ``name`` holding ``values`` (one level of nesting for dicts)."""
    lines = [f"{name}:", "  ros__parameters:"]
    for key, value in values.items():
        if isinstance(value, dict):
            lines += [f"    {key}:", *(f"      {k}: {v}" for k, v in value.items())]
        else:
            lines.append(f"    {key}: {value}")
    return "\n".join(lines) + "\n"


OPENS_WITH_WILDCARD = _section("/**", qos_depth=10) + _section(
    "controller_node", controller="computed_torque"
)
WILDCARD_LAST = _section("controller_node", controller="computed_torque") + _section(
    "/**", controller="gravity_comp"
)
BOTH_SPELLINGS = (
    _section("/controller_node", controller="computed_torque")
    + _section("/**", controller="gravity_comp")
    + _section("controller_node", controller="achd_rnea")
)
WILDCARD_QPID = _section("/**", controller="qpid")
#: ``/**/controller_node`` written as a namespace key enclosing the node's.
NESTED = "/**:\n" + "".join(
    "  " + line + "\n"
    for line in _section("controller_node", controller="hqpid", watchdog={"max_age": 0.5}).splitlines()
)
#: A node's section beside the wildcard's own parameters (rcl: ``/**``, then ``/**/controller_node``).
BESIDE = _section("/**", qos_depth=10) + "".join(
    "  " + line + "\n" for line in _section("controller_node", controller="qpid").splitlines()
)
#: The same, the node's section written before the wildcard's parameters (rcl keeps that order).
BESIDE_FIRST = (
    "/**:\n"
    + "".join("  " + line + "\n" for line in _section("controller_node", controller="qpid").splitlines())
    + "  ros__parameters:\n    controller: computed_torque\n"
)
DOTTED = _section("controller_node", **{"watchdog.max_age": 0.25, "controller": "qpid"})
OTHER_NODE = _section("sim_node", controller="qpid", mode="lockstep")

CASES = {
    "a later wildcard loses to the node's own section placed before it": [OPENS_WITH_WILDCARD, WILDCARD_QPID],
    "a wildcard after the node's section wins": [WILDCARD_LAST],
    "two spellings of a node's name are two sections": [BOTH_SPELLINGS],
    "the order of first appearance over files": [WILDCARD_QPID, BOTH_SPELLINGS],
    "a namespace as an enclosing key": [OPENS_WITH_WILDCARD, NESTED],
    "a node's section beside the wildcard's parameters": [OPENS_WITH_WILDCARD, BESIDE],
    "a node's section before the wildcard's parameters beside it": [BESIDE_FIRST],
    "a dotted name and a nested one are one parameter": [NESTED, DOTTED],
    "another node's section": [OTHER_NODE, WILDCARD_LAST],
}


@pytest.fixture
def rclpy_parameters(ros_domain: int) -> Iterator[Any]:  # noqa: F811
    """``read(files, node)``: the parameters an rclpy node ``node`` gets from ``files``."""
    import rclpy
    from rclpy.context import Context
    from rclpy.node import Node

    contexts: list[Context] = []

    def read(files: list[Path], node: str) -> dict[str, Any]:
        context = Context()
        contexts.append(context)
        args = ["--ros-args", *(a for f in files for a in ("--params-file", str(f)))]
        rclpy.init(args=args, context=context, domain_id=ros_domain)
        n = Node(node, context=context, automatically_declare_parameters_from_overrides=True)
        try:
            return {
                name: p.value
                for name, p in n.get_parameters_by_prefix("").items()
                if name not in ("use_sim_time", "start_type_description_service")
            }
        finally:
            n.destroy_node()

    yield read
    for context in contexts:
        rclpy.shutdown(context=context)


def _files(tmp_path: Path, texts: list[str]) -> list[Path]:
    paths = []
    for k, text in enumerate(texts):
        path = tmp_path / f"layer{k}.yaml"
        path.write_text(text)
        paths.append(path)
    return paths


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_files_resolve_as_rcl_resolves_them(case: str, tmp_path: Path, rclpy_parameters: Any) -> None:
    files = _files(tmp_path, CASES[case])
    for node in ("controller_node", "sim_node"):
        assert file_parameters(files, f"/{node}") == rclpy_parameters(files, node), (case, node)


#: The one layout the override section cannot win in: a file holds that section itself, before
#: another that reaches the node. ``write_overrides`` refuses it.
OVERRIDE_LOSES = {
    "a dotted name and a nested one are one parameter",
    "a node's section before the wildcard's parameters beside it",
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_overrides_win_over_every_layout_of_the_files_or_are_refused(
    case: str, tmp_path: Path, rclpy_parameters: Any
) -> None:
    """What ``-p controller:=hqpid`` (the ``/**`` section) loses after a file opening with ``/**:``,
    the override file wins, for its node only, in rclpy and in the emulation; where it could not,
    it is refused, and rclpy shows why."""
    files = _files(tmp_path, CASES[case])
    values = {"controller": "hqpid", "watchdog.max_age": 1.5, "joints": ("a", "b")}
    path = tmp_path / "overrides.yaml"
    if case in OVERRIDE_LOSES:
        with pytest.raises(ConfigError, match=r"'/\*\*/controller_node' followed by another"):
            write_overrides(path, {"controller_node": values}, after=files)
        assert not path.exists()  # refused before anything was written
        # Written all the same, rclpy gives the node the file's value, not the override's.
        path.write_text(
            f"{override_section('controller_node')}:\n  ros__parameters:\n    controller: hqpid\n"
        )
        assert rclpy_parameters([*files, path], "controller_node")["controller"] != "hqpid"
        return
    override = write_overrides(path, {"controller_node": values}, after=files)
    got = rclpy_parameters([*files, override], "controller_node")
    assert (got["controller"], got["watchdog.max_age"], got["joints"]) == ("hqpid", 1.5, ["a", "b"])
    assert file_parameters([*files, override], "/controller_node") == got
    assert file_parameters([*files, override], "/sim_node") == file_parameters(files, "/sim_node")


def test_a_p_override_loses_to_a_file_opening_with_a_wildcard(tmp_path: Path, ros_domain: int) -> None:  # noqa: F811
    """Why the overrides are a file: ``-p controller:=hqpid`` goes into the ``/**`` section, which a
    file opening with ``/**:`` places before the node's own (this is rclpy's behaviour, not ours;
    if it ever changes, the override file is no longer needed)."""
    import rclpy
    from rclpy.context import Context
    from rclpy.node import Node

    (path,) = _files(tmp_path, [OPENS_WITH_WILDCARD])
    context = Context()
    rclpy.init(
        args=["--ros-args", "--params-file", str(path), "-p", "controller:=hqpid"],
        context=context,
        domain_id=ros_domain,
    )
    try:
        node = Node("controller_node", context=context, automatically_declare_parameters_from_overrides=True)
        assert node.get_parameter("controller").value == "computed_torque"
        node.destroy_node()
    finally:
        rclpy.shutdown(context=context)


def test_override_values_are_plain_yaml(tmp_path: Path) -> None:
    import numpy as np

    path = write_overrides(
        tmp_path / "o.yaml", {"/sim_node": {"duration": np.float64(2.0), "n": np.int64(3)}}
    )
    assert override_section("/sim_node") == "/**/sim_node"
    assert file_parameters([path], "/sim_node") == {"duration": 2.0, "n": 3}
    with pytest.raises(TypeError, match="expected bool, int, float, str"):
        write_overrides(tmp_path / "bad.yaml", {"sim_node": {"x": {"nested": 1}}})


def test_a_refused_temporary_overrides_file_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A launch refused for its files left its overrides file in the temporary folder."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    (files,) = [_files(tmp_path, [NESTED + DOTTED])]
    with pytest.raises(ConfigError):
        temporary_overrides({"controller_node": {"controller": "hqpid"}}, files)
    assert [p.name for p in tmp_path.iterdir()] == ["layer0.yaml"]
    kept = temporary_overrides({"sim_node": {"mode": "lockstep"}}, files)
    assert kept.parent == tmp_path and file_parameters([kept], "/sim_node") == {"mode": "lockstep"}


def test_a_misspelt_node_under_a_namespace_key_is_refused(tmp_path: Path) -> None:
    """``/**:`` then ``controler_node:`` is the section ``/**/controler_node``, which reaches no node:
    a check of the top-level keys alone took it (``/**`` reaches every node)."""
    from torque_ctrl_ros.nodes.params import check_params_file

    (path,) = _files(
        tmp_path,
        [
            "/**:\n"
            + "".join(
                "  " + line + "\n" for line in _section("controler_node", controller="qpid").splitlines()
            )
        ],
    )
    with pytest.raises(ConfigError, match=r"section '/\*\*/controler_node' names no node started here"):
        check_params_file(path, ("sim_node", "controller_node"))
    good = path.with_name("ok.yaml")
    good.write_text(NESTED)
    check_params_file(good, ("sim_node", "controller_node"))
    # Keys holding no node's parameters, which rcl refuses when a node starts.
    for text, key in (
        ("ros__parameters:\n  controller: qpid\n", "ros__parameters"),
        ("controler_node:\n  ros_parameters:\n    controller: qpid\n", "controler_node"),
    ):
        bad = path.with_name("bad.yaml")
        bad.write_text(text)
        with pytest.raises(ConfigError, match=rf"section '{key}' names no node started here"):
            check_params_file(bad, ("sim_node", "controller_node"))


def test_a_key_written_twice_in_a_mapping_is_refused(tmp_path: Path) -> None:
    """rcl merges a node's section written twice (and a nested group like ``watchdog:``) where a
    YAML reader keeps the last: read that way a second ``sim_node:`` hid the first's reversed
    ``joints`` from the joint-order check (a review). Such a file is refused, naming the key."""
    twice = _section("sim_node", joints="[joint_7, joint_6]") + _section("sim_node", duration=5.0)
    group = (
        "controller_node:\n  ros__parameters:\n    watchdog:\n      max_age: 0.5\n"
        "    watchdog:\n      fallback_duration: 0.2\n"
    )
    for text, key, line in ((twice, "sim_node", 4), (group, "watchdog", 5)):
        (path,) = _files(tmp_path, [text])
        with pytest.raises(ConfigError, match=rf"line {line}: key '{key}' given twice in one mapping$"):
            file_parameters([path], "/controller_node")
    # Keys rcl takes as two parameters that a dictionary reads as one, and a key that is no scalar
    # (had raised a bare TypeError through the launch file; a review).
    for text, match in (
        ("n:\n  on: 1\n  yes: 2\n", r"line 3: key 'yes' reads as True, as 'on' before it does"),
        ("n:\n  1: a\n  1.0: b\n", r"line 3: key '1.0' reads as 1.0, as '1' before it does"),
        ("n:\n  ? [a, b]\n  : 1\n", r"line 2: a key that is not a scalar \(sequence\)"),
    ):
        (path,) = _files(tmp_path, [text])
        with pytest.raises(ConfigError, match=match):
            file_parameters([path], "/controller_node")


def test_a_nan_override_is_written_not_refused(tmp_path: Path) -> None:
    """NaN is a value (the node refuses it with its own message); NaN != NaN made the check of the
    written file call it overridden by another section."""
    path = write_overrides(tmp_path / "o.yaml", {"controller_node": {"watchdog.max_age": math.nan}})
    assert math.isnan(file_parameters([path], "/controller_node")["watchdog.max_age"])
    shipped = Path(__file__).resolve().parents[1] / "config" / "gen3_controllers.yaml"
    listed = write_overrides(
        tmp_path / "l.yaml", {"controller_node": {"fallback_damping": [math.nan] * 7}}, [shipped]
    )
    assert math.isnan(file_parameters([shipped, listed], "/controller_node")["fallback_damping"][0])
