"""Trained policies: an SB3 model with its frozen observation normalisation as a
:class:`~upright.policies.base.Policy`, loaded from a run folder of ``upright train``, one of its
``.zip`` files, or a shipped policy ``zoo:NAME`` (``NAME/`` in the user's zoo, ``$UPRIGHT_ZOO`` or
the current project's ``policies/zoo``, else in the package's, :func:`zoo_entry`).

A run folder's ``config.yml`` carries the environment keyword arguments the policy was trained with
(prior, residual scale, conditions, ...): :func:`run_env_kwargs` returns them, so ``upright eval``
rebuilds that environment unless ``--set`` overrides a key.

What a run folder's files promise (:mod:`upright.training.train` writes them, every file through a
temporary file in the same folder and ``os.replace``): a model file is renamed into place after
its companions (normalisation statistics, replay buffer), so a checkpoint whose ``.zip`` exists is
complete; ``model.zip`` is published from the newest checkpoint, so a save that a kill cut short
leaves it older than that checkpoint, never newer; and every saved normaliser records the
environment steps of the model it was saved with (:data:`STEPS_STAMP`), which loading checks.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import sys
import zipfile
from pathlib import Path
from typing import Any

import yaml

from upright.policies.algorithms import algo_class
from upright.policies.rl_zoo import is_rl_zoo_run, rl_zoo_model, rl_zoo_normalizer_paths
from upright.policies.run_folder import load_run_config, read_manifest
from upright.policies.sb3 import ModelPolicy

ZOO_PREFIX = "zoo:"
#: A checkpoint's model file (SB3's CheckpointCallback names: ``model_N_steps.zip``).
CHECKPOINT = re.compile(r"model_(\d+)_steps\.zip")
#: Model files of a run folder besides its checkpoints.
RUN_MODELS = ("model.zip", "best_model.zip")
#: Attribute of a saved VecNormalize: ``num_timesteps`` of the model saved with it.
STEPS_STAMP = "upright_model_steps"


#: The zoo of a project, relative to its folder (the current directory): where ``upright ship``
#: writes unless told otherwise.
PROJECT_ZOO = Path("policies", "zoo")


def packaged_zoo() -> Path:
    """The zoo installed with the package (the policies shipped with upright)."""
    return Path(__file__).parent / "zoo"


def user_zoo() -> Path:
    """The user's zoo, which ``upright ship`` and ``upright export --zoo`` write into:
    ``$UPRIGHT_ZOO`` when set, else ``policies/zoo`` of the current directory (never the
    installed package's folder, unless that is the current project's)."""
    return Path(os.environ.get("UPRIGHT_ZOO") or PROJECT_ZOO)


def zoo_dirs() -> tuple[Path, ...]:
    """The zoos ``zoo:NAME`` is looked up in, in order: the user's (:func:`user_zoo`), then the
    package's (one of them when they are the same folder, as in upright's own checkout)."""
    user, packaged = user_zoo(), packaged_zoo()
    same = user.exists() and user.resolve() == packaged.resolve()
    return (user,) if same else (user, packaged)


def _entries(root: Path) -> list[str]:
    """Names of the entries of the zoo ``root`` (folders with a ``manifest.yml``; not the hidden
    ones that ``upright ship`` assembles an entry in)."""
    if not root.is_dir():
        return []
    return [p.parent.name for p in root.glob("*/manifest.yml") if not p.parent.name.startswith(".")]


def zoo_names(root: Path | None = None) -> tuple[str, ...]:
    """Names of the shipped policies of the zoo ``root``, or of every zoo (:func:`zoo_dirs`), sorted."""
    return tuple(sorted({name for zoo in ((root,) if root is not None else zoo_dirs()) for name in _entries(zoo)}))


def zoo_entry(name: str) -> Path:
    """The folder of the zoo entry ``name``: in the first zoo of :func:`zoo_dirs` that has it (a
    user's entry shadows a packaged one of that name); ValueError naming a name that is a path
    (``zoo:../x``: zoo names stay inside a zoo) or that no zoo has."""
    if not name or name.startswith(".") or Path(name).name != name or "\\" in name:
        raise ValueError(f"zoo policy {ZOO_PREFIX + name!r}: a zoo name is one folder name in the zoo (letters, "
                         "digits, '-' and '_'), not a path")
    for zoo in zoo_dirs():
        if (zoo / name / "manifest.yml").is_file():
            return zoo / name
    looked = " and ".join(str(zoo) for zoo in zoo_dirs())
    raise ValueError(f"unknown zoo policy {ZOO_PREFIX + name!r}; shipped: {', '.join(zoo_names()) or 'none'} "
                     f"(looked in {looked})")


def is_run_dir(path: str | Path) -> bool:
    """Whether ``path`` is a folder of ``upright train`` (or a zoo entry): its ``config.yml`` is a
    YAML mapping naming the run's ``env_id`` and ``algo``. Any other ``config.yml`` beside a model
    (a plain SB3 model's, another tool's) does not make a run folder."""
    config = Path(path) / "config.yml"
    if not config.is_file():
        return False
    try:
        data = yaml.safe_load(config.read_text())
    except (yaml.YAMLError, UnicodeDecodeError):
        return False
    return isinstance(data, dict) and all(isinstance(data.get(key), str) for key in ("env_id", "algo"))


def find_run_dir(path: str | Path) -> Path | None:
    """The run folder ``path`` is or holds a model of: a run folder itself, its ``model.zip`` or
    ``best_model.zip``, or a checkpoint ``checkpoints/model_N_steps.zip`` in it; an rl_zoo3 run
    folder or a ``.zip`` in one (:mod:`upright.policies.rl_zoo`); None for anything else (a plain
    SB3 ``.zip`` is no run's model, whatever lies beside it)."""
    path = Path(path)
    if path.is_dir():
        return path if is_run_dir(path) or is_rl_zoo_run(path) else None
    if path.suffix == ".zip" and is_rl_zoo_run(path.parent):
        return path.parent
    if path.name in RUN_MODELS:
        candidate = path.parent
    elif CHECKPOINT.fullmatch(path.name) and path.parent.name == "checkpoints":
        candidate = path.parent.parent
    else:
        return None
    return candidate if is_run_dir(candidate) else None


def resolve_run_path(name: str) -> Path:
    """The path of a run folder, run ``.zip`` or ``zoo:NAME`` policy ``name`` (ValueError naming
    an unknown zoo policy, a zoo name that is a path (``zoo:../x``: zoo names stay inside the zoo)
    or a missing path)."""
    if name.startswith(ZOO_PREFIX):
        entry = zoo_entry(name[len(ZOO_PREFIX):])
        read_manifest(entry)  # a damaged entry is refused, naming its manifest, not run as it is
        return entry
    path = Path(name)
    if not path.exists():
        raise ValueError(f"policy {name!r}: no such file or folder")
    return path


def normalizer_path(model_path: Path) -> Path:
    """The VecNormalize file saved with ``model_path``: ``model.zip`` -> ``vecnormalize.pkl``,
    ``best_model.zip`` -> ``best_vecnormalize.pkl``, a checkpoint ``model_N_steps.zip`` ->
    ``model_vecnormalize_N_steps.pkl`` (SB3's CheckpointCallback names)."""
    return _companion(model_path, "vecnormalize")


def replay_buffer_path(model_path: Path) -> Path:
    """The replay buffer saved with ``model_path`` (off-policy): ``model.zip`` ->
    ``replay_buffer.pkl``, a checkpoint ``model_N_steps.zip`` -> ``model_replay_buffer_N_steps.pkl``."""
    return _companion(model_path, "replay_buffer")


def _companion(model_path: Path, kind: str) -> Path:
    stem = model_path.stem
    if stem.endswith("_steps"):
        prefix, steps = stem[: -len("_steps")].rsplit("_", 1)
        return model_path.with_name(f"{prefix}_{kind}_{steps}_steps.pkl")
    return model_path.with_name(("best_" if stem == "best_model" else "") + f"{kind}.pkl")


def model_steps(model_path: Path) -> int:
    """The environment steps (``num_timesteps``) an SB3 model file was saved at; ValueError when
    ``model_path`` is no SB3 model file."""
    try:
        with zipfile.ZipFile(model_path) as archive:
            return int(json.loads(archive.read("data"))["num_timesteps"])
    except (OSError, zipfile.BadZipFile, KeyError, ValueError) as error:
        raise ValueError(f"{str(model_path)!r} is not a readable SB3 model file ({error})") from None


def newest_model(run_dir: Path, *, normalize: bool, replay_buffer: bool = False) -> Path:
    """The model file of ``run_dir`` with the most environment steps: ``model.zip`` or a newer
    complete checkpoint (a run killed before it saved, or while it saved ``model.zip``). Complete:
    the model with its normalisation statistics when ``normalize`` and its replay buffer when
    ``replay_buffer``; checkpoints that lack one (a kill inside SB3's own checkpoint callback,
    which wrote the model first) are passed over. ValueError naming the file ``model.zip`` lacks
    (a run that lost it would otherwise go on with fresh statistics or an empty buffer), or when
    the run has no model at all."""
    candidates: list[tuple[int, int, Path]] = []
    final = run_dir / "model.zip"
    if final.is_file():
        candidates.append((model_steps(final), 1, final))  # preferred over a checkpoint of as many steps
    for path in (run_dir / "checkpoints").glob("model_*_steps.zip"):
        if match := CHECKPOINT.fullmatch(path.name):
            candidates.append((int(match.group(1)), 0, path))
    for _, _, path in sorted(candidates, reverse=True):
        needed = [normalizer_path(path)] * normalize + [replay_buffer_path(path)] * replay_buffer
        missing = [file for file in needed if not file.is_file()]
        if not missing:
            return path
        if path == final:
            lost = "its normalisation statistics" if missing[0] == normalizer_path(final) else "its replay buffer"
            raise ValueError(f"run {str(run_dir)!r}: {missing[0].name} is missing beside model.zip; the model "
                             f"cannot go on without {lost}")
    raise ValueError(f"run {str(run_dir)!r} has no model to load or resume from (no model.zip and no complete "
                     "checkpoint in checkpoints/)")


def _first_line(error: BaseException) -> str:
    """``TYPE: first line of the message`` of ``error``."""
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0]}" if text else type(error).__name__


