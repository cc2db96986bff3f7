"""Closed loop over DDS: ``sim_node`` and ``controller_node`` as two processes, per controller.

Two runs per controller, both started by :class:`torque_ctrl_ros.node_processes.NodePair` (the same code
``make sim`` uses), on a ROS domain of their own, with no third process listening:

- **realtime** (1 kHz, wall-clock paced): achieved step rate; state→command latency (the
  simulator's wall time from publishing state k to receiving the command that answers it)
  median / p99 / max, over the first answer to each state only and without the answer that
  ends the start-up wait (it holds the controller's cold first call); commands lost (published
  by the controller, never received by the simulator); steps *late* (the step was taken before
  the current state had been validly answered, i.e. no answer yet or a rejected one: the plant
  ran that millisecond on the command held from before while it was "fresh", within
  ``command_timeout``, else on the safe torque); steps on the safe torque.
- **lockstep**: the simulator waits for each answer, so the loop runs as fast as the two
  processes and DDS allow: simulated seconds per wall-clock second, the wall time counted from
  the first step on (process start, discovery and the cold first answer excluded).

No target is sent in either run: the arm holds its start pose (the compute section, by
contrast, runs the controllers along a motion). The controller's compute and callback figures
are over every call, its cold first call included (it is their max in most runs).

With ``composed``, both nodes run in one process on one executor
(:mod:`torque_ctrl_ros.nodes.composed`, what a component container does).

Before each realtime run, :mod:`.host` times a bare 1 kHz sleep loop under the same scheduling
(``host_timer``): the share of ticks the host itself woke late, the floor under the run's late
steps. Around every run, realtime and lockstep, the guest's steal counters (``host_steal``,
:func:`.host.steal_between`) say how much CPU time the hypervisor took while it ran, start-up and
shutdown of the nodes included.

Figures come from the summaries the nodes write at exit (``stats_file``), i.e. the very
numbers ``make sim`` prints and /diagnostics shows.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..node_processes import Domain, NodePair, float_or_nan, step_parts
from ..nodes.scheduling import UNPLACED, Placement
from . import host

_NAN = float("nan")
#: Wall-clock margin (s) for node start-up (imports, model loading, discovery) and shutdown.
_START_MARGIN_S = 60.0


def _section_params(name: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """Controller parameters as ``<controller>.<key>`` overrides of the node's parameter file."""
    return {f"{name}.{key}": value for key, value in params.items()}


def closed_loop(
    name: str,
    params: Mapping[str, Any],
    mode: str,
    seconds: float,
    out: Path,
    domain: int,
    params_file: Path | None = None,
    placement: Placement = UNPLACED,
    composed: bool = False,
) -> dict[str, Any]:
    """Run ``name`` for ``seconds`` simulated seconds in ``mode``; figures from both nodes' summaries.

    Wall-clock limit: ``seconds`` (realtime) or 4 × ``seconds`` (lockstep), plus a start-up
    margin; a lockstep run that crawls slower than a quarter of real time is stopped there (the
    figures then say how far it got).
    """
    pair = NodePair(
        domain,
        out,
        name,
        mode,
        seconds,
        params_file=params_file,
        controller_params=_section_params(name, params),
        placement=placement,
        composed=composed,
    )
    with pair:
        finished = pair.wait(seconds * (1.0 if mode == "realtime" else 4.0) + _START_MARGIN_S)
    sim, ctrl = pair.stats()
    return {
        "mode": mode,
        "finished": finished,
        "clean_exit": pair.clean_exit(),
        "scheduling": pair.scheduling(),
        **summary_figures(sim, ctrl),
        "logs": str(out),
    }


