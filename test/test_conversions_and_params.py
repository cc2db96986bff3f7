"""Message conversions (bit-exact, by name) and parameter validation; no DDS traffic."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from builtin_interfaces.msg import Time
from ros_helpers import ros_domain  # noqa: F401 - pytest fixture
from sensor_msgs.msg import JointState as JointStateMsg
from std_msgs.msg import Float64MultiArray

from torque_ctrl_ros.core import JointState, RobotModel
from torque_ctrl_ros.core.controllers import (
    CONTROLLERS,
    ComputedTorque,
    ComputedTorqueConfig,
    create_controller,
)
from torque_ctrl_ros.core.errors import ConfigError, StateError
from torque_ctrl_ros.core.safety import DEFAULT_DAMPING
from torque_ctrl_ros.nodes.common import write_json, write_output
from torque_ctrl_ros.nodes.conversions import (
    CommandEncoder,
    JointStateDecoder,
    JointStateEncoder,
    command_stamp_ns,
    decode_command,
    ns_to_stamp,
    stamp_to_ns,
)
from torque_ctrl_ros.nodes.params import check_params_file, controller_node_config, sim_node_config
from torque_ctrl_ros.nodes.targets import JointTargetSource
from torque_ctrl_ros.paths import find_share_dir

NAMES = ["joint_1", "joint_2", "joint_3"]


def test_joint_state_round_trip_is_bit_exact_and_by_name() -> None:
    rng = np.random.default_rng(0)
    q, v, e = rng.normal(size=(3, 3))
    msg = JointStateEncoder(NAMES[::-1]).encode(1_234_567_890_123, q[::-1], v[::-1], e[::-1])
    assert stamp_to_ns(msg.header.stamp) == 1_234_567_890_123
    msg.name.append("gripper")  # extra joints are ignored
    msg.position.append(9.0)
    msg.velocity.append(9.0)
    msg.effort.append(9.0)
    dec = JointStateDecoder(NAMES)
    q2, v2 = dec.decode(msg)
    assert q2.tobytes() == q.tobytes() and v2.tobytes() == v.tobytes()
    effort = dec.decode_effort(msg)
    assert effort is not None and effort.tobytes() == e.tobytes()


@pytest.mark.parametrize("efforts", [[], [1.0, 2.0], [1.0, 2.0, 3.0, 4.0]])
def test_efforts_not_one_per_name_decode_as_none(efforts: list[float]) -> None:
    msg = JointStateMsg(name=NAMES, position=[0.0] * 3, velocity=[0.0] * 3, effort=efforts)
    assert JointStateDecoder(NAMES).decode_effort(msg) is None


@pytest.mark.parametrize(
    ("names", "pos", "vel", "match"),
    [
        (NAMES[:2], [0, 0], [0, 0], "lacks joint"),
        (NAMES, [0, 0], [0, 0, 0], "position: 2 entries"),
        (NAMES, [0, 0, 0], [], "velocities are required"),
    ],
)
def test_joint_state_decoder_refuses_inconsistent_messages(
    names: list[str], pos: list[int], vel: list[int], match: str
) -> None:
    msg = JointStateMsg(name=names, position=[float(x) for x in pos], velocity=[float(x) for x in vel])
    with pytest.raises(StateError, match=match):
        JointStateDecoder(NAMES).decode(msg)


def test_command_carries_the_answered_stamp() -> None:
    enc = CommandEncoder(3)
    tau = np.array([1.0, -2.5, 1e-300])
    msg = enc.encode(tau, answers_stamp_ns=5_000_000_007)
    out, stamp = decode_command(msg, 3)
    assert out.tobytes() == tau.tobytes() and stamp == 5_000_000_007
    assert msg.layout.dim[0].size == 3
    assert command_stamp_ns(enc.encode(tau)) is None
    assert command_stamp_ns(Float64MultiArray(data=[1.0])) is None
    with pytest.raises(StateError, match="2 entries, expected 3"):
        decode_command(Float64MultiArray(data=[1.0, 2.0]), 3)
    with pytest.raises(StateError, match="non-finite"):
        decode_command(Float64MultiArray(data=[1.0, float("nan"), 0.0]), 3)


def test_stamp_conversion() -> None:
    t = ns_to_stamp(3 * 10**9 + 17)
    assert (t.sec, t.nanosec) == (3, 17)
    assert stamp_to_ns(Time(sec=2, nanosec=999_999_999)) == 2_999_999_999


def test_controller_params_sections_and_errors() -> None:
    cfg = controller_node_config(
        {
            "controller": "computed_torque",
            "computed_torque.kp": 50.0,
            "gravity_comp.damping": 1.0,
            "use_sim_time": True,
        }
    )
    assert cfg.controller_params == {"kp": 50.0}
    assert cfg.model_file.endswith("gen3.urdf")
    with pytest.raises(ConfigError, match="expected one of"):
        controller_node_config({"controller": "nope"})
    with pytest.raises(ConfigError, match=r"unknown parameter\(s\) \['watchdog.max_agee'\]"):
        controller_node_config({"watchdog.max_agee": 0.1})
    with pytest.raises(ConfigError, match="max_age"):
        controller_node_config({"watchdog.max_age": -1.0})
    # Times in milliseconds where seconds are meant: states 20 s old, a 500 s fallback.
    for key, ms in (
        ("watchdog.max_age", 20),
        ("watchdog.fallback_duration", 500),
        ("watchdog.max_future", 1000),
    ):
        with pytest.raises(ConfigError, match=rf"{key}: {ms} s is more than .* in seconds, not milliseconds"):
            controller_node_config({key: ms})
    assert controller_node_config({"watchdog.max_age": 1.0}).watchdog.max_age == 1.0  # the largest
    with pytest.raises(ConfigError, match="does not exist"):
        controller_node_config({"model_file": "/nonexistent.urdf"})
    with pytest.raises(ConfigError, match="executor"):
        controller_node_config({"executor": "multi_threaded"})
    # rclpy only logs these and runs on (a quoted 'true' had left the node on the wall clock).
    for make in (controller_node_config, sim_node_config):
        for key, value in (("use_sim_time", "true"), ("start_type_description_service", 3)):
            with pytest.raises(ConfigError, match=rf"{key}: expected true or false, got {value!r}"):
                make({key: value})
    # Degrees where radians are meant: positions 30 rad past a limit would pass the watchdog.
    with pytest.raises(ConfigError, match=r"position_margin: expected at most π \(rad, not degrees\)"):
        controller_node_config({"watchdog.position_margin": 30})
    # No publisher or subscription takes QoS overrides: accepted, they had been ignored.
    with pytest.raises(ConfigError, match="unknown parameter"):
        controller_node_config({"qos_overrides./effort_controller/commands.publisher.depth": 1})


def test_watchdog_parameters_not_given_keep_the_watchdog_configs_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The node passes on only the ``watchdog.*`` parameters given: the defaults are written once,
    in :class:`WatchdogConfig` (here one with another default for ``max_age``)."""
    import dataclasses

    from torque_ctrl_ros.core.safety import WatchdogConfig
    from torque_ctrl_ros.nodes import params

    @dataclasses.dataclass(frozen=True)
    class Other(WatchdogConfig):
        max_age: float = 0.05

    monkeypatch.setattr(params, "WatchdogConfig", Other)
    assert controller_node_config({}).watchdog == Other()
    given = controller_node_config({"watchdog.fallback_duration": 0.2, "watchdog.auto_recover": False})
    assert given.watchdog == Other(fallback_duration=0.2, auto_recover=False)
    with pytest.raises(ConfigError, match=r"watchdog.auto_recover: expected true or false, got 'false'"):
        controller_node_config({"watchdog.auto_recover": "false"})


