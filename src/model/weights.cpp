#include "nadyn/model/weights.hpp"

#include "nadyn/model/error.hpp"
#include "nadyn/model/random.hpp"

#include <Eigen/QR>
#include <Eigen/SVD>

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

namespace nadyn {

bool attention_weights::is_identity() const {
    for (const auto& head : heads)
        if (head.Q.size() != 0 || head.K.size() != 0 || head.V.size() != 0) return false;
    return true;
}

bool attention_weights::has_norm_noise() const {
    for (const auto& head : heads)
        if (!head.query_norm.empty() || !head.key_norm.empty() || !head.value_norm.empty())
            return true;
    return false;
}

bool attention_weights::query_equals_key() const {
    for (const auto& head : heads) {
        if (head.Q.size() != head.K.size()) return false;
        if (head.Q.size() != 0 && head.Q != head.K) return false;
    }
    return true;
}

namespace {

struct family_name {
    std::string_view name;
    weights_family family;
};

constexpr std::array<family_name, 8> family_names{
    {{"identity", weights_family::identity},
     {"gaussian", weights_family::gaussian},
     {"orthogonal", weights_family::orthogonal},
     {"gpt2", weights_family::gpt2},
     {"symmetric", weights_family::symmetric},
     {"interaction-product", weights_family::interaction_product},
     {"interaction-symmetric", weights_family::interaction_symmetric},
     {"interaction-gpt2", weights_family::interaction_gpt2}}};

struct value_name {
    std::string_view name;
    value_family family;
};

constexpr std::array<value_name, 10> value_family_names{
    {{"same", value_family::same},
     {"identity", value_family::identity},
     {"minus-identity", value_family::minus_identity},
     {"gaussian", value_family::gaussian},
     {"orthogonal", value_family::orthogonal},
     {"gpt2", value_family::gpt2},
     {"qk", value_family::qk},
     {"minus-qk", value_family::minus_qk},
     {"interaction", value_family::interaction},
     {"minus-interaction", value_family::minus_interaction}}};

constexpr std::string_view per_layer_suffix = "-per-layer";

} // namespace

value_family parse_value_family(std::string_view text) {
    for (const auto& row : value_family_names)
        if (row.name == text) return row.family;
    throw input_error("unknown value '" + std::string(text) +
                      "'; valid choices: " + std::string(value_names));
}

std::string_view to_string(value_family family) {
    for (const auto& row : value_family_names)
        if (row.family == family) return row.name;
    return "same";
}

head_combine parse_head_combine(std::string_view text) {
    if (text == "mean") return head_combine::mean;
    if (text == "sum") return head_combine::sum;
    throw input_error("unknown head-combine '" + std::string(text) +
                      "'; valid choices: " + std::string(head_combine_names));
}

std::string_view to_string(head_combine combine) {
    return combine == head_combine::sum ? "sum" : "mean";
}

weights_spec weights_spec::parse(const std::string& text) {
    weights_spec spec;
    if (text.rfind("file:", 0) == 0 && text.size() > 5) {
        spec.family = weights_family::file;
        spec.path = text.substr(5);
        return spec;
    }
    std::string_view name = text;
    if (name.size() > per_layer_suffix.size() &&
        name.substr(name.size() - per_layer_suffix.size()) == per_layer_suffix) {
        spec.per_layer = true;
        name.remove_suffix(per_layer_suffix.size());
    }
    if (name == "random") {
        spec.family = weights_family::gaussian;
        spec.random_alias = true;
        return spec;
    }
    for (const auto& row : family_names) {
        if (row.name == name) {
            spec.family = row.family;
            return spec;
        }
    }
    throw input_error("unknown weights '" + text +
                      "'; valid choices: " + std::string(weights_names));
}

std::string weights_spec::to_string() const {
    if (family == weights_family::file) return "file:" + path;
    std::string name = random_alias ? "random" : "identity";
    for (const auto& row : family_names)
        if (row.family == family && !random_alias) name = row.name;
    if (per_layer) name += per_layer_suffix;
    return name;
}

bool weights_spec::is_random() const {
    return family != weights_family::identity && family != weights_family::file;
}

bool weights_spec::draws() const {
    switch (value) {
    case value_family::gaussian:
    case value_family::orthogonal:
    case value_family::gpt2:
        return true;
    case value_family::same:
    case value_family::identity:
    case value_family::minus_identity:
    case value_family::qk:
    case value_family::minus_qk:
    case value_family::interaction:
    case value_family::minus_interaction:
        break;
    }
    return is_random();
}

namespace {

enum slot : std::size_t { query_slot = 0, key_slot = 1, value_slot = 2 };

// The d x d standard normals of matrix `slot` of head `head` at `layer`: the stream of
// (layer, head) after slot d^2 normals. Head 0, slots Q, K, V in turn, are the numbers the
// one-head model drew from a single stream.
matrix standard_normals(std::uint64_t seed, std::int64_t layer, std::size_t head, slot which,
                        std::size_t d, double scale) {
    random_source source(stream_seed(seed, weights_stream_id(layer, head)));
    for (std::size_t i = 0; i < static_cast<std::size_t>(which) * d * d; ++i)
        (void)source.normal();
    matrix m(static_cast<Eigen::Index>(d), static_cast<Eigen::Index>(d));
    for (Eigen::Index i = 0; i < m.rows(); ++i)
        for (Eigen::Index j = 0; j < m.cols(); ++j)
            m(i, j) = scale * source.normal();
    return m;
}

// Haar-distributed: the Q factor of a gaussian matrix with R's diagonal made positive.
matrix orthogonal_from(const matrix& gaussian) {
    const Eigen::HouseholderQR<matrix> qr(gaussian);
    matrix q = qr.householderQ();
    const matrix& r = qr.matrixQR();
    for (Eigen::Index j = 0; j < q.cols(); ++j)
        if (r(j, j) < 0.0) q.col(j) *= -1.0;
    return q;
}

enum class drawn { gaussian, orthogonal, gpt2 };

matrix draw(drawn kind, std::uint64_t seed, std::int64_t layer, std::size_t head, slot which,
            std::size_t d) {
    switch (kind) {
    case drawn::gaussian:
        return standard_normals(seed, layer, head, which, d,
                                1.0 / std::sqrt(static_cast<double>(d))); // variance 1/d
    case drawn::gpt2:
        return standard_normals(seed, layer, head, which, d, 0.02);
    case drawn::orthogonal:
        return orthogonal_from(standard_normals(seed, layer, head, which, d, 1.0));
    }
    return {};
}

matrix identity_if_empty(const matrix& m, std::size_t d) {
    if (m.size() != 0) return m;
    return matrix::Identity(static_cast<Eigen::Index>(d), static_cast<Eigen::Index>(d));
}

// V = sign Q^T K / ‖Q^T K‖_2.
// The interaction matrix B = Q^T K of a head (its logits are <theta_k, B theta_j>), which
// the tied values are built from.
matrix interaction_matrix(const attention_head& head, std::size_t d) {
    return identity_if_empty(head.Q, d).transpose() * identity_if_empty(head.K, d);
}

matrix tied_value(const attention_head& head, std::size_t d, std::size_t h, double sign) {
    const matrix product = interaction_matrix(head, d);
    const double norm = Eigen::JacobiSVD<matrix>(product).singularValues()(0);
    if (!(norm > 0.0) || !std::isfinite(norm))
        throw input_error("value 'qk' needs Q^T K != 0, but head " + std::to_string(h) +
                          " has Q^T K = 0 (spectral norm " + std::to_string(norm) +
                          "); choose another --value");
    return (sign / norm) * product;
}

// V = sign B^T / sqrt(d) with B = Q^T K: in the peers' row-vector convention (a token is a
// row, its value the row times V) their V = sign B / sqrt(d) is this V.
matrix interaction_value(const attention_head& head, std::size_t d, double sign) {
    return (sign / std::sqrt(static_cast<double>(d))) * interaction_matrix(head, d).transpose();
}

} // namespace

attention_weights make_weights(const weights_spec& spec, std::size_t d, std::uint64_t seed,
                               std::int64_t layer) {
    if (spec.heads < 1) throw input_error("heads must be at least 1, got 0");
    // Fixed weights use the run's streams whatever `layer` says.
    const std::int64_t stream_layer = spec.per_layer ? layer : -1;
    attention_weights weights;
    weights.heads.assign(spec.heads, attention_head{});
    if (spec.family == weights_family::file) {
        if (!spec.contents)
            throw std::logic_error("weights '" + spec.to_string() +
                                   "' are not read: read_input_files (nadyn/input_files.hpp) "
                                   "reads the file into the spec");
        weights.heads = spec.contents->heads;
        const auto read_for_this_shape = [&](const matrix& m) {
            return m.size() == 0 || (std::size_t(m.rows()) == d && std::size_t(m.cols()) == d);
        };
        const bool fits = weights.heads.size() == spec.heads &&
                          std::all_of(weights.heads.begin(), weights.heads.end(),
                                      [&](const attention_head& head) {
                                          return read_for_this_shape(head.Q) &&
                                                 read_for_this_shape(head.K) &&
                                                 read_for_this_shape(head.V);
                                      });
        if (!fits)
            throw std::logic_error("weights '" + spec.to_string() +
                                   "' were read for another d or number of heads");
    }
    for (std::size_t h = 0; h < spec.heads; ++h) {
        attention_head& head = weights.heads[h];
        auto drawn_as = [&](drawn kind, slot which) {
            return draw(kind, seed, stream_layer, h, which, d);
        };
        switch (spec.family) {
        case weights_family::identity:
        case weights_family::file:
            break;
        case weights_family::gaussian:
            head.Q = drawn_as(drawn::gaussian, query_slot);
            head.K = drawn_as(drawn::gaussian, key_slot);
            break;
        case weights_family::gpt2:
            head.Q = drawn_as(drawn::gpt2, query_slot);
            head.K = drawn_as(drawn::gpt2, key_slot);
            break;
        case weights_family::orthogonal:
            head.Q = drawn_as(drawn::orthogonal, query_slot);
            head.K = drawn_as(drawn::orthogonal, key_slot);
            break;
        case weights_family::symmetric:
            head.Q = drawn_as(drawn::gaussian, query_slot);
            head.K = head.Q;
            break;
        // B = Q^T K drawn directly: Q = I (empty), K = B.
        case weights_family::interaction_product:
            head.K = standard_normals(seed, stream_layer, h, query_slot, d, 1.0) *
                     standard_normals(seed, stream_layer, h, key_slot, d, 1.0) /
                     std::sqrt(static_cast<double>(d));
            break;
        case weights_family::interaction_symmetric: {
            const matrix g = standard_normals(seed, stream_layer, h, query_slot, d, 1.0);
            head.K = (g + g.transpose()) / std::sqrt(2.0);
            break;
        }
        case weights_family::interaction_gpt2:
            head.K = drawn_as(drawn::gpt2, query_slot);
            break;
        }
        switch (spec.value) {
        case value_family::same:
            switch (spec.family) {
            case weights_family::identity:
            case weights_family::file:
            case weights_family::interaction_product: // V = I, as the peers' default
            case weights_family::interaction_symmetric:
            case weights_family::interaction_gpt2:
                break;
            case weights_family::gaussian:
            case weights_family::symmetric:
                head.V = drawn_as(drawn::gaussian, value_slot);
                break;
            case weights_family::gpt2:
                head.V = drawn_as(drawn::gpt2, value_slot);
                break;
            case weights_family::orthogonal:
                head.V = drawn_as(drawn::orthogonal, value_slot);
                break;
            }
            break;
        case value_family::identity:
            head.V = matrix{};
            break;
        case value_family::minus_identity:
            head.V = -matrix::Identity(static_cast<Eigen::Index>(d), static_cast<Eigen::Index>(d));
            break;
        case value_family::gaussian:
            head.V = drawn_as(drawn::gaussian, value_slot);
            break;
        case value_family::orthogonal:
            head.V = drawn_as(drawn::orthogonal, value_slot);
            break;
        case value_family::gpt2:
            head.V = drawn_as(drawn::gpt2, value_slot);
            break;
        case value_family::qk:
            head.V = tied_value(head, d, h, 1.0);
            break;
        case value_family::minus_qk:
            head.V = tied_value(head, d, h, -1.0);
            break;
        case value_family::interaction:
            head.V = interaction_value(head, d, 1.0);
            break;
        case value_family::minus_interaction:
            head.V = interaction_value(head, d, -1.0);
            break;
        }
    }
    return weights;
}

attention_weights combine_heads(attention_weights weights, head_combine combine, std::size_t d) {
    const std::size_t heads = weights.heads.size();
    if (combine == head_combine::sum || heads <= 1) return weights;
    const double share = 1.0 / static_cast<double>(heads);
    for (attention_head& head : weights.heads)
        head.V = share * identity_if_empty(head.V, d);
    return weights;
}

std::vector<stacked_matrix> stacked_weight_matrices(const attention_weights& weights,
                                                    std::size_t d) {
    std::vector<stacked_matrix> out;
    const std::size_t heads = weights.heads.size(), size = d * d;
    for (const auto& [name, member] : {std::pair{"Q", &attention_head::Q},
                                       {"K", &attention_head::K},
                                       {"V", &attention_head::V}}) {
        bool any = false;
        for (const attention_head& head : weights.heads)
            any = any || (head.*member).size() != 0;
        if (!any) continue;
        std::vector<double> values(heads * size);
        for (std::size_t h = 0; h < heads; ++h) {
            const matrix& m = weights.heads[h].*member;
            const matrix full = m.size() != 0 ? m
                                              : matrix::Identity(static_cast<Eigen::Index>(d),
                                                                 static_cast<Eigen::Index>(d));
            std::copy(full.data(), full.data() + size,
                      values.begin() + static_cast<std::ptrdiff_t>(h * size));
        }
        out.push_back({name, std::move(values)});
    }
    return out;
}

void draw_norm_noise(attention_weights& weights, std::size_t n, double sigma, std::uint64_t seed,
                     std::int64_t layer) {
    for (std::size_t h = 0; h < weights.heads.size(); ++h) {
        attention_head& head = weights.heads[h];
        if (sigma == 0.0) {
            head.query_norm.clear();
            head.key_norm.clear();
            head.value_norm.clear();
            continue;
        }
        random_source source(stream_seed(seed, norm_noise_stream_id(layer, h)));
        for (std::vector<double>* factors : {&head.query_norm, &head.key_norm, &head.value_norm}) {
            factors->resize(n);
            for (double& f : *factors)
                f = 1.0 + sigma * source.normal();
        }
    }
}

} // namespace nadyn