def summary_figures(sim: Mapping[str, Any], ctrl: Mapping[str, Any]) -> dict[str, Any]:
    """The closed-loop figures from the simulator's and the controller's summaries (NaN where
    a summary lacks what a figure needs)."""
    steps = int(sim.get("steps", 0))
    latency = sim.get("latency", {})
    compute = ctrl.get("compute", {})
    published = ctrl.get("commands_published")
    received = sim.get("commands_received")
    # The controller answers each state once; commands it published that never reached the
    # simulator are lost. Its answer to the very last state may still have been in flight when
    # the simulator exited (it waits 50 ms for it): one command is let off only then. A figure
    # that is missing (a node wrote no summary) is NaN, which fails its target.
    lost: float = _NAN
    if published is not None and received is not None:
        in_flight = 0 if sim.get("last_state_answered", False) else 1
        lost = max(0, published - received - in_flight)
    late = sim.get("late_steps")
    # Ticks the realtime simulator gave up when over 50 ms behind ran no step: late, all of them.
    skipped = int(sim.get("skipped_ticks", 0))
    return {
        "sim_time_s": sim.get("sim_time_s", _NAN),
        "wall_time_s": sim.get("wall_time_s", _NAN),
        "steps": steps,
        "step_rate_hz": sim.get("step_rate_hz", _NAN),
        "realtime_factor": sim.get("realtime_factor", _NAN),
        "latency_ms": {k: float_or_nan(latency.get(k)) for k in ("p50_ms", "p90_ms", "p99_ms", "max_ms")},
        "answered_states": sim.get("answered_states", 0),
        # States 0..steps were published; those never answered (dropped on the way to the
        # controller, e.g. a keep-last queue overrun while it stalled, or refused by it).
        "unanswered_states": max(0, steps + 1 - int(sim.get("answered_states", 0))) if steps else _NAN,
        "commands_published": published,
        "commands_received": received,
        "commands_lost": lost,
        "late_steps": late if late is not None else _NAN,
        "skipped_ticks": skipped,
        "late_percent": 100.0 * (late + skipped) / (steps + skipped) if steps and late is not None else _NAN,
        # Runs of consecutive late steps, and the longest (steps in a row whose state was not
        # answered by its tick: the plant ran one more step than that on the command held through it).
        "late_runs": sim.get("late_runs"),
        "longest_late_run": sim.get("longest_late_run"),
        "safe_torque_steps": sim.get("missing_command_steps"),
        "overruns": sim.get("overruns"),
        "rejected_commands": sim.get("rejected_commands"),
        "controller_compute_ms": {k: float_or_nan(compute.get(k)) for k in ("p50_ms", "p99_ms", "max_ms")},
        "step_parts_ms": step_parts(sim, ctrl),
        "fallback_commands": ctrl.get("fallback_commands"),
        "watchdog_state": ctrl.get("watchdog_state"),
    }


def run(
    controllers: Mapping[str, Mapping[str, Any]],
    mode: str,
    seconds: float,
    out_dir: Path | None = None,
    params_file: Path | None = None,
    placement: Placement = UNPLACED,
    composed: bool = False,
    host_seconds: float = 0.0,
) -> dict[str, Any]:
    """:func:`closed_loop` for each ``name → params`` in ``mode``.

    Logs go under ``out_dir/<mode>/<name>`` (``<mode>_composed`` with ``composed``).

    With ``host_seconds > 0`` (realtime only), the host's timer floor
    (:func:`.host.measure`, the simulator's scheduling) is measured right before each run and kept
    under the run's ``host_timer``. Every run gets ``host_steal``.
    """
    out_dir = out_dir or Path(tempfile.mkdtemp(prefix="torque_ctrl_ros_bench_"))
    domain = Domain()
    results: dict[str, Any] = {}
    try:
        for name, params in controllers.items():
            floor = host.measure(host_seconds, placement) if mode == "realtime" and host_seconds > 0 else None
            ticks = host.cpu_ticks()
            results[name] = closed_loop(
                name,
                params,
                mode,
                seconds,
                out_dir / f"{mode}{'_composed' if composed else ''}" / name,
                domain.id,
                params_file,
                placement,
                composed,
            )
            results[name]["host_steal"] = host.steal_between(ticks, host.cpu_ticks())
            if floor is not None:
                results[name]["host_timer"] = floor
    finally:
        domain.release()
    return {
        "mode": mode,
        "processes": 1 if composed else 2,
        "seconds": seconds,
        "rt_priority": placement.rt_priority,
        "cpus": {"sim_node": placement.sim_cpus, "controller_node": placement.controller_cpus},
        "cpu_latency_us": placement.cpu_latency_us,
        "controllers": results,
    }
