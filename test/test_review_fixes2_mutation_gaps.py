"""Behaviours of a second day's review fixes that a mutation review found unpinned.

Modules reviewed (the lines changed by the fixes): :mod:`torque_ctrl_ros.core.braking`
(``SafeBrake.held_past_timeout``, the command timeout) and :mod:`torque_ctrl_ros.core.supervisor`
(the fallback window ended past the command timeout, by the brake's clock or the stamps' gap),
:mod:`torque_ctrl_ros.core.safety` (the unstamped hint), :mod:`torque_ctrl_ros.core.approach`
(``MAX_STOP_OVERSPEED``, ``_within_speed``, ``_stop_point``, ``_reach_toward_rest``),
:mod:`torque_ctrl_ros.core.trajectory` (``position_range``, ``check_motion``'s ``velocity_limit``),
:mod:`torque_ctrl_ros.core.target_tracking` (the stop's warning),
:mod:`torque_ctrl_ros.core.constrained_dynamics` (``d_ref``), :mod:`torque_ctrl_ros.core.controllers`
(``check_pose_error_axes``, the torque's shape, qpid's ``LOWER_WARM_MAX_ITER`` and ``qp_replay``),
:mod:`torque_ctrl_ros.core.qp.problem` (``warm_max_iter``, ``WarmReplay``),
:mod:`torque_ctrl_ros.core.qp.collision` (the normal's sign), :mod:`torque_ctrl_ros.nodes.targets`
(``too_many_names``), :mod:`torque_ctrl_ros.nodes.params` (``_read_yaml``, ``_sections``,
``check_layer_wins``), ``launch/hardware_gen3.launch.py`` (``_check``) and
:mod:`torque_ctrl_ros.nodes.sim_node` (``_write_record``). Each test names the behaviour it pins
and the source change (mutant) it was written to catch.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_approach_acceleration import HOME_Q, _planner
from test_launch_files import SHIPPED, evaluate, fake_launch  # noqa: F401
from test_supervisor import DT, NAN, Q0, V0, _run, _supervisor

from torque_ctrl_ros.core import RobotModel, TargetError
from torque_ctrl_ros.core.approach import MAX_STOP_OVERSPEED
from torque_ctrl_ros.core.constrained_dynamics import ConstrainedDynamics
from torque_ctrl_ros.core.controllers.cartesian import check_pose_error_axes
from torque_ctrl_ros.core.controllers.qpid import HQPID, LOWER_WARM_MAX_ITER
from torque_ctrl_ros.core.errors import ConfigError, SolverError
from torque_ctrl_ros.core.qp.problem import DenseQP, ProblemData, WarmReplay
from torque_ctrl_ros.core.safety import Action, WatchdogState
from torque_ctrl_ros.nodes.params import file_parameters

NAN_STAMP = float("nan")


# ------------------------------------------------------------ supervisor / braking: the timeout
@pytest.mark.parametrize("gap_ms", [50, 51])
def test_a_gap_of_exactly_the_command_timeout_still_brakes(robot: RobotModel, gap_ms: int) -> None:
    """A refused state 50 ms (FIRST_HOLD_PERIODS) after the first safe command is still within
    the command timeout (a driver applies a command on every step that starts within it): the
    fallback answers it. 51 ms after, the window ends. (Mutant: ``gap > self.timeout`` in
    ``held_past_timeout`` made ``>=``.)"""
    sup = _supervisor(robot)
    t = _run(sup, 50) + DT
    assert sup.step(NAN, V0, t, t).command is not None
    t += gap_ms * 1e-3
    decision = sup.step(NAN, V0, t, t)
    if gap_ms == 50:
        assert decision.action is Action.FALLBACK and decision.command is not None
        assert sup.watchdog.state is WatchdogState.FALLBACK
    else:
        assert decision.action is Action.NONE and sup.watchdog.state is WatchdogState.STOPPED


def test_a_prediction_at_its_horizon_is_no_command_held_past_the_timeout(robot: RobotModel) -> None:
    """Refused states stamped 30 ms apart on a clock running 1 ms a step: the stamps run the
    brake's prediction (each step counted up to max_age) to its horizon (fallback_duration, 500
    periods) in 25 steps, long before the window's 0.5 s on the clock. There the prediction stops
    (the arm predicted held) and no longer advances its time: the fallback keeps answering
    every state until the window ends, none read as a command out past the 50 ms timeout.
    (Mutant: ``or self.k >= self.max_periods`` dropped from ``held_past_timeout``.)"""
    sup = _supervisor(robot)
    t = _run(sup, 50) + DT
    stamp = t
    for _ in range(40):
        decision = sup.step(NAN, V0, stamp, t)
        assert decision.action is Action.FALLBACK and decision.command is not None
        t += DT
        stamp += 0.03
    assert sup.brake.k == sup.brake.max_periods
    assert sup.watchdog.state is WatchdogState.FALLBACK


def test_a_new_fallback_window_counts_no_gap_from_the_last_ones_commands(robot: RobotModel) -> None:
    """The controller fails on a good state (a safe command), the stream runs on good for 100 ms,
    then the controller fails again: the second window's first safe command is answered, the
    stamps' gap counted from this window's commands only, not from the last window's 100 ms
    before. (Mutant: ``self._last_safe_gap_stamp = math.nan`` dropped from the brake's start.)"""
    sup = _supervisor(robot)
    t = _run(sup, 50)
    for _ in range(2):
        t += DT
        computing = sup.step(Q0 + 0.01, V0, t, t)
        assert computing.action is Action.COMPUTE
        decision = sup.controller_failed(computing, SolverError("no solution"), t)
        assert decision.action is Action.FALLBACK and decision.command is not None
        t = _run(sup, 100, t + DT)
    assert sup.watchdog.state is WatchdogState.OK


def test_a_stamp_behind_does_not_move_the_stamps_gap_back(robot: RobotModel) -> None:
    """In a fallback, a refused state stamped 1 ms ahead of the clock, then one stamped far
    behind (each counted within a period of the clock): the gap in the stamps runs from the
    newest counted (1 ms ahead), not back from the one behind, so a state 50 ms after that
    newest one is still within the command timeout. (Mutant: the ``not self._gap_stamp <
    self._last_safe_gap_stamp`` guard dropped: the last safe command's stamp went back.)"""
    sup = _supervisor(robot)
    t = _run(sup, 50) + DT
    assert sup.step(NAN, V0, t + DT, t).command is not None  # 1 ms ahead
    assert sup.step(NAN, V0, t - 1.0, t + DT).command is not None  # 1 s behind
    decision = sup.step(NAN, V0, t + 0.051, t + 0.051)
    assert decision.action is Action.FALLBACK and decision.command is not None
    assert sup.watchdog.state is WatchdogState.FALLBACK


@pytest.mark.parametrize(("gap_ms", "stops"), [(50.4, False), (50.6, True), (200.0, True)])
def test_unstamped_refused_states_end_the_window_by_the_brakes_clock(
    robot: RobotModel, gap_ms: float, stops: bool
) -> None:
    """Refused states with no stamp (NaN: no gap in the stamps to count) still end the fallback
    window when the caller's clock has run past the command timeout since the last safe command,
    counted in whole periods as the brake's prediction counts them (50.4 ms: 50 periods, within;
    50.6: 51, past). (Mutants: ``held = 0`` for the brake's clock in ``_safe_command``;
    ``round`` made ``int`` in ``held_past_timeout``.)"""
    sup = _supervisor(robot)
    t = _run(sup, 50) + DT
    assert sup.step(NAN, V0, NAN_STAMP, t).command is not None
    decision = sup.step(NAN, V0, NAN_STAMP, t + gap_ms * 1e-3)
    if stops:
        assert decision.action is Action.NONE and decision.command is None
        assert sup.watchdog.state is WatchdogState.STOPPED
        assert decision.transition is not None
        assert f"no safe command for {round(gap_ms)} ms" in decision.transition.message
    else:
        assert decision.action is Action.FALLBACK and decision.command is not None


def test_stamps_run_on_a_clock_standing_still_end_the_window_past_the_timeout(robot: RobotModel) -> None:
    """With ``max_age`` 100 ms and the caller's clock standing still (sim time without /clock), a
    refused state stamped 80 ms after the last runs the brake's prediction 80 periods under its
    last command (the stamps' step, up to max_age): past the 50 ms command timeout, the window
    ends (the stamps' own gap, counted within a period of the standing clock, reads none).
    (Mutant: ``held_past_timeout(now)`` for ``held_past_timeout(self._brake_start + elapsed)``.)"""
    sup = _supervisor(robot, max_age=0.1)
    t = _run(sup, 50) + DT
    now = t
    assert sup.step(NAN, V0, t, now).command is not None
    assert sup.step(NAN, V0, t + DT, now).command is not None
    decision = sup.step(NAN, V0, t + 0.081, now)
    assert decision.action is Action.NONE and sup.watchdog.state is WatchdogState.STOPPED
    assert decision.transition is not None and "no safe command for 80 ms" in decision.transition.message


# ------------------------------------------------------------------ approach.py: joint stops
@pytest.mark.parametrize(("acceleration", "refused"), [(400.0, False), (800.0, True)])
def test_the_stop_overspeed_cap_is_fifteen_percent(
    robot: RobotModel, acceleration: float, refused: bool
) -> None:
    """joint_7 at 0.95 of its velocity limit speeding up: at 400 rad/s² the stop passing the limit
    least reaches 1.14 of it, within MAX_STOP_OVERSPEED (1.15), and runs; at 800 rad/s² it
    reaches 1.37 and is refused (the tracker holds the reference at once). (Mutant:
    ``MAX_STOP_OVERSPEED = 1.5``.)"""
    planner = _planner(robot, 100.0)
    v0, a0 = np.zeros(7), np.zeros(7)
    v0[6], a0[6] = 0.95 * robot.velocity_limit[6], acceleration
    if refused:
        with pytest.raises(TargetError, match=r"joint_7 at .* above its velocity limit"):
            planner.stop((HOME_Q.copy(), v0, a0))
        return
    stop = planner.stop((HOME_Q.copy(), v0, a0))
    speeds = np.abs([stop.sample(float(t))[1][6] for t in np.linspace(0.0, stop.duration, 401)])
    assert 1.0 < speeds.max() / robot.velocity_limit[6] < MAX_STOP_OVERSPEED


# ------------------------------------------------------------------ hardware launch: check_layer_wins
def _ending_with_wildcard(tmp_path: Path, text: str) -> Path:
    """The shipped parameter file with a ``/**:`` section of ``text`` at its end."""
    path = tmp_path / "params.yaml"
    path.write_text(SHIPPED.read_text() + "/**:\n  ros__parameters:\n" + text)
    return path


@pytest.mark.usefixtures("fake_launch")
def test_a_hardware_value_an_argument_sets_may_lose_to_a_wildcard(tmp_path: Path) -> None:
    """A ``params_file`` ending with ``/**: use_sim_time: true`` beats the hardware file's
    ``use_sim_time: false`` for the controller, but the launch's own overrides set
    ``use_sim_time`` false on purpose after every file: the launch is not refused for it, and the
    controller runs on the wall clock. (Mutants: ``exempt = ()`` in the launch's ``_check``;
    ``exempt`` ignored in ``check_layer_wins``.)"""
    params = _ending_with_wildcard(tmp_path, "    use_sim_time: true\n")
    read = evaluate("hardware_gen3.launch.py", params_file=str(params))["controller_node"]
    assert read.parameters("controller_node")["use_sim_time"] is False


@pytest.mark.usefixtures("fake_launch")
def test_a_hardware_value_lost_to_a_wildcard_is_taken_when_the_extra_file_sets_it(tmp_path: Path) -> None:
    """The ``params_file`` ending with ``/**: command_delay: 0.001`` is refused alone (the hardware
    file's 5 ms does not reach the controller), but taken with an ``extra_params_file`` that sets
    the controller's ``command_delay`` to the value it gets (1 ms): a value the user set on
    purpose after the hardware file. (Mutants: ``after = []`` in the launch's ``_check``;
    ``after`` ignored in ``check_layer_wins``.)"""
    params = _ending_with_wildcard(tmp_path, "    command_delay: 0.001\n")
    with pytest.raises(ConfigError, match=r"its values for /controller_node \['command_delay'\]"):
        evaluate("hardware_gen3.launch.py", params_file=str(params))
    extra = tmp_path / "extra.yaml"
    extra.write_text("controller_node:\n  ros__parameters:\n    command_delay: 0.001\n")
    read = evaluate("hardware_gen3.launch.py", params_file=str(params), extra_params_file=str(extra))
    assert read["controller_node"].parameters("controller_node")["command_delay"] == 0.001


def test_a_stop_from_an_acceleration_past_the_bound_is_shortened_within_that_acceleration(
    robot: RobotModel,
) -> None:
    """joint_1 at 0.95 of its velocity limit speeding up at 400 rad/s², far past its 25.9 rad/s²
    bound (a user's trajectory may ask it): the stops tried for the velocity limit are held to the
    start's own acceleration there, not to the bound no stop from it can keep; the one passing the
    limit least (1.11 of it, over ~11 ms) runs instead of a refusal. (Mutant: ``bound =
    self.acceleration_limit + LIMIT_TOLERANCE`` in ``_within_speed``, without ``|q̈₀|``.)"""
    planner = _planner(robot, 100.0)
    v0, a0 = np.zeros(7), np.zeros(7)
    v0[0], a0[0] = 0.95 * robot.velocity_limit[0], 400.0
    stop = planner.stop((HOME_Q.copy(), v0, a0))
    assert stop.duration < 0.02
    speeds = np.abs([stop.sample(float(t))[1][0] for t in np.linspace(0.0, stop.duration, 401)])
    assert 1.0 < speeds.max() / robot.velocity_limit[0] < MAX_STOP_OVERSPEED


# ------------------------------------------------------------------ constrained_dynamics.py: d_ref
def test_general_directions_take_the_largest_scale_of_their_columns(robot: RobotModel) -> None:
    """Two general columns near the stretched pose, a linear ``(0, 0.6, 0.8)`` (``D`` ~1e-11 along
    it) and an angular ``(0.6, 0.8)`` about ``ry, rz``: ``d_ref`` is the largest of the columns'
    ``Σ_i s_i·α_ij²`` (the angular one's, ~1.5e3), above ``d_max``, and ``ε`` is ``rcond`` times
    it. (Mutant: ``.max()`` made ``.min()`` over the columns on the general path.)"""
    dyn = ConstrainedDynamics(robot, "end_effector_link")
    alpha = np.array([[0.0, 0.6, 0.8, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.6, 0.8]]).T
    q = np.zeros(robot.n)
    q[[1, 3]] = 1e-6
    result = dyn.solve(q, np.zeros(robot.n), alpha, np.zeros(2))
    d_ref = float(dyn.axis_scale.dot(alpha * alpha).max())
    assert result.regularised
    assert result.damping == pytest.approx(1e-6 * d_ref, rel=1e-6)


# ------------------------------------------------------------------ qp/problem.py, qpid.py: warm caps
def _slow_warm_problems() -> list[ProblemData]:
    """The recorded middle level of a three-level hqpid (``test_qp_problem.py``): four problems
    whose last, warm-started from the first's preconditioner, takes 1 158 inner iterations."""
    data = np.load(Path(__file__).parent / "data" / "hqpid_slow_warm_solve.npz")
    empty_a, empty_b = np.zeros((0, 4)), np.zeros(0)
    return [
        (data["H"][k], data["g"][k], empty_a, empty_b, data["C"][k], data["l"][k], data["u"][k])
        for k in range(4)
    ]


def test_a_capped_warm_attempt_gives_the_cold_retry_the_full_iteration_caps_back() -> None:
    """After a warm attempt capped at ``warm_max_iter`` outer iterations of 50 inner ones, the
    solver's caps are ``max_iter`` and ``_MAX_ITER_IN`` (200) again, for the cold retry and every
    cold solve after it. (Mutant: the ``_limit_iterations(qp, self._max_iter, _MAX_ITER_IN)``
    after the capped warm solve dropped from ``DenseQP.solve``.)"""
    problems = _slow_warm_problems()
    qp = DenseQP(4, 0, 32, eps_abs=1e-9, max_iter=50, known_feasible=True, warm_max_iter=10)
    for H, g, _, _, C, lo, hi in problems:
        qp.H[...], qp.g[...], qp.C[...], qp.l[...], qp.u[...] = H, g, C, lo, hi
        solution = qp.solve()
    assert solution.ok and solution.warm and solution.retried
    settings = qp._qp.settings
    assert (settings.max_iter, settings.max_iter_in) == (50, 200)


def test_a_warm_replay_caps_its_warm_attempts_as_the_level_does() -> None:
    """:class:`WarmReplay` with ``warm_max_iter`` 10 (as qp_replay passes a lower hqpid level's):
    the slow warm solve stops at its cap and the cold retry solves it in a few iterations, as the
    controller's solve does, where uncapped the replay's floor took 1 158; its caps are back after.
    (Mutant: ``WarmReplay.__call__`` solving warm uncapped.)"""
    replay = WarmReplay(
        _slow_warm_problems(), eps_abs=1e-9, max_iter=50, strict_infeasibility=True, warm_max_iter=10
    )
    for k in range(4):
        replay(k)
    assert replay.iterations < 100
    np.testing.assert_allclose(replay.x, [18.02659, 5.90313, -21.42939, -10.98508], atol=1e-4)
    assert (replay._qp.settings.max_iter, replay._qp.settings.max_iter_in) == (50, 200)


def test_a_warm_cap_below_one_is_refused() -> None:
    """``warm_max_iter`` 0 caps no attempt at all: refused like ``max_iter`` 0; 1 is taken.
    (Mutant: ``int(warm_max_iter) < 1`` made ``< 0``.)"""
    with pytest.raises(ConfigError, match="warm_max_iter must be >= 1 or None, got 0"):
        DenseQP(2, 0, 1, warm_max_iter=0)
    assert DenseQP(2, 0, 1, warm_max_iter=1).warm_max_iter == 1


def test_the_benchmark_replay_caps_a_lower_levels_warm_attempts_as_the_level_does(robot: RobotModel) -> None:
    """A two-level hqpid's lower level caps its warm attempts at LOWER_WARM_MAX_ITER; the replay
    of its recorded problems (``qp_replay``, the benchmark's QP floor) caps them the same, or the
    floor would be the uncapped solve's. (Mutant: ``warm_max_iter`` not passed to the replay in
    ``qp_replay``.)"""
    params = {
        "tasks": ["pos", "posture"],
        **{"pos.type": "position", "pos.frame": "end_effector_link", "pos.level": 0},
        **{"posture.type": "posture", "posture.kp": 10.0, "posture.level": 1},
    }
    c = HQPID.from_params(robot, params)
    assert c.levels[1].qp.warm_max_iter == LOWER_WARM_MAX_ITER
    qs = np.tile(HOME_Q, (2, 1))
    replays = c.qp_replay(qs, np.zeros_like(qs))
    assert [r._warm_max_iter for r in replays.replays] == [None, LOWER_WARM_MAX_ITER]


# ------------------------------------------------------------------ cartesian.py: se3's axes
@pytest.mark.parametrize(
    ("axes", "why"),
    [
        (["x", "y", "z", "rx", "ry"], r"the translation rows \['x', 'y', 'z'\] mix in: .* unstable"),
        (["rx", "ry"], r"on angular axes alone it is the 'decoupled' error"),
    ],
)
def test_an_se3_refusal_says_why_for_the_axes_given(robot: RobotModel, axes: list[str], why: str) -> None:
    """``se3`` refused with a free rotation axis: with translation rows constrained the message
    says that nothing regulates the rotation error they mix in (naming them); with angular rows
    alone, that it is the ``decoupled`` error there. (Mutant: ``if constrained_linear`` made
    ``if not constrained_linear`` in ``check_pose_error_axes``.)"""
    with pytest.raises(ConfigError, match=why):
        check_pose_error_axes("se3", axes)


# ------------------------------------------------------------------ params.py: _sections
def test_a_nodes_section_beside_a_wildcards_parameters_reaches_it_in_any_namespace(tmp_path: Path) -> None:
    """``/**: {ros__parameters: …, controller_node: …}`` is read as rcl reads it, two sections:
    ``/**`` and ``/**/controller_node``, the second reaching a controller_node in any namespace
    (``/arm/controller_node`` too), not only the one at the root. (Mutant: the sibling sections
    named under the enclosing prefix instead of ``/**``.)"""
    path = tmp_path / "beside.yaml"
    path.write_text(
        "/**:\n  ros__parameters:\n    qos_depth: 10\n"
        "  controller_node:\n    ros__parameters:\n      controller: qpid\n"
    )
    for node in ("/controller_node", "/arm/controller_node"):
        assert file_parameters([path], node) == {"qos_depth": 10, "controller": "qpid"}
