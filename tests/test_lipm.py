"""The 3D-LIPM walk: pendulum equations, step planning, observer, correction, and a short walk."""

from __future__ import annotations

import numpy as np
import pytest

from upright.baselines import baseline_entry
from upright.baselines.walk import pendulum
from upright.baselines.walk.com_observer import ComObserver
from upright.baselines.walk.lipm_player import PendulumPlayer, PlayerParams

K = pendulum.omega(0.262)
NAO_PLAYER = PlayerParams(pendulum_height=0.262, foot_y=0.05, ref_x=0.016, ref_y=0.05, step_duration=0.525,
                          origin_x_cap=0.004, correction_origin_x_cap=0.03, start_origin_y=0.03, max_step_forward=0.08,
                          max_step_backward=0.06, max_step_sideways=0.08, max_turn=0.5)


def test_omega_rejects_bad_height():
    with pytest.raises(ValueError, match="-0.1"):
        pendulum.omega(-0.1)


def test_propagate_is_the_pendulum_solution():
    """x(t) of equation 1 satisfies ẍ = k² x and its derivative is equation 2."""
    x0, v0, t, h = 0.02, -0.1, 0.13, 1e-5
    x, v = pendulum.propagate(x0, v0, K, t)
    xp, _ = pendulum.propagate(x0, v0, K, t + h)
    xm, _ = pendulum.propagate(x0, v0, K, t - h)
    assert v == pytest.approx((xp - xm) / (2 * h), rel=1e-6)
    assert (xp - 2 * x + xm) / h**2 == pytest.approx(K**2 * x, rel=1e-4)


@pytest.mark.parametrize("step_y", [0.0, -0.03, -0.08])
def test_switch_times_make_lateral_motion_continuous(step_y):
    """At te / t̄b the CoM (in Q) and its velocity are the same under both pendulums (eq. 4, 5);
    left support, the right foot steps outwards by -step_y."""
    ry, ry_next, x0y, x0y_next = 0.05, -0.05, -0.037, 0.037
    te, tb_next = pendulum.switch_times(x0y, ry, K, x0y_next, ry_next, K, step_y, t_now=-0.13)
    pos_end, vel_end = pendulum.propagate(x0y, 0.0, K, te)
    pos_next, vel_next = pendulum.propagate(x0y_next, 0.0, K, tb_next)
    assert ry + pos_end == pytest.approx(step_y + ry_next + pos_next, abs=1e-7)
    assert vel_end == pytest.approx(vel_next, abs=1e-9)
    assert te > 0 > tb_next


def test_switch_times_symmetric_in_place():
    """In place with the apex offset from the nominal duration, the switch is at a quarter cycle."""
    te, tb_next = pendulum.switch_times(-NAO_PLAYER.apex_y, 0.05, K, NAO_PLAYER.apex_y, -0.05, K, 0.0, -0.1)
    assert te == pytest.approx(0.525 / 4, abs=1e-6)
    assert tb_next == pytest.approx(-te, abs=1e-6)


def test_switch_times_reports_impossible_switch():
    with pytest.raises(ValueError, match="no support switch"):
        pendulum.switch_times(-0.037, 0.05, K, 0.037, -0.05, K, 0.0, t_now=0.0, t_max=0.01)


def test_connect_solves_the_linear_system():
    """The solution of (9) satisfies all four equations on the sagittal axis."""
    t, x_t, v_t, te, tb_next, step, r_next = -0.12, -0.01, 0.25, 0.13, -0.12, 0.06, 0.016
    r, x0, v0, v0n = pendulum.connect(K, t, x_t, v_t, te, K, tb_next, step, r_next)
    x, v = pendulum.propagate(x0, v0, K, t)
    assert r + x == pytest.approx(x_t)
    assert v == pytest.approx(v_t)
    xe, ve = pendulum.propagate(x0, v0, K, te)
    xn, vn = pendulum.propagate(0.0, v0n, K, tb_next)
    assert ve == pytest.approx(vn)
    assert r + xe == pytest.approx(step + r_next + xn)
    # With the origin given, the step comes out: the same solution gives back the same step.
    step2, x02, v02, v0n2 = pendulum.connect_with_origin(K, t, x_t, v_t, r, te, K, tb_next, r_next)
    assert (step2, x02, v02, v0n2) == pytest.approx((step, x0, v0, v0n))


