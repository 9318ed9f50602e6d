"""Scenes built in code with ``mujoco.MjSpec``: the robot's MJCF plus ground, light and camera.

Terrains: ``flat`` carpet; ``turf`` (a height field up to ``turf_height`` with softer contact,
re-drawn every episode from the seed); ``ramp`` (a plane rising along +x by a tilt); ``obstacles``
(the test course of Reichenberg & Röfer, "Step Adjustment for a Robust Humanoid Walk", Fig. 6 and
Tables 1-2: three flat metres, then a 3 mm edge, two 6 mm edges, two 1 cm ramps, 3 mm and 6 mm
wooden blocks, all under the carpet). The paper gives no distances; the layout in
:data:`OBSTACLE_COURSE` is ours and every obstacle has its own x-interval so falls can be
attributed to it.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np
from scipy.ndimage import correlate1d, gaussian_filter

from upright.envs.conditions import Conditions
from upright.envs.robots import RobotSpec
from upright.envs.robots.user_model import adapted_model

#: Carpet friction (sliding, torsional, rolling) and contact softness (MuJoCo solref/solimp).
CARPET_FRICTION = (1.0, 0.005, 0.0001)
#: Artificial turf: softer contact than the robots' own (time constant 15 ms instead of 5-6 ms).
#: Standing, the feet sink 1-2 mm among the tufts; a fall's impact sinks 1-1.5 cm into the
#: turf instead of about 7 mm into carpet.
TURF_SOLREF = (0.015, 1.0)
TURF_SOLIMP = (0.9, 0.95, 0.005, 0.5, 2.0)
TURF_FRICTION = (0.9, 0.005, 0.0001)
#: Turf height field: extent (half sizes, m) and the cell count of the grid the bumps are drawn
#: on (cells of 2 cm). The collision field has cells of ``Conditions.turf_cell`` (a multiple of
#: the draw's cell) and takes the drawn heights at its vertices (:func:`coarse_turf`).
TURF_HALF_SIZE = 4.0
TURF_CELLS = 400
#: Correlation length of the turf bumps in cells of the draw grid (σ of the Gaussian filter on
#: white noise: 2 cells = 4 cm).
TURF_SMOOTHING = 2.0


@dataclass(frozen=True)
class Obstacle:
    """One obstacle of the course: a name as in the paper's tables and its x-interval (m)."""

    name: str
    x_start: float
    x_end: float


#: The obstacle course along +x (the robot starts at x = 0 facing +x).
OBSTACLE_COURSE: tuple[Obstacle, ...] = (
    Obstacle("first three meters", 0.0, 3.0),
    Obstacle("3 mm edge", 3.0, 3.6),
    Obstacle("first 6 mm edge", 3.6, 4.2),
    Obstacle("second 6 mm edge", 4.2, 4.8),
    Obstacle("first 1 cm ramp", 4.8, 5.7),
    Obstacle("second 1 cm ramp", 5.7, 6.6),
    Obstacle("3 mm wooden blocks", 6.6, 7.4),
    Obstacle("6 mm wooden blocks", 7.4, 8.2),
)

_COURSE_HALF_WIDTH = 0.75


def build_scene(robot: RobotSpec, conditions: Conditions) -> mujoco.MjSpec:
    """The robot's MJCF (a user's model through its map, :attr:`RobotSpec.model`) with the terrain of
    ``conditions``, a light, a sky and a tracking camera."""
    spec = adapted_model(robot)
    spec.add_texture(
        name="skybox", type=mujoco.mjtTexture.mjTEXTURE_SKYBOX, builtin=mujoco.mjtBuiltin.mjBUILTIN_GRADIENT,
        rgb1=[0.6, 0.75, 0.9], rgb2=[0.1, 0.15, 0.2], width=256, height=256,
    )
    spec.visual.headlight.ambient = [0.35, 0.35, 0.35]
    spec.visual.headlight.diffuse = [0.5, 0.5, 0.5]
    world = spec.worldbody
    world.add_light(name="sun", pos=[0, 0, 4], dir=[0, 0, -1], diffuse=[0.7, 0.7, 0.7], castshadow=True)
    # A camera that follows the robot's CoM, looking at it from the front right, slightly above.
    offset = np.array([1.0, -0.8, 0.35])
    forward = -offset / np.linalg.norm(offset)
    right = np.cross(forward, [0.0, 0.0, 1.0])
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    spec.body(robot.torso_body).add_camera(
        name="track", mode=mujoco.mjtCamLight.mjCAMLIGHT_TRACKCOM, pos=offset.tolist(),
        xyaxes=[*right, *up], fovy=40,
    )
    builders = {"flat": _flat, "turf": _turf, "ramp": _ramp, "obstacles": _obstacles}
    builders[conditions.terrain](spec, conditions)
    return spec


def _ground_material(spec: mujoco.MjSpec, name: str, rgb1: list[float], rgb2: list[float]) -> str:
    spec.add_texture(
        name=name, type=mujoco.mjtTexture.mjTEXTURE_2D, builtin=mujoco.mjtBuiltin.mjBUILTIN_CHECKER,
        rgb1=rgb1, rgb2=rgb2, width=300, height=300,
    )
    material = spec.add_material(name=name, texrepeat=[8, 8], texuniform=True, reflectance=0.05)
    material.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = name
    return name


