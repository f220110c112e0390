#!/usr/bin/env python3
"""Emitted C++ (kiln compile --target cpp) against kiln's own runtime (kiln bench) on the same
model and threads, in alternating rounds of one run: per round each side's median latency, then
the median over rounds of each side and of the per-round ratio emitted/runtime. Also the
emitted program's size and weights.bin's.

    bench/codegen.py [--models "resnet18 mobilenet_v2"] [--threads 1] [--rounds 5] [--runs 20]
                     [--flags "--no-onednn"] [--out FILE]

Needs a built kiln (make) and the shared models (KILN_SHARED, default ../shared). Writes a
markdown table to stdout and to --out (default bench/results/codegen-<date>.md).
"""
import argparse
import datetime
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LATENCY = re.compile(r"latency:\s+median ([0-9.]+) ms")


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stdout}{r.stderr}")
    return r.stdout


def median_of(out):
    m = LATENCY.search(out)
    if not m:
        sys.exit(f"no latency in:\n{out}")
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="resnet18 mobilenet_v2 bert_tiny_op13")
    ap.add_argument("--threads", default="1")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--flags", default="")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    shared = os.environ.get("KILN_SHARED", os.path.join(HERE, "..", "shared"))
    kiln = os.path.join(HERE, "build", "kiln")
    if not os.path.exists(kiln):
        sys.exit("build kiln first (make)")
    out = a.out or os.path.join(HERE, "bench", "results",
                                "codegen-" + datetime.datetime.now().strftime("%Y%m%d-%H%M") + ".md")
    rows = []
    work = tempfile.mkdtemp(prefix="kiln-codegen-bench-")
    try:
        for model in a.models.split():
            path = os.path.join(shared, "models", model, "model.onnx")
            for t in [int(x) for x in a.threads.split(",")]:
                proj = os.path.join(work, f"{model}-{t}")
                run([kiln, "compile", path, "--target", "cpp", "-o", proj, "--threads", str(t)] + a.flags.split())
                run(["cmake", "-S", proj, "-B", os.path.join(proj, "build")])
                run(["cmake", "--build", os.path.join(proj, "build")])
                exe = os.path.join(proj, "build", "kiln_model_main")
                emitted, runtime, ratios = [], [], []
                for r in range(a.rounds):
                    pair = []
                    order = ["emitted", "runtime"] if r % 2 == 0 else ["runtime", "emitted"]
                    got = {}
                    for side in order:
                        if side == "emitted":
                            got[side] = median_of(run([exe, "--runs", str(a.runs)]))
                        else:
                            got[side] = median_of(run([kiln, "bench", path, "--threads", str(t), "--runs", str(a.runs)]))
                    emitted.append(got["emitted"])
                    runtime.append(got["runtime"])
                    ratios.append(got["emitted"] / got["runtime"])
                rows.append((model, t, statistics.median(emitted), min(emitted), max(emitted), statistics.median(runtime),
                             min(runtime), max(runtime), statistics.median(ratios), os.path.getsize(exe),
                             os.path.getsize(os.path.join(proj, "weights.bin"))))
                print(f"{model} {t}T: emitted {rows[-1][2]:.3f} ms, runtime {rows[-1][5]:.3f} ms", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    lines = [f"# Emitted C++ vs kiln's runtime ({datetime.date.today()}, {a.rounds} alternating rounds of {a.runs} runs"
             f"{', flags ' + a.flags if a.flags else ''})", "",
             "Command: `bench/codegen.py " + " ".join(sys.argv[1:]) + "`", "",
             "| model | threads | emitted median ms (min-max) | kiln bench median ms (min-max) | emitted/runtime (median of rounds) | program bytes | weights.bin bytes |",
             "|---|---|---|---|---|---|---|"]
    for m, t, e, e0, e1, k, k0, k1, ratio, size, weights in rows:
        lines.append(f"| {m} | {t} | {e:.3f} ({e0:.3f}-{e1:.3f}) | {k:.3f} ({k0:.3f}-{k1:.3f}) | {ratio:.2f} | {size} | {weights} |")
    text = "\n".join(lines) + "\n"
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
