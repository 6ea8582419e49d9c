// What SD3's and Flux's transformers are conditioned on, made from the
// prompts' ids by the pipeline's text encoders, as diffusers'
// StableDiffusion3Pipeline and FluxPipeline make it.
#pragma once

#include "engine/runtime/pipeline.h"

namespace arch {

// SD3: each CLIP's penultimate hidden states side by side, zero-padded to
// the T5's width, then the T5's last hidden states (zeros of 256 rows
// where the pipeline has no T5) as the context; both CLIPs' projected
// pooled rows side by side as pooled_projections. The negative prompt
// goes through the same encoders (SD3 does not zero it).
Status sd3_conditioning(const Pipeline& p, const ImagineOptions& opt, ImagineResult& r, DenoiseOptions& d);

// Flux: the T5's last hidden states as the context, the CLIP's pooled
// output (no projection) as pooled_projections; a guidance-distilled
// transformer takes the guidance scale itself, with no negative prompt.
Status flux_conditioning(const Pipeline& p, const ImagineOptions& opt, ImagineResult& r, DenoiseOptions& d);

}  // namespace arch
