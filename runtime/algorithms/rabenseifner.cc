// (family under construction)
#include "families.hh"

namespace loom::algorithms {

std::vector<const algorithm*> family_rabenseifner() { return {}; }

}  // namespace loom::algorithms
