#!/usr/bin/env python3
"""Print a MUST/SHOULD/MAY x transport table from the TCK's reports/compatibility.json.

Usage: summarize.py path/to/compatibility.json

Each cell counts requirement results (one per requirement and transport), as the kit records
them: PASS, FAIL, or SKIPPED (for example, a transport the agent card does not declare).
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict

LEVELS = ("MUST", "SHOULD", "MAY")
TRANSPORTS = ("jsonrpc", "http_json", "grpc")


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    with open(sys.argv[1], encoding="utf-8") as f:
        report = json.load(f)

    counts: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    failed: list[tuple[str, str, str, str]] = []
    for req_id, req in sorted(report.get("per_requirement", {}).items()):
        level = req.get("level", "?")
        errors = req.get("errors") or []
        failing = []
        for transport, status in (req.get("transports") or {}).items():
            counts[(level, transport)][status] += 1
            if status == "FAIL":
                failing.append(transport)
        if failing:
            detail = errors[0].splitlines()[0] if errors else ""
            failed.append((level, req_id, ",".join(failing), detail))

    summary = report.get("summary", {})
    print(f"SUT: {summary.get('sut_url', '?')}")
    print(
        "compatibility: overall {0}  MUST {1}  SHOULD {2}  MAY {3}".format(
            summary.get("overall_compatibility", "?"),
            summary.get("must_compatibility", "?"),
            summary.get("should_compatibility", "?"),
            summary.get("may_compatibility", "?"),
        )
    )
    by_level: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for req in report.get("per_requirement", {}).values():
        by_level[req.get("level", "?")][req.get("status", "?")] += 1
    print("requirements (FAIL if any transport fails; NOT TESTED: the kit has no test for it yet):")
    for level in LEVELS:
        c = by_level.get(level, {})
        print(
            f"  {level:<7} pass {c.get('PASS', 0):>3}  fail {c.get('FAIL', 0):>3}  "
            f"skipped {c.get('SKIPPED', 0):>3}  not tested {c.get('NOT TESTED', 0):>3}"
        )
    print("results per transport (one per requirement and transport):")
    transports = [t for t in TRANSPORTS if any((lvl, t) in counts for lvl in LEVELS)]
    transports += sorted({t for (_, t) in counts} - set(transports))
    header = f"{'level':<7}" + "".join(f"{t + ' pass/fail/skip':>26}" for t in transports)
    print(header)
    for level in LEVELS:
        cells = []
        for t in transports:
            c = counts.get((level, t), {})
            cells.append(f"{c.get('PASS', 0)}/{c.get('FAIL', 0)}/{c.get('SKIPPED', 0)}".rjust(26))
        print(f"{level:<7}" + "".join(cells))
    if failed:
        print("failed requirements (level, id, failing transports: the first error the kit recorded):")
        for level, req_id, transports_failed, detail in failed:
            print(f"  {level:<6} {req_id:<18} {transports_failed:<23} {detail[:160]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
