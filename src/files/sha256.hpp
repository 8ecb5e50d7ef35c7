#pragma once
// SHA-256 (FIPS 180-4) of bytes and of files: the content hash nadyn records for each input
// file (init_sha256, weights_sha256, ln_params_sha256) and compares before a resume and
// among MPI ranks. Our own small implementation, since nothing in nadyn's stack (Boost 1.74,
// HDF5, Eigen) offers one and a cryptography library is a dependency too many for one hash;
// a recorded digest can be checked with `sha256sum FILE`. Tested against FIPS 180-4's
// examples (tests/unit/sha256.cpp).
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace nadyn::detail {

class sha256 {
  public:
    sha256();
    void update(const void* data, std::size_t size);
    void update(std::string_view text) { update(text.data(), text.size()); }
    // The digest as 64 lowercase hex digits (as sha256sum prints it); ends the hash.
    [[nodiscard]] std::string hex();

  private:
    void compress(const unsigned char* block);

    std::array<std::uint32_t, 8> m_state;
    std::array<unsigned char, 64> m_block{};
    std::size_t m_used = 0;       // bytes waiting in m_block
    std::uint64_t m_length = 0;   // bytes hashed so far
};

// The SHA-256 of the file at `path`, read in blocks; input_error naming the file when it
// cannot be read.
std::string file_sha256(const std::string& path);

} // namespace nadyn::detail
