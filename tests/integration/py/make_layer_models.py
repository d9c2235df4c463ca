#!/usr/bin/python3
"""Fixtures for the user task's model check over torch.nn's train/eval layers: small classifiers
as a user would write them around each layer, made by PyTorch itself, scripted and traced.

Writes into --out DIR:
  tokens.safetensors      64 samples: "inputs" int64 token ids [64, 8] (vocabulary 16),
                          "targets" int64 class ids [64] (4 classes)
  scripted-NAME.pt        torch.jit.script of the classifier around layer NAME (LAYERS below),
                          in train mode, dropout probabilities above 0
  traced-NAME.pt          torch.jit.trace of the classifiers in TRACED below (in train mode
                          unless the name says eval; with gradients unless it says no_grad)
  transformer.pt          a scripted TransformerEncoder classifier with dropout 0, and its data
  expected.txt            one line per model file above: "NAME.pt accepted random",
                          "NAME.pt accepted deterministic" or "NAME.pt refused": what the worker's
                          model check must answer, and whether a training step draws random
                          numbers (found here by running it under two seeds: an oracle for the
                          worker's reading of the graph). test_user_task_layers.cpp and the GPU
                          check read this file.
  transformer-train.safetensors, transformer-eval.safetensors   (256 and 128 samples) for the
                          step-by-step comparison with PyTorch DDP: the class is the most frequent
                          of four token groups, which mean-pooled attention learns
Every classifier maps token ids [B, 8] -> embedding [B, 8, 8] -> the layer -> mean -> logits
[B, 4]. Each scripted one is checked here to change its output between train() and eval()
(dropout, batch statistics), or not where its layer has no mode (MODE_FREE), so the files hold
what their names say.
"""
import argparse
import contextlib
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "examples"))
from make_user_task import save_safetensors  # noqa: E402

VOCAB, LENGTH, WIDTH, CLASSES = 16, 8, 8, 4


class Classifier(nn.Module):
    """Token ids -> embedding -> `body` -> mean over the sequence -> linear. `shape` says what the
    body takes: "seq" [B, L, E]; "channels" [B, E, L]; "2d" [B, E, L, 1]; "3d" [B, E, L, 1, 1]."""

    shape: str

    def __init__(self, body, shape="seq"):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.body = body
        self.shape = shape
        self.head = nn.Linear(WIDTH, CLASSES)

    def forward(self, tokens):
        x = self.embed(tokens)  # [B, L, E]
        if self.shape == "seq":
            x = self.body(x)
        else:
            channels = x.transpose(1, 2)  # [B, E, L]
            c = channels
            if self.shape == "2d":
                c = c.unsqueeze(-1)
            elif self.shape == "3d":
                c = c.unsqueeze(-1).unsqueeze(-1)
            x = self.body(c).reshape(channels.shape).transpose(1, 2)
        return self.head(x.mean(dim=1))


class Attention(nn.Module):
    """nn.MultiheadAttention as self-attention: it returns (output, weights)."""

    def __init__(self, dropout):
        super().__init__()
        self.attn = nn.MultiheadAttention(WIDTH, 2, dropout=dropout, batch_first=True)

    def forward(self, x):
        return self.attn(x, x, x)[0]


class Decoder(nn.Module):
    """A decoder layer (or stack) attending to its own input as the memory."""

    def __init__(self, decoder):
        super().__init__()
        self.decoder = decoder

    def forward(self, x):
        return self.decoder(x, x)


class Recurrent(nn.Module):
    """LSTM, GRU or RNN: they return (output, state)."""

    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x):
        return self.rnn(x)[0]


class HandDropout(nn.Module):
    """Dropout written by hand the way torch.nn's attention does it: a constant train flag,
    reached only under `if self.training`."""

    def forward(self, x):
        if self.training:
            x = F.dropout(x, 0.3)
        return x


def encoder_layer(dropout):
    return nn.TransformerEncoderLayer(WIDTH, 2, 16, dropout=dropout, batch_first=True)


