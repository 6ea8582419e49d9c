// The .arch grammar: one small struct per rule, named for the concept.
// Every rule used under `must<>` has its own message in errors.h, so a
// diagnostic never shows a C++ rule name.
#pragma once

#include <string_view>

#include <tao/pegtl.hpp>

namespace arch::dsl::grammar {

using namespace tao::pegtl;

// Lexical: whitespace (newlines included) and `#` comments separate tokens.
struct comment : seq<one<'#'>, until<eolf>> {};
struct ws : star<sor<space, comment>> {};

struct ident_first : ranges<'a', 'z', 'A', 'Z', '_'> {};
struct ident_other : ranges<'a', 'z', 'A', 'Z', '0', '9', '_'> {};
struct name_chars : seq<ident_first, star<ident_other>> {};

struct kw_family : TAO_PEGTL_KEYWORD("family") {};
struct kw_import : TAO_PEGTL_KEYWORD("import") {};
struct kw_config : TAO_PEGTL_KEYWORD("config") {};
struct kw_flags : TAO_PEGTL_KEYWORD("flags") {};
struct kw_weights : TAO_PEGTL_KEYWORD("weights") {};
struct kw_block : TAO_PEGTL_KEYWORD("block") {};
struct kw_graph : TAO_PEGTL_KEYWORD("graph") {};
struct kw_for : TAO_PEGTL_KEYWORD("for") {};
struct kw_in : TAO_PEGTL_KEYWORD("in") {};
struct kw_as : TAO_PEGTL_KEYWORD("as") {};
struct kw_if : TAO_PEGTL_KEYWORD("if") {};
struct kw_then : TAO_PEGTL_KEYWORD("then") {};
struct kw_else : TAO_PEGTL_KEYWORD("else") {};
struct kw_output : TAO_PEGTL_KEYWORD("output") {};
struct kw_return : TAO_PEGTL_KEYWORD("return") {};
struct kw_optional : TAO_PEGTL_KEYWORD("optional") {};
struct kw_alias : TAO_PEGTL_KEYWORD("alias") {};
struct kw_unread : TAO_PEGTL_KEYWORD("unread") {};
struct kw_true : TAO_PEGTL_KEYWORD("true") {};
struct kw_false : TAO_PEGTL_KEYWORD("false") {};
struct kw_null : TAO_PEGTL_KEYWORD("null") {};
struct kw_and : TAO_PEGTL_KEYWORD("and") {};
struct kw_or : TAO_PEGTL_KEYWORD("or") {};
struct kw_not : TAO_PEGTL_KEYWORD("not") {};

// A name that is not a reserved word (the kw_ rules above, each a whole
// word: a keyword added there is added to `words` too). Matched by hand:
// tried at every name, as a chain of 24 keyword rules it was a tenth of a
// parse.
struct identifier {
  using rule_t = identifier;
  using subs_t = empty_list;

  static bool reserved(std::string_view w) {
    static constexpr std::string_view words[] = {
        "family", "import", "config", "flags", "weights", "block", "graph", "for", "in",   "as",  "if", "then",
        "else",   "output", "return", "optional", "alias", "unread", "true", "false", "null", "and", "or", "not"};
    for (std::string_view k : words)
      if (k == w) return true;
    return false;
  }
  template <typename ParseInput>
  static bool match(ParseInput& in) {
    const size_t avail = in.size();  // a memory input: the rest of the text
    const char* p = in.current();
    auto first = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
    auto other = [&](char c) { return first(c) || (c >= '0' && c <= '9'); };
    if (avail == 0 || !first(p[0])) return false;
    size_t n = 1;
    while (n < avail && other(p[n])) ++n;
    if (reserved(std::string_view(p, n))) return false;
    in.bump_in_this_line(n);
    return true;
  }
};

// `vision.embed_image`: a name, or a name in an imported namespace (a call
// into `import "clip_vision.arch" as vision(...)`, or a block of its that
// the importing file redefines). One dot at most, never a range's `..`.
struct dotted_identifier {
  using rule_t = dotted_identifier;
  using subs_t = empty_list;

