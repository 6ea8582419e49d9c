// archrun: run a model from a checkpoint directory. The command line is
// parsed here; each command is a file of tools/archrun/.
//   archrun generate MODEL (-p TEXT | --ids 1,2,3) -n 16 [--greedy] [--json]
//   archrun forward MODEL --inputs IN.safetensors --out OUT.safetensors
//   archrun info MODEL
// MODEL may be omitted: the default, stories260K (a real TinyStories model
// shipped as families/default/stories260K.gguf); "toy" is a tiny
// random-weight Llama the tool writes itself.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <CLI/CLI.hpp>

#include <filesystem>

#include "importer/checkpoint/toy_checkpoint.h"
#include "engine/runtime/dispatch.h"
#include "engine/runtime/scheduler.h"
#include "tools/toolkit/tool_environment.h"
#include "tools/archrun/commands.h"

using namespace arch;
using namespace arch::cli;

namespace {

// CLI11's Range lets NaN through (every comparison with it is false).
const CLI::Validator kFinite(
    [](std::string& text) {
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      return std::isfinite(v) ? std::string() : "'" + text + "' is not a finite number";
    },
    "FINITE");

// --scheduler's names, and them with the diffusers class each runs.
std::vector<std::string> scheduler_names() {
  std::vector<std::string> names;
  for (const auto& [name, _] : scheduler_kinds()) names.push_back(name);
  return names;
}
std::string scheduler_help() {
  std::string s;
  for (const auto& [name, cls] : scheduler_kinds())
    s += (s.empty() ? "" : ", ") + name + (name == "dpm++2m_karras" ? " (" + cls + " with Karras sigmas)" : " (" + cls + ")");
  return s;
}

// An encoder-decoder's search settings over its generation_config.json's.
void add_search_options(CLI::App* cmd, Seq2SeqOptions& o, const std::string& whose) {
  cmd->add_option("--beam-size", o.beams, whose + "beams (default: generation_config.json's num_beams, else 1)")->check(CLI::Range(1, 64));
  cmd->add_option("--length-penalty", o.length_penalty, whose + "beam search's score = log-prob sum / length ** this (default: the config's)")
      ->check(kFinite & CLI::Range(-10.0, 10.0));
  cmd->add_option("--no-repeat-ngram-size", o.no_repeat_ngram_size, whose + "no n-gram of this size twice (0: off; default: the config's)")
      ->check(CLI::Range(0, 64));
}

void add_common(CLI::App* cmd, Common& c) {
  c.model = default_model_path();
  cmd->add_option("model", c.model,
                  "checkpoint directory (config.json + *.safetensors), GGUF file or canonical model; nothing: the "
                  "default, stories260K (families/default); 'toy': a random-weight toy written on the fly");
  // Exported, so that what a GGUF's side files need (its name map for
  // config.json, pretokenizers.toml for tokenizer.json) comes from there too.
  cmd->add_option("--families", c.families, "directory of family templates, registry.toml and GGUF name maps (gguf/)")
      ->each([](const std::string& dir) { setenv("ARCHETYPE_FAMILIES", dir.c_str(), 1); });
  cmd->add_option("--template", c.template_path, "run this .arch template instead of dispatching");
  cmd->add_option("--force-family", c.force_family,
                  "run this family (a name, or a template's file name) whatever the checkpoint says, even one "
                  "refused for config fields or tensors the family leaves unread; warns");
  cmd->add_flag("--strict", c.strict,
                "refuse a checkpoint holding tensors no graph of its template reads (the template's `unread` "
                "declarations aside); without it they are a warning naming them");
  cmd->add_option("--flag", c.flags, "override a template flag: NAME=true|false")->take_all();
  cmd->add_option("--path", c.path, "cpu: fast kernels where there are some (default); reference: the plain kernels only")
      ->check(CLI::IsMember({"cpu", "reference"}));
  cmd->add_flag("--check", c.check, "compare every fast step with its op's reference kernel; stop at the first that misses");
  cmd->add_option("--threads", c.threads, "threads for the cpu kernels, kept as given (default: one per core, fewer while other work holds a core)")
      ->check(CLI::Range(1, 1024));
  cmd->add_flag("--no-plan", c.no_plan, "run the template's graph as written, without the planner's fusions");
  cmd->add_flag("--bf16-activations", c.bf16_activations,
                "BF16 weights: round prompt activations to bf16 (faster, as llama.cpp does; not f32-accurate); convolutions may multiply in bf16 where the CPU has it");
  cmd->add_option("--split", c.split,
                  "run under mpirun -np N, the model split over the N processes: tensor (each holds 1/N of every "
                  "layer's heads and FFN columns, an all-reduce after each attention and FFN) or pipeline (each "
                  "holds 1/N of the layers, the hidden state handed round); rank 0 reads the input and writes the "
                  "output, the others follow")
      ->check(CLI::IsMember({"tensor", "pipeline"}));
  cmd->add_flag("--kv-f16", c.kv_f16,
                "keep the KV cache as F16 (half its memory, as llama.cpp does; not f32-accurate; cpu path)");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"archrun: run a Hugging Face checkpoint through its family's .arch template"};
  app.require_subcommand(1);
  app.fallthrough();  // --limit after the command's name too
  std::vector<std::string> limits;
  app.add_option("--limit", limits, "raise (or lower) a limit on what input files may ask for: NAME=N (see below)");
  app.footer(
      "Environment:\n"
      "  ARCHETYPE_CPU=avx2|baseline  run the kernels a CPU without AVX-512 (or without AVX2) would run\n"
      "  OMP_NUM_THREADS=N            threads, as --threads N\n"
      "  ARCHETYPE_LIMITS=NAME=N,...  as --limit\n\n" + limits_help());