def decoder_layer(dropout):
    return nn.TransformerDecoderLayer(WIDTH, 2, 16, dropout=dropout, batch_first=True)


def rnn(kind, **kw):
    return Recurrent(kind(WIDTH, WIDTH, num_layers=2, dropout=0.2, batch_first=True, **kw))


# name -> the classifier around that layer. The C++ table test names each of these.
LAYERS = {
    "multihead_attention": lambda: Classifier(Attention(0.2)),
    "transformer_encoder_layer": lambda: Classifier(encoder_layer(0.2)),
    "transformer_encoder": lambda: Classifier(nn.TransformerEncoder(encoder_layer(0.2), 2)),
    "transformer_decoder_layer": lambda: Classifier(Decoder(decoder_layer(0.2))),
    "transformer_decoder":
        lambda: Classifier(Decoder(nn.TransformerDecoder(decoder_layer(0.2), 2))),
    "transformer": lambda: Classifier(Decoder(nn.Transformer(
        WIDTH, 2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=16, dropout=0.2,
        batch_first=True))),
    "lstm": lambda: Classifier(rnn(nn.LSTM)),
    "lstm_bidirectional": lambda: Classifier(nn.Sequential(
        rnn(nn.LSTM, bidirectional=True), nn.Linear(2 * WIDTH, WIDTH))),
    "gru": lambda: Classifier(rnn(nn.GRU)),
    "rnn_tanh": lambda: Classifier(rnn(nn.RNN)),
    "rnn_relu": lambda: Classifier(rnn(nn.RNN, nonlinearity="relu")),
    "batch_norm_1d": lambda: Classifier(nn.BatchNorm1d(WIDTH), "channels"),
    "batch_norm_1d_no_running_stats":
        lambda: Classifier(nn.BatchNorm1d(WIDTH, track_running_stats=False), "channels"),
    "batch_norm_2d": lambda: Classifier(nn.BatchNorm2d(WIDTH), "2d"),
    "batch_norm_3d": lambda: Classifier(nn.BatchNorm3d(WIDTH), "3d"),
    "instance_norm_1d": lambda: Classifier(nn.InstanceNorm1d(WIDTH, affine=True), "channels"),
    "instance_norm_1d_running_stats": lambda: Classifier(
        nn.InstanceNorm1d(WIDTH, affine=True, track_running_stats=True), "channels"),
    "instance_norm_2d_running_stats":
        lambda: Classifier(nn.InstanceNorm2d(WIDTH, track_running_stats=True), "2d"),
    "dropout": lambda: Classifier(nn.Dropout(0.3)),
    "dropout_inplace": lambda: Classifier(nn.Sequential(nn.ReLU(), nn.Dropout(0.3, inplace=True))),
    "dropout_1d": lambda: Classifier(nn.Dropout1d(0.3), "channels"),
    "dropout_2d": lambda: Classifier(nn.Dropout2d(0.3), "2d"),
    "dropout_3d": lambda: Classifier(nn.Dropout3d(0.3), "3d"),
    "alpha_dropout": lambda: Classifier(nn.AlphaDropout(0.3)),
    "feature_alpha_dropout": lambda: Classifier(nn.FeatureAlphaDropout(0.3), "2d"),
    "rrelu": lambda: Classifier(nn.RReLU()),
    "hand_written_dropout": lambda: Classifier(HandDropout()),
}

# Layers whose output is the same in both modes: without running statistics, batch and instance
# norm always normalise by the batch's own (their op's train flag is a constant).
MODE_FREE = {"batch_norm_1d_no_running_stats", "instance_norm_1d"}

