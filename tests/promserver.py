"""A real Prometheus server for tests, holding exactly the series a test writes.

The series are written as OpenMetrics text, backfilled into a fresh TSDB with
`promtool tsdb create-blocks-from openmetrics`, and served by `prometheus` on 127.0.0.1 with no
scrape targets, so nothing but the written samples is ever in it:

    with PrometheusServer([*counter("vllm:request_success_total", {"pod": "a"}, start, end, 15, 2.0)]) as prom:
        prom.query('rate(vllm:request_success_total[5m])', at=end - 600)   # [({"pod": "a"}, 2.0)]

What promtool and prometheus 2.42 (Debian's package) do, found by trying:

* Metric names with colons (`vllm:time_to_first_token_seconds_bucket`) are accepted as they are, in
  `# TYPE` lines too; no quoting or family trick is needed.
* Timestamps are seconds, as a decimal number; promtool multiplies by 1000 and *truncates* to whole
  milliseconds (so `openmetrics_text` writes each timestamp such that it lands on the intended
  millisecond). Milliseconds written by mistake are taken as seconds, silently (the year 58000).
* promtool is lax: it accepts missing or repeated `# TYPE` lines and interleaved families, but not a
  file without the final `# EOF` or a sample without a timestamp. It silently *drops* a sample that is
  not later than the previous one of its series; `Series` therefore refuses unordered samples.
* Blocks are cut at 2h boundaries of Unix time (data over the last hour of real time often gives two
  blocks). Prometheus loads them when it opens the TSDB, before `/-/ready` answers 200, so everything
  is queryable at once, up to the present. Startup takes well under a second.
* Retention counts back from the newest block, not from now; `--storage.tsdb.retention.time=3650d`
  keeps any data set spanning less than ten years, however old.
* Backfilled data has no metadata: `# TYPE` only matters to the parser, PromQL sees plain series.
  A histogram is just its `_bucket{le=...}`, `_count` and `_sum` series (see `histogram`).
* The usual lookback applies: an instant query finds a series' last sample up to 5 minutes back.
"""

from __future__ import annotations

import math
import re
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, NamedTuple

import httpx

from tests.prerequisites import missing

Kind = Literal["counter", "gauge", "histogram", "unknown"]

_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
# The suffixes a family's sample names carry, per type, stripped to get the family name.
_SUFFIXES: dict[str, tuple[str, ...]] = {
    "counter": ("_total", "_created"),
    "histogram": ("_bucket", "_count", "_sum", "_created"),
}


@dataclass
class Series:
    """One time series: the metric name as queried, its labels, and (unix seconds, value) samples in
    strictly increasing time order. `kind` only decides the `# TYPE` line of its family."""

    name: str
    labels: dict[str, str] = field(default_factory=dict)
    samples: list[tuple[float, float]] = field(default_factory=list)
    kind: Kind = "unknown"

    def __post_init__(self) -> None:
        if not _METRIC_NAME.fullmatch(self.name):
            raise ValueError(f"invalid metric name {self.name!r}")
        for label in self.labels:
            if not _LABEL_NAME.fullmatch(label) or label.startswith("__"):
                raise ValueError(f"invalid label name {label!r} on {self.name}")
        for (before, _), (after, _) in zip(self.samples, self.samples[1:]):
            if not after > before:
                raise ValueError(f"{self.name}{self.labels}: samples must be in increasing time order "
                                 f"(promtool silently drops the others), got {before} then {after}")
        for moment, _ in self.samples:
            if not math.isfinite(moment):
                raise ValueError(f"{self.name}{self.labels}: timestamp {moment} is not finite")

    @property
    def family(self) -> str:
        """The OpenMetrics family name: the metric name without its type's sample suffix."""
        for suffix in _SUFFIXES.get(self.kind, ()):
            if self.name.endswith(suffix) and len(self.name) > len(suffix):
                return self.name[: -len(suffix)]
        return self.name


