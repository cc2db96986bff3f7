"""The node processes' shared pieces (:mod:`torque_ctrl_ros.node_processes`), without starting any."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from ros_helpers import param_literal, requires_rclpy

from torque_ctrl_ros import node_processes
from torque_ctrl_ros.core.errors import ConfigError
from torque_ctrl_ros.node_processes import (
    CONTROLLER_NODE,
    SIM_NODE,
    TRAJECTORY_TOPIC,
    NodePair,
)
from torque_ctrl_ros.nodes.params import file_parameters
from torque_ctrl_ros.paths import data_path


@requires_rclpy
def test_the_runner_names_the_nodes_as_they_name_themselves() -> None:
    """Its logs, parameter checks and the monitor's trajectory topic go by these names."""
    from torque_ctrl_ros.nodes import controller_node, sim_node

    assert (SIM_NODE, CONTROLLER_NODE) == (sim_node.NODE_NAME, controller_node.NODE_NAME) == NodePair.NAMES
    assert TRAJECTORY_TOPIC == "/controller_node/joint_trajectory"


def test_overrides_are_written_as_yaml_literals() -> None:
    assert param_literal(True) == "true" and param_literal(False) == "false"
    assert param_literal(0.1) == "0.1" and param_literal(3) == "3"
    assert param_literal([1.5, True, "a"]) == "[1.5,true,a]"


def test_the_pairs_overrides_win_over_a_file_opening_with_a_wildcard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``make sim CONTROLLER=qpid PARAMS=...``: with ``-p controller:=qpid`` the node's own section
    of a file opening with ``/**:`` won (rclpy: ``test_param_files.py``). The overrides now go
    last, in a file of their own, which every node process reads."""
    started: list[tuple[str, list[Path]]] = []

    def record(module: str, files: list[Path], *args: Any) -> Any:
        started.append((module, list(files)))
        return SimpleNamespace(poll=lambda: None)

    monkeypatch.setattr(node_processes, "start_node", record)
    params = tmp_path / "wildcard.yaml"
    shipped = data_path("config", "gen3_controllers.yaml")
    params.write_text("/**:\n  ros__parameters:\n    qos_depth: 10\n" + Path(shipped).read_text())
    pair = NodePair(0, tmp_path / "out", "qpid", "lockstep", 2.0, params, controller_params={"qos_depth": 20})
    pair.start()
    assert [module for module, _ in started] == ["sim_node", "controller_node"]
    for _, files in started:
        assert files[:-1] == pair.params_files and files[-1] == tmp_path / "out" / "overrides.yaml"
        ctrl, sim = (file_parameters(files, f"/{node}") for node in NodePair.NAMES[::-1])
        assert (ctrl["controller"], ctrl["use_sim_time"], ctrl["qos_depth"]) == ("qpid", True, 20)
        assert (sim["mode"], sim["duration"], sim["qos_depth"]) == ("lockstep", 2.0, 10)


def test_the_pair_refuses_a_file_that_keeps_an_override_from_winning_before_starting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(node_processes, "start_node", lambda *args: pytest.fail("a node was started"))
    params = tmp_path / "own_override_section.yaml"
    params.write_text(
        # The shipped file holds no /** section: this one comes after the override section.
        "/**/controller_node:\n  ros__parameters:\n    qos_depth: 10\n"
        "/**:\n  ros__parameters:\n    controller: hqpid\n"
    )
    out = tmp_path / "out"
    out.mkdir()
    (out / "sim.json").write_text("the last run's")
    (out / "overrides.yaml").write_text("the last run's")
    with pytest.raises(ConfigError, match=r"keeps \['controller'\] from being overridden"):
        NodePair(0, out, "qpid", params_file=params).start()
    # Refused: the last run's results and overrides stay as they were, and nothing else is left.
    assert sorted(p.name for p in out.iterdir()) == ["overrides.yaml", "sim.json"]
    assert {(out / n).read_text() for n in ("sim.json", "overrides.yaml")} == {"the last run's"}


def test_the_pair_removes_a_previous_runs_summaries_and_logs_before_starting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``make sim --out DIR`` or the benchmark reusing a folder: a node that failed before writing its
    summary had the previous run's read as this run's (a whole old summary table, "took 1 target from
    elsewhere"). They are gone before anything starts; the overrides are written anew."""
    out = tmp_path / "out"
    out.mkdir()
    for name in ("sim.json", "controller.json", "sim_node.log", "controller_node.log"):
        (out / name).write_text("a previous run's")
    (out / "keep.txt").write_text("not the pair's")
    monkeypatch.setattr(node_processes, "start_node", lambda *args: SimpleNamespace(poll=lambda: 1))
    pair = NodePair(0, out, "gravity_comp")
    pair.start()
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt", "overrides.yaml"]
    assert pair.stats() == ({}, {}) and pair.log_tail("sim_node") == ""


@pytest.mark.parametrize(("value", "domain"), [(None, None), ("", None), (" ", None), ("0", 0), ("232", 232)])
def test_an_unset_or_empty_ros_domain_id_is_none_and_a_set_one_a_domain_id(
    value: str | None, domain: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Empty, as rcl reads it: not set (``Domain`` then leases one). ``int("")`` had raised ValueError."""
    from torque_ctrl_ros.node_processes import Domain, env_domain_id

    if value is None:
        monkeypatch.delenv("ROS_DOMAIN_ID", raising=False)
    else:
        monkeypatch.setenv("ROS_DOMAIN_ID", value)
    assert env_domain_id() == domain
    leased = Domain()
    try:
        assert leased.id == domain if domain is not None else leased.lease is not None
    finally:
        leased.release()


@pytest.mark.parametrize("value", ["abc", "233", "-1", "1_0", "0x10"])
def test_a_ros_domain_id_that_is_no_domain_id_is_refused(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from torque_ctrl_ros.node_processes import Domain

    monkeypatch.setenv("ROS_DOMAIN_ID", value)
    with pytest.raises(ConfigError, match=f"ROS_DOMAIN_ID={value}: expected a whole number 0..232"):
        Domain()
