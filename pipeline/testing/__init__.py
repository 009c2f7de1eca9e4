"""Testing helpers for agent loops: a replay model fed by a recorded session, its pytest fixture, and goldens."""

from replay.pipeline.testing.replay_model import RecordedStreamError, ReplayModel, ReplayModelError

__all__ = ["RecordedStreamError", "ReplayModel", "ReplayModelError"]