def test_the_defaults_are_the_shipped_parameters() -> None:
    """Run without the YAML, the nodes behave as with it (watchdog, simulator timing, safe torque):
    the one difference is the controller, which is gravity_comp without a file (README), and its
    parameters with it; ``joints`` empty means the model's order, which the YAML spells out."""
    import dataclasses

    from ros_helpers import shipped_parameters

    for config, node, differ in (
        (controller_node_config, "controller_node", {"controller", "controller_params", "joints"}),
        (sim_node_config, "sim_node", set()),
    ):
        default, shipped = config({}), config(shipped_parameters(node))
        for field in dataclasses.fields(default):
            if field.name not in differ:
                assert repr(getattr(default, field.name)) == repr(getattr(shipped, field.name)), field.name
    assert controller_node_config({}).controller == "gravity_comp"


def test_sim_params_defaults_and_errors() -> None:
    cfg = sim_node_config({})
    assert cfg.mode == "realtime" and cfg.keyframe == "home" and cfg.mjcf.endswith("scene.xml")
    model_joints = [f"joint_{i}" for i in range(1, 8)]
    assert cfg.damping_vector(model_joints).tolist() == list(DEFAULT_DAMPING)
    # Per joint, not per position: reordered joints take their own values (joint_7's 0.2 stays
    # joint_7's; given joint_1's 2.0 it would be unstable at 1 kHz, h·K_d/I ≈ 3 > 2).
    reordered = cfg.damping_vector(model_joints, model_joints[::-1])
    assert reordered.tolist() == list(DEFAULT_DAMPING)[::-1]
    # A scene with more joints than the arm, or a plant driving some of them: one value per
    # driven joint, in the model's order of them.
    assert cfg.damping_vector([*model_joints, "flap"], model_joints[::-1]).tolist() == reordered.tolist()
    two = sim_node_config({"safe_damping": [2.0, 0.2]})
    assert two.damping_vector(model_joints, ["joint_7", "joint_1"]).tolist() == [0.2, 2.0]
    assert not sim_node_config({"safe_torque": "zero"}).damping_vector(model_joints).any()
    with pytest.raises(ConfigError, match="mode"):
        sim_node_config({"mode": "fast"})
    with pytest.raises(ConfigError, match="unknown"):
        sim_node_config({"modee": "lockstep"})
    with pytest.raises(ConfigError, match="true or false"):
        sim_node_config({"wait_for_controller": "yes"})
    with pytest.raises(ConfigError, match=r"command_timeout: 50 s is more than the 1 s accepted"):
        sim_node_config({"command_timeout": 50})
    with pytest.raises(ConfigError, match=r"lockstep_timeout: 1000 s is more than the 60 s accepted"):
        sim_node_config({"lockstep_timeout": 1000})
    with pytest.raises(ConfigError, match=r"lockstep_timeout: 0.0005 s is less than the 0.001 s accepted"):
        sim_node_config({"lockstep_timeout": 5e-4})  # over before any controller could answer
    assert cfg.command_queue_depth == 100 and cfg.common.qos_depth == 10
    with pytest.raises(ConfigError, match=r"command_queue_depth: expected an integer in \[1, "):
        sim_node_config({"command_queue_depth": 0})


