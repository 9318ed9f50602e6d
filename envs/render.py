"""Off-screen rendering with a clear message when no OpenGL backend is available."""

from __future__ import annotations

import mujoco
import numpy as np

NO_GL_HELP = (
    "no OpenGL backend for off-screen rendering could be started ({error}). On a headless Linux "
    "machine install one (e.g. `apt-get install -y libegl1` or `apt-get install -y libosmesa6`) and "
    "set MUJOCO_GL=egl or MUJOCO_GL=osmesa before starting Python."
)


class RenderingUnavailable(RuntimeError):
    """Raised when no OpenGL context can be created for rendering."""


class Camera:
    """An off-screen renderer for one model; ``render(data, camera)`` returns an RGB image."""

    def __init__(self, model: mujoco.MjModel, width: int = 640, height: int = 480) -> None:
        try:
            self._renderer = mujoco.Renderer(model, height, width)
        except Exception as error:  # the GL libraries raise a variety of errors
            raise RenderingUnavailable(NO_GL_HELP.format(error=f"{type(error).__name__}: {error}")) from error
        self._model = model
        self._uploaded_hfield: np.ndarray | None = None

    def render(self, data: mujoco.MjData, camera: str | int = "track") -> np.ndarray:
        """RGB image (height, width, 3, uint8) of ``data`` seen from ``camera``."""
        if self._model.nhfield and (
            self._uploaded_hfield is None or not np.array_equal(self._uploaded_hfield, self._model.hfield_data)
        ):
            # Height fields are redrawn per episode; send new heights to the GPU once.
            for i in range(self._model.nhfield):
                mujoco.mjr_uploadHField(self._model, self._renderer._mjr_context, i)
            self._uploaded_hfield = self._model.hfield_data.copy()
        self._renderer.update_scene(data, camera=camera)
        return self._renderer.render()

    def close(self) -> None:
        self._renderer.close()
