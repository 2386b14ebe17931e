// SPDX-License-Identifier: Apache-2.0
// Reading a whole input file (a schedule, a calibration, a fabric, a baseline) without
// trusting what the path names: a FIFO or a device would block the reader for ever or
// stream without end, so only regular files are read, and only up to a size limit.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "status.hh"

namespace loom {

/// Limits of the files loom reads whole. Generous for real files (a 1024-rank schedule
/// in text is tens of MB), small enough that a wrong path cannot exhaust memory.
constexpr size_t max_schedule_file_bytes    = size_t{256} << 20;
constexpr size_t max_fabric_file_bytes      = size_t{64} << 20;
constexpr size_t max_calibration_file_bytes = size_t{1} << 20;
constexpr size_t max_baseline_file_bytes    = size_t{64} << 20;

/// The contents of `path`, a regular file of at most `max_bytes`. Errors name `what`
/// ("schedule file") and the path: LOOM_ERR_SYSTEM when it cannot be opened or read
/// (*open_errno, if given, receives the errno of a failed open, e.g. ENOENT),
/// LOOM_ERR_INVALID_ARGUMENT when it is not a regular file or is too large. The open
/// never blocks (O_NONBLOCK): a FIFO is refused at once instead of waiting for a writer.
result<std::string> read_text_file(const std::string& path, std::string_view what, size_t max_bytes,
                                   int* open_errno = nullptr);

/// The same for an already open descriptor that may be a pipe (standard input given as
/// "-"): read to its end, refused above `max_bytes`.
result<std::string> read_text_stream(int fd, std::string_view what, size_t max_bytes);

}  // namespace loom
