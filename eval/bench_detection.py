"""Speed and memory of the refusal detector on one CPU core: ``python -m eval.bench_detection``.

The process pins itself to a single core (the encoder runs one thread), then measures, on the
bundled XSTest replies (2,250, English) and the authored multilingual replies (2,004, 37
languages):

- per-reply latency of ``detect()`` when the rules head settles the reply alone;
- per-reply latency when the reply's start is embedded and the full head decides (the replies the
  detector sends there, and every English reply when forced through it);
- throughput of ``detect_batch`` in batches of 64, as the detector runs and with every English
  reply forced through the embedding head;
- resident memory once the detector is loaded (rules, language model, embedding model, head).

Latencies are given as wall-clock time and as this process's CPU time: on a shared machine the
wall clock also counts time spent waiting for the core. Each measurement starts with an empty
embedding cache. Targets: median <= 1 ms with rules alone, <= 15 ms with embeddings, >= 300
replies/s in batches, <= 400 MB resident.
"""

from __future__ import annotations

import argparse
import csv
import functools
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data"
TARGETS = {"rules_ms": 1.0, "embedding_ms": 15.0, "batch_per_s": 300.0, "rss_mb": 400.0}


def memory_mb() -> dict[str, float]:
    """Resident and peak resident memory of this process, from /proc."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = round(int(value.split()[0]) / 1024, 1)
    return fields


def pin_to_one_core() -> int:
    core = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {core})
    return core


def load_replies() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    english = []
    for path in sorted((DATA / "xstest").glob("xstest_v2_completions_*.csv")):
        with path.open(newline="", encoding="utf-8") as handle:
            english += [(row["prompt"], row["completion"]) for row in csv.DictReader(handle)]
    multilingual = []
    path = DATA / "multilingual_replies.jsonl"
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                multilingual.append((str(row.get("prompt", "")), str(row["response"])))
    return english, multilingual


def timed(call: Callable[[], Any]) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = call()
    return result, (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000


def summary(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"n": 0}
    ordered = sorted(values)
    return {
        "n": len(ordered),
        "median": round(statistics.median(ordered), 3),
        "p90": round(ordered[int(0.9 * (len(ordered) - 1))], 3),
    }


def fresh_detector(*, forced: bool = False) -> Any:
    """A detector with an empty embedding cache (the loaded model itself is shared)."""
    from guardrail.detection import Detector
    from guardrail.detection.scoring import Scorer

    detector = Detector()
    if forced:
        detector.scorer = Scorer(detector.weights, gate=False)
    return detector


def latencies(detector: Any, items: Sequence[tuple[str, str]]) -> dict[str, dict[str, list[float]]]:
    """Per decision layer: wall and CPU milliseconds of one ``detect()`` call per reply."""
    found: dict[str, dict[str, list[float]]] = {}
    for prompt, reply in items:
        detection, wall, cpu = timed(functools.partial(detector.detect, reply, prompt=prompt))
        layer = found.setdefault(detection.decided_by, {"wall": [], "cpu": []})
        layer["wall"].append(wall)
        layer["cpu"].append(cpu)
    return found


def throughput(
    detector: Any, items: Sequence[tuple[str, str]], batch: int = 64
) -> dict[str, float]:
    def run() -> None:
        for start in range(0, len(items), batch):
            detector.detect_batch(items[start : start + batch])

    _, wall, cpu = timed(run)
    return {
        "replies": len(items),
        "per_s_wall": round(len(items) / (wall / 1000), 1),
        "per_s_cpu": round(len(items) / (cpu / 1000), 1),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    core = pin_to_one_core()
    english, multilingual = load_replies()
    before = memory_mb()
    _, load_wall, _ = timed(lambda: fresh_detector().detect("Warm-up.", prompt="Hi"))
    detector = fresh_detector()
    detector.encoder(["warm-up"])  # the embedding model is part of a loaded detector
    loaded = memory_mb()

    results: dict[str, Any] = {"core": core, "load_seconds": round(load_wall / 1000, 2)}
    layers = latencies(fresh_detector(), english + multilingual)
    results["latency_ms"] = {
        layer: {"wall": summary(t["wall"]), "cpu": summary(t["cpu"])} for layer, t in layers.items()
    }
    forced = latencies(fresh_detector(forced=True), english[:500])
    results["latency_ms_every_english_reply_embedded"] = {
        "wall": summary(forced.get("head", {}).get("wall", [])),
        "cpu": summary(forced.get("head", {}).get("cpu", [])),
    }
    results["batch"] = {
        "xstest": throughput(fresh_detector(), english),
        "multilingual": throughput(fresh_detector(), multilingual),
        "xstest_every_reply_embedded": throughput(fresh_detector(forced=True), english),
    }
    results["memory_mb"] = {"before_loading": before, "detector_loaded": loaded, "end": memory_mb()}
    print_table(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


def print_table(results: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"Refusal detector on one core (cpu {results['core']})")
    for column in ("measure", "wall", "cpu", "target"):
        table.add_column(column)
    for layer, figures in sorted(results["latency_ms"].items()):
        target = {"rules": TARGETS["rules_ms"], "head": TARGETS["embedding_ms"]}.get(layer)
        table.add_row(
            f"median ms per reply, decided by {layer} (n={figures['wall']['n']})",
            f"{figures['wall'].get('median', '-')}",
            f"{figures['cpu'].get('median', '-')}",
            f"<= {target}" if target else "",
        )
    forced = results["latency_ms_every_english_reply_embedded"]
    table.add_row(
        f"median ms per reply, embedding forced (n={forced['wall'].get('n', 0)})",
        f"{forced['wall'].get('median', '-')}",
        f"{forced['cpu'].get('median', '-')}",
        f"<= {TARGETS['embedding_ms']}",
    )
    for name, figures in results["batch"].items():
        table.add_row(
            f"replies/s in batches of 64: {name}",
            f"{figures['per_s_wall']}",
            f"{figures['per_s_cpu']}",
            f">= {TARGETS['batch_per_s']}",
        )
    memory = results["memory_mb"]["detector_loaded"]
    table.add_row(
        "resident MB, detector loaded", f"{memory['VmRSS']}", "", f"<= {TARGETS['rss_mb']}"
    )
    table.add_row("peak resident MB, whole run", f"{results['memory_mb']['end']['VmHWM']}", "", "")
    Console().print(table)


if __name__ == "__main__":
    sys.exit(main())
