"""Behaviours of the benchmark's own figures that a mutation review found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch, in
``torque_ctrl_ros/bench/``: the summaries (percentiles, medians), the paced and host timer loops
(on a fake clock: no test here depends on how fast the machine is), the QP step's parts, the
targets' limits and PASS / FAIL, the report's counts, the JSON and the revision comparison.
"""

from __future__ import annotations

import json
import math
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from test_bench import _STAT_BEFORE, _dds_figures, _qp_controller_on_bench_states
from test_qp_terms import HOME

from torque_ctrl_ros.bench import compare, compute, host, stats
from torque_ctrl_ros.bench.__main__ import (
    BREAKDOWN,
    LATE_STEPS,
    STEP_COLUMNS,
    _json_clean,
    below_issue_sizes,
    format_report,
    parse_args,
    targets,
)
from torque_ctrl_ros.bench.configs import BENCH_CONFIGS
from torque_ctrl_ros.bench.dds import summary_figures
from torque_ctrl_ros.bench.stats import WARMUP, machine_description, summarize_us, time_calls_paced
from torque_ctrl_ros.core import JointState, RobotModel
from torque_ctrl_ros.core.controllers.qpid import QPID


class FakeClock:
    """A clock that moves only when a timed call runs or the loop sleeps (each sleep ends
    ``wake_ns`` late, as a woken thread does); it records whether each call followed a sleep."""

    def __init__(self, wake_ns: int) -> None:
        self.now_ns = 0
        self.wake_ns = wake_ns
        self.slept = False
        self.slept_before_call: list[bool] = []

    def perf_counter_ns(self) -> int:
        return self.now_ns

    def monotonic(self) -> float:
        return self.now_ns / 1e9

    def sleep(self, seconds: float) -> None:
        self.now_ns += round(seconds * 1e9) + self.wake_ns
        self.slept = True

    def call(self, duration_ns: int) -> None:
        self.slept_before_call.append(self.slept)
        self.slept = False
        self.now_ns += duration_ns


def test_summaries_report_the_median_not_the_mean() -> None:
    """Skewed durations (four of 1 µs, one of 100 µs): the median is 1 µs, the mean 20.8 µs. The
    existing test's samples are symmetric, where both agree (mutant ``np.mean`` for the median in
    ``summarize_us``)."""
    assert summarize_us(np.array([1_000, 1_000, 100_000, 1_000, 1_000]))["median_us"] == 1.0


def test_paced_calls_time_only_the_call_and_restart_the_grid_after_a_stall(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At 1 kHz, calls of 100 µs with a 3.5 ms stall at call 1, each wake-up 50 µs late: each
    figure is its call's own duration (mutant ``clock() - next_start``: the wake-up's lateness
    added), and after the stall one call runs right behind it before the loop idles again
    (mutant without ``max(…, t0)``: the loop catches up on every missed period, calls 2–4 back to
    back, so that more calls follow no idle stretch than a node at 1 kHz meets)."""
    clock = FakeClock(wake_ns=50_000)
    monkeypatch.setattr(stats, "time", clock)
    durations = [100_000, 3_500_000, *[100_000] * 6]
    out = time_calls_paced(lambda i: clock.call(durations[i]), len(durations), period_s=1e-3, warmup=0)
    assert out.tolist() == durations
    assert clock.slept_before_call == [False, True, False, False, True, True, True, True]


def test_the_host_timer_measures_lateness_from_each_tick(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every wake-up 100 µs after its tick reads 100 µs late, not a period more (mutant
    ``clock() - tick + period_s`` in ``timer_lateness``, which had every tick of the host's floor
    past the 0.5 ms threshold)."""
    clock = FakeClock(wake_ns=100_000)
    monkeypatch.setattr(host, "time", clock)
    lateness = host.timer_lateness(0.005, period_s=1e-3)
    assert lateness == pytest.approx(np.full(5, 100e-6), abs=1e-9)


