// Checks a template before anything runs, without a config: names defined,
// functions known, argument counts and attribute names, weight references
// declared, return only in blocks. Reports every problem, not just the first.
#pragma once

#include <vector>

#include "dsl/ast.h"
#include "engine/core/error.h"
#include "engine/core/op.h"

namespace arch::dsl {

std::vector<Error> check_template(const Template& t, const OpTable& ops);

}  // namespace arch::dsl
