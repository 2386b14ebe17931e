// (family under construction)
#include "families.hh"

namespace loom::algorithms {

std::vector<const algorithm*> family_alltoall_pairwise() { return {}; }

}  // namespace loom::algorithms
