// The weight families of docs/model.md §7: what each matrix is (orthogonal, symmetric, tied
// to Q^T K), the variance of the random entries, the (layer, head, matrix) streams, weights
// files with H x d x d datasets, and the mean over heads.
#include "cli_support.hpp"
#include "nadyn/files/input_files.hpp"
#include "nadyn/model/error.hpp"
#include "nadyn/model/random.hpp"
#include "nadyn/model/weights.hpp"

#include <Eigen/Eigenvalues>
#include <Eigen/SVD>
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>

using namespace nadyn;

namespace {

weights_spec spec_of(const std::string& text, std::size_t heads = 1,
                     value_family value = value_family::same) {
    weights_spec spec = weights_spec::parse(text);
    spec.heads = heads;
    spec.value = value;
    return spec;
}

matrix identity(std::size_t d) {
    return matrix::Identity(static_cast<Eigen::Index>(d), static_cast<Eigen::Index>(d));
}

// sum of m_ij^2 / variance over the d^2 entries is chi-square with d^2 degrees of freedom
// when the entries are N(0, variance): it lies within 6 standard deviations, sqrt(2 d^2),
// of its mean d^2 except with probability below 1e-8.
void check_chi_square(const matrix& m, double variance) {
    const double count = static_cast<double>(m.size());
    const double statistic = m.squaredNorm() / variance;
    CHECK(std::abs(statistic - count) < 6.0 * std::sqrt(2.0 * count));
    // And the mean is zero: sum m_ij / sqrt(variance count) is N(0, 1).
    CHECK(std::abs(m.sum() / std::sqrt(variance * count)) < 6.0);
}

std::string scratch(const std::string& name) {
    const std::string dir = std::string(NADYN_TEST_TMPDIR) + "/weights_families";
    std::filesystem::create_directories(dir);
    return dir + "/" + name + ".h5";
}

std::vector<double> values_of(const std::vector<matrix>& ms) {
    std::vector<double> out;
    for (const matrix& m : ms)
        out.insert(out.end(), m.data(), m.data() + m.size());
    return out;
}

} // namespace

TEST_CASE("names parse and print back; random stays an alias of gaussian") {
    for (const char* text :
         {"identity", "gaussian", "orthogonal", "gpt2", "symmetric", "gaussian-per-layer",
          "orthogonal-per-layer", "gpt2-per-layer", "symmetric-per-layer", "random",
          "random-per-layer", "file:/tmp/w.h5", "interaction-product",
          "interaction-symmetric-per-layer", "interaction-gpt2"})
        CHECK(weights_spec::parse(text).to_string() == text);
    CHECK(weights_spec::parse("random").family == weights_family::gaussian);
    CHECK(weights_spec::parse("random-per-layer").per_layer);
    for (const char* bad : {"xavier", "-per-layer", "file:", "gaussian-per-layer-per-layer"})
        CHECK_THROWS_AS(weights_spec::parse(bad), input_error);
    for (const char* text : {"same", "identity", "minus-identity", "gaussian", "orthogonal", "gpt2",
                             "qk", "minus-qk", "interaction", "minus-interaction"})
        CHECK(to_string(parse_value_family(text)) == text);
    CHECK_THROWS_AS(parse_value_family("tied"), input_error);
    CHECK(parse_head_combine("sum") == head_combine::sum);
    CHECK_THROWS_AS(parse_head_combine("max"), input_error);
}

