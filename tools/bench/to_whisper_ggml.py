#!/usr/bin/env python3
"""Write whisper.cpp's ggml model file from a Hugging Face Whisper checkpoint,
for timing whisper.cpp beside archrun on the same weights
(docs/performance.md, "beside the peers").

Written from the format's description (whisper.cpp's models/ folder):
the magic 0x67676d6c; eleven int32 hyper-parameters (n_vocab, n_audio_ctx,
n_audio_state, n_audio_head, n_audio_layer, n_text_ctx, n_text_state,
n_text_head, n_text_layer, n_mels, ftype); the mel filter bank (n_mel,
n_fft, then n_mel x n_fft float32); the vocabulary (a count, then each
token's length and bytes); then each tensor: n_dims, the name's length and
the element type (0 float32, 1 float16), the dims innermost first, the name,
the data. Tensor names are OpenAI's (encoder.blocks.0.attn.query.weight);
conv biases are [n, 1]; vectors and the position tables stay float32, and
the two convolution kernels are float16 even in an f32 file (ggml's im2col
takes no other).

The filter bank is Slaney's mel scale with Slaney norm (80 or 128 bins,
n_fft 400, 16 kHz, 0-8 kHz), as archrun computes it (importer/audio/log_mel.cpp).
The vocabulary is the checkpoint's vocab.json (GPT-2's byte mapping undone)
where it has one, else placeholders: whisper-bench decodes no text.

No third-party modules: safetensors is a JSON header and raw bytes.

    python3 tools/bench/to_whisper_ggml.py CHECKPOINT_DIR OUT.bin [f16]
"""
import array
import json
import math
import os
import struct
import sys

CONV = {  # Hugging Face names -> OpenAI's, within a layer or at the top
    "self_attn.k_proj": "attn.key", "self_attn.q_proj": "attn.query", "self_attn.v_proj": "attn.value",
    "self_attn.out_proj": "attn.out", "self_attn_layer_norm": "attn_ln",
    "encoder_attn.k_proj": "cross_attn.key", "encoder_attn.q_proj": "cross_attn.query",
    "encoder_attn.v_proj": "cross_attn.value", "encoder_attn.out_proj": "cross_attn.out",
    "encoder_attn_layer_norm": "cross_attn_ln", "fc1": "mlp.0", "fc2": "mlp.2", "final_layer_norm": "mlp_ln",
}
TOP = {
    "encoder.layer_norm.weight": "encoder.ln_post.weight", "encoder.layer_norm.bias": "encoder.ln_post.bias",
    "encoder.embed_positions.weight": "encoder.positional_embedding",
    "decoder.layer_norm.weight": "decoder.ln.weight", "decoder.layer_norm.bias": "decoder.ln.bias",
    "decoder.embed_positions.weight": "decoder.positional_embedding",
    "decoder.embed_tokens.weight": "decoder.token_embedding.weight",
}
KEEP_F32 = {"encoder.conv1.bias", "encoder.conv2.bias", "encoder.positional_embedding", "decoder.positional_embedding"}
# ggml's im2col takes a convolution's kernel as float16 only: these are
# float16 in an f32 file too.
ALWAYS_F16 = {"encoder.conv1.weight", "encoder.conv2.weight"}


def openai_name(hf):
    """model.encoder.layers.3.self_attn.q_proj.weight -> encoder.blocks.3.attn.query.weight; None: not written."""
    if hf == "proj_out.weight":
        return None  # the token embedding, tied
    parts = hf.split(".")
    if parts[0] == "model":
        parts = parts[1:]
    if len(parts) > 3 and parts[1] == "layers":
        return ".".join([parts[0], "blocks", parts[2], CONV[".".join(parts[3:-1])], parts[-1]])
    name = ".".join(parts)
    return TOP.get(name, name)