  GenerateArgs g;
  auto* gen = app.add_subcommand("generate", "generate tokens after a prompt");
  add_common(gen, g.common);
  gen->add_option("-p,--prompt", g.prompt, "prompt text (needs a tokenizer)");
  gen->add_option("--ids", g.ids, "prompt token ids, comma-separated");
  gen->add_option("-n,--max-new-tokens", g.n, "how many tokens to generate")->check(CLI::Range(1, 1 << 20));
  gen->add_flag("--greedy", g.greedy, "argmax decoding (the default when no temperature is given)");
  gen->add_option("--temperature", g.temperature, "sampling temperature")->check(kFinite & CLI::Range(0.0, 100.0));
  gen->add_option("--top-k", g.top_k, "sample among the k most likely tokens")->check(CLI::Range(0, 1 << 30));
  gen->add_option("--top-p", g.top_p, "sample among the smallest set with this probability mass (never empty: 0 keeps the likeliest token alone, greedy)")->check(kFinite & CLI::Range(0.0, 1.0));
  gen->add_option("--seed", g.seed, "sampling seed");
  gen->add_flag("--ignore-eos", g.ignore_eos, "keep going after the end-of-sequence token");
  gen->add_flag("--json", g.json, "print {\"tokens\": [...]}");
  gen->add_option("--backend", g.backend,
                  "cpu: this machine's kernels (default); npu2: the lowered program on the emulator of the NPU2 engine's units (greedy)")
      ->check(CLI::IsMember({"cpu", "npu2"}));
  gen->add_option("--numerics", g.numerics,
                  "npu2: round as the NPU2 program stores (bf16 weights and unit outputs; the profile beside the template), "
                  "with --path reference: the host reference --backend npu2 is judged by (greedy)")
      ->check(CLI::IsMember({"npu2"}));
  gen->add_option("--program", g.program, "with --backend npu2: run this program (archc lower -o FILE) instead of lowering now");
  gen->add_option("--chunk", g.chunk, "with --backend npu2: the prompt version's rows per call")->check(CLI::Range(1, 4096));
  add_search_options(gen, g.search, "an encoder-decoder: ");
  gen->add_option("--target-lang", g.target_lang, "an encoder-decoder: the language whose token is generated first (fr: __fr__, fr_XX, ...)");
  gen->add_option("--grammar", g.grammar_file, "hold the reply to this GBNF grammar (llama.cpp's format; its start rule 'root')");
  gen->add_option("--json-schema", g.json_schema_file, "hold the reply to a JSON text valid under this JSON Schema (what is not supported is refused by name)");
  gen->add_option("--image", g.images,
                  "a vision-language model (LLaVA, Gemma 3): an image (PNG, JPEG, BMP, GIF), put where the prompt writes its "
                  "image marker (<image>, <start_of_image>); repeat for several, in order");

  TranslateArgs tr_args;
  auto* tra = app.add_subcommand("translate", "text to text through a translation or summarisation encoder-decoder (Marian, M2M-100, mBART, BART, T5): -p TEXT, or each line of stdin as a sentence, one line out per line in");
  add_common(tra, tr_args.common);
  tra->add_option("-p,--prompt", tr_args.prompt, "the text (else each line of stdin)");
  tra->add_option("--source-lang", tr_args.source_lang, "the source language (M2M-100, mBART-50: its token first in the input)");
  tra->add_option("--target-lang", tr_args.target_lang, "the target language (its token forced first, or Marian's >>xx<< before the text)");
  add_search_options(tra, tr_args.search, "");
  tra->add_option("-n,--max-new-tokens", tr_args.search.max_new_tokens, "tokens per sentence at most (default: the config's max_length)")->check(CLI::Range(1, 65536));
  tra->add_option("--batch", tr_args.batch, "lines of stdin decoded together, a line joining as another is done (default 8; 1: one after another)")->check(CLI::Range(1, 256));
  tra->add_flag("--json", tr_args.json, "one object per line: {\"text\", \"tokens\", \"score\", \"stop\"}");