TEST_CASE("head 0 draws the one-head model's numbers; each (layer, head, matrix) its own") {
    const std::size_t d = 5;
    const std::uint64_t seed = 9;
    // The one-head model drew Q, K, V in turn from one stream, entries N(0, 1/d).
    for (std::int64_t layer : {-1, 0, 3}) {
        CAPTURE(layer);
        random_source source(stream_seed(seed, layer < 0 ? weights_stream
                                                         : layer_weights_stream +
                                                               static_cast<std::uint64_t>(layer)));
        matrix expected[3];
        for (matrix& m : expected) {
            m.resize(5, 5);
            for (Eigen::Index i = 0; i < 5; ++i)
                for (Eigen::Index j = 0; j < 5; ++j)
                    m(i, j) = (1.0 / std::sqrt(5.0)) * source.normal();
        }
        const auto w =
            make_weights(spec_of(layer < 0 ? "random" : "random-per-layer", 3), d, seed, layer);
        REQUIRE(w.heads.size() == 3);
        CHECK(w.heads[0].Q == expected[0]);
        CHECK(w.heads[0].K == expected[1]);
        CHECK(w.heads[0].V == expected[2]);
        CHECK(w.heads[1].Q != w.heads[0].Q);
        CHECK(w.heads[2].V != w.heads[1].V);
    }
    // Adding heads never changes the others.
    const auto three = make_weights(spec_of("gaussian", 3), d, seed);
    const auto five = make_weights(spec_of("gaussian", 5), d, seed);
    for (std::size_t h = 0; h < 3; ++h) {
        CHECK(three.heads[h].Q == five.heads[h].Q);
        CHECK(three.heads[h].K == five.heads[h].K);
        CHECK(three.heads[h].V == five.heads[h].V);
    }
    // V's family does not move Q and K, and a gaussian V is the same draw whatever the
    // weights' family.
    const auto own_v = make_weights(spec_of("orthogonal", 2, value_family::gaussian), d, seed);
    const auto same_v = make_weights(spec_of("orthogonal", 2), d, seed);
    for (std::size_t h = 0; h < 2; ++h) {
        CHECK(own_v.heads[h].Q == same_v.heads[h].Q);
        CHECK(own_v.heads[h].V == three.heads[h].V);
    }
    // Per-layer draws repeat and differ between layers; fixed weights ignore the layer.
    const auto per = spec_of("gpt2-per-layer", 2);
    CHECK(make_weights(per, d, seed, 4).heads[1].K == make_weights(per, d, seed, 4).heads[1].K);
    CHECK(make_weights(per, d, seed, 4).heads[1].K != make_weights(per, d, seed, 5).heads[1].K);
    CHECK(make_weights(spec_of("gpt2", 2), d, seed, 7).heads[1].K ==
          make_weights(spec_of("gpt2", 2), d, seed).heads[1].K);
}

TEST_CASE("orthogonal matrices satisfy Q^T Q = I; symmetric gives Q^T K symmetric PSD") {
    for (std::size_t d : {2, 3, 7, 16}) {
        CAPTURE(d);
        const auto w = make_weights(spec_of("orthogonal-per-layer", 3), d, 4, 2);
        for (const auto& head : w.heads)
            for (const matrix* m : {&head.Q, &head.K, &head.V}) {
                CHECK((m->transpose() * *m - identity(d)).cwiseAbs().maxCoeff() < 1e-12);
                CHECK((*m * m->transpose() - identity(d)).cwiseAbs().maxCoeff() < 1e-12);
            }
        const auto s = make_weights(spec_of("symmetric", 3), d, 4);
        for (const auto& head : s.heads) {
            const matrix qk = head.Q.transpose() * head.K;
            // FMA (the default build's instruction set) rounds Q^T K and K^T Q differently.
            CHECK((qk - qk.transpose()).cwiseAbs().maxCoeff() <= 1e-15 * qk.cwiseAbs().maxCoeff());
            const Eigen::SelfAdjointEigenSolver<matrix> eigen(qk);
            CHECK(eigen.eigenvalues().minCoeff() > -1e-12);
            CHECK(head.V.size() == static_cast<Eigen::Index>(d * d));
        }
        CHECK(s.query_equals_key());
    }
}

TEST_CASE("gaussian entries have variance 1/d, gpt2 entries 0.02^2 (chi-square bound)") {
    const std::size_t d = 48;
    for (std::uint64_t seed : {1, 2}) {
        const auto g = make_weights(spec_of("gaussian", 3), d, seed);
        const auto p = make_weights(spec_of("gpt2-per-layer", 3), d, seed, 11);
        for (std::size_t h = 0; h < 3; ++h)
            for (auto member : {&attention_head::Q, &attention_head::K, &attention_head::V}) {
                check_chi_square(g.heads[h].*member, 1.0 / double(d));
                check_chi_square(p.heads[h].*member, 0.02 * 0.02);
            }
    }
}

