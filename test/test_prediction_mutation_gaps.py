"""Mutation gaps of the delay prediction (core/prediction.py, core/supervisor.py, sim/commands.py).

Pins what test/test_prediction.py and test/test_sim_commands.py left open:

- ``commands_in_flight`` rounds ``command_delay / period`` up (a delay a little short of five
  periods is still four in flight, not three; a little over two is two) and never goes below 0
  (a delay shorter than a period, as a simulator with a coarser step than the controller's gets);
- the supervisor predicts nothing unless told to (``predict_delay`` defaults to ``False``);
- a clock gone back (a restarted simulator) forgets the commands sent, like a controller reset;
- a resume the resume tracker calls unbroken (a silence on the caller's clock alone, the stamps
  going on) keeps them: the arm went on under them;
- a :class:`DelayLine` slot a step without a command went through comes out empty even when it
  held a command before (the gap in the test of test_sim_commands.py hit a slot never filled);
- the parameters' defaults: ``controller_node.predict_delay`` on (the shipped files all set it),
  ``sim_node.command_delay`` one step;
- the simulator's step with ``command_delay`` 5 ms: each step's command reaches the plant four
  steps later, the safe torque (flagged) while none arrives, and ``missing_command_steps`` counts
  the steps without a command decided, not those the line had not delivered yet;
- ``predicted_commands`` on the controller node's /diagnostics (the summary's was pinned).
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from ros_helpers import in_process_controllers, in_process_sim, requires_rclpy, ros_domain  # noqa: F401

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.prediction import commands_in_flight, forward_step
from torque_ctrl_ros.core.resume import ResumeKind
from torque_ctrl_ros.core.safety import DEFAULT_DAMPING, Action, WatchdogConfig, WatchdogState
from torque_ctrl_ros.core.supervisor import Decision, Supervisor
from torque_ctrl_ros.nodes.params import (
    ControllerNodeConfig,
    SimNodeConfig,
    controller_node_config,
    sim_node_config,
)
from torque_ctrl_ros.sim.commands import DelayLine

ROOT = Path(__file__).resolve().parent.parent
Q0 = np.array([0.1, 0.6, -0.2, 1.2, 0.1, -0.4, 0.3])
V0 = np.array([0.3, -0.2, 0.4, 0.5, 0.6, -0.5, 0.5])
H = 1e-3
T0 = 1000.0


def _torques(robot: RobotModel, count: int, seed: int = 0) -> list[np.ndarray]:
    """``count`` distinct commands near gravity at ``Q0`` (N·m)."""
    rng = np.random.default_rng(seed)
    return [robot.gravity(Q0) + rng.uniform(-3.0, 3.0, robot.n) for _ in range(count)]


def _by_hand(robot: RobotModel, coast: int, torques: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """From ``(Q0, V0)``: ``coast`` periods at constant velocity, then one forward step per torque."""
    q, v = Q0 + coast * H * V0, V0.copy()
    data = robot.model.createData()
    for tau in torques:
        forward_step(robot, data, q, v, tau, H)
    return q, v


def _predicting(robot: RobotModel, **config: float) -> Supervisor:
    """A supervisor 5 ms late (four commands in flight) that predicts the delay."""
    robot.set_command_delay(0.005)
    sup = Supervisor(robot, WatchdogConfig.create(**config), np.array(DEFAULT_DAMPING), predict_delay=True)
    assert sup.predictor.in_flight == 4
    return sup


def _computed(sup: Supervisor, t: float, tau: np.ndarray) -> Decision:
    """A good state ``(Q0, V0)`` stamped and received at ``t``, answered with ``tau``."""
    decision = sup.step(Q0, V0, t, t)
    assert decision.action is Action.COMPUTE
    sup.command_computed(tau)
    return decision


# ---------------------------------------------------------------- commands_in_flight
def test_the_count_in_flight_is_rounded_up_not_down() -> None:
    """4.9 ms is five periods from a state to the first that shows its answer, less the one the
    answer acts in: four. 2.1 ms shows first in the third: two, as the start-up checks count it;
    a delay a rounding error over whole periods stays at them."""
    assert commands_in_flight(0.0049) == 4
    assert commands_in_flight(0.0021) == 2
    assert commands_in_flight(370 * 0.0001) == 36  # 0.037000000000000005 s


def test_a_delay_shorter_than_half_a_period_has_nothing_in_flight() -> None:
    """A 1 ms delay on a 2 ms step is one period: none in flight, never -1 (which a
    :class:`DelayLine` or a predictor would refuse)."""
    assert commands_in_flight(0.001, 0.002) == 0
    assert DelayLine(7, commands_in_flight(0.001, 0.002)).periods == 0


# ---------------------------------------------------------------- the supervisor
def test_the_supervisor_predicts_nothing_unless_told_to(robot: RobotModel) -> None:
    robot.set_command_delay(0.005)
    sup = Supervisor(robot, WatchdogConfig.create(), np.array(DEFAULT_DAMPING))
    assert sup.predictor.in_flight == 0
    decision = sup.step(Q0, V0, T0, T0)
    assert decision.state is not None
    np.testing.assert_array_equal(decision.state.q, Q0)


def test_a_clock_gone_back_forgets_the_commands_sent(robot: RobotModel) -> None:
    """A restarted simulator: the commands sent went to the arm before the restart, not to the
    one the state comes from; the first state on the new clock coasts over all four."""
    sup = _predicting(robot)
    for k, tau in enumerate(_torques(robot, 4, seed=3)):
        _computed(sup, T0 + k * H, tau)
    decision = sup.step(Q0, V0, 5.0, 5.0)
    assert decision.clock_reset and decision.action is Action.COMPUTE and decision.state is not None
    np.testing.assert_allclose(decision.state.q, Q0 + 4 * H * V0, atol=1e-15)
    np.testing.assert_array_equal(decision.state.v, V0)


def test_an_unbroken_resume_keeps_the_commands_sent(robot: RobotModel) -> None:
    """Both processes stalled under sim time: the steady clock's silence put the watchdog in
    fallback while the stamps stood; no safe command went out, and the next state (one period on)
    is carried over the four commands last sent, not at constant velocity."""
    sup = _predicting(robot, max_age=0.02, fallback_duration=0.5)
    sent = _torques(robot, 20, seed=4)
    last = T0
    for k, tau in enumerate(sent):
        last = T0 + k * H
        _computed(sup, last, tau)
    sup.silence(last, 0.06)
    assert sup.watchdog.state is WatchdogState.FALLBACK
    decision = sup.step(Q0, V0, last + H, last + H)
    assert decision.action is Action.COMPUTE and not decision.reset_controller
    assert decision.resume.kind is ResumeKind.KEEP and decision.resume.unbroken
    assert decision.state is not None
    q_ref, v_ref = _by_hand(robot, 0, sent[-4:])
    np.testing.assert_allclose(decision.state.q, q_ref, atol=1e-15)
    np.testing.assert_allclose(decision.state.v, v_ref, atol=1e-13)
    assert np.abs(v_ref - V0).max() > 1e-3  # the commands show, coasting would not


# ---------------------------------------------------------------- the delay line
@pytest.mark.parametrize("periods", [1, 2, 4])
def test_a_step_without_a_command_empties_a_slot_that_held_one(periods: int) -> None:
    """Every slot filled, then a round of steps without a command: after the commands still in
    the line come out, nothing does (the slots' old commands are not handed on again)."""
    line = DelayLine(7, periods)
    outs: list[float | None] = []
    inputs: list[float | None] = [float(k + 1) for k in range(periods)] + [None] * (2 * periods)
    for value in inputs:
        out = line.pass_on(None if value is None else np.full(7, value))
        outs.append(None if out is None else float(out[0]))
    expected = [None] * periods + [float(k + 1) for k in range(periods)] + [None] * periods
    assert outs == expected


# ---------------------------------------------------------------- parameters
def test_the_controller_node_predicts_the_delay_by_default() -> None:
    """Not set in the parameters: on (the shipped YAML files set it, so their tests do not see
    the default)."""
    assert controller_node_config({}).predict_delay is True
    assert {f.name: f.default for f in fields(ControllerNodeConfig)}["predict_delay"] is True


def test_the_simulator_applies_each_command_one_step_after_its_state_by_default() -> None:
    assert sim_node_config({}).command_delay == 0.001
    assert {f.name: f.default for f in fields(SimNodeConfig)}["command_delay"] == 0.001
    assert sim_node_config({"command_delay": 0.005}).command_delay == 0.005


# ---------------------------------------------------------------- the nodes
@requires_rclpy
def test_the_simulator_five_ms_late_hands_each_step_its_command_four_steps_on(
    ros_domain: int,  # noqa: F811
) -> None:
    """Each step's command (here ``k`` N·m on every joint at step ``k``, a step without one at
    step 5) drives the plant four steps later; the four first steps and the one the missing
    command would have driven get the safe torque, flagged. Only the step without a command is
    a missing one: the first four had theirs, on the way."""
    with in_process_sim(ros_domain, mode="lockstep", wait_for_controller=False, command_delay=0.005) as sim:
        assert sim.delay_line.periods == 4
        applied: list[float | None] = []
        for k in range(11):
            sim.commands.tau[:] = float(k)
            sim._step(k != 5)
            applied.append(None if sim.safe_active else float(sim.plant.tau_applied[0]))
            if not sim.safe_active:
                np.testing.assert_allclose(sim.plant.tau_applied, float(k - 4), atol=1e-9)
        assert sim.counts.missing_command_steps == 1
    assert applied == [None, None, None, None, 0.0, 1.0, 2.0, 3.0, 4.0, None, 6.0]


@requires_rclpy
def test_the_controller_node_says_how_many_commands_it_predicts_over_on_diagnostics(
    ros_domain: int,  # noqa: F811
) -> None:
    with in_process_controllers(ros_domain) as make:
        node: Any = make(ROOT / "config" / "gen3_hardware.yaml", controller="gravity_comp")
        values = node._diagnostic_values(1.0, 0.0, 0.001, 1)
        assert values["predicted_commands"] == 4
