"""The edge gathers the facts of a sync; the served answer uses them."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone

from hooks.contract.request import parse_request
from hooks.edge.gather import FactGatherer, utc_now
from hooks.settings import Settings

from tests import metacontroller as mc
from tests.web.test_app import call, local_app

MOMENT = datetime(2031, 5, 4, 3, 2, 1, tzinfo=timezone.utc)


def test_the_clock_is_read_at_the_edge() -> None:
    request = parse_request(mc.request(mc.parent({"model": {"uri": "hf://o/m"}})))
    assert asyncio.run(FactGatherer(lambda: MOMENT).gather(request)).now == MOMENT
    before = utc_now()
    assert before.tzinfo is not None
    assert asyncio.run(FactGatherer().gather(request)).now >= before


def test_the_served_status_carries_the_edges_clock() -> None:
    app = local_app(Settings(), facts=FactGatherer(lambda: MOMENT))
    body = call(app, "POST", "/sync", mc.request(mc.parent({"model": {"uri": "hf://o/m"}}))).json()
    assert {c["lastTransitionTime"] for c in body["status"]["conditions"]} == {"2031-05-04T03:02:01Z"}