# name -> the classifier torch.jit.trace records (in train mode unless the name says eval). The
# C++ table expects each refused (its dropout or batch norm is fixed to the traced mode) but those
# in TRACED_MODE_FREE, whose layers have no mode.
TRACED = {
    "dropout": lambda: LAYERS["dropout"](),
    "dropout_eval": lambda: LAYERS["dropout"]().eval(),
    "batch_norm_1d": lambda: LAYERS["batch_norm_1d"](),
    "lstm": lambda: LAYERS["lstm"](),
    "rrelu": lambda: LAYERS["rrelu"](),
    # In eval mode without gradients torch.nn takes its fast path, which has no dropout.
    "transformer_encoder_layer_eval_no_grad": lambda: LAYERS["transformer_encoder_layer"]().eval(),
    # Traced around a scripted block: the block reads `training`, the traced dropout does not.
    "dropout_around_scripted_encoder": lambda: Classifier(nn.Sequential(
        torch.jit.script(encoder_layer(0.2)), nn.Dropout(0.3))),
    "dropout_zero": lambda: Classifier(nn.Dropout(0.0)),
    "batch_norm_1d_no_running_stats": lambda: LAYERS["batch_norm_1d_no_running_stats"](),
}
TRACED_MODE_FREE = {"dropout_zero", "batch_norm_1d_no_running_stats"}


def tokens(n, seed):
    """Token ids and, as the class, the most frequent of four token groups (ties: the lowest)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, VOCAB, (n, LENGTH), generator=g)
    counts = F.one_hot(x // (VOCAB // CLASSES), CLASSES).sum(dim=1)
    return x, counts.argmax(dim=1)


def mode_matters(model, x):
    """Whether train() and eval() give different outputs (the same random draws in both)."""
    outs = []
    for train in (True, False):
        model.train(train)
        torch.manual_seed(0)
        with torch.no_grad():
            outs.append(model(x))
    model.train()
    return not torch.equal(outs[0], outs[1])


def draws_random_numbers(model, x):
    """Whether two training forwards under different seeds give different outputs."""
    outs = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        with torch.no_grad():
            outs.append(model(x))
    return not torch.equal(outs[0], outs[1])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    out = p.parse_args().out
    os.makedirs(out, exist_ok=True)
    path = lambda name: os.path.join(out, name)  # noqa: E731
    x, y = tokens(64, 1)
    save_safetensors({"inputs": x, "targets": y}, path("tokens.safetensors"))
    for name, make in LAYERS.items():
        torch.manual_seed(0)
        scripted = torch.jit.script(make().train())
        if mode_matters(scripted, x[:4]) == (name in MODE_FREE):
            sys.exit(f"make_layer_models: {name}'s output "
                     f"{'changes' if name in MODE_FREE else 'does not change'} with the mode")
        scripted.save(path(f"scripted-{name}.pt"))
    for name, make in TRACED.items():
        torch.manual_seed(0)
        model = make()
        with torch.no_grad() if name.endswith("_no_grad") else contextlib.nullcontext():
            traced = torch.jit.trace(model, x[:2], check_trace=False)
        traced.save(path(f"traced-{name}.pt"))

    torch.manual_seed(5)
    transformer = Classifier(nn.TransformerEncoder(encoder_layer(0.0), 2))
    torch.jit.script(transformer).save(path("transformer.pt"))

    def verdict(name):
        model = torch.jit.load(path(name)).train()
        return "random" if draws_random_numbers(model, x[:8]) else "deterministic"

    with open(path("expected.txt"), "w") as f:
        for name in LAYERS:
            f.write(f"scripted-{name}.pt accepted {verdict(f'scripted-{name}.pt')}\n")
        for name in TRACED:
            file = f"traced-{name}.pt"
            f.write(f"{file} accepted {verdict(file)}\n" if name in TRACED_MODE_FREE
                    else f"{file} refused\n")
        f.write(f"transformer.pt accepted {verdict('transformer.pt')}\n")
    for split, n, seed in (("train", 256, 2), ("eval", 128, 3)):
        xs, ys = tokens(n, seed)
        save_safetensors({"inputs": xs, "targets": ys}, path(f"transformer-{split}.safetensors"))


if __name__ == "__main__":
    main()
