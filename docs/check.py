#!/usr/bin/env python3
"""Checks the Markdown a user reads: every relative link names a file that exists, every
`#anchor` names a heading of that file, and every path a shell block names under one of the
repository's own folders exists. Run from anywhere; exits 1 with one line per problem.

    python3 docs/check.py            # README.md, CHANGELOG.md, docs/, and every other tracked *.md
"""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^(\s*)(```+|~~~+)(.*)$")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")


def tracked_markdown():
    out = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "*.md"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout.split()
    return [ROOT / p for p in out if (ROOT / p).is_file()]


def slug(text):
    """GitHub's heading anchor: lower case, markup and punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links keep their text
    text = text.replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text, flags=re.UNICODE)
    return text.replace(" ", "-")


def blocks(lines):
    """Yields (line number, line, fence info or None) with fenced blocks marked."""
    fence = None
    for n, line in enumerate(lines, 1):
        m = FENCE.match(line)
        if fence is None and m:
            fence = (m.group(2)[0], len(m.group(2)), m.group(3).strip())
            yield n, line, ("open", fence[2])
            continue
        if fence is not None and m and m.group(2)[0] == fence[0] and len(m.group(2)) >= fence[1] and not m.group(3).strip():
            fence = None
            yield n, line, ("close", "")
            continue
        yield n, line, ("in", fence[2]) if fence else None


_anchors = {}


def anchors(path):
    if path not in _anchors:
        seen, found = {}, set()
        for _, line, block in blocks(path.read_text(encoding="utf-8").splitlines()):
            if block is not None:
                continue
            for a in HTML_ANCHOR.findall(line):
                found.add(a)
            m = HEADING.match(line)
            if not m:
                continue
            s = slug(m.group(2))
            k = seen.get(s, 0)
            seen[s] = k + 1
            found.add(s if k == 0 else f"{s}-{k}")
        _anchors[path] = found
    return _anchors[path]


def top_folders():
    return {p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name != "target"}


def check(path, folders, problems):
    rel = path.relative_to(ROOT)
    for n, line, block in blocks(path.read_text(encoding="utf-8").splitlines()):
        if block is None:
            for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("//"):
                    continue  # an absolute URL: not checked offline
                file_part, _, anchor = target.partition("#")
                dest = (path.parent / file_part).resolve() if file_part else path
                if not dest.exists():
                    problems.append(f"{rel}:{n}: link to {target}: {file_part} does not exist")
                    continue
                if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                    problems.append(f"{rel}:{n}: link to {target}: no heading #{anchor} in {dest.relative_to(ROOT)}")
        elif block[0] == "in" and block[1] in ("sh", "bash", "shell", "console"):
            if "kubectl" in line:
                # `deploy/NAME` and the like are kubectl's resources: only its files are paths.
                tokens = re.findall(r"(?:-f|--filename)[ =]([\w.@/-]+)", line)
            else:
                tokens = re.findall(r"[\w.@/-]+", line)
            for token in tokens:
                first = token.split("/", 1)[0]
                if "/" not in token or first not in folders or line.lstrip().startswith("#"):
                    continue
                candidate = token.rstrip(".")
                if any(ch in candidate for ch in "*<>") or "REGISTRY" in candidate:
                    continue
                if not (ROOT / candidate).exists():
                    problems.append(f"{rel}:{n}: command names {candidate}, which does not exist")


def main():
    folders = top_folders()
    problems = []
    files = tracked_markdown()
    for path in files:
        check(path, folders, problems)
    for p in problems:
        print(p)
    print(f"docs check: {len(files)} files, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
