// POST /v1/rerank: documents ordered by a cross-encoder's relevance to a
// query, in the shape the common rerank APIs share (Cohere's, Jina's):
// {query, documents: [text | {text}], top_n, return_documents} in,
// {results: [{index, relevance_score, document?}], usage} out. Fields it
// does not honour are refused by name.
#include <httplib.h>

#include "engine/runtime/text_encoder.h"
#include "engine/serve/http_reply.h"
#include "engine/serve/openai_reply.h"
#include "engine/serve/server.h"

namespace arch::serve {

void Server::rerank(const httplib::Request& req, httplib::Response& res) {
  auto parsed = json_request(req);
  if (auto* e = std::get_if<ApiError>(&parsed)) return reply_error(res, *e);
  const nlohmann::json& j = std::get<nlohmann::json>(parsed);
  if (!reranks_)
    return reply_error(res, bad_request("model '" + name_ + "' has no sequence-classification head" +
                                            (tok_ ? "" : " and no tokenizer") + ": it serves " + serves(),
                                        "model"));
  for (const auto& [key, value] : j.items())
    if (key != "model" && key != "query" && key != "documents" && key != "top_n" && key != "return_documents")
      return reply_error(res, bad_request("'" + key + "' is not a field this server honours (model, query, documents, top_n, return_documents)", key));
  if (!j.contains("query") || !j["query"].is_string() || j["query"].get<std::string>().empty())
    return reply_error(res, bad_request("'query' must be a non-empty string", "query"));
  if (!j.contains("documents") || !j["documents"].is_array() || j["documents"].empty())
    return reply_error(res, bad_request("'documents' must be a non-empty array of strings (or of {\"text\": ...})", "documents"));
  if (j["documents"].size() > 2048) return reply_error(res, bad_request("'documents' holds more than 2048 documents", "documents"));
  std::vector<std::string> documents;
  for (const auto& d : j["documents"]) {
    if (d.is_string()) documents.push_back(d.get<std::string>());
    else if (d.is_object() && d.size() == 1 && d.contains("text") && d["text"].is_string()) documents.push_back(d["text"].get<std::string>());
    else return reply_error(res, bad_request("each document must be a string or {\"text\": string}", "documents"));
  }
  size_t top_n = documents.size();
  if (j.contains("top_n") && !j["top_n"].is_null()) {
    if (!j["top_n"].is_number_integer() || j["top_n"].get<int64_t>() < 1)
      return reply_error(res, bad_request("'top_n' must be a positive integer", "top_n"));
    top_n = std::min<size_t>(top_n, size_t(j["top_n"].get<int64_t>()));
  }
  bool return_documents = false;
  if (j.contains("return_documents") && !j["return_documents"].is_null()) {
    if (!j["return_documents"].is_boolean()) return reply_error(res, bad_request("'return_documents' must be true or false", "return_documents"));
    return_documents = j["return_documents"].get<bool>();
  }
  Result<std::vector<RankedPassage>> ranked = error("");
  {
    auto lock = hold_work();
    ranked = arch::rerank(*model_, *tok_, j["query"].get<std::string>(), documents);
  }
  if (!ranked.ok()) return reply_error(res, bad_request(ranked.error().message, "documents"));
  size_t tokens = 0;
  for (const RankedPassage& r : *ranked) tokens += r.tokens;
  nlohmann::json results = nlohmann::json::array();
  for (size_t i = 0; i < top_n; ++i) {
    const RankedPassage& r = (*ranked)[i];
    nlohmann::json item = {{"index", r.index}, {"relevance_score", r.relevance_score}};
    if (return_documents) item["document"] = {{"text", documents[r.index]}};
    results.push_back(std::move(item));
  }
  const std::string id = make_header(false, name_).id;  // "cmpl-<time><n>"
  reply_json(res, {{"id", "rerank-" + id.substr(id.find('-') + 1)}, {"model", name_}, {"results", results},
                   {"usage", {{"total_tokens", tokens}}}});
}

}  // namespace arch::serve
