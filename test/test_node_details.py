"""Node behaviours a mutation review found no test pinned (the simulator's command handling, the
controller node's target, timing and diagnostics details, the pose target's reset).

Each test fails on the one-line bug named in its docstring (the review's mutant id).
"""

# ruff: noqa: F811 (the `nodes` fixture, imported from test_node_runtime_guards, is every test's argument)
from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import pytest
from ros_helpers import FakeTargetNode, requires_rclpy, ros_domain  # noqa: F401
from test_node_runtime_guards import (  # noqa: F401
    HOME,
    JOINTS,
    MAX_AGE_1S,
    _node_on_sim_time,
    _now,
    _state_msg,
    _trajectory_on_sim_time,
    nodes,
)

pytestmark = [pytest.mark.ros, requires_rclpy]


# ------------------------------------------------------------------ simulator
def test_a_rejected_command_stops_the_held_one(nodes: Any) -> None:
    """s07: _reject_command must drop the held command (docstring: 'the plant stops applying the
    previous one'); without `have_command = False` the previous torque drove the plant on."""
    sim = nodes.make("sim", mode="realtime", wait_for_controller=False)
    sim._publish_state()
    now = sim.t0_ns + sim.k * sim.dt_ns
    sim._take_command(np.full(sim.n, 5.0), now)
    assert sim._command_fresh()
    sim._take_command(np.full(sim.n, np.nan), now)
    assert sim.counts.rejected_commands == 1
    assert not sim._command_fresh()  # the plant gets the safe torque, not the 5 N·m


def test_an_answer_counts_for_its_own_state_only(nodes: Any) -> None:
    """Realtime: a late answer to state 4 is held but leaves state 5 unanswered, and so does one
    rejected (the summary's last_state_answered reads it); one 60 ms old (command_timeout 50 ms)
    is stale, not taken."""
    sim = nodes.make("sim", mode="realtime", wait_for_controller=False, command_timeout=0.05)
    sim.k = 5
    sim._take_command(np.zeros(sim.n), sim.t0_ns + 4 * sim.dt_ns)
    assert sim.commands.held and not sim.commands.answered
    sim._take_command(np.full(sim.n, np.nan), sim.t0_ns + 4 * sim.dt_ns)
    assert sim.counts.rejected_commands == 1 and not sim.commands.answered
    sim.k = 100
    sim._take_command(np.ones(sim.n), sim.t0_ns + 40 * sim.dt_ns)
    assert sim.counts.stale_answers == 1 and not sim.commands.tau.any()  # the held one stands


def test_in_lockstep_each_state_waits_for_its_own_answer(nodes: Any) -> None:
    """An answer to an earlier state is not held at all, each published state waits for its own
    answer, and /diagnostics' safe-torque flag follows the steps."""
    sim = nodes.make("sim", mode="lockstep", wait_for_controller=False, duration=1.001)
    assert sim.max_steps == 1001  # 1.001e9 / 1e6 is 1000.9999999999999: rounded, not cut
    said: list[tuple[str, str]] = []
    sim.log.warning = lambda key, message, force=False: said.append((key, message))
    sim.k = 5
    sim._take_command(np.full(sim.n, 3.0), sim.t0_ns + 4 * sim.dt_ns)
    assert sim.counts.stale_answers == 1 and not sim.commands.held and not sim.commands.tau.any()
    # Said, or a controller a state behind would slow the run ~1000-fold with no word of why...
    assert said and said[-1][0] == "earlier answer" and "state of 0.001 s ago ignored" in said[-1][1]
    # ...but one more answer to state 0, republished while waiting at start, is no news: neither
    # said nor counted (counted, it turned the first /diagnostics WARN with nothing logged).
    sim._take_command(np.zeros(sim.n), sim.t0_ns)
    assert sim.counts.stale_answers == 1 and len(said) == 1
    sim.k = 0
    sim._take_command(np.zeros(sim.n), sim.t0_ns)
    assert sim.commands.answered
    sim._step(sim.commands.answered_validly)
    sim._publish_state()
    assert not sim.commands.answered and not sim.commands.answered_validly
    sim._step(False)
    assert sim.safe_active
    sim._step(True)
    assert not sim.safe_active  # a commanded step clears the flag /diagnostics report


