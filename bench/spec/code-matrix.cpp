#include <cstddef>
#include <stdexcept>
#include <vector>

// A dense row-major matrix of doubles.
class Matrix {
  public:
    Matrix(std::size_t rows, std::size_t cols) : rows_(rows), cols_(cols), data_(rows * cols) {}

    std::size_t rows() const { return rows_; }
    std::size_t cols() const { return cols_; }
    double& operator()(std::size_t r, std::size_t c) { return data_[r * cols_ + c]; }
    double operator()(std::size_t r, std::size_t c) const { return data_[r * cols_ + c]; }

    // The matrix product this * other; throws std::invalid_argument when the shapes differ.
    Matrix multiply(const Matrix& other) const {
