"""Realtime over DDS (1 kHz, paced by the wall clock), and bad input on every interface: no crash,
no torque from bad data.
The realtime loop's rule after a stall (catch up within 50 ms, else restart the pacing) is checked
on a virtual clock, in this process."""

from __future__ import annotations

import copy
import itertools
import json
import math
import os
import signal
import time
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from ros_helpers import (  # noqa: F401
    Probe,
    diagnostic_values,
    in_process_sim,
    launch,
    probe,
    requires_rclpy,
    ros_domain,
    wait_until,
)

from torque_ctrl_ros.bench.host import cpu_ticks, steal_between
from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.braking import SafeBrake
from torque_ctrl_ros.core.safety import DEFAULT_DAMPING

pytestmark = [pytest.mark.ros, requires_rclpy]

ROOT = Path(__file__).resolve().parent.parent
URDF = ROOT / "urdf" / "gen3.urdf"
NAMES = [f"joint_{i}" for i in range(1, 8)]
# A run of late steps this long (1 ms each) is not one of the test's 30 ms stalls: Fast DDS's
# shared-memory listener sleeping out its 333 ms fallback poll, or an overloaded host (see the
# stall test below).
_SHM_FALLBACK_STEPS = 250
# Share of the CPU time (%) the hypervisor took during the stall test beyond which the host
# itself stalls the simulator past its 50 ms resync (normally 0–0.5 % here; 12–18 % in the
# minutes when it did, with a third to two thirds of the steps late).
_OVERLOADED_HOST_STEAL_PERCENT = 5.0
#: Simulated time of the stall test's run (s): the simulator's loop starts after its launch and
#: takes at least this long (each step waits for its tick). Its first report reached the test
#: ~3.3 s after its launch here (start-up, discovery), and the stops take ~1.7 s: with 5 s, the
#: last two were not surely in the loop.
_STALL_RUN_S = 8.0
#: Left after a stop for its catch-up when telling whether it hit the loop for certain (s).
_CATCH_UP_S = 0.2
#: Late steps each stop that hit the loop leaves at least, unless it ended in an overrun (23–32
#: seen in the stall test).
_LATE_PER_STOP = 15
HOME = np.array([0, 0.26179939, 3.14159265, -2.26892803, 0, 0.95993109, 1.57079633])


@pytest.mark.slow
@pytest.mark.parametrize("serialized_io", [True, False], ids=["cdr-bytes", "messages"])
def test_realtime_run_over_both_message_paths(launch: Any, tmp_path: Path, serialized_io: bool) -> None:  # noqa: F811 - pytest fixtures
    """Both message paths (CDR bytes, the default, and rclpy messages) carry the 1 kHz loop: every
    state and command on the path asked for, none refused, the simulator paced by the wall clock
    (never ahead of it) for its 5 000 steps, every state answered in the loop timed. How fast it
    keeps up (the step rate, the share of states answered, the latency) is printed, not asserted:
    on a loaded host it is the host's figure (``make bench`` measures it)."""
    ctrl = launch(
        "controller_node",
        controller="computed_torque",
        stats_file=str(tmp_path / "ctrl.json"),
        serialized_io=serialized_io,
    )
    sim = launch(
        "sim_node",
        mode="realtime",
        duration=5.0,
        stats_file=str(tmp_path / "sim.json"),
        serialized_io=serialized_io,
    )
    assert sim.wait(timeout=60) == 0, sim.log()
    assert ctrl.alive(), ctrl.log()
    ctrl.stop()
    stats = json.loads((tmp_path / "sim.json").read_text())
    cstats = json.loads((tmp_path / "ctrl.json").read_text())
    lat = stats["latency"]
    print(
        f"realtime 5 s: {stats['steps']} steps, {stats['step_rate_hz']:.1f} Hz; state->command latency "
        f"p50 {lat['p50_ms']:.3f} ms, p90 {lat['p90_ms']:.3f} ms, p99 {lat['p99_ms']:.3f} ms, max "
        f"{lat['max_ms']:.2f} ms; "
        f"late {stats['late_steps']}, missing {stats['missing_command_steps']}, rejected "
        f"{stats['rejected_commands']}, "
        f"overruns {stats['overruns']}; controller compute p50 {cstats['compute']['p50_ms'] * 1e3:.0f} us, "
        f"refused states {cstats['rejected']}"
    )
    assert stats["serialized_io"] is serialized_io and cstats["serialized_io"] is serialized_io
    # The simulator's states and the controller's commands all take the CDR fast path.
    assert cstats["states_via_rclpy"] == 0 and stats["commands_via_rclpy"] == 0
    assert stats["steps"] == 5000
    assert stats["rejected_commands"] == 0
    # Step k waits for its tick, k ms after the loop began: 5 s of steps take at least 5 s of
    # wall time whatever the host (a pacer that ran free would take ~1 s).
    assert stats["realtime_factor"] <= 1.0 + 1e-9, stats
    # Every state answered once the loop ran has its latency: all but state 0's answer, which
    # ended the start-up wait (the first, cold, call of the controller).
    assert lat["count"] == stats["answered_states"] - 1 > 0, stats
    assert all(math.isfinite(lat[k]) for k in ("p50_ms", "p90_ms", "p99_ms", "max_ms"))


