"""Which answers the web layer may give again to a byte-identical request: those that read
no clock and need no fact. Checked here over every recorded request; the rollout driver
(tests/rollouts.py) checks every sync of every rollout it drives."""

from __future__ import annotations

import copy
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from hooks.core.conditions import format_time
from hooks.rendering.templateset import TemplateSet
from hooks.settings import ChildSettings

from tests.golden import load
from tests.golden_answer import hook, newest_timestamp
from tests.syncing import NOW, ClockRead, check_replay, run_sync, unread

CASES = [case for group in ("examples", "corpus") for case in load(group) if case["code"] == 200]


def golden() -> tuple[TemplateSet, ChildSettings]:
    """The template set and settings the recorded answers were made with."""
    recorded = hook()
    assert recorded.templates is not None
    return recorded.renderer.sets[recorded.templates], recorded.settings.children  # type: ignore[attr-defined]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_a_replayable_answer_reads_no_clock_and_gathers_nothing(case: dict[str, Any]) -> None:
    templates, settings = golden()
    now = newest_timestamp(case["request"])
    result = run_sync(case["request"], templates, settings, now)
    check_replay(case["request"], result, templates, settings, now)


def test_settled_resources_are_replayed_and_changing_ones_are_not() -> None:
    """Not vacuous: a resource whose conditions hold is replayable; a new one (its conditions
    are stamped now) never is, and neither is a stalled one (how long it has stalled counts)."""
    templates, settings = golden()
    replayable: Counter[str] = Counter()
    seen: Counter[str] = Counter()
    for case in CASES:
        step = case["name"].rsplit("/", 1)[-1]
        result = run_sync(case["request"], templates, settings, newest_timestamp(case["request"]))
        seen[step] += 1
        replayable[step] += result.replayable
    assert replayable["new"] == 0 and seen["new"] > 50
    assert replayable["settled"] > seen["settled"] // 2, (replayable, seen)
    print(dict(replayable), dict(seen))


def test_the_unread_clock_fails_every_use() -> None:
    """The oracle itself: each way the core uses `now` fails the sync that does it."""
    now = unread(NOW)
    for use in (lambda: now < NOW, lambda: NOW < now, lambda: NOW - now, lambda: now - NOW,
                lambda: now + timedelta(1), lambda: timedelta(1) + now, lambda: format_time(now),
                lambda: max(NOW, now), lambda: now == NOW, lambda: NOW >= now, lambda: str(now)):
        with pytest.raises(ClockRead):
            use()


def test_a_deployment_short_of_replicas_is_never_replayed() -> None:
    """Whether its pods are taking too long to start depends on the time, even once its
    conditions hold: such an answer reads the clock, so it is synced every time."""
    templates, settings = golden()
    case = next(c for c in CASES if c["name"].endswith("/settled"))
    request = copy.deepcopy(case["request"])
    now = newest_timestamp(request)
    deployment = next(c for group in request["children"].values() for c in group.values() if c["kind"] == "Deployment")
    deployment["status"] |= {"availableReplicas": 0, "readyReplicas": 0, "conditions": [
        {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable",
         "lastTransitionTime": format_time(now - timedelta(hours=3))}]}
    request["parent"]["status"] = run_sync(request, templates, settings, now).status.as_json()
    result = run_sync(request, templates, settings, now)  # every condition as it was
    assert result.status.phase == "Degraded" and not result.replayable
    with pytest.raises(ClockRead):
        run_sync(request, templates, settings, unread(now))


def test_a_rollout_finishing_now_is_not_replayed_and_one_finished_before_is() -> None:
    """A status one write behind (Promoting) whose stable already serves the revision and
    whose canary is gone: this sync finishes the rollout, stamping the time, with every
    condition as it was. The next sync, given that status, is at rest."""
    templates, settings = golden()
    case = next(c for c in CASES if c["name"] == "progressive-rollout/settled")
    request = copy.deepcopy(case["request"])
    now = newest_timestamp(request)
    request["parent"]["status"]["rollout"].update(phase="Promoting", step=2, weight=50,
                                                  stepStartedAt="2026-08-21T15:00:00Z")
    finishing = run_sync(request, templates, settings, now)
    assert finishing.status.rollout is not None and finishing.status.rollout.phase == "Succeeded"
    assert finishing.status.rollout.step_started_at == format_time(now) and not finishing.replayable
    request["parent"]["status"] = finishing.status.as_json()
    finished = run_sync(request, templates, settings, now + timedelta(hours=1))
    assert finished.status.rollout is not None and finished.status.rollout.phase == "Succeeded"
    assert finished.replayable
    check_replay(request, finished, templates, settings, now)


def test_a_condition_whose_time_cannot_be_read_is_stamped_now_and_not_replayed() -> None:
    templates, settings = golden()
    case = next(c for c in CASES if c["name"] == "minimal/settled")
    request = copy.deepcopy(case["request"])
    now = newest_timestamp(request)
    request["parent"]["status"]["conditions"][0]["lastTransitionTime"] = "2026-08-21 14:03:12"  # no zone
    result = run_sync(request, templates, settings, now)
    assert [c.status for c in result.status.conditions] == [c["status"] for c in
                                                             request["parent"]["status"]["conditions"]]
    assert result.status.conditions[0].last_transition_time == format_time(now) and not result.replayable
