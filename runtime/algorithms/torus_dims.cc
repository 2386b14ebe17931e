// (family under construction)
#include "families.hh"

namespace loom::algorithms {

std::vector<const algorithm*> family_torus_dims() { return {}; }

}  // namespace loom::algorithms
