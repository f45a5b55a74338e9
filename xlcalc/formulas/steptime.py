"""Step-time model formulas (per-GPU compute, TP/DP communication, bubble) used by the planner."""

from __future__ import annotations

__all__: list[str] = []