def load_normalizer(path: Path) -> Any:
    """A VecNormalize pickled by SB3 (without its environment), used only to normalise; ValueError
    naming ``path`` when it is no such pickle (truncated, empty, another object). Unpickling runs
    code: load only the files of runs you trust."""
    from stable_baselines3.common.vec_env import VecNormalize  # SB3 (and torch): only when a model loads

    try:
        with path.open("rb") as file:
            normalizer = pickle.load(file)
    except OSError:
        raise
    except Exception as error:  # a truncated or foreign pickle fails in many ways
        raise ValueError(f"{str(path)!r} is not readable normalisation statistics ({_first_line(error)})") from error
    if not isinstance(normalizer, VecNormalize):
        raise ValueError(f"{str(path)!r} holds a {type(normalizer).__name__}, not SB3's VecNormalize statistics")
    normalizer.training = False
    return normalizer


def load_model(algo: str, path: Path, **kwargs: Any) -> Any:
    """The SB3 model of ``algo`` saved in ``path``, on the CPU (``kwargs``: more arguments of SB3's
    ``load``, e.g. ``env``); ValueError naming ``path`` when it does not load (a truncated, empty or
    foreign file). Loading unpickles: load only the models of runs you trust."""
    model_class = algo_class(algo)  # without SB3 installed: its ModuleNotFoundError, which names the extra
    try:
        return model_class.load(path, device="cpu", **kwargs)
    except OSError:
        raise
    except Exception as error:  # SB3 reads a zip of JSON, pickles and torch tensors: many ways to fail
        raise ValueError(f"{str(path)!r} does not load as a {algo} model ({_first_line(error)})") from error