def _ground(spec: mujoco.MjSpec, **attributes: object) -> mujoco.MjsGeom:
    """Add a ground geom with explicit contact and colour settings, so that nothing is inherited
    from the robot file's default class (MjSpec gives new geoms the file's main default)."""
    settings: dict[str, object] = dict(
        contype=1, conaffinity=1, condim=3, solmix=1.0, margin=0.0, gap=0.0, rgba=[1, 1, 1, 1],
        solref=[0.02, 1.0], solimp=[0.9, 0.95, 0.001, 0.5, 2.0], friction=list(CARPET_FRICTION), group=0,
    )
    settings.update(attributes)
    return spec.worldbody.add_geom(**settings)


def _carpet(spec: mujoco.MjSpec) -> str:
    return _ground_material(spec, "carpet", [0.3, 0.6, 0.3], [0.26, 0.54, 0.26])


def _plane(spec: mujoco.MjSpec, material: str, **kwargs: object) -> mujoco.MjsGeom:
    return _ground(spec, type=mujoco.mjtGeom.mjGEOM_PLANE, size=[20, 20, 0.1], material=material, **kwargs)


def _flat(spec: mujoco.MjSpec, conditions: Conditions) -> None:
    _plane(spec, _carpet(spec), name="floor")


def turf_stride(turf_cell: float) -> int:
    """Draw-grid cells per collision cell for a collision cell of ``turf_cell`` (m); a ValueError
    unless ``turf_cell`` is a whole number of draw cells that divides the field."""
    draw_cell = 2 * TURF_HALF_SIZE / TURF_CELLS
    stride = int(round(turf_cell / draw_cell))
    if stride < 1 or abs(stride * draw_cell - turf_cell) > 1e-9 or TURF_CELLS % stride:
        raise ValueError(f"turf_cell must be a multiple of {draw_cell} m that divides {TURF_CELLS} draw cells, "
                         f"got {turf_cell!r}")
    return stride


def _turf(spec: mujoco.MjSpec, conditions: Conditions) -> None:
    material = _ground_material(spec, "turf", [0.15, 0.55, 0.15], [0.12, 0.5, 0.12])
    cells = TURF_CELLS // turf_stride(conditions.turf_cell) + 1
    spec.add_hfield(
        name="turf", nrow=cells, ncol=cells, userdata=[0.5] * (cells * cells),
        size=[TURF_HALF_SIZE, TURF_HALF_SIZE, max(conditions.turf_height, 1e-4), 0.05],
    )
    # The field's tops are at z = 0, its valleys down to -turf_height, so poses placed on z = 0
    # start touching the highest tufts.
    # priority: the turf's contact parameters replace the robot geoms' (which set stiff contact).
    common = dict(friction=list(TURF_FRICTION), solref=list(TURF_SOLREF), solimp=list(TURF_SOLIMP),
                  material=material, priority=1)
    _ground(
        spec, name="floor", type=mujoco.mjtGeom.mjGEOM_HFIELD, hfieldname="turf",
        pos=[0, 0, -conditions.turf_height], **common,
    )
    # Beyond the field: a plane at the turf's mean level.
    _ground(
        spec, name="floor_outer", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[20, 20, 0.1],
        pos=[0, 0, -conditions.turf_height - 0.001], **common,
    )


def draw_turf(rng: np.random.Generator) -> np.ndarray:
    """New turf heights on the draw grid, ``(TURF_CELLS + 1)`` vertices a side, normalised to
    [0, 1] of the field's height: white noise smoothed by a Gaussian of ``TURF_SMOOTHING`` cells."""
    vertices = TURF_CELLS + 1
    noise = gaussian_filter(rng.standard_normal((vertices, vertices)), TURF_SMOOTHING, mode="wrap")
    noise -= noise.min()
    noise /= max(noise.max(), 1e-12)
    return noise


def coarse_turf(heights: np.ndarray, stride: int) -> np.ndarray:
    """The vertex heights of a collision field with cells of ``stride`` draw cells whose surface
    has the statistics of the draw grid's own surface.

    MuJoCo's field is linear between its vertices. Linear interpolation over cells of ``h``
    attenuates a bump of wavenumber ``k`` by about sinc²(kh/2) ≈ 1 − (kh)²/12 along each axis, so
    the draw grid's surface (cells of h₀) already has 1 − (kh₀)²/12 and the coarser one would
    lose more: its heights, slopes and the relief under a foot would come out smoother, its
    correlation length longer. A three-tap filter [−a, 1 + 2a, −a] along each axis multiplies
    by 1 + 2a(1 − cos kh) ≈ 1 + a(kh)²; ``a = (1 − (h₀/h)²)/12`` makes up the difference (a = 1/16
    for cells of twice the draw's). The result is clipped to the draw's range [0, 1], so the
    bumps still reach at most ``turf_height``. The draw grid itself (``stride`` 1) is returned
    as it is."""
    sampled = heights[::stride, ::stride]
    if stride == 1:
        return sampled
    a = (1.0 - 1.0 / stride**2) / 12.0
    kernel = np.array([-a, 1.0 + 2.0 * a, -a])
    sharpened = correlate1d(correlate1d(sampled, kernel, axis=0, mode="nearest"), kernel, axis=1, mode="nearest")
    return np.clip(sharpened, 0.0, 1.0)


