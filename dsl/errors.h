// One table for the grammar's error texts: what the parser expected where a
// `must<>` failed, in the template author's words. A rule with a text here
// raises whenever it fails (PEGTL's must_if), so only rules used solely
// under must<> have one.
#pragma once

#include <tao/pegtl.hpp>

#include "dsl/grammar.h"

namespace arch::dsl {

struct grammar_errors {
  template <typename Rule>
  static constexpr const char* message = nullptr;
};

#define ARCH_GRAMMAR_ERROR(rule, text) \
  template <>                          \
  inline constexpr const char* grammar_errors::message<grammar::rule> = text

ARCH_GRAMMAR_ERROR(family_decl, "a template starts with 'family NAME'");
ARCH_GRAMMAR_ERROR(family_name, "expected the family's name after 'family'");
ARCH_GRAMMAR_ERROR(end_of_file, "expected 'config', 'flags', 'weights', 'block', 'graph' or 'import'");
ARCH_GRAMMAR_ERROR(import_path, "expected a quoted file name after 'import'");
ARCH_GRAMMAR_ERROR(import_space, "expected the namespace's name after 'as'");
ARCH_GRAMMAR_ERROR(import_open, "expected '(config: FIELD, weights: PREFIX)' after the namespace's name");
ARCH_GRAMMAR_ERROR(import_config_key, "expected 'config:' and the config field holding the imported template's config");
ARCH_GRAMMAR_ERROR(import_config, "expected the config field holding the imported template's config");
ARCH_GRAMMAR_ERROR(import_comma, "expected ', weights:' and the prefix of the imported template's weights");
ARCH_GRAMMAR_ERROR(import_weights_key, "expected ', weights:' and the prefix of the imported template's weights");
ARCH_GRAMMAR_ERROR(import_weights, "expected the prefix of the imported template's weights (vision_tower.vision_model)");
ARCH_GRAMMAR_ERROR(import_close, "expected ')' to close the import's namespace");
ARCH_GRAMMAR_ERROR(string_close, "unterminated string: expected '\"' before the end of the line");
ARCH_GRAMMAR_ERROR(string_bad_byte, "a byte that is not UTF-8 text in a string (a template is UTF-8)");

ARCH_GRAMMAR_ERROR(block_open, "expected '{'");
ARCH_GRAMMAR_ERROR(config_close, "expected a config field ('name: type' or 'name: type = default') or '}'");
ARCH_GRAMMAR_ERROR(field_colon, "expected ':' and a type after the config field's name");
ARCH_GRAMMAR_ERROR(type_name, "expected a type: int, float, bool, str, json, or a list such as [int]");
ARCH_GRAMMAR_ERROR(elem_type, "expected an element type: int, float, bool, str or json");
ARCH_GRAMMAR_ERROR(list_type_close, "expected ']' to close the list type");

ARCH_GRAMMAR_ERROR(flags_close, "expected a flag ('name = expression') or '}'");
ARCH_GRAMMAR_ERROR(flag_eq, "expected '=' and the flag's expression");

ARCH_GRAMMAR_ERROR(weights_close, "expected a weight ('name.pattern: [shape]'), an 'alias', an 'unread', or '}'");
ARCH_GRAMMAR_ERROR(weight_colon, "expected ':' and the weight's shape, e.g. ': [hidden_size]'");
ARCH_GRAMMAR_ERROR(weight_shape, "expected the weight's shape in brackets, e.g. [vocab_size, hidden_size]");
ARCH_GRAMMAR_ERROR(alias_pattern, "expected a weight name such as model.layers.{i}.mlp.up_proj.weight");
ARCH_GRAMMAR_ERROR(pattern_seg, "expected a name, a number or '{var}' after '.' in the weight name");
ARCH_GRAMMAR_ERROR(alias_eq, "expected '=' and the weight this alias stands for");
ARCH_GRAMMAR_ERROR(alias_target, "expected the weight name the alias stands for");
ARCH_GRAMMAR_ERROR(unread_pattern, "expected the name the unread tensors are under, such as posterior_encoder");
ARCH_GRAMMAR_ERROR(unread_reason, "expected why no graph reads them, as a string: unread posterior_encoder: \"trains the model only\"");

ARCH_GRAMMAR_ERROR(block_name, "expected the block's name after 'block'");
ARCH_GRAMMAR_ERROR(params_open, "expected '(' and the block's parameters");
ARCH_GRAMMAR_ERROR(params_close, "expected ',' or ')' in the parameter list");
ARCH_GRAMMAR_ERROR(graph_name, "expected the graph's name after 'graph'");
ARCH_GRAMMAR_ERROR(inputs_open, "expected '(' and the graph's inputs");
ARCH_GRAMMAR_ERROR(inputs_close, "expected ',' or ')' in the graph's inputs ('name: i32[seq]')");
ARCH_GRAMMAR_ERROR(input_colon, "expected ':' and the input's type, e.g. 'tokens: i32[seq]'");
ARCH_GRAMMAR_ERROR(input_dtype, "expected the input's element type, e.g. i32 or f32");
ARCH_GRAMMAR_ERROR(input_shape, "expected the input's shape in brackets, e.g. [seq]");

ARCH_GRAMMAR_ERROR(body, "expected '{' to open the body");
ARCH_GRAMMAR_ERROR(body_close, "expected a statement ('name = expression', 'if', 'for', 'output', 'return') or '}'");
ARCH_GRAMMAR_ERROR(else_branch, "expected '{' or 'if' after 'else'");
ARCH_GRAMMAR_ERROR(output_name, "expected the output's name after 'output'");
ARCH_GRAMMAR_ERROR(output_eq, "expected '=' and the output's value");
ARCH_GRAMMAR_ERROR(loop_var, "expected the loop variable after 'for'");
ARCH_GRAMMAR_ERROR(for_in, "expected 'in' after the loop variable");
ARCH_GRAMMAR_ERROR(range_dots, "expected '..' in the loop range, e.g. 0..num_hidden_layers");
ARCH_GRAMMAR_ERROR(scope_name, "expected the scope's name after 'as', e.g. 'as layers'");

ARCH_GRAMMAR_ERROR(required_expr, "expected an expression");
ARCH_GRAMMAR_ERROR(rhs_unary, "expected an operand after the operator");
ARCH_GRAMMAR_ERROR(unary_operand, "expected an operand after '-'");
ARCH_GRAMMAR_ERROR(rhs_product, "expected an operand after the operator");
ARCH_GRAMMAR_ERROR(rhs_sum, "expected an operand after the comparison");
ARCH_GRAMMAR_ERROR(not_operand, "expected an operand after 'not'");
ARCH_GRAMMAR_ERROR(rhs_not, "expected an operand after 'and'");
ARCH_GRAMMAR_ERROR(rhs_and, "expected an operand after 'or'");
ARCH_GRAMMAR_ERROR(cond_then, "expected 'then' in 'if CONDITION then A else B'");
ARCH_GRAMMAR_ERROR(cond_else, "expected 'else' in 'if CONDITION then A else B'");
ARCH_GRAMMAR_ERROR(path_seg, "expected a name, a number or '{expression}' after '.'");
ARCH_GRAMMAR_ERROR(path_expr_close, "expected '}' to close the '{...}' in the weight name");
ARCH_GRAMMAR_ERROR(call_close, "expected ',' or ')' in the argument list");
ARCH_GRAMMAR_ERROR(list_close, "expected ',' or ']' in the list");
ARCH_GRAMMAR_ERROR(paren_close, "expected ')'");
ARCH_GRAMMAR_ERROR(transpose_t, "expected 'T' after '^' (transpose is written W^T)");
ARCH_GRAMMAR_ERROR(index_close, "expected ']' to close the index");

#undef ARCH_GRAMMAR_ERROR

template <typename Rule>
using grammar_control = tao::pegtl::must_if<grammar_errors>::control<Rule>;

}  // namespace arch::dsl