TEST_CASE("qk is Q^T K over its spectral norm; minus-qk its negative; identity values") {
    const std::size_t d = 6;
    const auto w = make_weights(spec_of("gaussian", 2, value_family::qk), d, 3);
    const auto minus = make_weights(spec_of("gaussian", 2, value_family::minus_qk), d, 3);
    for (std::size_t h = 0; h < 2; ++h) {
        const auto& head = w.heads[h];
        const Eigen::JacobiSVD<matrix> svd(head.V);
        CHECK(svd.singularValues()(0) == doctest::Approx(1.0).epsilon(1e-12));
        // V is proportional to Q^T K with a positive factor.
        const matrix qk = head.Q.transpose() * head.K;
        const double factor = qk.norm() / head.V.norm();
        CHECK((head.V * factor - qk).cwiseAbs().maxCoeff() < 1e-12 * qk.cwiseAbs().maxCoeff());
        CHECK(minus.heads[h].V == -head.V);
    }
    // Identity Q and K: Q^T K = I has norm 1, so V = I.
    CHECK(make_weights(spec_of("identity", 1, value_family::qk), d, 3).heads[0].V == identity(d));
    CHECK(make_weights(spec_of("gaussian", 1, value_family::minus_identity), d, 3).heads[0].V ==
          -identity(d));
    CHECK(make_weights(spec_of("gaussian", 1, value_family::identity), d, 3).heads[0].V.size() ==
          0);
    CHECK(make_weights(spec_of("identity"), d, 3).is_identity());
}

TEST_CASE("interaction families draw B = Q^T K itself from the same standard normals") {
    // The gaussian family's Q and K are the query and key slots' standard normals times
    // 1/sqrt(d) (and gpt2's times 0.02): B is rebuilt from them independently.
    for (std::size_t d : {2, 5, 16}) {
        CAPTURE(d);
        const double root = std::sqrt(double(d));
        for (std::int64_t layer : {-1, 3}) {
            const std::string suffix = layer < 0 ? "" : "-per-layer";
            const auto g = make_weights(spec_of("gaussian" + suffix, 2), d, 7, layer);
            const auto p = make_weights(spec_of("gpt2" + suffix, 2), d, 7, layer);
            const auto product =
                make_weights(spec_of("interaction-product" + suffix, 2), d, 7, layer);
            const auto symmetric =
                make_weights(spec_of("interaction-symmetric" + suffix, 2), d, 7, layer);
            const auto small = make_weights(spec_of("interaction-gpt2" + suffix, 2), d, 7, layer);
            for (std::size_t h = 0; h < 2; ++h) {
                const matrix g1 = root * g.heads[h].Q, g2 = root * g.heads[h].K;
                // Q = I (empty), K = B, V = I (empty) with value = same.
                for (const auto* w : {&product, &symmetric, &small}) {
                    CHECK(w->heads[h].Q.size() == 0);
                    CHECK(w->heads[h].V.size() == 0);
                }
                const matrix expected = g1 * g2 / root;
                CHECK((product.heads[h].K - expected).cwiseAbs().maxCoeff() <=
                      1e-14 * expected.cwiseAbs().maxCoeff());
                const matrix& b = symmetric.heads[h].K;
                CHECK((b - (g1 + g1.transpose()) / std::sqrt(2.0)).cwiseAbs().maxCoeff() <= 1e-14);
                CHECK(b == b.transpose());
                CHECK(small.heads[h].K == p.heads[h].Q);
            }
        }
    }
    // (G + G^T) / sqrt(2) is indefinite: at d = 16 both signs of eigenvalue occur.
    const matrix b = make_weights(spec_of("interaction-symmetric"), 16, 1).heads[0].K;
    const Eigen::SelfAdjointEigenSolver<matrix> eigen(b);
    CHECK(eigen.eigenvalues().minCoeff() < 0.0);
    CHECK(eigen.eigenvalues().maxCoeff() > 0.0);
}