def test_lateral_apex_inverts_the_pendulum():
    """Equations 19 and 20 recover the apex offset and the time of a lateral state."""
    x0y, t = -0.037, 0.07
    x, v = pendulum.propagate(x0y, 0.0, K, t)
    assert pendulum.lateral_apex(float(x), float(v), K, 0.002) == pytest.approx((x0y, t))


def _walk_world(player: PendulumPlayer, seconds: float, dt: float = 0.012) -> np.ndarray:
    """CoM positions in a fixed frame while the player runs (no turning)."""
    origin, out = np.zeros(2), []
    for _ in range(int(seconds / dt)):
        out.append(origin + player.expected()[0])
        before, step = player.phase_count, player.phase.step.copy()
        player.advance(dt)
        if player.phase_count != before:
            origin = origin + step[:2]
    return np.array(out)


def test_player_com_is_continuous_across_support_switches():
    player = PendulumPlayer(NAO_PLAYER)
    player.command = np.array([0.25, 0.05, 0.0])
    player.start(-1, NAO_PLAYER.ref_x)
    com = _walk_world(player, 4.0)
    jumps = np.linalg.norm(np.diff(com, axis=0), axis=1)
    assert player.phase_count > 10
    assert jumps.max() < 0.006  # < 0.5 m/s × 12 ms: no jump at any switch
    assert com[-1, 0] > 0.5 and com[-1, 1] > 0.05


def test_capped_origin_limits_acceleration():
    """From rest, a fast command is reached over several steps: |r_x − ref_x| never exceeds the
    cap and the achieved step is smaller than the requested one at first."""
    player = PendulumPlayer(NAO_PLAYER)
    player.command = np.array([0.3, 0.0, 0.0])
    player.start(1, NAO_PLAYER.ref_x)
    steps = []
    for _ in range(200):
        before = player.phase_count
        phase = player.phase
        player.advance(0.012)
        if player.phase_count != before and phase.support != 0:
            assert abs(phase.r[0] - NAO_PLAYER.ref_x) <= NAO_PLAYER.origin_x_cap + 1e-12
            steps.append((phase.step[0], phase.desired_step[0]))
    assert steps[0][0] < steps[0][1] - 0.01
    assert steps[-1][0] == pytest.approx(steps[-1][1], abs=1e-6)


def test_correction_passes_through_the_filtered_state():
    """After correcting to a perturbed state, the expected CoM equals that state (eq. 15, 16)."""
    player = PendulumPlayer(NAO_PLAYER)
    player.start(1, NAO_PLAYER.ref_x)
    player.advance(0.5)
    pos, vel = player.expected()
    assert player.phase.support != 0
    target_pos, target_vel = pos + np.array([0.003, -0.004]), vel + np.array([0.02, -0.03])
    assert player.correct(target_pos, target_vel)
    new_pos, new_vel = player.expected()
    assert new_pos == pytest.approx(target_pos, abs=1e-9)
    assert new_vel == pytest.approx(target_vel, abs=1e-9)


def test_swing_foot_is_put_down_the_landing_offset_from_its_planned_point():
    """``landing_offset_x`` moves the swing foot's end along the phase frame's x, blended in over
    the swing: the same start, the end that far from the planned landing point; the support foot,
    the CoM and the step planned stay."""
    from dataclasses import replace

    targets = {}
    for offset in (0.0, -0.01):
        player = PendulumPlayer(replace(NAO_PLAYER, landing_offset_x=offset))
        player.command = (0.15, 0.05, 0.3)
        player.start(1, NAO_PLAYER.ref_x)
        player.advance(0.5)
        phase = player.phase
        assert phase.support != 0
        ends = []
        for t in (phase.tb, phase.te):
            player.t = t
            ends.append(player.target(0.035))
        targets[offset] = ends, phase.step
    (start0, end0), step0 = targets[0.0]
    (start1, end1), step1 = targets[-0.01]
    swing = "right" if start0.support == 1 else "left"
    assert step1 == step0 and start1.com_xy == start0.com_xy and end1.com_xy == end0.com_xy
    assert getattr(start1, swing) == getattr(start0, swing)
    assert getattr(end1, swing)[0] == pytest.approx(getattr(end0, swing)[0] - 0.01, abs=1e-12)
    assert getattr(end1, swing)[1:] == getattr(end0, swing)[1:]
    support = "left" if swing == "right" else "right"
    assert getattr(end1, support) == getattr(end0, support)


