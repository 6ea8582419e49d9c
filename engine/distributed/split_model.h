// A model split over the processes of an MPI job (`mpirun -np N archrun
// ... --split tensor`): each loads only its share of the weights; rank 0
// runs the command and its sessions, the others make the same calls on
// their shares.
#pragma once

#include <memory>
#include <string>

#include "engine/runtime/model.h"

namespace arch {

// "tensor" (heads, FFN columns and experts' columns split, an all-reduce
// after each attention and FFN: engine/distributed/tensor_split.h). On
// rank 0: the model, its sessions telling the others. On the others it
// never returns: they follow rank 0 and end the process when it is done
// (an error of their own ends every process, with its message). A load
// that fails anywhere fails everywhere, with the message of the process
// it failed on.
Result<std::shared_ptr<Model>> load_split_model(const std::string& dir, LoadOptions opt, const std::string& split);

}  // namespace arch