def test_values_that_would_fail_later_are_refused_at_start(tmp_path: Path) -> None:
    # Each of these used to pass validation and then end the node with a traceback: in rclpy
    # (an overflowing queue depth or timer period) or at exit, losing the run's outputs.
    for params, match in (
        ({"qos_depth": 10**11}, r"qos_depth: expected an integer in \[10, 100000\]"),
        ({"qos_depth": 5}, r"qos_depth: expected an integer in \[10, 100000\]"),  # drops after a stall
        ({"diagnostics_period": 1e-9}, "diagnostics_period: expected at least 0.05 s"),  # kept a node busy
        ({"command_queue_depth": 10**11}, "command_queue_depth"),
        ({"command_queue_depth": True}, r"command_queue_depth: expected an integer .* got True"),  # not 1
        ({"diagnostics_period": 1.0e12}, "diagnostics_period: expected at most 3600 s"),
        ({"duration": 1.0e300}, r"duration: expected at most 1e\+09 s"),  # its step count overflowed
        ({"stats_file": str(tmp_path / "no" / "such" / "s.json")}, "stats_file: folder .* does not exist"),
        ({"record_file": str(tmp_path / "no" / "r.npz")}, "record_file: folder .* does not exist"),
    ):
        with pytest.raises(ConfigError, match=match):
            sim_node_config(params)
    with pytest.raises(ConfigError, match="stats_file"):
        controller_node_config({"stats_file": str(tmp_path / "missing" / "c.json")})
    with pytest.raises(ConfigError, match="is a folder"):  # it had failed only at exit
        controller_node_config({"stats_file": str(tmp_path)})
    ok = sim_node_config({"stats_file": str(tmp_path / "s.json"), "record_file": str(tmp_path / "r.npz")})
    assert ok.common.stats_file.endswith("s.json") and ok.record_file.endswith("r.npz")
    # The bounds themselves are accepted (a node may publish /diagnostics every 50 ms).
    assert sim_node_config({"diagnostics_period": 0.05}).common.diagnostics_period == 0.05
    assert controller_node_config({"diagnostics_period": 3600.0}).common.diagnostics_period == 3600.0


def test_a_failed_exit_output_is_reported_not_raised(capsys: pytest.CaptureFixture[str]) -> None:
    done = []

    def fails() -> None:
        raise PermissionError("read-only file system")

    write_output("stats_file", fails)
    write_output("record_file", lambda: done.append(True))  # the next output is still written
    assert done == [True]
    assert "could not write stats_file: read-only file system" in capsys.readouterr().err


def test_the_json_summary_writes_non_finite_numbers_as_null(tmp_path: Path) -> None:
    """NaN and ±inf (a percentile of no samples, a rate over no time) are not JSON: Python would
    write NaN, Infinity, which strict readers (jq, browsers) refuse."""
    import json

    path = tmp_path / "s.json"
    write_json(str(path), {"a": math.inf, "b": [math.nan, -math.inf, 1.5], "c": {"d": math.inf}, "e": 2})

    def refuse(constant: str) -> None:
        raise ValueError(f"not JSON: {constant}")

    data = json.loads(path.read_text(), parse_constant=refuse)
    assert data == {"a": None, "b": [None, None, 1.5], "c": {"d": None}, "e": 2}


