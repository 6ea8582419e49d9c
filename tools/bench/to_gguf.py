#!/usr/bin/env python3
"""Write a GGUF file from a Hugging Face llama, qwen2 or qwen3 checkpoint, for timing
llama.cpp beside archrun on the same weights (docs/performance.md).

Only what a side-by-side benchmark needs: BF16 or F32 matrices as stored
(norm vectors as F32), the hyper-parameters llama.cpp reads, and no tokenizer
(llama.cpp's "none" vocabulary with the model's vocab size; llama-bench feeds
random token ids), or a byte-level BPE tokenizer.json's vocabulary and merges
(llama-server detokenizes what it streams, so it needs one: Qwen's, from
../shared/tokenizers/qwen3, padded to the model's vocab size). Quantize the
result with llama.cpp's llama-quantize.

No third-party modules: safetensors is a JSON header and raw bytes, and GGUF
is a header of typed key/values and tensor descriptions, then aligned data.

    python3 tools/bench/to_gguf.py CHECKPOINT_DIR OUT.gguf [TOKENIZER.json]
"""
import json
import os
import struct
import sys

ALIGN = 32                       # GGUF's default alignment
GGML = {"F32": 0, "F16": 1, "BF16": 30}
U32, I32, F32, STR, ARR = 4, 5, 6, 8, 9  # GGUF value types


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    header.pop("__metadata__", None)
    return header, 8 + n


def gguf_name(hf):
    """The GGUF tensor name llama.cpp expects for a Hugging Face one."""
    fixed = {"model.embed_tokens.weight": "token_embd.weight",
             "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    if hf in fixed:
        return fixed[hf]
    parts = hf.split(".")  # model.layers.N.<module>.<proj>.<weight|bias>
    if parts[:2] != ["model", "layers"]:
        return None
    layer, rest = parts[2], ".".join(parts[3:])
    table = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
             "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
             "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
             "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down",
             "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm"}
    module, kind = rest.rsplit(".", 1)
    return f"blk.{layer}.{table[module]}.{kind}" if module in table else None


def bf16_to_f32(raw):
    out = bytearray(len(raw) * 2)
    out[2::4] = raw[0::2]
    out[3::4] = raw[1::2]
    return bytes(out)


