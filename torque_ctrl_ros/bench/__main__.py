"""``make bench`` / ``python -m torque_ctrl_ros.bench``: the performance figures of issue 6.

Sections (``--sections``, default all):

- ``compute``: controller compute per step vs the floor (bare ``pin.rnea``; bare warm ProxSuite
  solves for the QP controllers), over states along a simulated motion; the QP controllers'
  step part by part (:func:`.compute.qp_step_parts`);
- ``conversions``: ROS message ↔ numpy conversions per step, CDR codecs and rclpy messages;
- ``dds``: closed loop at 1 kHz realtime, simulator and controller as two processes, each run
  preceded by the host's timer floor (:mod:`.host`: how late a bare 1 kHz sleep loop wakes);
  where each controller's state→command latency goes (:func:`torque_ctrl_ros.node_processes.step_parts`);
- ``lockstep``: simulated seconds per wall-clock second, two processes, lockstep;
- ``lockstep_composed``: the same with both nodes in one process (a component container).

Prints a table with each target of issue 6 marked PASS / FAIL next to its figure, and writes
everything (machine description included) as JSON to ``--out``. Issue 6 lets QPID and HQPID
meet their DDS timing targets another way, by a report that "says precisely which part of the
step costs what": a failed latency or late-steps target (not lost commands, which no breakdown
accounts for) is then marked as met that way when every part of their step was measured, and
counted apart from the PASSes.

    python -m torque_ctrl_ros.bench [--quick] [--out bench_results/bench.json]
        [--sections compute,conversions,dds,lockstep] [--controllers qpid,hqpid] [--dds-seconds 20]
        [--host-seconds 3] [--rt-priority 20] [--cpus auto] [--cpu-latency-us 0]
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from ..core.errors import ConfigError
from ..node_processes import STEP_PARTS
from ..nodes.scheduling import Placement, parse_cpu_latency, release_cpu_latency, request_cpu_latency
from .configs import BENCH_CONFIGS
from .stats import WARMUP, machine_description

SECTIONS = ("compute", "conversions", "dds", "lockstep", "lockstep_composed")


@dataclass(frozen=True)
class Target:
    """One target of issue 6 checked against its figure.

    Attributes:
        section: benchmark section the figure comes from.
        subject: controller (or ``-``).
        what: the quantity, with its unit.
        figure: measured value.
        limit: the target, e.g. ``<= 0.5``.
        passed: the figure meets the limit (False for a missing / NaN figure).
        alternative: for a failed target that issue 6 lets be met another way, that way when
            this run meets it (QPID / HQPID over DDS: the report breaks their step down), else "".
        context: what the run says about a failure beyond the figure ("" if nothing): for late
            steps, the host's own timer floor measured just before the run.
    """

    section: str
    subject: str
    what: str
    figure: float
    limit: str
    passed: bool
    alternative: str = ""
    context: str = ""


def _check(section: str, subject: str, what: str, figure: Any, op: str, bound: float) -> Target:
    value = float("nan") if figure is None else float(figure)
    ok = math.isfinite(value) and {"<=": value <= bound, ">=": value >= bound, "<": value < bound}[op]
    return Target(section, subject, what, value, f"{op} {bound:g}", bool(ok))


#: Compute targets: controller → (max ratio to one bare rnea, max median µs, max ratio to QP floor).
COMPUTE_TARGETS: dict[str, tuple[float | None, float | None, float | None]] = {
    "gravity_comp": (15.0, None, None),
    "computed_torque": (15.0, None, None),
    "achd_rnea": (40.0, None, None),
    "qpid": (None, 100.0, 3.0),
    "hqpid": (None, 200.0, 3.0),
}


#: The late-step target's quantity. A late step is one the simulator took before the state it had
#: published had been validly answered (no answer yet, or a rejected one): the plant ran that
#: millisecond on the command held from before while it was fresh, else on the safe torque. Not
#: "without a fresh command": in the simulator, "fresh" means a held command within
#: ``command_timeout``, which a late step usually still has.
LATE_STEPS = "steps whose state was not answered by its tick (%)"

#: The controllers whose DDS targets may be met by a breakdown of their step instead.
QP_CONTROLLERS = ("qpid", "hqpid")
BREAKDOWN = "step broken down in the report"
#: The parts of a step over DDS in the order of the report: the transport (``hops``) right after
#: the state leaves the simulator (see :func:`torque_ctrl_ros.node_processes.step_parts`).
STEP_COLUMNS = (STEP_PARTS[0][0], "hops", *(name for name, _, _ in STEP_PARTS[1:]))


def _steal_ms(fig: dict[str, Any]) -> float | None:
    """CPU time (ms, all CPUs) the hypervisor took during a closed-loop run; None if not measured."""
    value = fig.get("host_steal", {}).get("steal_ms", {}).get("cpu")
    return None if value is None else float(value)


def _broken_down(parts: dict[str, Any]) -> bool:
    """Every part of a QP controller's step was measured (finite p50s)."""
    return all(math.isfinite(parts.get(k, {}).get("p50_ms", math.nan)) for k in STEP_COLUMNS)


