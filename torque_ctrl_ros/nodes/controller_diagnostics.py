"""What the controller node's ``/diagnostics`` say beyond its counts: the status's level and
message, and the warnings about the joint-state stream, the delay the efforts show and the share of
states handled; and where each computed step's time goes (:class:`StepParts`). Every key:
docs/interfaces.md, "`/diagnostics`, key by key"."""

from __future__ import annotations

import math

from diagnostic_msgs.msg import DiagnosticStatus

from ..core.delay_estimate import DelayEstimate, Unfollowed
from ..core.robot import CONTROL_PERIOD, showing_period
from ..core.safety import WatchdogState
from .common import STATE_TOPIC, TimingLog, percentiles_ms

#: The status's level in each state of the watchdog.
LEVEL = {
    WatchdogState.WAITING: DiagnosticStatus.WARN,
    WatchdogState.OK: DiagnosticStatus.OK,
    WatchdogState.FALLBACK: DiagnosticStatus.ERROR,
    WatchdogState.STOPPED: DiagnosticStatus.ERROR,
}


#: The compute parts a controller may report in its ``info``: (summary name, key in µs).
INFO_PARTS = (("prepare", "prepare_time_us"), ("qp_solve", "qp_solve_time_us"))


def diagnostic_status(
    state: WatchdogState, reason: str, new_fallbacks: int, fallback_info: dict[str, float], warning: str
) -> tuple[bytes, str]:
    """Level and message of the controller node's /diagnostics status.

    The watchdog's ``state`` sets the level (``reason``: its last message, said in FALLBACK and
    STOPPED). When it is OK, ``new_fallbacks`` steps answered by the controller's own safe torque
    since the last report (e.g. a failed QP: valid commands, but no tracking) make it a WARN
    naming the QP figures of ``fallback_info``. A ``warning`` (the state stream's, the command
    publishers', the measured delay's and the states handled, joined: :func:`stream_warning`,
    :func:`~.common.command_publishers_warning`, :func:`delay_warning`, :func:`handled_warning`)
    (soft retries of hard barrier rows among them: :func:`soft_retry_warning`)
    is the message of a WARN when all else is OK, and follows the message otherwise (WAITING's
    WARN, a controller fallback's WARN, an ERROR: never lowered).
    """
    level = LEVEL[state]
    message = state.value
    if state in (WatchdogState.FALLBACK, WatchdogState.STOPPED):
        message = f"{state.value}: {reason}"
    if new_fallbacks and level == DiagnosticStatus.OK:
        level = DiagnosticStatus.WARN
        message = f"controller fallback on {new_fallbacks} step(s) since the last report: " + ", ".join(
            f"{k} {v:.3g}" for k, v in fallback_info.items() if k.startswith("qp_")
        )
    if warning:
        if level == DiagnosticStatus.OK:
            level, message = DiagnosticStatus.WARN, warning
        else:
            message = f"{message}; {warning}"
    return level, message


def soft_retry_warning(new_retries: int) -> str:
    """The WARN of ``new_retries`` QP steps since the last report whose hard barrier rows could not
    hold, solved again with every group soft (``info["soft_retry"]``), "" if none: the commands are
    valid, but a bound configured hard gave way to its slack."""
    if not new_retries:
        return ""
    return (
        f"hard barrier rows could not hold on {new_retries} step(s) since the last report: solved again "
        "with every barrier group soft (the rows met as far as the torque limits allow)"
    )


def watchdog_warning(new_fallbacks: int, new_refused: dict[str, int]) -> str:
    """The WARN of the watchdog's fallbacks (``new_fallbacks``) and refused states (``new_refused``,
    by reason, superseded ones left out: no fault) since the last report, "" if none. The level
    follows the watchdog's state at the report, and a fallback over within the second between two
    reports would not show: a driver sending one bad state in fifty kept the status OK while the
    node braked twenty times a second (a review)."""
    refused = sum(new_refused.values())
    if not (new_fallbacks or refused):
        return ""
    parts = []
    if new_fallbacks:
        parts.append(f"fell back {new_fallbacks} time(s)")
    if refused:
        reasons = ", ".join(f"{reason} {count}" for reason, count in new_refused.items() if count)
        parts.append(f"refused {refused} joint state(s) ({reasons})")
    return f"the watchdog {' and '.join(parts)} since the last report"


#: How far (a share of CONTROL_PERIOD) the stream's usual step may be from it: beyond, the stream is
#: not the 1 kHz every gain and damping check assumes.
PERIOD_TOLERANCE = 0.25


