// SPDX-License-Identifier: Apache-2.0
#include "lines.hh"

namespace loom::topology {

int dim_stride(const shape& s, int dim) {
    int stride = 1;
    for (int j = dim + 1; j < s.ndims(); ++j) {
        stride *= s.dims()[j];
    }
    return stride;
}

std::vector<int> active_dims(const shape& s) {
    std::vector<int> out;
    for (int i = 0; i < s.ndims(); ++i) {
        if (s.dims()[i] > 1) {
            out.push_back(i);
        }
    }
    return out;
}

std::vector<int> dim_line(const shape& s, int rank, int dim) {
    const int d = s.dims()[dim], stride = dim_stride(s, dim);
    // Row-major: moving along `dim` adds `stride`; the line starts where coordinate dim is 0.
    const int first = rank - (rank / stride % d) * stride;
    std::vector<int> line(d);
    for (int c = 0; c < d; ++c) {
        line[c] = first + c * stride;
    }
    return line;
}

std::vector<std::vector<int>> dim_lines(const shape& s, int dim) {
    const int d = s.dims()[dim], stride = dim_stride(s, dim);
    std::vector<std::vector<int>> out;
    out.reserve(s.size() / d);
    for (int r = 0; r < s.size(); ++r) {
        if (r / stride % d == 0) {  // coordinate dim is 0: the line's first rank
            out.push_back(dim_line(s, r, dim));
        }
    }
    return out;
}

bool dim_closes(const shape& s, int dim) {
    return s.wraps() && s.dims()[dim] >= 3;
}

}  // namespace loom::topology