def test_prediction_crosses_into_the_next_phase():
    """Equation 21: predicting past te gives the next phase's pendulum in its own frame; the
    player that predicts stays as it was (the prediction shares its state without changing it)."""
    import copy

    player = PendulumPlayer(NAO_PLAYER)
    player.start(1, NAO_PLAYER.ref_x)
    player.advance(0.4)
    before = copy.deepcopy(player.__dict__)
    remaining = player.phase.te - player.t
    ahead = player.advanced(remaining + 0.02)
    assert ahead.phase_count == player.phase_count + 1
    assert player.__dict__ == before
    support, r, x0, v0, tb = player.next
    expected, _ = pendulum.propagate(x0, v0, player.k, tb + 0.02)
    assert ahead.expected()[0] == pytest.approx(r + expected, abs=1e-9)
    ahead.advance(1.0)  # several more switches of the prediction leave the player alone too
    assert player.__dict__ == before


def test_observer_follows_a_constant_offset():
    """With the measurement offset by 5 mm from the expectation, the filtered position moves
    towards the measurement but only partly per cycle (small process noise)."""
    obs = ComObserver(((1e-4, 3e-3), (1e-4, 3e-3)), (2e-3, 2e-3))
    obs.reset(np.zeros(2), np.zeros(2))
    first, _ = obs.update(np.zeros(2), np.zeros(2), np.array([0.005, -0.005]), 0.012)
    assert 0.0 < first[0] < 0.0025 and -0.0025 < first[1] < 0.0
    for _ in range(100):
        pos, _ = obs.update(np.zeros(2), np.zeros(2), np.array([0.005, -0.005]), 0.012)
    # The prediction is the pendulum's, so each cycle adopts the same fraction of the error.
    assert pos[0] == pytest.approx(-pos[1])
    assert 0.0 < pos[0] < 0.005


def test_observer_rejects_bad_noise():
    with pytest.raises(ValueError, match="-1"):
        ComObserver(((-1.0, 1.0), (1.0, 1.0)), (1.0, 1.0))


def test_params_load_for_both_robots():
    from upright.baselines.walk.lipm import LipmParams

    for robot in baseline_entry("lipm").robots:
        params = LipmParams.load(robot)
        assert params.player.pendulum_height > 0 and params.com_height > 0
    with pytest.raises(ValueError, match="robotx"):
        LipmParams.load("robotx")


def test_nao_walks_forward_in_the_environment():
    """Integration: the registered baseline, real physics; 1.5 s to the walking posture, then 3 s
    of walking at 0.1 m/s without falling, the torso moving forward."""
    import gymnasium as gym

    import upright  # noqa: F401  (registers the environments)
    from upright.policies.registry import load_policy

    env = gym.make("upright/NaoWalk-v0", command=(0.1, 0.0, 0.0), max_episode_seconds=4.5)
    policy = load_policy("lipm")
    obs, info = env.reset(seed=0)
    policy.reset(env, 0)
    start = env.unwrapped.sim.torso_pose()[0].copy()
    while True:
        obs, _, terminated, truncated, info = env.step(policy.act(obs, info))
        if terminated or truncated:
            break
    moved = env.unwrapped.sim.torso_pose()[0] - start
    env.close()
    assert info["episode_metrics"]["falls"] == 0
    assert truncated and not terminated
    assert moved[0] > 0.12 and abs(moved[1]) < 0.1


def test_controller_rejects_bad_command():
    from upright.baselines.walk.lipm import LipmWalk

    walk = LipmWalk("nao")
    with pytest.raises(ValueError, match="nan"):
        walk.set_command(np.array([np.nan, 0.0, 0.0]))


