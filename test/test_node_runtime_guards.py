"""The nodes in this process, their callbacks called directly: /diagnostics keep coming while the
watchdog sends no command, parameter changes after start-up are refused, and the summary written
at exit accounts for the states having stopped. No DDS traffic is needed; the nodes are built on
their own domain id."""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from ros_helpers import CONFIG, param_literal, requires_rclpy, ros_domain  # noqa: F401

from torque_ctrl_ros.core.errors import SolverError

pytestmark = [pytest.mark.ros, requires_rclpy]

JOINTS = [f"joint_{i}" for i in range(1, 8)]
#: ``watchdog.max_age`` for the tests on the wall clock that are not about timing. At the default
#: 20 ms, a state handled late (the test thread descheduled between stamping and handling it, on a
#: loaded host) is refused as stale and braked, and a gap as long between two states is a silence:
#: right, but not what those tests check. 1 s is the most the config accepts.
MAX_AGE_1S: dict[str, Any] = {"watchdog.max_age": 1.0}


class Recorder:
    """Stands in for a publisher: keeps what would have been published."""

    def __init__(self) -> None:
        self.sent: list[Any] = []

    def publish(self, msg: Any) -> None:
        self.sent.append(msg)


class Nodes:
    """Builds node objects of this package on the shipped YAML; closes what is left at teardown."""

    def __init__(self, domain: int) -> None:
        self.domain = domain
        self.open: list[Any] = []

    def make(self, kind: str, *, remaps: Sequence[str] = (), **params: Any) -> Any:
        """``kind``: ``controller``, ``sim`` or ``composed``; ``params``: ``-p`` overrides
        (``node:name`` for one node only); ``remaps``: ``-r`` arguments (``from:=to``). Commands
        and /diagnostics go to :class:`Recorder` s."""
        import rclpy

        from torque_ctrl_ros.nodes.composed import Composed
        from torque_ctrl_ros.nodes.controller_node import ControllerNode
        from torque_ctrl_ros.nodes.sim_node import SimNode

        args = ["--ros-args", "--params-file", str(CONFIG)]
        for key, value in params.items():
            args += ["-p", f"{key}:={param_literal(value)}"]
        for remap in remaps:
            args += ["-r", remap]
        rclpy.init(args=args, domain_id=self.domain)
        built = {"controller": ControllerNode, "sim": SimNode, "composed": Composed}[kind]()
        self.open.append(built)
        if kind == "controller":
            built.publisher = Recorder()
            built.diag_publisher = Recorder()
        return built

    def close(self, built: Any) -> None:
        """Close ``built`` now (its summary is written)."""
        self.open.remove(built)
        built.close()


@pytest.fixture
def nodes(ros_domain: int) -> Iterator[Nodes]:  # noqa: F811
    import rclpy

    made = Nodes(ros_domain)
    yield made
    for built in reversed(made.open):
        built.close()
    if rclpy.ok():
        rclpy.shutdown()


def _now(node: Any) -> float:
    return node.node.get_clock().now().nanoseconds * 1e-9


