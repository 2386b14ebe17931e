// (driver under construction)
#include "drivers/registry_internal.hh"

namespace loom::drivers {

result<std::unique_ptr<endpoint>> open_fault(std::unique_ptr<endpoint>, const endpoint_config&) {
    return not_supported("the fault driver is not built yet");
}

}  // namespace loom::drivers