@pytest.mark.slow
def test_simulator_stalls_lose_no_command(launch: Any, probe: Probe, tmp_path: Path) -> None:  # noqa: F811
    """The simulator stopped for 30 ms, five times (SIGSTOP, as a host stall does): it catches
    up with the wall clock afterwards, taking the commands waiting for it on the way, and its
    command queue (``command_queue_depth``) holds the burst of answers. With a queue of
    ``qos_depth`` (10) 2–17 commands were lost here, and when the catch-up steps took no
    command at all, 5–17.

    Sometimes (4 of 20 runs in twenty minutes of a slow host, none in 70 after) no command
    reached the simulator for a third of a second after a stop, and 133–245 were lost: this
    fits its Fast DDS shared-memory listener missing a wake-up and sleeping out its fallback
    poll (``healthy_check_timeout_ms / 3`` = 333 ms by default), after which the answers
    arrive at once and the 100-deep queue keeps the newest. Such a run shows one long run of
    late steps (337–369 in those four, ≤ 83 in the 86 others with no other load; a controller
    falling behind on an overloaded host makes one too: 355 steps, nothing lost, next to
    ``make sim``) and is checked for what it can still show: no more commands lost than that
    run has steps. See docs/performance.md, "A stopped process can miss a wake-up for a third
    of a second".

    When the hypervisor takes a large share of the CPU time during the test (measured, steal
    ≥ ``_OVERLOADED_HOST_STEAL_PERCENT``), the host itself stalls the simulator, past its 50 ms
    resync and long enough for answers to be lost (seen at 31 % steal: 27 overruns, 93 of
    ~4 900 commands lost in a 5 s run). That is reported as a warning and checked with the same bound as a
    long late run.

    Whether the simulator restarted its pacing (an overrun) is not asserted: a 30 ms stop is
    under the 50 ms resync, but the simulator descheduled ~20 ms more after it, or this process
    waking late to end the stop, takes it past (4 of 6 runs of a reviewer's at load 2.3–3.7).
    The rule itself is pinned on a virtual clock by
    ``test_after_a_stall_the_realtime_loop_catches_up_within_the_resync_and_restarts_past_it``;
    here an overrun is reported with the stops' measured lengths. A stop counts as having hit
    the stepping loop only for certain: after the simulator was seen running, and ending
    ``_CATCH_UP_S`` before ``_STALL_RUN_S`` after its launch (when DDS discovery was slow, the
    last stops could fall after the run's end)."""
    from diagnostic_msgs.msg import DiagnosticArray

    diags = probe.collect(DiagnosticArray, "/diagnostics")
    ticks = cpu_ticks()
    ctrl = launch("controller_node", controller="computed_torque", stats_file=str(tmp_path / "ctrl.json"))
    launched = time.monotonic()
    sim = launch(
        "sim_node",
        mode="realtime",
        duration=_STALL_RUN_S,
        diagnostics_period=0.2,
        stats_file=str(tmp_path / "sim.json"),
    )
    wait_until(
        lambda: float(diagnostic_values(diags, "sim_node").get("sim_time_s", 0.0)) > 0.3,
        60,
        "the simulation to run",
    )
    seen_s = time.monotonic() - launched
    assert float(diagnostic_values(diags, "sim_node")["state_out_p50_ms"]) > 0.0  # publishing a state
    stops: list[tuple[float, float]] = []  # (start, end) of each stop, monotonic s
    for _ in range(5):
        start = time.monotonic()
        os.kill(sim.proc.pid, signal.SIGSTOP)
        time.sleep(0.03)
        os.kill(sim.proc.pid, signal.SIGCONT)
        stops.append((start, time.monotonic()))
        time.sleep(0.3)
    assert sim.wait(timeout=60) == 0, sim.log()
    ctrl.stop()
    steal = steal_between(ticks, cpu_ticks()).get("percent", 0.0)
    stats = json.loads((tmp_path / "sim.json").read_text())
    cstats = json.loads((tmp_path / "ctrl.json").read_text())
    published, received = cstats["commands_published"], stats["commands_received"]
    lengths_ms = [round(1e3 * (end - start)) for start, end in stops]
    in_loop = sum(end + _CATCH_UP_S < launched + _STALL_RUN_S for _, end in stops)
    print(
        f"5 × 30 ms simulator stalls (seen running {seen_s:.1f} s after its launch; stops measured "
        f"{lengths_ms} ms, {in_loop} surely in the loop): "
        f"{stats['steps']} steps, late {stats['late_steps']} in "
        f"{stats['late_runs']} runs (longest {stats['longest_late_run']}), "
        f"overruns {stats['overruns']}; commands published {published}, received {received}; "
        f"states answered {cstats['states_received']}; the hypervisor took {steal:.1f} % of the CPU time"
    )
    assert stats["steps"] == round(_STALL_RUN_S * 1000)
    # The stalls happened: each stop that hit the loop leaves ~30 steps late (23–32 seen; the
    # catch-up after it takes the answers that arrive meanwhile, so fewer on a quick host: 117
    # in 5 stalls once), but none when it ended in a restart of the pacing instead (an overrun).
    # The catch-up takes answers as they come, so its late steps come in short runs: the longest
    # run is no sign of the stalls (9 steps once, 192 late steps in 79 runs).
    assert stats["late_steps"] >= _LATE_PER_STOP * (in_loop - stats["overruns"]), stats
    runs, longest = stats["late_runs"], stats["longest_late_run"]
    assert 1 <= runs <= stats["late_steps"] <= runs * longest
    if in_loop < len(stops):
        warnings.warn(
            f"only {in_loop} of {len(stops)} stops ended {_CATCH_UP_S} s before {_STALL_RUN_S} s after the "
            "simulator's launch (the simulation was seen late): the late steps were checked for those",
            stacklevel=1,
        )
    if stats["overruns"]:
        warnings.warn(
            f"the simulator fell > 50 ms behind {stats['overruns']} times and restarted its pacing "
            f"(the stops measured {lengths_ms} ms from this process; the rest is the host's)",
            stacklevel=1,
        )
    lost = published - 1 - received  # the answer to the very last state may be in flight
    if steal >= _OVERLOADED_HOST_STEAL_PERCENT:
        # The host stalls the simulator itself, longer and more often than the test does.
        warnings.warn(
            f"the hypervisor took {steal:.1f} % of the CPU time: the simulator fell > 50 ms behind "
            f"{stats['overruns']} times, {longest} steps in a row were not answered by their tick, "
            f"{max(lost, 0)} commands lost",
            stacklevel=1,
        )
        assert lost <= longest
    elif longest >= _SHM_FALLBACK_STEPS:
        warnings.warn(
            f"{longest} steps in a row not answered by their tick (a 333 ms Fast DDS shared-memory "
            f"fallback poll, or an overloaded host); {max(lost, 0)} commands lost",
            stacklevel=1,
        )
        assert lost <= longest
    else:
        assert lost <= 0  # every command the controller sent reached the simulator


