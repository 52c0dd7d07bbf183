#pragma once

#include <filesystem>
#include <span>

namespace csrun::test {

// The MNIST IDX pair (train-images-idx3-ubyte, train-labels-idx1-ubyte) in `directory`, made if
// missing: 28x28 grey levels per label.
void write_mnist_files(const std::filesystem::path& directory,
                       std::span<const unsigned char> pixels,
                       std::span<const unsigned char> labels);

}  // namespace csrun::test
