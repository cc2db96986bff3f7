"""Controller node: one torque command per joint state, event-driven.

Topics:
    /joint_states (sensor_msgs/JointState, in): joints matched by name (any order, extras ignored).
    /effort_controller/commands (std_msgs/Float64MultiArray, out): torques (N·m) in ``joints`` order.
    ~/joint_target, ~/joint_trajectory, ...: targets, depending on the controller (see targets.py).
    /diagnostics (diagnostic_msgs/DiagnosticArray, out): rate, state age, compute time, callback
        time (state in → command out) and its parts (``state_in``, ``command_out``, the QP
        controllers' ``prepare`` and ``qp_solve``), deadline misses (callbacks longer than the
        state period), saturation, watchdog state and rejected counts, safe commands sent and
        withheld as non-finite (``fallback_commands``, ``withheld_commands``), the controller's
        own fallbacks, the watchdog's fallbacks and stops and the targets paused or dropped since
        start (``watchdog_fallbacks``, ``watchdog_stops``, ``target_pauses``, ``target_drops``),
        states skipped for a newer one queued after this process was away (``backlog_skipped``) or
        while it handled the one before for longer than a period (``behind_skipped``),
        states read through rclpy rather than the CDR fast path (``states_via_rclpy``;
        ``serialized_io`` says whether that fast path is on, see wire.py). Every key:
        docs/interfaces.md, "`/diagnostics`, key by key".

A state's path, in the order the code takes it (the ``/diagnostics`` counts in brackets):

1. Arrival (:meth:`ControllerNode._on_state_bytes`, or ``_on_state_message`` without
   ``serialized_io``). After this process was away, or when the last state's handling outlasted
   the stream's period, the states queued behind are taken and the newest kept
   (:mod:`~torque_ctrl_ros.core.backlog`; ``backlog_skipped``, ``behind_skipped``). A state naming
   none of this arm's joints is another device's and ignored (``foreign_states``).
2. Reading: in place from its CDR bytes (:class:`~.wire.JointStateWire`), else by name from
   rclpy's message (:class:`~.conversions.JointStateDecoder`; ``states_via_rclpy``). One that
   cannot be read goes on as an error.
3. :meth:`~torque_ctrl_ros.core.supervisor.Supervisor.step`: the watchdog
   (:mod:`~torque_ctrl_ros.core.safety`) takes or refuses it (stale, from the future, NaN, a jump,
   over-speed; ``rejected_*``, ``watchdog_fallbacks``, ``watchdog_stops``); with ``predict_delay``
   it is carried over the commands in flight (:mod:`~torque_ctrl_ros.core.prediction`); after a
   fallback it says how the target resumes (:mod:`~torque_ctrl_ros.core.resume`) and whether the
   controller is reset.
4. Taken: the target source gives the reference (:mod:`.targets`, planned in
   :mod:`~torque_ctrl_ros.core.target_tracking`), the controller computes and saturates the torque
   (:mod:`~torque_ctrl_ros.core.controllers`); any exception is answered as refused
   (``Supervisor.controller_failed``). Refused: the safe brake's damped hold
   (:mod:`~torque_ctrl_ros.core.braking`; ``fallback_commands``, ``withheld_commands`` when not
   finite), or no command while waiting or stopped.
5. The command goes out, stamped with the state's stamp (``commands_published``; the callback
   timed, ``deadline_misses``). Only then: a target due at this state is planned (a plan takes
   0.3–0.6 ms), the deferred ``/diagnostics`` is published, and the state's efforts feed the delay
   estimate (:mod:`~torque_ctrl_ros.core.delay_estimate`).

Silence is noted by the ``/diagnostics`` timer (and at shutdown): no state for longer than the
watchdog allows moves it to its fallback state (``Supervisor.silence``); with no state to answer,
no command goes out (the driver's own timeout then acts).

Parameters: see ``config/gen3_controllers.yaml`` and :mod:`torque_ctrl_ros.nodes.params`. Read
once at start-up: later changes (``ros2 param set``) are refused.

Run: ``controller_node --ros-args --params-file config/gen3_controllers.yaml``
(or ``python -m torque_ctrl_ros.nodes.controller_node ...``).
"""

from __future__ import annotations

import math
import time
import traceback
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import JointState as JointStateMsg
from std_msgs.msg import Float64MultiArray

from ..core.backlog import CatchUp, queued_behind
from ..core.controllers import create_controller
from ..core.delay_estimate import DelayEstimate, DelayEstimator, Unfollowed
from ..core.errors import ConfigError, ModelError, StateError, TorqueCtrlError
from ..core.resume import Resume, ResumeKind
from ..core.robot import RobotModel
from ..core.safety import Action, RejectReason, WatchdogState
from ..core.supervisor import Decision, Notice, Supervisor, Transition
from ..core.types import ControlOutput, JointState
from .common import (
    COMMAND_TOPIC,
    DIAGNOSTICS_TOPIC,
    STATE_TOPIC,
    STOP,
    ThrottledLog,
    TimingLog,
    command_publishers_warning,
    control_qos,
    exit_if_stuck,
    make_executor,
    one_line,
    parameters_of,
    percentiles_ms,
    publishing_nodes,
    refuse_parameter_changes,
    run_node,
    spin_once,
    status,
    use_serialized_io,
    write_json,
    write_output,
)
from .controller_diagnostics import (
    StepParts,
    clock_warning,
    delay_values,
    delay_warning,
    diagnostic_status,
    handled_share,
    handled_warning,
    soft_retry_warning,
    stream_warning,
    unfollowed_warning,
    watchdog_warning,
)
from .conversions import CommandEncoder, JointStateDecoder, stamp_to_ns
from .params import ControllerNodeConfig, controller_node_config
from .scheduling import current_policy
from .targets import NoTargetSource, create_target_source
from .wire import CDR_LE, CommandWire, JointStateWire

NODE_NAME = "controller_node"
#: States closer together than this (s): /diagnostics wait for the next state (see _on_diagnostics_timer).
_DEFER_DIAGNOSTICS_S = 0.05


