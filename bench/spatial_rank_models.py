"""Models of other spatial ranks than images: a 1-D audio CNN on raw waveforms and a 3-D video
ResNet, to check that convolutions and pooling of every rank run on the fast backend.

    /usr/bin/python3 ../shared/peers/export_models.py DIR --zoo spatial_rank \
        --models-file bench/spatial_rank_models.py

adds m5_audio (M5, Dai et al. 2017: 1-D convs and max pools over one second of 16 kHz audio)
and r3d_18 (torchvision's 3-D ResNet-18 on 8 frames of 112x112). Weights are random, BatchNorm
statistics calibrated on random batches as peer_models does for the image models.
"""
import torch
import torch.nn as nn
import torchvision

import peer_models

NORMS = (nn.BatchNorm1d, nn.BatchNorm3d)


class M5(nn.Module):
    def __init__(self, n_classes=35, width=128):
        super().__init__()
        layers, c = [], 1
        for i, (k, s, out) in enumerate([(80, 4, width), (3, 1, width), (3, 1, 2 * width), (3, 1, 4 * width)]):
            layers += [nn.Conv1d(c, out, k, stride=s), nn.BatchNorm1d(out), nn.ReLU(), nn.MaxPool1d(4)]
            c = out
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(c, n_classes)

    def forward(self, x):
        x = self.features(x)
        return self.fc(nn.functional.adaptive_avg_pool1d(x, 1).flatten(1))


def calibrate(model, gen, shape):
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, NORMS):
                m.weight.copy_(0.75 + 0.5 * torch.rand(m.weight.shape, generator=gen))
                m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=gen))
                m.reset_running_stats()
                m.momentum = None
        model.train()
        old = torch.get_num_threads()
        torch.set_num_threads(1)
        for _ in range(2):
            model(torch.randn((2,) + tuple(shape[1:]), generator=gen))
        torch.set_num_threads(old)
    model.eval()


def build(name, cfg, seed, gen):
    shape = cfg["input_shape"]
    model = M5() if cfg["kind"] == "m5" else torchvision.models.video.r3d_18(weights=None)
    calibrate(model, gen, shape)
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed + 2))
    return model, (x,), ["input"], ["output"], None


peer_models.BUILDERS["m5"] = build
peer_models.BUILDERS["r3d"] = build
peer_models.MODELS["m5_audio"] = dict(kind="m5", opset=13, zoo="spatial_rank", input_shape=(1, 1, 16000))
peer_models.MODELS["r3d_18"] = dict(kind="r3d", opset=13, zoo="spatial_rank", input_shape=(1, 3, 8, 112, 112))