def test_the_shipped_simulator_config_validates() -> None:
    from ros_helpers import shipped_parameters

    sim_node_config(shipped_parameters("sim_node"))


@pytest.mark.parametrize("name", sorted(CONTROLLERS))
def test_the_shipped_controller_config_validates(name: str) -> None:
    """The controller node's parameters with each controller: the node's own checked by
    ``controller_node_config``, the controller's section by building the controller from it as
    the node does (that config only collects the section)."""
    from ros_helpers import shipped_parameters

    cfg = controller_node_config(shipped_parameters("controller_node") | {"controller": name})
    assert cfg.controller == name
    controller = create_controller(name, RobotModel.from_file(cfg.model_file), cfg.controller_params)
    assert controller.name == name


def _in_child_process(code: str) -> str:
    """Standard output of ``python -c code``: scheduling requests made there end with it, instead
    of sticking to the test runner."""
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout


def test_realtime_request_from_the_environment() -> None:
    """``$TORQUE_CTRL_RT_PRIORITY``: validated; the policy reported is the one the process got."""
    from torque_ctrl_ros.nodes.scheduling import RT_PRIORITY_ENV, request_realtime

    assert request_realtime({}) == "normal"
    assert request_realtime({RT_PRIORITY_ENV: "0"}) == "normal"
    for bad in ("abc", "-1", "100", "2.5"):
        with pytest.raises(ConfigError, match=RT_PRIORITY_ENV):
            request_realtime({RT_PRIORITY_ENV: bad})
    # In a child process: the policy would otherwise stick to the test runner.
    code = (
        "import os; from torque_ctrl_ros.nodes.scheduling import request_realtime as r; "
        f"got = r({{'{RT_PRIORITY_ENV}': '20'}}); "
        "print(got, os.sched_getscheduler(0) == os.SCHED_FIFO)"
    )
    out = _in_child_process(code)
    got, fifo = out.rsplit(" ", 1)
    assert (got == "fifo:20") == (fifo.strip() == "True"), out
    assert got == "fifo:20" or got.startswith("normal (SCHED_FIFO 20 not permitted"), out


@pytest.mark.parametrize("size", [1, 2, 7, 100, 2000])
def test_diagnostic_percentiles_match_numpy(size: int) -> None:
    from torque_ctrl_ros.nodes.common import percentiles_ms

    samples = np.random.default_rng(size).exponential(1e-3, size)
    got = percentiles_ms(samples)
    want = np.percentile(samples, [50, 90, 99]) * 1e3
    assert [got["p50_ms"], got["p90_ms"], got["p99_ms"]] == pytest.approx(want.tolist(), rel=1e-12)
    assert got["max_ms"] == samples.max() * 1e3
    assert all(np.isnan(v) for v in percentiles_ms(np.zeros(0)).values())


def test_timing_logs_keep_a_window_and_the_whole_run_up_to_their_cap() -> None:
    """/diagnostics read the latest ``window`` samples; a summary reads every sample, up to ``cap``
    (8 bytes each: kept without bound, a long run's memory would grow without bound too)."""
    from torque_ctrl_ros.nodes.common import TimingLog

    log = TimingLog(window=4, cap=6)
    for k in range(10):
        log.add(float(k))
    assert log.count == 10
    assert sorted(log.window().tolist()) == [6.0, 7.0, 8.0, 9.0]
    assert log.everything().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    brief = TimingLog(window=4, keep_all=False)
    for k in range(6):
        brief.add(float(k))
    assert sorted(brief.everything().tolist()) == [2.0, 3.0, 4.0, 5.0]


def test_runs_of_consecutive_events() -> None:
    """The simulator's late-step runs: count, number of runs and the longest, from a known stream."""
    from torque_ctrl_ros.nodes.common import Runs

    runs = Runs()
    for flag in "0110111001000111":
        runs.add(flag == "1")
    assert (runs.count, runs.runs, runs.longest) == (9, 4, 3)
    empty = Runs()
    for _ in range(5):
        empty.add(False)
    assert (empty.count, empty.runs, empty.longest) == (0, 0, 0)


