// What a pipeline's denoiser is conditioned on, made from the prompts' ids
// by its text encoders, as diffusers' StableDiffusionPipeline,
// StableDiffusionXLPipeline, StableDiffusion3Pipeline, FluxPipeline and
// WanPipeline make it: the context (and its negative), the other denoise inputs.
#pragma once

#include "engine/runtime/pipeline.h"

namespace arch {

// The denoise options' context, negative context and extras for the
// pipeline's kind (the ones below, or SD 1.x/2.x's last hidden states and
// SDXL's two encoders with its size ids), kept in `r` too.
Status conditioning(const Pipeline& p, const ImagineOptions& opt, ImagineResult& r, DenoiseOptions& d);

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

// Wan: UMT5's last hidden states of the prompt's tokens (no padding: the
// pipeline masks it out), then zero rows to 512 (max_sequence_length), as
// the context; the negative prompt's likewise.
Status wan_conditioning(const Pipeline& p, const ImagineOptions& opt, ImagineResult& r, DenoiseOptions& d);

}  // namespace arch
