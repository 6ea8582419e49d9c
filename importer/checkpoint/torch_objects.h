// What a torch state dict's pickle may name and build, and nothing more:
// the allow-list of globals (collections.OrderedDict, torch._utils' tensor
// rebuilders, torch's storage types), the object REDUCE of one of them
// makes - made here as plain data, nothing is called - and the storage a
// persistent id names. Errors give the fault alone; the machine
// (pickle_machine.h) adds the file and the byte.
#pragma once

#include <string>

#include "importer/checkpoint/pickle_machine.h"

namespace arch::pickle {

// GLOBAL module.name: its object, or the refusal naming it. By value: the
// names may be the table's own strings, which a new object moves.
Result<Ref> torch_global(Pickle& p, std::string module, std::string name);

// REDUCE: what `callable` (an allow-listed global) makes of `args` (a tuple).
Result<Ref> torch_reduce(Pickle& p, Ref callable, Ref args);

// BINPERSID: ('storage', storage type, key, location, numel), with a sixth
// field, None, in the legacy layout.
Result<Ref> torch_persistent_id(Pickle& p, Ref pid);

}  // namespace arch::pickle
