#pragma once
// The labelled arrays of a sweep file, shared by the particles' sweep file (sweep_file.cpp)
// and the density solver's (src/meanfield/density_sweep.cpp): coordinates made dimension
// scales, datasets over the sweep's axes with one chunk per run, and one run's block of them.
// Private to the library: it names HDF5's types.
#include "files/hdf5.hpp"
#include "nadyn/files/sweep_file.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace nadyn::detail {

std::vector<hsize_t> concat_shape(std::vector<hsize_t> a, const std::vector<hsize_t>& b);

// The datasets of a new sweep file over its axes, whose scales it makes first.
class sweep_arrays {
  public:
    using scale_list = std::vector<const hdf5_dataset*>;

    // Makes each axis a dimension scale of its values' type (int64, float64 or string).
    sweep_arrays(hdf5_file& file, const std::vector<sweep_file_axis>& axes);

    // A 1-D coordinate made a dimension scale named after itself.
    hdf5_dataset scale(const std::string& name, hid_t type, std::size_t length, const void* values,
                       const std::string& text);
    // A dataset over the axes, then `rest` (with its scales): one chunk per run (rest_chunk
    // empty), or per rest_chunk-sized part of a run's block; `fill` one value of `type`.
    hdf5_dataset variable(const std::string& name, hid_t type, const std::vector<hsize_t>& rest,
                          const scale_list& rest_scales, const void* fill, const std::string& text,
                          const std::vector<hsize_t>& rest_chunk = {});

  private:
    hdf5_file& m_file;
    std::vector<hsize_t> m_lengths;
    std::vector<hdf5_dataset> m_axis_scales;
};

// One run's block of dataset `name`: its point on the axes, then the whole of `rest`.
void write_run_block(const hdf5_group& file, const std::string& name,
                     const std::vector<hsize_t>& point, const std::vector<hsize_t>& rest,
                     const void* data, hid_t memory_type);
void read_run_block(const hdf5_group& file, const std::string& name,
                    const std::vector<hsize_t>& point, const std::vector<hsize_t>& rest,
                    hid_t memory_type, void* out);

} // namespace nadyn::detail
