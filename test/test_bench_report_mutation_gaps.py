"""Behaviours of the benchmark's report, closed-loop runs, timing helpers and configurations that a
second, deeper mutation review found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch, in
``torque_ctrl_ros/bench/``: which figure each target judges, each figure's column in the printed
tables, how the sections reach the closed-loop runs, what a closed-loop run reads from the node
pair and its summaries, the warm-up counts, the machine description and the controllers'
benchmark settings. Nothing here runs DDS or depends on how fast the machine is: the node pair,
the closed-loop runs and the clocks are fakes.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from test_bench import _qp_controller_on_bench_states
from test_bench_mutation_gaps import FakeClock

from torque_ctrl_ros.bench import dds, host, stats
from torque_ctrl_ros.bench.__main__ import (
    STEP_COLUMNS,
    below_issue_sizes,
    format_report,
    parse_args,
    run_sections,
    targets,
)
from torque_ctrl_ros.bench.configs import BENCH_CONFIGS
from torque_ctrl_ros.bench.dds import summary_figures
from torque_ctrl_ros.bench.stats import machine_description, summarize_us, time_calls_paced, time_interleaved
from torque_ctrl_ros.core.controllers.qpid_config import BARRIER_GROUPS, QPIDConfig
from torque_ctrl_ros.core.safety import DEFAULT_DAMPING
from torque_ctrl_ros.nodes.scheduling import Placement

#: A simulator's and a QP controller's summaries with a distinct value in every field read.
SIM_SUMMARY: dict[str, Any] = {
    "steps": 2000,
    "step_rate_hz": 995.0,
    "realtime_factor": 0.97,
    "latency": {"p50_ms": 0.31, "p90_ms": 0.52, "p99_ms": 1.23, "max_ms": 4.56},
    "answered_states": 1995,
    "commands_received": 1990,
    "last_state_answered": True,
    "late_steps": 7,
    "late_runs": 3,
    "longest_late_run": 4,
    "missing_command_steps": 2,
    "overruns": 11,
    "state_out": {"p50_ms": 0.02, "p99_ms": 0.05},
}
CTRL_SUMMARY: dict[str, Any] = {
    "commands_published": 1993,
    "compute": {"p50_ms": 0.087, "p99_ms": 0.2, "max_ms": 3.0},
    "callback": {"p50_ms": 0.15, "p99_ms": 0.4},
    "callback_parts": {
        "state_in": {"p50_ms": 0.01, "p99_ms": 0.03},
        "prepare": {"p50_ms": 0.04, "p99_ms": 0.09},
        "qp_solve": {"p50_ms": 0.025, "p99_ms": 0.06},
        "command_out": {"p50_ms": 0.012, "p99_ms": 0.035},
    },
}

#: A QP controller's compute figures: every figure a different number.
QPID_COMPUTE: dict[str, Any] = {
    "median_us": 90.0,
    "p99_us": 140.0,
    "floor_rnea": {"median_us": 2.5, "p99_us": 1.9},
    "ratio_to_rnea_median": 36.0,
    "floor_qp": {"median_us": 40.0},
    "ratio_to_qp_median": 2.25,
    "paced_1khz": {"median_us": 160.0},
}


def _report(results: dict[str, Any]) -> str:
    return format_report({"machine": machine_description(), "date": "-", **results})


def _row(report: str, column: str, name: str) -> dict[str, str]:
    """The cells of row ``name`` of the printed table whose header holds ``column``, by header."""
    lines = report.splitlines()
    start = next(i for i, line in enumerate(lines) if column in re.split(r"\s{2,}", line))
    spans = [m.span() for m in re.finditer("-+", lines[start + 1])]  # the rule under the header
    row = next(line for line in lines[start + 2 :] if line.split()[0] == name)
    return {lines[start][a:b].strip(): row[a:b].strip() for a, b in spans}


def test_compute_targets_judge_the_back_to_back_median_and_each_floors_ratio() -> None:
    """The compute targets judge the back-to-back median and the ratios of medians, not the 1 kHz
    paced median (160 µs, over QPID's 100) nor a ratio to the floor's p99 (90 / 1.9 = 47 × rnea);
    a QP controller whose QP floor was not measured fails its "× QP" target with a NaN figure,
    not a pass. Mutants: the median target fed the paced figure, the rnea ratio taken over the
    floor's p99, a missing figure read as 0.0 in ``_check``."""
    no_floor = {k: v for k, v in QPID_COMPUTE.items() if k not in ("floor_qp", "ratio_to_qp_median")}
    ct = {**QPID_COMPUTE, "median_us": 30.0, "ratio_to_rnea_median": 12.0}
    results = {"compute": {"controllers": {"qpid": QPID_COMPUTE, "hqpid": no_floor, "computed_torque": ct}}}
    verdict = {(t.subject, t.what): t for t in targets(results)}
    assert verdict["qpid", "median (µs)"].figure == 90.0 and verdict["qpid", "median (µs)"].passed
    rnea = verdict["computed_torque", "median / bare rnea"]
    assert rnea.figure == 12.0 and rnea.passed
    missing = verdict["hqpid", "median / bare warm QP"]
    assert math.isnan(missing.figure) and not missing.passed


def test_a_qp_step_without_its_hops_is_not_broken_down() -> None:
    """The transport (``hops``: latency median − state out − callback) is one of the parts a QP
    controller's breakdown must hold: every other part measured but no hops (no latency figure
    to take it from) leaves a failed latency target without the breakdown's way out (mutant:
    ``hops`` dropped from ``STEP_COLUMNS``)."""
    assert "hops" in STEP_COLUMNS
    parts = {k: {"p50_ms": 0.1, "p99_ms": 0.1} for k in STEP_COLUMNS if k != "hops"}
    fig = {
        "commands_lost": 0,
        "latency_ms": {"p50_ms": 0.6, "p99_ms": 1.0},
        "late_percent": 0.1,
        "step_parts_ms": parts,
    }
    median = {t.what: t for t in targets({"dds": {"controllers": {"qpid": fig}}})}["latency median (ms)"]
    assert not median.passed and not median.alternative


def test_a_qp_run_from_its_summaries_is_broken_down_and_counted_apart() -> None:
    """A QPID run as the nodes report it (the hops have a p50 and no p99), latency median 0.8 ms and
    3 commands lost: the median is met by the breakdown, the lost commands fail plainly, and the
    report counts ``2/4 PASS; 1 more failed but met …``. Mutants: ``_broken_down`` reading the
    parts' p99 (the hops' is always NaN: no QP run would ever be broken down), the report
    counting every failure as met by the breakdown."""
    sim = {**SIM_SUMMARY, "latency": {"p50_ms": 0.8, "p99_ms": 1.23, "max_ms": 4.56}}
    fig = summary_figures(sim, CTRL_SUMMARY)
    assert math.isnan(fig["step_parts_ms"]["hops"]["p99_ms"])
    listed = targets({"dds": {"controllers": {"qpid": fig}}})
    verdict = {t.what: t for t in listed}
    assert not verdict["latency median (ms)"].passed and verdict["latency median (ms)"].alternative
    assert not verdict["commands lost"].passed and not verdict["commands lost"].alternative
    assert "2/4 PASS; 1 more failed but met the way issue 6 allows" in _report({"targets_list": listed})


def test_both_lockstep_sections_judge_computed_torques_run_only() -> None:
    """The ≥ 4× lockstep target is judged in the composed section too, and on computed torque's run
    only: a QPID at 2× next to it adds no target, and does not stand in for it. Mutants: only the
    two-process section judged; every controller's run judged under computed torque's name."""
    runs = {"computed_torque": {"realtime_factor": 6.0}, "qpid": {"realtime_factor": 2.0}}
    results = {"lockstep": {"controllers": runs}, "lockstep_composed": {"controllers": runs}}
    verdicts = [(t.section, t.subject, t.figure, t.passed) for t in targets(results)]
    assert verdicts == [
        ("lockstep", "computed_torque", 6.0, True),
        ("lockstep_composed", "computed_torque", 6.0, True),
    ]


def test_the_compute_and_conversion_tables_print_each_figure_in_its_column() -> None:
    """Every compute figure under its own header (median 90, p99 140, rnea floor 2.5, 36 × rnea, QP
    floor 40, 2.25 × QP, paced 160), and the conversions' table printed with its figures. Mutants:
    the p99 column fed the median, the rnea floor's p99 printed, the QP floor column fed the
    rnea floor, the × QP column the rnea ratio, the paced column the back-to-back median, the
    conversions' table left out."""
    paced = {"median_us": 4.75, "samples": 10}
    conv = {"joint_state_bytes_to_arrays": {"median_us": 1.5, "p99_us": 3.25, "paced_1khz": paced}}
    compute = {"states": 10, "warmup": 50, "paced_states": 10, "controllers": {"qpid": QPID_COMPUTE}}
    report = _report({"compute": compute, "conversions": conv})
    assert _row(report, "× rnea", "qpid") == {
        "controller": "qpid",
        "median µs": "90",
        "p99 µs": "140",
        "rnea µs": "2.5",
        "× rnea": "36",
        "QP floor µs": "40",
        "× QP": "2.25",
        "1 kHz paced µs": "160",
        "targets": "",
    }
    assert _row(report, "conversion", "joint_state_bytes_to_arrays") == {
        "conversion": "joint_state_bytes_to_arrays",
        "median µs": "1.5",
        "p99 µs": "3.25",
        "1 kHz paced µs": "4.75",
    }


def test_the_dds_tables_print_each_figure_in_its_column() -> None:
    """A QPID run's figures (from full summaries) under their own headers: rate, latency p50 / p99 /
    max, lost, unanswered, late, late runs / longest, late %, an unmeasured host floor and steal
    as ``n/a`` (not 0), safe-torque steps, node compute in µs; and each part of the step under its
    name, ``p50 / p99``, the hops' p50 alone (it has no p99). Mutants: rate from the realtime
    factor, p50 and p99 swapped, the late column fed the unanswered states, late runs and longest
    swapped, late % fed the late count, ``None`` printed as 0, compute left in ms, ``_p50_p99``'s
    NaN test inverted, the step columns out of order."""
    fig = {**summary_figures(SIM_SUMMARY, CTRL_SUMMARY), "scheduling": {"sim_node": "SCHED_OTHER"}}
    report = _report({"dds": {"seconds": 2.0, "controllers": {"qpid": fig}}})
    assert _row(report, "rate Hz", "qpid") == {
        "controller": "qpid",
        "rate Hz": "995",
        "lat p50 ms": "0.31",
        "p99 ms": "1.23",
        "max ms": "4.56",
        "lost": "3",
        "unanswered": "6",
        "late": "7",
        "late runs / longest": "3 / 4",
        "late %": "0.35",
        "host late %": "n/a",
        "steal ms": "n/a",
        "safe-torque steps": "2",
        "node compute p50 µs": "87",
    }
    assert _row(report, "hops", "qpid") == {
        "controller": "qpid",
        "latency": "0.31 / 1.2",
        "state out": "0.02 / 0.05",
        "hops": "0.14",
        "state in": "0.01 / 0.03",
        "compute": "0.087 / 0.2",
        "prepare": "0.04 / 0.09",
        "qp solve": "0.025 / 0.06",
        "command out": "0.012 / 0.035",
        "callback": "0.15 / 0.4",
    }


def test_the_composed_lockstep_table_says_one_process_and_prints_each_figure() -> None:
    """The composed section's heading says one process, and its row gives the simulated s per wall
    s and the steps per second each in its column. Mutants: every lockstep table titled "two
    processes", the two columns swapped."""
    run = {"realtime_factor": 6.5, "step_rate_hz": 6500.0, "latency_ms": {"p50_ms": 0.1}}
    lock = {"processes": 1, "seconds": 5.0, "controllers": {"computed_torque": run}}
    report = _report({"lockstep_composed": lock})
    assert "Lockstep throughput, one process (composed), 5 simulated s" in report
    row = _row(report, "sim s / wall s", "computed_torque")
    assert (row["sim s / wall s"], row["steps/s"]) == ("6.5", "6500")


def test_each_closed_loop_section_runs_in_its_mode_duration_and_process_count(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``dds`` runs realtime for ``--dds-seconds`` after the host floor; ``lockstep`` and
    ``lockstep_composed`` run lockstep for ``--lockstep-seconds`` with no host floor, the second
    composed; the logs go next to the JSON. Mutants: every lockstep section composed, the
    lockstep sections run for the DDS duration, the host floor measured before lockstep runs."""
    calls: list[tuple[Any, ...]] = []

    def fake_run(*args: Any, host_seconds: float) -> dict[str, Any]:
        _, mode, seconds, logs, _, _, composed = args
        calls.append((mode, seconds, composed, host_seconds, logs))
        return {"controllers": {}}

    monkeypatch.setattr(dds, "run", fake_run)
    argv = ["--sections", "dds,lockstep,lockstep_composed", "--controllers", "computed_torque"]
    argv += ["--dds-seconds", "7", "--lockstep-seconds", "3", "--host-seconds", "0.25"]
    argv += ["--cpus", "none", "--cpu-latency-us", "none", "--out", str(tmp_path / "b.json")]
    run_sections(parse_args(argv), log=lambda _: None)
    logs = tmp_path / "logs"
    assert calls == [
        ("realtime", 7.0, False, 0.25, logs),
        ("lockstep", 3.0, False, 0.0, logs),
        ("lockstep", 3.0, True, 0.0, logs),
    ]


def test_a_run_one_state_short_of_the_issues_size_is_flagged() -> None:
    """Issue 6 asks for at least 10 000 states: 9 999 is smaller, and its verdicts carry the caveat
    (mutant: the bound at 1 000; the existing cases sit at 600 and 10 000)."""
    assert below_issue_sizes({"sections": ["compute"], "states": 9_999}) == ["9999 states < 10 000"]


def test_an_out_folder_gets_bench_json_and_an_unknown_controller_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--out`` naming a folder writes ``bench.json`` in it (decided before the run, not a failed
    write after minutes of measurements); an unknown controller is refused by name with the
    valid ones before anything runs. Mutants: the folder check removed, the controllers left
    unchecked (a KeyError later, in ``run_sections``)."""
    assert parse_args(["--out", str(tmp_path)]).out == tmp_path / "bench.json"
    with pytest.raises(SystemExit):
        parse_args(["--controllers", "computed_torque,nope"])
    assert f"unknown controller 'nope'; choose from {', '.join(BENCH_CONFIGS)}" in capsys.readouterr().err


class _FakePair:
    """Stands in for :class:`NodePair`: records how it was made and the wall-clock limit it waited,
    returns the summaries above, a run cut short and an unclean exit."""

    made: ClassVar[list[dict[str, Any]]] = []

    def __init__(self, domain: int, out: Path, name: str, mode: str, seconds: float, **kwargs: Any) -> None:
        self.made.append({"domain": domain, "out": out, "name": name, "mode": mode, **kwargs})

    def __enter__(self) -> _FakePair:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def wait(self, timeout: float) -> bool:
        self.made[-1]["timeout"] = timeout
        return False

    def stats(self) -> tuple[dict[str, Any], dict[str, Any]]:
        return SIM_SUMMARY, CTRL_SUMMARY

    def clean_exit(self) -> bool:
        return False

    def scheduling(self) -> dict[str, str]:
        return {"sim_node": "SCHED_OTHER", "controller_node": "SCHED_OTHER"}


def test_a_closed_loop_run_passes_the_pair_its_section_and_limit_and_keeps_its_verdicts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The controller's parameters reach the node as ``<controller>.<key>`` overrides; the wall-clock
    limit is ``seconds`` realtime or 4 × ``seconds`` lockstep, plus the 60 s start-up margin; a
    run the pair reports cut short or unclean is recorded so. Mutants: the prefix dropped, the
    realtime and lockstep factors swapped, the margin dropped, ``finished`` or ``clean_exit``
    recorded as True."""
    _FakePair.made = []
    monkeypatch.setattr(dds, "NodePair", _FakePair)
    params = BENCH_CONFIGS["computed_torque"]
    realtime = dds.closed_loop("computed_torque", params, "realtime", 2.0, tmp_path, 7)
    dds.closed_loop("computed_torque", params, "lockstep", 2.0, tmp_path, 7)
    assert [p["timeout"] for p in _FakePair.made] == [62.0, 68.0]
    expected = {"computed_torque.kp": 100.0, "computed_torque.kd": 20.0}
    assert _FakePair.made[0]["controller_params"] == expected and _FakePair.made[0]["domain"] == 7
    assert realtime["finished"] is False and realtime["clean_exit"] is False


def test_summary_figures_read_each_figure_from_its_own_summary_key() -> None:
    """Each closed-loop figure comes from its own field: step rate (not the realtime factor),
    latency p99 (not p90), the controller's compute (not the latency), commands published by the
    controller (not received), safe-torque steps from ``missing_command_steps`` (not overruns).
    Mutants: each of those fields read from the other."""
    fig = summary_figures(SIM_SUMMARY, CTRL_SUMMARY)
    assert fig["step_rate_hz"] == 995.0 and fig["latency_ms"]["p99_ms"] == 1.23
    assert fig["controller_compute_ms"] == {"p50_ms": 0.087, "p99_ms": 0.2, "max_ms": 3.0}
    assert (fig["commands_published"], fig["commands_received"], fig["commands_lost"]) == (1993, 1990, 3)
    assert fig["safe_torque_steps"] == 2 and fig["overruns"] == 11


def test_an_unanswered_last_state_lets_off_exactly_one_command() -> None:
    """With the last state unanswered when the simulator stopped, one command (its answer, maybe in
    flight) is let off, no more: 1993 published, 1990 received leave 2 lost (mutant: two let off,
    1 lost)."""
    fig = summary_figures({**SIM_SUMMARY, "last_state_answered": False}, CTRL_SUMMARY)
    assert fig["commands_lost"] == 2


def test_dds_run_floors_realtime_runs_only_and_keeps_each_runs_steal_and_setting(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Realtime with ``host_seconds > 0``: the host floor is measured before each controller's run
    and kept under it; lockstep, or ``host_seconds = 0``, measure none. Every run gets the steal
    between the counters read before and after it, its logs under ``<mode>[_composed]/<name>``,
    the leased domain, which is given back at the end; the section records its processes,
    seconds and scheduling. Mutants: the floor measured in lockstep or at 0 s, not kept, the
    steal's readings swapped, one log folder for composed and not, the processes always 2, the
    priority or seconds not the run's, the domain not released, another domain id."""
    released: list[int] = []
    ticks = iter(range(100))

    class FakeDomain:
        id = 42

        def release(self) -> None:
            released.append(self.id)

    def fake_loop(name: str, params: Any, mode: str, seconds: float, out: Path, domain: int, *_: Any) -> Any:
        return {"out": out, "domain": domain}

    monkeypatch.setattr(dds, "Domain", FakeDomain)
    monkeypatch.setattr(dds, "closed_loop", fake_loop)
    monkeypatch.setattr(host, "measure", lambda seconds, placement: {"seconds": seconds})
    monkeypatch.setattr(host, "cpu_ticks", lambda: next(ticks))
    monkeypatch.setattr(host, "steal_between", lambda before, after: (before, after))
    placement = Placement(rt_priority=5, sim_cpus="0", controller_cpus="1", cpu_latency_us=0)
    two = {name: BENCH_CONFIGS[name] for name in ("gravity_comp", "qpid")}

    realtime = dds.run(two, "realtime", 3.0, tmp_path, None, placement, host_seconds=0.5)
    assert (realtime["processes"], realtime["seconds"], realtime["rt_priority"]) == (2, 3.0, 5)
    runs = realtime["controllers"]
    assert runs["gravity_comp"] == {
        "out": tmp_path / "realtime" / "gravity_comp",
        "domain": 42,
        "host_steal": (0, 1),
        "host_timer": {"seconds": 0.5},
    }
    assert runs["qpid"]["host_steal"] == (2, 3) and runs["qpid"]["host_timer"] == {"seconds": 0.5}
    composed = dds.run(two, "lockstep", 2.5, tmp_path, None, placement, composed=True, host_seconds=0.5)
    assert composed["processes"] == 1 and composed["seconds"] == 2.5
    assert composed["controllers"]["qpid"]["out"] == tmp_path / "lockstep_composed" / "qpid"
    assert not any("host_timer" in run for run in composed["controllers"].values())
    unfloored = dds.run(two, "realtime", 3.0, tmp_path, None, placement, host_seconds=0.0)
    assert not any("host_timer" in run for run in unfloored["controllers"].values())
    assert released == [42, 42, 42]


def test_summaries_keep_sub_microsecond_resolution() -> None:
    """Durations in ns become µs as floats: an rnea floor of 2.5 µs stays 2.5, not 2 (mutant: integer
    division by 1000, which would move a 15 × rnea verdict by up to a quarter)."""
    s = summarize_us(np.array([2_500, 1_200, 3_700]))
    assert (s["median_us"], s["max_us"]) == (2.5, 3.7)


def test_warm_up_calls_run_once_over_the_first_states(monkeypatch: pytest.MonkeyPatch) -> None:
    """The paced series makes exactly ``warmup`` untimed calls over states 0 … warmup − 1 before the
    timed ones; with fewer states than the warm-up, the interleaved series warms up once over the
    states there are. Mutants: one warm-up call short in ``time_calls_paced``; the warm-up run
    ``warmup`` times over the states, wrapping around."""
    monkeypatch.setattr(stats, "time", FakeClock(wake_ns=0))
    seen: list[int] = []
    time_calls_paced(seen.append, 5, period_s=1e-3, warmup=3)
    assert seen == [0, 1, 2, 0, 1, 2, 3, 4]
    seen.clear()
    time_interleaved({"fn": seen.append}, 3, warmup=5)
    assert seen == [0, 1, 2, 0, 1, 2]


def test_the_machine_description_gives_this_hosts_cores_and_nan_for_an_unknown_load(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The cores are the host's count, and a host without a load average reports NaN (null in the
    JSON), not a load of 0. Mutants: a fixed core count; 0.0 for the unknown load."""

    def no_load() -> tuple[float, float, float]:
        raise OSError("no load average here")

    monkeypatch.setattr(stats.os, "cpu_count", lambda: 7)
    monkeypatch.setattr(stats.os, "getloadavg", no_load)
    m = machine_description()
    load = m["load_average_1_5_15"]
    assert m["cores"] == 7 and isinstance(load, list) and all(math.isnan(x) for x in load)


def test_the_benchmark_settings_are_the_ones_its_docstring_states() -> None:
    """Gravity compensation runs with the safe brakes' damping, computed torque critically damped
    (kd = 2·√kp), and QPID / HQPID with every barrier group on at ``QPIDConfig``'s defaults.
    Mutants: gravity compensation without damping (its default 0), kd = 10 /s, ``d_safe`` 0.05 m,
    ``w_min`` 0.001."""
    gravity, _ = _qp_controller_on_bench_states("gravity_comp", 1)
    np.testing.assert_array_equal(gravity.config.damping, DEFAULT_DAMPING)
    ct, _ = _qp_controller_on_bench_states("computed_torque", 1)
    np.testing.assert_allclose(ct.config.kd, 2.0 * np.sqrt(ct.config.kp))
    for name in ("qpid", "hqpid"):
        ctrl, _ = _qp_controller_on_bench_states(name, 1)
        for group in BARRIER_GROUPS:
            got, default = getattr(ctrl.config, group), getattr(QPIDConfig, group)
            assert got.enabled and got == default, (name, group, got)
