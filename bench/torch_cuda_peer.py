#!/usr/bin/env python3
"""PyTorch eager on the GPU: latency of resnet18, mobilenet_v2 and bert_tiny_op13 rebuilt by the
shared peers' peer_models.py (same architectures as the shared models), FP32 with TF32 off (as
the CUDA target's cuBLAS calls), at batch 1 and 8, inputs already on the device.

    python3 bench/torch_cuda_peer.py PEER_MODELS_DIR [--runs N]
"""
import argparse
import statistics
import sys
import time

import torch

ap = argparse.ArgumentParser()
ap.add_argument("peers")
ap.add_argument("--runs", type=int, default=200)
a = ap.parse_args()
sys.path.insert(0, a.peers)
import peer_models  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}")
for name in ["resnet18", "mobilenet_v2", "bert_tiny_op13"]:
    model, inputs, *_ = peer_models.build(name)
    model = model.cuda().eval()
    for batch in (1, 8):
        xs = tuple(torch.cat([x] * batch, 0).cuda() for x in inputs)
        with torch.inference_mode():
            for _ in range(20):
                model(*xs)
            torch.cuda.synchronize()
            ms = []
            for _ in range(a.runs):
                t0 = time.perf_counter()
                model(*xs)
                torch.cuda.synchronize()
                ms.append((time.perf_counter() - t0) * 1e3)
        ms.sort()
        print(f"{name} batch {batch}: median {statistics.median(ms):.3f} ms, p10 {ms[len(ms) // 10]:.3f}, "
              f"p90 {ms[len(ms) * 9 // 10]:.3f} ({a.runs} runs)")