@pytest.mark.parametrize(
    ("stall_s", "caught_up"), [(0.0305, True), (0.0805, False)], ids=["30-ms-caught-up", "80-ms-restarted"]
)
def test_after_a_stall_the_realtime_loop_catches_up_within_the_resync_and_restarts_past_it(
    ros_domain: int,  # noqa: F811 - pytest fixture
    monkeypatch: pytest.MonkeyPatch,
    stall_s: float,
    caught_up: bool,
) -> None:
    """The simulator (in this process, no controller) stalled inside its 20th of 100 steps, on a
    virtual steady clock: sim_node.py's ``time`` moves only when the node waits (a wait of its
    executor passes its whole timeout at once) and by the stall, so nothing on the host changes
    the result. 30.5 ms behind, under the 50 ms resync, it catches up: the 30 steps due meanwhile
    are taken back to back at once and the run ends on its schedule, no overrun. 80.5 ms behind it
    restarts its pacing instead: one overrun, 80 ticks given up (``skipped_ticks``), no step taken
    back to back, and the run ends the stall later. (Counted 79 up to 2026-12-07: the tick the
    loop was behind, itself given up, was left out.)"""
    import torque_ctrl_ros.nodes.sim_node as sim_module

    with in_process_sim(ros_domain, mode="realtime", wait_for_controller=False, duration=0.1) as sim:
        now = [1000.0]  # s
        read = lambda: now[0]  # noqa: E731
        monkeypatch.setattr(sim_module, "time", SimpleNamespace(monotonic=read, perf_counter=read))
        executor = sim.executor

        class WaitsPassAtOnce:
            """The node's executor: a wait takes what is already there, then its timeout passes."""

            def spin_once(self, timeout_sec: float | None = None) -> None:
                executor.spin_once(timeout_sec=0.0)
                now[0] += timeout_sec or 0.0

            def __getattr__(self, name: str) -> Any:
                return getattr(executor, name)

        sim.executor = WaitsPassAtOnce()
        step_times: list[float] = []
        step = sim.plant.step

        def stepping() -> None:
            step_times.append(now[0])
            if len(step_times) == 20:
                now[0] += stall_s
            step()

        monkeypatch.setattr(sim.plant, "step", stepping)
        start = now[0]
        sim.run()
        overruns, skipped = sim.counts.overruns, sim.counts.skipped_ticks
    assert len(step_times) == 100
    after_stall = step_times[19] + stall_s
    assert step_times.count(after_stall) == (30 if caught_up else 0), step_times
    assert overruns == (0 if caught_up else 1)
    # The ticks given up: 80.5 ms stalled in step 20 (at 20 ms), the ticks at 21 … 100 ms run no
    # step; the next, at 101.5 ms, takes the tick of 101 ms. 100 steps over 180.5 ms: 80 given up.
    assert skipped == (0 if caught_up else 80)
    # Step k at its tick, (k + 1) ms after the start, or that plus the stall given up.
    assert step_times[-1] - start == pytest.approx(0.1 + (0.0 if caught_up else stall_s), abs=1e-9)


