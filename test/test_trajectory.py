"""Joint trajectory interpolation (pure core)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

import numpy as np
import pytest
from numpy.typing import ArrayLike

from torque_ctrl_ros.core.errors import TargetError
from torque_ctrl_ros.core.robot import RobotModel
from torque_ctrl_ros.core.trajectory import JointTrajectory, MotionWording, check_motion

RNG = np.random.default_rng(3)
T = [0.5, 1.0, 2.0]
P = RNG.normal(size=(3, 2))
V = RNG.normal(size=(3, 2))
A = RNG.normal(size=(3, 2))
START = (np.zeros(2), np.array([0.3, -0.2]))


def _cases() -> list[JointTrajectory]:
    return [
        JointTrajectory(T, P, V, A, start=START),
        JointTrajectory(T, P, V, start=START),
        JointTrajectory(T, P, start=START),
        JointTrajectory(T, P),
    ]


@pytest.mark.parametrize("traj", _cases(), ids=["quintic", "cubic", "positions-only", "no-start"])
def test_passes_through_waypoints_with_consistent_derivatives(traj: JointTrajectory) -> None:
    for i, t in enumerate(traj.times):
        q, qd, qdd = traj.sample(float(t))
        if i < len(traj.times) - 1:
            assert np.allclose(q, traj.positions[i], atol=1e-12)
            assert np.allclose(qd, traj.velocities[i], atol=1e-9)
            if traj.accelerations is not None:
                assert np.allclose(qdd, traj.accelerations[i], atol=1e-9)
    h = 1e-6
    for t in np.linspace(traj.times[0] + 0.013, traj.duration - 0.013, 29):
        if np.abs(traj.times - t).min() < 1e-4:  # cubic accelerations jump at the waypoints
            continue
        q, qd, qdd = traj.sample(t)
        qp, qdp, _ = traj.sample(t + h)
        qm, qdm, _ = traj.sample(t - h)
        assert np.allclose((qp - qm) / (2 * h), qd, atol=1e-6)
        assert np.allclose((qdp - qdm) / (2 * h), qdd, atol=1e-3)


@pytest.mark.parametrize("traj", _cases(), ids=["quintic", "cubic", "positions-only", "no-start"])
def test_each_segment_ends_on_the_next_waypoint(traj: JointTrajectory) -> None:
    # Just before each waypoint the segment that ends there meets its position and velocity
    # (and acceleration for quintics): the endpoint conditions that define the interpolant.
    eps = 1e-9
    for i in range(1, len(traj.times)):
        q, qd, qdd = traj.sample(float(traj.times[i]) - eps)
        assert np.allclose(q, traj.positions[i], atol=1e-7)
        assert np.allclose(qd, traj.velocities[i], atol=1e-6)
        if traj.accelerations is not None:
            assert np.allclose(qdd, traj.accelerations[i], atol=1e-5)


def test_estimated_velocities_are_the_three_point_slopes() -> None:
    # Positions only: inside, the slope of the parabola through a waypoint and its neighbours,
    # (h₂·s₁ + h₁·s₂) / (h₁ + h₂), with h the interval lengths and s the secant slopes (the
    # nearer secant weighs more); 0 at both ends. Here h = 0.5, 1 and s = 2, 0.5: 2.25 / 1.5.
    traj = JointTrajectory([0.5, 1.0, 2.0], [[0.0], [1.0], [1.5]])
    np.testing.assert_allclose(traj.velocities[:, 0], [0.0, 1.5, 0.0])
    np.testing.assert_allclose(traj.sample(1.0)[1], [1.5])


def test_velocity_is_continuous_across_waypoints() -> None:
    for traj in _cases():
        for t in traj.times[1:-1]:
            assert np.allclose(traj.sample(t - 1e-9)[1], traj.sample(t + 1e-9)[1], atol=1e-6)


def test_starts_from_the_given_state_and_holds_the_end() -> None:
    traj = JointTrajectory(T, P, V, A, start=START)
    q, qd, qdd = traj.sample(0.0)
    assert np.allclose(q, START[0]) and np.allclose(qd, START[1]) and np.allclose(qdd, 0.0)
    q, qd, qdd = traj.sample(5.0)
    assert np.array_equal(q, P[-1]) and not qd.any() and not qdd.any()
    late = JointTrajectory(T, P)  # no start: hold the first point before it, at rest
    q, qd, _ = late.sample(0.1)
    assert np.array_equal(q, P[0]) and not qd.any()


def test_a_quintic_starts_from_the_given_acceleration() -> None:
    """A quintic taking over a moving reference starts from its acceleration too (a zero start
    acceleration had stepped the feed-forward torque by 2.3 N·m on joint_2 when a trajectory
    took over another); a cubic has no acceleration to match."""
    a0 = np.linspace(-1.0, 1.0, P.shape[1])
    traj = JointTrajectory(T, P, V, A, start=(START[0], START[1], a0))
    q, qd, qdd = traj.sample(0.0)
    assert np.allclose(q, START[0]) and np.allclose(qd, START[1]) and np.allclose(qdd, a0, rtol=0, atol=1e-12)
    cubic = JointTrajectory(T, P, V, start=(START[0], START[1], a0))
    assert cubic.kind == "cubic" and np.allclose(cubic.sample(0.0)[1], START[1])
    with pytest.raises(TargetError, match="start state"):
        JointTrajectory(T, P, V, A, start=(START[0], START[1], np.full(P.shape[1], np.nan)))


def test_positions_only_does_not_overshoot_where_the_path_turns() -> None:
    traj = JointTrajectory([1.0, 2.0, 3.0], [[0.0], [1.0], [0.0]], start=(np.zeros(1), None))
    assert traj.velocities[1, 0] == 0.0
    samples = np.array([traj.sample(t)[0][0] for t in np.linspace(0, 3, 301)])
    assert samples.max() <= 1.0 + 1e-12


def test_positions_only_never_passes_a_waypoint() -> None:
    """Every segment stays between its two waypoints: a short segment next to a long one made
    the three-point slope 9.5 rad/s, and the path went up to 3.70 on its way from 1 to 1.1."""
    cases = [([0.0, 0.1, 2.0], [0.0, 1.0, 1.1]), ([1.0, 2.0, 3.0, 3.2], [0.0, 1.0, 0.8, 0.0])]
    rng = np.random.default_rng(5)
    for _ in range(200):
        steps = np.cumsum(rng.uniform(0.01, 2.0, 6))
        cases.append((list(steps), list(np.cumsum(rng.uniform(-1.0, 1.0, 6)))))
    for times, positions in cases:
        traj = JointTrajectory(times, np.array(positions)[:, None])
        for k in range(len(times) - 1):
            segment = np.linspace(times[k], times[k + 1], 101)
            q = np.array([traj.sample(t)[0][0] for t in segment])
            low, high = sorted((positions[k], positions[k + 1]))
            assert low - 1e-12 <= q.min() and q.max() <= high + 1e-12, (times, positions, k)


@pytest.mark.parametrize(
    ("times", "positions", "match"),
    [
        ([], np.zeros((0, 2)), "at least one point"),
        ([1.0, 1.0], np.zeros((2, 2)), "strictly increasing"),
        ([0.5, 1.0, 2.0, 2.0], np.zeros((4, 2)), r"point 3 at 2\.0 s is not after point 2 at 2\.0 s$"),
        ([-1.0], np.zeros((1, 2)), ">= 0"),
        ([0.5, np.nan], np.zeros((2, 2)), "point 1 has nan$"),
        ([1.0], [[0.0, np.nan]], "non-finite"),
        ([1.0, 2.0], np.zeros((1, 2)), "shape"),
        ([0.0, 1.0], [[0.0, 0.0], [0.0]], "one row of joint angles per point"),
    ],
)
def test_rejects_malformed_trajectories(times: list[float], positions: ArrayLike, match: str) -> None:
    with pytest.raises(TargetError, match=match):
        JointTrajectory(times, positions)


def test_from_points_uses_velocities_only_when_every_point_has_them() -> None:
    pts: list[tuple[float, list[float], list[float] | None, list[float] | None]]
    pts = [(1.0, [0.0], [1.0], None), (2.0, [1.0], None, None)]
    assert JointTrajectory.from_points(pts, 1).kind == "cubic"
    pts = [(1.0, [0.0], [1.0], [0.0]), (2.0, [1.0], [0.0], [0.0])]
    assert JointTrajectory.from_points(pts, 1).kind == "quintic"
    with pytest.raises(TargetError, match="2 positions"):
        JointTrajectory.from_points([(1.0, [0.0], None, None)], 2)


@pytest.mark.parametrize("t", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("times", [[0.0, 1.0, 2.0], [0.5]], ids=["three-points", "one-point"])
def test_sample_refuses_a_non_finite_time(times: list[float], t: float) -> None:
    traj = JointTrajectory(times, np.zeros((len(times), 2)))
    with pytest.raises(TargetError, match="finite time"):
        traj.sample(t)


CONTINUOUS = np.array([True, False])


@pytest.mark.parametrize("with_velocities", [False, True], ids=["positions-only", "cubic"])
def test_continuous_joints_take_the_short_way_round(with_velocities: bool) -> None:
    # Joint 0 turns without end: 3.1 → −3.1 rad is 2π − 6.2 ≈ 0.083 rad the short way.
    # Joint 1 is bounded: the same numbers are a 6.2 rad move.
    start = (np.array([3.1, 3.1]), np.zeros(2))
    goal = [-3.1, -3.1]
    vel = [[0.0, 0.0]] if with_velocities else None
    traj = JointTrajectory([1.0], [goal], vel, start=start, continuous=CONTINUOUS)
    short = 2.0 * np.pi - 6.2
    for t in np.linspace(0.0, 1.5, 151):
        q, qd, _ = traj.sample(float(t))
        assert abs(qd[0]) <= 1.5 * short + 1e-9  # the cubic's peak speed on a 1 s segment
        assert abs(abs(q[0]) - np.pi) <= short  # near ±π throughout
    assert np.isclose(traj.sample(1.0)[0][0], 3.1 + short)  # −3.1 plus one turn: the same pose
    assert np.isclose(traj.sample(1.0)[0][1], -3.1)  # the bounded joint is left unwrapped
    assert np.isclose(traj.sample(0.5)[0][1], 0.0) and np.isclose(traj.sample(0.5)[1][1], -9.3)


def test_continuous_waypoints_unwrap_against_the_one_before() -> None:
    # 3 → −3 → 3 → −3 → −2 rad on a continuous joint: each step but the last is 2π − 6 ≈ 0.28 rad
    # the short way, alternating; the last is +1 rad from the unwrapped −3, so it keeps that turn.
    # The bounded joint keeps its numbers bit for bit.
    p = [[-3.0, 0.1], [3.0, 0.2], [-3.0, 0.3], [-2.0, 0.4]]
    traj = JointTrajectory([1.0, 2.0, 3.0, 4.0], p, start=(np.array([3.0, 0.0]), None), continuous=CONTINUOUS)
    step = 2.0 * np.pi - 6.0
    assert np.allclose(traj.positions[:, 0], [3.0, 3.0 + step, 3.0, 3.0 + step, -2.0 + 2.0 * np.pi])
    assert np.array_equal(traj.positions[1:, 1], np.array(p)[:, 1])
    assert np.array_equal(JointTrajectory([1.0], [[0.5, 0.5]], continuous=CONTINUOUS).positions, [[0.5, 0.5]])
    unwrapped = JointTrajectory.from_points(
        [(1.0, [-3.1, 0.0], None, None)], 2, start=(np.array([3.1, 0.0]), None), continuous=CONTINUOUS
    )
    assert np.isclose(unwrapped.positions[-1, 0], 3.1 + 2.0 * np.pi - 6.2)


def test_rejects_a_malformed_continuous_mask() -> None:
    for mask in ([True], [1, 0], np.zeros((2, 1), dtype=bool)):
        with pytest.raises(TargetError, match="continuous"):
            JointTrajectory([1.0], [[0.0, 0.0]], continuous=mask)


@pytest.mark.parametrize("acceleration", [1e308, -1e307])
def test_rejects_a_trajectory_whose_polynomials_overflow(acceleration: float) -> None:
    """Finite but huge accelerations over 10 s made inf and NaN coefficients; NaN passed the limit
    check (it compares false with every bound), the node took the trajectory and its references
    were NaN: fallback, then a stop."""
    points = np.zeros((2, 2))
    with pytest.raises(TargetError, match="overflow"):
        JointTrajectory([0.0, 10.0], points, np.zeros((2, 2)), np.full((2, 2), acceleration))


def test_quintic_segments_are_checked_at_their_exact_extrema() -> None:
    """A quintic segment (0 → 0 rad over 2 s, leaving at +2 and arriving at −2 rad/s) peaks at
    1.25 rad between the 32 interior samples it was checked at: a limit 0.7 mrad below the peak
    passed. A 1.5 rad rest-to-rest segment over 2 s peaks at 1.40625 rad/s mid-way: the same for
    a speed limit just below it. Both are now found, and limits just above them pass."""
    tr = JointTrajectory([0.0, 2.0], [[0.0], [0.0]], [[2.0], [-2.0]], [[0.0], [0.0]])
    found = tr.limit_violation([-10.0], [1.24931], [100.0])
    assert found is not None and found.quantity == "position"
    assert found.value == pytest.approx(1.25, abs=1e-12) and found.time == pytest.approx(1.0, abs=1e-9)
    assert tr.limit_violation([-10.0], [1.25 + 1e-6], [100.0]) is None
    rest = JointTrajectory([0.0, 1.0, 3.0], [[0.0], [0.0], [1.5]], [[0.0]] * 3, [[0.0]] * 3)
    found = rest.limit_violation([-10.0], [10.0], [1.40625 - 1e-6])
    assert found is not None and found.quantity == "velocity" and found.time == pytest.approx(2.0, abs=1e-9)
    assert rest.limit_violation([-10.0], [10.0], [1.40625 + 1e-6]) is None


def test_a_quintic_passing_a_limit_through_its_waypoint_accelerations_is_found() -> None:
    """Both waypoints 0.05 rad inside the limit, at rest, with 4 rad/s² at each: the segment rises
    to 0.125 rad above them mid-way. A screen of the segment's bound without the accelerations'
    share had passed it unchecked."""
    tr = JointTrajectory([0.0, 1.0], [[2.19], [2.19]], [[0.0], [0.0]], [[4.0], [4.0]])
    found = tr.limit_violation([-10.0], [2.24], [100.0])
    assert found is not None and found.quantity == "position"
    assert found.value == pytest.approx(2.19 + 0.125, abs=1e-12) and found.time == pytest.approx(
        0.5, abs=1e-9
    )


def test_a_segment_that_passes_only_the_lower_limit_is_found() -> None:
    """The lower-limit mirrors of the cases above: nothing else about these segments is out of
    bounds (their waypoints are inside, their speeds low), so only the lower bound's screen sends
    them to the exact check. A quintic at rest 0.05 rad above the limit with −4 rad/s² at both
    ends dips 0.125 rad below its waypoints; a cubic from −2 back to −2 rad over 2 s, leaving at
    −1 and arriving at +1 rad/s, dips to −2.5 rad mid-way."""
    quintic = JointTrajectory([0.0, 1.0], [[-2.19], [-2.19]], [[0.0], [0.0]], [[-4.0], [-4.0]])
    found = quintic.limit_violation([-2.24], [10.0], [100.0])
    assert found is not None and found.quantity == "position" and found.limit == -2.24
    assert found.value == pytest.approx(-2.315, abs=1e-12) and found.time == pytest.approx(0.5, abs=1e-9)
    cubic = JointTrajectory([0.0, 2.0], [[-2.0], [-2.0]], [[-1.0], [1.0]])
    found = cubic.limit_violation([-2.4], [10.0], [100.0])
    assert found is not None and found.quantity == "position"
    assert found.value == pytest.approx(-2.5, abs=1e-12) and found.time == pytest.approx(1.0, abs=1e-9)
    assert cubic.limit_violation([-2.5 - 1e-6], [10.0], [100.0]) is None


def test_cubic_segments_are_checked_at_their_velocity_extremum() -> None:
    """A rest-to-rest cubic of 1 rad over 1 s peaks at 1.5 rad/s mid-way, between its ends (both
    at rest): a limit of 1.4 is passed there, one of 1.5 + 1e-6 is not."""
    tr = JointTrajectory([0.0, 1.0], [[0.0], [1.0]], [[0.0], [0.0]])
    found = tr.limit_violation([-math.inf], [math.inf], [1.4])
    assert found is not None and found.quantity == "velocity"
    assert found.value == pytest.approx(1.5, abs=1e-12) and found.time == pytest.approx(0.5, abs=1e-9)
    assert tr.limit_violation([-math.inf], [math.inf], [1.5 + 1e-6]) is None


def _random_trajectories(
    seed: int, count: int, max_acceleration: float
) -> Iterator[tuple[int, JointTrajectory]]:
    """``count`` random 2-joint trajectories of 2–4 points: positions only, with velocities, and
    with velocities and accelerations (up to ``max_acceleration``), in turn."""
    rng = np.random.default_rng(seed)
    for trial in range(count):
        m = int(rng.integers(2, 5))
        t = np.cumsum(rng.uniform(0.2, 1.0, m))
        p = rng.uniform(-1.0, 1.0, (m, 2))
        v = rng.uniform(-1.0, 1.0, (m, 2)) if trial % 3 else None
        a = rng.uniform(-max_acceleration, max_acceleration, (m, 2)) if trial % 3 == 2 else None
        yield trial, JointTrajectory(t, p, v, a)


def test_limit_violation_matches_dense_sampling() -> None:
    lo, hi, vmax = np.full(2, -1.05), np.full(2, 1.05), np.full(2, 1.6)
    for trial, traj in _random_trajectories(3, 90, 3.0):
        ts = np.linspace(0.0, traj.duration, 4001)
        samples = [traj.sample(float(x)) for x in ts]
        q = np.array([s[0] for s in samples])
        qd = np.array([s[1] for s in samples])
        excess = max((q - hi).max(), (lo - q).max(), (np.abs(qd) - vmax).max())
        found = traj.limit_violation(lo, hi, vmax)
        if excess > 1e-3:
            assert found is not None, trial
        if found is not None:
            assert excess > -1e-3, (trial, found)
            assert abs(found.value) >= (found.limit if found.quantity == "velocity" else abs(found.limit))


def test_acceleration_violations_match_dense_sampling() -> None:
    """The acceleration check finds the exact extrema of q̈ (the ends of a cubic's linear q̈, the
    ends and jerk roots of a quintic's cubic q̈): what sampling finds past the bound it reports,
    and it reports nothing sampling does not (the position and velocity bounds left open)."""
    amax = np.full(2, 15.0)
    found_some = 0
    for trial, traj in _random_trajectories(11, 120, 6.0):
        ts = np.linspace(0.0, traj.duration - 1e-9, 4001)
        qdd = np.array([traj.sample(float(x))[2] for x in ts])
        excess = (np.abs(qdd) - amax).max()
        found = traj.limit_violation(-np.inf, np.inf, np.inf, acceleration_limit=amax)
        if excess > 1e-6:
            assert found is not None and found.quantity == "acceleration", trial
        if found is not None:
            found_some += 1
            # The motion's own value there (either side of a waypoint: a cubic's q̈ jumps), and
            # at most a hair above what sampling finds anywhere.
            there = [traj.sample(found.time + d)[2][found.joint] for d in (-1e-9, 0.0, 1e-9)]
            assert min(abs(x - found.value) for x in there) < 1e-5, trial
            assert found.limit < abs(found.value) <= np.abs(qdd).max() * 1.01, trial
    assert 20 < found_some < 110  # both outcomes exercised


def test_acceleration_bound_widens_only_for_a_given_first_acceleration() -> None:
    """A quintic's first segment may be as far past the bound as its first point's acceleration
    (the state a trajectory starts from: the reference's own); later segments may not."""
    traj = JointTrajectory([0.0, 1.0], [[0.0], [0.0]], [[0.0], [0.0]], [[8.0], [0.0]])
    assert traj.limit_violation(-np.inf, np.inf, np.inf, acceleration_limit=[2.0]) is None
    # The interior peak of the same quintic's deceleration: past 2 rad/s², below 8.
    q_dd = [abs(traj.sample(float(x))[2][0]) for x in np.linspace(0.05, 1.0, 400)]
    assert 2.0 < max(q_dd) < 8.0
    shifted = JointTrajectory([0.0, 1.0, 2.0], [[0.0], [0.0], [0.0]], [[0.0]] * 3, [[0.0], [8.0], [0.0]])
    found = shifted.limit_violation(-np.inf, np.inf, np.inf, acceleration_limit=[2.0])
    assert found is not None and found.quantity == "acceleration" and abs(found.value) > 2.0


def test_check_motion_words_a_refusal_for_its_caller(robot: RobotModel) -> None:
    """A user's trajectory is told what its waypoints can change; a planned motion (an approach,
    a stop) is worded by its caller, without advice about waypoints it never had."""
    q1 = np.eye(7)[1] * 2.2  # joint_2 at 0.8 rad/s toward its 2.24 limit, back there at rest
    passing = JointTrajectory([0.5], [q1], start=(q1, np.eye(7)[1] * 0.8, None))
    position = (
        "trajectory: the interpolated motion takes joint_2 to {} rad at {} s (time_from_start), past "
        "its position limit 2.2400 rad; add waypoints or give velocities that keep it inside"
    )
    with pytest.raises(TargetError) as caught:
        check_motion(robot, passing, offset=1.0)
    pattern = re.escape(position).replace(re.escape("{}"), r"[0-9.]+")
    assert re.fullmatch(pattern, str(caught.value)), caught.value
    fast = JointTrajectory([0.5], [np.eye(7)[0] * 1.0], start=(np.zeros(7), None, None))
    with pytest.raises(TargetError) as caught:
        check_motion(robot, fast)
    assert re.fullmatch(
        r"trajectory: the interpolated motion moves joint_1 at [0-9.]+ rad/s at 0\.2500 s "
        r"\(time_from_start\), above its velocity limit 1\.3963 rad/s; slow it down",
        str(caught.value),
    ), caught.value
    with pytest.raises(TargetError) as caught:
        check_motion(robot, fast, acceleration_limit=np.ones(7))
    assert str(caught.value).startswith("trajectory: the interpolated motion accelerates joint_1 at ")
    assert str(caught.value).endswith(
        "(time_from_start), above its bound 1.00 rad/s² (where the inertial torque alone reaches an "
        "effort limit); slow it down or smooth it"
    )
    wording = MotionWording("the stop from the current motion", "into it", "", "", "")
    with pytest.raises(TargetError) as caught:
        check_motion(robot, passing, wording=wording)
    assert re.fullmatch(
        r"the stop from the current motion takes joint_2 to [0-9.]+ rad at [0-9.]+ s into it, past its "
        r"position limit 2\.2400 rad",
        str(caught.value),
    ), caught.value
