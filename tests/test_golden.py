"""Every recorded request still gets exactly its recorded answer (see tests/golden.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hooks.web.cache import AnswerMemory
from hooks.web.hook import Hook

from tests.golden import load
from tests.golden_answer import answer, new_hook

CASES = [case for group in ("examples", "corpus") for case in load(group)]


def test_the_corpus_covers_every_outcome() -> None:
    phases = {json.loads(c["body"]).get("status", {}).get("phase") for c in CASES if c["code"] == 200}
    assert phases == {"Pending", "Progressing", "Ready", "Degraded", "Invalid", "Paused"}
    assert {c["code"] for c in CASES} == {200, 409}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_answer_is_unchanged(case: dict[str, Any]) -> None:
    code, body = answer(case["request"])
    assert code == case["code"]
    if code == 200:
        assert body.decode() == case["body"]
    else:
        assert json.loads(body)["error"] == json.loads(case["body"])["error"]


@pytest.fixture(scope="module")
def forgetful() -> Hook:
    """A hook that keeps desired states but no answers: a request sent again is synced again,
    its children from the cache (kept as canonical JSON, and written into the answer as such)."""
    hook = new_hook()
    hook.answers = AnswerMemory(size=0)
    return hook


@pytest.mark.parametrize("case", [c for c in CASES if c["code"] == 200], ids=lambda c: c["name"])
def test_answer_from_the_cache_is_unchanged(forgetful: Hook, case: dict[str, Any]) -> None:
    first = answer(case["request"], forgetful)
    hits = forgetful.cache.hits
    again = answer(case["request"], forgetful)
    assert first == again == (200, case["body"].encode())
    if not case["request"].get("finalizing"):
        assert forgetful.cache.hits > hits
