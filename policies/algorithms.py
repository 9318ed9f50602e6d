"""The stable-baselines3 algorithms, one row each (as rl-baselines3-zoo's ``ALGOS``): what the rest
of the package asks of an algorithm is read from its :class:`Algorithm` row, never from a branch
on its name.

Adding an algorithm: one row in :data:`ALGORITHMS` and, for one ``upright train`` can train, its
hyperparameter file ``training/hyperparams/<name>.yml``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Algorithm:
    """One SB3 algorithm and the facts about it that loading, training and benchmarking need."""

    #: Lower-case name (``--algo``, ``config.yml``, the hyperparameter file's stem).
    name: str
    #: ``upright train`` trains it (the others are only loaded, e.g. a model file from elsewhere).
    trainable: bool
    #: Learns from its own fresh rollouts (no replay buffer); off-policy ones save their replay
    #: buffer beside each model file so that a resumed run continues with it.
    on_policy: bool
    #: Attribute path, from the SB3 policy, of the actor's output module whose last linear layer is
    #: zeroed so that a fresh residual reproduces the prior.
    actor_head: str = "actor.mu"
    #: The two networks ``policy_kwargs.net_arch`` names as a mapping (actor, critic).
    net_arch_keys: tuple[str, str] = ("pi", "qf")
    #: State-dependent log-std layer (SAC): zero-initialisation sets it to ``log_std_init``, and
    #: ``ent_coef`` may be ``auto[_INITIAL]`` (learned).
    learned_entropy: bool = False
    #: Explores with Gaussian action noise of ``hp.action_noise_sigma`` (TD3).
    action_noise: bool = False
    #: Residual-specific starts (``hp.initial_residual``, ``hp.imitate``): the policy's mean action
    #: is its head's output itself, so the head's bias is the residual it starts from.
    residual_start: bool = False
    #: Normalises advantages per minibatch, so ``batch_size`` must be at least 2.
    batch_advantages: bool = False
    #: Benchmarked by ``upright bench --training``.
    benched: bool = False

    @property
    def sb3_name(self) -> str:
        """The class name in ``stable_baselines3``."""
        return self.name.upper()


#: Every algorithm, by name.
ALGORITHMS: dict[str, Algorithm] = {a.name: a for a in (
    Algorithm("ppo", trainable=True, on_policy=True, actor_head="action_net", net_arch_keys=("pi", "vf"),
              residual_start=True, batch_advantages=True, benched=True),
    Algorithm("a2c", trainable=False, on_policy=True, actor_head="action_net", net_arch_keys=("pi", "vf")),
    Algorithm("sac", trainable=True, on_policy=False, learned_entropy=True, benched=True),
    Algorithm("td3", trainable=True, on_policy=False, action_noise=True),
    Algorithm("ddpg", trainable=False, on_policy=False, action_noise=True),
)}
#: The algorithms ``upright train`` trains.
ALGOS = tuple(name for name, a in ALGORITHMS.items() if a.trainable)


def algorithm(algo: str) -> Algorithm:
    """The row of the trainable ``algo`` (ValueError naming an unknown one)."""
    if algo not in ALGOS:
        raise ValueError(f"unknown algorithm {algo!r}; valid algorithms: {', '.join(ALGOS)}")
    return ALGORITHMS[algo]


def residual_start_names() -> str:
    """The trainable algorithms with residual-specific starts, upper case, for error messages
    (e.g. "PPO")."""
    return " or ".join(a.sb3_name for a in ALGORITHMS.values() if a.trainable and a.residual_start)


def algo_class(algo: str) -> type:
    """The SB3 class of the trainable ``algo`` (ValueError naming an unknown one)."""
    import stable_baselines3  # SB3 (and torch) load only when a model does: config.yml alone stays light

    return getattr(stable_baselines3, algorithm(algo).sb3_name)


__all__ = ["ALGORITHMS", "ALGOS", "Algorithm", "algo_class", "algorithm", "residual_start_names"]
