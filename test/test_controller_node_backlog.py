"""The controller node back from being away (stopped, descheduled) under sim time: it takes the
states queued on its subscription and handles the newest, its target paused for the whole gap in
the stamps although its clock (from ``/clock``, queued alike) lags; in normal running it takes
nothing. The node is in this process, its callback called directly, its subscription's queue a
stand-in (what the executors hand over and what ``take_message`` returns)."""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from ros_helpers import (  # noqa: F401
    in_process_controllers,
    joint_state_msg,
    node_now,
    requires_rclpy,
    ros_domain,
    sim_clock,
    wait_until,
)

pytestmark = [pytest.mark.ros, requires_rclpy]

JOINTS = [f"joint_{i}" for i in range(1, 8)]
Q = np.array([0.1, 0.6, -0.2, 1.2, 0.1, -0.4, 0.3])
T0 = 1000.0
DT = 1e-3


def _state_msg(stamp: float) -> Any:
    return joint_state_msg(stamp, Q, JOINTS)


class Queue:
    """Stands in for the state subscription: ``take_message`` returns the queued messages, oldest
    first, then ``None``; counts every call."""

    def __init__(self, msg_type: Any) -> None:
        self.msg_type, self.raw = msg_type, False
        self.messages: deque[Any] = deque()
        self.takes = 0
        self.handle = self

    def __enter__(self) -> Queue:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def take_message(self, msg_type: Any, raw: bool) -> tuple[Any, dict[str, int]] | None:
        self.takes += 1
        return (self.messages.popleft(), {}) if self.messages else None


class Commands:
    def __init__(self) -> None:
        self.count = 0

    def publish(self, msg: Any) -> None:
        self.count += 1


@pytest.fixture
def node(ros_domain: int) -> Iterator[Any]:  # noqa: F811
    from sensor_msgs.msg import JointState as JointStateMsg

    with in_process_controllers(ros_domain) as make:
        made = make(use_sim_time=True, controller="computed_torque", serialized_io=False)
        made.publisher = Commands()
        made._state_sub = Queue(JointStateMsg)
        yield made


def _pauses(node: Any) -> list[tuple[float, float]]:
    pauses: list[tuple[float, float]] = []
    node.target.pause = lambda since, until: pauses.append((since, until))
    return pauses


