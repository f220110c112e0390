#!/usr/bin/python3
"""Summarizes an ONNX Runtime profile trace (bench/ort_profile.js): the mean time per run of
each op type, then the slowest nodes.  Usage: ort_profile_summary.py TRACE.json RUNS [TOP]"""
import collections
import json
import sys

events = json.load(open(sys.argv[1]))
runs = int(sys.argv[2])
top = int(sys.argv[3]) if len(sys.argv) > 3 else 30
by_op = collections.defaultdict(float)
by_node = collections.defaultdict(float)
for e in events:
    if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
        by_op[e["args"]["op_name"]] += e["dur"]
        by_node[(e["args"]["op_name"], e["name"][: -len("_kernel_time")])] += e["dur"]
print(f"ORT kernel time per run: {sum(by_op.values()) / runs / 1000:.3f} ms")
for op, us in sorted(by_op.items(), key=lambda x: -x[1]):
    print(f"{op:30s} {us / runs / 1000:8.3f} ms")
print()
for (op, node), us in sorted(by_node.items(), key=lambda x: -x[1])[:top]:
    print(f"  {op:20s} {node[:70]:70s} {us / runs:9.1f} us")
