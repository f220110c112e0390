#!/usr/bin/env python3
"""kiln and ONNX Runtime on a busy machine: each model's latency with and without one foreign
process spinning on a core (`yes > /dev/null`, as a user's other work would), both engines in the
same run (shared/peers/interleave.py), and how much each one's latency grows under the load.

    bench/under_load.py MODEL_DIR [MODEL_DIR ...] [--threads 2] [--rounds 5] [--runs 30] [--out FILE]

Each round times, for each model, kiln and ORT interleaved once quiet and once with the busy
process running (started just before, killed just after), so that quiet and loaded rounds see
the same drift of the machine. Reported per model: the medians over rounds of each side quiet
and loaded, growth = loaded / quiet for each engine, and whether kiln's growth is at most
ORT's. Needs a built kiln (make) and the peers (bash ../shared/peers/setup.sh). The table goes
to stdout and to --out (default bench/results/under-load-<date>.md).
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def interleave(shared, model, threads, runs, kiln, json_path):
    cmd = ["/usr/bin/python3", os.path.join(shared, "peers", "interleave.py"), model, "--threads", str(threads),
           "--rounds", "1", "--runs", str(runs), "--json", json_path,
           "--ours", f"{kiln} bench {{model_onnx}} --threads {{threads}} --runs {runs} --warmup 5 --json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stdout}{r.stderr}")
    with open(json_path) as f:
        last = [json.loads(line) for line in f if line.strip()][-1]
    rnd = last["rounds"][-1]
    return rnd["ours"]["median_ms"], rnd["ort"]["median_ms"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+", metavar="MODEL_DIR")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    shared = os.environ.get("KILN_SHARED", os.path.join(HERE, "..", "shared"))
    kiln = os.path.join(HERE, "build", "kiln")
    if not os.path.exists(kiln):
        sys.exit("build kiln first (make)")
    if not os.path.exists(os.path.join(shared, "peers", "interleave.py")):
        sys.exit(f"no peers at {shared}/peers: set KILN_SHARED=DIR")
    out = a.out or os.path.join(HERE, "bench", "results",
                                "under-load-" + datetime.datetime.now().strftime("%Y%m%d-%H%M") + ".md")
    times = {m: {"quiet": ([], []), "loaded": ([], [])} for m in a.models}
    with tempfile.TemporaryDirectory(prefix="kiln-under-load-") as tmp:
        j = os.path.join(tmp, "rounds.jsonl")
        for rnd in range(a.rounds):
            for m in a.models:
                # Alternate which condition goes first, as interleave.py alternates the engines.
                for cond in (("quiet", "loaded") if rnd % 2 == 0 else ("loaded", "quiet")):
                    busy = subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) if cond == "loaded" else None
                    try:
                        k, o = interleave(shared, os.path.abspath(m), a.threads, a.runs, kiln, j)
                    finally:
                        if busy:
                            busy.kill()
                            busy.wait()
                    times[m][cond][0].append(k)
                    times[m][cond][1].append(o)
                    print(f"{os.path.basename(m)} round {rnd + 1} {cond}: kiln {k:.3f} ms, ORT {o:.3f} ms", flush=True)
    lines = [f"# Latency under load: one `yes > /dev/null` on the machine "
             f"({datetime.datetime.utcnow().strftime('%Y-%m-%dT%H:%MZ')}, {os.cpu_count()} cores, "
             f"{a.threads} threads, {a.rounds} rounds)", "",
             f"Command: `bench/under_load.py {' '.join(a.models)} --threads {a.threads} --rounds {a.rounds} --runs {a.runs}`",
             "", "| model | kiln quiet ms | kiln loaded ms | kiln growth | ORT quiet ms | ORT loaded ms | ORT growth | kiln grows no more than ORT |",
             "|---|---|---|---|---|---|---|---|"]
    for m in a.models:
        kq, oq = (statistics.median(v) for v in times[m]["quiet"])
        kl, ol = (statistics.median(v) for v in times[m]["loaded"])
        gk, go = kl / kq, ol / oq
        lines.append(f"| {os.path.basename(m)} | {kq:.3f} | {kl:.3f} | {gk:.2f} | {oq:.3f} | {ol:.3f} | {go:.2f} | "
                     f"{'yes' if gk <= go else 'no'} |")
    text = "\n".join(lines) + "\n"
    print("\n" + text)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
