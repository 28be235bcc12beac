#!/usr/bin/env python3
"""Keeps one copy of a recorded graph that several llama.cpp releases share (issue 24 item 3).

  tools/graph_template/share_releases.py [data/graphs]

extract.py and graph2.py write one file per release, data/graphs/<name>.<release>.txt. Where the files of one <name>
are identical but for their `release` line and their `# recorded ...` comment, this writes data/graphs/<name>.txt whose
`release` line names every release (kvfit reads the releases from that line: graph_replay.cpp header_releases) and
whose comments keep each release's recording note, and removes the per-release files. Files that differ stay apart.
Also merges a new per-release file into an existing shared <name>.txt when its graph is the same. Prints what it did.
"""
import glob, os, re, sys

RELEASES = ("5b4ebc5", "v0.5.0")  # llama.cpp releases kvfit carries, in order (llamacpp.h llamacpp_release)


def split(text):
    """(releases, the comment lines, the rest with the release line and comments removed)"""
    rels, comments, body = [], [], []
    for line in text.splitlines(keepends=True):
        if line.startswith("release "):
            rels += line.split()[1:]
            body.append("release\n")  # its place, so that the rest compares line for line
        elif line.startswith("# "):
            comments.append(line)
        else:
            body.append(line)
    return rels, comments, "".join(body)


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "../../data/graphs")
    by_name = {}
    for f in sorted(glob.glob(os.path.join(d, "*.txt"))):
        stem = os.path.basename(f)[:-4]
        m = re.match(r"^(.*)\.(" + "|".join(re.escape(r) for r in RELEASES) + r")$", stem)
        by_name.setdefault(m.group(1) if m else stem, []).append(f)
    for name, files in sorted(by_name.items()):
        if len(files) < 2:
            continue
        parts = [(f, *split(open(f).read())) for f in files]
        bodies = {p[3] for p in parts}
        if len(bodies) != 1:
            print(f"{name}: {len(files)} files, graphs differ: kept apart")
            continue
        rels = sorted({r for p in parts for r in p[1]}, key=lambda r: RELEASES.index(r) if r in RELEASES else 99)
        comments = []
        for p in parts:
            for c in p[2]:
                if c not in comments: comments.append(c)
        body = parts[0][3].replace("release\n", "release " + " ".join(rels) + "\n", 1)
        # the comments after the header lines (kvfit-graph, arch, release, model, key), as recorded
        lines = body.splitlines(keepends=True)
        at = next((i + 1 for i, l in enumerate(lines) if l.startswith("key ")), 5)
        out = "".join(lines[:at] + comments + lines[at:])
        target = os.path.join(d, name + ".txt")
        for f in files:
            if f != target: os.remove(f)
        with open(target, "w") as fh: fh.write(out)
        print(f"{name}: one copy for {' '.join(rels)} ({len(files)} files -> {os.path.basename(target)})")


if __name__ == "__main__":
    main()
