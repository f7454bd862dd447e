"""Golden answers: requests and the exact bytes the hook answered them with, recorded once.

`python -m tests.golden` records them (examples, samples and a fixed corpus of generated
resources in corpus-parents.json, each new, after Metacontroller applied the answer, stalled,
invalid, unadoptable and paused); `tests/test_golden.py` replays
every request and fails on any byte that changed. Re-record only for a change of behaviour
that is meant, and say which in the commit.
"""

from __future__ import annotations

import copy
import gzip
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from tests import metacontroller as mc

GOLDEN = Path(__file__).resolve().parent / "golden"
ROOT = GOLDEN.parent.parent
CORPUS_SIZE = 80

JSON = dict[str, Any]


def scenarios(name: str, parent: JSON, answer: Any) -> Iterator[tuple[str, JSON]]:
    """A resource new, then after each of two applied answers with its pods rolled out, then
    with an invalid spec and paused over those children; `answer(request) -> (code, body)`."""
    cluster = mc.Cluster()
    status: JSON | None = None
    for step in ("new", "applied", "settled"):
        current = copy.deepcopy(parent)
        if status is not None:
            current["status"] = status
        request = mc.request(current, cluster.observed())
        yield f"{name}/{step}", request
        code, body = answer(request)
        if code != 200:
            return
        decoded = json.loads(body)
        cluster.apply(decoded["children"])
        cluster.roll_out()
        status = decoded["status"]
    stalled = cluster.observed()
    for obj in stalled:
        if obj["kind"] == "Deployment":
            obj["status"] |= {"readyReplicas": 0, "availableReplicas": 0, "conditions": [
                {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
                 "lastUpdateTime": "2026-08-21T15:00:00Z", "lastTransitionTime": "2026-08-21T15:00:00Z"}]}
    yield f"{name}/stalled", mc.request({**parent, "status": status}, stalled)
    broken = copy.deepcopy(parent)
    broken["spec"] = {**broken["spec"], "replicas": -1}
    yield f"{name}/invalid", mc.request(broken, cluster.observed())
    unadoptable = cluster.observed()
    for obj in unadoptable:
        if obj["kind"] == "Service":
            del obj["metadata"]["annotations"]
    yield f"{name}/unadoptable", mc.request(broken, unadoptable)
    paused = copy.deepcopy(parent)
    paused["spec"] = {**paused["spec"], "paused": True}
    yield f"{name}/paused", mc.request(paused, cluster.observed(), hook_version="v2")


def example_parents() -> Iterator[tuple[str, JSON]]:
    for path in sorted((ROOT / "examples").glob("*.yaml")):
        resource = yaml.safe_load(path.read_text())
        meta = resource["metadata"]
        yield path.stem, mc.parent(resource["spec"], name=meta["name"], namespace=meta["namespace"])


CORPUS_PARENTS = GOLDEN / "corpus-parents.json"


def corpus_parents() -> list[tuple[str, JSON]]:
    """The fixed corpus of generated resources, so that re-recording changes only answers."""
    parents: dict[str, JSON] = json.loads(CORPUS_PARENTS.read_text())
    return list(parents.items())


def draw_corpus() -> list[tuple[str, JSON]]:
    """A new draw of generated specs (`python -m tests.golden --new-corpus`)."""
    from hypothesis import HealthCheck, given, settings

    from tests.strategies import specs

    drawn: list[JSON] = []

    @settings(max_examples=CORPUS_SIZE, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(specs())
    def collect(spec: JSON) -> None:
        drawn.append(spec)

    collect()
    return [(f"corpus-{i:03d}", mc.parent(spec)) for i, spec in enumerate(drawn[:CORPUS_SIZE])]


def load(group: str) -> list[JSON]:
    with gzip.open(GOLDEN / f"{group}.jsonl.gz", "rt") as f:
        return [json.loads(line) for line in f]


def record(group: str, cases: list[JSON]) -> None:
    with gzip.GzipFile(GOLDEN / f"{group}.jsonl.gz", "wb", mtime=0) as f:
        for case in cases:
            f.write(json.dumps(case, sort_keys=True).encode() + b"\n")


def main() -> int:
    from tests.golden_answer import answer

    if "--new-corpus" in sys.argv:
        CORPUS_PARENTS.write_text(json.dumps(dict(draw_corpus()), indent=1, sort_keys=True))
    samples = ROOT.parent / "shared" / "design" / "samples"
    groups: dict[str, list[JSON]] = {"examples": [], "corpus": []}
    for group, parents in (("examples", list(example_parents())), ("corpus", corpus_parents())):
        for name, parent in parents:
            for case, request in scenarios(name, parent, answer):
                code, body = answer(request)
                groups[group].append({"name": case, "request": request, "code": code, "body": body.decode()})
    for sample in sorted(samples.glob("*.json")):
        request = json.loads(sample.read_text())
        code, body = answer(request)
        groups["examples"].append({"name": f"sample/{sample.stem}", "request": request, "code": code,
                                   "body": body.decode()})
    for group, cases in groups.items():
        record(group, cases)
        print(f"{group}: {len(cases)} cases", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