def targets(results: dict[str, Any]) -> list[Target]:
    """Every target of issue 6 whose section ran, with its figure."""
    out: list[Target] = []
    compute = results.get("compute", {}).get("controllers", {})
    for name, fig in compute.items():
        ratio_rnea, max_us, ratio_qp = COMPUTE_TARGETS.get(name, (None, None, None))
        if ratio_rnea is not None:
            out.append(
                _check("compute", name, "median / bare rnea", fig["ratio_to_rnea_median"], "<=", ratio_rnea)
            )
        if max_us is not None:
            out.append(_check("compute", name, "median (µs)", fig["median_us"], "<=", max_us))
        if ratio_qp is not None:
            out.append(
                _check(
                    "compute", name, "median / bare warm QP", fig.get("ratio_to_qp_median"), "<=", ratio_qp
                )
            )
    for name, fig in results.get("dds", {}).get("controllers", {}).items():
        late = _check("dds", name, LATE_STEPS, fig["late_percent"], "<", 0.5)
        host_late = fig.get("host_timer", {}).get("late_percent")
        steal = _steal_ms(fig)
        if not late.passed:
            # How often the host woke a bare sleep loop placed like the simulator > 0.5 ms late just
            # before (a simulator woken that late leaves the controller under half its 1 ms), and
            # how much CPU time the hypervisor took during the run itself.
            context = []
            if host_late is not None:
                context.append(f"host's bare 1 kHz timer late on {_f(float(host_late))} % of ticks")
            if steal is not None:
                context.append(f"hypervisor took {_f(steal)} ms of CPU time during the run")
            late = replace(late, context="; ".join(context))
        checks = [
            _check("dds", name, "commands lost", fig["commands_lost"], "<=", 0),
            _check("dds", name, "latency median (ms)", fig["latency_ms"]["p50_ms"], "<=", 0.5),
            _check("dds", name, "latency p99 (ms)", fig["latency_ms"]["p99_ms"], "<=", 2.0),
            late,
        ]
        # Issue 6: "QPID/HQPID reach the same or the report says precisely which part of the
        # step costs what": that speaks for the timing targets (latency, late steps), not for
        # lost commands, which no breakdown of a step's cost accounts for.
        if name in QP_CONTROLLERS and _broken_down(fig.get("step_parts_ms", {})):
            checks = [
                t if t.passed or t.what == "commands lost" else replace(t, alternative=BREAKDOWN)
                for t in checks
            ]
        out += _unless_cut_short(checks, fig)
    for section in ("lockstep", "lockstep_composed"):
        lock = results.get(section, {}).get("controllers", {})
        if "computed_torque" in lock:
            fig = lock["computed_torque"]
            check = _check(
                section, "computed_torque", "simulated s per wall s", fig["realtime_factor"], ">=", 4.0
            )
            out += _unless_cut_short([check], fig)
    return out


def _unless_cut_short(checks: list[Target], fig: Mapping[str, Any]) -> list[Target]:
    """``checks`` as they are for a run that finished and whose nodes exited cleanly; for one
    cut short (a node died, the wall-clock limit) every check fails: its figures cover a part
    of the run only."""
    if fig.get("finished", True) and fig.get("clean_exit", True):
        return checks
    why = "run cut short" if not fig.get("finished", True) else "a node did not exit cleanly"
    return [replace(t, passed=False, alternative="", context=why) for t in checks]


# -------------------------------------------------------------------- table
def _f(value: Any, digits: int = 3) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return "nan" if not math.isfinite(value) else f"{value:.{digits}g}"
    return str(value)


