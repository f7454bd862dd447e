"""Every recorded request still gets exactly its recorded answer (see tests/golden.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.golden import load
from tests.golden_answer import answer

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
