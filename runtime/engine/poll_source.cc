// SPDX-License-Identifier: Apache-2.0
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
        in_network.idle_waker(),
    };
}

// A source with nothing pending has no completion to wake us for, so only the pending ones
// must share the waker (an in-network call sleeps on its link while the driver is quiet);
// with none pending, any source's waker serves.
drivers::waker common_waker(const poll_source* sources, int n) {
    drivers::waker common, any;
    for (int i = 0; i < n; ++i) {
        const poll_source& s = sources[i];
        any                  = any ? any : s.wake;
        if (s.pending != nullptr && !s.pending(s.ctx)) {
            continue;
        }
        if (!s.wake || (common && !common.same_as(s.wake))) {
            return {};  // work may come from it, and nothing (or not one thing) would wake us
        }
        common = s.wake;
    }
    return common ? common : any;
}

}  // namespace loom::engine