def test_cpu_pinning_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """``$TORQUE_CTRL_CPUS`` and the runners' ``--cpus``: validated; the mask is the one asked for."""
    import os

    from torque_ctrl_ros.nodes.scheduling import CPUS_ENV, Placement, parse_cpus, request_cpus

    assert parse_cpus("") == frozenset() and parse_cpus("1") == {1}
    assert parse_cpus("0,2") == {0, 2} and parse_cpus("2-4, 7") == {2, 3, 4, 7}
    for bad in ("x", "3-1", "-1", "1.5", "1-"):
        with pytest.raises(ConfigError, match=CPUS_ENV):
            parse_cpus(bad)
    assert request_cpus({}) == "" and request_cpus({CPUS_ENV: ""}) == ""
    allowed = sorted(os.sched_getaffinity(0))
    with pytest.raises(ConfigError, match="not available"):
        request_cpus({CPUS_ENV: str(max(allowed) + 1)})
    # In a child process: the mask would otherwise stick to the test runner.
    code = (
        "import os; from torque_ctrl_ros.nodes.scheduling import request_cpus as r; "
        f"got = r({{'{CPUS_ENV}': '{allowed[-1]}'}}); "
        "print(got, sorted(os.sched_getaffinity(0)))"
    )
    out = _in_child_process(code)
    assert out.strip() == f"cpus:{allowed[-1]} [{allowed[-1]}]", out

    assert Placement.from_spec(20, "none") == Placement(20)
    # CPUs this process may not use are refused before a runner starts a node (make sim PIN=0:999
    # had started both, then the controller exited naming its environment variable).
    with pytest.raises(ConfigError, match=rf"cpus: CPUs \[{max(allowed) + 1}\] are not available"):
        Placement.from_spec(0, f"{allowed[0]}:{max(allowed) + 1}")
    with monkeypatch.context() as patched:
        patched.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2})
        assert Placement.from_spec(0, "0-1:2") == Placement(0, "0-1", "2")
    auto = Placement.from_spec(20, "auto")
    expected = (str(allowed[0]), str(allowed[1])) if len(allowed) > 1 else ("", "")
    assert (auto.sim_cpus, auto.controller_cpus) == expected
    assert auto.env("controller_node")[CPUS_ENV] == auto.controller_cpus
    assert auto.env("composed")[CPUS_ENV] == auto.sim_cpus
    for bad in ("0", "0:", ":1", "a:b", "fast"):
        with pytest.raises(ConfigError):
            Placement.from_spec(0, bad)