def test_the_host_summary_p99_and_a_steal_share_over_no_time() -> None:
    """The host timer's p99 is the 99th percentile (0 … 99 µs: 98.01 µs; mutant ``percentile(us,
    90)``); steal between two equal readings is a NaN share, not a division by zero (mutant
    without ``if d_total > 0``)."""
    assert host.summarize(np.arange(100) * 1e-6)["p99_us"] == pytest.approx(98.01)
    before = host.cpu_ticks(_STAT_BEFORE)
    steal = host.steal_between(before, before, tick_s=0.01)
    assert math.isnan(steal["percent"]) and steal["steal_ms"]["cpu"] == 0.0


def test_qp_step_parts_are_medians_of_the_steps_own_timings(
    monkeypatch: pytest.MonkeyPatch, robot: RobotModel
) -> None:
    """The step reports (step, prepare, QP solve) = (100, 30, 20), (110, 40, 30), (400, 35, 25) µs at
    three states: the parts are the medians 110 / 35 / 25 and ``fill_and_rest`` the median of
    ``step − prepare − qp_solve`` per step, 50. Mutants: ``+ qp_solve`` (median 110), prepare and
    QP solve read from each other's keys (35 and 25 swapped), ``np.mean`` for the medians (203)."""
    script = {0.0: (100.0, 30.0, 20.0), 0.01: (110.0, 40.0, 30.0), 0.02: (400.0, 35.0, 25.0)}
    torque = QPID.torque

    def scripted(self: QPID, q: np.ndarray, v: np.ndarray, reference: Any) -> Any:
        tau, info = torque(self, q, v, reference)
        step, prepare, solve = script[round(float(q[0]), 6)]
        info.update(step_time_us=step, prepare_time_us=prepare, qp_solve_time_us=solve)
        return tau, info

    monkeypatch.setattr(QPID, "torque", scripted)
    states = [JointState(HOME + 0.01 * k, np.zeros(7)) for k in range(3)]
    parts = compute.qp_step_parts("qpid", BENCH_CONFIGS["qpid"], robot, states)
    assert (parts["step"], parts["prepare"], parts["qp_solve"]) == (110.0, 35.0, 25.0)
    assert parts["fill_and_rest"] == 50.0