def test_a_command_timeout_under_two_steps_is_refused(nodes: Any) -> None:
    from torque_ctrl_ros.core.errors import ConfigError

    with pytest.raises(ConfigError, match="less than two steps"):
        nodes.make("sim", mode="realtime", command_timeout=0.0015)


def test_an_infinite_command_is_rejected() -> None:
    """v04: check_command must refuse inf, not only NaN (no test sends inf)."""
    from torque_ctrl_ros.core.errors import StateError
    from torque_ctrl_ros.nodes.conversions import check_command

    with pytest.raises(StateError):
        check_command(np.array([np.inf, 0, 0, 0, 0, 0, 0.0]), 7)
    for size in (6, 8):  # too long too: it would have made np.copyto raise in the callback
        with pytest.raises(StateError, match=f"has {size} entries, expected 7"):
            check_command(np.zeros(size), 7)


def test_an_unreadable_command_answers_no_state(nodes: Any) -> None:
    """s08: bytes that are no command answer nothing: a lockstep wait must go on."""
    sim = nodes.make("sim", mode="lockstep", wait_for_controller=False)
    sim._publish_state()
    sim._on_command_bytes(b"\x00\x01\x00\x00\xff\xff\xff\x7f")
    assert sim.counts.rejected_commands == 1 and not sim.commands.answered


def test_an_untagged_realtime_command_answers_the_current_state(nodes: Any) -> None:
    """s03: a plain ros2_control publisher (no stamp) answers the current state in realtime;
    otherwise every step it drives counts as late."""
    sim = nodes.make("sim", mode="realtime", wait_for_controller=False)
    sim._publish_state()
    sim._take_command(np.zeros(sim.n), None)
    assert sim.commands.answered_validly


def test_a_state_answered_twice_is_counted_and_timed_once(nodes: Any) -> None:
    """s10 / s24: answered_states and the latency take each state's first answer only."""
    sim = nodes.make("sim", mode="realtime", wait_for_controller=False)
    sim._looping = True
    sim._publish_state()
    stamp = sim.t0_ns
    sim._take_command(np.zeros(sim.n), stamp)
    sim._take_command(np.zeros(sim.n), stamp)
    assert sim.answered_states == 1 and sim.latency.count == 1


def _sim_status(sim: Any) -> Any:
    """The simulator's /diagnostics status, published now."""
    from test_node_runtime_guards import Recorder

    if not isinstance(sim.diag_pub, Recorder):
        sim.diag_pub = Recorder()
    sim._diag_next = 0.0
    sim._maybe_diagnostics()
    return sim.diag_pub.sent[-1].status[0]


def test_the_simulator_warns_of_bad_commands_since_its_last_report_though_the_last_was_good(
    nodes: Any,
) -> None:
    """Realtime: a rejected command, a stale answer and a command beyond the drives' ranges (taken,
    clamped, counted as clipped_commands), then a good answer: the last step would run on a valid
    command, yet the report is a WARN naming each; the next report, with nothing new, is OK.
    (Mutant: the level judged by the last step alone, safe_torque_active.)"""
    from diagnostic_msgs.msg import DiagnosticStatus

    sim = nodes.make("sim", mode="realtime", wait_for_controller=False, command_timeout=0.05)
    sim.k = 100
    now = sim.t0_ns + sim.k * sim.dt_ns
    sim._take_command(np.full(sim.n, np.nan), now)
    sim._take_command(np.zeros(sim.n), sim.t0_ns + 40 * sim.dt_ns)  # 60 ms old: stale
    sim._take_command(np.full(sim.n, 1e3), now)
    sim._take_command(np.zeros(sim.n), now)
    assert sim.commands.answered_validly and not sim.safe_active
    assert sim.counts.clipped_commands == 1
    status = _sim_status(sim)
    assert status.level == DiagnosticStatus.WARN, status.message
    for said in ("1 command(s) rejected", "1 answer(s) ignored", "1 command(s) clipped"):
        assert said in status.message, status.message
    assert _sim_status(sim).level == DiagnosticStatus.OK


