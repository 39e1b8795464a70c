#!/usr/bin/env python3
"""Runs every `paraplan ...` command that README.md and docs/*.md show, with the built CLI,
and checks its exit code and that it printed something.

A command counts when it appears in a code block or a code span, starts with `paraplan`
(or `$ paraplan`), and has no placeholder (an all-caps word such as STRATEGY, `[`, `|`,
`...`). Files it writes (-o, --into, --trace) go to a temporary folder. A command whose
input files are not in the repository (the user's own trace, say) is listed as needing
the user's file, not run. Expected exit: 2 where the block shows `error:` lines after the
command, else 0. Usage: run_examples.py CLI REPO_ROOT [SECONDS_PER_COMMAND [sanitized]]

With `sanitized` (the ASan / TSan builds) the recorded `calibrate runs` fits over more than
eight case files are listed, not run: they repeat the same fitting code over dozens of
end-to-end runs (a quarter of an hour under ASan), the smaller `calibrate runs` examples
and the calibrate tests cover that code there, and the Release build runs every one.
"""

import os
import re
import shlex
import subprocess
import sys
import tempfile

cli, root = sys.argv[1], sys.argv[2]
# Seconds per command: a sanitizer build runs several times slower (run_examples.py CLI ROOT
# [TIMEOUT]).
timeout = int(sys.argv[3]) if len(sys.argv) > 3 else 300
sanitized = len(sys.argv) > 4 and sys.argv[4] == "sanitized"
docs = [os.path.join(root, "README.md")] + sorted(
    os.path.join(root, "docs", f) for f in os.listdir(os.path.join(root, "docs")) if f.endswith(".md"))

PLACEHOLDER = re.compile(r"(\b[A-Z][A-Z0-9_]{1,}\b(?![a-z]))|\[|\||\.\.\.|<")
SUBCOMMANDS = {"rank", "evaluate", "compare", "validate", "calibrate", "check", "list", "collective", "gemm",
               "deepep", "profile", "runs", "mamf", "import-hf", "export", "attention", "memory", "launch", "topology",
               "sustained"}
NEEDS_ARGS = SUBCOMMANDS - {"rank", "validate", "list"}
WRITES = {"-o", "--into", "--trace"}


def commands(path):
    text = open(path, encoding="utf-8").read()
    found = []
    # Fenced blocks: each line (with continuations), and whether error lines follow it.
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):
        lines = block.split("\n")
        i = 0
        while i < len(lines):
            line = lines[i].strip()
            if line.startswith("$ "):
                line = line[2:]
            for prefix in ("./build/paraplan ", "build/paraplan "):
                if line.startswith(prefix):
                    line = "paraplan " + line[len(prefix):]
            if line.startswith("paraplan "):
                while line.endswith("\\") and i + 1 < len(lines):
                    i += 1
                    line = line[:-1] + " " + lines[i].strip()
                line = re.split(r"\s{3,}", line)[0]  # a synopsis line's description
                rest = "\n".join(lines[i + 1:])
                found.append((line, 2 if "error:" in rest.split("\n$ ")[0] else 0))
            i += 1
    # Code spans in prose.
    # (A span of subcommand words alone, such as `paraplan calibrate`, names a command.)
    for span in re.findall(r"`(?:\./)?(?:build/)?(paraplan [^`]+)`", text):
        words = span.split()[1:]
        if all(w in SUBCOMMANDS for w in words) and words and words[-1] in NEEDS_ARGS:
            continue
        found.append((span, 0))
    return found


def runnable(cmd):
    line = re.sub(r"\s+#.*$", "", cmd)  # a trailing comment
    line = line.split(" > ")[0]        # output redirected to a file: printed here instead
    if PLACEHOLDER.search(line.replace("paraplan", "")):
        return None, "placeholder"
    return line, None


def help_examples():
    """The examples each `--help` shows (lines starting with `paraplan` in its footer)."""
    found = []
    for sub in ([], ["rank"], ["evaluate"], ["compare"], ["validate"], ["check"], ["list"], ["calibrate"],
                ["calibrate", "collective"], ["calibrate", "gemm"], ["calibrate", "deepep"], ["calibrate", "profile"],
                ["calibrate", "runs"], ["calibrate", "mamf"], ["calibrate", "attention"], ["calibrate", "memory"],
                ["calibrate", "launch"]):
        out = subprocess.run([cli] + sub + ["--help"], capture_output=True, text=True).stdout.split("\n")
        i = 0
        while i < len(out):
            line = out[i].strip()
            if line.startswith("paraplan "):
                while line.endswith("\\") and i + 1 < len(out):
                    i += 1
                    line = line[:-1] + " " + out[i].strip()
                found.append((line.split("  #")[0].strip(), 0))
            i += 1
    return found


tmp = tempfile.mkdtemp(prefix="paraplan_docs_")
seen, ran, failed, needs_file, placeholders, long_fits = set(), 0, [], [], 0, []
for cmd, expect in [c for doc in docs for c in commands(doc)] + help_examples():
    if True:
        line, why = runnable(cmd)
        if line is None:
            placeholders += 1
            if os.environ.get("VERBOSE"):
                print(f"--   placeholder: {cmd}")
            continue
        if line in seen:
            continue
        seen.add(line)
        argv = shlex.split(line)[1:]
        # Inputs: paths (with a slash or a file suffix) must exist in the repository.
        missing = []
        out = []
        skip_next = False
        for k, a in enumerate(argv):
            if skip_next:
                skip_next = False
                continue
            if a in WRITES and k + 1 < len(argv):
                out += [a, os.path.join(tmp, str(len(seen)), os.path.basename(argv[k + 1]) or "out")]
                skip_next = True
                continue
            looks_like_file = ("/" in a or re.search(r"\.(json|yaml|yml|csv|log)$", a)) and not a.startswith("-") \
                and "=" not in a
            if looks_like_file and not any(c in a for c in "*?") and not os.path.exists(os.path.join(root, a)):
                missing.append(a)
            out.append(a)
        if missing:
            needs_file.append((line, missing))
            continue
        # Globs expand as a shell would.
        expanded = []
        for a in out:
            if any(c in a for c in "*?"):
                import glob
                hits = sorted(glob.glob(os.path.join(root, a)))
                expanded += [os.path.relpath(h, root) for h in hits] or [a]
            else:
                expanded.append(a)
        if sanitized and expanded[:2] == ["calibrate", "runs"] and \
                sum(a.endswith(".yaml") for a in expanded) > 8:
            long_fits.append(line)
            continue
        p = subprocess.run([cli] + expanded, cwd=root, capture_output=True, text=True, timeout=timeout)
        ran += 1
        ok = p.returncode == expect and (p.stdout.strip() or p.stderr.strip())
        print(("ok  " if ok else "FAIL") + f" exit {p.returncode} (expected {expect}): {line}")
        if not ok:
            failed.append(line)
            sys.stdout.write(p.stdout[-2000:] + p.stderr[-2000:])

for line, missing in needs_file:
    print(f"--   needs the user's file ({', '.join(missing)}): {line}")
for line in long_fits:
    print(f"--   a recorded fit, run by the Release build only: {line}")
print(f"{ran} run, {len(failed)} failed, {len(needs_file)} need the user's files, {placeholders} with placeholders"
      + (f", {len(long_fits)} recorded fits left to the Release build" if long_fits else ""))
sys.exit(1 if failed or ran == 0 else 0)
