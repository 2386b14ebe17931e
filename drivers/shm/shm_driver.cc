// (driver under construction)
#include "drivers/registry_internal.hh"

namespace loom::drivers {

result<std::unique_ptr<endpoint>> open_shm(const endpoint_config&) {
    return not_supported("the shm driver is not built yet");
}

}  // namespace loom::drivers
