// (family under construction)
#include "families.hh"

namespace loom::algorithms {

std::vector<const algorithm*> family_binomial() { return {}; }

}  // namespace loom::algorithms
