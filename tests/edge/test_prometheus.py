"""The edge's Prometheus client against real parts: a real Prometheus holding backfilled series,
a closed port, and a TCP server on 127.0.0.1 that accepts and never answers (or answers junk).

Nothing here is mocked: the queries go over real sockets, and the values expected are the
ones Prometheus itself computes for the same query at the same time."""

from __future__ import annotations

import asyncio
import math
import socket
import threading
import time
from collections.abc import Awaitable, Iterator
from datetime import datetime, timezone
from types import TracebackType
from typing import Any, TypeVar

import httpx
import pytest
from hooks.core.facts import Measurement, QueryResult
from hooks.core.rollout import MeasurementPlan
from hooks.edge import prometheus as prometheus_module
from hooks.edge.prometheus import MAX_SERIES, Prometheus, parse_answer
from hooks.settings import AnalysisSettings

from tests.promserver import PrometheusServer, Series, counter, histogram

T = TypeVar("T")

STEP = 15.0
END = math.floor(time.time() / STEP) * STEP  # the data reaches the present...
START = END - 1800  # ...from half an hour ago
AT = END - 600  # a moment inside the data
EARLIER = AT - 300  # another one, where the counters are lower
CANARY_PODS = ("llama3-canary-5d8f7c9b4-abcde", "llama3-canary-5d8f7c9b4-fghij")
STABLE_POD = "llama3-stable-7c9f2d1e4-klmno"
CANARY = 'namespace="ml",pod=~"llama3-canary-[a-z0-9]+-[a-z0-9]+"'
STABLE = 'namespace="ml",pod=~"llama3-stable-[a-z0-9]+-[a-z0-9]+"'
BUCKETS = [0.1, 0.25, 0.5, 1.0, 2.5]
# Per second: 10 observations of 0.05 s, 8 of 0.3 s, 2 of 0.8 s, so p95 is 0.75 (see test_promserver).
OBSERVATIONS = [0.05] * 10 + [0.3] * 8 + [0.8] * 2

SUCCESS_RATE = f"sum(rate(vllm:request_success_total{{{CANARY}}}[5m]))"
PER_POD_RATE = f"rate(vllm:request_success_total{{{CANARY}}}[5m])"
TTFT_P95 = f"histogram_quantile(0.95, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{{{CANARY}}}[5m])))"
# The stable pod's histogram exists but observed nothing: every bucket's rate is 0, the quantile NaN.
IDLE_TTFT_P95 = TTFT_P95.replace(CANARY, STABLE)
NO_DATA = 'sum(rate(vllm:request_success_total{namespace="ml",pod=~"llama3-gone-.+"}[5m]))'
FIRST_POD_COUNTER = f'vllm:request_success_total{{namespace="ml",pod="{CANARY_PODS[0]}"}}'


def written() -> list[Series]:
    series = [
        counter("vllm:request_success_total", {"namespace": "ml", "pod": CANARY_PODS[0]}, START, END, STEP, 2.0),
        counter("vllm:request_success_total", {"namespace": "ml", "pod": CANARY_PODS[1]}, START, END, STEP, 3.0,
                initial=500.0),
        counter("vllm:request_success_total", {"namespace": "ml", "pod": STABLE_POD}, START, END, STEP, 7.0),
    ]
    series += histogram("vllm:time_to_first_token_seconds", {"namespace": "ml", "pod": CANARY_PODS[0]}, BUCKETS,
                        START, END, STEP, OBSERVATIONS)
    series += histogram("vllm:time_to_first_token_seconds", {"namespace": "ml", "pod": STABLE_POD}, BUCKETS,
                        START, END, STEP, [])
    return series


@pytest.fixture(scope="module")
def server() -> Iterator[PrometheusServer]:
    with PrometheusServer(written()) as prom:
        yield prom


def moment(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, timezone.utc)


def plan_of(canary: dict[str, str], stable: dict[str, str] | None = None, at: float = AT, key: str = "2/1/x",
            provider: str = "default") -> MeasurementPlan:
    return MeasurementPlan(key, provider, moment(at), canary, stable or {})


