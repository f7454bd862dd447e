"""Run the benchmark and print a table (or JSON).

    python -m bench            the full run (several minutes): make bench
    python -m bench --short    a few seconds, in CI, so the benchmark cannot rot
    python -m bench --json     machine-readable
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from bench import measure


def table(title: str, rows: list[dict[str, Any]], columns: list[tuple[str, str, str]]) -> str:
    """A Markdown table: columns are (key, heading, format)."""
    lines = [f"\n{title}\n", "| " + " | ".join(h for _, h, _ in columns) + " |",
             "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(format(row[k], f) if f else str(row[k]) for k, _, f in columns) + " |")
    return "\n".join(lines)


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The HTTP path's targets, each beside what this run measured (issue 15). The running
    resource is measured twice: as it is resynced when nothing happened to it (the same bytes
    again, answered from memory) and byte for byte new every time (synced)."""
    rows_in_process = {r["request"]: r for r in results["in_process"]}
    running, changed = rows_in_process[measure.RUNNING], rows_in_process[measure.CHANGED]
    http = {r["concurrency"]: r for r in results["http"]}
    eight, thirty_two = http[8], http[32]
    # The most a sync can do over HTTP here: decode and encode its JSON, and one request's worth
    # of HTTP handling (what /healthz costs).
    limit = 1 / (running["floor_p50_us"] / 1e6 + 1 / eight["healthz_rps"])

    def server_errors(statuses: dict[str, int]) -> int:
        return sum(n for code, n in statuses.items() if str(code).startswith("5"))

    rows = []
    for label, rps, p99_8, p99_32, errors in (
            ("resync", eight["sync_rps"], eight["sync_p99_ms"], thirty_two["sync_p99_ms"],
             server_errors(thirty_two["sync_statuses"])),
            ("changed", eight["changed_rps"], eight["changed_p99_ms"], thirty_two["changed_p99_ms"],
             server_errors(thirty_two["changed_statuses"]))):
        rows += [
            (f"{label}: HTTP syncs/s at 8 connections, share of the limit 1/(JSON floor + one /healthz)",
             f"{rps:.0f}/s of {limit:.0f}/s = {rps / limit:.0%}", ">= 60%", rps / limit >= 0.6),
            (f"{label}: sync p99 at 8 connections", f"{p99_8:.2f} ms", "< 5 ms", p99_8 < 5),
            (f"{label}: sync p99 at 32 connections, and 5xx", f"{p99_32:.2f} ms, {errors} 5xx", "< 15 ms, none",
             p99_32 < 15 and errors == 0),
        ]
    for label, row in (("resync", running), ("changed", changed)):
        rows.append((f"{label}: in-process answer of the running resource / its JSON floor",
                     f"{row['hook_p50_us'] / running['floor_p50_us']:.1f}x", "<= 2x",
                     row["hook_p50_us"] / running["floor_p50_us"] <= 2))
    rows.append(("cold render (first sync after a restart) of the running resource",
                 f"{running['uncached_p50_us'] / 1000:.1f} ms", "< 4 ms", running["uncached_p50_us"] < 4000))
    return [{"target": t, "measured": m, "goal": g, "met": "yes" if ok else "no"} for t, m, g, ok in rows]


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("--short", action="store_true", help="a few seconds instead of several minutes")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    args = parser.parse_args()
    short = args.short
    started = time.perf_counter()
    results: dict[str, Any] = {
        "machine": measure.machine(),
        "mode": "short" if short else "full",
        "in_process": measure.in_process(200 if short else 3000),
        "asgi": measure.through_asgi(200 if short else 3000),
        "http": measure.over_http(1.0 if short else 10.0),
        "growth_by_size": measure.growth_by_size([1, 10, 100] if short else [1, 10, 100, 1000], 20 if short else 200),
        "growth_by_fleet": measure.growth_by_fleet([1, 10, 100] if short else [1, 10, 100, 1000, 10000],
                                                   300 if short else 20000),
        "server_memory": measure.server_memory(100 if short else 10000),
    }
    results["targets"] = targets(results)
    results["seconds"] = round(time.perf_counter() - started, 1)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"llmdeploy benchmark ({results['mode']}) on {results['machine']}")
    print(table("In-process sync vs. its JSON floor (decode request + encode response), microseconds",
                results["in_process"], [("request", "request", ""), ("bytes_in", "bytes in", ""),
                                        ("hook_p50_us", "hook p50", ".0f"), ("hook_p99_us", "hook p99", ".0f"),
                                        ("floor_p50_us", "floor p50", ".0f"), ("floor_p99_us", "floor p99", ".0f"),
                                        ("ratio", "hook/floor", ".1f"), ("uncached_p50_us", "uncached p50", ".0f")]))
    print(table("The same sync through the app in-process (ASGI, no sockets), microseconds", [results["asgi"]],
                [("request", "request", ""), ("p50_us", "p50", ".0f"), ("p99_us", "p99", ".0f")]))
    print(table("Over HTTP, one worker, load from another process: the running resource resynced (the same "
                "request again) and changed (byte for byte new every time)", results["http"], [
        ("concurrency", "concurrency", ""), ("sync_rps", "sync req/s", ".0f"), ("sync_p50_ms", "sync p50 ms", ".2f"),
        ("sync_p99_ms", "sync p99 ms", ".2f"), ("changed_rps", "changed req/s", ".0f"),
        ("changed_p99_ms", "changed p99 ms", ".2f"), ("healthz_rps", "/healthz req/s", ".0f"),
        ("healthz_p99_ms", "/healthz p99 ms", ".2f"), ("ratio", "sync/healthz", ".2f"),
        ("sync_statuses", "sync statuses", ""), ("changed_statuses", "changed statuses", "")]))
    print(table("Growth with spec size (N args, env vars, annotations, hosts, each up to the API's limit), "
                "microseconds",
                results["growth_by_size"], [("size", "N", ""), ("bytes_in", "bytes in", ""),
                                            ("uncached_p50_us", "uncached p50", ".0f"),
                                            ("cached_p50_us", "cached p50", ".0f")]))
    print(table("Growth with fleet size (distinct running resources, each resynced), microseconds per sync",
                results["growth_by_fleet"], [("resources", "resources", ""), ("per_sync_us", "per sync", ".0f"),
                                             ("cached", "rendered children kept", ""),
                                             ("answers", "answers kept", "")]))
    print(table("Server memory (two passes over distinct running resources), MiB", [results["server_memory"]], [
        ("resources", "resources", ""), ("rss_start_mib", "RSS at start", ".0f"),
        ("rss_after_first_pass_mib", "after pass 1", ".0f"), ("rss_after_second_pass_mib", "after pass 2", ".0f"),
        ("peak_mib", "peak", ".0f")]))
    print(table("Targets of the HTTP path", results["targets"], [("target", "target", ""), ("measured", "measured", ""),
                                                                 ("goal", "goal", ""), ("met", "met", "")]))
    print(f"\n({results['seconds']} s)")


if __name__ == "__main__":
    main()
