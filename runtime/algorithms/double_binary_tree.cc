// (family under construction)
#include "families.hh"

namespace loom::algorithms {

std::vector<const algorithm*> family_double_binary_tree() { return {}; }

}  // namespace loom::algorithms