def stream_warning(step: float, state_publishers: int, foreign_states: int, topic: str = STATE_TOPIC) -> str:
    """What /diagnostics warn of in the joint-state stream, "" if nothing:

    - a usual step ``step`` (s, :attr:`Supervisor.typical_stream_step`, nan while unknown) off
      :data:`CONTROL_PERIOD` by more than :data:`PERIOD_TOLERANCE`: the
      dampings and gains were checked for one state per 1 ms; at 500 Hz each is twice as close
      to its bound (:data:`~..core.robot.DEFAULT_DAMPING`'s largest eigenvalue of
      ``h·M⁻¹·K_d``, 0.975 at ``h`` = 1 ms, becomes 1.95 at 2 ms: unstable);
    - more than one publisher on the state topic while no state named other joints (a gripper's
      driver sharing the topic does): a second source of this arm's states, e.g. a
      joint_state_publisher started with a description next to the driver, whose states the
      controller would answer as the arm's.
    """
    if abs(step - CONTROL_PERIOD) > PERIOD_TOLERANCE * CONTROL_PERIOD:  # (not for nan)
        return (
            f"joint states come every {step * 1e3:.2f} ms ({1.0 / step:.0f} Hz): the controllers' gains and "
            f"dampings were checked for one every {CONTROL_PERIOD * 1e3:g} ms"
        )
    if state_publishers > 1 and foreign_states == 0:
        return (
            f"{state_publishers} publishers on {topic}: joint states of this arm from more than one "
            "source (a joint_state_publisher next to the driver?)"
        )
    return ""


#: The share of the joint states below which too few are handled, each with a command of its own:
#: at the Gen3's 1 kHz, commands at under ~800 Hz are audible (the simulator runs the missing
#: periods on the command held from before; what the Gen3's driver does there is not in the facts).
LEAST_HANDLED = 0.8


def handled_share(handled: int, stamp_span: float, step: float) -> float:
    """The share of the states the stream sent over a window that were handled: ``handled``
    against the number its stamps span, ``stamp_span`` (s, from the last good state before the
    window to the last in it) over the stream's usual ``step`` (s). Counted by the stamps, so
    that the states the middleware dropped from a full subscription queue count too (they never
    reach the node). ``nan`` while the step is unknown or the stamps span under 100 steps (no
    good state yet, a stream that stood still, a clock gone back)."""
    if not (step > 0.0 and 100.0 * step <= stamp_span < math.inf):
        return math.nan
    return handled / (stamp_span / step)


def handled_warning(share: float, skipped_rate: float) -> str:
    """What /diagnostics warn of when under :data:`LEAST_HANDLED` of the joint states the stream
    sent were handled (``share``: :func:`handled_share`; "" for nan): the controller fell behind
    (a handling longer than the period: :func:`~..core.backlog.queued_behind`) or caught up after
    a stall, taking the newest state (``skipped_rate`` states a second skipped so), and any states
    beyond the subscription's depth were dropped before it could. A stream whose stamps run on
    over a pause of its own (a driver stamping the wall clock after a stall) reads the same for
    one window; the watchdog's silence says that one apart."""
    if not share < LEAST_HANDLED:
        return ""
    return (
        f"{100.0 * share:.0f} % of the joint states were handled, each with a command of its own (by "
        f"their stamps; {skipped_rate:.0f} a second skipped for newer ones, in behind_skipped and "
        "backlog_skipped, the rest dropped from the full subscription queue or never sent): the arm gets "
        "no command of its own for those periods, and the Gen3 is audible below ~800 commands a second"
    )


#: How far (ms) the joint states' stamps may run ahead of the node's wall clock at the median
#: before /diagnostics warn: a driver on this machine stamps its states before they arrive, so
#: their age is positive.
CLOCK_AHEAD_MS = 1.0


def clock_warning(state_age_p50_ms: float, sim_time: bool) -> str:
    """What /diagnostics warn of when, on the wall clock (not ``sim_time``, where a state comes a
    step ahead of its ``/clock``), the states' median age is more than :data:`CLOCK_AHEAD_MS`
    below 0: the driver's clock runs ahead of this machine's (a driver on another computer, the
    robot's own clock), and a state is refused as stale only once ``max_age`` plus that offset
    old. Ahead by over ``watchdog.max_future`` every state is refused; within it, the stamps are
    counted at most ``max_age`` ahead and the age reads no lower than ``−max_age``: the offset
    may be larger than this says (a review: 0.5 s ahead, states 300 ms late were computed on)."""
    if sim_time or not state_age_p50_ms < -CLOCK_AHEAD_MS:
        return ""
    return (
        f"the joint states are stamped {-state_age_p50_ms:.1f} ms (at least) ahead of this machine's clock "
        "at the median: the driver's clock runs ahead (synchronise the two), and a late state is refused "
        "as stale only that much later"
    )


