#!/usr/bin/env python3
"""test_docs_links: every relative link and image in the repository's Markdown files points at a
file or folder that exists, and every #anchor at a heading of the file it names (GitHub's heading
ids: lower case, punctuation dropped, blanks to '-', repeats numbered -1, -2, ...). Links in code
blocks and code spans are not links; http(s) and mailto links are not checked (no network).
Prints every broken link with its file and line and exits 1.
Usage: check_links.py SOURCE_DIR
"""
import os
import re
import sys

LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def markdown_files(root):
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith((".", "build")) and d != "node_modules"]
        for name in files:
            if name.endswith(".md"):
                yield os.path.join(folder, name)


def prose_lines(path, keep_code_spans=False):
    """(line number, text) of the lines outside fenced code blocks, code spans blanked unless
    kept (a heading's code span is part of its id)."""
    fence = None
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        stripped = line.lstrip()
        if fence:
            if stripped.startswith(fence):
                fence = None
            continue
        if stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            continue
        yield number, line if keep_code_spans else re.sub(r"(`+)(?:(?!\1).)+?\1", "", line)


def slug(heading):
    text = re.sub(r"[`*_]|<[^>]*>", "", heading.strip()).lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        seen = {}
        ids = set()
        for _, line in prose_lines(path, keep_code_spans=True):
            m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                base = slug(m.group(1))
                n = seen.get(base, 0)
                seen[base] = n + 1
                ids.add(base if n == 0 else f"{base}-{n}")
        cache[path] = ids
    return cache[path]


def main():
    if len(sys.argv) != 2:
        print("usage: check_links.py SOURCE_DIR")
        sys.exit(2)
    root = os.path.abspath(sys.argv[1])
    broken = []
    links = 0
    for path in sorted(markdown_files(root)):
        for number, line in prose_lines(path):
            for target in LINK.findall(line):
                if re.match(r"[a-z][a-z0-9+.-]*:", target):
                    continue  # https:, mailto:, ...
                links += 1
                file_part, _, anchor = target.partition("#")
                dest = path if not file_part else os.path.normpath(
                    os.path.join(os.path.dirname(path), file_part))
                where = f"{os.path.relpath(path, root)}:{number}: {target}"
                if not os.path.exists(dest):
                    broken.append(f"{where}: no such file")
                elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                    broken.append(f"{where}: no heading #{anchor} in {os.path.relpath(dest, root)}")
    if broken:
        print("broken links:")
        for b in broken:
            print(f"  {b}")
        sys.exit(1)
    print(f"{links} relative links, all valid")


main()