  template <typename ParseInput>
  static bool match(ParseInput& in) {
    if (!identifier::match(in)) return false;
    const char* p = in.current();
    const size_t avail = in.size();
    auto first = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
    if (avail >= 2 && p[0] == '.' && first(p[1])) {
      auto other = [&](char c) { return first(c) || (c >= '0' && c <= '9'); };
      size_t n = 2;
      while (n < avail && other(p[n])) ++n;
      in.bump_in_this_line(n);
    }
    return true;
  }
};

// A name in a declaration (a rule of its own so its error says what is named).
struct family_name : identifier {};
struct field_name : identifier {};
struct block_name : dotted_identifier {};
struct graph_name : identifier {};
struct loop_var : identifier {};
struct scope_name : identifier {};
struct output_name : identifier {};
struct param_name : identifier {};

// Literals.
struct digits : plus<digit> {};
struct exponent : seq<one<'e', 'E'>, opt<one<'+', '-'>>, digits> {};
struct number : seq<digits, opt<one<'.'>, digits>, opt<exponent>> {};
// Strings are UTF-8 text: a stray byte is refused where it stands (it
// would reach an attribute, a message, a JSON dump downstream).
struct string_bad_byte : failure {};  // under must<>: its message
struct string_char : seq<not_at<one<'"', '\n'>>, sor<utf8::any, must<string_bad_byte>>> {};
struct string_body : star<string_char> {};
struct string_close : one<'"'> {};
struct string_lit : seq<one<'"'>, string_body, must<string_close>> {};

struct expr;
struct required_expr;  // an expression that must be there (the only one with an error text)
struct comma : seq<ws, one<','>, ws> {};

// Paths name weights: model.layers.{i}.self_attn.q_proj.weight
struct path_index : digits {};
struct path_expr_close : one<'}'> {};
struct path_expr : seq<one<'{'>, ws, must<required_expr>, ws, must<path_expr_close>> {};
struct path_member : name_chars {};
struct path_seg : sor<path_expr, path_index, path_member> {};
// A '.' that is not the start of a range's '..' (for i in first..last).
struct path_dot : seq<one<'.'>, not_at<one<'.'>>> {};
struct path : seq<identifier, star<path_dot, must<path_seg>>> {};

// Calls: rms_norm(h, L.input_layernorm.weight, eps: rms_norm_eps)
struct kwarg_name : identifier {};
struct kwarg : seq<kwarg_name, ws, one<':'>, ws, must<required_expr>> {};
struct call_arg : sor<kwarg, expr> {};
struct call_close : one<')'> {};
struct call_args : seq<one<'('>, ws, opt<list<call_arg, comma>>, ws, must<call_close>> {};
struct callee : dotted_identifier {};
struct call : seq<callee, call_args> {};

struct list_close : one<']'> {};
struct list_lit : seq<one<'['>, ws, opt<list<expr, comma>, opt<comma>>, ws, must<list_close>> {};
struct paren_close : one<')'> {};
struct paren : seq<one<'('>, ws, must<required_expr>, ws, must<paren_close>> {};

struct primary : sor<number, string_lit, kw_true, kw_false, kw_null, list_lit, paren, call, path> {};

struct transpose_t : one<'T'> {};
struct transpose : seq<one<'^'>, must<transpose_t>> {};
struct index_close : one<']'> {};
struct index : seq<one<'['>, ws, must<required_expr>, ws, must<index_close>> {};
struct postfix : seq<primary, star<sor<transpose, index>>> {};

struct negate : one<'-'> {};
struct negated;
struct unary : sor<negated, postfix> {};
struct unary_operand : unary {};
struct negated : seq<negate, ws, must<unary_operand>> {};
struct op_mul : sor<string<'/', '/'>, one<'*', '/', '%', '@'>> {};
struct rhs_unary : unary {};
struct product : seq<unary, star<ws, op_mul, ws, must<rhs_unary>>> {};
struct op_add : seq<one<'+', '-'>, not_at<one<'='>>> {};
struct rhs_product : product {};
struct sum : seq<product, star<ws, op_add, ws, must<rhs_product>>> {};
struct op_cmp
    : sor<string<'=', '='>, string<'!', '='>, string<'<', '='>, string<'>', '='>, one<'<', '>'>> {};
struct rhs_sum : sum {};
struct comparison : seq<sum, opt<ws, op_cmp, ws, must<rhs_sum>>> {};
struct logical_not;
struct not_expr : sor<logical_not, comparison> {};
struct not_operand : not_expr {};
struct logical_not : seq<kw_not, ws, must<not_operand>> {};
struct rhs_not : not_expr {};
struct and_expr : seq<not_expr, star<ws, kw_and, ws, must<rhs_not>>> {};
struct rhs_and : and_expr {};
struct or_expr : seq<and_expr, star<ws, kw_or, ws, must<rhs_and>>> {};
struct cond_then : kw_then {};
struct cond_else : kw_else {};
struct conditional : seq<kw_if, ws, must<required_expr>, ws, must<cond_then>, ws, must<required_expr>, ws,
                         must<cond_else>, ws, must<required_expr>> {};
struct expr : sor<conditional, or_expr> {};
struct required_expr : expr {};

// Statements of a graph or block body.
struct body;
struct assign_eq : seq<one<'='>, not_at<one<'='>>> {};
struct assign_targets : list<identifier, comma> {};  // a, b = kv_cache(k, v)
struct assign : seq<assign_targets, ws, assign_eq, ws, must<required_expr>> {};
struct output_eq : one<'='> {};
struct output_suffix : path_expr {};  // output hidden_state_{s + 1} = h
struct output_stmt : seq<kw_output, ws, must<output_name>, opt<output_suffix>, opt<index>, ws,
                         must<output_eq>, ws, must<required_expr>> {};
struct return_stmt : seq<kw_return, ws, must<required_expr>> {};
struct if_stmt;
struct else_branch : sor<if_stmt, body> {};
struct if_stmt : seq<kw_if, ws, must<required_expr>, ws, must<body>,
                     opt<ws, kw_else, ws, must<else_branch>>> {};
struct range_dots : string<'.', '.'> {};
struct for_in : kw_in {};
struct for_scope : seq<kw_as, ws, must<scope_name>> {};
struct for_stmt : seq<kw_for, ws, must<loop_var>, ws, must<for_in>, ws, must<required_expr>, ws,
                      must<range_dots>, ws, must<required_expr>, opt<ws, for_scope>, ws, must<body>> {};
struct call_stmt : call {};  // error("...") on its own
struct stmt : sor<if_stmt, for_stmt, output_stmt, return_stmt, assign, call_stmt> {};
struct body_close : one<'}'> {};
struct body : seq<one<'{'>, ws, star<stmt, ws, opt<one<';'>>, ws>, must<body_close>> {};

// Types of config fields and graph inputs.
struct scalar_type : sor<TAO_PEGTL_KEYWORD("int"), TAO_PEGTL_KEYWORD("float"),
                         TAO_PEGTL_KEYWORD("bool"), TAO_PEGTL_KEYWORD("str"),
                         TAO_PEGTL_KEYWORD("json")> {};
struct list_type_close : one<']'> {};
struct elem_type : scalar_type {};
struct list_type : seq<one<'['>, ws, must<elem_type>, ws, must<list_type_close>> {};
struct type_name : sor<list_type, scalar_type> {};

// config { hidden_size: int  head_dim: int = hidden_size / num_attention_heads }
struct field_colon : one<':'> {};
struct field_default : seq<one<'='>, ws, must<required_expr>> {};
struct config_field : seq<field_name, ws, must<field_colon>, ws, must<type_name>,
                          opt<ws, field_default>> {};
struct block_open : one<'{'> {};
struct config_close : one<'}'> {};
struct config_block : seq<kw_config, ws, must<block_open>, ws,
                          star<config_field, ws, opt<one<';'>>, ws>, must<config_close>> {};

// flags { has_qk_norm = exists(model.layers.0.self_attn.q_norm.weight) }
struct flag_eq : one<'='> {};
struct flag_decl : seq<field_name, ws, must<flag_eq>, ws, must<required_expr>> {};
struct flags_close : one<'}'> {};
struct flags_block : seq<kw_flags, ws, must<block_open>, ws, star<flag_decl, ws, opt<one<';'>>, ws>,
                         must<flags_close>> {};

// weights { model.layers.{i}.self_attn.q_proj.bias: [q_dim] if has_attention_bias }
struct pattern_var : seq<one<'{'>, ws, identifier, ws, one<'}'>> {};
struct pattern_any : one<'*'> {};   // any one segment
struct pattern_seg : sor<pattern_var, pattern_any, path_index, path_member> {};
struct weight_pattern : seq<identifier, star<one<'.'>, must<pattern_seg>>> {};
struct checkpoint_shape : seq<one<'['>, ws, one<'*'>, ws, one<']'>> {};   // [*]: as the checkpoint has it
struct weight_shape : sor<checkpoint_shape, list_lit> {};
struct weight_cond : seq<kw_if, ws, must<required_expr>> {};
struct weight_colon : one<':'> {};
struct optional_mark : kw_optional {};
struct weight_decl : seq<opt<optional_mark, ws>, weight_pattern, ws, must<weight_colon>, ws,
                         must<weight_shape>, opt<ws, weight_cond>> {};
struct alias_eq : one<'='> {};
struct alias_target : weight_pattern {};
struct alias_pattern : weight_pattern {};
struct alias_decl : seq<kw_alias, ws, must<alias_pattern>, ws, must<alias_eq>, ws,
                        must<alias_target>, opt<ws, weight_cond>> {};
// unread posterior_encoder: "trains the model only": the checkpoint's
// tensors under the pattern that no graph reads, and why (archrun info).
struct unread_pattern : weight_pattern {};
struct unread_reason : string_lit {};
struct unread_decl : seq<kw_unread, ws, must<unread_pattern>, ws, must<weight_colon>, ws, must<unread_reason>> {};
struct weights_close : one<'}'> {};
struct weights_block : seq<kw_weights, ws, must<block_open>, ws,
                           star<sor<unread_decl, alias_decl, weight_decl>, ws, opt<one<';'>>, ws>,
                           must<weights_close>> {};

// block swiglu(x, gate, up, down) { ... return y }
struct params_open : one<'('> {};
struct params_close : one<')'> {};
struct params : seq<must<params_open>, ws, opt<list<param_name, comma>>, ws, must<params_close>> {};
struct block_def : seq<kw_block, ws, must<block_name>, ws, params, ws, must<body>> {};

// graph step(tokens: i32[seq], positions: i32[seq]) { ... }
// graph decode(tokens: i32[seq], state encoder_hidden_states: f32[src, d_model]) { ... }
// `state`: the session holds the input once given (not a reserved word).
struct state_mark : TAO_PEGTL_KEYWORD("state") {};
struct input_colon : one<':'> {};
struct input_dtype : identifier {};
struct input_shape : list_lit {};
// `= expr` after the shape: a call may leave the input out (a number fills
// it; `null` leaves it absent, for an op's optional input).
struct input_default : seq<one<'='>, ws, must<required_expr>> {};
struct graph_input : seq<opt<state_mark, ws, at<name_chars>>, param_name, ws, must<input_colon>, ws, must<input_dtype>,
                         must<input_shape>, opt<ws, input_default>> {};
struct inputs_open : one<'('> {};
struct inputs_close : one<')'> {};
struct graph_inputs : seq<must<inputs_open>, ws, opt<list<graph_input, comma>>, ws,
                          must<inputs_close>> {};
struct graph_def : seq<kw_graph, ws, must<graph_name>, ws, graph_inputs, ws, must<body>> {};

struct import_path : string_lit {};
// import "clip_vision.arch" as vision(config: vision_config, weights: vision_tower.vision_model):
// the imported template kept whole under its own name, its config read from
// the config's `vision_config` object, its weights under the prefix.
struct import_space : identifier {};
struct import_config : identifier {};
struct import_weights : weight_pattern {};
struct import_open : one<'('> {};
struct import_close : one<')'> {};
struct import_config_key : kw_config {};
struct import_weights_key : kw_weights {};
struct import_comma : seq<ws, one<','>, ws> {};
struct import_scope : seq<kw_as, ws, must<import_space>, ws, must<import_open>, ws, must<import_config_key>, ws,
                          must<field_colon>, ws, must<import_config>, must<import_comma>, must<import_weights_key>, ws,
                          must<field_colon>, ws, must<import_weights>, ws, must<import_close>> {};
struct import_decl : seq<kw_import, ws, must<import_path>, opt<ws, import_scope>> {};
struct family_decl : seq<kw_family, ws, must<family_name>> {};
struct item : sor<import_decl, config_block, flags_block, weights_block, block_def, graph_def> {};
struct end_of_file : eof {};
struct file : seq<ws, must<family_decl>, ws, star<item, ws>, must<end_of_file>> {};

}  // namespace arch::dsl::grammar
