"""An asymmetric actor-critic for SB3's PPO and A2C: the value network reads the whole observation
(the robot's, then privileged simulator state, :class:`~upright.envs.privileged.PrivilegedObservation`),
the actor only its first ``actor_size`` entries, the robot's observation.

The actor's layers are SB3's own (``mlp_extractor.policy_net``, ``action_net``), built for
``actor_size`` inputs, so a deterministic action, the ONNX export and a deployed policy need only
the robot's observation. The class is saved in the model file (SB3 pickles the policy class and
its ``actor_size``), so ``PPO.load`` rebuilds it.
"""

from __future__ import annotations

from typing import Any

import torch
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.torch_layers import MlpExtractor

from upright.policies.sb3 import actor_size


class AsymmetricMlpExtractor(MlpExtractor):
    """SB3's MlpExtractor whose policy network reads the first ``actor_size`` features only."""

    def __init__(self, actor_size: int, feature_dim: int, **kwargs: Any) -> None:
        super().__init__(feature_dim, **kwargs)
        if not 0 < actor_size <= feature_dim:
            raise ValueError(f"actor_size must be in 1..{feature_dim} (the observation size), got {actor_size!r}")
        self.actor_size = actor_size
        self.policy_net = MlpExtractor(actor_size, **kwargs).policy_net

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.forward_actor(features), self.forward_critic(features)

    def forward_actor(self, features: torch.Tensor) -> torch.Tensor:
        return self.policy_net(features[..., :self.actor_size])


class AsymmetricActorCriticPolicy(ActorCriticPolicy):
    """SB3's ActorCriticPolicy (separate actor and critic networks, ``net_arch`` as a dict) with an
    :class:`AsymmetricMlpExtractor`: the actor sees the first ``actor_size`` observation entries,
    the critic all of them."""

    def __init__(self, *args: Any, actor_size: int, **kwargs: Any) -> None:
        self.actor_size = int(actor_size)
        super().__init__(*args, **kwargs)

    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = AsymmetricMlpExtractor(self.actor_size, self.features_dim, net_arch=self.net_arch,
                                                    activation_fn=self.activation_fn, device=self.device)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return {**super()._get_constructor_parameters(), "actor_size": self.actor_size}


def widen_critic(state: dict[str, torch.Tensor], model: Any) -> dict[str, torch.Tensor]:
    """The weights ``state`` of a policy whose critic reads fewer entries than ``model``'s
    asymmetric critic (a symmetric policy: the robot's observation; an asymmetric one trained
    before later privileged blocks existed, which :data:`~upright.envs.privileged.PRIVILEGED`
    appends at its end): the value network's first layer gains zero columns for the new entries,
    so the critic starts as the trained one (its value unchanged) and learns what they add; every
    other weight as it is. ValueError when the shapes fit otherwise."""
    key = "mlp_extractor.value_net.0.weight"
    wide = model.policy.state_dict()[key]
    narrow = state[key]
    if narrow.shape[0] != wide.shape[0] or not actor_size(model) <= narrow.shape[1] < wide.shape[1]:
        raise ValueError(f"the critic's first layer has shape {tuple(narrow.shape)}; this policy's takes "
                         f"{actor_size(model)} to {wide.shape[1] - 1} observation entries into {wide.shape[0]} units")
    widened = torch.zeros_like(wide)
    widened[:, :narrow.shape[1]] = narrow
    return {**state, key: widened}


__all__ = ["AsymmetricActorCriticPolicy", "AsymmetricMlpExtractor", "widen_critic"]