TEST_CASE("interaction values are V = +-(Q^T K)^T / sqrt(d), with any family") {
    const std::size_t d = 6;
    for (const char* family : {"interaction-product", "gaussian"}) {
        CAPTURE(family);
        const auto w = make_weights(spec_of(family, 2, value_family::interaction), d, 3);
        const auto minus = make_weights(spec_of(family, 2, value_family::minus_interaction), d, 3);
        for (std::size_t h = 0; h < 2; ++h) {
            const auto& head = w.heads[h];
            const matrix q = head.Q.size() ? head.Q : identity(d);
            const matrix b = q.transpose() * head.K;
            CHECK((head.V - b.transpose() / std::sqrt(double(d))).cwiseAbs().maxCoeff() <= 1e-15);
            CHECK(minus.heads[h].V == -head.V);
        }
    }
}

TEST_CASE("weights files: d x d for every head, H x d x d per head, mismatches refused") {
    using nadyn_test::write_h5;
    const std::size_t d = 3;
    std::vector<matrix> q(2), k(2);
    random_source source(5);
    for (std::size_t h = 0; h < 2; ++h) {
        q[h] = matrix::NullaryExpr(3, 3, [&] { return source.normal(); });
        k[h] = matrix::NullaryExpr(3, 3, [&] { return source.normal(); });
    }
    const std::string stacked = scratch("stacked");
    write_h5(stacked, {{"Q", {2, 3, 3}, values_of(q)}, {"K", {2, 3, 3}, values_of(k)}});
    const auto w = make_weights(with_file_contents(spec_of("file:" + stacked, 2), d), d, 1);
    for (std::size_t h = 0; h < 2; ++h) {
        CHECK(w.heads[h].Q == q[h]);
        CHECK(w.heads[h].K == k[h]);
        CHECK(w.heads[h].V.size() == 0);
    }
    // A value family overrides the file's (absent) V, per head.
    const auto tied =
        make_weights(with_file_contents(spec_of("file:" + stacked, 2, value_family::qk), d), d, 1);
    CHECK(tied.heads[1].V.isApprox(
        q[1].transpose() * k[1] /
            Eigen::JacobiSVD<matrix>(q[1].transpose() * k[1]).singularValues()(0),
        1e-14));
    // Three heads asked of a file holding two.
    try {
        (void)with_file_contents(spec_of("file:" + stacked, 3), d);
        FAIL("no exception");
    } catch (const input_error& e) {
        CHECK(std::string(e.what()).find("holds 2 heads, but --heads is 3") != std::string::npos);
    }
    // A d x d dataset serves every head.
    const std::string shared = scratch("shared");
    write_h5(shared, {{"Q", {3, 3}, values_of({q[0]})}});
    const auto s = make_weights(with_file_contents(spec_of("file:" + shared, 4), d), d, 1);
    for (const auto& head : s.heads)
        CHECK(head.Q == q[0]);
    // Q^T K = 0 cannot be normalised.
    const std::string zero = scratch("zero");
    write_h5(zero, {{"Q", {3, 3}, std::vector<double>(9, 0.0)}});
    CHECK_THROWS_AS(
        make_weights(with_file_contents(spec_of("file:" + zero, 1, value_family::qk), d), d, 1),
        input_error);
    // Neither 2-D nor 3-D.
    const std::string flat = scratch("flat");
    write_h5(flat, {{"Q", {9}, values_of({q[0]})}});
    CHECK_THROWS_AS(with_file_contents(spec_of("file:" + flat), d), input_error);
}

TEST_CASE("the mean over heads scales each V by 1/H; sum and one head leave them") {
    const std::size_t d = 4;
    const auto w = make_weights(spec_of("gaussian", 3, value_family::identity), d, 2);
    const auto mean = combine_heads(w, head_combine::mean, d);
    for (std::size_t h = 0; h < 3; ++h) {
        CHECK(mean.heads[h].Q == w.heads[h].Q);
        CHECK(mean.heads[h].V == identity(d) * (1.0 / 3.0));
    }
    const auto sum = combine_heads(w, head_combine::sum, d);
    CHECK(sum.heads[2].V.size() == 0);
    const auto one = make_weights(spec_of("gaussian"), d, 2);
    CHECK(combine_heads(one, head_combine::mean, d).heads[0].V == one.heads[0].V);
}
