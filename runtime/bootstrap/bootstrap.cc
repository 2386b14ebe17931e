// (bootstrap under construction)
#include "bootstrap/bootstrap.hh"

namespace loom::bootstrap {

result<identity> discover() {
    return not_supported("bootstrap is not built yet");
}

result<std::unique_ptr<kv_store>> connect_store(const std::string&, const identity&, double) {
    return not_supported("bootstrap is not built yet");
}

}  // namespace loom::bootstrap
