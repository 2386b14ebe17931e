// (family under construction)
#include "families.hh"

namespace loom::algorithms {

std::vector<const algorithm*> family_sendrecv() { return {}; }

}  // namespace loom::algorithms
