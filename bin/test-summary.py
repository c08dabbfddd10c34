#!/usr/bin/env python3
"""Prints one closing line for `make test`: both suites' totals as 'N passed, N failed, N skipped'.

Reads vitest's JSON report and pytest's JUnit XML; exits 1 when either is missing or shows a failure.
"""

import json
import sys
import xml.etree.ElementTree as ET


def main(vitest_json: str, pytest_xml: str) -> int:
    with open(vitest_json, encoding="utf-8") as f:
        v = json.load(f)
    passed = v["numPassedTests"]
    failed = v["numFailedTests"]
    skipped = v["numPendingTests"] + v.get("numTodoTests", 0)
    root = ET.parse(pytest_xml).getroot()
    suites = [root] if root.tag == "testsuite" else list(root)
    for s in suites:
        total = int(s.get("tests", 0))
        bad = int(s.get("failures", 0)) + int(s.get("errors", 0))
        skip = int(s.get("skipped", 0))
        passed += total - bad - skip
        failed += bad
        skipped += skip
    print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
