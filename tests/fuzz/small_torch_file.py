#!/usr/bin/env python3
"""Small torch.save files, fuzzing seeds for torch_pickle, made without torch.

Python's own pickler writes them, with stand-ins registered under the few
torch names a state dict's pickle holds (torch._utils._rebuild_tensor_v2,
torch.*Storage, collections.OrderedDict), so the opcodes are the ones
torch.save writes: a zip-layout file at protocols 2 and 4, and a legacy one.
A real checkpoint of 600 KB costs the fuzzer a millisecond a run on bytes
that are mostly storage; these are a few hundred bytes, nearly all pickle.

    small_torch_file.py OUT_DIR
"""
import collections
import io
import os
import pickle
import struct
import sys
import types
import zipfile


def stand_in(module, name, obj):
    mod = sys.modules.setdefault(module, types.ModuleType(module))
    obj.__module__, obj.__qualname__ = module, name
    setattr(mod, name, obj)
    return obj


def _rebuild_tensor_v2(*args):
    raise RuntimeError("never called: these files are only written")


rebuild = stand_in("torch._utils", "_rebuild_tensor_v2", _rebuild_tensor_v2)
STORAGES = {name: (stand_in("torch", name, type(name, (), {})), size)
            for name, size in [("FloatStorage", 4), ("HalfStorage", 2), ("LongStorage", 8), ("BoolStorage", 1)]}


class Storage:
    def __init__(self, kind, key, numel):
        self.type, self.size = STORAGES[kind]
        self.key, self.numel = key, numel
        self.data = bytes((i * 7 + 1) % 2 if kind == "BoolStorage" else (i * 7 + 1) % 256
                          for i in range(numel * self.size))


class Tensor:
    def __init__(self, storage, offset, size, stride):
        self.args = (storage, offset, size, stride, False, collections.OrderedDict())

    def __reduce_ex__(self, protocol):
        return (rebuild, self.args)


storages = [Storage("FloatStorage", "0", 6), Storage("HalfStorage", "1", 3), Storage("LongStorage", "2", 4),
            Storage("BoolStorage", "3", 1)]
state = collections.OrderedDict([
    ("w", Tensor(storages[0], 0, (2, 3), (3, 1))),
    ("half", Tensor(storages[1], 1, (2,), (1,))),
    ("transposed", Tensor(storages[2], 0, (2, 2), (1, 2))),
    ("flag", Tensor(storages[3], 0, (), ())),
    ("step", 7),
])


def dumps(obj, protocol, legacy=False):
    out = io.BytesIO()
    p = pickle.Pickler(out, protocol=protocol)
    p.persistent_id = lambda o: (("storage", o.type, o.key, "cpu", o.numel) + ((None,) if legacy else ())
                                 if isinstance(o, Storage) else None)
    p.dump(obj)
    return out.getvalue()


out_dir = sys.argv[1]
for protocol in (2, 4):
    with zipfile.ZipFile(os.path.join(out_dir, f"zip-protocol{protocol}.bin"), "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", dumps(state, protocol))
        z.writestr("archive/byteorder", "little")
        for s in storages:
            z.writestr(f"archive/data/{s.key}", s.data)
        z.writestr("archive/version", "3\n")
with open(os.path.join(out_dir, "legacy.bin"), "wb") as f:
    f.write(pickle.dumps(0x1950a86a20f9469cfc6c, protocol=2) + pickle.dumps(1001, protocol=2))
    f.write(pickle.dumps({"protocol_version": 1001, "little_endian": True,
                          "type_sizes": {"short": 2, "int": 4, "long": 4}}, protocol=2))
    f.write(dumps(state, 2, legacy=True) + pickle.dumps([s.key for s in storages], protocol=2))
    for s in storages:
        f.write(struct.pack("<q", s.numel) + s.data)
