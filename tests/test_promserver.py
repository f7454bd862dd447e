"""tests/promserver.py against the real prometheus and promtool: what is written is what PromQL reads."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.promserver import PrometheusServer, Series, counter, histogram, openmetrics_text, times

STEP = 15.0
END = math.floor(time.time() / STEP) * STEP  # the data reaches the present...
START = END - 3 * 3600  # ...over three hours of real time, so over at least one 2h block boundary
AT = END - 600  # a moment inside the data for instant queries
BUCKETS = [0.1, 0.25, 0.5, 1.0, 2.5]
# Each second: 10 observations of 0.05 s, 8 of 0.3 s, 2 of 0.8 s. So per second 10 fall in le=0.1,
# 18 in le=0.5, 20 in le=1; p95 is rank 19 of 20, halfway into (0.5, 1]: 0.75; p50 is rank 10, the
# top of (0, 0.1]: 0.1; the mean is (10 * 0.05 + 8 * 0.3 + 2 * 0.8) / 20 = 0.225.
OBSERVATIONS = [0.05] * 10 + [0.3] * 8 + [0.8] * 2
AWKWARD = 'say "hi"\\n\nnext line'


def written() -> list[Series]:
    return [
        counter("vllm:request_success_total", {"pod": "model-a-0"}, START, END, STEP, 2.0),
        counter("vllm:request_success_total", {"pod": "model-a-1"}, START, END, STEP, 5.0, initial=1000.0),
        *histogram("vllm:time_to_first_token_seconds", {"pod": "model-a-0"}, BUCKETS, START, END, STEP, OBSERVATIONS),
        Series("odd_moments", {"text": AWKWARD}, [(END - 100.123, 1.5), (END - 50.7, 2.5)], kind="gauge"),
    ]


@pytest.fixture(scope="module")
def prom() -> Iterator[PrometheusServer]:
    with PrometheusServer(written()) as server:
        yield server


def by_pod(result: list[tuple[dict[str, str], float]]) -> dict[str, float]:
    return {labels["pod"]: value for labels, value in result}


def test_counter_rates_per_pod(prom: PrometheusServer) -> None:
    response = httpx.get(f"{prom.url}/api/v1/query", params={"query": "rate(vllm:request_success_total[5m])",
                                                             "time": str(AT)})
    assert response.status_code == 200, response.text
    result = response.json()["data"]["result"]
    assert {r["metric"]["pod"]: float(r["value"][1]) for r in result} == {
        "model-a-0": pytest.approx(2.0), "model-a-1": pytest.approx(5.0)}
    assert [float(r["value"][0]) for r in result] == [AT, AT]
    [(labels, total)] = prom.query("sum(rate(vllm:request_success_total[5m]))", at=AT)
    assert labels == {}
    assert total == pytest.approx(7.0)


def test_the_whole_span_is_there(prom: PrometheusServer) -> None:
    counters = "vllm:request_success_total"
    assert by_pod(prom.query(counters, at=START)) == {"model-a-0": 0.0, "model-a-1": 1000.0}
    assert by_pod(prom.query(counters, at=END)) == {"model-a-0": 2.0 * (END - START),
                                                     "model-a-1": 1000.0 + 5.0 * (END - START)}
    assert prom.query(counters, at=START - 1) == []  # nothing before the first sample
    assert by_pod(prom.query(f"count_over_time({counters}[3h])", at=END - 1)) == {
        "model-a-0": len(times(START, END, STEP)) - 1, "model-a-1": len(times(START, END, STEP)) - 1}
    assert prom.query("count(up)") == []  # nothing scraped, not even itself


def test_histogram_quantiles_of_a_colon_named_metric(prom: PrometheusServer) -> None:
    def quantile(q: float) -> float:
        response = httpx.get(f"{prom.url}/api/v1/query", params={
            "query": f"histogram_quantile({q}, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket[5m])))",
            "time": str(AT)})
        [element] = response.json()["data"]["result"]
        return float(element["value"][1])

    assert quantile(0.95) == pytest.approx(0.75)
    assert quantile(0.5) == pytest.approx(0.1)
    mean = ("rate(vllm:time_to_first_token_seconds_sum[5m]) / rate(vllm:time_to_first_token_seconds_count[5m])")
    assert by_pod(prom.query(mean, at=AT)) == {"model-a-0": pytest.approx(0.225)}
    assert by_pod(prom.query("rate(vllm:time_to_first_token_seconds_count[5m])", at=AT)) == {
        "model-a-0": pytest.approx(20.0)}
    buckets = prom.query('rate(vllm:time_to_first_token_seconds_bucket{pod="model-a-0"}[5m])', at=AT)
    assert {labels["le"]: value for labels, value in buckets} == {
        "0.1": pytest.approx(10.0), "0.25": pytest.approx(10.0), "0.5": pytest.approx(18.0),
        "1.0": pytest.approx(20.0), "2.5": pytest.approx(20.0), "+Inf": pytest.approx(20.0)}


def test_millisecond_timestamps_and_escaped_labels_survive(prom: PrometheusServer) -> None:
    [(labels, value)] = prom.query("odd_moments", at=END - 60)
    assert labels == {"__name__": "odd_moments", "text": AWKWARD}
    assert value == 1.5
    [(labels, moment)] = prom.query("timestamp(odd_moments)", at=END - 60)
    assert labels == {"text": AWKWARD}
    assert moment == pytest.approx(END - 100.123, abs=1e-6)
    assert prom.query("timestamp(odd_moments)", at=END)[0][1] == pytest.approx(END - 50.7, abs=1e-6)


def test_stopped_server_refuses_and_restarted_one_has_the_same_data() -> None:
    series = [counter("vllm:request_success_total", {"pod": "model-b-0"}, START, END, STEP, 3.0)]
    with PrometheusServer(series) as prom:
        url = prom.url
        assert by_pod(prom.query("rate(vllm:request_success_total[5m])", at=AT)) == {"model-b-0": pytest.approx(3.0)}
        prom.stop()
        assert not prom.running
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{url}/api/v1/query", params={"query": "vector(1)"})
        prom.start()
        assert prom.url == url
        assert by_pod(prom.query("rate(vllm:request_success_total[5m])", at=AT)) == {"model-b-0": pytest.approx(3.0)}
        assert "See you next time" in prom.log()  # the first run ended cleanly
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/-/ready")


def test_an_empty_server_answers() -> None:
    with PrometheusServer() as prom:
        assert prom.query("vector(1)") == [({}, 1.0)]
        assert prom.query("scalar(vector(2))") == [({}, 2.0)]
        assert prom.query('{__name__=~".+"}') == []


def test_openmetrics_text() -> None:
    text = openmetrics_text([
        Series("vllm:x_total", {"pod": "a"}, [(1.0, 1.0), (2.5, 2.0)], kind="counter"),
        *histogram("vllm:h", {}, [1.0], 10.0, 11.0, 1.0, [0.5, 2.0]),
        Series("vllm:x_total", {"pod": 'b"\\'}, [(1.001, math.inf)], kind="counter"),
    ])
    assert text == "\n".join([
        "# TYPE vllm:x counter",
        'vllm:x_total{pod="a"} 1.0 1.000',
        'vllm:x_total{pod="a"} 2.0 2.500',
        'vllm:x_total{pod="b\\"\\\\"} +Inf 1.0015',  # promtool takes int(1.001 * 1000), which is 1000
        "# TYPE vllm:h histogram",
        'vllm:h_bucket{le="1.0"} 0.0 10.000',
        'vllm:h_bucket{le="1.0"} 1.0 11.000',
        'vllm:h_bucket{le="+Inf"} 0.0 10.000',
        'vllm:h_bucket{le="+Inf"} 2.0 11.000',
        "vllm:h_count 0.0 10.000",
        "vllm:h_count 2.0 11.000",
        "vllm:h_sum 0.0 10.000",
        "vllm:h_sum 2.5 11.000",
        "# EOF",
        ""])
    assert openmetrics_text([]) == "# EOF\n"


def test_series_that_promtool_would_mangle_are_refused() -> None:
    with pytest.raises(ValueError, match="increasing time order"):
        Series("x", {}, [(2.0, 1.0), (1.0, 1.0)])
    with pytest.raises(ValueError, match="increasing time order"):
        Series("x", {}, [(1.0, 1.0), (1.0, 2.0)])
    with pytest.raises(ValueError, match="metric name"):
        Series("1x")
    with pytest.raises(ValueError, match="label name"):
        Series("x", {"a:b": "c"})
    with pytest.raises(ValueError, match="given twice"):
        openmetrics_text([Series("x", {"a": "1"}), Series("x", {"a": "1"})])
    with pytest.raises(ValueError, match="both"):
        openmetrics_text([Series("x_total", kind="counter"), Series("x", kind="gauge")])


def test_a_server_that_cannot_start_says_why() -> None:
    server = PrometheusServer(args=["--no-such-flag"])
    with pytest.raises(RuntimeError, match="no-such-flag"):
        with server:
            pass
    assert not server.directory.exists()
