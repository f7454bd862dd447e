"""Live reload of an override template folder (a ConfigMap mounted in the pod).

Kubernetes updates a mounted ConfigMap in place while the hook runs. The reloader polls the
folder's content; on a change it has the renderer load and try the new set in full (within
the render budget) and swaps it in with one assignment, or logs why not and keeps serving
the last good set.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from hooks.edge.templates import read_sources
from hooks.errors import TemplateError
from hooks.rendering.templateset import TemplateSources
from hooks.settings import TemplateSettings
from hooks.workers.renderer import Renderer

log = logging.getLogger("llmdeploy")


class TemplateReloader:
    """Watches the override folder and hands the digest of each good new set to `install`."""

    def __init__(self, settings: TemplateSettings, renderer: Renderer, install: Callable[[str], None],
                 on_result: Callable[[bool], None] = lambda ok: None) -> None:
        assert settings.folder is not None
        self.folder = settings.folder
        self.settings = settings
        self.renderer = renderer
        self.install = install
        self.on_result = on_result
        self.seen = self._read()[1]

    def _read(self) -> tuple[TemplateSources | None, str]:
        try:
            sources = read_sources(self.folder)
        except TemplateError as e:
            return None, f"unreadable: {e}"
        return sources, sources.digest()

    def poll(self) -> bool | None:
        """Reload if the folder changed: True when a new set was installed, False when the
        new set is broken (the old one stays), None when nothing changed."""
        sources, current = self._read()
        if current == self.seen:
            return None
        self.seen = current
        try:
            if sources is None:
                raise TemplateError(current)
            digest = self.renderer.load(sources)
        except TemplateError as e:
            log.error("templates in %s changed but are broken, still serving the previous set: %s", self.folder, e)
            self.on_result(False)
            return False
        self.install(digest)
        log.info("templates in %s reloaded", self.folder)
        self.on_result(True)
        return True

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.settings.poll_seconds)
            await asyncio.to_thread(self.poll)