def interleave_rope_rows(raw, n_heads, row_bytes):
    """llama.cpp's llama architecture rotates adjacent pairs; Hugging Face's
    rotates the two halves of each head. Reorder Q/K rows so both compute the
    same thing: within a head, rows i and i + d/2 become neighbours."""
    rows = len(raw) // row_bytes
    d = rows // n_heads
    out = bytearray()
    for h in range(n_heads):
        for i in range(d // 2):
            for r in (h * d + i, h * d + d // 2 + i):
                out += raw[r * row_bytes:(r + 1) * row_bytes]
    return bytes(out)


class Writer:
    def __init__(self):
        self.kv = bytearray()
        self.n_kv = 0

    @staticmethod
    def string(s):
        b = s.encode()
        return struct.pack("<Q", len(b)) + b

    def add(self, key, kind, value):
        self.n_kv += 1
        self.kv += self.string(key) + struct.pack("<I", kind)
        if kind == U32:
            self.kv += struct.pack("<I", value)
        elif kind == F32:
            self.kv += struct.pack("<f", value)
        elif kind == STR:
            self.kv += self.string(value)
        else:
            raise ValueError(kind)

    def add_array(self, key, kind, values):
        self.n_kv += 1
        self.kv += self.string(key) + struct.pack("<IIQ", ARR, kind, len(values))
        if kind == STR:
            self.kv += b"".join(self.string(v) for v in values)
        elif kind == I32:
            self.kv += struct.pack(f"<{len(values)}i", *values)
        else:
            raise ValueError(kind)


def add_bpe_tokenizer(w, path, vocab_size):
    """A byte-level BPE tokenizer.json as llama.cpp's gpt2-style vocabulary
    (tokens by id, added tokens as control, merges), padded to vocab_size."""
    tok = json.load(open(path))
    model = tok["model"]
    if model.get("type") != "BPE":
        sys.exit(f"to_gguf: {path} is not a BPE tokenizer")
    tokens = [None] * vocab_size
    types = [1] * vocab_size               # 1: normal, 3: control, 4: user-defined (padding)
    for t, i in model["vocab"].items():
        if i < vocab_size:
            tokens[i] = t
    for a in tok.get("added_tokens", []):
        if a["id"] < vocab_size:
            tokens[a["id"]] = a["content"]
            types[a["id"]] = 3 if a.get("special") else 4
    for i, t in enumerate(tokens):
        if t is None:
            tokens[i], types[i] = f"[PAD{i}]", 4
    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]
    w.add("tokenizer.ggml.model", STR, "gpt2")
    w.add("tokenizer.ggml.pre", STR, "qwen2")
    w.add_array("tokenizer.ggml.tokens", STR, tokens)
    w.add_array("tokenizer.ggml.token_type", I32, types)
    w.add_array("tokenizer.ggml.merges", STR, merges)
    eos = next((a["id"] for a in tok.get("added_tokens", []) if a["content"] in ("<|endoftext|>", "</s>")), None)
    if eos is not None:
        w.add("tokenizer.ggml.eos_token_id", U32, eos)


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    src, out_path = sys.argv[1], sys.argv[2]
    tokenizer = sys.argv[3] if len(sys.argv) == 4 else None
    cfg = json.load(open(os.path.join(src, "config.json")))
    arch = {"qwen2": "qwen2", "qwen3": "qwen3", "llama": "llama"}.get(cfg["model_type"])
    if arch is None:
        sys.exit(f"to_gguf: model_type {cfg['model_type']!r} is not llama, qwen2 or qwen3")
    files = sorted(f for f in os.listdir(src) if f.endswith(".safetensors"))
    heads, kv_heads = cfg["num_attention_heads"], cfg.get("num_key_value_heads", cfg["num_attention_heads"])
    head_dim = cfg.get("head_dim", cfg["hidden_size"] // heads)

    w = Writer()
    w.add("general.architecture", STR, arch)
    w.add("general.name", STR, os.path.basename(os.path.normpath(src)))
    w.add("general.alignment", U32, ALIGN)
    w.add(f"{arch}.context_length", U32, cfg.get("max_position_embeddings", 4096))
    w.add(f"{arch}.embedding_length", U32, cfg["hidden_size"])
    w.add(f"{arch}.block_count", U32, cfg["num_hidden_layers"])
    w.add(f"{arch}.feed_forward_length", U32, cfg["intermediate_size"])
    w.add(f"{arch}.attention.head_count", U32, heads)
    w.add(f"{arch}.attention.head_count_kv", U32, kv_heads)
    w.add(f"{arch}.attention.key_length", U32, head_dim)
    w.add(f"{arch}.attention.value_length", U32, head_dim)
    w.add(f"{arch}.rope.dimension_count", U32, head_dim)
    w.add(f"{arch}.rope.freq_base", F32, float(cfg.get("rope_theta", 10000.0)))
    w.add(f"{arch}.attention.layer_norm_rms_epsilon", F32, float(cfg.get("rms_norm_eps", 1e-6)))
    w.add(f"{arch}.vocab_size", U32, cfg["vocab_size"])
    if tokenizer:
        add_bpe_tokenizer(w, tokenizer, cfg["vocab_size"])
    else:
        w.add("tokenizer.ggml.model", STR, "none")

    # Tensor descriptions first: each a name, its dims innermost first, a
    # type and an offset into the aligned data section.
    tensors, offset = [], 0
    for f in files:
        header, base = read_safetensors(os.path.join(src, f))
        for hf, info in header.items():
            name = gguf_name(hf)
            if name is None:
                sys.exit(f"to_gguf: no GGUF name for tensor {hf}")
            dtype = info["dtype"]
            if dtype not in GGML:
                sys.exit(f"to_gguf: {hf} is {dtype}; only F32, F16 and BF16 are written")
            shape = info["shape"]
            out_type = "F32" if len(shape) == 1 else dtype
            begin, end = info["data_offsets"]
            size = (end - begin) * (2 if (out_type == "F32" and dtype != "F32") else 1)
            rope_heads = heads if name.endswith("attn_q.weight") else kv_heads if name.endswith("attn_k.weight") else 0
            tensors.append(dict(name=name, path=os.path.join(src, f), start=base + begin, length=end - begin,
                                dims=list(reversed(shape)), src_type=dtype, type=out_type, offset=offset,
                                rope_heads=rope_heads if arch == "llama" else 0))
            offset += (size + ALIGN - 1) // ALIGN * ALIGN

    head = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), w.n_kv) + w.kv)
    for t in tensors:
        head += w.string(t["name"]) + struct.pack("<I", len(t["dims"]))
        head += b"".join(struct.pack("<Q", d) for d in t["dims"])
        head += struct.pack("<IQ", GGML[t["type"]], t["offset"])
    head += b"\0" * (-len(head) % ALIGN)

    with open(out_path, "wb") as out:
        out.write(head)
        written = 0
        for i, t in enumerate(tensors):
            with open(t["path"], "rb") as f:
                f.seek(t["start"])
                raw = f.read(t["length"])
            if t["rope_heads"]:
                raw = interleave_rope_rows(raw, t["rope_heads"], len(raw) // t["dims"][1])
            if t["type"] == "F32" and t["src_type"] == "BF16":
                raw = bf16_to_f32(raw)
            elif t["type"] != t["src_type"]:
                sys.exit(f"to_gguf: cannot convert {t['src_type']} to {t['type']}")
            out.write(b"\0" * (t["offset"] - written))
            out.write(raw)
            written = t["offset"] + len(raw)
            if sys.stderr.isatty():
                print(f"\r[{i + 1}/{len(tensors)}] {t['name']}", end="", file=sys.stderr)
        out.write(b"\0" * (-written % ALIGN))
    print(f"\nwrote {out_path}: {len(tensors)} tensors", file=sys.stderr)


if __name__ == "__main__":
    main()