def check_pair(model_path: Path, steps: int, normalizer: Any, normalizer_file: Path) -> None:
    """ValueError when ``normalizer`` (loaded from ``normalizer_file``) was saved with another model
    than ``model_path`` (``steps`` environment steps): a save of the pair that a kill cut short.
    Statistics saved before :data:`STEPS_STAMP` existed are taken as they are."""
    stamp = vars(normalizer).get(STEPS_STAMP)  # getattr would recurse in a VecNormalize without its venv
    if stamp is not None and stamp != steps:
        raise ValueError(f"{model_path.name} ({steps} steps) and {normalizer_file.name} ({stamp} steps) were not "
                         "saved together (a save was cut off); load another model of the run")


def run_model(name: str) -> tuple[Path, Path]:
    """The run folder and model file of a run folder (its newest model, :func:`newest_model`), of
    one of its ``.zip`` files, or of ``zoo:NAME``; ValueError naming what is not a run or has no
    such model."""
    path = resolve_run_path(name)
    run_dir = find_run_dir(path)
    if run_dir is None:
        raise ValueError(f"{name!r} is not a run folder of upright train or one of its models "
                         "(model.zip, best_model.zip, checkpoints/model_N_steps.zip beside a run's config.yml)")
    if path.suffix == ".zip":
        return run_dir, path
    if is_rl_zoo_run(run_dir):
        return run_dir, rl_zoo_model(run_dir)
    return run_dir, newest_model(run_dir, normalize=load_run_config(run_dir).extras.normalize)


