// (family under construction)
#include "families.hh"

namespace loom::algorithms {

std::vector<const algorithm*> family_recursive_doubling() { return {}; }

}  // namespace loom::algorithms