def _command_bytes(label: bytes, tau: np.ndarray) -> bytes:
    """A Float64MultiArray as little-endian CDR: one layout dimension labelled ``label`` (raw
    bytes, NUL-terminated here), size and stride ``len(tau)``, data offset 0, then ``tau``."""
    import struct

    text = label + b"\0"
    out = b"\x00\x01\x00\x00" + struct.pack("<II", 1, len(text)) + text
    out += bytes(-(len(out) - 4) % 4) + struct.pack("<IIII", tau.size, tau.size, 0, tau.size)
    return out + bytes(-(len(out) - 4) % 8) + tau.astype(np.float64).tobytes()


@pytest.mark.parametrize("garble", [b"joints\0", b"jo\xffints"])
def test_a_command_label_with_a_nul_or_bad_utf8_is_rejected_not_read_untagged(
    nodes: Any, garble: bytes
) -> None:
    """Realtime, an answer to a state 150 ms old (command_timeout 50 ms) whose label holds a NUL
    or a byte that is no UTF-8: rejected unread; rclpy would have read it cut at the NUL or with
    the byte replaced, an untagged command taken as the current state's answer. The same label
    intact is stale. (Mutant: such bytes handed to rclpy.)"""
    from rclpy.serialization import deserialize_message
    from std_msgs.msg import Float64MultiArray

    from torque_ctrl_ros.nodes.conversions import command_label
    from torque_ctrl_ros.nodes.wire import CommandWire

    sim = nodes.make("sim", mode="realtime", wait_for_controller=False, command_timeout=0.05)
    sim.k = 200
    label = command_label(sim.t0_ns + 50 * sim.dt_ns).encode()
    tau = np.full(sim.n, 3.0)
    intact = _command_bytes(label, tau)
    garbled = _command_bytes(garble + label[len(b"joints") :], tau)
    assert not CommandWire.garbled_label(intact) and CommandWire.garbled_label(garbled)
    assert deserialize_message(garbled, Float64MultiArray).layout.dim[0].label != label.decode()
    sim._on_command_bytes(intact)
    assert sim.counts.stale_answers == 1 and not sim.commands.held
    sim._on_command_bytes(garbled)
    assert sim.counts.rejected_commands == 1 and not sim.commands.held
    assert "NUL byte or is not UTF-8" in sim.last_reject


# ------------------------------------------------------------------ controller node
def test_a_clock_reset_drops_a_trajectory_stamped_for_later(nodes: Any) -> None:
    """c44: the node must call target.reset(clock_reset=True) on a clock reset; with a plain
    reset() a trajectory stamped on the old run's timeline starts in the new run."""
    from rclpy.time import Time
    from trajectory_msgs.msg import JointTrajectory as TrajectoryMsg
    from trajectory_msgs.msg import JointTrajectoryPoint

    node = nodes.make("controller", controller="computed_torque", use_sim_time=True)
    clock = node.node.get_clock()

    def at(ns: int) -> None:
        clock.set_ros_time_override(Time(nanoseconds=ns, clock_type=clock.clock_type))
        node._on_state_message(_state_msg(HOME, ns * 1e-9))

    at(100_000_000_000)
    at(100_001_000_000)
    point = JointTrajectoryPoint(positions=(HOME + 0.1).tolist())
    point.time_from_start.sec = 1
    msg = TrajectoryMsg(joint_names=JOINTS, points=[point])
    msg.header.stamp.sec = 105  # 5 s later on the old timeline
    node.target._on_trajectory(msg)
    assert node.target.tracker.pending is not None
    for k in range(3):  # a restarted simulator
        at(k * 1_000_000)
    assert node.watchdog.clock_resets == 1
    assert node.target.tracker.pending is None and node.target.rejected == 1


def test_consecutive_refused_states_pause_the_trajectory_from_the_first(nodes: Any) -> None:
    """c13: ten refused states in a row (10 ms, inside max_age): the trajectory pauses 10 ms, from
    the first refused state; overwritten at each one it paused 1 ms and ran 9 ms ahead."""
    node, at = _trajectory_on_sim_time(nodes, 2.0)
    at(1, HOME)
    t0 = node.target.tracker.active.t0
    for k in range(2, 12):
        at(k, np.full(7, np.nan))
    at(12, HOME)
    assert node.watchdog.state.value == "ok"
    assert node.target.tracker.active.t0 - t0 == pytest.approx(0.010, abs=1e-9)


