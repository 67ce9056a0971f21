#!/usr/bin/python3
"""export_gpt2.py — a GPT-2-style decoder built from torch.nn modules (random weights: nothing is downloaded),
exported to ONNX for `flowc info --ranks N` at scale (issue 15).

    /usr/bin/python3 tools/export_gpt2.py OUT.onnx [--layers 24 --d 1024 --heads 16 --seq 256 --vocab 50257]

The defaults are GPT-2 medium's sizes (24 layers, d 1024, 16 heads, 355 M parameters with the 50257-token
vocabulary; a sequence of 256 instead of 1024 keeps the export quick). Each block is pre-LayerNorm causal
self-attention (one fused QKV projection, explicit matmuls and a constant causal mask) and a 4d GELU MLP,
each with a residual; the LM head is tied to nothing (its own weight). The input is `input_ids` [1, seq] (i64),
the output `logits` [1, seq, vocab].
"""
import argparse
import math

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, d, heads, seq):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.act = nn.GELU()
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), -1e4), diagonal=1))

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q = q.reshape(b, s, self.heads, self.hd).transpose(1, 2)
        k = k.reshape(b, s, self.heads, self.hd).transpose(1, 2)
        v = v.reshape(b, s, self.heads, self.hd).transpose(1, 2)
        att = torch.softmax(q @ k.transpose(2, 3) / math.sqrt(self.hd) + self.mask, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, d)
        x = x + self.proj(y)
        return x + self.out(self.act(self.fc(self.ln2(x))))


class GPT2(nn.Module):
    def __init__(self, layers, d, heads, seq, vocab):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Parameter(torch.randn(1, seq, d) * 0.02)
        self.blocks = nn.Sequential(*[Block(d, heads, seq) for _ in range(layers)])
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        return self.head(self.ln(self.blocks(self.tok(ids) + self.pos)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--d", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--vocab", type=int, default=50257)
    a = ap.parse_args()
    torch.manual_seed(0)
    model = GPT2(a.layers, a.d, a.heads, a.seq, a.vocab).eval()
    ids = torch.zeros(1, a.seq, dtype=torch.int64)
    with torch.no_grad():
        torch.onnx.export(model, (ids,), a.out, input_names=["input_ids"], output_names=["logits"], opset_version=17)


if __name__ == "__main__":
    main()