def times(start: float, end: float, step: float) -> list[float]:
    """start, start + step, ... up to and including end (computed without accumulating error)."""
    if step <= 0:
        raise ValueError("step must be positive")
    return [start + i * step for i in range(int(math.floor((end - start) / step + 1e-9)) + 1)]


def counter(name: str, labels: Mapping[str, str], start: float, end: float, step: float,
            rate_per_second: float, initial: float = 0.0) -> Series:
    """A counter growing at `rate_per_second` from `initial` at `start`, sampled every `step`
    seconds up to `end`: `rate(name[5m])` at any time inside is `rate_per_second`."""
    return Series(name, dict(labels), [(t, initial + rate_per_second * (t - start)) for t in times(start, end, step)],
                  kind="counter")


def gauge(name: str, labels: Mapping[str, str], start: float, end: float, step: float, value: float) -> Series:
    """A gauge holding `value`, sampled every `step` seconds from `start` to `end`."""
    return Series(name, dict(labels), [(t, value) for t in times(start, end, step)], kind="gauge")


def histogram(name: str, labels: Mapping[str, str], buckets: Sequence[float], start: float, end: float,
              step: float, observations_per_second: Sequence[float]) -> list[Series]:
    """The series of a classic histogram `name` (`name_bucket{le=...}` for each bound and +Inf,
    `name_count`, `name_sum`) that observes every value of `observations_per_second` once per
    second from `start` to `end`, sampled every `step` seconds. So `rate(name_count[5m])` is
    `len(observations_per_second)` and `histogram_quantile` interpolates over those values."""
    bounds = sorted(float(b) for b in buckets if not math.isinf(b)) + [math.inf]
    moments = times(start, end, step)

    def grows(per_second: float) -> list[tuple[float, float]]:
        return [(t, per_second * (t - start)) for t in moments]

    result = [Series(f"{name}_bucket", {**labels, "le": _number(bound)},
                     grows(sum(1 for o in observations_per_second if o <= bound)), kind="histogram")
              for bound in bounds]
    result.append(Series(f"{name}_count", dict(labels), grows(len(observations_per_second)), kind="histogram"))
    result.append(Series(f"{name}_sum", dict(labels), grows(math.fsum(observations_per_second)), kind="histogram"))
    return result


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def _timestamp(seconds: float) -> str:
    """Seconds as promtool reads them: it computes int64(seconds * 1000), truncating."""
    ms = round(seconds * 1000)
    text = f"{ms / 1000:.3f}"
    if int(float(text) * 1000) != ms:  # the product fell just below the millisecond
        text = f"{(ms + 0.5) / 1000:.4f}"
    return text


def _label_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def openmetrics_text(series: Iterable[Series]) -> str:
    """The series as an OpenMetrics exposition for promtool: families contiguous, each under one
    `# TYPE` line, each series' samples in time order, and the closing `# EOF`."""
    families: dict[str, list[Series]] = {}
    kinds: dict[str, Kind] = {}
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    for one in series:
        key = (one.name, tuple(sorted(one.labels.items())))
        if key in seen:
            raise ValueError(f"series {one.name}{one.labels} given twice")
        seen.add(key)
        if kinds.setdefault(one.family, one.kind) != one.kind:
            raise ValueError(f"family {one.family} given as both {kinds[one.family]} and {one.kind}")
        families.setdefault(one.family, []).append(one)
    lines: list[str] = []
    for family, members in families.items():
        lines.append(f"# TYPE {family} {kinds[family]}")
        for one in members:
            labels = ",".join(f'{k}="{_label_value(v)}"' for k, v in one.labels.items())
            head = f"{one.name}{{{labels}}}" if labels else one.name
            lines.extend(f"{head} {_number(value)} {_timestamp(moment)}" for moment, value in one.samples)
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


class PrometheusBinaries(NamedTuple):
    prometheus: str
    promtool: str


def prometheus_binaries() -> PrometheusBinaries:
    """The paths of `prometheus` and `promtool`, or skip (fail under CI=true) without them."""
    prometheus, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if prometheus is None or promtool is None:
        missing("prometheus and promtool are not installed (Debian: apt-get install prometheus; "
                "`make test` does it when run as root)")
    return PrometheusBinaries(prometheus, promtool)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