def test_a_silence_stop_after_an_earlier_refusal_keeps_the_target(nodes: Any) -> None:
    """c11: silence_only compares with the refusals counted at the last computed state; never
    updated, one refused state early in the run made every later silence stop drop the target."""
    from rclpy.time import Time
    from sensor_msgs.msg import JointState as JointStateMsg

    node = nodes.make("controller", controller="computed_torque", use_sim_time=True)
    clock = node.node.get_clock()

    def state_at(k: int, q: np.ndarray = HOME) -> None:
        clock.set_ros_time_override(Time(nanoseconds=(100_000 + k) * 1_000_000, clock_type=clock.clock_type))
        node._on_state_message(_state_msg(q, 100.0 + k * 1e-3))

    state_at(0)
    goal = HOME + 0.1
    node.target._on_joint_target(JointStateMsg(name=JOINTS, position=goal.tolist()))
    state_at(1)
    state_at(2, np.full(7, np.nan))  # one refused state, then good ones
    for k in range(3, 6):
        state_at(k)
    assert node.watchdog.state.value == "ok"
    time.sleep(0.6)  # a paused simulator: wall-clock silence stops the node
    node._check_silence(time.monotonic())
    assert node.watchdog.state.value == "stopped"
    state_at(6)
    assert node.watchdog.state.value == "ok"
    np.testing.assert_allclose(node.target.tracker.goal, goal)


def test_a_controller_failing_at_the_first_state_after_a_fallback_brakes_in_full(nodes: Any) -> None:
    """c10: the stream's period is measured between computed states in a row only; taken across
    a 100 ms fallback, the first safe command after recovery damped with K_d·2/100."""
    from torque_ctrl_ros.core.errors import SolverError

    node, at = _trajectory_on_sim_time(nodes, 2.0)
    for k in range(1, 5):
        at(k, HOME)
    for k in range(5, 105):
        at(k, np.full(7, np.nan))

    def failing(*_: Any) -> Any:
        raise SolverError("test")

    node.controller.compute = failing
    assert node.supervisor.stream_period == pytest.approx(1e-3)
    from rclpy.time import Time

    clock = node.node.get_clock()
    clock.set_ros_time_override(Time(nanoseconds=(100_000 + 105) * 1_000_000, clock_type=clock.clock_type))
    v = np.full(7, 0.2)
    msg = _state_msg(HOME, 100.105)
    msg.velocity = v.tolist()
    node._on_state_message(msg)
    assert node.supervisor.first_hold() == 1, node.supervisor.stream_period


def test_a_state_naming_no_joint_at_all_is_refused_not_foreign(nodes: Any) -> None:
    """c03: a JointState with an empty name list is a bad state of this arm (refused: safe torque),
    not another device's."""
    from sensor_msgs.msg import JointState as JointStateMsg

    node = nodes.make("controller", controller="gravity_comp", use_sim_time=False, **MAX_AGE_1S)
    node._on_state_message(_state_msg(HOME, _now(node)))
    msg = JointStateMsg(position=HOME.tolist(), velocity=[0.0] * 7)
    msg.header.stamp = node.node.get_clock().now().to_msg()
    node._on_state_message(msg)
    assert node.counts.foreign_states == 0 and node.watchdog.rejected_total == 1


@pytest.mark.parametrize("path", ["bytes", "message"])
def test_an_empty_state_is_another_devices_not_a_bad_state_of_the_arm(nodes: Any, path: str) -> None:
    """A JointState with no names and no values (a ``joint_state_publisher`` with no movable joints
    on the topic) names none of the arm's joints: ignored and counted as foreign, no safe torque,
    no refusal, and the next good state computed as before. (Mutant: an empty name list taken as
    this arm's, so the empty state is refused and the brake goes out.)"""
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState as JointStateMsg

    node = nodes.make("controller", controller="gravity_comp", use_sim_time=False, **MAX_AGE_1S)
    node._on_state_message(_state_msg(HOME, _now(node)))
    sent = node.counts.commands_published
    empty = JointStateMsg()
    empty.header.stamp = node.node.get_clock().now().to_msg()
    if path == "bytes":
        node._on_state_bytes(serialize_message(empty))
    else:
        node._on_state_message(empty)
    assert node.counts.foreign_states == 1 and node.watchdog.rejected_total == 0
    assert node.counts.commands_published == sent and node.counts.fallback_commands == 0
    node._on_state_message(_state_msg(HOME, _now(node)))
    assert node.counts.commands_published == sent + 1 and node.watchdog.state.value == "ok"


