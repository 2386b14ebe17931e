#include "engine/poll_source.hh"

namespace loom::engine {

poll_source source_of(drivers::endpoint& endpoint) {
    const drivers::fast_path& f = endpoint.fast();
    return poll_source{f.ctx, f.poll, f.pending, endpoint.idle_waker()};
}

poll_source source_of(offload& in_network) {
    return poll_source{
        &in_network,
        [](void* ctx, drivers::completion* out, int max) {
            offload_completion done[32];
            int n = static_cast<offload*>(ctx)->poll(done, max < 32 ? max : 32);
            for (int i = 0; i < n; ++i) {
                out[i]        = drivers::completion{};
                out[i].cookie = done[i].cookie;
                out[i].status = done[i].status;
                out[i].peer   = -1;
            }
            return n;
        },
        [](void* ctx) { return static_cast<offload*>(ctx)->pending(); },
        drivers::waker{},
    };
}

drivers::waker common_waker(const poll_source* sources, int n) {
    drivers::waker common;
    for (int i = 0; i < n; ++i) {
        const poll_source& s = sources[i];
        if (!s.wake) {
            if (s.pending == nullptr || s.pending(s.ctx)) {
                return {};  // work may come from it, and nothing would wake us for it
            }
            continue;
        }
        if (common && !common.same_as(s.wake)) {
            return {};
        }
        common = s.wake;
    }
    return common;
}

}  // namespace loom::engine
