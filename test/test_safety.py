"""Watchdog state machine, joint-name mapping and the safe brake (pure core, no ROS)."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.braking import FIRST_HOLD_PERIODS, SafeBrake
from torque_ctrl_ros.core.errors import ConfigError, StateError
from torque_ctrl_ros.core.safety import (
    DEFAULT_DAMPING,
    MAX_ANGLE,
    Action,
    JointNameMap,
    RejectReason,
    Watchdog,
    WatchdogConfig,
    WatchdogState,
)
from torque_ctrl_ros.core.saturation import TorqueLimiter
from torque_ctrl_ros.sim.plant import MujocoPlant

NAMES = ("a", "b", "c")


def test_name_map_any_order_extras_ignored_and_cached() -> None:
    m = JointNameMap(NAMES)
    idx = m.indices(["x", "c", "a", "b"])
    assert idx.tolist() == [2, 3, 1]
    assert m.indices(("x", "c", "a", "b")) is idx  # cached per name tuple
    out = np.empty(3)
    m.take(["c", "extra", "a", "b"], np.array([3.0, 99.0, 1.0, 2.0]), out)
    assert out.tolist() == [1.0, 2.0, 3.0]


def test_name_map_cache_stays_bounded() -> None:
    """A stream whose names keep changing (an extra joint named anew each time) must not grow the
    cache without end."""
    m = JointNameMap(NAMES)
    for i in range(1000):
        m.indices(("a", "b", "c", f"extra_{i}"))
    assert 0 < len(m._cache) <= 64


def test_name_map_errors_name_the_missing_joints() -> None:
    m = JointNameMap(NAMES)
    with pytest.raises(StateError, match=r"\['b'\]"):
        m.indices(["a", "c"])
    with pytest.raises(StateError, match="2 entries for 3 names"):
        m.take(["a", "b", "c"], np.zeros(2), np.empty(3))
    with pytest.raises(ConfigError, match="duplicate"):
        JointNameMap(["a", "a"])
    # An arm joint named twice in a state: two values and no telling which is right. An extra
    # name repeated is not the arm's business.
    with pytest.raises(StateError, match=r"joint\(s\) \['b'\] named more than once"):
        m.indices(["a", "b", "c", "b"])
    assert m.indices(["a", "x", "b", "x", "c"]).tolist() == [0, 2, 4]


def test_name_map_errors_quote_a_huge_message_in_short() -> None:
    """The error text is logged and kept on /diagnostics: a state naming a million joints, or one
    name of a million characters, gives a message of a few hundred characters, not megabytes."""
    m = JointNameMap(NAMES)
    many = [f"extra_{i}" for i in range(1_000_000)]
    for names in (many, ["a", "b", "x" * 1_000_000], ["a", "b", "b", *many]):
        with pytest.raises(StateError) as info:
            m.indices(names)
        assert len(str(info.value)) < 2_000
    with pytest.raises(StateError, match=r"got \['extra_0', .*'extra_15', … 999984 more\]"):
        m.indices(many)


def _refused(result: tuple[RejectReason, str] | None) -> tuple[RejectReason, str]:
    """The reason and message of a state ``Watchdog.check`` refused (fails where it accepted)."""
    assert result is not None
    return result


def _good(wd: Watchdog, t: float) -> Action:
    q, v = np.zeros(3), np.ones(3)
    assert wd.check(q, v, t, t) is None
    return wd.accept(q, v, t, t)


def test_watchdog_classifies_bad_states() -> None:
    wd = Watchdog(3, WatchdogConfig.create(max_age=0.02))
    q, v = np.zeros(3), np.zeros(3)
    assert _refused(wd.check(np.array([0, np.nan, 0]), v, 0.0, 0.0))[0] is RejectReason.NON_FINITE
    assert _refused(wd.check(q, np.array([0, 0, np.inf]), 0.0, 0.0))[0] is RejectReason.NON_FINITE
    assert _refused(wd.check(q, v, 1.0, 1.021))[0] is RejectReason.STALE
    assert wd.check(q, v, 1.0, 1.019) is None
    # The bound itself is still fresh (0.02 − 0 is exactly max_age), a hair past it is not.
    assert wd.check(q, v, 0.0, 0.02) is None
    assert _refused(wd.check(q, v, 0.0, 0.0200001))[0] is RejectReason.STALE
    assert _refused(wd.check(q, v, 3.0, 1.0))[0] is RejectReason.INCONSISTENT  # 2 s in the future
    _good(wd, 1.0)
    assert _refused(wd.check(q, v, 0.99, 1.0))[0] is RejectReason.SUPERSEDED  # before the last accepted


def test_watchdog_refuses_states_no_arm_can_be_in() -> None:
    """Finite but implausible: far past a position limit, far above a velocity limit."""
    lower, upper = np.array([-2.0, -np.inf, -1.0]), np.array([2.0, np.inf, 1.0])
    vmax = np.array([1.0, 2.0, np.inf])
    config = WatchdogConfig.create(position_margin=0.5, velocity_factor=10.0)
    wd = Watchdog(3, config, (lower, upper), vmax, NAMES)
    q, v = np.zeros(3), np.zeros(3)
    assert wd.check(np.array([2.49, 1e5, -1.49]), np.array([-9.9, 19.9, 1e9]), 0.0, 0.0) is None
    bad_positions = (([2.51, 0, 0], "a"), ([0, 0, -1.51], "c"), ([0, 2e6, 0], "b"), ([0, -1e200, 0], "b"))
    for bad_q, joint in bad_positions:
        reason, message = _refused(wd.check(np.array(bad_q, dtype=float), v, 0.0, 0.0))
        assert reason is RejectReason.OUT_OF_RANGE and f"joint {joint} position" in message, message
    for bad_v, joint in (([10.1, 0, 0], "a"), ([0, -20.1, 0], "b")):
        reason, message = _refused(wd.check(q, np.array(bad_v), 0.0, 0.0))
        assert reason is RejectReason.OUT_OF_RANGE and f"joint {joint} velocity" in message, message
    # Non-finite values are named as such, whichever bound they would also break.
    assert _refused(wd.check(np.array([np.inf, 0, 0]), v, 0.0, 0.0))[0] is RejectReason.NON_FINITE
    assert _refused(wd.check(q, np.array([0, 0, np.nan]), 0.0, 0.0))[0] is RejectReason.NON_FINITE
    # Without limits only finiteness (and |q| <= MAX_ANGLE) is checked.
    plain = Watchdog(3)
    assert plain.check(np.full(3, 0.99 * MAX_ANGLE), np.full(3, 1e300), 0.0, 0.0) is None
    reason, message = _refused(plain.check(np.full(3, 1.01 * MAX_ANGLE), v, 0.0, 0.0))
    assert reason is RejectReason.OUT_OF_RANGE and "joint #0 position" in message, message
    with pytest.raises(ConfigError, match="2 joint names for 3 joints"):
        Watchdog(3, joint_names=["a", "b"])


def test_watchdog_plausible_range_stays_finite_with_a_huge_margin() -> None:
    """A margin that would overflow the range's width must not let an infinite position through
    (create() refuses margins above π; the watchdog stays safe with a config built directly)."""
    lower, upper = np.array([-2.0, -1.7e308]), np.array([2.0, 1.7e308])
    wd = Watchdog(2, WatchdogConfig(position_margin=1e308), (lower, upper))
    assert np.isfinite(wd.position_min).all() and np.isfinite(wd.position_max).all()
    assert wd.check(np.array([0.5 * MAX_ANGLE, -0.5 * MAX_ANGLE]), np.zeros(2), 0.0, 0.0) is None
    for q in ([np.inf, 0.0], [0.0, -np.inf]):
        assert _refused(wd.check(np.array(q), np.zeros(2), 0.0, 0.0))[0] is RejectReason.NON_FINITE
    assert (
        _refused(wd.check(np.array([2 * MAX_ANGLE, 0.0]), np.zeros(2), 0.0, 0.0))[0]
        is RejectReason.OUT_OF_RANGE
    )


def test_watchdog_bounds_for_the_gen3_leave_room_for_real_motion() -> None:
    from conftest import URDF_PATH

    robot = RobotModel.from_urdf_file(URDF_PATH)
    limits = (robot.position_lower, robot.position_upper)
    wd = Watchdog(robot.n, WatchdogConfig(), limits, robot.velocity_limit)
    bounded = np.isfinite(robot.position_lower)
    assert bounded.sum() == 3 and np.isfinite(robot.velocity_limit).all()
    # At a limit, moving at the velocity limit: accepted; 0.6 rad past it, or at 11x: refused.
    q_at_limit = np.where(bounded, robot.position_upper, 3.0)
    assert wd.check(q_at_limit, robot.velocity_limit, 0.0, 0.0) is None
    past = q_at_limit + 0.6 * bounded
    assert _refused(wd.check(past, robot.velocity_limit, 0.0, 0.0))[0] is RejectReason.OUT_OF_RANGE
    assert (
        _refused(wd.check(q_at_limit, 11.0 * robot.velocity_limit, 0.0, 0.0))[0] is RejectReason.OUT_OF_RANGE
    )


def test_watchdog_starts_over_when_the_clock_goes_back_with_the_stamps() -> None:
    wd = Watchdog(3, WatchdogConfig.create(max_age=0.02))
    q, v = np.zeros(3), np.zeros(3)
    _good(wd, 9.4)
    # An older stamp on a clock that went on: a reordered message, dropped.
    assert _refused(wd.check(q, v, 9.39, 9.401))[0] is RejectReason.SUPERSEDED
    assert wd.clock_resets == 0
    # The simulator restarted: its states and the clock (sim time) start again from 0.
    assert wd.check(q, v, 0.001, 0.0015) is None
    assert wd.accept(q, v, 0.001, 0.0015) is Action.COMPUTE
    assert wd.clock_resets == 1 and wd.last_good.stamp == 0.001
    # From then on the new run's order holds again.
    assert _refused(wd.check(q, v, 0.0005, 0.002))[0] is RejectReason.SUPERSEDED
    assert _good(wd, 0.002) is Action.COMPUTE and wd.clock_resets == 1


def test_watchdog_one_stamp_from_the_future_does_not_block_the_states_after_it() -> None:
    """A state stamped 0.9 s ahead (within max_future) is accepted; the correct states after it
    are dropped as older for at most max_age, not until the clock reaches its stamp."""
    wd = Watchdog(3, WatchdogConfig.create(max_age=0.02, max_future=1.0))
    q, v = np.zeros(3), np.zeros(3)
    _good(wd, 100.0)
    assert wd.check(q, v, 100.9, 100.001) is None
    wd.accept(q, v, 100.9, 100.001)
    assert _refused(wd.check(q, v, 100.002, 100.002))[0] is RejectReason.SUPERSEDED  # within max_age of it
    for t in (100.022, 100.5):
        assert wd.check(q, v, t, t) is None
        assert wd.accept(q, v, t, t) is Action.COMPUTE
    assert wd.clock_resets == 0
    # A reordered message is still dropped when the stamps run at most max_age ahead.
    assert _refused(wd.check(q, v, 100.4995, 100.501))[0] is RejectReason.SUPERSEDED


def test_watchdog_falls_back_for_a_bounded_time_then_stops_and_recovers() -> None:
    wd = Watchdog(3, WatchdogConfig.create(fallback_duration=0.5))
    assert wd.state is WatchdogState.WAITING
    assert wd.reject(RejectReason.NON_FINITE, "nan", 0.0) is Action.NONE  # nothing good to fall back on
    assert _good(wd, 1.0) is Action.COMPUTE and wd.state is WatchdogState.OK
    assert wd.reject(RejectReason.STALE, "old", 1.1) is Action.FALLBACK
    assert wd.state is WatchdogState.FALLBACK
    assert wd.last_good.stamp == 1.0 and wd.last_good.v.tolist() == [1, 1, 1]
    assert wd.reject(RejectReason.STALE, "old", 1.6) is Action.FALLBACK  # 0.5 s: still inside
    assert wd.reject(RejectReason.STALE, "old", 1.61) is Action.NONE
    assert wd.state is WatchdogState.STOPPED
    assert wd.reject(RejectReason.NON_FINITE, "nan", 1.7) is Action.NONE
    assert wd.rejected[RejectReason.STALE] == 3 and wd.rejected_total == 5
    assert _good(wd, 2.0) is Action.COMPUTE and wd.state is WatchdogState.OK


def test_watchdog_stops_a_controller_that_fails_on_every_state() -> None:
    """Good states the controller cannot answer keep the fallback window open from its start:
    were each accepted state to restart it, the safe torque would go on for good."""
    wd = Watchdog(3, WatchdogConfig.create(fallback_duration=0.5))
    assert _good(wd, 1.0) is Action.COMPUTE
    assert wd.controller_failed("SolverError: boom", 1.0) is Action.FALLBACK
    assert wd.fallback_since == 1.0
    for k in range(1, 51):  # 1 kHz for 50 ms
        now = 1.0 + 0.001 * k
        assert _good(wd, now) is Action.COMPUTE
        assert wd.controller_failed("SolverError: boom", now) is Action.FALLBACK
    assert wd.state is WatchdogState.FALLBACK and wd.fallback_since == 1.0
    assert _good(wd, 1.49) is Action.COMPUTE
    assert wd.controller_failed("SolverError: boom", 1.49) is Action.FALLBACK
    assert _good(wd, 1.51) is Action.COMPUTE
    assert wd.controller_failed("SolverError: boom", 1.51) is Action.NONE
    assert wd.state is WatchdogState.STOPPED
    # auto_recover tries each later state: still failing, it stays stopped (no safe torque)...
    assert _good(wd, 1.6) is Action.COMPUTE
    assert wd.controller_failed("SolverError: boom", 1.6) is Action.NONE
    assert wd.state is WatchdogState.STOPPED
    assert wd.rejected[RejectReason.CONTROLLER_ERROR] == 54
    # ... and a state it answers resumes control, with the next failure opening a new window.
    assert _good(wd, 1.7) is Action.COMPUTE and wd.state is WatchdogState.OK
    assert _good(wd, 1.701) is Action.COMPUTE
    assert wd.controller_failed("SolverError: boom", 1.701) is Action.FALLBACK
    assert wd.fallback_since == 1.701


def test_watchdog_controller_failures_after_a_clock_reset_open_a_new_window() -> None:
    """A window from the old run (sim time 100 s) must not be reopened after the simulator restarts
    at 0: its start would lie ahead of the clock and the fallback never end (~100 s)."""
    wd = Watchdog(3, WatchdogConfig.create(fallback_duration=0.5))
    assert _good(wd, 100.0) is Action.COMPUTE
    assert wd.controller_failed("SolverError: boom", 100.0) is Action.FALLBACK
    actions = []
    for k in range(1, 701):  # the new run: 0.7 s of states the controller fails on
        t = 0.001 * k
        assert _good(wd, t) is Action.COMPUTE
        actions.append(wd.controller_failed("SolverError: boom", t))
    assert wd.clock_resets == 1
    assert actions[0] is Action.FALLBACK and actions[499] is Action.FALLBACK  # 0.001 … 0.5 s
    assert actions[-1] is Action.NONE and wd.state is WatchdogState.STOPPED


def test_watchdog_without_auto_recover_stays_stopped() -> None:
    wd = Watchdog(3, WatchdogConfig.create(fallback_duration=0.0, auto_recover=False))
    _good(wd, 0.0)
    wd.reject(RejectReason.STALE, "old", 0.1)
    wd.reject(RejectReason.STALE, "old", 0.2)
    assert wd.state is WatchdogState.STOPPED
    assert wd.accept(np.zeros(3), np.zeros(3), 0.3, 0.3) is Action.NONE


def test_watchdog_reports_a_silent_stream() -> None:
    wd = Watchdog(3, WatchdogConfig.create(max_age=0.02, fallback_duration=0.5))
    _good(wd, 0.0)
    wd.silence(0.01, 0.01)
    assert wd.state is WatchdogState.OK
    wd.silence(0.1, 0.1)
    assert wd.state is WatchdogState.FALLBACK and wd.last_message == "no joint state for 100 ms"
    wd.silence(0.6, 0.6)
    # The stop says how long the silence has lasted, not the fallback's 100 ms.
    assert wd.state is WatchdogState.STOPPED and wd.last_message == "no joint state for 600 ms"
    # A fallback on refused states keeps their reason at the stop, though the node passes the
    # time since the last good state as the silence (NaN states are not "no joint state").
    wd = Watchdog(3, WatchdogConfig.create(max_age=0.02, fallback_duration=0.5))
    _good(wd, 0.0)
    for k in range(1, 491):
        wd.reject(RejectReason.NON_FINITE, "joint state has non-finite position", k * 1e-3)
    wd.silence(0.52, 0.52)
    assert wd.state is WatchdogState.STOPPED and wd.last_message == "joint state has non-finite position"


def test_a_silence_opens_the_fallback_window_when_the_stream_went_stale() -> None:
    """Noticed 0.3 s late (the diagnostics timer), a silence still opens the window at the last
    state's time + max_age: refused states after it get the safe torque until 0.52 s, not for
    a whole window from when the silence was noticed (0.79 s)."""
    wd = Watchdog(3, WatchdogConfig.create(max_age=0.02, fallback_duration=0.5))
    _good(wd, 0.0)
    wd.silence(0.3, 0.3)
    assert wd.state is WatchdogState.FALLBACK and wd.fallback_since == pytest.approx(0.02)
    assert wd.reject(RejectReason.NON_FINITE, "nan", 0.5) is Action.FALLBACK
    assert wd.reject(RejectReason.NON_FINITE, "nan", 0.53) is Action.NONE
    assert wd.state is WatchdogState.STOPPED


def test_a_silence_noticed_on_a_lagging_clock_opens_the_window_at_the_last_state() -> None:
    """Under sim time, back from a 0.3 s stall of this process, the timer can notice the silence
    (0.3 s, steady) before the /clock messages of the stall are taken: the clock still reads
    the last state's time. The window opens max_age after that state, so the first state after
    the stall (0.3 s on) finds it open and control resumes, as on the wall clock; opened at
    ``now − silent_for`` it had been over (0.58 s), and the arm stopped with its target dropped."""
    wd = Watchdog(3, WatchdogConfig.create(max_age=0.02, fallback_duration=0.5))
    _good(wd, 1.0)
    wd.silence(1.0, 0.3)  # the timer, before the clock caught up
    assert wd.state is WatchdogState.FALLBACK and wd.fallback_since == pytest.approx(1.02)
    wd.silence(1.3, 0.3)  # the first state after the stall: its stamps' gap, the clock caught up
    assert wd.state is WatchdogState.FALLBACK
    assert _good(wd, 1.3) is Action.COMPUTE and wd.state is WatchdogState.OK
    # A clock gone back (a restarted simulator) before the timer noticed: the window opens on it.
    wd = Watchdog(3, WatchdogConfig.create(max_age=0.02, fallback_duration=0.5))
    _good(wd, 50.0)
    wd.silence(0.1, 0.3)
    assert wd.state is WatchdogState.FALLBACK and wd.fallback_since == pytest.approx(0.12)


def test_watchdog_stops_a_silent_stream_when_sim_time_froze() -> None:
    """Under use_sim_time the clock stops with the simulator: the steady ``silent_for`` ends the
    fallback window, so the next run's first state gets no safe torque from this run's pose."""
    wd = Watchdog(3, WatchdogConfig.create(max_age=0.02, fallback_duration=0.5))
    _good(wd, 10.0)
    wd.silence(10.0, 0.3)
    assert wd.state is WatchdogState.FALLBACK
    wd.silence(10.0, 0.5)
    assert wd.state is WatchdogState.FALLBACK  # 0.48 s of the window used
    wd.silence(10.0, 0.53)
    assert wd.state is WatchdogState.STOPPED
    refused = wd.check(np.zeros(3), np.zeros(3), 0.0, 10.0)  # restarted simulator, old clock
    assert refused is not None and wd.reject(*refused, 10.0) is Action.NONE


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_age": 0.0},
        {"max_age": math.nan},
        {"fallback_duration": -1.0},
        {"position_margin": -0.1},
        {"position_margin": math.inf},
        {"velocity_factor": 0.9},
        {"velocity_factor": "ten"},
        {"max_age": 1.5},  # the bounds, just past them: 1 s and 10 s (seconds, not ms)
        {"max_future": 10.5},
        {"fallback_duration": 10.5},
        # Below one period every state is stale; below two every simulated one is from the future;
        # above 100 the speed and jump checks pass corrupt values.
        {"max_age": 0.9e-3},
        {"max_age": 5e-324},
        {"max_future": 1.9e-3},
        {"velocity_factor": 101.0},
        {"velocity_factor": 1e300},
        # Over-speed: 0 (off) or from 1 to velocity_factor.
        {"overspeed_factor": 0.5},
        {"overspeed_factor": -1.0},
        {"overspeed_factor": 11.0},
        {"overspeed_factor": math.nan},
    ],
)
def test_watchdog_config_rejects_bad_values(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        WatchdogConfig.create(**kwargs)


def test_an_over_speed_brakes_and_control_resumes_once_the_arm_is_slower() -> None:
    """The real arm's bound (config/gen3_hardware.yaml: 1.5 times the velocity limits). joint_2 of
    a 1 kHz stream speeds up to 2.1 times its limit and back: the states above 1.5 times are
    refused as over-speed (the brake), and control resumes at the first one below. Bound with
    ``velocity_factor`` instead (the jump check's too), the arm's travel meanwhile made the states
    after it "jumps", and the watchdog stopped for a second on two publishers."""
    robot = RobotModel.from_urdf_file(Path(__file__).resolve().parents[1] / "urdf" / "gen3.urdf")
    config = WatchdogConfig.create(max_age=0.02, fallback_duration=0.1, overspeed_factor=1.5)
    wd = Watchdog(
        7, config, (robot.position_lower, robot.position_upper), robot.velocity_limit, robot.joint_names
    )
    profile = np.concatenate(
        [np.full(50, 1.0), np.linspace(1.0, 2.1, 30), np.linspace(2.1, 1.0, 30), np.ones(200)]
    )
    q = np.array([0.0, 0.26, 3.14, -2.27, 0.0, 0.96, 1.57])
    refused = []
    for k, share in enumerate(profile):
        t = 10.0 + k * 1e-3
        v = np.zeros(7)
        v[1] = share * robot.velocity_limit[1]
        q = q + v * 1e-3
        result = wd.check(q, v, t, t + 3e-4)
        if result is None:
            wd.accept(q, v, t, t + 3e-4)
            continue
        assert share > 1.5 and result[0] is RejectReason.OUT_OF_RANGE, (k, share, result)
        assert result[1].startswith("over-speed: joint joint_2 at"), result
        refused.append(k)
        wd.reject(result[0], result[1], t + 3e-4)
    above = [k for k, share in enumerate(profile) if share > 1.5]
    assert refused == above and wd.state is WatchdogState.OK
    # Checked after the stamps: a fast state older than one accepted is superseded (dropped, no
    # brake), as any reordered one, not an over-speed.
    v = np.zeros(7)
    v[1] = 1.6 * robot.velocity_limit[1]
    late = wd.check(q, v, t - 0.002, t + 4e-4)
    assert late is not None and late[0] is RejectReason.SUPERSEDED, late
    assert Watchdog(7, WatchdogConfig(), velocity_limit=robot.velocity_limit).overspeed_max is None  # off


def test_watchdog_config_takes_its_bounds() -> None:
    cfg = WatchdogConfig.create(max_age=1.0, max_future=10.0, fallback_duration=10.0)
    assert (cfg.max_age, cfg.max_future, cfg.fallback_duration) == (1.0, 10.0, 10.0)
    cfg = WatchdogConfig.create(max_age=1e-3, max_future=2e-3, fallback_duration=0.0, velocity_factor=100)
    assert (cfg.max_age, cfg.max_future, cfg.fallback_duration, cfg.velocity_factor) == (1e-3, 2e-3, 0.0, 100)


def test_watchdog_config_errors_name_the_parameter_and_the_accepted_range() -> None:
    with pytest.raises(ConfigError, match=r"watchdog\.max_age: 0\.0005 s is less than the 0\.001 s accepted"):
        WatchdogConfig.create(max_age=5e-4)
    with pytest.raises(ConfigError, match=r"watchdog\.max_future: 0\.001 s is less than the 0\.002 s"):
        WatchdogConfig.create(max_future=1e-3)
    with pytest.raises(ConfigError, match=r"watchdog\.velocity_factor: expected from 1 to 100 .* got 1000$"):
        WatchdogConfig.create(velocity_factor=1000)


def _yaml_dampings() -> dict[str, np.ndarray]:
    from ros_helpers import shipped_parameters

    sim, ctrl = shipped_parameters("sim_node"), shipped_parameters("controller_node")
    keys = ("fallback_damping", "qpid.fallback_damping", "hqpid.fallback_damping")
    out = {f"controller_node.{k}": np.array(ctrl[k], dtype=float) for k in keys}
    out["sim_node.safe_damping"] = np.array(sim["safe_damping"], dtype=float)
    out["DEFAULT_DAMPING"] = np.array(DEFAULT_DAMPING)
    return out


def _max_damping_eigenvalue(robot: RobotModel, damping: np.ndarray, h: float, n_states: int) -> float:
    """``max λ(h·M⁻¹·K_d)`` over random configurations within the joint limits."""
    rng = np.random.default_rng(3)
    lo = np.where(np.isfinite(robot.position_lower), robot.position_lower, -np.pi)
    hi = np.where(np.isfinite(robot.position_upper), robot.position_upper, np.pi)
    worst = 0.0
    for _ in range(n_states):
        M = robot.mass_matrix(rng.uniform(lo, hi))
        worst = max(worst, float(np.linalg.eigvals(h * np.linalg.solve(M, np.diag(damping))).real.max()))
    return worst


def test_safe_damping_defaults_are_stable_at_1khz(robot: RobotModel) -> None:
    """Damping applied once per ms decays the velocity only if ``λ(h·M⁻¹·K_d) < 2`` everywhere.

    The defaults and every damping in the shipped YAML keep it below 1 (no oscillation); the old
    scalar 2.0 is shown to break it, so the check can fail.
    """
    h = 1e-3
    for name, damping in _yaml_dampings().items():
        assert damping.shape == (robot.n,), name
        worst = _max_damping_eigenvalue(robot, damping, h, 300)
        assert worst < 1.0, (name, worst)
    assert _max_damping_eigenvalue(robot, np.full(robot.n, 2.0), h, 50) > 2.0


def test_fallback_torque_brings_the_simulated_arm_to_rest(robot: RobotModel, scene_path: Path) -> None:
    """``g(q) − K_d·q̇`` with the defaults, applied each ms in MuJoCo: the kinetic energy
    ``½·q̇ᵀM q̇`` only decreases (``dE/dt = −q̇ᵀK_d q̇``). With the old scalar 2.0 the wrist
    chatters instead (bounded only by the actuators' torque limits) and the energy does not decay."""
    from torque_ctrl_ros.sim.plant import MujocoPlant

    def energies(damping: np.ndarray) -> np.ndarray:
        plant = MujocoPlant(scene_path)
        plant.reset("home")
        plant.set_state(plant.q, np.full(plant.n, 0.3))
        out = []
        for _ in range(1000):
            plant.set_torque(robot.gravity(plant.q) - damping * plant.v)
            plant.step()
            v = plant.v
            out.append(0.5 * v @ robot.mass_matrix(plant.q) @ v)
        return np.array(out)

    energy = energies(np.array(DEFAULT_DAMPING))
    assert np.all(np.diff(energy) <= 1e-9 * energy[0]), np.diff(energy).max()
    assert energy[-1] < 0.1 * energy[0], energy[-1] / energy[0]
    unstable = energies(np.full(robot.n, 2.0))
    assert np.diff(unstable).max() > 1e-3 * unstable[0]
    assert unstable[-1] > 0.1 * unstable[0]


# ------------------------------------------------------------------------------ safe brake
def _plant_from_home(scene_path: Path, v0: float) -> MujocoPlant:
    plant = MujocoPlant(scene_path)
    plant.reset("home")
    plant.set_state(plant.q, np.full(plant.n, v0))
    return plant


def _kinetic_energy(robot: RobotModel, q: np.ndarray, v: np.ndarray) -> float:
    return 0.5 * float(v @ robot.mass_matrix(q) @ v)


@pytest.mark.parametrize(
    "gaps",
    [[1], [2], [5], [1, 7], [1] * 49 + [20], [20] + [1] * 499],
    ids=["1ms", "2ms", "5ms", "1ms-7ms", "20ms-hiccup", "20ms-first"],
)
def test_safe_brake_brakes_the_simulated_arm_where_a_held_damping_torque_spins_it(
    robot: RobotModel, scene_path: Path, gaps: list[int]
) -> None:
    """A fallback of 0.5 s from the home pose moving at 0.5 rad/s on every joint: the command
    held from the last good state, g(q₀) − K_d·q̇₀, spins the wrist up; SafeBrake's prediction
    is the plant's own motion (same model, same integrator) under the commands sent, here with
    ``gaps`` ms between them, cycled (states lost in between: the plant holds each command).
    The kinetic energy only falls and no joint gets near its velocity limit; uneven gaps too,
    where damping scaled by the gap just before each command (not the longest) spins the wrist
    to 56 rad/s with gaps of 1 and 7 ms, and a first command held 20 ms, which with K_d in full
    takes joint 7 to 2.2 times its limit."""
    kd = np.array(DEFAULT_DAMPING)
    h = 1e-3
    held = _plant_from_home(scene_path, 0.5)
    frozen = robot.gravity(held.q) - kd * held.v
    for _ in range(500):
        held.set_torque(frozen)
        held.step()
    assert np.abs(held.v).max() > 10.0  # a command frozen at the last good state: not braking

    plant = _plant_from_home(scene_path, 0.5)
    brake = SafeBrake(robot, kd, horizon=0.5, period=h)
    t0 = 1000.0
    brake.start(plant.q, plant.v, t0)
    energy = [_kinetic_energy(robot, plant.q, plant.v)]
    speed = [0.0]  # the largest |q̇_i| / limit_i
    next_command, gap = 0, itertools.cycle(gaps)
    for k in range(501):
        if k == next_command:
            brake.torque(t0 + k * h)
            np.testing.assert_allclose(brake.q, plant.q, rtol=0, atol=1e-9)
            np.testing.assert_allclose(brake.v, plant.v, rtol=0, atol=1e-9)
            plant.set_torque(brake.tau)
            next_command += next(gap)
        plant.step()
        energy.append(_kinetic_energy(robot, plant.q, plant.v))
        speed.append(float(np.max(np.abs(plant.v) / robot.velocity_limit)))
    rises = np.diff(energy)
    # The first command, damping little (it may be held long), lets gravity's torque at a pose
    # the arm is leaving raise the kinetic energy a little; from the next one on it only falls.
    assert rises[: gaps[0]].max() <= 1e-3 * energy[0], rises[: gaps[0]].max()
    assert rises[gaps[0] :].max() <= 1e-9 * energy[0], rises[gaps[0] :].max()
    assert max(speed) < 0.7  # 0.41 at the start (0.5 rad/s on a wrist joint)
    if max(gaps) <= 2:  # K_d in full after the first period
        assert energy[-1] < 0.1 * energy[0]
        assert np.abs(plant.v).max() < 0.25 and np.abs(plant.v[4:]).max() < 0.1
    else:  # K_d·2/m: slower, but braking (0.27 to 0.48 of the start left; 0.69 after a first 20 ms)
        assert energy[-1] < (0.75 if gaps[0] > 2 else 0.6) * energy[0]


def test_safe_brake_holds_each_command_until_the_next_and_stops_at_the_horizon(robot: RobotModel) -> None:
    """Between two calls the prediction runs the whole periods between them under the command
    sent by the first; a call at the same time, earlier (clock gone back) or at NaN advances
    nothing; past the horizon nothing either."""
    kd = np.array(DEFAULT_DAMPING)
    q0, v0 = np.linspace(-0.5, 0.5, 7), np.linspace(0.4, -0.2, 7)
    brake = SafeBrake(robot, kd, horizon=0.01)
    brake.start(q0, v0, 5.0)  # answering a refused state: safe held for FIRST_HOLD_PERIODS
    np.testing.assert_allclose(
        brake.command, robot.gravity(q0) - kd * (2 / FIRST_HOLD_PERIODS) * v0, atol=1e-12
    )
    brake.start(q0, v0, 5.0, hold=10)  # a good state of a 100 Hz stream
    np.testing.assert_allclose(brake.command, robot.gravity(q0) - kd * 0.2 * v0, atol=1e-12)
    brake.start(q0, v0, 5.0, hold=1)  # a good state at 1 kHz: K_d in full
    first = robot.gravity(q0) - kd * v0
    np.testing.assert_allclose(brake.torque(5.0), first, rtol=0, atol=1e-12)
    np.testing.assert_allclose(brake.torque(5.0004), first, rtol=0, atol=1e-12)  # rounds to 0 periods
    np.testing.assert_allclose(brake.torque(4.0), first, rtol=0, atol=1e-12)
    np.testing.assert_allclose(brake.torque(math.nan), first, rtol=0, atol=1e-12)
    assert brake.k == 0
    # Three periods in one call, all under the first command: as the plant holding it; the
    # next command damps with K_d·2/3 (it may be held as long).
    at_3ms = brake.torque(5.0031)
    assert brake.k == 3
    q, v = q0.copy(), v0.copy()
    for _ in range(3):
        v += 1e-3 * pin.aba(robot.model, robot.data, robot.configuration(q), v, first)
        q += 1e-3 * v
    np.testing.assert_allclose(brake.q, q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(at_3ms, robot.gravity(q) - kd * (2 / 3) * v, rtol=0, atol=1e-12)
    # One period at a time differs: each command acts on its own period.
    stepped = SafeBrake(robot, kd, horizon=0.01)
    stepped.start(q0, v0, 5.0, hold=1)
    for k in (1, 2, 3):
        stepped.torque(5.0 + 1e-3 * k)
    assert np.abs(stepped.q - brake.q).max() > 1e-9
    brake.torque(5.0041)  # one period under that command; the next still damps with K_d·2/3
    v += 1e-3 * pin.aba(
        robot.model, robot.data, robot.configuration(q), v, robot.gravity(q) - kd * (2 / 3) * v
    )
    q += 1e-3 * v
    np.testing.assert_allclose(brake.command, robot.gravity(q) - kd * (2 / 3) * v, rtol=0, atol=1e-12)
    at_4ms = brake.command.copy()
    np.testing.assert_allclose(brake.torque(5.0025), at_4ms, rtol=0, atol=0)  # went back: the same
    brake.torque(math.inf)  # clamped to the horizon: 10 periods, not a hang
    assert brake.k == brake.max_periods == 10
    last = brake.torque(1e9)
    assert brake.k == 10
    np.testing.assert_allclose(brake.torque(2e9), last, rtol=0, atol=0)
    # A new window forgets the last one's longest gap (kept, one 25 ms gap would leave every later
    # window braking with K_d·2/25: on the plant, energy 0.73 of its start after 0.5 s, not 0.07).
    brake = SafeBrake(robot, kd, horizon=0.5)
    brake.start(q0, v0, 5.0, hold=1)
    brake.torque(5.025)
    brake.start(q0, v0, 6.0, hold=1)
    brake.torque(6.001)
    np.testing.assert_allclose(brake.command, robot.gravity(brake.q) - kd * brake.v, rtol=0, atol=1e-12)


def test_safe_brake_predicts_the_time_that_passed_not_the_commands_sent(robot: RobotModel) -> None:
    """Commands 1.4 ms apart: each rounds to one period, but the remainders add up and the
    prediction keeps pace with the arm (200 commands, 280 periods; counted from each command's
    time it would run 29 % behind)."""
    brake = SafeBrake(robot, np.array(DEFAULT_DAMPING), horizon=1.0)
    brake.start(np.zeros(7), np.zeros(7), 0.0, hold=1)
    for k in range(1, 201):
        brake.torque(1.4e-3 * k)
    assert brake.k == 280


def test_safe_brake_returns_the_command_before_saturation_and_holds_it_saturated(robot: RobotModel) -> None:
    """The prediction holds what the arm gets, the clipped torque; the returned command is the
    unclipped one, so the node's limiter reports the saturation."""
    brake = SafeBrake(robot, np.array(DEFAULT_DAMPING), horizon=0.1)
    brake.start(np.zeros(7), np.full(7, 1e3), 0.0, hold=1)
    command = brake.torque(0.0)
    assert (np.abs(command) > robot.effort_limit).all()
    np.testing.assert_array_equal(np.abs(brake.tau), robot.effort_limit)
    out = TorqueLimiter(robot.joint_names, robot.effort_limit).apply(command)
    np.testing.assert_array_equal(out.tau, brake.tau)
    assert out.saturated.all()


def test_watchdog_stops_a_window_when_the_clock_goes_back() -> None:
    """A fallback window at 1000 s, then refused states stamped by a clock restarted at 5 s
    (a simulator restart under sim time): the window cannot be timed on the new clock, so the
    watchdog stops instead of answering them with the safe command for ever; a good state of
    the new run then recovers (auto_recover)."""
    wd = Watchdog(3, WatchdogConfig(max_age=0.05, fallback_duration=0.5))
    wd.accept(np.zeros(3), np.zeros(3), 1000.0, 1000.0)
    assert wd.reject(RejectReason.NON_FINITE, "nan", 1000.010) is Action.FALLBACK
    # A step back by less than max_age (a system clock adjusted) only lengthens the window.
    assert wd.reject(RejectReason.NON_FINITE, "nan", 1000.008) is Action.FALLBACK
    assert wd.reject(RejectReason.NON_FINITE, "nan", 5.0) is Action.NONE
    assert wd.state is WatchdogState.STOPPED
    assert wd.accept(np.zeros(3), np.zeros(3), 5.001, 5.001) is Action.COMPUTE


def test_watchdog_a_failure_after_the_clock_stepped_back_opens_a_new_window() -> None:
    """A window opened at 10.0 s; the receiver's clock then steps back 0.5 s (less than a clock
    reset) while the stamps go on, and the controller fails on the next good state: a new window
    from 9.5 s, not a stop (nothing sent) for a window that seems to have begun in the future."""
    wd = Watchdog(3, WatchdogConfig.create(fallback_duration=0.5))
    z = np.zeros(3)
    assert wd.accept(z, z, 9.99, 9.99) is Action.COMPUTE
    assert wd.reject(RejectReason.STALE, "late", 10.0) is Action.FALLBACK
    assert wd.accept(z, z, 10.01, 9.5) is Action.COMPUTE and wd.clock_resets == 0
    assert wd.controller_failed("SolverError", 9.5) is Action.FALLBACK
    assert wd.state is WatchdogState.FALLBACK and wd.fallback_since == 9.5


def test_watchdog_safe_since_is_the_later_of_window_start_and_last_accept() -> None:
    wd = Watchdog(3, WatchdogConfig(max_age=0.05, fallback_duration=0.5))
    assert math.isnan(wd.safe_since)
    wd.accept(np.zeros(3), np.zeros(3), 1.0, 1.0)
    assert math.isnan(wd.safe_since)  # no fallback
    assert wd.reject(RejectReason.NON_FINITE, "nan", 1.002) is Action.FALLBACK
    assert wd.safe_since == 1.002
    wd.reject(RejectReason.NON_FINITE, "nan", 1.003)
    assert wd.safe_since == 1.002  # the same window
    # A good state the controller then fails on: the safe command starts from that state.
    wd.accept(np.ones(3), np.zeros(3), 1.004, 1.004)
    assert wd.controller_failed("boom", 1.004) is Action.FALLBACK
    assert wd.safe_since == 1.004


def test_end_window_stops_only_an_open_fallback_window() -> None:
    """The node ends a window by the stamps when its clock stands still; nothing else changes."""
    wd = Watchdog(2)
    wd.end_window()
    assert wd.state is WatchdogState.WAITING
    wd.accept(np.zeros(2), np.zeros(2), 1.0, 1.0)
    wd.end_window()
    assert wd.state is WatchdogState.OK
    assert wd.reject(RejectReason.NON_FINITE, "test", 1.001) is Action.FALLBACK
    wd.end_window()
    assert wd.state is WatchdogState.STOPPED
    assert wd.reject(RejectReason.NON_FINITE, "test", 1.002) is Action.NONE


def test_a_state_hours_old_is_said_to_be_on_another_clock() -> None:
    """Sim-time stamps read on the wall clock (a node left on use_sim_time false) are ~1.8e12 ms
    old: the refusal says which mix-up that is; a state a second late does not."""
    wd = Watchdog(2)
    reason, message = wd.check(np.zeros(2), np.zeros(2), 0.5, 1.8e9) or (None, "")
    assert reason is RejectReason.STALE and "another clock" in message
    reason, message = wd.check(np.zeros(2), np.zeros(2), 0.5, 1.5) or (None, "")
    assert reason is RejectReason.STALE and "another clock" not in message
    # Stamped 0 on the wall clock: no stamp at all (a driver that leaves header.stamp unset), not
    # sim time; the use_sim_time hint sent users after the wrong setting (a review).
    reason, message = wd.check(np.zeros(2), np.zeros(2), 0.0, 1.8e9) or (None, "")
    assert reason is RejectReason.STALE and message.endswith(": unstamped (header.stamp 0)"), message


def test_safe_brake_predicts_no_further_than_its_horizon_in_one_call(robot: RobotModel) -> None:
    """50 ms since the start with a 10 ms horizon: 10 periods predicted, not 50."""
    brake = SafeBrake(robot, np.array(DEFAULT_DAMPING), horizon=0.01)
    brake.start(np.zeros(7), np.full(7, 0.1), 1.0, hold=1)
    brake.torque(1.05)
    assert brake.k == brake.max_periods == 10


def test_a_swapped_state_is_dropped_without_a_fallback() -> None:
    """Stamped before a state already answered, the clock gone on (messages swapped on the way):
    the newer one's command went out. Dropped (counted as superseded): no safe command, no
    transition, not a refusal, and the next state is computed on as if nothing happened (refused
    as inconsistent, each would brake mid-motion and reset the controller: two transitions per
    swapped pair)."""
    wd = Watchdog(3, WatchdogConfig.create(max_age=0.02))
    q, v = np.zeros(3), np.zeros(3)
    _good(wd, 1.000)
    _good(wd, 1.002)
    for stamp in (1.001, 1.0015):  # swapped on the way (a duplicate of the last is taken again)
        reason, message = _refused(wd.check(q, v, stamp, 1.0025))
        assert reason is RejectReason.SUPERSEDED and "dropped" in message
        assert wd.reject(reason, message, 1.0025) is Action.NONE
    assert wd.state is WatchdogState.OK and wd.transitions == 1 and wd.rejected_total == 0
    assert wd.rejected[RejectReason.SUPERSEDED] == 2 and wd.last_reason is None
    assert _good(wd, 1.003) is Action.COMPUTE


def test_after_a_silence_the_brake_stops_the_simulated_arm(robot: RobotModel, scene_path: Path) -> None:
    """MuJoCo under computed torque, moving to a target 0.6 rad away on three joints; then 45 ms
    without a state, the plant holding the last command as the simulator does within its command
    timeout, then refused (NaN) states for the whole fallback window: the safe brake, started where
    the held command took the arm (:meth:`Supervisor._carried_over_silence`), leaves it at under half
    a velocity limit, as without the silence. Started from the last good state as if it were
    measured now, it drove joint_6 to 5.2 times its limit (a review)."""
    from torque_ctrl_ros.core.controllers import ComputedTorque, ComputedTorqueConfig
    from torque_ctrl_ros.core.supervisor import Supervisor
    from torque_ctrl_ros.core.types import JointReference, JointState

    controller = ComputedTorque(robot, ComputedTorqueConfig.create(robot.n, 100.0))
    for silent_ms in (0, 45):
        plant = MujocoPlant(scene_path)
        plant.reset("home")
        target = JointReference(plant.q + np.array([0.6, 0.4, 0.0, 0.6, 0.0, 0.4, 0.0]))
        config = WatchdogConfig.create(max_age=0.02, fallback_duration=0.5)
        sup = Supervisor(robot, config, np.array(DEFAULT_DAMPING))
        t, tau = 1000.0, robot.gravity(plant.q)
        for k in range(150 + silent_ms + 600):
            if not 150 <= k < 150 + silent_ms:
                q = plant.q if k < 150 else np.full(robot.n, np.nan)
                decision = sup.step(q, plant.v, t, t)
                if decision.action is Action.COMPUTE:
                    assert decision.state is not None
                    tau = controller.compute(JointState(decision.state.q, decision.state.v), target).tau
                    sup.command_computed(tau)
                elif decision.command is not None:
                    tau = decision.command.tau
            plant.set_torque(tau)
            plant.step()
            t = round(t + 1e-3, 9)
        assert sup.watchdog.state is WatchdogState.STOPPED  # the window ran out
        assert np.abs(plant.v / robot.velocity_limit).max() < 0.5, (silent_ms, plant.v / robot.velocity_limit)
