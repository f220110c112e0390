"""A plain (tanh) RNN model beside the zoo's GRU one, to check that every recurrent op runs on
the fast backend.

    /usr/bin/python3 ../shared/peers/export_models.py DIR --zoo recurrent \
        --models-file bench/recurrent_models.py

adds rnn_speech: two bidirectional tanh RNN layers of 256 units over 100 frames of 80 features
and a linear classifier (gru_speech's shape with nn.RNN).
"""
import torch
import torch.nn as nn

import peer_models


class RNNSpeech(nn.Module):
    def __init__(self, feats=80, hidden=256, layers=2, n_classes=32):
        super().__init__()
        self.rnn = nn.RNN(feats, hidden, num_layers=layers, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * hidden, n_classes)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.head(y)


def build(name, cfg, seed, gen):
    model = RNNSpeech().eval()
    x = torch.randn((1, 100, 80), generator=torch.Generator().manual_seed(seed + 2))
    return model, (x,), ["features"], ["logits"], None


peer_models.BUILDERS["rnn"] = build
peer_models.MODELS["rnn_speech"] = dict(kind="rnn", opset=13, zoo="recurrent")