def test_the_policy_names_the_cpus_only_when_pinned_to_fewer_than_all(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The summaries' scheduling says ``cpus:`` for a process held to some of the machine's CPUs,
    nothing for one free to use them all."""
    import os

    from torque_ctrl_ros.nodes.scheduling import current_policy

    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    assert "cpus:" not in current_policy()
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {1, 3})
    assert " cpus:1,3" in current_policy()


def test_cpu_latency_request_from_the_environment(tmp_path: Path) -> None:
    """``$TORQUE_CTRL_CPU_LATENCY_US`` and the runners' ``--cpu-latency-us``: validated; the value
    goes to the device as the kernel's s32 and the request holds until released."""
    from torque_ctrl_ros.nodes import scheduling as sch

    env = sch.CPU_LATENCY_ENV
    assert sch.request_cpu_latency({}) == "" and sch.request_cpu_latency({env: " "}) == ""
    assert sch.request_cpu_latency({env: "none"}) == ""
    for bad in ("x", "-1", "1.5", "1000001"):
        with pytest.raises(ConfigError, match=env):
            sch.request_cpu_latency({env: bad})
    # Any character device takes the write (/dev/null here); the request holds until released
    # or replaced, and one that fails leaves none.
    null = Path("/dev/null")
    try:
        assert sch.request_cpu_latency({env: "0"}, null) == "cpu_latency:0us"
        assert sch.current_policy().endswith(" cpu_latency:0us")
        assert sch.request_cpu_latency({env: "25"}, null) == "cpu_latency:25us"
        assert sch.current_policy().endswith(" cpu_latency:25us")
        missing = tmp_path / "missing"
        assert sch.request_cpu_latency({env: "0"}, missing).startswith("cpu latency 0 us not held: ")
        assert not missing.exists()  # never created: a plain file there would honour nothing
        assert "cpu_latency" not in sch.current_policy()
    finally:
        sch.release_cpu_latency()
    assert "cpu_latency" not in sch.current_policy()
    plain = tmp_path / "plain"
    plain.write_bytes(b"")
    assert sch.request_cpu_latency({env: "0"}, plain) == f"cpu latency 0 us not held: {plain} is not a device"
    assert plain.read_bytes() == b"" and "cpu_latency" not in sch.current_policy()
    # The real device, in a child process (the request would otherwise hold for the test run):
    # while held, reading the device gives the kernel's current target, the smallest request
    # (25 µs, or less if another process holds less; the kernel reads ASCII "25" as 0x25 = 37).
    code = (
        "import struct; from torque_ctrl_ros.nodes.scheduling import request_cpu_latency as r, "
        f"CPU_LATENCY_DEVICE as d; got = r({{'{env}': '25'}}); "
        "print(got, struct.unpack('=i', d.read_bytes())[0] if got.startswith('cpu_latency') else -1)"
    )
    got, target = _in_child_process(code).rsplit(" ", 1)
    if got == "cpu_latency:25us":
        assert 0 <= int(target) <= 25, target
    else:
        assert got.startswith("cpu latency 25 us not held: "), got

    assert sch.parse_cpu_latency("none") is None and sch.parse_cpu_latency("") is None
    assert sch.parse_cpu_latency("0") == 0 and sch.parse_cpu_latency(" 50 ") == 50
    for bad in ("-1", "x", "1e3", "1000001"):
        with pytest.raises(ConfigError, match="cpu latency"):
            sch.parse_cpu_latency(bad)
    assert sch.Placement.from_spec(20, "none").env("sim_node")[env] == ""
    placed = sch.Placement.from_spec(20, "0:1", 0)
    assert placed.cpu_latency_us == 0
    assert placed.env("sim_node")[env] == placed.env("controller_node")[env] == "0"
    with pytest.raises(ConfigError, match="cpu latency"):
        sch.Placement.from_spec(0, "none", -5)


def test_joint_trajectory_takes_the_short_way_on_continuous_joints(robot: RobotModel) -> None:
    from builtin_interfaces.msg import Duration
    from ros_helpers import FakeTargetNode
    from trajectory_msgs.msg import JointTrajectory as TrajectoryMsg
    from trajectory_msgs.msg import JointTrajectoryPoint

    node = FakeTargetNode(strict=True)
    source = JointTargetSource(node, ComputedTorque(robot, ComputedTorqueConfig.create(robot.n, 100.0)))  # type: ignore[arg-type]
    assert robot.continuous[0] and not robot.continuous[1]
    q0 = np.zeros(robot.n)
    q0[0] = 3.1  # joint_1 turns without end: −3.1 rad is 2π − 6.2 ≈ 0.083 rad away
    goal = q0.copy()
    goal[0] = -3.1
    goal[1] = 0.5  # a bounded joint moves as given
    point = JointTrajectoryPoint(positions=goal.tolist(), time_from_start=Duration(sec=1))
    node.callbacks["~/joint_trajectory"](TrajectoryMsg(joint_names=list(robot.joint_names), points=[point]))
    short = 2.0 * np.pi - 6.2
    for t in np.linspace(0.0, 1.2, 61):
        ref = source.reference(JointState(q0, np.zeros(robot.n), float(t)))
        assert ref.v is not None and abs(ref.v[0]) <= 1.5 * short + 1e-9
        assert abs(abs(ref.q[0]) - np.pi) <= short
    assert np.isclose(ref.q[0], 3.1 + short) and np.isclose(ref.q[1], 0.5)
    assert source.received == 1 and source.rejected == 0


@pytest.mark.parametrize("site", ["lib/python3.11/site-packages", "target"])
def test_share_dir_found_from_the_package_location(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, site: str
) -> None:
    """An unsourced colcon install (<prefix>/lib/pythonX.Y/site-packages) and a ``pip install
    --target DIR``: the data next to the running package wins over another install in the environment."""
    package_dir = tmp_path / site / "torque_ctrl_ros"
    package_dir.mkdir(parents=True)
    share = (tmp_path if site.startswith("lib") else tmp_path / site) / "share" / "torque_ctrl_ros"
    other = tmp_path / "other" / "share" / "torque_ctrl_ros"
    for d in (share, other):
        (d / "mjcf").mkdir(parents=True)
        (d / "package.xml").touch()
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(tmp_path / "other"))
    assert find_share_dir(package_dir) == share


def test_command_labels_are_read_only_as_the_encoders_write_them() -> None:
    """Read loosely, ``joints@1.5`` had been 1 s and 5 ns and ``joints@1_0.000000001`` ten seconds;
    taken as untagged instead, such a command skipped the simulator's check of the state it
    answers: a malformed ``joints@`` label is an error now, another label no stamp. A label with a
    NUL inside read differently on the CDR path (to its length) than through rclpy (to the NUL)."""
    from torque_ctrl_ros.nodes.conversions import label_stamp_ns
    from torque_ctrl_ros.nodes.wire import CommandWire

    assert label_stamp_ns("joints@5.000000001") == 5 * 10**9 + 1
    assert label_stamp_ns("joints@-2.500000000") == -1_500_000_000  # as divmod writes −1.5 s
    assert label_stamp_ns("other@1.000000000") is None and label_stamp_ns("joints") is None
    for label in (
        "joints@1.5",
        "joints@1_0.000000001",
        "joints@ 3.100000000",
        "joints@1.2000000000",
        "joints@1",
        "joints@--1.000000000",
        "joints@١.000000000",
        "joints@" + "9" * 5000 + ".000000000",  # had raised ValueError (int() of > 4 300 digits)
        "joints@12345678901.000000000",  # beyond an int32 of seconds
    ):
        with pytest.raises(StateError, match="expected joints@<sec>.<nanosec>"):
            label_stamp_ns(label)
    wire = CommandWire(7)
    raw = bytearray(wire.encode(np.zeros(7), 5 * 10**9))
    at = bytes(raw).index(b"joints@")
    decoded = CommandWire.decode(bytes(raw))
    assert decoded is not None and decoded[1] == 5 * 10**9
    assert label_stamp_ns("joints@2147483647.999999999") == 2147483647 * 10**9 + 999_999_999
    # The same 5 000-digit label on the CDR path: the same error, not another exception.
    from rclpy.serialization import serialize_message
    from std_msgs.msg import Float64MultiArray, MultiArrayDimension

    msg = Float64MultiArray(data=[0.0] * 7)
    msg.layout.dim = [MultiArrayDimension(label="joints@" + "9" * 5000 + ".000000000", size=7, stride=7)]
    with pytest.raises(StateError, match="expected joints@"):
        CommandWire.decode(serialize_message(msg))
    raw[at + 3] = 0
    assert CommandWire.decode(bytes(raw)) is None  # left to rclpy, which stops at the NUL


