#include "nadyn/weights.hpp"

#include "nadyn/error.hpp"
#include "nadyn/h5md.hpp"
#include "nadyn/random.hpp"

#include <cmath>

namespace nadyn {

bool attention_weights::is_identity() const {
    for (const auto& head : heads)
        if (head.Q.size() != 0 || head.K.size() != 0 || head.V.size() != 0) return false;
    return true;
}

bool attention_weights::query_equals_key() const {
    for (const auto& head : heads) {
        if (head.Q.size() != head.K.size()) return false;
        if (head.Q.size() != 0 && head.Q != head.K) return false;
    }
    return true;
}

weights_spec weights_spec::parse(const std::string& text) {
    if (text == "identity") return {weights_kind::identity, {}};
    if (text == "random") return {weights_kind::random, {}};
    if (text == "random-per-layer") return {weights_kind::random_per_layer, {}};
    if (text.rfind("file:", 0) == 0 && text.size() > 5) return {weights_kind::file, text.substr(5)};
    throw input_error("unknown weights '" + text +
                      "'; valid choices: identity, random, random-per-layer, file:PATH");
}

std::string weights_spec::to_string() const {
    switch (kind) {
    case weights_kind::identity:
        return "identity";
    case weights_kind::random:
        return "random";
    case weights_kind::random_per_layer:
        return "random-per-layer";
    case weights_kind::file:
        return "file:" + path;
    }
    return "identity";
}

namespace {

matrix gaussian_matrix(random_source& source, std::size_t d) {
    const double scale = 1.0 / std::sqrt(static_cast<double>(d)); // variance 1/d
    matrix m(static_cast<Eigen::Index>(d), static_cast<Eigen::Index>(d));
    for (Eigen::Index i = 0; i < m.rows(); ++i)
        for (Eigen::Index j = 0; j < m.cols(); ++j)
            m(i, j) = scale * source.normal();
    return m;
}

matrix read_square(const std::string& path, const char* name, std::size_t d) {
    auto data = read_matrix_dataset(path, name, false, [&](std::size_t rows, std::size_t cols) {
        if (rows != d || cols != d)
            throw input_error("dataset '" + std::string(name) + "' in weights file '" + path +
                              "' must be " + std::to_string(d) + " x " + std::to_string(d) +
                              ", found " + std::to_string(rows) + " x " + std::to_string(cols));
    });
    if (!data) return {};
    matrix m(static_cast<Eigen::Index>(d), static_cast<Eigen::Index>(d));
    std::copy(data->values.begin(), data->values.end(), m.data());
    return m;
}

} // namespace

attention_weights make_weights(const weights_spec& spec, std::size_t d, std::uint64_t seed,
                               std::int64_t layer) {
    attention_weights weights;
    attention_head& head = weights.heads.front();
    switch (spec.kind) {
    case weights_kind::identity:
        break;
    case weights_kind::random:
    case weights_kind::random_per_layer: {
        const std::uint64_t stream = spec.kind == weights_kind::random || layer < 0
                                         ? weights_stream
                                         : layer_weights_stream + static_cast<std::uint64_t>(layer);
        random_source source(stream_seed(seed, stream));
        head.Q = gaussian_matrix(source, d);
        head.K = gaussian_matrix(source, d);
        head.V = gaussian_matrix(source, d);
        break;
    }
    case weights_kind::file:
        head.Q = read_square(spec.path, "Q", d);
        head.K = read_square(spec.path, "K", d);
        head.V = read_square(spec.path, "V", d);
        if (weights.is_identity())
            throw input_error("weights file '" + spec.path +
                              "' has none of the datasets Q, K, V (each d x d)");
        break;
    }
    return weights;
}

} // namespace nadyn