def mel_filters(bins, n_fft=400, rate=16000, f_max=8000.0):
    """[bins][n_fft // 2 + 1]: Slaney triangles, each of unit area."""
    def hz_to_mel(f):
        return 3.0 * f / 200.0 if f < 1000.0 else 15.0 + math.log(f / 1000.0) * 27.0 / math.log(6.4)

    def mel_to_hz(m):
        return 200.0 * m / 3.0 if m < 15.0 else 1000.0 * math.exp(math.log(6.4) / 27.0 * (m - 15.0))

    nfreq = n_fft // 2 + 1
    fft = [(rate // 2) * i / (nfreq - 1) for i in range(nfreq)]
    m0, m1 = hz_to_mel(0.0), hz_to_mel(f_max)
    edges = [mel_to_hz(m0 + (m1 - m0) * i / (bins + 1)) for i in range(bins + 2)]
    out = []
    for m in range(bins):
        row = []
        for k in range(nfreq):
            down = -(edges[m] - fft[k]) / (edges[m + 1] - edges[m])
            up = (edges[m + 2] - fft[k]) / (edges[m + 2] - edges[m + 1])
            row.append(max(0.0, min(down, up)) * 2.0 / (edges[m + 2] - edges[m]))
        out.append(row)
    return out


def byte_decoder():
    """GPT-2's printable stand-ins for bytes, undone (vocab.json's spelling)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def floats(raw, dtype):
    """The tensor's values as an array('f')."""
    if dtype == "F32":
        a = array.array("f")
        a.frombytes(raw)
        return a
    if dtype == "F16":
        return array.array("f", struct.unpack("<%de" % (len(raw) // 2), raw))
    if dtype == "BF16":
        wide = bytearray(len(raw) * 2)
        wide[2::4], wide[3::4] = raw[0::2], raw[1::2]
        a = array.array("f")
        a.frombytes(bytes(wide))
        return a
    raise SystemExit("unsupported dtype %s" % dtype)


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    src, out = sys.argv[1], sys.argv[2]
    f16 = len(sys.argv) > 3 and sys.argv[3] == "f16"
    cfg = json.load(open(os.path.join(src, "config.json")))
    path = os.path.join(src, "model.safetensors")
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    header.pop("__metadata__", None)
    base = 8 + n
    w = open(out, "wb")
    w.write(struct.pack("<i", 0x67676D6C))
    for v in (cfg["vocab_size"], cfg["max_source_positions"], cfg["d_model"], cfg["encoder_attention_heads"],
              cfg["encoder_layers"], cfg.get("max_length") or cfg.get("max_target_positions", 448), cfg["d_model"],
              cfg["decoder_attention_heads"], cfg["decoder_layers"], cfg["num_mel_bins"], 1 if f16 else 0):
        w.write(struct.pack("<i", v))
    filters = mel_filters(cfg["num_mel_bins"])
    w.write(struct.pack("<ii", len(filters), len(filters[0])))
    for row in filters:
        w.write(struct.pack("<%df" % len(row), *row))
    vocab_path = os.path.join(src, "vocab.json")
    if os.path.exists(vocab_path):
        dec = byte_decoder()
        vocab = sorted(json.load(open(vocab_path, encoding="utf8")).items(), key=lambda kv: kv[1])
        tokens = [bytes(dec[c] for c in t) for t, _ in vocab]
    else:
        tokens = [b"<%d>" % i for i in range(cfg["vocab_size"] - 1)]
    w.write(struct.pack("<i", len(tokens)))
    for t in tokens:
        w.write(struct.pack("<i", len(t)) + t)
    with open(path, "rb") as f:
        for hf, info in header.items():
            name = openai_name(hf)
            if name is None:
                continue
            shape = [d for d in info["shape"] if d != 1] or [1]  # squeezed, as the reference converter does
            if name in ("encoder.conv1.bias", "encoder.conv2.bias"):
                shape = shape + [1]
            begin, end = info["data_offsets"]
            f.seek(base + begin)
            raw = f.read(end - begin)
            half = (f16 and len(shape) >= 2 and name not in KEEP_F32) or name in ALWAYS_F16
            if info["dtype"] == "F32" and not half:
                data = raw
            else:
                values = floats(raw, info["dtype"])
                data = struct.pack("<%de" % len(values), *values) if half else values.tobytes()
            enc = name.encode()
            w.write(struct.pack("<iii", len(shape), len(enc), 1 if half else 0))
            for d in reversed(shape):
                w.write(struct.pack("<i", d))
            w.write(enc)
            w.write(data)
    w.close()
    print("%s: %d tensors, %s" % (out, len(header), "f16 matrices" if f16 else "f32"))


if __name__ == "__main__":
    main()
