"""The simulator's rules for commands (``torque_ctrl_ros/sim/commands.py``), without ROS: each
:class:`Verdict`, what it does to the held command and to the current state's answer, and how
long a held command stays fresh."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from torque_ctrl_ros.sim.commands import CommandRules, DelayLine, Verdict

N = 7
DT = 1_000_000  # ns: the simulator's 1 ms step
T0 = 5 * 10**9  # ns: state 0's stamp
TIMEOUT = 0.01  # s: command_timeout, 10 steps


def stamp(k: int) -> int:
    """State ``k``'s stamp (ns)."""
    return T0 + k * DT


def rules(mode: str) -> CommandRules:
    return CommandRules(N, mode, DT, T0, TIMEOUT)


def tau(value: float) -> np.ndarray:
    return np.full(N, value)


def test_realtime_an_answer_to_the_current_state_is_held_and_answers_it() -> None:
    r = rules("realtime")
    sent = tau(1.5)
    assert r.offer(stamp(3), sent, 3) is Verdict.ACCEPTED
    assert r.held and r.held_k == 3 and r.held_stamp == stamp(3)
    assert r.answered and r.answered_validly
    sent[:] = 0.0  # held as a copy: the sender's buffer may be reused
    np.testing.assert_array_equal(r.tau, tau(1.5))
    r.new_state()
    assert not r.answered and not r.answered_validly and r.held  # the next state waits for its answer


def test_realtime_an_answer_to_a_recent_state_is_held_without_answering_the_current_one() -> None:
    r = rules("realtime")
    assert r.offer(stamp(90), tau(1.0), 100) is Verdict.ACCEPTED  # 10 steps: exactly the timeout
    assert r.held and not r.answered


def test_realtime_an_untagged_command_answers_the_current_state() -> None:
    r = rules("realtime")
    assert r.offer(None, tau(2.0), 40) is Verdict.ACCEPTED
    assert r.answered_validly and r.held_stamp is None and r.held_k == 40


def test_an_answer_older_than_the_timeout_is_stale_and_changes_nothing() -> None:
    r = rules("realtime")
    r.offer(stamp(95), tau(1.0), 100)
    assert r.offer(stamp(89), tau(9.0), 100) is Verdict.STALE  # 11 steps old
    np.testing.assert_array_equal(r.tau, tau(1.0))
    assert r.held and r.held_stamp == stamp(95) and not r.answered


def test_realtime_an_answer_to_an_older_state_after_a_newer_one_is_out_of_order() -> None:
    """The answer to state 5 held, a late answer to state 2 (within the timeout) comes after it:
    ignored, the newer answer still held; after a rejected answer to state 7 too (the order is
    the offers', taken or not); an untagged command or a second answer to the same state is
    taken. (Mutant: any answer within the timeout replaces the held one.)"""
    r = rules("realtime")
    assert r.offer(stamp(5), tau(1.0), 5) is Verdict.ACCEPTED
    assert r.offer(stamp(2), tau(-1.0), 5) is Verdict.OUT_OF_ORDER
    np.testing.assert_array_equal(r.tau, tau(1.0))
    assert r.held and r.held_stamp == stamp(5) and r.answered_validly
    assert r.offer(stamp(5), tau(2.0), 6) is Verdict.ACCEPTED  # a second answer to state 5
    assert r.offer(stamp(7), None, 7) is Verdict.REJECTED
    assert r.offer(stamp(6), tau(3.0), 7) is Verdict.OUT_OF_ORDER and not r.held
    assert r.offer(None, tau(4.0), 7) is Verdict.ACCEPTED and r.held


def test_an_answer_to_a_state_never_published_is_future() -> None:
    for mode in ("realtime", "lockstep"):
        r = rules(mode)
        assert r.offer(stamp(101), tau(1.0), 100) is Verdict.FUTURE, mode
        assert r.offer(stamp(100) + 1, tau(1.0), 100) is Verdict.FUTURE, mode  # 1 ns after the current
        assert not r.held and not r.answered


