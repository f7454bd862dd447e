"""Render workers hold every render to its budget: a runaway template (too slow, too big,
too deep, at compile time or at render time) fails its own resource only, its worker is
replaced, and the others go on rendering meanwhile."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hooks.core.desired import DesiredInputs
from hooks.core.traffic import Availability
from hooks.edge.templates import read_sources
from hooks.errors import Busy, TemplateError
from hooks.rendering.templateset import TemplateSources
from hooks.settings import ChildSettings
from hooks.workers.pool import WorkerPool

from tests.rendering.escapes import BOMBS

BUDGET_SECONDS = 1.0
BUDGET_BYTES = 256 << 20
SPEC: dict[str, Any] = {"model": {"uri": "hf://org/model"}}
BOMB = dict(BOMBS)
RENDER_BOMBS = ["range_nested", "macro_exponential", "ns_doubling_tilde", "output_nested", "macro_doubling",
                "macro_infinite_recursion", "join_amplify", "slice_huge", "batch_fill"]
COMPILE_BOMBS = ["center_literal_const", "format_filter_literal_const", "deep_parens", "long_concat"]


def inputs(name: str) -> DesiredInputs:
    return DesiredInputs(name, "ml", "", {}, {}, SPEC, Availability(), ChildSettings())


def only_for(name: str, body: str) -> TemplateSources:
    """The shipped templates plus an extra child whose template runs `body` for resource `name`."""
    extra = ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ view.name }}}\n"
             f'data: {{v: "{{% if view.name == "{name}" %}}{body}{{% endif %}}"}}\n')
    return TemplateSources(read_sources(None).shipped, {"cm.yaml": extra})


@pytest.fixture(scope="module")
def pool() -> Iterator[WorkerPool]:
    with WorkerPool(ChildSettings(), 2, BUDGET_SECONDS, BUDGET_BYTES) as workers:
        yield workers


@pytest.mark.parametrize("bomb", RENDER_BOMBS)
def test_a_runaway_render_fails_its_resource_only(pool: WorkerPool, bomb: str) -> None:
    all_idle(pool)  # the worker the last bomb took is back (starting one takes seconds on a loaded machine)
    templates = pool.load(only_for("bomb", BOMB[bomb]))
    started = time.monotonic()
    with pytest.raises(TemplateError, match="ml/bomb|cm.yaml"):
        pool.desire(inputs("bomb"), templates)
    assert time.monotonic() - started < 10, "Metacontroller gives a sync 10 s"
    for name in ("calm-1", "calm-2", "calm-3"):
        assert pool.desire(inputs(name), templates).outcome == "ok"


@pytest.mark.parametrize("bomb", COMPILE_BOMBS)
def test_a_template_that_explodes_while_compiling_is_refused(pool: WorkerPool, bomb: str) -> None:
    bad = TemplateSources(read_sources(None).shipped, {"cm.yaml": "apiVersion: v1\nkind: ConfigMap\n"
                                                                  "metadata: {name: x}\ndata: {v: " + BOMB[bomb] + "}\n"})
    with pytest.raises(TemplateError):
        pool.load(bad)
    assert pool.desire(inputs("calm"), pool.load(read_sources(None))).outcome == "ok"


def all_idle(pool: WorkerPool) -> None:
    """Wait for replacements of earlier tests' runaways to have started."""
    deadline = time.monotonic() + 60
    while pool.idle < pool.size and time.monotonic() < deadline:
        time.sleep(0.05)


def test_other_resources_render_while_one_runs_away(pool: WorkerPool) -> None:
    all_idle(pool)
    templates = pool.load(only_for("bomb", BOMB["range_nested"]))
    finished: list[str] = []

    def runaway() -> None:
        with pytest.raises(TemplateError):
            pool.desire(inputs("bomb"), templates)
        finished.append("bomb")

    thread = threading.Thread(target=runaway)
    thread.start()
    time.sleep(0.1)  # the runaway has a worker
    for i in range(5):
        assert pool.desire(inputs(f"calm-{i}"), templates).outcome == "ok"
        finished.append(f"calm-{i}")
    thread.join()
    assert finished.index("bomb") == 5, "the calm resources were answered while the runaway ran"


def test_a_caller_that_finds_every_worker_busy_is_told_so(tmp_path: Path) -> None:
    with WorkerPool(ChildSettings(), 1, BUDGET_SECONDS, BUDGET_BYTES) as alone:
        templates = alone.load(only_for("bomb", BOMB["range_nested"]))
        all_idle(alone)
        thread = threading.Thread(target=lambda: pytest.raises(TemplateError, alone.desire, inputs("bomb"),
                                                               templates))
        thread.start()
        time.sleep(0.1)
        with pytest.raises(Busy):
            alone.desire(inputs("calm"), templates)
        thread.join()
        all_idle(alone)
        assert alone.desire(inputs("calm"), templates).outcome == "ok"  # the replacement serves


def test_a_worker_renders_a_set_it_had_not_loaded_yet(pool: WorkerPool) -> None:
    first = pool.load(only_for("x", "one"))
    second = pool.load(only_for("x", "two"))
    for _ in range(4):  # whichever worker answers, each set renders as itself
        for templates, value in ((first, "one"), (second, "two")):
            (config_map,) = [c for c in pool.desire(inputs("x"), templates).children if c["kind"] == "ConfigMap"]
            assert config_map["data"]["v"] == value