  ForwardArgs f;
  auto* fwd = app.add_subcommand("forward", "run one forward pass over the named inputs; write the named outputs");
  add_common(fwd, f.common);
  fwd->add_option("--inputs", f.inputs,
                  "safetensors with the model's inputs: input_ids [1, seq] (int32 or int64), token_type_ids, "
                  "attention_mask, pixel_values [1, C, H, W], input_features [1, mels, frames]; an encoder-decoder's "
                  "decoder_input_ids too")->required();
  fwd->add_option("--out", f.out, "safetensors to write (float32, batch dim 1 kept)")->required();
  fwd->add_option("--outputs", f.outputs, "outputs to write (default: logits, else last_hidden_state)")->delimiter(',');
  fwd->add_flag("--all-outputs", f.all_outputs, "write every output the template declares");
  fwd->add_option("--graph", f.graph, "which of the template's graphs to run (default: the first; an encoder-decoder's two, chained; archrun info lists them)");

  Common ic;
  bool info_json = false;
  auto* info = app.add_subcommand("info", "which family a checkpoint dispatches to and why; its config and flags");
  add_common(info, ic);
  info->add_flag("--json", info_json, "machine-readable output");

  EmbedArgs e;
  auto* emb = app.add_subcommand("embed", "a sentence embedding: the encoder's token states pooled as the model card (sentence-transformers' modules.json) says, else their mean");
  add_common(emb, e.common);
  emb->add_option("-p,--prompt", e.prompt, "the text (tokenized with the checkpoint's tokenizer)");
  emb->add_option("--ids", e.ids, "token ids, comma-separated");
  emb->add_option("--pooling", e.pooling, "mean, cls, max, last, or pooler (the model's own pooler output); default: the model card's")
      ->check(CLI::IsMember({"mean", "cls", "max", "last", "pooler"}));
  emb->add_flag("--normalize", e.normalize, "L2-normalise the vector (also when the model card has a Normalize module)");
  emb->add_flag("--json", e.json, "print {\"embedding\": [...], \"dim\": N, \"pooling\": ..., \"normalized\": ...}");

  UpscaleArgs up;
  auto* ups = app.add_subcommand("upscale", "an image made larger by a super-resolution model (Swin2SR), tile by tile: a PNG");
  add_common(ups, up.common);
  ups->add_option("image", up.image, "the image (PNG, JPEG, BMP or GIF)")->required();
  ups->add_option("-o,--out", up.out, "the PNG to write (written whole or not at all; - for stdout)")->required();
  ups->add_option("--tile", up.tile, "input pixels per tile side: memory stays bounded (default 256)")->check(CLI::Range(int64_t(8), int64_t(1) << 16));
  ups->add_option("--overlap", up.overlap, "input pixels neighbouring tiles share (default 16)")->check(CLI::Range(int64_t(0), int64_t(1) << 15));
  ups->add_flag("--json", up.json, "print {\"input\", \"output\", \"scale\", \"seconds\"}");

  RerankArgs rr;
  auto* rrk = app.add_subcommand("rerank", "passages ordered by relevance to a query: a cross-encoder's classification head on each (query, passage) pair");
  add_common(rrk, rr.common);
  rrk->add_option("-q,--query", rr.query, "the query")->required();
  rrk->add_option("--passages", rr.passages, "a text file, one passage per line (- reads stdin)")->required();
  rrk->add_option("--top-n", rr.top_n, "print only the best N (default: all)")->check(CLI::Range(1, 1 << 20));
  rrk->add_flag("--json", rr.json, "print {\"results\": [{\"index\", \"relevance_score\", \"logits\", \"document\"}, ...]}");

  std::string tk_model, tk_text, tk_file;
  bool tk_no_special = false, tk_json = false;
  auto* tkz = app.add_subcommand("tokenize", "text to token ids, as Hugging Face's tokenizer gives them");
  tkz->add_option("model", tk_model, "checkpoint directory (or one with only tokenizer files)")->required();
  tkz->add_option("text", tk_text, "the text");
  tkz->add_option("--file", tk_file, "read the text from a file");
  tkz->add_flag("--no-special", tk_no_special, "do not add special tokens (BOS, [CLS] ...)");
  tkz->add_flag("--json", tk_json, "print {\"ids\": [...]}");

  std::string dt_model, dt_ids;
  bool dt_skip = false, dt_json = false;
  auto* dtk = app.add_subcommand("detokenize", "token ids to text");
  dtk->add_option("model", dt_model, "checkpoint directory (or one with only tokenizer files)")->required();
  dtk->add_option("--ids", dt_ids, "token ids, comma-separated")->required();
  dtk->add_flag("--skip-special", dt_skip, "leave special tokens out");
  dtk->add_flag("--json", dt_json, "print {\"text\": ...}");

