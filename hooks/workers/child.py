"""The life of one render worker process: cap its own memory, then answer load and desire
requests from the hook, one at a time, until the hook closes the pipe.

Requests and answers are tuples over a multiprocessing pipe (pickled; both ends are ours):
    ("load", TemplateSources)               -> ("ok", digest)
    ("desire", DesiredInputs, digest)       -> ("ok", Desired)
and any failure -> ("template", message) for a template's fault, ("memory", message) after
which the worker exits, or ("error", message) for a bug.
"""

from __future__ import annotations

import resource
import sys
from collections import OrderedDict
from multiprocessing.connection import Connection
from typing import Any

from hooks.canonical import dumps
from hooks.core.desired import desire
from hooks.edge.templates import compile_checked
from hooks.errors import TemplateError
from hooks.rendering.templateset import TemplateSet
from hooks.settings import ChildSettings
from hooks.workers.renderer import KEPT_SETS

MAX_ANSWER_BYTES = 8 << 20  # children larger than this cannot be applied anyway (etcd keeps 1.5 MiB an object)


def cap_memory(extra_bytes: int) -> None:
    """Let this process grow by `extra_bytes` of address space beyond what it has now."""
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[0])
    limit = pages * resource.getpagesize() + extra_bytes
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))


def serve(conn: Connection, settings: ChildSettings, memory_bytes: int) -> None:
    """The worker's main loop (the target of its process)."""
    sys.setrecursionlimit(2000)  # a template's recursion ends in a RecursionError, not a crash
    cap_memory(memory_bytes)
    sets: OrderedDict[str, TemplateSet] = OrderedDict()
    conn.send(("ready",))
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        try:
            conn.send(("ok", _handle(request, sets, settings)))
        except MemoryError:
            conn.send(("memory", f"rendering needed more than its {memory_bytes >> 20} MiB of memory"))
            return
        except TemplateError as e:
            conn.send(("template", str(e)))
        except RecursionError:
            conn.send(("template", "templates recursed too deeply"))
        except Exception as e:  # noqa: BLE001 - reported to the hook, which answers 500
            conn.send(("error", f"{type(e).__name__}: {e}"))


def _handle(request: tuple[Any, ...], sets: OrderedDict[str, TemplateSet], settings: ChildSettings) -> Any:
    if request[0] == "load":
        compiled = compile_checked(request[1], settings)
        sets[compiled.digest] = compiled
        sets.move_to_end(compiled.digest)
        while len(sets) > KEPT_SETS:
            sets.popitem(last=False)
        return compiled.digest
    _, inputs, digest = request
    desired = desire(inputs, sets[digest])
    if len(dumps(desired.children)) > MAX_ANSWER_BYTES:
        raise TemplateError(f"the children rendered for {inputs.namespace}/{inputs.name} are larger than "
                            f"{MAX_ANSWER_BYTES >> 20} MiB")
    return desired
