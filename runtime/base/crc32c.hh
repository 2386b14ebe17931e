// SPDX-License-Identifier: Apache-2.0
// CRC32C (Castagnoli): the checksum of in-network packets (inc/protocol) and of the reliable
// protocol's frames (drivers/reliable), written once. The SSE4.2 crc32 instruction where the
// CPU has it (8 bytes per instruction, some 20 times the table), a table otherwise.
#pragma once

#include <cstddef>
#include <cstdint>

namespace loom {

/// CRC32C of `len` bytes, continuing from `crc` (0 to start; crc32c(crc32c(0, a), b) is the
/// CRC of a then b). The standard check value: crc32c(0, "123456789", 9) == 0xe3069283.
uint32_t crc32c(uint32_t crc, const void* data, size_t len);

}  // namespace loom