def settings(url: str, timeout: float = 3.0) -> AnalysisSettings:
    return AnalysisSettings({"default": url}, timeout_seconds=timeout)


def run(prom: Prometheus, work: Awaitable[T]) -> T:
    """`work` in an event loop of its own, closing the client (bound to that loop) before it ends."""
    async def once() -> T:
        try:
            return await work
        finally:
            await prom.aclose()
    return asyncio.run(once())


def measure(prom: Prometheus, plan: MeasurementPlan, resource: str = "ml/llama3",
            deadline: float | None = None) -> Measurement:
    measurement = run(prom, prom.measure(resource, plan, deadline))
    assert measurement is not None
    return measurement


def one(result: QueryResult) -> float:
    assert result.error is None and len(result.values) == 1, result
    return result.values[0]


def values(server: PrometheusServer, query: str, at: float = AT) -> list[float]:
    return [value for _, value in server.query(query, at=at)]


# --- A real Prometheus -----------------------------------------------------------------------


def test_the_values_are_what_prometheus_computes(server: PrometheusServer) -> None:
    prom = Prometheus(settings(server.url))
    plan = plan_of({"success-rate": SUCCESS_RATE, "ttft-p95": TTFT_P95}, {"success-rate": SUCCESS_RATE})
    measurement = measure(prom, plan)
    assert measurement.key == plan.key and measurement.taken_at == plan.at
    assert set(measurement.results) == {SUCCESS_RATE, TTFT_P95}  # by PromQL text, each once
    assert prom.queries == 2
    assert one(measurement.results[SUCCESS_RATE]) == pytest.approx(5.0)
    assert list(measurement.results[SUCCESS_RATE].values) == values(server, SUCCESS_RATE)
    assert one(measurement.results[TTFT_P95]) == pytest.approx(0.75)
    assert list(measurement.results[TTFT_P95].values) == values(server, TTFT_P95)


def test_no_data_several_series_and_nan(server: PrometheusServer) -> None:
    prom = Prometheus(settings(server.url))
    plan = plan_of({"nothing": NO_DATA, "per-pod": PER_POD_RATE, "idle-p95": IDLE_TTFT_P95,
                    "absent-p95": TTFT_P95.replace("llama3-canary", "llama3-gone")})
    results = measure(prom, plan).results
    assert results[NO_DATA] == QueryResult(())
    assert values(server, NO_DATA) == []
    per_pod = results[PER_POD_RATE]
    assert per_pod.error is None
    assert sorted(per_pod.values) == sorted(values(server, PER_POD_RATE)) == [pytest.approx(2.0), pytest.approx(3.0)]
    [idle] = results[IDLE_TTFT_P95].values  # buckets without observations: NaN, one series
    assert math.isnan(idle) and results[IDLE_TTFT_P95].error is None
    assert math.isnan(values(server, IDLE_TTFT_P95)[0])
    # No buckets at all is no series at all, not NaN.
    assert results[TTFT_P95.replace("llama3-canary", "llama3-gone")] == QueryResult(())


def test_scalars_give_one_value(server: PrometheusServer) -> None:
    prom = Prometheus(settings(server.url))
    scalar = f"scalar({SUCCESS_RATE})"
    results = measure(prom, plan_of({"scalar": scalar, "one": "1", "negative": "-2.5"})).results
    assert one(results[scalar]) == pytest.approx(5.0)
    assert results["1"] == QueryResult((1.0,))
    assert results["-2.5"] == QueryResult((-2.5,))


def test_what_is_not_a_number_is_an_error_saying_why(server: PrometheusServer) -> None:
    prom = Prometheus(settings(server.url))
    bad, matrix, text = "sum(rate(vllm:request_success_total[5m])", f"{FIRST_POD_COUNTER}[5m]", '"abc"'
    results = measure(prom, plan_of({"bad": bad, "matrix": matrix, "text": text})).results
    said = results[bad].error
    assert results[bad].values == () and said is not None
    assert said.startswith("Prometheus: ")
    assert "parse error" in said and "unclosed left parenthesis" in said
    with pytest.raises(RuntimeError, match="unclosed left parenthesis"):  # what Prometheus said, word for word
        server.query(bad, at=AT)
    assert results[matrix] == QueryResult(error="the query returned a matrix, not one number")
    assert results[text] == QueryResult(error="the query returned a string, not one number")