def _load_robot(cfg: ControllerNodeConfig, node_name: str) -> RobotModel:
    """The controller's model, from ``robot_description`` when given, else ``model_file``; refused
    without an effort limit on every joint. A description that cannot be loaded is refused
    naming the parameter, on one line."""
    source = "robot_description" if cfg.robot_description else "model_file"
    try:
        if cfg.robot_description:
            robot = RobotModel.from_urdf_string(cfg.robot_description)
        else:
            robot = RobotModel.from_file(cfg.model_file)
    except ModelError as exc:  # its words name the file; Pinocchio's parse errors span lines
        raise ModelError(f"{node_name}.{source}: {one_line(str(exc))}") from None
    unlimited = [
        name
        for name, limit in zip(robot.joint_names, robot.effort_limit, strict=True)
        if not np.isfinite(limit)
    ]
    if unlimited:
        # Saturation is the last thing applied to every command: without a limit a torque
        # controller could send anything. (Pinocchio's MJCF reader takes no actuator limits.)
        raise ConfigError(
            f"{node_name}: the model ({robot.source}) gives no effort limit for joint(s) {unlimited}; "
            "use a description with limits, e.g. urdf/gen3.urdf"
        )
    # Before any controller is made: their damping and gain checks allow for this delay.
    robot.set_command_delay(cfg.command_delay)
    return robot


def _command_joints(cfg: ControllerNodeConfig, robot: RobotModel, node_name: str) -> tuple[str, ...]:
    """The order of the joints in a command (``joints``, the model's by default): every joint of
    the model, once."""
    joints = cfg.joints or robot.joint_names
    if sorted(joints) != sorted(robot.joint_names):
        raise ConfigError(
            f"{node_name}.joints: must list every joint of the model once, got {list(joints)}; "
            f"model joints are {list(robot.joint_names)}"
        )
    return tuple(joints)


class Computed(NamedTuple):
    """What :meth:`ControllerNode._compute` returns."""

    decision: Decision
    """The supervisor's decision: the one computed on, or its answer to the controller's failure."""
    output: ControlOutput | None
    """The controller's output; ``None`` when it failed."""
    t0: float
    """``perf_counter`` (s) just before the target source and the controller were called."""
    t_computed: float
    """``perf_counter`` (s) just after they returned or raised."""


@dataclass
class Counters:
    """Events since start, by the names they have in ``/diagnostics`` and the summary."""

    states_received: int = 0
    states_via_rclpy: int = 0  # serialized states the CDR codec left to rclpy
    # States naming none of our joints (e.g. a gripper's driver on the same topic): not ours.
    foreign_states: int = 0
    commands_published: int = 0
    fallback_commands: int = 0  # safe commands published
    withheld_commands: int = 0  # non-finite safe torques, not published
    controller_fallbacks: int = 0  # steps the controller itself answered with its safe torque
    # QP steps whose hard barrier rows could not hold, solved again with every group soft.
    controller_soft_retries: int = 0
    saturated_commands: int = 0
    deadline_misses: int = (
        0  # states whose handling (to the command, then a target's plan) outlasted the period
    )
    # The watchdog's transitions into FALLBACK and STOPPED, and what became of the target when
    # control resumed: a short fallback is over before the next /diagnostics, these stay.
    watchdog_fallbacks: int = 0
    watchdog_stops: int = 0
    target_pauses: int = 0
    target_drops: int = 0
    # States skipped for a newer one queued behind them, handled instead (core/backlog.py): after
    # this process was away (stopped, descheduled), and after a state's handling outlasted the
    # period (falling behind).
    backlog_skipped: int = 0
    behind_skipped: int = 0


