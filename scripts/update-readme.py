#!/usr/bin/env python3
"""Rewrites every ```console block of README.md that starts with "$ kvfit ARGS" with the real output of
build/kvfit (run from the repository root), keeping a trailing "$ echo $?" line with the real exit status.
tests/test_readme.cpp checks the same blocks; run this after a change that alters the printed output."""
import os, re, shlex, subprocess, sys
from pathlib import Path

root = Path(__file__).resolve().parent.parent
binary = Path(os.environ.get("KVFIT", root / "build" / "kvfit"))  # KVFIT=path/to/kvfit to use another build
readme = root / "README.md"

def run(args):
    r = subprocess.run(f"{shlex.quote(str(binary))} {args}", shell=True, cwd=root, capture_output=True, text=True)
    return r.stderr + r.stdout, r.returncode

def rewrite(block):
    lines = block.split("\n")
    if not lines[0].startswith("$ kvfit"):
        return block
    out, status = run(lines[0][len("$ kvfit"):])
    result = [lines[0]] + out.rstrip("\n").split("\n")
    if "$ echo $?" in lines:
        result += ["$ echo $?", str(status)]
    return "\n".join(result)

text = readme.read_text()
new = re.sub(r"(?<=```console\n)(.*?)(?=\n```)", lambda m: rewrite(m.group(1)), text, flags=re.S)
readme.write_text(new)
print("README.md: console examples regenerated" if new != text else "README.md: unchanged", file=sys.stderr)