def test_the_query_time_is_the_plans(server: PrometheusServer) -> None:
    prom = Prometheus(settings(server.url))
    now = measure(prom, plan_of({"total": FIRST_POD_COUNTER}, at=AT, key="at"))
    before = measure(prom, plan_of({"total": FIRST_POD_COUNTER}, at=EARLIER, key="earlier"))
    assert now.results[FIRST_POD_COUNTER].values == tuple(values(server, FIRST_POD_COUNTER, at=AT))
    assert before.results[FIRST_POD_COUNTER].values == tuple(values(server, FIRST_POD_COUNTER, at=EARLIER))
    assert now.results[FIRST_POD_COUNTER].values == (2.0 * (AT - START),)
    assert before.results[FIRST_POD_COUNTER].values == (2.0 * (EARLIER - START),)
    # Before the data began, nothing (not the present's value).
    early = measure(prom, plan_of({"total": FIRST_POD_COUNTER}, at=START - 600, key="before the data"))
    assert early.results[FIRST_POD_COUNTER] == QueryResult(())


@pytest.mark.parametrize("timeout", [1.5, 2.3456, 3.0])
def test_prometheus_accepts_the_timeout_the_hook_sends(server: PrometheusServer, timeout: float) -> None:
    """The `timeout` parameter must be a duration Prometheus parses (a whole number with a unit,
    or plain seconds): '3.000s' is refused with 400 bad_data, which made every query an error."""
    prom = Prometheus(settings(server.url, timeout))
    assert measure(prom, plan_of({"one": "vector(1)"})).results["vector(1)"] == QueryResult((1.0,))
    # and shortened by a deadline, to an odd fraction of a second
    shortened = measure(prom, plan_of({"one": "vector(2)"}, key="shortened"), deadline=time.monotonic() + timeout * 0.77)
    assert shortened.results["vector(2)"] == QueryResult((2.0,))


def test_a_plan_without_queries_is_measured_without_asking() -> None:
    prom = Prometheus(settings(f"http://127.0.0.1:{closed_port()}"))
    measurement = measure(prom, plan_of({}))
    assert measurement.results == {} and prom.queries == 0


def test_a_provider_url_ending_in_a_slash_works(server: PrometheusServer) -> None:
    analysis = AnalysisSettings({"default": server.url + "/"}, timeout_seconds=3.0)
    measurement = measure(Prometheus(analysis), plan_of({"one": "vector(1)"}))
    assert measurement.results["vector(1)"] == QueryResult((1.0,))


# --- Unreachable and unconfigured ------------------------------------------------------------


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port  # closed again, and nothing listens there


def test_a_closed_port_is_unreachable_at_once() -> None:
    prom = Prometheus(settings(f"http://127.0.0.1:{closed_port()}", timeout=10.0))
    plan = plan_of({"a": SUCCESS_RATE, "b": TTFT_P95}, {"a": SUCCESS_RATE})
    started = time.monotonic()
    measurement = measure(prom, plan)
    assert time.monotonic() - started < 3.0  # refused, not waited out
    assert set(measurement.results) == {SUCCESS_RATE, TTFT_P95}
    for result in measurement.results.values():
        assert result == QueryResult(error="Prometheus unreachable: ConnectError")


