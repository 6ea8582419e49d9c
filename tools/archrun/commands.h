// The archrun commands, one file each (tools/archrun/*.cpp), without the
// command line: tools/archrun.cpp parses it (CLI11 stays in that one file).
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/runtime/interpreter.h"
#include "engine/runtime/model.h"
#include "engine/runtime/pipeline.h"
#include "engine/runtime/seq2seq.h"
#include "engine/runtime/session.h"
#include "engine/serve/server.h"
#include "importer/text/tokenizer/tokenizer.h"

namespace arch::cli {

struct Common {
  std::string model = "toy";  // add_common makes the default default_model_path()
  std::string path = "cpu";  // --path: cpu (fast kernels) or reference (the plain ones, the truth)
  bool check = false;        // --check: every fast step against its op's reference kernel
  int threads = 0;           // --threads: 0 = one per core
  bool no_plan = false;      // --no-plan: the template's graph as written, no fusions
  bool bf16_activations = false;  // --bf16-activations: prompt matmuls on BF16 weights in one bf16 pass
  bool kv_f16 = false;            // --kv-f16: the KV cache's rows kept as F16
  bool programs = true;           // false: the graphs and checkpoint only, nothing bound (the NPU2 emulator's)
  std::string families;
  std::string template_path;
  std::string force_family;  // --force-family NAME
  bool strict = false;       // --strict: checkpoint tensors no graph reads refuse the load (else a warning)
  std::vector<std::string> flags;
  // --split tensor: this process's share of the model, under mpirun
  // (engine/distributed/split_model.h); empty: the whole model here.
  std::string split;
};

struct GenerateArgs {
  Common common;
  std::string prompt, ids;
  int n = 16;
  bool greedy = false, json = false, ignore_eos = false;
  float temperature = 1.0f, top_p = 1.0f;
  int top_k = 0;
  uint64_t seed = 0;
  // The NPU2 engine: --backend npu2 runs the lowered program on the
  // emulator of its units; --numerics npu2 runs the host reference under
  // the same numerics. Both greedy.
  std::string backend = "cpu", numerics;
  std::string program;      // --program FILE: run this lowered program (else lowered now)
  int64_t chunk = 64;       // --chunk: the prompt version's rows
  bool sampling_given = false;
  // An encoder-decoder's search, over its generation_config.json's
  // (add_search_options: --beam-size, --length-penalty, --no-repeat-ngram-size).
  Seq2SeqOptions search;
  std::string target_lang;  // the language token forced first (forced_bos_token_id)
  // Constrained decoding: the reply a sentence of this GBNF grammar, or a
  // JSON text valid under this JSON Schema (engine/runtime/grammar_constraint.h).
  std::string grammar_file, json_schema_file;
  // A vision-language model's images, in the order the prompt's image
  // markers (<image>, <start_of_image>) place them.
  std::vector<std::string> images;
};

struct TranslateArgs {
  Common common;
  std::string prompt;       // empty: each line of stdin
  std::string source_lang, target_lang;
  Seq2SeqOptions search;    // its max_new_tokens: -n (0: the checkpoint's max_length)
  int batch = 8;            // lines of stdin decoded together
  bool batch_given = false; // --batch on the command line (refused beside -p)
  bool json = false;
};

struct ForwardArgs {
  Common common;
  std::string inputs, out;
  std::vector<std::string> outputs;
  bool all_outputs = false;
  std::string graph;  // --graph: which of the template's graphs (empty: the first)
};

struct EmbedArgs {
  Common common;
  std::string prompt, ids;
  std::string pooling;  // --pooling: empty = as the model card says (else mean)
  bool normalize = false, json = false;
};

struct UpscaleArgs {
  Common common;
  std::string image, out;
  int64_t tile = 256, overlap = 16;  // input pixels
  bool json = false;
};

struct RerankArgs {
  Common common;
  std::string query, passages;  // --passages FILE: one per line ("-": stdin)
  int top_n = 0;                // 0: all
  bool json = false;
};

struct ChatArgs {
  Common common;
  std::string system;
  int n = 512;
  int64_t context = 4096;  // --context: positions the conversation's KV cache holds
  bool stats = false;      // --stats: per turn, the tokens prefilled and reused, on stderr
  float temperature = 0.0f;
  uint64_t seed = 0;
  std::string image;       // --image: an image the first turn is about (a vision-language model)
};

struct TranscribeArgs {
  Common common;
  std::string audio;
  std::string language, task = "transcribe";
  bool timestamps = false, json = false;
  int beam_size = 1, max_new_tokens = 0;
  uint64_t seed = 0;
};

struct SpeakArgs {
  Common common;
  std::string prompt, ids, out;
  bool has_prompt = false;  // -p given (maybe empty)
  float speaking_rate = NAN, noise_scale = NAN, noise_scale_duration = NAN;  // NaN: the config's
  uint64_t seed = 0;
  int speaker = -1;
  bool json = false;
};

struct ServeArgs {
  Common common;
  serve::ServeOptions options;  // the command line's, as the server takes them
};

struct BenchServeArgs {
  Common common;
  std::string url;                        // a server already running (llama-server): measure it instead
  std::vector<int> concurrency = {1, 4, 16, 64};
  int prompt_tokens = 128, new_tokens = 64;
  int64_t context = 0;                    // per sequence (0: prompt + new tokens)
  double temperature = 0;                 // each request's (0: greedy)
  bool json = false;
  bool profile = false;                   // per round, where the batch worker's time went (in-process only)
  int repeat = 1;                         // sweeps of the concurrency list; ratios within each sweep
};

struct DenoiseArgs {
  Common common;
  std::string latents, context, negative_context, pooled, negative_pooled, out, scheduler, scheduler_config;
  int steps = 20, latent_height = 0, latent_width = 0;
  float guidance = std::numeric_limits<float>::quiet_NaN();  // unset: the pipelines' default
  uint64_t seed = 0;
};

struct ImagineArgs {
  Common common;
  std::string prompt, negative_prompt, ids, negative_ids, latents, out, save_tensors, scheduler;
  std::string ids_2, negative_ids_2, original_size, crop_top_left;  // SDXL's second encoder and size conditioning
  std::string ids_3, negative_ids_3;                                // SD3's T5
  std::string init_image, mask;                                     // image to image, inpainting
  int steps = 20, height = 0, width = 0;
  int frames = 0;                                                   // a video pipeline's (0: its default, 81)
  double fps = 16;                                                  // a WebM's or GIF's frames a second (unset, NaN: 16)
  float guidance = 7.5f;                                            // unset (NaN): 7.5, a video pipeline's 5
  float guidance_2 = -1.0f;                                         // Wan 2.2's low-noise expert's (unset: --guidance)
  float strength = -1.0f;                                           // unset: 0.8 image to image, 1 inpainting
  uint64_t seed = 0;
};

// families/default/stories260K.gguf of the source tree: the model archrun
// runs when none is named.
std::string default_model_path();
// MODEL: a checkpoint directory, a GGUF or canonical file, or "toy" for a
// random-weight toy written on the fly.
Result<std::shared_ptr<Model>> open_model(const Common& c,
                                          GraphRewrite rewrite = nullptr);
// A pipeline folder's components (--path, --strict as `c` asks), their
// warnings printed.
Result<Pipeline> open_pipeline(const Common& c, const std::string& scheduler = "");
Result<std::shared_ptr<const Tokenizer>> open_tokenizer(const std::string& model);
// A session of the model's, its decode threads governed unless --threads
// (or OMP_NUM_THREADS) fixed them.
SessionOptions session_options(const Common& c, int64_t max_context);
// Threads to govern decode steps up to (one per core), or 0 where --threads
// (or OMP_NUM_THREADS) fixed them.
int governed_threads(const Common& c);
Result<std::vector<int32_t>> parse_ids(const std::string& text);
// A file the user names, whole (a grammar, a schema, a text to tokenize, a
// chat's messages): refused past `max_bytes`.
Result<std::string> read_text_file(const std::string& path, size_t max_bytes);
// The one tensor a safetensors file holds (by any name), as F32, all
// numbers: a NaN in latents or a context is named where it enters (--latents,
// --context, ...), not found later as NaN latents or a black image.
Result<Tensor> only_tensor(const std::string& path, const char* what);
int fail(const Error& e);  // prints "archrun: error: ..." and gives the exit code
// The command (main's dispatch, every command) run with std::bad_alloc
// turned into one error ("archrun: error: out of memory ..."), its outputs
// dropped as on any error; one thrown where no caller can catch it (a
// kernel's parallel loop) says the same through std::terminate
// (common.cpp).
int guarded(const std::function<int()>& command);
// "LABEL: done/total name" over the line before, when stderr is a terminal
// (a long job's progress per tensor); clear_progress_line() after.
void show_progress_count(const char* label, int64_t done, int64_t total, const std::string& name);
void clear_progress_line();
// The --check summary line (on stderr), `failed` when a step missed.
void report_check(const CheckStats& stats, bool failed);
// --profile: per-op milliseconds and calls, largest first, as JSON; and
// those as lines under "PHASE: N ms in kernels", each with its share.
nlohmann::json profile_json(const OpProfile& p);
void print_profile(const char* phase, const nlohmann::json& ops);
// The same by the block of a layer each kernel's value was made in (OpProfile::by_block).
nlohmann::json profile_blocks_json(const OpProfile& p);
void print_profile_blocks(const char* phase, const nlohmann::json& blocks);

int run_generate(const GenerateArgs& a);
int run_generate_npu2(const GenerateArgs& a, const std::vector<int32_t>& prompt, std::shared_ptr<const Tokenizer> tok);
int run_forward(const ForwardArgs& a);
int run_embed(const EmbedArgs& a);
int run_rerank(const RerankArgs& a);
int run_upscale(const UpscaleArgs& a);
int run_translate(const TranslateArgs& a);
// A language's token: M2M-100's __fr__, Marian's >>fra<<, mBART-50's fr_XX, or the name itself.
Result<int32_t> language_token(const Tokenizer& tok, const std::string& lang);
int run_classify(const Common& c, const std::string& image_path, int top_k, bool as_json);
int run_tokenize(const std::string& model, std::string text, const std::string& file, bool no_special, bool as_json);
int run_detokenize(const std::string& model, const std::string& ids_text, bool skip_special, bool as_json);
int run_template(const std::string& model, const std::string& messages_path, bool add_generation_prompt, bool as_json);
int run_chat(const ChatArgs& a);
int run_compare(const Common& c, const std::string& golden, bool as_json);
int run_info(const Common& c, bool as_json);
int run_import(const std::string& dir, const std::string& out, const std::string& dtype, bool as_json);
int run_mel(const std::string& audio, int bins, const std::string& out, bool as_json);
int run_transcribe(const TranscribeArgs& a);
int run_speak(const SpeakArgs& a);
int run_serve(const ServeArgs& a);
int run_bench_serve(const BenchServeArgs& a);
int run_denoise(const DenoiseArgs& a);
int run_imagine(const ImagineArgs& a);
// `prompt_given`: -p was on the command line (a denoiser's context is then
// that many tokens, not CLIP's 77). `latent_size`: a packing denoiser's
// latents' size after the channels ("H,W" or a video's "F,H,W"; empty: the
// config's sample_size square, a video's 21,60,104).
int run_bench(const Common& c, int prompt_tokens, int new_tokens, bool as_json, bool profile = false, int repeat = 1,
              int steps = 2, double audio_seconds = 10, bool prompt_given = false, const std::string& latent_size = "");

}  // namespace arch::cli