class StoppedWallClock:
    """The wall clock of a controller node (``use_sim_time: false``), standing still until
    :meth:`advance`: the node's ``get_clock().now()`` and the ``time.monotonic()`` and
    ``time.perf_counter()`` of controller_node.py (arrival, silence and catch-up times), from the
    readings at construction on. The node still takes the wall-clock path; only the time it reads
    is the test's."""

    def __init__(self, node: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        import torque_ctrl_ros.nodes.controller_node as controller_module

        real = node.node.get_clock()
        self.clock_type = real.clock_type
        self.ns = real.now().nanoseconds
        self.steady = time.monotonic()
        monkeypatch.setattr(node.node, "get_clock", lambda: self)
        steady = SimpleNamespace(monotonic=self.monotonic, perf_counter=self.monotonic)
        monkeypatch.setattr(controller_module, "time", steady)

    def now(self) -> Any:
        """The node's clock (an rclpy ``Time``)."""
        from rclpy.time import Time

        return Time(nanoseconds=self.ns, clock_type=self.clock_type)

    def monotonic(self) -> float:
        return self.steady

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass on both clocks."""
        self.ns += round(seconds * 1e9)
        self.steady += seconds


def _state_msg(q: np.ndarray, stamp: float, names: list[str] | None = None) -> Any:
    from sensor_msgs.msg import JointState as JointStateMsg

    msg = JointStateMsg(name=names or JOINTS, position=q.tolist(), velocity=[0.0] * len(q))
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(round(stamp * 1e9), 10**9)
    return msg


def _latest_status(node: Any) -> Any:
    return node.diag_publisher.sent[-1].status[0]


# ---------------------------------------------------------------- /diagnostics without commands
def _misnamed(node: Any) -> Any:
    """Six of the arm's joints and one unknown: refused (a state naming none is ignored instead)."""
    return _state_msg(np.zeros(7), _now(node), [*JOINTS[:6], "other_7"])


def _non_finite(node: Any) -> Any:
    return _state_msg(np.full(7, np.nan), _now(node))


def _good(node: Any) -> Any:
    return _state_msg(np.zeros(7), _now(node))


def _to_waiting(node: Any) -> Callable[[], Any]:
    """Misnamed states from the start: the watchdog stays WAITING."""
    node._on_state_message(_misnamed(node))
    return lambda: _misnamed(node)


def _to_stopped_by_bad_states(node: Any) -> Callable[[], Any]:
    """Non-finite states past ``fallback_duration``: STOPPED, and they keep coming."""
    node._on_state_message(_good(node))
    node._on_state_message(_non_finite(node))
    time.sleep(0.15)
    node._on_state_message(_non_finite(node))
    return lambda: _non_finite(node)


def _to_stopped_for_good(node: Any) -> Callable[[], Any]:
    """Stale states (2 s old, beyond :data:`MAX_AGE_1S`) past ``fallback_duration`` without
    ``auto_recover``: good states change nothing."""
    node._on_state_message(_good(node))
    node._on_state_message(_state_msg(np.zeros(7), _now(node) - 2.0))
    time.sleep(0.15)
    node._on_state_message(_state_msg(np.zeros(7), _now(node) - 2.0))
    return lambda: _good(node)


@pytest.mark.parametrize(
    ("drive", "expected", "params"),
    [
        (_to_waiting, "waiting", {}),
        (_to_stopped_by_bad_states, "stopped", MAX_AGE_1S),
        (_to_stopped_for_good, "stopped", {"watchdog.auto_recover": False, **MAX_AGE_1S}),
    ],
    ids=["waiting-misnamed", "stopped-non-finite", "stopped-no-auto-recover"],
)
def test_deferred_diagnostics_go_out_when_no_command_follows(
    nodes: Nodes, drive: Callable[[Any], Callable[[], Any]], expected: str, params: dict[str, Any]
) -> None:
    node = nodes.make(
        "controller",
        controller="computed_torque",
        use_sim_time=False,
        **{"watchdog.fallback_duration": 0.05, **params},
    )
    next_state = drive(node)
    assert node.watchdog.state.value == expected
    commands = len(node.publisher.sent)
    for report in range(1, 4):
        before = len(node.diag_publisher.sent)
        node._on_state_message(next_state())
        node._on_diagnostics_timer()  # a state just arrived: deferred to the next one's handling
        node._on_state_message(next_state())
        assert len(node.diag_publisher.sent) == before + 1, f"report {report}: no /diagnostics"
    assert len(node.publisher.sent) == commands  # none of these states got a command
    values = {kv.key: kv.value for kv in _latest_status(node).values}
    assert values["watchdog_state"] == expected
    assert _latest_status(node).message.startswith(expected)


def test_diagnostics_keep_their_period_under_a_stream_of_misnamed_states(nodes: Nodes) -> None:
    """The timer itself, with states every few ms as from a 200 Hz+ driver (generous bounds)."""
    node = nodes.make("controller", controller="computed_torque", use_sim_time=False, diagnostics_period=0.1)
    end = time.monotonic() + 2.0
    while time.monotonic() < end:
        node._on_state_message(_misnamed(node))
        node.executor.spin_once(timeout_sec=0.003)
    assert node.counts.states_received > 50
    assert len(node.diag_publisher.sent) >= 4, f"{len(node.diag_publisher.sent)} /diagnostics in 2 s"
    assert node.publisher.sent == []
    message = _latest_status(node).message  # waiting, and why: every state refused
    assert re.fullmatch(
        r"waiting; the watchdog refused \d+ joint state\(s\) \(inconsistent \d+\) since the last report",
        message,
    )


def test_diagnostics_warn_of_the_watchdogs_refusals_and_fallbacks_since_the_last_report(nodes: Nodes) -> None:
    """One bad state among good ones: the watchdog refuses it and falls back for a moment, over
    before the next report, which then reads WARN naming both, and the report after it OK again
    (a review: a driver sending one bad state in fifty kept the status OK while the node braked
    twenty times a second)."""
    from diagnostic_msgs.msg import DiagnosticStatus

    from torque_ctrl_ros.core.safety import WatchdogState

    node, at = _node_on_sim_time(nodes, "computed_torque")
    for k in range(1, 50):
        at(k, HOME)
    node._publish_diagnostics()
    assert _latest_status(node).level == DiagnosticStatus.OK, _latest_status(node).message
    bad = HOME.copy()
    bad[2] = math.nan
    at(50, bad)
    for k in range(51, 1200):
        at(k, HOME)
    assert node.watchdog.state is WatchdogState.OK  # the fallback is over by the report
    node._publish_diagnostics()
    status = _latest_status(node)
    assert status.level == DiagnosticStatus.WARN
    assert status.message == (
        "the watchdog fell back 1 time(s) and refused 1 joint state(s) (non_finite 1) since the last report"
    )
    for k in range(1200, 1250):
        at(k, HOME)
    node._publish_diagnostics()
    assert _latest_status(node).level == DiagnosticStatus.OK, _latest_status(node).message


def test_diagnostics_say_when_no_state_came_yet(nodes: Nodes) -> None:
    """Before the first state the time since the last one is inf (it had read the node's age,
    as if a state had just come); after it, the time since that state."""
    node = nodes.make("controller", controller="gravity_comp", use_sim_time=False)
    time.sleep(0.05)
    node._publish_diagnostics()
    values = {kv.key: kv.value for kv in _latest_status(node).values}
    assert values["states_received"] == "0" and values["seconds_since_last_state"] == "inf"
    node._on_state_message(_good(node))
    time.sleep(0.05)
    node._publish_diagnostics()
    values = {kv.key: kv.value for kv in _latest_status(node).values}
    assert 0.04 < float(values["seconds_since_last_state"]) < 5.0


# ---------------------------------------------------------------- parameters
def _ros_nodes(built: Any) -> list[Any]:
    if hasattr(built, "sim") and hasattr(built, "controller"):  # Composed
        return [built.controller.node, built.sim.node]
    return [built.node]


@pytest.mark.parametrize("kind", ["controller", "sim", "composed"])
def test_parameter_changes_after_start_up_are_refused(nodes: Nodes, kind: str) -> None:
    from rclpy.parameter import Parameter

    # Start-up overrides, use_sim_time included, still apply.
    overrides: dict[str, Any] = {
        "controller_node:use_sim_time": True,
        "controller_node:computed_torque.kp": 50.0,
        "sim_node:command_timeout": 0.07,
    }
    built = nodes.make(kind, **overrides)
    for node in _ros_nodes(built):
        name = node.get_name()
        changed, value = (
            ("computed_torque.kp", 50.0) if name == "controller_node" else ("command_timeout", 0.07)
        )
        assert node.get_parameter(changed).value == value
        sim_time = name == "controller_node"
        assert node.get_clock().ros_time_is_active is sim_time
        assert node.get_parameter("use_sim_time").value is sim_time

        for param in (
            Parameter(changed, value=-100.0),
            Parameter("use_sim_time", value=not sim_time),
            Parameter("not_a_parameter_before", value=1),
        ):
            (result,) = node.set_parameters([param])
            assert not result.successful, f"{name}: {param.name} accepted"
            assert result.reason == (
                f"parameters are read once at start-up; restart the node to change {param.name}"
            )
        result = node.set_parameters_atomically([Parameter(changed, value=1.0)])
        assert not result.successful
        # Nothing changed: the values reported are those in effect.
        assert node.get_parameter(changed).value == value
        assert node.get_parameter("use_sim_time").value is sim_time
        assert node.get_clock().ros_time_is_active is sim_time
        assert not node.has_parameter("not_a_parameter_before")
    if kind != "sim":
        controller = built if kind == "controller" else built.controller
        assert controller.config.controller_params["kp"] == 50.0


# ---------------------------------------------------------------- the summary at exit
def test_the_summary_shows_the_fallback_when_the_states_stop_before_the_end(
    nodes: Nodes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stats = tmp_path / "controller.json"
    node = nodes.make("controller", controller="computed_torque", use_sim_time=False, stats_file=str(stats))
    # The test's clock, not the host's: a state handled over max_age after it was stamped (the
    # thread descheduled) would be refused as stale, and a slow host could reach fallback_duration.
    clock = StoppedWallClock(node, monkeypatch)
    for _ in range(3):
        clock.advance(0.001)
        node._on_state_message(_good(node))
    assert node.watchdog.state.value == "ok"
    clock.advance(0.2)  # > max_age (0.02 s): the states have stopped; no timer ran since
    published = (len(node.publisher.sent), len(node.diag_publisher.sent))
    logged: list[tuple[str, str]] = []

    class Logger:
        def info(self, message: str) -> None:
            logged.append(("info", message))

        def error(self, message: str) -> None:
            logged.append(("error", message))

        warning = error

    node.log._logger = Logger()
    nodes.close(node)
    # The end of a run is no fault: said at info (launch had shown an [ERROR] at every normal end).
    assert ("info", "watchdog ok -> fallback at shutdown: no joint state for 200 ms") in logged, logged
    assert not [line for level, line in logged if level == "error"], logged
    summary = json.loads(stats.read_text())
    assert summary["watchdog_state"] == "fallback", summary  # 0.2 s < fallback_duration (0.5 s)
    assert summary["watchdog_reason_kind"] == "stale"
    assert summary["watchdog_reason"] == "no joint state for 200 ms"
    assert summary["rejected"]["stale"] == 0  # silence, not a refused state
    # The end's fallback came after the last state: none while the states came (make sim's summary).
    assert (summary["watchdog_fallbacks"], summary["watchdog_fallbacks_before_last_state"]) == (1, 0)
    assert (len(node.publisher.sent), len(node.diag_publisher.sent)) == published  # nothing published


def test_realtime_simulator_ignores_answers_to_states_older_than_the_command_timeout(
    nodes: Nodes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A controller 200 ms behind (its commands tagged with the state of 200 steps ago) had kept
    driving the plant for good: the arrival reset the command timeout, whatever state it answered.
    A command held is dropped once its state is older than the timeout."""
    sim = nodes.make("sim", mode="realtime", wait_for_controller=False, command_timeout=0.05)
    dt = sim.dt_ns
    sim.k = 300  # as if 300 steps had been published
    tau = np.full(sim.n, 0.5)
    sim._take_command(tau, sim.t0_ns + 100 * dt)  # answers the state of 200 ms ago
    assert sim.counts.stale_answers == 1 and not sim.commands.held
    sim._take_command(tau, sim.t0_ns + 260 * dt)  # 40 ms ago: within the timeout, held
    assert sim.commands.held and sim.counts.stale_answers == 1
    np.testing.assert_array_equal(sim.commands.tau, tau)
    # ... until its state is command_timeout old (10 steps on), not for command_timeout more of
    # wall time from its arrival (it had driven the plant until its state was 90 ms old).
    assert sim._command_fresh()
    sim.k = 310
    assert sim._command_fresh()
    sim.k = 311
    assert not sim._command_fresh()
    sim._take_command(2.0 * tau, None)  # untagged (a plain publisher): taken as it comes
    np.testing.assert_array_equal(sim.commands.tau, 2.0 * tau)
    assert sim.counts.stale_answers == 1
    # Held for at most command_timeout of simulated time since it came (no state to date it by) ...
    sim.k += 50
    assert sim._command_fresh()
    sim.k += 1
    assert not sim._command_fresh()
    # ... not of wall time: through a stall of the simulator itself (the plant stood still too) the
    # answer to the current state still answers it; one step on the safe torque had followed.
    from types import SimpleNamespace

    import torque_ctrl_ros.nodes.sim_node as sim_module

    later = SimpleNamespace(monotonic=lambda: time.monotonic() + 0.3)  # 0.3 s of wall time on
    for stamp in (sim.t0_ns + sim.k * dt, None):  # tagged with the current state, and untagged
        sim._take_command(2.0 * tau, stamp)
        monkeypatch.setattr(sim_module, "time", later)
        assert sim._command_fresh()
        monkeypatch.undo()
    # An answer to a state 10 s ahead, which this simulator never published (another run on the
    # domain): it had been held and applied.
    sim._take_command(3.0 * tau, sim.t0_ns + 10_300 * dt)
    assert sim.counts.stale_answers == 2
    np.testing.assert_array_equal(sim.commands.tau, 2.0 * tau)


def test_a_command_timeout_shorter_than_two_steps_is_refused(nodes: Nodes) -> None:
    """Ages count in simulated steps: under two steps, an answer that misses its state's tick is
    ignored as stale and the step runs on the safe torque. (When ages were measured from a
    command's arrival to the next tick, 0.5 ms had made every step run on the safe torque.)"""
    from torque_ctrl_ros.core.errors import ConfigError

    with pytest.raises(ConfigError, match="command_timeout.*misses its state's tick"):
        nodes.make("sim", mode="realtime", wait_for_controller=False, command_timeout=0.0005)


def test_an_unreadable_command_is_counted_as_received_and_rejected(nodes: Nodes) -> None:
    """Left out of ``commands_received``, rejected commands outnumbered received ones and the
    benchmark's lost count (published − received) took them for lost."""
    sim = nodes.make("sim", mode="realtime", wait_for_controller=False)
    sim._on_command_bytes(b"\x00\x01\x00\x00garbage")
    assert sim.counts.commands_received == 1 and sim.counts.rejected_commands == 1


def test_a_command_whose_layout_overruns_its_bytes_is_rejected(nodes: Nodes) -> None:
    """A layout claiming 2^28 dimensions in 68 bytes: rclpy reads on past the failed sequence and
    returned an untagged 7-torque command of the bytes after the count, which realtime applied."""
    import struct

    from rclpy.serialization import deserialize_message
    from std_msgs.msg import Float64MultiArray

    sim = nodes.make("sim", mode="realtime", wait_for_controller=False)
    raw = (
        b"\0\1\0\0" + struct.pack("<II", 0x10000000, sim.n) + bytes(4) + np.arange(1.0, sim.n + 1.0).tobytes()
    )
    assert len(deserialize_message(raw, Float64MultiArray).data) == sim.n  # what rclpy makes of it
    sim._on_command_bytes(raw)
    assert sim.counts.rejected_commands == 1 and sim.counts.commands_via_rclpy == 0
    assert not sim.commands.held and "claims more dimensions" in sim.last_reject


def test_an_oversized_command_is_rejected_unread(nodes: Nodes) -> None:
    """A 16 MiB command of 2²⁰ layout dimensions held the simulator's loop for 0.23 s in the fast
    reader (~2 s and 254 MiB in rclpy's): over MAX_COMMAND_BYTES it is rejected before reading."""
    from rclpy.serialization import serialize_message
    from std_msgs.msg import Float64MultiArray, MultiArrayDimension

    from torque_ctrl_ros.sim.commands import MAX_COMMAND_BYTES

    sim = nodes.make("sim", mode="realtime", wait_for_controller=False)
    msg = Float64MultiArray(data=[0.0] * sim.n)
    msg.layout.dim = [MultiArrayDimension(label="x", size=0, stride=0)] * (MAX_COMMAND_BYTES // 12 + 1)
    raw = serialize_message(msg)
    assert len(raw) > MAX_COMMAND_BYTES
    sim._on_command_bytes(raw)
    assert sim.counts.rejected_commands == 1 and sim.counts.commands_via_rclpy == 0
    assert sim.last_reject == f"command message of {len(raw)} bytes, over {MAX_COMMAND_BYTES}: not read"


# ------------------------------------------------------- a controller carries nothing across a jump
#: Home, and a pose with two capsules 5–8 mm apart (the collision rows active).
HOME = np.array([0.0, 0.26, 3.14, -2.27, 0.0, 0.96, 1.57])
NEAR_COLLISION = np.array([2.9401, -2.1741, 2.2848, 2.4733, 2.8727, -1.4682, 2.9696])


def _torques(node: Any) -> list[np.ndarray]:
    from rclpy.serialization import deserialize_message
    from std_msgs.msg import Float64MultiArray

    out = []
    for msg in node.publisher.sent:
        if isinstance(msg, bytes | bytearray):
            msg = deserialize_message(bytes(msg), Float64MultiArray)
        out.append(np.array(msg.data))
    return out


def _stop_and_recover(node: Any) -> None:
    """Non-finite states past ``fallback_duration``, then good ones at the new pose (auto_recover)."""
    node._on_state_message(_non_finite(node))
    time.sleep(0.1)
    node._on_state_message(_non_finite(node))
    assert node.watchdog.state.value == "stopped"
    for _ in range(3):
        node._on_state_message(_state_msg(NEAR_COLLISION, _now(node)))


def _restart_the_clock(node: Any) -> None:
    """A restarted simulator: sim time from 0 again, the arm at the new pose."""
    from rclpy.time import Time

    clock = node.node.get_clock()
    for k in range(3):
        clock.set_ros_time_override(Time(nanoseconds=k * 1_000_000, clock_type=clock.clock_type))
        node._on_state_message(_state_msg(NEAR_COLLISION, k * 1e-3))
    assert node.watchdog.clock_resets == 1
    assert node._diagnostic_values(time.monotonic(), 0.0, 1e-3, 1)["clock_resets"] == 1


@pytest.mark.parametrize(
    ("jump", "params"),
    [
        (_stop_and_recover, {"use_sim_time": False, "watchdog.fallback_duration": 0.05}),
        (_restart_the_clock, {"use_sim_time": True}),
    ],
    ids=["recovery-from-stop", "clock-reset"],
)
def test_a_qp_controller_starts_afresh_after_the_state_jumps(
    nodes: Nodes, jump: Callable[[Any], None], params: dict[str, Any]
) -> None:
    """The first torques at the new pose are those of a fresh controller: the self-collision
    gradient filter and the warm starts of the old pose had put 16.7 N·m into the first one."""
    from rclpy.time import Time

    from torque_ctrl_ros.core.controllers import create_controller
    from torque_ctrl_ros.core.types import JointState

    node = nodes.make("controller", controller="qpid", **params, **MAX_AGE_1S)
    clock = node.node.get_clock()
    for k in range(200):
        if params["use_sim_time"]:
            clock.set_ros_time_override(
                Time(nanoseconds=(100_000 + k) * 1_000_000, clock_type=clock.clock_type)
            )
        node._on_state_message(_state_msg(HOME, _now(node)))
    before = len(node.publisher.sent)
    jump(node)
    sent = _torques(node)[before:][-3:]
    fresh = create_controller("qpid", node.robot, node.config.controller_params)
    state = JointState(NEAR_COLLISION, np.zeros(7))
    reference = fresh.hold_reference(state)
    for tau in sent:
        np.testing.assert_allclose(tau, fresh.compute(state, reference).tau, rtol=0, atol=1e-9)


@pytest.mark.parametrize("tick_in_gap", [False, True], ids=["no-tick", "tick"])
def test_a_gap_in_the_states_ends_the_same_whether_or_not_the_diagnostics_timer_ticked(
    nodes: Nodes, tick_in_gap: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gap longer than ``max_age + fallback_duration`` stops the arm (``auto_recover: false``).
    The diagnostics timer was the only place silence was noted: without a tick inside the gap,
    control had gone on as if nothing happened."""
    no_recovery: dict[str, Any] = {"watchdog.auto_recover": False, "watchdog.fallback_duration": 0.05}
    node = nodes.make("controller", controller="computed_torque", use_sim_time=False, **no_recovery)
    # The test's clock, not the host's: the first state handled over max_age after it was stamped
    # (the thread descheduled) would be refused as stale, leaving no good state for a gap to follow.
    clock = StoppedWallClock(node, monkeypatch)
    node._on_state_message(_state_msg(HOME, _now(node)))
    assert node.watchdog.state.value == "ok"
    sent = len(node.publisher.sent)
    clock.advance(0.1)
    if tick_in_gap:
        node._on_diagnostics_timer()
    clock.advance(0.1)
    node._on_state_message(_state_msg(HOME, _now(node)))
    assert node.watchdog.state.value == "stopped"
    assert len(node.publisher.sent) == sent


def test_good_states_ignored_after_a_final_stop_are_not_logged_as_refused(nodes: Nodes) -> None:
    """With ``auto_recover: false`` good states after the stop had been logged as "joint state
    refused (stale)" with the reason of the stop; they now say the node must be restarted."""
    node = nodes.make(
        "controller",
        controller="computed_torque",
        use_sim_time=False,
        **{"watchdog.auto_recover": False, "watchdog.fallback_duration": 0.05, **MAX_AGE_1S},
    )
    node._on_state_message(_state_msg(HOME, _now(node)))
    node._on_state_message(_non_finite(node))
    time.sleep(0.1)
    node._on_state_message(_non_finite(node))
    assert node.watchdog.state.value == "stopped"
    said: list[tuple[str, str]] = []
    node.log.error = lambda key, message: said.append((key, message))
    node._on_state_message(_state_msg(HOME, _now(node)))
    assert [key for key, _ in said] == ["stopped"] and "auto_recover is false" in said[0][1]
    node._on_state_message(_non_finite(node))
    assert [key for key, _ in said] == ["stopped", "refused"]
    assert node.watchdog.clock_resets == 0


@pytest.mark.parametrize("stats_file", ["", "stats.json"])
def test_whole_run_timings_are_kept_only_for_a_stats_file(
    nodes: Nodes, tmp_path: Path, stats_file: str
) -> None:
    """Without a ``stats_file`` (the shipped default, the hardware launch) nothing reads the whole
    run: keeping it grew the controller node by ~56 bytes a state, ~200 MB an hour at 1 kHz."""
    path = str(tmp_path / stats_file)
    params = {"stats_file": path} if stats_file else {}
    node = nodes.make("controller", controller="computed_torque", use_sim_time=False, **params, **MAX_AGE_1S)
    for _ in range(2500):
        node._on_state_message(_state_msg(HOME, _now(node)))
    logs = [
        node.compute_time,
        node.callback_time,
        node.state_age,
        node.parts.state_in,
        *node.parts.info.values(),
    ]
    kept = {log.everything().size for log in logs}
    assert kept == ({2500} if stats_file else {2000})  # the whole run, or the /diagnostics window
    nodes.close(node)
    if stats_file:
        assert json.loads(Path(path).read_text())["compute"]["max_ms"] > 0.0


def test_a_slow_or_paused_simulator_is_no_gap(nodes: Nodes) -> None:
    """Under sim time the gap is read from the stamps: a simulator 25× slower than real time, then
    paused for 0.3 s, keeps them continuous. Read from the wall clock, each of these states went
    through FALLBACK (the controller reset every step) and the pause dropped the target; a pause
    long enough for the timer's wall-clock silence to stop the node dropped it too."""
    from rclpy.time import Time
    from sensor_msgs.msg import JointState as JointStateMsg

    node = nodes.make("controller", controller="computed_torque", use_sim_time=True)
    clock = node.node.get_clock()
    resets: list[int] = []
    reset = node.controller.reset

    def counted_reset() -> None:
        resets.append(1)
        reset()

    node.controller.reset = counted_reset

    def state_at(k: int) -> None:
        clock.set_ros_time_override(Time(nanoseconds=(100_000 + k) * 1_000_000, clock_type=clock.clock_type))
        node._on_state_message(_state_msg(HOME, 100.0 + k * 1e-3))

    state_at(0)
    goal = HOME + 0.1
    node.target._on_joint_target(JointStateMsg(name=JOINTS, position=goal.tolist()))
    for k in range(1, 11):
        time.sleep(0.025)
        state_at(k)
    time.sleep(0.3)
    state_at(11)
    assert node.watchdog.transitions == 1 and node.counts.fallback_commands == 0  # WAITING → OK only
    assert len(resets) == 1  # the first state's
    np.testing.assert_allclose(node.target.tracker.goal, goal)
    # Paused longer than max_age + fallback_duration with the diagnostics timer ticking: the
    # silence, read on the wall clock, stops the node; the next state, continuous with the last,
    # is controlled again and the target stands (it had been dropped).
    time.sleep(0.6)
    node._check_silence(time.monotonic())
    assert node.watchdog.state.value == "stopped"
    state_at(12)
    assert node.watchdog.state.value == "ok"
    np.testing.assert_allclose(node.target.tracker.goal, goal)


@pytest.mark.parametrize("serialized", [False, True], ids=["message", "cdr-bytes"])
def test_states_of_another_device_on_the_topic_are_ignored(nodes: Nodes, serialized: bool) -> None:
    """A gripper's driver publishing its own joints on /joint_states (Gen3 + gripper setups): each
    of its messages had been refused as a bad arm state, answered with a safe torque, and the next
    arm state reset the controller; now they are counted and otherwise ignored."""
    from rclpy.serialization import serialize_message

    node = nodes.make("controller", controller="qpid", use_sim_time=False, **MAX_AGE_1S)
    receive = (
        (lambda msg: node._on_state_bytes(serialize_message(msg))) if serialized else node._on_state_message
    )
    gripper = ["robotiq_85_left_knuckle_joint"]
    for k in range(100):
        receive(_state_msg(HOME, _now(node)))
        if k % 10 == 5:
            receive(_state_msg(np.zeros(1), _now(node), gripper))
    assert node.counts.foreign_states == 10
    assert node.watchdog.transitions == 1 and node.counts.fallback_commands == 0  # WAITING → OK only
    assert len(node.publisher.sent) == 100
    assert node.watchdog.rejected_total == 0


def _node_on_sim_time(nodes: Nodes, controller: str) -> tuple[Any, Callable[[int, np.ndarray], None]]:
    """A ``controller`` node on sim time, its first state at HOME (k = 0, 100 s); ``at(k, q)``
    delivers the state of step k (1 ms), the node's clock at its stamp."""
    from rclpy.time import Time

    node = nodes.make("controller", controller=controller, use_sim_time=True)
    clock = node.node.get_clock()

    def at(k: int, q: np.ndarray) -> None:
        clock.set_ros_time_override(Time(nanoseconds=(100_000 + k) * 1_000_000, clock_type=clock.clock_type))
        node._on_state_message(_state_msg(q, 100.0 + k * 1e-3))

    at(0, HOME)
    return node, at


def _trajectory_on_sim_time(nodes: Nodes, duration: float) -> tuple[Any, Callable[[int, np.ndarray], None]]:
    """A computed-torque node on sim time (:func:`_node_on_sim_time`) and a trajectory moving
    joint 1 to 1 rad over ``duration`` s."""
    from trajectory_msgs.msg import JointTrajectory as TrajectoryMsg
    from trajectory_msgs.msg import JointTrajectoryPoint

    node, at = _node_on_sim_time(nodes, "computed_torque")
    goal = HOME.copy()
    goal[0] = 1.0
    point = JointTrajectoryPoint(positions=goal.tolist())
    point.time_from_start.sec, point.time_from_start.nanosec = divmod(round(duration * 1e9), 10**9)
    node.target._on_trajectory(TrajectoryMsg(joint_names=JOINTS, points=[point]))
    return node, at


def _stop_steady_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stand controller_node.py's ``time.monotonic()`` (and ``perf_counter``) still. On sim time
    the node still notes a silence by its steady clock when it publishes ``/diagnostics``: a test
    descheduled for over ``max_age`` (20 ms) on a loaded host would count a second fallback."""
    import torque_ctrl_ros.nodes.controller_node as controller_module

    now = time.monotonic()
    monkeypatch.setattr(
        controller_module, "time", SimpleNamespace(monotonic=lambda: now, perf_counter=lambda: now)
    )


def _along_a_trajectory(nodes: Nodes) -> tuple[Any, Callable[[int, np.ndarray], None], np.ndarray]:
    """:func:`_trajectory_on_sim_time` (1.5 s) after 300 states on which the arm followed the
    reference exactly; also returns where the arm then is."""
    from torque_ctrl_ros.core.types import JointState

    node, at = _trajectory_on_sim_time(nodes, 1.5)
    q = HOME
    for k in range(1, 301):
        at(k, q)
        q = node.target.reference(JointState(q, np.zeros(7), 100.0 + k * 1e-3)).q.copy()
    return node, at, q


def test_a_trajectory_takes_up_where_it_stood_after_a_fallback(nodes: Nodes) -> None:
    """0.4 s of bad states in the middle of a trajectory (the safe torque holds the arm): sampled on
    its own clock, the reference had jumped 0.35 rad ahead of the held arm on recovery (14 N·m)."""
    from torque_ctrl_ros.core.types import JointState

    node, at, q = _along_a_trajectory(nodes)
    source = node.target
    held = q
    assert source.describe() == "trajectory" and held[0] > 0.05
    for k in range(301, 701):
        at(k, np.full(7, np.nan))
    assert node.watchdog.state.value == "fallback"
    at(701, held)
    assert node.watchdog.state.value == "ok"
    reference = source.reference(JointState(held, np.zeros(7), 100.701))
    assert abs(reference.q[0] - held[0]) < 2e-3, (reference.q[0], held[0])


@pytest.mark.parametrize(("moved", "resumed"), [(0.05, True), (0.3, False)])
def test_a_trajectory_is_dropped_after_a_fallback_the_arm_moved_far_in(
    nodes: Nodes, monkeypatch: pytest.MonkeyPatch, moved: float, resumed: bool
) -> None:
    """Back from 0.1 s of bad states 0.3 rad away on joint_2 (a controller stalled over a plant
    that let the arm fall): taken up where it stood, the trajectory had been stepped into the law
    (joint_2 at its torque limit, joint_6 past its velocity limit); now dropped, the arm held
    where it is. A small move (the brake's stop) still takes it up."""
    from torque_ctrl_ros.core.types import JointState

    _stop_steady_time(monkeypatch)
    node, at, q = _along_a_trajectory(nodes)
    source = node.target
    for k in range(301, 401):
        at(k, np.full(7, np.nan))
    assert node.watchdog.state.value == "fallback"
    spy = _ErrorSpy(monkeypatch, "target")
    sagged = q.copy()
    sagged[1] += moved
    at(401, sagged)
    reference = source.reference(JointState(sagged, np.zeros(7), 100.401))
    assert node.watchdog.state.value == "ok"
    if resumed:
        assert source.describe() == "trajectory" and abs(reference.q[0] - q[0]) < 2e-3
        # A paused trajectory runs late by the pause: said (it had been silent).
        assert spy.calls == [
            "no torque computed for 100 ms of the states' time: the target (trajectory) takes up "
            "where it stood"
        ]
    else:
        assert source.describe() == "hold"
        np.testing.assert_array_equal(reference.q, sagged)
        assert len(spy.calls) == 1 and spy.calls[0].endswith("target dropped, holding where it is")
    # Counted, so that /diagnostics still show it once the fallback is over.
    counts = node.counts
    assert (counts.watchdog_fallbacks, counts.watchdog_stops) == (1, 0)
    assert (counts.target_pauses, counts.target_drops) == ((1, 0) if resumed else (0, 1))
    node._publish_diagnostics()
    values = {kv.key: kv.value for kv in node.diag_publisher.sent[-1].status[0].values}
    assert values["watchdog_fallbacks"] == "1" and values["target_drops"] == ("0" if resumed else "1")


def test_a_trajectory_due_in_a_fallback_starts_late_by_it_and_that_is_said(
    nodes: Nodes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trajectory stamped to start at 100.35 s while the states were bad (100.3–100.4 s): it
    starts at 100.401, as late as the fallback held it up. The target was still ``hold``, so the
    pause went uncounted and unsaid, and ``make sim``'s summary gave a tracking error against the
    trajectory's own timeline without a word on why."""
    from trajectory_msgs.msg import JointTrajectory as TrajectoryMsg
    from trajectory_msgs.msg import JointTrajectoryPoint

    from torque_ctrl_ros.core.types import JointState

    node, at = _node_on_sim_time(nodes, "computed_torque")
    for k in range(1, 301):
        at(k, HOME)
    goal = HOME.copy()
    goal[0] += 0.5
    msg = TrajectoryMsg(joint_names=JOINTS, points=[JointTrajectoryPoint(positions=goal.tolist())])
    msg.points[0].time_from_start.sec = 1
    msg.header.stamp.sec, msg.header.stamp.nanosec = 100, 350_000_000
    node.target._on_trajectory(msg)
    for k in range(301, 401):
        at(k, np.full(7, np.nan))
    assert node.watchdog.state.value == "fallback"
    spy = _ErrorSpy(monkeypatch, "no torque computed")
    at(401, HOME)
    assert node.watchdog.state.value == "ok" and node.counts.target_pauses == 1
    assert spy.calls == [
        "no torque computed for 100 ms of the states' time: a trajectory due meanwhile starts as much later"
    ]
    at(402, HOME)
    assert node.target.describe() == "trajectory"
    # Started at the end of the pause (it was due 51 ms into it): half way at 100.901, within a
    # step; on time it would have been 0.551 s into its 1 s there, 0.29 rad on.
    halfway = node.target.reference(JointState(HOME, np.zeros(7), 100.901)).q[0]
    assert halfway == pytest.approx(HOME[0] + 0.25, abs=1e-3)


def test_gravity_compensation_moved_by_hand_in_a_fallback_says_nothing_of_targets(
    nodes: Nodes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No target to drop: the resume check had warned "target dropped, holding where it is" for a
    controller that holds nothing (gravity_comp, the hardware default, guided by hand)."""
    spy = _ErrorSpy(monkeypatch, "the arm moved")
    node, at = _node_on_sim_time(nodes, "gravity_comp")
    for k in range(1, 11):
        at(k, HOME)
    for k in range(11, 111):
        at(k, np.full(7, np.nan))
    moved = HOME.copy()
    moved[1] += 0.3
    at(111, moved)
    assert node.watchdog.state.value == "ok" and node.target.describe() == "none"
    assert spy.calls == []


def test_a_stop_after_a_real_gap_in_the_stamps_drops_the_trajectory(
    nodes: Nodes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stream silent 1 s by its own stamps (the arm's time went on): the watchdog stops, and the
    next state holds the arm. Kept, the trajectory had been sampled 1 s further on (joint_1's
    reference 0.95 rad against the arm's 0.10: 23.5 N·m)."""
    from torque_ctrl_ros.core.types import JointState

    node, at, q = _along_a_trajectory(nodes)
    source = node.target
    spy = _ErrorSpy(monkeypatch, "dropped")
    at(1300, q)
    assert source.describe() == "hold"
    # Said (it had been silent: the arm had not moved, so no "moved while silent" line either).
    assert spy.calls == ["target (trajectory) dropped after the stop: holding where the arm is"]
    assert (node.counts.watchdog_stops, node.counts.target_drops, node.counts.target_pauses) == (1, 1, 0)
    reference = source.reference(JointState(q, np.zeros(7), 101.3))
    assert abs(reference.q[0] - q[0]) < 1e-9


@pytest.mark.parametrize("timer_ticked", [False, True])
def test_a_bad_state_after_a_long_gap_is_a_silence_too(nodes: Nodes, timer_ticked: bool) -> None:
    """A state without velocities 1 s after the last good one: the gap stops the arm whether or not
    the diagnostics timer ticked in it. Read as a gap only for readable states, it had got a safe
    command braking from the state 1 s old when the timer had not ticked."""
    from rclpy.time import Time

    node, at = _node_on_sim_time(nodes, "gravity_comp")
    for k in range(1, 6):
        at(k, HOME)
    clock = node.node.get_clock()
    clock.set_ros_time_override(Time(nanoseconds=(100_000 + 1005) * 1_000_000, clock_type=clock.clock_type))
    if timer_ticked:
        node._check_silence(time.monotonic() + 1.0)
    msg = _state_msg(HOME, 101.005)
    msg.velocity = []
    sent = len(node.publisher.sent)
    node._on_state_message(msg)
    assert node.watchdog.state.value == "stopped" and len(node.publisher.sent) == sent


def test_a_second_fallback_on_a_frozen_clock_brakes_from_the_new_last_good_state(nodes: Nodes) -> None:
    """use_sim_time, the clock standing still: good q1, bad, good q2, bad. The second safe command
    is gravity at q2 (it had braked from q1: −8.7 N·m on joint_2 where g(q2) is −12.5). q2 lies
    0.25 rad from q1, within the watchdog's reach over 2 ms (0.28 rad: no jump)."""
    from rclpy.time import Time

    node = nodes.make("controller", controller="gravity_comp", use_sim_time=True)
    clock = node.node.get_clock()
    clock.set_ros_time_override(Time(nanoseconds=100_000_000_000, clock_type=clock.clock_type))
    q2 = HOME + np.array([0.0, 0.25, 0.0, 0.25, 0.0, 0.0, 0.0])
    for k, q in enumerate((HOME, np.full(7, np.nan), q2, np.full(7, np.nan))):
        node._on_state_message(_state_msg(q, 100.0 + k * 1e-3))
    assert node.counts.fallback_commands == 2
    limit = node.robot.effort_limit
    np.testing.assert_allclose(_torques(node)[-1], np.clip(node.robot.gravity(q2), -limit, limit), atol=1e-9)


def test_commands_echo_the_wall_clock_stamp_of_the_state_exactly(nodes: Nodes) -> None:
    """The command's label carries the state's stamp in ns as it came (through a float it had come
    back 97 ns off), and a refused state does not become the last good one (63 ns off)."""
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState as JointStateMsg

    from torque_ctrl_ros.nodes.wire import CommandWire

    node = nodes.make("controller", controller="gravity_comp", use_sim_time=False, **MAX_AGE_1S)
    ns = node.node.get_clock().now().nanoseconds
    while round(ns * 1e-9 * 1e9) == ns:  # a stamp a float in seconds does not carry exactly
        ns += 1
    good = JointStateMsg(name=JOINTS, position=HOME.tolist(), velocity=[0.0] * 7)
    good.header.stamp.sec, good.header.stamp.nanosec = divmod(ns, 10**9)
    node._on_state_bytes(serialize_message(good))
    decoded = CommandWire.decode(node.publisher.sent[-1])
    assert decoded is not None and decoded[1] == ns
    bad = JointStateMsg(name=JOINTS, position=[float("nan")] * 7, velocity=[0.0] * 7)
    bad.header.stamp.sec, bad.header.stamp.nanosec = divmod(ns + 1_000_001, 10**9)
    node._on_state_bytes(serialize_message(bad))
    node._on_state_bytes(
        b"\x00\x01\x00\x00" + bytes(8) + b"\xff\xff\xff\x7f"
    )  # unreadable: the last good stamp
    decoded = CommandWire.decode(node.publisher.sent[-1])
    assert decoded is not None and decoded[1] == ns


def test_a_trajectory_pauses_only_while_the_safe_torque_is_on(nodes: Nodes) -> None:
    """Every other state refused (non-finite) along a trajectory: the torque computed for each good
    state is applied for its period, so the trajectory pauses 1 ms per refused state, half the
    time. Paused from the last computed state instead, each fallback had cost a period more and
    the trajectory had stood still."""
    node, at = _trajectory_on_sim_time(nodes, 2.0)
    at(1, HOME)
    t0 = node.target.tracker.active.t0
    for k in range(2, 203):
        at(k, np.full(7, np.nan) if k % 2 else HOME)
    assert node.watchdog.state.value == "ok" and node.counts.fallback_commands == 100
    # 100 refused states, 1 ms each
    assert node.target.tracker.active.t0 - t0 == pytest.approx(0.100, abs=1e-9)
    # A silence of 200 ms, then a refused state: the arm held its last command through the
    # silence, so the pause runs from the last computed state (from the refused one it had
    # been 1 ms and the reference jumped 0.2 s ahead).
    t0 = node.target.tracker.active.t0
    at(402, np.full(7, np.nan))
    at(403, HOME)
    assert node.target.tracker.active.t0 - t0 == pytest.approx(0.201, abs=1e-9)


def test_a_slow_stream_with_refused_states_pauses_a_period_per_refused_state(nodes: Nodes) -> None:
    """At 40 Hz (25 ms, beyond max_age) with every other state refused, the refused state's stamp
    had been taken for the end of a silence: the trajectory paused from the last computed state
    and stood still. The stream's own period tells a silence from the next state."""
    node, at = _trajectory_on_sim_time(nodes, 4.0)
    for k in range(25, 251, 25):  # good states at 40 Hz
        at(k, HOME)
    t0 = node.target.tracker.active.t0
    for k in range(275, 1251, 25):
        at(k, np.full(7, np.nan) if (k // 25) % 2 else HOME)
    assert node.watchdog.state.value == "ok" and node.counts.fallback_commands == 20
    # 20 refused states, 25 ms each
    assert node.target.tracker.active.t0 - t0 == pytest.approx(0.500, abs=1e-9)


@pytest.mark.parametrize("tick_in_gap", [False, True], ids=["no-tick", "tick"])
@pytest.mark.parametrize("gap_ms", [100, 400])
def test_a_short_gap_in_a_trajectory_pauses_it_whether_or_not_the_timer_ticked(
    nodes: Nodes, gap_ms: int, tick_in_gap: bool
) -> None:
    """No state for 0.1 / 0.4 s (shorter than max_age + fallback_duration), the arm holding its
    last command: the trajectory takes up where it stood. Only a diagnostics tick inside the gap
    had noted the silence; without one the reference jumped ahead by the gap (0.35 rad, 14 N·m
    at 0.4 s), and the tick falls in such a gap only as often as the gap lasts a second."""
    node, at = _trajectory_on_sim_time(nodes, 1.5)
    for k in range(1, 301):
        at(k, HOME)
    t0 = node.target.tracker.active.t0
    if tick_in_gap:  # the timer ticks half way into the silence
        from rclpy.time import Time

        clock = node.node.get_clock()
        clock.set_ros_time_override(
            Time(nanoseconds=(100_300 + gap_ms // 2) * 1_000_000, clock_type=clock.clock_type)
        )
        node._last_state_wall -= gap_ms / 2000
        node._check_silence(time.monotonic())
        assert node.watchdog.state.value == "fallback"
    at(300 + gap_ms, HOME)
    assert node.watchdog.state.value == "ok" and node.counts.fallback_commands == 0
    assert node.target.tracker.active.t0 - t0 == pytest.approx(gap_ms * 1e-3, abs=1e-9)


def test_a_stream_that_slows_down_falls_back_twice(nodes: Nodes) -> None:
    """A 1 kHz stream going on at 40 Hz: the first two 25 ms gaps are silences (beyond max_age
    and the 1 ms period; a lone silence is not learnt), then 25 ms is the stream's period and its
    states are no silence."""
    node, at = _trajectory_on_sim_time(nodes, 4.0)
    for k in range(1, 101):
        at(k, HOME)
    assert node.watchdog.transitions == 1  # waiting → ok
    t0 = node.target.tracker.active.t0
    for k in range(125, 1101, 25):
        at(k, HOME)
    assert node.watchdog.transitions == 5  # ok → fallback → ok, twice
    assert node.target.tracker.active.t0 - t0 == pytest.approx(0.05, abs=1e-9)


def test_a_jittery_slow_stream_is_no_silence(nodes: Nodes) -> None:
    """A 40 Hz stream whose stamps jitter by ±5 ms: taken from the last step alone, the period
    after a 15–20 ms step made the next 30–35 ms step a silence (89 fallbacks and the trajectory
    paused 1.4 s of 10 s). The longest of the recent steps is the period."""
    node, at = _trajectory_on_sim_time(nodes, 20.0)
    rng = np.random.default_rng(2)
    at(25, HOME)  # the trajectory starts
    t0 = node.target.tracker.active.t0
    for k in range(2, 401):
        at(25 * k + int(rng.integers(-5, 6)), HOME)
    assert node.watchdog.transitions == 1 and node.watchdog.state.value == "ok"
    assert node.target.tracker.active.t0 == t0


def test_a_state_stamped_ahead_samples_the_trajectory_at_most_max_age_ahead(
    nodes: Nodes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One state stamped 0.6 s ahead of the clock (the watchdog accepts up to max_future, 1 s): the
    trajectory had been sampled 0.6 s ahead (joint 1's reference 0.35 rad from the arm, 15 N·m).

    The node's steady clock advances 1 µs a reading: the test thread descheduled for over 20 ms
    between two states would start a catch-up (``core/backlog.py``), which allows the stamps up to
    that time ahead of the lagging clock, not ``max_age``."""
    from itertools import count

    from rclpy.time import Time

    ticks = count()
    monkeypatch.setattr(time, "perf_counter", lambda: next(ticks) * 1e-6)
    node, at = _trajectory_on_sim_time(nodes, 1.5)
    for k in range(1, 301):
        at(k, HOME)
    seen: list[float] = []
    reference = node.target.reference

    def recorded_reference(state: Any, plan: bool = True) -> Any:
        seen.append(state.stamp)
        return reference(state, plan)

    node.target.reference = recorded_reference
    clock = node.node.get_clock()
    clock.set_ros_time_override(Time(nanoseconds=100_301 * 1_000_000, clock_type=clock.clock_type))
    node._on_state_message(_state_msg(HOME, 100.301 + 0.6))
    assert seen == [pytest.approx(100.301 + node.watchdog.config.max_age, abs=1e-9)]
    assert node.watchdog.state.value == "ok"


@pytest.mark.parametrize("failure", ["refused", "controller"])
def test_a_fallback_window_ends_by_the_stamps_when_the_clock_stands_still(nodes: Nodes, failure: str) -> None:
    """``use_sim_time`` with the node's clock standing still (no ``/clock``), states still coming
    every 1 ms: refused ones (or ones the controller fails on) had been answered with the safe
    command for ever, its window timed on that clock alone. It ends after ``fallback_duration``
    of their stamps."""
    from rclpy.time import Time

    node = nodes.make("controller", controller="computed_torque", use_sim_time=True)
    clock = node.node.get_clock()
    clock.set_ros_time_override(Time(nanoseconds=100_000_000_000, clock_type=clock.clock_type))
    node._on_state_message(_state_msg(HOME, 100.0))
    if failure == "controller":

        def fail(state: Any, reference: Any) -> None:
            raise SolverError("the QP failed (test)")

        node.controller.compute = fail
    for k in range(1, 801):  # ahead of the clock, up to 0.8 s (max_future 1 s)
        node._on_state_message(
            _state_msg(np.full(7, np.nan) if failure == "refused" else HOME, 100.0 + k * 1e-3)
        )
    assert node.watchdog.state.value == "stopped"
    assert node.counts.fallback_commands == round(node.watchdog.config.fallback_duration / 1e-3) + 1


@pytest.mark.parametrize("wild", ["ahead", "behind"])
def test_one_wild_stamp_in_a_fallback_window_changes_nothing(nodes: Nodes, wild: str) -> None:
    """On a running clock the window ends by that clock: one refused state stamped 2 s ahead (or
    an hour behind, opening the window) had ended it by the stamps at once, stopping the arm and
    dropping its trajectory."""
    node, at = _trajectory_on_sim_time(nodes, 2.0)
    for k in range(1, 301):
        at(k, HOME)
    nan = np.full(7, np.nan)
    clock = node.node.get_clock()
    from rclpy.time import Time

    for k in (301, 302, 303):
        clock.set_ros_time_override(Time(nanoseconds=(100_000 + k) * 1_000_000, clock_type=clock.clock_type))
        shift = {"ahead": 2.0 if k == 302 else 0.0, "behind": -3600.0 if k == 301 else 0.0}[wild]
        node._on_state_message(_state_msg(nan, 100.0 + k * 1e-3 + shift))
    assert node.watchdog.state.value == "fallback" and node.counts.fallback_commands == 3
    at(304, HOME)
    assert node.watchdog.state.value == "ok" and node.target.describe() == "trajectory"


def test_a_pose_approach_takes_up_where_it_stood_after_a_fallback(nodes: Nodes) -> None:
    """achd_rnea approaching a pose 0.2 m away, 0.4 s of refused states on the way: the approach
    pauses with the safe torque (without the pause its reference jumped 27 mm on recovery)."""
    import pinocchio as pin
    from geometry_msgs.msg import PoseStamped

    from torque_ctrl_ros.core.types import JointState

    node, at = _node_on_sim_time(nodes, "achd_rnea")
    source = node.target
    start = source.controller.hold_reference(JointState(HOME, np.zeros(7), 100.0))
    msg = PoseStamped()
    msg.header.frame_id = source.frame
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = map(
        float, start.position + np.array([0.0, 0.2, 0.0])
    )
    o = msg.pose.orientation
    o.x, o.y, o.z, o.w = map(float, pin.Quaternion(start.rotation).coeffs())
    source._on_pose(msg)
    for k in range(1, 401):
        at(k, HOME)
    assert source.tracker.active is not None and source.tracker.active.move.duration > 0.8  # still on its way
    before = source.tracker.current(JointState(HOME, np.zeros(7), 100.4)).position
    for k in range(401, 801):
        at(k, np.full(7, np.nan))
    at(801, HOME)
    after = source.tracker.current(JointState(HOME, np.zeros(7), 100.801)).position
    assert np.linalg.norm(after - before) < 1e-4  # one period of motion at most


@pytest.mark.parametrize("case", ["stamps-ahead", "second-window"])
def test_each_fallback_window_on_a_frozen_clock_lasts_fallback_duration(nodes: Nodes, case: str) -> None:
    """The window by the stamps starts at the first safe command's stamp as it came (capped at
    now + max_age, states 0.3 s ahead of the frozen clock had got 219 safe commands, not 501),
    and anew after a computed torque (kept, a second window had got 411)."""
    from rclpy.time import Time

    node = nodes.make("controller", controller="computed_torque", use_sim_time=True)
    clock = node.node.get_clock()
    clock.set_ros_time_override(Time(nanoseconds=100_000_000_000, clock_type=clock.clock_type))
    nan = np.full(7, np.nan)
    expected = round(node.watchdog.config.fallback_duration / 1e-3) + 1
    if case == "stamps-ahead":
        states = [HOME if k <= 300 else nan for k in range(951)]  # within max_future (1 s)
    else:
        states = [nan if 101 <= k <= 110 or k >= 201 else HOME for k in range(901)]
        expected += 10
    for k, q in enumerate(states):
        node._on_state_message(_state_msg(q, 100.0 + k * 1e-3))
    assert node.watchdog.state.value == "stopped" and node.counts.fallback_commands == expected


def test_one_missed_state_of_a_40_hz_stream_is_a_silence(nodes: Nodes) -> None:
    """A 50 ms gap in a 40 Hz stream (one state lost) is beyond 1.5 of its period: the trajectory
    pauses for it."""
    node, at = _trajectory_on_sim_time(nodes, 20.0)
    for k in range(25, 501, 25):
        at(k, HOME)
    t0 = node.target.tracker.active.t0
    at(550, HOME)
    assert node.watchdog.transitions == 3
    assert node.target.tracker.active.t0 - t0 == pytest.approx(0.05, abs=1e-9)


def test_the_start_up_answer_is_counted_but_not_timed(nodes: Nodes) -> None:
    """The answer that ends the simulator's wait for a controller includes the controller's first,
    cold call: it had been the latency "max" of most benchmark runs (1.3–2.8 ms at 05:30)."""
    sim = nodes.make("sim", mode="realtime", wait_for_controller=True)
    tau = np.zeros(sim.n)
    sim._publish_state()  # state 0, as the wait publishes it
    sim._take_command(tau, sim.t0_ns)
    assert sim.answered_states == 1 and sim.latency.count == 0
    sim._looping = True  # what run() sets once the loop starts
    sim.k = 1
    sim._publish_state()
    sim._take_command(tau, sim.t0_ns + sim.dt_ns)
    assert sim.answered_states == 2 and sim.latency.count == 1


@pytest.mark.parametrize("case", ["40-hz-stream", "one-state-ahead"])
def test_short_gaps_and_a_state_stamped_ahead_change_nothing(nodes: Nodes, case: str) -> None:
    """Read as silence, every state of a 40 Hz driver (25 ms apart, over max_age) fell back and
    paused the trajectory, and one state stamped 0.6 s ahead (the watchdog tolerates up to
    max_future) stopped the arm."""
    from rclpy.time import Time
    from sensor_msgs.msg import JointState as JointStateMsg

    node = nodes.make("controller", controller="computed_torque", use_sim_time=True)
    clock = node.node.get_clock()
    period_ms = 25 if case == "40-hz-stream" else 1

    def state_at(k: int, ahead: float = 0.0) -> None:
        ms = 100_000 + k * period_ms
        clock.set_ros_time_override(Time(nanoseconds=ms * 1_000_000, clock_type=clock.clock_type))
        node._on_state_message(_state_msg(HOME, ms * 1e-3 + ahead))

    state_at(0)
    goal = HOME + 0.1
    node.target._on_joint_target(JointStateMsg(name=JOINTS, position=goal.tolist()))
    for k in range(1, 41):
        state_at(k, 0.6 if case == "one-state-ahead" and k == 20 else 0.0)
    assert node.watchdog.state.value == "ok"
    np.testing.assert_allclose(node.target.tracker.goal, goal)  # not dropped by a stop
    if case == "40-hz-stream":
        assert node.watchdog.transitions == 1 and node.counts.fallback_commands == 0
    else:  # the states after it, older than it, are refused until max_age (20 ms) has passed
        assert node.counts.fallback_commands <= 20


def test_a_rejected_answer_leaves_the_step_late(nodes: Nodes) -> None:
    """The realtime loop counts a step late unless a valid command answered its state: a rejected
    answer (the plant then runs on the safe torque) had counted as a fresh command."""
    sim = nodes.make("sim", mode="realtime", wait_for_controller=False)
    sim._publish_state()
    sim._take_command(np.full(sim.n, np.nan), sim.t0_ns)
    assert sim.commands.answered and not sim.commands.answered_validly and sim.counts.rejected_commands == 1
    sim._take_command(np.zeros(sim.n), sim.t0_ns)
    assert sim.commands.answered_validly


def test_a_realtime_run_answered_only_by_rejected_commands_is_late_at_every_step(
    nodes: Nodes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loop itself counts a step late unless its state was answered validly: each of five
    states answered at once by a NaN command runs on the safe torque, late (counting answered
    states alone, none had been)."""
    sim = nodes.make("sim", mode="realtime", wait_for_controller=False, duration=0.005)
    spin = sim._spin_until

    def answer_with_nan(deadline: float, until_answered: bool) -> None:
        if until_answered and not sim.commands.answered:
            sim._take_command(np.full(sim.n, np.nan), sim.t0_ns + sim.k * sim.dt_ns)
        spin(deadline, until_answered)

    monkeypatch.setattr(sim, "_spin_until", answer_with_nan)
    sim.run()
    assert sim.k == 5 and sim.counts.rejected_commands >= 5
    assert sim.late.count == 5 and sim.counts.missing_command_steps == 5


# ------------------------------------------------------- errors on every message, logged once a second
class _ErrorSpy:
    """Takes the place of rclpy's ``RcutilsLogger.error``, ``.warning`` and ``.info``: keeps the messages
    containing ``text`` that reach them, whether or not its own throttle would have dropped
    them (each call locates its caller with ``inspect`` first: ~140 µs here)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
        from rclpy.impl.rcutils_logger import RcutilsLogger

        self.calls: list[str] = []

        def log(logger: Any, message: str, **kwargs: Any) -> bool:
            if text in message:
                self.calls.append(message)
            return True

        for level in ("error", "warning", "info"):
            monkeypatch.setattr(RcutilsLogger, level, log)


def test_refused_states_reach_the_logger_once_a_period(nodes: Nodes, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream of NaN states: each gets the safe torque, but the refusal is logged (and paid
    for) once per period, the next message saying how many were held back."""
    spy = _ErrorSpy(monkeypatch, "joint state refused")
    node = nodes.make(
        "controller",
        controller="computed_torque",
        use_sim_time=False,
        **{"watchdog.fallback_duration": 5.0, **MAX_AGE_1S},
    )
    node._on_state_message(_good(node))
    for _ in range(40):
        node._on_state_message(_non_finite(node))
    assert node.counts.fallback_commands == 40  # every refused state still answered with the safe torque
    # The first is logged as the watchdog's transition to fallback, the second as refused, the
    # other 38 are held back.
    assert len(spy.calls) == 1, spy.calls
    # Over the period (1 s), a state every ~5 ms: a gap of over 50 ms after a safe command would
    # end the window (core/supervisor.py), and the states after it would be let pass unanswered.
    sent, give_up = 0, time.monotonic() + 3.0
    while len(spy.calls) == 1 and time.monotonic() < give_up:
        time.sleep(0.005)
        node._on_state_message(_non_finite(node))
        sent += 1
    assert len(spy.calls) == 2 and node.counts.fallback_commands == 40 + sent
    assert spy.calls[1].endswith(f"(and {38 + sent - 1} more since the last such message)"), spy.calls[1]


def test_a_flapping_watchdog_logs_each_kind_of_transition_once_a_period(
    nodes: Nodes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every other state NaN (a flaky driver): each state is a transition, and each had been
    logged (0.25 ms a state, 400 lines in 0.8 s)."""
    spy = _ErrorSpy(monkeypatch, "watchdog")
    node = nodes.make(
        "controller",
        controller="computed_torque",
        use_sim_time=False,
        **{"watchdog.fallback_duration": 5.0, **MAX_AGE_1S},
    )
    for k in range(40):
        node._on_state_message(_non_finite(node) if k % 2 else _good(node))
    assert len(node.publisher.sent) == 40
    assert [m.split(":")[0] for m in spy.calls] == ["watchdog waiting -> ok", "watchdog ok -> fallback"]
    # The next /diagnostics write the last one held back: the log ends on the state the
    # watchdog is in.
    node._publish_diagnostics()
    assert node.watchdog.state.value == "fallback"
    assert spy.calls[2:] == [
        "watchdog ok -> fallback: joint state has non-finite position or velocity "
        "(and 37 more since the last such message)",
    ]


def test_a_stop_is_logged_at_once_and_the_log_ends_on_it(
    nodes: Nodes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Transitions into STOPPED are never held back, nor written after a later one at shutdown."""
    spy = _ErrorSpy(monkeypatch, "watchdog")
    node = nodes.make(
        "controller",
        controller="computed_torque",
        use_sim_time=False,
        **{"watchdog.fallback_duration": 0.05, **MAX_AGE_1S},
    )
    node._on_state_message(_good(node))  # waiting -> ok, at once
    node._on_state_message(_non_finite(node))  # ok -> fallback, starts the period
    for _ in range(2):
        node._on_state_message(_good(node))  # fallback -> ok, held back
        node._on_state_message(_non_finite(node))  # ok -> fallback, held back
    time.sleep(0.1)
    node._on_state_message(_non_finite(node))  # fallback -> stopped, at once
    assert node.watchdog.state.value == "stopped"
    assert spy.calls[-1].startswith("watchdog fallback -> stopped"), spy.calls
    assert "(and 4 more since the last such message)" in spy.calls[-1]
    nodes.close(node)  # nothing older written after it
    assert spy.calls[-1].startswith("watchdog fallback -> stopped"), spy.calls


def test_repeated_clock_resets_are_logged_once_a_period(
    nodes: Nodes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two simulators on one domain send time back at every other state: each reset still
    drops the target and restarts the controller, one line a second says so."""
    spy = _ErrorSpy(monkeypatch, "time went back")
    node = nodes.make("controller", controller="computed_torque", use_sim_time=False)
    resets = []
    monkeypatch.setattr(node.controller, "reset", lambda: resets.append(True))
    for k in range(5):
        node._clock_went_back(float(k))
    assert len(resets) == 5
    assert spy.calls == [
        "time went back to 0.000 s with the joint states (simulator restarted?): "
        "holding the current pose until a new target arrives"
    ]


def test_rejected_commands_reach_the_simulators_logger_once_a_period(
    nodes: Nodes, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = _ErrorSpy(monkeypatch, "command rejected")
    sim = nodes.make("sim", mode="realtime", wait_for_controller=False)
    sim._publish_state()
    for _ in range(30):
        sim._take_command(np.full(sim.n, np.nan), sim.t0_ns)
    assert sim.counts.rejected_commands == 30
    assert len(spy.calls) == 1, spy.calls
    time.sleep(1.05)
    sim._maybe_diagnostics()  # the last one held back, once the period is over
    assert len(spy.calls) == 2 and spy.calls[1].endswith("(and 28 more since the last such message)")


def test_throttled_log_keeps_each_kind_of_message_apart() -> None:
    from torque_ctrl_ros.nodes.common import ThrottledLog

    class Logger:
        def __init__(self) -> None:
            self.errors: list[str] = []

        def error(self, message: str) -> None:
            self.errors.append(message)

        def info(self, message: str) -> None:
            self.errors.append(f"info: {message}")

    logger = Logger()
    log = ThrottledLog(logger, period=60.0)
    assert log.error("a", "first a") and log.error("b", "first b")
    assert not log.error("a", "second a")
    assert logger.errors == ["first a", "first b"]
    log.period = 0.0
    log._next["a"] = 0.0  # its period is over
    assert log.error("a", "third a")
    assert logger.errors[-1] == "third a (and 1 more since the last such message)"
    log.period = 60.0
    assert log.info("c", "first c") and not log.info("c", "second c") and not log.info("c", "third c")
    assert log.error("a", "fourth a") and not log.error("a", "fifth a")
    assert logger.errors[-2:] == ["info: first c", "fourth a"]
    log.flush()  # in the order last held back, each at its own level
    assert logger.errors[-2:] == ["info: third c (and 1 more since the last such message)", "fifth a"]
    log.flush()  # nothing held back any more
    assert len(logger.errors) == 7
    assert log.error("a", "forced a", force=True) and logger.errors[-1] == "forced a"


# ---------------------------------------------------------------- record_file
@pytest.mark.parametrize(
    ("duration", "match"),
    [
        (0.0, "needs a duration > 0"),
        (
            3 * 3600.0,
            r"10800001 states of 7 joints take 1\.77 GiB, over the 1 GiB kept in memory "
            r"\(duration up to 6101 s\)",
        ),
    ],
    ids=["until-stopped", "three-hours"],
)
def test_a_record_that_would_grow_without_bound_is_refused_at_start(
    nodes: Nodes, tmp_path: Path, duration: float, match: str
) -> None:
    """The record is kept in memory until exit: it had grown by ~600 bytes a step in a run
    without end (2 GB an hour)."""
    from torque_ctrl_ros.core.errors import ConfigError

    with pytest.raises(ConfigError, match=match):
        nodes.make("sim", mode="lockstep", duration=duration, record_file=str(tmp_path / "r.npz"))


@pytest.mark.parametrize("name", ["r.npz", "r.dat"])
def test_the_record_holds_each_state_once(nodes: Nodes, tmp_path: Path, name: str) -> None:
    """Written under the name given (numpy, given the name, had written ``r.dat.npz``; a review)."""
    path = tmp_path / name
    sim = nodes.make("sim", mode="lockstep", duration=0.004, record_file=str(path))
    sim._publish_state()
    sim._publish_state()  # state 0 republished while waiting for a controller: recorded once
    q0 = sim.plant.q
    for _ in range(2):
        sim._step(use_command=False)
        sim._publish_state()
    nodes.close(sim)
    rec = np.load(path)
    assert rec["t"].tolist() == pytest.approx([0.0, 0.001, 0.002])
    assert rec["q"].shape == (3, 7) and np.array_equal(rec["q"][0], q0)
    assert np.array_equal(rec["q"][2], sim.plant.q) and np.array_equal(rec["tau"][0], np.zeros(7))
    assert list(rec["joint_names"]) == JOINTS
    assert [p.name for p in tmp_path.iterdir()] == [name]


def test_deadline_misses_count_callbacks_longer_than_the_state_period(nodes: Nodes) -> None:
    """The deadline is the stream's period learnt from the states computed on: 1 ms at 1 kHz, then
    5 ms (a 200 Hz driver); a callback longer than it is a miss. Falling behind, a state handled
    after one skipped for it (2 ms on) leaves the deadline at 1 ms. (Mutant: the deadline taken from
    the last step of the stamps: 2 ms after the skip, where a 1.5 ms handling went uncounted.)"""
    node, at = _node_on_sim_time(nodes, "computed_torque")
    assert node._deadline() == math.inf  # nothing learnt yet
    for k in range(1, 12):
        at(k, HOME)
    assert node._deadline() == pytest.approx(1e-3)
    node._skipped = 1  # as _newest_queued leaves it: state 12 skipped for 13
    at(13, HOME)
    assert node._deadline() == pytest.approx(1e-3)
    misses = node.counts.deadline_misses
    for seconds in (0.0002, 0.0015, 0.0009):  # at 1 kHz: one miss
        node._time_callback(seconds, node._deadline())
    assert node.counts.deadline_misses == misses + 1
    # A state lost on the way (14): the deadline stays the usual 1 ms, where the longest step of
    # the window read 2 ms for the next ten states (a review; handlings of 1-2 ms went uncounted).
    at(15, HOME)
    assert node.supervisor.stream_period == pytest.approx(2e-3)
    assert node._deadline() == pytest.approx(1e-3)
    node._time_callback(0.0015, node._deadline())
    misses += 1
    for k in range(18, 80, 5):
        at(k, HOME)
    assert node._deadline() == pytest.approx(5e-3)
    for seconds in (0.003, 0.006, 0.0049):  # at 200 Hz: one more
        node._time_callback(seconds, node._deadline())
    assert node.counts.deadline_misses == misses + 2  # counts: on /diagnostics and in the summary


def test_throttled_log_writes_both_severities_through_rclpy(nodes: Nodes) -> None:
    """rclpy raises ValueError when one line of code logs at two severities: info and error
    must stay separate calls."""
    node = nodes.make("controller", controller="computed_torque", use_sim_time=False)
    for k in range(3):
        assert node.log.info(f"i{k}", "an info line") and node.log.error(f"e{k}", "an error line")
        assert node.log.warning(f"w{k}", "a warning line")


def test_a_whole_run_records_every_state_the_last_included(nodes: Nodes, tmp_path: Path) -> None:
    path = tmp_path / "r.npz"
    sim = nodes.make("sim", mode="realtime", wait_for_controller=False, duration=0.005, record_file=str(path))
    sim.run()  # no controller: five steps on the safe torque
    nodes.close(sim)
    rec = np.load(path)
    assert rec["t"].tolist() == pytest.approx([0.001 * k for k in range(6)])
    assert np.array_equal(rec["q"][-1], sim.plant.q) and np.array_equal(rec["v"][-1], sim.plant.v)


@pytest.mark.parametrize(("safe", "drifts"), [("hold", False), ("damping", True)])
def test_without_commands_the_simulator_holds_the_arm_where_it_was(
    nodes: Nodes, tmp_path: Path, safe: str, drifts: bool
) -> None:
    """The default safe torque is g(q) − K_d·q̇ on the plant's own model: 0.3 s without a command,
    the arm stays put. Damping alone (still a choice) lets it fall: the controller killed mid-run,
    joint_2 had dropped 1.8 rad in 2 s."""
    path = tmp_path / "r.npz"
    sim = nodes.make(
        "sim", mode="lockstep", lockstep_timeout=0.001, wait_for_controller=False, duration=0.3,
        record_file=str(path), safe_torque=safe,
    )  # fmt: skip
    sim.run()
    nodes.close(sim)
    q = np.load(path)["q"]
    drift = float(np.abs(q - q[0]).max())
    print(f"safe torque {safe}: largest drift in 0.3 s without a command {drift:.2e} rad")
    assert drift > 0.05 if drifts else drift < 1e-4


def _big_endian_state(names: list[str], q: np.ndarray, stamp: float) -> bytes:
    """A JointState in big-endian CDR (header ``00 00 00 00``): ``q`` as positions, zero
    velocities and efforts."""
    import struct

    sec, nsec = divmod(round(stamp * 1e9), 10**9)
    raw = bytearray(b"\x00\x00\x00\x00") + struct.pack(">iI", sec, nsec) + struct.pack(">I", 1) + b"\x00"

    def pad(size: int) -> None:
        raw.extend(bytes(-(len(raw) - 4) % size))

    pad(4)
    raw += struct.pack(">I", len(names))
    for name in names:
        pad(4)
        raw += struct.pack(">I", len(name) + 1) + name.encode() + b"\x00"
    for values in (q, np.zeros(len(q)), np.zeros(len(q))):
        pad(4)
        raw += struct.pack(">I", len(values))
        pad(8)
        raw += np.asarray(values, dtype=">f8").tobytes()
    return bytes(raw)


def test_a_big_endian_drivers_layout_is_not_learned(nodes: Nodes, monkeypatch: pytest.MonkeyPatch) -> None:
    """States in big-endian CDR are read by rclpy and answered; their layout is not taken up for
    reading in place, which reads only little-endian bytes (it had been, with the log line saying
    the states were read in place from now on, while every one still went through rclpy; a
    review)."""
    spy = _ErrorSpy(monkeypatch, "read in place")
    node = nodes.make("controller", controller="gravity_comp", use_sim_time=False, **MAX_AGE_1S)
    q = np.array([0.0, 0.26, 3.14, -2.27, 0.0, 0.96, 1.57])
    for _ in range(3):
        node._on_state_bytes(_big_endian_state(JOINTS[::-1], q[::-1], _now(node)))
    assert len(node.publisher.sent) == 3 and node.counts.states_via_rclpy == 3
    np.testing.assert_allclose(_torques(node)[-1], node.robot.gravity(q), atol=1e-9)
    assert spy.calls == []


def test_joint_orders_switching_at_every_state_log_once_a_period(
    nodes: Nodes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two publishers naming the joints in different orders: each switch is learned (the state is
    still read and answered), the line saying so goes out once a period (it cost ~260 µs a state)."""
    from rclpy.serialization import serialize_message

    spy = _ErrorSpy(monkeypatch, "read in place")
    node = nodes.make("controller", controller="computed_torque", use_sim_time=False, **MAX_AGE_1S)
    orders = [JOINTS[::-1], JOINTS[1:] + JOINTS[:1]]
    for k in range(20):
        node._on_state_bytes(serialize_message(_state_msg(np.zeros(7), _now(node), orders[k % 2])))
    assert len(node.publisher.sent) == 20 and node.counts.states_via_rclpy == 20
    assert len(spy.calls) == 1, spy.calls


def test_catching_up_polls_for_messages_once_a_step(nodes: Nodes, monkeypatch: pytest.MonkeyPatch) -> None:
    """After a stall the realtime loop steps back to back; an empty poll costs ~80 µs, and each
    catch-up step had made two."""
    sim = nodes.make("sim", mode="realtime", wait_for_controller=False, duration=0.06)
    polls = [0]
    per_step: list[int] = []
    step = sim.plant.step

    class CountingExecutor:
        """The node's executor (read-only attributes), its zero-timeout polls counted."""

        def __init__(self, executor: Any) -> None:
            self.executor = executor

        def spin_once(self, timeout_sec: float | None = None) -> None:
            polls[0] += timeout_sec == 0.0
            self.executor.spin_once(timeout_sec=timeout_sec)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.executor, name)

    def stepping() -> None:
        per_step.append(polls[0])
        polls[0] = 0
        if len(per_step) == 10:
            time.sleep(0.02)  # a stall: about twenty steps to catch up
        step()

    sim.executor = CountingExecutor(sim.executor)
    monkeypatch.setattr(sim.plant, "step", stepping)
    sim.run()
    assert len(per_step) == 60
    assert max(per_step) == 1, per_step


def test_a_command_with_a_malformed_stamp_label_is_rejected_on_both_paths(nodes: Nodes) -> None:
    """``joints@0.9`` (nanoseconds not in nine digits) had been taken as untagged: held in realtime
    with no check of the state it answers. Rejected now, through rclpy's message and the bytes."""
    from rclpy.serialization import serialize_message
    from std_msgs.msg import Float64MultiArray, MultiArrayDimension

    sim = nodes.make("sim", mode="realtime", wait_for_controller=False, command_timeout=0.05)
    msg = Float64MultiArray(data=[0.5] * sim.n)
    msg.layout.dim = [MultiArrayDimension(label="joints@0.9", size=sim.n, stride=sim.n)]
    sim._on_command(msg)
    assert (
        sim.counts.rejected_commands == 1
        and not sim.commands.held
        and "expected joints@<sec>.<nanosec>" in sim.last_reject
    )
    sim._on_command_bytes(serialize_message(msg))
    assert sim.counts.rejected_commands == 2 and not sim.commands.held and sim.counts.commands_received == 2
    msg.layout.dim[0].label = "joints@0.000000000"  # the same command, well formed: held
    sim._on_command(msg)
    assert sim.commands.held and sim.counts.rejected_commands == 2


@pytest.mark.parametrize(
    ("size", "stride", "offset", "claimed"),
    [
        (6, 6, 0, "dim[0].size 6, dim[0].stride 6, data_offset 0"),
        (7, 7, 1, "dim[0].size 7, dim[0].stride 7, data_offset 1"),
        (7, 14, 0, "dim[0].size 7, dim[0].stride 14, data_offset 0"),
        (None, None, 3, "no dimension, data_offset 3"),
    ],
)
def test_a_command_whose_layout_is_not_its_data_is_rejected_on_both_paths(
    nodes: Nodes, size: int | None, stride: int | None, offset: int, claimed: str
) -> None:
    """A command whose layout said 6 torques, or 7 from offset 1, had been applied as its 7 values.
    Rejected now like one of the wrong length: counted, logged with what the layout claimed, the
    plant back on the safe torque, the state answered (not waited on). The CDR path leaves it to
    rclpy's message, which is refused alike. A command without a dimension stays untagged."""
    from rclpy.serialization import serialize_message
    from std_msgs.msg import Float64MultiArray, MultiArrayDimension

    sim = nodes.make("sim", mode="realtime", wait_for_controller=False, command_timeout=0.05)
    sim._publish_state()
    good = Float64MultiArray(data=[0.5] * sim.n)
    good.layout.dim = [MultiArrayDimension(label="joints@0.000000000", size=sim.n, stride=sim.n)]
    bad = Float64MultiArray(data=[0.5] * sim.n)
    bad.layout.data_offset = offset
    if size is not None:
        bad.layout.dim = [MultiArrayDimension(label="joints@0.000000000", size=size, stride=stride)]
    for rejected, take in enumerate(
        (sim._on_command, lambda m: sim._on_command_bytes(serialize_message(m))), 1
    ):
        take(good)
        assert sim.commands.held and sim.commands.answered_validly
        take(bad)
        assert sim.counts.rejected_commands == rejected and not sim.commands.held and not sim._command_fresh()
        assert sim.commands.answered and not sim.commands.answered_validly
        assert f"layout claims {claimed} for 7 values" in sim.last_reject, sim.last_reject
    assert sim.counts.commands_via_rclpy == 1  # the bad one; the good one took the fast path
    untagged = Float64MultiArray(data=[0.5] * sim.n)  # ros2 topic pub: no layout at all
    sim._on_command_bytes(serialize_message(untagged))
    assert sim.commands.held and sim.commands.held_stamp is None and sim.counts.rejected_commands == 2


def test_a_model_stepping_other_than_the_control_period_is_refused(nodes: Nodes, tmp_path: Path) -> None:
    """A 2 ms model had run: the controllers check their gains and dampings for 1 ms (the default
    damping's eigenvalue doubles to 1.95 at 2 ms, unstable), and the simulator's own check passed
    its halved safe damping."""
    from torque_ctrl_ros.core.errors import ConfigError
    from torque_ctrl_ros.paths import data_path

    arm = Path(data_path("mjcf", "gen3.xml"))
    text = arm.read_text()
    assert 'timestep="0.001"' in text
    (tmp_path / "gen3.xml").write_text(text.replace('timestep="0.001"', 'timestep="0.002"'))
    (tmp_path / "scene.xml").write_text(Path(data_path("mjcf", "scene.xml")).read_text())
    with pytest.raises(ConfigError, match=r"mjcf: .* steps 2 ms; the controllers here run at 1 ms"):
        nodes.make("sim", mjcf=str(tmp_path / "scene.xml"), safe_damping=[1.0, 1.0, 0.25, 0.5, 0.1, 0.1, 0.1])


@pytest.mark.parametrize(("duration", "steps"), [(0.0025, 3), (0.0035, 4), (0.0005, 1), (0.0104, 10)])
def test_a_duration_runs_the_nearest_whole_number_of_steps_halves_up(
    nodes: Nodes, duration: float, steps: int
) -> None:
    """Python's round() had taken halves to even: 2.5 ms ran 2 steps and 3.5 ms 4, and exactly half
    a step was refused as "less than half a step"."""
    sim = nodes.make("sim", mode="realtime", wait_for_controller=False, duration=duration)
    assert sim.max_steps == steps


def test_the_simulator_warns_when_more_than_one_controller_publishes_commands(nodes: Nodes) -> None:
    """Two controllers each answer every state and whichever comes first drives the arm (202 and
    98 steps of 300 in a lockstep run): /diagnostics say so. Publishers are counted by node (and
    DDS participant): one node's two endpoints are one publisher."""
    import rclpy
    from diagnostic_msgs.msg import DiagnosticStatus
    from std_msgs.msg import Float64MultiArray

    from torque_ctrl_ros.nodes.common import COMMAND_TOPIC

    sim = nodes.make("sim", mode="realtime", wait_for_controller=False)
    sim.diag_pub = Recorder()
    first, second = rclpy.create_node("first_controller"), rclpy.create_node("second_controller")

    def report(endpoints: int) -> Any:
        deadline = time.monotonic() + 5.0
        while sim.node.count_publishers(COMMAND_TOPIC) != endpoints and time.monotonic() < deadline:
            time.sleep(0.01)
        sim._diag_next = 0.0
        sim._maybe_diagnostics()
        return sim.diag_pub.sent[-1].status[0]

    try:
        for _ in range(2):  # one node's two endpoints: one controller
            first.create_publisher(Float64MultiArray, COMMAND_TOPIC, 10)
        status = report(2)
        assert status.level == DiagnosticStatus.OK, status
        assert {kv.key: kv.value for kv in status.values}["command_publishers"] == "1"
        publisher = second.create_publisher(Float64MultiArray, COMMAND_TOPIC, 10)
        status = report(3)
        assert status.level == DiagnosticStatus.WARN, status
        assert status.message.startswith(f"2 nodes publish on {COMMAND_TOPIC}"), status
        second.destroy_publisher(publisher)
        assert report(2).level == DiagnosticStatus.OK
    finally:
        first.destroy_node()
        second.destroy_node()


def test_a_lockstep_simulator_stopped_while_the_answer_came_takes_it(nodes: Nodes) -> None:
    """The simulator process stopped (SIGSTOP, a paused VM) for longer than lockstep_timeout
    inside its wait, the controller's answer arriving meanwhile: the next wait takes it. The
    deadline had been on the wall clock, so the simulator stepped on its safe torque and then
    ignored the answer as one to an earlier state (1 missed step in 3 of 12 stalled runs). A
    controller that never answers still times out (the test below)."""
    sim = nodes.make("sim", mode="lockstep", wait_for_controller=False, lockstep_timeout=0.3)
    sim._publish_state()
    executor = sim.executor
    calls: list[float | None] = []

    class Stalling:
        """The executor, but its first wait lasts 0.5 s and the answer is in at the second."""

        def __getattr__(self, name: str) -> Any:
            return getattr(executor, name)

        def spin_once(self, timeout_sec: float | None = None) -> None:
            calls.append(timeout_sec)
            if len(calls) == 1:
                time.sleep(0.5)
            elif len(calls) == 2:
                sim._take_command(np.zeros(sim.n), sim.t0_ns + sim.k * sim.dt_ns)
            else:
                executor.spin_once(timeout_sec=timeout_sec)

    sim.executor = Stalling()
    sim._await_answer(0.3)
    assert sim.commands.answered, calls
    sim.executor = executor


def test_a_lockstep_simulator_waiting_for_an_answer_says_so(nodes: Nodes) -> None:
    """No controller: /diagnostics had stayed silent for the whole lockstep_timeout (the last
    status, possibly ok, standing up to a minute); now they say what is awaited while it lasts."""
    from diagnostic_msgs.msg import DiagnosticStatus

    sim = nodes.make("sim", mode="lockstep", wait_for_controller=False, diagnostics_period=0.2)
    sim.diag_pub = Recorder()
    sim._diag_next = 0.0
    t0 = time.monotonic()
    sim._await_answer(0.7)
    assert 0.65 < time.monotonic() - t0 < 2.0 and not sim.commands.answered
    warned = [a.status[0] for a in sim.diag_pub.sent if a.status[0].level == DiagnosticStatus.WARN]
    assert len(warned) >= 2 and warned[0].message.startswith("lockstep: no answer to state 0 for"), warned


def test_an_exception_from_a_callback_of_rclpy_does_not_end_the_spin(nodes: Nodes) -> None:
    """Under ``use_sim_time`` rclpy's own time source raises ValueError on a ``/clock`` message
    stamped before 0 (a hand-typed ``ros2 topic pub``), on the node's executor: one such message
    ended the controller (exit 1, the arm left to its driver's timeout). It is dropped and logged;
    the node answers the states that follow."""
    import threading

    from ros_helpers import LineLogger, Probe, wait_until
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState as JointStateMsg

    from torque_ctrl_ros.nodes.common import STOP

    node = nodes.make("controller", controller="gravity_comp", use_sim_time=True)
    node.log._logger = LineLogger()
    probe = Probe(nodes.domain)
    clock, states = probe.publisher(Clock, "/clock"), probe.publisher(JointStateMsg, "/joint_states")
    failed: list[BaseException] = []

    def run() -> None:
        try:
            node.run()
        except BaseException as exc:  # what the node's process would have died of
            failed.append(exc)

    spinner = threading.Thread(target=run)
    spinner.start()
    try:
        wait_until(
            lambda: node.node.count_publishers("/clock") and clock.get_subscription_count(), 10, "/clock"
        )
        negative = Clock()
        negative.clock.sec = -1
        for _ in range(5):
            clock.publish(negative)
            time.sleep(0.05)
        wait_until(lambda: node.log._logger.lines, 10, "the error logged")
        good = Clock()
        good.clock.sec = 5
        home = np.array([0.0, 0.26, 3.14, -2.27, 0.0, 0.96, 1.57])
        for k in range(10):
            good.clock.nanosec = k * 1_000_000
            clock.publish(good)
            time.sleep(0.01)
            states.publish(_state_msg(home, 5.0 + k * 1e-3))
            time.sleep(0.02)
        wait_until(lambda: node.counts.commands_published >= 5 or failed, 10, "answers")
    finally:
        STOP.set()
        spinner.join(10)
        STOP.clear()
        probe.close()
    assert not failed, failed
    assert node.counts.commands_published >= 5
    logged = " ".join(text for level, text in node.log._logger.lines if level == "error")
    assert "a callback raised ValueError: Seconds value must not be negative" in logged, logged
    assert "time_source.py" in logged, logged


def test_a_new_run_whose_clock_came_first_is_answered_from_its_own_pose(nodes: Nodes) -> None:
    """A simulator restarted within a second publishes its new run's first /clock before its first
    state (``test_sim_node_mutation_gaps2.py``): after a 3 s run at one pose, the clock back to 0
    and then state 0 at another pose is answered with that pose's torque (gravity compensation:
    g(q)), as a new run, not refused as stale."""
    from ros_helpers import sim_clock

    node = nodes.make("controller", controller="gravity_comp", use_sim_time=True)
    at = sim_clock(node)
    old = np.array([0.0, 1.2, 3.14, -1.0, 0.0, 0.96, 1.57])
    new = np.array([0.0, 0.26, 3.14, -2.27, 0.0, 0.96, 1.57])
    at(0.0)
    for k in range(1, 3001):
        node._on_state_message(_state_msg(old, k * 1e-3))
        at(k * 1e-3)
    at(0.0)
    node._on_state_message(_state_msg(new, 0.0))
    np.testing.assert_allclose(_torques(node)[-1], node.robot.gravity(new), atol=1e-9)
    assert node.counts.watchdog_fallbacks == 0


@pytest.mark.parametrize("ahead", [0.0, 0.005], ids=["on-time", "5ms-ahead"])
def test_states_stamped_ahead_of_the_wall_clock_are_warned_of(
    nodes: Nodes, monkeypatch: pytest.MonkeyPatch, ahead: float
) -> None:
    """A driver whose clock runs 5 ms ahead of this machine's: its states are taken (within
    ``max_future``), but a late one would be refused as stale only 5 ms later, and nothing said so
    (a review: 0.5 s ahead under the shipped 1 s ``max_future``, states 300 ms late were computed
    on, /diagnostics OK). /diagnostics warn; on time they do not, nor under sim time, where each
    state comes a step ahead of its /clock."""
    from diagnostic_msgs.msg import DiagnosticStatus

    from torque_ctrl_ros.nodes.controller_diagnostics import clock_warning

    assert clock_warning(-0.5, False) == "" and clock_warning(-5.0, True) == ""
    assert clock_warning(float("nan"), False) == ""
    node = nodes.make("controller", controller="gravity_comp", use_sim_time=False, **MAX_AGE_1S)
    clock = StoppedWallClock(node, monkeypatch)
    home = np.array([0.0, 0.26, 3.14, -2.27, 0.0, 0.96, 1.57])
    for _ in range(20):
        clock.advance(1e-3)
        node._on_state_message(_state_msg(home, _now(node) + ahead))
    node._publish_diagnostics()
    status = _latest_status(node)
    assert status.level == (DiagnosticStatus.WARN if ahead else DiagnosticStatus.OK), status.message
    assert ("5.0 ms (at least) ahead of this machine's clock" in status.message) == (ahead > 0.0), (
        status.message
    )