# ------------------------------------------------------------------ the walks' fast paths


def test_closed_form_switch_time_is_the_root_of_the_continuity_equations():
    """The closed-form te makes the lateral CoM continuous (eq. 4, 5) and agrees with a tight
    root search of the same equation; without a root in the interval it raises like the search."""
    from scipy.optimize import brentq

    rng = np.random.default_rng(3)
    checked = 0
    for _ in range(500):
        a = rng.uniform(0.005, 0.06) * rng.choice([-1.0, 1.0])
        b = -np.sign(a) * rng.uniform(0.005, 0.06)
        ry, ry_next, step_y, t_now = rng.uniform(-0.08, 0.08), rng.uniform(-0.08, 0.08), rng.uniform(-0.1, 0.1), -0.1
        gap = ry_next + step_y - ry

        def mismatch(te):
            tb = pendulum.next_begin_time(a, K, te, b, K)
            return a * np.cosh(K * te) - b * np.cosh(K * tb) - gap

        has_root = np.sign(mismatch(0.0)) != np.sign(mismatch(2.0))
        if not has_root:
            with pytest.raises(ValueError, match="no support switch"):
                pendulum.switch_times(a, ry, K, b, ry_next, K, step_y, t_now)
            continue
        te, tb_next = pendulum.switch_times(a, ry, K, b, ry_next, K, step_y, t_now)
        assert te == pytest.approx(brentq(mismatch, 0.0, 2.0, xtol=1e-13), abs=1e-9)
        pos, vel = pendulum.propagate(a, 0.0, K, te)
        pos_next, vel_next = pendulum.propagate(b, 0.0, K, tb_next)
        assert ry + pos == pytest.approx(step_y + ry_next + pos_next, abs=1e-9)
        assert vel == pytest.approx(vel_next, abs=1e-9)
        checked += 1
    assert checked > 100


def test_connection_by_elimination_matches_the_linear_system():
    """connect / connect_with_origin give the solution of the 4 x 4 system (9) (np.linalg.solve)."""
    rng = np.random.default_rng(4)
    for _ in range(200):
        t, x_t, v_t = rng.uniform(-0.2, 0.0), rng.normal(0, 0.02), rng.normal(0, 0.3)
        te, tb, step, r_next, x0n = rng.uniform(0.05, 0.2), rng.uniform(-0.2, -0.05), rng.normal(0, 0.05), 0.016, \
            rng.normal(0, 0.01)
        c, s, ce, se, cn, sn = (np.cosh(K * t), np.sinh(K * t), np.cosh(K * te), np.sinh(K * te), np.cosh(K * tb),
                                np.sinh(K * tb))
        a = np.array([[1, c, s / K, 0], [0, K * s, c, 0], [0, K * se, ce, -cn], [1, ce, se / K, -sn / K]])
        b = np.array([x_t, v_t, x0n * K * sn, step + r_next + x0n * cn])
        np.testing.assert_allclose(pendulum.connect(K, t, x_t, v_t, te, K, tb, step, r_next, x0n),
                                   np.linalg.solve(a, b), atol=1e-12)
        r = 0.01
        a[:, 0] = [0, 0, 0, -1]
        b = np.array([x_t - r, v_t, x0n * K * sn, r_next + x0n * cn - r])
        np.testing.assert_allclose(pendulum.connect_with_origin(K, t, x_t, v_t, r, te, K, tb, r_next, x0n),
                                   np.linalg.solve(a, b), atol=1e-12)