class ControllerNode:
    """Wires a core controller and its :class:`~torque_ctrl_ros.core.supervisor.Supervisor` to
    ROS topics; no dynamics and no safety decisions here."""

    def __init__(self, node_name: str = NODE_NAME) -> None:
        self.node = node = Node(
            node_name, allow_undeclared_parameters=True, automatically_declare_parameters_from_overrides=True
        )
        cfg = self.config = controller_node_config(parameters_of(node), node_name)
        self.robot = robot = _load_robot(cfg, node_name)
        self.joints = _command_joints(cfg, robot, node_name)
        self.controller = create_controller(cfg.controller, robot, cfg.controller_params)
        # The watchdog, the safe brake and what a target does when control resumes.
        self.supervisor = Supervisor(
            robot,
            cfg.watchdog,
            cfg.fallback_damping_vector(robot.n, robot),
            steady_clock=time.monotonic,
            predict_delay=cfg.predict_delay,
        )
        self.watchdog = self.supervisor.watchdog
        # The delay the states' efforts show, against command_delay (read for /diagnostics).
        self.delay_estimator = DelayEstimator(robot.n)
        self.delay_estimate: DelayEstimate | None = None
        self.unfollowed: Unfollowed | None = None  # efforts that followed no command, at the last report
        self.command_index = robot.joint_index(self.joints)  # controller order → command order
        self.decoder = JointStateDecoder(robot.joint_names)
        self.encoder = CommandEncoder(robot.n)
        # States in and commands out as CDR bytes when both codecs pass their self-check.
        self.state_wire = JointStateWire(robot.joint_names)
        self.command_wire = CommandWire(robot.n)
        self.serialized = use_serialized_io(
            node, cfg.common.serialized_io, self.state_wire, self.command_wire
        )
        self.target = create_target_source(cfg.controller, node, self.controller)
        # A controller without a target (gravity_comp) has nothing to pause or drop on resuming.
        self._has_target = not isinstance(self.target, NoTargetSource)

        qos = control_qos(cfg.common)
        self.publisher = node.create_publisher(Float64MultiArray, COMMAND_TOPIC, qos)
        self._command_topic = self.publisher.topic_name  # remapped, as _state_topic
        if self.serialized:
            states = node.create_subscription(JointStateMsg, STATE_TOPIC, self._on_state_bytes, qos, raw=True)
        else:
            states = node.create_subscription(JointStateMsg, STATE_TOPIC, self._on_state_message, qos)
        self._state_topic = states.topic_name  # remapped: the graph queries do not remap
        self._state_sub = states
        self.catch_up = CatchUp(cfg.watchdog.max_age)
        # perf_counter (s) at the start and the end of the last state's handling (-inf: none yet),
        # and how much of it (s) went into publishing the /diagnostics deferred to its end
        self._state_started = self._state_done = -math.inf
        self._diagnostics_took = 0.0
        self._skipped = 0  # states queued before the one being handled, skipped for it
        #: counts.watchdog_fallbacks when the last state arrived: the fallbacks while the states
        #: came, not the one their end brings (which a run's end may skip, OK → STOPPED).
        self._fallbacks_before_last_state = 0
        self._sim_time = bool(node.get_parameter("use_sim_time").value)
        # Only a clock fed by /clock lags behind the states queued with its messages while this
        # process was away; the wall clock does not (Supervisor.step's clock_lag).
        self._clock_lags_in_backlog = self._sim_time
        self.diag_publisher = node.create_publisher(DiagnosticArray, DIAGNOSTICS_TOPIC, 10)
        self._steady = Clock(clock_type=ClockType.STEADY_TIME)
        node.create_timer(cfg.common.diagnostics_period, self._on_diagnostics_timer, clock=self._steady)
        self._diagnostics_due = False

        self.counts = Counters()
        self._controller_fallbacks_reported = 0  # counts.controller_fallbacks at the last /diagnostics
        self._soft_retries_reported = 0  # counts.controller_soft_retries at the last /diagnostics
        # The watchdog's fallbacks and refused states (by reason) at the last /diagnostics.
        self._watchdog_reported: tuple[int, dict[RejectReason, int]] = (0, {})
        self._joint_set = frozenset(robot.joint_names)
        self._order_noted = False  # the first readable state's joint order was compared with `joints`
        self.order_warning = ""  # what was said if it differed
        self.bounds_warnings: list[str] | None = None  # said at the first computed command: bounds past
        self.last_fallback_info: dict[str, float] = {}
        self.last_saturated: tuple[str, ...] = ()
        self.last_info: dict[str, float] = {}
        # Per-state messages and watchdog transitions, each kind at most once a second.
        self.log = ThrottledLog(node.get_logger())
        self._last_computed = False  # whether the last command came from the controller
        # Whole-run samples only for the stats_file summary (56 bytes a state: 200 MB an hour).
        keep_all = bool(cfg.common.stats_file)
        self.compute_time = TimingLog(keep_all=keep_all)
        self.callback_time = TimingLog(keep_all=keep_all)  # state received → command published (s)
        self.plan_time = TimingLog(keep_all=keep_all)  # a target planned after the command (s)
        self.parts = StepParts(keep_all)  # the callback of computed steps, part by part
        self.state_age = TimingLog(keep_all=keep_all)
        self._last_good_stamp_ns = 0  # the last accepted state's stamp (ns), 0 before any
        # states_received when the last accepted state came: the states its stamp's span covers.
        self._received_at_good = 0
        # Whether the watchdog accepted the last state handled. Only accepted states go to the
        # delay estimate: its window ends at the newest stamp it was given, and one refused state
        # stamped far ahead (a driver's glitch) would hold it there, reading nothing, until the
        # stream's stamps caught up with it.
        self._state_accepted = False
        self._last_state_wall = time.monotonic()
        self._closing = False  # set by close(): what the watchdog notes then is the run's end
        # Wall s; states handled, commands, states skipped; the last good state's stamp (s, -inf: none)
        # and the states received up to it.
        self._window_start = (time.monotonic(), 0, 0, 0, -math.inf, 0)
        self._started = time.monotonic()
        self.executor = make_executor(cfg.common.executor)
        self.executor.add_node(node)
        refuse_parameter_changes(node)
        node.get_logger().info(
            f"controller {cfg.controller!r} on {robot.n} joints {list(self.joints)}; model {robot.source}"
        )

    # ---------------------------------------------------------------- hot path
    def _on_state_bytes(self, raw: bytes) -> None:
        """A serialized state: read in place when laid out as expected, else deserialized by
        rclpy and read by name; a layout rclpy read well is expected from then on (a publisher
        keeps its joint order and extra joints)."""
        t_in = time.perf_counter()
        if self._newer_may_be_queued(t_in):
            raw = self._newest_queued(raw)
        fast = self.state_wire.decode(raw)
        if fast is not None:
            if not self._order_noted:
                self._note_state_order(self.state_wire.names)
            sent = self._handle_state(t_in, *fast)
            if self._state_accepted:
                self.delay_estimator.add(fast[0], self.state_wire.decode_effort(raw), sent)
            return
        self.counts.states_via_rclpy += 1
        try:
            msg = deserialize_message(raw, JointStateMsg)
        except Exception as exc:  # rclpy's RMWError (not importable by a stable name): not a JointState
            # Refused like any unreadable state (the safe command answers the last good stamp);
            # raised here it would end the node and leave the arm without commands.
            unreadable = StateError(f"unreadable joint state message ({len(raw)} bytes): {exc}")
            self._handle_state(t_in, self._stamp_ns_of_last_good(), None, None, unreadable)
            return
        # Only little-endian bytes are read in place: a big-endian driver's layout stays rclpy's.
        if self._on_state(msg, t_in) and raw[:2] == CDR_LE[:2] and self.state_wire.learn(msg.name):
            # Two publishers naming the joints in different orders switch layouts at every state.
            self.log.info("layout", f"joint states named {list(msg.name)}: read in place from now on")

    def _clock_went_back(self, stamp: float) -> None:
        """A state stamped before the last accepted one arrived with the clock gone back too (a
        restarted simulator): the target of the previous run is dropped, the arm held where the
        new run starts."""
        self.target.reset(clock_reset=True)
        self.controller.reset()
        self.delay_estimator.reset()
        self.log.warning(
            "clock reset",
            f"time went back to {stamp:.3f} s with the joint states (simulator restarted?): "
            "holding the current pose until a new target arrives",
        )

    def _stamp_ns_of_last_good(self) -> int:
        """Stamp (ns) of the last accepted state, 0 before any: what a safe command answers
        when the refused message carried no readable stamp. Kept in ns as it came (every state
        the watchdog accepts is computed on, which records it): the watchdog's stamp is in s,
        which resolves ~240 ns at wall-clock times (1.8e9 s)."""
        return self._last_good_stamp_ns

    def _on_state_message(self, msg: JointStateMsg) -> None:
        """A joint state message (``serialized_io: false``)."""
        t_in = time.perf_counter()
        if self._newer_may_be_queued(t_in):
            msg = self._newest_queued(msg)
        self._on_state(msg, t_in)

    def _newer_may_be_queued(self, t_in: float) -> bool:
        """Whether to take the states queued behind the one handed over at ``t_in`` (perf_counter
        s): catching up after this process was away, or the last state's handling outlasted the
        stream's period (:mod:`~torque_ctrl_ros.core.backlog`; its usual step, :meth:`_deadline`)."""
        # begin() first: it notes every arrival, whatever queued_behind says.
        return self.catch_up.begin(t_in, self.supervisor.stream_period) or queued_behind(
            self._state_started, self._state_done, self._deadline()
        )

    def _newest_queued(self, first: Any) -> Any:
        """The newest of this arm's states queued on the state subscription behind ``first`` (a
        message, or its bytes with ``serialized_io``), taking every one; ``first`` when none is.
        Called while catching up after this process was away
        (:class:`~torque_ctrl_ros.core.backlog.CatchUp`), or after a state's handling outlasted
        the stream's period (:func:`~torque_ctrl_ros.core.backlog.queued_behind`).

        Another device's states (a gripper's driver on the same topic) are taken too and counted
        as foreign, never kept as the newest: handled instead of the arm's newest, one of them
        would leave the arm unanswered, and one queued behind each of the arm's states would
        skip them all and never end the catch-up.

        The executors skip a subscription event whose message was already taken (rclpy's
        EventsExecutor and ``Executor._take_subscription`` both take ``None`` and call nothing)."""
        sub = self._state_sub
        newest, newest_foreign, skipped = first, self._foreign_names(first), 0
        with sub.handle:
            while (got := sub.handle.take_message(sub.msg_type, sub.raw)) is not None:
                names = self._foreign_names(got[0])
                if names is not None:
                    self._ignore_foreign(names)
                    continue
                if newest_foreign is None:
                    skipped += 1
                else:  # the one handed over was another device's
                    self._ignore_foreign(newest_foreign)
                newest, newest_foreign = got[0], None
        self._skipped = skipped
        if self.catch_up.active:
            self.catch_up.taken(skipped)
            self.counts.backlog_skipped += skipped
        elif skipped:
            self.counts.behind_skipped += skipped
            reporting = (
                f", {self._diagnostics_took * 1e3:.2f} ms of it publishing /diagnostics after its command"
                if self._diagnostics_took > 0.0
                else ""
            )
            self.log.warning(
                "behind",
                f"falling behind the joint states: handling the last one took "
                f"{(self._state_done - self._state_started) * 1e3:.2f} ms{reporting} against their "
                f"{self.supervisor.stream_period * 1e3:.2f} ms period; skipped {skipped} queued state(s) "
                "for the newest (counted as behind_skipped)",
            )
        return newest

    def _foreign_names(self, state: Any) -> Sequence[str] | None:
        """The joint names of ``state`` (a message, or its bytes with ``serialized_io``) when they
        name none of this arm's joints (another device's state), else ``None`` (also when it
        cannot be read: refused as such when handled)."""
        if isinstance(state, bytes):
            if self.state_wire.decode(state) is not None:  # laid out as this arm's
                return None
            try:
                state = deserialize_message(state, JointStateMsg)
            except Exception:  # rclpy's RMWError: unreadable, see _on_state_bytes
                return None
        return state.name if self._names_none_of_ours(state) else None

    def _names_none_of_ours(self, msg: JointStateMsg) -> bool:
        """Whether ``msg`` names none of this arm's joints: some, all others', or none at all and
        no values either (an empty state, as a ``joint_state_publisher`` with no movable joints
        sends). A nameless state with values is this arm's, refused as such."""
        if msg.name:
            return self._joint_set.isdisjoint(msg.name)
        return not (len(msg.position) or len(msg.velocity) or len(msg.effort))

    def _ignore_foreign(self, names: Sequence[str]) -> None:
        """A state naming none of our joints (``names``): another device's (a gripper's driver
        publishing on /joint_states too), not a bad state of this arm, so no safe torque, no
        watchdog transition, no reset; counted."""
        self.counts.foreign_states += 1
        if self.counts.foreign_states == 1:
            # A warning: it is also what a driver with other joint names looks like.
            self.node.get_logger().warning(
                f"ignoring joint states that name none of our joints "
                f"{list(self.decoder.map.joint_names)} (got {list(names)}; counted as foreign_states)"
            )

    def _on_state(self, msg: JointStateMsg, t_in: float) -> bool:
        """A joint state message received at ``t_in`` (``perf_counter`` s); returns whether it
        could be read (names, lengths)."""
        if self._names_none_of_ours(msg):
            self._ignore_foreign(msg.name)
            return False
        stamp_ns = stamp_to_ns(msg.header.stamp)
        try:
            q, v = self.decoder.decode(msg)
        except StateError as exc:
            self._handle_state(t_in, stamp_ns, None, None, exc)
            return False
        if not self._order_noted:
            self._note_state_order(msg.name)
        sent = self._handle_state(t_in, stamp_ns, q, v)
        if not self._state_accepted:
            return True
        try:
            effort = self.decoder.decode_effort(msg)
        except StateError:  # efforts the map cannot read tell no delay
            effort = None
        self.delay_estimator.add(stamp_ns, effort, sent)
        return True

    def _note_state_order(self, names: Sequence[str]) -> None:
        """At the first readable state: warn when it names our joints in another order than the
        commands go in (``joints``). Commands carry no names, so a receiver that takes them in
        the order of its own states (this package's simulator does) would apply each torque to
        another joint; a driver may have reasons for two orders, hence a warning."""
        self._order_noted = True
        ours = [n for n in names if n in self._joint_set]
        if ours != list(self.joints):
            self.order_warning = (
                f"joint states name the joints in the order {ours}, but this node sends its commands, "
                f"which carry no joint names, in its own `joints` order {list(self.joints)}: the node "
                "receiving them must take them in that order, or each torque moves another joint "
                "(this package's simulator takes them in the order of its states, sim_node.joints)"
            )
            self.node.get_logger().warning(self.order_warning)

    def _warn_of_bounds_past(self, state: JointState) -> None:
        """At the first computed command, once it is out: warn of each bound the controller keeps
        that the arm starts past (:meth:`~torque_ctrl_ros.core.controllers.base.Controller.bounds_past`,
        e.g. a manipulability below ``singularity.w_min``): the controller moves the arm back, where
        whoever started it may expect it held."""
        self.bounds_warnings = []
        try:
            notes = self.controller.bounds_past(state)
        except Exception:  # a check that fails says so, and control goes on
            self.log.error(
                "bounds check",
                "checking the bounds the arm starts past failed (control goes on):\n"
                + traceback.format_exc().rstrip(),
            )
            return
        self.bounds_warnings = [
            f"the arm starts past a bound {self.controller.name} keeps: {n}" for n in notes
        ]
        for warning in self.bounds_warnings:
            self.node.get_logger().warning(warning)

    def _handle_state(
        self,
        t_in: float,
        stamp_ns: int,
        q: np.ndarray | None,
        v: np.ndarray | None,
        error: StateError | None = None,
    ) -> np.ndarray | None:
        """Supervisor, controller, command: the path of every state (``error``: it could not be
        read). Returns the torque sent (N·m, controller order), ``None`` if none was."""
        now = self.node.get_clock().now().nanoseconds * 1e-9
        self.counts.states_received += 1
        self._fallbacks_before_last_state = self.counts.watchdog_fallbacks
        self._last_state_wall = time.monotonic()
        stamp = stamp_ns * 1e-9
        catching_up = self.catch_up.active
        clock_lag = self.catch_up.away if catching_up and self._clock_lags_in_backlog else 0.0
        decision = self.supervisor.step(
            q, v, stamp, now, "" if error is None else str(error), clock_lag, self._skipped
        )
        self._skipped = 0
        if catching_up:
            self._caught_up(stamp)
        if decision.silence is not None:  # the gap before this state, said before the state itself
            self._on_transition(decision.silence)
        if decision.clock_reset:
            self._clock_went_back(stamp)
        out: ControlOutput | None = None
        computed: Computed | None = None  # set when the controller is called
        self._state_accepted = decision.action is Action.COMPUTE
        if self._state_accepted:
            self._last_good_stamp_ns = stamp_ns
            self._received_at_good = self.counts.states_received
            computed = self._compute(decision, now)
            decision, out = computed.decision, computed.output
        if decision.action is Action.FALLBACK:
            out = self._safe_command(decision)
        self._log_outcome(decision)
        if out is None:
            # No command (waiting, stopped, withheld): nothing for deferred /diagnostics to hold up.
            self._publish_deferred_diagnostics()
            self._state_started, self._state_done = t_in, time.perf_counter()
            return None
        if out.any_saturated:
            self.counts.saturated_commands += 1
            self.last_saturated = out.saturated_joints
        self.last_info = out.info
        self._last_computed = decision.action is Action.COMPUTE
        if out.info.get("fallback"):
            self.counts.controller_fallbacks += 1
            self.last_fallback_info = out.info
        if out.info.get("soft_retry"):
            self.counts.controller_soft_retries += 1
        tau = out.tau[self.command_index]
        if self.serialized:
            self.publisher.publish(self.command_wire.encode(tau, stamp_ns))
        else:
            self.publisher.publish(self.encoder.encode(tau, stamp_ns))
        self.counts.commands_published += 1
        t_out = time.perf_counter()
        deadline = self._deadline()
        self._time_callback(t_out - t_in, deadline)
        if self._last_computed and computed is not None:  # computed is set whenever _last_computed is
            self.parts.add(computed.t0 - t_in, t_out - computed.t_computed, out.info)
            if self.bounds_warnings is None and decision.state is not None:
                self._warn_of_bounds_past(decision.state)
            planned = self._take_due_targets(decision.state)
            if planned and t_out - t_in <= deadline < time.perf_counter() - t_in:
                self.counts.deadline_misses += 1  # the plan, not the command, outlasted the period
        self._publish_deferred_diagnostics()
        self._state_started, self._state_done = t_in, time.perf_counter()
        return out.tau

    def _take_due_targets(self, state: JointState | None) -> bool:
        """Plan the joint or frame target due at ``state`` now that its command is out
        (:meth:`TargetSource.take_due`): planned inside the reference, a plan (~0.3–0.6 ms)
        would hold up that command (with QPID under a 30 Hz stream of targets, nearly every
        planned state's command would be late). Returns whether a target was taken (or its plan
        failed), its time then kept in :attr:`plan_time`. An exception (a bug or a library
        error) drops that target, the motion under way going on, rather than ending the node."""
        if state is None:
            return False
        t0 = time.perf_counter()
        try:
            planned = self.target.take_due(state)
        except Exception:
            self.log.error("target exception", traceback.format_exc().rstrip())
            planned = True
        if planned:
            self.plan_time.add(time.perf_counter() - t0)
        return planned

    def _caught_up(self, stamp: float) -> None:
        """The state handled while catching up is stamped ``stamp`` (s): say, when that ends the
        catch-up, how many queued states it skipped."""
        catch_up = self.catch_up
        if catch_up.handled(stamp, self.supervisor.stream_period) and catch_up.skipped:
            self.log.warning(
                "backlog",
                f"no joint state for {catch_up.away * 1e3:.0f} ms (this process stopped or descheduled): "
                f"skipped {catch_up.skipped} queued states for the newest (counted as backlog_skipped)",
            )

    def _publish_deferred_diagnostics(self) -> None:
        """Publish the /diagnostics the timer deferred to the end of a state's handling, if any
        (:meth:`_on_diagnostics_timer`); the time it took is kept in ``_diagnostics_took`` (s, 0
        when none was due). It belongs to the handling: on a loaded host (1–2 ms) the states
        arriving meanwhile queue behind the next one, which the node then skips for the newest,
        and the "falling behind" warning says how much of the handling the report took."""
        self._diagnostics_took = 0.0
        if self._diagnostics_due:
            self._diagnostics_due = False
            t0 = time.perf_counter()
            self._publish_diagnostics()
            self._diagnostics_took = time.perf_counter() - t0

    def _compute(self, decision: Decision, now: float) -> Computed:
        """Run the target source and the controller on the state the supervisor accepted
        (``decision``, ``COMPUTE``), after the controller's reset and the target's resume it asks
        for. An exception from any of them (a target tracker's included) is a controller
        failure: the decision returned is then the supervisor's answer to it
        (:meth:`Supervisor.controller_failed`) and the output ``None``."""
        state = decision.state
        assert state is not None  # set on every COMPUTE decision
        self.state_age.add(now - decision.effective_stamp)
        out: ControlOutput | None = None
        t0 = time.perf_counter()
        try:
            if decision.reset_controller:
                self.controller.reset()
            self._resume_target(decision.resume)
            t0 = time.perf_counter()
            out = self.controller.compute(state, self.target.reference(state, plan=False))
        except Exception as exc:
            if not isinstance(exc, TorqueCtrlError):
                # A bug or a library error: the arm still gets the safe command rather than the
                # node dying with its last torque left applied by a driver without a timeout.
                self.log.error("controller exception", traceback.format_exc().rstrip())
            decision = self.supervisor.controller_failed(decision, exc, now)
        else:
            self.supervisor.command_computed(out.tau)
        t_computed = time.perf_counter()
        self.compute_time.add(t_computed - t0)
        return Computed(decision, out, t0, t_computed)

    def _safe_command(self, decision: Decision) -> ControlOutput | None:
        """The supervisor's safe command of a FALLBACK ``decision``, counted; ``None`` if it is
        withheld (not finite)."""
        if decision.withheld is not None:
            self.counts.withheld_commands += 1
            self.log.error(
                "withheld", f"safe torque {decision.withheld.tau.tolist()} is not finite: not published"
            )
            return None
        self.counts.fallback_commands += 1
        return decision.command

    def _log_outcome(self, decision: Decision) -> None:
        """A transition, a refused state, a good one the controller failed on, or a good one
        ignored while stopped: one line each."""
        wd = self.watchdog
        if decision.transition is not None:
            self._on_transition(decision.transition)
        elif decision.notice is Notice.REFUSED:
            self.log.error(
                "refused",
                f"joint state refused ({wd.last_reason.value if wd.last_reason else '?'}): "
                f"{self._with_order_note(wd.last_message)}",
            )
        elif decision.notice is Notice.FAILED:
            # Not "refused" either: the state was good, the controller's answer was not.
            self.log.error("controller failed", f"controller failed on the joint state: {wd.last_message}")
        elif decision.notice is Notice.IGNORED:
            # Not "refused": the state is good, and the stop's reason is not this state's.
            self.log.error(
                "stopped",
                "joint state ignored: the watchdog stopped and watchdog.auto_recover is false; "
                "restart the node to control again",
            )

    def _resume_target(self, resume: Resume) -> None:
        """Apply what the supervisor decided for the target when control resumes, and say it: a
        paused target runs late by the pause, a dropped one leaves the arm held."""
        if not self._has_target or resume.kind is ResumeKind.KEEP:
            return
        target = self.target.describe()  # "hold": no target taken (one reached and held is named)
        if resume.kind is ResumeKind.PAUSE:
            said = [f"the target ({target}) takes up where it stood"] if target != "hold" else []
            if self.target.pause(resume.since, resume.until):
                said.append("a trajectory due meanwhile starts as much later")
            if said:
                self.counts.target_pauses += 1
                self.log.warning(
                    "paused",
                    f"no torque computed for {(resume.until - resume.since) * 1e3:.0f} ms of the states' "
                    f"time: {'; '.join(said)}",
                )
            return
        if resume.joint >= 0:
            self.log.warning(
                "moved while silent",
                f"the arm moved {resume.moved:.3f} rad ({self.robot.joint_names[resume.joint]}) since the "
                f"last state computed on, more than {self.supervisor.resume_tolerance:g}: "
                "target dropped, holding where it is",
            )
        elif target != "hold":
            self.log.warning("dropped", f"target ({target}) dropped after the stop: holding where the arm is")
        if target != "hold":
            self.counts.target_drops += 1
        self.target.reset()

    def _deadline(self) -> float:
        """How long (s) a state's handling may take: the stream's usual step, learnt from the stamps
        of the states computed on (:attr:`Supervisor.typical_stream_step`, the median of the last
        steps, 1 ms at 1 kHz: a state lost on the way does not stretch it, where the longest step,
        :attr:`Supervisor.stream_period`, read 2 ms for 10 states after each; until a window of
        steps is learnt that period; a step over states skipped for a newer one is not learnt, so
        falling behind does not stretch it either); ``inf`` until known."""
        step = self.supervisor.typical_stream_step  # nan until a window of steps is learnt
        period = step if step > 0.0 else self.supervisor.stream_period
        return period if period > 0.0 else math.inf

    def _time_callback(self, seconds: float, deadline: float) -> None:
        """Record the whole state→command path (s); count it as a deadline miss when longer than
        ``deadline`` (s, :meth:`_deadline`). A target's plan after the command counts too, where it
        makes the state's handling outlast the period."""
        self.callback_time.add(seconds)
        if seconds > deadline:
            self.counts.deadline_misses += 1

    def _on_transition(self, transition: Transition) -> None:
        """Count a transition of the watchdog and log it: info back to OK, else an error with its reason."""
        if transition.state is WatchdogState.FALLBACK:
            self.counts.watchdog_fallbacks += 1
        elif transition.state is WatchdogState.STOPPED:
            self.counts.watchdog_stops += 1
        text = f"watchdog {transition.previous.value} -> {transition.state.value}"
        # At most one line a second under one key (ThrottledLog's period; the last one held back
        # is written by the next /diagnostics): states alternating good and bad (a flaky driver)
        # would log two lines per pair of states, 0.25 ms each. Urgent ones at once
        # (Transition.urgent).
        if transition.state is WatchdogState.OK:
            self.log.info("transition", text, force=transition.urgent)
        elif self._closing:
            # The states stopping before this node at the end of a run (a simulator's duration,
            # launch shutting down) is no fault: counted in the summary, not logged as an error.
            self.log.info("transition", f"{text} at shutdown: {transition.message}", force=True)
        else:
            self.log.error(
                "transition", f"{text}: {self._with_order_note(transition.message)}", force=transition.urgent
            )

    def _with_order_note(self, reason: str) -> str:
        """The watchdog's ``reason``, and, when it stopped on states jumping between poses after
        the warning on the joint order (:meth:`_note_state_order`), that warning as another
        cause: torques applied to other joints than meant make the arm's states jump too."""
        if not (self.order_warning and self.watchdog.conflict):
            return reason
        return (
            f"{reason}; or the commands moved other joints than meant: see the warning on the joint "
            "order at the first state"
        )

    # ---------------------------------------------------------------- reporting
    def _on_diagnostics_timer(self) -> None:
        """Publish /diagnostics now if no states are coming in, else at the end of the next state's
        handling: right after its command, or right after the watchdog when it sends none.

        Building and publishing them takes ~0.3–1 ms here. Fired at an arbitrary moment it would
        hold up the state arriving meanwhile (a late step in the simulator, up to one per second);
        right after a command it uses the idle time until the next state.
        """
        if time.monotonic() - self._last_state_wall < _DEFER_DIAGNOSTICS_S:
            self._diagnostics_due = True
        else:
            self._publish_diagnostics()

    def _check_silence(self, now_wall: float) -> float:
        """Let the supervisor note how long (s, up to ``now_wall``, monotonic) no state arrived;
        returns that time."""
        silent = now_wall - self._last_state_wall
        if self.counts.states_received:
            self._note_silence(self.node.get_clock().now().nanoseconds * 1e-9, silent)
        return silent

    def _note_silence(self, now: float, silent: float) -> None:
        """:meth:`Supervisor.silence` (``now``: the node's clock, s), logging a transition."""
        transition = self.supervisor.silence(now, silent)
        if transition is not None:
            self._on_transition(transition)

    def _flush_logs(self) -> None:
        """Write the messages the node's and the target source's logs hold back."""
        self.log.flush()
        self.target.log.flush()

    def _publish_diagnostics(self) -> None:
        """Publish one /diagnostics status (:meth:`_diagnostics`). An exception building it (a bug,
        here or in the controller's :meth:`diagnostics`) is logged with its traceback and published
        as an ERROR naming it, not raised: raised from a callback it would end the node, and leave
        the arm without commands over a report."""
        try:
            level, message, values = self._diagnostics()
        except Exception as exc:
            self.log.error("diagnostics failed", traceback.format_exc().rstrip())
            level = DiagnosticStatus.ERROR
            message = f"diagnostics failed (the node logged the traceback): {type(exc).__name__}: {exc}"
            values = {"watchdog_state": self.watchdog.state.value}
        array = DiagnosticArray()
        array.header.stamp = self.node.get_clock().now().to_msg()
        array.status = [
            status(f"{self.node.get_name()}: controller", self.config.controller, level, message, values)
        ]
        self.diag_publisher.publish(array)

    def _diagnostics(self) -> tuple[bytes, str, dict[str, Any]]:
        """Level, message and values of one /diagnostics status: :meth:`_diagnostic_values`, at the
        level and with the message of :func:`diagnostic_status`."""
        now_wall = time.monotonic()
        silent = self._check_silence(now_wall)
        self._flush_logs()
        step = self.supervisor.typical_stream_step  # the usual step between computed states
        state_publishers = publishing_nodes(self.node.get_publishers_info_by_topic(self._state_topic))
        commanders = publishing_nodes(self.node.get_publishers_info_by_topic(self._command_topic))
        self.delay_estimate, self.unfollowed = self.delay_estimator.read()
        values = self._diagnostic_values(now_wall, silent, step, state_publishers)
        values["command_publishers"] = commanders
        new_fallbacks = self.counts.controller_fallbacks - self._controller_fallbacks_reported
        self._controller_fallbacks_reported = self.counts.controller_fallbacks
        new_retries = self.counts.controller_soft_retries - self._soft_retries_reported
        self._soft_retries_reported = self.counts.controller_soft_retries
        states_warning = stream_warning(step, state_publishers, self.counts.foreign_states, self._state_topic)
        if states_warning:
            self.log.warning("stream", states_warning)
        commands_warning = command_publishers_warning(commanders, self._command_topic)
        if commands_warning:
            self.log.warning("commanders", commands_warning)
        delay_warned = delay_warning(self.delay_estimate, self.robot.command_delay, step)
        if delay_warned:
            self.log.warning("delay", delay_warned)
        unfollowed_warned = unfollowed_warning(self.unfollowed)
        if unfollowed_warned:
            self.log.warning("unfollowed", unfollowed_warned)
        handled_warned = handled_warning(values["handled_share"], values["skipped_rate_hz"])
        if handled_warned:
            self.log.warning("handled", handled_warned)
        retried = soft_retry_warning(new_retries)
        if retried:
            self.log.warning("soft retry", retried)
        clock_warned = clock_warning(values["state_age_p50_ms"], self._sim_time)
        if clock_warned:
            self.log.warning("clock", clock_warned)
        fallbacks_before, refused_before = self._watchdog_reported
        refused_now: dict[RejectReason, int] = {
            r: c for r, c in self.watchdog.rejected.items() if r is not RejectReason.SUPERSEDED
        }
        self._watchdog_reported = (self.counts.watchdog_fallbacks, refused_now)
        watchdog_warned = watchdog_warning(
            self.counts.watchdog_fallbacks - fallbacks_before,
            {r.value: c - refused_before.get(r, 0) for r, c in refused_now.items()},
        )
        warning = "; ".join(
            w
            for w in (
                watchdog_warned,
                retried,
                states_warning,
                commands_warning,
                delay_warned,
                unfollowed_warned,
                handled_warned,
                clock_warned,
            )
            if w
        )
        wd = self.watchdog
        level, message = diagnostic_status(
            wd.state, wd.last_message, new_fallbacks, self.last_fallback_info, warning
        )
        return level, message, values

    def _diagnostic_values(
        self, now_wall: float, silent: float, step: float, state_publishers: int
    ) -> dict[str, Any]:
        """The values of /diagnostics at ``now_wall`` (monotonic s), ``silent`` s after the last
        state; rates over the time since the last call. ``step``: the stream's usual step (s, nan
        while unknown); ``state_publishers``: nodes publishing states."""
        t_start, states0, commands0, skipped0, stamp0, good0 = self._window_start
        span = max(now_wall - t_start, 1e-9)
        counts, wd = self.counts, self.watchdog
        skipped = counts.behind_skipped + counts.backlog_skipped
        stamp, good = wd.last_good.stamp, self._received_at_good
        received, commands = counts.states_received, counts.commands_published
        self._window_start = (now_wall, received, commands, skipped, stamp, good)
        # The controller's costlier diagnostics of the same step, computed only now.
        details = self.controller.diagnostics() if self._last_computed else {}
        return {
            "controller": self.config.controller,
            "watchdog_state": wd.state.value,
            "watchdog_reason": wd.last_message,
            "state_rate_hz": (counts.states_received - states0) / span,
            "state_period_ms": step * 1e3,
            "state_publishers": state_publishers,
            "command_rate_hz": (counts.commands_published - commands0) / span,
            # States taken from the queue unhandled, for a newer one (falling behind, catching up).
            "skipped_rate_hz": (skipped - skipped0) / span,
            # The states from the last good one before the window to the last good one in it, the
            # span of the stamps: the ones refused after the last good one lie beyond it.
            "handled_share": handled_share(good - good0, stamp - stamp0, step),
            **asdict(counts),
            # States that started over on a clock gone back (a restarted simulator).
            "clock_resets": wd.clock_resets,
            "rejected_total": wd.rejected_total,
            **{f"rejected_{r.value}": c for r, c in wd.rejected.items()},
            "seconds_since_last_state": silent if counts.states_received else math.inf,  # inf: none yet
            "last_saturated_joints": ",".join(self.last_saturated),
            **{f"compute_{k}": v for k, v in percentiles_ms(self.compute_time.window()).items()},
            **{f"callback_{k}": v for k, v in percentiles_ms(self.callback_time.window()).items()},
            **{f"plan_{k}": v for k, v in percentiles_ms(self.plan_time.window()).items()},
            **self.parts.diagnostics(),
            "serialized_io": self.serialized,
            # Commands each state is carried over before the controller sees it (predict_delay).
            "predicted_commands": self.supervisor.predictor.in_flight,
            **delay_values(self.delay_estimate, self.unfollowed),
            **{f"state_age_{k}": v for k, v in percentiles_ms(self.state_age.window()).items()},
            **{f"info_{k}": v for k, v in self.last_info.items()},
            **{f"info_{k}": v for k, v in details.items()},
            **self.target.diagnostics(),
        }

    def summary(self) -> dict[str, Any]:
        """Whole-run figures (written to ``stats_file`` at exit)."""
        wd = self.watchdog
        return {
            "node": self.node.get_name(),
            "scheduling": current_policy(),
            "serialized_io": self.serialized,
            "controller": self.config.controller,
            "predicted_commands": self.supervisor.predictor.in_flight,
            **delay_values(*self.delay_estimator.read()),  # over the run's last second
            "wall_time_s": time.monotonic() - self._started,
            **asdict(self.counts),
            "clock_resets": wd.clock_resets,
            "watchdog_state": wd.state.value,
            "watchdog_transitions": wd.transitions,
            "watchdog_fallbacks_before_last_state": self._fallbacks_before_last_state,
            "watchdog_reason": wd.last_message,
            "watchdog_reason_kind": None if wd.last_reason is None else wd.last_reason.value,
            "rejected": {r.value: c for r, c in wd.rejected.items()},
            "targets_received": self.target.received,
            "targets_rejected": self.target.rejected,
            "compute": percentiles_ms(self.compute_time.everything()),
            "callback": percentiles_ms(self.callback_time.everything()),
            "plan": percentiles_ms(self.plan_time.everything()),
            "callback_parts": self.parts.summary(),
            "state_age": percentiles_ms(self.state_age.everything()),
        }

    # ---------------------------------------------------------------- lifecycle
    def run(self) -> None:
        """Spin until shutdown.

        ``spin_once`` in a loop rather than ``spin()``: rclpy 9's EventsExecutor.spin() neither ran
        callbacks nor returned on SIGTERM here, while its ``spin_once`` works. An exception out of
        a callback (rclpy's time source on a negative ``/clock``) is logged, not fatal
        (:func:`~.common.spin_once`).
        """
        context = self.node.context
        while context.ok() and not STOP.is_set():
            spin_once(self.executor, 0.1, self.log)

    def close(self, summary: bool = True) -> None:
        """Stop spinning, write the summary (``summary``: not for a run that never started, a
        composed start failing on the simulator's parameters: its ``stats_file`` would pass for
        this run's), destroy the node.

        The silence since the last state is accounted for first (nothing is published): the
        diagnostics timer checks it only once a period, and the states stop at the end of every
        simulated run, so the summary would otherwise rarely show the watchdog's fallback. A
        transition it causes is logged at info, "at shutdown": the end of a run is no error.
        """
        self.executor.shutdown()
        self._closing = True
        self._check_silence(time.monotonic())
        self._flush_logs()
        if summary:
            write_output("stats_file", lambda: write_json(self.config.common.stats_file, self.summary()))
        with exit_if_stuck():
            self.node.destroy_node()


def main(args: list[str] | None = None) -> int:
    """Entry point of the ``controller_node`` executable."""
    return run_node(ControllerNode, NODE_NAME, args)


if __name__ == "__main__":
    raise SystemExit(main())