def test_a_controller_fallback_warns_once_and_never_hides_an_error(nodes: Any) -> None:
    """c31 / c32: the WARN of a controller fallback is for the report after it only, and an ERROR
    of the watchdog is never lowered to WARN by it."""
    from diagnostic_msgs.msg import DiagnosticStatus

    node = nodes.make("controller", controller="gravity_comp", use_sim_time=False, **MAX_AGE_1S)
    node._on_state_message(_state_msg(HOME, _now(node)))
    node.counts.controller_fallbacks += 1
    node._publish_diagnostics()
    assert node.diag_publisher.sent[-1].status[0].level == DiagnosticStatus.WARN
    node._on_state_message(_state_msg(HOME, _now(node)))
    node._publish_diagnostics()
    assert node.diag_publisher.sent[-1].status[0].level == DiagnosticStatus.OK  # c31
    node.counts.controller_fallbacks += 1
    node._on_state_message(_state_msg(np.full(7, np.nan), _now(node)))  # watchdog FALLBACK
    node._publish_diagnostics()
    assert node.diag_publisher.sent[-1].status[0].level == DiagnosticStatus.ERROR  # c32


def test_the_safe_command_for_unreadable_bytes_answers_the_last_good_stamp(nodes: Any) -> None:
    """c05: _stamp_ns_of_last_good is in ns (the command's label is the last good state's stamp)."""
    from rclpy.serialization import serialize_message

    from torque_ctrl_ros.nodes.wire import CommandWire

    node = nodes.make("controller", controller="gravity_comp", use_sim_time=False, **MAX_AGE_1S)
    assert node.serialized
    from sensor_msgs.msg import JointState as JointStateMsg

    ns = node.node.get_clock().now().nanoseconds
    while round(ns * 1e-9 * 1e9) == ns:  # a wall-clock stamp as a driver sends it (99.8 % are)
        ns += 1
    good = JointStateMsg(name=JOINTS, position=HOME.tolist(), velocity=[0.0] * 7)
    good.header.stamp.sec, good.header.stamp.nanosec = divmod(ns, 10**9)
    node._on_state_bytes(serialize_message(good))
    node._on_state_bytes(b"\x00\x01\x00\x00" + bytes(8) + b"\xff\xff\xff\x7f")
    assert node.counts.fallback_commands == 1
    fallback = CommandWire.decode(node.publisher.sent[-1])
    answer = CommandWire.decode(node.publisher.sent[-2])
    assert fallback is not None and answer is not None
    _, stamp = fallback
    _, good_stamp = answer
    assert stamp == good_stamp


def test_safe_commands_are_not_timed_as_computed_steps(nodes: Any) -> None:
    """c19: only computed steps enter the callback parts (state_in had taken −perf_counter())."""
    node = nodes.make("controller", controller="gravity_comp", use_sim_time=False, **MAX_AGE_1S)
    node._on_state_message(_state_msg(HOME, _now(node)))
    node._on_state_message(_state_msg(np.full(7, np.nan), _now(node)))
    assert node.counts.fallback_commands == 1
    assert node.parts.state_in.count == 1 and node.parts.state_in.window().min() >= 0.0


def test_the_diagnostics_say_what_they_name(nodes: Any) -> None:
    """c12 / c29 / c30: state_age is now − stamp (> 0 for a state stamped 5 ms ago), the state rate
    counts states (misnamed ones send no command), a fallback's message gives its reason."""
    from test_node_runtime_guards import _misnamed

    node = nodes.make("controller", controller="gravity_comp", use_sim_time=False, **MAX_AGE_1S)
    node._publish_diagnostics()
    for _ in range(5):
        node._on_state_message(_misnamed(node))  # WAITING: states, no command
    node._publish_diagnostics()
    values = {kv.key: kv.value for kv in node.diag_publisher.sent[-1].status[0].values}
    assert float(values["command_rate_hz"]) == 0.0
    assert float(values["state_rate_hz"]) > 0.0  # c29
    node._on_state_message(_state_msg(HOME, _now(node) - 0.005))
    node._on_state_message(_state_msg(np.full(7, np.nan), _now(node)))
    node._publish_diagnostics()
    st = node.diag_publisher.sent[-1].status[0]
    values = {kv.key: kv.value for kv in st.values}
    assert float(values["state_age_p50_ms"]) > 0.0  # c12
    assert st.message.startswith("fallback: ") and node.watchdog.last_message in st.message  # c30


