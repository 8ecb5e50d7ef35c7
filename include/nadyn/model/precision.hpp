#pragma once
// The arithmetic of the attention kernel (the --precision flag).
//
// double: everything in double precision (the default; the contract of docs/model.md §6).
// float: the kernel (logits, softmax, the products with the values) in single precision,
//   everything else in double: the state, the integrator, the per-token rates, the projection
//   onto the sphere and the observables. Unit norms then still hold to round-off in double;
//   A_k carries a relative error of about beta * 1e-7 (docs/testing.md, "Numerical contract"),
//   which the dynamics inherit. Single precision doubles the SIMD width and halves the memory
//   traffic of the O(n^2 d) part, for large systems where that error is acceptable.
#include <string>
#include <string_view>

namespace nadyn {

enum class precision { double_precision, single_precision };

// "double" | "float"; input_error naming the valid choices otherwise.
precision parse_precision(std::string_view name);
std::string_view to_string(precision p);
// "double, float" for messages and --help.
std::string precision_names();

} // namespace nadyn
