// The one choice of the kernel's path (src/model/kernel/choose.hpp).
#include "choose.hpp"

#include "small_d.hpp"
#include "small_n.hpp"

#include <stdexcept>
#include <string>

namespace nadyn {

namespace {

using kernel::path;

bool in_float(path p) {
    switch (p) {
    case path::general:
    case path::small_n:
    case path::symmetric:
    case path::symmetric_small_d:
        return false;
    case path::single_precision:
    case path::single_precision_small_n:
    case path::single_precision_symmetric:
    case path::single_precision_symmetric_small_d:
        return true;
    }
    return false;
}

} // namespace

bool kernel::is_symmetric(path p) {
    switch (p) {
    case path::general:
    case path::small_n:
    case path::single_precision:
    case path::single_precision_small_n:
        return false;
    case path::symmetric:
    case path::symmetric_small_d:
    case path::single_precision_symmetric:
    case path::single_precision_symmetric_small_d:
        return true;
    }
    return false;
}

bool kernel::can_take(path p, const call_shape& shape, const attention_options& options,
                      bool same_keys) {
    if (in_float(p) != (options.arithmetic == precision::single_precision)) return false;
    const bool symmetric = same_keys && !options.causal && options.beta >= 0.0;
    switch (p) {
    case path::general:
    case path::single_precision:
        return true;
    case path::small_n:
    case path::single_precision_small_n:
        return options.kind == attention_kind::softmax && detail::takes_small_n(shape.n, shape.d);
    case path::symmetric:
    case path::single_precision_symmetric:
        return symmetric;
    case path::symmetric_small_d:
    case path::single_precision_symmetric_small_d:
        return symmetric && shape.d <= small_dimension;
    }
    return false;
}

kernel::path kernel::choose_path(const call_shape& shape, const attention_options& options,
                                 bool same_keys, std::optional<path> forced) {
    if (forced) {
        if (!can_take(*forced, shape, options, same_keys))
            throw std::invalid_argument(
                "attention_kernel: the forced path " + std::string(to_string(*forced)) +
                " cannot take this head (its arithmetic, shape, Q = K, causal mask or beta)");
        return *forced;
    }
    const bool single = options.arithmetic == precision::single_precision;
    if (can_take(path::symmetric, shape, options, same_keys) ||
        can_take(path::single_precision_symmetric, shape, options, same_keys)) {
        if (shape.d <= small_dimension)
            return single ? path::single_precision_symmetric_small_d : path::symmetric_small_d;
        return single ? path::single_precision_symmetric : path::symmetric;
    }
    if (single)
        return can_take(path::single_precision_small_n, shape, options, same_keys)
                   ? path::single_precision_small_n
                   : path::single_precision;
    return can_take(path::small_n, shape, options, same_keys) ? path::small_n : path::general;
}

std::string_view to_string(attention_kernel::path p) {
    switch (p) {
    case path::general:
        return "general";
    case path::small_n:
        return "small_n";
    case path::symmetric:
        return "symmetric";
    case path::symmetric_small_d:
        return "symmetric_small_d";
    case path::single_precision:
        return "single_precision";
    case path::single_precision_small_n:
        return "single_precision_small_n";
    case path::single_precision_symmetric:
        return "single_precision_symmetric";
    case path::single_precision_symmetric_small_d:
        return "single_precision_symmetric_small_d";
    }
    return "unknown";
}

} // namespace nadyn