def test_the_rates_count_what_came_since_the_last_diagnostics(nodes: Any) -> None:
    """state_rate_hz and command_rate_hz: the states and commands since the last /diagnostics over
    the time since them (a rate dividing the run's totals by the window had passed)."""
    node = nodes.make("controller", controller="gravity_comp", use_sim_time=False, **MAX_AGE_1S)
    for _ in range(3):
        node._on_state_message(_state_msg(HOME, _now(node)))
    start = time.monotonic()
    node._diagnostic_values(start, 0.0, 1e-3, 1)  # the window opens here
    for _ in range(2):
        node._on_state_message(_state_msg(HOME, _now(node)))
    values = node._diagnostic_values(start + 2.0, 0.0, 1e-3, 1)
    assert node.counts.commands_published == 5
    assert values["state_rate_hz"] == pytest.approx(1.0)
    assert values["command_rate_hz"] == pytest.approx(1.0)


def test_a_state_stream_off_one_khz_is_warned_of(nodes: Any) -> None:
    """The gains and dampings were checked for a state per 1 ms: a driver at 500 Hz (each damping
    twice as close to its bound) is a WARN naming the period; 1 kHz with a few lost states is not."""
    from diagnostic_msgs.msg import DiagnosticStatus

    node, at = _node_on_sim_time(nodes, "gravity_comp")
    for k in (2, 4, 6):
        at(k, HOME)
    node._publish_diagnostics()  # three steps of 2 ms: too few to tell a stream's rate
    assert node.diag_publisher.sent[-1].status[0].level == DiagnosticStatus.OK
    for k in range(7, 41):
        at(k, HOME)
    node._publish_diagnostics()
    for k in range(41, 84):
        if k % 20:  # two states lost
            at(k, HOME)
    node._publish_diagnostics()
    st = node.diag_publisher.sent[-1].status[0]
    values = {kv.key: kv.value for kv in st.values}
    assert st.level == DiagnosticStatus.OK and float(values["state_period_ms"]) == pytest.approx(1.0)
    assert values["state_publishers"] == "0"  # states given in-process: nobody publishes them
    for k in range(85, 165, 2):
        at(k, HOME)
    node._publish_diagnostics()
    st = node.diag_publisher.sent[-1].status[0]
    assert st.level == DiagnosticStatus.WARN
    assert "every 2.00 ms (500 Hz)" in st.message and "1 ms" in st.message


def test_the_state_publishers_are_nodes_counted_on_the_remapped_topic(nodes: Any) -> None:
    """The graph queries do not apply remaps: the node counts on its subscription's own topic. It
    counts publishing nodes: a driver killed and restarted leaves its old endpoint in the graph
    for ~16 s (Fast DDS's lease), which had read as a second publisher."""
    import rclpy
    from sensor_msgs.msg import JointState as JointStateMsg

    node = nodes.make("controller", controller="gravity_comp", remaps=["/joint_states:=/arm/joint_states"])
    driver = rclpy.create_node("fake_driver")
    jsp = rclpy.create_node("joint_state_publisher")
    try:
        for _ in range(2):  # one node's two endpoints (as a restarted driver's, for a while)
            driver.create_publisher(JointStateMsg, "/arm/joint_states", 10)
        node._publish_diagnostics()
        values = {kv.key: kv.value for kv in node.diag_publisher.sent[-1].status[0].values}
        assert values["state_publishers"] == "1"
        jsp.create_publisher(JointStateMsg, "/arm/joint_states", 10)
        node._publish_diagnostics()
        st = node.diag_publisher.sent[-1].status[0]
        assert {kv.key: kv.value for kv in st.values}["state_publishers"] == "2"
        assert "2 publishers on /arm/joint_states" in st.message
    finally:
        driver.destroy_node()
        jsp.destroy_node()


