"""Gaps a mutation review of the delay read from the efforts (core/delay_estimate.py) and the
controller node's report of it left open: each test names the mutant it kills."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest
from ros_helpers import requires_rclpy, ros_domain  # noqa: F401
from test_delay_estimate import MS, T0, N, _commands, _fill, _fill_with_holes
from test_node_runtime_guards import HOME, _node_on_sim_time, _state_msg, nodes  # noqa: F401

from torque_ctrl_ros.core.delay_estimate import MIN_SAMPLES, DelayEstimator


def _iid(count: int, sigma: float, seed: int = 0) -> np.ndarray:
    """Independent torques (N·m) of standard deviation ``sigma``: neighbouring delays uncorrelated."""
    return np.random.default_rng(seed).normal(0.0, sigma, (count, N))


def _delayed(tau: np.ndarray, delay: int, noise: float = 0.0, seed: int = 1) -> DelayEstimator:
    """An estimator fed state k (k ms after T0) reporting ``tau[k − delay]`` plus noise,
    answered with ``tau[k]``."""
    est = DelayEstimator(N)
    _fill(est, tau, delay, noise=noise, seed=seed)
    return est


# ------------------------------------------------------------------ periods of the stamps
def test_stamps_either_side_of_a_period_boundary_fall_in_their_own_period() -> None:
    """States stamped alternately 0.4 ms early and late: each still in the period nearest its
    stamp, so the delay reads as exactly as with exact stamps. (Mutant: ``add`` floors the stamp
    instead of rounding it, putting every early state in the period before, on its neighbour.)"""
    est = DelayEstimator(N)
    tau = _commands(1500, seed=11)
    for k in range(len(tau)):
        stamp = T0 + k * MS + (400_000 if k % 2 else -400_000)
        est.add(stamp, tau[k - 3] if k >= 3 else None, tau[k])
    found = est.estimate()
    assert found is not None and found.periods == 3 and found.samples == 1000 - 20
    assert found.correlation == pytest.approx(1.0, abs=1e-9)


def test_a_state_older_than_the_newest_leaves_the_window_where_it_was() -> None:
    """A state arriving late, stamped a second before the newest: the window still ends at the
    newest. (Mutant: ``add`` takes every effort's period as the newest, so the window jumps back
    to where almost nothing is held.)"""
    tau = _commands(1500, seed=12)
    est = _delayed(tau, 3)
    est.add(T0 + 500 * MS, tau[497], tau[500])
    found = est.estimate()
    assert found is not None and found.periods == 3 and found.samples == 1000 - 20


# ------------------------------------------------------------------ reset
def test_a_reset_forgets_efforts_commands_and_the_newest_period() -> None:
    """After a reset, a run over the same stamps (a simulator restarted) with commands but one
    effort, or efforts but no commands, reads nothing; a run stamped earlier than the first reads
    its own delay. (Mutants: ``reset`` keeps the efforts' periods; the commands'; the newest.)"""
    tau = _commands(1500, seed=13)
    est = _delayed(tau, 3)
    est.reset()
    for k in range(len(tau)):  # commands, and an effort for the last state only
        est.add(T0 + k * MS, tau[k - 3] if k == len(tau) - 1 else None, tau[k])
    assert est.estimate() is None
    est = _delayed(tau, 3)
    est.reset()
    for k in range(3, len(tau)):  # efforts, no commands
        est.add(T0 + k * MS, tau[k - 3], None)
    assert est.estimate() is None
    est = _delayed(tau, 3)
    est.reset()
    for k in range(len(tau)):  # the clock gone back 10 s
        est.add(T0 - 10_000 * MS + k * MS, tau[k - 2] if k >= 2 else None, tau[k])
    found = est.estimate()
    assert found is not None and found.periods == 2


# ------------------------------------------------------------------ estimate() reads, never writes
def test_an_estimate_leaves_the_stored_efforts_as_they_were() -> None:
    """Efforts not finite every 11th state, the window ending where the ring does (no wrap, so
    the rows read are slices of it): a second estimate, nothing added between, reads the same as
    the first. (Mutant: ``_rows`` zeroes the rows it leaves out in the ring itself, not in a
    copy, so the second estimate counts them as efforts of 0 N·m.)"""
    est = DelayEstimator(N)
    _fill_with_holes(est, _commands(1000, seed=5), 2, nan_every=11)
    first = est.estimate()
    assert first is not None and first.correlation == pytest.approx(1.0, abs=1e-9)
    assert est.estimate() == first


def test_efforts_whose_row_sum_overflows_are_left_out_without_a_warning() -> None:
    """Efforts of 1e308 on every joint every other state (finite, their sum over the joints
    not): left out, nothing warned, no delay read on the zero efforts left. (Mutant: no
    ``np.errstate`` around the finiteness check in ``_rows``: numpy warns of the overflow.)"""
    est = DelayEstimator(N)
    tau = _commands(1500)
    for k in range(len(tau)):
        est.add(T0 + k * MS, np.full(N, 1e308) * (k % 2), tau[k])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert est.estimate() is None


# ------------------------------------------------------------------ thresholds
def test_commands_spread_less_than_1e_3_n_m_show_no_delay_and_more_do() -> None:
    """Efforts exactly the commands 2 periods late, the commands independent with a standard
    deviation of 0.7e-3 N·m (below MIN_SPREAD, 1e-3, as docs/hardware.md gives it): nothing read;
    at 1.5e-3 N·m: 2 periods. (Mutants: the spread compared per joint without the joints' count,
    a floor of ~3.8e-4; MIN_SPREAD 1e-4; MIN_SPREAD 1e-2.)"""
    assert _delayed(_iid(1500, 0.7e-3), 2).estimate() is None
    found = _delayed(_iid(1500, 1.5e-3), 2).estimate()
    assert found is not None and found.periods == 2


def test_a_correlation_below_one_half_reads_nothing_and_above_reads_the_delay() -> None:
    """Independent commands (1 N·m) and efforts that are them 2 periods late plus noise, to a
    correlation of ~0.35 (MIN_CORRELATION is 0.5, as docs/hardware.md gives it): nothing read; to
    ~0.65: 2 periods. (Mutants: MIN_CORRELATION 0.2; 0.8.)"""
    assert _delayed(_iid(1500, 1.0), 2, noise=np.sqrt(1 / 0.35**2 - 1)).estimate() is None
    found = _delayed(_iid(1500, 1.0), 2, noise=np.sqrt(1 / 0.65**2 - 1)).estimate()
    assert found is not None and found.periods == 2 and 0.6 < found.correlation < 0.7


def test_a_delay_one_period_short_of_min_samples_is_not_read_however_well_it_correlates() -> None:
    """Commands from the first state on, efforts 2 periods late from the third (the second's
    unrelated): delay 2 rests on MIN_SAMPLES − 1 periods, delay 1 on MIN_SAMPLES but correlates
    by nothing: no delay read. (Mutant: the rows that cannot be used are not set to −inf before
    the largest correlation is taken: delay 2 read on too few periods.)"""
    est = DelayEstimator(N)
    tau = _iid(MIN_SAMPLES + 1, 1.0, seed=14)
    for k in range(len(tau)):
        effort = None if k == 0 else tau[k - 2] if k >= 2 else _iid(1, 1.0, seed=15)[0]
        est.add(T0 + k * MS, effort, tau[k])
    assert est.estimate() is None


def test_products_that_overflow_read_nothing_rather_than_a_nan_correlation() -> None:
    """Commands of ±2³⁰ N·m alternating and efforts 2⁹⁷⁰ times them, 2 periods late: the
    efforts' sums exactly 0, their squares and their products with the commands ±inf, every
    correlation inf/inf: no delay read. (Mutant: correlations that are not finite are not left
    out: delay 1 read with a NaN correlation.)"""
    tau = np.array([[(-1.0) ** k * 2.0**30] * N for k in range(1500)])
    est = DelayEstimator(N)
    _fill(est, tau, 2, gain=2.0**970)
    assert est.estimate() is None


def test_the_samples_given_are_those_of_the_delay_read() -> None:
    """No command every 5th state, efforts 3 periods late: ``samples`` counts the efforts whose
    command 3 periods before went out (237), not those for delay 1 (238). (Mutant: ``samples``
    taken from the first delay's row.)"""
    est = DelayEstimator(N)
    tau = _commands(300, seed=16)
    for k in range(len(tau)):
        est.add(T0 + k * MS, tau[k - 3] if k >= 3 else None, None if k % 5 == 0 else tau[k])
    found = est.estimate()
    assert found is not None and found.periods == 3
    assert found.samples == sum(1 for k in range(3, 300) if (k - 3) % 5) == 237


# ------------------------------------------------------------------ the controller node
@pytest.mark.ros
@requires_rclpy
@pytest.mark.parametrize("command_delay", [0.005, 0.003])
def test_diagnostics_and_the_summary_give_the_delay_read_and_warn_when_not_command_delay(
    nodes: Any,  # noqa: F811
    command_delay: float,
) -> None:
    """The node's estimator reading 3 periods: /diagnostics give measured_delay_ms 3 and its
    correlation, and their message warns only when ``command_delay`` is not 3 ms; the summary
    reads the estimator at the time it is asked, not at the last /diagnostics. (Mutants: the
    values left out of /diagnostics; the warning left out of their message; the summary giving
    the estimate of the last /diagnostics.)"""
    node = nodes.make(
        "controller", controller="gravity_comp", use_sim_time=False, command_delay=command_delay
    )
    tau = _commands(1500)
    _fill(node.delay_estimator, tau, 3)
    node._publish_diagnostics()
    status = node.diag_publisher.sent[-1].status[0]
    values = {kv.key: kv.value for kv in status.values}
    assert float(values["measured_delay_ms"]) == pytest.approx(3.0)
    assert float(values["measured_delay_correlation"]) == pytest.approx(1.0, abs=1e-9)
    warned = "efforts show each command 3 ms after the state it answers" in status.message
    assert warned is (command_delay != 0.003), status.message
    node.delay_estimator.reset()
    _fill(node.delay_estimator, tau, 5)
    assert node.summary()["measured_delay_ms"] == pytest.approx(5.0)


@pytest.mark.ros
@requires_rclpy
def test_diagnostics_warn_when_the_efforts_follow_none_of_the_commands(nodes: Any) -> None:  # noqa: F811
    """Commands swinging by ~2 N·m while the states' efforts read a constant torque and sensor noise
    (the driver not in torque mode): /diagnostics warn, asking whether the driver applies them, and
    give ``efforts_follow_commands`` 0; the summary too. Efforts that show the commands: 1, no
    such warning. (Mutants: the warning left out of the message; the value left out.)"""
    from test_delay_estimate import _swinging_commands

    node = nodes.make("controller", controller="gravity_comp", use_sim_time=False, command_delay=0.005)
    tau = _swinging_commands(1500)
    rng = np.random.default_rng(3)
    for k in range(len(tau)):
        node.delay_estimator.add(T0 + k * MS, 2.0 + rng.normal(0.0, 0.05, N), tau[k])
    node._publish_diagnostics()
    status = node.diag_publisher.sent[-1].status[0]
    values = {kv.key: kv.value for kv in status.values}
    assert float(values["efforts_follow_commands"]) == 0.0
    assert "efforts followed none of them 1–20 ms later" in status.message, status.message
    assert "is the driver applying them (torque mode on)?" in status.message
    assert node.summary()["efforts_follow_commands"] == 0.0
    node.delay_estimator.reset()
    _fill(node.delay_estimator, tau, 5)
    node._publish_diagnostics()
    status = node.diag_publisher.sent[-1].status[0]
    values = {kv.key: kv.value for kv in status.values}
    assert float(values["efforts_follow_commands"]) == 1.0
    assert "followed none" not in status.message


@pytest.mark.ros
@requires_rclpy
def test_a_clock_reset_forgets_the_delay_read(nodes: Any) -> None:  # noqa: F811
    """A node on sim time whose estimator reads 3 periods; the clock restarts from 0 (a
    simulator restarted), states without efforts after it: nothing read, the summary NaN.
    (Mutant: ``_clock_went_back`` does not reset the estimator.)"""
    from rclpy.time import Time

    node, _ = _node_on_sim_time(nodes, "gravity_comp")
    _fill(node.delay_estimator, _commands(1500), 3)
    assert node.delay_estimator.estimate() is not None
    clock = node.node.get_clock()
    for k in range(3):
        clock.set_ros_time_override(Time(nanoseconds=k * 1_000_000, clock_type=clock.clock_type))
        node._on_state_message(_state_msg(HOME, k * 1e-3))
    assert node.watchdog.clock_resets == 1
    assert node.delay_estimator.estimate() is None and math.isnan(node.summary()["measured_delay_ms"])


@pytest.mark.ros
@requires_rclpy
@pytest.mark.parametrize("path", ["bytes", "message"])
def test_a_refused_state_stamped_far_ahead_leaves_the_delay_read(nodes: Any, path: str) -> None:  # noqa: F811
    """A computed-torque node on sim time, its states' efforts the command one period before;
    one state stamped 1000 s ahead (refused: past ``max_future``) among them: the delay still
    reads one period right after it, over the states around it. (Mutant: the refused state goes
    to the estimator too; its stamp then ends the window 1000 s ahead, where nothing is held,
    and the delay read nothing until the stamps reached it.)"""
    from rclpy.serialization import serialize_message
    from rclpy.time import Time

    node = nodes.make("controller", controller="computed_torque", use_sim_time=True)
    clock = node.node.get_clock()
    effort = np.zeros(len(HOME))

    def state(k: int, ahead: float = 0.0) -> None:
        nonlocal effort
        clock.set_ros_time_override(Time(nanoseconds=(100_000 + k) * 1_000_000, clock_type=clock.clock_type))
        msg = _state_msg(HOME + 0.02 * math.sin(4.0 * math.pi * k * 1e-3), 100.0 + k * 1e-3 + ahead)
        msg.effort = effort.tolist()
        sent = len(node.publisher.sent)
        if path == "bytes":
            node._on_state_bytes(serialize_message(msg))
        else:
            node._on_state_message(msg)
        if len(node.publisher.sent) > sent:
            effort = _sent_torque(node.publisher.sent[-1])

    for k in range(1500):
        state(k)
    before = node.delay_estimator.estimate()
    assert before is not None and before.periods == 1
    state(1500, ahead=1000.0)
    assert "in the future" in node.watchdog.last_message
    for k in range(1501, 1520):
        state(k)
    after = node.delay_estimator.estimate()
    assert after is not None and after.periods == 1, after
    assert float(node.summary()["measured_delay_ms"]) == pytest.approx(1.0)


def _sent_torque(sent: Any) -> np.ndarray:
    """The torque (N·m) of a command the node published, serialized or a message."""
    from rclpy.serialization import deserialize_message
    from std_msgs.msg import Float64MultiArray

    if isinstance(sent, bytes | bytearray):
        sent = deserialize_message(bytes(sent), Float64MultiArray)
    return np.array(sent.data)
