// (driver under construction)
#include "drivers/registry_internal.hh"

namespace loom::drivers {

result<std::unique_ptr<endpoint>> open_self(const endpoint_config&) {
    return not_supported("the self driver is not built yet");
}

}  // namespace loom::drivers