def test_the_state_publishers_leave_out_endpoints_of_nodes_the_graph_no_longer_knows() -> None:
    """After a simulator restart the graph listed its old endpoint as ('_NODE_NAMESPACE_UNKNOWN_',
    '_NODE_NAME_UNKNOWN_') for seconds: counted, it warned of a second source of joint states."""
    from types import SimpleNamespace

    from torque_ctrl_ros.nodes.controller_node import publishing_nodes

    def info(namespace: str, name: str) -> Any:
        return SimpleNamespace(node_namespace=namespace, node_name=name, endpoint_gid=bytes(16))

    sim = info("/", "sim_node")
    ghost = info("_NODE_NAMESPACE_UNKNOWN_", "_NODE_NAME_UNKNOWN_")
    assert publishing_nodes([sim, ghost]) == 1
    assert publishing_nodes([sim, sim, ghost, ghost]) == 1
    assert publishing_nodes([sim, info("/", "joint_state_publisher")]) == 2
    assert publishing_nodes([]) == 0


def test_another_node_publishing_commands_is_a_warning(nodes: Any) -> None:
    """A second node commanding the same arm (a second launch on the domain): the driver applies
    whichever command came last. The controller counts the nodes on its own command topic as
    remapped, itself included; a second endpoint of one node is not a second node."""
    import rclpy
    from diagnostic_msgs.msg import DiagnosticStatus
    from std_msgs.msg import Float64MultiArray

    topic = "/arm/commands"
    node = nodes.make(
        "controller",
        controller="gravity_comp",
        remaps=[f"/effort_controller/commands:={topic}"],
        **MAX_AGE_1S,
    )
    other = rclpy.create_node("second_controller")

    def report(commanders: int) -> Any:
        deadline = time.monotonic() + 5.0
        while node.node.count_publishers(topic) < commanders and time.monotonic() < deadline:
            time.sleep(0.01)
        for _ in range(3):
            node._on_state_message(_state_msg(HOME, _now(node)))
        node._publish_diagnostics()
        return node.diag_publisher.sent[-1].status[0]

    try:
        node.node.create_publisher(Float64MultiArray, topic, 10)  # this node's second endpoint
        st = report(2)
        assert {kv.key: kv.value for kv in st.values}["command_publishers"] == "1"
        assert st.level == DiagnosticStatus.OK, st.message
        other.create_publisher(Float64MultiArray, topic, 10)
        st = report(3)
        assert {kv.key: kv.value for kv in st.values}["command_publishers"] == "2"
        assert st.level == DiagnosticStatus.WARN
        assert st.message.startswith(f"2 nodes publish on {topic}: more than one node commands this arm"), (
            st.message
        )
    finally:
        other.destroy_node()


def test_a_second_controller_of_the_same_name_elsewhere_is_a_warning(nodes: Any) -> None:
    """A second launch of the same files runs a second ``/controller_node`` in another process: it
    commands the same arm. Counted by name, the two were one node and nothing was warned of (a
    review: the simulator only showed answers ignored and steps on the safe torque); counted by
    name and DDS participant they are two. (Mutant: ``publishing_nodes`` without the GID prefix.)"""
    import rclpy
    from diagnostic_msgs.msg import DiagnosticStatus
    from rclpy.context import Context
    from std_msgs.msg import Float64MultiArray

    from torque_ctrl_ros.nodes.common import COMMAND_TOPIC

    node = nodes.make("controller", controller="gravity_comp", **MAX_AGE_1S)
    elsewhere = Context()  # a participant of its own, as another process has
    rclpy.init(context=elsewhere, domain_id=nodes.domain)
    twin = rclpy.create_node("controller_node", context=elsewhere)
    try:
        twin.create_publisher(Float64MultiArray, COMMAND_TOPIC, 10)

        def names() -> list[tuple[str, str]]:
            return [
                (i.node_namespace, i.node_name) for i in node.node.get_publishers_info_by_topic(COMMAND_TOPIC)
            ]

        deadline = time.monotonic() + 10.0  # the endpoint is seen before its node's name
        while names() != [("/", "controller_node")] * 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert names() == [("/", "controller_node")] * 2, names()
        for _ in range(3):
            node._on_state_message(_state_msg(HOME, _now(node)))
        node._publish_diagnostics()
        st = node.diag_publisher.sent[-1].status[0]
        assert {kv.key: kv.value for kv in st.values}["command_publishers"] == "2"
        assert st.level == DiagnosticStatus.WARN, st.message
    finally:
        twin.destroy_node()
        rclpy.shutdown(context=elsewhere)


