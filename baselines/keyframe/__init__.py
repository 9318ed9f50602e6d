"""The ``keyframe`` stand-up (B-Human, Reichenberg & Laue 2025): the engine
(:mod:`~upright.baselines.keyframe.controller`), its motion library
(:mod:`~upright.baselines.keyframe.library`, data in ``baselines/data/keyframe_<robot>.yaml``) and
the joint-error compensation (:mod:`~upright.baselines.keyframe.compensation`)."""
