// SPDX-License-Identifier: Apache-2.0
// Fabric shapes: star, ring, torus, mesh, full mesh.
//
// Nomenclature. A shape has `dims` d_0 x d_1 x ... x d_{k-1}. Ranks map to coordinates in
// row-major order: the LAST dimension varies fastest, rank = ((c_0 * d_1) + c_1) * d_2 + c_2.
// A ring:N is a one-dimensional torus. A star:N (one switch) and a fullmesh:N (a direct link
// between every pair) have one "dimension" of size N and every pair one hop apart.
// Depends on nothing but runtime/base (docs/architecture.md#layout).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.hh"

namespace loom::topology {

enum class kind { star, ring, torus, mesh, full_mesh };

class shape {
  public:
    /// Parses "star:N", "ring:N", "torus:4x4x2", "mesh:3x5", "fullmesh:N".
    static result<shape> parse(std::string_view text);
    static shape star(int n);

    kind type() const { return kind_; }
    int size() const { return size_; }
    const std::vector<int>& dims() const { return dims_; }
    int ndims() const { return static_cast<int>(dims_.size()); }
    /// True on direct-wired lattices (ring, torus, mesh) where ranks link only to neighbours.
    bool is_lattice() const {
        return kind_ == kind::ring || kind_ == kind::torus || kind_ == kind::mesh;
    }
    /// True where each lattice dimension closes into a ring (torus, ring).
    bool wraps() const { return kind_ == kind::ring || kind_ == kind::torus; }

    std::vector<int> coords(int rank) const;
    int rank_of(const std::vector<int>& coords) const;
    /// The rank reached from `rank` by moving `step` along dimension `dim` (wrapping on a
    /// torus); -1 if a mesh boundary is crossed.
    int neighbour(int rank, int dim, int step) const;

    /// Distinct physical neighbours of a rank.
    std::vector<int> neighbours(int rank) const;
    /// Physical hops between two ranks (shortest path; 1 for distinct ranks on star/full mesh).
    int hops(int a, int b) const;
    /// Torus sum floor(d_i/2); mesh sum (d_i - 1); 1 for star and full mesh (0 if N = 1).
    int diameter() const;
    /// The diameter in physical links crossed: a star's ranks are two links apart (rank →
    /// switch → rank: 2, where diameter() counts the one rank hop); equal to diameter()
    /// elsewhere, every hop being one link.
    int diameter_links() const;
    /// Links cut by the smallest balanced bisection (halves of floor(N/2) and ceil(N/2)
    /// ranks; each undirected link once). On a lattice the cheapest cut across one
    /// dimension: straight when d_i is even (torus 2N/d_i, mesh or 2-ring N/d_i; with an even
    /// d_max that is the texts' 2N/d_max), a one-step staircase when d_i is odd (torus 3x3:
    /// 6 + 2 = 8, mesh 2x5: 2 + 1 = 3). Checked against every balanced cut up to 16 ranks.
    int64_t bisection_links() const;
    /// Largest dimension (d_max of the torus all-to-all formulas).
    int max_dim() const;

    std::string to_string() const;
    /// "5" on a star or full mesh, "5(1,1)" on a lattice: the rank and its coordinates.
    std::string rank_label(int rank) const;

  private:
    kind kind_ = kind::star;
    std::vector<int> dims_;
    int size_ = 0;
};

const char* kind_name(kind k);

}  // namespace loom::topology
