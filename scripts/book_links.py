#!/usr/bin/env python3
"""mdBook preprocessor (book.toml): a link of a page in docs/ that leaves docs/ — README.md,
ARCHITECTURE.md, kubeconfig-samples/, bench/RESULTS.md, examples/ — becomes a link to that file
in the repository on GitHub, since the site holds only docs/. In the repository the links stay
relative, so that they work on GitHub and in a checkout, and tests/it/docs.rs resolves them.

The repository is GITHUB_REPOSITORY (set in GitHub Actions) or OWNER/kubecred, the README's
placeholder; the branch is main. Links inside code (fenced blocks, code spans) are left alone.

mdBook runs `book_links.py supports RENDERER` first (any renderer: exit 0), then passes
[context, book] as JSON on stdin and reads the book back on stdout.

`book_links.py check DIR` (scripts/book.sh, after the build) checks the built site: every link
within it names a file the site has, and every anchor an id of that page. tests/it/docs.rs
resolves the Markdown by GitHub's heading rules; this holds mdBook's rendering to the same.
"""
import html
import json
import os
import posixpath
import re
import sys

LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")


def code_spans(line):
    """The (start, end) ranges of a line's code spans."""
    ticks = [m.start() for m in re.finditer("`", line)]
    return list(zip(ticks[0::2], ticks[1::2]))


def rewrite(content, chapter_dir, root, base):
    out, fenced = [], False
    for line in content.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if fenced or "](" not in line:
            out.append(line)
            continue
        spans = code_spans(line)

        def repl(match):
            target = match.group(2)
            if re.match(r"^([a-z][a-z0-9+.-]*:|#)", target) or any(a < match.start() < b for a, b in spans):
                return match.group(0)
            path, _, anchor = target.partition("#")
            resolved = posixpath.normpath(posixpath.join("docs", chapter_dir, path))
            if resolved.startswith("docs/") or resolved == "docs":
                return match.group(0)
            kind = "tree" if os.path.isdir(os.path.join(root, resolved)) else "blob"
            url = f"{base}/{kind}/main/{resolved}" + (f"#{anchor}" if anchor else "")
            return f"[{match.group(1)}]({url})"

        out.append(LINK.sub(repl, line))
    return "\n".join(out)


def chapters(node):
    """Every chapter of the book's JSON, wherever mdBook's version nests them."""
    if isinstance(node, dict):
        if "Chapter" in node:
            yield node["Chapter"]
        for value in node.values():
            yield from chapters(value)
    elif isinstance(node, list):
        for value in node:
            yield from chapters(value)


def check(site):
    """What is broken among the built site's own links: (page, href, why) for each."""
    pages = {}
    for folder, _, files in os.walk(site):
        for name in files:
            if name.endswith(".html"):
                path = os.path.relpath(os.path.join(folder, name), site)
                with open(os.path.join(site, path), encoding="utf-8") as page:
                    pages[path] = page.read()
    ids = {path: set(re.findall(r'\bid="([^"]+)"', text)) for path, text in pages.items()}
    broken = []
    for path, text in pages.items():
        for href in re.findall(r'href="([^"]+)"', text):
            href = html.unescape(href)
            if re.match(r"^([a-z][a-z0-9+.-]*:|/)", href):
                continue
            target, _, anchor = href.partition("#")
            target = posixpath.normpath(posixpath.join(posixpath.dirname(path), target)) if target else path
            if not os.path.exists(os.path.join(site, target)):
                broken.append((path, href, "no such file"))
            elif anchor and target.endswith(".html") and anchor not in ids[target]:
                broken.append((path, href, "no such id"))
    return broken, len(pages)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "supports":
        return 0
    if len(sys.argv) == 3 and sys.argv[1] == "check":
        broken, count = check(sys.argv[2])
        for path, href, why in broken:
            print(f"book_links.py: {path} links {href}: {why}", file=sys.stderr)
        if broken or count < 10:
            print(f"book_links.py: {len(broken)} broken links in {count} pages", file=sys.stderr)
            return 1
        return 0
    context, book = json.load(sys.stdin)
    root = context["root"]
    repository = os.environ.get("GITHUB_REPOSITORY") or "OWNER/kubecred"
    base = f"https://github.com/{repository}"
    for chapter in chapters(book):
        source = chapter.get("source_path") or chapter.get("path") or ""
        chapter["content"] = rewrite(chapter["content"], posixpath.dirname(source), root, base)
    json.dump(book, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
