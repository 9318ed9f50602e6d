"""upright: humanoid get-up and walking environments in MuJoCo (NAO V6, Wolfgang-OP).

``import upright`` registers the Gymnasium environments (``upright/NaoGetUp-v0``,
``upright/WolfgangGetUp-v0``, ``upright/NaoWalk-v0``, ``upright/WolfgangWalk-v0``; with Gymnasium
installed, ``upright[envs]``) and exposes the simulation core (:class:`Simulation`,
:class:`Sensors`, :class:`Conditions`, :class:`Wear`, :func:`get_robot`).
"""

import ctypes as _ctypes
import os as _os
import sys as _sys
from importlib.metadata import version as _version


def _has_egl() -> bool:
    """Whether the EGL library loads (MuJoCo's EGL backend fails at import without it)."""
    try:
        _ctypes.CDLL("libEGL.so.1")
    except OSError:
        return False
    return True


# MuJoCo picks its OpenGL backend from MUJOCO_GL when it is first imported: on a Linux machine
# without a display, default to EGL (off-screen) where the EGL library is installed; without it,
# MuJoCo's own default (simulation works, rendering says what is missing). Set MUJOCO_GL yourself
# to choose another.
if _sys.platform.startswith("linux") and not _os.environ.get("DISPLAY") and "MUJOCO_GL" not in _os.environ \
        and _has_egl():
    _os.environ["MUJOCO_GL"] = "egl"

from upright.envs.conditions import PRESETS, Conditions, Impulse, RandomWear, Wear, get_conditions  # noqa: E402
from upright.envs.robots import RobotSpec, get_robot  # noqa: E402
from upright.envs.sensors import Sensors, fused_angles  # noqa: E402
from upright.envs.simulation import Simulation  # noqa: E402

try:
    import gymnasium as _gymnasium  # noqa: E402
except ModuleNotFoundError as _missing:
    # The robot-side install (``pip install upright``: the baselines, the observation builder and
    # the ONNX runtime) has no Gymnasium and so no environments to register; ``upright[envs]`` adds them.
    if _missing.name != "gymnasium":
        raise
    _gymnasium = None
if _gymnasium is not None:
    from upright.envs.registration import ENVIRONMENTS, register_envs  # noqa: E402
    from upright.baselines import make_controller  # noqa: E402

    # The package root is the one place that knows both layers: the environments (below) build a
    # named prior through the baselines' registry (above them), which is handed in here.
    register_envs(make_controller)

#: The installed distribution's version (pyproject.toml's, its one source).
__version__ = _version("upright")

__all__ = [
    *(["ENVIRONMENTS"] if "ENVIRONMENTS" in globals() else []),
    "PRESETS",
    "Conditions",
    "Impulse",
    "RandomWear",
    "RobotSpec",
    "Sensors",
    "Simulation",
    "Wear",
    "fused_angles",
    "get_conditions",
    "get_robot",
]
