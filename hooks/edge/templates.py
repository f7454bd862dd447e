"""Reading a template set from disk (the shipped templates with an override folder on top)
and trying it end to end before anything serves with it. Called at start-up, on reload and
by the CLI."""

from __future__ import annotations

from pathlib import Path

from hooks.core.children import CHILD_TEMPLATES
from hooks.core.exercise import exercise
from hooks.rendering.templateset import TemplateSet
from hooks.settings import ChildSettings


def load_templates(folder: Path | None, settings: ChildSettings) -> TemplateSet:
    """The shipped templates with `folder` on top, loaded and rendered end to end;
    TemplateError if the set is broken."""
    templates = TemplateSet.load(CHILD_TEMPLATES, folder)
    exercise(templates, settings)
    return templates
