// archrun serve: one model behind the OpenAI HTTP API (cpp-httplib), so that
// every existing client works: GET /health, GET /v1/models,
// POST /v1/completions and /v1/chat/completions (whole, or streamed as
// server-sent events ending in `data: [DONE]`) through a continuous
// batcher, POST /v1/embeddings for an encoder that pools (as its model card
// says), POST /v1/rerank for a cross-encoder, POST /v1/audio/speech for a
// voice and /v1/audio/transcriptions for a speech encoder-decoder,
// POST /v1/images/generations for a Stable Diffusion pipeline. Errors are the
// API's JSON with its statuses; past the batcher's queue a request gets 503
// and a Retry-After.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "engine/runtime/batcher.h"
#include "engine/runtime/grammar_constraint.h"
#include "engine/runtime/pipeline.h"
#include "engine/serve/api_error.h"
#include "importer/text/chat_template/load.h"
#include "importer/text/pooling_card.h"
#include "importer/text/tokenizer/tokenizer.h"

namespace httplib {
struct Request;
struct Response;
}

namespace arch::serve {

class GatedHttpServer;

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8080;               // 0: any free port (bind() says which)
  int parallel = 4;              // sequences decoding together
  int64_t context = 0;           // positions per sequence (0: the model's max_position_embeddings, at most 4096)
  int queue = 0;                 // requests waiting for a slot (0: 4 x parallel)
  std::string api_key;           // set: every /v1/ request must bring "Authorization: Bearer KEY"
  std::string name;              // the model's id in the API ("": its directory's name)
  std::string chat_template;     // a Jinja file to use in place of the checkpoint's ("": the checkpoint's)
  int adaptive_threads = 0;      // decode steps' threads governed up to this many (0: as set)
  BatchProfile* profile = nullptr;  // set: the batch worker times its runs into it (engine/runtime/batcher.h)
  int max_waiting = 1024;        // connections waiting to send a request (idle or slow); past it refused at once
  double request_seconds = 10;   // a new connection's request must arrive within this
};

class Server {
 public:
  // `model_path`: where m was loaded from (its tokenizer and chat template).
  static Result<std::unique_ptr<Server>> make(std::shared_ptr<const Model> m, const std::string& model_path,
                                              ServeOptions opt);
  // A diffusers pipeline folder (model_index.json): /v1/images/generations.
  static Result<std::unique_ptr<Server>> make(std::shared_ptr<Pipeline> p, const std::string& path, ServeOptions opt);
  ~Server();

  Result<int> bind();  // the port bound
  void run();          // serves until stop()
  void stop();
  const std::string& model_name() const { return name_; }
  // What it serves, for the banner: "completions, chat", "embeddings".
  std::string serves() const;
  const ServeOptions& options() const { return opt_; }
  // The batch worker's KV caches, resident from the first request (0: no
  // completions).
  int64_t cache_bytes() const;

 private:
  Server() = default;
  void routes();
  // The routes' work (completion_route.cpp, embedding_route.cpp).
  void complete(const httplib::Request& req, httplib::Response& res, bool chat);
  void embed(const httplib::Request& req, httplib::Response& res);
  void rerank(const httplib::Request& req, httplib::Response& res);          // rerank_route.cpp
  void speech(const httplib::Request& req, httplib::Response& res);         // audio_routes.cpp
  void transcription(const httplib::Request& req, httplib::Response& res);
  void image(const httplib::Request& req, httplib::Response& res);           // image_route.cpp
  // What both factories end with: the name, the clock, the routes.
  void start(const std::string& path, ServeOptions opt);
  // The 404 for a request naming another model than this one.
  ApiError unknown_model(const std::string& asked) const;
  // A JSON endpoint's body: an object naming this model or none, else the
  // error to reply with (not JSON, not an object, another model).
  std::variant<nlohmann::json, ApiError> json_request(const httplib::Request& req) const;
  // The request's prompt as token ids, or the error to reply with.
  std::variant<std::vector<int32_t>, ApiError> prompt_ids(const struct CompletionRequest& r);
  // A chat's images (image_chat.cpp): each decoded and prepared as the
  // model's processor says, their features made by its image graph, as the
  // state input the sequence runs with; the error naming the image's field
  // where it cannot be (no image model, an undecodable image).
  std::variant<NamedTensors, ApiError> image_state(const struct CompletionRequest& r);

  // work_mu_ held, and this HTTP thread given the server's OpenMP thread
  // count (each thread has its own; a new one starts at one per core).
  std::unique_lock<std::mutex> hold_work();

  std::shared_ptr<const Model> model_;
  ServeOptions opt_;
  std::string name_, path_;
  std::shared_ptr<const Tokenizer> tok_;
  std::shared_ptr<const Tokenizer> tok_2_;  // an SDXL pipeline's tokenizer_2/
  std::optional<ChatTemplateInfo> chat_;
  std::string chat_missing_;            // why there is no chat template
  std::unique_ptr<Batcher> batcher_;    // null: the model does not generate
  bool embeds_ = false;
  bool reranks_ = false;       // an encoder with a classification head, and a tokenizer
  PoolingCard pooling_;        // how embeddings pool (the model card's)
  bool speaks_ = false, transcribes_ = false;
  std::shared_ptr<Pipeline> pipeline_;  // set: a text-to-image pipeline (no model_)
  std::mutex work_mu_;                  // embeddings, speech and transcriptions run one at a time
  int threads_ = 1;                     // OpenMP threads they run on: the creator's (--threads)
  std::vector<int32_t> stop_ids_;
  int64_t vocab_ = 0, created_ = 0;
  // The vocabulary as a grammar reads it (each token's bytes and their
  // trie), made at the first request with a response_format.
  std::shared_ptr<const GrammarVocab> grammar_vocab();
  std::once_flag grammar_vocab_once_;
  std::shared_ptr<const GrammarVocab> grammar_vocab_;
  std::unique_ptr<GatedHttpServer> http_;
  int listen_fd_ = -1;                  // the listening socket, its backlog widened after bind
};

}  // namespace arch::serve
