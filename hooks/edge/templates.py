"""Reading template sets from disk: the shipped templates and an override folder (a ConfigMap
mounted as a folder), read once into a snapshot that every process compiles the same way.
Called at start-up, on reload and by the CLI."""

from __future__ import annotations

from pathlib import Path

from hooks.core.children import CHILD_TEMPLATES
from hooks.core.exercise import exercise
from hooks.errors import TemplateError
from hooks.rendering.templateset import (
    TemplateSet,
    TemplateSources,
    shipped_templates_dir,
)
from hooks.settings import ChildSettings

MAX_TEMPLATE_FILES = 200
MAX_TEMPLATE_BYTES = 1 << 20  # a ConfigMap holds at most 1 MiB in all


def read_folder(folder: Path) -> dict[str, str]:
    """Every visible file of `folder`, by name (symlinks followed, as a ConfigMap mount's are;
    its `..data` machinery is hidden)."""
    if not folder.is_dir():
        raise TemplateError(f"templates folder {folder} does not exist")
    files: dict[str, str] = {}
    for path in sorted(folder.iterdir()):
        if path.name.startswith(".") or not path.is_file():
            continue
        if len(files) == MAX_TEMPLATE_FILES:
            raise TemplateError(f"templates folder {folder} holds more than {MAX_TEMPLATE_FILES} files")
        try:
            data = path.read_bytes()
        except OSError as e:
            raise TemplateError(f"cannot read {path}: {e}") from e
        if len(data) > MAX_TEMPLATE_BYTES:
            raise TemplateError(f"{path} is larger than {MAX_TEMPLATE_BYTES} bytes")
        try:
            files[path.name] = data.decode()
        except UnicodeDecodeError as e:
            raise TemplateError(f"{path} is not UTF-8 text") from e
    return files


def read_sources(folder: Path | None) -> TemplateSources:
    """The shipped templates with `folder`'s on top."""
    return TemplateSources(read_folder(shipped_templates_dir()), read_folder(folder) if folder else {})


def compile_checked(sources: TemplateSources, settings: ChildSettings) -> TemplateSet:
    """`sources` compiled and rendered end to end; TemplateError if the set is broken."""
    templates = TemplateSet.compile(sources, CHILD_TEMPLATES)
    exercise(templates, settings)
    return templates


def load_templates(folder: Path | None, settings: ChildSettings) -> TemplateSet:
    """The shipped templates with `folder` on top, read, compiled and tried, in this process."""
    return compile_checked(read_sources(folder), settings)
