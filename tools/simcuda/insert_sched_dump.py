#!/usr/bin/env python3
"""Inserts tools/simcuda/sched_dump.inc into a release's ggml/src/ggml-backend.cpp (tracing builds only:
tools/graph_template/build_trace.sh). Idempotent; exit 1 with a message when a marker is missing."""
import sys, pathlib
path = pathlib.Path(sys.argv[1])
inc = pathlib.Path(__file__).with_name("sched_dump.inc").read_text()
s = path.read_text()
if "sched_dump_graph" in s:
    sys.exit(0)
edits = [
    ("void ggml_backend_sched_split_graph(ggml_backend_sched_t sched, struct ggml_cgraph * graph) {",
     inc + "\nvoid ggml_backend_sched_split_graph(ggml_backend_sched_t sched, struct ggml_cgraph * graph) {", 1),
    ("    graph->uid = ggml_graph_next_uid();\n", "    graph->uid = ggml_graph_next_uid();\n    sched_dump_graph(sched, graph);\n", 1),
    ("/* .add_alloc_dep = */ [](void * user_data, ggml_tensor * tensor, ggml_tensor * until) {",
     "/* .add_alloc_dep = */ [](void * user_data, ggml_tensor * tensor, ggml_tensor * until) {\n            sched_dump_dep(tensor, until);", 1),
    ("    // set ids for all splits\n", "    sched_dump_copy(sched);\n    // set ids for all splits\n", 1),
]
for old, new, n in edits:
    if s.count(old) != n:
        sys.exit(f"insert_sched_dump: marker not found once in {path}: {old.strip()[:60]}")
    s = s.replace(old, new)
path.write_text(s)