class TcpServer:
    """A TCP server on 127.0.0.1 in a thread: it accepts every connection and never answers,
    or, given `reply`, reads each request's head and writes `reply` back."""

    def __init__(self, reply: bytes | None = None) -> None:
        self.reply = reply
        self.accepted = 0
        self._connections: list[socket.socket] = []
        self._stopping = threading.Event()
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self._listener.settimeout(0.02)
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while not self._stopping.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            self.accepted += 1
            self._connections.append(connection)
            if self.reply is not None:
                connection.settimeout(2)
                head = b""
                while b"\r\n\r\n" not in head:
                    chunk = connection.recv(4096)
                    if not chunk:
                        break
                    head += chunk
                connection.sendall(self.reply)

    def __enter__(self) -> TcpServer:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._stopping.set()
        self._thread.join(5)
        for connection in self._connections:
            connection.close()
        self._listener.close()


def test_an_unconfigured_provider_sends_nothing() -> None:
    with TcpServer() as silent:
        prom = Prometheus(settings(silent.url, timeout=10.0))
        plan = plan_of({"a": SUCCESS_RATE}, {"a": SUCCESS_RATE, "b": TTFT_P95}, provider="eu-west")
        started = time.monotonic()
        measurement = measure(prom, plan)
        assert time.monotonic() - started < 3.0
        assert measurement.results == {q: QueryResult(error="provider 'eu-west' is not configured")
                                       for q in (SUCCESS_RATE, TTFT_P95)}
        assert prom.queries == 0
        time.sleep(0.05)  # a connection would have been accepted by now
        assert silent.accepted == 0


def test_an_answer_without_json_is_an_error() -> None:
    page = b"<html><body>502 Bad Gateway</body></html>"
    reply = (b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\nContent-Length: "
             + str(len(page)).encode() + b"\r\nConnection: close\r\n\r\n" + page)
    with TcpServer(reply) as proxy:
        prom = Prometheus(settings(proxy.url, timeout=2.0))
        measurement = measure(prom, plan_of({"a": SUCCESS_RATE}))
    assert measurement.results[SUCCESS_RATE] == QueryResult(error="Prometheus answered HTTP 502 without JSON")


# --- Timeouts ------------------------------------------------------------------------------------


def timed_out(result: QueryResult, seconds: str) -> bool:
    """Whether `result` says the query was not answered in time: the measurement's own bound
    (normally first) or the HTTP client's read timeout (which starts a little later)."""
    return not result.values and result.error in (f"no answer within {seconds}s",
                                                  "Prometheus unreachable: ReadTimeout")


def test_a_silent_server_costs_the_timeout_and_no_more() -> None:
    with TcpServer() as silent:
        prom = Prometheus(settings(silent.url, timeout=0.5))
        plan = plan_of({"a": SUCCESS_RATE, "b": TTFT_P95}, {"a": SUCCESS_RATE, "c": "vector(1)"})
        started = time.monotonic()
        measurement = measure(prom, plan)
        elapsed = time.monotonic() - started
        assert silent.accepted >= 1  # the queries did reach it
    assert 0.4 < elapsed < 3.0
    assert set(measurement.results) == {SUCCESS_RATE, TTFT_P95, "vector(1)"}
    assert all(timed_out(r, "0.5") for r in measurement.results.values()), measurement.results
    assert prom.queries == 3


def test_a_deadline_shortens_the_wait() -> None:
    with TcpServer() as silent:
        prom = Prometheus(settings(silent.url, timeout=10.0))
        started = time.monotonic()
        measurement = measure(prom, plan_of({"a": SUCCESS_RATE, "b": "vector(1)"}), deadline=started + 0.3)
        elapsed = time.monotonic() - started
        assert elapsed < 3.0
        assert all(timed_out(r, "0.3") for r in measurement.results.values()), measurement.results

        # A deadline already past: no wait at all, and every query unanswered.
        started = time.monotonic()
        late = measure(prom, plan_of({"a": SUCCESS_RATE}, key="late"), deadline=started - 1.0)
        assert time.monotonic() - started < 3.0  # of a 10 s timeout
        assert late.results == {SUCCESS_RATE: QueryResult(error="no answer within 0.0s")}

        # A deadline later than the configured timeout: the timeout still bounds the wait.
        prom = Prometheus(settings(silent.url, timeout=0.3))
        started = time.monotonic()
        bounded = measure(prom, plan_of({"a": SUCCESS_RATE}), deadline=started + 60.0)
        assert time.monotonic() - started < 3.0
        assert timed_out(bounded.results[SUCCESS_RATE], "0.3"), bounded.results