def load_run_policy(name: str) -> ModelPolicy:
    """The policy of a run folder (its newest model: ``model.zip``, or the newest complete
    checkpoint of a run killed before saving it, said on stderr), of one of its ``.zip`` files, or
    ``zoo:NAME``, with the normalisation statistics saved beside the model (an rl_zoo3 run's:
    :func:`~upright.policies.rl_zoo.rl_zoo_normalizer_paths`); ValueError naming the statistics
    files looked for when the run normalised and they are missing, or when they were saved with
    another model."""
    run_dir, model_path = run_model(name)
    config = load_run_config(run_dir)
    rl_zoo = is_rl_zoo_run(run_dir)
    if resolve_run_path(name).is_dir() and model_path != run_dir / "model.zip" and not rl_zoo:
        print(f"upright: run {run_dir} has no model.zip as new as its checkpoints (killed?); using "
              f"{model_path.relative_to(run_dir)}", file=sys.stderr)
    model = load_model(config.algo, model_path)
    looked = rl_zoo_normalizer_paths(model_path) if rl_zoo else [normalizer_path(model_path)]
    norm = next((path for path in looked if path.is_file()), looked[0])
    normalizer = None
    if norm.is_file():
        normalizer = load_normalizer(norm)
        check_pair(model_path, model.num_timesteps, normalizer, norm)
    elif config.extras.normalize and rl_zoo:
        raise ValueError(f"rl_zoo3 run {str(run_dir)!r} normalised its observations (normalize in "
                         f"{run_dir.name}/{looked[-1].parent.name}/config.yml) but its statistics are missing; "
                         f"looked for {', '.join(str(path) for path in looked)}")
    elif config.extras.normalize:
        raise ValueError(f"run {str(run_dir)!r} normalised its observations (hp.normalize) but {norm.name} is missing "
                         f"beside {model_path.name}; without it the policy would see other observations")
    label = name[len(ZOO_PREFIX):] if name.startswith(ZOO_PREFIX) else f"{run_dir.name}/{model_path.stem}"
    return ModelPolicy(model, normalizer, label)


def is_run_policy(name: str) -> bool:
    """Whether ``name`` is ``zoo:NAME``, a run folder or a model file of one (:func:`find_run_dir`)."""
    return name.startswith(ZOO_PREFIX) or (Path(name).exists() and find_run_dir(name) is not None)


def run_env_kwargs(name: str) -> dict[str, Any]:
    """The ``gym.make`` keyword arguments of the environment a run or zoo policy was trained for
    (prior included; the run's evaluation environment when it trained on a wider one); ``{}`` for
    any other policy name."""
    if not is_run_policy(name):
        return {}
    run_dir = find_run_dir(resolve_run_path(name))
    assert run_dir is not None
    return load_run_config(run_dir).eval_kwargs_with_prior


def residual_env_kwargs(name: str, prior: str | None = None) -> dict[str, Any]:
    """:func:`run_env_kwargs` of a residual policy (one trained on a prior), for protocols that run
    it on its prior; ValueError when ``name`` has no prior, or (with ``prior``) another one."""
    trained = run_env_kwargs(name)
    if not trained.get("prior") or (prior is not None and trained["prior"] != prior):
        wanted = f"a residual on {prior!r}" if prior else "a residual (a policy trained on a prior)"
        raise ValueError(f"{name} was trained on prior {trained.get('prior')!r}; {wanted} is needed here")
    return trained


def run_env_id(name: str) -> str | None:
    """The environment id a run or zoo policy was trained on; None for any other policy name."""
    if not is_run_policy(name):
        return None
    run_dir = find_run_dir(resolve_run_path(name))
    assert run_dir is not None
    return load_run_config(run_dir).env_id


__all__ = ["CHECKPOINT", "RUN_MODELS", "STEPS_STAMP", "ZOO_PREFIX", "check_pair", "find_run_dir", "is_run_dir",
           "is_run_policy", "load_model", "load_normalizer", "load_run_policy", "model_steps", "newest_model", "normalizer_path",
           "replay_buffer_path", "residual_env_kwargs", "resolve_run_path", "run_env_id", "run_env_kwargs", "run_model", "packaged_zoo",
           "PROJECT_ZOO", "user_zoo", "zoo_dirs", "zoo_entry", "zoo_names"]
