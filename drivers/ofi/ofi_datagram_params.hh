// The ofi datagram endpoint (drivers/ofi/ofi_datagram.hh): how long a silent peer lives.
#pragma once

#include "base/params.hh"

namespace loom::drivers::ofi::datagram_params {

/// Each handle below names it, and so registers itself there.
inline loom::params::component component{"ofi_datagram"};

inline const loom::params::real_param idle_timeout{
    component, "LOOM_OFI_DATAGRAM_IDLE_TIMEOUT", "30", "seconds",
    "an ofi: datagram peer heard nothing from (no frame, no keep-alive) for this long is taken as "
    "gone: alive() turns false; each side sends a keep-alive after a quarter of it without "
    "sending, from its send() and recv() calls, so a side that does not poll its endpoint for "
    "this long is taken as gone too; 0: never (a goodbye, or a send the provider fails, only; "
    "keep-alives then go every second)"};

}  // namespace loom::drivers::ofi::datagram_params
