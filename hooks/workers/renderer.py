"""What the hook renders with: a template set loaded by its sources, and the `desire` step run
against it. `LocalRenderer` runs in this process (tests, and tools that trust their input);
`hooks.workers.pool.WorkerPool` runs in worker processes with budgets."""

from __future__ import annotations

from typing import Protocol

from hooks.core.desired import Desired, DesiredInputs, desire
from hooks.edge.templates import compile_checked
from hooks.rendering.templateset import TemplateSet, TemplateSources
from hooks.settings import ChildSettings

KEPT_SETS = 4  # template sets a renderer keeps compiled: the current one and a few before it


class Renderer(Protocol):
    def load(self, sources: TemplateSources) -> str:
        """Compile `sources` and try them end to end; their digest, or TemplateError."""

    def desire(self, inputs: DesiredInputs, templates: str, deadline: float | None = None) -> Desired:
        """`desire(inputs, <the set with that digest>)`, by `deadline` (time.monotonic())
        when given; TemplateError when it fails, Busy when it cannot start in time."""

    def close(self) -> None:
        """Stop whatever the renderer started."""


class LocalRenderer:
    """Renders in this process: no budgets, no isolation."""

    def __init__(self, settings: ChildSettings) -> None:
        self.settings = settings
        self.sets: dict[str, TemplateSet] = {}

    def load(self, sources: TemplateSources) -> str:
        compiled = compile_checked(sources, self.settings)
        self.sets[compiled.digest] = compiled
        for stale in list(self.sets)[:-KEPT_SETS]:
            del self.sets[stale]
        return compiled.digest

    def desire(self, inputs: DesiredInputs, templates: str, deadline: float | None = None) -> Desired:
        return desire(inputs, self.sets[templates])

    def close(self) -> None:
        self.sets.clear()
