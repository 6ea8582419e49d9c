#!/usr/bin/env python3
"""Seeds for the gguf fuzz target: GGUF files of a few kilobytes (a real one
is megabytes of tensor data the fuzzer would only truncate), each with a
vocabulary ("llama" with scores, or "gpt2" with merges) and a tensor of
each type the loader takes, under llama.cpp's names.

    python3 tests/fuzz/small_gguf.py OUT_DIR
"""
import os
import random
import struct
import sys

U32, I32, F32, BOOL, STR, ARR = 4, 5, 6, 7, 8, 9
BLOCK = {0: (1, 4), 1: (1, 2), 30: (1, 2), 8: (32, 34), 2: (32, 18), 12: (256, 144), 13: (256, 176), 14: (256, 210)}


def s(text):
    b = text.encode()
    return struct.pack("<Q", len(b)) + b


def kv(key, kind, payload):
    return s(key) + struct.pack("<I", kind) + payload


def strings(items):
    return struct.pack("<IQ", STR, len(items)) + b"".join(s(x) for x in items)


def gguf(model, seed):
    rng = random.Random(seed)
    tokens = ["<unk>", "<s>", "</s>", "\u2581a", "b", "\u2581ab", "c", "\u2581abc"]
    meta = [kv("general.architecture", STR, s("llama")),
            kv("llama.embedding_length", U32, struct.pack("<I", 256)),
            kv("llama.block_count", U32, struct.pack("<I", 1)),
            kv("llama.attention.head_count", U32, struct.pack("<I", 2)),
            kv("tokenizer.ggml.model", STR, s(model)),
            kv("tokenizer.ggml.tokens", ARR, strings(tokens)),
            kv("tokenizer.ggml.token_type", ARR, struct.pack("<IQ", I32, len(tokens)) +
               struct.pack("<8i", 2, 3, 3, 1, 1, 1, 1, 1)),
            kv("tokenizer.ggml.bos_token_id", U32, struct.pack("<I", 1))]
    if model == "llama":
        meta.append(kv("tokenizer.ggml.scores", ARR, struct.pack("<IQ", F32, len(tokens)) +
                       struct.pack("<8f", *[-float(i) for i in range(len(tokens))])))
    else:
        meta.append(kv("tokenizer.ggml.merges", ARR, strings(["\u2581 a", "a b", "\u2581a b"])))
        meta.append(kv("tokenizer.ggml.pre", STR, s("llama-bpe")))
    tensors = [("output_norm.weight", [256], 0), ("token_embd.weight", [256, 2], 1), ("blk.0.attn_q.weight", [256, 4], 8),
               ("blk.0.attn_k.weight", [256, 4], 2), ("blk.0.ffn_up.weight", [256, 2], 12),
               ("blk.0.ffn_down.weight", [256, 2], 13), ("output.weight", [256, 2], 14)]
    infos, data, offset = b"", b"", 0
    for name, ne, kind in tensors:
        per, size = BLOCK[kind]
        n = ne[0] // per * size * (ne[1] if len(ne) > 1 else 1)
        infos += s(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        infos += struct.pack("<IQ", kind, offset)
        blob = bytes(rng.randrange(256) for _ in range(n))
        blob += b"\0" * ((-len(blob)) % 32)
        data += blob
        offset += len(blob)
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(meta)) + b"".join(meta) + infos
    return head + b"\0" * ((-len(head)) % 32) + data


if __name__ == "__main__":
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for i, model in enumerate(["llama", "gpt2"]):
        with open(os.path.join(out, f"small-{model}.gguf"), "wb") as f:
            f.write(gguf(model, i))
