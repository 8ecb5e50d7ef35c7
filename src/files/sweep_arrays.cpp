#include "files/sweep_arrays.hpp"

#include <type_traits>
#include <variant>

namespace nadyn::detail {

std::vector<hsize_t> concat_shape(std::vector<hsize_t> a, const std::vector<hsize_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

sweep_arrays::sweep_arrays(hdf5_file& file, const std::vector<sweep_file_axis>& axes)
    : m_file(file) {
    for (const sweep_file_axis& axis : axes) {
        m_lengths.push_back(axis.size());
        std::visit(
            [&](const auto& values) {
                using value = typename std::decay_t<decltype(values)>::value_type;
                if constexpr (std::is_same_v<value, std::int64_t>) {
                    m_axis_scales.push_back(scale(axis.name, H5T_NATIVE_INT64, values.size(),
                                                  values.data(), axis.description));
                } else if constexpr (std::is_same_v<value, double>) {
                    m_axis_scales.push_back(scale(axis.name, H5T_NATIVE_DOUBLE, values.size(),
                                                  values.data(), axis.description));
                } else {
                    std::vector<const char*> text;
                    for (const std::string& v : values)
                        text.push_back(v.c_str());
                    m_axis_scales.push_back(scale(axis.name, hdf5_string_type(), text.size(),
                                                  text.data(), axis.description));
                }
            },
            axis.values);
    }
}

hdf5_dataset sweep_arrays::scale(const std::string& name, hid_t type, std::size_t length,
                                 const void* values, const std::string& text) {
    hdf5_dataset dataset = m_file.create_dataset(name, type, {hsize_t(length)});
    if (length > 0) dataset.write_all(type, values);
    dataset.make_scale(name);
    dataset.write_attribute("description", text);
    return dataset;
}

hdf5_dataset sweep_arrays::variable(const std::string& name, hid_t type,
                                    const std::vector<hsize_t>& rest, const scale_list& rest_scales,
                                    const void* fill, const std::string& text,
                                    const std::vector<hsize_t>& rest_chunk) {
    const std::vector<hsize_t> ones(m_lengths.size(), 1);
    hdf5_dataset dataset =
        m_file.create_dataset(name, type, concat_shape(m_lengths, rest),
                              concat_shape(ones, rest_chunk.empty() ? rest : rest_chunk), fill);
    unsigned dimension = 0;
    for (const hdf5_dataset& axis : m_axis_scales)
        dataset.attach_scale(axis, dimension++);
    for (const hdf5_dataset* scale : rest_scales)
        dataset.attach_scale(*scale, dimension++);
    dataset.write_attribute("description", text);
    return dataset;
}

namespace {

std::vector<hsize_t> block_start(const std::vector<hsize_t>& point,
                                 const std::vector<hsize_t>& rest) {
    return concat_shape(point, std::vector<hsize_t>(rest.size(), 0));
}

std::vector<hsize_t> block_count(const std::vector<hsize_t>& point,
                                 const std::vector<hsize_t>& rest) {
    return concat_shape(std::vector<hsize_t>(point.size(), 1), rest);
}

} // namespace

void write_run_block(const hdf5_group& file, const std::string& name,
                     const std::vector<hsize_t>& point, const std::vector<hsize_t>& rest,
                     const void* data, hid_t memory_type) {
    file.open_dataset(name).write_block(block_start(point, rest), block_count(point, rest),
                                        memory_type, data);
}

void read_run_block(const hdf5_group& file, const std::string& name,
                    const std::vector<hsize_t>& point, const std::vector<hsize_t>& rest,
                    hid_t memory_type, void* out) {
    file.open_dataset(name).read_block(block_start(point, rest), block_count(point, rest),
                                       memory_type, out);
}

} // namespace nadyn::detail
