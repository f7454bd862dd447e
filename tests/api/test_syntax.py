"""Kubernetes' syntax rules: the CEL rules the CRD carries and the Python the hook runs agree."""

from __future__ import annotations

from hooks.api.syntax import qualified_keys
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kubernetes_rules import qualified_name

RULE = qualified_keys("labels", "label")
KEYS = ["app", "a", "A", "a.b/c", "example.com/team", "x" * 63, "x" * 64, "a" * 253 + "/b", "a" * 254 + "/b",
        "a/b/c", "/a", "a/", "-a", "a-", "a_b", "a b", "é", "UP.per/x", "a..b/c", "a.b-/c", "", "1", "_x"]


def test_cel_and_python_agree_on_known_keys() -> None:
    for key in KEYS:
        cel, native = RULE.cel_verdict({"labels": {key: "v"}}), RULE.evaluate({"labels": {key: "v"}})
        assert cel == native == qualified_name(key), key


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from("ab.-_/Z9é "), max_size=12))
def test_cel_and_python_agree_on_generated_keys(key: str) -> None:
    assert RULE.cel_verdict({"labels": {key: "v"}}) == RULE.evaluate({"labels": {key: "v"}}) == qualified_name(key)


def test_a_missing_map_holds() -> None:
    assert RULE.evaluate({}) is True and RULE.cel_verdict({}) is True