# A label naming ``joints`` before its ``@`` is a stamp tag, held to the encoders' form; any other
# label (no ``@``, or another name before it) leaves the command untagged.
_MISTYPED_TAGS = [
    "Joints@1.000000001",
    "JOINTS@1.000000001",
    "joints @1.000000001",
    " joints@1.000000001",
    "joints\t@1.000000001",
    "joints @1.0",
    "joints@",
    "joints@junk",
]
_UNTAGGED = ["", "joints", "Joints", "other@1.000000000", "joint_1@1.000000001", "effort", "@1.000000001"]


def _command(label: str | None) -> Float64MultiArray:
    """Seven torques of 0.5 N·m under one layout dimension labelled ``label`` (``None``: no layout)."""
    from std_msgs.msg import MultiArrayDimension

    msg = Float64MultiArray(data=[0.5] * 7)
    if label is not None:
        msg.layout.dim = [MultiArrayDimension(label=label, size=7, stride=7)]
    return msg


@pytest.mark.parametrize("label", _MISTYPED_TAGS)
def test_a_mistyped_tag_is_refused_alike_on_both_paths(label: str) -> None:
    """``Joints@1.000000001`` had passed as untagged: in realtime the simulator applies an untagged
    command as the answer to its current state, so a command sent for an old state (or another
    run's) skipped the check of the state it answers. Both decoders refuse it alike."""
    from rclpy.serialization import serialize_message

    from torque_ctrl_ros.nodes.wire import CommandWire

    msg = _command(label)
    raw = serialize_message(msg)
    for read in (
        lambda: command_stamp_ns(msg),
        lambda: decode_command(msg, 7),
        lambda: CommandWire.decode(raw),
    ):
        with pytest.raises(StateError, match=re.escape(f"{label!r}: expected joints@<sec>.<nanosec>")):
            read()


def test_other_labels_and_no_layout_stay_untagged_on_both_paths() -> None:
    """What the refusal above must not catch: an empty or another label, ``joints`` itself, and no
    layout at all (``ros2 topic pub {data: [...]}``, a forward command controller's publisher)."""
    from rclpy.serialization import serialize_message

    from torque_ctrl_ros.nodes.wire import CommandWire

    for label in [*_UNTAGGED, None]:
        msg = _command(label)
        fast = CommandWire.decode(serialize_message(msg))
        assert fast is not None and fast[1] is None and fast[0].tolist() == [0.5] * 7, label
        assert command_stamp_ns(msg) is None and decode_command(msg, 7)[1] is None, label


NODES = ("sim_node", "controller_node")