_CONFIG = """\
# No scrape targets: the TSDB holds only what the test backfilled.
global:
  scrape_interval: 15s
  evaluation_interval: 15s
scrape_configs: []
"""


class PrometheusServer:
    """`prometheus` in its own process on 127.0.0.1, with `series` backfilled before the first start
    (none: an empty server). `with` starts it and, on leaving, stops it and deletes its files;
    `stop()` and `start()` in between take it down and bring it back on the same port and data."""

    def __init__(self, series: Iterable[Series] = (), *, startup_timeout: float = 30.0,
                 args: Sequence[str] = ()) -> None:
        self.binaries = prometheus_binaries()
        self.startup_timeout = startup_timeout
        self.args = list(args)
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.directory = Path(tempfile.mkdtemp(prefix="promserver-"))
        self.data = self.directory / "data"
        self.config = self.directory / "prometheus.yml"
        self.log_path = self.directory / "prometheus.log"
        self.process: subprocess.Popen[bytes] | None = None
        try:
            self.data.mkdir()
            self.config.write_text(_CONFIG)
            text = openmetrics_text(series)
            if text != "# EOF\n":
                self._backfill(text)
        except BaseException:
            shutil.rmtree(self.directory, ignore_errors=True)
            raise

    def _backfill(self, text: str) -> None:
        source = self.directory / "series.om"
        source.write_text(text)
        done = subprocess.run([self.binaries.promtool, "tsdb", "create-blocks-from", "openmetrics",
                               str(source), str(self.data)], capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"promtool could not backfill {source} (exit {done.returncode}):\n"
                               f"{done.stdout}{done.stderr}")

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        """Start the server (if it is not running) and wait until it answers `/-/ready`."""
        if self.running:
            return
        command = [self.binaries.prometheus, f"--config.file={self.config}", f"--storage.tsdb.path={self.data}",
                   f"--web.listen-address=127.0.0.1:{self.port}", "--storage.tsdb.retention.time=3650d",
                   *self.args]
        # A file, not a pipe: nobody reads a pipe while tests run, and a full one blocks the server.
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                            cwd=self.directory)
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while True:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"prometheus exited with {self.process.returncode} before it was ready:\n"
                                   f"{self.log()}")
            try:
                if httpx.get(f"{self.url}/-/ready", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"prometheus on {self.url} was not ready within {self.startup_timeout} s:\n"
                                   f"{self.log()}")
            time.sleep(0.05)

    def stop(self) -> None:
        """Stop the server: SIGTERM, then SIGKILL if it has not exited within 10 s."""
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def close(self) -> None:
        """Stop the server and delete its data, configuration and log."""
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)

    def log(self) -> str:
        """Everything the server printed, over all its starts."""
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def query(self, expr: str, at: float | None = None) -> list[tuple[dict[str, str], float]]:
        """An instant query through `/api/v1/query` (at `at`, unix seconds, or now): the labels
        and value of each element of the vector, or of the scalar (with no labels)."""
        params = {"query": expr} if at is None else {"query": expr, "time": _timestamp(at)}
        response = httpx.get(f"{self.url}/api/v1/query", params=params, timeout=10)
        body: dict[str, Any] = response.json()
        if response.status_code != 200 or body.get("status") != "success":
            raise RuntimeError(f"query {expr!r} failed ({response.status_code}): {body}")
        data: dict[str, Any] = body["data"]
        if data["resultType"] == "scalar":
            return [({}, float(data["result"][1]))]
        if data["resultType"] != "vector":
            raise RuntimeError(f"query {expr!r} gave a {data['resultType']}, not a vector")
        return [(dict(element["metric"]), float(element["value"][1])) for element in data["result"]]

    def __enter__(self) -> PrometheusServer:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()


__all__ = ["Kind", "PrometheusBinaries", "PrometheusServer", "Series", "counter", "gauge", "histogram",
           "openmetrics_text", "prometheus_binaries", "times"]