@pytest.mark.parametrize("mode", ["realtime", "lockstep"])
def test_an_answer_between_two_states_or_before_state_0_is_unpublished(mode: str) -> None:
    """No state of this simulator was stamped off the ``t0 + k·dt`` grid or before ``t0``: such
    an answer is ignored like one to a future state, also within ``command_timeout`` (realtime
    had held it and applied it)."""
    r = rules(mode)
    assert r.offer(stamp(5), tau(1.0), 5) is Verdict.ACCEPTED
    for bad, k in (
        (stamp(5) - DT // 2, 5),  # between states 4 and 5
        (stamp(4) + 1, 5),  # 1 ns after state 4
        (stamp(0) - DT, 5),  # where state -1 would have been, 6 steps back
        (stamp(0) - 1, 0),  # 1 ns before state 0, at state 0
    ):
        assert r.offer(bad, tau(9.0), k) is Verdict.UNPUBLISHED, (mode, bad - T0)
        assert r.offer(bad, None, k) is Verdict.UNPUBLISHED  # whatever its torques
    np.testing.assert_array_equal(r.tau, tau(1.0))
    assert r.held and r.held_stamp == stamp(5) and r.answered_validly


def test_lockstep_takes_only_the_answer_to_the_current_state() -> None:
    r = rules("lockstep")
    assert r.offer(None, tau(1.0), 5) is Verdict.UNTAGGED
    assert r.offer(stamp(4), tau(1.0), 5) is Verdict.EARLIER
    assert r.offer(stamp(0), tau(1.0), 5) is Verdict.EARLIER_START  # state 0, republished at start
    assert r.offer(stamp(1), tau(1.0), 1005) is Verdict.EARLIER  # no timeout in lockstep
    assert not r.held and not r.answered
    assert r.offer(stamp(5), tau(3.0), 5) is Verdict.ACCEPTED
    assert r.answered_validly
    np.testing.assert_array_equal(r.tau, tau(3.0))
    # Only a stamp beyond the int64 range of ages (a wild one, centuries old) is stale.
    assert r.offer(stamp(5) - 2**63, tau(1.0), 5) is Verdict.STALE


def test_invalid_torques_are_rejected_drop_the_held_command_and_answer_invalidly() -> None:
    r = rules("realtime")
    r.offer(stamp(10), tau(1.0), 10)
    r.new_state()
    assert r.offer(stamp(11), None, 11) is Verdict.REJECTED
    assert not r.held and r.answered and not r.answered_validly
    assert not r.fresh(11)  # the plant gets the safe torque, not the previous command
    # Rejected as an answer to an earlier state: dropped, and the current state still unanswered.
    r.new_state()
    r.offer(stamp(12), tau(1.0), 12)
    r.new_state()
    assert r.offer(stamp(12), None, 13) is Verdict.REJECTED
    assert not r.held and not r.answered


def test_checks_of_the_stamp_come_before_the_torques() -> None:
    """An ignored command is ignored whatever its torques: it is not counted as rejected and
    leaves the held command."""
    r = rules("realtime")
    r.offer(stamp(100), tau(1.0), 100)
    assert r.offer(stamp(50), None, 100) is Verdict.STALE
    assert r.offer(stamp(150), None, 100) is Verdict.FUTURE
    assert r.held
    lock = rules("lockstep")
    assert lock.offer(None, None, 3) is Verdict.UNTAGGED
    assert lock.offer(stamp(2), None, 3) is Verdict.EARLIER


def test_an_unreadable_command_drops_the_held_one_and_answers_nothing() -> None:
    r = rules("lockstep")
    r.offer(stamp(0), tau(1.0), 0)
    r.new_state()
    r.drop()
    assert not r.held and not r.answered  # a lockstep wait goes on


def test_a_tagged_command_is_fresh_until_its_state_is_command_timeout_old() -> None:
    r = rules("realtime")
    r.offer(stamp(95), tau(1.0), 100)
    assert r.fresh(100) and r.fresh(105)
    assert not r.fresh(106)  # its state is 11 steps old (arrived 6 steps ago)


def test_an_untagged_command_is_fresh_for_command_timeout_since_it_came() -> None:
    r = rules("realtime")
    r.offer(None, tau(1.0), 100)
    assert r.fresh(100) and r.fresh(110)
    assert not r.fresh(111)


def test_nothing_held_is_not_fresh() -> None:
    r = rules("realtime")
    assert not r.fresh(0)


def test_an_unknown_mode_is_refused_naming_the_valid_ones() -> None:
    with pytest.raises(ValueError, match=r"'paced'.*\['realtime', 'lockstep'\]"):
        CommandRules(N, "paced", DT, T0, TIMEOUT)


@pytest.mark.parametrize(
    ("n", "dt_ns", "timeout", "match"),
    [
        (0, DT, TIMEOUT, "n = 0 joints"),
        (N, 0, TIMEOUT, "dt_ns = 0 ns"),  # every step had state 0's stamp
        (N, -DT, TIMEOUT, "must be positive"),  # an answer to the previous state was FUTURE
        (N, DT, 0.0, "command_timeout = 0.0 s"),  # no command fresh a step after it came
        (N, DT, -0.05, "positive finite"),
        (N, DT, float("nan"), "command_timeout = nan s"),  # was "cannot convert float NaN to integer"
        (N, DT, float("inf"), "command_timeout = inf s"),  # was an OverflowError naming nothing
    ],
)
def test_bad_arguments_are_refused_naming_them(n: int, dt_ns: int, timeout: float, match: str) -> None:
    """The node validates its parameters first; a direct caller of the rules gets a refusal naming
    the argument rather than rules that misjudge every command (the cases' comments: before)."""
    with pytest.raises(ValueError, match=match):
        CommandRules(n, "realtime", dt_ns, T0, timeout)


def test_lockstep_does_not_read_the_command_timeout() -> None:
    """Lockstep never holds a command past its state, so its timeout is not checked."""
    assert CommandRules(N, "lockstep", DT, T0, float("nan")).lockstep


def test_the_rules_load_no_ros() -> None:
    """Nor MuJoCo: the node parameters take the modes from here, and the controller node has no
    use for the simulator."""
    code = (
        "import sys, torque_ctrl_ros.sim.commands\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('rclpy', 'mujoco')]\n"
        "print(bad); sys.exit(1 if bad else 0)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


# ---------------------------------------------------------------- the commands' way to the plant
def test_without_delay_the_line_passes_each_command_itself() -> None:
    line = DelayLine(N, 0)
    command = tau(1.0)
    assert line.pass_on(command) is command and line.pass_on(None) is None


def test_the_line_hands_each_command_on_its_periods_later_with_its_gaps() -> None:
    """Three steps long: nothing out for the first three steps, then what went in three steps
    before, a step without a command (``None``) coming out as such in its turn; the values are
    copies, not the caller's buffer."""
    line = DelayLine(N, 3)
    inputs: list[float | None] = [1.0, 2.0, None, 4.0, 5.0, 6.0, None, None]
    buffer = np.zeros(N)
    outs: list[float | None] = []
    for value in inputs:
        if value is None:
            out = line.pass_on(None)
        else:
            buffer[:] = value  # one buffer reused, as the simulator's held command is
            out = line.pass_on(buffer)
        outs.append(None if out is None else float(out[0]))
        if out is not None:
            assert out is not buffer and np.all(out == out[0])
    assert outs == [None, None, None, 1.0, 2.0, None, 4.0, 5.0]


def test_a_negative_delay_line_is_refused() -> None:
    with pytest.raises(ValueError, match="periods"):
        DelayLine(N, -1)
