#!/usr/bin/env python3
"""Fails when a shell check could pass on empty input (issue 26: a 1.36 run found checks
that passed because the command feeding them printed nothing).

  e2e/harness/empty-input-lint.py              # lint the repository's scripts; exit 1 on a finding
  e2e/harness/empty-input-lint.py --self-test  # prove each rule catches what it is for

The patterns, and what to write instead (helpers in e2e/lib.sh):
  jq -e                 jq 1.6 exits 0 when its input is empty: jqe
  ! grep                passes on a missing or empty file: absent [-i] ERE FILE...
  -z "$(cmd)"           passes when cmd failed: capture with `|| return 1`, then test
  ... | wc -l  vs 0     prints 0 when the command before it failed: count CMD...
  jq all(...)           true on an empty array: guard with `length > 0 and` (or >= 1)
A line that is safe for a reason the rules cannot see says so with `empty-input-ok: why`.
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GLOBS = ["e2e/*.sh", "e2e/*/*.sh", "charts/ci/*.sh", "aws/ci/*.sh", "deploy/ci/*.sh", "agent/scripts/*.sh"]
GUARD = re.compile(r"length\)?\s*(>\s*0|>=\s*[1-9]|==\s*[1-9])")
JQ_ALL = re.compile(r"(\ball\(|\|\s*all\b|\band all\b)")


def findings(name, text):
    out = []
    lines = text.splitlines()
    zero_counted = set(re.findall(r"count_is 0 ([A-Za-z_][A-Za-z0-9_]*)", text))
    for i, line in enumerate(lines):
        code = line.split(" #", 1)[0] if not line.lstrip().startswith("#") else ""
        if not code.strip() or "empty-input-ok" in line:
            continue
        where = f"{name}:{i + 1}"
        if re.search(r"\bjq\s+(-[a-zA-Z]*\s+)*-e\b", code):
            out.append(f"{where}: `jq -e` exits 0 on empty input (jq 1.6); use jqe from e2e/lib.sh")
        if re.search(r"!\s+grep\b", code):
            out.append(f"{where}: `! grep` passes on a missing or empty file; use absent from e2e/lib.sh")
        if re.search(r"-z\s+\"?\$\(", code):
            out.append(f"{where}: `-z \"$(cmd)\"` passes when cmd fails; capture it with `|| return 1` first")
        if "wc -l" in code:
            m = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*)\(\)", code)
            if re.search(r"wc -l\s*\)\s*\"?\s*(=|==|-eq)\s*0\b", code) or (m and m.group(1) in zero_counted):
                out.append(f"{where}: a `wc -l` count expected to be 0 reads 0 when the command failed; use count from e2e/lib.sh")
        if JQ_ALL.search(code) and ("jq" in code or "'" in code):
            # The jq program may start a few lines up (a check with a multi-line program).
            start = i
            while start > 0 and i - start < 8 and not re.match(r"\s*(check|[a-z_]+\(\))\b", lines[start]):
                start -= 1
            window = "\n".join(lines[start:i + 1])
            if "jq" in window and not GUARD.search(window):
                out.append(f"{where}: jq `all` is true on an empty array; guard it with `length > 0 and`")
    return out


SELF_TEST = {
    "jq -e": "check x bash -c \"kubectl get x -o json | jq -e '.items | length == 0'\"",
    "! grep": "check x bash -c \"! grep -q panicked '$dir/p.log'\"",
    "-z": "unbound() { [ -z \"$(k get pod p -o jsonpath='{.spec.nodeName}')\" ]; }",
    "wc -l": "check x bash -c \"[ \\$(kubectl get pods -o name | wc -l) = 0 ]\"",
    "wc -l (function)": "gone() { k get pods -o name | wc -l; }\ncheck x count_is 0 gone",
    "jq all": "check x jqe 'all(.[]; .image == $ami)' f.json",
}
SAFE = [
    "check x jqe '.items | length == 0' f.json",
    "check x absent panicked \"$dir/p.log\"",
    "check x jqe 'length >= 1 and all(.[]; .image == $ami)' f.json",
    "check x jqe '(.items | length) == 3 and all(.items[]; .ready)' f.json",
    "check x bash -c \"! grep -q y <<<'$t'\"  # empty-input-ok: t was matched above",
    "claims() { k get nodeclaims -o name | wc -l; }\ncheck x count_is 3 claims",
]


def self_test():
    bad = [what for what, text in SELF_TEST.items() if not findings("self-test", text)]
    bad += [f"false finding: {text}" for text in SAFE if findings("self-test", text)]
    for b in bad:
        print(f"FAIL: empty-input lint self-test: {b}")
    if not bad:
        print(f"PASS: empty-input lint self-test ({len(SELF_TEST)} patterns caught, {len(SAFE)} safe forms left alone)")
    return 1 if bad else 0


def main():
    if "--self-test" in sys.argv:
        return self_test()
    files = sorted({p for g in GLOBS for p in ROOT.glob(g)})
    out = [f for p in files for f in findings(str(p.relative_to(ROOT)), p.read_text())]
    for f in out:
        print(f"FAIL: {f}")
    if not files:
        print("FAIL: empty-input lint found no scripts to read")
        return 1
    if not out:
        print(f"PASS: no check in {len(files)} scripts can pass on empty input (e2e/harness/empty-input-lint.py)")
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main())