def test_the_command_warning() -> None:
    from torque_ctrl_ros.nodes.common import command_publishers_warning as _command_warning

    assert _command_warning(0) == "" and _command_warning(1) == ""
    assert _command_warning(3).startswith("3 nodes publish on /effort_controller/commands")


def test_the_stream_warnings() -> None:
    """More than one publisher of this arm's states (none naming other joints) is a WARN; a
    gripper's driver on the topic (foreign states) is not."""
    from torque_ctrl_ros.nodes.controller_diagnostics import stream_warning

    assert stream_warning(1.2e-3, 1, 0) == "" and stream_warning(float("nan"), 1, 0) == ""
    assert "800 Hz" in stream_warning(1.25e-3 + 1e-9, 1, 0)
    assert "2 publishers on /joint_states" in stream_warning(1e-3, 2, 0)
    assert stream_warning(1e-3, 2, 5) == ""


def test_too_few_states_handled_is_a_warning() -> None:
    """Under 80 % of the states the stream sent handled (counted by their stamps: those dropped
    from a full queue count too) is a WARN: at the Gen3's 1 kHz that is under ~800 commands a
    second, audible, and periods run on held commands. No share known is none."""
    from torque_ctrl_ros.nodes.controller_diagnostics import handled_share, handled_warning

    # 1 s of stamps at 1 ms: 1000 states sent.
    assert handled_share(1000, 1.0, 1e-3) == pytest.approx(1.0)
    assert handled_share(620, 1.0, 1e-3) == pytest.approx(0.62)
    assert handled_share(500, 1.0, 2e-3) == pytest.approx(1.0)  # a 500 Hz stream, all handled
    nan = float("nan")
    for stamps, step in [(0.099, 1e-3), (-1.0, 1e-3), (float("inf"), 1e-3), (1.0, nan), (1.0, 0.0)]:
        # Under 100 steps of stamps, a clock gone back, no good state before, no stream step yet.
        assert math.isnan(handled_share(10, stamps, step)), (stamps, step)
    assert handled_warning(1.0, 0.0) == "" and handled_warning(0.8, 200.0) == ""
    assert handled_warning(nan, 0.0) == ""
    warning = handled_warning(0.62, 130.0)
    assert warning.startswith("62 % of the joint states were handled, each with a command"), warning
    assert "130 a second skipped for newer ones" in warning and "full subscription queue" in warning
    assert "~800 commands a second" in warning


# ------------------------------------------------------------------ targets
def test_a_pose_target_is_forgotten_on_reset(robot: Any) -> None:
    """t11: achd_rnea after a stop holds where the arm is, not the old pose target."""
    from test_target_guards import _pose

    from torque_ctrl_ros.core.controllers import AchdRnea
    from torque_ctrl_ros.core.types import JointState
    from torque_ctrl_ros.nodes import targets

    node = FakeTargetNode(strict=True)
    ctrl = AchdRnea(robot)
    source = targets.PoseTargetSource(node, ctrl)  # type: ignore[arg-type]
    state = JointState(HOME, np.zeros(7), 1.0)
    node.callbacks["~/target_pose"](_pose((0.5, 0.0, 0.3)))
    source.reference(state)  # the approach starts
    later = JointState(HOME, np.zeros(7), 100.0)
    assert np.allclose(source.reference(later).position, [0.5, 0.0, 0.3])
    source.reset()
    ref = source.reference(state)
    assert source.describe() == "hold"
    assert np.allclose(ref.position, ctrl.hold_reference(state).position)


def test_command_queue_depth_is_applied(nodes: Any) -> None:
    """k03: the simulator's command subscription keeps ``command_queue_depth`` (no command lost
    after a stall, see test_simulator_stalls_lose_no_command)."""
    sim = nodes.make("sim", mode="realtime", wait_for_controller=False, command_queue_depth=123)
    assert sim.command_sub.qos_profile.depth == 123
