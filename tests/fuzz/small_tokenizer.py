#!/usr/bin/env python3
"""A real tokenizer.json cut down to a fuzzing seed of a few kilobytes.

Every component of the original (normalizer, pre-tokenizer, model kind,
post-processor, decoder, added tokens) is kept; the vocabulary keeps its
first KEEP ids, the merges those whose parts and result it still has, and
added tokens (the first 64) their ids as the library would give them. A seed this small
loads in well under a millisecond, where the original takes a tenth of a
second: the fuzzer spends its time on mutations, not on parsing megabytes.

    small_tokenizer.py IN.json OUT.json [KEEP]
"""
import json
import sys

src, dst = sys.argv[1], sys.argv[2]
keep = int(sys.argv[3]) if len(sys.argv) > 3 else 256
t = json.load(open(src, encoding="utf-8"))
model = t.get("model") or {}
vocab = model.get("vocab")
if isinstance(vocab, dict):  # BPE, WordPiece, WordLevel: {token: id}
    vocab = {k: v for k, v in vocab.items() if isinstance(v, int) and v < keep}
    model["vocab"] = vocab
    ids = dict(vocab)
    if isinstance(model.get("merges"), list):
        def whole(m):
            parts = m.split(" ") if isinstance(m, str) else m
            return len(parts) == 2 and all(p in vocab for p in parts) and "".join(parts) in vocab
        model["merges"] = [m for m in model["merges"] if whole(m)]
elif isinstance(vocab, list):  # Unigram: [[piece, score], ...]
    model["vocab"] = vocab[:keep]
    if isinstance(model.get("unk_id"), int) and model["unk_id"] >= keep:
        model["unk_id"] = 0
    ids = {p[0]: i for i, p in enumerate(model["vocab"]) if isinstance(p, list) and p}
else:
    ids = {}

# Added tokens: the first 64 (a model may reserve thousands), with the
# vocabulary's id where it has the token, else the next free one past it,
# as tokenizers gives them.
t["added_tokens"] = (t.get("added_tokens") or [])[:64]
next_id = max(ids.values(), default=-1) + 1
for a in t["added_tokens"]:
    if not isinstance(a, dict) or not isinstance(a.get("content"), str):
        continue
    if a["content"] in ids:
        a["id"] = ids[a["content"]]
    else:
        a["id"] = ids[a["content"]] = next_id
        next_id += 1

# A post-processor's special tokens name ids too.
def fix_special(p):
    if not isinstance(p, dict):
        return
    for tok in (p.get("special_tokens") or {}).values():
        if isinstance(tok, dict) and isinstance(tok.get("tokens"), list):
            tok["ids"] = [ids.get(x, 0) for x in tok["tokens"]]
    for inner in p.get("processors") or []:
        fix_special(inner)
    for name in ("sep", "cls"):
        pair = p.get(name)
        if isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str):
            pair[1] = ids.get(pair[0], 0)

fix_special(t.get("post_processor"))
json.dump(t, open(dst, "w", encoding="utf-8"), ensure_ascii=False)