def test_solve_takes_the_first_reachable_candidate_inside_the_ranges(robot):
    """LegIK.solve against its candidates written out: the first one that reaches the goal inside
    the joint ranges, else one clipped into them and not reachable (or reachable up to LIMIT_TOL),
    with joint 0 free and given, on reachable goals and on goals mostly out of reach."""
    from upright.baselines.kinematics import Kinematics
    from upright.baselines.kinematics.forward import LIMIT_TOL

    kin = Kinematics(robot)
    rng = np.random.default_rng(5)
    base = kin.keyframe_joints()
    taken = clipped = 0
    for side in ("left", "right"):
        leg = kin.legs[side]
        idx = kin.joint_index(leg.joint_names)
        for i in range(150):
            q = base.copy()
            q[idx] = rng.uniform(leg.lower, leg.upper) if i % 2 else q[idx] + rng.normal(0.0, 0.3, 6)
            pos, rot = kin.foot_pose(side, q)
            if i % 3 == 0:
                pos = pos + rng.normal(0.0, 0.2, 3)  # mostly out of reach
            pos, rot = pos.tolist(), rot.tolist()
            first = float(rng.uniform(-0.5, 0.5))
            for given, candidates in ((None, leg.solver.candidates(pos, rot)),
                                      (first, leg.solver.candidates_given_first(pos, rot, first))):
                angles, reachable = kin.solve(side, pos, rot, first=given, polish=False)
                inside = [c for c, ok in candidates if ok and np.all((leg.lower <= c) & (c <= leg.upper))]
                if inside:
                    assert reachable and angles == inside[0]
                    taken += 1
                else:
                    assert np.all((leg.lower <= angles) & (angles <= leg.upper))
                    assert not reachable or leg.limit_excess(angles) <= LIMIT_TOL
                    clipped += 1
    assert taken > 100 and clipped > 20


def test_walk_legs_takes_the_straight_first_candidate_or_else_solves(robot):
    """LegSolver.first and first_given_first are the first of their candidates to the bit, and
    walk_legs gives each leg what solve without the polish gives it (NAO: for the mean of the legs'
    first_yaw), on goals near the walking posture (the first candidate taken) and far from it."""
    from upright.baselines.kinematics import Kinematics

    kin = Kinematics(robot)
    rng = np.random.default_rng(7)
    base = kin.keyframe_joints()
    straight = 0
    for i in range(120):
        q = base.copy()
        q[kin.legs_joint_index] += rng.normal(0.0, 0.05 if i % 2 else 0.8, 12)
        goal = [v.tolist() for side in ("left", "right") for v in kin.foot_pose(side, q)]
        first = 0.5 * (kin.legs["left"].solver.first_yaw(*goal[:2]) + kin.legs["right"].solver.first_yaw(*goal[2:]))
        expected = []
        for side, (pos, rot) in zip(("left", "right"), (goal[:2], goal[2:])):
            solver = kin.legs[side].solver
            assert solver.first(pos, rot) == next(solver.candidates(pos, rot))
            assert solver.first_given_first(pos, rot, first) == next(solver.candidates_given_first(pos, rot, first))
            given = first if kin.shared_hip else None
            expected.append(kin.solve(side, pos, rot, first=given, polish=False))
            candidate, ok = solver.first(pos, rot) if given is None else solver.first_given_first(pos, rot, given)
            straight += ok and kin.legs[side].inside(candidate)
        (left, ok_left), (right, ok_right) = expected
        assert kin.walk_legs(*goal) == (left + right, ok_left and ok_right)
    assert 100 < straight < 230


def test_unchecked_newton_step_is_the_one_the_check_would_accept(monkeypatch):
    """A polish step below TINY_STEP is taken without another FK; with the shortcut switched off
    (every step checked) the Wolfgang legs come out the same."""
    import upright.baselines.kinematics.leg_ik as leg_ik
    from upright.baselines.kinematics import Kinematics

    kin = Kinematics("wolfgang")
    rng = np.random.default_rng(6)
    base = kin.keyframe_joints()
    goals = []
    for _ in range(100):
        q = base.copy()
        q[kin.legs_joint_index] += rng.normal(0.0, 0.15, 12)
        goals.append([v.tolist() for side in ("left", "right") for v in kin.foot_pose(side, q)])
    fast = [kin.legs_ik(*g)[0] for g in goals]
    monkeypatch.setattr(leg_ik, "TINY_STEP", 0.0)
    checked = [kin.legs_ik(*g)[0] for g in goals]
    assert fast == checked


