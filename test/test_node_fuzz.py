"""Seeded fuzz of the controller node's own glue (``nodes/controller_node.py``) on hostile joint-state
streams: real :class:`ControllerNode` objects, their callbacks called directly (no DDS), the
commands and ``/diagnostics`` kept by :class:`~test_node_runtime_guards.Recorder` s.

The pieces were fuzzed alone (test_wire.py: the CDR codecs; test_controller_fuzz.py: the
controllers; test_target_fuzz.py: the target sources; test_supervisor_fuzz.py: the watchdog and
resume logic). This drives what joins them: ``_on_state_bytes`` / ``_on_state_message`` (the CDR
fast path and the rclpy path, a driver's layout learned, other devices' states, unreadable bytes),
the catch-up after this process was away (:class:`~torque_ctrl_ros.core.backlog.CatchUp` and
``_newest_queued``, the subscription's queue a stand-in), ``_handle_state``, ``_compute``, the
command in the order of the ``joints`` parameter and its stamp label, ``_take_due_targets`` after
the command, the deferred and the timer's ``/diagnostics`` and the silence checks they make.

Each case (:data:`CASES`: gravity_comp, computed_torque, achd_rnea and qpid; wall clock and sim
time; ``auto_recover`` on and off; CDR bytes and messages; ``joints`` in the model's order or
another) builds one node and feeds it a stream of a few hundred states at 1 ms: mostly benign
(the arm near home, moving a little, named as the simulator names it or, for stretches, in a
driver's order with extra joints), interleaved with the events of :data:`EVENTS` (hostile states,
silences, catch-up bursts, targets arriving, and the controller or the target source raising on
the next state: a solver failure or a bug). Time is the
test's: :class:`~test_node_runtime_guards.StoppedWallClock` on the wall clock, the clock override
under sim time, and a steady clock (the node's ``time.monotonic`` / ``perf_counter`` and the
watchdog's) that advances 1 ms a state, so a run is the same on a loaded host. Each stream ends
with a benign tail.

Checked after every call (:meth:`Fuzz.check`):

- nothing raises out of a callback (an exception would end the executor's spin: no commands);
- at most one command per state handed over, none from the diagnostics timer; each has 7 finite
  torques within the effort limits (:data:`~torque_ctrl_ros.core.saturation.ROUNDING`), is the
  controller's output (or the safe brake's) reordered by joint name into ``joints`` order, and is
  labelled with the stamp of the state it answers: the state handled (the newest of a catch-up),
  or the last state computed on when the bytes were unreadable. A benign state computed on by
  gravity_comp gets exactly ``g(q)`` of that state (``damping`` 0 in the shipped config);
- a command only while the watchdog is OK or in FALLBACK after the call; none while it stays
  STOPPED, none at all after a stop without ``auto_recover``;
- the counters never decrease, and every state delivered is counted once: ``states_received +
  backlog_skipped + behind_skipped + foreign_states``; ``commands_published`` is what was sent,
  ``commands_published + withheld_commands <= states_received``, ``fallback_commands +
  controller_fallbacks <= commands_published``, ``saturated_commands <= commands_published``,
  ``states_via_rclpy`` 0 on the message path, ``rejected_total`` the sum of ``rejected`` but
  ``superseded``;
- ``/diagnostics`` publish at any moment without raising, their counts are the node's, and every
  number in them is finite but the documented NaN (percentiles of an empty window, the stream's
  step while unknown) and inf (``seconds_since_last_state`` before any state);
- a silence the diagnostics timer ticked through takes the watchdog out of OK, and
  ``seconds_since_last_state`` is the time since the last state of the arm arrived;
- after the tail, with ``auto_recover``, the node computes again within the supervisor fuzz's
  :func:`~test_supervisor_fuzz.recovery_bound` and keeps computing; the summary's counts are the
  node's.

``TORQUE_CTRL_NODE_FUZZ_SEEDS=N`` runs each case with N seeds (a campaign) instead of one.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np
import pinocchio as pin
import pytest
from ros_helpers import requires_rclpy, ros_domain  # noqa: F401
from test_controller_node_backlog import Queue
from test_node_runtime_guards import HOME, JOINTS, Nodes, StoppedWallClock, nodes  # noqa: F401
from test_supervisor_fuzz import recovery_bound
from test_target_fuzz import _mutated

from torque_ctrl_ros.core.errors import SolverError
from torque_ctrl_ros.core.safety import CONFLICT_WINDOW, RejectReason, WatchdogState
from torque_ctrl_ros.core.saturation import ROUNDING

pytestmark = [pytest.mark.ros, requires_rclpy]

PERIOD = 1e-3  #: the benign stream's period (s)
EVENT_SHARE = 0.17  #: the share of the stream's steps that are an event of EVENTS
TOOL = "end_effector_link"
GRIPPER = ["robotiq_85_left_knuckle_joint"]
#: A driver's layout: the arm's joints in another order, with others among them.
DRIVER = ["finger_joint", "joint_3", "joint_1", "joint_2", "joint_7", "joint_5", "joint_6", "joint_4", "tool"]
#: A ``joints`` parameter other than the model's order.
REORDERED = ["joint_7", "joint_2", "joint_5", "joint_1", "joint_4", "joint_6", "joint_3"]
EVENTS = (
    "unreadable",
    "mutated",
    "foreign",
    "missing",
    "duplicated",
    "non_finite",
    "past_limits",
    "second_source",
    "stale",
    "future",
    "backwards",
    "wild_stamp",
    "duplicate",
    "silence",
    "burst",
    "target",
    "layout",
    "restart",
    "clock_still",
    "controller_fails",
    "target_fails",
)
#: /diagnostics values that may be NaN: percentiles of an empty window, the step while unknown,
#: the delay the efforts show (and whether they follow the commands) while they show none, the
#: share of states handled while the stamps of the window span under 100 steps (or the step is
#: unknown).
_NAN_OK = (
    "_p50_ms",
    "_p90_ms",
    "_p99_ms",
    "_max_ms",
    "state_period_ms",
    "measured_delay_ms",
    "measured_delay_correlation",
    "efforts_follow_commands",
    "handled_share",
)


@dataclass(frozen=True)
class Case:
    """One node's configuration: its controller, clock, ``auto_recover``, ``serialized_io`` and
    ``joints`` (:data:`REORDERED` or the model's order)."""

    controller: str
    sim_time: bool
    auto_recover: bool
    serialized: bool
    reordered: bool

    @property
    def id(self) -> str:
        return "-".join(
            [
                self.controller,
                "sim" if self.sim_time else "wall",
                "recover" if self.auto_recover else "final",
                "cdr" if self.serialized else "msg",
                *(["reordered"] if self.reordered else []),
            ]
        )


CASES = [
    Case("gravity_comp", sim_time=False, auto_recover=True, serialized=True, reordered=True),
    Case("gravity_comp", sim_time=True, auto_recover=False, serialized=False, reordered=False),
    Case("computed_torque", sim_time=True, auto_recover=True, serialized=True, reordered=True),
    Case("computed_torque", sim_time=False, auto_recover=False, serialized=True, reordered=False),
    Case("achd_rnea", sim_time=False, auto_recover=True, serialized=False, reordered=True),
    Case("qpid", sim_time=False, auto_recover=True, serialized=True, reordered=False),
    Case("qpid", sim_time=True, auto_recover=True, serialized=False, reordered=True),
]


def _seeds() -> list[int]:
    return list(range(int(os.environ.get("TORQUE_CTRL_NODE_FUZZ_SEEDS", "1"))))


class SimClocks:
    """Under sim time: the node's clock is the override set here; its steady clock (the
    ``time`` of controller_node.py) stands still until :meth:`advance_steady`."""

    def __init__(self, node: Any, monkeypatch: pytest.MonkeyPatch, t0: float) -> None:
        import torque_ctrl_ros.nodes.controller_node as controller_module

        self.node = node
        self.steady = 100.0
        steady = SimpleNamespace(monotonic=self.monotonic, perf_counter=self.monotonic)
        monkeypatch.setattr(controller_module, "time", steady)
        self.set(t0)

    def monotonic(self) -> float:
        return self.steady

    def set(self, t: float) -> None:
        from rclpy.time import Time

        clock = self.node.node.get_clock()
        self.t = t
        clock.set_ros_time_override(Time(nanoseconds=round(t * 1e9), clock_type=clock.clock_type))


def _stamp(msg: Any, ns: int) -> None:
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(ns, 10**9)


def _joint_state(names: list[str], q: dict[str, float], v: dict[str, float], ns: int) -> Any:
    from sensor_msgs.msg import JointState as JointStateMsg

    msg = JointStateMsg(
        name=list(names), position=[q.get(n, 0.0) for n in names], velocity=[v.get(n, 0.0) for n in names]
    )
    _stamp(msg, ns)
    return msg


@dataclass
class Delivered:
    """One item put on the subscription: what the node gets, and what the test knows of it."""

    item: Any  # a message, or bytes with serialized_io
    stamp_ns: int | None  # its stamp, when it can be read
    q: np.ndarray | None  # the arm's positions in the model's order, when benign
    foreign: bool = False


class Fuzz:
    """One node driven through one seeded stream; :meth:`check` after every call."""

    def __init__(self, node: Any, case: Case, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
        from rclpy.serialization import deserialize_message, serialize_message
        from sensor_msgs.msg import JointState as JointStateMsg

        self.node, self.case = node, case
        self.rng = np.random.default_rng([seed, CASES.index(case)])
        self.serialize, self.deserialize = serialize_message, deserialize_message
        self.msg_type = JointStateMsg
        self.robot = node.robot
        self.limit = self.robot.effort_limit
        self.joints = REORDERED if case.reordered else JOINTS
        # Independent of the node's command_index: torque of joints[i] is the model's joint of that name.
        self.order = np.array([self.robot.joint_names.index(j) for j in self.joints])
        self.queue = node._state_sub = Queue(JointStateMsg)
        self.queue.raw = case.serialized
        self.config = node.watchdog.config
        if case.sim_time:
            self.clocks: Any = SimClocks(node, monkeypatch, 100.0)
        else:
            self.clocks = StoppedWallClock(node, monkeypatch)
        self.steady_now = self.clocks.monotonic
        node.watchdog.steady_clock = self.steady_now
        self.t_arm = self.now()  # the stream's time (s) at the arm's pose
        self.phase = self.rng.uniform(0.0, 2 * np.pi, 7)
        self.layout = list(JOINTS)
        self.second_pose = HOME + self.rng.choice([-1.0, 1.0], 7) * self.rng.uniform(0.3, 0.6, 7)
        self.last_stamp_ns = self.now_ns()
        # What the test saw.
        self.delivered = 0
        self.last_arrival = math.nan  # the steady clock (s) when an arm state last arrived
        self.sent = 0
        self.stopped_for_good = False
        self.stats: Counter[str] = Counter()
        self.outputs: list[tuple[str, np.ndarray]] = []  # this call's controller and brake torques
        # An exception to raise from the next call of the controller or the target source.
        self.failures: dict[str, Exception | None] = dict.fromkeys(("compute", "take_due", "reference"))
        self._spy()

    # ------------------------------------------------------------ clocks
    def now(self) -> float:
        return float(self.node.node.get_clock().now().nanoseconds * 1e-9)

    def now_ns(self) -> int:
        return int(self.node.node.get_clock().now().nanoseconds)

    def advance(self, seconds: float, clock: bool = True) -> None:
        """``seconds`` pass on the steady clock, and on the node's clock unless ``clock`` is false
        (sim time paused); the arm's motion follows the node's clock."""
        if self.case.sim_time:
            self.clocks.steady += seconds
            if clock:
                self.clocks.set(self.clocks.t + seconds)
        else:
            self.clocks.advance(seconds)  # the wall clock cannot stand still
        self.t_arm = self.now()

    # ------------------------------------------------------------ states
    def pose(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """The benign arm at time ``t``: home ± 0.05 rad, slowly."""
        w = 2.0
        return HOME + 0.05 * np.sin(w * t + self.phase), 0.05 * w * np.cos(w * t + self.phase)

    def state(
        self,
        names: list[str] | None = None,
        q: np.ndarray | None = None,
        v: np.ndarray | None = None,
        stamp_ns: int | None = None,
    ) -> Delivered:
        """A state of the arm (``names`` default: the current layout), at its pose unless given."""
        names = names or self.layout
        q0, v0 = self.pose(self.t_arm)
        q = q0 if q is None else q
        v = v0 if v is None else v
        if stamp_ns is None:
            lag = 0 if self.case.sim_time else int(self.rng.integers(0, 300_000))
            stamp_ns = self.now_ns() - lag
        qd = dict(zip(JOINTS, q.tolist(), strict=True)) | {n: 0.5 for n in names if n not in JOINTS}
        vd = dict(zip(JOINTS, v.tolist(), strict=True))
        msg = _joint_state(names, qd, vd, stamp_ns)
        benign = set(JOINTS) <= set(names) and len(set(names)) == len(names) and np.isfinite(q).all()
        return Delivered(self.wrap(msg), stamp_ns, q.copy() if benign else None)

    def wrap(self, msg: Any) -> Any:
        return self.serialize(msg) if self.case.serialized else msg

    def foreign(self) -> Delivered:
        msg = _joint_state(GRIPPER, {GRIPPER[0]: 0.3}, {}, self.now_ns())
        return Delivered(self.wrap(msg), self.now_ns(), None, foreign=True)

    def read_back(self, raw: bytes) -> Delivered:
        """What the node will make of ``raw`` (unreadable, another device's, or the arm's)."""
        fast = self.node.state_wire.decode(raw) if self.case.serialized else None
        if fast is not None:  # read in place, as the node will
            return Delivered(raw, fast[0], None)
        try:
            msg = self.deserialize(raw, self.msg_type)
        except Exception:
            return Delivered(raw if self.case.serialized else None, None, None)
        # Naming none of the arm's joints: others', or none and no values (an empty state).
        if msg.name:
            foreign = set(msg.name).isdisjoint(JOINTS)
        else:
            foreign = not (len(msg.position) or len(msg.velocity) or len(msg.effort))
        ns = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
        return Delivered(raw if self.case.serialized else msg, ns, None, foreign)

    # ------------------------------------------------------------ calls
    def _spy(self) -> None:
        """Keep each torque the controller and the brake give the node, in the model's order."""
        node = self.node
        compute, safe = node.controller.compute, node._safe_command
        take_due, reference = node.target.take_due, node.target.reference

        def spied_compute(*args: Any, **kwargs: Any) -> Any:
            failure, self.failures["compute"] = self.failures["compute"], None
            if failure is not None and self.rng.random() < 0.5:
                raise failure  # before the controller ran
            out = compute(*args, **kwargs)
            if failure is not None:
                raise failure  # after: its state updated, its answer lost
            self.outputs.append(("controller", np.array(out.tau)))
            return out

        def failing(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
            def call(*args: Any, **kwargs: Any) -> Any:
                failure, self.failures[name] = self.failures[name], None
                if failure is not None:
                    raise failure
                return method(*args, **kwargs)

            return call

        node.target.take_due = failing("take_due", take_due)
        node.target.reference = failing("reference", reference)

        def spied_safe(decision: Any) -> Any:
            out = safe(decision)
            if out is not None:
                self.outputs.append(("brake", np.array(out.tau)))
            return out

        node.controller.compute = spied_compute
        node._safe_command = spied_safe

    def deliver(self, first: Delivered, queued: Sequence[Delivered] = ()) -> None:
        """Hand ``first`` to the node's state callback with ``queued`` behind it on the
        subscription; what the node leaves queued is handed over next, one at a time, as the
        executor would."""
        pending = [d for d in (first, *queued) if d.item is not None]
        while pending:
            head, behind = pending[0], pending[1:]
            self.queue.messages.clear()
            self.queue.messages.extend(d.item for d in behind)
            before = self.snapshot()
            self.outputs.clear()
            try:
                if self.case.serialized:
                    self.node._on_state_bytes(head.item)
                else:
                    self.node._on_state_message(head.item)
            except Exception as exc:  # pragma: no cover - what the fuzz looks for
                raise AssertionError(f"{self.where()}: the state callback raised {exc!r}") from exc
            taken = len(behind) - len(self.queue.messages)
            self.delivered += 1 + taken
            if not all(d.foreign for d in [head, *behind[:taken]]):
                self.last_arrival = self.steady_now()
            self.check(before, [head, *behind[:taken]])
            pending = behind[taken:]

    def snapshot(self) -> dict[str, Any]:
        node = self.node
        return {
            "state": node.watchdog.state,
            "last_good_ns": node._last_good_stamp_ns,
            "counts": asdict(node.counts),
            "diagnostics": len(node.diag_publisher.sent),
        }

    def where(self) -> str:
        events = {e: n for e, n in self.stats.items() if e in EVENTS}
        return f"case {self.case.id}, call {self.stats['calls'] + 1}, events so far {events}"

    def command(self, sent: Any) -> tuple[np.ndarray, int | None]:
        """Torques and answered stamp (ns) of a published command."""
        from torque_ctrl_ros.nodes.conversions import command_stamp_ns
        from torque_ctrl_ros.nodes.wire import CommandWire

        if self.case.serialized:
            decoded = CommandWire.decode(bytes(sent))
            assert decoded is not None, f"{self.where()}: a command the wire cannot read"
            return np.array(decoded[0]), decoded[1]
        return np.array(sent.data), command_stamp_ns(sent)

    def check(self, before: dict[str, Any], items: list[Delivered]) -> None:
        """The invariants of the module docstring after one state callback."""
        node, where = self.node, self.where()
        self.stats["calls"] += 1
        new = node.publisher.sent[self.sent :]
        self.sent = len(node.publisher.sent)
        assert len(new) <= 1, f"{where}: {len(new)} commands for one state"
        state = node.watchdog.state
        if new:
            tau, stamp_ns = self.command(new[0])
            assert tau.shape == (7,), f"{where}: command of {tau.shape}"
            assert np.isfinite(tau).all(), f"{where}: non-finite command {tau}"
            assert (np.abs(tau) <= self.limit[self.order] + ROUNDING).all(), f"{where}: beyond limits {tau}"
            assert state in (WatchdogState.OK, WatchdogState.FALLBACK), f"{where}: a command in {state}"
            assert not (before["state"] is WatchdogState.STOPPED and state is WatchdogState.STOPPED), where
            assert not self.stopped_for_good, f"{where}: a command after a final stop"
            # The torque the node was given, in `joints` order by name.
            assert not all(d.foreign for d in items), f"{where}: a command for another device's state"
            assert len(self.outputs) >= 1, f"{where}: a command neither computed nor braked"
            kind, given = self.outputs[-1]
            np.testing.assert_array_equal(tau, given[self.order], err_msg=f"{where}: {kind} torque reordered")
            # The stamp of a state it answers: the state handled (the newest arm state of the
            # call), or, unreadable, the last one computed on.
            arm = [d for d in items if not d.foreign]
            readable = [d.stamp_ns for d in arm if d.stamp_ns is not None]
            allowed = {*readable, before["last_good_ns"], node._last_good_stamp_ns}
            assert stamp_ns in allowed, f"{where}: command stamped {stamp_ns}, states {readable}"
            handled = arm[-1] if arm else None
            if handled is not None and handled.q is not None:
                assert stamp_ns == handled.stamp_ns, f"{where}: stamp {stamp_ns} for {handled.stamp_ns}"
                if kind == "controller" and self.case.controller == "gravity_comp":
                    g = np.clip(self.robot.gravity(handled.q), -self.limit, self.limit)
                    np.testing.assert_allclose(tau, g[self.order], rtol=0, atol=1e-9, err_msg=where)
                    self.stats["checked_gravity"] += 1
            self.stats[f"command_{kind}"] += 1
        elif all(d.foreign for d in items):
            self.stats["all_foreign"] += 1
        if state is WatchdogState.STOPPED and not self.case.auto_recover:
            self.stopped_for_good = True
        self.check_counts(before["counts"], items)
        # /diagnostics the timer deferred to the end of this state's handling.
        if len(node.diag_publisher.sent) > before["diagnostics"]:
            self.stats["deferred_diagnostics"] += 1
            self.check_values(node.diag_publisher.sent[-1].status[0].values)

    def check_counts(self, before: dict[str, int], items: list[Delivered] | None) -> None:
        node, where = self.node, self.where()
        c = asdict(node.counts)
        for key, value in c.items():
            assert value >= before[key], f"{where}: {key} went down {before[key]} -> {value}"
        skipped = c["backlog_skipped"] + c["behind_skipped"]
        assert c["states_received"] + skipped + c["foreign_states"] == self.delivered, (
            f"{where}: {self.delivered} delivered, counted {c}"
        )
        assert c["commands_published"] == self.sent == len(node.publisher.sent), where
        assert c["commands_published"] + c["withheld_commands"] <= c["states_received"], f"{where}: {c}"
        assert c["fallback_commands"] + c["controller_fallbacks"] <= c["commands_published"], f"{where}: {c}"
        assert c["saturated_commands"] <= c["commands_published"], f"{where}: {c}"
        if not self.case.serialized:
            assert c["states_via_rclpy"] == 0, where
        else:
            assert c["states_via_rclpy"] <= c["states_received"] + c["foreign_states"], where
        wd = node.watchdog
        counted = sum(n for r, n in wd.rejected.items() if r is not RejectReason.SUPERSEDED)
        assert wd.rejected_total == counted, f"{where}: rejected_total {wd.rejected_total}, {wd.rejected}"
        assert c["watchdog_fallbacks"] + c["watchdog_stops"] <= wd.transitions, where
        if items is not None and not all(d.foreign for d in items):
            handled = c["states_received"] - before["states_received"]
            assert handled == 1, f"{where}: {handled} states handled of one call"

    def diagnostics(self, timer: bool) -> None:
        """The diagnostics timer fires (``timer``) or /diagnostics are published at once."""
        node = self.node
        before, published = len(node.diag_publisher.sent), len(node.publisher.sent)
        counts = asdict(node.counts)
        try:
            node._on_diagnostics_timer() if timer else node._publish_diagnostics()
        except Exception as exc:  # pragma: no cover - what the fuzz looks for
            raise AssertionError(f"{self.where()}: /diagnostics raised {exc!r}") from exc
        assert len(node.publisher.sent) == published, f"{self.where()}: a command from the timer"
        self.check_counts(counts, None)
        if len(node.diag_publisher.sent) > before:
            self.stats["diagnostics"] += 1
            self.check_values(node.diag_publisher.sent[-1].status[0].values)
        if self.node.watchdog.state is WatchdogState.STOPPED and not self.case.auto_recover:
            self.stopped_for_good = True

    def check_values(self, values: Any) -> None:
        where = self.where()
        kv = {v.key: v.value for v in values}
        for key, value in asdict(self.node.counts).items():
            assert kv[key] == str(value), f"{where}: /diagnostics {key} {kv[key]}, counted {value}"
        if self.node.counts.states_received:
            silent = self.steady_now() - self.last_arrival
            assert math.isclose(float(kv["seconds_since_last_state"]), silent, rel_tol=1e-5, abs_tol=1e-6), (
                f"{where}: seconds_since_last_state {kv['seconds_since_last_state']}, silent {silent}"
            )
        for key, text in kv.items():
            try:
                number = float(text)
            except ValueError:
                continue
            if math.isnan(number):
                assert key.endswith(_NAN_OK), f"{where}: /diagnostics {key} is nan"
            elif math.isinf(number):
                assert key == "seconds_since_last_state" and self.node.counts.states_received == 0, (
                    f"{where}: /diagnostics {key} is {text}"
                )

    # ------------------------------------------------------------ the stream
    def benign(self) -> None:
        self.advance(PERIOD)
        self.deliver(self.state())

    def event(self, name: str) -> None:
        rng, case = self.rng, self.case
        self.stats[name] += 1
        self.advance(PERIOD)
        if name == "unreadable":
            raw = bytes(rng.integers(0, 256, int(rng.integers(0, 40))).tolist())
            if rng.random() < 0.5:
                raw = b"\x00\x01\x00\x00" + raw
            if case.serialized:
                self.deliver(self.read_back(raw))
            else:  # the message path cannot get bytes: a message it cannot read instead
                d = self.state()
                d.item.velocity = []
                d.q = None
                self.deliver(d)
        elif name == "mutated":
            d = self.state()
            raw = d.item if case.serialized else self.serialize(d.item)
            self.deliver(self.read_back(_mutated(rng, raw)))
        elif name == "foreign":
            self.deliver(self.foreign())
        elif name == "missing":
            names = [n for n in self.layout if n != rng.choice(JOINTS)]
            self.deliver(self.state(names))
        elif name == "duplicated":
            names = [*self.layout, str(rng.choice(JOINTS))]
            d = self.state(names)
            d.q = None
            self.deliver(d)
        elif name == "non_finite":
            q, v = self.pose(self.t_arm)
            bad = [np.nan, np.inf, -np.inf, 1e300, -1e300][rng.integers(5)]
            (q if rng.random() < 0.5 else v)[rng.integers(7)] = bad
            d = self.state(q=q, v=v)
            d.q = None  # no g(q) to check: q may be finite but huge
            self.deliver(d)
        elif name == "past_limits":
            q, _ = self.pose(self.t_arm)
            bounded = np.flatnonzero(np.isfinite(self.robot.position_upper))
            j = rng.choice(bounded)
            q[j] = self.robot.position_upper[j] + rng.uniform(0.6, 2.0)
            self.deliver(self.state(q=q))
        elif name == "second_source":
            for _ in range(int(rng.integers(1, 6))):
                self.deliver(self.state(q=self.second_pose, v=np.zeros(7)))
                self.advance(PERIOD)
                self.deliver(self.state())
            for _ in range(int(rng.integers(0, 20))):  # stopped on two sources
                self.benign()
            # The stop lasts CONFLICT_WINDOW after the last jump on the steady clock: let it pass
            # without states, to compute on again in the rest of the stream.
            self.silence(CONFLICT_WINDOW + 0.1)
        elif name == "stale":
            self.deliver(self.state(stamp_ns=self.now_ns() - int(rng.uniform(0.03, 3.0) * 1e9)))
        elif name == "future":
            ahead = rng.choice([rng.uniform(0.001, 0.015), rng.uniform(1.5, 100.0)])
            self.deliver(self.state(stamp_ns=self.now_ns() + int(ahead * 1e9)))
        elif name == "backwards":
            self.deliver(self.state(stamp_ns=self.last_stamp_ns - int(rng.integers(1, 10)) * 1_000_000))
        elif name == "wild_stamp":  # any builtin_interfaces/Time: int32 sec, uint32 nanosec
            d = self.state()
            sec = int(rng.choice([-(2**31), -1, 0, 1, 2**31 - 1]))
            nanosec = int(rng.choice([0, 999_999_999, 10**9, 2**32 - 1]))
            msg = self.deserialize(d.item, self.msg_type) if case.serialized else d.item
            msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nanosec
            d.item, d.stamp_ns = self.wrap(msg), sec * 10**9 + nanosec
            self.deliver(d)
        elif name == "duplicate":
            d = self.state()
            self.deliver(d)
            self.advance(PERIOD)
            self.deliver(d)
        elif name == "silence":
            self.silence(float(rng.choice([rng.uniform(0.005, 0.1), rng.uniform(0.1, 1.2)])))
        elif name == "burst":
            self.burst()
        elif name == "target":
            self.target()
        elif name == "layout":
            self.layout = list(DRIVER) if self.layout == JOINTS else list(JOINTS)
            self.deliver(self.state())
        elif name in ("controller_fails", "target_fails"):
            # A solver failure, or a bug (any exception), on the next state computed on.
            where = "compute" if name == "controller_fails" else str(rng.choice(["take_due", "reference"]))
            self.failures[where] = (
                SolverError("fuzz: the QP failed") if rng.random() < 0.5 else RuntimeError("fuzz: a bug")
            )
            for _ in range(int(rng.integers(1, 4))):
                self.benign()
        elif name == "restart" and case.sim_time and self.stats[name] == 1:
            # A restarted simulator, time from ~0 again; once: a second one after a run of under
            # ~1 s reads as a second publisher for up to ~2.5 s (docs/interfaces.md).
            self.clocks.set(float(rng.uniform(0.0, 0.01)))
            self.t_arm = self.now()
            self.deliver(self.state())
        elif name == "clock_still" and case.sim_time:  # the clock stands still, the stamps go on
            t = self.clocks.t
            for k in range(1, int(rng.integers(2, 40))):
                self.clocks.steady += PERIOD
                self.t_arm = t + k * PERIOD
                self.deliver(self.state(stamp_ns=round(self.t_arm * 1e9)))
            self.clocks.set(self.t_arm)
        else:
            self.benign()
        if rng.random() < 0.1:
            self.diagnostics(timer=bool(rng.random() < 0.5))

    def silence(self, span: float) -> None:
        """No state for ``span`` s; the diagnostics timer ticking every 0.1 s of it, or not."""
        ticks = self.rng.random() < 0.5
        paused = self.case.sim_time and self.rng.random() < 0.3  # a paused simulator: its clock too
        was_ok = self.node.watchdog.state is WatchdogState.OK
        step = 0.1 if ticks else span
        done = 0.0
        while done < span - 1e-9:
            dt = min(step, span - done)
            self.advance(dt, clock=not paused)
            done += dt
            if ticks:
                self.diagnostics(timer=True)
        if ticks and done >= 0.1 and was_ok:  # the timer saw the silence (past max_age)
            state = self.node.watchdog.state
            assert state in (WatchdogState.FALLBACK, WatchdogState.STOPPED), f"{self.where()}: {state}"

    def burst(self) -> None:
        """Away for a while (stopped, descheduled): the states of the last few ms queued behind an
        older one, some of them another device's or unreadable; under sim time the clock lags
        (its messages were queued alike) until the next state."""
        rng = self.rng
        away = float(rng.uniform(0.03, 0.6))
        left_ns = self.now_ns()
        if self.case.sim_time:
            self.clocks.steady += away
            self.t_arm = self.clocks.t + away
        else:
            self.advance(away)
        now_ns = round(self.t_arm * 1e9)
        count = int(rng.integers(1, 15))
        first = self.state(stamp_ns=left_ns + 1_000_000)
        queued = []
        for k in range(count, 0, -1):
            r = rng.random()
            if r < 0.1:
                queued.append(self.foreign())
            elif r < 0.2:  # unreadable, or read as anything
                d = self.state(stamp_ns=now_ns - (k - 1) * 1_000_000)
                queued.append(
                    self.read_back(_mutated(rng, d.item if self.case.serialized else self.serialize(d.item)))
                )
            else:
                queued.append(self.state(stamp_ns=now_ns - (k - 1) * 1_000_000))
        self.deliver(first, queued)
        if self.case.sim_time:
            self.clocks.set(self.t_arm)

    def target(self) -> None:
        """A target arrives through the target source's callbacks (valid, near where the arm is)."""
        from geometry_msgs.msg import PoseStamped
        from sensor_msgs.msg import JointState as JointStateMsg
        from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

        rng, source, controller = self.rng, self.node.target, self.case.controller
        goal = HOME + rng.uniform(-0.2, 0.2, 7)
        joint_target = JointStateMsg(name=list(JOINTS), position=goal.tolist())

        def pose() -> Any:
            placement = self.robot.frame_placement(goal, TOOL)
            msg = PoseStamped()
            msg.header.frame_id = "base_link"
            p = msg.pose.position
            p.x, p.y, p.z = map(float, placement.translation)
            o = msg.pose.orientation
            o.x, o.y, o.z, o.w = map(float, pin.Quaternion(placement.rotation).coeffs())
            return msg

        if controller == "computed_torque":
            if rng.random() < 0.5:
                source._on_joint_target(self.serialize(joint_target))
            else:
                point = JointTrajectoryPoint(positions=goal.tolist())
                point.time_from_start.sec, point.time_from_start.nanosec = 0, int(rng.integers(1, 9)) * 10**8
                source._on_trajectory(JointTrajectory(joint_names=list(JOINTS), points=[point]))
        elif controller == "achd_rnea":
            source._on_pose(self.serialize(pose()))
        elif controller == "qpid":
            if rng.random() < 0.5:
                source._on_pose("tool", self.serialize(pose()))
            else:
                source._on_joint_target(joint_target)
        self.benign()

    def run(self, states: int) -> None:
        """``states`` calls, about one in six an event; the benign tail after."""
        events = [e for e in EVENTS if self.case.sim_time or e not in ("restart", "clock_still")]
        for _ in range(states):
            if self.rng.random() < EVENT_SHARE:
                self.event(str(self.rng.choice(events)))
            else:
                self.stats["benign"] += 1
                self.benign()
            self.last_stamp_ns = self.node._last_good_stamp_ns or self.last_stamp_ns
        self.tail()

    def tail(self) -> None:
        """Benign states until the node computes again (``auto_recover``), within the bound, and on."""
        node = self.node
        self.layout = list(JOINTS) if self.rng.random() < 0.5 else list(DRIVER)
        if self.rng.random() < 0.5:
            self.silence(CONFLICT_WINDOW + 0.1)  # the stop on two sources over without states
        # A simulator restarted after a short run takes up to three times as long (Stream.restart).
        bound = recovery_bound(self.config) * (3 if self.stats["restart"] else 1)
        computed = 0
        for k in range(bound + 50):
            self.benign()
            kind = self.outputs[-1][0] if self.outputs else ""
            if kind == "controller" and node.watchdog.state is WatchdogState.OK:
                computed += 1
                if computed == 50:
                    break
                continue
            assert computed == 0, f"{self.where()}: not computed on after {computed} computed states"
            if self.stopped_for_good:
                if k == 50:
                    break
                continue
            assert k < bound, f"{self.where()}: not computing {bound} states into the tail"
        assert computed == 50 or self.stopped_for_good, f"{self.where()}: the tail was not computed on"
        self.diagnostics(timer=False)
        self.stats["tail_computed"] += computed
        summary = node.summary()
        for key, value in asdict(node.counts).items():
            assert summary[key] == value, f"{self.where()}: summary {key} {summary[key]}, counted {value}"
        rejected = summary["rejected"]
        assert sum(rejected.values()) - rejected["superseded"] == node.watchdog.rejected_total, rejected


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_joint_state_streams_never_raise_and_every_command_is_sound(
    nodes: Nodes,  # noqa: F811
    case: Case,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import rclpy

    for seed in _seeds():
        params: dict[str, Any] = {
            "controller": case.controller,
            "use_sim_time": case.sim_time,
            "serialized_io": case.serialized,
            "joints": REORDERED if case.reordered else JOINTS,
            "watchdog.auto_recover": case.auto_recover,
        }
        node = nodes.make("controller", **params)
        fuzz = Fuzz(node, case, seed, monkeypatch)
        fuzz.run(400)
        print(case.id, seed, dict(fuzz.stats), asdict(node.counts))
        nodes.close(node)
        rclpy.shutdown()
