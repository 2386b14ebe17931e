// SPDX-License-Identifier: Apache-2.0
// Secrets and message authentication, shared by everything that must tell a member of a
// job from an outsider: the bootstrap store, the in-network join, later the control plane.
//
// HMAC-SHA-256 (RFC 2104 over FIPS 180-4), written here so that base depends on nothing;
// it runs only on control paths (joins, rendezvous), never per data packet. Tags are
// compared in constant time. Secrets come from getrandom(2) and travel as hex.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "status.hh"

namespace loom {

using digest256 = std::array<uint8_t, 32>;

/// SHA-256 of `data`.
digest256 sha256(std::span<const uint8_t> data);
/// HMAC-SHA-256 of `msg` under `key` (any length).
digest256 hmac_sha256(std::span<const uint8_t> key, std::span<const uint8_t> msg);
inline digest256 hmac_sha256(std::string_view key, std::string_view msg) {
    return hmac_sha256(std::span(reinterpret_cast<const uint8_t*>(key.data()), key.size()),
                       std::span(reinterpret_cast<const uint8_t*>(msg.data()), msg.size()));
}

/// Equality of two byte strings in time that depends on their length only.
bool equal_constant_time(std::span<const uint8_t> a, std::span<const uint8_t> b);

/// `n` bytes from the kernel's random source (getrandom); an error if it fails.
status random_bytes(uint8_t* out, size_t n);
/// A fresh 32-byte secret as 64 lowercase hex digits.
result<std::string> random_secret_hex();

/// Lowercase hex of `data`, and back (false on an odd length or a non-hex digit).
std::string to_hex(std::span<const uint8_t> data);
bool from_hex(std::string_view hex, std::string* out);

}  // namespace loom