# --- One measurement in flight per resource, and the finished ones remembered ----------------


def test_one_measurement_in_flight_per_resource_and_the_finished_one_remembered() -> None:
    plan = plan_of({"a": SUCCESS_RATE, "b": TTFT_P95})

    async def scenario(prom: Prometheus) -> dict[str, Any]:
        started = time.monotonic()

        async def timed(resource: str, one: MeasurementPlan) -> tuple[Measurement | None, float]:
            measurement = await prom.measure(resource, one)
            return measurement, time.monotonic() - started

        first, again, other_key, other = await asyncio.gather(
            timed("ml/a", plan), timed("ml/a", plan), timed("ml/a", plan_of({"x": "vector(1)"}, key="other")),
            timed("ml/b", plan))
        sent = prom.queries
        remembered = await prom.measure("ml/a", plan)
        return {"first": first, "again": again, "other_key": other_key, "other": other, "sent": sent,
                "remembered": remembered, "after": prom.queries}

    with TcpServer() as silent:
        prom = Prometheus(settings(silent.url, timeout=0.5))
        seen = run(prom, scenario(prom))

    first, first_took = seen["first"]
    assert isinstance(first, Measurement) and first_took > 0.4
    assert all(timed_out(r, "0.5") for r in first.results.values())
    # While "ml/a" was being measured, asking again (even for another measurement) got nothing, at once.
    assert seen["again"][0] is None and seen["again"][1] < 0.2
    assert seen["other_key"][0] is None and seen["other_key"][1] < 0.2
    # "ml/b" was measured alongside.
    other, _ = seen["other"]
    assert isinstance(other, Measurement) and other is not first and set(other.results) == {SUCCESS_RATE, TTFT_P95}
    assert seen["sent"] == 4  # two queries for each resource, none for the refused calls
    # Finished: the same plan key gives the very same answers, without asking again.
    assert seen["remembered"] is first
    assert seen["after"] == seen["sent"]
    assert run(prom, prom.measure("ml/a", plan)) is first  # in a later sync (another event loop) too
    assert prom.queries == 4


def test_remembered_measurements_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prometheus_module, "REMEMBERED", 2)
    prom = Prometheus(AnalysisSettings())  # no providers: every measurement is answered without HTTP
    plans = [plan_of({"a": "vector(1)"}, key=f"k{i}") for i in range(3)]
    taken = [measure(prom, p) for p in plans]
    assert measure(prom, plans[2]) is taken[2] and measure(prom, plans[1]) is taken[1]
    assert measure(prom, plans[0]) is not taken[0]  # the oldest was forgotten, so measured anew
    assert measure(prom, plans[0], resource="ml/other") is not taken[0]  # remembered per resource


# --- parse_answer --------------------------------------------------------------------------------


def vector(*samples: Any) -> dict[str, Any]:
    return {"status": "success", "data": {"resultType": "vector", "result": list(samples)}}


def sample(value: Any, pod: str = "p") -> dict[str, Any]:
    return {"metric": {"pod": pod}, "value": [1700000000.123, value]}


def test_parse_a_vector() -> None:
    result = parse_answer(vector(sample("0.5", "a"), sample("NaN", "b"), sample("+Inf", "c"), sample("-Inf", "d")),
                          200)
    assert result.error is None
    assert result.values[0] == 0.5
    assert math.isnan(result.values[1])
    assert result.values[2:] == (math.inf, -math.inf)
    assert parse_answer(vector(), 200) == QueryResult(())
    assert parse_answer(vector(sample("7")), 200) == QueryResult((7.0,))


def test_parse_a_scalar() -> None:
    assert parse_answer({"status": "success", "data": {"resultType": "scalar", "result": [1700000000, "2.5"]}},
                        200) == QueryResult((2.5,))
    [nan] = parse_answer({"status": "success", "data": {"resultType": "scalar", "result": [1.0, "NaN"]}}, 200).values
    assert math.isnan(nan)