def delay_values(estimate: DelayEstimate | None, unfollowed: Unfollowed | None = None) -> dict[str, float]:
    """``measured_delay_ms`` and its ``measured_delay_correlation`` (nan: not read), and
    ``efforts_follow_commands``: 1 where a delay was read, 0 where the efforts followed none of the
    commands (``unfollowed``), nan where neither can be told."""
    delay, correlation = (math.nan, math.nan) if estimate is None else (estimate.delay, estimate.correlation)
    follow = 1.0 if estimate is not None else 0.0 if unfollowed is not None else math.nan
    return {
        "measured_delay_ms": delay * 1e3,
        "measured_delay_correlation": correlation,
        "efforts_follow_commands": follow,
    }


def unfollowed_warning(unfollowed: Unfollowed | None) -> str:
    """What /diagnostics warn of when the states' efforts followed none of the commands sent
    (:class:`~..core.delay_estimate.Unfollowed`), "" otherwise."""
    if unfollowed is None:
        return ""
    return (
        f"the commands varied by {unfollowed.spread:.2g} N·m (standard deviation) over the last second, "
        f"but the joint states' efforts followed none of them 1–20 ms later (correlation at most "
        f"{unfollowed.correlation:.2f}): is the driver applying them (torque mode on)? Torque mode "
        'switched on now would apply the last command at once (docs/hardware.md, "Start order")'
    )


def delay_warning(
    estimate: DelayEstimate | None, command_delay: float, stream_step: float = CONTROL_PERIOD
) -> str:
    """What /diagnostics warn of when the states' efforts show another delay than
    ``command_delay`` (s), "" if they show the same or none (:mod:`~..core.delay_estimate`).
    ``command_delay`` runs to the first state that shows the command: in whole periods, rounded
    up (4.4 ms: the fifth, :func:`~..core.robot.showing_period`), as the start-up checks count it.

    On a stream slower than 1 kHz (its usual step ``stream_step``, s; nan while unknown) commands
    and efforts exist once per state, so the estimate comes in whole steps: up to a step beyond
    the showing period is the same delay (a 5 ms path read 6 ms at 500 Hz, 8 ms at 250 Hz)."""
    if estimate is None:
        return ""
    showing = showing_period(command_delay)
    spread = max(1, round(stream_step / CONTROL_PERIOD)) if math.isfinite(stream_step) else 1
    if showing <= estimate.periods < showing + spread:
        return ""
    return (
        f"the joint states' efforts show each command {estimate.delay * 1e3:g} ms after the state it "
        f"answers (correlation {estimate.correlation:.2f}), command_delay says {command_delay * 1e3:g} ms: "
        "the delay prediction and the start-up checks assume command_delay (docs/hardware.md, "
        '"The delay the efforts show")'
    )


class StepParts:
    """Where the callback of a computed step goes (s), for the summary and the benchmark.

    ``state_in``: callback start → controller called (reading the state, the watchdog);
    ``command_out``: controller returned → command published (encoding, ``publish``); in
    between the controller's compute (:attr:`~.controller_node.ControllerNode.compute_time`), of which the
    parts a controller reports in its ``info`` (:data:`INFO_PARTS`: the QP controllers'
    kinematics, tasks and barriers, and their QP updates and solves).
    """

    def __init__(self, keep_all: bool = True) -> None:
        self._keep_all = keep_all  # whole-run samples as well as the window (TimingLog)
        self.state_in = TimingLog(keep_all=keep_all)
        self.command_out = TimingLog(keep_all=keep_all)
        self.info: dict[str, TimingLog] = {}

    def add(self, state_in: float, command_out: float, info: dict[str, float]) -> None:
        """One computed step: ``state_in`` and ``command_out`` (s), the compute parts in ``info``."""
        self.state_in.add(state_in)
        self.command_out.add(command_out)
        for name, key in INFO_PARTS:
            us = info.get(key)
            if us is not None:
                log = self.info.get(name)
                if log is None:
                    log = self.info[name] = TimingLog(keep_all=self._keep_all)
                log.add(us * 1e-6)

    def _logs(self) -> dict[str, TimingLog]:
        return {"state_in": self.state_in, "command_out": self.command_out, **self.info}

    def summary(self) -> dict[str, dict[str, float]]:
        """Percentiles (ms) of every part recorded, over the whole run."""
        return {name: percentiles_ms(log.everything()) for name, log in self._logs().items()}

    def diagnostics(self) -> dict[str, float]:
        """``<part>_p50_ms`` … ``<part>_max_ms`` over the latest steps, for /diagnostics."""
        return {
            f"{name}_{k}": v
            for name, log in self._logs().items()
            for k, v in percentiles_ms(log.window()).items()
        }
