"""The fenced code blocks of a Markdown file and their first-hour markers.

Every fenced block (``` or ~~~, at any indentation) must have, on the nearest non-blank line
above it, an HTML comment that says what the first-hour suite (test_first_hour.py) does with it:

  <!-- first-hour: run [cwd=DIR] [offline] [save=FILE] [expect="TEXT"]... -->
  <!-- first-hour: skip (REASON) -->

`run` executes the block as written (see test_first_hour.py for how each language runs);
cwd=DIR is the directory it runs in, relative to the session's root (default `myproject`; the
clone of the repository is `agent-sandbox`); `offline` runs it in a network namespace of its
own with nothing but loopback; save=FILE writes the block to FILE in that directory instead, for
a later block to run (required for typescript: the README's own tsc command compiles it); each
expect="TEXT" must appear in the block's output. `skip` needs a reason in parentheses. parse()
reports every block that has neither.
"""

import re
import shlex

FENCE_RE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^`]*?)\s*$")
MARKER_RE = re.compile(r"^\s*<!--\s*first-hour:\s*(.*?)\s*-->\s*$")
SKIP_RE = re.compile(r"^skip\s+\((.*\S.*)\)$")
CWD_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")

SHELL = ("sh", "bash", "shell")
PYTHON = ("python", "py")
JAVASCRIPT = ("js", "javascript", "mjs")
TYPESCRIPT = ("ts", "typescript", "mts")


class Block:
    """One fenced block: where it is (path, line), its language and text, and its marker."""

    def __init__(self, path, line, lang, text):
        self.path = path
        self.line = line  # 1-based line of the opening fence
        self.lang = lang  # first word of the info string, lower case ("" when none)
        self.text = text
        self.action = None  # "run" or "skip"
        self.reason = None  # skip's reason
        self.cwd = "myproject"
        self.offline = False
        self.save = None
        self.expects = []

    @property
    def kind(self):
        """"shell", "python", "javascript", "typescript" or None (cannot be run)."""
        for kind, names in (("shell", SHELL), ("python", PYTHON), ("javascript", JAVASCRIPT),
                            ("typescript", TYPESCRIPT)):
            if self.lang in names:
                return kind
        return None

    def where(self):
        return "%s:%d" % (self.path, self.line)

    def __repr__(self):
        return "<Block %s %s %s>" % (self.where(), self.lang or "-", self.action)


def _apply_marker(block, spec):
    """Fills block's marker fields from the comment's text; returns an error or None."""
    m = SKIP_RE.match(spec)
    if m:
        block.action, block.reason = "skip", m.group(1).strip()
        return None
    try:
        words = shlex.split(spec)
    except ValueError as e:
        return "unreadable first-hour marker %r: %s" % (spec, e)
    if not words or words[0] != "run":
        return ("first-hour marker %r is neither `run [options]` nor `skip (reason)`" % spec)
    block.action = "run"
    for w in words[1:]:
        if w == "offline":
            block.offline = True
        elif w.startswith("cwd=") and CWD_RE.match(w[4:]):
            block.cwd = w[4:]
        elif w.startswith("save=") and CWD_RE.match(w[5:]):
            block.save = w[5:]
        elif w.startswith("expect=") and len(w) > len("expect="):
            block.expects.append(w[len("expect="):])
        else:
            return "first-hour marker %r: unknown option %r" % (spec, w)
    if block.kind is None:
        return "block in language %r is marked run, but only %s run" % (
            block.lang, ", ".join(SHELL + PYTHON + JAVASCRIPT + TYPESCRIPT))
    if block.offline and (block.kind != "shell" or block.save):
        return "`offline` applies to shell blocks that run"
    if block.kind == "typescript" and not block.save:
        return "a typescript block needs save=FILE (a later block compiles and runs it)"
    return None


def parse(path, text=None):
    """(blocks, errors) of the Markdown file at path: every fenced block in order, and one
    message (with file:line) for each block without a valid marker."""
    if text is None:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    lines = text.split("\n")
    blocks, errors = [], []
    i = 0
    while i < len(lines):
        m = FENCE_RE.match(lines[i])
        if not m or (m.group(2)[0] == "`" and "`" in m.group(3)):
            i += 1
            continue
        indent, fence, info = m.groups()
        start = i
        body = []
        i += 1
        close = re.compile(r"^\s*" + re.escape(fence[0]) + "{%d,}\\s*$" % len(fence))
        while i < len(lines) and not close.match(lines[i]):
            # Strip the fence's own indentation (a block inside a list item).
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        if i == len(lines):
            errors.append("%s:%d: fenced block is never closed" % (path, start + 1))
        i += 1
        block = Block(path, start + 1, info.split()[0].lower() if info else "",
                      "\n".join(body) + "\n")
        blocks.append(block)
        j = start - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        marker = MARKER_RE.match(lines[j]) if j >= 0 else None
        if not marker:
            errors.append("%s: fenced block has no first-hour marker on the line above it "
                          "(<!-- first-hour: run --> or <!-- first-hour: skip (reason) -->)"
                          % block.where())
            continue
        error = _apply_marker(block, marker.group(1))
        if error:
            errors.append("%s: %s" % (block.where(), error))
    return blocks, errors