def _state(stamp: Any, names: list[str], q: np.ndarray, v: np.ndarray) -> Any:
    from sensor_msgs.msg import JointState as JointStateMsg

    msg = JointStateMsg(name=names, position=q.tolist(), velocity=v.tolist())
    msg.header.stamp = stamp
    return msg


def _gravity_controller_with_probe(start: Any, watcher: Probe, **params: Any) -> tuple[Any, list, list, Any]:
    """A gravity-compensation controller on the wall clock, fed and watched by ``watcher``:
    ``(node, commands, diagnostics, joint state publisher)`` once it is up."""
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import JointState as JointStateMsg
    from std_msgs.msg import Float64MultiArray

    ctrl = start(
        "controller_node",
        controller="gravity_comp",
        use_sim_time=False,
        diagnostics_period=0.1,
        **{"gravity_comp.damping": 0.0, **params},
    )
    commands = watcher.collect(Float64MultiArray, "/effort_controller/commands", depth=1000)
    diags = watcher.collect(DiagnosticArray, "/diagnostics")
    pub = watcher.publisher(JointStateMsg, "/joint_states", depth=100)
    wait_until(lambda: pub.get_subscription_count() > 0 and len(diags) > 0, 30, "the controller node")
    return ctrl, commands, diags, pub


def test_the_simulator_warns_of_joint_physics_no_controller_model_has(
    ros_domain: int,  # noqa: F811 - pytest fixture
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """An MJCF with damping on joint_4: the simulator takes it (the arm's own physics) and says at
    start what it adds, naming the joint and value; the shipped model starts without a word of it."""
    root = Path(__file__).resolve().parent.parent
    arm = (root / "mjcf" / "gen3.xml").read_text()
    assert arm.count('<joint name="joint_4" ') == 1
    (tmp_path / "gen3.xml").write_text(
        arm.replace('<joint name="joint_4" ', '<joint name="joint_4" damping="0.5" ')
    )
    scene = tmp_path / "scene.xml"
    scene.write_text(
        (root / "mjcf" / "scene.xml")
        .read_text()
        .replace('file="gen3.xml"', f'file="{tmp_path / "gen3.xml"}"')
    )
    with in_process_sim(ros_domain, mode="lockstep", wait_for_controller=False, duration=0.01):
        pass
    assert "physics no controller's rigid-body model has" not in capfd.readouterr().err
    with in_process_sim(
        ros_domain, mode="lockstep", wait_for_controller=False, duration=0.01, mjcf=str(scene)
    ):
        pass
    err = capfd.readouterr().err
    assert f"{scene} gives the simulated arm joint damping (joint_4 0.5): physics no controller's" in err, err


def test_bad_joint_states_never_produce_torque_from_bad_data(launch: Any, probe: Probe) -> None:  # noqa: F811 - pytest fixtures
    """NaN, short, mis-named, stale and absurd states: the braking command predicted from the last
    good state, then stop."""
    from ros_helpers import diagnostic_samples
    from sensor_msgs.msg import JointState as JointStateMsg

    from torque_ctrl_ros.nodes.conversions import command_stamp_ns, stamp_to_ns

    fallback_s, damping = 0.3, np.array(DEFAULT_DAMPING)
    ctrl, commands, diags, pub = _gravity_controller_with_probe(
        launch, probe, fallback_damping=damping.tolist(), **{"watchdog.fallback_duration": fallback_s}
    )
    robot = RobotModel.from_urdf_file(URDF)
    clock = probe.node.get_clock()
    sent: dict[int, str] = {}  # stamp (ns) -> phase

    def send(phase: str, make: Any, duration: float, rate: float = 200.0) -> None:
        end = time.monotonic() + duration
        while time.monotonic() < end:
            stamp = clock.now().to_msg()
            msg = make(stamp)
            sent[stamp_to_ns(msg.header.stamp)] = phase
            pub.publish(msg)
            time.sleep(1.0 / rate)

    v_good = np.full(7, 0.05)
    q_good = HOME.copy()
    good = lambda s: _state(s, NAMES, q_good, v_good)  # noqa: E731
    old = lambda s: _state(type(s)(sec=s.sec - 1, nanosec=s.nanosec), NAMES, q_good + 0.3, v_good)  # noqa: E731
    bad_makers = {
        "nan": lambda s: _state(s, NAMES, np.where(np.arange(7) == 2, np.nan, q_good + 0.3), v_good),
        "short": lambda s: JointStateMsg(
            header=_state(s, NAMES, q_good, v_good).header,
            name=NAMES,
            position=(q_good + 0.3)[:6].tolist(),
            velocity=v_good.tolist(),
        ),
        "misnamed": lambda s: _state(s, [*NAMES[:2], "joint_x", *NAMES[3:]], q_good + 0.3, v_good),
        "stale": old,
        # finite, but no arm is there: a position 1e200 rad on a continuous joint
        "absurd": lambda s: _state(s, NAMES, np.where(np.arange(7) == 0, 1e200, q_good + 0.3), v_good),
    }

    def brakes_from_good_state(taus: list[np.ndarray]) -> bool:
        """Whether ``taus``, the safe commands of one fallback window in order, are SafeBrake's
        from the good state for some whole numbers of periods between them (the states come
        every ~5 ms here, unevenly): the first from the good state carried m ≥ 0 periods under its
        command, g(q_good), which the driver held until the refused state came
        (``Supervisor._carried_over_silence``); each next the command after m ≥ 0 periods under
        the one before."""
        from torque_ctrl_ros.core.braking import FIRST_HOLD_PERIODS
        from torque_ctrl_ros.core.prediction import forward_step

        brake = SafeBrake(robot, damping, fallback_s)
        q, v, data = q_good.copy(), v_good.copy(), robot.model.createData()
        for _ in range(FIRST_HOLD_PERIODS + 1):
            brake.start(q, v, 0.0)
            if np.abs(brake.tau - taus[0]).max() <= 1e-9:
                break
            forward_step(robot, data, q, v, robot.gravity(q_good), brake.period)
        else:
            return False
        t = 0.0
        for tau in taus[1:]:
            for m in range(brake.max_periods + 1):
                trial = copy.deepcopy(brake, {id(robot): robot})  # the model shared, not copied
                trial.torque(t + m * brake.period)
                if np.abs(trial.tau - tau).max() < 1e-9:
                    brake, t = trial, t + m * brake.period
                    break
            else:
                return False
        return True

    def reported_ok_since(mark: int) -> bool:
        """A controller report received since ``diags[mark]`` said ``ok`` (once true, stays true)."""
        with probe.lock:
            recent = diags[mark:]
        return any(d.get("watchdog_state") == "ok" for d in diagnostic_samples(recent, "controller"))

    def recover(phase: str) -> None:
        """Good states (``phase``) until a controller report since they began says ``ok``. The
        recovery is seen while they still come: once they stop, the next report (0.1 s) says
        "fallback" (silence), so the latest report after sending could miss it for good."""
        with probe.lock:
            mark = len(diags)
        send(phase, good, 0.2)
        deadline = time.monotonic() + 10
        while not reported_ok_since(mark):
            if time.monotonic() > deadline:
                pytest.fail(f"no watchdog ok on {phase} states: {diagnostic_values(diags, 'controller')}")
            send(phase, good, 0.05)

    for phase, make in bad_makers.items():
        recover(f"good-{phase}")
        send(phase, make, fallback_s + 0.4)  # at once after the good ones, as before
        wait_until(
            lambda: diagnostic_values(diags, "controller").get("watchdog_state") == "stopped",
            10,
            f"stop after {phase}",
        )
        assert ctrl.alive(), ctrl.log()
    recover("good-end")  # recovered on good states after the last bad phase too
    stream_end = time.monotonic()

    def silence_reported() -> dict[str, str] | None:
        """The latest controller report received since the stream ended, once it says so."""
        with probe.lock:
            since = [(t, a) for t, a in diags if t > stream_end]
        values = diagnostic_values(since, "controller")
        return values if values.get("watchdog_state") in ("fallback", "stopped") else None

    values = wait_until(silence_reported, 10, "the watchdog to report the silence after the stream")
    with probe.lock:
        answer_stamps = [command_stamp_ns(m) for _, m in commands]
        answered = [
            (None if s is None else sent.get(s), np.array(m.data))
            for s, (_, m) in zip(answer_stamps, commands, strict=True)
        ]
    assert all(p is not None for p, _ in answered)
    # The commands not computed from a good state come in runs, one per fallback window (a bad
    # phase, or a good state refused as stale on this loaded machine): each run is the braking
    # predicted from the last good state, never a torque from the bad data.
    runs: list[list[np.ndarray]] = [[]]
    for p, tau in answered:
        assert p is not None  # as checked for all of them above
        if p.startswith("good") and np.abs(tau - robot.gravity(q_good)).max() < 1e-9:
            if runs[-1]:
                runs.append([])
        else:
            runs[-1].append(tau)
    assert all(brakes_from_good_state(run) for run in runs if run)
    for phase in bad_makers:
        # Every bad phase got the braking ...
        assert any(p == phase for p, _ in answered), f"no fallback command during {phase}"
        # ... and only within the fallback window, then nothing. Judged on the stamps (the
        # sender's wall clock, which the controller also runs on here) rather than on counts, so
        # a loaded machine that sends unevenly cannot fail it: 0.1 s is left for delivery.
        stamps = [s for s, p in sent.items() if p == phase]
        answered_stamps = [
            s for s, (p, _) in zip(answer_stamps, answered, strict=True) if p == phase and s is not None
        ]  # (a stamp of None has no phase)
        window = (max(answered_stamps) - min(stamps)) * 1e-9
        assert window < fallback_s + 0.1, (phase, window)
        assert max(stamps) - max(answered_stamps) > 0.1e9, phase  # the rest went unanswered
    good_taus = [tau for p, tau in answered if p and p.startswith("good")]
    computed = [np.abs(t - robot.gravity(q_good)).max() < 1e-9 for t in good_taus]
    assert sum(computed) > 0.9 * len(good_taus)
    for key in ("rejected_non_finite", "rejected_inconsistent", "rejected_stale", "rejected_out_of_range"):
        assert int(values[key]) > 0, key
    # The good, NaN and stale states take the CDR fast path; the short and misnamed ones, another
    # layout, go through rclpy's deserialization and its by-name decoder.
    assert 0 < int(values["states_via_rclpy"]) < int(values["states_received"]) / 2
    print(
        "bad states refused: "
        + ", ".join(f"{k[9:]} {values[k]}" for k in values if k.startswith("rejected_"))
        + f"; fallback commands {values['fallback_commands']}"
    )


def test_states_in_a_drivers_layout_are_read_by_name(launch: Any, probe: Probe) -> None:  # noqa: F811 - pytest fixtures
    """Joint states with another joint order and extra joints (a real arm's driver): the first
    goes through rclpy, the layout is then read in place; every command is the one for the
    joints picked by name. The states lie within 0.05 rad of a pose drawn at first: a state more
    than 0.28 rad from the last within 10 ms the watchdog refuses as a jump.

    ``watchdog.max_age`` is 1 s: at the default 20 ms, one state delivered late on a loaded host
    is refused as stale and answered with the braking command, which is right but not what this
    test is about."""

    from torque_ctrl_ros.nodes.conversions import command_stamp_ns, stamp_to_ns

    _, commands, diags, pub = _gravity_controller_with_probe(launch, probe, **{"watchdog.max_age": 1.0})
    robot = RobotModel.from_urdf_file(URDF)
    names = ["finger", *reversed(NAMES[3:]), "camera_tilt", *reversed(NAMES[:3])]
    order = [names.index(j) for j in NAMES]
    rng = np.random.default_rng(3)
    pose = rng.uniform(-1.0, 1.0, len(names))
    sent: dict[int, np.ndarray] = {}  # stamp (ns) -> q in model order
    for _ in range(60):
        q_msg = pose + rng.uniform(-0.05, 0.05, len(names))
        msg = _state(probe.node.get_clock().now().to_msg(), names, q_msg, np.zeros(len(names)))
        sent[stamp_to_ns(msg.header.stamp)] = q_msg[order]
        pub.publish(msg)
        time.sleep(0.01)
    wait_until(lambda: len(commands) >= 55, 10, "the commands")
    time.sleep(0.3)
    with probe.lock:
        answered = [(command_stamp_ns(m), np.array(m.data)) for _, m in commands]
    errors = [np.abs(tau - robot.gravity(sent[s])).max() for s, tau in answered if s in sent]
    values = diagnostic_values(diags, "controller")
    assert len(errors) >= 55 and max(errors) < 1e-9, (
        f"{sum(e >= 1e-9 for e in errors)} of {len(errors)} commands are not gravity at their state's "
        f"joints; fallback commands {values['fallback_commands']}"
    )
    assert int(values["states_via_rclpy"]) == 1, values["states_via_rclpy"]  # the first only
    assert int(values["states_received"]) >= 55


#: Serialized messages that rclpy cannot deserialize: a CDR header, then a string or sequence
#: length of 2³¹ with nothing after it.
UNREADABLE_STATE = b"\x00\x01\x00\x00" + bytes(8) + b"\xff\xff\xff\x7f"
UNREADABLE_COMMAND = b"\x00\x01\x00\x00\xff\xff\xff\x7f"


def test_unreadable_joint_states_are_refused_not_fatal(launch: Any, probe: Probe) -> None:  # noqa: F811 - pytest fixtures
    """Bytes that are no JointState: refused like any unreadable state; the node keeps serving.

    ``watchdog.max_age`` is 1 s: back from a silence longer than that (20 ms by default) the node
    handles only the newest of the states queued meanwhile (core/backlog.py), so a controller
    descheduled on a loaded host while the unreadable states came would skip some uncounted."""
    ctrl, commands, diags, pub = _gravity_controller_with_probe(launch, probe, **{"watchdog.max_age": 1.0})
    clock = probe.node.get_clock()

    def good(count: int) -> None:
        for _ in range(count):
            pub.publish(_state(clock.now().to_msg(), NAMES, HOME, np.zeros(7)))
            time.sleep(0.005)

    good(40)
    wait_until(lambda: len(commands) >= 20, 10, "commands for the good states")
    for _ in range(20):
        pub.publish(UNREADABLE_STATE)
        time.sleep(0.005)
    answered = len(commands)
    good(40)
    wait_until(lambda: len(commands) >= answered + 20, 10, "commands after the unreadable states")
    values = wait_until(
        lambda: (d := diagnostic_values(diags, "controller")) and int(d["rejected_inconsistent"]) >= 20 and d,
        10,
        "the refusals in /diagnostics",
    )
    assert ctrl.alive(), ctrl.log()
    assert "unreadable joint state message" in ctrl.log()
    print(f"controller refused {values['rejected_inconsistent']} unreadable states and kept answering")


def test_wrong_commands_to_the_sim_are_rejected(launch: Any, probe: Probe) -> None:  # noqa: F811 - pytest fixtures
    """Wrong length and NaN commands: no crash, the safe torque applies, /diagnostics says so."""
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import JointState as JointStateMsg
    from std_msgs.msg import Float64MultiArray

    from torque_ctrl_ros.nodes.conversions import stamp_to_ns

    damping = np.array(DEFAULT_DAMPING)
    sim = launch(
        "sim_node",
        mode="realtime",
        wait_for_controller=False,
        safe_damping=damping.tolist(),
        diagnostics_period=0.1,
    )
    states = probe.collect(JointStateMsg, "/joint_states", depth=1000)
    diags = probe.collect(DiagnosticArray, "/diagnostics")
    pub = probe.publisher(Float64MultiArray, "/effort_controller/commands")
    wait_until(lambda: pub.get_subscription_count() > 0 and len(states) > 10, 30, "the sim node")
    for data in ([1.0, 2.0, 3.0], [float("nan")] * 7, [1e3] * 8, UNREADABLE_COMMAND):
        for _ in range(20):
            pub.publish(data if isinstance(data, bytes) else Float64MultiArray(data=data))
            time.sleep(0.005)
    time.sleep(0.3)
    values = wait_until(
        lambda: (d := diagnostic_values(diags, "simulation")) and int(d["rejected_commands"]) >= 80 and d,
        10,
        "rejections",
    )
    assert sim.alive(), sim.log()
    assert values["safe_torque_active"] == "True"
    assert values["_message"].startswith("safe torque")
    with probe.lock:
        recent = [m for _, m in states[-200:]]
    # The torque applied over a step (the effort of the state after it) is the hold safe torque
    # g(q) − K_d·q̇ of the state it started from, clamped to the effort limits, never the rejected
    # data. Checked on consecutive states, exactly (against the same state's velocity, a 0.5 N·m
    # margin had failed on a slow host, where an arm falling under damping alone changed its
    # velocity by 1.9 rad/s within one step).
    robot = RobotModel.from_urdf_file(URDF)
    limit = robot.effort_limit
    step_ns = 1_000_000
    pairs = [
        (a, b)
        for a, b in itertools.pairwise(recent)
        if stamp_to_ns(b.header.stamp) - stamp_to_ns(a.header.stamp) == step_ns
    ]
    assert len(pairs) > 100
    for before, after in pairs:
        effort = np.array(after.effort)
        assert np.all(np.isfinite(effort))
        hold = robot.gravity(np.array(before.position)) - damping * np.array(before.velocity)
        np.testing.assert_allclose(effort, np.clip(hold, -limit, limit), atol=1e-9)
    print(f"sim rejected {values['rejected_commands']} commands; safe torque active; still running")


def test_a_run_shorter_than_half_a_step_is_refused(launch: Any) -> None:  # noqa: F811 - pytest fixtures
    """duration 0.4 ms rounds to 0 steps, which would mean "run until stopped": refused at start."""
    sim = launch("sim_node", mode="realtime", wait_for_controller=False, duration=0.0004)
    assert sim.wait(30.0) == 2, sim.log()
    assert "duration: 0.0004 s is less than half a step" in sim.log()


def test_a_controller_model_without_effort_limits_is_refused(launch: Any) -> None:  # noqa: F811 - pytest fixtures
    """The MJCF gives Pinocchio no actuator limits: the commands could not be saturated."""
    mjcf = str(Path(__file__).resolve().parents[1] / "mjcf" / "gen3.xml")
    ctrl = launch("controller_node", controller="gravity_comp", model_file=mjcf)
    assert ctrl.wait(30.0) == 2, ctrl.log()
    assert "gives no effort limit for joint(s) ['joint_1'" in ctrl.log()


def test_an_empty_list_parameter_is_refused_with_a_hint(launch: Any) -> None:  # noqa: F811 - pytest fixtures
    """rclpy refuses ``[]`` (no type) in words that name no parameter: the node adds what it was."""
    ctrl = launch("controller_node", controller="gravity_comp", fallback_damping=[])
    assert ctrl.wait(30.0) == 2, ctrl.log()
    assert "PARAMETER_NOT_SET" in ctrl.log() and "an empty list, [], which has no type" in ctrl.log()