def test_the_shipped_parameter_file_reaches_only_our_nodes() -> None:
    check_params_file(Path(__file__).resolve().parents[1] / "config" / "gen3_controllers.yaml", NODES)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("controller_nodes:\n  ros__parameters:\n    controller: qpid\n", "section 'controller_nodes'"),
        ("/**/controller_nodes:\n  ros__parameters: {}\n", "section '/**/controller_nodes'"),
        ("- controller_node\n", "expected node sections"),
        ("controller_node: [\n", "parameter file"),
        ("/**/controller_node:\n  ros__parameters: {}\n/**:\n  ros__parameters: {}\n", None),
        ("/controller_node:\n  ros__parameters: {}\n/*:\n  ros__parameters: {}\n", None),
        ("/**/*:\n  ros__parameters: {}\n", None),
        ("sim_*:\n  ros__parameters: {}\n", "not in 'sim_*'"),
        ("/arm/controller_node:\n  ros__parameters: {}\n", "is for namespace '/arm'"),
        ("/*/sim_node:\n  ros__parameters: {}\n", "is for namespace '/*'"),
        ("/arm/**:\n  ros__parameters: {}\n", "is for namespace '/arm'"),
        ("sim_and_controller:\n  ros__parameters:\n    controller: qpid\n", "section 'sim_and_controller'"),
    ],
    ids=[
        "misspelt",
        "misspelt-under-a-wildcard",
        "a-list",
        "bad-yaml",
        "wildcards",
        "root-namespace",
        "any-node-in-any-namespace",
        "a-wildcard-inside-a-name",
        "another-namespace",
        "one-namespace-level-of-any-name",
        "anything-under-another-namespace",
        "the-composed-process-name",
    ],
)
def test_a_parameter_file_section_for_no_node_is_refused(
    tmp_path: Path, text: str, error: str | None
) -> None:
    """rclpy ignores a section named after no node without a word: a misspelt ``controller_node``
    left the controller on its defaults (sim-time states refused as stale) and make sim waiting
    for ever. Wildcards as rcl reads them (checked against rclpy: a node in no namespace gets
    ``/**``, ``/*``, ``/**/*``, ``/**/controller_node``, not ``/*/controller_node`` nor ``/arm/**``;
    ``sim_*`` makes rcl refuse the whole file)."""
    path = tmp_path / "params.yaml"
    path.write_text(text)
    if error is None:
        check_params_file(path, NODES)
    else:
        with pytest.raises(ConfigError, match=re.escape(error)):
            check_params_file(path, NODES)


def test_a_parameter_file_for_nodes_in_a_namespace_needs_that_namespace(tmp_path: Path) -> None:
    """With the nodes in ``/arm``, its sections and wildcards pass, a bare or other one does not."""
    path = tmp_path / "params.yaml"
    path.write_text(
        "/arm/controller_node:\n  ros__parameters: {}\n/**:\n  ros__parameters: {}\n"
        "/*/sim_node:\n  ros__parameters: {}\n/arm/**:\n  ros__parameters: {}\n"
    )
    check_params_file(path, NODES, namespace="/arm")
    for other in ("controller_node", "/left/controller_node", "/left/**", "/*"):
        path.write_text(f"{other}:\n  ros__parameters: {{}}\n")
        with pytest.raises(ConfigError, match=re.escape("the nodes here run in '/arm'")):
            check_params_file(path, NODES, namespace="arm")


def test_a_node_that_ends_leaves_no_solver_object_for_the_interpreter_to_report_leaked(
    ros_domain: int,  # noqa: F811 - pytest fixture
) -> None:
    """``run_node`` freezes the start-up objects out of the collector's reach; a node in a reference
    cycle (its callbacks hold it) with a ProxSuite QP must still be freed before exit, or
    nanobind prints a block of "leaked" objects on every shutdown of qpid and hqpid."""
    import subprocess
    import sys

    from ros_helpers import ros_env

    code = (
        "from proxsuite import proxqp\n"
        "from torque_ctrl_ros.nodes.common import run_node\n"
        "class Node:\n"
        "    def __init__(self):\n"
        "        self.qp = proxqp.dense.QP(2, 0, 1)\n"
        "        self.cycle = self\n"
        "    def run(self): pass\n"
        "    def close(self): pass\n"
        "raise SystemExit(run_node(Node, 'leak_check', []))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=ros_env(ros_domain), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "leaked" not in done.stderr, done.stderr


_STUCK_IN_C = """
import re, signal
from torque_ctrl_ros.nodes.common import STOP, exit_if_stuck
signal.signal(signal.SIGTERM, lambda *_: STOP.set())
with exit_if_stuck(0.1):
    pass
with exit_if_stuck(0.5):
    re.match(r"(a+)+$", "a" * 40 + "b")  # minutes in C holding the interpreter, as the DDS deadlock
print("not reached")
"""


def test_a_teardown_stuck_in_native_code_ends_the_process_with_its_stacks() -> None:
    """Fast DDS 3.2 can deadlock deleting a participant while a peer leaves (eProsima/Fast-DDS#6513:
    caught in 1 of ~970 launch_testing runs, the simulator spinning in ``destroy_node`` holding the
    interpreter lock): SIGINT and SIGTERM could not end it, only the launch's SIGKILL 15 s later.
    Under ``exit_if_stuck`` such a block ends the process (status 1, every thread's stack on
    stderr); a block that ends in time leaves it alone (the first one here)."""
    import subprocess
    import sys
    import time

    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", _STUCK_IN_C], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    assert time.monotonic() - start < 30
    assert "Timeout (0:00:00.500000)!" in done.stderr and "in match" in done.stderr
    assert "not reached" not in done.stdout
