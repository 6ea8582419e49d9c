#include "engine/runtime/speak.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "engine/core/limits.h"
#include "engine/runtime/session.h"

namespace arch {

namespace {

Tensor scalar_f32(float v) {
  Tensor t = Tensor::zeros(DType::F32, {});
  t.f32()[0] = v;
  return t;
}

std::string number_text(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", double(v));
  return buf;
}

Tensor scalar_i32(int32_t v) {
  Tensor t = Tensor::zeros(DType::I32, {});
  t.i32()[0] = v;
  return t;
}

}  // namespace

const ModelGraph* speech_graph(const Model& m) {
  for (const auto& g : m.graphs)
    for (const auto& o : g->graph.outputs)
      if (o.name == "waveform") return g.get();
  return nullptr;
}

Result<Speech> speak(const Model& m, std::span<const int32_t> ids, const SpeakOptions& opt) {
  const ModelGraph* mg = speech_graph(m);
  if (!mg) return error(m.family + " (" + m.template_path + ") has no graph with a waveform output: not a speech model");
  const Graph& g = mg->graph;
  if (ids.empty()) return error("no ids to speak");
  // One run's memory grows with its frames, so with its ids: a long text is
  // cut into pieces (speak_text), and ids given as they are are bounded.
  ARCH_TRY_STATUS(check_limit("speech_ids", int64_t(ids.size()), "", "the ids one run of the voice takes"));
  const int64_t vocab = m.config_int("vocab_size", 0);
  for (int32_t id : ids)
    if (id < 0 || (vocab > 0 && id >= vocab))
      return error("id " + std::to_string(id) + " is outside the vocabulary (0 .. " + std::to_string(vocab - 1) + ")");
  NamedTensors in;
  Tensor t = Tensor::zeros(DType::I32, {int64_t(ids.size())});
  std::copy(ids.begin(), ids.end(), t.i32());
  in["input_ids"] = t;
  // The knobs' sensible ranges: a rate below 0.1 makes every sound ten
  // times longer and more (the frames, and the memory, grow as much); a
  // noise scale past 10 swamps the prior's means (exp of it, durations
  // without end); Inf and 1e38 are neither.
  auto knob = [&](const char* name, float v, float lo, float hi) -> Status {
    if (std::isnan(v)) return {};
    if (!(v >= lo && v <= hi))
      return error(std::string(name) + " is " + number_text(v) + ": it must be a number from " + number_text(lo) +
                   " to " + number_text(hi));
    if (g.find_input(name) < 0) return error(m.family + "'s graph " + g.name + " takes no " + name);
    in[name] = scalar_f32(v);
    return {};
  };
  ARCH_TRY_STATUS(knob("speaking_rate", opt.speaking_rate, 0.1f, 10.0f));
  ARCH_TRY_STATUS(knob("noise_scale", opt.noise_scale, 0.0f, 10.0f));
  ARCH_TRY_STATUS(knob("noise_scale_duration", opt.noise_scale_duration, 0.0f, 10.0f));
  if (opt.speaker >= 0) {
    const int64_t speakers = m.config_int("num_speakers", 1);
    if (opt.speaker >= speakers)
      return error("speaker " + std::to_string(opt.speaker) + ": this voice has " + std::to_string(speakers) +
                   " speaker" + (speakers == 1 ? "" : "s") + " (0 .. " + std::to_string(speakers - 1) + ")");
    if (g.find_input("speaker_id") >= 0) in["speaker_id"] = scalar_i32(opt.speaker);
  }
  if (g.find_input("seed") >= 0) in["seed"] = scalar_i32(int32_t(opt.seed));
  std::vector<std::string> want = {"waveform"};
  const bool has_durations = std::any_of(g.outputs.begin(), g.outputs.end(), [](auto& o) { return o.name == "durations"; });
  if (has_durations) want.push_back("durations");
  Session s(m);
  if (opt.profile) s.profile_with(opt.profile);
  const auto started = std::chrono::steady_clock::now();
  ARCH_TRY(NamedTensors out, s.run(g.name, std::move(in), want));
  Speech sp;
  sp.compute_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const Tensor& w = out.at("waveform");
  if (w.dtype != DType::F32) return error("the waveform is not f32");
  sp.waveform.assign(w.f32(), w.f32() + w.numel());
  sp.sample_rate = int(m.config_int("sampling_rate", 16000));
  if (has_durations) {
    const Tensor& d = out.at("durations");
    for (int64_t k = 0; k < d.numel(); ++k) sp.durations.push_back(int64_t(d.f32()[k]));
    for (int64_t f : sp.durations) sp.frames += f;
    sp.frames = std::max<int64_t>(sp.frames, 1);
  }
  return sp;
}

std::vector<std::string> speech_pieces(std::string_view text, size_t max_chars) {
  std::vector<std::string> pieces;
  max_chars = std::max<size_t>(max_chars, 1);
  if (text.size() <= max_chars) return {std::string(text)};
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  size_t start = 0;
  while (start < text.size()) {
    while (start < text.size() && is_space(text[start])) ++start;
    if (start == text.size()) break;
    const size_t limit = std::min(text.size(), start + max_chars);
    if (limit == text.size()) {
      size_t end = text.size();
      while (end > start && is_space(text[end - 1])) --end;
      pieces.emplace_back(text.substr(start, end - start));
      break;
    }
    // The last sentence end within the limit; else its last space; else
    // the limit itself, backed off to a UTF-8 character boundary.
    size_t cut = std::string_view::npos;
    for (size_t i = start; i < limit && i + 1 < text.size(); ++i)  // the piece [start, i] fits
      if ((std::string_view(".!?;:\n").find(text[i]) != std::string_view::npos) && is_space(text[i + 1])) cut = i + 1;
    if (cut == std::string_view::npos)
      for (size_t i = limit; i > start + 1; --i)
        if (is_space(text[i - 1])) {
          cut = i - 1;
          break;
        }
    if (cut == std::string_view::npos) {
      cut = limit;
      while (cut > start + 1 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    }
    pieces.emplace_back(text.substr(start, cut - start));
    start = cut;
  }
  return pieces;
}

void append_speech(Speech& all, const Speech& more) {
  all.waveform.insert(all.waveform.end(), more.waveform.begin(), more.waveform.end());
  all.durations.insert(all.durations.end(), more.durations.begin(), more.durations.end());
  all.frames += more.frames;
  all.compute_seconds += more.compute_seconds;
  all.sample_rate = more.sample_rate;
  all.pieces += more.pieces;
}

Result<Speech> speak_text(const Model& m, const Tokenizer& tok, std::string_view text, SpeakOptions opt,
                          const std::function<void(size_t, size_t)>& on_piece) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) return error("the text is empty: nothing to speak");
  std::vector<std::vector<int32_t>> pieces;
  for (const std::string& piece : speech_pieces(text)) {
    std::vector<int32_t> ids = tok.encode(piece);
    // With add_blank every other id is the blank: a piece of which no
    // character is in the vocabulary leaves only that.
    if (std::any_of(ids.begin(), ids.end(), [](int32_t id) { return id != 0; })) pieces.push_back(std::move(ids));
  }
  if (pieces.empty())
    return error("\"" + std::string(text) + "\": no character of the text is in the voice's vocabulary (" + tok.source() + ")");
  Speech all;
  const int64_t seed = opt.seed;
  for (size_t k = 0; k < pieces.size(); ++k) {
    if (on_piece) on_piece(k, pieces.size());
    opt.seed = seed + int64_t(k);
    ARCH_TRY(Speech sp, speak(m, pieces[k], opt));
    if (k == 0) all = std::move(sp);
    else append_speech(all, sp);
  }
  all.pieces = int(pieces.size());
  return all;
}

}  // namespace arch
