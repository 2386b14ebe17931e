// SPDX-License-Identifier: Apache-2.0
// SHA-256, HMAC, constant-time comparison, random secrets (secret.hh).
#include "secret.hh"

#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace loom {
namespace {

constexpr uint32_t round_constants[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

uint32_t rotr(uint32_t x, int n) {
    return (x >> n) | (x << (32 - n));
}

class sha256_state {
  public:
    void update(const uint8_t* p, size_t n) {
        total_ += n;
        while (n > 0) {
            size_t take = std::min(n, sizeof block_ - used_);
            std::memcpy(block_ + used_, p, take);
            used_ += take;
            p += take;
            n -= take;
            if (used_ == sizeof block_) {
                compress();
                used_ = 0;
            }
        }
    }
    digest256 finish() {
        uint64_t bits = total_ * 8;
        uint8_t pad   = 0x80;
        update(&pad, 1);
        pad = 0;
        while (used_ != 56) {
            update(&pad, 1);
        }
        uint8_t len[8];
        for (int i = 0; i < 8; ++i) {
            len[i] = uint8_t(bits >> (56 - 8 * i));
        }
        update(len, 8);
        digest256 out;
        for (int i = 0; i < 8; ++i) {
            for (int b = 0; b < 4; ++b) {
                out[size_t(4 * i + b)] = uint8_t(h_[i] >> (24 - 8 * b));
            }
        }
        return out;
    }

  private:
    void compress() {
        uint32_t w[64];
        for (int i = 0; i < 16; ++i) {
            w[i] = uint32_t(block_[4 * i]) << 24 | uint32_t(block_[4 * i + 1]) << 16 |
                   uint32_t(block_[4 * i + 2]) << 8 | uint32_t(block_[4 * i + 3]);
        }
        for (int i = 16; i < 64; ++i) {
            uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
            uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
            w[i]        = w[i - 16] + s0 + w[i - 7] + s1;
        }
        uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6],
                 h = h_[7];
        for (int i = 0; i < 64; ++i) {
            uint32_t s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
            uint32_t ch = (e & f) ^ (~e & g);
            uint32_t t1 = h + s1 + ch + round_constants[i] + w[i];
            uint32_t s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
            uint32_t mj = (a & b) ^ (a & c) ^ (b & c);
            uint32_t t2 = s0 + mj;
            h           = g;
            g           = f;
            f           = e;
            e           = d + t1;
            d           = c;
            c           = b;
            b           = a;
            a           = t1 + t2;
        }
        h_[0] += a;
        h_[1] += b;
        h_[2] += c;
        h_[3] += d;
        h_[4] += e;
        h_[5] += f;
        h_[6] += g;
        h_[7] += h;
    }

    uint32_t h_[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                      0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    uint8_t block_[64]{};
    size_t used_    = 0;
    uint64_t total_ = 0;
};

}  // namespace

digest256 sha256(std::span<const uint8_t> data) {
    sha256_state s;
    s.update(data.data(), data.size());
    return s.finish();
}

digest256 hmac_sha256(std::span<const uint8_t> key, std::span<const uint8_t> msg) {
    uint8_t k[64] = {};
    if (key.size() > sizeof k) {
        digest256 d = sha256(key);
        std::memcpy(k, d.data(), d.size());
    } else if (!key.empty()) {
        std::memcpy(k, key.data(), key.size());
    }
    uint8_t pad[64];
    for (size_t i = 0; i < 64; ++i) {
        pad[i] = k[i] ^ 0x36;
    }
    sha256_state inner;
    inner.update(pad, sizeof pad);
    inner.update(msg.data(), msg.size());
    digest256 ih = inner.finish();
    for (size_t i = 0; i < 64; ++i) {
        pad[i] = k[i] ^ 0x5c;
    }
    sha256_state outer;
    outer.update(pad, sizeof pad);
    outer.update(ih.data(), ih.size());
    return outer.finish();
}

bool equal_constant_time(std::span<const uint8_t> a, std::span<const uint8_t> b) {
    if (a.size() != b.size()) {
        return false;
    }
    uint8_t diff = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        diff |= uint8_t(a[i] ^ b[i]);
    }
    return diff == 0;
}

status random_bytes(uint8_t* out, size_t n) {
    while (n > 0) {
        ssize_t got = getrandom(out, n, 0);
        if (got < 0) {
            if (errno == EINTR) {
                continue;
            }
            return status(LOOM_ERR_SYSTEM, std::string("getrandom: ") + std::strerror(errno));
        }
        out += got;
        n -= size_t(got);
    }
    return status::ok();
}

result<std::string> random_secret_hex() {
    uint8_t bytes[32];
    if (status st = random_bytes(bytes, sizeof bytes); !st) {
        return st;
    }
    return to_hex(bytes);
}

std::string to_hex(std::span<const uint8_t> data) {
    static const char digits[] = "0123456789abcdef";
    std::string s;
    s.reserve(2 * data.size());
    for (uint8_t b : data) {
        s.push_back(digits[b >> 4]);
        s.push_back(digits[b & 15]);
    }
    return s;
}

bool from_hex(std::string_view hex, std::string* out) {
    auto value = [](char c) -> int {
        if (c >= '0' && c <= '9') {
            return c - '0';
        }
        if (c >= 'a' && c <= 'f') {
            return c - 'a' + 10;
        }
        if (c >= 'A' && c <= 'F') {
            return c - 'A' + 10;
        }
        return -1;
    };
    if (hex.size() % 2 != 0) {
        return false;
    }
    std::string bytes;
    bytes.reserve(hex.size() / 2);
    for (size_t i = 0; i < hex.size(); i += 2) {
        int hi = value(hex[i]), lo = value(hex[i + 1]);
        if (hi < 0 || lo < 0) {
            return false;
        }
        bytes.push_back(char(hi << 4 | lo));
    }
    *out = std::move(bytes);
    return true;
}

}  // namespace loom