def randomize_turf(model: mujoco.MjModel, rng: np.random.Generator) -> None:
    """Draw new turf heights (:func:`draw_turf`) and put them into the model's field in place: on
    a field with the draw's cells the drawn heights, on a coarser one (every ``stride``-th vertex
    of the draw grid) :func:`coarse_turf` of them. The draw and the random numbers it uses do not
    depend on the field's cell, so the rest of an episode's seeded draws stay the same."""
    hfield = model.hfield("turf")
    nrow, ncol = int(hfield.nrow[0]), int(hfield.ncol[0])
    stride = TURF_CELLS // (nrow - 1)
    heights = coarse_turf(draw_turf(rng), stride)
    if heights.shape != (nrow, ncol):
        raise ValueError(f"turf field of {nrow} x {ncol} vertices does not sample the draw grid of "
                         f"{TURF_CELLS + 1} vertices a side")
    start = int(model.hfield_adr[hfield.id])
    model.hfield_data[start : start + nrow * ncol] = heights.ravel()


def _ramp(spec: mujoco.MjSpec, conditions: Conditions) -> None:
    tilt = np.deg2rad(conditions.ramp_tilt_deg)
    # A plane through the origin, rotated about y so that it rises towards +x.
    quat = [np.cos(tilt / 2), 0.0, -np.sin(tilt / 2), 0.0]
    _plane(spec, _carpet(spec), name="floor", quat=quat)


def _obstacles(spec: mujoco.MjSpec, conditions: Conditions) -> None:
    material = _carpet(spec)
    _plane(spec, material, name="floor")
    box = dict(type=mujoco.mjtGeom.mjGEOM_BOX, material=material)
    w = _COURSE_HALF_WIDTH

    def plate(name: str, x0: float, x1: float, height: float) -> None:
        _ground(
            spec, name=name, size=[(x1 - x0) / 2, w, height / 2], pos=[(x0 + x1) / 2, 0, height / 2], **box
        )

    def wedge(name: str, x0: float, x1: float, height: float, rising: bool) -> None:
        # A thin box tilted so its top face goes from 0 to `height` over [x0, x1] (or back down).
        length = x1 - x0
        angle = np.arctan2(height, length)
        half = np.hypot(length, height) / 2
        thick = 0.01
        sign = -1.0 if rising else 1.0
        quat = [np.cos(angle / 2), 0.0, sign * np.sin(angle / 2), 0.0]
        # Centre of the top face, moved half the thickness down along the face normal.
        normal = np.array([sign * np.sin(angle), 0.0, np.cos(angle)])
        centre = np.array([(x0 + x1) / 2, 0.0, height / 2]) - normal * thick / 2
        _ground(spec, name=name, size=[half, w, thick / 2], pos=centre.tolist(), quat=quat, **box)

    edge3, edge6a, edge6b, ramp_a, ramp_b, blocks3, blocks6 = OBSTACLE_COURSE[1:]
    # Edges: a board under the carpet whose leading edge is the obstacle.
    plate("edge_3mm", edge3.x_start + 0.1, edge3.x_end - 0.1, 0.003)
    plate("edge_6mm_1", edge6a.x_start + 0.1, edge6a.x_end - 0.1, 0.006)
    plate("edge_6mm_2", edge6b.x_start + 0.1, edge6b.x_end - 0.1, 0.006)
    for name, ob in (("ramp_1", ramp_a), ("ramp_2", ramp_b)):
        x0 = ob.x_start + 0.1
        wedge(f"{name}_up", x0, x0 + 0.3, 0.01, rising=True)
        plate(f"{name}_top", x0 + 0.3, x0 + 0.4, 0.01)
        wedge(f"{name}_down", x0 + 0.4, x0 + 0.7, 0.01, rising=False)
    # Wooden blocks: 8 × 4 cm blocks in a staggered pattern across the walking line.
    for name, ob, height in (("blocks_3mm", blocks3, 0.003), ("blocks_6mm", blocks6, 0.006)):
        for i, x in enumerate(np.arange(ob.x_start + 0.1, ob.x_end - 0.1, 0.15)):
            for j, y in enumerate(np.arange(-0.25, 0.26, 0.125) + (0.06 if i % 2 else 0.0)):
                _ground(
                    spec, name=f"{name}_{i}_{j}", size=[0.04, 0.02, height / 2], pos=[x, y, height / 2], **box
                )


def obstacle_at(x: float) -> str | None:
    """Name of the obstacle section that contains the x coordinate ``x`` (m), or ``None``."""
    for ob in OBSTACLE_COURSE:
        if ob.x_start <= x < ob.x_end:
            return ob.name
    return None
