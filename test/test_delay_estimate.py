"""The command-to-measurement delay read from the joint states' efforts (core/delay_estimate.py)
and the controller node's report of it (/diagnostics, its summary, a warning when it is not
``command_delay``)."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from ros_helpers import Probe, launch, probe, requires_rclpy, ros_domain, run_lockstep_pair  # noqa: F401
from test_ros_lockstep import SCENE, _trajectory_message, _trajectory_sender

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.controllers import create_controller
from torque_ctrl_ros.core.delay_estimate import MIN_SAMPLES, DelayEstimator
from torque_ctrl_ros.core.safety import DEFAULT_DAMPING
from torque_ctrl_ros.core.types import JointReference, JointState
from torque_ctrl_ros.sim.commands import DelayLine
from torque_ctrl_ros.sim.plant import MujocoPlant

N = 7
MS = 1_000_000  # ns
T0 = 1_700_000_000_000 * MS  # a wall-clock stamp (ns)


def _commands(count: int, seed: int = 0) -> np.ndarray:
    """A random walk of torques (N·m), 0.05 N·m steps per period."""
    return np.cumsum(np.random.default_rng(seed).normal(0.0, 0.05, (count, N)), axis=0)


def _fill(
    est: DelayEstimator,
    tau: np.ndarray,
    delay: int,
    *,
    gain: float = 1.0,
    offset: float = 0.0,
    noise: float = 0.0,
    jitter_ns: int = 0,
    seed: int = 1,
) -> None:
    """State k (stamped k ms after T0, plus jitter) reports ``gain·τ[k − delay] + offset + noise``
    and is answered with ``tau[k]``."""
    rng = np.random.default_rng(seed)
    for k in range(len(tau)):
        stamp = T0 + k * MS + (int(rng.integers(-jitter_ns, jitter_ns + 1)) if jitter_ns else 0)
        effort = gain * tau[k - delay] + offset + rng.normal(0.0, noise, N) if k >= delay else None
        est.add(stamp, effort, tau[k])


def _fill_with_holes(
    est: DelayEstimator, tau: np.ndarray, delay: int, *, nan_every: int, no_command_every: int = 0
) -> None:
    """State k (k ms after T0) reports ``τ[k − delay]``, joint 4's NaN every ``nan_every``-th
    state, and is answered with ``tau[k]``, with none every ``no_command_every``-th (0: never)."""
    for k in range(len(tau)):
        effort = tau[k - delay].copy() if k >= delay else None
        if effort is not None and k % nan_every == 0:
            effort[3] = np.nan
        missing = no_command_every and k % no_command_every == 0
        est.add(T0 + k * MS, effort, None if missing else tau[k])


@pytest.mark.parametrize("delay", [1, 3, 5, 8, 20])
def test_the_delay_is_where_the_efforts_show_the_commands(delay: int) -> None:
    est = DelayEstimator(N)
    _fill(est, _commands(1500), delay)
    found = est.estimate()
    assert found is not None
    assert found.periods == delay and found.delay == pytest.approx(delay * 1e-3)
    assert found.correlation == pytest.approx(1.0, abs=1e-9)
    assert found.samples == 1000 - 20  # the window less the longest delay tried


def test_offsets_gains_noise_and_jittered_stamps_leave_the_delay() -> None:
    """A reading scaled, offset (friction, a sensor's bias), noisy (0.2 N·m against 0.05 N·m
    steps of the commands), stamped ±0.3 ms off the period: the same delay, a lower correlation."""
    est = DelayEstimator(N)
    _fill(est, _commands(1500, seed=3), 4, gain=0.8, offset=2.5, noise=0.2, jitter_ns=300_000)
    found = est.estimate()
    assert found is not None and found.periods == 4
    assert 0.5 < found.correlation < 0.99


def test_an_arm_held_still_or_efforts_that_are_noise_show_no_delay() -> None:
    held = DelayEstimator(N)
    _fill(held, np.ones((1500, N)) + 1e-6 * _commands(1500), 3)  # commands spread ~1e-5 N·m
    assert held.estimate() is None
    noise = DelayEstimator(N)
    tau = _commands(1500)
    for k in range(len(tau)):  # efforts unrelated to the commands
        noise.add(T0 + k * MS, np.random.default_rng(k).normal(0.0, 1.0, N), tau[k])
    assert noise.estimate() is None


def _swinging_commands(count: int, amplitude: float = 3.0) -> np.ndarray:
    """Torques (N·m) swinging ``amplitude`` about 0 with a 0.7 s period, each joint in its own phase."""
    k = np.arange(count)[:, None]
    return amplitude * np.sin(2.0 * np.pi * k / 700.0 + np.arange(N))


def test_efforts_that_follow_none_of_the_commands_are_told() -> None:
    """Torque mode off while the states flow: the commands swing by ~2 N·m (standard deviation) and
    the efforts read the arm's gravity and 0.05 N·m of sensor noise: :class:`Unfollowed`, with the
    commands' spread and a correlation under 0.2 at every delay, and no delay. The same commands
    shown 5 periods later: the delay, nothing unfollowed. Efforts that follow through heavy noise
    (correlation ~0.3, between the two bounds), or with the opposite sign (correlation −1: they had
    been told as following none, a review), commands within 0.5 N·m, constant efforts (a driver's
    zeros) or none: neither can be told."""
    tau = _swinging_commands(1500)
    gravity = np.linspace(-10.0, 10.0, N)
    rng = np.random.default_rng(7)
    off = DelayEstimator(N)
    for k in range(len(tau)):
        off.add(T0 + k * MS, gravity + rng.normal(0.0, 0.05, N), tau[k])
    found, unfollowed = off.read()
    assert found is None and unfollowed is not None
    assert 2.0 < unfollowed.spread < 2.3 and unfollowed.correlation < 0.2
    assert unfollowed.samples == 1000 - 20
    on = DelayEstimator(N)
    _fill(on, tau, 5)
    found, unfollowed = on.read()
    assert found is not None and found.periods == 5 and unfollowed is None
    noisy = DelayEstimator(N)
    _fill(noisy, tau, 5, noise=6.0)
    assert noisy.read() == (None, None)
    mirrored = DelayEstimator(N)  # a driver's opposite sign: following, though no delay is read
    _fill(mirrored, tau, 5, gain=-1.0)
    assert mirrored.read() == (None, None)
    for commands, effort in (
        (_swinging_commands(1500, 0.5), lambda k: gravity + rng.normal(0.0, 0.05, N)),
        (tau, lambda k: np.zeros(N)),
        (tau, lambda k: None),
    ):
        est = DelayEstimator(N)
        for k in range(len(commands)):
            est.add(T0 + k * MS, effort(k), commands[k])
        assert est.read() == (None, None)


def test_too_few_states_missing_efforts_and_a_reset_show_nothing() -> None:
    est = DelayEstimator(N)
    assert est.estimate() is None  # nothing yet
    tau = _commands(MIN_SAMPLES + 1)
    _fill(est, tau[:MIN_SAMPLES], 1)  # MIN_SAMPLES − 1 efforts with the command before them
    assert est.estimate() is None
    _fill(est, tau, 1)  # MIN_SAMPLES
    found = est.estimate()
    assert found is not None and found.samples == MIN_SAMPLES
    est.reset()
    assert est.estimate() is None
    no_effort = DelayEstimator(N)
    for k, t in enumerate(_commands(1500)):
        no_effort.add(T0 + k * MS, None, t)
    assert no_effort.estimate() is None


def test_gaps_and_non_finite_efforts_are_left_out() -> None:
    """States without a command (every 7th), efforts not finite (every 11th): left out, the delay
    still read, over fewer periods."""
    est = DelayEstimator(N)
    _fill_with_holes(est, _commands(1500, seed=5), 2, nan_every=11, no_command_every=7)
    found = est.estimate()
    assert found is not None and found.periods == 2
    assert found.correlation == pytest.approx(1.0, abs=1e-9)
    assert 700 < found.samples < 980 * 6 / 7


def test_overflowing_efforts_and_stamps_before_1970_read_nothing_wrong() -> None:
    """Efforts of 1e300 (their squares overflow) show no delay and raise no warning; states
    stamped before 1970 (negative periods) are read like any others."""
    est = DelayEstimator(N)
    tau = _commands(1500)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for k in range(len(tau)):
            est.add(T0 + k * MS, np.full(N, 1e300) * (k % 2), tau[k])
        assert est.estimate() is None
    early = DelayEstimator(N)
    for k in range(len(tau)):
        early.add(-5_000 * MS + k * MS, tau[k - 3] if k >= 3 else None, tau[k])
    found = early.estimate()
    assert found is not None and found.periods == 3


def test_the_window_is_the_last_second() -> None:
    """The delay changes from 2 to 6 periods: after a window at 6 the estimate is 6."""
    est = DelayEstimator(N)
    tau = _commands(3000, seed=7)
    for k in range(len(tau)):
        delay = 2 if k < 1500 else 6
        est.add(T0 + k * MS, tau[k - delay] if k >= delay else None, tau[k])
        if k == 1499:
            first = est.estimate()
    assert first is not None and first.periods == 2
    last = est.estimate()
    assert last is not None and last.periods == 6


def test_a_max_delay_outside_the_window_is_refused() -> None:
    with pytest.raises(ValueError, match="max_periods"):
        DelayEstimator(N, window=10, max_periods=10)
    with pytest.raises(ValueError, match="max_periods"):
        DelayEstimator(N, max_periods=0)


@pytest.mark.parametrize("in_flight", [0, 2, 4])
def test_mujoco_efforts_show_the_simulators_delay(robot: RobotModel, in_flight: int) -> None:
    """Computed torque toward a joint step, MuJoCo applying each command ``in_flight`` steps late
    (the simulator's delay line): the applied torque of the step before each state, which the
    simulator reports as effort, shows the delay, (1 + in_flight) ms, to rounding."""
    plant = MujocoPlant(SCENE)
    plant.reset("home")
    ctrl = create_controller("computed_torque", robot, {"kp": 100.0, "kd": 20.0})
    line = DelayLine(plant.n, in_flight)
    est = DelayEstimator(plant.n)
    goal = JointReference(plant.q + 0.2)
    effort = None
    for k in range(1200):
        tau = ctrl.compute(JointState(plant.q, plant.v, k * 1e-3), goal).tau
        est.add(k * MS, effort, tau)
        applied = line.pass_on(tau)
        plant.set_torque(
            plant.safe_torque(np.array(DEFAULT_DAMPING), hold=True) if applied is None else applied
        )
        plant.step()
        effort = plant.tau_applied.copy()
    found = est.estimate()
    assert found is not None and found.periods == 1 + in_flight
    assert found.correlation == pytest.approx(1.0, abs=1e-9)


@requires_rclpy
@pytest.mark.parametrize(
    ("periods", "command_delay", "warned"),
    [(5, 0.005, False), (5, 0.0044, False), (4, 0.0044, True), (3, 0.005, True), (1, 0.001, False)],
)
def test_the_warning_counts_command_delay_in_periods_rounded_up(
    periods: int, command_delay: float, warned: bool
) -> None:
    """``command_delay`` runs to the first state that shows the command: 4.4 ms is the fifth
    period, as the start-up checks count it."""
    from torque_ctrl_ros.core.delay_estimate import DelayEstimate
    from torque_ctrl_ros.nodes.controller_diagnostics import delay_warning

    warning = delay_warning(DelayEstimate(periods, periods * 1e-3, 0.9, 900), command_delay)
    assert bool(warning) is warned, warning
    assert delay_warning(None, command_delay) == ""


@pytest.mark.parametrize(
    ("periods", "step", "warned"),
    [
        (6, 0.002, False),
        (7, 0.002, True),
        (8, 0.004, False),
        (9, 0.004, True),
        (6, math.nan, True),
        (4, 0.002, True),
    ],
)
def test_on_a_slower_stream_the_estimate_comes_in_whole_steps(
    periods: int, step: float, warned: bool
) -> None:
    """A 5 ms path (the fifth period shows it) reads 6 ms at 500 Hz and 8 ms at 250 Hz, commands and
    efforts existing once per state: no other delay, no warning (a review's simulator-exact runs)."""
    from torque_ctrl_ros.core.delay_estimate import DelayEstimate
    from torque_ctrl_ros.nodes.controller_diagnostics import delay_warning

    warning = delay_warning(DelayEstimate(periods, periods * 1e-3, 0.9, 900), 0.005, step)
    assert bool(warning) is warned, warning


@requires_rclpy
@pytest.mark.ros
@pytest.mark.parametrize(
    ("sim_delay", "warned", "serialized"), [(0.005, False, True), (0.003, True, True), (0.003, True, False)]
)
def test_the_controller_node_reports_the_delay_the_efforts_show(
    launch: Any,  # noqa: F811 - pytest fixtures
    probe: Probe,  # noqa: F811
    tmp_path: Path,
    sim_delay: float,
    warned: bool,
    serialized: bool,
) -> None:
    """Lockstep over DDS along a trajectory, the controller told 5 ms: with the simulator 5 ms
    late its summary reads 5 ms and nothing is said; 3 ms late it reads 3 and warns, naming both
    (states read as CDR bytes or, ``serialized_io: false``, as rclpy messages)."""
    plant = MujocoPlant(SCENE)
    plant.reset("home")
    msg = _trajectory_message(plant.q, list(plant.joint_names))
    out = run_lockstep_pair(
        launch,
        tmp_path,
        1.5,
        _trajectory_sender(probe, msg),
        sim_params={"command_delay": sim_delay},
        controller="computed_torque",
        command_delay=0.005,
        serialized_io=serialized,
        stats_file=str(tmp_path / "controller.json"),
    )
    ctrl = out["controller"]
    assert ctrl.stop() == 0, ctrl.log_path.read_text()
    log = ctrl.log_path.read_text()
    summary = json.loads((tmp_path / "controller.json").read_text())
    print(
        f"\n[delay] simulator {sim_delay * 1e3:g} ms: the controller read {summary['measured_delay_ms']} ms"
    )
    assert summary["measured_delay_ms"] == pytest.approx(sim_delay * 1e3)
    assert summary["measured_delay_correlation"] > 0.999
    warning = "efforts show each command 3 ms after the state it answers"
    assert (warning in log) is warned, log
    if warned:
        assert "command_delay says 5 ms" in log
