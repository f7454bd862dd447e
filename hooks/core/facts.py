"""What the world says, gathered at the edge before a sync and handed to the pure core.

The core never reads a clock or calls a service; `hooks.edge` fills this in (tests build it
by hand).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Facts:
    now: datetime  # timezone-aware
