#include "nadyn/files/input_files.hpp"

#include "files/hdf5.hpp"
#include "files/sha256.hpp"

#include "nadyn/files/h5md.hpp"
#include "nadyn/model/error.hpp"

#include <algorithm>
#include <memory>
#include <utility>

namespace nadyn {

initial_file_contents read_initial_file(const std::string& path, std::size_t n, std::size_t d) {
    // One file's reads under one hold of the HDF5 lock: a sweep's runs read their inputs from
    // several threads.
    const auto guard = detail::hdf5_lock();
    auto theta0 =
        read_matrix_dataset(path, "theta0", false, [&](std::size_t rows, std::size_t cols) {
            check_init_theta0_shape(path, n, d, rows, cols);
        });
    if (!theta0)
        throw input_error("init file '" + path + "' has no dataset 'theta0' (n x d directions)");
    initial_file_contents contents;
    contents.rows = theta0->rows;
    contents.cols = theta0->cols;
    contents.theta0 = std::move(theta0->values);
    if (auto radii = read_matrix_dataset(path, "r0", true, [&](std::size_t rows, std::size_t cols) {
            check_init_r0_shape(path, n, rows, cols);
        }))
        contents.r0 = std::move(radii->values);
    return contents;
}

attention_weights read_weights_file(const std::string& path, std::size_t d, std::size_t heads) {
    // One file's reads under one hold of the HDF5 lock: a sweep's runs read their inputs from
    // several threads.
    const auto guard = detail::hdf5_lock();
    attention_weights weights;
    weights.heads.assign(heads, attention_head{});
    for (const auto& [name, member] : {std::pair{"Q", &attention_head::Q},
                                       {"K", &attention_head::K},
                                       {"V", &attention_head::V}}) {
        const std::string dataset(name);
        auto data = read_matrix_stack_dataset(
            path, dataset, [&](std::size_t stack, std::size_t rows, std::size_t cols) {
                if (rows != d || cols != d)
                    throw input_error("dataset '" + dataset + "' in weights file '" + path +
                                      "' must be " + std::to_string(d) + " x " + std::to_string(d) +
                                      " or H x " + std::to_string(d) + " x " + std::to_string(d) +
                                      ", found " +
                                      (stack != 0 ? std::to_string(stack) + " x " : "") +
                                      std::to_string(rows) + " x " + std::to_string(cols));
                if (stack != 0 && stack != heads)
                    throw input_error(
                        "dataset '" + dataset + "' in weights file '" + path + "' holds " +
                        std::to_string(stack) + " heads, but --heads is " + std::to_string(heads) +
                        " (give --heads " + std::to_string(stack) + " or a d x d dataset)");
            });
        if (!data) continue;
        const std::size_t size = d * d;
        for (std::size_t h = 0; h < heads; ++h) {
            matrix& m = weights.heads[h].*member;
            m.resize(static_cast<Eigen::Index>(d), static_cast<Eigen::Index>(d));
            const std::size_t offset = data->stack == 0 ? 0 : h * size;
            std::copy(data->values.begin() + static_cast<std::ptrdiff_t>(offset),
                      data->values.begin() + static_cast<std::ptrdiff_t>(offset + size), m.data());
        }
    }
    if (weights.is_identity())
        throw input_error("weights file '" + path +
                          "' has none of the datasets Q, K, V (each d x d or H x d x d)");
    return weights;
}

layer_norm_affine read_layer_norm_affine(const std::string& path, std::size_t d) {
    // One file's reads under one hold of the HDF5 lock: a sweep's runs read their inputs from
    // several threads.
    const auto guard = detail::hdf5_lock();
    layer_norm_affine affine;
    for (const auto& [name, member] :
         {std::pair{"gain", &layer_norm_affine::gain}, {"bias", &layer_norm_affine::bias}}) {
        const std::string dataset(name);
        auto data =
            read_matrix_dataset(path, dataset, true, [&](std::size_t rows, std::size_t cols) {
                // One of them 1 first, so that the product cannot wrap around.
                if ((rows != 1 && cols != 1) || rows * cols != d)
                    throw input_error("dataset '" + dataset + "' in ln-params file '" + path +
                                      "' must have d = " + std::to_string(d) + " entries, found " +
                                      std::to_string(rows) + " x " + std::to_string(cols));
            });
        if (!data) continue; // (the reader refuses non-finite values)
        affine.*member = std::move(data->values);
    }
    if (affine.identity())
        throw input_error("ln-params file '" + path +
                          "' has neither dataset 'gain' nor 'bias' (each d numbers)");
    return affine;
}

initial_spec with_file_contents(initial_spec spec, std::size_t n, std::size_t d) {
    if (spec.kind == initial_kind::file)
        spec.contents =
            std::make_shared<const initial_file_contents>(read_initial_file(spec.path, n, d));
    return spec;
}

weights_spec with_file_contents(weights_spec spec, std::size_t d) {
    if (spec.family == weights_family::file)
        spec.contents =
            std::make_shared<const attention_weights>(read_weights_file(spec.path, d, spec.heads));
    return spec;
}

std::string input_file_sha256(const std::string& path) {
    return detail::file_sha256(path);
}

} // namespace nadyn
