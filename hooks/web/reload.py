"""Live reload of an override template folder (a ConfigMap mounted in the pod).

Kubernetes updates a mounted ConfigMap in place while the hook runs. The reloader polls the
folder's content; on a change it loads and checks the new set in full and swaps it in with
one assignment, or logs why not and keeps serving the last good set.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable
from pathlib import Path

from hooks.edge.templates import load_templates
from hooks.errors import TemplateError
from hooks.rendering.templateset import TEMPLATE_SUFFIX, TemplateSet
from hooks.settings import ChildSettings, TemplateSettings

log = logging.getLogger("llmdeploy")


def fingerprint(folder: Path) -> str:
    """A digest of every template file's name and content (symlinks followed, as a
    ConfigMap mount's are)."""
    digest = hashlib.sha256()
    for path in sorted(folder.glob(f"*{TEMPLATE_SUFFIX}")):
        try:
            content = path.read_bytes()
        except OSError:
            continue  # a file replaced while we read: the next poll sees the new one
        digest.update(path.name.encode() + b"\0" + content + b"\0")
    return digest.hexdigest()


class TemplateReloader:
    """Watches the override folder and hands each good new set to `install`."""

    def __init__(self, settings: TemplateSettings, children: ChildSettings, install: Callable[[TemplateSet], None],
                 on_result: Callable[[bool], None] = lambda ok: None) -> None:
        assert settings.folder is not None
        self.folder = settings.folder
        self.settings = settings
        self.children = children
        self.install = install
        self.on_result = on_result
        self.seen = fingerprint(self.folder) if self.folder.is_dir() else ""

    def poll(self) -> bool | None:
        """Reload if the folder changed: True when a new set was installed, False when the
        new set is broken (the old one stays), None when nothing changed."""
        current = fingerprint(self.folder) if self.folder.is_dir() else ""
        if current == self.seen:
            return None
        self.seen = current
        try:
            templates = load_templates(self.folder, self.children)
        except TemplateError as e:
            log.error("templates in %s changed but are broken, still serving the previous set: %s", self.folder, e)
            self.on_result(False)
            return False
        self.install(templates)
        log.info("templates in %s reloaded", self.folder)
        self.on_result(True)
        return True

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.settings.poll_seconds)
            await asyncio.to_thread(self.poll)