def test_back_from_away_the_newest_queued_state_is_handled_and_the_target_pauses_for_the_gap(
    node: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = sim_clock(node)
    steady = [0.0]  # the node's steady clock (s): 1 ms between states, unless away

    def state(t: float) -> None:
        steady[0] += DT
        node._on_state_message(_state_msg(t))

    monkeypatch.setattr(time, "perf_counter", lambda: steady[0])
    pauses = _pauses(node)
    said: list[tuple[str, str]] = []
    node.log.warning = lambda key, message, **_: said.append((key, message))
    for k in range(20):  # normal running: nothing taken
        state(at(T0 + k * DT))
    assert node._state_sub.takes == 0
    last = T0 + 19 * DT
    # Away 0.3 s: the history holds the states of the last 10 ms; the clock reads the moment it left.
    steady[0] += 0.3
    queued = [last + 0.29 + k * DT for k in range(1, 11)]
    node._state_sub.messages.extend(_state_msg(t) for t in queued)
    state(last + DT)  # handed the oldest, the clock still where it left
    assert node.watchdog.last_good.stamp == pytest.approx(queued[-1])
    assert node.counts.backlog_skipped == 10
    assert node.counts.watchdog_fallbacks == 1  # the gap, as on the wall clock
    assert pauses == [pytest.approx((last, queued[-1]))]  # taking up where it stood
    assert node.counts.commands_published == 21
    assert node.supervisor.stream_period == pytest.approx(DT)  # the step over those skipped: not learnt
    # The stamps follow on from here, each state answered; the catch-up (a take per state, nothing
    # queued) ends once the node has been back as long as it was away: said once then.
    k = 0
    while node.catch_up.active:
        k += 1
        state(at(queued[-1] + k * DT))
        assert node.counts.commands_published == 21 + k
    assert 0.3 <= k * DT + DT <= 0.31
    assert [key for key, _ in said].count("backlog") == 1
    assert "skipped 10 queued states" in dict(said)["backlog"]
    takes = node._state_sub.takes
    for j in range(k + 1, k + 30):
        state(at(queued[-1] + j * DT))
    assert node._state_sub.takes == takes  # normal running again: no take
    assert node.counts.backlog_skipped == 10 and node.counts.commands_published == 21 + k + 29
    assert node.summary()["backlog_skipped"] == 10
    assert node._diagnostic_values(steady[0], 0.0, DT, 1)["backlog_skipped"] == 10


def _running(make: Any, serialized: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, list[float]]:
    """A computed-torque node under sim time, ``serialized_io`` as given, run as
    :func:`_run_normally` does."""
    node = make(use_sim_time=True, controller="computed_torque", serialized_io=serialized)
    node.publisher = Commands()
    return node, _run_normally(node, monkeypatch)[1]


def _run_normally(node: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, list[float]]:
    """Patch the node's steady clock to ``steady[0]`` (s) and hand it 20 states 1 ms apart (stamps
    from ``T0``, its sim clock set to each by ``at``); returns ``(at, steady)``."""
    at = sim_clock(node)
    steady = [0.0]
    monkeypatch.setattr(time, "perf_counter", lambda: steady[0])
    for k in range(20):
        steady[0] += DT
        node._on_state_message(_state_msg(at(T0 + k * DT)))
    return at, steady


@pytest.mark.parametrize("serialized", [True, False])
def test_the_states_are_taken_from_the_real_subscription(
    ros_domain: int,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    serialized: bool,
) -> None:
    """Over DDS: 15 states published while the node did not spin are held by its keep-last
    history (``qos_depth`` 10); handed one state after a silence, the node takes the 10 queued
    (as CDR bytes or as messages) and handles the newest."""
    from sensor_msgs.msg import JointState as JointStateMsg

    with in_process_controllers(ros_domain) as make:
        node, steady = _running(make, serialized, monkeypatch)
        sender = node.node.create_publisher(JointStateMsg, "/joint_states", 10)
        wait_until(lambda: sender.get_subscription_count() > 0, 10, "the node's state subscription")
        stamps = [T0 + 0.3 + k * DT for k in range(15)]
        for t in stamps:
            sender.publish(_state_msg(t))
        time.sleep(0.3)  # delivered into the history
        steady[0] += 0.3
        if serialized:
            from rclpy.serialization import serialize_message

            node._on_state_bytes(serialize_message(_state_msg(T0 + 20 * DT)))
        else:
            node._on_state_message(_state_msg(T0 + 20 * DT))
        assert node.counts.backlog_skipped == 10
        assert node.watchdog.last_good.stamp == pytest.approx(stamps[-1])


@pytest.mark.parametrize("serialized", [True, False])
def test_falling_behind_the_newest_queued_state_is_handled(
    ros_domain: int,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    serialized: bool,
) -> None:
    """A node whose handling of each state outlasts the stream's period, never away: the last
    handling is made to have taken 1.5 ms of its steady clock (the clock here stands still within
    a call), and three states are queued behind the one handed over. It handles the newest, so
    each command answers the newest state queued, not each in turn ever older; the states skipped
    are counted and said (throttled, key ``behind``), and the 4 ms steps between those handled
    are not learnt as the stream's period. After a handling shorter than the period nothing is
    taken."""
    with in_process_controllers(ros_domain) as make:
        node, steady = _running(make, serialized, monkeypatch)
        node._state_sub = Queue(node._state_sub.msg_type)
        node._state_sub.raw = serialized
        at = sim_clock(node)
        said: list[tuple[str, str]] = []
        node.log.warning = lambda key, message, **_: said.append((key, message))
        assert node.supervisor.stream_period == pytest.approx(DT)

        def hand(stamp: float, gap: float) -> None:
            steady[0] += gap
            msg = _state_msg(stamp)
            if serialized:
                from rclpy.serialization import serialize_message

                node._on_state_bytes(serialize_message(msg))
            else:
                node._on_state_message(msg)

        stamp = T0 + 19 * DT
        published = node.counts.commands_published
        for k in range(1, 6):
            handed, stamp = stamp + DT, stamp + 4 * DT
            queued = [_state_msg(t) for t in (handed + DT, handed + 2 * DT, stamp)]
            if serialized:
                from rclpy.serialization import serialize_message

                queued = [serialize_message(m) for m in queued]
            node._state_sub.messages.extend(queued)
            at(stamp)
            node._state_started = node._state_done - 1.5 * DT
            hand(handed, 1e-4)
            assert node.watchdog.last_good.stamp == pytest.approx(stamp)
            assert (node.counts.behind_skipped, node.counts.backlog_skipped) == (3 * k, 0)
            assert node.counts.commands_published == published + k
        assert [key for key, _ in said] == ["behind"] * len(said) and said
        took = "handling the last one took 1.50 ms against their 1.00 ms period; skipped 3 queued"
        assert took in said[0][1]
        assert node.supervisor.stream_period == pytest.approx(DT)
        assert node.watchdog.state.value == "ok"
        takes = node._state_sub.takes
        hand(at(stamp + DT), DT)  # on time again
        assert node._state_sub.takes == takes and node.counts.behind_skipped == 15
        assert node.summary()["behind_skipped"] == 15
        # /diagnostics: the states skipped in its window (a second here); the share handled by the
        # stamps needs 100 steps of them, a stream this short has none.
        window = node._window_start[0]
        values = node._diagnostic_values(window + 1.0, 0.0, DT, 1)
        assert values["skipped_rate_hz"] == pytest.approx(15.0) and math.isnan(values["handled_share"])
        assert node._diagnostic_values(window + 2.0, 0.0, DT, 1)["skipped_rate_hz"] == 0.0


def _gripper_msg(stamp: float) -> Any:
    """A state of another device on the same topic (a gripper's driver): names none of our joints."""
    from sensor_msgs.msg import JointState as JointStateMsg

    msg = JointStateMsg(name=["finger_joint"], position=[0.4], velocity=[0.0])
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(round(stamp * 1e9), 10**9)
    return msg


@pytest.mark.parametrize("serialized", [True, False])
def test_back_from_away_the_newest_of_the_arms_queued_states_is_handled_not_a_grippers(
    ros_domain: int,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    serialized: bool,
) -> None:
    """A gripper's driver publishes on /joint_states too: the newest state queued may be its. The
    newest of this arm's states is handled, and the gripper's are counted as foreign."""
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState as JointStateMsg

    with in_process_controllers(ros_domain) as make:
        node, steady = _running(make, serialized, monkeypatch)
        node._state_sub = queue = Queue(JointStateMsg)
        queue.raw = serialized
        wire = serialize_message if serialized else (lambda msg: msg)
        handle = node._on_state_bytes if serialized else node._on_state_message
        last = T0 + 19 * DT
        steady[0] += 0.3
        arm = [last + 0.29 + k * DT for k in range(1, 6)]
        for t in arm:  # interleaved, the gripper's last
            queue.messages.extend([wire(_state_msg(t)), wire(_gripper_msg(t))])
        steady[0] += DT
        handle(wire(_state_msg(last + DT)))
        assert node.watchdog.last_good.stamp == pytest.approx(arm[-1])
        assert node.counts.commands_published == 21
        assert node.counts.foreign_states == 5
        assert node.counts.backlog_skipped == 5  # the one handed over and four of the arm's queued


def test_a_gripper_state_queued_behind_each_of_the_arms_does_not_keep_the_arm_unanswered(
    node: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gripper's driver publishing right after each of the arm's states: while catching up, each
    callback finds the gripper's state queued behind the arm's. The arm's is still answered, and
    the catch-up ends as the stamps follow on."""
    at, steady = _run_normally(node, monkeypatch)
    steady[0] += 0.3
    for k in range(20, 350):
        steady[0] += DT
        t = at(T0 + 0.3 + k * DT)
        node._state_sub.messages.append(_gripper_msg(t))
        node._on_state_message(_state_msg(t))
    assert (node.counts.commands_published, node.counts.backlog_skipped) == (350, 0)
    assert not node.catch_up.active


def test_on_the_wall_clock_a_stamp_ahead_after_a_silence_still_counts_at_most_max_age_ahead(
    ros_domain: int,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The wall clock does not lag behind the states queued while the node was away (those are
    stale): a state stamped 0.9 s ahead (a driver's clock stepped, within ``max_future``) after
    50 ms away on the steady clock counts as at most ``max_age`` ahead, as in normal running, and
    for the stamps' gap at most a period ahead of the clock, which has not moved since the last
    state: no silence. Read as it came, the gap to it (0.95 s) stopped the arm and dropped its
    trajectory."""
    with in_process_controllers(ros_domain) as make:
        node = make(use_sim_time=False, controller="computed_torque", serialized_io=False)
        node.publisher = Commands()
        pauses = _pauses(node)
        node.target.describe = lambda: "a trajectory"
        steady = [0.0]
        monkeypatch.setattr(time, "perf_counter", lambda: steady[0])
        for _ in range(20):
            steady[0] += DT
            node._on_state_message(_state_msg(node_now(node)))
        steady[0] += 0.05
        node._on_state_message(_state_msg(node_now(node) + 0.9))
        assert node.counts.watchdog_stops == 0 and node.counts.target_drops == 0
        assert node.counts.commands_published == 21
        assert not pauses