  std::string tp_model, tp_messages;
  bool tp_gen = false, tp_json = false;
  auto* tpl = app.add_subcommand("template", "render the checkpoint's chat template for a conversation");
  tpl->add_option("model", tp_model, "checkpoint directory (tokenizer_config.json with a chat_template)")->required();
  tpl->add_option("--messages", tp_messages, "JSON file: [{\"role\": ..., \"content\": ...}, ...]")->required();
  tpl->add_flag("--add-generation-prompt", tp_gen, "end with the assistant's turn opening");
  tpl->add_flag("--json", tp_json, "print {\"rendered\": ..., \"ids\": [...]}");

  ChatArgs ch;
  auto* cht = app.add_subcommand("chat", "chat with a model: one user turn per line of standard input");
  add_common(cht, ch.common);
  cht->add_option("--system", ch.system, "a system message first");
  cht->add_option("-n,--max-new-tokens", ch.n, "most tokens per reply")->check(CLI::Range(1, 1 << 20));
  cht->add_option("--temperature", ch.temperature, "sampling temperature (0: greedy)")->check(kFinite & CLI::Range(0.0, 100.0));
  cht->add_option("--seed", ch.seed, "sampling seed");
  cht->add_option("--context", ch.context, "positions the conversation's KV cache holds (default 4096)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 24));
  cht->add_flag("--stats", ch.stats, "per turn, on stderr: tokens prefilled, and reused from the session");
  cht->add_option("--image", ch.image, "a vision-language model (LLaVA, Gemma 3): an image the first turn is about");

  Common kc;
  std::string image;
  int top_k = 5;
  bool classify_json = false;
  auto* cls = app.add_subcommand("classify", "classify an image (PNG, JPEG, BMP, GIF) with an image classifier");
  add_common(cls, kc);
  cls->add_option("image", image, "the image file")->required();
  cls->add_option("-k,--top-k", top_k, "how many labels to print")->check(CLI::Range(1, 1000));
  cls->add_flag("--json", classify_json, "print {\"top\": [{\"id\", \"label\", \"probability\"}, ...]}");

  std::string mel_audio, mel_out;
  int mel_bins = 80;
  bool mel_json = false;
  auto* mel = app.add_subcommand("mel", "a sound file (WAV, FLAC, OGG; any rate, mixed to mono, resampled to 16 kHz) to Whisper's log-mel input_features");
  mel->add_option("audio", mel_audio, "the sound file")->required();
  mel->add_option("--bins", mel_bins, "mel bins: 80 (Whisper tiny..large-v2) or 128 (large-v3)")->check(CLI::IsMember({80, 128}));
  mel->add_option("-o,--out", mel_out, "safetensors file to write: input_features [1, bins, 3000], attention_mask [1, 3000]")->required();
  mel->add_flag("--json", mel_json, "a summary object");

  TranscribeArgs tr;
  auto* trn = app.add_subcommand("transcribe", "speech to text with a Whisper checkpoint: 30 s windows, the decoding rules of its generation_config.json");
  add_common(trn, tr.common);
  trn->add_option("audio", tr.audio, "the sound file (WAV, FLAC, OGG; any rate)")->required();
  trn->add_option("--language", tr.language, "language code (en, de, ...); default: detected (multilingual checkpoints)");
  trn->add_option("--task", tr.task, "transcribe (default) or translate (to English)")->check(CLI::IsMember({"transcribe", "translate"}));
  trn->add_flag("--timestamps", tr.timestamps, "segment timestamps (timestamp tokens, in pairs, rising)");
  trn->add_option("--beam-size", tr.beam_size, "beam search width (1: greedy, the default)")->check(CLI::Range(1, 16));
  trn->add_option("--max-new-tokens", tr.max_new_tokens, "most tokens per window (default: 224, or what the decoder has room for)")->check(CLI::Range(1, 1 << 16));
  trn->add_option("--seed", tr.seed, "seed of the temperature fallback's sampling");
  trn->add_flag("--json", tr.json, "print {\"text\", \"language\", \"segments\": [{\"start\", \"end\", \"text\", \"tokens\", ...}]}");

  SpeakArgs sk;
  auto* spk = app.add_subcommand("speak", "text to speech with a VITS voice (MMS-TTS, Piper-style): a 16-bit PCM WAV at the voice's rate");
  add_common(spk, sk.common);
  spk->add_option("-p,--prompt", sk.prompt, "the text (through the voice's vocab.json)");
  spk->add_option("--ids", sk.ids, "token or phoneme ids instead of text, comma-separated (a Piper-style voice's phonemes)");
  spk->add_option("-o,--out", sk.out, "the WAV file to write (-: standard output; a device or FIFO is written in place)")->required();
  spk->add_option("--speaking-rate", sk.speaking_rate, "faster above 1, slower below (default: the config's speaking_rate)")->check(kFinite);
  spk->add_option("--noise-scale", sk.noise_scale, "the prior's sampling noise (default: the config's, MMS 0.667)")->check(kFinite);
  spk->add_option("--noise-scale-duration", sk.noise_scale_duration, "the duration predictor's noise (default: the config's, MMS 0.8)")->check(kFinite);
  spk->add_option("--seed", sk.seed, "seed of the noise draws (default 0: the same voice every run)");
  spk->add_option("--speaker", sk.speaker, "speaker of a multi-speaker voice (default 0)")->check(CLI::Range(0, 1 << 20));
  spk->add_flag("--json", sk.json, "print {\"out\", \"seconds\", \"durations\", \"real_time_factor\", ...}");

  ServeArgs sv;
  auto* srv = app.add_subcommand("serve", "an OpenAI-compatible HTTP server (docs/serve.md): /v1/completions, /v1/chat/completions (streamed or not; tools and tool_choice, response_format json_object / json_schema; image_url data URLs for a vision-language model), sequences decoded together (continuous batching); /v1/embeddings (an encoder, pooled as its model card says), /v1/rerank (an encoder with a classification head), /v1/audio/speech (a voice), /v1/audio/transcriptions (Whisper), /v1/images/generations (an SD 1.x/2.x or SDXL pipeline folder); /v1/models, /health");
  add_common(srv, sv.common);
  srv->add_option("--host", sv.options.host, "address to listen on (default 127.0.0.1; 0.0.0.0: every interface)");
  srv->add_option("--port", sv.options.port, "port (default 8080; 0: any free one, printed)")->check(CLI::Range(0, 65535));
  srv->add_option("--parallel", sv.options.parallel, "sequences decoding together, each with its own KV cache region (default 4)")->check(CLI::Range(1, 1024));
  srv->add_option("--ctx", sv.options.context, "positions per sequence, prompt and reply (default: the model's max_position_embeddings, at most 4096)")->check(CLI::Range(int64_t(1), int64_t(1) << 22));
  srv->add_option("--queue", sv.options.queue, "requests waiting for a free sequence before 503 (default 4 x --parallel)")->check(CLI::Range(1, 1 << 16));
  srv->add_option("--api-key", sv.options.api_key, "require 'Authorization: Bearer KEY' on /v1/ (default: ARCHETYPE_API_KEY, else none)");
  srv->add_option("--alias", sv.options.name, "the model's id in the API (default: its directory's name)");
  srv->add_option("--chat-template", sv.options.chat_template, "a Jinja chat template file, in place of the checkpoint's");
  srv->add_option("--max-waiting", sv.options.max_waiting, "connections still sending their request (idle or slow clients), held apart from the work; past it new ones get 503 at once (default 1024)")->check(CLI::Range(1, 1 << 16));
  srv->add_option("--request-timeout", sv.options.request_seconds, "seconds a new connection has to send its request line, headers and a small body before it is dropped (default 10)")->check(CLI::Range(0.1, 3600.0));

  BenchServeArgs bs;
  auto* bsv = app.add_subcommand("bench-serve", "the server under load: 1, 4, 16, 64 concurrent streamed completions; aggregate decode tok/s, time to first token (median, p99)");
  add_common(bsv, bs.common);
  bsv->add_option("--url", bs.url, "measure a server already running there (llama-server, same model) instead of serving MODEL in-process");
  bsv->add_option("--concurrency", bs.concurrency, "concurrent streams per round (default 1,4,16,64)")->delimiter(',')->check(CLI::Range(1, 1024));
  bsv->add_option("-p,--prompt-tokens", bs.prompt_tokens, "prompt length per request (seeded random ids; default 128)")->check(CLI::Range(1, 1 << 16));
  bsv->add_option("-n,--new-tokens", bs.new_tokens, "tokens per request (default 64; end tokens ignored)")->check(CLI::Range(1, 1 << 16));
  bsv->add_option("--temperature", bs.temperature, "each request's sampling temperature (default 0: greedy; clients' default is 1)")->check(CLI::Range(0.0, 2.0));
  bsv->add_option("--ctx", bs.context, "positions per sequence (default: prompt + new tokens)");
  bsv->add_flag("--json", bs.json, "one JSON object as the last line");
  bsv->add_flag("--profile", bs.profile, "per round: the batch worker's time per op over its decode steps and its prompts (MODEL in-process)");
  bsv->add_option("--repeat", bs.repeat, "sweeps of the concurrency list, one after another (default 1): each sweep's ratios are to its own single stream, and a summary gives each concurrency's range over the sweeps (a machine whose memory speed moves between runs moves the single stream most)")->check(CLI::Range(1, 100));

  Common cc;
  std::string golden;
  bool compare_json = false;
  auto* cmp = app.add_subcommand("compare", "check a model against a golden directory (transformers' outputs): every tensor, per layer, greedy tokens");
  add_common(cmp, cc);
  cmp->add_option("golden", golden, "golden directory (expected.safetensors, inputs.json, expected.json)")->required();
  cmp->add_flag("--json", compare_json, "machine-readable output");

  Common bc;
  int bench_p = 512, bench_n = 128, bench_repeat = 1;
  bool bench_json = false, bench_profile = false;
  int bench_steps = 2;
  double bench_audio_s = 10;
  std::string bench_latents;
  auto* bench = app.add_subcommand("bench", "load time, prompt and decode tokens/s, time to first token, peak RSS (an encoder-decoder: the encoder per input; a denoiser: one evaluation; a pipeline: text encoder, guided step, VAE decode; a voice: the real-time factor; an encoder or vision model: sequences or images per second beside the GEMM rate, -p tokens or the config's image size)");
  add_common(bench, bc);
  auto* bench_p_opt = bench->add_option("-p,--prompt-tokens", bench_p,
                                        "prompt length (seeded random ids); a denoiser: its context's tokens (77, CLIP's, unless given: SD3's is 333, Flux's 512)")
                          ->check(CLI::Range(1, 1 << 20));
  bench->add_option("-n,--new-tokens", bench_n, "tokens to decode")->check(CLI::Range(1, 1 << 20));
  bench->add_flag("--json", bench_json, "one JSON object as the last line");
  bench->add_flag("--profile", bench_profile, "time per op, for the prompt and for decoding, and per block of a layer (a hybrid's layer kinds)");
  bench->add_option("--steps", bench_steps, "a text-to-image pipeline: guided steps to time (default 2)")->check(CLI::Range(1, 1000));
  bench->add_option("--audio-seconds", bench_audio_s, "a text-to-speech model: about how long an utterance to time (default 10)")
      ->check(kFinite & CLI::Range(0.1, 3600.0));
  bench->add_option("--latent-size", bench_latents,
                    "a denoiser that packs its latents, or a pipeline: the latents' size after the channels, H,W or a video's F,H,W "
                    "(default: sample_size square; a video's 21,60,104: 81 frames of 480x832 through Wan 2.1's VAE)");
  bench->add_option("--repeat", bench_repeat, "run prompt and decode this many times after one load; report medians")
      ->check(CLI::Range(1, 1000));

  std::string imp_dir, imp_out, imp_dtype = "bf16";
  bool imp_json = false;
  auto* imp = app.add_subcommand("import", "write a canonical model: one .safetensors with the config and tokenizer inside, weights as bf16, q8 or q4");
  imp->add_option("dir", imp_dir, "checkpoint directory (config.json + *.safetensors)")->required();
  imp->add_option("-o,--out", imp_out, "file to write (a directory gets model.safetensors)")->required();
  imp->add_option("--dtype", imp_dtype, "bf16 (default), q8, q4, f32, or stored (as the checkpoint has them)")
      ->check(CLI::IsMember({"bf16", "q8", "q4", "f32", "stored"}));
  imp->add_flag("--json", imp_json, "a summary object as the last line");

  std::string toy_dir, toy_shape = "toy", toy_dtype = "f32";
  uint64_t toy_seed = 0;
  auto* toy = app.add_subcommand("toy", "write a random-weight checkpoint: the toy (model name 'toy'), or a real model's shape");
  toy->add_option("-o,--out", toy_dir, "directory to write")->required();
  toy->add_option("--seed", toy_seed, "weight seed");
  toy->add_option("--shape", toy_shape, "toy (default), qwen2.5-0.5b, llama-3.2-1b, or a spec in families/toys: whisper-base, t5-base, mms-tts, sd15-unet, sd15 (a whole pipeline)");
  std::string toy_families;
  toy->add_option("--families", toy_families, "directory of family templates (its toys/ holds the spec files)");
  toy->add_option("--dtype", toy_dtype, "f32 (default) or bf16")->check(CLI::IsMember({"f32", "bf16"}));

  DenoiseArgs dn;
  auto* den = app.add_subcommand("denoise", "a diffusion denoiser's sampling loop (its scheduler_config.json: DDIM, Euler, Euler ancestral, DPM-Solver++, LCM or flow-matching Euler) from latents and a context");
  add_common(den, dn.common);
  den->add_option("--latents", dn.latents, "initial latents, one tensor [C, H, W] (or [1, C, H, W]); default: seeded normal noise");
  den->add_option("--context", dn.context, "encoder_hidden_states, one tensor [tokens, width]")->required();
  den->add_option("--negative-context", dn.negative_context, "the unconditional context: classifier-free guidance (two passes a step)");
  den->add_option("--pooled", dn.pooled, "pooled_projections, one tensor (SD3)");
  den->add_option("--negative-pooled", dn.negative_pooled, "pooled_projections with the negative context");
  den->add_option("--steps", dn.steps, "sampling steps");
  den->add_option("--guidance", dn.guidance, "guidance scale, with --negative-context (1: none); a guidance-distilled model (Flux-dev) takes it as an input")->check(kFinite);
  den->add_option("--scheduler", dn.scheduler, "sample the config's noise schedule by another method: " + scheduler_help() + " (default: its own scheduler)")
      ->check(CLI::IsMember(scheduler_names()));
  den->add_option("--scheduler-config", dn.scheduler_config, "a scheduler_config.json (default: beside the model, or its pipeline's scheduler/)");
  den->add_option("--seed", dn.seed, "seed of the initial noise (without --latents) and of what an ancestral sampler adds");
  den->add_option("--latent-height", dn.latent_height, "the seeded latents' height, where the model takes any size (Flux)");
  den->add_option("--latent-width", dn.latent_width, "the seeded latents' width");
  den->add_option("-o,--out", dn.out, "safetensors to write: latents [C, H, W], trajectory [steps + 1, C, H, W], noise_preds, timesteps")->required();

  ImagineArgs im;
  im.guidance = std::numeric_limits<float>::quiet_NaN();  // a video pipeline's default differs
  auto* img = app.add_subcommand("imagine", "text to image (or image to image, inpainting) through a diffusers pipeline folder (model_index.json: Stable Diffusion 1.x/2.x/XL/3, Flux): a PNG; text to video through a Wan pipeline: WebM, an animated GIF or PNG frames");
  add_common(img, im.common);
  img->add_option("-p,--prompt", im.prompt, "the prompt (the pipeline's tokenizer/: CLIP's vocab.json + merges.txt, or tokenizer.json)");
  img->add_option("--negative-prompt", im.negative_prompt, "the negative prompt (default: the empty one, with guidance)");
  img->add_option("--ids", im.ids, "the prompt's token ids, as the text encoder takes them (CLIP's: bos, ids, eos, padding; Wan's UMT5: its tokens and </s>, unpadded)");
  img->add_option("--negative-ids", im.negative_ids, "the negative prompt's token ids: classifier-free guidance");
  img->add_option("--ids-2", im.ids_2, "SDXL, SD3: the prompt's ids for the second text encoder (default: --ids); Flux: for its T5");
  img->add_option("--negative-ids-2", im.negative_ids_2, "SDXL, SD3: the negative prompt's ids for the second text encoder");
  img->add_option("--ids-3", im.ids_3, "SD3: the prompt's ids for its T5 (text_encoder_3)");
  img->add_option("--negative-ids-3", im.negative_ids_3, "SD3: the negative prompt's ids for its T5");
  img->add_option("--original-size", im.original_size, "SDXL's size conditioning: H,W (default: the output size)");
  img->add_option("--crop-top-left", im.crop_top_left, "SDXL's size conditioning: Y,X (default: 0,0)");
  img->add_option("--steps", im.steps, "sampling steps");
  img->add_option("--guidance", im.guidance, "guidance scale (with --negative-ids; 1: none; default 7.5, a video pipeline's 5)")->check(kFinite);
  img->add_option("--guidance-2", im.guidance_2, "Wan 2.2's low-noise expert (transformer_2): its guidance scale (default: --guidance)")
      ->check(kFinite & CLI::Range(0.0, 100.0));
  img->add_option("--scheduler", im.scheduler, "sample the pipeline's noise schedule by another method: " + scheduler_help() + " (default: its scheduler/)")
      ->check(CLI::IsMember(scheduler_names()));
  img->add_option("--seed", im.seed, "seed of the initial noise (without --latents) and of what an ancestral sampler adds");
  img->add_option("--init-image", im.init_image, "image to image: start from this PNG/JPEG (resized to --height/--width, else its own size down to the VAE's scale), noised to --strength");
  img->add_option("--strength", im.strength, "with --init-image: how much of the schedule runs, above 0 to 1 (default 0.8; inpainting 1)")->check(kFinite);
  img->add_option("--mask", im.mask, "with --init-image: inpaint where this image is white (>= 0.5 gray), keep where it is black");
  img->add_option("--height", im.height, "image height in pixels, a multiple of the VAE's scale (8; default: the UNet's sample_size x 8, or --init-image's; a video's 480)");
  img->add_option("--width", im.width, "image width in pixels (as --height; a video's 832)");
  img->add_option("--frames", im.frames, "a video pipeline's frames: one more than a multiple of its VAE's temporal scale (Wan: 4; default 81)");
  img->add_option("--fps", im.fps, "a video's frames a second in the WebM or GIF (default 16)")->check(kFinite);
  im.fps = std::numeric_limits<double>::quiet_NaN();  // unset: 16; refused where no WebM or GIF is written
  img->add_option("--latents", im.latents, "initial latents, one tensor [C, h, w] (or [1, C, h, w])");
  img->add_option("-o,--out", im.out, "the PNG to write (-: standard output; a device or FIFO is written in place); a video: NAME.webm (VP9), NAME.gif (animated) or NAME.png (NAME_000.png, ... a frame each)")->required();
  img->add_option("--save-tensors", im.save_tensors, "also write prompt_embeds, latents [steps + 1, C, h, w], noise_pred, image [3, H, W] (a video's [3, F, H, W])");

  CLI11_PARSE(app, argc, argv);
  if (auto st = prepare_tool_environment(limits); !st) return fail(st.error());
  return guarded([&]() -> int {
    if (img->parsed()) return run_imagine(im);
    if (den->parsed()) return run_denoise(dn);
    if (gen->parsed()) {
      // Greedy unless a sampling option is given (and --greedy is not).
      bool sampling = gen->count("--temperature") || gen->count("--top-k") || gen->count("--top-p");
      g.greedy = g.greedy || !sampling;
      g.sampling_given = sampling;
      return run_generate(g);
    }
    if (fwd->parsed()) return run_forward(f);
    if (info->parsed()) return run_info(ic, info_json);
    if (emb->parsed()) return run_embed(e);
    if (rrk->parsed()) return run_rerank(rr);
    if (ups->parsed()) return run_upscale(up);
    if (tra->parsed()) {
      tr_args.batch_given = tra->get_option("--batch")->count() > 0;
      return run_translate(tr_args);
    }
    if (cmp->parsed()) return run_compare(cc, golden, compare_json);
    if (cls->parsed()) return run_classify(kc, image, top_k, classify_json);
    if (mel->parsed()) return run_mel(mel_audio, mel_bins, mel_out, mel_json);
    if (trn->parsed()) return run_transcribe(tr);
    if (spk->parsed()) {
      sk.has_prompt = spk->get_option("--prompt")->count() > 0;
      return run_speak(sk);
    }
    if (srv->parsed()) return run_serve(sv);
    if (bsv->parsed()) return run_bench_serve(bs);
    if (tkz->parsed()) {
      if (tk_text.empty() == tk_file.empty()) return fail(error("give the text, or --file PATH (one of them)"));
      return run_tokenize(tk_model, tk_text, tk_file, tk_no_special, tk_json);
    }
    if (dtk->parsed()) return run_detokenize(dt_model, dt_ids, dt_skip, dt_json);
    if (tpl->parsed()) return run_template(tp_model, tp_messages, tp_gen, tp_json);
    if (cht->parsed()) return run_chat(ch);
    if (bench->parsed())
      return run_bench(bc, bench_p, bench_n, bench_json, bench_profile, bench_repeat, bench_steps, bench_audio_s,
                       bench_p_opt->count() > 0, bench_latents);
    if (imp->parsed()) return run_import(imp_dir, imp_out, imp_dtype, imp_json);
    if (toy->parsed()) {
      auto progress = [](int64_t done, int64_t total, const std::string& name) {
        show_progress_count("toy", done, total, name);
      };
      Status st;
      if (auto shape = llama_shape(toy_shape)) {
        shape->bf16 = toy_dtype == "bf16";
        st = write_random_checkpoint(toy_dir, *shape, toy_seed, progress);
      } else {
        const std::string spec = families_dir(toy_families) + "/toys/" + toy_shape + ".json";
        if (!std::filesystem::exists(spec))
          return fail(error("--shape " + toy_shape + ": neither a built-in shape (toy, qwen2.5-0.5b, llama-3.2-1b) nor a spec " + spec));
        st = write_toy_from_spec(spec, toy_dir, toy_seed, toy_dtype == "bf16", progress);
      }
      clear_progress_line();
      if (!st.ok()) return fail(st.error());
      if (std::filesystem::exists(std::filesystem::path(toy_dir) / "model_index.json"))
        std::printf("wrote the pipeline folder %s (model_index.json, its components' folders, scheduler/)\n", toy_dir.c_str());
      else {
        std::string files;  // what the spec wrote beside the weights (a voice's vocabulary)
        for (const auto& e : std::filesystem::directory_iterator(toy_dir))
          if (e.path().filename() != "model.safetensors") files += (files.empty() ? "" : ", ") + e.path().filename().string();
        std::printf("wrote %s/model.safetensors and %s\n", toy_dir.c_str(), files.c_str());
      }
    }
    return 0;
  });
}