def test_wolfgang_without_polish_misses_its_sole_goals_by_under_a_micrometre():
    """walk_legs, the walks' call: the closed form alone (no polish) on Wolfgang's
    model (whose ankle axes miss by 0.36 µm) reaches walking foot goals within 1 µm."""
    from upright.baselines.kinematics import Kinematics

    kin = Kinematics("wolfgang")
    rng = np.random.default_rng(7)
    base = kin.keyframe_joints()
    worst = 0.0
    for _ in range(100):
        q = base.copy()
        q[kin.legs_joint_index] += rng.normal(0.0, 0.1, 12)
        goal = [kin.foot_pose(side, q) for side in ("left", "right")]
        angles, reachable = kin.walk_legs(*(v.tolist() for g in goal for v in g))
        assert reachable
        solved = base.copy()
        solved[kin.legs_joint_index] = angles
        for side, (pos, rot) in zip(("left", "right"), goal):
            p, r = kin.foot_pose(side, solved)
            worst = max(worst, float(np.abs(p - pos).max()), float(np.abs(r - rot).max()))
    assert worst < 1e-6


def test_sampled_joints_solve_every_period_cycles_and_continue_the_line_between():
    """ik_period (Wolfgang 2): the IK every period-th cycle, the joints of the cycles between on the
    line through the last two solutions; period 1 solves every cycle."""
    from upright.baselines.walk.ik_samples import SampledJoints

    def line(n: int) -> np.ndarray:
        return np.array([0.1 * n, 1.0 - 0.25 * n])

    samples, solved = SampledJoints(3), []
    for n in range(10):
        if samples.due():
            samples.solved(line(n))
            solved.append(n)
        else:
            np.testing.assert_allclose(samples.continued(), line(n), atol=1e-12)
    assert solved == [0, 1, 4, 7]  # the first two cycles solve (no line yet)
    every = SampledJoints(1)
    assert all(every.due() for _ in range(5))
    for period in (0, 1.5, True):
        with pytest.raises(ValueError):
            SampledJoints(period)


def test_sampled_joints_continue_a_single_joint_as_a_float():
    """hip_period (NAO 2): one joint's angle (a float) is sampled and continued like an array."""
    from upright.baselines.walk.ik_samples import SampledJoints

    samples, answers = SampledJoints(2), []
    for n in range(6):
        if samples.due():
            samples.solved(0.5 - 0.1 * n)
            answers.append(None)
        else:
            answers.append(samples.continued())
    assert [a is None for a in answers] == [True, True, False, True, False, True]
    assert isinstance(answers[2], float) and answers[2] == pytest.approx(0.3, abs=1e-15)
    assert answers[4] == pytest.approx(0.1, abs=1e-15)


def test_legs_solved_for_a_given_shared_hip_reach_their_positions_and_sole_normals():
    """walk_legs(shared_first=...) on NAO: both legs take the given HipYawPitch and still put
    their soles at the goal positions with the goal's sole normal (only the yaw about it follows);
    without it the shared joint is the free legs' mean, as before."""
    from upright.baselines.kinematics import Kinematics

    kin = Kinematics("nao")
    rng = np.random.default_rng(11)
    base = kin.keyframe_joints()
    for _ in range(50):
        q = base.copy()
        q[kin.legs_joint_index] += rng.normal(0.0, 0.05, 12)
        goal = [kin.foot_pose(side, q) for side in ("left", "right")]
        flat = [v.tolist() for g in goal for v in g]
        free, _ = kin.walk_legs(*flat)
        hip = free[0] + float(rng.normal(0.0, 0.01))
        angles, reachable = kin.walk_legs(*flat, shared_first=hip)
        assert reachable and angles[0] == hip and angles[6] == hip
        solved = base.copy()
        solved[kin.legs_joint_index] = angles
        for side, (pos, rot) in zip(("left", "right"), goal):
            p, r = kin.foot_pose(side, solved)
            np.testing.assert_allclose(p, pos, atol=1e-9)
            np.testing.assert_allclose(r[:, 2], rot[:, 2], atol=1e-9)  # the sole normal
    assert kin.walk_legs(*flat)[0] == free


