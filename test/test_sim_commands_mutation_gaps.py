"""Behaviour a mutation review of ``sim/commands.py`` (which command the simulator applies, for how
long, and which answer ends a state's wait) found unpinned by the tests that run without ROS: each
test here failed on one hand-made fault in the module (the mutant its docstring names) while the
ROS-free tests passed on it. No ROS, no MuJoCo: the rules alone, with the step, stamps and timeout
of ``test_sim_commands.py`` (1 ms steps, ``command_timeout`` 10 steps).
"""

from __future__ import annotations

import numpy as np
import pytest
from test_sim_commands import rules, stamp, tau

from torque_ctrl_ros.sim.commands import Verdict


def test_lockstep_an_invalid_answer_to_the_current_state_ends_its_wait_on_the_safe_torque() -> None:
    """In lockstep a rejected answer to the current state answers it, invalidly (module docstring,
    REJECTED): the state's wait ends and its step runs on the safe torque, and the command held
    before is not applied. (Mutant: a rejected answer marks the state answered in realtime only:
    the simulator went on waiting up to ``lockstep_timeout`` for another answer to the state.)"""
    r = rules("lockstep")
    assert r.offer(stamp(4), tau(1.0), 4) is Verdict.ACCEPTED
    r.new_state()
    assert r.offer(stamp(5), None, 5) is Verdict.REJECTED
    assert r.answered and not r.answered_validly
    assert not r.held


def test_an_untagged_command_after_a_tagged_one_is_held_for_command_timeout_from_its_arrival() -> None:
    """An untagged command answers the current state whatever the held command answered: it is
    held for ``command_timeout`` since it came, not until the state of the tagged command it
    replaced is ``command_timeout`` old. (Mutant: an untagged command keeps the held command's
    stamp: it fell to the safe torque 9 steps early. Pinned until now only by a ROS node test.)"""
    r = rules("realtime")
    assert r.offer(stamp(95), tau(1.0), 100) is Verdict.ACCEPTED  # its state expires after step 105
    assert r.offer(None, tau(2.0), 104) is Verdict.ACCEPTED
    assert r.held_stamp is None
    assert r.fresh(106) and r.fresh(114)
    assert not r.fresh(115)
    np.testing.assert_array_equal(r.tau, tau(2.0))


@pytest.mark.parametrize("mode", ["realtime", "lockstep"])
def test_a_valid_answer_after_an_invalid_one_answers_the_state_validly(mode: str) -> None:
    """A valid answer to the current state after a rejected one replaces it: the state is answered
    validly and the new command drives the step. (Mutant: only the first answer to a state sets
    how it was answered: the state stayed answered invalidly, on the safe torque in lockstep and
    counted late in realtime, with a valid command held. Pinned until now only by a ROS node
    test.)"""
    r = rules(mode)
    assert r.offer(stamp(7), None, 7) is Verdict.REJECTED
    assert r.offer(stamp(7), tau(1.0), 7) is Verdict.ACCEPTED
    assert r.answered_validly and r.held
    np.testing.assert_array_equal(r.tau, tau(1.0))
