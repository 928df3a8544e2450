"""The newest raw row of every case in ``benchmarks/results.jsonl``, as a Markdown table.

    python docs/performance_table.py                 # every case
    python docs/performance_table.py balanced 250k   # cases whose name contains a word

BENCHMARKS.md holds one chosen row per benchmark with its command; this lists what the
scripts recorded last for each case (a case being the ``case`` field, or the benchmark and
its kind, with the runner, method, class count and size that tell rows apart), so that a
maintainer refreshing a row of BENCHMARKS.md sees the newest measurement at once. The
figures shown are the row's times, ratios and a few quality numbers, rounded.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results.jsonl"
# fields that tell two rows of one case apart
KEY_FIELDS = ("runner", "method", "engine", "classes", "n", "size", "set", "backend",
              "config", "kind", "device")
# fields that are bookkeeping, not figures
SKIP = {"date", "machine", "cpu", "cpu_count", "python", "case", "benchmark", "bench",
        "note", "label", "torch", "gpu", "device_name", "opentsne_version",
        "browser", "ctsne", "map", "top", "stages_s", "rounds_s", "first_paint_all_s",
        "standard_runs_s", "differences_s", "cold_runs_s", "warm_runs_s", "openTSNE_runs_s",
        *KEY_FIELDS}


def _name(row: dict) -> str:
    base = row.get("case") or " ".join(
        str(row[k]) for k in ("benchmark", "bench") if row.get(k)) or "?"
    parts = [f"{k}={row[k]}" for k in KEY_FIELDS if row.get(k) not in (None, "", {})]
    return " ".join([str(base), *parts])


def _figure(value) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, str) and len(value) < 40:
        return value
    if isinstance(value, list) and value and all(isinstance(v, (int, float)) for v in value):
        return "[" + ", ".join(f"{v:.3g}" for v in value) + "]"
    return None


def newest_rows(path: Path = RESULTS) -> dict[str, dict]:
    """The last row written for each case name (rows are appended in time order)."""
    newest: dict[str, dict] = {}
    for line in path.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            newest[_name(row)] = row
    return newest


def markdown(rows: dict[str, dict]) -> str:
    out = ["| case | date | machine | figures |", "|---|---|---|---|"]
    for name, row in sorted(rows.items(), key=lambda kv: (str(kv[1].get("date")), kv[0])):
        figures = []
        for key, value in row.items():
            text = None if key in SKIP else _figure(value)
            if text is not None:
                figures.append(f"{key} {text}")
        machine = " ".join(str(row[k]) for k in ("machine", "cpu", "gpu") if row.get(k))
        out.append(f"| {name} | {str(row.get('date', ''))[:10]} | {machine} | "
                   f"{'; '.join(figures)} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    words = sys.argv[1:] if argv is None else argv
    rows = newest_rows()
    if words:
        rows = {k: v for k, v in rows.items() if any(w in k for w in words)}
    print(markdown(rows))


if __name__ == "__main__":
    main()
