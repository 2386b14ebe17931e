// SPDX-License-Identifier: Apache-2.0
// The ofi driver's registrations: the registration cache's backend (rendezvous buffers)
// and the blocks of receive and send buffers registered once at connect.
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "drivers/ofi/ofi.hh"

namespace loom::drivers::ofi {
namespace {

// Every access a rendezvous buffer may see: read by a peer (the sender's), written by a
// local read or receive (the receiver's), sent from (without RMA).
constexpr uint64_t all_access =
    FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;

result<fid_mr*> register_range(fabric& f, void* base, size_t len, uint64_t key) {
    fid_mr* mr = nullptr;
    int rc     = fi_mr_reg(f.domain(), base, len, all_access, 0, key, 0, &mr, nullptr);
    if (rc != 0) {
        return system_error("ofi: " + f.provider() + ": fi_mr_reg of " + std::to_string(len) +
                            " bytes: " + error_text(rc));
    }
    if (f.mr_endpoint()) {
        rc = fi_mr_bind(mr, &f.ep()->fid, 0);
        if (rc == 0) {
            rc = fi_mr_enable(mr);
        }
        if (rc != 0) {
            fi_close(&mr->fid);
            return system_error("ofi: " + f.provider() +
                                ": binding a registration: " + error_text(rc));
        }
    }
    return mr;
}

}  // namespace

result<mr_backend::handle> mr_backend::add(void* base, size_t len) {
    return register_range(*fabric_, base, len, next_key_++);
}

void mr_backend::remove(handle& h) {
    if (h != nullptr) {
        fi_close(&h->fid);
        h = nullptr;
    }
}

result<buffer_block> register_block(fabric& f, size_t each, size_t n) {
    buffer_block b;
    b.each       = (each + 63) & ~size_t{63};
    size_t page  = size_t(sysconf(_SC_PAGESIZE));
    size_t total = (b.each * n + page - 1) & ~(page - 1);
    b.base       = static_cast<char*>(std::aligned_alloc(page, total));
    if (b.base == nullptr) {
        return system_error("ofi: cannot allocate " + std::to_string(total) + " bytes of buffers");
    }
    std::memset(b.base, 0, total);
    b.n = n;
    // Block keys live far above the cache's, where the application picks keys.
    static uint64_t block_key = uint64_t{1} << 40;
    auto mr                   = register_range(f, b.base, total, block_key++);
    if (!mr) {
        std::free(b.base);
        b.base = nullptr;
        return mr.error();
    }
    b.mr   = *mr;
    b.desc = fi_mr_desc(b.mr);
    return b;
}

void release_block(buffer_block& b) {
    if (b.mr != nullptr) {
        fi_close(&b.mr->fid);
        b.mr = nullptr;
    }
    std::free(b.base);
    b.base = nullptr;
}

}  // namespace loom::drivers::ofi