def _p50_p99(figures: dict[str, float] | None) -> str:
    """``p50 / p99`` (ms), ``p50`` alone when there is no p99, ``-`` when absent."""
    if not figures:
        return "-"
    p99 = figures.get("p99_ms", math.nan)
    return _f(figures["p50_ms"], 2) + ("" if math.isnan(p99) else f" / {_f(p99, 2)}")


def _table(header: list[str], rows: Iterable[list[str]]) -> str:
    rows = [header, *rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = [
        "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        for r in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def format_report(results: dict[str, Any]) -> str:
    """The human-readable tables of ``results`` (what :func:`main` prints)."""
    parts: list[str] = []
    m = results["machine"]
    parts.append(
        f"torque_ctrl_ros benchmark, {results['date']}, {m['cpu']} ({m['cores']} cores), "
        f"load {' '.join(f'{x:.2f}' for x in m['load_average_1_5_15'])}, Python {m['python']}, "
        f"commit {results.get('git', {}).get('commit', '?')}"
    )
    verdict: dict[tuple[str, str], list[Target]] = {}
    for t in results.get("targets_list", []):
        verdict.setdefault((t.section, t.subject), []).append(t)

    def marks(section: str, subject: str) -> str:
        ts = verdict.get((section, subject), [])
        return " ".join(
            f"{t.what} {_f(t.figure)} {t.limit}: "
            + ("PASS" if t.passed else "FAIL (broken down)" if t.alternative else "FAIL")
            for t in ts
        )

    if "compute" in results:
        c = results["compute"]
        parts.append(
            f"\nController compute per step ({c['states']} states along a simulated motion); floors (bare "
            "pin.rnea, bare warm solves of the same QPs) timed in blocks interleaved with each controller; "
            f"not timed: {c['warmup']} warm-up calls before each series but the parts, and for the QP "
            "controllers a cold step at state 0 after them before the back-to-back series; 1 kHz paced: "
            f"one call per ms, idle in between, as in a node, over the first {c['paced_states']} states"
            + (f" ({held})" if (held := results.get("settings", {}).get("cpu_latency")) else "")
        )
        rows = []
        for name, fig in c["controllers"].items():
            qp = fig.get("floor_qp")
            rows.append(
                [
                    name,
                    _f(fig["median_us"]),
                    _f(fig["p99_us"]),
                    _f(fig["floor_rnea"]["median_us"]),
                    _f(fig["ratio_to_rnea_median"]),
                    _f(qp["median_us"]) if qp else "-",
                    _f(fig.get("ratio_to_qp_median")) if qp else "-",
                    _f(fig["paced_1khz"]["median_us"]),
                    marks("compute", name),
                ]
            )
        parts.append(
            _table(
                [
                    "controller",
                    "median µs",
                    "p99 µs",
                    "rnea µs",
                    "× rnea",
                    "QP floor µs",
                    "× QP",
                    "1 kHz paced µs",
                    "targets",
                ],
                rows,
            )
        )
        qp_parts = {name: fig["parts_us"] for name, fig in c["controllers"].items() if "parts_us" in fig}
        if qp_parts:
            parts.append(
                f"\nQP controllers' step by part, medians µs (back to back, over the first "
                f"{c['paced_states']} states of the same motion): compute = "
                "state check + step + saturation; step = prepare + QP solve + fill & rest, timed inside the "
                "step; prepare's parts timed one by one in its order on a second instance (their sum leaves "
                "out the tasks' cost terms and the reference); QP solve = every level's update + solve; "
                "QP floor after prepare = the floor's bare solves, each right after the second instance's "
                "kinematics, tasks and barriers (the caches as the step leaves them; not the targets' floor)"
            )
            columns = list(dict.fromkeys(k for fig in qp_parts.values() for k in fig))
            parts.append(
                _table(
                    ["controller", *columns],
                    [[name, *(_f(fig.get(k)) for k in columns)] for name, fig in qp_parts.items()],
                )
            )
    if "conversions" in results:
        conv = results["conversions"]
        parts.append(
            "\nMessage conversions per step: rows without 'message' = CDR codecs (serialized_io: true, "
            "the default), *_message* = rclpy messages with rclpy's (de)serialization; each after "
            f"{WARMUP} untimed warm-up calls; 1 kHz paced over "
            + _f(next((fig["paced_1khz"]["samples"] for fig in conv.values()), None))
            + " calls"
        )
        parts.append(
            _table(
                ["conversion", "median µs", "p99 µs", "1 kHz paced µs"],
                [
                    [k, _f(v["median_us"]), _f(v["p99_us"]), _f(v["paced_1khz"]["median_us"])]
                    for k, v in conv.items()
                ],
            )
        )
    if "dds" in results:
        d = results["dds"]
        sched = sorted({v for fig in d["controllers"].values() for v in fig["scheduling"].values()})
        parts.append(
            f"\nClosed loop over DDS, 1 kHz realtime, two processes, {d['seconds']:g} s per controller, "
            f"scheduling {'/'.join(sched)}; host late % = share of 1 ms ticks a bare sleep loop (no ROS, "
            "placed like the simulator) woke > 0.5 ms late, measured just before each run; steal ms = CPU "
            "time the hypervisor took from this VM during the run (all CPUs, /proc/stat, 10 ms ticks); "
            "late = steps taken before their state was validly answered (no answer by the next tick, or a "
            "rejected one); late runs / longest = runs of consecutive late steps and the longest; latency: "
            "the first answer to each state only, the start-up answer (the controller's cold first call) "
            "excluded; node compute includes that first call in its max; no target is sent: the arm holds "
            "its start pose (the compute section runs along a motion)"
        )
        rows = []
        for name, fig in d["controllers"].items():
            lat = fig["latency_ms"]
            rows.append(
                [
                    name,
                    _f(fig["step_rate_hz"], 5),
                    _f(lat["p50_ms"]),
                    _f(lat["p99_ms"]),
                    _f(lat["max_ms"]),
                    _f(fig["commands_lost"]),
                    _f(fig["unanswered_states"]),
                    _f(fig["late_steps"]),
                    f"{_f(fig.get('late_runs'))} / {_f(fig.get('longest_late_run'))}",
                    _f(fig["late_percent"]),
                    _f(fig.get("host_timer", {}).get("late_percent")),
                    _f(_steal_ms(fig)),
                    _f(fig["safe_torque_steps"]),
                    _f(fig["controller_compute_ms"]["p50_ms"] * 1e3),
                ]
            )
        parts.append(
            _table(
                [
                    "controller",
                    "rate Hz",
                    "lat p50 ms",
                    "p99 ms",
                    "max ms",
                    "lost",
                    "unanswered",
                    "late",
                    "late runs / longest",
                    "late %",
                    "host late %",
                    "steal ms",
                    "safe-torque steps",
                    "node compute p50 µs",
                ],
                rows,
            )
        )
        parts += [f"  {name}: {marks('dds', name)}" for name in d["controllers"]]
        parts.append(
            "\nWhere the state→command latency goes, p50 / p99 ms per part: the simulator publishes the "
            "state (state out); the controller reads it (state in), computes (compute; the QP controllers' "
            "prepare = kinematics, tasks, barriers, and QP solve = updates + solves), publishes the command "
            "(command out); callback = state in … command out; hops = latency p50 − state out p50 − "
            "callback p50 (transport both ways: DDS, wake-ups, dispatch)"
        )
        rows = []
        for name, fig in d["controllers"].items():
            step = fig.get("step_parts_ms", {})
            lat = fig["latency_ms"]
            rows.append([name, _p50_p99(lat), *(_p50_p99(step.get(c)) for c in STEP_COLUMNS)])
        parts.append(_table(["controller", "latency", *(c.replace("_", " ") for c in STEP_COLUMNS)], rows))
    for section in ("lockstep", "lockstep_composed"):
        if section not in results:
            continue
        lk = results[section]
        how = "two processes" if lk["processes"] == 2 else "one process (composed)"
        parts.append(
            f"\nLockstep throughput, {how}, {lk['seconds']:g} simulated s per controller, no target sent; "
            "wall time from the first step on (process start, discovery and the controller's cold first "
            "answer excluded); steal ms = CPU time the hypervisor took from this VM during the run"
        )
        parts.append(
            _table(
                ["controller", "sim s / wall s", "steps/s", "lat p50 ms", "steal ms", "targets"],
                [
                    [
                        name,
                        _f(fig["realtime_factor"]),
                        _f(fig["step_rate_hz"], 4),
                        _f(fig["latency_ms"]["p50_ms"]),
                        _f(_steal_ms(fig)),
                        marks(section, name),
                    ]
                    for name, fig in lk["controllers"].items()
                ],
            )
        )
    ts = results.get("targets_list", [])
    if ts:
        short = below_issue_sizes(results.get("settings", {}))
        quick = f" (smaller than the issue's runs: {'; '.join(short)})" if short else ""
        passed = sum(t.passed for t in ts)
        alternative = sum(bool(t.alternative) for t in ts)
        parts.append(
            f"\nTargets of issue 6{quick}: {passed}/{len(ts)} PASS"
            + (
                f"; {alternative} more failed but met the way issue 6 allows instead ({BREAKDOWN})"
                if alternative
                else ""
            )
        )
        parts += [
            f"  {'PASS' if t.passed else 'FAIL'}  {t.section:<17} {t.subject:<16} {t.what}: "
            f"{_f(t.figure)} (target {t.limit})"
            + (f"; {t.context}" if t.context else "")
            + (f"; instead: {t.alternative}" if t.alternative else "")
            for t in ts
        ]
    return "\n".join(parts)


# -------------------------------------------------------------------- main
def _git() -> dict[str, Any]:
    root = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = bool(
            subprocess.run(
                ["git", "status", "--porcelain", "--untracked-files=no"],
                cwd=root,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
        )
    except (OSError, subprocess.CalledProcessError):
        return {}
    return {"commit": commit, "dirty": dirty}


def _json_clean(x: Any) -> Any:
    """NaN / inf as null (strict JSON)."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _json_clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_clean(v) for v in x]
    return x


def below_issue_sizes(settings: dict[str, Any]) -> list[str]:
    """Where a run's sizes fall short of issue 6's (≥ 10 000 states, ≥ 20 s per controller over
    DDS), as printable reasons; its verdicts are then only indicative."""
    sections = settings.get("sections", ())
    short = []
    states = settings.get("states")
    if {"compute", "conversions"} & set(sections) and isinstance(states, int) and states < 10_000:
        short.append(f"{states} states < 10 000")
    seconds = settings.get("dds_seconds")
    if "dds" in sections and isinstance(seconds, int | float) and seconds < 20:
        short.append(f"{seconds:g} s over DDS < 20 s")
    return short


def run_sections(args: argparse.Namespace, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Run the selected sections; returns the results (``targets_list`` holds :class:`Target` s)."""
    controllers = {name: BENCH_CONFIGS[name] for name in args.controllers}
    results: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": machine_description(),
        "git": _git(),
        "settings": {
            "quick": args.quick,
            "sections": list(args.sections),
            "controllers": controllers,
            "states": args.states,
            "dds_seconds": args.dds_seconds,
            "lockstep_seconds": args.lockstep_seconds,
            "host_seconds": args.host_seconds,
            "rt_priority": args.rt_priority,
            "cpus": {"sim_node": args.placement.sim_cpus, "controller_node": args.placement.controller_cpus},
            "cpu_latency_us": args.placement.cpu_latency_us,
            "params_file": None if args.params_file is None else str(args.params_file),
        },
    }
    # The nodes' CPU latency request holds for this process too, so that the compute section's
    # 1 kHz paced figure sees the wake-ups the nodes see.
    results["settings"]["cpu_latency"] = request_cpu_latency(args.placement.env("sim_node"))
    try:
        _run_each(args, controllers, results, log)
    finally:
        release_cpu_latency()
    results["targets_list"] = targets(results)
    return results


def _run_each(
    args: argparse.Namespace,
    controllers: dict[str, dict[str, Any]],
    results: dict[str, Any],
    log: Callable[[str], None],
) -> None:
    """The sections of :func:`run_sections`, in order, into ``results``."""
    logs = args.out.parent / "logs" if args.out else None
    for section in args.sections:
        t0 = time.monotonic()
        log(f"[bench] {section} ...")
        if section == "compute":
            from . import compute

            results["compute"] = compute.run(controllers, args.states)
        elif section == "conversions":
            from . import conversions

            results["conversions"] = conversions.run(args.states)
        else:
            from . import dds

            mode, seconds = (
                ("realtime", args.dds_seconds) if section == "dds" else ("lockstep", args.lockstep_seconds)
            )
            composed = section == "lockstep_composed"
            results[section] = dds.run(
                controllers,
                mode,
                seconds,
                logs,
                args.params_file,
                args.placement,
                composed,
                host_seconds=args.host_seconds if section == "dds" else 0.0,
            )
        results.setdefault("section_wall_s", {})[section] = time.monotonic() - t0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command line → settings (``--quick`` shrinks every count and duration)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small counts and short runs (under a minute: 45-55 s on a 2-core VM)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="JSON results (file, or folder for bench.json); default bench_results/bench.json, "
        "bench_results/bench_quick.json with --quick (a quick run keeps the full run's file)",
    )
    parser.add_argument(
        "--sections", default=",".join(SECTIONS), help=f"comma-separated of {','.join(SECTIONS)}"
    )
    parser.add_argument("--controllers", default=",".join(BENCH_CONFIGS), help="comma-separated")
    parser.add_argument("--states", type=int, default=None, help="compute/conversion samples (10000)")
    parser.add_argument("--dds-seconds", type=float, default=None, help="realtime run per controller (20)")
    parser.add_argument("--lockstep-seconds", type=float, default=None, help="simulated s per controller (5)")
    parser.add_argument(
        "--host-seconds", type=float, default=None, help="host timer floor before each DDS run (3; 0: skip)"
    )
    parser.add_argument(
        "--rt-priority",
        type=int,
        default=20,
        help="SCHED_FIFO priority of the node processes when permitted (0: normal scheduling); "
        "the JSON records what each process got",
    )
    parser.add_argument(
        "--cpus",
        default="auto",
        help="pin the node processes: auto (simulator and controller on one CPU each, the default), "
        "none, or SIM:CONTROLLER CPU lists such as 0:1",
    )
    parser.add_argument(
        "--cpu-latency-us",
        default="0",
        help="CPU wake-up latency (µs) held through /dev/cpu_dma_latency by the node processes, the host "
        "timer's and the benchmark's own while they run, when permitted (0, the default: the CPUs poll "
        "instead of halting; none: no request)",
    )
    parser.add_argument(
        "--params-file",
        type=Path,
        default=None,
        help="node parameters layered over config/gen3_controllers.yaml (its values win)",
    )
    args = parser.parse_args(argv)
    args.sections = [s for s in args.sections.split(",") if s]
    args.controllers = [c for c in args.controllers.split(",") if c]
    for s in args.sections:
        if s not in SECTIONS:
            parser.error(f"unknown section {s!r}; choose from {', '.join(SECTIONS)}")
    for c in args.controllers:
        if c not in BENCH_CONFIGS:
            parser.error(f"unknown controller {c!r}; choose from {', '.join(BENCH_CONFIGS)}")
    # A count or duration of 0 had silently become the default, and a negative one failed deep
    # inside a measurement; --host-seconds 0 skips the host timer.
    for flag, value, zero_ok in (
        ("--states", args.states, False),
        ("--dds-seconds", args.dds_seconds, False),
        ("--lockstep-seconds", args.lockstep_seconds, False),
        ("--host-seconds", args.host_seconds, True),
    ):
        if value is not None and not (math.isfinite(value) and (value >= 0 if zero_ok else value > 0)):
            parser.error(f"{flag} must be a finite number {'>= 0' if zero_ok else '> 0'}, got {value}")
    quick = args.quick
    if args.states is None:
        args.states = 1000 if quick else 10_000
    if args.dds_seconds is None:
        args.dds_seconds = 2.0 if quick else 20.0
    if args.lockstep_seconds is None:
        args.lockstep_seconds = 1.0 if quick else 5.0
    if args.host_seconds is None:
        args.host_seconds = 0.5 if quick else 3.0
    try:
        args.placement = Placement.from_spec(
            args.rt_priority, args.cpus, parse_cpu_latency(args.cpu_latency_us)
        )
    except ConfigError as exc:
        parser.error(str(exc))
    if args.out is None:
        args.out = Path("bench_results") / ("bench_quick.json" if quick else "bench.json")
    if args.out.is_dir():  # checked before running, not after minutes of measurements
        args.out = args.out / "bench.json"
    return args


def main(argv: list[str] | None = None) -> int:
    """Run, print the tables, write the JSON; exit status 0 even when targets fail (it is a report)."""
    args = parse_args(argv)
    results = run_sections(args, log=lambda s: print(s, file=sys.stderr, flush=True))
    print(format_report(results), flush=True)
    data = {k: v for k, v in results.items() if k != "targets_list"}
    data["targets"] = [asdict(t) for t in results["targets_list"]]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(_json_clean(data), indent=2))
    print(f"\nresults: {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