def test_the_request_limit_scales_a_command_onto_its_ellipsoid_keeping_its_direction():
    """B-Human's speedMax: inside the ellipsoid a command is planned as given; outside it is scaled
    onto it; a backward command meets the backward semi-axis. The walk keeps the user's command."""
    from upright.baselines.walk.lipm import LipmParams, LipmWalk

    params = LipmParams.load("wolfgang").with_overrides({"speed_max": (0.3, 0.15, 0.5), "speed_max_backward": 0.2})
    assert params.limited((0.15, 0.0, 0.25)) == (0.15, 0.0, 0.25)
    for command in [(0.3, 0.0, 0.5), (-0.2, 0.1, -0.4), (0.0, -0.3, 0.0)]:
        limited = np.array(params.limited(command))
        back = 0.2 if command[0] < 0 else 0.3
        assert np.linalg.norm(limited / [back, 0.15, 0.5]) == pytest.approx(1.0)
        assert np.allclose(limited / np.linalg.norm(limited), np.array(command) / np.linalg.norm(command))
    walk = LipmWalk("wolfgang", params)
    walk.set_command(np.array([0.3, 0.0, 0.5]))
    assert walk.command.tolist() == [0.3, 0.0, 0.5]
    unlimited = LipmParams.load("nao").with_overrides({"speed_max": None, "speed_max_backward": None})
    assert unlimited.limited((5.0, 5.0, 5.0)) == (5.0, 5.0, 5.0)
    with pytest.raises(ValueError, match="together"):
        LipmParams.load("nao").with_overrides({"speed_max": (0.3, 0.1, 0.5), "speed_max_backward": None})
    with pytest.raises(ValueError, match="must be > 0"):
        LipmParams.load("nao").with_overrides({"speed_max": (0.3, 0.0, 0.5), "speed_max_backward": 0.2})


def test_lipm_rejects_a_bad_hip_period():
    """A hip period that is not a whole number of cycles >= 1 fails when the walk is built."""
    from upright.baselines.walk.lipm import LipmParams, LipmWalk

    params = LipmParams.load("nao").with_overrides({"hip_period": 0})
    with pytest.raises(ValueError, match="period must be an integer >= 1"):
        LipmWalk("nao", params)


def test_odometry_sampled_every_other_cycle_measures_the_same_steps():
    """feedback.period 2 (lipm): the odometry integrates two cycles as one piece and still ends its
    steps at their cycles: on the same sensors (a lab walk turning and walking sideways, feedback
    applied by neither) it measures the same full cycles as period 1, their linear velocities each
    within 5 mm/s (measured: 3.5) and on average within 2 mm/s (1.0), their turn rates equal."""
    import gymnasium as gym

    from upright.baselines.walk.lipm import LipmParams, LipmWalk
    from upright.baselines.walk.odometry import SpeedFeedback

    command = (0.15, 0.05, 0.3)
    walks = [LipmWalk("nao", LipmParams.load("nao").with_overrides({"feedback.enabled": False,
                                                                   "feedback.period": period}))
             for period in (1, 2)]
    env = gym.make("upright/NaoWalk-v0", conditions="lab", command=command, max_episode_seconds=8.0)
    _, info = env.reset(seed=0)
    measured: list[list[tuple]] = [[], []]
    for walk in walks:
        walk.set_command(np.array(command))
        walk.reset(info["sensors"], np.random.default_rng(0))
    while True:
        targets = [walk.step(info["sensors"]) for walk in walks][0]
        for walk, found in zip(walks, measured):
            if walk.feedback.measured is not None and (not found or found[-1] != walk.feedback.measured):
                found.append(walk.feedback.measured)
        _, _, terminated, truncated, info = env.step(env.unwrapped.action_from_targets(targets))
        if terminated or truncated:
            break
    assert not terminated and len(measured[0]) >= 10
    assert len(measured[1]) == len(measured[0])
    difference = np.array(measured[1]) - np.array(measured[0])
    assert np.abs(difference[:, :2]).max() < 0.005 and np.abs(difference[:, :2].mean(axis=0)).max() < 0.002
    assert np.abs(difference[:, 2]).max() < 1e-12  # the turn is still summed every cycle
    with pytest.raises(ValueError, match="feedback.period must be an integer >= 1"):
        SpeedFeedback(LipmParams.load("nao").with_overrides({"feedback.period": 0}).feedback)