def test_the_restart_takes_the_cold_step_at_state_0_untimed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Between the warm-up and the timed run a QP controller is reset and then stepped once at
    state 0, so that the timed series holds no cold solve (mutant without ``compute(0)`` in
    ``controller_calls``' restart: the cold step, ~500 µs, timed as the series' first call)."""
    ctrl, states = _qp_controller_on_bench_states("qpid", 3)
    _, restart = compute.controller_calls(ctrl, states)
    assert restart is not None
    log: list[object] = []
    reset, step = type(ctrl).reset, type(ctrl).compute

    def logged_reset(self: Any) -> None:
        log.append("reset")
        reset(self)

    def logged_compute(self: Any, state: JointState, reference: Any) -> Any:
        log.append(states.index(state))
        return step(self, state, reference)

    monkeypatch.setattr(type(ctrl), "reset", logged_reset)
    monkeypatch.setattr(type(ctrl), "compute", logged_compute)
    restart()
    assert log == ["reset", 0]


def test_the_paced_figure_skips_the_same_warm_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """The 1 kHz paced series is preceded by the recorded ``warmup`` calls like every other series
    (mutant ``warmup=0`` in ``compute.run``: its first calls, imports and caches, timed)."""
    warmups: list[int] = []

    def paced(fn: Any, count: int, warmup: int) -> np.ndarray:
        warmups.append(warmup)
        return np.full(count, 1_000)

    monkeypatch.setattr(compute, "time_calls_paced", paced)
    result = compute.run({"computed_torque": BENCH_CONFIGS["computed_torque"]}, count=8, paced=5)
    assert warmups == [WARMUP] and result["warmup"] == WARMUP


def _lockstep_verdict(realtime_factor: float) -> Any:
    results = {"lockstep": {"controllers": {"computed_torque": {"realtime_factor": realtime_factor}}}}
    (target,) = targets(results)
    return target


def test_lockstep_target_is_four_times_real_time_inclusive_and_finite() -> None:
    """Lockstep passes at 4.0× real time, fails at 3.99× and at an infinite factor (mutants ``>``
    for ``>=``, a limit of 3.0, and ``_check`` without its ``math.isfinite``)."""
    assert _lockstep_verdict(4.0).passed and _lockstep_verdict(4.0).limit == ">= 4"
    assert not _lockstep_verdict(3.99).passed
    assert not _lockstep_verdict(math.inf).passed


def test_dds_limits_hold_at_their_bounds() -> None:
    """Over DDS: 0 lost commands pass and 1 fails (mutant limit ``<= 1``); a latency p99 of 2 ms
    passes and 2.01 ms fails (mutant limit 1.0: the tests' figures sat at or under 1 ms)."""

    def verdict(what: str, **changes: Any) -> Any:
        fig = {**_dds_figures(0.1, {}), **changes}
        return {t.what: t for t in targets({"dds": {"controllers": {"computed_torque": fig}}})}[what]

    lost = "commands lost"
    assert verdict(lost, commands_lost=0).passed and verdict(lost).limit == "<= 0"
    assert not verdict(lost, commands_lost=1).passed
    p99 = "latency p99 (ms)"
    assert verdict(p99, latency_ms={"p50_ms": 0.2, "p99_ms": 2.0}).passed
    assert not verdict(p99, latency_ms={"p50_ms": 0.2, "p99_ms": 2.01}).passed


def test_a_qp_run_cut_short_is_not_met_by_its_breakdown() -> None:
    """A QPID run cut short fails its timing targets without the breakdown's way out, though every
    part of its step was measured (mutant: ``_unless_cut_short`` keeps ``alternative``, and the
    report counts the partial run as met the way issue 6 allows)."""
    every_part = dict.fromkeys(STEP_COLUMNS, 0.1)
    cut = {**_dds_figures(2.0, every_part), "finished": False}
    verdicts = targets({"dds": {"controllers": {"qpid": cut}}})
    assert verdicts and not any(t.passed or t.alternative for t in verdicts)


def test_the_report_counts_passes_and_breakdowns_apart() -> None:
    """QPID over DDS with every step part measured, latency median 0.6 ms (over 0.5), the rest in
    its limits: ``3/4 PASS; 1 more failed but met …``; its marks and its line say FAIL, with the
    breakdown beside it. Mutants: the breakdown counted as a PASS in the total, or marked PASS in
    the controller's marks or on the target's line."""
    fig = {
        **summary_figures({"steps": 1000, "answered_states": 1001}, {}),
        **_dds_figures(0.1, dict.fromkeys(STEP_COLUMNS, 0.1)),
        "latency_ms": {"p50_ms": 0.6, "p99_ms": 1.0, "max_ms": 1.5},
        "scheduling": {"sim_node": "SCHED_OTHER", "controller_node": "SCHED_OTHER"},
    }
    results = {"dds": {"seconds": 20.0, "controllers": {"qpid": fig}}}
    listed = targets(results)
    report = format_report({**results, "machine": machine_description(), "date": "-", "targets_list": listed})
    assert f"3/4 PASS; 1 more failed but met the way issue 6 allows instead ({BREAKDOWN})" in report
    assert "latency median (ms) 0.6 <= 0.5: FAIL (broken down)" in report
    line = next(s for s in report.splitlines() if "latency median (ms): 0.6" in s)
    assert line.split()[0] == "FAIL" and line.endswith(f"instead: {BREAKDOWN}")


def test_a_missing_summary_fails_every_dds_target() -> None:
    """Neither node wrote a summary: latency, late steps and lost commands are NaN and every DDS
    target fails (mutants: a missing latency read as 0.0 ms, a late share of 0 % for no steps)."""
    fig = summary_figures({}, {})
    assert math.isnan(fig["latency_ms"]["p50_ms"]) and math.isnan(fig["late_percent"])
    verdicts = targets({"dds": {"controllers": {"computed_torque": fig}}})
    assert {t.what for t in verdicts} >= {"latency median (ms)", LATE_STEPS}
    assert not any(t.passed for t in verdicts)


def test_unanswered_states_count_state_zero() -> None:
    """States 0 … steps were published (steps + 1 of them): 1000 steps with 990 answered leave 11
    unanswered (mutant ``steps − answered``: 10)."""
    assert summary_figures({"steps": 1000, "answered_states": 990}, {})["unanswered_states"] == 11


def test_no_command_in_flight_is_not_a_negative_loss() -> None:
    """The last state unanswered when the simulator stopped, and every published command received:
    0 lost, not −1 (the one command let off as in flight was never sent; mutant without the
    ``max(0, …)``)."""
    sim = {"steps": 100, "commands_received": 100, "last_state_answered": False}
    assert summary_figures(sim, {"commands_published": 100})["commands_lost"] == 0


def test_a_cpu_line_without_a_steal_column_is_skipped() -> None:
    """A ``/proc/stat`` cpu line of seven columns (a kernel without ``steal``) is left out, not read
    with its softirq column as the steal (mutant ``len(fields) < len(_STAT_COLUMNS)``)."""
    assert host.cpu_ticks("cpu  100 0 50 800 5 0 1\ncpu0 60 0 30 400 3 0 1 3 0 0\n") == {"cpu0": (3, 497)}


def test_host_seconds_zero_skips_the_host_timer() -> None:
    """``--host-seconds 0`` means no host timer before the DDS runs, not the default 3 s (mutant
    ``if not args.host_seconds``)."""
    assert parse_args(["--host-seconds", "0"]).host_seconds == 0.0
    assert parse_args([]).host_seconds == 3.0


def test_a_conversions_only_run_below_the_issues_states_is_flagged() -> None:
    """The conversions section alone on 600 states is smaller than issue 6's runs (mutant: only
    the compute section's states checked)."""
    settings = {"sections": ["conversions"], "states": 600}
    assert below_issue_sizes(settings) == ["600 states < 10 000"]


def test_the_json_has_null_for_every_non_finite_figure() -> None:
    """NaN and ±inf become null at any depth, in dicts, lists and tuples, so that the file is strict
    JSON (mutants without the float case, or without the list / tuple case)."""
    cleaned = _json_clean({"a": [math.nan, 1.0, (math.inf, 2)], "b": {"c": -math.inf, "d": "x"}})
    assert cleaned == {"a": [None, 1.0, [None, 2]], "b": {"c": None, "d": "x"}}
    json.dumps(cleaned, allow_nan=False)


class _ScriptedController:
    """A stand-in controller for :func:`compare._time_pair`: zero torques except ``bump`` N·m on
    joint 4 at state ``bump_at``; states are their indices."""

    def __init__(self, bump_at: int = -1, bump: float = 0.0) -> None:
        self.bump_at, self.bump = bump_at, bump

    def reset(self) -> None:
        pass

    def compute(self, state: int, reference: object) -> SimpleNamespace:
        tau = np.zeros(7)
        if state == self.bump_at:
            tau[3] = self.bump
        return SimpleNamespace(tau=tau)


def test_compare_ratio_percentiles_and_torque_difference(monkeypatch: pytest.MonkeyPatch) -> None:
    """This tree's calls 1 … 300 µs, the other's twice as long: medians 150.5 / 301 µs, p99 297.01
    / 594.02 µs, ratio this / other 0.5; the torques differ by 0.25 N·m at state 150 only, inside
    the checked first 200 states. Mutants: the ratio inverted, this p99 from the other's times,
    both medians from this tree's times, the check over state 0 only, ``min`` for the largest
    difference."""
    count = 300

    def timed(calls: dict[str, Any], n: int, **_: Any) -> dict[str, np.ndarray]:
        return {"this": np.arange(1, n + 1) * 1_000, "other": np.arange(1, n + 1) * 2_000}

    monkeypatch.setattr(compare, "time_interleaved", timed)
    states = list(range(count))
    this = (_ScriptedController(), states, [None] * count)
    other = (_ScriptedController(bump_at=150, bump=0.25), states, [None] * count)
    r = compare._time_pair(this, other, count)
    assert (r["this_median_us"], r["other_median_us"]) == (150.5, 301.0)
    assert r["this_p99_us"] == pytest.approx(297.01) and r["other_p99_us"] == pytest.approx(594.02)
    assert r["ratio"] == 0.5 and r["max_torque_difference"] == 0.25