def test_parse_an_error() -> None:
    said = 'invalid parameter "query": 1:5: parse error: unclosed left parenthesis'
    assert parse_answer({"status": "error", "errorType": "bad_data", "error": said}, 400) == QueryResult(
        error=f"Prometheus: {said}")
    long = parse_answer({"status": "error", "errorType": "execution", "error": "x" * 5000}, 422)
    assert long.error == "Prometheus: " + "x" * 200
    assert parse_answer({"status": "error"}, 503) == QueryResult(error="Prometheus: HTTP 503")
    assert parse_answer({"status": "error", "error": ""}, 503) == QueryResult(error="Prometheus: HTTP 503")


def test_parse_what_is_not_prometheus_json() -> None:
    bodies: list[Any] = ["<html>Bad Gateway</html>", None, [], ["success"], 3, {}]
    for body in bodies:
        assert parse_answer(body, 502) == QueryResult(error="Prometheus: HTTP 502"), body
    assert parse_answer({"status": "success"}, 200).error is not None
    assert parse_answer({"status": "success", "data": "vector"}, 200).error is not None


def test_parse_too_many_series() -> None:
    many = parse_answer(vector(*(sample("1", f"p{i}") for i in range(MAX_SERIES + 1))), 200)
    assert many.error is None
    assert len(many.values) == MAX_SERIES + 1  # "more than MAX_SERIES series", without reading them all
    assert all(math.isnan(v) for v in many.values)
    most = parse_answer(vector(*(sample(str(i), f"p{i}") for i in range(MAX_SERIES))), 200)
    assert most.values == tuple(float(i) for i in range(MAX_SERIES))
    huge = parse_answer(vector(*(sample("1", f"p{i}") for i in range(100 * MAX_SERIES))), 200)
    assert len(huge.values) == MAX_SERIES + 1


UNDOCUMENTED = QueryResult(error="Prometheus answered a result it does not document")


@pytest.mark.parametrize("broken", [
    sample(0.5),  # a number, not Prometheus' string
    sample(None),
    sample("half"),
    {"metric": {}},  # no value
    {"metric": {}, "value": []},
    {"metric": {}, "value": "0.5"},
    {"metric": {}, "value": {"1": "0.5"}},
    ["0.5"],
    "0.5",
    None,
    {"metric": {}, "histogram": [1700000000, {"count": "1", "sum": "1"}]},  # a native histogram
])
def test_parse_a_malformed_sample(broken: Any) -> None:
    assert parse_answer(vector(sample("1"), broken), 200) == UNDOCUMENTED


def test_parse_a_malformed_scalar_or_result() -> None:
    broken: list[Any] = [[1.0, 0.5], [1.0, "x"], [1.0, None]]
    for result in broken:
        assert parse_answer({"status": "success", "data": {"resultType": "scalar", "result": result}},
                            200) == UNDOCUMENTED
    odd_shapes: list[Any] = [[1.0], [], "2", None, [1.0, "2", "3"]]
    for result in odd_shapes:
        odd = parse_answer({"status": "success", "data": {"resultType": "scalar", "result": result}}, 200)
        assert odd.values == () and odd.error is not None
    odd = parse_answer({"status": "success", "data": {"resultType": "vector", "result": {"0": sample("1")}}}, 200)
    assert odd.values == () and odd.error is not None


def test_a_transport_error_of_any_kind_is_unreachable() -> None:
    """httpx errors other than connecting (here a protocol error) are errors too, not exceptions."""
    with TcpServer(b"this is not HTTP\r\n\r\n") as junk:
        prom = Prometheus(settings(junk.url, timeout=2.0))
        measurement = measure(prom, plan_of({"a": "vector(1)"}))
    [result] = measurement.results.values()
    assert result.values == ()
    assert result.error is not None and result.error.startswith("Prometheus unreachable: ")
    assert issubclass(getattr(httpx, result.error.rpartition(" ")[2]), httpx.HTTPError)
