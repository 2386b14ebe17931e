// SPDX-License-Identifier: Apache-2.0
// Where the control plane (loom-ctld) is and how to prove the right to use it. loomctl reads
// them today; the zero-touch start of loom_comm_create will read the same two.
#pragma once

#include "base/params.hh"

namespace loom::bootstrap::controller_params {

/// Each handle below names it, and so registers itself there.
inline loom::params::component component{"controller"};

inline const loom::params::string_param address{
    component, "LOOM_CONTROLLER", "",
    "the control plane's address HOST:PORT (loom-ctld); loomctl's --controller when not given"};
inline const loom::params::string_param token_file{
    component, "LOOM_CONTROLLER_TOKEN_FILE", "",
    "file holding the control plane's bearer token (mode 0600); loomctl's --token-file when not "
    "given"};

}  // namespace loom::bootstrap::controller_params
